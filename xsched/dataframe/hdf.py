"""HDF5 stores (pandas' ``HDFStore``, through PyTables) as dataframes, and dataframes as HDF5
stores: ``read_hdf`` and ``to_hdf``.

Why this shape: a store written with ``format="table"`` is a PyTables table, whose rows can be
read by number, so a key is read in pieces of ``chunksize`` rows, each by one task on the
workers; its schema, its number of rows and (with ``sorted_index=True``) the first and last
index value of each piece are read when ``read_hdf`` is called, so a missing file, key or
column fails then. A ``format="fixed"`` store is read whole: one partition per key. HDF5
files take one writer at a time, so ``to_hdf`` into one file writes the partitions one after
the other (a chain of tasks); a ``*`` in the path gives each partition a file of its own,
written in parallel. PyTables calls are not safe from several threads of one process: each
read and write holds a per-process lock (``lock=True``, the default).

PyTables is an extra: ``pip install "xsched[hdf]"``.

>>> import os, tempfile, pandas as pd, xsched.dataframe as xd
>>> from xsched.dataframe.hdf import read_hdf, to_hdf
>>> df = xd.from_pandas(pd.DataFrame({"x": range(6), "y": list("abcdef")}), npartitions=3)
>>> with tempfile.TemporaryDirectory() as d:
...     _ = to_hdf(df, os.path.join(d, "data.h5"), "/frame")
...     back = read_hdf(os.path.join(d, "data.h5"), "/frame", chunksize=4)
...     back.npartitions, back.compute().y.tolist()
(2, ['a', 'b', 'c', 'd', 'e', 'f'])
"""

from __future__ import annotations

import contextlib
import fnmatch
import os
import threading
from typing import Any

import numpy as np
import pandas as pd

from ..client.default import client_for
from ..files import LocalFileSystem, expand_paths, file_token, filesystem_for, make_folder, natural_key, \
    partition_names
from ..graph.collection import run_writes
from ..graph.delayed import compute as compute_delayed
from ..graph.layers import annotations_in_force, chunk_key, new_token, per_task
from ..graph.partials import chain_layer
from ..graph.spec import Ref, Task
from .categorical import mark_unknown
from .core import DataFrame, Series
from .io import from_tasks, in_dtypes, meta_dtypes
from .planner import keep_rows

__all__ = ["read_hdf", "to_hdf"]

_SUFFIXES = (".h5", ".hdf5", ".hdf", ".he5")

#: Held around every PyTables call of this module in this process (``lock=True``): the HDF5
#: library under it is not safe from several threads at once. Each process has its own.
_LOCK = threading.Lock()

#: The dtype pandas gives a column of strings (its ``str`` dtype, or object before pandas 3).
_STR = pd.Series(["a"]).dtype


def _tables():
    try:
        import tables
    except ImportError as exc:
        raise ImportError('HDF5 stores need PyTables: pip install "xsched[hdf]" (or tables)') from exc
    return tables


def _held(lock: Any) -> Any:
    """What a task holds around its PyTables calls: the process lock (``True``), nothing
    (``False``), or the lock given (an ``xsched.Lock``, for one writer across processes)."""
    if lock is True:
        return _LOCK
    if lock is False:
        return contextlib.nullcontext()
    return lock


def _checked_lock(lock: Any, what: str, default: bool) -> Any:
    if lock is None:
        return default
    if isinstance(lock, bool) or (hasattr(lock, "__enter__") and hasattr(lock, "__exit__")):
        return lock
    raise TypeError(f"{what}: lock must be True (a lock per process), False (none) or a lock object "
                    f"(an xsched.Lock, used as 'with lock:'), got {lock!r}")


def _local(item: Any, what: str) -> str:
    """A local path: PyTables opens files by path on the local disk only."""
    fs, path = filesystem_for(item)
    if not isinstance(fs, LocalFileSystem):
        raise ValueError(f"{what}: {os.fspath(item)!r} is not on the local disk; PyTables opens HDF5 files by "
                         "local path only: copy the files to a local (or shared) disk first")
    return path


# --------------------------------------------------------------------------- reading


