"""Findings of a review of the array functions added on 2026-12-04, each against NumPy:
dtypes of set differences, unknown lengths, missing values of every kind, and files kept safe."""

from __future__ import annotations

import os
import random

import numpy as np
import pytest

import xsched
import xsched.array as xa


def test_setdiff1d_keeps_the_first_arrays_dtype():
    x = xa.from_array(np.array([5, 1, 3, 1, 7]), chunks=2)
    r = xa.setdiff1d(x, [1.5, 3.0])
    assert r.dtype == r.compute().dtype == np.setdiff1d(np.array([5, 1, 3, 1, 7]), [1.5, 3.0]).dtype
    with pytest.raises(ValueError, match=r"intersect1d\(return_indices=True\) needs the lengths"):
        xa.intersect1d(x[x > 2], [3], return_indices=True)


def test_push_with_a_limit_on_unknown_lengths_and_other_missing_values():
    x = xa.from_array(np.array([3.0, np.nan, -1, np.nan, np.nan, 5]), chunks=2)
    np.testing.assert_array_equal(xa.push(x[x != -1], 1).compute(), [3.0, 3.0, np.nan, np.nan, 5.0])
    m = xa.from_array(np.arange(12.0).reshape(4, 3), chunks=(2, 3))
    m = m[m[:, 0] > 2]
    assert xa.push(m, 1, axis=1).compute().shape == (3, 3)
    objects = xa.from_array(np.array([1.0, np.nan, None, 4], dtype=object), chunks=1)
    assert xa.push(objects).compute().tolist() == [1.0, 1.0, 1.0, 4]
    times = xa.from_array(np.array(["2020-01-01", "NaT", "NaT"], "M8[D]"), chunks=1)
    got = xa.push(times, n=1).compute()
    assert got[1] == np.datetime64("2020-01-01") and np.isnat(got[2])


def test_partition_of_unknown_or_empty_lengths_and_bad_kth():
    x = xa.from_array(np.array([3.0, -1, 2, 5]), chunks=4)
    assert xa.partition(x[x > 0], 1).compute()[1] == 3.0
    assert xa.partition(xa.zeros((0, 3), chunks=1), 0, axis=0).compute().shape == (0, 3)
    with pytest.raises(TypeError, match="kth is an xsched array"):
        xa.partition(x, xa.from_array(np.array([1, 2]), chunks=2))
    with pytest.raises(TypeError, match="a 1-d sequence of integers"):
        xa.partition(x, np.array([[1, 2]]))


def test_from_delayed_unknown_lengths_and_no_silent_casts():
    piece = xa.from_delayed(xsched.delayed(np.arange)(3), shape=(np.nan,), dtype=int)
    assert np.isnan(piece.shape[0]) and piece.compute().tolist() == [0, 1, 2]
    truncated = xa.from_delayed(xsched.delayed(np.array)([1.7, -2.5]), shape=(2,), dtype=int)
    with pytest.raises(ValueError, match="gave float64 values, but the array was declared int64"):
        truncated.compute()


def test_frompyfunc_calls_once_per_value_and_boxes_0d_results():
    def twice(u):
        r = random.random()
        return r, r
    a, b = xa.compute(*xa.frompyfunc(twice, 1, 2)(xa.arange(4, chunks=2)))
    assert (a == b).all()
    r = xa.frompyfunc(lambda u: [u, u], 1, 1)(xa.asarray(5))
    assert r.shape == () and r.compute() == [5, 5]


def test_asanyarray_and_from_array_keep_a_masked_arrays_mask():
    m = np.ma.masked_array([1, 2, 999, 4], mask=[0, 0, 1, 0], fill_value=-1)
    x = xa.asanyarray(m, chunks=2)
    got = x.compute()
    assert isinstance(got, np.ma.MaskedArray) and got.mask.tolist() == [False, False, True, False]
    assert got.fill_value == -1 and int(x.sum()) == 7 and float(x.mean()) == pytest.approx(7 / 3)
    assert xa.from_array(m, chunks=1).name != xa.from_array(np.ma.masked_array([1, 2, 999, 4]), chunks=1).name


def test_npy_stacks_read_back_writable_and_refuse_what_they_cannot_keep(tmp_path):
    xa.to_npy_stack(str(tmp_path / "a"), xa.from_array(np.arange(6.0), chunks=-1))
    v = xa.from_npy_stack(str(tmp_path / "a")).compute()
    assert not isinstance(v, np.memmap) and v.flags.writeable
    with pytest.raises(ValueError, match="mmap_mode must be 'r', 'c' or None"):
        xa.from_npy_stack(str(tmp_path / "a"), mmap_mode="w+")
    assert os.path.getsize(tmp_path / "a" / "0.npy") > 0
    with pytest.raises(TypeError, match="holds Python objects"):
        xa.to_npy_stack(str(tmp_path / "o"), xa.from_array(np.array([1, "a"], dtype=object), chunks=1))
    m = xa.from_array(np.arange(12.0).reshape(4, 3), chunks=(2, 3))
    with pytest.raises(ValueError, match="to_npy_stack needs the lengths of the array's blocks"):
        xa.to_npy_stack(str(tmp_path / "u"), m[m[:, 0] > 2], axis=1)


@pytest.mark.parametrize("signature", ["(i)(j)->()", "(i),->()", "(i)->"])
def test_malformed_gufunc_signatures_fail_at_decoration(signature):
    with pytest.raises(ValueError, match="cannot read"):
        xa.as_gufunc(signature)
