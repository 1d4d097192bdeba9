"""Neighbours across blocks: ``overlap``, ``trim_internal`` and ``map_overlap``.

A filter over neighbouring frames needs, for each block, a few cells of the blocks beside
it. ``overlap`` gives every block ``depth[axis]`` cells of its neighbours on each side of
each axis (corners included); ``map_overlap`` runs a function on those padded blocks and
trims the result back to the original blocks.

How the graph is built: for each block, every part of its *halo* (the cells it borrows)
is cut out of the neighbour that holds it by a small ``overlap-halo`` task, which copies
only that slice; an ``overlap`` task then joins the block with its halo pieces. So no task
holds a whole neighbour it does not own, and what travels between workers is the halo,
not the neighbouring blocks. A block's own cells are never copied before the join.

At the array's outer edges, ``boundary`` says where the missing cells come from. The
names are NumPy's ``np.pad`` modes, and the result is exactly ``np.pad`` of the whole array
(axis by axis, in axis order) cut into padded blocks:

* ``"reflect"``: ``np.pad``'s ``"reflect"``, the edge cell not repeated;
  ``1 2 3 4`` padded by 2 is ``3 2 | 1 2 3 4 | 3 2``
* ``"symmetric"``: ``"symmetric"``, the edge cell repeated: ``2 1 | 1 2 3 4 | 4 3``
* ``"periodic"`` (or ``"wrap"``): ``"wrap"``: ``3 4 | 1 2 3 4 | 1 2``
* ``"nearest"`` (or ``"edge"``): ``"edge"``: ``1 1 | 1 2 3 4 | 4 4``
* a number ``c``: ``"constant"``: ``c c | 1 2 3 4 | c c``
* ``"none"`` (the default, as in dask.array): no padding; blocks at the edge get no halo
  on their outer side

Mind the names: ``"reflect"`` here is NumPy's (the edge cell is not repeated), which is
SciPy's ``ndimage`` mode ``"mirror"``; SciPy's ``"reflect"`` (and dask.array's
``boundary="reflect"``) repeat the edge cell, which is ``"symmetric"`` here. With
``"none"``, an edge block's outer side is the array's edge, so a function that handles its
own edges (as ``scipy.ndimage`` filters do) gives the same result as on the whole array,
given a depth of at least its reach.
``boundary`` may also be a dict ``{axis: boundary}`` (axes not named get ``"none"``).

``depth`` is an int (every axis), a tuple (one per axis) or a dict ``{axis: depth}`` (axes
not named get 0). A depth larger than the smallest block along its axis is refused when
the expression is built: a halo comes from the adjacent block only. Rechunk first.

``sliding_window_view`` (NumPy's, for rolling windows) gives each block the cells after it
that its last windows need, in the same way.

Importing this module adds ``map_overlap`` to ``Array``.

>>> import numpy as np, xsched.array as xa
>>> x = xa.from_array(np.arange(8.0), chunks=4)
>>> def mean3(b):  # a 3-point moving mean; the block's outermost cells come out wrong
...     return np.convolve(b, np.ones(3) / 3, mode="same")
>>> x.map_overlap(mean3, depth=1, boundary="nearest").compute().round(2).tolist()
[0.33, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 6.67]
>>> xa.overlap(x, depth=1, boundary="periodic").compute().tolist()
[7.0, 0.0, 1.0, 2.0, 3.0, 4.0, 3.0, 4.0, 5.0, 6.0, 7.0, 0.0]
"""

from __future__ import annotations

import bisect
import itertools
import numbers
from collections.abc import Mapping
from typing import Any, Callable, Sequence

import numpy as np

from ..graph.layers import LayeredGraph, annotations_in_force, chunk_key, new_token, per_task
from ..graph.spec import Ref, Task, accepts_keyword, funcname
from .axes import axis_index
from .chunks import _starts
from .core import Array
from .mapping import _concat_grid, blocks_of
from .mapping import _infer_dtype as _infer_from_blocks
from .creation import asarray
from .masking import cut_alike, has_unknown_chunks, known_axis_needed
from . import manipulation as _manip

__all__ = ["overlap", "trim_internal", "map_overlap", "sliding_window_view", "BOUNDARIES"]

#: The ``boundary`` names and the ``np.pad`` mode each means (None: no padding).
BOUNDARIES: dict[str, str | None] = {
    "reflect": "reflect",
    "symmetric": "symmetric",
    "periodic": "wrap", "wrap": "wrap",
    "nearest": "edge", "edge": "edge",
    "none": None,
}

