"""CSV files as dataframes, and dataframes as CSV files: ``read_csv`` and ``to_csv``.

Why this shape: a dataframe's meta must be known before anything runs, and every
partition must agree with it. So ``read_csv`` parses a small sample of the first file
when it is called (columns, dtypes), then every partition is parsed on a worker *with
those dtypes*: a file whose column does not fit (``"abc"`` where the sample had only
integers) fails with the file, the column and the ``dtype=`` to pass, instead of giving a
partition whose dtype differs from its neighbours'.

With ``blocksize`` a file is cut into byte ranges read independently: a range owns the
lines that *start* in it -- it skips the line under way at its start offset and finishes
the line under way at its end offset -- so each line is read exactly once, whatever the
line endings (``\\n`` or ``\\r\\n``) and whether the file ends with a newline. The header
line, read once here, is put in front of every range but the first of each file, so every
range parses with the same column names. Quoted fields holding newlines cannot be split
this way: read such files whole (``blocksize=None``, the default).

>>> import os, tempfile, pandas as pd, xsched.dataframe as xd
>>> from xsched.dataframe.csv import read_csv
>>> with tempfile.TemporaryDirectory() as d:
...     for i in range(3):
...         pd.DataFrame({"a": [i, i + 1], "b": ["x", "y"]}).to_csv(f"{d}/{i}.csv", index=False)
...     df = read_csv(f"{d}/*.csv")
...     df.npartitions, df.a.sum().compute()
(3, np.int64(9))
"""

from __future__ import annotations

import codecs
import contextlib
import io
import warnings
from typing import Any, Iterator

import numpy as np
import pandas as pd

from ..graph.layers import annotations_in_force, chunk_key, new_token, per_task
from ..graph.partials import chain_layer
from ..graph.spec import Ref, Task
from .categorical import inferred_columns, mark_unknown
from .core import DataFrame, Series
from ..files import blocksize_bytes, byte_ranges, compression_of, expand_paths, file_token, filesystem_for, \
    head_lines, line_range, make_folder, open_decompressed, parent, partition_paths, shown, written_compression
from ..graph.collection import run_writes
from .csv_arrow import read_arrow
from .io import _unchanged, check_writer_options, from_tasks
from .planner import keep_rows

__all__ = ["read_csv", "read_fwf", "read_table", "to_csv"]


#: The pandas parser behind each reader.
_PARSERS = {"read_csv": pd.read_csv, "read_fwf": pd.read_fwf}
_UNSUPPORTED = ("chunksize", "iterator", "nrows", "skipfooter")


# --------------------------------------------------------------------------- reading


def read_csv(urlpath: Any, blocksize: int | str | None = None, dtype: Any = None, usecols: Any = None,
             parse_dates: Any = None, include_path_column: bool | str = False,
             storage_options: dict | None = None, sample: int = 256_000, **pandas_kwargs: Any):
    """A dataframe from CSV files: one partition per file, or per ``blocksize`` bytes of each.

    ``urlpath`` is a path, a glob (``data/*.csv``), a list of those, or an fsspec URL
    (``s3://bucket/*.csv``; ``storage_options`` go to its filesystem). The columns and
    dtypes come from the first ``sample`` bytes of the first file, parsed by pandas with
    ``dtype``, ``usecols``, ``parse_dates`` and ``pandas_kwargs`` (``sep``, ``names``,
    ``index_col``, ...); every partition is then parsed with those dtypes, and a value that
    does not fit raises a ``ValueError`` naming the file, the column and the ``dtype=`` to
    pass; ``assume_missing=True`` (dask's) reads the columns the sample gives integers as
    float64, for missing values further on. ``include_path_column=True`` (or a column name)
    adds each row's file as a categorical column. Compressed files (``.gz``, ``.bz2``, ``.xz``) are read whole.
    Without ``blocksize`` each file is one partition (a quoted field may hold a newline, which
    a cut at a line boundary would split); a file over 256 MiB read so is named in a warning.

    >>> import os, tempfile, pandas as pd
    >>> with tempfile.TemporaryDirectory() as d:
    ...     pd.DataFrame({"x": range(1000)}).to_csv(os.path.join(d, "x.csv"), index=False)
    ...     df = read_csv(os.path.join(d, "x.csv"), blocksize=1000)
    ...     df.npartitions, len(df.compute()), df.x.sum().compute()
    (4, 1000, np.int64(499500))
    """
    return _read_text_table("read_csv", urlpath, blocksize, dtype, usecols, parse_dates, include_path_column,
                            storage_options, sample, pandas_kwargs)


def read_fwf(urlpath: Any, blocksize: int | str | None = None, dtype: Any = None, usecols: Any = None,
             parse_dates: Any = None, include_path_column: bool | str = False,
             storage_options: dict | None = None, sample: int = 256_000, **pandas_kwargs: Any):
    """A dataframe from fixed-width text files (pandas' ``read_fwf``): one partition per file,
    or per ``blocksize`` bytes of each, as ``read_csv``.

    Give ``colspecs`` (``[(start, end), ...]`` per column) or ``widths``; otherwise the
    columns are found once, from the first ``infer_nrows`` lines (100) of the sample, where
    some line has a character other than the ``delimiter`` fill (spaces and tabs), and every
    partition is cut the same way.

    >>> import os, tempfile, xsched.dataframe as xd
    >>> with tempfile.TemporaryDirectory() as d:
    ...     with open(os.path.join(d, "t.txt"), "w") as f:
    ...         _ = f.write("id  name   score\\n" + "".join(f"{i:<4}n{i:<6}{i * 1.5:>5}\\n" for i in range(40)))
    ...     df = xd.read_fwf(os.path.join(d, "t.txt"), blocksize=200)
    ...     df.npartitions, list(df.columns), float(df.score.sum().compute())
    (4, ['id', 'name', 'score'], 1170.0)
    """
    return _read_text_table("read_fwf", urlpath, blocksize, dtype, usecols, parse_dates, include_path_column,
                            storage_options, sample, pandas_kwargs)


