"""Reductions (sum, mean, var, std, min, max) as tree reductions over blocks.

Why a tree: reducing thousands of blocks in one task would make one worker fetch them all
at once. Instead each block is reduced to a small *partial* (``<op>-chunk``), partials are
merged ``split_every`` at a time (``<op>-combine``, as many levels as needed) and the last
merge produces the result (``<op>-aggregate``). Every partial keeps the reduced axes with
length 1, so merging a group is "stack on a new axis and reduce it".

Partials: ``sum``/``min``/``max`` keep an array; ``mean`` keeps ``(count, total)``; ``var``
and ``std`` keep ``(count, mean, M2)`` (M2: sum of squared deviations from the block's own
mean), merged with the pairwise formula of Chan, Golub & LeVeque. That stays accurate when
the mean is large compared with the spread, where ``E[x**2] - E[x]**2`` loses every digit.
Means and variances accumulate in float64 (complex128 for complex data).

``reduction`` builds the same tree from your own ``chunk``, ``combine`` and ``aggregate``
functions (the calling convention of ``numpy`` reductions: ``f(x, axis=..., keepdims=...)``);
xarray's reductions without a NumPy name (the first or last valid value) run through it.

>>> import numpy as np, xsched.array as xa
>>> x = xa.from_array(np.arange(24.0).reshape(4, 6), chunks=(1, 2))
>>> x.sum(axis=1).compute().tolist()
[15.0, 51.0, 87.0, 123.0]
>>> round(float(x.std()), 6) == round(float(np.arange(24.0).std()), 6)
True
"""

from __future__ import annotations

import builtins
import functools
import itertools
import numbers
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from ..graph.spec import Ref, Task, funcname
from ..graph.layers import LayeredGraph, annotations_in_force, chunk_key, new_token, per_task
from . import joins
from .axes import reduced_axes

if TYPE_CHECKING:
    from .core import Array

__all__ = ["sum", "mean", "var", "std", "min", "max", "reduction", "tree_reduction"]

#: Partials merged per task when ``split_every`` is not given (spread over reduced axes).
DEFAULT_SPLIT_EVERY = 16

#: ``creation.asarray`` (a room above this one, which registers it): the public reductions
#: take a NumPy array or a list as NumPy's functions do (``xa.sum(np.ones(5))``)
AS_ARRAY: list = []


def _as_array(x: Any) -> Any:
    return x if hasattr(x, "chunks") and hasattr(x, "__xsched_graph__") else AS_ARRAY[0](x)


# --------------------------------------------------------------------------- fan-in


def _split_every(split_every: Any, axes: tuple[int, ...], ndim: int) -> dict[int, int]:
    """Fan-in per reduced axis: an int is the total fan-in of one merge; a dict is per axis."""
    if not axes:
        return {}
    default = builtins.max(2, int(DEFAULT_SPLIT_EVERY ** (1.0 / len(axes))))
    if split_every is None:
        return {a: default for a in axes}
    if isinstance(split_every, dict):
        out = {}
        for a in axes:
            n = split_every.get(a, split_every.get(a - ndim, default))
            out[a] = int(n)
    elif isinstance(split_every, numbers.Integral):
        per = builtins.max(2, int(round(int(split_every) ** (1.0 / len(axes)), 9)))
        out = {a: per for a in axes}
    else:
        raise TypeError(f"split_every must be an int or a dict {{axis: int}}, "
                        f"got {split_every!r}")
    for a, n in out.items():
        if n < 2:
            raise ValueError(f"split_every must merge at least 2 partials per axis; "
                             f"axis {a} has {n}")
    return out


# --------------------------------------------------------------------------- the tree