def read_hdf(pattern: Any, key: str, start: int | None = 0, stop: int | None = None, columns: Any = None,
             chunksize: int = 1_000_000, sorted_index: bool = False, lock: Any = True, mode: str = "r"):
    """A dataframe from HDF5 stores written by pandas: a partition per ``chunksize`` rows of
    each key of each file (in the order of the files, then of the keys).

    ``pattern``: a path, a glob or a list of local files. ``key``: a key of each file, or a
    pattern of keys (``"/data*"``, matching with ``fnmatch``, in natural order). Only
    ``format="table"`` stores are read in pieces; a ``format="fixed"`` store is one
    partition per key (dask refuses them). ``start``/``stop`` read those rows of a single
    key only (negative ones count from its end, as pandas counts them). ``columns`` reads
    only those columns (a single name gives a Series). ``sorted_index=True`` says the
    index is sorted through the files and keys: the divisions are then the first index
    value of each piece and the last one (read alone). ``lock``: True holds a per-process
    lock around each read, False none, or pass a lock.

    >>> import os, tempfile, pandas as pd
    >>> with tempfile.TemporaryDirectory() as d:
    ...     pd.DataFrame({"v": range(10)}, index=range(100, 110)).to_hdf(os.path.join(d, "a.h5"), key="t",
    ...                                                                  format="table")
    ...     df = read_hdf(os.path.join(d, "a.h5"), "t", chunksize=4, sorted_index=True)
    ...     [int(d) for d in df.divisions], int(df.v.sum().compute())
    ([100, 104, 108, 109], 45)
    """
    what = "read_hdf"
    _tables()
    if not isinstance(key, str) or not key:
        raise TypeError(f"{what}: key must be a key of the stores (a str such as '/data', or a pattern '/data*'), "
                        f"got {key!r}")
    if mode not in ("r", "r+", "a"):
        raise ValueError(f"{what}: mode must be 'r', 'r+' or 'a' (a read opens the files so), got {mode!r}")
    if isinstance(chunksize, bool) or not isinstance(chunksize, (int, np.integer)) or chunksize < 1:
        raise ValueError(f"{what}: chunksize must be a positive number of rows, got {chunksize!r}")
    start = 0 if start is None else start
    if any(isinstance(v, bool) or not isinstance(v, (int, np.integer)) for v in (start, stop) if v is not None):
        raise ValueError(f"{what}: start and stop are row numbers (negative ones counted from the end), got "
                         f"start={start!r}, stop={stop!r}")
    lock = _checked_lock(lock, what, True)
    key = key if key.startswith("/") else "/" + key
    single = isinstance(columns, str)
    cols = [columns] if single else (list(columns) if columns is not None else None)
    items = list(pattern) if isinstance(pattern, (list, tuple)) else [pattern]
    for item in items:
        _local(item, what)
    files = [p for _, p in expand_paths(items, None, what, suffixes=_SUFFIXES)]

    found = []  # (path, key, storer facts): every key read, in order
    with _LOCK:
        for path in files:
            found += _keys_in(path, key, mode, what)
    if not found:
        listed = {p: ks for p, ks in ((p, _listed(p, mode)) for p in files[:4])}
        raise KeyError(f"{what}: no key matches {key!r} in {len(files)} files; they hold {listed}")
    ranged = start != 0 or stop is not None
    if ranged and len(found) > 1:
        raise ValueError(f"{what}: start= and stop= read rows of one key of one file, but {key!r} names "
                         f"{len(found)} ({_where(*found[0][:2])}, {_where(*found[1][:2])}, ...); read one key, "
                         "or leave start and stop out")
    meta = _common_meta(found, cols, single, what)

    pieces = []  # (path, key, whether a table, first row, row after the last): a partition each
    for path, k, facts in found:
        nrows = facts["nrows"]
        first, end = _rows(start, stop, nrows, _where(path, k), what)
        if facts["table"]:
            bounds = [(lo, min(lo + chunksize, end)) for lo in range(first, end, chunksize)]
        else:
            bounds = [(first, end)] if end > first else []
        pieces += [(path, k, facts["table"], lo, hi) for lo, hi in bounds]
    empty = not pieces
    if empty:  # (every key holds no row, or start == stop: one empty partition)
        path, k, facts = found[0]
        pieces = [(path, k, facts["table"], first, first)]
    divisions = _sorted_divisions(pieces, mode, meta, what) if sorted_index and not empty else None

    token = new_token([file_token(LocalFileSystem(), p) for p in files], key, start, stop, columns, chunksize,
                      sorted_index, mode)
    ann = annotations_in_force()
    pick = columns if single else None

    def tasks_for(read_cols: list | None, part_meta: Any, pushed: tuple = ()) -> list:
        kw = {"pushed": pushed} if pushed else {}
        return [Task(_read_piece, (p, k, table, lo, hi, read_cols, pick, part_meta, lock, mode), kw, per_task(ann))
                for p, k, table, lo, hi in pieces]

    project = None
    if isinstance(meta, pd.DataFrame):
        def project(used: list, pushed: list) -> list | None:
            """The same pieces with fewer columns (PyTables reads a table's rows whole; the other
            columns are dropped as each piece is read), and only the rows passing ``pushed``
            (the planner calls this, ``planner.py``)."""
            read = list(used) or list(meta.columns[:1])  # (a read of no column keeps the rows)
            return tasks_for(read, meta[list(used)], tuple(map(tuple, pushed)))
    return from_tasks(f"read-hdf-{token}", tasks_for(cols, meta), meta, divisions, project=project)


