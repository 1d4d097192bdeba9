"""Dataframes: read -> filter -> groupby-sum over CSV and parquet files, and a shuffle merge.

    python benchmarks/dataframe.py --impl xsched|dask [--json] [--quick] [--data DIR] [--mb N]
                                   [--shuffle p2p|tasks] [--again]

Two worker processes x 1 thread. The data (made once under --data, then reused): ``--mb``
of CSV in files of ~64 MB (one partition each, for both implementations), columns id, name,
x, y, z; and the same rows as parquet. Figures: wall time of each pipeline, the workers' CPU
seconds over it (each and together), peak RSS above idle per worker (sampled every 20 ms
plus the kernel's exact peak, VmHWM), that peak as a multiple of one partition in memory,
and whether the result equals pandas' on the files.
``--again`` runs the csv and parquet jobs a second time on the same workers (``csv_again``,
``parquet_again``): a worker's first parse costs memory once (readers, allocators' arenas).
The seed002 job is seed 002's published-dataset workflow on the CSV files: read, keep the
rows with x < 0, ``client.persist``, ``head()``, ``publish_dataset``; a second client on the same
scheduler takes the dataset and sums x per name (wall time from the read to that sum; the
persisted rows, ``persisted_mb`` in pandas, stay on the workers and count in their peaks; it
runs after the other jobs, as what it frees stays in the workers' RSS). Each job's peak is
above the RSS the jobs before it left.
The describe job persists a demo time series of 1,704 partitions of 60 rows (ten weeks of a row
a minute, a partition an hour; each implementation's own generator) and times ``describe()``
of its numeric columns: a job of many small tasks, checked on the rows every implementation
gives exactly (count, mean, min, max).
The set_index job sorts the frame (id, name, x, y) by the unsorted column x (quantiles, then
a range shuffle) and counts each partition's rows, checking every one is sorted. The merge
joins the frame (id, name, x, y) with a second one of a quarter of its rows
(id, z) on ``id`` through a hash shuffle of both sides (no broadcast; dask's P2P shuffle),
then sums z (xsched: by the ``--shuffle`` method, p2p unless told); with ``--memory-limit`` small the data moved is larger than the cluster's
memory and must spill. The nunique and dropdup jobs (run when named) take the distinct values of
the column id, nearly one per row: ``df.id.nunique()``, and ``df[["id", "x"]].drop_duplicates(subset=["id"])``
whose rows are counted, each implementation's default way (a task gathering every distinct
value is what they measure). Figures are printed, never asserted.
"""

from __future__ import annotations

import argparse
import glob
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

NAMES = np.array(["Alice", "Bob", "Charlie", "Dan", "Edith", "Frank", "George", "Hannah", "Ingrid", "Jerry",
                  "Kevin", "Laura", "Michael", "Norbert", "Oliver", "Patricia", "Quinn", "Ray", "Sarah", "Tim",
                  "Ursula", "Victor", "Wendy", "Xavier", "Yvonne", "Zelda"])
ROWS_PER_FILE = 1_000_000  # ~64 MB of CSV, ~56 MB in pandas


def make_data(directory: str, mb: int) -> tuple[str, str]:
    """CSV and parquet copies of the same rows (written once; reused when present)."""
    import pandas as pd

    csv_dir, pq_dir = os.path.join(directory, f"csv-{mb}"), os.path.join(directory, f"parquet-{mb}")
    files = max(1, round(mb / 64))
    if len(glob.glob(os.path.join(csv_dir, "*.csv"))) == files and \
            len(glob.glob(os.path.join(pq_dir, "*.parquet"))) == files:
        return csv_dir, pq_dir
    os.makedirs(csv_dir, exist_ok=True)
    os.makedirs(pq_dir, exist_ok=True)
    rows = ROWS_PER_FILE if mb >= 64 else int(ROWS_PER_FILE * mb / 64)
    for i in range(files):
        rng = np.random.default_rng(i)
        part = pd.DataFrame({"id": rng.integers(0, 10 * rows * files, rows), "name": NAMES[rng.integers(0, 26, rows)],
                             "x": rng.normal(size=rows).round(6), "y": rng.normal(size=rows).round(6),
                             "z": rng.integers(-1000, 1000, rows)})
        part.to_csv(os.path.join(csv_dir, f"part-{i:03d}.csv"), index=False)
        part.to_parquet(os.path.join(pq_dir, f"part-{i:03d}.parquet"), index=False)
    return csv_dir, pq_dir


