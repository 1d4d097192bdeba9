"""What a live dashboard shows, in one batched reply since the caller's cursors.

The ``telemetry`` scheduler extension (see ``base.py`` for the protocol). A dashboard (the
JupyterLab panes, through ``xsched/labserver``) polls one op at the rate its browser asks
for; each reply carries everything new since the cursors the caller sent back::

    dashboard --telemetry {parts, since, memory_since, max_records}--> TelemetryExtension
        task-stream  the runs numbered ``since`` or later, from the diagnostics extension's
                     TaskStream (no copy kept here); over ``max_records`` only the newest are
                     sent and ``skipped`` counts the others (runs the bounded stream already
                     dropped count too); ``index``: the cursor for the next call
        workers      one row per worker: address, name, nthreads, managed / unmanaged /
                     spilled / limit, cpu, executing, processing, status
        groups       per task group: done, processing, erred, waiting (``GroupCounts``)
        memory       per worker, the samples of ``Scheduler.memory_history`` newer than
                     ``memory_since[address]`` (one cursor per worker: their clocks differ)
    <--{time, task_stream: {records, index, first, skipped}, workers, groups, memory, memory_since}--

Cursors live with the caller, never here: a dashboard that goes away leaves nothing
behind. What this extension keeps is bounded whatever the number of tasks: the group
counts (``GroupCounts``, at most ``MAX_GROUPS`` groups) and nothing else; the task stream
(at most 100,000 runs) and the memory history (3,600 samples per worker) are the
scheduler's own.

The group counts cost nothing until a dashboard first asks: the first request counts the
tasks the scheduler knows (one pass), then a transition hook (O(1)) keeps them.

>>> counts = GroupCounts()
>>> from types import SimpleNamespace as T
>>> a = T(key="inc-1", group="inc", state="waiting", nbytes=-1)
>>> counts(a, "released", "waiting"); counts(a, "waiting", "processing")
>>> a.nbytes = 8; counts(a, "processing", "memory"); counts(a, "memory", "released")
>>> counts.rows()
[{'name': 'inc', 'done': 1, 'processing': 0, 'erred': 0, 'waiting': 0, 'total': 1}]
"""

from __future__ import annotations

import time
from itertools import islice

from ...keys import key_split
from ...protocol import ops
from .base import SchedulerExtension

__all__ = ["TelemetryExtension", "GroupCounts", "MAX_GROUPS", "MAX_RECORDS", "PARTS", "category"]

#: most groups counted; past it the oldest finished group is dropped first
MAX_GROUPS = 1000
#: runs sent per reply when the caller does not say (at most 100,000: the schema's bound)
MAX_RECORDS = 10_000
#: what a caller may ask for
PARTS = ("task-stream", "workers", "groups", "memory")
#: the columns of a group's counts
COLUMNS = ("done", "processing", "erred", "waiting")
_WAITING = frozenset({"waiting", "queued", "no-worker"})


def category(state: str, nbytes: int) -> int:
    """The column (an index into ``COLUMNS``) a task in ``state`` counts in, or -1 for none.

    A task that ran (``nbytes >= 0``) stays done when it is released or forgotten; one
    released before it ran counts nowhere (it is about to wait, or was cancelled).

    >>> [COLUMNS[category(s, -1)] for s in ("waiting", "queued", "processing", "erred", "memory")]
    ['waiting', 'waiting', 'processing', 'erred', 'done']
    >>> category("released", -1), COLUMNS[category("forgotten", 16)]
    (-1, 'done')
    """
    if state == "memory":
        return 0
    if state == "processing":
        return 1
    if state == "erred":
        return 2
    if state in _WAITING:
        return 3
    return 0 if nbytes >= 0 else -1


