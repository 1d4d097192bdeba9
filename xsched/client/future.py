"""Futures: handles on remote results, counted so that forgotten ones free their data.

Every ``Future`` object for a key shares one ``FutureState`` in its client. The state
is updated on the client's event loop (messages from the scheduler) and read from any
thread: a ``threading.Event`` serves synchronous waiters, an ``asyncio.Event`` (created
on the client loop) asynchronous ones. When the last Future of a key is garbage
collected the client tells the scheduler it no longer wants the key.

>>> def inc(x):
...     return x + 1
>>> f = client.submit(inc, 1)
>>> f.result()
2
>>> f.status
'finished'
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import html
import logging
import threading
from typing import Any, Callable

from .. import hooks
from ..errors import FutureCancelledError, SchedulerLostError, as_traceback, unpack_exception
from ..protocol import ops
from ..units import timeout_seconds

__all__ = ["Future", "FutureState", "collect_futures", "futures_of", "fire_and_forget"]

logger = logging.getLogger("xsched.client")


class FutureState:
    """Status of one key as the client knows it: pending, finished, error, cancelled, lost."""

    __slots__ = ("status", "type", "exception", "traceback", "text", "blame", "_event", "_aevent", "_loop",
                 "callbacks", "_lock", "holders", "inline", "key", "worker")

    def __init__(self):
        self.status = "pending"
        self.type: str | None = None
        self.exception: bytes | None = None
        self.traceback: bytes | None = None
        self.text = ""
        self.blame: str | None = None
        self._event: threading.Event | None = None  # made by the first wait(): most futures are gathered
        self._aevent: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self.callbacks: list[Callable] = []
        self._lock = threading.Lock()
        self.holders: list[str] | None = None  # workers holding the value, as the scheduler last said
        self.inline: bytes | None = None  # the pickled value itself, when small (key-in-memory)
        self.key: str | None = None  # (set with an error: the handle client.debug and %debug read)
        self.worker: str | None = None  # the worker where the blamed task raised (its frames are there)

    def _on_aevent(self, method: str) -> None:
        """Set/clear the asyncio event on its own loop (cancel() runs on the user's thread)."""
        ev = self._aevent
        if ev is None:
            return
        loop = self._loop
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if loop is None or running is loop:
            getattr(ev, method)()
        elif not loop.is_closed():
            loop.call_soon_threadsafe(getattr(ev, method))

    def _settle(self, status: str) -> None:
        self.status = status
        with self._lock:
            callbacks, self.callbacks = self.callbacks, []
            event = self._event
        if event is not None:
            event.set()
        self._on_aevent("set")
        for cb in callbacks:
            try:
                cb()
            except Exception:  # noqa: BLE001 - one failing callback must not starve the others
                logger.exception("a callback of a future failed")

    def finish(self, type_name: str | None = None) -> None:
        self.type = type_name
        self._settle("finished")

    def set_error(self, exception: bytes, traceback: bytes, text: str, blame: str | None = None,
                  worker: str | None = None, key: str | None = None) -> None:
        self.exception, self.traceback, self.text, self.blame = exception, traceback, text, blame
        self.worker, self.key = worker, key
        self._settle("error")

    def cancel(self, text: str = "") -> None:
        self.text = text
        self._settle("cancelled")

    def lose(self, text: str) -> None:
        """The scheduler is gone: the result can never arrive."""
        self.text = text
        self._settle("lost")

    def reset(self) -> None:
        """The data was lost and is being recomputed: back to pending."""
        self.status = "pending"
        self.holders = None
        self.inline = None
        with self._lock:
            if self._event is not None:
                self._event.clear()
        self._on_aevent("clear")

    def done(self) -> bool:
        return self.status != "pending"

    def wait(self, timeout: float | None = None) -> bool:
        if self.status != "pending":
            return True
        with self._lock:  # (_settle reads the event under the same lock: no wake-up is lost)
            if self._event is None:
                self._event = threading.Event()
                if self.status != "pending":
                    self._event.set()
            event = self._event
        return event.wait(timeout)

    async def await_done(self) -> None:
        """Wait on the client's loop (the only loop that touches the asyncio event)."""
        if self._aevent is None:
            self._loop = asyncio.get_running_loop()
            self._aevent = asyncio.Event()
            if self.done():
                self._aevent.set()
        await self._aevent.wait()

    def add_callback(self, cb: Callable) -> None:
        with self._lock:
            if not self.done():
                self.callbacks.append(cb)
                return
        cb()

    def error(self) -> BaseException:
        if self.status == "cancelled":
            return FutureCancelledError(self.text or "this future was cancelled")
        if self.status == "lost":
            return SchedulerLostError(self.text)
        return unpack_exception(self.exception, self.traceback, self.text, self.key, self.blame, self.worker)


_callbacks: concurrent.futures.ThreadPoolExecutor | None = None
_callbacks_lock = threading.Lock()


def _callback_thread() -> concurrent.futures.ThreadPoolExecutor:
    """The one thread users' done callbacks run in (made at the first)."""
    global _callbacks
    with _callbacks_lock:
        if _callbacks is None:
            _callbacks = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="xsched-callback")
        return _callbacks


