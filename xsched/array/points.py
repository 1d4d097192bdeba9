"""Pointwise indexing with several integer arrays: ``x[rows, cols]`` as NumPy pairs them,
and ``x.vindex[...]`` (dask's name, the points' axes always first).

The arrays broadcast to one shape of points; each point falls in one block. The points are
cut, in their order, into output chunks of the largest input chunk size; each output chunk
takes from every block it needs only its points (a small task per block and output chunk),
then joins them in the order asked, as ``take`` does along one axis::

    block b of x --points-pick-<token>-(c, .., b) = block_b[points of chunk c in b]--\\
                                                  points-<token>-(c, ..) = concatenate(picks)[order]

so a task holds at most one input block and one output chunk however scattered the points.
The other axes keep their chunks; slices on them are applied first. The indices are known
when built, so an index out of bounds fails then, naming it and the axis.

>>> import numpy as np, xsched.array as xa
>>> x = xa.from_array(np.arange(20).reshape(4, 5), chunks=2)
>>> x[[0, 3, 1], [4, 0, 2]].compute().tolist()
[4, 15, 7]
>>> x.vindex[[[0, 1], [2, 3]], 1].compute().tolist()
[[1, 6], [11, 16]]
"""

from __future__ import annotations

import itertools
import numbers
from typing import Any

import numpy as np

from ..graph.layers import annotations_in_force, chunk_key, new_token, per_task
from ..graph.spec import Ref, Task
from . import masking as _masking
from .take import is_integer_index, join_pieces, normalize_indices, picked_array

__all__ = ["pointwise"]


def _pick_points(block: np.ndarray, axes: tuple, coords: tuple, adjacent: bool) -> np.ndarray:
    """The points at ``coords`` (one array per axis in ``axes``) of ``block``, their axis first."""
    index = [slice(None)] * block.ndim
    for axis, c in zip(axes, coords):
        index[axis] = c
    out = block[tuple(index)]
    return np.moveaxis(out, axes[0], 0) if adjacent and axes[0] else out


def _join_points(pieces: list, order: np.ndarray | None) -> np.ndarray:
    out = np.concatenate(pieces, axis=0)
    return out if order is None else out[order]


def pointwise(x: Any, index: tuple, points_first: bool = False) -> Any:
    """``x[index]`` where ``index`` (one entry per axis: ints, slices, integer arrays; at
    least one array) pairs its arrays and ints point by point, as NumPy's advanced indexing;
    the points' axes go where NumPy puts them (in place of the indexed axes when those are
    side by side, else first), or first when ``points_first``.

    >>> import numpy as np, xsched.array as xa
    >>> x = xa.from_array(np.arange(24).reshape(2, 3, 4), chunks=2)
    >>> pointwise(x, (slice(None), [2, 0], [3, 1])).compute().tolist()
    [[11, 1], [23, 13]]
    >>> pointwise(x, (slice(None), [2, 0], [3, 1]), points_first=True).shape
    (2, 2)
    """
    _refuse_lazy_positions(index, "a pointwise index")
    _masking.known_chunks_needed(x, "a pointwise index")
    if any(i is None for i in index):
        raise IndexError("np.newaxis (None) with several integer arrays is not supported; add the axis "
                         "after indexing (y[:, None])")
    index = tuple(index) + (slice(None),) * (x.ndim - len(index))
    axes = tuple(p for p, i in enumerate(index) if is_integer_index(i) or isinstance(i, numbers.Integral))
    arrays = [np.asarray(index[p]) for p in axes]
    if any(a.dtype == np.bool_ for a in arrays):
        raise IndexError("a boolean array among several integer arrays is not supported; index with "
                         "np.flatnonzero(mask) in its place")
    if any(isinstance(i, slice) and i != slice(None) for i in index):  # (slices first: the axes stay)
        x = x[tuple(slice(None) if p in axes else i for p, i in enumerate(index))]
    try:
        shape = np.broadcast_shapes(*(a.shape for a in arrays))
    except ValueError:
        raise IndexError("shape mismatch: the index arrays could not be broadcast together with shapes "
                         + " ".join(str(a.shape) for a in arrays)) from None
    coords = [normalize_indices(np.broadcast_to(a, shape).ravel(), x.shape[ax], ax) for a, ax in zip(arrays, axes)]
    adjacent = axes == tuple(range(axes[0], axes[-1] + 1))
    out = _points(x, axes, coords, adjacent)
    if adjacent and axes[0] and not points_first:
        out = out.transpose(list(range(1, axes[0] + 1)) + [0] + list(range(axes[0] + 1, out.ndim)))
    if len(shape) != 1:
        at = axes[0] if adjacent and not points_first else 0
        out = out.reshape(out.shape[:at] + shape + out.shape[at + 1:])
    return out


