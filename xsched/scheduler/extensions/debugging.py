"""Which tasks are paused at a breakpoint now, for the progress bars and the panel.

The ``debugging`` scheduler extension (see ``base.py`` for the protocol). A paused task
stays ``processing`` in the state machine -- it holds its thread and is neither stolen nor
rescheduled -- so the pause is not a task state but a note beside it::

    task thread: breakpoint() -> worker/debugging.py pause
        --task-paused {key, paused: true, file, line, function}--> DebuggingExtension
        progress bars counting the key show it paused (ProgressExtension.set_paused)
    `c` in the debugger, the breakpoint timeout, or the task ending
        --task-paused {key, paused: false}--> the note goes
    the worker leaves, or the key leaves processing -> the note goes too

``client.breakpoints()`` asks the workers themselves (they know who is attached); this is
the scheduler's view, read by the progress bars and the JupyterLab panel.

>>> ext = DebuggingExtension.__new__(DebuggingExtension)
>>> ext.paused, ext._by_worker, ext.scheduler = {}, {}, None
>>> ext.note("g-1", "tcp://w:1", {"file": "f.py", "line": 3, "function": "g"}, now=10.0)
>>> ext.paused["g-1"]["function"], ext.forget_worker("tcp://w:1"), ext.paused
('g', ['g-1'], {})
"""

from __future__ import annotations

import time

from ...protocol import ops
from .base import SchedulerExtension

__all__ = ["DebuggingExtension"]


class DebuggingExtension(SchedulerExtension):
    """The tasks paused at breakpoints: key -> worker, file, line, function, since."""

    name = "debugging"

    def __init__(self, scheduler):
        super().__init__(scheduler)
        self.paused: dict[str, dict] = {}
        self._by_worker: dict[str, set[str]] = {}

    def __repr__(self) -> str:
        return f"<DebuggingExtension: {len(self.paused)} tasks paused at breakpoints>"

    def _op_task_paused(self, peer, h, payload) -> None:
        worker = self.scheduler.peer_worker.get(peer)
        if worker is None:
            return  # (a worker already removed: its tasks went with it)
        key = h["key"]
        if h["paused"]:
            ts = self.scheduler.state.tasks.get(key)
            if ts is None or ts.state != "processing":
                return  # the scheduler moved on from it (released, stolen back, its worker lost)
            self.note(key, worker, h, time.time())
        else:
            self.forget(key)

    OPS = {ops.TASK_PAUSED: _op_task_paused}

    def note(self, key: str, worker: str, where: dict, now: float) -> None:
        """``key`` is paused on ``worker`` at ``where`` (file, line, function) since ``now``."""
        self.paused[key] = {"worker": worker, "file": where.get("file"), "line": where.get("line"),
                            "function": where.get("function"), "since": now}
        self._by_worker.setdefault(worker, set()).add(key)
        self._tell_progress(key, True)

    def forget(self, key: str) -> None:
        entry = self.paused.pop(key, None)
        if entry is None:
            return
        keys = self._by_worker.get(entry["worker"])
        if keys is not None:
            keys.discard(key)
            if not keys:
                del self._by_worker[entry["worker"]]
        self._tell_progress(key, False)

    def forget_worker(self, address: str) -> list[str]:
        """Drop the notes of a worker that left; returns their keys."""
        keys = sorted(self._by_worker.get(address, ()))
        for key in keys:
            self.forget(key)
        return keys

    def _tell_progress(self, key: str, paused: bool) -> None:
        progress = self.scheduler.extensions.get("progress") if self.scheduler is not None else None
        if progress is not None:
            progress.set_paused(key, paused)

    # ------------------------------------------------------------------ hooks
    def transition(self, ts, start: str, finish: str) -> None:
        if start == "processing" and ts.key in self.paused:  # finished, failed, released or rescheduled
            self.forget(ts.key)

    def remove_worker(self, address: str, reason: str) -> None:
        self.forget_worker(address)

    def by_group(self) -> dict[str, int]:
        """Paused tasks per task group (for the panel)."""
        out: dict[str, int] = {}
        tasks = self.scheduler.state.tasks
        for key in self.paused:
            ts = tasks.get(key)
            if ts is not None:
                out[ts.group] = out.get(ts.group, 0) + 1
        return out