def tree_reduction(x: Array, op: str, chunk: Callable, combine: Callable, aggregate: Callable,
              axis: Any, keepdims: bool, dtype: Any, split_every: Any = None,
              chunk_args: tuple = (), aggregate_args: tuple = (),
              block_args: Callable[[tuple], tuple] | None = None,
              nested: bool = False) -> Array:
    """Build a tree reduction of ``x``: ``chunk`` per block, ``combine`` per group of
    partials, ``aggregate`` for the last group.

    ``chunk(block, axes, *chunk_args, *block_args(index))`` returns a partial whose arrays
    keep the reduced axes with length 1 (``block_args``, when given, adds arguments for the
    block at grid ``index``, such as where it starts); ``combine(partials)`` merges a list
    of them; ``aggregate(partials, axes, keepdims, *aggregate_args)`` returns the output
    block. With ``nested``, ``combine`` and ``aggregate`` get the partials of a group as
    nested lists, one level per reduced axis in order (the group's grid), instead of a flat
    list in C order.

    >>> import numpy as np, xsched.array as xa
    >>> from xsched.array.reductions import tree_reduction
    >>> x = xa.from_array(np.arange(10), chunks=3)
    >>> def top(b, axes): return np.max(b, axis=axes, keepdims=True)
    >>> def merge(parts): return np.max(np.stack(parts), axis=0)
    >>> def final(parts, axes, keepdims):
    ...     out = merge(parts)
    ...     return out if keepdims else np.squeeze(out, axis=axes)
    >>> int(tree_reduction(x, "top", top, merge, final, None, False, x.dtype).compute())
    9
    """
    axes = reduced_axes(axis, x.ndim, op)
    dtype = np.dtype(dtype)
    split = _split_every(split_every, axes, x.ndim)
    token = new_token(op, x.name, axes, keepdims, str(dtype), split, chunk_args,
                      aggregate_args)
    ann = annotations_in_force()
    layers: dict[str, dict] = {}

    chunk_name = f"{op}-chunk-{token}"
    layer = {}
    for index in np.ndindex(*x.numblocks):
        extra = tuple(block_args(index)) if block_args is not None else ()
        layer[chunk_key(chunk_name, index)] = Task(
            chunk, (Ref(chunk_key(x.name, index)), axes) + tuple(chunk_args) + extra, {},
            per_task(ann))
    layers[chunk_name] = layer
    grid = list(x.numblocks)
    prev = chunk_name
    level = 0
    while any(grid[a] > split[a] for a in axes):
        level += 1
        name = f"{op}-combine-{new_token(token, level)}"
        new_grid = [(-(-n // split[a]) if a in axes else n) for a, n in enumerate(grid)]
        layer = {}
        for index in np.ndindex(*new_grid):
            refs = _group(prev, index, grid, split, axes, nested)
            layer[chunk_key(name, index)] = Task(combine, (refs,), {}, per_task(ann))
        layers[name] = layer
        grid, prev = new_grid, name

    out_name = f"{op}-aggregate-{token}"
    layer = {}
    final_grid = [1 if a in axes else n for a, n in enumerate(grid)]
    full = {a: grid[a] for a in axes}  # one group spanning every remaining partial
    for index in np.ndindex(*final_grid):
        refs = _group(prev, index, grid, full, axes, nested)
        out_index = index if keepdims else tuple(i for a, i in enumerate(index)
                                                 if a not in axes)
        layer[chunk_key(out_name, out_index)] = Task(
            aggregate, (refs, axes, keepdims) + tuple(aggregate_args), {}, per_task(ann))
    layers[out_name] = layer

    if keepdims:
        chunks = tuple((1,) if a in axes else c for a, c in enumerate(x.chunks))
    else:
        chunks = tuple(c for a, c in enumerate(x.chunks) if a not in axes)
    # an Array like x (core.py imports this module, so it is not imported here)
    return type(x)(LayeredGraph.merge(x._graph, new=layers), out_name, chunks, dtype)


def _sources(index: tuple, grid: list[int], split: dict[int, int],
             axes: tuple[int, ...]) -> list[tuple[int, ...]]:
    """Indices of the partials (in ``grid``) that the group at ``index`` merges."""
    ranges = []
    for a, i in enumerate(index):
        if a in axes:
            s = split[a]
            ranges.append(range(i * s, builtins.min((i + 1) * s, grid[a])))
        else:
            ranges.append(range(i, i + 1))
    return list(itertools.product(*ranges))


def _group(name: str, index: tuple, grid: list[int], split: dict[int, int],
           axes: tuple[int, ...], nested: bool) -> list:
    """References to the partials of the group at ``index``: a flat list in C order, or
    with ``nested`` nested lists with one level per reduced axis."""
    refs: list = [Ref(chunk_key(name, src)) for src in _sources(index, grid, split, axes)]
    if not nested:
        return refs
    counts = [builtins.min((i + 1) * split[a], grid[a]) - i * split[a]
              for a, i in enumerate(index) if a in axes]
    for n in reversed(counts[1:]):
        refs = [refs[k:k + n] for k in range(0, len(refs), n)]
    return refs


def _finish(out: np.ndarray, axes: tuple[int, ...], keepdims: bool, dtype: np.dtype):
    out = np.asanyarray(out)  # (a masked result keeps its mask)
    if not keepdims:
        out = np.squeeze(out, axis=axes) if axes else out
    return out.astype(dtype, copy=False)


def _check_out(out: Any, what: str) -> None:
    if out is not None:
        raise TypeError(f"{what}: out= is not supported for xsched arrays; use the returned "
                        "array instead.")


# --------------------------------------------------------------------------- sum, min, max


def _ufunc_dtype(dtype: np.dtype) -> Any:
    """``dtype`` as a ufunc's ``dtype=`` takes it: NumPy refuses a time unit there
    (``m8[ns]``), so timedeltas give their scalar type and keep the data's unit."""
    return dtype.type if dtype.kind == "m" else dtype


def _sum_chunk(block: np.ndarray, axes: tuple, dtype: np.dtype) -> np.ndarray:
    return np.sum(block, axis=axes, keepdims=True, dtype=_ufunc_dtype(dtype))


def _sum_combine(parts: list) -> np.ndarray:
    return np.sum(joins.stack(parts), axis=0, dtype=_ufunc_dtype(parts[0].dtype))


def _sum_aggregate(parts: list, axes: tuple, keepdims: bool, dtype: np.dtype) -> np.ndarray:
    return _finish(_sum_combine(parts), axes, keepdims, dtype)


def _extreme_chunk(block: np.ndarray, axes: tuple, f: Callable) -> np.ndarray | None:
    """``f`` (np.min or np.max) of a block, or None for a block empty along the reduced axes
    (a boolean mask's blocks often are): the other blocks decide."""
    if any(block.shape[a] == 0 for a in axes):
        return None
    return f(block, axis=axes, keepdims=True)


def _extreme_combine(parts: list, f: Callable) -> np.ndarray | None:
    parts = [p for p in parts if p is not None]
    return f(joins.stack(parts), axis=0) if parts else None


def _extreme_aggregate(parts: list, axes: tuple, keepdims: bool, dtype: np.dtype, f: Callable) -> np.ndarray:
    out = _extreme_combine(parts, f)
    if out is None:  # (only with unknown chunk sizes: an empty axis is caught when built)
        raise ValueError(_no_identity_message({np.min: "minimum", np.max: "maximum"}.get(f, f.__name__)))
    return _finish(out, axes, keepdims, dtype)


def _min_chunk(block: np.ndarray, axes: tuple) -> np.ndarray | None:
    return _extreme_chunk(block, axes, np.min)


def _min_combine(parts: list) -> np.ndarray | None:
    return _extreme_combine(parts, np.min)


def _min_aggregate(parts: list, axes: tuple, keepdims: bool, dtype: np.dtype) -> np.ndarray:
    return _extreme_aggregate(parts, axes, keepdims, dtype, np.min)


def _max_chunk(block: np.ndarray, axes: tuple) -> np.ndarray | None:
    return _extreme_chunk(block, axes, np.max)


def _max_combine(parts: list) -> np.ndarray | None:
    return _extreme_combine(parts, np.max)


def _max_aggregate(parts: list, axes: tuple, keepdims: bool, dtype: np.dtype) -> np.ndarray:
    return _extreme_aggregate(parts, axes, keepdims, dtype, np.max)


#: ``where_reductions.reduce_where``, NumPy's ``where=`` and ``initial=``, registered when that
#: module is imported (it is above this one: it builds on masks and broadcasting, while core's
#: methods call this module's reductions)
WHERE: list = []


def sum(x: Array, axis: Any = None, dtype: Any = None, keepdims: bool = False,
        split_every: Any = None, out: Any = None, *, initial: Any = None, where: Any = True) -> Array:
    """Sum of the elements over ``axis`` (an int, a tuple, or None for all); ``where`` (a
    mask) and ``initial`` (added once) as NumPy's.

    >>> import numpy as np, xsched.array as xa
    >>> x = xa.from_array(np.arange(12).reshape(3, 4), chunks=2)
    >>> xa.sum(x, axis=0).compute().tolist()
    [12, 15, 18, 21]
    >>> x.sum(axis=(0, 1), keepdims=True).compute().tolist()
    [[66]]
    """
    x = _as_array(x)
    _check_out(out, "sum")
    if initial is not None or where is not True:
        return WHERE[0]("sum", x, axis, keepdims, lambda y: sum(y, axis, dtype, keepdims, split_every), initial,
                        where)
    dtype = np.dtype(dtype) if dtype is not None else np.sum(np.zeros(1, x.dtype)).dtype
    return tree_reduction(x, "sum", _sum_chunk, _sum_combine, _sum_aggregate, axis, keepdims,
                     dtype, split_every, chunk_args=(dtype,), aggregate_args=(dtype,))


def _no_identity(x: Any, axis: Any, op: str, ufunc: str) -> None:
    """NumPy's error, now rather than when computed, for a reduction without an identity
    (``min``, ``max``, ``nanmin``...) over an axis of length zero."""
    shape = np.shape(x) if not hasattr(x, "shape") else x.shape
    if builtins.any(shape[a] == 0 for a in reduced_axes(axis, len(shape), op)):
        raise ValueError(_no_identity_message(ufunc))


def _no_identity_message(ufunc: str) -> str:
    """NumPy's words for a reduction without an identity over nothing, naming its ufunc."""
    return f"zero-size array to reduction operation {ufunc} which has no identity"


def min(x: Array, axis: Any = None, keepdims: bool = False, split_every: Any = None,
        out: Any = None, *, initial: Any = None, where: Any = True) -> Array:
    """Minimum over ``axis`` (an int, a tuple, or None for all); ``initial`` (a value
    every result is at most; needed with ``where``, a mask) as NumPy's.

    >>> import numpy as np, xsched.array as xa
    >>> xa.from_array(np.array([[3, 1], [2, 5]]), chunks=1).min(axis=1).compute().tolist()
    [1, 2]
    """
    x = _as_array(x)
    _check_out(out, "min")
    if initial is not None or where is not True:
        return WHERE[0]("min", x, axis, keepdims, lambda y: min(y, axis, keepdims, split_every), initial, where)
    _no_identity(x, axis, "min", "minimum")
    return tree_reduction(x, "min", _min_chunk, _min_combine, _min_aggregate, axis, keepdims,
                     x.dtype, split_every, aggregate_args=(x.dtype,))


def max(x: Array, axis: Any = None, keepdims: bool = False, split_every: Any = None,
        out: Any = None, *, initial: Any = None, where: Any = True) -> Array:
    """Maximum over ``axis`` (an int, a tuple, or None for all); ``initial`` (a value
    every result is at least; needed with ``where``, a mask) as NumPy's.

    >>> import numpy as np, xsched.array as xa
    >>> int(xa.from_array(np.array([[3, 1], [2, 5]]), chunks=1).max().compute())
    5
    """
    x = _as_array(x)
    _check_out(out, "max")
    if initial is not None or where is not True:
        return WHERE[0]("max", x, axis, keepdims, lambda y: max(y, axis, keepdims, split_every), initial, where)
    _no_identity(x, axis, "max", "maximum")
    return tree_reduction(x, "max", _max_chunk, _max_combine, _max_aggregate, axis, keepdims,
                     x.dtype, split_every, aggregate_args=(x.dtype,))


# --------------------------------------------------------------------------- mean


def _accumulator(dtype: np.dtype) -> np.dtype:
    """float64 (or wider) for real data, complex128 (or wider) for complex data."""
    if dtype.kind == "c":
        return np.result_type(dtype, np.complex128)
    if dtype.kind == "f":
        return np.result_type(dtype, np.float64)
    return np.dtype(np.float64)


def _count(block: np.ndarray, axes: tuple) -> Any:
    """The values reduced into each output cell: one number for a plain block; for a masked
    one, the unmasked values per cell (an array shaped as the partial)."""
    if isinstance(block, np.ma.MaskedArray):
        return np.ma.count(block, axis=axes, keepdims=True)
    n = 1
    for a in axes:
        n *= block.shape[a]
    return n


def _per_cell(n: Any) -> bool:
    """Whether a count is per cell (a masked block's), not one number."""
    return np.ndim(n) > 0


def _unmasked(total: Any) -> np.ndarray:
    """A masked block's partial as a plain array, its masked cells (no value) as 0: the counts
    say which cells had none."""
    return np.ma.filled(total, 0) if isinstance(total, np.ma.MaskedArray) else total


def _where_counted(out: np.ndarray, n: Any) -> Any:
    """``out`` masked where no value was counted (numpy.ma's result there), when counts are
    per cell; ``out`` itself otherwise."""
    return np.ma.masked_array(out, mask=np.broadcast_to(n <= 0, np.shape(out))) if _per_cell(n) else out


def _mean_chunk(block: np.ndarray, axes: tuple, acc: np.dtype) -> tuple:
    return _count(block, axes), _unmasked(np.sum(block, axis=axes, keepdims=True, dtype=acc))


def _mean_combine(parts: list) -> tuple:
    return (builtins.sum(p[0] for p in parts),
            np.sum(np.stack([p[1] for p in parts]), axis=0))


def _mean_aggregate(parts: list, axes: tuple, keepdims: bool, dtype: np.dtype) -> np.ndarray:
    n, total = _mean_combine(parts)
    with np.errstate(invalid="ignore", divide="ignore"):
        if _per_cell(n):
            return _finish(_where_counted(total / np.where(n > 0, n, 1), n), axes, keepdims, dtype)
        return _finish(total / n if n else total * np.nan, axes, keepdims, dtype)


def mean(x: Array, axis: Any = None, dtype: Any = None, keepdims: bool = False,
         split_every: Any = None, out: Any = None, *, where: Any = True) -> Array:
    """Arithmetic mean over ``axis`` (an int, a tuple, or None for all); with ``where`` (a
    mask), of the elements it keeps, as NumPy's.

    >>> import numpy as np, xsched.array as xa
    >>> xa.from_array(np.arange(6.0).reshape(2, 3), chunks=1).mean(axis=0).compute().tolist()
    [1.5, 2.5, 3.5]
    """
    x = _as_array(x)
    _check_out(out, "mean")
    if dtype is None:
        with np.errstate(all="ignore"):
            dtype = np.mean(np.zeros(1, x.dtype)).dtype
    dtype = np.dtype(dtype)
    if where is not True:
        return WHERE[0]("mean", x, axis, keepdims, None, where=where, dtype=dtype)
    acc = _accumulator(np.result_type(x.dtype, dtype))
    return tree_reduction(x, "mean", _mean_chunk, _mean_combine, _mean_aggregate, axis, keepdims,
                     dtype, split_every, chunk_args=(acc,), aggregate_args=(dtype,))


# --------------------------------------------------------------------------- var, std


def _abs2(d: np.ndarray) -> np.ndarray:
    return (d.real ** 2 + d.imag ** 2) if np.iscomplexobj(d) else d * d


def _moments_chunk(block: np.ndarray, axes: tuple, acc: np.dtype) -> tuple:
    """(count, mean, M2) of one block, by two passes over the block."""
    n = _count(block, axes)
    shape = tuple(1 if a in axes else s for a, s in enumerate(block.shape))
    if _per_cell(n):  # (masked: a mean and M2 per cell over its unmasked values; 0 where none)
        with np.errstate(invalid="ignore", divide="ignore"):
            mu = _unmasked(np.ma.mean(block, axis=axes, keepdims=True, dtype=acc))
            return n, mu, _unmasked(np.ma.sum(_abs2(block - mu), axis=axes, keepdims=True))
    if n == 0:
        return 0, np.zeros(shape, acc), np.zeros(shape, np.zeros(0, acc).real.dtype)
    mu = np.mean(block, axis=axes, keepdims=True, dtype=acc)
    m2 = np.sum(_abs2(block - mu), axis=axes, keepdims=True)
    return n, mu, m2


def _moments_combine(parts: list) -> tuple:
    """Merge (count, mean, M2) partials (Chan, Golub & LeVeque's pairwise update)."""
    if builtins.any(_per_cell(p[0]) for p in parts):
        return _moments_combine_cells(parts)
    parts = [p for p in parts if p[0]] or parts[:1]
    if len(parts) == 1:
        return parts[0]
    counts = np.array([p[0] for p in parts], dtype=np.float64)
    n = counts.sum()
    means = np.stack([p[1] for p in parts])
    m2s = np.stack([p[2] for p in parts])
    w = counts.reshape((-1,) + (1,) * (means.ndim - 1))
    mu = np.sum(w * means, axis=0) / n
    m2 = np.sum(m2s, axis=0) + np.sum(w * _abs2(means - mu), axis=0)
    return int(n), mu, m2


def _moments_combine_cells(parts: list) -> tuple:
    """The same update with a count per cell (masked blocks), cells without values left out."""
    counts = np.stack([np.broadcast_to(p[0], np.shape(p[1])) for p in parts]).astype(np.float64)
    n = counts.sum(axis=0)
    means, m2s = np.stack([p[1] for p in parts]), np.stack([p[2] for p in parts])
    mu = np.sum(counts * means, axis=0) / np.where(n > 0, n, 1)
    m2 = np.sum(m2s, axis=0) + np.sum(counts * _abs2(means - mu), axis=0)
    return n.astype(np.intp), mu, m2


def _var_aggregate(parts: list, axes: tuple, keepdims: bool, dtype: np.dtype, ddof: int,
                   root: bool) -> np.ndarray:
    n, _, m2 = _moments_combine(parts)
    with np.errstate(invalid="ignore", divide="ignore"):
        if _per_cell(n):  # (numpy.ma masks a cell with ddof or fewer values)
            out = _where_counted(m2 / np.where(n - ddof > 0, n - ddof, 1), n - ddof)
            return _finish(np.ma.sqrt(out) if root else out, axes, keepdims, dtype)
        out = m2 / builtins.max(n - ddof, 0) if n else m2 * np.nan
        if root:
            out = np.sqrt(out)
    return _finish(out, axes, keepdims, dtype)


def _number_of_degrees(ddof: Any, op: str) -> Any:
    """``ddof`` as an int when whole, else the float it is (NumPy and the Array API's
    ``correction`` take 1.5 too)."""
    if isinstance(ddof, bool) or not isinstance(ddof, numbers.Real):
        raise TypeError(f"{op}: ddof (correction) must be a number, got {ddof!r}")
    return int(ddof) if float(ddof).is_integer() else float(ddof)


def _moments(x: Array, op: str, axis: Any, dtype: Any, ddof: Any, keepdims: bool,
             split_every: Any, root: bool) -> Array:
    if dtype is None:
        with np.errstate(all="ignore"):
            dtype = np.var(np.zeros(2, x.dtype)).dtype
    dtype = np.dtype(dtype)
    acc = _accumulator(np.result_type(x.dtype, dtype))
    return tree_reduction(x, op, _moments_chunk, _moments_combine, _var_aggregate, axis, keepdims,
                     dtype, split_every, chunk_args=(acc,),
                     aggregate_args=(dtype, _number_of_degrees(ddof, op), root))


def _ddof(ddof: Any, correction: Any, op: str) -> Any:
    """NumPy's ``ddof`` or the Array API's ``correction`` (the same number), not both."""
    if correction is None:
        return ddof
    if ddof != 0:
        raise TypeError(f"{op}: give ddof or correction (the Array API's name for it), not both")
    return correction


def var(x: Array, axis: Any = None, dtype: Any = None, ddof: int = 0, keepdims: bool = False,
        split_every: Any = None, out: Any = None, *, correction: Any = None) -> Array:
    """Variance over ``axis`` (``ddof=1`` for the sample variance); numerically stable.

    >>> import numpy as np, xsched.array as xa
    >>> x = xa.from_array(1e9 + np.arange(8.0), chunks=3)
    >>> float(x.var())
    5.25
    """
    x = _as_array(x)
    _check_out(out, "var")
    return _moments(x, "var", axis, dtype, _ddof(ddof, correction, "var"), keepdims, split_every, root=False)


def std(x: Array, axis: Any = None, dtype: Any = None, ddof: int = 0, keepdims: bool = False,
        split_every: Any = None, out: Any = None, *, correction: Any = None) -> Array:
    """Standard deviation over ``axis`` (``ddof=1`` for the sample estimate).

    >>> import numpy as np, xsched.array as xa
    >>> float(xa.from_array(np.array([1.0, 3.0]), chunks=1).std())
    1.0
    """
    x = _as_array(x)
    _check_out(out, "std")
    return _moments(x, "std", axis, dtype, _ddof(ddof, correction, "std"), keepdims, split_every, root=True)


# --------------------------------------------------------------------------- your own


def _join_partials(parts: Any, axes: tuple[int, ...], concatenate: bool) -> Any:
    """The partials of one group (nested lists, a level per reduced axis) joined into one
    array along the reduced axes, or left as they are without ``concatenate``."""
    if not concatenate:
        return parts

    def join(obj: Any, level: int) -> Any:
        if level == len(axes):
            return obj
        pieces = [join(o, level + 1) for o in obj]
        return pieces[0] if len(pieces) == 1 else np.concatenate(pieces, axis=axes[level])

    return join(parts, 0) if axes else parts[0]


def _user_chunk(block: np.ndarray, axes: tuple, func: Callable) -> Any:
    return func(block, axis=axes, keepdims=True)


def _user_combine(parts: list, axes: tuple, func: Callable, concatenate: bool) -> Any:
    return func(_join_partials(parts, axes, concatenate), axis=axes, keepdims=True)


def _user_aggregate(parts: list, axes: tuple, keepdims: bool, func: Callable,
                    concatenate: bool, dtype: np.dtype) -> Any:
    out = func(_join_partials(parts, axes, concatenate), axis=axes, keepdims=keepdims)
    return out.astype(dtype, copy=False) if isinstance(out, np.ndarray) else out


def reduction(x: Array, chunk: Callable, aggregate: Callable, *, axis: Any = None,
              keepdims: bool = False, dtype: Any, combine: Callable | None = None,
              split_every: Any = None, concatenate: bool = True,
              name: str | None = None) -> Array:
    """A tree reduction of ``x`` over ``axis`` made of your own three functions.

    * ``chunk(block, axis=axes, keepdims=True)`` runs on every block and returns its
      *partial*: an array keeping every reduced axis (any length along it).
    * ``combine(partials, axis=axes, keepdims=True)`` merges a group of at most
      ``split_every`` partials (default: ``aggregate``); there are as many levels of it as
      the number of blocks needs.
    * ``aggregate(partials, axis=axes, keepdims=keepdims)`` makes the result from the last
      group. It always runs, even when ``x`` has a single block along the reduced axes.

    ``axes`` is a tuple of non-negative axis numbers. With ``concatenate`` (the default)
    the partials of a group reach ``combine`` and ``aggregate`` joined into one array along
    the reduced axes, in their order in ``x``; without it, as nested lists (one level per
    reduced axis), for partials that are not arrays. ``dtype`` is the result's dtype
    (required: nothing is run to guess it). Each reduced axis ends with length 1
    (``keepdims``) or is removed; the other axes keep their blocks.

    The first non-NaN value along an axis (an order-dependent reduction: the partials
    arrive in order):

    >>> import numpy as np, xsched.array as xa
    >>> def first_valid(block, axis, keepdims):
    ...     (a,) = axis
    ...     valid = ~np.isnan(block)
    ...     pos = np.expand_dims(np.argmax(valid, axis=a), a)
    ...     out = np.take_along_axis(block, pos, axis=a)
    ...     return out if keepdims else np.squeeze(out, axis=a)
    >>> x = xa.from_array(np.array([[np.nan, np.nan, 3.0, 4.0], [np.nan, 2.0, np.nan, 5.0]]),
    ...                   chunks=(1, 1))
    >>> xa.reduction(x, first_valid, first_valid, axis=1, dtype=float,
    ...              split_every=2).compute().tolist()
    [3.0, 2.0]
    """
    x = _as_array(x)
    if dtype is None:
        raise ValueError("reduction: dtype= is required: the dtype of the result "
                         "(nothing is run to guess it).")
    for what, f in (("chunk", chunk), ("aggregate", aggregate)):
        if not callable(f):
            raise TypeError(f"reduction: {what} must be a function, got {f!r}")
    dtype = np.dtype(dtype)
    axes = reduced_axes(axis, x.ndim, "reduction")
    combine = combine if combine is not None else aggregate
    op = name or funcname(chunk)
    return tree_reduction(x, op, _user_chunk, functools.partial(
        _user_combine, axes=axes, func=combine, concatenate=concatenate),
        _user_aggregate, axes, keepdims, dtype, split_every, chunk_args=(chunk,),
        aggregate_args=(aggregate, concatenate, dtype), nested=True)
