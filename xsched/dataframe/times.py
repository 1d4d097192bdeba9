"""Time-series methods of frames and Series: relative change, the first and last valid
labels, rows by time of day, time zones of the index, and interpolation.

``pct_change`` divides by the rows ``periods`` before, which ``shift`` brings from the
neighbouring partitions; ``first_valid_index`` / ``last_valid_index`` are tree reductions of
each partition's own (the first partition that has one wins); ``between_time`` / ``at_time``
filter each partition; ``tz_localize`` / ``tz_convert`` change each partition's index and the
divisions alike, so ``loc`` by time keeps reading only the partitions it needs.
``interpolate`` fills each partition with, per column, the values present just before and
after it::

    partition i --_ends--> (length, first and last value present per column) --+
    every partition's ends --_neighbours--> per partition: offset, value before, value after
    partition i + its neighbours --_interpolate_part--> pandas' interpolate, the two ends dropped

>>> import pandas as pd, xsched.dataframe as xd
>>> s = xd.from_pandas(pd.Series([1.0, 2.0, 3.0, 6.0], index=pd.date_range("2024-01-01", periods=4, freq="6h")),
...                    npartitions=2)
>>> s.pct_change().compute().tolist()
[nan, 1.0, 0.5, 1.0]
>>> s.between_time("05:00", "13:00").compute().tolist()
[2.0, 3.0]
>>> s.tz_localize("UTC").tz_convert("Asia/Tokyo").divisions[0]
Timestamp('2024-01-01 09:00:00+0900', tz='Asia/Tokyo')
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ..graph.layers import LayeredGraph, new_token
from ..graph.partials import through_all
from .core import _Frame, _nonempty, make_meta, new_collection
from .reductions import reduction

__all__ = ["pct_change", "first_valid_index", "last_valid_index", "between_time", "at_time", "tz_localize",
           "tz_convert", "interpolate"]


def pct_change(self: _Frame, periods: int = 1, fill_method: Any = None, freq: Any = None, **kwargs: Any):
    """The change from the row ``periods`` before, as a fraction (pandas' ``pct_change``; the
    rows before come from the neighbouring partitions).

    >>> import pandas as pd, xsched.dataframe as xd
    >>> xd.from_pandas(pd.Series([2.0, 3.0, 6.0]), npartitions=2).pct_change().compute().tolist()
    [nan, 0.5, 1.0]
    """
    if fill_method is not None:
        raise ValueError(f"pct_change: fill_method must be None, as in pandas 3; got {fill_method!r}. "
                         "Fill the gaps first: .ffill().pct_change()")
    if freq is not None or kwargs:
        raise NotImplementedError(f"pct_change: freq= and {sorted(kwargs) or 'other arguments'} are not run here; "
                                  "by rows (periods=) it is: x / x.shift(periods) - 1")
    if not isinstance(periods, int) or isinstance(periods, bool):
        raise TypeError(f"pct_change: periods must be an int, got {periods!r}")
    return self / self.shift(periods) - 1


def _valid_end(part: Any, last: bool) -> Any:
    return part.last_valid_index() if last else part.first_valid_index()


def _pick_end(labels: list, last: bool) -> Any:
    """The first (or last) label that is not None, the partitions' order kept."""
    found = [v for v in labels if v is not None]
    return (found[-1] if last else found[0]) if found else None


def _valid_index(frame: _Frame, last: bool, split_every: int | None):
    kwargs = {"last": last}
    return reduction(frame, _valid_end, _pick_end, meta=None, token="last-valid" if last else "first-valid",
                     split_every=split_every, chunk_kwargs=kwargs, aggregate_kwargs=kwargs)


def first_valid_index(self: _Frame, split_every: int | None = None):
    """The label of the first row with a value (None when there is none): each partition's
    own, the first partition that has one winning.

    >>> import pandas as pd, xsched.dataframe as xd
    >>> xd.from_pandas(pd.Series([None, None, 3.0, 4.0]), npartitions=2).first_valid_index().compute()
    2
    """
    return _valid_index(self, False, split_every)


def last_valid_index(self: _Frame, split_every: int | None = None):
    """The label of the last row with a value (None when there is none).

    >>> import pandas as pd, xsched.dataframe as xd
    >>> xd.from_pandas(pd.Series([1.0, 2.0, None, None]), npartitions=2).last_valid_index().compute()
    1
    """
    return _valid_index(self, True, split_every)


def _need_times(frame: _Frame, what: str, zoned: bool | None = None) -> None:
    """Refuse, when built, an index that is not of times (or not zoned, or zoned, as asked)."""
    index = frame._meta if isinstance(frame._meta, pd.Index) else frame._meta.index
    if not isinstance(index, pd.DatetimeIndex):
        raise TypeError(f"{what} needs a DatetimeIndex; this index is {index.dtype}: "
                        ".set_index(<a column of times>) first (xd.to_datetime makes one)")
    if zoned is True and index.tz is None:
        raise TypeError(f"{what}: the index has no time zone; give it one first: .tz_localize(<its zone>)")
    if zoned is False and index.tz is not None:
        raise TypeError(f"{what}: the index is already in {index.tz}; move it with .tz_convert(...)")