def _read_text_table(what: str, urlpath: Any, blocksize: Any, dtype: Any, usecols: Any, parse_dates: Any,
                     include_path_column: bool | str, storage_options: dict | None, sample: int,
                     pandas_kwargs: dict, quiet: bool = False):
    """``read_csv`` and ``read_fwf``: the same sample, blocks, dtypes and errors; ``what``
    names the pandas parser (``_PARSERS``)."""
    pandas_kwargs = dict(pandas_kwargs)
    for name in _UNSUPPORTED:
        if name in pandas_kwargs:
            raise ValueError(f"{what}: {name}= is not supported on partitioned reads; use blocksize= to "
                             "bound the size of each partition, or head() for the first rows")
    assume_missing = bool(pandas_kwargs.pop("assume_missing", False))  # (dask's: integers read as floats)
    files = expand_paths(urlpath, storage_options, what)
    compression = pandas_kwargs.pop("compression", "infer")
    kwargs = dict(pandas_kwargs)
    if usecols is not None:
        kwargs["usecols"] = usecols
    if parse_dates is not None:
        kwargs["parse_dates"] = parse_dates
    header = kwargs.get("header", "infer")
    has_header = header == 0 or (isinstance(header, str) and header == "infer" and kwargs.get("names") is None)
    blocksize = blocksize_bytes(blocksize, what)
    if blocksize is not None:
        if not (has_header or header is None or (isinstance(header, str) and header == "infer")):
            raise ValueError(f"{what}: header={header!r} cannot be used with blocksize= (only the first "
                             "line can be the header of every block); pass blocksize=None")
        if kwargs.get("skiprows"):
            raise ValueError(f"{what}: skiprows= cannot be used with blocksize= (the rows to skip are only "
                             "in the first block); pass blocksize=None")
        encoding = kwargs.get("encoding") or "utf-8"
        try:  # (after a first character, which may bring a byte-order mark: utf-8-sig's is fine)
            encoder = codecs.getincrementalencoder(encoding)()
            encoder.encode("a")
            one_byte = encoder.encode("\n") == b"\n" and encoder.encode("a") == b"a"
        except (LookupError, UnicodeError):
            one_byte = False
        if not one_byte:  # (blocks are cut at newline bytes: UTF-16's characters are two bytes each)
            raise ValueError(f"{what}: encoding={encoding!r} writes a newline as more than the byte \\n, so the "
                             "file cannot be cut into blocks at newlines; pass blocksize=None to read each file "
                             "whole")
    infos = [file_token(fs, p) for fs, p in files]
    if blocksize is None and not quiet:
        _warn_of_large_files(what, files, infos, compression)
    sample_bytes, first = _sample(files, infos, compression, sample, has_header)
    if what == "read_fwf":
        kwargs = _fixed_columns(sample_bytes, kwargs)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", pd.errors.DtypeWarning)
            head = _PARSERS[what](io.BytesIO(sample_bytes), dtype=dtype, **kwargs)
    except pd.errors.EmptyDataError as exc:
        raise ValueError(f"{what}: {first} has no columns to read (it is empty); pass names= to say "
                         "what the columns are") from exc
    if assume_missing and (dtype is None or isinstance(dtype, dict)):  # (the sample's integer columns may hold
        # missing values further on: float64, as dask's assume_missing=True reads them)
        floats = {c: "float64" for c, d in head.dtypes.items()
                  if isinstance(d, np.dtype) and d.kind in "iu" and not (isinstance(dtype, dict) and c in dtype)}
        if floats:
            dtype = {**(dtype or {}), **floats}
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", pd.errors.DtypeWarning)
                head = _PARSERS[what](io.BytesIO(sample_bytes), dtype=dtype, **kwargs)
    meta = head.iloc[:0]
    dtypes = _worker_dtypes(meta, dtype, kwargs.get("engine"), kwargs.get("converters"), _booleans(head))
    path_col = None
    if include_path_column:
        path_col = "path" if include_path_column is True else include_path_column
        if path_col in meta.columns:
            raise ValueError(f"{what}: the files already have a column {path_col!r}; pass "
                             "include_path_column='<another name>'")
        meta = meta.assign(**{path_col: pd.Categorical([], categories=[i[0] for i in infos])})
    header_line, header_at = _header_line(sample_bytes, kwargs, what) if has_header else (b"", 0)
    origin = f"the first {sample} bytes of {first}"

    token = new_token(what, infos, blocksize, dtype, usecols, parse_dates, include_path_column, sample, compression,
                      sorted(kwargs.items(), key=str))
    name = f"{what.replace('_', '-')}-{token}"
    ann = annotations_in_force()
    # the columns dtype= names: text asked for by name is parsed as named (``_inferred``)
    named = tuple(c for c in meta.columns if c in dtype) if isinstance(dtype, dict) else \
        tuple(meta.columns) if dtype is not None else ()
    tasks = []
    for (fs, path), (label, size, _) in zip(files, infos):
        comp = compression_of(path, compression)
        for start, end in byte_ranges(size, blocksize, comp):
            tasks.append(Task(_read_block, (fs, path, label, start, end,
                                            header_line if start and start >= header_at else b"", comp,
                                            kwargs, dtypes, meta, path_col, origin), {"what": what, "named": named},
                              per_task(ann)))
    project = None
    if usecols is None and not include_path_column and "index_col" not in kwargs and "names" not in kwargs:
        def project(used: list, pushed: list) -> list | None:
            """The same blocks read with fewer columns, and only the rows passing ``pushed``
            (the planner calls this, ``planner.py``); None when it cannot. Dates are parsed in the
            columns read only (pandas refuses others), and a read of no column reads the first, so
            the blocks keep their rows."""
            dates = parse_dates
            if isinstance(parse_dates, (list, tuple)):
                if not all(isinstance(c, str) for c in parse_dates):
                    return None  # (positions: of the file's columns or of those read?)
                dates = [c for c in parse_dates if c in used] or None
            narrower = _read_text_table(what, urlpath, blocksize, dtype, list(used) or list(meta.columns[:1]),
                                        dates, False, storage_options, sample,
                                        {**pandas_kwargs, "compression": compression}, quiet=True)
            tasks = list(narrower._graph.layers[narrower._name].values())
            if pushed:
                tasks = [Task(t.func, t.args, {**t.kwargs, "filters": tuple(map(tuple, pushed))}, t.annotations)
                         for t in tasks]
            return tasks
    # (the tasks keep the sample's categories; the collection says each block infers its own)
    inferring = inferred_columns(dtype, meta)
    inferring = [c for c in meta.columns if c != path_col] if inferring is None else inferring
    return from_tasks(name, tasks, mark_unknown(meta, inferring), project=project)


