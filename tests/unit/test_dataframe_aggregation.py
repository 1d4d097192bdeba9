"""xd.Aggregation against pandas' own answers: partial statistics merged through trees of any
depth, on one column, on a whole frame, per column of a dict, by keys or by a Series."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import xsched.dataframe as xd

MEAN = xd.Aggregation("mean", chunk=lambda g: (g.sum(), g.count()), agg=lambda s, c: (s.sum(), c.sum()),
                      finalize=lambda s, c: s / c)
SPREAD = xd.Aggregation("spread", chunk=lambda g: (g.max(), g.min()), agg=lambda hi, lo: (hi.max(), lo.min()),
                        finalize=lambda hi, lo: hi - lo)
TOTAL = xd.Aggregation("total", chunk=lambda g: g.sum(), agg=lambda s: s.sum())


def _data(n=500, seed=0):
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"k": rng.choice(list("abcdefg"), n), "j": rng.integers(0, 3, n),
                         "x": rng.normal(size=n), "y": rng.integers(0, 100, n).astype(float)})


@pytest.mark.parametrize("split_every", [2, 3, 8])
def test_one_column_through_trees_of_any_depth(split_every):
    pdf = _data()
    df = xd.from_pandas(pdf, npartitions=13)
    got = df.groupby("k").x.agg(MEAN, split_every=split_every).compute()
    pd.testing.assert_series_equal(got, pdf.groupby("k").x.mean())
    got = df.groupby(["k", "j"]).y.agg(SPREAD, split_every=split_every).compute()
    want = pdf.groupby(["k", "j"]).y.max() - pdf.groupby(["k", "j"]).y.min()
    pd.testing.assert_series_equal(got, want)


def test_whole_frames_dicts_and_a_grouping_series():
    pdf = _data()
    df = xd.from_pandas(pdf, npartitions=5)
    pd.testing.assert_frame_equal(df.groupby("k")[["x", "y"]].agg(TOTAL).compute(),
                                  pdf.groupby("k")[["x", "y"]].sum())
    got = df.groupby("k").agg({"x": MEAN, "y": SPREAD}).compute()
    want = pd.DataFrame({"x": pdf.groupby("k").x.mean(),
                         "y": pdf.groupby("k").y.max() - pdf.groupby("k").y.min()})
    pd.testing.assert_frame_equal(got, want)
    got = df.x.groupby(df.k).agg(TOTAL).compute()
    pd.testing.assert_series_equal(got, pdf.x.groupby(pdf.k).sum())


def test_missing_keys_and_unsorted_results_as_pandas():
    pdf = _data(200)
    pdf.loc[::7, "k"] = None
    df = xd.from_pandas(pdf, npartitions=4)
    for dropna in (True, False):
        got = df.groupby("k", dropna=dropna, sort=False).x.agg(TOTAL).compute().sort_index()
        pd.testing.assert_series_equal(got, pdf.groupby("k", dropna=dropna).x.sum().sort_index())


def test_mistakes_show_when_built():
    df = xd.from_pandas(_data(20), npartitions=2)
    broken = xd.Aggregation("broken", chunk=lambda g: g.sum(), agg=lambda s: s.no_such_method())
    with pytest.raises(ValueError, match="fails on a stand-in of this frame: AttributeError"):
        df.groupby("k").x.agg(broken)
    with pytest.raises(TypeError, match="goes alone or as each value of a dict"):
        df.groupby("k").agg({"x": TOTAL, "y": "sum"})
    with pytest.raises(ValueError, match="gives one partition"):
        df.groupby("k").x.agg(TOTAL, split_out=2)
    with pytest.raises(TypeError, match="chunk must be a function"):
        xd.Aggregation("bad", chunk=3, agg=sum)
