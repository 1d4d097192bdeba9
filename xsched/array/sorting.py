"""``sort``, ``argsort``, ``partition`` and ``argpartition`` along an axis held whole in one
chunk (the Array API's and NumPy's), and ``searchsorted`` in a sorted 1-d array of any chunks.

Sorting along an axis needs all of it, so that axis is put in one chunk first (rechunked here
while every block that makes stays within ``array.rechunk.memory``; past it the error says
how big they would be); the other axes keep their blocks, and every block is sorted on its
own by NumPy: one task per block. A sort across blocks (a global
order of a 1-d array cut in many chunks) would need a shuffle and is not offered here.

>>> import numpy as np, xsched.array as xa
>>> x = xa.from_array(np.array([[3, 1, 2], [9, 7, 8]]), chunks=(1, 3))
>>> xa.sort(x).compute().tolist(), xa.argsort(x, descending=True).compute().tolist()
([[1, 2, 3], [7, 8, 9]], [[0, 2, 1], [0, 2, 1]])
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .axes import axis_index
from .core import Array
from .mapping import map_blocks
from .creation import asarray
from .index_notation import blockwise
from .manipulation import ravel, stack
from .rechunking import whole_axes

__all__ = ["sort", "sort_complex", "argsort", "partition", "argpartition", "searchsorted", "take_along_axis", "lexsort"]

#: NumPy's names of its sorting algorithms (``kind=``): any gives the sorted order; a stable
#: one keeps equal values in their order, which this module's sorts always do
KINDS = (None, "quicksort", "mergesort", "heapsort", "stable")


def _flat_or(x: Array, axis: Any, name: str) -> tuple[Array, int]:
    """``x`` and its axis to sort along, that axis in one chunk (``rechunking.whole_axes``);
    with ``axis=None`` the flattened array, as numpy sorts it."""
    if axis is None:
        return whole_axes(ravel(x), (0,), name), 0
    axis = axis_index(axis, x.ndim, name)
    return whole_axes(x, (axis,), name), axis


def _sort_block(block: np.ndarray, axis: int, descending: bool, stable: bool) -> np.ndarray:
    out = np.sort(block, axis=axis, kind="stable" if stable else None)
    return np.flip(out, axis=axis) if descending else out


def _argsort_block(block: np.ndarray, axis: int, descending: bool, stable: bool) -> np.ndarray:
    if not descending:
        return np.argsort(block, axis=axis, kind="stable" if stable else None)
    # descending and stable: equal values keep their order, so sort the reversed block
    # ascending, then map its positions back and reverse the result
    n = block.shape[axis]
    flipped = np.argsort(np.flip(block, axis=axis), axis=axis, kind="stable")
    return np.flip(n - 1 - flipped, axis=axis)


def _check_kind(kind: Any, order: Any, name: str) -> None:
    """NumPy's ``kind=`` and ``order=``: every kind sorts (stably here); ``order`` names fields
    of structured arrays, which blocks of numbers have not."""
    if kind not in KINDS:
        raise ValueError(f"{name}: kind must be one of {', '.join(map(repr, KINDS[1:]))}, got {kind!r}")
    if order is not None:
        raise TypeError(f"{name}: order= names fields of a structured array; these blocks have none")


def sort(x: Any, axis: int | None = -1, *, descending: bool = False, stable: bool = True, kind: Any = None,
         order: Any = None) -> Array:
    """The values sorted along ``axis`` (one chunk; ``None``: the flattened array), as
    ``numpy.sort`` (any ``kind=``: equal values keep their order); ``descending`` reverses
    the order.

    >>> import numpy as np, xsched.array as xa
    >>> xa.sort(xa.from_array(np.array([2, 3, 1]), chunks=3), descending=True).compute().tolist()
    [3, 2, 1]
    """
    _check_kind(kind, order, "sort")
    x, axis = _flat_or(asarray(x), axis, "sort")
    return map_blocks(_sort_block, x, dtype=x.dtype, name="sort", axis=axis, descending=bool(descending),
                      stable=bool(stable))


def sort_complex(a: Any) -> Array:
    """``a`` sorted along its last axis by real part, then imaginary, as complex numbers, as
    ``numpy.sort_complex`` (small integers as ``complex64``).

    >>> import numpy as np, xsched.array as xa
    >>> xa.sort_complex(xa.from_array(np.array([2, 1 + 1j, 1 - 1j]), chunks=2)).compute().tolist()
    [(1-1j), (1+1j), (2+0j)]
    """
    out = sort(asarray(a))
    if out.dtype.kind == "c":
        return out
    return out.astype(np.complex64 if out.dtype.char in "bhBH" else np.clongdouble if out.dtype.char == "g"
                      else np.complex128)


def argsort(x: Any, axis: int | None = -1, *, descending: bool = False, stable: bool = True, kind: Any = None,
            order: Any = None) -> Array:
    """The positions that sort ``x`` along ``axis`` (one chunk; ``None``: the flattened
    array), as ``numpy.argsort`` (any ``kind=``: stable); with ``descending`` (and
    ``stable``) equal values keep their order, as the Array API asks.

    >>> import numpy as np, xsched.array as xa
    >>> xa.argsort(xa.from_array(np.array([2, 1, 2]), chunks=3), descending=True).compute().tolist()
    [0, 2, 1]
    """
    _check_kind(kind, order, "argsort")
    x, axis = _flat_or(asarray(x), axis, "argsort")
    return map_blocks(_argsort_block, x, dtype=np.intp, name="argsort", axis=axis, descending=bool(descending),
                      stable=bool(stable))


def _kth(x: Array, kth: Any, axis: int, name: str) -> Any:
    """``kth`` checked against the axis' length now (NumPy checks it only when it runs)."""
    if isinstance(kth, Array):
        raise TypeError(f"{name}: kth is an xsched array; pass its values (kth.compute())")
    ks = np.atleast_1d(np.asarray(kth))
    if ks.dtype.kind not in "iu" or ks.ndim > 1:
        raise TypeError(f"{name}: kth must be an integer or a 1-d sequence of integers, got {kth!r}")
    n = x.shape[axis]
    bad = [int(k) for k in ks if n == n and n and not -n <= k < n]  # (an unknown length: NumPy checks)
    if bad:
        raise ValueError(f"{name}: kth {bad[0]} is out of bounds for axis {axis} of length {n}")
    return int(ks[0]) if np.ndim(kth) == 0 else ks.tolist()


