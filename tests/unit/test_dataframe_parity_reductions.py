"""Reductions and cumulative methods against pandas: skipna, min_count, datetime means,
linear quantiles, dtypes and missing values carried across partitions."""

import numpy as np
import pandas as pd
import pandas.testing as tm
import pytest

import xsched.dataframe as xd

NPARTS = [1, 2, 3]


def assert_same_scalar(got, expected):
    assert type(got) is type(expected) or (pd.isna(got) and pd.isna(expected)), (got, expected)
    if pd.isna(expected):
        assert pd.isna(got), got
    else:
        assert got == expected
    if hasattr(expected, "unit"):
        assert got.unit == expected.unit
    if hasattr(expected, "tz"):
        assert got.tz == expected.tz


# --------------------------------------------------------------------------- mean/var/std skipna


@pytest.mark.parametrize("n", NPARTS)
@pytest.mark.parametrize("kind", ["mean", "var", "std"])
@pytest.mark.parametrize("skipna", [True, False])
def test_moments_skipna_series(n, kind, skipna):
    s = pd.Series([1.0, np.nan, 3.0, 4.0])
    got = getattr(xd.from_pandas(s, npartitions=n), kind)(skipna=skipna).compute()
    expected = getattr(s, kind)(skipna=skipna)
    assert np.isnan(got) == np.isnan(expected)
    if not np.isnan(expected):
        assert got == pytest.approx(expected)


@pytest.mark.parametrize("n", NPARTS)
@pytest.mark.parametrize("kind", ["mean", "var", "std"])
def test_moments_skipna_false_frame(n, kind):
    df = pd.DataFrame({"a": [1.0, np.nan, 3.0, 4.0], "b": [1, 2, 3, 4], "c": [np.nan] * 4})
    got = getattr(xd.from_pandas(df, npartitions=n), kind)(skipna=False).compute()
    tm.assert_series_equal(got, getattr(df, kind)(skipna=False))


# --------------------------------------------------------------------------- min_count


@pytest.mark.parametrize("n", NPARTS)
@pytest.mark.parametrize("method", ["sum", "prod"])
@pytest.mark.parametrize("values", [[np.nan] * 4, [2.0, np.nan, np.nan, 3.0], [1.0, np.nan, np.nan, np.nan]])
@pytest.mark.parametrize("min_count", [1, 2])
def test_min_count_series(n, method, values, min_count):
    s = pd.Series(values)
    got = getattr(xd.from_pandas(s, npartitions=n), method)(min_count=min_count).compute()
    assert_same_scalar(got, getattr(s, method)(min_count=min_count))


@pytest.mark.parametrize("n", NPARTS)
def test_min_count_counts_all_partitions(n):
    """Each partition has fewer than ``min_count`` values, all of them together enough."""
    s = pd.Series([1.0, np.nan, 2.0, np.nan, 3.0, np.nan])
    assert xd.from_pandas(s, npartitions=n).sum(min_count=3).compute() == s.sum(min_count=3) == 6.0
    assert np.isnan(xd.from_pandas(s, npartitions=n).sum(min_count=4).compute())


@pytest.mark.parametrize("n", NPARTS)
@pytest.mark.parametrize("method", ["sum", "prod"])
def test_min_count_frame_and_nullable(n, method):
    df = pd.DataFrame({"i": [1, 2, 3, 4], "a": [np.nan, 2.0, np.nan, np.nan], "z": [np.nan] * 4})
    for mc in (1, 2):
        got = getattr(xd.from_pandas(df, npartitions=n), method)(min_count=mc).compute()
        tm.assert_series_equal(got, getattr(df, method)(min_count=mc))
    ints = df[["i"]]  # stays int64 when every column has enough values
    tm.assert_series_equal(getattr(xd.from_pandas(ints, npartitions=n), method)(min_count=1).compute(),
                           getattr(ints, method)(min_count=1))
    na = pd.Series([pd.NA] * 3, dtype="Int64")
    assert getattr(xd.from_pandas(na, npartitions=n), method)(min_count=1).compute() is pd.NA


