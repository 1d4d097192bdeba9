"""What a watching dashboard's transition hooks cost the scheduler: engine figures with the
telemetry's group counts and story recorder on, and off, in alternating rounds.

    python benchmarks/dashboard_hooks.py [--rounds 5] [--quick]

One LocalCluster (2 workers x 1 thread) and one client; each round runs ``engine.py``'s map
(10,000 no-op tasks) and tree (9,999 tasks) once with the hooks off and once on (put on and
taken off through the telemetry extension, as a dashboard's first request and its idle timer
do), after one run of each to warm up. No browser and no polls: only the hooks differ. Printed
per setting, the median over the rounds: tasks/s of each job, the scheduler's CPU milliseconds per task, and the whole
cluster's. Figures printed, never asserted.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402
import engine  # noqa: E402


def hooks_on(scheduler) -> int:
    """On the scheduler: the dashboard's hooks on (as its first request does); how many hooks."""
    ext = scheduler.extensions["telemetry"]
    ext.group_counts()
    ext.story_recorder()
    return len(scheduler.state.transition_hooks)


def hooks_off(scheduler) -> int:
    """On the scheduler: the dashboard's hooks off (as its idle timer does)."""
    ext = scheduler.extensions["telemetry"]
    ext.detach_if_idle(float("inf"))
    return len(scheduler.state.transition_hooks)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="small sizes: a smoke check")
    args = ap.parse_args(argv)
    import psutil

    ns = common.load_impl("xsched")
    n_map, leaves = (1_000, 500) if args.quick else (10_000, 5_000)
    with ns.LocalCluster(n_workers=2, threads_per_worker=1, processes=True) as cluster, ns.Client(cluster) as client:
        here = os.path.dirname(os.path.abspath(__file__))
        for name in ("common.py", "engine.py"):  # engine's task functions, importable on the workers
            client.upload_file(os.path.join(here, name))
        cpu = engine.CPUMeter(client)
        scheduler = psutil.Process(client.run_on_scheduler(os.getpid))
        engine.bench_map(ns, client, n_map, cpu)  # (warm: imports, the first connections)
        engine.bench_tree(ns, client, leaves, cpu)
        figures: dict = {False: [], True: []}
        for _ in range(args.rounds):
            for on in (False, True):
                client.run_on_scheduler(hooks_on if on else hooks_off)
                before = sum(scheduler.cpu_times()[:2])
                out = engine.bench_map(ns, client, n_map, cpu)
                out.update(engine.bench_tree(ns, client, leaves, cpu))
                tasks = out["map_tasks"] + out["tree_tasks"]
                out["scheduler_cpu_ms_per_task"] = (sum(scheduler.cpu_times()[:2]) - before) / tasks * 1e3
                figures[on].append(out)
    print(f"dashboard hooks off / on, {args.rounds} rounds, medians:")
    for key in ("map_tasks_per_s", "tree_tasks_per_s", "scheduler_cpu_ms_per_task", "map_cpu_ms_per_task",
                "tree_cpu_ms_per_task"):
        off = statistics.median(r[key] for r in figures[False])
        on = statistics.median(r[key] for r in figures[True])
        print(f"  {key:26s} {off:10.4f} {on:10.4f}   on/off {on / off:.3f}")


if __name__ == "__main__":
    main()