def _run_callback(fn: Callable, future: "Future") -> None:
    try:
        fn(future)
    except Exception:  # noqa: BLE001 - as dask: logged, never raised into the client
        logger.exception("the done callback %r of %s raised", fn, future)


class Future:
    """A remote result. ``result()`` waits and fetches it; ``await future`` does too.

    >>> fut = client.submit(sum, [1, 2])
    >>> fut.result()
    3
    >>> fut
    <Future: finished, key: sum-..., type: int>
    """

    __slots__ = ("key", "client", "_state", "__weakref__")
    #: what the graph layer knows a remote result by (it imports nothing of the client)
    __xsched_future__ = True

    def __init__(self, key: str, client=None, _state: FutureState | None = None):
        if client is None:
            client = hooks.get_client()  # xsched.client.client.get_client
        self.key = key
        self.client = client
        self._state = _state if _state is not None else client._inc_ref(key)
        if _state is not None:
            client._inc_ref(key)

    # -- status --
    @property
    def status(self) -> str:
        """'pending', 'finished', 'error', 'cancelled' or 'lost'."""
        return self._state.status

    @property
    def type(self) -> str | None:
        """Type name of the result, once finished."""
        return self._state.type

    def done(self) -> bool:
        """True once the future finished, erred or was cancelled."""
        return self._state.done()

    def cancelled(self) -> bool:
        """True once the future was cancelled (``cancel()``, or ``client.restart()``), as
        ``concurrent.futures.Future.cancelled``."""
        return self._state.status == "cancelled"

    # -- results --
    def result(self, timeout: float | None = None) -> Any:
        """Wait for the result and return it; raise the task's exception if it failed.

        With an asynchronous client it is what to await (``await f.result(timeout=5)``); a
        timeout raises TimeoutError either way, and the future stays usable.

        >>> def inc(x):
        ...     return x + 1
        >>> client.submit(inc, 1).result(timeout=10)
        2
        """
        client = self._client()
        timeout = timeout_seconds(timeout, "Future.result")
        if client.asynchronous:
            return client._gather_one(self, timeout)
        return client._sync(client._gather_one(self, timeout), None)

    def __await__(self):
        return self._client()._gather_one(self, None).__await__()

    def exception(self, timeout: float | None = None) -> BaseException | None:
        """The exception the task raised (None if it succeeded); what to await with an
        asynchronous client (waiting here would block its event loop).

        >>> client.submit(abs, -1).exception(timeout=10) is None
        True
        """
        if self._client().asynchronous:
            return self._exception_async(timeout)
        self._wait(timeout)
        return self._error()

    def traceback(self, timeout: float | None = None) -> Any:
        """The remote traceback of a failed task, as a traceback object (None if it
        succeeded), for ``traceback.format_tb`` and friends as with dask; what to await with
        an asynchronous client. Its frames are rebuilt from the remote text (file, line,
        function): the frames themselves stay where the task failed, for ``client.debug``.

        >>> import traceback
        >>> client.submit(abs, -1).traceback(timeout=10) is None
        True
        >>> tb = client.submit(int, "x").traceback(timeout=10)
        >>> traceback.format_tb(tb)[-1].strip().startswith('File')
        True
        """
        if self._client().asynchronous:
            return self._traceback_async(timeout)
        self._wait(timeout)
        return as_traceback(self._traceback_text())

    def _error(self) -> BaseException | None:
        return self._state.error() if self.status in ("error", "cancelled", "lost") else None

    def _traceback_text(self) -> str | None:
        tb = self._state.traceback
        return bytes(tb).decode(errors="replace") if tb else None

    async def _exception_async(self, timeout: float | None) -> BaseException | None:
        await self._await_done(timeout)
        return self._error()

    async def _traceback_async(self, timeout: float | None) -> Any:
        await self._await_done(timeout)
        return as_traceback(self._traceback_text())

    def _wait(self, timeout: Any) -> None:
        timeout = timeout_seconds(timeout, "Future.exception/traceback")
        if not self._state.wait(timeout):
            raise TimeoutError(f"future {self.key!r} is still pending after {timeout}s")

    async def _await_done(self, timeout: float | None) -> None:
        """``_wait`` on the client's event loop."""
        timeout = timeout_seconds(timeout, "Future.exception/traceback")
        try:
            await asyncio.wait_for(self._state.await_done(), timeout)
        except asyncio.TimeoutError:
            raise TimeoutError(f"future {self.key!r} is still pending after {timeout}s") from None

    def _client(self):
        """The client, which a released future no longer has: then say so, by key."""
        if self.client is None:
            raise RuntimeError(f"future {self.key!r} was released (Future.release()): it no longer refers to a "
                               "result; keep the future until done with it, or submit the task again")
        return self.client

    def cancel(self, reason: str | None = None, msg: str | None = None, force: bool = False) -> None:
        """Stop this computation if nobody else wants it (``force=True``: even then, cancelling
        the other clients' futures of it too); the future becomes 'cancelled', and its
        ``result()`` says ``msg`` (default: the key was cancelled, and ``reason`` if given).
        The arguments come in dask's order; a bool first is taken as ``force``, as before."""
        if isinstance(reason, bool):
            reason, force = None, reason
        self._client()._cancel([self], force, reason, msg)

    def retry(self) -> None:
        """Run a failed task (and failed dependencies) again."""
        self._client()._retry([self])

    def add_done_callback(self, fn: Callable[["Future"], Any]) -> None:
        """Call ``fn(future)`` once done, as dask does: in a thread of its own (one for all
        callbacks, in order), so ``fn`` may call ``future.result()``; an exception ``fn``
        raises is logged and the other callbacks still run.

        >>> import threading
        >>> seen = threading.Event()
        >>> f = client.submit(abs, -3)
        >>> f.add_done_callback(lambda fut: seen.set() if fut.result() == 3 else None)
        >>> seen.wait(10)
        True
        """
        if not callable(fn):
            raise TypeError(f"add_done_callback takes a function of the future, got {fn!r:.80}")
        self._state.add_callback(lambda: _callback_thread().submit(_run_callback, fn, self))

    # -- lifetime --
    def release(self) -> None:
        """Drop this handle now instead of at garbage collection."""
        client, self.client = self.client, None
        if client is not None:
            client._dec_ref(self.key)

    def __del__(self):
        try:
            if self.client is not None:
                self.client._dec_ref(self.key)
        except Exception:
            pass

    def __reduce__(self):
        seen = getattr(_pickling, "keys", None)
        if seen is not None:
            seen.append(self.key)
        return (_rebuild_future, (self.key,))

    def __repr__(self) -> str:
        if self.client is None:
            return f"<Future: released, key: {self.key}>"
        extra = f", type: {self.type}" if self.status == "finished" and self.type else ""
        if self.status == "error":
            extra = f", {self._state.text[:80]}"
        return f"<Future: {self.status}, key: {self.key}{extra}>"

    def _repr_html_(self) -> str:
        if self.client is None:
            return f"<b>Future:</b> <code>{html.escape(self.key)}</code> <span style='color:#888'>released</span>"
        colour = {"finished": "#2a7", "error": "#c33", "pending": "#888", "cancelled": "#888"}.get(self.status, "#888")
        extra = f" type: {html.escape(self.type or '')}" if self.status == "finished" else ""
        if self.status == "error":
            extra = f" <code>{html.escape(self._state.text[:200])}</code>"
        return (f"<b>Future:</b> <code>{html.escape(self.key)}</code> "
                f"<span style='color:{colour}'>{self.status}</span>{extra}")

    def __hash__(self):
        return hash(self.key)

    def __eq__(self, other):
        return isinstance(other, Future) and other.key == self.key


