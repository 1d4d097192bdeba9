"""The scheduler's decisions, as a pure state machine: events in, messages out.

No sockets, threads, clocks or unpickling here (a test enforces the imports). The server
(``scheduler/server.py``) turns wire messages into events, calls ``handle(event)``, and
sends the returned ``ToWorker`` / ``ToClient`` instructions.

Task states and the transitions between them (one method each, listed in ``_TRANSITIONS``)::

    released --> waiting --> processing --> memory --> released --> forgotten
                   |  ^         |  ^          (data lost: back to released/waiting)
                   |  +-- queued (root tasks wait here for a free thread)
                   +----> no-worker (no worker can run it yet)
    waiting/processing --> erred (the task or one of its dependencies raised)

Memory-aware placement: a task with no dependencies (a *root* task: the reads of a
reduction) is given to a worker only while the worker has a free slot
(``nthreads * worker_saturation`` tasks processing); otherwise it waits, in priority
order, in ``queued``. Tasks with dependencies run where their inputs are. Slots are
refilled after every event, once that event's releases have been sent, so a worker frees
the data a finished reduction no longer needs before it starts reading the next chunk.
Tiny root tasks are the exception that keeps threads busy: once a task prefix is known
to run in under ``PIPELINE_SECONDS`` and to return at most ``PIPELINE_NBYTES``, each
thread gets ``PIPELINE_DEPTH`` more of them, so a worker never idles for a round trip
between two no-op-sized tasks, and the memory this costs is bounded by those two figures.

Graceful retirement (``RetireWorkers``): a retiring worker (status ``retiring``) gets no
new tasks and lets its processing tasks finish. Every key it holds that no other
non-retiring worker holds is copied first (``acquire-replicas`` to the running worker with
the most free memory, else the fewest bytes held). Once it holds no such key and
processes nothing, it is told ``close-worker`` and removed: nothing is recomputed. With
no other worker to take its data it is not retired (``WorkerRetired(status="cannot-retire")``)
and keeps running; a retiring worker that dies is handled as any lost worker.

Work stealing (``work_stealing=True``, config ``scheduler.work-stealing``): after every
event, a running worker with a free slot (no task for it in the queue) takes tasks from
a worker that has more tasks than threads, lowest priority first, when the copy of the
inputs it lacks costs little against the task's expected duration (learned per task
prefix from the time its tasks held a thread: the time a task spent seceded, waiting for
tasks it launched, is not its work): ``transfer + STEAL_LATENCY < duration * STEAL_RATIO``.
Tasks restricted to workers, needing resources, or seceded are never stolen. A steal is a
request: the victim answers (``StealResponse``) whether it still had the task waiting;
only then is the task moved (``processing`` on the victim -> ``processing`` on the thief,
logged), so a task never runs twice because of a steal.

>>> s = SchedulerState()
>>> _ = s.handle(AddWorker("tcp://w1", nthreads=1))
>>> out = s.handle(UpdateGraph("c1", [NewTask("a", b"spec")], ["a"]))
>>> [type(i).__name__ for i in out], s.tasks["a"].state
(['ToWorker'], 'processing')
"""

from __future__ import annotations

import heapq
import itertools
import math
import sys
from collections import defaultdict, deque
from typing import Iterable

from ..keys import key_split


def _finite(x) -> bool:
    return type(x) in (int, float) and math.isfinite(x)


def _check_new_task(nt) -> None:
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

__all__ = [
    "SchedulerState", "TaskState", "WorkerState", "InvalidTransition",
    "UpdateGraph", "NewTask", "ClientReleasesKeys", "ClientDesiresKeys", "AddWorker",
    "RemoveWorker", "TaskFinished", "TaskErred", "AddKeys", "MissingData", "Reschedule",
    "WorkerStatus", "CancelKeys", "RetryKeys", "RemoveClient", "RetireWorkers", "ToWorker", "ToClient",
    "WorkerRetired", "Restart", "StealResponse", "TaskSeceded", "TaskRejoined", "PublishDataset",
    "UnpublishDataset", "dataset_holder",
]

from .events import (  # noqa: F401 (re-exported: the events and instructions of this machine)
    AddKeys, AddWorker, CancelKeys, ClientDesiresKeys, ClientReleasesKeys, InvalidTransition, MissingData,
    NewTask, PublishDataset, RemoveClient, RemoveWorker, Reschedule, Restart, RetireWorkers, RetryKeys,
    StealResponse, TaskErred, TaskFinished, TaskRejoined, TaskSeceded, ToClient, ToWorker, UnpublishDataset,
    UpdateGraph, WorkerRetired, WorkerStatus, dataset_holder,
)


# ---------------------------------------------------------------------------- entities
class _Empty(frozenset):
    """The one empty set every TaskState starts with (an empty ``set()`` costs 216 bytes,
    times six per task, which was most of a million-task graph's memory).

    Reading and removing work as on any empty set; the few places that add rebind the
    attribute to a real set first (``_grown``).
    """

    __slots__ = ()

    def discard(self, item) -> None:
        pass

    def clear(self) -> None:
        pass

    def difference_update(self, *others) -> None:
        pass

    def remove(self, item):
        raise KeyError(item)

    def pop(self):
        raise KeyError("pop from an empty set")


_EMPTY = _Empty()


def _grown(s):
    """A set that can be added to: ``s`` itself, or a new one in place of the shared empty set."""
    return set() if s is _EMPTY else s


#: ``dependents`` and ``waiters`` are tuples up to this many tasks, sets beyond: most tasks
#: have one dependent, and a set of one costs 216 bytes against a tuple's 48 (a
#: 1,000,000-task tree holds a million of each at its peak).
_SMALL = 8


def _with(c, item):
    """``c`` (a tuple or a set of tasks) with ``item`` added; tuples grow into sets."""
    if type(c) is tuple:
        if item in c:
            return c
        return c + (item,) if len(c) < _SMALL else set(c + (item,))
    c.add(item)
    return c


def _without(c, item):
    """``c`` (a tuple or a set of tasks) without ``item``."""
    if type(c) is tuple:
        return tuple([x for x in c if x is not item]) if item in c else c
    c.discard(item)
    return c


def _drop_waiter(dep: "TaskState", ts: "TaskState"):
    """``ts`` no longer waits for ``dep``; the waiters left (falsy when none, and then the
    value kept for them inline goes too)."""
    dep.waiters = waiters = _without(dep.waiters, ts)
    if not waiters:
        dep.inline = None
    return waiters


