"""A Series' distinct values when there may be many: ``nunique``, and ``unique`` and
``value_counts`` with ``split_out=``.

A tree of distinct values (``reductions``) brings every distinct value of the column to the
one task at its root: for a column of ids, that is the whole column in one process (a
``nunique`` of 2 GB of parquet ids on two workers peaked at 2.1 GB in one of them). Here each
partition keeps its own distinct values (or their counts), a hash shuffle sends each value
to one of ``split_out`` partitions, and each finishes its share alone. Few distinct values
cost a shuffle of a few rows per partition. ``nunique`` does this by default (its answer is
one number either way); ``unique`` keeps pandas' order in the Series' own partitions
(``drop_duplicates``); ``value_counts`` keeps pandas' order in one partition unless
``split_out`` asks for more.

Data flow::

    partition i --its distinct values (counts)--> shuffle on the value --> output j: its share
        nunique:      each share's count --> their sum (a Scalar)
        unique:       each share's distinct values (``split_out`` partitions; by default
                      ``drop_duplicates``, the values kept back in their own partitions)
        value_counts: each share's counts, most frequent first

>>> import pandas as pd, xsched.dataframe as xd
>>> s = xd.from_pandas(pd.Series([3, 1, 3, 2, 1, 3], name="v"), npartitions=3)
>>> s.nunique().compute(), sorted(s.unique(split_out=2).compute())
(3, [1, 2, 3])
>>> s.value_counts(split_out=2).compute().sort_values(ascending=False).to_dict()
{3: 3, 1: 2, 2: 1}
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from .core import Series, map_partitions
from .reductions import _unique_chunk as _distinct, _value_counts_chunk, asking, reduction
from .shuffle import drop_duplicates, shares, shuffle

__all__ = ["nunique", "unique", "value_counts"]

#: the column a Series' values are shuffled as
_VALUES = "__values__"
#: the trees of distinct values (``reductions``), for one partition: the methods as they were
_TREES = {name: getattr(Series, name) for name in ("nunique", "unique", "value_counts")}


def _shares(series: Series, local: Any, n: int, meta: Any, name: str, counts: bool = False, **kwargs: Any) -> Any:
    """``local(part, **kwargs)`` of each partition, hash-shuffled on the Series' values into
    ``n`` partitions: a Series of values (``local`` gives values), or with ``counts`` a frame
    of values and their counts (``local`` gives counts indexed by the values)."""
    kept = map_partitions(local, series, meta=meta, _name=f"{name}-local", **kwargs)
    if counts:
        return shuffle(kept.rename("__count__").rename_axis(_VALUES).reset_index(), [_VALUES], n)
    return shuffle(kept.to_frame(_VALUES), [_VALUES], n)[_VALUES]


def _count_distinct(part: pd.Series, dropna: bool) -> int:
    return int(part.nunique(dropna=dropna))


def _total(counts: list) -> int:
    return int(sum(counts))


def nunique(self: Series, dropna: bool = True, split_every: int | None = None, split_out: Any = None):
    """How many distinct values: each partition's distinct values shuffled into
    ``split_out`` shares (by default one per partition), each share counted, the counts
    added up, so no task holds more than its share of them; ``split_out=1`` is a tree of
    distinct values instead (one task holds them all: for few of them, one task less).

    >>> import pandas as pd, xsched.dataframe as xd
    >>> xd.from_pandas(pd.Series([1, 2, 2, 3, 1, None]), npartitions=2).nunique().compute()
    3
    """
    auto = 1 if asking() else self.npartitions  # (asked among others, in ``agg``: their joint tree)
    n = shares(split_out, self, "nunique", auto)
    if n == 1:
        return _TREES["nunique"](self, dropna, split_every)
    parts = _shares(self, _distinct, n, self._meta, "nunique", dropna=dropna)
    return reduction(parts, _count_distinct, _total, meta=0, token="nunique-shares", split_every=split_every,
                     chunk_kwargs={"dropna": dropna})


def unique(self: Series, split_every: int | None = None, split_out: Any = None):
    """The distinct values in the order they first appear, each with its first row's label,
    in this Series' partitions (``drop_duplicates``: each partition's first row of each value
    meets the others' in a shuffle, so no task holds them all); ``split_out=1`` gathers them
    in one partition (a tree: few of them, one task less); ``split_out=n`` (``True``: as many
    as this Series' partitions) gives ``n`` partitions, each the distinct values of its share
    of them (a hash shuffle, out of order).

    >>> import pandas as pd, xsched.dataframe as xd
    >>> s = xd.from_pandas(pd.Series([4, 1, 4, 2]), npartitions=2)
    >>> s.unique().compute().tolist(), s.unique(split_out=1).npartitions, s.unique(split_out=2).npartitions
    ([4, 1, 2], 1, 2)
    """
    if split_out is None:
        return drop_duplicates(self)
    n = shares(split_out, self, "unique", 1)
    if n == 1:
        return _TREES["unique"](self, split_every)
    parts = _shares(self, _distinct, n, self._meta, "unique", dropna=False)
    return map_partitions(_distinct, parts, False, meta=self._meta, _name="unique-share").rename(self.name)


def _counts(part: pd.DataFrame, normalize_by: Any, name: Any, sort: bool, ascending: bool) -> pd.Series:
    """A share's counts: the partitions' counts of each of its values added up (sorted)."""
    counts = part.groupby(_VALUES, dropna=False, sort=False)["__count__"].sum()
    counts.index.name = name
    if normalize_by is not None:
        counts = counts / normalize_by
        counts.name = "proportion"
    else:
        counts.name = "count"
    return counts.sort_values(ascending=ascending, kind="stable") if sort else counts


def value_counts(self: Series, sort: bool = True, ascending: bool = False, dropna: bool = True,
                 normalize: bool = False, bins: Any = None, split_every: int | None = None, split_out: Any = 1):
    """How often each value occurs, most frequent first: a Series of one partition (a
    tree of each partition's counts); with ``split_out=n`` (``True``: as many as this
    Series' partitions) ``n`` partitions, each value counted in one of them (a hash
    shuffle), each partition most frequent first (the most frequent of all:
    ``.nlargest(k)``). ``bins=`` counts the values in bins as pandas does
    (``binning.binned_counts``: every bin listed).

    >>> import pandas as pd, xsched.dataframe as xd
    >>> s = xd.from_pandas(pd.Series(list("abbccc")), npartitions=3)
    >>> s.value_counts().compute().to_dict(), s.value_counts(split_out=2).nlargest(2).compute().to_dict()
    ({'c': 3, 'b': 2, 'a': 1}, {'c': 3, 'b': 2})
    """
    n = shares(split_out, self, "value_counts", 1)
    if n == 1 or bins is not None:
        if bins is not None and n > 1:
            raise ValueError("value_counts(bins=...): the bins' counts are one partition; leave split_out=1")
        return _TREES["value_counts"](self, sort, ascending, dropna, normalize, bins, split_every)
    meta = self._meta.value_counts(normalize=normalize)
    local = self._meta.value_counts(dropna=dropna, sort=False)
    parts = _shares(self, _value_counts_chunk, n, local, "value-counts", counts=True, dropna=dropna)
    total = None
    if normalize:
        total = self.count() if dropna else self.map_partitions(len, meta=0).sum()
    return map_partitions(_counts, parts, total, self._meta.name, sort, ascending, meta=meta,
                          _name="value-counts-share")


def _install() -> None:
    for f in (nunique, unique, value_counts):
        f.__qualname__ = f"Series.{f.__name__}"
        setattr(Series, f.__name__, f)


_install()
