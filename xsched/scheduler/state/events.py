"""The scheduler state machine's events (what happened) and instructions (what to do).

Small slotted dataclasses, each event carrying a ``stimulus_id`` for ``story(key)``.
``SchedulerState.handle`` (``scheduler/state/``) takes the events and returns the
instructions; the server turns wire messages into events and instructions into
messages. Nothing here does I/O.

>>> AddWorker("tcp://w1", nthreads=2).stimulus_id.startswith("add-worker-")
True
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ...stimulus import stimulus_factory

__all__ = [
    "UpdateGraph", "NewTask", "ClientReleasesKeys", "ClientDesiresKeys", "AddWorker", "RemoveWorker",
    "TaskFinished", "TaskErred", "AddKeys", "MissingData", "Reschedule", "WorkerStatus", "CancelKeys",
    "RetryKeys", "RemoveClient", "RetireWorkers", "Restart", "StealResponse", "TaskSeceded", "TaskRejoined",
    "PublishDataset", "UnpublishDataset", "dataset_holder", "WorkerRetired", "ToWorker", "ToClient",
    "InvalidTransition", "WorkerHeartbeat", "AddClient", "Replicate", "Rebalance", "AbandonReplication",
    "ReplicationDone", "RecomputeKeys", "RestrictTasks",
]


# ----------------------------------------------------------------------------- events
@dataclass(slots=True)
class NewTask:
    """One task of a submitted graph; ``run_spec`` is opaque bytes the scheduler never opens."""

    key: str
    run_spec: bytes | None
    dependencies: list = field(default_factory=list)
    priority: tuple = (0,)
    resources: dict | None = None
    workers: list | None = None
    allow_other_workers: bool = False
    retries: int = 0
    limits: dict | None = None


@dataclass(slots=True)
class UpdateGraph:
    """A graph from ``client``. ``functions`` (function id -> pickled function) holds the
    functions its task specs refer to by id instead of carrying them: each travels once to
    the scheduler and once to each worker that runs one of these tasks, not once per task."""

    client: str
    tasks: list
    keys: list
    stimulus_id: str = field(default_factory=stimulus_factory("update-graph"))
    functions: dict | None = None


@dataclass(slots=True)
class ClientDesiresKeys:
    client: str
    keys: list
    stimulus_id: str = field(default_factory=stimulus_factory("client-desires"))


@dataclass(slots=True)
class ClientReleasesKeys:
    client: str
    keys: list
    stimulus_id: str = field(default_factory=stimulus_factory("client-releases"))


@dataclass(slots=True)
class RemoveClient:
    client: str
    stimulus_id: str = field(default_factory=stimulus_factory("remove-client"))


@dataclass(slots=True)
class CancelKeys:
    """A client cancels its futures of ``keys``; with ``force``, every other client's too
    (each is told, and the tasks go even though others wanted them)."""
    client: str
    keys: list
    force: bool = False
    stimulus_id: str = field(default_factory=stimulus_factory("cancel"))


@dataclass(slots=True)
class RetryKeys:
    client: str
    keys: list
    stimulus_id: str = field(default_factory=stimulus_factory("retry"))


@dataclass(slots=True)
class AddWorker:
    address: str
    nthreads: int = 1
    name: str | None = None
    memory_limit: int | None = None
    resources: dict | None = None
    pid: int | None = None
    host: str | None = None
    local_directory: str | None = None
    hostname: str | None = None  #: the machine's name (``host`` is the host of its address)
    stimulus_id: str = field(default_factory=stimulus_factory("add-worker"))


@dataclass(slots=True)
class WorkerHeartbeat:
    """A worker's periodic figures (memory, CPU, ``paused``, ...): they replace the last
    ones, and ``paused`` changes its status as a ``WorkerStatus`` would."""

    worker: str
    metrics: dict
    stimulus_id: str = field(default_factory=stimulus_factory("heartbeat-worker"))


@dataclass(slots=True)
class AddClient:
    """A client connected: it holds no keys yet, but releases and restarts now reach it."""

    client: str
    stimulus_id: str = field(default_factory=stimulus_factory("add-client"))


@dataclass(slots=True)
class RemoveWorker:
    address: str
    reason: str = "worker left"
    stimulus_id: str = field(default_factory=stimulus_factory("remove-worker"))


@dataclass(slots=True)
class TaskFinished:
    """``key`` is in memory on ``worker``. ``start``/``stop`` span its run there and
    ``seceded`` is the part of it spent seceded (waiting, in ``worker_client()``, for the
    tasks it launched): the duration learned for its prefix is the rest, the time it held
    a thread slot, which is what placement, pipelining and stealing weigh."""

    worker: str
    key: str
    nbytes: int = 0
    type: str | None = None
    start: float | None = None
    stop: float | None = None
    stimulus_id: str = field(default_factory=stimulus_factory("task-finished"))
    seceded: float = 0.0
    inline: bytes | None = None  # the pickled result (small, wanted): forwarded to the clients, not kept


@dataclass(slots=True)
class TaskErred:
    worker: str
    key: str
    exception: bytes = b""
    traceback: bytes = b""
    text: str = ""
    start: float | None = None
    stop: float | None = None
    stimulus_id: str = field(default_factory=stimulus_factory("task-erred"))


@dataclass(slots=True)
class AddKeys:
    """A worker holds these keys now (scatter, or a replica fetched for a dependent)."""

    worker: str
    nbytes: dict
    client: str | None = None
    stimulus_id: str = field(default_factory=stimulus_factory("add-keys"))


@dataclass(slots=True)
class MissingData:
    """``worker`` could not get ``key`` from ``errant_worker``."""

    worker: str
    key: str
    errant_worker: str
    stimulus_id: str = field(default_factory=stimulus_factory("missing-data"))


@dataclass(slots=True)
class Reschedule:
    """``worker`` gave a task back (its inputs could not be fetched)."""

    worker: str
    key: str
    stimulus_id: str = field(default_factory=stimulus_factory("reschedule"))


@dataclass(slots=True)
class WorkerStatus:
    worker: str
    status: str  # "running" | "paused"
    stimulus_id: str = field(default_factory=stimulus_factory("worker-status"))


@dataclass(slots=True)
class RetireWorkers:
    """Retire these workers (addresses or names) gracefully: data first, then close.

    ``close=False`` drains them (no unique data, nothing processing) but keeps them
    connected, in status ``retired``, receiving no tasks, for their launcher to stop.
    """

    workers: list
    close: bool = True
    stimulus_id: str = field(default_factory=stimulus_factory("retire-workers"))


@dataclass(slots=True)
class Restart:
    """Forget every task and every worker: each worker is told to exit for its nanny to
    restart it; each client hears ``key-cancelled`` (with ``reason``) for the keys it
    wanted; published datasets are dropped (their data is gone). Clients stay connected.
    Learned durations are kept (the code is the same)."""

    reason: str = "the cluster was restarted (client.restart())"
    environments: dict = field(default_factory=dict)  # worker -> environment path to restart into
    stimulus_id: str = field(default_factory=stimulus_factory("restart"))


@dataclass(slots=True)
class StealResponse:
    """``worker`` answered a ``steal-request`` for ``key``: ``state`` is the task's state
    there when the request arrived (``ready``/``waiting``: it dropped the task, which may
    go to the thief; ``executing``, ``memory``...: it keeps it)."""

    worker: str
    key: str
    state: str | None = None
    stimulus_id: str = field(default_factory=stimulus_factory("steal-response"))


@dataclass(slots=True)
class TaskSeceded:
    """``key`` left ``worker``'s thread pool (it waits inside ``worker_client()``): its
    thread slot counts as free, so queued root tasks may go there."""

    worker: str
    key: str
    stimulus_id: str = field(default_factory=stimulus_factory("task-seceded"))


@dataclass(slots=True)
class TaskRejoined:
    """The seceded ``key`` runs in one of ``worker``'s thread slots again."""

    worker: str
    key: str
    stimulus_id: str = field(default_factory=stimulus_factory("task-rejoined"))


