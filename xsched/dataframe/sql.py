"""SQL tables as dataframes, and dataframes as SQL tables: ``read_sql_table``,
``read_sql_query``, ``read_sql`` and ``to_sql``, through SQLAlchemy.

Why this shape: a database connection cannot travel to the workers, so every task opens
its own engine from the URI it is given (``con``/``uri``, with ``engine_kwargs`` for
``create_engine``). A read is cut into ranges of one column, ``index_col`` (numeric or
datetime), each range one ``SELECT ... WHERE lo <= index_col < hi`` run by a worker with
``pandas.read_sql_query``; the ranges are the divisions, so they are known. Meta comes from
the first ``head_rows`` rows, read when the frame is built, together with one aggregate
query for the ranges and for whether integer and boolean columns hold NULLs somewhere (pandas
then reads them as floats and objects). A table is read as ``pandas.read_sql_table`` reads
it, with the column types the database declares (dates parsed); a query as
``pandas.read_sql_query`` reads it. A write makes the table with the first partition and
appends every other one after it.

>>> import tempfile, pandas as pd, xsched.dataframe as xd
>>> from xsched.dataframe.sql import read_sql_table, to_sql
>>> df = xd.from_pandas(pd.DataFrame({"k": range(6), "v": list("abcdef")}), npartitions=3)
>>> with tempfile.TemporaryDirectory() as d:
...     to_sql(df, "t", f"sqlite:///{d}/db.sqlite")
...     back = read_sql_table("t", f"sqlite:///{d}/db.sqlite", "k", npartitions=2)
...     back.divisions, "".join(back.v.compute())
((0, 2, 5), 'abcdef')
"""

from __future__ import annotations

import contextlib
import datetime
import numbers
import re
from typing import Any, Callable, Iterator

import numpy as np
import pandas as pd

from ..files import blocksize_bytes
from ..graph.collection import run_writes
from ..graph.layers import annotations_in_force, chunk_key, new_token, per_task
from ..graph.partials import chain_layer
from ..graph.spec import Ref, Task
from .core import DataFrame, Series, checked_divisions, make_meta
from .io import from_tasks

__all__ = ["read_sql_table", "read_sql_query", "read_sql", "to_sql"]

_IF_EXISTS = ("fail", "replace", "append")


def _sa():
    try:
        import sqlalchemy as sa
    except ImportError as exc:  # pragma: no cover - installed with the sql extra
        raise ImportError('SQL tables need SQLAlchemy: pip install "xsched[sql]" (or "sqlalchemy>=2")') from exc
    return sa


def _check_uri(con: Any, what: str, name: str = "con") -> None:
    if not isinstance(con, str):
        raise TypeError(f"{what}: {name} must be a database URI string such as 'sqlite:///data.db', not a "
                        f"{type(con).__name__}: a connection cannot travel to the workers, which each open "
                        f"their own; pass the URI (and engine_kwargs= for create_engine)")


def _shown(uri: str) -> str:
    """The URI without its password, for messages."""
    try:
        return _sa().engine.make_url(uri).render_as_string(hide_password=True)
    except Exception:  # (not parsed: hide what would be a password anyway)
        return re.sub(r"(//[^:/@]*:)[^@]*@", r"\1***@", uri)


@contextlib.contextmanager
def _engine(uri: str, engine_kwargs: dict, what: str) -> Iterator[Any]:
    """An engine for ``uri``, disposed of (its pool closed) on leaving."""
    sa = _sa()
    try:
        engine = sa.create_engine(uri, **engine_kwargs)
    except (sa.exc.ArgumentError, sa.exc.NoSuchModuleError) as exc:
        raise ValueError(f"{what}: {_shown(uri)!r} is not a database URI SQLAlchemy can open ({exc}); "
                         "e.g. 'sqlite:///data.db' or 'postgresql://user@host/db'") from exc
    try:
        yield engine
    finally:
        engine.dispose()


# --------------------------------------------------------------------------- reading


