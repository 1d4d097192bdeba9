"""Heartbeat pacing on a real cluster: as workers join and leave, the scheduler tells every
worker the interval to beat at (scheduler/heartbeats.py), and beats keep arriving at it.

``scheduler.heartbeats-per-second`` is set to 4 and ``worker.heartbeat-interval`` to 250 ms
so that 2 workers already need pacing (interval 0.5 s at 2 workers, 1 s at 3); the defaults,
100 and 500 ms, pace only beyond 50 workers. (The base is half the default so that the wait
for a beat at the paced interval is 1 s rather than 2 s: the same pacing, twice as fast.)
"""

from __future__ import annotations

import pytest

from xsched import Client

from tests.support.helpers import wait_until

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(120)]


def intervals(client) -> tuple[float, list[float]]:
    on_scheduler = client.run_on_scheduler(lambda scheduler: scheduler.heartbeat_interval)
    on_workers = client.run(lambda worker: (worker.heartbeat_interval, worker._alive.interval))
    return on_scheduler, sorted(set(v for pair in on_workers.values() for v in pair))


def test_workers_beat_slower_as_the_cluster_grows_and_faster_as_it_shrinks(own_cluster, monkeypatch):
    monkeypatch.setenv("XSCHED_SCHEDULER__HEARTBEATS_PER_SECOND", "4")
    monkeypatch.setenv("XSCHED_WORKER__HEARTBEAT_INTERVAL", "250ms")
    cluster = own_cluster(n_workers=2)
    with Client(cluster) as client:
        client.wait_for_workers(2, timeout=30)
        # 2 workers / 4 per second: beats 0.5 s apart (the second worker to register hears of the
        # new pace a message after the scheduler sets it: waited for, not assumed)
        wait_until(lambda: intervals(client) == (0.5, [0.5]), timeout=20, msg="both workers beat every 0.5 s")
        cluster.scale(3)
        client.wait_for_workers(3, timeout=30)
        wait_until(lambda: intervals(client) == (1.0, [1.0]), timeout=20,
                   msg="every worker, the two earlier ones too, beats every 1 s")
        seen = client.run_on_scheduler(lambda scheduler: dict(scheduler.last_seen))
        wait_until(lambda: all(client.run_on_scheduler(lambda scheduler: dict(scheduler.last_seen))[a] > t
                               for a, t in seen.items()), timeout=20, msg="beats keep arriving at the new pace")
        cluster.scale(1)
        wait_until(lambda: len(client.scheduler_info()["workers"]) == 1, timeout=30, msg="two workers gone")
        wait_until(lambda: intervals(client) == (0.25, [0.25]), timeout=20, msg="back to the base interval")
        assert client.submit(lambda x: x + 1, 1).result(timeout=30) == 2
