"""``ewm``: exponentially weighted means, sums, variances and standard deviations, across partitions.

Every row's value weighs all rows before it, but with weights that fall by a factor
``d = 1 - alpha`` per row (or per value present, with ``ignore_na=True``), so what a partition
needs of those before it is three numbers per column: the weighted sum of the values ``S``,
the sum of the weights ``W``, and how many values were present. One partition's own running
``S`` and ``W`` come from pandas' ``ewm(...).sum()`` of the values and of their weights; the
sums before it, decayed by ``d`` to the power of its rows so far, are added on::

    partition i --_totals--> per column: S, W, values present, rows decayed over (and S, W at
                              its last value, where the mean it passes on is)
    every partition's totals --_prefixes--> per partition: S, W, the count and the mean before it
    partition i + its prefix --_weigh--> S / W (mean; between values the mean carried, as a
                              long gap decays S and W to nothing) or S (sum), NaN below min_periods

``adjust=False`` is pandas' recursion ``y = (a * y_prev + alpha * x) / (a + alpha)``, ``a`` the
decay since the last value (``d`` without gaps), whose weights start again from 1 at every
value: what a partition passes on is the last mean, the rows since the last value and the
count. A partition's end is an affine function of the mean just after its first value, so
it is summarised by the two coefficients (two runs of pandas from its first value, with that
value 0 and 1); one small task walks those from partition to partition, and each partition
then runs pandas from its first value, that value replaced by the mean the recursion gives
there. That step across a boundary is pandas' own too (a run over the carried mean, the
missing rows and the value), so a gap weighs as the installed pandas weighs it (pandas 3.1.1
and earlier weighed one with ``alpha=0.5`` unlike the formula above; 3.1.2 follows it).
The variance (``adjust=True``) carries four numbers per column: the sums of the weights and
of their squares (which fall by ``d**2``), the weighted mean and ``M2``, the weighted sum of
squared deviations (pandas' biased variance times the weights' sum). A partition's own come
from pandas' runs over it; those before are decayed and joined to them as two groups'
moments are (``_joined``), which loses nothing to cancellation when the values sit far from
zero. Between values the variance of the last one stays, and after a single value it is
missing (where pandas' two sums of weights may round apart to give 0 instead)::

    partition i --_moment_totals--> (W, W2, mean, M2) at its end and at its last value
    all --_moment_prefixes--> per partition: those of all before it, and their variance
    partition i + its prefix --_spread--> var (bias=False: times W**2 / (W**2 - W2)), or std

The results equal pandas' to rounding (with
``adjust=True`` the sums add in another order than pandas' recursion; with ``adjust=False``
only the means carried across partition boundaries are rounded once more).

>>> import pandas as pd, xsched.dataframe as xd
>>> s = xd.from_pandas(pd.Series([1.0, None, 3.0, 4.0, 8.0]), npartitions=3)
>>> s.ewm(alpha=0.5).mean().compute().round(4).tolist()
[1.0, 1.0, 2.6, 3.4615, 5.9655]
>>> t = xd.from_pandas(pd.Series([1.0, 2.0, 3.0, 4.0, 8.0]), npartitions=3)
>>> t.ewm(span=3, adjust=False).mean().compute().round(4).tolist()
[1.0, 1.5, 2.25, 3.125, 5.5625]
"""

from __future__ import annotations

import math
import warnings
from functools import partial
from typing import Any

import numpy as np
import pandas as pd

from ..graph.layers import LayeredGraph, new_token
from ..graph.partials import through_all
from .core import DataFrame, Series, _Frame, _nonempty, make_meta, map_partitions, new_collection
from .expanding import _shaped, _values
from .selection import SelectsColumns
from .standin import on_stand_ins

__all__ = ["EWM"]

#: the methods run across partitions
METHODS = ("mean", "sum", "var", "std")  # (and agg, of them)