class GroupCounts:
    """Per task group, how many tasks are done, processing, erred and waiting: a transition
    hook of the scheduler's state, O(1) per transition, at most ``max_groups`` groups."""

    __slots__ = ("counts", "max_groups", "__weakref__")

    def __init__(self, max_groups: int = MAX_GROUPS):
        self.counts: dict[str, list[int]] = {}  # group -> [done, processing, erred, waiting], oldest first
        self.max_groups = max_groups

    def seed(self, tasks) -> None:
        """Count the tasks the state knows now (``state.tasks.values()``): one pass."""
        for ts in tasks:
            i = category(ts.state, ts.nbytes)
            if i >= 0:
                self._row(ts.group)[i] += 1

    def _row(self, group: str) -> list[int]:
        row = self.counts.get(group)
        if row is None:
            if len(self.counts) >= self.max_groups:
                self._evict()
            row = self.counts[group] = [0, 0, 0, 0]
        return row

    def _evict(self) -> None:
        """Drop the oldest group with nothing left to run (else the oldest group)."""
        for name, row in self.counts.items():
            if row[1] <= 0 and row[3] <= 0:
                del self.counts[name]
                return
        del self.counts[next(iter(self.counts))]

    def __call__(self, ts, start: str, finish: str) -> None:
        nbytes = ts.nbytes
        a, b = category(start, nbytes), category(finish, nbytes)
        if a == b:
            return
        row = self._row(ts.group)
        if a >= 0:
            row[a] -= 1
        if b >= 0:
            row[b] += 1

    def rows(self) -> list[dict]:
        """One dict per group, in the order the groups first appeared."""
        out = []
        for name, row in self.counts.items():
            done, processing, erred, waiting = (max(x, 0) for x in row)
            out.append({"name": name, "done": done, "processing": processing, "erred": erred,
                        "waiting": waiting, "total": done + processing + erred + waiting})
        return out


def stream_since(stream, since: int | None, max_records: int) -> tuple[list, int, int]:
    """(records, number of the first one, runs skipped) of a ``TaskStream`` from run ``since``
    (None: the oldest kept), the newest ``max_records`` when there are more.

    >>> from xsched.scheduler.extensions.diagnostics import TaskStream
    >>> s = TaskStream(maxlen=5)
    >>> for i in range(8):
    ...     s.add(f"inc-{i}", "w", i, i + 1, "memory")
    >>> rows, first, skipped = stream_since(s, 1, 2)
    >>> [r[0] for r in rows], first, skipped          # runs 1, 2 dropped by the stream, 3..5 by the cap
    (['inc-6', 'inc-7'], 6, 5)
    >>> stream_since(s, 8, 10)
    ([], 8, 0)
    """
    oldest = stream.index - len(stream.records)
    start = oldest if since is None else min(max(since, 0), stream.index)
    lost = max(oldest - start, 0)  # runs after the cursor the bounded stream dropped already
    begin = max(start, oldest)
    available = stream.index - begin
    take = min(available, max_records)
    first = stream.index - take
    rows = list(islice(stream.records, first - oldest, None)) if take else []
    return rows, first, lost + available - take


