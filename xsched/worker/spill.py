"""A worker's data store: in memory up to a target, least-recently-used data on disk past it.

Data flow::

    worker.data[key] = value          (event loop / task threads)
        weight = sizeof(value)        (once, outside the lock)
        fast tier (RAM, LRU order) ---- above target, or evict() from the monitor ----+
            ^                                                                           |
            |  value = worker.data[key]: read file, loads, delete file                 v
            +---------------------------------- slow tier: one file per key under directory
                                                  [header | pickle | buffer 1 | buffer 2 ...]

* ``__setitem__`` keeps the value in memory as most recently used, then, while the
  in-memory weights exceed ``target``, spills entries to disk in the calling thread:
  first any single entry heavier than the whole target (like dask/zict), then the least
  recently used ones.
* Files hold the frames of :func:`xsched.protocol.serialize.dumps` (pickle protocol 5, large
  buffers out of band) written one after another with ``os.write`` on memoryviews, so a
  numpy array's memory goes straight to the kernel, never through an intermediate copy.
  Reading allocates one ``bytearray`` per frame and ``readinto`` it, so arrays come back
  writeable without another copy.
* A value that cannot be pickled, a full disk (any ``OSError``) or the ``max_spill`` bound
  keeps data in memory and logs one warning per kind; ``__setitem__`` never raises for it.
* ``peek(key)`` reads a spilled value and leaves it on disk: for values only sent on (to a
  client or a peer), which need no room in memory.
* A worker's spill directory (a :class:`WorkerDirectory`, as its uploads' and shuffles') stays
  locked while it lives; a worker started later on the same base directory removes those of
  workers that were killed.

Locking: one ``threading.RLock`` guards the bookkeeping of every operation, but no file is
written, read or deleted while holding it. An entry being written is parked in a
"spilling" state (still readable from memory); an entry being read back is guarded by its
own small lock, so two readers of one spilled key read the file once, and readers of
other keys never wait for disk I/O.

>>> import tempfile, os, numpy as np
>>> d = tempfile.mkdtemp()
>>> buf = SpillBuffer(os.path.join(d, "spill"), target=1_000_000)
>>> buf["a"] = np.zeros(100_000)            # 800 kB: stays in memory
>>> buf["b"] = np.ones(100_000)             # 1.6 MB total: "a" (least recently used) spills
>>> buf.slow_keys, buf.fast_keys
(['a'], ['b'])
>>> float(buf["a"].sum()), buf.slow_keys     # reading "a" brings it back, "b" goes out
(0.0, ['b'])
>>> buf.close()
"""

from __future__ import annotations

import ctypes
import errno
import itertools
import logging
import os
import secrets
import shutil
import struct
import sys
import tempfile
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterator, MutableMapping
from typing import Any

from ..protocol.serialize import dumps, loads
from ..sizeof import sizeof as default_sizeof
from ..units import format_bytes

try:
    import fcntl
except ImportError:  # Windows
    fcntl = None  # type: ignore[assignment]

__all__ = ["SpillBuffer", "WorkerDirectory", "worker_directory", "purge_stale_worker_directories", "trim_memory"]

logger = logging.getLogger("xsched.worker.spill")

_MAGIC = b"XSP1"
_HEAD = struct.Struct("<4sI")  # magic, number of frames; then one "<Q" length per frame
_LEN = struct.Struct("<Q")
_CHUNK = 1 << 30  # at most this many bytes per read/write call (Linux caps one call at ~2 GiB)

# outcome of one attempted spill
_OK, _SKIP, _STOP = "ok", "skip", "stop"


class _Spilling:
    """An entry whose file is being written: still in memory, readable, not yet on disk."""

    __slots__ = ("value", "weight", "path")

    def __init__(self, value: Any, weight: int, path: str):
        self.value = value
        self.weight = weight
        self.path = path


class _Slow:
    """An entry on disk. ``lock`` serialises readers of this one file."""

    __slots__ = ("path", "weight", "nbytes", "lock", "value")

    def __init__(self, path: str, weight: int, nbytes: int):
        self.path = path
        self.weight = weight
        self.nbytes = nbytes
        self.lock = threading.Lock()
        self.value: Any = _MISSING  # set by the reader who loaded it, for readers who waited


