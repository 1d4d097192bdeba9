"""``topk`` and ``argtopk``: the ``k`` largest values along an axis (``k < 0``: the ``-k``
smallest) and where they are, from an axis cut into any chunks.

A tree reduction (``reductions.tree_reduction``): each block keeps its own ``|k|`` best
along the axis (``numpy.argpartition``, unsorted), groups of those are joined and cut to
``|k|`` again, and the last merge sorts them: largest first for ``k > 0``, smallest first
for ``k < 0``. No task holds more than ``split_every`` times ``|k|`` slices, so a small
``k`` reads a long axis cheaply; the result is one chunk along the axis, of length
``min(|k|, n)``. ``argtopk`` carries each value's position along the axis with it; of
equal values it gives the first positions, first (as a stable sort would), whatever the
chunks. NaN counts as the largest value, as in ``numpy.sort``.

>>> import numpy as np, xsched.array as xa
>>> x = xa.from_array(np.array([5, 1, 3, 6, 2]), chunks=2)
>>> xa.topk(x, 2).compute().tolist(), xa.topk(x, -2).compute().tolist()
([6, 5], [1, 2])
>>> xa.argtopk(x, 2).compute().tolist()
[3, 0]
"""

from __future__ import annotations

import functools
import operator
from typing import Any

import numpy as np

from .chunks import _starts
from .core import Array
from .creation import asarray
from .axes import axis_index
from .masking import known_chunks_needed
from .reductions import tree_reduction

__all__ = ["topk", "argtopk"]


def _best(values: np.ndarray, positions: np.ndarray | None, k: int, axis: int) -> tuple:
    """The ``|k|`` largest (``k > 0``) or smallest values along ``axis``, with their
    positions when those are carried: then, of equal values, the first positions, kept in
    the order they came (unsorted values alone otherwise)."""
    n = values.shape[axis]
    if abs(k) >= n:
        return values, positions
    if k == 0:
        empty = (slice(None),) * axis + (slice(0, 0),)
        return values[empty], None if positions is None else positions[empty]
    kth = n - k if k > 0 else -k - 1
    order = np.argpartition(values, kth, axis=axis)
    keep = slice(n - k, None) if k > 0 else slice(None, -k)
    pick = order[(slice(None),) * axis + (keep,)]
    if positions is not None:  # (which of a tie at the k-th value: the first, in position order)
        if values.dtype.kind not in "biufmM":  # (complex: a full stable sort)
            pick = _first_of_ties(values, positions, k, axis)
        else:
            bound = np.take_along_axis(values, np.take(order, [kth], axis=axis), axis=axis)  # (the k-th best)
            tie = _equal(values, bound)
            kept = _equal(np.take_along_axis(values, pick, axis=axis), bound).sum(axis=axis)
            if (tie.sum(axis=axis) != kept).any():  # (the partition cut a tie: its first positions chosen)
                pick = _first_of_ties_partitioned(values, bound, tie, k, axis)
            else:  # (every value equal to the k-th is kept: the set is right, put in position order)
                pick = np.sort(pick, axis=axis)
    chosen = np.take_along_axis(values, pick, axis=axis)
    return chosen, None if positions is None else np.take_along_axis(positions, pick, axis=axis)


def _missing(values: np.ndarray) -> np.ndarray | None:
    """Where ``values`` are NaN (NaT), which count as the largest; None for integers."""
    kind = values.dtype.kind
    return np.isnat(values) if kind in "mM" else np.isnan(values) if kind in "fc" else None


def _equal(values: np.ndarray, bound: np.ndarray) -> np.ndarray:
    """``values == bound``, NaN (NaT) equal to NaN."""
    nan_bound = _missing(bound)
    if nan_bound is None or not nan_bound.any():
        return values == bound
    return (values == bound) | (_missing(values) & nan_bound)


def _first_of_ties_partitioned(values: np.ndarray, bound: np.ndarray, tie: np.ndarray, k: int,
                               axis: int) -> np.ndarray:
    """Where the ``|k|`` best values are along ``axis``, in the order they came: every value
    strictly better than the ``|k|``-th best (``bound``), then as many of those equal to it
    (``tie``) as are needed, the first ones (their positions increase along the axis)."""
    nan, nan_bound = _missing(values), _missing(bound)
    better = values > bound if k > 0 else values < bound
    if nan is not None:  # (NaN counts as the largest)
        better = better | ((nan & ~nan_bound) if k > 0 else (~nan & nan_bound))
    need = abs(k) - better.sum(axis=axis, keepdims=True)
    keep = better | (tie & (np.cumsum(tie, axis=axis) <= need))
    lanes = np.moveaxis(keep, axis, -1)  # (exactly |k| kept in each lane: their places, in order)
    places = np.nonzero(lanes.reshape(-1, values.shape[axis]))[1].reshape(lanes.shape[:-1] + (abs(k),))
    return np.moveaxis(places, -1, axis)


