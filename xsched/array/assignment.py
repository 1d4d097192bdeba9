"""``x[index] = value``: the same Array object, now naming a graph with the values set.

An xsched array is a recipe, so assigning into it does not write anywhere: the Array takes
a new graph in which every block the index touches is a copy of the old block with the
values set (one ``setitem`` task per block; untouched blocks pass through), as dask's
arrays do. The index may be

* a boolean mask of the array's shape, or of its first axes (a NumPy or an xsched array),
  with a scalar value: ``x[x < 0] = 0``;
* ints, slices of any step and ``...``, with a scalar or an array value broadcast to
  ``x[index]``'s shape as NumPy broadcasts it (an xsched value is cut into the touched
  blocks' pieces by one rechunk);
* one list or NumPy array of integer positions along an axis (the others whole), with a
  scalar value.

Values are cast to the array's dtype, as NumPy casts them. Shapes that do not broadcast,
positions out of bounds and indexes of other kinds fail when the assignment is made, naming
what to do; nothing is computed then.

>>> import numpy as np, xsched.array as xa
>>> x = xa.from_array(np.arange(10), chunks=4)
>>> x[x > 6] = 0
>>> x[1:4] = [10, 20, 30]
>>> x.compute().tolist()
[0, 10, 20, 30, 4, 5, 6, 0, 0, 0]
"""

from __future__ import annotations

import itertools
import numbers
from typing import Any

import numpy as np

from ..graph.layers import LayeredGraph, annotations_in_force, chunk_key, new_token, per_task
from ..graph.spec import Ref, Task
from . import take as _fancy
from .chunks import _starts
from .core import Array, elemwise, from_array
from .creation import asarray
from .manipulation import broadcast_to, expand_dims, moveaxis, where
from .masking import cut_alike, has_unknown_chunks, known_chunks_needed, same_lengths

__all__ = ["assigned"]


def _same(block: np.ndarray) -> np.ndarray:
    return block


def _set_block(block: np.ndarray, local: tuple, value: Any) -> np.ndarray:
    """A copy of ``block`` with ``value`` set at ``local`` (a slice per axis, or one array of
    positions, whose axis stays in place)."""
    out = block.copy()
    out[local] = value
    return out


