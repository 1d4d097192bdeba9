"""Work stealing: 200 x 50 ms tasks that all read one scattered piece of data on one of 2 workers.

    python benchmarks/stealing.py [--tasks 200] [--mb 8] [--json]

Each scenario runs twice, in a fresh LocalCluster (2 workers x 1 thread, processes), with
``scheduler.work-stealing`` on and off (set through XSCHED_SCHEDULER__WORK_STEALING for
the scheduler process). The data is scattered to the first worker only; every task reads
it and sleeps 50 ms. Scenarios:

* ``plain``: nothing else. xsched places tasks by estimated start time (occupancy plus
  the cost of copying missing inputs), so it already spreads them: stealing has little
  to fix here.
* ``late-worker``: the second worker connects after the tasks were placed (adaptive
  scaling): without stealing it gets none of them.
* ``misestimated``: the same function ran 20 times before with no sleep, so the scheduler
  expects "work" to take ~0.1 ms and places nearly all 200 tasks beside the data (copying
  8 MB looks dearer than waiting); as the 50 ms runs come in, the estimate grows, and only
  stealing moves the tasks already placed.

Printed: wall time per scenario and setting, the speed-up, tasks run per worker and the
scheduler's steal counts. Figures are printed, never asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
SCENARIOS = ("plain", "late-worker", "misestimated")


def work(data, i, seconds):
    """Reads the data, sleeps (stands for 50 ms of computing)."""
    time.sleep(seconds)
    return int(data[i % len(data)]) + i


def executed(worker):
    return worker.state.counts["executed"]


def run_one(scenario: str, n_tasks: int, mb: float) -> dict:
    import numpy as np

    from xsched import Client, LocalCluster

    cluster = LocalCluster(n_workers=1 if scenario == "late-worker" else 2, threads_per_worker=1,
                           memory_limit=0)
    client = Client(cluster)
    try:
        client.wait_for_workers(1, timeout=60)
        first = sorted(client.scheduler_info()["workers"])[0]
        [data] = client.scatter([np.ones(int(mb * 1e6 / 8))], workers=[first])
        if scenario != "late-worker":
            client.wait_for_workers(2, timeout=60)
        if scenario == "misestimated":  # teach the scheduler that "work" is quick (beside the data only)
            client.gather([client.submit(work, data, i, 0, key=f"work-{n_tasks + i}", workers=[first])
                           for i in range(20)])
        before = client.run(executed)
        t0 = time.perf_counter()
        futures = [client.submit(work, data, i, 0.05, key=f"work-{i}") for i in range(n_tasks)]
        if scenario == "late-worker":
            cluster.scale(2)
        total = sum(client.gather(futures))
        wall = time.perf_counter() - t0
        after = client.run(executed)
        per_worker = sorted((after[a] - before.get(a, 0)) for a in after)
        info = client.scheduler_info()
        return {"scenario": scenario, "wall_seconds": wall, "tasks_per_worker": per_worker,
                "correct": total == sum(1 + i for i in range(n_tasks)), "stealing": info.get("stealing")}
    finally:
        client.close()
        cluster.close()


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tasks", type=int, default=200)
    p.add_argument("--mb", type=float, default=8.0, help="size of the scattered data (MB)")
    p.add_argument("--json", action="store_true")
    p.add_argument("--one", nargs=2, metavar=("SCENARIO", "STEALING"), help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.one:
        print(json.dumps(run_one(args.one[0], args.tasks, args.mb)), flush=True)
        return 0
    results = []
    for scenario in SCENARIOS:
        row = {"scenario": scenario}
        for stealing in ("true", "false"):
            env = dict(os.environ, XSCHED_SCHEDULER__WORK_STEALING=stealing,
                       PYTHONPATH=os.pathsep.join(filter(None, [REPO, os.environ.get("PYTHONPATH")])))
            out = subprocess.run([sys.executable, __file__, "--one", scenario, stealing, "--tasks", str(args.tasks),
                                  "--mb", str(args.mb)], env=env, capture_output=True, text=True, timeout=600)
            lines = [ln for ln in out.stdout.splitlines() if ln.startswith("{")]
            if out.returncode or not lines:
                row["on" if stealing == "true" else "off"] = {"error": out.stderr[-2000:]}
                continue
            row["on" if stealing == "true" else "off"] = json.loads(lines[-1])
        results.append(row)
    if args.json:
        print(json.dumps(results))
        return 0
    print(f"work stealing: {args.tasks} x 50 ms tasks reading {args.mb:g} MB scattered to one of 2 workers "
          "(2 x 1 thread, processes)\n")
    print("| scenario | stealing on (s) | off (s) | speed-up | tasks per worker on / off | steals (requested, moved) |")
    print("|---|---|---|---|---|---|")
    for row in results:
        on, off = row.get("on", {}), row.get("off", {})
        if "error" in on or "error" in off:
            print(f"| {row['scenario']} | error: {(on.get('error') or off.get('error'))[-300:]!r} |")
            continue
        st = on.get("stealing") or {}
        print(f"| {row['scenario']} | {on['wall_seconds']:.2f} | {off['wall_seconds']:.2f} | "
              f"{off['wall_seconds'] / on['wall_seconds']:.2f}x | {on['tasks_per_worker']} / {off['tasks_per_worker']} | "
              f"{st.get('requested')}, {st.get('moved')} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
