"""Windows, time bins, running totals and selection against pandas: rolling, shift/diff,
resample, cumsum and friends, loc and iloc, over 1, 2 and 3 partitions."""

from __future__ import annotations

import datetime

import numpy as np
import pandas as pd
import pytest

import xsched
import xsched.dataframe as xd

NPARTS = [1, 2, 3]


def _series(n: int = 12) -> pd.Series:
    return pd.Series([1.0, 2, np.nan, 4, 5, 6, 7, np.nan, 9, 10, 11, 12][:n], name="a")


# ---------------------------------------------------------------------- rolling


@pytest.mark.parametrize("npartitions", NPARTS)
@pytest.mark.parametrize("closed", ["both", "left"])
def test_rolling_count_windows_closed_both_or_left_reach_one_row_further(npartitions, closed):
    pdf = pd.DataFrame({"a": _series(), "b": np.arange(12.0)})
    df = xd.from_pandas(pdf, npartitions=npartitions)
    for window in (2, 3):
        pd.testing.assert_series_equal(df.a.rolling(window, closed=closed).sum().compute(),
                                       pdf.a.rolling(window, closed=closed).sum())
        pd.testing.assert_frame_equal(df.rolling(window, closed=closed, min_periods=1).max().compute(),
                                      pdf.rolling(window, closed=closed, min_periods=1).max())


@pytest.mark.parametrize("npartitions", NPARTS)
def test_rolling_takes_the_windows_pandas_takes(npartitions):
    s = _series()
    ds = xd.from_pandas(s, npartitions=npartitions)
    pd.testing.assert_series_equal(ds.rolling(np.int64(3)).mean().compute(), s.rolling(np.int64(3)).mean())
    pd.testing.assert_series_equal(ds.rolling(0).sum().compute(), s.rolling(0).sum())
    t = s.set_axis(pd.date_range("2000-01-01", periods=12, freq="s"))
    dt = xd.from_pandas(t, npartitions=npartitions)
    window = datetime.timedelta(seconds=2)
    pd.testing.assert_series_equal(dt.rolling(window).sum().compute(), t.rolling(window).sum())


# ---------------------------------------------------------------------- shift and diff


def _with_an_empty_partition(obj):
    """Four partitions of three rows, the second emptied by a filter (divisions stay known)."""
    d = xd.from_pandas(obj, npartitions=4)
    keep = (obj.index < 3) | (obj.index >= 6)
    return d[(d.index < 3) | (d.index >= 6)], obj[keep]


@pytest.mark.parametrize("periods", [1, 2, -1, -2, 4, -5])
def test_shift_and_diff_reach_past_an_empty_partition(periods):
    ds, s = _with_an_empty_partition(_series())
    pd.testing.assert_series_equal(ds.shift(periods).compute(), s.shift(periods))
    pd.testing.assert_series_equal(ds.diff(periods).compute(), s.diff(periods))


@pytest.mark.parametrize("npartitions", NPARTS)
@pytest.mark.parametrize("periods", [5, -7, 11, np.int64(2)])
def test_shift_and_diff_reach_past_short_partitions(npartitions, periods):
    pdf = pd.DataFrame({"a": _series(), "b": range(12)})
    df = xd.from_pandas(pdf, npartitions=npartitions)
    pd.testing.assert_frame_equal(df.shift(periods).compute(), pdf.shift(periods))
    pd.testing.assert_frame_equal(df.diff(periods).compute(), pdf.diff(periods))


# ---------------------------------------------------------------------- resample


@pytest.mark.parametrize("npartitions", NPARTS)
@pytest.mark.parametrize("rule", ["D", "2D"])
def test_resample_by_days_across_a_change_of_clocks(npartitions, rule):
    idx = pd.date_range("2000-03-25", "2000-03-28", freq="5h", tz="Europe/Berlin")  # 23-hour 26 March
    s = pd.Series(np.arange(len(idx), dtype=float), index=idx)
    ds = xd.from_pandas(s, npartitions=npartitions)
    pd.testing.assert_series_equal(ds.resample(rule).sum().compute(), s.resample(rule).sum(), check_freq=False)
    pd.testing.assert_series_equal(ds.resample(rule).count().compute(), s.resample(rule).count(), check_freq=False)


