"""Workers by load: the index that keeps placement and stealing cost flat in the cluster's width.

Placement asks "which running worker is least loaded (and not one of these few)?" and
"is any worker's slot free?"; stealing asks "which workers have a free thread, which
have more tasks than threads?". Answering by scanning every worker made the scheduler's
CPU per task grow linearly with the number of workers (the simulator measured 80 µs per
task at 10 workers, 1,739 µs at 1,000). This index answers from sets and a heap kept up
to date each time a worker's processing, seceded tasks or status change (``update``), so
each answer costs about the log of the width, not the width.

The order is the one placement's cost uses for a worker holding none of a task's
inputs: ``(occupancy / nthreads, busy / nthreads, address)``, where ``busy`` counts
processing tasks that hold a thread (not seceded). The heap is lazy: an update pushes a
new entry and the old one is skipped when met; it is rebuilt when stale entries outnumber
live ones.

>>> from xsched.scheduler.state.entities import WorkerState
>>> idx = WorkerLoad(slots=lambda ws: ws.nthreads, pipelined_slots=lambda ws: 2 * ws.nthreads)
>>> a, b = (WorkerState(f"tcp://{n}", 1, None, None, {}, None, None) for n in "ab")
>>> idx.update(a); idx.update(b)
>>> a.occupancy = 3.0; idx.update(a)
>>> [ws.address for ws in idx.by_load()], [ws.address for ws in idx.by_load(idle=True)]
(['tcp://b', 'tcp://a'], ['tcp://b', 'tcp://a'])
"""

from __future__ import annotations

import heapq
from typing import Callable, Iterable, Iterator

from .entities import WorkerState


def _busy(ws: WorkerState) -> int:
    return len(ws.processing) - len(ws.long_running)


class WorkerLoad:
    """Running workers ordered by load, and the idle, saturated and free-slot sets.

    ``slots(ws)`` and ``pipelined_slots(ws)`` give a worker's slot counts for queued
    root tasks (``placement.py``); they are read at each ``update``.
    """

    def __init__(self, slots: Callable[[WorkerState], float],
                 pipelined_slots: Callable[[WorkerState], float]):
        self._slots = slots
        self._pipelined_slots = pipelined_slots
        self._heap: list[tuple] = []
        self._idle_heap: list[tuple] = []  # the entries of idle workers, in the same order
        self._entry: dict[WorkerState, tuple] = {}  # running worker -> its live heap entry
        self.idle: set[WorkerState] = set()  # running, a thread free
        self.saturated: set[WorkerState] = set()  # more tasks than it will run now
        self.free: set[WorkerState] = set()  # running, a root-task slot free
        self.free_pipelined: set[WorkerState] = set()  # running, a slot for tiny root tasks free

    def update(self, ws: WorkerState) -> None:
        """Re-file ``ws`` after its processing, seceded tasks or status changed."""
        busy = _busy(ws)
        running = ws.status == "running"
        _file(self.idle, ws, running and busy < ws.nthreads)
        # a paused or retiring worker starts nothing new: all its waiting tasks may go
        _file(self.saturated, ws, busy > (ws.nthreads if running else 0))
        _file(self.free, ws, running and busy < self._slots(ws))
        _file(self.free_pipelined, ws, running and busy < self._pipelined_slots(ws))
        if not running:
            self._entry.pop(ws, None)
            return
        entry = (ws.occupancy / ws.nthreads, busy / ws.nthreads, ws.address, ws)
        old = self._entry.get(ws)
        if old is not None and old[:2] == entry[:2]:
            return
        self._entry[ws] = entry
        heapq.heappush(self._heap, entry)
        if ws in self.idle:
            heapq.heappush(self._idle_heap, entry)
        if len(self._heap) > 2 * len(self._entry) + 64:
            self._heap = list(self._entry.values())
            heapq.heapify(self._heap)
        if len(self._idle_heap) > 2 * len(self.idle) + 64:  # mostly stale: rebuild from the idle ones,
            entry_of = self._entry                           # O(idle), not O(workers)
            self._idle_heap = [entry_of[w] for w in self.idle if w in entry_of]
            heapq.heapify(self._idle_heap)

    def remove(self, ws: WorkerState) -> None:
        """Forget ``ws`` (it left the cluster)."""
        self._entry.pop(ws, None)
        for s in (self.idle, self.saturated, self.free, self.free_pipelined):
            s.discard(ws)

    def clear(self) -> None:
        """Forget every worker (a restart)."""
        self._heap.clear()
        self._idle_heap.clear()
        self._entry.clear()
        for s in (self.idle, self.saturated, self.free, self.free_pipelined):
            s.clear()

    def by_load(self, idle: bool = False) -> Iterator[WorkerState]:
        """Running workers (``idle``: only those with a free thread), least loaded first;
        stop iterating early to pay only for what is read.

        Entries read are popped and pushed back when the iteration ends (or is abandoned).
        """
        heap, entry_of = (self._idle_heap if idle else self._heap), self._entry
        taken: list[tuple] = []
        try:
            while heap:
                entry = heapq.heappop(heap)
                if entry_of.get(entry[3]) is not entry or (idle and entry[3] not in self.idle):
                    continue  # stale: the worker was re-filed, left, or is busy now
                taken.append(entry)
                yield entry[3]
        finally:
            for entry in taken:
                heapq.heappush(heap, entry)

    def check(self, workers: Iterable[WorkerState]) -> None:
        """Assert that the index files exactly ``workers`` as a fresh look would (validation)."""
        fresh = WorkerLoad(self._slots, self._pipelined_slots)
        for ws in workers:
            fresh.update(ws)
        for name in ("idle", "saturated", "free", "free_pipelined"):
            got, want = getattr(self, name), getattr(fresh, name)
            assert got == want, f"load index: {name} {sorted(w.address for w in got)} != {sorted(w.address for w in want)}"
        assert {ws: e[:3] for ws, e in self._entry.items()} == {ws: e[:3] for ws, e in fresh._entry.items()}, \
            "load index: the order of running workers drifted"
        live = {id(e) for e in self._entry.values()}
        assert len(live & {id(e) for e in self._heap}) == len(live), "load index: a live entry left the heap"
        idle = {id(e) for w, e in self._entry.items() if w in self.idle}
        assert len(idle & {id(e) for e in self._idle_heap}) == len(idle), "load index: an idle worker left its heap"

    def __len__(self) -> int:
        return len(self._entry)


def _file(members: set, ws: WorkerState, belongs: bool) -> None:
    if belongs:
        members.add(ws)
    else:
        members.discard(ws)
