"""``groupby(pd.Grouper(...))``, alone or among other keys; the index's name among keys.

A Grouper alone with ``freq=`` is ``resample`` (its bins cross partition boundaries), of the
index or, after ``set_index``, of a column. Among other keys
(``df.groupby([pd.Grouper(freq="1D"), "name"])``) each Grouper becomes a column of bin labels
made partition by partition by pandas' own binning, so its sides, labels and calendar anchors
are pandas'; the grouping then runs on columns, and its results' index levels take the
Grouper's name back (the index's, or the key column's) through ``GrouperKeys``. A key column
binned by a Grouper is not aggregated, as in pandas. The index's name among the keys
(``df.groupby(["k", "m"])`` where the index is named ``k``) is grouped the same way: its
labels become a column of a name of its own, which the results' index levels name ``k``.

Bins of a fixed length (hours, days...) anchored to the data's first or last day or time
(``origin`` "start_day", "start", "end", "end_day") must be the same in every partition: the
frame's divisions give those times. pandas anchors calendar days of zoned times to the first
day whatever the origin: bins of several such days get that day among each partition's
times. A day's whole number of bins needs no anchor (every midnight starts one); unknown
divisions otherwise are refused with the way round (``origin="epoch"`` or a Timestamp).

>>> import pandas as pd, xsched.dataframe as xd
>>> pdf = pd.DataFrame({"k": list("abab"), "v": [1, 2, 3, 4]},
...                    index=pd.date_range("2024-01-01 20:00", periods=4, freq="3h", name="t"))
>>> df = xd.from_pandas(pdf, npartitions=2)
>>> df.groupby([pd.Grouper(freq="1D"), "k"]).v.sum().compute()
t           k
2024-01-01  a    1
            b    2
2024-01-02  a    3
            b    4
Name: v, dtype: int64
"""

from __future__ import annotations

import warnings
from functools import partial, wraps
from typing import Any

import numpy as np
import pandas as pd

from .core import DataFrame, Series, _Frame, map_partitions
from .groupby import GROUPERS, GroupBy, SeriesGroupBy, _level_names, names_index, no_iteration, one_label
from .groupby_whole import GroupedWindow

__all__ = ["GrouperKeys"]

DAY = pd.Timedelta("1D")
#: the least a zone's clocks change by: zoned midnights are a whole number of bins apart when
#: the bins divide it
_CLOCK_CHANGE = pd.Timedelta("30min")
#: the grouped methods giving rows of the frame, whole: a binned key column among them, as pandas'
_ROW_METHODS = frozenset({"head", "tail", "nth", "filter", "get_group", "sample"})
#: the origins that anchor fixed-length bins to the data's own first day or time
_DATA_ORIGINS = ("start_day", "start")
#: the origins that anchor them to its last (the bins run back from it)
_LAST_ORIGINS = ("end", "end_day")


def grouped(frame: _Frame, by: Any, **options: Any) -> Any:
    """``frame.groupby(by)`` where ``by`` is a Grouper, or a list holding one or the index's
    name (the hook ``groupby.GROUPERS``); None where ``by`` holds neither."""
    if isinstance(by, pd.Grouper):
        return _by_grouper(frame, by, **options)
    if isinstance(by, (list, tuple)) and (any(isinstance(k, pd.Grouper) for k in by) or names_index(frame, by)):
        return _among_keys(frame, list(by), **options)
    return None


def _by_grouper(frame: Any, grouper: pd.Grouper, **options: Any) -> Any:
    """``groupby(pd.Grouper(...))``: bins of time of the index (``freq=``) are ``resample``'s
    with the Grouper's sides and origin, which is what pandas gives; of a column
    (``key=`` and ``freq=``), the same after that column becomes the sorted index
    (``set_index``: a shuffle unless its divisions are known); ``key=`` alone is that
    column's grouping. Anything else is refused, naming the way round."""
    freq = getattr(grouper, "freq", None)
    if _column_of(grouper) is not None:
        return frame.groupby(grouper.key, **options)
    if grouper.key is not None:
        _check_times(frame, grouper)
        frame = frame.set_index(grouper.key)
    if not options.get("as_index", True):
        raise NotImplementedError("groupby(pd.Grouper(freq=...), as_index=False): the bins are the index; "
                                  "reset_index() the result")
    return frame.resample(freq, closed=grouper.closed, label=grouper.label, origin=grouper.origin,
                          offset=grouper.offset)