#: a file read whole past this size is worth a word: it becomes one partition in memory
LARGE_FILE = 256 * 2**20


def _warn_of_large_files(what: str, files: list, infos: list, compression: Any) -> None:
    """A warning, when built, naming the largest uncompressed file over ``LARGE_FILE`` read
    as one partition, and the ``blocksize=`` that would cut it."""
    large = [(size, label) for (fs, path), (label, size, _) in zip(files, infos)
             if size and size > LARGE_FILE and compression_of(path, compression) is None]
    if large:
        size, label = max(large)
        warnings.warn(f"{what}: {label} is {size / 2**20:,.0f} MiB and is read whole, as one partition "
                      f"({len(large)} such file{'s' if len(large) > 1 else ''}); pass blocksize='64MiB' to cut "
                      "files into partitions of that many bytes (unless quoted fields hold newlines)",
                      UserWarning, stacklevel=4)


def read_table(urlpath: Any, blocksize: int | str | None = None, **kwargs: Any):
    """``read_csv`` of tab-separated files (pandas' ``read_table``): ``sep="\\t"`` unless given.

    >>> import os, tempfile, xsched.dataframe as xd
    >>> with tempfile.TemporaryDirectory() as d:
    ...     with open(os.path.join(d, "t.tsv"), "w") as f:
    ...         _ = f.write("a\\tb\\n1\\tx y\\n2\\tz\\n")
    ...     xd.read_table(os.path.join(d, "t.tsv")).b.compute().tolist()
    ['x y', 'z']
    """
    if "sep" not in kwargs and "delimiter" not in kwargs:
        kwargs["sep"] = "\t"
    return read_csv(urlpath, blocksize=blocksize, **kwargs)


def _sample(files: list, infos: list, compression: Any, sample: int, has_header: bool) -> tuple[bytes, str]:
    """The first ``sample`` bytes (whole lines) of the first file holding a line after its
    header (a header alone gives every column the dtype object: a file's numbers would be
    read as text), else of the first file that is not empty."""
    fallback = None
    for (fs, path), info in zip(files, infos):
        if info[1] == 0:
            continue
        with fs.open(path, "rb") as raw:  # (whole lines, a row at least after the header)
            data = head_lines(open_decompressed(raw, compression_of(path, compression)), sample, 1 + has_header)
        rows = data[data.find(b"\n") + 1:] if has_header and b"\n" in data else b"" if has_header else data
        if rows.strip():
            return data, info[0]
        if data and fallback is None:
            fallback = data, info[0]
    return fallback or (b"", infos[0][0])


def _header_line(sample: bytes, kwargs: dict, what: str) -> tuple[bytes, int]:
    """The header line the blocks after it are given, and where it starts: the sample's
    first line that pandas does not skip (blank lines, with ``skip_blank_lines``, and lines
    that are all ``comment`` may come before it). A block starting before it holds it."""
    comment = kwargs.get("comment")
    mark = comment.encode(kwargs.get("encoding") or "utf-8") if isinstance(comment, str) else None
    at = 0
    for line in io.BytesIO(sample):
        text = line.strip() if what == "read_fwf" else line.strip(b"\r\n")
        if not (kwargs.get("skip_blank_lines", True) and not text) and not (
                mark is not None and line.lstrip().startswith(mark)):
            return line, at
        at += len(line)
    return b"", 0


