"""Linear algebra on stacks of small matrices: the Array API's ``linalg`` functions.

An array of shape ``(..., M, N)`` is a stack of ``M x N`` matrices (a 3x3 covariance per
pixel, a 2x2 Jacobian per point). When every matrix is held whole in one chunk (the last two
axes each one chunk), NumPy's ``np.linalg`` function runs on each block of the stack on its
own (``apply_gufunc``): one task per block, no data moves, and the leading axes may be cut
any way. A matrix axis cut into several chunks fails when the expression is built, naming
the axes, their chunks and the ``x.rechunk({-2: -1, -1: -1})`` that fixes it (after a
boolean mask, ``x.compute_chunk_sizes()`` first). One matrix (a 2-d array) cut into blocks
goes to ``blocked.py`` instead: ``solve``, ``inv``, ``det``, ``slogdet`` and ``cholesky``
factor it over its blocks; ``qr``, ``svd`` and ``lstsq`` of ``decompositions.py`` factor
tall-and-skinny ones.
``cross`` needs its vectors (``axis``) in one chunk the same way. ``vector_norm``,
``vecdot`` and ``matrix_transpose`` are reductions and transposes: any chunks do; so are
``diagonal``, ``trace``, ``matrix_norm`` (but its 2, -2 and ``"nuc"``, which need singular
values) and ``matrix_power`` (products), whose matrices may be cut too.

Shapes are checked when the expression is built, with NumPy's exception and words and the
shape (``LinAlgError: ... must be square``); a singular matrix is only found by computing,
and fails then with NumPy's own error. dtypes are NumPy's, found by calling NumPy's function
on a 2x2 identity matrix of the input's dtype: float32 stays float32, ints become float64,
and a dtype NumPy refuses (float16) fails at once as in NumPy.

>>> import numpy as np, xsched.array as xa
>>> a = np.array([[[2.0, 1.0], [1.0, 3.0]], [[4.0, 0.0], [0.0, 5.0]], [[1.0, 2.0], [3.0, 4.0]]])
>>> x = xa.from_array(a, chunks=(2, -1, -1))
>>> det(x).chunks, det(x).compute().round(6).tolist()
(((2, 1),), [5.0, 20.0, -2.0])
>>> np.allclose(inv(x).compute(), np.linalg.inv(a))
True
>>> inv(x.rechunk({1: 1}))
Traceback (most recent call last):
...
ValueError: inv: each matrix must be in one chunk, but axis 1 of a (shape (3, 2, 2)) is cut into chunks (1, 1); rechunk first: a.rechunk({-2: -1, -1: -1})
"""

from __future__ import annotations

import operator
from typing import Any, Callable, NamedTuple

import numpy as np

from . import blocked, diagonals, reductions
from .axes import axis_index, reduced_axes
from .core import Array
from .creation import asarray, eye
from .gufunc import apply_gufunc
from .manipulation import broadcast_to, moveaxis, swapaxes
from .scans import any as _any

__all__ = ["cholesky", "cross", "det", "diagonal", "eigh", "eigvalsh", "inv", "matrix_norm",
           "matrix_power", "matrix_rank", "matrix_transpose", "pinv", "slogdet", "solve",
           "svdvals", "trace", "vecdot", "vector_norm"]

LinAlgError = np.linalg.LinAlgError


class SlogdetResult(NamedTuple):
    """``slogdet``'s two arrays, named as NumPy's: the sign (or phase) and log|det|."""
    sign: Array
    logabsdet: Array


class EighResult(NamedTuple):
    """``eigh``'s two arrays, named as NumPy's: ascending eigenvalues, eigenvectors as columns."""
    eigenvalues: Array
    eigenvectors: Array


class _NotGiven:
    """``pinv``'s ``rtol`` left out: NumPy then takes ``rcond=1e-15`` (``rtol=None`` means
    another default)."""

    def __repr__(self) -> str:
        return "<not given>"


_NOT_GIVEN = _NotGiven()


# --------------------------------------------------------------------------- checks


