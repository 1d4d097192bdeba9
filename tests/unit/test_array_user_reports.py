"""Array bugs a user's test found, each compared with NumPy (or what dask does): bincount with
weights chunked otherwise than x, arange into small integer dtypes (NumPy wraps), to_zarr into
a given zarr.Array and its region error, to_hdf5's dict form, and dask's cholesky(lower=)."""

from __future__ import annotations

import re

import h5py
import numpy as np
import pandas as pd
import pytest
import zarr
from hypothesis import given, settings, strategies as st

import xsched.array as xa


def test_bincount_with_weights_chunked_otherwise_than_x():
    iv = np.random.default_rng(0).integers(0, 7, 40)
    w = np.random.default_rng(1).random(40)
    x, weights = xa.from_array(iv, chunks=9), xa.from_array(w, chunks=17)
    np.testing.assert_allclose(np.bincount(x, weights=weights, minlength=10).compute(),
                               np.bincount(iv, weights=w, minlength=10))
    np.testing.assert_allclose(xa.bincount(x, weights=weights).compute(), np.bincount(iv, weights=w))
    with pytest.raises(ValueError, match="weights and list don't have the same length"):
        np.bincount(iv, weights=w[:30])
    with pytest.raises(ValueError, match="weights and list don't have the same length"):
        xa.bincount(x, weights=xa.from_array(w[:30], chunks=17))  # (when built)


@pytest.mark.parametrize("args", [(200,), (0, 300), (250, -10, -3), (127, -300, -7), (0, 100000, 7),
                                  (5, -300, -1), (0, 300, 100), (-128, 200, 255)])
@pytest.mark.parametrize("dtype", ["i1", "u1", "i2", "u2", "i4"])
def test_arange_into_a_small_integer_dtype_wraps_as_numpy(args, dtype):
    try:
        want = np.arange(*args, dtype=dtype)
    except (OverflowError, ValueError) as exc:  # (start or start + step out of the dtype's bounds)
        with pytest.raises(type(exc), match=re.escape(str(exc))):
            xa.arange(*args, dtype=dtype, chunks=30)
        return
    for chunks in ((1, 7, 30) if len(want) < 1000 else (997, 5000)):
        x = xa.arange(*args, dtype=dtype, chunks=chunks)
        got = x.compute()
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
        for cut in (slice(None, None, 3), slice(None, None, -4), slice(5, None, 17)):
            np.testing.assert_array_equal(x[cut].compute(), want[cut])
    if args == (200,) and dtype == "i1":
        assert xa.arange(200, chunks=30, dtype="i1")[127:130].compute().tolist() == [127, -128, -127]


def test_to_zarr_into_a_given_zarr_array(tmp_path):
    x = xa.from_array(np.arange(30.0), chunks=7)
    z = zarr.create_array(str(tmp_path / "a.zarr"), shape=(30,), chunks=(10,), dtype="f8")
    xa.to_zarr(x * 2, z)
    np.testing.assert_array_equal(z[:], np.arange(30.0) * 2)
    xa.to_zarr(x[:5], z, region=(slice(10, 15),))  # (region= as before)
    np.testing.assert_array_equal(z[10:15], np.arange(5.0))
    with pytest.raises(ValueError, match=r"shape \(30,\), the array written \(15,\)"):
        xa.to_zarr(x[:15], z)


def test_to_zarr_region_with_a_step_counts_its_elements(tmp_path):
    path = str(tmp_path / "a.zarr")
    x = xa.from_array(np.arange(30.0), chunks=7)
    xa.to_zarr(x, path)
    assert len(range(*slice(0, 30, 2).indices(30))) == 15
    with pytest.raises(ValueError, match=r"step 2 \(it covers 15 elements\); a step other than 1 is not supported"):
        xa.to_zarr(x[:15], path, region=(slice(0, 30, 2),))
    with pytest.raises(ValueError, match="covers 20 elements; the array written has 15 there"):
        xa.to_zarr(x[:15], path, region=(slice(0, 20),))


def test_to_hdf5_takes_a_dict_of_datasets(tmp_path):
    path = str(tmp_path / "d.h5")
    data = np.arange(10.0)
    x = xa.from_array(data, chunks=4)
    xa.to_hdf5(path, {"/a": x, "/b": x * 2}, compression="gzip")
    with h5py.File(path, "r") as f:
        np.testing.assert_array_equal(f["/a"][:], data)
        np.testing.assert_array_equal(f["/b"][:], data * 2)
        assert f["/b"].compression == "gzip"
    with pytest.raises(TypeError, match="no array given"):
        xa.to_hdf5(path, "/c")


@pytest.mark.parametrize("chunks", [-1, 1])  # (one block per matrix, and one matrix over blocks)
def test_cholesky_takes_dasks_lower_keyword(chunks):
    m = np.array([[4.0, 2.0, 0.0], [2.0, 5.0, 2.0], [0.0, 2.0, 5.0]])
    a = xa.from_array(m, chunks=chunks)
    lower, upper = np.linalg.cholesky(m), np.linalg.cholesky(m, upper=True)
    np.testing.assert_allclose(xa.linalg.cholesky(a).compute(), lower)  # (NumPy's default)
    np.testing.assert_allclose(xa.linalg.cholesky(a, upper=True).compute(), upper)
    np.testing.assert_allclose(xa.linalg.cholesky(a, lower=True).compute(), lower)
    np.testing.assert_allclose(xa.linalg.cholesky(a, lower=False).compute(), upper)
    with pytest.raises(ValueError, match="upper=True and lower=True"):
        xa.linalg.cholesky(a, upper=True, lower=True)


