"""zarr arrays (zarr-python 3) as chunk sources, and writing arrays to zarr block by block.

Why this module exists: a zarr array is many files (or objects in a bucket) that any
process can open by name, so neither its data nor an open handle needs to travel in the
graph. A task carries a ``ZarrSource``: the store's path or URL, the array's path inside it
(``component``) and fsspec ``storage_options``, a few strings. A read task opens the array
in the process that runs it and reads its region; a write task opens it for writing and
writes the block it was given, so blocks go from the worker that holds them straight to
the store, never through the client.

zarr is an optional dependency (``pip install 'xsched[array]'``); it is imported when one
of these functions is called, so ``import xsched.array`` works without it.

Local paths are made absolute (workers must see them at the same path: one host, or a
shared file system); URLs such as ``s3://bucket/x.zarr`` are opened through fsspec by zarr
itself, with ``storage_options``.

>>> import os, tempfile, numpy as np, xsched.array as xa
>>> path = os.path.join(tempfile.mkdtemp(), "x.zarr")
>>> xa.to_zarr(xa.from_array(np.arange(12.0).reshape(3, 4), chunks=(2, 2)), path)
>>> y = xa.from_zarr(path)
>>> y.chunks
((2, 1), (2, 2))
>>> float(y.sum().compute())
66.0
"""

from __future__ import annotations

import os
import uuid
from typing import Any

import numpy as np

from ..graph.delayed import Delayed
from ..graph.layers import annotations_in_force, chunk_key, new_token, per_task
from ..graph.spec import Ref, Task
from .chunks import _starts, normalize_chunks
from .core import Array, _auto_aligned
from .masking import known_chunks_needed
from .store import all_written, on_grid, partial_chunks_lock, read_back, refuse_in_memory

__all__ = ["from_zarr", "to_zarr", "ZarrSource"]

INSTALL_HINT = "pip install 'xsched[array]'"


def _import_zarr() -> Any:
    """The zarr package (version 3), or an ImportError saying how to install it."""
    try:
        import zarr
    except ImportError as exc:
        raise ImportError(f"xsched.array's zarr support needs zarr>=3, which is not "
                          f"installed: {INSTALL_HINT}") from exc
    major = str(getattr(zarr, "__version__", "0")).split(".")[0]
    if not major.isdigit() or int(major) < 3:
        raise ImportError(f"xsched.array needs zarr>=3 (zarr-python 3), found zarr "
                          f"{zarr.__version__}: {INSTALL_HINT}")
    return zarr


class ZarrSource:
    """Where a zarr array lives: ``store`` (a path, a URL or a picklable zarr store),
    ``component`` (the array's path inside it) and fsspec ``storage_options``.

    It is what read and write tasks carry instead of data: ``source[region]`` opens the
    array in this process and reads the region into a new numpy array.

    >>> import os, tempfile, numpy as np, zarr
    >>> from xsched.array.zarr import ZarrSource
    >>> path = os.path.join(tempfile.mkdtemp(), "s.zarr")
    >>> zarr.create_array(path, shape=(4,), chunks=(2,), dtype="i8")[:] = np.arange(4)
    >>> ZarrSource(path)[1:3].tolist()
    [1, 2]
    """

    __slots__ = ("store", "component", "storage_options")

    def __init__(self, store: Any, component: str | None = None,
                 storage_options: dict | None = None) -> None:
        if isinstance(store, os.PathLike):
            store = os.fspath(store)
        if isinstance(store, str) and store.startswith("file://") and not storage_options:
            store = store[len("file://"):]  # a local path (zarr's fsspec route would not
            # create the directories)
        if isinstance(store, str) and "://" not in store:
            store = os.path.abspath(store)
        self.store = store
        self.component = component or None
        self.storage_options = dict(storage_options) if storage_options else None

    @classmethod
    def from_user(cls, url_or_store: Any, component: str | None,
                  storage_options: dict | None) -> "ZarrSource":
        """A source for what a user passed: a path, a URL, a zarr store or a zarr array."""
        zarr = _import_zarr()
        if isinstance(url_or_store, zarr.Array):
            store_path = url_or_store.store_path
            inner = store_path.path or None
            if component is not None and inner is not None:
                component = f"{inner}/{component}"
            return cls.from_user(store_path.store, component or inner, storage_options)
        from zarr.storage import LocalStore

        if isinstance(url_or_store, LocalStore):  # travel as its path, not as the object
            return cls(str(url_or_store.root), component, storage_options)
        if not isinstance(url_or_store, (str, os.PathLike)) and storage_options:
            raise ValueError("storage_options= applies to paths and URLs only; this store "
                             "is already configured.")
        return cls(url_or_store, component, storage_options)

    def open(self, mode: str = "r") -> Any:
        """The zarr array, opened in this process (``mode``: ``"r"`` or ``"r+"``)."""
        zarr = _import_zarr()
        kwargs: dict[str, Any] = {"mode": mode}
        if self.component:
            kwargs["path"] = self.component
        if self.storage_options:
            kwargs["storage_options"] = self.storage_options
        try:
            return zarr.open_array(self.store, **kwargs)
        except FileNotFoundError:
            raise FileNotFoundError(f"no zarr array at {self.describe()} in this process "
                                    "(workers must see local paths at the same place as "
                                    "the client: one host or a shared file system)") from None

    def describe(self) -> str:
        where = self.store if isinstance(self.store, str) else repr(self.store)
        return f"{where!r}" + (f" (component {self.component!r})" if self.component else "")

    def __getitem__(self, region: Any) -> np.ndarray:
        return np.asarray(self.open("r")[region])

    def __reduce__(self):
        return (ZarrSource, (self.store, self.component, self.storage_options))

    def refuse_workers_writing(self, what: str) -> None:
        """Raise, now, if workers would write this in-memory store (see ``store.refuse_in_memory``)."""
        refuse_in_memory(self.store, self.describe(), what)

    def __repr__(self) -> str:
        return f"ZarrSource({self.describe()})"