def _whole(x: Array, name: str, arg: str, axes: tuple[int, ...], what: str = "matrix") -> None:
    """Raise unless each of ``axes`` is one chunk of known length, naming the rechunk (and
    ``compute_chunk_sizes()``) that makes it so."""
    cut = []
    for a in axes:
        chunks, ax = x.chunks[a], a % x.ndim
        if any(c != c for c in chunks):  # (NaN: lengths a boolean mask left unknown)
            cut.append(f"axis {ax} of {arg} (shape {x.shape}) has chunks of unknown length {chunks}")
        elif len(chunks) > 1:
            cut.append(f"axis {ax} of {arg} (shape {x.shape}) is cut into chunks {chunks}")
    if not cut:
        return
    fix = f"{arg}.rechunk({{{', '.join(f'{a}: -1' for a in axes)}}})"
    if any("unknown" in c for c in cut):
        fix = f"{arg} = {arg}.compute_chunk_sizes(), then {fix}"
    raise ValueError(f"{name}: each {what} must be in one chunk, but {'; '.join(cut)}; rechunk first: {fix}")


def _stack(x: Any, name: str, arg: str = "x", *, square: bool = False,
           error: type[Exception] = LinAlgError) -> Array:
    """``x`` as a stack of matrices, each in one chunk (square ones for ``square``)."""
    x = asarray(x)
    if x.ndim < 2:
        raise error(f"{name}: {x.ndim}-dimensional array given ({arg} of shape {x.shape}). "
                    "Array must be at least two-dimensional")
    _whole(x, name, arg, (-2, -1))
    if square and x.shape[-2] != x.shape[-1]:
        raise LinAlgError(f"{name}: Last 2 dimensions of the array must be square; {arg} has shape {x.shape}")
    return x


def _dtypes(out: Any) -> Any:
    """The dtype(s) of a NumPy result: one, or a list for a tuple of outputs."""
    if isinstance(out, tuple):
        return [np.asarray(o).dtype for o in out]
    return np.asarray(out).dtype


def _per_matrix(func: Callable, signature: str, args: list, name: str, sample: Any,
                output_sizes: dict | None = None, **kwargs: Any) -> Any:
    """``func`` on every block of the stacks ``args`` (core dimensions checked whole), its
    dtypes those of ``sample``, NumPy's result on small matrices of the inputs' dtypes.

    Square matrices use NumPy's own signatures (``(m,m)``), checked square by the callers.
    """
    return apply_gufunc(func, signature, *args, output_dtypes=_dtypes(sample), output_sizes=output_sizes,
                        name=name, **kwargs)


def _eye(x: Array) -> np.ndarray:
    return np.eye(2, dtype=x.dtype)


def _cut(x: Array) -> bool:
    """A matrix axis of the stack ``x`` is cut into several chunks of known lengths: the
    functions that reduce or multiply matrices take it as it is, without a rechunk."""
    ends = x.chunks[-2:]
    return len(ends) == 2 and any(len(c) > 1 for c in ends) and all(n == n for c in ends for n in c)


# --------------------------------------------------------------------------- square matrices


def cholesky(a: Any, /, *, upper: bool = False, lower: bool | None = None) -> Array:
    """The Cholesky factor of each matrix of the stack ``a`` (``..., M, M``), lower
    triangular (``upper=True``: upper), as ``numpy.linalg.cholesky``. dask's ``lower=`` is
    taken too when given (``lower=False``: upper), but the default is NumPy's lower factor,
    where dask's ``cholesky(a)`` gives the upper one.

    >>> import numpy as np, xsched.array as xa
    >>> a = xa.from_array(np.array([[[4.0, 2.0], [2.0, 5.0]]] * 3), chunks=(2, 2, 2))
    >>> cholesky(a).compute()[0].tolist()
    [[2.0, 0.0], [1.0, 2.0]]
    >>> cholesky(a, lower=False).compute()[0].tolist()
    [[2.0, 1.0], [0.0, 2.0]]
    """
    if lower is not None:  # (dask's keyword)
        if upper and lower:
            raise ValueError("cholesky: upper=True and lower=True ask for both factors; pass one of "
                             "them (NumPy's upper=, or dask's lower=)")
        upper = not lower
    if blocked.spread(a):  # (one matrix over several blocks)
        return blocked.cholesky(a, upper=upper)
    a = _stack(a, "cholesky", "a", square=True)
    upper = bool(upper)
    return _per_matrix(np.linalg.cholesky, "(m,m)->(m,m)", [a], "cholesky",
                       np.linalg.cholesky(_eye(a), upper=upper), upper=upper)