def _first_of_ties(values: np.ndarray, positions: np.ndarray, k: int, axis: int) -> np.ndarray:
    """The same for values that do not compare with ``<`` (complex): a full stable sort."""
    order = _ranked(values, k, axis)[(slice(None),) * axis + (slice(0, abs(k)),)]
    return np.sort(order, axis=axis)


def _ranked(values: np.ndarray, k: int, axis: int) -> np.ndarray:
    """The order of ``values`` along ``axis``: largest first for ``k > 0`` (smallest for
    ``k < 0``), equal values in the order they came."""
    if k < 0:
        return np.argsort(values, axis=axis, kind="stable")
    n = values.shape[axis]
    backwards = np.argsort(np.flip(values, axis=axis), axis=axis, kind="stable")
    return (n - 1) - np.flip(backwards, axis=axis)


def _chunk(block: np.ndarray, axes: tuple, k: int, carry: bool, start: int = 0) -> tuple:
    (axis,) = axes
    positions = None
    if carry:
        shape = [1] * block.ndim
        shape[axis] = block.shape[axis]
        positions = np.broadcast_to(np.arange(start, start + block.shape[axis]).reshape(shape), block.shape)
    return _best(block, positions, k, axis)


def _combine(parts: list, axis: int, k: int) -> tuple:
    values = np.concatenate([p[0] for p in parts], axis=axis)
    positions = None
    if parts[0][1] is not None:  # (put back in the order of positions, which ties are chosen by)
        positions = np.concatenate([p[1] for p in parts], axis=axis)
        order = np.argsort(positions, axis=axis, kind="stable")
        values, positions = (np.take_along_axis(v, order, axis=axis) for v in (values, positions))
    return _best(values, positions, k, axis)


def _aggregate(parts: list, axes: tuple, keepdims: bool, k: int, carry: bool) -> np.ndarray:
    (axis,) = axes
    values, positions = _combine(parts, axis, k)
    order = _ranked(values, k, axis)
    return np.take_along_axis(positions if carry else values, order, axis=axis)


def _top(a: Any, k: Any, axis: int, split_every: Any, carry: bool, what: str) -> Array:
    a = asarray(a)
    k = operator.index(k)
    axis = axis_index(axis, a.ndim, what) if a.ndim else None
    if axis is None:
        raise ValueError(f"{what}: a 0-d array has no axis to pick from")
    known_chunks_needed(a, what)
    starts = _starts(a.chunks[axis])
    block_args = (lambda index: (starts[index[axis]],)) if carry else None
    out = tree_reduction(a, what, _chunk, functools.partial(_combine, axis=axis, k=k), _aggregate, axis, True,
                         np.intp if carry else a.dtype, split_every, chunk_args=(k, carry),
                         aggregate_args=(k, carry), block_args=block_args)
    chunks = out.chunks[:axis] + ((min(abs(k), a.shape[axis]),),) + out.chunks[axis + 1:]
    return Array(out._graph, out.name, chunks, out.dtype)


def topk(a: Any, k: int, axis: int = -1, split_every: Any = None) -> Array:
    """The ``k`` largest values of ``a`` along ``axis``, largest first; for ``k < 0`` the
    ``-k`` smallest, smallest first. One chunk along ``axis``; ``split_every``: partials
    merged per task.

    >>> import numpy as np, xsched.array as xa
    >>> x = xa.from_array(np.array([[4, 9, 1], [7, 2, 8]]), chunks=1)
    >>> xa.topk(x, 2, axis=1).compute().tolist()
    [[9, 4], [8, 7]]
    >>> x.topk(-1, axis=0).compute().tolist()
    [[4, 2, 1]]
    """
    return _top(a, k, axis, split_every, False, "topk")


def argtopk(a: Any, k: int, axis: int = -1, split_every: Any = None) -> Array:
    """The positions along ``axis`` of the ``k`` largest values of ``a`` (``k < 0``: the
    ``-k`` smallest), in the order ``topk`` gives the values.

    >>> import numpy as np, xsched.array as xa
    >>> x = xa.from_array(np.array([[4, 9, 1], [7, 2, 8]]), chunks=1)
    >>> xa.argtopk(x, 2, axis=1).compute().tolist()
    [[1, 0], [2, 0]]
    """
    return _top(a, k, axis, split_every, True, "argtopk")
