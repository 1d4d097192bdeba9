"""Statistical tests and moments of xsched arrays, as ``scipy.stats`` computes them:
``skew``, ``kurtosis``, ``moment``, the t-tests, ``chisquare``/``power_divergence``,
``f_oneway``, ``skewtest``, ``kurtosistest`` and ``normaltest`` (``import
xsched.array.stats``, the names of ``dask.array.stats``).

Why split this way: a test's statistic is a few tree reductions over the data (means, central
moments, counts), which stay lazy arrays; its p-value is a distribution's tail of that
statistic, one small element-wise task per block of the result, where scipy (the ``array``
extra) is imported. A test returns a ``Delayed`` of its result, a named tuple
``(statistic, pvalue)``: ``compute()`` gives NumPy values, as dask's do; a moment returns an
array. Only ``nan_policy="propagate"`` is offered: NaNs give NaN, as in scipy.

>>> import numpy as np, xsched.array as xa
>>> from xsched.array import stats
>>> x = xa.from_array(np.array([1.0, 2.0, 2.0, 3.0, 9.0]), chunks=2)
>>> round(float(stats.skew(x).compute()), 4), round(float(stats.kurtosis(x).compute()), 4)
(1.3211, 0.0173)
>>> stats.ttest_1samp(x, 2.0).compute().statistic.round(4)
np.float64(0.9754)
"""

from __future__ import annotations

import collections
from typing import Any

import numpy as np

from ..graph.delayed import delayed
from .core import Array, elemwise
from .creation import asarray
from .reductions import mean, sum as _sum
from .statistics import moment as _central

__all__ = ["moment", "skew", "kurtosis", "ttest_ind", "ttest_1samp", "ttest_rel", "chisquare",
           "power_divergence", "f_oneway", "skewtest", "kurtosistest", "normaltest"]

TtestResult = collections.namedtuple("TtestResult", ["statistic", "pvalue"])
Power_divergenceResult = collections.namedtuple("Power_divergenceResult", ["statistic", "pvalue"])
F_onewayResult = collections.namedtuple("F_onewayResult", ["statistic", "pvalue"])
SkewtestResult = collections.namedtuple("SkewtestResult", ["statistic", "pvalue"])
KurtosistestResult = collections.namedtuple("KurtosistestResult", ["statistic", "pvalue"])
NormaltestResult = collections.namedtuple("NormaltestResult", ["statistic", "pvalue"])

#: power_divergence's named values of ``lambda_``, as scipy names them.
LAMBDAS = {"pearson": 1.0, "log-likelihood": 0.0, "freeman-tukey": -0.5, "mod-log-likelihood": -1.0,
           "neyman": -2.0, "cressie-read": 2 / 3}


def _propagate(nan_policy: str, what: str) -> None:
    if nan_policy != "propagate":
        raise ValueError(f"stats.{what}: nan_policy={nan_policy!r} is not offered; 'propagate' is (a NaN gives "
                         "NaN). Drop the NaNs first (x[~xa.isnan(x)]) or fill them")


def _length(a: Array, axis: Any, what: str) -> int:
    """How many values each result reduces over ``axis`` (None: all of them)."""
    if any(np.isnan(c) for dim in a.chunks for c in dim):
        raise ValueError(f"stats.{what}: the array's chunk sizes are unknown (a boolean mask left them so); "
                         "call x = x.compute_chunk_sizes() first")
    return int(a.size) if axis is None else int(a.shape[axis])


ALTERNATIVES = ("two-sided", "less", "greater")


def _alternative(alternative: Any, what: str) -> str:
    """scipy's ``alternative=``, checked when the test is built."""
    if alternative not in ALTERNATIVES:
        raise ValueError(f"stats.{what}: alternative must be 'less', 'greater' or 'two-sided', got "
                         f"{alternative!r} (as scipy's)")
    return alternative


def _tail(func: str, statistic: Array, *params: Any, alternative: str = "two-sided") -> Array:
    """The p-value of each statistic: ``func`` (``"t"``, ``"norm"``, ``"chi2"``, ``"f"``) of
    the distribution's two-sided (or, with ``alternative``, one) or upper tail, block by block."""
    return elemwise(_tail_block, statistic, func, *params, dtype=np.float64, name=f"pvalue-{func}",
                    alternative=alternative)


def _tail_block(statistic: np.ndarray, func: str, *params: Any, alternative: str = "two-sided") -> np.ndarray:
    from scipy import stats as sps  # (the array extra; imported where the p-values are computed)

    if func in ("t", "norm"):
        dist = sps.t(*params) if func == "t" else sps.norm
        return _side(dist, statistic, alternative)
    return getattr(sps, func).sf(statistic, *params)


