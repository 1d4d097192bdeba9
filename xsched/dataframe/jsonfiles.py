"""JSON files as dataframes, and dataframes as JSON files: ``read_json`` and ``to_json``.

Line-delimited JSON (``lines=True``, one record per line, the default with
``orient="records"``) is read like CSV: a partition per file, or per ``blocksize`` bytes of
each, a block owning the lines that start in it (``files.line_block``). Other layouts are
read a file per partition. The columns and dtypes come from the first ``sample`` bytes of
the first file (the whole first file, when not line-delimited) when ``read_json`` is
called; every partition is parsed with those dtypes and given the same columns (a key a
block's records never hold becomes a missing column), and a value that does not fit names
the file, the column and the ``meta=`` to pass.

>>> import os, tempfile, pandas as pd, xsched.dataframe as xd
>>> with tempfile.TemporaryDirectory() as d:
...     paths = xd.from_pandas(pd.DataFrame({"a": range(4), "b": list("wxyz")}), npartitions=2).to_json(d)
...     df = xd.read_json(os.path.join(d, "*.json"))
...     df.npartitions, df.a.sum().compute(), "".join(df.b.compute())
(2, np.int64(6), 'wxyz')
"""

from __future__ import annotations

import io
from typing import Any

import pandas as pd

from ..files import blocksize_bytes, byte_ranges, compression_of, expand_paths, file_token, filesystem_for, \
    head_lines, line_block, open_decompressed, partition_paths, shown, written_compression
from ..graph.collection import run_writes
from ..graph.layers import annotations_in_force, chunk_key, new_token, per_task
from ..graph.spec import Ref, Task
from .core import DataFrame, Series, make_meta
from .io import check_writer_options, from_tasks

__all__ = ["read_json", "to_json"]


def read_json(url_path: Any, orient: str = "records", lines: bool | None = None, blocksize: Any = None,
              compression: str | None = "infer", meta: Any = None, sample: int = 256_000,
              storage_options: dict | None = None, include_path_column: bool | str = False,
              path_converter: Any = None, **pandas_kwargs: Any) -> DataFrame:
    """A dataframe from JSON files: one partition per file, or with ``lines=True`` (the
    default for ``orient="records"``) per ``blocksize`` bytes of each.

    ``url_path``: a path, a glob, a list or an fsspec URL. ``meta`` (a pandas frame or a
    dict of dtypes) gives the columns and dtypes instead of the sample; other keywords go
    to ``pandas.read_json``. Compressed files (``.gz``, ...) are read whole.
    ``include_path_column=True`` (or a column name) adds each row's file as a categorical
    column, each path passed through ``path_converter`` first when given (dask's keywords).

    >>> import os, tempfile, xsched.dataframe as xd
    >>> with tempfile.TemporaryDirectory() as d:
    ...     with open(os.path.join(d, "a.jsonl"), "w") as f:
    ...         _ = f.write("".join(f'{{"n": {i}, "sq": {i * i}}}\\n' for i in range(100)))
    ...     df = xd.read_json(os.path.join(d, "a.jsonl"), blocksize=400)
    ...     df.npartitions, int(df.sq.sum().compute())
    (6, 328350)
    """
    what = "read_json"
    lines = orient == "records" if lines is None else bool(lines)
    if "chunksize" in pandas_kwargs or "nrows" in pandas_kwargs:
        raise ValueError(f"{what}: chunksize= and nrows= are not supported on partitioned reads; use "
                         "blocksize= to bound the size of each partition, or head() for the first rows")
    blocksize = blocksize_bytes(blocksize, what)
    if blocksize is not None:
        if not lines:
            raise ValueError(f"{what}: blocksize= cuts files between lines, which needs line-delimited "
                             f"JSON (lines=True); read orient={orient!r} files whole (blocksize=None)")
    files = expand_paths(url_path, storage_options, what)
    infos = [file_token(fs, p) for fs, p in files]
    kwargs = dict(pandas_kwargs, orient=orient, lines=lines)
    if isinstance(meta, pd.DataFrame):
        meta, origin = make_meta(meta), "meta="
    else:  # (a dict of dtypes names some columns; the sample gives the others)
        sampled = _sample_meta(files, infos, compression, sample, kwargs)
        if sampled is None:  # (no records anywhere: as pandas, no columns but those meta= names)
            sampled = pd.DataFrame(index=pd.RangeIndex(0))
        for col, dtype in (meta or {}).items():
            sampled[col] = sampled[col].astype(dtype) if col in sampled else pd.Series([], dtype=dtype)
        meta, origin = sampled, (f"a sample of {infos[0][0]}" + (" and meta=" if meta else ""))
    if not isinstance(meta, pd.DataFrame):
        raise TypeError(f"{what}: the files hold a {type(meta).__name__}; read_json gives DataFrames")
    path_col, shown_paths = None, [info[0] for info in infos]
    if include_path_column:
        path_col = "path" if include_path_column is True else include_path_column
        if path_col in meta.columns:
            raise ValueError(f"{what}: the files already have a column {path_col!r}; pass "
                             "include_path_column='<another name>'")
        if path_converter is not None:
            shown_paths = [path_converter(p) for p in shown_paths]
        meta = meta.assign(**{path_col: pd.Categorical([], categories=list(dict.fromkeys(shown_paths)))})
    token = new_token(infos, orient, lines, blocksize, compression, sorted(kwargs.items(), key=str), str(meta.dtypes),
                      path_col, shown_paths if path_col else None)
    ann = annotations_in_force()
    tasks = []
    for (fs, path), (label, size, _), shown_path in zip(files, infos, shown_paths):
        comp = compression_of(path, compression)
        for start, end in byte_ranges(size, blocksize, comp):
            args = (fs, path, label, start, end, comp, kwargs, meta if path_col is None else meta.drop(columns=path_col),
                    origin)
            tasks.append(Task(_read_part, args, {}, per_task(ann)) if path_col is None else
                         Task(_read_part_with_path, (path_col, shown_path, meta[path_col].dtype, *args), {},
                              per_task(ann)))
    return from_tasks(f"read-json-{token}", tasks, meta)


