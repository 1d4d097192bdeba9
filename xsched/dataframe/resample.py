"""``df.resample("1h")``: time bins that straddle partition boundaries, moving only the overlap.

With a sorted DatetimeIndex (known divisions) the partition boundaries are moved back to
the start of their bins (``B_j``, the distinct ``floor(d_i)``), so that every bin lies in one
output partition; output ``j`` gathers, from the input partitions overlapping
``[B_j, B_j+1)``, only their rows in that range (usually its own partition and a few rows of
the one before). pandas' resample per output partition is then exact for any aggregation;
each result is laid over its full range of bins, and bins with no rows get what pandas
gives an empty bin (0 for ``sum`` and ``count``, missing for ``mean``)::

    resample-rows-<t>-i.j   rows of input i in [B_j, B_j+1)       (one per overlapping pair)
    resample-<m>-<t>-j      pandas' resample of those rows, over the bins of [B_j, B_j+1)

Calendar rules of one unit (``"ME"``, ``"MS"``, ``"W"``, ``"B"``, ``"QS"``...) work the same
way in the space of bin labels: ``B_j`` are the labels pandas gives the divisions, and each
input sends output ``j`` its rows whose label is in ``[B_j, B_j+1)``, so pandas' own rules
(closed and labelled on the right for month ends and weeks) decide every row's bin.
``closed=`` and ``label=`` are pandas': bins of one length closed on the right hold
``(e, e + step]`` (a row on an edge closes the bin before it), labels on the right are
``e + step``; calendar bins ask pandas for each row's label with them, as above. Where
pandas' edges add an empty bin at either end (calendar days closed on the right begin a bin
before the first row's; with a time zone a last row on an edge gets one after it), the first
and last labels are pandas' own for data running from the first division to the last
(``_pandas_ends``).
``origin=`` and ``offset=`` are pandas' too: bins of one length (and days without a time
zone) are counted from that time, the data's first and last rows read from the divisions
(``_origin_time``); "end" and "end_day" close and label on the right unless told. Calendar
bins pass them to pandas, which ignores them there.
Calendar rules of several units (``"2W"``, ``"3MS"``) have bins pandas places from the
data's first row: the first division is that row, so every partition asks pandas for its
rows' labels with that row put in front (``_anchored``), and aggregates by those labels.

>>> import pandas as pd, xsched.dataframe as xd
>>> idx = pd.date_range("2000-01-01", periods=12, freq="20min")
>>> s = xd.from_pandas(pd.Series(range(12), index=idx), npartitions=5)
>>> s.resample("1h").sum().compute().tolist()
[3, 12, 21, 30]
"""

from __future__ import annotations

from functools import partial
from typing import Any

import numpy as np
import pandas as pd

from ..graph.layers import LayeredGraph, annotations_in_force, new_token, per_task
from ..graph.spec import Ref, Task
from .core import DataFrame, Series, _Frame, _nonempty, make_meta, new_collection, part_key, require_sorted_times
from .pieces import cast_dtypes
from .selection import SelectsColumns
from .standin import on_stand_ins

__all__ = ["Resampler"]

_METHODS = ("sum", "mean", "count", "min", "max", "first", "last", "size", "std", "var", "median", "nunique",
            "prod", "ohlc", "asfreq")


def _rows_between(part: Any, lo: Any, hi: Any, right: bool = False) -> Any:
    """The rows of ``part`` in ``[lo, hi)`` (``hi`` None: no end), ``(lo, hi]`` for bins
    closed on the ``right``."""
    index = part.index
    if right:
        keep = index > lo if hi is None else (index > lo) & (index <= hi)
    else:
        keep = index >= lo if hi is None else (index >= lo) & (index < hi)
    return part[keep]


def _label(t: pd.Timestamp, rule: Any, first: Any = None, how: dict | None = None) -> pd.Timestamp:
    """The label of the calendar bin holding ``t``, as pandas' resample gives it (for data
    whose first row is at ``first``, when the rule's bins are placed from it; ``how``: the
    ``closed``/``label`` given).

    >>> _label(pd.Timestamp("2000-01-20"), "2W"), _label(pd.Timestamp("2000-01-20"), "2W", pd.Timestamp("2000-01-10"))
    (Timestamp('2000-01-23 00:00:00'), Timestamp('2000-01-30 00:00:00'))
    """
    how = how or {}
    rows = [t] if first is None or first >= t else [first, t]
    bins = pd.Series(0, index=pd.DatetimeIndex(rows)).resample(rule, **how).indices
    return next(label for label, pos in bins.items() if len(rows) - 1 in pos)  # (the bin holding t)


