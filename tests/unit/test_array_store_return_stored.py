"""``store(return_stored=True)``: the arrays it returns read back what was written, eagerly
(a NumPy target's region copied, another target read by tasks) or lazily (each block read
right after its own write, so computing them writes); a target that cannot travel to those
tasks is refused before anything is written."""

from __future__ import annotations

import numpy as np
import pytest

import xsched.array as xa

DATA = np.arange(12.0).reshape(3, 4)


def source():
    return xa.from_array(DATA, chunks=(2, 3))


def test_a_numpy_target_gives_its_region_as_written_in_the_sources_chunks():
    out = np.zeros((5, 4))
    (back,) = xa.store(source() * 2, out, regions=(slice(1, 4),), return_stored=True)
    assert back.chunks == ((2, 1), (3, 1))
    out[:] = -1  # (a copy: what was stored, not the target's later state)
    np.testing.assert_array_equal(back.compute(), DATA * 2)


@pytest.mark.parametrize("compute", [True, False])
def test_a_zarr_target_is_read_back_after_the_writes(tmp_path, compute):
    zarr = pytest.importorskip("zarr")
    z = zarr.open_array(str(tmp_path / "z.zarr"), mode="w", shape=(3, 4), chunks=(3, 2), dtype="f8")
    (back,) = xa.store(source(), z, compute=compute, return_stored=True)
    assert isinstance(back, xa.Array)
    written_before = float(np.asarray(z[...]).sum())
    assert written_before == (0.0 if not compute else DATA.sum())  # (lazy: nothing written until computed)
    np.testing.assert_array_equal(back.compute(), DATA)
    np.testing.assert_array_equal(z[...], DATA)


def test_the_method_returns_the_one_array_and_without_return_stored_nothing_changes(tmp_path):
    out = np.zeros((3, 4))
    back = source().store(out, return_stored=True)
    assert isinstance(back, xa.Array)
    np.testing.assert_array_equal(back.compute(), DATA)
    assert xa.store(source(), out) is None


def test_a_target_that_cannot_travel_is_refused_before_anything_is_written(tmp_path):
    h5py = pytest.importorskip("h5py")
    with h5py.File(tmp_path / "x.h5", "w") as f:
        ds = f.create_dataset("x", shape=(3, 4), dtype="f8")
        with pytest.raises(TypeError, match=r"^store\(return_stored=True\): target 0 \(Dataset\) cannot be sent "
                                            r"to the tasks that would read it back .*store without return_stored"):
            xa.store(source(), ds, return_stored=True)
        assert ds[...].sum() == 0


@pytest.mark.parametrize("compute", [True, False])
def test_to_zarr_return_stored_reads_back_new_region_and_appended_writes(tmp_path, compute):
    zarr = pytest.importorskip("zarr")
    path = str(tmp_path / "out.zarr")
    back = xa.to_zarr(source() * 2, path, compute=compute, return_stored=True)
    assert isinstance(back, xa.Array) and back.chunks == ((2, 1), (3, 1)) and back.dtype == DATA.dtype
    stored = zarr.open_array(path, mode="r")
    assert (stored[:] == 0).all() != compute  # (lazy: nothing written until the array is computed)
    np.testing.assert_array_equal(back.compute(), DATA * 2)
    np.testing.assert_array_equal(stored[:], DATA * 2)
    region = xa.to_zarr(xa.ones((1, 4), chunks=2, dtype="f4"), path, region=(slice(1, 2),), compute=compute,
                        return_stored=True)
    assert region.dtype == np.float64  # (the stored array's, into which the float32 ones were cast)
    np.testing.assert_array_equal(region.compute(), np.ones((1, 4)))
    grown = xa.to_zarr(source()[:1], path, append_dim=0, compute=compute, return_stored=True)
    np.testing.assert_array_equal(grown.compute(), DATA[:1])
    np.testing.assert_array_equal(zarr.open_array(path, mode="r")[3:], DATA[:1])


def test_to_zarr_return_stored_of_a_smaller_stored_dtype_reads_the_stored_values(tmp_path):
    zarr = pytest.importorskip("zarr")
    z = zarr.create_array(str(tmp_path / "f.zarr"), shape=DATA.shape, chunks=(2, 2), dtype="f4")
    back = xa.to_zarr(source() / 3, z, return_stored=True)
    assert back.dtype == np.float32 and back.shape == DATA.shape
    np.testing.assert_array_equal(back.compute(), (DATA / 3).astype("f4"))
