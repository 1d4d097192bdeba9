"""Arrays assembled from others, and parts cut out or put in: ``block``, ``dstack``,
``column_stack``, ``atleast_3d``, ``append``, ``insert``, ``delete``, ``compress``,
``extract``, ``rot90``, and ``split`` with ``array_split``, ``hsplit``, ``vsplit``, ``dsplit``
(slices along an axis: views of the blocks, nothing copied until computed).

Each is written with the operations of ``manipulation.py`` and ``x[index]`` (concatenate,
flip, transpose, slices, a NumPy boolean mask along an axis), as NumPy writes them with its
own: no data moves beyond what those move, and every result's chunks are known when the
expression is written. Positions (``insert``'s and ``delete``'s ``obj``) must be known
then too, since they fix the result's shape; a condition of ``compress`` or ``extract`` may
be lazy (an xsched array), and the result's length is then unknown until computed, as
after any boolean mask.

>>> import numpy as np, xsched.array as xa
>>> x = xa.from_array(np.arange(6).reshape(2, 3), chunks=1)
>>> xa.block([[x, x], [x, x]]).shape
(4, 6)
>>> xa.delete(x, [0, 2], axis=1).compute().tolist()
[[1], [4]]
"""

from __future__ import annotations

import numbers
import operator
from typing import Any

import numpy as np

from .reductions import _check_out
from .core import Array
from .creation import asarray
from .axes import axis_index
from .manipulation import (broadcast_to, concatenate, expand_dims, flip, moveaxis, ravel,
                           transpose)
from .masking import known_chunks_needed

__all__ = ["block", "dstack", "column_stack", "atleast_3d", "append", "insert", "delete", "compress", "extract",
           "rot90", "split", "array_split", "hsplit", "vsplit", "dsplit"]


# --------------------------------------------------------------------------- joining


def _depths(arrays: Any, where: str = "arrays") -> tuple[int, int, str]:
    """(list depth, largest leaf ndim, first leaf's place), checking depths agree."""
    if isinstance(arrays, tuple):
        raise TypeError(f"block: {where} is a tuple. Only lists can be used to arrange blocks, "
                        f"and np.block does not allow implicit conversion from tuple to ndarray.")
    if not isinstance(arrays, list):
        return 0, np.ndim(arrays) if not isinstance(arrays, Array) else arrays.ndim, where
    if not arrays:
        raise ValueError(f"block: lists cannot be empty ({where})")
    found = [_depths(a, f"{where}[{i}]") for i, a in enumerate(arrays)]
    first = found[0][0]
    for depth, _, place in found:
        if depth != first:
            raise ValueError(f"block: list depths are mismatched. First element was at depth "
                             f"{first + 1}, but there is an element at depth {depth + 1} "
                             f"({place})")
    return first + 1, max(f[1] for f in found), found[0][2]


def block(arrays: Any) -> Array:
    """An array assembled from nested lists of blocks, as ``numpy.block``: the innermost
    lists join along the last axis, the next ones along the one before, ...; blocks with
    fewer axes get leading ones.

    >>> import numpy as np, xsched.array as xa
    >>> a = xa.ones((2, 2), chunks=1)
    >>> xa.block([[a, xa.zeros((2, 1), chunks=1)], [xa.zeros((1, 3), chunks=1)]]).compute().tolist()
    [[1.0, 1.0, 0.0], [1.0, 1.0, 0.0], [0.0, 0.0, 0.0]]
    """
    depth, leaf_ndim, _ = _depths(arrays)
    ndim = max(depth, leaf_ndim)

    def join(obj: Any, level: int) -> Array:
        if isinstance(obj, list):
            return concatenate([join(o, level + 1) for o in obj], axis=level - depth)
        a = asarray(obj)
        return expand_dims(a, tuple(range(ndim - a.ndim))) if a.ndim < ndim else a

    return join(arrays, 0)


def _atleast_3d(x: Any) -> Array:
    x = asarray(x)
    if x.ndim == 0:
        return x[None, None, None]
    if x.ndim == 1:
        return x[None, :, None]
    return x[..., None] if x.ndim == 2 else x


