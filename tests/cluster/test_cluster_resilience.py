"""Resilience on a real cluster: workers killed mid-computation, retries, KilledWorker.

Workers run under their nanny (LocalCluster starts one per worker), so a killed worker
comes back with a new address; the scheduler reschedules what it was running and
recomputes from lineage the data only it held.
"""

from __future__ import annotations

import os
import signal
import time

import pytest

import xsched
from xsched import Client, KilledWorker, wait

from tests.support.helpers import Gate, pid_gone, wait_until

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(90)]


def inc(x):
    return x + 1


def leaf(i):
    return list(range(i * 10, i * 10 + 10))


def gated_pair_sum(gate, a, b):
    gate.wait()
    return sum(a) + sum(b)


def slow_inc(x, delay=0.05):
    time.sleep(delay)
    return x + 1


def processing_by_worker(client):
    return client.run_on_scheduler(lambda scheduler: {w: ks for w, ks in scheduler.processing.items() if ks})


def test_worker_killed_while_running_and_holding_inputs(own_cluster, tmp_path):
    cluster = own_cluster(n_workers=2)
    with Client(cluster, set_as_default=False) as c:
        leaves = c.map(leaf, range(8))
        wait(leaves, timeout=30)
        who = c.who_has(leaves)
        holders = {w for ws in who.values() for w in ws}
        assert len(holders) == 2, "both workers hold some of the inputs"
        gate = Gate(tmp_path)
        pairs = [c.submit(gated_pair_sum, gate, leaves[i], leaves[i + 1]) for i in range(0, 8, 2)]
        busy = wait_until(lambda: processing_by_worker(c) if len(processing_by_worker(c)) == 2 else None,
                          msg="both workers running a pair")
        victim = sorted(busy)[0]
        assert any(victim in ws for ws in who.values())
        pid = c.run(os.getpid)[victim]
        os.kill(pid, signal.SIGKILL)
        wait_until(lambda: victim not in c.scheduler_info()["workers"], msg="scheduler removes the dead worker")
        gate.open()
        total = c.submit(sum, pairs)
        assert total.result(timeout=60) == sum(range(80))
        assert c.gather(leaves) == [leaf(i) for i in range(8)]
        events = c.run_on_scheduler(lambda scheduler: [e for e in scheduler.events if e[1] == "remove-worker"])
        assert [e[2] for e in events] == [victim]
        # the nanny brings the worker back under the same name, at a new address
        c.wait_for_workers(2, timeout=30)
        assert victim not in c.scheduler_info()["workers"]
        assert pid_gone(pid)


def test_chain_survives_worker_loss(own_cluster):
    cluster = own_cluster(n_workers=2)
    with Client(cluster, set_as_default=False) as c:
        x = c.submit(inc, 0, pure=False)
        chain = [x]
        for _ in range(30):
            chain.append(c.submit(slow_inc, chain[-1], pure=False))
        # wait until the chain is well under way, then kill whoever runs the current link
        wait_until(lambda: sum(f.done() for f in chain) >= 5, msg="five links done")
        busy = wait_until(lambda: processing_by_worker(c), msg="a link running")
        victim = next(iter(busy))
        os.kill(c.run(os.getpid)[victim], signal.SIGKILL)
        assert chain[-1].result(timeout=60) == 31
        assert c.gather(chain[:3]) == [1, 2, 3]


def test_retries(client, tmp_path):
    def flaky(path, succeed_on):
        with open(path, "a") as f:
            f.write("x")
        with open(path) as f:
            attempts = len(f.read())
        if attempts < succeed_on:
            raise OSError(f"attempt {attempts} failed")
        return attempts

    ok = tmp_path / "ok"
    assert client.submit(flaky, str(ok), 3, retries=2).result(timeout=30) == 3
    assert ok.read_text() == "xxx"
    bad = tmp_path / "bad"
    with pytest.raises(OSError, match="attempt 2 failed"):
        client.submit(flaky, str(bad), 3, retries=1).result(timeout=30)
    assert bad.read_text() == "xx"
    many = [tmp_path / f"m{i}" for i in range(3)]
    assert client.gather(client.map(flaky, [str(p) for p in many], [2] * 3, retries=1)) == [2, 2, 2]


def kill_my_worker():
    os._exit(3)


def test_task_that_kills_workers_ends_as_killed_worker(tmp_path):
    with xsched.config.set({"scheduler.allowed-failures": 1}):
        cluster = xsched.LocalCluster(n_workers=2, threads_per_worker=1)
    try:
        with Client(cluster, set_as_default=False) as c:
            first_pids = set(c.run(os.getpid).values())
            bad = c.submit(kill_my_worker)
            with pytest.raises(KilledWorker) as info:
                bad.result(timeout=60)
            msg = str(info.value)
            assert bad.key in msg and "2 times" in msg
            assert info.value.key == bad.key
            assert bad.status == "error"
            # two workers died; the nannies restarted them and the cluster works
            c.wait_for_workers(2, timeout=30)
            assert c.gather(c.map(inc, range(20), pure=False)) == list(range(1, 21))
            # (the second run may land on the first victim's restarted process, so count the
            # removals, not the original processes gone)
            removed = c.run_on_scheduler(lambda scheduler: [e for e in scheduler.events if e[1] == "remove-worker"])
            assert len(removed) == 2, removed
            assert len(first_pids - set(c.run(os.getpid).values())) in (1, 2)
            # a new submission of the same key is not retried again: the error stays
            with pytest.raises(KilledWorker):
                c.submit(kill_my_worker).result(timeout=30)
            # nothing to debug, and not rerun here: it would end this process too
            from xsched.errors import DebugError
            with pytest.raises(DebugError, match="likely end this process too"):
                c.recreate_error_locally(bad)
            with pytest.raises(DebugError, match="killed the workers that ran it"):
                c.debug(bad)
    finally:
        cluster.close()
