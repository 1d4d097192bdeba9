"""Statistics that pair values or keep labels, as trees: corr, cov, idxmax, idxmin, mode, median.

Each is a ``reduction`` (``reductions.py``) whose partials stay small:

* ``corr``/``cov``: per pair of columns, over the rows where both are present (pandas'
  pairwise-complete rows), the count, both means and the sums of squared and crossed
  deviations from them; partials merge with the pairwise formula of Chan, Golub & LeVeque,
  so large means do not cost precision;
* ``idxmax``/``idxmin``: per column, the best value of the partition and its label; ties go
  to the earlier partition, as pandas takes the first;
* ``mode``: the value counts (``value_counts``' partials), the most frequent values at the end;
* ``median``: ``quantile(0.5)`` (exact while every partition fits the quantile sample).

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

from .core import DataFrame, Series, _Frame, _nonempty, map_partitions
from .reductions import _value_counts_chunk, _value_counts_merge, quantile, reduction

__all__ = ["corr", "cov", "idxbest", "mode"]


# --------------------------------------------------------------------------- corr, cov


def _comoments(part: pd.DataFrame) -> tuple:
    """Per pair (i, j) of columns over the rows where both are present: count, mean of i,
    sum of squared deviations of i, sum of crossed deviations (``k x k`` arrays); and whether
    a value is missing (pandas' ``DataFrame.cov`` then ignores ``ddof``)."""
    x = part.to_numpy(dtype="float64", na_value=np.nan)
    valid = (~np.isnan(x)).astype("float64")
    x0 = np.where(valid > 0, x, 0.0)
    n = valid.T @ valid
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(n > 0, (x0.T @ valid) / np.maximum(n, 1), 0.0)  # [i, j]: of i where j too
        # deviations from the partition's column means first, then from the pair's means
        shift = np.nan_to_num(np.nanmean(np.where(valid > 0, x, np.nan), axis=0)) if len(x) else \
            np.zeros(x.shape[1])
    xc = np.where(valid > 0, x - shift, 0.0)
    s1 = xc.T @ valid  # [i, j]: sum of i's deviations where j too
    s2 = (xc ** 2).T @ valid
    sxy = xc.T @ xc
    d = np.where(n > 0, s1 / np.maximum(n, 1), 0.0)
    m2 = s2 - n * d ** 2
    cxy = sxy - n * d * d.T
    return n, mean, m2, cxy, bool((valid == 0).any())


def _merge_comoments(partials: list) -> tuple:
    n, mean, m2, cxy, missing = partials[0]
    for nb, meanb, m2b, cxyb, missing_b in partials[1:]:
        missing = missing or missing_b
        total = n + nb
        safe = np.maximum(total, 1)
        delta = meanb - mean
        weight = np.where(total > 0, n * nb / safe, 0.0)
        m2 = m2 + m2b + delta ** 2 * weight
        cxy = cxy + cxyb + delta * delta.T * weight
        mean = np.where(total > 0, mean + delta * nb / safe, 0.0)
        n = total
    return n, mean, m2, cxy, missing


def _finish_comoments(partials: list, kind: str, min_periods: int, ddof: int, labels: list,
                      series: bool) -> Any:
    n, _, m2, cxy, missing = _merge_comoments(partials)
    if missing and not series:
        ddof = 1  # (as pandas' DataFrame.cov: its pairwise path over missing values has no ddof)
    with np.errstate(invalid="ignore", divide="ignore"):
        if kind == "cov":
            out = np.where(n - ddof > 0, cxy / np.maximum(n - ddof, 1), np.nan)
        else:
            out = np.clip(cxy / np.sqrt(m2 * m2.T), -1.0, 1.0)
            out[np.diag_indices_from(out)] = np.where(np.diag(m2) > 0, 1.0, np.nan)
    out = np.where(n >= max(min_periods, 1 if kind == "cov" else 2), out, np.nan)
    if series:
        return np.float64(out[0, 1])
    return pd.DataFrame(out, index=labels, columns=labels)


def _numeric_frame(frame: DataFrame, what: str, numeric_only: bool) -> DataFrame:
    """The columns pandas correlates, failing at once (naming the column) where pandas would."""
    try:
        getattr(_nonempty(frame._meta), what)(numeric_only=numeric_only)
    except (TypeError, ValueError) as exc:
        bad = [c for c, d in frame.dtypes.items()
               if not (pd.api.types.is_numeric_dtype(d) or pd.api.types.is_bool_dtype(d))]
        raise ValueError(f"{what}: column {bad[0]!r} ({frame.dtypes[bad[0]]}) is not numeric ({exc}); "
                         f"select the numeric columns or pass numeric_only=True") from exc
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
    """
    if method != "pearson":
        raise NotImplementedError(f"corr(method={method!r}): only 'pearson' runs on partitions; compute "
                                  "the ranks first (a shuffle), or compute() and use pandas")
    if isinstance(frame, Series):
        return _comoment(_pair(frame, other), "corr", min_periods, 1, True, split_every)
    return _comoment(_numeric_frame(frame, "corr", numeric_only), "corr", min_periods, 1, False, split_every)


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
    for partial in partials[1:]:
        for i, cand in enumerate(partial):
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
        meta = getattr(_nonempty(frame._meta), what)(**({"numeric_only": numeric_only}
                                                         if isinstance(frame, DataFrame) else {}))
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


# --------------------------------------------------------------------------- mode


def _mode_final(partials: list, dropna: bool, meta: pd.Series) -> pd.Series:
    counts = _value_counts_merge(partials)
    counts = counts[counts > 0]  # (a categorical counts its unseen categories too)
    top = counts[counts == counts.max()].index if len(counts) else counts.index
    out = pd.Series(top, dtype=meta.dtype, name=meta.name)
    try:
        return out.sort_values(ignore_index=True, na_position="last")
    except TypeError:  # (values that do not compare: in order of appearance)
        return out.reset_index(drop=True)


def mode(frame: _Frame, dropna: bool = True, split_every: int | None = None):
    """The most frequent value(s), sorted (a Series of one partition); of a DataFrame, per column.

    >>> import pandas as pd, xsched.dataframe as xd
    >>> xd.from_pandas(pd.Series([3, 1, 3, 1, 2]), npartitions=2).mode().compute().tolist()
    [1, 3]
    """
    if isinstance(frame, DataFrame):
        modes = [mode(frame[c], dropna, split_every) for c in frame.columns]
        meta = pd.DataFrame({c: m._meta for c, m in zip(frame.columns, modes)}).iloc[:0]
        return map_partitions(_side_by_side, *modes, list(frame.columns), meta=meta, _name="mode")
    meta = frame._meta.iloc[:0].reset_index(drop=True)
    return reduction(frame, _value_counts_chunk, _mode_final, _value_counts_merge, meta=meta, token="mode",
                     split_every=split_every, chunk_kwargs={"dropna": dropna},
                     aggregate_kwargs={"dropna": dropna, "meta": meta})


def _side_by_side(*args: Any) -> pd.DataFrame:
    *modes, names = args
    return pd.DataFrame(dict(zip(range(len(modes)), modes))).set_axis(names, axis=1)


# --------------------------------------------------------------------------- methods


def _install() -> None:
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
        if axis in (1, "columns"):
            return self._method("idxmax", axis=1, skipna=skipna, numeric_only=numeric_only)
        return idxbest(self, True, skipna, numeric_only, split_every)

    def idxmin(self, axis: Any = 0, skipna: bool = True, numeric_only: bool = False,
               split_every: int | None = None):
        """The label of the (first) smallest value, per column of a DataFrame.

        >>> import pandas as pd, xsched.dataframe as xd
        >>> xd.from_pandas(pd.DataFrame({"a": [3, 1, 2]}), npartitions=2).idxmin().compute().to_dict()
        {'a': 1}
        """
        if axis in (1, "columns"):
            return self._method("idxmin", axis=1, skipna=skipna, numeric_only=numeric_only)
        return idxbest(self, False, skipna, numeric_only, split_every)

    def series_idxmax(self, axis: Any = 0, skipna: bool = True, split_every: int | None = None):
        return idxbest(self, True, skipna, False, split_every)

    def series_idxmin(self, axis: Any = 0, skipna: bool = True, split_every: int | None = None):
        return idxbest(self, False, skipna, False, split_every)

    def median(self, numeric_only: bool = False, split_every: int | None = None):
        """The median (``quantile(0.5)``: exact while every partition fits the quantile sample);
        of a DataFrame, per column.

        >>> import pandas as pd, xsched.dataframe as xd
        >>> float(xd.from_pandas(pd.Series([5, 1, 4, 2]), npartitions=2).median().compute())
        3.0
        """
        if isinstance(self, Series):
            _nonempty(self._meta).median()  # (pandas' own error, at once, for values without one)
            return quantile(self, 0.5, split_every)
        try:
            meta = _nonempty(self._meta).median(numeric_only=numeric_only)
        except (TypeError, ValueError) as exc:
            raise TypeError(f"median() of this DataFrame fails in pandas: {exc}; pass numeric_only=True "
                            "or select the numeric columns") from exc
        names = list(meta.index)
        parts = [quantile(self[c], [0.5], split_every) for c in names]
        return map_partitions(_medians, *parts, names, meta.dtype, meta=meta.iloc[:0], _name="median")

    series_corr.__doc__ = frame_corr.__doc__ = corr.__doc__
    series_cov.__doc__ = frame_cov.__doc__ = cov.__doc__
    series_idxmax.__doc__, series_idxmin.__doc__ = idxmax.__doc__, idxmin.__doc__
    for cls, pair in ((Series, (series_corr, series_cov, series_idxmax, series_idxmin)),
                      (DataFrame, (frame_corr, frame_cov, idxmax, idxmin))):
        for name, f in zip(("corr", "cov", "idxmax", "idxmin"), pair):
            f.__name__ = name
            setattr(cls, name, f)
    for cls in (Series, DataFrame):
        cls.median = median  # type: ignore[attr-defined]
        cls.mode = lambda self, dropna=True, split_every=None: mode(self, dropna, split_every)
        cls.mode.__doc__, cls.mode.__name__ = mode.__doc__, "mode"


def _medians(*args: Any) -> pd.Series:
    *parts, names, dtype = args
    return pd.Series([p.iloc[0] for p in parts], index=names, dtype=dtype)


_install()
