"""Order statistics, weighted means and covariances: ``percentile``, ``quantile``,
``median`` (and their ``nan`` forms), ``average``, ``ptp``, ``count_nonzero``, ``cov``,
``corrcoef`` and the central ``moment``.

A percentile needs every value along its axis at once, and no tree of partial results gives
it exactly; so the axes it reduces are each put in one chunk first (rechunked here, as
long as every block that makes stays within ``array.rechunk.memory``; past that the error
says how big they would be and names the ``rechunk`` that keeps them small). Every block then
runs NumPy's own function, one task per block, and the other axes keep their blocks. The rest are sums in a tree
(``reductions.py``): ``average`` is two sums, ``cov`` a product of the centred data with
itself (``linalg.py``'s tree of block products), ``corrcoef`` that over its diagonal.

>>> import numpy as np, xsched.array as xa
>>> x = xa.from_array(np.array([[1.0, 5.0, 2.0], [4.0, 0.0, 9.0]]), chunks=(1, 3))
>>> xa.median(x, axis=1).compute().tolist()
[2.0, 4.0]
>>> float(xa.average(x, weights=np.ones((2, 3))))
3.5
"""

from __future__ import annotations

import numbers
import warnings
from typing import Any, Callable

import numpy as np

from .core import Array, elemwise
from .mapping import map_blocks
from .creation import asarray, full
from .index_notation import einsum
from .masking import known_chunks_needed
from .manipulation import _PAD_STATS, broadcast_to, concatenate, reshape, squeeze, transpose
from .rechunking import whole_axes
from .axes import axis_tuple, reduced_axes
from .reductions import _check_out, max as _max, mean, min as _min, sum as _sum

__all__ = ["percentile", "quantile", "median", "nanpercentile", "nanquantile", "nanmedian",
           "average", "ptp", "count_nonzero", "cov", "corrcoef", "moment"]


# --------------------------------------------------------------------------- order statistics


def _block_call(block: np.ndarray, weights: np.ndarray | None = None, *, function: Callable,
                q: Any, axes: tuple, keepdims: bool, kwargs: dict) -> np.ndarray:
    args = () if q is None else (q,)
    if weights is not None:
        kwargs = {**kwargs, "weights": weights}
    return np.asarray(function(block, *args, axis=axes, keepdims=keepdims, **kwargs))


def _along(a: Any, func: Callable, name: str, q: Any, axis: Any, keepdims: bool,
           weights: Any = None, **kwargs: Any) -> Array:
    """``func`` (NumPy's percentile, median, ...) per block, over axes each in one chunk;
    the axes of ``q`` lead the result, as in NumPy."""
    a = asarray(a)
    axes = reduced_axes(axis, a.ndim, name)
    a = whole_axes(a, axes, name)
    args = [a]
    dummy_w = None
    if weights is not None:
        weights = asarray(weights)
        if weights.shape != a.shape:
            if len(axes) != 1 or weights.shape != (a.shape[axes[0]],):
                raise ValueError(f"{name}: weights must have the shape of a {a.shape}, or be 1-d "
                                 f"along the one axis reduced; got {weights.shape}")
            shape = tuple(-1 if i == axes[0] else 1 for i in range(a.ndim))
            weights = broadcast_to(reshape(weights, shape), a.shape)
        args.append(weights.rechunk(a.chunks))
        dummy_w = np.ones((1,) * a.ndim, weights.dtype)
    if q is not None and type(q) not in (int, float):  # (a Python number stays weak, as NumPy keeps it)
        q = np.asarray(q)
    sample = _block_call(np.ones((1,) * a.ndim, a.dtype), dummy_w, function=func, q=q, axes=axes,
                         keepdims=keepdims, kwargs=kwargs)  # (NumPy's errors for q, method, ...)
    q_chunks = () if q is None else tuple((n,) for n in np.shape(q))
    kept = [(1,) if i in axes else c for i, c in enumerate(a.chunks)
            if keepdims or i not in axes]
    chunks = None
    if q_chunks or keepdims:  # (the blocks of the axes kept are given, so must be known)
        known_chunks_needed(a, f"{name} with keepdims or an array of q")
        chunks = q_chunks + tuple(kept)
    return map_blocks(_block_call, *args, function=func, q=q, axes=axes, keepdims=keepdims,
                      kwargs=kwargs, chunks=chunks, dtype=sample.dtype,
                      drop_axis=None if keepdims else axes,
                      new_axis=list(range(len(q_chunks))) or None, name=name)


