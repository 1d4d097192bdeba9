"""A selection of several columns reads only those its consumers use: ``df[[a, b, c]]`` followed
by work on ``a`` and ``b`` reads ``a`` and ``b`` from the file, the selection itself rebuilt
(under a new name) to pick them. A selection asked for whole, or read by an operation that
may use any column, keeps every column it names."""

import numpy as np
import pandas as pd
import pytest

import xsched
import xsched.dataframe as xd
from xsched.dataframe.planner import explain

PDF = pd.DataFrame({"x": np.arange(60.0), "y": np.arange(60) % 7, "s": ["p", "q", "r"] * 20,
                    "t": pd.date_range("2024", periods=60, freq="h")})


@pytest.fixture
def df(tmp_path):
    PDF.to_parquet(tmp_path / "f.parquet")
    return xd.read_parquet(str(tmp_path / "f.parquet"))


def _read(collection):
    """The columns the plan reads from the file."""
    line = next(line for line in explain(collection._graph, collection.__xsched_keys__()).splitlines()
                if "read-parquet" in line)
    return line.split("read read-parquet-")[1].split(" [")[1].split("]")[0]


@pytest.mark.parametrize("build, read", [
    (lambda d: d[["x", "y", "s"]][["x", "y"]].sum(), "'x', 'y'"),
    (lambda d: d[["x", "y", "s"]].x.sum(), "'x'"),
    (lambda d: (lambda w: w[w.x > 3].y.sum())(d[["x", "y", "s"]]), "'x', 'y'"),
    (lambda d: d[["x", "y", "s"]].describe(), "'x', 'y'"),
    (lambda d: d[["x", "s", "t"]].groupby("s").x.sum(), "'x', 's'"),
])
def test_a_wide_selection_reads_only_the_columns_used(df, build, read):
    out = build(df)
    assert _read(out) == read
    got, want = out.compute(), build(PDF)
    if isinstance(want, pd.DataFrame):
        pd.testing.assert_frame_equal(got, want)
    elif isinstance(want, pd.Series):
        pd.testing.assert_series_equal(got, want, check_dtype=False)
    else:
        assert got == want


def test_a_selection_asked_for_or_read_whole_keeps_its_columns(df):
    wide = df[["x", "y", "s"]]
    assert _read(wide) == "'x', 'y', 's'"
    opaque = wide.map_partitions(lambda p: p.iloc[:, :1]).x.sum()  # (may read any column)
    assert _read(opaque) == "'x', 'y', 's'"
    assert opaque.compute() == PDF.x.sum()
    kept, total = xsched.compute(wide, wide.x.sum(), scheduler="sync")
    pd.testing.assert_frame_equal(kept, PDF[["x", "y", "s"]])
    assert total == PDF.x.sum()