@pytest.mark.parametrize("npartitions", NPARTS)
@pytest.mark.parametrize("rule", ["2W", "3MS"])
def test_resample_by_several_calendar_units_with_a_time_zone(npartitions, rule):
    idx = pd.date_range("2000-01-01", "2000-06-30", freq="6D", tz="US/Eastern")
    s = pd.Series(np.arange(len(idx), dtype=float), index=idx)
    ds = xd.from_pandas(s, npartitions=npartitions)
    pd.testing.assert_series_equal(ds.resample(rule).mean().compute(), s.resample(rule).mean(), check_freq=False)


# ---------------------------------------------------------------------- cumulative


@pytest.mark.parametrize("npartitions", NPARTS)
@pytest.mark.parametrize("dtype", ["str", "string", object])
def test_cumsum_of_strings_after_a_missing_value_without_skipping(npartitions, dtype):
    s = pd.Series(["b", None, "a", "c", "d"], dtype=dtype)
    ds = xd.from_pandas(s, npartitions=npartitions)
    if dtype is object:  # (pandas cannot add None to a string either)
        with pytest.raises(TypeError):
            s.cumsum(skipna=False)
        return
    pd.testing.assert_series_equal(ds.cumsum(skipna=False).compute(), s.cumsum(skipna=False))
    pd.testing.assert_series_equal(ds.cumsum().compute(), s.cumsum())


@pytest.mark.parametrize("npartitions", NPARTS)
def test_cumsum_and_cumprod_carry_a_nan_made_of_infinities(npartitions):
    s = pd.Series([np.inf, -np.inf, 1, np.nan, 2, 0, np.inf, 3])
    ds = xd.from_pandas(s, npartitions=npartitions)
    with np.errstate(invalid="ignore"):
        for method in ("cumsum", "cumprod"):
            for skipna in (True, False):
                pd.testing.assert_series_equal(getattr(ds, method)(skipna=skipna).compute(),
                                               getattr(s, method)(skipna=skipna))


def test_cumulative_methods_refuse_an_axis_pandas_refuses_when_built():
    pdf = pd.DataFrame({"a": [1, 2, 3], "b": [1.5, 2, 3]})
    df = xd.from_pandas(pdf, npartitions=2)
    with pytest.raises(ValueError, match="cumsum: no axis named 2 for a DataFrame"):
        df.cumsum(axis=2)
    with pytest.raises(ValueError, match="cummax: no axis named 1 for a Series"):
        df.a.cummax(axis=1)
    pd.testing.assert_frame_equal(df.cumsum(axis="index").compute(), pdf.cumsum(axis="index"))
    pd.testing.assert_frame_equal(df.cumsum(axis="columns").compute(), pdf.cumsum(axis="columns"))


# ---------------------------------------------------------------------- loc and iloc


@pytest.mark.parametrize("npartitions", NPARTS)
def test_loc_calls_a_callable_with_the_collection(npartitions):
    pdf = pd.DataFrame({"a": range(6), "b": list("uvwxyz")})
    df = xd.from_pandas(pdf, npartitions=npartitions)
    pd.testing.assert_frame_equal(df.loc[lambda d: d.a > 2].compute(), pdf.loc[lambda d: d.a > 2])
    pd.testing.assert_series_equal(df.loc[lambda d: d.a % 2 == 0, lambda d: "b"].compute(),
                                   pdf.loc[lambda d: d.a % 2 == 0, lambda d: "b"])


