"""client.replicate and client.rebalance on real processes: 3 one-thread workers on loopback.

Tasks append a line to a file each time they run, so "nothing was recomputed" is counted,
not hoped for. The pure planning is tested in tests/unit/test_replication_state.py.
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
from collections import Counter

import pytest

from xsched import Client, LocalCluster, wait

from tests.support.helpers import Gate, pid_gone, wait_until

# (one test process runs this module: what its module-scoped fixtures start, it starts once)
pytestmark = [pytest.mark.cluster, pytest.mark.timeout(120), pytest.mark.xdist_group("replication")]

SIZE = 100_000  # bytes per result: large enough that sizes, not overheads, decide the balance


def blob(path, i):
    """A result of SIZE bytes that leaves a trace of each execution."""
    with open(path, "a") as f:
        f.write(f"{i}\n")
    return bytes([i % 256]) * SIZE


def executions(path) -> list[int]:
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return sorted(int(line) for line in f if line.strip())


def held_in_memory(c, keys) -> dict[str, list[str]]:
    """What each worker's data store really holds of ``keys`` (not what the scheduler believes)."""
    return c.run(lambda worker, keys=tuple(keys): sorted(k for k in keys if k in worker.data))


def went_back_from_memory(c, keys) -> list:
    """Transitions out of memory of these keys (a lost or recomputed key makes one)."""
    story = c.run_on_scheduler(lambda scheduler, ks=tuple(keys): scheduler.story(*ks))
    return [e for e in story if e[1] == "memory"]


@pytest.fixture(scope="module")
def cluster3():
    """Three one-thread worker processes, for this module's tests that kill nothing."""
    c = LocalCluster(n_workers=3, threads_per_worker=1)
    try:
        yield c
    finally:
        c.close()


def test_rebalance_spreads_keys_computed_on_one_worker(cluster3, tmp_path):
    log = str(tmp_path / "runs")
    with Client(cluster3, set_as_default=False) as c:
        c.wait_for_workers(3, timeout=30)
        workers = sorted(c.scheduler_info()["workers"])
        first = workers[0]
        futs = [c.submit(blob, log, i, workers=[first], pure=False) for i in range(40)]
        wait(futs)
        keys = [f.key for f in futs]
        assert all(v == [first] for v in c.who_has(futs).values())

        out = c.rebalance(futs)

        assert out["failed"] == {}
        assert all(source == first for source, _ in out["moved"].values())
        who = c.who_has(futs)
        assert all(len(holders) == 1 for holders in who.values())  # moved, not copied
        assert {k: [dest] for k, (_, dest) in out["moved"].items()} == {k: who[k] for k in out["moved"]}
        counts = Counter(holders[0] for holders in who.values())
        assert set(counts) == set(workers), counts  # every worker holds some now
        assert min(counts.values()) >= 12 and max(counts.values()) <= 14, counts  # 40 / 3, evened out
        # the sources really let their copies go, and the destinations really have theirs
        wait_until(lambda: {w: len(ks) for w, ks in held_in_memory(c, keys).items()} == dict(counts),
                   msg="every worker's store holds what the scheduler says")
        assert c.gather(futs) == [bytes([i]) * SIZE for i in range(40)]
        assert executions(log) == list(range(40))  # none recomputed
        assert not went_back_from_memory(c, keys)
        # evened out already: a second rebalance moves nothing
        assert c.rebalance(futs) == {"moved": {}, "failed": {}}


def test_rebalance_of_scattered_data_among_some_workers(cluster3):
    with Client(cluster3, set_as_default=False) as c:
        c.wait_for_workers(3, timeout=30)
        a, b, third = sorted(c.scheduler_info()["workers"])
        futs = c.scatter([bytes([i]) * SIZE for i in range(10)], workers=[a])
        out = c.rebalance(futs, workers=[a, b])
        assert out["failed"] == {} and len(out["moved"]) == 5
        assert Counter(h[0] for h in c.who_has(futs).values()) == {a: 5, b: 5}  # third is left alone
        assert c.gather(futs) == [bytes([i]) * SIZE for i in range(10)]


