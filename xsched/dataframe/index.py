"""The methods of a partitioned Index (``df.index``) beyond those it shares with frames.

An Index collection is a pandas Index per partition, with the frame's divisions. Methods that
make new labels (arithmetic, ``map``, ``astype``, the fields of times, ``.str``) make an Index
whose divisions no longer bound its labels, so they are cleared (``core.relabelled``), and
which keeps the Index of rows it stands for, so that its masks (``df.index.month == 2``) are
labelled by those rows and filter the frame; ``shift`` by a frequency moves the divisions
with the labels. Those answered from all
labels at once (``nunique``, ``unique``, ``drop_duplicates``, ``value_counts``) are trees of
each partition's distinct labels or counts, in order, so the first occurrence wins as in
pandas. Fields and methods of times (``year``, ``hour``, ``floor``, ``total_seconds``...) are
pandas' own on each partition, found from the Series ``.dt`` namespace, which holds only
value-by-value ones.

>>> import pandas as pd, xsched.dataframe as xd
>>> df = xd.from_pandas(pd.DataFrame({"v": range(4)}, index=pd.date_range("2000-01-30", periods=4)), npartitions=2)
>>> df.index.month.tolist(), df.index.day_name().tolist()[:2]
([1, 1, 2, 2], ['Sunday', 'Monday'])
>>> df.index.to_series().dt.day.tolist(), df.index.month.value_counts().compute().to_dict()
([30, 31, 1, 2], {1: 2, 2: 2})
"""

from __future__ import annotations

from functools import partial
from typing import Any

import pandas as pd

from .core import _NO_META, INDEXERS, Index, MissingAttribute, WrongAccessor, Series, _index_method, _nonempty, map_partitions, \
    relabelled
from .reductions import reduction

#: dtype-given properties of times, the same in every partition: answered from the meta
_FROM_DTYPE = frozenset({"tz", "unit"})


def _time_names(meta: pd.Index) -> frozenset:
    """The value-by-value fields and methods of times this index's labels have (empty if none)."""
    if not isinstance(meta, (pd.DatetimeIndex, pd.TimedeltaIndex, pd.PeriodIndex)):
        return frozenset()
    names = {n for n in dir(pd.Series(_nonempty(meta)).dt) if not n.startswith("_")}
    if not isinstance(meta, pd.PeriodIndex):  # (a period's frequency is its dtype's; a partition's labels have none)
        names.discard("freq")
    return frozenset(names)


_ALL_TIME_NAMES = frozenset().union(*(
    _time_names(pd.Index([], dtype=d)) for d in ("datetime64[ns]", "timedelta64[ns]", "period[D]")))


