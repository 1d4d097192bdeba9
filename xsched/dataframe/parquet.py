"""Parquet files as dataframes, and dataframes as parquet files, through pyarrow.

Why this shape: parquet stores its schema and per-row-group statistics in each file's
footer, so a dataframe's meta comes from the first file's schema without reading any
data, whole files or row groups whose statistics rule out every row of ``filters=`` are
dropped before any task exists, and, when ``index=`` names a column whose ranges per
file (or row group) are sorted and do not overlap, the divisions are known. On the
workers pyarrow reads only the columns asked for (``columns=``: the other column chunks
are never read) and drops the rows ``filters=`` excludes.

>>> import tempfile, pandas as pd, xsched.dataframe as xd
>>> from xsched.dataframe.parquet import read_parquet, to_parquet
>>> df = xd.from_pandas(pd.DataFrame({"x": range(6), "y": list("abcdef")}), npartitions=3)
>>> with tempfile.TemporaryDirectory() as d:
...     _ = to_parquet(df, d)
...     back = read_parquet(d, columns=["y"], filters=[("x", ">=", 2)])
...     back.npartitions, back.compute().y.tolist()
(2, ['c', 'd', 'e', 'f'])
"""

from __future__ import annotations

import re
from typing import Any, Callable

import numpy as np
import pandas as pd

from ..graph.layers import annotations_in_force, chunk_key, new_token, per_task
from ..graph.spec import Ref, Task
from .categorical import mark_unknown
from . import hive
from .core import DataFrame, Series
from ..files import LocalFileSystem, arrow_source, expand_paths, file_token, files_in, filesystem_for, is_pattern, \
    join, make_folder, partition_names, shown
from ..graph.collection import run_writes
from .io import from_tasks, in_dtypes, meta_dtypes, refused_options
from .planner import PREDICATES
from ..units import parse_bytes

__all__ = ["read_parquet", "to_parquet"]

_SUFFIXES = (".parquet", ".parq", ".pq")
_OPS = {"=", "==", "!=", "<", "<=", ">", ">=", "in", "not in"}


def _pq():
    try:
        import pyarrow.parquet as pq
    except ImportError as exc:  # pragma: no cover - installed with the dataframe extra
        raise ImportError('parquet files need pyarrow: pip install "xsched[dataframe]" (or pyarrow)') from exc
    return pq


# --------------------------------------------------------------------------- reading


