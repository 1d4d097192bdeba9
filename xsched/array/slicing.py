"""Indexing an array with ``x[index]``: ints, slices, ``None``, ``...``, integer arrays
(one through ``take``, several paired point by point through ``points``), 0-d booleans and
boolean masks (through ``masking``).

Each output block comes from exactly one input block (a basic index never joins blocks), so
``x[index]`` adds one ``getitem`` layer of ``_take`` tasks; a slice picks, per axis, the blocks
it crosses and the slice inside each (``_slice_axis``). Integer arrays are a basic index
followed by ``take`` along the axis; a mask of the array's shape gives blocks of unknown length.

Importing this module gives ``Array`` its ``__getitem__``.

>>> import numpy as np, xsched.array as xa
>>> x = xa.from_array(np.arange(12).reshape(3, 4), chunks=2)
>>> x[1:, ::-2].compute().tolist()
[[7, 5], [11, 9]]
>>> x[x > 8].compute().tolist()
[9, 10, 11]
"""

from __future__ import annotations

import itertools
import math
import numbers
from typing import Any, Callable

import numpy as np

from ..graph.layers import LayeredGraph, annotations_in_force, chunk_key, new_token, per_task
from ..graph.spec import Ref, Task
from . import masking as _masking
from . import points as _points
from . import take as _fancy
from .chunks import _starts
from .core import Array, from_array

__all__: list[str] = []


def _array_getitem(self: Array, index: Any) -> Array:
    """``x[index]``, as NumPy indexes (see the module docstring)."""
    if isinstance(index, str) or (isinstance(index, list) and index and all(isinstance(i, str) for i in index)):
        return _fields(self, index)
    index = _fancy.zero_d_as_int(index)
    if _is_boolean_mask(index) and not (isinstance(index, np.ndarray) and index.ndim == 1):
        if not isinstance(index, Array):
            if index.shape != self.shape[:index.ndim]:
                raise IndexError(f"a boolean mask of shape {index.shape} cannot index an array of shape "
                                 f"{self.shape}: the shapes must be equal, or the mask's those of the "
                                 "array's first axes")
            index = from_array(index, chunks=self.chunks[:index.ndim])
        return _masking.boolean_mask(self, index)
    if isinstance(index, Array) and index.dtype.kind in "iu":
        return _fancy.take_lazy(self, index, 0)
    if isinstance(index, tuple) and any(isinstance(i, Array) for i in index):
        _check_rank(_spell_out_ellipsis(index, self.ndim, lambda i: i is not None)[1], self.ndim)
        lazy = [p for p, i in enumerate(index) if isinstance(i, Array)]
        rest = [i for p, i in enumerate(index) if p != lazy[0]]
        whole = [isinstance(i, slice) and i == slice(None) for i in rest]
        if (len(lazy) == 1 and index[lazy[0]].dtype.kind in "iu" and all(whole[:lazy[0]])
                and all(w or i is Ellipsis for w, i in zip(whole[lazy[0]:], rest[lazy[0]:]))):
            return _fancy.take_lazy(self, index[lazy[0]], lazy[0])  # (x[:, positions, ...]: the others whole)
        return _getitem_lazy_mask(self, index)
    return _getitem(self, index)


def _fields(x: Array, names: str | list[str]) -> Array:
    """``x["field"]`` or ``x[["a", "b"]]`` of a structured dtype, block by block; a field of
    a subarray dtype (``("f", "f8", (3,))``) adds its axes, each one block. Several fields
    are packed (no gaps of the fields left out: NumPy's ``repack_fields``), since each block
    is a copy."""
    fields = x.dtype.names
    if not fields:
        raise IndexError(f"x[{names!r}]: field names index arrays of a structured dtype; this one is "
                         f"{x.dtype}")
    missing = [n for n in ([names] if isinstance(names, str) else names) if n not in fields]
    if missing:
        raise ValueError(f"x[{names!r}]: no field {missing[0]!r}; the fields are {list(fields)}")
    probe = _field_values(np.empty((0,) * x.ndim, x.dtype), names)
    dtype, extra = probe.dtype, probe.shape[x.ndim:]
    name = f"getitem-{new_token((x.name, 'fields', names), x.chunks)}"
    ann = annotations_in_force()
    tail = (0,) * len(extra)
    layer = {chunk_key(name, index + tail): Task(_field_values, (Ref(chunk_key(x.name, index)), names), {},
                                                 per_task(ann))
             for index in np.ndindex(*x.numblocks)}
    return Array(LayeredGraph.merge(x.__xsched_graph__(), new={name: layer}), name,
                 x.chunks + tuple((n,) for n in extra), dtype)


