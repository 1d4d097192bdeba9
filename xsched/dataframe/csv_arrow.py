"""CSV partitions parsed by pyarrow: ``read_csv``'s fast path where pandas makes text
``object`` (pandas 2), taken only where it gives what pandas would.

Why: there pyarrow's CSV reader converts only the columns asked for and parsed numbers on one
thread about 1.5x faster than pandas' C parser, which makes a Python string of every text
field; parsed a megabyte of lines at a time, a filter pushed into the read (``filters=``)
keeps only the passing rows, in compact Arrow memory, so a partition's unfiltered rows never
exist as pandas objects. Where pandas infers text as ``str`` (pandas 3) its own parser is the
faster one, and ``csv.py`` takes it first for filtered partitions (``csv._PANDAS_FIRST``);
unfiltered ones still come here first: pyarrow's peak is less than half pandas'.

It parses a partition only when the answer is sure to equal pandas': no keywords but
``usecols`` (by name) and a one-character ``sep``, numbers and strings as the meta's dtypes,
a header line that names at least two columns, those meta expects, no line break inside a
quoted field. Any value pyarrow refuses (``+5`` or ``1.0`` in an integer column, a row of
the wrong width, a missing integer) answers None too, and ``csv.py`` parses the partition
with pandas, which reads it its own way or explains the error. The missing-value markers are pandas' own list, so ``NA`` or an empty field is NaN
here as there; a pushed ``!=`` keeps missing values, as pandas' comparison does. Parsing
stays on the task's thread (``use_threads=False``): a worker's threads are its parallelism.
``parse_dates`` stays with pandas: its parser hands ``to_datetime`` the strings it already
made, where pyarrow's would first have to become Python strings (a 500,000-row file with one
date column: 0.14-0.17 s by pandas, 0.27-0.37 s by pyarrow then ``to_datetime``).

>>> import io, pandas as pd
>>> meta = pd.DataFrame({"a": pd.Series([], dtype="int64"), "b": pd.Series([], dtype="float64")})
>>> read_arrow(io.BytesIO(b"a,b\\n1,2.5\\n2,NA\\n3,4\\n"), {}, dict(meta.dtypes), list(meta.columns),
...            (("b", ">", 3),)).to_dict()
{'a': {2: 3}, 'b': {2: 4.0}}
>>> read_arrow(io.BytesIO(b"a,b\\n+1,2\\n"), {}, dict(meta.dtypes), list(meta.columns)) is None  # pandas' turn
True
"""

from __future__ import annotations

import csv
import io
from typing import Any, Iterator

import numpy as np
import pandas as pd

__all__ = ["read_arrow"]

#: Bytes of whole lines parsed at a time (see ``read_arrow``).
CHUNK_BYTES = 1 << 20

_KEYWORDS = frozenset({"usecols", "sep", "delimiter"})


def _arrow_type(dtype: Any) -> Any:
    """The Arrow type pyarrow parses a column of ``dtype`` as, or None for dtypes left to pandas."""
    import pyarrow as pa

    if isinstance(dtype, np.dtype):
        if dtype.kind in "iu" or dtype == np.float64:
            return pa.from_numpy_dtype(dtype)
        return pa.string() if dtype == object else None
    if isinstance(dtype, pd.StringDtype):
        return pa.string()
    return None


def _delimiter(kwargs: dict) -> str | None:
    sep = kwargs.get("sep", kwargs.get("delimiter", ","))
    return sep if isinstance(sep, str) and len(sep) == 1 and sep not in "\"\r\n" and not sep.isspace() else None


