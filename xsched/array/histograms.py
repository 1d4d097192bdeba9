"""Counting values into bins: ``histogram``, ``histogram2d``, ``histogramdd``, ``bincount``
and ``digitize``.

A histogram is a sum: each block is counted into the bins by NumPy on its own (one task per
block, the block's counts its partial), and the partials are added up in a tree
(``reductions.sum``), so no task holds more than a block and ``split_every`` partials. The
bins must be known when the expression is written, since they fix the result's shape: bin
edges, or a number of bins together with ``range=`` (NumPy would look at the data for the
range; here that would mean computing the array twice, so it fails when built, saying so).
The edges come back as NumPy arrays (they are known), the counts as a lazy array.

``bincount``'s length depends on the largest value. With ``minlength`` the result is given
that length, and a value past it fails when computed, naming both; without it the length is
unknown until computed (``nan`` in ``chunks``, as after a boolean mask:
``compute_chunk_sizes()`` finds it). The partial counts of the blocks are merged in a tree.

>>> import numpy as np, xsched.array as xa
>>> x = xa.from_array(np.array([0.5, 1.5, 1.7, 2.5, 9.0]), chunks=2)
>>> counts, edges = xa.histogram(x, bins=3, range=(0, 3))
>>> counts.compute().tolist(), edges.tolist()
([1, 2, 1], [0.0, 1.0, 2.0, 3.0])
>>> xa.bincount(xa.from_array(np.array([0, 2, 2, 5]), chunks=3), minlength=6).compute().tolist()
[1, 0, 2, 0, 0, 1]
"""

from __future__ import annotations

import builtins
import functools
import numbers
from typing import Any

import numpy as np

from .core import Array
from .mapping import map_blocks
from .creation import asarray
from .index_notation import blockwise
from .manipulation import stack
from .rechunking import joined, unify_chunks
from .reductions import reduction, sum as _sum

__all__ = ["histogram", "histogram2d", "histogramdd", "histogram_bin_edges", "bincount", "digitize"]


def _known(value: Any, what: str, arg: str, why: str = "it fixes the result's shape") -> Any:
    """``value`` as NumPy data, refusing an xsched array (``why``: its values are needed when
    the expression is written)."""
    if isinstance(value, Array):
        raise TypeError(f"{what}: {arg} must be known when the expression is written ({why}); pass NumPy "
                        f"data, e.g. {arg}={arg}.compute()")
    return value


def _holds_array(value: Any) -> bool:
    return isinstance(value, Array) or (isinstance(value, (list, tuple)) and any(map(_holds_array, value)))


def _need_range(bins: Any, range_: Any, what: str) -> None:
    if _holds_array(range_):  # (before NumPy sees it: it would compute it, block by block, here)
        raise TypeError(f"{what}: range must be known when the expression is written (it fixes the bin edges); "
                        "give NumPy numbers, e.g. range=(0, float(x.max().compute()))")
    if isinstance(bins, str):
        raise ValueError(f"{what}: bins={bins!r} estimates the bins from the data, which would "
                         f"compute the array first; give bin edges, or a number of bins with range=")
    if isinstance(bins, numbers.Integral) and range_ is None:
        raise ValueError(f"{what}: bins={bins} (a number of bins) needs range=(low, high): the "
                         f"data's own range would have to be computed first. Give range=, or the "
                         f"bin edges as bins=")


def histogram_bin_edges(a: Any, bins: Any = 10, range: Any = None, weights: Any = None) -> np.ndarray:
    """The bin edges ``histogram`` counts in, as ``numpy.histogram_bin_edges``: the edges
    given, or a number of equal bins over ``range`` (needed then, as for ``histogram``;
    nothing is computed).

    >>> import numpy as np, xsched.array as xa
    >>> np.histogram_bin_edges(xa.ones(4, chunks=2), bins=2, range=(0, 1)).tolist()
    [0.0, 0.5, 1.0]
    """
    _need_range(bins, range, "histogram_bin_edges")
    edges = np.histogram_bin_edges(np.zeros(0, asarray(a).dtype), _known(bins, "histogram_bin_edges", "bins"),
                                   range=range)
    return edges


