"""Statistics that pair values or keep labels, as trees: corr, corrwith, cov, idxmax, idxmin, argmax, argmin,
mode, median, quantile, sem, skew, kurt, autocorr, is_monotonic_increasing/decreasing, nunique_approx.

Each is a ``reduction`` (``reductions.py``) whose partials stay small:

* ``corr``/``cov``: per pair of columns, over the rows where both are present (pandas'
  pairwise-complete rows), the count, both means and the sums of squared and crossed
  deviations from them, and each column's least and largest value there (equal: no spread,
  so no correlation, as pandas, where rounding would leave some); partials merge with the
  pairwise formula of Chan, Golub & LeVeque, so large means do not cost precision;
* ``idxmax``/``idxmin``: per column, the best value of the partition and its label; ties go
  to the earlier partition, as pandas takes the first;
* ``mode``: the value counts (``value_counts``' partials), the most frequent values at the end;
* ``median``: ``quantile(0.5)`` (exact while every partition fits the quantile sample);
  ``DataFrame.quantile``: the Series' quantile of every column, side by side;
* ``sem``/``skew``/``kurt``: per column the count, mean and the sums of the 2nd, 3rd and 4th
  powers of the deviations from it, merged exactly with the pairwise formulas of Pébay (the
  3rd and 4th moments' analogues of Chan, Golub & LeVeque), then pandas' bias-corrected
  estimators; a column of one repeated value has no skew or kurtosis (NaN, as pandas);
* ``autocorr``: ``corr`` of the Series with its ``shift(lag)``;
* ``nunique_approx``: a HyperLogLog sketch, 2**16 one-byte registers per partial whatever the
  data (each value's 64-bit pandas hash: its first 16 bits pick a register, which keeps the
  most leading zeros seen in the other 48), merged by maximum; about 0.4 % off;
* ``is_monotonic_increasing``/``decreasing``: per partition whether it is, and its first and
  last value; neighbours must meet in order too (empty partitions skipped).

>>> import pandas as pd, xsched.dataframe as xd
>>> df = xd.from_pandas(pd.DataFrame({"x": [1.0, 2, 3, 4], "y": [2.0, 4, 6, 9]}), npartitions=2)
>>> round(float(df.corr().compute().loc["x", "y"]), 4), df.y.idxmax().compute()
(0.9944, 3)
"""

from __future__ import annotations

from functools import partial
from typing import Any

import numpy as np
import pandas as pd

from ..graph.collection import compute_collection
from ..graph.layers import new_token
from .core import DataFrame, Index, Series, _Frame, _nonempty, map_partitions, new_collection
from .pieces import cast_dtypes
from .rank import rank_series
from .reductions import INTERPOLATIONS, _joined, _value_counts_chunk, _value_counts_merge, across, joint, missing_as_pandas, \
    quantile, reduction
from .standin import on_stand_ins

__all__ = ["corr", "cov", "idxbest", "mode", "frame_quantile", "power_moment", "monotonic"]


# --------------------------------------------------------------------------- corr, cov


def _comoments(part: pd.DataFrame) -> tuple:
    """Per pair (i, j) of columns over the rows where both are present: count, mean of i,
    sum of squared deviations of i, sum of crossed deviations, the least and largest value of
    i (``k x k`` arrays: a column constant over the pair's rows has no spread, exactly, where
    rounding would leave some); and whether a value is missing (pandas' ``DataFrame.cov`` then
    ignores ``ddof``)."""
    x = part.to_numpy(dtype="float64", na_value=np.nan)
    valid = (~np.isnan(x)).astype("float64")
    x0 = np.where(valid > 0, x, 0.0)
    n = valid.T @ valid
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(n > 0, (x0.T @ valid) / np.maximum(n, 1), 0.0)  # [i, j]: of i where j too
        # deviations from the partition's column means first, then from the pair's means
        counts = valid.sum(axis=0)
        shift = np.where(counts > 0, x0.sum(axis=0) / np.maximum(counts, 1), 0.0)  # (no warning for empty columns)
    xc = np.where(valid > 0, x - shift, 0.0)
    s1 = xc.T @ valid  # [i, j]: sum of i's deviations where j too
    s2 = (xc ** 2).T @ valid
    sxy = xc.T @ xc
    d = np.where(n > 0, s1 / np.maximum(n, 1), 0.0)
    m2 = s2 - n * d ** 2
    cxy = sxy - n * d * d.T
    lo, hi = np.full(n.shape, np.inf), np.full(n.shape, -np.inf)
    for j in range(x.shape[1]):
        both = x[valid[:, j] > 0]
        lo[:, j] = np.fmin.reduce(both, axis=0, initial=np.inf)
        hi[:, j] = np.fmax.reduce(both, axis=0, initial=-np.inf)
    return n, mean, m2, cxy, lo, hi, bool((valid == 0).any())


def _merge_comoments(partials: list) -> tuple:
    n, mean, m2, cxy, lo, hi, missing = partials[0]
    for nb, meanb, m2b, cxyb, lob, hib, missing_b in partials[1:]:
        missing = missing or missing_b
        lo, hi = np.fmin(lo, lob), np.fmax(hi, hib)
        total = n + nb
        safe = np.maximum(total, 1)
        delta = meanb - mean
        weight = np.where(total > 0, n * nb / safe, 0.0)
        m2 = m2 + m2b + delta ** 2 * weight
        cxy = cxy + cxyb + delta * delta.T * weight
        mean = np.where(total > 0, mean + delta * nb / safe, 0.0)
        n = total
    return n, mean, m2, cxy, lo, hi, missing


