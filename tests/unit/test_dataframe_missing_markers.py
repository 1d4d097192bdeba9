"""What a statistic of a column with a missing value is, with ``skipna=False``, as pandas
gives it for each dtype: NaN (NumPy's float) for floats, NaT for NumPy's times, NA for
nullable and pyarrow dtypes; and pyarrow numbers' statistics as Python floats."""

from __future__ import annotations

import pandas as pd
import pyarrow as pa
import pytest

import xsched.dataframe as xd

TIMES = pd.Series(pd.to_datetime(["2020-01-01", None, "2020-01-03"]))
COLUMNS = {
    "float64": pd.Series([1.0, None, 3.0]),
    "Int64": pd.Series([1, None, 3], dtype="Int64"),
    "Float64": pd.Series([1, None, 3], dtype="Float64"),
    "datetime64": TIMES,
    "datetime64 UTC": TIMES.dt.tz_localize("UTC"),
    "timedelta64": pd.Series(pd.to_timedelta(["1D", None, "3D"])),
    "timestamp[pyarrow]": TIMES.astype(pd.ArrowDtype(pa.timestamp("ns"))),
    "duration[pyarrow]": pd.Series(pd.to_timedelta(["1D", None, "3D"])).astype(pd.ArrowDtype(pa.duration("ns"))),
    "int64[pyarrow]": pd.Series([1, None, 3], dtype=pd.ArrowDtype(pa.int64())),
}


def _same(got, expected):
    assert type(got) is type(expected) and repr(got) == repr(expected)


@pytest.mark.parametrize("kind", sorted(COLUMNS))
@pytest.mark.parametrize("statistic", ["mean", "median"])
def test_a_missing_value_gives_pandas_marker_with_skipna_false(kind, statistic):
    s = COLUMNS[kind]
    for values in (s, s.fillna(s.dropna().iloc[0])):  # (with and without the missing value)
        x = xd.from_pandas(values, npartitions=2)
        for skipna in (True, False):
            _same(getattr(x, statistic)(skipna=skipna).compute(), getattr(values, statistic)(skipna=skipna))


@pytest.mark.parametrize("kind", ["timestamp[pyarrow]", "duration[pyarrow]", "timedelta64"])
def test_the_std_of_times_with_a_missing_value(kind):
    s = COLUMNS[kind]
    _same(xd.from_pandas(s, npartitions=2).std(skipna=False).compute(), s.std(skipna=False))


@pytest.mark.parametrize("kind", ["float64", "datetime64", "timestamp[pyarrow]", "Int64"])
def test_a_frames_median_per_column_keeps_pandas_markers_and_dtype(kind):
    frame = COLUMNS[kind].to_frame("a").assign(b=1.0)
    got = xd.from_pandas(frame, npartitions=2).median(skipna=False).compute()
    expected = frame.median(skipna=False)
    pd.testing.assert_series_equal(got, expected)
    assert [type(v) for v in got] == [type(v) for v in expected]


@pytest.mark.parametrize("kind", sorted(COLUMNS))
def test_a_groups_mean_without_any_value_is_pandas_missing_marker(kind):
    """A group whose values are all missing: its mean is missing (pyarrow's durations
    refused the division by its count of 0)."""
    values = COLUMNS[kind]
    pdf = pd.DataFrame({"g": [2, 1, 2], "v": values})  # (group 1 holds the missing value alone)
    for npartitions in (1, 2):
        got = xd.from_pandas(pdf, npartitions=npartitions).groupby("g").v.mean().compute()
        pd.testing.assert_series_equal(got, pdf.groupby("g").v.mean())
