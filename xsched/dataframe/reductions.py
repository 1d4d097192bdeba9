"""Reductions over partitions (sum, mean, var, count, nunique, value_counts...) as trees.

Each partition is reduced to a small *partial* (``<op>-chunk``), partials are merged
``split_every`` at a time (``<op>-combine``), and the last merge gives the result
(``<op>-agg``), so no worker ever holds more than ``split_every`` partials at once.

Partials: ``sum``/``count``/``min``/``max``/``any``/``all`` keep pandas' own result of the
partition (a scalar for a Series, a Series per column for a DataFrame; an empty partition
gives no partial to ``min``/``max``, so empty partitions never change a dtype; under
``min_count`` the partial is the result without it and the count, as ``min_count`` is about
the rows of all partitions); ``mean``/``var``/``std`` keep ``(count, sum, mean, M2)`` per
column in float64 (datetimes and timedeltas as their integer ticks): the mean is the sum
over the count, as in pandas, and M2 is merged with the pairwise formula of Chan, Golub &
LeVeque (accurate when the mean is large compared with the spread).

>>> import pandas as pd, xsched.dataframe as xd
>>> df = xd.from_pandas(pd.DataFrame({"a": [1.0, 2, 3, 4], "b": [1, 1, 2, 2]}), npartitions=3)
>>> df.sum().compute().to_dict()
{'a': 10.0, 'b': 6.0}
>>> round(float(df.a.std().compute()), 6) == round(float(pd.Series([1.0, 2, 3, 4]).std()), 6)
True
"""

from __future__ import annotations

import numbers
from contextvars import ContextVar
from functools import partial
from typing import Any, Callable

import numpy as np
import pandas as pd

from ..graph.layers import LayeredGraph, annotations_in_force, chunk_key, new_token, per_task
from ..graph.order import gc_paused
from ..graph.partials import combine_levels
from ..graph.spec import Ref, Task
from .core import DataFrame, Scalar, Series, _Frame, new_collection
from .pieces import UNKNOWN_CATEGORIES, _unify_categoricals
from .planner import Reduction, joint_aggregate, joint_tree
from .standin import _nonempty, make_meta, on_stand_ins

__all__ = ["reduction", "joint", "DEFAULT_SPLIT_EVERY"]

#: Partials merged per task when ``split_every`` is not given.
DEFAULT_SPLIT_EVERY = 8

_EMPTY = "__xsched_empty_partition__"


def asking() -> bool:
    """Whether reductions are being asked for a joint tree (``joint``), not built."""
    return _ASKED.get() is not None


def reduction(frame: _Frame, chunk: Callable, aggregate: Callable, combine: Callable | None = None,
              meta: Any = None, token: str = "reduction", split_every: int | None = None,
              chunk_kwargs: dict | None = None, aggregate_kwargs: dict | None = None):
    """A tree reduction: ``chunk(part)`` per partition, ``combine(list)`` per group of
    ``split_every`` partials, ``aggregate(list)`` at the root.

    The result is a ``Scalar`` when ``meta`` is not a pandas object, else a collection of
    one partition.

    >>> import pandas as pd, xsched.dataframe as xd
    >>> from xsched.dataframe.reductions import reduction
    >>> s = xd.from_pandas(pd.Series(range(10)), npartitions=4)
    >>> reduction(s, lambda p: p.max() - p.min(), max, meta=0).compute()
    np.int64(2)
    """
    split_every = split_every or DEFAULT_SPLIT_EVERY
    if split_every < 2:
        raise ValueError(f"split_every must be at least 2, got {split_every}")
    asked = _ASKED.get()
    if asked is not None:  # (``joint`` builds it, with the others it is asked for)
        asked.append((frame, chunk, combine or aggregate, aggregate, dict(chunk_kwargs or {}),
                      dict(aggregate_kwargs or {}), meta, token, split_every))
        return _Asked(len(asked) - 1)
    with gc_paused():  # (collections triggered by the new tasks would scan the whole graph)
        return _tree(frame, chunk, aggregate, combine or aggregate, meta, token, split_every, chunk_kwargs,
                     aggregate_kwargs)


def _tree(frame: _Frame, chunk: Callable, aggregate: Callable, combine: Callable, meta: Any, token: str,
          split_every: int, chunk_kwargs: dict | None, aggregate_kwargs: dict | None):
    """``reduction``'s layers and result."""
    ann = annotations_in_force()
    tok = new_token(frame._name, chunk, combine, aggregate, split_every, chunk_kwargs, aggregate_kwargs)
    layers: dict[str, dict] = {}
    chunk_name = f"{token}-chunk-{tok}"
    first = Reduction({chunk_key(chunk_name, (i,)): Task(chunk, (Ref(k),), dict(chunk_kwargs or {}), per_task(ann))
                       for i, k in enumerate(frame._keys())}, chunk, dict(chunk_kwargs or {}), combine, aggregate,
                      dict(aggregate_kwargs or {}), split_every, [frame._name])
    layers[chunk_name] = first
    keys = combine_levels(layers, list(layers[chunk_name]), token, tok, combine, split_every, annotations=ann)
    agg_name = f"{token}-agg-{tok}"
    first.tree = [n for n in layers if n != chunk_name]  # (the combine levels: planner.fuse_reductions)
    first.out = agg_name
    layers[agg_name] = {chunk_key(agg_name, (0,)): Task(aggregate, ([Ref(k) for k in keys],),
                                                        dict(aggregate_kwargs or {}), per_task(ann))}
    return _result(LayeredGraph.merge(frame._graph, new=layers), agg_name, meta)


def _result(graph: LayeredGraph, name: str, meta: Any):
    """A reduction's result: a ``Scalar``, or a collection of one partition for pandas' meta."""
    if isinstance(meta, (pd.DataFrame, pd.Series, pd.Index)):
        return new_collection(graph, name, make_meta(meta), (None, None))
    return Scalar(graph, name, meta)


# --------------------------------------------------------------------------- several at once

#: While ``joint`` collects: the reductions asked for, each as ``reduction``'s arguments.
_ASKED: ContextVar[list | None] = ContextVar("xsched_asked_reductions", default=None)


class _Asked:
    """What ``reduction`` gives while ``joint`` collects: which of the reductions asked for."""

    __slots__ = ("index",)

    def __init__(self, index: int) -> None:
        self.index = index


def joint(frame: _Frame, columns: list, build: Callable) -> list[list]:
    """The reductions ``build(collection, column)`` makes of each of ``columns`` of ``frame``
    (``[None]``: of ``frame`` itself), built at once as one tree: a task per partition
    computes every partial, each level merges them all. ``planner.fuse_reductions`` makes
    the same of trees already built; building it directly spares building one tree per
    column and statistic (a ``describe`` of 20 columns over 10,000 partitions: one tree, not 120).

    ``build`` gets a column as a Series without tasks of its own (its meta is the column's)
    and the column's label, and returns a list of reductions of it. A column whose list
    holds anything else (an operation on the column, then a reduction) is built as asked,
    from the column. A label that names several columns (pandas allows it) stands for the
    next of them each time it is given. Returns, per column, the list ``build`` returned
    with each reduction's result in place.

    >>> import pandas as pd, xsched.dataframe as xd
    >>> df = xd.from_pandas(pd.DataFrame({"a": [1, 2, 3], "b": [4.0, 5, 6]}), npartitions=2)
    >>> [[float(r.compute()) for r in pair] for pair in joint(df, ["a", "b"], lambda s, _: [s.sum(), s.max()])]
    [[6.0, 3.0], [15.0, 6.0]]
    """
    asked: list = []
    pieces: list = []  # (per column: (how the chunk picks it, its reductions, or None: built as asked))
    places: dict = {}  # (a label naming several columns: their positions not given yet)
    if isinstance(frame, DataFrame) and not frame._meta.columns.is_unique:
        for i, c in enumerate(frame._meta.columns):
            places.setdefault(c, []).append(i)
        places = {c: where for c, where in places.items() if len(where) > 1}
    reset = _ASKED.set(asked)
    try:
        for column in columns:
            if column is None:
                pick, meta = (0, None), frame._meta
            elif column in places and places[column]:
                position = places[column].pop(0)
                pick, meta = (2, position), frame._meta.iloc[:, position]
            else:
                pick, meta = (1, column), frame._meta[column]
            view = frame if column is None else new_collection(
                LayeredGraph({}), f"column-{new_token(frame._name, pick)}", meta, frame.divisions)
            got = list(build(view, column))
            pieces.append((pick, got) if all(isinstance(p, _Asked) and asked[p.index][0] is view for p in got)
                          else (pick, None))  # (built below from the column itself)
    finally:
        _ASKED.reset(reset)
    out = [got if got is not None else build(_column(frame, pick), column)
           for column, (pick, got) in zip(columns, pieces)]
    joined = [(pick, asked[p.index]) for pick, got in pieces if got is not None for p in got]
    trees: dict[int, list[int]] = {}  # (a tree per split_every asked for)
    for i, (_, spec) in enumerate(joined):
        trees.setdefault(spec[8], []).append(i)
    results: list = [None] * len(joined)
    with gc_paused():  # (collections triggered by the new tasks would scan the whole graph)
        for split, members in trees.items():
            for i, result in zip(members, _joint_tree(frame, [joined[i] for i in members], split)):
                results[i] = result
    found = iter(results)
    return [got if pieces[i][1] is None else [next(found) for _ in got] for i, got in enumerate(out)]


