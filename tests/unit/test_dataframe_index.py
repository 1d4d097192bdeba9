"""The methods of a partitioned Index against pandas': the fields and methods of times
(datetime, timedelta and period labels), ``.str`` on text labels, ``unique``,
``value_counts``, ``to_series``, ``to_frame``, ``shift`` by a frequency, and the divisions
of an Index made of new labels (cleared, so ``loc`` never trusts bounds of other labels)."""

import numpy as np
import pandas as pd
import pandas.testing as tm
import pytest

import xsched.dataframe as xd

PARTS = [1, 3, 5]


def times(tz=None):
    return pd.date_range("2000-01-30 22:00", periods=30, freq="7h", tz=tz, name="t")


def index_of(labels, n):
    return xd.from_pandas(pd.DataFrame({"v": range(len(labels))}, index=labels), npartitions=n, sort=False).index


@pytest.mark.parametrize("n", PARTS)
@pytest.mark.parametrize("tz", [None, "Europe/Paris"])
@pytest.mark.parametrize("name", ["year", "month", "day", "hour", "day_of_week", "day_of_year", "quarter",
                                  "days_in_month", "is_month_start", "is_year_end", "is_leap_year", "date",
                                  "time", "nanosecond"])
def test_fields_of_datetime_labels_like_pandas(n, tz, name):
    labels = times(tz)
    idx = xd.from_pandas(pd.DataFrame({"v": range(len(labels))}, index=labels), npartitions=n).index
    out, expected = getattr(idx, name), getattr(labels, name)
    if isinstance(expected, pd.Index):
        assert isinstance(out, xd.Index) and not out.known_divisions
        tm.assert_index_equal(out.compute(), expected)
    else:  # (an array answer: a Series on the labels, as a mask of an Index is)
        assert isinstance(out, xd.Series) and out.divisions == idx.divisions and idx.known_divisions
        got = out.compute()
        tm.assert_index_equal(got.index, labels)
        np.testing.assert_array_equal(got.to_numpy(), expected)


@pytest.mark.parametrize("n", PARTS)
def test_methods_of_datetime_labels_like_pandas(n):
    labels = times("UTC")
    idx = index_of(labels, n)
    tm.assert_index_equal(idx.floor("D").compute(), labels.floor("D"))
    tm.assert_index_equal(idx.round("3h").compute(), labels.round("3h"))
    tm.assert_index_equal(idx.normalize().compute(), labels.normalize())
    tm.assert_index_equal(idx.strftime("%Y-%m-%d %H").compute(), labels.strftime("%Y-%m-%d %H"))
    tm.assert_index_equal(idx.day_name().compute(), labels.day_name())
    tm.assert_index_equal(idx.tz_convert("Asia/Tokyo").compute(), labels.tz_convert("Asia/Tokyo"))
    tm.assert_frame_equal(idx.isocalendar().compute(), labels.isocalendar())
    assert idx.tz == labels.tz and idx.unit == labels.unit
    assert not idx.floor("D").known_divisions


@pytest.mark.parametrize("n", PARTS)
def test_timedelta_and_period_labels_like_pandas(n):
    deltas = pd.to_timedelta(np.arange(12) * 5000, unit="s")
    idx = index_of(deltas, n)
    tm.assert_index_equal(idx.total_seconds().compute(), deltas.total_seconds())
    tm.assert_index_equal(idx.days.compute(), deltas.days)
    tm.assert_index_equal(idx.seconds.compute(), deltas.seconds)
    tm.assert_frame_equal(idx.components.compute().reset_index(drop=True), deltas.components)
    assert not idx.components.known_divisions  # (its rows are numbered anew in each partition)
    periods = pd.period_range("1999-11", periods=12, freq="M")
    idx = index_of(periods, n)
    assert idx.freq == periods.freq
    tm.assert_index_equal(idx.qyear.compute(), periods.qyear)
    tm.assert_index_equal(idx.start_time.compute(), periods.start_time)
    tm.assert_index_equal(idx.to_timestamp().compute(), periods.to_timestamp(), check_freq=False)
    tm.assert_index_equal(idx.shift(2).compute(), periods.shift(2))


def test_fields_of_labels_that_are_not_times_name_the_fix():
    idx = index_of(pd.Index(list("abc")), 2)
    with pytest.raises(AttributeError, match="labels are .*not times.*to_datetime"):
        idx.year
    with pytest.raises(AttributeError, match="has no attribute 'frobnicate'"):
        idx.frobnicate
    assert not hasattr(idx, "hour") and hasattr(index_of(times(), 2), "hour")
    assert "hour" in dir(index_of(times(), 2)) and "hour" not in dir(idx)