def _sorted_rows(part):
    """A partition's rows, or a large negative number when its index is not sorted."""
    import pandas as pd

    return pd.Series([len(part) if part.index.is_monotonic_increasing else -10**12])


def load_dataframe(name: str):
    if name == "xsched":
        import xsched.dataframe as dd
    else:
        import dask.dataframe as dd
    return dd


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--impl", choices=("xsched", "dask"), required=True)
    p.add_argument("--json", action="store_true")
    p.add_argument("--quick", action="store_true", help="128 MB of CSV: a smoke check")
    p.add_argument("--mb", type=int, default=None, help="MB of CSV (default 2048)")
    p.add_argument("--jobs", default="csv,parquet,merge,seed002", help="which pipelines, comma-separated "
                   "(csv, parquet, merge, setindex, seed002, describe)")
    p.add_argument("--memory-limit", default="4GB", help="per worker (the merge job at 1GB with --mb 4096 "
                   "moves twice the cluster's memory)")
    p.add_argument("--shuffle", choices=("p2p", "tasks"), default="p2p",
                   help="xsched's shuffle method for the merge (dask uses its P2P shuffle)")
    p.add_argument("--again", action="store_true",
                   help="run the csv and parquet jobs a second time on the same workers (csv_again, "
                        "parquet_again): the peak once a worker has parsed a file before")
    p.add_argument("--data", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), ".data"))
    args = p.parse_args(argv)
    import pandas as pd

    mb = args.mb or (128 if args.quick else 2048)
    csv_dir, pq_dir = make_data(args.data, mb)
    csv_files = sorted(glob.glob(os.path.join(csv_dir, "*.csv")))
    pq_files = sorted(glob.glob(os.path.join(pq_dir, "*.parquet")))
    ns = common.load_impl(args.impl)
    dd = load_dataframe(args.impl)
    one = pd.read_parquet(pq_files[0])
    part_mb = one.memory_usage(deep=True).sum() / 1e6
    # pandas' answers, file by file (the whole data never in this process at once)
    sums = None
    for f in pq_files:
        part = pd.read_parquet(f, columns=["name", "x", "y"])
        s = part[part.x > 0].groupby("name").y.sum()
        sums = s if sums is None else sums.add(s, fill_value=0)
    del one, part

    def same_sums(result):
        return np.allclose(result.sort_index().to_numpy(), sums.sort_index().to_numpy())

    jobs = args.jobs.split(",")
    result = {"benchmark": "dataframe", "impl": ns.name, "version": ns.version, "csv_mb": mb,
              "shuffle": "p2p" if args.impl == "dask" else args.shuffle,
              "memory_limit": args.memory_limit, "jobs": jobs,
              "files": len(csv_files), "partition_mb": part_mb, "workers": "2 x 1 thread (processes)",
              **common.environment()}
    cluster = client = None
    try:
        cluster, client, addrs = common.start(ns, n_workers=2, threads_per_worker=1, memory_limit=args.memory_limit)
        pids = sorted(client.run(os.getpid).values())
        client.run(lambda: __import__("pandas") and __import__("pyarrow") and None)

        def csv_pipeline():
            df = dd.read_csv(os.path.join(csv_dir, "*.csv"), blocksize=None)
            return df[df.x > 0].groupby("name").y.sum()

        def pq_pipeline():
            df = dd.read_parquet(pq_dir, columns=["name", "x", "y"])
            return df[df.x > 0].groupby("name").y.sum()

        for job, pipeline in (("csv", csv_pipeline), ("parquet", pq_pipeline)):
            if job in jobs:
                result[job] = common.measured_compute(client, pids, pipeline(), same_sums)
                if args.again:
                    result[f"{job}_again"] = common.measured_compute(client, pids, pipeline(), same_sums)

        def merge_pipeline():
            left = dd.read_parquet(pq_dir, columns=["id", "name", "x", "y"])
            right = dd.read_parquet(pq_files[: max(1, len(pq_files) // 4)], columns=["id", "z"])
            if args.impl == "dask":
                joined = left.merge(right, on="id", shuffle_method="p2p", broadcast=False)
            else:
                import xsched

                with xsched.config.set({"shuffle.method": args.shuffle}):
                    joined = left.merge(right, on="id", broadcast=False)
            return joined.z.sum()

        def setindex_pipeline():
            df = dd.read_parquet(pq_dir, columns=["id", "name", "x", "y"])
            if args.impl == "dask":
                indexed = df.set_index("x", shuffle_method="p2p")
            else:
                import xsched

                with xsched.config.set({"shuffle.method": args.shuffle}):
                    indexed = df.set_index("x")
            # rows per partition, and whether each is sorted: every row moved, in order
            return indexed.map_partitions(_sorted_rows, meta=(None, "i8")).sum()

        def seed002_workflow():
            """Seed 002's published dataset: read, filter, persist, head, publish; a second client
            on the same scheduler takes the dataset and sums balances per name."""
            df = dd.read_csv(os.path.join(csv_dir, "*.csv"), blocksize=None)
            df2 = client.persist(df[df.x < 0])
            head = df2.head()
            client.publish_dataset(accounts=df2)
            with ns.Client(cluster, set_as_default=False) as second:
                accounts = second.get_dataset("accounts")
                sums = second.compute(accounts.groupby("name").x.sum(), sync=True)
            client.unpublish_dataset("accounts")
            return head, sums

        if "describe" in jobs:  # many small partitions: what each costs in tasks, not in data
            if args.impl == "dask":
                import dask.datasets

                demo = dask.datasets.timeseries("2000-01-01", "2000-03-12", freq="60s", partition_freq="1h")
            else:
                demo = dd.demo.timeseries("2000-01-01", "2000-03-12", freq="60s", partition_freq="1h")
            demo = client.persist(demo)
            whole = demo.compute()  # (also waits for the persisted partitions)
            numbers = whole.select_dtypes("number")
            exact = numbers.agg(["count", "mean", "min", "max"])

            def same_description(got):  # (the rows every implementation gives exactly: quantiles may be approximate)
                return np.allclose(got.loc[exact.index, exact.columns].to_numpy(float), exact.to_numpy(float))

            result["describe"] = common.measured_compute(client, pids, demo.describe(), same_description)
            result["describe"]["partitions"] = int(demo.npartitions)
            del demo, whole
        if "setindex" in jobs:
            rows = sum(pd.read_parquet(f, columns=["id"]).shape[0] for f in pq_files)
            result["setindex"] = common.measured_compute(client, pids, setindex_pipeline(), lambda r: int(r) == rows)
        if "nunique" in jobs or "dropdup" in jobs:
            distinct_ids = int(pd.concat(pd.read_parquet(f, columns=["id"]) for f in pq_files).id.nunique())
            ids = dd.read_parquet(pq_dir, columns=["id", "x"])
            if "nunique" in jobs:
                result["nunique"] = common.measured_compute(client, pids, ids.id.nunique(),
                                                            lambda r: int(r) == distinct_ids)
            if "dropdup" in jobs:
                kept = ids.drop_duplicates(subset=["id"]).map_partitions(len).sum()
                result["dropdup"] = common.measured_compute(client, pids, kept, lambda r: int(r) == distinct_ids)
        if "merge" in jobs:
            left_ids = pd.concat(pd.read_parquet(f, columns=["id"]) for f in pq_files)
            right_parts = pd.concat(pd.read_parquet(f, columns=["id", "z"]) for f in pq_files[: max(1, len(pq_files) // 4)])
            expected_merge = int(left_ids.merge(right_parts, on="id").z.sum())
            del left_ids, right_parts
            result["merge"] = common.measured_compute(client, pids, merge_pipeline(), lambda r: int(r) == expected_merge)
        if "seed002" in jobs:  # last: its persisted rows leave the workers' RSS higher for any job after it
            neg, outputs_mb = None, 0.0
            for f in pq_files:
                part = pd.read_parquet(f)  # the CSV files' rows
                kept = part[part.x < 0]
                outputs_mb += kept.memory_usage(deep=True).sum() / 1e6
                s = kept.groupby("name").x.sum()
                neg = s if neg is None else neg.add(s, fill_value=0)
            del part, kept

            def seed002_right(got):
                head, got_sums = got
                return (len(head) == 5 and bool((head.x < 0).all())
                        and np.allclose(got_sums.sort_index().to_numpy(), neg.sort_index().to_numpy()))

            result["seed002"] = common.measured(pids, seed002_workflow, seed002_right)
            # the persisted rows stay on the workers to the end: they are the workflow's outputs
            result["seed002"]["persisted_mb"] = float(outputs_mb)
        for key in [*jobs, *(f"{j}_again" for j in jobs if f"{j}_again" in result)]:
            r = result[key]
            r["peak_over_partition"] = [m / part_mb for m in r["peak_above_idle_mb"]]
    except Exception as e:
        result["error"] = common.report_error(f"{ns.name} dataframe", e)
    finally:
        common.stop(cluster, client)
    common.emit(result, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
