"""The scheduler at any width, in virtual time: xsched.sim drives the real state machines.

    python benchmarks/sim.py --workers N --workload {map,tree,movie,shuffle,resources}
                             [--seed S] [--threads 8] [--tasks T] [--latency 0.001] [--bandwidth 500e6]
                             [--heartbeat 0.5] [--charge-cpu] [--profile N] [--detail]
    python benchmarks/sim.py --sweep [--workloads map,tree] [--widths 2,10,100,1000] [--tasks T]
                             [--timeout 600] [--json]

One run prints one JSON line: the cluster (``workers``, ``threads``, ``tasks``), the real
CPU spent inside ``SchedulerState.handle`` per task and per event (``cpu_per_task_us``,
``cpu_per_event_us``; workers' ``worker_cpu_per_task_us``), the schedule's quality in
virtual time (``makespan_ratio`` = makespan / max(critical path, work / threads,
resource work / resources offered), ``bytes_moved``, ``peak_memory_per_worker`` max and
median, ``recomputed``), and, with ``--detail``, the scheduler's CPU per event type.
``--profile N`` prints to stderr the N functions taking the most time inside
``SchedulerState.handle`` (cProfile enabled around those calls only).

``--sweep`` runs each workload at each width, each run in a fresh process (``--timeout``
seconds at most: a run that takes longer is reported as such), and prints a Markdown
table: the scheduler's CPU per task and per event, per event type (UpdateGraph in ms,
TaskFinished, AddWorker, WorkerHeartbeat in µs), the workers' CPU per task, the quality
figures and the wall time of the run. ``--json`` also prints each run's JSON line.

CPU figures are real (and vary a little run to run); everything else is virtual and
fixed by the seed. Figures are printed, never asserted.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from xsched.sim import WORKLOADS, make, setup  # noqa: E402


def run_one(args) -> dict:
    """One simulated run as the JSON-able summary (profile to stderr when asked)."""
    workload = make(args.workload, args.tasks, seed=args.seed)
    profiler = cProfile.Profile() if args.profile else None
    t0 = time.perf_counter()
    c = setup(workload, args.workers, args.threads, seed=args.seed, latency=args.latency,
              bandwidth=args.bandwidth, heartbeat_interval=args.heartbeat or None, charge_cpu=args.charge_cpu,
              profiler=profiler)
    r = c.run()
    r["wall_s"] = round(time.perf_counter() - t0, 2)
    r["seed"] = args.seed
    if not args.detail:
        for k in ("messages", "worker_by_event"):
            r.pop(k, None)
    if profiler is not None:
        out = io.StringIO()
        stats = pstats.Stats(profiler, stream=out)
        stats.sort_stats("tottime").print_stats(args.profile)
        stats.sort_stats("cumulative").print_stats(args.profile)
        print(out.getvalue(), file=sys.stderr)
    return r


def _us(r: dict, event: str) -> str:
    entry = r.get("scheduler_by_event", {}).get(event)
    return f"{entry[1]:,.1f}" if entry else "-"


def _ms(r: dict, event: str) -> str:
    entry = r.get("scheduler_by_event", {}).get(event)
    return f"{entry[1] / 1000:,.1f}" if entry else "-"


def _mb(n) -> str:
    return f"{n / 1e6:,.1f}"


COLUMNS = ("workload", "workers", "tasks", "sched CPU/task µs", "sched CPU/event µs", "UpdateGraph ms",
           "TaskFinished µs", "AddWorker µs", "Heartbeat µs", "worker CPU/task µs", "makespan ratio",
           "MB moved", "peak MB/worker max / median", "recomputed", "steals moved", "wall s")


def row(r: dict) -> list:
    peak = r["peak_memory_per_worker"]
    return [r["workload"], f"{r['workers']:,}", f"{r['tasks']:,}", f"{r['cpu_per_task_us']:,.1f}",
            f"{r['cpu_per_event_us']:,.1f}", _ms(r, "UpdateGraph"), _us(r, "TaskFinished"), _us(r, "AddWorker"),
            _us(r, "WorkerHeartbeat"), f"{r['worker_cpu_per_task_us']:,.1f}", f"{r['makespan_ratio']:.3f}",
            _mb(r["bytes_moved"]), f"{_mb(peak['max'])} / {_mb(peak['median'])}", r["recomputed"],
            r["steals"]["moved"], r["wall_s"]]


def sweep(args) -> None:
    print(f"threads {args.threads} per worker, tasks {args.tasks or 'workload default'}, seed {args.seed}, "
          f"latency {args.latency}s, bandwidth {args.bandwidth:.3g} B/s, heartbeat {args.heartbeat}s\n")
    print("| " + " | ".join(COLUMNS) + " |")
    print("|" + "---|" * len(COLUMNS))
    for name in args.workloads.split(","):
        for width in (int(w) for w in args.widths.split(",")):
            cmd = [sys.executable, os.path.abspath(__file__), "--workers", str(width), "--workload", name,
                   "--threads", str(args.threads), "--seed", str(args.seed), "--latency", str(args.latency),
                   "--bandwidth", str(args.bandwidth), "--heartbeat", str(args.heartbeat)]
            if args.tasks:
                cmd += ["--tasks", str(args.tasks)]
            if args.charge_cpu:
                cmd.append("--charge-cpu")
            try:
                done = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout, check=True)
            except subprocess.TimeoutExpired:
                print(f"| {name} | {width:,} | | took over {args.timeout} s: not run to the end |" +
                      " |" * (len(COLUMNS) - 4), flush=True)
                continue
            except subprocess.CalledProcessError as e:
                print(f"| {name} | {width:,} | | failed: {e.stderr.strip().splitlines()[-1:]} |", flush=True)
                continue
            r = json.loads(done.stdout.strip().splitlines()[-1])
            print("| " + " | ".join(str(x) for x in row(r)) + " |", flush=True)
            if args.json:
                print(json.dumps(r), file=sys.stderr, flush=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--workers", type=int, default=10)
    p.add_argument("--workload", choices=sorted(WORKLOADS), default="map")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=8)
    p.add_argument("--tasks", type=int, default=None, help="about this many tasks (default: the workload's size)")
    p.add_argument("--latency", type=float, default=0.001, help="seconds per message")
    p.add_argument("--bandwidth", type=float, default=500e6, help="bytes/s between workers")
    p.add_argument("--heartbeat", type=float, default=0.5, help="seconds between heartbeats (0: none)")
    p.add_argument("--charge-cpu", action="store_true",
                   help="the scheduler's real CPU per event passes in virtual time (it is one busy server)")
    p.add_argument("--profile", type=int, default=0, metavar="N",
                   help="print the N costliest functions inside SchedulerState.handle (stderr)")
    p.add_argument("--detail", action="store_true", help="messages per op and worker CPU per event type")
    p.add_argument("--sweep", action="store_true")
    p.add_argument("--workloads", default="map,tree")
    p.add_argument("--widths", default="2,10,100,1000")
    p.add_argument("--timeout", type=float, default=600.0, help="(sweep) seconds per run at most")
    p.add_argument("--json", action="store_true", help="(sweep) each run's JSON line too, on stderr")
    args = p.parse_args()
    if args.sweep:
        sweep(args)
    else:
        print(json.dumps(run_one(args)), flush=True)


if __name__ == "__main__":
    main()