_pickling = threading.local()  # .keys: the keys of Futures pickled now (publish_dataset)
_binding = threading.local()   # .client: the client that Futures unpickled now belong to


@contextlib.contextmanager
def collecting_keys():
    """Record the keys of every Future pickled in this block (on this thread).

    >>> import pickle
    >>> with collecting_keys() as keys:
    ...     _ = pickle.dumps([1, 2])
    >>> keys
    []
    """
    old = getattr(_pickling, "keys", None)
    _pickling.keys = keys = []
    try:
        yield keys
    finally:
        _pickling.keys = old


@contextlib.contextmanager
def binding_to(client):
    """Futures unpickled in this block (on this thread) belong to ``client``.

    >>> with binding_to(None):
    ...     pass
    """
    old = getattr(_binding, "client", None)
    _binding.client = client
    try:
        yield client
    finally:
        _binding.client = old


def collect_futures(obj, out: list) -> None:
    """Append to ``out`` every Future in ``obj``, itself one or nested in lists, tuples, sets,
    frozensets and dict values (what ``gather``, ``cancel`` and ``who_has`` accept).

    >>> out = []
    >>> collect_futures([1, {"a": (2, 3)}], out)
    >>> out
    []
    """
    if isinstance(obj, Future):
        out.append(obj)
    elif isinstance(obj, (list, tuple, set, frozenset)):
        for o in obj:
            collect_futures(o, out)
    elif isinstance(obj, dict):
        for o in obj.values():
            collect_futures(o, out)


