"""rank over all partitions against pandas: every tie method, both directions, fractions,
missing values (kept, first or last), text; a frame's columns and its rows (axis=1); the options refused;
Spearman's correlation, the ranks' Pearson one; and corrwith."""

import numpy as np
import pandas as pd
import pytest

import xsched.dataframe as xd
from tests.support.helpers import values_with_gaps


@pytest.mark.parametrize("seed", range(3))
def test_rank_across_partitions_like_pandas(seed):
    rng = np.random.default_rng(seed)
    for i in range(4):
        values = values_with_gaps(rng, 8)
        n = len(values)
        pdf = pd.DataFrame({"v": values, "s": rng.choice(["a", "b", "c"], n), "i": rng.integers(-3, 3, n)},
                           index=rng.permutation(500)[:n])
        df = xd.from_pandas(pdf, npartitions=int(rng.integers(1, 6)), sort=False)
        # every method and na_option on each frame, ascending and pct in turn: each of the
        # 60 combinations runs on three of the twelve frames
        ascending, pct = [(True, False), (False, True), (True, True), (False, False)][(seed + i) % 4]
        for method in ("average", "min", "max", "first", "dense"):
            for na_option in ("keep", "top", "bottom"):
                kwargs = dict(method=method, ascending=ascending, pct=pct, na_option=na_option)
                out = df.v.rank(**kwargs)
                assert out.divisions == df.divisions
                pd.testing.assert_series_equal(out.compute(), pdf.v.rank(**kwargs), obj=str(kwargs))
        pd.testing.assert_frame_equal(df.rank().compute(), pdf.rank())
        pd.testing.assert_frame_equal(df.rank(numeric_only=True, method="min").compute(),
                                      pdf.rank(numeric_only=True, method="min"))
        pd.testing.assert_frame_equal(df[["v", "i"]].rank(axis=1).compute(), pdf[["v", "i"]].rank(axis=1))


def test_rank_refuses_what_it_does_not_run():
    s = xd.from_pandas(pd.Series([1.0, None, 2.0]), npartitions=2)
    with pytest.raises(ValueError, match="na_option must be"):
        s.rank(na_option="first")
    with pytest.raises(ValueError, match="method must be one of"):
        s.rank(method="middle")


@pytest.mark.parametrize("seed", range(3))
def test_spearman_correlation_of_ranks_like_pandas(seed):
    rng = np.random.default_rng(seed)
    n = 40
    pdf = pd.DataFrame({"a": rng.normal(size=n), "b": rng.integers(0, 5, n).astype(float), "c": rng.normal(size=n) ** 3})
    pdf.loc[rng.random(n) < 0.15, "a"] = np.nan  # (pairwise: each pair ranks the rows where both are present)
    pdf.loc[rng.random(n) < 0.15, "b"] = np.nan
    df = xd.from_pandas(pdf, npartitions=int(rng.integers(1, 5)))
    expected = pdf.corr(method="spearman")
    pd.testing.assert_frame_equal(df.corr(method="spearman").compute(), expected, rtol=1e-12)
    assert np.isclose(df.a.corr(df.b, method="spearman").compute(), expected.loc["a", "b"], rtol=1e-12)
    pd.testing.assert_frame_equal(df.corr(method="spearman", min_periods=38).compute(),
                                  pdf.corr(method="spearman", min_periods=38))
    with pytest.raises(NotImplementedError, match="'pearson' and 'spearman'"):
        df.corr(method="kendall")