def read_sql_table(table_name: str, con: str, index_col: Any, divisions: Any = None, npartitions: int | None = None,
                   limits: Any = None, columns: Any = None, bytes_per_chunk: Any = "256 MiB", head_rows: int = 5,
                   schema: str | None = None, meta: Any = None, engine_kwargs: dict | None = None,
                   **kwargs: Any) -> DataFrame:
    """A dataframe from a database table, one partition per range of ``index_col``, which
    becomes the index (numeric or datetime, without NULLs; its divisions are known).

    The ranges: ``divisions`` as given, or ``npartitions`` equal ranges between ``limits``
    (``(low, high)``, else the column's minimum and maximum), or as many as make
    ``bytes_per_chunk`` a partition, the row size estimated from ``head_rows`` rows. Rows
    outside the divisions are not read; a table of no rows is one partition of unknown
    divisions, read whole when computed. ``con``: the database URI (``engine_kwargs`` go to
    ``sqlalchemy.create_engine``); ``columns``: the columns to read, by name or
    ``sqlalchemy.column`` (None or none: all); ``meta`` (an empty frame, indexed by
    ``index_col``) instead of the dtypes of the first rows (and, for a column NULL in all
    of them, of its first value). Other keywords (``parse_dates``, ``coerce_float``,
    ``dtype_backend``) go to pandas. Columns are read with the types the table declares, as
    ``pandas.read_sql_table`` reads them.

    >>> import sqlite3, tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     with sqlite3.connect(f"{d}/db.sqlite") as c:
    ...         _ = c.execute("create table t (id integer, name text)")
    ...         _ = c.executemany("insert into t values (?, ?)", [(i, f"n{i}") for i in range(10)])
    ...     df = read_sql_table("t", f"sqlite:///{d}/db.sqlite", "id", npartitions=3)
    ...     df.divisions, df.name.compute().tolist()[-2:]
    ((0, 3, 6, 9), ['n8', 'n9'])
    """
    what = "read_sql_table"
    sa = _sa()
    _check_uri(con, what)
    if not isinstance(table_name, str):
        raise TypeError(f"{what}: table_name must be the table's name (a str), not a {type(table_name).__name__}; "
                        "for a SQLAlchemy selectable use read_sql_query")
    engine_kwargs = dict(engine_kwargs or {})
    with _engine(con, engine_kwargs, what) as engine:
        try:
            table = sa.Table(table_name, sa.MetaData(), autoload_with=engine, schema=schema)
        except sa.exc.NoSuchTableError:
            where = f"schema {schema!r} of {_shown(con)}" if schema else _shown(con)
            raise ValueError(f"{what}: no table {table_name!r} in {where}: it has the tables "
                             f"{sorted(sa.inspect(engine).get_table_names(schema=schema))}") from None
        label = f"table {table_name!r}"
        names = [c.name for c in table.columns]

        def column(c: Any, arg: str) -> Any:
            name = c.name if isinstance(c, sa.sql.expression.ColumnClause) else c  # (sa.column("x") too)
            if not isinstance(name, str) or name not in names:
                raise ValueError(f"{what}: {arg} names no column {name!r} of {label}: it has the columns {names}")
            return table.c[name]

        index = column(index_col, "index_col")
        single = columns is None or isinstance(columns, (str, sa.sql.expression.ColumnClause))
        listed = [] if columns is None else [columns] if single else list(columns)
        if not listed:  # (None or [], as pandas: every column)
            chosen = [c.name for c in table.columns if c.name != index.name]
        else:
            chosen = [n for n in (column(c, "columns").name for c in listed) if n != index.name]
        kinds = {c.name: kind for c in table.columns if (kind := _kind(sa, c.type)) is not None}
        return _read_ranges(what, label, con, engine, engine_kwargs, index,
                            lambda used: sa.select(index, *[table.c[c] for c in used]), chosen, kinds,
                            divisions, npartitions, limits, bytes_per_chunk, head_rows, meta, kwargs)