def _alpha(com: Any, span: Any, halflife: Any, alpha: Any) -> float:
    """The smoothing factor from whichever one of pandas' four ways of giving it."""
    given = {k: v for k, v in (("com", com), ("span", span), ("halflife", halflife), ("alpha", alpha))
             if v is not None}
    if len(given) != 1:
        raise ValueError(f"ewm: give exactly one of com, span, halflife or alpha, got {sorted(given) or 'none'}")
    (kind, value), = given.items()
    if kind == "com":
        if value < 0:
            raise ValueError(f"ewm: com must be at least 0, got {value}")
        return 1.0 / (1.0 + value)
    if kind == "span":
        if value < 1:
            raise ValueError(f"ewm: span must be at least 1, got {value}")
        return 2.0 / (value + 1.0)
    if kind == "halflife":
        if isinstance(value, (str, pd.Timedelta)) or value <= 0:
            raise ValueError(f"ewm: halflife must be a number above 0 (a time span needs times=, which is not "
                             f"run across partitions), got {value!r}")
        return 1.0 - math.exp(-math.log(2.0) / value)
    if not 0 < value <= 1:
        raise ValueError(f"ewm: alpha must be in (0, 1], got {value}")
    return float(value)


def _local(vals: np.ndarray, alpha: float, ignore_na: bool) -> tuple:
    """For ``adjust=True``: the partition's own running S and W per row and column (pandas'
    weighted sums of the values and of ones where they are present), the values present so
    far, and the decay steps so far (rows, or values present)."""
    present = ~np.isnan(vals)
    run = dict(alpha=alpha, adjust=True, ignore_na=ignore_na)
    s = pd.DataFrame(vals).ewm(**run).sum().to_numpy()
    w = pd.DataFrame(np.where(present, 1.0, np.nan)).ewm(**run).sum().to_numpy()
    count = np.cumsum(present, axis=0).astype("float64")
    steps = count if ignore_na else np.broadcast_to(np.arange(1, len(vals) + 1, dtype="float64")[:, None], vals.shape)
    return np.nan_to_num(s), np.nan_to_num(w), count, steps


def _last_values(vals: np.ndarray) -> tuple:
    """(the row of each column's last value, 0 for a column without one; the columns' numbers):
    where a partition's end is read for what it passes on."""
    present = ~np.isnan(vals)
    return np.where(present.any(axis=0), len(vals) - 1 - present[::-1].argmax(axis=0), 0), np.arange(vals.shape[1])


def _totals(part: Any, alpha: float, ignore_na: bool) -> tuple:
    """For ``adjust=True``: S, W, values present and decay steps at the partition's end, and
    S, W and steps at its last value (where the mean it passes on is)."""
    vals = _values(part)
    ncols = vals.shape[1]
    if not len(vals):
        zero = np.zeros(ncols)
        return zero, zero, zero, zero, zero, zero, zero
    s, w, count, steps = _local(vals, alpha, ignore_na)
    last, cols = _last_values(vals)
    return s[-1], w[-1], count[-1], steps[-1].copy(), s[last, cols], w[last, cols], steps[last, cols]


def _prefixes(totals: list, alpha: float) -> list:
    """Per partition, S, W, the count and the mean of all the partitions before it (the mean
    as at the last value: a long gap may decay S and W to nothing, the mean stays)."""
    ncols = len(totals[0][0]) if totals else 0
    d = 1.0 - alpha
    s, w, n, mean = np.zeros(ncols), np.zeros(ncols), np.zeros(ncols), np.full(ncols, np.nan)
    out = []
    for s_p, w_p, n_p, steps_p, s_last, w_last, steps_last in totals:
        out.append((s.copy(), w.copy(), n.copy(), mean.copy()))
        with np.errstate(invalid="ignore", divide="ignore"):
            at_last = (d ** steps_last * s + s_last) / (d ** steps_last * w + w_last)
        mean = np.where(n_p > 0, at_last, mean)
        s, w, n = d ** steps_p * s + s_p, d ** steps_p * w + w_p, n + n_p
    return out


def _recursion(vals: np.ndarray, alpha: float, ignore_na: bool) -> np.ndarray:
    """pandas' ``adjust=False`` mean of each column, every row (NaN before a column's first value)."""
    return pd.DataFrame(vals).ewm(alpha=alpha, adjust=False, ignore_na=ignore_na).mean().to_numpy()


#: the longest run of missing rows handed to pandas for a step across partitions; past it the
#: step is written out (the same formula; the old mean's weight by then is below 1e-300 unless
#: alpha is under about 0.007)
_LONGEST_GAP = 100_000


