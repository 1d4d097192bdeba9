"""Repartitioning: the same rows in other partitions, by count, along new divisions, by a
time frequency or by size. No shuffle: rows keep their order.

- ``npartitions``: neighbours concatenated (fewer) or partitions cut by row position (more).
- ``divisions``: a frame with known divisions cut anew at the given index values; each new
  partition takes its rows from the old partitions the old divisions say can hold them.
- ``freq``: divisions at each step of a time frequency (a datetime index), ends kept.
- ``partition_size``: the partitions' memory is measured now (pandas' ``deep`` count);
  those above the size are cut by rows into equal pieces and small neighbours are joined,
  so that each new partition holds about that much and none more, unless one row does.

>>> import pandas as pd, xsched.dataframe as xd
>>> df = xd.from_pandas(pd.DataFrame({"a": range(10)}), npartitions=2)
>>> df.repartition(divisions=[0, 3, 6, 9]).divisions
(0, 3, 6, 9)
>>> [len(df.repartition(divisions=[0, 3, 6, 9]).partitions[i]) for i in range(3)]
[3, 3, 4]
"""

from __future__ import annotations

import numbers
from typing import Any, Sequence

import numpy as np
import pandas as pd

from ..graph.collection import compute_collection
from ..graph.layers import LayeredGraph, annotations_in_force, chunk_key, new_token, per_task
from ..graph.repartition import plan_by_count, plan_by_size
from ..graph.spec import Ref, Task
from ..units import parse_bytes
from .core import DataFrame, Series, _Frame, new_collection, require_sorted_times
from .io import from_pandas
from .pieces import _concat

__all__ = ["repartition"]


def repartition(frame: _Frame, divisions: Any = None, npartitions: int | None = None,
                partition_size: Any = None, freq: Any = None, force: bool = False) -> _Frame:
    """The same rows in other partitions: give one of ``npartitions``, ``divisions``,
    ``freq`` or ``partition_size`` (see the module docstring). ``force=True`` lets new
    divisions reach beyond the old first and last (never inside them: rows would be lost).

    >>> import pandas as pd, xsched.dataframe as xd
    >>> s = xd.from_pandas(pd.Series(range(6), index=pd.date_range("2024-01-01", periods=6, freq="12h")), npartitions=1)
    >>> s.repartition(freq="1D").npartitions
    3
    """
    if isinstance(frame, (pd.DataFrame, pd.Series)):  # (dask's function takes pandas too)
        frame = from_pandas(frame, npartitions=1)
    elif not isinstance(frame, _Frame):
        raise TypeError(f"repartition takes an xsched or pandas DataFrame or Series, not {type(frame).__name__}")
    if isinstance(divisions, numbers.Integral) and not isinstance(divisions, bool):
        divisions, npartitions = None, divisions  # (df.repartition(4): a count, as dask reads it too)
    given = [name for name, value in (("divisions", divisions), ("npartitions", npartitions),
                                      ("partition_size", partition_size), ("freq", freq)) if value is not None]
    if len(given) != 1:
        raise ValueError("repartition takes one of divisions=, npartitions=, partition_size= or freq=, "
                         f"got {'none' if not given else ' and '.join(given)}; e.g. df.repartition(npartitions=8)")
    if npartitions is not None:
        return _by_count(frame, npartitions)
    if partition_size is not None:
        return _by_size(frame, partition_size)
    if freq is not None:
        return _by_divisions(frame, _freq_divisions(frame, freq), force=False, what=f"freq={freq!r}")
    return _by_divisions(frame, divisions, force, "divisions=...")


def _by_count(frame: _Frame, npartitions: Any) -> _Frame:
    if not isinstance(npartitions, numbers.Integral) or isinstance(npartitions, bool) or npartitions < 1:
        raise ValueError(f"repartition: npartitions must be a positive integer, got {npartitions!r}")
    n_in, n_out = frame.npartitions, int(npartitions)
    plan = plan_by_count(n_in, n_out)
    if n_out <= n_in:
        divisions = tuple(frame.divisions[items[0][0]] for items in plan) + (frame.divisions[-1],)
    else:
        divisions = (None,) * (n_out + 1)
    return _from_plan(frame, plan, divisions, f"repartition-{n_out}", n_out)