def read_parquet(path: Any, columns: Any = None, filters: Any = None, index: Any = None,
                 storage_options: dict | None = None, split_row_groups: bool | int | str = "infer",
                 calculate_divisions: bool | None = None, blocksize: int | str | None = "256 MiB",
                 engine: str | None = "auto", dtype_backend: str | None = None,
                 parquet_file_extension: Any = _SUFFIXES, filesystem: Any = None):
    """A dataframe from parquet files: one partition per file, or per run of row groups.

    ``split_row_groups="infer"`` (the default) gives a file a partition when its first file
    holds at most ``blocksize`` bytes of data (uncompressed, as the footer says), and
    otherwise cuts every file into runs of consecutive row groups of at most ``blocksize``
    each (one row group at least), so that a single large file does not become a single
    partition that must fit a worker's memory. ``True`` (or ``1``) gives each row group a
    partition, a number ``n`` each ``n`` row groups, ``False`` each file.

    ``path`` is a file, a directory of part files, a glob, a list, or an fsspec URL
    (``storage_options`` go to its filesystem, or ``filesystem=`` gives an fsspec or a
    pyarrow filesystem to read on). A directory's files ending with ``parquet_file_extension`` (an
    ending or several; None: every file) are read, the others skipped when it has any
    such; the files in its folders (not ``key=value`` ones) are read too, at any depth, as
    pandas reads them. ``columns`` reads only those columns (a
    single name gives a Series); ``filters`` (pyarrow's form: ``[("x", ">", 0)]`` for AND,
    a list of such lists for OR, or a ``pyarrow.compute`` expression) keeps the matching
    rows, skipping files and row groups whose statistics rule them all out. The index
    stored by pandas is restored; ``index="col"`` makes that column the index instead
    (``index=False``: none), and its statistics give known divisions when the files' ranges
    are sorted and disjoint (``calculate_divisions=True`` tries that with the stored index).
    A directory of ``key=value`` folders (``to_parquet(partition_on=)``, pandas'
    ``partition_cols``) gives each key as a categorical column, and filters on a key skip
    whole folders (``hive.py``). pyarrow reads them: ``engine`` may be ``"pyarrow"`` or
    ``"auto"`` (dask's spellings of it), nothing else. ``dtype_backend="numpy_nullable"``
    gives pandas' nullable dtypes (Int64, Float64, boolean, string), ``"pyarrow"`` pandas'
    ``ArrowDtype`` of every column, as ``pandas.read_parquet`` does (a folder key too).

    >>> import os, tempfile, pandas as pd
    >>> with tempfile.TemporaryDirectory() as d:
    ...     for i in range(3):
    ...         pd.DataFrame({"t": [2 * i, 2 * i + 1], "v": [1.0, 2.0]}).to_parquet(f"{d}/part.{i}.parquet")
    ...     df = read_parquet(d, index="t")
    ...     df.divisions, float(df.v.sum().compute())
    ...     str(read_parquet(d, dtype_backend="pyarrow").v.dtype)
    ((0, 2, 4, 5), 9.0)
    'double[pyarrow]'
    """
    what = "read_parquet"
    _check_engine(engine, what)
    check_backend(dtype_backend, what)
    _pq()
    import pyarrow as pa

    suffixes = _extensions(parquet_file_extension, what)
    found = _hive_layout(path, storage_options, what, suffixes, filesystem)
    if found is None:
        files = [(fs, p, ()) for fs, p in expand_paths(path, storage_options, what, suffixes=suffixes,
                                                      filesystem=filesystem, nested=True)]
    else:
        files = found
    fs0, p0, _ = files[0]
    md0, file_schema = _footer(fs0, p0)
    keys = hive.key_dictionaries([(p, pairs) for _, p, pairs in files], skip=file_schema.names)
    schema = file_schema
    for key, values in keys.items():
        schema = schema.append(pa.field(key, pa.dictionary(pa.int32(), values.type)))
    index_meta = (file_schema.pandas_metadata or {}).get("index_columns", [])
    stored = [c for c in index_meta if isinstance(c, str)]
    names = list(schema.names)
    data_cols = [c for c in names if c not in stored]
    single = isinstance(columns, str)
    cols = [columns] if single else (list(columns) if columns is not None else None)
    index_cols = [] if index is None or index is False else ([index] if isinstance(index, str) else list(index))
    has = f"{shown(fs0, p0)} has the columns {data_cols}" + (f" and the stored index {stored}" if stored else "")
    if keys:
        has = f"{shown(fs0, p0)} has the columns {[c for c in data_cols if c not in keys]} and its folders the " \
              f"keys {list(keys)}" + (f", and the stored index {stored}" if stored else "")
    missing = [c for c in (cols or []) + index_cols if c not in names]
    if missing:
        raise ValueError(f"{what}: no column {missing[0]!r}: {has}")
    if cols is not None and index is None and any(c in stored for c in cols):
        if single:
            raise ValueError(f"{what}: columns={columns!r} is the stored index, not a column; read it as the "
                             f"index (columns=[]), or as a column with index=False")
        cols = [c for c in cols if c not in stored]  # (the stored index stays the index, as pandas reads it)
    if any(c in keys for c in index_cols):
        raise ValueError(f"{what}: index={index!r} names a folder key; read the dataset, then "
                         f".set_index({index!r}) (its values are known only once every folder is read)")
    dnf, expr = _normalize_filters(filters, names, has)
    hive.check_key_filters(dnf, keys, what)
    own_dnf = None if dnf is None else [[t for t in conj if t[0] not in keys] for conj in dnf]
    own_dnf = [conj for conj in own_dnf or () if conj] or None
    _check_filters(file_schema, own_dnf, expr, f"{shown(fs0, p0)}'s",
                   "; filters on folder keys are given as [(key, op, value)]" if keys else "")
    keep_stored = index is None or (bool(index_cols) and index_cols == stored)
    read_columns = None
    if cols is not None:
        read_columns = list(dict.fromkeys(cols + index_cols + (stored if keep_stored else [])))
    footers = {(id(fs0), p0): md0}
    holes = _with_nulls(md0)
    if dtype_backend is None:
        holes |= _holes_elsewhere(files, fs0, footers, file_schema, lambda pairs: keys and hive.residual_filters(
            dnf, dict(hive.typed_pairs(pairs, keys))) is False)

    def meta_of(read: list | None, wanted: list | None, one: bool) -> Any:
        table = schema.empty_table() if read is None else schema.empty_table().select(read)
        frame = _to_frame(table, index, index_cols, stored, wanted, one, dtype_backend)
        if dtype_backend is None:  # (nullable and arrow dtypes hold missing values as they are)
            frame = _holding_nulls(frame, holes)
        # (an arrow dictionary's dtype does not list its values: only categoricals get the keys')
        return frame if dtype_backend == "pyarrow" else _keyed(frame, hive.key_dtypes(keys))

    meta = meta_of(read_columns, cols, single)

    div_col = index_cols[0] if len(index_cols) == 1 and calculate_divisions is not False else \
        stored[0] if calculate_divisions and index is None and len(stored) == 1 else None
    runs = _run_rule(split_row_groups, blocksize, md0, what)
    pieces = []  # (fs, path, row groups or None, (min, max) of div_col or None, filters left, folder keys)
    for fs, p, pairs in files:
        typed = hive.typed_pairs(pairs, keys)
        left = hive.residual_filters(dnf, dict(typed)) if keys else dnf
        if left is False:  # (its folders' values rule out every row: not even its footer is read)
            continue
        if not (runs or left or div_col):
            pieces.append((fs, p, None, None, left, typed))
            continue
        md = footers.get((id(fs), p)) or _footer(fs, p)[0]
        stats = [_rg_stats(md, i, file_schema) for i in range(md.num_row_groups)]
        kept = [i for i in range(md.num_row_groups) if _may_match(stats[i], left)
                and not (div_col and md.row_group(i).num_rows == 0)]  # (no rows, no bounds: divisions need none)
        if runs:
            pieces += [(fs, p, run, _span([_min_max(stats[i], div_col) for i in run]), left, typed)
                       for run in _row_group_runs(md, kept, runs)]
        elif kept or (md.num_row_groups == 0 and not left and not div_col):
            pieces.append((fs, p, None, _span([_min_max(stats[i], div_col) for i in kept]), left, typed))
    divisions = _divisions([piece[3] for piece in pieces]) if div_col and pieces else None

    token = new_token([file_token(fs, p) for fs, p, _ in files], columns, repr(filters), index, runs,
                      calculate_divisions, dtype_backend)
    name = f"read-parquet-{token}"
    ann = annotations_in_force()

    def tasks_for(read: list | None, wanted: list | None, one: bool, piece_meta: Any, kw: dict) -> list:
        """One read task per piece: ``read`` (None: every column) of the file and its folders."""
        own = None if read is None else [c for c in read if c not in keys]
        wanted_keys = None if read is None else [c for c in read if c in keys]
        extra = [c for c in _filter_columns(own_dnf) if own is not None and c not in own]
        if dtype_backend is not None:
            kw = dict(kw, backend=dtype_backend)
        out = []
        for fs, p, rgs, _, left, typed in pieces:
            folders = (typed, keys, wanted_keys) if keys else None
            out.append(Task(_read_piece, (fs, p, shown(fs, p), rgs, own, extra, left if expr is None else expr,
                                          index, index_cols, stored, wanted, one, piece_meta, divisions is not None),
                            dict(kw, folders=folders) if folders else kw, per_task(ann)))
        return out or [Task(_copy, (piece_meta,), {}, per_task(ann))]  # (every file ruled out by the filters)

    tasks = tasks_for(read_columns, cols, single, meta, {})
    project = None
    if not single:
        def project(used: list, pushed: list) -> list | None:
            """The same pieces read with fewer columns and the rows passing ``pushed`` only
            (the planner calls this, ``planner.py``); None when it cannot: names that are not
            the file's (pandas writes ``0`` as the column ``"0"``, and reads it back as ``0``),
            or comparisons of a folder key (its column is not in the files)."""
            if any(c not in names for c in used) or any(col in keys for col, _, _ in pushed):
                return None
            read = list(dict.fromkeys(list(used) + index_cols + (stored if keep_stored else [])))
            kw = {"pushed": tuple(map(tuple, pushed))} if pushed else {}
            return tasks_for(read, list(used), False, meta_of(read, list(used), False), kw)
    # (each file keeps the categories of its own rows: the collection's are unknown; a folder
    # key's are all its folders' values)
    return from_tasks(name, tasks, _unknown_but(meta, keys), divisions, project=project)


def _extensions(given: Any, what: str) -> tuple[str, ...]:
    """``parquet_file_extension``: one ending, several, or None (every file)."""
    if given is None:
        return ()
    endings = (given,) if isinstance(given, str) else tuple(given) if isinstance(given, (list, tuple, set)) else None
    if endings is None or not all(isinstance(e, str) for e in endings):
        raise TypeError(f"{what}: parquet_file_extension takes a file ending ('.parquet'), several, or None "
                        f"(every file), got {given!r}")
    return endings