def _column_of(grouper: pd.Grouper) -> Any:
    """The column a Grouper without ``freq=`` names (its ``key``), else None (it bins times);
    a level, or neither key nor freq, is refused."""
    if grouper.level is not None:
        raise NotImplementedError("groupby(pd.Grouper(level=...)): group by columns; reset_index() first")
    if getattr(grouper, "freq", None) is not None:
        return None
    if grouper.key is None:
        raise ValueError("groupby(pd.Grouper()): give key= (a column) or freq= (bins of time of the index)")
    return grouper.key


def _check_times(frame: _Frame, grouper: pd.Grouper) -> None:
    """A Grouper with ``freq=`` bins times: its key column (or the index) must hold them."""
    if grouper.key is None:
        dtype, what = frame._meta.index.dtype, "an index of times, and the index"
    else:
        if not isinstance(frame, DataFrame):
            raise TypeError(f"groupby(pd.Grouper(key={grouper.key!r})): a Series has no columns; group its index "
                            "by pd.Grouper(freq=...)")
        frame._check_columns([grouper.key], "groupby(pd.Grouper(key=...))")
        dtype, what = frame._meta[grouper.key].dtype, f"a column of times, and {grouper.key!r}"
    if not pd.api.types.is_datetime64_any_dtype(dtype):
        fix = "xd.to_datetime it first" if grouper.key is not None else "set_index(<a column of times>) first"
        raise TypeError(f"groupby(pd.Grouper(freq=...)): bins of time need {what} is {dtype}; {fix}")


def _among_keys(frame: _Frame, by: list, **options: Any) -> "GrouperKeys":
    """``frame.groupby([pd.Grouper(freq=...), "name", ...])``: each Grouper's bins a column,
    and the index's labels one where its name is among the keys."""
    if not isinstance(frame, DataFrame):
        raise NotImplementedError("groupby: a pd.Grouper among other keys of a Series; make it a frame first "
                                  "(s.to_frame()) and select the column after grouping")
    if not options.get("as_index", True):
        raise NotImplementedError("groupby([pd.Grouper(freq=...), ...], as_index=False): the bins are the "
                                  "index; reset_index() the result")
    keys: list = []
    made: list = []
    names: dict = {}
    binned: list = []
    bins: list = []  # (the columns of Grouper bins)
    index_name = frame._meta.index.name if names_index(frame, by) else None
    if index_name is not None:  # (the index's labels as a column: grouped as the other keys)
        index_column = _hidden(frame, "__xsched_index__")
        made.append((index_column, frame.index.to_series()))
        names[index_column] = index_name
    for key in by:
        if index_name is not None and not isinstance(key, pd.Grouper) and one_label(key) and key == index_name:
            keys.append(index_column)
            continue
        if not isinstance(key, pd.Grouper):
            keys.append(key)
            continue
        if _column_of(key) is not None:
            keys.append(key.key)
            continue
        _check_times(frame, key)
        hidden = _hidden(frame, f"__xsched_bins_{len(made)}__")
        source = frame._meta.index if key.key is None else frame._meta[key.key]
        spec, anchor = _binning(frame, key, getattr(source.dtype, "tz", None))
        meta = pd.Series(pd.DatetimeIndex([], dtype=source.dtype), index=frame._meta.index[:0], name=hidden)
        made.append((hidden, map_partitions(bins_of, frame, key.key, spec, hidden, anchor, meta=meta,
                                            _name="grouper-bins")))
        bins.append(hidden)
        names[hidden] = frame._meta.index.name if key.key is None else key.key
        if key.key is not None:
            binned.append(key.key)
        keys.append(hidden)
    frame = frame._assign(made)
    if bins and not options.get("dropna", True):  # (a row of no time is in no bin, whatever dropna says: pandas')
        frame = frame[_all_timed(frame, bins)]
    rows = frame.groupby(keys, **options)  # (whole rows, the binned columns too: head, filter...)
    if binned:  # (a binned column is a key: not aggregated)
        frame = frame.drop(columns=list(dict.fromkeys(binned)))
    shown = ", ".join(_shown(k) for k in by)
    return GrouperKeys(frame.groupby(keys, **options), names, f"[{shown}]", rows)


