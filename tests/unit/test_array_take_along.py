"""``take_along_axis``, ``lexsort``, ``array_equal`` / ``array_equiv`` and NumPy's ``kind=``
of the sorts, against NumPy on random shapes and chunkings."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import xsched.array as xa


def _chunks(draw, shape):
    return tuple(draw(st.integers(1, max(n, 1))) for n in shape)


@st.composite
def arrays(draw):
    shape = tuple(draw(st.lists(st.integers(1, 7), min_size=1, max_size=3)))
    values = np.random.default_rng(draw(st.integers(0, 10**6))).integers(0, 4, shape)
    return values, _chunks(draw, shape), draw(st.integers(-len(shape), len(shape) - 1))


@settings(max_examples=80, deadline=None)
@given(case=arrays(), how=st.sampled_from(["argsort", "argpartition", "random"]))
def test_take_along_axis_is_numpy_s(case, how):
    values, chunks, axis = case
    x = xa.from_array(values, chunks=chunks)
    if how == "argsort":
        indices, expected_indices = xa.argsort(x, axis=axis), np.argsort(values, axis=axis, kind="stable")
    elif how == "argpartition":
        indices = xa.argpartition(x, 0, axis=axis)
        expected_indices = indices.compute()  # (NumPy's own partition: any order past the kth is valid)
    else:
        rng = np.random.default_rng(values.size)
        shape = list(values.shape)
        shape[axis] = 3
        expected_indices = rng.integers(-values.shape[axis], values.shape[axis], shape)
        indices = xa.from_array(expected_indices, chunks=tuple(min(c, n) for c, n in zip(chunks, shape)))
    got = xa.take_along_axis(x, indices, axis=axis).compute()
    np.testing.assert_array_equal(got, np.take_along_axis(values, expected_indices, axis=axis))


def test_take_along_axis_flattened_broadcast_and_refusals():
    values = np.arange(24).reshape(4, 6)[:, ::-1]
    x = xa.from_array(values, chunks=(3, 4))
    flat = xa.argsort(x, axis=None)
    np.testing.assert_array_equal(xa.take_along_axis(x, flat, axis=None).compute(), np.sort(values, axis=None))
    column = xa.from_array(np.array([[0], [5], [2], [1]]), chunks=2)  # (one index per row, broadcast)
    np.testing.assert_array_equal(xa.take_along_axis(x, column, axis=1).compute(),
                                  np.take_along_axis(values, column.compute(), axis=1))
    by_default = np.take_along_axis(x, xa.argsort(x, axis=-1))  # (the last axis, as NumPy's default)
    np.testing.assert_array_equal(by_default.compute(), np.sort(values, axis=-1))
    with pytest.raises(ValueError, match=r"indices of shape \(6,\) and the array of shape \(4, 6\)"):
        xa.take_along_axis(x, xa.ones(6, dtype=int, chunks=2), axis=1)
    with pytest.raises(TypeError, match="indices must be integers"):
        xa.take_along_axis(x, xa.ones((4, 1), chunks=2), axis=1)


def test_lexsort_sort_kinds_and_array_equal_as_numpy():
    rng = np.random.default_rng(3)
    a, b = rng.integers(0, 3, 20), rng.integers(0, 3, 20)
    xa_, xb = xa.from_array(a, chunks=6), xa.from_array(b, chunks=7)
    np.testing.assert_array_equal(xa.lexsort([xa_, xb]).compute(), np.lexsort([a, b]))
    np.testing.assert_array_equal(xa.lexsort(xa.stack([xa_, xb])).compute(), np.lexsort(np.stack([a, b])))
    for kind in ("quicksort", "mergesort", "heapsort", "stable"):
        np.testing.assert_array_equal(np.argsort(xa_, kind=kind).compute(), np.argsort(a, kind="stable"))
        np.testing.assert_array_equal(np.sort(xb, kind=kind).compute(), np.sort(b))
    with pytest.raises(ValueError, match="kind must be one of"):
        xa.sort(xa_, kind="bubble")
    f = np.array([1.0, np.nan, 3.0])
    xf = xa.from_array(f, chunks=2)
    for other in (f, f[:2], np.array([1.0, np.nan, 4.0])):
        for equal_nan in (False, True):
            assert bool(xa.array_equal(xf, other, equal_nan=equal_nan)) == np.array_equal(f, other, equal_nan=equal_nan)
    assert bool(np.array_equal(xf, xf, equal_nan=True)) is True
    grid = np.array([[1, 2], [1, 2]])
    for other in ([1, 2], [1, 3], [1, 2, 3]):
        assert bool(xa.array_equiv(xa.from_array(grid, chunks=1), other)) == np.array_equiv(grid, other)


def test_lexsort_of_a_list_stays_lazy_and_unknown_lengths_are_named(monkeypatch):
    a, b = xa.from_array(np.array([2, 1, 2]), chunks=2), xa.from_array(np.array([1, 1, 0]), chunks=2)
    monkeypatch.setattr(xa.Array, "__array__", lambda *args, **kwargs: pytest.fail("computed when built"))
    keys = xa.lexsort([a, b])
    monkeypatch.undo()
    np.testing.assert_array_equal(keys.compute(), np.lexsort([[2, 1, 2], [1, 1, 0]]))
    y = xa.from_array(np.arange(-3.0, 3.0), chunks=2)
    z = y[y > 0]
    for check in (xa.array_equal, xa.array_equiv):
        with pytest.raises(ValueError, match="compute_chunk_sizes"):
            check(z, z)
