"""A partition a task makes (``from_map``, and the readers built on it) fuses with the steps
that use it, as the file readers' partitions do: read and reduced in one task, never stored
apart; a partition several results use is made once and kept for them."""

import numpy as np
import pandas as pd

import xsched
import xsched.dataframe as xd
from xsched.dataframe import planner

MADE: list = []


def _load(i):
    MADE.append(i)
    return pd.DataFrame({"x": np.arange(10.0) + i, "y": np.arange(10) % 3})


def test_a_partition_made_by_a_task_fuses_with_its_steps():
    df = xd.from_map(_load, range(4))
    out = df[df.x > 3].x.sum()
    graph = out.__xsched_graph__()
    assert len(graph) == 5  # (four partitions read, filtered and reduced in a task each, and the sum)
    assert "fused    sum-chunk-" in planner.explain(out._graph, out.__xsched_keys__()).splitlines()[0]
    MADE.clear()
    assert out.compute() == sum(x for i in range(4) for x in np.arange(10.0) + i if x > 3)
    assert sorted(MADE) == [0, 1, 2, 3]


def test_a_partition_two_results_use_is_made_once():
    df = xd.from_map(_load, range(3))
    MADE.clear()
    total, kept = xsched.compute(df.x.sum(), df[df.y == 1], scheduler="sync")
    assert sorted(MADE) == [0, 1, 2]
    whole = pd.concat([_load(i) for i in range(3)])
    assert total == whole.x.sum()
    pd.testing.assert_frame_equal(kept, whole[whole.y == 1])