def read_sql_query(sql: Any, con: str, index_col: Any, divisions: Any = None, npartitions: int | None = None,
                   limits: Any = None, bytes_per_chunk: Any = "256 MiB", head_rows: int = 5, meta: Any = None,
                   engine_kwargs: dict | None = None, **kwargs: Any) -> DataFrame:
    """A dataframe from a query, one partition per range of its column ``index_col``, as
    ``read_sql_table`` cuts a table (the same arguments, but no ``columns``).

    ``sql``: a SQLAlchemy selectable (``sqlalchemy.select(...)``, ``text(...).columns(...)``)
    or a plain SQL string. Either is run as a subquery, each partition reading
    ``SELECT <its columns> FROM (<sql>) AS q WHERE <range of index_col>``, so a query may
    group, join or limit as it likes; a string's columns are learned from one ``LIMIT``
    read when the frame is built. Values are typed as ``pandas.read_sql_query`` types them
    (no dates parsed unless ``parse_dates=`` says so, or the selectable's column types do).
    ``params``: a dict of the values of the query's ``:name`` placeholders.

    >>> import sqlite3, tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     with sqlite3.connect(f"{d}/db.sqlite") as c:
    ...         _ = c.execute("create table t (id integer, v real)")
    ...         _ = c.executemany("insert into t values (?, ?)", [(i, i / 2) for i in range(10)])
    ...     df = read_sql_query("select id, v * 2 as w from t where id > 3", f"sqlite:///{d}/db.sqlite",
    ...                         "id", npartitions=2)
    ...     df.divisions, df.w.sum().compute()
    ((4, 6, 9), np.float64(39.0))
    """
    what = "read_sql_query"
    sa = _sa()
    _check_uri(con, what)
    name = index_col.name if isinstance(index_col, sa.sql.ColumnElement) else index_col
    if not isinstance(name, str):
        raise TypeError(f"{what}: index_col must be a column's name (a str), not {index_col!r}")
    engine_kwargs = dict(engine_kwargs or {})
    with _engine(con, engine_kwargs, what) as engine:
        if isinstance(sql, str):
            sql = sql.rstrip(" \t\r\n;")  # (a closing ';', which pandas takes, cannot end a subquery)
            label = f"query {sql!r}"
            probe = sa.select(sa.text("*")).select_from(sa.text(sql).columns().subquery("q")).limit(0)
            try:
                with engine.connect() as conn:
                    keys = list(conn.execute(probe, _params(what, kwargs)).keys())
            except sa.exc.DBAPIError as exc:
                raise ValueError(f"{what}: the database refuses the {label}: {exc.orig}") from exc
            if len(set(keys)) != len(keys):
                raise ValueError(f"{what}: the {label} has columns of the same name ({keys}); name each "
                                 "column once (``AS``)")
            sql = sa.text(sql).columns(*[sa.column(k) for k in keys])
        elif hasattr(sql, "subquery"):
            label = f"query {str(sql)!r}"
        else:
            raise TypeError(f"{what}: sql must be a SQLAlchemy selectable (sqlalchemy.select(...)) or a SQL string, "
                            f"not a {type(sql).__name__}")
        sub = sql.subquery("q")
        names = list(sub.c.keys())
        if name not in names:
            raise ValueError(f"{what}: index_col names no column {name!r} of the {label}: it has the columns {names}")
        index = sub.c[name]
        chosen = [c for c in names if c != name]
        return _read_ranges(what, label, con, engine, engine_kwargs, index,
                            lambda used: sa.select(index, *[sub.c[c] for c in used]), chosen, {},
                            divisions, npartitions, limits, bytes_per_chunk, head_rows, meta, kwargs)


def read_sql(sql: Any, con: str, index_col: Any, **kwargs: Any) -> DataFrame:
    """``read_sql_table`` when ``sql`` is a table's name (a table of the database, or a
    single word), else ``read_sql_query``; the other keywords go to the one chosen.

    >>> import sqlite3, tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     with sqlite3.connect(f"{d}/db.sqlite") as c:
    ...         _ = c.execute("create table t (id integer)")
    ...         _ = c.executemany("insert into t values (?)", [(i,) for i in range(5)])
    ...     uri = f"sqlite:///{d}/db.sqlite"
    ...     len(read_sql("t", uri, "id")), len(read_sql("select id from t where id < 2", uri, "id"))
    (5, 2)
    """
    if isinstance(sql, str) and (len(sql.split()) == 1 or _has_table(sql, con, kwargs)):
        return read_sql_table(sql, con, index_col, **kwargs)
    return read_sql_query(sql, con, index_col, **kwargs)


def _has_table(name: str, con: Any, kwargs: dict) -> bool:
    _check_uri(con, "read_sql")
    with _engine(con, dict(kwargs.get("engine_kwargs") or {}), "read_sql") as engine:
        return _sa().inspect(engine).has_table(name, schema=kwargs.get("schema"))


def _kind(sa: Any, sqltype: Any) -> str | None:
    """What ``pandas.read_sql_table`` makes of a column of this SQL type (its ``_get_dtype``)."""
    if isinstance(sqltype, sa.Float):
        return "float"
    if isinstance(sqltype, sa.Integer):
        return "int"
    if isinstance(sqltype, sa.TIMESTAMP) and sqltype.timezone:
        return "utc"
    if isinstance(sqltype, (sa.DateTime, sa.Date)):
        return "date"
    if isinstance(sqltype, sa.Boolean):
        return "bool"
    if isinstance(sqltype, sa.String):
        return "string"
    return None