# One axis's boundary once normalised: an np.pad mode name, "none", or ("constant", value).
Mode = Any
# A segment of a padded block along one axis: ("center",), ("fill", length) or
# ("block", source block, first local index, step (1, -1 or 0 = repeat), length).
Segment = tuple


# --------------------------------------------------------------------------- arguments


def _normalize_depth(depth: Any, ndim: int, what: str) -> tuple[int, ...]:
    """``depth`` as one non-negative int per axis."""
    if depth is None:
        raise TypeError(f"{what}: depth= is required, e.g. depth=1, depth=(2, 0, 0) or "
                        "depth={0: 2}")
    if isinstance(depth, numbers.Integral):
        out = [int(depth)] * ndim
    elif isinstance(depth, Mapping):
        out = [0] * ndim
        for axis, d in depth.items():
            out[axis_index(axis, ndim, f"{what} (depth)")] = d
    else:
        out = list(depth)
        if len(out) != ndim:
            raise ValueError(f"{what}: depth={tuple(out)!r} has {len(out)} entries but the "
                             f"array has {ndim} dimensions; give one per axis, or a dict "
                             "{axis: depth}.")
    for axis, d in enumerate(out):
        if not isinstance(d, numbers.Integral) or d < 0:
            raise ValueError(f"{what}: depth on axis {axis} must be a non-negative int, got "
                             f"{d!r}")
    return tuple(int(d) for d in out)


def _normalize_mode(boundary: Any, axis: int, what: str) -> Mode:
    if isinstance(boundary, str):
        if boundary not in BOUNDARIES:
            raise ValueError(f"{what}: unknown boundary {boundary!r} for axis {axis}; use "
                             f"one of {sorted(BOUNDARIES)} or a number (a constant).")
        mode = BOUNDARIES[boundary]
        return "none" if mode is None else mode
    if boundary is None:
        return "none"
    if isinstance(boundary, (numbers.Number, np.generic)) and not isinstance(boundary, bool):
        return ("constant", boundary)
    if isinstance(boundary, tuple) and len(boundary) == 2 and boundary[0] == "constant":
        return boundary
    raise TypeError(f"{what}: boundary for axis {axis} must be a name "
                    f"({', '.join(sorted(BOUNDARIES))}) or a number, got {boundary!r}")


def _normalize_boundary(boundary: Any, ndim: int, what: str) -> tuple[Mode, ...]:
    """``boundary`` as one normalised mode per axis."""
    if isinstance(boundary, Mapping):
        modes: list[Mode] = ["none"] * ndim
        for axis, b in boundary.items():
            axis = axis_index(axis, ndim, f"{what} (boundary)")
            modes[axis] = _normalize_mode(b, axis, what)
        return tuple(modes)
    if isinstance(boundary, list):  # (internal: already one per axis)
        return tuple(_normalize_mode(b, a, what) for a, b in enumerate(boundary))
    return tuple(_normalize_mode(boundary, a, what) for a in range(ndim))


def _suggest_block(chunks: tuple[int, ...], depth: int) -> int:
    """A regular block length for ``x.rechunk({axis: n})`` that leaves no block shorter
    than ``depth`` (the last one included)."""
    size = sum(chunks)
    n = max(depth, max(chunks))
    while n < size and 0 < size % n < depth:
        n += 1
    return min(n, size)


def _deep_enough(chunks: Sequence[int], depth: int) -> tuple[int, ...]:
    """``chunks`` with each block shorter than ``depth`` joined to the next (the last to the
    one before), so every block can lend ``depth`` cells to its neighbours; empty blocks go.

    >>> _deep_enough((5, 1, 1, 5, 2), 3), _deep_enough((1, 4), 2)
    ((5, 9), (5,))
    """
    out: list[int] = []
    for c in chunks:
        if c == 0:
            continue
        if out and out[-1] < depth:
            out[-1] += c
        else:
            out.append(c)
    if len(out) > 1 and out[-1] < depth:
        last = out.pop()
        out[-1] += last
    return tuple(out)