def _finish_comoments(partials: list, kind: str, min_periods: int, ddof: int, labels: list,
                      series: bool) -> Any:
    n, _, m2, cxy, lo, hi, missing = _merge_comoments(partials)
    constant = lo == hi
    m2, cxy = np.where(constant, 0.0, m2), np.where(constant | constant.T, 0.0, cxy)
    if missing and not series:
        ddof = 1  # (as pandas' DataFrame.cov: its pairwise path over missing values has no ddof)
    with np.errstate(invalid="ignore", divide="ignore"):
        if kind == "cov":
            out = np.where(n - ddof > 0, cxy / np.maximum(n - ddof, 1), np.nan)
        else:  # (no spread in either: no correlation, as pandas)
            out = np.where((m2 > 0) & (m2.T > 0), np.clip(cxy / np.sqrt(m2 * m2.T), -1.0, 1.0), np.nan)
            out[np.diag_indices_from(out)] = np.where(np.diag(m2) > 0, 1.0, np.nan)
    out = np.where(n >= max(min_periods, 1 if kind == "cov" else 2), out, np.nan)
    if series:
        return np.float64(out[0, 1])
    return pd.DataFrame(out, index=labels, columns=labels)


def _numeric_frame(frame: DataFrame, what: str, numeric_only: bool) -> DataFrame:
    """The columns pandas correlates, failing at once (naming the column) where pandas would."""
    try:
        on_stand_ins(lambda: getattr(_nonempty(frame._meta), what)(numeric_only=numeric_only))
    except (TypeError, ValueError) as exc:
        bad = [c for c, d in frame.dtypes.items()
               if not (pd.api.types.is_numeric_dtype(d) or pd.api.types.is_bool_dtype(d))]
        raise ValueError(f"{what}: column {bad[0]!r} ({frame.dtypes[bad[0]]}) is not numeric, as "
                         f"{what} needs; select the numeric columns or pass numeric_only=True") from exc
    if numeric_only:
        keep = [c for c, d in frame.dtypes.items() if pd.api.types.is_numeric_dtype(d)
                or pd.api.types.is_bool_dtype(d)]
        frame = frame[keep]
    return frame


def _comoment(frame: DataFrame, kind: str, min_periods: int | None, ddof: int, series: bool,
              split_every: int | None):
    labels = list(frame.columns)
    meta = np.float64(0) if series else pd.DataFrame(np.zeros((0, len(labels))), columns=labels)
    return reduction(frame, _comoments, _finish_comoments, _merge_comoments, meta=meta, token=kind,
                     split_every=split_every,
                     aggregate_kwargs={"kind": kind, "min_periods": min_periods or 0, "ddof": ddof,
                                       "labels": labels, "series": series})


def _pair(left: Series, right: Series) -> DataFrame:
    """Two Series partitioned alike as one two-column frame (aligned on the index, as pandas aligns them)."""
    if not isinstance(right, Series):
        raise TypeError(f"corr/cov: other must be an xsched Series, got {type(right).__name__}")
    return map_partitions(_two_columns, left, right, _name="pair")


def _two_columns(a: pd.Series, b: pd.Series) -> pd.DataFrame:
    return pd.concat([a.rename(0), b.rename(1)], axis=1)


def corr(frame: _Frame, other: Series | None = None, method: str = "pearson", min_periods: int | None = None,
         numeric_only: bool = False, split_every: int | None = None):
    """Pearson correlation: of the columns pairwise (a DataFrame of one partition), or of a
    Series with ``other`` (a Scalar).

    >>> import pandas as pd, xsched.dataframe as xd
    >>> s = xd.from_pandas(pd.Series([1.0, 2, 3, 5]), npartitions=2)
    >>> float(s.corr(s * 2).compute())
    1.0

    ``method="spearman"`` correlates the ranks (``rank.py``) of the rows where both values are
    present, as pandas does: a frame with no value missing (counted when built) ranks each
    column once, else pair by pair, two ranks (each a sort) per pair of columns.

    >>> float(s.corr(s ** 3, method="spearman").compute())
    1.0
    """
    if method == "spearman":
        return _spearman(frame, other, min_periods, numeric_only, split_every)
    if method != "pearson":
        raise NotImplementedError(f"corr(method={method!r}): 'pearson' and 'spearman' run on partitions; "
                                  "for others compute() and use pandas")
    if isinstance(frame, Series):
        return _comoment(_pair(frame, other), "corr", min_periods, 1, True, split_every)
    return _comoment(_numeric_frame(frame, "corr", numeric_only), "corr", min_periods, 1, False, split_every)


def _spearman(frame: _Frame, other: Series | None, min_periods: int | None, numeric_only: bool,
              split_every: int | None):
    """Spearman's correlation: Pearson's of the ranks of the rows where both are present."""
    if isinstance(frame, Series):
        if not isinstance(other, Series):
            raise TypeError(f"corr: other must be an xsched Series, not {type(other).__name__}")
        both = frame.notna() & other.notna()
        first, second = rank_series(frame.where(both)), rank_series(other.where(both))
        return _comoment(_pair(first, second), "corr", min_periods, 1, True, split_every)
    numeric = _numeric_frame(frame, "corr", numeric_only)
    columns = list(numeric.columns)
    if columns and not compute_collection(numeric.isna().any()).any():
        # no value missing anywhere (counted now): every pair's rows are all rows, so each
        # column is ranked once, not once per pair
        return _comoment(numeric.rank(), "corr", min_periods, 1, False, split_every)
    pairs = [(i, j) for i in range(len(columns)) for j in range(i, len(columns))]
    values = [_spearman(numeric[columns[i]], numeric[columns[j]], min_periods, False, split_every) for i, j in pairs]
    meta = pd.DataFrame(np.zeros((0, len(columns))), columns=pd.Index(columns))
    return _joined(f"corr-spearman-{new_token(numeric._name, min_periods)}", _spearman_matrix, values,
                   (pairs, columns), meta)


def _spearman_matrix(values: list, pairs: list, columns: list) -> pd.DataFrame:
    out = np.full((len(columns), len(columns)), np.nan)
    for (i, j), value in zip(pairs, values):
        out[i, j] = out[j, i] = value
    return pd.DataFrame(out, index=pd.Index(columns), columns=pd.Index(columns))


