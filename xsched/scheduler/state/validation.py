"""The invariants of the scheduler's state, one validator per task state.

``SchedulerState.validate()`` checks every task with the checks common to all states and
those of its own state (``TASK_VALIDATORS``), then the workers and the machine's other
tables. A broken invariant raises ``InvalidState`` (an ``AssertionError``) naming the key,
the rule and the key's last recorded transitions, so a failure in a long cluster test
says how the key got there. Tests call ``validate()`` after every event; the server does
when ``scheduler.validate`` is on.

>>> from xsched.scheduler.state import SchedulerState, AddWorker, UpdateGraph, NewTask
>>> s = SchedulerState()
>>> _ = s.handle(AddWorker("tcp://w", nthreads=1), UpdateGraph("c", [NewTask("a", b"x")], ["a"]))
>>> s.validate()
>>> s.tasks["a"].processing_on = None
>>> s.validate()
Traceback (most recent call last):
...
xsched.scheduler.state.validation.InvalidState: 'a' is processing but no worker runs it; story: ...
"""

from __future__ import annotations

from collections import defaultdict

from .entities import TASK_STATES, TaskState
from .events import dataset_holder
from .placement import _live
from .transitions import INLINE_DEPENDENCY_BYTES


class InvalidState(AssertionError):
    """An invariant of the scheduler's state does not hold; the message has the key's story."""


def _fail(s, key: str, rule: str):
    raise InvalidState(f"{key!r} {rule}; story: {s.story(key)[-10:]}")


def _not_held(s, ts: TaskState) -> None:
    if ts.who_has:
        _fail(s, ts.key, f"is {ts.state} but workers hold it")
    if ts.inline is not None:
        _fail(s, ts.key, f"is {ts.state} but its value is kept inline")


def _not_running(s, ts: TaskState) -> None:
    if ts.processing_on is not None:
        _fail(s, ts.key, f"is {ts.state} but runs on {ts.processing_on.address}")


def _inputs_wait_for_it(s, ts: TaskState) -> None:
    for d in ts.dependencies:
        if ts not in d.waiters:
            _fail(s, ts.key, f"is {ts.state} but not among the waiters of its input {d.key!r}")


def _validate_released(s, ts: TaskState) -> None:
    _not_held(s, ts)
    _not_running(s, ts)


def _validate_waiting(s, ts: TaskState) -> None:
    _validate_released(s, ts)
    if ts.waiting_on != {d for d in ts.dependencies if d.state != "memory"}:
        _fail(s, ts.key, "waits on other inputs than those not in memory")
    _inputs_wait_for_it(s, ts)


def _validate_queued(s, ts: TaskState) -> None:
    _validate_released(s, ts)
    _inputs_wait_for_it(s, ts)


def _validate_no_worker(s, ts: TaskState) -> None:
    _validate_queued(s, ts)
    if ts not in s.unrunnable:
        _fail(s, ts.key, "is no-worker but not among the unrunnable tasks")


def _validate_processing(s, ts: TaskState) -> None:
    _not_held(s, ts)
    ws = ts.processing_on
    if ws is None or ts not in ws.processing:
        _fail(s, ts.key, "is processing but no worker runs it")
    if ws.address not in s.workers:
        _fail(s, ts.key, f"is processing on {ws.address}, which is not connected")
    for d in ts.dependencies:
        if d.state != "memory":
            _fail(s, ts.key, f"is processing but its input {d.key!r} is {d.state}")
    _inputs_wait_for_it(s, ts)


def _validate_memory(s, ts: TaskState) -> None:
    _not_running(s, ts)
    if not ts.who_has:
        _fail(s, ts.key, "is in memory but no worker holds it")
    if ts.inline is not None and len(ts.inline) > INLINE_DEPENDENCY_BYTES:
        _fail(s, ts.key, f"keeps a value of {len(ts.inline)} bytes inline (at most {INLINE_DEPENDENCY_BYTES})")
    for ws in ts.who_has:
        if ts not in ws.has_what or ws.address not in s.workers:
            _fail(s, ts.key, f"is held by {ws.address}, which does not know it or is not connected")


def _validate_erred(s, ts: TaskState) -> None:
    _validate_released(s, ts)


#: state -> the checks of a task in that state (``forgotten`` tasks are not in ``tasks``).
TASK_VALIDATORS = {
    "released": _validate_released, "waiting": _validate_waiting, "queued": _validate_queued,
    "no-worker": _validate_no_worker, "processing": _validate_processing, "memory": _validate_memory,
    "erred": _validate_erred,
}
assert set(TASK_VALIDATORS) == set(TASK_STATES) - {"forgotten"}


