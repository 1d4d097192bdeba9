"""Exponentially weighted means, sums, variances and standard deviations across partitions
against pandas: random values
with gaps (leading, inside, across partition boundaries, whole empty partitions), every
way of giving the decay, adjust and ignore_na both ways, min_periods; and the mistakes
refused when the expression is built."""

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import xsched.dataframe as xd

DECAYS = [{"alpha": 0.5}, {"alpha": 0.3}, {"span": 4}, {"com": 0.5}, {"halflife": 3}, {"alpha": 1.0}, {"alpha": 0.02}]


def close(got, expected):
    """Equal to rounding, missing where pandas' is."""
    pd.testing.assert_index_equal(got.index, expected.index)
    g, e = np.asarray(got, dtype=float), np.asarray(expected, dtype=float)
    np.testing.assert_array_equal(np.isnan(g), np.isnan(e))
    np.testing.assert_allclose(g[~np.isnan(g)], e[~np.isnan(e)], rtol=1e-10, atol=1e-12)


@settings(max_examples=60, deadline=None)
@given(data=st.data(), rows=st.integers(1, 40), parts=st.integers(1, 7), decay=st.sampled_from(DECAYS),
       adjust=st.booleans(), ignore_na=st.booleans(), min_periods=st.sampled_from([0, 1, 3]),
       method=st.sampled_from(["mean", "sum"]))
def test_ewm_across_partitions_like_pandas(data, rows, parts, decay, adjust, ignore_na, min_periods, method):
    if method == "sum" and not adjust:
        method = "mean"  # (pandas has no sum with adjust=False)
    values = data.draw(st.lists(st.one_of(st.none(), st.floats(-1e3, 1e3)), min_size=rows, max_size=rows))
    keep = data.draw(st.lists(st.booleans(), min_size=rows, max_size=rows))  # (False rows leave; partitions may empty)
    pdf = pd.DataFrame({"x": [np.nan if v is None else v for v in values], "y": np.arange(rows, dtype=float),
                        "keep": keep})
    df = xd.from_pandas(pdf, npartitions=parts)
    df, pdf = df[df.keep].drop(columns="keep"), pdf[pdf.keep].drop(columns="keep")
    kwargs = dict(decay, adjust=adjust, ignore_na=ignore_na, min_periods=min_periods)
    expected = getattr(pdf.ewm(**kwargs), method)()
    got = getattr(df.ewm(**kwargs), method)().compute()
    for column in expected.columns:
        close(got[column], expected[column])
    close(getattr(df.x.ewm(**kwargs), method)().compute(), getattr(pdf.x.ewm(**kwargs), method)())


@pytest.mark.parametrize("n", [1, 2, 5])
@pytest.mark.parametrize("ignore_na", [False, True])
def test_a_long_gap_across_partitions_like_pandas(n, ignore_na):
    x = np.full(3000, np.nan)
    x[[0, 7, 2990, 2999]] = [1.0, 4.0, 9.0, -2.0]
    s = pd.Series(x)
    for decay in ({"alpha": 0.5}, {"alpha": 0.001}):
        for adjust in (True, False):
            kwargs = dict(decay, adjust=adjust, ignore_na=ignore_na)
            close(xd.from_pandas(s, npartitions=n).ewm(**kwargs).mean().compute(), s.ewm(**kwargs).mean())
    for bias in (False, True):
        for decay in ({"alpha": 0.001}, {"alpha": 0.01}):
            kwargs = dict(decay, ignore_na=ignore_na)
            got = xd.from_pandas(s, npartitions=n).ewm(**kwargs).var(bias=bias).compute().to_numpy()
            expected = s.ewm(**kwargs).var(bias=bias).to_numpy()
            np.testing.assert_array_equal(np.isnan(got), np.isnan(expected))
            # (between values the variance stays that of the last value; pandas' own, decayed row
            # by row through thousands of rows, drifts from it by up to 1e-3 of itself)
            np.testing.assert_allclose(got[~np.isnan(got)], expected[~np.isnan(expected)], rtol=1e-3)
            at = ~np.isnan(x)
            np.testing.assert_allclose(got[at][1:], expected[at][1:], rtol=1e-10)


def test_integer_columns_and_a_time_index_keep_pandas_labels():
    pdf = pd.DataFrame({"n": np.arange(20), "v": np.linspace(0, 1, 20)},
                       index=pd.date_range("2024-01-01", periods=20, freq="h"))
    df = xd.from_pandas(pdf, npartitions=4)
    out = df.ewm(span=5).mean()
    assert out.divisions == df.divisions and list(out.columns) == ["n", "v"]
    close(out.compute().n, pdf.ewm(span=5).mean().n)


