"""Integer-array indexing: ``x[[3, 0, 7]]``, ``x[:, idx]``, ``take(x, idx, axis)``.

The indices are known when the expression is built (a list or a NumPy array), so the
result's chunks are known too, and an index out of bounds fails at once, naming it and
the axis's size. Along the indexed axis the result is cut into chunks of the input's
largest chunk size; each output chunk takes from every input block it needs only the rows
it picks (a small task per block and output chunk), then joins them in the order asked::

    block b of x --pick-<token>-(.., c, b) = block_b[rows of b that chunk c picks]--\\
                                                      join-<token>-(.., c) = concatenate(picks)[order]
    (a chunk that picks from one block only is that pick, with no join)

So a task holds at most one input block and one output chunk, however scattered the
indices are; indices that run in order from one block cost one task per output chunk.

Indices that are themselves an xsched array (``coords[x.argmax(axis=0)]``, as xarray's
``idxmax`` does) are not known when built: the indexed axis is joined into one chunk, and each
block of the indices takes from it (``take_lazy``); the result has the indices' chunks.

>>> import numpy as np, xsched.array as xa
>>> x = xa.from_array(np.arange(12).reshape(3, 4), chunks=2)
>>> x[[2, 0]].compute().tolist(), x[:, [3, 0, 3]].chunks
([[8, 9, 10, 11], [0, 1, 2, 3]], ((2, 1), (2, 1)))
"""

from __future__ import annotations

import itertools
from typing import Any, Callable

import numpy as np

from ..graph.layers import LayeredGraph, annotations_in_force, chunk_key, new_token, per_task
from ..graph.spec import Ref, Task
from . import masking as _masking
from .axes import axis_index
from .creation import asarray
from .rechunking import joined, rechunk

__all__ = ["take", "take_lazy", "is_integer_index", "normalize_indices", "shuffle"]


def is_integer_index(index: Any) -> bool:
    """Whether ``index`` (one entry of an indexing tuple) is a list or NumPy array of
    integers (or booleans along one axis), rather than an int, a slice, None or '...'.

    >>> is_integer_index([1, 2]), is_integer_index(np.array([True, False])), is_integer_index(3)
    (True, True, False)
    """
    if isinstance(index, list):
        return True
    return isinstance(index, np.ndarray) and index.ndim > 0  # (a float one fails in normalize_indices)


def zero_d_as_int(index: Any) -> Any:
    """``index`` (an entry or a tuple of them) with each 0-d NumPy array of integers made the
    int it holds, as NumPy takes one (``x[np.array(2)]`` is ``x[2]``).

    >>> zero_d_as_int((np.array(2), slice(None))), zero_d_as_int(np.int64(3))
    ((2, slice(None, None, None)), np.int64(3))
    """
    def one(i: Any) -> Any:
        return int(i) if isinstance(i, np.ndarray) and i.ndim == 0 and i.dtype.kind in "iu" else i
    return tuple(one(i) for i in index) if isinstance(index, tuple) else one(index)


def normalize_indices(indices: Any, size: int, axis: int) -> np.ndarray:
    """``indices`` as non-negative ``intp`` positions on an axis of ``size``: a boolean
    array of that length becomes the positions where it is true; negative ones count from
    the end. Raises IndexError naming an index out of bounds.

    >>> normalize_indices([-1, 0], 4, 0).tolist(), normalize_indices(np.array([True, False, True]), 3, 1).tolist()
    ([3, 0], [0, 2])
    >>> normalize_indices([4], 4, 1)
    Traceback (most recent call last):
    ...
    IndexError: index 4 is out of bounds for axis 1 with size 4
    """
    idx = np.asarray(indices)
    if idx.dtype == np.bool_:
        if idx.ndim != 1 or len(idx) != size:
            raise IndexError(f"a boolean index along axis {axis} must be one-dimensional with the axis's length "
                             f"{size}, not shape {idx.shape}")
        return np.flatnonzero(idx)
    if idx.size == 0:
        idx = idx.astype(np.intp)
    if idx.dtype.kind not in "iu":
        raise IndexError(f"arrays used as indices must be of integer (or boolean) type, not {idx.dtype} "
                         f"(axis {axis})")
    if idx.ndim != 1:
        raise IndexError(f"an integer index along axis {axis} must be one-dimensional, not shape {idx.shape}; "
                         "index with idx.ravel() and reshape the result")
    bad = idx[(idx < -size) | (idx >= size)]
    if len(bad):
        raise IndexError(f"index {bad[0]} is out of bounds for axis {axis} with size {size}")
    return np.where(idx < 0, idx + size, idx).astype(np.intp)


