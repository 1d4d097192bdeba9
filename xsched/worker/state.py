"""A worker's decisions, as a pure state machine: events in, instructions out.

No sockets, threads, clocks or data here: the server (``worker/server.py``) owns the
data store, the thread pool and the peer connections. It feeds events to
:meth:`WorkerState.handle` and carries out the returned instructions:
``Execute(key)``, ``GatherDep(worker, keys)``, ``FreeData(keys)``, ``SendToScheduler(msg)``.

Task states on a worker::

    fetch --> flight --> memory            (a dependency copied from a peer)
      ^          |
      +----------+ (peer failed, another holder known)      --> missing (no holder left)
    waiting --> ready --> executing --> memory | error      (a task to run here)
                            |   ^   |
                            |   |   +--> cancelled (released while running: result dropped)
                  Secede    v   |  Rejoin (waits for a free thread; before any ready task)
                          long-running                       (e.g. inside worker_client())

A seceded (``long-running``) task keeps running in its own thread but no longer counts
against ``nthreads``: another ready task starts, and the scheduler is told
(``task-seceded``) so it sends more work. ``Rejoin`` puts it back among the executing
tasks as soon as one of the ``nthreads`` slots is free (``Rejoined`` tells the server to
let the task's thread continue; the scheduler hears ``task-rejoined``).

A ``StealRequest`` drops a task that has not started (``ready``/``waiting``) so the
scheduler can give it to an idle worker; the answer (``steal-response``) says which.

Replicas asked for by the scheduler (``AcquireReplicas``, when another worker retires) are
fetched like dependencies, with no dependent; once here they are reported (``add-keys``).

Tasks run highest priority first; a paused worker starts nothing and fetches nothing.
Resources declared by the worker bound how many tasks needing them run at once.

>>> ws = WorkerState(nthreads=1)
>>> out = ws.handle(ComputeTask("a", b"spec", priority=(0,)))
>>> [type(i).__name__ for i in out]
['Execute']
"""

from __future__ import annotations

import heapq
import itertools
from collections import defaultdict, deque
from dataclasses import dataclass, field

__all__ = [
    "WorkerState", "WTaskState", "ComputeTask", "FreeKeys", "ExecuteSuccess", "ExecuteFailure",
    "GatherDepSuccess", "GatherDepFailure", "UpdateData", "Pause", "Unpause", "AcquireReplicas",
    "Secede", "Rejoin", "StealRequest", "Execute", "GatherDep", "FreeData", "SendToScheduler", "Rejoined",
]

_ids = itertools.count()


def _sid(prefix):
    return f"{prefix}-{next(_ids)}"


# ------------------------------------------------------------------ events
@dataclass(slots=True)
class ComputeTask:
    key: str
    run_spec: bytes | None
    priority: tuple = (0,)
    who_has: dict = field(default_factory=dict)
    nbytes: dict = field(default_factory=dict)
    resources: dict | None = None
    stimulus_id: str = field(default_factory=lambda: _sid("compute-task"))
    wanted: bool = False  # send a small result back inline (a client or dependents elsewhere want it)
    # dependencies whose values came with the task: key -> nbytes when the server stored
    # the value (it asks ``takes_inline`` first), None when it did not (the scheduler,
    # which counted this worker as a holder, is then told otherwise)
    inline: dict = field(default_factory=dict)


@dataclass(slots=True)
class FreeKeys:
    keys: list
    stimulus_id: str = field(default_factory=lambda: _sid("free-keys"))


@dataclass(slots=True)
class ExecuteSuccess:
    """The task ran to a result. ``start``/``stop`` span its whole run; ``seceded`` is the
    part of that span it spent seceded (from ``secede()`` until ``rejoin()`` had a slot
    again): the scheduler learns durations from ``stop - start - seceded``, the time the
    task held a thread, since waiting for the tasks it launched is not its own work."""

    key: str
    nbytes: int
    type: str | None = None
    start: float | None = None
    stop: float | None = None
    stimulus_id: str = field(default_factory=lambda: _sid("execute-success"))
    seceded: float = 0.0
    inline: bytes | None = None  # the pickled result, when small and a client wants it


@dataclass(slots=True)
class ExecuteFailure:
    key: str
    exception: bytes
    traceback: bytes
    text: str
    start: float | None = None
    stop: float | None = None
    stimulus_id: str = field(default_factory=lambda: _sid("execute-failure"))


