"""cut and qcut (xsched/dataframe/binning.py) against pandas' on random Series, partitionings
and options; edges from the data computed once, with the graph; refusals when built."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import xsched.dataframe as xd


@st.composite
def series(draw):
    n = draw(st.integers(1, 30))
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    kind = draw(st.sampled_from(["float", "int", "missing", "time"]))
    if kind == "float":
        values = rng.normal(size=n)
    elif kind == "int":
        values = rng.integers(0, 10, size=n)
    elif kind == "missing":
        values = rng.normal(size=n)
        values[rng.random(n) < 0.3] = np.nan
        values[0] = 0.5  # (one value at least: pandas refuses to cut only missing values)
    else:
        values = pd.Timestamp("2024-01-01") + pd.to_timedelta(rng.integers(0, 1000, size=n), unit="h")
    p = pd.Series(values, name=draw(st.sampled_from([None, "x"])))
    return p, xd.from_pandas(p, npartitions=draw(st.integers(1, 4)))


@settings(max_examples=40, deadline=None, database=None)
@given(series(), st.integers(1, 6), st.booleans(), st.booleans())
def test_cut_into_a_number_of_bins_equals_pandas(case, bins, right, labelled):
    p, s = case
    labels = [f"bin{i}" for i in range(bins)] if labelled else None
    got, edges = xd.cut(s, bins, right=right, labels=labels, retbins=True)
    want, want_edges = pd.cut(p, bins, right=right, labels=labels, retbins=True)
    assert got.cat.known == labelled  # (the categories of computed edges are the data's)
    pd.testing.assert_series_equal(got.compute(), want)
    np.testing.assert_array_equal(np.asarray(edges.compute()), np.asarray(want_edges))


@settings(max_examples=40, deadline=None, database=None)
@given(series(), st.sampled_from([2, 4, [0, 0.3, 1], [0.1, 0.5, 0.9]]), st.sampled_from(["raise", "drop"]))
def test_qcut_equals_pandas(case, q, duplicates):
    p, s = case
    try:
        want, want_edges = pd.qcut(p, q, duplicates=duplicates, retbins=True)
    except ValueError as e:  # (repeated edges with duplicates="raise": found when computed here)
        with pytest.raises(ValueError, match="Bin edges must be unique"):
            xd.qcut(s, q, duplicates=duplicates).compute()
        assert "Bin edges must be unique" in str(e)
        return
    got, edges = xd.qcut(s, q, duplicates=duplicates, retbins=True)
    pd.testing.assert_series_equal(got.compute(), want)
    np.testing.assert_array_equal(np.asarray(edges.compute()), np.asarray(want_edges))


def test_given_edges_give_known_categories_when_built():
    p = pd.Series([0.5, 3.0, 7.5, 9.0, 2.0], index=list("abcde"))
    s = xd.from_pandas(p, npartitions=2)
    got = xd.cut(s, [0, 3, 6, 9], include_lowest=True)
    want = pd.cut(p, [0, 3, 6, 9], include_lowest=True)
    assert got.cat.known and list(got.cat.categories.compute()) == list(want.cat.categories)
    pd.testing.assert_series_equal(got.compute(), pd.cut(p, [0, 3, 6, 9], include_lowest=True))
    intervals = pd.IntervalIndex.from_breaks([0, 5, 10], closed="left")
    pd.testing.assert_series_equal(xd.cut(s, intervals).compute(), pd.cut(p, intervals))
    frame = xd.from_pandas(pd.DataFrame({"v": p}), npartitions=2)
    frame["bin"] = xd.cut(frame.v, [0, 5, 10], labels=["low", "high"])
    assert frame.compute().bin.tolist() == ["low", "low", "high", "high", "low"]


def test_edges_from_the_data_are_one_task_computed_with_the_graph():
    s = xd.from_pandas(pd.Series(np.arange(100.0)), npartitions=5)
    got = xd.cut(s, 4)
    layers = [name for name in got._graph.layers if name.startswith("cut-edges-")]
    assert len(layers) == 1 and len(got._graph.layers[layers[0]]) == 1
    assert got.cat.as_known().cat.categories.compute().astype(str).tolist() == \
        pd.cut(pd.Series(np.arange(100.0)), 4).cat.categories.astype(str).tolist()


def test_bad_input_fails_when_built_naming_the_fix():
    s = xd.from_pandas(pd.Series([1.0, 2.0]), npartitions=1)
    with pytest.raises(ValueError, match=r"labels=False .* use xd.cut\(...\).cat.codes"):
        xd.cut(s, 2, labels=False)
    with pytest.raises(TypeError, match="x must be an xsched Series .* use pandas.qcut"):
        xd.qcut(pd.Series([1.0]), 2)
    with pytest.raises(ValueError, match="bins must be a positive number of bins"):
        xd.cut(s, 0)
    with pytest.raises(ValueError, match="quantiles must be a list of numbers from 0 to 1"):
        xd.qcut(s, [0, 1.5])
    with pytest.raises(ValueError, match="bins must increase monotonically"):  # (pandas' own, when built)
        xd.cut(s, [3, 1, 2])
    text = xd.from_pandas(pd.Series(["a", "b", "c"], name="n"), npartitions=2)
    for build in (lambda: xd.cut(text, 2), lambda: xd.cut(text, [0, 1]), lambda: xd.qcut(text, 2)):
        with pytest.raises(TypeError, match=r"the values of 'n' \(str\) cannot be binned"):
            build()


def test_multiply_subtract_isnull_and_notnull_are_pandas_other_names():
    p = pd.DataFrame({"a": [1.0, None, 3.0], "b": [4.0, 5.0, None]})
    d = xd.from_pandas(p, npartitions=2)
    pd.testing.assert_frame_equal(d.multiply(2).compute(), p.multiply(2))
    pd.testing.assert_series_equal(d.a.subtract(d.b, fill_value=0).compute(), p.a.subtract(p.b, fill_value=0))
    pd.testing.assert_frame_equal(xd.isnull(d).compute(), pd.isnull(p))
    pd.testing.assert_frame_equal(xd.notnull(d).compute(), pd.notnull(p))