# --------------------------------------------------------------------------- datetime means


def _datetimes():
    t = pd.Series(pd.date_range("2021-01-01", periods=5, freq="7h"))
    return {"us": t, "s": t.astype("datetime64[s]"), "tz": t.dt.tz_localize("US/Eastern"),
            "nat": pd.Series([pd.NaT, *t[:3]]), "td": t - t.iloc[0]}


@pytest.mark.parametrize("n", NPARTS)
@pytest.mark.parametrize("which", ["us", "s", "tz", "nat", "td"])
@pytest.mark.parametrize("kind", ["mean", "std"])
def test_datetimelike_mean_and_std(n, which, kind):
    s = _datetimes()[which]
    for skipna in (True, False):
        got = getattr(xd.from_pandas(s, npartitions=n), kind)(skipna=skipna).compute()
        assert_same_scalar(got, getattr(s, kind)(skipna=skipna))


@pytest.mark.parametrize("n", NPARTS)
def test_datetime_mean_in_frame(n):
    t = _datetimes()
    df = pd.DataFrame({"t": t["us"][:4], "td": t["td"][:4], "a": [1.0, 2, 3, 5]})
    tm.assert_series_equal(xd.from_pandas(df, npartitions=n).mean().compute(), df.mean())
    tm.assert_series_equal(xd.from_pandas(df, npartitions=n).mean(numeric_only=True).compute(),
                           df.mean(numeric_only=True))
    tm.assert_series_equal(xd.from_pandas(df, npartitions=n).std().compute(), df.std())


# --------------------------------------------------------------------------- quantile


@pytest.mark.parametrize("n", NPARTS)
@pytest.mark.parametrize("values", [[1.0, 2, 3, 4], [5, 1, 4, 2, 3], [1.0, np.nan, 10, 3, 7, 2],
                                    list(np.random.default_rng(0).normal(size=40))])
def test_quantile_linear_like_pandas(n, values):
    s = pd.Series(values)
    qs = [0, 0.1, 0.25, 0.5, 0.75, 0.9, 1]
    xs = xd.from_pandas(s, npartitions=n)
    tm.assert_series_equal(xs.quantile(qs).compute(), s.quantile(qs), check_exact=True)
    assert xs.quantile(0.25).compute() == s.quantile(0.25)
    tm.assert_series_equal(xs.describe().compute(), s.describe())


@pytest.mark.parametrize("n", NPARTS)
def test_describe_frame_percentiles(n):
    df = pd.DataFrame({"a": [1.0, 2, 3, 4, 5, 6], "b": [1, 5, 2, 6, 3, 9]})
    tm.assert_frame_equal(xd.from_pandas(df, npartitions=n).describe().compute(), df.describe())


def mixed_frame(rows=50):
    rng = np.random.default_rng(0)
    return pd.DataFrame({
        "n": rng.choice(list("abcd"), rows), "x": rng.normal(size=rows), "i": rng.integers(0, 9, rows),
        "t": pd.date_range("2020", periods=rows, freq="h"), "d": pd.to_timedelta(rng.integers(0, 99, rows), "min"),
        "c": pd.Categorical(rng.choice(list("pq"), rows), categories=list("pqz")), "b": rng.random(rows) > 0.3,
        "N": pd.array(rng.integers(0, 5, rows), dtype="Int64")})


@pytest.mark.parametrize("n", [1, 3, 7])
@pytest.mark.parametrize("kw", [{}, {"include": "all"}, {"include": ["category", "bool"]}, {"exclude": ["number"]},
                                {"percentiles": [0.9, 0.1]}, {"include": ["datetime", "timedelta"]}])
def test_describe_of_every_kind_of_column_like_pandas(n, kw):
    """Text, categories and truth values: count, unique, top, freq; dates without std;
    durations with it; rows in pandas' order when kinds are mixed; columns chosen as pandas'."""
    pdf = mixed_frame()
    df = xd.from_pandas(pdf, npartitions=n)
    expected = pdf.describe(**kw)
    assert list(df.describe(**kw)._meta.columns) == list(expected.columns)
    tm.assert_frame_equal(df.describe(**kw).compute(), expected)


