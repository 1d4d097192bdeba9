"""One background event loop per process for synchronous clients.

A synchronous ``Client`` (the notebook default) runs its asynchronous core on this
loop, in a daemon thread, and blocks the calling thread on the result. An asynchronous
client (``asynchronous=True``) uses the caller's running loop instead and this module is
not involved.

    notebook thread --sync(coro)--> run_coroutine_threadsafe --> loop thread
          ^                                                          |
          +---------------- concurrent.futures.Future <--------------+
"""

from __future__ import annotations

import asyncio
import atexit
import contextvars
import threading
from typing import Any, Awaitable

__all__ = ["background_loop", "sync"]

_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None
_thread: threading.Thread | None = None


def background_loop() -> asyncio.AbstractEventLoop:
    """The process's background loop, started on first use."""
    global _loop, _thread
    with _lock:
        if _loop is None or _loop.is_closed() or not _thread.is_alive():
            loop = asyncio.new_event_loop()
            ready = threading.Event()

            def run():
                asyncio.set_event_loop(loop)
                loop.call_soon(ready.set)
                loop.run_forever()

            _thread = threading.Thread(target=run, name="xsched-client-loop", daemon=True)
            _thread.start()
            ready.wait()
            _loop = loop
        return _loop


#: True in the code ``Client.sync`` runs on the loop (and the tasks it starts): there a
#: synchronous client's methods return what to await, as an asynchronous client's do, since
#: waiting in the loop for the loop would never end (dask's rule, which its notebooks use).
_IN_SYNC_CALL: contextvars.ContextVar[bool] = contextvars.ContextVar("xsched_in_sync_call", default=False)


def enter_sync_call() -> None:
    """Mark the running task (and those it starts) as code ``Client.sync`` runs."""
    _IN_SYNC_CALL.set(True)


def in_sync_call() -> bool:
    """Whether this is code ``Client.sync`` runs on the loop (see ``_IN_SYNC_CALL``)."""
    return _IN_SYNC_CALL.get() and in_loop_thread()


def in_loop_thread() -> bool:
    return _thread is not None and threading.current_thread() is _thread


def sync(coro: Awaitable, timeout: float | None = None) -> Any:
    """Run ``coro`` on the background loop and wait for its result in this thread."""
    if in_loop_thread():
        raise RuntimeError("a synchronous xsched call was made from the client's own event loop; "
                           "use the asynchronous API (await ...) there")
    fut = asyncio.run_coroutine_threadsafe(coro, background_loop())
    try:
        return fut.result(timeout)
    except BaseException:
        if not fut.done():
            fut.cancel()
        raise


@atexit.register
def _stop_loop() -> None:
    loop, thread = _loop, _thread
    if loop is not None and not loop.is_closed():
        loop.call_soon_threadsafe(loop.stop)
        if thread is not None:
            thread.join(5)
            if not thread.is_alive():
                loop.close()  # (a stopped loop left open warns when the interpreter collects it)