def _hidden(frame: DataFrame, name: str) -> str:
    """``name``, lengthened until no column of ``frame`` has it."""
    while name in frame.columns:
        name += "_"
    return name


def _shown(key: Any) -> str:
    """A grouping key as a user wrote it, a Grouper by what it was given."""
    if not isinstance(key, pd.Grouper):
        return repr(key)
    given = {"key": key.key, "freq": getattr(getattr(key, "freq", None), "freqstr", None)}
    return "pd.Grouper(" + ", ".join(f"{k}={v!r}" for k, v in given.items() if v is not None) + ")"


def _all_timed(frame: DataFrame, columns: list) -> Series:
    """Whether each row has a bin in every one of ``columns``."""
    timed = frame[columns[0]].notna()
    for column in columns[1:]:
        timed = timed & frame[column].notna()
    return timed


def _binning(frame: _Frame, grouper: pd.Grouper, tz: Any) -> tuple[dict, Any]:
    """The Grouper's binning as pandas' arguments, and a time every partition's bins are
    anchored to as the data's are (None where each partition's own anchor is the same):
    fixed-length bins get that time as their origin; pandas anchors calendar days of zoned
    times (several days long) to the first day whatever the origin, so that day is then put
    among each partition's times, and its bin left out."""
    spec = {"freq": grouper.freq, "closed": grouper.closed, "label": grouper.label, "origin": grouper.origin,
            "offset": grouper.offset}
    origin, freq = grouper.origin, grouper.freq
    zoned_days = isinstance(freq, pd.offsets.Day) and not isinstance(freq, pd.offsets.Tick) and tz is not None
    if (zoned_days or not isinstance(freq, (pd.offsets.Tick, pd.offsets.Day))) and origin != "start_day":
        warnings.warn(f"groupby(pd.Grouper(freq={freq.freqstr!r}, origin={origin!r})): the origin does not take "
                      "effect with calendar bins (pandas' rule), only with bins of a fixed length (h, min, s...)",
                      RuntimeWarning, stacklevel=5)
        spec["origin"] = origin = "start_day"  # (pandas ignores it there; told once here, not in every task)
    if zoned_days:
        if freq.n == 1:
            return spec, None  # (every midnight starts a bin)
        origin = "start_day"
    elif not isinstance(freq, (pd.offsets.Tick, pd.offsets.Day)) or not isinstance(origin, str) or (
            origin not in _DATA_ORIGINS + _LAST_ORIGINS):
        return spec, None  # (calendar bins, "epoch" or a given time: the same in every partition)
    else:
        length = pd.Timedelta(days=freq.n) if isinstance(freq, pd.offsets.Day) else pd.Timedelta(freq)
        if origin == "start_day" and DAY % length == pd.Timedelta(0) and (
                tz is None or _CLOCK_CHANGE % length == pd.Timedelta(0)):
            return spec, None  # (every midnight starts a bin: a partition's first day is as good as the data's)
    if grouper.key is None and frame.known_divisions:  # (the first and last times: the divisions' ends)
        first, last = pd.Timestamp(frame.divisions[0]), pd.Timestamp(frame.divisions[-1])
        if zoned_days:
            return spec, first
        spec["origin"] = {"start_day": first.normalize(), "start": first, "end": last,
                          "end_day": last.ceil("D")}[origin]
        return spec, None
    where = "the column's" if grouper.key is not None else "the index's"
    when = {"start_day": "start at {} first day", "start": "start at {} first time",
            "end": "run back from {} last time", "end_day": "run back from {} last day"}[origin].format(where)
    fix = ("give them in hours (freq='48h') or tz_convert(None) the times" if zoned_days else
           "anchor them: pd.Grouper(..., origin='epoch') or origin=pd.Timestamp(...)")
    raise NotImplementedError(
        f"groupby([pd.Grouper(freq={freq.freqstr!r}, origin={grouper.origin!r}), ...]): bins of that length {when}, "
        f"which is not known before computing; {fix}"
        + ("" if grouper.key is not None else ", or set_index(sorted=True) so the divisions are known"))


