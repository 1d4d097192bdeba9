"""Workers by load: the index that keeps placement and stealing cost flat in the cluster's width.

Placement asks "which running worker is least loaded (and not one of these few)?" and
"is any worker's slot free?"; stealing asks "which workers have a free thread, which
have more tasks than threads?". Answering by scanning every worker made the scheduler's
CPU per task grow linearly with the number of workers (the simulator measured 80 µs per
task at 10 workers, 1,739 µs at 1,000). This index answers from sets and a heap kept up
to date each time a worker's processing, seceded tasks or status change (``update``), so
each answer costs about the log of the width, not the width. Which of the sets a worker is
in is also marked on the worker (``WorkerState.load_marks``), so an update that changes no
membership touches no set: a look-up in a set of a thousand workers costs a cache miss, a
worker's own attribute does not.

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


#: the bits of ``WorkerState.load_marks``: the sets of this index a worker is in
IDLE, SATURATED, FREE, FREE_PIPELINED = 1, 2, 4, 8


def _busy(ws: WorkerState) -> int:
    return len(ws.processing) - len(ws.long_running)


def load_order(ws: WorkerState) -> tuple:
    """The index's order of a running worker, least loaded first (a sort key)."""
    return (ws.occupancy / ws.nthreads, _busy(ws) / ws.nthreads, ws.address)


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
        # workers updated or removed since a reader last emptied this: what a set derived
        # from the index (stealing's victims) must look at again, and nothing else
        self.touched: set[WorkerState] = set()

    def _marks(self, ws: WorkerState, busy: int, running: bool) -> int:
        """The sets ``ws`` belongs in, as bits: IDLE, SATURATED, FREE, FREE_PIPELINED."""
        marks = IDLE if running and busy < ws.nthreads else 0
        # a paused or retiring worker starts nothing new: all its waiting tasks may go
        if busy > (ws.nthreads if running else 0):
            marks |= SATURATED
        if running and busy < self._slots(ws):
            marks |= FREE
        if running and busy < self._pipelined_slots(ws):
            marks |= FREE_PIPELINED
        return marks

    def update(self, ws: WorkerState) -> None:
        """Re-file ``ws`` after its processing, seceded tasks or status changed."""
        self.touched.add(ws)
        busy = _busy(ws)
        running = ws.status == "running"
        marks = self._marks(ws, busy, running)
        if marks != ws.load_marks:
            self._refile(ws, marks)
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

    def _refile(self, ws: WorkerState, marks: int) -> None:
        changed = marks ^ ws.load_marks
        for bit, members in ((IDLE, self.idle), (SATURATED, self.saturated), (FREE, self.free),
                             (FREE_PIPELINED, self.free_pipelined)):
            if changed & bit:
                if marks & bit:
                    members.add(ws)
                else:
                    members.discard(ws)
        ws.load_marks = marks

    def remove(self, ws: WorkerState) -> None:
        """Forget ``ws`` (it left the cluster; readers of ``touched`` forget it themselves)."""
        self.touched.discard(ws)
        self._entry.pop(ws, None)
        self._refile(ws, 0)

    def clear(self) -> None:
        """Forget every worker (a restart)."""
        for ws in (*self._entry, *self.idle, *self.saturated, *self.free, *self.free_pipelined):
            ws.load_marks = 0
        self._heap.clear()
        self._idle_heap.clear()
        self._entry.clear()
        for s in (self.idle, self.saturated, self.free, self.free_pipelined, self.touched):
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
        workers = list(workers)
        marks = {ws: self._marks(ws, _busy(ws), ws.status == "running") for ws in workers}
        for ws in workers:
            assert ws.load_marks == marks[ws], f"load index: {ws.address} marked {ws.load_marks}, not {marks[ws]}"
        for name, bit in (("idle", IDLE), ("saturated", SATURATED), ("free", FREE),
                          ("free_pipelined", FREE_PIPELINED)):
            got, want = getattr(self, name), {ws for ws in workers if marks[ws] & bit}
            assert got == want, f"load index: {name} {sorted(w.address for w in got)} != {sorted(w.address for w in want)}"
        order = {ws: load_order(ws)
                 for ws in workers if ws.status == "running"}
        assert {ws: e[:3] for ws, e in self._entry.items()} == order, \
            "load index: the order of running workers drifted"
        live = {id(e) for e in self._entry.values()}
        assert len(live & {id(e) for e in self._heap}) == len(live), "load index: a live entry left the heap"
        idle = {id(e) for w, e in self._entry.items() if w in self.idle}
        assert len(idle & {id(e) for e in self._idle_heap}) == len(idle), "load index: an idle worker left its heap"

    def __len__(self) -> int:
        return len(self._entry)