def _fixed_columns(sample: bytes, kwargs: dict) -> dict:
    """``read_fwf``'s keywords with the columns' ``colspecs`` made explicit, so that every
    block is cut alike: from ``widths``, or found in the sample's first ``infer_nrows`` lines
    (after ``skiprows``, blank ones included) as the runs of positions where some line has a
    character other than the ``delimiter`` fill, which is how pandas finds them in one file.

    >>> _fixed_columns(b"a   bb\\n1    2\\n", {})["colspecs"]
    [(0, 1), (4, 6)]
    """
    kwargs = dict(kwargs)
    widths = kwargs.pop("widths", None)
    if widths is not None:
        if kwargs.get("colspecs", "infer") != "infer":
            raise ValueError("read_fwf: give colspecs= or widths=, not both")
        edges = np.cumsum([0] + list(widths))
        kwargs["colspecs"] = [(int(a), int(b)) for a, b in zip(edges, edges[1:])]
        return kwargs
    colspecs = kwargs.get("colspecs", "infer")
    if not (isinstance(colspecs, str) and colspecs == "infer"):
        return kwargs
    text = sample.decode(kwargs.get("encoding") or "utf-8", errors="replace")
    skip = kwargs.get("skiprows") or ()
    skip = set(range(skip)) if pd.api.types.is_integer(skip) else skip if callable(skip) else set(skip)
    # (as pandas': lines end at \n, \r or \r\n, and blank ones count among the infer_nrows)
    lines = [line for i, line in enumerate(io.StringIO(text, newline=""))
             if not (skip(i) if callable(skip) else i in skip)]
    lines = lines[:kwargs.pop("infer_nrows", 100)]
    if kwargs.get("comment"):
        lines = [line.partition(kwargs["comment"])[0] for line in lines]
    fill = set("\r\n" + (kwargs.get("delimiter") or "\t "))
    width = max((len(line) for line in lines), default=0)
    used = np.zeros(width + 2, dtype=bool)
    for line in lines:
        used[1:len(line) + 1] |= np.array([c not in fill for c in line], dtype=bool)
    starts = np.flatnonzero(used[1:] & ~used[:-1])
    ends = np.flatnonzero(~used[1:] & used[:-1])
    if not len(starts):
        raise ValueError("read_fwf: the sample has no columns to find; pass colspecs= or widths=")
    kwargs["colspecs"] = [(int(a), int(b)) for a, b in zip(starts, ends)]
    return kwargs


def _booleans(head: pd.DataFrame) -> set:
    """The sample's columns of booleans with gaps: pandas reads ``True``/``False`` words and
    empty fields as an object column of True, False and NaN, where ``dtype=object`` would keep
    the words as text.

    >>> sorted(_booleans(pd.DataFrame({"b": [True, None], "s": ["True", "x"], "f": [1.0, None]}, dtype=object)))
    ['b']
    """
    out = set()
    for col in head.columns[(head.dtypes == object).to_numpy()]:
        values = head[col].dropna()
        if len(values) and all(isinstance(v, (bool, np.bool_)) for v in values):
            out.add(col)
    return out


def _worker_dtypes(meta: pd.DataFrame, dtype: Any, engine: Any = None, converters: Any = None,
                   booleans: set = frozenset()) -> dict:
    """The ``dtype=`` every partition is parsed with: meta's dtypes, except dates (parsed by
    ``parse_dates``), columns a converter makes (pandas uses the converter and warns about the
    dtype), categoricals (whose categories differ between files), booleans with gaps not asked
    for (``_booleans``: pandas makes each block's words booleans, and meta's object takes
    them) and, for the ``pyarrow`` engine, object columns not asked for (it reads dates and
    times into them, which ``dtype=object`` would leave as text)."""
    out = {}
    asked = dtype if isinstance(dtype, dict) else {}
    converted = set(converters or ())
    for col, dt in meta.dtypes.items():
        if pd.api.types.is_datetime64_any_dtype(dt) or col in converted:
            continue
        if col in booleans and col not in asked and (dtype is None or isinstance(dtype, dict)):
            continue
        if engine == "pyarrow" and dt == object and col not in asked and (dtype is None or asked):
            continue
        if isinstance(dt, pd.CategoricalDtype):
            out[col] = dtype.get(col, "category") if isinstance(dtype, dict) else "category"
            continue
        out[col] = dt
    return out


class _Block(io.RawIOBase):
    """The header line, then the bytes ``[begin, stop)`` of ``f``, handed out as pandas reads
    them: a block is parsed from the file as it streams, never held whole (nor twice, with
    its header glued on) beside the frame parsed from it.

    >>> f = io.BytesIO(b"a,b\\n1,2\\n3,4\\n5,6\\n")
    >>> io.BufferedReader(_Block(f, 8, 16, b"a,b\\n")).read()
    b'a,b\\n3,4\\n5,6\\n'
    """

    def __init__(self, f: Any, begin: int, stop: int, header: bytes):
        super().__init__()
        self._f, self._left, self._head = f, stop - begin, memoryview(header)
        f.seek(begin)

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:
        if len(self._head):
            k = min(len(b), len(self._head))
            b[:k] = self._head[:k]
            self._head = self._head[k:]
            return k
        if self._left <= 0:
            return 0
        data = self._f.read(min(len(b), self._left))
        k = len(data)
        b[:k] = data
        self._left -= k
        return k