def _from_plan(frame: _Frame, plan: list, divisions: tuple, prefix: str, token: Any) -> _Frame:
    """One new partition per entry of ``plan``: a list of ``(old partition, piece, pieces)``,
    the piece-th of ``pieces`` equal cuts by row position, concatenated in order."""
    name = f"{prefix}-{new_token(frame._name, token, plan)}"
    ann = annotations_in_force()
    keys = frame._keys()
    layer = {chunk_key(name, (j,)): Task(_join_cuts, ([(Ref(keys[i]), p, k) for i, p, k in items], frame._meta), {},
                                         per_task(ann))
             for j, items in enumerate(plan)}
    return new_collection(LayeredGraph.merge(frame._graph, new={name: layer}), name, frame._meta, divisions)


def _cut(part: Any, piece: int, pieces: int) -> Any:
    """The ``piece``-th of ``pieces`` cuts of ``part`` by row position, as even as can be."""
    bounds = np.linspace(0, len(part), pieces + 1).round().astype(int)
    return part.iloc[bounds[piece]:bounds[piece + 1]]


def _join_cuts(items: list, meta: Any) -> Any:
    return _concat([part if pieces == 1 else _cut(part, piece, pieces) for part, piece, pieces in items], meta)


# --------------------------------------------------------------------------- by size


def _by_size(frame: _Frame, partition_size: Any) -> _Frame:
    limit = parse_bytes(partition_size)
    if limit < 1:
        raise ValueError(f"repartition: partition_size must be at least one byte, got {partition_size!r}")
    sizes = [int(s) for s in compute_collection(frame.memory_usage_per_partition(deep=True))]
    plan, cut = plan_by_size(sizes, limit)
    if cut:
        divisions: tuple = (None,) * (len(plan) + 1)
    else:  # (only neighbours joined: the old divisions at the joins still hold)
        starts = [items[0][0] for items in plan]
        divisions = tuple(frame.divisions[i] for i in starts) + (frame.divisions[-1],)
    return _from_plan(frame, plan, divisions, "repartition-size", limit)


# --------------------------------------------------------------------------- along divisions


def _freq_divisions(frame: _Frame, freq: Any) -> list:
    require_sorted_times(frame, f"repartition(freq={freq!r})")
    offset = pd.tseries.frequencies.to_offset(freq)
    first, last = frame.divisions[0], frame.divisions[-1]
    try:  # (a fixed step starts at its first multiple; a calendar one, such as "MS", rolls forward itself)
        start = first.ceil(offset)
    except ValueError:
        start = first
    cuts = list(pd.date_range(start=start, end=last, freq=offset))
    if not cuts or cuts[0] != first:
        cuts.insert(0, first)
    if cuts[-1] != last:
        cuts.append(last)
    if len(cuts) == 1:  # (one timestamp in all)
        cuts.append(last)
    return cuts


def _as_index_values(frame: _Frame, values: Sequence[Any]) -> list:
    """``values`` compared as the index compares: date strings as timestamps for a datetime
    index (in its time zone)."""
    index = frame._meta.index
    if isinstance(index, pd.DatetimeIndex):
        return [pd.Timestamp(v).tz_localize(index.tz) if index.tz is not None and pd.Timestamp(v).tz is None
                else pd.Timestamp(v) for v in values]
    return list(values)


def _by_divisions(frame: _Frame, divisions: Any, force: bool, what: str) -> _Frame:
    if isinstance(divisions, (str, bytes)) or not hasattr(divisions, "__iter__"):
        raise TypeError(f"repartition: divisions must be a list of index values, got {divisions!r}")
    if not frame.known_divisions:
        raise ValueError(f"repartition({what}): the frame's divisions are unknown, so which partition holds "
                         "which index values is not known; set_index(column) (or set_index(column, "
                         "sorted=True) when it is sorted already) first, or use npartitions=")
    new = _as_index_values(frame, list(divisions))
    old = frame.divisions
    if len(new) < 2:
        raise ValueError(f"repartition: divisions need at least two values (the first and last index "
                         f"values), got {list(divisions)}")
    if any(not a < b for a, b in zip(new, new[1:])) and not (len(new) == 2 and new[0] == new[1]):
        raise ValueError(f"repartition: divisions must be sorted and unique, got {list(divisions)}")
    if force:
        if new[0] > old[0] or new[-1] < old[-1]:
            raise ValueError(f"repartition(divisions=..., force=True): the new divisions may reach beyond "
                             f"the old first and last values ({old[0]!r}, {old[-1]!r}) but not inside "
                             f"them, which would drop rows; got {new[0]!r} to {new[-1]!r}")
    elif new[0] != old[0] or new[-1] != old[-1]:
        raise ValueError(f"repartition: the new divisions must start and end where the old ones do "
                         f"({old[0]!r} and {old[-1]!r}), got {new[0]!r} and {new[-1]!r}; pass "
                         "force=True to reach beyond them")
    n_old, n_new = len(old) - 1, len(new) - 1
    name = f"repartition-divisions-{new_token(frame._name, new)}"
    ann = annotations_in_force()
    keys = frame._keys()
    layer = {}
    for j in range(n_new):
        lo, hi, closed = new[j], new[j + 1], j == n_new - 1
        parts = [Ref(keys[i]) for i in range(n_old)
                 if (old[i] <= hi if closed else old[i] < hi)
                 and (lo <= old[i + 1] if i == n_old - 1 else lo < old[i + 1])]
        layer[chunk_key(name, (j,))] = Task(_between, (parts, lo, hi, closed, frame._meta), {}, per_task(ann))
    return new_collection(LayeredGraph.merge(frame._graph, new={name: layer}), name, frame._meta, tuple(new))


