"""map_overlap against pandas on the whole: row counts reaching through short and empty
partitions, time spans on a datetime index, both directions, and errors when built."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import xsched.dataframe as xd


def _centred_sum(rows, k):
    return rows.rolling(2 * k + 1, center=True, min_periods=1).sum()


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 40), st.integers(1, 6), st.integers(0, 5), st.integers(0, 5), st.booleans())
def test_rows_before_and_after_as_pandas_on_the_whole(n, nparts, before, after, filtered):
    pdf = pd.DataFrame({"v": np.arange(n, dtype=float)})
    df = xd.from_pandas(pdf, npartitions=nparts)
    if filtered:  # (empty and short partitions in between)
        df, pdf = df[df.v % 7 < 3], pdf[pdf.v % 7 < 3]

    def window(rows):
        return rows.rolling(before + after + 1, min_periods=1).sum().shift(-after)

    got = df.map_overlap(window, before, after).compute()
    pd.testing.assert_frame_equal(got, window(pdf))


def test_time_spans_see_exactly_their_span():
    idx = pd.date_range("2024-01-01", periods=100, freq="17min")
    pdf = pd.DataFrame({"v": np.arange(100.0)}, index=idx)
    df = xd.from_pandas(pdf, npartitions=7)

    def seen(rows):  # how many rows each row's hour before it covers, as the function saw them
        return rows.rolling("1h").count()

    pd.testing.assert_frame_equal(df.map_overlap(seen, "1h", 0).compute(), seen(pdf))
    got = xd.map_overlap(lambda r: r.v.rolling("2h").sum(), df, pd.Timedelta("2h"), "30min").compute()
    pd.testing.assert_series_equal(got, pdf.v.rolling("2h").sum())


def test_extra_arguments_meta_and_errors():
    s = xd.from_pandas(pd.Series(range(10)), npartitions=3)
    got = s.map_overlap(_centred_sum, 2, 2, 2, meta=("x", "float64"))
    pd.testing.assert_series_equal(got.compute(), _centred_sum(pd.Series(range(10)), 2), check_names=False)
    with pytest.raises(ValueError, match="before must be a number of rows .* got -1"):
        s.map_overlap(_centred_sum, -1, 0, 1)
    with pytest.raises(TypeError, match="a time span, needs a DatetimeIndex"):
        s.map_overlap(_centred_sum, "1h", 0, 1)
    times = xd.from_pandas(pd.Series(1.0, index=pd.date_range("2024", periods=4, freq="1h")), npartitions=2)
    with pytest.raises(ValueError, match="must both be numbers of rows or both time spans"):
        times.map_overlap(lambda r: r, "1h", 2)
    with pytest.raises(TypeError, match="one collection only"):
        xd.map_overlap(lambda a, b: a, s, 1, 1, s)