def det(a: Any) -> Array:
    """The determinant of each matrix of the stack ``a`` (``..., M, M``), as
    ``numpy.linalg.det``.

    >>> import numpy as np, xsched.array as xa
    >>> a = xa.from_array(np.array([[[1.0, 2.0], [3.0, 4.0]]] * 2), chunks=(1, 2, 2))
    >>> det(a).compute().round(6).tolist()
    [-2.0, -2.0]
    >>> det(a.rechunk(1))
    Traceback (most recent call last):
    ...
    ValueError: det: each matrix must be in one chunk, but axis 1 of a (shape (2, 2, 2)) is cut into chunks (1, 1); axis 2 of a (shape (2, 2, 2)) is cut into chunks (1, 1); rechunk first: a.rechunk({-2: -1, -1: -1})
    """
    if blocked.spread(a):  # (one matrix over several blocks)
        return blocked.det(a)
    a = _stack(a, "det", "a", square=True)
    return _per_matrix(np.linalg.det, "(m,m)->()", [a], "det", np.linalg.det(_eye(a)))


def slogdet(a: Any) -> SlogdetResult:
    """The sign and the log of the absolute value of each determinant of the stack ``a``
    (``..., M, M``), as ``numpy.linalg.slogdet``: no overflow for large determinants.

    >>> import numpy as np, xsched.array as xa
    >>> sign, logabsdet = slogdet(xa.from_array(np.diag([-1e200, 1e200]), chunks=-1))
    >>> float(sign), round(float(logabsdet), 3)
    (-1.0, 921.034)
    """
    if blocked.spread(a):  # (one matrix over several blocks)
        return SlogdetResult(*blocked.slogdet(a))
    a = _stack(a, "slogdet", "a", square=True)
    sign, logabsdet = _per_matrix(np.linalg.slogdet, "(m,m)->(),()", [a], "slogdet",
                                  tuple(np.linalg.slogdet(_eye(a))))
    return SlogdetResult(sign, logabsdet)


def eigh(a: Any, UPLO: str = "L") -> EighResult:
    """Eigenvalues (ascending) and eigenvectors (columns) of each Hermitian matrix of the
    stack ``a`` (``..., M, M``), as ``numpy.linalg.eigh`` (only the ``UPLO`` triangle is read).

    >>> import numpy as np, xsched.array as xa
    >>> values, vectors = eigh(xa.from_array(np.array([[2.0, 1.0], [1.0, 2.0]]), chunks=-1))
    >>> values.compute().round(6).tolist(), vectors.shape
    ([1.0, 3.0], (2, 2))
    """
    a = _stack(a, "eigh", "a", square=True)
    values, vectors = _per_matrix(np.linalg.eigh, "(m,m)->(m),(m,m)", [a], "eigh",
                                  tuple(np.linalg.eigh(_eye(a), UPLO=UPLO)), UPLO=UPLO)
    return EighResult(values, vectors)


def eigvalsh(a: Any, UPLO: str = "L") -> Array:
    """The eigenvalues (ascending) of each Hermitian matrix of the stack ``a`` (``..., M,
    M``), as ``numpy.linalg.eigvalsh``.

    >>> import numpy as np, xsched.array as xa
    >>> eigvalsh(xa.from_array(np.array([[2.0, 1.0], [1.0, 2.0]]), chunks=-1)).compute().round(6).tolist()
    [1.0, 3.0]
    """
    a = _stack(a, "eigvalsh", "a", square=True)
    return _per_matrix(np.linalg.eigvalsh, "(m,m)->(m)", [a], "eigvalsh",
                       np.linalg.eigvalsh(_eye(a), UPLO=UPLO), UPLO=UPLO)


def inv(a: Any) -> Array:
    """The inverse of each matrix of the stack ``a`` (``..., M, M``), as
    ``numpy.linalg.inv``; a singular one fails when computed, with NumPy's ``LinAlgError``.

    >>> import numpy as np, xsched.array as xa
    >>> inv(xa.from_array(np.array([[2.0, 0.0], [0.0, 4.0]]), chunks=-1)).compute().tolist()
    [[0.5, 0.0], [0.0, 0.25]]
    """
    if blocked.spread(a):  # (one matrix over several blocks)
        return blocked.inv(a)
    a = _stack(a, "inv", "a", square=True)
    return _per_matrix(np.linalg.inv, "(m,m)->(m,m)", [a], "inv", np.linalg.inv(_eye(a)))