@dataclass(slots=True)
class GatherDepSuccess:
    """Data arrived from ``worker`` (stored by the server); ``nbytes`` per key received.

    ``errors``: keys the holder has but cannot send (their value cannot be pickled), each
    with ``(exception, traceback, text)`` for the tasks here that needed it.
    """

    worker: str
    nbytes: dict
    stimulus_id: str = field(default_factory=lambda: _sid("gather-success"))
    errors: dict = field(default_factory=dict)


@dataclass(slots=True)
class GatherDepFailure:
    """``worker`` could not be reached, or did not have ``keys``."""

    worker: str
    keys: list
    stimulus_id: str = field(default_factory=lambda: _sid("gather-failure"))


@dataclass(slots=True)
class UpdateData:
    """Data put here directly (scatter); ``nbytes`` per key."""

    nbytes: dict
    stimulus_id: str = field(default_factory=lambda: _sid("update-data"))


@dataclass(slots=True)
class AcquireReplicas:
    """Copy these keys here from their holders (``who_has``: key -> addresses)."""

    who_has: dict
    nbytes: dict = field(default_factory=dict)
    priority: dict = field(default_factory=dict)
    stimulus_id: str = field(default_factory=lambda: _sid("acquire-replicas"))


@dataclass(slots=True)
class Pause:
    stimulus_id: str = field(default_factory=lambda: _sid("pause"))


@dataclass(slots=True)
class Unpause:
    stimulus_id: str = field(default_factory=lambda: _sid("unpause"))


@dataclass(slots=True)
class Secede:
    """The running task ``key`` leaves the thread pool (it waits for other tasks)."""

    key: str
    stimulus_id: str = field(default_factory=lambda: _sid("secede"))


@dataclass(slots=True)
class Rejoin:
    """The seceded task ``key`` wants a thread slot again (its thread waits for ``Rejoined``)."""

    key: str
    stimulus_id: str = field(default_factory=lambda: _sid("rejoin"))


@dataclass(slots=True)
class StealRequest:
    """The scheduler would give ``key`` to another worker: drop it if it has not started."""

    key: str
    stimulus_id: str = field(default_factory=lambda: _sid("steal-request"))


# ------------------------------------------------------------------ instructions
@dataclass(slots=True)
class Rejoined:
    """Let the thread of task ``key``, waiting in ``rejoin()``, continue."""

    key: str


@dataclass(slots=True)
class Execute:
    key: str
    run_spec: bytes
    wanted: bool = False  # pickle a small result into task-finished (INLINE_RESULT_BYTES)


@dataclass(slots=True)
class GatherDep:
    worker: str
    keys: list
    total_nbytes: int


@dataclass(slots=True)
class FreeData:
    keys: list


@dataclass(slots=True)
class SendToScheduler:
    msg: dict


class WTaskState:
    __slots__ = ("key", "state", "run_spec", "priority", "dependencies", "dependents", "waiting_for_data",
                 "who_has", "nbytes", "resources", "coming_from", "wanted")

    def __init__(self, key: str):
        self.key = key
        self.state = "released"
        self.run_spec = None
        self.priority: tuple = (0,)
        self.dependencies: set[WTaskState] = set()
        self.dependents: set[WTaskState] = set()
        self.waiting_for_data: set[WTaskState] = set()
        self.who_has: list[str] = []
        self.nbytes = 0
        self.resources: dict | None = None
        self.coming_from: str | None = None
        self.wanted = False  # a client waits for it (compute-task said so)

    def __repr__(self):
        return f"<WTaskState {self.key!r} {self.state}>"

    def __lt__(self, other):
        return (self.priority, self.key) < (other.priority, other.key)