@pytest.mark.parametrize("col", list(mixed_frame().columns))
def test_describe_of_a_series_of_every_kind_like_pandas(col):
    pdf = mixed_frame()
    s = xd.from_pandas(pdf, npartitions=3)[col]
    tm.assert_series_equal(s.describe().compute(), pdf[col].describe())
    none = pdf[col][pdf.x > 99]
    tm.assert_series_equal(s[xd.from_pandas(pdf, npartitions=3).x > 99].describe().compute(), none.describe())


def test_describe_frame_of_text_only_describes_the_text():
    pdf = mixed_frame()[["n", "c"]]
    tm.assert_frame_equal(xd.from_pandas(pdf, npartitions=2).describe().compute(), pdf.describe())


def test_describe_refuses_bad_arguments_when_built():
    df = xd.from_pandas(mixed_frame(), npartitions=2)
    with pytest.raises(ValueError, match=r"interval \[0, 1\]"):
        df.describe(percentiles=[0.5, 2])
    with pytest.raises(ValueError, match="duplicates"):
        df.x.describe(percentiles=[0.5, 0.5])
    with pytest.raises(ValueError, match="exclude must be None"):
        df.describe(include="all", exclude=["number"])
    with pytest.raises(TypeError, match="a Series has none"):
        df.x.describe(include="all")
    with pytest.raises(ValueError, match="no column to describe"):
        df[["x"]].describe(include=["datetime"])


@pytest.mark.parametrize("n", NPARTS)
@pytest.mark.parametrize("values", [
    pd.Series(pd.date_range("2020", periods=7, freq="37h")),
    pd.Series(pd.date_range("2020", periods=7, freq="37h")).astype("M8[s]"),
    pd.Series(pd.date_range("2020", periods=5, freq="7h", tz="Europe/Paris")),
    pd.Series(pd.to_timedelta(np.arange(6) * 3.7, unit="h")),
    pd.Series([pd.NaT, pd.Timestamp("2021-03-01"), pd.Timestamp("2020-01-05 07:00")]),
], ids=["ns", "s", "tz", "timedelta", "nat"])
def test_quantile_of_times_interpolates_like_pandas(n, values):
    """Times interpolate between their neighbours as pandas does (a time, in their unit and zone),
    where they used to take the nearest value."""
    xs = xd.from_pandas(values, npartitions=n)
    qs = [0, 0.3, 0.5, 0.99]
    tm.assert_series_equal(xs.quantile(qs).compute(), values.quantile(qs), check_index_type=False)
    assert_same_scalar(xs.quantile(0.3).compute(), values.quantile(0.3))
    assert_same_scalar(xd.from_pandas(values.iloc[:0], npartitions=1).quantile(0.3).compute(),
                       values.iloc[:0].quantile(0.3))


def test_quantile_exact_up_to_the_samples_kept_then_close():
    """Exact while no partition has more rows than are kept; beyond, approximate with the ends exact."""
    from xsched.dataframe.reductions import QUANTILE_SAMPLES

    qs = [0, 0.1, 0.25, 0.5, 0.75, 1]
    s = pd.Series(np.random.default_rng(1).permutation(3 * QUANTILE_SAMPLES).astype("float64"))
    tm.assert_series_equal(xd.from_pandas(s, npartitions=3).quantile(qs).compute(), s.quantile(qs))
    s = pd.Series(np.arange(12.0 * QUANTILE_SAMPLES))
    got = xd.from_pandas(s, npartitions=3).quantile(qs).compute()
    expected = s.quantile(qs)
    assert got.iloc[0] == expected.iloc[0] and got.iloc[-1] == expected.iloc[-1]
    assert (got - expected).abs().max() < len(s) / QUANTILE_SAMPLES