def _pick(block: np.ndarray, axis: int, rows: Any) -> np.ndarray:
    """The ``rows`` (an index array, or a slice for a run in order) of ``block`` along ``axis``."""
    out = block[(slice(None),) * axis + (rows,)]
    if isinstance(rows, slice) and out.base is not None and out.size < block.size:
        out = out.copy()  # a small result must not keep the whole block alive in worker memory
    return out


def _join(pieces: list, axis: int, order: np.ndarray | None) -> np.ndarray:
    """Pieces picked from consecutive blocks, joined along ``axis`` and put in the asked ``order``."""
    out = np.concatenate(pieces, axis=axis)
    return out if order is None else np.take(out, order, axis=axis)


def _rows(local: np.ndarray) -> Any:
    """A run of consecutive increasing positions as a slice (no index array to ship or apply)."""
    if len(local) and local[-1] - local[0] == len(local) - 1 and (len(local) == 1 or np.all(np.diff(local) == 1)):
        return slice(int(local[0]), int(local[-1]) + 1)
    return local


def take(x: Any, indices: Any, axis: int | None = None, mode: str = "raise") -> Any:
    """The elements of ``x`` at ``indices`` (a list or NumPy array of integers, negative ones
    counting from the end) along ``axis``, like ``numpy.take``; ``x[..., indices, ...]``
    calls it. ``mode`` as NumPy's: ``"raise"`` refuses positions out of range, ``"wrap"``
    wraps them around the axis, ``"clip"`` clips them to it (negative ones to 0).

    As in NumPy, ``axis=None`` (the default) takes from the flattened array, and booleans
    are the integers 0 and 1 (for a boolean mask, index: ``x[mask]``). The Array API
    standard requires ``axis`` for an array of more than one dimension, so portable code
    gives it.

    >>> import numpy as np, xsched.array as xa
    >>> x = xa.from_array(np.arange(10) * 10, chunks=3)
    >>> y = xa.take(x, [9, 0, 4, 5, -1])
    >>> y.chunks, y.compute().tolist()
    (((3, 2),), [90, 0, 40, 50, 90])
    >>> xa.take(x.reshape(2, 5), [1, 7]).compute().tolist()
    [10, 70]
    >>> xa.take(x.reshape(2, 5), -1, axis=1).compute().tolist()
    [40, 90]
    >>> xa.take(x, [[1, 2], [0, 0]]).compute().tolist()
    [[10, 20], [0, 0]]
    >>> xa.take(x, [10])
    Traceback (most recent call last):
    ...
    IndexError: index 10 is out of bounds for axis 0 with size 10
    >>> xa.take(x, x.argmax()[None] - 9).compute().tolist()   # positions known only when computed
    [0]
    >>> xa.take(x, [-12, 13], mode="wrap").compute().tolist(), xa.take(x, [-12, 13], mode="clip").compute().tolist()
    ([80, 30], [0, 90])
    """
    if axis is None:
        if x.ndim != 1:
            x = x.ravel()
        axis = 0
    axis = axis_index(axis, x.ndim, "take")
    _masking.known_axis_needed(x, axis, "an integer-array index")
    if mode != "raise":
        indices = _in_range(indices, int(x.shape[axis]), mode)
    if hasattr(indices, "__xsched_graph__"):  # (lazy positions: see take_lazy; np.asarray would compute them)
        if getattr(indices, "dtype", None) == np.bool_:
            indices = indices.astype(np.intp)  # (NumPy's take reads booleans as 0 and 1)
        return take_lazy(x, indices, axis)
    indices = np.asarray(indices)
    if indices.dtype == np.bool_:  # NumPy's take reads booleans as 0 and 1, not as a mask
        indices = indices.astype(np.intp)
    if indices.ndim == 0:  # one position: the axis goes, as with x[..., i]
        return take(x, indices[None], axis)[(slice(None),) * axis + (0,)]
    if indices.ndim > 1:  # the axis becomes the indices' axes, as in NumPy
        flat = take(x, indices.ravel(), axis)
        return flat.reshape(x.shape[:axis] + indices.shape + x.shape[axis + 1:])
    idx = normalize_indices(indices, x.shape[axis], axis)
    step = max(max(x.chunks[axis], default=1), 1)
    bounds = list(range(0, len(idx), step)) + [len(idx)] if len(idx) else [0, 0]
    return _taken(x, idx, axis, tuple(bounds[i + 1] - bounds[i] for i in range(len(bounds) - 1)), "take")