def _column(frame: _Frame, pick: tuple) -> _Frame:
    """The column ``pick`` names (``joint``'s): the frame itself, a label, or a position."""
    how, column = pick
    return frame if how == 0 else frame[column] if how == 1 else frame.iloc[:, column]


def _joint_tree(frame: _Frame, specs: list, split: int) -> list:
    """``joint``'s tree: ``specs`` are ``(how the chunk picks its column, reduction's
    arguments)``; one result each."""
    labels = list(dict.fromkeys(c for (how, c), _ in specs if how == 1))
    used = labels if all(how == 1 for (how, _), _ in specs) else None  # (for the planner: the columns read)
    ann = annotations_in_force()
    steps = tuple((how, c, chunk, ck) for (how, c), (_, chunk, _, _, ck, _, _, _, _) in specs)
    tok = new_token(frame._name, split, *[(pick, chunk, combine, aggregate, ck, ak)
                                           for pick, (_, chunk, combine, aggregate, ck, ak, _, _, _) in specs])
    layers, top = joint_tree(tok, frame._keys(), steps, tuple(spec[2] for _, spec in specs), split, ann,
                             [frame._name], used)
    tree = LayeredGraph.merge(frame._graph, new=layers)
    out = []
    for j, (_, (_, _, _, aggregate, _, ak, meta, token, _)) in enumerate(specs):
        name = f"{token}-agg-{new_token(tok, j)}"
        task = Task(joint_aggregate, ([Ref(k) for k in top], j, aggregate, ak), {}, per_task(ann))
        out.append(_result(LayeredGraph.merge(tree, new={name: {chunk_key(name, (0,)): task}}), name, meta))
    return out


def _meta_of(frame: _Frame, method: str, **kwargs: Any) -> Any:
    """What pandas' own ``method`` gives on a stand-in: the result's type, dtype and labels;
    raises at once when pandas refuses (e.g. the mean of a string column)."""
    try:
        out = on_stand_ins(lambda: getattr(_nonempty(frame._meta), method)(**kwargs))
    except Exception as exc:
        raise TypeError(f"{method}() of this {type(frame).__name__} fails in pandas: "
                        f"{type(exc).__name__}: {exc}") from exc
    return make_meta(out) if isinstance(out, (pd.Series, pd.DataFrame)) else out


# --------------------------------------------------------------------------- pandas' own reductions


#: ``ordered`` of an ordered categorical Series whose categories are unknown: each partition's
#: min or max travels with its own categories, which the merge compares in (``_ranked``).
_OWN_ORDER = "own categories"


def _chunk_method(part: Any, method: str, kwargs: dict, own_order: bool = False) -> Any:
    if method in ("min", "max") and len(part) == 0:
        return _EMPTY
    if own_order:  # (a one-row categorical of this partition's categories)
        return pd.Series(pd.Categorical([getattr(part, method)(**kwargs)], dtype=part.dtype))
    if kwargs.get("min_count", 0) > 0:
        # ``min_count`` is about the rows of all partitions: keep the partition's result
        # without it and its count of values, and judge the total count at the end
        count = part.count(**{k: v for k, v in kwargs.items() if k == "numeric_only"})
        return getattr(part, method)(**{**kwargs, "min_count": 0}), count
    return getattr(part, method)(**kwargs)


def _merge_method(partials: list, method: str, merge: str, kwargs: dict, ordered: Any = None) -> Any:
    partials = [p for p in partials if not (isinstance(p, str) and p == _EMPTY)]
    if not partials:
        return _EMPTY
    if isinstance(partials[0], tuple):  # (result, count) under ``min_count``
        return (_merge_method([p[0] for p in partials], method, merge, kwargs, ordered),
                _merge_method([p[1] for p in partials], "count", "sum", {}))
    if isinstance(ordered, str) and ordered == _OWN_ORDER:
        return _ranked(partials, method, merge, kwargs)
    # (per column of a DataFrame: a row per partial)
    rows = pd.DataFrame(partials) if isinstance(partials[0], pd.Series) else pd.Series(partials)
    if ordered is not None:  # (ordered categoricals' partials compare in their categories' order)
        rows = rows.astype(ordered if isinstance(rows, pd.Series) else
                           {c: d for c, d in ordered.items() if c in rows.columns})
    objects = isinstance(partials[0], pd.Series) and partials[0].dtype == object
    if objects and method in ("sum", "prod"):
        # (partials of a frame with an object column: summed as objects, so that the result is
        # pandas' own -- an object Series whose values keep their kinds, 7 and 10.0)
        rows = pd.DataFrame(partials, dtype=object)
    if method in ("any", "all") and rows.isna().to_numpy().any():
        rows = rows.astype("boolean")  # (a nullable column's NA, merged by pandas' three-valued logic)
    return getattr(rows, merge)(**kwargs)


def _ranked(partials: list, method: str, merge: str, kwargs: dict) -> pd.Series:
    """The min or max of partitions' one-row categoricals (``_OWN_ORDER``), compared in their
    categories' order: the same in every partition, or the order is not the data's to tell."""
    first = partials[0].dtype
    for p in partials[1:]:
        if not (p.dtype.categories.equals(first.categories) and p.dtype.ordered == first.ordered):
            raise ValueError(f"{method}() of an ordered categorical whose partitions hold other categories "
                             f"({list(first.categories)[:6]} and {list(p.dtype.categories)[:6]}): which comes "
                             "first is not known; give every partition the same ordered categories first, "
                             "s.cat.set_categories([...], ordered=True)")
    value = getattr(pd.concat(partials, ignore_index=True), merge)(**kwargs)
    return pd.Series(pd.Categorical([value], dtype=first))


def _final_method(partials: list, method: str, merge: str, kwargs: dict, meta: Any,
                  min_count: int = 0, out_dtype: Any = None, ordered: Any = None) -> Any:
    if isinstance(ordered, str) and ordered == _OWN_ORDER:
        out = _merge_method(partials, method, merge, kwargs, ordered)
        return getattr(_empty_like(meta), method)() if isinstance(out, str) else out.iloc[0]
    out = _as_dtype(_merge_method(partials, method, merge, kwargs, ordered), out_dtype)
    if isinstance(out, str) and out == _EMPTY:
        return getattr(_empty_like(meta), method)()
    if isinstance(meta, pd.Series) and pd.api.types.is_scalar(out):
        out = missing_as_pandas(out, meta.dtype)
    if isinstance(out, tuple):
        out, count = out
        if isinstance(out, pd.Series):
            return out.mask(count < min_count)
        if count < min_count:  # pandas' own missing value for this dtype (NaN, or NA)
            return getattr(_empty_like(meta), method)(min_count=min_count)
    return out