_MISSING: Any = object()


class SpillBuffer(MutableMapping):
    """Thread-safe mapping keeping up to ``target`` bytes (by ``sizeof``) in memory, the rest on disk.

    ``target=None`` never spills by weight (only :meth:`evict` does); ``max_spill`` bounds
    the bytes of files on disk (``None``: unbounded). After :meth:`close`, spilled keys are
    gone and nothing more is spilled; in-memory keys remain readable.

    >>> import tempfile, os
    >>> buf = SpillBuffer(os.path.join(tempfile.mkdtemp(), "s"), target=100, sizeof=len)
    >>> buf["x"] = b"a" * 80
    >>> buf["y"] = b"b" * 80                 # over 100: "x" goes to disk
    >>> sorted(buf), "x" in buf, buf.spilled_count, buf.memory_bytes
    (['x', 'y'], True, 1, 80)
    >>> buf["x"] == b"a" * 80
    True
    >>> buf.close()
    """

    def __init__(self, directory: str, target: int | None, max_spill: int | None = None,
                 sizeof: Callable[[Any], int] = default_sizeof):
        self.directory = os.path.abspath(os.fspath(directory))
        self.target = None if target is None else int(target)
        self.max_spill = None if max_spill is None or max_spill is False else int(max_spill)
        self.sizeof = sizeof
        self._lock = threading.RLock()
        self._fast: OrderedDict[Hashable, Any] = OrderedDict()  # LRU first, MRU last
        self._fast_weight: dict[Hashable, int] = {}
        self._fast_total = 0
        self._heavy: dict[Hashable, None] = {}  # fast keys heavier than target alone, spilled first
        self._unspillable: set[Hashable] = set()  # fast keys that failed to pickle
        self._spilling: dict[Hashable, _Spilling] = {}
        self._spilling_total = 0
        self._slow: dict[Hashable, _Slow] = {}
        self._slow_total = 0  # weights
        self._disk_bytes = 0  # file sizes, including writes in flight
        self._warned: set[tuple] = set()
        self._counter = itertools.count()
        self._prefix = secrets.token_hex(4)
        self._closed = False
        #: called as on_disk(kind, start, stop, nbytes) after each write ("disk-write") and read
        #: back ("disk-read"), times from time.time(), from whichever thread did it (the worker
        #: shows them in the task stream); None: nobody listens
        self.on_disk: Callable[[str, float, float, int], None] | None = None
        # statistics
        self.spill_count = 0
        self.unspill_count = 0
        self.spill_seconds = 0.0
        self.unspill_seconds = 0.0
        self.spill_bytes_written = 0
        self.unspill_bytes_read = 0
        # create the directory (and parents) 0700, remembering what we created so close() removes only that
        self._created_dirs: list[str] = []
        d = self.directory
        missing = []
        while not os.path.exists(d):
            missing.append(d)
            parent = os.path.dirname(d)
            if parent == d:
                break
            d = parent
        for d in reversed(missing):
            try:
                os.mkdir(d, 0o700)
                self._created_dirs.append(d)
            except FileExistsError:
                pass
        self._created_dirs.reverse()  # deepest first, for removal

    # ------------------------------------------------------------------ mapping protocol

    def __setitem__(self, key: Hashable, value: Any) -> None:
        """Store ``value`` in memory as most recently used, then spill LRU data above target.

        >>> import tempfile, os
        >>> buf = SpillBuffer(os.path.join(tempfile.mkdtemp(), "s"), target=10, sizeof=len)
        >>> buf["big"] = b"x" * 20             # heavier than the target alone: goes to disk
        >>> buf.slow_keys
        ['big']
        >>> buf.close()
        """
        self.put_without_spilling(key, value)
        self._spill_to_target()

    def put_without_spilling(self, key: Hashable, value: Any) -> None:
        """Store a small ``value`` in memory as most recently used, spilling nothing now
        (on the event loop, a spill's disk write would stall every peer): whatever is then
        above the target spills with the next store, or when the memory monitor evicts.

        >>> import tempfile, os
        >>> buf = SpillBuffer(os.path.join(tempfile.mkdtemp(), "s"), target=10, sizeof=len)
        >>> buf["a"] = b"x" * 8
        >>> buf.put_without_spilling("b", b"y" * 8)
        >>> buf.fast_keys, buf.slow_keys
        (['a', 'b'], [])
        >>> buf["c"] = b"z"                     # the next store spills down to the target
        >>> buf.slow_keys
        ['a']
        >>> buf.close()
        """
        weight = self._weigh(value)
        with self._lock:
            stale = self._discard(key)
            self._fast[key] = value
            self._fast_weight[key] = weight
            self._fast_total += weight
            if self.target is not None and weight > self.target:
                self._heavy[key] = None
        if stale:
            self._unlink(stale)

    def __getitem__(self, key: Hashable) -> Any:
        """The value from memory (now most recently used) or read back from disk.

        A value read from disk moves back into memory and its file is deleted (other entries
        may spill to make room) -- unless it alone is heavier than the target, in which case
        it is returned but stays on disk.

        >>> import tempfile, os
        >>> buf = SpillBuffer(os.path.join(tempfile.mkdtemp(), "s"), target=None)
        >>> buf["k"] = [1, 2]
        >>> buf["k"]
        [1, 2]
        >>> buf.close()
        """
        return self._get(key, promote=True)

    def peek(self, key: Hashable) -> Any:
        """The value, read from its file if spilled, with nothing moved: a spilled key stays
        on disk and the in-memory keys keep their order. For values that are only passed on
        (sent to a client or a peer worker): bringing each into memory would push the data
        the worker computes with out to disk, and its memory towards the limit.

        >>> import tempfile, os
        >>> buf = SpillBuffer(os.path.join(tempfile.mkdtemp(), "s"), target=10, sizeof=len)
        >>> buf["a"] = b"x" * 8; buf["b"] = b"y" * 8      # "a" spills
        >>> buf.peek("a"), buf.slow_keys, buf.fast_keys
        (b'xxxxxxxx', ['a'], ['b'])
        >>> buf.close()
        """
        return self._get(key, promote=False)

    def _get(self, key: Hashable, promote: bool) -> Any:
        """``buf[key]`` (``promote``: a key in memory becomes the most recently used, a spilled
        one comes back into memory) or ``peek``."""
        while True:
            with self._lock:
                if key in self._fast:
                    if promote:
                        self._fast.move_to_end(key)
                    return self._fast[key]
                sp = self._spilling.get(key)
                if sp is not None:
                    return sp.value
                entry = self._slow.get(key)
                if entry is None:
                    raise KeyError(key)
            value = self._unspill(key, entry, promote=promote)
            if value is not _MISSING:
                return value
            # the file vanished before we opened it (deleted or replaced): look again

    def __delitem__(self, key: Hashable) -> None:
        """Forget ``key`` in either tier; its file, if any, is deleted.

        >>> import tempfile, os
        >>> buf = SpillBuffer(os.path.join(tempfile.mkdtemp(), "s"), target=None)
        >>> buf["k"] = 1; del buf["k"]; "k" in buf
        False
        >>> buf.close()
        """
        with self._lock:
            if not self._has(key):
                raise KeyError(key)
            stale = self._discard(key)
        if stale:
            self._unlink(stale)

    def __contains__(self, key: object) -> bool:
        """Whether ``key`` is stored, without reading it from disk.

        >>> import tempfile, os
        >>> buf = SpillBuffer(os.path.join(tempfile.mkdtemp(), "s"), target=None)
        >>> buf["k"] = 1; "k" in buf, "j" in buf
        (True, False)
        >>> buf.close()
        """
        with self._lock:
            return self._has(key)

    def __len__(self) -> int:
        """Number of keys in both tiers.

        >>> import tempfile, os
        >>> buf = SpillBuffer(os.path.join(tempfile.mkdtemp(), "s"), target=None)
        >>> buf.update(a=1, b=2); len(buf)
        2
        >>> buf.close()
        """
        with self._lock:
            return len(self._fast) + len(self._spilling) + len(self._slow)

    def __iter__(self) -> Iterator[Hashable]:
        """Iterate over a snapshot of the keys of both tiers (in memory first, LRU to MRU).

        >>> import tempfile, os
        >>> buf = SpillBuffer(os.path.join(tempfile.mkdtemp(), "s"), target=None)
        >>> buf.update(a=1, b=2); list(buf)
        ['a', 'b']
        >>> buf.close()
        """
        with self._lock:
            keys = [*self._fast, *self._spilling, *self._slow]
        return iter(keys)

    def discard(self, key: Hashable) -> bool:
        """Forget ``key`` if present, without reading it back from disk; True if it was there.

        Use this, not ``pop(key, None)``, to release data: ``pop`` must return the value, so
        for a spilled key it would read the whole file back first.

        >>> import tempfile, os
        >>> buf = SpillBuffer(os.path.join(tempfile.mkdtemp(), "s"), target=0, sizeof=len)
        >>> buf["k"] = b"on disk"; buf.discard("k"), buf.discard("k"), buf.unspill_count
        (True, False, 0)
        >>> buf.close()
        """
        with self._lock:
            if not self._has(key):
                return False
            stale = self._discard(key)
        if stale:
            self._unlink(stale)
        return True

    def clear(self) -> None:
        """Forget every key and delete every file, without reading anything back.

        >>> import tempfile, os
        >>> buf = SpillBuffer(os.path.join(tempfile.mkdtemp(), "s"), target=None)
        >>> buf["a"] = 1; buf.clear(); len(buf)
        0
        >>> buf.close()
        """
        with self._lock:
            paths = [p for k in list(self) if (p := self._discard(k))]
        for p in paths:
            self._unlink(p)

    def __repr__(self) -> str:
        return (f"<SpillBuffer {self.directory!r}: {len(self._fast) + len(self._spilling)} in memory "
                f"({self.memory_bytes} B), {len(self._slow)} on disk ({self._slow_total} B)>")

    # ------------------------------------------------------------------ public extras

    def weight(self, key: Hashable) -> int:
        """The ``sizeof`` weight recorded for ``key`` when it was set (either tier).

        >>> import tempfile, os
        >>> buf = SpillBuffer(os.path.join(tempfile.mkdtemp(), "s"), target=None, sizeof=len)
        >>> buf["k"] = b"abc"; buf.weight("k")
        3
        >>> buf.close()
        """
        with self._lock:
            if key in self._fast_weight:
                return self._fast_weight[key]
            if key in self._spilling:
                return self._spilling[key].weight
            if key in self._slow:
                return self._slow[key].weight
        raise KeyError(key)

    def evict(self) -> int:
        """Spill the least-recently-used in-memory entry; its weight, or -1 if nothing can be spilled.

        Entries that cannot be pickled are skipped; a full disk or the ``max_spill`` bound
        gives -1. The memory monitor calls this in a loop from its own thread.

        >>> import tempfile, os
        >>> buf = SpillBuffer(os.path.join(tempfile.mkdtemp(), "s"), target=None, sizeof=len)
        >>> buf["a"] = b"12345"; buf["b"] = b"1"
        >>> buf.evict(), buf.slow_keys, buf.evict(), buf.evict()
        (5, ['a'], 1, -1)
        >>> buf.close()
        """
        while True:
            with self._lock:
                cand = self._pick()
            if cand is None:
                return -1
            outcome = self._spill(*cand)
            if outcome == _OK:
                return cand[1].weight
            if outcome == _STOP:
                return -1

    def close(self) -> None:
        """Delete every spill file and the directories this buffer created; stop spilling.

        Spilled keys are forgotten; in-memory keys stay readable. Calling it twice is harmless.

        >>> import tempfile, os
        >>> d = os.path.join(tempfile.mkdtemp(), "s")
        >>> buf = SpillBuffer(d, target=0, sizeof=len)
        >>> buf["a"] = b"x"; buf.close(); os.path.exists(d), len(buf)
        (False, 0)
        """
        with self._lock:
            self._closed = True
            paths = [self._discard(k) for k in list(self._slow)]
        for p in paths:
            if p:
                self._unlink(p)
        self._remove_dirs()

    def __enter__(self) -> "SpillBuffer":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ------------------------------------------------------------------ statistics

    @property
    def memory_bytes(self) -> int:
        """Sum of the weights of the entries in memory (including those being written out)."""
        with self._lock:
            return self._fast_total + self._spilling_total

    @property
    def spilled_bytes(self) -> int:
        """Sum of the weights (``sizeof`` of the original values) of the entries on disk."""
        with self._lock:
            return self._slow_total

    @property
    def spilled_count(self) -> int:
        """Number of entries on disk."""
        with self._lock:
            return len(self._slow)

    @property
    def disk_bytes(self) -> int:
        """Bytes of spill files on disk (and being written), as bounded by ``max_spill``."""
        with self._lock:
            return self._disk_bytes

    def memory_weight(self, keys) -> int | None:
        """Bytes of these values if every one is in memory now (None if any is on disk, on
        its way there, or absent): whether reading them is instant."""
        with self._lock:
            total = 0
            for k in keys:
                w = self._fast_weight.get(k)
                if w is None:
                    return None
                total += w
            return total

    def has_room(self, nbytes: int) -> bool:
        """Whether storing ``nbytes`` more would leave memory at or below the target, so
        that nothing spills: then a small store is instant, and may happen on the loop.

        >>> import tempfile, os
        >>> buf = SpillBuffer(os.path.join(tempfile.mkdtemp(), "s"), target=100, sizeof=len)
        >>> buf["a"] = b"x" * 60
        >>> buf.has_room(40), buf.has_room(41)
        (True, False)
        >>> buf.close()
        """
        with self._lock:
            return self.target is None or self._fast_total + nbytes <= self.target

    @property
    def fast_keys(self) -> list:
        """Keys held in memory, least recently used first."""
        with self._lock:
            return [*self._fast, *self._spilling]

    @property
    def slow_keys(self) -> list:
        """Keys held on disk."""
        with self._lock:
            return list(self._slow)

    # ------------------------------------------------------------------ internals

    def _weigh(self, value: Any) -> int:
        try:
            return max(int(self.sizeof(value)), 0)
        except Exception:  # sizeof should never raise, but a custom one might
            return sys.getsizeof(value, 64)

    def _has(self, key: object) -> bool:
        return key in self._fast or key in self._spilling or key in self._slow

    def _discard(self, key: Hashable) -> str | None:
        """Drop ``key`` from every tier (lock held); returns a file path to unlink, if any."""
        self._unspillable.discard(key)
        self._heavy.pop(key, None)
        if key in self._fast:
            del self._fast[key]
            self._fast_total -= self._fast_weight.pop(key)
            return None
        sp = self._spilling.pop(key, None)
        if sp is not None:  # its writer sees it is no longer current and removes the file
            self._spilling_total -= sp.weight
            return None
        entry = self._slow.pop(key, None)
        if entry is not None:
            self._slow_total -= entry.weight
            self._disk_bytes -= entry.nbytes
            return entry.path
        return None

    def _pick(self) -> tuple[Hashable, _Spilling] | None:
        """Move the next spill candidate from fast to spilling (lock held)."""
        if self._closed:
            return None
        key = next((k for k in self._heavy if k not in self._unspillable), _MISSING)
        if key is _MISSING:
            key = next((k for k in self._fast if k not in self._unspillable), _MISSING)
        if key is _MISSING:
            return None
        value = self._fast.pop(key)
        weight = self._fast_weight.pop(key)
        self._heavy.pop(key, None)
        self._fast_total -= weight
        path = os.path.join(self.directory, f"{self._prefix}-{next(self._counter)}.xsp")
        sp = self._spilling[key] = _Spilling(value, weight, path)
        self._spilling_total += weight
        return key, sp

    def _spill_to_target(self) -> None:
        if self.target is None:
            return
        while True:
            with self._lock:
                if self._fast_total <= self.target:
                    return
                cand = self._pick()
            if cand is None or self._spill(*cand) == _STOP:
                return

    def _spill(self, key: Hashable, sp: _Spilling) -> str:
        """Write one picked entry to its file (no lock held during I/O) and commit or roll back."""
        t0 = time.perf_counter()
        began = time.time()
        try:
            frames = dumps(sp.value)
        except Exception as e:
            self._warn(("pickle", type(sp.value).__qualname__),
                       "cannot spill %r (%s) to disk, keeping it in memory: %s",
                       key, type(sp.value).__qualname__, e)
            self._rollback(key, sp, unspillable=True)
            return _SKIP
        views = [_byte_view(f) for f in frames]
        nbytes = _HEAD.size + _LEN.size * len(views) + sum(v.nbytes for v in views)
        with self._lock:
            if self.max_spill is not None and self._disk_bytes + nbytes > self.max_spill:
                over = True
            else:
                over = False
                self._disk_bytes += nbytes  # reserve
        if over:
            self._warn(("max_spill",), "spill store is full (max_spill=%d bytes); keeping data in memory",
                       self.max_spill)
            self._rollback(key, sp)
            return _STOP
        try:
            _write_frames(sp.path, views)
        except OSError as e:
            _unlink_quietly(sp.path)
            self._warn(("oserror", errno.errorcode.get(e.errno, str(e.errno))),
                       "cannot write spill file in %s, keeping data in memory: %s", self.directory, e)
            with self._lock:
                self._disk_bytes -= nbytes
            self._rollback(key, sp)
            return _STOP
        finally:
            del views, frames
        elapsed = time.perf_counter() - t0
        with self._lock:
            current = self._spilling.get(key) is sp
            if current and not self._closed:
                del self._spilling[key]
                self._spilling_total -= sp.weight
                self._slow[key] = _Slow(sp.path, sp.weight, nbytes)
                self._slow_total += sp.weight
                self.spill_count += 1
                self.spill_seconds += elapsed
                self.spill_bytes_written += nbytes
                sp.value = None
                on_disk = self.on_disk
                if on_disk is not None:
                    on_disk("disk-write", began, began + elapsed, nbytes)
                return _OK
            self._disk_bytes -= nbytes
        # deleted or replaced while we wrote, or closed: the file is not needed
        _unlink_quietly(sp.path)
        if current:  # closed meanwhile: keep the value in memory
            self._rollback(key, sp)
            self._remove_dirs()
            return _STOP
        return _OK if not self._closed else _STOP

    def _rollback(self, key: Hashable, sp: _Spilling, unspillable: bool = False) -> None:
        """Put a picked entry back in memory as least recently used, if it is still current."""
        with self._lock:
            if self._spilling.get(key) is not sp:
                return
            del self._spilling[key]
            self._spilling_total -= sp.weight
            self._fast[key] = sp.value
            self._fast.move_to_end(key, last=False)
            self._fast_weight[key] = sp.weight
            self._fast_total += sp.weight
            if self.target is not None and sp.weight > self.target:
                self._heavy[key] = None
            if unspillable:
                self._unspillable.add(key)

    def _unspill(self, key: Hashable, entry: _Slow, promote: bool = True) -> Any:
        """Read ``entry`` back; ``_MISSING`` if its file was gone before we could open it.
        ``promote=False`` leaves it on disk (the file stays, no memory is kept)."""
        with entry.lock:
            if entry.value is not _MISSING:  # another reader loaded it while we waited
                return entry.value
            t0 = time.perf_counter()
            began = time.time()
            try:
                frames, nread = _read_frames(entry.path)
            except FileNotFoundError:
                return _MISSING
            value = loads(frames)
            del frames
            elapsed = time.perf_counter() - t0
            on_disk = self.on_disk
            if on_disk is not None:
                on_disk("disk-read", began, began + elapsed, nread)
            with self._lock:
                self.unspill_count += 1
                self.unspill_seconds += elapsed
                self.unspill_bytes_read += nread
                if self._slow.get(key) is not entry:
                    entry.value = value  # for readers waiting on this entry
                    return value  # deleted or replaced while we read: the caller still gets what it asked for
                if not promote or (self.target is not None and entry.weight > self.target):
                    return value  # not wanted, or too heavy, in memory: stays on disk, nothing rewritten or cached
                entry.value = value  # for readers waiting on this entry, which has left the slow tier
                del self._slow[key]
                self._slow_total -= entry.weight
                self._disk_bytes -= entry.nbytes
                self._fast[key] = value
                self._fast_weight[key] = entry.weight
                self._fast_total += entry.weight
        self._unlink(entry.path)
        self._spill_to_target()
        return value

    def _unlink(self, path: str) -> None:
        _unlink_quietly(path)

    def _remove_dirs(self) -> None:
        if not self._closed:
            return
        for d in self._created_dirs:
            try:
                os.rmdir(d)
            except OSError:
                break  # not empty (someone else's files, or a write in flight): leave it and its parents

    def _warn(self, kind: tuple, msg: str, *args) -> None:
        with self._lock:
            if kind in self._warned:
                return
            self._warned.add(kind)
        logger.warning(msg, *args)


