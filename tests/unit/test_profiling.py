"""The profile's call tree (xsched/profiling.py): built from sampled stacks, merged from
workers' rows, bounded, and pruned for the wire without losing any sample's count."""

from __future__ import annotations

import random

from xsched.profiling import OTHER, StackTree
from xsched.worker.diagnostics import Profile


def _stack(rng: random.Random) -> list:
    return [(f"f{rng.randrange(4)}", f"/src/m{rng.randrange(2)}.py", rng.randrange(50)) for _ in range(rng.randrange(1, 6))]


def _totals(rows: list) -> dict:
    """(path of labels) -> count, from preorder rows."""
    out, path = {}, []
    for depth, function, filename, count, own in rows:
        del path[depth:]
        path.append((function, filename))
        out[tuple(path)] = count
    return out


def test_merging_workers_rows_equals_one_tree_of_all_their_samples():
    rng = random.Random(0)
    workers = [StackTree() for _ in range(3)]
    whole = StackTree()
    for i in range(600):
        prefix, stack = f"p{rng.randrange(3)}", _stack(rng)
        workers[i % 3].add(prefix, stack)
        whole.add(prefix, stack)
    merged = StackTree()
    for w in workers:
        merged.merge(w.rows())
    assert merged.rows() == whole.rows() and merged.samples == whole.samples == 600
    for depth, function, filename, count, own in merged.rows():
        assert count >= own >= 0


def test_a_full_tree_sends_new_paths_to_other_and_keeps_every_sample_counted():
    rng = random.Random(1)
    tree = StackTree(max_nodes=40)
    for _ in range(2000):
        tree.add(f"p{rng.randrange(3)}", _stack(rng))
    rows = tree.rows()
    assert tree.samples == 2000 == sum(r[3] for r in rows if r[0] == 0)
    assert any(r[1] == OTHER for r in rows)
    assert len(tree) <= 2 * 40  # (at most one "(other)" per node beyond the bound)
    # a parent's count is its own samples plus its children's
    totals = _totals(rows)
    for path, count in totals.items():
        children = sum(c for p, c in totals.items() if len(p) == len(path) + 1 and p[:-1] == path)
        own = next(r[4] for r in rows if _path_of(rows, r) == path)
        assert count == own + children, path
    # merged into a small tree: rows under a row that went to "(other)" are not counted twice
    small = StackTree(max_nodes=10)
    small.merge(rows)
    assert small.samples == 2000 == sum(r[3] for r in small.rows() if r[0] == 0)


def _path_of(rows, target):
    path = []
    for row in rows:
        del path[row[0]:]
        path.append((row[1], row[2]))
        if row is target:
            return tuple(path)
    raise AssertionError(target)


def test_rows_for_the_wire_leave_out_small_frames_only():
    tree = StackTree()
    tree.add("big", [("work", "a.py", 1)], count=999)
    tree.add("big", [("rare", "a.py", 2)], count=1)
    assert [r[1] for r in tree.rows(min_fraction=0.01)] == ["big", "work"]
    assert [r[1] for r in tree.rows()] == ["big", "work", "rare"]


def test_a_worker_profile_files_each_sample_under_its_task_s_prefix():
    prof = Profile()
    prof.add([("load", "/data/io.py", 3)], "read-chunk-12")
    prof.add([("load", "/data/io.py", 3)], "read-chunk-13")
    prof.add([("mean", "/data/stats.py", 9)], "reduce-4")
    prof.add([("mean", "/data/stats.py", 9)])  # (a key unknown: the flat counts only)
    assert prof.samples == 4 and prof.tree.samples == 3
    assert prof.tree.rows() == [[0, "read-chunk", "", 2, 0], [1, "load", "/data/io.py", 2, 2],
                                [0, "reduce", "", 1, 0], [1, "mean", "/data/stats.py", 1, 1]]