def _hive_layout(path: Any, storage_options: dict | None, what: str, suffixes: tuple = _SUFFIXES,
                 filesystem: Any = None) -> list | None:
    """``(fs, file, folder pairs)`` of a ``key=value`` folder layout under ``path``, or None."""
    if isinstance(path, (list, tuple)):
        return None
    if is_pattern(path):  # (a glob names files, not a dataset's folders)
        return None
    fs, base = filesystem_for(path, storage_options, filesystem)
    if not isinstance(fs, LocalFileSystem) and hasattr(fs, "invalidate_cache"):
        fs.invalidate_cache()  # (listings cached here may predate folders the workers wrote)
    found = hive.discover(fs, base, suffixes, what)
    return None if found is None else [(fs, p, pairs) for p, pairs in found]


def _keyed(meta: Any, dtypes: dict) -> Any:
    """Meta with its folder-key columns in the dtypes the partitions give them."""
    if isinstance(meta, pd.Series):
        return meta.astype(dtypes[meta.name]) if meta.name in dtypes else meta
    mine = {c: dt for c, dt in dtypes.items() if c in meta.columns}
    return meta.astype(mine) if mine else meta


def _unknown_but(meta: Any, keys: dict) -> Any:
    """Meta with the categories of its categorical columns marked unknown, but a folder key's."""
    if isinstance(meta, pd.Series):
        return meta if meta.name in keys else mark_unknown(meta)
    return mark_unknown(meta, [c for c in meta.columns if c not in keys])


def _footer(fs: Any, path: str) -> tuple[Any, Any]:
    """A file's footer: its metadata (row groups, statistics) and arrow schema."""
    with arrow_source(fs, path) as src:
        try:
            pf = _pq().ParquetFile(src)
            return pf.metadata, pf.schema_arrow
        except Exception as exc:
            raise ValueError(f"read_parquet: {shown(fs, path)} is not a parquet file ({exc}); "
                             "pass the parquet files only (a glob such as 'dir/*.parquet')") from exc


def _normalize_filters(filters: Any, names: list, has: str) -> tuple[list | None, Any]:
    """Filters as a list of AND-lists (DNF), checked against the columns; or a pyarrow
    expression as given (then no statistics are used)."""
    if filters is None or (isinstance(filters, (list, tuple)) and not filters):
        return None, None
    if not isinstance(filters, (list, tuple)):
        return None, filters  # a pyarrow.compute.Expression
    nested = isinstance(filters[0], (list, tuple)) and not isinstance(filters[0][0], str)
    dnf = [list(f) for f in filters] if nested else [list(filters)]
    for conj in dnf:
        for pred in conj:
            if not (isinstance(pred, (list, tuple)) and len(pred) == 3 and str(pred[1]).lower() in _OPS):
                raise ValueError(f"read_parquet: filter {pred!r} is not (column, op, value) with op one of "
                                 f"{sorted(_OPS)}; e.g. filters=[('x', '>', 0)]")
            if pred[0] not in names:
                raise ValueError(f"read_parquet: filters name no column {pred[0]!r}: {has}")
    return [[(c, str(op).lower(), v) for c, op, v in conj] for conj in dnf], None


def _check_filters(schema: Any, dnf: list | None, expr: Any, whose: str, hint: str = "") -> None:
    """Filters whose values do not compare with their columns' types (``("x", ">", "1")`` on
    integers) fail here, when the read is built, rather than in every task."""
    if dnf is None and expr is None:
        return
    import pyarrow as pa

    try:
        schema.empty_table().filter(_pq().filters_to_expression(dnf) if expr is None else expr)
    except (pa.ArrowException, TypeError, ValueError) as exc:
        shown_filters = dnf if expr is None else expr
        raise ValueError(f"read_parquet: filters {shown_filters!r} do not apply to {whose} column types "
                         f"({exc}); give values of the columns' types{hint}") from exc


def _filter_columns(dnf: list | None) -> list:
    return list(dict.fromkeys(c for conj in dnf or () for c, _, _ in conj))


def _stat_value(stats: Any, field: Any, which: str) -> Any:
    import pyarrow as pa

    if pa.types.is_timestamp(field.type):
        raw = getattr(stats, f"{which}_raw")
        return pd.Timestamp(raw, unit=field.type.unit, tz=field.type.tz)
    return getattr(stats, which)


def _rg_stats(md: Any, i: int, schema: Any) -> dict:
    """``{column: (min, max, loose)}`` of row group ``i``, for the top-level columns that have
    them; ``loose``: the column may also hold missing values, which the range leaves out."""

    rg = md.row_group(i)
    out = {}
    for j in range(rg.num_columns):
        col = rg.column(j)
        name = col.path_in_schema
        st = col.statistics
        if name not in schema.names or st is None or not st.has_min_max:
            continue
        try:
            field = schema.field(name)
            loose = not st.has_null_count or st.null_count > 0
            out[name] = (_stat_value(st, field, "min"), _stat_value(st, field, "max"), loose)
        except Exception:  # statistics we cannot read are no statistics
            continue
    return out


def _holds(lo: Any, hi: Any, loose: bool, op: str, value: Any) -> bool:
    """Whether a value range ``[lo, hi]`` (``loose``: with missing values besides) may hold a
    value satisfying ``op value`` (as pyarrow filters: a missing value passes ``not in``)."""
    if loose and op == "not in":
        return True
    if op in ("=", "=="):
        return lo <= value <= hi
    if op == "!=":
        return not (lo == hi == value)
    if op == "<":
        return lo < value
    if op == "<=":
        return lo <= value
    if op == ">":
        return hi > value
    if op == ">=":
        return hi >= value
    if op == "in":
        return any(lo <= v <= hi for v in value)
    if op == "not in":
        return not (lo == hi and lo in value)
    return True


def _may_match(stats: dict, dnf: list | None) -> bool:
    """False only when the statistics rule out every row for every AND-list of the filters."""
    if not dnf:
        return True

    def pred_may(col: str, op: str, value: Any) -> bool:
        if col not in stats:
            return True
        try:
            return bool(_holds(*stats[col], op, value))
        except (TypeError, ValueError):  # values that do not compare with the statistics
            return True

    return any(all(pred_may(*pred) for pred in conj) for conj in dnf)


