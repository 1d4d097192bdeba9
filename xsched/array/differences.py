"""Differences along an axis: ``diff``, ``ediff1d`` and ``gradient``, as NumPy's.

``diff`` of order ``n`` shortens the axis by ``n``: output block ``i`` holds the
differences starting in input block ``i``, so its task needs that block and the first
``n`` cells after it. Those cells are cut out of the following blocks by small
``diff-halo`` tasks (copies of a slice: no task holds a neighbour it does not own), and the
``diff`` task joins them to the block and runs ``numpy.diff`` once. Blocks past the last
difference are dropped; ``n`` may span several blocks (chunks of 1 and ``n = 3`` work).

``gradient`` pads each block with one cell of each neighbour along the axis (``overlap``
with ``boundary="none"``: the array's own edges get no padding), runs ``numpy.gradient`` on
the padded block and cuts the padding off again. Inside the array NumPy's differences are
central (a cell and its two neighbours, whatever ``edge_order``); at the array's edges the
edge blocks see the true edge and take NumPy's one-sided differences of ``edge_order``,
which need ``edge_order + 1`` cells: the first and last blocks must hold ``edge_order``
cells (one more is borrowed) and no block may be empty, which is checked when the expression is built, naming the
``rechunk`` that fixes it. Coordinates given as arrays are cut and padded like the axis.
Results equal NumPy's up to rounding: a block whose coordinates happen to be evenly spaced
takes NumPy's evenly spaced formula.

Lengths along the axis must be known: blocks of unknown length (after a boolean mask)
fail when built, pointing at ``compute_chunk_sizes()``.

>>> import numpy as np, xsched.array as xa
>>> x = xa.from_array(np.array([1, 2, 4, 7, 0]), chunks=2)
>>> xa.diff(x).compute().tolist(), xa.diff(x, n=2).chunks
([1, 2, 3, -7], ((2, 1),))
>>> np.gradient(x).compute().tolist()
[1.0, 1.5, 2.5, -2.0, -7.0]
>>> np.ediff1d(x, to_begin=0).compute().tolist()
[0, 1, 2, 3, -7]
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from ..graph.layers import LayeredGraph, annotations_in_force, chunk_key, new_token, per_task
from ..graph.spec import Ref, Task
from .axes import axis_index, axis_tuple
from .chunks import _starts
from .core import Array
from .creation import asarray, from_array
from .index_notation import blockwise
from .manipulation import broadcast_to, concatenate, ravel, where
from .overlapping import overlap, trim_internal
from .scans import cumsum

__all__ = ["diff", "ediff1d", "gradient", "unwrap"]


def _known_along(x: Array, axis: int, what: str) -> None:
    if any(c != c for c in x.chunks[axis]):
        raise ValueError(f"{what} along axis {axis} needs the lengths of the array's blocks there, which a "
                         f"boolean mask left unknown ({x.chunks[axis]}); call x = x.compute_chunk_sizes() first")


# --------------------------------------------------------------------------- diff


def _cut(block: np.ndarray, index: tuple) -> np.ndarray:
    """A neighbour's first cells, copied: the neighbour is not kept alive."""
    return np.array(block[index], copy=True)


def _diff_block(block: np.ndarray, own: tuple, halo: list, axis: int, n: int) -> np.ndarray:
    parts = [block[own], *halo]
    return np.diff(parts[0] if len(parts) == 1 else np.concatenate(parts, axis=axis), n, axis=axis)


def _diff_plan(chunks: tuple[int, ...], n: int) -> list[tuple[int, int, int, list]]:
    """Per output block: its input block, its length, how many of the block's own cells it
    reads, and the ``(block, cells)`` it borrows from the blocks after it."""
    size = sum(chunks)
    count = max(size - n, 0)  # the differences along the axis
    starts = _starts(chunks)
    plan = []
    for b, (lo, hi) in enumerate(zip(starts[:-1], starts[1:])):
        length = min(hi, count) - lo
        if length <= 0 and plan:
            continue  # past the last difference (the first block always stays: an empty result)
        length = max(length, 0)
        need = min(lo + length + n, size)
        borrowed = [(j, min(need, e) - s) for j, (s, e) in enumerate(zip(starts[1:], starts[2:]), start=1)
                    if j > b and s < need and e > s]
        plan.append((b, length, min(need, hi) - lo, borrowed))
    return plan