def _field_values(block: np.ndarray, names: Any) -> np.ndarray:
    """One block's fields, copied (a view would keep the whole block alive) and packed."""
    from numpy.lib.recfunctions import repack_fields
    view = block[names]
    return view.astype(repack_fields(view.dtype))


def _getitem_lazy_mask(x: Array, index: tuple) -> Array:
    """``x[2:, mask]`` or ``x[3, positions]``: the other entries first, then along the array's
    axis the elements where the xsched 1-d boolean ``mask`` is true (that axis's lengths
    unknown until computed), or those at the xsched 1-d integer ``positions``."""
    full, _ = _spell_out_ellipsis(index, x.ndim, lambda i: i is not None)
    lazy = [p for p, i in enumerate(full) if isinstance(i, Array)]
    if len(lazy) > 1 or any(_fancy.is_integer_index(i) for i in full if not isinstance(i, Array)):
        raise IndexError("an xsched array index cannot be combined with other array indices: several array "
                         "indices pair their positions point by point, which needs them when the expression is "
                         "built; compute the xsched index first (np.asarray(index)). (Indexing one axis after the "
                         "other, x[:, mask][rows], takes every combination instead, as np.ix_ does.)")
    p = lazy[0]
    mask = full[p]
    positions = mask.dtype.kind in "iu"
    if mask.ndim != 1 or not (positions or mask.dtype == np.bool_):
        raise TypeError("an xsched array inside an index tuple must be a 1-d boolean mask of its axis "
                        f"(x[:, x[0] > 0]) or 1-d integer positions (x[2, positions]), not shape "
                        f"{tuple(mask.shape)} of {mask.dtype}; else index one axis after the other, or "
                        "compute() it first")
    basic = tuple(slice(None) if q == p else i for q, i in enumerate(full))
    axis = sum(1 for i in full[:p] if not isinstance(i, numbers.Integral))
    y = _getitem(x, basic)
    y = _fancy.take_lazy(y, mask, axis) if positions else _masking.mask_along(y, mask, axis)
    # (as NumPy: apart from the ints, first; apart in the index as written, where even a
    # '...' standing for no axis parts them)
    group = [q for q, i in enumerate(index) if isinstance(i, (numbers.Integral, Array))]
    if axis and len(group) > 1 and group[-1] - group[0] != len(group) - 1:
        y = y.transpose([axis] + [a for a in range(y.ndim) if a != axis])
    return y



def _spell_out_ellipsis(index: tuple, ndim: int, takes_axis: Callable[[Any], bool]) -> tuple[list, int]:
    """``index`` with its one ``...`` replaced by the whole slices it stands for, and how many
    axes the other entries take (``takes_axis``: not None, and for a 0-d boolean not either)."""
    if sum(i is Ellipsis for i in index) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    n_real = sum(1 for i in index if i is not Ellipsis and takes_axis(i))
    out: list = []
    for i in index:
        out.extend([slice(None)] * max(ndim - n_real, 0) if i is Ellipsis else [i])
    return out, n_real


def _check_rank(n_real: int, ndim: int) -> None:
    """NumPy's error for an index taking more axes than the array has."""
    if n_real > ndim:
        raise IndexError(f"too many indices: array is {ndim}-dimensional, but {n_real} were indexed")


def _normalize_index(index: Any, shape: tuple[int, ...]) -> list:
    if not isinstance(index, tuple):
        index = (index,)
    out, n_real = _spell_out_ellipsis(index, len(shape), lambda i: i is not None)
    _check_rank(n_real, len(shape))
    if not any(i is Ellipsis for i in index):  # (not `in`: that would compare index arrays)
        out.extend([slice(None)] * (len(shape) - n_real))
    for i in out:
        if i is None or isinstance(i, (slice, numbers.Integral)) or _fancy.is_integer_index(i):
            continue
        if isinstance(i, Array):
            raise TypeError(f"an xsched array used as an index must be a boolean mask of the same shape "
                            f"(x[x > 0]) or hold integer positions (x[positions]), not {i.dtype}")
        raise TypeError(
            f"xsched arrays support indexing with ints, slices, None, '...', lists or NumPy arrays of "
            f"integers and boolean masks, not {type(i).__name__}"
        )
    return out


