"""One matrix cut into blocks through its singular values (``singular.py``): ``svdvals``,
``pinv``, ``matrix_rank`` and the 2, -2 and nuclear norms are NumPy's, however the matrix
is cut, tall or wide; NumPy's dtypes and keyword rules."""

from __future__ import annotations

import numpy as np
import pytest

import xsched.array as xa

CASES = [((7, 4), (3, 2)), ((4, 7), (2, 3)), ((6, 6), 2), ((5, 5), (2, 5))]


def _rank_deficient(shape):
    a = np.random.default_rng(0).random(shape)
    a[:, -1] = a[:, 0]
    a[-1] = a[0]
    return a


@pytest.mark.parametrize("shape, chunks", CASES)
def test_singular_values_norms_and_rank_are_numpys(shape, chunks):
    a = _rank_deficient(shape)
    x = xa.from_array(a, chunks=chunks)
    np.testing.assert_allclose(np.linalg.svdvals(x).compute(), np.linalg.svdvals(a), atol=1e-12)
    for order in (2, -2, "nuc"):
        for keepdims in (False, True):
            got = np.linalg.matrix_norm(x, ord=order, keepdims=keepdims).compute()
            want = np.linalg.matrix_norm(a, ord=order, keepdims=keepdims)
            assert got.shape == want.shape and np.allclose(got, want), order
        np.testing.assert_allclose(np.linalg.norm(x, ord=order).compute(), np.linalg.norm(a, ord=order), atol=1e-12)
    assert int(np.linalg.matrix_rank(x).compute()) == np.linalg.matrix_rank(a) < min(shape)
    for kwargs in (dict(tol=0.5), dict(rtol=0.1)):
        assert int(np.linalg.matrix_rank(x, **kwargs).compute()) == np.linalg.matrix_rank(a, **kwargs)


@pytest.mark.parametrize("shape, chunks", CASES)
@pytest.mark.parametrize("kwargs", [{}, dict(rcond=0.01), dict(rtol=None), dict(rtol=0.2)])
def test_pinv_is_numpys_chunked_as_the_transpose(shape, chunks, kwargs):
    a = _rank_deficient(shape)
    x = xa.from_array(a, chunks=chunks)
    got = np.linalg.pinv(x, **kwargs)
    assert got.shape == shape[::-1] and got.chunks == x.chunks[::-1]
    np.testing.assert_allclose(got.compute(), np.linalg.pinv(a, **kwargs), atol=1e-8)


def test_integer_matrices_get_numpys_dtypes():
    a = np.arange(16).reshape(4, 4)
    x = xa.from_array(a, chunks=2)
    assert np.linalg.pinv(x).dtype == np.linalg.pinv(a).dtype
    assert np.linalg.svdvals(x).dtype == np.linalg.svdvals(a).dtype
    assert np.linalg.matrix_rank(x).dtype == np.asarray(np.linalg.matrix_rank(a)).dtype
    assert int(np.linalg.matrix_rank(x).compute()) == np.linalg.matrix_rank(a)


def test_keyword_mistakes_are_refused_as_numpy_and_tolerances_are_one_number():
    x = xa.from_array(np.eye(4), chunks=2)
    with pytest.raises(ValueError, match="`rtol` and `rcond` can't be both set"):
        np.linalg.pinv(x, rcond=0.1, rtol=0.1)
    with pytest.raises(ValueError, match="`tol` and `rtol` can't be both set"):
        np.linalg.matrix_rank(x, tol=0.1, rtol=0.1)
    with pytest.raises(ValueError, match=r"^matrix_rank: tol of one matrix cut into blocks is one number"):
        np.linalg.matrix_rank(x, tol=np.ones(2))
    stack = xa.from_array(np.stack([np.eye(4)] * 2), chunks=(1, 2, 2))  # (a stack of cut matrices: stacked.py's rule)
    with pytest.raises(ValueError, match=r"^pinv: each matrix must be in one chunk"):
        np.linalg.pinv(stack)


def test_an_empty_matrix_cut_into_blocks_names_the_rechunk_instead_of_failing_in_a_task():
    x = xa.from_array(np.zeros((4, 0)), chunks=2)
    with pytest.raises(ValueError, match=r"each matrix must be in one chunk.*rechunk first"):
        np.linalg.pinv(x)
    assert np.linalg.pinv(x.rechunk(-1)).compute().shape == np.linalg.pinv(np.zeros((4, 0))).shape