def _as_dtype(out: Any, dtype: Any) -> Any:
    """A per-column result in pandas' nullable ``dtype`` (``Float64`` for a frame of ``Int64``
    and ``Float64`` columns) where the merged partials came out as NumPy's."""
    if dtype is None or not isinstance(out, pd.Series) or out.dtype == dtype:
        return out
    try:
        return out.astype(dtype)
    except (TypeError, ValueError):
        return out


def _extension_dtype(meta: Any) -> Any:
    """The result's dtype when it is one of pandas' extension dtypes (else None: NumPy's stay)."""
    dtype = getattr(meta, "dtype", None) if isinstance(meta, pd.Series) else None
    return dtype if isinstance(dtype, pd.api.extensions.ExtensionDtype) else None


def _object_dtype(meta: Any) -> Any:
    """``object`` where pandas gives a frame's statistics as objects (a frame with an object
    column among numbers), else None."""
    return object if isinstance(meta, pd.Series) and meta.dtype == object else None


def _empty_like(meta: Any) -> Any:
    return meta.iloc[:0] if hasattr(meta, "iloc") else pd.Series([], dtype=object)


_MERGE = {"sum": "sum", "prod": "prod", "count": "sum", "min": "min", "max": "max", "any": "any", "all": "all"}


def _simple(frame: _Frame, method: str, split_every: int | None, **kwargs: Any):
    meta = _meta_of(frame, method, **kwargs)
    merge = _MERGE[method]
    merge_kwargs = {k: v for k, v in kwargs.items() if k in ("skipna",) and method not in ("count",)}
    ordered = _ordered_categories(frame._meta) if method in ("min", "max") else None
    own = isinstance(ordered, pd.CategoricalDtype) and not _known_categories(frame._meta)
    if isinstance(ordered, dict) and not kwargs.get("numeric_only"):  # (numeric_only leaves categoricals out)
        unknown = [c for c, d in ordered.items() if not _known_categories(frame._meta[c])]
        if unknown:
            raise ValueError(f"{method}() of the frame: column {unknown[0]!r} is an ordered categorical whose "
                             f"categories are unknown (each partition has its own); take df[{unknown[0]!r}]."
                             f"{method}() on its own, or make them known first (.cat.as_known())")
    ordered = _OWN_ORDER if own else ordered
    combine = partial(_merge_method, method=method, merge=merge, kwargs=merge_kwargs, ordered=ordered)
    return reduction(frame, _chunk_method, _final_method, combine, meta=meta, token=method,
                     split_every=split_every, chunk_kwargs={"method": method, "kwargs": kwargs, "own_order": own},
                     aggregate_kwargs={"method": method, "merge": merge, "kwargs": merge_kwargs,
                                       "meta": frame._meta, "min_count": kwargs.get("min_count", 0),
                                       "out_dtype": _extension_dtype(meta), "ordered": ordered})


def _known_categories(meta: Any) -> bool:
    """A categorical meta's categories are the data's (``categorical.has_known_categories``,
    which imports this module)."""
    cats = meta.dtype.categories
    return not (len(cats) == 1 and cats[0] == UNKNOWN_CATEGORIES)


def _ordered_categories(meta: Any) -> Any:
    """The ordered categorical dtype of a Series' meta, or a DataFrame's ``{column: dtype}``
    of its ordered categorical columns; None when there are none."""
    def ranked(dtype: Any) -> bool:
        return isinstance(dtype, pd.CategoricalDtype) and dtype.ordered
    if isinstance(meta, pd.Series):
        return meta.dtype if ranked(meta.dtype) else None
    found = {c: d for c, d in meta.dtypes.items() if ranked(d)} if isinstance(meta, pd.DataFrame) else {}
    return found or None


# --------------------------------------------------------------------------- mean, var, std


def _moment_columns(frame: pd.DataFrame, numeric_only: bool) -> pd.DataFrame:
    """The columns pandas averages: with ``numeric_only`` its numeric data (timedeltas are not)."""
    return frame.select_dtypes(include=["number", "bool"], exclude=["timedelta"]) if numeric_only else frame


def _is_datetimelike(dtype: Any) -> bool:
    return getattr(dtype, "kind", "O") in "mM"


def _time_unit_and_zone(dtype: Any) -> tuple:
    """The unit and time zone (or None) of a datetime or timedelta dtype, NumPy's, pandas' or
    pyarrow's (``timestamp[us, tz=...][pyarrow]``, whose own attributes are its pyarrow type's)."""
    own = getattr(dtype, "pyarrow_dtype", dtype)
    if _is_arrow_date(dtype):  # (date32 as seconds, as pandas averages it; date64: milliseconds)
        return ("s" if own.bit_width == 32 else "ms"), None
    return (getattr(own, "unit", None) or np.datetime_data(dtype)[0]), getattr(own, "tz", None)


def _is_arrow_date(dtype: Any) -> bool:
    """Whether ``dtype`` is pyarrow's ``date32`` or ``date64`` (dates, whose means pandas gives
    as ``datetime.date``)."""
    own = getattr(dtype, "pyarrow_dtype", None)
    return own is not None and str(own).startswith("date")


def _as_float(values: Any) -> np.ndarray:
    """A Series as float64 with NaN where missing; datetimes and timedeltas as their ticks
    (integers of their unit, UTC's for a time zone), which is what pandas averages."""
    if not _is_datetimelike(values.dtype):
        return values.to_numpy(dtype="float64", na_value=np.nan)
    out = _numpy_times(values).array.asi8.astype("float64")
    out[values.isna().to_numpy()] = np.nan
    return out


def _numpy_times(values: Any) -> Any:
    """A Series of pyarrow's times (or dates) as NumPy's in their unit (zone kept); others as
    they are."""
    if not (isinstance(values.dtype, pd.ArrowDtype) and values.dtype.kind in "mM"):
        return values
    unit, tz = _time_unit_and_zone(values.dtype)
    kind = "timedelta64" if values.dtype.kind == "m" else "datetime64"
    return values.astype(f"{kind}[{unit}, {tz}]" if tz is not None else f"{kind}[{unit}]")


def _moments(part: Any, numeric_only: bool, skipna: bool = True) -> tuple:
    """(count, sum, mean, M2) per column (or of the Series), as float64 arrays, and the labels.
    With ``skipna=False`` a missing value makes the sum, and so everything after, NaN."""
    if isinstance(part, pd.DataFrame):
        part = _moment_columns(part, numeric_only)
        labels = list(part.columns)
        if any(_is_datetimelike(d) for d in part.dtypes):
            values = np.column_stack([_as_float(part.iloc[:, i]) for i in range(part.shape[1])])
        else:
            values = part.to_numpy(dtype="float64", na_value=np.nan)
    else:
        labels = None
        values = _as_float(part).reshape(-1, 1)
    with np.errstate(invalid="ignore", divide="ignore"):
        if skipna:
            count = np.sum(~np.isnan(values), axis=0).astype("float64")
            total = np.nansum(values, axis=0)
        else:
            count = np.full(values.shape[1], float(values.shape[0]))
            total = np.sum(values, axis=0)
        mean = np.where(count > 0, total / np.maximum(count, 1), 0.0)
        m2 = (np.nansum if skipna else np.sum)((values - mean) ** 2, axis=0)
    return count, total, mean, m2, labels


def _merge_moments(partials: list) -> tuple:
    count, total, mean, m2, labels = partials[0]
    for cb, tb, mb, m2b, _ in partials[1:]:
        n = count + cb
        with np.errstate(invalid="ignore", divide="ignore"):
            delta = mb - mean
            safe = np.maximum(n, 1)
            mean = np.where(n > 0, mean + delta * cb / safe, 0.0)
            m2 = m2 + m2b + np.where(n > 0, delta ** 2 * count * cb / safe, 0.0)
        count, total = n, total + tb
    return count, total, mean, m2, labels


def missing_as_pandas(value: Any, dtype: Any) -> Any:
    """A result as pandas gives it for a column of ``dtype`` when it is missing: the dtype's
    own missing value for pandas' extension dtypes (NA for nullable numbers and ``"string"``,
    NaN for ``"str"``), the value itself (NaN, NaT) for NumPy's.

    >>> import pandas as pd
    >>> missing_as_pandas(float("nan"), pd.Int64Dtype()), missing_as_pandas(2.5, pd.Int64Dtype())
    (<NA>, 2.5)
    >>> missing_as_pandas(float("nan"), pd.StringDtype())
    <NA>
    """
    if isinstance(dtype, pd.api.extensions.ExtensionDtype) and pd.api.types.is_scalar(value) and pd.isna(value):
        return dtype.na_value
    return value