def _slice_axis(chunks: tuple[int, ...], sl: slice) -> list[tuple[int, slice, int]]:
    """Blocks hit by a slice: (block index, slice inside the block, selected length)."""
    size = sum(chunks)
    start, stop, step = sl.indices(size)
    picks = []
    starts = _starts(chunks)
    if step < 0:  # blocks last to first, each read backwards
        for b in reversed(range(len(chunks))):
            lo, hi = starts[b], starts[b + 1]
            top = min(start, hi - 1)
            top -= (top - start) % -step
            bottom = max(lo, stop + 1)
            if top < bottom:
                continue
            length = (top - bottom) // -step + 1
            end = top + step * length - lo
            picks.append((b, slice(top - lo, end if end >= 0 else None, step), length))
        return picks or [(0, slice(0, 0, 1), 0)]
    for b, n in enumerate(chunks):
        lo, hi = starts[b], starts[b + 1]
        first = max(start, lo)
        if first < stop and step > 1:
            first += (-(first - start)) % step
        last = min(stop, hi)
        if first >= last:
            continue
        length = len(range(first, last, step))
        picks.append((b, slice(first - lo, last - lo, step), length))
    if not picks:  # an empty selection keeps one empty block
        picks.append((0, slice(0, 0, 1), 0))
    return picks


def _is_boolean_mask(index: Any) -> bool:
    """``x[mask]`` with a boolean array (an xsched Array or NumPy) rather than ints and slices."""
    return (isinstance(index, Array) and index.dtype == np.bool_) or (
        isinstance(index, np.ndarray) and index.dtype == np.bool_ and index.ndim > 0)


def _getitem(x: Array, index: Any) -> Array:
    if any(_is_scalar_bool(i) for i in (index if isinstance(index, tuple) else (index,))):
        return _getitem_scalar_bool(x, index)
    idx = _normalize_index(index, x.shape)
    _unknown_axes_whole(x, idx)
    arrays = [p for p, i in enumerate(idx) if _fancy.is_integer_index(i)]
    if arrays:
        return _getitem_integer_array(x, idx, arrays, _split_by_ellipsis(index))
    per_axis: list = []  # per output axis: list of (in block, local index, out length)
    plan: list = []  # per input axis or inserted axis
    axis = 0
    for i in idx:
        if i is None:
            plan.append(("new", None))
            continue
        n = x.shape[axis]
        if n != n:  # (blocks of unknown length, taken whole: see _unknown_axes_whole)
            plan.append(("slice", (axis, [(b, slice(None), c) for b, c in enumerate(x.chunks[axis])])))
        elif isinstance(i, numbers.Integral):
            j = int(i)
            if not -n <= j < n:
                raise IndexError(f"index {i} is out of bounds for axis {axis} with size {n}")
            j %= n
            starts = _starts(x.chunks[axis])
            b = next(b for b in range(len(x.chunks[axis])) if starts[b] <= j < starts[b + 1])
            plan.append(("int", (axis, b, j - starts[b])))
        else:
            picks = _slice_axis(x.chunks[axis], i)
            plan.append(("slice", (axis, picks)))
        axis += 1
    for kind, what in plan:
        if kind == "new":
            per_axis.append([(None, None, 1)])
        elif kind == "slice":
            per_axis.append(what[1])
    out_chunks = tuple(tuple(p[2] for p in picks) for picks in per_axis)
    if all(isinstance(i, slice) and i == slice(None) for i in idx):
        return x
    window = _window_of_made(x, idx, out_chunks)
    if window is not None:
        return window
    name = f"getitem-{new_token(x.name, [repr(i) for i in idx])}"
    ann = annotations_in_force()
    layer: dict[str, Any] = {}
    for out_index in itertools.product(*[range(len(p)) for p in per_axis]):
        in_index = [0] * x.ndim
        local: list = []
        o = 0
        for kind, what in plan:
            if kind == "new":
                local.append(None)
                o += 1
            elif kind == "int":
                ax, b, j = what
                in_index[ax] = b
                local.append(j)
            else:
                ax, picks = what
                b, sl, _ = picks[out_index[o]]
                in_index[ax] = b
                local.append(sl)
                o += 1
        layer[chunk_key(name, out_index)] = Task(
            _take, (Ref(chunk_key(x.name, tuple(in_index))), tuple(local)), {}, per_task(ann))
    return Array(LayeredGraph.merge(x._graph, new={name: layer}), name, out_chunks, x.dtype)


