"""``rank``: each value's rank among all values of its column, across partitions.

A rank counts the values before it, in every partition, so the column is sorted first (the
range exchange of ``sort_values``, each row tagged with its partition and position, ties in
their original order): every value then sits with all values equal to it, after every
smaller one. Each sorted partition ranks its own values with pandas' ``rank``; one small task
shares out how many values (and distinct values, for ``dense``) the partitions before each
hold, which are added on; and the ranks return to their rows' partitions through a second
exchange::

    column + tags --sort by (value, partition, row)--> ranges of values, in order
    range j --_totals--> (values, distinct values)   all totals --_offsets--> per range: those before it
    range j + its offsets --_ranked--> pandas' rank + offset (pct: / the whole count)
    ranks --exchange by partition--> partition i --_placed--> its ranks in its rows' order

So the ranks are pandas' exactly; memory is that of the two exchanges. ``sort_values``
estimates its ranges from quantiles when the expression is built, so building a rank runs
that small computation. ``axis=1`` ranks within rows, partition by partition.

>>> import pandas as pd, xsched.dataframe as xd
>>> s = xd.from_pandas(pd.Series([30, 10, 20, 10, None]), npartitions=3)
>>> s.rank().compute().tolist()
[4.0, 1.5, 3.0, 1.5, nan]
>>> s.rank(method="dense", ascending=False).compute().tolist()
[1.0, 3.0, 2.0, 3.0, nan]
>>> s.rank(na_option="top").compute().tolist()
[5.0, 2.5, 4.0, 2.5, 1.0]
"""

from __future__ import annotations

from functools import partial
from typing import Any

import numpy as np
import pandas as pd

from ..graph.layers import LayeredGraph, annotations_in_force, new_token
from ..graph.partials import through_all
from .core import DataFrame, Series, _Frame, _nonempty, map_partitions, new_collection
from .shuffle import _PART, _ROW, _exchange, _split_by_part, sort_values, tagged_rows

__all__: list[str] = []

METHODS = ("average", "min", "max", "first", "dense")
_VALUE = "__value__"


def _totals(part: pd.DataFrame) -> tuple:
    """How many values a sorted range holds, how many distinct ones, and how many missing."""
    missing = part[_VALUE].isna()
    values = part[_VALUE][~missing]
    return len(values), values.nunique(), int(missing.sum())


def _offsets(totals: list) -> list:
    """Per range: the values, distinct values and missing values of the ranges before it, and
    of all."""
    counts, distinct, missing = (np.array([t[i] for t in totals], dtype=np.int64).reshape(-1) for i in range(3))
    before, distinct_before, missing_before = (np.cumsum(a) - a for a in (counts, distinct, missing))
    return [(int(b), int(d), int(counts.sum()), int(distinct.sum()), int(m), int(missing.sum()))
            for b, d, m in zip(before, distinct_before, missing_before)]


def _ranked(part: pd.DataFrame, offsets: tuple, method: str, ascending: bool, pct: bool,
            na_option: str = "keep") -> pd.DataFrame:
    """A sorted range's ranks among all values: its own (pandas'), plus those before it. With
    ``na_option`` "top" or "bottom" the missing values (after all others, in the rows' order)
    rank as one tie before or after every value, as pandas ranks them."""
    before, distinct_before, count, distinct, missing_before, n_missing = offsets
    dense = method == "dense"
    ranks = part[_VALUE].rank(method=method, ascending=ascending, na_option="keep").to_numpy(dtype="float64")
    ranks = ranks + (distinct_before if dense else before)
    if na_option != "keep" and n_missing:
        missing = part[_VALUE].isna().to_numpy()
        if na_option == "top":
            ranks = ranks + (1 if dense else n_missing)  # (every value after the missing ones)
            shift = 0
        else:
            shift = distinct if dense else count
        nth = missing_before + np.arange(1, int(missing.sum()) + 1)  # (their order: the rows')
        tie = {"average": (n_missing + 1) / 2, "min": 1, "max": n_missing, "first": nth, "dense": 1}[method]
        ranks[missing] = tie + shift
        count, distinct = count + n_missing, distinct + 1
    if pct:
        ranks = ranks / (distinct if dense else count)
    return pd.DataFrame({_PART: part[_PART].to_numpy(), _ROW: part[_ROW].to_numpy(), "__rank__": ranks})


