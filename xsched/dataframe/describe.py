"""``describe``: pandas' summary table of a collection, its statistics computed as one tree.

Each column described asks for pandas' statistics of its kind (count, mean, std, min,
quantiles, max for numbers; count and value counts for text), and ``reductions.joint``
builds all of them, for every column, as one tree: a task per partition computes every
column's partials at once, so a wide frame over many partitions is one tree to build and
run, not one per column and statistic::

    partition i  ->  joint-chunk-i (every column's count, moments, min, max, sample)
                 ->  joint-combine ...  ->  each statistic  ->  each column  ->  the table

>>> import pandas as pd, xsched.dataframe as xd
>>> df = xd.from_pandas(pd.DataFrame({"a": [1.0, 2, 3, 4], "b": [4, 3, 2, 1]}), npartitions=2)
>>> df.describe().compute().loc[["count", "mean", "50%"]].to_dict("list")
{'a': [4.0, 2.5, 2.5], 'b': [4.0, 2.5, 2.5]}
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pandas as pd

from ..graph.layers import new_token
from .core import DataFrame, Series, _Frame
from .reductions import _joined, joint, quantile

__all__ = ["describe"]


def describe(self: _Frame, percentiles: Any = None, include: Any = None, exclude: Any = None,
             split_every: int | None = None):
    """Summary statistics laid out as pandas' ``describe`` (one partition): for numbers
    count, mean, std, min, percentiles (see ``quantile``: approximate on partitions of many
    rows) and max; for dates the same without std; for text, categories and truth values
    count, unique, top and freq. ``include`` / ``exclude`` choose a frame's columns as
    pandas does (``"all"``; by default the numbers and dates, else every column).

    >>> import pandas as pd, xsched.dataframe as xd
    >>> df = xd.from_pandas(pd.DataFrame({"a": range(10), "s": list("xxyxyzxxxx")}), npartitions=3)
    >>> df.describe().compute().loc[["count", "min", "max"], "a"].tolist()
    [10.0, 0.0, 9.0]
    >>> df.s.describe().compute().to_dict() == {"count": 10, "unique": 3, "top": "x", "freq": 7}
    True
    """
    if isinstance(self, Series) and (include is not None or exclude is not None):
        raise TypeError("describe: include= and exclude= choose a DataFrame's columns; a Series has none")
    percentiles = _describe_percentiles(percentiles)
    name = f"describe-{new_token(self._name, percentiles, include, exclude, split_every)}"
    if isinstance(self, Series):
        (pieces,) = joint(self, [None], lambda s, _: _statistics(s, percentiles, split_every))
        return _joined(name, *_layout(self._meta, percentiles, pieces))
    chosen = _describe_columns(self._meta, include, exclude)
    if len(chosen) < len(self.columns) and not self._meta.columns.is_unique:
        self = self.iloc[:, chosen]  # (a label naming several columns, not all described: those described)
        chosen = list(range(len(chosen)))
    names = list(self._meta.columns[chosen])
    asked = joint(self, names, lambda s, _: _statistics(s, percentiles, split_every))
    parts = [_joined(f"{name}-{i}", *_layout(self._meta.iloc[:, at], percentiles, pieces))
             for i, (at, pieces) in enumerate(zip(chosen, asked))]
    meta = pd.DataFrame({i: p._meta for i, p in enumerate(parts)})
    meta.columns = pd.Index(names)
    return _joined(name, _describe_frame, parts, (names,), meta)


def _statistics(column: Series, percentiles: tuple, split_every: int | None) -> list:
    """The reductions pandas' description of ``column`` needs, for its kind."""
    if _describe_kind(column._meta.dtype) == "counts":
        return [column.count(split_every=split_every), column.value_counts(split_every=split_every)]
    out = [column.count(split_every=split_every), column.mean(split_every=split_every)]
    if _describe_kind(column._meta.dtype) != "dates":
        out.append(column.std(split_every=split_every))
    return out + [column.min(split_every=split_every), column.max(split_every=split_every),
                  quantile(column, list(percentiles), split_every)]


def _layout(meta: pd.Series, percentiles: tuple, pieces: list) -> tuple[Callable, list, tuple, pd.Series]:
    """``_joined``'s arguments laying out a column's statistics (``pieces``) as pandas does."""
    kind = _describe_kind(meta.dtype)
    label = meta.name
    if kind == "counts":
        return _describe_counts, pieces, (label,), pd.Series([], dtype=object, name=label)
    if kind == "numbers":
        dtype = _describe_dtype(meta)
        return _describe_one, pieces, (percentiles, label, dtype), pd.Series([], dtype=dtype, name=label)
    return _describe_times, pieces, (percentiles, label), pd.Series([], dtype=object, name=label)