def _run_rule(split_row_groups: Any, blocksize: Any, md0: Any, what: str) -> tuple | None:
    """How files are cut: None (a partition per file), ("count", n) row groups per partition,
    or ("bytes", limit) of data per partition; "infer" looks at the first file's size."""
    if isinstance(split_row_groups, bool):
        return ("count", 1) if split_row_groups else None
    if isinstance(split_row_groups, int) and split_row_groups > 0:
        return ("count", split_row_groups)
    if split_row_groups != "infer":
        raise ValueError(f"{what}: split_row_groups={split_row_groups!r}; give 'infer', True, False or a "
                         "number of row groups per partition")
    if blocksize is None:
        return None
    limit = parse_bytes(blocksize)
    if limit <= 0:
        raise ValueError(f"{what}: blocksize={blocksize!r} must be positive (or None: a partition per file)")
    first = sum(md0.row_group(i).total_byte_size for i in range(md0.num_row_groups))
    return ("bytes", limit) if first > limit else None


def _row_group_runs(md: Any, kept: list, rule: tuple) -> list[list[int]]:
    """``kept`` row groups cut into runs of consecutive ones by ``rule`` (``_run_rule``)."""
    kind, n = rule
    if kind == "count":
        return [kept[i:i + n] for i in range(0, len(kept), n)]
    runs: list[list[int]] = []
    total = 0
    for i in kept:
        size = md.row_group(i).total_byte_size
        if runs and runs[-1][-1] == i - 1 and total + size <= n:
            runs[-1].append(i)
            total += size
        else:
            runs.append([i])
            total = size
    return runs


def _min_max(stats: dict, col: Any) -> tuple | None:
    return stats[col][:2] if col in stats else None


def _span(ranges: list) -> Any:
    if not ranges or any(r is None for r in ranges):
        return None
    try:
        return min(r[0] for r in ranges), max(r[1] for r in ranges)
    except TypeError:
        return None


def _divisions(ranges: list) -> tuple | None:
    """Divisions from the pieces' (min, max), if all known, sorted and disjoint."""
    if any(r is None for r in ranges):
        return None
    try:
        if any(lo > hi for lo, hi in ranges) or any(a[1] >= b[0] for a, b in zip(ranges, ranges[1:])):
            return None
    except TypeError:
        return None
    return tuple(lo for lo, _ in ranges) + (ranges[-1][1],)


#: ``dtype_backend`` values, as pandas and dask take them (None: pandas' default dtypes).
_BACKENDS = (None, "numpy_nullable", "pyarrow")


def check_backend(dtype_backend: Any, what: str) -> None:
    """Refuse a ``dtype_backend`` pandas refuses, in pandas' words (the arrow readers' check).

    >>> check_backend("numpy", "read_orc")
    Traceback (most recent call last):
    ValueError: read_orc: dtype_backend='numpy' is invalid; only 'numpy_nullable' and 'pyarrow' are allowed...
    """
    if dtype_backend not in _BACKENDS:
        raise ValueError(f"{what}: dtype_backend={dtype_backend!r} is invalid; only 'numpy_nullable' and 'pyarrow' "
                         f"are allowed: dtype_backend must be one of {list(_BACKENDS)} (None: pandas' default "
                         "dtypes)")


def _types_mapper(backend: str | None) -> Any:
    """pandas' choice of dtype for an arrow type under ``dtype_backend``
    (``pandas.io._util.arrow_table_to_pandas``): nullable dtypes, or ``ArrowDtype`` of all.

    >>> import pyarrow as pa
    >>> _types_mapper("numpy_nullable")(pa.uint8()), _types_mapper("pyarrow")(pa.int64())
    (UInt8Dtype(), int64[pyarrow])
    """
    if backend == "pyarrow":
        return pd.ArrowDtype
    if backend != "numpy_nullable":
        return None
    import pyarrow as pa

    return {pa.int8(): pd.Int8Dtype(), pa.int16(): pd.Int16Dtype(), pa.int32(): pd.Int32Dtype(),
            pa.int64(): pd.Int64Dtype(), pa.uint8(): pd.UInt8Dtype(), pa.uint16(): pd.UInt16Dtype(),
            pa.uint32(): pd.UInt32Dtype(), pa.uint64(): pd.UInt64Dtype(), pa.bool_(): pd.BooleanDtype(),
            pa.float32(): pd.Float32Dtype(), pa.float64(): pd.Float64Dtype(), pa.string(): pd.StringDtype(),
            pa.large_string(): pd.StringDtype()}.get


def _to_frame(table: Any, index: Any, index_cols: list, stored: list, cols: list | None, single: bool,
              backend: str | None = None) -> Any:
    """A read table as the partition (in ``backend``'s dtypes): pandas' stored index restored,
    or ``index=`` applied, in the order of ``columns=``."""
    # one block per column, and each Arrow column freed once converted: the default makes a
    # copy of the floats into one 2-D block while the whole table is still held
    df = table.to_pandas(split_blocks=True, self_destruct=True, types_mapper=_types_mapper(backend))
    if index is False or (index_cols and index_cols != stored):
        unnamed = all(n is None for n in df.index.names)
        df = df.reset_index(drop=unnamed)  # (a named stored index stays, as a column)
        if index_cols:
            df = df.set_index(index_cols[0] if len(index_cols) == 1 else index_cols)
    if cols is not None:
        df = df[[c for c in cols if c not in index_cols]]
    if single:
        return df[cols[0]]
    return df


def _with_nulls(md: Any) -> set:
    """The columns a file's statistics say hold missing values."""
    out = set()
    for i in range(md.num_row_groups):
        rg = md.row_group(i)
        for j in range(rg.num_columns):
            st = rg.column(j).statistics
            if st is not None and st.has_null_count and st.null_count:
                out.add(rg.column(j).path_in_schema)
    return out


#: At most this many files' footers are read when the graph is built to see which integer and
#: boolean columns hold missing values (all of them on a local disk): past it, in a remote store,
#: a partition that holds one where the first file had none fails naming dtype_backend=.
FOOTERS_READ_REMOTE = 64


def _holes_elsewhere(files: list, fs0: Any, footers: dict, schema: Any, ruled_out: Callable) -> set:
    """The integer and boolean columns the other files' statistics say hold missing values
    (pandas reads such a column as float64 or object in every partition, as concatenating the
    files would give); their footers are kept in ``footers`` for the divisions and filters.
    Files whose folder keys the filters rule out (``ruled_out(pairs)``) are not opened."""
    import pyarrow as pa

    kinds = {f.name for f in schema if pa.types.is_integer(f.type) or pa.types.is_boolean(f.type)}
    if not kinds or (not isinstance(fs0, LocalFileSystem) and len(files) > FOOTERS_READ_REMOTE):
        return set()
    out: set = set()
    for fs, p, pairs in files:
        if ruled_out(pairs):
            continue
        md = footers.get((id(fs), p))
        if md is None:
            md = footers[(id(fs), p)] = _footer(fs, p)[0]
        out |= _with_nulls(md) & kinds
    return out