def partition(a: Any, kth: Any, axis: int | None = -1) -> Array:
    """A copy of ``a`` with the ``kth`` element of each slice along ``axis`` where it would be
    sorted, the smaller ones before it and the others after, as ``numpy.partition``: the
    axis in one chunk (``None``: the flattened array), each block partitioned by NumPy.

    >>> import numpy as np, xsched.array as xa
    >>> x = xa.from_array(np.array([[7, 1, 5, 3], [2, 8, 6, 4]]), chunks=(1, 4))
    >>> xa.partition(x, 1).compute()[:, 1].tolist()
    [3, 4]
    """
    x, axis = _flat_or(asarray(a), axis, "partition")
    return map_blocks(np.partition, x, _kth(x, kth, axis, "partition"), dtype=x.dtype, name="partition",
                      axis=axis)


def argpartition(a: Any, kth: Any, axis: int | None = -1) -> Array:
    """The positions that partition ``a`` along ``axis`` (see ``partition``), as
    ``numpy.argpartition``: the axis in one chunk (``None``: the flattened array).

    >>> import numpy as np, xsched.array as xa
    >>> x = xa.from_array(np.array([7, 1, 5, 3]), chunks=4)
    >>> int(xa.argpartition(x, 0).compute()[0])
    1
    """
    x, axis = _flat_or(asarray(a), axis, "argpartition")
    return map_blocks(np.argpartition, x, _kth(x, kth, axis, "argpartition"), dtype=np.intp,
                      name="argpartition", axis=axis)


def _count_before(sorted_block: np.ndarray, values: np.ndarray, side: str) -> np.ndarray:
    """How many elements of one block of the sorted array go before each value."""
    return np.searchsorted(sorted_block, values, side=side)[None]


