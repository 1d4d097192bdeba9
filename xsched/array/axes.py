"""Axis arguments read as NumPy reads them: a user's ``axis`` becomes non-negative ints here,
or is refused when the expression is built, naming the function (an ``AxisError`` when out
of bounds, as NumPy's; a ``TypeError`` when not an integer). Every function of
``xsched.array`` that takes an axis reads it through this module; it imports nothing of the
package, so any module may.

>>> axis_index(-1, 3, "sum"), axis_tuple((0, -1), 3, "flip"), reduced_axes(None, 2, "sum")
(2, (0, 2), (0, 1))
>>> axis_index(3, 3, "cumsum")
Traceback (most recent call last):
...
numpy.exceptions.AxisError: cumsum: axis 3 is out of bounds for an array of dimension 3
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

__all__ = ["axis_index", "axis_tuple", "reduced_axes"]


def axis_index(axis: Any, ndim: int, what: str) -> int:
    """One axis of an array of ``ndim`` dimensions, counted from 0 (-1 is the last)."""
    try:
        number = operator.index(axis)
    except TypeError:
        raise TypeError(f"{what}: axis {axis!r}: {type(axis).__name__!r} object cannot be interpreted as an "
                        "integer") from None
    if not -ndim <= number < ndim:
        raise np.exceptions.AxisError(f"{what}: axis {axis!r} is out of bounds for an array of dimension {ndim}")
    return number % ndim


def axis_tuple(axis: Any, ndim: int, what: str) -> tuple[int, ...]:
    """One axis or several (any sequence of them), in the order given, none twice."""
    try:
        axes: tuple = (operator.index(axis),)
    except TypeError:
        try:
            axes = tuple(axis)
        except TypeError:  # (one axis that is no integer: axis_index names it)
            axes = (axis,)
    out = tuple(axis_index(a, ndim, what) for a in axes)
    if len(set(out)) != len(out):
        raise ValueError(f"{what}: axis {axis} lists an axis twice")
    return out


def reduced_axes(axis: Any, ndim: int, what: str) -> tuple[int, ...]:
    """The axes a reduction runs over, in increasing order: all of them for None."""
    return tuple(range(ndim)) if axis is None else tuple(sorted(axis_tuple(axis, ndim, what)))