def _holding_nulls(meta: Any, holes: set) -> Any:
    """Meta as pandas reads a file whose integer or boolean columns ``holes`` hold missing
    values: float64 and object (the empty schema alone says int64 and bool)."""
    frame = meta.to_frame() if isinstance(meta, pd.Series) else meta
    changed = {c: "float64" if dt.kind in "iu" else object for c, dt in frame.dtypes.items()
               if str(c) in holes and isinstance(dt, np.dtype) and dt.kind in "iub"}
    if not changed:
        return meta
    frame = frame.astype(changed)
    return frame.iloc[:, 0] if isinstance(meta, pd.Series) else frame


def _copy(meta: Any) -> Any:
    return meta.copy()


def _read_piece(fs: Any, path: str, label: str, row_groups: list | None, read_columns: list | None, extra: list,
                filters: Any, index: Any, index_cols: list, stored: list, cols: list | None, single: bool,
                meta: Any, sort: bool, pushed: tuple = (), folders: tuple | None = None,
                backend: str | None = None) -> Any:
    """Run on the workers: one file (or some of its row groups) as a pandas partition; with
    ``pushed`` (comparisons the planner took from ``df[df.col > value]``), only the rows
    pandas' comparison keeps, with the labels they would have had (``_read_pushed``); with
    ``folders`` (the file's folder keys, every key's values, the keys wanted), its folders'
    values as columns (``hive.with_keys``); ``backend``: the ``dtype_backend``."""
    pq = _pq()
    import pyarrow as pa

    # A local file is read a page at a time; pre-buffering (one coalesced read of every column
    # chunk wanted, which pays for a remote store's latency) would hold all their compressed
    # bytes at once.
    pre_buffer = not isinstance(fs, LocalFileSystem)
    expr = filters if filters is None or not isinstance(filters, (list, tuple)) else pq.filters_to_expression(filters)
    wanted = None if read_columns is None else read_columns + extra
    labels = None
    try:
        with arrow_source(fs, path) as src:
            if pushed:
                table, labels = _read_pushed(pq.ParquetFile(src, pre_buffer=pre_buffer), row_groups, wanted, expr,
                                             pushed, meta, index, index_cols, stored, backend)
            elif row_groups is None:
                table = pq.read_table(src, columns=read_columns, filters=filters, use_pandas_metadata=True,
                                      pre_buffer=pre_buffer)
            else:
                table = pq.ParquetFile(src, pre_buffer=pre_buffer).read_row_groups(
                    row_groups, columns=wanted, use_pandas_metadata=True)
                if expr is not None:
                    table = table.filter(expr)
            if extra and (pushed or row_groups is not None):
                table = table.drop_columns(extra)
            if folders is not None:
                table = hive.with_keys(table, *folders)
    except (pa.ArrowException, KeyError) as exc:
        raise ValueError(f"read_parquet: reading {label}: {exc}") from exc
    df = _to_frame(table, index, index_cols, stored, cols, single, backend)
    del table
    pa.default_memory_pool().release_unused()  # (the reader's buffers, kept by Arrow's allocator)
    if labels is not None:
        df.index = labels
    return _conform(df, meta, label, sort)


#: Rows read at a time when comparisons are pushed into the read: only the rows kept are held.
PUSHED_BATCH_ROWS = 65_536


def _read_pushed(f: Any, row_groups: list | None, wanted: list | None, expr: Any, pushed: tuple, meta: Any,
                 index: Any, index_cols: list, stored: list, backend: str | None = None) -> tuple[Any, Any]:
    """The rows of a piece that pass ``expr`` (pyarrow's filter, as ``filters=`` reads) and
    then ``pushed`` (pandas' comparison of each column as the partition would hold it: a
    missing value passes ``!=`` only), read ``PUSHED_BATCH_ROWS`` at a time; and the index
    labels those rows would have had in the whole partition when its index is a numbering
    (None when the index comes from the data)."""
    import numpy as np
    import pyarrow as pa

    groups = list(range(f.metadata.num_row_groups)) if row_groups is None else row_groups
    kept, masks = [], []
    # (on the task's thread alone: a worker runs one task per thread, and Arrow's pool decoding
    # the columns of a batch in parallel cost more CPU in all, measured, for a quicker task)
    for batch in f.iter_batches(batch_size=PUSHED_BATCH_ROWS, row_groups=groups, columns=wanted,
                                use_pandas_metadata=True, use_threads=False):
        part = pa.Table.from_batches([batch])
        if expr is not None:
            part = part.filter(expr)
        mask = np.ones(part.num_rows, dtype=bool)
        for col, op, value in pushed:
            s = _as_conformed(part.column(col).to_pandas(types_mapper=_types_mapper(backend)), meta, col)
            mask &= PREDICATES[op](s, value).to_numpy(dtype=bool, na_value=False)  # (NA: as df[mask])
        kept.append(part.take(np.flatnonzero(mask)))  # (a filter keeping no row drops the batch's
        # dictionaries, and with them categories the partition has when read whole)
        masks.append(mask)
    schema = f.schema_arrow
    table = pa.concat_tables(kept) if kept else \
        (schema.empty_table() if wanted is None else schema.empty_table().select(_with_index(wanted, schema)))
    table = table.replace_schema_metadata(schema.metadata)
    total = sum(len(m) for m in masks)
    numbering = _numbering(schema, total, index, index_cols, stored)
    labels = None if numbering is None else numbering[np.concatenate(masks)] if masks else numbering[:0]
    return table, labels


def _as_conformed(s: pd.Series, meta: Any, col: str) -> pd.Series:
    """The column as ``_conform`` makes it in the partition (a categorical stays as read; a
    value that does not convert stays as read too, and ``_conform`` then says so)."""
    want = meta[col].dtype if isinstance(meta, pd.DataFrame) and col in meta.columns else s.dtype
    if s.dtype == want or isinstance(want, pd.CategoricalDtype):
        return s
    try:
        return s.astype(want)
    except (ValueError, TypeError):
        return s


def _with_index(wanted: list, schema: Any) -> list:
    """``wanted`` and the stored index columns, as ``use_pandas_metadata`` reads them."""
    stored = [c for c in (schema.pandas_metadata or {}).get("index_columns", []) if isinstance(c, str)]
    return list(dict.fromkeys(wanted + [c for c in stored if c in schema.names]))


