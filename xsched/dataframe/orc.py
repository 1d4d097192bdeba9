"""ORC files as dataframes, and dataframes as ORC files, through ``pyarrow.orc``:
``read_orc`` and ``to_orc``.

Why this shape: an ORC file's footer holds its schema and its stripes (blocks of rows read
independently), so the meta comes from the first file's schema without reading any data,
every file's schema is checked against it when ``read_orc`` is called (decimals, whose
precision and scale ``to_orc`` takes from each partition's values, are read at one holding
every file's), and a partition is ``split_stripes`` stripes of a file (or of consecutive
files, with ``aggregate_files``). On the workers only the columns asked for are read, and
each partition is converted to pandas as ``pandas.read_orc`` converts a file, then given
meta's dtypes. ORC keeps no pandas metadata: ``to_orc`` writes the index as a column
(``__index_level_0__`` when it has no name, as ``pandas.DataFrame.to_orc``), and
``read_orc(..., index=)`` makes a column the index again.

>>> import tempfile, pandas as pd, xsched.dataframe as xd
>>> from xsched.dataframe.orc import read_orc, to_orc
>>> df = xd.from_pandas(pd.DataFrame({"x": range(6), "y": list("abcdef")}), npartitions=3)
>>> with tempfile.TemporaryDirectory() as d:
...     _ = to_orc(df, d, write_index=False)
...     back = read_orc(d, columns=["y"])
...     back.npartitions, back.compute().y.tolist()
(3, ['a', 'b', 'c', 'd', 'e', 'f'])
"""

from __future__ import annotations

import io
import numbers
import re
from typing import Any

import numpy as np
import pandas as pd

from ..files import arrow_source, expand_paths, file_token, filesystem_for, partition_paths, shown
from ..graph.collection import run_writes
from ..graph.layers import annotations_in_force, chunk_key, new_token, per_task
from ..graph.spec import Ref, Task
from .core import DataFrame, Series
from .io import from_tasks, in_dtypes
from .parquet import _types_mapper, check_backend
from .planner import keep_rows

__all__ = ["read_orc", "to_orc"]

_SUFFIXES = (".orc",)
#: How pyarrow names an index that had no name when it made it a column.
_UNNAMED = re.compile(r"^__index_level_\d+__$")


def _orc():
    try:
        import pyarrow.orc as orc
    except ImportError as exc:  # pragma: no cover - installed with the dataframe extra
        raise ImportError('ORC files need pyarrow: pip install "xsched[dataframe]" (or pyarrow)') from exc
    return orc


# --------------------------------------------------------------------------- reading


