"""Chunked numpy arrays that only build task graphs.

An ``Array`` is a grid of numpy blocks, each the value of one key of a task graph (see
``xsched.graph.spec``). Operations add one *layer* of tasks (one per output block) and
return a new ``Array``; nothing runs until ``compute()``/``persist()`` hand the graph to
the default client, or, without one, to ``xsched.graph.local.get`` in this process.

Keys
----
An array is named ``"<operation>-<token>"``, e.g. ``"sum_sub_stacks-3f9a..."``, where the
token is ``xsched.tokenize.tokenize`` of the inputs (hex). The key of the block at grid
index ``(i, j, k)`` is ``"<operation>-<token>-i.j.k"``: the name, a dash, and the block
index as dot-separated decimals (a 0-d array's single block has the index ``"0"``). The
text before ``-<token>`` is the *group* shown by progress bars: strip a trailing
``-[0-9.]+`` and then the trailing ``-<hex token>`` (``xsched.tokenize.key_split``).
``Array.chunk_key(index)`` builds these keys.

Modules
-------
This module holds ``Array``, ``from_array`` and ``elemwise``; ``mapping.py`` holds ``map_blocks``
(and gives ``Array`` its ``x.map_blocks`` method when imported).
Block sizes (``chunks.py``), rechunking (``rechunking.py``), reductions (``reductions.py``)
and the notebook view (``display.py``) sit below it. ``creation.py``, ``manipulation.py``,
``linalg.py``, ``scans.py`` and ``random.py`` build on it, and the first four add their
methods to ``Array`` when imported (``x.reshape``, ``x @ y``, ``x.cumsum``, ...), as
``slicing.py`` gives it ``x[index]``, ``overlapping.py`` and ``zarr.py`` add
``x.map_overlap`` and ``x.to_zarr``, and
``dispatch.py`` adds ``__array_function__`` (NumPy's functions run xsched.array's);
``index_notation.py`` builds ``blockwise`` on ``block_layer``, the layer ``map_blocks``
builds. Importing any part of ``xsched.array`` runs the package's ``__init__``, which
imports them all.

>>> import numpy as np, xsched.array as xa
>>> x = xa.from_array(np.arange(12).reshape(3, 4), chunks=(2, -1))
>>> x.chunks
((2, 1), (4,))
>>> (x + 1).sum(axis=0).compute().tolist()
[15, 18, 21, 24]
"""

from __future__ import annotations

import functools
import math
import numbers
import sys
import threading
import uuid
from collections.abc import Mapping
from functools import reduce
from operator import mul
from typing import Any, Callable, Sequence

import numpy as np

from ..client.default import default_client  # (a registry only: collections import no client code)
from ..graph import local as graph_local
from ..graph.collection import compute_collection, lineage, persist_collection
from ..graph.delayed import Delayed, source_of
from ..graph.optimize import optimize
from ..graph.spec import Ref, Task, funcname
from ..graph.visualize import visualize_method
from . import display, hdf5, joins, reductions
from . import masking as _masking
from . import rechunking as _rechunk
from .chunks import Chunks, _starts, normalize_chunks
from ..graph.layers import LayeredGraph, annotations_in_force, chunk_key, new_token, per_task

__all__ = [
    "Array",
    "from_array",
    "elemwise",
    "normalize_chunks",
    "chunk_key",
]

#: numpy ufuncs that are not elementwise (``np.matmul``), implemented by the modules above
#: this one (``linalg.py`` registers ``matmul``), so ``ndarray @ Array`` works too.
UFUNC_IMPLEMENTATIONS: dict[np.ufunc, Callable] = {}
#: ``(ufunc name, method) -> function`` for ``np.add.reduce(x)`` and the like: the reduction or
#: scan that computes it, filled in by the package (``xsched/array/__init__.py``)
UFUNC_METHOD_IMPLEMENTATIONS: dict[tuple[str, str], Callable] = {}


# --------------------------------------------------------------------------- Array

#: Versions of the Array API standard that ``Array.__array_namespace__`` answers for.
API_VERSIONS = ("2021.12", "2022.12", "2023.12")


class Device:
    """The one device of xsched arrays, host memory (the Array API's ``x.device``); blocks
    are NumPy arrays wherever a worker holds them."""

    def __repr__(self) -> str:
        return "Device('cpu')"


CPU = Device()


def check_device(device: Any, op: str) -> None:
    """The Array API's ``device=``: None, ``CPU`` or ``"cpu"`` (every xsched array lives in
    host memory); any other device is refused, naming ``op``.

    >>> check_device("cpu", "ones")
    >>> check_device("cuda:0", "ones")
    Traceback (most recent call last):
    ...
    ValueError: ones: xsched arrays live on Device('cpu') only, not on 'cuda:0'
    """
    if device is not None and device is not CPU and device != "cpu":
        raise ValueError(f"{op}: xsched arrays live on {CPU!r} only, not on {device!r}")


