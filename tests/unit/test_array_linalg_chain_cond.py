"""numpy.linalg's multi_dot (the cheapest order of a chain of products, vectors at the ends)
and cond (every norm NumPy takes, stacks, one matrix cut into blocks through its singular
values), equal to NumPy's, reached as xa.linalg.X and through numpy.linalg.X."""

from __future__ import annotations

import numpy as np
import pytest

import xsched.array as xa
from xsched.array.linalg import _chain_order

RNG = np.random.default_rng(1)
A, B, C, D = RNG.random((10, 30)), RNG.random((30, 5)), RNG.random((5, 60)), RNG.random((60, 7))
V, W = RNG.random(10), RNG.random(7)


@pytest.mark.parametrize("chain", [[A, B, C, D], [V, A, B, C, D], [A, B, C, D, W], [V, A, B, C, D, W],
                                   [A, B], [V, A], [A, B, C], [V, A, B]])
def test_multi_dot_is_numpys(chain):
    expected = np.linalg.multi_dot(chain)
    got = xa.linalg.multi_dot([xa.from_array(a, chunks=4) for a in chain])
    assert got.shape == expected.shape
    np.testing.assert_allclose(got.compute(), expected)
    through_numpy = np.linalg.multi_dot([xa.from_array(chain[0], chunks=4), *chain[1:]])
    assert isinstance(through_numpy, xa.Array)
    np.testing.assert_allclose(through_numpy.compute(), expected)


def test_the_chain_is_split_where_it_costs_least():
    # (10x30)(30x5)(5x60): (AB)C costs 10*30*5 + 10*5*60 = 4,500; A(BC) 30*5*60 + 10*30*60 = 27,000
    assert _chain_order([10, 30, 5, 60])[0][2] == 1
    # (50x10)(10x40)(40x30)(30x5): A(B(CD)) is cheapest (10,500 products)
    split = _chain_order([50, 10, 40, 30, 5])
    assert (split[0][3], split[1][3], split[2][3]) == (0, 1, 2)


def test_multi_dot_refuses_what_numpy_refuses():
    with pytest.raises(ValueError, match="multi_dot: Expecting at least two arrays"):
        xa.linalg.multi_dot([A])
    with pytest.raises(np.linalg.LinAlgError, match="multi_dot: 3-dimensional array given"):
        xa.linalg.multi_dot([A, B, np.ones((5, 2, 2))])
    with pytest.raises(TypeError, match="multi_dot: out= is not offered"):
        xa.linalg.multi_dot([A, B], out=np.empty((10, 5)))


STACK = RNG.random((5, 3, 3))
SINGULAR = np.array([[1.0, 2.0], [2.0, 4.0]])


@pytest.mark.parametrize("p", [None, 2, -2, "fro", "nuc", 1, -1, np.inf, -np.inf])
def test_cond_of_stacks_and_singular_matrices_is_numpys(p):
    np.testing.assert_allclose(xa.linalg.cond(xa.from_array(STACK, chunks=(2, 3, 3)), p).compute(),
                               np.linalg.cond(STACK, p), rtol=1e-12)
    if p != "nuc":  # (NumPy's own SVD fails to converge there)
        assert xa.linalg.cond(xa.from_array(SINGULAR, chunks=-1), p).compute() == np.linalg.cond(SINGULAR, p)


@pytest.mark.parametrize("p", [None, 2, -2])
def test_cond_of_one_matrix_cut_into_blocks(p):
    tall = RNG.random((40, 6))
    got = xa.linalg.cond(xa.from_array(tall, chunks=(10, 3)), p)
    np.testing.assert_allclose(float(got), np.linalg.cond(tall, p), rtol=1e-10)
    assert np.linalg.cond(xa.from_array(tall, chunks=(10, 3)), p).dtype == np.float64


def test_cond_refuses_when_built():
    with pytest.raises(ValueError, match=r"cond: each matrix must be in one chunk.*x.rechunk\(\{-2: -1, -1: -1\}\)"):
        xa.linalg.cond(xa.from_array(RNG.random((40, 6)), chunks=(10, 3)), "fro")
    with pytest.raises(np.linalg.LinAlgError, match="cond: 1-dimensional array given"):
        xa.linalg.cond(xa.ones(3), "fro")
    with pytest.raises(ValueError, match="Invalid norm order for matrices"):
        xa.linalg.cond(xa.ones((3, 3)), "bad")


@pytest.mark.parametrize("p", [None, 2, -2])
def test_cond_of_a_zero_matrix_cut_into_blocks_is_inf_quietly(p):
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = xa.linalg.cond(xa.from_array(np.zeros((3, 3)), chunks=2), p).compute()
    assert got == np.inf == np.linalg.cond(np.zeros((3, 3)), p)
