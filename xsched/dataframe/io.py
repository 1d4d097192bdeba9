"""Dataframes from objects already in memory (pandas, dicts, delayed partitions) and from a
function called once per partition (``from_map``).

Files (CSV, parquet) are in ``csv.py`` and ``parquet.py``; this module holds what they and
the other collections share: a collection from a list of partition tasks.

>>> import pandas as pd, xsched.dataframe as xd
>>> xd.from_dict({"a": [1, 2, 3]}, npartitions=2).a.sum().compute()
np.int64(6)
"""

from __future__ import annotations

import io
import math
import re
from typing import Any, Sequence

import numpy as np
import pandas as pd

from ..graph.delayed import Delayed, is_future, source_of
from ..graph.layers import LayeredGraph, annotations_in_force, chunk_key, new_token, per_task
from ..graph.spec import Ref, Task
from .core import _NO_META, DataFrame, _check_meta, checked_divisions, make_meta, new_collection
from .planner import Layer

__all__ = ["from_pandas", "from_dict", "from_delayed", "from_map", "from_tasks", "in_dtypes", "meta_dtypes",
           "check_writer_options"]


def from_tasks(name: str, tasks: Sequence[Any], meta: Any, divisions: Sequence[Any] | None = None,
               graphs: Sequence[Any] = (), project: Any = None):
    """A collection whose partition ``i`` is ``tasks[i]`` (a Task or a value), over ``graphs``.

    A reader passes ``project(columns, filters)``: the same read of fewer columns (and rows), as a list of tasks
    (the planner calls it when the expression uses fewer columns; ``planner.py``).

    >>> from xsched.graph.spec import Task
    >>> df = from_tasks("made", [Task(pd.DataFrame, ({"a": [1]},))], pd.DataFrame({"a": []}, dtype=int))
    >>> df.compute().a.tolist()
    [1]
    """
    layer: dict = {chunk_key(name, (i,)): t for i, t in enumerate(tasks)}
    meta = make_meta(meta)
    if project is not None and isinstance(meta, pd.DataFrame):
        layer = Layer(layer, "read", (), list(meta.columns), project)
    elif layer and all(type(t) is Task for t in layer.values()):
        layer = Layer(layer)  # (a partition made by a task fuses with the steps that use it: not stored apart)
    if divisions is None:
        divisions = (None,) * (len(tasks) + 1)
    return new_collection(LayeredGraph.merge(*graphs, new={name: layer}), name, make_meta(meta), divisions)


def check_writer_options(meta: Any, what: str, kwargs: dict) -> None:
    """Have pandas write the empty ``meta`` with ``kwargs`` (``meta.<what>(...)``, into
    memory), so that an option pandas refuses fails when the write is built, naming it,
    rather than in every worker's task.

    >>> import pandas as pd
    >>> check_writer_options(pd.DataFrame({"a": [1]}).iloc[:0], "to_csv", {"sep": ";"})
    >>> check_writer_options(pd.DataFrame({"a": [1]}).iloc[:0], "to_csv", {"seperator": ";"})
    Traceback (most recent call last):
    TypeError: to_csv: pandas' to_csv refuses the option seperator=';', which it does not have: NDFrame.to_csv() got an unexpected keyword argument 'seperator'
    """
    try:
        getattr(meta, what)(io.BytesIO(), **kwargs)
    except (TypeError, ValueError, KeyError) as exc:
        raise type(exc)(f"{what}: pandas' {what} refuses {refused_options(exc, kwargs)}: {exc}") from exc


def refused_options(exc: BaseException, kwargs: dict) -> str:
    """The options a writer refused, in words: the one it names as unknown, else all given.

    >>> refused_options(TypeError("f() got an unexpected keyword argument 'x'"), {"x": 1, "index": True})
    'the option x=1, which it does not have'
    """
    match = re.search(r"unexpected keyword argument '(\w+)'", str(exc))
    if match and match.group(1) in kwargs:
        return f"the option {match.group(1)}={kwargs[match.group(1)]!r}, which it does not have"
    return "these options (" + ", ".join(f"{k}={v!r}" for k, v in kwargs.items()) + ")"


