"""Engine figures, xsched, dask.distributed or Ray, on 2 workers x 1 thread.

    python benchmarks/engine.py --impl xsched|dask|ray [--json] [--quick]

(a) map:      tasks/s for 10,000 no-op tasks, ``client.map`` + ``client.gather``
(b) tree:     tasks/s for a 9,999-task delayed tree reduction (5,000 ``inc`` leaves, pairwise adds)
(c) latency:  median round trip (ms) of one no-op ``submit(...).result()``, 200 calls after a warm-up
(d) transfer: MiB/s moving a 256 MiB numpy array from worker 0 to a task pinned to worker 1
              (median of 5 repeats after one warm-up; only the second task is timed)

For (a) and (b) also the CPU time per task spent by the client, scheduler and workers
together (every thread: ZeroMQ's I/O threads count), xsched and dask only.

Printed figures, never asserted. xsched and dask run the same code through the adapter
in ``common.load_impl``; every key is fresh (``pure=False``, or distinct inputs). Ray has
no client/cluster pair of that shape, so it runs the same work written in its own API
(``ray.init(num_cpus=2)``, remote functions, ``ray.get``); it has no worker-to-worker
figure here (its object store is shared memory on one machine, another kind of transfer).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402


# ---------------------------------------------------------------------- task functions (run on workers)
def noop(x=None):
    return x


def inc(x):
    return x + 1


def add(x, y):
    return x + y


def make_ones(n):
    return np.ones(n)


def nbytes_of(x):
    return x.nbytes, os.getpid()


# ---------------------------------------------------------------------- figures
class CPUMeter:
    """CPU seconds (user + system, every thread) the client, scheduler and workers spend."""

    def __init__(self, client):
        import psutil

        pids = [os.getpid(), client.run_on_scheduler(os.getpid), *client.run(os.getpid).values()]
        self.procs = [psutil.Process(p) for p in pids]

    def total(self) -> float:
        return sum(sum(p.cpu_times()[:2]) for p in self.procs)


def bench_map(ns, client, n: int, cpu: "CPUMeter | None" = None) -> dict:
    client.gather(client.map(noop, range(100), pure=False))  # warm-up: functions, connections
    c0 = cpu.total() if cpu else 0.0
    t0 = time.perf_counter()
    futs = client.map(noop, range(n), pure=False)
    out = client.gather(futs)
    dt = time.perf_counter() - t0
    del futs
    ok = out == list(range(n))
    res = {"map_tasks": n, "map_seconds": dt, "map_tasks_per_s": n / dt, "map_correct": ok}
    if cpu:
        res["map_cpu_ms_per_task"] = (cpu.total() - c0) / n * 1e3
    return res


def tree_graph(delayed, leaves: int):
    level = [delayed(inc)(i) for i in range(leaves)]
    ntasks = len(level)
    while len(level) > 1:
        nxt = [delayed(add)(level[i], level[i + 1]) for i in range(0, len(level) - 1, 2)]
        ntasks += len(nxt)
        if len(level) % 2:
            nxt.append(level[-1])
        level = nxt
    return level[0], ntasks


def bench_tree(ns, client, leaves: int, cpu: "CPUMeter | None" = None) -> dict:
    warm, _ = tree_graph(ns.delayed, 16)
    client.compute(warm).result()
    t0 = time.perf_counter()
    total, ntasks = tree_graph(ns.delayed, leaves)
    t_build = time.perf_counter() - t0
    c0 = cpu.total() if cpu else 0.0
    t0 = time.perf_counter()
    value = client.compute(total).result()
    dt = time.perf_counter() - t0
    expected = leaves * (leaves + 1) // 2
    res = {"tree_tasks": ntasks, "tree_build_seconds": t_build, "tree_seconds": dt,
           "tree_tasks_per_s": ntasks / dt, "tree_correct": value == expected}
    if cpu:
        res["tree_cpu_ms_per_task"] = (cpu.total() - c0) / ntasks * 1e3
    return res


def bench_latency(ns, client, calls: int, warmup: int = 20) -> dict:
    for i in range(warmup):
        client.submit(noop, i, pure=False).result()
    times = []
    for i in range(calls):
        t0 = time.perf_counter()
        client.submit(noop, i, pure=False).result()
        times.append(time.perf_counter() - t0)
    times_ms = sorted(t * 1e3 for t in times)
    q = lambda p: times_ms[min(len(times_ms) - 1, int(p * len(times_ms)))]  # noqa: E731
    return {"latency_calls": calls, "latency_ms_median": common.median(times_ms),
            "latency_ms_p10": q(0.10), "latency_ms_p90": q(0.90)}


def bench_transfer(ns, client, addrs, mib: int, repeats: int) -> dict:
    w0, w1 = addrs[0], addrs[1]
    pids = client.run(os.getpid)
    n = mib * 2**20 // 8
    seconds = []
    ok = True
    for rep in range(repeats + 1):  # the first repeat is a warm-up (worker-to-worker connection)
        a = client.submit(make_ones, n, workers=[w0], pure=False, allow_other_workers=False)
        ns.wait([a])
        t0 = time.perf_counter()
        b = client.submit(nbytes_of, a, workers=[w1], pure=False, allow_other_workers=False)
        nbytes, pid = b.result()
        dt = time.perf_counter() - t0
        ok = ok and nbytes == n * 8 and pid == pids[w1]
        if rep:
            seconds.append(dt)
        del a, b
        time.sleep(0.3)  # let the releases reach the workers before the next 256 MiB
    med = common.median(seconds)
    return {"transfer_mib": mib, "transfer_repeats": repeats, "transfer_seconds": [round(s, 4) for s in seconds],
            "transfer_mib_per_s_median": mib / med, "transfer_correct": ok}


# ---------------------------------------------------------------------- Ray, in its own API
def ray_figures(sizes: dict) -> dict:
    """The map, tree and latency figures of the docstring, measured on Ray (2 CPUs)."""
    import ray

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    out = {"version": ray.__version__, "workers": "ray.init(num_cpus=2)"}
    try:
        r_noop, r_inc, r_add = ray.remote(noop), ray.remote(inc), ray.remote(add)
        ray.get([r_noop.remote(i) for i in range(100)])  # warm-up: both worker processes
        n = sizes["map"]
        t0 = time.perf_counter()
        got = ray.get([r_noop.remote(i) for i in range(n)])
        dt = time.perf_counter() - t0
        out.update(map_tasks=n, map_seconds=dt, map_tasks_per_s=n / dt, map_correct=got == list(range(n)))

        def tree(leaves):
            level = [r_inc.remote(i) for i in range(leaves)]
            ntasks = len(level)
            while len(level) > 1:
                nxt = [r_add.remote(level[i], level[i + 1]) for i in range(0, len(level) - 1, 2)]
                ntasks += len(nxt)
                if len(level) % 2:
                    nxt.append(level[-1])
                level = nxt
            return level[0], ntasks

        ray.get(tree(16)[0])
        leaves = sizes["leaves"]
        t0 = time.perf_counter()
        top, ntasks = tree(leaves)  # Ray submits while it builds: build and run are one step
        value = ray.get(top)
        dt = time.perf_counter() - t0
        out.update(tree_tasks=ntasks, tree_seconds=dt, tree_tasks_per_s=ntasks / dt,
                   tree_correct=value == leaves * (leaves + 1) // 2)

        for i in range(20):
            ray.get(r_noop.remote(i))
        times = []
        for i in range(sizes["calls"]):
            t0 = time.perf_counter()
            ray.get(r_noop.remote(i))
            times.append((time.perf_counter() - t0) * 1e3)
        times.sort()
        out.update(latency_calls=len(times), latency_ms_median=common.median(times),
                   latency_ms_p10=times[len(times) // 10], latency_ms_p90=times[len(times) * 9 // 10])
        out["transfer_error"] = "n/a: not measured for Ray (shared-memory object store on one host)"
    finally:
        ray.shutdown()
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--impl", choices=common.IMPLS, required=True)
    p.add_argument("--json", action="store_true", help="print one JSON line (for run_all.py)")
    p.add_argument("--quick", action="store_true", help="small sizes: a smoke check of a few seconds")
    args = p.parse_args(argv)

    if args.quick:
        sizes = dict(map=1_000, leaves=500, calls=30, mib=32, repeats=3)
    else:
        sizes = dict(map=10_000, leaves=5_000, calls=200, mib=256, repeats=5)

    if args.impl == "ray":
        result = {"benchmark": "engine", "impl": "ray", "quick": args.quick, **common.environment()}
        try:
            result.update(ray_figures(sizes))
        except Exception as e:
            result["error"] = common.report_error("ray", e)
        common.emit(result, args.json)
        return 0

    ns = common.load_impl(args.impl)
    result = {"benchmark": "engine", "impl": ns.name, "version": ns.version, "quick": args.quick,
              "workers": "2 x 1 thread (processes)", **common.environment()}
    cluster = client = None
    try:
        t0 = time.perf_counter()
        cluster, client, addrs = common.start(ns, n_workers=2, threads_per_worker=1)
        result["cluster_start_seconds"] = time.perf_counter() - t0
        cpu = CPUMeter(client)
        steps = [
            ("map", lambda: bench_map(ns, client, sizes["map"], cpu)),
            ("tree", lambda: bench_tree(ns, client, sizes["leaves"], cpu)),
            ("latency", lambda: bench_latency(ns, client, sizes["calls"])),
            ("transfer", lambda: bench_transfer(ns, client, addrs, sizes["mib"], sizes["repeats"])),
        ]
        for name, step in steps:
            try:
                result.update(step())
            except Exception as e:  # report the figure as an error, keep measuring the others
                result[f"{name}_error"] = common.report_error(f"{ns.name} {name}", e)
    except Exception as e:
        result["error"] = common.report_error(f"{ns.name} cluster", e)
    finally:
        t0 = time.perf_counter()
        common.stop(cluster, client)
        result["cluster_close_seconds"] = time.perf_counter() - t0
    common.emit(result, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
