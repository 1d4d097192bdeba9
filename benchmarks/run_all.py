"""Run every benchmark under each implementation available and print side-by-side tables.

    python benchmarks/run_all.py [--only engine|movie|seed003|spill|bigtree|twohost|coordination|dataframe|arrays|clients
        |sim|hosts] [--quick]
        [--bigtree-million] [--data DIR] [--logs DIR]

xsched runs under the project's interpreter (.venv); dask.distributed under
.venv-dask/bin/python and Ray (engine figures only) under .venv-ray/bin/python when they
exist (``make bench-env`` creates both; neither is ever a dependency of xsched). Each (benchmark, implementation[, variant]) runs in its own
subprocess, one after another, never in parallel: the figures of one never share the
machine with another. Each table is printed as soon as its runs finish, with the exact
commands above it (Markdown, ready to paste into an issue note). Every run's stderr is
kept under --logs, and all raw figures in results.json there.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
BENCHMARKS = ("engine", "movie", "seed003", "spill", "bigtree", "twohost", "coordination", "dataframe", "arrays",
              "clients", "sim", "hosts")
MOVIE_VARIANTS = ("fused", "unfused", "delayed", "futures")


def interpreters() -> dict:
    """{impl: python executable} for the implementations available here."""
    xs = os.path.join(REPO, ".venv", "bin", "python")
    out = {"xsched": xs if os.path.exists(xs) else sys.executable}
    for impl in ("dask", "ray"):
        py = os.path.join(REPO, f".venv-{impl}", "bin", "python")
        if os.path.exists(py):
            out[impl] = py
    return out


class Runner:
    def __init__(self, logs: str, quick: bool):
        self.logs = logs
        self.quick = quick
        self.n = 0
        self.results: list[dict] = []

    def run(self, label: str, cmd: list[str], timeout: float, expect_json: bool = True) -> dict:
        """Run one benchmark process to the end; its JSON figures (or an ``error``)."""
        self.n += 1
        log = os.path.join(self.logs, f"{self.n:02d}-{label}.stderr.log")
        print(f"  [{self.n:02d}] {label}: {shlex.join(cmd)}", file=sys.stderr, flush=True)
        t0 = time.perf_counter()
        with open(log, "w") as err:
            proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=err, text=True,
                                    start_new_session=True)  # its own process group: we can stop all of it
            try:
                out, _ = proc.communicate(timeout=timeout)
                failure = None if proc.returncode == 0 else f"exit code {proc.returncode}"
            except subprocess.TimeoutExpired:
                _stop_group(proc)
                out, _ = proc.communicate()
                failure = f"timed out after {timeout:.0f}s (stopped)"
        dt = time.perf_counter() - t0
        figures = None
        for line in reversed((out or "").splitlines()):
            if line.startswith("{"):
                try:
                    figures = json.loads(line)
                    break
                except ValueError:
                    pass
        if figures is None:
            figures = {"error": f"error: {failure or 'no figures printed'}; see {log}"} if failure or expect_json else {}
        elif failure:
            figures.setdefault("error", f"error: {failure}; see {log}")
        figures["command"] = shlex.join(cmd)
        figures["stderr_log"] = log
        figures["run_seconds"] = dt
        self.results.append({"label": label, **figures})
        print(f"       done in {dt:.1f}s{'  (' + figures['error'] + ')' if 'error' in figures else ''}",
              file=sys.stderr, flush=True)
        return figures


def _stop_group(proc: subprocess.Popen) -> None:
    """Stop a timed-out benchmark and the cluster processes it started (its own group)."""
    for sig, wait in ((signal.SIGTERM, 15), (signal.SIGKILL, 5)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(wait)
            return
        except subprocess.TimeoutExpired:
            continue


# ---------------------------------------------------------------------- formatting
def table(header: list[str], rows: list[list]) -> str:
    cells = [[str(c) for c in header]] + [[_cell(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    lines = ["| " + " | ".join(c.ljust(w) for c, w in zip(cells[0], widths)) + " |",
             "|" + "|".join("-" * (w + 2) for w in widths) + "|"]
    for r in cells[1:]:
        lines.append("| " + " | ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths)))
                     + " |")
    return "\n".join(lines)


def _cell(v) -> str:
    if v is None:
        return "—"
    if isinstance(v, float):
        if abs(v) >= 100:
            return f"{v:,.0f}"
        if abs(v) >= 10:
            return f"{v:.1f}"
        return f"{v:.2f}"
    return str(v)


def _ratio(a, b):
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and b:
        return f"{a / b:.2f}x"
    return None


class Notes:
    """Footnotes for errors, so table cells stay short."""

    def __init__(self):
        self.items: list[str] = []

    def add(self, text: str) -> str:
        self.items.append(text)
        return f"error [{len(self.items)}]"

    def __str__(self) -> str:
        return "\n".join(f"[{i}] {t}" for i, t in enumerate(self.items, 1))


def print_header(title: str, results: list[dict]) -> None:
    print(f"\n### {title}\n")
    print("Commands (each in its own process, one after another, in this order):\n")
    for r in results:
        print(f"    {r['command']}")
    print()


def env_line(results: list[dict]) -> str:
    r = next((r for r in results if "python" in r), None)
    if not r:
        return ""
    vers = "; ".join(dict.fromkeys(x["version"] if x["impl"] == "dask" else f"{x['impl']} {x['version']}"
                                   for x in results if "version" in x and "impl" in x))
    return (f"Python {r['python']}, numpy {r['numpy']}, {r['cpus']} CPUs, {r['ram_gib']} GiB RAM; "
            f"load average (1 min) at start {r['load_avg_1m']}; {vers}")


# ---------------------------------------------------------------------- benchmarks
def bench_engine(runner: Runner, pys: dict, args) -> None:
    res = {}
    for impl, py in pys.items():
        cmd = [py, os.path.join(HERE, "engine.py"), "--impl", impl, "--json"] + (["--quick"] if args.quick else [])
        res[impl] = runner.run(f"engine-{impl}", cmd, 120 if args.quick else 900)
    peers = [i for i in res if i != "xsched"]
    print_header("engine: 2 workers x 1 thread (processes)", list(res.values()))
    print(env_line(list(res.values())) + "\n")
    impls = list(res)
    notes = Notes()
    x = res.get("xsched", {})
    n_map, n_tree = f"{x.get('map_tasks', 10_000):,}", f"{x.get('tree_tasks', 9_999):,}"
    mib, reps, calls = x.get("transfer_mib", 256), x.get("transfer_repeats", 5), x.get("latency_calls", 200)
    specs = [
        (f"map + gather, {n_map} no-op tasks (tasks/s, higher is better)", "map_tasks_per_s", "map"),
        (f"delayed tree reduction, {n_tree} tasks (tasks/s, higher is better)", "tree_tasks_per_s", "tree"),
        ("CPU per map task, client + scheduler + workers (ms, lower is better)", "map_cpu_ms_per_task", "map"),
        ("CPU per tree task, client + scheduler + workers (ms, lower is better)", "tree_cpu_ms_per_task", "tree"),
        (f"submit().result() round trip, median of {calls} (ms, lower is better)", "latency_ms_median", "latency"),
        (f"{mib} MiB numpy array worker 0 -> task on worker 1, median of {reps} (MiB/s, higher is better)",
         "transfer_mib_per_s_median", "transfer"),
    ]
    rows = []
    for label, key, step in specs:
        row = [label]
        for impl in impls:
            r = res[impl]
            err = r.get(f"{step}_error") or (r.get("error") if key not in r else None)
            ok = r.get(f"{step}_correct", True)
            cell = notes.add(f"{impl} {step}: {err}") if err else r.get(key)
            if not err and ok is False:
                cell = f"{_cell(cell)} (WRONG RESULT)"
            row.append(cell)
        for peer in peers:
            row.append(_ratio(res["xsched"].get(key), res[peer].get(key)))
        rows.append(row)
    print(table(["figure"] + impls + [f"xsched / {p}" for p in peers], rows))
    if notes.items:
        print(f"\n{notes}")


def bench_movie(runner: Runner, pys: dict, args) -> None:
    quick = ["--quick"] if args.quick else []
    script = os.path.join(HERE, "movie.py")
    prep = runner.run("movie-prepare", [pys["xsched"], script, "--impl", "xsched", "--prepare", "--data", args.data]
                      + quick, 600 if args.quick else 3600, expect_json=False)
    runner.results.pop()  # the preparation prints a path, not figures
    if "error" in prep:
        print(f"\n### movie\n\ncould not create the movie: {prep['error']}")
        return
    res: dict[tuple[str, str], dict] = {}
    for variant in MOVIE_VARIANTS:
        for impl, py in pys.items():
            cmd = [py, script, "--impl", impl, "--variant", variant, "--data", args.data, "--json"] + quick
            res[impl, variant] = runner.run(f"movie-{variant}-{impl}", cmd, 120 if args.quick else 900)
    cmd = [pys["xsched"], script, "--impl", "multiprocessing", "--data", args.data, "--json"] + quick
    pool = runner.run("movie-multiprocessing", cmd, 120 if args.quick else 900)
    everything = list(res.values()) + [pool]
    first = next((r for r in everything if "shape" in r), {})
    shape = "x".join(map(str, first.get("shape", ["?"])))
    runs = {k: (r.get("runs") or [{}])[0] for k, r in res.items()}
    pool_run = (pool.get("runs") or [{}])[0]
    ideal = pool_run.get("ideal_mb") or next((r.get("ideal_mb") for r in runs.values() if r.get("ideal_mb")), None)
    print_header(f"movie (seed 000): ({shape}) float32 HDF5, 100-frame chunks, 2 workers x 1 thread, "
                 f"memory_limit=1GB", everything)
    print(env_line(everything))
    print(f"Ideal memory above idle per worker: one chunk plus its 10 summed images = {_cell(ideal)} MB. "
          "peak/ideal is the larger worker's; wall x pool is wall time over the Pool(2).imap run.\n")
    notes = Notes()
    pool_wall = pool_run.get("wall_seconds")
    impls = list(pys)
    header = ["variant"]
    for impl in impls:
        header += [f"{impl} wall (s)", f"{impl} wall x pool", f"{impl} peak/ideal (w0, w1)", f"{impl} spilled"]
    rows = []
    checksums = set()
    for variant in MOVIE_VARIANTS:
        row = [variant]
        for impl in impls:
            outer, run = res[impl, variant], runs[impl, variant]
            err = run.get("error") or outer.get("error")
            if run.get("checksum") is not None:
                checksums.add(run["checksum"])
            if err or "wall_seconds" not in run:
                row += [notes.add(f"{impl} {variant}: {err or 'no figures'}"), None, None, _spilled(run.get("spilled"))]
                continue
            row += [run["wall_seconds"], _ratio(run["wall_seconds"], pool_wall), _peaks(run),
                    _spilled(run.get("spilled"))]
            if not run.get("correct_shape", True):
                row[-3] = f"{row[-3]} (WRONG RESULT)"
        rows.append(row)
    print(table(header, rows))
    print()
    if pool_run.get("error") or pool.get("error") or "wall_seconds" not in pool_run:
        print(f"By hand, multiprocessing.Pool(2).imap: {pool_run.get('error') or pool.get('error')}")
    else:
        if pool_run.get("checksum") is not None:
            checksums.add(pool_run["checksum"])
        print(table(["by hand", "wall (s)", "peak/ideal (p0, p1)"],
                    [["multiprocessing.Pool(2).imap", pool_wall, _peaks(pool_run, ("p0", "p1"))]]))
    print(f"\nResults identical across all runs that finished: {'yes' if len(checksums) <= 1 else 'NO'} "
          f"(checksum of image sums: {', '.join(map(str, sorted(checksums))) or '—'})")
    if notes.items:
        print(f"\n{notes}")


def _peaks(run: dict, names=("w0", "w1")) -> str:
    ws = run.get("workers") or {}
    parts = [f"{ws[n]['ratio']:.2f}" for n in names if n in ws]
    return f"{run.get('ratio_max', 0):.2f} ({', '.join(parts)})" if parts else "—"


def _spilled(sp) -> str:
    if sp is None:
        return "—"
    if isinstance(sp, str):
        return sp
    count = sum(int(v.get("count", 0)) for v in sp.values())
    nbytes = sum(int(v.get("bytes", 0)) for v in sp.values())
    return "no" if not count and not nbytes else f"yes: {count} keys, {nbytes / 1e6:,.0f} MB"


def bench_seed003(runner: Runner, pys: dict, args) -> None:
    res = {}
    for impl, py in pys.items():
        cmd = [py, os.path.join(HERE, "seed003.py"), "--impl", impl, "--json"] + (["--quick"] if args.quick else [])
        res[impl] = runner.run(f"seed003-{impl}", cmd, 120 if args.quick else 600)
    x = res.get("xsched", {})
    part = x.get("partition_mb", 520.0)
    print_header(f"seed 003: 1 worker x 1 thread, memory_limit=2GB, two {part:.0f} MB DataFrames -> len -> sum",
                 list(res.values()))
    print(env_line(list(res.values())) + "\n")
    impls = list(res)
    notes = Notes()
    specs = [("peak RSS above idle / one partition (x, lower is better)", "peak_over_partition"),
             ("peak RSS above idle (MB)", "peak_above_idle_mb"),
             ("wall time (s)", "wall_seconds")]
    rows = []
    errs = {impl: (notes.add(f"{impl}: {r['error']}") if r.get("error") else None) for impl, r in res.items()}
    for label, key in specs:
        row = [label]
        for impl in impls:
            r = res[impl]
            row.append(errs[impl] or (f"{_cell(r.get(key))} (WRONG RESULT)" if r.get("correct") is False
                                      else r.get(key)))
        rows.append(row)
    print(table(["figure"] + impls, rows))
    if notes.items:
        print(f"\n{notes}")


def bench_dataframe(runner: Runner, pys: dict, args) -> None:
    """read -> filter -> groupby-sum over CSV and parquet, a shuffle merge, describe of many
    small partitions and seed 002's published-dataset workflow (dataframe.py), beside dask."""
    res, runs = {}, []
    for impl, py in pys.items():
        cmd = [py, os.path.join(HERE, "dataframe.py"), "--impl", impl, "--json"] + (["--quick"] if args.quick else [])
        res[impl] = runner.run(f"dataframe-{impl}", cmd + ["--jobs", "csv,parquet,merge,describe"],
                               300 if args.quick else 1800)
        # seed 002 on fresh workers: after the other jobs, their idle RSS would hide its peak
        seed = runner.run(f"dataframe-seed002-{impl}", cmd + ["--jobs", "seed002"], 300 if args.quick else 900)
        runs += [res[impl], seed]
        if "seed002" in seed:
            res[impl]["seed002"] = seed["seed002"]
        elif seed.get("error") and not res[impl].get("error"):
            res[impl]["error"] = seed["error"]
    x = res.get("xsched", {})
    print_header(f"dataframes: 2 workers x 1 thread, {x.get('csv_mb', '?')} MB of CSV in {x.get('files', '?')} files "
                 f"({x.get('partition_mb', 0):.0f} MB per partition in pandas; seed002 keeps "
                 f"{x.get('seed002', {}).get('persisted_mb', 0):.0f} MB of them persisted)", runs)
    _jobs_table(res, ("csv", "parquet", "merge", "describe", "seed002"),
                (("wall time (s, lower is better)", "wall_seconds"),
                 ("CPU of the workers together (s)", "workers_cpu_seconds"),
                 ("peak RSS above idle per worker / one partition (x)", "peak_over_partition")))


