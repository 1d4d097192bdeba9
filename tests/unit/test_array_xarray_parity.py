"""xarray on xsched arrays (``chunked_array_type="xsched"``) against the same operations on
NumPy-backed data: a small dataset (dims time/y/x, a datetime ``time`` coordinate, float,
int and float32 variables with NaNs, a timedelta variable) cut into 1, 2 and 3 blocks along
``time``; the lazy result must hold an xsched array until computed, and equal NumPy's after."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

xr = pytest.importorskip("xarray")

import xsched.array as xa  # noqa: E402

T, NY, NX = 6, 3, 4


@pytest.fixture(scope="module")
def eager():
    rng = np.random.default_rng(5)
    time = pd.date_range("2000-01-01", periods=T, freq="6h")
    a = rng.normal(size=(T, NY, NX))
    a[0, 0, 0] = a[2, :, 1] = np.nan
    c = rng.normal(size=(T, NY, NX)).astype("f4")
    c[4, 1, 2] = np.nan
    return xr.Dataset(
        {"a": (("time", "y", "x"), a), "b": (("time", "y", "x"), rng.integers(-9, 9, (T, NY, NX))),
         "c": (("time", "y", "x"), c), "span": ("time", (time - time[0]).values)},
        coords={"time": time, "y": np.arange(NY) * 10.0, "x": np.arange(NX)})


def lazy(ds, blocks: int):
    """``ds`` cut into ``blocks`` blocks along time."""
    return ds.chunk({"time": -(-T // blocks)}, chunked_array_type="xsched")


def assert_lazy_and_close(got, expected) -> None:
    arrays = got.data_vars.values() if isinstance(got, xr.Dataset) else [got]
    assert all(isinstance(a.data, xa.Array) for a in arrays), "computed before asked"
    computed = got.compute()
    xr.testing.assert_allclose(computed, expected)
    assert computed.dtypes == expected.dtypes if isinstance(got, xr.Dataset) else (
        computed.dtype == expected.dtype)


@pytest.mark.parametrize("blocks", [1, 2, 3])
def test_a_sum_of_timedeltas_keeps_its_unit(eager, blocks):
    # NumPy refuses a time unit in a ufunc's dtype=: each block's sum raised when computed
    ds = lazy(eager, blocks)
    assert_lazy_and_close(ds.span.sum(), eager.span.sum())
    assert_lazy_and_close(ds.span.cumsum("time"), eager.span.cumsum("time"))
    x = xa.from_array(eager.span.values.astype("m8[s]"), chunks=-(-T // blocks))
    assert xa.sum(x).compute() == np.sum(eager.span.values.astype("m8[s]"))


@pytest.mark.parametrize("blocks", [1, 2, 3])
def test_cov_and_corr_conjugate_lazily(eager, blocks):
    ds = lazy(eager, blocks)
    assert_lazy_and_close(xr.cov(ds.a, ds.c, dim="time"), xr.cov(eager.a, eager.c, dim="time"))
    assert_lazy_and_close(xr.corr(ds.a, ds.b, dim=("time", "x")),
                          xr.corr(eager.a, eager.b, dim=("time", "x")))
    z = xa.from_array(np.array([1 + 2j, 3 - 1j, 2j]), chunks=2)
    np.testing.assert_array_equal(z.conjugate().compute(), np.conj(z.compute()))


PADS = {
    "maximum": lambda d: d.a.pad(time=(2, 1), mode="maximum"),
    "minimum-stat": lambda d: d.b.pad(time=(1, 2), x=1, mode="minimum",
                                      stat_length={"time": 2, "x": (1, 3)}),
    "mean-int": lambda d: d.b.pad(time=2, mode="mean", stat_length=3),
    "mean-f4": lambda d: d.c.pad(time=(0, 3), mode="mean"),
    "ramp": lambda d: d.a.pad(time=(2, 1), x=(0, 2), mode="linear_ramp",
                              end_values={"time": (1, -2), "x": 4}),
    "ramp-int": lambda d: d.b.pad(time=3, mode="linear_ramp", end_values=5),
    "ramp-f4": lambda d: d.c.pad(x=(4, 1), mode="linear_ramp", end_values=5),
}


@pytest.mark.parametrize("blocks", [1, 2, 3])
@pytest.mark.parametrize("name", list(PADS))
def test_pad_with_a_statistic_or_a_ramp(eager, name, blocks):
    op = PADS[name]
    assert_lazy_and_close(op(lazy(eager, blocks)), op(eager))  # (float32 means: last bits differ)


def test_pad_statistic_errors_match_numpy():
    x = xa.from_array(np.arange(5), chunks=2)
    with pytest.raises(ValueError, match="stat_length of 0 yields no value"):
        xa.pad(x, 1, mode="maximum", stat_length=0)
    with pytest.raises(ValueError, match="cannot extend the empty axis 0"):
        xa.pad(xa.from_array(np.zeros(0), chunks=1), 1, mode="mean")
    with pytest.raises(ValueError, match="mode 'smooth' is not supported"):
        xa.pad(x, 1, mode="smooth")


@pytest.mark.parametrize("blocks", [1, 3])
def test_lazy_coordinates_that_agree_are_kept(blocks):
    """xarray keeps a coordinate of two operands when ``bool((a == b).all())`` says they
    agree: a one-element xsched array answers (computed), as NumPy's does, so non-index
    coordinates survive selections, arithmetic, rolling and merges."""
    eager = xr.Dataset({"a": (("time", "y"), np.arange(24.0).reshape(6, 4)),
                        "c": (("time", "y"), np.ones((6, 4)))},
                       coords={"y": np.arange(4) * 10.0, "lat": ("y", np.linspace(-30, 30, 4))})
    ds = eager.chunk({"time": -(-6 // blocks), "y": 2}, chunked_array_type="xsched")
    ops = [lambda d: d.a.where(d.y > 10, drop=True),
           lambda d: d.a.isel(y=[1, 3]) - d.c.isel(y=[1, 3]),
           lambda d: d.a.rolling(time=3).std(),
           lambda d: xr.merge([d.a.isel(y=[1, 3]), d.c.isel(y=[1, 3])], compat="no_conflicts", join="outer").a,
           lambda d: d.a.weighted(abs(d.lat)).mean("y")]
    for op in ops:
        got, expected = op(ds), op(eager)
        assert "lat" in got.coords or "lat" not in expected.coords
        assert_lazy_and_close(got, expected)
    assert ds.identical(eager.chunk({"time": -(-6 // blocks), "y": 2}, chunked_array_type="xsched"))


def test_truth_of_an_array_as_numpy():
    x = xa.from_array(np.arange(4), chunks=2)
    assert bool((x < 4).all()) and not bool(x[0]) and bool(x[1:2])
    for ambiguous, what in [(x, "more than one element"), (x[:0], "empty"), (x[x > 1], "unknown size")]:
        with pytest.raises(ValueError, match=what):
            bool(ambiguous)


@pytest.mark.parametrize("blocks", [1, 2, 3])
def test_polyfit_skipping_missing_values(eager, blocks):
    # the columns holding NaN are fitted apart (a boolean mask of columns, lengths unknown)
    fit = lazy(eager, blocks).a.polyfit("time", 1, skipna=True)
    xr.testing.assert_allclose(fit.compute(), eager.a.polyfit("time", 1, skipna=True))


@pytest.mark.parametrize("blocks", [1, 2, 3])
def test_dt_accessor_of_a_chunked_datetime_variable(blocks):
    # (xarray's dt accessor maps blocks only for dask's arrays: on others it computes, at once)
    stamps = xr.DataArray(pd.date_range("2000-01-30 22:00", periods=T, freq="7h").values, dims="time")
    chunked = stamps.chunk({"time": -(-T // blocks)}, chunked_array_type="xsched")
    for field in ("year", "month", "day", "hour", "dayofyear"):
        xr.testing.assert_equal(getattr(chunked.dt, field).compute(), getattr(stamps.dt, field))
    xr.testing.assert_equal(chunked.dt.floor("D").compute(), stamps.dt.floor("D"))


@pytest.mark.parametrize("blocks", [1, 2, 3])
def test_assignment_through_xarray_stays_lazy(eager, blocks):
    """xarray's ``da[...] = value`` and ``da.loc[...] = value`` reach the xsched array's
    ``__setitem__``: the values are set in the graph, nothing computed before asked."""
    expected, got = eager.a.copy(), lazy(eager, blocks).a.copy()
    for target in (expected, got):
        target[dict(time=slice(0, 2))] = -1.0
        target.loc[dict(x=[1, 2])] = -2.0
        target[3, 1] = 99.0
    assert_lazy_and_close(got, expected)
