"""More pandas operations on the dataframes: quantile/sem/skew/kurt, memory, pairing by label (equal to pandas)."""

import io
import warnings

import numpy as np
import pandas as pd
import pytest

import xsched.dataframe as xd

PARTS = [1, 2, 3]


@pytest.fixture
def numbers():
    return pd.DataFrame({"a": [1, 2, None, 4, 5, 6, 7.5, 3], "b": [3.0, 1, 4, 1, None, 9, 2, 2],
                         "c": pd.array([1, None, 3, 3, 2, 1, 1, 8], dtype="Int64"),
                         "d": [True, False, True, True, False, False, True, True]},
                        index=[5, 3, 9, 1, 1, 0, 2, 7])


# --------------------------------------------------------------------------- module functions


@pytest.mark.parametrize("n", PARTS)
def test_to_timedelta_isna_notna(n):
    text = pd.Series(["1 days", "2h", None, "3ns", "4 min"])
    s = xd.from_pandas(text, npartitions=n)
    out = xd.to_timedelta(s)
    pd.testing.assert_series_equal(out.compute(), pd.to_timedelta(text))  # (nanoseconds kept)
    nums = pd.Series([1.0, None, 3.0, 4.0])
    got = xd.to_timedelta(xd.from_pandas(nums, npartitions=n), unit="s")
    assert got.dtype == pd.to_timedelta(nums, unit="s").dtype
    pd.testing.assert_series_equal(got.compute(), pd.to_timedelta(nums, unit="s"))
    pd.testing.assert_series_equal(xd.isna(s).compute(), pd.isna(text))
    pd.testing.assert_series_equal(xd.notna(s).compute(), pd.notna(text))
    assert xd.isna(None) and not xd.notna(np.nan)


def test_to_timedelta_refuses_frames_when_built():
    with pytest.raises(TypeError, match="Series or Index"):
        xd.to_timedelta(xd.from_pandas(pd.DataFrame({"a": [1]}), npartitions=1))


# --------------------------------------------------------------------------- quantile, sem, skew, kurt


@pytest.mark.parametrize("n", PARTS)
def test_frame_quantile_equal_pandas(numbers, n):
    pdf = numbers[["a", "b"]].assign(e=pd.array([1.5, None, 2, 3, 4, 5, 6, 7], dtype="Float64"))
    df = xd.from_pandas(pdf, npartitions=n, sort=False)
    pd.testing.assert_series_equal(df.quantile(0.3).compute(), pdf.quantile(0.3))
    pd.testing.assert_frame_equal(df.quantile([0.1, 0.5, 0.9]).compute(), pdf.quantile([0.1, 0.5, 0.9]))
    times = pd.DataFrame({"t": pd.date_range("2000", periods=5, tz="UTC"), "x": [1.0, 2, 3, 4, 5]})
    dt = xd.from_pandas(times, npartitions=n)
    pd.testing.assert_series_equal(dt.quantile(0.5).compute(), times.quantile(0.5))
    pd.testing.assert_frame_equal(dt.quantile([0.25]).compute(), times.quantile([0.25]))
    pd.testing.assert_series_equal(dt.quantile(0.5, numeric_only=True).compute(),
                                   times.quantile(0.5, numeric_only=True))


def test_frame_quantile_errors_when_built():
    df = xd.from_pandas(pd.DataFrame({"a": [1.0, 2], "s": ["x", "y"]}), npartitions=2)
    with pytest.raises(TypeError, match="numeric_only=True"):
        df.quantile(0.5)
    with pytest.raises(ValueError, match="interpolation='spline'"):
        df.quantile(0.5, numeric_only=True, interpolation="spline")


@pytest.mark.parametrize("n", PARTS)
@pytest.mark.parametrize("kind", ["sem", "skew", "kurt"])
def test_sem_skew_kurt_equal_pandas(numbers, n, kind):
    df = xd.from_pandas(numbers, npartitions=n, sort=False)
    out = getattr(df, kind)()
    pd.testing.assert_series_equal(out.compute(), getattr(numbers, kind)())
    for col in numbers.columns:
        assert np.isclose(getattr(df[col], kind)().compute(), getattr(numbers[col], kind)())
    pd.testing.assert_series_equal(getattr(df, kind)(skipna=False).compute(), getattr(numbers, kind)(skipna=False))
    pd.testing.assert_series_equal(getattr(df, kind)(split_every=2).compute(), getattr(numbers, kind)())


