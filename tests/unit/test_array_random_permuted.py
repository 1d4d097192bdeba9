"""``Generator.permuted`` and ``shuffle`` as NumPy's: every slice along the axis holds its
own values in a new order (or, with ``axis=None``, all the values in a new order), the same
for the same seed; ``shuffle`` reorders the array itself (arrays made from it before keep
their order); NumPy's refusals."""

import numpy as np
import pytest

import xsched.array as xa

A = np.arange(60).reshape(5, 12)


@pytest.mark.parametrize("axis", [0, 1, -1, None])
def test_permuted_keeps_each_slice_and_repeats_with_the_seed(axis):
    x = xa.from_array(A, chunks=(2, 5))
    got = xa.random.default_rng(4).permuted(x, axis=axis).compute()
    again = xa.random.default_rng(4).permuted(x, axis=axis).compute()
    np.testing.assert_array_equal(got, again)
    assert got.shape == A.shape and not np.array_equal(got, A)
    if axis is None:
        assert sorted(got.ravel()) == sorted(A.ravel())
    else:
        np.testing.assert_array_equal(np.sort(got, axis=axis), A)
    if axis == 1:  # (every row shuffled on its own: not all rows alike)
        ranks = np.argsort(got, axis=1) - np.argsort(got, axis=1)[0]
        assert ranks.any()


@pytest.mark.parametrize("axis", [0, 1])
def test_shuffle_reorders_the_array_itself(axis):
    x = xa.from_array(A, chunks=(2, 5))
    before = x + 0
    xa.random.default_rng(1).shuffle(x, axis=axis)
    got = x.compute()
    assert not np.array_equal(got, A)
    np.testing.assert_array_equal(np.sort(got, axis=axis), A)
    other = 1 - axis  # (whole slices move: their values stay together)
    np.testing.assert_array_equal(np.sort(got, axis=other), got)
    np.testing.assert_array_equal(before.compute(), A)


def test_refusals():
    x = xa.from_array(A, chunks=2)
    with pytest.raises(TypeError, match="shuffle reorders an xsched array in place, not a ndarray"):
        xa.random.default_rng(1).shuffle(A)
    with pytest.raises(AttributeError, match="'RandomState' has no attribute 'permuted'"):
        xa.random.RandomState(1).permuted(x)
    with pytest.raises(TypeError, match="permuted\\(out=...\\)"):
        xa.random.default_rng(1).permuted(x, out=np.empty_like(A))
    with pytest.raises(np.exceptions.AxisError):
        xa.random.default_rng(1).permuted(x, axis=2)
