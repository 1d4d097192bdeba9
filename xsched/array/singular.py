"""What one matrix cut into blocks gives through its singular values: ``svdvals``,
``pinv``, ``matrix_rank`` and ``matrix_norm``'s 2, -2 and ``"nuc"`` orders.

``stacked.py`` runs NumPy's function on each matrix of a stack held whole in one chunk. A
single 2-d matrix cut into blocks goes here instead: it is put tall and skinny (its columns
in one chunk; a wider one, its rows) and factored by the SVD of ``decompositions.py``
(TSQR, then the SVD of the small ``R``), so no task holds more than a band of rows. A
square matrix of 20,000 columns makes bands of 20,000 columns: ``svd_compressed`` gives
its leading singular values at a fraction of that. Stacks of cut matrices still need each
matrix in one chunk, as ``stacked.py`` says.

>>> import numpy as np, xsched.array as xa
>>> a = np.array([[3.0, 0.0, 0.0], [0.0, 4.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0]])
>>> x = xa.from_array(a, chunks=2)
>>> svdvals(x).compute().tolist(), int(matrix_rank(x)), float(matrix_norm(x, ord=2))
([4.0, 3.0, 0.0], 2, 4.0)
>>> np.allclose(pinv(x).compute(), np.linalg.pinv(a))
True
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import reductions, stacked
from .core import Array, elemwise
from .creation import asarray
from .decompositions import svd
from .manipulation import where

__all__ = ["svdvals", "pinv", "matrix_rank", "matrix_norm", "singular_values", "cond"]


def _one_cut_matrix(x: Any) -> bool:
    """``x`` is one 2-d matrix cut into several blocks (of known lengths), not empty (NumPy's
    answers for an empty one come from ``stacked.py``, once its blocks are joined)."""
    return isinstance(x, Array) and x.ndim == 2 and stacked._cut(x) and 0 not in x.shape


def _factored(x: Array, compute_uv: bool = True) -> Any:
    """The thin SVD of a 2-d matrix, put tall and skinny (or wide with its rows whole) first."""
    skinny = x.rechunk({1: -1}) if x.shape[0] >= x.shape[1] else x.rechunk({0: -1})
    return svd(skinny, compute_uv=compute_uv)


def singular_values(x: Array) -> Array:
    """The singular values, descending, of a 2-d matrix in any chunks.

    >>> import numpy as np, xsched.array as xa
    >>> singular_values(xa.from_array(np.diag([1.0, 5.0, 2.0]), chunks=2)).compute().tolist()
    [5.0, 2.0, 1.0]
    """
    return _factored(x, compute_uv=False)


def svdvals(x: Any, /) -> Array:
    """The singular values (descending) of each matrix of the stack ``x``, as
    ``numpy.linalg.svdvals``; one 2-d matrix may be cut into blocks any way.

    >>> import numpy as np, xsched.array as xa
    >>> svdvals(xa.from_array(np.diag([2.0, 7.0]), chunks=1)).compute().tolist()
    [7.0, 2.0]
    """
    x = asarray(x)
    if not _one_cut_matrix(x):
        return stacked.svdvals(x)
    return singular_values(x).astype(np.linalg.svdvals(stacked._eye(x)).dtype)


def matrix_norm(x: Any, /, *, keepdims: bool = False, ord: Any = "fro") -> Array:
    """The ``ord`` norm of each matrix of the stack ``x``, as ``numpy.linalg.matrix_norm``
    (see ``stacked.matrix_norm``); a 2-d matrix cut into blocks takes 2, -2 and ``"nuc"``
    too, from its singular values.

    >>> import numpy as np, xsched.array as xa
    >>> float(matrix_norm(xa.from_array(np.diag([2.0, 7.0]), chunks=1), ord="nuc"))
    9.0
    """
    x = asarray(x)
    svd_order = ord in (2, -2) or (isinstance(ord, str) and ord == "nuc")
    if not (svd_order and _one_cut_matrix(x)):
        return stacked.matrix_norm(x, keepdims=keepdims, ord=ord)
    dtype = np.linalg.matrix_norm(stacked._eye(x), ord=ord).dtype
    s = singular_values(x)
    out = reductions.max(s) if ord == 2 else reductions.min(s) if ord == -2 else reductions.sum(s)
    out = out.astype(dtype)
    return out.reshape(1, 1) if keepdims else out


def cond(x: Any, p: Any = None) -> Array:
    """The condition number of each matrix of the stack ``x`` in the norm ``p`` (None or 2:
    the largest singular value over the smallest; -2, ``"fro"``, ``"nuc"``, 1, -1, inf,
    -inf of square matrices: ``norm(x) * norm(inv(x))``), as ``numpy.linalg.cond``: inf for
    a singular matrix. One 2-d matrix may be cut into blocks for ``p`` None, 2 and -2.

    >>> import numpy as np, xsched.array as xa
    >>> float(cond(xa.from_array(np.diag([2.0, 8.0]), chunks=1)))
    4.0
    >>> cond(xa.from_array(np.array([[[1.0, 0.0], [0.0, 3.0]]] * 2), chunks=(1, 2, 2)), p="fro").compute().round(6).tolist()
    [3.333333, 3.333333]
    """
    x = asarray(x)
    if x.ndim < 2:
        raise np.linalg.LinAlgError(f"cond: {x.ndim}-dimensional array given (x of shape {x.shape}). Array "
                                    "must be at least two-dimensional")
    sample = np.linalg.cond(stacked._eye(x), p)  # (NumPy's error for a p it does not take)
    if p in (None, 2, -2) and _one_cut_matrix(x):
        s = singular_values(x)
        largest, smallest = reductions.max(s), reductions.min(s)
        out = elemwise(_ratio, *((largest, smallest) if p != -2 else (smallest, largest)), np.isnan(x).any())
        return out.astype(sample.dtype)
    x = stacked._stack(x, "cond", square=p not in (None, 2, -2))
    return stacked._per_matrix(np.linalg.cond, "(m,n)->()", [x], "cond", sample, p=p)


def _ratio(top: np.ndarray, bottom: np.ndarray, holds_nan: np.ndarray) -> np.ndarray:
    """``cond``'s quotient of singular values, quietly; 0 / 0 (a zero matrix) is inf, as
    NumPy's, unless the matrix holds a NaN."""
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.true_divide(top, bottom)
    return np.where(np.isnan(out) & ~holds_nan, np.inf, out)


