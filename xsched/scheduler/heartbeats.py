"""How often workers beat, as the cluster grows: the scheduler's idle load stays bounded.

Every worker sends two messages per ``worker.heartbeat-interval`` (its metrics, and a
liveness beat from a thread of its own), and each costs the scheduler about 130 µs all in
(``docs/scale.md``): 1,900 workers at 500 ms would take a whole core while idle. So the
scheduler tells workers a longer interval once there are more than
``scheduler.heartbeats-per-second`` x ``worker.heartbeat-interval`` of them, doubling it as
the cluster doubles (a power of two times the base, so it changes rarely and every worker
gets the same), and waits proportionally longer before declaring a silent worker dead.
A worker that dies is still noticed at once: its connection closes (``comm.py``).

>>> heartbeat_interval(2, base=0.5, per_second=100)
0.5
>>> heartbeat_interval(96, base=0.5, per_second=100), heartbeat_interval(10_000, base=0.5, per_second=100)
(1.0, 128.0)
>>> silence_allowed(30.0, 128.0, base=0.5), silence_allowed(1.0, 3.0, base=3.0)
(384.0, 1.0)
"""

from __future__ import annotations

import math

__all__ = ["heartbeat_interval", "silence_allowed"]


def heartbeat_interval(workers: int, base: float, per_second: float) -> float:
    """Seconds between a worker's beats so that ``workers`` send about ``per_second`` metrics
    beats a second in all: ``base`` while they are few, else ``base`` times the power of two
    that brings the total under ``per_second``."""
    if workers <= 0 or per_second <= 0 or base <= 0 or workers / per_second <= base:
        return base
    return base * 2 ** math.ceil(math.log2(workers / per_second / base))


def silence_allowed(ttl: float, interval: float, base: float) -> float:
    """How long a worker may be silent before it is declared dead: ``scheduler.worker-ttl``,
    or three paced beats when pacing made beats that far apart (an interval the user
    configured, ``base``, keeps the ttl the user configured beside it)."""
    return max(ttl, 3 * interval) if interval > base else ttl