def _placed(part: Any, ranks: pd.DataFrame, name: Any, dtype: Any = "float64") -> pd.Series:
    """Partition ``part``'s ranks in its own rows' order, on its index, in pandas' dtype."""
    values = np.full(len(part), np.nan)
    values[ranks[_ROW].to_numpy()] = ranks["__rank__"].to_numpy()
    out = pd.Series(values, index=part.index, name=name)
    return out if out.dtype == dtype else out.astype(dtype)


def rank_series(series: Series, method: str = "average", ascending: bool = True, na_option: str = "keep",
                pct: bool = False, out_dtype: Any = None) -> Series:
    """``series.rank(...)`` over all partitions (see the module); ``out_dtype``: the ranks'
    dtype, when not the Series' own (a frame's columns rank as float64 in pandas, nullable
    ones too)."""
    if method not in METHODS:
        raise ValueError(f"rank: method must be one of {METHODS}, got {method!r}")
    if na_option not in ("keep", "top", "bottom"):
        raise ValueError(f"rank: na_option must be 'keep', 'top' or 'bottom', got {na_option!r}")
    # (pandas' own error for values without an order, now; and the dtype it ranks in: float64,
    # or Float64 / UInt64 / pyarrow's for nullable values)
    own = _nonempty(series._meta).rank(method=method, ascending=ascending, na_option=na_option, pct=pct).dtype
    out_dtype = own if out_dtype is None else out_dtype
    dtype = series._meta.dtype
    if isinstance(dtype, pd.CategoricalDtype) and not dtype.ordered:  # (pandas ranks these by value, not code)
        values = dtype.categories.dtype
        series = series.astype("float64" if getattr(values, "kind", "") in "iub" else values)  # (NaN fits)
    n = series.npartitions
    ann = annotations_in_force()
    tok = new_token(series._name, method, ascending, pct, na_option)
    tagged = tagged_rows(series, None, f"rank-{tok}")
    ordered = sort_values(tagged, [_VALUE, _PART, _ROW], ascending=[ascending, True, True])
    name = f"rank-{tok}"
    layers = through_all(name, ordered._keys(), _totals, _offsets, _ranked, (method, ascending, pct, na_option),
                         annotations=ann)
    rank_meta = pd.DataFrame({_PART: pd.Series([], dtype="int64"), _ROW: pd.Series([], dtype="int64"),
                              "__rank__": pd.Series([], dtype="float64")})
    ranked = new_collection(LayeredGraph.merge(ordered._graph, new=layers), name, rank_meta,
                            (None,) * (ordered.npartitions + 1))
    back = _exchange(ranked, n, _split_by_part, new_token(name, "back"), "rank-back")
    return map_partitions(_placed, series, back, series._meta.name, out_dtype,
                          meta=pd.Series([], dtype=out_dtype, name=series._meta.name, index=series._meta.index[:0]),
                          _name="rank")


def rank(self: _Frame, axis: Any = 0, method: str = "average", numeric_only: bool = False, na_option: str = "keep",
         ascending: bool = True, pct: bool = False):
    """Each value's rank among all values of its column, as pandas' ``rank`` (ties by
    ``method``: average, min, max, first, dense; ``pct`` for fractions; missing values
    without a rank, or ranked first or last with ``na_option="top"`` / ``"bottom"``), across
    partitions; ``axis=1`` ranks within each row, partition by partition.

    >>> import pandas as pd, xsched.dataframe as xd
    >>> df = xd.from_pandas(pd.DataFrame({"a": [3, 1, 2], "b": [1.0, 1.0, 0.5]}), npartitions=2)
    >>> df.rank().compute().to_dict("list")
    {'a': [3.0, 1.0, 2.0], 'b': [2.5, 2.5, 1.0]}
    """
    if self._axis(axis, "rank", none=False) == 1:
        return self._method("rank", axis=1, method=method, numeric_only=numeric_only, na_option=na_option,
                            ascending=ascending, pct=pct)
    run = partial(rank_series, method=method, ascending=ascending, na_option=na_option, pct=pct)
    if isinstance(self, Series):
        return run(self)
    ranked = _nonempty(self._meta).rank(method=method, numeric_only=numeric_only, na_option=na_option,
                                        ascending=ascending, pct=pct)
    columns = list(ranked.columns)
    if not columns:
        return self[columns]
    ranks = [(c, run(self[c], out_dtype=ranked[c].dtype)) for c in columns]  # (pandas' frame dtypes)
    return ranks[0][1].to_frame(name=columns[0])._assign(ranks[1:])


for _cls in (DataFrame, Series):
    _cls.rank = rank  # type: ignore[attr-defined]
