"""Reductions of the same partitions run as one tree (``planner.fuse_reductions``): a task per
partition computes every reduction's partial, so ``describe`` or ``agg([...])`` reads and
reduces each partition once; results are unchanged, and reductions whose partials something
else reads, or which differ in tree shape or annotations, are left alone."""

import numpy as np
import pandas as pd
import pytest

import xsched
import xsched.dataframe as xd
from xsched.dataframe import planner
from xsched.dataframe.reductions import reduction

PDF = pd.DataFrame({"k": np.arange(60) % 7, "x": np.random.default_rng(0).random(60), "y": np.arange(60.0),
                    "s": ["a", "b", "b"] * 20})


def _layers(graph, prefix):
    return [n for n in graph.layers if n.startswith(prefix)]


def test_describe_reads_and_reduces_each_partition_in_one_task():
    df = xd.from_pandas(PDF, npartitions=6)
    out = df.describe()
    graph = planner.plan(out._graph, out.__xsched_keys__())
    tasks = [k for layer in graph.layers.values() for k in layer]
    assert sum(k.startswith("joint-chunk-") for k in tasks) == 6
    assert not [k for k in tasks if "-chunk-" in k and not k.startswith("joint-chunk-")]
    assert not _layers(graph, "getitem")  # (the columns are picked inside the joint task)
    pd.testing.assert_frame_equal(out.compute(), PDF.describe())
    pd.testing.assert_frame_equal(df.describe(include="all").compute(), PDF.describe(include="all"))


@pytest.mark.parametrize("funcs", [["sum", "mean", "max", "std"], ["count", "min", "var", "prod"]])
def test_agg_of_several_reductions_equals_pandas(funcs):
    df = xd.from_pandas(PDF[["k", "x", "y"]], npartitions=5)
    got = df.agg(funcs)
    graph = planner.plan(got._graph, got.__xsched_keys__())
    assert len(_layers(graph, "joint-chunk-")) == 1
    pd.testing.assert_frame_equal(got.compute(), PDF[["k", "x", "y"]].agg(funcs), check_dtype=False)


def _two_sums(split_every=(None, None)):
    df = xd.from_pandas(PDF[["x", "y"]], npartitions=6)
    a = reduction(df.x, np.sum, sum, meta=0.0, token="a", split_every=split_every[0])
    b = reduction(df.x, np.max, max, meta=0.0, token="b", split_every=split_every[1])
    return a, b


def _joined(a, b):
    from xsched.dataframe.reductions import _joined
    return _joined("both", lambda values: pd.Series(values), [a, b], (), pd.Series([], dtype="float64"))


def test_reductions_left_alone_when_their_partials_are_read_elsewhere():
    a, b = _two_sums()
    both = _joined(a, b)
    graph = both._graph
    chunk = next(n for n in graph.layers if n.startswith("a-chunk-"))
    from xsched.graph.layers import LayeredGraph
    from xsched.graph.spec import Ref, Task
    spy = {"spy-0": Task(len, ([Ref(k) for k in graph.layers[chunk]],))}
    graph = LayeredGraph.merge(graph, new={"spy": spy})
    planned = planner.fuse_reductions(graph, ["spy-0", *both.__xsched_keys__()])
    assert not _layers(planned, "joint-chunk-") and chunk in planned.layers
    fused = planner.fuse_reductions(both._graph, both.__xsched_keys__())
    assert len(_layers(fused, "joint-chunk-")) == 1
    np.testing.assert_allclose(both.compute().tolist(), [PDF.x.sum(), PDF.x.max()])


def test_other_tree_shapes_or_annotations_stay_apart():
    a, b = _two_sums(split_every=(2, 3))
    both = _joined(a, b)
    assert not _layers(planner.plan(both._graph, both.__xsched_keys__()), "joint-chunk-")
    df = xd.from_pandas(PDF[["x"]], npartitions=4)
    with xsched.annotate(priority=5):
        first = df.x.sum()
    second = df.x.max()
    both = _joined(first, second)
    assert not _layers(planner.plan(both._graph, both.__xsched_keys__()), "joint-chunk-")
    np.testing.assert_allclose(both.compute().tolist(), [PDF.x.sum(), PDF.x.max()])


def test_explain_shows_the_joint_tree():
    text = xd.from_pandas(PDF[["x", "y"]], npartitions=3).describe()
    lines = planner.explain(text._graph, text.__xsched_keys__()).splitlines()
    assert any(line.startswith("reduction joint-chunk-") and "(3 tasks)" in line for line in lines)


def test_the_joint_tasks_survive_the_trip_to_a_worker():
    import cloudpickle

    series = xd.from_pandas(PDF.y, npartitions=3)  # (whole partitions: no column picked first)
    got = series.agg(["sum", "max"])
    graph = planner.plan(got._graph, got.__xsched_keys__())
    task = next(iter(graph.layers[_layers(graph, "joint-chunk-")[0]].values()))
    travelled = cloudpickle.loads(cloudpickle.dumps(task))
    assert travelled.func(PDF.y.iloc[:20]) == task.func(PDF.y.iloc[:20])