def _rows(start: int, stop: int | None, nrows: int, where: str, what: str) -> tuple:
    """The first row read and the row after the last, of ``nrows``, as a slice takes them
    (and pandas): negative ones count from the end, a ``stop`` past the end reads to the
    end, and a ``stop`` before ``start`` reads no row."""
    first = min(max(start + nrows if start < 0 else start, 0), nrows)
    if stop is None:
        return first, nrows
    end = min(max(stop + nrows if stop < 0 else stop, 0), nrows)
    return first, max(end, first)


def _where(path: str, key: str) -> str:
    return f"{key!r} of {path}"


def _listed(path: str, mode: str) -> list:
    with _LOCK, pd.HDFStore(path, mode=mode) as store:
        return _data_keys(store)


def _data_keys(store: Any) -> list:
    """The keys of a store's data, in natural order: not the nodes pandas keeps a table's
    categories in (``<key>/meta/...``)."""
    keys = list(store.keys())
    return sorted((k for k in keys if not any(k.startswith(p + "/meta/") for p in keys if p != k)), key=natural_key)


def _keys_in(path: str, key: str, mode: str, what: str) -> list:
    """``(path, key, facts)`` for each key of the file ``key`` names (a pattern may name
    none); ``facts``: whether it is a table, its rows and its empty frame."""
    try:
        store = pd.HDFStore(path, mode=mode)
    except Exception as exc:
        raise ValueError(f"{what}: {path} is not an HDF5 file pandas can open ({exc}); pass the HDF5 files only "
                         "(a glob such as 'dir/*.h5')") from exc
    with store:
        have = _data_keys(store)
        if any(ch in key for ch in "*?["):
            keys = [k for k in have if fnmatch.fnmatchcase(k, key)]
        elif key in have:
            keys = [key]
        else:
            raise KeyError(f"{what}: {path} has no key {key!r}; it has {have}")
        out = []
        for k in keys:
            storer = store.get_storer(k)
            if storer.pandas_type is None:
                raise ValueError(f"{what}: {_where(path, k)} is not a pandas object (PyTables data pandas did "
                                 "not write); read it with PyTables")
            table = bool(storer.is_table)
            empty = _empty_of(store, storer, k)
            if table:
                nrows = int(storer.nrows)
            else:
                nrows = len(storer.read_index("index" if isinstance(empty, pd.Series) else "axis1"))
            out.append((path, k, {"table": table, "nrows": nrows, "meta": empty}))
        return out


def _empty_of(store: Any, storer: Any, key: str) -> Any:
    """A key's columns and dtypes as a read of its rows gives them: its read of no rows,
    with pandas' string dtype for a table's string columns (read as objects when no row is)."""
    empty = store.select(key, start=0, stop=0)
    if not storer.is_table or _STR == object:
        return empty
    storer.infer_axes()
    strings = {c for axis in storer.values_axes if axis.kind == "string" for c in axis.values}
    if isinstance(empty, pd.Series):
        return empty.astype(_STR) if strings and empty.dtype == object else empty
    fix = {c: _STR for c in empty.columns if c in strings and empty[c].dtype == object}
    return empty.astype(fix) if fix else empty


