"""xsched.array.stats against scipy.stats: the same statistics and p-values, on arrays cut
into blocks of several shapes, and errors that name the way out."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import xsched.array as xa
from xsched.array import stats

sps = pytest.importorskip("scipy.stats")

CHUNKS = [(7, 2), (40, 3), (1, 1)]


def _same(ours, theirs):
    got = ours.compute()
    if hasattr(theirs, "pvalue"):
        assert type(got).__name__.endswith("Result") and len(got) == 2
        np.testing.assert_allclose(got.statistic, theirs.statistic, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(got.pvalue, theirs.pvalue, rtol=1e-9, atol=1e-12)
    else:
        np.testing.assert_allclose(got, theirs, rtol=1e-9, atol=1e-12)


@pytest.fixture(params=CHUNKS, ids=str)
def data(request):
    rng = np.random.default_rng(len(request.param))
    d, e = rng.normal(size=(40, 3)), rng.normal(0.3, 1.2, size=(33, 3))
    return d, e, xa.from_array(d, chunks=request.param), xa.from_array(e, chunks=(10, 3))


@pytest.mark.parametrize("axis", [0, 1, None])
def test_moments_skew_and_kurtosis(data, axis):
    d, _, x, _ = data
    for order in (0, 1, 2, 3, 5):
        _same(stats.moment(x, order, axis=axis), sps.moment(d, order, axis=axis))
    for bias in (True, False):
        _same(stats.skew(x, axis=axis, bias=bias), sps.skew(d, axis=axis, bias=bias))
        for fisher in (True, False):
            _same(stats.kurtosis(x, axis=axis, fisher=fisher, bias=bias),
                  sps.kurtosis(d, axis=axis, fisher=fisher, bias=bias))


def test_the_t_tests(data):
    d, e, x, y = data
    _same(stats.ttest_1samp(x, 0.1), sps.ttest_1samp(d, 0.1))
    _same(stats.ttest_1samp(x, 0.0, axis=1), sps.ttest_1samp(d, 0.0, axis=1))
    _same(stats.ttest_rel(x, x * 1.1 + 0.2), sps.ttest_rel(d, d * 1.1 + 0.2))
    _same(stats.ttest_ind(x, y), sps.ttest_ind(d, e))
    _same(stats.ttest_ind(x, y, equal_var=False), sps.ttest_ind(d, e, equal_var=False))


@pytest.mark.parametrize("lambda_", [None, "pearson", "log-likelihood", "freeman-tukey", "mod-log-likelihood",
                                     "neyman", "cressie-read", 1.5])
def test_power_divergence_and_chisquare(lambda_):
    obs = np.abs(np.random.default_rng(3).normal(size=(30, 4))) * 10 + 1
    x = xa.from_array(obs, chunks=(9, 3))
    _same(stats.power_divergence(x, lambda_=lambda_), sps.power_divergence(obs, lambda_=lambda_))
    expected = obs.mean(axis=0) * np.ones_like(obs)
    _same(stats.power_divergence(x, f_exp=expected, ddof=1, lambda_=lambda_),
          sps.power_divergence(obs, f_exp=expected, ddof=1, lambda_=lambda_))
    _same(stats.chisquare(x, axis=1), sps.chisquare(obs, axis=1))


def test_anova_and_the_normality_tests(data):
    d, _, x, _ = data
    rng = np.random.default_rng(5)
    groups = [rng.normal(i * 0.2, 1, size=n) for i, n in enumerate([10, 14, 9, 20])]
    _same(stats.f_oneway(*[xa.from_array(g, chunks=4) for g in groups]), sps.f_oneway(*groups))
    _same(stats.skewtest(x), sps.skewtest(d))
    _same(stats.kurtosistest(x), sps.kurtosistest(d))
    _same(stats.normaltest(x), sps.normaltest(d))
    _same(stats.skewtest(x, axis=None), sps.skewtest(d, axis=None))


def test_numpy_input_and_nan_propagate():
    d = np.array([1.0, 2.0, 4.0, np.nan, 3.0])
    assert np.isnan(stats.skew(d).compute()) and np.isnan(stats.ttest_1samp(d, 1.0).compute().pvalue)
    _same(stats.skew([1.0, 2.0, 9.0]), sps.skew([1.0, 2.0, 9.0]))


def test_errors_name_the_way_out():
    x = xa.from_array(np.arange(10.0), chunks=3)
    with pytest.raises(ValueError, match="nan_policy='omit' is not offered; 'propagate' is"):
        stats.skew(x, nan_policy="omit")
    with pytest.raises(ValueError, match="skewtest is not valid with fewer than 8 values; this sample has 5"):
        stats.skewtest(x[:5])
    with pytest.raises(ValueError, match="kurtosistest is not valid with fewer than 5 values; this sample has 4"):
        stats.kurtosistest(x[:4])
    with pytest.raises(ValueError, match=r"paired value by value, and their shapes differ: \(10,\) and \(4,\)"):
        stats.ttest_rel(x, x[:4])
    with pytest.raises(ValueError, match="lambda_='chi' is none of"):
        stats.power_divergence(x, lambda_="chi")
    with pytest.raises(TypeError, match="at least two samples, got 1"):
        stats.f_oneway(x)
    with pytest.raises(ValueError, match="chunk sizes are unknown.*compute_chunk_sizes"):
        stats.skew(x[x > 3])


def test_importing_the_array_namespace_leaves_scipy_unimported():
    """scipy is the array extra's: the p-values import it in their tasks."""
    code = "import sys, xsched.array; xsched.array.stats.skew; print('scipy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == "False"
