"""Linear algebra on stacks of small matrices (``xsched.array.stacked``) against NumPy's
``np.linalg``: stacks of shapes (4, 4), (5, 3, 3) and (2, 3, 4, 4) cut along their stack axes
but not their matrix axes, in float64, float32 and complex128; the errors raised when the
expression is built (cut matrix axes, shapes), and those only computing can find."""

from __future__ import annotations

import numpy as np
import pytest

import xsched.array as xa
from xsched.array import stacked
from xsched.array.stacked import (cholesky, cross, det, diagonal, eigh, eigvalsh, inv, matrix_norm,
                                  matrix_power, matrix_rank, matrix_transpose, pinv, slogdet, solve,
                                  svdvals, trace, vecdot, vector_norm)

#: (shape, chunks of the stack axes): every stack cut along its leading axes, never its matrices
STACKS = [((4, 4), ()), ((5, 3, 3), (5,)), ((5, 3, 3), (2,)), ((5, 3, 3), (1,)),
          ((2, 3, 4, 4), (1, 2)), ((2, 3, 4, 4), (2, 1))]
DTYPES = [np.float64, np.float32, np.complex128]


def _random(shape, dtype, seed=0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        a = a + 1j * rng.standard_normal(shape)
    return a.astype(dtype)


def _well_conditioned(shape, dtype, seed=0) -> np.ndarray:
    """``A @ A^H + n I``: Hermitian positive definite (for cholesky, eigh, solve, inv)."""
    a = _random(shape, dtype, seed)
    n = shape[-1]
    return (a @ np.conj(np.swapaxes(a, -1, -2)) + n * np.eye(n)).astype(dtype)


def _stack(values: np.ndarray, stack_chunks) -> xa.Array:
    return xa.from_array(values, chunks=tuple(stack_chunks) + (-1, -1))


def _close(got, want, dtype=np.float64) -> None:
    """``got`` (an xsched array) equals NumPy's ``want``: shape, dtype and values."""
    assert isinstance(got, xa.Array)
    value = got.compute()
    assert value.shape == np.shape(want) == got.shape
    assert value.dtype == np.asarray(want).dtype == got.dtype
    tol = 1e-4 if np.dtype(dtype) in (np.float32, np.complex64) else 1e-10
    np.testing.assert_allclose(value, want, rtol=tol, atol=tol)


# --------------------------------------------------------------------------- square matrices


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape, stack_chunks", STACKS)
def test_square_matrix_functions_equal_numpy(shape, stack_chunks, dtype):
    a = _well_conditioned(shape, dtype)
    x = _stack(a, stack_chunks)
    _close(det(x), np.linalg.det(a), dtype)
    _close(inv(x), np.linalg.inv(a), dtype)
    for got, want in zip(slogdet(x), np.linalg.slogdet(a)):
        _close(got, want, dtype)
    assert slogdet(x).logabsdet.dtype == np.linalg.slogdet(a).logabsdet.dtype
    _close(cholesky(x), np.linalg.cholesky(a), dtype)
    _close(cholesky(x, upper=True), np.linalg.cholesky(a, upper=True), dtype)
    _close(eigvalsh(x), np.linalg.eigvalsh(a), dtype)
    _close(eigvalsh(x, UPLO="U"), np.linalg.eigvalsh(a, UPLO="U"), dtype)
    values, vectors = eigh(x)
    want = np.linalg.eigh(a)
    _close(values, want.eigenvalues, dtype)
    _close(vectors, want.eigenvectors, dtype)
    assert eigh(x).eigenvectors.name == vectors.name
    for n in (0, 1, 3, -2):
        _close(matrix_power(x, n), np.linalg.matrix_power(a, n), dtype)


@pytest.mark.parametrize("shape, stack_chunks", STACKS)
def test_one_task_per_block_of_the_stack(shape, stack_chunks):
    x = _stack(_well_conditioned(shape, np.float64), stack_chunks)
    out = inv(x)
    assert out.chunks == x.chunks
    assert det(x).chunks == x.chunks[:-2]
    layer = [k for k in dict(out.__xsched_graph__()) if k.startswith(out.name)]
    assert len(layer) == np.prod(x.numblocks)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape, stack_chunks", STACKS)
def test_solve_a_vector_and_a_stack_of_matrices_as_numpy_2(shape, stack_chunks, dtype):
    a = _well_conditioned(shape, dtype)
    x = _stack(a, stack_chunks)
    n = shape[-1]
    vector = _random((n,), dtype, seed=1)
    _close(solve(x, vector), np.linalg.solve(a, vector), dtype)
    b = _random(shape[:-1] + (2,), dtype, seed=2)
    _close(solve(x, _stack(b, stack_chunks[::-1])), np.linalg.solve(a, b), dtype)
    _close(solve(x, b[..., :1]), np.linalg.solve(a, b[..., :1]), dtype)
    one = _random((n, 3), dtype, seed=3)  # one matrix for the whole stack: it broadcasts
    _close(solve(x, one), np.linalg.solve(a, one), dtype)


def test_solve_broadcasts_the_stacks_of_a_and_b():
    a = _well_conditioned((2, 1, 3, 3), np.float64)
    b = _random((1, 4, 3, 2), np.float64, seed=1)
    got = solve(xa.from_array(a, chunks=(1, 1, 3, 3)), xa.from_array(b, chunks=(1, 2, 3, 2)))
    _close(got, np.linalg.solve(a, b))


def test_solve_a_stack_of_vectors_fails_when_built_saying_how_to_write_it():
    a = _well_conditioned((5, 3, 3), np.float64)
    x = _stack(a, (2,))
    with pytest.raises(ValueError, match=r"b of shape \(5, 3\) is a stack of matrices .* "
                                         r"solve\(a, b\[\.\.\., None\]\)\[\.\.\., 0\]"):
        solve(x, np.ones((5, 3)))
    vectors = _random((5, 3), np.float64)
    _close(solve(x, vectors[..., None])[..., 0], np.linalg.solve(a, vectors[..., None])[..., 0])
    with pytest.raises(ValueError, match=r"b of shape \(4,\) has 4 values.* 3 x 3"):
        solve(x, np.ones(4))
    with pytest.raises(ValueError, match=r"do not broadcast together: \(5,\) and \(4,\)"):
        solve(x, np.ones((4, 3, 1)))
    with pytest.raises(ValueError, match="b is 0-dimensional"):
        solve(x, 1.0)
    with pytest.raises(ValueError, match=r"axis 0 of b .* b.rechunk\(\{-1: -1\}\)"):
        solve(x, xa.from_array(np.ones(3), chunks=2))


@pytest.mark.parametrize("func", [inv, det, lambda x: solve(x, np.ones(3))])
def test_a_singular_matrix_fails_when_computed_with_numpys_error(func):
    a = _well_conditioned((4, 3, 3), np.float64)
    a[3] = 0.0
    if func is det:  # (a determinant of zero is an answer, not an error)
        np.testing.assert_allclose(det(_stack(a, (2,))).compute()[3], 0.0)
        return
    out = func(_stack(a, (2,)))  # built: the data is not looked at
    with pytest.raises(np.linalg.LinAlgError, match="Singular matrix"):
        out.compute()


def test_empty_stacks_and_empty_matrices_as_numpy():
    empty_stack = np.ones((0, 3, 3))
    _close(det(_stack(empty_stack, (1,))), np.linalg.det(empty_stack))
    _close(inv(_stack(empty_stack, (1,))), np.linalg.inv(empty_stack))
    nothing = np.ones((2, 0, 0))
    _close(det(_stack(nothing, (1,))), np.linalg.det(nothing))
    _close(inv(_stack(nothing, (1,))), np.linalg.inv(nothing))


def test_stack_axes_of_unknown_length_work_and_matrix_axes_of_unknown_length_fail_when_built():
    a = _well_conditioned((6, 3, 3), np.float64)
    x = _stack(a, (2,))
    keep = np.array([True, False, True, True, False, True])
    masked = x[xa.from_array(keep, chunks=2)]
    assert all(c != c for c in masked.chunks[0])
    np.testing.assert_allclose(det(masked).compute(), np.linalg.det(a[keep]))
    cols = xa.moveaxis(masked, 0, -1)  # (3, 3, nan): matrices of unknown width
    with pytest.raises(ValueError, match=r"axis 2 of x \(shape .*\) has chunks of unknown length .*"
                                         r"x = x\.compute_chunk_sizes\(\), then "
                                         r"x\.rechunk\(\{-2: -1, -1: -1\}\)"):
        svdvals(cols)


# --------------------------------------------------------------------------- any matrices


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape, stack_chunks", [((3, 5), ()), ((5, 3, 4), (2,)), ((2, 3, 4, 2), (1, 2))])
def test_rectangular_matrix_functions_equal_numpy(shape, stack_chunks, dtype):
    a = _random(shape, dtype)
    x = _stack(a, stack_chunks)
    _close(svdvals(x), np.linalg.svdvals(a), dtype)
    _close(pinv(x), np.linalg.pinv(a), dtype)
    _close(pinv(x, rtol=None), np.linalg.pinv(a, rtol=None), dtype)
    _close(pinv(x, rcond=0.5), np.linalg.pinv(a, rcond=0.5), dtype)
    _close(matrix_rank(x), np.linalg.matrix_rank(a), dtype)
    for offset in (0, 1, -1, 3, -4):
        _close(diagonal(x, offset=offset), np.linalg.diagonal(a, offset=offset), dtype)
        _close(trace(x, offset=offset), np.linalg.trace(a, offset=offset), dtype)
    _close(trace(x, dtype=np.complex128), np.linalg.trace(a, dtype=np.complex128), dtype)
    for ord in ("fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf):
        _close(matrix_norm(x, ord=ord), np.linalg.matrix_norm(a, ord=ord), dtype)
    _close(matrix_norm(x, ord=1, keepdims=True), np.linalg.matrix_norm(a, ord=1, keepdims=True), dtype)
    _close(matrix_transpose(x), np.linalg.matrix_transpose(a), dtype)


def test_matrix_rank_and_pinv_with_a_tolerance_per_matrix():
    a = np.array([np.eye(3), np.diag([1.0, 1.0, 1e-3]), np.diag([1.0, 0.0, 0.0]), np.diag([4.0, 2.0, 1.0])])
    x = _stack(a, (3,))
    for tol in (0.5, np.array([1.5, 1e-2, 0.5, 1.5])):
        _close(matrix_rank(x, tol=tol), np.linalg.matrix_rank(a, tol=tol))
        _close(matrix_rank(x, rtol=tol), np.linalg.matrix_rank(a, rtol=tol))
        _close(pinv(x, rcond=tol), np.linalg.pinv(a, rcond=tol))
        _close(pinv(x, rtol=tol), np.linalg.pinv(a, rtol=tol))
    _close(matrix_rank(x, hermitian=True), np.linalg.matrix_rank(a, hermitian=True))
    _close(pinv(x, hermitian=True), np.linalg.pinv(a, hermitian=True))
    with pytest.raises(ValueError, match="`tol` and `rtol` can't be both set"):
        matrix_rank(x, tol=1, rtol=1)
    with pytest.raises(ValueError, match="`rtol` and `rcond` can't be both set"):
        pinv(x, rcond=1, rtol=1)


def test_matrix_rank_of_a_vector_or_a_scalar_as_numpy():
    for v in (np.array([0.0, 2.0]), np.zeros(3), np.array(5.0)):
        got = matrix_rank(xa.from_array(v, chunks=1))
        assert got.compute() == np.linalg.matrix_rank(v)


def test_matrix_transpose_takes_any_chunks():
    a = _random((3, 4, 5), np.float64)
    _close(matrix_transpose(xa.from_array(a, chunks=2)), np.linalg.matrix_transpose(a))
    with pytest.raises(ValueError, match="at least 2-dimensional, but it is 1"):
        matrix_transpose(xa.from_array(np.ones(3), chunks=2))


# --------------------------------------------------------------------------- vectors


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("chunks", [-1, 2, 1])
def test_vector_norm_equals_numpy_whatever_the_chunks(chunks, dtype):
    a = _random((3, 4, 5), dtype)
    x = xa.from_array(a, chunks=chunks)
    for axis in (None, -1, 0, (0, 2), (1, 0)):
        for ord in (2, 1, 0, np.inf, -np.inf, 3, -1, 0.5):
            for keepdims in (False, True):
                got = vector_norm(x, axis=axis, ord=ord, keepdims=keepdims)
                _close(got, np.linalg.vector_norm(a, axis=axis, ord=ord, keepdims=keepdims), dtype)


def test_vector_norm_edge_cases_as_numpy():
    scalar = np.array(-3.0)
    _close(vector_norm(xa.from_array(scalar, chunks=1)), np.linalg.vector_norm(scalar))
    _close(vector_norm(xa.from_array(scalar, chunks=1), keepdims=True),
           np.linalg.vector_norm(scalar, keepdims=True))
    ints = np.arange(-4, 8).reshape(3, 4)
    _close(vector_norm(xa.from_array(ints, chunks=2), axis=1), np.linalg.vector_norm(ints, axis=1))
    empty = np.ones((2, 0))
    _close(vector_norm(xa.from_array(empty, chunks=1), axis=1, ord=np.inf),
           np.linalg.vector_norm(empty, axis=1, ord=np.inf))
    with pytest.raises(ValueError, match="Invalid norm order 'fro' for vectors"):
        vector_norm(xa.from_array(ints, chunks=2), ord="fro")


@pytest.mark.parametrize("dtype", DTYPES + [np.int32])
@pytest.mark.parametrize("chunks", [-1, 2, 1])
def test_vecdot_equals_numpy_whatever_the_chunks(chunks, dtype):
    a, b = _random((3, 4), dtype, seed=1), _random((3, 4), dtype, seed=2)
    if dtype is np.int32:
        grid = np.arange(12).reshape(3, 4)
        a, b = (grid - 5).astype(dtype), (grid % 5).astype(dtype)
    x, y = xa.from_array(a, chunks=chunks), xa.from_array(b, chunks=chunks)
    _close(vecdot(x, y), np.linalg.vecdot(a, b), dtype)
    _close(vecdot(x, y, axis=0), np.linalg.vecdot(a, b, axis=0), dtype)
    _close(vecdot(x, b[0]), np.linalg.vecdot(a, b[0]), dtype)  # (the other axes broadcast)
    _close(vecdot(x, b[:, :1], axis=0), np.linalg.vecdot(a, b[:, :1], axis=0), dtype)
    with pytest.raises(ValueError, match=r"length 4 in x1 \(shape \(3, 4\)\) but 3 in x2"):
        vecdot(x, np.ones(3))


@pytest.mark.parametrize("chunks", [(1, 3), (2, 3), (3, 3)])
def test_cross_equals_numpy(chunks):
    a, b = _random((4, 3), np.float64, seed=1), _random((4, 3), np.float64, seed=2)
    x = xa.from_array(a, chunks=chunks)
    _close(cross(x, b), np.linalg.cross(a, b))
    _close(cross(x, b[0]), np.linalg.cross(a, b[0]))
    _close(cross(x.T, b.T, axis=0), np.linalg.cross(a.T, b.T, axis=0))
    ints = np.arange(12, dtype=np.int32).reshape(4, 3)
    _close(cross(xa.from_array(ints, chunks=chunks), ints[::-1]), np.linalg.cross(ints, ints[::-1]))
    with pytest.raises(ValueError, match="3-dimensional vectors, but they are 3 and 2"):
        cross(x, np.ones(2))
    with pytest.raises(ValueError, match=r"each vector must be in one chunk, but axis 1 of x1 .* "
                                         r"x1\.rechunk\(\{-1: -1\}\)"):
        cross(xa.from_array(a, chunks=(2, 2)), b)


# --------------------------------------------------------------------------- dtypes and errors


@pytest.mark.parametrize("dtype", [np.int64, np.int8, np.bool_, np.float32, np.complex64])
@pytest.mark.parametrize("name, kwargs", [
    ("det", {}), ("inv", {}), ("eigvalsh", {}), ("svdvals", {}), ("matrix_power", {"n": -1}),
    ("matrix_power", {"n": 2}), ("pinv", {}), ("matrix_rank", {}), ("trace", {}), ("diagonal", {}),
    ("matrix_norm", {}), ("vector_norm", {"axis": -1})])
def test_result_dtypes_are_numpys(name, kwargs, dtype):
    a = np.eye(3, dtype=dtype)[None].repeat(2, 0)
    got = getattr(stacked, name)(_stack(a, (1,)), **kwargs)
    want = getattr(np.linalg, name)(a, **kwargs)
    assert got.dtype == want.dtype == got.compute().dtype
    np.testing.assert_allclose(got.compute(), want)


def test_float16_fails_when_built_as_in_numpy():
    x = _stack(np.eye(2, dtype=np.float16)[None], (1,))
    with pytest.raises(TypeError, match="float16 is unsupported in linalg"):
        inv(x)


CUT = [("inv", inv), ("det", det), ("slogdet", slogdet), ("eigh", eigh), ("eigvalsh", eigvalsh),
       ("cholesky", cholesky), ("svdvals", svdvals), ("pinv", pinv), ("matrix_rank", matrix_rank),
       ("matrix_norm", lambda x: matrix_norm(x, ord=2)), ("matrix_norm", lambda x: matrix_norm(x, ord="nuc")),
       ("solve", lambda x: solve(x, np.ones(4)))]


@pytest.mark.parametrize("name, func", CUT)
def test_matrix_axes_cut_into_chunks_fail_when_built_naming_the_rechunk(name, func):
    x = xa.from_array(_well_conditioned((3, 4, 4), np.float64), chunks=(1, 4, 2))
    with pytest.raises(ValueError, match=rf"^{name}: each matrix must be in one chunk, but axis 2 of \w "
                                         r"\(shape \(3, 4, 4\)\) is cut into chunks \(2, 2\); "
                                         r"rechunk first: \w\.rechunk\(\{-2: -1, -1: -1\}\)$"):
        func(x)
    fixed = func(x.rechunk({-2: -1, -1: -1}))
    assert fixed is not None


SQUARE = [(n, f) for n, f in CUT if n not in ("svdvals", "pinv", "matrix_rank", "matrix_norm")] + [
    ("matrix_power", lambda x: matrix_power(x, 2))]


@pytest.mark.parametrize("shape, chunks", [((5, 5), 2), ((5, 5), (3, 2)), ((3, 4, 4), (2, 3, 2)), ((4, 4), 3)])
def test_reductions_and_powers_of_matrices_cut_into_chunks_are_numpys(shape, chunks):
    """diagonal, trace, matrix_norm (but its singular-value orders) and matrix_power take
    matrices cut into blocks as they are: sums and products over the blocks."""
    rng = np.random.default_rng(0)
    a = rng.integers(-3, 4, shape) if shape == (4, 4) else rng.random(shape) + 3 * np.eye(shape[-1])
    x = xa.from_array(a, chunks=chunks)
    for n in (0, 1, 2, 3, 5) + ((-1, -2) if a.ndim == 2 and a.dtype.kind == "f" and chunks == 2 else ()):
        got, want = matrix_power(x, n).compute(), np.linalg.matrix_power(a, n)
        assert got.dtype == want.dtype and np.allclose(got, want), n
    for offset in (0, 1, -2):
        got, want = trace(x, offset=offset).compute(), np.linalg.trace(a, offset=offset)
        assert got.dtype == want.dtype and np.allclose(got, want)
        assert np.array_equal(diagonal(x, offset=offset).compute(), np.linalg.diagonal(a, offset=offset))
    for order in ("fro", 1, -1, np.inf, -np.inf):
        for keepdims in (False, True):
            got = matrix_norm(x, ord=order, keepdims=keepdims).compute()
            want = np.linalg.matrix_norm(a, ord=order, keepdims=keepdims)
            assert got.dtype == want.dtype and got.shape == want.shape and np.allclose(got, want), order


def test_a_negative_power_of_a_stack_of_cut_matrices_names_the_rechunk():
    x = xa.from_array(np.stack([np.eye(4) * 2] * 3), chunks=(1, 2, 4))
    with pytest.raises(ValueError, match=r"^matrix_power \(of a negative power: an inverse per matrix\): each "
                                         r"matrix must be in one chunk, but axis 1 .* rechunk first"):
        matrix_power(x, -1)
    assert np.allclose(matrix_power(x.rechunk({1: -1}), -1).compute(), np.stack([np.eye(4) / 2] * 3))


@pytest.mark.parametrize("name, func", SQUARE)
def test_non_square_matrices_fail_when_built_naming_the_shape(name, func):
    x = _stack(np.ones((2, 3, 4)), (1,))
    with pytest.raises(np.linalg.LinAlgError, match=rf"^{name}: Last 2 dimensions of the array must be "
                                                    r"square; \w has shape \(2, 3, 4\)$"):
        func(x)


@pytest.mark.parametrize("name, func, error", [
    ("inv", inv, np.linalg.LinAlgError), ("svdvals", svdvals, np.linalg.LinAlgError),
    ("pinv", pinv, np.linalg.LinAlgError), ("trace", trace, ValueError),
    ("diagonal", diagonal, ValueError), ("matrix_norm", matrix_norm, np.exceptions.AxisError)])
def test_fewer_than_two_dimensions_fail_as_numpy(name, func, error):
    v = np.ones(3)
    with pytest.raises(error):
        getattr(np.linalg, name)(v)
    with pytest.raises(error, match=name if error is not np.exceptions.AxisError else "axis -2"):
        func(xa.from_array(v, chunks=3))


def test_bad_options_fail_when_built():
    x = _stack(np.eye(3)[None], (1,))
    with pytest.raises(TypeError, match="exponent must be an integer"):
        matrix_power(x, 1.5)
    with pytest.raises(ValueError, match="UPLO"):
        eigh(x, UPLO="X")
    with pytest.raises(ValueError, match="Invalid norm order"):
        matrix_norm(x, ord=3)


def test_the_first_power_of_cut_matrices_is_a_new_array():
    a = xa.from_array(np.arange(4.0).reshape(2, 2), chunks=1)
    b = matrix_power(a, 1)
    assert b is not a
    b[0, 0] = 100
    assert a.compute()[0, 0] == 0.0
