"""``assert_eq`` for one's own tests: an xsched array against NumPy (or another xsched
array), checking what a comparison of values cannot see: the computed result must have the
shape and dtype the array promised when it was built (the operations chained after it were
planned with those).

>>> import numpy as np, xsched.array as xa
>>> xa.assert_eq(xa.arange(6, chunks=4) * 2, np.arange(6) * 2)
True
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .core import Array

__all__ = ["assert_eq"]


def _computed(x: Any, what: str, check_dtype: bool) -> Any:
    if not isinstance(x, Array):
        return np.asarray(x)
    result = np.asarray(x.compute())
    promised = tuple(n for n in x.shape)
    if len(promised) != result.ndim or any(p == p and p != r for p, r in zip(promised, result.shape)):
        raise AssertionError(f"{what}: the result's shape is {result.shape}, the array promised {x.shape}")
    if check_dtype and result.dtype != x.dtype:
        raise AssertionError(f"{what}: the result's dtype is {result.dtype}, the array promised {x.dtype}")
    return result


def assert_eq(a: Any, b: Any, check_shape: bool = True, check_dtype: bool = True, equal_nan: bool = True,
              rtol: float = 1e-7, atol: float = 0.0) -> bool:
    """Raise ``AssertionError`` unless ``a`` and ``b`` (xsched arrays, NumPy arrays, lists or
    scalars) hold the same values (floats within ``rtol``/``atol``, NaN equal to NaN with
    ``equal_nan``); an xsched side is computed and must have the shape and dtype it promised.
    With ``check_dtype`` the two dtypes must also be the same; ``check_shape=False`` lets
    the values broadcast.

    >>> import numpy as np, xsched.array as xa
    >>> x = xa.from_array(np.array([[1.0, np.nan], [3.0, 4.0]]), chunks=1)
    >>> xa.assert_eq(x.T, np.array([[1.0, 3.0], [np.nan, 4.0]]))
    True
    """
    left = _computed(a, "the first argument", check_dtype)
    right = _computed(b, "the second argument", check_dtype)
    if check_shape and left.shape != right.shape:
        raise AssertionError(f"shapes differ: {left.shape} against {right.shape}")
    if check_dtype and left.dtype != right.dtype:
        raise AssertionError(f"dtypes differ: {left.dtype} against {right.dtype}")
    if left.dtype.kind in "fc" or right.dtype.kind in "fc":
        np.testing.assert_allclose(left, right, rtol=rtol, atol=atol, equal_nan=equal_nan)
    else:
        np.testing.assert_array_equal(left, right)
    return True
