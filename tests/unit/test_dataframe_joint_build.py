"""Per-column reductions built as one tree from the start (``reductions.joint``): ``describe``,
``agg``, ``nunique``, ``mode`` and ``quantile`` of a frame build one task per partition and
one tree, not a tree per column and statistic that the planner would join afterwards. The
results are pandas'; a column whose reductions are not plain ones is built as asked."""

import numpy as np
import pandas as pd
import pytest

import xsched
import xsched.dataframe as xd
from xsched.dataframe.planner import explain
from xsched.dataframe.reductions import joint

WIDE = pd.DataFrame({f"c{i}": np.random.default_rng(i).normal(size=400) for i in range(12)})


def _chunk_tasks(collection):
    """Tasks of the graph as built (before planning) that reduce a partition."""
    return [k for layer in collection._graph.layers.values() for k in layer if "-chunk-" in k]


def test_a_wide_describe_builds_one_task_per_partition():
    df = xd.from_pandas(WIDE, npartitions=40)
    out = df.describe()
    assert len(_chunk_tasks(out)) == 40  # (one tree: a tree per column and statistic had 12 x 6 x 40)
    pd.testing.assert_frame_equal(out.compute(), WIDE.describe())


@pytest.mark.parametrize("build", [
    lambda frame: frame.agg(["sum", "std", "median", "nunique"]),
    lambda frame: frame.agg({"c0": "mean", "c3": ["min", "sem"], "c5": "kurt"}),
    lambda frame: frame.nunique(),
    lambda frame: frame.quantile([0.1, 0.5]),
    lambda frame: frame.round(0).mode(),
])
def test_per_column_reductions_of_a_frame_are_one_tree_and_equal_pandas(build):
    df = xd.from_pandas(WIDE, npartitions=8)
    out = build(df)
    assert len(_chunk_tasks(out)) == 8
    want = build(WIDE)
    got = out.compute()
    if isinstance(want, pd.DataFrame):
        pd.testing.assert_frame_equal(got, want, check_dtype=False)
    else:
        pd.testing.assert_series_equal(got, want, check_dtype=False)


def test_describe_keys_are_the_same_for_the_same_expression():
    df = xd.from_pandas(WIDE, npartitions=4)
    assert df.describe()._name == df.describe()._name
    assert df.describe(split_every=2)._name != df.describe()._name


def test_a_column_asked_for_something_else_than_a_reduction_is_built_as_asked():
    df = xd.from_pandas(pd.DataFrame({"a": [1.0, None, 3.0, 4.0], "b": [1, 2, 3, 4]}), npartitions=2)
    (a_sum, a_len), (b_sum, b_len) = joint(df, ["a", "b"], lambda s, _: [s.sum(), s.dropna().count()])
    assert (float(a_sum.compute()), int(a_len.compute())) == (8.0, 3)
    assert (int(b_sum.compute()), int(b_len.compute())) == (10, 4)


def test_a_label_naming_several_columns_stands_for_each_of_them_in_turn():
    pdf = pd.DataFrame([[1, "x", 3.0, "q"], [1, "y", 6.0, "r"], [2, "y", 9.0, "r"]], columns=["a", "a", "b", "a"])
    df = xd.from_pandas(pdf, npartitions=2)
    pd.testing.assert_series_equal(df.nunique().compute(), pdf.nunique())
    pd.testing.assert_frame_equal(df.agg(["max", "count"]).compute(), pdf.agg(["max", "count"]))
    for kwargs in ({}, {"include": "all"}, {"exclude": ["number"]}):
        pd.testing.assert_frame_equal(df.describe(**kwargs).compute(), pdf.describe(**kwargs))


def test_describe_of_a_parquet_file_reads_the_described_columns_only(tmp_path):
    pdf = pd.DataFrame({"x": np.arange(50.0), "y": np.arange(50), "s": ["p", "q"] * 25,
                        "t": pd.date_range("2024", periods=50, freq="h")})
    pdf.to_parquet(tmp_path / "f.parquet")
    df = xd.read_parquet(str(tmp_path / "f.parquet"))
    out = df.describe()
    plan = explain(out._graph, out.__xsched_keys__())
    assert "read read-parquet-x-y-t ['x', 'y', 't']" in plan  # (the text column is not described: not read)
    pd.testing.assert_frame_equal(out.compute(), pdf.describe())


def test_the_joint_tree_carries_the_annotations_in_force():
    df = xd.from_pandas(WIDE, npartitions=4)
    with xsched.annotate(priority=7):
        out = df.describe()
    tasks = [t for layer in out._graph.layers.values() for k, t in layer.items() if k.startswith("joint-")]
    assert tasks and all(t.annotations.get("priority") == 7 for t in tasks)