def _anchored(part: Any, rule: Any, first: Any, how: dict | None = None) -> dict:
    """label -> positions of ``part``'s rows, as pandas bins them in data starting at ``first``
    (None: at the part's own first row)."""
    how = how or {}
    if first is None:
        return part.resample(rule, **how).indices
    anchor = part.iloc[:1].copy()
    anchor.index = pd.DatetimeIndex([first], name=part.index.name)
    out = {}
    for label, pos in pd.concat([anchor, part]).resample(rule, **how).indices.items():
        pos = np.asarray(pos)
        pos = pos[pos > 0] - 1  # (position 0 is the anchor)
        if len(pos):
            out[label] = pos
    return out


def _tick_label(t: pd.Timestamp, origin: pd.Timestamp, step: pd.Timedelta, how: dict) -> pd.Timestamp:
    """The label of the bin of length ``step`` (counted from ``origin``) holding ``t``: bins
    ``[e, e + step)``, or ``(e, e + step]`` closed on the right; labelled ``e``, or
    ``e + step`` on the right.

    >>> t, day, hour = pd.Timestamp("2000-01-01 02:00"), pd.Timestamp("2000-01-01"), pd.Timedelta("1h")
    >>> _tick_label(t, day, hour, {}), _tick_label(t, day, hour, {"closed": "right", "label": "right"})
    (Timestamp('2000-01-01 02:00:00'), Timestamp('2000-01-01 02:00:00'))
    """
    k = (t - origin) // step
    if how.get("closed") == "right" and (t - origin) % step == pd.Timedelta(0):
        k -= 1  # (a row on an edge closes the bin before it)
    return origin + (k + (how.get("label") == "right")) * step


def _rows_of_labels(part: Any, lo: Any, hi: Any, step: pd.Timedelta, how: dict) -> Any:
    """The rows of ``part`` whose bin (of length ``step``) is labelled in ``[lo, hi)``."""
    shift = step if how.get("label") == "right" else pd.Timedelta(0)
    return _rows_between(part, lo - shift, None if hi is None else hi - shift, how.get("closed") == "right")


def _rows_labelled(part: Any, lo: Any, hi: Any, rule: Any, first: Any = None, how: dict | None = None) -> Any:
    """The rows of ``part`` whose calendar bin's label is in ``[lo, hi)`` (``hi`` None: no end)."""
    if not len(part):
        return part
    taken = [pos for label, pos in _anchored(part, rule, first, how).items()
             if label >= lo and (hi is None or label < hi)]
    return part.iloc[np.sort(np.concatenate(taken))] if taken else part.iloc[:0]


def _resample_part(pieces: list, lo: Any, hi: Any, last: Any, rule: Any, origin: Any, method: str,
                   args: tuple, kwargs: dict, empty: Any, meta: Any, first: Any = None,
                   how: dict | None = None) -> Any:
    """Output ``[lo, hi)`` (bin labels): pandas' resample of the rows those bins hold, laid
    over every bin of the range."""
    how = how or {}
    rows = pd.concat(pieces) if len(pieces) > 1 else pieces[0]
    if not len(rows):
        out = meta.iloc[:0]
    elif first is not None:  # bins placed from the data's first row: group by the labels pandas gives
        labels = np.empty(len(rows), dtype="datetime64[ns]")
        for label, pos in _anchored(rows, rule, first, how).items():
            labels[pos] = label.to_datetime64()  # (in UTC when the index has a time zone)
        by = pd.DatetimeIndex(labels, name=rows.index.name)
        if rows.index.tz is not None:
            by = by.tz_localize("UTC").tz_convert(rows.index.tz)
        out = getattr(rows.groupby(by), method)(*args, **kwargs)
    else:
        binned = rows.resample(rule, **how) if origin is None else rows.resample(rule, origin=origin, **how)
        out = getattr(binned, method)(*args, **kwargs)
    bins = pd.date_range(lo, last if hi is None else hi, freq=rule, inclusive="both" if hi is None else "left",
                         name=meta.index.name)
    out = out.reindex(bins)
    if empty is not None and out.isna().any(axis=None):
        out = out.fillna(empty)
    return _as_meta_unless_missing(out, meta)