# ---------------------------------------------------------------------- a worker's directories

SPILL_DIR_PREFIX = "xsched-spill-"
#: the directories a worker makes under its base directory, each a :class:`WorkerDirectory`:
#: spilled values, files clients upload, a p2p shuffle's pieces on disk
WORKER_DIR_PREFIXES = (SPILL_DIR_PREFIX, "xsched-uploads-", "xsched-shuffle-")
_LOCK_NAME = "worker.lock"


class WorkerDirectory:
    """A new directory under ``base`` (named ``prefix``..., one of ``WORKER_DIR_PREFIXES``),
    locked by this process until :meth:`close`.

    A worker the nanny kills (memory limit, crash, SIGKILL) never deletes its spill files,
    uploaded files or shuffle pieces. The lock -- ``flock`` on a file inside, which the
    kernel releases when the process dies -- tells the next worker started on ``base`` that
    the directory is left over: :func:`purge_stale_worker_directories` removes those, never a
    live worker's (like dask's locked worker directories).

    >>> import tempfile, os
    >>> base = tempfile.mkdtemp()
    >>> d = WorkerDirectory(base)
    >>> os.path.basename(d.path).startswith("xsched-spill-"), purge_stale_worker_directories(base)
    (True, [])
    >>> d.close(); os.listdir(base)
    []
    """

    def __init__(self, base: str, prefix: str = SPILL_DIR_PREFIX):
        if prefix not in WORKER_DIR_PREFIXES:
            raise ValueError(f"a worker directory's prefix is one of {WORKER_DIR_PREFIXES}, not {prefix!r}")
        self.path = tempfile.mkdtemp(prefix=prefix, dir=base)
        self._fd: int | None = None
        if fcntl is None:  # (Windows) no flock: nothing is locked, nothing is purged
            return
        # locked under a name no purger opens, then renamed: the lock file appears already held
        new = os.path.join(self.path, _LOCK_NAME + ".new")
        fd = os.open(new, os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            os.rename(new, os.path.join(self.path, _LOCK_NAME))
        except BaseException:
            os.close(fd)
            shutil.rmtree(self.path, ignore_errors=True)
            raise
        self._fd = fd

    def close(self) -> None:
        """Delete the directory and all in it, then release the lock; calling it twice is harmless."""
        shutil.rmtree(self.path, ignore_errors=True)
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)

    def __repr__(self) -> str:
        return f"<WorkerDirectory {self.path!r}>"