@pytest.mark.parametrize("n", [1, 3])
def test_corrwith_like_pandas(n):
    rng = np.random.default_rng(0)
    pdf = pd.DataFrame({"b": rng.normal(size=30), "a": rng.normal(size=30), "s": list("xyz") * 10})
    other = pd.DataFrame({"c": rng.normal(size=30), "a": rng.normal(size=30)})
    pdf.loc[3, "a"] = np.nan
    df, right = xd.from_pandas(pdf, npartitions=n), xd.from_pandas(other, npartitions=n)
    for kwargs in ({}, {"drop": True}, {"numeric_only": True}):
        pd.testing.assert_series_equal(df.corrwith(right, **kwargs).compute(), pdf.corrwith(other, **kwargs))
    pd.testing.assert_series_equal(df[["a", "b"]].corrwith(right.c).compute(), pdf[["a", "b"]].corrwith(other.c))
    spearman = df.corrwith(right, method="spearman").compute()  # (pandas' own needs scipy for it; its frame corr not)
    assert np.isclose(spearman["a"], pd.concat([pdf.a, other.a], axis=1, keys=["x", "y"]).corr("spearman").iloc[0, 1])
    with pytest.raises(ValueError, match="'s'.*not numeric"):
        df.corrwith(right.c)


@pytest.mark.parametrize("n", [1, 4])
def test_spearman_of_a_frame_without_missing_values_ranks_each_column_once(n):
    rng = np.random.default_rng(n)
    pdf = pd.DataFrame({"a": rng.normal(size=60), "b": rng.integers(0, 4, 60), "c": 2.0, "d": rng.normal(size=60) ** 3})
    df = xd.from_pandas(pdf, npartitions=n)
    out = df.corr(method="spearman")
    exchanges_back = [name for name in out._graph.layers if name.startswith("combine-rank-back-")]
    assert len(exchanges_back) == 4  # (one rank per column, not two per pair: 20)
    pd.testing.assert_frame_equal(out.compute(), pdf.corr(method="spearman"), rtol=1e-12)


@pytest.mark.parametrize("method", ["average", "dense", "min", "max", "first"])
def test_an_unordered_categorical_ranks_by_value_and_an_ordered_one_by_its_order(method):
    values = ["u", "v", "w", "u", None, "v"]
    for ordered in (False, True):
        s = pd.Series(pd.Categorical(values, categories=["w", "v", "u"], ordered=ordered))
        pd.testing.assert_series_equal(xd.from_pandas(s, npartitions=3).rank(method=method).compute(),
                                       s.rank(method=method))


@pytest.mark.parametrize("dtype", ["Float64", "Int64", "int64[pyarrow]", "double[pyarrow]", "boolean", "string"])
def test_nullable_values_rank_in_pandas_dtype(dtype):
    """pandas ranks nullable numbers as Float64 (UInt64 for min, max, first and dense without
    pct), pyarrow's as pyarrow's: the same values, in the same dtype, with NA where missing."""
    values = {"boolean": [True, False, None, True, False], "string": ["b", "a", None, "c", "a"]}.get(
        dtype, [3, 1, None, 2, 2])
    s = pd.Series(values, dtype=dtype)
    x = xd.from_pandas(s, npartitions=2)
    for method in ("average", "min", "max", "first", "dense"):
        for pct in (False, True):
            for na_option in ("keep", "top", "bottom"):
                want = s.rank(method=method, pct=pct, na_option=na_option)
                got = x.rank(method=method, pct=pct, na_option=na_option)
                assert got.dtype == want.dtype
                pd.testing.assert_series_equal(got.compute(), want)


def test_a_frames_nullable_columns_rank_as_float64_as_pandas():
    """pandas ranks a DataFrame's columns as float64 (NaN where missing), nullable and
    pyarrow ones too, where a Series of them ranks in Float64 / UInt64 / pyarrow's dtypes."""
    pdf = pd.DataFrame({"i": pd.array([3, None, 1, 3], dtype="Int64"), "b": pd.array([True, None, False, True],
                        dtype="boolean"), "p": pd.array([3, None, 1, 3], dtype="int64[pyarrow]")})
    df = xd.from_pandas(pdf, npartitions=2)
    for method in ("average", "dense", "first"):
        pd.testing.assert_frame_equal(df.rank(method=method).compute(), pdf.rank(method=method))
        pd.testing.assert_series_equal(df.i.rank(method=method).compute(), pdf.i.rank(method=method))