def corrwith(frame: DataFrame, other: Any, axis: Any = 0, drop: bool = False, method: str = "pearson",
             numeric_only: bool = False, split_every: int | None = None):
    """Each column's correlation with ``other``: a Series partitioned alike, or a frame, whose
    columns of the same name pair up (the others NaN, or left out with ``drop``), as pandas'.

    >>> import pandas as pd, xsched.dataframe as xd
    >>> df = xd.from_pandas(pd.DataFrame({"a": [1.0, 2, 3, 4], "b": [4.0, 3, 2, 2]}), npartitions=2)
    >>> df.corrwith(df.a * 2).compute().round(3).to_dict()
    {'a': 1.0, 'b': -0.944}
    """
    if frame._axis(axis, "corrwith", none=False) != 0:
        raise NotImplementedError("corrwith(axis=1) correlates rows: run it per partition with map_partitions")
    if isinstance(other, Series):
        left = _numeric_frame(frame, "corr", numeric_only)  # (every column pairs: each must be numeric)
        labels = left._meta.columns
        values = [corr(left[c], other, method, split_every=split_every) for c in labels]
        pairs = list(range(len(labels)))
    elif isinstance(other, DataFrame):
        left, right = (_numeric_frame(f, "corr", True) if numeric_only else f for f in (frame, other))
        common = left._meta.columns.intersection(right._meta.columns)
        labels = common if drop else left._meta.columns.union(right._meta.columns)
        if len(common):
            _numeric_frame(left[list(common)], "corr", False)  # (pandas' error for a paired text column)
        values = [corr(left[c], right[c], method, split_every=split_every) for c in common]
        pairs = [labels.get_loc(c) for c in common]
    else:
        raise TypeError(f"corrwith: other must be an xsched Series or DataFrame, not {type(other).__name__}")
    meta = pd.Series([], dtype="float64")
    return _joined(f"corrwith-{new_token(frame._name, getattr(other, '_name', None), drop, method, numeric_only)}",
                   _corrwith_result, values, (pairs, labels), meta)


def _corrwith_result(values: list, places: list, labels: pd.Index) -> pd.Series:
    out = np.full(len(labels), np.nan)
    out[places] = [float(v) for v in values]
    return pd.Series(out, index=labels)


def cov(frame: _Frame, other: Series | None = None, min_periods: int | None = None, ddof: int = 1,
        numeric_only: bool = False, split_every: int | None = None):
    """Covariance: of the columns pairwise (a DataFrame of one partition), or of a Series with
    ``other`` (a Scalar); ``ddof`` as pandas.

    >>> import pandas as pd, xsched.dataframe as xd
    >>> df = xd.from_pandas(pd.DataFrame({"x": [1.0, 2, 3], "y": [1.0, 0, 2]}), npartitions=2)
    >>> df.cov().compute().loc["x", "y"]
    np.float64(0.5)
    """
    if isinstance(frame, Series):
        return _comoment(_pair(frame, other), "cov", min_periods, ddof, True, split_every)
    return _comoment(_numeric_frame(frame, "cov", numeric_only), "cov", min_periods, ddof, False, split_every)


# --------------------------------------------------------------------------- idxmax, idxmin


def _best_chunk(part: Any, largest: bool, skipna: bool) -> list:
    """Per column: None (no value), "na" (a missing value under ``skipna=False``), or (value, label)."""
    frame = part.to_frame() if isinstance(part, pd.Series) else part
    out = []
    for i in range(frame.shape[1]):
        col = frame.iloc[:, i]
        present = col.notna()
        if not skipna and not present.all():
            out.append("na")
        elif not present.any():
            out.append(None)
        else:
            values = col.reset_index(drop=True)
            pos = values.idxmax() if largest else values.idxmin()
            out.append((values.iloc[pos], col.index[pos]))
    return out


def _best_merge(partials: list, largest: bool) -> list:
    out = list(partials[0])
    for one in partials[1:]:
        for i, cand in enumerate(one):
            have = out[i]
            if have == "na" or cand is None:
                continue
            if cand == "na" or have is None or (cand[0] > have[0] if largest else cand[0] < have[0]):
                out[i] = cand
    return out


def _best_final(partials: list, largest: bool, labels: list | None, index_dtype: Any) -> Any:
    best = _best_merge(partials, largest)
    for cand, label in zip(best, labels or [None]):
        if cand is None or cand == "na":  # pandas' own errors
            where = "" if labels is None else f" (column {label!r})"
            raise ValueError(("Encountered all NA values" if cand is None else
                              "Encountered an NA value with skipna=False") + where)
    found = [cand[1] for cand in best]
    if labels is None:
        return found[0]
    return pd.Series(found, index=labels, dtype=index_dtype)


def idxbest(frame: _Frame, largest: bool, skipna: bool = True, numeric_only: bool = False,
            split_every: int | None = None):
    """``idxmax`` (``largest``) or ``idxmin``: the label of the first best value per column."""
    what = "idxmax" if largest else "idxmin"
    try:
        meta = on_stand_ins(lambda: getattr(_nonempty(frame._meta), what)(
            **({"numeric_only": numeric_only} if isinstance(frame, DataFrame) else {})))
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{what}() of this {type(frame).__name__} fails in pandas: {exc}") from exc
    if isinstance(frame, DataFrame):
        if numeric_only:
            frame = frame[list(meta.index)]
        meta, labels = meta.iloc[:0], list(frame.columns)
    else:
        labels = None
    return reduction(frame, _best_chunk, _best_final, partial(_best_merge, largest=largest), meta=meta, token=what,
                     split_every=split_every, chunk_kwargs={"largest": largest, "skipna": skipna},
                     aggregate_kwargs={"largest": largest, "labels": labels,
                                       "index_dtype": frame._meta.index.dtype})


def _position_chunk(part: pd.Series, largest: bool, skipna: bool) -> tuple:
    """The partition's best value and its position in the partition, and its length."""
    return _best_chunk(part.reset_index(drop=True), largest, skipna)[0], len(part)


