"""Columns of pyarrow's times and integers (``timestamp[us, tz=...][pyarrow]``,
``duration[ms][pyarrow]``, ``int64[pyarrow]``) reduce as pandas reduces them."""

import numpy as np
import pandas as pd
import pytest

import xsched.dataframe as xd

pytest.importorskip("pyarrow")

DATES = pd.Series(pd.to_datetime(["2024-01-01", "2024-01-02", None, "2024-01-05", "2024-03-01", "2024-02-01"]))
ARROW_TIMES = {
    "timestamp[ns][pyarrow]": DATES,
    "timestamp[us, tz=Europe/Berlin][pyarrow]": DATES.dt.tz_localize("Europe/Berlin"),
    "timestamp[s][pyarrow]": DATES,
    "duration[ms][pyarrow]": DATES - DATES.min(),
}


@pytest.fixture(params=list(ARROW_TIMES))
def times(request):
    return ARROW_TIMES[request.param].astype(request.param)


@pytest.mark.parametrize("how", ["mean", "std", "min", "max"])
def test_series_and_frame_means_and_spreads(times, how):
    x = xd.from_pandas(times, npartitions=3)
    assert repr(getattr(x, how)().compute()) == repr(getattr(times, how)())
    frame = pd.DataFrame({"t": times, "x": np.arange(6.0)})
    if how in ("mean", "min", "max"):  # (pandas refuses the std of a frame mixing dates and numbers)
        got = getattr(xd.from_pandas(frame, npartitions=2), how)().compute()
        assert got.equals(getattr(frame, how)())


@pytest.mark.parametrize("how", ["mean", "std", "min", "max", "first", "median"])
def test_groupby_means_and_spreads_keep_the_arrow_dtype(times, how):
    frame = pd.DataFrame({"k": [1, 2, 1, 2, 1, 2], "t": times})
    want = getattr(frame.groupby("k").t, how)()
    got = getattr(xd.from_pandas(frame, npartitions=3).groupby("k").t, how)().compute()
    assert got.dtype == want.dtype and got.equals(want)


def test_describe_of_arrow_times_is_pandas(times):
    frame = pd.DataFrame({"t": times, "x": np.arange(6.0)})
    x = xd.from_pandas(frame, npartitions=3)
    assert x.t.describe().compute().equals(frame.t.describe())
    for include in (None, "all"):
        assert x.describe(include=include).compute().equals(frame.describe(include=include))


@pytest.mark.parametrize("dtype", ["int64[pyarrow]", "uint8[pyarrow]", "Int64"])
@pytest.mark.parametrize("q", [0.5, [0.25, 0.5, 0.9]])
@pytest.mark.parametrize("interpolation", ["linear", "lower", "midpoint"])
def test_quantiles_of_integers_with_missing_values_in_pandas_dtype(dtype, q, interpolation):
    s = pd.Series(pd.array([1, 5, None, 3, 9], dtype=dtype))
    got = xd.from_pandas(s, npartitions=2).quantile(q, interpolation=interpolation).compute()
    assert repr(got) == repr(s.quantile(q, interpolation=interpolation))


@pytest.mark.parametrize("q", [0.5, [0.25, 0.5, 0.75]])
def test_quantiles_and_medians_of_arrow_times_in_their_dtype(times, q):
    x = xd.from_pandas(times, npartitions=2)
    assert repr(x.quantile(q).compute()) == repr(times.quantile(q))
    assert repr(x.median().compute()) == repr(times.median())


@pytest.mark.parametrize("unit", ["date32", "date64"])
def test_arrow_dates_average_and_describe_as_pandas(unit):
    import datetime as dt

    import pyarrow as pa

    dates = pd.Series([dt.date(2024, 1, 1), dt.date(2024, 1, 5), None, dt.date(2024, 1, 3), dt.date(2024, 2, 9)],
                      dtype=pd.ArrowDtype(getattr(pa, unit)()))
    x = xd.from_pandas(dates, npartitions=2)
    for how in ("mean", "std", "min", "max", "median"):
        assert repr(getattr(x, how)().compute()) == repr(getattr(dates, how)())
    assert x.describe().compute().equals(dates.describe())
    frame = pd.DataFrame({"d": dates, "k": [1, 1, 2, 2, 1]})
    got = xd.from_pandas(frame, npartitions=2).groupby("k").d.mean().compute()
    assert got.equals(frame.groupby("k").d.mean())


def test_time_windows_over_an_index_of_arrow_times_say_how_to_make_it_numpys():
    times = ARROW_TIMES["timestamp[ns][pyarrow]"].dropna()
    s = xd.from_pandas(pd.Series(np.arange(len(times)), index=times.astype("timestamp[ns][pyarrow]").to_numpy()),
                       npartitions=2)
    arrow = s.map_partitions(lambda p: p.set_axis(p.index.astype("timestamp[ns][pyarrow]")))
    with pytest.raises(TypeError, match=r"index holds timestamp\[ns\]\[pyarrow\]; make it NumPy's first"):
        arrow.resample("2D")