@pytest.mark.parametrize("n", PARTS)
def test_str_of_text_labels_like_pandas(n):
    labels = pd.Index(["Banana", "apple", "cherry", "date", "elder", "fig"], name="fruit")  # (sorted)
    pdf = pd.DataFrame({"v": range(6)}, index=labels)
    df = xd.from_pandas(pdf, npartitions=n)
    tm.assert_index_equal(df.index.str.upper().compute(), labels.str.upper())
    tm.assert_index_equal(df.index.str.len().compute(), labels.str.len())
    assert not df.index.str.upper().known_divisions
    # a mask of text labels filters rows, partition by partition
    tm.assert_frame_equal(df[df.index.str.contains("an|er")].compute(), pdf[labels.str.contains("an|er")])


@pytest.mark.parametrize("n", PARTS)
def test_unique_value_counts_series_and_frame_like_pandas(n):
    labels = pd.Index([4, 4, 2, 9, 2, 7, 4, np.nan, 9, np.nan], name="k")
    idx = index_of(labels, n)
    tm.assert_index_equal(idx.unique().compute(), labels.unique())
    for kwargs in ({}, {"normalize": True}, {"dropna": False}, {"ascending": True}):
        got, expected = idx.value_counts(**kwargs).compute(), labels.value_counts(**kwargs)
        tm.assert_series_equal(got.sort_index(), expected.sort_index())
        assert got.is_monotonic_increasing if kwargs.get("ascending") else got.is_monotonic_decreasing
    tm.assert_series_equal(idx.to_series().compute(), labels.to_series())
    tm.assert_series_equal(idx.to_series(name="s").compute(), labels.to_series(name="s"))
    tm.assert_frame_equal(idx.to_frame().compute(), labels.to_frame())
    tm.assert_frame_equal(idx.to_frame(name="z").compute(), labels.to_frame(name="z"))
    tm.assert_frame_equal(idx.to_frame(index=False).compute().reset_index(drop=True), labels.to_frame(index=False))
    np.testing.assert_array_equal(np.array(idx.to_list(), dtype=float), labels.to_numpy())  # (NaN == NaN here)
    np.testing.assert_array_equal(idx.isnull().compute().to_numpy(), labels.isnull())
    np.testing.assert_array_equal(idx.notnull().compute().to_numpy(), labels.notnull())
    assert idx.shape[0].compute() == len(labels) and idx.ndim == 1
    assert idx.rename("r").name == "r" and idx.rename("r").compute().name == "r"


@pytest.mark.parametrize("n", PARTS)
def test_shift_by_a_frequency_moves_labels_and_divisions(n):
    labels = pd.date_range("2000-01-01", periods=20, freq="D")
    pdf = pd.DataFrame({"v": range(20)}, index=labels)
    idx = xd.from_pandas(pdf, npartitions=n).index
    out = idx.shift(3, freq="h")
    tm.assert_index_equal(out.compute(), labels.shift(3, freq="h"))
    assert out.divisions == tuple(pd.Index(idx.divisions).shift(3, freq="h"))
    frame = out.to_frame(name="when")  # (the moved divisions hold: loc reads only its partitions)
    tm.assert_frame_equal(frame.loc["2000-01-05":"2000-01-09"].compute(),
                          labels.shift(3, freq="h").to_frame(name="when").loc["2000-01-05":"2000-01-09"])
    with pytest.raises(ValueError, match="freq="):  # (a partition's labels carry no frequency)
        idx.shift(1)
    with pytest.raises(TypeError, match="Series.shift"):
        index_of(pd.Index([1, 2, 3]), 2).shift(1)


@pytest.mark.parametrize("n", PARTS)
def test_an_index_of_new_labels_has_no_divisions(n):
    pdf = pd.DataFrame({"v": range(10)}, index=range(0, 20, 2))
    idx = xd.from_pandas(pdf, npartitions=n).index
    assert idx.known_divisions
    for made in (idx + 100, -idx, idx.map(lambda v: -v), idx.astype(float), idx.fillna(0)):
        assert not made.known_divisions
    negated = idx.map(lambda v: -v).to_frame(name="neg")
    tm.assert_frame_equal(negated.loc[-4:-10].compute(), pdf.index.map(lambda v: -v).to_frame(name="neg").loc[-4:-10])
    for same in (idx.rename("r"), idx.dropna(), idx.to_series(), idx.to_frame(), idx > 4):
        assert same.known_divisions and same.divisions == idx.divisions