def _install() -> None:
    def index_getattr(self, name: str):
        if name.startswith("_"):
            raise AttributeError(name)
        if name in _time_names(self._meta):
            if name in _FROM_DTYPE or name == "freq":
                return getattr(self._meta, name)
            if callable(getattr(type(self._meta), name, None)):  # (a method; a field is a property)
                def call(*args: Any, **kwargs: Any):
                    return self._method(name, *args, **kwargs)
                call.__name__ = name
                return call
            out = map_partitions(_index_field, self, name, self._row_labels(), _name=name)
            if isinstance(out, Index):
                return relabelled(out, self)
            return out if isinstance(out._meta.index, type(self._meta)) else out.clear_divisions()  # (components)
        if name in _ALL_TIME_NAMES:
            raise AttributeError(f"'Index' has no attribute {name!r}: its labels are {self._meta.dtype}, not "
                                 "times; make them times first, e.g. xd.to_datetime(df.index)")
        if name == "str":  # (its property raised: pandas' Index.str is for text labels only)
            raise WrongAccessor(self, name)
        raise MissingAttribute("Index", name, type(self._meta), type(self))

    def index_dir(self) -> list[str]:
        return sorted(set(object.__dir__(self)) | _time_names(self._meta))

    def index_str(self):
        """Vectorised string methods of text labels (``df.index.str.upper()``), per partition.

        >>> import pandas as pd, xsched.dataframe as xd
        >>> xd.from_pandas(pd.Series([1, 2], index=["a", "b"]), npartitions=2).index.str.upper().tolist()
        ['A', 'B']
        """
        return INDEXERS["accessor"](self, "str")

    def index_map(self, mapper: Any, na_action: Any = None, meta: Any = _NO_META):
        """Labels mapped through a function, dict or Series, per partition (an Index).

        >>> import pandas as pd, xsched.dataframe as xd
        >>> xd.from_pandas(pd.Series([5, 6], index=[1, 2]), npartitions=2).index.map(lambda v: v * 10).tolist()
        [10, 20]
        """
        return relabelled(map_partitions(_index_method, self, "map", self._row_labels(), mapper, na_action=na_action,
                                         meta=meta, _name="map"), self)

    def index_nunique(self, dropna: bool = True, split_every: int | None = None):
        """How many distinct labels (a tree of distinct labels).

        >>> import pandas as pd, xsched.dataframe as xd
        >>> xd.from_pandas(pd.Series(range(4), index=[1, 2, 2, 3]), npartitions=2).index.nunique().compute()
        3
        """
        return reduction(self, _distinct_labels, _count_labels, _union_labels, meta=0, token="nunique",
                         split_every=split_every, chunk_kwargs={"dropna": dropna, "keep": "first"})

    def index_drop_duplicates(self, keep: Any = "first", split_every: int | None = None):
        """The distinct labels in order of their first (or, ``keep="last"``, last) occurrence:
        an Index of one partition.

        >>> import pandas as pd, xsched.dataframe as xd
        >>> s = xd.from_pandas(pd.Series(range(4), index=[3, 1, 3, 2]), npartitions=2, sort=False)
        >>> s.index.drop_duplicates().tolist()
        [3, 1, 2]
        """
        if keep not in ("first", "last"):
            raise NotImplementedError(f"Index.drop_duplicates(keep={keep!r}): only 'first' and 'last' run as "
                                      "a tree; keep=False needs every label's count (value_counts)")
        merge = partial(_union_labels, keep=keep)
        return reduction(self, _distinct_labels, merge, merge, meta=self._meta, token="drop-duplicates",
                         split_every=split_every, chunk_kwargs={"dropna": False, "keep": keep})

    def unique(self, split_every: int | None = None):
        """The distinct labels in order of appearance (pandas' ``Index.unique``): an Index of
        one partition.

        >>> import pandas as pd, xsched.dataframe as xd
        >>> s = xd.from_pandas(pd.Series(range(5), index=[4, 4, 2, 9, 2]), npartitions=3, sort=False)
        >>> s.index.unique().tolist()
        [4, 2, 9]
        """
        return index_drop_duplicates(self, "first", split_every)

    def value_counts(self, sort: bool = True, ascending: bool = False, dropna: bool = True,
                     normalize: bool = False, split_every: int | None = None):
        """How often each label occurs, most frequent first (a Series of one partition).

        >>> import pandas as pd, xsched.dataframe as xd
        >>> s = xd.from_pandas(pd.Series(range(4), index=list("abbb")), npartitions=2)
        >>> s.index.value_counts().compute().to_dict()
        {'b': 3, 'a': 1}
        """
        return Series.value_counts(self, sort=sort, ascending=ascending, dropna=dropna, normalize=normalize,
                                   split_every=split_every)

    def to_series(self, index: Any = None, name: Any = None):
        """A Series of the labels, indexed by them (or by ``index``, an Index of the same
        partitioning), named as the index unless ``name`` is given.

        >>> import pandas as pd, xsched.dataframe as xd
        >>> xd.from_pandas(pd.Series([5, 6], index=[1, 2]), npartitions=2).index.to_series().compute().to_dict()
        {1: 1, 2: 2}
        """
        if index is not None:
            return map_partitions(_labels_on, self, index, name, _name="to-series")
        return self._method("to_series", name=name)

    def to_frame(self, index: bool = True, name: Any = None):
        """A DataFrame of one column, the labels (named as the index or ``name``), indexed by
        them; ``index=False`` numbers its rows from 0 per partition, as ``reset_index`` does.

        >>> import pandas as pd, xsched.dataframe as xd
        >>> s = xd.from_pandas(pd.Series([5, 6], index=pd.Index([1, 2], name="k")), npartitions=2)
        >>> s.index.to_frame().k.tolist()
        [1, 2]
        """
        frame = self._method("to_frame", name=name) if name is not None else self._method("to_frame")
        return frame if index else frame.reset_index(drop=True)

    def shift(self, periods: int = 1, freq: Any = None):
        """Labels of times moved by ``periods`` steps of ``freq`` (the meta's frequency when
        not given); the divisions move with them (``shifted_divisions``).

        >>> import pandas as pd, xsched.dataframe as xd
        >>> s = xd.from_pandas(pd.Series(range(3), index=pd.date_range("2000", periods=3)), npartitions=2)
        >>> [str(t.date()) for t in s.index.shift(2, freq="D").tolist()]
        ['2000-01-03', '2000-01-04', '2000-01-05']
        """
        meta = self._meta
        if not isinstance(meta, (pd.DatetimeIndex, pd.TimedeltaIndex, pd.PeriodIndex)):
            raise TypeError(f"Index.shift moves labels of times; this index is a {type(meta).__name__} of "
                            f"{meta.dtype}. To move values by rows use Series.shift")
        if freq is None and not isinstance(meta, pd.PeriodIndex):
            freq = meta.freq
            if freq is None:
                raise ValueError("Index.shift: the labels' frequency is not known (a partition's labels "
                                 "carry none); give freq=, e.g. shift(1, freq='D')")
        return shifted_labels(self, meta, periods, freq)

    def to_list(self) -> list:
        """Compute and return the labels as a list (``tolist``).

        >>> import pandas as pd, xsched.dataframe as xd
        >>> xd.from_pandas(pd.Series([5, 6], index=[1, 2]), npartitions=2).index.to_list()
        [1, 2]
        """
        return self.tolist()

    def rename(self, name: Any):
        """The same labels under another name.

        >>> import pandas as pd, xsched.dataframe as xd
        >>> xd.from_pandas(pd.Series([5, 6]), npartitions=2).index.rename("row").name
        'row'
        """
        return self._method("rename", name)

    def isnull(self):
        """Which labels are missing (``isna``): a Series on the labels.

        >>> import pandas as pd, xsched.dataframe as xd
        >>> xd.from_pandas(pd.Series([5, 6], index=[1.0, None]), npartitions=2).index.isnull().tolist()
        [False, True]
        """
        return self.isna()

    def notnull(self):
        """Which labels are present (``notna``): a Series on the labels.

        >>> import pandas as pd, xsched.dataframe as xd
        >>> xd.from_pandas(pd.Series([5, 6], index=[1.0, None]), npartitions=2).index.notnull().tolist()
        [True, False]
        """
        return self.notna()

    def shape(self) -> tuple:
        """``(labels,)``, the count a Scalar (it needs a computation).

        >>> import pandas as pd, xsched.dataframe as xd
        >>> xd.from_pandas(pd.Series(range(5)), npartitions=2).index.shape[0].compute()
        np.int64(5)
        """
        return (self.map_partitions(len, meta=0).sum(),)

    def duplicated(self, keep: Any = "first"):
        """Whether each label repeats an earlier one (``keep="last"``: a later one; ``False``:
        any other), as pandas' ``Index.duplicated``, a mask partitioned like the frame:
        ``df[~df.index.duplicated()]`` keeps each label's first row.

        >>> import pandas as pd, xsched.dataframe as xd
        >>> df = xd.from_pandas(pd.DataFrame({"v": range(4)}, index=[1, 1, 2, 1]), npartitions=2)
        >>> df[~df.index.duplicated()].v.tolist()
        [0, 2]
        """
        return self.to_series().duplicated(keep=keep)

    def is_unique(self):
        """Whether no label repeats (a Scalar: it needs a computation).

        >>> import pandas as pd, xsched.dataframe as xd
        >>> bool(xd.from_pandas(pd.Series(range(3), index=[1, 2, 1]), npartitions=2).index.is_unique.compute())
        False
        """
        return self.to_series().is_unique

    def values(self):
        """The labels as an xsched array, as ``Series.values`` (lengths unknown until computed).

        >>> import pandas as pd, xsched.dataframe as xd
        >>> xd.from_pandas(pd.Series(range(3), index=[4, 5, 6]), npartitions=2).index.values.compute().tolist()
        [4, 5, 6]
        """
        return self.to_series().values

    def argmax(self, skipna: bool = True):
        """The position of the largest label (a Scalar).

        >>> import pandas as pd, xsched.dataframe as xd
        >>> int(xd.from_pandas(pd.Series(range(3), index=[4, 9, 6]), npartitions=2, sort=False).index.argmax().compute())
        1
        """
        return self.to_series().argmax(skipna=skipna)

    def argmin(self, skipna: bool = True):
        """The position of the smallest label (a Scalar).

        >>> import pandas as pd, xsched.dataframe as xd
        >>> int(xd.from_pandas(pd.Series(range(3), index=[4, 1, 6]), npartitions=2, sort=False).index.argmin().compute())
        1
        """
        return self.to_series().argmin(skipna=skipna)

    def sort_values(self, ascending: bool = True, na_position: str = "last"):
        """The labels sorted (through a sort of them as a Series: a shuffle), an Index.

        >>> import pandas as pd, xsched.dataframe as xd
        >>> xd.from_pandas(pd.Series(range(3), index=[4, 9, 6]), npartitions=2).index.sort_values().tolist()
        [4, 6, 9]
        """
        labels = self.to_series(name="__labels__")  # (a column named as the index would be ambiguous to pandas)
        return labels.sort_values(ascending=ascending, na_position=na_position).index

    for dunder in ("__neg__", "__pos__", "__abs__", "__invert__"):
        setattr(Index, dunder, _relabelling(getattr(Index, dunder)))
    Index.__getattr__ = index_getattr  # type: ignore[attr-defined]
    Index.__dir__ = index_dir  # type: ignore[method-assign]
    Index.str = property(index_str)  # type: ignore[attr-defined]
    Index.shape = property(shape)  # type: ignore[attr-defined]
    Index.is_unique = property(is_unique)  # type: ignore[attr-defined]
    Index.values = property(values)  # type: ignore[attr-defined]
    Index.ndim = 1  # type: ignore[attr-defined]
    for f, name in ((index_map, "map"), (index_nunique, "nunique"), (index_drop_duplicates, "drop_duplicates")):
        f.__name__ = name
        setattr(Index, name, f)
    for f in (unique, value_counts, to_series, to_frame, shift, to_list, rename, isnull, notnull, duplicated, argmax,
              argmin, sort_values):
        setattr(Index, f.__name__, f)


