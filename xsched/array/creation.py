"""New arrays whose blocks are made where they are needed: ones, arange, eye, asarray, ...

Every block here is computed by its own task from a few numbers (its shape, where it
starts, the fill value or the step), so a graph of a billion-element ``arange`` is as small
as one of ten elements and nothing large travels from the client. Only ``asarray`` of a
numpy array ships data: the blocks of the array it was given.

>>> import xsched.array as xa
>>> xa.arange(10, chunks=4).chunks
((4, 4, 2),)
>>> xa.eye(3, chunks=2).compute().tolist()
[[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]

``tril_indices``/``triu_indices`` know their length from ``n``, ``m`` and ``k``, so each of
their blocks finds its own rows and columns from the count of elements per row.
"""

from __future__ import annotations

import functools
import numbers
import operator
from typing import Any, Callable, NamedTuple

import numpy as np

from ..graph.layers import annotations_in_force, chunk_key, new_token, per_task
from ..graph.spec import Task
from .axes import axis_index
from .chunks import Chunks, _starts, normalize_chunks
from . import reductions
from .core import Array, _holds_array, check_device, from_array, from_delayed  # noqa: F401  (from_delayed: here too)

__all__ = ["generate", "arange", "linspace", "full", "ones", "zeros", "empty", "eye", "identity",
           "full_like", "ones_like", "zeros_like", "empty_like", "asarray", "array",
           "fromfunction", "indices", "tri", "tril_indices", "triu_indices", "tril_indices_from",
           "triu_indices_from", "asanyarray", "from_delayed", "mgrid", "ogrid"]


def _shape(shape: Any) -> tuple[int, ...]:
    flags = (bool, np.bool_)  # (integers to Python, not to NumPy: zeros(True) is NumPy's TypeError)
    if isinstance(shape, flags) or (np.iterable(shape) and any(isinstance(s, flags) for s in shape)):
        raise TypeError(f"expected a sequence of integers or a single integer for a shape, got {shape!r}")
    if isinstance(shape, Array) or (np.iterable(shape) and any(isinstance(s, Array) for s in shape)):
        raise TypeError(f"a shape must be known numbers when the array is made, not a lazy xsched value "
                        f"({shape!r}); compute it first, e.g. int(n.compute())")
    if isinstance(shape, numbers.Integral):
        shape = (shape,)
    return tuple(operator.index(s) for s in shape)  # (negative sizes: normalize_chunks says so)


def generate(kind: str, make: Callable, shape: Any, dtype: Any, chunks: Any,
             args: tuple = (), at: Callable | None = None) -> Array:
    """An array whose block at ``start`` (its first element's position) is
    ``make(block_shape, start, *args)``, computed by its own task. ``at(positions, *args)``,
    when given, makes the values at any positions (an array of them per axis, the block
    their outer product) as ``make`` would: a strided slice is then made alone too.

    >>> import numpy as np
    >>> def offsets(shape, start):
    ...     return np.full(shape, start[0])
    >>> generate("offsets", offsets, 5, int, 2).compute().tolist()
    [0, 0, 2, 2, 4]
    """
    shape = _shape(shape)
    dtype = np.dtype(dtype)
    return _generated(kind, make, shape, dtype, normalize_chunks(chunks, shape, dtype), tuple(args),
                      annotations_in_force(), at)


def _generated(kind: str, make: Callable, shape: tuple[int, ...], dtype: np.dtype, chunks: Chunks,
               args: tuple, ann: dict, at: Callable | None = None) -> Array:
    """``generate``'s array. It keeps how it was made (``Array._remake``, a ``Recipe``), so
    that a rechunk or a slice makes the blocks it needs where they are needed rather than
    cutting and joining the old ones: ``ones(n, chunks=-1)`` added to an array of many blocks
    is made in its blocks, never whole, and ``arange(10**9)[5:10]`` makes five numbers."""
    name = f"{kind}-{new_token(kind, make, shape, str(dtype), chunks, args)}"
    starts = [_starts(c) for c in chunks]
    layer = {}
    for index in np.ndindex(*tuple(len(c) for c in chunks)):
        block_shape = tuple(c[i] for c, i in zip(chunks, index))
        start = tuple(s[i] for s, i in zip(starts, index))
        layer[chunk_key(name, index)] = Task(make, (block_shape, start) + args, {}, per_task(ann))
    out = Array(layer, name, chunks, dtype)
    out._remake = (name, Recipe(kind, make, shape, dtype, args, ann, at))
    return out


class Recipe(NamedTuple):
    """How an array of ``generate`` was made: each block ``make(shape, start, *args)``."""

    kind: str
    make: Callable
    shape: tuple
    dtype: np.dtype
    args: tuple
    ann: dict
    at: Callable | None = None  # (values at any positions: ``generate``'s ``at``)

    def remake(self, chunks: Chunks) -> Array:
        """The same array in other blocks (its tasks annotated as when it was made, and as
        the ``annotate`` blocks in force now say, as a rechunk's tasks would be)."""
        return _generated(self.kind, self.make, self.shape, self.dtype, chunks, self.args, self._annotations(),
                          self.at)

    def window(self, starts: tuple[int, ...], dropped: tuple[int, ...], chunks: Chunks,
               steps: tuple[int, ...] | None = None) -> Array | None:
        """The part starting at ``starts`` (one per axis) every ``steps`` (1s unless given;
        negative ones go back), of blocks ``chunks`` over the axes not ``dropped`` (an
        integer index there): ``x[2:5, 3]`` or ``x[::2, 3]`` of the array made anew. None for
        steps other than 1 when the recipe has no ``at``."""
        steps = steps or (1,) * len(starts)
        shape = tuple(sum(c) for c in chunks)
        at = None if self.at is None else functools.partial(_window_at, self.at, starts, steps, dropped)
        if all(step == 1 for step in steps):
            make = functools.partial(_window_block, self.make, starts, dropped)
        elif at is None:
            return None
        else:
            make = functools.partial(_block_at, at)
        return _generated(self.kind, make, shape, self.dtype, chunks, self.args, self._annotations(), at)

    def _annotations(self) -> dict:
        return {**self.ann, **annotations_in_force()}