@contextlib.contextmanager
def _source(fs: Any, path: str, start: int, end: int | None, header: bytes, compression: Any) -> Iterator[Any]:
    """What pandas parses for one partition: the whole (decompressed) file, or a block with
    the header line in front, streamed from the file (``_Block``); None for a block that
    holds no line."""
    with fs.open(path, "rb") as f:
        if end is None:
            yield open_decompressed(f, compression)
        else:
            begin, stop = line_range(f, start, end)
            yield io.BufferedReader(_Block(f, begin, stop, header), 1 << 20) if stop > begin else None


#: Rows parsed at a time when a filter is pushed into the read (``filters=``).
FILTER_CHUNK_ROWS = 65_536
#: pandas' low-memory mode for those pieces: off, as a piece of that many rows is small already
#: (on, pandas cuts it again and joins the parts: 287-300 ms a seed 002 file against 274-276)
FILTER_LOW_MEMORY = False

#: The dtype pandas' parser gives text it infers (``str`` from pandas 3, ``object`` before).
_INFERRED_TEXT = pd.Series(["a"]).dtype
#: Whether pandas parses filtered partitions before pyarrow tries (``csv_arrow.py``): where it
#: infers text as ``str``, its C parser is the faster (the seed 002 files, half the rows kept:
#: 280-285 ms a 64 MB file against 350-375 ms by pyarrow on one thread; 197 against 245 with
#: two number columns only), *if* the text columns are left for it to infer: asked for as
#: ``str`` it makes Python strings first (304-313 ms read whole, 400 ms 65,536 rows at a
#: time). Not unfiltered: read whole, pandas' peak is 75 MiB above the 43 MiB frame of such
#: a file, pyarrow's 31 (filtered: 41-43 against 27-28).
_PANDAS_FIRST = isinstance(_INFERRED_TEXT, pd.StringDtype)


class _Misfit(Exception):
    """A text column pandas inferred as something else in a piece: parse it with every dtype."""


def _inferred(dtypes: dict, kwargs: dict, what: str, named: tuple = ()) -> list:
    """The text columns left for pandas to infer (``_PANDAS_FIRST``; only by its C parser,
    whose inference of text as ``str`` keeps every character of every value: ``_fitted``
    checks it did), but those ``dtype=`` ``named``: text asked for by name is often text
    that looks like numbers (codes such as ``007``), which inference would parse twice.

    >>> _inferred({"a": "int64", "b": _INFERRED_TEXT}, {}, "read_csv") == (["b"] if _PANDAS_FIRST else [])
    True
    >>> _inferred({"a": "int64", "b": _INFERRED_TEXT}, {}, "read_csv", named=("b",))
    []
    """
    if not _PANDAS_FIRST or what != "read_csv" or kwargs.get("engine", "c") != "c":
        return []
    return [c for c, dt in dtypes.items() if dt == _INFERRED_TEXT and c not in named]


def _fitted(df: pd.DataFrame, dtypes: dict, inferred: list) -> pd.DataFrame:
    """``df`` with its ``inferred`` text columns as ``dtypes`` says: as they are when pandas
    inferred that dtype; converted when it found no value at all (all missing: NaN either
    way); else ``_Misfit`` (numbers or flags there, whose text is gone: ``007`` became 7).

    >>> import numpy as np, pandas as pd
    >>> _fitted(pd.DataFrame({"s": [np.nan]}), {"s": _INFERRED_TEXT}, ["s"]).s.dtype == _INFERRED_TEXT
    True
    >>> _fitted(pd.DataFrame({"s": [7]}), {"s": _INFERRED_TEXT}, ["s"])
    Traceback (most recent call last):
    ...
    xsched.dataframe.csv._Misfit: s
    """
    for col in inferred:
        if col not in df.columns or df[col].dtype == dtypes[col]:
            continue
        if not df[col].isna().all():
            raise _Misfit(col)
        df[col] = df[col].astype(dtypes[col])
    return df


def _parse(parse: Any, src: Any, dtypes: dict, inferred: list, kwargs: dict, filters: tuple,
           whole: bool, meta: pd.DataFrame) -> pd.DataFrame:
    """One partition parsed by pandas from ``src`` with ``dtypes`` but for the ``inferred``
    text columns, checked (``_fitted``); with ``filters`` and not ``whole``,
    ``FILTER_CHUNK_ROWS`` rows at a time, keeping the rows passing."""
    asked = {c: dt for c, dt in dtypes.items() if c not in inferred}
    if filters and not whole:
        opts = {"low_memory": FILTER_LOW_MEMORY} if "low_memory" not in kwargs else {}
        with parse(src, dtype=asked, chunksize=FILTER_CHUNK_ROWS, **kwargs, **opts) as chunks:
            kept = [keep_rows(_fitted(chunk, dtypes, inferred), filters) for chunk in chunks]
        return pd.concat(kept) if kept else meta.copy()
    return keep_rows(_fitted(parse(src, dtype=asked, **kwargs), dtypes, inferred), filters)


