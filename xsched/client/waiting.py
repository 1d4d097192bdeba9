"""Waiting on many futures: ``wait`` and ``as_completed``.

Both are driven by each future's done-callback, not by polling, so waiting on 10,000
futures costs one callback per future.

>>> def inc(x):
...     return x + 1
>>> sorted(fut.result() for fut in as_completed(client.map(inc, range(10))))   # (yielded as they finish)
[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]
"""

from __future__ import annotations

import asyncio
import queue
import threading
import time
from collections import namedtuple
from typing import Any, Iterable, Iterator

from .default import default_client
from ..units import timeout_seconds
from .future import Future, futures_of

__all__ = ["wait", "as_completed"]

DoneAndNotDone = namedtuple("DoneAndNotDone", ["done", "not_done"])



def _only_futures(fs: list, what: str) -> None:
    for f in fs:
        if not isinstance(f, Future):
            raise TypeError(f"{what} takes futures (or a list of them), got {type(f).__name__} {f!r:.60}")


def _on_done(future: Future, fn) -> None:
    """``fn(future)`` once done, on the thread that settles it (the client's loop), not the
    users' callback thread: waiting must not queue behind a user's slow callback."""
    future._state.add_callback(lambda: fn(future))

def _persisted(obj: Any) -> bool:
    """Whether ``obj`` is a collection (not a Future) that may hold futures."""
    return not isinstance(obj, (Future, type)) and hasattr(obj, "__xsched_graph__")


def wait(fs: Iterable[Future] | Future, timeout: float | None = None, return_when: str = "ALL_COMPLETED"):
    """Block until futures are done: returns ``(done, not_done)`` sets.

    ``fs`` is a Future, an iterable of them (or of persisted collections), or a collection
    persisted on a cluster (its futures: ``wait(client.persist(df))``, as in dask). ``return_when`` is
    ``"ALL_COMPLETED"``, ``"FIRST_COMPLETED"`` or ``"FIRST_EXCEPTION"``; raises TimeoutError
    if ``timeout`` passes first. With the futures of an asynchronous client (or, given none,
    an asynchronous default client) it is what to await, as in dask:
    ``done, not_done = await wait(fs)`` (blocking would stop the event loop the results
    arrive on).

    >>> from xsched import wait
    >>> futures = client.map(abs, [-1, -2, -3])
    >>> done, not_done = wait(futures, timeout=60)
    >>> len(done), len(not_done)
    (3, 0)
    """
    if isinstance(timeout, Future) or isinstance(return_when, Future):
        raise TypeError("wait takes the futures as one list: wait([x, y, z]), not wait(x, y, z)")
    timeout = timeout_seconds(timeout, "wait")
    if isinstance(fs, Future):
        fs = [fs]
    elif _persisted(fs):
        fs = futures_of(fs)
    # (persisted collections in the list stand for their futures, as dask takes them)
    fs = [g for f in fs for g in (futures_of(f) if _persisted(f) else (f,))]
    _only_futures(fs, "wait")
    if return_when not in ("ALL_COMPLETED", "FIRST_COMPLETED", "FIRST_EXCEPTION"):
        raise ValueError(f"return_when must be ALL_COMPLETED, FIRST_COMPLETED or FIRST_EXCEPTION, not {return_when!r}")
    if _asynchronous(fs):
        return _wait_async(fs, timeout, return_when)
    cond = threading.Condition()

    def notify(_f=None):
        with cond:
            cond.notify_all()

    for f in fs:
        _on_done(f, notify)
    deadline = None if timeout is None else time.monotonic() + timeout
    with cond:
        while not _satisfied(fs, return_when):
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                raise _pending_after(fs, timeout)
            cond.wait(remaining if remaining is not None else 1.0)
    return _outcome(fs)


async def _wait_async(fs: list[Future], timeout: float | None, return_when: str) -> DoneAndNotDone:
    """``wait`` on the running event loop: woken by the same done-callbacks."""
    loop = asyncio.get_running_loop()
    changed = asyncio.Event()

    def notify(_f=None):
        try:
            loop.call_soon_threadsafe(changed.set)
        except RuntimeError:  # (the loop closed after the wait ended)
            pass

    for f in fs:
        _on_done(f, notify)
    deadline = None if timeout is None else loop.time() + timeout
    while True:
        changed.clear()  # (before the check: a future done after it sets it again)
        if _satisfied(fs, return_when):
            return _outcome(fs)
        remaining = None if deadline is None else deadline - loop.time()
        if remaining is not None and remaining <= 0:
            raise _pending_after(fs, timeout)
        try:
            await asyncio.wait_for(changed.wait(), remaining)
        except asyncio.TimeoutError:
            pass


def _asynchronous(fs: list[Future]) -> bool:
    """Whether waiting on ``fs`` is what to await: their client's kind (else the default's)."""
    client = next((f.client for f in fs if f.client is not None), None)
    if client is None and not fs:
        client = default_client()
    return client is not None and client.asynchronous


def _satisfied(fs: list[Future], return_when: str) -> bool:
    done = [f for f in fs if f.done()]
    if return_when == "ALL_COMPLETED":
        return len(done) == len(fs)
    if return_when == "FIRST_COMPLETED":
        return bool(done) or not fs
    return any(f.status == "error" for f in done) or len(done) == len(fs)


def _outcome(fs: list[Future]) -> DoneAndNotDone:
    done = {f for f in fs if f.done()}
    return DoneAndNotDone(done, {f for f in fs if f not in done})


def _pending_after(fs: list[Future], timeout: float | None) -> TimeoutError:
    n = sum(not f.done() for f in fs)
    return TimeoutError(f"{n} of {len(fs)} futures still pending after {timeout}s")