def _cutoff(s: Array, shape: tuple, dtype: Any, tol: Any, rtol: Any) -> Any:
    """Singular values at or below this count as zero: ``tol`` itself, else ``rtol`` (by
    default ``max(M, N)`` times the dtype's epsilon) times the largest."""
    if tol is not None:
        return tol
    if rtol is None:
        rtol = max(shape) * np.finfo(dtype).eps
    return reductions.max(s) * rtol


def matrix_rank(A: Any, tol: Any = None, hermitian: bool = False, *, rtol: Any = None) -> Array:
    """The rank of each matrix of the stack ``A``, as ``numpy.linalg.matrix_rank`` (see
    ``stacked.matrix_rank``); one 2-d matrix may be cut into blocks any way (its singular
    values above ``tol``, or ``rtol`` times the largest, are counted).

    >>> import numpy as np, xsched.array as xa
    >>> int(matrix_rank(xa.from_array(np.diag([1.0, 1.0, 0.0]), chunks=2)))
    2
    """
    A = asarray(A)
    if not _one_cut_matrix(A):
        return stacked.matrix_rank(A, tol, hermitian, rtol=rtol)
    if rtol is not None and tol is not None:
        raise ValueError("matrix_rank: `tol` and `rtol` can't be both set.")
    for name, value in (("tol", tol), ("rtol", rtol)):
        if value is not None and (isinstance(value, Array) or np.ndim(value) != 0):
            raise ValueError(f"matrix_rank: {name} of one matrix cut into blocks is one number, got shape "
                             f"{np.shape(value)}")
    s = singular_values(A)
    real = np.empty(0, s.dtype).real.dtype
    return reductions.sum(s > _cutoff(s, A.shape, real, tol, rtol)).astype(np.linalg.matrix_rank(np.eye(2)).dtype)


_NOT_GIVEN = stacked._NOT_GIVEN


def pinv(a: Any, rcond: Any = None, hermitian: bool = False, *, rtol: Any = _NOT_GIVEN) -> Array:
    """The pseudo-inverse of each matrix of the stack ``a``, as ``numpy.linalg.pinv`` (see
    ``stacked.pinv``); one 2-d matrix ``M x N`` may be cut into blocks any way: ``V S^+ U^H``
    from its SVD, chunked ``N x M`` as the matrix's transpose.

    >>> import numpy as np, xsched.array as xa
    >>> pinv(xa.from_array(np.array([[2.0, 0.0], [0.0, 0.0]]), chunks=1)).compute().tolist()
    [[0.5, 0.0], [0.0, 0.0]]
    """
    a = asarray(a)
    if not _one_cut_matrix(a):
        return stacked.pinv(a, rcond, hermitian, rtol=rtol)
    if rcond is not None and rtol is not _NOT_GIVEN:
        raise ValueError("pinv: `rtol` and `rcond` can't be both set.")
    for name, value in (("rcond", rcond), ("rtol", None if rtol is _NOT_GIVEN else rtol)):
        if value is not None and (isinstance(value, Array) or np.ndim(value) != 0):
            raise ValueError(f"pinv: {name} of one matrix cut into blocks is one number, got shape "
                             f"{np.shape(value)}")
    dtype = np.linalg.pinv(stacked._eye(a)).dtype
    u, s, vh = _factored(a.astype(dtype) if a.dtype != dtype else a)
    if rcond is None:  # (NumPy's defaults: 1e-15 when neither is given, max(M, N) * eps for rtol=None)
        rcond = 1e-15 if rtol is _NOT_GIVEN else rtol
    cutoff = reductions.max(s) * (max(a.shape) * np.finfo(s.dtype).eps if rcond is None else rcond)
    kept = s > cutoff
    inverse = where(kept, 1 / where(kept, s, 1), 0)
    out = (vh.conj().T * inverse) @ u.conj().T
    return out.rechunk((a.chunks[1], a.chunks[0])).astype(dtype)
