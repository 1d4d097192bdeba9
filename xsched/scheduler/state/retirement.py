"""Graceful retirement: a worker leaves only once what it alone holds is copied elsewhere.

A retiring worker (status ``retiring``, ``RetireWorkers``) gets no new tasks and lets its
processing tasks finish. Every key it holds that no other non-retiring worker holds is
copied first (``acquire-replicas`` to the running worker with the most free memory, else
the fewest bytes held). Once it holds no such key and processes nothing, it is told
``close-worker`` and removed: nothing is recomputed. With no other worker to take its data
it is not retired (``WorkerRetired(status="cannot-retire")``) and keeps running; a retiring
worker that dies is handled as any lost worker.

A mixin of ``SchedulerState`` (``machine.py``); its tables are ``retiring`` (address ->
``Retirement``) and ``replicating`` (key -> the worker asked to copy it).

>>> from xsched.scheduler.state import SchedulerState, AddWorker, RetireWorkers
>>> s = SchedulerState()
>>> _ = s.handle(AddWorker("tcp://a", nthreads=1), AddWorker("tcp://b", nthreads=1))
>>> [(r.worker, r.status) for r in s.handle(RetireWorkers(["tcp://a"])) if hasattr(r, "status")]
[('tcp://a', 'retired')]
"""

from __future__ import annotations

import math
from collections import defaultdict

from ...protocol import ops
from .entities import Retirement, TaskState, WorkerState
from .events import RemoveWorker, RetireWorkers, ToWorker, WorkerRetired


class Retiring:
    """Retirement of workers, progressed after every event (a mixin of ``SchedulerState``)."""

    def workers_to_close(self) -> list[str]:
        """Workers a ``retire_workers()`` without names retires: the idle ones (nothing
        processing, not already retiring), fewest bytes held first, always keeping the one
        holding the most data when every running worker is idle."""
        running = [ws for ws in self.workers.values() if ws.status in ("running", "paused")]
        idle = sorted((ws for ws in running if not ws.processing), key=lambda ws: (ws.nbytes, ws.address))
        if idle and len(idle) == len(running):
            idle = idle[:-1]
        return [ws.address for ws in idle]

    def _ev_retire_workers(self, ev: RetireWorkers) -> dict:
        for name in ev.workers:
            addr = self.resolve_worker(name)
            if addr is None:
                self._out.append(WorkerRetired(str(name), "unknown", {}, f"no worker {name!r} is connected",
                                               ev.stimulus_id))
                continue
            r = self.retiring.get(addr)
            if r is not None:  # already retiring: one outcome answers every request
                r.close = r.close or ev.close
                continue
            ws = self.workers[addr]
            previous = ws.status if ws.status in ("running", "paused") else "running"
            self.retiring[addr] = Retirement(addr, ev.close, previous, ev.stimulus_id)
            ws.status = "retiring"
            self._freed_slots.discard(ws)
            self._load.update(ws)
            self._release_claims(ws)
        return {}

    def _safe_holder(self, ws: WorkerState) -> bool:
        """A worker that keeps its data: connected and not retiring or retired."""
        return ws.status in ("running", "paused")

    def _needs_moving(self, ts: TaskState) -> bool:
        return not any(self._safe_holder(w) for w in ts.who_has)

    def _progress_retirements(self, sid: str) -> None:
        """After every event: copy what retiring workers alone hold, close the drained ones."""
        for key, dest in list(self.replicating.items()):
            ts, dws = self.tasks.get(key), self.workers.get(dest)
            if (ts is None or ts.state != "memory" or dws is None or not self._safe_holder(dws)
                    or not self._needs_moving(ts)):
                del self.replicating[key]  # done, no longer needed, or its destination left
        planned: dict[str, int] = defaultdict(int)
        for key, dest in self.replicating.items():
            planned[dest] += max(self.tasks[key].nbytes, 0)
        requests: dict[str, list[TaskState]] = defaultdict(list)
        for addr in sorted(self.retiring):
            r = self.retiring[addr]
            ws = self.workers.get(addr)
            if ws is None:
                del self.retiring[addr]
                self._out.append(WorkerRetired(addr, "lost", self._moved(r), "the worker left while retiring: "
                                               "what it alone held is recomputed as for any lost worker", sid))
                continue
            unique = sorted(ts for ts in ws.has_what if self._needs_moving(ts))
            targets = [w for w in self.workers.values() if w.status == "running"]
            if (unique or ws.processing) and not targets:
                if any(w.status == "paused" for w in self.workers.values()):
                    continue  # a paused worker fetches nothing now, but may resume
                what = (f"the {len(unique)} keys only it holds" if unique
                        else f"the results of its {len(ws.processing)} running tasks")
                self._cancel_retirement(r, ws, f"no other running worker can take {what}; "
                                               "it keeps them and stays", sid)
                continue
            if unique:
                for ts in unique:
                    if ts.key in self.replicating:
                        continue
                    dest = min(targets, key=lambda w: self._destination_cost(w, planned))
                    planned[dest.address] += max(ts.nbytes, 0)
                    self.replicating[ts.key] = r.requested[ts.key] = dest.address
                    requests[dest.address].append(ts)
                continue
            if ws.processing:
                continue  # its running tasks finish first (their results are then moved)
            del self.retiring[addr]
            moved = self._moved(r)
            if r.close:
                self._out.append(ToWorker(addr, {"op": ops.CLOSE_WORKER, "reason": "retired"}))
                self._transitions(self._ev_remove_worker(RemoveWorker(addr, "retired", sid)), sid)
                self._out.append(WorkerRetired(addr, "retired", moved, "", sid))
            else:
                ws.status = "retired"
                self._load.update(ws)
                self._out.append(WorkerRetired(addr, "drained", moved, "", sid))
        for dest, tss in requests.items():
            self._out.append(ToWorker(dest, acquire_replicas_msg(tss, sid)))

    def _destination_cost(self, ws: WorkerState, planned: dict) -> tuple:
        held = ws.nbytes + planned.get(ws.address, 0)
        free = (ws.memory_limit - held) if ws.memory_limit else math.inf
        return (-free, held, ws.address)

    def _moved(self, r: Retirement) -> dict:
        out = {}
        for key, dest in r.requested.items():
            ts, dws = self.tasks.get(key), self.workers.get(dest)
            if ts is not None and dws is not None and dws in ts.who_has:
                out[key] = dest
        return out

    def _cancel_retirement(self, r: Retirement, ws: WorkerState, reason: str, sid: str) -> None:
        del self.retiring[r.worker]
        ws.status = r.previous_status
        self._freed_slots.add(ws)
        self._load.update(ws)
        for key, dest in r.requested.items():
            if self.replicating.get(key) == dest:
                del self.replicating[key]
        self._out.append(WorkerRetired(r.worker, "cannot-retire", self._moved(r), reason, sid))

    HANDLERS = {RetireWorkers: _ev_retire_workers}


def acquire_replicas_msg(tss: list[TaskState], sid: str) -> dict:
    """The ``acquire-replicas`` asking a worker to copy ``tss`` from their holders (retirement,
    and replicate/rebalance in ``replication.py``); it answers ``add-keys`` once it has them.

    >>> sorted(acquire_replicas_msg([], "s"))
    ['nbytes', 'op', 'priority', 'stimulus_id', 'who_has']
    """
    return {
        "op": ops.ACQUIRE_REPLICAS, "stimulus_id": sid,
        "who_has": {ts.key: sorted(w.address for w in ts.who_has) for ts in tss},
        "nbytes": {ts.key: ts.nbytes for ts in tss},
        "priority": {ts.key: list(ts.priority) for ts in tss},
    }
