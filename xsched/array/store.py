"""Writing arrays into anything that takes NumPy-style assignment: ``store``.

``target[region] = block`` is the one thing asked of a target: a NumPy array, an
``h5py.Dataset``, a netCDF variable, a zarr array, or xarray's writers for any of its file
formats. Such targets are usually open objects of *this* process (a file open for writing,
an array in memory), which cannot be handed to the workers, or which the file format does
not let two processes write at once. So the blocks are computed where the graph runs (on the
default client's cluster, or here) in batches of ``batch_size``, and each batch is written
here as it arrives: this process holds one batch at a time, never the whole array. What
several batches need (a mean every block subtracts, the blocks two batches' overlaps read,
an input of several sources) is computed once first and kept here while it is small
(``SHARED_BYTES``), rather than again for every batch.

With ``compute=False`` the write is a graph instead, run later where the graph runs: each
block written by the task that holds it, into the target sent along with the task. That
suits targets that reopen their storage where they are unpickled (a zarr array, a writer
that opens its file by path); an array in this process's memory cannot be one, and is
refused. To have the workers write zarr by path, ``xsched.array.to_zarr`` does it all.

>>> import numpy as np, xsched.array as xa
>>> x = xa.from_array(np.arange(12).reshape(3, 4), chunks=2)
>>> target = np.zeros((3, 4), dtype=int)
>>> xa.store(x * 10, target)
>>> target[2].tolist()
[80, 90, 100, 110]
"""

from __future__ import annotations

import contextlib
import threading
import uuid
from typing import Any, Sequence

import cloudpickle
import numpy as np

from .. import task_context
from ..client.default import default_client  # (a registry only: collections import no client code)
from ..graph.delayed import Delayed
from ..graph.layers import annotations_in_force, chunk_key, new_token, per_task
from ..graph.optimize import shared_frontier
from ..graph.spec import Ref, Task
from ..sizeof import sizeof
from ..tokenize import tokenize
from .chunks import _starts
from .core import Array, compute_keys, from_array
from .masking import known_chunks_needed

__all__ = ["store"]

#: Blocks computed and written per batch when ``batch_size`` is not given.
DEFAULT_BATCH = 8
#: Most bytes of values several batches share kept in this process while it writes, and
#: the most rounds of looking for them (see ``_shared_values``).
SHARED_BYTES, SHARED_ROUNDS = 256 * 2**20, 4


def _lock_of(lock: Any) -> Any:
    """A context manager guarding each write: none, a new lock for ``True``, or the lock
    given (anything with ``acquire``/``release``)."""
    if lock is None or lock is False:
        return contextlib.nullcontext()
    if lock is True:
        return threading.Lock()
    if callable(getattr(lock, "acquire", None)) and callable(getattr(lock, "release", None)):
        return _Held(lock)
    raise TypeError(f"store: lock must be True, False, None or a lock (with acquire and "
                    f"release), got {type(lock).__name__}")


class _Held:
    """``with`` for a lock that has ``acquire``/``release`` but perhaps no ``__enter__``."""

    def __init__(self, lock: Any) -> None:
        self.lock = lock

    def __enter__(self) -> None:
        self.lock.acquire()

    def __exit__(self, *exc: Any) -> None:
        self.lock.release()


def _region_slices(region: Any, shape: tuple[int, ...], target_shape: Any) -> list[int]:
    """Where the source starts in the target along each axis, from ``region`` (a tuple of
    slices with step 1, or None for the whole target)."""
    ndim = len(shape)
    if region is None:
        return [0] * ndim
    if not isinstance(region, tuple):
        region = (region,)
    if len(region) > ndim:
        raise ValueError(f"store: region {region!r} has more entries than the source has "
                         f"dimensions ({ndim})")
    offsets = []
    for axis in range(ndim):
        sl = region[axis] if axis < len(region) else slice(None)
        if not isinstance(sl, slice) or sl.step not in (None, 1):
            raise ValueError(f"store: region {region!r}: each entry must be a slice with step 1 "
                             f"(axis {axis} has {sl!r})")
        start = sl.start or 0
        if start < 0:
            if target_shape is None:
                raise ValueError(f"store: region {region!r} has a negative start on axis "
                                 f"{axis} and the target has no shape to count it from")
            start += int(target_shape[axis])
        stop = sl.stop
        if stop is None and target_shape is not None:  # (open: to the target's end, as NumPy reads it)
            stop = int(target_shape[axis])
        if stop is not None:
            if stop < 0 and target_shape is not None:
                stop += int(target_shape[axis])
            if stop - start != shape[axis]:
                raise ValueError(f"store: region {region!r} spans {stop - start} elements on "
                                 f"axis {axis} but the source has {shape[axis]}")
        offsets.append(start)
    return offsets


