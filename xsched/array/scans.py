"""Running totals (``cumsum``, ``cumprod``), positions of extremes (``argmax``, ``argmin``)
and the reductions ``reductions.py`` leaves out: ``prod``, ``any``, ``all`` and the
NaN-skipping ``nansum``, ``nanprod``, ``nanmean``, ``nanmax``, ``nanmin``, ``nanvar`` and
``nanstd``.

A running total along an axis needs what came before each block. Each block is
accumulated on its own (``cumsum-block``) and reduced to its last slice (``cumsum-total``);
a chain of small tasks combines those slices (``cumsum-carry``: everything before block
``i``), and block ``i`` of the result is its own accumulation combined with its carry. Only
one slice per block travels along the chain::

    x i -> cumsum-block i ---------------------------------\\
    x i -> cumsum-block i -> cumsum-total i -> cumsum-carry i+1 -> cumsum i+1 ...

``argmax``/``argmin`` are tree reductions (``reductions.tree_reduction``) of (value, index)
pairs: each block gives its extreme, where it lies in the block and the block's extent;
merging places each block after the extents of those before it (so unknown chunk sizes,
after a boolean mask, need no computing first) and keeps the extreme with the smallest
index (a NaN counting as the extreme), so ties and NaNs give numpy's answers. The others are
tree reductions with numpy's functions at each level.

``scan`` builds the same chain from your own functions (xarray's forward fill runs through
it); ``push`` is the forward fill itself, NaNs replaced by the last value before them along
an axis, with a limit ``n`` counted across blocks (a second chain carries the position of
the last value).

Importing this module adds ``cumsum``, ``cumprod``, ``argmax``, ``argmin``, ``prod``,
``any`` and ``all`` to ``Array``.

>>> import numpy as np, xsched.array as xa
>>> x = xa.from_array(np.array([[3, 1, 4], [1, 5, 9]]), chunks=1)
>>> x.cumsum(axis=1).compute().tolist()
[[3, 4, 8], [1, 6, 15]]
>>> int(x.argmax()), x.argmin(axis=0).compute().tolist()
(5, [1, 0, 0])
"""

from __future__ import annotations

import functools
import numbers
import operator
import warnings
from typing import Any, Callable

import numpy as np

from ..graph.layers import LayeredGraph, annotations_in_force, chunk_key, new_token, per_task
from ..graph.spec import Ref, Task, funcname
from . import joins
from .axes import axis_index, reduced_axes
from .chunks import _starts
from .core import Array, elemwise
from .creation import asarray, full
from .manipulation import ravel
from .where_reductions import reduce_where
from .reductions import (_abs2, _accumulator, _check_out, _finish, _no_identity,
                         _number_of_degrees, _ufunc_dtype, mean, tree_reduction)

__all__ = ["scan", "push", "cumsum", "cumprod", "nancumsum", "nancumprod", "cumulative_sum", "cumulative_prod",
           "argmax", "argmin", "nanargmax", "nanargmin", "prod", "any", "all", "nansum", "nanprod", "nanmean",
           "nanmax", "nanmin", "nanvar", "nanstd"]


# --------------------------------------------------------------------------- cumulative


def _accumulate(block: np.ndarray, func: Callable, axis: int, dtype: np.dtype) -> np.ndarray:
    return func(block, axis=axis, dtype=dtype)


def _last(block: np.ndarray, axis: int, identity: Any) -> np.ndarray:
    """The last slice along ``axis`` (kept as length 1); ``identity`` for an empty block."""
    if block.shape[axis] == 0:
        shape = block.shape[:axis] + (1,) + block.shape[axis + 1:]
        return np.full(shape, identity, dtype=block.dtype)
    # (a masked block's running values go on under its mask, its masked cells counted as
    # numpy.ma counts them: the carry is that data, never masked)
    return np.ma.getdata(np.take(block, [-1], axis=axis))


def _with_carry(block: np.ndarray, carry: np.ndarray, combine: Callable) -> np.ndarray:
    return np.asanyarray(combine(carry, block)).astype(block.dtype, copy=False)


def _reduced(block: np.ndarray, preop: Callable, axis: int) -> np.ndarray:
    """``preop`` of a raw block along ``axis``, kept as length 1: the block's total."""
    return preop(block, axis=axis, keepdims=True)


def _scan_axis(x: Array, op: str, axis: Any) -> tuple[Array, int]:
    """The array to scan and the axis: the flattened array and 0 when ``axis`` is None."""
    if axis is None:
        x, axis = ravel(x), 0
    return x, axis_index(axis, x.ndim, op)