def worker_directory(base: str | None, prefix: str) -> WorkerDirectory:
    """A new locked directory of this worker under ``base`` (the system's temporary
    directory when None), made after removing those of workers that are gone.

    >>> import tempfile
    >>> d = worker_directory(tempfile.mkdtemp(), "xsched-uploads-")
    >>> os.path.basename(d.path).startswith("xsched-uploads-")
    True
    >>> d.close()
    """
    base = base or tempfile.gettempdir()
    os.makedirs(base, exist_ok=True)
    purge_stale_worker_directories(base)
    return WorkerDirectory(base, prefix)


def purge_stale_worker_directories(base: str) -> list[str]:
    """Remove the worker directories in ``base`` (spill, uploads, shuffle) whose worker is
    gone (nobody holds their lock) and log each with its size; the paths removed.

    A directory whose lock is held (a live worker, in this process or another) is left
    alone, and so is one without a lock file (not made by :class:`WorkerDirectory`).

    >>> import tempfile
    >>> purge_stale_worker_directories(tempfile.mkdtemp())
    []
    """
    if fcntl is None:
        return []
    try:
        names = sorted(os.listdir(base))
    except OSError:
        return []
    removed = []
    for name in names:
        if not name.startswith(WORKER_DIR_PREFIXES):
            continue
        kind = name[len("xsched-"):].split("-")[0]  # (spill, uploads, shuffle: for the log)
        path = os.path.join(base, name)
        try:
            fd = os.open(os.path.join(path, _LOCK_NAME), os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        except OSError:  # not a directory, no lock file, or another user's
            continue
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:  # held: its worker is alive
                continue
            size = _tree_bytes(path)
            shutil.rmtree(path, ignore_errors=True)
        finally:
            os.close(fd)
        if os.path.lexists(path):
            logger.warning("could not remove %s, the %s directory of a worker that is gone", path, kind)
            continue
        removed.append(path)
        logger.warning("removed %s (%s of data), the %s directory of a worker that is gone", path,
                       format_bytes(size), kind)
    return removed


def _tree_bytes(path: str) -> int:
    total = 0
    for root, _dirs, names in os.walk(path):
        for n in names:
            try:
                total += os.lstat(os.path.join(root, n)).st_size
            except OSError:
                pass
    return total


# ---------------------------------------------------------------------- file format

def _byte_view(frame: Any) -> memoryview:
    mv = memoryview(frame)
    if mv.format != "B" or mv.ndim != 1:
        mv = mv.cast("B")
    return mv


def _write_frames(path: str, views: list[memoryview]) -> None:
    """``[magic, n, len_1..len_n]`` then each frame's bytes, straight from its memory."""
    header = _HEAD.pack(_MAGIC, len(views)) + b"".join(_LEN.pack(v.nbytes) for v in views)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o600)
    try:
        for mv in (memoryview(header), *views):
            while mv.nbytes:
                n = os.write(fd, mv[:_CHUNK])
                mv = mv[n:]
    finally:
        os.close(fd)


