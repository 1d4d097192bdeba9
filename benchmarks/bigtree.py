"""A delayed tree reduction of 100,000 and 1,000,000 tasks on 2 workers x 1 thread.

    python benchmarks/bigtree.py --impl xsched|dask [--tasks 99999 999999] [--json]

For each size: seconds to build the graph (delayed calls in the client), to submit it
(``client.compute`` until it returns), and from submit to the result; tasks/s over submit
+ run; and the scheduler's peak RSS above its idle RSS, per task (sampled every 20 ms,
and the kernel's exact peak, VmHWM, where it can be reset). Printed, never asserted.
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cloudpickle  # noqa: E402

import common  # noqa: E402
import engine  # noqa: E402
from engine import tree_graph  # noqa: E402

cloudpickle.register_pickle_by_value(engine)  # workers have no benchmarks/ on their path


def one_size(ns, client, spid: int, ntasks: int) -> dict:
    leaves = (ntasks + 1) // 2
    gc.collect()
    idle = common.idle_rss([spid])[spid]
    t0 = time.perf_counter()
    total, n = tree_graph(ns.delayed, leaves)
    t_build = time.perf_counter() - t0
    with common.RSSSampler([spid]) as sampler:
        t0 = time.perf_counter()
        fut = client.compute(total)
        t_submit = time.perf_counter() - t0
        value = fut.result()
        t_run = time.perf_counter() - t0 - t_submit
    del fut, total
    peak = max(sampler.peak[spid], sampler.hwm.get(spid) or 0)
    return {"tasks": n, "build_seconds": t_build, "submit_seconds": t_submit, "run_seconds": t_run,
            "tasks_per_s": n / (t_submit + t_run), "correct": value == leaves * (leaves + 1) // 2,
            "scheduler_idle_mib": idle / 2**20, "scheduler_peak_mib": peak / 2**20,
            "scheduler_bytes_per_task": (peak - idle) / n}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--impl", choices=("xsched", "dask"), required=True)
    p.add_argument("--tasks", type=int, nargs="+", default=[99_999, 999_999])
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    ns = common.load_impl(args.impl)
    result = {"benchmark": "bigtree", "impl": ns.name, "version": ns.version,
              "workers": "2 x 1 thread (processes)", **common.environment()}
    cluster = client = None
    try:
        cluster, client, _ = common.start(ns, n_workers=2, threads_per_worker=1)
        spid = client.run_on_scheduler(os.getpid)
        warm, _ = tree_graph(ns.delayed, 16)
        client.compute(warm).result()
        for n in args.tasks:
            try:
                for k, v in one_size(ns, client, spid, n).items():
                    result[f"{k}_{n}"] = v
            except Exception as e:
                result[f"error_{n}"] = common.report_error(f"{ns.name} {n} tasks", e)
    except Exception as e:
        result["error"] = common.report_error(f"{ns.name} cluster", e)
    finally:
        common.stop(cluster, client)
    common.emit(result, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