def _cumulative(x: Any, op: str, func: Callable, combine: Callable, identity: Any,
                axis: Any, dtype: Any, preop: Callable | None = None) -> Array:
    """The running ``func`` along ``axis`` (see the module docstring): ``combine(carry,
    block)`` joins what came before a block (``carry``, length 1 along the axis) to the
    block's own running values; a block's total is the last of those, or ``preop`` of the
    raw block. ``dtype`` None: ``func``'s dtype on this array's."""
    x, axis = _scan_axis(asarray(x), op, axis)
    if dtype is None:
        dtype = func(np.zeros((1,) * x.ndim, x.dtype), axis=axis).dtype
    dtype = np.dtype(dtype)
    token = new_token(op, x.name, axis, str(dtype), func, combine, preop)
    names = {k: f"{op}-{k}-{token}" for k in ("block", "total", "carry")}
    out_name = f"{op}-{token}"
    ann = annotations_in_force()
    layers: dict[str, dict] = {name: {} for name in (*names.values(), out_name)}
    n = x.numblocks[axis]

    def at(index: tuple, i: int) -> tuple:
        return index[:axis] + (i,) + index[axis + 1:]

    def carry(index: tuple) -> Ref:  # everything before the block at ``index`` (i >= 1)
        i = index[axis]
        name = names["total"] if i == 1 else names["carry"]
        return Ref(chunk_key(name, at(index, 0) if i == 1 else index))

    for index in np.ndindex(*x.numblocks):
        i = index[axis]
        own = Task(_accumulate, (Ref(chunk_key(x.name, index)), func, axis, dtype), {},
                   per_task(ann))
        if i == 0:  # the first block along the axis needs no carry
            layers[out_name][chunk_key(out_name, index)] = own
            own_ref = Ref(chunk_key(out_name, index))
        else:
            layers[names["block"]][chunk_key(names["block"], index)] = own
            own_ref = Ref(chunk_key(names["block"], index))
            layers[out_name][chunk_key(out_name, index)] = Task(
                _with_carry, (own_ref, carry(index), combine), {}, per_task(ann))
        if i == n - 1:
            continue
        total = chunk_key(names["total"], index)
        layers[names["total"]][total] = Task(_last, (own_ref, axis, identity), {},
                                             per_task(ann)) if preop is None else Task(
            _reduced, (Ref(chunk_key(x.name, index)), preop, axis), {}, per_task(ann))
        if i >= 1:
            layers[names["carry"]][chunk_key(names["carry"], at(index, i + 1))] = Task(
                combine, (carry(index), Ref(total)), {}, per_task(ann))
    layers = {k: v for k, v in layers.items() if v}
    return Array(LayeredGraph.merge(x._graph, new=layers), out_name, x.chunks, dtype)


def _acc_dtype(func: Callable, x: Any, dtype: Any) -> np.dtype:
    """The dtype NumPy's running ``func`` gives for ``x``'s dtype and ``dtype=``."""
    return func(np.zeros(1, asarray(x).dtype), dtype=dtype).dtype


def scan(func: Callable, binop: Callable, ident: Any, x: Any, axis: Any = None,
         dtype: Any = None, *, preop: Callable | None = None, method: str = "sequential",
         name: str | None = None) -> Array:
    """A running reduction along ``axis`` (over the flattened array without one) made of
    your own functions: ``cumsum`` is ``scan(np.cumsum, np.add, 0, x, axis)``.

    * ``func(block, axis=axis, dtype=dtype)`` scans one block on its own (``dtype`` is the
      ``dtype`` given, possibly None).
    * ``binop(carry, values)`` joins what came before a block (``carry``: one slice, length
      1 along the axis) to that block's own running values, and two carries into one.
    * ``ident``: the identity of ``binop`` (the total of an empty block).
    * ``preop(block, axis=axis, keepdims=True)``, when given, reduces a raw block to its
      total (e.g. ``np.sum`` for a running sum); otherwise the total is the last slice of
      ``func``'s result.

    ``dtype``: the result's dtype (default: what ``func`` gives for a block of this
    array's dtype). ``method``: ``"sequential"`` or ``"blelloch"`` (other libraries'
    names for ways to combine the carries); both give the same values, and xsched.array
    always passes one carry slice along a chain of small tasks (see the module docstring).

    Forward-filling NaNs, whose carry is the last valid value:

    >>> import numpy as np, xsched.array as xa
    >>> def ffill(block, axis, dtype=None):
    ...     out = block.copy()
    ...     for i in range(1, out.shape[axis]):
    ...         prev, cur = np.take(out, [i - 1], axis), np.take(out, [i], axis)
    ...         idx = [slice(None)] * out.ndim
    ...         idx[axis] = slice(i, i + 1)
    ...         out[tuple(idx)] = np.where(np.isnan(cur), prev, cur)
    ...     return out
    >>> def keep_valid(carry, values):
    ...     return np.where(np.isnan(values), carry, values)
    >>> x = xa.from_array(np.array([1.0, np.nan, np.nan, 4.0, np.nan, np.nan]), chunks=2)
    >>> xa.scan(ffill, keep_valid, np.nan, x, axis=0).compute().tolist()
    [1.0, 1.0, 1.0, 4.0, 4.0, 4.0]
    """
    if method not in ("sequential", "blelloch"):
        raise ValueError(f"scan: method must be 'sequential' or 'blelloch', got {method!r}")
    for what, f in (("func", func), ("binop", binop)):
        if not callable(f):
            raise TypeError(f"scan: {what} must be a function, got {f!r}")
    x, axis = _scan_axis(asarray(x), "scan", axis)
    if dtype is None:
        dtype = func(np.zeros((1,) * x.ndim, x.dtype), axis=axis, dtype=None).dtype
    return _cumulative(x, name or funcname(func), func, binop, ident, axis, dtype, preop)


def _missing(block: np.ndarray) -> np.ndarray:
    """Where ``block`` holds no value: NaN, NaT, or (objects) None and NaN."""
    if block.dtype.kind in "mM":
        return np.isnat(block)
    if block.dtype.kind == "O":
        return np.frompyfunc(lambda v: v is None or v != v, 1, 1)(block).astype(bool)
    return np.isnan(block)