def searchsorted(x1: Any, x2: Any, *, side: str = "left", sorter: Any = None) -> Array:
    """Where the values ``x2`` would go in the sorted 1-d ``x1`` to keep it sorted, as
    ``numpy.searchsorted``. ``x1`` may be cut into any chunks: each of its blocks counts
    the elements before each value, and the counts are summed (a tree), so no block of
    ``x1`` meets another. ``sorter``: NumPy positions that sort ``x1``.

    >>> import numpy as np, xsched.array as xa
    >>> x = xa.from_array(np.array([1, 3, 3, 5, 8]), chunks=2)
    >>> xa.searchsorted(x, np.array([0, 3, 6])).compute().tolist()
    [0, 1, 4]
    >>> xa.searchsorted(x, 3, side="right").compute().tolist()
    3
    """
    if side not in ("left", "right"):
        raise ValueError(f"searchsorted: side must be 'left' or 'right', got {side!r}")
    x1 = asarray(x1)
    if x1.ndim != 1:
        raise ValueError(f"searchsorted: the sorted array must be one-dimensional, not shape {x1.shape}")
    if sorter is not None:
        x1 = x1[np.asarray(sorter)]
    x2 = asarray(x2)
    out = "".join(chr(ord("b") + i) for i in range(x2.ndim))
    counts = blockwise(_count_before, "a" + out, x1, "a", x2, out, dtype=np.intp, adjust_chunks={"a": 1},
                       name="searchsorted", side=side)
    return counts.sum(axis=0, dtype=np.intp)


def _take_along(block: np.ndarray, indices: np.ndarray, axis: int) -> np.ndarray:
    return np.take_along_axis(block, indices, axis=axis)


def take_along_axis(arr: Any, indices: Any, axis: int | None = -1) -> Array:
    """The values of ``arr`` at ``indices`` along ``axis``, as ``numpy.take_along_axis`` (what
    ``argsort`` or ``argpartition`` give picks the sorted values): ``arr``'s axis in one
    chunk, ``indices`` in any chunks, the other axes matched block by block (a length of 1
    broadcasts); the last axis unless told, as NumPy. ``axis=None``: the flattened ``arr``
    and 1-d ``indices``.

    >>> import numpy as np, xsched.array as xa
    >>> x = xa.from_array(np.array([[30, 10, 20], [5, 9, 7]]), chunks=(1, 2))
    >>> xa.take_along_axis(x, xa.argsort(x, axis=1), axis=1).compute().tolist()
    [[10, 20, 30], [5, 7, 9]]
    """
    arr, indices = asarray(arr), asarray(indices)
    if indices.dtype.kind not in "iu":
        raise TypeError(f"take_along_axis: indices must be integers, not {indices.dtype}")
    if axis is None:
        if indices.ndim != 1:
            raise ValueError(f"take_along_axis(axis=None): indices must be 1-d (the flattened array's), "
                             f"not of shape {indices.shape}")
        arr, axis = ravel(arr), 0
    if indices.ndim != arr.ndim:
        raise ValueError(f"take_along_axis: indices of shape {indices.shape} and the array of shape {arr.shape} "
                         "need as many dimensions (as in NumPy)")
    arr, axis = _flat_or(arr, axis, "take_along_axis")
    letters = "abcdefghijklmnopqrstuvwxy"[:arr.ndim]
    held = letters[:axis] + "z" + letters[axis + 1:]  # (its whole axis: one block, met by every index block)
    return blockwise(_take_along, letters, arr, held, indices, letters, concatenate=True, dtype=arr.dtype,
                     name="take-along-axis", axis=axis)


def _lexsort_block(block: np.ndarray) -> np.ndarray:
    return np.lexsort(block)


def lexsort(keys: Any) -> Array:
    """The positions that sort by several keys, the last the primary, as ``numpy.lexsort``:
    ``keys`` a sequence of equally long 1-d arrays (or a 2-d array, a key per row), put
    whole in one chunk (within ``array.rechunk.memory``) and sorted by NumPy.

    >>> import numpy as np, xsched.array as xa
    >>> first, last = xa.from_array(np.array([2, 1, 2]), chunks=2), xa.from_array(np.array([1, 1, 0]), chunks=2)
    >>> xa.lexsort([first, last]).compute().tolist()
    [2, 1, 0]
    """
    # (a list of keys is stacked without asking its length of anything: np.ndim of xsched arrays in
    # a list would compute them)
    table = stack([asarray(k) for k in keys]) if isinstance(keys, (list, tuple)) else asarray(keys)
    if table.ndim != 2:
        raise ValueError(f"lexsort: keys must be 1-d arrays of one length (or a 2-d array), got shape {table.shape}")
    table = whole_axes(table, (0, 1), "lexsort")
    return map_blocks(_lexsort_block, table, dtype=np.intp, drop_axis=0, name="lexsort")