class Validation:
    """``validate()``: every invariant of the machine (a mixin of ``SchedulerState``)."""

    def validate(self) -> None:
        """Check every invariant; raise ``InvalidState`` naming the key, the rule and its story."""
        for key, ts in self.tasks.items():
            check = TASK_VALIDATORS.get(ts.state)
            if ts.key != key or check is None:
                _fail(self, key, f"is filed under {key!r} in state {ts.state!r}")
            check(self, ts)
            for d in ts.dependencies:
                if ts not in d.dependents or d.key not in self.tasks:
                    _fail(self, key, f"depends on {d.key!r}, which is forgotten or does not list it")
        self._validate_tables()
        self._validate_workers()

    def _validate_tables(self) -> None:
        nq = sum(1 for ts in self.tasks.values() if ts.state == "queued")
        assert nq == self._queued_count, f"{nq} tasks queued, {self._queued_count} counted"
        live = {id(ts) for _, seq, ts in self.queued if _live(seq, ts)}
        for ws, claims in self._claims.items():
            assert claims, f"an empty batch of {ws.address} is kept (placement scans no empty ones)"
            for seq, ts in claims:
                if _live(seq, ts):
                    if self.workers.get(ws.address) is not ws or ws.status != "running":
                        _fail(self, ts.key, f"is claimed by {ws.address}, which is {ws.status} or gone")
                    if id(ts) in live:
                        _fail(self, ts.key, "is both claimed and in the queue's heap")
        for ts in self.unrunnable:
            if ts.state != "no-worker":
                _fail(self, ts.key, f"is among the unrunnable tasks but {ts.state}")
        refs: dict = defaultdict(int)
        for ts in self.tasks.values():
            for fid in ts.functions:
                refs[fid] += 1
        assert refs == {fid: entry[1] for fid, entry in self.functions.items()}, "function refcounts drifted"
        counted: tuple[dict, dict] = ({}, {})
        for victim, thief in self.stealing.values():
            counted[0][victim] = counted[0].get(victim, 0) + 1
            counted[1][thief] = counted[1].get(thief, 0) + 1
        assert counted == (self.stealing.outgoing, self.stealing.incoming), "steal counts drifted"
        for key, (victim, _thief) in self.stealing.items():
            ts = self.tasks.get(key)
            if ts is None or ts.state != "processing":
                _fail(self, key, "has a steal in flight but is not processing")
            if ts.processing_on.address != victim:
                _fail(self, key, f"is being stolen from {victim} but runs elsewhere")
        for name, (keys, _data) in self.datasets.items():
            holder = dataset_holder(name)
            assert holder in self.clients, f"dataset {name!r} has no holder"
            assert {ts.key for ts in self.clients[holder]} == set(keys), f"dataset {name!r} keys drifted"
        for key, dest in self.replicating.items():
            ts = self.tasks.get(key)
            if ts is None or ts.state != "memory":
                _fail(self, key, f"is being copied to {dest} but is not in memory")
            if dest not in self.workers or not self._safe_holder(self.workers[dest]):
                _fail(self, key, f"is being copied to {dest}, which cannot keep it")
            if not self._needs_moving(ts):
                _fail(self, key, f"is being copied to {dest} though a safe worker holds it")
        self._validate_replications()

    def _validate_workers(self) -> None:
        functions = set(self.functions)
        for addr, ws in self.workers.items():
            assert ws.functions <= functions, f"{addr} holds forgotten functions"
            for ts in ws.processing:
                if ts.state != "processing" or ts.processing_on is not ws:
                    _fail(self, ts.key, f"is listed as processing on {addr} but is {ts.state} elsewhere")
            assert ws.long_running <= set(ws.processing), f"{addr}: seceded tasks not processing there"
            for ts in ws.has_what:
                if ws not in ts.who_has or ts.state != "memory":
                    _fail(self, ts.key, f"is listed as held by {addr} but is {ts.state}")
            assert (ws.status == "retiring") == (addr in self.retiring), f"{addr} status {ws.status}"
        for addr, r in self.retiring.items():
            assert addr in self.workers and r.worker == addr, f"retirement of {addr} but no such worker"
        self._load.check(self.workers.values())
        for ws, tasks in self._stealable.items():
            assert tasks and tasks <= set(ws.processing) - ws.long_running, f"{ws.address}: steal candidates drifted"
            assert self.workers.get(ws.address) is ws, f"{ws.address}: steal candidates of a worker that left"
        touched, stealing_touched = self._load.touched, self.stealing.touched
        for ws in self._victims:
            assert self.workers.get(ws.address) is ws, f"{ws.address}: a steal victim that left"
        for ws in self.workers.values():  # a worker untouched since the last pass is filed right
            if ws not in touched and ws.address not in stealing_touched:
                assert (ws in self._victims) == (self._spare(ws) > 0), f"{ws.address}: steal victims drifted"
