"""Masked arrays: ``xa.ma``, numpy.ma's functions block by block.

A block may be a ``numpy.ma.MaskedArray``. Each function here runs numpy.ma's function of the
same name on every block, elementwise, so blocks stay where they are and broadcast as NumPy
broadcasts. The rest of ``xsched.array`` keeps the masks: blocks join with numpy.ma's
``concatenate`` (``joins.py``), so slicing, rechunking and ``compute()`` give masked arrays;
the reductions count only the unmasked values, as numpy.ma's do (``sum``, ``mean``, ``var``,
``std``, ``min``, ``max``, ``prod``, ``any``, ``all``, ``argmax``, ``argmin``, and ``cumsum``
/ ``cumprod``, which carry the running value past masked cells); a cell with no value left is
masked. Arithmetic runs NumPy's ufuncs on the blocks (``x / y`` is ``np.true_divide``),
which carry masks but, unlike numpy.ma's operators, do not mask a NaN or infinite result:
``xa.ma.masked_invalid`` of the result does.

>>> import numpy as np, xsched.array as xa
>>> x = xa.from_array(np.array([1.0, -999.0, 3.0, 4.0]), chunks=2)
>>> m = xa.ma.masked_equal(x, -999.0)
>>> m.compute()
masked_array(data=[1.0, --, 3.0, 4.0],
             mask=[False,  True, False, False],
       fill_value=-999.0)
>>> float(m.mean()), int(xa.ma.count(m)), xa.ma.filled(m, 0).compute().tolist()
(2.6666666666666665, 3, [1.0, 0.0, 3.0, 4.0])
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .core import Array, elemwise
from .creation import asarray

__all__ = ["masked_array", "masked_where", "masked_equal", "masked_not_equal", "masked_greater",
           "masked_greater_equal", "masked_less", "masked_less_equal", "masked_inside", "masked_outside",
           "masked_values", "masked_invalid", "fix_invalid", "filled", "getdata", "getmaskarray",
           "set_fill_value", "count", "average", "where", "ones_like", "zeros_like", "empty_like"]


def _same_shape(a: Array, other: Any, what: str, op: str) -> None:
    """numpy.ma's refusal of a mask or condition shaped unlike the data, when built."""
    shape = np.shape(other)
    if shape and shape != a.shape:
        raise IndexError(f"{op}: {what} of shape {shape} does not match the data's shape {a.shape}")


def _masked_array(data: np.ndarray, mask: Any, fill_value: Any) -> np.ndarray:
    return np.ma.masked_array(data, mask=mask, fill_value=fill_value)


def masked_array(data: Any, mask: Any = np.ma.nomask, fill_value: Any = None) -> Array:
    """``data`` with ``mask`` (True where a value is missing; an array shaped as ``data``,
    lazy or not, or one bool), as ``numpy.ma.masked_array``.

    >>> import numpy as np, xsched.array as xa
    >>> x = xa.ma.masked_array(xa.arange(4, chunks=2), mask=[False, True, False, True])
    >>> x.sum().compute()
    np.int64(2)
    """
    data = asarray(data)
    _same_shape(data, mask, "mask", "masked_array")
    return elemwise(_masked_array, data, mask, fill_value=fill_value, dtype=data.dtype, name="masked_array")


def _masked_where(condition: np.ndarray, a: np.ndarray) -> np.ndarray:
    return np.ma.masked_where(condition, a)


def masked_where(condition: Any, a: Any) -> Array:
    """``a`` masked where ``condition`` (shaped as ``a``) is true, as
    ``numpy.ma.masked_where``; masks ``a`` had stay.

    >>> import numpy as np, xsched.array as xa
    >>> x = xa.arange(5, chunks=2)
    >>> xa.ma.masked_where(x % 2 == 1, x).compute().tolist()
    [0, None, 2, None, 4]
    """
    a = asarray(a)
    _same_shape(a, condition, "the condition", "masked_where")
    return elemwise(_masked_where, condition, a, dtype=a.dtype, name="masked_where")


def _per_block(func: Any, a: Any, *args: Any, name: str | None = None) -> Array:
    """``func(block, *args)`` of every block of ``a``, keeping ``a``'s dtype."""
    a = asarray(a)
    return elemwise(func, a, extra_args=args, dtype=a.dtype, name=name)