# --------------------------------------------------------------------------- cumulative


@pytest.mark.parametrize("n", NPARTS + [4])
@pytest.mark.parametrize("method", ["cumsum", "cumprod", "cummax", "cummin"])
def test_cumulative_frame_keeps_dtypes(n, method):
    df = pd.DataFrame({"i": [1, 2, 3, 4], "f": [0.5, 1.0, 1.5, 2.0], "b": [True, False, True, True]})
    got = getattr(xd.from_pandas(df, npartitions=n), method)().compute()
    tm.assert_frame_equal(got, getattr(df, method)())


@pytest.mark.parametrize("n", NPARTS + [4])
@pytest.mark.parametrize("method", ["cumsum", "cumprod", "cummax", "cummin"])
@pytest.mark.parametrize("skipna", [True, False])
def test_cumulative_missing_values_across_partitions(n, method, skipna):
    for s in (pd.Series([1.0, np.nan, 3.0, 0.5]), pd.Series([np.nan, np.nan, 2.0, np.nan, 1.0, 4.0]),
              pd.Series([1, None, 3, 2, 5, 1], dtype="Int64")):
        got = getattr(xd.from_pandas(s, npartitions=n), method)(skipna=skipna).compute()
        tm.assert_series_equal(got, getattr(s, method)(skipna=skipna))
    df = pd.DataFrame({"i": [1, 2, 3, 4, 5, 6], "f": [0.5, 1, np.nan, 2, 1.5, -1]})
    got = getattr(xd.from_pandas(df, npartitions=n), method)(skipna=skipna).compute()
    tm.assert_frame_equal(got, getattr(df, method)(skipna=skipna))


@pytest.mark.parametrize("method", ["cumsum", "cumprod", "cummax", "cummin"])
def test_cumulative_empty_partitions_keep_dtype(method):
    pdf = pd.DataFrame({"i": [5, 1, 7, 2, 9, 3]})
    df = xd.from_pandas(pdf, npartitions=3)
    tm.assert_series_equal(getattr(df[df.i < 5].i, method)().compute(), getattr(pdf[pdf.i < 5].i, method)())
    tm.assert_frame_equal(getattr(df[df.i > 6], method)().compute(), getattr(pdf[pdf.i > 6], method)())


@pytest.mark.parametrize("n", [2, 3])
def test_cumsum_strings_in_order(n):
    s = pd.Series(list("bacdxa"))
    tm.assert_series_equal(xd.from_pandas(s, npartitions=n).cumsum().compute(), s.cumsum())


@pytest.mark.parametrize("n", NPARTS)
@pytest.mark.parametrize("columns", [["a", "b", "c"], ["a"], ["a", "c"], ["c"]])
def test_frame_reductions_keep_nullable_dtypes(n, columns):
    """A frame of nullable columns reduces to pandas' nullable dtype (Int64, Float64), not NumPy's."""
    pdf = pd.DataFrame({"a": pd.array([1, None, 3], dtype="Int64"), "b": pd.array([1.5, 2.5, None], dtype="Float64"),
                        "c": [1.0, 2.0, 3.0]})[columns]
    df = xd.from_pandas(pdf, npartitions=n)
    for method in ("sum", "mean", "min", "max", "count", "std", "var", "prod"):
        tm.assert_series_equal(getattr(df, method)().compute(), getattr(pdf, method)())


# --------------------------------------------------------------------------- agg


@pytest.mark.parametrize("n", NPARTS)
@pytest.mark.parametrize("func", ["sum", ["sum", "mean"], ["min", "max", "count"], {"a": "sum", "b": "mean"},
                                  {"a": ["sum", "max"], "b": "mean"}, {"b": ["min"], "a": ["max", "sum"]},
                                  ["median", "std"], ["any", "all", "prod", "var", "sem", "nunique"]])