def _first_step(y_prev: float, gap: float, x_first: float, alpha: float, ignore_na: bool) -> float:
    """The mean just after a column's first value in a partition, from the mean before it and
    the rows since the last value (``gap``, counting the first value's own row): pandas' own
    step, run on the mean, the missing rows and the value (its arithmetic, to the last bit)."""
    gap = 1 if ignore_na else int(gap)
    if gap > _LONGEST_GAP:
        a = (1.0 - alpha) ** gap
        return (a * y_prev + alpha * x_first) / (a + alpha)
    run = np.full(gap + 1, np.nan)
    run[0], run[-1] = y_prev, x_first
    return float(pd.Series(run).ewm(alpha=alpha, adjust=False, ignore_na=ignore_na).mean().iloc[-1])


def _ends(part: Any, alpha: float, ignore_na: bool) -> tuple:
    """For ``adjust=False``, per column: the values present, the rows before the first value
    and after the last, the first value, and the end's mean as ``A * y + B`` of the mean ``y``
    just after the first value."""
    vals = _values(part)
    present = ~np.isnan(vals)
    ncols = vals.shape[1]
    count = present.sum(axis=0).astype("float64")
    if not len(vals):
        zero = np.zeros(ncols)
        return zero, zero, zero, zero, zero, zero
    has = count > 0
    first = np.where(has, present.argmax(axis=0), len(vals))
    last = np.where(has, len(vals) - 1 - present[::-1].argmax(axis=0), -1)
    x_first = np.where(has, vals[np.minimum(first, len(vals) - 1), np.arange(ncols)] if len(vals) else 0.0, 0.0)
    slope, offset = np.zeros(ncols), np.zeros(ncols)
    for c in np.flatnonzero(has):
        run = vals[first[c]:, c:c + 1].copy()
        run[0] = 0.0
        offset[c] = _recursion(run, alpha, ignore_na)[-1, 0]
        run[0] = 1.0
        slope[c] = _recursion(run, alpha, ignore_na)[-1, 0] - offset[c]
    return count, first.astype("float64"), (len(vals) - 1 - last).astype("float64"), x_first, slope, offset


def _carried(ends: list, alpha: float, ignore_na: bool) -> list:
    """For ``adjust=False``, per partition: the mean, the rows since the last value and the
    count of all the partitions before it."""
    ncols = len(ends[0][0]) if ends else 0
    y, gap, n = np.zeros(ncols), np.zeros(ncols), np.zeros(ncols)
    out = []
    for count, lead, trail, x_first, slope, offset in ends:
        out.append((y.copy(), gap.copy(), n.copy()))
        has = count > 0
        after_first = np.array([_first_step(y[c], gap[c] + lead[c] + 1, x_first[c], alpha, ignore_na)
                                if n[c] > 0 and has[c] else x_first[c] for c in range(ncols)])
        y = np.where(has, slope * after_first + offset, y)
        gap = np.where(has, trail, gap + lead)
        n = n + count
    return out


def _recurse(part: Any, carried: tuple, alpha: float, ignore_na: bool) -> np.ndarray:
    """pandas' ``adjust=False`` mean of the partition, continuing the carried one."""
    vals = _values(part)
    y_prev, gap, n0 = carried
    present = ~np.isnan(vals)
    out = np.empty(vals.shape)
    for c in range(vals.shape[1]):
        rows = np.flatnonzero(present[:, c])
        if not len(rows):
            out[:, c] = y_prev[c] if n0[c] > 0 else np.nan
            continue
        f = rows[0]
        run = vals[f:, c:c + 1].copy()
        if n0[c] > 0:
            run[0] = _first_step(y_prev[c], gap[c] + f + 1, vals[f, c], alpha, ignore_na)
        out[:f, c] = y_prev[c] if n0[c] > 0 else np.nan
        out[f:, c] = _recursion(run, alpha, ignore_na)[:, 0]
    return out


def _weigh(part: Any, prefix: tuple, method: str, alpha: float, adjust: bool, ignore_na: bool,
           min_periods: int) -> Any:
    """``method`` per row: the partition's running sums with those before it decayed onto them
    (``adjust=False``: pandas' recursion continued from the mean carried in)."""
    vals = _values(part)
    n0 = prefix[2]
    total_n = n0 + np.cumsum(~np.isnan(vals), axis=0)
    if adjust:
        s0, w0, _, mean0 = prefix
        s, w, _, steps = _local(vals, alpha, ignore_na)
        decay = (1.0 - alpha) ** steps
        total_s, total_w = decay * s0 + s, decay * w0 + w
        if method == "sum":
            out = total_s
        else:  # (at a value S / W; between values the mean stays, as S and W decay alike, to nothing in a long gap)
            with np.errstate(invalid="ignore", divide="ignore"):
                at_values = np.where(np.isnan(vals), np.nan, total_s / total_w)
            out = pd.DataFrame(np.vstack([mean0[None, :], at_values])).ffill().to_numpy()[1:]
    else:
        out = _recurse(part, prefix, alpha, ignore_na)
    out = np.where(total_n >= max(min_periods, 1), out, np.nan)
    return _shaped(part, out)