def _unknown_axes_whole(x: Array, idx: list) -> None:
    """Refuse, naming the axis, an index that cuts an axis whose blocks' lengths a boolean
    mask left unknown; such an axis can only be taken whole (``r[:, 2]``, ``r[..., 1:3]``).

    >>> import numpy as np, xsched.array as xa
    >>> x = xa.from_array(np.arange(12).reshape(4, 3), chunks=2)
    >>> r = x[x[:, 0] > 2]
    >>> r[:, 2].compute().tolist(), r[..., ::2].compute().tolist()
    ([5, 8, 11], [[3, 5], [6, 8], [9, 11]])
    >>> r[1:]
    Traceback (most recent call last):
    ...
    ValueError: indexing along axis 0 needs the lengths of the array's blocks there, which a boolean mask left unknown; take that axis whole (':' in its place), or call x = x.compute_chunk_sizes() first (it computes only the lengths)
    """
    axis = 0
    for i in idx:
        if i is None:
            continue
        if not (isinstance(i, slice) and i.start in (None, 0) and i.stop is None and i.step in (None, 1)):
            _masking.known_axis_needed(x, axis, "indexing", "take that axis whole (':' in its place)")
        axis += 1


def _window_of_made(x: Array, idx: list, out_chunks: tuple) -> Array | None:
    """``x[idx]`` made anew when ``x`` is made from its blocks' positions alone
    (``creation.generate``) and ``idx`` is ints and slices (of steps other than 1 where the
    recipe can make any positions): only the part asked for is ever made. None otherwise
    (the blocks are made and cut)."""
    if x._remake is None or x._remake[0] != x.name or any(i is None for i in idx):
        return None
    if not all(n > 0 for c in out_chunks for n in c):
        return None
    starts, steps, dropped = [], [], []
    for axis, (i, n) in enumerate(zip(idx, x.shape)):
        if isinstance(i, slice):
            start, _, step = i.indices(n)
            starts.append(start)
            steps.append(step)
        else:
            starts.append(int(i) % n)
            steps.append(1)
            dropped.append(axis)
    return x._remake[1].window(tuple(starts), tuple(dropped), out_chunks, tuple(steps))


def _is_scalar_bool(i: Any) -> bool:
    return isinstance(i, (bool, np.bool_)) or (
        isinstance(i, np.ndarray) and i.ndim == 0 and i.dtype == np.bool_)


def _getitem_scalar_bool(x: Array, index: Any) -> Array:
    """``x[True]``, ``x[0, False]``: NumPy's 0-d boolean index, a new axis of length 1 (all
    True) or 0 (any False) taking no axis of ``x`` -- not the integers 1 and 0. Like other
    advanced indices with the ints beside it, it goes where they stand when they stand side
    by side, else first.

    >>> import numpy as np, xsched.array as xa
    >>> x = xa.from_array(np.arange(12).reshape(3, 4), chunks=2)
    >>> x[True].shape, x[False].shape, x[:, True].shape, x[1, True].compute().tolist()
    ((1, 3, 4), (0, 3, 4), (3, 1, 4), [[4, 5, 6, 7]])
    """
    index = index if isinstance(index, tuple) else (index,)
    if any(_fancy.is_integer_index(i) for i in index):
        raise IndexError("a scalar boolean index (True/False) cannot be combined with integer-array indices "
                         "on xsched arrays; index with the integer arrays first, then add the axis with None")
    # with '...' spelled out, as NumPy places advanced indices
    full, _ = _spell_out_ellipsis(index, x.ndim, lambda i: i is not None and not _is_scalar_bool(i))
    advanced = [p for p, i in enumerate(full) if _is_scalar_bool(i) or isinstance(i, numbers.Integral)]
    pos = advanced[0] if advanced == list(range(advanced[0], advanced[-1] + 1)) else 0
    rest = [i for i in full if not _is_scalar_bool(i)]
    y = _getitem(x, tuple(rest[:pos] + [None] + rest[pos:]))
    if not all(bool(i) for i in full if _is_scalar_bool(i)):
        y = _getitem(y, (slice(None),) * pos + (slice(0, 0),))
    return y