def _jobs_table(res: dict, jobs, figures) -> None:
    """One row per (job, figure) with each implementation's value and xsched's ratio to each
    peer; a list of per-worker values shows its largest; a wrong result is marked."""
    impls = list(res)
    notes = Notes()
    errs = {impl: (notes.add(f"{impl}: {r['error']}") if r.get("error") else None) for impl, r in res.items()}
    peers = [i for i in impls if i != "xsched"]
    rows = []
    for job in jobs:
        for label, key in figures:
            row = [f"{job}: {label}"]
            values = {}
            for impl in impls:
                r = res[impl].get(job) or {}
                v = r.get(key)
                v = max(v) if isinstance(v, list) and v else v
                values[impl] = v
                row.append(errs[impl] or (f"{_cell(v)} (WRONG RESULT)" if r.get("correct") is False else v))
            row += [_ratio(values.get("xsched"), values.get(peer)) for peer in peers]
            rows.append(row)
    print(table(["figure"] + impls + [f"xsched / {peer}" for peer in peers], rows))
    if notes.items:
        print(f"\n{notes}")


def bench_arrays(runner: Runner, pys: dict, args) -> None:
    """The array issue's five computations beside dask.array (arrays.py); Ray has no arrays."""
    res = {}
    for impl, py in pys.items():
        if impl == "ray":
            continue
        cmd = [py, os.path.join(HERE, "arrays.py"), "--impl", impl, "--json"] + (["--quick"] if args.quick else [])
        res[impl] = runner.run(f"arrays-{impl}", cmd, 300 if args.quick else 1800)
    x = res.get("xsched", {})
    print_header(f"arrays: 2 workers x 1 thread, n = {x.get('n', '?')} (x @ x of n x n float64, ...)",
                 list(res.values()))
    from arrays import JOBS

    _jobs_table(res, JOBS, (("wall time (s, lower is better)", "wall_seconds"),
                            ("CPU of the workers together (s)", "workers_cpu_seconds"),
                            ("peak RSS above idle per worker (MB)", "peak_above_idle_mb")))


