"""Reductions of one's own, nunique_approx, combine, compute_current_divisions, row
iteration, to_timestamp, Series.shape, map through an xsched Series, argmax and argmin, concat
side by side, each against pandas."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import xsched.dataframe as xd
from tests.support.helpers import values_with_gaps


@pytest.mark.parametrize("split_every", [2, None, False])
def test_reduction_of_ones_own_gets_a_row_per_partition_as_in_dask(split_every):
    pdf = pd.DataFrame({"x": np.arange(50), "y": np.arange(50, 100)})
    df = xd.from_pandas(pdf, npartitions=9)
    # a Series per partition: a frame of one row per partition, its index the columns
    per_column = df.reduction(lambda p: p.count(), aggregate=lambda rows: rows.sum(), split_every=split_every)
    pd.testing.assert_series_equal(per_column.compute(), pdf.count())
    pairs = df.x.reduction(lambda p: pd.Series({"count": p.count(), "sum": p.sum()}),
                           aggregate=lambda rows: rows.sum(), split_every=split_every).compute()
    assert pairs.to_dict() == {"count": 50, "sum": 1225}
    # a scalar per partition: a Series of them; keywords for the chunk alone
    greater = df.x.reduction(lambda p, value=0: (p >= value).sum(), aggregate=lambda s: s.sum(),
                             chunk_kwargs={"value": 25}, split_every=split_every).compute()
    assert greater == 25
    # a DataFrame per partition: concatenated as it is
    both = df.reduction(lambda p: pd.DataFrame({"count": p.count(), "sum": p.sum()}),
                        aggregate=lambda f: f.groupby(level=0).sum(), split_every=split_every).compute()
    pd.testing.assert_frame_equal(both, pd.DataFrame({"count": pdf.count(), "sum": pdf.sum()}))
    spread = df.y.reduction(lambda p, k: p.max() * k, aggregate=lambda s, k: s.max() * k, k=1).compute()
    assert spread == 99
    with pytest.raises(ValueError, match="reduction fails on a stand-in"):
        df.reduction(lambda p: p.no_such_thing())


@pytest.mark.parametrize("n", [0, 5, 900, 40_000])
def test_nunique_approx_is_close(n):
    values = pd.Series(np.arange(n) % max(n, 1) * 7919, dtype="int64")
    s = xd.from_pandas(pd.concat([values, values]), npartitions=6)
    got = s.nunique_approx(split_every=3).compute()
    assert abs(got - n) <= max(2, 0.02 * n)
    frame = xd.from_pandas(pd.DataFrame({"a": np.arange(3000) % 30, "b": np.arange(3000) % 7}), npartitions=4)
    assert abs(frame.nunique_approx().compute() - 210) <= 5


def test_combine_as_pandas_on_equal_divisions():
    a = pd.DataFrame({"x": [1, 5, 3, 8], "y": [2.0, 1, 7, 0]})
    b = pd.DataFrame({"x": [4, 2, 6, 1], "y": [0.0, 9, 1, 3]})
    got = xd.from_pandas(a, npartitions=2).combine(xd.from_pandas(b, npartitions=2), np.maximum).compute()
    pd.testing.assert_frame_equal(got, a.combine(b, np.maximum))
    got = xd.from_pandas(a, npartitions=2).combine(xd.from_pandas(b, npartitions=3), np.maximum)
    pd.testing.assert_frame_equal(got.compute(), a.combine(b, np.maximum))  # (divisions unified first)
    with pytest.raises(ValueError, match="needs both collections' divisions known"):
        xd.from_pandas(a, npartitions=2).clear_divisions().combine(xd.from_pandas(b, npartitions=3), np.maximum)


def test_compute_current_divisions_and_empty_partitions():
    pdf = pd.DataFrame({"a": range(20)}, index=range(0, 40, 2))
    df = xd.from_pandas(pdf, npartitions=4)
    assert df.clear_divisions().compute_current_divisions() == df.divisions
    filtered = df[(df.a < 3) | (df.a > 16)]
    assert filtered.compute_current_divisions() == (0, 34, 34, 34, 38)
    assert df.compute_current_divisions("a") == (0, 5, 10, 15, 19)
    with pytest.raises(ValueError, match="ranges of column .a. overlap"):
        xd.from_pandas(pd.DataFrame({"a": [3, 1]}), npartitions=2).compute_current_divisions("a")


def test_iteration_a_partition_at_a_time():
    pdf = pd.DataFrame({"a": [1, 2, 3], "b": list("xyz")}, index=[10, 20, 30])
    df = xd.from_pandas(pdf, npartitions=2)
    assert [(i, r.b) for i, r in df.iterrows()] == [(i, r.b) for i, r in pdf.iterrows()]
    assert list(df.itertuples()) == list(pdf.itertuples())
    assert [c for c, _ in df.items()] == ["a", "b"]
    assert list(df.b.items()) == list(pdf.b.items()) and list(df.a) == [1, 2, 3]
    assert df.a.shape[0].compute() == 3 and df.a.dtypes == pdf.a.dtype
    assert (20 in df.a, 2 in df.a) == (20 in pdf.a, 2 in pdf.a) == (True, False)  # (labels, as pandas)


def test_to_timestamp_converts_the_divisions_too():
    idx = pd.period_range("2024-01", periods=6, freq="M")
    pdf = pd.DataFrame({"v": range(6)}, index=idx)
    df = xd.from_pandas(pdf, npartitions=3)
    out = df.to_timestamp(how="end")
    pd.testing.assert_frame_equal(out.compute(), pdf.to_timestamp(how="end"))
    for i in range(out.npartitions):
        part = out.partitions[i].compute()
        assert out.divisions[i] <= part.index[0] and part.index[-1] <= out.divisions[i + 1]
    with pytest.raises(TypeError, match="converts a PeriodIndex"):
        xd.from_pandas(pd.DataFrame({"v": [1]}), npartitions=1).to_timestamp()


@pytest.mark.parametrize("method", ["ffill", "bfill"])
@pytest.mark.parametrize("area", ["inside", "outside"])
@pytest.mark.parametrize("limit", [None, 1])
def test_fill_limit_area_as_pandas(method, area, limit):
    rng = np.random.default_rng(3)
    for _ in range(20):
        v = rng.random(12)
        v[rng.random(12) < 0.6] = np.nan
        pdf = pd.DataFrame({"a": v, "b": v[::-1].copy()})
        got = getattr(xd.from_pandas(pdf, npartitions=4), method)(limit=limit, limit_area=area).compute()
        pd.testing.assert_frame_equal(got, getattr(pdf, method)(limit=limit, limit_area=area))
    with pytest.raises(ValueError, match="limit_area must be None, 'inside' or 'outside'"):
        getattr(xd.from_pandas(pdf, npartitions=2), method)(limit_area="middle")


def test_keys_get_insert_and_to_list_like_pandas():
    pdf = pd.DataFrame({"a": [1, 2, 3], "c": [5, 6, 7]})
    df = xd.from_pandas(pdf, npartitions=2)
    expected = pdf.copy()
    df.insert(0, "z", 9)
    expected.insert(0, "z", 9)
    df.insert(3, "w", df.a + 1)
    expected.insert(3, "w", expected.a + 1)
    pd.testing.assert_frame_equal(df.compute(), expected)
    assert df.keys().tolist() == list(expected.keys())
    pd.testing.assert_frame_equal(df.get(["a", "c"]).compute(), expected.get(["a", "c"]))
    assert df.get("nope", "default") == "default" and df.get(["a", "nope"]) is None
    assert df.a.to_list() == expected.a.to_list()
    with pytest.raises(IndexError, match="loc must be an int from 0 to 4"):
        df.insert(9, "x", 1)
    with pytest.raises(ValueError, match="has a column 'a' already"):
        df.insert(0, "a", 1)


@pytest.mark.parametrize("parts", [(1, 1), (4, 3), (2, 5)])
def test_map_through_an_xsched_series_like_pandas(parts):
    rng = np.random.default_rng(0)
    s = pd.Series(rng.integers(0, 10, 50), name="code")
    table = pd.Series([f"v{i}" for i in range(8)], index=rng.permutation(10)[:8])
    got = xd.from_pandas(s, npartitions=parts[0]).map(xd.from_pandas(table, npartitions=parts[1]))
    assert got.dtype == table.dtype and got.name == "code"
    pd.testing.assert_series_equal(got.compute(), s.map(table))
    with pytest.raises(TypeError, match="not a DataFrame"):
        xd.from_pandas(s, npartitions=2).map(xd.from_pandas(table.to_frame(), npartitions=2))


@pytest.mark.parametrize("seed", range(6))
def test_argmax_and_argmin_are_positions_over_all_partitions_like_pandas(seed):
    rng = np.random.default_rng(seed)
    for _ in range(20):
        values = values_with_gaps(rng, 6, high_rows=40)
        s = pd.Series(values, index=rng.permutation(1000)[:len(values)])
        xs = xd.from_pandas(s, npartitions=int(rng.integers(1, 8)), sort=False)
        for method in ("argmax", "argmin"):
            for skipna in (True, False):
                try:
                    expected = getattr(s, method)(skipna=skipna)
                except ValueError:
                    with pytest.raises(ValueError, match="NA"):
                        getattr(xs, method)(skipna=skipna, split_every=2).compute()
                    continue
                assert getattr(xs, method)(skipna=skipna, split_every=2).compute() == expected


@pytest.mark.parametrize("join", ["outer", "inner"])
def test_concat_side_by_side_aligns_rows_as_pandas(join):
    rng = np.random.default_rng(0)
    a = pd.DataFrame({"x": rng.normal(size=30)}, index=np.sort(rng.choice(np.arange(1, 99), 30, replace=False)))
    b = pd.DataFrame({"y": rng.normal(size=20)},
                     index=np.sort(np.r_[0, 99, rng.choice(np.arange(1, 99), 18, replace=False)]))
    left = xd.from_pandas(a, npartitions=3).repartition(divisions=(0, 40, 70, 99), force=True)
    right = xd.from_pandas(b, npartitions=2).repartition(divisions=left.divisions)
    out = xd.concat([left, right, left.x.rename("x2")], axis=1, join=join)
    assert out.divisions == left.divisions
    expected = pd.concat([a, b, a.x.rename("x2")], axis=1, join=join)
    pd.testing.assert_frame_equal(out.compute().sort_index(), expected.sort_index())
    one = xd.concat([xd.from_pandas(a, npartitions=1), xd.from_pandas(b, npartitions=1)], axis=1, join=join)
    pd.testing.assert_frame_equal(one.compute().sort_index(), pd.concat([a, b], axis=1, join=join).sort_index())
    three = xd.concat([left, xd.from_pandas(b, npartitions=3)], axis=1, join=join)  # (divisions unified first)
    pd.testing.assert_frame_equal(three.compute().sort_index(), expected.drop(columns="x2").sort_index())
    with pytest.raises(ValueError, match="divisions must be known"):
        xd.concat([left.clear_divisions(), xd.from_pandas(b, npartitions=3)], axis=1)


@pytest.mark.parametrize("values", [[1, 2, 3], [1, 2, 2], [1.0, None], [None, None], ["a", "b", "a"], [3]])
def test_is_unique_and_hasnans_like_pandas(values):
    s = pd.Series(values)
    xs = xd.from_pandas(s, npartitions=min(2, len(values)))
    assert bool(xs.is_unique.compute()) == s.is_unique
    assert bool(xs.hasnans.compute()) == s.hasnans


@pytest.mark.parametrize("npartitions", [1, 3, 7])
def test_truncate_and_repeat_as_pandas(npartitions):
    pdf = pd.DataFrame({"a": range(20), "b": 1.0, "c": 2}, index=pd.date_range("2000", periods=20, freq="h"))
    x = xd.from_pandas(pdf, npartitions=npartitions)
    for before, after in [(None, None), ("2000-01-01 03:00", "2000-01-01 11:00"), (None, "2000-01-01 05:30"),
                          ("2000-01-01 15:00", None), (pd.Timestamp("1999"), pd.Timestamp("2001")),
                          ("2000-01-01", "2000-01-01 10:00"), ("1999-12-31", "2000-01-01")]:  # (days: midnight)
        pd.testing.assert_frame_equal(x.truncate(before, after).compute(), pdf.truncate(before, after),
                                      check_freq=False)
    pd.testing.assert_frame_equal(x.truncate("b", "c", axis=1).compute(), pdf.truncate("b", "c", axis=1),
                                  check_freq=False)
    unknown = x.clear_divisions()
    pd.testing.assert_series_equal(unknown.a.truncate("2000-01-01 04:00", "2000-01-01 09:00").compute(),
                                   pdf.a.truncate("2000-01-01 04:00", "2000-01-01 09:00"), check_freq=False)
    pd.testing.assert_series_equal(x.a.repeat(3).compute(), pdf.a.repeat(3), check_freq=False)
    with pytest.raises(ValueError, match="before="):
        x.truncate("2000-01-02", "2000-01-01")
    with pytest.raises(TypeError, match="whole number"):
        x.a.repeat([1, 2])