def _ffill(block: np.ndarray, axis: int, dtype: Any = None) -> np.ndarray:
    """Missing values replaced by the last value before them along ``axis``, within the block."""
    shape = [1] * block.ndim
    shape[axis] = block.shape[axis]
    where = np.where(_missing(block), 0, np.arange(block.shape[axis]).reshape(shape))
    np.maximum.accumulate(where, axis=axis, out=where)  # (leading gaps take position 0: they stay missing)
    return np.take_along_axis(block, where, axis=axis)


def _keep_valid(carry: np.ndarray, values: np.ndarray) -> np.ndarray:
    return np.where(_missing(values), carry, values)


def _ones(block: np.ndarray) -> np.ndarray:
    return np.ones(block.shape, np.float64)


def _valid_at(x: np.ndarray, positions: np.ndarray) -> np.ndarray:
    return np.where(_missing(x), np.nan, positions)


def _within(filled: np.ndarray, positions: np.ndarray, last: np.ndarray, n: int, empty: Any) -> np.ndarray:
    return np.where(positions - last <= n, filled, empty)


def push(array: Any, n: int | None = None, axis: int = -1) -> Array:
    """Forward fill: each missing value (NaN; NaT for times; None or NaN among objects)
    replaced by the last value before it along ``axis``, across blocks; with ``n`` at most
    ``n`` missing values in a row are filled (the rest stay missing), as bottleneck's
    ``push``. Arrays that cannot hold a missing value (integers, booleans, text) come back as
    they are.

    >>> import numpy as np, xsched.array as xa
    >>> x = xa.from_array(np.array([1.0, np.nan, np.nan, np.nan, 5.0, np.nan]), chunks=2)
    >>> xa.push(x).compute().tolist(), xa.push(x, n=2).compute().tolist()
    ([1.0, 1.0, 1.0, 1.0, 5.0, 5.0], [1.0, 1.0, 1.0, nan, 5.0, 5.0])
    """
    x = asarray(array)
    if n is not None and (not isinstance(n, numbers.Integral) or isinstance(n, bool) or n < 1):
        raise ValueError(f"push: n must be a positive number of values to fill, or None, got {n!r}")
    x, axis = _scan_axis(x, "push", axis)
    if x.dtype.kind not in "fcmMO":
        return x
    empty = np.array(np.nan).astype(x.dtype) if x.dtype.kind in "fcO" else np.array("NaT", x.dtype)
    filled = _cumulative(x, "push", _ffill, _keep_valid, empty, axis, x.dtype)
    if n is None:
        return filled
    # a running count of the cells along the axis (any chunks, known lengths or not), and the
    # count at the last value: more than n apart, the fill is undone
    positions = _cumulative(elemwise(_ones, x, dtype=np.float64, name="push-ones"), "push-count", np.cumsum,
                            np.add, 0, axis, np.float64)
    last = _cumulative(elemwise(_valid_at, x, positions, dtype=np.float64, name="push-positions"),
                       "push-last", _ffill, _keep_valid, np.nan, axis, np.float64)
    return elemwise(_within, filled, positions, last, dtype=x.dtype, name="push-limit",
                    extra_args=(int(n), empty))


def cumsum(x: Any, axis: Any = None, dtype: Any = None, out: Any = None, method: str = "sequential") -> Array:
    """Running sums along ``axis`` (over the flattened array without one); ``method``, dask's
    choice of scan (``"sequential"`` or ``"blelloch"``), is taken: the totals of the blocks
    before each are carried in one chain of small tasks either way.

    >>> import numpy as np, xsched.array as xa
    >>> xa.cumsum(xa.from_array(np.arange(1, 6), chunks=2)).compute().tolist()
    [1, 3, 6, 10, 15]
    """
    _check_out(out, "cumsum")
    _scan_method(method, "cumsum")
    return _cumulative(x, "cumsum", np.cumsum, np.add, 0, axis, _acc_dtype(np.cumsum, x, dtype))


def _scan_method(method: Any, what: str) -> None:
    if method not in ("sequential", "blelloch"):
        raise ValueError(f"{what}: method must be 'sequential' or 'blelloch' (dask's names), not {method!r}")


def _cumulative_named(x: Any, name: str, run: Any, first: Any, axis: Any, dtype: Any,
                      include_initial: bool) -> Array:
    """The Array API's ``cumulative_sum``/``cumulative_prod``: ``axis`` needed past one
    dimension; ``include_initial`` puts the empty sum (product) first along it."""
    x = asarray(x)
    if x.ndim == 0:
        raise ValueError(f"{name}: the array needs at least one dimension")
    if axis is None:
        if x.ndim > 1:
            raise ValueError(f"{name}: axis is required for an array of {x.ndim} dimensions (shape {x.shape})")
        axis = 0
    axis = axis_index(axis, x.ndim, name)
    out = run(x, axis=axis, dtype=dtype)
    if not include_initial:
        return out
    from .manipulation import concatenate

    shape = out.shape[:axis] + (1,) + out.shape[axis + 1:]
    return concatenate([full(shape, first, dtype=out.dtype, chunks=out.chunks[:axis] + ((1,),) +
                             out.chunks[axis + 1:]), out], axis=axis)