def _read_region(source: ZarrSource, region: tuple[slice, ...]) -> np.ndarray:
    """A read task: open the array here and read one region."""
    return source[region]


def _write_region(block: Any, source: ZarrSource, region: tuple[slice, ...],
                  where: str) -> tuple[int, ...]:
    """A write task: open the array here for writing and store one block at ``region``."""
    block = np.asarray(block)
    shape = tuple(s.stop - s.start for s in region)
    if block.shape != shape:
        raise ValueError(f"to_zarr: {where} came back with shape {block.shape}, but its "
                         f"region {region} of {source.describe()} has shape {shape}; "
                         "nothing was written for it.")
    z = source.open("r+")
    with partial_chunks_lock((repr(z.store_path),), region, tuple(z.shape), getattr(z, "shards", None) or z.chunks):
        z[region] = block
    return shape


def from_zarr(url_or_store: Any, component: str | None = None, chunks: Any = None, *,
              storage_options: dict | None = None, name: str | None = None) -> Array:
    """A chunked array over a zarr array, read block by block where its tasks run.

    ``url_or_store``: a local path, an fsspec URL (``s3://...``, with ``storage_options``),
    a zarr store or a ``zarr.Array``. ``component``: the array's path inside a group.
    ``chunks``: default the zarr array's own chunks (its shards when it is sharded), so each
    task reads whole stored chunks; ``"auto"`` takes whole multiples of them of about
    128 MiB; anything ``normalize_chunks`` takes also works (blocks then span stored
    chunks). Nothing is read now except the array's metadata; each task carries the path,
    not data, and opens the array itself. A store object other than a local one is
    pickled into each task (a ``MemoryStore`` therefore works in this process only).

    >>> import os, tempfile, numpy as np, zarr, xsched.array as xa
    >>> path = os.path.join(tempfile.mkdtemp(), "movie.zarr")
    >>> z = zarr.create_array(path, shape=(6, 4), chunks=(2, 4), dtype="f4")
    >>> z[:] = np.ones((6, 4))
    >>> movie = xa.from_zarr(path)
    >>> movie.chunks
    ((2, 2, 2), (4,))
    >>> xa.from_zarr(path, chunks=(3, 2)).sum(axis=0).compute().tolist()
    [6.0, 6.0, 6.0, 6.0]
    """
    source = ZarrSource.from_user(url_or_store, component, storage_options)
    z = source.open("r")
    shape = tuple(int(s) for s in z.shape)
    dtype = np.dtype(z.dtype)
    stored = tuple(int(c) for c in (getattr(z, "shards", None) or z.chunks))
    if chunks is None:
        chunks = stored
    elif isinstance(chunks, str) and chunks == "auto" and shape:
        chunks = _auto_aligned(shape, dtype, stored)
    chunks = normalize_chunks(chunks, shape, dtype)
    # a new name per call: the files may change between two calls with the same arguments
    arr_name = f"{name or 'from-zarr'}-{new_token('zarr', repr(source), chunks, uuid.uuid4().hex)}"
    ann = annotations_in_force()
    starts = [_starts(c) for c in chunks]
    layer: dict[str, Any] = {}
    for index in np.ndindex(*tuple(len(c) for c in chunks)):
        region = tuple(slice(starts[a][i], starts[a][i + 1]) for a, i in enumerate(index))
        layer[chunk_key(arr_name, index)] = Task(_read_region, (source, region), {},
                                                 per_task(ann))
    return Array(layer, arr_name, chunks, dtype)