def _relabelling(op: Any) -> Any:
    def method(self):
        return relabelled(op(self), self)
    method.__name__ = op.__name__
    return method


def _index_field(labels: pd.Index, name: str, rows: pd.Index | None = None) -> Any:
    out = getattr(labels, name)
    if isinstance(out, (pd.Index, pd.DataFrame, pd.Series)):
        return out
    return pd.Series(out, index=labels if rows is None else rows)  # (an array answer: on the rows, as a mask)


def _labels_on(labels: pd.Index, index: pd.Index, name: Any) -> pd.Series:
    return labels.to_series(index=index, name=name)


def _distinct_labels(part: pd.Index, dropna: bool, keep: str) -> pd.Index:
    out = part.drop_duplicates(keep=keep)
    return out.dropna() if dropna else out


def _union_labels(partials: list, keep: str = "first") -> pd.Index:
    return partials[0].append(list(partials[1:])).drop_duplicates(keep=keep)


def _count_labels(partials: list) -> int:
    return len(_union_labels(partials))


_install()


def shifted_labels(frame: Any, labels: pd.Index, periods: int, freq: Any) -> Any:
    """``frame`` (an Index, Series or DataFrame whose labels of times are ``labels``' kind)
    with its labels moved by ``periods`` steps of ``freq``, partition by partition, and its
    divisions with them (``shifted_divisions``); pandas' own errors come when built.

    >>> import pandas as pd, xsched.dataframe as xd
    >>> s = xd.from_pandas(pd.Series([1, 2], index=pd.date_range("2000", periods=2)), npartitions=2)
    >>> shifted_labels(s, s._meta.index, 1, "D").divisions[0]
    Timestamp('2000-01-02 00:00:00')
    """
    labels.shift(periods, freq=freq)
    out = frame._method("shift", periods, freq=freq)
    out.divisions = shifted_divisions(frame.divisions, labels.dtype, periods, freq)
    if frame.known_divisions and not out.known_divisions:  # (a calendar step: ``core.labels_moved_apart``)
        out._labels_moved = True
    return out