def _boxed(value: float, dtype: Any, kind: str) -> Any:
    """A float result as pandas gives it for a column of ``dtype``: the mean of datetimes is a
    Timestamp and the std of datetimes or timedeltas a Timedelta, in the column's unit (and
    time zone), truncated to whole ticks as pandas does; NA where nullable numbers give none."""
    if not _is_datetimelike(dtype):
        if isinstance(dtype, pd.ArrowDtype) and not np.isnan(value):
            return float(value)  # (pandas gives pyarrow's numbers' statistics as Python floats)
        return missing_as_pandas(np.float64(value), dtype)
    if np.isnan(value):  # (pyarrow's times: NA, as pandas gives them)
        return dtype.na_value if isinstance(dtype, pd.ArrowDtype) else pd.NaT
    unit, tz = _time_unit_and_zone(dtype)
    ticks = np.int64(value)
    if kind == "mean" and dtype.kind == "M":
        out = pd.Timestamp(ticks.view(f"M8[{unit}]"))
        if _is_arrow_date(dtype):
            return out.date()
        return out if tz is None else out.tz_localize("UTC").tz_convert(tz)
    return pd.Timedelta(ticks.view(f"m8[{unit}]"))


def _finish_moments(partials: list, kind: str, ddof: int, name: Any, dtypes: list, out_dtype: Any = None,
                    time_dtype: Any = None) -> Any:
    count, total, _, m2, labels = _merge_moments(partials)
    with np.errstate(invalid="ignore", divide="ignore"):
        if kind == "mean":  # the sum over the count, as pandas computes it
            out = np.where(count > 0, total / np.maximum(count, 1), np.nan)
        else:
            var = np.where(count - ddof > 0, m2 / np.maximum(count - ddof, 1), np.nan)
            out = np.sqrt(var) if kind == "std" else var
    if labels is None:
        return _boxed(out[0], dtypes[0], kind)
    if any(_is_datetimelike(d) for d in dtypes):  # pandas mixes Timestamps and floats, as objects
        out = pd.Series([_boxed(v, d, kind) for v, d in zip(out, dtypes)], index=labels, name=name, dtype=object)
        return out if time_dtype is None else out.astype(time_dtype)  # (times alone: pandas' own dtype)
    return _as_dtype(pd.Series(out, index=labels, name=name), out_dtype)


def _moment(frame: _Frame, kind: str, ddof: int, numeric_only: bool, skipna: bool,
            split_every: int | None):
    kwargs = {"ddof": ddof} if kind != "mean" else {}
    if isinstance(frame, DataFrame):
        kwargs["numeric_only"] = numeric_only
        dtypes = list(_moment_columns(frame._meta, numeric_only).dtypes)
    else:
        dtypes = [frame._meta.dtype]
    meta = _meta_of(frame, kind, skipna=skipna, **kwargs)
    time_dtype = meta.dtype if isinstance(meta, pd.Series) and meta.dtype.kind in "mM" else None
    if isinstance(meta, pd.Series) and meta.dtype.kind in "biuf" and _extension_dtype(meta) is None:
        meta = meta.astype("float64")
    return reduction(frame, _moments, _finish_moments, _merge_moments, meta=meta, token=kind,
                     split_every=split_every, chunk_kwargs={"numeric_only": numeric_only, "skipna": skipna},
                     aggregate_kwargs={"kind": kind, "ddof": ddof, "name": None, "dtypes": dtypes,
                                       "out_dtype": _extension_dtype(meta) or _object_dtype(meta),
                                       "time_dtype": time_dtype})


# --------------------------------------------------------------------------- distinct values


def _unique_chunk(part: pd.Series, dropna: bool) -> pd.Series:
    out = part.drop_duplicates()
    return out.dropna() if dropna else out


def _unique_merge(partials: list) -> pd.Series:
    return pd.concat(partials).drop_duplicates()


def _count_unique(partials: list) -> int:
    return len(_unique_merge(partials))


def _value_counts_chunk(part: Any, dropna: bool) -> pd.Series:
    return part.value_counts(dropna=dropna, sort=False)


def _value_counts_merge(partials: list) -> pd.Series:
    plain = _plain_counts(partials)
    if plain is not None:
        return plain
    out = pd.concat(_unify_categoricals(partials))  # (a categorical's counts keep a CategoricalIndex)
    return out.groupby(level=list(range(out.index.nlevels)), dropna=False, sort=False).sum()


def _plain_counts(partials: list) -> pd.Series | None:
    """Counts of a column of NumPy numbers, times or booleans added up by factorizing its
    values once and summing with ``bincount``, in order of first appearance as pandas'
    ``groupby(sort=False)`` gives them, a missing value a group of its own; None for other
    columns. For a column of millions of distinct values (ids) this peaked 28 % lower and
    ran 20 % faster than concatenating and grouping (eight partials of four million values,
    in one process).

    >>> import pandas as pd
    >>> _plain_counts([pd.Series([1.0, 2.0, 3.0]).value_counts(sort=False),
    ...                pd.Series([2.0, float("nan")]).value_counts(dropna=False, sort=False)]).to_dict()
    {1.0: 1, 2.0: 2, 3.0: 1, nan: 1}
    """
    first = partials[0]
    kind = first.index.dtype
    if (first.index.nlevels != 1 or not isinstance(kind, np.dtype) or kind.kind not in "iufbmM"
            or not isinstance(first.dtype, np.dtype) or first.dtype.kind not in "iu"
            or any(p.index.dtype != kind or p.dtype != first.dtype for p in partials)):
        return None
    values = np.concatenate([p.index.to_numpy() for p in partials])
    counts = np.concatenate([p.to_numpy() for p in partials])
    codes, uniques = pd.factorize(values, use_na_sentinel=False)
    del values
    sums = np.bincount(codes, weights=counts, minlength=len(uniques)).astype(first.dtype)
    return pd.Series(sums, index=pd.Index(uniques, dtype=kind, name=first.index.name), name=first.name)


def _value_counts_final(partials: list, sort: bool, ascending: bool, normalize: bool, name: Any) -> pd.Series:
    out = _value_counts_merge(partials)
    if normalize:
        out = out / out.sum()
        out.name = "proportion"
    else:
        out.name = "count"
    if isinstance(name, list):  # (a frame's rows: a MultiIndex of its columns, of one column too, as pandas')
        index = out.index if isinstance(out.index, pd.MultiIndex) else pd.MultiIndex.from_arrays([out.index])
        out.index = index.set_names(name)
    else:  # (a Series, or a frame's one column named alone)
        if isinstance(out.index, pd.MultiIndex):
            out.index = out.index.get_level_values(0)
        out.index.name = name
    return out.sort_values(ascending=ascending, kind="stable") if sort else out


# --------------------------------------------------------------------------- quantiles (approximate)

#: Values kept per partition to estimate quantiles; the estimate's rank error is about
#: ``1 / QUANTILE_SAMPLES`` of the rows.
QUANTILE_SAMPLES = 1000


def _quantile_chunk(part: pd.Series) -> tuple:
    """(sorted sample of the values, rows each stands for, whether values were missing)."""
    missing = bool(part.isna().any())
    part = _numpy_times(part.dropna())
    if isinstance(part.dtype, pd.DatetimeTZDtype):  # (as UTC datetime64; the final step puts the zone back)
        part = part.dt.tz_convert("UTC").dt.tz_localize(None)
    values = part.to_numpy()
    if values.dtype == object and all(isinstance(v, numbers.Real) for v in values):
        values = values.astype("float64")  # (numbers held as objects: interpolated, as pandas does)
    values = np.sort(values)
    n = len(values)
    if n <= QUANTILE_SAMPLES:
        return values, np.ones(n), missing
    idx = np.linspace(0, n - 1, QUANTILE_SAMPLES).round().astype(int)
    return values[idx], np.full(QUANTILE_SAMPLES, n / QUANTILE_SAMPLES), missing