class Array:
    """A chunked n-dimensional array: a grid of numpy blocks computed by a task graph.

    Build one with ``from_array``, ``map_blocks``, ``ones``/``zeros`` or arithmetic on other
    arrays; get numpy back with ``compute()``.

    >>> import numpy as np, xsched.array as xa
    >>> x = xa.from_array(np.ones((4, 6)), chunks=(2, 3))
    >>> x
    xsched.Array<from-array-..., shape=(4, 6), dtype=float64, chunksize=(2, 3), chunks=4, tasks=4>
    >>> float((2 * x).sum().compute())
    48.0
    """

    __array_priority__ = 20  # numpy defers binary operators to us

    #: For an array made from its blocks' positions alone (``creation.generate``: ones,
    #: arange, eye...), ``(name, recipe)``: ``recipe.remake(chunks)`` is the same array in
    #: other blocks and ``recipe.window(...)`` a part of it, which a rechunk and a slice use
    #: rather than cutting and joining blocks, while the array still has that name
    #: (``x[i] = v`` renames it). None for every other array.
    _remake: tuple[str, Any] | None = None

    def __init__(self, graph: Mapping[str, Any], name: str, chunks: Chunks, dtype: Any) -> None:
        self._graph = graph if isinstance(graph, LayeredGraph) else LayeredGraph({name: graph})
        self.name = name
        # a block length is an int, or math.nan when unknown until computed (a boolean mask: masking.py)
        self.chunks: Chunks = tuple(tuple(math.nan if c != c else int(c) for c in axis) for axis in chunks)
        self.dtype = np.dtype(dtype)

    # ----------------------------------------------------------------- geometry
    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(sum(c) for c in self.chunks)

    @property
    def ndim(self) -> int:
        return len(self.chunks)

    @property
    def size(self) -> int:
        return reduce(mul, self.shape, 1)

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    @property
    def numblocks(self) -> tuple[int, ...]:
        return tuple(len(c) for c in self.chunks)

    @property
    def npartitions(self) -> int:
        return reduce(mul, self.numblocks, 1)

    @property
    def chunksize(self) -> tuple[int, ...]:
        return tuple(max(c) for c in self.chunks)

    def __iter__(self) -> Any:
        """The subarrays along the first axis, each built lazily as ``x[i]`` (a 0-d array has
        none to iterate, as in NumPy).

        >>> import numpy as np, xsched.array as xa
        >>> [int(row.sum().compute()) for row in xa.from_array(np.ones((3, 2)), chunks=2)]
        [2, 2, 2]
        """
        if not self.ndim:  # (checked when iter() is called, as NumPy does: not a generator)
            raise TypeError("iteration over a 0-d array; use x[()] or compute() for its value")
        _masking.known_chunks_needed(self, "iteration")
        return (self[i] for i in range(self.shape[0]))

    def __len__(self) -> int:
        if not self.ndim:
            raise TypeError("len() of a 0-d xsched array")
        _masking.known_chunks_needed(self, "len()")
        return self.shape[0]

    def compute_chunk_sizes(self) -> "Array":
        """Fills in the lengths of the array's blocks (after a boolean mask left them
        unknown), in place, and returns the array; computes the blocks' shapes only.

        >>> import numpy as np, xsched.array as xa
        >>> x = xa.from_array(np.arange(5), chunks=2)
        >>> x[x != 2].compute_chunk_sizes().chunks
        ((2, 1, 1),)
        """
        return _masking.compute_chunk_sizes(self)

    def chunk_key(self, index: Sequence[int]) -> str:
        """The graph key of the block at grid position ``index`` (see the module docstring).

        >>> import numpy as np, xsched.array as xa
        >>> x = xa.from_array(np.zeros((4, 4)), chunks=2)
        >>> x.chunk_key((1, 0)) == x.name + "-1.0"
        True
        """
        index = tuple(index)
        if len(index) != self.ndim or any(not 0 <= i < n for i, n in zip(index, self.numblocks)):
            raise IndexError(f"block index {index} is outside the block grid {self.numblocks} "
                             f"of {self.name}")
        return chunk_key(self.name, index)

    # ----------------------------------------------------------------- collection protocol
    def __xsched_graph__(self) -> dict[str, Any]:
        return dict(self._graph.flat())

    def __xsched_keys__(self) -> Any:
        if self.ndim == 0:
            return [chunk_key(self.name, ())]

        def level(prefix: tuple) -> list:
            axis = len(prefix)
            if axis == self.ndim - 1:
                return [chunk_key(self.name, prefix + (i,)) for i in range(self.numblocks[axis])]
            return [level(prefix + (i,)) for i in range(self.numblocks[axis])]

        return level(())

    def __xsched_postcompute__(self) -> tuple[Callable, tuple]:
        return _finalize, (self.ndim,)

    def __xsched_postpersist__(self) -> tuple[Callable, tuple]:
        return _rebuild, (self.name, self.chunks, self.dtype)

    # ----------------------------------------------------------------- compute
    visualize = visualize_method

    def compute(self, optimize_graph: bool = True, **kwargs: Any) -> np.ndarray:
        """Compute the whole array and return it as numpy.

        Runs on the default client when there is one (keyword arguments go to
        ``client.compute``), otherwise in this process.

        >>> import numpy as np, xsched.array as xa
        >>> xa.from_array(np.arange(6), chunks=4).compute().tolist()
        [0, 1, 2, 3, 4, 5]
        """
        return compute_collection(self, optimize_graph, **kwargs)

    def persist(self, **kwargs: Any) -> "Array":
        """Compute the blocks and keep them (on the cluster, or here) for later use.

        With a default client the blocks stay in worker memory as futures; without one the
        new array's graph holds the computed numpy blocks.

        >>> import numpy as np, xsched.array as xa
        >>> y = (xa.from_array(np.arange(6), chunks=2) * 2).persist()
        >>> y.compute().tolist()
        [0, 2, 4, 6, 8, 10]
        """
        return persist_collection(self, **kwargs)

    def _compute_blocks(self, keys: list[str]) -> list:
        """Compute some of this array's blocks, on the default client or locally."""
        return compute_keys(self.__xsched_graph__(), keys)

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        out = np.asarray(self.compute())
        return out.astype(dtype, copy=False) if dtype is not None else out

    def copy(self) -> "Array":
        """Another Array of the same values: writing into one (``y[0] = 5``) leaves the other
        as it was (the graph is shared; blocks are copied only where a write touches them).

        >>> import numpy as np, xsched.array as xa
        >>> x = xa.from_array(np.arange(3), chunks=2)
        >>> y = x.copy()
        >>> y[0] = 9
        >>> x.compute().tolist(), y.compute().tolist()
        ([0, 1, 2], [9, 1, 2])
        """
        return Array(self._graph, self.name, self.chunks, self.dtype)

    def to_delayed(self, optimize_graph: bool = True) -> np.ndarray:
        """One ``Delayed`` per block, as a numpy object array shaped like the block grid.

        Each Delayed carries only the tasks its block needs (culled), fused into as few
        tasks as possible when ``optimize_graph`` (annotations are kept by the fusion).

        >>> import numpy as np, xsched.array as xa
        >>> from xsched.graph.delayed import Delayed
        >>> parts = xa.from_array(np.arange(6), chunks=2).to_delayed()
        >>> parts.shape, isinstance(parts[0], Delayed)
        ((3,), True)
        >>> [p.compute().tolist() for p in parts.ravel()]
        [[0, 1], [2, 3], [4, 5]]
        """
        graph = self.__xsched_graph__()
        indices = list(np.ndindex(*self.numblocks))
        keys = [chunk_key(self.name, i) for i in indices]
        if optimize_graph:
            graph = optimize(graph, keys)
        out = np.empty(self.numblocks, dtype=object)
        for index, key in zip(indices, keys):
            out[index] = Delayed(key, lineage(graph, key))
        return out

    # ----------------------------------------------------------------- display
    def __repr__(self) -> str:
        return (f"xsched.Array<{self.name}, shape={self.shape}, dtype={self.dtype}, "
                f"chunksize={self.chunksize}, chunks={self.npartitions}, "
                f"tasks={len(self._graph)}>")

    def _repr_inline_(self, max_width: int) -> str:
        """The one line xarray shows for a variable backed by this array: its block shape and
        its number of blocks, not the key.

        >>> import xsched.array as xa
        >>> xa.ones((6, 4), chunks=(4, 2))._repr_inline_(80)
        'xsched.array<chunksize=(4, 2), chunks=4>'
        """
        line = f"xsched.array<chunksize={self.chunksize}, chunks={self.npartitions}>"
        return line if len(line) <= max_width else line[:max(max_width - 3, 0)] + "..."

    def _repr_html_(self) -> str:
        """The notebook view: shape, bytes, chunks and dtype of the array and of one block,
        beside a picture of the block grid (1-3 dims); computes nothing. See
        ``xsched.array.display``.

        >>> import xsched.array as xa
        >>> page = xa.ones((6, 4), chunks=(4, 2))._repr_html_()
        >>> "(6, 4)" in page and "(4, 2)" in page and "4 chunks" in page and "<svg" in page
        True
        """
        return display.chunks_html(self.chunks, self.dtype, name=self.name,
                                   tasks=len(self._graph))

    def __hash__(self) -> int:
        return hash(self.name)

    # ----------------------------------------------------------------- operations
    def astype(self, dtype: Any, copy: bool = True, *, casting: str = "unsafe") -> "Array":
        """Cast every block to ``dtype``; ``casting`` as NumPy's (``"safe"``, ``"same_kind"``...:
        a cast it does not allow fails here, when built).

        ``copy`` is NumPy's keyword: no operation modifies a block in place, but ``x[i] = v``
        rebinds an array object, so a cast to the same dtype gives a new object unless
        ``copy=False`` (then the array itself).

        >>> import numpy as np, xsched.array as xa
        >>> xa.from_array(np.arange(3), chunks=2).astype("f4").dtype
        dtype('float32')
        >>> xa.from_array(np.arange(3), chunks=2).astype(str).dtype  # NumPy's length for int64
        dtype('<U21')
        """
        dtype = np.dtype(dtype)
        if casting != "unsafe" and not np.can_cast(self.dtype, dtype, casting=casting):
            raise TypeError(f"astype: Cannot cast array data from {self.dtype!r} to {dtype!r} according to the rule "
                            f"{casting!r}, as NumPy says")
        if dtype.itemsize == 0 and dtype.kind in "USV":  # str, bytes: NumPy picks the length
            if self.dtype.kind == "O":
                raise TypeError(f"astype({dtype}) of an object array: NumPy would size the strings by "
                                "the values, which differ from block to block; give the length, "
                                f"e.g. astype('{dtype.kind}20')")
            dtype = np.empty(0, self.dtype).astype(dtype).dtype  # (by the source dtype alone)
        if dtype == self.dtype:
            return Array(self._graph, self.name, self.chunks, self.dtype) if copy else self
        return elemwise(_astype, self, dtype=dtype, name="astype", extra_args=(dtype,))

    @property
    def real(self) -> "Array":
        """The real part, block by block (the array itself when it is not complex).

        >>> import numpy as np, xsched.array as xa
        >>> xa.from_array(np.array([1 + 2j, 3 - 1j]), chunks=1).real.compute().tolist()
        [1.0, 3.0]
        """
        return elemwise(np.real, self) if self.dtype.kind == "c" else self

    @property
    def imag(self) -> "Array":
        """The imaginary part, block by block (zeros when the array is not complex).

        >>> import numpy as np, xsched.array as xa
        >>> xa.from_array(np.array([1 + 2j, 3 - 1j]), chunks=1).imag.compute().tolist()
        [2.0, -1.0]
        """
        return elemwise(np.imag, self)

    def rechunk(self, chunks: Any = "auto", threshold: Any = None, block_size_limit: Any = None, *,
                limit: Any = None, method: str | None = None, balance: bool = False) -> "Array":
        """The same array cut into blocks ``chunks``; see ``xsched.array.rechunk``.

        >>> import numpy as np, xsched.array as xa
        >>> xa.from_array(np.zeros((4, 6)), chunks=2).rechunk((4, 3)).chunks
        ((4,), (3, 3))
        """
        return _rechunk.rechunk(self, chunks, limit=limit, method=method, block_size_limit=block_size_limit,
                                balance=balance)

    def transpose(self, *axes: int) -> "Array":
        """Permute the axes (reversed by default), block by block.

        >>> import numpy as np, xsched.array as xa
        >>> xa.from_array(np.zeros((2, 3)), chunks=1).T.shape
        (3, 2)
        """
        if len(axes) == 1 and isinstance(axes[0], (tuple, list)):
            axes = tuple(axes[0])
        axes = tuple(range(self.ndim))[::-1] if not axes else tuple(a % self.ndim for a in axes)
        if sorted(axes) != list(range(self.ndim)):
            raise ValueError(f"transpose: axes {axes} are not a permutation of "
                             f"{tuple(range(self.ndim))}")
        name = f"transpose-{new_token(self.name, axes)}"
        ann = annotations_in_force()
        layer = {}
        for index in np.ndindex(*self.numblocks):
            out_index = tuple(index[a] for a in axes)
            layer[chunk_key(name, out_index)] = Task(
                np.transpose, (Ref(chunk_key(self.name, index)), axes), {}, per_task(ann))
        chunks = tuple(self.chunks[a] for a in axes)
        return Array(LayeredGraph.merge(self._graph, new={name: layer}), name, chunks,
                     self.dtype)

    @property
    def T(self) -> "Array":
        return self.transpose()

    @property
    def mT(self) -> "Array":
        """The matrix transpose: the last two axes swapped (the Array API's ``x.mT``).

        >>> import numpy as np, xsched.array as xa
        >>> xa.from_array(np.zeros((4, 2, 3)), chunks=2).mT.shape
        (4, 3, 2)
        """
        if self.ndim < 2:
            raise ValueError(f"mT: the matrix transpose needs at least two dimensions, not shape {self.shape}")
        return self.transpose(*range(self.ndim - 2), self.ndim - 1, self.ndim - 2)

    # ----------------------------------------------------------------- the Array API's array object
    def __array_namespace__(self, /, *, api_version: str | None = None) -> Any:
        """The module of this array's functions, ``xsched.array`` (the Array API's entry point:
        code written as ``xp = x.__array_namespace__()`` runs on xsched arrays); versions of
        the standard other than those it follows are refused, as the standard asks.

        >>> import xsched.array as xa
        >>> xa.ones(3, chunks=2).__array_namespace__() is xa
        True
        """
        if api_version is not None and api_version not in API_VERSIONS:
            raise ValueError(f"__array_namespace__: api_version {api_version!r} is not one "
                             f"xsched.array follows: {', '.join(API_VERSIONS)}")
        return sys.modules[__name__.rpartition(".")[0]]

    @property
    def device(self) -> "Device":
        """Where the blocks live: always host memory, ``CPU`` (the Array API's ``x.device``).

        >>> import xsched.array as xa
        >>> xa.ones(3, chunks=2).device
        Device('cpu')
        """
        return CPU

    def to_device(self, device: Any, /, *, stream: Any = None) -> "Array":
        """The array on ``device``: this array itself, as every array is on ``CPU`` (or
        ``"cpu"``); any other device is refused.

        >>> import xsched.array as xa
        >>> x = xa.ones(3, chunks=2)
        >>> x.to_device(x.device) is x
        True
        """
        if stream is not None:
            raise ValueError(f"to_device: xsched arrays have no streams, got stream={stream!r}")
        check_device(device, "to_device")
        return self

    def to_hdf5(self, path: str, name: str, **kwargs: Any) -> None:
        """Write this array to ``path`` as dataset ``name``; see ``xsched.array.to_hdf5``.

        >>> import os, tempfile, numpy as np, h5py, xsched.array as xa
        >>> path = os.path.join(tempfile.mkdtemp(), "x.h5")
        >>> xa.from_array(np.arange(6), chunks=4).to_hdf5(path, "/x")
        >>> with h5py.File(path, "r") as f:
        ...     f["/x"][:].tolist()
        [0, 1, 2, 3, 4, 5]
        """
        hdf5.to_hdf5(path, name, self, **kwargs)

    # reductions (implemented in reductions.py)
    def sum(self, axis=None, dtype=None, keepdims=False, split_every=None, out=None, *, initial=None, where=True):
        """Sum over ``axis`` (None: all); see ``xsched.array.sum``.

        >>> import numpy as np, xsched.array as xa
        >>> x = xa.from_array(np.arange(6).reshape(2, 3), chunks=2)
        >>> int(x.sum().compute()), x.sum(axis=0).compute().tolist()
        (15, [3, 5, 7])
        """
        return reductions.sum(self, axis=axis, dtype=dtype, keepdims=keepdims,
                              split_every=split_every, out=out, initial=initial, where=where)

    def mean(self, axis=None, dtype=None, keepdims=False, split_every=None, out=None, *, where=True):
        """Mean over ``axis`` (None: all); see ``xsched.array.mean``.

        >>> import numpy as np, xsched.array as xa
        >>> xa.from_array(np.arange(6).reshape(2, 3), chunks=2).mean(axis=1).compute().tolist()
        [1.0, 4.0]
        """
        return reductions.mean(self, axis=axis, dtype=dtype, keepdims=keepdims,
                               split_every=split_every, out=out, where=where)

    def var(self, axis=None, dtype=None, ddof=0, keepdims=False, split_every=None, out=None, *, correction=None):
        """Variance over ``axis`` (None: all); see ``xsched.array.var``.

        >>> import numpy as np, xsched.array as xa
        >>> x = xa.from_array(np.array([1.0, 3.0, 5.0, 7.0]), chunks=3)
        >>> float(x.var().compute()), float(x.var(ddof=1).compute())
        (5.0, 6.666666666666667)
        """
        return reductions.var(self, axis=axis, dtype=dtype, ddof=ddof, keepdims=keepdims,
                              split_every=split_every, out=out, correction=correction)

    def std(self, axis=None, dtype=None, ddof=0, keepdims=False, split_every=None, out=None, *, correction=None):
        """Standard deviation over ``axis`` (None: all); see ``xsched.array.std``.

        >>> import numpy as np, xsched.array as xa
        >>> xa.from_array(np.array([[1.0, 2.0], [3.0, 6.0]]), chunks=1).std(axis=0).compute().tolist()
        [1.0, 2.0]
        """
        return reductions.std(self, axis=axis, dtype=dtype, ddof=ddof, keepdims=keepdims,
                              split_every=split_every, out=out, correction=correction)

    def min(self, axis=None, keepdims=False, split_every=None, out=None, *, initial=None, where=True):
        """Minimum over ``axis`` (None: all); see ``xsched.array.min``.

        >>> import numpy as np, xsched.array as xa
        >>> x = xa.from_array(np.array([[3, 1], [2, 5]]), chunks=1)
        >>> int(x.min().compute()), x.min(axis=0).compute().tolist()
        (1, [2, 1])
        """
        return reductions.min(self, axis=axis, keepdims=keepdims, split_every=split_every,
                              out=out, initial=initial, where=where)

    def max(self, axis=None, keepdims=False, split_every=None, out=None, *, initial=None, where=True):
        """Maximum over ``axis`` (None: all); see ``xsched.array.max``.

        >>> import numpy as np, xsched.array as xa
        >>> x = xa.from_array(np.array([[3, 1], [2, 5]]), chunks=1)
        >>> int(x.max().compute()), x.max(axis=1).compute().tolist()
        (5, [3, 5])
        """
        return reductions.max(self, axis=axis, keepdims=keepdims, split_every=split_every,
                              out=out, initial=initial, where=where)

    # elementwise arithmetic: numpy ufuncs applied block by block
    def __array_ufunc__(self, ufunc: np.ufunc, method: str, *inputs: Any, **kwargs: Any):
        """``np.add(x, 1)``: the ufunc block by block. Its ``dtype=`` goes to every block's
        call (the blocks are of the dtype declared); a ufunc with several outputs
        (``np.divmod``) gives a tuple of arrays, each computing the ufunc on its blocks.

        >>> import numpy as np, xsched.array as xa
        >>> x = xa.from_array(np.arange(3.0), chunks=2)
        >>> np.add(x, 1, dtype="f4").compute().dtype
        dtype('float32')
        >>> [q.compute().tolist() for q in np.divmod(x, 2)]
        [[0.0, 0.0, 1.0], [0.0, 1.0, 0.0]]

        The methods with a tree of their own run too: ``reduce`` (add, multiply, maximum,
        minimum, logical_and, logical_or), ``accumulate`` (add, multiply) and ``outer``.

        >>> float(np.maximum.reduce(x).compute()), np.subtract.outer(x, x).shape
        (2.0, (3, 3))
        """
        out = kwargs.pop("out", None)
        if out is not None and any(o is not None for o in (out if isinstance(out, tuple) else (out,))):
            raise TypeError(f"{ufunc.__name__}: out= is not supported for xsched arrays; "
                            "use the returned array instead.")
        where = kwargs.get("where", True)
        masks = not (where is True or (np.ndim(where) == 0 and not hasattr(where, "__xsched_graph__")
                                       and bool(where)))  # (a true scalar, np.True_ too, masks nothing)
        if masks and method != "reduce":  # (a mask, and no out= to keep the rest; a reduction's leaves out)
            raise TypeError(f"{ufunc.__name__}: where= is not supported for xsched arrays; use "
                            f"xa.where(mask, np.{ufunc.__name__}(...), fallback) instead.")
        if not masks:
            kwargs.pop("where", None)
        if method == "__call__" and ufunc in UFUNC_IMPLEMENTATIONS:
            return UFUNC_IMPLEMENTATIONS[ufunc](*inputs, **kwargs)
        if method in _UFUNC_METHODS and ufunc.signature is None:
            done = _ufunc_method(ufunc, method, inputs, kwargs)
            if done is not None:
                return done
        if method != "__call__" or ufunc.signature is not None:
            return _unsupported_ufunc(ufunc, method, inputs)
        # elemwise's own dtype= only declares the result's dtype: the ufunc gets it in a partial
        pinned = {"dtype": kwargs.pop("dtype")} if kwargs.get("dtype") is not None else {}
        kwargs.pop("dtype", None)
        if ufunc.nout == 1:
            op = functools.partial(ufunc, **pinned) if pinned else ufunc
            return elemwise(op, *inputs, **kwargs)
        return tuple(elemwise(functools.partial(_ufunc_output, ufunc, k, **pinned), *inputs,
                              name=ufunc.__name__, **kwargs) for k in range(ufunc.nout))

    def __neg__(self): return elemwise(np.negative, self)
    def __pos__(self): return self
    def __abs__(self): return elemwise(np.absolute, self)
    def __invert__(self): return elemwise(np.invert, self)
    def __add__(self, o): return elemwise(np.add, self, o)
    def __radd__(self, o): return elemwise(np.add, o, self)
    def __sub__(self, o): return elemwise(np.subtract, self, o)
    def __rsub__(self, o): return elemwise(np.subtract, o, self)
    def __mul__(self, o): return elemwise(np.multiply, self, o)
    def __rmul__(self, o): return elemwise(np.multiply, o, self)
    def __truediv__(self, o): return elemwise(np.true_divide, self, o)
    def __rtruediv__(self, o): return elemwise(np.true_divide, o, self)
    def __floordiv__(self, o): return elemwise(np.floor_divide, self, o)
    def __rfloordiv__(self, o): return elemwise(np.floor_divide, o, self)
    def __mod__(self, o): return elemwise(np.remainder, self, o)
    def __rmod__(self, o): return elemwise(np.remainder, o, self)
    def __pow__(self, o): return elemwise(np.power, self, o)
    def __rpow__(self, o): return elemwise(np.power, o, self)
    def __and__(self, o): return elemwise(np.bitwise_and, self, o)
    def __rand__(self, o): return elemwise(np.bitwise_and, o, self)
    def __or__(self, o): return elemwise(np.bitwise_or, self, o)
    def __ror__(self, o): return elemwise(np.bitwise_or, o, self)
    def __xor__(self, o): return elemwise(np.bitwise_xor, self, o)
    def __rxor__(self, o): return elemwise(np.bitwise_xor, o, self)
    def __lt__(self, o): return elemwise(np.less, self, o)
    def __le__(self, o): return elemwise(np.less_equal, self, o)
    def __gt__(self, o): return elemwise(np.greater, self, o)
    def __ge__(self, o): return elemwise(np.greater_equal, self, o)
    def __eq__(self, o): return elemwise(np.equal, self, o)  # type: ignore[override]
    def __ne__(self, o): return elemwise(np.not_equal, self, o)  # type: ignore[override]
    def __divmod__(self, o): return np.divmod(self, o)
    def __rdivmod__(self, o): return np.divmod(o, self)

    def _scalar(self, kind: type) -> Any:
        if self.ndim:  # as NumPy 2: a size-1 array of more dimensions does not convert either
            raise TypeError(f"only 0-dimensional arrays convert to Python {kind.__name__}; this "
                            f"array has shape {self.shape} (index one element first, e.g. x[0])")
        return kind(np.asarray(self.compute()).reshape(()))

    def __float__(self) -> float:
        return self._scalar(float)

    def item(self, *args: Any) -> Any:
        """One element as a Python scalar, computed now, as ``numpy.ndarray.item``: of a
        one-element array without ``args``, else at a flat position or at an index per axis.

        >>> import numpy as np, xsched.array as xa
        >>> x = xa.from_array(np.arange(6).reshape(2, 3), chunks=2)
        >>> x.item(4), x.item(1, 0), x[1:, 2:].item()
        (4, 3, 5)
        """
        if not args:
            if self.size != 1:
                raise ValueError(f"item: can only convert an array of size 1 to a Python scalar, "
                                 f"this one has shape {self.shape}")
            one = self
        elif len(args) == 1 and isinstance(args[0], numbers.Integral):
            one = self.ravel()[args[0]]
        else:
            index = args[0] if len(args) == 1 else args
            if len(index) != self.ndim:
                raise ValueError(f"item: {len(index)} indices for an array of {self.ndim} dimensions")
            one = self[tuple(index)]
        return np.asarray(one.compute()).reshape(()).item()

    def tolist(self) -> Any:
        """The values as nested Python lists (a scalar for a 0-d array), computed now.

        >>> import numpy as np, xsched.array as xa
        >>> xa.from_array(np.arange(4).reshape(2, 2), chunks=1).tolist()
        [[0, 1], [2, 3]]
        """
        return np.asarray(self.compute()).tolist()

    def __int__(self) -> int:
        return self._scalar(int)

    def __index__(self) -> int:
        """A 0-d integer array as a Python int, computed now: ``range(n)``, ``x[i]`` and
        ``repeat(a, n)`` take one (the Array API's ``__index__``; a bool is refused, as NumPy
        refuses it)."""
        if self.dtype.kind not in "iu":
            raise TypeError(f"only integer scalar arrays can be converted to a scalar index; this one is {self.dtype}")
        return self._scalar(int)

    def __dlpack__(self, *, stream: Any = None, max_version: Any = None, dl_device: Any = None,
                   copy: Any = None) -> Any:
        """The array computed, handed over through NumPy's DLPack export: another library's
        ``from_dlpack(x)`` asks for the values in its own memory, as ``np.asarray(x)`` does."""
        options = {k: v for k, v in (("stream", stream), ("max_version", max_version), ("dl_device", dl_device),
                                     ("copy", copy)) if v is not None}
        return np.ascontiguousarray(np.asarray(self.compute())).__dlpack__(**options)

    def __dlpack_device__(self) -> tuple[int, int]:
        """Host memory (DLPack's ``kDLCPU``, device 0): where ``__dlpack__`` puts the values."""
        return (1, 0)

    def __complex__(self) -> complex:
        return self._scalar(complex)

    def __bool__(self) -> bool:
        """The truth of a one-element array, computed now (as NumPy and xarray expect:
        ``if (x == y).all():``); any other size is ambiguous, as in NumPy.

        >>> import numpy as np, xsched.array as xa
        >>> x = xa.from_array(np.arange(4), chunks=2)
        >>> bool((x < 4).all()), bool(x[1:2])
        (True, True)
        >>> bool(x)
        Traceback (most recent call last):
        ...
        ValueError: the truth value of an array with more than one element is ambiguous (shape (4,)); use x.any() or x.all()
        """
        size = self.size
        if size != 1:
            what = ("of unknown size (call compute_chunk_sizes() first)" if size != size else
                    "that is empty" if size == 0 else "with more than one element")
            raise ValueError(f"the truth value of an array {what} is ambiguous (shape {self.shape}); "
                             "use x.any() or x.all()")
        return bool(np.asarray(self.compute()).reshape(()))