def masked_equal(x: Any, value: Any) -> Array:
    """``x`` masked where it equals ``value``, which becomes the fill value, as
    ``numpy.ma.masked_equal``.

    >>> import numpy as np, xsched.array as xa
    >>> xa.ma.masked_equal(xa.arange(4, chunks=2), 2).compute().tolist()
    [0, 1, None, 3]
    """
    return _per_block(np.ma.masked_equal, x, value)


def masked_not_equal(x: Any, value: Any) -> Array:
    """``x`` masked where it differs from ``value``, as ``numpy.ma.masked_not_equal``.

    >>> import numpy as np, xsched.array as xa
    >>> xa.ma.masked_not_equal(xa.arange(4, chunks=2), 2).compute().tolist()
    [None, None, 2, None]
    """
    return _per_block(np.ma.masked_not_equal, x, value)


def masked_greater(x: Any, value: Any) -> Array:
    """``x`` masked where it is greater than ``value``, as ``numpy.ma.masked_greater``.

    >>> import numpy as np, xsched.array as xa
    >>> xa.ma.masked_greater(xa.arange(4, chunks=2), 2).compute().tolist()
    [0, 1, 2, None]
    """
    return _per_block(np.ma.masked_greater, x, value)


def masked_greater_equal(x: Any, value: Any) -> Array:
    """``x`` masked where it is ``value`` or more, as ``numpy.ma.masked_greater_equal``.

    >>> import numpy as np, xsched.array as xa
    >>> xa.ma.masked_greater_equal(xa.arange(4, chunks=2), 2).compute().tolist()
    [0, 1, None, None]
    """
    return _per_block(np.ma.masked_greater_equal, x, value)


def masked_less(x: Any, value: Any) -> Array:
    """``x`` masked where it is less than ``value``, as ``numpy.ma.masked_less``.

    >>> import numpy as np, xsched.array as xa
    >>> xa.ma.masked_less(xa.arange(4, chunks=2), 2).compute().tolist()
    [None, None, 2, 3]
    """
    return _per_block(np.ma.masked_less, x, value)


def masked_less_equal(x: Any, value: Any) -> Array:
    """``x`` masked where it is ``value`` or less, as ``numpy.ma.masked_less_equal``.

    >>> import numpy as np, xsched.array as xa
    >>> xa.ma.masked_less_equal(xa.arange(4, chunks=2), 2).compute().tolist()
    [None, None, None, 3]
    """
    return _per_block(np.ma.masked_less_equal, x, value)


def masked_inside(x: Any, v1: Any, v2: Any) -> Array:
    """``x`` masked from ``v1`` to ``v2`` (both included, in either order), as
    ``numpy.ma.masked_inside``.

    >>> import numpy as np, xsched.array as xa
    >>> xa.ma.masked_inside(xa.arange(5, chunks=2), 3, 1).compute().tolist()
    [0, None, None, None, 4]
    """
    return _per_block(np.ma.masked_inside, x, v1, v2)


def masked_outside(x: Any, v1: Any, v2: Any) -> Array:
    """``x`` masked outside ``v1`` to ``v2`` (both kept), as ``numpy.ma.masked_outside``.

    >>> import numpy as np, xsched.array as xa
    >>> xa.ma.masked_outside(xa.arange(5, chunks=2), 1, 3).compute().tolist()
    [None, 1, 2, 3, None]
    """
    return _per_block(np.ma.masked_outside, x, v1, v2)


def _masked_values(x: np.ndarray, value: Any, rtol: float, atol: float) -> np.ndarray:
    return np.ma.masked_values(x, value, rtol=rtol, atol=atol, shrink=False)


def masked_values(x: Any, value: Any, rtol: float = 1e-05, atol: float = 1e-08) -> Array:
    """``x`` masked where it is close to ``value`` (floats: ``numpy.isclose``; other
    dtypes: equal), as ``numpy.ma.masked_values``.

    >>> import numpy as np, xsched.array as xa
    >>> xa.ma.masked_values(xa.from_array(np.array([1.0, 1.1, 1.0000001]), chunks=2), 1.0).compute().tolist()
    [None, 1.1, None]
    """
    return _per_block(_masked_values, x, value, rtol, atol, name="masked_values")


