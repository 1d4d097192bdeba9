"""The errors a user of xsched meets, and how a task's exception crosses processes.

Hierarchy::

    XschedError
    ├── KilledWorker          a task kept killing the workers that ran it
    ├── SchedulerLostError    the scheduler went away (also a ConnectionError)
    ├── FutureCancelledError  the future was cancelled (also concurrent.futures.CancelledError)
    ├── DataLostError         data is gone and cannot be recomputed (scattered, not kept)
    ├── NoWorkerError         no worker can ever satisfy a task's restrictions
    ├── DebuggerQuit          a task was stopped with ``q`` at its breakpoint
    └── DebugError            a task cannot be debugged (not failed, its frames dropped, ...)

A task's own exception is raised as itself in the client, with the remote traceback
attached as ``__cause__`` (a ``RemoteTraceback``), as ``concurrent.futures`` does. The
``RemoteTraceback`` also says where the failure can be debugged: ``key`` (the future's),
``blame`` (the task that raised: the key itself, or a dependency) and ``worker`` (where
it raised and its frames are kept; None when it did not raise on a worker), which
``client.debug`` and ``%debug`` read.

>>> exc, tb, text = pack_exception(ValueError("bad"))
>>> e = unpack_exception(exc, tb, text)
>>> type(e).__name__, "ValueError" in str(e.__cause__)
('ValueError', True)
"""

from __future__ import annotations

import concurrent.futures
import linecache
import pickle
import traceback as _tb
from typing import Any

import cloudpickle