def cumulative_sum(x: Any, /, *, axis: Any = None, dtype: Any = None, include_initial: bool = False) -> Array:
    """Running sums along ``axis`` (the Array API's; NumPy 2's ``cumulative_sum``), with the
    empty sum 0 first when ``include_initial``.

    >>> import numpy as np, xsched.array as xa
    >>> xa.cumulative_sum(xa.from_array(np.arange(1, 5), chunks=2), include_initial=True).compute().tolist()
    [0, 1, 3, 6, 10]
    """
    return _cumulative_named(x, "cumulative_sum", cumsum, 0, axis, dtype, include_initial)


def cumulative_prod(x: Any, /, *, axis: Any = None, dtype: Any = None, include_initial: bool = False) -> Array:
    """Running products along ``axis`` (NumPy 2's ``cumulative_prod``), with the empty
    product 1 first when ``include_initial``.

    >>> import numpy as np, xsched.array as xa
    >>> xa.cumulative_prod(xa.from_array(np.arange(1, 5), chunks=2)).compute().tolist()
    [1, 2, 6, 24]
    """
    return _cumulative_named(x, "cumulative_prod", cumprod, 1, axis, dtype, include_initial)


def cumprod(x: Any, axis: Any = None, dtype: Any = None, out: Any = None, method: str = "sequential") -> Array:
    """Running products along ``axis`` (over the flattened array without one).

    >>> import numpy as np, xsched.array as xa
    >>> xa.cumprod(xa.from_array(np.arange(1, 6), chunks=2)).compute().tolist()
    [1, 2, 6, 24, 120]
    """
    _check_out(out, "cumprod")
    _scan_method(method, "cumprod")
    return _cumulative(x, "cumprod", np.cumprod, np.multiply, 1, axis,
                       _acc_dtype(np.cumprod, x, dtype))


def nancumsum(x: Any, axis: Any = None, dtype: Any = None, method: str = "sequential") -> Array:
    """Running sums with NaNs counted as zero.

    >>> import numpy as np, xsched.array as xa
    >>> xa.nancumsum(xa.from_array(np.array([1.0, np.nan, 2.0]), chunks=1)).compute().tolist()
    [1.0, 1.0, 3.0]
    """
    _scan_method(method, "nancumsum")
    return _cumulative(x, "nancumsum", np.nancumsum, np.add, 0, axis,
                       _acc_dtype(np.nancumsum, x, dtype))


def nancumprod(x: Any, axis: Any = None, dtype: Any = None, method: str = "sequential") -> Array:
    """Running products with NaNs counted as one.

    >>> import numpy as np, xsched.array as xa
    >>> xa.nancumprod(xa.from_array(np.array([2.0, np.nan, 3.0]), chunks=1)).compute().tolist()
    [2.0, 2.0, 6.0]
    """
    _scan_method(method, "nancumprod")
    return _cumulative(x, "nancumprod", np.nancumprod, np.multiply, 1, axis,
                       _acc_dtype(np.nancumprod, x, dtype))


# --------------------------------------------------------------------------- argmax, argmin


def _arg_chunk(block: np.ndarray, axes: tuple, pick: Callable, flat: bool) -> tuple:
    """(values, positions in the block, the block's extent) of a block's extremes, reduced
    axes kept: positions are a tuple of ints when ``flat``, else indices along the axis.
    The extent (the block's shape, or its length along the axis) lets the merges place the
    block even when the array's chunks are unknown; a block empty along ``axes`` has no
    values. A masked block is filled as numpy.ma's ``argmax`` (``argmin``) fills it: its
    masked cells lose to every value."""
    if isinstance(block, np.ma.MaskedArray):
        block = block.filled(np.ma.maximum_fill_value(block) if pick in (np.argmax, _nanargmax)
                             else np.ma.minimum_fill_value(block))
    if flat:
        extent: Any = tuple(block.shape)
        if block.size == 0:
            return None, None, extent
        where = np.unravel_index(int(pick(block)), block.shape)
        one = (1,) * block.ndim
        values = np.full(one, block[where], dtype=block.dtype)
        if _skips_nan(pick):
            values = _nan_values(block, values, None, pick)
        return values, tuple(int(w) for w in where), extent
    (axis,) = axes
    if block.shape[axis] == 0:
        return None, None, block.shape[axis]
    local = pick(block, axis=axis, keepdims=True)
    values = np.take_along_axis(block, local, axis=axis)
    return (_nan_values(block, values, axis, pick) if _skips_nan(pick) else values), local, block.shape[axis]


def _filled(block: np.ndarray, largest: bool) -> np.ndarray:
    """The block as NumPy's ``nanargmax`` (``nanargmin``) sees it: NaNs as -inf (+inf)."""
    return np.where(np.isnan(block), -np.inf if largest else np.inf, block)


def _nanargmax(block: np.ndarray, axis: Any = None, keepdims: bool = False) -> Any:
    return np.argmax(_filled(block, True), axis=axis, keepdims=keepdims)


def _nanargmin(block: np.ndarray, axis: Any = None, keepdims: bool = False) -> Any:
    return np.argmin(_filled(block, False), axis=axis, keepdims=keepdims)


def _skips_nan(pick: Callable) -> bool:
    return pick is _nanargmax or pick is _nanargmin


def _nan_values(block: np.ndarray, values: np.ndarray, axis: Any, pick: Callable) -> np.ndarray:
    """A block's extremes for ``nanargmax``/``nanargmin``: NaN picked counts as -inf (+inf),
    as in NumPy; NaN stands only for a slice of NaNs (compared as -inf by the merges, and
    an error at the end if no block had a value)."""
    empty = np.isnan(block).all(axis=axis, keepdims=True).reshape(values.shape)
    return np.where(empty, np.nan, _filled(values, pick is _nanargmax))