def test_mistakes_are_refused_when_built():
    df = xd.from_pandas(pd.DataFrame({"x": [1.0, 2.0, 3.0], "s": list("abc")}), npartitions=2)
    with pytest.raises(ValueError, match="exactly one of com, span, halflife or alpha"):
        df.x.ewm(span=3, alpha=0.2)
    with pytest.raises(ValueError, match="exactly one"):
        df.x.ewm()
    with pytest.raises(ValueError, match=r"alpha must be in \(0, 1\]"):
        df.x.ewm(alpha=1.5)
    with pytest.raises(ValueError, match="span must be at least 1"):
        df.x.ewm(span=0.5)
    with pytest.raises(NotImplementedError, match="times="):
        df.x.ewm(halflife="1h", times=pd.date_range("2024", periods=3))
    with pytest.raises(NotImplementedError, match="adjust=False"):
        df.x.ewm(alpha=0.5, adjust=False).sum()
    with pytest.raises(TypeError, match="pandas refuses it"):
        df.ewm(alpha=0.5).mean()  # (a column of text)
    with pytest.raises(NotImplementedError, match=r"adjust=False\)\.std"):
        df.x.ewm(alpha=0.5, adjust=False).std()
    with pytest.raises(AttributeError, match="has mean, sum, var, std.*map_partitions"):
        df.x.ewm(alpha=0.5).corr
    with pytest.raises(ValueError, match="min_periods"):
        df.x.ewm(alpha=0.5, min_periods=-1)
    assert "alpha=0.5" in repr(df.x.ewm(alpha=0.5))


@settings(max_examples=60, deadline=None)
@given(data=st.data(), rows=st.integers(1, 40), parts=st.integers(1, 7), decay=st.sampled_from(DECAYS),
       ignore_na=st.booleans(), min_periods=st.sampled_from([0, 1, 3]), bias=st.booleans(),
       method=st.sampled_from(["var", "std"]), offset=st.sampled_from([0.0, 1e4]))
def test_ewm_variance_across_partitions_like_pandas(data, rows, parts, decay, ignore_na, min_periods, bias,
                                                    method, offset):
    """The partitions' weighted moments joined as groups are (their means' deviation
    weighed in), so a large offset of the values loses nothing to cancellation."""
    values = data.draw(st.lists(st.one_of(st.none(), st.floats(-1e3, 1e3)), min_size=rows, max_size=rows))
    keep = data.draw(st.lists(st.booleans(), min_size=rows, max_size=rows))
    pdf = pd.DataFrame({"x": [np.nan if v is None else v + offset for v in values], "keep": keep})
    df = xd.from_pandas(pdf, npartitions=parts)
    df, pdf = df[df.keep].x, pdf[pdf.keep].x
    kwargs = dict(decay, ignore_na=ignore_na, min_periods=min_periods)
    expected = getattr(pdf.ewm(**kwargs), method)(bias=bias)
    got = getattr(df.ewm(**kwargs), method)(bias=bias).compute()
    pd.testing.assert_index_equal(got.index, expected.index)
    g, e = got.to_numpy(dtype=float), expected.to_numpy(dtype=float)
    if not bias:  # (after one value pandas gives 0 or missing as its two sums of weights round; here missing)
        one = pdf.notna().cumsum().to_numpy() < 2
        assert np.isnan(g[one]).all()
        g, e = g[~one], e[~one]
    np.testing.assert_array_equal(np.isnan(g), np.isnan(e))
    scale = max(np.nanmax(np.abs(e), initial=0.0), 1.0)  # (a variance near 0 is rounding of a larger one)
    np.testing.assert_allclose(g[~np.isnan(g)], e[~np.isnan(e)], rtol=1e-8, atol=1e-9 * scale)


@pytest.mark.parametrize("func", ["mean", ["mean", "sum"], ("std", "mean", "var"), {"a": "mean", "b": ["sum", "std"]},
                                  {"a": "mean", "b": "sum"}])
def test_ewm_agg_lays_results_out_as_pandas(func):
    pdf = pd.DataFrame({"a": [1.0, 2, None, 4, 5, 7], "b": [5.0, 4, 3, 2, 1, 0]})
    df = xd.from_pandas(pdf, npartitions=3)
    pd.testing.assert_frame_equal(df.ewm(alpha=0.5).agg(func).compute(), pdf.ewm(alpha=0.5).agg(func))
    if not isinstance(func, dict):
        want = pdf.a.ewm(alpha=0.5).agg(func)
        got = df.a.ewm(alpha=0.5).aggregate(func).compute()
        (pd.testing.assert_series_equal if isinstance(want, pd.Series) else pd.testing.assert_frame_equal)(got, want)
    with pytest.raises(ValueError, match="'median' is not one of mean, sum, var, std"):
        df.ewm(alpha=0.5).agg(["mean", "median"])
    with pytest.raises(pd.errors.SpecificationError, match="Function names must be unique"):
        df.ewm(alpha=0.5).agg(["mean", "mean"])
