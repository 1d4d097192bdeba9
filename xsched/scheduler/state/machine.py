"""The scheduler's state machine: the one mutator ``handle(*events) -> instructions``.

``handle`` runs each event's handler (``_HANDLERS``: one ``_ev_<event>`` method per event
type), follows the recommendations it returns through the transition table
(``transitions.py``), then, still inside the same event, progresses retirements
(``retirement.py``) and replicate/rebalance requests (``replication.py``), hands queued
root tasks to free slots (``placement.py``), asks idle workers to steal (``stealing.py``)
and, when asked to, validates every invariant (``validation.py``). Those rooms are mixins
of the one class below, so each reads the same tables; none of them does I/O. A handler
returns None instead of recommendations when nothing any of those passes reads has changed
(a heartbeat's figures): the passes are skipped.

Data flow of one event::

    server: message -> event ──> handle(event)
                                   ├─ _ev_<event>(event)          -> {key: finish}
                                   ├─ _transitions(recs)          (table; appends to _out)
                                   ├─ _progress_retirements()     (if any retiring)
                                   ├─ _progress_replications()    (if any replicate/rebalance)
                                   ├─ _fill_slots()               (queued roots -> free threads)
                                   ├─ _steal()                    (if work stealing)
                                   └─ validate()                  (if validate_each)
    server: <── [ToWorker | ToClient | WorkerRetired | ReplicationDone] -> messages

>>> s = SchedulerState()
>>> _ = s.handle(AddWorker("tcp://w1", nthreads=1))
>>> out = s.handle(UpdateGraph("c1", [NewTask("a", b"spec")], ["a"]))
>>> [type(i).__name__ for i in out], s.tasks["a"].state
(['ToWorker'], 'processing')
"""

from __future__ import annotations

import itertools
import math
from collections import defaultdict, deque
from typing import Iterable

from ...protocol import ops
from .entities import TASK_ORDER, Retirement, TaskState, WorkerState, _grown, _with
from .events import (
    AddClient, AddKeys, AddWorker, CancelKeys, ClientDesiresKeys, ClientReleasesKeys, MissingData, NewTask,
    PublishDataset, RecomputeKeys, RemoveClient, RemoveWorker, Reschedule, Restart, RestrictTasks, RetryKeys, TaskErred,
    TaskFinished, TaskRejoined, TaskSeceded, ToClient, ToWorker, UnpublishDataset, UpdateGraph,
    WorkerHeartbeat, WorkerRetired, WorkerStatus, dataset_holder,
)
from .load import WorkerLoad
from .placement import Placement
from .replication import Replication
from .retirement import Retiring
from .stealing import StealsInFlight, WorkStealing
from .transitions import Transitions, in_memory_msg
from .validation import Validation


def _finite(x) -> bool:
    return type(x) in (int, float) and math.isfinite(x)


def _check_new_task(nt: NewTask) -> None:
    """Raise ValueError naming the task and field when ``nt`` (a NewTask) cannot be scheduled.

    The server's schema (``protocol/schemas.py``) refuses such messages already; this keeps
    the state machine safe for every caller: it runs before ``_ev_update_graph`` mutates
    anything, and priorities must be finite numbers because every task's priority meets
    every other's in one heap (a str would meet an int there and raise much later)."""
    key = nt.key
    problem = None
    if not isinstance(key, str):
        problem = f"its key is {type(key).__name__}, not a string"
    elif nt.run_spec is not None and not isinstance(nt.run_spec, (bytes, bytearray, memoryview)):
        problem = f"run_spec is {type(nt.run_spec).__name__}, not bytes"
    elif not isinstance(nt.dependencies, (list, tuple, set, frozenset)) or not all(
            isinstance(d, str) for d in nt.dependencies):
        problem = "dependencies must be a list of key strings"
    elif not isinstance(nt.priority, (list, tuple)) or not all(map(_finite, nt.priority)):
        problem = f"priority {nt.priority!r:.80} must be a sequence of finite numbers (int or float)"
    elif nt.resources is not None and (not isinstance(nt.resources, dict) or not all(
            isinstance(r, str) and _finite(v) and v >= 0 for r, v in nt.resources.items())):
        problem = f"resources {nt.resources!r:.80} must map names (str) to amounts (numbers >= 0)"
    elif nt.workers is not None and (not isinstance(nt.workers, (list, tuple, set, frozenset)) or not all(
            isinstance(w, (str, int)) and type(w) is not bool for w in nt.workers)):
        problem = f"workers {nt.workers!r:.80} must be a list of worker addresses or names"
    elif nt.retries is not None and (type(nt.retries) is not int or nt.retries < 0):
        problem = f"retries {nt.retries!r:.40} must be an integer >= 0"
    elif nt.limits is not None and (not isinstance(nt.limits, dict) or not all(
            isinstance(n, str) and type(v) is int and v >= 0 for n, v in nt.limits.items())):
        problem = f"limits {nt.limits!r:.80} must map names (str) to integers >= 0"
    if problem is not None:
        raise ValueError(f"update-graph: task {key!r:.100}: {problem}; nothing of this graph was added")