@pytest.mark.parametrize("n", PARTS)
def test_skew_kurt_edges(n):
    pdf = pd.DataFrame({"same": [3.3] * 7, "big": 1e9 + np.array([1.0, 2, 4, 9, 3, 3, 7]),
                        "few": [1.0, 2.0, None, None, None, None, None],
                        "none": [np.nan] * 7})
    df = xd.from_pandas(pdf, npartitions=n)
    for kind in ("skew", "kurt", "sem"):
        pd.testing.assert_series_equal(getattr(df, kind)().compute(), getattr(pdf, kind)())
    pd.testing.assert_series_equal(df.sem(ddof=0).compute(), pdf.sem(ddof=0))
    assert df.kurtosis is not None and np.isclose(df.big.kurtosis().compute(), pdf.big.kurtosis())


def test_skew_errors_when_built():
    df = xd.from_pandas(pd.DataFrame({"a": [1.0, 2], "s": ["x", "y"]}), npartitions=2)
    with pytest.raises(TypeError, match="numeric_only=True"):
        df.skew()
    with pytest.raises(TypeError, match="kurt"):
        df.s.kurt()
    pd.testing.assert_series_equal(df.skew(numeric_only=True).compute(),
                                   pd.DataFrame({"a": [1.0, 2], "s": ["x", "y"]}).skew(numeric_only=True))


@pytest.mark.parametrize("n", PARTS)
def test_autocorr_equal_pandas(numbers, n):
    df = xd.from_pandas(numbers, npartitions=n, sort=False)
    for lag in (1, 2, -1):
        assert np.isclose(df.a.autocorr(lag).compute(), numbers.a.autocorr(lag))
    assert np.isclose(df.c.autocorr().compute(), numbers.c.autocorr())


@pytest.mark.parametrize("n", PARTS)
def test_is_monotonic(n):
    cases = [pd.Series([1, 2, 2, 5, 7, 9]), pd.Series([1, 2, 2, 1, 7, 9]), pd.Series([9, 7, 7, 2, 1, 0]),
             pd.Series([1.0, 2, None, 4, 5, 6]), pd.Series(list("abccde")),
             pd.Series(pd.array([1, 2, 3, None, 5, 6], dtype="Int64")),
             pd.Series(pd.Categorical(list("bbaaaa"), categories=list("ba"))),
             pd.Series(pd.Categorical(list("bbaaaa"), categories=list("ab")))]
    for pds in cases:
        s = xd.from_pandas(pds, npartitions=n)
        inc, dec = s.is_monotonic_increasing, s.is_monotonic_decreasing
        assert (inc.compute(), dec.compute()) == (pds.is_monotonic_increasing, pds.is_monotonic_decreasing), pds
    labels = pd.Series(range(6), index=[3, 1, 4, 4, 5, 9])
    idx = xd.from_pandas(labels, npartitions=n, sort=False).index
    assert idx.is_monotonic_increasing.compute() == labels.index.is_monotonic_increasing
    empty = xd.from_pandas(pd.Series([1.0, 2, 3]), npartitions=n)
    assert empty[empty > 5].is_monotonic_decreasing.compute() is True


# --------------------------------------------------------------------------- memory


@pytest.mark.parametrize("n", PARTS)
def test_memory_usage_and_nbytes_sum_the_partitions(numbers, n):
    df = xd.from_pandas(numbers, npartitions=n, sort=False)
    pd.testing.assert_series_equal(df.memory_usage().compute(), numbers.memory_usage())
    pd.testing.assert_series_equal(df.memory_usage(index=False).compute(), numbers.memory_usage(index=False))
    text = pd.Series(["x", None, "yy"] * 3, dtype=object, index=list(range(10, 19)))
    s = xd.from_pandas(text, npartitions=n)
    assert s.memory_usage(deep=True).compute() == text.memory_usage(deep=True)
    assert df.a.nbytes.compute() == numbers.a.nbytes and df.index.nbytes.compute() == numbers.index.nbytes
    assert df.index.memory_usage().compute() == numbers.index.memory_usage()
    assert df.index.memory_usage(True).compute() == numbers.index.memory_usage(True)


def _table(text: str) -> list:
    lines = text.splitlines()
    return lines[2:-1]  # from "Data columns" to the dtypes line