@pytest.mark.parametrize("n", PARTS)
def test_masks_of_values_made_from_the_labels_filter_rows_as_pandas(n):
    labels = pd.date_range("2024-01-27", periods=40, freq="9h", name="t")
    pdf = pd.DataFrame({"v": range(40)}, index=labels)
    df = xd.from_pandas(pdf, npartitions=n)
    cases = [(lambda i: i.day_of_week == 6), (lambda i: i.month.isin([2])), (lambda i: (i.hour + 3) % 24 < 6),
             (lambda i: i.strftime("%a").str.startswith("S")), (lambda i: i.normalize().is_month_start),
             (lambda i: i.map(lambda t: t.day) > 29), (lambda i: ~(i.hour.rename("h") > 10))]
    for mask in cases:
        tm.assert_frame_equal(df[mask(df.index)].compute(), pdf[mask(pdf.index)], check_freq=False)
        tm.assert_frame_equal(df.loc[mask(df.index)].compute(), pdf.loc[mask(pdf.index)], check_freq=False)
    combined = (df.index.hour > 12) & (df.v % 2 == 0)  # (with a column's mask)
    tm.assert_frame_equal(df[combined].compute(), pdf[(pdf.index.hour > 12) & (pdf.v % 2 == 0)], check_freq=False)
    assert int((df.index.day_of_week >= 5).sum().compute()) == int((pdf.index.day_of_week >= 5).sum())


@pytest.mark.parametrize("labels", [[3, 1, 3, 7, 1, 9], list("cabcad"),
                                    list(pd.date_range("2024", periods=3, freq="D")) * 2])
def test_index_duplicates_positions_values_and_sorting_as_pandas(labels):
    pdf = pd.DataFrame({"v": range(6)}, index=pd.Index(labels, name="k"))
    df = xd.from_pandas(pdf, npartitions=3, sort=False)
    for keep in ("first", "last", False):
        np.testing.assert_array_equal(df.index.duplicated(keep=keep).compute().to_numpy(),
                                      pdf.index.duplicated(keep=keep))
    pd.testing.assert_frame_equal(df[~df.index.duplicated()].compute(), pdf[~pdf.index.duplicated()])
    assert bool(df.index.is_unique.compute()) == pdf.index.is_unique
    assert bool(df.index.drop_duplicates().is_unique.compute())
    np.testing.assert_array_equal(df.index.values.compute(), pdf.index.values)
    assert int(df.index.argmax().compute()) == pdf.index.argmax()
    assert int(df.index.argmin().compute()) == pdf.index.argmin()
    pd.testing.assert_index_equal(pd.Index(df.index.sort_values(ascending=False).compute()),
                                  pdf.index.sort_values(ascending=False))


def test_str_accessor_takes_a_slice_or_a_position():
    s = pd.Series(["abcd", "ef", None, "g"], name="w")
    x = xd.from_pandas(s, npartitions=2)
    pd.testing.assert_series_equal(x.str[1:3].compute(), s.str[1:3])
    pd.testing.assert_series_equal(x.str[::-1].compute(), s.str[::-1])
    pd.testing.assert_series_equal(x.str[0].compute(), s.str[0])
    idx = xd.from_pandas(pd.Series(range(2), index=["xy", "zw"]), npartitions=2).index
    assert idx.str[1].compute().tolist() == ["y", "w"]
    with pytest.raises(TypeError, match=r"the .dt accessor takes no \[...\]"):
        xd.from_pandas(pd.Series(pd.date_range("2024", periods=2)), npartitions=1).dt[0]


def test_a_duplicated_mask_filters_a_frame_of_text_or_time_labels():
    for labels in (list("cabcad"), pd.date_range("2024", periods=6, freq="h")):
        pdf = pd.DataFrame({"v": [1, 2, 1, 3, 2, 1]}, index=labels)
        df = xd.from_pandas(pdf, npartitions=3, sort=False)
        pd.testing.assert_frame_equal(df[~df.duplicated()].compute(), pdf[~pdf.duplicated()], check_freq=False)
        pd.testing.assert_series_equal(df.v[df.v.duplicated(keep="last")].compute(), pdf.v[pdf.v.duplicated(keep="last")],
                                       check_freq=False)
