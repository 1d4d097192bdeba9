"""The shared cluster core on a real LocalCluster: scale in workers and in groups, adapt
up at once and down after the wait count, repr/HTML, and nothing left after close."""

from __future__ import annotations

import pytest

from xsched import Client, LocalCluster
from xsched.deploy.spec import RUNNING

from tests.support.helpers import Gate, pid_gone, wait_until

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(120)]


def test_scale_by_workers_and_by_groups():
    with LocalCluster(n_workers=1, threads_per_worker=1) as cluster:
        cluster.scale(jobs=3)
        assert cluster.n_workers == 3 and sorted(cluster.workers) == ["0", "1", "2"]
        assert all(g.status() == RUNNING for g in cluster.workers.values())
        pids = [g.pid for g in cluster.workers.values()]
        cluster.scale(1)
        assert sorted(cluster.workers) == ["0"]  # the newest go first
        assert all(pid_gone(p) for p in pids[1:])
        with pytest.raises(ValueError, match="not both"):
            cluster.scale(2, jobs=2)
        with pytest.raises(ValueError, match="whole number"):
            cluster.scale(-1)
        assert "LocalCluster('tcp://127.0.0.1:" in repr(cluster) and "workers=1" in repr(cluster)


def test_scale_by_cores_and_by_memory_as_dask_does():
    with LocalCluster(n_workers=1, threads_per_worker=2, memory_limit="1GB") as cluster:
        cluster.scale(cores=5)  # (three workers of two threads)
        assert cluster.n_workers == 3
        cluster.scale(memory="1.5GB")  # (two of 1 GB)
        assert cluster.n_workers == 2
        cluster.scale(1, cores=2)  # (the most asked for: one worker)
        assert cluster.n_workers == 1
        with pytest.raises(ValueError, match="jobs= or cores="):
            cluster.scale(jobs=1, cores=2)
        with pytest.raises(ValueError, match="whole number of threads"):
            cluster.scale(cores=-1)
    with LocalCluster(n_workers=1, memory_limit=0) as unlimited:
        with pytest.raises(ValueError, match="have no memory limit"):
            unlimited.scale(memory="1GB")


def test_adapt_scales_up_at_once_and_down_after_the_wait_count(tmp_path):
    with LocalCluster(n_workers=0, threads_per_worker=1) as cluster, Client(cluster, set_as_default=False) as c:
        adaptive = cluster.adapt(minimum=0, maximum=3, interval="100ms", wait_count=3)
        assert "adaptive" in repr(cluster)
        gate = Gate(tmp_path)
        futs = [c.submit(gate.wait, i, pure=False) for i in range(6)]  # 6 tasks, 1 thread per worker
        wait_until(lambda: len(c.scheduler_info()["workers"]) == 3, timeout=60, msg="scaled up to the maximum")
        assert max(d.target for _, d in adaptive.log) == 3  # never asked for more than the bound
        gate.open()
        assert c.gather(futs) == list(range(6))
        # results still held keep a worker (their data needs one); released, the cluster goes to 0
        wait_until(lambda: cluster.n_workers == 1, timeout=60, msg="scaled down to what the held data needs")
        del futs
        wait_until(lambda: cluster.n_workers == 0, timeout=60, msg="scaled down to the minimum when idle")
        downs = [d for _, d in adaptive.log if d.cancel]
        assert downs and all("down from" in d.reason for d in downs)
        cluster.scale(1)  # an explicit scale ends adaptive scaling
        assert cluster._adaptive is None and cluster.n_workers == 1


def test_close_leaves_no_process(own_cluster):
    cluster = own_cluster(n_workers=2)
    pids = [g.pid for g in cluster.workers.values()]
    html = cluster._repr_html_()
    assert "LocalCluster" in html and cluster.scheduler_address in html
    cluster.close()
    assert cluster.status == "closed" and all(pid_gone(p) for p in pids)
    cluster.close()  # twice is fine