def bench_coordination(runner: Runner, pys: dict, args) -> None:
    """Lock, Queue and MultiLock round trips through the scheduler and actor calls to a worker
    (coordination.py), beside dask."""
    res = {}
    n = "100" if args.quick else "1000"
    for impl, py in pys.items():
        cmd = [py, os.path.join(HERE, "coordination.py"), "--impl", impl, "--json", "-n", n]
        res[impl] = runner.run(f"coordination-{impl}", cmd, 120 if args.quick else 600)
    print_header(f"coordination: a synchronous client, one worker process, {n} pairs", list(res.values()))
    impls = list(res)
    notes = Notes()
    specs = [("Lock.acquire() + release(), median (µs, lower is better)", "lock_acquire_release_us_median"),
             ("Lock.acquire() + release(), p90 (µs)", "lock_acquire_release_us_p90"),
             ("Queue.put() + get(), median (µs, lower is better)", "queue_put_get_us_median"),
             ("Queue.put() + get(), p90 (µs)", "queue_put_get_us_p90"),
             ("MultiLock of two acquire() + release(), median (µs, lower is better)",
              "multilock_acquire_release_us_median"),
             ("MultiLock of two acquire() + release(), p90 (µs)", "multilock_acquire_release_us_p90"),
             ("actor method call, median (µs, lower is better)", "actor_call_us_median"),
             ("actor method call, p90 (µs)", "actor_call_us_p90")]
    errs = {impl: (notes.add(f"{impl}: {r['error']}") if r.get("error") else None) for impl, r in res.items()}
    peers = [i for i in impls if i != "xsched"]
    rows = []
    for label, key in specs:
        row = [label] + [errs[impl] or res[impl].get(key) for impl in impls]
        row += [_ratio(res.get("xsched", {}).get(key), res[peer].get(key)) for peer in peers]
        rows.append(row)
    print(table(["figure"] + impls + [f"xsched / {peer}" for peer in peers], rows))
    if notes.items:
        print(f"\n{notes}")