def _between(parts: list, lo: Any, hi: Any, closed: bool, meta: Any) -> Any:
    """The rows of ``parts`` (sorted by index, in order) with ``lo <= index < hi`` (``<= hi``
    when ``closed``), as one partition."""
    pieces = []
    for part in parts:
        index = part.index
        if index.is_monotonic_increasing:
            start = index.searchsorted(lo, "left")
            stop = index.searchsorted(hi, "right" if closed else "left")
            pieces.append(part.iloc[start:stop])
        else:
            pieces.append(part[(index >= lo) & ((index <= hi) if closed else (index < hi))])
    return _concat(pieces, meta) if pieces else meta


def enforce_runtime_divisions(frame: _Frame) -> _Frame:
    """The same collection, each partition checked when computed against the divisions it
    claims: every label within its bounds (the last closed), in order; a partition that
    strays fails naming it, its bounds and the labels found, rather than giving ``loc`` and
    joins wrong answers later.

    >>> import pandas as pd, xsched.dataframe as xd
    >>> df = xd.from_pandas(pd.DataFrame({"a": range(6)}), npartitions=2)
    >>> df.enforce_runtime_divisions().a.sum().compute()
    np.int64(15)
    """
    if not frame.known_divisions:
        raise ValueError("enforce_runtime_divisions: the divisions are unknown, so there is nothing to check; "
                         "set_index or repartition(divisions=...) gives some")
    name = f"enforce-divisions-{new_token(frame._name, frame.divisions)}"
    ann = annotations_in_force()
    divs, last = frame.divisions, frame.npartitions - 1
    layer = {chunk_key(name, (i,)): Task(_within, (Ref(k), divs[i], divs[i + 1], i == last, i), {}, per_task(ann))
             for i, k in enumerate(frame._keys())}
    return new_collection(LayeredGraph.merge(frame._graph, new={name: layer}), name, frame._meta, divs)


def _within(part: Any, lo: Any, hi: Any, closed: bool, i: int) -> Any:
    """Run on the workers: ``part`` itself when its labels lie in ``[lo, hi)`` (``[lo, hi]``
    for the last partition) in order; else an error naming the partition."""
    index = part.index
    if not len(index):
        return part
    below, above = index < lo, (index > hi) if closed else (index >= hi)
    if bool(np.any(below)) or bool(np.any(above)) or not index.is_monotonic_increasing:
        stray = index[below | above][:3].tolist()
        what = f"labels {stray} outside" if stray else "labels out of order within"
        raise ValueError(f"partition {i} has {what} its divisions [{lo!r}, {hi!r}{']' if closed else ')'} "
                         f"(first {index[0]!r}, last {index[-1]!r}): the divisions do not describe the data; "
                         "clear_divisions() or set_index(...) to make them right")
    return part


def _install() -> None:
    def method(self, divisions=None, npartitions=None, partition_size=None, freq=None, force=False):
        """The same rows in other partitions (see ``xsched.dataframe.repartition``): one of
        ``npartitions``, ``divisions`` (new index cuts), ``freq`` (a datetime index cut at
        each step) or ``partition_size`` (about that many bytes each, e.g. ``"100MB"``).

        >>> import pandas as pd, xsched.dataframe as xd
        >>> df = xd.from_pandas(pd.DataFrame({"a": range(12)}), npartitions=6)
        >>> df.repartition(npartitions=2).npartitions, df.repartition(npartitions=12).npartitions
        (2, 12)
        >>> df.repartition(divisions=[0, 5, 11]).divisions
        (0, 5, 11)
        """
        return repartition(self, divisions, npartitions, partition_size, freq, force)

    for cls in (DataFrame, Series):
        cls.repartition = method  # type: ignore[attr-defined]
        cls.enforce_runtime_divisions = enforce_runtime_divisions  # type: ignore[attr-defined]


_install()