def _arg_merge(pairs: list, pick: Callable) -> tuple:
    """The extreme of several (values, indices) pairs: a NaN beats any number (numpy returns
    the first NaN; for ``nanargmax``/``nanargmin`` a NaN is -inf, +inf for the min), and of
    equal values (or NaNs) the smaller index wins, wherever its block was."""
    values, indices = pairs[0]
    skip = _skips_nan(pick)
    for v, i in pairs[1:]:
        if values.dtype.kind in "fc":
            nan_old, nan_new = np.isnan(values), np.isnan(v)
        elif values.dtype.kind in "mM":  # (NaT wins as NaN does)
            nan_old, nan_new = np.isnat(values), np.isnat(v)
        else:
            nan_old = nan_new = np.zeros(values.shape, dtype=bool)
        if skip:  # NaNs count as -inf (+inf), as in NumPy; NaN stays only where both are NaNs
            both = nan_old & nan_new
            v, values = _filled(v, pick is _nanargmax), _filled(values, pick is _nanargmax)
            nan_old = nan_new = np.zeros(values.shape, dtype=bool)
        with np.errstate(invalid="ignore"):
            beats = (v > values) if pick is np.argmax or pick is _nanargmax else (v < values)
            ties = (v == values) | (nan_old & nan_new)
        take = ~nan_old & (beats | nan_new) | ties & (i < indices)
        values, indices = np.where(take, v, values), np.where(take, i, indices)
        if skip:
            values = np.where(both, np.nan, values)
    return values, indices


def _arg_combine(parts: list, pick: Callable, flat: bool) -> tuple:
    """Merge the partials of neighbouring blocks (nested lists, one level per reduced axis,
    in grid order): each block's positions are moved by the extents of the blocks before it
    along each axis, so the merge needs no chunk sizes known when the graph was built."""
    if not flat:
        pairs, offset = [], 0
        for values, local, extent in parts:
            if values is not None:
                pairs.append((values, local + offset))
            offset += extent
        return (*_arg_merge(pairs, pick), offset) if pairs else (None, None, offset)
    grid = np.empty(_nested_shape(parts), dtype=object)
    for position in np.ndindex(*grid.shape):
        item = parts
        for i in position:
            item = item[i]
        grid[position] = item
    # where each block starts along each axis (a row of blocks shares its extent)
    starts = [_starts(tuple(grid[(0,) * a + (g,) + (0,) * (grid.ndim - a - 1)][2][a]
                            for g in range(grid.shape[a]))) for a in range(grid.ndim)]
    region = tuple(s[-1] for s in starts)
    pairs = []
    for position in np.ndindex(*grid.shape):
        values, local, _ = grid[position]
        if values is not None:  # (a flat index in the region orders positions as numpy)
            at = np.ravel_multi_index(tuple(w + s[g] for w, s, g in zip(local, starts, position)),
                                      region)
            pairs.append((values, np.full(values.shape, at, dtype=np.intp)))
    if not pairs:
        return None, None, region
    values, at = _arg_merge(pairs, pick)
    return values, tuple(int(w) for w in np.unravel_index(int(at.flat[0]), region)), region


def _nested_shape(parts: Any) -> tuple:
    """The grid shape of nested lists of partials (each partial a tuple)."""
    shape = []
    while isinstance(parts, list):
        shape.append(len(parts))
        parts = parts[0]
    return tuple(shape)


def _arg_aggregate(parts: list, axes: tuple, keepdims: bool, pick: Callable, flat: bool,
                   op: str) -> np.ndarray:
    values, where, extent = _arg_combine(parts, pick, flat)
    if values is None:  # (only when the chunks were unknown: empty is caught when built)
        raise ValueError(f"attempt to get {op} of an empty sequence")
    if _skips_nan(pick) and np.isnan(values).any():
        raise ValueError(f"{op}: All-NaN slice encountered")
    if flat:
        where = np.full(values.shape, np.ravel_multi_index(where, extent), dtype=np.intp)
    return where if keepdims else np.squeeze(where, axis=axes)


def _arg(x: Any, op: str, pick: Callable, axis: Any, keepdims: bool,
         split_every: Any) -> Array:
    x = asarray(x)
    flat = axis is None
    if not flat:
        axis = operator.index(axis)  # (numpy's TypeError for a tuple of axes)
    axes = reduced_axes(axis, x.ndim, op)
    if (x.size == 0 if flat else x.shape[axes[0]] == 0):
        raise ValueError(f"attempt to get {op} of an empty sequence")
    zero_d = flat and x.ndim == 0
    if zero_d:
        x = x.reshape(1)
        axes = (0,)
    out = tree_reduction(x, op, _arg_chunk, functools.partial(_arg_combine, pick=pick, flat=flat),
                         _arg_aggregate, None if flat else axes, keepdims, np.intp, split_every,
                         chunk_args=(pick, flat), aggregate_args=(pick, flat, op), nested=True)
    return out.reshape(()) if zero_d and keepdims else out  # (kept dimensions of a 0-d array: none)


def argmax(x: Any, axis: Any = None, keepdims: bool = False, split_every: Any = None) -> Array:
    """Index of the largest value along ``axis`` (in the flattened array without one); the
    first such index when several are equal, or the first NaN.

    >>> import numpy as np, xsched.array as xa
    >>> x = xa.from_array(np.array([[1, 7, 7], [9, 0, 2]]), chunks=(1, 2))
    >>> int(xa.argmax(x)), xa.argmax(x, axis=1).compute().tolist()
    (3, [1, 0])
    """
    return _arg(x, "argmax", np.argmax, axis, keepdims, split_every)