def _own_moments(vals: np.ndarray, alpha: float, ignore_na: bool) -> tuple:
    """For the variance (``adjust=True``): per row and column, the partition's own sum of
    weights ``W``, of squared weights ``W2`` (weights fall by ``d**2``: pandas' sum with that
    factor), weighted mean and ``M2`` (the weighted sum of squared deviations: pandas' biased
    variance times ``W``), with the values present and decay steps so far (as ``_local``)."""
    s, w, count, steps = _local(vals, alpha, ignore_na)
    run = dict(adjust=True, ignore_na=ignore_na)
    ones = pd.DataFrame(np.where(np.isnan(vals), np.nan, 1.0))
    w2 = np.nan_to_num(ones.ewm(alpha=1.0 - (1.0 - alpha) ** 2, **run).sum().to_numpy())
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = s / w  # (missing before a column's first value)
    m2 = np.nan_to_num(pd.DataFrame(vals).ewm(alpha=alpha, **run).var(bias=True).to_numpy()) * w
    return w, w2, mean, m2, count, steps


def _joined(before: tuple, decay: Any, w: Any, w2: Any, mean: Any, m2: Any) -> tuple:
    """(W, W2, mean, M2) of the rows before, their weights decayed by ``decay``, and then the
    partition's own: weighted means and squared deviations joined as two groups are (the
    deviation of the two means weighs ``W_a * W_b / W``), which keeps the variance exact where
    the sums of squares would cancel."""
    w_a, w2_a, mean_a, m2_a = before
    w_a = decay * w_a
    total = w_a + w
    with np.errstate(invalid="ignore", divide="ignore"):
        both = (w_a > 0) & (w > 0)
        delta = np.where(both, np.nan_to_num(mean) - np.nan_to_num(mean_a), 0.0)
        joined_mean = np.where(both, mean_a + delta * w / np.where(total > 0, total, 1.0),
                               np.where(w > 0, mean, mean_a))
        cross = np.where(both, delta * delta * w_a * w / np.where(total > 0, total, 1.0), 0.0)
    return total, decay * decay * w2_a + w2, joined_mean, decay * m2_a + m2 + cross


