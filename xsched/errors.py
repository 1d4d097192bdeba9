"""The errors a user of xsched meets, and how a task's exception crosses processes.

Hierarchy::

    XschedError
    ├── KilledWorker          a task kept killing the workers that ran it
    ├── SchedulerLostError    the scheduler went away (also a ConnectionError)
    ├── FutureCancelledError  the future was cancelled (also concurrent.futures.CancelledError)
    ├── DataLostError         data is gone and cannot be recomputed (scattered, not kept)
    └── NoWorkerError         no worker can ever satisfy a task's restrictions

A task's own exception is raised as itself in the client, with the remote traceback
attached as ``__cause__`` (a ``RemoteTraceback``), as ``concurrent.futures`` does.

>>> exc, tb, text = pack_exception(ValueError("bad"))
>>> e = unpack_exception(exc, tb, text)
>>> type(e).__name__, "ValueError" in str(e.__cause__)
('ValueError', True)
"""

from __future__ import annotations

import concurrent.futures
import pickle
import traceback as _tb

import cloudpickle

__all__ = [
    "XschedError", "KilledWorker", "SchedulerLostError", "FutureCancelledError", "DataLostError",
    "NoWorkerError", "RemoteTraceback", "pack_exception", "unpack_exception",
]


class XschedError(Exception):
    """Base class of xsched's own errors."""


class KilledWorker(XschedError):
    """A task was running on workers that died ``allowed-failures`` times; it is not retried.

    The message names the task and the last worker; the task probably uses too much
    memory or crashes the interpreter (segfault, os._exit).
    """

    def __init__(self, key: str, last_worker: str, allowed_failures: int | None = None):
        self.key, self.last_worker = key, last_worker
        n = f" {allowed_failures + 1} times" if allowed_failures is not None else ""
        super().__init__(
            f"task {key!r} was running on workers that died{n} (last: {last_worker}); it is not "
            "retried again. It may use more memory than a worker's limit or crash the interpreter. "
            "Raise `scheduler.allowed-failures`, give workers more memory, or fix the task."
        )

    def __reduce__(self):
        return (_rebuild_killed, (self.key, self.last_worker, str(self)))


def _rebuild_killed(key, last_worker, message):
    e = KilledWorker.__new__(KilledWorker)
    Exception.__init__(e, message)
    e.key, e.last_worker = key, last_worker
    return e


class SchedulerLostError(XschedError, ConnectionError):
    """The connection to the scheduler is gone; pending futures cannot complete."""


class FutureCancelledError(XschedError, concurrent.futures.CancelledError):
    """The future was cancelled (by ``cancel()`` or because its client closed)."""


class DataLostError(XschedError):
    """The data behind a key is gone and there is no recipe to recompute it."""


class NoWorkerError(XschedError):
    """No worker in the cluster can run a task with these restrictions."""


class RemoteTraceback(Exception):
    """The traceback of an exception raised in a task on a worker."""

    def __init__(self, tb: str):
        super().__init__(tb)
        self.tb = tb

    def __str__(self) -> str:
        return self.tb


def pack_exception(exc: BaseException) -> tuple[bytes, bytes, str]:
    """(pickled exception, traceback text as bytes, one-line text) for the wire.

    An exception that cannot be pickled travels as a RuntimeError naming it.
    """
    tb = "".join(_tb.format_exception(type(exc), exc, exc.__traceback__))
    text = f"{type(exc).__name__}: {exc}"
    try:
        blob = cloudpickle.dumps(exc, protocol=5)
        pickle.loads(blob)
    except Exception:
        blob = cloudpickle.dumps(RuntimeError(f"(exception could not be pickled) {text}"), protocol=5)
    return blob, tb.encode(), text


def unpack_exception(blob: bytes | None, tb: bytes | None, text: str = "") -> BaseException:
    """The exception to raise in the client, remote traceback attached as ``__cause__``."""
    exc: BaseException
    try:
        exc = pickle.loads(blob) if blob else RuntimeError(text or "task failed")
    except Exception as e:
        exc = RuntimeError(f"{text} (the exception could not be unpickled here: {e})")
    if not isinstance(exc, BaseException):
        exc = RuntimeError(text or repr(exc))
    if tb:
        exc.__cause__ = RemoteTraceback("\n\"\"\"\n" + bytes(tb).decode(errors="replace") + '"""')
    return exc
