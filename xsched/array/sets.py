"""Set functions: ``unique`` (with counts), the Array API's ``unique_values``,
``unique_counts``, ``unique_inverse`` and ``unique_all``, and ``isin``.

``unique`` finds each block's distinct values, then merges them in a tree (each task merges
at most ``split_every`` sorted partials), so no task holds more than a few blocks' distinct
values; the result is one block of unknown length (``nan``) until computed (with ``axis``,
the same over blocks holding whole slices: ``_unique_along``)::

    unique-chunk-i    np.unique(block_i)                        (values, counts)
    unique-merge-...  the union of <= split_every partials       (counts added)
    unique-<token>    the values (and counts) as one block

``isin`` is element-wise against values held in every task; ``union1d`` is ``unique`` of
both arrays, flattened and joined; ``intersect1d``, ``setdiff1d`` and ``setxor1d`` compare the
two arrays' ``unique`` values in one last task.

>>> import numpy as np, xsched.array as xa
>>> x = xa.from_array(np.array([3, 1, 3, 2, 1, 3]), chunks=2)
>>> xa.unique(x).compute().tolist()
[1, 2, 3]
>>> values, counts = xa.unique(x, return_counts=True)
>>> values.compute().tolist(), counts.compute().tolist()
([1, 2, 3], [2, 1, 3])
"""

from __future__ import annotations

import math
import numbers
from collections import namedtuple
from typing import Any

import numpy as np

from ..graph.layers import LayeredGraph, annotations_in_force, chunk_key, new_token, per_task
from ..graph.partials import combine_levels
from ..graph.spec import Ref, Task
from .axes import axis_index
from .chunks import _starts
from .core import Array, elemwise
from .creation import asarray
from .manipulation import concatenate, moveaxis, ravel
from .masking import has_unknown_chunks, known_chunks_needed
from .rechunking import whole_axes

__all__ = ["unique", "unique_values", "unique_counts", "unique_inverse", "unique_all", "isin", "union1d",
           "intersect1d", "setdiff1d", "setxor1d"]

#: partials merged by one task of ``unique``'s tree
SPLIT_EVERY = 8


def _unique_chunk(block: np.ndarray, equal_nan: bool = True) -> tuple:
    return np.unique(block.ravel(), return_counts=True, equal_nan=equal_nan)


def _unique_merge(parts: list, equal_nan: bool = True) -> tuple:
    values = np.concatenate([p[0] for p in parts])
    counts = np.concatenate([p[1] for p in parts])
    merged, inverse = np.unique(values, return_inverse=True, equal_nan=equal_nan)
    return merged, np.bincount(inverse.ravel(), weights=counts, minlength=len(merged)).astype(np.intp)


def _tree(layers: dict, keys: list, merge: Any, split: int, token: str, what: str, args: tuple = ()) -> str:
    """Add the layers merging ``keys`` ``split`` at a time with ``merge(parts, *args)`` down
    to one task (at least one merge, so the result always has the merged form); the name of
    its layer, whose one key is that of block 0 of an array of that name."""
    ann = annotations_in_force()
    keys = combine_levels(layers, keys, what, token, merge, split, args=args, annotations=ann)
    name = f"{what}-{new_token(token, 'root')}"
    layers[name] = {chunk_key(name, (0,)): Task(merge, ([Ref(k) for k in keys], *args), {}, per_task(ann))}
    return name


def _split(split_every: Any, x: Array, what: str) -> int:
    """Partials merged per task: ``split_every``, the default when None, all at once when False."""
    if split_every is None:
        return SPLIT_EVERY
    if split_every is False:
        return max(math.prod(x.numblocks), 2)
    if isinstance(split_every, bool) or not isinstance(split_every, numbers.Integral) or split_every < 2:
        raise ValueError(f"{what}: split_every must be an int of at least 2, False (all at once) or None, got "
                         f"{split_every!r}")
    return int(split_every)


def _pick(part: tuple, i: int) -> np.ndarray:
    return part[i]


