"""Categories no single partition knows: ``astype("category")`` per partition, and what needs them all.

pandas infers a categorical's categories from its values, so each partition cast alone gets
the categories of its own rows. ``compute()`` unifies them (``core._union_categories``), but a
per-partition answer that depends on the whole set would differ from pandas' (the codes of one
value differ between partitions). Such a cast therefore leaves a meta whose categories are the
marker ``UNKNOWN_CATEGORIES``; ``s.cat.known`` tells, ``s.cat.codes`` recodes each partition to
the union first (one small reduction, computed with the graph), methods that take categories by
position (``rename_categories`` with a list, ``reorder_categories``, ``add_categories``,
``remove_categories``) ask for them to be known first, and ``s.cat.as_known()`` computes them.

>>> import pandas as pd, xsched.dataframe as xd
>>> s = xd.from_pandas(pd.Series(list("bacdab")), npartitions=2).astype("category")
>>> s.cat.known, s.cat.codes.compute().tolist()
(False, [1, 0, 2, 3, 0, 1])
>>> s.cat.as_known().cat.categories.compute().tolist()
['a', 'b', 'c', 'd']
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from ..graph.collection import compute_collection
from .core import DataFrame, Series, _call_method, _refused, map_partitions
from .pieces import UNKNOWN_CATEGORIES, _union_categories
from .reductions import reduction

__all__ = ["UNKNOWN_CATEGORIES", "astype", "has_known_categories", "mark_unknown"]

#: ``s.cat`` methods whose answer depends on every category (their position or their set)
NEEDS_KNOWN = frozenset({"rename_categories", "reorder_categories", "add_categories", "remove_categories"})


def has_known_categories(obj: Any) -> bool:
    """Whether a categorical Series' (or meta's) categories are the data's, not ``UNKNOWN_CATEGORIES``.

    >>> has_known_categories(pd.Series(["a"], dtype="category"))
    True
    """
    dtype = getattr(obj, "_meta", obj).dtype
    return not (isinstance(dtype, pd.CategoricalDtype) and len(dtype.categories) == 1
                and dtype.categories[0] == UNKNOWN_CATEGORIES)


def _infers_categories(dtype: Any) -> bool:
    """Whether casting to ``dtype`` makes each partition infer its own categories."""
    if isinstance(dtype, str):
        return dtype == "category"
    return isinstance(dtype, pd.CategoricalDtype) and dtype.categories is None


def _unknown(dtype: pd.CategoricalDtype) -> pd.CategoricalDtype:
    return pd.CategoricalDtype([UNKNOWN_CATEGORIES], ordered=bool(dtype.ordered))


def mark_unknown(meta: Any, columns: Any = None) -> Any:
    """``meta`` with the categories of its categorical ``columns`` (all when None; a Series'
    own) marked unknown: for readers whose files each carry categories of their own.

    >>> mark_unknown(pd.DataFrame({"c": pd.Categorical([])})).c.cat.categories.tolist()
    ['__UNKNOWN_CATEGORIES__']
    """
    if isinstance(meta, pd.Series):
        return meta.astype(_unknown(meta.dtype)) if isinstance(meta.dtype, pd.CategoricalDtype) else meta
    wanted = meta.columns if columns is None else [c for c in columns if c in meta.columns]
    unknown = {c: _unknown(meta[c].dtype) for c in wanted if isinstance(meta[c].dtype, pd.CategoricalDtype)}
    return meta.astype(unknown) if unknown else meta


def astype(frame: Any, dtype: Any, *args: Any, **kwargs: Any):
    """Cast to ``dtype`` (a dtype, or a ``{column: dtype}`` dict for a DataFrame), per partition.
    ``"category"`` without the categories marks them unknown (see the module's docstring).

    >>> import pandas as pd, xsched.dataframe as xd
    >>> xd.from_pandas(pd.Series([1, 2]), npartitions=1).astype(float).dtype
    dtype('float64')
    >>> xd.from_pandas(pd.Series(["1", "20"]), npartitions=2).astype(int).compute().tolist()
    [1, 20]
    """
    try:  # (the empty meta's cast gives the dtypes: the stand-in's made-up values would not cast to numbers)
        meta = frame._meta.astype(dtype, *args, **kwargs)
    except Exception as exc:
        raise _refused(frame, "astype", exc, "astype", "an empty frame") from exc
    out = map_partitions(_call_method, frame, "astype", dtype, *args, meta=meta, _name="astype", **kwargs)
    inferring = inferred_columns(dtype, out._meta)
    if inferring is None or inferring:
        out._meta = mark_unknown(out._meta, inferring)
    return out


def inferred_columns(dtype: Any, meta: Any) -> list | None:
    """The columns of ``meta`` whose categories a cast to ``dtype`` (a dtype, or a dict of them)
    lets each partition infer; None for a Series (or every column) that does.

    >>> inferred_columns({"a": "category", "b": float}, pd.DataFrame({"a": [], "b": []}))
    ['a']
    """
    if isinstance(dtype, dict):
        return [c for c, d in dtype.items() if _infers_categories(d)]
    return None if _infers_categories(dtype) else []


def union_dtype(series: Series):
    """A Scalar: the dtype whose categories are the union of every partition's.

    >>> import pandas as pd, xsched.dataframe as xd
    >>> s = xd.from_pandas(pd.Series(list("bca")), npartitions=3).astype("category")
    >>> union_dtype(s).compute().categories.tolist()
    ['a', 'b', 'c']
    """
    return reduction(series, _dtype, _dtype_union, _dtype_union, meta=series._meta.dtype, token="cat-union")


def categories(series: Series):
    """``s.cat.categories``: the union of the partitions' categories, as ``compute()`` unifies
    them (an Index; computed, since the meta's may be ``UNKNOWN_CATEGORIES``).

    >>> import pandas as pd, xsched.dataframe as xd
    >>> categories(xd.from_pandas(pd.Series(list("ba")), npartitions=2).astype("category")).compute().tolist()
    ['a', 'b']
    """
    meta = pd.Index([], dtype=series._meta.dtype.categories.dtype if has_known_categories(series) else object)
    return reduction(series, _dtype, _categories_union, _dtype_union, meta=meta, token="cat-categories")


def _dtype(part: Any) -> Any:
    return part.dtype


def _dtype_union(dtypes: list) -> pd.CategoricalDtype:
    union = _union_categories(dtypes)
    if union is None:
        raise TypeError(f"cat.categories: the partitions' categories have different dtypes "
                        f"({sorted({str(d.categories.dtype) for d in dtypes})}); astype one categorical "
                        "dtype first")
    return union


def _categories_union(dtypes: list) -> pd.Index:
    return _dtype_union(dtypes).categories


def codes(series: Series):
    """``s.cat.codes``, each partition's values coded against the categories of all partitions
    when the meta does not know them (pandas' codes of the whole column).

    >>> import pandas as pd, xsched.dataframe as xd
    >>> codes(xd.from_pandas(pd.Series(list("bab")), npartitions=2).astype("category")).compute().tolist()
    [1, 0, 1]
    """
    if has_known_categories(series):
        return map_partitions(_codes, series, None, _name="cat-codes")
    return map_partitions(_codes, series, union_dtype(series), _name="cat-codes")


def _codes(part: pd.Series, dtype: pd.CategoricalDtype | None) -> pd.Series:
    if dtype is not None and dtype != part.dtype:
        part = part.astype(dtype)
    return part.cat.codes


def as_known(series: Series):
    """The Series with its categories computed now (the union of every partition's), so that
    every partition shares them and the meta knows them.

    >>> import pandas as pd, xsched.dataframe as xd
    >>> as_known(xd.from_pandas(pd.Series(list("ba")), npartitions=2).astype("category")).cat.known
    True
    """
    if has_known_categories(series):
        return series
    dtype = compute_collection(union_dtype(series))
    out = series._method("astype", dtype)
    out._meta = series._meta.astype(dtype)
    return out


def needs_known(series: Series, method: str) -> None:
    """Fail when ``s.cat.<method>`` depends on every category and the meta does not know them.

    >>> import pandas as pd, xsched.dataframe as xd
    >>> needs_known(xd.from_pandas(pd.Series(list("ba")), npartitions=2).astype("category"), "reorder_categories")
    Traceback (most recent call last):
    ...
    ValueError: None.cat.reorder_categories needs the categories, ...
    """
    if method in NEEDS_KNOWN and not has_known_categories(series):
        raise ValueError(f"{series.name!r}.cat.{method} needs the categories, which each partition infers "
                         "for itself after astype('category'): call .cat.as_known() first (computes them), "
                         "or cast with astype(pd.CategoricalDtype(categories=[...]))")


def _install() -> None:
    """``astype`` on the collections, with the categories' bookkeeping."""
    def method(self, dtype: Any, *args: Any, **kwargs: Any):
        return astype(self, dtype, *args, **kwargs)
    method.__name__, method.__doc__ = "astype", astype.__doc__
    Series.astype = method  # type: ignore[attr-defined]
    DataFrame.astype = method  # type: ignore[attr-defined]


_install()