class WorkerState:
    """Everything a worker decides. ``handle(*events) -> instructions``.

    ``address`` is this worker's own address (never fetch from ourselves);
    ``transfer_batch_bytes`` bounds one gather request; ``max_transfers`` the number of
    gathers in flight at once.
    """

    def __init__(self, nthreads: int = 1, address: str = "", resources: dict | None = None,
                 max_transfers: int = 50, transfer_batch_bytes: int = 50_000_000,
                 validate: bool = False, log_length: int = 100_000):
        self.nthreads = nthreads
        self.address = address
        self.total_resources = dict(resources or {})
        self.available_resources = dict(self.total_resources)
        self.tasks: dict[str, WTaskState] = {}
        self.ready: list = []  # heap of (priority, key, ts)
        self.fetch: list = []  # heap of (priority, key, ts)
        self.executing: set[WTaskState] = set()
        self.long_running: set[WTaskState] = set()  # seceded: running, not counted against nthreads
        self.rejoining: deque = deque()  # seceded tasks waiting for a free slot, first come first
        self.in_flight_workers: dict[str, set[str]] = {}
        self.max_transfers = max_transfers
        self.transfer_batch_bytes = transfer_batch_bytes
        self.paused = False
        self.validate_each = validate
        self.log: deque = deque(maxlen=log_length)
        self.nbytes_in_memory = 0
        self.counts = defaultdict(int)  # executed, fetched, ... (statistics)
        self._out: list = []

    # ------------------------------------------------------------------ API
    def handle(self, *events) -> list:
        """Apply events; return instructions (Execute, GatherDep, FreeData, SendToScheduler)."""
        self._out = out = []
        for ev in events:
            method = self._HANDLERS.get(type(ev))
            if method is None:
                raise TypeError(f"WorkerState cannot handle {type(ev).__name__}")
            method(self, ev)
        self._ensure_communicating()
        self._ensure_computing()
        if self.validate_each:
            self.validate()
        self._out = []
        return out

    @property
    def active(self) -> set[str]:
        """Keys executing now (what ``%remote info[addr] worker.active`` shows)."""
        return {ts.key for ts in self.executing}

    @property
    def data_keys(self) -> set[str]:
        return {k for k, ts in self.tasks.items() if ts.state == "memory"}

    def story(self, *keys: str) -> list:
        ks = set(keys)
        return [e for e in self.log if e[0] in ks]

    def _set(self, ts: WTaskState, state: str, sid: str) -> None:
        self.log.append((ts.key, ts.state, state, sid))
        ts.state = state

    # ------------------------------------------------------------------ events
    def _ev_compute(self, ev: ComputeTask) -> None:
        if ev.inline:  # first: whatever becomes of the task, the values are here now (or not)
            self._take_inline(ev.inline, ev.stimulus_id)
        ts = self.tasks.get(ev.key)
        if ts is None:
            ts = self.tasks[ev.key] = WTaskState(ev.key)
        if ts.state == "memory":
            self._out.append(SendToScheduler({"op": "task-finished", "key": ts.key, "nbytes": ts.nbytes}))
            return
        if ts.state in ("executing", "ready", "waiting", "long-running"):
            return  # already ours
        if ts.state == "cancelled" and ts in self.executing:
            self._set(ts, "executing", ev.stimulus_id)  # resume: the running result will be kept
            ts.run_spec = ev.run_spec
            return
        if ts.state == "cancelled" and ts in self.long_running:
            self._set(ts, "long-running", ev.stimulus_id)  # resume, still seceded: say so again
            ts.run_spec = ev.run_spec
            self._out.append(SendToScheduler({"op": "task-seceded", "key": ts.key}))
            return
        # a cancelled fetch (or a released key) is computed here; late data for it is ignored
        ts.run_spec = ev.run_spec
        ts.wanted = ev.wanted
        ts.priority = tuple(ev.priority)
        ts.resources = dict(ev.resources) if ev.resources else None
        ts.waiting_for_data = set()
        for dep_key, holders in ev.who_has.items():
            dts = self.tasks.get(dep_key)
            if dts is None:
                dts = self.tasks[dep_key] = WTaskState(dep_key)
            dts.nbytes = ev.nbytes.get(dep_key, dts.nbytes) or 0
            ts.dependencies.add(dts)
            dts.dependents.add(ts)
            if dts.state != "memory":
                ts.waiting_for_data.add(dts)
                dts.who_has = [w for w in holders if w != self.address]
                if dts.state == "cancelled" and dts not in self.executing:
                    self._set(dts, "flight", ev.stimulus_id)  # its fetch is still under way: wanted again
                if dts.state in ("released", "missing"):
                    if dts.who_has:
                        dts.priority = ts.priority
                        self._set(dts, "fetch", ev.stimulus_id)
                        heapq.heappush(self.fetch, (dts.priority, dts.key, dts))
                    else:
                        self._set(dts, "missing", ev.stimulus_id)
        if ts.waiting_for_data:
            self._set(ts, "waiting", ev.stimulus_id)
            missing = [d for d in ts.waiting_for_data if d.state == "missing"]
            if missing:
                self._give_back(ts, ev.stimulus_id, missing)
        else:
            self._make_ready(ts, ev.stimulus_id)

    def _take_inline(self, inline: dict, sid: str) -> None:
        for key, nbytes in inline.items():
            dts = self.tasks.get(key)
            if nbytes is not None and (dts is None or self._takes_inline(dts)):
                if dts is None:  # (a key with no task here yet: the task that needs it comes next)
                    dts = self.tasks[key] = WTaskState(key)
                self._to_memory(dts, nbytes, sid)
                self.counts["inlined"] += 1
            elif dts is None or dts.state != "memory":
                # not stored here: the scheduler counted this worker as a holder when it sent it
                self._out.append(SendToScheduler({"op": "missing-data", "key": key, "errant_worker": self.address}))

    def takes_inline(self, key: str) -> bool:
        """Whether a dependency's value sent with a compute-task is to be stored here: it
        is neither in memory nor being computed here (a fetch of it may be under way; the
        value arriving later is then dropped). The server asks before storing the value.

        >>> ws = WorkerState(nthreads=1)
        >>> ws.takes_inline("x")
        True
        """
        ts = self.tasks.get(key)
        return ts is None or self._takes_inline(ts)

    def _takes_inline(self, ts: WTaskState) -> bool:
        if ts.state == "cancelled":
            return ts not in self.executing and ts not in self.long_running
        return ts.state in ("released", "fetch", "flight", "missing")

    def _make_ready(self, ts: WTaskState, sid: str) -> None:
        self._set(ts, "ready", sid)
        heapq.heappush(self.ready, (ts.priority, ts.key, ts))

    def _give_back(self, ts: WTaskState, sid: str, missing) -> None:
        """Inputs cannot be found anywhere: tell the scheduler and drop the task here."""
        for d in missing:
            self._out.append(SendToScheduler({"op": "missing-data", "key": d.key, "errant_worker": ""}))
        self._out.append(SendToScheduler({"op": "reschedule", "key": ts.key}))
        self._release(ts, sid)

    def _ev_free_keys(self, ev: FreeKeys) -> None:
        for key in ev.keys:
            ts = self.tasks.get(key)
            if ts is not None:
                self._release(ts, ev.stimulus_id)

    def _release(self, ts: WTaskState, sid: str) -> None:
        if ts.state in ("executing", "long-running"):
            self._set(ts, "cancelled", sid)  # result will be dropped when it arrives
            return
        if ts.state in ("flight", "cancelled"):
            self._set(ts, "cancelled", sid)
            return
        if ts.state == "memory":
            self.nbytes_in_memory -= ts.nbytes
            self._out.append(FreeData([ts.key]))
        self._set(ts, "released", sid)
        self._forget(ts)

    def _forget(self, ts: WTaskState) -> None:
        if ts.dependents and any(d.state not in ("released",) for d in ts.dependents):
            return  # still needed as an input here
        self.tasks.pop(ts.key, None)
        for dts in ts.dependencies:
            dts.dependents.discard(ts)
            if not dts.dependents and dts.state in ("fetch", "missing", "released"):
                self._set(dts, "released", "forget")
                self._forget(dts)
            elif not dts.dependents and dts.state == "flight":
                self._set(dts, "cancelled", "forget")
        ts.dependencies.clear()
        ts.waiting_for_data.clear()

    def _ev_execute_success(self, ev: ExecuteSuccess) -> None:
        ts = self.tasks.get(ev.key)
        if ts is None:
            self._out.append(FreeData([ev.key]))
            return
        self._finish_execution(ts)
        if ts.state == "cancelled":
            self._out.append(FreeData([ts.key]))
            self._set(ts, "released", ev.stimulus_id)
            self._forget(ts)
            return
        self._to_memory(ts, ev.nbytes, ev.stimulus_id)
        self.counts["executed"] += 1
        msg = {"op": "task-finished", "key": ts.key, "nbytes": ev.nbytes, "type": ev.type,
               "start": ev.start, "stop": ev.stop}
        if ev.seceded:  # only tasks that seceded say so: the hot message stays as it was
            msg["seceded"] = ev.seceded
        if ev.inline is not None:
            msg["inline"] = ev.inline
        self._out.append(SendToScheduler(msg))

    def _ev_execute_failure(self, ev: ExecuteFailure) -> None:
        ts = self.tasks.get(ev.key)
        if ts is None:
            return
        self._finish_execution(ts)
        if ts.state == "cancelled":
            self._set(ts, "released", ev.stimulus_id)
            self._forget(ts)
            return
        self._set(ts, "error", ev.stimulus_id)
        self._out.append(SendToScheduler({
            "op": "task-erred", "key": ts.key, "exception": ev.exception, "traceback": ev.traceback,
            "text": ev.text, "start": ev.start, "stop": ev.stop,
        }))
        self._set(ts, "released", ev.stimulus_id)
        self._forget(ts)

    def _finish_execution(self, ts: WTaskState) -> None:
        self.executing.discard(ts)
        self.long_running.discard(ts)
        if ts in self.rejoining:
            self.rejoining.remove(ts)
        if ts.resources:
            for r, amount in ts.resources.items():
                self.available_resources[r] = self.available_resources.get(r, 0) + amount

    def _to_memory(self, ts: WTaskState, nbytes: int, sid: str) -> None:
        ts.nbytes = nbytes
        self.nbytes_in_memory += nbytes
        self._set(ts, "memory", sid)
        for dts in ts.dependents:
            if ts in dts.waiting_for_data:
                dts.waiting_for_data.discard(ts)
                if not dts.waiting_for_data and dts.state == "waiting":
                    self._make_ready(dts, sid)

    def _ev_gather_success(self, ev: GatherDepSuccess) -> None:
        keys = self.in_flight_workers.pop(ev.worker, set())
        added = {}
        for key in keys:
            ts = self.tasks.get(key)
            if ts is None or (key in ev.nbytes and ts.state not in ("flight", "cancelled", "memory")):
                if key in ev.nbytes:  # stored meanwhile for a key freed (its value came inline)
                    self._out.append(FreeData([key]))
                continue
            if key in ev.nbytes:
                if ts.state == "cancelled":
                    self._out.append(FreeData([key]))
                    self._set(ts, "released", ev.stimulus_id)
                    self._forget(ts)
                    continue
                if ts.state == "flight":
                    self._to_memory(ts, ev.nbytes[key], ev.stimulus_id)
                    added[key] = ev.nbytes[key]
                    self.counts["fetched"] += 1
            elif key in ev.errors:
                self._fetch_unsendable(ts, ev.worker, ev.errors[key], ev.stimulus_id)
            else:
                self._fetch_failed(ts, ev.worker, ev.stimulus_id)
        if added:
            self._out.append(SendToScheduler({"op": "add-keys", "nbytes": added}))

    def _fetch_unsendable(self, ts: WTaskState, worker: str, error: tuple, sid: str) -> None:
        """``worker`` holds ``ts`` but cannot send it: the tasks here that need it fail.

        Not missing data: the holder has the value, and computing it again would make the
        same unsendable value -- reported as missing, it was recomputed over and over with
        no error. The scheduler hears ``task-erred`` for each dependent (it erred here, as
        far as it knows); the key itself is dropped here, nothing is said about its holder.
        """
        exception, traceback, text = error
        for dts in sorted(ts.dependents, key=lambda d: d.key):
            if dts.state != "waiting":
                continue
            self._out.append(SendToScheduler({
                "op": "task-erred", "key": dts.key, "exception": exception, "traceback": traceback,
                "text": f"input {ts.key!r} of this task is on worker {worker}, which cannot send it: {text}",
            }))
            self._release(dts, sid)
        if self.tasks.get(ts.key) is ts and ts.state in ("flight", "cancelled"):
            self._set(ts, "released", sid)
            self._forget(ts)

    def _ev_gather_failure(self, ev: GatherDepFailure) -> None:
        keys = self.in_flight_workers.pop(ev.worker, set()) | set(ev.keys)
        for key in keys:
            ts = self.tasks.get(key)
            if ts is not None:
                self._fetch_failed(ts, ev.worker, ev.stimulus_id)

    def _fetch_failed(self, ts: WTaskState, worker: str, sid: str) -> None:
        if ts.state == "cancelled":
            self._set(ts, "released", sid)
            self._forget(ts)
            return
        if ts.state != "flight":
            return
        self._out.append(SendToScheduler({"op": "missing-data", "key": ts.key, "errant_worker": worker}))
        ts.who_has = [w for w in ts.who_has if w != worker]
        if ts.who_has:
            self._set(ts, "fetch", sid)
            heapq.heappush(self.fetch, (ts.priority, ts.key, ts))
            return
        self._set(ts, "missing", sid)
        if not ts.dependents:  # a replica nobody here needs: nothing to wait for
            self._set(ts, "released", sid)
            self._forget(ts)
            return
        for dts in list(ts.dependents):
            if dts.state == "waiting":
                self._out.append(SendToScheduler({"op": "reschedule", "key": dts.key}))
                self._release(dts, sid)

    def _ev_update_data(self, ev: UpdateData) -> None:
        for key, nbytes in ev.nbytes.items():
            ts = self.tasks.get(key)
            if ts is None:
                ts = self.tasks[key] = WTaskState(key)
            if ts.state == "memory":
                self.nbytes_in_memory -= ts.nbytes
            self._to_memory(ts, nbytes, ev.stimulus_id)

    def _ev_acquire_replicas(self, ev: AcquireReplicas) -> None:
        have = {}
        for key, holders in ev.who_has.items():
            ts = self.tasks.get(key)
            if ts is None:
                ts = self.tasks[key] = WTaskState(key)
            if ts.state == "memory":
                have[key] = ts.nbytes  # already here: say so
                continue
            if ts.state == "cancelled" and ts not in self.executing:
                self._set(ts, "flight", ev.stimulus_id)  # its fetch is still under way: wanted again
                continue
            if ts.state not in ("released", "missing"):
                continue  # already coming (fetch, flight) or being computed here: reported when done
            ts.who_has = [w for w in holders if w != self.address]
            ts.nbytes = ev.nbytes.get(key, ts.nbytes) or 0
            if not ts.who_has:
                self._set(ts, "released", ev.stimulus_id)
                self._forget(ts)
                continue
            ts.priority = tuple(ev.priority.get(key, ts.priority))
            self._set(ts, "fetch", ev.stimulus_id)
            heapq.heappush(self.fetch, (ts.priority, ts.key, ts))
        if have:
            self._out.append(SendToScheduler({"op": "add-keys", "nbytes": have}))

    def _ev_secede(self, ev: Secede) -> None:
        ts = self.tasks.get(ev.key)
        if ts is None or ts not in self.executing:
            return  # not running here (finished meanwhile, or seceded already)
        self.executing.discard(ts)
        self.long_running.add(ts)
        if ts.state == "executing":
            self._set(ts, "long-running", ev.stimulus_id)
            self._out.append(SendToScheduler({"op": "task-seceded", "key": ts.key}))

    def _ev_rejoin(self, ev: Rejoin) -> None:
        ts = self.tasks.get(ev.key)
        if ts is None or ts not in self.long_running:
            self._out.append(Rejoined(ev.key))  # never seceded (or already back): nothing to wait for
            return
        if ts not in self.rejoining:
            self.rejoining.append(ts)

    def _ev_steal_request(self, ev: StealRequest) -> None:
        ts = self.tasks.get(ev.key)
        state = ts.state if ts is not None else None
        if state in ("ready", "waiting"):
            self._release(ts, ev.stimulus_id)  # not started: it may run elsewhere
        self._out.append(SendToScheduler({"op": "steal-response", "key": ev.key, "state": state}))

    def _ev_pause(self, ev: Pause) -> None:
        self.paused = True

    def _ev_unpause(self, ev: Unpause) -> None:
        self.paused = False

    _HANDLERS = {
        ComputeTask: _ev_compute, FreeKeys: _ev_free_keys, ExecuteSuccess: _ev_execute_success,
        ExecuteFailure: _ev_execute_failure, GatherDepSuccess: _ev_gather_success,
        GatherDepFailure: _ev_gather_failure, UpdateData: _ev_update_data, Pause: _ev_pause,
        Unpause: _ev_unpause, AcquireReplicas: _ev_acquire_replicas, Secede: _ev_secede, Rejoin: _ev_rejoin,
        StealRequest: _ev_steal_request,
    }

    # ------------------------------------------------------------------ decisions
    def _ensure_computing(self) -> None:
        # rejoining tasks first (also when paused: they are not new work), in arrival order
        while self.rejoining and len(self.executing) < self.nthreads:
            ts = self.rejoining.popleft()
            self.long_running.discard(ts)
            self.executing.add(ts)
            if ts.state == "long-running":
                self._set(ts, "executing", "rejoin")
                self._out.append(SendToScheduler({"op": "task-rejoined", "key": ts.key}))
            self._out.append(Rejoined(ts.key))
        if self.paused:
            return
        blocked = []
        while self.ready and len(self.executing) < self.nthreads:
            prio, key, ts = heapq.heappop(self.ready)
            if ts.state != "ready" or self.tasks.get(key) is not ts:
                continue
            if ts.resources and not self._resources_available(ts):
                blocked.append((prio, key, ts))
                continue
            if ts.resources:
                for r, amount in ts.resources.items():
                    self.available_resources[r] = self.available_resources.get(r, 0) - amount
            self._set(ts, "executing", "ensure-computing")
            self.executing.add(ts)
            self._out.append(Execute(ts.key, ts.run_spec, ts.wanted))
        for item in blocked:
            heapq.heappush(self.ready, item)

    def _resources_available(self, ts: WTaskState) -> bool:
        return all(self.available_resources.get(r, 0) >= a for r, a in ts.resources.items())

    def _ensure_communicating(self) -> None:
        if self.paused:
            return
        skipped = []
        while self.fetch and len(self.in_flight_workers) < self.max_transfers:
            prio, key, ts = heapq.heappop(self.fetch)
            if ts.state != "fetch" or self.tasks.get(key) is not ts:
                continue
            holders = [w for w in ts.who_has if w not in self.in_flight_workers]
            if not holders:
                skipped.append((prio, key, ts))
                continue
            worker = holders[0]
            keys, total = [ts.key], ts.nbytes
            self._set(ts, "flight", "ensure-communicating")
            ts.coming_from = worker
            # batch more keys from the same holder, in priority order, up to the byte budget
            rest = []
            while self.fetch and total < self.transfer_batch_bytes:
                item = heapq.heappop(self.fetch)
                other = item[2]
                if other.state != "fetch" or self.tasks.get(other.key) is not other:
                    continue
                if worker in other.who_has:
                    self._set(other, "flight", "ensure-communicating")
                    other.coming_from = worker
                    keys.append(other.key)
                    total += other.nbytes
                else:
                    rest.append(item)
            for item in rest:
                heapq.heappush(self.fetch, item)
            self.in_flight_workers[worker] = set(keys)
            self._out.append(GatherDep(worker, keys, total))
        for item in skipped:
            heapq.heappush(self.fetch, item)

    # ------------------------------------------------------------------ invariants
    def validate(self) -> None:
        """Check every invariant; raise AssertionError naming the broken one."""
        for key, ts in self.tasks.items():
            assert ts.key == key
            assert ts.state in ("fetch", "flight", "missing", "waiting", "ready", "executing", "memory",
                                "cancelled", "released", "long-running"), ts
            if ts.state == "executing":
                assert ts in self.executing, ts
            if ts.state == "long-running":
                assert ts in self.long_running, ts
            if ts.state == "waiting":
                assert ts.waiting_for_data and all(d.state != "memory" for d in ts.waiting_for_data), ts
            if ts.state == "ready":
                assert all(d.state == "memory" for d in ts.dependencies), ts
            if ts.state == "flight":
                assert ts.key in self.in_flight_workers.get(ts.coming_from, ()), ts
        for ts in self.executing:
            assert ts.state in ("executing", "cancelled"), ts
        for ts in self.long_running:
            assert ts.state in ("long-running", "cancelled") and ts not in self.executing, ts
        for ts in self.rejoining:
            assert ts in self.long_running, ts
        assert len([t for t in self.executing if t.state == "executing"]) <= self.nthreads
        for r, total in self.total_resources.items():
            assert 0 <= self.available_resources.get(r, 0) <= total, (r, self.available_resources)
        assert self.nbytes_in_memory == sum(t.nbytes for t in self.tasks.values() if t.state == "memory"), \
            "nbytes_in_memory drifted"