def _position_merge(partials: list, largest: bool) -> tuple:
    """Consecutive partitions' best values (positions counted from the first's start), and
    their length together: the tree merges neighbours in order, so each offset is known."""
    offset, shifted = 0, []
    for best, length in partials:
        shifted.append([best if best is None or best == "na" else (best[0], best[1] + offset)])
        offset += length
    return _best_merge(shifted, largest)[0], offset


def _position_final(partials: list, largest: bool) -> int:
    best, _ = _position_merge(partials, largest)
    return int(_best_final([[best]], largest, None, None))


def argbest(series: Series, largest: bool, skipna: bool = True, split_every: int | None = None):
    """``argmax`` (``largest``) or ``argmin``: the position of the first best value (a tree
    of each partition's best and length)."""
    what = "argmax" if largest else "argmin"
    try:
        on_stand_ins(lambda: getattr(_nonempty(series._meta), what)())
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{what}() of this Series fails in pandas: {exc}") from exc
    return reduction(series, _position_chunk, partial(_position_final, largest=largest),
                     partial(_position_merge, largest=largest), meta=0, token=what, split_every=split_every,
                     chunk_kwargs={"largest": largest, "skipna": skipna})


# --------------------------------------------------------------------------- mode


def _mode_final(partials: list, dropna: bool, meta: pd.Series) -> pd.Series:
    counts = _value_counts_merge(partials)
    counts = counts[counts > 0]  # (a categorical counts its unseen categories too)
    top = counts[counts == counts.max()].index if len(counts) else counts.index
    dtype = cast_dtypes(meta)  # (unknown categories: those the merged counts hold)
    out = pd.Series(top, dtype=dtype, name=meta.name)
    try:  # (pandas 3.1 sorts text of dtype object into dtype str: back to the column's)
        return out.sort_values(ignore_index=True, na_position="last").astype(dtype)
    except TypeError:  # (values that do not compare: in order of appearance)
        return out.reset_index(drop=True)


def mode(frame: _Frame, dropna: bool = True, split_every: int | None = None, numeric_only: bool = False):
    """The most frequent value(s), sorted (a Series of one partition); of a DataFrame, per
    column (per numeric column with ``numeric_only``).

    >>> import pandas as pd, xsched.dataframe as xd
    >>> xd.from_pandas(pd.Series([3, 1, 3, 1, 2]), npartitions=2).mode().compute().tolist()
    [1, 3]
    """
    if isinstance(frame, DataFrame) and numeric_only:
        frame = frame[list(_nonempty(frame._meta).mode(numeric_only=True).columns)]
    if isinstance(frame, DataFrame):
        if not len(frame.columns):
            return _of_no_columns(_nonempty(frame._meta).mode(), "mode")
        modes = [m for (m,) in joint(frame, list(frame.columns), lambda s, _: [mode(s, dropna, split_every)])]
        meta = pd.DataFrame({c: m._meta for c, m in zip(frame.columns, modes)}).iloc[:0]
        return map_partitions(_side_by_side, *modes, list(frame.columns), meta=meta, _name="mode")
    meta = frame._meta.iloc[:0].reset_index(drop=True)
    return reduction(frame, _value_counts_chunk, _mode_final, _value_counts_merge, meta=meta, token="mode",
                     split_every=split_every, chunk_kwargs={"dropna": dropna},
                     aggregate_kwargs={"dropna": dropna, "meta": meta})


def _nan_where(value: Any, missing: Any, marker: Any = np.nan) -> Any:
    """``value`` (a statistic, or one per column) with ``marker`` (one per column: a Series)
    where ``missing`` says a value was."""
    if isinstance(value, pd.Series):
        out = value.where(~missing.reindex(value.index, fill_value=False).astype(bool), marker)
        return out if value.dtype == object else out.astype(value.dtype)  # (markers as objects: NaN stays float)
    return marker if bool(missing) else value


def _missing_median(dtype: Any) -> Any:
    """What pandas' ``median(skipna=False)`` gives for a missing value of ``dtype``: NaN
    (NumPy's float), NaT for NumPy's times, NA for nullable and pyarrow dtypes."""
    try:
        return pd.Series([None], dtype=dtype).median(skipna=False)
    except (TypeError, ValueError):
        return np.float64(np.nan)


def _of_no_columns(meta: Any, what: str):
    """A statistic over no columns (``numeric_only=True`` of a frame with none): pandas'
    empty answer, as a collection of one partition."""
    name = f"{what}-{new_token(what, repr(meta.dtypes) if isinstance(meta, pd.DataFrame) else str(meta.dtype))}"
    return new_collection({f"{name}-0": meta.copy()}, name, meta.iloc[:0], (None, None))


def _side_by_side(*args: Any) -> pd.DataFrame:
    *modes, names = args
    return pd.DataFrame(dict(zip(range(len(modes)), modes))).set_axis(names, axis=1)


# --------------------------------------------------------------------------- DataFrame.quantile


def frame_quantile(frame: DataFrame, q: Any = 0.5, numeric_only: bool = False, split_every: int | None = None,
                   interpolation: str = "linear"):
    """Quantiles of every column (a Series of one partition for one ``q``, else a DataFrame
    with a row per ``q``), each the Series' ``quantile``: pandas' interpolations, exact
    while every partition fits the quantile sample.

    >>> import pandas as pd, xsched.dataframe as xd
    >>> df = xd.from_pandas(pd.DataFrame({"a": [1.0, 2, 3, 4], "b": [4, 3, 2, 1]}), npartitions=2)
    >>> df.quantile(0.25).compute().to_dict(), df.quantile([0.5]).compute().to_dict("list")
    ({'a': 1.75, 'b': 1.75}, {'a': [2.5], 'b': [2.5]})
    >>> df.quantile(0.25, interpolation="lower").compute().to_dict()
    {'a': 1.0, 'b': 1.0}
    """
    if interpolation not in INTERPOLATIONS:
        raise ValueError(f"quantile: interpolation={interpolation!r}; pandas' are {', '.join(INTERPOLATIONS)}")
    try:
        meta = on_stand_ins(lambda: _nonempty(frame._meta).quantile(q, numeric_only=numeric_only,
                                                                      interpolation=interpolation))
    except Exception as exc:  # (pandas' own, or pyarrow's for text)
        raise TypeError(f"quantile() of this DataFrame fails in pandas: {exc}; pass numeric_only=True "
                        "or select the numeric columns") from exc
    names = list(meta.index if np.ndim(q) == 0 else meta.columns)
    if not names:
        return _of_no_columns(meta, "quantile")
    qs = [q] if np.ndim(q) == 0 else list(q)
    parts = [p for (p,) in joint(frame, names, lambda s, _: [quantile(s, qs, split_every,
                                                                      interpolation=interpolation)])]
    return map_partitions(_quantiles_side_by_side, *parts, names, q, meta.iloc[:0], meta=meta.iloc[:0],
                          _name="quantile")