def _diff_once(x: Array, n: int, axis: int) -> Array:
    plan = _diff_plan(x.chunks[axis], n)
    dtype = np.diff(np.zeros(n + 1, x.dtype), n).dtype
    token = new_token("diff", x.name, n, axis)
    name, halo_name = f"diff-{token}", f"diff-halo-{token}"
    ann = annotations_in_force()
    layer: dict[str, Any] = {}
    halos: dict[str, Any] = {}
    pick = (slice(None),) * axis
    for index in np.ndindex(*x.numblocks):
        if index[axis] != 0:
            continue
        for o, (b, _, own, borrowed) in enumerate(plan):
            refs = []
            for j, cells in borrowed:
                key = chunk_key(halo_name, index[:axis] + (o, j) + index[axis + 1:])
                halos[key] = Task(_cut, (Ref(chunk_key(x.name, index[:axis] + (j,) + index[axis + 1:])),
                                         pick + (slice(0, cells),)), {}, per_task(ann))
                refs.append(Ref(key))
            source = Ref(chunk_key(x.name, index[:axis] + (b,) + index[axis + 1:]))
            layer[chunk_key(name, index[:axis] + (o,) + index[axis + 1:])] = Task(
                _diff_block, (source, pick + (slice(0, own),), refs, axis, n), {}, per_task(ann))
    chunks = x.chunks[:axis] + (tuple(length for _, length, _, _ in plan),) + x.chunks[axis + 1:]
    new = {halo_name: halos, name: layer} if halos else {name: layer}
    return Array(LayeredGraph.merge(x._graph, new=new), name, chunks, dtype)


def _edge(value: Any, x: Array, axis: int) -> Array:
    """``prepend``/``append`` as NumPy takes them: a scalar is one cell across the axis."""
    if np.ndim(value) == 0:
        shape = x.shape[:axis] + (1,) + x.shape[axis + 1:]
        return broadcast_to(asarray(value), shape, chunks=x.chunks[:axis] + ((1,),) + x.chunks[axis + 1:])
    return value if isinstance(value, Array) else from_array(np.asanyarray(value), chunks=-1)


def diff(a: Any, n: int = 1, axis: int = -1, prepend: Any = None, append: Any = None) -> Array:
    """The ``n``-th differences along ``axis``, as ``numpy.diff``: ``out[i] = a[i + 1] - a[i]``,
    ``n`` times (``!=`` for booleans); ``prepend``/``append`` (scalars or arrays) are joined
    to ``a`` along the axis first. ``n = 0`` gives ``a`` back. Each output block needs
    ``n`` cells of the blocks after it (see the module docstring).

    >>> import numpy as np, xsched.array as xa
    >>> x = xa.from_array(np.array([[1, 3, 6], [0, 0, 5]]), chunks=1)
    >>> xa.diff(x).compute().tolist(), xa.diff(x, axis=0).compute().tolist()
    ([[2, 3], [0, 5]], [[-1, -3, -1]])
    >>> xa.diff(x, prepend=0).compute().tolist()
    [[1, 2, 3], [0, 0, 5]]
    """
    n = operator.index(n)
    if n == 0:
        return asarray(a)  # (as NumPy: before any other check)
    if n < 0:
        raise ValueError(f"order must be non-negative but got {n!r}")
    x = asarray(a)
    if x.ndim == 0:
        raise ValueError("diff requires input that is at least one dimensional")
    axis = axis_index(axis, x.ndim, "diff")
    parts = [_edge(prepend, x, axis)] if prepend is not None else []
    parts.append(x)
    if append is not None:
        parts.append(_edge(append, x, axis))
    x = concatenate(parts, axis=axis) if len(parts) > 1 else x
    _known_along(x, axis, "diff")
    return _diff_once(x, n, axis)


