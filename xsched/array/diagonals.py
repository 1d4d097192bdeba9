"""Diagonals of arrays of any chunks: NumPy's ``diagonal``, ``diag`` and ``trace``.

A diagonal crosses the block grid, so it is cut where it enters a new row or column of
blocks: each piece lies in one block, is sliced out of it (``x[index]``) and read there
(``numpy.diagonal`` per block), and the pieces are joined. Nothing is rechunked and no task
holds more than a block. ``diag`` of a vector builds the matrix blockwise: the blocks on
the diagonal hold ``numpy.diag`` of the vector's pieces, the others zeros. (``xa.linalg``
has the Array API's ``diagonal`` and ``trace`` over the last two axes, each matrix in one
chunk.)

>>> import numpy as np, xsched.array as xa
>>> x = xa.from_array(np.arange(16).reshape(4, 4), chunks=(3, 2))
>>> xa.diagonal(x, offset=1).compute().tolist()
[1, 6, 11]
>>> int(xa.trace(x))
30
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from .chunks import _starts
from .core import Array
from .mapping import map_blocks
from .creation import asarray
from .index_notation import blockwise
from .axes import axis_index
from .manipulation import concatenate, moveaxis, pad
from .masking import known_chunks_needed
from .reductions import _check_out, sum as _sum

__all__ = ["diagonal", "diag", "diagflat", "trace"]


def _block_diagonal(block: np.ndarray) -> np.ndarray:
    """A copy: a view would keep the whole block in memory for its diagonal."""
    return np.diagonal(block, axis1=-2, axis2=-1).copy()


def _breaks(chunks: tuple[int, ...], first: int, length: int) -> set[int]:
    """Steps along the diagonal (starting at ``first`` on this axis) where a block starts."""
    return {s - first for s in _starts(chunks) if 0 < s - first < length}


def diagonal(a: Any, offset: int = 0, axis1: int = 0, axis2: int = 1) -> Array:
    """The ``offset`` diagonal of the matrices in axes ``axis1`` and ``axis2`` (those axes
    removed, the diagonal last), as ``numpy.diagonal``; any chunks.

    >>> import numpy as np, xsched.array as xa
    >>> x = xa.from_array(np.arange(18).reshape(2, 3, 3), chunks=2)
    >>> xa.diagonal(x, axis1=1, axis2=2).compute().tolist()
    [[0, 4, 8], [9, 13, 17]]
    """
    a = asarray(a)
    if a.ndim < 2:
        raise ValueError(f"diagonal: diag requires an array of at least two dimensions, got "
                         f"shape {a.shape}")
    ax1, ax2 = axis_index(axis1, a.ndim, "diagonal"), axis_index(axis2, a.ndim, "diagonal")
    if ax1 == ax2:
        raise ValueError(f"diagonal: axis1 and axis2 cannot be the same ({axis1}, {axis2})")
    offset = operator.index(offset)
    known_chunks_needed(a, "diagonal")
    m = moveaxis(a, (ax1, ax2), (-2, -1))
    rows, cols = m.shape[-2:]
    r0, c0 = max(0, -offset), max(0, offset)
    length = max(0, min(rows - r0, cols - c0))
    cuts = sorted({0, length} | _breaks(m.chunks[-2], r0, length)
                  | _breaks(m.chunks[-1], c0, length))
    lead = (slice(None),) * (m.ndim - 2)
    pieces = []
    for t0, t1 in zip(cuts[:-1], cuts[1:]) if length else [(0, 0)]:
        square = m[lead + (slice(r0 + t0, r0 + t1), slice(c0 + t0, c0 + t1))]
        pieces.append(map_blocks(_block_diagonal, square, drop_axis=m.ndim - 1,
                                 chunks=square.chunks[:-1], dtype=a.dtype, name="diagonal"))
    return pieces[0] if len(pieces) == 1 else concatenate(pieces, axis=-1)


def _diag_block(row: np.ndarray, col: np.ndarray, block_id: tuple = (0, 0)) -> np.ndarray:
    if block_id[0] == block_id[1]:
        return np.diag(row)
    return np.zeros((len(row), len(col)), row.dtype)


def diag(v: Any, k: int = 0) -> Array:
    """The ``k`` diagonal of a matrix ``v``, or the square matrix with the vector ``v`` on
    its ``k`` diagonal, as ``numpy.diag``.

    >>> import numpy as np, xsched.array as xa
    >>> xa.diag(xa.from_array(np.array([1, 2]), chunks=1), k=1).compute().tolist()
    [[0, 1, 0], [0, 0, 2], [0, 0, 0]]
    """
    v = asarray(v)
    k = operator.index(k)
    if v.ndim == 2:
        return diagonal(v, k)
    if v.ndim != 1:
        raise ValueError(f"diag: input must be 1- or 2-d, got shape {v.shape}")
    known_chunks_needed(v, "diag")
    square = blockwise(_diag_block, "ij", v, "i", v, "j", dtype=v.dtype, name="diag")
    if k == 0:
        return square
    n = abs(k)
    return pad(square, ((0, n), (n, 0)) if k > 0 else ((n, 0), (0, n)))


def diagflat(v: Any, k: int = 0) -> Array:
    """The square matrix with the flattened ``v`` on its ``k`` diagonal, as ``numpy.diagflat``.

    >>> import numpy as np, xsched.array as xa
    >>> xa.diagflat(xa.from_array(np.array([[1, 2]]), chunks=1)).compute().tolist()
    [[1, 0], [0, 2]]
    """
    return diag(asarray(v).ravel(), k)


def trace(a: Any, offset: int = 0, axis1: int = 0, axis2: int = 1, dtype: Any = None,
          out: Any = None) -> Array:
    """The sum of the ``offset`` diagonal of the matrices in axes ``axis1`` and ``axis2``,
    as ``numpy.trace`` (in ``dtype`` if given, else as ``numpy.sum`` would).

    >>> import numpy as np, xsched.array as xa
    >>> int(xa.trace(xa.from_array(np.arange(9).reshape(3, 3), chunks=2), offset=-1))
    10
    """
    _check_out(out, "trace")
    return _sum(diagonal(a, offset, axis1, axis2), axis=-1, dtype=dtype)
