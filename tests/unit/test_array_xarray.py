"""xarray on xsched arrays through the ``"xsched"`` chunk manager
(``xsched.array.xarray_chunks``), in this process (no cluster; the same on a LocalCluster:
tests/cluster/test_array_xarray_cluster.py).

A small netCDF "movie" (photon counts per frame, dims frame/y/x, a frame-time coordinate and
a background image) is written with h5netcdf, opened with ``chunked_array_type="xsched"``,
and every operation is compared with the same one on the file opened eagerly (NumPy): the
lazy result must hold an xsched array until computed, and equal NumPy's after."""

from __future__ import annotations

import numpy as np
import pytest

xr = pytest.importorskip("xarray")
pytest.importorskip("h5netcdf")

import xsched.array as xa  # noqa: E402
from xsched.array.xarray_chunks import XschedChunkManager  # noqa: E402
from xsched.graph.spec import Task  # noqa: E402

FRAMES, NY, NX = 200, 6, 8


@pytest.fixture(scope="module")
def movie_path(tmp_path_factory):
    rng = np.random.default_rng(11)
    counts = rng.poisson(5.0, size=(FRAMES, NY, NX)).astype("i4")
    ds = xr.Dataset(
        {"counts": (("frame", "y", "x"), counts, {"units": "photons"}),
         "background": (("y", "x"), rng.random((NY, NX)))},
        coords={"frame": np.arange(FRAMES) * 0.05, "y": np.arange(NY), "x": np.arange(NX)},
        attrs={"title": "a test movie"})
    path = tmp_path_factory.mktemp("xarray") / "movie.nc"
    ds.to_netcdf(path, engine="h5netcdf")
    return path


@pytest.fixture
def lazy(movie_path):
    ds = xr.open_dataset(movie_path, engine="h5netcdf", chunks={"frame": 100},
                         chunked_array_type="xsched")
    yield ds
    ds.close()


@pytest.fixture(scope="module")
def eager(movie_path):
    with xr.open_dataset(movie_path, engine="h5netcdf") as ds:
        return ds.load()


def keys_of(data: xa.Array) -> list[str]:
    return [k for k, v in data.__xsched_graph__().items() if isinstance(v, Task)]


def test_the_chunk_manager_is_registered_and_xsched_stays_free_of_xarray():
    from xarray.namedarray.parallelcompat import list_chunkmanagers

    assert isinstance(list_chunkmanagers()["xsched"], XschedChunkManager)
    import subprocess
    import sys

    code = "import sys, xsched, xsched.array; print('xarray' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True).stdout.strip() == "False"


def test_open_dataset_gives_xsched_arrays_with_the_asked_chunks(lazy, eager):
    counts = lazy.counts
    assert isinstance(counts.data, xa.Array)
    assert counts.chunks == ((100, 100), (NY,), (NX,))
    assert lazy.background.chunks == ((NY,), (NX,))
    assert counts.dtype == np.int32 and counts.attrs["units"] == "photons"
    assert isinstance(lazy.frame.data, np.ndarray)  # the index coordinate is loaded
    assert dict(lazy.chunksizes) == {"frame": (100, 100), "y": (NY,), "x": (NX,)}
    # each block is read by its own task, from the file: nothing was read into the graph
    assert len([k for k in keys_of(counts.data) if k.startswith("from-array")]) == 2
    xr.testing.assert_identical(lazy.compute(), eager)