def read_orc(path: Any, columns: Any = None, index: Any = None, split_stripes: int | bool | None = 1,
             aggregate_files: bool | None = None, storage_options: dict | None = None,
             dtype_backend: str | None = None):
    """A dataframe from ORC files: ``split_stripes`` stripes of a file per partition.

    ``path`` is a file, a directory (its ``.orc`` files), a glob, a list, or an fsspec URL
    (``storage_options`` go to its filesystem). ``columns`` reads only those columns (a
    single name gives a Series); ``index="col"`` makes that column the index of each
    partition (divisions unknown). ``split_stripes=False`` (or None) reads a file per
    partition; with ``aggregate_files=True`` a partition may take its stripes from
    consecutive files. Columns convert as ``pandas.read_orc`` converts them (an integer
    column holding missing values needs ``dtype_backend="numpy_nullable"``, or
    ``"pyarrow"``, as pandas' integers cannot hold them).

    >>> import os, tempfile, pandas as pd
    >>> with tempfile.TemporaryDirectory() as d:
    ...     for i in range(3):
    ...         pd.DataFrame({"t": [2 * i, 2 * i + 1], "v": [1.0, 2.0]}).to_orc(f"{d}/part.{i}.orc")
    ...     df = read_orc(d, index="t")
    ...     df.npartitions, float(df.v.sum().compute()), df.compute().index.tolist()
    (3, 9.0, [0, 1, 2, 3, 4, 5])
    """
    what = "read_orc"
    _orc()
    if isinstance(split_stripes, bool):
        split_stripes = 1 if split_stripes else None
    if split_stripes is not None and (not isinstance(split_stripes, numbers.Integral) or split_stripes < 1):
        raise ValueError(f"{what}: split_stripes must be a positive number of stripes per partition, or False "
                         f"for a file per partition; got {split_stripes!r}")
    split_stripes = None if split_stripes is None else int(split_stripes)
    check_backend(dtype_backend, what)
    files = expand_paths(path, storage_options, what, suffixes=_SUFFIXES)
    footers = [_footer(fs, p) for fs, p in files]
    schema = footers[0][0]
    for (fs, p), (other, _) in zip(files[1:], footers[1:]):
        differs = _difference(schema, other)
        if differs:
            raise ValueError(f"{what}: {shown(fs, p)} {differs} (the first file, {shown(*files[0])}, has "
                             f"{_described(schema)}); read files of one schema together, or convert them first")
    schema, decimals = _widened(schema, [s for s, _ in footers])
    names = list(schema.names)
    single = isinstance(columns, str)
    cols = [columns] if single else (list(columns) if columns is not None else None)
    if index is not None and not isinstance(index, (str, list, tuple)):
        raise TypeError(f"{what}: index= names a column (or a list of columns), not {type(index).__name__}")
    index_cols = [] if index is None else ([index] if isinstance(index, str) else list(index))
    missing = [c for c in (cols or []) + index_cols if c not in names]
    if missing:
        raise ValueError(f"{what}: no column {missing[0]!r}: {shown(*files[0])} has the columns {names}")
    if single and columns in index_cols:
        raise ValueError(f"{what}: columns={columns!r} is the index= column; pick another column, or read "
                         "it without index=")
    read = names if cols is None else list(dict.fromkeys(cols + index_cols))
    empty = _frame(schema.empty_table().select(read), dtype_backend)
    dtypes = empty.dtypes.to_dict()
    meta = _shaped(empty, index_cols, cols, single)

    parts = _partitions(files, [n for _, n in footers], split_stripes, aggregate_files)
    token = new_token([file_token(fs, p) for fs, p in files], columns, index, split_stripes, aggregate_files,
                      dtype_backend)
    ann = annotations_in_force()
    tasks = [Task(_read_part, (part, read, dtypes, index_cols, cols, single, dtype_backend, decimals), {},
                  per_task(ann)) for part in parts]
    project = None
    if not single:
        def project(used: list, pushed: list) -> list:
            """The same partitions read with the columns ``used`` only, keeping the rows that
            pass ``pushed`` (the planner calls this, ``planner.py``)."""
            narrow = list(dict.fromkeys(list(used) + index_cols))
            kinds = {c: dtypes[c] for c in narrow}
            kw = {"pushed": tuple(map(tuple, pushed))} if pushed else {}
            return [Task(_read_part, (part, narrow, kinds, index_cols, list(used), False, dtype_backend, decimals),
                         kw, per_task(ann)) for part in parts]
    return from_tasks(f"read-orc-{token}", tasks, meta, project=project)


def _footer(fs: Any, path: str) -> tuple[Any, int]:
    """A file's arrow schema and number of stripes, from its footer."""
    import pyarrow as pa

    with arrow_source(fs, path) as src:
        try:
            f = _orc().ORCFile(src)
            return f.schema, f.nstripes
        except (pa.ArrowException, OSError) as exc:
            raise ValueError(f"read_orc: {shown(fs, path)} is not an ORC file ({exc}); pass the ORC files "
                             "only (a glob such as 'dir/*.orc')") from exc


def _described(schema: Any) -> str:
    return "the columns " + ", ".join(f"{f.name} ({f.type})" for f in schema)


def _difference(first: Any, other: Any) -> str:
    """How ``other``'s columns differ from ``first``'s ('' when they hold the same names and
    types: the order does not matter, columns are read by name; decimals of any precision and
    scale are alike, ``_widened``)."""
    import pyarrow as pa

    a = {f.name: f.type for f in first}
    b = {f.name: f.type for f in other}
    out = []
    lacks = [n for n in a if n not in b]
    if lacks:
        out.append(f"lacks the columns {lacks}")
    more = [n for n in b if n not in a]
    if more:
        out.append(f"has the columns {more} besides")
    out += [f"has {n!r} as {b[n]}, not {a[n]}" for n in a if n in b and not b[n].equals(a[n])
            and not (pa.types.is_decimal(a[n]) and pa.types.is_decimal(b[n]))]
    return "; ".join(out)