def bench_spill(runner: Runner, pys: dict, args) -> None:
    res = {}
    for impl, py in pys.items():
        cmd = [py, os.path.join(HERE, "spill.py"), "--impl", impl, "--json"] + (["--quick"] if args.quick else [])
        res[impl] = runner.run(f"spill-{impl}", cmd, 120 if args.quick else 900)
    blocks = res.get("xsched", {}).get("blocks", 20)
    print_header(f"spill: 1 worker x 1 thread, memory_limit=1GB, {blocks} x 100 MiB arrays held, "
                 "sum of each, total", list(res.values()))
    print(env_line(list(res.values())) + "\n")
    impls = list(res)
    notes = Notes()
    specs = [("wall time (s)", "wall_seconds"), ("correct", "correct"), ("peak worker RSS (MiB)", "peak_rss_mb"),
             ("peak under the 1 GB limit", "under_limit"), ("spilled (MiB)", "spilled_mb"),
             ("read back all blocks (s)", "reread_seconds"),
             ("spill write (MiB/s)", "spill_write_mib_s"), ("spill read (MiB/s)", "spill_read_mib_s"),
             ("disk write, fdatasync (MiB/s)", "disk_write_mib_s"), ("disk read, cold (MiB/s)", "disk_read_cold_mib_s")]
    errs = {impl: (notes.add(f"{impl}: {r['error']}") if r.get("error") else None) for impl, r in res.items()}
    rows = [[label] + [errs[i] or res[i].get(key) for i in impls] for label, key in specs]
    print(table(["figure"] + impls, rows))
    if notes.items:
        print(f"\n{notes}")