def _hist_block(block: np.ndarray, weights: np.ndarray | None = None, *, bins: Any,
                range_: Any, ndim: int) -> np.ndarray:
    counts = np.histogram(block, bins=bins, range=range_, weights=weights)[0]
    return counts.reshape((1,) * ndim + counts.shape)


def _density(counts: Array, edges: list[np.ndarray]) -> Array:
    """``counts`` over the total and the bins' volumes, as NumPy's ``density=True``."""
    volume = np.ones(counts.shape)
    for i, e in enumerate(edges):
        shape = [1] * len(edges)
        shape[i] = len(e) - 1
        volume = volume * np.diff(e).astype(float).reshape(shape)
    return counts / volume / counts.sum()


def _same_lengths(x: Array, y: Array) -> bool:
    """Whether ``x`` and ``y`` have one shape; lengths a boolean mask left unknown (``nan``,
    never equal) count as the same when the blocks are (each block is checked by NumPy)."""
    return x.shape == y.shape or x.chunks == y.chunks


def _weights(weights: Any, a: Array, what: str, words: str) -> list:
    """``[weights]`` as an xsched array of ``a``'s shape and blocks (``[]`` without), else
    NumPy's error."""
    if weights is None:
        return []
    weights = asarray(weights)
    if not _same_lengths(weights, a):
        raise ValueError(f"{what}: {words}: {weights.shape} and {a.shape}")
    return [weights if weights.chunks == a.chunks else weights.rechunk(a.chunks)]


def histogram(a: Any, bins: Any = 10, range: Any = None, density: Any = None,
              weights: Any = None) -> tuple[Array, np.ndarray]:
    """The counts of ``a``'s values (all of them, any shape) in ``bins``, and the bin edges,
    as ``numpy.histogram``: ``bins`` are edges, or a number of equal bins over ``range``
    (required then). ``weights`` (of ``a``'s shape) adds weights instead of ones;
    ``density`` divides by the total and the bin widths.

    >>> import numpy as np, xsched.array as xa
    >>> x = xa.from_array(np.array([[1, 2], [2, 3]]), chunks=1)
    >>> counts, edges = xa.histogram(x, bins=[0, 2, 4])
    >>> counts.compute().tolist(), edges.tolist()
    ([1, 3], [0, 2, 4])
    """
    a = asarray(a)
    bins = _known(bins, "histogram", "bins")
    _need_range(bins, range, "histogram")
    edges = np.histogram_bin_edges(np.empty(0, a.dtype), bins=bins, range=range)
    args = [a] + _weights(weights, a, "histogram", "weights should have the same shape as a")
    dtype = np.histogram(np.empty(0, a.dtype), bins=edges, weights=None if len(args) == 1
                         else np.empty(0, args[1].dtype))[0].dtype
    partials = map_blocks(_hist_block, *args, bins=bins, range_=range, ndim=a.ndim,
                          chunks=tuple((1,) * n for n in a.numblocks) + ((len(edges) - 1,),),
                          new_axis=a.ndim, dtype=dtype, name="histogram")
    counts = _sum(partials, axis=tuple(builtins.range(a.ndim)), dtype=dtype)
    return (_density(counts, [edges]) if density else counts), edges


def _dd_block(sample: np.ndarray, weights: np.ndarray | None = None, *, bins: Any,
              range_: Any) -> np.ndarray:
    counts = np.histogramdd(sample, bins=bins, range=range_, weights=weights)[0]
    return counts[np.newaxis]