def _quantile_merge(partials: list) -> tuple:
    values = np.concatenate([p[0] for p in partials])
    weights = np.concatenate([p[1] for p in partials])
    order = np.argsort(values, kind="stable")
    return values[order], weights[order], any(p[2] for p in partials)


def _quantile_final(partials: list, q: Any, name: Any, tz: Any = None, out_dtype: Any = None,
                    whole_dtype: Any = None, interpolation: str = "linear", empty_dtype: Any = None,
                    arrow_dtype: Any = None, exact_ends: bool = False) -> Any:
    values, weights, missing = _quantile_merge(partials)
    qs = np.atleast_1d(np.asarray(q, dtype=float))
    when = values.dtype if values.dtype.kind in "mM" else None
    if when is not None:  # datetimes and timedeltas: interpolated as their integers, as pandas does
        values = values.view("i8")
    if len(values) == 0:
        out = np.full(len(qs), np.nan) if when is None else np.full(len(qs), "NaT", dtype=when)
        if not missing and empty_dtype is not None:  # (no row at all: pandas' dtype of an empty Series)
            out_dtype = empty_dtype
    elif np.issubdtype(values.dtype, np.number) and (weights == 1).all():
        out = np.quantile(values, qs, method=interpolation)  # every row is here: pandas' own answer
    else:
        # each kept value stands for ``weight`` rows in a row: place it at the middle of them
        # in the sorted rows (its row itself when the weight is 1), and read position
        # ``q * (rows - 1)`` off these places, linearly between values as pandas does (or the
        # value placed nearest row floor/ceil/round of it, as its other interpolations)
        cum = np.cumsum(weights)
        places = cum - (weights + 1) / 2
        wanted = qs * (cum[-1] - 1)
        numeric = np.issubdtype(values.dtype, np.number)

        def placed(rows: np.ndarray) -> np.ndarray:
            return values[np.minimum(np.searchsorted(places, rows - 0.5), len(values) - 1)]

        if interpolation == "linear" and numeric:
            out = np.interp(wanted, places, values.astype("float64"))
        elif interpolation == "midpoint" and numeric:
            out = (placed(np.floor(wanted)).astype("float64") + placed(np.ceil(wanted))) / 2
        else:  # (no interpolating between non-numbers: the value placed nearest)
            rows = {"lower": np.floor, "higher": np.ceil, "nearest": np.around}.get(interpolation, lambda w: w)
            out = placed(rows(wanted))
    if exact_ends and when is None and values.dtype.kind in "iu" and len(values):
        out = np.asarray(out, dtype=object)  # (integers past 2**53: float64 would round the ends too)
        out[qs == 0], out[qs == 1] = int(values[0]), int(values[-1])
        out_dtype = object
    if when is not None and len(values):
        if exact_ends:  # (the least and greatest times themselves, which float64 would round: divisions)
            out = np.asarray(out).astype(np.int64)  # (truncated toward zero, as the cast below does)
            out[qs == 0], out[qs == 1] = values[0], values[-1]
        out = out.astype(when)  # (a float position truncated toward zero, as pandas' cast does)
    out = pd.Series(out, index=qs, name=name, dtype=out_dtype)
    if whole_dtype is not None and missing and bool((out.isna() | (out % 1 == 0)).all()):
        out = out.astype(whole_dtype)  # (pandas' nullable integers holding NA: back in their dtype when whole)
    if tz is not None:
        out = out.dt.tz_localize("UTC").dt.tz_convert(tz)
    if arrow_dtype is not None:  # (pyarrow's times back in their dtype; dates as whole days, as pandas')
        if _is_arrow_date(arrow_dtype):
            out = out.dt.floor("D")
        out = out.astype(arrow_dtype)
    return out.iloc[0] if np.ndim(q) == 0 else out


#: pandas' interpolations between the two rows around a quantile's position.
INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def quantile(series: Series, q: Any = 0.5, split_every: int | None = None, whole: bool = True,
             interpolation: str = "linear", exact_ends: bool = False):
    """Quantiles of a Series from a sample of each partition (see ``QUANTILE_SAMPLES``),
    interpolated as pandas does (``interpolation``: one of ``INTERPOLATIONS``); exactly
    pandas' answer for numbers when every partition has at most that many rows, approximate
    otherwise. ``whole=False``: nullable integers stay Float64 even when whole (pandas'
    ``median``, unlike its ``quantile``). ``exact_ends``: the 0 and 1 quantiles of times and
    integers are the least and greatest themselves, which pandas rounds through float64
    (divisions; integers then as objects)."""
    if interpolation not in INTERPOLATIONS:
        raise ValueError(f"quantile(interpolation={interpolation!r}): pandas' interpolations are "
                         f"{list(INTERPOLATIONS)}")
    qs = np.asarray(q, dtype=object).ravel()
    if not all(isinstance(v, numbers.Real) and 0 <= v <= 1 for v in qs):  # (NumPy's words, when built)
        raise ValueError(f"quantile: Quantiles must be in the range [0, 1], got q={q!r}")
    dtype = series._meta.dtype
    arrow_time = isinstance(dtype, pd.ArrowDtype) and dtype.kind in "mM"
    tz = _time_unit_and_zone(dtype)[1] if arrow_time else getattr(dtype, "tz", None)
    out_dtype = empty_dtype = None
    if tz is not None or getattr(dtype, "kind", "") in ("m", "M"):  # of times a time, in their unit
        meta = pd.Series([], dtype=dtype, name=series.name)
        if np.ndim(q) == 0:
            meta = pd.Timestamp(0, tz=tz) if dtype.kind == "M" else pd.Timedelta(0)
    else:  # (numbers in the dtype pandas gives them: Float64 of nullable ones; integers by lower/higher/nearest)
        if pd.api.types.is_numeric_dtype(dtype) and (interpolation != "linear" or
                                                      not pd.api.types.is_bool_dtype(dtype)):
            try:
                out_dtype = _nonempty(series._meta).quantile([0.5], interpolation=interpolation).dtype
            except TypeError as exc:  # (pandas' own refusal, e.g. the midpoint of booleans)
                raise TypeError(f"quantile(interpolation={interpolation!r}) of {dtype} values fails in pandas: "
                                f"{exc}") from None
            if interpolation != "linear":  # (lower/higher/nearest of no row: NaN, in pandas' float dtype)
                empty_dtype = series._meta.iloc[:0].quantile([0.5], interpolation=interpolation).dtype
                empty_dtype = None if empty_dtype == out_dtype else empty_dtype
        meta = pd.Series([], dtype=out_dtype or "float64", name=series.name) if np.ndim(q) else \
            np.dtype(getattr(out_dtype, "numpy_dtype", out_dtype or "float64")).type(0)
    return reduction(series, _quantile_chunk, _quantile_final, _quantile_merge, meta=meta,
                     token="quantile", split_every=split_every,
                     aggregate_kwargs={"q": q, "name": series.name, "tz": tz,
                                       "out_dtype": out_dtype,
                                       "whole_dtype": dtype if whole and out_dtype is not None and isinstance(
                                           dtype, pd.api.extensions.ExtensionDtype) and dtype.kind in "iu"
                                       and not isinstance(dtype, pd.ArrowDtype) else None,  # (pandas' masked only)
                                       "interpolation": interpolation, "empty_dtype": empty_dtype,
                                       "arrow_dtype": dtype if arrow_time else None,
                                       "exact_ends": exact_ends})


# --------------------------------------------------------------------------- methods


def _rowwise(frame: _Frame, method: str, **kwargs: Any):
    """A statistic of each row of a DataFrame (``axis=1``): partition by partition, pandas' own."""
    return frame._method(method, axis=1, **{k: v for k, v in kwargs.items() if k != "numeric_only" or v})


def _ravel(part: pd.DataFrame) -> pd.Series:
    return pd.Series(part.to_numpy().ravel())