def _ufunc_output(ufunc: np.ufunc, k: int, *args: Any, **kwargs: Any) -> np.ndarray:
    """Output ``k`` of a ufunc with several outputs (``np.divmod``), on one block."""
    return ufunc(*args, **kwargs)[k]


#: What to use instead of a ufunc method on xsched arrays: (ufunc name, method) -> advice.
_UFUNC_METHOD_ADVICE = {
    ("add", "reduce"): "xa.sum", ("multiply", "reduce"): "xa.prod", ("maximum", "reduce"): "xa.max",
    ("minimum", "reduce"): "xa.min", ("logical_and", "reduce"): "xa.all",
    ("logical_or", "reduce"): "xa.any", ("add", "accumulate"): "xa.cumsum",
    ("multiply", "accumulate"): "xa.cumprod",
}


#: the ufunc methods run here: a reduction or a scan that has a tree of its own, or ``outer``
_UFUNC_METHODS = ("reduce", "accumulate", "outer")


def _ufunc_method(ufunc: np.ufunc, method: str, inputs: tuple, kwargs: dict) -> Any:
    """``np.add.reduce(x)`` (axis 0 unless told, as NumPy's), ``np.multiply.accumulate(x)``
    and ``np.subtract.outer(x, y)``, as the xsched reduction, scan or broadcast that computes
    them (``UFUNC_METHOD_IMPLEMENTATIONS``); None for a ufunc (or a keyword) these do not
    cover, which the caller refuses."""
    name = ufunc.__name__
    if method == "outer":
        if len(inputs) != 2 or set(kwargs) - {"dtype"}:
            return None
        x, y = (a if isinstance(a, Array) else np.asarray(a) for a in inputs)
        return ufunc(x[(Ellipsis,) + (None,) * np.ndim(y)], y, **kwargs)
    run = UFUNC_METHOD_IMPLEMENTATIONS.get((name, method))
    taken = {"axis", "dtype", "keepdims"} | ({"where"} if method == "reduce" else set()) | (
        {"initial"} if method == "reduce" and name in ("add", "multiply", "maximum", "minimum") else set())
    if run is None or len(inputs) != 1 or set(kwargs) - taken:
        return None
    passed = {k: kwargs[k] for k in ("initial", "where") if k in kwargs}  # (NumPy's, as the reduction takes them)
    x = inputs[0] if isinstance(inputs[0], Array) else from_array(np.asarray(inputs[0]))
    axis, dtype = kwargs.get("axis", 0), kwargs.get("dtype")
    if method == "accumulate":
        return None if kwargs.get("keepdims") else run(x, axis=axis, dtype=dtype)
    if dtype is not None and name not in ("add", "multiply"):
        return None
    return run(x, axis=axis, keepdims=bool(kwargs.get("keepdims", False)), **({"dtype": dtype} if dtype else {}),
               **passed)


