"""A directory of ``.npy`` files, one per block along an axis: ``to_npy_stack`` and
``from_npy_stack``, the simplest store an array can round-trip through, readable by NumPy
alone (``np.load`` of any one file) and laid out as dask.array's own stacks (files ``0.npy``,
``1.npy``... and an ``info`` file holding the chunks, dtype and axis), so either reads the
other's. Each block is written by the worker that holds it; reading maps each file (with
``mmap_mode``) in the task that needs it.

>>> import os, tempfile, numpy as np, xsched.array as xa
>>> x = xa.from_array(np.arange(12).reshape(6, 2), chunks=(4, 2))
>>> with tempfile.TemporaryDirectory() as d:
...     xa.to_npy_stack(d, x)
...     y = xa.from_npy_stack(d, mmap_mode=None)
...     sorted(os.listdir(d)), y.chunks, int(y.sum().compute())
(['0.npy', '1.npy', 'info'], ((4, 2), (2,)), 66)
"""

from __future__ import annotations

import os
import pickle
from typing import Any

import numpy as np

from ..files import LocalFileSystem, make_folder
from ..graph.collection import run_writes
from ..graph.layers import LayeredGraph, annotations_in_force, chunk_key, new_token, per_task
from ..graph.spec import Ref, Task
from .axes import axis_index
from .core import Array
from .masking import known_chunks_needed

__all__ = ["to_npy_stack", "from_npy_stack"]


def _save(block: np.ndarray, path: str) -> str:
    np.save(path, block)
    return path


def to_npy_stack(dirname: str, x: Array, axis: int = 0) -> None:
    """Write ``x`` as one ``.npy`` file per block along ``axis`` into the directory
    ``dirname`` (made if missing), the other axes whole in each file (rechunked so first).

    >>> import os, tempfile, numpy as np, xsched.array as xa
    >>> d = tempfile.mkdtemp()
    >>> xa.to_npy_stack(d, xa.from_array(np.arange(6).reshape(3, 2), chunks=(2, 1)))
    >>> sorted(os.listdir(d)), np.load(os.path.join(d, "1.npy")).tolist()
    (['0.npy', '1.npy', 'info'], [[4, 5]])
    """
    if not isinstance(x, Array):
        raise TypeError(f"to_npy_stack writes an xsched array, not {type(x).__name__}")
    axis = axis_index(axis, x.ndim, "to_npy_stack")
    known_chunks_needed(x, "to_npy_stack")
    if x.dtype.hasobject:
        raise TypeError(f"to_npy_stack: the array holds Python objects ({x.dtype}), which .npy files "
                        "keep only pickled and from_npy_stack will not unpickle; convert them first")
    x = x.rechunk({i: -1 for i in range(x.ndim) if i != axis})
    make_folder(LocalFileSystem(), dirname, "to_npy_stack")
    with open(os.path.join(dirname, "info"), "wb") as f:
        pickle.dump({"chunks": x.chunks, "dtype": x.dtype, "axis": axis}, f)
    name = f"to-npy-stack-{new_token(x.name, os.path.abspath(dirname))}"
    ann = annotations_in_force()
    layer = {}
    for i in range(x.numblocks[axis]):
        index = tuple(i if d == axis else 0 for d in range(x.ndim))
        layer[chunk_key(name, (i,))] = Task(_save, (Ref(chunk_key(x.name, index)),
                                                    os.path.join(os.path.abspath(dirname), f"{i}.npy")),
                                            {}, per_task(ann))
    run_writes(x._graph, name, layer, list(layer), compute=True)


def _load(path: str, mmap_mode: Any) -> np.ndarray:
    return np.load(path, mmap_mode=mmap_mode)


def from_npy_stack(dirname: str, mmap_mode: Any = "r") -> Array:
    """The array a ``to_npy_stack`` directory holds (dask.array's too): a block per file,
    opened with ``mmap_mode`` (``"r"``: memory-mapped read-only; ``"c"``: copy on write;
    None: read whole); a computed result is a plain array, never a map of the file.

    The ``info`` file is unpickled: read only directories you trust.

    >>> import tempfile, numpy as np, xsched.array as xa
    >>> d = tempfile.mkdtemp()
    >>> xa.to_npy_stack(d, xa.from_array(np.arange(5), chunks=3))
    >>> y = xa.from_npy_stack(d)
    >>> y.chunks, y.compute().tolist()
    (((3, 2),), [0, 1, 2, 3, 4])
    """
    if mmap_mode not in (None, "r", "c"):  # (w+ would empty the files; r+ would let tasks write into them)
        raise ValueError(f"from_npy_stack: mmap_mode must be 'r', 'c' or None, got {mmap_mode!r}")
    path = os.path.join(dirname, "info")
    if not os.path.exists(path):
        raise FileNotFoundError(f"from_npy_stack: {dirname!r} has no 'info' file; is it a directory "
                                "to_npy_stack wrote?")
    with open(path, "rb") as f:
        info = pickle.load(f)
    chunks, dtype, axis = tuple(tuple(c) for c in info["chunks"]), np.dtype(info["dtype"]), int(info["axis"])
    axis %= len(chunks)
    if dtype.hasobject:
        raise TypeError(f"from_npy_stack: {dirname!r} holds Python objects ({dtype}), pickled in its files; "
                        "read them with numpy.load(..., allow_pickle=True) if you trust them")
    name = f"from-npy-stack-{new_token(os.path.abspath(dirname), os.path.getmtime(path), mmap_mode)}"
    ann = annotations_in_force()
    layer = {}
    for i in range(len(chunks[axis])):
        index = tuple(i if d == axis else 0 for d in range(len(chunks)))
        layer[chunk_key(name, index)] = Task(_load, (os.path.join(os.path.abspath(dirname), f"{i}.npy"), mmap_mode),
                                             {}, per_task(ann))
    return Array(LayeredGraph({name: layer}), name, chunks, dtype)
