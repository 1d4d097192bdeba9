"""What a running task may ask of the worker running it: the small module both sides share.

The worker server (``worker/server.py``) sets ``thread_state.worker`` and ``.key`` in each
task thread; the client side (``get_client``, ``worker_client``) reads them here, so the
client never imports the worker server. The worker object provides ``_secede(key)`` and
``_rejoin(key)``, called from the task's own thread::

    task thread: secede() -> worker._secede(key) --call_soon_threadsafe--> Secede event
                 (the thread slot is free: the worker starts another task, tells the scheduler)
    task thread: rejoin() -> worker._rejoin(key) -> Rejoin event; blocks until the state
                 machine answers Rejoined (a slot is free again)
    task thread: breakpoint() (PYTHONBREAKPOINT=xsched.breakpoint, set by the worker) or
                 xsched.breakpoint() -> worker._breakpoint(key, frame): the task pauses there
                 for client.debug (worker/debugging.py)

>>> get_worker()
Traceback (most recent call last):
...
ValueError: get_worker() works only inside a task running on an xsched worker
"""

from __future__ import annotations

import os
import threading
import uuid

__all__ = ["get_worker", "secede", "rejoin", "thread_state", "current_key", "breakpoint", "BREAKPOINT_HOOK",
           "process_token"]

#: what a worker sets ``PYTHONBREAKPOINT`` to, so that ``breakpoint()`` in a task pauses it
BREAKPOINT_HOOK = "xsched.breakpoint"

thread_state = threading.local()  # .worker, .key, .seceded (+ the worker's secede timing), per task thread
_process_worker = []  # [worker] while a worker server runs in this process (for run() callbacks)
_BOOT = uuid.uuid4().hex[:16]  # (a forked child keeps it, but not its pid)


def process_token() -> str:
    """A name of this process unique across the cluster's hosts. What a task prints or logs
    carries it, so a client in the worker's own process (``LocalCluster(processes=False)``),
    whose streams and loggers already showed it, does not show it a second time.

    >>> process_token() == process_token(), process_token().endswith(f"-{os.getpid()}")
    (True, True)
    """
    return f"{_BOOT}-{os.getpid()}"


def get_worker():
    """The worker running the current task (or the worker of this process).

    >>> from xsched import get_worker
    >>> def where():
    ...     return get_worker().address
    >>> client.submit(where).result()
    'tcp://127.0.0.1:...'
    """
    w = getattr(thread_state, "worker", None) or (_process_worker[-1] if _process_worker else None)
    if w is None:
        raise ValueError("get_worker() works only inside a task running on an xsched worker")
    return w


def current_key() -> str | None:
    """The key of the task running in this thread (None outside a task)."""
    return getattr(thread_state, "key", None)


def _in_task(what: str):
    worker, key = getattr(thread_state, "worker", None), current_key()
    if worker is None or key is None:
        raise ValueError(f"{what}() works only inside a task running on an xsched worker; "
                         "call it from a function given to client.submit")
    return worker, key


def secede() -> None:
    """Leave the worker's thread pool: this task no longer counts against its threads.

    Call it before waiting for other tasks (``worker_client()`` does it for you), so the
    worker can run them meanwhile. Secede twice is harmless.

    >>> from xsched import secede, rejoin, get_client
    >>> def waits_for_others(n):
    ...     client = get_client()
    ...     futures = client.map(abs, range(-n, 0))
    ...     secede()                          # free the thread while waiting
    ...     total = sum(client.gather(futures))
    ...     rejoin()                          # count against the threads again
    ...     return total
    >>> client.submit(waits_for_others, 3).result()
    6
    """
    worker, key = _in_task("secede")
    if getattr(thread_state, "seceded", False):
        return
    thread_state.seceded = True
    worker._secede(key)


def rejoin() -> None:
    """Come back into the worker's thread pool after ``secede()``: waits for a free thread.

    A no-op when the task has not seceded.

    >>> from xsched import secede, rejoin
    >>> def seceded(x):
    ...     secede()
    ...     y = x + 1                         # (waiting for other tasks, say)
    ...     rejoin()                          # waits for a free thread
    ...     return y
    >>> client.submit(seceded, 1).result()
    2
    """
    worker, key = _in_task("rejoin")
    if not getattr(thread_state, "seceded", False):
        return
    worker._rejoin(key)
    thread_state.seceded = False


def breakpoint(*args, **kwargs) -> None:  # noqa: A001 - xsched.breakpoint, the hook of the builtin one
    """Pause the running task here until a client debugs it (``client.debug(future)``).

    Inside a task on a worker, the task's thread waits at the next line (the worker's other
    threads go on) and the clients waiting for it are told where; ``client.breakpoints()``
    lists it; ``client.debug(future)`` (or ``%debug``) opens pdb there, and ``c`` lets the
    task go on. Workers make the builtin ``breakpoint()`` do the same, unless their
    environment sets ``PYTHONBREAKPOINT=0``, which turns both off as in Python. A pause
    nobody attaches to ends after ``debug.breakpoint-timeout`` (the task continues).
    Outside a task it is pdb's ``set_trace`` here, as the builtin is.

    >>> import xsched
    >>> def g(x):
    ...     y = x * 2
    ...     xsched.breakpoint()          # or breakpoint()
    ...     return y
    >>> f = client.submit(g, 1)          # doctest: +SKIP
    >>> client.breakpoints()             # doctest: +SKIP
    >>> client.debug(f)                  # doctest: +SKIP
    """
    import sys

    frame = sys._getframe(1)
    worker, key = getattr(thread_state, "worker", None), current_key()
    if worker is not None and key is not None:
        debugging = getattr(worker, "debugging", None)
        if debugging is not None and debugging.breakpoints:
            worker._breakpoint(key, frame)
        return
    import os

    if os.environ.get("PYTHONBREAKPOINT", "").strip() == "0":
        return
    import pdb

    pdb.Pdb().set_trace(frame)