def futures_of(obj) -> list[Future]:
    """The Futures inside ``obj``: itself a Future, nested in lists, tuples, sets and dicts
    (keys and values), or a collection persisted on a cluster (a Delayed or an array whose
    graph holds Futures). Each Future once, in the order found.

    >>> import xsched
    >>> a, b = client.submit(abs, -1), client.submit(abs, -2)
    >>> xsched.futures_of({"first": [a], "second": (b, 3)}) == [a, b]
    True
    >>> x = client.persist(xsched.delayed(sum)([1, 2]))
    >>> [f.key for f in xsched.futures_of(x)] == [x.key]
    True
    """
    out: list[Future] = []
    seen: set = set()
    stack = [obj]
    while stack:
        x = stack.pop()
        if isinstance(x, Future):
            mark = (x.key, id(x.client))
            if mark not in seen:
                seen.add(mark)
                out.append(x)
        elif isinstance(x, (list, tuple, set, frozenset)):
            stack.extend(reversed(list(x)))
        elif isinstance(x, dict):
            stack.extend(reversed([y for item in x.items() for y in item]))
        elif hasattr(x, "__xsched_graph__") and not isinstance(x, type):
            try:
                graph = x.__xsched_graph__()
            except Exception:  # a collection that cannot show its graph holds no Futures we can reach
                continue
            stack.extend(reversed([v for v in graph.values() if isinstance(v, Future)]))
    return out


def fire_and_forget(obj) -> None:
    """Keep computing the Futures in ``obj`` (see ``futures_of``) after this client lets them
    go, even after the client has closed: the scheduler holds them until they finish (or
    fail), then releases them. For tasks run for what they do (write a file, send a
    message), not for a result anyone collects.

    >>> import os, xsched
    >>> def write(path, text):
    ...     with open(path, "w") as f:
    ...         f.write(text)
    >>> xsched.fire_and_forget(client.submit(write, os.path.abspath("out.txt"), "done"))
    >>> client.close()   # the task still runs
    """
    by_client: dict[int, tuple] = {}
    for f in futures_of(obj):
        if f.client is None:
            continue  # released already: nothing to keep
        by_client.setdefault(id(f.client), (f.client, []))[1].append(f.key)
    for client, keys in by_client.values():
        # behind the graph that made the keys, and before the releases of the Futures dropped
        # after this call (the keys must still be wanted when the scheduler hears of them)
        client._send_in_order({"op": ops.FIRE_AND_FORGET, "keys": keys})


def _rebuild_future(key: str) -> Future:
    """Unpickling a Future (for example inside a task) binds it to this process's client."""
    client = getattr(_binding, "client", None) or hooks.get_client()
    fut = Future(key, client)
    client._want_keys([key])
    return fut
