"""The real servers' message handling, with the sockets, threads and processes cut off.

Why: the simulator must translate messages to events and instructions to messages
*exactly* as the servers do, or it measures a scheduler nobody runs. So it does not copy
that translation: ``SimScheduler`` and ``SimWorker`` are subclasses of the real
``Scheduler`` and ``Worker`` whose handlers run unchanged -- ``Scheduler._handle`` (its
``_WORKER_OPS`` / ``_CLIENT_OPS`` tables: register-worker, update-graph, task-finished,
add-keys, heartbeat-worker, steal-response...), ``Scheduler.handle`` / ``_handle_events``
(instructions -> ``listener.send``), ``_peer_gone`` / ``_remove_worker`` /
``_worker_retired``; ``Worker._handle_scheduler`` (its ``_SCHEDULER_OPS``: compute-task
with its inline values, free-keys, steal-request, acquire-replicas, close-worker),
``Worker.handle`` (instructions -> ``_start_task`` / ``scheduler.send`` / ``_free`` /
``_gather``) and ``_outcome_event``. What the subclasses replace is only the outside
world, each a few lines that hand over to the ``Cluster`` (``cluster.py``):

- ``__init__``: no sockets, thread pools, memory monitors, extensions; the attributes the
  handlers read, and the state machine wrapped in ``metrics.Timed``;
- ``listener.send`` / ``scheduler.send``: a message arrives after the network latency;
- ``Worker._start_task``: no thread; the task ends after its workload duration;
- ``Worker._gather``: no get-data request; the data arrives after ``latency + nbytes / bandwidth``;
- ``Worker.close``: the process does not exit; the simulated worker stops;
- ``Worker.metrics``: the heartbeat's figures from the state machine, not from psutil.

Data flow::

    Cluster --(peer, msg)--> SimScheduler._handle  (real)  --event--> Timed(SchedulerState).handle
        real _handle_events: ToWorker/ToClient --> _Listener.send(peer, msg) --> Cluster (latency)
    Cluster --msg--> SimWorker._handle_scheduler (real) --event--> Timed(WorkerState).handle
        real Worker.handle: Execute -> _start_task | GatherDep -> _gather | FreeData -> _free (real)
                            SendToScheduler -> _Link.send --> Cluster (latency)

>>> from xsched.scheduler.server import Scheduler
>>> SimScheduler._handle is Scheduler._handle and SimWorker.handle is Worker.handle
True
"""

from __future__ import annotations

from collections import deque

from ..scheduler.server import Scheduler
from ..worker.server import Worker

__all__ = ["SimScheduler", "SimWorker", "CLIENT_PEER", "peer_of"]

#: The peer id of the simulated client on the scheduler's listener.
CLIENT_PEER = b"sim-client"


def peer_of(address: str) -> bytes:
    """The listener's peer id of a simulated worker: its address, as bytes.

    >>> peer_of("sim://worker-0")
    b'sim://worker-0'
    """
    return address.encode()


class _NoBackground:
    """In place of ``xsched.background.Background``: the simulated methods that the real
    handlers ``spawn`` (``_gather``, ``close``) run at once and return None; any real
    coroutine reaching here is an operation the simulator does not model."""

    def spawn(self, what) -> None:
        if what is not None:
            close = getattr(what, "close", None)
            if close is not None:
                close()  # (no "never awaited" warning)
            raise NotImplementedError(f"the simulator does not model {what!r}")


class _Listener:
    """In place of the scheduler's ``comm.Listener``: hands messages to the cluster."""

    def __init__(self, cluster):
        self.cluster = cluster

    def send(self, peer: bytes, msg: dict) -> None:
        self.cluster._from_scheduler(peer, msg)

    def forget_peer(self, peer: bytes) -> None:
        pass


class _Link:
    """In place of a worker's connection to the scheduler."""

    __slots__ = ("cluster", "worker")

    def __init__(self, cluster, worker: "SimWorker"):
        self.cluster, self.worker = cluster, worker

    @property
    def closed(self) -> bool:
        return not self.worker.alive

    def send(self, msg: dict) -> None:
        self.cluster._to_scheduler(self.worker, msg)