def _unsupported_ufunc(ufunc: np.ufunc, method: str, inputs: tuple) -> Any:
    """NotImplemented when another operand may handle the call, else a TypeError that names
    the ufunc (method) and what to use instead."""
    if any(hasattr(type(a), "__array_ufunc__") and not isinstance(a, (Array, np.ndarray, np.generic))
           for a in inputs):
        return NotImplemented  # (NumPy then asks that operand)
    name = ufunc.__name__
    if method == "__call__":  # a generalized ufunc (np.vecdot)
        raise TypeError(f"np.{name} (signature {ufunc.signature}) is not supported on xsched arrays; "
                        f"use xa.apply_gufunc(np.{name}, {ufunc.signature!r}, ...) with the core "
                        "dimensions in one chunk")
    advice = _UFUNC_METHOD_ADVICE.get((name, method))
    if advice is None:
        advice = {"reduce": "xa.reduction(...)", "accumulate": "xa.scan(...)",
                  "outer": f"broadcasting, np.{name}(x[(...,) + (None,) * y.ndim], y)",
                  "at": "x[index] = x[index] + values (where no position repeats)"}.get(
                      method, "x.map_blocks(...), or compute() first")
    raise TypeError(f"np.{name}.{method} is not supported on xsched arrays; instead use {advice}")