@pytest.mark.parametrize("npartitions", NPARTS)
def test_loc_of_a_label_outside_the_divisions_raises_keyerror_when_built(npartitions):
    pdf = pd.DataFrame({"a": range(6)}, index=pd.date_range("2000-01-01", periods=6, freq="12h"))
    df = xd.from_pandas(pdf, npartitions=npartitions)
    for label in (pd.Timestamp("2000-01-09"), pd.Timestamp("1999-12-31"), "2000-01-09", "1999"):
        with pytest.raises(KeyError):
            pdf.loc[label]
        with pytest.raises(KeyError, match="outside this collection's divisions"):
            df.loc[label]
    pd.testing.assert_frame_equal(df.loc["2000-01-02"].compute(), pdf.loc["2000-01-02"])
    pd.testing.assert_frame_equal(df.loc["2000-01-09":].compute(), pdf.loc["2000-01-09":], check_freq=False)


@pytest.mark.parametrize("npartitions", NPARTS)
def test_iloc_selects_columns_by_position(npartitions):
    pdf = pd.DataFrame({"a": [1, 2, 3], "b": [4.0, 5, 6], "c": list("xyz")})
    df = xd.from_pandas(pdf, npartitions=npartitions)
    for cols in ([0, 2], [2, 0], slice(1, None), [True, False, True]):
        pd.testing.assert_frame_equal(df.iloc[:, cols].compute(), pdf.iloc[:, cols])
    pd.testing.assert_series_equal(df.iloc[:, -1].compute(), pdf.iloc[:, -1])
    with pytest.raises(IndexError):
        df.iloc[:, 5]
    with pytest.raises(NotImplementedError, match="only columns"):
        df.iloc[0:2]


@pytest.mark.parametrize("n", [1, 4])
def test_rolling_sem_skew_kurt_rank_as_pandas(n):
    rng = np.random.default_rng(0)
    ps = pd.Series(rng.normal(size=30))
    ps[[3, 11]] = np.nan
    s = xd.from_pandas(ps, npartitions=n)
    for method in ("sem", "skew", "kurt", "rank"):
        for kwargs in ({}, {"center": True}):
            pd.testing.assert_series_equal(getattr(s.rolling(5, **kwargs), method)().compute(),
                                           getattr(ps.rolling(5, **kwargs), method)())
    times = pd.Series(rng.normal(size=30), index=pd.date_range("2000", periods=30, freq="7min"))
    t = xd.from_pandas(times, npartitions=n)
    for method in ("sem", "skew", "kurt", "rank"):
        pd.testing.assert_series_equal(getattr(t.rolling("40min"), method)().compute(),
                                       getattr(times.rolling("40min"), method)())


@pytest.mark.parametrize("n", [1, 3, 5])
@pytest.mark.parametrize("tz", [None, "Europe/Berlin"])
def test_resample_closed_and_labelled_on_either_side_as_pandas(n, tz):
    """closed= and label= for bins of one length and calendar bins, across partitions and a
    change of clocks (a row on a bin's edge closes the bin before it when closed right)."""
    idx = pd.date_range("2000-03-25 00:00", periods=37, freq="5h")
    if tz:
        idx = idx.tz_localize(tz, nonexistent="shift_forward")
    ps = pd.Series(np.arange(37.0), index=idx)
    s = xd.from_pandas(ps, npartitions=n)
    for rule in ("1h", "2h", "D", "2D", "W", "ME"):
        for closed in (None, "left", "right"):
            for label in (None, "left", "right"):
                expected = ps.resample(rule, closed=closed, label=label).sum()
                got = s.resample(rule, closed=closed, label=label).sum().compute()
                pd.testing.assert_series_equal(got, expected, check_freq=False)
    with pytest.raises(ValueError, match="closed must be 'left' or 'right'"):
        s.resample("1h", closed="both")


