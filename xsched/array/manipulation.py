"""Changing an array's shape or arrangement without changing its values: reshape, join,
stack, flip, roll, pad, repeat, tile, broadcast, and the elementwise ``where``/``clip``/
``round``/``conj``/``tril``/``triu``.

Each is one layer of tasks mapping whole input blocks to whole output blocks, after
rechunking where blocks would not line up: ``concatenate`` and ``stack`` cut their inputs
alike on the other axes, wherever any of them is cut; ``reshape`` makes each group of input
axes that becomes a group of output axes whole except its first axis (so a block reshapes
on its own), with blocks along that axis a multiple of what the output axes need.

Importing this module adds ``reshape``, ``ravel``, ``flatten``, ``squeeze``, ``swapaxes``,
``clip``, ``round`` and ``conj``/``conjugate`` to ``Array``.

>>> import numpy as np, xsched.array as xa
>>> x = xa.from_array(np.arange(12), chunks=4)
>>> x.reshape(3, 4).chunks
((1, 1, 1), (4,))
>>> xa.concatenate([x, x[:2]]).shape
(14,)
"""

from __future__ import annotations

import builtins
import itertools
import math
import numbers
import operator
from typing import Any, Sequence

import numpy as np

from ..graph.layers import LayeredGraph, annotations_in_force, chunk_key, new_token, per_task
from ..graph.spec import Ref, Task
from ..units import parse_bytes
from .axes import axis_index, axis_tuple
from .chunks import common_blocks, normalize_chunks
from .core import Array, elemwise
from . import reductions
from . import creation as _creation
from .creation import asarray, full
from .masking import has_unknown_chunks, known_axis_needed, known_chunks_needed

__all__ = ["copy", "concatenate", "stack", "hstack", "vstack", "reshape", "reshape_blockwise", "ravel", "squeeze",
           "expand_dims", "atleast_1d", "atleast_2d", "transpose", "moveaxis", "swapaxes",
           "flip", "fliplr", "flipud", "roll", "pad", "broadcast_to", "broadcast_arrays", "meshgrid",
           "where", "clip", "around", "repeat", "tile", "unstack", "tril", "triu", "permute_dims", "concat",
           "rollaxis", "apply_over_axes"]


def _new(layer: dict, name: str, inputs: Sequence[Array], chunks: Any, dtype: Any) -> Array:
    graph = LayeredGraph.merge(*[a._graph for a in inputs], new={name: layer})
    return Array(graph, name, chunks, dtype)


def _cast(block: np.ndarray, dtype: np.dtype) -> np.ndarray:
    return block.astype(dtype, copy=False)


# --------------------------------------------------------------------------- joining

def _joined_dtype(arrays: list[Array], dtype: Any, casting: str) -> np.dtype:
    """The dtype arrays join in: NumPy's ``dtype=`` / ``casting=`` of ``concatenate`` and
    ``stack``, resolved and checked by NumPy itself on empty stand-ins when the join is built
    (its TypeError for a cast the rule forbids; ``"U"`` sized as NumPy sizes it)."""
    return np.concatenate([np.empty(0, a.dtype) for a in arrays], dtype=dtype, casting=casting).dtype


def _alike(arrays: list[Array], skip: int | None) -> list[Array]:
    """The arrays rechunked to the same blocks on every axis but ``skip``: cut wherever
    any of them is (``chunks.common_blocks``)."""
    want = {}
    for ax in range(arrays[0].ndim):
        blocks = [a.chunks[ax] for a in arrays]
        if ax != skip and any(b != blocks[0] for b in blocks):  # (alike already: unknown lengths too)
            want[ax] = common_blocks(blocks)
    return [a if all(a.chunks[ax] == c for ax, c in want.items()) else a.rechunk(want) for a in arrays]


def concatenate(seq: Sequence[Any], axis: int | None = 0, allow_unknown_chunksizes: bool = False, *,
                dtype: Any = None, casting: str = "same_kind") -> Array:
    """Join arrays along an existing axis; the other axes must have equal lengths
    (``axis=None``: the arrays flattened, joined end to end, as numpy does). ``dtype=`` and
    ``casting=`` as NumPy's: the result's dtype, each input cast to it by that rule.

    On the other axes the inputs are cut alike, wherever any of them is cut; along
    ``axis`` the result keeps every input's blocks.

    >>> import numpy as np, xsched.array as xa
    >>> a = xa.from_array(np.zeros((2, 3)), chunks=1)
    >>> xa.concatenate([a, np.ones((1, 3))]).compute().tolist()
    [[0.0, 0.0, 0.0], [0.0, 0.0, 0.0], [1.0, 1.0, 1.0]]
    >>> xa.concatenate([a, a], axis=1, dtype="int8", casting="unsafe").dtype
    dtype('int8')
    """
    if isinstance(axis, Array):
        raise TypeError("concatenate takes a list (or tuple) of arrays, then the axis: "
                        "xa.concatenate([x, y], axis=0), not xa.concatenate(x, y)")
    arrays = [asarray(a) for a in seq]
    if not arrays:
        raise ValueError("need at least one array to concatenate")
    if axis is None:
        arrays, axis = [ravel(a) for a in arrays], 0
    if arrays[0].ndim == 0:
        raise ValueError("zero-dimensional arrays cannot be concatenated")
    ndim = arrays[0].ndim
    axis = axis_index(axis, ndim, "concatenate")
    for i, a in enumerate(arrays[1:], 1):
        if a.ndim != ndim:
            raise ValueError(
                f"all the input arrays must have same number of dimensions, but the array at "
                f"index 0 has {ndim} dimension(s) and the array at index {i} has {a.ndim} "
                "dimension(s)")
        for ax in range(ndim):  # (the same blocks of unknown lengths, a mask's results, are alike)
            if ax != axis and a.chunks[ax] != arrays[0].chunks[ax] and a.shape[ax] != arrays[0].shape[ax]:
                if has_unknown_chunks(a) or has_unknown_chunks(arrays[0]):
                    known_axis_needed(a if has_unknown_chunks(a) else arrays[0], ax, "concatenate")
                raise ValueError(
                    f"all the input array dimensions except for the concatenation axis must "
                    f"match exactly, but along dimension {ax}, the array at index 0 has size "
                    f"{arrays[0].shape[ax]} and the array at index {i} has size {a.shape[ax]}")
    dtype = _joined_dtype(arrays, dtype, casting)
    if len(arrays) == 1:
        return arrays[0] if arrays[0].dtype == dtype else arrays[0].astype(dtype, casting="unsafe")
    arrays = _alike(arrays, axis)
    kept = [a for a in arrays if a.shape[axis]] or arrays[:1]
    name = f"concatenate-{new_token([a.name for a in kept], axis, str(dtype))}"
    ann = annotations_in_force()
    layer: dict[str, Any] = {}
    offset = 0
    for a in kept:
        for index in np.ndindex(*a.numblocks):
            out = index[:axis] + (index[axis] + offset,) + index[axis + 1:]
            layer[chunk_key(name, out)] = Task(_cast, (Ref(chunk_key(a.name, index)), dtype),
                                               {}, per_task(ann))
        offset += a.numblocks[axis]
    chunks = list(kept[0].chunks)
    chunks[axis] = tuple(c for a in kept for c in a.chunks[axis])
    return _new(layer, name, kept, tuple(chunks), dtype)


def _stacked(block: np.ndarray, axis: int, dtype: np.dtype) -> np.ndarray:
    return np.expand_dims(block, axis).astype(dtype, copy=False)


