"""The scheduler's decisions, as a pure state machine: events in, instructions out.

No sockets, threads, clocks or unpickling here (a test enforces the imports). The server
(``scheduler/server.py``) turns wire messages into events, calls ``handle(event)``, and
sends the returned ``ToWorker`` / ``ToClient`` instructions.

One room per reason:

- ``events``: the events (what happened) and instructions (what to do), small dataclasses.
- ``entities``: ``TaskState``, ``WorkerState``, ``Retirement`` and the state names.
- ``machine``: ``SchedulerState``, its one mutator ``handle`` and the event handlers.
- ``transitions``: the transition table, one method per (start, finish) pair.
- ``placement``: valid workers, free slots, the queue of root tasks.
- ``stealing``: idle workers take waiting tasks from saturated ones.
- ``retirement``: workers leave only once their unique data is copied.
- ``replication``: replicate and rebalance: copies on demand, moves copy-then-free.
- ``validation``: the invariants, one validator per task state.

Task states and the transitions between them::

    released --> waiting --> processing --> memory --> released --> forgotten
                   |  ^         |  ^          (data lost: back to released/waiting)
                   |  +-- queued (root tasks wait here for a free thread)
                   +----> no-worker (no worker can run it yet)
    waiting/processing --> erred (the task or one of its dependencies raised)

>>> s = SchedulerState()
>>> _ = s.handle(AddWorker("tcp://w1", nthreads=1))
>>> out = s.handle(UpdateGraph("c1", [NewTask("a", b"spec")], ["a"]))
>>> [type(i).__name__ for i in out], s.tasks["a"].state
(['ToWorker'], 'processing')
"""

from .entities import TASK_STATES, Retirement, TaskState, TaskStateName, WorkerState, WorkerStatusName
from .events import (
    AddKeys, AddWorker, CancelKeys, ClientDesiresKeys, ClientReleasesKeys, InvalidTransition, MissingData,
    NewTask, PublishDataset, RemoveClient, RemoveWorker, Reschedule, Restart, RetireWorkers, RetryKeys,
    StealResponse, TaskErred, TaskFinished, TaskRejoined, TaskSeceded, ToClient, ToWorker, UnpublishDataset,
    UpdateGraph, WorkerRetired, WorkerStatus, dataset_holder, WorkerHeartbeat, AddClient,
    Replicate, Rebalance, AbandonReplication, ReplicationDone, RecomputeKeys, RestrictTasks,
)
from .machine import SchedulerState
from .placement import PIPELINE_DEPTH, PIPELINE_NBYTES, PIPELINE_SECONDS
from .replication import ReplicaRequest
from .stealing import STEAL_LATENCY, STEAL_RATIO
from .transitions import INLINE_DEPENDENCY_BYTES
from .validation import InvalidState

__all__ = [
    "SchedulerState", "TaskState", "WorkerState", "Retirement", "TaskStateName", "WorkerStatusName",
    "TASK_STATES", "InvalidTransition", "InvalidState",
    "UpdateGraph", "NewTask", "ClientReleasesKeys", "ClientDesiresKeys", "AddWorker",
    "RemoveWorker", "TaskFinished", "TaskErred", "AddKeys", "MissingData", "Reschedule",
    "WorkerStatus", "CancelKeys", "RetryKeys", "RemoveClient", "RetireWorkers", "ToWorker", "ToClient",
    "WorkerRetired", "Restart", "StealResponse", "TaskSeceded", "TaskRejoined", "PublishDataset",
    "UnpublishDataset", "dataset_holder", "WorkerHeartbeat", "AddClient",
    "Replicate", "Rebalance", "AbandonReplication", "ReplicationDone", "ReplicaRequest", "RecomputeKeys",
    "RestrictTasks",
    "PIPELINE_DEPTH", "PIPELINE_NBYTES", "PIPELINE_SECONDS", "STEAL_LATENCY", "STEAL_RATIO",
    "INLINE_DEPENDENCY_BYTES",
]