def _common_meta(found: list, cols: list | None, single: bool, what: str) -> Any:
    """The first key's empty frame, of ``cols``; every other key must hold the same columns
    (those of ``cols``, when given)."""
    path0, key0, facts0 = found[0]
    meta = facts0["meta"]
    frame = isinstance(meta, pd.DataFrame)
    for path, k, facts in found:
        m = facts["meta"]
        if isinstance(m, pd.DataFrame) != frame:
            kinds = ["a DataFrame" if isinstance(x, pd.DataFrame) else "a Series" for x in (meta, m)]
            raise ValueError(f"{what}: {_where(path0, key0)} holds {kinds[0]} but {_where(path, k)} holds "
                             f"{kinds[1]}; read them apart")
        if not frame:
            if cols is not None:
                raise ValueError(f"{what}: {_where(path, k)} holds a Series, which has no columns to pick; "
                                 "leave columns= out")
            continue
        have = list(m.columns)
        if cols is not None:
            missing = [c for c in cols if c not in have]
            if missing:
                raise ValueError(f"{what}: no column {missing} in {_where(path, k)}: it has the columns {have}")
        elif set(have) != set(meta.columns):
            raise ValueError(f"{what}: {_where(path, k)} has the columns {have}, but {_where(path0, key0)} has "
                             f"{list(meta.columns)}; read keys of the same columns together, or pass columns=")
    if cols is not None:
        meta = meta[cols[0]] if single else meta[cols]
    categorical = [c for c, dt in (meta.dtypes.items() if frame and not single else [(None, meta.dtype)])
                   if isinstance(dt, pd.CategoricalDtype)]
    if categorical and len(found) > 1:  # (each key keeps the categories of its own rows)
        return mark_unknown(meta)
    return meta


def _sorted_divisions(pieces: list, mode: str, meta: Any, what: str) -> tuple:
    """The first index value of each piece and the last one, read alone; refused when the
    pieces' index ranges are not sorted and disjoint (a piece's last value read too)."""
    if meta.index.nlevels > 1:
        raise ValueError(f"{what}: sorted_index=True needs an index of one level; this has "
                         f"{meta.index.nlevels}: pass sorted_index=False")
    ranges = []
    with _LOCK, contextlib.ExitStack() as opened:
        stores: dict = {}  # (each file opened once)
        for path, k, table, lo, hi in pieces:
            if path not in stores:
                stores[path] = opened.enter_context(pd.HDFStore(path, mode=mode))
            storer = stores[path].get_storer(k)
            if table:
                first = storer.read_column("index", start=lo, stop=lo + 1).iloc[0]
                last = storer.read_column("index", start=hi - 1, stop=hi).iloc[0]
            else:
                index = storer.read_index("index" if isinstance(meta, pd.Series) else "axis1", start=lo, stop=hi)
                first, last = index[0], index[-1]
            ranges.append((first, last, f"{_where(path, k)} rows {lo}-{hi}"))
    for (lo0, hi0, where0), (lo1, _, where1) in zip(ranges, ranges[1:] + [(None, None, None)]):
        try:
            why = (f"runs from {lo0!r} to {hi0!r}" if not lo0 <= hi0 else
                   f"ends at {hi0!r}, not before that of {where1} starts ({lo1!r})" if where1 and not hi0 < lo1
                   else None)
        except TypeError as exc:
            why = f"holds values that do not compare ({exc})"
        if why:
            raise ValueError(f"{what}: sorted_index=True, but the index of {where0} {why}: a value on both sides of "
                             "a piece's edge needs another chunksize; an index not sorted, sorted_index=False")
    return tuple(lo for lo, _, _ in ranges) + (ranges[-1][1],)


def _read_piece(path: str, key: str, table: bool, start: int, stop: int, columns: list | None, pick: Any,
                meta: Any, lock: Any, mode: str, pushed: tuple = ()) -> Any:
    """Run on the workers: rows ``start:stop`` of one key (all of a fixed store), in meta's
    columns and dtypes; with ``pushed`` (comparisons the planner took from ``df[df.col > v]``),
    only the rows they keep."""
    where = f"{_where(path, key)}" + (f" (rows {start}-{stop})" if table else "")
    with _held(lock):
        try:
            if table:
                df = pd.read_hdf(path, key, mode=mode, start=start, stop=stop, columns=columns)
            else:
                df = pd.read_hdf(path, key, mode=mode, start=start, stop=stop)
        except (KeyError, OSError, ValueError, TypeError) as exc:
            raise ValueError(f"read_hdf: reading {where}: {exc}") from exc
    if isinstance(df, pd.DataFrame):
        df = df[columns if pick is None else pick] if columns is not None else df[list(meta.columns)]
    df = _conform(df, meta, where)
    return keep_rows(df, pushed) if pushed else df


