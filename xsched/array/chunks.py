"""Block sizes: turning a user's ``chunks=`` into explicit sizes per axis.

Every module of ``xsched.array`` needs this, including those ``core.py`` imports (rechunking
runs inside elementwise operations), so it sits below them all and imports none of them.

>>> normalize_chunks((2, -1), (5, 3))
((2, 2, 1), (3,))
"""

from __future__ import annotations

import itertools
import numbers
from collections.abc import Mapping
from typing import Any, Sequence

import numpy as np

from .. import config
from ..units import parse_bytes

__all__ = ["Chunks", "normalize_chunks", "common_blocks", "AUTO_CHUNK_BYTES"]

Chunks = tuple[tuple[int, ...], ...]

#: Bytes per block that ``chunks="auto"`` aims for (config ``array.chunk-size`` overrides).
AUTO_CHUNK_BYTES = 128 * 2**20


def _blockdims(size: int, block: int) -> tuple[int, ...]:
    if size == 0:
        return (0,)
    full, rest = divmod(size, block)
    return (block,) * full + ((rest,) if rest else ())


def _axes_of(spec: Mapping, ndim: int) -> None:
    """A dict of chunks names axes of the array (NumPy's AxisError, as dask's, for others;
    an axis named twice, as 1 and -1, is refused too)."""
    seen: set = set()
    for axis in spec:
        if isinstance(axis, bool) or not isinstance(axis, numbers.Integral) or not -ndim <= axis < ndim:
            raise np.exceptions.AxisError(f"chunks: axis {axis!r} is out of bounds for an array of dimension {ndim}")
        if int(axis) % ndim in seen:
            raise ValueError(f"chunks: axis {int(axis) % ndim} is named twice in {spec!r}")
        seen.add(int(axis) % ndim)


def normalize_chunks(chunks: Any, shape: Sequence[int], dtype: Any = None,
                     limit: int | None = None) -> Chunks:
    """Turn a user's chunk spec into explicit block sizes per axis.

    Accepted: an int (same block length on every axis); a tuple with one entry per axis,
    each an int, ``-1`` or ``None`` (the whole axis), ``"auto"``, or a tuple of explicit
    block sizes; a dict ``{axis: spec}`` (other axes whole); or ``"auto"`` (blocks of
    about 128 MiB). A size in bytes (``"64MiB"``) is ``"auto"`` aiming at that size.

    >>> normalize_chunks((100, -1, -1), (250, 16, 16))
    ((100, 100, 50), (16,), (16,))
    >>> normalize_chunks(("800B", -1), (30, 10), dtype="f8")   # 10 rows of 10 float64
    ((10, 10, 10), (10,))
    >>> normalize_chunks(((2, 3), 4), (5, 8))
    ((2, 3), (4, 4))
    """
    shape = tuple(int(s) for s in shape)
    if any(s < 0 for s in shape):  # (numpy's error, rather than an array with no blocks)
        raise ValueError(f"negative dimensions are not allowed (shape {shape})")
    ndim = len(shape)
    if chunks is None:
        raise ValueError("chunks= is required, e.g. chunks=(100, -1, -1) or chunks='auto'")
    if isinstance(chunks, Mapping):
        _axes_of(chunks, ndim)
        chunks = tuple(chunks.get(a, chunks.get(a - ndim, -1)) for a in range(ndim))
    elif isinstance(chunks, (numbers.Integral, str)):
        chunks = (chunks,) * ndim
    chunks = tuple(chunks)
    if len(chunks) != ndim:
        raise ValueError(
            f"chunks={chunks!r} has {len(chunks)} entries but the array has {ndim} "
            f"dimensions (shape {shape}); give one entry per axis, -1 for a whole axis."
        )
    out: list[Any] = []
    for axis, (spec, size) in enumerate(zip(chunks, shape)):
        if isinstance(spec, numbers.Real) and not isinstance(spec, numbers.Integral):
            if not float(spec).is_integer():
                raise ValueError(f"chunks: block length {spec!r} on axis {axis} must be a whole number "
                                 "(or -1 for the whole axis, 'auto', or a tuple of lengths)")
            spec = int(spec)
        if spec is None or (isinstance(spec, numbers.Integral) and spec == -1):
            out.append((size,))
        elif isinstance(spec, str):
            if spec != "auto":  # a size in bytes: 'auto' aiming at it
                try:
                    nbytes = parse_bytes(spec)
                except ValueError:
                    raise ValueError(f"chunks: unknown spec {spec!r} for axis {axis}; use an int, -1, a "
                                     "tuple of sizes, 'auto' or a size in bytes like '64MiB'.") from None
                if limit is not None and limit != nbytes:
                    raise ValueError(f"chunks: two sizes in bytes, {limit} and {spec!r}; give one")
                limit = nbytes
            out.append("auto")
        elif isinstance(spec, numbers.Integral):
            if spec <= 0:
                raise ValueError(f"chunks: block length {spec} on axis {axis} must be "
                                 "positive (or -1 for the whole axis).")
            out.append(_blockdims(size, min(int(spec), max(size, 1))))
        else:
            sizes = tuple(int(s) for s in spec)
            if sum(sizes) != size or any(s < 0 for s in sizes) or not sizes:
                raise ValueError(
                    f"chunks: explicit block sizes {sizes} on axis {axis} must be non-negative "
                    f"and add up to the axis length {size} (they add up to {sum(sizes)})."
                )
            out.append(sizes)
    if "auto" in out:
        if limit is None:
            limit = parse_bytes(config.get("array.chunk-size", AUTO_CHUNK_BYTES))
        out = _auto_chunks(out, shape, np.dtype(dtype if dtype is not None else float), limit)
    return tuple(out)


