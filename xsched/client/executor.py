"""``client.get_executor()``: the client as a ``concurrent.futures.Executor``.

Code written for the standard library's executors (``with ThreadPoolExecutor() as ex:
ex.map(f, items)``) runs on the cluster by swapping the executor. ``submit`` gives the
client's own ``Future`` (``result()``, ``done()``, ``cancel()``, ``cancelled()``, as the
standard library's), ``map`` yields the results in order, ``shutdown`` waits for (or
cancels) what this executor submitted. Every call is impure by default (each call runs,
as with a thread pool), unlike ``client.submit``.
"""

from __future__ import annotations

import concurrent.futures
import threading
import time
import weakref
from typing import Any, Callable, Iterator

from .waiting import wait as wait_all

__all__ = ["ClientExecutor"]

#: the keywords of ``client.submit`` an executor passes to every call
SUBMIT_OPTIONS = ("pure", "workers", "resources", "priority", "retries", "allow_other_workers")


class ClientExecutor(concurrent.futures.Executor):
    """Runs calls on the cluster of ``client``, with the ``client.submit`` options given
    (``workers=``, ``resources=``, ``retries=``, ``priority=``...); made by
    ``client.get_executor(**options)``.

    >>> with client.get_executor(retries=1) as ex:
    ...     list(ex.map(abs, [-1, -2, 3]))
    [1, 2, 3]
    """

    def __init__(self, client: Any, **options: Any) -> None:
        unknown = sorted(set(options) - set(SUBMIT_OPTIONS))
        if unknown:
            raise TypeError(f"get_executor: {', '.join(map(repr, unknown))} is not an option of client.submit "
                            f"an executor passes on; those are {', '.join(SUBMIT_OPTIONS)}")
        self._client = client
        self._options = {"pure": False, **options}
        self._futures: weakref.WeakSet = weakref.WeakSet()  # (not keeping results the user let go of)
        self._lock = threading.Lock()
        self._shutdown = False

    def _track(self, futures: list) -> list:
        with self._lock:
            self._futures.update(futures)
        return futures

    def submit(self, fn: Callable, /, *args: Any, **kwargs: Any) -> Any:
        """``fn(*args, **kwargs)`` on the cluster: the client's ``Future`` of it."""
        if self._shutdown:
            raise RuntimeError("cannot schedule new calls after shutdown()")
        return self._track([self._client.submit(fn, *args, **self._options, **kwargs)])[0]

    def map(self, fn: Callable, *iterables: Any, timeout: float | None = None, chunksize: int = 1,
            buffersize: int | None = None) -> Iterator:
        """``fn`` over the zipped ``iterables``, submitted at once; yields the results in
        order (a call's error is raised where its result is reached; ``timeout`` counts from
        this call, as the standard library's). ``chunksize`` and ``buffersize`` are taken
        for the standard library's sake: each call is a task of its own."""
        if self._shutdown:
            raise RuntimeError("cannot schedule new calls after shutdown()")
        futures = self._track(self._client.map(fn, *iterables, **self._options))
        deadline = None if timeout is None else time.monotonic() + timeout

        def results() -> Iterator:
            for future in futures:  # (TimeoutError is concurrent.futures')
                yield future.result(timeout=None if deadline is None else max(deadline - time.monotonic(), 0))
        return results()

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """No new calls from here on; ``wait``: block until every call submitted finished;
        ``cancel_futures``: cancel those not finished first."""
        with self._lock:
            self._shutdown = True
            futures = list(self._futures)
        if cancel_futures:
            pending = [f for f in futures if not f.done()]
            if pending:
                self._client.cancel(pending)
        if wait:
            wait_all([f for f in futures if not f.done()])
