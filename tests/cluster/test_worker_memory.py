"""Worker memory on a real cluster: spill to disk, pause, nanny restart, KilledWorker."""

import os
import threading
import time

import numpy as np
import psutil
import pytest

import xsched
from xsched import Client, KilledWorker, LocalCluster, wait
from xsched.worker.memory import Thresholds, decide
from xsched.worker.nanny import nanny_action

from tests.support.helpers import wait_until

MB = 2**20


# ---------------------------------------------------------------- pure policy
def test_decide_spill_pause_unpause_trim():
    t = Thresholds(limit=1000, target=0.6, spill=0.7, pause=0.8, terminate=0.95)
    assert decide(t, rss=500, paused=False, freed=0) == []
    assert decide(t, rss=750, paused=False, freed=0) == ["spill"]
    assert decide(t, rss=850, paused=False, freed=0) == ["spill", "pause"]
    assert decide(t, rss=790, paused=True, freed=0) == ["spill"]  # hysteresis: still paused
    assert decide(t, rss=700, paused=True, freed=0) == ["unpause"]
    assert decide(t, rss=100, paused=False, freed=100 * MB) == ["trim"]
    off = Thresholds(limit=None)
    assert decide(off, rss=10**12, paused=False, freed=0) == []


def test_nanny_actions():
    assert nanny_action(None, 100, 1000, 0.95) == "keep"
    assert nanny_action(None, 960, 1000, 0.95) == "kill"
    assert nanny_action(0, 0, 1000, 0.95) == "done"
    assert nanny_action(-9, 0, 1000, 0.95) == "restart"
    assert nanny_action(1, 0, 1000, 0.95) == "restart"  # lost its scheduler: one more try
    assert nanny_action(69, 0, 1000, 0.95) == "done"  # could not register: restarting cannot help
    assert nanny_action(None, 10**12, None, 0.95) == "keep"


# ---------------------------------------------------------------- cluster behaviour
class PeakRSS:
    def __init__(self, pids):
        self.procs = [psutil.Process(p) for p in pids]
        self.peak = 0
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self._stop.is_set():
            for p in self.procs:
                try:
                    self.peak = max(self.peak, p.memory_info().rss)
                except psutil.Error:
                    pass
            self._stop.wait(0.01)

    def __enter__(self):
        self._t.start()
        return self

    def __exit__(self, *a):
        self._stop.set()
        self._t.join()