def shifted_divisions(divisions: tuple, dtype: Any, periods: int, freq: Any) -> tuple:
    """Divisions of labels of times moved by ``periods`` steps of ``freq``: moved with them
    by a fixed length (hours, days without a time zone), unknown by a calendar step, which can put a
    later label before an earlier one (two steps of month ends take 30 January 17:00 to
    31 March 17:00, and 31 January 10:00 to 31 March 10:00).

    >>> d = (pd.Timestamp("2000-01-01"), pd.Timestamp("2000-01-05"))
    >>> shifted_divisions(d, d[0].to_datetime64().dtype, 2, "h")[0], shifted_divisions(d, "datetime64[ns]", 1, "ME")
    (Timestamp('2000-01-01 02:00:00'), (None, None))
    """
    if any(d is None for d in divisions):
        return divisions
    step = pd.tseries.frequencies.to_offset(freq) if not isinstance(freq, pd.Timedelta) else None
    fixed = step is None or isinstance(step, pd.offsets.Tick) or isinstance(dtype, pd.PeriodDtype) or (
        isinstance(step, pd.offsets.Day) and getattr(dtype, "tz", None) is None)  # (a day without a zone: 24 h)
    if not fixed:
        return (None,) * len(divisions)
    return tuple(pd.Index(divisions, dtype=dtype).shift(periods, freq=freq))