def bench_bigtree(runner: Runner, pys: dict, args) -> None:
    """A 100,000-task delayed tree on each implementation, and 1,000,000 tasks on xsched
    (``--bigtree-million``: about a quarter of an hour here, so asked for explicitly)."""
    res = {}
    for impl, py in pys.items():
        sizes = ["9999"] if args.quick else ["99999"] + (["999999"] if impl == "xsched" and args.bigtree_million else [])
        cmd = [py, os.path.join(HERE, "bigtree.py"), "--impl", impl, "--json", "--tasks", *sizes]
        res[impl] = runner.run(f"bigtree-{impl}", cmd, 300 if args.quick else 3600)
    print_header("bigtree: delayed tree reduction, 2 workers x 1 thread", list(res.values()))
    print(env_line(list(res.values())) + "\n")
    impls = list(res)
    sizes = sorted({int(k.rsplit("_", 1)[1]) for r in res.values() for k in r if k.startswith("tasks_per_s_")})
    rows = []
    for n in sizes:
        for label, key in [("build (s)", "build_seconds"), ("submit (s)", "submit_seconds"), ("run (s)", "run_seconds"),
                           ("tasks/s (submit + run)", "tasks_per_s"), ("scheduler peak above idle, bytes per task",
                                                                       "scheduler_bytes_per_task"),
                           ("correct", "correct")]:
            rows.append([f"{n:,} tasks: {label}"] + [res[i].get(f"{key}_{n}", res[i].get("error", "—")) for i in impls])
    print(table(["figure"] + impls, rows))