def _refuse_lazy_positions(index: tuple, what: str) -> None:
    """Raise, naming the way, when an entry of ``index`` is an xsched array: ``what`` pairs
    positions point by point when it is built, and those are known only once computed."""
    for k, i in enumerate(index):
        if hasattr(i, "__xsched_graph__"):
            raise IndexError(f"{what}: entry {k} of the index is an xsched array, whose positions are known only "
                             f"when computed, and {what} pairs them point by point when it is built; compute it "
                             "first (np.asarray(positions))")


def _points(x: Any, axes: tuple, coords: list, adjacent: bool) -> Any:
    """The points ``coords`` on ``axes`` of ``x`` as an array whose first axis runs over them."""
    n = len(coords[0])
    rest = [a for a in range(x.ndim) if a not in axes]
    starts = [np.cumsum((0,) + tuple(x.chunks[a])) for a in axes]
    blocks = [np.searchsorted(s[1:], c, side="right") for s, c in zip(starts, coords)]
    local = [c - s[b] for c, s, b in zip(coords, starts, blocks)]
    grid = tuple(len(x.chunks[a]) for a in axes)
    block_id = np.ravel_multi_index(blocks, grid) if n else np.zeros(0, dtype=np.intp)
    step = max(1, max(max(x.chunks[a], default=1) for a in axes))
    bounds = list(range(0, n, step)) + [n] if n else [0, 0]
    name = new_token(x.name, "points", axes, [c.tobytes() for c in coords])
    pick_name, join_name = f"points-pick-{name}", f"points-{name}"
    ann = annotations_in_force()
    picks: dict[str, Any] = {}
    joins: dict[str, Any] = {}
    for c in range(len(bounds) - 1):
        ids = block_id[bounds[c]:bounds[c + 1]]
        here = [lc[bounds[c]:bounds[c + 1]] for lc in local]
        if not len(ids):  # (no points: one empty chunk, cut from block 0)
            used, chosen, order = [0], {0: tuple(np.zeros(0, dtype=np.intp) for _ in axes)}, None
        else:
            used = sorted(set(ids.tolist()))
            chosen = {u: tuple(h[ids == u] for h in here) for u in used}
            by_block = np.argsort(ids, kind="stable")
            order = None if np.all(by_block[1:] > by_block[:-1]) else np.argsort(by_block, kind="stable")
        for other in itertools.product(*[range(len(x.chunks[r])) for r in rest]):
            pieces = []
            for u in used:
                in_index = [0] * x.ndim
                for a, b in zip(axes, np.unravel_index(u, grid)):
                    in_index[a] = int(b)
                for r, b in zip(rest, other):
                    in_index[r] = b
                pieces.append((u, Task(_pick_points, (Ref(chunk_key(x.name, tuple(in_index))), axes, chosen[u],
                                                      adjacent), {}, per_task(ann))))
            join_pieces(picks, joins, (pick_name, join_name), (c,) + other, pieces,
                        lambda refs: Task(_join_points, (refs, order), {}, per_task(ann)))
    chunks = (tuple(bounds[i + 1] - bounds[i] for i in range(len(bounds) - 1)),) + tuple(x.chunks[r] for r in rest)
    return picked_array(x, picks, joins, (pick_name, join_name), chunks)

