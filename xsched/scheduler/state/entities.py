"""The entities of the scheduler's state: tasks, workers, retirements, and their state names.

Plain slotted classes with no behaviour beyond ordering: every change to them is made by
the state machine (``machine.py``) through its transition table (``transitions.py``).
Memory matters here: a million-task graph holds a million ``TaskState``, so empty sets are
shared and small collections are tuples.

>>> ts = TaskState("inc-1", b"spec", (0,))
>>> ts, ts.is_root, host_of("tcp://[::1]:8786")
(<TaskState 'inc-1' released>, True, '::1')
"""

from __future__ import annotations

import sys
from operator import attrgetter
from typing import Literal, get_args

from ...keys import key_split

#: A task's state on the scheduler.
#:
#: - ``released``: known, not computed, not wanted by anything running now.
#: - ``waiting``: wanted; waits for its dependencies to be in memory.
#: - ``queued``: a root task waiting on the scheduler for a free worker thread.
#: - ``no-worker``: runnable, but no connected worker can run it (resources, restrictions).
#: - ``processing``: sent to a worker.
#: - ``memory``: its value is held by one or more workers.
#: - ``erred``: it (or a dependency) raised; the exception is kept for the clients.
#: - ``forgotten``: gone from the scheduler (only seen by observers, never in ``tasks``).
TaskStateName = Literal["released", "waiting", "queued", "no-worker", "processing", "memory", "erred",
                        "forgotten"]
TASK_STATES: tuple[str, ...] = get_args(TaskStateName)

#: A worker's status on the scheduler: ``running`` takes tasks; ``paused`` (over its memory
#: pause fraction) keeps its data but starts nothing new; ``retiring`` hands its data to
#: others before it leaves; ``retired`` was drained and kept open (``close=False``).
WorkerStatusName = Literal["running", "paused", "retiring", "retired"]


def host_of(address: str) -> str:
    """The host of ``proto://host:port``, without the brackets of an IPv6 address."""
    host = address.split("://", 1)[-1].rsplit(":", 1)[0]
    return host[1:-1] if host.startswith("[") and host.endswith("]") else host


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
    """One key the scheduler knows: its recipe, its place in the graph, where it is.

    Attributes (the sets start as one shared empty set, see ``_grown``):

    - ``key``, ``run_spec`` (opaque bytes; None for a placeholder of an unknown key),
      ``priority`` (a tuple: lower runs first), ``group`` (the key's prefix, interned).
    - ``state``: a :data:`TaskStateName`; changed only through the transition table.
    - ``dependencies`` (tuple, fixed once wired), ``dependents`` (tuple or set).
    - ``waiting_on``: dependencies not in memory yet (while waiting).
    - ``waiters``: dependents that still need this key's data; when none are left, the
      data may be released.
    - ``who_wants``: clients (and dataset holders) that hold a future of it.
    - ``who_has``: workers that hold the value (``memory`` only); ``processing_on``: the
      worker running it (``processing`` only); ``nbytes``/``type`` of the result.
    - ``exception``, ``traceback`` (pickled), ``exception_text``, ``exception_blame`` (the
      task whose failure this is).
    - ``resources``, ``worker_restrictions`` and ``loose`` (allow other workers when none
      of the restricted ones can run it), ``retries`` left, ``limits`` (named concurrency
      caps), ``suspicious`` (worker deaths while it ran).
    - ``queued_seq`` (its live entry in the queue heap), ``functions`` (ids of the
      functions its spec refers to), ``inline`` (its small pickled value while dependents
      wait: it travels with their compute-task).
    """

    __slots__ = (
        "key", "state", "run_spec", "dependencies", "dependents", "waiting_on", "waiters",
        "who_wants", "who_has", "processing_on", "priority", "nbytes", "type", "exception",
        "traceback", "exception_text", "exception_blame", "resources", "worker_restrictions",
        "loose", "retries", "suspicious", "group", "limits", "queued_seq", "functions", "inline", "erred_on",
    )

    def __init__(self, key: str, run_spec: bytes | None, priority: tuple):
        self.key = key
        self.state: TaskStateName = "released"
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
        self.erred_on: str | None = None  # the worker where it raised (its post-mortem is there)
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


#: A task's rank as ``TaskState.__lt__`` orders it, as a key for ``sorted``/``heapq`` that
#: compares in C (a million tasks sorted here in 5.7 s of CPU by this key, 7.7 s by ``__lt__``).
TASK_ORDER = attrgetter("priority", "key")


class WorkerState:
    """One connected worker as the scheduler sees it.

    Attributes: ``address``, ``name``, ``host`` (the host of its address: two machines of one
    hostname are two hosts), ``hostname`` (the machine's name, as the worker said), ``pid``,
    ``nthreads``, ``memory_limit``;
    ``resources`` it offers and ``used_resources`` by its processing tasks; ``processing``
    (task -> expected seconds) and ``occupancy`` (their sum); ``long_running`` (seceded
    tasks: processing, holding no thread); ``has_what`` and ``nbytes`` (data it holds);
    ``status`` (a :data:`WorkerStatusName`); ``metrics`` (its last heartbeat's figures);
    ``local_directory`` (where it keeps spilled data and uploads, as it said when it registered);
    ``functions`` (function ids it has been sent).
    """

    __slots__ = (
        "address", "name", "nthreads", "memory_limit", "resources", "used_resources", "pid",
        "host", "processing", "has_what", "nbytes", "status", "metrics", "occupancy", "long_running",
        "functions", "local_directory", "hostname", "load_marks",
    )

    def __init__(self, address: str, nthreads: int, name, memory_limit, resources, pid, host,
                 local_directory: str | None = None, hostname: str | None = None):
        self.address = address
        self.name = name if name is not None else address
        self.nthreads = nthreads
        self.memory_limit = memory_limit
        self.resources = dict(resources or {})
        self.used_resources = {r: 0 for r in self.resources}
        self.pid = pid
        self.host = host or host_of(address)
        self.processing: dict[TaskState, float] = {}
        self.has_what: set[TaskState] = set()
        self.nbytes = 0
        self.status: WorkerStatusName = "running"
        self.metrics: dict = {}
        self.occupancy = 0.0
        self.long_running: set[TaskState] = set()  # seceded tasks: processing, holding no slot
        self.functions: set[bytes] = set()  # function ids sent to it (and not forgotten since)
        self.local_directory = local_directory
        self.hostname = hostname
        self.load_marks = 0  # the load index's sets it is in (load.py), kept by that index only

    def __repr__(self) -> str:
        return f"<WorkerState {self.address!r} processing={len(self.processing)} memory={len(self.has_what)}>"

    def __lt__(self, other):
        return self.address < other.address


class Retirement:
    """A worker being retired: what was asked, and which keys were sent where (``retirement.py``)."""

    __slots__ = ("worker", "close", "previous_status", "requested", "stimulus_id")

    def __init__(self, worker: str, close: bool, previous_status: str, stimulus_id: str):
        self.worker = worker
        self.close = close
        self.previous_status = previous_status  # restored if it cannot retire
        self.requested: dict[str, str] = {}  # key -> destination address
        self.stimulus_id = stimulus_id


#: Root tasks of a prefix measured shorter than this (seconds) and returning at most