def atleast_3d(*arys: Any) -> Array | tuple[Array, ...]:
    """The arrays with at least three axes, as ``numpy.atleast_3d``: ``(N,)`` becomes
    ``(1, N, 1)`` and ``(M, N)`` becomes ``(M, N, 1)``; one array gives an array, several a
    tuple.

    >>> import xsched.array as xa
    >>> xa.atleast_3d(xa.arange(3, chunks=2)).shape
    (1, 3, 1)
    """
    out = tuple(_atleast_3d(a) for a in arys)
    return out[0] if len(out) == 1 else out


def dstack(tup: Any, allow_unknown_chunksizes: bool = False) -> Array:
    """The arrays stacked along the third axis (after ``atleast_3d``), as ``numpy.dstack``.

    >>> import numpy as np, xsched.array as xa
    >>> xa.dstack([xa.arange(2, chunks=1), xa.arange(2, chunks=1)]).compute().tolist()
    [[[0, 0], [1, 1]]]
    """
    return concatenate([_atleast_3d(a) for a in _sequence(tup, "dstack")], axis=2)


def _sequence(tup: Any, what: str) -> Any:
    """``tup`` when it is a list or a tuple of the arrays to stack (NumPy refuses one array)."""
    if isinstance(tup, Array) or not isinstance(tup, (list, tuple)):
        raise TypeError(f"{what}: arrays to stack must be passed as a sequence (a list or a tuple), "
                        "not as one array")
    return tup


def column_stack(tup: Any) -> Array:
    """1-D arrays as the columns of a 2-D one, and 2-D arrays side by side, as
    ``numpy.column_stack``.

    >>> import xsched.array as xa
    >>> xa.column_stack([xa.arange(3, chunks=2), xa.arange(3, 6, chunks=2)]).compute().tolist()
    [[0, 3], [1, 4], [2, 5]]
    """
    columns = []
    for a in _sequence(tup, "column_stack"):
        a = asarray(a)
        columns.append(a[:, None] if a.ndim == 1 else a[None, None] if a.ndim == 0 else a)
    return concatenate(columns, axis=1)


def _split_points(length: int, sections: Any, exact: bool, what: str) -> list[int]:
    """Where an axis of ``length`` is cut: at the given indices, or into ``sections`` parts
    (equal ones for ``split``; ``array_split``'s first ``length % sections`` one longer)."""
    if isinstance(sections, numbers.Integral) and not isinstance(sections, bool):
        n = operator.index(sections)
        if n <= 0:
            raise ValueError(f"{what}: number sections must be larger than 0.")
        if exact and length % n:
            raise ValueError(f"{what}: array split does not result in an equal division: an axis of {length} "
                             f"into {n} sections (array_split allows unequal ones)")
        size, extra = divmod(length, n)
        sizes = [size + 1] * extra + [size] * (n - extra)
        return list(np.cumsum(sizes)[:-1])
    return [operator.index(i) for i in sections]


def array_split(ary: Any, indices_or_sections: Any, axis: int = 0) -> list[Array]:
    """The array cut along ``axis`` into that many parts (the first ones one longer where they
    cannot be equal) or at those indices, as ``numpy.array_split``: slices, so each part
    shares the blocks it overlaps.

    >>> import xsched.array as xa
    >>> [p.compute().tolist() for p in xa.array_split(xa.arange(7, chunks=3), 3)]
    [[0, 1, 2], [3, 4], [5, 6]]
    """
    return _split(ary, indices_or_sections, axis, exact=False, what="array_split")


def split(ary: Any, indices_or_sections: Any, axis: int = 0) -> list[Array]:
    """The array cut along ``axis`` into that many equal parts or at those indices, as
    ``numpy.split`` (unequal parts are refused, as NumPy refuses them).

    >>> import numpy as np, xsched.array as xa
    >>> x = xa.from_array(np.arange(12).reshape(3, 4), chunks=2)
    >>> [p.shape for p in np.split(x, [1, 3], axis=1)]
    [(3, 1), (3, 2), (3, 1)]
    """
    return _split(ary, indices_or_sections, axis, exact=True, what="split")