@pytest.mark.parametrize("n", PARTS)
def test_info_prints_pandas_table_with_counts(numbers, n):
    pdf = numbers.assign(s=pd.Series(list("xy") + [None] * 6, index=numbers.index, dtype=object),
                         long_name=pd.Categorical(list("abababab")))
    df = xd.from_pandas(pdf, npartitions=n, sort=False)
    for kwargs in ({}, {"show_counts": False}, {"verbose": False}, {"memory_usage": "deep"}):
        want, got = io.StringIO(), io.StringIO()
        pdf.info(buf=want, **kwargs)
        df.info(buf=got, **kwargs)
        assert _table(got.getvalue()) == _table(want.getvalue()), kwargs
        head = got.getvalue().splitlines()[:2]
        assert head == ["<class 'xsched.dataframe.core.DataFrame'>", f"Index: 8 entries, 5 to 7, in {n} partitions"]
    plain = numbers[["a", "b"]]
    got, want = io.StringIO(), io.StringIO()
    xd.from_pandas(plain, npartitions=n, sort=False).info(buf=got)
    plain.info(buf=want)
    assert got.getvalue().splitlines()[-1] == want.getvalue().splitlines()[-1]  # (memory usage: 192.0 bytes)


# --------------------------------------------------------------------------- methods


def test_rename_axis_pop_squeeze(numbers):
    df = xd.from_pandas(numbers, npartitions=2, sort=False)
    pd.testing.assert_frame_equal(df.rename_axis("k").compute(), numbers.rename_axis("k"))
    pd.testing.assert_frame_equal(df.rename_axis(columns="cols").compute(), numbers.rename_axis(columns="cols"))
    pd.testing.assert_series_equal(df.a.rename_axis("k").compute(), numbers.a.rename_axis("k"))
    pdf = numbers.copy()
    popped = df.pop("b")
    pd.testing.assert_series_equal(popped.compute(), pdf.pop("b"))
    pd.testing.assert_frame_equal(df.compute(), pdf)
    with pytest.raises(KeyError, match="no column 'zz'"):
        df.pop("zz")
    pd.testing.assert_series_equal(df[["a"]].squeeze().compute(), numbers[["a"]].squeeze())
    pd.testing.assert_series_equal(df[["a"]].squeeze(axis=1).compute(), numbers[["a"]].squeeze(axis=1))
    assert df.squeeze() is df and df.a.squeeze() is not None
    with pytest.raises(NotImplementedError, match="rows"):
        df.squeeze(axis=0)


@pytest.mark.parametrize("n", PARTS)
def test_index_map_nunique_drop_duplicates(n):
    labels = pd.Index([3, 1, 3, 2, None, 1, 5, None])
    idx = xd.from_pandas(pd.Series(range(8), index=labels), npartitions=n, sort=False).index
    pd.testing.assert_index_equal(idx.map(lambda v: v * 2).compute(), labels.map(lambda v: v * 2))
    assert idx.nunique().compute() == labels.nunique()
    assert idx.nunique(dropna=False).compute() == labels.nunique(dropna=False)
    pd.testing.assert_index_equal(idx.drop_duplicates().compute(), labels.drop_duplicates())
    pd.testing.assert_index_equal(idx.drop_duplicates(keep="last").compute(), labels.drop_duplicates(keep="last"))
    with pytest.raises(NotImplementedError, match="keep=False"):
        idx.drop_duplicates(keep=False)


# --------------------------------------------------------------------------- operators


@pytest.fixture
def pair():
    a = pd.DataFrame({"x": [1.0, None, 3, None, 5, 6], "y": [None, "a", "b", None, "c", "d"]},
                     index=[0, 1, 2, 3, 4, 6])
    b = pd.DataFrame({"x": [9.0, 2, None, 4, 9], "z": [1, 2, 3, 4, 5]}, index=[0, 1, 3, 4, 5])
    return a, b


def test_combine_first_and_align_on_equal_inner_divisions(pair):
    a, b = pair
    for n in (1, 2):
        left, right = xd.from_pandas(a, npartitions=n), xd.from_pandas(b, npartitions=n)
        assert left.divisions[1:-1] == right.divisions[1:-1]
        out = left.combine_first(right)
        pd.testing.assert_frame_equal(out.compute(), a.combine_first(b))
        assert out.divisions == ((0, 6) if n == 1 else (0, 3, 6))
        pd.testing.assert_series_equal(left.x.combine_first(right.x).compute(), a.x.combine_first(b.x))
        for join in ("outer", "inner", "left", "right"):
            got, want = left.align(right, join=join), a.align(b, join=join)
            pd.testing.assert_frame_equal(got[0].compute(), want[0])
            pd.testing.assert_frame_equal(got[1].compute(), want[1])
        got = left.x.align(right.x, fill_value=0)
        pd.testing.assert_series_equal(got[1].compute(), a.x.align(b.x, fill_value=0)[1])


