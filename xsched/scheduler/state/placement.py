"""Where a runnable task goes: valid workers, free slots, the queue of root tasks.

The rule users rely on (``docs``: memory): with a finite ``worker_saturation``, a task with
no dependencies, or one that needs resources or a concurrency limit, goes to a worker only
while that worker runs fewer than ``ceil(nthreads * saturation)`` tasks; otherwise it waits
in ``queued``, highest priority first, and ``_fill_slots`` hands it out after every event
(after that event's releases, so a worker frees data before it reads the next chunk).
Tiny root tasks are the exception that keeps threads busy: once a task prefix is known to
run in under ``PIPELINE_SECONDS`` and to return at most ``PIPELINE_NBYTES``, each thread
gets ``PIPELINE_DEPTH`` more of them. Root tasks that feed a common task (``_siblings``)
are claimed in batches of up to ``CLAIM_BATCH``, so neighbours run on one worker. Tasks
with dependencies go where their inputs are, weighed by bytes to move (``bandwidth``) and
by the work queued on each worker.

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
from collections import deque

from .entities import TaskState, WorkerState
from .load import load_order

#: Root tasks of a prefix measured shorter than this (seconds) and returning at most
#: PIPELINE_NBYTES get PIPELINE_DEPTH extra slots per thread: a round trip costs more than
#: running them, and the memory held ahead is at most threads x depth x PIPELINE_NBYTES.
PIPELINE_SECONDS = 0.005
PIPELINE_NBYTES = 64 * 1024
PIPELINE_DEPTH = 4
#: Most queued root tasks a worker claims at once (``_claimed_task``): neighbours stay on
#: one worker, and no worker runs more than this far ahead of the queue's order.
CLAIM_BATCH = 4
#: Tasks feeding more than this many others are not weighed as siblings (``_siblings``):
#: an all-to-all (a shuffle's splits) shares every consumer, and a batch gains it nothing.
SIBLING_FAN = 16


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
            holder = next((w for w, claims in self._claims.items()
                           if any(t is ts and _live(seq, t) for seq, t in claims)), None)
            if holder is not None:
                reason += f"; in the batch of neighbours {holder.address} runs next"
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
        """Hand queued root tasks to workers with free slots, highest priority first, in
        batches (``_claimed_task``) where a batch keeps neighbours together."""
        if not self._freed_slots and not self._queue_grew:
            return  # no slot freed and nothing queued since the last pass: nothing can move
        self._freed_slots.clear()
        self._queue_grew = False
        load = self._load
        if not self._queued_count or not load.free_pipelined:
            return
        skipped: list = []
        while load.free_pipelined:
            head = self._queue_head()
            if head is not None and not self._claimable(head):
                if not (load.free or self._pipelined(head)):
                    break
                ws = self._decide_worker(head)
                if ws is None:
                    skipped.append(heapq.heappop(self.queued))
                    if len(skipped) > 1000:
                        break
                    continue
                ts = self._own_before(ws, head)  # (a batch it claimed comes first)
                if ts is None:
                    ts = head
                    heapq.heappop(self.queued)
            else:
                ws = self._least_loaded_free()
                ts = self._claimed_task(ws, head) if ws is not None else None
                if ts is None:
                    break
            self._transitions({ts.key: ("processing", ws)}, sid)
        for item in skipped:
            heapq.heappush(self.queued, item)
        self._freed_slots.clear()

    # ---------------------------------------------------------------- batches of root tasks
    # Handed out one at a time, neighbouring root tasks (blocks i and i+1 of an array) go
    # to alternate workers as slots free, so every task that joins neighbours (an overlap,
    # a tree reduction's first level) waits for a transfer. A worker instead claims the next
    # few queued tasks in priority order (``CLAIM_BATCH``) and runs them before claiming
    # more: it still runs one slot's worth at a time, and it is never more than a batch
    # ahead of the queue's order, so memory stays as depth first as before. A worker whose
    # batch is done and finds the queue empty takes the last task of a batch another worker
    # holds (from the back, so both keep runs of neighbours). ``_claims`` holds only
    # batches with tasks in them, so none of this scans the workers.

    def _claimable(self, ts: TaskState) -> bool:
        """A plain root task, which any worker may run: batched (tiny, resource-, limit- or
        worker-bound ones go one by one, as ``_decide_worker`` places them)."""
        return not (ts.resources or ts.limits or ts.worker_restrictions) and not self._pipelined(ts)

    def _queue_head(self) -> TaskState | None:
        """The live task atop the queue's heap, stale entries dropped."""
        heap = self.queued
        while heap:
            _, seq, ts = heap[0]
            if _live(seq, ts):
                return ts
            heapq.heappop(heap)
        return None

    def _least_loaded_free(self) -> WorkerState | None:
        free = self._load.free
        if len(free) <= 8:  # (the usual case: a slot or two freed by the last event)
            return min(free, key=load_order, default=None)
        it = self._load.by_load()
        try:
            return next((ws for ws in it if ws in free), None)
        finally:
            it.close()

    def _claimed_task(self, ws: WorkerState, head: TaskState | None) -> TaskState | None:
        """The next root task for ``ws``: the first of its batch, unless the queue's head
        comes first (an older graph, a higher user priority); then a new batch from the
        head; with the queue empty, the last task of a batch another worker holds."""
        first = self._first_claim(ws)
        if first is not None and (head is None or first.priority[:2] <= head.priority[:2]):
            self._drop_first_claim(ws)
            return first
        if head is not None:
            batch = self._take_batch(head)
            if len(batch) > 1:
                self._claims.setdefault(ws, deque()).extendleft(reversed(batch[1:]))
            return batch[0][1]
        # (batches emptied are removed from the table, so the first other worker in it holds
        # one: no scan of the workers, whatever the cluster's width)
        while True:
            victim = next((w for w in self._claims if w is not ws), None)
            if victim is None:
                return None
            claims = self._claims[victim]
            while claims:
                seq, ts = claims.pop()
                if _live(seq, ts):
                    if not claims:
                        del self._claims[victim]
                    return ts
            del self._claims[victim]

    def _own_before(self, ws: WorkerState, head: TaskState) -> TaskState | None:
        """The first task of ``ws``'s batch if it comes before ``head`` and ``ws`` may run it now."""
        first = self._first_claim(ws)
        if first is None or not first.priority < head.priority:
            return None
        if ws not in self._load.free and not self._pipelined(first):
            return None
        self._drop_first_claim(ws)
        return first

    def _first_claim(self, ws: WorkerState) -> TaskState | None:
        """The first task of ``ws``'s batch still queued (entries of tasks gone elsewhere
        dropped, and the batch with them when nothing is left)."""
        claims = self._claims.get(ws)
        while claims:
            seq, ts = claims[0]
            if _live(seq, ts):
                return ts
            claims.popleft()
        self._claims.pop(ws, None)
        return None

    def _drop_first_claim(self, ws: WorkerState) -> None:
        claims = self._claims[ws]
        claims.popleft()
        if not claims:
            del self._claims[ws]

    def _take_batch(self, head: TaskState) -> list[tuple[int, TaskState]]:
        """Pop ``head`` and the next queued tasks of its graph (same user priority and
        generation) off the heap: up to ``CLAIM_BATCH``, fewer when the queue is short
        for the workers there are, so each gets a share."""
        heap, tier = self.queued, head.priority[:2]
        size = min(CLAIM_BATCH, max(1, len(heap) // (2 * max(len(self._load), 1))))
        batch = [heapq.heappop(heap)[1:]]
        while len(batch) < size:
            ts = self._queue_head()
            if (ts is None or ts.priority[:2] != tier or not self._claimable(ts)
                    or not _siblings(batch[-1][1], ts)):
                break
            batch.append(heapq.heappop(heap)[1:])
        return batch

    def _release_claims(self, ws: WorkerState) -> None:
        """Put the batch of a worker that left, paused or retires back in the queue."""
        claims = self._claims.pop(ws, None)
        while claims:
            seq, ts = claims.popleft()
            if _live(seq, ts):
                heapq.heappush(self.queued, (ts.priority, seq, ts))
                self._queue_grew = True


def _live(seq: int, ts: TaskState) -> bool:
    """Whether a queue or batch entry ``(seq, ts)`` still stands for a queued task (a task
    handed out, released or queued again since leaves its old entries behind, skipped)."""
    return ts.state == "queued" and ts.queued_seq == seq


def _near(ts: TaskState) -> set:
    """The tasks ``ts`` feeds, directly or through one task (none past ``SIBLING_FAN``)."""
    near = set()
    if len(ts.dependents) > SIBLING_FAN:
        return near
    for d in ts.dependents:
        near.add(d)
        if len(d.dependents) <= SIBLING_FAN:
            near.update(d.dependents)
    return near


def _siblings(a: TaskState, b: TaskState) -> bool:
    """Whether two root tasks feed a common task within two steps (two blocks one
    reduction sums, a block and the neighbour whose edge it borrows): what a batch
    keeps together. Independent chains (read, process, write) gain nothing by it, and
    would only be held back behind each other.

    >>> a, b, c, j = (TaskState(k, None, (0,)) for k in "abcj")
    >>> a.dependents = {j}; b.dependents = {j}
    >>> _siblings(a, b), _siblings(a, c)
    (True, False)
    """
    near = _near(a)
    return bool(near) and not near.isdisjoint(_near(b))