def _as_dates(values: pd.Series, utc: bool) -> pd.Series:
    if values.dtype.kind in "iuf":
        return pd.to_datetime(values, errors="coerce", unit="s", utc=utc)
    if isinstance(values.dtype, pd.DatetimeTZDtype):
        return pd.to_datetime(values, utc=True)
    return pd.to_datetime(values, errors="coerce", utc=utc)


def _typed_by_caller(kwargs: dict, columns: Any) -> set:
    """The columns whose dtype the caller's ``parse_dates=`` or ``dtype=`` gives."""
    dates, dtype = kwargs.get("parse_dates"), kwargs.get("dtype")
    typed = set([dates] if isinstance(dates, str) else dates or ())
    if dtype is not None:
        typed |= set(dtype) if isinstance(dtype, dict) else set(columns)
    return typed


def _harmonize(df: pd.DataFrame, kinds: dict, kwargs: dict, numpy_backend: bool) -> pd.DataFrame:
    """A table's rows in the dtypes ``pandas.read_sql_table`` gives them: dates parsed,
    floats as floats, text as ``str``, integers and booleans as such where none is NULL
    (the columns ``parse_dates=`` or ``dtype=`` name as pandas made them)."""
    typed = _typed_by_caller(kwargs, df.columns)
    text = pd.Series(["a"]).dtype
    for col, kind in kinds.items():
        if col not in df.columns or col in typed:
            continue
        s = df[col]
        if kind in ("date", "utc"):
            df[col] = _as_dates(s, kind == "utc")
        elif kind == "float" and numpy_backend:
            df[col] = s.astype(float)
        elif kind == "string" and text != object and s.dtype == object:
            df[col] = s.astype(text)
        elif kind in ("int", "bool") and numpy_backend and not s.isna().any():
            df[col] = s.astype("int64" if kind == "int" else bool)
    return df