def test_ffill_and_bfill_carry_across_partitions_with_limits_as_pandas():
    """The last (next) valid value crosses any number of partitions, short, all missing or
    emptied by a filter; a limit counts the rows across them."""
    rng = np.random.default_rng(0)
    for _ in range(20):  # (twenty frames, each cut three ways, 36 calls on each)
        n = int(rng.integers(1, 25))
        a = rng.normal(size=n)
        a[rng.random(n) < 0.6] = np.nan
        pdf = pd.DataFrame({"a": a, "s": pd.array(np.where(rng.random(n) < 0.5, None, "x"), dtype="string")})
        for parts in (1, 3, 6):
            df = xd.from_pandas(pdf, npartitions=min(parts, n))
            for method in ("ffill", "bfill"):
                for limit in (None, 1, 3):
                    pd.testing.assert_frame_equal(getattr(df, method)(limit=limit).compute(),
                                                  getattr(pdf, method)(limit=limit))
                    pd.testing.assert_series_equal(getattr(df.a, method)(limit=limit).compute(),
                                                   getattr(pdf.a, method)(limit=limit))
    pdf = pd.DataFrame({"a": [1.0, None, None, None, 5.0, None]})
    df = xd.from_pandas(pdf, npartitions=3)
    kept = df[df.index != 2]
    pd.testing.assert_frame_equal(kept.ffill().compute(), pdf[pdf.index != 2].ffill())
    pd.testing.assert_frame_equal(kept.bfill(limit=1).compute(), pdf[pdf.index != 2].bfill(limit=1))
    with pytest.raises(ValueError, match="limit must be a positive whole number"):
        df.ffill(limit=0)


@pytest.mark.parametrize("n", [1, 3])
def test_resample_selects_columns_like_pandas(n):
    idx = pd.date_range("2000-01-01", periods=50, freq="17min")
    pdf = pd.DataFrame({"x": np.arange(50.0), "y": np.arange(50) % 7, "z": list("ab") * 25}, index=idx)
    df = xd.from_pandas(pdf, npartitions=n)
    pd.testing.assert_series_equal(df.resample("1h")["x"].mean().compute(), pdf.resample("1h")["x"].mean(),
                                   check_freq=False)
    pd.testing.assert_series_equal(df.resample("1h").y.max().compute(), pdf.resample("1h").y.max(), check_freq=False)
    pd.testing.assert_frame_equal(df.resample("2h")[["x", "y"]].sum().compute(),
                                  pdf.resample("2h")[["x", "y"]].sum(), check_freq=False)
    with pytest.raises(AttributeError, match="has no 'nope'.*columns select"):
        df.resample("1h").nope


@pytest.mark.parametrize("n", [1, 3, 7])
def test_rolling_cov_and_corr_across_partitions_like_pandas(n):
    rng = np.random.default_rng(0)
    pdf = pd.DataFrame({"x": rng.normal(size=50), "y": rng.normal(size=50), "z": rng.normal(size=50)},
                       index=pd.date_range("2024-01-01", periods=50, freq="h"))
    pdf.iloc[[4, 20], 1] = np.nan
    df = xd.from_pandas(pdf, npartitions=n)
    check = dict(check_freq=False, rtol=1e-10)
    pd.testing.assert_series_equal(df.x.rolling(5).corr(df.y).compute(), pdf.x.rolling(5).corr(pdf.y), **check)
    pd.testing.assert_series_equal(df.x.rolling("4h").cov(df.z, ddof=0).compute(),
                                   pdf.x.rolling("4h").cov(pdf.z, ddof=0), **check)
    pd.testing.assert_frame_equal(df.rolling(4).cov().compute(), pdf.rolling(4).cov(), **check)
    pd.testing.assert_frame_equal(df.rolling(6, min_periods=2).corr().compute(), pdf.rolling(6, min_periods=2).corr(),
                                  **check)
    pd.testing.assert_series_equal(df.x.rolling(3, center=True).cov(df.y).compute(),
                                   pdf.x.rolling(3, center=True).cov(pdf.y), **check)
    with pytest.raises(NotImplementedError, match="pairwise over its own columns"):
        df.rolling(3).corr(df)
    with pytest.raises(TypeError, match="xsched Series partitioned as this one"):
        df.x.rolling(3).corr(pdf.y)