def histogramdd(sample: Any, bins: Any = 10, range: Any = None, density: Any = None,
                weights: Any = None) -> tuple[Array, tuple[np.ndarray, ...]]:
    """The counts of the ``N`` points of ``sample`` (``(N, D)``, or a sequence of ``D``
    arrays of length ``N``) in a grid of ``D``-dimensional bins, and the edges per
    dimension, as ``numpy.histogramdd``. ``bins``: edges per dimension, or numbers of bins
    (one for all, or one per dimension) over ``range`` (required then, one ``(low, high)``
    per dimension). Blocks along the points are counted on their own and added up.

    >>> import numpy as np, xsched.array as xa
    >>> pts = xa.from_array(np.array([[0.5, 0.5], [1.5, 0.5], [1.5, 1.5]]), chunks=(2, 2))
    >>> counts, edges = xa.histogramdd(pts, bins=2, range=[(0, 2), (0, 2)])
    >>> counts.compute().tolist()
    [[1.0, 0.0], [1.0, 1.0]]
    >>> xa.histogramdd(xa.arange(10.0, chunks=3), bins=3, range=[(0, 9)])[0].compute().tolist()   # 1-d points
    [3.0, 3.0, 4.0]
    """
    if isinstance(sample, (list, tuple)):
        sample = stack([asarray(s) for s in sample], axis=-1)
    sample = asarray(sample)
    if sample.ndim == 1:  # (NumPy's: N points of one dimension)
        sample = sample[:, None]
    if sample.ndim != 2:
        raise ValueError(f"histogramdd: sample must be (N, D) or a sequence of D arrays of "
                         f"length N; got an array of shape {sample.shape}")
    d = sample.shape[1]
    bins = _known(bins, "histogramdd", "bins")
    per_dim = [bins] * d if isinstance(bins, numbers.Integral) else list(bins)
    if len(per_dim) != d:
        raise ValueError(f"histogramdd: the dimension of bins ({len(per_dim)}) must equal the "
                         f"dimension of the sample ({d})")
    ranges = [None] * d if range is None else list(range)
    for i, b in enumerate(per_dim):
        _known(b, "histogramdd", "bins")
        _need_range(b, ranges[i] if i < len(ranges) else None, "histogramdd")
    edges = tuple(np.histogramdd(np.empty((0, d), sample.dtype), bins=bins, range=range)[1])
    sample = joined(sample, [1], "histogramdd")
    if weights is not None:
        weights = asarray(weights)
        if weights.ndim != 1 or not _same_lengths(weights, sample[:, 0]):
            raise ValueError(f"histogramdd: weights must be one per point, shape "
                             f"({sample.shape[0]},); got {weights.shape}")
        if weights.chunks[0] != sample.chunks[0]:
            weights = weights.rechunk((sample.chunks[0],))
    letters = "abcdefghijklmnopqrstuvwxyz"[:d]
    sizes = {c: (len(e) - 1,) for c, e in zip(letters, edges)}
    inputs: list[Any] = [sample, "nd"] + ([weights, "n"] if weights is not None else [])
    dtype = np.histogramdd(np.empty((0, d), sample.dtype), bins=edges, weights=None
                           if weights is None else np.empty(0, weights.dtype))[0].dtype
    partials = blockwise(_dd_block, "n" + letters.upper(), *inputs,
                         new_axes={c.upper(): s for c, s in sizes.items()},
                         adjust_chunks={"n": 1}, concatenate=True, dtype=dtype,
                         bins=list(per_dim), range_=range, name="histogramdd")
    counts = _sum(partials, axis=0, dtype=dtype)
    return (_density(counts, list(edges)) if density else counts), edges


def histogram2d(x: Any, y: Any, bins: Any = 10, range: Any = None, density: Any = None,
                weights: Any = None) -> tuple[Array, np.ndarray, np.ndarray]:
    """The counts of the points ``(x[i], y[i])`` in a grid of bins, and the edges along
    ``x`` and ``y``, as ``numpy.histogram2d`` (``bins``: a number or edges for both, or a
    pair; a number of bins needs ``range=[(xlow, xhigh), (ylow, yhigh)]``).

    >>> import numpy as np, xsched.array as xa
    >>> x = xa.from_array(np.array([0.1, 0.9, 0.8]), chunks=2)
    >>> y = xa.from_array(np.array([0.1, 0.2, 0.9]), chunks=2)
    >>> xa.histogram2d(x, y, bins=2, range=[(0, 1), (0, 1)])[0].compute().tolist()
    [[1.0, 0.0], [1.0, 1.0]]
    """
    x, y = asarray(x), asarray(y)
    if x.ndim != 1 or y.ndim != 1 or not _same_lengths(x, y):
        raise ValueError(f"histogram2d: x and y must be 1-d of the same length; got shapes "
                         f"{x.shape} and {y.shape}")
    bins = _known(bins, "histogram2d", "bins")
    try:
        n = len(bins)
    except TypeError:
        n = 1
    if n != 1 and n != 2:
        bins = [np.asarray(bins), np.asarray(bins)]
    counts, edges = histogramdd([x, y], bins, range, density, weights)
    return counts, edges[0], edges[1]


