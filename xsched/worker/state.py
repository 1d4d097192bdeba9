r"""A worker's decisions, as a pure state machine: events in, instructions out.

No sockets, threads, clocks or data here: the server (``worker/server.py``) owns the
data store, the thread pool and the peer connections. It feeds events
(``worker/events.py``) to :meth:`WorkerState.handle` and carries out the returned
instructions: ``Execute(key)``, ``GatherDep(worker, keys)``, ``FreeData(keys)``,
``SendToScheduler(msg)``, ``Rejoined(key)``.

Task states on a worker (``TaskStateName`` says what each one means)::

    an input (or a replica), copied from a peer:

        released --> fetch --> flight --> memory --> released      (FreeKeys frees the data)
                       ^          |
                       +----------+  the peer failed, another holder is known
                                  +--> missing                     no holder left: --> fetch
                                  |                                when the scheduler names one
                                  +--> released                    the holder cannot send it

    a task, run here:

        released --> waiting --> ready --> executing --> memory --> released
                                            |  ^    \
                                     Secede |  | Rejoin +--> error --> released  (reported)
                                            v  |
                                         long-running --> memory | error

    released while it runs or arrives:

        executing | long-running | flight --> cancelled --> released      it ended: result dropped
                                                 |
                                                 +--> executing | long-running | flight
                                                      wanted again before it ended

Besides: a key fetched here (``fetch``, ``flight``, ``missing``, a cancelled fetch) that
the scheduler asks to compute becomes ``waiting``/``ready``; a value that came with a
task or was scattered (``UpdateData``) puts its key in ``memory`` from any state; a task
not started (``waiting``/``ready``) or a fetch not started (``fetch``/``missing``) is
``released`` when freed, given back or stolen; the outcome of a run (``memory`` or
``error``) applies to its key whatever the key became meanwhile.

Every change of ``WTaskState.state`` goes through ``WorkerState._transition``, which
looks the pair up in one table, ``_TRANSITIONS = {(start, finish):
_transition_<start>_<finish>}``, logs ``(key, start, finish, stimulus_id)`` in a bounded
log (read by ``story(key)``) and calls the method: the bookkeeping of that change (the
ready and fetch heaps, the thread slots, the bytes in memory, the instruction it
implies). The event handlers decide which change to make and set the task's fields the
change needs first (``who_has``, ``priority``, ``nbytes``, ``coming_from``). A pair
missing from the table raises ``InvalidTransition`` with the key's story; asking for the
state a task is already in changes nothing (the story notes it). ``validate()`` checks
the invariants of every state.

A seceded (``long-running``) task keeps running in its own thread but no longer counts
against ``nthreads``: another ready task starts, and the scheduler is told
(``task-seceded``) so it sends more work. ``Rejoin`` puts it back among the executing
tasks as soon as one of the ``nthreads`` slots is free (``Rejoined`` tells the server to
let the task's thread continue; the scheduler hears ``task-rejoined``). A task that is
running (``executing``/``long-running``) or ``cancelled`` while running is in the
``executing`` or ``long_running`` set until its thread is done.

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
>>> [(start, finish) for _, start, finish, _ in ws.story("a")]
[('released', 'ready'), ('ready', 'executing')]
"""

from __future__ import annotations

import heapq
from collections import defaultdict, deque
from itertools import islice
from typing import Literal, get_args

from ..protocol import ops
from .events import (
    AcquireReplicas, ComputeTask, Execute, ExecuteFailure, ExecuteSuccess, FreeData, FreeKeys, GatherDep,
    GatherDepFailure, GatherDepSuccess, InvalidTransition, Pause, Rejoin, Rejoined, Secede, SendToScheduler,
    StealRequest, Unpause, UpdateData,
)

