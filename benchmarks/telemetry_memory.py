"""The scheduler's telemetry bytes at 10,000 and 1,000,000 task runs: bounded, not growing.

    python benchmarks/telemetry_memory.py [--runs 10000 1000000] [--groups 50] [--workers 8]

A Scheduler that never listens; its diagnostics task stream is fed directly (as task-finished
does), the telemetry extension's group counts hear each run's transition, and every worker
has a full memory history (3,600 samples). Printed: the bytes of what the scheduler keeps for
dashboards (task stream + group counts + memory history), measured two ways: the objects
walked with ``sys.getsizeof`` (each once), and ``tracemalloc``'s growth since the scheduler
was built. Figures printed, never asserted (tests/unit/test_telemetry.py asserts the bound).
"""

from __future__ import annotations

import argparse
import os
import sys
import tracemalloc
from collections import deque

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class _Run:
    __slots__ = ("key", "group", "nbytes")


def main(argv=None) -> None:
    """Print the telemetry bytes after each number of runs in ``--runs``."""
    from xsched.scheduler.server import Scheduler
    from xsched.sizeof import deep_getsizeof

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, nargs="+", default=[10_000, 1_000_000])
    ap.add_argument("--groups", type=int, default=50)
    ap.add_argument("--workers", type=int, default=8)
    args = ap.parse_args(argv)
    tracemalloc.start()
    s = Scheduler(register=False)
    base = tracemalloc.get_traced_memory()[0]
    stream = s.extensions["diagnostics"].task_stream
    counts = s.extensions["telemetry"].group_counts()
    workers = [f"tcp://127.0.0.1:{40000 + i}" for i in range(args.workers)]
    for w in workers:
        s.memory_history[w] = deque(((float(t), 2**30, 2**29, 0) for t in range(3600)), maxlen=3600)
    run = _Run()
    done = 0
    for target in sorted(args.runs):
        for i in range(done, target):
            group = f"task-{i % args.groups}"
            stream.add(f"{group}-{i:x}", workers[i % args.workers], i * 1e-3, i * 1e-3 + 5e-4, "memory", 8)
            run.key, run.group, run.nbytes = f"{group}-{i:x}", group, 8
            counts(run, "processing", "memory")
        done = target
        walked = deep_getsizeof(stream) + deep_getsizeof(counts) + deep_getsizeof(s.memory_history)
        traced = tracemalloc.get_traced_memory()[0] - base
        print(f"{target:>9,} runs: telemetry {walked / 2**20:7.1f} MiB walked (task stream {len(stream):,} runs "
              f"kept, {len(counts.counts)} groups, {args.workers} x 3,600 memory samples); "
              f"tracemalloc growth {traced / 2**20:7.1f} MiB")
    tracemalloc.stop()


if __name__ == "__main__":
    main()