def _split_by_ellipsis(index: Any) -> bool:
    """Whether an ``...`` stands between two integer-array or int entries of ``index``:
    NumPy then puts the picked axes first, even when the ``...`` stands for no axis.

    >>> _split_by_ellipsis((slice(None), [0, 1], ..., 2)), _split_by_ellipsis(([0, 1], 2, ...))
    (True, False)
    """
    if not isinstance(index, tuple) or not any(i is Ellipsis for i in index):
        return False
    at = next(p for p, i in enumerate(index) if i is Ellipsis)
    def advanced(i: Any) -> bool:
        return _fancy.is_integer_index(i) or isinstance(i, numbers.Integral)
    return any(advanced(i) for i in index[:at]) and any(advanced(i) for i in index[at + 1:])


def _getitem_integer_array(x: Array, idx: list, arrays: list, split: bool = False) -> Array:
    """``x[..., [i, j, k], ...]``: the basic part of the index first, then ``take`` along the
    array's axis. Where NumPy would move that axis first (integers and the array not side by
    side, or ``split`` by an ``...``), the result's axis moves there too."""
    if len(arrays) > 1:
        if _is_outer(idx, arrays):
            return _getitem_outer(x, idx, arrays)
        return _points.pointwise(x, idx, points_first=split)  # (NumPy pairs them element-wise)
    p = arrays[0]
    in_axis = sum(1 for i in idx[:p] if i is not None)
    # positions (a boolean index is a mask here, not 0s and 1s as for take); out of bounds fails
    # here, naming the axis; an index of several dimensions gives the result those axes
    index = np.asarray(idx[p])
    shape = index.shape if index.dtype != np.bool_ else (int(index.sum()),)
    positions = _fancy.normalize_indices(index.ravel() if len(shape) > 1 else index, x.shape[in_axis], in_axis)
    basic = idx[:p] + [slice(None)] + idx[p + 1:]
    out_axis = sum(1 for i in idx[:p] if not isinstance(i, numbers.Integral))
    y = _fancy.take(_getitem(x, tuple(basic)), positions.reshape(shape), axis=out_axis)
    ints = [q for q, i in enumerate(idx) if isinstance(i, numbers.Integral)]
    group = sorted(ints + [p])
    if out_axis and ints and (split or group[-1] - group[0] != len(group) - 1):
        picked = list(range(out_axis, out_axis + len(shape)))
        y = y.transpose(picked + [a for a in range(y.ndim) if a not in picked])  # the picked axes first
    return y


def _is_outer(idx: list, arrays: list) -> bool:
    """Whether ``idx`` is an *outer* index in ``numpy.ix_`` form: integer arrays whose
    shapes are 1 but along their own place among them (``(3, 1)`` then ``(1, 2)``),
    with only ints besides. NumPy's result then picks along each axis independently."""
    if any(not (p in arrays or isinstance(i, numbers.Integral)) for p, i in enumerate(idx)):
        return False
    for j, p in enumerate(arrays):
        a = np.asarray(idx[p])
        if a.ndim != len(arrays) or a.dtype == np.bool_ or any(
                n != 1 for d, n in enumerate(a.shape) if d != j):
            return False
    return True


def _getitem_outer(x: Array, idx: list, arrays: list) -> Array:
    """``x[ix_(rows, cols)]``: the ints first, then one ``take`` per axis.

    >>> import numpy as np, xsched.array as xa
    >>> x = xa.from_array(np.arange(24).reshape(2, 3, 4), chunks=2)
    >>> x[np.ix_([1, 0], [2], [3, 1])].compute().tolist()
    [[[23, 21]], [[11, 9]]]
    >>> x[1, np.array([[2], [0]]), np.array([[3, 1]])].compute().tolist()
    [[23, 21], [15, 13]]
    """
    y = _getitem(x, tuple(slice(None) if p in arrays else i for p, i in enumerate(idx)))
    for j, p in enumerate(arrays):
        y = _fancy.take(y, np.asarray(idx[p]).ravel(), axis=j)
    return y


def _take(block: np.ndarray, index: tuple) -> np.ndarray:
    """Select from a block; copy when the selection is smaller than the block, so that a
    small result does not keep a big block alive in worker memory."""
    out = block[index]
    if isinstance(out, np.ndarray) and out.base is not None and out.size < block.size:
        out = out.copy()
    return out