def compute_keys(graph: dict, keys: list[str]) -> list:
    """The values of ``keys`` of ``graph`` (blocks of arrays), on the default client or here."""
    client = default_client()
    if client is not None:
        return client.compute(_Blocks(graph, keys), sync=True)
    return graph_local.get(graph, list(keys), optimize=True)


def _checked_block(value: Any, shape: tuple, dtype: np.dtype, what: str) -> np.ndarray:
    block = np.asarray(value)
    if block.ndim != len(shape) or any(n == n and n != m for n, m in zip(shape, block.shape)):
        raise ValueError(f"from_delayed: {what} gave an array of shape {block.shape}, but the array "
                         f"was declared with shape {shape}; fix shape=")
    if block.dtype == dtype:
        return block
    if not np.can_cast(block.dtype, dtype, "same_kind"):
        raise ValueError(f"from_delayed: {what} gave {block.dtype} values, but the array was declared "
                         f"{dtype}, which would change them; fix dtype=")
    return block.astype(dtype)


def from_delayed(value: Any, shape: Any, dtype: Any = None, *, meta: Any = None, name: str | None = None) -> Array:
    """An array of one block whose value a ``Delayed`` (or a future) computes: the way to
    make arrays of what a function loads, one call per piece, then ``concatenate`` or
    ``stack`` the pieces. ``shape`` and ``dtype`` must be declared (``meta``: an array of the
    dtype; ``np.nan`` for a length not known yet, as after a boolean mask); a value of another
    shape, or of a dtype the declared one would change, fails naming both.

    >>> import numpy as np, xsched, xsched.array as xa
    >>> load = xsched.delayed(np.full)
    >>> parts = [xa.from_delayed(load((2, 3), float(i)), shape=(2, 3), dtype=float) for i in range(3)]
    >>> xa.concatenate(parts).sum(axis=1).compute().tolist()
    [0.0, 0.0, 3.0, 3.0, 6.0, 6.0]
    """
    dtype = np.dtype(dtype if dtype is not None else getattr(meta, "dtype", None) or float)
    shape = tuple(shape) if isinstance(shape, (tuple, list)) else (shape,)
    if any(not (n != n or (isinstance(n, numbers.Integral) and n >= 0)) for n in shape):
        raise ValueError(f"from_delayed: shape {shape} must hold lengths (whole numbers, 0 or more; "
                         "np.nan for a length not known yet)")
    shape = tuple(n if n != n else int(n) for n in shape)
    key, graph = source_of(value, "from_delayed", "for NumPy data use from_array")
    out = name or f"from-delayed-{new_token(key, shape, str(dtype))}"
    layer = {chunk_key(out, (0,) * len(shape)): Task(_checked_block, (Ref(key), shape, dtype, f"{key!r}"), {},
                                                      per_task(annotations_in_force()))}
    return Array(LayeredGraph.merge(graph, new={out: layer}), out, tuple((n,) for n in shape), dtype)


