"""Seed 004 on one machine: abstract worker resources, restrictions and cluster-wide limits.

Tasks record their own start/stop times and PIDs to files; assertions count overlaps.
"""

import os
import time

import pytest

import xsched
from xsched import Client, LocalCluster, delayed
from xsched.deploy.process import spawn, stop_process

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(120)]


def record(log_dir, tag, seconds=0.15):
    start = time.time()
    time.sleep(seconds)
    stop = time.time()
    with open(os.path.join(log_dir, f"{tag}-{os.getpid()}-{start}.rec"), "w") as f:
        f.write(f"{tag} {os.getpid()} {start} {stop}\n")
    return os.getpid()


def intervals(log_dir, tag):
    out = []
    for name in os.listdir(log_dir):
        if name.startswith(tag + "-"):
            with open(os.path.join(log_dir, name)) as f:
                _, pid, start, stop = f.read().split()
                out.append((int(pid), float(start), float(stop)))
    return out


def max_overlap(ivs):
    events = sorted([(s, 1) for _, s, _ in ivs] + [(e, -1) for _, _, e in ivs])
    cur = best = 0
    for _, d in events:
        cur += d
        best = max(best, cur)
    return best


def load(i):
    return i


def process(d, log_dir):
    record(log_dir, "gpu")
    return d * 2


def aggregate(xs, log_dir):
    record(log_dir, "agg", 0)
    return sum(xs)


@pytest.fixture
def seed004_cluster(tmp_path):
    with LocalCluster(n_workers=0) as cluster:
        procs = [spawn(["worker", "--scheduler-file", cluster.scheduler_file, "--nthreads", "4",
                        "--resources", res, "--name", name, "--memory-limit", "1GB"])
                 for name, res in [("gpu-a", "GPU=2"), ("gpu-b", "GPU=2"), ("bigmem", "MEMORY=100e9")]]
        try:
            with Client(cluster) as client:
                client.wait_for_workers(3, timeout=60)
                yield client
        finally:
            for p in procs:
                stop_process(p)


def test_seed004_gpu_and_memory_resources(seed004_cluster, tmp_path):
    client = seed004_cluster
    log = str(tmp_path)
    data = [client.submit(load, i) for i in range(12)]
    processed = [client.submit(process, d, log, resources={"GPU": 1}) for d in data]
    final = client.submit(aggregate, processed, log, resources={"MEMORY": 70e9})
    assert final.result() == sum(2 * i for i in range(12))
    info = client.scheduler_info()["workers"]
    names = {a: w["name"] for a, w in info.items()}
    pids = {names[a]: p for a, p in client.run(os.getpid).items()}
    [(agg_pid, _, _)] = intervals(log, "agg")
    assert agg_pid == pids["bigmem"]
    gpu = intervals(log, "gpu")
    assert len(gpu) == 12
    assert {pid for pid, _, _ in gpu} <= {pids["gpu-a"], pids["gpu-b"]}
    for pid in {pid for pid, _, _ in gpu}:
        assert max_overlap([iv for iv in gpu if iv[0] == pid]) <= 2


def test_annotate_block_applies_to_submit_and_delayed(seed004_cluster, tmp_path):
    client = seed004_cluster
    log = str(tmp_path)
    with xsched.annotate(resources={"GPU": 1}):
        futs = [client.submit(process, i, log) for i in range(6)]
        lazy = [delayed(process)(i, log) for i in range(6, 10)]
    assert client.gather(futs) == [2 * i for i in range(6)]
    assert client.compute(lazy, sync=True) == [2 * i for i in range(6, 10)]
    info = client.scheduler_info()["workers"]
    gpu_pids = {p for a, p in client.run(os.getpid).items() if info[a]["resources"].get("GPU")}
    assert {pid for pid, _, _ in intervals(log, "gpu")} <= gpu_pids


def test_unsatisfiable_resources_wait_and_explain(seed004_cluster):
    client = seed004_cluster
    fut = client.submit(load, 1, resources={"TPU": 1})
    deadline = time.time() + 10
    while time.time() < deadline:
        why = client.who_can_run(fut)[fut.key]
        if why["state"] == "no-worker":
            break
        time.sleep(0.05)
    assert why["state"] == "no-worker" and why["workers"] == []
    assert "TPU" in why["reason"]
    fut.cancel()


def test_one_task_per_process_with_nworkers(tmp_path):
    log = str(tmp_path)
    with LocalCluster(n_workers=0) as cluster:
        nanny = spawn(["worker", "--scheduler-file", cluster.scheduler_file, "--nworkers", "3", "--nthreads", "2",
                       "--resources", "process=1", "--memory-limit", "1GB"])
        try:
            with Client(cluster) as client:
                client.wait_for_workers(3, timeout=60)
                futs = [client.submit(record, log, "proc", 0.2, resources={"process": 1}, pure=False)
                        for _ in range(9)]
                client.gather(futs)
        finally:
            stop_process(nanny)
    ivs = intervals(log, "proc")
    assert len(ivs) == 9
    assert max_overlap(ivs) <= 3
    for pid in {p for p, _, _ in ivs}:
        assert max_overlap([iv for iv in ivs if iv[0] == pid]) == 1


def test_cluster_wide_limit(tmp_path):
    log = str(tmp_path)
    with LocalCluster(n_workers=2, threads_per_worker=2) as cluster, Client(cluster) as client:
        with xsched.annotate(limits={"hdf5-reads": 1}):
            futs = [client.submit(record, log, "read", 0.1, pure=False) for _ in range(6)]
        client.gather(futs)
    ivs = intervals(log, "read")
    assert len(ivs) == 6 and max_overlap(ivs) == 1


def test_no_worker_warning_reaches_the_client():
    with xsched.config.set({"scheduler.no-worker-warning": "300ms"}):
        with LocalCluster(n_workers=1, threads_per_worker=1) as cluster, Client(cluster) as client:
            with pytest.warns(RuntimeWarning, match="no worker can run it.*TPU") as record:
                fut = client.submit(load, -7, resources={"TPU": 1})
                deadline = time.time() + 20
                while not record.list and time.time() < deadline:  # the client's loop thread warns
                    time.sleep(0.05)
            fut.cancel()
