"""Polynomials over chunked arrays, as NumPy's: ``vander``, ``polyval`` and ``polyfit``.

Why a room: these are built from the array's own pieces, not blocks of their own.
``vander`` is one block per block of ``x`` with its columns (the powers) in one chunk;
``polyval`` evaluates by Horner's rule, element-wise, so it keeps ``x``'s chunks (its
coefficients are few, a NumPy array or list, or a 1-d xsched array computed as part of
the graph); ``polyfit`` is the least-squares solution of the Vandermonde system
(``linalg.lstsq``: the tall-and-skinny QR), ``y`` one or many columns cut like ``x``.

>>> import numpy as np, xsched.array as xa
>>> x = xa.from_array(np.arange(6.0), chunks=4)
>>> np.polyval([1, 0, -1], x).compute().tolist()
[-1.0, 0.0, 3.0, 8.0, 15.0, 24.0]
>>> np.polyfit(x, 3 * x + 1, 1).compute().round(6).tolist()
[3.0, 1.0]
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from .core import Array
from .creation import asarray, zeros_like
from .decompositions import lstsq

__all__ = ["vander", "polyval", "polyfit"]


def vander(x: Any, N: int | None = None, increasing: bool = False) -> Array:
    """The Vandermonde matrix of a 1-d ``x``: column ``j`` is ``x ** (N - 1 - j)`` (or
    ``x ** j`` with ``increasing``), as ``numpy.vander``; a block per block of ``x``, the
    ``N`` columns in one chunk.

    >>> import numpy as np, xsched.array as xa
    >>> xa.vander(xa.from_array(np.array([1, 2, 3]), chunks=2), 3).compute().tolist()
    [[1, 1, 1], [4, 2, 1], [9, 3, 1]]
    """
    x = asarray(x)
    if x.ndim != 1:
        raise ValueError(f"vander: x must be one-dimensional, got shape {x.shape}")
    n = x.shape[0] if N is None else operator.index(N)
    if n != n or n < 0:  # (NaN: x's length is unknown until computed)
        raise ValueError("vander: N must be given (a whole number of columns, 0 or more) when x's length is "
                         "unknown; or x.compute_chunk_sizes() first")
    dtype = np.vander(np.ones(1, x.dtype), 1).dtype
    return x.map_blocks(np.vander, n, increasing, chunks=(x.chunks[0], (n,)), new_axis=1, dtype=dtype,
                        name="vander")


def polyval(p: Any, x: Any) -> Array:
    """The polynomial of coefficients ``p`` (highest power first) at every value of ``x``,
    as ``numpy.polyval``: Horner's rule, element-wise, in ``x``'s chunks.

    >>> import numpy as np, xsched.array as xa
    >>> xa.polyval(np.array([2, 1]), xa.arange(4, chunks=2)).compute().tolist()
    [1, 3, 5, 7]
    """
    if isinstance(p, Array):
        if p.ndim != 1 or p.shape[0] != p.shape[0]:
            raise ValueError(f"polyval: p must be 1-d with a known length, got shape {p.shape}")
        coefficients: Any = [p[i] for i in range(p.shape[0])]
    else:
        coefficients = list(np.asarray(p))
        if np.ndim(p) != 1:
            raise ValueError(f"polyval: p must be a 1-d sequence of coefficients, got shape {np.shape(p)}")
    x = asarray(x)
    out: Any = zeros_like(x)  # (as NumPy starts: x's type, promoted by the coefficients)
    for c in coefficients:
        out = out * x + c
    return out


def polyfit(x: Any, y: Any, deg: int, rcond: float | None = None, full: bool = False, w: Any = None,
            cov: bool = False) -> Any:
    """The coefficients (highest power first) of the degree-``deg`` polynomial closest to
    ``y`` in least squares, as ``numpy.polyfit``: one column of coefficients per column of a
    2-d ``y``. ``w`` weights each point (``y``'s length); ``full=True`` also gives the
    residuals, rank, singular values and ``rcond``. Each power's column is scaled to unit
    length before the solve, as NumPy does, so high degrees stay well conditioned.

    ``cov=True`` is refused: NumPy scales the covariance by the residuals' count, which its
    own rank warning decides; fit with ``full=True`` and form it from those.

    >>> import numpy as np, xsched.array as xa
    >>> x = xa.from_array(np.linspace(0, 1, 8), chunks=3)
    >>> np.polyfit(x, 2 * x ** 2 + x + 3, 2).compute().round(6).tolist()
    [2.0, 1.0, 3.0]
    """
    if cov:
        raise NotImplementedError("polyfit(cov=True): fit with full=True (residuals, rank, singular values) and "
                                  "form the covariance from them, or compute() the inputs for NumPy's")
    deg = operator.index(deg)
    if deg < 0:
        raise ValueError(f"polyfit: deg must be 0 or more, got {deg}")
    x, y = asarray(x), asarray(y)
    x = x.astype(np.result_type(x.dtype, np.float64))
    if x.ndim != 1 or y.ndim not in (1, 2):
        raise TypeError(f"polyfit: x must be 1-d and y 1- or 2-d, got shapes {x.shape} and {y.shape}")
    if x.shape[0] != x.shape[0] or y.shape[0] != y.shape[0]:
        raise ValueError("polyfit: the length of x or y is unknown until computed (a boolean mask's result); "
                         "call compute_chunk_sizes() on them first")
    if x.shape[0] != y.shape[0]:
        raise TypeError(f"polyfit: x and y must have the same length, got {x.shape[0]} and {y.shape[0]}")
    if rcond is None:
        rcond = x.shape[0] * np.finfo(x.dtype).eps
    lhs = vander(x, deg + 1)
    rhs = y.rechunk({0: x.chunks[0]})
    if w is not None:
        w = asarray(w)
        if w.ndim != 1 or w.shape[0] != y.shape[0]:
            raise TypeError(f"polyfit: w must be 1-d of y's length {y.shape[0]}, got shape {w.shape}")
        w = w.rechunk((x.chunks[0],))
        lhs = lhs * w[:, None]
        rhs = rhs * (w if rhs.ndim == 1 else w[:, None])
    scale = np.sqrt((lhs * lhs).sum(axis=0))  # (NumPy's column scaling: each column of unit length)
    coefficients, residuals, rank, s = lstsq(lhs / scale, rhs, rcond)
    coefficients = (coefficients.T / scale).T
    if full:
        return coefficients, residuals, rank, s, rcond
    return coefficients