def test_replicate_to_three_holders_each(cluster3, tmp_path):
    log = str(tmp_path / "runs")
    with Client(cluster3, set_as_default=False) as c:
        c.wait_for_workers(3, timeout=30)
        workers = sorted(c.scheduler_info()["workers"])
        futs = [c.submit(blob, log, i, workers=[workers[1]], pure=False) for i in range(10)]
        wait(futs)

        out = c.replicate(futs, n=3)

        assert out["failed"] == {}
        assert out["who_has"] == {f.key: workers for f in futs}
        assert c.who_has(futs) == out["who_has"]
        wait_until(lambda: all(len(ks) == 10 for ks in held_in_memory(c, [f.key for f in futs]).values()),
                   msg="every worker's store holds every key")
        # fewer asked than there are: nothing is removed
        assert c.replicate(futs, n=1) == out
        assert c.gather(futs) == [bytes([i]) * SIZE for i in range(10)]
        assert executions(log) == list(range(10))


def test_replicate_then_a_killed_holder_costs_no_recomputation(own_cluster, tmp_path):
    log = str(tmp_path / "runs")
    cluster = own_cluster(n_workers=3)
    with Client(cluster, set_as_default=False) as c:
        c.wait_for_workers(3, timeout=30)
        victim = sorted(c.scheduler_info()["workers"])[0]
        futs = [c.submit(blob, log, i, workers=[victim], pure=False) for i in range(10)]
        wait(futs)
        out = c.replicate(futs, n=2)
        assert out["failed"] == {}
        assert all(len(h) == 2 and victim in h for h in out["who_has"].values())
        pid = c.run(os.getpid)[victim]

        os.kill(pid, signal.SIGKILL)

        wait_until(lambda: victim not in c.scheduler_info()["workers"], timeout=60, msg="the dead worker is removed")
        assert pid_gone(pid)
        who = c.who_has(futs)
        assert all(len(h) == 1 and victim not in h for h in who.values()), who
        assert c.gather(futs) == [bytes([i]) * SIZE for i in range(10)]
        assert executions(log) == list(range(10))  # each ran once: the copies served
        assert not went_back_from_memory(c, [f.key for f in futs])


def test_errors_are_raised_at_the_call_naming_what_is_wrong(cluster3, tmp_path):
    with Client(cluster3, set_as_default=False) as c:
        c.wait_for_workers(3, timeout=30)
        [x] = c.scatter([b"x" * 10])
        gate = Gate(tmp_path)
        held = c.submit(gate.wait, 1, pure=False)
        wait_until(lambda: c.processing() and any(c.processing().values()), msg="the held task runs")
        with pytest.raises(ValueError, match=rf"not in memory: '{re.escape(held.key)}' \(processing\).*[Ww]ait"):
            c.replicate([x, held], n=2)
        with pytest.raises(ValueError, match=re.escape(held.key)):
            c.rebalance({"some": [held]})
        with pytest.raises(ValueError, match="n=0"):
            c.replicate([x], n=0)
        with pytest.raises(ValueError, match="no worker named 'nobody'"):
            c.rebalance([x], workers=["nobody"])
        with pytest.raises(ValueError, match="no worker named 'nobody'"):
            c.replicate([x], workers="nobody")
        with pytest.raises(TypeError, match="holds none"):
            c.replicate(42)
        assert len(c.who_has([x])[x.key]) == 1  # the refused requests changed nothing
        gate.open()
        assert held.result(timeout=30) == 1
        assert c.replicate([held], n=2)["failed"] == {}  # finished now: fine
        assert c.replicate([]) == {"who_has": {}, "failed": {}}


def test_both_work_from_an_asynchronous_client(cluster3):
    async def main():
        async with Client(cluster3.scheduler_address, security=cluster3.security, asynchronous=True,
                          set_as_default=False) as c:
            workers = sorted((await c.scheduler_info())["workers"])
            futs = await c.scatter([bytes([i]) * SIZE for i in range(6)], workers=[workers[0]])
            out = await c.replicate(futs, n=2)
            assert all(len(h) == 2 for h in out["who_has"].values())
            out = await c.rebalance(futs)
            assert out["failed"] == {}
            assert await c.gather(futs) == [bytes([i]) * SIZE for i in range(6)]

    asyncio.run(main())