def _regular_chunks(arr: Array) -> tuple[int, ...]:
    """The one block shape of ``arr`` (the last block along an axis may be shorter), or
    an error naming the axis and the fix."""
    shape = []
    for axis, chunks in enumerate(arr.chunks):
        first = chunks[0]
        if len(chunks) > 1 and (any(c != first for c in chunks[:-1])
                                or not 0 < chunks[-1] <= first):
            shown = chunks if len(chunks) <= 8 else chunks[:4] + ("...",) + chunks[-2:]
            raise ValueError(
                f"to_zarr: the array's chunks along axis {axis} are irregular {shown}; a zarr "
                f"array has chunks of one size, and blocks that straddle its chunks would be "
                f"written by several tasks at once, racing on the chunks they share. Rechunk "
                f"to regular blocks first, e.g. arr.rechunk({{{axis}: {max(chunks)}}})"
                ".to_zarr(...)."
            )
        shape.append(max(first, 1))
    return tuple(shape)


def to_zarr(arr: Array, url: Any, component: str | None = None, overwrite: bool = False,
            compute: bool = True, return_stored: bool = False, *, region: Any = None,
            append_dim: int | None = None, storage_options: dict | None = None,
            **create_kwargs: Any) -> Delayed | Array | None:
    """Write ``arr`` to zarr at ``url`` (a local path, an fsspec URL or a zarr store), each
    block from the task that holds it: a new array, a ``region`` of an existing one, or
    appended to an existing one along ``append_dim``.

    A new array is created now with chunks equal to ``arr``'s blocks, which must therefore
    be regular (all of one size along each axis, the last one possibly shorter): each task
    then writes whole zarr chunks of its own and no two tasks touch the same chunk.
    Irregular blocks raise an error; ``rechunk`` them first. With ``chunks=`` (zarr's chunk
    shape) the array gets those chunks instead, and ``arr`` is rechunked so that its blocks
    start on them.

    ``region`` (a slice per axis, or ``{axis: slice}``; other axes whole) writes into that
    part of an existing array; ``append_dim`` grows an existing array along that axis by
    ``arr``'s length there and writes ``arr`` at the end. Either way, where ``arr``'s
    blocks do not start on the stored chunks (a zarr chunk would be written by two tasks
    at once, one of them losing its part), ``arr`` is first rechunked onto the stored
    grid; only the writes of part of a stored chunk (a region's ends) then take a lock, the
    array's, cluster-wide: another write computed with this one may fill the rest of that
    chunk. The metadata (creation, growth) is written now, the blocks when computed.

    ``url`` may also be an existing ``zarr.Array`` (as dask's ``to_zarr`` takes): ``arr`` is
    written into it, as into a region that is all of it, so their shapes must be equal.

    ``component``: the array's path inside a group. ``overwrite``: replace an existing
    array there (otherwise that is an error). ``create_kwargs`` go to
    ``zarr.create_array`` (``compressors=``, ``attributes=``, ``dimension_names=``, ...).
    With ``compute=False`` nothing is written yet: the ``Delayed`` returned writes every
    block when computed (its value is None). Computing runs on the default client when
    there is one, otherwise in this process.

    ``return_stored=True`` returns an array (chunked as written) that reads back what was
    stored: after the whole write with ``compute=True``; with ``compute=False`` each of its
    blocks is read right after that block's write, so computing it writes the array.

    >>> import os, tempfile, numpy as np, zarr, xsched.array as xa
    >>> path = os.path.join(tempfile.mkdtemp(), "out.zarr")
    >>> x = xa.from_array(np.arange(10), chunks=4)
    >>> xa.to_zarr(x * 2, path, component="doubled")
    >>> zarr.open_array(path, path="doubled", mode="r")[:].tolist()
    [0, 2, 4, 6, 8, 10, 12, 14, 16, 18]
    >>> zarr.open_array(path, path="doubled", mode="r").chunks
    (4,)
    >>> xa.to_zarr(xa.ones(3, chunks=3, dtype=int), path, component="doubled", region=(slice(2, 5),))
    >>> xa.to_zarr(x[:3], path, component="doubled", append_dim=0)
    >>> zarr.open_array(path, path="doubled", mode="r")[:].tolist()
    [0, 2, 1, 1, 1, 10, 12, 14, 16, 18, 0, 1, 2]
    >>> z = zarr.create_array(os.path.join(os.path.dirname(path), "given.zarr"), shape=(10,), chunks=(5,), dtype="i8")
    >>> xa.to_zarr(x, z)
    >>> z[:].tolist()
    [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]
    >>> back = xa.to_zarr(x + 1, path, component="plus", compute=False, return_stored=True)
    >>> back.sum().compute()
    np.int64(55)
    >>> zarr.open_array(path, path="plus", mode="r")[:3].tolist()
    [1, 2, 3]
    """
    if not isinstance(arr, Array):
        raise TypeError(f"to_zarr expects an xsched.array.Array, got {type(arr).__name__}; "
                        "wrap numpy data with xsched.array.from_array(x, chunks=...) first.")
    known_chunks_needed(arr, "to_zarr")
    zarr = _import_zarr()
    source = ZarrSource.from_user(url, component, storage_options)
    source.refuse_workers_writing("to_zarr")
    if isinstance(url, zarr.Array) and region is None and append_dim is None:
        if tuple(url.shape) != arr.shape:
            raise ValueError(f"to_zarr: the zarr array given has shape {tuple(url.shape)}, the array "
                             f"written {arr.shape}; they must be equal (region= writes into a part "
                             "of it, append_dim= adds to it).")
        region = ()  # (all of it)
    if region is not None or append_dim is not None:
        arr, offset = _into_existing(arr, source, region, append_dim, overwrite, create_kwargs)
    else:
        kwargs = dict(create_kwargs)
        if "chunks" not in kwargs:  # (chunks= given: arr is cut onto them below)
            kwargs["chunks"] = _regular_chunks(arr)
        if source.storage_options:
            kwargs["storage_options"] = source.storage_options
        try:
            z = zarr.create_array(source.store, name=source.component, shape=arr.shape,
                                  dtype=arr.dtype, overwrite=overwrite, **kwargs)
        except (zarr.errors.ContainsArrayError, zarr.errors.ContainsGroupError) as exc:
            raise FileExistsError(f"to_zarr: {source.describe()} already holds a zarr array or "
                                  "group; pass overwrite=True to replace it, region= to write "
                                  "into it, append_dim= to add to it, or choose another path or "
                                  "component.") from exc
        offset = (0,) * arr.ndim
        arr = on_grid(arr, z, offset)  # (blocks that start on the stored chunks need no lock)
    token = new_token(arr.name, repr(source), uuid.uuid4().hex)
    name = f"to-zarr-{token}"
    ann = annotations_in_force()
    starts = [_starts(c) for c in arr.chunks]
    layer: dict[str, Any] = {}
    for index in np.ndindex(*arr.numblocks):
        region_of = tuple(slice(offset[a] + starts[a][i], offset[a] + starts[a][i + 1])
                          for a, i in enumerate(index))
        where = f"block {tuple(index)} of {arr.name}"
        layer[chunk_key(name, index)] = Task(
            _write_region, (Ref(chunk_key(arr.name, index)), source, region_of, where), {},
            per_task(ann))
    done = f"to-zarr-done-{token}"
    layer[done] = Task(all_written, ([Ref(k) for k in layer],), {}, per_task(ann))
    graph = dict(arr._graph.flat())
    graph.update(layer)
    result = Delayed(done, graph)
    if not compute:
        return _read_back(arr, source, offset, name, graph) if return_stored else result
    result.compute()
    return _read_back(arr, source, offset) if return_stored else None