OPERATIONS = {
    "coarsen-sum": lambda d: d.counts.coarsen(frame=10).sum(),
    "coarsen-sum-mean": lambda d: d.counts.coarsen(frame=10).sum().mean(("y", "x")),
    "coarsen-pad": lambda d: d.counts.coarsen(frame=30, boundary="pad").mean(),
    "mean-over-dims": lambda d: d.counts.mean(("y", "x")),
    "std-over-frames": lambda d: d.counts.std("frame", ddof=1),
    "max-min": lambda d: d.counts.max("frame") - d.counts.min("frame"),
    "arithmetic": lambda d: (d.counts - d.background) * 2.5 / (1 + d.background),
    "dataset-arithmetic": lambda d: d.mean("y") + 1,
    "isel": lambda d: d.counts.isel(frame=slice(5, 160, 3), x=2),
    "isel-list": lambda d: d.counts.isel(frame=[3, 150, 7], y=[0, 5]),
    "sel": lambda d: d.counts.sel(frame=slice(1.0, 7.5), y=[1, 4]),
    "where": lambda d: d.counts.where(d.counts > 5),
    "where-other": lambda d: d.counts.where(d.background > 0.5, -1),
    "nan-reductions": lambda d: d.counts.where(d.counts > 4).var("frame"),
    "nan-mean": lambda d: d.counts.where(d.counts > 4).mean("frame"),
    "cumsum": lambda d: d.counts.cumsum("frame"),
    "rolling-mean": lambda d: d.counts.rolling(frame=7).mean(),
    "rolling-centred": lambda d: d.counts.rolling(frame=5, center=True, min_periods=2).sum(),
    "shift-diff": lambda d: d.counts.shift(frame=3) - d.counts.diff("frame"),
    "first-valid": lambda d: d.counts.where(d.counts > 6).groupby_bins("frame", 4).first(),
    "groupby-mean": lambda d: d.counts.groupby(d.frame.astype(int)).mean(),
    "transpose-astype": lambda d: d.counts.transpose("x", "frame", "y").astype("f4"),
    "zeros-like": lambda d: xr.zeros_like(d.counts) + d.counts.isnull(),
}


@pytest.mark.parametrize("name", list(OPERATIONS))
def test_operations_stay_lazy_and_match_numpy(lazy, eager, name):
    op = OPERATIONS[name]
    got = op(lazy)
    arrays = got.data_vars.values() if isinstance(got, xr.Dataset) else [got]
    assert all(isinstance(a.data, xa.Array) for a in arrays), "computed before asked"
    xr.testing.assert_allclose(got.compute(), op(eager))


def test_first_valid_runs_the_chunk_managers_reduction(lazy):
    got = OPERATIONS["first-valid"](lazy)
    assert any("first_last_wrapper" in k or "nanfirst" in k for k in keys_of(got.data))


def test_apply_ufunc_parallelized(lazy, eager):
    # elementwise, with a second (broadcast) argument
    def snr(counts, background):
        return (counts - background) / np.sqrt(counts + 1)

    got = xr.apply_ufunc(snr, lazy.counts, lazy.background, dask="parallelized",
                         output_dtypes=[float])
    assert isinstance(got.data, xa.Array) and got.chunks == lazy.counts.chunks
    xr.testing.assert_allclose(got.compute(), snr(eager.counts, eager.background))

    # a core dimension spanning blocks: rechunked when allowed, xarray's error otherwise
    def spread(v):
        return v.max(axis=-1) - v.min(axis=-1)

    with pytest.raises(ValueError, match="consists of multiple chunks"):
        xr.apply_ufunc(spread, lazy.counts, input_core_dims=[["frame"]], dask="parallelized",
                       output_dtypes=[int])
    got = xr.apply_ufunc(spread, lazy.counts, input_core_dims=[["frame"]], dask="parallelized",
                         output_dtypes=[int], dask_gufunc_kwargs={"allow_rechunk": True})
    xr.testing.assert_equal(got.compute(), eager.counts.max("frame") - eager.counts.min("frame"))

    # two outputs, a new output dimension, vectorize
    lo, hi = xr.apply_ufunc(lambda v: (v.min(-1), v.max(-1)), lazy.counts,
                            input_core_dims=[["x"]], output_core_dims=[[], []],
                            dask="parallelized", output_dtypes=[int, int])
    xr.testing.assert_equal(lo.compute(), eager.counts.min("x"))
    xr.testing.assert_equal(hi.compute(), eager.counts.max("x"))
    got = xr.apply_ufunc(lambda v: np.stack([v.min(-1), v.max(-1)], axis=-1), lazy.counts,
                         input_core_dims=[["x"]], output_core_dims=[["stat"]],
                         dask="parallelized", output_dtypes=[int],
                         dask_gufunc_kwargs={"output_sizes": {"stat": 2}})
    assert got.dims == ("frame", "y", "stat") and got.shape == (FRAMES, NY, 2)
    np.testing.assert_array_equal(got.sel(stat=1).values, eager.counts.max("x").values)
    got = xr.apply_ufunc(lambda v: float(np.median(v)), lazy.counts, input_core_dims=[["x"]],
                         dask="parallelized", output_dtypes=[float], vectorize=True)
    xr.testing.assert_allclose(got.compute(), eager.counts.median("x"))