def matrix_power(a: Any, n: int) -> Array:
    """Each matrix of the stack ``a`` (``..., M, M``) to the integer power ``n`` (negative:
    of its inverse; 0: the identity), as ``numpy.linalg.matrix_power``.

    >>> import numpy as np, xsched.array as xa
    >>> matrix_power(xa.from_array(np.array([[1, 1], [0, 1]]), chunks=-1), 3).compute().tolist()
    [[1, 3], [0, 1]]
    """
    try:
        n = operator.index(n)
    except TypeError as exc:
        raise TypeError(f"matrix_power: exponent must be an integer, got {n!r}") from exc
    a = asarray(a)
    if a.ndim >= 2 and _cut(a):
        return _power_of_cut(a, n)
    a = _stack(a, "matrix_power", "a", square=True)
    return _per_matrix(np.linalg.matrix_power, "(m,m)->(m,m)", [a], "matrix_power",
                       np.linalg.matrix_power(_eye(a), n), n=n)


def _power_of_cut(a: Array, n: int) -> Array:
    """``matrix_power`` of matrices cut into blocks: products of blocks (``@``), squaring
    (about ``2 log2 n`` products); a negative power of one matrix inverts it over its
    blocks first."""
    if a.shape[-2] != a.shape[-1]:
        raise LinAlgError(f"matrix_power: Last 2 dimensions of the array must be square; a has shape {a.shape}")
    dtype = np.linalg.matrix_power(_eye(a), n).dtype
    if n < 0:
        if a.ndim != 2:
            _whole(a, "matrix_power (of a negative power: an inverse per matrix)", "a", (-2, -1))
        a, n = blocked.inv(a), -n
    if n == 0:
        ident = eye(a.shape[-1], dtype=dtype, chunks=(a.chunks[-2], a.chunks[-1]))
        return broadcast_to(ident, a.shape, chunks=a.chunks)
    result, square = None, a
    while True:
        if n & 1:
            result = square if result is None else result @ square
        n >>= 1
        if not n:
            break
        square = square @ square
    if result is a:  # (a new object, as the other paths give: x[i] = v on it must leave a alone)
        result = Array(a._graph, a.name, a.chunks, a.dtype)
    return result if result.dtype == dtype else result.astype(dtype)


def solve(a: Any, b: Any) -> Array:
    """The solution ``x`` of ``a @ x = b`` for each matrix of the stack ``a`` (``..., M,
    M``), as ``numpy.linalg.solve`` (NumPy 2): ``b`` is one vector (``M,``) when it is 1-d,
    and otherwise a stack of matrices (``..., M, K``) whose leading axes broadcast with
    ``a``'s; a stack of vectors is ``solve(a, b[..., None])[..., 0]``.

    >>> import numpy as np, xsched.array as xa
    >>> a = xa.from_array(np.array([[[2.0, 0.0], [0.0, 4.0]]] * 3), chunks=(2, 2, 2))
    >>> solve(a, np.array([1.0, 1.0])).compute().tolist()
    [[0.5, 0.25], [0.5, 0.25], [0.5, 0.25]]
    >>> solve(a, np.ones((3, 2)))
    Traceback (most recent call last):
    ...
    ValueError: solve: b of shape (3, 2) is a stack of matrices (b.ndim > 1) with 3 rows, but the matrices of a (shape (3, 2, 2)) are 2 x 2; a stack of vectors is solve(a, b[..., None])[..., 0]
    """
    a, b = asarray(a), asarray(b)
    if a.ndim == 2 and b.ndim <= 2 and any(len(c) > 1 for c in a.chunks + b.chunks):  # (one matrix, cut)
        return blocked.solve(a, b)
    a = _stack(a, "solve", "a", square=True)
    b = asarray(b)
    if b.ndim == 0:
        raise ValueError("solve: b is 0-dimensional; it must be a vector (M,) or a stack of matrices "
                         "(..., M, K)")
    vector = b.ndim == 1
    _whole(b, "solve", "b", (-1,) if vector else (-2, -1))
    m = a.shape[-1]
    if vector and b.shape[0] != m:
        raise ValueError(f"solve: b of shape {b.shape} has {b.shape[0]} values, but the matrices of a "
                         f"(shape {a.shape}) are {m} x {m}")
    if not vector and b.shape[-2] != m:
        raise ValueError(f"solve: b of shape {b.shape} is a stack of matrices (b.ndim > 1) with "
                         f"{b.shape[-2]} rows, but the matrices of a (shape {a.shape}) are {m} x {m}; "
                         "a stack of vectors is solve(a, b[..., None])[..., 0]")
    loops = [a.shape[:-2], () if vector else b.shape[:-2]]
    if all(n == n for s in loops for n in s):  # (lengths a mask left unknown: blockwise checks them)
        try:
            np.broadcast_shapes(*loops)
        except ValueError:
            raise ValueError(f"solve: the stacks of a (shape {a.shape}) and b (shape {b.shape}) do not "
                             f"broadcast together: {loops[0]} and {loops[1]}") from None
    signature = "(m,n),(n)->(m)" if vector else "(m,n),(n,k)->(m,k)"
    sample = np.linalg.solve(_eye(a), np.ones(2 if vector else (2, 1), b.dtype))
    return _per_matrix(np.linalg.solve, signature, [a, b], "solve", sample)


