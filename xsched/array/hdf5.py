"""HDF5 datasets as chunk sources, and writing arrays to HDF5 chunk by chunk.

Why this module exists: an open ``h5py.Dataset`` cannot be pickled, and a process-wide
handle guarded by a lock serialises every read. So a dataset travels in the task graph as
``H5Source(path, dataset_name)``: a few strings. The process that runs a read task opens
the file itself (read-only), through a small per-process cache of ``h5py.File`` objects
keyed by path, closed at interpreter exit. Each read returns a fresh numpy array.

In the process that called ``from_array`` the user's own dataset handle is reused, so local
computation does not open the file a second time; it is never pickled.

>>> import h5py, numpy as np, xsched.array as xa
>>> with h5py.File("xsched-doc.h5", "w") as f:
...     _ = f.create_dataset("x", data=np.arange(12.0).reshape(3, 4))
>>> f = h5py.File("xsched-doc.h5", "r")
>>> x = xa.from_array(f["x"], chunks=(1, -1))
>>> float(x.sum().compute())
66.0
"""

from __future__ import annotations

import atexit
import os
import threading
from typing import Any

import numpy as np

from ..graph.spec import Task

__all__ = ["H5Source", "is_h5py_dataset", "close_files", "to_hdf5"]

_files_lock = threading.Lock()
# path -> (stat signature, open read-only h5py.File)
_open_files: dict[str, tuple[tuple[int, int], Any]] = {}


def is_h5py_dataset(obj: Any) -> bool:
    """True when ``obj`` is an ``h5py.Dataset`` (without importing h5py if nobody has)."""
    mod = type(obj).__module__ or ""
    if not mod.startswith("h5py"):
        return False
    import h5py

    return isinstance(obj, h5py.Dataset)


def _stat_signature(path: str) -> tuple[int, int]:
    st = os.stat(path)
    return (st.st_mtime_ns, st.st_size)


def _open_read_only(path: str):
    """The cached read-only ``h5py.File`` for ``path``, reopened if the file changed on disk."""
    import h5py

    sig = _stat_signature(path)
    with _files_lock:
        entry = _open_files.get(path)
        if entry is not None:
            old_sig, fh = entry
            if old_sig == sig and fh.id.valid:
                return fh
            _close_quietly(fh)
            del _open_files[path]
        fh = h5py.File(path, "r")
        _open_files[path] = (sig, fh)
        return fh


def _close_quietly(fh: Any) -> None:
    try:
        fh.close()
    except Exception:  # already closed, or interpreter shutting down
        pass


def close_files(path: str | None = None) -> None:
    """Close this process's cached read-only HDF5 handles (all, or those of ``path``).

    Needed before rewriting a file that this process has read through ``from_array``:
    HDF5 refuses to truncate a file that is still open.

    >>> from xsched.array.hdf5 import close_files
    >>> close_files()
    """
    with _files_lock:
        paths = list(_open_files) if path is None else [os.path.abspath(path)]
        for p in paths:
            entry = _open_files.pop(p, None)
            if entry is not None:
                _close_quietly(entry[1])


atexit.register(close_files)