def meta_dtypes(meta: Any) -> list:
    """``(column, dtype)`` of a meta, column None for a Series'."""
    return list(meta.dtypes.items()) if isinstance(meta, pd.DataFrame) else [(None, meta.dtype)]


def in_dtypes(df: Any, dtypes: Any, misfit: Any) -> Any:
    """A piece just read (from files written apart, which may differ a little) in the
    ``(column, dtype)`` pairs meta gives (``meta_dtypes``); a categorical keeps the categories
    it read. ``misfit(column, have, want, exc)`` words the error of a column that does not
    convert.

    >>> in_dtypes(pd.DataFrame({"a": [1, 2]}), [("a", np.dtype("float64"))], None).a.tolist()
    [1.0, 2.0]
    """
    for col, want in dtypes:
        have = df.dtype if col is None else df[col].dtype
        if have == want or isinstance(want, pd.CategoricalDtype):
            continue
        values = df if col is None else df[col]
        try:
            cast = values.astype(want)
            _unchanged(values, cast, want)
        except (ValueError, TypeError, OverflowError) as exc:
            raise ValueError(misfit(col, have, want, exc)) from exc
        if col is None:
            df = cast
        else:
            df[col] = cast
    return df


def _unchanged(values: Any, cast: Any, want: Any) -> None:
    """A ValueError when casting numbers to the integers (or booleans) ``want`` changed one:
    3.5 cut to 3, or 3e9 wrapped round in int32 (NumPy's cast says nothing).

    >>> _unchanged(pd.Series([3.5]), pd.Series([3]), np.dtype("int64"))
    Traceback (most recent call last):
    ...
    ValueError: the value 3.5 would become 3
    """
    have = getattr(values, "dtype", None)
    times = (isinstance(want, (np.dtype, pd.DatetimeTZDtype)) and isinstance(have, (np.dtype, pd.DatetimeTZDtype))
             and want.kind in "mM" and have.kind == want.kind)  # (NumPy's or pandas' with a zone)
    if times:
        lost = np.asarray((cast.astype(have) != values) & values.notna())  # (a coarser unit: sub-units cut off)
        if lost.any():
            i = int(np.flatnonzero(lost)[0])
            raise ValueError(f"the value {values.iloc[i]} would become {cast.iloc[i]} (the first file's unit, "
                             f"{getattr(want, 'unit', None) or np.datetime_data(want)[0]}, is coarser)")
    if isinstance(want, np.dtype) and want.kind in "iub" and have == object and values.isna().any():
        raise ValueError(f"a missing value would become {cast[values.isna()].tolist()[0]!r}")
    if not (isinstance(want, np.dtype) and want.kind in "iub" and isinstance(have, np.dtype) and have.kind in "iufb"):
        return
    with np.errstate(all="ignore"):  # (a cast back undoes a wrap between signed and unsigned: signs say it)
        changed = np.asarray((cast.astype(have) != values) | ((cast < 0) != (values < 0)))
    if changed.any():
        at = int(np.flatnonzero(changed)[0])
        was, now = (getattr(v, "item", lambda v=v: v)() for v in (values.iloc[at], cast.iloc[at]))
        raise ValueError(f"the value {was!r} would become {now!r}")