@dataclass(slots=True)
class PublishDataset:
    """Hold ``keys`` under ``name`` for other clients; ``data`` is the pickled object
    (frames the scheduler stores and hands back, never opens). The dataset wants its keys
    as a client would (holder ``dataset_holder(name)``), so their data outlives the
    publishing client. Publishing a taken name replaces the old dataset."""

    name: str
    keys: list
    data: list = field(default_factory=list)
    stimulus_id: str = field(default_factory=stimulus_factory("publish-dataset"))


@dataclass(slots=True)
class RecomputeKeys:
    """Compute ``keys`` again, as if their data had been lost: a copy in memory is dropped
    from every holder, a running task is stopped; the ones still needed go back to waiting
    (and what they need is recomputed in turn). A shuffle whose exchanged data went with a
    worker reruns its transfers this way. Keys in any other state are left as they are."""

    keys: list
    stimulus_id: str = field(default_factory=stimulus_factory("recompute"))


@dataclass(slots=True)
class RestrictTasks:
    """Run each key of ``workers`` (key -> worker addresses) only there, from now on: set on
    tasks that have not started (released, waiting, no-worker), so a shuffle's output runs
    where its pieces were sent. A task waiting for a worker it had been restricted to is
    placed again."""

    workers: dict
    stimulus_id: str = field(default_factory=stimulus_factory("restrict"))


