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
    """How many values a sorted range holds, and how many distinct ones."""
    values = part[_VALUE].dropna()
    return len(values), values.nunique()


def _offsets(totals: list) -> list:
    """Per range: the values and distinct values of the ranges before it, and of all."""
    counts = np.array([t[0] for t in totals], dtype=np.int64).reshape(-1)
    distinct = np.array([t[1] for t in totals], dtype=np.int64).reshape(-1)
    before, distinct_before = np.cumsum(counts) - counts, np.cumsum(distinct) - distinct
    return [(int(b), int(d), int(counts.sum()), int(distinct.sum())) for b, d in zip(before, distinct_before)]


def _ranked(part: pd.DataFrame, offsets: tuple, method: str, ascending: bool, pct: bool) -> pd.DataFrame:
    """A sorted range's ranks among all values: its own (pandas'), plus those before it."""
    before, distinct_before, count, distinct = offsets
    ranks = part[_VALUE].rank(method=method, ascending=ascending, na_option="keep")
    ranks = ranks + (distinct_before if method == "dense" else before)
    if pct:
        ranks = ranks / (distinct if method == "dense" else count)
    return pd.DataFrame({_PART: part[_PART].to_numpy(), _ROW: part[_ROW].to_numpy(),
                         "__rank__": ranks.to_numpy(dtype="float64")})


def _placed(part: Any, ranks: pd.DataFrame, name: Any) -> pd.Series:
    """Partition ``part``'s ranks in its own rows' order, on its index."""
    values = np.full(len(part), np.nan)
    values[ranks[_ROW].to_numpy()] = ranks["__rank__"].to_numpy()
    return pd.Series(values, index=part.index, name=name)


def rank_series(series: Series, method: str = "average", ascending: bool = True, na_option: str = "keep",
                pct: bool = False) -> Series:
    """``series.rank(...)`` over all partitions (see the module)."""
    if method not in METHODS:
        raise ValueError(f"rank: method must be one of {METHODS}, got {method!r}")
    if na_option != "keep":
        raise NotImplementedError(f"rank(na_option={na_option!r}): only 'keep' (missing values get no rank) runs "
                                  "across partitions here; fill them first (fillna) to rank them")
    _nonempty(series._meta).rank(method=method)  # (pandas' own error for values without an order, now)
    n = series.npartitions
    ann = annotations_in_force()
    tok = new_token(series._name, method, ascending, pct)
    tagged = tagged_rows(series, None, f"rank-{tok}")
    ordered = sort_values(tagged, [_VALUE, _PART, _ROW], ascending=[ascending, True, True])
    name = f"rank-{tok}"
    layers = through_all(name, ordered._keys(), _totals, _offsets, _ranked, (method, ascending, pct),
                         annotations=ann)
    rank_meta = pd.DataFrame({_PART: pd.Series([], dtype="int64"), _ROW: pd.Series([], dtype="int64"),
                              "__rank__": pd.Series([], dtype="float64")})
    ranked = new_collection(LayeredGraph.merge(ordered._graph, new=layers), name, rank_meta,
                            (None,) * (ordered.npartitions + 1))
    back = _exchange(ranked, n, _split_by_part, new_token(name, "back"), "rank-back")
    return map_partitions(_placed, series, back, series._meta.name,
                          meta=pd.Series([], dtype="float64", name=series._meta.name), _name="rank")


def rank(self: _Frame, axis: Any = 0, method: str = "average", numeric_only: bool = False, na_option: str = "keep",
         ascending: bool = True, pct: bool = False):
    """Each value's rank among all values of its column, as pandas' ``rank`` (ties by
    ``method``: average, min, max, first, dense; ``pct`` for fractions), across partitions;
    ``axis=1`` ranks within each row, partition by partition.

    >>> import pandas as pd, xsched.dataframe as xd
    >>> df = xd.from_pandas(pd.DataFrame({"a": [3, 1, 2], "b": [1.0, 1.0, 0.5]}), npartitions=2)
    >>> df.rank().compute().to_dict("list")
    {'a': [3.0, 1.0, 2.0], 'b': [2.5, 2.5, 1.0]}
    """
    if axis in (1, "columns"):
        return self._method("rank", axis=1, method=method, numeric_only=numeric_only, na_option=na_option,
                            ascending=ascending, pct=pct)
    run = partial(rank_series, method=method, ascending=ascending, na_option=na_option, pct=pct)
    if isinstance(self, Series):
        return run(self)
    columns = list(_nonempty(self._meta).rank(numeric_only=numeric_only).columns)
    if not columns:
        return self[columns]
    ranks = [(c, run(self[c])) for c in columns]
    return ranks[0][1].to_frame(name=columns[0])._assign(ranks[1:])


for _cls in (DataFrame, Series):
    _cls.rank = rank  # type: ignore[attr-defined]
