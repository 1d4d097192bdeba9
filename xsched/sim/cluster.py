"""A simulated cluster: one real ``SchedulerState``, one real ``WorkerState`` per worker, in virtual time.

Why: to see what the scheduler decides, and what deciding costs, at widths (1,000 or
10,000 workers) and for workloads no test machine can run for real -- deterministically,
on one core, with no sockets or threads. Every decision is made by the real state
machines, and every message is translated to and from events by the real servers'
handlers (``servers.py``: ``SimScheduler``/``SimWorker`` are the ``Scheduler``/``Worker``
classes minus their sockets). Only the world around them is modelled here:

- time: ``loop.Loop``, a heap of callbacks in virtual seconds;
- a message between the scheduler, a worker and the client arrives ``latency`` later
  (in order: equal delays keep their order);
- a task keeps a thread ``duration`` seconds and leaves a result of ``nbytes``
  (``workloads.py``); a fetch from a peer takes ``latency + nbytes / bandwidth``;
- heartbeats every ``heartbeat_interval``; workers join, retire (``RetireWorkers``, as a
  worker's retire-worker request does) and die (the scheduler hears the connection drop
  ``detect_after`` later) at given times;
- ``charge_cpu=True``: the scheduler is one busy server: each message waits until the
  CPU its predecessors really took inside ``SchedulerState.handle`` has passed in virtual
  time (off by default: runs stay deterministic).

Data flow::

    client: submit() --register-client, update-graph--> (latency) --> SimScheduler._handle
    SimScheduler._handle --event--> SchedulerState.handle (timed) --> instructions
        ToWorker  --listener.send--> _from_scheduler --(latency)--> _at_worker --> SimWorker._handle_scheduler
        ToClient  --listener.send--> _from_scheduler --(latency)--> _at_client (key-in-memory: done)
    SimWorker._handle_scheduler --event--> WorkerState.handle (timed) --> instructions
        Execute   --_start_task--> (duration) --> _task_done --ExecuteSuccess--> SimWorker.handle
        GatherDep --_gather--> (latency/2) _serve (peer's data) --(latency/2 + nbytes/bandwidth)-->
                  _gathered --GatherDepSuccess | GatherDepFailure--> SimWorker.handle
        SendToScheduler --scheduler.send--> _to_scheduler --(latency)--> _at_scheduler --> SimScheduler._handle
    timers: _heartbeat (heartbeat-worker), _join (register-worker), _die (-> _peer_gone), _retire

>>> from xsched.sim.workloads import map_tasks
>>> c = Cluster(nthreads=2)
>>> for _ in range(2): _ = c.add_worker()
>>> c.submit(map_tasks(8, jitter=0))
>>> r = c.run()
>>> r["completed"], r["makespan"], r["makespan_ratio"] < 1.01, c.final_problems()
(True, 2.006, True, [])
"""

from __future__ import annotations

import math
import random
import types

from ..protocol import ops, schemas
from ..protocol.update_graph import graph_msg
from ..protocol.versions import announce
from ..scheduler.state import RetireWorkers, SchedulerState
from ..worker.server import _inline
from ..worker.state import GatherDepFailure, GatherDepSuccess, WorkerState
from .loop import Loop
from .metrics import Metrics, Timed
from .servers import CLIENT_PEER, SimScheduler, SimWorker
from .workloads import Workload

__all__ = ["Cluster", "CLIENT"]

#: The simulated client's name.
CLIENT = "sim-client"
#: The client's lane (``Loop``): after every worker's, so that a graph submitted when the
#: workers join reaches the scheduler after their registrations, as on a cluster started first
_CLIENT_LANE = 1 << 62


def _size(value) -> int:
    """Bytes of a stored value: computed and fetched results are stored as their size."""
    return value if type(value) is int else len(value)