def _quantiles_side_by_side(*args: Any) -> Any:
    *parts, names, q, meta = args
    if np.ndim(q) == 0:
        return pd.Series([p.iloc[0] for p in parts], index=names, name=q, dtype=meta.dtype)
    out = pd.concat(parts, axis=1, keys=names)
    out.index = pd.Index(np.asarray(q, dtype=float))
    return out.astype(dict(meta.dtypes))


# --------------------------------------------------------------------------- sem, skew, kurt


def _as_floats(part: Any, columns: list | None) -> np.ndarray:
    if columns is None:
        return part.to_numpy(dtype="float64", na_value=np.nan).reshape(-1, 1)
    return part[columns].to_numpy(dtype="float64", na_value=np.nan).reshape(len(part), len(columns))


def _power_moments(part: Any, columns: list | None) -> tuple:
    """Per column: count, mean, the sums of the 2nd, 3rd and 4th powers of the deviations
    from it (float64 arrays), and whether a value is missing. A column of one repeated value
    gets that value as its mean, so its sums are exactly 0 (pandas' test for no spread)."""
    values = _as_floats(part, columns)
    present = ~np.isnan(values)
    count = present.sum(axis=0).astype("float64")
    with np.errstate(invalid="ignore", divide="ignore"):
        safe = np.maximum(count, 1)
        mean = np.nansum(values, axis=0) / safe
        mean = mean + np.where(present, values - mean, 0.0).sum(axis=0) / safe  # (one refinement)
        hi = np.fmax.reduce(values, axis=0, initial=-np.inf)
        lo = np.fmin.reduce(values, axis=0, initial=np.inf)
        mean = np.where(count == 0, 0.0, np.where(hi == lo, hi, mean))
        dev = np.where(present, values - mean, 0.0)
        dev2 = dev * dev
        return count, mean, dev2.sum(axis=0), (dev2 * dev).sum(axis=0), (dev2 * dev2).sum(axis=0), \
            (~present).any(axis=0)


def _merge_power_moments(partials: list) -> tuple:
    n, mean, m2, m3, m4, missing = partials[0]
    for nb, meanb, m2b, m3b, m4b, missing_b in partials[1:]:
        total = n + nb
        with np.errstate(invalid="ignore", divide="ignore"):
            safe = np.maximum(total, 1)
            d = np.where(total > 0, meanb - mean, 0.0)
            d_n = d / safe
            both = n * nb
            m4 = (m4 + m4b + d * d_n ** 3 * both * (n * n - both + nb * nb)
                  + 6 * d_n ** 2 * (n * n * m2b + nb * nb * m2) + 4 * d_n * (n * m3b - nb * m3))
            m3 = m3 + m3b + d * d_n ** 2 * both * (n - nb) + 3 * d_n * (n * m2b - nb * m2)
            m2 = m2 + m2b + d * d_n * both
            mean = mean + d_n * nb
        n, missing = total, missing | missing_b
    return n, mean, m2, m3, m4, missing


def _finish_power_moments(partials: list, kind: str, ddof: int, skipna: bool, labels: list | None,
                          dtype: Any, source: Any = None) -> Any:
    n, _, m2, m3, m4, missing = _merge_power_moments(partials)
    with np.errstate(invalid="ignore", divide="ignore"):
        if kind == "sem":
            out = np.where(n - ddof > 0, np.sqrt(m2 / np.maximum(n - ddof, 1)) / np.sqrt(n), np.nan)
        elif kind == "skew":
            out = np.where((n >= 3) & (m2 > 0), n * np.sqrt(n - 1) / (n - 2) * m3 / m2 ** 1.5, np.nan)
        else:
            k = (n - 2) * (n - 3)
            out = np.where((n >= 4) & (m2 > 0),
                           n * (n + 1) * (n - 1) * m4 / (k * m2 ** 2) - 3 * (n - 1) ** 2 / k, np.nan)
    if not skipna:
        out = np.where(missing, np.nan, out)
    if labels is None:  # (``source``: the Series' dtype)
        return missing_as_pandas(np.float64(out[0]), source)
    return pd.Series(out, index=labels, dtype=dtype)


def power_moment(frame: _Frame, kind: str, ddof: int = 1, skipna: bool = True, numeric_only: bool = False,
                 split_every: int | None = None):
    """``sem`` (with ``ddof``), ``skew`` or ``kurt`` as a tree reduction (see the module's docstring)."""
    kwargs = {"ddof": ddof} if kind == "sem" else {}
    if isinstance(frame, DataFrame):
        kwargs["numeric_only"] = numeric_only
    try:
        meta = on_stand_ins(lambda: getattr(_nonempty(frame._meta), kind)(**kwargs))
    except Exception as exc:  # (pandas' own, or pyarrow's for text)
        raise TypeError(f"{kind}() of this {type(frame).__name__} fails in pandas: {exc}"
                        + ("; pass numeric_only=True or select the numeric columns"
                           if isinstance(frame, DataFrame) else "")) from exc
    labels = list(meta.index) if isinstance(frame, DataFrame) else None
    meta = meta.iloc[:0] if labels is not None else np.float64(0)
    return reduction(frame, _power_moments, _finish_power_moments, _merge_power_moments, meta=meta,
                     token=kind, split_every=split_every, chunk_kwargs={"columns": labels},
                     aggregate_kwargs={"kind": kind, "ddof": ddof, "skipna": skipna, "labels": labels,
                                       "dtype": getattr(meta, "dtype", None),
                                       "source": None if labels is not None else frame._meta.dtype})


