"""Heartbeats a blocked event loop cannot starve, and dead workers still removed.

A worker's metrics heartbeat runs on its event loop; a coroutine that blocks the loop
silences it. Liveness comes from a thread with its own socket (``worker/heartbeat.py``),
so with a 1 s ``scheduler.worker-ttl`` a worker whose loop is blocked for 3 s stays, with
its data, while a worker whose process is stopped or killed is removed.
"""

from __future__ import annotations

import os
import signal
import time

import pytest

import xsched
from xsched import Client, LocalCluster, wait

from tests.support.helpers import wait_until

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(120)]

TTL = 1.0


def hold(i):
    return list(range(i, i + 100))


async def block_loop(seconds):
    """A coroutine: ``client.run`` runs it on the worker's event loop, which it blocks."""
    time.sleep(seconds)
    return os.getpid()


def block_scheduler_loop(seconds, scheduler):
    async def blocked():
        time.sleep(seconds)
        return len(scheduler.workers)

    return blocked()


def removals(c):
    return c.run_on_scheduler(lambda scheduler: [e[2:] for e in scheduler.events if e[1] == "remove-worker"])


@pytest.fixture
def ttl_cluster():
    """Two workers under nannies, a 1 s worker-ttl and heartbeats every 100 ms."""
    with xsched.config.set({"scheduler.worker-ttl": f"{TTL}s", "worker.heartbeat-interval": "100ms"}):
        cluster = LocalCluster(n_workers=2, threads_per_worker=1)
    try:
        with Client(cluster, set_as_default=False) as c:
            c.wait_for_workers(2, timeout=30)
            yield c
    finally:
        cluster.close()


def test_worker_with_blocked_event_loop_stays_with_its_data(ttl_cluster):
    c = ttl_cluster
    parts = c.map(hold, range(10))
    wait(parts, timeout=30)
    who = c.who_has(parts)
    victim = who[parts[0].key][0]
    pid = c.run(os.getpid)[victim]
    # 3 x the TTL without a single turn of the worker's event loop
    assert c.run(block_loop, 3 * TTL, workers=[victim]) == {victim: pid}
    assert victim in c.scheduler_info()["workers"]
    assert removals(c) == []
    assert c.who_has(parts) == who
    assert c.gather(parts) == [hold(i) for i in range(10)]
    assert c.run(os.getpid)[victim] == pid


def alive_statistics():
    return xsched.get_worker()._alive.statistics()


def test_the_liveness_thread_is_quiet_while_the_loop_beats(ttl_cluster):
    """One beat per interval reaches the scheduler from a healthy worker, not two; the thread
    speaks up only while the loop is blocked."""
    c = ttl_cluster
    before = c.run(alive_statistics)
    wait_until(lambda: all(s["skipped"] >= before[a]["skipped"] + 10 for a, s in c.run(alive_statistics).items()),
               msg="the liveness threads skip the beats the loops sent")
    idle = c.run(alive_statistics)
    for a, s in idle.items():
        assert s["sent"] - before[a]["sent"] < s["skipped"] - before[a]["skipped"], (before[a], s)
    victim = sorted(idle)[0]
    c.run(block_loop, 1.0, workers=[victim])  # ten intervals without the loop
    blocked = c.run(alive_statistics)[victim]
    assert blocked["sent"] >= idle[victim]["sent"] + 3, (idle[victim], blocked)
    assert removals(c) == []


def test_scheduler_with_blocked_event_loop_keeps_its_workers(ttl_cluster):
    c = ttl_cluster
    before = set(c.scheduler_info()["workers"])
    assert c.run_on_scheduler(block_scheduler_loop, 3 * TTL) == 2
    assert set(c.scheduler_info()["workers"]) == before
    assert removals(c) == []
    assert c.submit(sum, [1, 2]).result(timeout=30) == 3


@pytest.mark.parametrize("sig, reason", [(signal.SIGSTOP, "no heartbeat"), (signal.SIGKILL, "connection lost")])
def test_stopped_or_killed_worker_is_still_removed(ttl_cluster, sig, reason):
    c = ttl_cluster
    parts = c.map(hold, range(10))
    wait(parts, timeout=30)
    victim = c.who_has(parts)[parts[0].key][0]
    pid = c.run(os.getpid)[victim]
    os.kill(pid, sig)
    try:
        wait_until(lambda: victim not in c.scheduler_info()["workers"], timeout=30, msg="the dead worker removed")
    finally:
        if sig == signal.SIGSTOP:
            os.kill(pid, signal.SIGCONT)  # it then hears it was removed, exits and its nanny restarts it
    (gone, why), = [(addr, why) for addr, why in removals(c)]
    assert gone == victim and why.startswith(reason), why
    # what it held is recomputed elsewhere; the nanny brings a worker back
    assert c.gather(parts) == [hold(i) for i in range(10)]
    c.wait_for_workers(2, timeout=60)
    assert c.submit(sum, [1, 2], pure=False).result(timeout=30) == 3