def test_agg_by_names_like_pandas(n, func):
    """Each column keeps pandas' dtype (ints stay ints where every reduction gives one)."""
    pdf = pd.DataFrame({"a": [1, 2, 3, 7], "b": [1.5, 2.0, 4.0, np.nan]})
    df = xd.from_pandas(pdf, npartitions=n)
    expected = pdf.agg(func)
    got = df.agg(func).compute()
    (tm.assert_frame_equal if isinstance(expected, pd.DataFrame) else tm.assert_series_equal)(got, expected)
    if not isinstance(func, dict):
        got, expected = df.a.agg(func).compute(), pdf.a.agg(func)
        if isinstance(expected, pd.Series):
            tm.assert_series_equal(got, expected)
        else:
            assert_same_scalar(got, expected)
    assert df.aggregate(func).compute().equals(got if isinstance(func, dict) else df.agg(func).compute())


def test_agg_refuses_what_it_cannot_run_when_built():
    df = xd.from_pandas(pd.DataFrame({"a": [1, 2], "s": ["x", "y"]}), npartitions=2)
    with pytest.raises(ValueError, match="agg has no reduction 'mode'"):
        df.agg(["sum", "mode"])
    with pytest.raises(TypeError, match="reduction\\(chunk, aggregate\\)"):
        df.a.agg(lambda s: s.sum())
    with pytest.raises(TypeError, match="for a DataFrame"):
        df.a.agg({"a": "sum"})
    with pytest.raises(KeyError):
        df.agg({"nope": "sum"})


@pytest.mark.parametrize("n", [1, 3, 6])
@pytest.mark.parametrize("kwargs", [{}, {"normalize": True}, {"dropna": False}, {"ascending": True},
                                    {"subset": ["k"]}, {"subset": "j", "sort": False}])
def test_a_frames_value_counts_like_pandas(n, kwargs):
    rng = np.random.default_rng(7)
    pdf = pd.DataFrame({"k": rng.choice(["a", "b", "c", None], 200), "j": rng.integers(0, 4, 200),
                        "w": rng.integers(0, 2, 200).astype(float)})
    got = xd.from_pandas(pdf, npartitions=n).value_counts(**kwargs).compute()
    expected = pdf.value_counts(**kwargs)
    # the same counts per row of values; the order by count (equal counts in an order of their own)
    pd.testing.assert_series_equal(got.sort_index(), expected.sort_index())
    if kwargs.get("sort", True):
        assert got.is_monotonic_increasing if kwargs.get("ascending") else got.is_monotonic_decreasing


@pytest.mark.parametrize("n", [1, 3])
def test_reductions_within_rows_take_pandas_keywords(n):
    pdf = pd.DataFrame({"a": [1, None, 3, 4], "b": [None, None, 2.0, 5], "s": list("wxyz")})
    df = xd.from_pandas(pdf, npartitions=n)
    pd.testing.assert_series_equal(df.count(axis=1).compute(), pdf.count(axis=1))  # (count has no skipna)
    pd.testing.assert_series_equal(df.sum(axis=1, numeric_only=True).compute(), pdf.sum(axis=1, numeric_only=True))
    pd.testing.assert_series_equal(df[["a", "b"]].max(axis=1, skipna=False).compute(),
                                   pdf[["a", "b"]].max(axis=1, skipna=False))


# ------------------------------------------------- rows, times, no columns, three-valued logic


def _mixed(n: int = 30, seed: int = 8) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    out = pd.DataFrame({"f": rng.normal(size=n), "g": rng.normal(size=n), "b": rng.random(n) > 0.3,
                        "t": pd.Timestamp("2024-01-01") + pd.to_timedelta(rng.integers(0, 500, n), unit="h"),
                        "d": pd.to_timedelta(rng.integers(0, 500, n), unit="min"), "s": rng.choice(list("abc"), n)})
    out.loc[rng.random(n) < 0.2, "f"] = np.nan
    return out