@pytest.mark.parametrize("tz", [None, "Europe/Paris"])
@pytest.mark.parametrize("rule", ["45min", "3h", "1D"])
def test_resample_origin_and_offset_as_pandas(tz, rule):
    """Bins of one length counted from pandas' origin (named or a time), moved by its offset;
    "end" and "end_day" close and label them on the right as pandas does."""
    import warnings

    rng = np.random.default_rng(7)
    start = pd.Timestamp("2026-03-27 07:13")  # (the clocks change on the 29th in Paris)
    idx = start + pd.to_timedelta(np.sort(rng.choice(60 * 24 * 3, 70, replace=False)), unit="min")
    if tz:
        idx = idx.tz_localize(tz, nonexistent="shift_forward")
    s = pd.Series(rng.normal(size=len(idx)), index=idx)
    ds = xd.from_pandas(s, npartitions=3)
    origins = ["start_day", "start", "epoch", "end", "end_day", pd.Timestamp("2026-01-01 00:07", tz=tz)]
    for origin in origins:
        for offset in (None, "10min"):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                try:
                    want = s.resample(rule, origin=origin, offset=offset).sum()
                except ValueError:
                    continue  # (pandas refuses some: the first rows before the first bin)
                got = ds.resample(rule, origin=origin, offset=offset).sum().compute()
            pd.testing.assert_series_equal(got, want, check_freq=False, obj=f"origin={origin}, offset={offset}")
    with pytest.raises(ValueError, match="origin must be one of"):
        ds.resample(rule, origin="middle")


@pytest.mark.parametrize("tz", [None, "UTC", "US/Eastern"])
@pytest.mark.parametrize("start", ["2024-03-09 00:00", "2024-03-09 05:00"])
def test_resample_has_pandas_first_and_last_bins_whatever_the_sides_and_origin(tz, start):
    """pandas' edges can add an empty bin at either end (calendar days closed on the right
    begin a day before the first row's; a last row on an edge gets a bin after it; origins
    counted from the end): the same bins here, on any partitioning, across a change of clocks."""
    import warnings

    ps = pd.Series(np.arange(60.0), index=pd.date_range(start, periods=60, freq="1h", tz=tz))
    for n in (1, 4):
        s = xd.from_pandas(ps, npartitions=n)
        for rule in ("6h", "D", "2D", "W"):
            for closed, label in ((None, None), ("right", None), ("right", "right"), ("left", "right")):
                for origin, offset in (("start_day", None), ("end", None), ("end_day", None), ("end_day", "2h")):
                    kw = {k: v for k, v in dict(closed=closed, label=label, origin=origin, offset=offset).items()
                          if v is not None}
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore", RuntimeWarning)
                        try:
                            want = ps.resample(rule, **kw).sum()
                        except ValueError:
                            continue  # (pandas refuses some: the first rows before the first bin)
                        got = s.resample(rule, **kw).sum().compute()
                    pd.testing.assert_series_equal(got, want, check_freq=False, obj=f"{rule} {kw} on {n}")


