"""The tracebacks of a worker's last failed tasks, kept so that they can be debugged where they ran.

Why a room of its own: a failed task's frames and their locals are the most useful thing a
user can look at, and the most dangerous thing a worker can hold on to -- a frame may pin a
200 MB array nobody will ever use again. This module decides what is kept, how much it is
thought to weigh, and when it goes; the debugging sessions (``debugging.py``) only read it.

Data flow::

    task thread: the task raised -> PostMortems.keep(key, exc, task, inputs)
        trims the worker's own frames off the traceback, weighs the locals of the task's
        frames (sizeof), drops the oldest beyond ``debug.post-mortem.keep``
    event loop: metrics() adds ``nbytes`` to the worker's managed memory
    memory monitor (spill or pause): drop_oldest("memory pressure")
    a client released the key (debug-release) -> drop(key, "released")
    the key computed again here (compute-task) -> drop(key, "the task ran again")
    debug-attach -> get(key); a dropped key answers why (``why_dropped``)

Dropping clears the frames' locals (``traceback.clear_frames``), so that what they held is
freed even if something else still refers to a frame. Entries a session is attached to
(``in_use``) are never dropped by the keep limit or memory pressure; they go once it ends.
All methods are thread-safe (task threads keep, the loop drops).

>>> store = PostMortems(keep=1)
>>> def fail(x):
...     big = [x] * 10
...     raise ValueError(x)
>>> for key in ("a", "b"):
...     try:
...         fail(key)
...     except ValueError as e:
...         _ = store.keep(key, e)
>>> store.keys(), store.why_dropped("a")
(['b'], 'the keep limit (debug.post-mortem.keep = 1): newer failures replaced it')
>>> store.get("b").where
'fail (<doctest xsched.worker.postmortem[1]>:3)'
"""

from __future__ import annotations

import os
import threading
import time
import traceback as _traceback
import types
from collections import OrderedDict
from types import TracebackType
from typing import Any

from ..sizeof import sizeof

__all__ = ["PostMortem", "PostMortems", "task_traceback"]

#: how many dropped keys a worker remembers the reason of
REMEMBER_DROPPED = 256

#: the worker's own modules whose frames lead up to a task's function (trimmed off the traceback)
_RUNNER_FILES = tuple(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), *p) for p in (
    ("worker", "server.py"), ("graph", "spec.py"), ("protocol", "tasks.py"), ("worker", "threads.py")))


def task_traceback(tb: TracebackType | None) -> TracebackType | None:
    """``tb`` without its leading frames of the worker's own code (``_run_task``, ``Task.run``):
    the debugger then starts in the task's function, and ``up`` stops there. A traceback
    made only of such frames is kept whole.

    >>> try:
    ...     raise ValueError
    ... except ValueError as e:
    ...     task_traceback(e.__traceback__) is e.__traceback__
    True
    """
    t = tb
    while t is not None and os.path.abspath(t.tb_frame.f_code.co_filename) in _RUNNER_FILES:
        t = t.tb_next
    return t if t is not None else tb


_NOT_DATA = (type, types.ModuleType, types.FunctionType, types.BuiltinFunctionType, types.MethodType)


def _frames(tb: TracebackType | None) -> list:
    out = []
    while tb is not None:
        out.append(tb.tb_frame)
        tb = tb.tb_next
    return out


def frames_nbytes(tb: TracebackType | None, extra: Any = None) -> int:
    """What the locals of the frames of ``tb`` (and ``extra``) hold, each object once.

    >>> import numpy as np
    >>> def f():
    ...     a = np.zeros(1000)
    ...     b = a          # the same array: counted once
    ...     raise ValueError
    >>> try:
    ...     f()
    ... except ValueError as e:
    ...     frames_nbytes(e.__traceback__.tb_next) >= 8000
    True
    """
    seen: set[int] = set()
    total = 0
    values = [v for frame in _frames(tb) for v in frame.f_locals.values()]
    if extra is not None:
        values.append(extra)
    for v in values:
        if id(v) in seen or isinstance(v, _NOT_DATA):
            continue
        seen.add(id(v))
        total += sizeof(v)
    return total