def percentile(a: Any, q: Any, axis: Any = None, out: Any = None, overwrite_input: bool = False,
               method: str = "linear", keepdims: bool = False, *, weights: Any = None) -> Array:
    """The ``q``-th percentiles (0 to 100, a number or an array of them) of ``a`` over
    ``axis``, as ``numpy.percentile`` (``method=``, ``weights=`` as NumPy takes them); each
    axis reduced is put in one chunk (see the module). ``overwrite_input`` changes nothing:
    blocks are never changed in place.

    >>> import numpy as np, xsched.array as xa
    >>> x = xa.from_array(np.arange(12.0).reshape(3, 4), chunks=(1, 4))
    >>> xa.percentile(x, [25, 50], axis=1).compute().tolist()
    [[0.75, 4.75, 8.75], [1.5, 5.5, 9.5]]
    """
    _check_out(out, "percentile")
    return _along(a, np.percentile, "percentile", q, axis, keepdims, weights, method=method)


def quantile(a: Any, q: Any, axis: Any = None, out: Any = None, overwrite_input: bool = False,
             method: str = "linear", keepdims: bool = False, *, weights: Any = None) -> Array:
    """The ``q``-th quantiles (0 to 1) of ``a`` over ``axis``, as ``numpy.quantile``; each
    axis reduced is put in one chunk (see the module).

    >>> import numpy as np, xsched.array as xa
    >>> float(xa.quantile(xa.from_array(np.arange(5.0)), 0.25))
    1.0
    """
    _check_out(out, "quantile")
    return _along(a, np.quantile, "quantile", q, axis, keepdims, weights, method=method)


def median(a: Any, axis: Any = None, out: Any = None, overwrite_input: bool = False,
           keepdims: bool = False) -> Array:
    """The median of ``a`` over ``axis``, as ``numpy.median``; each axis reduced is put
    in one chunk (see the module).

    >>> import numpy as np, xsched.array as xa
    >>> x = xa.from_array(np.array([[3, 1, 2], [6, 5, 4]]), chunks=(1, 3))
    >>> xa.median(x, axis=1, keepdims=True).compute().tolist()
    [[2.0], [5.0]]
    """
    _check_out(out, "median")
    return _along(a, np.median, "median", None, axis, keepdims)


_PAD_STATS["median"] = median  # (pad(mode="median"): manipulation, below this room, imports nothing of it)


def nanpercentile(a: Any, q: Any, axis: Any = None, out: Any = None,
                  overwrite_input: bool = False, method: str = "linear",
                  keepdims: bool = False, *, weights: Any = None) -> Array:
    """``percentile`` ignoring NaNs, as ``numpy.nanpercentile``.

    >>> import numpy as np, xsched.array as xa
    >>> float(xa.nanpercentile(xa.from_array(np.array([1.0, np.nan, 3.0])), 50))
    2.0
    """
    _check_out(out, "nanpercentile")
    return _along(a, np.nanpercentile, "nanpercentile", q, axis, keepdims, weights,
                  method=method)


def nanquantile(a: Any, q: Any, axis: Any = None, out: Any = None,
                overwrite_input: bool = False, method: str = "linear",
                keepdims: bool = False, *, weights: Any = None) -> Array:
    """``quantile`` ignoring NaNs, as ``numpy.nanquantile``.

    >>> import numpy as np, xsched.array as xa
    >>> float(xa.nanquantile(xa.from_array(np.array([1.0, np.nan, 3.0])), 1.0))
    3.0
    """
    _check_out(out, "nanquantile")
    return _along(a, np.nanquantile, "nanquantile", q, axis, keepdims, weights, method=method)


def nanmedian(a: Any, axis: Any = None, out: Any = None, overwrite_input: bool = False,
              keepdims: bool = False) -> Array:
    """``median`` ignoring NaNs, as ``numpy.nanmedian``.

    >>> import numpy as np, xsched.array as xa
    >>> x = xa.from_array(np.array([[np.nan, 1.0, 2.0], [6.0, 5.0, np.nan]]), chunks=(1, 3))
    >>> xa.nanmedian(x, axis=1).compute().tolist()
    [1.5, 5.5]
    """
    _check_out(out, "nanmedian")
    return _along(a, np.nanmedian, "nanmedian", None, axis, keepdims)