class SchedulerState(Transitions, Placement, WorkStealing, Retiring, Replication, Validation):
    """All scheduling decisions. Feed events to :meth:`handle`; send what it returns.

    Parameters are plain values (the server reads them from config):
    ``worker_saturation`` root tasks per thread (``inf`` disables queuing),
    ``allowed_failures`` worker deaths a task may cause before it is declared
    ``KilledWorker``, ``bandwidth`` bytes/s used to weigh data transfers in placement,
    ``killed_worker_error(key, workers) -> bytes`` builds the pickled exception (the
    server supplies it, so this module never pickles).
    """

    def __init__(self, worker_saturation: float = 1.0, allowed_failures: int = 3,
                 bandwidth: float = 500e6, killed_worker_error=None, log_length: int = 100_000,
                 validate: bool = False, unknown_duration: float = 0.5, work_stealing: bool = True):
        self.tasks: dict[str, TaskState] = {}
        self.workers: dict[str, WorkerState] = {}
        self.clients: dict[str, set[TaskState]] = {}
        self.worker_saturation = float(worker_saturation)
        self.allowed_failures = allowed_failures
        self.bandwidth = bandwidth
        self.killed_worker_error = killed_worker_error or (lambda key, workers: b"")
        self.validate_each = validate
        self.queued: list[tuple] = []  # heap of (priority, seq, TaskState)
        self._queued_count = 0
        self._queue_seq = itertools.count()
        self.unrunnable: set[TaskState] = set()
        self.log: deque = deque(maxlen=log_length)
        self.durations: dict[str, float] = {}
        # function id -> [pickled function, number of tasks whose spec refers to it]
        self.functions: dict[bytes, list] = {}
        self.largest_result: dict[str, int] = {}  # prefix -> most bytes one of its tasks returned
        self.unknown_duration = unknown_duration  # seconds assumed for a kind never run yet
        self.limits_running: dict[str, int] = defaultdict(int)
        self.limits: dict[str, int] = {}
        self._out: list = []
        self._freed_slots: set[WorkerState] = set()
        self._queue_grew = False
        self._claims: dict[WorkerState, deque] = {}  # worker -> its batch of queued roots (placement.py)
        self._load = WorkerLoad(self._slots, self._pipelined_slots)  # workers by load (load.py)
        self.transition_counter = 0
        self.retiring: dict[str, Retirement] = {}
        self.replicating: dict[str, str] = {}  # key -> worker asked to copy it (for a retirement)
        self.replications: dict = {}  # request id -> ReplicaRequest: replicate/rebalance (replication.py)
        # Observers (pure callables, e.g. progress counting) called as hook(ts, start, finish).
        self.transition_hooks: list = []
        self.work_stealing = bool(work_stealing)
        self.stealing = StealsInFlight()  # key -> (victim, thief) of a steal in flight
        self._stealable: dict[WorkerState, set[TaskState]] = {}  # worth moving, by worker (stealing.py)
        self._started: set[str] = set()  # keys a victim said it runs already: never asked again there
        self._victims: set[WorkerState] = set()  # saturated, with a task to spare (stealing.py)
        self.steal_counts = {"requested": 0, "moved": 0, "kept": 0}  # statistics
        # published datasets: name -> (keys, pickled object frames)
        self.datasets: dict[str, tuple[list, list]] = {}

    # ------------------------------------------------------------------ public API
    def handle(self, *events) -> list:
        """Apply events; return the ``ToWorker``/``ToClient`` instructions to carry out."""
        self._out = out = []
        for ev in events:
            method = self._HANDLERS.get(type(ev))
            if method is None:
                raise TypeError(f"SchedulerState cannot handle {type(ev).__name__}")
            recs = method(self, ev)
            if recs is None:  # nothing any decision reads has changed (a heartbeat's figures)
                continue
            self._transitions(recs, ev.stimulus_id)
            if self.retiring:
                self._progress_retirements(ev.stimulus_id)
            if self.replications:
                self._progress_replications(ev.stimulus_id)
            self._fill_slots(ev.stimulus_id)
            if self.work_stealing:
                self._steal(ev.stimulus_id)
            if self.validate_each:
                self.validate()
        self._out = []
        return out

    def story(self, *keys: str) -> list[tuple]:
        """Every recorded transition of these keys: (key, start, finish, stimulus_id)."""
        ks = set(keys)
        return [entry for entry in self.log if entry[0] in ks]

    @property
    def n_queued(self) -> int:
        return self._queued_count

    def processing(self) -> dict[str, list[str]]:
        """Worker address -> keys processing there (what ``%scheduler scheduler.processing`` shows)."""
        return {addr: sorted(ts.key for ts in ws.processing) for addr, ws in self.workers.items()}

    def who_has(self, keys: Iterable[str]) -> dict[str, list[str]]:
        return {k: sorted(ws.address for ws in self.tasks[k].who_has) if k in self.tasks else [] for k in keys}

    def resolve_worker(self, name) -> str | None:
        """The address of a worker given by address or name (None if unknown)."""
        if name in self.workers:
            return name
        for addr, ws in self.workers.items():
            if ws.name == name or str(ws.name) == str(name):
                return addr
        return None

    # ------------------------------------------------------------------ event handlers
    def _ev_update_graph(self, ev: UpdateGraph) -> dict:
        for nt in ev.tasks:  # all of it is checked before anything changes: a bad graph adds nothing
            _check_new_task(nt)
        if not all(isinstance(k, str) for k in ev.keys):
            raise ValueError("update-graph: the wanted keys must be strings; nothing of this graph was added")
        recs: dict[str, str] = {}
        wanted = self.clients.setdefault(ev.client, set())
        new: list[TaskState] = []
        to_wire: list[tuple[TaskState, list]] = []
        fids = tuple(ev.functions or ())
        users = 0  # tasks of this graph that refer to its functions
        for nt in ev.tasks:  # first every task of the graph, so none becomes a placeholder
            ts = self.tasks.get(nt.key)
            if ts is None:
                ts = self.tasks[nt.key] = TaskState(nt.key, nt.run_spec, tuple(nt.priority))
                new.append(ts)
            elif ts.state in ("released", "erred") and ts.run_spec is None and nt.run_spec is not None:
                ts.run_spec = nt.run_spec  # a placeholder (run_spec None) gets its task: no functions yet
                ts.priority = tuple(nt.priority)
            else:
                continue
            if fids and nt.run_spec is not None:
                ts.functions = fids
                users += 1
            ts.resources = dict(nt.resources) if nt.resources else None
            ts.worker_restrictions = {str(w) for w in nt.workers} if nt.workers else None  # (names as strings: 0 is "0")
            ts.loose = bool(nt.allow_other_workers)
            ts.retries = int(nt.retries or 0)
            ts.limits = dict(nt.limits) if nt.limits else None
            to_wire.append((ts, nt.dependencies))
        if users:  # (no task of it was new: the graph's functions are not kept)
            for fid, blob in ev.functions.items():
                self.functions.setdefault(fid, [blob, 0])[1] += users
        for ts, deps in to_wire:
            if not deps:
                continue
            inputs = dict.fromkeys(ts.dependencies)
            for dk in deps:
                dts = self.tasks.get(dk)
                if dts is None:
                    # A dependency the scheduler no longer has: the whole graph cannot run.
                    dts = self.tasks[dk] = TaskState(dk, None, ts.priority)
                inputs[dts] = None
                dts.dependents = _with(dts.dependents, ts)
            ts.dependencies = tuple(inputs)  # fixed once wired: a tuple is a quarter of a set
        for key in ev.keys:
            ts = self.tasks.get(key)
            if ts is None:
                continue
            ts.who_wants = _grown(ts.who_wants)
            ts.who_wants.add(ev.client)
            wanted.add(ts)
        for ts in new:
            self._log(ts.key, "new", "released", ev.stimulus_id)
        for ts in new:
            if ts.who_wants or any(d.state != "forgotten" for d in ts.dependents):
                recs[ts.key] = "waiting"
        for key in ev.keys:
            ts = self.tasks.get(key)
            if ts is not None and ts.state == "erred":
                self._notify_erred(ts, {ev.client})
            elif ts is not None and ts.state == "memory":
                self._out.append(ToClient(ev.client, in_memory_msg(ts)))
            elif ts is not None and ts.state == "released":
                recs[ts.key] = "waiting"
        return recs

    def _ev_client_desires(self, ev: ClientDesiresKeys) -> dict:
        return self._ev_update_graph(UpdateGraph(ev.client, [], ev.keys, ev.stimulus_id))

    def _ev_client_releases(self, ev: ClientReleasesKeys) -> dict:
        recs: dict[str, str] = {}
        wanted = self.clients.get(ev.client, set())
        for key in ev.keys:
            ts = self.tasks.get(key)
            if ts is None or ev.client not in ts.who_wants:
                continue
            ts.who_wants.discard(ev.client)
            wanted.discard(ts)
            if not ts.who_wants:
                self._maybe_release(ts, recs)
        return recs

    def _ev_remove_client(self, ev: RemoveClient) -> dict:
        keys = [ts.key for ts in self.clients.get(ev.client, ())]
        recs = self._ev_client_releases(ClientReleasesKeys(ev.client, keys, ev.stimulus_id))
        self.clients.pop(ev.client, None)
        return recs

    def _ev_cancel(self, ev: CancelKeys) -> dict:
        """Cancel the keys for their client, and, as dask does, the dependents not done yet
        of a key that stops (no other client wants it, or ``force``): those wanted by this
        client only (or by any, with ``force``) are cancelled too, and their clients told why."""
        recs: dict[str, str] = {}
        stack = [(key, None) for key in reversed(ev.keys)]
        seen: set[str] = set()
        while stack:
            key, cause = stack.pop()
            ts = self.tasks.get(key)
            if ts is None or key in seen:
                continue
            seen.add(key)
            if cause is not None:  # a dependent: it stops only when nobody else wants it (or force)
                if ts.state in ("memory", "erred") or not (ev.force or ts.who_wants <= {ev.client}):
                    continue
                for client in sorted(ts.who_wants):
                    self._out.append(ToClient(client, {"op": ops.KEY_CANCELLED, "key": key, "reason": (
                        f"{key} was cancelled: it needs {cause}, which {ev.client} cancelled")}))
            ts.who_wants.discard(ev.client)  # the cancelling client already marked its future
            self.clients.get(ev.client, set()).discard(ts)
            if ev.force or cause is not None:  # (the other clients' futures of it are cancelled too, and told why)
                for other in sorted(ts.who_wants):
                    if cause is None:
                        self._out.append(ToClient(other, {"op": ops.KEY_CANCELLED, "key": key, "reason": (
                            f"{key} was cancelled by {ev.client} with cancel(force=True), though this client "
                            "wanted it")}))
                    self.clients.get(other, set()).discard(ts)
                ts.who_wants.clear()
            if not ts.who_wants:
                stack.extend((d.key, key) for d in ts.dependents)
                self._maybe_release(ts, recs)
        return recs

    def _ev_retry(self, ev: RetryKeys) -> dict:
        recs: dict[str, str] = {}
        stack = [self.tasks[k] for k in ev.keys if k in self.tasks]
        seen = set()
        while stack:
            ts = stack.pop()
            if ts in seen or ts.state != "erred":
                continue
            seen.add(ts)
            if ts.exception_blame is not None and ts.exception_blame is not ts:
                stack.append(ts.exception_blame)
            stack.extend(d for d in ts.dependencies if d.state == "erred")
            recs[ts.key] = "waiting"
        return recs

    def _ev_add_worker(self, ev: AddWorker) -> dict:
        if ev.address in self.workers:
            return {}
        ws = self.workers[ev.address] = WorkerState(
            ev.address, max(1, int(ev.nthreads)), ev.name, ev.memory_limit, ev.resources, ev.pid, ev.host,
            ev.local_directory, ev.hostname,
        )
        self._freed_slots.add(ws)
        self._load.update(ws)
        # (in one order whatever the set's; only those it can run are sorted: a thousand workers
        # joining need not sort the tasks that wait for a GPU a thousand times)
        runnable = [ts for ts in self.unrunnable if self._valid_worker(ts, ws)]
        return {ts.key: "waiting" for ts in sorted(runnable, key=TASK_ORDER)}

    def _ev_remove_worker(self, ev: RemoveWorker) -> dict:
        ws = self.workers.pop(ev.address, None)
        if ws is None:
            return {}
        self._freed_slots.discard(ws)
        self._load.remove(ws)
        self._release_claims(ws)
        self._stealable.pop(ws, None)
        self._victims.discard(ws)
        recs: dict[str, str] = {}
        for ts in sorted(ws.processing):
            ts.suspicious += 1
            if ts.suspicious > self.allowed_failures:
                blob = self.killed_worker_error(ts.key, ev.address)
                self._processing_to_erred(ts, blob, b"",
                                          f"KilledWorker: {ts.key!r} was running on "
                                          + (f"workers that died {ts.suspicious} times (last: {ev.address})"
                                             if ts.suspicious > 1 else f"a worker that died ({ev.address})"),
                                          recs)
            else:
                recs[ts.key] = "released"
        for ts in list(ws.has_what):
            ts.who_has.discard(ws)
            ws.has_what.discard(ts)
            if not ts.who_has and ts.state == "memory":
                recs[ts.key] = "released"
        return recs

    def _ev_task_finished(self, ev: TaskFinished) -> dict:
        ts = self.tasks.get(ev.key)
        ws = self.workers.get(ev.worker)
        if ts is None or ws is None:
            if ws is not None:  # the worker computed something we no longer need
                self._out.append(ToWorker(ws.address, {"op": ops.FREE_KEYS, "keys": [ev.key]}))
            return {}
        if ev.start is not None and ev.stop is not None:
            old = self.durations.get(ts.group)
            d = max(ev.stop - ev.start - ev.seceded, 0.0)  # its own work, not its waiting (TaskFinished)
            self.durations[ts.group] = d if old is None else 0.5 * old + 0.5 * d
        if ev.nbytes is not None and ev.nbytes > self.largest_result.get(ts.group, -1):
            self.largest_result[ts.group] = ev.nbytes
        if ts.state == "processing" and ts.processing_on is ws:
            ts.nbytes, ts.type = ev.nbytes, ev.type
            return {ts.key: ("memory", (ws, ev.inline))}
        if ts.state == "memory":
            self._add_replica(ts, ws)
            return {}
        # finished somewhere we did not send it (stale); keep nothing
        self._out.append(ToWorker(ws.address, {"op": ops.FREE_KEYS, "keys": [ev.key]}))
        return {}

    def _ev_task_erred(self, ev: TaskErred) -> dict:
        ts = self.tasks.get(ev.key)
        ws = self.workers.get(ev.worker)
        if ts is None or ws is None or ts.state != "processing" or ts.processing_on is not ws:
            return {}
        recs: dict[str, str] = {}
        if ts.retries > 0:
            ts.retries -= 1
            self._release_processing(ts, ws)
            recs[ts.key] = "waiting"
            return recs
        self._processing_to_erred(ts, ev.exception, ev.traceback, ev.text, recs, worker=ev.worker)
        return recs

    def _ev_add_keys(self, ev: AddKeys) -> dict:
        ws = self.workers.get(ev.worker)
        if ws is None:
            return {}
        recs: dict[str, str] = {}
        for key, nbytes in ev.nbytes.items():
            ts = self.tasks.get(key)
            if ts is None:
                if ev.client is None:
                    self._out.append(ToWorker(ws.address, {"op": ops.FREE_KEYS, "keys": [key]}))
                    continue
                ts = self.tasks[key] = TaskState(key, None, (0,))
                self._log(key, "new", "released", ev.stimulus_id)
            if ev.client is not None:
                ts.who_wants = _grown(ts.who_wants)
                ts.who_wants.add(ev.client)
                self.clients.setdefault(ev.client, set()).add(ts)
            if ts.state == "memory":
                self._add_replica(ts, ws)
            elif ev.client is not None:  # scattered data
                if ts.state == "erred":  # scattered again after it was lost: forget the error first
                    recs.update(self._transition_erred_released(ts, None, ev.stimulus_id))
                    recs.pop(ts.key, None)
                elif ts.state != "released":  # a computed key being computed: the scattered value wins
                    recs.update(self._transition(ts, "released", None, ev.stimulus_id))
                    recs.pop(ts.key, None)
                ts.nbytes = nbytes
                self._add_replica(ts, ws)
                self._set_state(ts, "memory", ev.stimulus_id)
                self._after_memory(ts, recs)
            else:
                self._out.append(ToWorker(ws.address, {"op": ops.FREE_KEYS, "keys": [key]}))
        return recs

    def _ev_missing_data(self, ev: MissingData) -> dict:
        ts = self.tasks.get(ev.key)
        errant = self.workers.get(ev.errant_worker)
        if self.replications:
            self._replica_fetch_failed(ev)
        if ts is None:
            return {}
        if errant is not None and errant in ts.who_has:
            ts.who_has.discard(errant)
            errant.has_what.discard(ts)
            errant.nbytes -= max(ts.nbytes, 0)
        if not ts.who_has and ts.state == "memory":
            return {ts.key: "released"}
        return {}

    def _ev_reschedule(self, ev: Reschedule) -> dict:
        ts = self.tasks.get(ev.key)
        ws = self.workers.get(ev.worker)
        if ts is None or ts.state != "processing" or ts.processing_on is not ws:
            return {}
        return {ts.key: "released"}

    def _ev_worker_status(self, ev: WorkerStatus) -> dict:
        ws = self.workers.get(ev.worker)
        if ws is not None and ev.worker in self.retiring and ev.status in ("running", "paused"):
            self.retiring[ev.worker].previous_status = ev.status  # still retiring; restored if it cannot
            return {}
        if ws is not None and ws.status == "retired":
            return {}
        if ws is not None and ev.status in ("running", "paused"):
            ws.status = ev.status
            self._load.update(ws)
            if ev.status == "running":
                self._freed_slots.add(ws)
            else:
                self._release_claims(ws)
        return {}

    def _ev_restart(self, ev: Restart) -> dict:
        for client, wanted in sorted(self.clients.items()):
            for ts in sorted(wanted):
                self._out.append(ToClient(client, {"op": ops.KEY_CANCELLED, "key": ts.key, "reason": ev.reason}))
        for ts in list(self.tasks.values()):
            self._set_state(ts, "forgotten", ev.stimulus_id)  # (progress hooks see every key go)
        for addr in sorted(self.workers):
            msg = {"op": ops.CLOSE_WORKER, "restart": True, "reason": "restart"}
            if addr in ev.environments:
                msg["environment"] = ev.environments[addr]
            self._out.append(ToWorker(addr, msg))
        for addr in sorted(self.retiring):
            self._out.append(WorkerRetired(addr, "lost", {}, "the cluster was restarted while it retired",
                                           ev.stimulus_id))
        self.tasks.clear()
        self.functions.clear()  # every task is gone, and the workers restart with empty tables
        self.workers.clear()
        self._end_replications("the cluster was restarted: its data is gone")  # (every key has no holder now)
        self.datasets.clear()
        for name in [c for c in self.clients if c.startswith("dataset:")]:
            del self.clients[name]
        for wanted in self.clients.values():
            wanted.clear()
        self.queued.clear()
        self._queued_count = 0
        self.unrunnable.clear()
        self.limits_running.clear()
        self.retiring.clear()
        self.replicating.clear()
        self.stealing.clear()
        self._stealable.clear()
        self._started.clear()
        self._victims.clear()
        self._freed_slots.clear()
        self._claims.clear()
        self._load.clear()
        self._queue_grew = False
        return {}

    def _ev_worker_heartbeat(self, ev: WorkerHeartbeat) -> dict | None:
        """A worker's figures. Twice a second per worker, so it changes nothing else and
        returns None (``handle`` then skips the passes after the event: no slot filled,
        no steal, no validation) unless ``paused`` changes the worker's status."""
        ws = self.workers.get(ev.worker)
        if ws is None:
            return None
        ws.metrics = ev.metrics
        paused = ev.metrics.get("paused")
        if paused is not None and (ws.status == "paused") != bool(paused):
            return self._ev_worker_status(WorkerStatus(ev.worker, "paused" if paused else "running", ev.stimulus_id))
        return None

    def _ev_add_client(self, ev: AddClient) -> dict:
        self.clients.setdefault(ev.client, set())
        return {}

    def _ev_task_seceded(self, ev: TaskSeceded) -> dict:
        ts, ws = self.tasks.get(ev.key), self.workers.get(ev.worker)
        if ts is None or ws is None or ts.processing_on is not ws or ts in ws.long_running:
            return {}
        ws.long_running.add(ts)
        self._untrack_stealable(ts, ws)
        ws.occupancy -= ws.processing[ts]  # it waits for others: no longer work ahead of this worker
        ws.processing[ts] = 0.0
        self._freed_slots.add(ws)
        self._load.update(ws)
        return {}

    def _ev_task_rejoined(self, ev: TaskRejoined) -> dict:
        ts, ws = self.tasks.get(ev.key), self.workers.get(ev.worker)
        if ts is not None and ws is not None:
            ws.long_running.discard(ts)
            self._load.update(ws)
        return {}

    def _ev_publish_dataset(self, ev: PublishDataset) -> dict:
        recs: dict = {}
        if ev.name in self.datasets:
            recs.update(self._ev_unpublish_dataset(UnpublishDataset(ev.name, ev.stimulus_id)))
        holder = dataset_holder(ev.name)
        wanted = self.clients.setdefault(holder, set())
        keys = []
        for key in dict.fromkeys(ev.keys):
            ts = self.tasks.get(key)
            if ts is None:
                continue  # the server refuses unknown keys before this event
            keys.append(key)
            ts.who_wants = _grown(ts.who_wants)
            ts.who_wants.add(holder)
            wanted.add(ts)
            if ts.state == "released":
                recs[key] = "waiting"
        self.datasets[ev.name] = (keys, list(ev.data))
        return recs

    def _ev_unpublish_dataset(self, ev: UnpublishDataset) -> dict:
        if self.datasets.pop(ev.name, None) is None:
            return {}
        return self._ev_remove_client(RemoveClient(dataset_holder(ev.name), ev.stimulus_id))

    def _ev_recompute(self, ev: RecomputeKeys) -> dict:
        recs: dict[str, str] = {}
        for key in ev.keys:
            ts = self.tasks.get(key)
            if ts is None or ts.run_spec is None:  # (scattered data has no recipe to run again)
                continue
            if ts.state == "processing":
                recs[key] = "released"
            elif ts.state == "memory":
                for ws in sorted(ts.who_has, key=lambda w: w.address):
                    ws.has_what.discard(ts)
                    ws.nbytes -= max(ts.nbytes, 0)
                    self._out.append(ToWorker(ws.address, {"op": ops.FREE_KEYS, "keys": [key]}))
                ts.who_has.clear()
                recs[key] = "released"
        return recs

    def _ev_restrict(self, ev: RestrictTasks) -> dict:
        recs: dict[str, str] = {}
        for key, workers in ev.workers.items():
            ts = self.tasks.get(key)
            if ts is None or ts.state not in ("released", "waiting", "no-worker"):
                continue
            ts.worker_restrictions = {str(w) for w in workers} if workers else None
            ts.loose = False
            if ts.state == "no-worker":
                recs[key] = "waiting"
        return recs

    _HANDLERS = {
        RecomputeKeys: _ev_recompute, RestrictTasks: _ev_restrict,
        **WorkStealing.HANDLERS, **Retiring.HANDLERS, **Replication.HANDLERS,
        PublishDataset: _ev_publish_dataset, UnpublishDataset: _ev_unpublish_dataset,
        TaskSeceded: _ev_task_seceded, TaskRejoined: _ev_task_rejoined, Restart: _ev_restart,
        UpdateGraph: _ev_update_graph, ClientDesiresKeys: _ev_client_desires,
        ClientReleasesKeys: _ev_client_releases, RemoveClient: _ev_remove_client,
        CancelKeys: _ev_cancel, RetryKeys: _ev_retry, AddWorker: _ev_add_worker,
        RemoveWorker: _ev_remove_worker, TaskFinished: _ev_task_finished,
        TaskErred: _ev_task_erred, AddKeys: _ev_add_keys, MissingData: _ev_missing_data,
        Reschedule: _ev_reschedule, WorkerStatus: _ev_worker_status,
        WorkerHeartbeat: _ev_worker_heartbeat, AddClient: _ev_add_client,
    }