# --------------------------------------------------------------------------- bincount


def _bincount_block(block: np.ndarray, weights: np.ndarray | None = None, *,
                    minlength: int) -> np.ndarray:
    """A block's counts, as the single element of an object array (their length varies)."""
    out = np.empty(1, object)
    out[0] = np.bincount(block, weights=weights, minlength=minlength)
    return out


def _add_counts(parts: np.ndarray, axis: Any = None, keepdims: bool = False) -> np.ndarray:
    longest = max(len(p) for p in parts)
    total = np.zeros(longest, parts[0].dtype)
    for p in parts:
        total[:len(p)] += p
    out = np.empty(1, object)
    out[0] = total
    return out


def _final_counts(parts: np.ndarray, axis: Any = None, keepdims: bool = False, *,
                  minlength: int) -> np.ndarray:
    total = _add_counts(parts)[0]
    if minlength and len(total) > minlength:
        raise ValueError(f"bincount: x holds the value {len(total) - 1}, past "
                         f"minlength={minlength}, the length given to the result; give a "
                         f"larger minlength, or none (the length is then found when computed)")
    return total


def bincount(x: Any, weights: Any = None, minlength: int = 0) -> Array:
    """The number of occurrences of each value ``0, 1, ..., max(x)`` in the 1-d array of
    non-negative integers ``x`` (the sum of ``weights`` there, if given), as
    ``numpy.bincount``. With ``minlength`` the result has that length (a larger value fails
    when computed); without it, its length is unknown until computed.

    >>> import numpy as np, xsched.array as xa
    >>> x = xa.from_array(np.array([1, 1, 3]), chunks=2)
    >>> c = xa.bincount(x)
    >>> c.shape, c.compute().tolist()
    ((nan,), [0, 2, 0, 1])
    >>> xa.bincount(x, weights=np.array([0.5, 0.5, 2.0]), minlength=5).compute().tolist()
    [0.0, 1.0, 0.0, 2.0, 0.0]
    """
    x = asarray(x)
    minlength = int(minlength) if minlength is not None else 0
    if x.ndim != 1:
        raise ValueError(f"bincount: x must be 1-d; got shape {x.shape}")
    if minlength < 0:
        raise ValueError(f"bincount: minlength must not be negative, got {minlength}")
    args = [x] + _weights(weights, x, "bincount", "the weights and list don't have the same length; shapes")
    if len(args) == 2 and args[1].chunks != x.chunks:  # each block counted with its own weights
        args = unify_chunks(args, x.shape)
        x = args[0]
    np.bincount(np.empty(0, x.dtype))  # (NumPy's error for values that are not integers)
    dtype = np.dtype(np.intp if weights is None else np.float64)
    partials = map_blocks(_bincount_block, *args, minlength=minlength,
                          chunks=((1,) * x.numblocks[0],), dtype=object, name="bincount")
    total = reduction(partials, _bincount_identity, functools.partial(
        _final_counts, minlength=minlength), axis=0, combine=_add_counts, dtype=dtype,
        name="bincount")
    # the aggregate's single block (key "<name>-0") is the whole result, of the length found
    return Array(total._graph, total.name, ((minlength or np.nan,),), dtype)


def _bincount_identity(block: np.ndarray, axis: Any = None, keepdims: bool = False) -> np.ndarray:
    return block


# --------------------------------------------------------------------------- digitize


def digitize(x: Any, bins: Any, right: bool = False) -> Array:
    """The index of the bin of each value of ``x`` (``bins``: 1-d, increasing or decreasing,
    known when written), as ``numpy.digitize``: element by element, one task per block.

    >>> import numpy as np, xsched.array as xa
    >>> x = xa.from_array(np.array([0.2, 6.4, 3.0, 1.6]), chunks=3)
    >>> xa.digitize(x, np.array([0.0, 1.0, 2.5, 4.0, 10.0])).compute().tolist()
    [1, 4, 3, 2]
    """
    x = asarray(x)
    bins = np.asarray(_known(bins, "digitize", "bins", "every block is compared with all of them"))
    dtype = np.digitize(np.empty(0, x.dtype), bins, right=right).dtype
    return map_blocks(np.digitize, x, bins=bins, right=bool(right), dtype=dtype, name="digitize")