def _as_meta_unless_missing(out: Any, meta: Any) -> Any:
    """``out`` cast to ``meta``'s dtypes, except a bool or integer column with empty bins:
    pandas' float there (a cast would make a missing bool True, or fail for an integer).

    >>> meta = pd.Series([], dtype=bool)
    >>> _as_meta_unless_missing(pd.Series([True, None, False], dtype=object), meta).tolist()
    [1.0, nan, 0.0]
    """
    target = cast_dtypes(meta)
    if isinstance(out, pd.DataFrame):
        holes = out.isna().any()
        return out.astype({c: (float if holes.get(c, False) and _exact(d) else d) for c, d in target.items()
                           if c in out.columns})
    return out.astype(float if _exact(target) and out.isna().any() else target)


def _exact(dtype: Any) -> bool:
    """Whether missing values cannot be held in ``dtype`` (NumPy bool and integers)."""
    return isinstance(dtype, np.dtype) and dtype.kind in "biu"


def _steps_of(part: Any, first: Any, end: Any, lo: Any, hi: Any, closed: bool, offset: Any, fill_value: Any,
              dtypes: Any = None) -> Any:
    """Run on the workers: ``part`` at the steps of ``date_range(first, end, offset)`` that lie in
    ``[lo, hi)`` (``[lo, hi]`` for the last partition), as pandas' ``asfreq`` of the whole, in
    ``dtypes`` (the meta's: every partition alike, whether or not it misses a step)."""
    if isinstance(offset, pd.offsets.Tick) and lo > first:  # (the first step in range, by arithmetic)
        step = pd.Timedelta(offset)
        start = first + -(-(lo - first) // step) * step
    else:
        start = first
    steps = pd.date_range(start, min(end, hi), freq=offset, name=part.index.name)  # (this partition's only)
    steps = steps[(steps >= lo) & ((steps <= hi) if closed else (steps < hi))]
    out = part.reindex(steps, fill_value=fill_value) if fill_value is not None else part.reindex(steps)
    out.index.name = part.index.name
    return out if dtypes is None else out.astype(dtypes)


def _pandas_ends(first: pd.Timestamp, last: pd.Timestamp, rule: Any, how: dict) -> tuple | None:
    """The first and last bin labels pandas gives data whose first and last rows are at
    ``first`` and ``last`` (``how``: its keywords); None when pandas cannot say.

    >>> t = pd.Timestamp("2024-03-09 05:00", tz="US/Eastern")
    >>> [str(x.date()) for x in _pandas_ends(t, t + pd.Timedelta("30h"), pd.offsets.Day(), {"closed": "right"})]
    ['2024-03-08', '2024-03-10']
    """
    import warnings

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # (pandas says once, in the user's own call, what it ignores)
            labels = pd.Series(0, index=pd.DatetimeIndex([first, last])).resample(rule, **how).count().index
    except (ValueError, TypeError):
        return None
    return (labels[0], labels[-1]) if len(labels) else None


#: pandas' named origins of bins of one length
ORIGINS = ("start_day", "start", "epoch", "end", "end_day")


def _is_time(text: str) -> bool:
    try:
        pd.Timestamp(text)
    except (ValueError, TypeError):
        return False
    return True


def _origin_time(origin: Any, divs: list, offset: Any = None) -> pd.Timestamp:
    """The time bins of one length are counted from, as pandas' ``origin`` and ``offset`` place
    it, the data's first and last rows read from the divisions (which bound them: after a
    filter the first row may come later, where pandas counts from it).

    >>> d = [pd.Timestamp("2000-01-01 07:10"), pd.Timestamp("2000-01-03 05:00")]
    >>> _origin_time("start_day", d), _origin_time("start", d, "5min"), _origin_time("end_day", d)
    (Timestamp('2000-01-01 00:00:00'), Timestamp('2000-01-01 07:15:00'), Timestamp('2000-01-04 00:00:00'))
    """
    first, last = divs[0], divs[-1]
    if origin == "start_day":
        base = first.normalize()
    elif origin == "start":
        base = first
    elif origin == "epoch":
        base = pd.Timestamp("1970-01-01", tz=first.tz)
    elif origin == "end":
        base = last
    elif origin == "end_day":
        base = last.ceil("D")
    else:
        base = pd.Timestamp(origin)
    return base + pd.Timedelta(offset) if offset is not None else base


class Resampler(SelectsColumns):
    """Time bins of a partitioned Series or DataFrame with a sorted DatetimeIndex (see the
    module docstring); the aggregation methods give a collection with one partition per input
    partition.

    >>> import pandas as pd, xsched.dataframe as xd
    >>> idx = pd.date_range("2000-01-01", periods=6, freq="30min")
    >>> df = xd.from_pandas(pd.DataFrame({"v": [1.0, 2, 3, 4, 5, 6]}, index=idx), npartitions=3)
    >>> df.resample("1h").mean().compute().v.tolist()
    [1.5, 3.5, 5.5]
    """

    def __init__(self, frame: _Frame, rule: Any, closed: str | None = None, label: str | None = None,
                 origin: Any = "start_day", offset: Any = None) -> None:
        require_sorted_times(frame, f"resample({rule!r})")
        try:
            step = pd.tseries.frequencies.to_offset(rule)
        except (ValueError, TypeError) as exc:
            raise ValueError(f"resample({rule!r}): not a frequency pandas knows ({exc})") from None
        for name, value in (("closed", closed), ("label", label)):
            if value not in (None, "left", "right"):
                raise ValueError(f"resample({rule!r}): {name} must be 'left' or 'right', got {value!r}")
        if not (origin in ORIGINS or isinstance(origin, (pd.Timestamp, np.datetime64))
                or (isinstance(origin, str) and _is_time(origin))):
            raise ValueError(f"resample({rule!r}): origin must be one of {ORIGINS} or a timestamp, got {origin!r}")
        # a day is a calendar day (23 or 25 hours across a change of clocks), not 24 hours; without
        # a time zone it is 24 hours, and pandas places such bins from an origin as it does hours
        naive = getattr(frame._meta.index, "tz", None) is None
        calendar = not (isinstance(step, pd.offsets.Tick) or (isinstance(step, pd.offsets.Day) and naive))
        self._frame, self._rule, self._calendar = frame, step, calendar
        self._how = {k: v for k, v in (("closed", closed), ("label", label)) if v is not None}
        if origin in ("end", "end_day"):  # (pandas' sides when the bins are counted back from the end)
            self._how = {"closed": "right", "label": "right", **self._how}
        # where the bins are counted from, as pandas' keywords (calendar bins: pandas' own, which
        # ignores them as it does); one-length bins turn them into a timestamp from the divisions
        self._origin = {k: v for k, v in (("origin", origin), ("offset", offset))
                        if v is not None and not (k == "origin" and v == "start_day")}

    def __repr__(self) -> str:
        return f"xsched.Resampler<{self._frame._name}, rule={self._rule.freqstr}>"

    def _run(self, method: str, *args: Any, **kwargs: Any):
        frame, rule, how = self._frame, self._rule, self._how
        t0 = pd.Timestamp("2000-01-01", tz=getattr(frame._meta.index, "tz", None))
        t0 = _label(t0, rule, how=how) if self._calendar else t0

        def on_stand_in() -> tuple:
            # two rows in neighbouring bins give the result's dtypes; a gap between them shows
            # what pandas gives a bin with no rows. (Which two rows fill neighbouring bins and no
            # others depends on the side closed: pandas adds an empty calendar bin before a first
            # row off an edge, or after a last row on one, when bins are closed on the right.)
            stand_in = _nonempty(frame._meta)
            inside = t0 + pd.Timedelta(1, "ns")
            for pair in ((t0, t0 + rule), (inside, inside + rule), (t0, inside)):
                stand_in.index = pd.DatetimeIndex(pair, name=frame._meta.index.name)
                if (stand_in.resample(rule, **how, **self._origin).size() > 0).all():
                    break
            meta = make_meta(getattr(stand_in.resample(rule, **how, **self._origin), method)(*args, **kwargs))
            stand_in.index = pd.DatetimeIndex([pair[0], pair[1] + rule], name=frame._meta.index.name)
            sample = getattr(stand_in.resample(rule, **how, **self._origin), method)(*args, **kwargs)
            return meta, sample, stand_in.resample(rule, **how, **self._origin).size()
        try:
            meta, sample, sizes = on_stand_ins(on_stand_in)
        except Exception as exc:
            raise TypeError(f"resample(...).{method}() fails in pandas on this data: {exc}") from exc
        gaps = [label for label, size in sizes.items() if size == 0 and label in sample.index]
        empty = sample.loc[gaps[0]] if gaps else None
        if isinstance(empty, pd.Series):
            empty = {k: v for k, v in empty.items() if not pd.isna(v)} or None
        elif empty is not None and pd.isna(empty):
            empty = None
        divs = [pd.Timestamp(d) for d in frame.divisions]
        first = None
        if self._calendar:  # calendar bins: their labels, as pandas places them, from the divisions
            origin = None
            how = {**how, **self._origin}
            if rule.n != 1:  # several units: placed from the data's first row, the first division
                first = divs[0]
            floor = partial(_label, rule=rule, first=first, how=how)
            select = partial(_rows_labelled, rule=rule, first=first, how=how)
        else:  # bins of one length, counted from midnight of the first day (pandas' default)
            origin = _origin_time(self._origin.get("origin", "start_day"), divs, self._origin.get("offset"))
            floor = partial(_tick_label, origin=origin, step=pd.Timedelta(rule), how=how)
            select = partial(_rows_of_labels, step=pd.Timedelta(rule), how=how)
        spans = [floor(d) for d in divs]  # input i holds the labels spans[i] .. spans[i + 1]
        starts = sorted({floor(d) for d in divs[:-1]})
        last_bin = floor(divs[-1])
        # pandas' edges can add an empty bin at either end (calendar days closed on the right
        # start a bin before the first row's; with a time zone a last row on an edge gets one
        # after it): the labels pandas gives data running from the first division to the last
        ends = _pandas_ends(divs[0], divs[-1], rule, how if self._calendar else {**how, **self._origin})
        if ends is not None:
            starts[0], last_bin = min(starts[0], ends[0]), max(last_bin, ends[1])
        tok = new_token(frame._name, rule.freqstr, origin, how, method, args, kwargs)
        rows_name, out_name = f"resample-rows-{tok}", f"resample-{method}-{tok}"
        ann = annotations_in_force()
        keys = frame._keys()
        rows: dict = {}
        outs: dict = {}
        for j, lo in enumerate(starts):
            hi = starts[j + 1] if j + 1 < len(starts) else None
            pieces = []
            for i, key in enumerate(keys):  # the inputs whose range overlaps [lo, hi)
                if (hi is None or spans[i] < hi) and spans[i + 1] >= lo:
                    rows[f"{rows_name}-{i}.{j}"] = Task(select, (Ref(key), lo, hi), {}, per_task(ann))
                    pieces.append(Ref(f"{rows_name}-{i}.{j}"))
            outs[part_key(out_name, j)] = Task(_resample_part, (pieces, lo, hi, last_bin, rule, origin, method,
                                                                args, kwargs, empty, meta, first, how), {},
                                               per_task(ann))
        graph = LayeredGraph.merge(frame._graph, new={rows_name: rows, out_name: outs})
        return new_collection(graph, out_name, meta, tuple(starts) + (last_bin,))

    def agg(self, func: Any = None, *args: Any, **kwargs: Any):
        """Aggregate each bin as pandas' ``Resampler.agg``: a name, a list of names,
        ``{column: names}``, or named aggregations ``total=("v", "sum")``.

        >>> import pandas as pd, xsched.dataframe as xd
        >>> idx = pd.date_range("2000-01-01", periods=4, freq="30min")
        >>> df = xd.from_pandas(pd.DataFrame({"v": [1.0, 2, 3, 4]}, index=idx), npartitions=2)
        >>> df.resample("1h").agg(total=("v", "sum")).compute().total.tolist()
        [3.0, 7.0]
        """
        return self._run("agg", func, *args, **kwargs)

    aggregate = agg

    _label = "resample(...)"

    def __getattr__(self, name: str) -> "Resampler":
        chosen = self._column_or_none(name)
        if chosen is None:
            raise AttributeError(f"resample(...) has no {name!r}: its methods are {', '.join(_METHODS)} and "
                                 f"agg, and a DataFrame's columns select its bins")
        return chosen


def _method(name: str):
    def method(self: Resampler, *args: Any, **kwargs: Any):
        return self._run(name, *args, **kwargs)
    method.__name__ = name
    method.__doc__ = f"pandas' ``Resampler.{name}`` of each bin, exact across partition boundaries."
    return method


for _name in _METHODS:
    setattr(Resampler, _name, _method(_name))


def _install() -> None:
    def resample(self, rule: Any, closed: str | None = None, label: str | None = None, origin: Any = "start_day",
                 offset: Any = None):
        """Group rows into time bins (``"15min"``, ``"1h"``, ``"1D"``, ``"ME"``...), closed and
        labelled on the side pandas' ``closed=`` and ``label=`` say, bins of one length counted
        from pandas' ``origin=`` (moved by ``offset=``); the aggregation of a bin is exact even
        when its rows span two partitions.

        >>> import pandas as pd, xsched.dataframe as xd
        >>> idx = pd.date_range("2000-01-01", periods=8, freq="45min")
        >>> s = xd.from_pandas(pd.Series(1, index=idx), npartitions=3)
        >>> s.resample("2h").count().compute().tolist()
        [3, 3, 2]
        """
        return Resampler(self, rule, closed=closed, label=label, origin=origin, offset=offset)

    def asfreq(self, freq: Any, method: Any = None, how: Any = None, normalize: bool = False,
               fill_value: Any = None):
        """The rows at every ``freq`` step from the first row to the last, as pandas' ``asfreq``:
        the value labelled with each step, missing (or ``fill_value``) where no row is. A step's
        row lies in the partition whose divisions hold it, so each partition gives its own steps
        (the first and last rows are read from the divisions, which a filter can leave looser
        than the rows). Without ``fill_value`` an integer column becomes a float, as pandas'
        does when a step has no row (pandas keeps the integers when every step has one).

        >>> import pandas as pd, xsched.dataframe as xd
        >>> s = xd.from_pandas(pd.Series([1.0, 2.0, 3.0], index=pd.to_datetime(
        ...     ["2000-01-01 00:00", "2000-01-01 00:30", "2000-01-01 02:00"])), npartitions=2)
        >>> s.asfreq("1h").compute().tolist()
        [1.0, nan, 3.0]
        """
        if method is not None or how is not None or normalize:
            raise NotImplementedError(
                "asfreq(method=, how=, normalize=) is not offered: asfreq(freq) gives the values at the "
                "steps (fill_value= for the missing); .ffill() or .bfill() after it fills from the steps, "
                "where pandas' method= fills from the rows between them")
        require_sorted_times(self, "asfreq")
        offset = pd.tseries.frequencies.to_offset(freq)
        divs = [pd.Timestamp(d) for d in self.divisions]
        name = f"asfreq-{new_token(self._name, offset.freqstr, fill_value)}"
        ann = annotations_in_force()
        last = self.npartitions - 1
        # (the dtypes of a step with no row: an integer column becomes a float unless filled)
        missing = pd.DatetimeIndex([divs[0]], name=self._meta.index.name)
        meta = (self._meta.reindex(missing) if fill_value is None else
                self._meta.reindex(missing, fill_value=fill_value)).iloc[:0]
        dtypes = meta.dtypes.to_dict() if isinstance(meta, pd.DataFrame) else meta.dtype
        layer = {part_key(name, i): Task(_steps_of, (Ref(k), divs[0], divs[-1], divs[i], divs[i + 1], i == last,
                                                     offset, fill_value, dtypes), {}, per_task(ann))
                 for i, k in enumerate(self._keys())}
        return new_collection(LayeredGraph.merge(self._graph, new={name: layer}), name, meta, self.divisions)

    for f in (resample, asfreq):
        setattr(DataFrame, f.__name__, f)
        setattr(Series, f.__name__, f)


_install()
