"""Seed 003: peak worker memory for two 520 MB DataFrames, then len of each, then the sum.

    python benchmarks/seed003.py --impl xsched|dask [--json] [--quick]

One worker, 1 thread, memory_limit="2GB". Two delayed tasks each build a 5,000,000 x 13
float64 pandas DataFrame (520 MB, column by column as in the seed), ``len`` of each,
``sum`` of the lengths. The benchmark process samples the worker's RSS every 20 ms (and
reads the kernel's exact peak, VmHWM) and reports the peak above idle as a multiple of one
partition. A worker that runs len() right after each build holds one partition (~1x); one
that runs both builds first holds two (~2x). Figures are printed, never asserted.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

COLS = 13


# ---------------------------------------------------------------------- task functions (run on the worker)
def simulate_df_partition_load(part_id, num_rows):
    """Creates a random DataFrame of num_rows x 13 float64 (the seed's function)."""
    import pandas as pd

    df = pd.DataFrame()
    for i in range(COLS):
        data_col = np.random.uniform(0, 1, num_rows)
        df["col_{}".format(i)] = data_col
        del data_col  # for max GC-friendliness
    return df


def warm_up():
    """Import pandas and build a tiny frame, so the idle RSS includes the libraries."""
    simulate_df_partition_load(-1, 1000)
    import gc

    gc.collect()
    return os.getpid()


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--impl", choices=common.IMPLS, required=True)
    p.add_argument("--json", action="store_true", help="print one JSON line (for run_all.py)")
    p.add_argument("--quick", action="store_true", help="500,000-row partitions (52 MB): a smoke check")
    args = p.parse_args(argv)

    rows = 500_000 if args.quick else 5_000_000
    partitions = 2
    part_bytes = rows * COLS * 8
    ns = common.load_impl(args.impl)
    result = {"benchmark": "seed003", "impl": ns.name, "version": ns.version, "quick": args.quick,
              "workers": "1 x 1 thread (process)", "memory_limit": "2GB", "partitions": partitions,
              "partition_mb": part_bytes / 1e6, **common.environment()}
    cluster = client = None
    try:
        cluster, client, addrs = common.start(ns, n_workers=1, threads_per_worker=1, memory_limit="2GB")
        [addr] = addrs
        pid = client.submit(warm_up, pure=False).result(timeout=120)
        assert pid == client.run(os.getpid)[addr]
        time.sleep(0.2)
        idle = common.idle_rss([pid])[pid]

        delayed = ns.delayed
        lazy_dataframes = [delayed(simulate_df_partition_load)(part_id, rows) for part_id in range(partitions)]
        length_partitions = [delayed(len)(df) for df in lazy_dataframes]
        dag = delayed(sum)(length_partitions)

        t0 = time.perf_counter()
        with common.RSSSampler([pid], interval=0.02) as sampler:
            total = client.compute(dag, sync=True)
            wall = time.perf_counter() - t0
        sampled = sampler.peak[pid]
        hwm = sampler.hwm.get(pid)
        peak = max(sampled, hwm or 0)
        result.update({
            "wall_seconds": wall, "correct": total == rows * partitions, "rss_samples": sampler.samples,
            "idle_mb": idle / 1e6, "sampled_peak_above_idle_mb": (sampled - idle) / 1e6,
            "hwm_peak_above_idle_mb": (hwm - idle) / 1e6 if hwm else None,
            "peak_above_idle_mb": (peak - idle) / 1e6,
            "peak_over_partition": (peak - idle) / part_bytes,
        })
        if sampler.errors:
            result["worker_died"] = sampler.errors[pid]
    except Exception as e:
        result["error"] = common.report_error(f"{ns.name} seed003", e)
    finally:
        common.stop(cluster, client)
    common.emit(result, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