def _variance(w: Any, w2: Any, m2: Any, bias: bool, n: Any) -> Any:
    """pandas' variance from the weights' sums and ``M2``: biased ``M2 / W``, else times
    ``W**2 / (W**2 - W2)``, missing after fewer than two of the ``n`` values (where that is
    zero: told by the count, as the two sums round apart here)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        var = np.where(w > 0, m2 / np.where(w > 0, w, 1.0), np.nan)
        if bias:
            return var
        spread = w * w - w2
        ok = (spread > 0) & (n >= 2)
        return np.where(ok, var * w * w / np.where(ok, spread, 1.0), np.nan)


def _moment_totals(part: Any, alpha: float, ignore_na: bool) -> tuple:
    """For the variance: the partition's own (W, W2, mean, M2) at its end, its values present
    and its decay steps (its rows, or values); and the same four and steps at its last value,
    where the variance it passes on is (a long gap may decay W and M2 to nothing)."""
    vals = _values(part)
    ncols = vals.shape[1]
    if not len(vals):
        zero = np.zeros(ncols)
        return (zero, zero, np.full(ncols, np.nan), zero), zero, zero, (zero, zero, np.full(ncols, np.nan), zero), zero
    w, w2, mean, m2, count, steps = _own_moments(vals, alpha, ignore_na)
    last, cols = _last_values(vals)
    at_last = tuple(a[last, cols] for a in (w, w2, mean, m2))
    return (w[-1], w2[-1], mean[-1], m2[-1]), count[-1], steps[-1].copy(), at_last, steps[last, cols]


def _moment_prefixes(totals: list, alpha: float, bias: bool) -> list:
    """Per partition, (W, W2, mean, M2) of all the partitions before it, their values present
    and their variance as at their last value."""
    ncols = len(totals[0][1]) if totals else 0
    d = 1.0 - alpha
    state = (np.zeros(ncols), np.zeros(ncols), np.full(ncols, np.nan), np.zeros(ncols))
    n, var = np.zeros(ncols), np.full(ncols, np.nan)
    out = []
    for end, count, steps, at_last, steps_last in totals:
        out.append((tuple(a.copy() for a in state), n.copy(), var.copy()))
        w, w2, _, m2 = _joined(state, d ** steps_last, *at_last)
        var = np.where(count > 0, _variance(w, w2, m2, bias, n + count), var)
        state = _joined(state, d ** steps, *end)
        n = n + count
    return out


def _spread(part: Any, prefix: tuple, method: str, alpha: float, ignore_na: bool, min_periods: int,
            bias: bool) -> Any:
    """The variance (or standard deviation) per row: the rows before decayed onto the
    partition's own, at each value; between values it stays (W and W2 decay in step)."""
    vals = _values(part)
    before, n0, seed = prefix
    w, w2, mean, m2, _, steps = _own_moments(vals, alpha, ignore_na)
    total_w, total_w2, _, total_m2 = _joined(before, (1.0 - alpha) ** steps, w, w2, mean, m2)
    present = ~np.isnan(vals)
    total_n = n0 + np.cumsum(present, axis=0)
    at_values = _variance(total_w, total_w2, total_m2, bias, total_n)
    # between values the variance of the last value stays (seed: the one before the partition),
    # as long as pandas' decayed sums of weights still tell it apart from one value's
    rows = np.arange(len(vals))[:, None]
    last = np.maximum.accumulate(np.where(present, rows, -1), axis=0)
    out = np.where(last >= 0, np.take_along_axis(at_values, np.maximum(last, 0), axis=0), seed[None, :])
    if not bias:
        out = np.where(present | (total_w * total_w - total_w2 > 0), out, np.nan)
    out = np.where(total_n >= max(min_periods, 1), out, np.nan)
    if method == "std":
        out = np.sqrt(out)
    return _shaped(part, out)