def _numbering(schema: Any, total: int, index: Any, index_cols: list, stored: list) -> Any:
    """The index of a piece of ``total`` rows when it numbers the rows instead of coming from
    the data: ``index=False``, or no stored index column (pyarrow restores a stored
    RangeIndex only when its length is the table's)."""
    if index_cols:
        return None
    if index is None and stored:
        return None
    if index is None:
        for c in (schema.pandas_metadata or {}).get("index_columns", []):
            if isinstance(c, dict) and c.get("kind") == "range":
                r = pd.RangeIndex(c["start"], c["stop"], c["step"], name=c.get("name"))
                if len(r) == total:
                    return r
    return pd.RangeIndex(total)


def _conform(df: Any, meta: Any, label: str, sort: bool) -> Any:
    """A partition in meta's columns and dtypes (files written apart may differ a little)."""
    if isinstance(meta, pd.DataFrame) and list(df.columns) != list(meta.columns):
        if set(df.columns) == set(meta.columns):
            df = df[list(meta.columns)]
        else:
            raise ValueError(f"read_parquet: {label} has the columns {list(df.columns)}, but the first file "
                             f"has {list(meta.columns)}; read files of one schema together, or pass columns=")
    df = in_dtypes(df, meta_dtypes(meta), lambda col, have, want, exc: (
        f"read_parquet: column {col!r} of {label} is {have}, but the first file's is {want}, and it does not "
        f"convert ({exc}); " + ("dtype_backend='numpy_nullable' reads integers and booleans that hold missing values "
                               "as Int64 and boolean, or read the files apart"
                               if getattr(want, "kind", "") in "iub" else "read the files apart")))
    if sort and not df.index.is_monotonic_increasing:
        df = df.sort_index()
    return df


# --------------------------------------------------------------------------- writing


def to_parquet(df: Any, path: str, write_index: bool = True, compute: bool = True,
               storage_options: dict | None = None, compression: str | None = "snappy",
               overwrite: bool = False, partition_on: Any = None, name_function: Any = None,
               engine: str | None = "auto", append: bool = False, ignore_divisions: bool = False,
               **kwargs: Any):
    """Write a dataframe as a directory of ``part.<i>.parquet`` files, written by the workers.

    Every file gets the schema of the dataframe's meta (so empty partitions agree), with
    the index as a column when ``write_index``. ``partition_on`` (a column or a list; also
    ``partition_cols``) writes a folder per value instead, ``col=value/part.<i>.parquet``,
    the column kept in the folder names only, as pandas, pyarrow and dask do: ``read_parquet``
    gives it back as a categorical and skips the folders ``filters=`` rule out. A directory
    that already holds parquet files (or ``key=value`` folders) is refused unless
    ``overwrite=True``, which deletes them first, or ``append=True`` (dask's), which adds
    these files after them: numbered on (``part.<n>.parquet`` from one past the highest
    there, or ``name_function(i + files there)``), each name a new one, so that
    ``read_parquet`` of the directory gives the old rows, then these. Appended columns, index
    and dtypes must be those of the files there (checked now, against the first, whose
    schema ``read_parquet`` takes); with a named index of known divisions, the first new
    division may not be below the largest index value of the last file there, unless
    ``ignore_divisions=True`` (the index would not be sorted across files). ``schema``:
    ``"infer"`` (meta's, the default), a ``pyarrow.Schema``, or ``{column: pyarrow type}``
    in place of meta's types for those columns; no ``_metadata`` file is written. Other keywords go to
    ``pyarrow.parquet.write_table`` (``engine``: ``"pyarrow"`` or ``"auto"``, the one
    there is). ``name_function(i)`` names partition ``i``'s file instead of ``part.<i>.parquet``
    (a different name ending ``.parquet`` for each: ``read_parquet`` of the directory reads
    those, in the natural order of their names). Returns the written paths, or with ``compute=False`` a list of
    ``Delayed`` that write them (one per partition, each giving its paths when partitioned on
    columns).

    >>> import os, tempfile, pandas as pd, xsched.dataframe as xd
    >>> df = xd.from_pandas(pd.DataFrame({"a": range(4)}, index=list("wxyz")), npartitions=2)
    >>> with tempfile.TemporaryDirectory() as d:
    ...     paths = to_parquet(df, d)
    ...     [os.path.basename(p) for p in paths], read_parquet(d).compute().index.tolist()
    ...     [os.path.basename(p) for p in to_parquet(df, d, append=True, ignore_divisions=True)]
    ...     read_parquet(d).compute().a.tolist()
    (['part.0.parquet', 'part.1.parquet'], ['w', 'x', 'y', 'z'])
    ['part.2.parquet', 'part.3.parquet']
    [0, 1, 2, 3, 0, 1, 2, 3]
    """
    if isinstance(df, Series):
        df = df.to_frame()
    if not isinstance(df, DataFrame):
        raise TypeError(f"to_parquet writes an xsched DataFrame, not {type(df).__name__}")
    _check_engine(engine, "to_parquet")
    if append and overwrite:
        raise ValueError("to_parquet: append=True adds files after those in the directory, overwrite=True deletes "
                         "them first; pass one of them")
    files = _file_names(df.npartitions, name_function, 0)
    pq = _pq()
    if "partition_cols" in kwargs:
        if partition_on is not None:
            raise TypeError("to_parquet: give partition_on or partition_cols, not both (they are one option)")
        partition_on = kwargs.pop("partition_cols")
    on = [] if partition_on is None else [partition_on] if isinstance(partition_on, str) else list(partition_on)
    missing = [c for c in on if c not in df.columns]
    if missing:
        raise ValueError(f"to_parquet(partition_on=...): no column {missing[0]!r}; the columns are "
                         f"{list(df.columns)}")
    if on and len(set(on)) != len(on):
        raise ValueError(f"to_parquet(partition_on={on!r}) names a column twice")
    written = df._meta.drop(columns=on) if on else df._meta
    if kwargs.pop("write_metadata_file", None):
        raise ValueError("to_parquet(write_metadata_file=True): no _metadata file is written here (readers take "
                         "each file's own footer, and read_parquet plans from those); leave the option out")
    schema = _given_schema(kwargs.pop("schema", "infer"), _schema_for(written, write_index))
    _check_write_options(pq, written, write_index, schema, compression, kwargs)
    fs, base = filesystem_for(path, storage_options)
    make_folder(fs, base, "to_parquet")
    try:
        old = [p for p in (fs.ls(base) if isinstance(fs, LocalFileSystem) else fs.ls(base, detail=False))
               if str(p).endswith(_SUFFIXES)]
    except FileNotFoundError:  # (object stores have no empty directories)
        old = []
    folders = hive.written_folders(fs, base)
    if append and (old or folders):
        count, taken = _check_append(df, written, write_index, on, ignore_divisions, fs, base, path, old, folders)
        files = _file_names(df.npartitions, name_function, count if name_function is not None else max(
            [count] + [int(m.group(1)) + 1 for m in map(_PART.fullmatch, taken) if m]))
        clash = [f for f in files if f in taken]
        if clash:
            raise ValueError(f"to_parquet(append=True): {path!r} already holds a file {clash[0]!r}, which "
                             "name_function(i + the number of files there) names again; name these files apart")
    elif (old or folders) and not overwrite:
        held = " and ".join(([f"{len(old)} parquet files"] if old else []) +
                            ([f"{len(folders)} key=value folders"] if folders else []))
        raise ValueError(f"to_parquet: {path!r} already holds {held}, which a later read_parquet would mix "
                         "with these; pass overwrite=True to delete them first, append=True to add these after "
                         "them, or write to a new directory")
    elif old or folders:
        if _reads_from(df, fs, base):
            raise ValueError(f"to_parquet(overwrite=True): {path!r} holds files this dataframe is read from, "
                             "which would be deleted before they are read; write to another directory (and move "
                             "it), or persist() the dataframe first")
        for p in old:
            fs.rm(p)
        for folder in folders:
            fs.rm(folder, recursive=True)
    token = new_token(df._name, shown(fs, base), write_index, compression, on, files, sorted(kwargs.items(), key=str))
    name = f"to-parquet-{token}"
    ann = annotations_in_force()
    if on:
        layer = {chunk_key(name, (i,)): Task(_write_split, (Ref(key), fs, base, files[i], on, write_index, schema,
                                                            compression, kwargs), {}, per_task(ann))
                 for i, key in enumerate(df._keys())}
        out = run_writes(df._graph, name, layer, list(layer), compute)
        return [p for paths in out for p in paths] if compute else out
    layer = {chunk_key(name, (i,)): Task(_write_piece, (Ref(key), fs, join(fs, base, files[i]),
                                                        write_index, schema, compression, kwargs), {}, per_task(ann))
             for i, key in enumerate(df._keys())}
    return run_writes(df._graph, name, layer, list(layer), compute)