def _side(dist: Any, statistic: np.ndarray, alternative: str) -> np.ndarray:
    """The p-value of a symmetric distribution's statistic for ``alternative``."""
    if alternative == "less":
        return dist.cdf(statistic)
    if alternative == "greater":
        return dist.sf(statistic)
    return 2 * dist.sf(np.abs(statistic))


def _result(kind: Any, statistic: Array, pvalue: Array) -> Any:
    return delayed(kind, pure=True)(statistic, pvalue)


def moment(a: Any, moment: int = 1, axis: int | None = 0, nan_policy: str = "propagate") -> Array:
    """The ``moment``-th central moment along ``axis`` (``scipy.stats.moment``).

    >>> import numpy as np, xsched.array as xa
    >>> from xsched.array import stats
    >>> float(stats.moment(xa.from_array(np.array([1.0, 2.0, 3.0, 6.0]), chunks=2), 2).compute())
    3.5
    """
    _propagate(nan_policy, "moment")
    return _central(asarray(a), moment, axis=axis)


def skew(a: Any, axis: int | None = 0, bias: bool = True, nan_policy: str = "propagate") -> Array:
    """The skewness along ``axis`` (``scipy.stats.skew``): ``m3 / m2 ** 1.5``; with
    ``bias=False`` corrected for the sample's size (more than 2 values).

    >>> import numpy as np, xsched.array as xa
    >>> from xsched.array import stats
    >>> round(float(stats.skew(xa.from_array(np.array([1.0, 2.0, 9.0]), chunks=1), bias=False).compute()), 4)
    1.6301
    """
    _propagate(nan_policy, "skew")
    a = asarray(a)
    n = _length(a, axis, "skew")
    m2, m3 = _central(a, 2, axis=axis), _central(a, 3, axis=axis)
    return elemwise(_skew_block, m2, m3, n, bias, dtype=np.float64, name="skew")


def _skew_block(m2: np.ndarray, m3: np.ndarray, n: int, bias: bool) -> np.ndarray:
    with np.errstate(all="ignore"):
        g1 = np.where(m2 == 0, np.nan, m3 / m2 ** 1.5)
        if not bias and n > 2:
            g1 = np.where(m2 > 0, np.sqrt((n - 1.0) * n) / (n - 2.0) * g1, g1)
    return g1


def kurtosis(a: Any, axis: int | None = 0, fisher: bool = True, bias: bool = True,
             nan_policy: str = "propagate") -> Array:
    """The kurtosis along ``axis`` (``scipy.stats.kurtosis``): ``m4 / m2 ** 2``, less 3 with
    ``fisher`` (0 for a normal distribution); with ``bias=False`` corrected for the sample's
    size (more than 3 values).

    >>> import numpy as np, xsched.array as xa
    >>> from xsched.array import stats
    >>> float(stats.kurtosis(xa.from_array(np.array([1.0, 2.0, 3.0, 4.0]), chunks=2), fisher=False).compute())
    1.64
    """
    _propagate(nan_policy, "kurtosis")
    a = asarray(a)
    n = _length(a, axis, "kurtosis")
    m2, m4 = _central(a, 2, axis=axis), _central(a, 4, axis=axis)
    return elemwise(_kurtosis_block, m2, m4, n, fisher, bias, dtype=np.float64, name="kurtosis")


def _kurtosis_block(m2: np.ndarray, m4: np.ndarray, n: int, fisher: bool, bias: bool) -> np.ndarray:
    with np.errstate(all="ignore"):
        b2 = np.where(m2 == 0, np.nan, m4 / m2 ** 2)
        if not bias and n > 3:
            b2 = np.where(m2 > 0, 1.0 / (n - 2) / (n - 3) * ((n * n - 1.0) * b2 - 3 * (n - 1.0) ** 2) + 3.0, b2)
    return b2 - 3 if fisher else b2