def unique(x: Any, return_index: bool = False, return_inverse: bool = False, return_counts: bool = False,
           axis: Any = None, split_every: int | None = None, *, equal_nan: bool = True, sorted: bool = True) -> Any:
    """The sorted distinct values of ``x``, as NumPy's ``unique``: of all its elements, or with
    ``axis`` its distinct slices along that axis (``axis=0``: the distinct rows). Each result is
    one block of unknown length (``nan``) until computed; with ``return_index`` also the
    position of each one's first occurrence (flat, or along ``axis``), ``return_inverse`` the
    place of each element (``x``'s shape; along ``axis``, one per slice) among them,
    ``return_counts`` how many times each occurs, in NumPy's order. ``equal_nan=False`` keeps
    every NaN apart, as NumPy's (along an axis, rows with NaNs are always apart, as there).
    The values always come sorted (NumPy's ``sorted=False`` allows that too).

    >>> import numpy as np, xsched.array as xa
    >>> xa.unique(xa.from_array(np.array([[2, 2], [0, 2]]), chunks=1)).compute().tolist()
    [0, 2]
    >>> rows = xa.from_array(np.array([[1, 2], [3, 4], [1, 2]]), chunks=1)
    >>> [a.compute().tolist() for a in xa.unique(rows, axis=0, return_index=True, return_counts=True)]
    [[[1, 2], [3, 4]], [0, 1], [2, 1]]
    """
    x = x if isinstance(x, Array) else asarray(x)
    split = _split(split_every, x, "unique")
    if axis is not None:
        return _unique_along(x, axis_index(axis, x.ndim, "unique"), return_index, return_inverse, return_counts,
                             split)
    values, counts = _unique_tree(x, split, bool(equal_nan))
    out = [values]
    nans_apart = not equal_nan and x.dtype.kind in "fcmM"  # (each NaN or NaT's place its own: NumPy's inverse)
    known = not has_unknown_chunks(x)
    firsts = _first_indices(x, values, split, "unique") if return_index or (
        return_inverse and nans_apart and known) else None
    if return_index:
        out.append(firsts)
    if return_inverse:
        out.append(_inverse(values, x) if not nans_apart else _inverse_nans_apart(values, x, firsts) if known
                   else _inverse(values, x, "unique(..., return_inverse=True, equal_nan=False)"))
    if return_counts:
        out.append(counts)
    return tuple(out) if len(out) > 1 else values


def _unique_tree(x: Array, split: int, equal_nan: bool) -> tuple[Array, Array]:
    """The distinct values of ``x`` and their counts: each block's, merged in a tree."""
    token = new_token(x.name, split, equal_nan)
    ann = annotations_in_force()
    layers: dict = {}
    name = f"unique-chunk-{token}"
    keys = [chunk_key(x.name, index) for index in np.ndindex(*x.numblocks)]
    layers[name] = {f"{name}-{i}": Task(_unique_chunk, (Ref(k), equal_nan), {}, per_task(ann))
                    for i, k in enumerate(keys)}
    last = chunk_key(_tree(layers, list(layers[name]), _unique_merge, split, token, "unique-merge", (equal_nan,)),
                     (0,))
    graph = LayeredGraph.merge(x._graph, new=layers)
    out = []
    for i, (what, dtype) in enumerate((("unique", x.dtype), ("unique-counts", np.intp))):
        oname = f"{what}-{token}"
        layer = {chunk_key(oname, (0,)): Task(_pick, (Ref(last), i), {}, per_task(ann))}
        out.append(Array(LayeredGraph.merge(graph, new={oname: layer}), oname, ((math.nan,),), dtype))
    return out[0], out[1]


def _first_indices(x: Array, values: Array, split: int, what: str) -> Array:
    """The flat position (C order) of each of ``values``' first occurrence in ``x``: the
    smallest per block, then the smallest of those in a tree."""
    known_chunks_needed(x, what)
    token = new_token(values.name, x.name, split)
    ann = annotations_in_force()
    grid = [_starts(c) for c in x.chunks]
    name = f"unique-first-{token}"
    layers: dict = {name: {
        f"{name}-{i}": Task(_first_positions, (Ref(chunk_key(x.name, index)), Ref(chunk_key(values.name, (0,))),
                                               x.shape, tuple(s[j] for s, j in zip(grid, index))), {}, per_task(ann))
        for i, index in enumerate(np.ndindex(*x.numblocks))}}
    last = _tree(layers, list(layers[name]), _minimum, split, token, "unique-indices",
                 (Ref(chunk_key(values.name, (0,))),))
    return Array(LayeredGraph.merge(x._graph, values._graph, new=layers), last, ((math.nan,),), np.intp)


# --------------------------------------------------------------------------- distinct slices along an axis


