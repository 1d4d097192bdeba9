"""Pieces of one pandas object joined into it: ``_concat`` of partitions after a compute, and
the categoricals of pieces that each inferred their own categories recoded to their union
(pandas' concat would fall back to ``object``).

>>> import pandas as pd
>>> a, b = pd.Series(["x", "y"], dtype="category"), pd.Series(["z"], dtype="category")
>>> _concat([a, b]).dtype.categories.tolist()
['x', 'y', 'z']
"""

from __future__ import annotations

import warnings
from typing import Any, Sequence

import pandas as pd


def _concat(parts: list, meta: Any = None) -> Any:
    """Post-compute: the partitions as one pandas object."""
    parts = list(parts)
    if not parts:
        return meta
    if len(parts) == 1:
        return parts[0]
    if isinstance(parts[0], pd.Index):
        parts = _unify_categoricals(parts, meta)
        return parts[0].append(parts[1:])
    parts = _unify_categoricals(parts, meta)  # (empty partitions' categories too: pandas keeps those of filtered rows)
    non_empty = [p for p in parts if len(p)] or parts[:1]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # empty partitions' dtypes
        out = pd.concat(non_empty)
    index_dtype = non_empty[0].index.dtype
    if out.index.dtype != index_dtype and out.index.nlevels == 1 and all(p.index.dtype == index_dtype for p in non_empty):
        out.index = out.index.astype(index_dtype)  # (pandas' append infers str from object labels)
    return out


#: the one category of a meta whose partitions each infer categories of their own
#: (``categorical.py``); never a value, so unions leave it out
UNKNOWN_CATEGORIES = "__UNKNOWN_CATEGORIES__"


def cast_dtypes(meta: Any) -> Any:
    """``meta``'s dtype (a Series') or dtypes (a dict, a frame's), for ``astype`` of a result:
    a categorical whose categories are unknown stays ``"category"``, which keeps the
    categories the partition found (casting to the meta's own would make every value missing).

    >>> meta = pd.DataFrame({"c": pd.Categorical([], categories=[UNKNOWN_CATEGORIES]), "n": pd.Series([], dtype=int)})
    >>> cast_dtypes(meta)
    {'c': 'category', 'n': dtype('int64')}
    """
    def one(dtype: Any) -> Any:
        unknown = isinstance(dtype, pd.CategoricalDtype) and UNKNOWN_CATEGORIES in dtype.categories
        return "category" if unknown else dtype

    if isinstance(meta, pd.DataFrame):
        return {c: one(d) for c, d in meta.dtypes.to_dict().items()}
    return one(meta.dtype)


def with_category(column: pd.Series, value: Any) -> pd.Series:
    """``column`` with ``value`` among its categories when it is categorical and lacks it: a
    value carried into a partition whose categories it inferred for itself (``fillna``,
    ``ffill``), which the pieces' union takes in when they are joined.

    >>> with_category(pd.Series(["a"], dtype="category"), "b").cat.categories.tolist()
    ['a', 'b']
    """
    if isinstance(column.dtype, pd.CategoricalDtype) and value not in column.dtype.categories:
        return column.cat.add_categories([value])
    return column


def _union_categories(dtypes: Sequence[pd.CategoricalDtype]) -> pd.CategoricalDtype | None:
    """One categorical dtype for partitions of a column whose categories differ (each inferred
    its own, as ``astype("category")`` does per partition): the union of the categories, sorted
    as pandas' ``astype("category")`` sorts them (in order of appearance when they do not
    compare), ordered when all are. None when the categories' dtypes differ (no union).

    >>> _union_categories([pd.CategoricalDtype(["y", "x"]), pd.CategoricalDtype(["z", "x"])]).categories.tolist()
    ['x', 'y', 'z']
    """
    marked = [d for d in dtypes if len(d.categories) == 1 and d.categories[0] == UNKNOWN_CATEGORIES]
    if marked:  # pieces made from a meta (empty, or all missing) add no categories
        dtypes = [d for d in dtypes if d not in marked] or [pd.CategoricalDtype([], ordered=marked[0].ordered)]
    first = dtypes[0]
    if all(d == first for d in dtypes[1:]):
        return first
    empty = [pd.Categorical([], dtype=d) for d in dtypes]
    try:
        try:
            cats = pd.api.types.union_categoricals(empty, sort_categories=True, ignore_order=True).categories
        except TypeError:  # categories that do not compare
            cats = pd.api.types.union_categoricals(empty, ignore_order=True).categories
    except TypeError:  # categories of different dtypes: pandas' concat gives object, so do we
        return None
    return pd.CategoricalDtype(cats, ordered=all(d.ordered for d in dtypes))


def _unify_categoricals(parts: list, meta: Any = None) -> list:
    """The pieces of one object, their categorical columns, values and index recoded to the
    union of the pieces' categories where these differ (pandas' concat would fall back to
    object): where each piece inferred its own, as after ``astype("category")``. Not where
    ``meta`` says the result is not categorical: pieces of columns whose categories differ
    from the start (``concat`` of two collections) come out as pandas' concat gives them."""
    if len(parts) < 2:
        return parts
    first = parts[0]
    if any(type(p) is not type(first) for p in parts):  # (a frame beside a series: left to pandas' concat)
        return parts

    def union_of(dtypes: list, expected: Any) -> Any:
        if expected is not None and not isinstance(expected, pd.CategoricalDtype):
            return None
        if not all(isinstance(d, pd.CategoricalDtype) for d in dtypes):
            return None
        union = _union_categories(dtypes)
        return union if union is not None and any(d != union for d in dtypes) else None

    if not isinstance(first, pd.Index) and isinstance(first.index, pd.CategoricalIndex):
        expected = getattr(getattr(meta, "index", None), "dtype", None)
        union = union_of([p.index.dtype for p in parts], expected)
        if union is not None:
            parts = [p.set_axis(p.index.astype(union)) for p in parts]
    if isinstance(first, pd.DataFrame):
        if not first.columns.is_unique or any(list(p.columns) != list(first.columns) for p in parts):
            return parts
        dtypes = {}
        for col, dtype in first.dtypes.items():
            if isinstance(dtype, pd.CategoricalDtype):
                expected = meta[col].dtype if isinstance(meta, pd.DataFrame) and col in meta.columns else None
                union = union_of([p[col].dtype for p in parts], expected)
                if union is not None:
                    dtypes[col] = union
        return [p.astype(dtypes) for p in parts] if dtypes else parts
    if isinstance(getattr(first, "dtype", None), pd.CategoricalDtype):
        union = union_of([p.dtype for p in parts], getattr(meta, "dtype", None))
        if union is not None:
            return [p.astype(union) for p in parts]
    return parts