#: The name ``to_parquet`` gives partition ``<n>``'s file.
_PART = re.compile(r"part\.(\d+)\.parquet")


def _file_names(n: int, name_function: Any, offset: int) -> list[str]:
    """The names of ``n`` partitions' files: ``part.<offset + i>.parquet``, or
    ``name_function(offset + i)``, each a new name ending ``.parquet``."""
    if name_function is None:
        return [f"part.{offset + i}.parquet" for i in range(n)]
    files = partition_names(n, (lambda i: name_function(offset + i)) if offset else name_function, "to_parquet",
                            files=True)
    odd = [f for f in files if not f.endswith(_SUFFIXES)]
    if odd:
        raise ValueError(f"to_parquet: name_function names files in the directory, each ending {_SUFFIXES[0]!r} "
                         f"(read_parquet of the directory reads those); it gave {odd[0]!r}")
    return files


def _check_append(df: DataFrame, written: pd.DataFrame, write_index: bool, on: list, ignore_divisions: bool,
                  fs: Any, base: str, path: str, old: list, folders: list) -> tuple[int, set[str]]:
    """How many data files are there, and the names taken, once ``append=True`` is found to fit them: the
    same ``partition_on`` folders, columns, index and dtypes (as ``read_parquet`` gives them
    back) as the first file, and, for a named index of known divisions, no new index value
    below the last file's largest (dask's check; ``ignore_divisions`` skips it)."""
    what = "to_parquet(append=True)"

    def names(paths: Any) -> set[str]:
        return {str(p).replace("\\", "/").rsplit("/", 1)[-1] for p in paths}

    try:
        found = hive.discover(fs, base, _SUFFIXES, what) if folders and not old else \
            [(p, ()) for p in files_in(fs, base, _SUFFIXES) if str(p).endswith(_SUFFIXES)]
    except FileNotFoundError:  # (key=value folders holding no data file)
        found = None
    if not found:
        return 0, names(old)
    keys = [k for k, _ in found[0][1]]
    if (old and folders) or keys != on:
        there = "parquet files and key=value folders" if old and folders else \
            f"folders of the keys {keys}" if keys else "files of no key=value folders"
        raise ValueError(f"{what}: {path!r} holds {there}, and these are written with partition_on={on or None!r}; "
                         f"append with the layout there (partition_on={keys or None!r}), or write to a new directory")
    first = found[0][0]
    schema = _footer(fs, first)[1]
    have = schema.empty_table().to_pandas()
    new = _schema_for(written, write_index)
    want = new.empty_table().to_pandas() if new is not None else written  # (as read_parquet would give it back)
    stored = [c for c in (schema.pandas_metadata or {}).get("index_columns", []) if isinstance(c, str)]
    old_index = list(have.index.names) if stored else []
    new_index = list(want.index.names) if write_index else []
    if [str(c) for c in have.columns] != [str(c) for c in want.columns]:
        raise ValueError(f"{what}: {shown(fs, first)} has the columns {list(have.columns)}, but these have "
                         f"{list(want.columns)}; append the same columns, in that order (select or rename "
                         "them), or write to a new directory")
    if old_index != new_index:
        differs = f"holds an index ({old_index}), these are written without one; pass write_index=True" \
            if not new_index else f"holds no index, these are written with one ({new_index}); pass " \
            "write_index=False" if not old_index else f"holds the index {old_index}, these the index " \
            f"{new_index}; name it as there (.rename_axis({old_index[0] if len(old_index) == 1 else old_index!r}))"
        raise ValueError(f"{what}: {shown(fs, first)} {differs}, or write to a new directory")
    pairs = list(zip(have.columns, have.dtypes, want.dtypes)) + (
        list(zip(old_index, [have.index.get_level_values(i).dtype for i in range(len(old_index))],
                 [want.index.get_level_values(i).dtype for i in range(len(new_index))])) if old_index else [])
    for col, before, now in pairs:
        if before != now and now != object and not (isinstance(before, pd.CategoricalDtype) and
                                                    isinstance(now, pd.CategoricalDtype)):
            raise ValueError(f"{what}: {col!r} is {before} in {shown(fs, first)}, but {now} in these; convert it "
                             f"first (.astype({{{col!r}: {str(before)!r}}})), or write to a new directory")
    name = df._meta.index.name
    if write_index and not ignore_divisions and df.known_divisions and name is not None and stored == [name]:
        last = found[-1][0]
        md = _footer(fs, last)[0]
        ends = [r[1] for r in (_min_max(_rg_stats(md, i, schema), name) for i in range(md.num_row_groups)) if r]
        try:
            overlap = bool(ends) and df.divisions[0] < max(ends)
        except TypeError:  # (index values that do not compare: nothing to check)
            overlap = False
        if overlap:
            raise ValueError(f"{what}: these start at {name!r} = {df.divisions[0]!r}, below the largest in "
                             f"{shown(fs, last)} ({max(ends)!r}), so the index would not be sorted across the "
                             "files; pass ignore_divisions=True to append anyway")
    return len(found), names(old) | names(p for p, _ in found)