def from_pandas(data: pd.DataFrame | pd.Series, npartitions: int | None = None,
                chunksize: int | None = None, sort: bool = True):
    """Split a pandas object into partitions of about equal length.

    With ``sort=True`` (the default) the object is sorted by its index first, so the
    divisions are known and ``loc``, joins on the index and ``set_index(sorted=True)`` need
    no shuffle.

    >>> import pandas as pd, xsched.dataframe as xd
    >>> df = xd.from_pandas(pd.DataFrame({"a": range(10)}), npartitions=3)
    >>> df.divisions
    (0, 3, 7, 9)
    """
    if not isinstance(data, (pd.DataFrame, pd.Series)):
        raise TypeError(f"from_pandas takes a pandas DataFrame or Series, not {type(data).__name__}; "
                        "for a dict use from_dict, for other objects build a pandas object first")
    if (npartitions is None) == (chunksize is None):
        raise ValueError("from_pandas needs exactly one of npartitions= or chunksize=")
    n = len(data)
    if chunksize is not None:
        if chunksize < 1:
            raise ValueError(f"from_pandas: chunksize must be positive, got {chunksize}")
        npartitions = max(1, math.ceil(n / chunksize))
    if npartitions < 1:
        raise ValueError(f"from_pandas: npartitions must be positive, got {npartitions}")
    if sort and not data.index.is_monotonic_increasing:
        data = data.sort_index()
    # (a MultiIndex has no divisions here: its labels are tuples, which loc and joins do not take)
    sorted_index = sort and data.index.is_monotonic_increasing and n > 0 and data.index.nlevels == 1
    bounds = _bounds(data.index, int(npartitions), sorted_index)
    token = new_token(data, npartitions, sort)
    name = f"from-pandas-{token}"
    ann = annotations_in_force()
    tasks = [data.iloc[lo:hi] if not ann else Task(_identity, (data.iloc[lo:hi],), {}, per_task(ann))
             for lo, hi in zip(bounds[:-1], bounds[1:])]
    if sorted_index:
        index = data.index
        divisions = tuple(index[lo] for lo in bounds[:-1]) + (index[n - 1],)
    else:
        divisions = (None,) * (len(tasks) + 1)
    return from_tasks(name, tasks, data.iloc[:0], divisions)


def _bounds(index: pd.Index, npartitions: int, sorted_index: bool) -> list[int]:
    """Row positions splitting ``index`` into about equal parts, never inside a run of
    equal labels when the index is sorted (so divisions stay exclusive)."""
    n = len(index)
    raw = np.linspace(0, n, min(npartitions, max(n, 1)) + 1).round().astype(int).tolist()
    if not sorted_index:
        return raw
    out = [0]
    for b in raw[1:-1]:
        b = int(index.searchsorted(index[b], side="left")) if b < n else n
        if b > out[-1]:
            out.append(b)
    out.append(n)
    return out


def _identity(x: Any) -> Any:
    return x


def from_dict(data: dict, npartitions: int, orient: str = "columns", dtype: Any = None,
              columns: Any = None):
    """A dataframe from a dict of columns (as ``pandas.DataFrame.from_dict``), partitioned.

    >>> import xsched.dataframe as xd
    >>> xd.from_dict({"a": [1, 2], "b": ["x", "y"]}, npartitions=1).compute().shape
    (2, 2)
    """
    frame = pd.DataFrame.from_dict(data, orient=orient, dtype=dtype, columns=columns)
    return from_pandas(frame, npartitions=npartitions)


def _from_dict_method(cls: type, data: dict, *, npartitions: int = 1, orient: str = "columns", dtype: Any = None,
                      columns: Any = None):
    """``xd.DataFrame.from_dict(data, npartitions=...)``, pandas' constructor (see ``from_dict``).

    >>> import xsched.dataframe as xd
    >>> xd.DataFrame.from_dict({"a": [1, 2, 3]}, npartitions=2).npartitions
    2
    """
    return from_dict(data, npartitions, orient=orient, dtype=dtype, columns=columns)


DataFrame.from_dict = classmethod(_from_dict_method)  # type: ignore[attr-defined]