def _widened(schema: Any, schemas: list) -> tuple[Any, dict]:
    """``schema`` with its decimal columns at a precision and scale holding every file's (each
    file's decimals have those its own values needed: ``to_orc`` writes a partition per file,
    where pandas writes the whole column in one), and ``{column: that type}`` for the decimal
    columns files differ in, which the workers cast each file's to."""
    import pyarrow as pa

    varied = {f.name for s in schemas for f in s if pa.types.is_decimal(f.type) and not f.type.equals(
        schema.field(f.name).type)}
    if not varied:
        return schema, {}
    wide = pa.unify_schemas([schema] + [pa.schema([s.field(n) for n in schema.names]) for s in schemas],
                            promote_options="permissive")
    return wide, {n: wide.field(n).type for n in varied}


def _partitions(files: list, stripes: list, split_stripes: int | None, aggregate_files: bool | None) -> list:
    """What each partition reads: a list of ``(fs, path, stripes or None for all)``. Files
    of no stripes give no partition; when no file has any, the first file gives the one
    (empty) partition."""
    if split_stripes is None:
        return [[(fs, p, None)] for fs, p in files]
    parts: list = []
    room = 0
    for (fs, p), n in zip(files, stripes):
        if not aggregate_files:
            room = 0
        for i in range(n):
            if not room:
                parts.append([])
                room = split_stripes
            if parts[-1] and parts[-1][-1][1] == p and parts[-1][-1][0] == fs:
                parts[-1][-1][2].append(i)
            else:
                parts[-1].append((fs, p, [i]))
            room -= 1
    return parts or [[(files[0][0], files[0][1], None)]]


def _frame(table: Any, backend: str | None) -> pd.DataFrame:
    """An arrow table as pandas, as ``pandas.read_orc`` converts it with ``dtype_backend``
    (the same choice of dtypes as parquet's, unsigned integers included)."""
    mapper = _types_mapper(backend)
    return table.to_pandas(types_mapper=mapper) if mapper is not None else table.to_pandas()


def _shaped(df: pd.DataFrame, index_cols: list, cols: list | None, single: bool) -> Any:
    """A read frame with ``index=`` as its index (a column pyarrow named for an unnamed index
    gives an unnamed one again), in the order of ``columns=``."""
    if index_cols:
        df = df.set_index(index_cols[0] if len(index_cols) == 1 else index_cols)
        df.index.names = [None if isinstance(n, str) and _UNNAMED.match(n) else n for n in df.index.names]
    if cols is not None:
        df = df[[c for c in cols if c not in index_cols]]
    return df[cols[0]] if single else df


def _read_part(part: list, read: list, dtypes: dict, index_cols: list, cols: list | None, single: bool,
               backend: str | None, decimals: dict, pushed: tuple = ()) -> Any:
    """Run on the workers: the stripes (or whole files) of one partition as one pandas frame
    in meta's dtypes (``decimals`` cast to the type every file's fits, ``_widened``); with
    ``pushed`` (comparisons the planner took from ``df[df.col > value]``), only the rows they
    keep, with their labels."""
    import pyarrow as pa

    orc = _orc()
    frames = []
    for fs, path, stripes in part:
        label = shown(fs, path) + ("" if stripes is None else f" (stripe {stripes[0]})" if len(stripes) == 1
                                   else f" (stripes {stripes[0]}-{stripes[-1]})")
        try:
            with arrow_source(fs, path) as src:
                f = orc.ORCFile(src)
                wanted = read or list(f.schema.names[:1])  # (no column read is no row read)
                if stripes is None:
                    table = f.read(columns=wanted)
                else:
                    table = pa.Table.from_batches([f.read_stripe(i, columns=wanted) for i in stripes])
        except (pa.ArrowException, OSError) as exc:
            raise ValueError(f"read_orc: reading {label}: {exc}") from exc
        missing = [c for c in read if c not in table.column_names]
        if missing:
            raise ValueError(f"read_orc: {label} has no column {missing[0]!r} (it has {table.column_names}); "
                             "it changed since read_orc was called: call it again")
        table = table.select(read)
        for col in [c for c in read if c in decimals]:
            if pa.types.is_decimal(table.schema.field(col).type):
                table = table.set_column(read.index(col), col, table[col].cast(decimals[col]))
        frames.append(_conformed(_frame(table, backend), dtypes, label))
    df = frames[0] if len(frames) == 1 else pd.concat(frames, ignore_index=True)
    df = _shaped(df, index_cols, cols, single)
    return keep_rows(df, pushed) if pushed else df