class TaskState:
    __slots__ = (
        "key", "state", "run_spec", "dependencies", "dependents", "waiting_on", "waiters",
        "who_wants", "who_has", "processing_on", "priority", "nbytes", "type", "exception",
        "traceback", "exception_text", "exception_blame", "resources", "worker_restrictions",
        "loose", "retries", "suspicious", "group", "limits", "queued_seq", "functions", "inline",
    )

    def __init__(self, key: str, run_spec: bytes | None, priority: tuple):
        self.key = key
        self.state = "released"
        self.run_spec = run_spec
        # the shared _EMPTY until something is added (see _grown)
        self.dependencies: tuple[TaskState, ...] = ()  # in the graph's order, set once
        self.dependents: tuple | set = ()  # tuple while small (_with / _without)
        self.waiting_on: set[TaskState] = _EMPTY
        self.waiters: tuple | set = ()  # tuple while small (_with / _without)
        self.who_wants: set[str] = _EMPTY
        self.who_has: set[WorkerState] = _EMPTY
        self.processing_on: WorkerState | None = None
        self.priority = priority
        self.nbytes = -1
        self.type: str | None = None
        self.exception: bytes | None = None
        self.traceback: bytes | None = None
        self.exception_text = ""
        self.exception_blame: TaskState | None = None
        self.resources: dict | None = None
        self.worker_restrictions: set | None = None
        self.loose = False
        self.retries = 0
        self.suspicious = 0
        self.group = sys.intern(key_split(key))  # one string per prefix, not per task
        self.limits: dict | None = None
        self.queued_seq = 0
        self.functions: tuple = ()  # ids of the functions its spec refers to (one tuple per graph)
        # the pickled value, while in memory, when small (INLINE_DEPENDENCY_BYTES) and some
        # dependent has yet to run: it goes along with their compute-task (no fetch)
        self.inline: bytes | None = None

    def __repr__(self) -> str:
        return f"<TaskState {self.key!r} {self.state}>"

    def __lt__(self, other: "TaskState") -> bool:
        return (self.priority, self.key) < (other.priority, other.key)

    @property
    def is_root(self) -> bool:
        return not self.dependencies


class WorkerState:
    __slots__ = (
        "address", "name", "nthreads", "memory_limit", "resources", "used_resources", "pid",
        "host", "processing", "has_what", "nbytes", "status", "metrics", "occupancy", "long_running",
        "functions",
    )

    def __init__(self, address: str, nthreads: int, name, memory_limit, resources, pid, host):
        self.address = address
        self.name = name if name is not None else address
        self.nthreads = nthreads
        self.memory_limit = memory_limit
        self.resources = dict(resources or {})
        self.used_resources = {r: 0 for r in self.resources}
        self.pid = pid
        self.host = host or _host_of(address)
        self.processing: dict[TaskState, float] = {}
        self.has_what: set[TaskState] = set()
        self.nbytes = 0
        self.status = "running"
        self.metrics: dict = {}
        self.occupancy = 0.0
        self.long_running: set[TaskState] = set()  # seceded tasks: processing, holding no slot
        self.functions: set[bytes] = set()  # function ids sent to it (and not forgotten since)

    def __repr__(self) -> str:
        return f"<WorkerState {self.address!r} processing={len(self.processing)} memory={len(self.has_what)}>"

    def __lt__(self, other):
        return self.address < other.address


class Retirement:
    """A worker being retired: what was asked, and which keys were sent where."""

    __slots__ = ("worker", "close", "previous_status", "requested", "stimulus_id")

    def __init__(self, worker: str, close: bool, previous_status: str, stimulus_id: str):
        self.worker = worker
        self.close = close
        self.previous_status = previous_status  # restored if it cannot retire
        self.requested: dict[str, str] = {}  # key -> destination address
        self.stimulus_id = stimulus_id


#: Root tasks of a prefix measured shorter than this (seconds) and returning at most
#: PIPELINE_NBYTES get PIPELINE_DEPTH extra slots per thread: a round trip costs more than
#: running them, and the memory held ahead is at most threads x depth x PIPELINE_NBYTES.
PIPELINE_SECONDS = 0.005
PIPELINE_NBYTES = 64 * 1024
PIPELINE_DEPTH = 4

#: A result pickled to at most this many bytes is kept by the scheduler while dependents
#: wait for it, and sent along with each of their compute-tasks to a worker that lacks it:
#: a peer fetch (a request, a reply and four state changes) cost far more than the bytes.
#: Small enough that the values kept stay far below the scheduler's own bytes per task.
INLINE_DEPENDENCY_BYTES = 256

#: Seconds a steal costs beyond the data transfer (the request's round trip).
STEAL_LATENCY = 0.002
#: Steal when transfer + latency is below this fraction of the task's expected duration.
STEAL_RATIO = 0.5


def _in_memory(ts: "TaskState") -> dict:
    """The client's news that a key is ready, with who holds it (so that fetching it costs
    one round trip to a holder, not a who-has question to the scheduler first)."""
    return {"op": "key-in-memory", "key": ts.key, "type": ts.type,
            "workers": [ws.address for ws in ts.who_has][:8]}


def _host_of(address: str) -> str:
    return address.split("://", 1)[-1].rsplit(":", 1)[0]