class H5Source:
    """A picklable stand-in for an ``h5py.Dataset``: file path + dataset name.

    ``source[slices]`` returns a fresh numpy array read from the dataset, opening the file
    in this process when needed. Workers therefore need the same path (a shared or local
    file system); files that exist only in memory (``driver="core"`` without a backing
    store) can be read locally but not shipped.

    >>> import h5py, numpy as np
    >>> from xsched.array.hdf5 import H5Source
    >>> with h5py.File("xsched-doc2.h5", "w") as f:
    ...     _ = f.create_dataset("d", data=np.ones((2, 3)))
    >>> H5Source("xsched-doc2.h5", "d")[0:1, :].shape
    (1, 3)
    """

    __slots__ = ("path", "name", "shape", "dtype", "_local")

    def __init__(self, path: str, name: str, shape: tuple | None = None, dtype: Any = None,
                 local: Any = None) -> None:
        self.path = os.path.abspath(path)
        self.name = name
        self._local = local
        if shape is None or dtype is None:
            ds = self._dataset()
            shape, dtype = ds.shape, ds.dtype
        self.shape = tuple(shape)
        self.dtype = np.dtype(dtype)

    @classmethod
    def from_dataset(cls, ds: Any) -> "H5Source":
        """Describe an open ``h5py.Dataset`` by its file's path and its name inside the file."""
        if ds.name is None:
            raise ValueError(
                "from_array: this h5py dataset is anonymous (not linked into the file), so "
                "workers cannot find it by name; link it into the file first, e.g. "
                "f['data'] = ds."
            )
        return cls(ds.file.filename, ds.name, ds.shape, ds.dtype, local=ds)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def token_parts(self) -> tuple:
        """What identifies the data: path, name, shape, dtype and the file's mtime/size."""
        try:
            sig = _stat_signature(self.path)
        except OSError:
            sig = (id(self._local), 0)
        return ("h5py", self.path, self.name, self.shape, str(self.dtype), sig)

    def dataset(self) -> Any:
        """The ``h5py.Dataset``, opened read-only in this process (the one given, here)."""
        return self._dataset()

    def _dataset(self):
        local = self._local
        if local is not None:
            try:
                if local.id.valid:
                    return local
            except Exception:
                pass
            self._local = None
        if not os.path.exists(self.path):
            raise FileNotFoundError(
                f"HDF5 file {self.path!r} (dataset {self.name!r}) does not exist in this "
                "process's file system; workers must see the file at the same path as the "
                "client (use a shared file system or copy the file first)."
            )
        fh = _open_read_only(self.path)
        try:
            return fh[self.name]
        except KeyError:
            raise KeyError(
                f"HDF5 file {self.path!r} has no dataset {self.name!r} (was the file "
                "rewritten since from_array was called?)"
            ) from None

    def __getitem__(self, index: Any) -> np.ndarray:
        ds = self._dataset()
        if not isinstance(index, tuple):
            index = (index,)
        if self.shape == ():
            return np.asarray(ds[()])
        # h5py refuses empty selections on some versions; answer them without reading.
        out_shape = _selection_shape(index, self.shape)
        if out_shape is not None and 0 in out_shape:
            return np.empty(out_shape, dtype=self.dtype)
        return np.asarray(ds[index])

    def __getstate__(self) -> dict:
        return {"path": self.path, "name": self.name, "shape": self.shape, "dtype": self.dtype}

    def __setstate__(self, state: dict) -> None:
        self.path = state["path"]
        self.name = state["name"]
        self.shape = tuple(state["shape"])
        self.dtype = np.dtype(state["dtype"])
        self._local = None

    def __reduce__(self):
        return (_rebuild_source, (self.__getstate__(),))

    def __repr__(self) -> str:
        return f"H5Source({self.path!r}, {self.name!r}, shape={self.shape}, dtype={self.dtype})"


def _rebuild_source(state: dict) -> H5Source:
    obj = H5Source.__new__(H5Source)
    obj.__setstate__(state)
    return obj


def _selection_shape(index: tuple, shape: tuple) -> tuple | None:
    """Shape selected by a tuple of ints/slices, or None when it cannot be told cheaply."""
    out = []
    for i, n in enumerate(shape):
        idx = index[i] if i < len(index) else slice(None)
        if isinstance(idx, slice):
            out.append(len(range(*idx.indices(n))))
        elif isinstance(idx, (int, np.integer)):
            continue
        else:
            return None
    return tuple(out)