@dataclass(slots=True)
class UnpublishDataset:
    name: str
    stimulus_id: str = field(default_factory=stimulus_factory("unpublish-dataset"))


@dataclass(slots=True)
class Replicate:
    """Copy each of ``keys`` (in memory) until ``n`` of ``workers`` hold it (``n`` None: every
    one of them; ``workers`` None: every running worker). Copies are only added, never
    removed. ``request`` names the request in ``replications`` and in its ``ReplicationDone``."""

    request: str
    keys: list
    n: int | None = None
    workers: list | None = None
    stimulus_id: str = field(default_factory=stimulus_factory("replicate"))


@dataclass(slots=True)
class Rebalance:
    """Even out the bytes the workers hold (``keys`` None: any key; ``workers`` None: every
    running or paused worker) by moving keys, copy first, from workers above the mean to
    workers below it (``replication.py``)."""

    request: str
    keys: list | None = None
    workers: list | None = None
    stimulus_id: str = field(default_factory=stimulus_factory("rebalance"))


@dataclass(slots=True)
class AbandonReplication:
    """Stop waiting for the copies of a replicate or rebalance request (its caller's timeout
    passed): it ends now, its copies still under way reported as not done with ``reason``."""

    request: str
    reason: str = "the request timed out"
    stimulus_id: str = field(default_factory=stimulus_factory("abandon-replication"))


def dataset_holder(name: str) -> str:
    """The pseudo-client that holds a published dataset's keys.

    >>> dataset_holder("accounts")
    'dataset:accounts'
    """
    return f"dataset:{name}"


# ------------------------------------------------------------------------ instructions
@dataclass(slots=True)
class WorkerRetired:
    """The outcome of one worker's retirement (for the server to answer whoever asked).

    ``status``: ``retired`` (closed and removed), ``drained`` (``close=False``: kept,
    holding no unique data), ``cannot-retire`` (kept: no other worker can take its
    data), ``lost`` (it left while retiring: its data is recomputed as for any lost
    worker), ``unknown`` (no such worker). ``moved``: key -> the worker it was copied to.
    """

    worker: str
    status: str
    moved: dict = field(default_factory=dict)
    reason: str = ""
    stimulus_id: str = ""


@dataclass(slots=True)
class ReplicationDone:
    """The outcome of a replicate or rebalance request (for the server to answer whoever asked).

    ``result``: ``{"refused": why}`` when the request could not start (keys not in memory,
    unknown workers); else for a replicate ``{"who_has": {key: holders}, "failed": {key:
    why}}`` and for a rebalance ``{"moved": {key: [source, destination]}, "failed": {key: why}}``.
    """

    request: str
    result: dict


@dataclass(slots=True)
class ToWorker:
    worker: str
    msg: dict


@dataclass(slots=True)
class ToClient:
    client: str
    msg: dict


class InvalidTransition(RuntimeError):
    """A transition the table does not allow; the message carries the key's story."""