class EWM(SelectsColumns):
    """``df.ewm(com=, span=, halflife=, alpha=, min_periods=0, adjust=True, ignore_na=False)``:
    exponentially weighted ``mean``, ``sum``, ``var`` and ``std`` across partitions (see the
    module).

    >>> import pandas as pd, xsched.dataframe as xd
    >>> df = xd.from_pandas(pd.DataFrame({"a": [1.0, 2.0, 4.0]}), npartitions=2)
    >>> df.ewm(com=1).sum().compute().a.tolist()
    [1.0, 2.5, 5.25]
    """

    def __init__(self, frame: _Frame, alpha: float, min_periods: int, adjust: bool, ignore_na: bool,
                 pandas_kwargs: dict) -> None:
        if not isinstance(min_periods, int) or isinstance(min_periods, bool) or min_periods < 0:
            raise ValueError(f"ewm: min_periods must be an int of at least 0, got {min_periods!r}")
        self._frame, self._alpha, self._min_periods = frame, alpha, min_periods
        self._adjust, self._ignore_na, self._pandas_kwargs = bool(adjust), bool(ignore_na), pandas_kwargs

    def __repr__(self) -> str:
        return (f"EWM [alpha={self._alpha:.6g}, min_periods={self._min_periods}, adjust={self._adjust}, "
                f"ignore_na={self._ignore_na}] of {self._frame!r}")

    def _run(self, method: str, **kwargs: Any):
        frame = self._frame
        try:
            with warnings.catch_warnings():  # (pandas refuses what it cannot run, now)
                warnings.simplefilter("ignore")
                meta = make_meta(on_stand_ins(
                    lambda: getattr(_nonempty(frame._meta).ewm(**self._pandas_kwargs), method)(**kwargs)))
        except Exception as exc:
            kinds = dict(frame.dtypes.astype(str)) if isinstance(frame, DataFrame) else frame.dtype
            kind = type(exc) if type(exc) in (TypeError, ValueError, NotImplementedError) else TypeError
            raise kind(f"ewm(...).{method}(): pandas refuses it on {kinds}: {exc}") from exc
        options = (self._alpha, self._adjust, self._ignore_na)
        name = f"ewm-{method}-{new_token(frame._name, method, options, self._min_periods, kwargs)}"
        if method in ("var", "std"):
            if not self._adjust:
                raise NotImplementedError(f"ewm(adjust=False).{method}(): only adjust=True's variance runs across "
                                          "partitions here; within each partition alone: "
                                          f".map_partitions(lambda part: part.ewm(...).{method}())")
            layers = through_all(name, frame._keys(), partial(_moment_totals, alpha=self._alpha,
                                                              ignore_na=self._ignore_na),
                                 partial(_moment_prefixes, alpha=self._alpha, bias=bool(kwargs["bias"])), _spread,
                                 (method, self._alpha, self._ignore_na, self._min_periods, bool(kwargs["bias"])))
            return new_collection(LayeredGraph.merge(frame._graph, new=layers), name, meta, frame.divisions)
        if self._adjust:
            summarize = partial(_totals, alpha=self._alpha, ignore_na=self._ignore_na)
            share = partial(_prefixes, alpha=self._alpha)
        else:
            summarize = partial(_ends, alpha=self._alpha, ignore_na=self._ignore_na)
            share = partial(_carried, alpha=self._alpha, ignore_na=self._ignore_na)
        layers = through_all(name, frame._keys(), summarize, share, _weigh, (method, *options, self._min_periods))
        return new_collection(LayeredGraph.merge(frame._graph, new=layers), name, meta, frame.divisions)

    def mean(self):
        """The weighted mean of the values so far.

        >>> import pandas as pd, xsched.dataframe as xd
        >>> s = xd.from_pandas(pd.Series([2.0, 4.0, None, 8.0]), npartitions=2)
        >>> s.ewm(alpha=0.5).mean().compute().round(3).tolist()
        [2.0, 3.333, 3.333, 6.727]
        """
        return self._run("mean")

    def sum(self):
        """The weighted sum of the values so far (``adjust=True`` only, as pandas).

        >>> import pandas as pd, xsched.dataframe as xd
        >>> xd.from_pandas(pd.Series([2.0, 4.0, 8.0]), npartitions=2).ewm(alpha=0.5).sum().compute().tolist()
        [2.0, 5.0, 10.5]
        """
        return self._run("sum")

    def var(self, bias: bool = False):
        """The weighted variance of the values so far (``bias=False``: pandas' correction for
        the weights; ``adjust=True`` only here).

        >>> import pandas as pd, xsched.dataframe as xd
        >>> s = xd.from_pandas(pd.Series([1.0, None, 3.0, 8.0, 2.0]), npartitions=3)
        >>> s.ewm(alpha=0.3).var().compute().round(3).tolist()
        [nan, nan, 2.0, 13.743, 10.494]
        """
        return self._run("var", bias=bias)

    def std(self, bias: bool = False):
        """The weighted standard deviation of the values so far (the square root of ``var``).

        >>> import pandas as pd, xsched.dataframe as xd
        >>> s = xd.from_pandas(pd.Series([1.0, None, 3.0, 8.0, 2.0]), npartitions=3)
        >>> s.ewm(alpha=0.3).std().compute().round(3).tolist()
        [nan, nan, 1.414, 3.707, 3.239]
        """
        return self._run("std", bias=bias)

    def agg(self, func: Any):
        """Several of ``mean``, ``sum``, ``var``, ``std`` side by side, as pandas' ``agg``: a
        name, a list of names (columns ``(column, name)`` of a frame, ``name`` of a Series),
        or ``{column: name or names}``.

        >>> import pandas as pd, xsched.dataframe as xd
        >>> s = xd.from_pandas(pd.Series([2.0, 4.0, 8.0]), npartitions=2)
        >>> s.ewm(alpha=0.5).agg(["mean", "sum"]).compute().round(3).to_dict("list")
        {'mean': [2.0, 3.333, 6.0], 'sum': [2.0, 5.0, 10.5]}
        """
        if isinstance(func, str):
            return self._named_run(func)
        if isinstance(func, dict):
            if not isinstance(self._frame, DataFrame):
                raise TypeError("ewm(...).agg({column: ...}): a Series' ewm has no columns; give a name or a list")
            pairs = [(col, how) for col, hows in func.items() for how in ([hows] if isinstance(hows, str) else hows)]
            nested = any(not isinstance(hows, str) for hows in func.values())
            parts = [self[[col]]._named_run(how) for col, how in pairs]
            labels = [(col, how) if nested else col for col, how in pairs]
            return _side_by_side(parts, labels, None)
        if isinstance(func, (list, tuple)) and func:
            if len(set(func)) != len(func):
                from pandas.errors import SpecificationError

                raise SpecificationError(f"ewm(...).agg({list(func)!r}): Function names must be unique, as pandas says")
            parts = [self._named_run(how) for how in func]
            if isinstance(self._frame, DataFrame):
                cols = list(self._frame.columns)
                return _side_by_side(parts, [(c, how) for c in cols for how in func], list(func))
            return _side_by_side(parts, list(func), None)
        raise TypeError(f"ewm(...).agg: give a name of {', '.join(METHODS)}, a list of them, or a dict of "
                        f"columns to them; got {func!r}")

    aggregate = agg

    def _named_run(self, how: Any):
        if how not in METHODS:
            raise ValueError(f"ewm(...).agg: {how!r} is not one of {', '.join(METHODS)}, which run across partitions")
        return getattr(self, how)()

    _label = "ewm(...)"

    def __getattr__(self, name: str):
        if name.startswith("_"):
            raise AttributeError(name)
        chosen = self._column_or_none(name)
        if chosen is not None:
            return chosen
        raise AttributeError(f"ewm(...) has no {name!r} across partitions; it has {', '.join(METHODS)}. Within "
                             f"each partition alone: .map_partitions(lambda part: part.ewm(...).{name}())")