# --------------------------------------------------------------------------- is_monotonic


def _monotonic_chunk(part: Any, increasing: bool) -> tuple | None:
    """None for an empty partition, else (whether it is monotonic, its first and last value);
    a categorical's values as their codes, the order pandas compares them in."""
    labels = part if isinstance(part, pd.Index) else pd.Index(part)
    if isinstance(labels, pd.CategoricalIndex):
        labels = pd.Index(labels.codes)
    if not len(labels):
        return None
    ok = labels.is_monotonic_increasing if increasing else labels.is_monotonic_decreasing
    return ok, labels[0], labels[-1]


def _monotonic_merge(partials: list, increasing: bool) -> tuple | None:
    present = [p for p in partials if p is not None]
    if not present:
        return None
    ok = all(p[0] for p in present)
    for before, after in zip(present, present[1:]):
        if not ok:
            break
        try:
            ok = bool(before[2] <= after[1] if increasing else before[2] >= after[1])
        except TypeError:  # (values that do not compare, or a missing one: pandas says no)
            ok = False
    return ok, present[0][1], present[-1][2]


def _monotonic_final(partials: list, increasing: bool) -> bool:
    out = _monotonic_merge(partials, increasing)
    return True if out is None else out[0]


def monotonic(frame: _Frame, increasing: bool, split_every: int | None = None):
    """Whether the values (of a Series or Index) never decrease (``increasing``) or never
    increase, as pandas' ``is_monotonic_increasing``/``decreasing``: a Scalar.

    >>> import pandas as pd, xsched.dataframe as xd
    >>> s = xd.from_pandas(pd.Series([1, 2, 2, 5]), npartitions=3)
    >>> bool(s.is_monotonic_increasing.compute()), bool(s.is_monotonic_decreasing.compute())
    (True, False)
    """
    return reduction(frame, _monotonic_chunk, _monotonic_final,
                     partial(_monotonic_merge, increasing=increasing), meta=True,
                     token="is-monotonic", split_every=split_every, chunk_kwargs={"increasing": increasing},
                     aggregate_kwargs={"increasing": increasing})


# --------------------------------------------------------------------------- methods


#: Bits of the hash that pick a HyperLogLog register (2**16 registers, 0.4 % standard error).
_HLL_BITS = 16


def _hll_registers(part: Any) -> np.ndarray:
    """The partition's HyperLogLog registers: per register, one more than the most leading
    zeros among the remaining bits of the hashes it was picked by (rows of a DataFrame)."""
    registers = np.zeros(1 << _HLL_BITS, dtype=np.uint8)
    if len(part):
        h = pd.util.hash_pandas_object(part, index=False).to_numpy(dtype=np.uint64)
        rest_bits = 64 - _HLL_BITS
        which = (h >> np.uint64(rest_bits)).astype(np.int64)
        rest = h & np.uint64((1 << rest_bits) - 1)
        length = np.zeros(len(rest), dtype=np.int64)  # bit length of rest, exactly (no float rounding)
        for shift in (32, 16, 8, 4, 2, 1):
            big = rest >= np.uint64(1 << shift)
            length[big] += shift
            rest[big] >>= np.uint64(shift)
        length += (rest > 0)
        np.maximum.at(registers, which, (rest_bits - length + 1).astype(np.uint8))
    return registers


def _hll_merge(partials: list) -> np.ndarray:
    return np.maximum.reduce(partials)


def _hll_estimate(partials: list) -> int:
    registers = _hll_merge(partials).astype(np.float64)
    m = len(registers)
    estimate = 0.7213 / (1 + 1.079 / m) * m * m / np.sum(2.0 ** -registers)
    zeros = int(np.count_nonzero(registers == 0))
    if estimate <= 5 * m and zeros:  # (few values: count the empty registers instead, which the raw
        estimate = m * np.log(m / zeros)  # estimate overshoots by a few percent just above 2.5 m)
    return int(round(estimate))


def nunique_approx(frame: _Frame, split_every: int | None = None):
    """About how many distinct values (rows, of a DataFrame) there are, from a HyperLogLog
    sketch of fixed size (64 KiB per partial, however many values): a Scalar, about 0.4 %
    off, exact-ish for small counts; missing values count as one value.

    >>> import pandas as pd, xsched.dataframe as xd
    >>> s = xd.from_pandas(pd.Series(list(range(1000)) * 3), npartitions=4)
    >>> abs(s.nunique_approx().compute() - 1000) < 20
    True
    """
    return reduction(frame, _hll_registers, _hll_estimate, _hll_merge, meta=0, token="nunique-approx",
                     split_every=split_every)