def _split(ary: Any, sections: Any, axis: int, exact: bool, what: str) -> list[Array]:
    ary = asarray(ary)
    axis = axis_index(axis, ary.ndim, what)
    known_chunks_needed(ary, what)
    length = ary.shape[axis]
    cuts = [0] + _split_points(length, sections, exact, what) + [length]
    lead = (slice(None),) * axis
    return [ary[lead + (slice(a, b),)] for a, b in zip(cuts, cuts[1:])]


def hsplit(ary: Any, indices_or_sections: Any) -> list[Array]:
    """``split`` along the second axis (the first of a 1-D array), as ``numpy.hsplit``.

    >>> import xsched.array as xa
    >>> [p.shape for p in xa.hsplit(xa.ones((2, 4), chunks=2), 2)]
    [(2, 2), (2, 2)]
    """
    ary = asarray(ary)
    if ary.ndim == 0:
        raise ValueError("hsplit only works on arrays of 1 or more dimensions")
    return split(ary, indices_or_sections, axis=1 if ary.ndim > 1 else 0)


def vsplit(ary: Any, indices_or_sections: Any) -> list[Array]:
    """``split`` along the first axis of an array of two or more, as ``numpy.vsplit``.

    >>> import xsched.array as xa
    >>> [p.shape for p in xa.vsplit(xa.ones((4, 2), chunks=2), [1])]
    [(1, 2), (3, 2)]
    """
    if asarray(ary).ndim < 2:
        raise ValueError("vsplit only works on arrays of 2 or more dimensions")
    return split(ary, indices_or_sections, axis=0)


def dsplit(ary: Any, indices_or_sections: Any) -> list[Array]:
    """``split`` along the third axis, as ``numpy.dsplit``.

    >>> import xsched.array as xa
    >>> [p.shape for p in xa.dsplit(xa.ones((1, 2, 4), chunks=2), 2)]
    [(1, 2, 2), (1, 2, 2)]
    """
    if asarray(ary).ndim < 3:
        raise ValueError("dsplit only works on arrays of 3 or more dimensions")
    return split(ary, indices_or_sections, axis=2)


def append(arr: Any, values: Any, axis: Any = None) -> Array:
    """``values`` added at the end of ``arr``, as ``numpy.append``: both flattened first
    without ``axis``, else joined along it (the same number of axes, as NumPy asks).

    >>> import numpy as np, xsched.array as xa
    >>> xa.append(xa.arange(3, chunks=2), [7, 8]).compute().tolist()
    [0, 1, 2, 7, 8]
    """
    arr = asarray(arr)
    values = asarray(values)
    if axis is None:
        return concatenate([ravel(arr), ravel(values)], axis=0)
    return concatenate([arr, values], axis=axis)


# --------------------------------------------------------------------------- cutting out, putting in


def _flat_or_axis(arr: Any, axis: Any, what: str) -> tuple[Array, int]:
    arr = asarray(arr)
    if axis is None:
        return ravel(arr), 0
    return arr, axis_index(axis, arr.ndim, what)


def _known_positions(obj: Any, what: str) -> Any:
    if isinstance(obj, Array):
        raise TypeError(f"{what}: obj must be known when the expression is written (it fixes the "
                        f"result's shape); pass NumPy data, e.g. obj.compute()")
    return obj