def _results_joined(parts: tuple, labels: list, keys: list | None) -> pd.DataFrame:
    """One partition of each result side by side, columns ``labels`` (results of a frame:
    joined under ``keys`` first, then laid out as ``(column, name)`` as pandas' agg)."""
    if keys is not None:
        out = pd.concat(parts, axis=1, keys=keys).swaplevel(0, 1, axis=1)
        return out[pd.MultiIndex.from_tuples(labels)]
    out = pd.concat([p.iloc[:, 0] if isinstance(p, pd.DataFrame) else p for p in parts], axis=1)
    out.columns = pd.MultiIndex.from_tuples(labels) if labels and isinstance(labels[0], tuple) else labels
    return out


def _side_by_side(parts: list, labels: list, keys: list | None) -> DataFrame:
    """The results (each partitioned as the frame) as one frame, partition by partition."""
    meta = _results_joined(tuple(p._meta for p in parts), labels, keys)
    return map_partitions(_results_of, labels, keys, *parts, meta=meta, _name="ewm-agg")


def _results_of(labels: list, keys: list | None, *parts: Any) -> pd.DataFrame:
    return _results_joined(parts, labels, keys)


def ewm(self: _Frame, com: Any = None, span: Any = None, halflife: Any = None, alpha: Any = None,
        min_periods: int = 0, adjust: bool = True, ignore_na: bool = False, axis: Any = 0, times: Any = None,
        method: str = "single") -> EWM:
    """Exponentially weighted windows across partitions (see ``EWM``): give one of ``com``,
    ``span``, ``halflife`` (a number of rows) or ``alpha``.

    >>> import pandas as pd, xsched.dataframe as xd
    >>> xd.from_pandas(pd.Series([3.0, 1.0, 2.0]), npartitions=2).ewm(span=2).mean().compute().round(3).tolist()
    [3.0, 1.5, 1.846]
    """
    if times is not None:
        raise NotImplementedError("ewm(times=...): weights by elapsed time are not run across partitions here; "
                                  "give com, span, halflife (in rows) or alpha, or run it per partition with "
                                  "map_partitions")
    if self._axis(axis, "ewm", none=False) != 0 or method != "single":
        raise NotImplementedError("ewm: axis=1 and method='table' are not run across partitions here")
    value = _alpha(com, span, halflife, alpha)
    kwargs = {k: v for k, v in (("com", com), ("span", span), ("halflife", halflife), ("alpha", alpha))
              if v is not None}
    kwargs.update(min_periods=min_periods, adjust=adjust, ignore_na=ignore_na)
    return EWM(self, value, min_periods, adjust, ignore_na, kwargs)


for _cls in (DataFrame, Series):
    _cls.ewm = ewm  # type: ignore[attr-defined]
