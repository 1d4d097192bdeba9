"""The worker state machine's events (what happened) and instructions (what to do).

Small slotted dataclasses. Each event carries a ``stimulus_id``, which the state machine
writes beside every state change it causes, so that ``WorkerState.story(key)`` says why
a task is where it is. ``WorkerState.handle`` (``worker/state.py``) takes the events and
returns the instructions; the server (``worker/server.py``) turns messages, finished
threads and finished transfers into events, and instructions into tasks started,
transfers begun, data freed and messages to the scheduler. Nothing here does I/O.

>>> ComputeTask("inc-1", b"spec").stimulus_id.startswith("compute-task-")
True
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..stimulus import stimulus_factory

__all__ = [
    "ComputeTask", "FreeKeys", "ExecuteSuccess", "ExecuteFailure", "GatherDepSuccess", "GatherDepFailure",
    "UpdateData", "Pause", "Unpause", "AcquireReplicas", "Secede", "Rejoin", "StealRequest",
    "Execute", "GatherDep", "FreeData", "SendToScheduler", "Rejoined", "InvalidTransition",
]



# ------------------------------------------------------------------ events
@dataclass(slots=True)
class ComputeTask:
    """Run ``key`` here; ``who_has`` names the holders of its inputs that are not here yet."""

    key: str
    run_spec: bytes | None
    priority: tuple = (0,)
    who_has: dict = field(default_factory=dict)
    nbytes: dict = field(default_factory=dict)
    resources: dict | None = None
    stimulus_id: str = field(default_factory=stimulus_factory("compute-task"))
    wanted: bool = False  # send a small result back inline (a client or dependents elsewhere want it)
    # dependencies whose values came with the task: key -> nbytes when the server stored
    # the value (it asks ``takes_inline`` first), None when it did not (the scheduler,
    # which counted this worker as a holder, is then told otherwise)
    inline: dict = field(default_factory=dict)


@dataclass(slots=True)
class FreeKeys:
    """The scheduler no longer needs these keys here (their values, runs or fetches)."""

    keys: list
    stimulus_id: str = field(default_factory=stimulus_factory("free-keys"))


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
    stimulus_id: str = field(default_factory=stimulus_factory("execute-success"))
    seceded: float = 0.0
    inline: bytes | None = None  # the pickled result, when small and a client wants it


@dataclass(slots=True)
class ExecuteFailure:
    """The task raised: the pickled exception and traceback, and their text."""

    key: str
    exception: bytes
    traceback: bytes
    text: str
    start: float | None = None
    stop: float | None = None
    stimulus_id: str = field(default_factory=stimulus_factory("execute-failure"))


@dataclass(slots=True)
class GatherDepSuccess:
    """Data arrived from ``worker`` (stored by the server); ``nbytes`` per key received.

    ``errors``: keys the holder has but cannot send (their value cannot be pickled), each
    with ``(exception, traceback, text)`` for the tasks here that needed it.
    """

    worker: str
    nbytes: dict
    stimulus_id: str = field(default_factory=stimulus_factory("gather-success"))
    errors: dict = field(default_factory=dict)


@dataclass(slots=True)
class GatherDepFailure:
    """``worker`` could not be reached, or did not have ``keys``."""

    worker: str
    keys: list
    stimulus_id: str = field(default_factory=stimulus_factory("gather-failure"))


@dataclass(slots=True)
class UpdateData:
    """Data put here directly (scatter); ``nbytes`` per key."""

    nbytes: dict
    stimulus_id: str = field(default_factory=stimulus_factory("update-data"))


@dataclass(slots=True)
class AcquireReplicas:
    """Copy these keys here from their holders (``who_has``: key -> addresses)."""

    who_has: dict
    nbytes: dict = field(default_factory=dict)
    priority: dict = field(default_factory=dict)
    stimulus_id: str = field(default_factory=stimulus_factory("acquire-replicas"))


@dataclass(slots=True)
class Pause:
    """Start no task and fetch nothing until ``Unpause`` (memory is short, or a user asked)."""

    stimulus_id: str = field(default_factory=stimulus_factory("pause"))


@dataclass(slots=True)
class Unpause:
    """Start and fetch as usual again."""

    stimulus_id: str = field(default_factory=stimulus_factory("unpause"))


@dataclass(slots=True)
class Secede:
    """The running task ``key`` leaves the thread pool (it waits for other tasks)."""

    key: str
    stimulus_id: str = field(default_factory=stimulus_factory("secede"))


@dataclass(slots=True)
class Rejoin:
    """The seceded task ``key`` wants a thread slot again (its thread waits for ``Rejoined``)."""

    key: str
    stimulus_id: str = field(default_factory=stimulus_factory("rejoin"))


@dataclass(slots=True)
class StealRequest:
    """The scheduler would give ``key`` to another worker: drop it if it has not started."""

    key: str
    stimulus_id: str = field(default_factory=stimulus_factory("steal-request"))


# ------------------------------------------------------------------ instructions
@dataclass(slots=True)
class Rejoined:
    """Let the thread of task ``key``, waiting in ``rejoin()``, continue."""

    key: str


@dataclass(slots=True)
class Execute:
    """Run task ``key`` (its pickled ``run_spec``) in a thread of the pool."""

    key: str
    run_spec: bytes
    wanted: bool = False  # pickle a small result into task-finished (INLINE_RESULT_BYTES)


@dataclass(slots=True)
class GatherDep:
    """Fetch ``keys`` (``total_nbytes`` together) from the peer ``worker``."""

    worker: str
    keys: list
    total_nbytes: int


@dataclass(slots=True)
class FreeData:
    """Drop the stored values of ``keys``."""

    keys: list


@dataclass(slots=True)
class SendToScheduler:
    """Send ``msg`` (a wire message of ``protocol/``) to the scheduler."""

    msg: dict


class InvalidTransition(RuntimeError):
    """A task state change the worker's transition table does not allow.

    ``story`` holds the last entries of the key's story, ``(key, start, finish,
    stimulus_id)`` each, oldest first: what led the key to ``start``.
    """

    def __init__(self, key: str, start: str, finish: str, story: list):
        self.key, self.start, self.finish, self.story = key, start, finish, story
        super().__init__(f"{key!r}: no transition {start} -> {finish} on this worker; story: {story}")

    def __reduce__(self):
        return type(self), (self.key, self.start, self.finish, self.story)
