"""The ``shuffle`` extension: which worker builds which output of a p2p shuffle, and its restarts.

The p2p shuffle (``xsched/graph/p2p.py``, ``xsched/worker/shuffle.py``) moves pieces worker
to worker; the scheduler only decides where they go and starts again when some are lost.
See ``base.py`` for the extension protocol.

Data flow::

    a transfer task --shuffle-get {id, n_in, n_out, out, grid?}--> first time: a run (a number never
        used before) over the running workers, outputs dealt to them in turn; every output
        task restricted to its worker (RestrictTasks) -> reply {run, workers}
    a worker taking part leaves (remove_worker) while the shuffle is on, or a task finds its
        run's pieces incomplete (shuffle-restart {id, run}) -> a new run over the workers
        there now: shuffle-forget {id, run} to every worker (older pieces dropped and
        refused), the outputs not built yet restricted anew, and the transfers and the
        barrier computed again (RecomputeKeys; their inputs are recomputed as needed)
    the barrier leaves memory (every output built) or is forgotten (nobody wants the result)
        -> transition hook notes it -> on the loop: shuffle-forget to every worker, the record goes
        (the hook is in the state's transition hooks only while a shuffle is under way: other
        work pays nothing for it)

A shuffle's record exists from its first shuffle-get to its end; an output lost after the
end is recomputed through the barrier, whose transfers then ask again and start a new run.

>>> from xsched.graph.p2p import owner
>>> [owner(j, ["tcp://a", "tcp://b"]) for j in range(3)]
['tcp://a', 'tcp://b', 'tcp://a']
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from dataclasses import dataclass, field

from ...graph.p2p import barrier_key, output_keys, owner, transfer_key
from ...protocol import ops
from ..state import RecomputeKeys, RestrictTasks
from .base import SchedulerExtension

__all__ = ["ShuffleExtension", "ShuffleRecord"]

logger = logging.getLogger("xsched.scheduler.shuffle")


@dataclass
class ShuffleRecord:
    """One shuffle under way: its current run and the workers its outputs are dealt to."""

    id: str
    n_in: int
    n_out: int
    out: str
    run: int
    workers: list
    restarts: int = 0
    outputs: list = field(default_factory=list)

    def transfers(self) -> list[str]:
        return [transfer_key(self.id, i) for i in range(self.n_in)]


class ShuffleExtension(SchedulerExtension):
    """Runs of p2p shuffles: their workers, restrictions and restarts."""

    name = "shuffle"

    def __init__(self, scheduler):
        super().__init__(scheduler)
        self.shuffles: dict[str, ShuffleRecord] = {}
        self._barriers: dict[str, str] = {}  # barrier key -> shuffle id
        self._runs = itertools.count(1)  # run numbers are never reused
        self._ended: list[str] = []  # shuffle ids whose barrier left memory, to end on the loop
        self._armed = False
        self._restarting = False
        self._hooked = False

    def __repr__(self) -> str:
        return f"<ShuffleExtension shuffles={len(self.shuffles)}>"

    # ------------------------------------------------------------------ ops
    def _op_get(self, peer, h, payload) -> dict:
        record = self.shuffles.get(h["id"])
        if record is None:
            why = self._why_not(h)
            if why:
                return {"error": why}
            try:
                record = self._start(h["id"], h["n_in"], h["n_out"], h["out"], h.get("grid"))
            except ValueError as e:  # (a grid that is not n_out blocks)
                return {"error": str(e)}
        return {"run": record.run, "workers": record.workers}

    def _op_restart(self, peer, h, payload) -> dict:
        record = self.shuffles.get(h["id"])
        if record is not None and record.run == h["run"]:
            self._restart(record, h.get("why") or "a task found the run's pieces incomplete")
        return {}

    # ------------------------------------------------------------------ runs
    def _why_not(self, h: dict) -> str | None:
        tasks = self.scheduler.state.tasks
        if barrier_key(h["id"]) not in tasks:
            return "no longer wanted (its barrier task is gone)"
        if not self._running_workers():
            return "no running worker to send pieces to"
        return None

    def _running_workers(self) -> list[str]:
        return sorted(a for a, ws in self.scheduler.state.workers.items() if ws.status == "running")

    def _start(self, shuffle_id: str, n_in: int, n_out: int, out: str, grid: list | None = None) -> ShuffleRecord:
        outputs = output_keys(out, n_out, grid)
        record = ShuffleRecord(shuffle_id, n_in, n_out, out, next(self._runs), self._running_workers(),
                               outputs=outputs)
        self.shuffles[shuffle_id] = record
        self._barriers[barrier_key(shuffle_id)] = shuffle_id
        self._hook(True)
        self.scheduler.handle(RestrictTasks(self._restrictions(record)))
        return record

    def _restrictions(self, record: ShuffleRecord) -> dict:
        tasks = self.scheduler.state.tasks
        return {key: [owner(j, record.workers)] for j, key in enumerate(record.outputs)
                if key in tasks and tasks[key].state != "memory"}

    def _restart(self, record: ShuffleRecord, why: str) -> None:
        workers = self._running_workers()
        if not workers:  # nobody to send to: the next shuffle-get starts it when workers come
            self._end(record.id)
            return
        record.run, record.workers = next(self._runs), workers
        record.restarts += 1
        logger.info("shuffle %s: run %d over %d workers (%s)", record.id, record.run, len(workers), why)
        self._forget_everywhere(record.id, record.run)
        self._restarting = True
        try:
            self.scheduler.handle(RecomputeKeys(record.transfers() + [barrier_key(record.id)]))
        finally:
            self._restarting = False
        self.scheduler.handle(RestrictTasks(self._restrictions(record)))

    def _forget_everywhere(self, shuffle_id: str, run: int) -> None:
        msg = {"op": ops.SHUFFLE_FORGET, "id": shuffle_id, "run": run}
        for peer in list(self.scheduler.worker_peer.values()):
            self.scheduler.listener.send(peer, msg)

    def _end(self, shuffle_id: str) -> None:
        record = self.shuffles.pop(shuffle_id, None)
        if record is None:
            return
        self._barriers.pop(barrier_key(shuffle_id), None)
        self._forget_everywhere(shuffle_id, record.run + 1)
        if not self.shuffles:
            self._hook(False)

    def _hook(self, on: bool) -> None:
        """Watch the state's transitions (for barriers) only while a shuffle is under way."""
        if on != self._hooked:
            hooks = self.scheduler.state.transition_hooks
            if on:
                hooks.append(self._barrier_moved)
            else:
                hooks.remove(self._barrier_moved)
            self._hooked = on

    # ------------------------------------------------------------------ hooks
    def _barrier_moved(self, ts, start, finish) -> None:
        if self._restarting or ts.key not in self._barriers:
            return
        if start == "memory" or finish == "forgotten":
            self._ended.append(self._barriers[ts.key])
            if not self._armed:
                try:
                    loop = asyncio.get_running_loop()
                except RuntimeError:  # (no loop: a test drives the state; it calls end_finished)
                    return
                self._armed = True
                loop.call_soon(self.end_finished)

    def end_finished(self) -> None:
        """End the shuffles whose barrier left memory (called on the loop after the transitions)."""
        self._armed = False
        ended, self._ended = self._ended, []
        for shuffle_id in ended:
            ts = self.scheduler.state.tasks.get(barrier_key(shuffle_id))
            if ts is not None and ts.state in ("waiting", "processing", "no-worker"):
                continue  # computed again since (an output was lost): the shuffle goes on
            self._end(shuffle_id)

    def remove_worker(self, address: str, reason: str) -> None:
        for record in list(self.shuffles.values()):
            if address in record.workers:
                if barrier_key(record.id) not in self.scheduler.state.tasks:
                    self._end(record.id)
                else:
                    self._restart(record, f"worker {address} left ({reason})")

    def restart(self, reason: str) -> None:
        self.shuffles.clear()
        self._barriers.clear()
        self._ended.clear()
        self._hook(False)

    def close(self) -> None:
        self._hook(False)
        super().close()

    OPS = {ops.SHUFFLE_GET: _op_get, ops.SHUFFLE_RESTART: _op_restart}
