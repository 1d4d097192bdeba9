"""What the scheduler can tell about itself: logs, the task stream, who holds and runs what,
the stories of keys, and a dump of its whole state.

The ``diagnostics`` scheduler extension (see ``base.py`` for the protocol). Every op is a
read: none changes the state machine. What only the workers know (their logs, the stacks
of their running tasks, profiles) the client asks the workers directly
(``worker/diagnostics.py``).

Data flow::

    worker --task-finished / task-erred {key, start, stop}--> Scheduler._op_task_finished/_erred
        -> DiagnosticsExtension.task_ran(worker, header, status) -> TaskStream.add (bounded)
    worker --worker-activity {records}--> (each heartbeat, when it fetched or spilled since)
        -> activity.add("transfer from <peer>" | "disk-write" | "disk-read", ..., kind): a second
           TaskStream, so what clients read as the task stream stays the task runs
    client.get_task_stream(start, stop, count) --get-task-stream--> <--{records, index}--
    xsched.get_task_stream() as ts:  enter: --get-task-stream {count: 0}--> index i
                                     exit:  --get-task-stream {since: i}--> the records since
    performance_report: the same, and {activity_since: j} --> the transfers and disk I/O since j
    client.get_scheduler_logs(n) --get-logs--> <--[[level, message], ...]-- (xsched/logs.py)
    client.has_what(workers) / processing(workers) --has-what / processing--> {address: [keys]}
    client.story(*keys) --story--> the state machine's transition log of those keys
    client.dump_cluster_state(...) --dump-state--> info, tasks, transition log, events, logs
    client.recreate_error_locally(f), when no worker kept the failure --task-spec {key}-->
        <--{run_spec (bytes, as the client sent them), functions, dependencies, nbytes}--

``TaskStream`` has no clocks or sockets: it numbers the runs it is given, so a caller that
noted ``index`` at one moment gets exactly the runs reported after it.

>>> stream = TaskStream(maxlen=2)
>>> for i in range(3):
...     stream.add(f"inc-{i}", "tcp://w:1", float(i), i + 0.5, "memory")
>>> [r[0] for r in stream.select()], stream.index
(['inc-1', 'inc-2'], 3)
>>> [r[0] for r in stream.select(since=2)]
['inc-2']
"""

from __future__ import annotations

from collections import Counter, deque
from itertools import islice

from ... import logs
from ...keys import key_split
from ...protocol import ops
from .base import SchedulerExtension

__all__ = ["DiagnosticsExtension", "TaskStream", "FIELDS", "plain", "ACTIVITY_KINDS"]

#: what else than task runs a worker reports for the dashboards' task streams: its transfers
#: and its spill writes and reads
ACTIVITY_KINDS = ("transfer", "disk-write", "disk-read")

#: the fields of a task-stream record, in the order the wire carries them
FIELDS = ("key", "worker", "start", "stop", "status", "nbytes", "group")


class TaskStream:
    """The last ``maxlen`` task runs the workers reported: ``(key, worker, start, stop, status,
    nbytes, group)``, numbered 0, 1, 2... in the order they arrived (``index``: the next
    number). The group is kept when the run is heard, while the scheduler still knows the
    task: a dashboard's poll would otherwise work it out from each key again."""

    __slots__ = ("records", "index")

    def __init__(self, maxlen: int = 100_000):
        self.records: deque = deque(maxlen=maxlen)
        self.index = 0

    def __len__(self) -> int:
        return len(self.records)

    def add(self, key: str, worker: str, start, stop, status: str, nbytes=None, group: str | None = None) -> None:
        """One run; its group is ``key_split(key)`` unless given."""
        self.records.append((key, worker, start, stop, status, nbytes, key_split(key) if group is None else group))
        self.index += 1

    def select(self, start: float | None = None, stop: float | None = None, count: int | None = None,
               since: int | None = None) -> list[tuple]:
        """Runs numbered ``since`` or later, that ended at ``start`` or after and began at ``stop``
        or before (a run without times passes no time bound), the last ``count`` of them.

        >>> stream = TaskStream()
        >>> stream.add("a", "w", 1.0, 2.0, "memory"); stream.add("b", "w", 3.0, 4.0, "error")
        >>> [r[0] for r in stream.select(start=2.5)], [r[0] for r in stream.select(stop=2.5)]
        (['b'], ['a'])
        >>> [r[0] for r in stream.select(count=1)], stream.select(count=0), len(stream.select(count=5))
        (['b'], [], 2)
        """
        first = self.index - len(self.records)  # the number of records[0]
        rows = self.records if since is None or since <= first else islice(self.records, since - first, None)
        if start is not None or stop is not None:
            rows = [r for r in rows if _overlaps(r[2], r[3], start, stop)]
        rows = list(rows)
        if count is not None:
            rows = rows[max(len(rows) - count, 0):] if count > 0 else []
        return rows