# --------------------------------------------------------------------------- any matrices


def _diagonal_block(x: np.ndarray, offset: int) -> np.ndarray:
    """A copy: a view would hold the whole block in memory for its diagonal."""
    return np.linalg.diagonal(x, offset=offset).copy()


def _diagonal_length(m: int, n: int, offset: int) -> int:
    return max(0, min(m, n - offset) if offset >= 0 else min(m + offset, n))


def diagonal(x: Any, /, *, offset: int = 0) -> Array:
    """The ``offset`` diagonal (above the main one if positive) of each matrix of the stack
    ``x`` (``..., M, N``), as ``numpy.linalg.diagonal``.

    >>> import numpy as np, xsched.array as xa
    >>> x = xa.from_array(np.arange(18).reshape(2, 3, 3), chunks=(1, 3, 3))
    >>> diagonal(x).compute().tolist(), diagonal(x, offset=1).compute().tolist()
    ([[0, 4, 8], [9, 13, 17]], [[1, 5], [10, 14]])
    """
    offset = operator.index(offset)
    x = asarray(x)
    if x.ndim >= 2 and _cut(x):
        return diagonals.diagonal(x, offset, -2, -1)
    x = _stack(x, "diagonal", error=ValueError)
    k = _diagonal_length(x.shape[-2], x.shape[-1], offset)
    return _per_matrix(_diagonal_block, "(m,n)->(k)", [x], "diagonal", np.ones(1, x.dtype),
                       output_sizes={"k": k}, offset=offset)


def trace(x: Any, /, *, offset: int = 0, dtype: Any = None) -> Array:
    """The sum of the ``offset`` diagonal of each matrix of the stack ``x`` (``..., M,
    N``), as ``numpy.linalg.trace`` (in ``dtype`` if given, else as ``numpy.sum`` would).

    >>> import numpy as np, xsched.array as xa
    >>> trace(xa.from_array(np.arange(18).reshape(2, 3, 3), chunks=(1, 3, 3))).compute().tolist()
    [12, 39]
    """
    offset = operator.index(offset)
    x = asarray(x)
    if x.ndim >= 2 and _cut(x):
        sample = np.linalg.trace(np.ones((1, 1), x.dtype), dtype=dtype)
        return reductions.sum(diagonals.diagonal(x, offset, -2, -1), axis=-1, dtype=sample.dtype)
    x = _stack(x, "trace", error=ValueError)
    return _per_matrix(np.linalg.trace, "(m,n)->()", [x], "trace",
                       np.linalg.trace(np.ones((1, 1), x.dtype), dtype=dtype), offset=offset, dtype=dtype)