def _conform(df: Any, meta: Any, where: str) -> Any:
    """A piece in meta's dtypes (keys written apart may differ a little; a table's string
    column whose rows here are all missing reads as objects)."""
    if isinstance(meta, pd.DataFrame) and list(df.columns) != list(meta.columns):
        df = df[list(meta.columns)]
    return in_dtypes(df, meta_dtypes(meta), lambda col, have, want, exc: (
        f"read_hdf: column {col!r} of {where} is {have}, but the first key's is {want}, and it does not convert "
        f"({exc}); read the keys apart, or pass columns= without it"))


# --------------------------------------------------------------------------- writing

_FORMATS = {"t": "table", "table": "table", "f": "fixed", "fixed": "fixed"}


def to_hdf(df: Any, path: Any, key: str, mode: str = "a", append: bool = False, scheduler: Any = None,
           name_function: Any = None, compute: bool = True, lock: Any = None, dask_kwargs: dict | None = None,
           **kwargs: Any):
    """Write a dataframe (or Series) into HDF5 stores, by the workers.

    ``path`` (or ``key``) may hold one ``*``, replaced by ``name_function(i)`` (default
    ``str(i)``): a file (or a key) per partition. Without one, every partition goes into
    the one key of the one file, in order, each appended once the one before is written
    (HDF5 files take one writer at a time). The first write honours ``mode`` (``"a"``,
    ``"w"``: a new file, ``"r+"``) and ``append`` (False: the key is replaced); the rest
    append. Writes ``format="table"`` (readable in pieces by ``read_hdf``) unless given
    ``format="fixed"``, which cannot be appended to. Other keywords (``data_columns``,
    ``min_itemsize``, ``complevel``...) go to ``pandas.DataFrame.to_hdf``. Into one key, the
    first partition's strings set each column's width: pass ``min_itemsize={"col": n}`` for
    longer ones in later partitions (the error says which). A partition of no rows writes
    no table (pandas writes none). ``scheduler``: None (the default Client, or
    this process), a ``Client``, or ``"sync"`` (this process); ``dask_kwargs`` go to the
    compute. ``lock``: None or True holds a per-process lock around each write, False none.

    Returns the path written by each partition (as dask, whose ``compute=False`` gives one
    ``Delayed`` instead): with ``compute=False`` a list of ``Delayed``, one per partition.

    >>> import os, tempfile, pandas as pd, xsched.dataframe as xd
    >>> df = xd.from_pandas(pd.DataFrame({"a": range(4)}), npartitions=2)
    >>> with tempfile.TemporaryDirectory() as d:
    ...     [os.path.basename(p) for p in to_hdf(df, os.path.join(d, "out-*.h5"), "/a")]
    ['out-0.h5', 'out-1.h5']
    """
    what = "to_hdf"
    if not isinstance(df, (DataFrame, Series)):
        raise TypeError(f"{what} writes an xsched DataFrame or Series, not {type(df).__name__}")
    _tables()
    path = _local(path, what)
    if not isinstance(key, str) or not key:
        raise TypeError(f"{what}: key must be the store's key for the data (a str such as '/data'), got {key!r}")
    if path.count("*") + key.count("*") > 1:
        raise ValueError(f"{what}: one '*' at most, in the path or the key (a file or a key per partition); got "
                         f"path={path!r}, key={key!r}")
    if mode not in ("a", "w", "r+"):
        raise ValueError(f"{what}: mode must be 'a', 'w' or 'r+', got {mode!r}")
    fmt = _FORMATS.get(kwargs.pop("format", "table"))
    if fmt is None:
        raise ValueError(f"{what}: format must be 'table' or 'fixed'")
    lock = _checked_lock(lock, what, True)
    try:
        client_for(scheduler)  # (a scheduler xsched cannot run on fails here, before anything runs)
    except ValueError as exc:
        raise ValueError(f"{what}: {exc}") from None
    n = df.npartitions
    one_file, one_key = "*" not in path, "*" not in key
    if fmt == "fixed" and (append or (one_file and one_key and n > 1)):
        raise ValueError(f"{what}: format='fixed' cannot be appended to, and the {n} partitions would be "
                         f"appended {'to what the key holds' if append else 'one after the other'}; write "
                         "format='table', or a file or key per partition ('*')")
    _check_dtypes(df._meta, what)
    names = [str(i) for i in range(n)]
    if not (one_file and one_key):
        names = partition_names(n, name_function, what)
    paths = [path.replace("*", s) for s in names]
    keys = [key.replace("*", s) for s in names]
    for d in sorted({os.path.dirname(p) for p in paths}):
        if d:
            make_folder(LocalFileSystem(), d, what)
    kw = dict(kwargs, format=fmt)
    first = dict(kw, mode=mode, append=append)
    name = f"to-hdf-{new_token(df._name, path, key, names, sorted(first.items(), key=str), repr(lock))}"
    ann = annotations_in_force()
    if one_file:  # partition after partition into the one file, each once the one before is written
        rest = dict(kw, mode="a", append=True if one_key else append)
        chain = chain_layer(name, range(n), df._keys(), _append_part, (path, first, rest, lock), annotations=ann)
        layer = {k: Task(t.func, (*t.args, keys[i], i), t.kwargs, t.annotations)
                 for i, (k, t) in enumerate(chain.items())}
    else:
        layer = {chunk_key(name, (i,)): Task(_write_part, (Ref(k), paths[i], keys[i], i, first, lock), {},
                                             per_task(ann)) for i, k in enumerate(df._keys())}
    delayeds = run_writes(df._graph, name, layer, list(layer), compute=False)
    if not compute:
        return delayeds
    return list(compute_delayed(*delayeds, scheduler=scheduler, **(dask_kwargs or {})))