def _describe_percentiles(percentiles: Any) -> tuple:
    """pandas' checks of describe's percentiles, when the expression is built: sorted."""
    if percentiles is None:
        return (0.25, 0.5, 0.75)
    ps = [float(p) for p in np.atleast_1d(percentiles)]
    if any(not 0 <= p <= 1 for p in ps):
        raise ValueError(f"describe: percentiles should all be in the interval [0, 1], got {list(percentiles)}")
    if len(set(ps)) != len(ps):
        raise ValueError(f"describe: percentiles cannot contain duplicates, got {list(percentiles)}")
    return tuple(sorted(ps))


def _percentile_labels(percentiles: tuple) -> list:
    return [f"{p * 100:g}%" for p in percentiles]


def _describe_kind(dtype: Any) -> str:
    """Which of pandas' descriptions a column of ``dtype`` gets (pandas' own order of checks)."""
    if pd.api.types.is_bool_dtype(dtype):
        return "counts"
    if pd.api.types.is_numeric_dtype(dtype):
        return "numbers"
    if pd.api.types.is_datetime64_any_dtype(dtype):
        return "dates"
    if pd.api.types.is_timedelta64_dtype(dtype) or getattr(dtype, "kind", "") == "m":  # (pyarrow's too)
        return "durations"
    return "counts"


def _describe_one(stats: list, percentiles: tuple, name: Any, dtype: Any = "float64") -> pd.Series:
    count, mean, std, lo, hi, qs = stats
    index = ["count", "mean", "std", "min"] + _percentile_labels(percentiles) + ["max"]
    values = [count, mean, std, lo] + list(np.asarray(qs, dtype="float64")) + [hi]
    values = pd.array(values, dtype="Float64").to_numpy(dtype="float64", na_value=np.nan)  # (NA or NaN alike)
    return pd.Series(values, index=index, name=name, dtype=dtype)


def _describe_times(stats: list, percentiles: tuple, name: Any) -> pd.Series:
    """Dates (no std) or durations (with it), as pandas lays them out: objects."""
    count, mean, *std, lo, hi, qs = stats
    index = ["count", "mean"] + ["std"] * len(std) + ["min"] + _percentile_labels(percentiles) + ["max"]
    return pd.Series([count, mean, *std, lo] + list(qs) + [hi], index=index, name=name)


def _describe_counts(stats: list, name: Any) -> pd.Series:
    """count, unique, top, freq from the count and the value counts (most frequent first)."""
    count, counts = stats
    present = counts[counts != 0]
    if len(present):
        return pd.Series([count, len(present), present.index[0], present.iloc[0]],
                         index=["count", "unique", "top", "freq"], name=name)
    return pd.Series([count, 0, np.nan, np.nan], index=["count", "unique", "top", "freq"], name=name, dtype=object)


def _describe_dtype(meta: pd.Series) -> Any:
    """The dtype of pandas' describe of this column: Float64 for its nullable numbers, else float64."""
    return "Float64" if isinstance(meta.dtype, pd.api.extensions.ExtensionDtype) else "float64"


def _describe_frame(columns: list, names: list) -> pd.DataFrame:
    """The columns' descriptions side by side, rows in pandas' order: those of the shortest
    description first, then the rows others add."""
    rows: list = []
    for index in sorted((c.index for c in columns), key=len):
        rows += [r for r in index if r not in rows]
    out = pd.concat([c.reindex(rows) for c in columns], axis=1, sort=False)
    out.columns = pd.Index(names)
    return out


def _describe_columns(meta: pd.DataFrame, include: Any, exclude: Any) -> list:
    """The positions of the columns pandas' ``describe`` would describe (checked when the
    expression is built)."""
    if include is None and exclude is None:
        chosen = meta.select_dtypes(include=[np.number, "datetime"])
        if len(chosen.columns) == 0:
            chosen = meta
    elif isinstance(include, str) and include == "all":
        if exclude is not None:
            raise ValueError("describe: exclude must be None when include is 'all'")
        chosen = meta
    else:
        chosen = meta.select_dtypes(include=include, exclude=exclude)
    if len(chosen.columns) == 0:
        raise ValueError(f"describe: no column to describe (include={include!r}, exclude={exclude!r}); "
                         f"the columns are {dict(meta.dtypes.astype(str))}")
    return [i for i, kept in enumerate(meta.columns.isin(chosen.columns)) if kept] if meta.columns.is_unique \
        else _positions(meta, chosen)


def _positions(meta: pd.DataFrame, chosen: pd.DataFrame) -> list:
    """Where ``select_dtypes``' choice ``chosen`` is in ``meta``, by position (labels may repeat)."""
    out, start = [], 0
    for label, dtype in zip(chosen.columns, chosen.dtypes):
        at = next(i for i in range(start, meta.shape[1]) if meta.columns[i] == label and meta.dtypes.iloc[i] == dtype)
        out.append(at)
        start = at + 1
    return out


Series.describe = DataFrame.describe = describe  # type: ignore[attr-defined]