def _read_back(arr: Array, source: ZarrSource, offset: tuple[int, ...], written: str = "",
               graph: dict | None = None) -> Array:
    """``to_zarr(return_stored=True)``: ``arr``'s blocks read from where they were stored
    (``store``'s ``read_back``), in the stored array's dtype, into which ``arr`` was cast."""
    region = tuple(slice(o, o + n) for o, n in zip(offset, arr.shape))
    return read_back(arr, source, region, graph, written, dtype=source.open("r").dtype)


def _into_existing(arr: Array, source: ZarrSource, region: Any, append_dim: int | None,
                   overwrite: bool, create_kwargs: dict) -> tuple[Array, tuple[int, ...]]:
    """For a write into an existing array: check it against ``arr``, grow it when
    appending, and return ``arr`` (on the stored chunk grid) and where its corner goes."""
    if region is not None and append_dim is not None:
        raise ValueError("to_zarr: pass region= or append_dim=, not both.")
    if overwrite or create_kwargs:
        given = ["overwrite=True"] * bool(overwrite) + [f"{k}=" for k in create_kwargs]
        raise ValueError(f"to_zarr: {', '.join(given)} create a new array; with region=, "
                         "append_dim= or a zarr.Array given the array exists already and keeps "
                         "its settings.")
    z = source.open("r+")
    if z.ndim != arr.ndim:
        raise ValueError(f"to_zarr: {source.describe()} has {z.ndim} dimensions, the array "
                         f"written into it {arr.ndim}.")
    # integers and bools must fit ("safe": a narrower integer would wrap values round, silently);
    # floats may narrow within their kind (float64 into float32 rounds, as NumPy assigns)
    rule = "safe" if np.dtype(z.dtype).kind in "biu" else "same_kind"
    if not np.can_cast(arr.dtype, z.dtype, casting=rule):
        raise TypeError(f"to_zarr: {source.describe()} holds {z.dtype}, which {arr.dtype} "
                        f"does not cast to safely; write arr.astype({str(z.dtype)!r}).")
    if append_dim is not None:
        axis = _axis(append_dim, arr.ndim)
        others = [a for a in range(arr.ndim) if a != axis and arr.shape[a] != z.shape[a]]
        if others:
            a = others[0]
            raise ValueError(f"to_zarr(append_dim={append_dim}): along axis {a} the stored "
                             f"array has {z.shape[a]}, the appended one {arr.shape[a]}; only "
                             f"axis {axis} may differ.")
        offset = tuple(z.shape[a] if a == axis else 0 for a in range(arr.ndim))
        z.resize(tuple(z.shape[a] + (arr.shape[a] if a == axis else 0) for a in range(arr.ndim)))
    else:
        offset = _region_offset(region, z.shape, arr.shape, source)
    return on_grid(arr, z, offset), offset


