"""NumPy's ``where=`` and ``initial=`` of the reductions ``sum``, ``prod``, ``min``, ``max``,
``mean``, ``any`` and ``all``.

The mask is an elementwise step before the reduction's own tree: the elements it leaves out
are replaced by the reduction's identity (0 for a sum, 1 for a product, False for ``any``,
True for ``all``), or by ``initial`` for ``min`` and ``max``, which have none (NumPy asks
for it then, and so does this). ``initial`` joins each result element once, at the end, as
NumPy counts it; a mean divides by the number of elements the mask kept.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from .axes import reduced_axes
from .core import Array, elemwise
from .creation import asarray, full
from .manipulation import broadcast_to, where as _where
from .masking import cut_alike, known_chunks_needed
from .reductions import WHERE, sum as _sum

__all__ = ["reduce_where"]

#: what an element left out by ``where`` counts as, per reduction that has an identity
IDENTITY = {"sum": 0, "prod": 1, "any": False, "all": True}
#: how ``initial`` joins a result
JOIN = {"sum": np.add, "prod": np.multiply, "min": np.minimum, "max": np.maximum}
_UFUNC = {"min": "minimum", "max": "maximum"}


def _mask(where: Any, x: Array, op: str) -> Array:
    """``where`` as a boolean array of ``x``'s shape (NumPy broadcasts it so, and refuses
    to cast numbers to booleans); a mask cut as ``x`` is, block lengths unknown too
    (``y > 5`` of a masked ``y``), is taken as it is."""
    mask = where if isinstance(where, Array) else asarray(np.asarray(where))
    if mask.dtype != bool:
        raise TypeError(f"{op}(where=...): where must hold booleans, not {mask.dtype} (NumPy does not cast "
                        "them); compare first, e.g. where=(mask != 0)")
    if cut_alike(mask.chunks, x.chunks):
        return mask
    known_chunks_needed(x, f"{op}(where=...) with a mask cut otherwise than the array")
    return broadcast_to(mask, x.shape)


def _initial(op: str, x: Array, initial: Any, dtype: Any) -> Any:
    """``initial`` as NumPy takes it into a result of ``dtype``: NumPy's own reduction of
    nothing with it, so that a value the dtype cannot hold fails as there (OverflowError),
    now rather than wrapping round in a task."""
    kwargs = {"dtype": dtype} if op in ("sum", "prod") else {}
    return getattr(np, op)(np.zeros(0, x.dtype), initial=initial, **kwargs)


def reduce_where(op: str, x: Array, axis: Any, keepdims: bool, reduce: Callable[[Array], Array],
                 initial: Any = None, where: Any = True, dtype: Any = None) -> Array:
    """``reduce`` (the plain reduction of an array over ``axis``) of ``x`` with NumPy's
    ``where`` and ``initial``; ``dtype`` is the result's.

    >>> import numpy as np, xsched.array as xa
    >>> x = xa.from_array(np.array([[1, 5], [7, 2]]), chunks=1)
    >>> xa.sum(x, axis=1, where=np.array([True, False])).compute().tolist()
    [1, 7]
    >>> xa.max(x, axis=0, where=x < 6, initial=0).compute().tolist()
    [1, 5]
    """
    if op == "mean":
        return _mean_where(x, axis, keepdims, where, dtype)
    mask = None if where is True else _mask(where, x, op)
    if mask is not None and op not in IDENTITY and initial is None:
        raise ValueError(f"reduction operation {_UFUNC[op]!r} does not have an identity, so to use a where mask "
                         f"one has to specify 'initial' ({op}(..., where=mask, initial=value))")
    if initial is not None and op in ("min", "max"):  # (the fill of what the mask leaves out)
        initial = _initial(op, x, initial, None)
    fill = IDENTITY.get(op, initial)
    masked = x if mask is None else _where(mask, x, np.asarray(fill).astype(x.dtype))
    axes = reduced_axes(axis, x.ndim, op)
    if initial is not None and any(x.shape[a] == 0 for a in axes):  # (nothing to reduce: initial itself)
        shape = tuple(1 if a in axes else n for a, n in enumerate(x.shape)) if keepdims else \
            tuple(n for a, n in enumerate(x.shape) if a not in axes)
        dtype = x.dtype if op in ("min", "max") else reduce(masked).dtype
        return full(shape, _initial(op, x, initial, dtype), dtype=dtype)
    out = reduce(masked)
    if initial is None:
        return out
    return elemwise(JOIN[op], out, _initial(op, x, initial, out.dtype), dtype=out.dtype)


def _mean_where(x: Array, axis: Any, keepdims: bool, where: Any, dtype: Any) -> Array:
    """NumPy's ``mean(where=)``: the sum of the elements kept over how many were kept (NaN
    where none was, as NumPy's, which also warns)."""
    mask = _mask(where, x, "mean")
    acc = np.result_type(np.dtype(dtype), np.float64) if np.dtype(dtype).kind in "fc" else np.float64
    total = _sum(_where(mask, x, np.asarray(0, dtype=x.dtype)), axis=axis, dtype=acc, keepdims=keepdims)
    kept = _sum(mask, axis=axis, dtype=np.intp, keepdims=keepdims)
    dtype = np.dtype(dtype)
    return elemwise(_divide_quietly, total, kept, dtype=dtype, name="mean-where", result=dtype.str)


def _divide_quietly(total: np.ndarray, kept: np.ndarray, result: str) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.true_divide(total, kept).astype(result, copy=False)


WHERE.append(reduce_where)