def _rows_chunk(block: np.ndarray, start: int) -> tuple:
    """A block's distinct rows (its slices along axis 0, flattened), where each first occurs
    (counted from the array's start), how many times each occurs, and each row's place among
    them; the last as the one map of this leaf of the tree."""
    rows = block.reshape(len(block), math.prod(block.shape[1:]))
    values, first, inverse, counts = np.unique(rows, axis=0, return_index=True, return_inverse=True,
                                               return_counts=True)
    return values, first + start, counts, [np.arange(len(values))], inverse.ravel()


def _rows_merge(parts: list) -> tuple:
    """The union of partials' distinct rows: counts added, the first occurrence the earliest,
    and each leaf's map (its distinct rows' places) carried on to the union's places."""
    values, first, inverse, _ = np.unique(np.concatenate([p[0] for p in parts]), axis=0, return_index=True,
                                          return_inverse=True, return_counts=True)
    inverse = inverse.ravel()
    firsts = np.full(len(values), np.iinfo(np.intp).max, dtype=np.intp)
    np.minimum.at(firsts, inverse, np.concatenate([p[1] for p in parts]))
    counts = np.bincount(inverse, weights=np.concatenate([p[2] for p in parts]), minlength=len(values))
    maps, offset = [], 0
    for p in parts:
        maps += [inverse[offset + m] for m in p[3]]
        offset += len(p[0])
    return values, firsts, counts.astype(np.intp), maps


def _rows_values(root: tuple, shape: tuple, axis: int) -> np.ndarray:
    return np.moveaxis(root[0].reshape((len(root[0]),) + shape), 0, axis)


def _rows_inverse(leaf: tuple, root: tuple, i: int) -> np.ndarray:
    return root[3][i][leaf[4]]


def _unique_along(x: Array, axis: int, return_index: bool, return_inverse: bool, return_counts: bool,
                  split: int) -> Any:
    """``unique`` with ``axis``: the distinct slices of ``x`` along it. Each block holds whole
    slices (the other axes in one chunk); their distinct rows are merged in a tree, which also
    carries each block's map to the result's places (for ``return_inverse``)::

        unique-rows-i      np.unique(block_i, axis=0)     (rows, first, counts, [map], inverse)
        unique-rows-merge  the union of partials          (maps carried to the union's places)
        unique-<token>     the rows as slices along axis; its index, inverse and counts
    """
    known_chunks_needed(x, "unique(axis=...)")
    moved = moveaxis(x, axis, 0) if axis else x
    moved = whole_axes(moved, tuple(range(1, moved.ndim)), "unique(axis=...)")
    token = new_token(moved.name, split, "rows")
    ann = annotations_in_force()
    layers: dict = {}
    name = f"unique-rows-{token}"
    starts = _starts(moved.chunks[0])
    layers[name] = {chunk_key(name, (i,)): Task(_rows_chunk, (Ref(chunk_key(moved.name, (i,) + (0,) * (moved.ndim - 1))),
                                                              starts[i]), {}, per_task(ann))
                    for i in range(moved.numblocks[0])}
    root = chunk_key(_tree(layers, list(layers[name]), _rows_merge, split, token, "unique-rows-merge"), (0,))
    graph = LayeredGraph.merge(moved._graph, new=layers)

    def result(what: str, task: Task, chunks: tuple, dtype: Any) -> Array:
        oname = f"{what}-{token}"
        return Array(LayeredGraph.merge(graph, new={oname: {chunk_key(oname, (0,) * len(chunks)): task}}), oname,
                     chunks, dtype)

    values = result("unique", Task(_rows_values, (Ref(root), moved.shape[1:], axis), {}, per_task(ann)),
                    tuple(((math.nan,) if d == axis else (n,)) for d, n in enumerate(x.shape)), x.dtype)
    out = [values]
    if return_index:
        out.append(result("unique-index", Task(_pick, (Ref(root), 1), {}, per_task(ann)), ((math.nan,),), np.intp))
    if return_inverse:
        iname = f"unique-inverse-{token}"
        layer = {chunk_key(iname, (i,)): Task(_rows_inverse, (Ref(chunk_key(name, (i,))), Ref(root), i), {},
                                             per_task(ann)) for i in range(moved.numblocks[0])}
        out.append(Array(LayeredGraph.merge(graph, new={iname: layer}), iname, (moved.chunks[0],), np.intp))
    if return_counts:
        out.append(result("unique-counts", Task(_pick, (Ref(root), 2), {}, per_task(ann)), ((math.nan,),), np.intp))
    return tuple(out) if len(out) > 1 else values