@pytest.mark.parametrize("npartitions", [1, 4])
def test_row_statistics_mean_var_std_median_as_pandas(npartitions):
    pdf = _mixed()
    df = xd.from_pandas(pdf, npartitions=npartitions)
    for method, kwargs in (("mean", {}), ("var", {"ddof": 0}), ("std", {"skipna": False}), ("median", {})):
        got = getattr(df, method)(axis=1, numeric_only=True, **kwargs).compute()
        pd.testing.assert_series_equal(got, getattr(pdf, method)(axis=1, numeric_only=True, **kwargs))
        got = getattr(df[["f", "g"]], method)(axis="columns", **kwargs).compute()
        pd.testing.assert_series_equal(got, getattr(pdf[["f", "g"]], method)(axis="columns", **kwargs))
    with pytest.raises(ValueError, match="mean: no axis named 1 for a Series"):
        df.f.mean(axis=1)


@pytest.mark.parametrize("npartitions", [1, 4])
def test_std_of_times_and_statistics_of_no_columns_as_pandas(npartitions):
    pdf = _mixed()
    df = xd.from_pandas(pdf, npartitions=npartitions)
    pd.testing.assert_series_equal(df[["t", "d"]].std().compute(), pdf[["t", "d"]].std())
    pd.testing.assert_series_equal(df[["t", "d", "f"]].std().compute(), pdf[["t", "d", "f"]].std())
    only_times = df[["t", "d", "s"]]
    for method in ("median", "quantile"):
        got = getattr(only_times, method)(numeric_only=True).compute()
        want = getattr(pdf[["t", "d", "s"]], method)(numeric_only=True)
        assert got.empty and want.empty and got.dtype == want.dtype and got.name == want.name
    assert only_times.mode(numeric_only=True).compute().shape == pdf[["t", "d", "s"]].mode(numeric_only=True).shape


@pytest.mark.parametrize("npartitions", [1, 3])
def test_cumulative_numeric_only_and_nullable_any_all_as_pandas(npartitions):
    pdf = _mixed()
    df = xd.from_pandas(pdf, npartitions=npartitions)
    for method in ("cumsum", "cummax", "cumprod", "cummin"):
        pd.testing.assert_frame_equal(getattr(df, method)(numeric_only=True).compute(),
                                      getattr(pdf, method)(numeric_only=True))
    with pytest.raises(TypeError, match=r"numeric_only=True\) is a DataFrame's"):
        df.f.cumsum(numeric_only=True)
    for values in ([True, None, True, True], [False, None, False], [True, True, None]):
        s = pd.Series(values, dtype="boolean")
        ds = xd.from_pandas(s, npartitions=min(npartitions, len(values)))
        for method in ("any", "all"):
            got, want = getattr(ds, method)(skipna=False).compute(), getattr(s, method)(skipna=False)
            assert (got is pd.NA and want is pd.NA) or got == want, (values, method, got, want)
        frame = pd.DataFrame({"a": s, "b": pd.array([True] * len(values), dtype="boolean")})
        got = xd.from_pandas(frame, npartitions=min(npartitions, len(values))).all(skipna=False).compute()
        pd.testing.assert_series_equal(got, frame.all(skipna=False))


@pytest.mark.parametrize("npartitions", [1, 2])
def test_median_skipna_false_is_nan_where_a_value_is_missing(npartitions):
    pdf = pd.DataFrame({"a": [1.0, None, 3, 4], "b": [1.0, 2, 3, 5], "t": list("xyzw")})
    df = xd.from_pandas(pdf, npartitions=npartitions)
    pd.testing.assert_series_equal(df.median(skipna=False, numeric_only=True).compute(),
                                   pdf.median(skipna=False, numeric_only=True))
    assert np.isnan(df.a.median(skipna=False).compute()) and df.b.median(skipna=False).compute() == 2.5
    pd.testing.assert_series_equal(df[["a", "b"]].median(axis=1, skipna=False).compute(),
                                   pdf[["a", "b"]].median(axis=1, skipna=False))
    pd.testing.assert_series_equal(df[["a", "b"]].median_approximate().compute(), pdf[["a", "b"]].median())