# --------------------------------------------------------------------------- sums


def _divide_by_weights(total: np.ndarray, scale: np.ndarray) -> np.ndarray:
    if np.any(scale == 0.0):
        raise ZeroDivisionError("Weights sum to zero, can't be normalized")
    return total / scale


def average(a: Any, axis: Any = None, weights: Any = None, returned: bool = False, *,
            keepdims: bool = False) -> Array | tuple[Array, Array]:
    """The weighted mean of ``a`` over ``axis``, as ``numpy.average``: ``weights`` of
    ``a``'s shape, or of the shape of the axes reduced; ``returned`` also gives the sum of
    the weights (broadcast to the result's shape). Weights summing to zero fail when
    computed, as in NumPy.

    >>> import numpy as np, xsched.array as xa
    >>> x = xa.from_array(np.arange(6.0).reshape(2, 3), chunks=1)
    >>> avg, wsum = xa.average(x, axis=1, weights=[1, 0, 1], returned=True)
    >>> avg.compute().tolist(), wsum.compute().tolist()
    ([1.0, 4.0], [2.0, 2.0])
    """
    a = asarray(a)
    axes = reduced_axes(axis, a.ndim, "average")
    if weights is None:
        avg = mean(a, axis=axes, keepdims=keepdims)
        scale = avg.dtype.type(a.size / avg.size)
        return (avg, broadcast_to(asarray(scale), avg.shape)) if returned else avg
    w = asarray(weights)
    same = w.shape == a.shape or w.chunks == a.chunks  # (unknown lengths: the same mask's blocks)
    if not same:
        if axis is None:
            raise TypeError(f"average: axis must be specified when shapes of a {a.shape} and "
                            f"weights {w.shape} differ")
        given = axis_tuple(axis, a.ndim, "average")
        if w.shape != tuple(a.shape[g] for g in given):
            raise ValueError(f"average: shape of weights {w.shape} must be consistent with "
                             f"shape of a {a.shape} along axis {axis}")
        w = transpose(w, tuple(np.argsort(given)))
        w = reshape(w, tuple(s if i in given else 1 for i, s in enumerate(a.shape)))
    dtype = (np.result_type(a.dtype, w.dtype, "f8") if a.dtype.kind in "biu"
             else np.result_type(a.dtype, w.dtype))
    scale = _sum(w if same else broadcast_to(w, a.shape), axis=axes,
                 dtype=dtype, keepdims=keepdims)
    total = _sum(a.astype(dtype) * w.astype(dtype), axis=axes, dtype=dtype, keepdims=keepdims)
    avg = elemwise(_divide_by_weights, total, scale, dtype=dtype, name="average")
    return (avg, scale) if returned else avg


def ptp(a: Any, axis: Any = None, out: Any = None, keepdims: bool = False) -> Array:
    """The range (maximum minus minimum) of ``a`` over ``axis``, as ``numpy.ptp``, in
    ``a``'s dtype.

    >>> import numpy as np, xsched.array as xa
    >>> xa.ptp(xa.from_array(np.array([[4, 9, 2], [1, 1, 1]]), chunks=2), axis=1).compute().tolist()
    [7, 0]
    """
    _check_out(out, "ptp")
    a = asarray(a)
    if a.dtype == bool:
        raise TypeError("ptp: numpy boolean subtract, the `-` operator, is not supported; "
                        "use a.astype(int) first")
    high, low = _max(a, axis=axis, keepdims=keepdims), _min(a, axis=axis, keepdims=keepdims)
    return elemwise(np.subtract, high, low, dtype=a.dtype, name="ptp")