def _in_block(pos: Any, lo: int, hi: int) -> tuple[Any, range]:
    """The positions of ``pos`` (a range, or an array of positions) in ``[lo, hi)``: as an
    index into that block (a slice for a range), and their places in ``pos`` (a range: the
    positions are in order along the axis, so one block's are a run).

    >>> _in_block(range(1, 10, 3), 3, 8), _in_block(range(9, 0, -4), 0, 6)
    ((slice(1, 5, 3), range(1, 3)), (slice(5, 0, -4), range(1, 3)))
    """
    if isinstance(pos, range):
        step = pos.step
        if step > 0:
            k0, k1 = -((pos.start - lo) // step), -((pos.start - hi) // step)
        else:  # (positions falling: the k-th is start - k * |step|)
            k0, k1 = (pos.start - hi) // -step + 1, (pos.start - lo) // -step + 1
        k0, k1 = max(k0, 0), min(k1, len(pos))
        if k1 <= k0:
            return slice(0, 0), range(0)
        first, last = pos[k0] - lo, pos[k1 - 1] - lo
        stop = last + (1 if step > 0 else -1)
        return slice(first, None if stop < 0 else stop, step), range(k0, k1)
    inside = np.flatnonzero((pos >= lo) & (pos < hi))
    return pos[inside] - lo, range(int(inside[0]), int(inside[-1]) + 1) if len(inside) else range(0)


def _is_mask(key: Any) -> bool:
    return (isinstance(key, Array) and key.dtype == bool) or (
        isinstance(key, (np.ndarray, list)) and np.asarray(key).dtype == bool and np.ndim(key) > 0)


def assigned(x: Array, key: Any, value: Any) -> Array:
    """A new Array: ``x`` with ``value`` set at ``key`` (see the module docstring); ``x`` itself
    is left as it was (``x[key] = value`` then takes the new one's graph)."""
    key = _fancy.zero_d_as_int(key)
    if x.dtype.kind in "iu" and (isinstance(value, (list, tuple)) or
                                 (isinstance(value, int) and not isinstance(value, bool))):
        try:  # (NumPy refuses a Python integer the dtype cannot hold; its own integers wrap round)
            np.array(value, dtype=x.dtype)
        except OverflowError as exc:
            raise OverflowError(f"x[index] = value: {exc}, as in NumPy") from None
    if isinstance(value, (list, tuple)):
        value = np.asarray(value)
    if not isinstance(value, (Array, np.ndarray)) and not np.isscalar(value) and value is not None:
        raise TypeError(f"x[index] = value: value must be a number, a NumPy or an xsched array, not "
                        f"{type(value).__name__}")
    if x.dtype.kind in "iub" and not isinstance(value, Array) and np.asarray(value).dtype.kind in "fc" \
            and np.isnan(np.asarray(value)).any():
        raise ValueError(f"x[index] = value: cannot convert float NaN to integer (the array is {x.dtype}), as "
                         "in NumPy; make it float first, x = x.astype(float)")
    if x.dtype.kind != "c" and np.ndim(value) == 0 and not isinstance(value, Array) \
            and np.iscomplexobj(value) and np.imag(value) != 0:
        raise TypeError(f"x[index] = value: cannot put the complex {value!r} in an array of {x.dtype} (its "
                        "imaginary part would be lost), as in NumPy; make it complex first, "
                        "x = x.astype(complex)")
    if _is_mask(key):
        return _by_mask(x, key if isinstance(key, Array) else np.asarray(key), value)
    known_chunks_needed(x, "x[index] = value")
    spread = _mask_among_whole_axes(x, key)
    if spread is not None:
        return _by_mask(x, spread, value)
    return _by_positions(x, key, value)


def _mask_among_whole_axes(x: Array, key: Any) -> Any:
    """``x[..., mask, :] = value``: a tuple of one boolean mask and whole axes (``:`` or
    ``...``) as one mask of ``x``'s shape (the mask repeated along the other axes), which
    NumPy's assignment amounts to; None for any other key."""
    if not isinstance(key, tuple) or sum(1 for i in key if _is_mask(i)) != 1 or not all(
            _is_mask(i) or i is Ellipsis or (isinstance(i, slice) and i == slice(None)) for i in key):
        return None
    from .slicing import _check_rank

    if sum(i is Ellipsis for i in key) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    mask = next(i for i in key if _is_mask(i))
    mask = mask if isinstance(mask, Array) else np.asarray(mask)
    taken = sum(mask.ndim if _is_mask(i) else 1 for i in key if i is not Ellipsis)  # (axes the entries index)
    _check_rank(taken, x.ndim)
    start = 0
    for i in key:  # (the axes before the mask's first: one per entry, or what '...' stands for)
        if _is_mask(i):
            break
        start += x.ndim - taken if i is Ellipsis else 1
    if tuple(mask.shape) != x.shape[start:start + mask.ndim]:
        raise IndexError(f"a boolean mask of shape {tuple(mask.shape)} cannot index axes {start} to "
                         f"{start + mask.ndim - 1} of an array of shape {x.shape}: its shape must be theirs")
    shaped = (1,) * start + tuple(mask.shape) + (1,) * (x.ndim - start - mask.ndim)
    if isinstance(mask, Array):
        known_chunks_needed(mask, "x[..., mask] = value")
        return broadcast_to(mask.reshape(shaped), x.shape, chunks=x.chunks)
    return np.broadcast_to(mask.reshape(shaped), x.shape)


def _by_mask(x: Array, mask: Any, value: Any) -> Array:
    """``x`` with ``value`` where ``mask`` holds (a mask of ``x``'s first axes covers the rest)."""
    if np.ndim(value) != 0:
        raise ValueError("x[mask] = value takes one value for every position the mask picks (a scalar); "
                         "to set an array's values where a mask holds, use xa.where(mask, values, x)")
    shape = tuple(mask.shape)
    if not isinstance(mask, Array):
        known_chunks_needed(x, "x[mask] = value, with a NumPy mask,")
    if len(shape) > x.ndim or not same_lengths(shape, x.shape[:len(shape)]):
        raise IndexError(f"a boolean mask of shape {shape} cannot index an array of shape {x.shape}: the "
                         "shapes must be equal, or the mask's those of the array's first axes")
    cut = x.chunks[:len(shape)]
    if isinstance(mask, Array) and cut_alike(mask.chunks, cut):
        pass  # (block by block, unknown lengths too: y[y > 5] = 0 of a masked y)
    elif isinstance(mask, Array):
        known_chunks_needed(mask, "x[mask] = value")
        known_chunks_needed(x, "x[mask] = value, with a mask cut otherwise,")
        mask = mask.rechunk(cut)
    else:
        mask = from_array(np.asarray(mask), chunks=cut)
    if mask.ndim < x.ndim:
        mask = expand_dims(mask, tuple(range(mask.ndim, x.ndim)))
    fill = value.astype(x.dtype) if isinstance(value, Array) else np.asarray(value).astype(x.dtype)
    if has_unknown_chunks(x) or has_unknown_chunks(mask):  # (each block pair checked where it is computed)
        return elemwise(_set_where_aligned, mask, fill, x, len(shape), dtype=x.dtype, name="setitem-mask")
    out = where(mask, fill, x)  # (an xsched 0-d value stays lazy)
    return out if out.dtype == x.dtype else out.astype(x.dtype)


def _set_where_aligned(mask: np.ndarray, fill: Any, block: np.ndarray, axes: int) -> np.ndarray:
    """``fill`` where ``mask`` holds in one block whose length was unknown when built: the
    mask's block must be the array's, along the mask's own axes (NumPy's rule for the whole;
    a mask made from another array may not line up)."""
    if mask.shape[:axes] != block.shape[:axes]:
        raise IndexError(f"x[mask] = value: a block of the mask, of shape {mask.shape[:axes]}, does not line up "
                         f"with the array's, of shape {block.shape[:axes]} (both of lengths unknown when built: a "
                         "mask made from another array); compute_chunk_sizes() of both first, or build the mask "
                         "from the array itself")
    return np.where(mask, fill, block).astype(block.dtype, copy=False)


def _axes(x: Array, key: Any) -> tuple[list, list, int | None]:
    """Per axis of ``x``: the positions the key selects, in the key's order (a ``range`` for a
    slice or an int, an array for a list), and whether the axis stays in ``x[key]`` (an int
    drops it); and, when NumPy puts
    the list's axis first in ``x[key]`` (ints and the list not side by side, so that all of
    them index as one broadcast group), its place among the axes that stay, else None."""
    from .slicing import _check_rank, _spell_out_ellipsis

    index = tuple(i for i in (key if isinstance(key, tuple) else (key,)) if i is not None)  # (as NumPy: no axis)
    spelled, n_real = _spell_out_ellipsis(index, x.ndim, lambda i: True)
    _check_rank(n_real, x.ndim)
    if not any(i is Ellipsis for i in index):
        spelled.extend([slice(None)] * (x.ndim - n_real))
    positions, kept = [], []
    for axis, (i, n) in enumerate(zip(spelled, x.shape)):
        if isinstance(i, slice):
            positions.append(range(*i.indices(n)))  # (lazy: x[:] of a long axis makes no array of it)
            kept.append(True)
        elif (isinstance(i, (numbers.Integral, np.integer)) and not isinstance(i, bool)) or (
                isinstance(i, np.ndarray) and i.ndim == 0 and i.dtype.kind in "iu"):
            i = int(i)
            if not -n <= int(i) < n:
                raise IndexError(f"index {int(i)} is out of bounds for axis {axis} with size {n}")
            positions.append(range(i % n, i % n + 1))
            kept.append(False)
        elif _fancy.is_integer_index(i):
            positions.append(_fancy.normalize_indices(i, n, axis))
            kept.append(True)
        elif isinstance(i, Array) and i.dtype == bool:
            raise TypeError("x[index] = value: an xsched boolean mask goes alone, x[mask] = v, or with whole axes "
                            "only, x[:, mask] = v; beside ints or partial slices give it as a NumPy array "
                            "(np.asarray(mask))")
        elif isinstance(i, Array):
            raise TypeError("x[index] = value: an xsched array of positions is not taken (its values are not known "
                            "when the assignment is built); give the positions as a list or a NumPy array "
                            "(np.asarray(positions))")
        else:
            raise TypeError(f"x[index] = value takes ints, slices, '...', one list of integer positions, or a "
                            f"boolean mask (alone or among whole axes), not {type(i).__name__}")
    grouped = [a for a, i in enumerate(spelled) if not isinstance(i, slice)]  # (ints and the list)
    listed = [a for a, i in enumerate(spelled) if _fancy.is_integer_index(i)]
    front = None
    if listed and grouped[-1] - grouped[0] + 1 != len(grouped):
        front = sum(1 for a in range(listed[0]) if kept[a])
    return positions, kept, front


def _by_positions(x: Array, key: Any, value: Any) -> Array:
    """``x`` with ``value`` set at the positions of ints, slices and one list of positions."""
    fancy = [i for i in (key if isinstance(key, tuple) else (key,)) if _fancy.is_integer_index(i)]
    if len(fancy) > 1:  # (NumPy pairs several lists point by point, which blocks set axis by axis cannot)
        raise NotImplementedError("x[positions, positions] = value pairs positions point by point; set one "
                                  "point at a time, or build the values with xa.where")
    positions, kept, front = _axes(x, key)
    target = tuple(len(p) for p, k in zip(positions, kept) if k)  # (x[key].shape, but for ``front``)
    shown = target if front is None else (target[front],) + target[:front] + target[front + 1:]
    while np.ndim(value) > len(shown) and value.shape[0] == 1:  # (NumPy drops a value's leading 1s)
        value = value[0]
    scalar = np.ndim(value) == 0 and not isinstance(value, Array)  # (an xsched 0-d value stays lazy)
    if not scalar:
        try:
            fits = np.broadcast_shapes(tuple(value.shape), shown) == shown
        except ValueError:
            fits = False
        if not fits:
            raise ValueError(f"could not broadcast input array from shape {tuple(value.shape)} into shape "
                             f"{shown} (x{_shown(key)} of an array of shape {x.shape})")
        if fancy and not all(isinstance(p, range) or np.all(np.diff(p) >= 0) or np.all(np.diff(p) <= 0)
                             for p in positions):
            raise NotImplementedError("x[positions] = values: the positions must be in order (rising or falling) "
                                      "for an array of values; sort them, and the values with them")
    if any(len(p) == 0 for p in positions):
        return x  # (nothing selected)
    starts = [_starts(c) for c in x.chunks]
    # per axis and block: the block's positions the key sets (local: a slice, or an array for a
    # list) and their places in x[key] (a range)
    touched = [[_in_block(pos, starts[axis][b], starts[axis][b + 1]) for b in range(len(x.chunks[axis]))]
               for axis, pos in enumerate(positions)]
    values, order = None, None
    if not scalar:
        values = broadcast_to(asarray(value), shown)
        if front is not None and front:  # (NumPy put the positions' axis first: back to its place)
            values = moveaxis(values, 0, front)
        dropped = tuple(a for a, k in enumerate(kept) if not k)
        if dropped:  # (an int's axis, of length 1, so that the values line up with the blocks' axes)
            values = expand_dims(values, dropped)
        # each touched block's values are a run of x[key] (the positions are in order along each
        # axis): one rechunk cuts them where the blocks cut x[key], in x[key]'s own order
        runs = [_runs(per_block) for per_block in touched]
        values = values.rechunk(tuple(tuple(n for _, n in run) for run in runs))
        order = [{b: k for k, (b, _) in enumerate(run)} for run in runs]
    axes = [(p.start, p.stop, p.step) if isinstance(p, range) else p for p in positions]
    name = f"setitem-{new_token(x.name, axes, values.name if values is not None else repr(value))}"
    ann = annotations_in_force()
    layer: dict = {}
    fill = np.asarray(value).astype(x.dtype)[()] if scalar else None
    for index in itertools.product(*[range(len(c)) for c in x.chunks]):
        local = tuple(touched[a][b][0] for a, b in enumerate(index))
        source = Ref(chunk_key(x.name, index))
        if any(len(touched[a][b][1]) == 0 for a, b in enumerate(index)):
            task = Task(_same, (source,), {}, per_task(ann))
        elif scalar:
            task = Task(_set_block, (source, local, fill), {}, per_task(ann))
        else:
            piece = Ref(chunk_key(values.name, tuple(order[a][b] for a, b in enumerate(index))))
            task = Task(_set_block, (source, local, piece), {}, per_task(ann))
        layer[chunk_key(name, index)] = task
    graphs = [x._graph] + ([] if values is None else [values._graph])
    return Array(LayeredGraph.merge(*graphs, new={name: layer}), name, x.chunks, x.dtype)


def _runs(per_block: list) -> list[tuple[int, int]]:
    """The blocks an axis' selected positions fall in, in the region's order, with how many
    each holds: ``[(block, count), ...]``; blocks holding none are left out."""
    firsts = sorted((inside[0], b, len(inside)) for b, (_, inside) in enumerate(per_block) if len(inside))
    return [(b, n) for _, b, n in firsts]


def _shown(key: Any) -> str:
    key = key if isinstance(key, tuple) else (key,)
    parts = []
    for i in key:
        if isinstance(i, slice):
            parts.append(":".join("" if v is None else str(v) for v in (i.start, i.stop, i.step)).rstrip(":") or ":")
        elif i is Ellipsis:
            parts.append("...")
        else:
            parts.append(repr(i) if np.ndim(i) == 0 else f"<{np.ndim(i)}-d positions>")
    return "[" + ", ".join(parts) + "]"


def _setitem(self: Array, key: Any, value: Any) -> None:
    """``x[key] = value``: ``x`` now names the graph with the values set (see the module)."""
    new = assigned(self, key, value)
    self._graph, self.name, self.chunks = new._graph, new.name, new.chunks


Array.__setitem__ = _setitem  # type: ignore[attr-defined]
