"""``assert_eq`` for one's own tests: an xsched array against NumPy (or another xsched
array), checking what a comparison of values cannot see: every computed block must have the
shape its chunks and the dtype the array promised when it was built (the operations chained
after it were planned with those).

>>> import numpy as np, xsched.array as xa
>>> xa.assert_eq(xa.arange(6, chunks=4) * 2, np.arange(6) * 2)
True
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..graph.delayed import compute
from .core import Array
from .mapping import _concat_grid

__all__ = ["assert_eq"]


def _computed(x: Any, what: str, check_dtype: bool) -> Any:
    """``x`` as NumPy; an xsched array block by block, each block checked against its
    chunks and the dtype (the whole cannot show it: a wrong block shape can add up to the
    right total, and NumPy's concatenation promotes a block of another dtype)."""
    if not isinstance(x, Array):
        return np.asarray(x)
    blocks = x.to_delayed()
    values = [np.asarray(v) for v in compute(*blocks.ravel())]
    for where, block in zip(np.ndindex(blocks.shape), values):
        promised = tuple(c[i] for c, i in zip(x.chunks, where))
        if block.ndim != x.ndim or any(p == p and p != n for p, n in zip(promised, block.shape)):
            raise AssertionError(f"{what}: block {where}'s shape is {block.shape}, the chunks promised "
                                 f"{promised}")
        if check_dtype and not _same_dtype(block.dtype, x.dtype):
            raise AssertionError(f"{what}: block {where}'s dtype is {block.dtype}, the array promised "
                                 f"{x.dtype}")
    result = np.asarray(values[0][()] if x.ndim == 0 else _concat_grid(values, blocks.shape, tuple(range(x.ndim))))
    if check_dtype and result.dtype != x.dtype:
        raise AssertionError(f"{what}: the result's dtype is {result.dtype}, the array promised {x.dtype}")
    return result


def _same_dtype(block: np.dtype, promised: np.dtype) -> bool:
    """Equal, or strings of one kind (a block's may be shorter than the whole's)."""
    return block == promised or (block.kind == promised.kind and block.kind in "SU")


def assert_eq(a: Any, b: Any, check_shape: bool = True, check_dtype: bool = True, equal_nan: bool = True,
              rtol: float = 1e-7, atol: float = 0.0) -> bool:
    """Raise ``AssertionError`` unless ``a`` and ``b`` (xsched arrays, NumPy arrays, lists or
    scalars) hold the same values (floats within ``rtol``/``atol``, NaN equal to NaN with
    ``equal_nan``); an xsched side is computed and must have the shape and dtype it promised.
    With ``check_dtype`` the two dtypes must also be the same; ``check_shape=False`` lets
    the values broadcast against each other.

    >>> import numpy as np, xsched.array as xa
    >>> x = xa.from_array(np.array([[1.0, np.nan], [3.0, 4.0]]), chunks=1)
    >>> xa.assert_eq(x.T, np.array([[1.0, 3.0], [np.nan, 4.0]]))
    True
    """
    left = _computed(a, "the first argument", check_dtype)
    right = _computed(b, "the second argument", check_dtype)
    if check_shape and left.shape != right.shape:
        raise AssertionError(f"shapes differ: {left.shape} against {right.shape}")
    try:
        left, right = np.broadcast_arrays(left, right)
    except ValueError:
        raise AssertionError(f"shapes do not broadcast: {left.shape} against {right.shape}") from None
    if check_dtype and left.dtype != right.dtype:
        raise AssertionError(f"dtypes differ: {left.dtype} against {right.dtype}")
    if left.dtype.kind in "fc" or right.dtype.kind in "fc":
        np.testing.assert_allclose(left, right, rtol=rtol, atol=atol, equal_nan=equal_nan)
    else:
        np.testing.assert_array_equal(left, right)
    return True