def to_hdf5(path: str, name: Any, arr: Any = None, *, chunks: Any = True, compression: Any = None,
            batch_size: int | None = None, mode: str = "a", **dataset_kwargs: Any) -> None:
    """Write ``arr`` to dataset ``name`` of the HDF5 file at ``path``, chunk by chunk; or,
    as dask's ``to_hdf5(path, {name: arr, ...})``, each array of a dict to its dataset (one
    after another, with the same options, in one opening of the file).

    Chunks are computed in batches of ``batch_size`` (default: 4) and written in this
    process as each batch arrives, so only a batch of chunks is ever held here. With a
    default client the batches are computed on the cluster; otherwise in this process.
    An existing dataset of that name is replaced.

    >>> import numpy as np, h5py, xsched.array as xa
    >>> x = xa.from_array(np.arange(10.0), chunks=4)
    >>> xa.to_hdf5("xsched-out.h5", "/x", x)
    >>> with h5py.File("xsched-out.h5", "r") as f:
    ...     float(f["/x"][:].sum())
    45.0
    >>> xa.to_hdf5("xsched-out.h5", {"/a": x, "/b": x * 2})
    >>> with h5py.File("xsched-out.h5", "r") as f:
    ...     f["/a"][:3].tolist(), f["/b"][:3].tolist()
    ([0.0, 1.0, 2.0], [0.0, 2.0, 4.0])
    """
    import h5py

    if isinstance(name, dict):
        if arr is not None:
            raise TypeError("to_hdf5: with a dict {dataset: array} pass no array after it: "
                            "to_hdf5(path, {'/x': x, '/y': y})")
        datasets = dict(name)
    elif arr is None:
        raise TypeError("to_hdf5: no array given; call to_hdf5(path, '/x', x), or "
                        "to_hdf5(path, {'/x': x, '/y': y})")
    else:
        datasets = {name: arr}
    for arr in datasets.values():
        # an xsched Array, told by the method this needs (core.py imports this module, not back)
        if not callable(getattr(arr, "_compute_blocks", None)):
            raise TypeError(f"to_hdf5 expects an xsched.array.Array, got {type(arr).__name__}; "
                            "wrap numpy data with xsched.array.from_array(x, chunks=...) first.")
    batch_size = int(batch_size or 4)
    if batch_size < 1:
        raise ValueError(f"to_hdf5: batch_size must be >= 1, got {batch_size}")
    path = os.path.abspath(path)
    _refuse_reading_what_is_replaced(path, datasets)
    close_files(path)  # a cached read handle would make HDF5 refuse to write
    with h5py.File(path, mode) as fh:
        for name, arr in datasets.items():
            _write_dataset(fh, name, arr, chunks, compression, batch_size, dataset_kwargs)


def _refuse_reading_what_is_replaced(path: str, datasets: dict) -> None:
    """Raise, before anything is written, if an array written reads a dataset of ``path``
    that the call replaces: it is deleted before the blocks are read (the data would be
    lost, the result made of what the new dataset holds)."""
    replaced = {"/" + str(name).strip("/") for name in datasets}
    for name, arr in datasets.items():
        for source in _h5_sources(arr._graph.flat().values()):
            if source.path == path and "/" + source.name.strip("/") in replaced:
                raise ValueError(f"to_hdf5: the array written to {name!r} reads dataset {source.name!r} of "
                                 f"{path}, which this call replaces before reading it (its data would be "
                                 "lost); write to another dataset or file, then rename it")


def _h5_sources(values: Any):
    """The ``H5Source`` objects anywhere in tasks' arguments (a graph's values)."""
    stack = list(values)
    while stack:
        obj = stack.pop()
        if isinstance(obj, H5Source):
            yield obj
        elif isinstance(obj, Task):
            stack.extend(obj.args)
            stack.extend(obj.kwargs.values())
        elif isinstance(obj, (list, tuple, set)):
            stack.extend(obj)
        elif isinstance(obj, dict):
            stack.extend(obj.values())


def _write_dataset(fh: Any, name: str, arr: Any, chunks: Any, compression: Any, batch_size: int,
                   dataset_kwargs: dict) -> None:
    """``to_hdf5`` of one array into the open file ``fh``."""
    if chunks is True and arr.ndim:
        chunks = tuple(max(1, c) for c in arr.chunksize)
    if arr.ndim == 0 or arr.size == 0:
        chunks = None
    indices = list(np.ndindex(*arr.numblocks))
    keys = [arr.chunk_key(i) for i in indices]
    if name in fh:
        del fh[name]
    ds = fh.create_dataset(name, shape=arr.shape, dtype=arr.dtype, chunks=chunks,
                           compression=compression, **dataset_kwargs)
    starts = [np.cumsum((0,) + c) for c in arr.chunks]
    for lo in range(0, len(indices), batch_size):
        batch_idx = indices[lo:lo + batch_size]
        blocks = arr._compute_blocks(keys[lo:lo + batch_size])
        for idx, block in zip(batch_idx, blocks):
            sel = tuple(slice(int(starts[a][i]), int(starts[a][i + 1]))
                        for a, i in enumerate(idx))
            ds[sel] = np.asarray(block, dtype=arr.dtype)