# ----------------------------------------------------------------------- state machine
class SchedulerState:
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
        self.transition_counter = 0
        self.retiring: dict[str, Retirement] = {}
        self.replicating: dict[str, str] = {}  # key -> worker asked to copy it (for a retirement)
        # Observers (pure callables, e.g. progress counting) called as hook(ts, start, finish).
        self.transition_hooks: list = []
        self.work_stealing = bool(work_stealing)
        self.stealing: dict[str, tuple[str, str]] = {}  # key -> (victim, thief) of a steal in flight
        self._started: set[str] = set()  # keys a victim said it runs already: never asked again there
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
            recs = method(self, ev) or {}
            self._transitions(recs, ev.stimulus_id)
            if self.retiring:
                self._progress_retirements(ev.stimulus_id)
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

    def who_can_run(self, key: str) -> dict:
        """Which workers could run ``key`` now, and if none, why (for users, not for scheduling)."""
        ts = self.tasks.get(key)
        if ts is None:
            return {"state": "forgotten", "workers": [], "reason": "the scheduler does not know this key"}
        valid = sorted(ws.address for ws in self.workers.values() if self._valid_worker(ts, ws))
        reason = ""
        if not valid:
            parts = []
            if ts.resources:
                offers = {ws.address: ws.resources for ws in self.workers.values()}
                parts.append(f"needs resources {ts.resources}; workers offer {offers or 'nothing (no workers)'}")
            if ts.worker_restrictions and not ts.loose:
                parts.append(f"is restricted to workers {sorted(ts.worker_restrictions)}, which are not connected")
            reason = "; ".join(parts) or "no workers are connected"
        elif ts.state == "queued":
            reason = "waiting for a free thread (root tasks are queued until a worker has a free slot)"
            if ts.limits:
                reason += f"; limits {ts.limits} (running now: {dict(self.limits_running)})"
        return {"state": ts.state, "workers": valid, "reason": reason}

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

    def workers_to_close(self) -> list[str]:
        """Workers a ``retire_workers()`` without names retires: the idle ones (nothing
        processing, not already retiring), fewest bytes held first, always keeping the one
        holding the most data when every running worker is idle."""
        running = [ws for ws in self.workers.values() if ws.status in ("running", "paused")]
        idle = sorted((ws for ws in running if not ws.processing), key=lambda ws: (ws.nbytes, ws.address))
        if idle and len(idle) == len(running):
            idle = idle[:-1]
        return [ws.address for ws in idle]

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
            ts.worker_restrictions = set(nt.workers) if nt.workers else None
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
                self._out.append(ToClient(ev.client, _in_memory(ts)))
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
        recs: dict[str, str] = {}
        for key in ev.keys:
            ts = self.tasks.get(key)
            if ts is None:
                continue
            ts.who_wants.discard(ev.client)  # the cancelling client already marked its future
            self.clients.get(ev.client, set()).discard(ts)
            if not ts.who_wants:
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
            ev.address, max(1, int(ev.nthreads)), ev.name, ev.memory_limit, ev.resources, ev.pid, ev.host
        )
        self._freed_slots.add(ws)
        recs = {}
        for ts in sorted(self.unrunnable):
            if self._valid_worker(ts, ws):
                recs[ts.key] = "waiting"
        return recs

    def _ev_remove_worker(self, ev: RemoveWorker) -> dict:
        ws = self.workers.pop(ev.address, None)
        if ws is None:
            return {}
        self._freed_slots.discard(ws)
        recs: dict[str, str] = {}
        for ts in sorted(ws.processing):
            ts.suspicious += 1
            if ts.suspicious > self.allowed_failures:
                blob = self.killed_worker_error(ts.key, ev.address)
                self._processing_to_erred(ts, blob, b"",
                                          f"KilledWorker: {ts.key!r} was running on workers that died "
                                          f"{ts.suspicious} times (last: {ev.address})", recs)
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
                self._out.append(ToWorker(ws.address, {"op": "free-keys", "keys": [ev.key]}))
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
            self._add_replica(ts, ws, ev.nbytes)
            return {}
        # finished somewhere we did not send it (stale); keep nothing
        self._out.append(ToWorker(ws.address, {"op": "free-keys", "keys": [ev.key]}))
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
        self._processing_to_erred(ts, ev.exception, ev.traceback, ev.text, recs)
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
                    self._out.append(ToWorker(ws.address, {"op": "free-keys", "keys": [key]}))
                    continue
                ts = self.tasks[key] = TaskState(key, None, (0,))
                self._log(key, "new", "released", ev.stimulus_id)
            if ev.client is not None:
                ts.who_wants = _grown(ts.who_wants)
                ts.who_wants.add(ev.client)
                self.clients.setdefault(ev.client, set()).add(ts)
            if ts.state == "memory":
                self._add_replica(ts, ws, nbytes)
            elif ev.client is not None:  # scattered data
                if ts.state == "erred":  # scattered again after it was lost: forget the error first
                    recs.update(self._transition_erred_released(ts, None, ev.stimulus_id))
                    recs.pop(ts.key, None)
                elif ts.state != "released":  # a computed key being computed: the scattered value wins
                    recs.update(self._transition(ts, "released", None, ev.stimulus_id))
                    recs.pop(ts.key, None)
                ts.nbytes = nbytes
                self._add_replica(ts, ws, nbytes)
                self._set_state(ts, "memory", ev.stimulus_id)
                self._after_memory(ts, recs)
            else:
                self._out.append(ToWorker(ws.address, {"op": "free-keys", "keys": [key]}))
        return recs

    def _ev_missing_data(self, ev: MissingData) -> dict:
        ts = self.tasks.get(ev.key)
        errant = self.workers.get(ev.errant_worker)
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
            if ev.status == "running":
                self._freed_slots.add(ws)
        return {}

    def _ev_retire_workers(self, ev: RetireWorkers) -> dict:
        for name in ev.workers:
            addr = self.resolve_worker(name)
            if addr is None:
                self._out.append(WorkerRetired(str(name), "unknown", {}, f"no worker {name!r} is connected",
                                               ev.stimulus_id))
                continue
            r = self.retiring.get(addr)
            if r is not None:  # already retiring: one outcome answers every request
                r.close = r.close or ev.close
                continue
            ws = self.workers[addr]
            previous = ws.status if ws.status in ("running", "paused") else "running"
            self.retiring[addr] = Retirement(addr, ev.close, previous, ev.stimulus_id)
            ws.status = "retiring"
            self._freed_slots.discard(ws)
        return {}

    def _ev_restart(self, ev: Restart) -> dict:
        for client, wanted in sorted(self.clients.items()):
            for ts in sorted(wanted):
                self._out.append(ToClient(client, {"op": "key-cancelled", "key": ts.key, "reason": ev.reason}))
        for ts in list(self.tasks.values()):
            self._set_state(ts, "forgotten", ev.stimulus_id)  # (progress hooks see every key go)
        for addr in sorted(self.workers):
            msg = {"op": "close-worker", "restart": True, "reason": "restart"}
            if addr in ev.environments:
                msg["environment"] = ev.environments[addr]
            self._out.append(ToWorker(addr, msg))
        for addr in sorted(self.retiring):
            self._out.append(WorkerRetired(addr, "lost", {}, "the cluster was restarted while it retired",
                                           ev.stimulus_id))
        self.tasks.clear()
        self.functions.clear()  # every task is gone, and the workers restart with empty tables
        self.workers.clear()
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
        self._started.clear()
        self._freed_slots.clear()
        self._queue_grew = False
        return {}

    def _ev_steal_response(self, ev: StealResponse) -> dict:
        entry = self.stealing.get(ev.key)
        if entry is None or entry[0] != ev.worker:
            return {}  # the task finished, failed or moved meanwhile: nothing to do
        del self.stealing[ev.key]
        ts, victim = self.tasks.get(ev.key), self.workers.get(ev.worker)
        if ts is None or victim is None or ts.state != "processing" or ts.processing_on is not victim:
            return {}
        if ev.state not in ("ready", "waiting", "released", None):
            self.steal_counts["kept"] += 1
            self._started.add(ts.key)
            return {}  # it started there (or finished): it stays
        self._release_processing(ts, victim)  # the victim dropped it
        thief = self.workers.get(entry[1])
        if thief is None or thief.status != "running" or not self._valid_worker(ts, thief):
            thief = self._decide_worker(ts)
        if thief is None:
            return {ts.key: "released"}  # nowhere to go now: it waits (queued or no-worker)
        self.steal_counts["moved"] += 1
        self._log(ts.key, "processing", "processing", ev.stimulus_id)  # moved: victim -> thief
        self._send_compute(ts, thief)
        return {}

    def _ev_task_seceded(self, ev: TaskSeceded) -> dict:
        ts, ws = self.tasks.get(ev.key), self.workers.get(ev.worker)
        if ts is None or ws is None or ts.processing_on is not ws or ts in ws.long_running:
            return {}
        ws.long_running.add(ts)
        ws.occupancy -= ws.processing[ts]  # it waits for others: no longer work ahead of this worker
        ws.processing[ts] = 0.0
        self._freed_slots.add(ws)
        return {}

    def _ev_task_rejoined(self, ev: TaskRejoined) -> dict:
        ts, ws = self.tasks.get(ev.key), self.workers.get(ev.worker)
        if ts is not None and ws is not None:
            ws.long_running.discard(ts)
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

    _HANDLERS = {
        PublishDataset: _ev_publish_dataset, UnpublishDataset: _ev_unpublish_dataset,
        TaskSeceded: _ev_task_seceded, TaskRejoined: _ev_task_rejoined, Restart: _ev_restart,
        StealResponse: _ev_steal_response,
        UpdateGraph: _ev_update_graph, ClientDesiresKeys: _ev_client_desires,
        ClientReleasesKeys: _ev_client_releases, RemoveClient: _ev_remove_client,
        CancelKeys: _ev_cancel, RetryKeys: _ev_retry, AddWorker: _ev_add_worker,
        RemoveWorker: _ev_remove_worker, TaskFinished: _ev_task_finished,
        TaskErred: _ev_task_erred, AddKeys: _ev_add_keys, MissingData: _ev_missing_data,
        Reschedule: _ev_reschedule, WorkerStatus: _ev_worker_status,
        RetireWorkers: _ev_retire_workers,
    }

    # ------------------------------------------------------------------ transitions
    def _transitions(self, recs: dict, stimulus_id: str) -> None:
        while recs:
            key, finish = recs.popitem()
            ts = self.tasks.get(key)
            if ts is None:
                continue
            arg = None
            if isinstance(finish, tuple):
                finish, arg = finish
            new = self._transition(ts, finish, arg, stimulus_id)
            for k, v in new.items():
                recs[k] = v

    def _transition(self, ts: TaskState, finish: str, arg, stimulus_id: str) -> dict:
        start = ts.state
        if start == finish:
            return {}
        func = self._TRANSITIONS.get((start, finish))
        if func is not None:
            self.transition_counter += 1
            return func(self, ts, arg, stimulus_id) or {}
        if start != "released" and finish != "released" and (start, "released") in self._TRANSITIONS \
                and ("released", finish) in self._TRANSITIONS:
            recs = self._transition(ts, "released", None, stimulus_id)
            if ts.key in self.tasks and ts.state == "released":
                more = self._transition(ts, finish, arg, stimulus_id)
                recs.update(more)
            return recs
        raise InvalidTransition(
            f"{ts.key!r}: no transition {start} -> {finish}; story: {self.story(ts.key)[-10:]}"
        )

    def _set_state(self, ts: TaskState, finish: str, stimulus_id: str) -> None:
        self._log(ts.key, ts.state, finish, stimulus_id)
        start, ts.state = ts.state, finish
        if ts.inline is not None and finish != "memory":
            ts.inline = None  # (the value is only ever the one of its memory state)
        for hook in self.transition_hooks:
            hook(ts, start, finish)

    def _log(self, key, start, finish, stimulus_id) -> None:
        self.log.append((key, start, finish, stimulus_id))

    # released -> waiting: wire up inputs; run now if they are all in memory
    def _transition_released_waiting(self, ts: TaskState, _arg, sid: str) -> dict:
        if ts.run_spec is None:
            return self._lost_forever(ts, sid)
        recs: dict = {}
        ts.waiting_on = _EMPTY
        for dts in ts.dependencies:
            dts.waiters = _with(dts.waiters, ts)
            if dts.state == "erred":
                recs[ts.key] = ("erred", dts)
            elif dts.state != "memory":
                ts.waiting_on = _grown(ts.waiting_on)
                ts.waiting_on.add(dts)
                if dts.state in ("released", "forgotten"):
                    recs[dts.key] = "waiting"
        self._set_state(ts, "waiting", sid)
        if ts.key not in recs and not ts.waiting_on:
            recs[ts.key] = "processing"
        return recs

    def _lost_forever(self, ts: TaskState, sid: str) -> dict:
        """A key with no recipe and no copy (lost scattered data or an unknown key)."""
        text = (f"the data of {ts.key!r} is lost (it was scattered or the scheduler forgot it, "
                "and there is no recipe to recompute it); scatter it again: tasks that wait for it "
                "then run")
        ts.exception, ts.traceback, ts.exception_text = b"", b"", text
        ts.exception_blame = ts
        self._set_state(ts, "erred", sid)
        recs = {}
        for dts in ts.dependents:
            if dts.state in ("waiting", "queued", "no-worker", "processing", "released"):
                recs[dts.key] = ("erred", ts)
        self._notify_erred(ts, ts.who_wants)
        return recs

    # waiting -> processing: choose a worker, or queue, or wait for a suitable worker
    def _transition_waiting_processing(self, ts: TaskState, ws: "WorkerState | None", sid: str) -> dict:
        if ts.waiting_on:
            return {}
        if ws is None:
            if self._queue_first(ts):
                return {ts.key: "queued"} if self._valid_workers_exist(ts) else {ts.key: "no-worker"}
            ws = self._decide_worker(ts)
        if ws is None:
            if self._valid_workers_exist(ts):
                return {ts.key: "queued"}
            return {ts.key: "no-worker"}
        self._set_state(ts, "processing", sid)
        self._send_compute(ts, ws)
        return {}

    def _transition_waiting_queued(self, ts: TaskState, _arg, sid: str) -> dict:
        self._set_state(ts, "queued", sid)
        ts.queued_seq = next(self._queue_seq)
        heapq.heappush(self.queued, (ts.priority, ts.queued_seq, ts))
        self._queued_count += 1
        self._queue_grew = True
        return {}

    def _transition_queued_processing(self, ts: TaskState, ws, sid: str) -> dict:
        if ts.waiting_on:  # an input was lost while it queued: wait for its recomputation
            self._queued_count -= 1
            self._set_state(ts, "waiting", sid)
            return {}
        ws = ws or self._decide_worker(ts)
        if ws is None:
            return {}
        self._queued_count -= 1  # the heap entry goes stale and is skipped when popped
        self._set_state(ts, "processing", sid)
        self._send_compute(ts, ws)
        return {}

    def _transition_queued_released(self, ts: TaskState, _arg, sid: str) -> dict:
        self._queued_count -= 1
        return self._transition_waiting_released(ts, _arg, sid)

    def _transition_waiting_no_worker(self, ts: TaskState, _arg, sid: str) -> dict:
        self._set_state(ts, "no-worker", sid)
        self.unrunnable.add(ts)
        return {}

    def _transition_no_worker_processing(self, ts: TaskState, _arg, sid: str) -> dict:
        ws = self._decide_worker(ts)
        if ws is None:
            return {}
        self.unrunnable.discard(ts)
        self._set_state(ts, "waiting", sid)
        return self._transition_waiting_processing(ts, ws, sid)

    def _transition_no_worker_waiting(self, ts: TaskState, _arg, sid: str) -> dict:
        self.unrunnable.discard(ts)
        self._set_state(ts, "waiting", sid)
        return {ts.key: "processing"} if not ts.waiting_on else {}

    def _transition_no_worker_released(self, ts: TaskState, _arg, sid: str) -> dict:
        self.unrunnable.discard(ts)
        return self._transition_waiting_released(ts, _arg, sid)

    # processing -> memory: record data, wake dependents, release inputs no one needs
    def _transition_processing_memory(self, ts: TaskState, arg: tuple, sid: str) -> dict:
        ws, inline = arg  # the worker that has it, and the pickled value when small
        self._release_processing(ts, ws)
        self._add_replica(ts, ws, ts.nbytes)
        self._set_state(ts, "memory", sid)
        if inline is not None and len(inline) <= INLINE_DEPENDENCY_BYTES and ts.waiters:
            ts.inline = inline
        recs: dict = {}
        self._after_memory(ts, recs, inline)
        return recs

    def _after_memory(self, ts: TaskState, recs: dict, inline: bytes | None = None) -> None:
        for dts in ts.dependents:
            if ts in dts.waiting_on:
                dts.waiting_on.discard(ts)
                if not dts.waiting_on and dts.state == "waiting":
                    recs[dts.key] = "processing"
        for dep in ts.dependencies:
            if not _drop_waiter(dep, ts):
                if not dep.who_wants and dep.state == "memory":
                    recs[dep.key] = "released"
        if ts.who_wants:
            msg = _in_memory(ts)
            if inline is not None:  # the value itself: the client asks no worker
                msg["inline"] = inline
            for client in ts.who_wants:
                self._out.append(ToClient(client, msg))
        if not ts.waiters and not ts.who_wants:
            recs[ts.key] = "released"

    def _transition_memory_released(self, ts: TaskState, _arg, sid: str) -> dict:
        if ts.who_has and (ts.waiters or ts.who_wants):
            return {}  # a stale recommendation: something needs this data again (e.g. a retry)
        for ws in ts.who_has:
            ws.has_what.discard(ts)
            ws.nbytes -= max(ts.nbytes, 0)
            self._out.append(ToWorker(ws.address, {"op": "free-keys", "keys": [ts.key]}))
        ts.who_has.clear()
        self._set_state(ts, "released", sid)
        recs: dict = {}
        for dts in ts.dependents:
            if dts.state in ("waiting", "queued", "no-worker", "processing"):
                if dts.state == "processing":
                    recs[dts.key] = "released"  # its input vanished before it could fetch it
                else:
                    dts.waiting_on = _grown(dts.waiting_on)
                    dts.waiting_on.add(ts)
        if ts.who_wants:
            for client in ts.who_wants:
                self._out.append(ToClient(client, {"op": "key-lost", "key": ts.key}))
        if ts.waiters or ts.who_wants:
            recs[ts.key] = "waiting"
        elif not self._needed_by_lineage(ts):
            recs[ts.key] = "forgotten"
        return recs

    def _transition_processing_released(self, ts: TaskState, _arg, sid: str) -> dict:
        ws = ts.processing_on
        if ws is not None:
            self._release_processing(ts, ws)
            if ws.address in self.workers:
                self._out.append(ToWorker(ws.address, {"op": "free-keys", "keys": [ts.key]}))
        return self._transition_waiting_released(ts, _arg, sid)

    def _transition_waiting_released(self, ts: TaskState, _arg, sid: str) -> dict:
        for dts in ts.dependencies:
            _drop_waiter(dts, ts)
        ts.waiting_on.clear()
        self._set_state(ts, "released", sid)
        recs: dict = {}
        for dts in ts.dependencies:
            if not dts.waiters and not dts.who_wants and dts.state in ("memory", "waiting", "queued", "no-worker", "processing"):
                recs[dts.key] = "released"
        if ts.who_wants or ts.waiters:
            recs[ts.key] = "waiting"
        elif not self._needed_by_lineage(ts):
            recs[ts.key] = "forgotten"
        return recs

    def _transition_processing_erred(self, ts: TaskState, blame: TaskState, sid: str) -> dict:
        recs: dict = {}
        ws = ts.processing_on
        self._release_processing(ts, ws)
        if ws is not None and ws.address in self.workers:
            self._out.append(ToWorker(ws.address, {"op": "free-keys", "keys": [ts.key]}))
        self._erred(ts, blame, sid, recs)
        return recs

    def _transition_waiting_erred(self, ts: TaskState, blame: TaskState, sid: str) -> dict:
        recs: dict = {}
        self._erred(ts, blame, sid, recs)
        return recs

    def _transition_queued_erred(self, ts: TaskState, blame: TaskState, sid: str) -> dict:
        self._queued_count -= 1
        return self._transition_waiting_erred(ts, blame, sid)

    def _transition_no_worker_erred(self, ts: TaskState, blame: TaskState, sid: str) -> dict:
        self.unrunnable.discard(ts)
        return self._transition_waiting_erred(ts, blame, sid)

    def _transition_erred_released(self, ts: TaskState, _arg, sid: str) -> dict:
        ts.exception = ts.traceback = None
        ts.exception_text = ""
        ts.exception_blame = None
        self._set_state(ts, "released", sid)
        recs: dict = {}
        for dts in ts.dependents:
            if dts.state == "erred":
                recs[dts.key] = "released"
        if ts.who_wants or ts.waiters:
            recs[ts.key] = "waiting"
        elif not self._needed_by_lineage(ts):
            recs[ts.key] = "forgotten"
        return recs

    def _transition_released_forgotten(self, ts: TaskState, _arg, sid: str) -> dict:
        recs: dict = {}
        self._forget(ts, sid, recs)
        return recs

    def _transition_erred_forgotten(self, ts: TaskState, _arg, sid: str) -> dict:
        recs: dict = {}
        self._forget(ts, sid, recs)
        return recs

    def _transition_released_erred(self, ts: TaskState, blame: TaskState, sid: str) -> dict:
        recs: dict = {}
        self._erred(ts, blame, sid, recs)
        return recs

    _TRANSITIONS = {
        ("released", "waiting"): _transition_released_waiting,
        ("waiting", "processing"): _transition_waiting_processing,
        ("waiting", "queued"): _transition_waiting_queued,
        ("waiting", "no-worker"): _transition_waiting_no_worker,
        ("waiting", "released"): _transition_waiting_released,
        ("waiting", "erred"): _transition_waiting_erred,
        ("queued", "processing"): _transition_queued_processing,
        ("queued", "released"): _transition_queued_released,
        ("queued", "erred"): _transition_queued_erred,
        ("no-worker", "processing"): _transition_no_worker_processing,
        ("no-worker", "waiting"): _transition_no_worker_waiting,
        ("no-worker", "released"): _transition_no_worker_released,
        ("no-worker", "erred"): _transition_no_worker_erred,
        ("processing", "memory"): _transition_processing_memory,
        ("processing", "released"): _transition_processing_released,
        ("processing", "erred"): _transition_processing_erred,
        ("memory", "released"): _transition_memory_released,
        ("erred", "released"): _transition_erred_released,
        ("erred", "forgotten"): _transition_erred_forgotten,
        ("released", "forgotten"): _transition_released_forgotten,
        ("released", "erred"): _transition_released_erred,
    }

    # ------------------------------------------------------------------ helpers
    def _erred(self, ts: TaskState, blame: TaskState, sid: str, recs: dict) -> None:
        if blame is not ts:
            ts.exception_blame = blame.exception_blame or blame
            ts.exception, ts.traceback = blame.exception, blame.traceback
            ts.exception_text = blame.exception_text
        for dts in ts.dependencies:
            if not _drop_waiter(dts, ts):
                if not dts.who_wants and dts.state == "memory":
                    recs[dts.key] = "released"
        ts.waiting_on.clear()
        self._set_state(ts, "erred", sid)
        for dts in ts.dependents:
            if dts.state in ("waiting", "queued", "no-worker", "processing", "released") and \
                    (dts.state != "released" or dts.who_wants or dts.waiters):
                recs[dts.key] = ("erred", ts)
        self._notify_erred(ts, ts.who_wants)
        if not ts.who_wants and not ts.waiters and not any(
                d.state not in ("forgotten", "released") for d in ts.dependents):
            recs.setdefault(ts.key, "forgotten")

    def _processing_to_erred(self, ts, exception, traceback, text, recs) -> None:
        ts.exception, ts.traceback, ts.exception_text = exception, traceback, text
        ts.exception_blame = ts
        recs[ts.key] = ("erred", ts)

    def _notify_erred(self, ts: TaskState, clients) -> None:
        blame = ts.exception_blame or ts
        for client in clients:
            self._out.append(ToClient(client, {
                "op": "task-erred", "key": ts.key, "blame": blame.key, "exception": ts.exception or b"",
                "traceback": ts.traceback or b"", "text": ts.exception_text,
            }))

    def _forget(self, ts: TaskState, sid: str, recs: dict) -> None:
        if ts.who_wants or any(d.state != "forgotten" for d in ts.dependents if d.key in self.tasks):
            return
        self._set_state(ts, "forgotten", sid)
        del self.tasks[ts.key]
        self._drop_functions(ts)
        for dep in ts.dependencies:
            dep.dependents = _without(dep.dependents, ts)
            _drop_waiter(dep, ts)
            if dep.state in ("released", "erred") and not dep.who_wants and not dep.dependents:
                recs[dep.key] = "forgotten"
            elif dep.state == "memory" and not dep.waiters and not dep.who_wants:
                recs[dep.key] = "released"

    def _drop_functions(self, ts: TaskState) -> None:
        """``ts`` no longer refers to its functions: a function no task refers to any more is
        forgotten here and on the workers that had it."""
        if not ts.functions:
            return
        gone = []
        for fid in ts.functions:
            entry = self.functions[fid]
            entry[1] -= 1
            if entry[1] == 0:
                del self.functions[fid]
                gone.append(fid)
        ts.functions = ()
        if gone:
            for ws in self.workers.values():
                held = [fid for fid in gone if fid in ws.functions]
                if held:
                    ws.functions.difference_update(held)
                    self._out.append(ToWorker(ws.address, {"op": "forget-functions", "fids": held}))

    def _needed_by_lineage(self, ts: TaskState) -> bool:
        """Keep a released task while something still refers to it (it may be recomputed)."""
        return any(d.state != "forgotten" for d in ts.dependents)

    def _maybe_release(self, ts: TaskState, recs: dict) -> None:
        if ts.waiters:
            return
        if ts.state == "erred":
            if not self._needed_by_lineage(ts):
                recs[ts.key] = "forgotten"
        elif ts.state in ("memory", "waiting", "queued", "no-worker", "processing"):
            recs[ts.key] = "released"
        elif ts.state == "released" and not self._needed_by_lineage(ts):
            recs[ts.key] = "forgotten"

    def _add_replica(self, ts: TaskState, ws: WorkerState, nbytes: int) -> None:
        if ws not in ts.who_has:
            ts.who_has = _grown(ts.who_has)
            ts.who_has.add(ws)
            ws.has_what.add(ts)
            ws.nbytes += max(nbytes, 0)

    def _release_processing(self, ts: TaskState, ws: WorkerState | None) -> None:
        if ws is not None:
            ws.occupancy -= ws.processing.pop(ts, 0.0)
            ws.long_running.discard(ts)
            self.stealing.pop(ts.key, None)
            self._started.discard(ts.key)
            if ts.resources:
                for r, amount in ts.resources.items():
                    ws.used_resources[r] = ws.used_resources.get(r, 0) - amount
            if ws.address in self.workers:
                self._freed_slots.add(ws)
        if ts.limits:
            for name in ts.limits:
                self.limits_running[name] -= 1
        ts.processing_on = None

    def _send_compute(self, ts: TaskState, ws: WorkerState) -> None:
        ts.processing_on = ws
        ws.processing[ts] = duration = self.durations.get(ts.group, self.unknown_duration)
        ws.occupancy += duration
        if ts.resources:
            for r, amount in ts.resources.items():
                ws.used_resources[r] = ws.used_resources.get(r, 0) + amount
        if ts.limits:
            for name, cap in ts.limits.items():
                self.limits[name] = cap
                self.limits_running[name] += 1
        msg = {
            "op": "compute-task", "key": ts.key, "run_spec": ts.run_spec, "priority": list(ts.priority),
            "who_has": {d.key: [w.address for w in d.who_has] for d in ts.dependencies},
            "nbytes": {d.key: d.nbytes for d in ts.dependencies},
        }
        inline = None
        for d in ts.dependencies:
            if d.inline is not None and ws not in d.who_has:
                # the small value travels with the task: the worker holds it from now on
                # (and is told to free it like any replica), no fetch from a peer
                if inline is None:
                    inline = msg["inline"] = {}
                inline[d.key] = d.inline
                self._add_replica(d, ws, d.nbytes)
        if ts.resources:
            msg["resources"] = ts.resources
        if ts.who_wants or ts.dependents:
            # a small result comes back inline (TaskFinished.inline): a waiting client has
            # it at once, and dependents placed elsewhere get it with their compute-task
            msg["wanted"] = True
        if ts.functions:
            missing = [fid for fid in ts.functions if fid not in ws.functions]
            if missing:  # the first of these tasks this worker gets brings the functions along
                msg["functions"] = {fid: self.functions[fid][0] for fid in missing}
                ws.functions.update(missing)
        self._out.append(ToWorker(ws.address, msg))

    # --- placement ---
    def _valid_worker(self, ts: TaskState, ws: WorkerState) -> bool:
        if ts.worker_restrictions and not ts.loose:
            if not (ws.address in ts.worker_restrictions or ws.name in ts.worker_restrictions
                    or ws.host in ts.worker_restrictions or str(ws.name) in ts.worker_restrictions):
                return False
        if ts.resources:
            for r, amount in ts.resources.items():
                if ws.resources.get(r, 0) < amount:
                    return False
        return True

    def _valid_workers_exist(self, ts: TaskState) -> bool:
        return any(self._valid_worker(ts, ws) for ws in self.workers.values())

    def _slots(self, ws: WorkerState, ts: TaskState | None = None) -> float:
        if math.isinf(self.worker_saturation):
            return math.inf
        slots = max(math.ceil(ws.nthreads * self.worker_saturation), 1)
        if ts is not None and self._pipelined(ts):
            slots += ws.nthreads * PIPELINE_DEPTH
        return slots

    def _pipelined(self, ts: TaskState) -> bool:
        """A root task known to be tiny (fast, small result): worth queueing on the worker."""
        if ts.resources or ts.limits:
            return False
        duration = self.durations.get(ts.group)
        return (duration is not None and duration < PIPELINE_SECONDS
                and 0 <= self.largest_result.get(ts.group, -1) <= PIPELINE_NBYTES)

    def _has_free_slot(self, ws: WorkerState, ts: TaskState | None = None) -> bool:
        return ws.status == "running" and len(ws.processing) - len(ws.long_running) < self._slots(ws, ts)

    def _limits_allow(self, ts: TaskState) -> bool:
        if not ts.limits:
            return True
        return all(self.limits_running[name] < cap for name, cap in ts.limits.items())

    def _resources_free(self, ts: TaskState, ws: WorkerState) -> bool:
        if not ts.resources:
            return True
        return all(ws.resources.get(r, 0) - ws.used_resources.get(r, 0) >= amount
                   for r, amount in ts.resources.items())

    def _queue_first(self, ts: TaskState) -> bool:
        """Root tasks (and resource- or limit-bound ones) wait in the queue for a free slot.

        The rule, documented for users: with a finite ``worker-saturation``, a task with no
        dependencies, or one that needs resources or a concurrency limit, is handed to a
        worker only while that worker runs fewer than ``ceil(nthreads * saturation)`` tasks.
        No group-size heuristic is involved.
        """
        if math.isinf(self.worker_saturation):
            return bool(ts.resources or ts.limits)
        return ts.is_root or bool(ts.resources or ts.limits)

    def _decide_worker(self, ts: TaskState) -> WorkerState | None:
        """Best worker for a runnable task, or None when it must wait (queue or no-worker)."""
        if not self._limits_allow(ts):
            return None
        candidates = [ws for ws in self.workers.values() if ws.status == "running" and self._valid_worker(ts, ws)]
        if not candidates and ts.worker_restrictions and ts.loose:
            candidates = [ws for ws in self.workers.values() if ws.status == "running"]
        if not candidates:
            return None
        if self._queue_first(ts):
            # queued kinds only go where a slot (and the resource) is free now
            candidates = [ws for ws in candidates if self._has_free_slot(ws, ts) and self._resources_free(ts, ws)]
            if not candidates:
                return None
        return min(candidates, key=lambda ws: self._cost(ts, ws))

    def _cost(self, ts: TaskState, ws: WorkerState) -> tuple:
        missing = sum(max(d.nbytes, 0) for d in ts.dependencies if ws not in d.who_has)
        occupancy = ws.occupancy / ws.nthreads
        pref = 0 if (not ts.worker_restrictions or not ts.loose or self._valid_worker_strict(ts, ws)) else 1
        busy = len(ws.processing) - len(ws.long_running)
        return (pref, missing / self.bandwidth + occupancy, busy / ws.nthreads, ws.address)

    def _valid_worker_strict(self, ts: TaskState, ws: WorkerState) -> bool:
        r = ts.worker_restrictions
        return ws.address in r or ws.name in r or ws.host in r or str(ws.name) in r

    def _fill_slots(self, sid: str) -> None:
        """Hand queued root tasks to workers with free slots, highest priority first."""
        freed, self._freed_slots = self._freed_slots, set()
        if self._queue_grew:
            freed = set(self.workers.values())
            self._queue_grew = False
        if not self._queued_count or not freed:
            return
        skipped: list = []
        while self.queued and any(self._has_free_slot(ws, self.queued[0][2]) for ws in freed):
            prio, seq, ts = heapq.heappop(self.queued)
            if ts.state != "queued" or ts.queued_seq != seq:
                continue
            ws = self._decide_worker(ts)
            if ws is None:
                skipped.append((prio, seq, ts))
                if len(skipped) > 1000:
                    break
                continue
            self._transitions({ts.key: ("processing", ws)}, sid)
        for item in skipped:
            heapq.heappush(self.queued, item)
        self._freed_slots.clear()

    # ------------------------------------------------------------------ work stealing
    def _stealable(self, ts: TaskState, victim: WorkerState, thief: WorkerState) -> bool:
        if (ts.worker_restrictions or ts.resources or ts in victim.long_running or ts.key in self.stealing
                or ts.key in self._started):
            return False
        return self._steal_cost(ts, thief) < self.durations.get(ts.group, self.unknown_duration) * STEAL_RATIO

    def _steal_cost(self, ts: TaskState, thief: WorkerState) -> float:
        missing = sum(max(d.nbytes, 0) for d in ts.dependencies if thief not in d.who_has)
        return missing / self.bandwidth + STEAL_LATENCY

    def _steal(self, sid: str) -> None:
        """Idle running workers ask saturated ones for their lowest-priority waiting tasks."""
        workers = self.workers.values()
        if len(self.workers) < 2:
            return
        incoming: dict[str, int] = defaultdict(int)
        outgoing: dict[str, int] = defaultdict(int)
        for victim_addr, thief_addr in self.stealing.values():
            outgoing[victim_addr] += 1
            incoming[thief_addr] += 1
        thieves, victims = [], []
        for ws in workers:  # (this runs after every event: no defaultdict entries made here)
            busy = len(ws.processing) - len(ws.long_running)
            running = ws.status == "running"
            if running:
                free = ws.nthreads - busy - incoming.get(ws.address, 0)
                if free > 0:
                    thieves.append((ws, free))
            # a paused or retiring worker starts nothing new: all its waiting tasks may go
            if busy - (ws.nthreads if running else 0) - outgoing.get(ws.address, 0) > 0:
                victims.append(ws)
        if not thieves or not victims:
            return
        for thief, free in thieves:
            for victim in sorted(victims, key=lambda v: (-(v.occupancy / v.nthreads), v.address)):
                if victim is thief or free <= 0:
                    continue
                keep = victim.nthreads if victim.status == "running" else 0
                spare = len(victim.processing) - len(victim.long_running) - keep - outgoing[victim.address]
                if spare <= 0:
                    continue
                picks = heapq.nlargest(min(free, spare), (ts for ts in victim.processing
                                                          if self._stealable(ts, victim, thief)))
                for ts in picks:
                    self.stealing[ts.key] = (victim.address, thief.address)
                    outgoing[victim.address] += 1
                    free -= 1
                    self.steal_counts["requested"] += 1
                    self._out.append(ToWorker(victim.address, {"op": "steal-request", "key": ts.key,
                                                               "stimulus_id": sid}))

    # ------------------------------------------------------------------ retirement
    def _safe_holder(self, ws: WorkerState) -> bool:
        """A worker that keeps its data: connected and not retiring or retired."""
        return ws.status in ("running", "paused")

    def _needs_moving(self, ts: TaskState) -> bool:
        return not any(self._safe_holder(w) for w in ts.who_has)

    def _progress_retirements(self, sid: str) -> None:
        """After every event: copy what retiring workers alone hold, close the drained ones."""
        for key, dest in list(self.replicating.items()):
            ts, dws = self.tasks.get(key), self.workers.get(dest)
            if (ts is None or ts.state != "memory" or dws is None or not self._safe_holder(dws)
                    or not self._needs_moving(ts)):
                del self.replicating[key]  # done, no longer needed, or its destination left
        planned: dict[str, int] = defaultdict(int)
        for key, dest in self.replicating.items():
            planned[dest] += max(self.tasks[key].nbytes, 0)
        requests: dict[str, list[TaskState]] = defaultdict(list)
        for addr in sorted(self.retiring):
            r = self.retiring[addr]
            ws = self.workers.get(addr)
            if ws is None:
                del self.retiring[addr]
                self._out.append(WorkerRetired(addr, "lost", self._moved(r), "the worker left while retiring: "
                                               "what it alone held is recomputed as for any lost worker", sid))
                continue
            unique = sorted(ts for ts in ws.has_what if self._needs_moving(ts))
            targets = [w for w in self.workers.values() if w.status == "running"]
            if (unique or ws.processing) and not targets:
                if any(w.status == "paused" for w in self.workers.values()):
                    continue  # a paused worker fetches nothing now, but may resume
                what = (f"the {len(unique)} keys only it holds" if unique
                        else f"the results of its {len(ws.processing)} running tasks")
                self._cancel_retirement(r, ws, f"no other running worker can take {what}; "
                                               "it keeps them and stays", sid)
                continue
            if unique:
                for ts in unique:
                    if ts.key in self.replicating:
                        continue
                    dest = min(targets, key=lambda w: self._destination_cost(w, planned))
                    planned[dest.address] += max(ts.nbytes, 0)
                    self.replicating[ts.key] = r.requested[ts.key] = dest.address
                    requests[dest.address].append(ts)
                continue
            if ws.processing:
                continue  # its running tasks finish first (their results are then moved)
            del self.retiring[addr]
            moved = self._moved(r)
            if r.close:
                self._out.append(ToWorker(addr, {"op": "close-worker", "reason": "retired"}))
                self._transitions(self._ev_remove_worker(RemoveWorker(addr, "retired", sid)), sid)
                self._out.append(WorkerRetired(addr, "retired", moved, "", sid))
            else:
                ws.status = "retired"
                self._out.append(WorkerRetired(addr, "drained", moved, "", sid))
        for dest, tss in requests.items():
            self._out.append(ToWorker(dest, {
                "op": "acquire-replicas", "stimulus_id": sid,
                "who_has": {ts.key: sorted(w.address for w in ts.who_has) for ts in tss},
                "nbytes": {ts.key: ts.nbytes for ts in tss},
                "priority": {ts.key: list(ts.priority) for ts in tss},
            }))

    def _destination_cost(self, ws: WorkerState, planned: dict) -> tuple:
        held = ws.nbytes + planned.get(ws.address, 0)
        free = (ws.memory_limit - held) if ws.memory_limit else math.inf
        return (-free, held, ws.address)

    def _moved(self, r: Retirement) -> dict:
        out = {}
        for key, dest in r.requested.items():
            ts, dws = self.tasks.get(key), self.workers.get(dest)
            if ts is not None and dws is not None and dws in ts.who_has:
                out[key] = dest
        return out

    def _cancel_retirement(self, r: Retirement, ws: WorkerState, reason: str, sid: str) -> None:
        del self.retiring[r.worker]
        ws.status = r.previous_status
        self._freed_slots.add(ws)
        for key, dest in r.requested.items():
            if self.replicating.get(key) == dest:
                del self.replicating[key]
        self._out.append(WorkerRetired(r.worker, "cannot-retire", self._moved(r), reason, sid))

    # ------------------------------------------------------------------ invariants
    def validate(self) -> None:
        """Check every invariant; raise AssertionError naming the broken one."""
        nq = 0
        for key, ts in self.tasks.items():
            assert ts.key == key
            st = ts.state
            assert st in ("released", "waiting", "queued", "no-worker", "processing", "memory", "erred"), (key, st)
            if st == "memory":
                assert ts.who_has, f"{key} in memory but no worker holds it"
            else:
                assert not ts.who_has, f"{key} is {st} but workers hold it"
                assert ts.inline is None, f"{key} is {st} but its value is kept inline"
            if ts.inline is not None:
                assert len(ts.inline) <= INLINE_DEPENDENCY_BYTES, f"{key}: a value kept inline is too large"
            if st == "processing":
                assert ts.processing_on is not None and ts in ts.processing_on.processing, key
                assert ts.processing_on.address in self.workers, key
                assert all(d.state == "memory" for d in ts.dependencies), key
            else:
                assert ts.processing_on is None, f"{key} {st} has processing_on"
            if st == "waiting":
                assert ts.waiting_on == {d for d in ts.dependencies if d.state != "memory"}, key
            if st in ("waiting", "queued", "processing", "no-worker"):
                for d in ts.dependencies:
                    assert ts in d.waiters, f"{key} not among waiters of {d.key}"
            if st == "queued":
                nq += 1
            if st == "no-worker":
                assert ts in self.unrunnable
            for ws in ts.who_has:
                assert ts in ws.has_what and ws.address in self.workers, key
            for d in ts.dependencies:
                assert ts in d.dependents and d.key in self.tasks, f"{key} dep {d.key}"
        assert nq == self._queued_count, (nq, self._queued_count)
        refs: dict = defaultdict(int)
        for ts in self.tasks.values():
            for fid in ts.functions:
                refs[fid] += 1
        assert refs == {fid: entry[1] for fid, entry in self.functions.items()}, "function refcounts"
        for addr, ws in self.workers.items():
            assert ws.functions <= set(self.functions), f"{addr} holds forgotten functions"
        for addr, ws in self.workers.items():
            for ts in ws.processing:
                assert ts.state == "processing" and ts.processing_on is ws, ts
            assert ws.long_running <= set(ws.processing), f"{addr}: seceded tasks not processing there"
            for ts in ws.has_what:
                assert ws in ts.who_has and ts.state == "memory", ts
        for ts in self.unrunnable:
            assert ts.state == "no-worker"
        for addr, ws in self.workers.items():
            assert (ws.status == "retiring") == (addr in self.retiring), f"{addr} status {ws.status}"
        for addr, r in self.retiring.items():
            assert addr in self.workers and r.worker == addr, addr
        for key, (victim, thief) in self.stealing.items():
            ts = self.tasks.get(key)
            assert ts is not None and ts.state == "processing", f"steal of {key} in flight but not processing"
            assert ts.processing_on.address == victim, f"steal of {key} from {victim}: it is elsewhere"
        for name, (keys, _data) in self.datasets.items():
            holder = dataset_holder(name)
            assert holder in self.clients, f"dataset {name!r} has no holder"
            assert {ts.key for ts in self.clients[holder]} == set(keys), f"dataset {name!r} keys drifted"
        for key, dest in self.replicating.items():
            ts = self.tasks.get(key)
            assert ts is not None and ts.state == "memory", f"replicating {key} not in memory"
            assert dest in self.workers and self._safe_holder(self.workers[dest]), f"{key} copied to {dest}"
            assert self._needs_moving(ts), f"{key} copied to {dest} though a safe worker holds it"
