"""Stand-ins: two made-up rows of an empty pandas object, on which pandas itself runs an
operation when it is built, to learn its result's columns and dtypes (its *meta*) and to
raise pandas' own refusal at once rather than inside a task.

An ``object`` column says nothing of what it holds: text, or numbers and None (read from
mixed data, or made by ``where``). Its stand-in holds text; ``on_stand_ins`` runs an
operation again with numbers there when the text fails, so that only what neither could do
is refused when built.
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import Any, Callable, TypeVar

import numpy as np
import pandas as pd

T = TypeVar("T")

#: within ``on_stand_ins``: {"numbers": fill object columns with numbers, "objects": one was made}
_OBJECTS: ContextVar[dict | None] = ContextVar("xsched_stand_in_objects", default=None)


def on_stand_ins(compute: Callable[[], T]) -> T:
    """``compute()``, which runs pandas on stand-ins (``_nonempty``); when it fails and a
    stand-in had an ``object`` column, once more with numbers in those columns. The first
    failure is raised when both fail.

    >>> s = pd.Series([], dtype=object)
    >>> on_stand_ins(lambda: (_nonempty(s) + 1).dtype)
    dtype('O')
    """
    state = {"numbers": False, "objects": False}
    token = _OBJECTS.set(state)
    try:
        try:
            return compute()
        except Exception as first:
            if not state["objects"]:
                raise
            state["numbers"] = True
            try:
                return compute()
            except Exception:
                raise first from None
    finally:
        _OBJECTS.reset(token)


def trying_stand_ins() -> bool:
    """Whether ``on_stand_ins`` is running: a stand-in kept from before would miss its try."""
    return _OBJECTS.get() is not None


def _object_values(n: int) -> Any:
    state = _OBJECTS.get()
    if state is not None:
        state["objects"] = True
        if state["numbers"]:
            return pd.array(list(range(1, n + 1)), dtype=object)
    return pd.array(["foo", "bar"][:n] * (n // 2 + 1), dtype=object)[:n]


def _fake_values(dtype: Any, n: int = 2) -> Any:
    """``n`` made-up values of ``dtype``, for running a function on a stand-in partition."""
    if isinstance(dtype, pd.CategoricalDtype):
        cats = dtype.categories
        values = [cats[0]] * n if len(cats) else [None] * n
        return pd.Categorical(values, categories=cats, ordered=dtype.ordered)
    if pd.api.types.is_bool_dtype(dtype):
        return pd.array([True, False][:n] * (n // 2 + 1), dtype=dtype)[:n]
    if pd.api.types.is_datetime64_any_dtype(dtype):
        return pd.array(pd.date_range("2000-01-01", periods=n, tz=getattr(dtype, "tz", None)), dtype=dtype)
    if pd.api.types.is_timedelta64_dtype(dtype):
        return pd.array(pd.to_timedelta(range(1, n + 1), unit="s"), dtype=dtype)
    if isinstance(dtype, pd.ArrowDtype):
        made = _arrow_values(dtype, n)
        if made is not None:
            return made
    if isinstance(dtype, pd.PeriodDtype):
        return pd.array(pd.period_range("2000-01-01", periods=n, freq=dtype.freq), dtype=dtype)
    if isinstance(dtype, pd.IntervalDtype):
        return pd.array(pd.interval_range(0, n, closed=dtype.closed), dtype=dtype)
    if pd.api.types.is_numeric_dtype(dtype):
        return pd.array(range(1, n + 1), dtype=dtype)
    if dtype == object:
        return _object_values(n)
    if isinstance(dtype, pd.StringDtype) or pd.api.types.is_string_dtype(dtype):
        return pd.array(["foo", "bar"][:n] * (n // 2 + 1), dtype=dtype)[:n]
    return pd.array(["foo"] * n, dtype=dtype)


def _arrow_values(dtype: pd.ArrowDtype, n: int) -> Any:
    """Values of the pyarrow types pandas cannot make from numbers or words: durations (one
    second, two...), and, where no value is at hand (lists, structs, maps), missing
    ones of the type itself. None for the rest, made as pandas' own dtypes are.

    >>> import pyarrow as pa
    >>> list(_arrow_values(pd.ArrowDtype(pa.duration("ms")), 2))
    [Timedelta('0 days 00:00:01'), Timedelta('0 days 00:00:02')]
    >>> _arrow_values(pd.ArrowDtype(pa.list_(pa.int64())), 2).dtype
    list<item: int64>[pyarrow]
    """
    import pyarrow as pa

    kind = dtype.pyarrow_dtype
    if pa.types.is_duration(kind):
        seconds = pa.array([1_000_000_000 * i for i in range(1, n + 1)], type=pa.duration("ns"))
        return pd.array(seconds.cast(kind), dtype=dtype)
    if pa.types.is_nested(kind) or pa.types.is_null(kind):
        return pd.array(pa.nulls(n, type=kind), dtype=dtype)
    return None


def _nonempty_index(index: pd.Index) -> pd.Index:
    if isinstance(index, pd.MultiIndex):
        levels = [_nonempty_index(level) for level in index.levels]
        return pd.MultiIndex.from_arrays(levels, names=index.names)
    if isinstance(index, pd.RangeIndex):
        return pd.RangeIndex(2, name=index.name)
    return pd.Index(_fake_values(index.dtype), name=index.name, dtype=index.dtype)


def _nonempty(meta: Any) -> Any:
    """A two-row stand-in of an empty pandas object, with its dtypes and names (dtypes passed
    on, since pandas would infer ``str`` for the made-up values of an ``object`` column)."""
    if isinstance(meta, pd.DataFrame):
        index = _nonempty_index(meta.index)
        data = {i: pd.Series(_fake_values(dtype), index=index, dtype=dtype) for i, dtype in enumerate(meta.dtypes)}
        out = pd.DataFrame(data, index=index)
        out.columns = meta.columns
        return out
    if isinstance(meta, pd.Series):
        return pd.Series(_fake_values(meta.dtype), index=_nonempty_index(meta.index), name=meta.name,
                         dtype=meta.dtype)
    if isinstance(meta, pd.Index):
        return _nonempty_index(meta)
    return meta


def make_meta(obj: Any) -> Any:
    """The empty version of a pandas object (a scalar stays a scalar).

    >>> make_meta(pd.DataFrame({"a": [1, 2]})).dtypes.to_dict()
    {'a': dtype('int64')}
    >>> make_meta(("n", pd.Int64Dtype())).dtype
    Int64Dtype()
    >>> make_meta([("b", "f8"), ("a", "i8")]).dtypes.to_dict()
    {'b': dtype('float64'), 'a': dtype('int64')}
    """
    if isinstance(obj, (pd.DataFrame, pd.Series)):
        return obj.iloc[:0]
    if isinstance(obj, pd.Index):
        return obj[:0]
    if isinstance(obj, dict) and obj and all(isinstance(v, _DTYPE_SPELLINGS) for v in obj.values()):
        return pd.DataFrame({k: pd.Series([], dtype=v) for k, v in obj.items()})
    if isinstance(obj, tuple) and len(obj) == 2 and isinstance(obj[1], _DTYPE_SPELLINGS):
        return pd.Series([], dtype=obj[1], name=obj[0])
    if isinstance(obj, list) and obj and all(isinstance(c, tuple) and len(c) == 2
                                             and isinstance(c[1], _DTYPE_SPELLINGS) for c in obj):
        return make_meta(dict(obj))  # ([(column, dtype), ...]: the columns in that order)
    return obj


#: what names a dtype in a meta given as ``{column: dtype}`` or ``(name, dtype)``: pandas'
#: own dtypes (``pd.StringDtype()``, ``pd.CategoricalDtype(...)``, ``pd.Int64Dtype()``) too
_DTYPE_SPELLINGS = (str, np.dtype, type, pd.api.extensions.ExtensionDtype)
