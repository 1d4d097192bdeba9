"""``expanding``: statistics over every row so far, across partitions.

A row's window reaches back to the first row of the first partition, so no overlap of
neighbouring rows suffices; but each of these statistics merges from a few totals. Each
partition reduces its columns to their totals (count, sum, mean, M2: the sum of squared
deviations from that mean, min and max); one small task gathers every partition's totals and
gives each partition those of all the partitions before it (moments merged by Chan's
parallel formula, as the groupby's variances are); each partition then combines its own
running values with them::

    partition i --_totals--> per column: (count, sum, mean, M2, min, max), and its rows
    every partition's totals --_prefixes--> per partition: the totals of those before it
    partition i + its prefix --_expand--> the statistic per row (NaN below min_periods)

``count``, ``min`` and ``max`` are pandas' exactly; ``sum``, ``mean``, ``var`` and ``std``
equal pandas' to rounding (the running sums add in another order than pandas' compensated
ones).

>>> import pandas as pd, xsched.dataframe as xd
>>> s = xd.from_pandas(pd.Series([1.0, None, 3.0, 4.0, 8.0]), npartitions=3)
>>> s.expanding().mean().compute().tolist()
[1.0, 1.0, 2.0, 2.6666666666666665, 4.0]
>>> s.expanding(min_periods=3).max().compute().tolist()
[nan, nan, nan, 4.0, 8.0]
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pandas as pd

from ..graph.layers import LayeredGraph, new_token
from ..graph.partials import through_all
from .core import DataFrame, Series, _Frame, _nonempty, make_meta, new_collection
from .selection import SelectsColumns
from .standin import on_stand_ins

__all__ = ["Expanding"]

#: the statistics run across partitions: what each gives, and its example's output
_STATISTICS = {"count": ("How many values are present so far.", "[1.0, 1.0, 2.0, 3.0]"),
               "sum": ("The sum of the values so far.", "[1.0, 1.0, 4.0, 8.0]"),
               "mean": ("The mean of the values so far.", "[1.0, 1.0, 2.0, 2.667]"),
               "min": ("The least value so far.", "[1.0, 1.0, 1.0, 1.0]"),
               "max": ("The greatest value so far.", "[1.0, 1.0, 3.0, 4.0]"),
               "var": ("The variance of the values so far (``ddof`` as pandas').", "[nan, nan, 2.0, 2.333]"),
               "std": ("The standard deviation of the values so far (``ddof`` as pandas').",
                       "[nan, nan, 1.414, 1.528]")}
STATISTICS = tuple(_STATISTICS)


def _values(part: Any) -> np.ndarray:
    """The partition's columns as a 2-d float array (a Series as one column)."""
    frame = part.to_frame() if isinstance(part, pd.Series) else part
    return frame.to_numpy(dtype="float64", na_value=np.nan).reshape(len(frame), frame.shape[1])


def _shaped(part: Any, out: np.ndarray) -> Any:
    """A 2-d float array of ``_values``' shape back as ``part``'s Series or DataFrame."""
    if isinstance(part, pd.Series):
        return pd.Series(out[:, 0], index=part.index, name=part.name, dtype="float64")
    return pd.DataFrame(out, index=part.index, columns=part.columns, dtype="float64")


def _totals(part: Any) -> tuple:
    """(count, sum, mean, M2, min, max) per column of the values present, and the rows."""
    vals = _values(part)
    valid = ~np.isnan(vals)
    n = valid.sum(axis=0).astype("float64")
    total = np.where(valid, vals, 0.0).sum(axis=0)
    mean = np.divide(total, n, out=np.zeros_like(total), where=n > 0)
    m2 = (np.where(valid, vals - mean, 0.0) ** 2).sum(axis=0)
    lo = np.where(n > 0, np.where(valid, vals, np.inf).min(axis=0, initial=np.inf), np.nan)
    hi = np.where(n > 0, np.where(valid, vals, -np.inf).max(axis=0, initial=-np.inf), np.nan)
    return n, total, mean, m2, lo, hi, np.full(vals.shape[1], float(len(vals)))


def _merge(a: tuple, b: tuple) -> tuple:
    """Two sets of totals as one (Chan's formula for the moments)."""
    na, sa, ma, m2a, loa, hia, ra = a
    nb, sb, mb, m2b, lob, hib, rb = b
    n = na + nb
    delta = mb - ma
    share = np.divide(nb, n, out=np.zeros_like(n), where=n > 0)
    return (n, sa + sb, ma + delta * share, m2a + m2b + delta ** 2 * na * share, np.fmin(loa, lob),
            np.fmax(hia, hib), ra + rb)


def _prefixes(totals: list) -> list:
    """Per partition, the merged totals of the partitions before it."""
    ncols = len(totals[0][0]) if totals else 0
    zero, nan = np.zeros(ncols), np.full(ncols, np.nan)
    running = (zero, zero, zero, zero, nan, nan, zero)
    out = []
    for t in totals:
        out.append(running)
        running = _merge(running, t)
    return out