def _window_block(make: Callable, starts: tuple, dropped: tuple, shape: tuple, start: tuple, *args: Any) -> np.ndarray:
    """A block of a window of a made array: the maker's block at the window's offset (a
    dropped axis as a length of 1 there), shaped as the window's."""
    full_shape, full_start, kept = [], [], iter(zip(shape, start))
    for axis, offset in enumerate(starts):
        n, s = (1, 0) if axis in dropped else next(kept)
        full_shape.append(n)
        full_start.append(offset + s)
    return make(tuple(full_shape), tuple(full_start), *args).reshape(shape)


def _window_at(at: Callable, starts: tuple, steps: tuple, dropped: tuple, positions: tuple, *args: Any) -> np.ndarray:
    """``at`` of a window: its positions (per axis not dropped) as the made array's."""
    full, kept = [], iter(positions)
    for axis, (offset, step) in enumerate(zip(starts, steps)):
        full.append(np.array([offset]) if axis in dropped else offset + np.asarray(next(kept)) * step)
    return at(tuple(full), *args).reshape(tuple(len(p) for p in positions))


def _block_at(at: Callable, shape: tuple, start: tuple, *args: Any) -> np.ndarray:
    """The block at ``start`` made by ``at`` from its positions."""
    return at(tuple(np.arange(s, s + n) for s, n in zip(start, shape)), *args)


# --------------------------------------------------------------------------- filled


def _full_at(positions: tuple, fill: Any, dtype: np.dtype) -> np.ndarray:
    return np.full(tuple(len(p) for p in positions), fill, dtype=dtype)


def _full_block(shape: tuple[int, ...], start: tuple, fill: Any, dtype: np.dtype) -> np.ndarray:
    return np.full(shape, fill, dtype=dtype)


def full(shape: Any, fill_value: Any, dtype: Any = None, chunks: Any = "auto", *, device: Any = None) -> Array:
    """An array filled with ``fill_value`` (a scalar), made block by block on the workers.

    >>> import xsched.array as xa
    >>> xa.full((2, 3), 7, chunks=2).compute().tolist()
    [[7, 7, 7], [7, 7, 7]]
    """
    check_device(device, "full")
    if np.ndim(fill_value) != 0:
        raise ValueError(f"full: fill_value must be a scalar, got an array of shape "
                         f"{np.shape(fill_value)}; use broadcast_to for arrays.")
    if isinstance(fill_value, Array):  # (a lazy scalar, x.max(): each block fills itself with its value)
        dtype = np.dtype(dtype) if dtype is not None else fill_value.dtype
        return empty(shape, dtype, chunks).map_blocks(_filled_like, fill_value, dtype=dtype)
    dtype = np.dtype(dtype) if dtype is not None else np.asarray(fill_value).dtype
    return generate("full", _full_block, shape, dtype, chunks, (fill_value, dtype), _full_at)


def _filled_like(block: np.ndarray, value: np.ndarray) -> np.ndarray:
    return np.full_like(block, value)


def ones(shape: Any, dtype: Any = float, chunks: Any = "auto", *, device: Any = None) -> Array:
    """An array of ones, made block by block on the workers.

    >>> import xsched.array as xa
    >>> float(xa.ones((4, 4), chunks=2).sum().compute())
    16.0
    """
    check_device(device, "ones")
    dtype = np.dtype(dtype)
    return generate("ones", _full_block, shape, dtype, chunks, (1, dtype), _full_at)


def zeros(shape: Any, dtype: Any = float, chunks: Any = "auto", *, device: Any = None) -> Array:
    """An array of zeros, made block by block on the workers.

    >>> import xsched.array as xa
    >>> xa.zeros(5, chunks=2).chunks
    ((2, 2, 1),)
    """
    check_device(device, "zeros")
    dtype = np.dtype(dtype)
    return generate("zeros", _full_block, shape, dtype, chunks, (0, dtype), _full_at)


def empty(shape: Any, dtype: Any = float, chunks: Any = "auto", *, device: Any = None) -> Array:
    """An array to be overwritten: its blocks hold zeros (numpy's uninitialised memory would
    make results depend on which worker made a block).

    >>> import xsched.array as xa
    >>> xa.empty((2, 2), chunks=1).shape
    (2, 2)
    """
    check_device(device, "empty")
    dtype = np.dtype(dtype)
    return generate("empty", _full_block, shape, dtype, chunks, (0, dtype), _full_at)


def _like(a: Any, dtype: Any, chunks: Any, shape: Any) -> tuple:
    if dtype is None:
        dtype = a.dtype if hasattr(a, "dtype") else np.asarray(a).dtype
    dtype = np.dtype(dtype)
    same_shape = shape is None or _shape(shape) == tuple(np.shape(a))
    shape = tuple(np.shape(a)) if shape is None else _shape(shape)
    if chunks is None:
        chunks = a.chunks if isinstance(a, Array) and same_shape else "auto"
    return shape, dtype, chunks


def full_like(a: Any, fill_value: Any, dtype: Any = None, chunks: Any = None,
              shape: Any = None, *, device: Any = None) -> Array:
    """An array shaped (and, for an xsched array, chunked) like ``a``, filled with
    ``fill_value``.

    >>> import numpy as np, xsched.array as xa
    >>> x = xa.from_array(np.arange(4.0), chunks=3)
    >>> y = xa.full_like(x, 2)
    >>> y.chunks, y.compute().tolist()
    (((3, 1),), [2.0, 2.0, 2.0, 2.0])
    """
    check_device(device, "full_like")
    shape, dtype, chunks = _like(a, dtype, chunks, shape)
    return full(shape, fill_value, dtype, chunks)