def _read_part_with_path(column: str, path: str, dtype: Any, *args: Any) -> pd.DataFrame:
    """``include_path_column``: a piece (``_read_part``) with its file as a categorical column
    of every file's paths."""
    part = _read_part(*args)
    return part.assign(**{column: pd.Categorical([path] * len(part), dtype=dtype)})


def _sample_meta(files: list, infos: list, compression: Any, sample: int, kwargs: dict) -> pd.DataFrame | None:
    """Columns and dtypes from whole lines of the first ``sample`` bytes of the first file
    holding a record (the whole file, when the JSON is not line-delimited); a file of no
    records (``[]``) only when none holds one; None when every file is empty."""
    fallback = None
    for (fs, path), info in zip(files, infos):
        if not info[1]:
            continue
        with fs.open(path, "rb") as raw:
            f = open_decompressed(raw, compression_of(path, compression))
            data = head_lines(f, sample) if kwargs["lines"] else f.read()
        if data.strip():
            head = pd.read_json(io.BytesIO(data), **kwargs)
            if len(head):
                return head.iloc[:0]
            fallback = head.iloc[:0] if fallback is None else fallback
    return fallback


def _misfit(values: pd.Series, dtype: Any) -> tuple[str, str] | None:
    """Why ``values`` cannot become ``dtype`` without losing anything, and the dtype that
    holds them; None when they can."""
    dtype = pd.api.types.pandas_dtype(dtype)
    if dtype.kind in "iub" and values.isna().any():
        return "missing values (null, or a key some records lack)", "'float64'" if dtype.kind in "iu" else "'object'"
    try:
        cast = values.astype(dtype)
    except (ValueError, TypeError, OverflowError) as exc:
        return f"values that are not {dtype} ({exc})", "'object'"
    changed = cast.astype(values.dtype) != values
    if dtype.kind in "iub" and changed.any():
        return f"values that are not {dtype} (e.g. {values[changed].iloc[0]!r})", "'float64'"
    return None


def _as_dates(values: pd.Series, dtype: Any, where: str) -> pd.Series:
    """A date column pandas left as numbers (epoch seconds... nanoseconds, the first unit that
    gives dates in range, as pandas guesses it) or text, in ``dtype``."""
    if values.dtype.kind in "iuf":
        for unit in ("s", "ms", "us", "ns"):
            try:
                return pd.to_datetime(values, unit=unit).astype(dtype)
            except (OverflowError, ValueError, pd.errors.OutOfBoundsDatetime):
                continue
    try:
        return pd.to_datetime(values).astype(dtype)
    except (ValueError, TypeError) as exc:
        raise ValueError(f"read_json: column {values.name!r} of {where} holds values that are not dates "
                         f"({exc}): pass meta={{{values.name!r}: 'object'}}") from exc