def svdvals(x: Any, /) -> Array:
    """The singular values (descending) of each matrix of the stack ``x`` (``..., M, N``),
    ``min(M, N)`` each, as ``numpy.linalg.svdvals``.

    >>> import numpy as np, xsched.array as xa
    >>> svdvals(xa.from_array(np.array([[3.0, 0.0, 0.0], [0.0, 4.0, 0.0]]), chunks=-1)).compute().tolist()
    [4.0, 3.0]
    """
    x = _stack(x, "svdvals")
    return _per_matrix(np.linalg.svdvals, "(m,n)->(k)", [x], "svdvals", np.linalg.svdvals(_eye(x)),
                       output_sizes={"k": min(x.shape[-2:])})


def matrix_norm(x: Any, /, *, keepdims: bool = False, ord: Any = "fro") -> Array:
    """The ``ord`` norm (``"fro"``, ``"nuc"``, 1, -1, 2, -2, inf, -inf) of each matrix of
    the stack ``x`` (``..., M, N``), as ``numpy.linalg.matrix_norm``; ``keepdims`` keeps the
    two matrix axes, of length 1.

    >>> import numpy as np, xsched.array as xa
    >>> x = xa.from_array(np.array([[[3.0, 0.0], [0.0, 4.0]]] * 2), chunks=(1, 2, 2))
    >>> matrix_norm(x).compute().tolist(), matrix_norm(x, ord=2, keepdims=True).shape
    ([5.0, 5.0], (2, 1, 1))
    """
    x = asarray(x)
    if x.ndim < 2:
        raise np.exceptions.AxisError(f"matrix_norm: axis -2 is out of bounds for array of dimension "
                                      f"{x.ndim}")
    sample = np.linalg.matrix_norm(_eye(x), ord=ord)  # (NumPy's error for an ord it does not take)
    if _cut(x) and not (isinstance(ord, str) and ord == "nuc") and ord not in (2, -2):
        return _norm_of_cut(x, ord, bool(keepdims)).astype(sample.dtype)
    x = _stack(x, "matrix_norm")
    out = _per_matrix(np.linalg.matrix_norm, "(m,n)->()", [x], "matrix_norm",
                      np.linalg.matrix_norm(_eye(x), ord=ord), ord=ord)
    return out[..., None, None] if keepdims else out


def _norm_of_cut(x: Array, ord: Any, keepdims: bool) -> Array:
    """The Frobenius, 1, -1, inf and -inf norms of matrices cut into blocks: sums over the
    blocks of each matrix (the largest or smallest column or row sum)."""
    magnitude = abs(x)
    if ord is None or isinstance(ord, str):  # "fro"
        squares = magnitude * magnitude
        return np.sqrt(reductions.sum(squares, axis=(-2, -1), keepdims=keepdims))
    summed, over = (-2, -1) if ord in (1, -1) else (-1, -2)
    sums = reductions.sum(magnitude, axis=summed, keepdims=True)
    pick = reductions.max if ord > 0 else reductions.min
    out = pick(sums, axis=over, keepdims=True)
    return out if keepdims else out[..., 0, 0]


def _tolerant(a: np.ndarray, *values: np.ndarray, linalg_func: Callable, names: tuple,
              **kwargs: Any) -> np.ndarray:
    """``linalg_func`` on a block with its array-valued options (tolerances: one per matrix,
    or one for all) given by name."""
    return linalg_func(a, **dict(zip(names, values)), **kwargs)


def _with_tolerances(func: Callable, signature: str, x: Array, name: str, sample: Any,
                     tolerances: dict, output_sizes: dict | None = None, **kwargs: Any) -> Array:
    """``func`` per matrix, each of ``tolerances`` (scalar or broadcasting against the stack,
    as NumPy allows) going along the stack as a gufunc argument of no core dimension."""
    names = tuple(tolerances)
    signature = signature.replace(")->", ")" + ",()" * len(names) + "->")
    return _per_matrix(_tolerant, signature, [x, *tolerances.values()], name, sample,
                       output_sizes=output_sizes, linalg_func=func, names=names, **kwargs)