def ttest_1samp(a: Any, popmean: Any, axis: int | None = 0, nan_policy: str = "propagate",
                alternative: str = "two-sided") -> Any:
    """Student's t-test of the mean of ``a`` against ``popmean`` (``scipy.stats.ttest_1samp``),
    two-sided or, with ``alternative="less"``/``"greater"``, one-sided: a ``Delayed`` of
    ``TtestResult(statistic, pvalue)``.

    >>> import numpy as np, xsched.array as xa
    >>> from xsched.array import stats
    >>> r = stats.ttest_1samp(xa.from_array(np.array([5.1, 4.9, 5.3, 5.0]), chunks=2), 5.0).compute()
    >>> round(float(r.statistic), 4), round(float(r.pvalue), 4)
    (0.8783, 0.4444)
    """
    _propagate(nan_policy, "ttest_1samp")
    alternative = _alternative(alternative, "ttest_1samp")
    a = asarray(a)
    n = _length(a, axis, "ttest_1samp")
    df = n - 1
    t = (mean(a, axis=axis) - popmean) / (_central(a, 2, axis=axis, ddof=1) / n) ** 0.5
    return _result(TtestResult, t, _tail("t", t, df, alternative=alternative))


def ttest_rel(a: Any, b: Any, axis: int | None = 0, nan_policy: str = "propagate",
              alternative: str = "two-sided") -> Any:
    """The t-test of two related samples (paired values of ``a`` and ``b``;
    ``scipy.stats.ttest_rel``): the one-sample test of their differences against 0 (of
    ``alternative``, as there).

    >>> import numpy as np, xsched.array as xa
    >>> from xsched.array import stats
    >>> a, b = (xa.from_array(np.array(v), chunks=2) for v in ([1.0, 2.0, 3.0, 4.0], [1.5, 2.1, 3.9, 4.2]))
    >>> round(float(stats.ttest_rel(a, b).compute().pvalue), 4)
    0.0989
    """
    _propagate(nan_policy, "ttest_rel")
    a, b = asarray(a), asarray(b)
    if a.shape != b.shape:
        raise ValueError(f"stats.ttest_rel: the samples are paired value by value, and their shapes differ: "
                         f"{a.shape} and {b.shape}")
    return ttest_1samp(a - b, 0.0, axis=axis, alternative=_alternative(alternative, "ttest_rel"))


def ttest_ind(a: Any, b: Any, axis: int | None = 0, equal_var: bool = True, alternative: str = "two-sided") -> Any:
    """The t-test of two independent samples (``scipy.stats.ttest_ind``): pooled variance,
    or Welch's test with ``equal_var=False``; two-sided, or one-sided with ``alternative``.

    >>> import numpy as np, xsched.array as xa
    >>> from xsched.array import stats
    >>> a = xa.from_array(np.array([1.0, 2.0, 3.0, 4.0]), chunks=2)
    >>> b = xa.from_array(np.array([3.0, 4.0, 5.0, 6.0, 7.0]), chunks=2)
    >>> r = stats.ttest_ind(a, b).compute()
    >>> round(float(r.statistic), 4), round(float(r.pvalue), 4)
    (-2.5459, 0.0383)
    """
    alternative = _alternative(alternative, "ttest_ind")
    a, b = asarray(a), asarray(b)
    n1, n2 = _length(a, axis, "ttest_ind"), _length(b, axis, "ttest_ind")
    v1, v2 = _central(a, 2, axis=axis, ddof=1), _central(b, 2, axis=axis, ddof=1)
    if equal_var:
        df = n1 + n2 - 2.0
        denom = (((n1 - 1) * v1 + (n2 - 1) * v2) / df * (1.0 / n1 + 1.0 / n2)) ** 0.5
        t = (mean(a, axis=axis) - mean(b, axis=axis)) / denom
        return _result(TtestResult, t, _tail("t", t, df, alternative=alternative))
    q1, q2 = v1 / n1, v2 / n2
    t = (mean(a, axis=axis) - mean(b, axis=axis)) / (q1 + q2) ** 0.5
    welch = (q1 + q2) ** 2 / (q1 ** 2 / (n1 - 1) + q2 ** 2 / (n2 - 1))  # (Welch-Satterthwaite)
    return _result(TtestResult, t, elemwise(_welch_tail, t, welch, dtype=np.float64, name="pvalue-t",
                                            alternative=alternative))


def _welch_tail(t: np.ndarray, df: np.ndarray, alternative: str = "two-sided") -> np.ndarray:
    from scipy import stats as sps

    return _side(sps.t(df), t, alternative)