def bins_of(part: pd.DataFrame, key: Any, spec: dict, name: str, anchor: Any = None) -> pd.Series:
    """The label of the bin of each row of ``part`` (of its index, or of column ``key``):
    pandas' own bins of the times, sorted as its Grouper sorts them, put back in the rows'
    order; a missing time gets NaT.

    >>> import pandas as pd
    >>> part = pd.DataFrame({"v": [1, 2, 3]}, index=pd.to_datetime(["2024-01-02 05:00", "2024-01-01 23:00",
    ...                                                              "2024-01-02 13:00"]))
    >>> bins_of(part, None, {"freq": "12h"}, "bins").dt.hour.tolist()
    [0, 12, 12]
    """
    times = part.index if key is None else part[key]
    values = pd.DatetimeIndex(times)
    rows = pd.Series(np.arange(len(values)), index=values)
    rows = rows[values.notna()]
    labels = pd.Series(pd.NaT, index=part.index, name=name, dtype=values.dtype)
    if len(rows):
        if anchor is not None:  # (a row at the anchor, position -1: its bin is left out below)
            rows = pd.concat([pd.Series([-1], index=pd.DatetimeIndex([anchor]).as_unit(values.unit)), rows])
        rows = rows.sort_index(kind="stable")
        grouped = rows.groupby(pd.Grouper(**spec))
        edges = grouped.size().index  # (every bin from the first to the last, as ngroup numbers them)
        positions, number = rows.to_numpy(), grouped.ngroup().to_numpy()
        mine = positions >= 0
        labels.iloc[positions[mine]] = edges[number[mine]]
    return labels


class GrouperKeys:
    """A grouping whose Grouper bins are columns of names of their own: it runs as that
    grouping, and its results' index levels take the Grouper's name back (see the module).

    >>> import pandas as pd, xsched.dataframe as xd
    >>> pdf = pd.DataFrame({"k": list("ab"), "v": [1, 2]}, index=pd.date_range("2024-01-01", periods=2, freq="h"))
    >>> xd.from_pandas(pdf, npartitions=1).groupby([pd.Grouper(freq="1D"), "k"])  # doctest: +ELLIPSIS
    <xsched grouping by [pd.Grouper(freq='D'), 'k']: ...>
    """

    def __init__(self, grouped: Any, names: dict, shown: str, rows: Any = None) -> None:
        self._grouped, self._names, self._shown = grouped, names, shown
        self._rows = rows if rows is not None else grouped

    def __repr__(self) -> str:
        return f"<xsched grouping by {self._shown}: {self._grouped!r}>"

    def __dir__(self) -> list:
        """The grouping's methods, and the columns it can select (for tab completion)."""
        grouping = self._grouped if isinstance(self._grouped, GroupBy) else None
        columns = () if grouping is None or isinstance(grouping, SeriesGroupBy) else [
            c for c in getattr(grouping._frame, "columns", ()) if isinstance(c, str) and c.isidentifier()
            and c not in self._names]
        return sorted(set(dir(type(self._grouped))) | set(columns))

    def __getitem__(self, key: Any) -> "GrouperKeys":
        return GrouperKeys(self._grouped[key], self._names, f"{self._shown}[{key!r}]")

    def __iter__(self):
        raise no_iteration(self._shown)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        attr = getattr(self._rows if name in _ROW_METHODS else self._grouped, name)
        if not callable(attr) or isinstance(attr, (GroupBy, GroupedWindow)):
            return self._named(attr)

        @wraps(attr)
        def run(*args: Any, **kwargs: Any) -> Any:
            return self._named(attr(*args, **kwargs))
        return run

    def _named(self, out: Any) -> Any:
        """``out`` as pandas names it: a grouping or window wrapped again, a collection's index
        levels renamed from the bins' columns to the Groupers'."""
        if isinstance(out, (GroupBy, GroupedWindow)):
            return GrouperKeys(out, self._names, self._shown)
        if isinstance(out, DataFrame):
            hidden = [c for c in out.columns if c in self._names]
            out = out.drop(columns=hidden) if hidden else out  # (rows: the bins stay hidden)
        if isinstance(out, (DataFrame, Series)):
            return out.rename_axis(index=partial(_level_names, self._names))
        return out


GROUPERS.append(grouped)