def _expand(part: Any, prefix: tuple, stat: str, min_periods: int, ddof: int) -> Any:
    """``stat`` of every row so far: the partition's running values merged with ``prefix``."""
    vals = _values(part)
    valid = ~np.isnan(vals)
    n0, s0, mean0, m20, lo0, hi0, rows0 = prefix
    count_here = np.cumsum(valid, axis=0).astype("float64")
    count = n0 + count_here
    sums = s0 + np.cumsum(np.where(valid, vals, 0.0), axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        if stat == "count":
            out = count
        elif stat == "sum":
            out = sums
        elif stat == "mean":
            out = sums / count
        elif stat in ("var", "std"):
            here = np.nan_to_num(pd.DataFrame(vals).expanding(min_periods=1).var(ddof=0).to_numpy()) * count_here
            mean_here = np.divide(sums - s0, count_here, out=np.zeros_like(sums), where=count_here > 0)
            m2 = m20 + here + (mean_here - mean0) ** 2 * np.divide(n0 * count_here, count,
                                                                     out=np.zeros_like(count), where=count > 0)
            out = np.where(count - ddof > 0, m2 / (count - ddof), np.nan)
            out = np.sqrt(out) if stat == "std" else out
        else:
            running = (np.fmin if stat == "min" else np.fmax).accumulate(np.where(valid, vals, np.nan), axis=0)
            out = (np.fmin if stat == "min" else np.fmax)(lo0 if stat == "min" else hi0, running)
    # (pandas counts a count's min_periods in rows, NaN or not; the others' in values present)
    seen = rows0 + np.arange(1, len(vals) + 1, dtype="float64")[:, None] if stat == "count" else count
    return _shaped(part, np.where(seen >= min_periods, out, np.nan))


class Expanding(SelectsColumns):
    """``df.expanding(min_periods=1)``: its statistics over every row so far (see the module).

    >>> import pandas as pd, xsched.dataframe as xd
    >>> df = xd.from_pandas(pd.DataFrame({"a": [1.0, 2.0, 4.0]}), npartitions=2)
    >>> df.expanding().sum().compute().a.tolist()
    [1.0, 3.0, 7.0]
    """

    def __init__(self, frame: _Frame, min_periods: int = 1) -> None:
        if not isinstance(min_periods, int) or isinstance(min_periods, bool) or min_periods < 0:
            raise ValueError(f"expanding: min_periods must be an int of at least 0, got {min_periods!r}")
        self._frame, self._min_periods = frame, min_periods

    def __repr__(self) -> str:
        return f"Expanding [min_periods={self._min_periods}] of {self._frame!r}"

    def _run(self, stat: str, ddof: int = 1):
        frame = self._frame
        with warnings.catch_warnings():  # (pandas refuses what it cannot run, now; a stand-in's warnings say nothing)
            warnings.simplefilter("ignore")
            def probe() -> Any:
                run = getattr(_nonempty(frame._meta).expanding(min_periods=self._min_periods), stat)
                return run(ddof=ddof) if stat in ("var", "std") else run()
            meta = make_meta(on_stand_ins(probe))
        name = f"expanding-{stat}-{new_token(frame._name, stat, self._min_periods, ddof)}"
        layers = through_all(name, frame._keys(), _totals, _prefixes, _expand, (stat, self._min_periods, ddof))
        return new_collection(LayeredGraph.merge(frame._graph, new=layers), name, meta, frame.divisions)

    _label = "expanding(...)"

    def __getattr__(self, name: str):
        if name.startswith("_"):
            raise AttributeError(name)
        chosen = self._column_or_none(name)
        if chosen is not None:
            return chosen
        raise AttributeError(f"expanding(...) has no {name!r} across partitions; it has {', '.join(STATISTICS)}. "
                             f"Within each partition alone: .map_partitions(lambda part: part.expanding().{name}())")


def _statistic(stat: str, text: str, output: str):
    def run(self: Expanding, ddof: int = 1):
        if stat not in ("var", "std") and ddof != 1:
            raise TypeError(f"expanding().{stat}() takes no ddof")
        return self._run(stat, ddof)

    run.__name__, run.__qualname__ = stat, f"Expanding.{stat}"
    run.__doc__ = (f"{text}\n\n>>> import pandas as pd, xsched.dataframe as xd\n"
                   f">>> s = xd.from_pandas(pd.Series([1.0, None, 3.0, 4.0]), npartitions=2)\n"
                   f">>> s.expanding().{stat}().compute().round(3).tolist()\n{output}\n")
    return run


for _stat, (_text, _output) in _STATISTICS.items():
    setattr(Expanding, _stat, _statistic(_stat, _text, _output))


def expanding(self: _Frame, min_periods: int = 1, axis: Any = 0, method: str = "single") -> Expanding:
    """Statistics over every row so far, across partitions (see ``Expanding``).

    >>> import pandas as pd, xsched.dataframe as xd
    >>> xd.from_pandas(pd.Series([3.0, 1.0, 2.0]), npartitions=2).expanding().min().compute().tolist()
    [3.0, 1.0, 1.0]
    """
    if self._axis(axis, "expanding", none=False) != 0 or method != "single":
        raise NotImplementedError("expanding: axis=1 and method='table' are not run across partitions here")
    return Expanding(self, min_periods)


for _cls in (DataFrame, Series):
    _cls.expanding = expanding  # type: ignore[attr-defined]