__all__ = [
    "WorkerState", "WTaskState", "TaskStateName", "TASK_STATES", "InvalidTransition",
    # events and instructions (defined in worker/events.py)
    "ComputeTask", "FreeKeys", "ExecuteSuccess", "ExecuteFailure", "GatherDepSuccess", "GatherDepFailure",
    "UpdateData", "Pause", "Unpause", "AcquireReplicas", "Secede", "Rejoin", "StealRequest", "Execute",
    "GatherDep", "FreeData", "SendToScheduler", "Rejoined",
]

#: A task's state on a worker.
#:
#: - ``released``: known here, nothing under way: an input kept for a dependent that is
#:   still known, or a key about to be forgotten.
#: - ``fetch``: an input (or a replica) to copy from a peer of ``who_has``, queued by priority.
#: - ``flight``: being copied from ``coming_from``.
#: - ``missing``: an input no known peer holds; the scheduler was told and names one again.
#: - ``waiting``: to run here once its inputs (``waiting_for_data``) are in memory.
#: - ``ready``: to run here, its inputs in memory; queued by priority for a thread slot
#:   (and the resources it needs).
#: - ``executing``: running in one of the ``nthreads`` thread slots.
#: - ``long-running``: running, seceded: its thread waits for other tasks and holds no slot.
#: - ``memory``: its value is in the server's store (computed, fetched, sent or scattered).
#: - ``error``: it raised. Passing: reported to the scheduler, then released in the same step.
#: - ``cancelled``: released while running or being copied; the result is dropped when it
#:   arrives, unless the scheduler wants the key again first.
TaskStateName = Literal["released", "fetch", "flight", "missing", "waiting", "ready", "executing",
                        "long-running", "memory", "error", "cancelled"]
TASK_STATES: tuple[str, ...] = get_args(TaskStateName)


def _by_start(table: dict) -> dict:
    """``{(start, finish): v}`` as ``{start: {finish: v}}``, with every state as a start."""
    out: dict = {state: {} for state in TASK_STATES}
    for (start, finish), v in table.items():
        out[start][finish] = v
    return out