def between_time(self: _Frame, start_time: Any, end_time: Any, inclusive: str = "both"):
    """The rows whose time of day (of a DatetimeIndex) is between two times, per partition.

    >>> import pandas as pd, xsched.dataframe as xd
    >>> s = xd.from_pandas(pd.Series(range(4), index=pd.date_range("2024-01-01", periods=4, freq="8h")),
    ...                    npartitions=2)
    >>> s.between_time("07:00", "17:00").compute().tolist()
    [1, 2]
    """
    _need_times(self, "between_time")
    return self._method("between_time", start_time, end_time, inclusive=inclusive)


def at_time(self: _Frame, time: Any):
    """The rows at one time of day (of a DatetimeIndex), per partition.

    >>> import pandas as pd, xsched.dataframe as xd
    >>> s = xd.from_pandas(pd.Series(range(6), index=pd.date_range("2024-01-01", periods=6, freq="12h")),
    ...                    npartitions=2)
    >>> s.at_time("12:00").compute().tolist()
    [1, 3, 5]
    """
    _need_times(self, "at_time")
    return self._method("at_time", time)


def _rezoned(frame: _Frame, method: str, tz: Any, kwargs: dict):
    """``method`` (tz_localize or tz_convert) on every partition's index and on the divisions;
    ``tz_localize(None)`` drops a zone, keeping the wall times, and the divisions with it (an
    hour the clocks repeat can put a later row before an earlier one)."""
    if method == "tz_localize" and tz is None:
        _need_times(frame, method)
        index = frame._meta if isinstance(frame._meta, pd.Index) else frame._meta.index
        return frame if index.tz is None else frame._method(method, None, **kwargs).clear_divisions()
    _need_times(frame, method, zoned=method == "tz_convert")
    if kwargs.get("ambiguous") == "infer":
        raise NotImplementedError("tz_localize(ambiguous='infer') reads the order of the whole index, which no "
                                  "partition sees; pass ambiguous= a boolean array per partition through "
                                  "map_partitions, or 'NaT'")
    out = frame._method(method, tz, **kwargs)
    divisions = frame.divisions
    if frame.known_divisions:
        try:
            divisions = tuple(getattr(pd.DatetimeIndex(list(divisions)), method)(tz, **{
                k: v for k, v in kwargs.items() if k in ("ambiguous", "nonexistent")}))
        except (TypeError, ValueError) as exc:
            raise type(exc)(f"{method}: the divisions {divisions[0]!r} ... {divisions[-1]!r} are not times it "
                            f"can move to {tz!r}: {exc}") from exc
    return new_collection(out._graph, out._name, out._meta, divisions)


def tz_localize(self: _Frame, tz: Any, **kwargs: Any):
    """Give a naive DatetimeIndex a time zone (its divisions too); ``None`` takes a zoned
    one's zone off, keeping its wall times (the divisions become unknown).

    >>> import pandas as pd, xsched.dataframe as xd
    >>> s = xd.from_pandas(pd.Series([1, 2], index=pd.date_range("2024-01-01", periods=2)), npartitions=1)
    >>> str(s.tz_localize("Europe/Paris").compute().index.tz)
    'Europe/Paris'
    """
    return _rezoned(self, "tz_localize", tz, kwargs)


def tz_convert(self: _Frame, tz: Any, **kwargs: Any):
    """Move a zoned DatetimeIndex to another time zone (its divisions too).

    >>> import pandas as pd, xsched.dataframe as xd
    >>> s = xd.from_pandas(pd.Series([1], index=pd.date_range("2024-01-01", periods=1, tz="UTC")), npartitions=1)
    >>> s.tz_convert("America/New_York").compute().index[0].hour
    19
    """
    return _rezoned(self, "tz_convert", tz, kwargs)


# --------------------------------------------------------------------------- interpolate
#: the methods run across partitions: by position (linear) or by the index's values
INTERPOLATE_METHODS = ("linear", "index", "values", "time")


def _ends(part: Any) -> dict:
    """Per column, its first and last value present as (position in the partition, label,
    value), or None; and the partition's length."""
    frame = part.to_frame() if isinstance(part, pd.Series) else part
    out: dict = {"n": len(frame), "first": [], "last": []}
    for j in range(frame.shape[1]):
        col = frame.iloc[:, j]
        present = np.flatnonzero(col.notna().to_numpy())
        for end, pos in (("first", present[:1]), ("last", present[-1:])):
            out[end].append((int(pos[0]), frame.index[pos[0]], col.iloc[pos[0]]) if len(pos) else None)
    return out