def _read_ranges(what: str, label: str, con: str, engine: Any, engine_kwargs: dict, index: Any,
                 select_of: Callable, chosen: list, kinds: dict, divisions: Any, npartitions: Any, limits: Any,
                 bytes_per_chunk: Any, head_rows: int, meta: Any, kwargs: dict) -> DataFrame:
    """``read_sql_table`` and ``read_sql_query``: ``select_of(columns)`` selects ``index``
    and those ``columns``; ``kinds`` (a table's column types, else empty) harmonize the rows."""
    sa = _sa()
    name = index.name
    if "chunksize" in kwargs:
        raise TypeError(f"{what}: chunksize= is not supported on partitioned reads; the partitions are the ranges "
                        "of index_col (divisions=, npartitions= or bytes_per_chunk= say how many)")
    if divisions is not None and npartitions is not None:
        raise TypeError(f"{what}: pass divisions= or npartitions=, not both")
    if not isinstance(head_rows, numbers.Integral) or head_rows < 0:
        raise ValueError(f"{what}: head_rows must be a count of rows (0 or more), got {head_rows!r}")
    if head_rows == 0 and (meta is None or (divisions is None and npartitions is None)):
        raise ValueError(f"{what}: with head_rows=0 nothing shows the columns or the rows' size: pass meta= "
                         "and divisions= or npartitions=")
    if npartitions is not None and (not isinstance(npartitions, numbers.Integral) or npartitions < 1):
        raise ValueError(f"{what}: npartitions must be a positive int, got {npartitions!r}")
    read_kwargs = dict(kwargs)
    params = _params(what, read_kwargs)
    numpy_backend = read_kwargs.get("dtype_backend", "numpy") == "numpy"
    query = select_of(chosen)
    head = None
    if head_rows:
        try:
            head = _head(query, head_rows, engine, name, read_kwargs, kinds, numpy_backend)
        except sa.exc.DBAPIError as exc:
            raise ValueError(f"{what}: the database refuses reading the {label}: {exc.orig}") from exc
    origin = f"the first {head_rows} rows of the {label}"
    if meta is not None:
        meta, origin = _given_meta(what, meta, name, chosen), "meta="
    else:
        meta = head.iloc[:0]
    if origin == "meta=" or not numpy_backend:  # (the caller's dtypes, or NULLs that change none)
        nullable = []
    elif kinds:
        nullable = [c for c, kind in kinds.items() if c in chosen and kind in ("int", "bool")]
    else:
        nullable = [c for c, dt in meta.dtypes.items() if isinstance(dt, np.dtype) and dt.kind in "iub"]
    nullable = [c for c in nullable if c not in _typed_by_caller(read_kwargs, meta.columns)]
    stats = _stats(engine, query, params, name, divisions is None and limits is None, divisions is None, nullable)
    if stats and stats["rows"] != stats["indexed"]:
        raise ValueError(f"{what}: index_col {name!r} of the {label} is NULL in {stats['rows'] - stats['indexed']} "
                         "rows, which no range of it holds; read those rows apart (WHERE ... IS NULL) or index "
                         "by a column without NULLs")
    widened = {c: "float64" if held and (kinds.get(c) == "int" or (not kinds and meta[c].dtype.kind in "iu"))
               else object  # (all NULL: pandas keeps the Nones)
               for c, held in stats.get("held", {}).items() if held != stats["rows"]}
    if widened:
        meta = meta.astype(widened)
    # the data's own minimum and maximum as the outer divisions: the end partitions read from
    # the start and to the end, unbounded (a bound the driver words otherwise than the stored
    # text, as SQLite's datetimes, would leave out the row it came from)
    open_ends = divisions is None and limits is None
    if divisions is None:
        divisions = _divisions(what, label, name, meta, stats, limits, npartitions, head, bytes_per_chunk)
    else:
        divisions = checked_divisions(what, divisions)
    if divisions is None:  # (no rows at all: one partition reads whatever is there when computed)
        bounds = queried = [None]
    else:
        n = len(divisions) - 1
        bounds = [(lo, hi, i == n - 1) for i, (lo, hi) in enumerate(zip(divisions[:-1], divisions[1:]))]
        queried = [(None if open_ends and i == 0 else lo, None if open_ends and i == n - 1 else hi, last)
                   for i, (lo, hi, last) in enumerate(bounds)]
    column = index
    if isinstance(index.type, sa.types.NullType) and meta.index.dtype.kind == "M":
        column = sa.type_coerce(index, sa.DateTime(timezone=getattr(meta.index.dtype, "tz", None) is not None))

    def tasks_for(used: list, part_meta: pd.DataFrame) -> list:
        q = select_of(used)
        return [Task(_read_part, (con, engine_kwargs, q if w is None or w[:2] == (None, None) else
                                  q.where(*_range(column, *w)), label,
                                  _range_text(name, b), name, read_kwargs, kinds, numpy_backend, part_meta, origin,
                                  what), {}, per_task(ann)) for b, w in zip(bounds, queried)]

    ann = annotations_in_force()
    token = new_token(what, _shown(con), str(query), repr(divisions), sorted(read_kwargs.items(), key=str),
                      str(meta.dtypes), sorted(engine_kwargs.items(), key=str))
    tasks = tasks_for(chosen, meta)

    def project(used: list, pushed: list) -> list | None:
        """The same ranges read with fewer columns in the SELECT (the planner calls this,
        ``planner.py``); None for row filters, which stay in the graph."""
        return None if pushed else tasks_for(list(used), meta[list(used)])

    return from_tasks(f"{what.replace('_', '-')}-{token}", tasks, meta,
                      None if divisions is None else tuple(divisions), project=project)


def _params(what: str, kwargs: dict) -> dict:
    """``params=`` as every query of a read takes it: the values of the ``:name`` placeholders
    (SQLAlchemy binds a dict; positional values would meet the ranges' own bound ones)."""
    params = kwargs.get("params")
    if params is None:
        return {}
    if not isinstance(params, dict):
        raise TypeError(f"{what}: params must be a dict of the values of the query's :name placeholders "
                        f"(the query runs as a subquery with bounds of its own), got {params!r}")
    return params


def _stats(engine: Any, query: Any, params: dict, name: str, bounds: bool, rows: bool, nullable: list) -> dict:
    """One aggregate query over ``query``'s rows, only when something is wanted: the lowest and
    highest ``name`` (``bounds``), the rows and those with ``name`` (``rows``), and how many
    rows hold a value in each ``nullable`` column (``held``; pandas reads integers with NULLs
    as floats, booleans as objects)."""
    sa = _sa()
    sub = query.subquery("stats")
    wanted = {}
    if bounds:
        wanted.update(lo=sa.func.min(sub.c[name]), hi=sa.func.max(sub.c[name]))
    if rows or nullable:
        wanted.update(rows=sa.func.count(), indexed=sa.func.count(sub.c[name]))
        wanted.update({f"held-{i}": sa.func.count(sub.c[c]) for i, c in enumerate(nullable)})
    if not wanted:
        return {}
    with engine.connect() as conn:
        stats = dict(zip(wanted, conn.execute(sa.select(*wanted.values()), params).one()))
    stats["held"] = {c: stats.pop(f"held-{i}") for i, c in enumerate(nullable)}
    return stats