def _check_engine(engine: Any, what: str) -> None:
    """``engine="pyarrow"`` and ``"auto"`` (dask's spellings) are pyarrow, the only one."""
    if engine not in (None, "auto", "pyarrow"):
        raise ValueError(f"{what}: engine={engine!r} is not available; xsched reads and writes parquet with "
                         "pyarrow (engine='pyarrow', or leave engine out)")


def _reads_from(df: DataFrame, fs: Any, base: str) -> bool:
    """Whether a task of ``df``'s graph names a file under ``base`` (a reader's path)."""
    import os

    local = isinstance(fs, LocalFileSystem)
    root = os.path.abspath(base) if local else base.rstrip("/")

    def under(arg: Any) -> bool:
        if not isinstance(arg, str):
            return False
        where = os.path.abspath(arg) if local else arg
        return where.startswith(root + (os.sep if local else "/"))

    return any(any(under(a) for a in getattr(task, "args", ())[:3])
               for layer in df._graph.layers.values() for task in layer.values())


def _given_schema(given: Any, inferred: Any) -> Any:
    """The arrow schema the files get: meta's (``"infer"`` or None, as dask's default infers
    one), a ``pyarrow.Schema`` as given, or meta's with the types of a ``{column: type}``
    dict in place of its own."""
    import pyarrow as pa

    if given is None or (isinstance(given, str) and given == "infer"):
        return inferred
    if isinstance(given, pa.Schema):
        return given
    if not isinstance(given, dict):
        raise TypeError(f"to_parquet: schema must be 'infer', a pyarrow.Schema or a {{column: pyarrow type}} dict, "
                        f"not {type(given).__name__}")
    if inferred is None:
        raise ValueError("to_parquet(schema={...}): the other columns' types are not known from meta (an empty "
                         "object column); give a whole pyarrow.Schema")
    unknown = [c for c in given if c not in inferred.names]
    if unknown:
        raise ValueError(f"to_parquet(schema=...): no column {unknown[0]!r}; the columns are {inferred.names}")
    for column, typ in given.items():
        field = pa.field(column, typ) if not isinstance(typ, pa.Field) else typ
        inferred = inferred.set(inferred.get_field_index(column), field)
    return inferred


def _check_write_options(pq: Any, meta: pd.DataFrame, write_index: bool, schema: Any, compression: Any,
                         kwargs: dict) -> None:
    """pyarrow's own refusal of a keyword or a compression, now (by writing the meta's empty
    table to memory) rather than from every worker's task."""
    import io

    import pyarrow as pa

    try:
        table = pa.Table.from_pandas(meta, schema=schema, preserve_index=write_index) if schema is not None \
            else pa.Table.from_pandas(meta, preserve_index=write_index)
    except (pa.ArrowException, TypeError, ValueError, KeyError):
        return  # (the partitions' own types decide: nothing to try the options on)
    try:
        pq.write_table(table, io.BytesIO(), compression=compression, **kwargs)
    except (TypeError, ValueError, pa.ArrowException) as exc:
        kind = TypeError if isinstance(exc, TypeError) else ValueError
        raise kind(f"to_parquet: pyarrow refuses {refused_options(exc, dict(compression=compression, **kwargs))}: "
                   f"{exc}") from exc


def _schema_for(meta: pd.DataFrame, write_index: bool) -> Any:
    """The arrow schema of meta, or None when a column's type cannot be known from it (an
    empty object column): then each partition's is inferred."""
    import pyarrow as pa

    try:
        schema = pa.Schema.from_pandas(meta, preserve_index=write_index)
    except (pa.ArrowException, TypeError, ValueError):
        return None
    if any(pa.types.is_null(f.type) for f in schema):
        return None
    return schema


def _write_piece(part: pd.DataFrame, fs: Any, path: str, write_index: bool, schema: Any, compression: Any,
                 kwargs: dict) -> str:
    """Run on the workers: one partition as one parquet file; returns its path."""
    import pyarrow as pa

    pq = _pq()
    table = None
    if schema is not None:
        try:
            table = pa.Table.from_pandas(part, schema=schema, preserve_index=write_index)
        except (pa.ArrowException, TypeError, ValueError, KeyError):
            # (e.g. a categorical with more categories, or column names that are not strings,
            # which pyarrow looks up by the schema's string names): the partition's own types
            table = None
    if table is None:
        table = pa.Table.from_pandas(part, preserve_index=write_index)
    if isinstance(fs, LocalFileSystem):
        pq.write_table(table, path, compression=compression, **kwargs)
    else:
        with fs.open(path, "wb") as f:
            pq.write_table(table, f, compression=compression, **kwargs)
    return shown(fs, path)


def _write_split(part: pd.DataFrame, fs: Any, base: str, file: str, on: list, write_index: bool, schema: Any,
                 compression: Any, kwargs: dict) -> list[str]:
    """Run on the workers: one partition as a file named ``file`` in each ``key=value``
    folder its rows fall in (``hive.split_by_keys``); returns their paths."""
    paths = []
    for folder, rows in hive.split_by_keys(part, on):
        directory = hive.folder_of(fs, base, folder)
        make_folder(fs, directory, "to_parquet")
        paths.append(_write_piece(rows, fs, join(fs, directory, file), write_index, schema,
                                  compression, kwargs))
    return paths


def _to_parquet_method(self, path: str, write_index: bool = True, compute: bool = True,
                       storage_options: dict | None = None, **kwargs: Any):
    """Write as a directory of parquet files (see ``xsched.dataframe.parquet.to_parquet``).

    >>> import tempfile, pandas as pd, xsched.dataframe as xd
    >>> df = xd.from_pandas(pd.DataFrame({"a": range(6)}), npartitions=3)
    >>> with tempfile.TemporaryDirectory() as d:
    ...     len(df.to_parquet(d)), read_parquet(d).a.sum().compute()
    (3, np.int64(15))
    """
    return to_parquet(self, path, write_index=write_index, compute=compute, storage_options=storage_options,
                      **kwargs)


DataFrame.to_parquet = _to_parquet_method
