"""Work stealing: idle workers take queued-up tasks from saturated ones when it pays.

After every event (``work_stealing=True``, config ``scheduler.work-stealing``), a running
worker with a free slot takes tasks from a worker that has more tasks than threads, lowest
priority first, when the copy of the inputs it lacks costs little against the task's
expected duration (learned per task prefix from the time its tasks held a thread; time
spent seceded is not work): ``transfer + STEAL_LATENCY < duration * STEAL_RATIO``. Tasks
restricted to workers, needing resources, or seceded are never stolen. A steal is a
request: the victim answers (``StealResponse``) whether it still had the task waiting;
only then is the task moved (``processing`` on the victim -> ``processing`` on the thief,
logged), so a task never runs twice because of a steal.

A mixin of ``SchedulerState`` (``machine.py``); its tables are ``stealing`` (key ->
(victim, thief) of a request in flight), ``_started`` (keys a victim said it runs) and
``steal_counts``.

>>> STEAL_LATENCY < 0.01 and 0 < STEAL_RATIO < 1
True
"""

from __future__ import annotations

import heapq
from collections import defaultdict

from ...protocol import ops
from .entities import TaskState, WorkerState
from .events import StealResponse, ToWorker

#: Seconds a steal costs beyond the data transfer (the request's round trip).
STEAL_LATENCY = 0.002
#: Steal when transfer + latency is below this fraction of the task's expected duration.
STEAL_RATIO = 0.5


class WorkStealing:
    """Steal requests after each event, and the victims' answers (a mixin of ``SchedulerState``)."""

    def _stealable(self, ts: TaskState, victim: WorkerState, thief: WorkerState) -> bool:
        if (ts.worker_restrictions or ts.resources or ts in victim.long_running or ts.key in self.stealing
                or ts.key in self._started):
            return False
        return self._steal_cost(ts, thief) < self.durations.get(ts.group, self.unknown_duration) * STEAL_RATIO

    def _steal_cost(self, ts: TaskState, thief: WorkerState) -> float:
        missing = sum(max(d.nbytes, 0) for d in ts.dependencies if thief not in d.who_has)
        return missing / self.bandwidth + STEAL_LATENCY

    def _steal(self, sid: str) -> None:
        """Idle running workers ask saturated ones for their lowest-priority waiting tasks."""
        workers = self.workers.values()
        if len(self.workers) < 2:
            return
        incoming: dict[str, int] = defaultdict(int)
        outgoing: dict[str, int] = defaultdict(int)
        for victim_addr, thief_addr in self.stealing.values():
            outgoing[victim_addr] += 1
            incoming[thief_addr] += 1
        thieves, victims = [], []
        for ws in workers:  # (this runs after every event: no defaultdict entries made here)
            busy = len(ws.processing) - len(ws.long_running)
            running = ws.status == "running"
            if running:
                free = ws.nthreads - busy - incoming.get(ws.address, 0)
                if free > 0:
                    thieves.append((ws, free))
            # a paused or retiring worker starts nothing new: all its waiting tasks may go
            if busy - (ws.nthreads if running else 0) - outgoing.get(ws.address, 0) > 0:
                victims.append(ws)
        if not thieves or not victims:
            return
        for thief, free in thieves:
            for victim in sorted(victims, key=lambda v: (-(v.occupancy / v.nthreads), v.address)):
                if victim is thief or free <= 0:
                    continue
                keep = victim.nthreads if victim.status == "running" else 0
                spare = len(victim.processing) - len(victim.long_running) - keep - outgoing[victim.address]
                if spare <= 0:
                    continue
                picks = heapq.nlargest(min(free, spare), (ts for ts in victim.processing
                                                          if self._stealable(ts, victim, thief)))
                for ts in picks:
                    self.stealing[ts.key] = (victim.address, thief.address)
                    outgoing[victim.address] += 1
                    free -= 1
                    self.steal_counts["requested"] += 1
                    self._out.append(ToWorker(victim.address, {"op": ops.STEAL_REQUEST, "key": ts.key,
                                                               "stimulus_id": sid}))

    def _ev_steal_response(self, ev: StealResponse) -> dict:
        entry = self.stealing.get(ev.key)
        if entry is None or entry[0] != ev.worker:
            return {}  # the task finished, failed or moved meanwhile: nothing to do
        del self.stealing[ev.key]
        ts, victim = self.tasks.get(ev.key), self.workers.get(ev.worker)
        if ts is None or victim is None or ts.state != "processing" or ts.processing_on is not victim:
            return {}
        if ev.state not in ("ready", "waiting", "released", None):
            self.steal_counts["kept"] += 1
            self._started.add(ts.key)
            return {}  # it started there (or finished): it stays
        self._release_processing(ts, victim)  # the victim dropped it
        thief = self.workers.get(entry[1])
        if thief is None or thief.status != "running" or not self._valid_worker(ts, thief):
            thief = self._decide_worker(ts)
        if thief is None:
            return {ts.key: "released"}  # nowhere to go now: it waits (queued or no-worker)
        self.steal_counts["moved"] += 1
        self._log(ts.key, "processing", "processing", ev.stimulus_id)  # moved: victim -> thief
        self._send_compute(ts, thief)
        return {}

    HANDLERS = {StealResponse: _ev_steal_response}