class as_completed(Iterator):
    """Iterate over futures in the order they finish; more can be added while iterating.

    With an asynchronous client, iterate with ``async for`` (as in dask; a ``for`` loop
    would block the event loop the results arrive on, so it raises TypeError).

    ``timeout``: asking for the next future more than that many seconds after
    ``as_completed`` was called raises TimeoutError when none is done (as dask's).

    >>> from xsched import as_completed
    >>> futs = client.map(abs, [-1, -2, -3])
    >>> sorted(result for fut, result in as_completed(futs, with_results=True))
    [1, 2, 3]
    """

    def __init__(self, futures: Iterable[Future] = (), with_results: bool = False, raise_errors: bool = True,
                 *, timeout: Any = None):
        seconds = timeout_seconds(timeout, "as_completed")
        self._deadline = None if seconds is None else time.monotonic() + seconds
        self._timeout = seconds
        self._queue: "queue.Queue[Future]" = queue.Queue()
        self._generation = 0  # (clear() starts a new one: the futures it dropped are not yielded)
        self._pending = 0
        self._lock = threading.Lock()
        self._asynchronous = False  # (an asynchronous client's futures: ``async for`` only)
        self._aevent: asyncio.Event | None = None  # (made by the first ``async for`` step, on its loop)
        self._loop: asyncio.AbstractEventLoop | None = None
        self.with_results = with_results
        self.raise_errors = raise_errors
        for f in futures:
            self.add(f)

    def add(self, future: Future) -> None:
        """Track one more future."""
        _only_futures([future], "as_completed")
        with self._lock:
            self._pending += 1
        if future.client is not None and future.client.asynchronous:
            self._asynchronous = True
        generation = self._generation
        _on_done(future, lambda f: self._put(f, generation))

    def _put(self, future: Future, generation: int) -> None:
        with self._lock:
            if generation != self._generation:
                return  # (dropped by clear())
            self._queue.put(future)
        event, loop = self._aevent, self._loop
        if event is not None:
            try:
                loop.call_soon_threadsafe(event.set)
            except RuntimeError:  # (the loop closed: nobody iterates any more)
                pass

    def update(self, futures: Iterable[Future]) -> None:
        for f in futures:
            self.add(f)

    def count(self) -> int:
        """Futures not yet yielded."""
        return self._pending

    def is_empty(self) -> bool:
        return self._pending == 0

    def has_ready(self) -> bool:
        """Whether a finished future waits to be yielded (the next step would not block)."""
        return not self._queue.empty()

    def clear(self) -> None:
        """Stop tracking every future not yielded yet (those still running are left alone)."""
        with self._lock:
            self._pending = 0
            self._generation += 1
            while True:
                try:
                    self._queue.get_nowait()
                except queue.Empty:
                    break

    def _left(self) -> float | None:
        return None if self._deadline is None else max(0.0, self._deadline - time.monotonic())

    def _timed_out(self) -> TimeoutError:
        return TimeoutError(f"as_completed: {self._pending} futures still pending {self._timeout:g}s after it "
                            "was called")

    def __iter__(self):
        return self

    def __next__(self):
        self._refuse_blocking()
        with self._lock:
            if self._pending == 0:
                raise StopIteration
        try:
            fut = self._queue.get(timeout=self._left())
        except queue.Empty:
            raise self._timed_out() from None
        with self._lock:
            self._pending -= 1
        return self._yielded(fut)

    def _refuse_blocking(self) -> None:
        if self._asynchronous:
            raise TypeError("as_completed holds futures of an asynchronous client: iterate with `async for` "
                            "(a `for` loop would block the event loop their results arrive on)")

    def __aiter__(self):
        return self

    async def __anext__(self):
        if self.is_empty():
            raise StopAsyncIteration
        if self._aevent is None:
            self._loop = asyncio.get_running_loop()
            self._aevent = asyncio.Event()
        while True:
            self._aevent.clear()  # (before looking: a future put after it sets it again)
            try:
                fut = self._queue.get_nowait()
                break
            except queue.Empty:
                try:
                    await asyncio.wait_for(self._aevent.wait(), self._left())
                except asyncio.TimeoutError:
                    raise self._timed_out() from None
        with self._lock:
            self._pending -= 1
        if not self.with_results:
            return fut
        try:
            return fut, await fut
        except Exception as e:
            if self.raise_errors:
                raise
            return fut, e

    def _yielded(self, fut: Future) -> Any:
        """What iterating gives for a finished future: it, or ``(it, result)``."""
        if self.with_results:
            try:
                return fut, fut.result()
            except Exception as e:
                if self.raise_errors:
                    raise
                return fut, e
        return fut

    def next_batch(self, block: bool = True) -> list:
        """All futures finished so far (at least one if ``block``), as iterating gives them."""
        if block or self.with_results:
            self._refuse_blocking()
        out = []
        if block and self._pending:
            out.append(next(self))
        while True:
            try:
                fut = self._queue.get_nowait()
            except queue.Empty:
                return out
            with self._lock:
                self._pending -= 1
            out.append(self._yielded(fut))

    def batches(self) -> Iterator[list]:
        """The futures in lists, each of all those finished since the last, until none is
        left (as dask's): fewer wake-ups than one future at a time when many finish at once.

        >>> futs = client.map(abs, [-1, -2, -3])
        >>> sorted(fut.result() for batch in as_completed(futs).batches() for fut in batch)
        [1, 2, 3]
        """
        while not self.is_empty():
            yield self.next_batch(block=True)
