"""NumPy's array methods whose functions live in modules that do not add them to ``Array``
themselves: ``x.diagonal()``, ``x.trace()``, ``x.nonzero()``, ``x.argsort()``,
``x.searchsorted(v)``, ``x.choose(choices)``, ``x.compress(condition)``, ``x.take(indices)``,
``x.copy()``, ``x.view(dtype)``, the shifts ``x << n`` and ``x >> n``, ``value in x``, and
the chunked-array methods ``x.topk(k)``, ``x.argtopk(k)``, ``x.moment(order)``,
``x.store(target)`` and ``x.partitions`` (dask's name for ``x.blocks``).

Each calls the namespace's function (one implementation; the method only puts ``self``
where the function wants it). ``view`` is a method only: every block is viewed on its own,
so a dtype of another itemsize needs the last axis' blocks to hold whole elements of both.
The methods that change an array in place (``sort``, ``fill``, ``put``, ``resize``,
``setflags``, ``partition``, ``x[i] = v``) have no place here: an xsched array's blocks are
never modified, and ``xa.sort(x)`` returns the sorted array.

>>> import numpy as np, xsched.array as xa
>>> x = xa.from_array(np.array([[3, 1], [2, 4]]), chunks=(1, 2))
>>> x.diagonal().compute().tolist(), int(x.trace()), x.argsort(axis=1).compute().tolist()
([3, 4], 7, [[1, 0], [0, 1]])
>>> 4 in x, (x << 1).compute().tolist()
(True, [[6, 2], [4, 8]])
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .assembly import compress
from .reductions import _check_out
from .core import Array, elemwise
from .mapping import map_blocks
from .diagonals import diagonal, trace
from .elementwise import choose
from .masking import known_chunks_needed
from .selection import nonzero
from .sorting import argsort, searchsorted
from .statistics import moment
from .store import store
from .take import shuffle, take
from .topk import argtopk, topk


def _diagonal(self: Array, offset: int = 0, axis1: int = 0, axis2: int = 1) -> Array:
    """The ``offset`` diagonal; see ``xsched.array.diagonal``.

    >>> import numpy as np, xsched.array as xa
    >>> xa.from_array(np.arange(9).reshape(3, 3), chunks=2).diagonal(1).compute().tolist()
    [1, 5]
    """
    return diagonal(self, offset, axis1, axis2)


def _trace(self: Array, offset: int = 0, axis1: int = 0, axis2: int = 1, dtype: Any = None,
           out: Any = None) -> Array:
    """The sum of the ``offset`` diagonal; see ``xsched.array.trace``.

    >>> import numpy as np, xsched.array as xa
    >>> int(xa.from_array(np.arange(9).reshape(3, 3), chunks=2).trace())
    12
    """
    return trace(self, offset, axis1, axis2, dtype, out)


def _nonzero(self: Array) -> tuple:
    """The indices of the elements that are not zero, one array per axis; see
    ``xsched.array.nonzero``.

    >>> import numpy as np, xsched.array as xa
    >>> [i.compute().tolist() for i in xa.from_array(np.array([0, 5, 0, 7]), chunks=2).nonzero()]
    [[1, 3]]
    """
    return nonzero(self)


def _argsort(self: Array, axis: Any = -1, kind: Any = None, order: Any = None, *,
             stable: Any = None, descending: bool = False) -> Array:
    """The positions that sort the array along ``axis`` (put in one chunk first); see
    ``xsched.array.argsort``. ``kind`` is NumPy's choice of algorithm: every sort here is
    stable, which each ``kind`` allows.

    >>> import numpy as np, xsched.array as xa
    >>> xa.from_array(np.array([30, 10, 20]), chunks=3).argsort().compute().tolist()
    [1, 2, 0]
    """
    if order is not None:
        raise ValueError("argsort: order= sorts structured arrays by their fields, which xsched arrays "
                         "do not do; sort by one field instead: x[field].argsort()")
    return argsort(self, axis, descending=descending, stable=True if stable is None else stable)


def _searchsorted(self: Array, v: Any, side: str = "left", sorter: Any = None) -> Array:
    """Where the values ``v`` would go in this sorted 1-d array; see
    ``xsched.array.searchsorted``.

    >>> import numpy as np, xsched.array as xa
    >>> xa.from_array(np.array([1, 3, 5]), chunks=2).searchsorted([0, 4]).compute().tolist()
    [0, 2]
    """
    return searchsorted(self, v, side=side, sorter=sorter)


def _choose(self: Array, choices: Any, out: Any = None, mode: str = "raise") -> Array:
    """At each position, the value of ``choices[self]`` there; see ``xsched.array.choose``.

    >>> import numpy as np, xsched.array as xa
    >>> xa.from_array(np.array([1, 0]), chunks=1).choose([[1, 2], [10, 20]]).compute().tolist()
    [10, 2]
    """
    return choose(self, choices, out=out, mode=mode)


def _compress(self: Array, condition: Any, axis: Any = None, out: Any = None) -> Array:
    """The slices along ``axis`` where ``condition`` is true; see ``xsched.array.compress``.

    >>> import numpy as np, xsched.array as xa
    >>> xa.from_array(np.arange(4), chunks=3).compress([True, False, True]).compute().tolist()
    [0, 2]
    """
    return compress(condition, self, axis=axis, out=out)


def _shuffle(self: Array, indexer: list, axis: int, chunks: str = "auto") -> Array:
    """The elements along ``axis`` reordered by groups of positions, each group in one
    chunk; see ``xsched.array.shuffle``.

    >>> import numpy as np, xsched.array as xa
    >>> xa.from_array(np.arange(6), chunks=3).shuffle([[5, 0], [2, 3, 1]], axis=0).compute().tolist()
    [5, 0, 2, 3, 1]
    """
    return shuffle(self, indexer, axis, chunks)


def _take(self: Array, indices: Any, axis: Any = None, out: Any = None, mode: str = "raise") -> Array:
    """The elements at ``indices`` along ``axis`` (of the flattened array without it); see
    ``xsched.array.take`` (``mode``: "raise", "wrap" or "clip", as NumPy's).

    >>> import numpy as np, xsched.array as xa
    >>> xa.from_array(np.arange(5) * 10, chunks=2).take([4, 0]).compute().tolist()
    [40, 0]
    """
    _check_out(out, "take")
    return take(self, indices, axis, mode)


def _copy(self: Array, order: str = "K") -> Array:
    """A new array of the same blocks: nothing is copied, as no operation changes a block
    in place (``order`` is NumPy's memory layout, which each block keeps).

    >>> import xsched.array as xa
    >>> x = xa.ones(3, chunks=2)
    >>> y = x.copy()
    >>> y is x, y.name == x.name
    (False, True)
    """
    return Array(self._graph, self.name, self.chunks, self.dtype)


def _view_block(block: np.ndarray, dtype: np.dtype) -> np.ndarray:
    return np.asarray(block, order="C").view(dtype)  # (not ascontiguousarray: it makes a 0-d block 1-d)


def _view(self: Array, dtype: Any = None, type: Any = None) -> Array:
    """The same bytes read as ``dtype``, block by block, as ``numpy.ndarray.view``; with
    another itemsize the last axis changes length, so each of its blocks must hold a whole
    number of elements of the new dtype (``rechunk`` the last axis otherwise).

    >>> import numpy as np, xsched.array as xa
    >>> x = xa.from_array(np.array([1.0, -2.0]), chunks=1)
    >>> x.view(np.int64).compute().tolist() == np.array([1.0, -2.0]).view(np.int64).tolist()
    True
    >>> xa.from_array(np.zeros((2, 4), "u1"), chunks=2).view("u2").chunks
    ((2,), (1, 1))
    """
    if type is not None:
        raise TypeError("view: type= makes an ndarray subclass; xsched arrays hold NumPy arrays only")
    if dtype is None:
        return _copy(self)
    dtype, old = np.dtype(dtype), self.dtype.itemsize
    if dtype.itemsize == old:
        return map_blocks(_view_block, self, dtype, dtype=dtype, name="view")
    if not self.ndim or not dtype.itemsize:
        raise ValueError(f"view: changing the dtype of a {self.ndim}-d array from {self.dtype} to {dtype} "
                         "is only supported if the itemsize is unchanged")
    known_chunks_needed(self, "view")
    last = self.chunks[-1]
    if self.shape[-1] * old % dtype.itemsize:
        raise ValueError(f"view: the last axis of {self.shape[-1]} {self.dtype} elements does not hold a whole "
                         f"number of {dtype} elements")
    if any(c * old % dtype.itemsize for c in last):
        raise ValueError(f"view: the last axis' blocks {last} of {self.dtype} do not each hold whole "
                         f"{dtype} elements; rechunk the last axis to multiples of "
                         f"{dtype.itemsize // np.gcd(old, dtype.itemsize)} first")
    chunks = self.chunks[:-1] + (tuple(c * old // dtype.itemsize for c in last),)
    return map_blocks(_view_block, self, dtype, chunks=chunks, dtype=dtype, name="view")


def _topk(self: Array, k: int, axis: int = -1, split_every: Any = None) -> Array:
    """The ``k`` largest values along ``axis`` (``k < 0``: smallest); see
    ``xsched.array.topk``.

    >>> import numpy as np, xsched.array as xa
    >>> xa.from_array(np.array([5, 1, 3, 6]), chunks=2).topk(2).compute().tolist()
    [6, 5]
    """
    return topk(self, k, axis, split_every)


def _argtopk(self: Array, k: int, axis: int = -1, split_every: Any = None) -> Array:
    """The positions of the ``k`` largest values along ``axis``; see
    ``xsched.array.argtopk``.

    >>> import numpy as np, xsched.array as xa
    >>> xa.from_array(np.array([5, 1, 3, 6]), chunks=2).argtopk(-2).compute().tolist()
    [1, 2]
    """
    return argtopk(self, k, axis, split_every)


def _moment(self: Array, order: int, axis: Any = None, dtype: Any = None, keepdims: bool = False,
            ddof: int = 0, split_every: Any = None, out: Any = None) -> Array:
    """The ``order``-th central moment; see ``xsched.array.moment``.

    >>> import numpy as np, xsched.array as xa
    >>> float(xa.from_array(np.array([1.0, 2.0, 3.0, 6.0]), chunks=3).moment(2))
    3.5
    """
    return moment(self, order, axis, dtype, keepdims, ddof, split_every, out)


def _contains(self: Array, value: Any) -> bool:
    """``value in x``: whether any element equals ``value``, computed now (as NumPy does).

    >>> import xsched.array as xa
    >>> 3 in xa.arange(5, chunks=2), 7 in xa.arange(5, chunks=2)
    (True, False)
    """
    return bool((self == value).any())


def _lshift(self: Array, other: Any) -> Array:
    """``x << other``, the bits shifted left, element by element.

    >>> import xsched.array as xa
    >>> (xa.arange(3, chunks=2) << 2).compute().tolist()
    [0, 4, 8]
    """
    return elemwise(np.left_shift, self, other)


def _rlshift(self: Array, other: Any) -> Array:
    return elemwise(np.left_shift, other, self)


def _rshift(self: Array, other: Any) -> Array:
    """``x >> other``, the bits shifted right, element by element.

    >>> import xsched.array as xa
    >>> (xa.arange(4, 7, chunks=2) >> 1).compute().tolist()
    [2, 2, 3]
    """
    return elemwise(np.right_shift, self, other)


def _rrshift(self: Array, other: Any) -> Array:
    return elemwise(np.right_shift, other, self)


def _store(self: Array, target: Any, **kwargs: Any) -> Any:
    """``xa.store(self, target, **kwargs)``: the array written into ``target`` with
    ``target[...] = block`` (see ``xsched.array.store``).

    >>> import numpy as np, xsched.array as xa
    >>> out = np.zeros(4)
    >>> xa.arange(4.0, chunks=2).store(out)
    >>> out.tolist()
    [0.0, 1.0, 2.0, 3.0]
    >>> xa.arange(4.0, chunks=2).store(out, return_stored=True).chunks   # (the one array stored)
    ((2, 2),)
    """
    stored = store(self, target, **kwargs)
    return stored[0] if kwargs.get("return_stored") else stored


def _partitions(self: Array) -> Any:
    """``x.blocks``, under the name dask gives it too: ``x.partitions[1]`` is block 1.

    >>> import xsched.array as xa
    >>> xa.arange(6, chunks=2).partitions[1].compute().tolist()
    [2, 3]
    """
    return self.blocks


Array.partitions = property(_partitions)  # type: ignore[attr-defined]

for _name, _f in [("store", _store), ("diagonal", _diagonal), ("trace", _trace), ("nonzero", _nonzero), ("argsort", _argsort),
                  ("searchsorted", _searchsorted), ("choose", _choose), ("compress", _compress),
                  ("take", _take), ("shuffle", _shuffle), ("copy", _copy), ("view", _view), ("topk", _topk), ("argtopk", _argtopk),
                  ("moment", _moment), ("__contains__", _contains), ("__lshift__", _lshift),
                  ("__rlshift__", _rlshift), ("__rshift__", _rshift), ("__rrshift__", _rrshift)]:
    setattr(Array, _name, _f)