class WTaskState:
    """A task as this worker knows it: its state (changed by ``WorkerState._transition``
    only), its inputs and dependents here, and where its value comes from."""

    __slots__ = ("key", "state", "run_spec", "priority", "dependencies", "dependents", "waiting_for_data",
                 "who_has", "nbytes", "resources", "coming_from", "wanted")

    def __init__(self, key: str):
        self.key = key
        self.state: TaskStateName = "released"
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
    gathers in flight at once; ``validate`` runs :meth:`validate` after every ``handle``;
    ``log_length`` bounds the log that ``story`` reads.
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
        self.in_flight_workers: dict[str, list[str]] = {}  # peer -> keys asked of it, in the order asked
        self.max_transfers = max_transfers
        self.transfer_batch_bytes = transfer_batch_bytes
        self.paused = False
        self.validate_each = validate
        self.log: deque = deque(maxlen=log_length)  # (key, start, finish, stimulus_id)
        self.log_count = 0  # entries ever appended to ``log`` (``logged_since`` reads the newest)
        self.nbytes_in_memory = 0
        self.counts = defaultdict(int)  # executed, fetched, ... (statistics)
        self._out: list = []

    # ------------------------------------------------------------------ API
    def handle(self, *events) -> list:
        """Apply events; return instructions (Execute, GatherDep, FreeData, SendToScheduler, Rejoined)."""
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
        """The logged state changes of ``keys``, oldest first: ``(key, start, finish,
        stimulus_id)`` each, as far back as the bounded log reaches."""
        ks = set(keys)
        return [e for e in self.log if e[0] in ks]

    def logged_since(self, count: int) -> list:
        """The log entries appended since ``log_count`` was ``count``, oldest first (as far
        back as the bounded log reaches): the state changes one ``handle`` made, for a
        server to tell observers (worker plugins) after it, outside the state machine.

        >>> ws = WorkerState(nthreads=1)
        >>> before = ws.log_count
        >>> _ = ws.handle(ComputeTask("a", b"spec"))
        >>> [(start, finish) for _, start, finish, _ in ws.logged_since(before)]
        [('released', 'ready'), ('ready', 'executing')]
        """
        n = min(self.log_count - count, len(self.log))
        return list(islice(reversed(self.log), n))[::-1] if n > 0 else []

    # ------------------------------------------------------------------ transitions
    def _transition(self, ts: WTaskState, finish: str, sid: str) -> None:
        """Move ``ts`` to ``finish`` (the one place a task's state changes), logged with
        ``sid`` for ``story``; a pair not in ``_TRANSITIONS`` raises ``InvalidTransition``."""
        start = ts.state
        method = self._NEXT[start].get(finish)
        if method is None:
            if start != finish:
                raise InvalidTransition(ts.key, start, finish, self.story(ts.key)[-20:])
            self.log.append((ts.key, start, finish, sid))  # already there: noted, nothing to do
            self.log_count += 1
            return
        self.log.append((ts.key, start, finish, sid))
        self.log_count += 1
        ts.state = finish
        method(self, ts, sid)

    # Each method below is one (start, finish) pair of ``_TRANSITIONS``, run just after the
    # state changed; pairs with the same bookkeeping share a body (the name is an alias).

    # -> fetch: queue the copy (the caller set ``who_has`` and ``priority``)
    def _transition_released_fetch(self, ts: WTaskState, sid: str) -> None:
        heapq.heappush(self.fetch, (ts.priority, ts.key, ts))

    _transition_missing_fetch = _transition_released_fetch  # the scheduler names a holder again
    _transition_flight_fetch = _transition_released_fetch  # the peer failed; another holder is known

    # -> flight: the caller chose the peer (``coming_from``) and sends the batch
    def _transition_fetch_flight(self, ts: WTaskState, sid: str) -> None:
        pass

    def _transition_cancelled_flight(self, ts: WTaskState, sid: str) -> None:
        pass  # wanted again while its copy is under way: the copy is kept when it arrives

    # -> missing: no holder left (the scheduler is told)
    def _transition_released_missing(self, ts: WTaskState, sid: str) -> None:
        pass

    _transition_flight_missing = _transition_released_missing

    # -> waiting: to run here, once ``waiting_for_data`` (set by the caller) is here; a
    # copy of the key under way is dropped when it arrives
    def _transition_released_waiting(self, ts: WTaskState, sid: str) -> None:
        pass

    _transition_fetch_waiting = _transition_released_waiting
    _transition_flight_waiting = _transition_released_waiting
    _transition_missing_waiting = _transition_released_waiting
    _transition_cancelled_waiting = _transition_released_waiting  # (a cancelled copy, not a run)

    # -> ready: its inputs are here; queue it for a thread slot
    def _transition_waiting_ready(self, ts: WTaskState, sid: str) -> None:
        heapq.heappush(self.ready, (ts.priority, ts.key, ts))

    _transition_released_ready = _transition_waiting_ready  # (no inputs, or all here)
    _transition_fetch_ready = _transition_waiting_ready
    _transition_flight_ready = _transition_waiting_ready
    _transition_missing_ready = _transition_waiting_ready
    _transition_cancelled_ready = _transition_waiting_ready  # (a cancelled copy, not a run)

    # -> executing: take a slot (and resources) and run it
    def _transition_ready_executing(self, ts: WTaskState, sid: str) -> None:
        if ts.resources:
            for r, amount in ts.resources.items():
                self.available_resources[r] = self.available_resources.get(r, 0) - amount
        self.executing.add(ts)
        self._out.append(Execute(ts.key, ts.run_spec, ts.wanted))

    def _transition_long_running_executing(self, ts: WTaskState, sid: str) -> None:
        # (the caller moved it from ``long_running`` to ``executing``, as it does a cancelled one)
        self._out.append(SendToScheduler({"op": ops.TASK_REJOINED, "key": ts.key}))

    def _transition_cancelled_executing(self, ts: WTaskState, sid: str) -> None:
        pass  # wanted again while it runs: its result will be kept

    # -> long-running: seceded (the caller moved it to ``long_running``, as it does a cancelled one)
    def _transition_executing_long_running(self, ts: WTaskState, sid: str) -> None:
        self._out.append(SendToScheduler({"op": ops.TASK_SECEDED, "key": ts.key}))

    _transition_cancelled_long_running = _transition_executing_long_running  # wanted again: say so again

    # -> memory: the value is in the store (the caller set ``nbytes``); wake its dependents
    def _transition_executing_memory(self, ts: WTaskState, sid: str) -> None:
        self.nbytes_in_memory += ts.nbytes
        for dts in ts.dependents:
            if ts in dts.waiting_for_data:
                dts.waiting_for_data.discard(ts)
                if not dts.waiting_for_data and dts.state == "waiting":
                    self._transition(dts, "ready", sid)

    _transition_long_running_memory = _transition_executing_memory
    _transition_flight_memory = _transition_executing_memory  # fetched
    # sent with a task that needs it (takes_inline), or scattered here (UpdateData)
    _transition_released_memory = _transition_executing_memory
    _transition_fetch_memory = _transition_executing_memory
    _transition_missing_memory = _transition_executing_memory
    _transition_cancelled_memory = _transition_executing_memory
    # scattered onto a key that was to run here (the queued run is skipped)
    _transition_waiting_memory = _transition_executing_memory
    _transition_ready_memory = _transition_executing_memory

    # -> error: it raised (the caller reports it, then releases it)
    def _transition_executing_error(self, ts: WTaskState, sid: str) -> None:
        pass

    _transition_long_running_error = _transition_executing_error
    # A run's outcome applies to its key whatever the key became meanwhile (as a result
    # does, -> memory). Reached only once an invariant is broken already: a seceded task
    # released while it runs, then wanted as an input of another task, is taken for a
    # copy in flight (``_ev_compute``: "cancelled and not in executing") and goes on from
    # there while its thread still runs.
    _transition_released_error = _transition_executing_error
    _transition_fetch_error = _transition_executing_error
    _transition_flight_error = _transition_executing_error
    _transition_missing_error = _transition_executing_error
    _transition_waiting_error = _transition_executing_error
    _transition_ready_error = _transition_executing_error
    _transition_memory_error = _transition_executing_error

    # -> cancelled: released while its thread runs or its copy is under way
    def _transition_executing_cancelled(self, ts: WTaskState, sid: str) -> None:
        pass

    _transition_long_running_cancelled = _transition_executing_cancelled
    _transition_flight_cancelled = _transition_executing_cancelled

    # -> released: nothing under way any more (the caller forgets it if nothing here needs it)
    def _transition_memory_released(self, ts: WTaskState, sid: str) -> None:
        self.nbytes_in_memory -= ts.nbytes
        self._out.append(FreeData([ts.key]))

    def _transition_waiting_released(self, ts: WTaskState, sid: str) -> None:
        pass

    _transition_ready_released = _transition_waiting_released
    _transition_fetch_released = _transition_waiting_released
    _transition_missing_released = _transition_waiting_released
    _transition_flight_released = _transition_waiting_released  # its holder cannot send it
    _transition_cancelled_released = _transition_waiting_released  # its run or copy ended
    _transition_error_released = _transition_waiting_released

    _TRANSITIONS = {
        ("released", "fetch"): _transition_released_fetch,
        ("missing", "fetch"): _transition_missing_fetch,
        ("flight", "fetch"): _transition_flight_fetch,
        ("fetch", "flight"): _transition_fetch_flight,
        ("cancelled", "flight"): _transition_cancelled_flight,
        ("released", "missing"): _transition_released_missing,
        ("flight", "missing"): _transition_flight_missing,
        ("released", "waiting"): _transition_released_waiting,
        ("fetch", "waiting"): _transition_fetch_waiting,
        ("flight", "waiting"): _transition_flight_waiting,
        ("missing", "waiting"): _transition_missing_waiting,
        ("cancelled", "waiting"): _transition_cancelled_waiting,
        ("waiting", "ready"): _transition_waiting_ready,
        ("released", "ready"): _transition_released_ready,
        ("fetch", "ready"): _transition_fetch_ready,
        ("flight", "ready"): _transition_flight_ready,
        ("missing", "ready"): _transition_missing_ready,
        ("cancelled", "ready"): _transition_cancelled_ready,
        ("ready", "executing"): _transition_ready_executing,
        ("long-running", "executing"): _transition_long_running_executing,
        ("cancelled", "executing"): _transition_cancelled_executing,
        ("executing", "long-running"): _transition_executing_long_running,
        ("cancelled", "long-running"): _transition_cancelled_long_running,
        ("executing", "memory"): _transition_executing_memory,
        ("long-running", "memory"): _transition_long_running_memory,
        ("flight", "memory"): _transition_flight_memory,
        ("released", "memory"): _transition_released_memory,
        ("fetch", "memory"): _transition_fetch_memory,
        ("missing", "memory"): _transition_missing_memory,
        ("cancelled", "memory"): _transition_cancelled_memory,
        ("waiting", "memory"): _transition_waiting_memory,
        ("ready", "memory"): _transition_ready_memory,
        ("executing", "error"): _transition_executing_error,
        ("long-running", "error"): _transition_long_running_error,
        ("released", "error"): _transition_released_error,
        ("fetch", "error"): _transition_fetch_error,
        ("flight", "error"): _transition_flight_error,
        ("missing", "error"): _transition_missing_error,
        ("waiting", "error"): _transition_waiting_error,
        ("ready", "error"): _transition_ready_error,
        ("memory", "error"): _transition_memory_error,
        ("executing", "cancelled"): _transition_executing_cancelled,
        ("long-running", "cancelled"): _transition_long_running_cancelled,
        ("flight", "cancelled"): _transition_flight_cancelled,
        ("memory", "released"): _transition_memory_released,
        ("waiting", "released"): _transition_waiting_released,
        ("ready", "released"): _transition_ready_released,
        ("fetch", "released"): _transition_fetch_released,
        ("missing", "released"): _transition_missing_released,
        ("flight", "released"): _transition_flight_released,
        ("cancelled", "released"): _transition_cancelled_released,
        ("error", "released"): _transition_error_released,
    }
    # the same table as start -> {finish: method}, for ``_transition``: a lookup that
    # builds no (start, finish) pair per change (building it was a third of a change's cost)
    _NEXT = _by_start(_TRANSITIONS)

    # ------------------------------------------------------------------ events
    def _ev_compute(self, ev: ComputeTask) -> None:
        if ev.inline:  # first: whatever becomes of the task, the values are here now (or not)
            self._take_inline(ev.inline, ev.stimulus_id)
        ts = self.tasks.get(ev.key)
        if ts is None:
            ts = self.tasks[ev.key] = WTaskState(ev.key)
        if ts.state == "memory":
            self._out.append(SendToScheduler({"op": ops.TASK_FINISHED, "key": ts.key, "nbytes": ts.nbytes}))
            return
        if ts.state in ("executing", "ready", "waiting", "long-running"):
            return  # already ours
        if ts.state == "cancelled" and ts in self.executing:
            ts.run_spec = ev.run_spec
            self._transition(ts, "executing", ev.stimulus_id)  # resume: the running result will be kept
            return
        if ts.state == "cancelled" and ts in self.long_running:
            ts.run_spec = ev.run_spec
            self._transition(ts, "long-running", ev.stimulus_id)  # resume, still seceded: says so again
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
                    self._transition(dts, "flight", ev.stimulus_id)  # its fetch is still under way: wanted again
                if dts.state in ("released", "missing"):
                    if dts.who_has:
                        dts.priority = ts.priority
                        self._transition(dts, "fetch", ev.stimulus_id)
                    else:
                        self._transition(dts, "missing", ev.stimulus_id)
        if ts.waiting_for_data:
            self._transition(ts, "waiting", ev.stimulus_id)
            missing = [d for d in ts.waiting_for_data if d.state == "missing"]
            if missing:
                self._give_back(ts, ev.stimulus_id, missing)
        else:
            self._transition(ts, "ready", ev.stimulus_id)

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
                self._out.append(SendToScheduler({"op": ops.MISSING_DATA, "key": key, "errant_worker": self.address}))

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

    def _give_back(self, ts: WTaskState, sid: str, missing) -> None:
        """Inputs cannot be found anywhere: tell the scheduler and drop the task here."""
        for d in missing:
            self._out.append(SendToScheduler({"op": ops.MISSING_DATA, "key": d.key, "errant_worker": ""}))
        self._out.append(SendToScheduler({"op": ops.RESCHEDULE, "key": ts.key}))
        self._release(ts, sid)

    def _ev_free_keys(self, ev: FreeKeys) -> None:
        for key in ev.keys:
            ts = self.tasks.get(key)
            if ts is not None:
                self._release(ts, ev.stimulus_id)

    def _release(self, ts: WTaskState, sid: str) -> None:
        """Nothing here needs ``ts`` any more: a run or a copy under way is ``cancelled`` (its
        result is dropped when it arrives), data is freed, the rest is released and forgotten."""
        if ts.state in ("executing", "long-running", "flight", "cancelled"):
            self._transition(ts, "cancelled", sid)
            return
        self._transition(ts, "released", sid)  # (memory -> released frees the data)
        self._forget(ts)

    def _forget(self, ts: WTaskState) -> None:
        """Drop ``ts`` and the inputs nothing else here needs. A forgotten task object can still
        be linked from a released dependent while its key comes back as a new task (computed
        here after all): only the object ``tasks`` holds is ever dropped, so that forgetting
        the old one later never takes the new one with it."""
        if ts.dependents and any(d.state not in ("released",) for d in ts.dependents):
            return  # still needed as an input here
        if self.tasks.get(ts.key) is ts:
            del self.tasks[ts.key]
        for dts in ts.dependencies:
            dts.dependents.discard(ts)
            if self.tasks.get(dts.key) is not dts:
                continue  # an input forgotten before (its key may be here again, as another task)
            if not dts.dependents and dts.state in ("fetch", "missing", "released"):
                self._transition(dts, "released", "forget")
                self._forget(dts)
            elif not dts.dependents and dts.state == "flight":
                self._transition(dts, "cancelled", "forget")
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
            self._transition(ts, "released", ev.stimulus_id)
            self._forget(ts)
            return
        self._to_memory(ts, ev.nbytes, ev.stimulus_id)
        self.counts["executed"] += 1
        msg = {"op": ops.TASK_FINISHED, "key": ts.key, "nbytes": ev.nbytes, "type": ev.type,
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
            self._transition(ts, "released", ev.stimulus_id)
            self._forget(ts)
            return
        self._transition(ts, "error", ev.stimulus_id)
        self._out.append(SendToScheduler({
            "op": ops.TASK_ERRED, "key": ts.key, "exception": ev.exception, "traceback": ev.traceback,
            "text": ev.text, "start": ev.start, "stop": ev.stop,
        }))
        self._transition(ts, "released", ev.stimulus_id)
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
        if ts.state == "memory":  # stored again: no change of state, but the bytes count again
            self.nbytes_in_memory += nbytes  # (UpdateData uncounted the old value first)
        self._transition(ts, "memory", sid)

    def _ev_gather_success(self, ev: GatherDepSuccess) -> None:
        keys = self.in_flight_workers.pop(ev.worker, [])
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
                    self._transition(ts, "released", ev.stimulus_id)
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
            self._out.append(SendToScheduler({"op": ops.ADD_KEYS, "nbytes": added}))

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
                "op": ops.TASK_ERRED, "key": dts.key, "exception": exception, "traceback": traceback,
                "text": f"input {ts.key!r} of this task is on worker {worker}, which cannot send it: {text}",
            }))
            self._release(dts, sid)
        if self.tasks.get(ts.key) is ts and ts.state in ("flight", "cancelled"):
            self._transition(ts, "released", sid)
            self._forget(ts)

    def _ev_gather_failure(self, ev: GatherDepFailure) -> None:
        keys = dict.fromkeys([*self.in_flight_workers.pop(ev.worker, []), *ev.keys])
        for key in keys:
            ts = self.tasks.get(key)
            if ts is not None:
                self._fetch_failed(ts, ev.worker, ev.stimulus_id)

    def _fetch_failed(self, ts: WTaskState, worker: str, sid: str) -> None:
        if ts.state == "cancelled":
            self._transition(ts, "released", sid)
            self._forget(ts)
            return
        if ts.state != "flight":
            return
        self._out.append(SendToScheduler({"op": ops.MISSING_DATA, "key": ts.key, "errant_worker": worker}))
        ts.who_has = [w for w in ts.who_has if w != worker]
        if ts.who_has:
            self._transition(ts, "fetch", sid)
            return
        self._transition(ts, "missing", sid)
        if not ts.dependents:  # a replica nobody here needs: nothing to wait for
            self._transition(ts, "released", sid)
            self._forget(ts)
            return
        for dts in list(ts.dependents):
            if dts.state == "waiting":
                self._out.append(SendToScheduler({"op": ops.RESCHEDULE, "key": dts.key}))
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
                self._transition(ts, "flight", ev.stimulus_id)  # its fetch is still under way: wanted again
                continue
            if ts.state not in ("released", "missing"):
                continue  # already coming (fetch, flight) or being computed here: reported when done
            ts.who_has = [w for w in holders if w != self.address]
            ts.nbytes = ev.nbytes.get(key, ts.nbytes) or 0
            if not ts.who_has:
                self._transition(ts, "released", ev.stimulus_id)
                self._forget(ts)
                continue
            ts.priority = tuple(ev.priority.get(key, ts.priority))
            self._transition(ts, "fetch", ev.stimulus_id)
        if have:
            self._out.append(SendToScheduler({"op": ops.ADD_KEYS, "nbytes": have}))

    def _ev_secede(self, ev: Secede) -> None:
        ts = self.tasks.get(ev.key)
        if ts is None or ts not in self.executing:
            return  # not running here (finished meanwhile, or seceded already)
        self.executing.discard(ts)
        self.long_running.add(ts)
        if ts.state == "executing":
            self._transition(ts, "long-running", ev.stimulus_id)  # (tells the scheduler)

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
        self._out.append(SendToScheduler({"op": ops.STEAL_RESPONSE, "key": ev.key, "state": state}))

    def _ev_pause(self, ev: Pause) -> None:
        if not self.paused:  # (the scheduler hears of a change only, and from here alone)
            self.paused = True
            self._out.append(SendToScheduler({"op": ops.WORKER_STATUS, "status": "paused"}))

    def _ev_unpause(self, ev: Unpause) -> None:
        if self.paused:
            self.paused = False
            self._out.append(SendToScheduler({"op": ops.WORKER_STATUS, "status": "running"}))

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
                self._transition(ts, "executing", "rejoin")  # (tells the scheduler)
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
            self._transition(ts, "executing", "ensure-computing")  # takes a slot and resources: Execute
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
            ts.coming_from = worker
            self._transition(ts, "flight", "ensure-communicating")
            # batch more keys from the same holder, in priority order, up to the byte budget
            rest = []
            while self.fetch and total < self.transfer_batch_bytes:
                item = heapq.heappop(self.fetch)
                other = item[2]
                if other.state != "fetch" or self.tasks.get(other.key) is not other:
                    continue
                if worker in other.who_has:
                    other.coming_from = worker
                    self._transition(other, "flight", "ensure-communicating")
                    keys.append(other.key)
                    total += other.nbytes
                else:
                    rest.append(item)
            for item in rest:
                heapq.heappush(self.fetch, item)
            self.in_flight_workers[worker] = keys
            self._out.append(GatherDep(worker, keys, total))
        for item in skipped:
            heapq.heappush(self.fetch, item)

    # ------------------------------------------------------------------ invariants
    def validate(self) -> None:
        """Check every invariant; an AssertionError names the key (or the count) that broke one."""
        fetching = {item[2] for item in self.fetch}
        queued = {item[2] for item in self.ready}
        for key, ts in self.tasks.items():
            assert ts.key == key, f"{key!r} is filed under the task of {ts.key!r}"
            self._validate_task(ts, fetching, queued)
        for ts in self.executing:
            assert ts.state in ("executing", "cancelled"), f"{ts.key!r} holds a thread slot but is {ts.state}"
            assert self.tasks.get(ts.key) is ts, f"{ts.key!r} holds a thread slot but is forgotten"
        for ts in self.long_running:
            assert ts.state in ("long-running", "cancelled"), f"{ts.key!r} is seceded but {ts.state}"
            assert ts not in self.executing, f"{ts.key!r} is seceded and holds a thread slot"
            assert self.tasks.get(ts.key) is ts, f"{ts.key!r} is seceded but forgotten"
        for ts in self.rejoining:
            assert ts in self.long_running, f"{ts.key!r} rejoins but is not seceded"
        running = sum(1 for t in self.executing if t.state == "executing")
        assert running <= self.nthreads, f"{running} tasks executing on {self.nthreads} threads"
        for r, total in self.total_resources.items():
            assert 0 <= self.available_resources.get(r, 0) <= total, (r, self.available_resources)
        assert self.nbytes_in_memory == sum(t.nbytes for t in self.tasks.values() if t.state == "memory"), \
            "nbytes_in_memory drifted"

    def _validate_task(self, ts: WTaskState, fetching: set, queued: set) -> None:
        """The invariants of ``ts``'s state (``fetching``/``queued``: the tasks in the heaps)."""
        key, state = ts.key, ts.state
        running = ts in self.executing or ts in self.long_running
        if state == "fetch":
            assert ts in fetching, f"{key!r} is to fetch but not queued for it"
        elif state == "flight":
            assert key in self.in_flight_workers.get(ts.coming_from, ()), \
                f"{key!r} is in flight but not among the keys coming from {ts.coming_from!r}"
        elif state == "missing":
            assert not ts.who_has, f"{key!r} is missing but has holders {ts.who_has}"
        elif state == "waiting":
            assert ts.waiting_for_data, f"{key!r} is waiting for nothing"
            assert ts.waiting_for_data <= ts.dependencies, f"{key!r} waits for a key it does not need"
            assert all(d.state != "memory" for d in ts.waiting_for_data), f"{key!r} waits for data that is here"
        elif state == "ready":
            assert all(d.state == "memory" for d in ts.dependencies), f"{key!r} is ready but lacks inputs"
            assert ts in queued, f"{key!r} is ready but not queued to run"
        elif state == "executing":
            assert ts in self.executing, f"{key!r} is executing without a thread slot"
        elif state == "long-running":
            assert ts in self.long_running, f"{key!r} is long-running but not seceded"
        elif state == "cancelled":
            assert running or key in self.in_flight_workers.get(ts.coming_from, ()), \
                f"{key!r} is cancelled but neither running nor in flight"
        else:
            assert state in ("released", "memory"), f"{key!r} is in state {state!r}, which no task stays in"
        if state not in ("executing", "long-running", "cancelled"):
            assert not running, f"{key!r} is {state} but its thread is counted as running"
