"""merge_asof against pandas': random sorted keys with repeats, groups, every direction,
exact matches allowed or not, a tolerance, on columns and on indexes, any partitioning."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import xsched.dataframe as xd


def _frame(keys: list, groups: list, column: str) -> pd.DataFrame:
    return pd.DataFrame({"t": sorted(keys), "g": groups[:len(keys)], column: np.arange(len(keys))})


keys = st.lists(st.integers(0, 40), min_size=1, max_size=30)


@settings(max_examples=60, deadline=None)
@given(keys, keys, st.lists(st.sampled_from("ab"), min_size=30, max_size=30), st.integers(1, 4), st.integers(1, 4),
       st.sampled_from(["backward", "forward", "nearest"]), st.booleans(), st.sampled_from([None, 3]),
       st.booleans())
def test_on_columns_as_pandas(lkeys, rkeys, groups, ln, rn, direction, exact, tolerance, by):
    left, right = _frame(lkeys, groups, "x"), _frame(rkeys, groups[::-1], "y")
    kwargs = dict(on="t", direction=direction, allow_exact_matches=exact, tolerance=tolerance,
                  by="g" if by else None)
    want = pd.merge_asof(left, right, **kwargs)
    got = xd.merge_asof(xd.from_pandas(left, npartitions=ln), xd.from_pandas(right, npartitions=rn), **kwargs)
    pd.testing.assert_frame_equal(got.compute().reset_index(drop=True), want, check_dtype=False)
    assert list(got.columns) == list(want.columns)


@settings(max_examples=40, deadline=None)
@given(keys, keys, st.lists(st.sampled_from("ab"), min_size=30, max_size=30), st.integers(1, 4), st.integers(1, 4),
       st.sampled_from(["backward", "forward", "nearest"]), st.booleans(), st.booleans())
def test_an_index_against_a_column_as_pandas(lkeys, rkeys, groups, ln, rn, direction, exact, by):
    """left_index with right_on: the key column holds the right's keys when every row of the
    whole frame found a match, else the left's (pandas' choice, over all partitions);
    left_on with right_index: the rows keep the left's own index."""
    left, right = _frame(lkeys, groups, "x"), _frame(rkeys, groups[::-1], "y")
    left.index = pd.Index(np.arange(len(left)) * 10 + 5, name="row")
    kwargs = dict(direction=direction, allow_exact_matches=exact, by="g" if by else None)
    want = pd.merge_asof(left.set_index("t"), right, left_index=True, right_on="t", **kwargs)
    got = xd.merge_asof(xd.from_pandas(left.set_index("t"), npartitions=ln), xd.from_pandas(right, npartitions=rn),
                        left_index=True, right_on="t", **kwargs)
    pd.testing.assert_frame_equal(got.compute(), want, check_dtype=False)
    want = pd.merge_asof(left, right.set_index("t"), left_on="t", right_index=True, **kwargs)
    got = xd.merge_asof(xd.from_pandas(left, npartitions=ln), xd.from_pandas(right.set_index("t"), npartitions=rn),
                        left_on="t", right_index=True, **kwargs)
    pd.testing.assert_frame_equal(got.compute(), want, check_dtype=False)


@settings(max_examples=30, deadline=None)
@given(keys, keys, st.integers(1, 4), st.integers(1, 4), st.sampled_from(["backward", "forward", "nearest"]))
def test_on_indexes_keeps_the_left_index_and_divisions(lkeys, rkeys, ln, rn, direction):
    left = pd.DataFrame({"x": range(len(lkeys))}, index=pd.Index(sorted(lkeys), name="t"))
    right = pd.DataFrame({"y": range(len(rkeys))}, index=pd.Index(sorted(rkeys), name="t"))
    want = pd.merge_asof(left, right, left_index=True, right_index=True, direction=direction)
    lx = xd.from_pandas(left, npartitions=ln)
    got = xd.merge_asof(lx, xd.from_pandas(right, npartitions=rn), left_index=True, right_index=True,
                        direction=direction)
    assert got.divisions == lx.divisions
    pd.testing.assert_frame_equal(got.compute(), want, check_dtype=False)


def test_times_with_a_pandas_right_side_and_a_time_tolerance():
    t = pd.date_range("2024-01-01", periods=200, freq="7s")
    trades = pd.DataFrame({"time": t, "ticker": np.tile(["A", "B"], 100), "qty": np.arange(200)})
    quotes = pd.DataFrame({"time": t[::3] + pd.Timedelta("2s"), "ticker": np.tile(["A", "B", "B"], 23)[:67],
                           "bid": np.linspace(1, 2, 67)})
    kwargs = dict(on="time", by="ticker", tolerance=pd.Timedelta("10s"))
    want = pd.merge_asof(trades, quotes, **kwargs)
    got = xd.merge_asof(xd.from_pandas(trades, npartitions=5), quotes, **kwargs).compute()
    pd.testing.assert_frame_equal(got.reset_index(drop=True), want)
    assert want.bid.isna().any() and want.bid.notna().any()  # (both kinds of row are checked)


def test_a_right_side_of_empty_and_gap_partitions():
    left = pd.DataFrame({"t": [50, 51, 52, 90], "x": range(4)})
    right = pd.DataFrame({"t": [1, 2, 3, 60, 61, 99], "y": range(6)})
    for direction in ("backward", "forward", "nearest"):
        want = pd.merge_asof(left, right, on="t", direction=direction)
        got = xd.merge_asof(xd.from_pandas(left, npartitions=2), xd.from_pandas(right, npartitions=3), on="t",
                            direction=direction).compute()
        pd.testing.assert_frame_equal(got.reset_index(drop=True), want, check_dtype=False)