def _check_depth(x: Array, depth: Sequence[int], what: str) -> None:
    """Refuse a depth that would need cells from beyond the adjacent block, or along an axis
    whose block lengths a boolean mask left unknown."""
    for axis, (d, chunks) in enumerate(zip(depth, x.chunks)):
        if d:
            known_axis_needed(x, axis, what)
        size = sum(chunks)
        if d == 0 or size == 0:
            continue
        smallest = min(c for c in chunks if c > 0)
        if d > size:
            raise ValueError(f"{what}: depth {d} on axis {axis} is larger than the axis "
                             f"itself ({size} cells); use a depth of at most {size}.")
        if d > smallest:
            raise ValueError(
                f"{what}: depth {d} on axis {axis} is larger than the smallest chunk along "
                f"that axis ({smallest}; chunks {chunks}); a block borrows cells from its "
                f"adjacent blocks only. Rechunk so that every block along axis {axis} has at "
                f"least {d} cells first, e.g. x.rechunk({{{axis}: {_suggest_block(chunks, d)}}})."
            )


# --------------------------------------------------------------------------- planning


def _added(chunks: tuple[int, ...], depth: int, mode: Mode) -> list[tuple[int, int]]:
    """Cells each block along an axis gains on its (left, right) side."""
    size = sum(chunks)
    if depth == 0 or size == 0:
        return [(0, 0)] * len(chunks)
    if mode != "none":
        return [(depth, depth)] * len(chunks)
    starts = _starts(chunks)
    return [(min(depth, starts[b]), min(depth, size - starts[b + 1]))
            for b in range(len(chunks))]


def _runs(cells: Sequence[int], starts: Sequence[int]) -> list[Segment]:
    """Cells of the whole axis (``-1``: the constant) as segments of source blocks."""
    segments: list[Segment] = []
    for g in cells:
        last = segments[-1] if segments else None
        if g < 0:
            if last is not None and last[0] == "fill":
                segments[-1] = ("fill", last[1] + 1)
            else:
                segments.append(("fill", 1))
            continue
        k = bisect.bisect_right(starts, g) - 1
        local = g - starts[k]
        if last is not None and last[0] == "block" and last[1] == k:
            _, _, first, step, length = last
            diff = local - (first + step * (length - 1))
            if length == 1 and diff in (-1, 0, 1):
                segments[-1] = ("block", k, first, diff, 2)
                continue
            if length > 1 and diff == step:
                segments[-1] = ("block", k, first, step, length + 1)
                continue
        segments.append(("block", k, local, 1, 1))
    return segments


def _axis_plan(chunks: tuple[int, ...], depth: int,
               mode: Mode) -> list[tuple[list[Segment], list[Segment]]]:
    """For each block along one axis: the segments of its left and of its right halo.

    Which cell lands where beyond the edges follows ``np.pad`` (``_edge_map``).
    """
    size = sum(chunks)
    if depth == 0 or size == 0:
        return [([], []) for _ in chunks]
    starts = _starts(chunks)
    cell = _edge_map(size, depth, mode)
    out = []
    for b in range(len(chunks)):
        lo, hi = starts[b], starts[b + 1]
        if mode == "none":
            left, right = range(max(lo - depth, 0), lo), range(hi, min(hi + depth, size))
        else:
            left, right = map(cell, range(lo - depth, lo)), map(cell, range(hi, hi + depth))
        out.append((_runs(list(left), starts), _runs(list(right), starts)))
    return out


def _edge_map(size: int, depth: int, mode: Mode) -> Callable[[int], int]:
    """Which cell of the axis ``np.pad`` puts at position ``g`` (``-depth <= g < size +
    depth``); -1 for the constant."""
    if mode == "none" or isinstance(mode, tuple):
        return lambda g: g if 0 <= g < size else -1
    if size <= 2 * depth + 1:  # short axes (np.pad may reflect more than once): ask NumPy
        table = np.pad(np.arange(size), depth, mode=mode).tolist()
        return lambda g: table[g + depth]
    # longer axes: NumPy's rules, without an index table as long as the axis
    last = size - 1
    rules: dict[str, Callable[[int], int]] = {
        "reflect": lambda g: -g if g < 0 else 2 * last - g if g > last else g,
        "symmetric": lambda g: -g - 1 if g < 0 else 2 * size - 1 - g if g > last else g,
        "wrap": lambda g: g % size,
        "edge": lambda g: min(max(g, 0), last),
    }
    return rules[mode]


def _length(segment: Segment, center: int) -> int:
    kind = segment[0]
    return center if kind == "center" else segment[1] if kind == "fill" else segment[4]


def _local_index(segment: Segment) -> tuple[slice, int | None]:
    """The slice of its source block a segment reads, and how often to repeat it."""
    if segment[0] == "center":
        return slice(None), None
    _, _, first, step, length = segment
    if step == 0:
        return slice(first, first + 1), length
    if step == 1:
        return slice(first, first + length), None
    stop = first - length
    return slice(first, stop if stop >= 0 else None, -1), None


# --------------------------------------------------------------------------- tasks


