"""Reshaping: melt, stack, get_dummies, pivot_table, and categorize, which the last two need.

* ``stack`` runs partition by partition (each row's values become rows of their own, in
  pandas' order); the index gains the columns as a level, so the divisions are cleared;
* ``melt`` keeps pandas' row order (all rows of the first value column, then of the next):
  one piece per value column and partition, joined end to end by ``concat`` (rows numbered
  0, 1, 2... across them as pandas numbers them, unless ``ignore_index=False``);
* ``get_dummies`` and ``pivot_table`` make one column per category, so the columns must be
  known when the expression is built: the columns they spread must be categoricals with
  known categories. ``categorize()`` makes them so (it computes the categories of the columns
  of text, as pandas' ``astype("category")`` would sort them); then ``get_dummies`` runs
  partition by partition, and ``pivot_table`` is a tree of per-(row, column) sums and counts.

>>> import pandas as pd, xsched.dataframe as xd
>>> df = xd.from_pandas(pd.DataFrame({"k": list("abab"), "v": [1, 2, 3, 4]}), npartitions=2).categorize()
>>> xd.get_dummies(df.k, dtype=int).compute().to_dict("list")
{'a': [1, 0, 1, 0], 'b': [0, 1, 0, 1]}
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ..graph.collection import compute_collection
from .categorical import has_known_categories
from .core import DataFrame, Series, _Frame, _nonempty, make_meta, map_partitions
from .pieces import _union_categories
from .methods import concat
from .reductions import reduction

__all__ = ["melt", "get_dummies", "pivot_table", "crosstab", "categorize"]


# --------------------------------------------------------------------------- melt


def _melt_one(part: pd.DataFrame, kwargs: dict, dtypes: dict) -> pd.DataFrame:
    out = pd.melt(part, **kwargs)
    return out.astype({c: d for c, d in dtypes.items() if out[c].dtype != d})


def melt(frame: DataFrame, id_vars: Any = None, value_vars: Any = None, var_name: Any = None,
         value_name: Any = "value", col_level: Any = None, ignore_index: bool = True):
    """Unpivot columns to rows, as ``pandas.melt``: the rows of the first value column, then
    of the next..., numbered 0, 1, 2... (kept with ``ignore_index=False``).

    >>> import pandas as pd, xsched.dataframe as xd
    >>> df = xd.from_pandas(pd.DataFrame({"id": [1, 2], "a": [3, 4], "b": [5, 6]}), npartitions=2)
    >>> xd.melt(df, id_vars="id").compute().to_dict("list")
    {'id': [1, 2, 1, 2], 'variable': ['a', 'a', 'b', 'b'], 'value': [3, 4, 5, 6]}
    """
    kwargs = {"id_vars": id_vars, "var_name": var_name, "value_name": value_name, "col_level": col_level,
              "ignore_index": ignore_index}
    meta = make_meta(pd.melt(_nonempty(frame._meta), value_vars=value_vars, **kwargs))  # (pandas' errors, now)
    dtypes = meta.dtypes.to_dict()
    ids = [] if id_vars is None else [id_vars] if np.ndim(id_vars) == 0 else list(id_vars)
    values = [c for c in frame.columns if c not in ids] if value_vars is None else \
        [value_vars] if np.ndim(value_vars) == 0 else list(value_vars)
    if col_level is not None:
        raise NotImplementedError("melt(col_level=): select the level's columns first (df[[...]])")
    pieces = [map_partitions(_melt_one, frame, dict(kwargs, value_vars=[v]), dtypes, meta=meta, _name="melt")
              for v in values] or [map_partitions(_melt_one, frame, dict(kwargs, value_vars=[]), dtypes, meta=meta,
                                                  _name="melt")]
    return concat(pieces, ignore_index=ignore_index)


# --------------------------------------------------------------------------- categorize


def _text_columns(meta: pd.DataFrame) -> list:
    return [c for c, d in meta.dtypes.items() if d == object or isinstance(d, pd.StringDtype)
            or pd.api.types.is_string_dtype(d) and not isinstance(d, pd.CategoricalDtype)]


def _dtypes_chunk(part: pd.DataFrame, columns: list) -> list:
    return [part[c].dtype if isinstance(part[c].dtype, pd.CategoricalDtype) else
            part[c].astype("category").dtype for c in columns]


def _dtypes_merge(partials: list) -> list:
    return [_union_categories(list(dtypes)) for dtypes in zip(*partials)]


def categorize(frame: DataFrame, columns: Any = None):
    """The frame with ``columns`` (by default its text columns and categoricals of unknown
    categories) as categoricals whose categories are known: computed now, one pass over the
    data, sorted as pandas' ``astype("category")`` sorts them.

    >>> import pandas as pd, xsched.dataframe as xd
    >>> df = xd.from_pandas(pd.DataFrame({"k": list("cab"), "v": [1, 2, 3]}), npartitions=2).categorize()
    >>> df.k.cat.known, df.dtypes["k"].categories.tolist()
    (True, ['a', 'b', 'c'])
    """
    meta = frame._meta
    if columns is None:
        columns = _text_columns(meta) + [c for c, d in meta.dtypes.items() if isinstance(d, pd.CategoricalDtype)
                                         and not has_known_categories(meta[c])]
    else:
        columns = [columns] if np.ndim(columns) == 0 else list(columns)
        frame._check_columns(columns, "categorize")
        columns = [c for c in columns if not (isinstance(meta[c].dtype, pd.CategoricalDtype)
                                              and has_known_categories(meta[c]))]
    if not columns:
        return frame
    found = compute_collection(reduction(frame, _dtypes_chunk, _dtypes_merge, meta=None, token="categorize",
                                         chunk_kwargs={"columns": columns}))
    out = frame._method("astype", dict(zip(columns, found)))
    out._meta = meta.astype(dict(zip(columns, found)))
    return out


def _known_categorical(frame: _Frame, column: Any, what: str) -> None:
    """Fail, naming the column and the fix, unless its values (and so the columns made of
    them) are known now: a categorical with known categories."""
    meta = frame._meta if isinstance(frame, Series) else frame._meta[column]
    if isinstance(meta.dtype, pd.CategoricalDtype) and has_known_categories(meta):
        return
    how = "df.categorize(columns=[...])" if isinstance(frame, DataFrame) else \
        "s.astype('category').cat.as_known()"
    raise ValueError(f"{what}: column {column!r} ({meta.dtype}) makes one output column per value, which "
                     f"must be known before computing: make it a categorical of known categories first "
                     f"({how}, which computes them, or astype(pd.CategoricalDtype([...])))")


# --------------------------------------------------------------------------- get_dummies


def get_dummies(data: _Frame, prefix: Any = None, prefix_sep: Any = "_", dummy_na: bool = False,
                columns: Any = None, sparse: bool = False, drop_first: bool = False, dtype: Any = None):
    """One indicator column per category, as ``pandas.get_dummies``, partition by partition:
    the columns it spreads (``columns``, by default those of text or categories) must be
    categoricals of known categories (see ``categorize``).

    >>> import pandas as pd, xsched.dataframe as xd
    >>> s = xd.from_pandas(pd.Series(list("xyx"), dtype=pd.CategoricalDtype(["x", "y", "z"])), npartitions=2)
    >>> xd.get_dummies(s).columns.tolist()
    ['x', 'y', 'z']
    """
    if sparse:
        raise NotImplementedError("get_dummies(sparse=True): partitions are dense; leave sparse=False")
    if isinstance(data, Series):
        _known_categorical(data, data.name, "get_dummies")
    elif isinstance(data, DataFrame):
        spread = [c for c, d in data.dtypes.items() if isinstance(d, pd.CategoricalDtype)] + \
            _text_columns(data._meta) if columns is None else [columns] if np.ndim(columns) == 0 else list(columns)
        data._check_columns(spread, "get_dummies")
        for c in spread:
            _known_categorical(data, c, "get_dummies")
    else:
        raise TypeError(f"get_dummies takes an xsched DataFrame or Series, got {type(data).__name__}")
    return map_partitions(pd.get_dummies, data, prefix=prefix, prefix_sep=prefix_sep, dummy_na=dummy_na,
                          columns=columns, drop_first=drop_first, dtype=dtype, _name="get-dummies")


# --------------------------------------------------------------------------- pivot_table


#: per aggfunc: the statistics a partition keeps per cell, each merged by its own rule
#: (``first`` of the partitions in order, ``sum`` of sums and counts...)
_PIVOT_STATS = {"mean": ("sum", "count"), "sum": ("sum",), "count": ("count",), "first": ("first",),
                "last": ("last",), "min": ("min",), "max": ("max",)}
_PIVOT_MERGE = {"sum": "sum", "count": "sum", "first": "first", "last": "last", "min": "min", "max": "max"}


def _pivot_chunk(part: pd.DataFrame, index: Any, columns: Any, values: Any, aggfunc: str = "mean") -> pd.DataFrame:
    if aggfunc == "mean" and getattr(part[values].dtype, "kind", "O") in "iu":
        # (a mean sums integers in float64, as pandas' does: an int64 sum of big values wraps around)
        part = part.copy(deep=False)
        part[values] = part[values].to_numpy(dtype="float64", na_value=np.nan)
    grouped = part.groupby([index, columns], observed=True, dropna=False, sort=False)[values]
    return pd.DataFrame({stat: getattr(grouped, stat)() for stat in _PIVOT_STATS[aggfunc]})


def _pivot_merge(partials: list) -> pd.DataFrame:
    joined = pd.concat(partials)  # (in the partitions' order: first and last keep it)
    grouped = joined.groupby(level=[0, 1], observed=True, dropna=False, sort=False)
    return pd.DataFrame({stat: getattr(grouped[stat], _PIVOT_MERGE[stat])() for stat in joined.columns})


def _pivot_final(partials: list, aggfunc: str, meta: pd.DataFrame, observed: bool = False,
                 fill_value: Any = None, stat_dtype: Any = "float64", dropna: bool = False) -> pd.DataFrame:
    totals = _pivot_merge(partials)
    if aggfunc == "mean":
        out = totals["sum"] / totals["count"].where(totals["count"] > 0)
    else:
        out = totals[aggfunc]
    out = out.unstack(level=1)
    seen = [c for c in meta.columns if c in out.columns]  # (the categories with rows)
    out = out.reindex(columns=meta.columns).sort_index(na_position="first")
    out.index.name = meta.index.name
    if aggfunc in ("sum", "count") and not observed:  # (an empty cell of every combination: 0)
        out = out.fillna(0)
    # pandas' dtype: with observed=False every combination is aggregated, an empty one missing
    # (so every value a float) before any fill; with observed=True the combinations without
    # rows are filled as the table is unstacked, and the statistic's dtype stays where every
    # value fits it (a whole number filled in) -- judged over the categories with rows, the
    # columns pandas gives
    floats = not observed and bool(out.isna().any().any())
    if dropna:  # (pandas leaves out the rows of a missing label, and those whose every statistic is)
        out = out[out.index.notna() & ~(out[seen].isna().all(axis=1) if seen else False)]
    if fill_value is not None:
        out = out.fillna(fill_value)
    judged = seen if observed else list(out.columns)
    if isinstance(stat_dtype, pd.api.extensions.ExtensionDtype):  # (pandas' nullable dtypes hold NA)
        return out.astype({c: stat_dtype for c in judged})
    if floats:
        return out.astype({c: "float64" for c in judged if out[c].dtype.kind in "biuf"})
    try:
        cast = out[judged].astype(stat_dtype)
    except (TypeError, ValueError):
        return out
    if judged and bool((cast == out[judged]).all().all()):
        out = out.astype({c: stat_dtype for c in judged})
    return out


def pivot_table(df: DataFrame, index: Any = None, columns: Any = None, values: Any = None,
                aggfunc: str = "mean", fill_value: Any = None, observed: bool = True, dropna: bool = True,
                split_every: int | None = None):
    """A spreadsheet-style pivot, as ``pandas.pivot_table``: a row per value of column
    ``index`` (sorted), a column per category of ``columns`` (a categorical of known
    categories: see ``categorize``), the ``aggfunc`` (``mean``, ``sum``, ``count``,
    ``first``, ``last``, ``min`` or ``max``) of column ``values`` in each cell, as a tree
    reduction. A cell without rows is missing, as pandas gives it (``fill_value`` fills
    it); with ``observed=False`` a sum or count there is 0, as pandas' on every combination
    of categories. ``dropna`` (pandas' default) leaves out the row of a missing label and a
    row whose every cell is missing. The columns are every category, known when built: one
    with no row at all is a column of missing values, which pandas would leave out. Several
    ``values`` (a list) give a table each, side by side under their names in pandas' order.

    >>> import pandas as pd, xsched.dataframe as xd
    >>> df = xd.from_pandas(pd.DataFrame({"i": [1, 1, 2], "c": list("xyx"), "v": [1., 2, 3]}), npartitions=2)
    >>> xd.pivot_table(df.categorize(), index="i", columns="c", values="v", aggfunc="sum").compute().to_dict()
    {'x': {1: 1.0, 2: 3.0}, 'y': {1: 2.0, 2: nan}}
    >>> xd.pivot_table(df.categorize(), index="i", columns="c", values="v", aggfunc="sum",
    ...                fill_value=0).compute().to_dict()
    {'x': {1: 1.0, 2: 3.0}, 'y': {1: 2.0, 2: 0.0}}
    """
    if not isinstance(df, DataFrame):
        raise TypeError(f"pivot_table takes an xsched DataFrame, got {type(df).__name__}")
    if isinstance(values, (list, tuple)) and values and all(np.ndim(v) == 0 for v in values):
        df._check_columns(list(values), "pivot_table")
        values = list(dict.fromkeys(pd.pivot_table(  # (in pandas' order of them: it sorts them)
            _nonempty(df._meta), index=index, columns=columns, values=list(values), aggfunc="first",
            observed=False, dropna=False).columns.get_level_values(0)))
        tables = [pivot_table(df, index, columns, v, aggfunc, fill_value, observed, dropna, split_every)
                  for v in values]
        meta = pd.concat({v: t._meta for v, t in zip(values, tables)}, axis=1)
        return map_partitions(_side_by_side, *tables, list(values), meta=meta, _name="pivot-table-values")
    for what, name in (("index", index), ("columns", columns), ("values", values)):
        if name is None or np.ndim(name) != 0:
            raise ValueError(f"pivot_table: {what}= must name one column of {list(df.columns)}, got {name!r}")
    df._check_columns([index, columns, values], "pivot_table")
    if not isinstance(aggfunc, str) or aggfunc not in _PIVOT_STATS:
        raise ValueError(f"pivot_table: aggfunc={aggfunc!r}; partitions merge one of "
                         f"{', '.join(map(repr, _PIVOT_STATS))} (for several, make a table each and concat them "
                         "with axis=1; for others, groupby([index, columns])[values].agg(...).compute().unstack())")
    _known_categorical(df, columns, "pivot_table")
    stand_in = _nonempty(df._meta)
    meta = make_meta(pd.pivot_table(stand_in, index=index, columns=columns, values=values,
                                    aggfunc=aggfunc, observed=False, dropna=False))
    # (a cell's dtype before any is empty: pandas' statistic of the values per group)
    stat_dtype = stand_in.groupby([index, columns], observed=True)[values].agg(aggfunc).dtype
    return reduction(df[[index, columns, values]], _pivot_chunk, _pivot_final, _pivot_merge, meta=meta,
                     token="pivot-table", split_every=split_every,
                     chunk_kwargs={"index": index, "columns": columns, "values": values, "aggfunc": aggfunc},
                     aggregate_kwargs={"aggfunc": aggfunc, "meta": meta, "observed": bool(observed),
                                       "fill_value": fill_value, "stat_dtype": stat_dtype,
                                       "dropna": bool(dropna)})


def _side_by_side(*tables_and_names: Any) -> pd.DataFrame:
    """The tables of several values side by side, each under its value's name (pandas'
    columns of a pivot table of several values)."""
    *tables, names = tables_and_names
    return pd.concat(dict(zip(names, tables)), axis=1)


# --------------------------------------------------------------------------- methods


def crosstab(index: Any, columns: Any, values: Any = None, rownames: Any = None, colnames: Any = None,
             aggfunc: Any = None, dropna: bool = True, normalize: Any = False, margins: bool = False,
             split_every: int | None = None):
    """How often each pair of values occurs (or ``aggfunc`` of ``values`` per pair), as
    ``pandas.crosstab`` of two Series partitioned alike: a row per value of ``index``
    (sorted), a column per category of ``columns`` (a categorical of known categories: see
    ``categorize``); a pivot table underneath. A category that never occurs is a column of
    zero counts (missing statistics), which pandas leaves out. ``normalize`` divides by the
    total (``True``/``"all"``), each row's (``"index"``) or each column's (``"columns"``).

    >>> import pandas as pd, xsched.dataframe as xd
    >>> df = xd.from_pandas(pd.DataFrame({"a": [1, 1, 2, 2], "b": list("xyxx")}), npartitions=2).categorize()
    >>> xd.crosstab(df.a, df.b).compute().to_dict()
    {'x': {1: 1, 2: 2}, 'y': {1: 1, 2: 0}}
    """
    for what, s in (("index", index), ("columns", columns)):
        if not isinstance(s, Series):
            raise TypeError(f"crosstab: {what}= takes one xsched Series (several, or arrays, are not offered: "
                            f"join them into one column first), got {type(s).__name__}")
    _known_categorical(columns, columns.name, "crosstab(columns=)")
    if margins:
        raise NotImplementedError("crosstab(margins=True): add the totals after computing, "
                                  "table.sum() and table.sum(axis=1)")
    if (values is None) != (aggfunc is None):
        raise ValueError("crosstab: values= and aggfunc= go together (pandas' rule)")
    if normalize is not False and _normalize_how(normalize) is None:
        raise ValueError(f"crosstab: normalize={normalize!r}; give True/'all', 'index' or 'columns'")
    row_name = rownames[0] if rownames else index.name if index.name is not None else "row_0"
    col_name = colnames[0] if colnames else columns.name if columns.name is not None else "col_0"
    frame = index.to_frame(name="__row__")
    frame["__col__"] = columns
    frame["__value__"] = 1 if values is None else values
    table = pivot_table(frame, "__row__", "__col__", "__value__", aggfunc="count" if values is None else aggfunc,
                        fill_value=0 if values is None else None, observed=dropna, dropna=dropna,
                        split_every=split_every)
    meta = table._meta.rename_axis(index=row_name, columns=col_name)
    if normalize is not False:
        meta = meta.astype("float64")
    return table.map_partitions(_crosstab_finish, row_name, col_name, normalize, meta=meta, _name="crosstab")


def _crosstab_finish(table: pd.DataFrame, rows: Any, cols: Any, normalize: Any) -> pd.DataFrame:
    table = table.rename_axis(index=rows, columns=cols)
    how = _normalize_how(normalize)
    if how == "all":  # (as pandas: sums skip missing cells, which are 0 afterwards)
        table = table / table.sum(axis=1).sum(axis=0)
    elif how == "index":
        table = table.div(table.sum(axis=1), axis=0)
    elif how == "columns":
        table = table / table.sum(axis=0)
    return table if how is None else table.fillna(0)


def _normalize_how(normalize: Any) -> str | None:
    """pandas' ``normalize=``: True or "all", "index" or 0, "columns" or 1 (False, which equals
    0, and True, which equals 1, told apart by identity)."""
    if normalize is False:
        return None
    if normalize is True:
        return "all"
    return {"all": "all", "index": "index", "columns": "columns", 0: "index", 1: "columns"}.get(normalize) \
        if isinstance(normalize, (str, int)) else None


def stack(frame: DataFrame, level: Any = -1, **kwargs: Any):
    """The columns (``level`` of them) moved into the index, per partition: a Series (or a
    frame, from columns of several levels) whose rows are each row's values in turn, as
    pandas' ``stack``.

    >>> import pandas as pd, xsched.dataframe as xd
    >>> df = xd.from_pandas(pd.DataFrame({"a": [1, 2], "b": [3, 4]}, index=["x", "y"]), npartitions=2)
    >>> df.stack().compute().to_dict()
    {('x', 'a'): 1, ('x', 'b'): 3, ('y', 'a'): 2, ('y', 'b'): 4}
    """
    return frame._method("stack", level, **kwargs).clear_divisions()


def _install() -> None:
    def frame_melt(self, id_vars: Any = None, value_vars: Any = None, var_name: Any = None,
                   value_name: Any = "value", col_level: Any = None, ignore_index: bool = True):
        return melt(self, id_vars, value_vars, var_name, value_name, col_level, ignore_index)

    def frame_categorize(self, columns: Any = None):
        return categorize(self, columns)

    def frame_pivot_table(self, index: Any = None, columns: Any = None, values: Any = None,
                          aggfunc: str = "mean", fill_value: Any = None, observed: bool = True,
                          dropna: bool = True, split_every: int | None = None):
        return pivot_table(self, index, columns, values, aggfunc, fill_value, observed, dropna, split_every)

    def frame_stack(self, level: Any = -1, **kwargs: Any):
        return stack(self, level, **kwargs)

    for f, doc in ((frame_melt, melt), (frame_categorize, categorize), (frame_pivot_table, pivot_table),
                   (frame_stack, stack)):
        f.__name__, f.__doc__ = doc.__name__, doc.__doc__
        setattr(DataFrame, doc.__name__, f)


_install()
