"""Where the client's time goes in building and submitting a big delayed tree, pass by pass.

    python benchmarks/submit_phases.py [--tasks 999999] [--json]

Builds the tree of ``engine.tree_graph`` (timing the garbage collector's passes during the
build with ``gc.callbacks``), then runs the client's submit passes one by one without a
cluster: the walk into columns, the columns and specs of the update-graph, and its
encoding (done on the client's loop thread, after ``compute`` returns); and the
scheduler's part, ordering the columns. Printed, never asserted.
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402
from engine import tree_graph  # noqa: E402


class _GCTimer:
    """Seconds and count of the collector's passes, per generation, while active."""

    def __init__(self) -> None:
        self.seconds = [0.0, 0.0, 0.0]
        self.count = [0, 0, 0]
        self._t0 = 0.0

    def __call__(self, phase: str, info: dict) -> None:
        if phase == "start":
            self._t0 = time.perf_counter()
        else:
            g = info["generation"]
            self.count[g] += 1
            self.seconds[g] += time.perf_counter() - self._t0

    def __enter__(self) -> "_GCTimer":
        gc.callbacks.append(self)
        return self

    def __exit__(self, *exc) -> None:
        gc.callbacks.remove(self)


def main(argv=None) -> int:
    from xsched import delayed
    from xsched.client.future import Future
    from xsched.graph import columns
    from xsched.graph.order import gc_paused, order_indexed
    from xsched.protocol.messages import encode
    from xsched.protocol.tasks import SpecWriter
    from xsched.protocol.update_graph import column_task_msgs, graph_msg

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tasks", type=int, default=999_999)
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    result = {"benchmark": "submit-phases", "impl": "xsched", **common.environment()}
    gc.collect()
    with _GCTimer() as timer:
        t0 = time.perf_counter()
        total, n = tree_graph(delayed, (args.tasks + 1) // 2)
        result["build_seconds"] = time.perf_counter() - t0
    result["tasks"] = n
    result["build_gc_full_collections"] = timer.count[2]
    result["build_gc_full_seconds"] = timer.seconds[2]
    result["build_gc_young_seconds"] = timer.seconds[0] + timer.seconds[1]
    t0 = time.perf_counter()
    cols = columns.walk([total])
    result["walk_seconds"] = time.perf_counter() - t0
    writer = SpecWriter(functions={})
    t0 = time.perf_counter()
    with gc_paused():
        cols_msg, tasks = column_task_msgs(cols, 1, 0, [], writer, future=Future)
    result["columns_and_specs_seconds"] = time.perf_counter() - t0
    result["client_submit_seconds"] = result["walk_seconds"] + result["columns_and_specs_seconds"]
    t0 = time.perf_counter()
    with gc_paused():
        frames = encode(graph_msg(tasks, [total.key], writer.functions, cols_msg))
    result["encode_seconds"] = time.perf_counter() - t0
    result["message_mib"] = sum(len(f) for f in frames) / 2**20
    t0 = time.perf_counter()
    order_indexed(cols.keys, cols.deps)
    result["scheduler_order_seconds"] = time.perf_counter() - t0
    common.emit(result, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