def _auto_chunks(out: list, shape: tuple, dtype: np.dtype, limit: int) -> list:
    """Give 'auto' axes equal block lengths so that a block holds about ``limit`` bytes."""
    auto = [a for a, c in enumerate(out) if c == "auto"]
    fixed = 1
    for a, c in enumerate(out):
        if c != "auto":
            fixed *= max(max(c), 1)
    budget = max(limit / max(dtype.itemsize, 1) / fixed, 1.0)
    lengths: dict[int, int] = {}
    remaining = list(auto)
    while remaining:  # axes shorter than their share take their whole length
        share = budget ** (1.0 / len(remaining))
        short = [a for a in remaining if shape[a] <= share]
        if not short:
            for a in remaining:
                lengths[a] = max(int(share), 1)
            break
        for a in short:
            lengths[a] = max(shape[a], 1)
            budget /= max(shape[a], 1)
            remaining.remove(a)
    for a in auto:
        out[a] = _blockdims(shape[a], lengths[a])
    return out


def _starts(chunks: tuple[int, ...]) -> list[int]:
    """Where each block starts along an axis, then the axis length: (2, 3) -> [0, 2, 5]."""
    return list(itertools.accumulate((0,) + tuple(chunks)))


def common_blocks(cuts: Sequence[tuple[int, ...]]) -> tuple[int, ...]:
    """The blocks that several arrays of one length along an axis are brought to before an
    operation pairs their blocks: every cut each of them makes. No block is ever joined, so
    no task gathers pieces of several blocks; one array split in many blocks sets them when
    the others are a block each, as in dask.

    >>> common_blocks([(2, 2, 2), (3, 3)])
    (2, 1, 1, 2)
    >>> common_blocks([(6,), (2, 2, 2)])
    (2, 2, 2)

    Blocks of unknown length (from a boolean mask) can only be paired as they are:

    >>> common_blocks([(float("nan"),) * 2, (3, 3)])
    Traceback (most recent call last):
    ...
    ValueError: blocks (nan, nan) and (3, 3) cannot be matched: the lengths of (nan, nan) are unknown (from a boolean mask); call compute_chunk_sizes() on that array first
    """
    distinct = list(dict.fromkeys(tuple(c) for c in cuts))
    several = [c for c in distinct if len(c) > 1]
    if len(distinct) == 1 or not several:
        return distinct[0]
    if len(several) == 1:
        return several[0]
    unknown = next((c for c in several if any(n != n for n in c)), None)
    if unknown is not None:
        other = next(c for c in several if c != unknown)
        raise ValueError(f"blocks {unknown} and {other} cannot be matched: the lengths of {unknown} are "
                         "unknown (from a boolean mask); call compute_chunk_sizes() on that array first")
    ends = sorted(set().union(*(_starts(c)[1:] for c in several)))
    return tuple(b - a for a, b in zip([0] + ends, ends))