@pytest.mark.parametrize("npartitions", [1, 2, 3])
@pytest.mark.parametrize("method", ["prod", "sum", "mean", "var", "std", "min", "max"])
@pytest.mark.parametrize("skipna", [True, False])
def test_numbers_in_an_object_column_reduce_as_pandas(npartitions, method, skipna):
    """An ``object`` column of numbers and None (as read from mixed data) reduces as in
    pandas: the stand-in's made-up text cannot multiply or average, so that is no refusal."""
    s = pd.Series([1, 2, None, 4, 5], dtype=object)
    df = pd.DataFrame({"a": s, "b": [1.0, 2.0, 3.0, 4.0, 5.0]})
    got = getattr(xd.from_pandas(s, npartitions=npartitions), method)(skipna=skipna).compute()
    expected = getattr(s, method)(skipna=skipna)
    assert pd.isna(got) == pd.isna(expected) and (pd.isna(expected) or got == pytest.approx(expected))
    got = getattr(xd.from_pandas(df, npartitions=npartitions), method)(skipna=skipna).compute()
    expected = getattr(df, method)(skipna=skipna)
    tm.assert_series_equal(got.astype(float), expected.astype(float))


def test_a_reduction_no_object_values_could_make_is_still_refused_when_built():
    """Where numbers in the ``object`` column would not help (a column of times cannot be
    multiplied), the refusal still comes when the expression is built."""
    df = pd.DataFrame({"o": pd.Series([1, 2], dtype=object), "t": pd.date_range("2000", periods=2)})
    with pytest.raises(TypeError):
        df.prod()
    with pytest.raises(TypeError, match=r"prod\(\) of this DataFrame fails in pandas"):
        xd.from_pandas(df, npartitions=1).prod()


@pytest.mark.parametrize("npartitions", [1, 3])
@pytest.mark.parametrize("method, numeric_only", [
    (m, n) for m in ["sum", "prod", "min", "max", "mean", "var", "std", "median", "sem", "skew", "kurt"]
    for n in (False, True)] + [("any", False), ("all", False)])  # (pandas' any and all take bool_only)
def test_axis_none_reduces_every_value_as_pandas(npartitions, method, numeric_only):
    """``axis=None`` given is pandas' reduction over both axes (one value), not per column."""
    df = pd.DataFrame({"a": [1.0, 2.0, 3.0, np.nan, 0.5], "b": [4.0, 5.0, 6.0, 7.0, 1.0], "i": [1, 2, 3, 4, 5]})
    if numeric_only:
        df["t"] = list("vwxyz")
    kwargs = {} if method in ("any", "all") else {"numeric_only": numeric_only}
    got = getattr(xd.from_pandas(df, npartitions=npartitions), method)(axis=None, **kwargs)
    expected = getattr(df, method)(axis=None, **kwargs)
    assert np.ndim(expected) == 0
    assert got.compute() == pytest.approx(expected)


def test_count_axis_none_is_refused_as_pandas_refuses_it():
    df = pd.DataFrame({"a": [1.0, 2.0]})
    with pytest.raises(ValueError):
        df.count(axis=None)
    with pytest.raises(ValueError, match=r"count\(\)\.sum\(\)"):
        xd.from_pandas(df, npartitions=1).count(axis=None)


@pytest.mark.parametrize("method", ["sum", "prod", "mean", "var", "std"])
def test_a_frame_with_an_object_column_reduces_to_objects_as_pandas(method):
    """pandas gives such a frame's statistics as an object Series (7 stays an int beside 10.0)."""
    df = pd.DataFrame({"a": pd.Series([1, 2, None, 4], dtype=object), "b": [1.0, 2.0, 3.0, 4.0]})
    got = getattr(xd.from_pandas(df, npartitions=2), method)().compute()
    expected = getattr(df, method)()
    assert got.dtype == expected.dtype == object
    if method in ("sum", "prod"):  # (the values keep their kinds; the moments are floats)
        assert [type(v) for v in got] == [type(v) for v in expected]
    tm.assert_series_equal(got.astype(float), expected.astype(float))