def _check_dtypes(meta: Any, what: str) -> None:
    """Refuse columns HDF5 stores cannot hold (pandas stores NumPy dtypes, datetimes with a
    time zone, categoricals and strings) before anything runs."""
    pairs = meta.dtypes.items() if isinstance(meta, pd.DataFrame) else [(meta.name, meta.dtype)]
    for col, dt in pairs:
        if not isinstance(dt, (np.dtype, pd.CategoricalDtype, pd.DatetimeTZDtype, pd.StringDtype)):
            hint = "'float64'" if dt.kind in "iuf" else "'object'"
            raise TypeError(f"{what}: column {col!r} is {dt}, which HDF5 stores cannot hold (pandas stores NumPy "
                            "dtypes, datetimes with a time zone, categoricals and strings); cast it first, e.g. "
                            f".astype({{{col!r}: {hint}}})")


def _write_part(part: Any, path: str, key: str, i: int, kwargs: dict, lock: Any) -> str:
    """Run on the workers: one partition into ``key`` of ``path``; returns the path."""
    with _held(lock):
        if not len(part) and kwargs["format"] == "table":
            # pandas writes no table of no rows, and leaves the old one: it goes, as a write would replace it
            if kwargs["mode"] == "w" or (not kwargs["append"] and os.path.exists(path)):
                with pd.HDFStore(path, mode="w" if kwargs["mode"] == "w" else "a") as store:
                    if key in store:
                        store.remove(key)
            return path
        try:
            part.to_hdf(path, key=key, **kwargs)
        except (ValueError, TypeError) as exc:
            hint = ("; appended to what the partitions before it wrote, it must fit the table they made: "
                    "a string column as wide as their longest string (pass min_itemsize={column: width}), "
                    "the same categories; or write a key or a file per partition ('*')") if kwargs["append"] else ""
            raise ValueError(f"to_hdf: partition {i} does not go into {key!r} of {path}: {exc}{hint}") from exc
    return path


def _append_part(prev: Any, part: Any, path: str, first: dict, rest: dict, lock: Any, key: str, i: int) -> str:
    """Run on the workers: one partition written into the one file once the one before it
    is (``prev``: its path, None for the first, which honours ``mode`` and ``append``)."""
    return _write_part(part, path, key, i, first if prev is None else rest, lock)


def _to_hdf_method(self, path_or_buf: Any, key: str, mode: str = "a", append: bool = False, **kwargs: Any):
    """Write into HDF5 stores (see ``xsched.dataframe.hdf.to_hdf``).

    >>> import os, tempfile, pandas as pd, xsched.dataframe as xd
    >>> from xsched.dataframe.hdf import read_hdf
    >>> df = xd.from_pandas(pd.DataFrame({"a": range(6)}), npartitions=3)
    >>> with tempfile.TemporaryDirectory() as d:
    ...     paths = df.to_hdf(os.path.join(d, "x.h5"), "/part*")
    ...     len(paths), read_hdf(os.path.join(d, "x.h5"), "/part*").a.compute().tolist()
    (3, [0, 1, 2, 3, 4, 5])
    """
    return to_hdf(self, path_or_buf, key, mode, append, **kwargs)


DataFrame.to_hdf = _to_hdf_method  # type: ignore[attr-defined]
Series.to_hdf = _to_hdf_method  # type: ignore[attr-defined]