def _taken(x: Any, idx: np.ndarray, axis: int, out_axis: tuple, what: str) -> Any:
    """``x`` at the positions ``idx`` (non-negative, in bounds) along ``axis``, cut into
    chunks ``out_axis`` there (see the module docstring for the tasks)."""
    in_chunks = x.chunks[axis]
    starts = np.cumsum((0,) + tuple(in_chunks))
    bounds = np.cumsum((0,) + tuple(out_axis)).tolist()
    block_of = np.searchsorted(starts[1:], idx, side="right")
    name = new_token(x.name, what, axis, idx.tobytes(), str(idx.dtype), out_axis)
    pick_name, join_name = f"{what}-pick-{name}", f"{what}-{name}"
    ann = annotations_in_force()
    picks: dict[str, Any] = {}
    joins: dict[str, Any] = {}
    other = [range(len(c)) for c in x.chunks]
    other[axis] = range(1)
    for c in range(len(out_axis)):
        sub, sub_blocks = idx[bounds[c]:bounds[c + 1]], block_of[bounds[c]:bounds[c + 1]]
        if len(sub) == 0:  # an empty selection keeps one empty block, cut from block 0
            used, rows = [0], {0: np.zeros(0, dtype=np.intp)}
            order = None
        else:
            used = sorted(set(sub_blocks.tolist()))
            rows = {b: _rows(sub[sub_blocks == b] - starts[b]) for b in used}
            by_block = np.argsort(sub_blocks, kind="stable")
            order = None if np.all(by_block[1:] > by_block[:-1]) else np.argsort(by_block, kind="stable")
        for grid in itertools.product(*other):
            pieces = [(b, Task(_pick, (Ref(chunk_key(x.name, grid[:axis] + (b,) + grid[axis + 1:])), axis, rows[b]),
                               {}, per_task(ann))) for b in used]
            join_pieces(picks, joins, (pick_name, join_name), grid[:axis] + (c,) + grid[axis + 1:], pieces,
                        lambda refs: Task(_join, (refs, axis, order), {}, per_task(ann)))
    chunks = x.chunks[:axis] + (out_axis,) + x.chunks[axis + 1:]
    return picked_array(x, picks, joins, (pick_name, join_name), chunks)


def shuffle(x: Any, indexer: list, axis: int, chunks: str = "auto") -> Any:
    """``x`` reordered along ``axis`` by groups of positions, each group kept in one chunk,
    as dask's ``x.shuffle`` (xarray's ``groupby(...).shuffle_to_chunks()`` asks for it):
    the groups follow each other in ``indexer``'s order, and consecutive groups share a
    chunk while it stays within 1.25 times the axis's mean chunk length (a longer group is
    a chunk of its own). Where a group makes a chunk longer than the input's longest, the
    other axes' blocks are split to keep blocks about as large as before. Positions in no
    group are left out.

    >>> import numpy as np, xsched.array as xa
    >>> x = xa.from_array(np.arange(1, 17).reshape(2, 8), chunks=(2, 4))
    >>> y = x.shuffle([[6, 5, 2], [4, 1], [3, 0, 7]], axis=1)
    >>> y.chunks, y.compute()[0].tolist()
    (((2,), (5, 3)), [7, 6, 3, 5, 2, 4, 1, 8])
    """
    x = asarray(x)
    _masking.known_chunks_needed(x, "shuffle")
    axis = axis_index(axis, x.ndim, "shuffle")
    if chunks != "auto":
        raise ValueError(f"shuffle: chunks takes 'auto' only (the groups set the chunks along the axis), got {chunks!r}")
    if not isinstance(indexer, (list, tuple)) or not indexer or not all(
            isinstance(g, (list, tuple, np.ndarray)) for g in indexer):
        raise ValueError("shuffle: the indexer must be a list of lists of positions (a list per group), "
                         "e.g. [[6, 5, 2], [4, 1], [3, 0, 7]]")
    groups = [normalize_indices(np.asarray(g, dtype=np.intp), x.shape[axis], axis) for g in indexer]
    limit = 1.25 * x.shape[axis] / max(len(x.chunks[axis]), 1)
    lengths: list[int] = []
    for g in groups:
        if lengths and lengths[-1] + len(g) <= limit:
            lengths[-1] += len(g)
        else:
            lengths.append(len(g))
    idx = np.concatenate(groups) if groups else np.zeros(0, np.intp)
    grow = max(lengths, default=0) / max(max(x.chunks[axis], default=1), 1)
    if grow > 1.25 and x.ndim > 1:  # (split the other axes so the blocks stay near their size)
        x = _split_other_axes(x, axis, grow)
    return _taken(x, idx, axis, tuple(lengths), "shuffle")