def _read(query: Any, engine: Any, index_name: str, kwargs: dict, kinds: dict, numpy_backend: bool) -> pd.DataFrame:
    """Rows of ``query`` as pandas reads them (a table's harmonized), indexed by ``index_name``."""
    df = pd.read_sql_query(query, engine, **kwargs)
    if kinds:
        df = _harmonize(df, kinds, kwargs, numpy_backend)
    return df.set_index(index_name)


def _head(query: Any, head_rows: int, engine: Any, index_name: str, kwargs: dict, kinds: dict,
          numpy_backend: bool) -> pd.DataFrame:
    """The first ``head_rows`` rows, and for each column NULL in all of them the first row that
    holds a value there: pandas types a column by its values (floats, text, dates to the
    microsecond), and NULLs alone would type it otherwise (objects, dates to the second)."""
    sa = _sa()
    first = query.limit(head_rows)
    head = _read(first, engine, index_name, kwargs, kinds, numpy_backend)
    blank = [c for c in head.columns if len(head) and head[c].isna().all()]
    if not blank:
        return head
    held = [query.where(query.selected_columns[c].is_not(None)).limit(1) for c in blank]
    rows = sa.union_all(*[sa.select(q.subquery()) for q in (first, *held)])
    return _read(rows, engine, index_name, kwargs, kinds, numpy_backend)


def _given_meta(what: str, meta: Any, name: str, chosen: list) -> pd.DataFrame:
    if not isinstance(meta, pd.DataFrame):
        raise TypeError(f"{what}: meta must be an empty pandas DataFrame indexed by {name!r}, "
                        f"not a {type(meta).__name__}")
    if list(meta.columns) != chosen:
        raise ValueError(f"{what}: meta has the columns {list(meta.columns)}, but the read gives {chosen} "
                         f"(indexed by {name!r}); pass a meta of those columns")
    meta = make_meta(meta)
    return meta.rename_axis(name)


def _range(column: Any, lo: Any, hi: Any, last: bool) -> tuple:
    """The WHERE clauses of one partition: ``lo <= column < hi`` (``<= hi`` for the last);
    a bound that is None is left out."""
    clauses = [] if lo is None else [column >= _bindable(lo)]
    if hi is not None:
        clauses.append(column <= _bindable(hi) if last else column < _bindable(hi))
    return tuple(clauses)


def _range_text(name: str, bounds: Any) -> str:
    if bounds is None:
        return "all rows"
    lo, hi, last = bounds
    return f"rows {lo!r} <= {name} {'<=' if last else '<'} {hi!r}"


def _bindable(value: Any) -> Any:
    """A division as the database driver takes it (Python scalars and datetimes)."""
    if isinstance(value, np.datetime64):
        value = pd.Timestamp(value)
    if isinstance(value, pd.Timestamp):
        return value.to_pydatetime()
    if isinstance(value, np.generic):
        return value.item()
    return value


def _divisions(what: str, label: str, name: str, meta: pd.DataFrame, stats: dict, limits: Any,
               npartitions: Any, head: Any, bytes_per_chunk: Any) -> list | None:
    """Divisions between ``limits`` (or the column's minimum and maximum): ``npartitions``
    equal ranges, or as many as make ``bytes_per_chunk`` a partition; None for no rows."""
    if limits is not None:
        try:
            lo, hi = limits
        except (TypeError, ValueError):
            raise ValueError(f"{what}: limits must be a (low, high) pair, got {limits!r}") from None
    else:
        lo, hi = stats["lo"], stats["hi"]
        if lo is None:
            return None
    datetime_index = meta.index.dtype.kind == "M"
    if datetime_index or isinstance(lo, (datetime.datetime, np.datetime64)):
        lo, hi = pd.Timestamp(lo), pd.Timestamp(hi)
        if datetime_index and getattr(meta.index.dtype, "tz", None) is not None and lo.tz is None:
            lo, hi = lo.tz_localize("UTC"), hi.tz_localize("UTC")
    elif not (isinstance(lo, numbers.Real) and isinstance(hi, numbers.Real)) or isinstance(lo, bool):
        raise TypeError(f"{what}: index_col {name!r} of the {label} holds {type(lo).__name__} values "
                        f"({lo!r} to {hi!r}); ranges are cut from numbers and datetimes only: pass divisions=, "
                        "or parse_dates=[...] for dates held as text")
    if lo > hi:
        raise ValueError(f"{what}: limits must be (low, high), got {limits!r}")
    if npartitions is None:
        if not stats.get("rows") or head is None or not len(head):
            npartitions = 1
        else:
            per_row = head.memory_usage(deep=True, index=True).sum() / len(head)
            chunk = blocksize_bytes(bytes_per_chunk, what, "bytes_per_chunk", whole=False)
            npartitions = max(1, int(round(stats["rows"] * per_row / chunk)))
    if isinstance(lo, pd.Timestamp):
        cuts = list(pd.date_range(lo, hi, periods=npartitions + 1).unique())
    elif isinstance(lo, numbers.Integral) and isinstance(hi, numbers.Integral):
        cuts = np.unique(np.linspace(int(lo), int(hi), npartitions + 1).round().astype(np.int64)).tolist()
    else:
        cuts = np.unique(np.linspace(float(lo), float(hi), npartitions + 1)).tolist()
    cuts[0], cuts[-1] = lo, hi
    return cuts if len(cuts) > 1 else [lo, hi]