def bench_twohost(runner: Runner, pys: dict, args) -> None:
    """Worker-to-worker between two network-namespace hosts (root only): encrypted vs plain TCP."""
    sys.path.insert(0, REPO)
    from tests.support.netns import netns_available

    why = netns_available()
    if why is not None:
        print(f"\n### twohost\n\nskipped: {why}")
        return
    cmd = [pys["xsched"], os.path.join(HERE, "twohost.py"), "--json", "--capture"]
    for impl in pys:
        cmd += ["--impl", impl]
    if args.quick:
        cmd.append("--quick")
    run = runner.run("twohost", cmd, 300 if args.quick else 1200)
    res = run.get("results", {})
    mib = run.get("transfer_mib", 256)
    print_header(f"twohost: {mib} MiB array, worker on host A -> task on host B (network namespaces + veth)",
                 [run])
    impls = [i for i in pys if i in res]
    rows = [[f"median of {run.get('rounds', 1)} x {run.get('repeats', 5)} (MiB/s, higher is better)"]
            + [res[i].get("mib_per_s_median") for i in impls],
            ["min - max (MiB/s)"] + [f"{_cell(res[i].get('mib_per_s_min'))} - {_cell(res[i].get('mib_per_s_max'))}"
                                     for i in impls],
            ["scatter, client on B -> worker on A, median (MiB/s)"]
            + [res[i].get("scatter_mib_per_s_median") for i in impls],
            ["array bytes seen in clear on B's wire"] + [res[i].get("capture", {}).get("plaintext_fraction_of_array")
                                                         for i in impls]]
    if len(impls) > 1:
        rows[0].append(_ratio(res["xsched"].get("mib_per_s_median"), res["dask"].get("mib_per_s_median")))
        rows[1].append("")
        rows[2].append(_ratio(res["xsched"].get("scatter_mib_per_s_median"), res["dask"].get("scatter_mib_per_s_median")))
        rows[3].append("")
    print(table(["figure"] + impls + (["xsched / dask"] if len(impls) > 1 else []), rows))
    if run.get("error"):
        print(f"\nerror: {run['error']}")