def _read_block(fs: Any, path: str, label: str, start: int, end: int | None, header: bytes, compression: Any,
                kwargs: dict, dtypes: dict, meta: pd.DataFrame, path_col: Any, origin: str,
                filters: tuple = (), what: str = "read_csv", named: tuple = ()) -> pd.DataFrame:
    """Run on the workers: one partition, parsed with meta's dtypes. By pandas first when
    ``filters`` are pushed, pandas infers text as ``str`` (``_PANDAS_FIRST``) and ``dtype=``
    names no text column (pandas told the dtype is the slower: 400 ms for a seed 002 file,
    pyarrow 340-370); else by pyarrow where that gives what pandas would (``csv_arrow.py``),
    then by pandas. pandas' text columns that ``dtype=`` does not name are left for it to
    infer, and checked (``_inferred``). With ``filters`` (pushed by the planner from
    ``df[df.col > value]``) only the rows passing are kept as they are parsed (pandas' in
    ``FILTER_CHUNK_ROWS`` at a time), so the whole unfiltered partition never exists; but a
    categorical column's categories are those of the whole partition, so with one (or with
    ``engine="pyarrow"``, which parses no chunks) pandas parses it whole first."""
    where = label if end is None else f"{label} (bytes {start}-{end})"
    try:
        df = None
        named_text = any(c in named for c, dt in dtypes.items() if dt == _INFERRED_TEXT)
        if what == "read_csv" and not (_PANDAS_FIRST and filters and not named_text):
            with _source(fs, path, start, end, header, compression) as src:
                if src is None:
                    return meta.copy()
                df = read_arrow(src, kwargs, dtypes, [c for c in meta.columns if c != path_col], filters)
        if df is None:
            parse = _PARSERS[what]
            whole = kwargs.get("engine") == "pyarrow" or any(
                isinstance(pd.api.types.pandas_dtype(dt), pd.CategoricalDtype) for dt in dtypes.values())
            inferred = _inferred(dtypes, kwargs, what, named)
            for left in (inferred, []) if inferred else ([],):
                with _source(fs, path, start, end, header, compression) as src, warnings.catch_warnings():
                    if src is None:
                        return meta.copy()
                    warnings.simplefilter("ignore", pd.errors.DtypeWarning)
                    try:
                        df = _parse(parse, src, dtypes, left, kwargs, filters, whole, meta)
                        break
                    except _Misfit:
                        continue  # (the next attempt names every dtype)
    except pd.errors.EmptyDataError:
        return meta.copy()
    except (ValueError, TypeError, OverflowError) as exc:
        raise _explain(fs, path, where, start, end, header, compression, kwargs, dtypes, origin, exc, what) from exc
    return _conform(df, meta, where, path_col, label, origin, what)


def _explain(fs: Any, path: str, where: str, start: int, end: int | None, header: bytes, compression: Any,
             kwargs: dict, dtypes: dict, origin: str, exc: Exception, what: str = "read_csv") -> Exception:
    """The error for a partition pandas could not parse with meta's dtypes: which column holds
    which values, and the ``dtype=`` that reads them."""
    raw_kwargs = {k: v for k, v in kwargs.items() if k not in ("parse_dates", "converters")}
    lacking = _columns_lacking(fs, path, start, end, header, compression, raw_kwargs, what)
    if lacking:
        missing, present = lacking
        return ValueError(f"{what}: {where} has columns {present}, without {missing[0]!r}, which {origin} had; "
                          "files read together must share their header: mend or leave out that file, or read "
                          "only the columns every file has (usecols=)")
    try:
        with _source(fs, path, start, end, header, compression) as src:
            raw = _PARSERS[what](src, dtype=object, **raw_kwargs)
    except Exception:  # the text itself does not parse: say so with pandas' words
        cut = "" if start == 0 and end is None else (
            "; a quoted value holding a newline cannot be read in blocks (a block may start inside it): "
            "pass blocksize=None to read each file whole")
        return ValueError(f"{what}: pandas could not parse {where}: {exc}{cut}")
    for col, dt in dtypes.items():
        if col not in raw.columns:
            continue
        bad, missing = _misfits(raw[col], dt)
        if not len(bad) and not missing:
            continue
        numeric = len(bad) == 0 or bool(pd.to_numeric(bad, errors="coerce").notna().all())
        if pd.api.types.is_bool_dtype(dt) and not len(bad):
            fixes = ["boolean", "object"]  # (pandas' nullable booleans)
        elif numeric:
            fixes = ["float64", "object"]
        else:
            fixes = ["object"]
        found = (f"values such as {list(pd.unique(bad))[:3]!r}" if len(bad) else "missing values")
        other = f" (or dtype={{{col!r}: {fixes[1]!r}}})" if len(fixes) > 1 else ""
        return ValueError(
            f"{what}: column {col!r} of {where} has {found} that do not fit dtype {dt}, which was "
            f"inferred from {origin}. Pass dtype={{{col!r}: {fixes[0]!r}}} to {what}{other}, "
            + ("assume_missing=True (every integer column as float64), " if fixes[0] == "float64" and
               getattr(dt, "kind", "") in "iu" else "") + "or a larger sample=.")
    return ValueError(f"{what}: pandas could not parse {where} with the dtypes inferred from {origin} "
                      f"({exc}); pass dtype= for the column named in that message")


def _columns_lacking(fs: Any, path: str, start: int, end: int | None, header: bytes, compression: Any,
                     kwargs: dict, what: str) -> tuple[list, list] | None:
    """The columns read (``usecols``) that this piece's header lacks, and those it has; None
    when it has them all or its header does not parse."""
    wanted = kwargs.get("usecols")
    if wanted is None or callable(wanted):
        return None
    rest = {k: v for k, v in kwargs.items() if k not in ("usecols", "nrows", "skipfooter", "dtype")}
    try:
        with _source(fs, path, start, end, header, compression) as src:
            present = list(_PARSERS[what](src, nrows=0, **rest).columns)
    except Exception:
        return None
    missing = [c for c in wanted if isinstance(c, str) and c not in present]
    return (missing, present) if missing else None


