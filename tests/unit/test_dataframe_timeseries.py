"""Time-series methods against pandas: pct_change across partitions, the first and last
valid labels, rows by time of day, time zones of the index and the divisions, and
interpolation across partitions (exact, on random gaps and partitionings)."""

import numpy as np
import pandas as pd
import pandas.testing as tm
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import xsched.dataframe as xd


def frame(rows=48):
    rng = np.random.default_rng(0)
    pdf = pd.DataFrame({"x": rng.normal(size=rows) + 5, "n": rng.integers(1, 9, rows)},
                       index=pd.date_range("2024-03-30", periods=rows, freq="2h"))
    pdf.iloc[[0, 5, 6, 30], 0] = np.nan
    return pdf


@pytest.mark.parametrize("n", [1, 3, 7])
@pytest.mark.parametrize("periods", [1, 2, -1, 5])
def test_pct_change_across_partitions_like_pandas(n, periods):
    pdf = frame()
    df = xd.from_pandas(pdf, npartitions=n)
    tm.assert_frame_equal(df.pct_change(periods).compute(), pdf.pct_change(periods))
    tm.assert_series_equal(df.n.pct_change(periods=periods).compute(), pdf.n.pct_change(periods=periods))


@pytest.mark.parametrize("n", [1, 3, 7])
def test_first_and_last_valid_index_like_pandas(n):
    pdf = frame()
    pdf.iloc[:9, 0] = np.nan
    pdf.iloc[-4:, 0] = np.nan
    df = xd.from_pandas(pdf, npartitions=n)
    assert df.x.first_valid_index().compute() == pdf.x.first_valid_index()
    assert df.x.last_valid_index().compute() == pdf.x.last_valid_index()
    assert df.first_valid_index().compute() == pdf.first_valid_index()
    empty = df.x.where(df.x > 99)
    assert empty.first_valid_index().compute() is None and empty.last_valid_index().compute() is None


@pytest.mark.parametrize("n", [1, 4])
def test_rows_by_time_of_day_like_pandas(n):
    pdf = frame()
    df = xd.from_pandas(pdf, npartitions=n)
    tm.assert_frame_equal(df.between_time("03:00", "09:00").compute(), pdf.between_time("03:00", "09:00"))
    tm.assert_frame_equal(df.between_time("22:00", "02:00", inclusive="left").compute(),
                          pdf.between_time("22:00", "02:00", inclusive="left"))
    tm.assert_series_equal(df.x.at_time("14:00").compute(), pdf.x.at_time("14:00"), check_freq=False)
    assert df.between_time("03:00", "09:00").divisions == df.divisions


def test_time_zones_move_the_index_and_the_divisions():
    pdf = frame()  # (across the spring change of 2024-03-31 in Europe)
    df = xd.from_pandas(pdf, npartitions=4)
    local = df.tz_localize("UTC").tz_convert("Europe/Berlin")
    expected = pdf.tz_localize("UTC").tz_convert("Europe/Berlin")
    tm.assert_frame_equal(local.compute(), expected)
    assert local.divisions[0] == expected.index[0] and local.divisions[-1] == expected.index[-1]
    t = expected.index[30]
    tm.assert_frame_equal(local.loc[t:].compute(), expected.loc[t:])
    assert local.loc[t:].npartitions < local.npartitions  # (the divisions still choose the partitions)
    tm.assert_series_equal(df.x.tz_localize("US/Eastern").compute(), pdf.x.tz_localize("US/Eastern"))


def test_mistakes_fail_when_built():
    df = xd.from_pandas(frame(), npartitions=2)
    with pytest.raises(ValueError, match=r"fill_method must be None.*\.ffill\(\)\.pct_change\(\)"):
        df.pct_change(fill_method="ffill")
    with pytest.raises(NotImplementedError, match="freq="):
        df.pct_change(freq="1D")
    with pytest.raises(NotImplementedError, match="ambiguous='infer'"):
        df.tz_localize("Europe/Berlin", ambiguous="infer")
    plain = xd.from_pandas(pd.DataFrame({"a": [1, 2]}), npartitions=1)
    with pytest.raises(TypeError, match="between_time needs a DatetimeIndex; this index is int64"):
        plain.between_time("01:00", "02:00")
    with pytest.raises(TypeError, match="tz_localize needs a DatetimeIndex"):
        plain.tz_localize("UTC")
    with pytest.raises(TypeError, match=r"no time zone; give it one first: \.tz_localize"):
        df.tz_convert("UTC")
    with pytest.raises(TypeError, match="already in UTC"):
        df.tz_localize("UTC").tz_localize("UTC")


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.one_of(st.none(), st.floats(-1e6, 1e6)), st.one_of(st.none(), st.floats(-1e6, 1e6)),
                          st.integers(0, 59)), min_size=1, max_size=30),
       st.integers(1, 6), st.sampled_from(["linear", "time", "index"]),
       st.sampled_from([{}, {"limit_direction": "both"}, {"limit_area": "inside"},
                        {"limit_direction": "backward", "limit_area": "outside"}]))
def test_interpolate_across_partitions_is_pandas_exactly(rows, n, method, kw):
    """Each partition is filled with the values present just before and after it, so runs of
    gaps crossing partitions, leading and trailing gaps and empty partitions come out as pandas'."""
    index = pd.date_range("2024-01-01", periods=len(rows), freq="h") + pd.to_timedelta([r[2] for r in rows], "min")
    pdf = pd.DataFrame({"a": [r[0] for r in rows], "b": [r[1] for r in rows]}, index=index, dtype="float64")
    df = xd.from_pandas(pdf, npartitions=min(n, len(rows)))
    tm.assert_frame_equal(df.interpolate(method=method, **kw).compute(), pdf.interpolate(method=method, **kw),
                          check_exact=True, check_freq=False)
    tm.assert_series_equal(df.a.interpolate(method=method, **kw).compute(),
                           pdf.a.interpolate(method=method, **kw), check_exact=True, check_freq=False)


def test_interpolate_refuses_what_it_does_not_run_across_partitions():
    df = xd.from_pandas(frame(), npartitions=3)
    with pytest.raises(NotImplementedError, match=r"method='spline'.*part.interpolate\(method='spline'\)"):
        df.interpolate(method="spline", order=2)
    with pytest.raises(NotImplementedError, match="limit="):
        df.interpolate(limit=2)
    plain = xd.from_pandas(pd.DataFrame({"a": [1.0, None, 3.0]}), npartitions=2)
    with pytest.raises(ValueError, match="time"):
        plain.interpolate(method="time")  # (pandas: time-weighted needs a DatetimeIndex)