def moment(a: Any, order: int, axis: Any = None, dtype: Any = None, keepdims: bool = False,
           ddof: int = 0, split_every: Any = None, out: Any = None) -> Array:
    """The ``order``-th central moment of ``a`` over ``axis``: the sum of
    ``(a - mean) ** order`` over ``N - ddof`` (``|a - mean|`` for complex data), in
    ``dtype`` or the dtype ``numpy.var`` gives. Two passes (the mean, then the sum of
    powers), so no digits are lost when the mean is large next to the spread; orders 0 and
    1 are 1 and 0 by definition.

    >>> import numpy as np, xsched.array as xa
    >>> x = xa.from_array(np.array([[1.0, 2.0, 6.0], [0.0, 0.0, 3.0]]), chunks=1)
    >>> xa.moment(x, 3, axis=1).compute().tolist()
    [6.0, 2.0]
    """
    _check_out(out, "moment")
    if isinstance(order, bool) or not isinstance(order, numbers.Integral) or order < 0:
        raise ValueError(f"moment: order must be an integer >= 0, got {order!r}")
    a = asarray(a)
    known_chunks_needed(a, "moment")
    axes = reduced_axes(axis, a.ndim, "moment")
    shape_of = _sum(a, axis=axes, keepdims=keepdims)  # (the result's shape and chunks; not computed)
    if order < 2:
        return full(shape_of.shape, float(order == 0), dtype=np.float64, chunks=shape_of.chunks)
    dtype = np.dtype(dtype) if dtype is not None else np.var(np.ones(1, a.dtype)).dtype
    d = a - mean(a, axis=axes, keepdims=True)
    if d.dtype.kind == "c":
        d = elemwise(np.absolute, d)
    count = int(np.prod([a.shape[i] for i in axes]))
    total = _sum(d ** order, axis=axes, dtype=dtype, keepdims=keepdims, split_every=split_every)
    return elemwise(_over, total, max(count - ddof, 0), dtype=dtype, name="moment")


def _over(total: np.ndarray, count: int) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):  # (no values: NaN, as numpy.var)
        return np.true_divide(total, count)


def _truth(block: np.ndarray) -> np.ndarray:
    return block.astype(bool)


def count_nonzero(a: Any, axis: Any = None, *, keepdims: bool = False) -> Array:
    """The number of values of ``a`` that are not zero (not false) over ``axis``, as
    ``numpy.count_nonzero``.

    >>> import numpy as np, xsched.array as xa
    >>> x = xa.from_array(np.array([[0, 1, 7], [0, 0, 2]]), chunks=1)
    >>> xa.count_nonzero(x, axis=0).compute().tolist(), int(xa.count_nonzero(x))
    ([0, 1, 2], 3)
    """
    a = asarray(a)
    truth = map_blocks(_truth, a, dtype=bool, name="count_nonzero")
    return _sum(truth, axis=axis, dtype=np.intp, keepdims=keepdims)


# --------------------------------------------------------------------------- covariance


def _as_rows(m: Any, rowvar: bool, dtype: np.dtype, what: str) -> Array:
    m = asarray(m)
    if m.ndim > 2:
        raise ValueError(f"{what} has more than 2 dimensions: shape {m.shape}")
    m = m.astype(dtype) if m.dtype != dtype else m
    # NumPy's two rules: a 2-d m is variables by columns whatever its rows; a y of one row is one variable
    by_columns = not rowvar and (m.ndim != 1 if what == "m" else m.ndim == 2 and m.shape[0] != 1)
    if m.ndim < 2:
        m = m[None] if m.ndim == 1 else reshape(m, (1, 1))  # (a new axis: no lengths needed)
    if by_columns:
        m = m.T
    if m.shape[0] != m.shape[0]:
        raise ValueError(f"cov: the number of variables of {what} (its {'rows' if rowvar else 'columns'}) is "
                         "unknown until computed (a boolean mask's result), and the result's shape with it; "
                         "call compute_chunk_sizes() on it first" + (", or pass rowvar=False if its columns are the "
                                                                     "variables" if rowvar else ""))
    return m


def _observation_weights(w: Any, n: int, name: str, integral: bool) -> Array:
    if n != n:
        raise ValueError(f"cov with {name} needs the number of observations, which a boolean mask left unknown; "
                         "call x = x.compute_chunk_sizes() first (it computes only the lengths)")
    if not isinstance(w, Array):
        w = np.asarray(w, dtype=float if not integral else None)
        if integral and not np.all(w == np.around(w)):
            raise TypeError("fweights must be integer")
        if np.any(w < 0):
            raise ValueError(f"{name} cannot be negative")
    w = asarray(w)
    if w.ndim > 1:
        raise RuntimeError(f"cannot handle multidimensional {name}: shape {w.shape}")
    if w.shape[0] != n:
        raise RuntimeError(f"incompatible numbers of samples and {name}: {n} and {w.shape[0]}")
    if integral and w.dtype.kind not in "biu":
        raise TypeError("fweights must be integer")
    return w.astype(float)