def _options(kwargs: dict, dtypes: dict, columns: list) -> tuple | None:
    """(delimiter, {column: Arrow type}) when pyarrow can parse these columns as pandas
    would, else None."""
    if set(kwargs) - _KEYWORDS:
        return None
    usecols = kwargs.get("usecols")
    if usecols is not None and not (isinstance(usecols, (list, tuple)) and all(isinstance(c, str) for c in usecols)):
        return None
    delimiter = _delimiter(kwargs)
    if delimiter is None or len(set(columns)) != len(columns):
        return None
    types = {}
    for col in columns:
        t = _arrow_type(dtypes.get(col))
        if t is None:
            return None
        types[col] = t
    return delimiter, types


def _header(src: Any, delimiter: str) -> list | None:
    """The names on the source's first line (consumed), or None when it is not one plain line."""
    line = src.readline()
    if b"\r" in line.rstrip(b"\r\n"):  # (lines ended by a lone \r: the file is pandas')
        return None
    try:
        rows = list(csv.reader(io.StringIO(line.decode("utf-8")), delimiter=delimiter, strict=True))
    except (UnicodeDecodeError, csv.Error):
        return None
    return rows[0] if len(rows) == 1 else None


def _mask(table: Any, filters: tuple) -> Any:
    """The rows of a table passing every ``(column, op, value)``, as pandas compares:
    a missing value passes ``!=`` only."""
    import pyarrow.compute as pc

    ops = {"<": pc.less, "<=": pc.less_equal, ">": pc.greater, ">=": pc.greater_equal, "==": pc.equal,
           "!=": pc.not_equal}
    mask = None
    for col, op, value in filters:
        m = pc.fill_null(ops[op](table.column(col), value), op == "!=")
        mask = m if mask is None else pc.and_(mask, m)
    return mask


def _chunks(src: Any, size: int) -> Iterator[tuple[bytes, int]]:
    """The source's bytes in pieces of about ``size`` that end at a line's end (the last one
    wherever the file ends); a line longer than ``size`` comes whole. Each piece is
    ``data[:end]`` (not copied: the tail after it is the next piece's start)."""
    carry = b""
    while True:
        data = src.read(size)
        if not data:
            if carry:
                yield carry, len(carry)
            return
        if carry:
            data = carry + data
        cut = data.rfind(b"\n") + 1
        if not cut:
            carry = data
            continue
        yield data, cut
        carry = data[cut:]


def _read_otherwise(data: bytes, end: int | None = None) -> bool:
    """Whether pandas may read these lines otherwise than pyarrow: a line break inside a quoted
    field (an odd number of quote characters before it; ``""`` inside one counts twice), which
    pyarrow, told that fields hold none, would take for a row's end where pandas reads on; a
    carriage return not followed by a line feed (pandas' reading of those is its own); a
    byte-order mark starting the piece (pyarrow drops it, mid-file pandas keeps it).

    ``data[:end]`` is the piece; most have no quote and no carriage return, which a byte
    search (memchr) tells without the NumPy passes below.

    >>> _read_otherwise(b'a,"x\\ny"\\n'), _read_otherwise(b'a,"x""y"\\r\\nb,z\\n'), _read_otherwise(b'a,"x\\ny"\\n', 2)
    (True, False, False)
    >>> _read_otherwise(b'a,b\\rc,d\\n')
    True
    """
    end = len(data) if end is None else end
    if data.startswith(b"\xef\xbb\xbf"):
        return True
    if data.find(b'"', 0, end) < 0 and data.find(b"\r", 0, end) < 0:
        return False
    data = np.frombuffer(data, np.uint8, count=end)
    returns = np.flatnonzero(data == 13)
    if len(returns) and (returns[-1] == len(data) - 1 or (data[returns[returns < len(data) - 1] + 1] != 10).any()):
        return True
    quotes = data == 34  # '"'
    if not quotes.any():
        return False
    inside = np.cumsum(quotes, dtype=np.uint8) & 1  # (the parity survives the uint8 wrapping)
    return bool((inside.astype(bool) & ((data == 10) | (data == 13))).any())