class PostMortem:
    """One failed task kept on its worker: the exception with its frames.

    ``tb``: the traceback from the task's function down (what the debugger shows);
    ``task`` and ``inputs``: the task as it ran and the values of its dependencies (for
    ``client.recreate_error_locally``); ``nbytes``: what the frames and inputs are thought
    to hold; ``since``: when it failed (seconds since the epoch).
    """

    __slots__ = ("key", "exception", "tb", "full_tb", "task", "inputs", "nbytes", "since", "text", "where")

    def __init__(self, key: str, exception: BaseException, task: Any = None, inputs: dict | None = None):
        self.key = key
        self.exception = exception
        self.full_tb = exception.__traceback__
        self.tb = task_traceback(self.full_tb)
        self.task = task
        self.inputs = inputs or {}
        self.nbytes = frames_nbytes(self.tb, self.inputs)
        self.since = time.time()
        try:
            self.text = f"{type(exception).__name__}: {exception}"
        except Exception:  # noqa: BLE001 - a broken __str__
            self.text = type(exception).__name__
        last = self.tb
        while last is not None and last.tb_next is not None:
            last = last.tb_next
        self.where = (f"{last.tb_frame.f_code.co_name} ({last.tb_frame.f_code.co_filename}:{last.tb_lineno})"
                      if last is not None else "?")

    def clear(self) -> None:
        """Free what the frames hold (their locals), the task and its inputs."""
        if self.full_tb is not None:
            _traceback.clear_frames(self.full_tb)
        try:
            self.exception.__traceback__ = None
        except Exception:  # noqa: BLE001
            pass
        self.tb = self.full_tb = self.task = None
        self.inputs = {}

    def info(self) -> dict:
        return {"key": self.key, "text": self.text[:500], "where": self.where, "nbytes": self.nbytes,
                "since": self.since}

    def __repr__(self) -> str:
        return f"<PostMortem {self.key!r}: {self.text[:80]} at {self.where}, ~{self.nbytes} bytes>"


class PostMortems:
    """The post-mortems of one worker: the last ``keep`` failures, by key (see the module)."""

    def __init__(self, keep: int = 5, remember: int = REMEMBER_DROPPED):
        self.keep_count = max(int(keep), 0)
        self._entries: OrderedDict[str, PostMortem] = OrderedDict()  # oldest first
        self._dropped: OrderedDict[str, str] = OrderedDict()  # key -> why it went (bounded)
        self._remember = remember
        self._lock = threading.Lock()
        self.in_use: set[str] = set()  # keys a debugging session is attached to

    # ------------------------------------------------------------------ reading
    @property
    def enabled(self) -> bool:
        return self.keep_count > 0

    @property
    def nbytes(self) -> int:
        """What all kept frames are thought to hold (counted as managed memory)."""
        return sum(pm.nbytes for pm in list(self._entries.values()))

    def __len__(self) -> int:
        return len(self._entries)

    def keys(self) -> list[str]:
        """The keys kept, oldest first."""
        return list(self._entries)

    def get(self, key: str) -> PostMortem | None:
        return self._entries.get(key)

    def why_dropped(self, key: str) -> str | None:
        """Why the post-mortem of ``key`` is gone (None: this worker never had it, or forgot why)."""
        return self._dropped.get(key)

    def info(self) -> list[dict]:
        return [pm.info() for pm in list(self._entries.values())]

    # ------------------------------------------------------------------ changes
    def keep(self, key: str, exception: BaseException, task: Any = None, inputs: dict | None = None
             ) -> PostMortem | None:
        """Keep the failure of ``key`` (from its task thread, in the ``except`` that caught it);
        drop the oldest beyond the limit. None when keeping is switched off. Never raises."""
        if not self.keep_count:
            return None
        try:
            pm = PostMortem(key, exception, task, inputs)
        except Exception:  # noqa: BLE001 - a failure to keep a failure must not hide it
            return None
        gone = []
        with self._lock:
            old = self._entries.pop(key, None)
            if old is not None and key not in self.in_use:
                gone.append(old)
            self._entries[key] = pm
            self._dropped.pop(key, None)
            for k in list(self._entries):
                if len(self._entries) <= self.keep_count:
                    break
                if k in self.in_use or k == key:
                    continue
                gone.append(self._pop(k, f"the keep limit (debug.post-mortem.keep = {self.keep_count}): "
                                         "newer failures replaced it"))
        for entry in gone:
            entry.clear()
        return pm

    def drop(self, key: str, reason: str) -> bool:
        """Drop the post-mortem of ``key`` (even one in use: its session then sees it gone),
        remembering ``reason``; False when there was none."""
        with self._lock:
            if key not in self._entries:
                return False
            pm = self._pop(key, reason)
        pm.clear()
        return True

    def drop_oldest(self, reason: str = "memory pressure on the worker") -> int:
        """Drop the oldest post-mortem no session is attached to; the bytes it was thought to
        hold (0 when there was none)."""
        with self._lock:
            key = next((k for k in self._entries if k not in self.in_use), None)
            if key is None:
                return 0
            pm = self._pop(key, reason)
        pm.clear()
        return pm.nbytes

    def clear(self, reason: str = "the worker closed") -> None:
        with self._lock:
            entries = [self._pop(k, reason) for k in list(self._entries)]
        for pm in entries:
            pm.clear()

    def _pop(self, key: str, reason: str) -> PostMortem:
        pm = self._entries.pop(key)
        self._dropped[key] = reason
        self._dropped.move_to_end(key)
        while len(self._dropped) > self._remember:
            self._dropped.popitem(last=False)
        return pm

    def __repr__(self) -> str:
        return f"<PostMortems {len(self)} of {self.keep_count} kept, ~{self.nbytes} bytes>"