class _Blocks:
    """A collection of some blocks of an array (used to compute them in batches)."""

    def __init__(self, graph: dict, keys: list[str]) -> None:
        self.graph, self.keys = graph, list(keys)

    def __xsched_graph__(self) -> dict:
        return self.graph

    def __xsched_keys__(self) -> list[str]:
        return self.keys

    def __xsched_postcompute__(self) -> tuple[Callable, tuple]:
        return list, ()


def _concat_nested(nested: Any, depth: int, axis: int = 0) -> np.ndarray:
    """Concatenate a ``depth``-level nested list of blocks along axes ``axis..``."""
    if depth == 0:
        return nested
    parts = [_concat_nested(p, depth - 1, axis + 1) for p in nested]
    if len(parts) == 1:
        return parts[0]
    return joins.concatenate(parts, axis=axis)


def _finalize(results: Any, ndim: int) -> Any:
    """Post-compute: the nested block results as one numpy array (0-d as a numpy scalar)."""
    if ndim == 0:
        block = results[0] if isinstance(results, list) else results
        block = np.asanyarray(block)  # (a masked 0-d block gives numpy.ma.masked when masked)
        return block[()]
    out = _concat_nested(results, ndim)
    # (one block read memory-mapped, from_npy_stack's: a plain array, not a read-only map of the file)
    return np.array(out) if isinstance(out, np.memmap) else out


def _rebuild(new_graph: Mapping[str, Any], name: str, chunks: Chunks, dtype: Any) -> Array:
    """Post-persist: an array whose blocks are the persisted values (futures or numpy)."""
    return Array(dict(new_graph), name, chunks, dtype)


def _astype(block: np.ndarray, dtype: np.dtype) -> np.ndarray:
    return block.astype(dtype, copy=False)


# --------------------------------------------------------------------------- from_array


_READ_LOCKS: dict[str, Any] = {}  # one lock per array name in each process (lock=True)