class Cluster:
    """A scheduler, workers added with :meth:`add_worker`, a client that submits one workload.

    Options: ``nthreads`` per worker (default for ``add_worker``); ``latency`` (s) of every
    message; ``bandwidth`` (bytes/s) of transfers between workers, also the scheduler's
    estimate; ``heartbeat_interval`` (s, None: none); ``worker_saturation``,
    ``work_stealing``, ``allowed_failures`` of the ``SchedulerState``; ``validate``: both
    machines check their invariants after every event (slow); ``check_messages``: every
    message is checked against ``protocol/schemas.py``; ``charge_cpu`` (see the module);
    ``detect_after``: seconds until the scheduler notices a dead worker (default: latency);
    ``profiler``: a ``cProfile.Profile`` enabled inside ``SchedulerState.handle`` only;
    ``seed``: heartbeat phases; ``stall_after``: virtual seconds with nothing but
    heartbeats after which the run is given up.

    >>> c = Cluster(nthreads=4, latency=0.01, heartbeat_interval=None)
    >>> type(c.state).__name__, c.scheduler.state.machine is c.state, c.workers
    ('SchedulerState', True, {})
    """

    def __init__(self, nthreads: int = 8, *, latency: float = 0.001, bandwidth: float = 500e6,
                 heartbeat_interval: float | None = 0.5, worker_saturation: float = 1.0,
                 work_stealing: bool = True, allowed_failures: int = 3, validate: bool = False,
                 check_messages: bool = False, charge_cpu: bool = False, detect_after: float | None = None,
                 profiler=None, seed: int = 0, stall_after: float = 600.0):
        self.nthreads = nthreads
        self.latency = latency
        self.bandwidth = bandwidth
        self.heartbeat_interval = heartbeat_interval
        self.validate = validate
        self.check_messages = check_messages
        self.charge_cpu = charge_cpu
        self.detect_after = latency if detect_after is None else detect_after
        self.stall_after = stall_after
        self.rng = random.Random(seed)
        self.loop = Loop()
        self.metrics = Metrics()
        #: the real state machine (``scheduler.state`` is the same, timed)
        self.state = SchedulerState(worker_saturation=worker_saturation, allowed_failures=allowed_failures,
                                    bandwidth=bandwidth, validate=validate, work_stealing=work_stealing)
        self.scheduler = SimScheduler(self, Timed(self.state, self.metrics.scheduler, profiler=profiler))
        self.workers: dict[str, SimWorker] = {}  # every worker that joined, alive or not
        self._peers: dict[bytes, SimWorker] = {}
        self._added = 0
        self._after_worker = lambda m: self.metrics.note_memory(m.address, m.nbytes_in_memory)
        self.workload: Workload | None = None
        self.wanted: set = set()
        self.done: set = set()  # wanted keys the client heard are in memory
        self.erred: set = set()  # wanted keys the client heard erred
        self.submitted_at: float | None = None
        self.finished_at: float | None = None
        self.workers_at_submit = self.threads_at_submit = 0  # (the lower bound's threads)
        self.resource_bound = 0.0  # the lower bound's: resource-seconds needed / amount offered
        self._activity = 0.0  # virtual time of the last message or task end that was no heartbeat
        self._inbox: list = []  # (charge_cpu) calls waiting for the scheduler
        self._busy_until = 0.0
        self._draining = False

    # ------------------------------------------------------------------ what happens when
    def add_worker(self, at: float = 0.0, nthreads: int | None = None, resources: dict | None = None) -> str:
        """A worker joins (registers) at virtual time ``at``; its address.

        >>> c = Cluster(); c.add_worker(), c.add_worker(at=5.0, resources={"GPU": 1})
        ('sim://worker-0', 'sim://worker-1')
        """
        address = f"sim://worker-{self._added}"
        self._added += 1
        self.loop.at(at, self._join, address, nthreads or self.nthreads, resources)
        return address

    def kill_worker(self, worker: str | int, at: float) -> None:
        """The worker (address, or index of joining) dies at ``at``: its data and running tasks are lost.

        >>> c = Cluster(); _ = c.add_worker(); c.kill_worker(0, at=1.0); _ = c.run(); c.workers["sim://worker-0"].alive
        False
        """
        self.loop.at(at, self._die, self._address(worker))

    def retire_worker(self, worker: str | int, at: float) -> None:
        """The worker asks to retire at ``at`` (``--lifetime``, SIGTERM): its data is moved, then it closes.

        >>> c = Cluster(); _ = c.add_worker(); _ = c.add_worker(); c.retire_worker(1, at=1.0)
        >>> _ = c.run(); [w.alive for w in c.workers.values()]
        [True, False]
        """
        self.loop.at(at, self._retire, self._address(worker))

    def submit(self, workload: Workload, at: float = 0.0) -> None:
        """The client registers and submits ``workload`` at ``at``, wanting ``workload.wanted``.

        >>> from xsched.sim.workloads import map_tasks
        >>> c = Cluster(heartbeat_interval=None); _ = c.add_worker(); c.submit(map_tasks(2), at=3.0)
        >>> _ = c.run(); c.submitted_at, sorted(c.done)
        (3.0, ['map-0', 'map-1'])
        """
        if self.workload is not None:
            raise RuntimeError("one workload per simulated cluster")
        self.workload = workload
        self.wanted = set(workload.wanted)
        self.loop.at(at, self._submit)

    def run(self, until: float = math.inf) -> dict:
        """Run until everything settled (or ``until``); the summary (``metrics.Metrics.summary``).

        >>> from xsched.sim.workloads import map_tasks
        >>> c = Cluster(); _ = c.add_worker(); c.submit(map_tasks(100, jitter=0))
        >>> c.run(until=5.0)["completed"], c.run()["completed"]
        (False, True)
        """
        self.loop.run(until)
        return self.summary()

    # ------------------------------------------------------------------ the client
    def _submit(self) -> None:
        self.submitted_at = self.loop.now
        alive = [w for w in self.workers.values() if w.alive]
        self.workers_at_submit = len(alive)
        self.threads_at_submit = sum(w.nthreads for w in alive)
        offered: dict = {}
        for w in alive:
            for r, amount in w.resources.items():
                offered[r] = offered.get(r, 0) + amount
        self.resource_bound = max((work / offered[r] if offered.get(r) else math.inf
                                   for r, work in self.workload.resource_work().items()), default=0.0)
        self._activity = self.loop.now
        self._client_send({"op": ops.REGISTER_CLIENT, "client": CLIENT, **announce()})
        self._client_send(graph_msg(self.workload.entries(), list(self.workload.wanted)))

    def _client_send(self, msg: dict) -> None:
        self.metrics.messages[msg["op"]] += 1
        self.loop.after(self.latency, self._at_scheduler, CLIENT_PEER, msg, lane=_CLIENT_LANE)

    def _at_client(self, msg: dict) -> None:
        op, key = msg["op"], msg.get("key")
        if key not in self.wanted:
            return
        if op == ops.KEY_IN_MEMORY:
            self.done.add(key)
            self.erred.discard(key)
        elif op == ops.TASK_ERRED:
            self.erred.add(key)
        elif op == ops.KEY_LOST:
            self.done.discard(key)
        if self.finished_at is None and len(self.done) + len(self.erred - self.done) >= len(self.wanted):
            self.finished_at = self.loop.now

    # ------------------------------------------------------------------ messages
    def _from_scheduler(self, peer: bytes, msg: dict) -> None:
        """The scheduler's listener sends ``msg`` to ``peer`` (a worker or the client)."""
        self.metrics.messages[msg["op"]] += 1
        w = self._peers.get(peer)
        if w is not None:
            self.loop.after(self.latency, self._at_worker, w, msg, lane=w.lane)
        elif peer == CLIENT_PEER:
            self.loop.after(self.latency, self._at_client, msg, lane=_CLIENT_LANE)

    def _at_worker(self, w: SimWorker, msg: dict) -> None:
        if not w.alive:
            self.metrics.dropped_messages += 1
            return
        self._activity = self.loop.now
        if self.check_messages:
            schemas.WORKER_FROM_SCHEDULER.check(msg)
        w._handle_scheduler(msg, [])

    def _to_scheduler(self, w: SimWorker, msg: dict) -> None:
        """Worker ``w`` sends ``msg`` on its scheduler connection."""
        self.metrics.messages[msg["op"]] += 1
        self.loop.after(self.latency, self._at_scheduler, w.peer, msg, lane=w.lane)

    def _at_scheduler(self, peer: bytes, msg: dict) -> None:
        if msg["op"] != ops.HEARTBEAT_WORKER:
            self._activity = self.loop.now
        if self.check_messages:
            schemas.TO_SCHEDULER.check(msg)
        self._scheduler_call(self.scheduler._handle, peer, msg, [])

    def _scheduler_call(self, fn, *args) -> None:
        """Call into the scheduler now, or (``charge_cpu``) once it is done with earlier calls."""
        if not self.charge_cpu:
            self._check_sync(fn(*args))
            return
        self._inbox.append((self.loop.now, fn, args))
        if not self._draining:
            self._draining = True
            self.loop.at(max(self.loop.now, self._busy_until), self._drain_inbox)

    def _drain_inbox(self) -> None:
        arrived, fn, args = self._inbox.pop(0)
        self.metrics.scheduler_wait = max(self.metrics.scheduler_wait, self.loop.now - arrived)
        before = self.metrics.scheduler.cpu
        self._check_sync(fn(*args))
        self._busy_until = self.loop.now + (self.metrics.scheduler.cpu - before)
        if self._inbox:
            self.loop.at(self._busy_until, self._drain_inbox)
        else:
            self._draining = False

    @staticmethod
    def _check_sync(result) -> None:
        if isinstance(result, types.CoroutineType):
            result.close()
            raise NotImplementedError(f"the simulator does not model {result!r}")

    # ------------------------------------------------------------------ workers
    def _address(self, worker: str | int) -> str:
        return worker if isinstance(worker, str) else f"sim://worker-{worker}"

    def _join(self, address: str, nthreads: int, resources: dict | None) -> None:
        machine = WorkerState(nthreads, address, resources, validate=self.validate)
        w = SimWorker(self, address, Timed(machine, self.metrics.workers, after=self._after_worker))
        w.lane = len(self.workers) + 1  # (the loop's tie-break at equal times: timers 0, the client last)
        self.workers[address] = w
        self._peers[w.peer] = w
        self.metrics.note_memory(address, 0)
        self._to_scheduler(w, {
            "op": ops.REGISTER_WORKER, "address": address, "name": address, "nthreads": nthreads,
            "memory_limit": None, "resources": dict(resources or {}), "pid": 0, "host": address,
            "hostname": address, "local_directory": None, **announce(),
        })
        if self.heartbeat_interval:
            self.loop.after(self.heartbeat_interval * self.rng.random(), self._heartbeat, w, lane=w.lane)

    def _heartbeat(self, w: SimWorker) -> None:
        if not w.alive or self.finished_at is not None or self.loop.now - self._activity > self.stall_after:
            return
        w.scheduler.send({"op": ops.HEARTBEAT_WORKER, "metrics": w.metrics()})  # (Worker._heartbeat_loop)
        # the scheduler paces beats by the cluster's width (scheduler/heartbeats.py); a worker that
        # joined after the last change reads the pace in its registration reply, as here
        paced = max(w.heartbeat_interval, self.scheduler.heartbeat_interval)
        self.loop.after(max(self.heartbeat_interval, paced), self._heartbeat, w, lane=w.lane)

    def _die(self, address: str) -> None:
        w = self.workers.get(address)
        if w is None or not w.alive:
            return
        w.alive = False
        self.metrics.lost_executions += len(w.running)
        w.running.clear()
        self.loop.after(self.detect_after, self._scheduler_call, self.scheduler._peer_gone, w.peer)

    def _retire(self, address: str) -> None:
        w = self.workers.get(address)
        if w is not None and w.alive:  # (Scheduler._op_retire_worker -> retire_workers: async, waits)
            self.loop.after(self.latency, self._scheduler_call, self.scheduler.handle, RetireWorkers([address]))

    def _close_worker(self, w: SimWorker, reason: str) -> None:
        """``SimWorker.close``: the scheduler told it to close (retired, or restart)."""
        w.alive = False
        w.status = "closed"
        self.metrics.lost_executions += len(w.running)
        w.running.clear()

    def _start_task(self, w: SimWorker, key: str, wanted: bool) -> None:
        """``SimWorker._start_task``: the task holds a thread for its duration."""
        self.metrics.started[key] += 1
        self.metrics.ran_on.setdefault(key, []).append(w.address)
        w.running[key] = self.loop.now
        task = self.workload.by_key.get(key) if self.workload else None
        self.loop.after(task.duration if task else 0.0, self._task_done, w, key, self.loop.now, wanted, lane=w.lane)

    def _task_done(self, w: SimWorker, key: str, start: float, wanted: bool) -> None:
        if not w.alive or w.running.pop(key, None) is None:
            return
        self._activity = self.loop.now
        task = self.workload.by_key.get(key) if self.workload else None
        nbytes = task.nbytes if task else 0
        w.data[key] = nbytes  # (Worker._run_task: the value is stored, then the outcome reported)
        blob = _inline(bytes(max(nbytes - 33, 0)), nbytes) if wanted else None  # (sizeof(bytes(n)) == n + 33)
        w.handle(w._outcome_event(key, start, self.loop.now, ("memory", nbytes, "bytes", blob)))

    def _gather(self, w: SimWorker, peer: str, keys: list) -> None:
        """``SimWorker._gather``: a get-data request to ``peer``, read there half a latency later."""
        self.metrics.transfers += 1
        self.loop.after(self.latency / 2, self._serve, w, peer, list(keys), lane=w.lane)

    def _serve(self, w: SimWorker, peer: str, keys: list) -> None:
        p = self.workers.get(peer)
        if p is None or not p.alive:
            self.loop.after(self.latency / 2, self._gathered, w, peer, keys, None, lane=w.lane)
            return
        data = {k: _size(p.data[k]) for k in keys if k in p.data}  # (what it holds: Worker._serve_data)
        nbytes = sum(data.values())
        self.loop.after(self.latency / 2 + nbytes / self.bandwidth, self._gathered, w, peer, keys, data, lane=w.lane)

    def _gathered(self, w: SimWorker, peer: str, keys: list, data: dict | None) -> None:
        if not w.alive:
            return
        self._activity = self.loop.now
        if data is None or not self.workers[peer].alive:  # unreachable, or died while sending
            w.handle(GatherDepFailure(peer, keys))
            return
        self.metrics.bytes_moved += sum(data.values())
        tasks = w.state.machine.tasks  # (Worker._gather: keep what is still wanted, store it)
        data = {k: n for k, n in data.items() if k in tasks and tasks[k].state in ("flight", "cancelled")}
        w.data.update(data)
        w.handle(GatherDepSuccess(peer, data))

    # ------------------------------------------------------------------ results
    def summary(self) -> dict:
        """Every figure of the run: the cluster's shape, then ``Metrics.summary``.

        >>> s = Cluster().summary(); s["workload"], s["workers"], s["completed"], s["tasks"]
        (None, 0, False, 0)
        """
        wl = self.workload
        makespan = None
        if self.finished_at is not None and self.submitted_at is not None:
            makespan = round(self.finished_at - self.submitted_at, 9)
        out = {
            "workload": wl.name if wl else None,
            "workers": self.workers_at_submit,
            "threads": self.nthreads,
            "completed": self.finished_at is not None and not (self.erred - self.done),
            "erred": len(self.erred - self.done),
            "virtual_time": round(self.loop.now, 6),
            "callbacks": self.loop.steps,
        }
        out.update(self.metrics.summary(len(wl) if wl else 0, makespan, wl.critical_path() if wl else 0.0,
                                        wl.total_work() if wl else 0.0, self.threads_at_submit,
                                        self.resource_bound,
                                        wl.list_makespan(self.threads_at_submit) if wl else None))
        out["steals"] = dict(self.state.steal_counts)
        out["scheduler_wait_max"] = round(self.metrics.scheduler_wait, 6)
        return out

    def final_problems(self) -> list[str]:
        """What is wrong once the run settled (empty when all is well): every wanted key in
        memory on live workers that hold it, every other key released or forgotten on the
        scheduler, no worker running, fetching or holding anything unwanted, and both
        machines' own invariants (``validate()``).

        >>> Cluster().final_problems()
        []
        """
        problems = []
        st = self.state
        try:
            st.validate()
        except Exception as e:  # noqa: BLE001 - reported, not raised
            problems.append(f"scheduler invariant: {e}")
        for key in sorted(self.wanted):
            ts = st.tasks.get(key)
            if ts is None or ts.state != "memory":
                problems.append(f"wanted {key!r} is {ts.state if ts else 'forgotten'} on the scheduler")
                continue
            for ws in ts.who_has:
                w = self.workers.get(ws.address)
                if w is None or not w.alive or key not in w.data or w.state.machine.tasks.get(key) is None \
                        or w.state.machine.tasks[key].state != "memory":
                    problems.append(f"wanted {key!r}: the scheduler says {ws.address} holds it, which it does not")
        for t in (self.workload.tasks if self.workload else ()):
            ts = st.tasks.get(t.key)
            if t.key not in self.wanted and ts is not None and ts.state != "released":
                problems.append(f"unwanted {t.key!r} is {ts.state} on the scheduler")
        for w in self.workers.values():
            if not w.alive:
                continue
            m = w.state.machine
            try:
                m.validate()
            except AssertionError as e:
                problems.append(f"{w.address} invariant: {e}")
            if m.executing or m.in_flight_workers or w.running:
                problems.append(f"{w.address} still runs {sorted(t.key for t in m.executing)} "
                                f"or fetches from {sorted(m.in_flight_workers)}")
            extra = sorted(set(w.data) - self.wanted)
            if extra:
                problems.append(f"{w.address} holds unwanted {extra[:5]}")
        if self.workload is not None and self.finished_at is None:
            problems.append(f"not finished: {len(self.wanted - self.done)} wanted keys never reported in memory")
        return problems