def ediff1d(ary: Any, to_end: Any = None, to_begin: Any = None) -> Array:
    """The differences of the flattened array, as ``numpy.ediff1d``, in ``ary``'s dtype, with
    ``to_begin`` and ``to_end`` (cast to it, under NumPy's ``same_kind`` rule) around them.

    >>> import numpy as np, xsched.array as xa
    >>> x = xa.from_array(np.array([[1, 2], [4, 7]]), chunks=1)
    >>> xa.ediff1d(x, to_begin=[-9, -9], to_end=99).compute().tolist()
    [-9, -9, 1, 2, 3, 99]
    """
    x = ravel(asarray(ary))
    if x.dtype == bool:
        raise TypeError("numpy boolean subtract, the `-` operator, is not supported, use the bitwise_xor, the `^` "
                        "operator, or the logical_xor function instead.")
    _known_along(x, 0, "ediff1d")
    differences = _diff_once(x, 1, 0)
    if to_begin is None and to_end is None:
        return differences
    if not np.can_cast(differences.dtype, x.dtype, casting="same_kind"):
        raise TypeError(f"ediff1d: the differences ({differences.dtype}) cannot be stored in ary's dtype "
                        f"{x.dtype}, which to_begin/to_end ask for")
    parts = []
    for value, which in ((to_begin, "to_begin"), (differences, None), (to_end, "to_end")):
        if value is None:
            continue
        extra = value if which is None else ravel(
            value if isinstance(value, Array) else from_array(np.asanyarray(value), chunks=-1))
        if not np.can_cast(extra.dtype, x.dtype, casting="same_kind"):
            raise TypeError(f"dtype of `{which}` must be compatible with input `ary` under the `same_kind` rule.")
        parts.append(extra.astype(x.dtype, copy=False))
    return concatenate(parts)


# --------------------------------------------------------------------------- gradient


def _gradient_block(block: np.ndarray, *coordinates: np.ndarray, spacing: Any, axis: int,
                    edge_order: int) -> np.ndarray:
    return np.gradient(block, coordinates[0] if coordinates else spacing, axis=axis, edge_order=edge_order)


def _spacings(varargs: tuple, axes: tuple[int, ...], shape: tuple) -> list:
    """One spacing per axis, as NumPy reads ``varargs``: none (1), one scalar for all, or one
    scalar or 1-d coordinate array per axis."""
    if not varargs:
        return [1.0] * len(axes)
    if len(varargs) == 1 and np.ndim(varargs[0]) == 0:
        return list(varargs) * len(axes)
    if len(varargs) != len(axes):
        raise TypeError("invalid number of arguments")
    out = []
    for h, axis in zip(varargs, axes):
        if np.ndim(h) == 0:
            out.append(h)
            continue
        if np.ndim(h) != 1:
            raise ValueError("distances must be either scalars or 1d")
        if np.shape(h)[0] != shape[axis]:
            raise ValueError("when 1d, distances must match the length of the corresponding dimension")
        out.append(h if isinstance(h, Array) else np.asanyarray(h))
    return out


def _gradient_along(f: Array, h: Any, axis: int, edge_order: int, dtype: np.dtype) -> Array:
    chunks = f.chunks[axis]
    edge = 1 if edge_order == 1 else 2  # (NumPy takes the second-order edges for any other edge_order)
    if len(chunks) > 1 and (min(chunks) == 0 or min(chunks[0], chunks[-1]) < edge):
        raise ValueError(
            f"gradient: along axis {axis} the blocks are {chunks}; with edge_order={edge_order} the first and last "
            f"need at least {edge} cells and none may be empty (a block takes one cell of each neighbour); "
            f"rechunk first, e.g. f.rechunk({{{axis}: {max(edge + 1, max(chunks))}}})")
    padded = overlap(f, depth={axis: 1}, boundary="none")
    index = tuple(range(f.ndim))
    args: list = [padded, index]
    if isinstance(h, (Array, np.ndarray)):
        coordinates = asarray(h, chunks=(chunks,))
        args += [overlap(coordinates, depth=1, boundary="none"), (axis,)]
        h = None
    out = blockwise(_gradient_block, index, *args, dtype=dtype, name="gradient", spacing=h, axis=axis,
                    edge_order=edge_order)
    return trim_internal(out, depth={axis: 1}, boundary="none")