def delete(arr: Any, obj: Any, axis: Any = None) -> Array:
    """``arr`` without the positions ``obj`` (an int, a slice, integers or a boolean mask)
    along ``axis`` (of the flattened array without it), as ``numpy.delete``.

    >>> import numpy as np, xsched.array as xa
    >>> xa.delete(xa.arange(6, chunks=4), slice(1, None, 2)).compute().tolist()
    [0, 2, 4]
    """
    arr, axis = _flat_or_axis(arr, axis, "delete")
    obj = _known_positions(obj, "delete")
    known_chunks_needed(arr, "delete")
    n = arr.shape[axis]
    keep = np.ones(n, bool)
    if not isinstance(obj, slice):
        obj = np.asarray(obj)
        if obj.dtype == bool and obj.shape != (n,):
            raise ValueError(f"delete: boolean array argument obj must be one dimensional and "
                             f"match the axis length of {n}; got shape {obj.shape}")
        if obj.dtype != bool:
            if obj.size and obj.dtype.kind not in "iu":
                raise IndexError("delete: arrays used as indices must be of integer (or "
                                 "boolean) type")
            obj = obj.astype(np.intp)
            bad = obj[(obj < -n) | (obj >= n)]
            if bad.size:
                raise IndexError(f"delete: index {bad.flat[0]} is out of bounds for axis {axis} "
                                 f"with size {n}")
    keep[obj] = False
    return arr[(slice(None),) * axis + (keep,)]


def _values(values: Any, arr: Array, ndim_axis: int, move: bool) -> Array:
    """``values`` as ``numpy.insert`` takes them: ``arr``'s dtype, at least ``arr.ndim`` axes
    (leading ones added), the first moved to ``axis`` for a scalar position."""
    if isinstance(values, Array):
        v = values.astype(arr.dtype) if values.dtype != arr.dtype else values
        if v.ndim < arr.ndim:
            v = expand_dims(v, tuple(range(arr.ndim - v.ndim)))
    else:
        v = asarray(np.array(values, ndmin=arr.ndim, dtype=arr.dtype))
    return moveaxis(v, 0, ndim_axis) if move else v


def insert(arr: Any, obj: Any, values: Any, axis: Any = None) -> Array:
    """``values`` put in before the positions ``obj`` (an int, a slice or integers) along
    ``axis`` (of the flattened array without it), as ``numpy.insert``; the pieces of
    ``arr`` between them are joined with the values, in order.

    >>> import numpy as np, xsched.array as xa
    >>> x = xa.from_array(np.arange(6).reshape(2, 3), chunks=1)
    >>> xa.insert(x, 1, 9, axis=1).compute().tolist()
    [[0, 9, 1, 2], [3, 9, 4, 5]]
    >>> xa.insert(xa.arange(4, chunks=3), [1, 3, 1], [7, 8, 9]).compute().tolist()
    [0, 7, 9, 1, 2, 8, 3]
    """
    arr, axis = _flat_or_axis(arr, axis, "insert")
    obj = _known_positions(obj, "insert")
    n = arr.shape[axis]
    if isinstance(obj, slice):
        indices = np.arange(*obj.indices(n), dtype=np.intp)
    else:
        indices = np.asarray(obj)
        if indices.dtype == bool:
            raise IndexError("insert: obj must be integers or a slice, not a boolean array")
        if indices.ndim > 1:
            raise ValueError(f"insert: index array argument obj must be one or zero "
                             f"dimensional; got shape {indices.shape}")
        if indices.size and indices.dtype.kind not in "iu":
            raise IndexError("insert: arrays used as indices must be of integer type")
        indices = indices.astype(np.intp)
    bad = indices[(indices < -n) | (indices > n)]
    if bad.size:
        raise IndexError(f"insert: index {bad.flat[0]} is out of bounds for axis {axis} with "
                         f"size {n}")
    indices = np.where(indices < 0, indices + n, indices)
    cut = (slice(None),) * axis

    def part(start: int, stop: int) -> Array:
        return arr[cut + (slice(start, stop),)]

    if indices.size == 1:
        index = int(indices.item())
        v = _values(values, arr, axis, move=np.ndim(obj) == 0 and not isinstance(obj, slice))
        shape = arr.shape[:axis] + (v.shape[axis],) + arr.shape[axis + 1:]
        v = broadcast_to(v, shape)
        return concatenate([part(0, index), v, part(index, n)], axis=axis)
    v = _values(values, arr, axis, move=False)
    shape = arr.shape[:axis] + (len(indices),) + arr.shape[axis + 1:]
    v = broadcast_to(v, shape)
    order = np.argsort(indices, kind="stable")
    pieces, start = [], 0
    for j in order:
        pieces += [part(start, int(indices[j])), v[cut + (slice(int(j), int(j) + 1),)]]
        start = int(indices[j])
    pieces.append(part(start, n))
    return concatenate(pieces, axis=axis)