def stack(seq: Sequence[Any], axis: int = 0, *, dtype: Any = None, casting: str = "same_kind") -> Array:
    """Join arrays of the same shape along a new axis (one block per input along it);
    ``dtype=`` and ``casting=`` as NumPy's.

    >>> import numpy as np, xsched.array as xa
    >>> a = xa.from_array(np.arange(3), chunks=2)
    >>> s = xa.stack([a, a * 10], axis=1)
    >>> s.chunks, s.compute().tolist()
    (((2, 1), (1, 1)), [[0, 0], [1, 10], [2, 20]])
    """
    if isinstance(axis, Array):
        raise TypeError("stack takes a list (or tuple) of arrays, then the axis: "
                        "xa.stack([x, y], axis=0), not xa.stack(x, y)")
    arrays = [asarray(a) for a in seq]
    if not arrays:
        raise ValueError("need at least one array to stack")
    alike = all(a.chunks == arrays[0].chunks for a in arrays)  # (a mask's results: unknown lengths, alike)
    for a in arrays:  # (else unknown lengths cannot be checked to be equal)
        if not alike:
            known_chunks_needed(a, "stack")
    shape = arrays[0].shape
    for a in arrays[1:]:
        if not alike and a.shape != shape:
            raise ValueError(f"all input arrays must have the same shape; got "
                             f"{[b.shape for b in arrays]}")
    axis = axis_index(axis, len(shape) + 1, "stack")
    dtype = _joined_dtype(arrays, dtype, casting)
    arrays = _alike(arrays, None)
    name = f"stack-{new_token([a.name for a in arrays], axis, str(dtype))}"
    ann = annotations_in_force()
    layer: dict[str, Any] = {}
    for n, a in enumerate(arrays):
        for index in np.ndindex(*a.numblocks):
            out = index[:axis] + (n,) + index[axis:]
            layer[chunk_key(name, out)] = Task(
                _stacked, (Ref(chunk_key(a.name, index)), axis, dtype), {}, per_task(ann))
    chunks = arrays[0].chunks[:axis] + ((1,) * len(arrays),) + arrays[0].chunks[axis:]
    return _new(layer, name, arrays, chunks, dtype)


def atleast_1d(x: Any) -> Array:
    """``x`` with at least one axis (a 0-d array becomes shape ``(1,)``).

    >>> import xsched.array as xa
    >>> xa.atleast_1d(xa.asarray(5.0)).shape
    (1,)
    """
    x = asarray(x)
    return x[None] if x.ndim == 0 else x


def atleast_2d(x: Any) -> Array:
    """``x`` with at least two axes (new axes go in front, as numpy puts them).

    >>> import xsched.array as xa
    >>> xa.atleast_2d(xa.arange(3, chunks=2)).shape
    (1, 3)
    """
    x = asarray(x)
    return x[(None,) * (2 - x.ndim)] if x.ndim < 2 else x


def hstack(seq: Sequence[Any], allow_unknown_chunksizes: bool = False, *, dtype: Any = None,
           casting: str = "same_kind") -> Array:
    """Join along the second axis (the first for 1-d arrays), as ``numpy.hstack`` (its
    ``dtype=`` and ``casting=`` too).

    >>> import xsched.array as xa
    >>> xa.hstack([xa.ones(2, chunks=1), xa.zeros(1, chunks=1)]).compute().tolist()
    [1.0, 1.0, 0.0]
    """
    arrays = [atleast_1d(a) for a in seq]
    return concatenate(arrays, axis=0 if arrays and arrays[0].ndim == 1 else 1, dtype=dtype, casting=casting)


def vstack(seq: Sequence[Any], allow_unknown_chunksizes: bool = False, *, dtype: Any = None,
           casting: str = "same_kind") -> Array:
    """Stack 1-d arrays as rows, or join along the first axis, as ``numpy.vstack`` (its
    ``dtype=`` and ``casting=`` too).

    >>> import xsched.array as xa
    >>> xa.vstack([xa.ones(2, chunks=1), xa.zeros(2, chunks=1)]).shape
    (2, 2)
    """
    return concatenate([atleast_2d(a) for a in seq], axis=0, dtype=dtype, casting=casting)


# --------------------------------------------------------------------------- reshape