def _split_other_axes(x: Any, axis: int, grow: float) -> Any:
    """``x`` with the blocks of its axes other than ``axis`` cut into pieces, ``grow`` times
    fewer cells per block over them (each block split on its own: no data joins others)."""
    others = [a for a in range(x.ndim) if a != axis]
    per_axis = grow ** (1 / len(others))
    new = list(x.chunks)
    for a in others:
        pieces = []
        for c in x.chunks[a]:
            size = max(1, int(c / per_axis))  # (each piece at most 1 / per_axis of its block)
            pieces += [size] * (c // size) + ([c % size] if c % size else []) if c else [c]
        new[a] = tuple(pieces)
    return rechunk(x, tuple(new))


def join_pieces(picks: dict, joins: dict, names: tuple, out_index: tuple, pieces: list, join: Callable) -> None:
    """Output chunk ``out_index`` from ``pieces`` (``(block number, task)``, one per input
    block it needs): a single piece is the chunk; else each is a task of its own, named
    ``names[0]``, and ``join(refs)`` makes the chunk (named ``names[1]``) from them."""
    pick_name, join_name = names
    if len(pieces) == 1:
        joins[chunk_key(join_name, out_index)] = pieces[0][1]
        return
    refs = []
    for b, task in pieces:
        key = chunk_key(pick_name, out_index + (b,))
        picks[key] = task
        refs.append(Ref(key))
    joins[chunk_key(join_name, out_index)] = join(refs)


def picked_array(x: Any, picks: dict, joins: dict, names: tuple, chunks: tuple) -> Any:
    """The array of chunks ``joins`` (``join_pieces``) over ``x``'s graph."""
    new = {names[0]: picks, names[1]: joins} if picks else {names[1]: joins}
    return type(x)(LayeredGraph.merge(x._graph, new=new), names[1], chunks, x.dtype)


def _take_block(block: np.ndarray, indices: np.ndarray, axis: int, size: int) -> np.ndarray:
    indices = np.asarray(indices)
    bad = (indices < -size) | (indices >= size)
    if bad.any():
        raise IndexError(f"index {int(indices[bad].flat[0])} is out of bounds for axis {axis} with size {size}")
    return np.take(block, indices, axis=axis)


def _in_range(indices: Any, n: int, mode: Any) -> Any:
    """``take``'s positions brought into ``range(n)`` as NumPy's ``mode`` does: ``"wrap"``
    modulo ``n``, ``"clip"`` to the ends (NumPy's error for another mode or an empty axis)."""
    if not isinstance(mode, str) or mode not in ("clip", "wrap"):
        raise ValueError(f"clipmode must be one of 'clip', 'raise', or 'wrap' (got {mode!r})")
    lazy = hasattr(indices, "__xsched_graph__")
    if not lazy:
        indices = np.asarray(indices)
        if indices.dtype == np.bool_:
            indices = indices.astype(np.intp)
    if n == 0:
        if lazy or indices.size:
            raise IndexError("cannot do a non-empty take from an empty axes.")
        return indices
    return indices % n if mode == "wrap" else (indices.clip(0, n - 1) if lazy else np.clip(indices, 0, n - 1))


def take_lazy(x: Any, indices: Any, axis: int) -> Any:
    """``x`` indexed along ``axis`` by an xsched array of integers (values known only when
    computed): that axis joined into one chunk, each block of ``indices`` taking from it, so
    the result's chunks along those axes are the indices' (see the module docstring).

    >>> import numpy as np, xsched.array as xa
    >>> coords = xa.from_array(np.array([10, 20, 30]), chunks=2)
    >>> where = xa.from_array(np.array([[2, 0], [1, -1]]), chunks=1)
    >>> coords[where].compute().tolist()
    [[30, 10], [20, 30]]
    """
    from .core import Array

    if indices.dtype.kind not in "iu":
        raise TypeError(f"an xsched array of {indices.dtype} cannot index positions; integers or a 1-d "
                        "boolean mask can")
    if x.shape[axis] != x.shape[axis]:
        _masking.known_chunks_needed(x, "indexing by an xsched array of positions")
    whole = joined(x, [axis], "indexing by an xsched array of positions")
    size = int(whole.shape[axis])
    name = f"take-lazy-{new_token(whole.name, indices.name, axis)}"
    ann = annotations_in_force()
    k = indices.ndim
    layer = {}
    for out in itertools.product(*(range(len(c)) for c in whole.chunks[:axis]),
                                 *(range(len(c)) for c in indices.chunks),
                                 *(range(len(c)) for c in whole.chunks[axis + 1:])):
        source = out[:axis] + (0,) + out[axis + k:]
        layer[chunk_key(name, out)] = Task(_take_block, (Ref(chunk_key(whole.name, source)),
                                                         Ref(chunk_key(indices.name, out[axis:axis + k])), axis, size),
                                           {}, per_task(ann))
    chunks = whole.chunks[:axis] + indices.chunks + whole.chunks[axis + 1:]
    return Array(LayeredGraph.merge(whole._graph, indices._graph, new={name: layer}), name, chunks, whole.dtype)