def argmin(x: Any, axis: Any = None, keepdims: bool = False, split_every: Any = None) -> Array:
    """Index of the smallest value along ``axis`` (in the flattened array without one); the
    first such index when several are equal, or the first NaN.

    >>> import numpy as np, xsched.array as xa
    >>> xa.argmin(xa.from_array(np.array([4, 2, 8, 2]), chunks=3)).compute()
    np.int64(1)
    """
    return _arg(x, "argmin", np.argmin, axis, keepdims, split_every)


def nanargmax(x: Any, axis: Any = None, keepdims: bool = False, split_every: Any = None) -> Array:
    """Index of the largest value along ``axis`` ignoring NaNs (in the flattened array
    without one); a slice of NaNs only fails when computed, as in NumPy.

    >>> import numpy as np, xsched.array as xa
    >>> x = xa.from_array(np.array([[np.nan, 7.0, 3.0], [1.0, np.nan, 2.0]]), chunks=(1, 2))
    >>> int(xa.nanargmax(x)), xa.nanargmax(x, axis=1).compute().tolist()
    (1, [1, 2])
    """
    x = asarray(x)
    if x.dtype.kind not in "fc":  # (no NaN to skip: NumPy's argmax)
        return argmax(x, axis=axis, keepdims=keepdims, split_every=split_every)
    return _arg(x, "nanargmax", _nanargmax, axis, keepdims, split_every)


def nanargmin(x: Any, axis: Any = None, keepdims: bool = False, split_every: Any = None) -> Array:
    """Index of the smallest value along ``axis`` ignoring NaNs; see ``nanargmax``.

    >>> import numpy as np, xsched.array as xa
    >>> int(xa.nanargmin(xa.from_array(np.array([np.nan, 4.0, -1.0, np.nan]), chunks=3)))
    2
    """
    x = asarray(x)
    if x.dtype.kind not in "fc":
        return argmin(x, axis=axis, keepdims=keepdims, split_every=split_every)
    return _arg(x, "nanargmin", _nanargmin, axis, keepdims, split_every)


# --------------------------------------------------------------------------- reductions