def _conformed(df: pd.DataFrame, dtypes: dict, label: str) -> pd.DataFrame:
    """A piece converted from arrow, in the dtypes the schema gives with no rows (pyarrow
    turns integers holding missing values into floats, booleans into objects)."""
    for col, want in dtypes.items():
        if df[col].dtype != want and isinstance(want, np.dtype) and want.kind in "iub" and df[col].isna().any():
            raise ValueError(f"read_orc: column {col!r} of {label} holds missing values, which pandas' {want} "
                             "cannot; pass dtype_backend='numpy_nullable' (nullable Int64, boolean, ...) or "
                             "'pyarrow'")
    return in_dtypes(df, dtypes.items(), lambda col, have, want, exc: (
        f"read_orc: column {col!r} of {label} reads as {have}, not the schema's {want}, and does not convert "
        f"({exc}); read this file apart"))


# --------------------------------------------------------------------------- writing


def to_orc(df: Any, path: str, write_index: bool = True, storage_options: dict | None = None,
           compute: bool = True, compute_kwargs: dict | None = None, name_function: Any = None):
    """Write a dataframe as ORC files, one per partition, written by the workers: ``path``
    names a directory that gets ``part.<i>.orc`` files (or files named ``name_function(i)``),
    or holds one ``*``, replaced by the partition number (or ``name_function(i)``). With
    ``write_index`` the index is written as a column, as
    ``pandas.DataFrame.to_orc(index=True)`` does; categoricals are written as their
    values. Columns ORC cannot hold (unsigned integers, durations) are refused here. An
    empty partition whose object columns give no type (meta holds none) writes no file.
    Returns the written paths (``compute_kwargs`` go to the compute), or with
    ``compute=False`` a list of ``Delayed`` that write them (None for no file).

    >>> import os, tempfile, pandas as pd, xsched.dataframe as xd
    >>> df = xd.from_pandas(pd.DataFrame({"a": range(4)}, index=pd.Index(list("wxyz"), name="k")), npartitions=2)
    >>> with tempfile.TemporaryDirectory() as d:
    ...     paths = to_orc(df, d)
    ...     [os.path.basename(p) for p in paths], read_orc(d, index="k").compute().index.tolist()
    (['part.0.orc', 'part.1.orc'], ['w', 'x', 'y', 'z'])
    """
    if isinstance(df, Series):
        df = df.to_frame()
    if not isinstance(df, DataFrame):
        raise TypeError(f"to_orc writes an xsched DataFrame, not {type(df).__name__}")
    _orc()
    schema = _schema_for(df._meta, write_index)
    fs, base = filesystem_for(path, storage_options)
    paths = partition_paths(fs, base, df.npartitions, ".orc", "to_orc", name_function)
    name = f"to-orc-{new_token(df._name, shown(fs, base), write_index)}"
    ann = annotations_in_force()
    layer = {chunk_key(name, (i,)): Task(_write_part, (Ref(key), fs, paths[i], write_index, schema), {},
                                         per_task(ann))
             for i, key in enumerate(df._keys())}
    written = run_writes(df._graph, name, layer, list(layer), compute and not compute_kwargs)
    if compute and compute_kwargs:
        from ..graph.delayed import compute as compute_all

        written = list(compute_all(*written, **compute_kwargs))
    return [p for p in written if p is not None] if compute else written


