"""pandas parity of the shuffle-based operations: merges on an index, sorts of strings with
missing values and of categoricals, merges on keys of different dtypes."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
import pandas.testing as tm
from pandas.testing import assert_frame_equal

import xsched.dataframe as xd

from tests.support.helpers import as_merged

HOWS = ["inner", "left", "right", "outer"]


def _rows(df: pd.DataFrame) -> pd.DataFrame:
    """The rows with their index as a column, in one order (a distributed merge's is not pandas')."""
    df = df.reset_index()
    return df.sort_values(list(df.columns), kind="stable").reset_index(drop=True)


# --------------------------------------------------------------------------- merges on an index

LEFT = pd.DataFrame({"k": [1, 2, 3, 5, 3, 1], "v": [10, 20, 30, 50, 31, 11]}, index=[100, 101, 102, 103, 104, 105])
RIGHT = pd.DataFrame({"w": ["a", "b", "c", "d"], "v": [0, 0, 7, 8]}, index=[1, 3, 4, 3])


@pytest.mark.parametrize("how", HOWS)
@pytest.mark.parametrize("nl,nr", [(1, 1), (2, 1), (3, 2)])
def test_join_on_matches_the_right_index(how, nl, nr):
    got = xd.from_pandas(LEFT, npartitions=nl).join(xd.from_pandas(RIGHT, npartitions=nr), on="k", how=how,
                                                    rsuffix="_r").compute()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (pandas 3 deprecates rsuffix)
        expected = LEFT.join(RIGHT, on="k", how=how, rsuffix="_r")
    assert_frame_equal(_rows(got), _rows(expected))


@pytest.mark.parametrize("how", HOWS)
@pytest.mark.parametrize("nl,nr", [(1, 1), (2, 1), (1, 3), (3, 2)])
@pytest.mark.parametrize("broadcast", [None, False])
def test_merge_on_a_column_and_an_index(how, nl, nr, broadcast):
    left, right = xd.from_pandas(LEFT, npartitions=nl), xd.from_pandas(RIGHT, npartitions=nr)
    got = left.merge(right, left_on="k", right_index=True, how=how, broadcast=broadcast)
    assert_frame_equal(_rows(got.compute()), _rows(LEFT.merge(RIGHT, left_on="k", right_index=True, how=how)))
    if got.known_divisions:  # (the left's index, kept by an inner or left merge)
        assert got.compute().index.is_monotonic_increasing
    got = right.merge(left, left_index=True, right_on="k", how=how, broadcast=broadcast)
    assert_frame_equal(_rows(got.compute()), _rows(RIGHT.merge(LEFT, left_index=True, right_on="k", how=how)))
    assert not got.known_divisions  # (the result's index is the right's: the left's divisions do not hold)


@pytest.mark.parametrize("how", HOWS)
def test_merge_on_indexes_of_unknown_divisions(how):
    left = pd.DataFrame({"v": range(6)}, index=[5, 1, 3, 2, 4, 0])
    right = pd.DataFrame({"w": range(4)}, index=[3, 9, 1, 3])
    xl = xd.from_pandas(left, npartitions=3).shuffle("v")  # (the divisions unknown)
    xr = xd.from_pandas(right, npartitions=2).shuffle("w")
    got = xl.merge(xr, left_index=True, right_index=True, how=how).compute()
    assert_frame_equal(_rows(got), _rows(left.merge(right, left_index=True, right_index=True, how=how)))


# --------------------------------------------------------------------------- sorts

STRINGS = pd.DataFrame({"s": ["b", None, "a", "d", None, "c", "a", "e"], "v": range(8)})


@pytest.mark.parametrize("dtype", ["str", object])
@pytest.mark.parametrize("npartitions", [1, 2, 3])
@pytest.mark.parametrize("ascending", [True, False])
@pytest.mark.parametrize("na_position", ["first", "last"])
def test_sort_values_strings_with_missing(dtype, npartitions, ascending, na_position):
    df = STRINGS.astype({"s": dtype})
    got = xd.from_pandas(df, npartitions=npartitions).sort_values("s", ascending=ascending,
                                                                  na_position=na_position).compute()
    expected = df.sort_values("s", ascending=ascending, na_position=na_position, kind="stable")
    assert got.s.tolist() == expected.s.tolist()
    assert sorted(got.v) == list(range(8))


@pytest.mark.parametrize("dtype", ["str", object])
@pytest.mark.parametrize("npartitions", [1, 2, 3])
def test_set_index_strings_with_missing(dtype, npartitions):
    df = STRINGS.astype({"s": dtype})
    got = xd.from_pandas(df, npartitions=npartitions).set_index("s").compute()
    expected = df.set_index("s").sort_index(kind="stable")
    assert got.index.tolist() == expected.index.tolist()
    assert sorted(got.v) == list(range(8))


CATS = pd.DataFrame({"c": pd.Categorical(list("xyzxyzx") + [None], categories=["z", "y", "x"], ordered=True),
                     "v": range(8)})


@pytest.mark.parametrize("ordered", [True, False])
@pytest.mark.parametrize("npartitions", [1, 2, 3])
@pytest.mark.parametrize("ascending", [True, False])
@pytest.mark.parametrize("na_position", ["first", "last"])
def test_sort_values_categorical_in_category_order(ordered, npartitions, ascending, na_position):
    df = CATS.assign(c=CATS.c.cat.as_ordered() if ordered else CATS.c.cat.as_unordered())
    got = xd.from_pandas(df, npartitions=npartitions).sort_values("c", ascending=ascending,
                                                                  na_position=na_position).compute()
    expected = df.sort_values("c", ascending=ascending, na_position=na_position, kind="stable")
    assert got.c.tolist() == expected.c.tolist()
    assert got.c.dtype == expected.c.dtype


@pytest.mark.parametrize("npartitions", [2, 3])
def test_set_index_categorical_in_category_order(npartitions):
    got = xd.from_pandas(CATS, npartitions=npartitions).set_index("c").compute()
    assert got.index.tolist() == CATS.set_index("c").sort_index(kind="stable").index.tolist()


@pytest.mark.parametrize("ordered", [True, False])
@pytest.mark.parametrize("npartitions", [2, 3])
def test_sort_values_categorical_without_missing(ordered, npartitions):
    df = pd.DataFrame({"c": pd.Categorical(list("xyzxyz"), categories=["z", "y", "x"], ordered=ordered)})
    got = xd.from_pandas(df, npartitions=npartitions).sort_values("c").compute()
    assert_frame_equal(got, df.sort_values("c", kind="stable"))


# --------------------------------------------------------------------------- merge keys of different dtypes

_T = pd.to_datetime(["2021-01-01", "2021-01-02", "2021-01-03 00:00:01", "2021-01-04"], format="ISO8601")
KEYS = {
    "datetime s, ns": (_T.astype("datetime64[s]"), _T[1:].astype("datetime64[ns]")),
    "datetime ms, us": (_T.astype("datetime64[ms]"), _T[1:].astype("datetime64[us]")),
    "tz-aware": (_T.tz_localize("UTC").astype("datetime64[s, UTC]"),
                 _T[1:].tz_localize("UTC").tz_convert("Asia/Tokyo")),
    "timedelta s, ns": (pd.to_timedelta([1, 2, 3, 4], unit="s").astype("timedelta64[s]"),
                        pd.to_timedelta([2, 3, 4], unit="s")),
    "category, str": (pd.Categorical(list("wxyz")), pd.array(list("xyz"), dtype="str")),
    "str, category": (pd.array(list("wxyz"), dtype="str"), pd.Categorical(list("xyz"))),
    "category, object": (pd.Categorical(list("wxyz")), np.array(list("xyz"), dtype=object)),
    "categories differ": (pd.Categorical(list("wxyz")), pd.Categorical(list("xyz"), categories=list("zyxq"))),
    "category of ints, int": (pd.Categorical([1, 2, 3, 4]), np.array([2, 3, 4])),
}


@pytest.mark.parametrize("keys", list(KEYS), ids=list(KEYS))
@pytest.mark.parametrize("how", HOWS)
@pytest.mark.parametrize("nl,nr", [(2, 2), (3, 2)])
def test_merge_keys_of_different_dtypes(keys, how, nl, nr):
    a, b = KEYS[keys]
    left, right = pd.DataFrame({"k": a, "a": range(len(a))}), pd.DataFrame({"k": b, "b": range(len(b))})
    got = xd.from_pandas(left, npartitions=nl).merge(xd.from_pandas(right, npartitions=nr), on="k", how=how)
    expected = as_merged(left.merge(right, on="k", how=how), got)
    assert_frame_equal(got.compute().sort_values(["a", "b"]).reset_index(drop=True),
                       expected.sort_values(["a", "b"]).reset_index(drop=True))


def test_set_index_categorical_divisions_follow_category_order():
    """Given divisions of a categorical column split rows in category order (the order it
    sorts in); out of that order they fail when built; the result's divisions stay unknown,
    as loc compares them as values."""
    pdf = pd.DataFrame({"c": pd.Categorical(list("abcdabcd"), categories=list("dcba"), ordered=True),
                        "v": range(8)})
    df = xd.from_pandas(pdf, npartitions=2)
    with pytest.raises(ValueError, match="order of the column's categories"):
        df.set_index("c", divisions=["a", "b", "c", "d"])
    out = df.set_index("c", divisions=["d", "c", "a"])
    assert out.npartitions == 2 and not out.known_divisions
    expected = pdf.set_index("c").sort_index()
    assert out.compute().v.tolist() == expected.v.tolist()
    assert sorted(out.loc["b"].compute().v.tolist()) == sorted(expected.loc["b"].v.tolist())


@pytest.mark.parametrize("nl,nr", [(3, 2), (1, 1), (2, 3)])
@pytest.mark.parametrize("how", ["right", "outer", "left", "inner"])
def test_merge_column_on_index_labels_unmatched_rows_missing(nl, nr, how):
    """Joined on a column and the other side's index, unmatched rows are labelled NaN as in
    pandas, also in outputs whose column side received no rows."""
    left = pd.DataFrame({"k": [1, 2, 3, 4, 2, 9], "x": range(6)}, index=range(10, 16))
    right = pd.DataFrame({"y": list("abcd")}, index=[2, 1, 4, 7])
    lx, rx = xd.from_pandas(left, nl, sort=False), xd.from_pandas(right, nr, sort=False)

    def same(got, expected):
        cols = list(expected.columns)
        pd.testing.assert_frame_equal(got.sort_values(cols), expected.sort_values(cols))

    same(lx.merge(rx, left_on="k", right_index=True, how=how).compute(),
         left.merge(right, left_on="k", right_index=True, how=how))
    same(rx.merge(lx, left_index=True, right_on="k", how=how).compute(),
         right.merge(left, left_index=True, right_on="k", how=how))


# --------------------------------------------------------------------------- sort_index


@pytest.mark.parametrize("n", [1, 3, 6])
@pytest.mark.parametrize("ascending", [True, False])
@pytest.mark.parametrize("kind", ["frame", "series", "unnamed frame", "unnamed series"])
def test_sort_index_like_pandas(n, ascending, kind):
    rng = np.random.default_rng(n)
    pdf = pd.DataFrame({"a": rng.normal(size=60), "b": rng.integers(0, 9, 60)},
                       index=pd.Index(rng.permutation(60) * 1.5, name="t"))
    ref = {"frame": pdf, "series": pdf.a, "unnamed frame": pdf.rename_axis(None),
           "unnamed series": pdf.a.rename(None).rename_axis(None)}[kind]
    shuffled = xd.from_pandas(ref, npartitions=n, sort=False)
    got = shuffled.sort_index(ascending=ascending)
    assert got.known_divisions == ascending  # (descending: the partitions reversed, divisions unknown)
    check = tm.assert_frame_equal if isinstance(ref, pd.DataFrame) else tm.assert_series_equal
    check(got.compute(), ref.sort_index(ascending=ascending))
    ordered = xd.from_pandas(ref.sort_index(), npartitions=n)
    assert "shuffle" not in str(list(ordered.sort_index().__xsched_graph__()))  # (known divisions: sorted in place)
    check(ordered.sort_index().compute(), ref.sort_index())


def test_sort_index_refuses_what_it_does_not_run_when_built():
    df = xd.from_pandas(pd.DataFrame({"t": [1, 2]}, index=pd.Index([2, 1], name="t")), npartitions=1, sort=False)
    with pytest.raises(ValueError, match="index is named 't' like a column"):
        df.sort_index()
    with pytest.raises(NotImplementedError, match=r"\['level'\].*part.sort_index"):
        df.sort_index(level=0)
    with pytest.raises(TypeError, match="ascending must be True or False"):
        df.sort_index(ascending=[True])


# --------------------------------------------------------------------------- merge's sort and shuffle_method


@pytest.mark.parametrize("how", HOWS)
@pytest.mark.parametrize("method", [None, "tasks"])
def test_merge_sort_orders_by_the_keys_and_shuffle_method_is_dask_s(how, method):
    rng = np.random.default_rng(3)
    a = pd.DataFrame({"k": rng.integers(0, 9, 40), "a": rng.integers(0, 5, 40), "v": np.arange(40)})
    b = pd.DataFrame({"k2": rng.integers(0, 9, 30), "a": rng.integers(0, 5, 30), "w": np.arange(30)})
    A, B = xd.from_pandas(a, npartitions=3), xd.from_pandas(b, npartitions=4)
    for kw in ({"left_on": "k", "right_on": "k2"}, {"on": "a"}, {}):
        lazy = A.merge(B, how=how, sort=True, shuffle_method=method, **kw)
        want, got = as_merged(a.merge(b, how=how, sort=True, **kw), lazy), lazy.compute()
        keys = [kw["left_on"]] if "left_on" in kw else ["a"]
        assert got[keys].to_numpy().tolist() == want[keys].to_numpy().tolist()  # (the keys in pandas' order)
        assert_frame_equal(_rows(got.reset_index(drop=True)), _rows(want))
    on_index = A.merge(B.set_index("k2"), how=how, left_on="k", right_index=True, sort=True).compute()
    assert on_index.k.is_monotonic_increasing or how in ("right", "outer")
    small_left, small_right = pd.DataFrame({"a": [3, 1, 5], "v": [1, 2, 3]}), pd.DataFrame({"b": [4, 1, 2, 3]})
    got = xd.from_pandas(small_left, npartitions=2).merge(xd.from_pandas(small_right, npartitions=2), how=how,
                                                          left_on="a", right_on="b", sort=True).compute()
    want = small_left.merge(small_right, how=how, left_on="a", right_on="b", sort=True)
    assert_frame_equal(got.reset_index(drop=True), want, check_dtype=False)  # (rows only the right has, by b)
    with pytest.raises(ValueError, match="shuffle method 'disk' is not one of"):
        A.merge(B, on="a", shuffle_method="disk")
    with pytest.raises(ValueError, match="cross join has no keys to sort by"):
        A.merge(B, how="cross", sort=True)


def test_set_index_npartitions_auto_aims_at_a_partition_size(monkeypatch):
    import xsched.dataframe.shuffle as shuffle_module

    pdf = pd.DataFrame({"a": np.arange(10_000)[::-1], "b": np.random.default_rng(0).random(10_000)})
    df = xd.from_pandas(pdf, npartitions=8)
    assert df.set_index("a", npartitions="auto").npartitions == 1  # (240 kB: one partition of 128 MiB)
    total = int(pdf.memory_usage(deep=True).sum())
    monkeypatch.setattr(shuffle_module, "AUTO_PARTITION_BYTES", total // 6)
    out = df.set_index("a", npartitions="auto")
    assert 3 <= out.npartitions <= 7 and out.known_divisions
    pd.testing.assert_frame_equal(out.compute(), pdf.set_index("a").sort_index())
    with pytest.raises(ValueError, match="number of partitions or 'auto'"):
        df.set_index("a", npartitions="many")


@pytest.mark.parametrize("unit", ["s", "us", "ns"])
@pytest.mark.parametrize("kind", ["datetime", "timedelta", "zone"])
def test_set_index_and_sort_values_on_times_of_any_unit(unit, kind):
    """Nanosecond times: the boundaries searched were Timestamps beside nanosecond values,
    which NumPy compares as ints (a TypeError in every split); and the divisions' ends are
    the least and greatest times themselves (through float64 the last one fell short of the
    greatest, so loc of it found no partition)."""
    times = pd.to_datetime(["2024-01-01", "2024-01-03 00:00:00.123456789", "2024-01-02", "2024-01-05",
                            "2023-12-30"], format="mixed").astype(f"datetime64[{unit}]")
    col = times - times.min() if kind == "timedelta" else times.tz_localize("UTC") if kind == "zone" else times
    pdf = pd.DataFrame({"t": col, "v": range(5)})
    df = xd.from_pandas(pdf, npartitions=3)
    indexed = df.set_index("t")
    pd.testing.assert_frame_equal(indexed.compute(), pdf.set_index("t").sort_index())
    assert indexed.divisions[0] == col.min() and indexed.divisions[-1] == col.max()
    pd.testing.assert_frame_equal(indexed.loc[col.max()].compute(), pdf.set_index("t").loc[[col.max()]])
    pd.testing.assert_frame_equal(df.sort_values("t").compute(), pdf.sort_values("t"))


def test_set_index_of_times_past_2262_and_of_integers_past_2_to_the_53():
    """Boundaries in the values' own unit (through nanoseconds a year 9999 wraps round), and
    divisions whose ends are the least and greatest integers themselves (float64 rounds them)."""
    times = pd.Series(np.array(["2024-01-01", "9999-12-31", "2020-05-05", "1500-01-01", "2030-01-01"], dtype="M8[s]"))
    pdf = pd.DataFrame({"t": times, "v": range(5)})
    df = xd.from_pandas(pdf, npartitions=3)
    pd.testing.assert_frame_equal(df.set_index("t").compute(), pdf.set_index("t").sort_index())
    pd.testing.assert_frame_equal(df.sort_values("t").compute(), pdf.sort_values("t"))
    big = pd.DataFrame({"k": np.array([2**62 + 1, 2**62 + 3, 5, 2**62 + 2], dtype="int64"), "v": range(4)})
    indexed = xd.from_pandas(big, npartitions=2).set_index("k")
    assert indexed.divisions[0] == 5 and indexed.divisions[-1] == 2**62 + 3
    assert indexed.loc[2**62 + 3].compute().v.tolist() == [1]