def _quiet(func: Callable, *args: Any, **kwargs: Any) -> Any:
    """``func`` without numpy's warnings about all-NaN or empty slices."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        with np.errstate(invalid="ignore", divide="ignore"):
            return func(*args, **kwargs)


def _np_chunk(block: np.ndarray, axes: tuple, func: Callable, kwargs: dict) -> np.ndarray:
    return _quiet(func, block, axis=axes, keepdims=True, **kwargs)


def _np_combine(parts: list, func: Callable, kwargs: dict) -> np.ndarray:
    return _quiet(func, joins.stack(parts), axis=0, **kwargs)


def _np_aggregate(parts: list, axes: tuple, keepdims: bool, func: Callable, kwargs: dict,
                  dtype: np.dtype) -> np.ndarray:
    return _finish(_np_combine(parts, func, kwargs), axes, keepdims, dtype)


def _numpy_reduction(x: Any, op: str, func: Callable, combine: Callable, axis: Any,
                     keepdims: bool, dtype: Any, split_every: Any, with_dtype: bool) -> Array:
    """A tree reduction applying the numpy reduction ``func`` per block and ``combine``
    (a numpy reduction too) to merge stacked partials."""
    x = asarray(x)
    kwargs = {"dtype": np.dtype(dtype)} if with_dtype and dtype is not None else {}
    out_dtype = _quiet(func, np.zeros(1, x.dtype), **kwargs).dtype
    merge = {"dtype": _ufunc_dtype(out_dtype)} if with_dtype else {}
    return tree_reduction(x, op, _np_chunk, functools.partial(_np_combine, func=combine,
                                                         kwargs=merge),
                     _np_aggregate, axis, keepdims, out_dtype, split_every,
                     chunk_args=(func, kwargs), aggregate_args=(combine, merge, out_dtype))


def prod(x: Any, axis: Any = None, dtype: Any = None, keepdims: bool = False,
         split_every: Any = None, out: Any = None, *, initial: Any = None, where: Any = True) -> Array:
    """Product of the elements over ``axis`` (an int, a tuple, or None for all); ``where``
    (a mask) and ``initial`` (multiplied in once) as NumPy's.

    >>> import numpy as np, xsched.array as xa
    >>> xa.prod(xa.from_array(np.arange(1, 7).reshape(2, 3), chunks=1), axis=0).compute().tolist()
    [4, 10, 18]
    """
    _check_out(out, "prod")
    if initial is not None or where is not True:
        return reduce_where("prod", asarray(x), axis, keepdims, lambda y: prod(y, axis, dtype, keepdims, split_every),
                            initial, where)
    return _numpy_reduction(x, "prod", np.prod, np.prod, axis, keepdims, dtype, split_every,
                            True)


def any(x: Any, axis: Any = None, keepdims: bool = False, split_every: Any = None,
        out: Any = None, *, where: Any = True) -> Array:
    """Whether any element over ``axis`` is true (of those ``where``, a mask, keeps).

    >>> import numpy as np, xsched.array as xa
    >>> bool((xa.from_array(np.arange(5), chunks=2) > 3).any().compute())
    True
    """
    _check_out(out, "any")
    if where is not True:
        return reduce_where("any", asarray(x), axis, keepdims, lambda y: any(y, axis, keepdims, split_every),
                            where=where)
    return _numpy_reduction(x, "any", np.any, np.any, axis, keepdims, None, split_every, False)


def all(x: Any, axis: Any = None, keepdims: bool = False, split_every: Any = None,
        out: Any = None, *, where: Any = True) -> Array:
    """Whether every element over ``axis`` is true (of those ``where``, a mask, keeps).

    >>> import numpy as np, xsched.array as xa
    >>> xa.from_array(np.array([[1, 0], [1, 1]]), chunks=1).all(axis=0).compute().tolist()
    [True, False]
    """
    _check_out(out, "all")
    if where is not True:
        return reduce_where("all", asarray(x), axis, keepdims, lambda y: all(y, axis, keepdims, split_every),
                            where=where)
    return _numpy_reduction(x, "all", np.all, np.all, axis, keepdims, None, split_every, False)


def nansum(x: Any, axis: Any = None, dtype: Any = None, keepdims: bool = False,
           split_every: Any = None) -> Array:
    """Sum over ``axis`` counting NaNs as zero.

    >>> import numpy as np, xsched.array as xa
    >>> float(xa.nansum(xa.from_array(np.array([1.0, np.nan, 2.0]), chunks=2)))
    3.0
    """
    return _numpy_reduction(x, "nansum", np.nansum, np.sum, axis, keepdims, dtype,
                            split_every, True)


def nanprod(x: Any, axis: Any = None, dtype: Any = None, keepdims: bool = False,
            split_every: Any = None) -> Array:
    """Product over ``axis`` counting NaNs as one.

    >>> import numpy as np, xsched.array as xa
    >>> float(xa.nanprod(xa.from_array(np.array([2.0, np.nan, 3.0]), chunks=2)))
    6.0
    """
    return _numpy_reduction(x, "nanprod", np.nanprod, np.prod, axis, keepdims, dtype,
                            split_every, True)


def nanmax(x: Any, axis: Any = None, keepdims: bool = False, split_every: Any = None) -> Array:
    """Maximum over ``axis`` ignoring NaNs (NaN where a slice holds nothing else).

    >>> import numpy as np, xsched.array as xa
    >>> float(xa.nanmax(xa.from_array(np.array([1.0, np.nan, 2.0]), chunks=1)))
    2.0
    """
    _no_identity(x, axis, "nanmax", "fmax")
    return _numpy_reduction(x, "nanmax", np.nanmax, np.nanmax, axis, keepdims, None,
                            split_every, False)


def nanmin(x: Any, axis: Any = None, keepdims: bool = False, split_every: Any = None) -> Array:
    """Minimum over ``axis`` ignoring NaNs (NaN where a slice holds nothing else).

    >>> import numpy as np, xsched.array as xa
    >>> float(xa.nanmin(xa.from_array(np.array([np.nan, 3.0, 2.0]), chunks=1)))
    2.0
    """
    _no_identity(x, axis, "nanmin", "fmin")
    return _numpy_reduction(x, "nanmin", np.nanmin, np.nanmin, axis, keepdims, None,
                            split_every, False)


def _nanmean_chunk(block: np.ndarray, axes: tuple, acc: np.dtype | None = None) -> tuple:
    count = np.sum(~np.isnan(block), axis=axes, keepdims=True)
    return count, np.nansum(block, axis=axes, keepdims=True, dtype=acc or np.result_type(block, 1.0))


def _nanmean_combine(parts: list) -> tuple:
    return (np.sum(np.stack([p[0] for p in parts]), axis=0),
            np.sum(np.stack([p[1] for p in parts]), axis=0))


def _nanmean_aggregate(parts: list, axes: tuple, keepdims: bool, dtype: np.dtype) -> np.ndarray:
    count, total = _nanmean_combine(parts)
    with np.errstate(invalid="ignore", divide="ignore"):
        return _finish(total / count, axes, keepdims, dtype)


def nanmean(x: Any, axis: Any = None, dtype: Any = None, keepdims: bool = False,
            split_every: Any = None) -> Array:
    """Mean over ``axis`` of the values that are not NaN (NaN where there are none); summed
    in ``dtype`` and given in it when one is given, as NumPy's.

    >>> import numpy as np, xsched.array as xa
    >>> float(xa.nanmean(xa.from_array(np.array([1.0, np.nan, 3.0]), chunks=1)))
    2.0
    >>> xa.nanmean(xa.from_array(np.array([1.0, np.nan], "f4"), chunks=1), dtype="f8").dtype
    dtype('float64')
    """
    x = asarray(x)
    if x.dtype.kind not in "fc":  # no NaN to skip (NaT stays NaT), as NumPy: the mean
        return mean(x, axis=axis, dtype=dtype, keepdims=keepdims, split_every=split_every)
    acc = np.dtype(dtype) if dtype is not None else None
    out = acc or _quiet(np.nanmean, np.zeros(1, x.dtype)).dtype
    return tree_reduction(x, "nanmean", _nanmean_chunk, _nanmean_combine, _nanmean_aggregate, axis,
                          keepdims, out, split_every, chunk_args=(acc,), aggregate_args=(out,))


def _nanmoments_chunk(block: np.ndarray, axes: tuple, acc: np.dtype) -> tuple:
    """(count, mean, M2) of one block's non-NaN values, per position of the kept axes."""
    valid = ~np.isnan(block)
    n = np.sum(valid, axis=axes, keepdims=True)
    total = np.sum(np.where(valid, block, 0), axis=axes, keepdims=True, dtype=acc)
    mu = total / np.maximum(n, 1)
    m2 = np.sum(np.where(valid, _abs2(block - mu), 0), axis=axes, keepdims=True)
    return n, mu, m2