def gradient(f: Any, /, *varargs: Any, axis: Any = None, edge_order: int = 1) -> Any:
    """The gradient, as ``numpy.gradient``: central differences inside, one-sided differences
    of ``edge_order`` (1 or 2) at the edges, along each of ``axis`` (default: every axis).
    ``varargs`` are the spacings: none (1), one scalar, or one scalar or 1-d coordinate array
    (NumPy or xsched) per axis. One axis gives an array, several a tuple of arrays, as NumPy.
    See the module docstring for the blocks this needs.

    >>> import numpy as np, xsched.array as xa
    >>> f = xa.from_array(np.array([[1.0, 2.0, 6.0], [3.0, 5.0, 9.0]]), chunks=(1, 2))
    >>> dy, dx = xa.gradient(f, 2.0, [0.0, 1.0, 3.0])
    >>> dy.compute().tolist(), dx.compute().tolist()
    ([[1.0, 1.5, 1.5], [1.0, 1.5, 1.5]], [[1.0, 1.3333333333333335, 2.0], [2.0, 2.0, 2.0]])
    """
    f = asarray(f)
    axes = tuple(range(f.ndim)) if axis is None else axis_tuple(axis, f.ndim, "gradient")
    spacings = _spacings(varargs, axes, f.shape)
    edge_order = operator.index(edge_order)
    if edge_order > 2:
        raise ValueError("'edge_order' greater than 2 not supported")
    dtype = np.gradient(np.zeros(3, f.dtype), edge_order=edge_order).dtype
    outs = []
    for ax, h in zip(axes, spacings):
        _known_along(f, ax, "gradient")
        if f.shape[ax] < edge_order + 1:
            raise ValueError("Shape of array too small to calculate a numerical gradient, at least (edge_order + 1) "
                             "elements are required.")
        outs.append(_gradient_along(f, h, ax, edge_order, dtype))
    return outs[0] if len(outs) == 1 else tuple(outs)


def trapezoid(y: Any, x: Any = None, dx: Any = 1.0, axis: int = -1) -> Array:
    """The integral of ``y`` along ``axis`` by the trapezoidal rule, as ``numpy.trapezoid``:
    neighbouring cells' means times the spacing (``dx``, or the differences of ``x``),
    summed as a tree; the two shifted views meet across block boundaries as ``diff``'s do.

    >>> import numpy as np, xsched.array as xa
    >>> y = xa.from_array(np.array([1.0, 2.0, 4.0, 7.0]), chunks=2)
    >>> float(np.trapezoid(y)), float(xa.trapezoid(y, x=[0.0, 1.0, 3.0, 4.0]).compute())
    (10.0, 13.0)
    """
    y = asarray(y)
    axis = axis_index(axis, y.ndim, "trapezoid")
    _known_along(y, axis, "trapezoid")
    lead = (slice(None),) * axis
    upper, lower = y[lead + (slice(1, None),)], y[lead + (slice(None, -1),)]
    if x is None:
        d = dx
    else:
        x = asarray(x)
        if x.ndim == 1:
            d = diff(x)
            d = d.reshape(tuple(d.shape[0] if i == axis else 1 for i in range(y.ndim)))
        else:
            d = diff(x, axis=axis)
    return (d * (upper + lower) / 2.0).sum(axis=axis)



def unwrap(p: Any, discont: Any = None, axis: int = -1, *, period: float = 2 * np.pi) -> Array:
    """``p`` with its jumps of more than ``discont`` (half a ``period`` unless given) along
    ``axis`` taken back by whole periods, as ``numpy.unwrap``: the jumps are ``diff``'s, the
    corrections summed along the axis by ``cumsum`` (a running scan across blocks), so
    phases that wrapped in one block are carried into the next.

    >>> import numpy as np, xsched.array as xa
    >>> phase = xa.from_array(np.array([0.0, 3.0, 6.2, 2.9, 6.0]), chunks=2)
    >>> np.unwrap(phase).compute().round(3).tolist()  # (6.2 is 3.2 past 3.0: more than half a turn)
    [0.0, 3.0, -0.083, 2.9, 6.0]
    """
    p = asarray(p)
    axis = axis_index(axis, p.ndim, "unwrap")
    jumps = diff(p, axis=axis)
    if discont is None:
        discont = period / 2
    dtype = np.result_type(jumps.dtype, period)
    if np.issubdtype(dtype, np.integer):
        high, remainder = divmod(period, 2)
        ambiguous = remainder == 0
    else:
        high, ambiguous = period / 2, True
    low = -high
    wrapped = (jumps - low) % period + low
    if ambiguous:  # (a jump of exactly half a period keeps its sign, as NumPy's)
        wrapped = where((wrapped == low) & (jumps > 0), high, wrapped)
    correction = where(abs(jumps) < discont, 0, wrapped - jumps)
    first = tuple(slice(0, 1) if i == axis else slice(None) for i in range(p.ndim))
    rest = tuple(slice(1, None) if i == axis else slice(None) for i in range(p.ndim))
    return concatenate([p[first].astype(dtype), p[rest] + cumsum(correction, axis=axis)], axis=axis).astype(dtype)