UniqueAllResult = namedtuple("UniqueAllResult", ["values", "indices", "inverse_indices", "counts"])
UniqueCountsResult = namedtuple("UniqueCountsResult", ["values", "counts"])
UniqueInverseResult = namedtuple("UniqueInverseResult", ["values", "inverse_indices"])


def unique_values(x: Any) -> Array:
    """The distinct values of ``x`` (the Array API's; every NaN apart, as NumPy's).

    >>> import numpy as np, xsched.array as xa
    >>> xa.unique_values(xa.from_array(np.array([2.0, np.nan, 2.0, np.nan]), chunks=2)).compute().tolist()
    [2.0, nan, nan]
    """
    return unique(x, equal_nan=False)


def unique_counts(x: Any) -> UniqueCountsResult:
    """The distinct values of ``x`` and how many times each occurs (the Array API's).

    >>> import numpy as np, xsched.array as xa
    >>> r = xa.unique_counts(xa.from_array(np.array([3, 1, 3]), chunks=2))
    >>> r.values.compute().tolist(), r.counts.compute().tolist()
    ([1, 3], [1, 2])
    """
    return UniqueCountsResult(*unique(x, return_counts=True, equal_nan=False))


def _inverse(values: Array, x: Array, nans_refused: str | None = None) -> Array:
    """Where each element of ``x`` is among the sorted ``values``: ``x``'s shape and blocks
    (a NaN of ``x`` points at the first NaN of ``values``); with ``nans_refused`` (what is
    asked, of an array of unknown block lengths) a block holding a NaN fails instead,
    since each NaN's own place needs its position among them all."""
    from .sorting import searchsorted  # (sorting imports manipulation, which imports this module's peers)

    if nans_refused is None:
        return searchsorted(values, x)
    return elemwise(_without_nans, searchsorted(values, x), x, nans_refused, dtype=np.intp, name="unique-inverse")


def _without_nans(places: np.ndarray, block: np.ndarray, what: str) -> np.ndarray:
    if (block != block).any():
        raise ValueError(f"{what}: each NaN's place among the values is its own, which needs the NaNs' positions "
                         "in the whole array, and its block lengths are unknown; call x = x.compute_chunk_sizes() "
                         "first")
    return places


def unique_inverse(x: Any) -> UniqueInverseResult:
    """The distinct values of ``x`` and, for each element of ``x`` (its shape), the position
    of its value among them (the Array API's; each NaN a value of its own, as NumPy's).

    >>> import numpy as np, xsched.array as xa
    >>> r = xa.unique_inverse(xa.from_array(np.array([[3, 1], [1, 2]]), chunks=1))
    >>> r.values.compute().tolist(), r.inverse_indices.compute().tolist()
    ([1, 2, 3], [[2, 0], [0, 1]])
    """
    x = x if isinstance(x, Array) else asarray(x)
    return UniqueInverseResult(*unique(x, return_inverse=True, equal_nan=False))


def _flat_positions(block: np.ndarray, shape: tuple, starts: tuple) -> np.ndarray:
    """The flat position (C order in the whole array of ``shape``) of each element of this
    block (which starts at ``starts``), in the block's own C order."""
    coords = tuple(i + s for i, s in zip(np.indices(block.shape), starts))
    return np.ravel_multi_index(coords, shape).ravel() if block.ndim else np.zeros(1, np.intp)


def _no_complex_nans(block: np.ndarray) -> None:
    """NumPy sorts complex NaNs by their parts (``1+nanj`` before ``nan+0j``), not as the one
    kind of value the NaN places below assume: refused, saying what to do."""
    if block.dtype.kind == "c" and np.isnan(block).any():
        raise ValueError("unique of complex values holding NaNs, with return_index or return_inverse, is not "
                         "offered (NumPy orders complex NaNs by their parts); drop them first (x[~xa.isnan(x)]) "
                         "or compute: np.unique(x.compute(), ...)")


def _first_positions(block: np.ndarray, values: np.ndarray, shape: tuple, starts: tuple) -> np.ndarray:
    """Per distinct value, the smallest flat position (C order in the whole array) it has in
    this block (which starts at ``starts``); the array's size where it has none."""
    _no_complex_nans(block)
    flat = _flat_positions(block, shape, starts)
    out = np.full(len(values), math.prod(shape), dtype=np.intp)
    np.minimum.at(out, np.searchsorted(values, block.ravel()), flat)
    nan = values != values
    if nan.any():  # (the block's NaN positions, in order, fill the NaN slots: one per NaN, or one for all)
        slots = np.flatnonzero(nan)
        positions = np.sort(flat[block.ravel() != block.ravel()])[:len(slots)]
        out[nan] = math.prod(shape)
        out[slots[:len(positions)]] = positions
    return out