def every_value(frame: DataFrame, numeric_only: bool = False) -> Series:
    """A DataFrame's values (of its numeric columns with ``numeric_only``) as one Series, in
    NumPy's common dtype of its columns: what pandas' reductions run over with ``axis=None``.

    >>> import pandas as pd, xsched.dataframe as xd
    >>> df = xd.from_pandas(pd.DataFrame({"a": [1, 2], "b": [3.5, 4.0]}), npartitions=2)
    >>> df.sum(axis=None).compute(), df.mean(axis=None).compute()
    (np.float64(10.5), np.float64(2.625))
    """
    if numeric_only:
        frame = frame.select_dtypes(include=["number", "bool"])
    meta = _ravel(_nonempty(frame._meta)).iloc[:0]
    return frame.map_partitions(_ravel, meta=meta).clear_divisions()


def _axis_none(self: _Frame, method: str, numeric_only: bool, **kwargs: Any) -> Any:
    """``method`` of every value of a DataFrame (``axis=None``), as pandas."""
    if method == "count":
        raise ValueError(f"{method}(axis=None): no axis named None for a DataFrame (pandas refuses it too); "
                         "count every value with df.count().sum()")
    return getattr(every_value(self, numeric_only), method)(**kwargs)


def across(self: _Frame, method: str, axis: Any, numeric_only: bool, split_every: Any, **kwargs: Any) -> Any:
    """A reduction's result when ``axis`` is not the rows: each row's (``axis=1``, pandas' own
    per partition) or every value's (a DataFrame's ``axis=None``); None when it is the rows'
    (the caller's tree reduction). An axis there is not is refused here, as pandas refuses it.

    >>> import pandas as pd, xsched.dataframe as xd
    >>> df = xd.from_pandas(pd.DataFrame({"a": [1, 2], "b": [3, 4]}), npartitions=2)
    >>> across(df, "sum", "columns", False, None).compute().tolist(), across(df, "sum", "index", False, None)
    ([4, 6], None)
    """
    number = self._axis(axis, method)
    if number == 1:
        return _rowwise(self, method, **kwargs, numeric_only=numeric_only)
    if number is None and isinstance(self, DataFrame):
        return _axis_none(self, method, numeric_only, split_every=split_every, **kwargs)
    return None


#: the keywords pandas' method has not (a TypeError there): per method, for a DataFrame and a Series
_LACKING = {"count": (("skipna",), ("skipna", "numeric_only", "axis")), "any": (("numeric_only",),) * 2,
            "all": (("numeric_only",),) * 2}
_UNSET = object()


def _refuse_lacking(self: _Frame, method: str, given: dict) -> None:
    """pandas' TypeError for a keyword its ``method`` has not, when the expression is built."""
    lacking = _LACKING.get(method, ((), ()))[0 if isinstance(self, DataFrame) else 1]
    for name in lacking:
        if given.get(name, _UNSET) is not _UNSET:
            raise TypeError(f"{type(self).__name__}.{method}() got an unexpected keyword argument {name!r} "
                            "(as pandas')")