class TelemetryExtension(SchedulerExtension):
    """Serves ``telemetry``: task runs, worker rows, group counts and memory samples since the
    caller's cursors, in one reply."""

    name = "telemetry"

    def __init__(self, scheduler):
        super().__init__(scheduler)
        self.groups: GroupCounts | None = None  # counted from the first request on

    def __repr__(self) -> str:
        n = "not counting" if self.groups is None else f"{len(self.groups.counts)} groups"
        return f"<TelemetryExtension {n}>"

    def group_counts(self) -> GroupCounts:
        """The group counts, started (one pass over the tasks, then a transition hook) on first use."""
        if self.groups is None:
            state = self.scheduler.state
            groups = GroupCounts()
            groups.seed(state.tasks.values())
            state.transition_hooks.append(groups)
            self.groups = groups
        return self.groups

    def close(self):
        """Detach the group counting hook."""
        super().close()
        if self.groups is not None:
            try:
                self.scheduler.state.transition_hooks.remove(self.groups)
            except ValueError:
                pass
            self.groups = None

    # ------------------------------------------------------------------ the parts
    def task_stream(self, since: int | None, max_records: int) -> dict:
        """The runs since ``since`` as ``[key, group, worker, start, stop, status]`` rows."""
        diagnostics = self.scheduler.extensions.get("diagnostics")
        if diagnostics is None:
            return {"records": [], "index": 0, "first": 0, "skipped": 0,
                    "error": "the scheduler does not load the diagnostics extension, which records the task stream"}
        rows, first, skipped = stream_since(diagnostics.task_stream, since, max_records)
        tasks = self.scheduler.state.tasks
        out = []
        for key, worker, start, stop, status, _nbytes in rows:
            ts = tasks.get(key)
            out.append([key, ts.group if ts is not None else key_split(key), worker, start, stop, status])
        return {"records": out, "index": diagnostics.task_stream.index, "first": first, "skipped": skipped}

    def workers(self) -> list[dict]:
        """One row per worker, in the order they joined."""
        rows = []
        for address, ws in self.scheduler.state.workers.items():
            m = ws.metrics or {}
            rows.append({
                "address": address, "name": str(ws.name if ws.name is not None else address),
                "nthreads": ws.nthreads, "memory_limit": ws.memory_limit or 0,
                "managed": m.get("managed", 0) or 0, "unmanaged": m.get("unmanaged", 0) or 0,
                "spilled": m.get("spilled", 0) or 0, "rss": m.get("rss", 0) or 0,
                "cpu": m.get("cpu", 0) or 0, "executing": m.get("executing", 0) or 0,
                "processing": len(ws.processing), "in_memory": len(ws.has_what), "status": ws.status,
            })
        return rows

    def memory(self, since: dict | None) -> tuple[dict, dict]:
        """(address -> samples ``[time, rss, managed, spilled]`` newer than ``since[address]``,
        address -> the time of its newest sample): the scheduler's memory history, not copied."""
        since = since or {}
        out, cursors = {}, {}
        for address, hist in getattr(self.scheduler, "memory_history", {}).items():
            t0 = since.get(address)
            new = []
            for sample in reversed(hist):  # newest first: stop at the first one already seen
                if t0 is not None and sample[0] <= t0:
                    break
                new.append(list(sample))
            new.reverse()
            out[address] = new
            cursors[address] = hist[-1][0] if hist else t0
        return out, cursors

    # ------------------------------------------------------------------ the op
    def poll(self, parts=None, since: int | None = None, memory_since: dict | None = None,
             max_records: int | None = None) -> dict:
        """One reply of the ``telemetry`` op: the ``parts`` asked for (all of ``PARTS`` when
        None) since the caller's cursors. The dashboard page's server (``xsched/dashboard/
        server.py``) calls it on the scheduler's loop; clients send the op.

        >>> from xsched.scheduler.server import Scheduler
        >>> ext = Scheduler().extensions["telemetry"]      # (not started: no worker, no task)
        >>> reply = ext.poll(["workers", "task-stream"], since=0)
        >>> reply["workers"], reply["task_stream"]
        ([], {'records': [], 'index': 0, 'first': 0, 'skipped': 0})
        """
        parts = parts or PARTS
        reply: dict = {"time": time.time()}
        if "task-stream" in parts:
            reply["task_stream"] = self.task_stream(since, max_records or MAX_RECORDS)
        if "workers" in parts:
            reply["workers"] = self.workers()
        if "groups" in parts:
            reply["groups"] = self.group_counts().rows()
        if "memory" in parts:
            reply["memory"], reply["memory_since"] = self.memory(memory_since)
        return reply

    def _op_telemetry(self, peer, h, payload) -> dict:
        return self.poll(h.get("parts"), h.get("since"), h.get("memory_since"), h.get("max_records"))

    OPS = {ops.TELEMETRY: _op_telemetry}