def _neighbours(ends: list) -> list:
    """Per partition: its first row's position in the whole, and per column the last value
    present before it and the first after it ((position in the whole, label, value) or None):
    one sweep forward, one back."""
    offsets = np.concatenate([[0], np.cumsum([e["n"] for e in ends])]).tolist()
    ncols = len(ends[0]["first"]) if ends else 0
    before, after = [], [None] * len(ends)
    seen: list = [None] * ncols
    for i, e in enumerate(ends):
        before.append(list(seen))
        for j, last in enumerate(e["last"]):
            if last is not None:
                seen[j] = (offsets[i] + last[0], last[1], last[2])
    seen = [None] * ncols
    for i in range(len(ends) - 1, -1, -1):
        after[i] = list(seen)
        for j, first in enumerate(ends[i]["first"]):
            if first is not None:
                seen[j] = (offsets[i] + first[0], first[1], first[2])
    return [{"offset": offsets[i], "before": before[i], "after": after[i]} for i in range(len(ends))]


def _interpolate_part(part: Any, near: dict, method: str, kwargs: dict) -> Any:
    """Each column interpolated with the values present just before and after the partition
    around it; by position in the whole for ``linear`` (as pandas counts it), else by label."""
    frame = part.to_frame() if isinstance(part, pd.Series) else part
    cols = []
    for j in range(frame.shape[1]):
        col = frame.iloc[:, j]
        if not col.isna().any():
            cols.append(col)
            continue
        before, after = near["before"][j], near["after"][j]
        if method == "linear":
            x = pd.Index(np.arange(near["offset"], near["offset"] + len(col), dtype="float64"))
            pieces = ([pd.Series([before[2]], index=[float(before[0])])] if before else []) + \
                [pd.Series(col.to_numpy(), index=x)] + \
                ([pd.Series([after[2]], index=[float(after[0])])] if after else [])
            run = "index"
        else:
            pieces = ([pd.Series([before[2]], index=[before[1]])] if before else []) + [col] + \
                ([pd.Series([after[2]], index=[after[1]])] if after else [])
            run = method
        whole = pd.concat(pieces) if len(pieces) > 1 else pieces[0]
        done = whole.interpolate(method=run, **kwargs).iloc[(1 if before else 0):(1 if before else 0) + len(col)]
        cols.append(pd.Series(done.to_numpy(), index=col.index, name=col.name).astype(done.dtype))
    if isinstance(part, pd.Series):
        return cols[0]
    out = pd.concat(cols, axis=1)
    out.columns = part.columns
    return out


def interpolate(self: _Frame, method: str = "linear", *, axis: Any = 0, limit: Any = None, inplace: bool = False,
                limit_direction: Any = None, limit_area: Any = None, **kwargs: Any):
    """Fill missing values between those present, as pandas' ``interpolate``, across
    partitions: each partition is interpolated with, per column, the value present last
    before it and first after it (found by a small task over every partition's ends), so
    ``linear`` counts positions in the whole and ``time`` / ``index`` / ``values`` use the
    labels. ``limit_direction`` and ``limit_area`` as pandas'.

    >>> import numpy as np, pandas as pd, xsched.dataframe as xd
    >>> s = xd.from_pandas(pd.Series([1.0, np.nan, np.nan, np.nan, 5.0, np.nan]), npartitions=3)
    >>> s.interpolate().compute().tolist()
    [1.0, 2.0, 3.0, 4.0, 5.0, 5.0]
    """
    if method not in INTERPOLATE_METHODS:
        raise NotImplementedError(f"interpolate: method={method!r} is not run across partitions here; it runs "
                                  f"{', '.join(INTERPOLATE_METHODS)}. Within each partition alone: "
                                  f".map_partitions(lambda part: part.interpolate(method={method!r}))")
    if self._axis(axis, "interpolate", none=False) != 0 or inplace or limit is not None or kwargs:
        raise NotImplementedError("interpolate: axis=1, inplace=True, limit= and the arguments of other methods "
                                  "are not run across partitions here; per partition: "
                                  ".map_partitions(lambda part: part.interpolate(...))")
    options = {"limit_direction": limit_direction, "limit_area": limit_area}
    options = {k: v for k, v in options.items() if v is not None}
    # (pandas checks the method against the index and the columns now, on a stand-in)
    meta = make_meta(_nonempty(self._meta).interpolate(method=method, **options))
    name = f"interpolate-{new_token(self._name, method, options)}"
    layers = through_all(name, self._keys(), _ends, _neighbours, _interpolate_part, (method, options))
    return new_collection(LayeredGraph.merge(self._graph, new=layers), name, meta, self.divisions)


def _install() -> None:
    for f in (pct_change, first_valid_index, last_valid_index, between_time, at_time, tz_localize, tz_convert,
              interpolate):
        setattr(_Frame, f.__name__, f)


_install()