def _places_nans_apart(block: np.ndarray, values: np.ndarray, firsts: np.ndarray, shape: tuple, starts: tuple
                       ) -> np.ndarray:
    """Each element's place among ``values`` where every NaN is a value of its own: the k-th
    NaN of the whole array (C order) at the k-th NaN slot, whose positions ``firsts`` holds
    in that order."""
    _no_complex_nans(block)
    out = np.asarray(np.searchsorted(values, block), dtype=np.intp)  # (an array even of a 0-d block)
    nan = block != block
    if nan.any():
        slots = np.flatnonzero(values != values)
        out[nan] = slots[0] + np.searchsorted(firsts[slots], _flat_positions(block, shape, starts).reshape(
            block.shape)[nan])
    return out


def _inverse_nans_apart(values: Array, x: Array, firsts: Array) -> Array:
    """``_inverse`` with ``equal_nan=False``, as NumPy's: each NaN of ``x`` points at a NaN
    of ``values`` of its own, in the order they come (``firsts``: ``_first_indices``)."""
    token = new_token(values.name, firsts.name, x.name)
    ann = annotations_in_force()
    grid = [_starts(c) for c in x.chunks]
    name = f"unique-inverse-{token}"
    layer = {chunk_key(name, index): Task(_places_nans_apart, (
        Ref(chunk_key(x.name, index)), Ref(chunk_key(values.name, (0,))), Ref(chunk_key(firsts.name, (0,))),
        x.shape, tuple(s[j] for s, j in zip(grid, index))), {}, per_task(ann)) for index in np.ndindex(*x.numblocks)}
    return Array(LayeredGraph.merge(x._graph, values._graph, firsts._graph, new={name: layer}), name, x.chunks,
                 np.intp)


def _minimum(parts: list, values: np.ndarray) -> np.ndarray:
    """The smallest position per value; the NaN slots take the smallest of all the parts'
    NaN positions, in order (the array has as many NaNs as there are NaN slots)."""
    out = np.minimum.reduce(parts)
    nan = values != values
    if nan.any():
        out[nan] = np.sort(np.concatenate([p[nan] for p in parts]))[:int(nan.sum())]
    return out


def unique_all(x: Any, split_every: int | None = None) -> UniqueAllResult:
    """The distinct values of ``x``, the flat position of each one's first occurrence, the
    position of each element's value among them (``x``'s shape) and the counts (the Array
    API's; each NaN a value of its own, as NumPy's).

    >>> import numpy as np, xsched.array as xa
    >>> r = xa.unique_all(xa.from_array(np.array([[3, 1], [1, 2]]), chunks=1))
    >>> [a.compute().tolist() for a in r]
    [[1, 2, 3], [1, 3, 0], [[2, 0], [0, 1]], [2, 1, 1]]
    """
    x = x if isinstance(x, Array) else asarray(x)
    split = _split(split_every, x, "unique_all")
    return UniqueAllResult(*unique(x, True, True, True, split_every=split, equal_nan=False))


def isin(element: Any, test_elements: Any, invert: bool = False, assume_unique: bool = False, *,
         kind: str | None = None) -> Any:
    """Whether each element of ``element`` is in ``test_elements`` (values every task holds:
    a list, a NumPy array, or a small xsched array, which is computed first), as NumPy's
    ``isin`` (``assume_unique`` and ``kind`` only choose NumPy's algorithm: the answer is the
    same; they are taken and NumPy's own is used per block).

    >>> import numpy as np, xsched.array as xa
    >>> xa.isin(xa.from_array(np.arange(6), chunks=4), [1, 4, 9]).compute().tolist()
    [False, True, False, False, True, False]
    """
    element = element if isinstance(element, Array) else asarray(element)
    if isinstance(test_elements, Array):
        test_elements = test_elements.compute()
    values = np.unique(np.asarray(test_elements).ravel())
    return elemwise(np.isin, element, dtype=bool, name="isin", extra_args=(values,), invert=bool(invert))


def union1d(ar1: Any, ar2: Any) -> Array:
    """The sorted distinct values found in either array (both flattened), as
    ``numpy.union1d``: one block of unknown length, as ``unique``.

    >>> import numpy as np, xsched.array as xa
    >>> xa.union1d(xa.from_array(np.array([3, 1, 3]), chunks=2), [[2, 1]]).compute().tolist()
    [1, 2, 3]
    """
    return unique(concatenate([ravel(asarray(ar1)), ravel(asarray(ar2))]))