def _new_shape(shape: Any, size: int) -> tuple[int, ...]:
    if isinstance(shape, numbers.Integral):
        shape = (shape,)
    shape = tuple(operator.index(s) for s in shape)
    unknown = [i for i, s in enumerate(shape) if s == -1]
    if len(unknown) > 1:
        raise ValueError("can only specify one unknown dimension")
    if any(s < -1 for s in shape):
        raise ValueError(f"reshape: negative dimensions are not allowed: {shape}")
    if unknown:
        known = math.prod(s for s in shape if s != -1)
        if known == 0 or size % known:
            raise ValueError(f"cannot reshape array of size {size} into shape {shape}")
        shape = tuple(size // known if s == -1 else s for s in shape)
    return shape


def _groups(old: tuple[int, ...], new: tuple[int, ...]) -> list[tuple[list[int], list[int]]]:
    """Runs of consecutive axes of ``old`` and ``new`` holding the same number of elements
    (no length zero), e.g. (2, 3, 4) -> (6, 4): [([0, 1], [0]), ([2], [1])]."""
    groups: list[tuple[list[int], list[int]]] = []
    i = j = 0
    while i < len(old) and j < len(new):
        ii, jj, pi, pj = i + 1, j + 1, old[i], new[j]
        while pi != pj:
            if pi < pj:
                pi, ii = pi * old[ii], ii + 1
            else:
                pj, jj = pj * new[jj], jj + 1
        groups.append((list(range(i, ii)), list(range(j, jj))))
        i, j = ii, jj
    groups[-1][0].extend(range(i, len(old)))  # what is left are axes of length 1
    groups[-1][1].extend(range(j, len(new)))
    return groups


def _lead(axes: list[int], shape: tuple[int, ...]) -> int:
    """The group's first axis longer than 1 (the axes before it have length 1)."""
    return next((a for a in axes if shape[a] > 1), axes[0])


def _merges(ins: list[int], outs: list[int], old: tuple[int, ...], new: tuple[int, ...]) -> bool:
    """Whether a group joins several axes (longer than 1) into one."""
    return sum(old[a] > 1 for a in ins) > 1 and sum(new[a] > 1 for a in outs) == 1


def _runs(ins: list[int], outs: list[int], x: Array, new: tuple[int, ...]) -> bool:
    """Whether a group that joins axes into one has blocks that are each a run of
    consecutive elements of the output: the axes before its last cut one are in blocks of 1."""
    if not _merges(ins, outs, x.shape, new):
        return False
    cut = [a for a in ins if x.numblocks[a] > 1]
    return bool(cut) and all(c <= 1 for a in ins if a < cut[-1] for c in x.chunks[a])


def _others(x: Array, ins: list[int]) -> int:
    """Bytes of one element of a group's axes in a block: the itemsize times the largest
    blocks of the other axes."""
    return x.dtype.itemsize * math.prod(max(x.chunks[a], default=1) for a in range(x.ndim) if a not in ins)


def _pieces(n: int, most: int) -> tuple[int, ...]:
    """``n`` cut into pieces of at most ``most``: (7, 3) -> (3, 3, 1)."""
    return tuple(min(most, n - s) for s in range(0, n, most)) or (0,)


def _multiples(chunks: tuple[int, ...], unit: int, length: int | None) -> tuple[int, ...]:
    """Blocks along an axis whose lengths are multiples of ``unit``: ``length`` long (rounded
    down to a multiple), or, without ``length``, near the given ones."""
    total = sum(chunks)
    if length is not None:
        step = max(unit, length // unit * unit)
        return tuple(min(step, total - s) for s in range(0, total, step)) or (0,)
    bounds = sorted({0, total} | {(int(b) + unit // 2) // unit * unit
                                     for b in np.cumsum(chunks)})
    return tuple(b - a for a, b in zip(bounds, bounds[1:])) or (0,)


def copy(a: Any) -> Array:
    """Another Array of ``a``'s values, as ``numpy.copy``: a write into one leaves the other
    as it was (``Array.copy``).

    >>> import numpy as np, xsched.array as xa
    >>> np.copy(xa.arange(3, chunks=2)).compute().tolist()
    [0, 1, 2]
    """
    return asarray(a).copy()


def reshape(x: Any, /, shape: Any, *, copy: bool | None = None, merge_chunks: bool = True,
            limit: Any = None) -> Array:
    """The same elements in C order with a new shape (one length may be -1).

    Works block by block: each group of input axes that turns into a group of output axes
    is rechunked so that all its axes but the first are whole and its blocks along that
    first axis hold whole rows of the output. When the rechunking makes the trailing axes
    whole, the first axis is cut finer, keeping blocks about as large as before.

    >>> import numpy as np, xsched.array as xa
    >>> x = xa.from_array(np.arange(24).reshape(4, 6), chunks=(2, 3))
    >>> y = x.reshape(2, 2, 6)
    >>> y.chunks
    ((1, 1), (2,), (3, 3))
    >>> bool((y.compute() == np.arange(24).reshape(2, 2, 6)).all())
    True

    Axes merged into one need no rechunk when every block is a run of consecutive
    elements: the axes before the last one cut are in blocks of 1 (frames of a movie, one
    per block, merged with their rows). ``merge_chunks=False`` makes it so, cutting those
    axes into blocks of 1 rather than making the others whole: more, smaller tasks, and
    axes that are joined have their blocks split, never joined with others (as dask's
    ``merge_chunks=False``; an axis split into several is cut as without it).

    >>> x.reshape(24).chunks  # (rows made whole, a row per block: two blocks joined in each)
    ((6, 6, 6, 6),)
    >>> x.reshape(24, merge_chunks=False).chunks  # (each row's blocks of 3, as they are)
    ((3, 3, 3, 3, 3, 3, 3, 3),)

    ``limit`` (bytes, or a string such as ``"64 MiB"``) caps the blocks the reshape
    makes, as dask's: blocks are cut finer along the group's axes (never below one row of
    the output). Without it, blocks stay about as large as the input's.

    >>> y = xa.from_array(np.arange(48).reshape(8, 6), chunks=(4, 3))
    >>> y.reshape(48).chunks
    ((12, 12, 12, 12),)
    >>> y.reshape(48, limit=48).chunks  # (48 bytes: one row of 6 int64 per block)
    ((6, 6, 6, 6, 6, 6, 6, 6),)

    ``copy`` is the Array API's: ``False`` refuses a reshape that has to rechunk (which
    copies), ``True`` and None allow it.
    """
    x = asarray(x)
    known_chunks_needed(x, "reshape")
    cap = None if limit is None else parse_bytes(limit)
    if copy is False:
        out = reshape(x, shape, merge_chunks=merge_chunks, limit=limit)
        if any(name.startswith("rechunk") for name in out._graph.layers if name not in x._graph.layers):
            raise ValueError(f"reshape: copy=False, but {x.shape} to {out.shape} with chunks {x.chunks} rechunks "
                             "(a copy); pass copy=None to allow it")
        return out
    shape = _new_shape(shape, x.size)
    if math.prod(shape) != x.size:
        raise ValueError(f"cannot reshape array of size {x.size} into shape {shape}")
    if shape == x.shape:
        return x
    if x.size == 0 or not x.ndim or not shape:  # one block in, one block out
        x = x.rechunk(tuple((n,) for n in x.shape)) if x.ndim else x
        groups: list = []
        out_chunks: list = [(n,) for n in shape]
    else:
        groups = _groups(x.shape, shape)
        if not merge_chunks:
            x = x.rechunk({a: 1 for ins, outs in groups if _merges(ins, outs, x.shape, shape)
                           for a in [a for a in ins if x.shape[a] > 1][:-1]})
        in_chunks = list(x.chunks)
        out_chunks = [(n,) for n in shape]
        for ins, outs in groups:
            lead_in, lead_out = _lead(ins, x.shape), _lead(outs, shape)
            if _runs(ins, outs, x, shape):  # each block is consecutive elements: no rechunk
                m = max(a for a in ins if x.numblocks[a] > 1)
                rest = math.prod(x.shape[a] for a in ins if a > m)
                if cap is not None:  # (blocks past the cap split along m: still runs)
                    most = max(cap // max(rest * _others(x, ins), 1), 1)
                    in_chunks[m] = tuple(p for c in x.chunks[m] for p in _pieces(c, most))
                out_chunks[lead_out] = tuple(math.prod(sizes) * rest for sizes in
                                             itertools.product(*(in_chunks[a] for a in ins if a <= m)))
                continue
            rest_in = math.prod(x.shape[a] for a in ins if a > lead_in)
            rest_out = math.prod(shape[a] for a in outs if a > lead_out)
            unit = rest_out // math.gcd(rest_out, rest_in)
            trailing = [a for a in ins if a > lead_in]
            length = None
            if any(len(x.chunks[a]) > 1 for a in trailing):  # keep block sizes near
                held = max(x.chunks[lead_in]) * math.prod(max(x.chunks[a]) for a in trailing)
                length = max(held // rest_in, 1)
            if cap is not None:  # (a row of the group holds rest_in elements, times the other axes' blocks)
                most = max(cap // max(rest_in * _others(x, ins), 1), 1)
                if (length if length is not None else max(x.chunks[lead_in], default=0)) > most:
                    length = most
            for a in ins:  # (the axes before the first are of length 1)
                if a != lead_in:
                    in_chunks[a] = (x.shape[a],)
            lead = x.chunks[lead_in]
            if length is not None or any(c % unit for c in lead):
                lead = _multiples(lead, unit, length)
            in_chunks[lead_in] = lead
            out_chunks[lead_out] = tuple(c * rest_in // rest_out for c in lead)
        x = x.rechunk(tuple(in_chunks))
    name = f"reshape-{new_token(x.name, shape)}"
    ann = annotations_in_force()
    layer = {}
    for index in np.ndindex(*x.numblocks):
        out = [0] * len(shape)
        for ins, outs in groups:  # (the group's blocks in C order; but one axis is one block unless runs)
            out[_lead(outs, shape)] = int(np.ravel_multi_index([index[a] for a in ins],
                                                               [x.numblocks[a] for a in ins]))
        block_shape = tuple(c[i] for c, i in zip(out_chunks, out))
        layer[chunk_key(name, tuple(out))] = Task(
            np.reshape, (Ref(chunk_key(x.name, index)), block_shape), {}, per_task(ann))
    return _new(layer, name, [x], tuple(out_chunks), x.dtype)


def reshape_blockwise(x: Any, shape: Any, chunks: Any = None) -> Array:
    """Each block reshaped on its own, with no rechunk: cheaper than ``reshape`` but the
    elements come in another order than NumPy's (block after block), for what follows that
    does not care (a sum, a histogram, a sort). To fewer axes the merged axes' block sizes
    multiply (their cross product, in C order); to more (or as many) axes give ``chunks``,
    the output's blocks, as many as the input's and each holding as many elements as the
    input block in the same place (C order).

    >>> import numpy as np, xsched.array as xa
    >>> x = xa.from_array(np.arange(24).reshape(4, 6), chunks=(2, 3))
    >>> y = xa.reshape_blockwise(x, (24,))
    >>> y.chunks, y.compute()[:6].tolist()  # (block (0, 0) first: rows 0 and 1 of columns 0 to 2)
    (((6, 6, 6, 6),), [0, 1, 2, 6, 7, 8])
    >>> back = xa.reshape_blockwise(y, (4, 6), chunks=x.chunks)  # (the same blocks: the array again)
    >>> bool((back.compute() == np.arange(24).reshape(4, 6)).all())
    True
    """
    x = asarray(x)
    known_chunks_needed(x, "reshape_blockwise")
    shape = _new_shape(shape if not isinstance(shape, numbers.Integral) else (shape,), x.size)
    if math.prod(shape) != x.size:
        raise ValueError(f"reshape_blockwise: cannot reshape an array of size {x.size} into shape {shape}")
    if len(shape) < x.ndim:
        if chunks is not None:
            raise ValueError("reshape_blockwise: chunks= is for reshapes to more (or as many) axes; to fewer, "
                             "the merged axes' blocks decide the output's")
        groups = _groups(x.shape, shape)
        if any(len(outs) != 1 for _, outs in groups):
            raise ValueError(f"reshape_blockwise to fewer axes merges whole runs of axes: {x.shape} -> {shape} "
                             "splits one; reshape to more axes with chunks=, or use reshape")
        out_chunks = tuple(tuple(math.prod(sizes) for sizes in itertools.product(*(x.chunks[a] for a in ins)))
                           for ins, _ in groups)
    else:
        if chunks is None:
            if shape == x.shape:
                return x
            raise ValueError("reshape_blockwise to more (or as many) axes needs chunks=: the output's blocks, "
                             "one per input block")
        out_chunks = normalize_chunks(chunks, shape, x.dtype)
    ins = list(np.ndindex(*x.numblocks))
    outs = list(np.ndindex(*(len(c) for c in out_chunks)))
    sizes_in = [math.prod(c[i] for c, i in zip(x.chunks, b)) for b in ins]
    sizes_out = [math.prod(c[i] for c, i in zip(out_chunks, b)) for b in outs]
    if sizes_in != sizes_out:
        raise ValueError(f"reshape_blockwise: chunks {out_chunks} do not give each of the {len(ins)} input blocks "
                         f"(chunks {x.chunks}) a block of as many elements, in C order")
    name = f"reshape-blockwise-{new_token(x.name, shape, out_chunks)}"
    ann = annotations_in_force()
    layer = {chunk_key(name, o): Task(np.reshape, (Ref(chunk_key(x.name, i)),
                                                   tuple(c[k] for c, k in zip(out_chunks, o))), {}, per_task(ann))
             for i, o in zip(ins, outs)}
    return _new(layer, name, [x], out_chunks, x.dtype)


def ravel(x: Any, order: str = "C") -> Array:
    """The elements in C order as a 1-d array (``order="F"``: Fortran order; ``"A"`` and
    ``"K"`` are C order here, as for a NumPy array in C order).

    >>> import numpy as np, xsched.array as xa
    >>> xa.ravel(xa.from_array(np.eye(2), chunks=1)).compute().tolist()
    [1.0, 0.0, 0.0, 1.0]
    >>> xa.ravel(xa.from_array(np.arange(4).reshape(2, 2), chunks=1), order="F").compute().tolist()
    [0, 2, 1, 3]
    """
    x = asarray(x)
    if order == "F":
        return ravel(x.T)
    if order not in ("C", "A", "K"):
        raise ValueError(f"ravel: order must be one of 'C', 'F', 'A', or 'K' (got {order!r})")
    return x if x.ndim == 1 else reshape(x, (-1,))  # (1-d: itself, even of unknown lengths)


def squeeze(x: Any, axis: Any = None) -> Array:
    """Drop axes of length 1 (all of them, or those in ``axis``).

    >>> import xsched.array as xa
    >>> xa.squeeze(xa.ones((1, 3, 1), chunks=1)).shape
    (3,)
    """
    x = asarray(x)
    if axis is None:
        axes = tuple(a for a, n in enumerate(x.shape) if n == 1)
    else:
        axes = axis_tuple(axis, x.ndim, "squeeze")
        if any(x.shape[a] != 1 for a in axes):
            raise ValueError("cannot select an axis to squeeze out which has size not equal "
                             f"to one (shape {x.shape}, axis {axis})")
    if not axes:
        return x
    return x[tuple(0 if a in axes else slice(None) for a in range(x.ndim))]


def expand_dims(x: Any, axis: Any) -> Array:
    """Insert axes of length 1 at positions ``axis`` of the result.

    >>> import xsched.array as xa
    >>> xa.expand_dims(xa.ones((2, 3), chunks=1), (0, 2)).shape
    (1, 2, 1, 3)
    """
    x = asarray(x)
    n = 1 if isinstance(axis, numbers.Integral) else len(tuple(axis))
    axes = axis_tuple(axis, x.ndim + n, "expand_dims")
    return x[tuple(None if a in axes else slice(None) for a in range(x.ndim + n))]


# --------------------------------------------------------------------------- axes


def transpose(x: Any, axes: Any = None) -> Array:
    """Permute the axes (reverse them by default).

    >>> import xsched.array as xa
    >>> xa.transpose(xa.ones((2, 3, 4), chunks=2), (1, 0, 2)).shape
    (3, 2, 4)
    """
    x = asarray(x)
    return x.transpose() if axes is None else x.transpose(tuple(axes))


def permute_dims(x: Any, /, axes: Any) -> Array:
    """The axes in the order ``axes`` (the Array API's name for ``transpose`` with axes).

    >>> import xsched.array as xa
    >>> xa.permute_dims(xa.zeros((2, 3, 4), chunks=2), (2, 0, 1)).shape
    (4, 2, 3)
    """
    return transpose(x, tuple(axes))


def concat(arrays: Sequence[Any], /, *, axis: int | None = 0) -> Array:
    """Join arrays along an existing axis (the Array API's name for ``concatenate``;
    ``axis=None``: flattened first).

    >>> import numpy as np, xsched.array as xa
    >>> xa.concat([xa.arange(2, chunks=1), np.array([5])]).compute().tolist()
    [0, 1, 5]
    """
    return concatenate(arrays, axis=axis)


def moveaxis(x: Any, source: Any, destination: Any) -> Array:
    """Move axes to new positions, the others keeping their order.

    >>> import xsched.array as xa
    >>> xa.moveaxis(xa.ones((2, 3, 4), chunks=2), 0, -1).shape
    (3, 4, 2)
    """
    x = asarray(x)
    src = axis_tuple(source, x.ndim, "moveaxis")
    dst = axis_tuple(destination, x.ndim, "moveaxis")
    if len(src) != len(dst):
        raise ValueError("`source` and `destination` arguments must have the same number "
                         "of elements")
    order = [a for a in range(x.ndim) if a not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return x.transpose(tuple(order))


def rollaxis(x: Any, axis: int, start: int = 0) -> Array:
    """Move ``axis`` to come just before position ``start`` (NumPy's older ``moveaxis``), as
    ``numpy.rollaxis``.

    >>> import xsched.array as xa
    >>> xa.rollaxis(xa.ones((2, 3, 4), chunks=2), 2, 1).shape
    (2, 4, 3)
    """
    x = asarray(x)
    axis = axis_index(axis, x.ndim, "rollaxis")
    start = operator.index(start)
    if not -x.ndim <= start <= x.ndim:
        raise np.exceptions.AxisError(f"rollaxis: start {start} is out of bounds for an array of "
                                      f"dimension {x.ndim} (it may be {-x.ndim} to {x.ndim})")
    start += x.ndim if start < 0 else 0
    order = [a for a in range(x.ndim) if a != axis]
    order.insert(start - 1 if axis < start else start, axis)
    return x.transpose(tuple(order))


def apply_over_axes(func: Any, a: Any, axes: Any) -> Array:
    """``func(a, axis)`` for each of ``axes`` in turn, each result given back its axis (with
    length 1) when ``func`` removed it, as ``numpy.apply_over_axes``; ``func`` receives
    xsched arrays (NumPy's reductions run xsched.array's).

    >>> import numpy as np, xsched.array as xa
    >>> x = xa.from_array(np.arange(24).reshape(2, 3, 4), chunks=2)
    >>> xa.apply_over_axes(np.sum, x, [0, 2]).compute().tolist()
    [[[60], [92], [124]]]
    """
    value = asarray(a)
    for axis in (axes,) if np.ndim(axes) == 0 else axes:
        axis = axis_index(axis, value.ndim, "apply_over_axes")
        out = asarray(func(value, axis))
        if out.ndim == value.ndim - 1:
            out = expand_dims(out, axis)
        if out.ndim != value.ndim:
            raise ValueError(f"apply_over_axes: function is not returning an array of the correct shape "
                             f"(shape {out.shape} from an array of shape {value.shape})")
        value = out
    return value


def swapaxes(x: Any, axis1: int, axis2: int) -> Array:
    """Exchange two axes.

    >>> import xsched.array as xa
    >>> xa.swapaxes(xa.ones((2, 3), chunks=1), 0, 1).shape
    (3, 2)
    """
    x = asarray(x)
    a, b = axis_index(axis1, x.ndim, "swapaxes"), axis_index(axis2, x.ndim, "swapaxes")
    order = list(range(x.ndim))
    order[a], order[b] = order[b], order[a]
    return x.transpose(tuple(order))


def flip(x: Any, axis: Any = None) -> Array:
    """Reverse the order of the elements along ``axis`` (all axes by default).

    >>> import numpy as np, xsched.array as xa
    >>> xa.flip(xa.from_array(np.arange(5), chunks=2)).compute().tolist()
    [4, 3, 2, 1, 0]
    """
    x = asarray(x)
    axes = tuple(range(x.ndim)) if axis is None else axis_tuple(axis, x.ndim, "flip")
    if not axes:
        return x
    name = f"flip-{new_token(x.name, axes)}"
    ann = annotations_in_force()
    layer = {}
    for index in np.ndindex(*x.numblocks):
        out = tuple(x.numblocks[a] - 1 - i if a in axes else i for a, i in enumerate(index))
        layer[chunk_key(name, out)] = Task(np.flip, (Ref(chunk_key(x.name, index)), axes), {},
                                           per_task(ann))
    chunks = tuple(c[::-1] if a in axes else c for a, c in enumerate(x.chunks))
    return _new(layer, name, [x], chunks, x.dtype)


def fliplr(x: Any) -> Array:
    """Reverse the columns (axis 1).

    >>> import numpy as np, xsched.array as xa
    >>> xa.fliplr(xa.from_array(np.eye(2), chunks=1)).compute().tolist()
    [[0.0, 1.0], [1.0, 0.0]]
    """
    return flip(x, 1)


def flipud(x: Any) -> Array:
    """Reverse the rows (axis 0).

    >>> import numpy as np, xsched.array as xa
    >>> xa.flipud(xa.from_array(np.arange(3), chunks=1)).compute().tolist()
    [2, 1, 0]
    """
    return flip(x, 0)


def roll(x: Any, shift: Any, axis: Any = None) -> Array:
    """Shift elements along ``axis``, those pushed off the end coming back at the start
    (without ``axis``, over the flattened array).

    >>> import numpy as np, xsched.array as xa
    >>> xa.roll(xa.from_array(np.arange(5), chunks=2), 2).compute().tolist()
    [3, 4, 0, 1, 2]
    """
    x = asarray(x)
    if axis is None:
        return reshape(roll(ravel(x), shift, 0), x.shape)
    shifts, axes = np.broadcast_arrays(np.asarray(shift), np.asarray(axis))
    for s, a in zip(shifts.ravel().tolist(), axes.ravel().tolist()):
        a = axis_index(a, x.ndim, "roll")
        n = x.shape[a]
        s = s % n if n else 0
        if s:
            head = tuple(slice(n - s, None) if ax == a else slice(None) for ax in range(x.ndim))
            tail = tuple(slice(0, n - s) if ax == a else slice(None) for ax in range(x.ndim))
            x = concatenate([x[head], x[tail]], axis=a)
    return x


def _repeat_block(block: np.ndarray, repeats: Any, axis: int, block_info: Any = None) -> np.ndarray:
    if np.ndim(repeats):  # (one count per element: this block's part of them)
        start, stop = block_info[0]["array-location"][axis]
        repeats = repeats[start:stop]
    return np.repeat(block, repeats, axis=axis)


def repeat(x: Any, repeats: Any, axis: int | None = None) -> Array:
    """Each element repeated ``repeats`` times along ``axis`` (an int, or one count per
    element), as ``numpy.repeat``; without ``axis``, over the flattened array. Each block
    repeats its own elements: one task per block.

    >>> import numpy as np, xsched.array as xa
    >>> x = xa.from_array(np.array([[1, 2], [3, 4]]), chunks=1)
    >>> xa.repeat(x, 2, axis=1).compute().tolist(), xa.repeat(x, [1, 2], axis=0).compute().tolist()
    ([[1, 1, 2, 2], [3, 3, 4, 4]], [[1, 2], [3, 4], [3, 4]])
    """
    x = asarray(x)
    if axis is None:
        x, axis = ravel(x), 0
    axis = axis_index(axis, x.ndim, "repeat")
    known_chunks_needed(x, "repeat")
    counts = np.asarray(repeats)
    if counts.dtype.kind not in "iub" or counts.ndim > 1 or (counts < 0).any():
        raise ValueError(f"repeat: repeats must be a non-negative integer or a 1-d sequence of them, "
                         f"got {repeats!r}")
    if counts.ndim and len(counts) == 1:
        counts = counts[0]
    if counts.ndim and len(counts) != x.shape[axis]:
        raise ValueError(f"repeat: {len(counts)} counts for axis {axis} of length {x.shape[axis]} "
                         f"(shape {x.shape}); give one per element, or one for all")
    starts = np.cumsum((0,) + x.chunks[axis])
    lengths = tuple(int(counts[a:b].sum()) for a, b in zip(starts[:-1], starts[1:])) if counts.ndim else \
        tuple(int(c) * int(counts) for c in x.chunks[axis])
    chunks = x.chunks[:axis] + (lengths,) + x.chunks[axis + 1:]
    return x.map_blocks(_repeat_block, counts if counts.ndim else int(counts), axis, chunks=chunks,
                        dtype=x.dtype, name="repeat")


def tile(x: Any, reps: Any) -> Array:
    """``x`` repeated as a whole ``reps`` times along each axis, as ``numpy.tile`` (more
    entries in ``reps`` than axes add leading axes): copies of the blocks, joined.

    >>> import numpy as np, xsched.array as xa
    >>> xa.tile(xa.from_array(np.array([1, 2]), chunks=1), (2, 2)).compute().tolist()
    [[1, 2, 1, 2], [1, 2, 1, 2]]
    """
    x = asarray(x)
    reps = (reps,) if isinstance(reps, numbers.Integral) else tuple(reps)
    if any(not isinstance(r, numbers.Integral) or r < 0 for r in reps):
        raise ValueError(f"tile: reps must be non-negative integers, got {reps!r}")
    if len(reps) > x.ndim:
        x = reshape(x, (1,) * (len(reps) - x.ndim) + x.shape)
    reps = (1,) * (x.ndim - len(reps)) + reps
    for axis, r in enumerate(reps):
        if r != 1:
            x = concatenate([x] * r, axis=axis) if r else x[(slice(None),) * axis + (slice(0, 0),)]
    return x


def unstack(x: Any, axis: int = 0) -> tuple:
    """The arrays along ``axis``, as a tuple (the Array API's inverse of ``stack``).

    >>> import numpy as np, xsched.array as xa
    >>> [a.compute().tolist() for a in xa.unstack(xa.from_array(np.arange(4).reshape(2, 2), chunks=1))]
    [[0, 1], [2, 3]]
    """
    x = asarray(x)
    axis = axis_index(axis, x.ndim, "unstack")
    known_chunks_needed(x, "unstack")
    return tuple(x[(slice(None),) * axis + (i,)] for i in range(x.shape[axis]))


def _tri_block(block: np.ndarray, k: int, lower: bool, block_info: Any = None) -> np.ndarray:
    """``np.tril``/``np.triu`` of a block, the diagonal moved by where the block sits."""
    (r0, _), (c0, _) = block_info[0]["array-location"][-2:]
    return (np.tril if lower else np.triu)(block, k + r0 - c0)


def _tri(x: Any, k: int, lower: bool) -> Array:
    x = asarray(x)
    what = "tril" if lower else "triu"
    if x.ndim == 0:
        raise ValueError(f"{what}: the array needs at least one dimension, not shape {x.shape}")
    known_chunks_needed(x, what)
    if x.ndim == 1:  # (NumPy's rule: a vector is the row of a square matrix, repeated)
        x = broadcast_to(x, x.shape * 2, chunks=x.chunks * 2)
    return x.map_blocks(_tri_block, operator.index(k), lower, dtype=x.dtype, name=what)


def tril(x: Any, k: int = 0) -> Array:
    """The lower triangle of the last two axes (zeros above diagonal ``k``), as ``numpy.tril``
    (a vector is the row of a square matrix, as NumPy takes it).

    >>> import numpy as np, xsched.array as xa
    >>> xa.tril(xa.from_array(np.ones((3, 3), int), chunks=2)).compute().tolist()
    [[1, 0, 0], [1, 1, 0], [1, 1, 1]]
    """
    return _tri(x, k, True)


def triu(x: Any, k: int = 0) -> Array:
    """The upper triangle of the last two axes (zeros below diagonal ``k``), as ``numpy.triu``
    (a vector is the row of a square matrix, as NumPy takes it).

    >>> import numpy as np, xsched.array as xa
    >>> xa.triu(xa.from_array(np.ones((3, 3), int), chunks=2), k=1).compute().tolist()
    [[0, 1, 1], [0, 0, 1], [0, 0, 0]]
    """
    return _tri(x, k, False)


#: ``pad`` modes and what they take from the array for the part before an axis (``n``
#: elements, the axis having length ``size``): a slice, and whether it is reversed.
_PAD_PARTS = {
    "edge": lambda n, size: (slice(0, 1), False),
    "reflect": lambda n, size: (slice(1, n + 1), True),
    "symmetric": lambda n, size: (slice(0, n), True),
    "wrap": lambda n, size: (slice(size - n, size), False),
}
_PAD_PARTS_AFTER = {
    "edge": lambda n, size: (slice(size - 1, size), False),
    "reflect": lambda n, size: (slice(size - n - 1, size - 1), True),
    "symmetric": lambda n, size: (slice(size - n, size), True),
    "wrap": lambda n, size: (slice(0, n), False),
}


def _pad_widths(value: Any, ndim: int, what: str) -> list[tuple[Any, Any]]:
    """NumPy's per-axis pairs from a scalar, a pair, or one pair per axis."""
    try:
        pairs = np.broadcast_to(np.asarray(value, dtype=object), (ndim, 2))
    except ValueError:
        raise ValueError(f"pad: {what}={value!r} must be a number, a pair (before, after), or "
                         f"one pair per axis ({ndim})") from None
    return [(a, b) for a, b in pairs.tolist()]


#: ``pad``'s modes that fill with a statistic of the ``stat_length`` elements nearest the side
#: (``"median"``: registered by ``statistics.py``, a room above this one).
_PAD_STATS = {"maximum": reductions.max, "minimum": reductions.min, "mean": reductions.mean}


def _pad_stat(x: Array, axis: int, mode: str, before: bool, length: Any) -> Array:
    """The statistic ``mode`` of the ``length`` elements (all when None) at the start (or
    end) of ``axis``, keeping the axis with length 1; rounded and cast back to ``x``'s
    dtype, as NumPy's pad does."""
    size = x.shape[axis]
    if not (length is None or isinstance(length, numbers.Integral) and length >= 0):
        raise ValueError(f"pad: stat_length must hold non-negative integers, got {length!r}")
    n = size if length is None else builtins.min(int(length), size)
    if n == 0 and mode not in ("mean", "median"):
        raise ValueError("pad: stat_length of 0 yields no value for padding")
    part = x[(slice(None),) * axis + (slice(0, n) if before else slice(size - n, size),)]
    stat = _PAD_STATS[mode](part, axis=axis, keepdims=True)
    if np.issubdtype(x.dtype, np.integer):
        stat = around(stat)
    return stat.astype(x.dtype)


def _ramp_block(edge: np.ndarray, end: Any, n: int, axis: int, before: bool,
                dtype: np.dtype) -> np.ndarray:
    """The ``n`` elements from ``end`` towards ``edge`` (NumPy's pad passes ``end`` as an
    array, so the ramp is computed at its precision, not the data's)."""
    ramp = np.linspace(np.asarray(end), np.squeeze(edge, axis), num=n, endpoint=False,
                       dtype=dtype, axis=axis)
    return ramp if before else np.flip(ramp, axis)


def _pad_part(x: Array, axis: int, n: int, mode: str, before: bool, value: Any,
              stat_length: Any = None) -> Array:
    """What ``pad`` puts before (or after) ``x`` along ``axis``: ``n`` elements (``value``:
    the constant, or the end value of ``"linear_ramp"``)."""
    shape = x.shape[:axis] + (n,) + x.shape[axis + 1:]
    chunks = x.chunks[:axis] + ((n,),) + x.chunks[axis + 1:]
    if mode in _PAD_STATS or mode == "linear_ramp":
        if x.shape[axis] == 0:
            raise ValueError(f"pad: cannot extend the empty axis {axis} with mode={mode!r}")
        if mode in _PAD_STATS:
            return broadcast_to(_pad_stat(x, axis, mode, before, stat_length), shape,
                                chunks=chunks)
        size = x.shape[axis]
        edge = x[(slice(None),) * axis + (slice(0, 1) if before else slice(size - 1, size),)]
        return edge.map_blocks(_ramp_block, value, n, axis, before, x.dtype, chunks=chunks,
                               dtype=x.dtype, name="pad-ramp")
    if mode == "empty":  # (NumPy leaves these undefined: whatever a fresh block holds)
        return _creation.empty(shape, dtype=x.dtype, chunks=chunks)
    if mode == "constant":
        try:
            cell = np.zeros(1, x.dtype)
            cell[0] = value  # (NumPy's pad assigns too: NaN into integers is an error)
            value = cell[0]
        except (TypeError, ValueError) as exc:
            raise ValueError(f"pad: constant value {value!r} does not fit the array's dtype "
                             f"{x.dtype} ({exc})") from None
        return full(shape, value, dtype=x.dtype, chunks=chunks)
    size = x.shape[axis]
    if size and n > (size - 1 if mode == "reflect" else size) and mode != "edge":  # (wider than the axis: NumPy's positions, taken from x)
        positions = np.pad(np.arange(size), (n, 0) if before else (0, n), mode=mode)
        return x[(slice(None),) * axis + (positions[:n] if before else positions[size:],)]
    if size == 0:
        raise ValueError(f"pad: cannot extend the empty axis {axis} with mode={mode!r} (as NumPy cannot); "
                         "mode='constant' pads it")
    sl, reverse = (_PAD_PARTS if before else _PAD_PARTS_AFTER)[mode](n, size)
    part = x[(slice(None),) * axis + (sl,)]
    if reverse:
        part = flip(part, axis)
    if mode == "edge":
        part = broadcast_to(part, shape, chunks=chunks)
    return part


def pad(x: Any, pad_width: Any, mode: str = "constant", *, constant_values: Any = 0,
        stat_length: Any = None, end_values: Any = 0) -> Array:
    """``x`` with ``pad_width`` elements added before and after each axis, as ``numpy.pad``.

    ``pad_width``: one number for every side, a pair ``(before, after)`` for every axis, or
    one pair per axis. ``mode``: ``"constant"`` (``constant_values``: a number, a pair, or
    a pair per axis), ``"edge"``, ``"reflect"``, ``"symmetric"`` or ``"wrap"`` (wider than
    the axis too: the elements at NumPy's positions, taken from ``x``). ``"maximum"``,
    ``"minimum"``, ``"mean"`` and ``"median"`` fill with that statistic of the
    ``stat_length`` elements nearest each side (default: the whole axis), ``"linear_ramp"``
    with a ramp from ``end_values`` to the edge, ``"empty"`` with undefined values. The
    padding is one block before and one after each padded axis; the blocks of ``x`` are
    unchanged.

    >>> import numpy as np, xsched.array as xa
    >>> x = xa.from_array(np.arange(5), chunks=2)
    >>> xa.pad(x, (2, 1), constant_values=-1).compute().tolist()
    [-1, -1, 0, 1, 2, 3, 4, -1]
    >>> xa.pad(x, 2, mode="reflect").compute().tolist()
    [2, 1, 0, 1, 2, 3, 4, 3, 2]
    >>> xa.pad(x, (1, 2), mode="maximum", stat_length=2).compute().tolist()
    [1, 0, 1, 2, 3, 4, 4, 4]
    >>> np.pad(x, 1, mode="edge").chunks      # NumPy's pad runs this one
    ((1, 2, 2, 1, 1),)
    """
    x = asarray(x)
    modes = ("constant",) + tuple(_PAD_PARTS) + tuple(_PAD_STATS) + ("linear_ramp", "empty")
    if mode not in modes:
        raise ValueError(f"pad: mode {mode!r} is not supported by xsched arrays; use one of "
                         f"{modes}, or compute first and use numpy.pad")
    widths = _pad_widths(pad_width, x.ndim, "pad_width")
    values = _pad_widths(end_values if mode == "linear_ramp" else constant_values, x.ndim,
                         "end_values" if mode == "linear_ramp" else "constant_values")
    lengths = _pad_widths(stat_length, x.ndim, "stat_length")
    for axis, (lo, hi) in enumerate(widths):
        for n in (lo, hi):
            if not isinstance(n, numbers.Integral) or n < 0:
                raise ValueError(f"pad: pad_width must hold non-negative integers, got {n!r} "
                                 f"on axis {axis}")
    if has_unknown_chunks(x) and any(lo or hi for lo, hi in widths):
        return _pad_lanes(x, widths, mode, values, lengths)
    for axis, ((lo, hi), (v_lo, v_hi), (s_lo, s_hi)) in enumerate(zip(widths, values, lengths)):
        parts = ([_pad_part(x, axis, int(lo), mode, True, v_lo, s_lo)] if lo else []) + [x] + (
            [_pad_part(x, axis, int(hi), mode, False, v_hi, s_hi)] if hi else [])
        if len(parts) > 1:
            x = concatenate(parts, axis=axis)
    return x


def _pad_lanes(x: Array, widths: list, mode: str, values: list, lengths: list) -> Array:
    """``pad`` of an array whose blocks have lengths a boolean mask left unknown, along its
    known axes only: each padded axis in one block (``whole_axes``), then NumPy's ``pad``
    of every block on its own (each line along a padded axis is whole in its block)."""
    padded = [a for a, (lo, hi) in enumerate(widths) if lo or hi]
    for a in padded:
        known_axis_needed(x, a, "pad", "pad only the axes of known lengths")
    if any(isinstance(v, Array) for pair in values for v in pair):
        raise NotImplementedError("pad: constant_values or end_values that are xsched arrays, of an array "
                                  "whose lengths a boolean mask left unknown; compute() them first")
    from .rechunking import whole_axes
    x = whole_axes(x, tuple(padded), "pad")
    widths = [(int(lo), int(hi)) for lo, hi in widths]
    kwargs: dict[str, Any] = {}
    if mode == "constant":
        kwargs["constant_values"] = values
    elif mode == "linear_ramp":
        kwargs["end_values"] = values
    elif mode in _PAD_STATS or mode == "median":
        kwargs["stat_length"] = lengths if any(n is not None for pair in lengths for n in pair) else None
    probe = np.zeros(tuple(x.shape[a] if a in padded else 1 for a in range(x.ndim)), x.dtype)
    np.pad(probe, widths, mode=mode, **kwargs)  # (NumPy's errors, when built)
    chunks = tuple((x.shape[a] + lo + hi,) if a in padded else c
                   for a, ((lo, hi), c) in enumerate(zip(widths, x.chunks)))
    return x.map_blocks(_pad_block, widths, mode, kwargs, chunks=chunks, dtype=x.dtype, name="pad")


def _pad_block(block: np.ndarray, widths: list, mode: str, kwargs: dict) -> np.ndarray:
    return np.pad(block, widths, mode=mode, **kwargs)


# --------------------------------------------------------------------------- broadcasting


def _broadcast_block(block: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    return np.broadcast_to(block, shape)


def broadcast_to(x: Any, shape: Any, chunks: Any = None) -> Array:
    """``x`` repeated along new leading axes and along its axes of length 1, as
    ``numpy.broadcast_to``; ``chunks`` cuts the result (default: ``x``'s blocks, and one
    block along each broadcast axis).

    >>> import numpy as np, xsched.array as xa
    >>> b = xa.broadcast_to(xa.from_array(np.arange(3), chunks=2), (2, 3))
    >>> b.chunks, b.compute().tolist()
    (((2,), (2, 1)), [[0, 1, 2], [0, 1, 2]])
    """
    x = asarray(x)
    shape = tuple(operator.index(s) for s in ((shape,) if isinstance(shape, numbers.Integral)
                                              else shape))
    off = len(shape) - x.ndim
    if off < 0 or any(n not in (1, shape[off + a]) for a, n in enumerate(x.shape)):
        raise ValueError(f"broadcast_to: cannot broadcast an array of shape {x.shape} to "
                         f"shape {shape}")
    grown = [a < off or x.shape[a - off] != shape[a] for a in range(len(shape))]
    if chunks is None:
        out_chunks = tuple((n,) if g else x.chunks[a - off]
                           for a, (n, g) in enumerate(zip(shape, grown)))
    else:
        out_chunks = normalize_chunks(chunks, shape, x.dtype)
    keep = tuple((1,) if grown[off + a] else out_chunks[off + a] for a in range(x.ndim))
    if keep != x.chunks:  # (an axis of length 1 may come as a block and an empty one)
        x = x.rechunk(keep)
    if out_chunks == x.chunks:
        return x
    name = f"broadcast_to-{new_token(x.name, shape, out_chunks)}"
    ann = annotations_in_force()
    layer = {}
    for index in np.ndindex(*tuple(len(c) for c in out_chunks)):
        src = tuple(0 if grown[off + a] else index[off + a] for a in range(x.ndim))
        block_shape = tuple(c[i] for c, i in zip(out_chunks, index))
        layer[chunk_key(name, index)] = Task(
            _broadcast_block, (Ref(chunk_key(x.name, src)), block_shape), {}, per_task(ann))
    return _new(layer, name, [x], out_chunks, x.dtype)


def broadcast_arrays(*args: Any) -> list[Array]:
    """The arguments broadcast against each other, with the same blocks.

    >>> import xsched.array as xa
    >>> [a.shape for a in xa.broadcast_arrays(xa.ones((3, 1), chunks=1), xa.ones(4, chunks=2))]
    [(3, 4), (3, 4)]
    """
    arrays = [asarray(a) for a in args]
    shape = np.broadcast_shapes(*[a.shape for a in arrays])
    chunks = []
    for o, n in enumerate(shape):  # each axis cut wherever an array spanning it is cut
        spans = [a.chunks[a.ndim - len(shape) + o] for a in arrays
                 if a.ndim - len(shape) + o >= 0 and a.shape[a.ndim - len(shape) + o] == n]
        chunks.append(common_blocks(spans) if spans else (n,))
    return [broadcast_to(a, shape, chunks=tuple(chunks)) for a in arrays]


def meshgrid(*xi: Any, indexing: str = "xy", sparse: bool = False) -> list[Array]:
    """Coordinate arrays from 1-d coordinate vectors, as ``numpy.meshgrid`` (``"xy"``: the
    first two axes swapped, as for plotting; ``"ij"``: matrix indexing).

    >>> import xsched.array as xa
    >>> X, Y = xa.meshgrid(xa.arange(3, chunks=2), xa.arange(2, chunks=1))
    >>> X.compute().tolist(), Y.compute().tolist()
    ([[0, 1, 2], [0, 1, 2]], [[0, 0, 0], [1, 1, 1]])
    """
    if indexing not in ("xy", "ij"):
        raise ValueError("Valid values for `indexing` are 'xy' and 'ij'.")
    vectors = [ravel(asarray(x)) for x in xi]
    n = len(vectors)
    where = list(range(n))
    if indexing == "xy" and n > 1:
        where[0], where[1] = 1, 0
    shape = [0] * n
    chunks: list = [()] * n
    for v, ax in zip(vectors, where):
        shape[ax], chunks[ax] = v.shape[0], v.chunks[0]
    out = []
    for v, ax in zip(vectors, where):
        g = v[tuple(slice(None) if a == ax else None for a in range(n))]
        out.append(g if sparse else broadcast_to(g, tuple(shape), chunks=tuple(chunks)))
    return out


# --------------------------------------------------------------------------- elementwise


def where(condition: Any, x: Any = None, y: Any = None) -> Array:
    """``x`` where ``condition`` holds, else ``y``, broadcasting the three together (arrays
    cut differently are cut alike, wherever any of them is); ``where(condition)`` alone is
    ``nonzero(condition)``.

    >>> import numpy as np, xsched.array as xa
    >>> a = xa.from_array(np.arange(5), chunks=2)
    >>> xa.where(a > 2, a, -1).compute().tolist()
    [-1, -1, -1, 3, 4]
    """
    if x is None or y is None:
        if x is None and y is None:  # NumPy's one-argument form: nonzero(condition)
            from .selection import nonzero

            return nonzero(condition)
        raise ValueError("either both or neither of x and y should be given")
    if not any(isinstance(a, Array) for a in (condition, x, y)):
        condition = asarray(condition)
    return elemwise(np.where, condition, x, y, name="where")


def clip(x: Any, /, min: Any = None, max: Any = None, *, a_min: Any = None, a_max: Any = None) -> Array:
    """Limit the values to ``[min, max]`` (either may be None, or an array; NumPy's names
    ``a_min`` / ``a_max`` too); with neither, the values as they are (the Array API's).

    >>> import numpy as np, xsched.array as xa
    >>> xa.from_array(np.arange(5), chunks=2).clip(1, 3).compute().tolist()
    [1, 1, 2, 3, 3]
    """
    if (min is not None and a_min is not None) or (max is not None and a_max is not None):
        raise TypeError("clip: give min (max) or NumPy's a_min (a_max), not both")
    low, high = (a_min if min is None else min), (a_max if max is None else max)
    x = asarray(x)
    if low is None and high is None:
        return x
    return elemwise(np.clip, x, low, high, name="clip")


def around(x: Any, decimals: int = 0) -> Array:
    """Round to ``decimals`` decimals (halves to even, as numpy rounds).

    >>> import numpy as np, xsched.array as xa
    >>> xa.around(xa.from_array(np.array([0.5, 1.26]), chunks=1), 1).compute().tolist()
    [0.5, 1.3]
    """
    return elemwise(np.round, asarray(x), extra_args=(int(decimals),), name="round")


def _reshape_method(self: Array, *shape: Any, merge_chunks: bool = True, limit: Any = None,
                    order: str = "C") -> Array:
    """``x.reshape(2, 3)`` or ``x.reshape((2, 3))``; see ``xsched.array.reshape`` (C order).

    >>> import xsched.array as xa
    >>> xa.arange(6, chunks=3).reshape(2, 3).shape
    (2, 3)
    """
    if order != "C":
        raise NotImplementedError(f"x.reshape(order={order!r}): the elements are taken in C order only; for "
                                  "Fortran order, x.T.reshape(shape[::-1]).T")
    return reshape(self, shape[0] if len(shape) == 1 else shape, merge_chunks=merge_chunks, limit=limit)


def _flatten(self: Array, order: str = "C") -> Array:
    """The elements as a 1-d array, in C order or ``order`` (the same as ``ravel``'s).

    >>> import numpy as np, xsched.array as xa
    >>> xa.from_array(np.arange(4).reshape(2, 2), chunks=1).flatten("F").compute().tolist()
    [0, 2, 1, 3]
    """
    return ravel(self, order)


def _round_method(self: Array, decimals: int = 0) -> Array:
    """Round to ``decimals`` decimals; see ``xsched.array.around``.

    >>> import numpy as np, xsched.array as xa
    >>> xa.from_array(np.array([1.5, 2.5]), chunks=1).round().compute().tolist()
    [2.0, 2.0]
    """
    return around(self, decimals)


def _conj_method(self: Array) -> Array:
    """The complex conjugate, element by element (``x.conj()``, as NumPy's arrays have it;
    xarray's ``cov`` and ``corr`` call it).

    >>> import numpy as np, xsched.array as xa
    >>> xa.from_array(np.array([1 + 2j, 3j]), chunks=1).conj().compute().tolist()
    [(1-2j), -3j]
    """
    return elemwise(np.conjugate, self, name="conjugate")


for _name, _f in [("reshape", _reshape_method), ("flatten", _flatten), ("round", _round_method),
                  ("ravel", ravel), ("squeeze", squeeze), ("swapaxes", swapaxes),
                  ("clip", clip), ("conj", _conj_method), ("conjugate", _conj_method), ("repeat", repeat)]:
    setattr(Array, _name, _f)


_creation._stack = stack  # (asarray of a list holding xsched arrays stacks them lazily)