def ones_like(a: Any, dtype: Any = None, chunks: Any = None, shape: Any = None, *, device: Any = None) -> Array:
    """Ones shaped (and chunked) like ``a``.

    >>> import numpy as np, xsched.array as xa
    >>> xa.ones_like(np.zeros((2, 2), "i4")).compute().tolist()
    [[1, 1], [1, 1]]
    """
    check_device(device, "ones_like")
    shape, dtype, chunks = _like(a, dtype, chunks, shape)
    return ones(shape, dtype, chunks)


def zeros_like(a: Any, dtype: Any = None, chunks: Any = None, shape: Any = None, *, device: Any = None) -> Array:
    """Zeros shaped (and chunked) like ``a``.

    >>> import numpy as np, xsched.array as xa
    >>> xa.zeros_like(xa.ones((3,), chunks=2)).chunks
    ((2, 1),)
    """
    check_device(device, "zeros_like")
    shape, dtype, chunks = _like(a, dtype, chunks, shape)
    return zeros(shape, dtype, chunks)


def empty_like(a: Any, dtype: Any = None, chunks: Any = None, shape: Any = None, *, device: Any = None) -> Array:
    """An array to be overwritten, shaped (and chunked) like ``a`` (see ``empty``).

    >>> import numpy as np, xsched.array as xa
    >>> xa.empty_like(np.zeros((2, 5))).shape
    (2, 5)
    """
    check_device(device, "empty_like")
    shape, dtype, chunks = _like(a, dtype, chunks, shape)
    return empty(shape, dtype, chunks)


# --------------------------------------------------------------------------- ranges


def _arange_block(shape: tuple, start: tuple, first: Any, step: Any,
                  dtype: np.dtype) -> np.ndarray:
    i0, n = start[0], shape[0]
    if all(isinstance(v, numbers.Integral) for v in (first, step)):
        return np.arange(first + i0 * step, first + (i0 + n) * step, step, dtype=dtype)[:n]
    return (first + np.arange(i0, i0 + n) * step).astype(dtype, copy=False)


def arange(start: Any, stop: Any = None, step: Any = 1, *, dtype: Any = None,
           chunks: Any = "auto", device: Any = None) -> Array:
    """Evenly spaced values in ``[start, stop)``, as ``numpy.arange``; each block computes its
    own values on a worker.

    >>> import xsched.array as xa
    >>> xa.arange(2, 11, 3, chunks=2).compute().tolist()
    [2, 5, 8]
    >>> xa.arange(1.0, chunks=5).dtype
    dtype('float64')
    """
    check_device(device, "arange")
    if stop is None:
        start, stop = 0, start
    if step == 0:
        raise ValueError("arange: step must not be zero")
    if all(isinstance(v, numbers.Integral) for v in (start, stop, step)):
        start, stop, step = int(start), int(stop), int(step)
        n = len(range(start, stop, step))
    else:
        n = max(int(np.ceil((stop - start) / step)), 0)
    dtype = np.dtype(dtype) if dtype is not None else np.result_type(*map(_arange_scalar, (start, stop, step)))
    integral = all(isinstance(v, numbers.Integral) for v in (start, step))
    if integral or dtype.kind in "iuf":
        # NumPy's first values: its errors (start or start + step out of the dtype's bounds,
        # booleans past length 2) when built; the rest it fills from the first two, in the
        # dtype, going on by their difference (np.arange(0.5, 10, 1.5, dtype=int) is 0, 2, 4, ...)
        head = np.arange(start, start + min(n, 3) * step, step, dtype=dtype)
        # (integers: a signed 64-bit integral one NumPy's own fill makes, quicker; the others
        # wrap as NumPy's -- an unsigned one going down past zero too --, their difference
        # taken in Python's ints)
        if dtype.kind in "iu" and (not integral or dtype.itemsize < 8 or dtype.kind == "u"):
            first = int(head[0]) if n else 0
            delta = int(head[1]) - first if n > 1 else 0
            return generate("arange", functools.partial(_block_at, _integer_arange_at), n, dtype, chunks,
                            (first, delta, dtype), _integer_arange_at)
        if dtype.kind == "f" and not integral and n:
            return generate("arange", functools.partial(_block_at, _float_arange_at), n, dtype, chunks,
                            (head[0], head[1] if n > 1 else head[0], dtype), _float_arange_at)
    # (integers into floats: NumPy fills a block from its first value on in the dtype)
    at = _arange_at if not integral or dtype.kind in "iub" else None
    return generate("arange", _arange_block, n, dtype, chunks, (start, step, dtype), at)


def _arange_scalar(value: Any) -> Any:
    """A NumPy number as ``numpy.arange`` weighs it for its dtype: as a Python one (so
    ``arange(np.float32(3))`` is float64 and ``arange(np.int8(3))`` int64, as NumPy's),
    but for the kinds wider than Python's (long double, uint64) and booleans."""
    if isinstance(value, np.generic) and value.dtype.kind in "iufc" and value.dtype.itemsize <= (
            16 if value.dtype.kind == "c" else 8) and not (value.dtype.kind == "u" and value.dtype.itemsize == 8):
        return value.item()
    return value


def _arange_at(positions: tuple, first: Any, step: Any, dtype: np.dtype) -> np.ndarray:
    """``arange``'s values at positions, as its blocks compute them."""
    return (first + positions[0] * step).astype(dtype, copy=False)


def _float_arange_at(positions: tuple, first: Any, second: Any, dtype: np.dtype) -> np.ndarray:
    """A fractional ``arange``'s values at positions as NumPy's fill makes them: its first two
    values as given, then ``first + i * (second - first)`` in the dtype (the difference of the
    first two, not the step).

    >>> import numpy as np
    >>> f4 = np.dtype("f4"); head = np.arange(1e8 + 0.3, 1e8 + 1.1, 0.37, dtype=f4)
    >>> bool((_float_arange_at((np.arange(3),), head[0], head[1], f4) == head).all())
    True
    """
    work = np.dtype("f4") if dtype.itemsize < 4 else dtype  # (NumPy fills float16 in float32)
    first, second = dtype.type(first), dtype.type(second)
    i = positions[0]
    start = work.type(first)
    out = (start + i.astype(work) * (work.type(second) - start)).astype(dtype, copy=False)
    out[i == 0], out[i == 1] = first, second
    return out