# --------------------------------------------------------------------------- arange with a fractional start or step

@settings(max_examples=150, deadline=None)
@given(start=st.floats(-50, 50), step=st.floats(0.05, 5), count=st.integers(0, 60), down=st.booleans(),
       dtype=st.sampled_from(["i8", "i4", "i2", "u8", "u1", "f8", "f4", "f2"]), chunks=st.integers(1, 7),
       cut=st.sampled_from([None, 2, 3, -1, -4]))
def test_arange_fractional_into_any_dtype_is_numpys(start, step, count, down, dtype, chunks, cut):
    """NumPy fills from the first two values in the dtype (``np.arange(0.5, 10, 1.5, dtype=int)``
    is 0, 2, 4, ...): every block, and strided slices made alone, give the same numbers."""
    step = -step if down else step
    stop = start + step * count
    try:
        expected = np.arange(start, stop, step, dtype=dtype)
    except (ValueError, OverflowError) as e:  # (NumPy's refusals, e.g. a negative start into uint)
        with pytest.raises(type(e)):
            xa.arange(start, stop, step, dtype=dtype, chunks=chunks).compute()
        return
    x = xa.arange(start, stop, step, dtype=dtype, chunks=chunks)
    got = x.compute()
    assert got.dtype == expected.dtype and np.array_equal(got, expected, equal_nan=True)
    if cut is not None:
        assert np.array_equal(x[::cut].compute(), expected[::cut], equal_nan=True)


def test_arange_of_an_unsigned_dtype_going_down_past_zero_wraps_as_numpys():
    """Integral start and step into uint64, going below zero: NumPy wraps from its first two
    values; each block started from its own (negative) first value, an OverflowError."""
    for args in [(50, -153, -7), (48, -120, -6), (3, -3, -1)]:
        expected = np.arange(*args, dtype="u8")
        assert xa.arange(*args, dtype="u8", chunks=3).compute().tolist() == expected.tolist()
        assert xa.arange(*args, dtype="u8", chunks=3)[::2].compute().tolist() == expected[::2].tolist()


def test_to_hdf5_refuses_to_replace_the_dataset_it_reads(tmp_path):
    """The dataset was deleted before its blocks were read: the file then held the new
    dataset's fill plus 100 everywhere, silently."""
    path = str(tmp_path / "self.h5")
    with h5py.File(path, "w") as f:
        f.create_dataset("x", data=np.arange(6.0))
    with h5py.File(path, "r") as f:
        x = xa.from_array(f["x"], chunks=3)
    with pytest.raises(ValueError, match=r"reads dataset '/?x' of .*, which this call replaces"):
        xa.to_hdf5(path, "/x", x + 100)
    with pytest.raises(ValueError, match="which this call replaces"):
        xa.to_hdf5(path, {"/x": x * 0, "/y": x})  # (another array of the same call reads it)
    xa.to_hdf5(path, "/y", x + 100)
    with h5py.File(path, "r") as f:
        assert f["x"][:].tolist() == list(range(6)) and f["y"][:].tolist() == [100.0 + i for i in range(6)]


def test_a_zero_d_integer_array_indexes_and_assigns_as_the_int_it_holds():
    a = np.arange(20.0).reshape(4, 5)
    x = xa.from_array(a, chunks=2)
    assert x[np.array(2)].compute().tolist() == a[np.array(2)].tolist()
    assert x[np.array(1), np.array([0, 2])].compute().tolist() == a[np.array(1), np.array([0, 2])].tolist()
    x[np.array(3)] = -1
    a[np.array(3)] = -1
    assert (x.compute() == a).all()


def test_assignment_by_a_boolean_list_and_a_complex_value_into_floats_as_numpy():
    a = np.arange(20.0).reshape(4, 5)
    x = xa.from_array(a, chunks=2)
    x[[True, False, True, False]] = 1  # (the list was read as having a .shape)
    a[[True, False, True, False]] = 1
    assert (x.compute() == a).all()
    with pytest.raises(TypeError, match="complex.*imaginary part would be lost.*astype"):
        x[0, 0] = 1 + 2j


def test_histogram_weights_cut_unlike_the_values():
    values, weights = np.arange(10.0), np.linspace(0, 1, 10)
    counts, edges = xa.histogram(xa.from_array(values, chunks=5), bins=[0, 5, 10],
                                 weights=xa.from_array(weights, chunks=2))
    assert np.allclose(counts.compute(), np.histogram(values, bins=[0, 5, 10], weights=weights)[0])


