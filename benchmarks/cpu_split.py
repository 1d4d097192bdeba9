"""Where the CPU of a small-task workload goes, per process and thread (xsched only).

    python benchmarks/cpu_split.py [tree] [map] [latency] ...

On 2 workers x 1 thread, for each workload named (in that order; default: tree map latency):
tasks/s, then CPU microseconds per task of the client, the scheduler and each worker, and
within each process its busiest threads (the event loop, ZeroMQ's I/O thread, task threads).
On a 2-core machine the processes share the cores, so throughput follows the total: this
says which process to make cheaper. Printed, never asserted.

tree: the 9,999-task delayed tree of ``engine.py`` (build not timed); map: 10,000 no-op
tasks, ``client.map`` + ``client.gather``; latency: 300 ``submit(...).result()`` in a row.
"""

from __future__ import annotations

import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cloudpickle  # noqa: E402
import psutil  # noqa: E402

import engine  # noqa: E402
from engine import tree_graph  # noqa: E402

cloudpickle.register_pickle_by_value(engine)  # workers have no benchmarks/ on their path


def _thread_cpu(procs: dict) -> dict:
    return {name: {t.id: t.user_time + t.system_time for t in p.threads()} for name, p in procs.items()}


def _run(client, delayed, what: str) -> int:
    if what == "tree":
        total, n = tree_graph(delayed, 5000)
        assert client.compute(total).result() == 5000 * 5001 // 2
        return n
    if what == "map":
        n = 10_000
        assert client.gather(client.map(engine.noop, range(n), pure=False)) == list(range(n))
        return n
    if what == "latency":
        n = 300
        for i in range(n):
            client.submit(engine.noop, i, pure=False).result()
        return n
    raise SystemExit(f"unknown workload {what!r}: choose tree, map or latency")


def main(argv=None) -> int:
    from xsched import Client, LocalCluster, delayed

    workloads = (argv if argv is not None else sys.argv[1:]) or ["tree", "map", "latency"]
    with LocalCluster(n_workers=2, threads_per_worker=1) as cluster, Client(cluster) as client:
        client.wait_for_workers(2, timeout=60)
        warm, _ = tree_graph(delayed, 16)
        client.compute(warm).result()
        pids = {"client": os.getpid(), "scheduler": client.run_on_scheduler(os.getpid)}
        for i, pid in enumerate(client.run(os.getpid).values()):
            pids[f"worker {i}"] = pid
        procs = {name: psutil.Process(pid) for name, pid in pids.items()}
        for what in workloads:
            before, t0 = _thread_cpu(procs), time.perf_counter()
            n = _run(client, delayed, what)
            seconds, after = time.perf_counter() - t0, _thread_cpu(procs)
            print(f"{what}: {n:,} tasks, {n / seconds:,.0f} tasks/s; CPU microseconds per task:")
            for name in procs:
                per = sorted(((after[name][t] - before[name].get(t, 0.0)) / n * 1e6 for t in after[name]),
                             reverse=True)
                threads = ", ".join(f"{x:,.0f}" for x in per if x >= 1)
                print(f"  {name:<10} {sum(per):7,.0f}   (busiest threads: {threads})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