@pytest.mark.parametrize("npartitions", NPARTS)
@pytest.mark.parametrize("periods, freq", [(1, "h"), (-3, "D"), (2, "ME"), (1, pd.Timedelta("90min")), (1, "B")])
def test_shift_with_freq_moves_the_labels_and_keeps_loc_right(npartitions, periods, freq):
    """shift(freq=) moves labels of times, as pandas: divisions move with a fixed step, and
    are dropped by a calendar one (which can put a later label before an earlier one)."""
    pdf = pd.DataFrame({"v": np.arange(40.0)}, index=pd.date_range("2024-01-30", periods=40, freq="17h"))
    df = xd.from_pandas(pdf, npartitions=npartitions)
    got, want = df.shift(periods, freq=freq), pdf.shift(periods, freq=freq)
    pd.testing.assert_frame_equal(got.compute(), want, check_freq=False)
    pd.testing.assert_series_equal(df.v.shift(periods, freq=freq).compute(), want.v, check_freq=False)
    assert got.known_divisions == (freq in ("h", "D") or isinstance(freq, pd.Timedelta))
    if got.known_divisions:
        pd.testing.assert_frame_equal(got.loc["2024-02-03":"2024-02-05"].compute(),
                                      want.loc["2024-02-03":"2024-02-05"], check_freq=False)
    assert df.index.shift(periods, freq=freq).known_divisions == got.known_divisions
    with pytest.raises(TypeError, match=r"moves labels of times; this index is a RangeIndex"):
        xd.from_pandas(pd.Series([1, 2]), npartitions=1).shift(1, freq="D")
    with pytest.raises(ValueError, match=r"freq='infer'.*give it"):
        df.shift(1, freq="infer")


@pytest.mark.parametrize("npartitions", [1, 3, 5, 23])
def test_rolling_step_evaluates_every_step_th_row_of_the_whole_frame(npartitions):
    pdf = pd.DataFrame({"v": np.arange(23.0), "w": np.arange(23.0) ** 2})
    df = xd.from_pandas(pdf, npartitions=npartitions)
    for step in (1, 2, 3, 7, 30):
        for kwargs in ({}, {"center": True}, {"min_periods": 1}):
            for method in ("sum", "mean", "max"):
                got = getattr(df.rolling(3, step=step, **kwargs), method)().compute()
                pd.testing.assert_frame_equal(got, getattr(pdf.rolling(3, step=step, **kwargs), method)())
    pd.testing.assert_series_equal(df.v.rolling(4, step=2).std().compute(), pdf.v.rolling(4, step=2).std())
    two, three = xsched.compute(df.v.rolling(2, step=2).sum(), df.v.rolling(2, step=3).sum())  # (two graphs, apart)
    pd.testing.assert_series_equal(two, pdf.v.rolling(2, step=2).sum())
    pd.testing.assert_series_equal(three, pdf.v.rolling(2, step=3).sum())
    with pytest.raises(NotImplementedError, match="not implemented for cov and corr"):
        df.v.rolling(3, step=2).cov(df.w)
    with pytest.raises(ValueError, match=r"step must be a whole number of rows, 1 or more"):
        df.rolling(3, step=0)
    times = xd.from_pandas(pdf.set_index(pd.date_range("2000", periods=23, freq="h")), npartitions=npartitions)
    with pytest.raises(NotImplementedError, match="a window of time has no step"):
        times.rolling("2h", step=2)


@pytest.mark.parametrize("npartitions", [1, 4])
def test_to_period_as_pandas_with_divisions_dropped(npartitions):
    pdf = pd.DataFrame({"x": np.arange(60.0)}, index=pd.date_range("2024-01-01", periods=60, freq="17h"))
    df = xd.from_pandas(pdf, npartitions=npartitions)
    for freq in ("M", "D", "W", "Q"):
        pd.testing.assert_frame_equal(df.to_period(freq).compute(), pdf.to_period(freq))
        pd.testing.assert_series_equal(df.x.to_period(freq).compute(), pdf.x.to_period(freq))
    assert not df.to_period("M").known_divisions
    with pytest.raises(ValueError, match="give freq="):
        df.to_period()
    with pytest.raises(TypeError, match="converts a DatetimeIndex"):
        xd.from_pandas(pd.Series([1, 2]), npartitions=1).to_period("M")


