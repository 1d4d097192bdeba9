"""One matrix spread over square blocks (xsched/array/blocked.py): LU with pivoting over whole
columns, triangular solves, Cholesky, and solve / inv / det / slogdet from them, each against
scipy and NumPy on random sizes, chunkings and dtypes; svd_compressed against NumPy's SVD.
On a real cluster: tests/cluster/test_array_api_cluster.py."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import xsched.array as xa
from xsched.array import blocked

sl = pytest.importorskip("scipy.linalg")

DTYPES = ["f8", "f4", "c16", "i8"]


def _matrix(rng: np.random.Generator, n: int, dtype: str) -> np.ndarray:
    if dtype == "c16":
        return rng.normal(size=(n, n)) + 1j * rng.normal(size=(n, n))
    if dtype == "i8":
        return rng.integers(-5, 6, size=(n, n))
    return rng.normal(size=(n, n)).astype(dtype)


def _tol(dtype: str) -> dict:
    return dict(rtol=1e-3, atol=1e-3) if dtype == "f4" else dict(rtol=1e-7, atol=1e-9)


def _sizes(draw: st.DrawFn) -> tuple[int, tuple]:
    """A size and square chunks along it, evenly cut or not."""
    n = draw(st.integers(1, 12))
    cuts = sorted(draw(st.sets(st.integers(1, n - 1), max_size=4))) if n > 1 else []
    edges = [0, *cuts, n]
    return n, tuple(b - a for a, b in zip(edges, edges[1:]))


def _case(data: st.DataObject) -> tuple:
    """A size, square chunks, a dtype, a generator and a random matrix of them."""
    n, chunks = _sizes(data.draw)
    dtype = data.draw(st.sampled_from(DTYPES))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    return n, chunks, dtype, rng, _matrix(rng, n, dtype)


@settings(max_examples=60, deadline=None, database=None)
@given(st.data())
def test_lu_is_scipys_lu_and_the_solves_are_numpys(data):
    n, chunks, dtype, rng, a = _case(data)
    x = xa.from_array(a, chunks=(chunks, chunks))
    tol = _tol(dtype)
    p, l, u = xa.linalg.lu(x)
    assert p.chunks == l.chunks == u.chunks == x.chunks
    want = sl.lu(a)
    for got, expected in zip((p, l, u), want):
        # (P is real, as scipy's; scipy's own P of a 1 x 1 complex matrix is complex)
        assert got.dtype == (expected.real.dtype if got is p else expected.dtype)
        np.testing.assert_allclose(got.compute(), expected, **tol)
    np.testing.assert_allclose((p @ l @ u).compute(), a, **tol)
    sign, logdet = xa.linalg.slogdet(x)
    want_sign, want_logdet = np.linalg.slogdet(a)
    assert (sign.dtype, logdet.dtype) == (want_sign.dtype, want_logdet.dtype)
    if np.linalg.matrix_rank(a) < n:
        # A singular matrix (of integers, sometimes): round-off decides whether a pivot is
        # exactly 0, on either side, so one may say sign 0 and the other +-1 beside a log|det|
        # far below that of any entry. Both are a determinant of 0, up to the Hadamard bound.
        bound = float(np.prod(np.linalg.norm(a, axis=1))) or 1.0
        assert abs(xa.linalg.det(x).compute()) <= 1e-9 * bound
        for s, log in ((sign.compute(), logdet.compute()), (want_sign, want_logdet)):
            assert s == 0 or log < np.log(1e-9 * bound)
        return
    np.testing.assert_allclose(xa.linalg.det(x).compute(), np.linalg.det(a), **tol)
    np.testing.assert_allclose(sign.compute(), want_sign, **tol)
    if np.isfinite(want_logdet):
        np.testing.assert_allclose(logdet.compute(), want_logdet, **tol)
        if abs(want_logdet) < np.log(1e6) or dtype != "f4":
            b = rng.normal(size=(n, 3))
            got = xa.linalg.solve(x, xa.from_array(b, chunks=data.draw(st.integers(1, n))))
            assert got.dtype == np.linalg.solve(a, b).dtype and got.chunks[0] == chunks
            if abs(np.linalg.cond(a)) < 1e6:
                np.testing.assert_allclose(got.compute(), np.linalg.solve(a, b), **tol)
                np.testing.assert_allclose(xa.linalg.solve(x, b[:, 0]).compute(), np.linalg.solve(a, b[:, 0]), **tol)
                np.testing.assert_allclose(xa.linalg.inv(x).compute(), np.linalg.inv(a), **tol)


@settings(max_examples=40, deadline=None, database=None)
@given(st.data())
def test_triangular_solves_and_cholesky_are_scipys_and_numpys(data):
    n, chunks, dtype, rng, a = _case(data)
    a = a + 20 * n * np.eye(n, dtype=dtype)
    x = xa.from_array(a, chunks=(chunks, chunks))
    tol = _tol(dtype)
    b = rng.normal(size=(n, 2))
    for lower in (True, False):
        for unit in (False, True):
            got = xa.linalg.solve_triangular(x, b, lower=lower, unit_diagonal=unit)
            want = sl.solve_triangular(a, b, lower=lower, unit_diagonal=unit)
            np.testing.assert_allclose(got.compute(), want, **tol)
    h = (a @ a.conj().T).astype(dtype if dtype != "i8" else "f8")
    for upper in (False, True):
        got = xa.linalg.cholesky(xa.from_array(h, chunks=(chunks, chunks)), upper=upper)
        want = np.linalg.cholesky(h, upper=upper)
        assert got.dtype == want.dtype
        np.testing.assert_allclose(got.compute(), want, **tol)


def test_a_zero_pivot_in_a_diagonal_block_is_taken_from_the_rows_below():
    """Every diagonal block of a permutation matrix cut 1 x 1 is zero or one: pivoting within
    a diagonal block alone would divide by zero; here the pivot comes from another block."""
    a = np.eye(6)[[3, 0, 5, 1, 4, 2]]
    x = xa.from_array(a, chunks=1)
    np.testing.assert_allclose(xa.linalg.solve(x, np.arange(6.0)).compute(), np.linalg.solve(a, np.arange(6.0)))
    p, l, u = (v.compute() for v in xa.linalg.lu(x))
    np.testing.assert_array_equal(p @ l @ u, a)
    assert float(xa.linalg.det(x)) == pytest.approx(np.linalg.det(a))


def test_a_singular_matrix_has_determinant_zero_and_fails_to_solve_when_computed():
    a = np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 0.0, 1.0]])
    x = xa.from_array(a, chunks=2)
    assert float(xa.linalg.det(x)) == 0.0
    sign, logdet = xa.linalg.slogdet(x)
    assert float(sign) == 0.0 and float(logdet) == -np.inf
    with pytest.raises(np.linalg.LinAlgError):
        xa.linalg.solve(x, np.ones(3)).compute()
    with pytest.raises(np.linalg.LinAlgError, match="not positive definite"):
        xa.linalg.cholesky(xa.from_array(-np.eye(4), chunks=2)).compute()


def test_a_step_holds_a_column_of_blocks_and_the_steps_columns_run_apart():
    """K steps of LU on a K x K grid: a panel each, a column task for each column right of it
    (K (K - 1) / 2), each reading one column of blocks, never the whole matrix."""
    x = xa.ones((12, 12), chunks=3)
    p, l, u = xa.linalg.lu(x)
    layers = {name.rsplit("-", 1)[0]: layer for name, layer in u._graph.layers.items()}
    assert len(layers["lu-panel"]) == 4 and len(layers["lu-col"]) == 6
    for task in list(layers["lu-panel"].values()) + list(layers["lu-col"].values()):
        refs = [r for arg in task.args if isinstance(arg, list) for r in arg]
        assert len(refs) <= 4  # one column of blocks (the first step) or the step before's result


def test_the_array_api_names_come_here_for_a_matrix_cut_into_blocks_only():
    stack = xa.from_array(np.stack([np.eye(2) * 2] * 3), chunks=(1, 2, 2))
    assert not any(name.startswith("lu-") for name in xa.linalg.inv(stack)._graph.layers)
    cut = xa.from_array(np.eye(4) * 2, chunks=2)
    assert any(name.startswith("lu-") for name in xa.linalg.inv(cut)._graph.layers)
    # a NumPy (one block) a with a right-hand side cut into blocks: solved over the blocks too
    b = xa.from_array(np.arange(4.0), chunks=2)
    np.testing.assert_allclose(xa.linalg.solve(np.eye(4) * 2, b).compute(), np.arange(4.0) / 2)


def test_shapes_and_chunks_fail_when_built_naming_the_fix():
    with pytest.raises(ValueError, match=r"lu: the blocks of a must be square along its diagonal .* chunks are "
                                         r"\(2, 2\) and \(4,\): rechunk first: a.rechunk\(4\)"):
        xa.linalg.lu(xa.ones((4, 4), chunks=(2, 4)))
    with pytest.raises(np.linalg.LinAlgError, match=r"lu: Last 2 dimensions .* square; a has shape \(4, 5\)"):
        xa.linalg.lu(xa.ones((4, 5), chunks=2))
    with pytest.raises(np.linalg.LinAlgError, match=r"must be a matrix \(2 dimensions\)"):
        xa.linalg.lu(xa.ones(4, chunks=2))
    with pytest.raises(ValueError, match=r"solve: b of shape \(5,\) has 5 rows, but a \(shape \(4, 4\)\) is 4 x 4"):
        xa.linalg.solve(xa.ones((4, 4), chunks=2), np.ones(5))
    with pytest.raises(ValueError, match=r"solve_triangular: b must be a vector or a matrix"):
        xa.linalg.solve_triangular(xa.ones((4, 4), chunks=2), np.ones((4, 1, 1)))
    m = xa.from_array(np.eye(8), chunks=2)
    with pytest.raises(ValueError, match=r"unknown length .* a = a.compute_chunk_sizes\(\)"):
        xa.linalg.lu(m[m[:, 0] > -1])


def test_without_scipy_the_error_names_it_and_the_one_block_way(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(blocked.importlib.util, "find_spec", lambda name, *a: None if name == "scipy" else real(name, *a))
    with pytest.raises(ImportError, match=r"needs scipy \(pip install scipy.*a.rechunk\(-1\)"):
        xa.linalg.solve(xa.ones((4, 4), chunks=2), np.ones(4))


def test_svd_compressed_finds_a_low_rank_matrix_exactly_and_the_top_of_a_spectrum():
    rng = np.random.default_rng(0)
    low = rng.normal(size=(120, 4)) @ rng.normal(size=(4, 90))
    u, s, vt = xa.linalg.svd_compressed(xa.from_array(low, chunks=(40, 30)), k=4, seed=1)
    assert u.chunks == ((40, 40, 40), (4,)) and s.chunks == ((4,),) and vt.chunks == ((4,), (30, 30, 30))
    np.testing.assert_allclose(((u * s) @ vt).compute(), low, atol=1e-9)
    decaying = rng.normal(size=(150, 60)) @ np.diag(0.7 ** np.arange(60)) @ rng.normal(size=(60, 100))
    want = np.linalg.svd(decaying, compute_uv=False)[:5]
    for iterator in ("power", "QR"):
        u, s, vt = xa.linalg.svd_compressed(xa.from_array(decaying, chunks=(50, 50)), k=5, iterator=iterator,
                                            n_power_iter=2, seed=2)
        np.testing.assert_allclose(s.compute(), want, rtol=1e-6)
        uu = u.compute()
        np.testing.assert_allclose(uu.T @ uu, np.eye(5), atol=1e-10)
    again = xa.linalg.svd_compressed(xa.from_array(decaying, chunks=(50, 50)), k=5, seed=2)[1].compute()
    np.testing.assert_array_equal(again, xa.linalg.svd_compressed(xa.from_array(decaying, chunks=(50, 50)), k=5,
                                                                  seed=2)[1].compute())
    c = low + 1j * low[::-1]
    s = xa.linalg.svd_compressed(xa.from_array(c, chunks=(40, 30)), k=8, n_power_iter=1, seed=3)[1]
    assert s.dtype == np.float64
    np.testing.assert_allclose(s.compute(), np.linalg.svd(c, compute_uv=False)[:8], rtol=1e-6, atol=1e-9)


def test_svd_compressed_refuses_bad_options_when_built():
    x = xa.ones((10, 6), chunks=5)
    for k in (0, 7, 2.5, True):
        with pytest.raises(ValueError, match=r"k must be an integer from 1 to 6"):
            xa.linalg.svd_compressed(x, k)
    with pytest.raises(ValueError, match="iterator must be 'power' or 'QR'"):
        xa.linalg.svd_compressed(x, 2, iterator="lanczos")
    with pytest.raises(ValueError, match="a matrix"):
        xa.linalg.svd_compressed(xa.ones(10, chunks=5), 2)