def read_arrow(src: Any, kwargs: dict, dtypes: dict, columns: list, filters: tuple = ()) -> pd.DataFrame | None:
    """The partition in ``src`` (a binary file positioned at its header line) parsed by pyarrow
    into ``columns`` with ``dtypes``, keeping the rows passing ``filters`` with their row
    numbers as the index; None when pandas must parse it (see the module's docstring).
    ``src`` is consumed either way.

    The file is handed to pyarrow ``CHUNK_BYTES`` of whole lines at a time, parsed and
    filtered before the next is read: pyarrow's own streaming reader reads dozens of blocks
    ahead on its threads, which cost a 64 MB file's partition 30 MB more at its peak and time."""
    try:
        import pyarrow as pa
        import pyarrow.csv as pcsv
    except ImportError:
        return None
    opts = _options(kwargs, dtypes, columns)
    if opts is None:
        return None
    delimiter, types = opts
    names = _header(src, delimiter)
    if names is None or len(set(names)) != len(names) or len(names) < 2:
        return None  # (one column: pandas skips a line of spaces as blank, pyarrow reads it as a value)
    if ("usecols" in kwargs and [n for n in names if n in types] != columns) or \
            ("usecols" not in kwargs and names != columns):
        return None
    parse = pcsv.ParseOptions(delimiter=delimiter)
    convert = pcsv.ConvertOptions(include_columns=columns, column_types=types, null_values=_na_values(),
                                  strings_can_be_null=True)
    ints = [c for c, t in types.items() if pa.types.is_integer(t)]
    kept, rows, seen = [], [], 0
    pa.default_memory_pool().release_unused()  # (what the last partition's frame freed after its own call)
    try:
        for data, end in _chunks(src, CHUNK_BYTES):
            if _read_otherwise(data, end):
                return None
            chunk = memoryview(data)[:end]
            read = pcsv.ReadOptions(use_threads=False, column_names=names, block_size=len(chunk) + 1)
            table = pcsv.read_csv(pa.py_buffer(chunk), read_options=read, parse_options=parse,
                                  convert_options=convert)
            del chunk, data
            if any(table.column(c).null_count for c in ints):
                return None  # pandas refuses a missing integer: its error says so
            if filters:
                mask = _mask(table, filters)
                rows.append(np.flatnonzero(mask.to_numpy(zero_copy_only=False)) + seen)
                seen += table.num_rows
                table = table.filter(mask)
            kept.append(table)
        schema = pa.schema([(c, types[c]) for c in columns])
        table = pa.concat_tables(kept) if kept else schema.empty_table()
    except (pa.ArrowException, ValueError, TypeError):
        return None
    del kept
    df = _missing_as_nan(table.to_pandas(split_blocks=True, self_destruct=True))
    del table
    pa.default_memory_pool().release_unused()
    if filters:
        df.index = pd.Index(np.concatenate(rows) if rows else np.empty(0, np.int64), dtype="int64")
    return df


def _missing_as_nan(df: pd.DataFrame) -> pd.DataFrame:
    """NaN for the missing strings of object columns, as pandas' parser gives them (pyarrow
    gives None there with pandas 2; pandas 3's ``str`` columns hold NaN already).

    >>> _missing_as_nan(pd.DataFrame({"s": pd.Series(["a", None], dtype=object)})).s.tolist()
    ['a', nan]
    """
    for col in df.columns[(df.dtypes == object).to_numpy()]:
        missing = df[col].isna().to_numpy()
        if missing.any():
            df[col] = df[col].where(~missing, np.nan)
    return df


def _na_values() -> list:
    """pandas' default missing-value markers (``NA``, ``nan``, ``None``, the empty field...)."""
    try:
        from pandas._libs.parsers import STR_NA_VALUES
    except ImportError:  # where pandas moves it: the list its read_csv documents
        return ["", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND", "1.#QNAN",
                "<NA>", "N/A", "NA", "NULL", "NaN", "None", "n/a", "nan", "null"]
    return sorted(STR_NA_VALUES)
