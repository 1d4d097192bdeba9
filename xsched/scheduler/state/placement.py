"""Where a runnable task goes: valid workers, free slots, the queue of root tasks.

The rule users rely on (``docs``: memory): with a finite ``worker_saturation``, a task with
no dependencies, or one that needs resources or a concurrency limit, goes to a worker only
while that worker runs fewer than ``ceil(nthreads * saturation)`` tasks; otherwise it waits
in ``queued``, highest priority first, and ``_fill_slots`` hands it out after every event
(after that event's releases, so a worker frees data before it reads the next chunk).
Tiny root tasks are the exception that keeps threads busy: once a task prefix is known to
run in under ``PIPELINE_SECONDS`` and to return at most ``PIPELINE_NBYTES``, each thread
gets ``PIPELINE_DEPTH`` more of them. Tasks with dependencies go where their inputs are,
weighed by bytes to move (``bandwidth``) and by the work queued on each worker.

A mixin of ``SchedulerState`` (``machine.py``): pure functions of its tables.

>>> from xsched.scheduler.state import SchedulerState, AddWorker, UpdateGraph, NewTask
>>> s = SchedulerState()
>>> _ = s.handle(AddWorker("tcp://w1", nthreads=1))
>>> _ = s.handle(UpdateGraph("c", [NewTask("a", b"x"), NewTask("b", b"x", priority=(1,))], ["a", "b"]))
>>> s.tasks["a"].state, s.tasks["b"].state, s.who_can_run("b")["reason"][:27]
('processing', 'queued', 'waiting for a free thread (')
"""

from __future__ import annotations

import heapq
import math

from .entities import TaskState, WorkerState

#: Root tasks of a prefix measured shorter than this (seconds) and returning at most
#: PIPELINE_NBYTES get PIPELINE_DEPTH extra slots per thread: a round trip costs more than
#: running them, and the memory held ahead is at most threads x depth x PIPELINE_NBYTES.
PIPELINE_SECONDS = 0.005
PIPELINE_NBYTES = 64 * 1024
PIPELINE_DEPTH = 4