class _Fill:
    """A piece of constant cells, made by the task that joins the padded block."""

    __slots__ = ("shape", "value")

    def __init__(self, shape: tuple[int, ...], value: Any) -> None:
        self.shape, self.value = shape, value

    def __reduce__(self):
        return (_Fill, (self.shape, self.value))


def _halo(block: np.ndarray, index: tuple[slice, ...], repeats: tuple) -> np.ndarray:
    """Cut one halo piece out of a neighbour: a copy, so the neighbour is not kept alive."""
    out = np.asarray(block)[index]
    for axis, r in enumerate(repeats):
        if r is not None:
            out = np.repeat(out, r, axis=axis)
    return np.array(out, copy=True)


def _join(pieces: list, grid: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    """A padded block from its pieces, given in C order over ``grid``."""
    blocks = [np.full(p.shape, p.value, dtype=dtype) if type(p) is _Fill else np.asarray(p)
              for p in pieces]
    if len(blocks) == 1:
        return blocks[0]
    return _concat_grid(blocks, grid, tuple(range(len(grid))))


#: The share of a padded block its own cells must hold for the trimmed block to be a view of it.
TRIM_VIEW_AT_LEAST = 0.8


def _trim(block: Any, index: tuple[slice, ...], expected: tuple[int, ...] | None,
          where: str) -> np.ndarray:
    """Cut a padded block back to its own cells, after checking it has the promised shape."""
    shape = tuple(np.shape(block))
    if expected is not None and (len(shape) != len(expected) or  # (a length a mask left unknown: any)
                                 any(e == e and s != e for s, e in zip(shape, expected))):
        raise ValueError(f"{where} came back with shape {shape}, but the graph expects "
                         f"{expected} (a function given to map_overlap must return a block of "
                         "the shape of the padded block it receives).")
    out = np.asarray(block)[index]
    # A view keeps the whole padded block alive: copied when the padding is more than a fifth
    # of it; a thin halo is cheaper to keep than to copy the block past it (a pass over memory)
    return np.array(out, copy=True) if out.size < TRIM_VIEW_AT_LEAST * np.size(block) else out


# --------------------------------------------------------------------------- public


def overlap(x: Array, depth: Any, boundary: Any = "none") -> Array:
    """``x`` with each block padded by ``depth`` cells of its neighbours on each side.

    Padded blocks overlap: the array grows by ``2 * depth`` cells per block along each
    axis (less at the outer edges with ``boundary="none"``). At the outer edges the cells
    come from ``boundary``, with NumPy's ``np.pad`` meaning (see the module docstring):
    ``"reflect"``, ``"symmetric"``, ``"periodic"``, ``"nearest"``, ``"none"`` or a
    constant. ``trim_internal`` cuts the padding off again.

    >>> import numpy as np, xsched.array as xa
    >>> x = xa.from_array(np.arange(6), chunks=3)
    >>> y = xa.overlap(x, depth=1, boundary="reflect")
    >>> y.chunks
    ((5, 5),)
    >>> y.compute().tolist()
    [1, 0, 1, 2, 3, 2, 3, 4, 5, 4]
    >>> xa.overlap(x, depth={0: 2}, boundary=-1).compute().tolist()
    [-1, -1, 0, 1, 2, 3, 4, 1, 2, 3, 4, 5, -1, -1]
    """
    if not isinstance(x, Array):
        raise TypeError(f"overlap expects an xsched.array.Array, got {type(x).__name__}")
    depth_t = _normalize_depth(depth, x.ndim, "overlap")
    modes = _normalize_boundary(boundary, x.ndim, "overlap")
    _check_depth(x, depth_t, "overlap")
    return _overlap(x, depth_t, modes)


def _overlap(x: Array, depth: tuple[int, ...], modes: tuple[Mode, ...]) -> Array:
    if not any(d and n for d, n in zip(depth, x.shape)):
        return x
    plans = [_axis_plan(c, d, m) for c, d, m in zip(x.chunks, depth, modes)]
    token = new_token(x.name, depth, [repr(m) for m in modes])
    name, halo_name = f"overlap-{token}", f"overlap-halo-{token}"
    ann = annotations_in_force()
    halos: dict[str, Any] = {}
    layer: dict[str, Any] = {}
    for index in np.ndindex(*x.numblocks):
        per_axis = [left + [("center",)] + right
                    for (left, right) in (plans[a][b] for a, b in enumerate(index))]
        centers = [x.chunks[a][b] for a, b in enumerate(index)]
        grid = tuple(len(s) for s in per_axis)
        pieces: list[Any] = []
        for n, combo in enumerate(itertools.product(*per_axis)):
            shape = tuple(_length(s, c) for s, c in zip(combo, centers))
            fills = [a for a, s in enumerate(combo) if s[0] == "fill"]
            if fills:  # np.pad axis by axis: the last constant axis paints the corner
                pieces.append(_Fill(shape, modes[fills[-1]][1]))
            elif all(s[0] == "center" for s in combo):
                pieces.append(Ref(chunk_key(x.name, index)))
            else:
                source = tuple(b if s[0] == "center" else s[1] for b, s in zip(index, combo))
                cut = [_local_index(s) for s in combo]
                key = chunk_key(halo_name, tuple(index) + (n,))
                halos[key] = Task(_halo, (Ref(chunk_key(x.name, source)),
                                          tuple(c[0] for c in cut), tuple(c[1] for c in cut)),
                                  {}, per_task(ann))
                pieces.append(Ref(key))
        layer[chunk_key(name, index)] = Task(_join, (pieces, grid, x.dtype), {},
                                             per_task(ann))
    chunks = tuple(tuple(c + left + right for c, (left, right) in zip(axis, _added(axis, d, m)))
                   for axis, d, m in zip(x.chunks, depth, modes))
    graph = LayeredGraph.merge(x._graph, new={halo_name: halos, name: layer})
    return Array(graph, name, chunks, x.dtype)


def _trim_layer(x: Array, added: list[list[tuple[int, int]]], what: str,
                prefix: str = "trim") -> Array:
    """Cut ``added[axis][block]`` = (left, right) cells off each block of ``x``."""
    if not any(l or r for axis in added for (l, r) in axis):
        return x
    name = f"{prefix}-{new_token(x.name, added)}"
    ann = annotations_in_force()
    layer: dict[str, Any] = {}
    for index in np.ndindex(*x.numblocks):
        cut = tuple(slice(added[a][b][0], x.chunks[a][b] - added[a][b][1]) if added[a][b] != (0, 0)
                    else slice(None) for a, b in enumerate(index))  # (an axis of unknown lengths adds none)
        expected = tuple(x.chunks[a][b] for a, b in enumerate(index))
        where = f"{what}: block {tuple(index)} of {x.name}"
        layer[chunk_key(name, index)] = Task(
            _trim, (Ref(chunk_key(x.name, index)), cut, expected, where), {}, per_task(ann))
    chunks = tuple(tuple(c - l - r for c, (l, r) in zip(axis, add))
                   for axis, add in zip(x.chunks, added))
    return Array(LayeredGraph.merge(x._graph, new={name: layer}), name, chunks, x.dtype)


def trim_internal(x: Array, depth: Any, boundary: Any = "none") -> Array:
    """Undo ``overlap(..., depth, boundary)``: cut the borrowed cells off every block.

    Each block loses ``depth`` cells on each side of each axis; with ``boundary="none"``
    the first and last blocks along an axis lose none on their outer side. (Arrays with
    empty blocks: trim the result of ``map_overlap(..., trim=False)`` by slicing instead.)
    A block whose computed shape differs from its chunks fails, naming both shapes.

    >>> import numpy as np, xsched.array as xa
    >>> x = xa.from_array(np.arange(6), chunks=3)
    >>> y = xa.overlap(x, depth=1, boundary="none")
    >>> y.chunks
    ((4, 4),)
    >>> xa.trim_internal(y, depth=1, boundary="none").compute().tolist()
    [0, 1, 2, 3, 4, 5]
    """
    if not isinstance(x, Array):
        raise TypeError(f"trim_internal expects an xsched.array.Array, got {type(x).__name__}")
    depth_t = _normalize_depth(depth, x.ndim, "trim_internal")
    modes = _normalize_boundary(boundary, x.ndim, "trim_internal")
    added = []
    for axis, (chunks, d, m) in enumerate(zip(x.chunks, depth_t, modes)):
        if d:
            known_axis_needed(x, axis, "trim_internal")
        last = len(chunks) - 1
        sides = [(0 if (m == "none" and b == 0) else d,
                  0 if (m == "none" and b == last) else d) for b in range(len(chunks))]
        for b, (c, (l, r)) in enumerate(zip(chunks, sides)):
            if c < l + r:
                raise ValueError(f"trim_internal: block {b} along axis {axis} has {c} cells, "
                                 f"fewer than the {l + r} to cut off; was it padded with "
                                 f"depth {d} and boundary {boundary!r}?")
        added.append(sides)
    return _trim_layer(x, added, "trim_internal")


def map_overlap(func: Callable, *args: Any, depth: Any = None, boundary: Any = "none",
                trim: bool = True, dtype: Any = None, meta: Any = None, name: str | None = None,
                align_arrays: bool = True, allow_rechunk: bool = True, **kwargs: Any) -> Array:
    """Apply ``func`` to every block padded with ``depth`` cells of its neighbours, then cut
    the padding off the results.

    ``func`` receives each padded block (see ``overlap``) and must return a block of the
    same shape; that is checked when the block is trimmed, naming the block and both
    shapes. The cells of the result near a block's edge are right when ``func`` needs at
    most ``depth`` neighbours of a cell.

    * ``args``: arrays, each padded alike, and other values passed to every call unchanged.
      Arrays of other shapes are broadcast to one shape, as NumPy's operators would;
      those cut differently from the first of that shape are rechunked to its blocks
      (``align_arrays=False`` refuses them instead).
    * ``depth``: an int, a tuple per axis, or a dict ``{axis: depth}`` (default none: the
      blocks as they are). A block shorter than the depth is joined with its neighbour
      first (``allow_rechunk=False`` refuses it instead, naming the rechunk to make).
    * ``boundary``: what lies beyond the array's edges, as ``np.pad`` would pad the whole
      array: ``"reflect"`` (NumPy's: the edge cell is not repeated), ``"symmetric"``,
      ``"periodic"``, ``"nearest"``, a number, or ``"none"`` (the default: no padding there; a ``func``
      that handles edges itself then sees the true edge); or a dict ``{axis: boundary}``.
      See the module docstring for the table and SciPy's names.
    * ``trim``: False keeps the padded results (blocks ``2 * depth`` longer per axis).
    * ``dtype``: the result's dtype (default: ``meta``'s, else inferred by calling ``func``
      once on blocks of ``2 * depth + 1`` ones per axis); ``name``: the operation's name in keys (default: ``func``'s);
      ``kwargs`` go to every call, as with ``map_blocks`` (``block_id`` and ``block_info``
      describe the padded blocks).

    >>> import numpy as np, xsched.array as xa
    >>> def smooth3(frames):  # a 3-frame mean along axis 0; frames at the edges are wrong
    ...     out = frames.copy()
    ...     out[1:-1] = (frames[:-2] + frames[1:-1] + frames[2:]) / 3
    ...     return out
    >>> movie = xa.from_array(np.arange(24.0).reshape(6, 2, 2), chunks=(2, -1, -1))
    >>> y = xa.map_overlap(smooth3, movie, depth=(1, 0, 0), boundary="nearest")
    >>> y.chunks == movie.chunks
    True
    >>> y[:, 0, 0].compute().tolist()
    [1.3333333333333333, 4.0, 8.0, 12.0, 16.0, 18.666666666666668]
    """
    if not callable(func):
        raise TypeError(f"map_overlap: first argument must be a function, got {func!r}; write "
                        "xa.map_overlap(func, array, depth=...) or array.map_overlap(func, depth).")
    reshaping = sorted(k for k in ("drop_axis", "new_axis", "chunks") if k in kwargs)
    if reshaping:  # (they would reach func, which fails in every task)
        raise TypeError(f"map_overlap: {', '.join(reshaping)}= is not offered: the results are trimmed of the "
                        "overlap, so func returns blocks of the shape it was given; map over xa.overlap(x, depth, "
                        "boundary) with map_blocks(..., drop_axis=...) instead")
    name = name or kwargs.pop("token", None)
    arrays = [a for a in args if isinstance(a, Array)]
    for what, value in (("depth", depth), ("boundary", boundary)):
        if isinstance(value, list) and len(arrays) > 1:  # (dask reads a list as one per array)
            raise ValueError(f"map_overlap: {what}={value!r} is a list, which dask reads as one {what} per array "
                             f"and this map_overlap would read as one per axis; give a tuple or a dict per axis "
                             f"(every array is padded alike here)")
    if not arrays:
        raise TypeError("map_overlap: give at least one xsched array to pad and map over.")
    shapes = [a.shape for a in arrays]
    unknown = any(has_unknown_chunks(a) for a in arrays)
    if unknown:  # (lengths a mask left unknown: arrays cut alike, no depth along those axes)
        for i, a in enumerate(arrays):
            if not cut_alike(a.chunks, arrays[0].chunks):
                raise ValueError(f"map_overlap: with block lengths a boolean mask left unknown, the arrays must be "
                                 f"cut alike (the same mask's results); array {i} has chunks {a.chunks}, the first "
                                 f"{arrays[0].chunks}: call x = x.compute_chunk_sizes() on them first")
        for axis, d in enumerate(_normalize_depth(0 if depth is None else depth, arrays[0].ndim, "map_overlap")):
            if d:
                known_axis_needed(arrays[0], axis, "map_overlap")
        shape = arrays[0].shape
    else:
        try:
            shape = np.broadcast_shapes(*shapes)
        except ValueError:
            raise ValueError(f"map_overlap: the arrays' shapes {shapes} do not broadcast together; give arrays "
                             "of one shape, or of shapes NumPy broadcasts") from None
    first = arrays[0] if unknown else next((a for a in arrays if a.shape == shape), None)
    if first is None:
        first = _manip.broadcast_to(arrays[0], shape)
    args = list(args)
    for i, a in enumerate(args):
        if not isinstance(a, Array) or a is first or unknown:
            continue
        if a.shape != shape:
            a = _manip.broadcast_to(a, shape, chunks=first.chunks)
        elif a.chunks != first.chunks:
            if not align_arrays:
                raise ValueError(f"map_overlap: with align_arrays=False the arrays must be cut alike; argument "
                                 f"{i} has chunks {a.chunks}, the first {first.chunks}")
            a = a.rechunk(first.chunks)
        args[i] = a
    if depth is None:
        depth = 0
    depth_t = _normalize_depth(depth, first.ndim, "map_overlap")
    modes = _normalize_boundary(boundary, first.ndim, "map_overlap")
    if allow_rechunk:  # (blocks shorter than the depth joined with a neighbour, as dask does)
        short = {axis: _deep_enough(c, d) for axis, (d, c) in enumerate(zip(depth_t, first.chunks))
                 if 0 < d <= sum(c) and d > min(v for v in c if v > 0)}
        if short:
            first = first.rechunk(short)
            args = [a.rechunk(short) if isinstance(a, Array) else a for a in args]
    _check_depth(first, depth_t, "map_overlap")
    if dtype is None and meta is not None:
        dtype = getattr(meta, "dtype", None)
    if dtype is None and not (accepts_keyword(func, "block_id") or accepts_keyword(func, "block_info")):
        dtype = _infer_dtype(func, args, depth_t, kwargs)
    padded = [_overlap(a, depth_t, modes) if isinstance(a, Array) else a for a in args]
    prefix = name or funcname(func)
    added = [_added(c, d, m) for c, d, m in zip(first.chunks, depth_t, modes)]
    padded_out = trim and any(l or r for axis in added for (l, r) in axis)
    # the trimmed result carries the function's name (progress bars show it)
    out = blocks_of(func, padded, kwargs, None, dtype, None, None, f"{prefix}-padded" if padded_out else prefix,
                    check=not padded_out)  # (a padded block is checked where it is trimmed, naming the padding)
    if not trim:
        return out
    return _trim_layer(out, added, f"map_overlap({prefix})", prefix)


# --------------------------------------------------------------------------- windows


def _window_block(pieces: list, local: list, axis: int, window: int) -> np.ndarray:
    """The windows starting in one block: its cells and the next ``window - 1`` cells
    (``pieces`` of the blocks holding them, cut by ``local``) joined, then viewed as
    windows (the view is read-only, as NumPy's)."""
    parts = [p[(slice(None),) * axis + (sl,)] for p, sl in zip(pieces, local)]
    joined = parts[0] if len(parts) == 1 else np.concatenate(parts, axis=axis)
    return np.lib.stride_tricks.sliding_window_view(joined, window, axis=axis)


def _windows_along(x: Array, window: int, axis: int) -> Array:
    """``sliding_window_view`` along one axis: the window axis is appended last."""
    known_axis_needed(x, axis, "sliding_window_view")
    size = x.shape[axis]
    if not 0 < window <= size:
        raise ValueError(f"sliding_window_view: window {window} on axis {axis} must be between "
                         f"1 and the axis length {size}")
    count = size - window + 1  # windows along the axis
    starts = _starts(x.chunks[axis])
    plan = []  # per output block: (input block, its length, [(source block, local slice)])
    for b, (lo, hi) in enumerate(zip(starts[:-1], starts[1:])):
        length = min(hi, count) - lo
        if length <= 0:
            continue
        need_hi = lo + length + window - 1
        pieces = [(j, slice(max(lo, s) - s, min(need_hi, e) - s))
                  for j, (s, e) in enumerate(zip(starts[:-1], starts[1:]))
                  if s < need_hi and e > lo and e > s]
        plan.append((b, length, pieces))
    name = f"sliding-window-{new_token(x.name, window, axis)}"
    ann = annotations_in_force()
    layer: dict[str, Any] = {}
    for index in np.ndindex(*x.numblocks):
        if index[axis] != 0:
            continue
        for o, (_, _, pieces) in enumerate(plan):
            refs = [Ref(chunk_key(x.name, index[:axis] + (j,) + index[axis + 1:]))
                    for j, _ in pieces]
            out = index[:axis] + (o,) + index[axis + 1:] + (0,)
            layer[chunk_key(name, out)] = Task(
                _window_block, (refs, [sl for _, sl in pieces], axis, window), {},
                per_task(ann))
    chunks = (x.chunks[:axis] + (tuple(length for _, length, _ in plan),) + x.chunks[axis + 1:]
              + ((window,),))
    return Array(LayeredGraph.merge(x._graph, new={name: layer}), name, chunks, x.dtype)


def sliding_window_view(x: Any, window_shape: Any, axis: Any = None, *, subok: bool = False,
                        writeable: bool = False) -> Array:
    """Every window of ``window_shape`` cells along ``axis``, as
    ``numpy.lib.stride_tricks.sliding_window_view``: the axis shrinks to the number of
    windows and a new last axis (one block) holds each window's cells.

    Output block ``i`` along an axis holds the windows starting in input block ``i``; its
    task gets that block and the first ``window - 1`` cells after it, cut out of the
    following blocks. Several axes are windowed one after the other, their window axes
    appended in the order given. The blocks are read-only views, as NumPy's are; each
    holds ``window`` times the cells of its input.

    >>> import numpy as np, xsched.array as xa
    >>> x = xa.from_array(np.arange(6), chunks=2)
    >>> w = np.lib.stride_tricks.sliding_window_view(x, 3)   # NumPy's runs this one
    >>> w.chunks, w.compute().tolist()
    (((2, 2), (3,)), [[0, 1, 2], [1, 2, 3], [2, 3, 4], [3, 4, 5]])
    >>> sliding_window_view(x, 3).mean(axis=-1).compute().tolist()
    [1.0, 2.0, 3.0, 4.0]
    """
    if subok or writeable:
        raise NotImplementedError("sliding_window_view: subok and writeable are not supported "
                                  "by xsched arrays (blocks are read-only NumPy views)")
    x = asarray(x)
    windows = (tuple(int(w) for w in window_shape) if np.ndim(window_shape)
               else (int(window_shape),))
    if axis is None:
        if len(windows) != x.ndim:
            raise ValueError(f"sliding_window_view: window_shape {windows} needs one entry per "
                             f"axis ({x.ndim}) when axis is not given")
        axes = tuple(range(x.ndim))
    else:
        axes = (tuple(int(a) for a in axis) if np.ndim(axis) else (int(axis),))
        if len(axes) != len(windows):
            raise ValueError(f"sliding_window_view: window_shape {windows} and axis {axes} "
                             "must have the same length")
    ndim = x.ndim
    for w, a in zip(windows, axes):
        x = _windows_along(x, w, axis_index(a, ndim, "sliding_window_view"))
    return x


def _infer_dtype(func: Callable, args: Sequence[Any], depth: tuple[int, ...],
                 kwargs: dict) -> np.dtype:
    """The dtype ``func`` returns, from one call on the smallest padded blocks: a cell and
    ``depth`` neighbours on each side (a filter may need them all)."""
    return _infer_from_blocks(func, args, kwargs, "map_overlap", shape=tuple(2 * d + 1 for d in depth))


def _map_overlap_method(self: Array, func: Callable, depth: Any, boundary: Any = "none",
                        trim: bool = True, **kwargs: Any) -> Array:
    """``map_overlap(func, self, depth=depth, ...)``; see ``xsched.array.map_overlap``.

    >>> import numpy as np, xsched.array as xa
    >>> x = xa.from_array(np.array([0.0, 0, 3, 0, 0, 0]), chunks=3)
    >>> x.map_overlap(lambda b: np.maximum(b, np.roll(b, 1)), depth=1, boundary=0,
    ...               dtype=x.dtype).compute().tolist()
    [0.0, 0.0, 3.0, 3.0, 0.0, 0.0]
    """
    return map_overlap(func, self, depth=depth, boundary=boundary, trim=trim, **kwargs)


Array.map_overlap = _map_overlap_method  # type: ignore[attr-defined]