def _nanmoments_combine(parts: list) -> tuple:
    """Merge (count, mean, M2) partials whose counts differ per position (as
    ``reductions._moments_combine`` does with one count)."""
    counts = np.stack([p[0] for p in parts])
    means = np.stack([p[1] for p in parts])
    n = counts.sum(axis=0)
    mu = np.sum(counts * means, axis=0) / np.maximum(n, 1)
    m2 = np.sum(np.stack([p[2] for p in parts]), axis=0) + np.sum(
        counts * _abs2(means - mu), axis=0)
    return n, mu, m2


def _nanvar_aggregate(parts: list, axes: tuple, keepdims: bool, dtype: np.dtype, ddof: int,
                      root: bool) -> np.ndarray:
    n, _, m2 = _nanmoments_combine(parts)
    with np.errstate(invalid="ignore", divide="ignore"):
        out = np.where(n - ddof > 0, m2 / np.where(n - ddof > 0, n - ddof, 1), np.nan)  # (ddof may be 1.5)
        if root:
            out = np.sqrt(out)
    return _finish(out, axes, keepdims, dtype)


def _nanmoments(x: Any, op: str, axis: Any, dtype: Any, ddof: int, keepdims: bool,
                split_every: Any, root: bool) -> Array:
    x = asarray(x)
    if dtype is None:
        dtype = _quiet(np.nanvar, np.zeros(2, x.dtype)).dtype
    dtype = np.dtype(dtype)
    acc = _accumulator(np.result_type(x.dtype, dtype))
    return tree_reduction(x, op, _nanmoments_chunk, _nanmoments_combine, _nanvar_aggregate,
                          axis, keepdims, dtype, split_every, chunk_args=(acc,),
                          aggregate_args=(dtype, _number_of_degrees(ddof, op), root))


def nanvar(x: Any, axis: Any = None, dtype: Any = None, ddof: int = 0, keepdims: bool = False,
           split_every: Any = None) -> Array:
    """Variance over ``axis`` of the values that are not NaN (NaN where fewer than
    ``ddof + 1`` are left); numerically stable, as ``var``.

    >>> import numpy as np, xsched.array as xa
    >>> x = xa.from_array(np.array([[1.0, np.nan, 3.0], [np.nan, np.nan, 2.0]]), chunks=1)
    >>> xa.nanvar(x, axis=1).compute().tolist()
    [1.0, 0.0]
    """
    return _nanmoments(x, "nanvar", axis, dtype, ddof, keepdims, split_every, root=False)


def nanstd(x: Any, axis: Any = None, dtype: Any = None, ddof: int = 0, keepdims: bool = False,
           split_every: Any = None) -> Array:
    """Standard deviation over ``axis`` of the values that are not NaN.

    >>> import numpy as np, xsched.array as xa
    >>> float(xa.nanstd(xa.from_array(np.array([1.0, np.nan, 3.0]), chunks=1)))
    1.0
    """
    return _nanmoments(x, "nanstd", axis, dtype, ddof, keepdims, split_every, root=True)


# --------------------------------------------------------------------------- methods


def _cumsum_method(self: Array, axis: Any = None, dtype: Any = None, out: Any = None,
                   method: str = "sequential") -> Array:
    """Running sums; see ``xsched.array.cumsum``.

    >>> import xsched.array as xa
    >>> xa.ones(4, dtype=int, chunks=3).cumsum().compute().tolist()
    [1, 2, 3, 4]
    """
    return cumsum(self, axis=axis, dtype=dtype, out=out, method=method)


def _cumprod_method(self: Array, axis: Any = None, dtype: Any = None, out: Any = None,
                    method: str = "sequential") -> Array:
    """Running products; see ``xsched.array.cumprod``.

    >>> import xsched.array as xa
    >>> xa.full(3, 2, chunks=2).cumprod().compute().tolist()
    [2, 4, 8]
    """
    return cumprod(self, axis=axis, dtype=dtype, out=out, method=method)


def _argmax_method(self: Array, axis: Any = None, keepdims: bool = False,
                   split_every: Any = None) -> Array:
    """Index of the largest value; see ``xsched.array.argmax``.

    >>> import xsched.array as xa
    >>> int(xa.arange(5, chunks=2).argmax())
    4
    """
    return argmax(self, axis=axis, keepdims=keepdims, split_every=split_every)


def _argmin_method(self: Array, axis: Any = None, keepdims: bool = False,
                   split_every: Any = None) -> Array:
    """Index of the smallest value; see ``xsched.array.argmin``.

    >>> import xsched.array as xa
    >>> int(xa.arange(5, chunks=2).argmin())
    0
    """
    return argmin(self, axis=axis, keepdims=keepdims, split_every=split_every)


for _name, _f in [("cumsum", _cumsum_method), ("cumprod", _cumprod_method),
                  ("argmax", _argmax_method), ("argmin", _argmin_method), ("prod", prod),
                  ("any", any), ("all", all)]:
    setattr(Array, _name, _f)