class SimScheduler(Scheduler):
    """The scheduler server with no socket: ``state`` is the (timed) real ``SchedulerState``.

    >>> from xsched.scheduler.state import SchedulerState
    >>> s = SimScheduler(cluster=None, state=SchedulerState())
    >>> s._handle(CLIENT_PEER, {"op": "register-client", "client": "c", **__import__(
    ...     "xsched.protocol.versions", fromlist=["announce"]).announce()}, [])["scheduler_id"]
    'scheduler-sim'
    >>> sorted(s.state.clients)
    ['c']
    """

    def __init__(self, cluster, state):  # noqa: D107 - no super().__init__: no config, no extensions
        self.cluster = cluster
        self.state = state
        self.id = "scheduler-sim"
        self.address = "sim://scheduler"
        self.status = "running"
        self.listener = _Listener(cluster)
        self.worker_peer: dict = {}
        self.peer_worker: dict = {}
        self.client_peer: dict = {}
        self.peer_client: dict = {}
        self.last_seen: dict = {}
        # heartbeat pacing (scheduler/heartbeats.py) from the simulated beat's base interval
        self.heartbeat_interval = self._heartbeat_base = getattr(cluster, "heartbeat_interval", None) or 0.5
        self.validating = False  # (the state machine validates itself when asked: Cluster(validate=True))
        self.invariant_violations: list = []
        self._unvalidated: deque = deque(maxlen=200)
        self.events: deque = deque(maxlen=10_000)
        self.extensions: dict = {}
        self._extension_ops: dict = {}
        self.memory_history: dict = {}
        self._retire_waiters: dict = {}
        self.worker_environment: dict = {}
        self._retired_peers: deque = deque(maxlen=1000)
        self._background = _NoBackground()


class SimWorker(Worker):
    """A worker server with no threads or sockets: ``state`` is the (timed) real ``WorkerState``.

    >>> from xsched.worker.state import WorkerState
    >>> from xsched.sim.metrics import CpuLog, Timed
    >>> w = SimWorker(None, "sim://worker-0", Timed(WorkerState(nthreads=2, address="sim://worker-0"), CpuLog()))
    >>> w.alive, w.nthreads, w.metrics()["executing"]
    (True, 2, 0)
    """

    def __init__(self, cluster, address: str, state):  # noqa: D107 - no super().__init__: no pools, no psutil
        self.cluster = cluster
        self.address = self.name = address
        self.peer = peer_of(address)
        self.state = state
        self.nthreads = state.nthreads
        self.resources = dict(state.total_resources)
        self.functions: dict = {}
        self.data: dict = {}  # key -> nbytes (a value that came inline: the value itself)
        self.scheduler = _Link(cluster, self)
        self._background = _NoBackground()
        self._rejoin_events: dict = {}
        self.status = "running"
        self.retired = False
        self.exit_code = 0
        self.alive = True
        self.running: dict = {}  # key -> virtual time its simulated thread started
        self._alive = None  # (no liveness thread: the cluster's timers send the beats)
        self.heartbeat_interval = 0.0  # what the scheduler asked for (heartbeat-interval), once it asks

    # ---------------------------------------------------------------- the outside world, simulated
    def _start_task(self, key: str, run_spec: bytes, wanted: bool = False) -> None:
        self.cluster._start_task(self, key, wanted)

    def _gather(self, worker: str, keys: list) -> None:  # (real: async, a get-data request)
        self.cluster._gather(self, worker, keys)

    def close(self, report: bool = True, reason: str = "worker closing") -> None:  # (real: async)
        self.cluster._close_worker(self, reason)

    def metrics(self) -> dict:
        """The heartbeat's figures (``Worker.metrics``' fields), from the state machine:
        managed memory is ``nbytes_in_memory`` (the real worker's figure with a plain dict
        store), with no process to measure (rss = managed, cpu 0) and virtual time.

        >>> from xsched.worker.state import WorkerState, UpdateData
        >>> from xsched.sim.metrics import CpuLog, Timed
        >>> w = SimWorker(None, "sim://w", Timed(WorkerState(address="sim://w"), CpuLog()))
        >>> _ = w.state.handle(UpdateData({"x": 100})); w.metrics()["managed"]
        100
        """
        st = self.state.machine
        managed = st.nbytes_in_memory
        return {
            "rss": managed, "managed": managed, "unmanaged": 0, "spilled": 0, "spilled_count": 0,
            "spill_count": 0, "pause_count": 0, "executing": len(st.executing), "ready": len(st.ready),
            "in_memory": len(self.data), "executed": st.counts["executed"], "fetched": st.counts["fetched"],
            "cpu": 0.0, "time": self.cluster.loop.now if self.cluster else 0.0, "paused": st.paused,
        }

