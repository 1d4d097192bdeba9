"""``x[index] = value`` (``assignment.py``) against NumPy's own assignment: any chunking,
slices of any step, ints, a list of positions, boolean masks; scalar, NumPy, broadcast and
xsched values; the Array keeps its blocks, and what was built from it before keeps the old
values."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import xsched.array as xa


@st.composite
def assignments(draw):
    shape = tuple(draw(st.lists(st.integers(1, 8), min_size=1, max_size=3)))
    chunks = tuple(draw(st.integers(1, n)) for n in shape)
    key, listed = [], False
    for n in shape:
        kind = draw(st.sampled_from(["slice", "int", "all", "list"]))
        if kind == "slice":
            key.append(slice(draw(st.one_of(st.none(), st.integers(-n, n))),
                             draw(st.one_of(st.none(), st.integers(-n, n))), draw(st.sampled_from([None, 1, 2, -1, -3]))))
        elif kind == "int":
            key.append(draw(st.integers(-n, n - 1)))
        elif kind == "list" and not listed:
            key.append(sorted(draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=4))))
            listed = True
        else:
            key.append(slice(None))
    return shape, chunks, tuple(key), draw(st.sampled_from(["scalar", "numpy", "xsched", "broadcast"])), \
        draw(st.integers(0, 10**6))


@settings(max_examples=120, deadline=None)
@given(case=assignments())
def test_assignment_is_numpy_s(case):
    shape, chunks, key, kind, seed = case
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 100, shape)
    target = a[key].shape
    if kind == "scalar":
        value = -7
    elif kind == "broadcast":
        value = rng.integers(-50, 0, target[-1:]) if target else -3
    else:
        value = rng.integers(-50, 0, target)
    expected = a.copy()
    expected[key] = value
    x = xa.from_array(a, chunks=chunks)
    before = x + 0
    x[key] = xa.from_array(value, chunks=2) if kind == "xsched" and np.ndim(value) else value
    np.testing.assert_array_equal(x.compute(), expected)
    assert x.chunks == before.chunks
    np.testing.assert_array_equal(before.compute(), a)  # (built before: the old values)


def test_masks_casts_and_refusals():
    a = np.arange(24.0).reshape(4, 6)
    x = xa.from_array(a, chunks=(3, 4))
    x[x > 20] = 0
    x[np.array([True, False, True, False])] = -1  # (a mask of the first axis: whole rows)
    expected = a.copy()
    expected[expected > 20] = 0
    expected[[0, 2]] = -1
    np.testing.assert_array_equal(x.compute(), expected)
    i = xa.from_array(np.arange(6), chunks=4)
    i[1:3] = 2.9  # (cast to the array's dtype, as NumPy casts)
    assert i.dtype == np.int64 and i.compute().tolist() == [0, 2, 2, 3, 4, 5]
    i[None, 4] = 40  # (None adds no axis to assign into, as in NumPy)
    assert i.compute()[4] == 40
    with pytest.raises(ValueError, match=r"could not broadcast input array from shape \(3,\) into shape \(2,\)"):
        i[1:3] = [1, 2, 3]
    with pytest.raises(IndexError, match="index 6 is out of bounds for axis 0 with size 6"):
        i[6] = 1
    with pytest.raises(ValueError, match=r"x\[mask\] = value takes one value.*xa.where"):
        x[x > 3] = np.arange(24.0)
    with pytest.raises(NotImplementedError, match="point by point"):
        x[[0, 1], [2, 3]] = 5
    with pytest.raises(NotImplementedError, match="positions must be in order"):
        i[[3, 5, 1]] = [7, 8, 9]
    with pytest.raises(TypeError, match="value must be a number, a NumPy or an xsched array"):
        i[0] = {"a": 1}
    assert i.compute().tolist() == [0, 2, 2, 3, 40, 5]  # (a refused assignment changes nothing)


def test_numpy_s_leniencies_and_lazy_values(monkeypatch):
    a = np.arange(12.0).reshape(2, 6)
    x = xa.from_array(a, chunks=(1, 4))
    y = xa.from_array(np.arange(4.0), chunks=2)
    monkeypatch.setattr(xa.Array, "compute", lambda *args, **kwargs: pytest.fail("computed when written"))
    monkeypatch.setattr(xa.Array, "__array__", lambda *args, **kwargs: pytest.fail("computed when written"))
    x[0, :] = np.arange(6.0).reshape(1, 6)  # (NumPy drops a value's leading axes of length 1)
    x[1, 1:3] = np.ones((1, 2))
    x[0, 0] = y.sum()  # (xsched 0-d values stay lazy)
    x[x > 10] = y.max()
    x[np.array(1), 5] = -5  # (a 0-d integer array is an int)
    monkeypatch.undo()
    expected = a.copy()
    expected[0, :] = np.arange(6.0)
    expected[1, 1:3] = 1
    expected[0, 0] = 6.0
    expected[expected > 10] = 3.0
    expected[1, 5] = -5
    np.testing.assert_array_equal(x.compute(), expected)
    i = xa.from_array(np.arange(4), chunks=2)
    with pytest.raises(ValueError, match="cannot convert float NaN to integer"):
        i[1] = np.nan


def test_a_slice_s_positions_per_block_are_computed_not_listed():
    import itertools

    from xsched.array.assignment import _in_block

    for n in range(1, 8):
        for start, stop, step in itertools.product(range(-n - 1, n + 2), [*range(-n - 1, n + 2), None],
                                                   (1, 2, 3, -1, -2, 5)):
            positions = range(*slice(start, stop, step).indices(n))
            for lo, hi in itertools.combinations(range(n + 1), 2):
                local, places = _in_block(positions, lo, hi)
                expected = [k for k, p in enumerate(positions) if lo <= p < hi]
                assert list(places) == expected
                assert np.arange(hi - lo)[local].tolist() == [positions[k] - lo for k in expected]
    big = xa.zeros(10**9, chunks=10**8, dtype="i1")  # (a billion positions are never listed)
    big[:] = 1
    big[5::7] = 2
    assert big.numblocks == (10,) and big.dtype == "i1"


@pytest.mark.parametrize("value", [-1, 256, [300, 1], 2**40])
def test_a_python_integer_the_dtype_cannot_hold_is_refused_as_numpy(value):
    x = xa.from_array(np.array([1, 250, 3], "u1"), chunks=2)
    a = np.array([1, 250, 3], "u1")
    with pytest.raises(OverflowError):
        a[:2] = value
    with pytest.raises(OverflowError, match=r"^x\[index\] = value: Python integer -?\d+ out of bounds for uint8"):
        x[:2] = value
    with pytest.raises(OverflowError):
        x[x > 200] = value if np.ndim(value) == 0 else value[0]
    np.testing.assert_array_equal(x.compute(), [1, 250, 3])


def test_numpy_integers_wrap_round_as_numpy_wraps_them():
    x = xa.from_array(np.array([1, 250, 3], "u1"), chunks=2)
    a = np.array([1, 250, 3], "u1")
    x[:2], a[:2] = np.array([300, 1]), np.array([300, 1])
    np.testing.assert_array_equal(x.compute(), a)


@pytest.mark.parametrize("key", [
    lambda a: (a[:, 0, 0] > 5, slice(None)),
    lambda a: (slice(None), a[0, :, 0] > 3),
    lambda a: (Ellipsis, a[0, 0] > 1),
    lambda a: (slice(None), a[0] % 3 == 0),
    lambda a: (a[:, 0, 0] > 5, Ellipsis),
])
@pytest.mark.parametrize("lazy", [False, True])
def test_a_mask_among_whole_axes_as_numpy(key, lazy):
    a = np.arange(24).reshape(2, 3, 4)
    want = a.copy()
    want[key(a)] = -1
    x = xa.from_array(a, chunks=2)
    k = key(a)
    if lazy:
        k = tuple(xa.from_array(i, chunks=1) if isinstance(i, np.ndarray) else i for i in k)
    x[k] = -1
    np.testing.assert_array_equal(x.compute(), want)


def test_lazy_positions_and_a_lazy_mask_beside_an_int_say_what_to_do():
    x = xa.from_array(np.arange(12).reshape(3, 4), chunks=2)
    with pytest.raises(TypeError, match=r"an xsched array of positions is not taken .*np.asarray\(positions\)"):
        x[xa.from_array(np.array([0, 2]), chunks=1)] = 5
    with pytest.raises(TypeError, match=r"an xsched boolean mask goes alone, x\[mask\] = v, or with whole axes"):
        x[xa.from_array(np.array([True, False, True]), chunks=1), 1] = 5
    with pytest.raises(IndexError, match=r"cannot index axes 1 to 1 of an array of shape \(3, 4\)"):
        x[:, np.array([True, False])] = 5


def test_a_mask_of_an_array_of_unknown_lengths_sets_block_by_block():
    a = np.arange(12.0).reshape(4, 3)
    x = xa.from_array(a, chunks=2)
    y = x[x[:, 0] > 2]
    assert np.isnan(y.chunks[0][0])
    y[y > 7] = -1
    want = a[a[:, 0] > 2]
    want[want > 7] = -1
    np.testing.assert_array_equal(y.compute(), want)
    z = x[x[:, 0] > 2]
    with pytest.raises(ValueError, match=r"with a NumPy mask, needs the lengths .*compute_chunk_sizes"):
        z[np.ones((3, 3), bool)] = 0


def test_a_mask_of_unknown_lengths_from_another_array_that_does_not_line_up_fails():
    x = xa.from_array(np.arange(6), chunks=3)
    y = x[x % 2 == 0]  # blocks of 2 and 1
    m = xa.from_array(np.array([5, 0, 0, 9, 9, 0]), chunks=3)
    y[m[m > 0] > 6] = -1  # blocks of 1 and 2: the same length in all, cut otherwise
    with pytest.raises(IndexError, match="does not line up with the array's"):
        y.compute()
    z = x[x % 2 == 0]
    z[(m > 6)[x % 2 == 0]] = -1  # (lined up, though made from another array: as NumPy)
    np.testing.assert_array_equal(z.compute(), np.where(np.array([5, 0, 9]) > 6, -1, [0, 2, 4]))