def compress(condition: Any, a: Any, axis: Any = None, out: Any = None) -> Array:
    """The slices of ``a`` along ``axis`` (of the flattened ``a`` without it) where the 1-d
    ``condition`` is true, as ``numpy.compress`` (a shorter condition counts as false
    past its end).

    >>> import numpy as np, xsched.array as xa
    >>> x = xa.from_array(np.arange(6).reshape(2, 3), chunks=1)
    >>> xa.compress([True, False, True], x, axis=1).compute().tolist()
    [[0, 2], [3, 5]]
    """
    _check_out(out, "compress")
    a, axis = _flat_or_axis(a, axis, "compress")
    n = a.shape[axis]
    cut = (slice(None),) * axis
    if isinstance(condition, Array):
        if condition.ndim != 1:
            raise ValueError(f"compress: condition must be a 1-d array, got shape "
                             f"{condition.shape}")
        if condition.shape[0] > n:
            raise IndexError(f"compress: condition of length {condition.shape[0]} is longer "
                             f"than axis {axis} of size {n}")
        picked = a[cut + (slice(0, condition.shape[0]),)] if condition.shape[0] < n else a
        mask = condition if condition.dtype == bool else condition.astype(bool)
        return picked[cut + (mask,)]
    cond = np.asarray(condition).astype(bool)
    if cond.ndim != 1:
        raise ValueError(f"compress: condition must be a 1-d array, got shape {cond.shape}")
    beyond = np.flatnonzero(cond[n:])
    if beyond.size:
        raise IndexError(f"compress: index {n + beyond[0]} is out of bounds for axis {axis} "
                         f"with size {n}")
    keep = np.zeros(n, bool)
    keep[:min(len(cond), n)] = cond[:n]
    return a[cut + (keep,)]


def extract(condition: Any, arr: Any) -> Array:
    """The values of ``arr`` where ``condition`` is true, both flattened, as
    ``numpy.extract``.

    >>> import numpy as np, xsched.array as xa
    >>> x = xa.from_array(np.arange(6).reshape(2, 3), chunks=1)
    >>> xa.extract(x % 2 == 0, x).compute().tolist()
    [0, 2, 4]
    """
    condition = ravel(condition) if isinstance(condition, Array) else np.ravel(condition)
    return compress(condition, ravel(asarray(arr)))


# --------------------------------------------------------------------------- rotating


def rot90(m: Any, k: int = 1, axes: Any = (0, 1)) -> Array:
    """``m`` turned by 90 degrees ``k`` times in the plane of ``axes`` (from the first
    towards the second), as ``numpy.rot90``: flips and a transpose.

    >>> import numpy as np, xsched.array as xa
    >>> xa.rot90(xa.from_array(np.array([[1, 2], [3, 4]]), chunks=1)).compute().tolist()
    [[2, 4], [1, 3]]
    """
    m = asarray(m)
    axes = tuple(axes)
    if len(axes) != 2:
        raise ValueError(f"rot90: len(axes) must be 2, got axes={axes}")
    if axes[0] == axes[1] or abs(axes[0] - axes[1]) == m.ndim:
        raise ValueError(f"rot90: axes must be different, got axes={axes}")
    if not all(isinstance(a, numbers.Integral) and -m.ndim <= a < m.ndim for a in axes):
        raise ValueError(f"rot90: axes={axes} out of range for array of ndim={m.ndim}")
    k = operator.index(k) % 4
    if k == 0:
        return m
    if k == 2:
        return flip(flip(m, axes[0]), axes[1])
    order = list(range(m.ndim))
    order[axes[0]], order[axes[1]] = order[axes[1]], order[axes[0]]
    if k == 1:
        return transpose(flip(m, axes[1]), order)
    return flip(transpose(m, order), axes[1])