def store(sources: Array | Sequence[Array], targets: Any, lock: Any = None,
          regions: Any = None, compute: bool = True, *, batch_size: int | None = None,
          flush: bool = False, return_stored: bool = False) -> Delayed | None:
    """Write each array of ``sources`` into the matching target with ``target[...] = block``.

    ``sources`` and ``targets``: one array and one target, or sequences of the same length.
    ``regions``: where each source goes in its target, a tuple of slices (step 1) or None
    for the whole target; one for all, or one per source. ``lock``: ``True`` (a lock of
    this call), or a lock object (e.g. xarray's file locks), held around each write; None
    or False, no lock. Blocks are computed ``batch_size`` at a time (default 8) on the
    default client's cluster, or here without one, and written here as each batch arrives
    (see the module docstring). Returns when every block is written.

    ``flush`` is accepted from xarray's writers and changes nothing: nothing is buffered
    here once ``store`` returns.

    ``return_stored=True`` returns, as dask's, a tuple of arrays (one per source, chunked
    as written) whose blocks read back what was stored: with ``compute=True`` after every
    block is written (a NumPy target's region is copied now; another target must pickle,
    as with ``compute=False``); with ``compute=False`` each block is read right after its
    own write, so computing the arrays writes them (``x.store(target, return_stored=True)``
    returns the one array).

    ``compute=False`` returns a ``Delayed`` (value None) that writes every block when
    computed, from the task that holds it (see the module docstring): the targets and the
    lock travel with the tasks, so they must pickle, an array in this process's memory is
    refused, and a lock must be one the cluster shares (``xsched.Lock``), not ``True``.
    Without a lock, a source is first rechunked onto a chunked target's grid (a zarr array's
    chunks, or shards), so that no two tasks write parts of one stored chunk at once (each
    writes the chunk whole: one part would be lost).

    >>> import numpy as np, xsched.array as xa
    >>> a = xa.ones((2, 3), chunks=1)
    >>> out = np.zeros((4, 3))
    >>> xa.store([a, 2 * a], [out, out], regions=[(slice(0, 2),), (slice(2, 4),)])
    >>> out[:, 0].tolist()
    [1.0, 1.0, 2.0, 2.0]
    >>> (back,) = xa.store(3 * a, out, regions=(slice(1, 3),), return_stored=True)
    >>> back.compute()[:, 0].tolist(), out[:, 0].tolist()
    ([3.0, 3.0], [1.0, 3.0, 3.0, 2.0])
    """
    single = isinstance(sources, Array)
    if single:
        sources, targets = [sources], [targets]
    sources, targets = list(sources), list(targets)
    if len(sources) != len(targets):
        raise ValueError(f"store: {len(sources)} sources but {len(targets)} targets; give one "
                         "target per source")
    for k, s in enumerate(sources):
        if not isinstance(s, Array):
            raise TypeError(f"store: source {k} is a {type(s).__name__}, not an xsched array; "
                            "assign NumPy data directly (target[...] = data), or wrap it with "
                            "xsched.array.from_array first")
        known_chunks_needed(s, f"store (source {k})")
    if regions is None or isinstance(regions, tuple) or isinstance(regions, slice):
        regions = [regions] * len(sources)
    regions = list(regions)
    if len(regions) != len(sources):
        raise ValueError(f"store: {len(regions)} regions for {len(sources)} sources")
    if not compute:
        graph, done, written = _lazy(sources, targets, regions, lock)
        if return_stored:
            return tuple(read_back(x, t, r, graph, name) for (x, name), t, r in zip(written, targets, regions))
        return Delayed(done, graph)
    batch = int(batch_size or DEFAULT_BATCH)
    if batch < 1:
        raise ValueError(f"store: batch_size must be at least 1, got {batch}")
    if return_stored:  # (before anything is written)
        for k, target in enumerate(targets):
            if isinstance(target, np.ndarray):
                continue
            try:
                cloudpickle.dumps(target)
            except Exception as exc:
                raise TypeError(f"store(return_stored=True): target {k} ({type(target).__name__}) cannot be sent "
                                f"to the tasks that would read it back ({type(exc).__name__}: {exc}); store "
                                "without return_stored, then read the target where it is stored") from exc
    _store_now(sources, targets, regions, _lock_of(lock), batch)
    if return_stored:
        return tuple(read_back(x, t, r) for x, t, r in zip(sources, targets, regions))
    return None


