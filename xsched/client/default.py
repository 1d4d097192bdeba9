"""The process-wide default client that ``compute()`` on a collection uses.

The newest ``Client`` becomes the default unless created with ``set_as_default=False``;
closing it restores the previous one. Inside ``client.as_current()`` that client is the
default for the thread or asyncio task running the block (a context variable), whatever
the process-wide default is. Collections ask here instead of importing the
client module, so ``graph/`` and ``array/`` never depend on the network code.

>>> from xsched.client.default import default_client
>>> default_client() is None or hasattr(default_client(), "compute")
True
"""

from __future__ import annotations

import contextlib
import contextvars
import threading
import weakref
from typing import Any

_lock = threading.Lock()
_stack: list[weakref.ref] = []
#: every Client made in this process, weakly (closed at exit; asked by a task's ``xsched.warn``)
process_clients: "weakref.WeakSet" = weakref.WeakSet()
#: the client of the innermost ``as_current()`` block of this thread or task (a weak reference)
_current: contextvars.ContextVar = contextvars.ContextVar("xsched_current_client", default=None)


@contextlib.contextmanager
def current_as(client):
    """Make ``client`` the default in this block, for this thread or asyncio task only.

    >>> class C:
    ...     status = "running"
    >>> c = C()
    >>> with current_as(c):
    ...     default_client() is c
    True
    """
    token = _current.set(weakref.ref(client))
    try:
        yield client
    finally:
        _current.reset(token)


def set_default_client(client) -> None:
    """Make ``client`` the default for ``compute()``/``persist()`` on collections."""
    with _lock:
        _stack.append(weakref.ref(client))


def unset_default_client(client) -> None:
    """Forget ``client`` as a default (called when it closes)."""
    with _lock:
        _stack[:] = [r for r in _stack if r() is not None and r() is not client]


def default_client():
    """The most recent open default client, or ``None`` when there is none.

    >>> from xsched.client.default import default_client
    >>> c = default_client()
    """
    ref = _current.get()
    client = ref() if ref is not None else None
    if client is not None and client.status not in ("closing", "closed"):
        return client
    with _lock:
        while _stack:
            client = _stack[-1]()
            if client is not None and client.status not in ("closing", "closed"):
                return client
            _stack.pop()
    return None


#: the ``scheduler=`` names (dask's) that run a graph in this process: one task at a time,
#: or on threads (``graph/local.py`` runs both)
HERE = frozenset({"sync", "synchronous", "single-threaded", "threads", "threading"})


def client_for(scheduler: Any = None) -> Any:
    """The Client a computation runs on, or None to run it in this process: ``scheduler`` when
    it is a Client; the default Client (None where none runs) when it is None, the default
    Client (which must run) for ``"distributed"``; None for
    ``"sync"`` (``"synchronous"``, ``"single-threaded"``) and ``"threads"``: here, even
    beside a Client, as a debugger wants it. Anything else fails naming what is accepted.

    >>> client_for("sync") is None, client_for("threads") is None
    (True, True)
    >>> client_for("processes")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: scheduler='processes' is not one xsched runs on: pass None (the default Client, ... its Client
    """
    if scheduler is None:
        return default_client()
    if isinstance(scheduler, str) and scheduler in HERE:
        return None
    if scheduler == "distributed":  # (dask's name for its default Client)
        client = default_client()
        if client is None:
            raise ValueError("scheduler='distributed' asks for the default Client, and none is running: create "
                             "one (Client(LocalCluster()) or Client(address)), or pass scheduler='sync'")
        return client
    if not isinstance(scheduler, str) and callable(getattr(scheduler, "compute", None)) and \
            callable(getattr(scheduler, "gather", None)):  # (a Client: the graph layer sits below it)
        return scheduler
    raise ValueError(f"scheduler={scheduler!r} is not one xsched runs on: pass None (the default Client, or this "
                     "process when none runs), a Client, 'sync' (this process, one task at a time) or 'threads' (this "
                     "process, a pool of threads); for processes start a LocalCluster and compute on its Client")


def blocking_client_for(scheduler: Any = None) -> Any:
    """``client_for(scheduler)``, for a call that waits for the result (``compute()``): an
    asynchronous Client is refused, as dask does, since waiting would block the event loop
    the results arrive on (and ``compute()`` cannot return what to await in place of a value).

    >>> blocking_client_for("sync") is None
    True
    """
    client = client_for(scheduler)
    if client is not None and getattr(client, "asynchronous", False):
        raise RuntimeError("compute() waits for its result, but the Client it would run on is asynchronous "
                           "(waiting here would block the event loop its results arrive on): use "
                           "`await client.compute(x)` instead, or pass a synchronous Client as scheduler=, or "
                           "scheduler='sync' to run it in this process")
    return client