class _ProcessLock:
    """``from_array(lock=True)``: a lock that travels by name and is one
    ``threading.Lock`` per process, shared by every read task of one array there."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    def _lock(self) -> Any:
        return _READ_LOCKS.setdefault(self.name, threading.Lock())

    def acquire(self) -> bool:
        return self._lock().acquire()

    def release(self) -> None:
        self._lock().release()

    def __reduce__(self):
        return (_ProcessLock, (self.name,))

    def __repr__(self) -> str:
        return f"<one lock per process for {self.name!r}>"


def _read_block(source: Any, index: tuple, lock: Any = None, asarray: bool = True,
                getitem: Callable | None = None) -> np.ndarray:
    """Read one block from a sliceable source into a numpy array this task owns
    (under ``lock`` when given; kept as the source returns it when not ``asarray``)."""
    if getitem is not None and isinstance(source, hdf5.H5Source):
        source = source.dataset()  # (the user's function gets the h5py dataset, opened here)
    if lock is None:
        out = source[index] if getitem is None else getitem(source, index)
    else:
        lock.acquire()
        try:
            out = source[index] if getitem is None else getitem(source, index)
        finally:
            lock.release()
    if isinstance(out, np.ndarray) and isinstance(source, np.ndarray):
        return out.copy()  # never hand out views of the user's array
    return np.asarray(out) if asarray else out


def _hold(value: Any) -> Any:
    """The object ``from_array(inline_array=False)`` keeps under a key of its own."""
    return value


def _read_lock(lock: Any, name: str) -> Any:
    """``from_array``'s ``lock=``: None, a per-process lock, or the user's own, checked
    now: one that cannot travel to the workers (``threading.Lock``) is refused here."""
    if lock is None or isinstance(lock, (bool, np.bool_)):
        return _ProcessLock(name) if lock else None
    if not (callable(getattr(lock, "acquire", None)) and callable(getattr(lock, "release", None))):
        raise TypeError(f"from_array: lock={lock!r} is neither a bool nor a lock (an object with "
                        "acquire and release)")
    import cloudpickle
    try:
        cloudpickle.dumps(lock)
    except Exception as exc:
        raise TypeError(f"from_array: lock={lock!r} cannot travel to the workers ({exc}). Pass "
                        "lock=True for one lock per worker process, shared by this array's reads, or "
                        "lock=xsched.Lock('<name>') for one lock for the whole cluster") from None
    return lock


def from_array(x: Any, chunks: Any = "auto", *, name: str | None = None, lock: Any = False,
               asarray: bool | None = None, inline_array: bool = True, getitem: Callable | None = None,
               meta: Any = None, fancy: bool = True) -> Array:
    """A chunked array over ``x``: a numpy array, an ``h5py.Dataset`` or anything with
    ``shape``, ``dtype`` and ``__getitem__`` taking a tuple of slices.

    An h5py dataset is referenced by file path and dataset name, and each block is read by
    the process that runs its task (see ``xsched.array.hdf5``): nothing is read now. A
    numpy array is cut into blocks now, each travelling with its own task. Other objects
    are pickled into each read task (``inline_array=True``), or, with
    ``inline_array=False``, kept once under a key of their own that the read tasks use
    (a large reader object then travels once to each worker, not once per block).

    ``chunks``: an int, ``-1`` (whole axis), a tuple per axis (ints, -1, tuples of explicit
    sizes), or ``"auto"`` (about 128 MiB per block).

    ``lock``: reads of ``x`` that are not thread-safe (a netCDF4 variable, say) take a
    lock: ``True`` for one lock per worker process shared by this array's reads, or a
    lock that pickles (``xsched.Lock("<name>")``: one for the whole cluster).
    ``asarray``: whether each block read from an object becomes a NumPy array (``None``:
    unless the block's type has ``__array_function__``). ``getitem(x, slices)`` reads a
    block instead of ``x[slices]``. ``meta``: a NumPy array of ``x``'s dtype (blocks are
    NumPy arrays). ``fancy`` is accepted as dask's: blocks are read with slices only.

    >>> import h5py, numpy as np, xsched.array as xa
    >>> with h5py.File("movie-doc.h5", "w") as f:
    ...     _ = f.create_dataset("raw", data=np.ones((30, 4, 4), "f4"))
    >>> fh = h5py.File("movie-doc.h5", "r")
    >>> movie = xa.from_array(fh["raw"], chunks=(10, -1, -1), lock=True)
    >>> movie.chunks
    ((10, 10, 10), (4,), (4,))
    """
    if isinstance(x, Array):
        return x
    if hasattr(x, "__xsched_graph__"):  # (np.asarray would compute it here, whole, into one block)
        raise TypeError(f"from_array takes data in this process (NumPy, h5py, zarr...), not a lazy "
                        f"{type(x).__name__}; a dataframe's values are x.to_xsched_array(), a Delayed's "
                        "xa.from_delayed(value, shape, dtype)")
    if getitem is not None and not callable(getitem):
        raise TypeError(f"from_array: getitem={getitem!r} is not callable; it reads a block as "
                        "getitem(x, slices)")
    masked = isinstance(x, np.ma.MaskedArray)  # (its blocks keep their masks: joins.py, ma.py)
    if masked:
        source = x
        token_parts = ("masked", np.ma.getdata(x), np.ma.getmaskarray(x), x.fill_value)
        stored = None
    elif hdf5.is_h5py_dataset(x):
        source: Any = hdf5.H5Source.from_dataset(x)
        token_parts: tuple = source.token_parts()
        stored = getattr(x, "chunks", None)
    elif isinstance(x, np.ndarray) or not all(hasattr(x, a) for a in ("shape", "dtype",
                                                                      "__getitem__")):
        source = np.asarray(x)
        token_parts = ("numpy", source)
        stored = None
    else:
        source = x
        token_parts = ("object", type(x).__name__, id(x), uuid.uuid4().hex)
        stored = None
    shape = tuple(int(s) for s in source.shape)
    dtype = np.dtype(source.dtype)
    if meta is not None:
        if not isinstance(meta, np.ndarray):
            raise NotImplementedError(f"from_array: meta={type(meta).__name__}; xsched arrays hold NumPy "
                                      "blocks, so meta is a NumPy array (np.empty((0,) * x.ndim, x.dtype))")
        if meta.dtype != dtype:
            raise ValueError(f"from_array: meta's dtype {meta.dtype} is not x's {dtype}, which its blocks "
                             f"are read as; cast after reading: from_array(x).astype({str(meta.dtype)!r})")
    if isinstance(chunks, str) and chunks == "auto" and stored:
        chunks = _auto_aligned(shape, dtype, stored)
    chunks = normalize_chunks(chunks, shape, dtype)
    if getitem is not None:  # (blocks other than x[slices]: another name; objects' names are new anyway)
        token_parts = (*token_parts, "read-with", uuid.uuid4().hex)
    prefix = name or "from-array"
    arr_name = f"{prefix}-{new_token(token_parts, chunks)}"
    read_lock = _read_lock(lock, arr_name)
    if asarray is None:
        asarray = not hasattr(type(x), "__array_function__") or isinstance(x, np.ndarray)
    ann = annotations_in_force()
    layer: dict[str, Any] = {}
    reader: Any = source
    if not inline_array and not isinstance(source, np.ndarray):
        reader = Ref(f"{arr_name}-source")
        layer[reader.key] = Task(_hold, (source,), {}, per_task(ann))
    extra = (read_lock, bool(asarray), getitem)
    starts = [_starts(c) for c in chunks]
    for index in np.ndindex(*tuple(len(c) for c in chunks)):
        slices = tuple(slice(starts[a][i], starts[a][i + 1]) for a, i in enumerate(index))
        if isinstance(source, np.ndarray):  # (cut now: reads in tasks need no lock)
            block = source[slices] if getitem is None else getitem(source, slices)
            task = Task(np.ma.array if masked else np.array, (block,), {}, per_task(ann))
        elif extra == (None, True, None):
            task = Task(_read_block, (reader, slices), {}, per_task(ann))
        else:
            task = Task(_read_block, (reader, slices, *extra), {}, per_task(ann))
        layer[chunk_key(arr_name, index)] = task
    return Array(layer, arr_name, chunks, dtype)


def _auto_aligned(shape: tuple, dtype: np.dtype, stored: tuple) -> tuple:
    """'auto' chunks that are whole multiples of the file's own storage chunks."""
    auto = normalize_chunks("auto", shape, dtype)
    out = []
    for c, s, n in zip(auto, stored, shape):
        length = max(c)
        out.append(n if length >= n else max(s, (length // s) * s))
    return tuple(out)


# --------------------------------------------------------------------------- map_blocks


def elemwise(op: Callable, *args: Any, dtype: Any = None, name: str | None = None,
             extra_args: tuple = (), **kwargs: Any) -> Array:
    """Apply an elementwise function (e.g. a numpy ufunc) to arrays and scalars, per block.

    Arrays broadcast like numpy. Where they share an axis but cut it differently, they
    are rechunked alike, cut wherever any of them is (blocks are split, never joined).
    Plain numpy arrays are sliced to match each block.

    >>> import numpy as np, xsched.array as xa
    >>> x = xa.from_array(np.arange(4.0), chunks=2)
    >>> xa.elemwise(np.hypot, x, 3.0).compute().tolist()
    [3.0, 3.1622776601683795, 3.605551275463989, 4.242640687119285]
    """
    args = tuple(_operand(a, op) for a in args)
    unknown = next((a for a in args if isinstance(a, Array) and _masking.has_unknown_chunks(a)), None)
    if unknown is not None:  # blocks of unknown length (a boolean mask): those axes only like with like
        chunks, args = _masking.elementwise_chunks(funcname(op), args, Array)
        ndim = len(chunks)
    else:
        chunks, ndim, args = _broadcast_chunks(op, args)
    if dtype is None:
        dummies = [np.ones((1,) * a.ndim, a.dtype) if isinstance(a, Array)
                   else (np.ones((1,) * np.ndim(a), np.asarray(a).dtype)
                         if isinstance(a, np.ndarray) else a)
                   for a in args]
        with np.errstate(all="ignore"):
            dtype = np.asarray(op(*dummies, *extra_args, **kwargs)).dtype
    dtype = np.dtype(dtype)
    prefix = name or funcname(op)
    token = new_token(op, [a.name if isinstance(a, Array) else a for a in args], extra_args,
                      kwargs, str(dtype))
    out_name = f"{prefix}-{token}"
    ann = annotations_in_force()
    starts = [_starts(c) for c in chunks]
    layer: dict[str, Any] = {}
    for index in np.ndindex(*tuple(len(c) for c in chunks)):
        call_args = []
        for a in args:
            if isinstance(a, Array):
                off = ndim - a.ndim
                sub = tuple(0 if a.numblocks[ax] == 1 else index[off + ax]
                            for ax in range(a.ndim))
                call_args.append(Ref(chunk_key(a.name, sub)))
            elif isinstance(a, np.ndarray) and a.ndim:
                off = ndim - a.ndim
                sl = tuple(slice(None) if a.shape[ax] == 1 else
                           slice(starts[off + ax][index[off + ax]],
                                 starts[off + ax][index[off + ax] + 1])
                           for ax in range(a.ndim))
                call_args.append(np.ascontiguousarray(a[sl]))
            else:
                call_args.append(a)
        layer[chunk_key(out_name, index)] = Task(op, tuple(call_args) + tuple(extra_args),
                                                 dict(kwargs), per_task(ann))
    graphs = [a._graph for a in args if isinstance(a, Array)]
    return Array(LayeredGraph.merge(*graphs, new={out_name: layer}), out_name, chunks, dtype)


def _operand(a: Any, op: Callable) -> Any:
    """A list or tuple operand as the NumPy array NumPy reads it as, so that it is cut into
    blocks like one (passed whole, every block would broadcast against all of it); a lazy
    value of another collection (a dataframe's ``Scalar``) as a 0-d array of it."""
    if not isinstance(a, (list, tuple)):
        return _zero_d(a, op) if not isinstance(a, Array) and hasattr(a, "__xsched_graph__") else a
    if _holds_array(a):
        raise TypeError(f"{funcname(op)}: a list or tuple holding xsched arrays is not an operand; "
                        "join them into one array first, e.g. xa.stack([...])")
    return np.asarray(a)


def _zero_d(value: Any, op: Callable) -> "Array":
    """A 0-d array computed from ``value``, a lazy scalar of known dtype (``df.x.sum()``);
    other lazy values (a Delayed, a bag's Item: their dtype is not known) are refused, naming
    the way to declare one.

    >>> import pandas as pd, xsched.array as xa, xsched.dataframe as xd
    >>> total = xd.from_pandas(pd.Series([1, 2, 3]), npartitions=2).sum()
    >>> (xa.arange(3, chunks=2) + total).compute().tolist()
    [6, 7, 8]
    """
    # (one value of one key: a Scalar; a dataframe or Series has many, and a Delayed no dtype)
    one = not isinstance(value, Delayed) and isinstance(getattr(value, "key", None), str)
    dtype = getattr(value, "dtype", None) if one else None
    try:
        dtype = np.dtype(dtype) if dtype is not None and hasattr(value, "to_delayed") else None
    except TypeError:
        dtype = None
    if dtype is None:
        raise TypeError(f"{funcname(op)}: a lazy {type(value).__name__} is not an array operand (not one value of "
                        "known dtype); a dataframe's values are x.to_xsched_array(lengths=True), a Delayed's "
                        "xa.from_delayed(value, shape, dtype)")
    return from_delayed(value.to_delayed(), shape=(), dtype=dtype)


def _holds_array(seq: Any) -> bool:
    return any(isinstance(v, Array) or (isinstance(v, (list, tuple)) and _holds_array(v)) for v in seq)


def _broadcast_chunks(op: Callable, args: tuple) -> tuple:
    """(chunks, ndim, args rechunked alike) of an element-wise ``op`` on ``args``."""
    shapes = [np.shape(a) if not isinstance(a, Array) else a.shape for a in args]
    try:
        out_shape = np.broadcast_shapes(*shapes)
    except ValueError:
        raise ValueError(f"{funcname(op)}: shapes {shapes} do not broadcast together") from None
    arrays = [a for a in args if isinstance(a, Array)]
    if len(arrays) > 1:
        unified = iter(_rechunk.unify_chunks(arrays, out_shape))
        args = tuple(next(unified) if isinstance(a, Array) else a for a in args)
    ndim = len(out_shape)
    out_chunks: list[tuple[int, ...] | None] = [None] * ndim
    for a in args:
        if not isinstance(a, Array):
            continue
        off = ndim - a.ndim
        for ax in range(a.ndim):
            if a.shape[ax] == out_shape[off + ax]:
                prev = out_chunks[off + ax]
                if prev is not None and prev != a.chunks[ax]:
                    raise ValueError(
                        f"{funcname(op)}: arrays have different chunks on axis {off + ax} "
                        f"({prev} and {a.chunks[ax]}); rechunk one of them first, e.g. "
                        "y.rechunk(x.chunks)."
                    )
                out_chunks[off + ax] = a.chunks[ax]
            elif a.numblocks[ax] != 1:
                raise ValueError(f"{funcname(op)}: cannot broadcast an axis of length "
                                 f"{a.shape[ax]} split into several blocks")
    for ax in range(ndim):  # axes only numpy operands span: one block
        if out_chunks[ax] is None:
            out_chunks[ax] = (out_shape[ax],)
    return tuple(out_chunks), ndim, args