def _axis(axis: int, ndim: int) -> int:
    if not isinstance(axis, (int, np.integer)) or not -ndim <= axis < ndim:
        raise ValueError(f"to_zarr: append_dim={axis!r} is not an axis of a {ndim}-d array.")
    return int(axis) % ndim


def _region_offset(region: Any, stored: tuple, shape: tuple, source: ZarrSource) -> tuple[int, ...]:
    """Where a region starts; it must be a slice per axis (step 1) of ``arr``'s shape."""
    if isinstance(region, dict):
        region = tuple(region.get(a, region.get(a - len(stored), slice(None))) for a in range(len(stored)))
    if isinstance(region, slice):
        region = (region,)
    if not isinstance(region, tuple) or len(region) > len(stored) or \
            not all(isinstance(r, slice) for r in region):
        raise TypeError(f"to_zarr: region= takes a slice per axis (or {{axis: slice}}), got {region!r}.")
    region = region + (slice(None),) * (len(stored) - len(region))
    offset = []
    for axis, (r, n, size) in enumerate(zip(region, stored, shape)):
        start, stop, step = r.indices(n)
        covered = len(range(start, stop, step))
        if step != 1:
            raise ValueError(f"to_zarr: region {r} along axis {axis} has step {step} (it covers "
                             f"{covered} elements); a step other than 1 is not supported: write "
                             "into a contiguous region (step 1).")
        if covered != size:
            raise ValueError(f"to_zarr: region {r} along axis {axis} of {source.describe()} "
                             f"(length {n}) covers {covered} elements; the array written has "
                             f"{size} there.")
        offset.append(start)
    return tuple(offset)


def _to_zarr_method(self: Array, url: Any, component: str | None = None,
                    overwrite: bool = False, compute: bool = True, **kwargs: Any):
    """Write this array to zarr; see ``xsched.array.to_zarr``.

    >>> import os, tempfile, xsched.array as xa
    >>> path = os.path.join(tempfile.mkdtemp(), "ones.zarr")
    >>> xa.ones((4, 4), chunks=2).to_zarr(path)
    >>> float(xa.from_zarr(path).sum().compute())
    16.0
    """
    return to_zarr(self, url, component=component, overwrite=overwrite, compute=compute,
                   **kwargs)


Array.to_zarr = _to_zarr_method  # type: ignore[attr-defined]