def _read_part(uri: str, engine_kwargs: dict, query: Any, label: str, rows: str, index_name: str, kwargs: dict,
               kinds: dict, numpy_backend: bool, meta: pd.DataFrame, origin: str, what: str) -> pd.DataFrame:
    """Run on the workers: one range of rows, sorted by the index, in meta's dtypes."""
    with _engine(uri, engine_kwargs, what) as engine:
        df = _read(query, engine, index_name, kwargs, kinds, numpy_backend)
    if not len(df):
        return meta.copy()
    where = f"the {label} ({rows})"
    if list(df.columns) != list(meta.columns):
        raise ValueError(f"{what}: {where} gives the columns {list(df.columns)}, but {origin} gave "
                         f"{list(meta.columns)}; the table changed since the frame was built: build it again")
    for col, dtype in meta.dtypes.items():
        if df[col].dtype != dtype:
            df[col] = _cast(df[col], dtype, col, where, origin, what)
    if df.index.dtype != meta.index.dtype:
        df.index = pd.Index(_cast(df.index.to_series(), meta.index.dtype, index_name, where, origin, what),
                            name=index_name)
    if not df.index.is_monotonic_increasing:
        df = df.sort_index(kind="stable")
    return df


def _cast(values: pd.Series, dtype: Any, col: Any, where: str, origin: str, what: str) -> pd.Series:
    """``values`` in ``dtype``, or an error naming the column and the meta that fits them."""
    why, hint = None, "object"
    try:
        if dtype.kind == "M":
            cast = pd.to_datetime(values).astype(dtype)
        else:
            cast = values.astype(dtype)
            if dtype.kind in "iub" and values.isna().any():
                why, hint = "NULLs", "float64" if dtype.kind in "iu" else "object"
            elif dtype.kind in "iub" and (cast.astype(values.dtype) != values).any():
                why, hint = f"values that are not {dtype}", "float64"
    except (ValueError, TypeError, OverflowError) as exc:
        why = f"values that are not {dtype} ({exc})"
    if why is None:
        return cast
    raise ValueError(f"{what}: column {col!r} of {where} holds {why}, where {origin} said {dtype}: pass meta= "
                     f"with {col!r} as {hint} (e.g. meta=df._meta.astype({{{col!r}: {hint!r}}}))")


# --------------------------------------------------------------------------- writing