def _integer_arange_at(positions: tuple, first: int, delta: int, dtype: np.dtype) -> np.ndarray:
    """An integer ``arange``'s values at positions as NumPy's fill makes them: ``first + i *
    delta`` in the dtype's wrapping arithmetic (``np.arange(200, dtype="i1")`` wraps past 127),
    here in 64 bits (modulo 2**64), then cut to the dtype."""
    wide = np.uint64 if dtype.kind == "u" else np.int64
    bits = 2**64
    first, delta = first % bits, delta % bits
    if wide is np.int64:
        first, delta = (v - bits if v >= bits // 2 else v for v in (first, delta))
    out = np.multiply(positions[0], wide(delta), dtype=wide, casting="unsafe")
    out += wide(first)
    return out.astype(dtype, copy=False)


def _linspace_block(shape: tuple, start: tuple, first: float, step: float, last: float,
                    num: int, endpoint: bool, dtype: np.dtype) -> np.ndarray:
    i0, n = start[0], shape[0]
    out = np.arange(i0, i0 + n, dtype=np.result_type(step, float)) * step + first
    if endpoint and num > 1 and i0 + n == num and n:
        out[-1] = last
    if dtype.kind in "iu":
        out = np.floor(out)
    return out.astype(dtype, copy=False)


def _spacing(start: Any, stop: Any, num: Any, endpoint: bool, what: str) -> tuple[int, int, Any]:
    """(the number of samples, checked; the steps between the ends; the step, NaN when there
    are no steps) of ``num`` values from ``start`` to ``stop``, as NumPy's ``linspace``."""
    num = operator.index(num)
    if num < 0:
        raise ValueError(f"{what}: number of samples, {num}, must be non-negative.")
    div = (num - 1) if endpoint else num
    return num, div, (stop - start) / div if div > 0 else np.nan


def linspace(start: Any, stop: Any, num: int = 50, endpoint: bool = True,
             retstep: bool = False, dtype: Any = None, axis: int = 0, chunks: Any = "auto", *,
             device: Any = None) -> Any:
    """``num`` evenly spaced values from ``start`` to ``stop``, as ``numpy.linspace``; ends
    that are arrays give a row of samples per element, along ``axis`` (``chunks`` then
    cuts the whole result, by axis).

    >>> import numpy as np, xsched.array as xa
    >>> xa.linspace(0, 1, 5, chunks=2).compute().tolist()
    [0.0, 0.25, 0.5, 0.75, 1.0]
    >>> xa.linspace(np.zeros(2), [1, 10], 3, axis=1, chunks=(1, 2)).compute().tolist()
    [[0.0, 0.5, 1.0], [0.0, 5.0, 10.0]]
    """
    check_device(device, "linspace")
    if isinstance(start, Array) or isinstance(stop, Array):
        raise NotImplementedError("linspace: the ends are values of this process (numbers or NumPy "
                                  "arrays), not xsched arrays; compute() them first")
    if np.ndim(start) or np.ndim(stop):
        return _linspace_arrays(np.asarray(start), np.asarray(stop), num, endpoint, retstep, dtype,
                                axis, chunks)
    axis_index(axis, 1, "linspace")
    num, div, step = _spacing(start, stop, num, endpoint, "linspace")
    computed = np.result_type(start, stop, float(num))
    dtype = np.dtype(dtype) if dtype is not None else computed
    out = generate("linspace", _linspace_block, num, dtype, chunks,
                   (start, step if div > 0 else 0.0, stop, num, endpoint, dtype), _linspace_at)
    return (out, step) if retstep else out


def _linspace_arrays(start: np.ndarray, stop: np.ndarray, num: Any, endpoint: bool, retstep: bool,
                     dtype: Any, axis: int, chunks: Any) -> Any:
    """``linspace`` of array ends: each block computes its rows by NumPy's own formula
    (its samples' positions times the step, plus the start), with its part of the ends."""
    num, div, _ = _spacing(0.0, 1.0, num, endpoint, "linspace")
    computed = np.result_type(start, stop, float(num))
    dtype = np.dtype(dtype) if dtype is not None else computed
    ends = np.broadcast_shapes(start.shape, stop.shape)
    axis = axis_index(axis, len(ends) + 1, "linspace")
    start, stop = np.broadcast_to(start, ends), np.broadcast_to(stop, ends)
    shape = ends[:axis] + (num,) + ends[axis:]
    chunks = normalize_chunks(chunks, shape, dtype)
    delta = np.subtract(stop, start, dtype=type(computed))
    with np.errstate(all="ignore"):  # (NumPy's choice of formula, made once for all the ends)
        any_zero = bool(div > 0 and np.any(delta / div == 0))
    name = f"linspace-{new_token(('linspace-arrays', start, stop, num, endpoint, dtype, axis), chunks)}"
    ann = annotations_in_force()
    starts = [_starts(c) for c in chunks]
    layer = {}
    for index in np.ndindex(*tuple(len(c) for c in chunks)):
        where = tuple(slice(starts[a][i], starts[a][i + 1]) for a, i in enumerate(index))
        rows, part = where[axis], where[:axis] + where[axis + 1:]
        layer[chunk_key(name, index)] = Task(
            _linspace_rows, (rows.start, rows.stop, start[part].copy(), stop[part].copy(), num, endpoint,
                             computed, dtype, axis, any_zero), {}, per_task(ann))
    out = Array(layer, name, chunks, dtype)
    return (out, delta / div if div > 0 else np.nan) if retstep else out


def _linspace_rows(lo: int, hi: int, start: np.ndarray, stop: np.ndarray, num: int, endpoint: bool,
                   computed: np.dtype, dtype: np.dtype, axis: int, any_zero: bool) -> np.ndarray:
    """Rows ``lo:hi`` of ``numpy.linspace(start, stop, num)``, computed as NumPy computes them
    (``any_zero``: some step of all the ends is 0, which makes NumPy divide before it multiplies)."""
    div = (num - 1) if endpoint else num
    delta = np.subtract(stop, start, dtype=type(computed))
    y = np.arange(lo, hi, dtype=computed).reshape((-1,) + (1,) * delta.ndim)
    if div > 0:
        y = y / div * delta if any_zero else y * (delta / div)
    else:
        y = y * delta
    y = y + start
    if endpoint and num > 1 and hi == num and hi > lo:
        y[-1, ...] = stop
    y = np.moveaxis(y, 0, axis)
    if dtype.kind in "iu":
        y = np.floor(y)
    return y.astype(dtype, copy=False)


def _linspace_at(positions: tuple, first: float, step: float, last: float, num: int, endpoint: bool,
                 dtype: np.dtype) -> np.ndarray:
    """``linspace``'s values at positions, as its blocks compute them."""
    p = positions[0]
    out = p.astype(np.result_type(step, float)) * step + first
    if endpoint and num > 1:
        out[p == num - 1] = last
    if dtype.kind in "iu":
        out = np.floor(out)
    return out.astype(dtype, copy=False)


def logspace(start: Any, stop: Any, num: int = 50, endpoint: bool = True, base: float = 10.0,
             dtype: Any = None, chunks: Any = "auto") -> Array:
    """``num`` values from ``base**start`` to ``base**stop``, evenly spaced on a log scale, as
    ``numpy.logspace`` (``linspace`` raised to ``base``).

    >>> import xsched.array as xa
    >>> xa.logspace(0, 3, 4, chunks=2).compute().tolist()
    [1.0, 10.0, 100.0, 1000.0]
    """
    exponents = linspace(start, stop, num, endpoint=endpoint, chunks=chunks)
    out = np.float64(base) ** exponents if np.ndim(base) == 0 else base ** exponents
    return out if dtype is None else out.astype(dtype)


def geomspace(start: Any, stop: Any, num: int = 50, endpoint: bool = True, dtype: Any = None,
              chunks: Any = "auto") -> Array:
    """``num`` values from ``start`` to ``stop`` in a geometric progression, as
    ``numpy.geomspace`` (real, non-zero ends of one sign; the ends exact).

    >>> import xsched.array as xa
    >>> xa.geomspace(1, 1000, 4, chunks=3).compute().tolist()
    [1.0, 10.0, 100.0, 1000.0]
    """
    if np.ndim(start) or np.ndim(stop) or np.iscomplexobj(start) or np.iscomplexobj(stop):
        raise NotImplementedError("geomspace: scalar real ends only here; numpy.geomspace for others, then "
                                  "xa.from_array")
    if start == 0 or stop == 0:
        raise ValueError("Geometric sequence cannot include zero")
    sign = float(np.sign(start))
    if np.sign(stop) != sign:
        raise NotImplementedError("geomspace: ends of opposite signs give complex values; numpy.geomspace "
                                  "for them, then xa.from_array")
    lo, hi = float(start) * sign, float(stop) * sign
    log_lo, log_hi = np.log10(lo), np.log10(hi)
    num, div, step = _spacing(log_lo, log_hi, num, endpoint, "geomspace")
    out = generate("geomspace", _geomspace_block, num, np.float64, chunks,
                   (lo, hi, log_lo, step if div > 0 else 0.0, log_hi, num, endpoint, sign))
    return out if dtype is None else out.astype(dtype)


def _geomspace_block(shape: tuple, start: tuple, lo: float, hi: float, log_lo: float, step: float,
                     log_hi: float, num: int, endpoint: bool, sign: float) -> np.ndarray:
    """NumPy's steps: ``10 ** linspace`` of the logarithms, the ends set to the values given."""
    out = 10.0 ** _linspace_block(shape, start, log_lo, step, log_hi, num, endpoint, np.dtype(np.float64))
    if len(out) and start[0] == 0:
        out[0] = lo
    if len(out) and endpoint and num > 1 and start[0] + shape[0] == num:
        out[-1] = hi
    return out * sign


def _eye_block(shape: tuple, start: tuple, k: int, dtype: np.dtype) -> np.ndarray:
    return np.eye(shape[0], shape[1], k=k + start[0] - start[1], dtype=dtype)


def eye(N: int, M: int | None = None, k: int = 0, dtype: Any = float,
        chunks: Any = "auto", *, device: Any = None) -> Array:
    """An ``N x M`` array with ones on diagonal ``k`` and zeros elsewhere.

    >>> import xsched.array as xa
    >>> xa.eye(2, 3, k=1, dtype=int, chunks=2).compute().tolist()
    [[0, 1, 0], [0, 0, 1]]
    """
    check_device(device, "eye")
    M = N if M is None else M
    dtype = np.dtype(dtype)
    return generate("eye", _eye_block, (N, M), dtype, chunks, (int(k), dtype), _eye_at)


def _eye_at(positions: tuple, k: int, dtype: np.dtype) -> np.ndarray:
    rows, cols = positions
    return (np.subtract.outer(cols, rows).T == k).astype(dtype)


def identity(n: int, dtype: Any = float, chunks: Any = "auto") -> Array:
    """The ``n x n`` identity matrix, as ``numpy.identity`` (``eye(n)``).

    >>> import xsched.array as xa
    >>> xa.identity(2, dtype=int, chunks=1).compute().tolist()
    [[1, 0], [0, 1]]
    """
    return eye(n, dtype=dtype, chunks=chunks)


def _tri_block(shape: tuple, start: tuple, k: int, dtype: np.dtype) -> np.ndarray:
    return np.tri(shape[0], shape[1], k=k + start[0] - start[1], dtype=dtype)


def tri(N: int, M: int | None = None, k: int = 0, dtype: Any = float, chunks: Any = "auto") -> Array:
    """An ``N x M`` array with ones at and below diagonal ``k`` and zeros above, as
    ``numpy.tri``.

    >>> import xsched.array as xa
    >>> xa.tri(3, 4, k=1, dtype=int, chunks=2).compute().tolist()
    [[1, 1, 0, 0], [1, 1, 1, 0], [1, 1, 1, 1]]
    """
    M = N if M is None else M
    dtype = np.dtype(dtype)
    return generate("tri", _tri_block, (N, M), dtype, chunks, (operator.index(k), dtype), _tri_at)


def _tri_at(positions: tuple, k: int, dtype: np.dtype) -> np.ndarray:
    rows, cols = positions
    return np.less_equal.outer(cols, rows + k).T.astype(dtype)


def _row_counts(n: int, m: int, k: int, lower: bool) -> tuple[np.ndarray, np.ndarray]:
    """Per row of an ``n x m`` triangle: the first column in it and how many columns."""
    edge = np.clip(np.arange(n) + k + (1 if lower else 0), 0, m)
    return (np.zeros(n, np.intp), edge) if lower else (edge, m - edge)


def _tri_index_block(shape: tuple, start: tuple, n: int, m: int, k: int, lower: bool,
                     cols: bool) -> np.ndarray:
    """Rows (or columns) of the triangle's elements ``start[0]`` onwards, in C order."""
    first, counts = _row_counts(n, m, k, lower)
    ends = np.cumsum(counts)
    p = np.arange(start[0], start[0] + shape[0])
    row = np.searchsorted(ends, p, side="right")
    return (first[row] + p - (ends[row] - counts[row])) if cols else row


def _tri_indices(n: Any, k: Any, m: Any, chunks: Any, lower: bool) -> tuple[Array, Array]:
    n, k = operator.index(n), operator.index(k)
    m = n if m is None else operator.index(m)
    if n < 0 or m < 0:
        raise ValueError(f"{'tril' if lower else 'triu'}_indices: negative dimensions ({n}, {m})")
    length = int(_row_counts(n, m, k, lower)[1].sum())
    kind = f"{'tril' if lower else 'triu'}-indices"
    return tuple(generate(kind, _tri_index_block, length, np.intp, chunks, (n, m, k, lower, cols))
                 for cols in (False, True))


def tril_indices(n: int, k: int = 0, m: int | None = None, chunks: Any = "auto") -> tuple[Array, Array]:
    """The row and column indices of the lower triangle (at and below diagonal ``k``) of an
    ``n x m`` array, in C order, as ``numpy.tril_indices``; lengths known, each block made
    on its own.

    >>> import xsched.array as xa
    >>> rows, cols = xa.tril_indices(3, chunks=2)
    >>> rows.compute().tolist(), cols.compute().tolist()
    ([0, 1, 1, 2, 2, 2], [0, 0, 1, 0, 1, 2])
    """
    return _tri_indices(n, k, m, chunks, True)


def triu_indices(n: int, k: int = 0, m: int | None = None, chunks: Any = "auto") -> tuple[Array, Array]:
    """The row and column indices of the upper triangle (at and above diagonal ``k``) of an
    ``n x m`` array, in C order, as ``numpy.triu_indices``.

    >>> import xsched.array as xa
    >>> rows, cols = xa.triu_indices(3, k=1, chunks=2)
    >>> rows.compute().tolist(), cols.compute().tolist()
    ([0, 0, 1], [1, 2, 2])
    """
    return _tri_indices(n, k, m, chunks, False)


def _matrix_shape(arr: Any, what: str) -> tuple[int, int]:
    shape = np.shape(arr) if not isinstance(arr, Array) else arr.shape
    if len(shape) != 2:
        raise ValueError(f"{what}: input array must be 2-d, got shape {shape}")
    return shape


def tril_indices_from(arr: Any, k: int = 0) -> tuple[Array, Array]:
    """``tril_indices`` for the shape of the 2-d ``arr``, as ``numpy.tril_indices_from``.

    >>> import xsched.array as xa
    >>> [i.compute().tolist() for i in xa.tril_indices_from(xa.ones((2, 3), chunks=1), k=1)]
    [[0, 0, 1, 1, 1], [0, 1, 0, 1, 2]]
    """
    n, m = _matrix_shape(arr, "tril_indices_from")
    return tril_indices(n, k, m)


def triu_indices_from(arr: Any, k: int = 0) -> tuple[Array, Array]:
    """``triu_indices`` for the shape of the 2-d ``arr``, as ``numpy.triu_indices_from``.

    >>> import xsched.array as xa
    >>> [i.compute().tolist() for i in xa.triu_indices_from(xa.ones((3, 2), chunks=1))]
    [[0, 0, 1], [0, 1, 1]]
    """
    n, m = _matrix_shape(arr, "triu_indices_from")
    return triu_indices(n, k, m)


# --------------------------------------------------------------------------- mgrid, ogrid


class _GridMaker:
    """``xa.mgrid[...]`` and ``xa.ogrid[...]``: NumPy's grids of slices (a complex step
    ``5j`` is a number of points, the stop included), as lazy arrays in ``"auto"`` blocks:
    ``mgrid`` the dense grid of coordinates, ``ogrid`` its axes, each shaped to broadcast.

    >>> import xsched.array as xa
    >>> xa.mgrid[0:2, 0:3].compute().tolist()
    [[[0, 0, 0], [1, 1, 1]], [[0, 1, 2], [0, 1, 2]]]
    >>> [a.compute().tolist() for a in xa.ogrid[0:1:3j, 0:2]]
    [[[0.0], [0.5], [1.0]], [[0.0, 1.0]]]
    """

    def __init__(self, sparse: bool) -> None:
        self.sparse = sparse

    def __repr__(self) -> str:
        return f"xsched.array.{'ogrid' if self.sparse else 'mgrid'}"

    def __getitem__(self, key: Any) -> Any:
        what = "ogrid" if self.sparse else "mgrid"
        if not isinstance(key, tuple):
            return _grid_axis(key, what)
        if not all(isinstance(k, slice) for k in key):
            raise TypeError(f"{what}[...] takes slices (start:stop:step), got {key!r}")
        specs = [_grid_spec(k, what) for k in key]
        dtype = np.result_type(0, *[v for *_, weighed in specs for v in weighed])
        if self.sparse:  # (each axis shaped to broadcast against the others)
            return tuple((arange(n, dtype=dtype) * step + start)[tuple(slice(None) if b == a else None
                                                                        for b in range(len(specs)))]
                         for a, (n, start, step, _) in enumerate(specs))
        grid = indices(tuple(n for n, *_ in specs), dtype=dtype)
        return _stack([(grid[a] * step + start).astype(dtype) for a, (_, start, step, _) in enumerate(specs)])


def _grid_ends(key: Any, what: str) -> tuple[Any, Any, Any]:
    if not isinstance(key, slice):
        raise TypeError(f"{what}[...] takes slices (start:stop:step), got {key!r}")
    if key.stop is None:
        raise ValueError(f"{what}[...]: every slice needs a stop, got {key!r}")
    for part in (key.start, key.stop, key.step):
        if isinstance(part, Array):
            raise TypeError(f"{what}[...]: the slices' numbers are known when the grid is made, not "
                            "lazy xsched values; compute() them first")
    return (0 if key.start is None else key.start), key.stop, (1 if key.step is None else key.step)


def _grid_spec(key: Any, what: str) -> tuple[int, Any, Any, tuple]:
    """One slice of a grid: its number of points, its start, the step between them, and the
    numbers NumPy weighs for the grid's dtype (a complex step ``nj``: ``n`` points, the stop
    included)."""
    start, stop, step = _grid_ends(key, what)
    if isinstance(step, (complex, np.complexfloating)):
        n = int(abs(step))
        return n, start, ((stop - start) / float(n - 1) if n != 1 else 1), (start, stop, abs(step))
    return max(int(np.ceil((stop - start) / step)), 0), start, step, (start, stop, step)


def _grid_axis(key: Any, what: str) -> Array:
    """``mgrid[a:b:s]`` of one slice: NumPy's ``arange``, or ``n`` points for ``s = nj``."""
    n, start, step, weighed = _grid_spec(key, what)
    if isinstance(key.step, (complex, np.complexfloating)):
        return arange(0, n, 1, dtype=np.result_type(*weighed)) * step + start
    return arange(start, key.stop, step)


mgrid = _GridMaker(sparse=False)
"""``xa.mgrid[0:4, 0:3]``: the dense grid of coordinates of the slices, as ``numpy.mgrid``
(a complex step ``5j`` is a number of points, the stop included), lazy, in ``"auto"`` blocks."""
ogrid = _GridMaker(sparse=True)
"""``xa.ogrid[0:4, 0:3]``: the grid's axes, each shaped to broadcast against the others, as
``numpy.ogrid``, lazy."""


# --------------------------------------------------------------------------- from functions


def _grid(shape: tuple, start: tuple, dtype: np.dtype) -> list[np.ndarray]:
    idx = np.indices(shape, dtype=dtype)
    return [idx[a] + np.asarray(start[a], dtype=dtype) for a in range(len(shape))]


def _fromfunction_block(shape: tuple, start: tuple, function: Callable, dtype: np.dtype,
                        kwargs: dict) -> np.ndarray:
    out = np.asarray(function(*_grid(shape, start, dtype), **kwargs))
    return out if out.shape == shape else np.broadcast_to(out, shape).copy()


def fromfunction(function: Callable, shape: Any, *, dtype: Any = float, chunks: Any = "auto",
                 **kwargs: Any) -> Array:
    """An array whose element at ``(i, j, ...)`` is ``function(i, j, ...)``; as in
    ``numpy.fromfunction``, ``function`` is called with one array of coordinates per axis
    (of ``dtype``), here once per block, with the block's own coordinates.

    >>> import xsched.array as xa
    >>> xa.fromfunction(lambda i, j: i * 10 + j, (2, 3), dtype=int, chunks=2).compute().tolist()
    [[0, 1, 2], [10, 11, 12]]
    """
    shape = _shape(shape)
    dtype = np.dtype(dtype)
    probe = np.asarray(function(*[np.zeros(1, dtype) for _ in shape], **kwargs))
    return generate("fromfunction", _fromfunction_block, shape, probe.dtype, chunks,
                    (function, dtype, kwargs))


def _indices_block(shape: tuple, start: tuple, dtype: np.dtype) -> np.ndarray:
    grids = _grid(shape[1:], start[1:], dtype)
    return np.stack(grids[start[0]:start[0] + shape[0]])  # (the coordinates of the axes this block holds)


def indices(dimensions: Any, dtype: Any = int, chunks: Any = "auto", sparse: bool = False) -> Any:
    """The coordinates of a grid of shape ``dimensions``: one array per axis stacked along a
    first axis, as ``numpy.indices`` (``chunks`` cuts the grid's axes); ``sparse=True``: a
    tuple of one array per axis, of length 1 along the others (they broadcast to the grid).

    >>> import xsched.array as xa
    >>> xa.indices((2, 3), chunks=2).compute().tolist()
    [[[0, 0, 0], [1, 1, 1]], [[0, 1, 2], [0, 1, 2]]]
    >>> rows, cols = xa.indices((2, 3), sparse=True)
    >>> rows.shape, cols.shape, (rows * 10 + cols).compute().tolist()
    ((2, 1), (1, 3), [[0, 1, 2], [10, 11, 12]])
    """
    dims = _shape(dimensions)
    dtype = np.dtype(dtype)
    if sparse:
        cuts = normalize_chunks(chunks, dims, dtype)
        return tuple(arange(n, dtype=dtype, chunks=(cuts[a],)).reshape((1,) * a + (n,) + (1,) * (len(dims) - a - 1))
                     for a, n in enumerate(dims))
    chunks = ((len(dims),),) + normalize_chunks(chunks, dims, dtype)
    return generate("indices", _indices_block, (len(dims),) + dims, dtype, chunks, (dtype,))


# --------------------------------------------------------------------------- from data


def _lazy_source(a: Any) -> bool:
    """Whether ``a`` is read block by block (an h5py dataset, a memmap-like object)."""
    return not isinstance(a, (np.ndarray, Array)) and all(
        hasattr(a, n) for n in ("shape", "dtype", "__getitem__"))


def asarray(a: Any, dtype: Any = None, chunks: Any = "auto", *, copy: bool | None = None,
            device: Any = None) -> Array:
    """``a`` as an xsched array: an xsched array is returned as it is (cast to ``dtype`` and
    rechunked when asked), a dataframe or Series as its values (``to_xsched_array``, lazily;
    with ``chunks=`` its partitions' lengths are counted first),
    anything else goes through ``from_array`` (numpy arrays, masked ones too, lists,
    scalars, h5py datasets read lazily).

    ``copy`` is the Array API's: ``True`` gives a new array object (``x[i] = v`` on one then
    leaves the other as it was) and copies a NumPy input, so that changing it later changes
    nothing here; ``False`` refuses a cast, which would copy.

    >>> import numpy as np, xsched.array as xa
    >>> x = xa.asarray([[1, 2], [3, 4]], chunks=1)
    >>> x.chunks, xa.asarray(x) is x, xa.asarray(x, copy=True) is x
    (((1, 1), (1, 1)), True, False)
    """
    check_device(device, "asarray")
    if copy is False and dtype is not None:  # (a's own dtype: np.asarray of a lazy source would read it all)
        current = a.dtype if hasattr(a, "dtype") else np.asarray(a).dtype
        if np.dtype(dtype) != current:
            raise ValueError(f"asarray: copy=False, but a cast to {np.dtype(dtype)} makes a copy; pass copy=None "
                             "to allow it")
    if isinstance(a, Array):
        out = a if dtype is None else a.astype(dtype, copy=bool(copy))
        if not (isinstance(chunks, str) and chunks == "auto"):
            out = out.rechunk(chunks)
        return Array(out._graph, out.name, out.chunks, out.dtype) if copy and out is a else out
    if hasattr(a, "to_xsched_array") and hasattr(a, "__xsched_graph__"):  # (a dataframe's values, lazily)
        auto = isinstance(chunks, str) and chunks == "auto"
        out = a.to_xsched_array(lengths=None if auto else True)  # (chunks= needs the lengths: counted now)
        out = out if dtype is None else out.astype(dtype)
        return out if auto else out.rechunk(chunks)
    if _lazy_source(a) or isinstance(a, np.ma.MaskedArray):
        out = from_array(a.copy() if copy and isinstance(a, np.ndarray) else a, chunks=chunks)
        return out if dtype is None else out.astype(dtype)
    if isinstance(a, (list, tuple)) and _holds_array(a):  # (stacked lazily: np.array would compute them)
        out = _stacked_list(a)
        out = out if dtype is None else out.astype(dtype)
        return out if isinstance(chunks, str) and chunks == "auto" else out.rechunk(chunks)
    return from_array(np.array(a, dtype=dtype, copy=True if copy else None), chunks=chunks)


#: ``manipulation.stack``, set there (that module imports this one)
_stack: Callable | None = None


def _stacked_list(a: Any) -> Array:
    """A nested list of xsched arrays (and other array-likes) stacked along new leading axes,
    as ``np.array`` would make it, without computing any.

    >>> import numpy as np, xsched.array as xa
    >>> x = xa.arange(4, chunks=2)
    >>> xa.asarray([[x, x * 2], [np.zeros(4), x]]).compute().shape
    (2, 2, 4)
    """
    return _stack([_stacked_list(i) if isinstance(i, (list, tuple)) else asarray(i) for i in a])


def array(a: Any, dtype: Any = None, chunks: Any = "auto") -> Array:
    """Like ``asarray``, but numpy data is copied first, so later changes to ``a`` do not
    show in the array (``asarray`` keeps views of ``a`` in the graph until it runs).

    >>> import numpy as np, xsched.array as xa
    >>> a = np.arange(3)
    >>> x = xa.array(a, chunks=2)
    >>> a[0] = 99
    >>> x.compute().tolist()
    [0, 1, 2]
    """
    if isinstance(a, (Array, np.ma.MaskedArray)) or _lazy_source(a):
        return asarray(a, dtype=dtype, chunks=chunks)
    return from_array(np.array(a, dtype=dtype, copy=True), chunks=chunks)


def from_dlpack(x: Any, *, device: Any = None, copy: bool | None = None, chunks: Any = "auto") -> Array:
    """An xsched array of any object that exports DLPack (``__dlpack__``: NumPy, PyTorch on
    the CPU, CuPy after ``.get()``...), the Array API's way in: NumPy takes the buffer
    (``numpy.from_dlpack``, a copy when ``copy=True``), then it is cut into ``chunks``.
    Only host memory can be read: ``device`` must be None or ``"cpu"``.

    >>> import numpy as np, xsched.array as xa
    >>> xa.from_dlpack(np.arange(6).reshape(2, 3), chunks=(1, 3)).sum(axis=0).compute().tolist()
    [3, 5, 7]
    """
    check_device(device, "from_dlpack")
    if not hasattr(x, "__dlpack__"):
        raise TypeError(f"from_dlpack takes an object with a __dlpack__ method (an array of another "
                        f"library), not {type(x).__name__}; for lists and NumPy arrays use xsched.array.asarray")
    data = np.from_dlpack(x, copy=copy)
    return from_array(data, chunks=chunks)


def asanyarray(a: Any, dtype: Any = None, chunks: Any = "auto") -> Array:
    """``asarray`` (NumPy's name; an xsched array stays itself; NumPy's subclasses become plain
    blocks, and masked arrays are refused rather than lose their mask).

    >>> import xsched.array as xa
    >>> xa.asanyarray([1, 2]).compute().tolist()
    [1, 2]
    """
    return asarray(a, dtype=dtype, chunks=chunks)


reductions.AS_ARRAY.append(asarray)
