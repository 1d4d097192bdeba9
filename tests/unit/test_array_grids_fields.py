"""NumPy creation and indexing a notebook reaches for, equal to NumPy's own values and
dtypes: linspace between arrays (any axis), mgrid / ogrid, and the fields of a structured
dtype (x["a"], x[["a", "b"]], subarray fields adding axes)."""

from __future__ import annotations

import numpy as np
import pytest
from numpy.lib.recfunctions import repack_fields

import xsched.array as xa


def _same(got, expected):
    value = got.compute()
    assert got.shape == value.shape == expected.shape and got.dtype == value.dtype == expected.dtype
    np.testing.assert_array_equal(value, expected)


@pytest.mark.parametrize("start, stop, num, endpoint, axis, dtype, chunks", [
    (np.zeros(2), [1, 10], 3, True, 1, None, (1, 2)),
    (np.arange(12.0).reshape(3, 4) / 7, np.linspace(1, 5, 4), 7, False, 0, None, (2, 2, 3)),
    (np.arange(12.0).reshape(3, 4) / 7, 5.0, 7, True, -1, "i8", 2),
    ([1, 2], [1, 2], 4, True, 0, None, 1),  # (a zero step)
    (np.array([0, 1]), [3, 4], 1, True, 0, None, 1),
    (np.array([0, 1]), [3, 4], 0, True, 0, None, 1),
    (np.array([1e-320, 0.0]), [2e-320, 1.0], 5, True, 0, None, 2),  # (denormal steps: NumPy's other formula)
])
def test_linspace_between_arrays_is_numpys(start, stop, num, endpoint, axis, dtype, chunks):
    expected, step = np.linspace(start, stop, num, endpoint=endpoint, axis=axis, dtype=dtype, retstep=True)
    got, got_step = xa.linspace(start, stop, num, endpoint=endpoint, axis=axis, dtype=dtype, chunks=chunks,
                                retstep=True)
    _same(got, expected)
    np.testing.assert_array_equal(got_step, step)


def test_linspace_axis_is_checked_and_lazy_ends_refused():
    with pytest.raises(np.exceptions.AxisError, match="linspace: axis 1 is out of bounds for an array of dimension 1"):
        xa.linspace(0, 1, 3, axis=1)
    with pytest.raises(np.exceptions.AxisError, match="linspace: axis 2 is out of bounds .* dimension 2"):
        xa.linspace(np.zeros(2), 1, 3, axis=2)
    with pytest.raises(NotImplementedError, match="linspace: the ends are values of this process"):
        xa.linspace(xa.zeros(2), 1, 3)


@pytest.mark.parametrize("key", [np.s_[0:4, 0:3], np.s_[0:1:3j, 0:2], np.s_[-1:1:0.25, 2:5], np.s_[0:5],
                                 np.s_[0:1:5j], np.s_[1:2:1j, 0:3:2], np.s_[3:0:-1, 0:2], np.s_[0:0, 0:3],
                                 np.s_[0.5:3]])
def test_mgrid_and_ogrid_are_numpys(key):
    _same(xa.mgrid[key], np.mgrid[key])
    expected = np.ogrid[key]
    if isinstance(expected, tuple):
        got = xa.ogrid[key]
        assert isinstance(got, tuple) and len(got) == len(expected)
        for g, e in zip(got, expected):
            _same(g, e)
    else:
        _same(xa.ogrid[key], expected)


def test_grids_refuse_what_numpy_cannot_read():
    with pytest.raises(ValueError, match=r"mgrid\[...\]: every slice needs a stop"):
        xa.mgrid[0:]
    with pytest.raises(TypeError, match=r"ogrid\[...\] takes slices \(start:stop:step\), got \(1, 2\)"):
        xa.ogrid[1, 2]
    assert repr(xa.mgrid) == "xsched.array.mgrid"


RECORDS = np.zeros((6, 2), dtype=[("a", "f8"), ("b", "i4"), ("c", "f4", (3,))])
RECORDS["a"] = np.arange(12).reshape(6, 2)
RECORDS["b"] = -np.arange(12).reshape(6, 2)
RECORDS["c"] = np.arange(36).reshape(6, 2, 3)


@pytest.mark.parametrize("fields", ["a", "b", "c", ["a", "b"], ["c", "a"], ["a", "b", "c"]])
def test_fields_of_a_structured_dtype(fields):
    x = xa.from_array(RECORDS, chunks=(4, 1))
    got = x[fields]
    _same(got, repack_fields(RECORDS[fields]))
    assert got.chunks[:2] == x.chunks and got.chunks[2:] == tuple((n,) for n in RECORDS[fields].shape[2:])


def test_field_arithmetic_and_bad_names():
    x = xa.from_array(RECORDS, chunks=(4, 1))
    assert x["a"].sum().compute() == RECORDS["a"].sum()
    with pytest.raises(ValueError, match=r"^x\['z'\]: no field 'z'; the fields are \['a', 'b', 'c'\]"):
        x["z"]
    with pytest.raises(ValueError, match=r"no field 'q'"):
        x[["a", "q"]]
    with pytest.raises(IndexError, match=r"^x\['a'\]: field names index arrays of a structured dtype; this one is "
                                         r"float64"):
        xa.ones(3)["a"]


def test_linspace_chooses_numpys_formula_from_all_the_ends():
    rng = np.random.default_rng(1)
    start, stop = rng.normal(size=8), rng.normal(size=8)
    stop[0] = start[0]  # (one zero step: NumPy divides before it multiplies, for every element)
    for num in (7, 100):
        _same(xa.linspace(start, stop, num, chunks=(7, 1)), np.linspace(start, stop, num))


@pytest.mark.parametrize("kind", [np.int8, np.uint32, np.float16, np.float32, np.longdouble])
def test_arange_and_a_grid_of_numpy_numbers_take_numpys_dtype(kind):
    for args in ((kind(0), kind(3)), (kind(3),), (kind(1), 7, 2)):
        _same(xa.arange(*args, chunks=2), np.arange(*args))
    _same(xa.mgrid[kind(0):kind(3)], np.mgrid[kind(0):kind(3)])