@pytest.mark.parametrize("npartitions", [1, 3])
def test_tz_localize_none_drops_the_zone_as_pandas(npartitions):
    pdf = pd.DataFrame({"x": range(30)}, index=pd.date_range("2024-11-02", periods=30, freq="2h", tz="US/Eastern"))
    df = xd.from_pandas(pdf, npartitions=npartitions)
    naive = df.tz_localize(None)
    pd.testing.assert_frame_equal(naive.compute(), pdf.tz_localize(None), check_freq=False)
    assert not naive.known_divisions  # (the hour the clocks repeat: wall times go back)
    pd.testing.assert_index_equal(df.index.tz_localize(None).compute(), pdf.index.tz_localize(None))
    assert naive.tz_localize(None) is naive  # (no zone to drop: as it is, as pandas)


@pytest.mark.parametrize("npartitions", [1, 3, 5])
@pytest.mark.parametrize("rule", ["15min", "1h", "2h", "1D"])
@pytest.mark.parametrize("gaps", [False, True])
def test_asfreq_and_resample_asfreq_as_pandas(npartitions, rule, gaps):
    """The value labelled with each step, across partition boundaries; missing (or the fill
    value) where no row is labelled so."""
    rng = np.random.default_rng(len(rule) + npartitions)
    idx = pd.date_range("2000-01-01", periods=40, freq="13min")
    if gaps:
        idx = idx.delete(rng.choice(40, 8, replace=False))
    pdf = pd.DataFrame({"a": rng.random(len(idx)), "i": rng.integers(0, 9, len(idx))}, index=idx)
    x = xd.from_pandas(pdf, npartitions=npartitions)
    # (an integer column is a float whether or not a step misses its row: pandas keeps its
    # integers when none does, which no partition can tell)
    got = x.asfreq(rule)
    assert got.dtypes.to_dict() == {"a": np.dtype("float64"), "i": np.dtype("float64")}
    pd.testing.assert_frame_equal(got.compute(), pdf.asfreq(rule).astype({"i": "float64"}), check_freq=False)
    pd.testing.assert_frame_equal(x.resample(rule).asfreq(fill_value=0).compute(),
                                  pdf.resample(rule).asfreq(fill_value=0), check_freq=False)
    pd.testing.assert_series_equal(x.a.asfreq(rule, fill_value=-1.0).compute(), pdf.a.asfreq(rule, fill_value=-1.0),
                                   check_freq=False)


def test_asfreq_refuses_pandas_fill_methods_naming_the_way():
    x = xd.from_pandas(pd.DataFrame({"a": [1.0, 2.0]}, index=pd.date_range("2000", periods=2, freq="1h")),
                       npartitions=1)
    with pytest.raises(NotImplementedError, match=r"\.ffill\(\) or \.bfill\(\) after it"):
        x.asfreq("30min", method="ffill")


@pytest.mark.parametrize("rule", ["MS", "ME", "W", "B", "QS", "2D"])
@pytest.mark.parametrize("npartitions", [1, 3, 6])
def test_asfreq_of_calendar_steps_from_the_first_row(rule, npartitions):
    """Calendar steps run from the first row (mid-January: the first month start is February's)."""
    idx = pd.date_range("2000-01-15", periods=200, freq="D").delete([3, 40, 41, 100])
    pdf = pd.DataFrame({"a": np.arange(len(idx), dtype=float)}, index=idx)
    got = xd.from_pandas(pdf, npartitions=npartitions).asfreq(rule).compute()
    pd.testing.assert_frame_equal(got, pdf.asfreq(rule), check_freq=False)


@pytest.mark.parametrize("method", ["first", "last", "max", "min"])
@pytest.mark.parametrize("npartitions", [1, 2])
def test_resample_of_bools_with_empty_bins_leaves_them_missing(method, npartitions):
    """A bool result cast back to bool made the empty bins' missing values True."""
    s = pd.Series([True, False, True, False], name="b", index=pd.to_datetime(
        ["2024-01-01 00:00", "2024-01-01 00:20", "2024-01-01 01:00", "2024-01-01 01:40"]))
    got = getattr(xd.from_pandas(s, npartitions=npartitions).resample("20min"), method)().compute()
    pd.testing.assert_series_equal(got, getattr(s.resample("20min"), method)(), check_freq=False)