def masked_invalid(a: Any) -> Array:
    """``a`` masked where it is NaN or infinite, as ``numpy.ma.masked_invalid``.

    >>> import numpy as np, xsched.array as xa
    >>> float(xa.ma.masked_invalid(xa.from_array(np.array([1.0, np.nan, np.inf, 3.0]), chunks=2)).mean())
    2.0
    """
    return _per_block(np.ma.masked_invalid, a)


def _fix_invalid(a: np.ndarray, fill_value: Any) -> np.ndarray:
    return np.ma.fix_invalid(a, fill_value=fill_value)


def fix_invalid(a: Any, fill_value: Any = None) -> Array:
    """``a`` masked where it is NaN or infinite, those values replaced by ``fill_value`` (the
    dtype's default fill value when None) under the mask, as ``numpy.ma.fix_invalid``.

    >>> import numpy as np, xsched.array as xa
    >>> f = xa.ma.fix_invalid(xa.from_array(np.array([1.0, np.nan]), chunks=1), fill_value=0.0)
    >>> xa.ma.getdata(f).compute().tolist(), xa.ma.getmaskarray(f).compute().tolist()
    ([1.0, 0.0], [False, True])
    """
    return _per_block(_fix_invalid, a, fill_value, name="fix_invalid")


def filled(a: Any, fill_value: Any = None) -> Array:
    """``a`` as a plain array, masked values replaced by ``fill_value`` (each block's own fill
    value when None), as ``numpy.ma.filled``.

    >>> import numpy as np, xsched.array as xa
    >>> xa.ma.filled(xa.ma.masked_less(xa.arange(4, chunks=2), 2), -1).compute().tolist()
    [-1, -1, 2, 3]
    """
    return _per_block(np.ma.filled, a, fill_value)


def getdata(a: Any) -> Array:
    """The values under the mask, as a plain array, as ``numpy.ma.getdata``.

    >>> import numpy as np, xsched.array as xa
    >>> xa.ma.getdata(xa.ma.masked_equal(xa.arange(3, chunks=2), 1)).compute().tolist()
    [0, 1, 2]
    """
    return _per_block(np.ma.getdata, a)


def getmaskarray(a: Any) -> Array:
    """The mask as a bool array of ``a``'s shape (all False for a plain block), as
    ``numpy.ma.getmaskarray``.

    >>> import numpy as np, xsched.array as xa
    >>> xa.ma.getmaskarray(xa.ma.masked_equal(xa.arange(3, chunks=2), 1)).compute().tolist()
    [False, True, False]
    """
    return elemwise(np.ma.getmaskarray, asarray(a), dtype=bool)


def _set_fill_value(a: np.ndarray, fill_value: Any) -> np.ndarray:
    out = np.ma.masked_array(a, copy=True)  # (the block is another task's result: not changed)
    out.set_fill_value(fill_value)
    return out


def set_fill_value(a: Array, fill_value: Any) -> None:
    """Set the fill value of ``a``'s blocks: ``a`` now names the blocks with it, as
    ``numpy.ma.set_fill_value`` changes its array in place (and returns None). A value the
    dtype cannot hold fails now, as NumPy's.

    >>> import numpy as np, xsched.array as xa
    >>> m = xa.ma.masked_equal(xa.arange(3, chunks=2), 1)
    >>> xa.ma.set_fill_value(m, -7)
    >>> xa.ma.filled(m).compute().tolist()
    [0, -7, 2]
    """
    if not isinstance(a, Array):
        raise TypeError(f"set_fill_value: a must be an xsched array, got {type(a).__name__}")
    if np.ndim(fill_value):
        raise ValueError("set_fill_value: the fill value must be one value, not an array")
    fill_value = np.ma.core._check_fill_value(fill_value, a.dtype)
    new = _per_block(_set_fill_value, a, fill_value, name="set_fill_value")
    a._graph, a.name, a.chunks = new._graph, new.name, new.chunks


def count(a: Any, axis: Any = None, keepdims: bool = False) -> Array:
    """The number of unmasked values over ``axis``, as ``numpy.ma.count``.

    >>> import numpy as np, xsched.array as xa
    >>> m = xa.ma.masked_greater(xa.from_array(np.arange(6).reshape(2, 3), chunks=1), 3)
    >>> xa.ma.count(m, axis=1).compute().tolist()
    [3, 1]
    """
    return (~getmaskarray(a)).sum(axis=axis, keepdims=keepdims, dtype=np.intp)