def _read_frames(path: str) -> tuple[list[bytearray], int]:
    with open(path, "rb", buffering=0) as f:
        head = _read_exact(f, _HEAD.size)
        magic, n = _HEAD.unpack(head)
        if magic != _MAGIC:
            raise ValueError(f"{path} is not a spill file")
        lengths = struct.unpack(f"<{n}Q", _read_exact(f, _LEN.size * n))
        frames = []
        for length in lengths:
            buf = _empty(length)  # uninitialised: no pass writing zeros before the read
            _readinto_exact(f, memoryview(buf))
            frames.append(buf)
    return frames, _HEAD.size + _LEN.size * n + sum(lengths)


def _empty(n: int):
    if n < 1 << 16:
        return bytearray(n)
    import numpy as np

    return np.empty(n, dtype=np.uint8)


def _read_exact(f, n: int) -> bytearray:
    buf = bytearray(n)
    _readinto_exact(f, memoryview(buf))
    return buf


def _readinto_exact(f, mv: memoryview) -> None:
    while mv.nbytes:
        n = f.readinto(mv[:_CHUNK])
        if not n:
            raise EOFError("spill file is truncated")
        mv = mv[n:]


def _unlink_quietly(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    except OSError as e:
        logger.warning("could not delete spill file %s: %s", path, e)


# ---------------------------------------------------------------------- returning memory to the OS

_malloc_trim: Any = None  # None: not looked up yet; False: unavailable


def trim_memory() -> bool:
    """Ask glibc to return freed heap memory to the OS (``malloc_trim(0)``); True if it was called.

    False on other platforms and C libraries (musl, macOS, Windows); never raises.

    >>> isinstance(trim_memory(), bool)
    True
    """
    global _malloc_trim
    try:
        if _malloc_trim is None:
            _malloc_trim = False
            if sys.platform.startswith("linux"):
                libc = ctypes.CDLL("libc.so.6")
                fn = getattr(libc, "malloc_trim", None)
                if fn is not None:
                    fn.argtypes = [ctypes.c_size_t]
                    fn.restype = ctypes.c_int
                    _malloc_trim = fn
        if _malloc_trim is False:
            return False
        _malloc_trim(0)
        return True
    except Exception:
        _malloc_trim = False
        return False