def from_delayed(dfs: Sequence[Delayed], meta: Any = _NO_META, divisions: Sequence[Any] | None = None,
                 verify_meta: bool = True):
    """A dataframe whose partitions are the values of ``Delayed`` objects (or futures).

    Without ``meta`` the first partition is computed to learn the schema; give it to build
    the collection without computing anything. With ``verify_meta`` each partition's type,
    columns, dtypes (and a Series' name) are checked against meta when it is computed, and
    a mismatch names the partition. One Delayed alone is one partition.

    >>> import pandas as pd, xsched, xsched.dataframe as xd
    >>> parts = [xsched.delayed(pd.DataFrame)({"a": [i]}) for i in range(3)]
    >>> xd.from_delayed(parts, meta={"a": "int64"}).a.sum().compute()
    np.int64(3)
    """
    dfs = [dfs] if isinstance(dfs, Delayed) or is_future(dfs) else list(dfs)
    if not dfs:
        raise ValueError("from_delayed needs at least one partition")
    if isinstance(divisions, str):
        raise ValueError(f"from_delayed: divisions={divisions!r}: give the values themselves, one more than the "
                         "partitions, sorted (or None)")
    keys = []
    graphs = []
    for d in dfs:
        key, graph = source_of(d, "from_delayed", "for pandas objects use from_pandas")
        keys.append(key)
        graphs.append(graph)
    if meta is _NO_META:
        meta = make_meta(dfs[0].compute() if isinstance(dfs[0], Delayed) else dfs[0].result())
    meta = make_meta(meta)
    name = f"from-delayed-{new_token(keys)}"
    ann = annotations_in_force()
    tasks = [Task(_check_meta, (Ref(k), meta, "from_delayed", i, True), {}, per_task(ann)) if verify_meta
             else Task(_identity, (Ref(k),), {}, per_task(ann)) for i, k in enumerate(keys)]
    if divisions is not None and len(divisions) != len(keys) + 1:
        raise ValueError(f"from_delayed: {len(keys)} partitions need {len(keys) + 1} divisions, "
                         f"got {len(divisions)}")
    if divisions is not None and None not in divisions:
        checked_divisions("from_delayed", divisions)
    return from_tasks(name, tasks, meta, divisions, graphs)


def from_map(func: Any, *iterables: Any, args: tuple | None = None, meta: Any = _NO_META,
             divisions: Sequence[Any] | None = None, label: str | None = None, enforce_metadata: bool = True,
             **kwargs: Any):
    """A dataframe of one partition per element: partition ``i`` is ``func(a[i], b[i], ...,
    *args, **kwargs)`` over the ``iterables`` (zipped; they must be as long), run on the
    workers. The way to read any source a function can read: a list of files, of URLs, of
    database queries.

    Without ``meta`` ``func`` is called here on the first element to learn the columns and
    dtypes; give it to build the frame without running anything. With
    ``enforce_metadata`` each partition is checked against it when computed.

    >>> import pandas as pd, xsched.dataframe as xd
    >>> def load(day, scale):
    ...     return pd.DataFrame({"day": [day] * 3, "v": [scale * i for i in range(3)]})
    >>> df = xd.from_map(load, [1, 2, 3], args=(10,))
    >>> df.npartitions, int(df.v.sum().compute())
    (3, 90)
    """
    if not callable(func):
        raise TypeError(f"from_map: expected a function first, got {func!r} of type {type(func).__name__}")
    if not iterables:
        raise ValueError("from_map needs at least one iterable: a partition per element")
    columns = [list(it) for it in iterables]
    n = len(columns[0])
    if not n or any(len(c) != n for c in columns):
        raise ValueError(f"from_map: the iterables must be as long and not empty, got lengths "
                         f"{[len(c) for c in columns]}")
    args = tuple(args or ())
    if divisions is not None and len(divisions) != n + 1:
        raise ValueError(f"from_map: {n} partitions need {n + 1} divisions, got {len(divisions)}")
    if meta is _NO_META:
        meta = func(*(c[0] for c in columns), *args, **kwargs)
    meta = make_meta(meta)
    name = f"{label or 'from-map'}-{new_token(func, columns, args, sorted(kwargs.items(), key=str))}"
    ann = annotations_in_force()
    tasks = []
    for i, items in enumerate(zip(*columns)):
        call = Task(func, tuple(items) + args, dict(kwargs), per_task(ann))
        tasks.append(Task(_check_meta, (call, meta, f"from_map({getattr(func, '__name__', 'func')})", i), {},
                          per_task(ann)) if enforce_metadata else call)
    return from_tasks(name, tasks, meta, divisions)