def _install() -> None:
    for cls in (DataFrame, Series):
        cls.nunique_approx = nunique_approx  # type: ignore[attr-defined]

    def series_corr(self, other: Series, method: str = "pearson", min_periods: int | None = None,
                    split_every: int | None = None):
        return corr(self, other, method, min_periods, split_every=split_every)

    def frame_corr(self, method: str = "pearson", min_periods: int | None = None, numeric_only: bool = False,
                   split_every: int | None = None):
        return corr(self, None, method, min_periods, numeric_only, split_every)

    def series_cov(self, other: Series, min_periods: int | None = None, ddof: int = 1,
                   split_every: int | None = None):
        return cov(self, other, min_periods, ddof, split_every=split_every)

    def frame_cov(self, min_periods: int | None = None, ddof: int = 1, numeric_only: bool = False,
                  split_every: int | None = None):
        return cov(self, None, min_periods, ddof, numeric_only, split_every)

    def idxmax(self, axis: Any = 0, skipna: bool = True, numeric_only: bool = False,
               split_every: int | None = None):
        """The label of the (first) largest value, per column of a DataFrame.

        >>> import pandas as pd, xsched.dataframe as xd
        >>> xd.from_pandas(pd.Series([1, 5, 5, 2], index=list("abcd")), npartitions=2).idxmax().compute()
        'b'
        """
        if self._axis(axis, "idxmax", none=False) == 1:
            return self._method("idxmax", axis=1, skipna=skipna, numeric_only=numeric_only)
        return idxbest(self, True, skipna, numeric_only, split_every)

    def idxmin(self, axis: Any = 0, skipna: bool = True, numeric_only: bool = False,
               split_every: int | None = None):
        """The label of the (first) smallest value, per column of a DataFrame.

        >>> import pandas as pd, xsched.dataframe as xd
        >>> xd.from_pandas(pd.DataFrame({"a": [3, 1, 2]}), npartitions=2).idxmin().compute().to_dict()
        {'a': 1}
        """
        if self._axis(axis, "idxmin", none=False) == 1:
            return self._method("idxmin", axis=1, skipna=skipna, numeric_only=numeric_only)
        return idxbest(self, False, skipna, numeric_only, split_every)

    def series_idxmax(self, axis: Any = 0, skipna: bool = True, split_every: int | None = None):
        self._axis(axis, "idxmax", none=False)  # (a Series has rows only: another axis is refused)
        return idxbest(self, True, skipna, False, split_every)

    def series_idxmin(self, axis: Any = 0, skipna: bool = True, split_every: int | None = None):
        self._axis(axis, "idxmin", none=False)
        return idxbest(self, False, skipna, False, split_every)

    def median(self, axis: Any = 0, skipna: bool = True, numeric_only: bool = False,
               split_every: int | None = None):
        """The median (``quantile(0.5)``: exact while every partition fits the quantile sample);
        of a DataFrame, per column (``axis=1``: of each row); ``skipna=False``: NaN where a
        value is missing, as pandas.

        >>> import pandas as pd, xsched.dataframe as xd
        >>> s = xd.from_pandas(pd.Series([5, 1, 4, 2, None]), npartitions=2)
        >>> float(s.median().compute()), float(s.median(skipna=False).compute())
        (3.0, nan)
        """
        out = across(self, "median", axis, numeric_only, split_every, skipna=skipna)
        if out is not None:
            return out
        if not skipna:
            out = median(self, numeric_only=numeric_only, split_every=split_every)
            columns = None if isinstance(self, Series) else list(on_stand_ins(lambda: _nonempty(self._meta).median(
                numeric_only=numeric_only)).index)  # (the columns it has a median of: meta's labels are gone)
            missing = (self if columns is None else self[columns]).isna().any()
            if isinstance(out, Series):  # (per column: pandas' missing value where the column misses one)
                markers = pd.Series({c: _missing_median(self._meta[c].dtype) for c in columns}, dtype=object)
                return map_partitions(_nan_where, out, missing, markers, meta=out._meta, _name="median-skipna")
            return out._binary(partial(_nan_where, marker=_missing_median(self._meta.dtype)), missing)
        if isinstance(self, Series):
            on_stand_ins(lambda: _nonempty(self._meta).median())  # (pandas' own error, at once, for values without one)
            return quantile(_bool_as_float(self), 0.5, split_every, whole=False)
        try:
            meta = on_stand_ins(lambda: _nonempty(self._meta).median(numeric_only=numeric_only))
        except (TypeError, ValueError) as exc:
            raise TypeError(f"median() of this DataFrame fails in pandas: {exc}; pass numeric_only=True "
                            "or select the numeric columns") from exc
        names = list(meta.index)
        if not names:
            return _of_no_columns(meta, "median")
        parts = [quantile(_bool_as_float(self[c]), [0.5], split_every, whole=False) for c in names]
        return map_partitions(_medians, *parts, names, meta.dtype, meta=meta.iloc[:0], _name="median")

    series_corr.__doc__ = frame_corr.__doc__ = corr.__doc__
    series_cov.__doc__ = frame_cov.__doc__ = cov.__doc__
    series_idxmax.__doc__, series_idxmin.__doc__ = idxmax.__doc__, idxmin.__doc__
    DataFrame.corrwith = corrwith  # type: ignore[attr-defined]

    def argmax(self, axis: Any = None, skipna: bool = True, split_every: int | None = None):
        """The position (from 0, over all partitions) of the first greatest value.

        >>> import pandas as pd, xsched.dataframe as xd
        >>> int(xd.from_pandas(pd.Series([1, 5, 5, 2], index=list("abcd")), npartitions=3).argmax().compute())
        1
        """
        return argbest(self, True, skipna, split_every)

    def argmin(self, axis: Any = None, skipna: bool = True, split_every: int | None = None):
        """The position (from 0, over all partitions) of the first least value.

        >>> import pandas as pd, xsched.dataframe as xd
        >>> int(xd.from_pandas(pd.Series([4, 1, 3, 1]), npartitions=3).argmin().compute())
        1
        """
        return argbest(self, False, skipna, split_every)

    Series.argmax, Series.argmin = argmax, argmin  # type: ignore[attr-defined]
    for cls, pair in ((Series, (series_corr, series_cov, series_idxmax, series_idxmin)),
                      (DataFrame, (frame_corr, frame_cov, idxmax, idxmin))):
        for name, f in zip(("corr", "cov", "idxmax", "idxmin"), pair):
            f.__name__ = name
            setattr(cls, name, f)
    def median_approximate(self, numeric_only: bool = False, split_every: int | None = None):
        """The median from the quantile sample (``median`` is the same here: exact while every
        partition fits the sample).

        >>> import pandas as pd, xsched.dataframe as xd
        >>> float(xd.from_pandas(pd.Series([5, 1, 4, 2]), npartitions=2).median_approximate().compute())
        3.0
        """
        return median(self, numeric_only=numeric_only, split_every=split_every)

    for cls in (Series, DataFrame):
        cls.median = median  # type: ignore[attr-defined]
        cls.median_approximate = median_approximate  # type: ignore[attr-defined]

    def frame_mode(self, axis: Any = 0, numeric_only: bool = False, dropna: bool = True,
                   split_every: int | None = None):
        if self._axis(axis, "mode", none=False) != 0:  # (its columns: as many as the most tied row's values)
            raise NotImplementedError(f"mode(axis={axis!r}): the number of columns is not known until "
                                      "computed; compute() first")
        return mode(self, dropna, split_every, numeric_only)

    Series.mode = lambda self, dropna=True, split_every=None: mode(self, dropna, split_every)
    DataFrame.mode = frame_mode  # type: ignore[attr-defined]
    for cls in (Series, DataFrame):
        cls.mode.__doc__, cls.mode.__name__ = mode.__doc__, "mode"

    def quantile_frame(self, q: Any = 0.5, axis: Any = 0, numeric_only: bool = False,
                       interpolation: str = "linear", split_every: int | None = None):
        if self._axis(axis, "quantile", none=False) == 1:
            return self._method("quantile", q, axis=1, numeric_only=numeric_only, interpolation=interpolation)
        return frame_quantile(self, q, numeric_only, split_every, interpolation)

    quantile_frame.__doc__, quantile_frame.__name__ = frame_quantile.__doc__, "quantile"
    DataFrame.quantile = quantile_frame  # type: ignore[attr-defined]

    def sem(self, axis: Any = 0, skipna: bool = True, ddof: int = 1, numeric_only: bool = False,
            split_every: int | None = None):
        """The standard error of the mean (``ddof=1`` as pandas), per column of a DataFrame.

        >>> import pandas as pd, xsched.dataframe as xd
        >>> round(float(xd.from_pandas(pd.Series([1.0, 2, 4, 7]), npartitions=2).sem().compute()), 6)
        1.322876
        """
        out = across(self, "sem", axis, numeric_only, split_every, skipna=skipna, ddof=ddof)
        if out is not None:
            return out
        return power_moment(self, "sem", ddof, skipna, numeric_only, split_every)

    def skew(self, axis: Any = 0, skipna: bool = True, numeric_only: bool = False,
             split_every: int | None = None):
        """The bias-corrected sample skewness (pandas' G1), per column of a DataFrame.

        >>> import pandas as pd, xsched.dataframe as xd
        >>> round(float(xd.from_pandas(pd.Series([1.0, 2, 4, 9]), npartitions=2).skew().compute()), 6)
        1.330938
        """
        out = across(self, "skew", axis, numeric_only, split_every, skipna=skipna)
        if out is not None:
            return out
        return power_moment(self, "skew", 1, skipna, numeric_only, split_every)

    def kurt(self, axis: Any = 0, skipna: bool = True, numeric_only: bool = False,
             split_every: int | None = None):
        """The bias-corrected excess kurtosis (pandas' G2, Fisher's), per column of a DataFrame.

        >>> import pandas as pd, xsched.dataframe as xd
        >>> round(float(xd.from_pandas(pd.Series([1.0, 2, 4, 9]), npartitions=3).kurt().compute()), 6)
        1.5
        """
        out = across(self, "kurt", axis, numeric_only, split_every, skipna=skipna)
        if out is not None:
            return out
        return power_moment(self, "kurt", 1, skipna, numeric_only, split_every)

    def autocorr(self, lag: int = 1, split_every: int | None = None):
        """The correlation of the Series with itself ``lag`` rows later (``corr`` with ``shift(lag)``).

        >>> import pandas as pd, xsched.dataframe as xd
        >>> round(float(xd.from_pandas(pd.Series([1.0, 2, 4, 3, 5]), npartitions=2).autocorr().compute()), 6)
        0.4
        """
        return corr(self, self.shift(lag), split_every=split_every)

    for cls in (Series, DataFrame):
        for f in (sem, skew, kurt):
            setattr(cls, f.__name__, f)
        cls.kurtosis = kurt  # type: ignore[attr-defined]
    Series.autocorr = autocorr  # type: ignore[attr-defined]
    for cls in (Series, Index):
        cls.is_monotonic_increasing = property(lambda self: monotonic(self, True),  # type: ignore[attr-defined]
                                               doc=monotonic.__doc__)
        cls.is_monotonic_decreasing = property(lambda self: monotonic(self, False),  # type: ignore[attr-defined]
                                               doc=monotonic.__doc__)

    def is_unique(self):
        """Whether no value repeats (a Scalar: the count of distinct values, missing ones too,
        against the count of rows; ``nunique`` counts them in shares).

        >>> import pandas as pd, xsched.dataframe as xd
        >>> s = xd.from_pandas(pd.Series([1, 2, None, 2]), npartitions=2)
        >>> bool(s.is_unique.compute()), bool(s.drop_duplicates().is_unique.compute())
        (False, True)
        """
        return self.nunique(dropna=False) == self.size

    def hasnans(self):
        """Whether any value is missing (a Scalar).

        >>> import pandas as pd, xsched.dataframe as xd
        >>> bool(xd.from_pandas(pd.Series([1.0, None]), npartitions=2).hasnans.compute())
        True
        """
        return self.isna().any()

    Series.is_unique, Series.hasnans = property(is_unique), property(hasnans)  # type: ignore[attr-defined]


def _bool_as_float(series: Series) -> Series:
    """Truth values as 1.0 and 0.0, whose median pandas takes (the quantile of truth values
    fails); nullable ones as nullable floats, so that none present gives NA, as pandas' median."""
    dtype = series._meta.dtype
    if not pd.api.types.is_bool_dtype(dtype):
        return series
    return series.astype("Float64" if isinstance(dtype, pd.api.extensions.ExtensionDtype) else "float64")


def _medians(*args: Any) -> pd.Series:
    *parts, names, dtype = args
    return pd.Series([p.iloc[0] for p in parts], index=names, dtype=dtype)


_install()