def read_back(x: Array, target: Any, region: Any, lazy: dict | None = None, written: str = "",
              dtype: Any = None) -> Array:
    """An array of ``x``'s chunks reading each block from where it went in ``target``: a
    copy of a NumPy target's region now; otherwise a read task per block, after the block's
    write task (named ``written``, in the ``lazy`` store's graph) when there is one. Blocks
    of ``dtype`` (the target's, into which ``x`` was cast; default ``x``'s)."""
    dtype = x.dtype if dtype is None else np.dtype(dtype)
    offsets = _region_slices(region, x.shape, getattr(target, "shape", None))
    if isinstance(target, np.ndarray) and lazy is None:
        here = tuple(slice(o, o + n) for o, n in zip(offsets, x.shape))
        values = np.array(target[here], dtype=dtype)
        return from_array(values, chunks=x.chunks) if x.ndim else from_array(values)
    name = f"stored-{new_token(x.name, written, uuid.uuid4().hex)}"
    ann = annotations_in_force()
    graph: dict[str, Any] = dict(lazy) if lazy is not None else {}
    starts = [_starts(c) for c in x.chunks]
    for index in np.ndindex(*x.numblocks):
        where = tuple(slice(offsets[a] + starts[a][b], offsets[a] + starts[a][b + 1]) for a, b in enumerate(index))
        after = Ref(chunk_key(written, index)) if lazy is not None and all(
            x.chunks[a][b] for a, b in enumerate(index)) else None  # (an empty block was not written)
        graph[chunk_key(name, index)] = Task(_load, (target, where, dtype, after), {}, per_task(ann))
    return Array(graph, name, x.chunks, dtype)


def _load(target: Any, where: tuple, dtype: Any, _written: Any = None) -> np.ndarray:
    """A block of ``store(return_stored=True)``'s arrays: read from the target (after its
    write, whose None result ``_written`` is)."""
    return np.asarray(target[where], dtype=dtype)


def _placements(x: Array, target: Any, region: Any) -> list[tuple[tuple[int, ...], tuple[slice, ...]]]:
    """(block index, where it goes in the target) for every block of ``x`` that holds data."""
    target_shape = getattr(target, "shape", None)
    offsets = _region_slices(region, x.shape, target_shape)
    if region is None and target_shape is not None and tuple(target_shape) != x.shape:
        raise ValueError(f"store: the source has shape {x.shape} but its target "
                         f"{tuple(target_shape)}; give a region, or a target of that shape")
    if x.ndim == 0:
        return [((), ())]
    starts = [_starts(c) for c in x.chunks]
    return [(index, tuple(slice(offsets[a] + starts[a][b], offsets[a] + starts[a][b + 1])
                          for a, b in enumerate(index)))
            for index in np.ndindex(*x.numblocks)
            if all(x.chunks[a][b] for a, b in enumerate(index))]  # empty blocks: nothing to write


def _store_now(sources: list, targets: list, regions: list, guard: Any, batch: int) -> None:
    """Compute the blocks of every source ``batch`` at a time and write each batch here.
    What several batches need (a mean each one subtracts, the blocks two neighbours'
    overlaps read, one input of several sources) is computed once first (``_shared_values``)."""
    plans = [_placements(x, t, r) for x, t, r in zip(sources, targets, regions)]  # (all checked first)
    work = [(k, plan[lo:lo + batch]) for k, plan in enumerate(plans) for lo in range(0, len(plan), batch)]
    groups = [[sources[k].chunk_key(index) for index, _ in part] for k, part in work]
    graph: dict[str, Any] = {}
    for x in sources:
        graph.update(x._graph.flat())
    if len(groups) > 1:
        graph = _shared_values(graph, groups, batch)
    for (k, part), keys in zip(work, groups):
        blocks = compute_keys(graph, keys)
        for (_, where), block in zip(part, blocks):
            with guard:
                targets[k][where] = np.asarray(block, dtype=sources[k].dtype)