def cov(m: Any, y: Any = None, rowvar: bool = True, bias: bool = False, ddof: Any = None,
        fweights: Any = None, aweights: Any = None, *, dtype: Any = None) -> Array:
    """The covariance matrix of the variables in the rows of ``m`` (columns with
    ``rowvar=False``), with those of ``y`` added, as ``numpy.cov`` (``bias``, ``ddof``,
    ``fweights``, ``aweights``, ``dtype``). The centred data is multiplied by its
    transpose in a tree of block products; one variable gives a 0-d array.

    >>> import numpy as np, xsched.array as xa
    >>> x = xa.from_array(np.array([[0.0, 1.0, 2.0], [2.0, 1.0, 0.0]]), chunks=(1, 2))
    >>> xa.cov(x).compute().tolist()
    [[1.0, -1.0], [-1.0, 1.0]]
    """
    if ddof is not None and ddof != int(ddof):
        raise ValueError("ddof must be integer")
    m_dtype = asarray(m).dtype
    if dtype is None:
        dtype = np.result_type(m_dtype, np.float64) if y is None else np.result_type(
            m_dtype, asarray(y).dtype, np.float64)
    dtype = np.dtype(dtype)
    x = _as_rows(m, rowvar, dtype, "m")
    if x.shape[0] == 0:  # (no variables: NumPy's empty float64 matrix, whatever dtype)
        return asarray(np.empty((0, 0)))
    if y is not None:
        x = concatenate([x, _as_rows(y, rowvar, dtype, "y")], axis=0)
    ddof = (0 if bias else 1) if ddof is None else int(ddof)
    n = x.shape[1]
    w = None
    if fweights is not None:
        w = _observation_weights(fweights, n, "fweights", integral=True)
    if aweights is not None:
        aw = _observation_weights(aweights, n, "aweights", integral=False)
        w = aw if w is None else w * aw
    avg, w_sum = average(x, axis=1, weights=w, returned=True)
    if w is None:  # (observations of unknown number, after a boolean mask: counted when computed)
        fact: Any = n - ddof if n == n else _sum(elemwise(np.ones_like, x[0])) - ddof
    elif ddof == 0:
        fact = w_sum[0]
    elif aweights is None:
        fact = w_sum[0] - ddof
    else:
        fact = w_sum[0] - ddof * _sum(w * aw) / w_sum[0]
    if not isinstance(fact, Array) and fact <= 0:
        warnings.warn("Degrees of freedom <= 0 for slice", RuntimeWarning, stacklevel=2)
        fact = 0.0
    elif isinstance(fact, Array):  # (known when computed: none or too few observations give NaN, as NumPy's)
        fact = elemwise(np.maximum, fact, 0.0)
    centred = x - reshape(avg, (-1, 1))
    weighted = centred if w is None else centred * w
    with np.errstate(divide="ignore"):
        scale = 1.0 / fact if isinstance(fact, Array) else np.true_divide(1, fact)
    c = (centred @ weighted.T.conj()) * scale
    return squeeze(c.astype(dtype) if c.dtype != dtype else c)


def _clip_unit(c: np.ndarray) -> np.ndarray:
    if np.iscomplexobj(c):
        return np.clip(c.real, -1, 1) + 1j * np.clip(c.imag, -1, 1)
    return np.clip(c, -1, 1)


def corrcoef(x: Any, y: Any = None, rowvar: bool = True, *, dtype: Any = None) -> Array:
    """The Pearson correlation coefficients of the variables in the rows of ``x`` (with
    those of ``y``), as ``numpy.corrcoef``: ``cov`` over the outer product of its
    diagonal's square roots, clipped to [-1, 1].

    >>> import numpy as np, xsched.array as xa
    >>> x = xa.from_array(np.array([[1.0, 2.0, 4.0], [2.0, 4.0, 8.0]]), chunks=(1, 2))
    >>> np.round(xa.corrcoef(x).compute(), 12).tolist()
    [[1.0, 1.0], [1.0, 1.0]]
    """
    c = cov(x, y, rowvar, dtype=dtype)
    if c.ndim == 0:
        return c / c
    std = elemwise(np.sqrt, einsum("ii->i", c).real)
    with np.errstate(divide="ignore", invalid="ignore"):
        c = c / reshape(std, (-1, 1)) / reshape(std, (1, -1))
    return map_blocks(_clip_unit, c, dtype=c.dtype, name="corrcoef")