def power_divergence(f_obs: Any, f_exp: Any = None, ddof: int = 0, axis: int | None = 0,
                     lambda_: Any = None) -> Any:
    """Cressie-Read's power divergence of observed counts from expected ones
    (``scipy.stats.power_divergence``; ``lambda_`` a number or one of ``LAMBDAS``' names,
    Pearson's by default; ``f_exp``: the mean of ``f_obs`` when not given).

    >>> import numpy as np, xsched.array as xa
    >>> from xsched.array import stats
    >>> obs = xa.from_array(np.array([16.0, 18.0, 16.0, 14.0, 12.0, 12.0]), chunks=3)
    >>> round(float(stats.power_divergence(obs, lambda_="log-likelihood").compute().statistic), 4)
    2.0066
    """
    if isinstance(lambda_, str):
        if lambda_ not in LAMBDAS:
            raise ValueError(f"stats.power_divergence: lambda_={lambda_!r} is none of {sorted(LAMBDAS)}")
        lambda_ = LAMBDAS[lambda_]
    lam = 1.0 if lambda_ is None else float(lambda_)
    f_obs = asarray(f_obs).astype(np.float64)
    k = _length(f_obs, axis, "power_divergence")
    if f_exp is None:
        f_exp = mean(f_obs, axis=axis, keepdims=axis is not None)
    else:
        f_exp = asarray(f_exp)
    terms = elemwise(_divergence, f_obs, f_exp, lam, dtype=np.float64, name="power-divergence")
    statistic = _sum(terms, axis=axis)
    return _result(Power_divergenceResult, statistic, _tail("chi2", statistic, k - 1 - ddof))


def _divergence(obs: np.ndarray, exp: np.ndarray, lam: float) -> np.ndarray:
    from scipy.special import xlogy

    with np.errstate(all="ignore"):
        if lam == 1:
            return (obs - exp) ** 2 / exp
        if lam == 0:
            return 2.0 * xlogy(obs, obs / exp)
        if lam == -1:
            return 2.0 * xlogy(exp, exp / obs)
        return obs * ((obs / exp) ** lam - 1) * 2.0 / (lam * (lam + 1))


def chisquare(f_obs: Any, f_exp: Any = None, ddof: int = 0, axis: int | None = 0) -> Any:
    """Pearson's chi-square test of observed counts (``scipy.stats.chisquare``): the power
    divergence with ``lambda_=1``.

    >>> import numpy as np, xsched.array as xa
    >>> from xsched.array import stats
    >>> r = stats.chisquare(xa.from_array(np.array([16.0, 18.0, 16.0, 14.0, 12.0, 12.0]), chunks=3)).compute()
    >>> round(float(r.statistic), 4), round(float(r.pvalue), 4)
    (2.0, 0.8491)
    """
    return power_divergence(f_obs, f_exp=f_exp, ddof=ddof, axis=axis, lambda_="pearson")


def f_oneway(*samples: Any) -> Any:
    """One-way analysis of variance of 1-D samples (``scipy.stats.f_oneway``): do the groups
    share a mean?

    >>> import numpy as np, xsched.array as xa
    >>> from xsched.array import stats
    >>> groups = [xa.from_array(np.array(g), chunks=2) for g in ([1.0, 2.0, 3.0], [2.0, 4.0, 6.0, 8.0], [5.0, 6.0])]
    >>> r = stats.f_oneway(*groups).compute()
    >>> round(float(r.statistic), 4), round(float(r.pvalue), 4)
    (2.7185, 0.1444)
    """
    if len(samples) < 2:
        raise TypeError(f"stats.f_oneway compares at least two samples, got {len(samples)}")
    samples = [asarray(s) for s in samples]
    if any(s.ndim != 1 for s in samples):
        raise ValueError("stats.f_oneway: each sample is 1-D here; give the groups as separate 1-D arrays")
    sizes = [_length(s, None, "f_oneway") for s in samples]
    n, k = sum(sizes), len(samples)
    means = [mean(s) for s in samples]
    grand = sum(m * size for m, size in zip(means, sizes)) / n
    between = sum(size * (m - grand) ** 2 for m, size in zip(means, sizes))
    within = sum(_sum((s - m) ** 2) for s, m in zip(samples, means))
    statistic = (between / (k - 1)) / (within / (n - k))
    return _result(F_onewayResult, statistic, _tail("f", statistic, k - 1, n - k))


def skewtest(a: Any, axis: int | None = 0, nan_policy: str = "propagate", alternative: str = "two-sided") -> Any:
    """D'Agostino's test of whether the skewness differs from a normal distribution's
    (``scipy.stats.skewtest``; at least 8 values).

    >>> import numpy as np, xsched.array as xa
    >>> from xsched.array import stats
    >>> x = xa.from_array(np.array([148.0, 154, 158, 160, 161, 162, 166, 170, 182, 195, 236]), chunks=4)
    >>> round(float(stats.skewtest(x).compute().pvalue), 4)
    0.0055
    """
    z = _skew_statistic(*_sample(a, axis, nan_policy, "skewtest", 8), axis)
    return _result(SkewtestResult, z, _tail("norm", z, alternative=_alternative(alternative, "skewtest")))


