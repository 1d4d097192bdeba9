"""xarray on xsched arrays on a real cluster (2 worker processes): a netCDF movie opened
with ``chunked_array_type="xsched"``, its frames summed in bins and averaged over the
image, computed by the workers (each block read from the file by the task that needs it),
and written back to netCDF from blocks computed there. The in-process tests:
tests/unit/test_array_xarray.py."""

from __future__ import annotations

import os

import numpy as np
import pytest

import xsched
import xsched.array as xa

xr = pytest.importorskip("xarray")
pytest.importorskip("h5netcdf")

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(120)]


def test_coarsen_mean_pipeline_runs_on_the_workers(client, tmp_path):
    rng = np.random.default_rng(5)
    counts = rng.poisson(4.0, size=(120, 5, 6)).astype("i4")
    path = tmp_path / "movie.nc"
    xr.Dataset({"counts": (("frame", "y", "x"), counts)},
               coords={"frame": np.arange(120) * 0.1}).to_netcdf(path, engine="h5netcdf")
    eager = xr.open_dataset(path, engine="h5netcdf").load()

    with xr.open_dataset(path, engine="h5netcdf", chunks={"frame": 30},
                         chunked_array_type="xsched") as ds:
        pipeline = ds.counts.coarsen(frame=10).sum().mean(("y", "x"))
        with xsched.get_task_stream(client) as ts:
            got = pipeline.compute()
        xr.testing.assert_allclose(got, eager.counts.coarsen(frame=10).sum().mean(("y", "x")))
        workers = set(client.scheduler_info()["workers"])
        assert ts.data and {r["worker"] for r in ts.data} <= workers
        assert sum(r["status"] == "memory" for r in ts.data) >= 4  # a task per frame block at least

        # the blocks are made in the worker processes, never in this one
        pids = xr.apply_ufunc(lambda b: np.full(b.shape, os.getpid()), ds.counts,
                              dask="parallelized", output_dtypes=[int]).compute()
        seen = set(np.unique(pids.values).tolist())
        assert os.getpid() not in seen and seen <= set(client.run(os.getpid).values())

        # written from blocks computed on the workers, by this process
        out = tmp_path / "binned.nc"
        (ds.counts.coarsen(frame=10).sum() * 2).to_dataset(name="binned").to_netcdf(
            out, engine="h5netcdf")
    with xr.open_dataset(out, engine="h5netcdf") as back:
        xr.testing.assert_equal(back.binned.load(), eager.counts.coarsen(frame=10).sum() * 2)


def test_client_compute_and_persist_of_xarray_objects(client):
    x = xa.from_array(np.arange(12.0).reshape(3, 4), chunks=2)
    da = xr.DataArray(x, dims=("x", "y"), coords={"t": ("y", xa.arange(4, chunks=2))})
    ds = xr.Dataset({"v": da, "w": da * 2})
    computed = client.compute(ds).result()
    assert isinstance(computed, xr.Dataset) and isinstance(computed.w.data, np.ndarray)
    assert float(computed.w.sum()) == 132.0 and computed.t.values.tolist() == [0, 1, 2, 3]
    kept = client.persist(da)
    assert len(xsched.futures_of(kept.data)) == 4 and float(kept.sum().compute()) == 66.0
    a, b = xsched.compute(da, ds)
    assert a.values.sum() == 66.0 and float(b.v.sum()) == 66.0
