"""Waiting on many futures: ``wait`` and ``as_completed``.

Both are driven by each future's done-callback, not by polling, so waiting on 10,000
futures costs one callback per future.

>>> def inc(x):
...     return x + 1
>>> sorted(fut.result() for fut in as_completed(client.map(inc, range(10))))   # (yielded as they finish)
[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]
"""

from __future__ import annotations

import queue
import threading
import time
from collections import namedtuple
from typing import Any, Iterable, Iterator

from .future import Future, futures_of

__all__ = ["wait", "as_completed"]

DoneAndNotDone = namedtuple("DoneAndNotDone", ["done", "not_done"])


def wait(fs: Iterable[Future] | Future, timeout: float | None = None, return_when: str = "ALL_COMPLETED"):
    """Block until futures are done: returns ``(done, not_done)`` sets.

    ``fs`` is a Future, an iterable of them, or a collection persisted on a cluster (its
    futures: ``wait(client.persist(df))``, as in dask). ``return_when`` is ``"ALL_COMPLETED"``, ``"FIRST_COMPLETED"`` or ``"FIRST_EXCEPTION"``;
    raises TimeoutError if ``timeout`` passes first.

    >>> from xsched import wait
    >>> futures = client.map(abs, [-1, -2, -3])
    >>> done, not_done = wait(futures, timeout=60)
    >>> len(done), len(not_done)
    (3, 0)
    """
    if isinstance(fs, Future):
        fs = [fs]
    elif hasattr(fs, "__xsched_graph__") and not isinstance(fs, type):
        fs = futures_of(fs)
    fs = list(fs)
    if return_when not in ("ALL_COMPLETED", "FIRST_COMPLETED", "FIRST_EXCEPTION"):
        raise ValueError(f"return_when must be ALL_COMPLETED, FIRST_COMPLETED or FIRST_EXCEPTION, not {return_when!r}")
    cond = threading.Condition()

    def notify(_f=None):
        with cond:
            cond.notify_all()

    for f in fs:
        f.add_done_callback(notify)

    def satisfied() -> bool:
        done = [f for f in fs if f.done()]
        if return_when == "ALL_COMPLETED":
            return len(done) == len(fs)
        if return_when == "FIRST_COMPLETED":
            return bool(done) or not fs
        return any(f.status == "error" for f in done) or len(done) == len(fs)

    deadline = None if timeout is None else time.monotonic() + timeout
    with cond:
        while not satisfied():
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                n = sum(not f.done() for f in fs)
                raise TimeoutError(f"{n} of {len(fs)} futures still pending after {timeout}s")
            cond.wait(remaining if remaining is not None else 1.0)
    done = {f for f in fs if f.done()}
    return DoneAndNotDone(done, {f for f in fs if f not in done})


class as_completed(Iterator):
    """Iterate over futures in the order they finish; more can be added while iterating.

    >>> from xsched import as_completed
    >>> futs = client.map(abs, [-1, -2, -3])
    >>> sorted(result for fut, result in as_completed(futs, with_results=True))
    [1, 2, 3]
    """

    def __init__(self, futures: Iterable[Future] = (), with_results: bool = False, raise_errors: bool = True):
        self._queue: "queue.Queue[Future]" = queue.Queue()
        self._pending = 0
        self._lock = threading.Lock()
        self.with_results = with_results
        self.raise_errors = raise_errors
        for f in futures:
            self.add(f)

    def add(self, future: Future) -> None:
        """Track one more future."""
        with self._lock:
            self._pending += 1
        future.add_done_callback(self._queue.put)

    def update(self, futures: Iterable[Future]) -> None:
        for f in futures:
            self.add(f)

    def count(self) -> int:
        """Futures not yet yielded."""
        return self._pending

    def is_empty(self) -> bool:
        return self._pending == 0

    def __iter__(self):
        return self

    def __next__(self):
        with self._lock:
            if self._pending == 0:
                raise StopIteration
        fut = self._queue.get()
        with self._lock:
            self._pending -= 1
        return self._yielded(fut)

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
