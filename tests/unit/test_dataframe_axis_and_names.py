"""pandas' keywords that work partition by partition: shift/diff across the columns
(``axis=1``), reset_index's ``level=`` and ``names=``, and join's ``validate=``."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pandas.testing as tm
import pytest

import xsched.dataframe as xd

FRAME = pd.DataFrame({"a": range(10), "b": np.arange(10.0) * 2, "c": range(10, 20)},
                     index=pd.Index(range(10), name="i"))


@pytest.mark.parametrize("kwargs", [dict(periods=1, axis=1), dict(periods=-1, axis="columns", fill_value=0),
                                    dict(periods=2, axis=1), dict(periods=1, axis="index"), dict(periods=-2, axis=0)])
@pytest.mark.parametrize("npartitions", [1, 3])
def test_shift_along_either_axis_is_pandas(kwargs, npartitions):
    df = xd.from_pandas(FRAME, npartitions=npartitions)
    got = df.shift(**kwargs)
    want = FRAME.shift(**kwargs)
    assert got._meta.dtypes.tolist() == want.dtypes.tolist()
    tm.assert_frame_equal(got.compute(), want)


@pytest.mark.parametrize("kwargs", [dict(axis=1), dict(periods=-1, axis="columns"), dict(periods=2, axis=1)])
def test_diff_across_the_columns_is_pandas(kwargs):
    got = xd.from_pandas(FRAME, npartitions=3).diff(**kwargs)
    tm.assert_frame_equal(got.compute(), FRAME.diff(**kwargs))


def test_an_axis_that_is_not_one_is_refused_when_built_as_pandas_names_it():
    df = xd.from_pandas(FRAME, npartitions=2)
    for bad in (2, "col"):
        with pytest.raises(ValueError, match=rf"^shift: No axis named {bad!r}: 0 or 'index'"):
            df.shift(1, axis=bad)
    with pytest.raises(ValueError, match=r"^shift: No axis named 1 for object type Series"):
        df.a.shift(1, axis=1)
    with pytest.raises(ValueError, match="No axis named 1 for object type Series"):  # (pandas' words)
        FRAME.a.shift(1, axis=1)
    with pytest.raises(ValueError, match=r"^diff: No axis named 1 for object type Series"):
        df.a.diff(axis=1)


LEVELS = pd.DataFrame({"a": range(6), "b": list("xyzxyz")},
                      index=pd.MultiIndex.from_arrays([[1, 1, 2, 2, 3, 3], [5, 6, 5, 6, 5, 6]], names=["p", "q"]))


@pytest.mark.parametrize("kwargs", [dict(names=["P", "Q"]), dict(level="q"), dict(level=0, drop=True),
                                    dict(level="p", names="PP"), dict()])
def test_reset_index_levels_and_names_are_pandas(kwargs):
    got = xd.from_pandas(LEVELS, npartitions=2).reset_index(**kwargs).compute()
    want = LEVELS.reset_index(**kwargs)
    # (each partition numbers its own rows from 0: the values and columns are pandas')
    tm.assert_frame_equal(got.reset_index(drop=True), want.reset_index(drop=True))


def test_series_reset_index_of_one_level():
    s = LEVELS.a
    got = xd.from_pandas(s, npartitions=2).reset_index(level="q").compute()
    tm.assert_frame_equal(got.reset_index(drop=True), s.reset_index(level="q").reset_index(drop=True))


LEFT = pd.DataFrame({"x": range(4)}, index=[1, 1, 2, 3])
RIGHT = pd.DataFrame({"y": range(3)}, index=[1, 2, 3])


@pytest.mark.parametrize("validate", ["m:1", "many_to_many", "1:1", "one_to_many"])
def test_join_validate_checks_the_keys_as_pandas(validate):
    left, right = xd.from_pandas(LEFT, npartitions=2), xd.from_pandas(RIGHT, npartitions=2)
    try:
        want = LEFT.join(RIGHT, validate=validate)
    except pd.errors.MergeError:
        with pytest.raises(pd.errors.MergeError, match="not unique in left dataset"):
            left.join(right, validate=validate).compute()
        return
    got = left.join(right, validate=validate).compute().sort_index(kind="stable")
    assert got.x.tolist() == want.x.tolist() and got.y.tolist() == want.y.tolist()


def test_join_validate_of_an_unknown_value_is_refused_when_built():
    left = xd.from_pandas(LEFT, npartitions=2)
    with pytest.raises(ValueError, match=r"validate must be one of .*got 'x'"):
        left.join(left, validate="x", lsuffix="_l")


TRANSFORMED = pd.DataFrame({"k": list("abcab"), "x": [5.0, 1, 2, 3, 4]}, index=[10, 11, 12, 13, 14])


@pytest.mark.parametrize("func", ["idxmax", lambda s: s.index.min(), "cumsum", lambda s: s - s.mean()])
def test_groupby_transform_sees_the_rows_labels_as_pandas(func):
    got = xd.from_pandas(TRANSFORMED, npartitions=2).groupby("k").x.transform(func).compute()
    tm.assert_series_equal(got, TRANSFORMED.groupby("k").x.transform(func))


def test_groupby_transform_of_time_windows_reads_the_time_index():
    t = pd.DataFrame({"k": list("abab"), "x": [1.0, 2, 3, 4]}, index=pd.date_range("2024", periods=4, freq="h"))
    grouped = xd.from_pandas(t, npartitions=2).groupby("k").x
    for func in (lambda s: s.rolling("2h").sum(), lambda s: s.index.hour):
        tm.assert_series_equal(grouped.transform(func).compute(), t.groupby("k").x.transform(func))


def test_groupby_transform_with_repeated_labels_and_missing_keys_is_pandas():
    frame = pd.DataFrame({"k": ["a", None, "a", "b", None, "b"], "x": [1.0, 2, 3, 4, 5, 6]}, index=[0, 0, 1, 1, 2, 2])
    got = xd.from_pandas(frame, npartitions=2, sort=False).groupby("k").x.transform("sum").compute()
    tm.assert_series_equal(got, frame.groupby("k").x.transform("sum"))


def test_transform_ngroup_is_refused_naming_ngroup():
    grouped = xd.from_pandas(TRANSFORMED, npartitions=2).groupby("k")
    with pytest.raises(ValueError, match=r"transform\('ngroup'\) numbers each group among all the groups.*"
                                         r"groupby\(...\).ngroup\(\)"):
        grouped.x.transform("ngroup")
    assert grouped.ngroup().compute().tolist() == TRANSFORMED.groupby("k").ngroup().tolist()