def average(a: Any, axis: Any = None, weights: Any = None, returned: bool = False,
            keepdims: bool = False) -> Any:
    """The weighted mean of the unmasked values over ``axis``, as ``numpy.ma.average``:
    ``weights`` shaped as ``a``, or 1-d along ``axis``; with ``returned`` also the sum of
    the weights of the values counted.

    >>> import numpy as np, xsched.array as xa
    >>> m = xa.ma.masked_equal(xa.from_array(np.array([1.0, 0.0, 3.0]), chunks=2), 0.0)
    >>> float(xa.ma.average(m, weights=[3.0, 1.0, 1.0]))
    1.5
    """
    a = asarray(a)
    if a.dtype.kind not in "fc":
        a = a.astype(np.result_type(a.dtype, np.float64))
    unmasked = ~getmaskarray(a)
    if weights is None:
        total, weight = a.sum(axis=axis, keepdims=keepdims), unmasked.sum(axis=axis, keepdims=keepdims)
    else:
        w = asarray(weights)
        if w.shape != a.shape:
            if axis is None or not isinstance(axis, (int, np.integer)) or w.ndim != 1:
                raise TypeError(f"average: weights of shape {w.shape} differ from a's {a.shape}; give one weight "
                                "per value, or a 1-d array along one axis (axis=)")
            ax = int(axis) % a.ndim
            if w.shape[0] != a.shape[ax]:
                raise ValueError(f"average: {w.shape[0]} weights, but axis {ax} of a (shape {a.shape}) has "
                                 f"{a.shape[ax]} values")
            w = w.reshape((-1,) + (1,) * (a.ndim - 1 - ax))
        total = (a * w).sum(axis=axis, keepdims=keepdims)
        weight = (w * unmasked).sum(axis=axis, keepdims=keepdims)
    mean = elemwise(np.ma.divide, total, weight)  # (numpy.ma's division: a NaN or infinite mean is masked)
    if not returned:
        return mean
    # (numpy.ma masks the weights of masked values: their sum is masked where none is left)
    none_left = unmasked.sum(axis=axis, keepdims=keepdims) == 0
    return mean, masked_where(none_left, weight.astype(mean.dtype))


def where(condition: Any, x: Any, y: Any) -> Array:
    """``x`` where ``condition`` is true, ``y`` elsewhere, masks carried with the values
    chosen (and masked where ``condition`` is), as ``numpy.ma.where``.

    >>> import numpy as np, xsched.array as xa
    >>> m = xa.ma.masked_equal(xa.arange(4, chunks=2), 1)
    >>> xa.ma.where(m > 1, m, -m).compute().tolist()
    [0, None, 2, 3]
    """
    dtype = np.result_type(*(a.dtype if hasattr(a, "dtype") else np.asarray(a).dtype for a in (x, y)))
    return elemwise(np.ma.where, condition, x, y, dtype=dtype)


def ones_like(a: Any) -> Array:
    """Ones shaped, chunked and masked as ``a``, as ``numpy.ma.ones_like``.

    >>> import numpy as np, xsched.array as xa
    >>> xa.ma.ones_like(xa.ma.masked_equal(xa.arange(3, chunks=2), 1)).compute().tolist()
    [1, None, 1]
    """
    return _per_block(np.ma.ones_like, a)


def zeros_like(a: Any) -> Array:
    """Zeros shaped, chunked and masked as ``a``, as ``numpy.ma.zeros_like``.

    >>> import numpy as np, xsched.array as xa
    >>> xa.ma.zeros_like(xa.ma.masked_equal(xa.arange(3, chunks=2), 1)).compute().tolist()
    [0, None, 0]
    """
    return _per_block(np.ma.zeros_like, a)


def empty_like(a: Any) -> Array:
    """Uninitialized values shaped, chunked and masked as ``a``, as ``numpy.ma.empty_like``.

    >>> import numpy as np, xsched.array as xa
    >>> xa.ma.getmaskarray(xa.ma.empty_like(xa.ma.masked_equal(xa.arange(3, chunks=2), 1))).compute().tolist()
    [False, True, False]
    """
    return _per_block(np.ma.empty_like, a)