__all__ = [
    "XschedError", "KilledWorker", "SchedulerLostError", "FutureCancelledError", "DataLostError",
    "NoWorkerError", "ActorError", "DebuggerQuit", "DebugError", "DashboardError", "TaskInterrupted",
    "RemoteTraceback", "pack_exception",
    "unpack_exception", "remote_handle", "as_traceback",
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
        where = f"workers that died (last: {last_worker})"
        if allowed_failures == 0:
            where = f"a worker that died ({last_worker})"
        elif allowed_failures is not None:
            where = f"workers that died {allowed_failures + 1} times (last: {last_worker})"
        super().__init__(
            f"task {key!r} was running on {where}; it is not "
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


class DashboardError(XschedError, OSError):
    """A scheduler cannot serve its dashboard page where it was asked to (a host it does not
    have, a port it may not use); a port merely taken falls back to a free one instead."""


class FutureCancelledError(XschedError, concurrent.futures.CancelledError):
    """The future was cancelled (by ``cancel()`` or because its client closed)."""


class DataLostError(XschedError):
    """The data behind a key is gone and there is no recipe to recompute it."""


class NoWorkerError(XschedError):
    """No worker in the cluster can run a task with these restrictions."""


class ActorError(XschedError, RuntimeError):
    """An actor cannot be reached: its worker left (its state with it), or its future was
    released. Create it again with ``client.submit(cls, actor=True)``."""


class DebuggerQuit(XschedError):
    """A task paused at a breakpoint was stopped with ``q`` (quit) in its debugger.

    >>> e = DebuggerQuit("g-1", "tcp://127.0.0.1:4000")
    >>> "g-1" in str(e) and "continue" in str(e)
    True
    """

    def __init__(self, key: str, worker: str | None = None):
        self.key, self.worker = key, worker
        where = f" on worker {worker}" if worker else ""
        super().__init__(f"task {key!r} was stopped from its debugger ('q' at its breakpoint{where}). Leave the "
                         "debugger with 'c' (continue) to let a task finish, or remove the breakpoint and retry it.")

    def __reduce__(self):
        return (DebuggerQuit, (self.key, self.worker))


class TaskInterrupted(XschedError):
    """A running task was interrupted (``client.interrupt``, or the call stacks pane's button):
    raised in its thread at the next line of Python it ran. Retry it with ``client.retry``.

    >>> "interrupted" in str(TaskInterrupted())
    True
    """

    def __init__(self, message: str = "the task was interrupted while it ran (client.interrupt); "
                                      "client.retry(future) runs it again"):
        super().__init__(message)


class DebugError(XschedError):
    """A task cannot be debugged: it has not failed, its frames are gone, its worker died...

    The message says which, and what to do instead.
    """


class RemoteTraceback(Exception):
    """The traceback of an exception raised in a task on a worker.

    ``key``, ``blame`` and ``worker`` say where to debug it (see the module's docstring).

    >>> rt = RemoteTraceback("Traceback ...", key="f-1", blame="g-2", worker="tcp://127.0.0.1:4000")
    >>> rt.blame, rt.worker
    ('g-2', 'tcp://127.0.0.1:4000')
    """

    def __init__(self, tb: str, key: str | None = None, blame: str | None = None, worker: str | None = None):
        super().__init__(tb)
        self.tb = tb
        self.key, self.blame, self.worker = key, blame, worker

    def __str__(self) -> str:
        return self.tb


def remote_handle(exc: BaseException | None) -> RemoteTraceback | None:
    """The ``RemoteTraceback`` of a task's exception, looked for along its ``__cause__`` and
    ``__context__`` chain (an exception raised while handling it still leads to it), or None.

    >>> e = unpack_exception(*pack_exception(ValueError("bad")), key="f-1", worker="tcp://127.0.0.1:4000")
    >>> try:
    ...     raise KeyError("while handling it") from e
    ... except KeyError as outer:
    ...     remote_handle(outer).key
    'f-1'
    """
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, RemoteTraceback) and exc.key is not None:
            return exc
        cause = exc.__cause__
        if isinstance(cause, RemoteTraceback) and cause.key is not None:
            return cause
        exc = cause if cause is not None else exc.__context__
    return None


def _safe_text(exc: BaseException) -> str:
    """``Type: message``, even for an exception whose ``str()`` itself raises."""
    try:
        return f"{type(exc).__name__}: {exc}"
    except Exception:  # noqa: BLE001 - a broken __str__ must not hide the error it describes
        return f"{type(exc).__name__} (its message could not be printed)"


def _travels_as_itself(exc: BaseException) -> bool:
    """Whether the receiver can raise ``exc`` as it is.

    A BaseException that is not an Exception (``asyncio.CancelledError``, ``SystemExit``,
    ``KeyboardInterrupt``, ...) raised in the client's event loop would cancel the call or
    stop the loop instead of reaching the user; a ``StopIteration`` cannot be raised through
    a coroutine or set on an asyncio future at all (PEP 479).
    """
    return isinstance(exc, Exception) and not isinstance(exc, StopIteration)


def pack_exception(exc: BaseException, key: str | None = None, tb=None) -> tuple[bytes, bytes, str]:
    """(pickled exception, traceback text as bytes, one-line text) for the wire.

    ``tb``: the traceback to show, when not the exception's own (a task's, without the
    worker's frames that ran it: ``worker.postmortem.task_traceback``).

    ``key`` names the task (or call) that raised, in the errors that stand in for ``exc``:
    an exception that cannot be pickled, or that the receiver cannot raise as itself (see
    ``_travels_as_itself``), travels as a RuntimeError naming it. Never raises, even for an
    exception whose ``str()`` raises: a failure to report a failure would be silent.

    >>> blob, tb, text = pack_exception(SystemExit(3), key="f-1")
    >>> text, type(unpack_exception(blob, tb)).__name__
    ('SystemExit: 3', 'RuntimeError')
    """
    try:
        tb = "".join(_tb.format_exception(type(exc), exc, tb if tb is not None else exc.__traceback__))
    except Exception:  # noqa: BLE001
        tb = f"(the traceback of {type(exc).__name__} could not be formatted)\n"
    text = _safe_text(exc)
    what = f"task {key!r}" if key is not None else "the remote call"
    if not _travels_as_itself(exc):
        kind = "a StopIteration" if isinstance(exc, StopIteration) else "a BaseException that is not an Exception"
        stand_in: BaseException | None = RuntimeError(
            f"{what} raised {text}: {kind}, which cannot be raised as itself here without cancelling or "
            "stopping the caller, so it arrives as this RuntimeError (the remote traceback is attached). "
            "Raise an Exception subclass in tasks to catch it by type.")
    else:
        stand_in = None
        try:
            blob = cloudpickle.dumps(exc, protocol=5)
            pickle.loads(blob)
        except Exception as e:  # noqa: BLE001
            stand_in = RuntimeError(
                f"the exception of {what} could not be pickled ({_safe_text(e)}): {text}. Exceptions "
                "raised in tasks must be picklable (module-level classes whose args rebuild them).")
    if stand_in is not None:
        blob = cloudpickle.dumps(stand_in, protocol=5)
    return blob, tb.encode(errors="replace"), text


def unpack_exception(blob: bytes | None, tb: bytes | None, text: str = "", key: str | None = None,
                     blame: str | None = None, worker: str | None = None) -> BaseException:
    """The exception to raise in the client, remote traceback attached as ``__cause__``
    (with ``key``, ``blame`` and ``worker``: where to debug it)."""
    exc: BaseException
    try:
        exc = pickle.loads(blob) if blob else RuntimeError(text or "task failed")
    except Exception as e:
        exc = RuntimeError(f"{text} (the exception could not be unpickled here: {e})")
    if not isinstance(exc, BaseException):
        exc = RuntimeError(text or repr(exc))
    elif not _travels_as_itself(exc):  # from a peer that sent it as itself
        exc = RuntimeError(f"the remote call raised {text or _safe_text(exc)}, which cannot be raised as itself "
                           "here without cancelling or stopping the caller")
    if tb:
        exc.__cause__ = RemoteTraceback("\n\"\"\"\n" + bytes(tb).decode(errors="replace") + '"""', key,
                                        blame or key, worker)
    return exc


_HEAD = "Traceback (most recent call last):"


def as_traceback(text: str | None):
    """A traceback object whose frames are those (file, line, function) of a remote
    traceback's text, its last exception's, for the ``traceback`` module's functions (what
    dask's ``Future.traceback()`` gives); None without a text or frames. tblib rebuilds
    them; a frame's source shows where its file is readable here.

    >>> import traceback
    >>> tb = as_traceback('Traceback (most recent call last):\\n  File "job.py", line 3, in step\\nValueError: x\\n')
    >>> traceback.extract_tb(tb)[0][:3], as_traceback(None), as_traceback("(no frames)")
    (('job.py', 3, 'step'), None, None)
    """
    if not text or _HEAD not in text:
        return None
    from tblib import Traceback, TracebackParseError

    try:
        parsed = Traceback.from_string(text[text.rindex(_HEAD):])
    except (TracebackParseError, ValueError):
        return None
    top = last = None
    while parsed is not None:
        made = _frame_raising(parsed.tb_frame.f_code.co_filename, parsed.tb_frame.f_code.co_name, parsed.tb_lineno)
        if made is not None:
            if last is None:
                top = made
            else:
                last.tb_next = made
            last = made
        parsed = parsed.tb_next
    return top


class _Marker(Exception):
    pass


def _frame_raising(filename: str, function: str, lineno: int) -> Any:
    """A traceback entry at ``filename:lineno`` in ``function``: a stub raised there whose
    statement spans the whole source line where it is readable here, so that the
    ``traceback`` module marks no columns (it would mark the stub's, not the remote ones)."""
    line = linecache.getline(filename, lineno)
    stripped, indent = line.strip(), len(line) - len(line.lstrip())
    # (15 characters and the padding; columns count UTF-8 bytes, as the traceback module counts them)
    statement = f"raise ({' ' * max(len(stripped.encode('utf-8')) - 15, 0)}_Marker)"
    source = statement if indent == 0 else "if 1:\n" + " " * indent + statement
    first = lineno if indent == 0 else lineno - 1
    try:
        code = compile(source, filename, "exec").replace(co_firstlineno=max(first, 1), co_name=function)
        exec(code, {"_Marker": _Marker})  # noqa: S102 - our own two-line stub
    except _Marker as raised:
        return raised.__traceback__.tb_next
    except Exception:  # (a line number the stub cannot stand at)
        return None
    return None