def test_dataset_chunk_with_from_array_kwargs_and_rechunking(eager, lazy):
    ds = eager.chunk({"frame": 50}, chunked_array_type="xsched",
                     from_array_kwargs={"name": "movie"})
    assert isinstance(ds.counts.data, xa.Array) and ds.counts.chunks[0] == (50,) * 4
    assert all(k.startswith("movie-") for k in keys_of(ds.counts.data))
    xr.testing.assert_identical(ds.compute(), eager)
    again = lazy.chunk({"frame": 40, "x": 4}, chunked_array_type="xsched")  # rechunk
    assert again.counts.chunks == ((40,) * 5, (NY,), (4, 4))
    xr.testing.assert_identical(again.compute(), eager)
    # unified, each is cut wherever either is: blocks of 40 against blocks of 100
    unified = xr.unify_chunks(again.counts, lazy.counts)
    assert unified[0].chunks == unified[1].chunks == ((40, 40, 20, 20, 40, 40), (NY,), (4, 4))
    locked = eager.chunk({"frame": 50}, chunked_array_type="xsched", from_array_kwargs={"lock": True})
    xr.testing.assert_identical(locked.compute(), eager)
    with pytest.raises(TypeError, match="takes name=, lock= and inline_array= only, not \\['asarray'\\]"):
        eager.chunk({"frame": 50}, chunked_array_type="xsched",
                    from_array_kwargs={"asarray": False})


def test_to_netcdf_round_trip_of_an_xsched_backed_dataset(lazy, eager, tmp_path):
    out = lazy.assign(summed=lazy.counts.coarsen(frame=10).sum().rename(frame="bin"),
                      scaled=lazy.counts * 0.5)
    assert isinstance(out.summed.data, xa.Array)
    path = tmp_path / "out.nc"
    out.to_netcdf(path, engine="h5netcdf")
    with xr.open_dataset(path, engine="h5netcdf") as back:
        back = back.load()
    xr.testing.assert_identical(back[["counts", "background"]], eager)
    xr.testing.assert_equal(back.summed, eager.counts.coarsen(frame=10).sum().rename(frame="bin"))
    xr.testing.assert_equal(back.scaled, eager.counts * 0.5)
    with pytest.raises(NotImplementedError, match=r"store\(compute=False\) is not supported"):
        lazy.to_netcdf(tmp_path / "later.nc", engine="h5netcdf", compute=False)


def test_compute_load_and_persist(lazy, eager):
    derived = lazy.counts * 2
    computed = derived.compute()
    assert isinstance(computed.data, np.ndarray) and isinstance(derived.data, xa.Array)
    xr.testing.assert_equal(computed, eager.counts * 2)
    assert derived.values.tolist() == computed.values.tolist()  # .values computes too
    kept = derived.persist()
    assert isinstance(kept.data, xa.Array) and len(kept.data.__xsched_graph__()) == 2
    xr.testing.assert_equal(kept.compute(), computed)
    loaded = lazy.load()  # in place
    assert loaded is lazy and isinstance(lazy.counts.data, np.ndarray)
    xr.testing.assert_identical(lazy, eager)