def _of_uniques(func: Any, first: np.ndarray, second: np.ndarray) -> np.ndarray:
    return func(first, second, assume_unique=True)


def _compared(what: str, func: Any, ar1: Any, ar2: Any) -> Array:
    """``func`` of both arrays' distinct values (one task): one block of unknown length."""
    a, b = unique(ravel(asarray(ar1))), unique(ravel(asarray(ar2)))
    name = f"{what}-{new_token(a.name, b.name)}"
    layer = {chunk_key(name, (0,)): Task(_of_uniques, (func, Ref(chunk_key(a.name, (0,))),
                                                       Ref(chunk_key(b.name, (0,)))), {},
                                         per_task(annotations_in_force()))}
    dtype = func(np.empty(0, a.dtype), np.empty(0, b.dtype)).dtype  # (setdiff1d keeps the first's)
    return Array(LayeredGraph.merge(a._graph, b._graph, new={name: layer}), name, ((math.nan,),), dtype)


def _common_with_indices(v1: np.ndarray, i1: np.ndarray, v2: np.ndarray, i2: np.ndarray, which: int) -> np.ndarray:
    common, at1, at2 = np.intersect1d(v1, v2, assume_unique=True, return_indices=True)
    return (common, i1[at1], i2[at2])[which]


def intersect1d(ar1: Any, ar2: Any, assume_unique: bool = False, return_indices: bool = False) -> Any:
    """The sorted values found in both arrays (flattened), as ``numpy.intersect1d``: one block
    of unknown length; with ``return_indices`` also where each first occurs in either array
    (flattened). ``assume_unique`` is accepted and changes nothing (the values are made
    distinct in trees either way).

    >>> import numpy as np, xsched.array as xa
    >>> a = xa.from_array(np.array([5, 1, 3, 1, 7]), chunks=2)
    >>> xa.intersect1d(a, [7, 1, 2]).compute().tolist()
    [1, 7]
    >>> [r.compute().tolist() for r in xa.intersect1d(a, [7, 1, 2], return_indices=True)]
    [[1, 7], [1, 4], [1, 0]]
    """
    if not return_indices:
        return _compared("intersect1d", np.intersect1d, ar1, ar2)
    flat = [ravel(asarray(ar)) for ar in (ar1, ar2)]
    for ar in flat:
        known_chunks_needed(ar, "intersect1d(return_indices=True)")
    one, two = unique_all(flat[0]), unique_all(flat[1])
    refs = [Ref(chunk_key(arr.name, (0,))) for arr in (one.values, one.indices, two.values, two.indices)]
    graph = LayeredGraph.merge(one.values._graph, one.indices._graph, two.values._graph, two.indices._graph)
    token = new_token(*(arr.name for arr in (one.values, one.indices, two.values, two.indices)))
    out = []
    for which, dtype in enumerate((np.result_type(one.values.dtype, two.values.dtype), np.intp, np.intp)):
        name = f"intersect1d-{('values', 'indices1', 'indices2')[which]}-{token}"
        layer = {chunk_key(name, (0,)): Task(_common_with_indices, (*refs, which), {},
                                             per_task(annotations_in_force()))}
        out.append(Array(LayeredGraph.merge(graph, new={name: layer}), name, ((math.nan,),), dtype))
    return tuple(out)


def setdiff1d(ar1: Any, ar2: Any, assume_unique: bool = False) -> Array:
    """The sorted distinct values of ``ar1`` not in ``ar2`` (both flattened), as
    ``numpy.setdiff1d``: one block of unknown length.

    >>> import numpy as np, xsched.array as xa
    >>> xa.setdiff1d(xa.from_array(np.array([5, 1, 3, 1]), chunks=2), [3]).compute().tolist()
    [1, 5]
    """
    return _compared("setdiff1d", np.setdiff1d, ar1, ar2)


def setxor1d(ar1: Any, ar2: Any, assume_unique: bool = False) -> Array:
    """The sorted values in exactly one of the arrays (both flattened), as
    ``numpy.setxor1d``: one block of unknown length.

    >>> import numpy as np, xsched.array as xa
    >>> xa.setxor1d(xa.from_array(np.array([5, 1, 3]), chunks=2), [3, 4]).compute().tolist()
    [1, 4, 5]
    """
    return _compared("setxor1d", np.setxor1d, ar1, ar2)