class _Blocks:
    """``x.blocks[index]``: an array of some of ``x``'s blocks, picked by their place in the
    block grid (ints, slices or lists of block numbers per axis; an int keeps its axis, and
    lists pick along each axis on its own). The blocks are not copied: the new array's keys
    name them."""

    def __init__(self, x: Array) -> None:
        self._x = x

    def __getitem__(self, index: Any) -> Array:
        x = self._x
        index, n_real = _spell_out_ellipsis(index if isinstance(index, tuple) else (index,), x.ndim,
                                            lambda i: True)
        if n_real > x.ndim:
            raise IndexError(f"blocks[...]: {n_real} indices for a block grid of {x.ndim} dimensions "
                             f"{x.numblocks}")
        index = tuple(index) + (slice(None),) * (x.ndim - len(index))
        chosen = []
        for axis, (i, n) in enumerate(zip(index, x.numblocks)):
            numbers_ = np.arange(n)
            try:
                picked = numbers_[[i] if isinstance(i, numbers.Integral) else i]
            except IndexError:
                raise IndexError(f"blocks[...]: {i!r} is outside the {n} blocks of axis {axis}") from None
            if picked.ndim != 1 or picked.dtype.kind not in "iu":
                raise IndexError(f"blocks[...]: axis {axis} takes an int, a slice or a list of block numbers, "
                                 f"not {i!r}")
            chosen.append(picked.tolist())
        if not all(chosen):
            raise IndexError(f"blocks[{index!r}] selects no block of the grid {x.numblocks}")
        name = f"blocks-{new_token(x.name, chosen)}"
        layer = {chunk_key(name, out): Ref(chunk_key(x.name, tuple(c[o] for c, o in zip(chosen, out))))
                 for out in itertools.product(*[range(len(c)) for c in chosen])}
        chunks = tuple(tuple(x.chunks[a][b] for b in c) for a, c in enumerate(chosen))
        return Array(LayeredGraph.merge(x._graph, new={name: layer}), name, chunks, x.dtype)

    @property
    def shape(self) -> tuple[int, ...]:
        """The block grid's shape: ``x.numblocks``."""
        return self._x.numblocks

    @property
    def size(self) -> int:
        """The number of blocks."""
        return math.prod(self._x.numblocks)

    def ravel(self) -> list[Array]:
        """Each block as an array of its own, in C order of the block grid."""
        return [self[index] for index in np.ndindex(*self.shape)]

    def __repr__(self) -> str:
        return f"<blocks of {self._x.name}: a grid of {self.shape} blocks>"


def _blocks(self: Array) -> _Blocks:
    """Some of the array's blocks, by their place in the block grid, as an array.

    >>> import numpy as np, xsched.array as xa
    >>> x = xa.from_array(np.arange(16).reshape(4, 4), chunks=2)
    >>> x.blocks[1, 0].compute().tolist(), x.blocks[:, [1]].chunks
    ([[8, 9], [12, 13]], ((2, 2), (2,)))
    >>> x.blocks.shape, x.blocks.size, [b.shape for b in x.blocks.ravel()][:2]
    ((2, 2), 4, [(2, 2), (2, 2)])
    """
    return _Blocks(self)


class _VIndex:
    """``x.vindex[...]``: pointwise indexing, the points' axes first (``points.py``)."""

    def __init__(self, x: Array) -> None:
        self._x = x

    def __getitem__(self, index: Any) -> Array:
        index, n_real = _spell_out_ellipsis(index if isinstance(index, tuple) else (index,), self._x.ndim,
                                            lambda i: True)
        _check_rank(n_real, self._x.ndim)
        _points._refuse_lazy_positions(index, "x.vindex[...]")
        if not any(_fancy.is_integer_index(i) for i in index):
            raise IndexError("vindex takes at least one integer array (a list or NumPy array); for "
                             "slices and ints alone index the array itself: x[...]")
        return _points.pointwise(self._x, tuple(index), points_first=True)


def _vindex(self: Array) -> _VIndex:
    """Pointwise indexing with integer arrays, the points' axes first (dask's ``vindex``).

    >>> import numpy as np, xsched.array as xa
    >>> x = xa.from_array(np.arange(12).reshape(3, 4), chunks=2)
    >>> x.vindex[[2, 0], [1, 3]].compute().tolist()
    [9, 3]
    """
    return _VIndex(self)


Array.__getitem__ = _array_getitem  # type: ignore[method-assign]
Array.blocks = property(_blocks)  # type: ignore[attr-defined]
Array.vindex = property(_vindex)  # type: ignore[attr-defined]