def test_chunk_manager_methods_and_their_errors():
    m = XschedChunkManager()
    x = xa.from_array(np.arange(24.0).reshape(4, 6), chunks=(2, 3))
    assert m.normalize_chunks({0: 3}, shape=(7, 2)) == ((3, 3, 1), (2,))
    assert m.normalize_chunks(((2, 2), (6,))) == ((2, 2), (6,))
    with pytest.raises(ValueError, match="needs the array's shape"):
        m.normalize_chunks("auto")
    assert m.rechunk(x, (4, 2)).chunks == ((4,), (2, 2, 2))
    assert m.from_array(np.zeros((0, 3)), ("auto", 3)).shape == (0, 3)
    assert m.array_api.full((2, 2), 3.0, chunks=1).compute().tolist() == [[3.0, 3.0], [3.0, 3.0]]
    # xarray's forward fill: a scan with a pre-reduction of each block
    data = np.array([[1.0, np.nan, np.nan, 4.0, np.nan, np.nan]] * 2)
    pushed = m.scan(lambda a, axis, dtype=None: np.fmax.accumulate(a, axis=axis),
                    lambda carry, v: np.where(np.isnan(v), carry, v), np.nan,
                    xa.from_array(data, chunks=(1, 2)), axis=1, dtype=float,
                    method="blelloch", preop=lambda a, axis, keepdims: np.nanmax(a, axis, keepdims=True))
    assert pushed.compute()[0].tolist() == [1.0, 1.0, 1.0, 4.0, 4.0, 4.0]
    with pytest.raises(TypeError, match="takes preop= and method= only"):
        m.scan(np.cumsum, np.add, 0, x, axis=0, out=None)
    got = m.blockwise(np.add, "ij", x, "ij", x.rechunk(2), "ij", dtype=float)
    np.testing.assert_array_equal(got.compute(), 2 * x.compute())
    with pytest.raises(ValueError, match="align_arrays=False the arguments must already share"):
        m.blockwise(np.add, "ij", x, "ij", x.rechunk(2), "ij", dtype=float, align_arrays=False)
    with pytest.raises(NotImplementedError, match="meta=DataFrame"):
        import pandas as pd

        m.map_blocks(np.negative, x, meta=pd.DataFrame())
    assert m.shuffle(xa.arange(6, chunks=3), [[4, 1], [0, 5, 2, 3]], 0, "auto").compute().tolist() == [4, 1, 0, 5, 2, 3]


def test_groupby_shuffle_to_chunks_puts_each_group_in_one_chunk():
    labels = list("abcabcabcabc")
    eager = xr.DataArray(np.arange(24.0).reshape(12, 2), dims=("t", "x")).assign_coords(lab=("t", labels))
    lazy = eager.drop_vars("lab").chunk({"t": 4}, chunked_array_type="xsched").assign_coords(lab=("t", labels))
    shuffled = lazy.groupby("lab").shuffle_to_chunks()
    assert isinstance(shuffled.data, xa.Array) and shuffled.chunks == ((4, 4, 4), (2,))
    order = np.argsort(np.array(labels), kind="stable")
    np.testing.assert_array_equal(shuffled.compute().values, eager.values[order])
    assert shuffled.lab.values.tolist() == sorted(labels)
    xr.testing.assert_allclose(shuffled.groupby("lab").mean().compute(), eager.groupby("lab").mean())


def test_xsched_compute_and_persist_take_xarray_objects_their_variables_together():
    import xsched

    x = xa.from_array(np.arange(12.0).reshape(3, 4), chunks=2)
    da = xr.DataArray(x, dims=("x", "y"), coords={"x": [10, 20, 30], "t": ("y", xa.arange(4, chunks=2))})
    ds = xr.Dataset({"v": da, "w": da * 2})
    a, b, plain = xsched.compute(da, {"ds": ds}, "as is")
    assert isinstance(a.data, np.ndarray) and isinstance(a.coords["t"].data, np.ndarray)
    assert a.values.tolist() == np.arange(12.0).reshape(3, 4).tolist() and a.coords["t"].values.tolist() == [0, 1, 2, 3]
    assert float(b["ds"].w.sum()) == 132.0 and isinstance(b["ds"].v.data, np.ndarray) and plain == "as is"
    assert isinstance(da.data, xa.Array)  # (the object given stays lazy)
    (kept,) = xsched.persist(ds)
    assert isinstance(kept.v.data, xa.Array) and float(kept.w.sum().compute()) == 132.0
    assert xsched.compute(xr.DataArray(np.ones(3)))[0].values.tolist() == [1.0, 1.0, 1.0]  # (nothing lazy: as is)