class Placement:
    """Placement of runnable tasks (a mixin of ``SchedulerState``)."""

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

    def explain(self, key: str) -> str:
        """What ``key`` is doing now and, when it is not running, why: one sentence for a
        user (the story pane's "now" line), from the scheduler's own state.

        >>> from xsched.scheduler.state import AddWorker, NewTask, SchedulerState, UpdateGraph
        >>> s = SchedulerState()
        >>> _ = s.handle(UpdateGraph("c", [NewTask("a", b"x"), NewTask("b", b"x", ["a"])], ["b"]))
        >>> s.explain("b")
        "waiting for 1 input: 'a' (no-worker)"
        >>> s.explain("a")
        'no worker can run it: no workers are connected'
        >>> _ = s.handle(AddWorker("tcp://w:1", nthreads=1)); s.explain("a")
        'running on tcp://w:1 (1 task there for 1 thread)'
        """
        ts = self.tasks.get(key)
        if ts is None:
            return "the scheduler does not know this key (never submitted, or forgotten)"
        state = ts.state
        if state == "waiting":
            inputs = sorted(ts.waiting_on, key=lambda d: d.key)
            shown = ", ".join(f"{d.key!r} ({self._where(d)})" for d in inputs[:5])
            more = f" and {len(inputs) - 5} more" if len(inputs) > 5 else ""
            return f"waiting for {len(inputs)} input{'s' if len(inputs) != 1 else ''}: {shown}{more}"
        if state in ("queued", "no-worker"):
            reason = self.who_can_run(key)["reason"]
            return f"no worker can run it: {reason}" if state == "no-worker" else f"queued: {reason}"
        if state == "processing":
            return self._where(ts)
        if state == "memory":
            holders = sorted(ws.address for ws in ts.who_has)
            return f"in memory on {', '.join(holders[:5])}" + (f" and {len(holders) - 5} more" if len(holders) > 5 else "")
        if state == "erred":
            text = ts.exception_text or "an error"
            blame = ts.exception_blame
            return f"failed: {text}" + (f" (the error of its input {blame.key!r})" if blame is not None and blame is not ts else "")
        if state == "released":
            return "released: no client holds a future of it and no task needs it now"
        return state

    def _where(self, ts: TaskState) -> str:
        """A task's state, and for a task sent to a worker where and how busy that worker is."""
        ws = ts.processing_on
        if ts.state != "processing" or ws is None:
            return ts.state
        n = len(ws.processing)
        load = f"{n} task{'s' if n != 1 else ''} there for {ws.nthreads} thread{'s' if ws.nthreads != 1 else ''}"
        if ws.status != "running":
            return f"sent to {ws.address}, which is {ws.status} and starts nothing new ({load})"
        return f"running on {ws.address} ({load})" if n <= ws.nthreads else f"sent to {ws.address} ({load})"


    def _valid_worker(self, ts: TaskState, ws: WorkerState) -> bool:
        if ts.worker_restrictions and not ts.loose:
            if not (ws.address in ts.worker_restrictions or ws.name in ts.worker_restrictions
                    or ws.host in ts.worker_restrictions or str(ws.name) in ts.worker_restrictions
                    or (ws.hostname is not None and ws.hostname in ts.worker_restrictions)):
                return False
        if ts.resources:
            for r, amount in ts.resources.items():
                if ws.resources.get(r, 0) < amount:
                    return False
        return True

    def _valid_workers_exist(self, ts: TaskState) -> bool:
        return any(self._valid_worker(ts, ws) for ws in self.workers.values())

    def _slots(self, ws: WorkerState) -> float:
        """Root tasks ``ws`` may run at once (``worker_saturation`` per thread)."""
        if math.isinf(self.worker_saturation):
            return math.inf
        return max(math.ceil(ws.nthreads * self.worker_saturation), 1)

    def _pipelined_slots(self, ws: WorkerState) -> float:
        """Slots of ``ws`` for root tasks known to be tiny (``_pipelined``)."""
        return self._slots(ws) + ws.nthreads * PIPELINE_DEPTH

    def _pipelined(self, ts: TaskState) -> bool:
        """A root task known to be tiny (fast, small result): worth queueing on the worker."""
        if ts.resources or ts.limits:
            return False
        duration = self.durations.get(ts.group)
        return (duration is not None and duration < PIPELINE_SECONDS
                and 0 <= self.largest_result.get(ts.group, -1) <= PIPELINE_NBYTES)

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
        """Best worker for a runnable task, or None when it must wait (queue or no-worker).

        The best by ``_cost`` among all running valid workers, found without scanning them
        all (``load.py``): a worker holding none of the task's inputs must move all of
        them, so among those only the least loaded can win; the others to weigh are the
        holders of its inputs. Tasks restricted to workers or needing resources weigh
        every worker that qualifies.
        """
        if not self._limits_allow(ts):
            return None
        load = self._load
        if self._queue_first(ts):
            free = load.free_pipelined if self._pipelined(ts) else load.free
            if not free:
                return None  # queued kinds only go where a slot is free now
            if ts.worker_restrictions or ts.resources:
                candidates = [ws for ws in free if self._valid_worker(ts, ws) and self._resources_free(ts, ws)]
                if not candidates and ts.worker_restrictions and ts.loose and not self._valid_running(ts):
                    candidates = [ws for ws in free if self._resources_free(ts, ws)]
            elif len(free) <= 8:
                candidates = list(free)
            else:
                candidates = self._holders_and_least_loaded(ts, free)
        elif ts.worker_restrictions or ts.resources:
            candidates = self._valid_running(ts)
            if not candidates and ts.worker_restrictions and ts.loose:
                candidates = [ws for ws in self.workers.values() if ws.status == "running"]
        else:
            candidates = self._holders_and_least_loaded(ts)
        if len(candidates) < 2:  # (on a wide cluster the usual case for a root task: no cost to weigh)
            return candidates[0] if candidates else None
        return min(candidates, key=lambda ws: self._cost(ts, ws))

    def _valid_running(self, ts: TaskState) -> list[WorkerState]:
        return [ws for ws in self.workers.values() if ws.status == "running" and self._valid_worker(ts, ws)]

    def _holders_and_least_loaded(self, ts: TaskState, among: set | None = None) -> list[WorkerState]:
        """The running holders of ``ts``'s inputs and the least loaded other worker (in ``among``).

        For a task any worker may run these hold the best by ``_cost``: every other worker
        must move all the inputs, so of those only the least loaded can win.
        """
        holders = {ws for d in ts.dependencies for ws in d.who_has
                   if ws.status == "running" and (among is None or ws in among)}
        it = self._load.by_load()
        try:
            other = next((ws for ws in it if ws not in holders and (among is None or ws in among)), None)
        finally:
            it.close()
        return [*holders, other] if other is not None else list(holders)

    def _cost(self, ts: TaskState, ws: WorkerState) -> tuple:
        missing = sum(max(d.nbytes, 0) for d in ts.dependencies if ws not in d.who_has)
        occupancy = ws.occupancy / ws.nthreads
        pref = 0 if (not ts.worker_restrictions or not ts.loose or self._valid_worker_strict(ts, ws)) else 1
        busy = len(ws.processing) - len(ws.long_running)
        return (pref, missing / self.bandwidth + occupancy, busy / ws.nthreads, ws.address)

    def _valid_worker_strict(self, ts: TaskState, ws: WorkerState) -> bool:
        r = ts.worker_restrictions
        return (ws.address in r or ws.name in r or ws.host in r or str(ws.name) in r
                or (ws.hostname is not None and ws.hostname in r))

    def _fill_slots(self, sid: str) -> None:
        """Hand queued root tasks to workers with free slots, highest priority first."""
        if not self._freed_slots and not self._queue_grew:
            return  # no slot freed and nothing queued since the last pass: nothing can move
        self._freed_slots.clear()
        self._queue_grew = False
        load = self._load
        if not self._queued_count or not load.free_pipelined:
            return
        skipped: list = []
        while self.queued and (load.free or (load.free_pipelined and self._pipelined(self.queued[0][2]))):
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