def bench_clients(runner: Runner, pys: dict, args) -> None:
    """20 client processes submitting at once, then clients leaving (clients.py); xsched only."""
    n, per = ("6", "300") if args.quick else ("20", "1000")
    cmd = [pys["xsched"], os.path.join(HERE, "clients.py"), "--json", "--clients", n, "--tasks-per-client", per]
    if args.quick:
        cmd += ["--churn-seconds", "2"]
    r = runner.run("clients-xsched", cmd, 300 if args.quick else 900)
    print_header(f"clients: {n} client processes x {per} tasks at once, then clients leaving; "
                 f"{r.get('workers', '2 x 1 thread')}", [r])
    print(env_line([r]) + "\n")
    if r.get("error"):
        print(f"error: {r['error']}")
    rates = [c["tasks_per_s"] for c in r.get("per_client") or []]
    by = r.get("churn_leaving_by") or {}
    rows = [
        [f"{n} clients together: tasks/s, all clients (higher is better)", r.get("tasks_per_s")],
        ["fairness: slowest client's tasks/s / fastest's (1 is fair)", r.get("fairness")],
        ["per client tasks/s, min - max", f"{_cell(min(rates))} - {_cell(max(rates))}" if rates else None],
        ["results correct", r.get("all_correct")],
        ["churn: futures released per second by clients that left", r.get("churn_released_per_s")],
        ["churn: client processes (close / exit / kill)",
         f"{r.get('churn_processes')} ({by.get('close')} / {by.get('exit')} / {by.get('kill')})" if by else None],
        ["leaked tasks / clients / wanted keys",
         " / ".join(_cell(r.get(f"leaked_{k}")) for k in ("tasks", "clients", "wants"))],
        ["tables back after the last client left (s)", r.get("drain_seconds")],
    ]
    print(table(["figure", "xsched"], rows))


def bench_sim(runner: Runner, pys: dict, args) -> None:
    """The scheduler's state machines at 2 to 10,000 workers in virtual time (sim.py); xsched only."""
    widths = (2, 10, 100) if args.quick else (2, 10, 100, 1000, 10000)
    tasks = "2000" if args.quick else "20000"
    runs = {}
    for workload in ("map", "tree"):
        for w in widths:
            cmd = [pys["xsched"], os.path.join(HERE, "sim.py"), "--workers", str(w), "--workload", workload,
                   "--tasks", tasks, "--threads", "8", "--seed", "0"]
            runs[workload, w] = runner.run(f"sim-{workload}-{w}", cmd, 600 if w < 10000 else 1200)
    print_header(f"sim: the scheduler's CPU per task as the cluster widens ({tasks} tasks, 8 threads per worker, "
                 "virtual time)", list(runs.values()))
    rows = []
    for w in widths:
        row = [f"{w:,} workers"]
        for workload in ("map", "tree"):
            r = runs[workload, w]
            row += [r.get("cpu_per_task_us"), r.get("makespan_ratio")]
        rows.append(row)
    print(table(["", "map: CPU/task (µs)", "map: makespan / bound", "tree: CPU/task (µs)", "tree: makespan / bound"],
                rows))