def _counted(values, dtype):
    """``values`` as an xsched array whose blocks count themselves into the list returned
    when computed (an expression built on it must not add to that count)."""
    calls: list = []

    def counted(block):
        calls.append(block.shape)
        return block

    return xa.from_array(values, chunks=2).map_blocks(counted, dtype=dtype), calls


def test_asarray_of_a_list_of_xsched_arrays_stacks_them_without_computing():
    x, calls = _counted(np.arange(12).reshape(3, 4), int)
    before = len(calls)
    y = xa.asarray([x[0], x[1], [0, 0, 0, 0]])
    assert len(calls) == before and isinstance(y, xa.Array) and y.shape == (3, 4)
    assert y.compute().tolist() == [[0, 1, 2, 3], [4, 5, 6, 7], [0, 0, 0, 0]]
    assert xa.array([[x[2]]], dtype=float).compute().tolist() == [[[8.0, 9.0, 10.0, 11.0]]]


def test_np_vecdot_runs_on_xsched_arrays():
    a = np.arange(12.0).reshape(3, 4)
    x = xa.from_array(a, chunks=2)
    assert np.allclose(np.vecdot(x, x).compute(), np.vecdot(a, a))
    assert np.allclose(np.vecdot(x, x, axis=0).compute(), np.vecdot(a, a, axis=0))


def test_an_ellipsis_between_picked_entries_puts_their_axes_first_as_numpy():
    a = np.arange(120.0).reshape(4, 5, 6)
    x = xa.from_array(a, chunks=2)
    for index in [(slice(None), [0, 1], ..., 2), (slice(None), [0, 1], ..., [2, 3]), (slice(None), [0, 1], 2, ...),
                  (..., [0, 1], 2)]:
        got = x[index]
        assert got.shape == a[index].shape and np.array_equal(got.compute(), a[index])


def test_full_of_a_lazy_scalar_stays_lazy():
    x, calls = _counted(np.arange(12.0).reshape(3, 4), float)
    before = len(calls)
    y = xa.full((2, 3), x.max(), chunks=2)
    assert len(calls) == before and y.dtype == np.float64
    assert y.compute().tolist() == [[11.0] * 3] * 2
    assert xa.full((2, 2), x[0, 1], dtype=int).compute().tolist() == [[1, 1], [1, 1]]


def test_concatenate_and_stack_of_two_arrays_not_in_a_list_say_to_pass_a_list():
    x = xa.ones((2, 2), chunks=1)
    for join in (xa.concatenate, xa.stack):
        with pytest.raises(TypeError, match=r"takes a list \(or tuple\) of arrays, then the axis"):
            join(x, x)


def test_a_lazy_shape_is_refused_naming_the_fix():
    n = xa.from_array(np.arange(12).reshape(3, 4), chunks=2)[0, 3]
    for make in (lambda: xa.ones(n), lambda: xa.zeros((2, n)), lambda: xa.empty(n)):
        with pytest.raises(TypeError, match=r"a shape must be known numbers.*int\(n.compute\(\)\)"):
            make()


def test_a_dataframe_scalar_is_an_array_operand_and_a_delayed_is_refused_naming_the_way():
    import xsched.dataframe as xd
    from xsched import delayed

    total = xd.from_pandas(pd.Series(np.arange(10)), npartitions=3).sum()
    x = xa.arange(12, chunks=4)
    want = np.arange(12) + 45
    for got in (x + total, total + x, np.add(x, total), xa.where(x > 5, x, total)):
        assert isinstance(got, xa.Array)
    assert (x + total).compute().tolist() == want.tolist() == (total + x).compute().tolist()
    assert xa.where(x > 5, x, total).compute().tolist() == np.where(np.arange(12) > 5, np.arange(12), 45).tolist()
    assert int((total + x.sum()).compute()) == 45 + 66
    five = delayed(lambda: 5)()
    assert (total + five).compute() == 50 == (five + total).compute()
    with pytest.raises(TypeError, match=r"not an array operand.*xa.from_delayed\(value, shape, dtype\)"):
        x + five


def test_asarray_of_a_dataframe_is_its_values_lazily_and_from_array_refuses_it():
    import xsched.dataframe as xd

    pdf = pd.DataFrame({"a": np.arange(10), "b": np.arange(10) * 0.5})
    df = xd.from_pandas(pdf, npartitions=3)
    column = xa.asarray(df.a)
    assert isinstance(column, xa.Array) and np.isnan(column.shape[0])
    assert column.compute().tolist() == list(range(10))
    assert np.array_equal(xa.asarray(df).compute(), pdf.to_numpy())
    with pytest.raises(TypeError, match=r"not a lazy DataFrame; a dataframe's values are x.to_xsched_array\(\)"):
        xa.from_array(df)


def test_a_series_is_no_array_operand_and_asarray_with_chunks_counts_its_rows():
    import xsched.dataframe as xd

    df = xd.from_pandas(pd.DataFrame({"a": np.arange(10)}), npartitions=3)
    with pytest.raises(TypeError, match="a lazy Series is not an array operand"):
        xa.arange(3, chunks=2) + df.a
    column = xa.asarray(df.a, chunks=4)
    assert column.chunks == ((4, 4, 2),) and column.compute().tolist() == list(range(10))