def test_combine_first_partitions_of_one_frame(numbers):
    for n in PARTS:
        df = xd.from_pandas(numbers, npartitions=n)
        pd.testing.assert_series_equal(df.a.combine_first(df.b).compute(), numbers.sort_index().a.combine_first(
            numbers.sort_index().b))


def test_combine_first_align_errors_when_built(pair):
    a, b = pair
    left, right = xd.from_pandas(a, npartitions=3), xd.from_pandas(b, npartitions=3)
    with pytest.raises(ValueError, match="divisions known.*set_index"):
        left.clear_divisions().combine_first(right.repartition(npartitions=2))
    with pytest.raises(ValueError, match="divisions known"):
        left.clear_divisions().align(left)
    with pytest.raises(TypeError, match="xsched DataFrame or Series"):
        left.combine_first(b)


@pytest.mark.parametrize("n", PARTS)
def test_frame_map_case_when(numbers, n):
    df = xd.from_pandas(numbers, npartitions=n, sort=False)
    pd.testing.assert_frame_equal(df[["a", "b"]].map(lambda v: v * 2).compute(),
                                  numbers[["a", "b"]].map(lambda v: v * 2))
    pd.testing.assert_frame_equal(df[["a", "b"]].map(lambda v: v + 1, na_action="ignore").compute(),
                                  numbers[["a", "b"]].map(lambda v: v + 1, na_action="ignore"))
    s, p = df.a, numbers.a
    got = s.case_when([(s < 3, 0), (lambda v: v > 5, s * 10), (df.d, -1.0)])
    pd.testing.assert_series_equal(got.compute(), p.case_when([(p < 3, 0), (lambda v: v > 5, p * 10),
                                                               (numbers.d, -1.0)]))
    with pytest.raises(TypeError, match="does not split by partition"):
        s.case_when([([True] * 8, 0)])
    with pytest.raises(TypeError, match="non-empty list"):
        s.case_when([])


@pytest.mark.parametrize("n", PARTS)
def test_dot_with_pandas(numbers, n):
    df = xd.from_pandas(numbers, npartitions=n, sort=False)
    fb = numbers.b.fillna(0).set_axis([5, 3, 9, 4, 1, 0, 2, 7])
    s = xd.from_pandas(fb, npartitions=n, sort=False)
    other = pd.Series(np.arange(8.0) - 2, index=fb.index[::-1])
    assert s.dot(other).compute() == fb.dot(other)
    mat = pd.DataFrame({"p": range(8), "q": np.arange(8) * 0.5}, index=fb.index[::-1])
    pd.testing.assert_series_equal(s.dot(mat).compute(), fb.dot(mat))
    with pytest.raises(ValueError, match="not aligned"):
        s.dot(other.set_axis([5, 3, 9, 4, 1, 0, 2, 11])).compute()
    with pytest.raises(ValueError, match="not aligned"):
        s.dot(pd.concat([other, pd.Series([1.0], index=[12])])).compute()
    frame = numbers[["a", "b"]]
    weights = pd.DataFrame({"u": [1.0, 2], "v": [3.0, -1]}, index=["b", "a"])
    pd.testing.assert_frame_equal(df[["a", "b"]].dot(weights).compute(), frame.dot(weights))
    pd.testing.assert_series_equal(df[["a", "b"]].dot(weights.u).compute(), frame.dot(weights.u))
    with pytest.raises(ValueError, match="not aligned"):
        df.dot(weights)


# --------------------------------------------------------------------------- laziness


def test_new_operations_are_lazy(numbers, pair):
    df = xd.from_pandas(numbers, npartitions=2, sort=False)
    a, b = pair
    left, right = xd.from_pandas(a, npartitions=2), xd.from_pandas(b, npartitions=2)
    built = [df[["a", "b"]].quantile(0.5), df.sem(), df.skew(), df.kurt(), df.a.autocorr(),
             df.a.is_monotonic_increasing,
             df.memory_usage(), df.a.nbytes, left.combine_first(right), left.align(right)[0], df.map(str),
             df.a.case_when([(df.a > 1, 0)]), xd.to_timedelta(df.a, unit="s"), df.index.drop_duplicates(),
             df.index.nunique()]
    for obj in built:
        assert hasattr(obj, "compute") and hasattr(obj, "_graph"), obj


def test_corr_of_an_all_missing_partition_warns_nothing():
    pds = pd.Series([1.0, 2, None, None, 5, 3])  # (the middle partition: all missing)
    s = xd.from_pandas(pds, npartitions=3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert np.isclose(s.autocorr().compute(), pds.autocorr())
        assert np.isclose(s.corr(s * 2).compute(), 1.0)