def _misfits(values: pd.Series, dtype: Any) -> tuple[pd.Series, bool]:
    """The values of a column read as text that do not convert to ``dtype``, and whether
    missing values are a problem (for integers and booleans)."""
    present = values.dropna()
    missing = len(present) < len(values)
    if pd.api.types.is_bool_dtype(dtype):
        return (present[~present.astype(str).str.lower().isin(["true", "false"])],
                missing and not isinstance(dtype, pd.api.extensions.ExtensionDtype))
    if pd.api.types.is_integer_dtype(dtype):
        num = pd.to_numeric(present, errors="coerce")
        nullable = isinstance(dtype, pd.api.extensions.ExtensionDtype)
        return present[num.isna() | (num % 1 != 0)], missing and not nullable
    if pd.api.types.is_float_dtype(dtype):
        return present[pd.to_numeric(present, errors="coerce").isna()], False
    return present.iloc[:0], False


def _conform(df: pd.DataFrame, meta: pd.DataFrame, where: str, path_col: Any, label: str,
             origin: str, what: str = "read_csv") -> pd.DataFrame:
    """A parsed partition in meta's columns, dtypes and index dtype (or an error naming why not)."""
    expected = [c for c in meta.columns if c != path_col]
    if list(df.columns) != expected:
        raise ValueError(f"{what}: {where} has columns {list(df.columns)}, but {origin} had {expected}; "
                         "files read together must share their header (or pass names= and usecols=)")
    if path_col is not None:
        df[path_col] = pd.Categorical([label] * len(df), categories=meta[path_col].cat.categories)
    if not len(df):  # (meta's dtypes and index; but a categorical keeps the categories read, as pandas')
        out = meta.copy()
        for col in expected:
            if isinstance(df[col].dtype, pd.CategoricalDtype):
                out[col] = df[col].array
        return out
    for col, dt in meta.dtypes.items():
        if df[col].dtype != dt and not isinstance(dt, pd.CategoricalDtype):
            hint = "check parse_dates= and the date format" if pd.api.types.is_datetime64_any_dtype(dt) \
                else f"pass dtype={{{col!r}: 'object'}}"
            try:
                cast = df[col].astype(dt)
                if getattr(dt, "kind", "") == "M":  # (what _unchanged refuses of times: a finer unit than dt's)
                    zone = getattr(dt, "tz", None)
                    finest = f"datetime64[ns, {zone}]" if zone is not None else "datetime64[ns]"
                    hint = (f"read {col!r} as text (leave it out of parse_dates) and convert it with "
                            f".astype({finest!r})")
                _unchanged(df[col], cast, dt)  # (times of a finer unit than the first file's: not cut off)
                df[col] = cast
            except (ValueError, TypeError) as exc:
                raise ValueError(f"{what}: column {col!r} of {where} is {df[col].dtype}, not {dt} as "
                                 f"inferred from {origin}, and does not convert ({exc}); {hint}") from exc
    if df.index.dtype != meta.index.dtype and not isinstance(meta.index, pd.RangeIndex):
        want = meta.index.dtype
        try:
            cast = df.index.astype(want)
        except (ValueError, TypeError):
            return df
        if getattr(want, "kind", "") == "M":  # (an index of finer times than the first file's: not cut off)
            try:
                _unchanged(pd.Series(df.index), pd.Series(cast), want)
            except ValueError as exc:
                name = meta.index.name
                zone = getattr(want, "tz", None)
                finest = f"datetime64[ns, {zone}]" if zone is not None else "datetime64[ns]"
                column = repr(name) if name is not None else "its column"
                raise ValueError(f"{what}: the index {name!r} of {where} is {df.index.dtype}, not {want} as inferred "
                                 f"from {origin}, and does not convert ({exc}); read {column} as text (leave it "
                                 f"out of parse_dates and index_col), convert it with .astype({finest!r}), then "
                                 "set_index it") from exc
        df.index = cast
    return df


# --------------------------------------------------------------------------- writing


