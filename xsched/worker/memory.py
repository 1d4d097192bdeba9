"""Memory policy of one worker: when to spill, pause and ask for a restart.

Data flow::

    event loop: every monitor-interval (100 ms)
        rss = psutil (cheap) --> decide(rss, managed) --> actions
            "spill"   -> spill thread: SpillBuffer.evict() until rss < target*limit
            "pause"   -> WorkerState Pause event + worker-status to the scheduler
            "unpause" -> WorkerState Unpause event
            "trim"    -> spill thread: malloc_trim after large releases
        "spill" or "pause" first drops the oldest post-mortem kept for client.debug
        (worker/postmortem.py): a failed task's frames are worth less than live data
    SpillBuffer.__setitem__ (task threads): spills LRU data above target*limit by sizeof

The decision is a pure function (``decide``) so the policy is unit-tested without a
process; the monitor only samples and carries out. Disk writes never run on the loop.
The nanny, not this module, kills the worker above ``terminate``.

>>> t = Thresholds(limit=1000, target=0.6, spill=0.7, pause=0.8, terminate=0.95)
>>> decide(t, rss=850, paused=False, freed=0)
['spill', 'pause']
"""

from __future__ import annotations

import asyncio
import logging
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import psutil

from ..units import format_bytes

logger = logging.getLogger("xsched.worker.memory")

__all__ = ["Thresholds", "decide", "pause_message", "MemoryMonitor"]

TRIM_AFTER_BYTES = 64 * 2**20


@dataclass(frozen=True)
class Thresholds:
    """Byte limits derived from the memory limit and the configured fractions (False = off)."""

    limit: int | None
    target: float | bool = 0.6
    spill: float | bool = 0.7
    pause: float | bool = 0.8
    terminate: float | bool = 0.95

    def bytes(self, name: str) -> float | None:
        frac = getattr(self, name)
        if not self.limit or frac is False or frac is None:
            return None
        return self.limit * float(frac)

    @classmethod
    def from_config(cls, limit: int | None) -> "Thresholds":
        from .. import config

        get = lambda k, d: config.get(f"worker.memory.{k}", d)  # noqa: E731
        return cls(limit, get("target", 0.6), get("spill", 0.7), get("pause", 0.8), get("terminate", 0.95))


def decide(t: Thresholds, rss: int, paused: bool, freed: int) -> list[str]:
    """Actions for one sample: any of 'spill', 'pause', 'unpause', 'trim'."""
    actions = []
    spill_at = t.bytes("spill")
    if spill_at is not None and rss > spill_at:
        actions.append("spill")
    pause_at = t.bytes("pause")
    if pause_at is not None:
        if rss > pause_at and not paused:
            actions.append("pause")
        elif paused and rss <= pause_at * 0.95:  # a little hysteresis avoids flapping
            actions.append("unpause")
    elif paused:
        actions.append("unpause")
    if freed >= TRIM_AFTER_BYTES:
        actions.append("trim")
    return actions


def pause_message(t: Thresholds, rss: int) -> str:
    """Why a worker pauses, in the units of :func:`~xsched.units.format_bytes`.

    >>> pause_message(Thresholds(limit=400_000_000), rss=321_000_000)
    'process memory 306.13 MiB is above 80% of its 381.47 MiB limit'
    """
    return (f"process memory {format_bytes(rss)} is above {100 * float(t.pause):.0f}% of its "
            f"{format_bytes(t.limit or 0)} limit")


class MemoryMonitor:
    """Samples process memory and applies :func:`decide` for one worker server."""

    def __init__(self, worker, thresholds: Thresholds, interval: float = 0.1, trim: bool = True):
        self.worker = worker
        self.t = thresholds
        self.interval = interval
        self.trim_enabled = trim
        self.freed_since_trim = 0
        self._proc = psutil.Process()
        self._executor = ThreadPoolExecutor(1, thread_name_prefix="xsched-spill")
        self._spilling = False
        self.spilled_by_rss = 0
        self.pause_count = 0
        self.last_rss = 0

    def note_freed(self, nbytes: int) -> None:
        self.freed_since_trim += max(nbytes, 0)

    def rss(self) -> int:
        try:
            self.last_rss = self._proc.memory_info().rss
        except psutil.Error:
            pass
        return self.last_rss

    async def run(self) -> None:
        while self.worker.status in ("running", "created"):
            try:
                self.step(self.rss())
            except Exception:
                logger.exception("memory monitor step failed")
            await asyncio.sleep(self.interval)

    def step(self, rss: int) -> None:
        w = self.worker
        actions = decide(self.t, rss, w.state.paused, self.freed_since_trim)
        debugging = getattr(w, "debugging", None)
        if debugging is not None and ("spill" in actions or "pause" in actions) and len(debugging.postmortems):
            freed = debugging.postmortems.drop_oldest(
                f"memory pressure on the worker (process memory {format_bytes(rss)}, above its spill threshold)")
            if freed:
                logger.info("worker %s: dropped the oldest post-mortem (~%s) under memory pressure", w.address,
                            format_bytes(freed))
                self.note_freed(freed)
        for action in actions:
            if action == "spill" and not self._spilling:
                self._spilling = True
                fut = asyncio.get_running_loop().run_in_executor(self._executor, self._spill_until_target)
                fut.add_done_callback(lambda f: setattr(self, "_spilling", False))
            elif action == "pause":
                self.pause_count += 1
                logger.warning("worker %s paused: %s", w.address, pause_message(self.t, rss))
                w.set_paused(True)
            elif action == "unpause":
                w.set_paused(False)
            elif action == "trim" and self.trim_enabled:
                self.freed_since_trim = 0
                asyncio.get_running_loop().run_in_executor(self._executor, _trim)

    def _spill_until_target(self) -> None:
        """Runs in the spill thread: evict LRU data until RSS is under the target."""
        data = self.worker.data
        evict = getattr(data, "evict", None)
        target = self.t.bytes("target") or self.t.bytes("spill")
        if evict is None or target is None:
            return
        while self.rss() > target:
            n = evict()
            if n < 0:
                return
            self.spilled_by_rss += n
            _trim()

    def close(self) -> None:
        self._executor.shutdown(wait=False, cancel_futures=True)


def _trim() -> None:
    try:
        from .spill import trim_memory
    except ImportError:
        return
    trim_memory()