def _shared_values(graph: dict, groups: list, batch: int) -> dict:
    """``graph`` with the tasks several of ``groups`` need replaced by their values,
    computed here once (``batch`` at a time) while they take at most ``SHARED_BYTES`` in
    this process; those past it stay tasks (each batch that needs one computes it again)."""
    out, held = dict(graph), 0
    for _ in range(SHARED_ROUNDS):  # (a value computed can leave others shared no more)
        shared = shared_frontier(out, groups)
        if not shared:
            break
        for lo in range(0, len(shared), batch):
            keys = shared[lo:lo + batch]
            values = compute_keys(out, keys)
            held += sum(sizeof(v) for v in values)
            if held > SHARED_BYTES:
                return out
            out.update(zip(keys, values))
    return out


def _lazy(sources: list, targets: list, regions: list, lock: Any) -> tuple[dict, str, list[tuple[Array, str]]]:
    """``store(compute=False)``: a graph with a write task per block and one (``done``) that
    waits for them; and each source as written (put on a chunked target's grid) with its
    write tasks' name."""
    if lock is True:
        raise ValueError("store(compute=False): lock=True is a lock of this process, which the tasks "
                         "writing later do not share; pass lock=xsched.Lock('<name>') (one lock for the "
                         "whole cluster), or lock=None when no two blocks share a stored chunk")
    lock = None if lock is False else lock
    if lock is not None:
        _lock_of(lock)  # the same TypeError as compute=True for what is not a lock
        _sendable(lock, "the lock")
    for k, target in enumerate(targets):
        if isinstance(target, np.ndarray):
            raise ValueError(f"store(compute=False): target {k} is a NumPy array in this process's "
                             "memory, and the tasks writing later would write into copies of it; "
                             "call store(..., compute=True) to write it from here now")
        _sendable(target, f"target {k} ({type(target).__name__})")
        store_path = getattr(target, "store_path", None)  # (a zarr array: its store may be this process's memory)
        if store_path is not None:
            refuse_in_memory(store_path.store, repr(store_path.store), f"store(compute=False) of target {k}")
    token = new_token([s.name for s in sources], uuid.uuid4().hex)
    name = f"store-{token}"
    ann = annotations_in_force()
    graph: dict[str, Any] = {}
    writes, written = [], []
    for k, (x, target, region) in enumerate(zip(sources, targets, regions)):
        if lock is None and _gridded(target, x.ndim):  # (two tasks writing one chunk: one's part is lost)
            x = on_grid(x, target, _region_slices(region, x.shape, tuple(target.shape)))
        written.append((x, f"{name}-{k}"))
        graph.update(x._graph.flat())
        for index, where in _placements(x, target, region):
            key = chunk_key(f"{name}-{k}", index)
            label = f"block {index} of source {k} ({x.name})"
            graph[key] = Task(_write, (Ref(x.chunk_key(index)), target, where, x.dtype, lock, label), {},
                              per_task(ann))
            writes.append(Ref(key))
    done = f"{name}-done"
    graph[done] = Task(all_written, (writes,), {}, per_task(ann))
    return graph, done, written


def in_memory_store(store: Any) -> bool:
    """Whether a zarr store lives in this process's memory (a ``MemoryStore``, a dict, a
    ``memory://`` URL): a worker writing into it writes into its own copy.

    >>> in_memory_store("memory://out.zarr"), in_memory_store({}), in_memory_store("/d.zarr")
    (True, True, False)
    """
    if isinstance(store, str):
        return store.startswith("memory://")
    if isinstance(store, dict):
        return True
    try:
        from zarr.storage import MemoryStore
    except ImportError:  # (zarr absent: no zarr store either)
        return False
    return isinstance(store, MemoryStore)


def refuse_in_memory(store: Any, described: str, what: str) -> None:
    """Raise, now, if workers would write the in-memory ``store`` (a client is the default):
    they would fill copies of it, and nothing would arrive here."""
    if in_memory_store(store) and default_client() is not None:
        raise ValueError(f"{what}: {described} is a zarr store in this process's memory, and the "
                         "workers of the cluster would write into copies of it (nothing would arrive "
                         "here); write to a path or URL the workers reach, or compute here with no "
                         "client as the default")


def _gridded(target: Any, ndim: int) -> bool:
    """Whether ``target`` is stored in chunks it says (a zarr array; an HDF5 dataset stored
    whole says None), each written whole: blocks must then not share one."""
    grid = getattr(target, "shards", None) or getattr(target, "chunks", None)
    return (isinstance(grid, tuple) and len(grid) == ndim == len(getattr(target, "shape", ()))
            and all(isinstance(c, (int, np.integer)) and c > 0 for c in grid))