def to_sql(df: Any, name: str, uri: str, schema: str | None = None, if_exists: str = "fail", index: bool = True,
           index_label: Any = None, chunksize: int | None = None, dtype: Any = None, method: Any = None,
           compute: bool = True, parallel: bool = False, engine_kwargs: dict | None = None):
    """Write a dataframe to the table ``name`` of the database at ``uri``, by the workers.

    The first partition makes the table (``if_exists``: ``"fail"`` refuses a table that
    exists, checked here before anything is written; ``"replace"`` drops it first;
    ``"append"`` adds to it); every other partition appends after it: one after another
    (the rows keep their order), or with ``parallel=True`` all at once after the first.
    The other arguments go to ``pandas.DataFrame.to_sql``. Returns None, having written;
    with ``compute=False`` a ``Delayed`` that writes when computed (as dask's ``to_sql``).
    The first partition's values decide the columns' SQL types (no pass over all the data
    first): an object column with no value in it becomes text; say such types with
    ``dtype={"col": sqlalchemy.Boolean}``.

    >>> import tempfile, pandas as pd, xsched.dataframe as xd
    >>> df = xd.from_pandas(pd.DataFrame({"a": range(5)}), npartitions=2)
    >>> with tempfile.TemporaryDirectory() as d:
    ...     to_sql(df, "t", f"sqlite:///{d}/db.sqlite", index=False)
    ...     pd.read_sql("select sum(a) from t", f"sqlite:///{d}/db.sqlite").iloc[0, 0]
    np.int64(10)
    """
    what = "to_sql"
    if not isinstance(df, (DataFrame, Series)):
        raise TypeError(f"{what} writes an xsched DataFrame or Series, not {type(df).__name__}")
    _check_uri(uri, what, "uri")
    if not isinstance(name, str):
        raise TypeError(f"{what}: name must be the table's name (a str), not a {type(name).__name__}")
    if if_exists not in _IF_EXISTS:
        raise ValueError(f"{what}: if_exists must be one of {list(_IF_EXISTS)}, got {if_exists!r}")
    engine_kwargs = dict(engine_kwargs or {})
    sa = _sa()
    if if_exists == "fail":
        with _engine(uri, engine_kwargs, what) as engine:
            if sa.inspect(engine).has_table(name, schema=schema):
                raise ValueError(f"{what}: table {name!r} already exists in {_shown(uri)}; nothing was written: pass "
                                 "if_exists='replace' to replace it, or 'append' to add the rows to it")
    kw = dict(schema=schema, index=index, index_label=index_label, chunksize=chunksize, dtype=dtype, method=method)
    token = new_token(df._name, _shown(uri), name, if_exists, parallel, sorted(kw.items(), key=str),
                      sorted(engine_kwargs.items(), key=str))
    step = f"to-sql-{token}"
    keys = df._keys()
    args = (uri, engine_kwargs, name, if_exists, kw)
    ann = annotations_in_force()
    if parallel:
        first = chunk_key(step, (0,))
        layer = {chunk_key(step, (i,)): Task(_write_part, (None if i == 0 else Ref(first), Ref(k), *args), {},
                                             per_task(ann)) for i, k in enumerate(keys)}
    else:
        layer = chain_layer(step, range(len(keys)), keys, _write_part, args, annotations=ann)
    done = f"{step}-done"
    layer[done] = Task(_written, ([Ref(k) for k in list(layer)],), {}, per_task(ann))
    (written,) = run_writes(df._graph, step, layer, [done], compute=False)
    if compute:
        written.compute()
        return None
    return written


def _write_part(before: Any, part: Any, uri: str, engine_kwargs: dict, name: str, if_exists: str,
                kw: dict) -> int:
    """Run on the workers: one partition into the table, made by the first (``before`` is
    None) and appended to after it; returns the rows written."""
    with _engine(uri, engine_kwargs, "to_sql") as engine:
        part.to_sql(name, engine, if_exists=if_exists if before is None else "append", **kw)
    return len(part)


def _written(counts: list) -> None:
    """The end of a write: every partition written (dask's ``to_sql`` computes to None too)."""
    return None


def _to_sql_method(self, name: str, uri: str, schema: str | None = None, if_exists: str = "fail", index: bool = True,
                   index_label: Any = None, chunksize: int | None = None, dtype: Any = None, method: Any = None,
                   compute: bool = True, parallel: bool = False, engine_kwargs: dict | None = None):
    """Write to a SQL table (see ``xsched.dataframe.sql.to_sql``).

    >>> import tempfile, pandas as pd, xsched.dataframe as xd
    >>> df = xd.from_pandas(pd.DataFrame({"a": range(6)}), npartitions=3)
    >>> with tempfile.TemporaryDirectory() as d:
    ...     df.to_sql("t", f"sqlite:///{d}/db.sqlite")
    ...     read_sql_table("t", f"sqlite:///{d}/db.sqlite", "index").a.sum().compute()
    np.int64(15)
    """
    return to_sql(self, name, uri, schema=schema, if_exists=if_exists, index=index, index_label=index_label,
                  chunksize=chunksize, dtype=dtype, method=method, compute=compute, parallel=parallel,
                  engine_kwargs=engine_kwargs)


DataFrame.to_sql = _to_sql_method  # type: ignore[attr-defined]
Series.to_sql = _to_sql_method  # type: ignore[attr-defined]