def _sample(a: Any, axis: Any, nan_policy: str, what: str, least: int) -> tuple:
    """``a`` as an array and the number of values each of its tests reduces, at least ``least``."""
    _propagate(nan_policy, what)
    a = asarray(a)
    n = _length(a, axis, what)
    if n < least:
        raise ValueError(f"stats.{what} is not valid with fewer than {least} values; this sample has {n}")
    return a, n


def _skew_statistic(a: Array, n: int, axis: Any) -> Array:
    return elemwise(_skew_z, skew(a, axis=axis), n, dtype=np.float64, name="skewtest")


def _kurtosis_statistic(a: Array, n: int, axis: Any) -> Array:
    return elemwise(_kurtosis_z, kurtosis(a, axis=axis, fisher=False), n, dtype=np.float64, name="kurtosistest")


def _skew_z(b2: np.ndarray, n: int) -> np.ndarray:
    y = b2 * np.sqrt(((n + 1) * (n + 3)) / (6.0 * (n - 2)))
    beta2 = 3.0 * (n * n + 27 * n - 70) * (n + 1) * (n + 3) / ((n - 2.0) * (n + 5) * (n + 7) * (n + 9))
    w2 = -1 + np.sqrt(2 * (beta2 - 1))
    delta = 1 / np.sqrt(0.5 * np.log(w2))
    alpha = np.sqrt(2.0 / (w2 - 1))
    y = np.where(y == 0, 1, y)
    return delta * np.log(y / alpha + np.sqrt((y / alpha) ** 2 + 1))


def kurtosistest(a: Any, axis: int | None = 0, nan_policy: str = "propagate",
                 alternative: str = "two-sided") -> Any:
    """Anscombe and Glynn's test of whether the kurtosis differs from a normal
    distribution's (``scipy.stats.kurtosistest``; at least 5 values).

    >>> import numpy as np, xsched.array as xa
    >>> from xsched.array import stats
    >>> x = xa.from_array(np.random.default_rng(0).normal(size=200), chunks=50)
    >>> 0 < float(stats.kurtosistest(x).compute().pvalue) <= 1
    True
    """
    z = _kurtosis_statistic(*_sample(a, axis, nan_policy, "kurtosistest", 5), axis)
    return _result(KurtosistestResult, z, _tail("norm", z, alternative=_alternative(alternative, "kurtosistest")))


def _kurtosis_z(b2: np.ndarray, n: int) -> np.ndarray:
    e = 3.0 * (n - 1) / (n + 1)
    varb2 = 24.0 * n * (n - 2) * (n - 3) / ((n + 1) * (n + 1.0) * (n + 3) * (n + 5))
    x = (b2 - e) / np.sqrt(varb2)
    sqrtbeta1 = 6.0 * (n * n - 5 * n + 2) / ((n + 7) * (n + 9)) * np.sqrt((6.0 * (n + 3) * (n + 5)) /
                                                                        (n * (n - 2) * (n - 3)))
    big_a = 6.0 + 8.0 / sqrtbeta1 * (2.0 / sqrtbeta1 + np.sqrt(1 + 4.0 / (sqrtbeta1 ** 2)))
    term1 = 1 - 2 / (9.0 * big_a)
    denom = 1 + x * np.sqrt(2 / (big_a - 4.0))
    with np.errstate(all="ignore"):
        term2 = np.sign(denom) * np.where(denom == 0.0, np.nan, np.power((1 - 2.0 / big_a) / np.abs(denom), 1 / 3.0))
    return (term1 - term2) / np.sqrt(2 / (9.0 * big_a))


def normaltest(a: Any, axis: int | None = 0, nan_policy: str = "propagate") -> Any:
    """D'Agostino and Pearson's test of normality (``scipy.stats.normaltest``): the skew and
    kurtosis tests' statistics squared and added, against chi-square with 2 degrees.

    >>> import numpy as np, xsched.array as xa
    >>> from xsched.array import stats
    >>> x = xa.from_array(np.random.default_rng(1).exponential(size=500), chunks=100)
    >>> float(stats.normaltest(x).compute().pvalue) < 1e-6
    True
    """
    a, n = _sample(a, axis, nan_policy, "normaltest", 8)
    s, k = _skew_statistic(a, n, axis), _kurtosis_statistic(a, n, axis)
    k2 = s * s + k * k
    return _result(NormaltestResult, k2, _tail("chi2", k2, 2))