def make_block(i):
    return np.full(100 * MB // 8, i, dtype=np.float64)


def block_sum(x):
    return float(x.sum())


def spill_stats(worker):
    """(keys on disk, their bytes) in the worker's store, run with client.run."""
    return worker.data.spilled_count, worker.data.spilled_bytes


@pytest.mark.cluster
@pytest.mark.timeout(120)
def test_spill_keeps_worker_under_its_limit():
    with LocalCluster(n_workers=1, threads_per_worker=1, memory_limit="1GB") as cluster, Client(cluster) as c:
        pids = list(c.run(os.getpid).values())
        with PeakRSS(pids) as rss:
            blocks = c.map(make_block, range(12))  # 1.2 GB held through a 1 GB worker
            sums = c.map(block_sum, blocks)
            total = c.submit(sum, sums)
            assert total.result() == sum(float(i) * (100 * MB // 8) for i in range(12))
        # read from the worker itself, not from a heartbeat that may not have arrived yet
        [(spilled_count, spilled)] = c.run(spill_stats).values()
        assert spilled_count > 0 and spilled > 0, (spilled_count, spilled)
        assert rss.peak < 10**9, f"peak RSS {rss.peak / MB:.0f} MiB"
        # the data is all still there: read a spilled block back
        assert c.submit(block_sum, blocks[0]).result() == 0.0
        # and a gather of more than the worker's memory comes in replies of a share of it
        # each: the spilled values are read back a few at a time, the worker stays alive
        with PeakRSS(pids) as rss:
            got = c.gather(blocks)
        assert [float(b[-1]) for b in got] == [float(i) for i in range(12)]
        assert list(c.run(os.getpid).values()) == pids, "the worker was restarted"
        assert rss.peak < 10**9, f"peak RSS {rss.peak / MB:.0f} MiB while gathered"
        del blocks, sums, total, got


# worker-side state (module-level: these functions are pickled by reference, so tasks and
# client.run use the worker's own copies)
_hold = []
_released = []


def hog(n_mb):
    _hold.append(np.ones(n_mb * MB // 8))
    return len(_hold)


def release():
    _hold.clear()
    import gc

    gc.collect()
    _released.append(True)
    return len(_released)


def stamp(i):
    """Whether the memory had been released when this task started: the hog's arrays go
    the moment ``release`` empties the list (a flag set after it, behind the collection,
    could be read by a task the worker rightly started in between)."""
    return not _hold


def pause_count(worker):
    return worker.memory.pause_count


def worker_tasks(worker):
    """Keys the worker knows of, by state (run with client.run, which injects ``worker``)."""
    return {k: ts.state for k, ts in worker.state.tasks.items()}


@pytest.mark.cluster
@pytest.mark.timeout(120)
def test_pause_starts_no_task_until_memory_falls():
    with xsched.config.set({"worker.memory.pause": 0.5, "worker.memory.spill": False,
                            "worker.memory.target": False, "worker.memory.terminate": False}):
        with LocalCluster(n_workers=1, threads_per_worker=1, memory_limit="600MB") as cluster, Client(cluster) as c:
            assert c.submit(hog, 350).result() == 1  # unmanaged memory: nothing to spill
            wait_until(lambda: [w["status"] for w in c.scheduler_info()["workers"].values()] == ["paused"],
                       msg="the worker pauses")
            futs = c.map(stamp, range(5))
            keys = {f.key for f in futs}
            # the scheduler has the tasks, and holds them back: none is processing on a worker
            states = wait_until(lambda: (lambda st: st if set(st) == keys else None)(c.run_on_scheduler(
                lambda scheduler, ks=tuple(keys): {k: scheduler.tasks[k].state for k in ks if k in scheduler.tasks})),
                msg="the scheduler knows the tasks")
            assert set(states.values()) <= {"queued", "no-worker"}, states
            [on_worker] = c.run(worker_tasks).values()
            assert not keys & set(on_worker), on_worker
            assert not any(f.done() for f in futs)
            assert list(c.run(release).values()) == [1]
            # each task reports whether the memory was already released when it started
            assert c.gather(futs) == [True] * 5
            [w] = c.scheduler_info()["workers"].values()
            assert w["status"] == "running"
            # from the worker itself (the heartbeat's copy of the figure may be older)
            assert list(c.run(pause_count).values()) == [1]


def grow_forever():
    hold = []
    while True:
        hold.append(np.ones(25 * MB // 8))
        time.sleep(0.01)


def inc(x):
    return x + 1


@pytest.mark.cluster
@pytest.mark.timeout(150)
def test_memory_hog_is_restarted_then_killed_worker_and_others_complete():
    with xsched.config.set({"scheduler.allowed-failures": 2}):
        with LocalCluster(n_workers=2, threads_per_worker=1, memory_limit="400MB") as cluster, Client(cluster) as c:
            bad = c.submit(grow_forever, pure=False)
            others = c.map(inc, range(100))
            with pytest.raises(KilledWorker, match="grow_forever"):
                bad.result(timeout=120)
            assert c.gather(others) == list(range(1, 101))
            c.wait_for_workers(2, timeout=30)  # the nanny restarted the workers


def hold_data(i):
    return np.full(1000, i)


@pytest.mark.cluster
@pytest.mark.timeout(120)
def test_lost_worker_data_is_recomputed():
    with LocalCluster(n_workers=2, threads_per_worker=1, memory_limit="1GB") as cluster, Client(cluster) as c:
        parts = c.map(hold_data, range(10))
        wait(parts)
        who = c.who_has(parts)
        victim = who[parts[0].key][0]
        pid = c.run(os.getpid)[victim]
        os.kill(pid, 9)
        total = c.submit(lambda xs: sum(int(x.sum()) for x in xs), parts)
        assert total.result(timeout=60) == sum(1000 * i for i in range(10))


@pytest.mark.cluster
@pytest.mark.timeout(90)
def test_worker_dropped_for_silence_comes_back():
    """A worker the scheduler removed (no heartbeat within worker-ttl) is restarted and rejoins."""
    # (the restarted worker is again too quiet and cycles; tasks survive that by rescheduling)
    # The scheduler checks every ttl/4, so it drops the worker 1 to 1.25 s after a beat; the
    # next beat, 1.5 s after it, is what hears "restart" (3 s only made each cycle longer).
    with xsched.config.set({"scheduler.worker-ttl": "1s", "worker.heartbeat-interval": "1.5s",
                            "scheduler.allowed-failures": 1000}):
        with LocalCluster(n_workers=1, threads_per_worker=1) as cluster, Client(cluster) as c:
            first = set(c.scheduler_info()["workers"])
            deadline = time.time() + 60
            while time.time() < deadline:  # removed for silence, told to restart, back under a new address
                now = set(c.scheduler_info()["workers"])
                if now and now != first:
                    break
                time.sleep(0.1)
            assert now and now != first
            assert c.submit(inc, 1, pure=False).result(timeout=30) == 2