def _install() -> None:
    """Give the collections their reduction methods (one definition each, shared)."""

    def simple(method: str, doc: str) -> Callable:
        def reduce(self, axis: Any = _UNSET, skipna: Any = _UNSET, split_every: int | None = None,
                   numeric_only: Any = _UNSET, **kwargs: Any):
            _refuse_lacking(self, method, {"axis": axis, "skipna": skipna, "numeric_only": numeric_only})
            axis = 0 if axis is _UNSET else axis
            skipna = True if skipna is _UNSET else skipna
            numeric_only = False if numeric_only is _UNSET else numeric_only
            kw = dict(kwargs)
            if method != "count":
                kw["skipna"] = skipna
            out = across(self, method, axis, numeric_only, split_every, **kw)
            if out is not None:
                return out
            if isinstance(self, DataFrame) and method not in ("any", "all"):
                kw["numeric_only"] = numeric_only
            return _simple(self, method, split_every, **kw)
        reduce.__name__, reduce.__doc__ = method, doc
        return reduce

    docs = {
        "sum": "The sum (per column for a DataFrame), as a tree reduction.\n\n>>> import pandas as pd, "
               "xsched.dataframe as xd\n>>> xd.from_pandas(pd.Series([1, 2, 3]), npartitions=2).sum()"
               ".compute()\nnp.int64(6)",
        "prod": "The product.\n\n>>> import pandas as pd, xsched.dataframe as xd\n>>> xd.from_pandas("
                "pd.Series([1, 2, 3]), npartitions=2).prod().compute()\nnp.int64(6)",
        "count": "Non-missing values (per column for a DataFrame).\n\n>>> import pandas as pd, "
                 "xsched.dataframe as xd\n>>> xd.from_pandas(pd.Series([1, None, 3]), npartitions=2)"
                 ".count().compute()\nnp.int64(2)",
        "min": "The smallest value.\n\n>>> import pandas as pd, xsched.dataframe as xd\n>>> xd.from_pandas("
               "pd.Series([3, 1, 2]), npartitions=2).min().compute()\nnp.int64(1)",
        "max": "The largest value.\n\n>>> import pandas as pd, xsched.dataframe as xd\n>>> xd.from_pandas("
               "pd.Series([3, 1, 2]), npartitions=2).max().compute()\nnp.int64(3)",
        "any": "Whether any value is true.\n\n>>> import pandas as pd, xsched.dataframe as xd\n>>> bool("
               "xd.from_pandas(pd.Series([0, 1]), npartitions=2).any().compute())\nTrue",
        "all": "Whether every value is true.\n\n>>> import pandas as pd, xsched.dataframe as xd\n>>> bool("
               "xd.from_pandas(pd.Series([0, 1]), npartitions=2).all().compute())\nFalse",
    }
    for method, doc in docs.items():
        setattr(_Frame, method, simple(method, doc))

    def mean(self, axis: Any = 0, skipna: bool = True, split_every: int | None = None,
             numeric_only: bool = False):
        """The mean (per numeric column for a DataFrame), in float64; of datetimes a Timestamp
        and of timedeltas a Timedelta, in their unit, as pandas gives; ``axis=1``: each row's.

        >>> import pandas as pd, xsched.dataframe as xd
        >>> xd.from_pandas(pd.Series([1, 2, 3, 4]), npartitions=3).mean().compute()
        np.float64(2.5)
        >>> df = xd.from_pandas(pd.DataFrame({"a": [1.0, 2.0], "b": [3.0, 6.0]}), npartitions=2)
        >>> df.mean(axis=1).compute().tolist()
        [2.0, 4.0]
        """
        out = across(self, "mean", axis, numeric_only, split_every, skipna=skipna)
        if out is not None:
            return out
        return _moment(self, "mean", 0, numeric_only, skipna, split_every)

    def var(self, axis: Any = 0, skipna: bool = True, ddof: int = 1, split_every: int | None = None,
            numeric_only: bool = False):
        """The variance (``ddof=1`` as pandas), merged pairwise so it stays accurate;
        ``axis=1``: each row's.

        >>> import pandas as pd, xsched.dataframe as xd
        >>> xd.from_pandas(pd.Series([1, 2, 3, 4]), npartitions=3).var().compute().round(4)
        np.float64(1.6667)
        """
        out = across(self, "var", axis, numeric_only, split_every, skipna=skipna, ddof=ddof)
        if out is not None:
            return out
        return _moment(self, "var", ddof, numeric_only, skipna, split_every)

    def std(self, axis: Any = 0, skipna: bool = True, ddof: int = 1, split_every: int | None = None,
            numeric_only: bool = False):
        """The standard deviation (``ddof=1`` as pandas); ``axis=1``: each row's.

        >>> import pandas as pd, xsched.dataframe as xd
        >>> xd.from_pandas(pd.Series([1, 2, 3, 4]), npartitions=3).std().compute().round(4)
        np.float64(1.291)
        """
        out = across(self, "std", axis, numeric_only, split_every, skipna=skipna, ddof=ddof)
        if out is not None:
            return out
        return _moment(self, "std", ddof, numeric_only, skipna, split_every)

    def nunique(self, dropna: bool = True, split_every: int | None = None):
        """How many distinct values (a tree of distinct values, so it suits moderate counts).

        >>> import pandas as pd, xsched.dataframe as xd
        >>> xd.from_pandas(pd.Series([1, 2, 2, 3, 1]), npartitions=2).nunique().compute()
        3
        """
        return reduction(self, _unique_chunk, _count_unique, _unique_merge, meta=0, token="nunique",
                         split_every=split_every, chunk_kwargs={"dropna": dropna})

    def unique(self, split_every: int | None = None):
        """The distinct values, as a Series of one partition.

        >>> import pandas as pd, xsched.dataframe as xd
        >>> sorted(xd.from_pandas(pd.Series([1, 2, 2, 1]), npartitions=2).unique().compute())
        [1, 2]
        """
        return reduction(self, _unique_chunk, _unique_merge, _unique_merge, meta=self._meta,
                         token="unique", split_every=split_every, chunk_kwargs={"dropna": False})

    def value_counts(self, sort: bool = True, ascending: bool = False, dropna: bool = True,
                     normalize: bool = False, bins: Any = None, split_every: int | None = None):
        """How often each value occurs, most frequent first (a Series of one partition);
        ``bins=`` counts the values in bins as pandas does (``binning.binned_counts``: its
        ``cut`` of the values, every bin listed).

        >>> import pandas as pd, xsched.dataframe as xd
        >>> xd.from_pandas(pd.Series(list("abbccc")), npartitions=3).value_counts().compute().to_dict()
        {'c': 3, 'b': 2, 'a': 1}
        """
        if bins is not None:
            return BINNED_COUNTS[0](self, bins, sort, ascending, dropna, normalize, split_every)
        meta = self._meta.value_counts(normalize=normalize)
        return reduction(self, _value_counts_chunk, _value_counts_final, _value_counts_merge, meta=meta,
                         token="value-counts", split_every=split_every, chunk_kwargs={"dropna": dropna},
                         aggregate_kwargs={"sort": sort, "ascending": ascending, "normalize": normalize,
                                           "name": self._meta.name})

    def series_quantile(self, q: Any = 0.5, interpolation: str = "linear", split_every: int | None = None):
        """Quantiles, interpolated as pandas does (``interpolation``: ``"linear"``, ``"lower"``,
        ``"higher"``, ``"midpoint"`` or ``"nearest"``), from a sample of every partition:
        exact when no partition has more than ``QUANTILE_SAMPLES`` rows, approximate beyond.

        >>> import pandas as pd, xsched.dataframe as xd
        >>> s = xd.from_pandas(pd.Series(range(101)), npartitions=4)
        >>> float(s.quantile(0.5).compute()), s.quantile([0.25, 0.755], interpolation="nearest").compute().tolist()
        (50.0, [25, 76])
        """
        if isinstance(self._meta.dtype, pd.StringDtype):  # (the samples would give one: pandas has none)
            raise TypeError(f"quantile of {self._meta.dtype} values: pandas has none (text has no interpolation); "
                            "sort_values and take the row at the position wanted instead")
        return quantile(self, q, split_every, interpolation=interpolation)

    def frame_value_counts(self, subset: Any = None, normalize: bool = False, sort: bool = True,
                           ascending: bool = False, dropna: bool = True, split_every: int | None = None):
        """How often each distinct row (of the ``subset`` columns) occurs, most frequent
        first: a Series of one partition indexed by the columns' values (a tree of each
        partition's counts). Equal counts come in the order the tree merged them.

        >>> import pandas as pd, xsched.dataframe as xd
        >>> df = xd.from_pandas(pd.DataFrame({"a": [1, 2, 1, 1], "b": list("xyxz")}), npartitions=2)
        >>> df.value_counts().compute().to_dict()
        {(1, 'x'): 2, (2, 'y'): 1, (1, 'z'): 1}
        """
        several = subset is None or pd.api.types.is_list_like(subset)
        frame = self if subset is None else self[list(subset) if several else [subset]]
        meta = self._meta.value_counts(subset=subset, normalize=normalize)
        return reduction(frame, _value_counts_chunk, _value_counts_final, _value_counts_merge, meta=meta,
                         token="value-counts", split_every=split_every, chunk_kwargs={"dropna": dropna},
                         aggregate_kwargs={"sort": sort, "ascending": ascending, "normalize": normalize,
                                           "name": list(frame.columns) if several else subset})

    frame_value_counts.__name__ = "value_counts"
    DataFrame.value_counts = frame_value_counts  # type: ignore[attr-defined]
    for f in (mean, var, std):
        setattr(_Frame, f.__name__, f)
    for f in (nunique, unique, value_counts):
        setattr(Series, f.__name__, f)
    Series.quantile = series_quantile  # type: ignore[attr-defined]

    def agg(self, func: Any, split_every: int | None = None, **kwargs: Any):
        """Reductions by name, laid out as pandas' ``agg``: a name (``"sum"``) gives that
        reduction; a list gives one row per name; a frame's dict names them per column. Each
        is the tree reduction of its own method (``df.sum()``...), run together; keywords go
        to every one, as pandas passes them (``agg("std", ddof=0)``).

        >>> import pandas as pd, xsched.dataframe as xd
        >>> df = xd.from_pandas(pd.DataFrame({"a": [1, 2, 3], "b": [1.5, 2.0, 4.0]}), npartitions=2)
        >>> df.agg(["sum", "max"]).compute().to_dict("list")
        {'a': [6, 3], 'b': [7.5, 4.0]}
        >>> df.a.agg(["min", "mean"]).compute().tolist()
        [1.0, 2.0]
        """
        return _agg(self, func, split_every, kwargs)

    _Frame.agg = _Frame.aggregate = agg  # type: ignore[attr-defined]

    def nunique_frame(self, dropna: bool = True, split_every: int | None = None):
        """Distinct values per column.

        >>> import pandas as pd, xsched.dataframe as xd
        >>> xd.from_pandas(pd.DataFrame({"a": [1, 1], "b": [1, 2]}), npartitions=2).nunique().compute().to_dict()
        {'a': 1, 'b': 2}
        """
        counts = [n for (n,) in joint(self, list(self.columns), lambda s, _: [nunique(s, dropna, split_every)])]
        return _joined(f"nunique-{new_token(self._name, dropna)}", _as_labelled, counts, (list(self.columns),),
                       pd.Series([], dtype="int64"))

    DataFrame.nunique = nunique_frame  # type: ignore[attr-defined]


def _as_labelled(values: list, labels: list) -> pd.Series:
    return pd.Series(values, index=labels, dtype="int64")


def _joined(name: str, func: Callable, pieces: list, args: tuple, meta: Any):
    """A collection of one partition: ``func([the pieces' values], *args)`` in one task, the
    pieces being Scalars or collections of one partition (reductions run together)."""
    refs = [Ref(p.key) if isinstance(p, Scalar) else Ref(chunk_key(p._name, (0,))) for p in pieces]
    layer = {chunk_key(name, (0,)): Task(func, (refs, *args))}
    return new_collection(LayeredGraph.merge(*[p._graph for p in pieces], new={name: layer}), name, meta,
                          (None, None))


#: ``value_counts(bins=)``: set by ``binning.py``, which cuts the values (a room above this one)
BINNED_COUNTS: list = []

#: the reductions ``agg`` runs by name (each a method of the collections)
AGG_NAMES = ("sum", "mean", "min", "max", "count", "std", "var", "prod", "median", "nunique", "sem", "skew",
             "kurt", "any", "all")


#: NumPy's and Python's functions that are a reduction by name: pandas runs such a function on
#: each column, which gives the method's answer (``np.std`` is not here: NumPy's has ``ddof=0``)
AGG_FUNCTIONS = {np.sum: "sum", np.mean: "mean", np.min: "min", np.max: "max", np.prod: "prod", np.any: "any",
                 np.all: "all", sum: "sum", min: "min", max: "max", any: "any", all: "all"}


def _by_name(func: Any) -> Any:
    """``func`` (a function, a name, or a list of them) with NumPy's and Python's functions of
    ``AGG_FUNCTIONS`` given by name, as pandas names them."""
    if isinstance(func, (list, tuple)):
        return [_by_name(f) for f in func]
    try:
        return AGG_FUNCTIONS.get(func, func)
    except TypeError:  # (unhashable: not one of them)
        return func