def matrix_rank(A: Any, tol: Any = None, hermitian: bool = False, *, rtol: Any = None) -> Array:
    """The rank of each matrix of the stack ``A`` (``..., M, N``): its singular values above
    ``tol`` (default ``rtol`` times the largest), as ``numpy.linalg.matrix_rank``; ``tol``
    and ``rtol`` may be one per matrix. A vector or a scalar has rank 1 unless all zeros.

    >>> import numpy as np, xsched.array as xa
    >>> A = xa.from_array(np.array([np.eye(3), np.diag([1.0, 1.0, 0.0])]), chunks=(1, 3, 3))
    >>> matrix_rank(A).compute().tolist(), matrix_rank(A, tol=np.array([1.5, 0.5])).compute().tolist()
    ([3, 2], [0, 2])
    """
    if rtol is not None and tol is not None:
        raise ValueError("matrix_rank: `tol` and `rtol` can't be both set.")
    A = asarray(A)
    if A.ndim < 2:
        return _any(A != 0).astype(int)
    A = _stack(A, "matrix_rank", "A")
    tolerances = {k: v for k, v in (("tol", tol), ("rtol", rtol)) if v is not None}
    return _with_tolerances(np.linalg.matrix_rank, "(m,n)->()", A, "matrix_rank",
                            np.linalg.matrix_rank(_eye(A)), tolerances, hermitian=bool(hermitian))


def pinv(a: Any, rcond: Any = None, hermitian: bool = False, *, rtol: Any = _NOT_GIVEN) -> Array:
    """The pseudo-inverse (``N x M``) of each matrix of the stack ``a`` (``..., M, N``), as
    ``numpy.linalg.pinv``: singular values below ``rcond`` (or ``rtol``; one per matrix or
    one for all) times the largest count as zero.

    >>> import numpy as np, xsched.array as xa
    >>> pinv(xa.from_array(np.array([[2.0, 0.0], [0.0, 0.0]]), chunks=-1)).compute().tolist()
    [[0.5, 0.0], [0.0, 0.0]]
    """
    if rcond is not None and rtol is not _NOT_GIVEN:
        raise ValueError("pinv: `rtol` and `rcond` can't be both set.")
    a = _stack(a, "pinv", "a")
    tolerances = {k: v for k, v in (("rcond", rcond), ("rtol", rtol))
                  if v is not None and v is not _NOT_GIVEN}
    kwargs = {"rtol": None} if rtol is None else {}  # (NumPy's default tied to the shape and dtype)
    return _with_tolerances(np.linalg.pinv, "(m,n)->(n,m)", a, "pinv", np.linalg.pinv(_eye(a)),
                            tolerances, hermitian=bool(hermitian), **kwargs)


def matrix_transpose(x: Any, /) -> Array:
    """Each matrix of the stack ``x`` (``..., M, N``) transposed (``..., N, M``), as
    ``numpy.linalg.matrix_transpose``; any chunks.

    >>> import numpy as np, xsched.array as xa
    >>> t = matrix_transpose(xa.from_array(np.arange(12).reshape(2, 2, 3), chunks=1))
    >>> t.shape, t.compute()[1].tolist()
    ((2, 3, 2), [[6, 9], [7, 10], [8, 11]])
    """
    x = asarray(x)
    if x.ndim < 2:
        raise ValueError(f"matrix_transpose: Input array must be at least 2-dimensional, but it is {x.ndim}")
    return swapaxes(x, -1, -2)


# --------------------------------------------------------------------------- vectors


def _vector_axis(x: Array, axis: Any, name: str, arg: str) -> int:
    axis_index(axis, x.ndim, f"{name} ({arg}, of shape {x.shape})")
    return operator.index(axis)  # (negative stays negative: counted from the broadcast shapes' ends)


def cross(x1: Any, x2: Any, /, *, axis: int = -1) -> Array:
    """The cross product of the 3-vectors along ``axis`` (in one chunk) of ``x1`` and ``x2``,
    the other axes broadcasting, as ``numpy.linalg.cross``.

    >>> import numpy as np, xsched.array as xa
    >>> x1 = xa.from_array(np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]), chunks=(1, 3))
    >>> cross(x1, np.array([0.0, 1.0, 0.0])).compute().tolist()
    [[0.0, 0.0, 1.0], [0.0, 0.0, 0.0]]
    """
    x1, x2 = asarray(x1), asarray(x2)
    a1, a2 = _vector_axis(x1, axis, "cross", "x1"), _vector_axis(x2, axis, "cross", "x2")
    if x1.shape[a1] != 3 or x2.shape[a2] != 3:
        raise ValueError(f"cross: Both input arrays must be (arrays of) 3-dimensional vectors, but they are "
                         f"{x1.shape[a1]} and {x2.shape[a2]} dimensional instead (shapes {x1.shape} and "
                         f"{x2.shape}, axis {axis}).")
    _whole(x1, "cross", "x1", (a1,), "vector")
    _whole(x2, "cross", "x2", (a2,), "vector")
    v1, v2 = moveaxis(x1, a1, -1), moveaxis(x2, a2, -1)
    out = _per_matrix(np.cross, "(i),(i)->(i)", [v1, v2], "cross",
                      np.linalg.cross(np.ones(3, x1.dtype), np.ones(3, x2.dtype)))
    return moveaxis(out, -1, axis)