def _sendable(obj: Any, what: str) -> None:
    """Refuse, now, what could not travel with the write tasks."""
    try:
        cloudpickle.dumps(obj)
    except Exception as exc:
        raise TypeError(f"store(compute=False): {what} cannot be sent with the tasks that write later "
                        f"({type(exc).__name__}: {exc}); call store(..., compute=True) to write from this "
                        "process now, or give a target that opens its storage by path "
                        "(xsched.array.to_zarr writes zarr that way)") from exc


def _write(block: Any, target: Any, where: tuple, dtype: Any, lock: Any, label: str) -> None:
    """A write task of ``store(compute=False)``: one block into its place in the target."""
    block = np.asarray(block, dtype=dtype)
    shape = tuple(s.stop - s.start for s in where)
    if block.shape != shape:
        raise ValueError(f"store: {label} came back with shape {block.shape}, but its place {where} "
                         f"in the target has shape {shape}; nothing was written for it")
    if lock is None and _gridded(target, block.ndim):  # (part of a stored chunk: another source may fill the rest)
        guard = partial_chunks_lock((repr(getattr(target, "store_path", target)),), where, tuple(target.shape),
                                    getattr(target, "shards", None) or target.chunks)
    else:
        guard = _lock_of(lock)
    with guard:
        target[where] = block


_local_locks: dict[str, threading.Lock] = {}
_local_locks_guard = threading.Lock()


def partial_chunks_lock(names: tuple, region: tuple, shape: tuple, grid: tuple) -> Any:
    """What a write of ``region`` into a chunked array (named by ``names``) holds: nothing
    when it covers whole stored chunks (no other task writes them: each write is cut onto
    the grid); else a lock of the array's, since another write computed with this one (a
    second region, another source of one ``store``) may fill the rest of a chunk, each
    reading, changing and writing it whole: one part would be lost. On a worker the lock is
    the cluster's (``xsched.Lock``), here one of this process.

    >>> partial_chunks_lock(("/a.zarr",), (slice(0, 10),), (20,), (10,)).__class__.__name__
    'nullcontext'
    """
    whole = all(s.start % c == 0 and (s.stop % c == 0 or s.stop == n) for s, n, c in zip(region, shape, grid))
    if whole:
        return contextlib.nullcontext()
    name = f"xsched-partial-chunks-{tokenize(*names)}"
    if getattr(task_context.thread_state, "worker", None) is not None:
        from ..client.coordination import Lock

        return Lock(name)
    with _local_locks_guard:
        return _local_locks.setdefault(name, threading.Lock())


def on_grid(arr: Array, z: Any, offset: Sequence[int]) -> Array:
    """``arr`` rechunked, where it must be, so that every block written at ``offset`` into
    ``z`` begins on one of its chunks (a zarr array's, or its shards when sharded: a shard is
    written whole, or read, changed and written): two tasks then never write one chunk.

    >>> import numpy as np, xsched.array as xa
    >>> class Target:                   # (what matters: shape and chunks, as a zarr array's)
    ...     shape, chunks = (20, 20), (4, 4)
    >>> on_grid(xa.from_array(np.zeros((20, 20)), chunks=(6, 5)), Target(), (0, 0)).chunks
    ((8, 8, 4), (4, 4, 4, 4, 4))
    """
    unit = getattr(z, "shards", None) or z.chunks
    aligned = tuple(_aligned(c, o, u) for c, o, u in zip(arr.chunks, offset, unit))
    return arr.rechunk(aligned) if aligned != arr.chunks else arr


def _aligned(chunks: tuple[int, ...], start: int, unit: int) -> tuple[int, ...]:
    """``chunks`` if every block written from ``start`` begins on a multiple of ``unit``
    (the first at ``start`` itself); else about the same sizes, cut where ``unit`` cuts.

    >>> _aligned((4, 4, 2), 8, 4), _aligned((4, 4, 2), 2, 4), _aligned((5, 5), 0, 2)
    ((4, 4, 2), (2, 4, 4), (4, 4, 2))
    """
    bounds = np.cumsum((start,) + chunks[:-1])[1:]
    if all(b % unit == 0 for b in bounds):
        return chunks
    total, size = sum(chunks), max(unit, round(max(chunks) / unit) * unit)
    out = [min(total, (-start) % unit or size)]
    done = out[0]
    while done < total:
        out.append(min(size, total - done))
        done += out[-1]
    return tuple(out)


def all_written(results: list) -> None:
    """The task that finishes a lazy write (``store``, ``to_zarr``): it waits for every write."""
    return None