def _agg_names(func: Any, where: str) -> list:
    """The reductions ``agg`` is asked for, by name."""
    names = [func] if isinstance(func, str) else list(func) if isinstance(func, (list, tuple)) else None
    for f in names or [func]:
        if f is np.std or f is np.var:  # (pandas runs NumPy's, ddof=0: not its own method's default)
            raise TypeError(f"{where}: np.{f.__name__} is NumPy's, with ddof=0; ask for .{f.__name__}(ddof=0), "
                            f"or agg('{f.__name__}') for pandas' ddof=1")
    if names is None or not all(isinstance(n, str) for n in names):
        raise TypeError(f"{where}: agg takes reductions by name ({', '.join(AGG_NAMES)}), a list of them, or "
                        f"for a frame a dict of them per column; not {func!r}. A function of one's own: "
                        ".reduction(chunk, aggregate)")
    for n in names:
        if n not in AGG_NAMES:
            raise ValueError(f"{where}: agg has no reduction {n!r}; it runs {', '.join(AGG_NAMES)}")
    return names


def _reduce(frame: _Frame, name: str, split_every: int | None, kwargs: dict | None = None) -> Any:
    """The reduction ``name`` of ``frame`` (``split_every`` passed on when given, and the
    keywords ``agg`` was given)."""
    method = getattr(frame, name)
    kwargs = dict(kwargs or {})
    if split_every is not None:
        kwargs["split_every"] = split_every
    try:
        return method(**kwargs)
    except TypeError as exc:
        if not kwargs or "keyword" not in str(exc):
            raise
        raise TypeError(f"agg: the reduction {name!r} does not take {sorted(kwargs)} ({exc}); pandas passes "
                        "agg's keywords to every function it names") from exc


def _agg_list(values: list, names: list, label: Any) -> pd.Series:
    return pd.Series(values, index=names, name=label)


def _agg_table(values: list, names: list, columns: list) -> pd.DataFrame:
    """One row per reduction, one column per column (``values`` column by column): each
    column laid out as its own ``agg`` of the list, so with pandas' dtype per column."""
    k = len(names)
    return pd.concat([pd.Series(values[i * k:(i + 1) * k], index=names, name=c) for i, c in enumerate(columns)],
                     axis=1)


def _agg_dict(pieces: list, plan: list) -> Any:
    """``plan``: per column (name, names or a single name); ``pieces`` their results in order."""
    if all(isinstance(names, str) for _, names in plan):
        return pd.Series(pieces, index=[c for c, _ in plan])
    out, i = [], 0
    for column, names in plan:
        many = [names] if isinstance(names, str) else names
        out.append(pd.Series(pieces[i:i + len(many)], index=many, name=column))
        i += len(many)
    return pd.concat(out, axis=1)


def _agg(frame: _Frame, func: Any, split_every: int | None, kwargs: dict | None = None):
    where = f"{type(frame).__name__}.agg"
    given, func = func, ({c: _by_name(f) for c, f in func.items()} if isinstance(func, dict) else _by_name(func))
    if isinstance(func, dict):
        if not isinstance(frame, DataFrame):
            raise TypeError(f"{where}: a dict of reductions per column is for a DataFrame; a Series takes a name or "
                            "a list of names")
        frame._check_columns(list(func), "agg")
        plan = list(func.items())
        for _, names in plan:
            _agg_names(names, where)
        asked = dict(plan)
        # (keywords not passed on: pandas' own dict of reductions leaves them out)
        results = [r for got in joint(frame, list(asked), lambda s, c: [_reduce(s, n, split_every) for n in (
            [asked[c]] if isinstance(asked[c], str) else asked[c])]) for r in got]
        func_, args = _agg_dict, (plan,)
    else:
        names = _agg_names(func, where)
        if isinstance(func, str):
            return _reduce(frame, func, split_every, kwargs)
        if isinstance(frame, DataFrame):
            results = [r for got in joint(frame, list(frame.columns), lambda s, _: [_reduce(s, n, split_every, kwargs)
                                                                                for n in names]) for r in got]
            func_, args = _agg_table, (names, list(frame.columns))
        else:
            results = [_reduce(frame, n, split_every, kwargs) for n in names]
            func_, args = _agg_list, (names, frame._meta.name)
    try:  # (pandas on a stand-in lays the result out: its meta)
        meta = make_meta(on_stand_ins(lambda: _nonempty(frame._meta).agg(given, **(kwargs or {}))))
    except Exception as exc:
        dtypes = dict(frame.dtypes.astype(str)) if isinstance(frame, DataFrame) else frame.dtype
        raise TypeError(f"{where}({given!r}): pandas refuses it on {dtypes}: {exc}") from exc
    return _joined(f"agg-{new_token(frame._name, repr(func))}", func_, results, args, meta)


# --------------------------------------------------------------------------- one's own


def _concat_partials(partials: list) -> Any:
    """The partials as one pandas object: concatenated, or a Series of scalars."""
    if partials and all(isinstance(p, (pd.Series, pd.DataFrame)) for p in partials):
        return pd.concat(partials)
    return pd.Series(partials)


def _as_row(partial_: Any) -> Any:
    """A Series partial as a one-row frame (its index becomes the columns), so that the
    partials concatenate to a row per partition, as dask's ``reduction`` gives them."""
    return partial_.to_frame().T if isinstance(partial_, pd.Series) else partial_


def _own_chunk(part: Any, func: Callable, kwargs: dict) -> Any:
    return _as_row(func(part, **kwargs))


def _own_merge(partials: list, func: Callable, kwargs: dict, row: bool) -> Any:
    merged = func(_concat_partials(partials), **kwargs)
    return _as_row(merged) if row else merged


def own_reduction(frame: _Frame, chunk: Callable, aggregate: Callable | None = None, combine: Callable | None = None,
                  meta: Any = None, token: str | None = None, split_every: int | bool | None = None,
                  chunk_kwargs: dict | None = None, aggregate_kwargs: dict | None = None,
                  combine_kwargs: dict | None = None, **kwargs: Any):
    """A reduction of one's own, as a tree: ``chunk(partition)`` per partition, then
    ``combine`` (default ``aggregate``) on the concatenated partials ``split_every`` at a
    time (``False``: all at once), ``aggregate`` (default ``chunk``) on the last ones.

    What ``combine`` and ``aggregate`` get depends on what ``chunk`` returns, as in dask:
    scalars come as a Series, a row per partition; a Series as a DataFrame, a row per
    partition, its index the columns; DataFrames concatenated as they are. ``kwargs`` go to
    all three. The functions run once on a stand-in when built (unless ``meta`` is given),
    so a mistake shows there.

    >>> import pandas as pd, xsched.dataframe as xd
    >>> df = xd.from_pandas(pd.DataFrame({"x": range(50), "y": range(50, 100)}), npartitions=4)
    >>> df.reduction(lambda p: p.count(), aggregate=lambda rows: rows.sum()).compute().to_dict()
    {'x': 50, 'y': 50}
    >>> int(df.x.reduction(lambda p: (p >= 25).sum(), aggregate=lambda s: s.sum()).compute())
    25
    """
    aggregate = aggregate or chunk
    combine = combine or aggregate
    if split_every is False:
        split_every = max(frame.npartitions, 2)
    ck, ak, mk = ({**kwargs, **(k or {})} for k in (chunk_kwargs, aggregate_kwargs, combine_kwargs))
    if meta is None:
        try:
            meta = aggregate(_concat_partials([_own_chunk(_nonempty(frame._meta), chunk, ck)]), **ak)
        except Exception as exc:
            raise ValueError(f"reduction fails on a stand-in of this {type(frame).__name__}: "
                             f"{type(exc).__name__}: {exc}; fix the functions or pass meta=") from exc
    return reduction(frame, partial(_own_chunk, func=chunk, kwargs=ck),
                     partial(_own_merge, func=aggregate, kwargs=ak, row=False),
                     partial(_own_merge, func=combine, kwargs=mk, row=True), meta=meta, token=token or "reduction",
                     split_every=split_every)


_Frame.reduction = own_reduction  # type: ignore[attr-defined]

_install()