def vecdot(x1: Any, x2: Any, /, *, axis: int = -1) -> Array:
    """The dot product of the vectors along ``axis`` of ``x1`` (conjugated) and ``x2``, the
    other axes broadcasting, as ``numpy.linalg.vecdot``; any chunks (a sum over the axis).

    >>> import numpy as np, xsched.array as xa
    >>> x = xa.from_array(np.arange(6.0).reshape(2, 3), chunks=(1, 2))
    >>> vecdot(x, np.array([1.0, 1.0, 1.0])).compute().tolist()
    [3.0, 12.0]
    """
    x1, x2 = asarray(x1), asarray(x2)
    a1, a2 = _vector_axis(x1, axis, "vecdot", "x1"), _vector_axis(x2, axis, "vecdot", "x2")
    n1, n2 = x1.shape[a1], x2.shape[a2]
    if n1 != n2 and n1 == n1 and n2 == n2:
        raise ValueError(f"vecdot: the vectors along axis {axis} have length {n1} in x1 (shape {x1.shape}) "
                         f"but {n2} in x2 (shape {x2.shape})")
    dtype = np.linalg.vecdot(np.ones(1, x1.dtype), np.ones(1, x2.dtype)).dtype
    v1, v2 = moveaxis(x1, a1, -1), moveaxis(x2, a2, -1)
    if v1.dtype.kind == "c":
        v1 = np.conjugate(v1)
    return reductions.sum(v1 * v2, axis=-1, dtype=dtype)


def vector_norm(x: Any, /, *, axis: Any = None, keepdims: bool = False, ord: Any = 2) -> Array:
    """The ``ord`` norm (2, 1, inf, -inf, 0 or any power) of the vectors along ``axis``
    (an int or a tuple; ``None``: the whole array as one vector), as
    ``numpy.linalg.vector_norm``; any chunks (a reduction).

    >>> import numpy as np, xsched.array as xa
    >>> x = xa.from_array(np.array([[3.0, -4.0], [0.0, 1.0]]), chunks=1)
    >>> vector_norm(x, axis=1).compute().tolist(), float(vector_norm(x, ord=np.inf))
    ([5.0, 1.0], 4.0)
    """
    x = asarray(x)
    dtype = np.linalg.vector_norm(np.ones(1, x.dtype), ord=ord).dtype  # (NumPy's error for a bad ord)
    if x.ndim == 0:  # (one vector of one value: no axis to keep)
        x, axis, keepdims = x[None], None, False
    axes = reduced_axes(axis, x.ndim, "vector_norm")
    if x.dtype.kind not in "fc":
        x = x.astype(float)
    magnitude = abs(x)
    keep = dict(axis=axes, keepdims=bool(keepdims))
    if ord == np.inf:
        if any(x.shape[a] == 0 for a in axes):  # (NumPy's initial=0: no vector has no largest value)
            return reductions.sum(magnitude, **keep).astype(dtype)
        out = reductions.max(magnitude, **keep)
    elif ord == -np.inf:
        out = reductions.min(magnitude, **keep)
    elif ord == 0:
        out = reductions.sum((x != 0).astype(magnitude.dtype), **keep)
    elif ord == 1:
        out = reductions.sum(magnitude, **keep)
    elif ord == 2:
        squares = x.real * x.real + x.imag * x.imag if x.dtype.kind == "c" else x * x
        out = np.sqrt(reductions.sum(squares, **keep))
    else:
        out = reductions.sum(magnitude ** ord, **keep) ** np.reciprocal(ord, dtype=magnitude.dtype)
    return out if out.dtype == dtype else out.astype(dtype)