def _decoded(frame: pd.DataFrame) -> pd.DataFrame:
    """Categorical columns (and index) as their values: ORC has no dictionary type."""
    cats = {c: dt.categories.dtype for c, dt in frame.dtypes.items() if isinstance(dt, pd.CategoricalDtype)}
    if cats:
        frame = frame.astype(cats)
    if isinstance(frame.index.dtype, pd.CategoricalDtype):
        frame = frame.set_axis(frame.index.astype(frame.index.dtype.categories.dtype))
    return frame


def _schema_for(meta: pd.DataFrame, write_index: bool) -> Any:
    """The arrow schema every file is written with (so empty partitions agree), or None when
    a column's type is not known from meta (an empty object column): then each partition's
    own. A column ORC cannot hold fails here, naming it and the conversion to make."""
    import pyarrow as pa

    orc = _orc()
    try:
        schema = pa.Schema.from_pandas(_decoded(meta), preserve_index=write_index)
    except (pa.ArrowException, TypeError, ValueError):
        return None
    known = [f for f in schema if not pa.types.is_null(f.type)]
    try:
        orc.write_table(pa.schema(known).empty_table(), io.BytesIO())
    except pa.ArrowNotImplementedError:
        for field in known:
            try:
                orc.write_table(pa.schema([field]).empty_table(), io.BytesIO())
            except pa.ArrowNotImplementedError:
                what = "the index" if _UNNAMED.match(field.name) or field.name not in meta.columns \
                    else f"the column {field.name!r}"
                to = "'int64'" if pa.types.is_unsigned_integer(field.type) or pa.types.is_duration(field.type) \
                    else "'str'"
                raise TypeError(f"to_orc: ORC cannot hold {what} of type {field.type}; convert it first, e.g. "
                                f".astype({to})") from None
        raise
    return schema if len(known) == len(schema) else None


def _write_part(part: pd.DataFrame, fs: Any, path: str, write_index: bool, schema: Any) -> str | None:
    """Run on the workers: one partition as one ORC file; returns its path. A partition of
    no rows whose columns have no type to write (an object column, when meta says no more)
    writes no file and returns None: no row is lost, and no file disagrees with the others."""
    import pyarrow as pa

    part = _decoded(part)
    if schema is None and not len(part):
        own = pa.Schema.from_pandas(part, preserve_index=write_index)
        if any(pa.types.is_null(f.type) for f in own):
            return None
    table = None
    if schema is not None:
        try:
            table = pa.Table.from_pandas(part, schema=schema, preserve_index=write_index)
        except (pa.ArrowException, TypeError, ValueError, KeyError):
            table = None  # (e.g. column names that are not strings): the partition's own types
    try:
        if table is None:
            table = pa.Table.from_pandas(part, preserve_index=write_index)
        with fs.open(path, "wb") as f:
            _orc().write_table(table, f)
    except (pa.ArrowException, TypeError, ValueError) as exc:
        raise ValueError(f"to_orc: {shown(fs, path)}: the partition does not convert to ORC ({exc}); give its "
                         "columns types ORC holds (an object column of only missing values has none: astype "
                         "it)") from exc
    return shown(fs, path)


def _to_orc_method(self, path: str, write_index: bool = True, storage_options: dict | None = None,
                   compute: bool = True, compute_kwargs: dict | None = None, name_function: Any = None):
    """Write as a directory of ORC files (see ``xsched.dataframe.orc.to_orc``).

    >>> import tempfile, pandas as pd, xsched.dataframe as xd
    >>> df = xd.from_pandas(pd.DataFrame({"a": range(6)}), npartitions=3)
    >>> with tempfile.TemporaryDirectory() as d:
    ...     len(df.to_orc(d, write_index=False)), read_orc(d).a.sum().compute()
    (3, np.int64(15))
    """
    return to_orc(self, path, write_index=write_index, storage_options=storage_options, compute=compute,
                  compute_kwargs=compute_kwargs, name_function=name_function)


DataFrame.to_orc = _to_orc_method  # type: ignore[attr-defined]