def test_sides_filtered_to_empty_partitions():
    left = pd.DataFrame({"t": range(0, 60, 3), "x": range(20)})
    right = pd.DataFrame({"t": range(0, 60, 2), "y": range(30)})
    lx, rx = xd.from_pandas(left, npartitions=4), xd.from_pandas(right, npartitions=5)
    lx, rx = lx[(lx.t < 10) | (lx.t > 40)], rx[(rx.t < 6) | (rx.t > 50)]
    lp, rp = left[(left.t < 10) | (left.t > 40)], right[(right.t < 6) | (right.t > 50)]
    for direction in ("backward", "forward", "nearest"):
        got = xd.merge_asof(lx, rx, on="t", direction=direction).compute()
        want = pd.merge_asof(lp, rp, on="t", direction=direction)
        pd.testing.assert_frame_equal(got.reset_index(drop=True), want.reset_index(drop=True), check_dtype=False)


def test_errors_when_built():
    left = xd.from_pandas(pd.DataFrame({"t": [1, 2], "x": [1, 2]}), npartitions=2)
    right = xd.from_pandas(pd.DataFrame({"t": [2, 1], "y": [1, 2]}), npartitions=2)
    with pytest.raises(ValueError, match=r"right frame is not sorted by 't'.*sort_values\('t'\)"):
        xd.merge_asof(left, right, on="t")
    with pytest.raises(ValueError, match="direction must be one of backward, forward, nearest"):
        xd.merge_asof(left, left, on="t", direction="sideways")
    with pytest.raises(ValueError, match="give each side one key"):
        xd.merge_asof(left, left)
    with pytest.raises(ValueError, match="fails in pandas.*incompatible merge keys"):
        xd.merge_asof(left, pd.DataFrame({"t": pd.to_datetime(["2024-01-01"]), "y": [1]}), on="t")
    with pytest.raises(ValueError, match="divisions are unknown"):
        xd.merge_asof(left.set_index("t").clear_divisions(), left.set_index("t"), left_index=True,
                      right_index=True)
    with pytest.raises(KeyError):
        xd.merge_asof(left, left, on="nope")


def test_an_empty_left_against_a_right_index_has_pandas_columns():
    left = pd.DataFrame({"t": [1, 5, 9], "x": [1, 2, 3]}, index=[10, 20, 30]).iloc[:0]
    right = pd.DataFrame({"y": [7, 8]}, index=pd.Index([2, 6], name="t"))
    got = xd.merge_asof(xd.from_pandas(left, npartitions=2), xd.from_pandas(right, npartitions=1), left_on="t",
                        right_index=True)
    want = pd.merge_asof(left, right, left_on="t", right_index=True)
    assert list(got.columns) == list(want.columns) == list(got.compute().columns)


def test_keys_out_of_order_within_a_partition_fail_as_pandas_when_built():
    left = pd.DataFrame({"lk": [5, 1, 9], "lv": [0, 1, 2]})
    right = pd.DataFrame({"rv": [10.0, 20.0]}, index=pd.Index([4, 8], name="rk"))
    with pytest.raises(ValueError, match="left keys must be sorted"):  # (pandas'; a MergeError is a ValueError)
        pd.merge_asof(left, right, left_on="lk", right_index=True)
    with pytest.raises(pd.errors.MergeError, match=r"merge_asof: left keys must be sorted, and column 'lk' is not "
                                                   r"in order within a partition; sort_values\('lk'\) first"):
        xd.merge_asof(xd.from_pandas(left, npartitions=1), xd.from_pandas(right, npartitions=1), left_on="lk",
                      right_index=True)
    unsorted_right = pd.DataFrame({"rk": [8, 4], "rv": [10.0, 20.0]})
    with pytest.raises(pd.errors.MergeError, match="right keys must be sorted"):
        xd.merge_asof(xd.from_pandas(left.sort_values("lk").reset_index(drop=True), npartitions=2),
                      xd.from_pandas(unsorted_right, npartitions=1), left_on="lk", right_on="rk")


def test_missing_keys_fail_as_pandas_says():
    left = pd.DataFrame({"lk": [1.0, None, 3.0], "lv": [0, 1, 2]})
    right = pd.DataFrame({"rv": [10.0]}, index=pd.Index([2.0], name="rk"))
    with pytest.raises(ValueError, match="Merge keys contain null values on left side"):
        pd.merge_asof(left, right, left_on="lk", right_index=True)
    with pytest.raises(pd.errors.MergeError, match=r"Merge keys contain null values on left side \(column 'lk'\)"):
        xd.merge_asof(xd.from_pandas(left, npartitions=1), xd.from_pandas(right, npartitions=1), left_on="lk",
                      right_index=True)


@pytest.mark.parametrize("same_name", [False, True])
@pytest.mark.parametrize("by", [None, "g"])
@pytest.mark.parametrize("right_keys", [[4, 8], [0, 4], [0, 1]])
def test_an_index_against_a_column_fills_unmatched_keys_as_pandas(same_name, by, right_keys):
    """pandas fills an unmatched row's key with the left's (the whole frame's choice), but with
    by= only when the left's index is named as the key: otherwise it stays missing."""
    left = pd.DataFrame({"lv": [0, 1, 2], "g": list("aba")}, index=pd.Index([1, 5, 9], name="t" if same_name else "lk"))
    right = pd.DataFrame({"t": right_keys, "rv": [10.0, 20.0], "g": ["a", "a"]})
    want = pd.merge_asof(left, right, left_index=True, right_on="t", by=by)
    for npartitions in (1, 2, 3):
        got = xd.merge_asof(xd.from_pandas(left, npartitions=npartitions), xd.from_pandas(right, npartitions=1),
                            left_index=True, right_on="t", by=by)
        pd.testing.assert_frame_equal(got.compute(), want, check_dtype=False)
