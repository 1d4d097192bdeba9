"""The threads a worker runs its tasks in: one per running task, idle ones reused.

A ``ThreadPoolExecutor`` makes a ``Future`` (with its condition variable), a work item
and a semaphore round trip for every call, and the thread sets the future's result under
its lock: tens of microseconds per task, as much as the scheduler's whole decision for a
small one. Tasks report their outcome through the worker's own queue, so they need none
of that; ``start`` is a queue put. ``submit`` still gives a ``Future`` for the few calls
that want one (``client.run`` on the worker, through ``loop.run_in_executor``).

The pool is unbounded like the worker's state machine expects: it starts at most
``nthreads`` tasks at once, but a seceded task keeps its thread while another starts.

>>> import threading
>>> pool = TaskThreads("example")
>>> done = threading.Event()
>>> pool.start(done.set)
>>> done.wait(5)
True
>>> pool.submit(sum, [1, 2, 3]).result(5)
6
>>> pool.shutdown()
"""

from __future__ import annotations

import logging
import queue
import threading
from concurrent.futures import Executor, Future
from typing import Any, Callable

logger = logging.getLogger("xsched.worker")

_STOP = None  # (what an idle thread gets to end)
_current = threading.local()  # in a pool thread: its pool, and whether it counts as idle


class TaskThreads(Executor):
    """Run callables in threads, a new one only when none is idle.

    >>> pool = TaskThreads("doc")
    >>> pool.submit(pow, 2, 10).result(5)
    1024
    >>> pool.shutdown()
    """

    def __init__(self, name: str = "xsched-task") -> None:
        self._name = name
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._idle = 0  # threads that will take a queued call without a new thread
        self._count = 0  # threads started, for their names
        self._threads: set[threading.Thread] = set()
        self._closed = False

    def start(self, fn: Callable, /, *args: Any) -> None:
        """Call ``fn(*args)`` in a pool thread; nothing comes back (an exception is logged).

        Raises RuntimeError once the pool is shut down.
        """
        with self._lock:  # (the put too: a shutdown in between would hand the idle thread its stop first)
            if self._closed:
                raise RuntimeError("cannot start a task: the worker's task threads are shut down")
            if self._idle:
                self._idle -= 1
            else:
                self._count += 1
                thread = threading.Thread(target=self._run, name=f"{self._name}_{self._count}", daemon=True)
                self._threads.add(thread)
                try:
                    thread.start()
                except BaseException:
                    self._threads.discard(thread)
                    raise
            self._queue.put((fn, args))

    def submit(self, fn: Callable, /, *args: Any, **kwargs: Any) -> Future:
        """``fn(*args, **kwargs)`` in a pool thread, as a ``concurrent.futures.Future``."""
        fut: Future = Future()
        self.start(_settle, fut, fn, args, kwargs)
        return fut

    def finishing(self) -> None:
        """Called in a pool thread when its call has only to post its outcome and return:
        the thread counts as idle from now, so a call started in reply to that outcome
        takes this thread rather than a new one. A worker of one thread then runs every
        task on the same thread (it had two in turn: the loop started the next task while
        the last one's thread was still returning)."""
        if getattr(_current, "pool", None) is self and not _current.idle:
            _current.idle = True
            with self._lock:
                if not self._closed:
                    self._idle += 1

    def _run(self) -> None:
        get = self._queue.get
        _current.pool = self
        try:
            while True:
                item = get()
                if item is _STOP:
                    return
                fn, args = item
                del item
                _current.idle = False
                try:
                    fn(*args)
                except BaseException:  # noqa: BLE001 - a caller's bug never ends the thread
                    logger.exception("a call in a worker task thread failed")
                del fn, args  # (nothing of the last call stays alive while idle)
                with self._lock:
                    if self._closed:
                        return
                    if not _current.idle:
                        self._idle += 1
                    _current.idle = True
        finally:
            with self._lock:
                self._threads.discard(threading.current_thread())

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """Take no more calls; idle threads end, busy ones after their call. ``cancel_futures``
        cancels the submitted calls no thread has taken yet."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            threads = list(self._threads)
            self._idle = 0
        if cancel_futures:
            while True:
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    break
                if item is not _STOP and item[0] is _settle:
                    item[1][0].cancel()
        for _ in threads:  # (each thread takes at most one; busy ones end on _closed anyway)
            self._queue.put(_STOP)
        if wait:
            for t in threads:
                if t is not threading.current_thread():
                    t.join()


def _settle(fut: Future, fn: Callable, args: tuple, kwargs: dict) -> None:
    if not fut.set_running_or_notify_cancel():
        return
    try:
        result = fn(*args, **kwargs)
    except BaseException as e:  # noqa: BLE001 - the future carries it to whoever waits
        fut.set_exception(e)
    else:
        fut.set_result(result)