def to_csv(df: Any, path: str, single_file: bool = False, index: bool = True, compute: bool = True,
           storage_options: dict | None = None, name_function: Any = None, **kwargs: Any):
    """Write a dataframe (or Series) as CSV: one file per partition, written by the workers.

    ``path`` holds a ``*``, replaced by the partition number (``out/part-*.csv``) or by
    ``name_function(i)`` (a different str for each partition), or names a directory that
    gets ``part.<i>.csv`` files (or files named ``name_function(i)``); with
    ``single_file=True`` it is the one file the partitions are appended to, in order. Other
    keywords go to ``pandas.DataFrame.to_csv``; pandas is asked to write the empty meta with
    them first, so a keyword it refuses fails here, not in the workers;
    ``header_first_partition_only=True`` (dask's) writes the header in the first file only.
    ``mode="a"`` adds to
    the end of the files (pass ``header=False`` not to repeat the header); ``compression``
    is guessed from each file's name (``.gz``, ``.bz2``, ...) unless given. Returns the
    written paths, or with ``compute=False`` a list of ``Delayed`` that write them.

    >>> import os, tempfile, pandas as pd, xsched.dataframe as xd
    >>> df = xd.from_pandas(pd.DataFrame({"a": range(4)}), npartitions=2)
    >>> with tempfile.TemporaryDirectory() as d:
    ...     [os.path.basename(p) for p in to_csv(df, os.path.join(d, "out"))]
    ...     [os.path.basename(p) for p in to_csv(df, os.path.join(d, "day-*.csv"), name_function=lambda i: f"0{i + 1}")]
    ['part.0.csv', 'part.1.csv']
    ['day-01.csv', 'day-02.csv']
    """
    if not isinstance(df, (DataFrame, Series)):
        raise TypeError(f"to_csv writes an xsched DataFrame or Series, not {type(df).__name__}")
    if single_file and name_function is not None:
        raise ValueError("to_csv: name_function names a file per partition, and single_file=True writes one file; "
                         "leave one of them out")
    kwargs = dict(kwargs)
    first_header_only = bool(kwargs.pop("header_first_partition_only", False))  # (dask's: files after the first
    # get no header; single_file=True writes it once anyway)
    mode = kwargs.pop("mode", "w")
    if mode not in ("w", "a", "wt", "at"):  # (pandas ignores mode= with an open file: it is ours to honour)
        raise ValueError(f"to_csv: mode must be 'w' (write the files anew) or 'a' (append to them), got {mode!r}")
    append = mode.startswith("a")
    check_writer_options(df._meta, "to_csv", dict(kwargs, index=index))
    fs, base = filesystem_for(path, storage_options)
    n = df.npartitions
    if single_file:
        paths = [base] * n
        make_folder(fs, parent(fs, base), "to_csv")
    else:
        paths = partition_paths(fs, base, n, ".csv", "to_csv", name_function)
    # (pandas guesses the compression from a path, not from the open file it is given here)
    compressions = [written_compression(p, kwargs.get("compression", "infer")) for p in paths]
    if (single_file or append) and any(c in ("zip", "tar") or (isinstance(c, dict) and c.get("method") in
                                                                ("zip", "tar")) for c in compressions):
        raise ValueError("to_csv: a zip or tar archive cannot be added to (single_file=True or mode='a' appends); "
                         "write one file per partition, or use gzip, bz2, xz or zstd, whose streams append")
    name = f"to-csv-{new_token(df._name, shown(fs, base), single_file, index, mode, first_header_only, sorted(kwargs.items(), key=str))}"
    ann = annotations_in_force()
    if single_file:  # partition after partition, each appended once the one before is written
        layer = chain_layer(name, range(n), df._keys(), _append_csv,
                            (fs, base, index, dict(kwargs, compression=compressions[0]), append), annotations=ann)
    else:
        layer = {chunk_key(name, (i,)): Task(_write_csv, (Ref(key), fs, paths[i], index,
                                                          dict(kwargs, compression=compressions[i],
                                                               **({"header": False} if first_header_only and i else {})),
                                                          append), {},
                                             per_task(ann))
                 for i, key in enumerate(df._keys())}
    keys = list(layer)[-1:] if single_file else list(layer)
    return run_writes(df._graph, name, layer, keys, compute)


def _write_csv(part: Any, fs: Any, path: str, index: bool, kwargs: dict, append: bool = False) -> str:
    """Run on the workers: one partition as one file (added to its end, ``append``); returns its path."""
    with fs.open(path, "ab" if append else "wb") as f:
        part.to_csv(f, index=index, **kwargs)
    return shown(fs, path)


def _append_csv(prev: Any, part: Any, fs: Any, path: str, index: bool, kwargs: dict, append: bool = False) -> str:
    """Run on the workers: one partition appended to the single file (after the previous
    one, whose write returned ``prev``; the first, with its header, when None, written anew
    unless ``append``)."""
    first = prev is None
    kw = dict(kwargs)
    if not first:
        kw["header"] = False
    try:
        with fs.open(path, "wb" if first and not append else "ab") as f:
            part.to_csv(f, index=index, **kw)
    except (NotImplementedError, ValueError) as exc:
        if first:
            raise
        raise ValueError(f"to_csv(single_file=True) appends partition after partition to {shown(fs, path)}, "
                         f"which its filesystem refused ({exc}); write one file per partition "
                         "(single_file=False) instead") from exc
    return shown(fs, path)


def _to_csv_method(self, path: str, single_file: bool = False, index: bool = True, compute: bool = True,
                   storage_options: dict | None = None, name_function: Any = None, **kwargs: Any):
    """Write as CSV files, one per partition (see ``xsched.dataframe.csv.to_csv``).

    >>> import tempfile, pandas as pd, xsched.dataframe as xd
    >>> from xsched.dataframe.csv import read_csv
    >>> df = xd.from_pandas(pd.DataFrame({"a": range(6)}), npartitions=3)
    >>> with tempfile.TemporaryDirectory() as d:
    ...     paths = df.to_csv(d + "/part-*.csv", index=False)
    ...     len(paths), read_csv(d + "/part-*.csv").a.tolist()
    (3, [0, 1, 2, 3, 4, 5])
    """
    return to_csv(self, path, single_file=single_file, index=index, compute=compute,
                  storage_options=storage_options, name_function=name_function, **kwargs)


DataFrame.to_csv = _to_csv_method
Series.to_csv = _to_csv_method
