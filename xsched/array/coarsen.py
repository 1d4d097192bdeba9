"""``coarsen``: a reduction over fixed-size neighbourhoods, ``coarsen(np.mean, x, {0: 2})``
averaging every two rows.

Each axis of ``axes`` is rechunked (only where needed) so that every block holds whole
neighbourhoods, its lengths multiples of the factor; then every block reshapes on its own,
each axis ``n`` to ``(n // factor, factor)``, and the reduction runs over the factor axes:
one task per block and no block meets another. An axis whose length is no multiple of its
factor is refused, unless ``trim_excess`` drops the last ``n % factor`` elements.

>>> import numpy as np, xsched.array as xa
>>> x = xa.from_array(np.arange(24).reshape(4, 6), chunks=(3, 4))
>>> xa.coarsen(np.min, x, {0: 2, 1: 3}).compute().tolist()
[[0, 3], [12, 15]]
"""

from __future__ import annotations

import numbers
from typing import Any, Callable

import numpy as np

from .chunks import _starts
from .core import Array
from .mapping import map_blocks
from .creation import asarray
from .axes import axis_index
from .masking import known_chunks_needed

__all__ = ["coarsen"]


def _aligned(chunks: tuple[int, ...], factor: int, length: int) -> tuple[int, ...]:
    """Blocks of the first ``length`` elements cut where the old ones start, each cut moved
    down to a multiple of ``factor`` (empty blocks dropped)."""
    cuts = sorted({s - s % factor for s in _starts(chunks) if s < length} | {0, length})
    return tuple(b - a for a, b in zip(cuts[:-1], cuts[1:]) if b > a) or (0,)


def _coarsen_block(block: np.ndarray, factors: tuple[int, ...], reduction: Callable,
                   kw: dict) -> np.ndarray:
    shape = [n for size, f in zip(block.shape, factors) for n in (size // f, f)]
    return reduction(block.reshape(shape), axis=tuple(range(1, 2 * block.ndim, 2)), **kw)


def coarsen(reduction: Callable, x: Any, axes: dict, trim_excess: bool = False, **kwargs: Any) -> Array:
    """``reduction`` (a NumPy reduction taking ``axis=`` a tuple, such as ``np.sum`` or
    ``np.mean``; ``kwargs`` go to it) over neighbourhoods of ``axes[i]`` elements along each
    axis ``i`` of ``axes``; the other axes are left as they are.

    >>> import numpy as np, xsched.array as xa
    >>> x = xa.from_array(np.arange(8), chunks=3)
    >>> xa.coarsen(np.sum, x, {0: 2}).compute().tolist()
    [1, 5, 9, 13]
    >>> xa.coarsen(np.max, x, {0: 3}, trim_excess=True).compute().tolist()
    [2, 5]
    """
    x = asarray(x)
    if not callable(reduction):
        raise TypeError(f"coarsen: reduction must be a function, got {reduction!r}")
    if getattr(reduction, "__module__", "").startswith("xsched.array"):
        reduction = getattr(np, reduction.__name__)  # (each block is a NumPy array)
    if not isinstance(axes, dict):
        raise TypeError(f"coarsen: axes must be a dict of axis: factor, got {axes!r}")
    known_chunks_needed(x, "coarsen")
    factors = [1] * x.ndim
    for axis, factor in axes.items():
        if isinstance(factor, bool) or not isinstance(factor, numbers.Integral) or factor < 1:
            raise ValueError(f"coarsen: the factor of axis {axis} must be a positive integer, got {factor!r}")
        factors[axis_index(axis, x.ndim, "coarsen")] = int(factor)
    if not trim_excess and any(n % f for n, f in zip(x.shape, factors)):
        raise ValueError(f"coarsen: coarsening factors {axes} do not align with array shape {x.shape}; "
                         "pass trim_excess=True to drop the elements left over")
    keep = tuple(n - n % f for n, f in zip(x.shape, factors))
    if keep != x.shape:
        x = x[tuple(slice(0, n) for n in keep)]
    aligned = tuple(_aligned(c, f, n) if f > 1 else c for c, f, n in zip(x.chunks, factors, keep))
    if aligned != x.chunks:
        x = x.rechunk(aligned)
    probe = _coarsen_block(np.ones((1,) * x.ndim, x.dtype), (1,) * x.ndim, reduction, kwargs)
    chunks = tuple(tuple(c // f for c in cs) for cs, f in zip(x.chunks, factors))
    return map_blocks(_coarsen_block, x, tuple(factors), reduction, kwargs, chunks=chunks,
                      dtype=np.asarray(probe).dtype, name="coarsen")