def _read_part(fs: Any, path: str, label: str, start: int | None, end: int | None, compression: Any,
               kwargs: dict, meta: pd.DataFrame, origin: str) -> pd.DataFrame:
    """Run on the workers: one partition, with meta's columns and dtypes, cast only where no
    value changes (a null or a fraction never becomes False or a truncated integer)."""
    where = label if start is None else f"{label} (bytes {start}-{end})"
    with fs.open(path, "rb") as f:
        data = open_decompressed(f, compression).read() if start is None else line_block(f, start, end)
    if not data.strip():
        return meta.copy()
    try:
        df = pd.read_json(io.BytesIO(data), **kwargs)
    except ValueError as exc:
        raise ValueError(f"read_json: {where} does not parse as JSON with orient={kwargs['orient']!r}, "
                         f"lines={kwargs['lines']}: {exc}") from exc
    if not len(df):
        return meta.copy()
    extra = [c for c in df.columns if c not in meta.columns]
    if extra:
        raise ValueError(f"read_json: {where} has columns {extra} that {origin} did not show (it has "
                         f"{list(meta.columns)}); pass meta= (a dict of dtypes names just those)")
    df = df.reindex(columns=meta.columns)
    for col, dtype in meta.dtypes.items():
        if df[col].dtype == dtype:
            continue
        if pd.api.types.is_datetime64_any_dtype(dtype):
            df[col] = _as_dates(df[col], dtype, where)
            continue
        misfit = _misfit(df[col], dtype)
        if misfit is not None:
            why, hint = misfit
            raise ValueError(f"read_json: column {col!r} of {where} holds {why}, where {origin} said {dtype}: "
                             f"pass meta={{{col!r}: {hint}}} (a dict names only the columns it changes)")
        df[col] = df[col].astype(dtype)
    return df


def to_json(df: Any, url_path: str, orient: str = "records", lines: bool | None = None, compute: bool = True,
            storage_options: dict | None = None, name_function: Any = None, **kwargs: Any):
    """Write one JSON file per partition, by the workers: ``url_path`` holds a ``*``
    replaced by the partition number (or ``name_function(i)``), or names a directory that
    gets ``part.<i>.json`` files (or files named ``name_function(i)``). ``lines`` defaults
    to True with ``orient="records"`` (one record per line, what ``read_json`` reads in
    blocks); other keywords go to ``pandas.DataFrame.to_json``, which is asked to write the
    empty meta with them first, so one it refuses fails here. Returns the written paths, or
    with ``compute=False`` a list of ``Delayed``.

    >>> import os, tempfile, pandas as pd, xsched.dataframe as xd
    >>> df = xd.from_pandas(pd.DataFrame({"a": [1, 2]}), npartitions=2)
    >>> with tempfile.TemporaryDirectory() as d:
    ...     [os.path.basename(p) for p in df.to_json(os.path.join(d, "out-*.jsonl"))]
    ['out-0.jsonl', 'out-1.jsonl']
    """
    if not isinstance(df, (DataFrame, Series)):
        raise TypeError(f"to_json writes an xsched DataFrame or Series, not {type(df).__name__}")
    lines = orient == "records" if lines is None else bool(lines)
    if lines and orient != "records":
        raise ValueError(f"to_json: lines=True writes orient='records', got orient={orient!r}")
    fs, base = filesystem_for(url_path, storage_options)
    kw = dict(kwargs, orient=orient, lines=lines)
    kw["compression"] = written_compression(base, kw.get("compression", "infer"))  # (from the name: a handle has none)
    check_writer_options(df._meta, "to_json", kw)
    paths = partition_paths(fs, base, df.npartitions, ".json", "to_json", name_function)
    name = f"to-json-{new_token(df._name, shown(fs, base), sorted(kw.items(), key=str))}"
    ann = annotations_in_force()
    layer = {chunk_key(name, (i,)): Task(_write_json, (Ref(key), fs, paths[i], kw), {}, per_task(ann))
             for i, key in enumerate(df._keys())}
    return run_writes(df._graph, name, layer, list(layer), compute)


def _write_json(part: Any, fs: Any, path: str, kwargs: dict) -> str:
    """Run on the workers: one partition as one file; returns its path."""
    with fs.open(path, "wb") as f:
        part.to_json(f, **kwargs)
    return shown(fs, path)


def _to_json_method(self, url_path: str, orient: str = "records", lines: bool | None = None, compute: bool = True,
                    storage_options: dict | None = None, name_function: Any = None, **kwargs: Any):
    """Write as JSON files, one per partition (see ``xsched.dataframe.to_json``).

    >>> import tempfile, pandas as pd, xsched.dataframe as xd
    >>> df = xd.from_pandas(pd.DataFrame({"a": range(6)}), npartitions=3)
    >>> with tempfile.TemporaryDirectory() as d:
    ...     paths = df.to_json(d + "/part-*.json")
    ...     len(paths), xd.read_json(d + "/part-*.json").a.compute().tolist()
    (3, [0, 1, 2, 3, 4, 5])
    """
    return to_json(self, url_path, orient, lines, compute, storage_options, name_function, **kwargs)


DataFrame.to_json = _to_json_method  # type: ignore[attr-defined]
Series.to_json = _to_json_method  # type: ignore[attr-defined]