def bench_hosts(runner: Runner, pys: dict, args) -> None:
    """96 one-thread workers on 8 network-namespace hosts beside 2 workers (hosts.py, root only)."""
    sys.path.insert(0, REPO)
    from tests.support.netns import netns_available

    why = netns_available()
    if why is not None:
        print(f"\n### hosts\n\nskipped: {why}")
        return
    cmd = [pys["xsched"], os.path.join(HERE, "hosts.py"), "--json"]
    if args.quick:
        cmd += ["--hosts", "2", "--workers-per-host", "3", "--tasks", "2000", "--idle-seconds", "2"]
    r = runner.run("hosts-xsched", cmd, 600 if args.quick else 1800)
    print_header("hosts: one-thread workers on network-namespace hosts, beside 2 workers on one host", [r])
    keys = [("workers", "workers"), ("hosts", "hosts"), ("start_s", "start (s)"),
            ("idle_scheduler_cpu_percent", "idle scheduler CPU (%)"), ("map_tasks_per_s", "map (tasks/s)"),
            ("tree_s", "tree, a worker killed per host (s)"), ("tree_correct", "tree exact"),
            ("retire_s", "retire a host (s)"), ("retire_kept", "data kept")]
    print(table([label for _, label in keys], [[c.get(k) for k, _ in keys] for c in r.get("configs") or []]))
    if r.get("error"):
        print(f"\nerror: {r['error']}")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--only", choices=BENCHMARKS, action="append",
                   help="run only this benchmark (repeatable); default: all")
    p.add_argument("--quick", action="store_true", help="small sizes: a smoke check, not figures to quote")
    p.add_argument("--bigtree-million", action="store_true",
                   help="bigtree also runs 1,000,000 tasks on xsched (about 15 minutes here)")
    p.add_argument("--data", default="/tmp/xsched-bench-data", help="where the movie file is created once and kept")
    p.add_argument("--logs", default=None, help="directory for each run's stderr and results.json "
                                               "(default: /tmp/xsched-bench-logs/<time>)")
    args = p.parse_args(argv)

    pys = interpreters()
    everyone = dict(pys)
    pys.pop("ray", None)  # Ray runs the engine figures only (its own API; no LocalCluster, no arrays)
    logs = args.logs or os.path.join("/tmp/xsched-bench-logs", time.strftime("%Y%m%d-%H%M%S"))
    os.makedirs(logs, exist_ok=True)
    runner = Runner(logs, args.quick)
    print(f"$ {shlex.join([sys.executable] + sys.argv)}")
    print(f"(in {REPO}; {time.strftime('%Y-%m-%d %H:%M:%S')}; load average {os.getloadavg()[0]:.2f}; "
          f"implementations: {', '.join(f'{k} ({v})' for k, v in everyone.items())})")
    for impl in ("dask", "ray"):
        if impl not in everyone:
            print(f"{impl}: not available (run `make bench-env` to create .venv-{impl})")
    if args.quick:
        print("QUICK MODE: small sizes for a smoke check; do not quote these figures.")
    for name in args.only or BENCHMARKS:
        {"engine": bench_engine, "movie": bench_movie, "seed003": bench_seed003,
         "spill": bench_spill, "bigtree": bench_bigtree, "twohost": bench_twohost,
         "coordination": bench_coordination, "dataframe": bench_dataframe, "arrays": bench_arrays,
         "clients": bench_clients, "sim": bench_sim, "hosts": bench_hosts}[name](runner, everyone if name == "engine" else pys, args)
        sys.stdout.flush()
    with open(os.path.join(logs, "results.json"), "w") as f:
        json.dump(runner.results, f, indent=1, default=str)
    print(f"\nRaw figures: {os.path.join(logs, 'results.json')}; each run's stderr beside it.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
