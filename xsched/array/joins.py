"""Joining blocks: NumPy's ``concatenate``, ``stack`` and a filled ``empty``, or ``numpy.ma``'s
when a block is a masked array.

``np.concatenate`` of masked blocks returns their data and drops the mask, so a block grid of
masked arrays (``x.map_blocks(np.ma.masked_invalid)``, ``xa.ma.masked_where``) came back
unmasked. Every place that puts blocks or partials together calls these instead. Like
``chunks.py`` it sits below every module of ``xsched.array`` and imports none of them.

>>> import numpy as np
>>> concatenate([np.ma.masked_equal([1, 2], 2), np.array([3])]).tolist()
[1, None, 3]
>>> type(stack([np.ones(2), np.zeros(2)])).__name__
'ndarray'
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

__all__ = ["concatenate", "stack", "empty", "masked"]


def masked(parts: Sequence[Any]) -> bool:
    """Whether any of ``parts`` is a masked array."""
    return any(isinstance(p, np.ma.MaskedArray) for p in parts)


def _fill_kept(out: np.ma.MaskedArray, parts: Sequence[Any]) -> np.ma.MaskedArray:
    """``out`` with the fill value its masked parts share (numpy.ma's joins reset it)."""
    fills = {p.fill_value.item() for p in parts  # (numpy.ma.masked, a masked scalar, has none to read)
             if isinstance(p, np.ma.MaskedArray) and p is not np.ma.masked}
    if len(fills) == 1:
        out.set_fill_value(fills.pop())
    return out


def concatenate(parts: Sequence[Any], axis: int = 0) -> Any:
    """``parts`` joined along ``axis``, their masks (and shared fill value) kept if any has one."""
    if masked(parts):
        return _fill_kept(np.ma.concatenate(parts, axis=axis), parts)
    return np.concatenate(parts, axis=axis, dtype=_kept_byte_order(parts))


def _kept_byte_order(parts: Sequence[Any]) -> Any:
    """The parts' one dtype where it is not in this machine's byte order ('>f8' here), which
    NumPy's joins would turn native; None otherwise (NumPy's own result type)."""
    dtypes = {getattr(p, "dtype", None) for p in parts}
    if len(dtypes) == 1:
        (dtype,) = dtypes
        if dtype is not None and not dtype.isnative:
            return dtype
    return None


def stack(parts: Sequence[Any], axis: int = 0) -> Any:
    """``parts`` stacked on a new ``axis``, their masks (and shared fill value) kept if any has one."""
    if masked(parts):
        return _fill_kept(np.ma.stack(parts, axis=axis), parts)
    return np.stack(parts, axis=axis, dtype=_kept_byte_order(parts))


def empty(shape: tuple, dtype: Any, parts: Sequence[Any]) -> Any:
    """An array to fill with ``parts``: a masked one (nothing masked yet, the parts' shared
    fill value) if any is masked."""
    if masked(parts):
        return _fill_kept(np.ma.masked_array(np.empty(shape, dtype), mask=np.zeros(shape, bool)), parts)
    return np.empty(shape, dtype)