def _overlaps(began, ended, start, stop) -> bool:
    began = began if began is not None else ended
    ended = ended if ended is not None else began
    if began is None:
        return False
    return (start is None or ended >= start) and (stop is None or began <= stop)


def plain(x, depth: int = 0):
    """``x`` made of what msgpack and JSON both carry: tuples and sets become lists, map keys
    strings, anything else its ``repr``.

    >>> plain({("a", 1): {1, 2}, "t": (1.5, None, b"x")})
    {"('a', 1)": [1, 2], 't': [1.5, None, "b'x'"]}
    """
    if x is None or isinstance(x, (bool, int, float, str)):
        return x
    if depth > 32:
        return repr(x)
    if isinstance(x, dict):
        return {k if isinstance(k, str) else str(k): plain(v, depth + 1) for k, v in x.items()}
    if isinstance(x, (list, tuple, set, frozenset, deque)):
        items = sorted(x, key=repr) if isinstance(x, (set, frozenset)) else x
        return [plain(v, depth + 1) for v in items]
    return repr(x)


class DiagnosticsExtension(SchedulerExtension):
    """Serves get-logs, get-task-stream, has-what, processing, story, dump-state and task-spec; records
    the task stream (``task_ran``, called by the Scheduler for every task-finished and
    task-erred)."""

    name = "diagnostics"

    def __init__(self, scheduler, maxlen: int = 100_000):
        super().__init__(scheduler)
        self.task_stream = TaskStream(maxlen)
        #: the workers' transfers and spill writes and reads (``worker-activity``), apart from
        #: the task runs: records ``(what, worker, start, stop, kind, bytes)``
        self.activity = TaskStream(maxlen)

    def __repr__(self) -> str:
        return f"<DiagnosticsExtension task_stream={len(self.task_stream)} (index {self.task_stream.index})>"

    def task_ran(self, worker: str, h: dict, status: str) -> None:
        """A worker reports a run of ``h["key"]`` (its task-finished or task-erred header)."""
        key = h["key"]
        ts = self.scheduler.state.tasks.get(key)
        self.task_stream.add(key, worker, h.get("start"), h.get("stop"), status, h.get("nbytes"),
                             ts.group if ts is not None else None)

    # ------------------------------------------------------------------ ops
    def _op_worker_activity(self, peer, h, payload) -> None:
        """A worker's transfers and spill reads and writes since its last heartbeat, kept
        beside the task runs (``activity``) for the dashboards' task streams."""
        worker = self.scheduler.peer_worker.get(peer)
        if worker is None:
            return None
        for start, stop, kind, other, nbytes in h["records"]:
            if kind not in ACTIVITY_KINDS or not all(isinstance(t, (int, float)) for t in (start, stop)):
                continue
            key = f"transfer from {other}" if kind == "transfer" else kind
            self.activity.add(key, worker, float(start), float(stop), kind,
                              int(nbytes) if isinstance(nbytes, (int, float)) else None, kind)
        return None

    def _op_get_logs(self, peer, h, payload) -> dict:
        return {"logs": [list(r) for r in logs.recent(h.get("n"))]}

    def _op_get_task_stream(self, peer, h, payload) -> dict:
        rows = self.task_stream.select(h.get("start"), h.get("stop"), h.get("count"), h.get("since"))
        reply = {"records": [list(r) for r in rows], "index": self.task_stream.index,
                 "activity_index": self.activity.index}
        if h.get("activity_since") is not None:  # (the workers' transfers and disk I/O since that cursor)
            reply["activity"] = [list(r) for r in self.activity.select(None, None, None, h["activity_since"])]
        return reply

    def _workers(self, names) -> list[str]:
        """Addresses of the workers named (addresses or names; unknown ones left out); all for None."""
        state = self.scheduler.state
        if names is None:
            return list(state.workers)
        found = (state.resolve_worker(n) for n in ([names] if isinstance(names, str) else names))
        return list(dict.fromkeys(a for a in found if a is not None))

    def _op_has_what(self, peer, h, payload) -> dict:
        workers = self.scheduler.state.workers
        return {"has_what": {a: sorted(ts.key for ts in workers[a].has_what) for a in self._workers(h.get("workers"))}}

    def _op_nbytes(self, peer, h, payload) -> dict:
        """Bytes of each key in memory (those of ``keys``, else all), or their sums per prefix."""
        tasks = self.scheduler.state.tasks
        keys = h.get("keys")
        held = (ts for ts in (tasks.values() if keys is None else (tasks.get(k) for k in keys))
                if ts is not None and ts.state == "memory")
        if not h.get("summary"):
            return {"nbytes": {ts.key: ts.nbytes for ts in held}}
        sums: dict[str, int] = {}
        for ts in held:
            sums[ts.group] = sums.get(ts.group, 0) + ts.nbytes
        return {"nbytes": sums}

    def _op_processing(self, peer, h, payload) -> dict:
        workers = self.scheduler.state.workers
        return {"processing": {a: sorted(ts.key for ts in workers[a].processing)
                               for a in self._workers(h.get("workers"))}}

    def _op_story(self, peer, h, payload) -> dict:
        return {"story": [list(e) for e in self.scheduler.state.story(*h["keys"])]}

    def _op_dump_state(self, peer, h, payload) -> dict:
        return {"state": self.dump()}

    def _op_task_spec(self, peer, h, payload) -> dict:
        """A task's spec as the client sent it (bytes, never unpickled here), the pickled
        functions it refers to by id, and its dependencies with their sizes; or an error."""
        state = self.scheduler.state
        ts = state.tasks.get(h["key"])
        if ts is None or ts.run_spec is None:
            return {"error": f"the scheduler no longer has task {h['key']!r} (released and forgotten, or never "
                             "given its spec)"}
        functions = {fid: state.functions[fid][0] for fid in ts.functions if fid in state.functions}
        return {"run_spec": ts.run_spec, "functions": functions, "state": ts.state,
                "dependencies": {d.key: max(d.nbytes, 0) for d in ts.dependencies}}

    OPS = {ops.GET_LOGS: _op_get_logs, ops.GET_TASK_STREAM: _op_get_task_stream, ops.HAS_WHAT: _op_has_what,
           ops.GET_NBYTES: _op_nbytes,
           ops.PROCESSING: _op_processing, ops.STORY: _op_story, ops.DUMP_STATE: _op_dump_state,
           ops.TASK_SPEC: _op_task_spec, ops.WORKER_ACTIVITY: _op_worker_activity}

    # ------------------------------------------------------------------ the dump
    def dump(self) -> dict:
        """The scheduler's state for ``client.dump_cluster_state``, as plain data."""
        s = self.scheduler
        state = s.state
        tasks = {}
        for key, ts in state.tasks.items():
            tasks[key] = {
                "state": ts.state, "group": ts.group, "priority": list(ts.priority),
                "dependencies": [d.key for d in ts.dependencies], "n_dependents": len(ts.dependents),
                "who_has": sorted(ws.address for ws in ts.who_has),
                "processing_on": ts.processing_on.address if ts.processing_on is not None else None,
                "who_wants": sorted(ts.who_wants), "nbytes": ts.nbytes, "type": ts.type,
                "retries": ts.retries, "suspicious": ts.suspicious, "exception_text": ts.exception_text or None,
            }
        events = s.extensions.get("events")
        return plain({
            "info": s.info(),
            "counts": dict(Counter(ts.state for ts in state.tasks.values())),
            "tasks": tasks,
            "transition_log": list(state.log),  # (key, start, finish, stimulus_id), the story of every key
            "events": list(s.events),  # (time, kind, detail...): workers added and removed, restarts
            "topics": events.store.all() if events is not None else {},
            "task_stream": {"fields": list(FIELDS), "records": self.task_stream.select(count=10_000)},
            "logs": logs.recent(),
            "clients": sorted(s.client_peer),
            "extensions": list(s.extensions),
        })