# ---------------------------------------------------------------------- columns of windows and bins


@pytest.mark.parametrize("npartitions", NPARTS)
@pytest.mark.parametrize("make", [lambda d: d.rolling(3), lambda d: d.expanding(), lambda d: d.ewm(span=3)],
                         ids=["rolling", "expanding", "ewm"])
def test_windows_select_columns_by_item_list_and_attribute_as_pandas(npartitions, make):
    pdf = pd.DataFrame({"a": _series(), "b": np.arange(12.0), "c": 1.0})
    df = xd.from_pandas(pdf, npartitions=npartitions)
    pd.testing.assert_series_equal(make(df)["a"].mean().compute(), make(pdf)["a"].mean())
    pd.testing.assert_frame_equal(make(df)[["a", "c"]].sum().compute(), make(pdf)[["a", "c"]].sum())
    pd.testing.assert_series_equal(make(df).b.sum().compute(), make(pdf).b.sum())
    with pytest.raises(TypeError, match="no columns to select"):
        make(df.a)["a"]
    with pytest.raises(AttributeError, match="nope"):
        make(df).nope


@pytest.mark.parametrize("npartitions", NPARTS)
def test_rolling_aggregate_and_resample_named_aggregation_as_pandas(npartitions):
    idx = pd.date_range("2000-01-01", periods=12, freq="25min")
    pdf = pd.DataFrame({"a": _series().values, "b": np.arange(12)}, index=idx)
    df = xd.from_pandas(pdf, npartitions=npartitions)
    pd.testing.assert_frame_equal(df.rolling(2).aggregate(["sum", "mean"]).compute(),
                                  pdf.rolling(2).aggregate(["sum", "mean"]))
    named = dict(total=("a", "sum"), top=("b", "max"))
    pd.testing.assert_frame_equal(df.resample("1h").agg(**named).compute(), pdf.resample("1h").agg(**named))
    pd.testing.assert_frame_equal(df.resample("1h").aggregate("sum").compute(), pdf.resample("1h").aggregate("sum"))


@pytest.mark.parametrize("npartitions", [1, 3])
@pytest.mark.parametrize("rule", ["MS", "QS", "SMS", "ME", "W", "6h"])
@pytest.mark.parametrize("closed", ["left", "right"])
def test_resample_keeps_integers_whatever_side_is_closed(npartitions, rule, closed):
    # (integers become floats only where a bin is empty; the calendar bins closed on the right
    # once came back as floats from a stand-in with an empty bin of its own)
    pdf = pd.DataFrame({"v": np.arange(200), "f": np.arange(200.0)},
                       index=pd.date_range("2000-01-01", periods=200, freq="19h"))
    df = xd.from_pandas(pdf, npartitions=npartitions)
    for method in ("max", "first", "sum"):
        pd.testing.assert_frame_equal(getattr(df.resample(rule, closed=closed), method)().compute(),
                                      getattr(pdf.resample(rule, closed=closed), method)(), check_freq=False)


def test_dt_tz_localize_infer_on_a_column_runs_in_one_partition_and_is_refused_across_several():
    # (the clocks go back at 03:00 on 2018-10-28 in Europe/Warsaw: 02:xx happens twice)
    times = pd.Series(pd.to_datetime(["2018-10-28 01:30", "2018-10-28 02:00", "2018-10-28 02:30",
                                      "2018-10-28 02:00", "2018-10-28 02:30", "2018-10-28 03:00"]))
    expected = times.dt.tz_localize("Europe/Warsaw", ambiguous="infer")
    one = xd.from_pandas(times, npartitions=1)
    pd.testing.assert_series_equal(one.dt.tz_localize("Europe/Warsaw", ambiguous="infer").compute(), expected)
    with pytest.raises(NotImplementedError, match="whole column.*repartition"):
        xd.from_pandas(times, npartitions=3).dt.tz_localize("Europe/Warsaw", ambiguous="infer")
