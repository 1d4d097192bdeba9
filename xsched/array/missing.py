"""``isnull`` and ``notnull``: which elements are missing in pandas' sense, element by
element: NaN in floating and complex data, NaT in datetimes and timedeltas, and ``None``,
NaN, NaT or pandas' ``NA`` in object arrays (a value unequal to itself); integers, booleans
and strings are never missing. NumPy alone answers, so pandas is not needed.

>>> import numpy as np, xsched.array as xa
>>> x = xa.from_array(np.array([1.0, np.nan, 3.0]), chunks=2)
>>> xa.isnull(x).compute().tolist(), xa.notnull(x).compute().tolist()
([False, True, False], [True, False, True])
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .core import Array, elemwise
from .creation import asarray

__all__ = ["isnull", "notnull"]


def _missing(value: Any) -> bool:
    if value is None:
        return True
    try:
        return bool(value != value)
    except TypeError:  # pandas' NA: its comparisons are NA, which has no truth value
        return True


_missing_each = np.frompyfunc(_missing, 1, 1)


def _isnull(block: np.ndarray) -> np.ndarray:
    kind = block.dtype.kind
    if kind in "fc":
        return np.isnan(block)
    if kind in "mM":
        return np.isnat(block)
    if kind == "O":
        return np.asarray(_missing_each(block), dtype=bool).reshape(block.shape)
    return np.zeros(block.shape, bool)


def _notnull(block: np.ndarray) -> np.ndarray:
    return ~_isnull(block)


def isnull(values: Any) -> Array:
    """Whether each element is missing (NaN, NaT, None), as ``pandas.isnull``.

    >>> import numpy as np, xsched.array as xa
    >>> xa.isnull(xa.from_array(np.array([None, "a"], dtype=object), chunks=1)).compute().tolist()
    [True, False]
    """
    return elemwise(_isnull, asarray(values), dtype=bool, name="isnull")


def notnull(values: Any) -> Array:
    """Whether each element is present: the opposite of ``isnull``.

    >>> import numpy as np, xsched.array as xa
    >>> x = xa.from_array(np.array(["2024-01-01", "NaT"], "M8[D]"), chunks=1)
    >>> xa.notnull(x).compute().tolist()
    [True, False]
    """
    return elemwise(_notnull, asarray(values), dtype=bool, name="notnull")
