"""Tasks that launch tasks: ``worker_client()`` (alias ``local_client()``).

Inside a task, ``with worker_client() as client:`` hands out the worker process's one
client (``get_client()``) and secedes the task from the worker's thread pool for the
duration of the block, so the tasks it submits and waits for can run on the same worker
(recursion such as ``fib`` completes on a single thread). On leaving the block the task
rejoins: it waits for a free thread slot, then continues.

>>> from xsched import worker_client
>>> def fib(n):
...     if n < 2:
...         return n
...     with worker_client() as client:
...         a, b = client.submit(fib, n - 1), client.submit(fib, n - 2)
...         return a.result() + b.result()
>>> client.submit(fib, 12).result()
144
"""

from __future__ import annotations

import contextlib

from .. import task_context
from .client import get_client

__all__ = ["worker_client", "local_client"]


@contextlib.contextmanager
def worker_client(timeout=None, separate_thread: bool = True):
    """A client for use inside a task, seceded from the thread pool while the block runs.

    ``separate_thread=False`` keeps the thread slot (only for quick, non-waiting use).
    ``timeout`` is accepted for compatibility and unused (the client already exists or
    connects within ``comm.timeouts.connect``).

    >>> from xsched import worker_client
    >>> def total_of_squares(n):
    ...     with worker_client() as client:
    ...         return sum(client.gather(client.map(lambda x: x * x, range(n))))
    >>> client.submit(total_of_squares, 4).result()
    14
    """
    task_context._in_task("worker_client")
    client = get_client()
    # nested blocks: only the outermost secedes and rejoins
    here = separate_thread and not getattr(task_context.thread_state, "seceded", False)
    if here:
        task_context.secede()
    try:
        yield client
    finally:
        if here:
            task_context.rejoin()


local_client = worker_client
