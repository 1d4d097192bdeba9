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
(victim, thief) of a request in flight, counted per victim and thief: ``StealsInFlight``),
``_started`` (keys a victim said it runs), ``_stealable`` (worker -> its tasks worth moving,
judged when they were sent to it), ``_victims`` (the saturated workers with a task to spare
now) and ``steal_counts``. Idle and saturated workers come from the load index
(``load.py``). ``_victims`` is kept by looking again only at the workers touched since the
last pass (the index's ``touched``, and the victims whose requests in flight changed), so a
pass costs what changed, not the number of saturated workers: on a wide cluster's tail
thousands are saturated and none has a task that is not asked for already.

>>> STEAL_LATENCY < 0.01 and 0 < STEAL_RATIO < 1
True
"""

from __future__ import annotations

import heapq

from ...protocol import ops
from .entities import TASK_ORDER, TaskState, WorkerState
from .events import StealResponse, ToWorker
from .load import SATURATED

#: Seconds a steal costs beyond the data transfer (the request's round trip).
STEAL_LATENCY = 0.002
#: Steal when transfer + latency is below this fraction of the task's expected duration.
STEAL_RATIO = 0.5
#: (``_steal``: no thief looked for yet)
_UNASKED = object()


class StealsInFlight(dict):
    """key -> (victim, thief) of each steal request in flight, with the requests per victim
    (``outgoing``) and per thief (``incoming``) kept as entries come and go, so that a pass
    reads them instead of counting every request in flight after every event.

    >>> s = StealsInFlight(); s["a"] = ("tcp://v", "tcp://t"); s["b"] = ("tcp://v", "tcp://u")
    >>> s.outgoing, s.incoming["tcp://t"]
    ({'tcp://v': 2}, 1)
    >>> _ = s.pop("a"); del s["b"]; s.outgoing, s.incoming, sorted(s.touched)
    ({}, {}, ['tcp://v'])
    """

    def __init__(self) -> None:
        super().__init__()
        self.outgoing: dict[str, int] = {}
        self.incoming: dict[str, int] = {}
        self.touched: set[str] = set()  # victims whose outgoing count changed since a pass read it

    def _count(self, entry: tuple[str, str], by: int) -> None:
        self.touched.add(entry[0])
        for table, address in ((self.outgoing, entry[0]), (self.incoming, entry[1])):
            n = table.get(address, 0) + by
            if n:
                table[address] = n
            else:
                del table[address]

    def __setitem__(self, key: str, entry: tuple[str, str]) -> None:
        old = self.get(key)
        if old is not None:
            self._count(old, -1)
        super().__setitem__(key, entry)
        self._count(entry, 1)

    def __delitem__(self, key: str) -> None:
        self._count(self[key], -1)
        super().__delitem__(key)

    def pop(self, key: str, *default):
        if key in self:
            entry = super().pop(key)
            self._count(entry, -1)
            return entry
        return super().pop(key, *default)

    def clear(self) -> None:
        super().clear()
        self.outgoing.clear()
        self.incoming.clear()
        self.touched.clear()


class WorkStealing:
    """Steal requests after each event, and the victims' answers (a mixin of ``SchedulerState``)."""

    def _track_stealable(self, ts: TaskState, ws: WorkerState) -> None:
        """``ts`` was sent to ``ws``: file it as a candidate if moving its inputs could pay.

        Judged once, here, for a thief holding none of its inputs (the usual thief), so
        that a pass weighs only tasks worth moving, not every task waiting anywhere; tasks
        too costly to move when placed are not weighed again (a later, longer duration
        estimate does not make them candidates).
        """
        if self.work_stealing and not (ts.worker_restrictions or ts.resources) and self._worth_moving(ts):
            tasks = self._stealable.get(ws)
            if tasks is None:
                tasks = self._stealable[ws] = set()
                self._load.touched.add(ws)  # (it may be a victim now)
            tasks.add(ts)

    def _untrack_stealable(self, ts: TaskState, ws: WorkerState) -> None:
        tasks = self._stealable.get(ws)
        if tasks is not None:
            tasks.discard(ts)
            if not tasks:
                del self._stealable[ws]
                self._load.touched.add(ws)

    def _spare(self, ws: WorkerState) -> int:
        """How many of ``ws``'s waiting tasks could go now: those beyond its threads (all of
        them when it is not running) not asked for already; 0 unless saturated with candidates."""
        if not (ws.load_marks & SATURATED) or ws not in self._stealable:
            return 0
        keep = ws.nthreads if ws.status == "running" else 0
        return (len(ws.processing) - len(ws.long_running) - keep
                - self.stealing.outgoing.get(ws.address, 0))

    def _refresh_victims(self) -> None:
        """Look again at the workers touched since the last pass, and only at them."""
        touched, victims, workers = self._load.touched, self._victims, self.workers
        for address in self.stealing.touched:
            ws = workers.get(address)
            if ws is not None:
                touched.add(ws)
        self.stealing.touched.clear()
        for ws in touched:
            if self._spare(ws) > 0:
                victims.add(ws)
            else:
                victims.discard(ws)
        touched.clear()

    def _worth_moving(self, ts: TaskState) -> bool:
        moved = sum(max(d.nbytes, 0) for d in ts.dependencies)
        duration = self.durations.get(ts.group, self.unknown_duration)
        return moved / self.bandwidth + STEAL_LATENCY < duration * STEAL_RATIO

    def _steal(self, sid: str) -> None:
        """Idle running workers ask saturated ones for their lowest-priority waiting tasks.

        Victims most loaded first; each candidate (``_track_stealable``) goes to the least
        loaded idle worker with a free thread. A pass costs the workers touched since the
        last one, the victims with a task to spare and the thieves used, not idle workers
        times saturated ones: a wide cluster has thousands of each at once.
        """
        load = self._load
        if not self._stealable or not load.idle or not load.saturated or len(self.workers) < 2:
            return  # (this runs after every event: the index's sets answer without a scan)
        self._refresh_victims()
        if not self._victims:
            return  # (every spare task is asked for already: the usual pass at a wide cluster's tail)
        victims = [(-(v.occupancy / v.nthreads), v.address, v, self._spare(v)) for v in self._victims]
        victims.sort(key=lambda v: v[:2])  # most loaded first (addresses are unique: a fixed order)
        thieves = self._thieves(self.stealing.incoming)
        thief, free = _UNASKED, 0  # the idle heap is read only once a task could move
        try:
            for _, _, victim, spare in victims:
                if thief is _UNASKED:  # asked before ranking candidates: most passes that get
                    thief, free = next(thieves, (None, 0))  # here find every idle thread promised
                if thief is None:
                    return
                candidates = (ts for ts in self._stealable[victim]
                              if ts.key not in self.stealing and ts.key not in self._started)
                for ts in heapq.nlargest(spare, candidates, key=TASK_ORDER):  # lowest priority first
                    if thief is None:
                        return
                    if not self._worth_moving(ts):
                        continue  # its kind turned out shorter than when it was placed
                    self.stealing[ts.key] = (victim.address, thief.address)  # (counted per victim there)
                    self.steal_counts["requested"] += 1
                    self._out.append(ToWorker(victim.address, {"op": ops.STEAL_REQUEST, "key": ts.key,
                                                               "stimulus_id": sid}))
                    free -= 1
                    if free <= 0:
                        thief, free = next(thieves, (None, 0))
        finally:
            thieves.close()

    def _thieves(self, incoming: dict):
        """(idle worker, free threads), least loaded first."""
        ordered = self._load.by_load(idle=True)
        try:
            for ws in ordered:
                free = ws.nthreads - len(ws.processing) + len(ws.long_running) - incoming.get(ws.address, 0)
                if free > 0:
                    yield ws, free
        finally:
            ordered.close()

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
