"""NumPy's histograms, statistics, assembling and value-by-value functions on xsched arrays
(``histograms.py``, ``statistics.py``, ``assembly.py``, ``diagonals.py``,
``elementwise.py``): the same values, dtypes and shapes as NumPy over several chunkings
(one chunk, uneven blocks, blocks of one), called as ``xa.f`` and as ``np.f``; nothing is
computed while the expression is written, and what NumPy refuses fails then, naming the
shapes. Everything runs in this process (no client)."""

from __future__ import annotations

import numpy as np
import pytest

import xsched
import xsched.array as xa

CHUNKINGS = [(6, 5), ((4, 2), (2, 3)), 1]
RNG = np.random.default_rng(0)
F = RNG.normal(size=(6, 5))
FN = np.where(RNG.random((6, 5)) < 0.2, np.nan, F)
I = RNG.integers(0, 9, size=(6, 5)).astype("i2")
W = RNG.random((6, 5))


def whole_rows(a):
    """An xsched array with each row in one chunk (order statistics need it)."""
    return a.rechunk({1: -1}) if isinstance(a, xa.Array) else a


def first(result):
    return result[0] if isinstance(result, tuple) else result


# (name, call): each call takes numpy or xsched arrays alike, through NumPy's own functions
CASES = [
    ("histogram-range", lambda f, n, i, w: np.histogram(f, bins=4, range=(-1, 1))[0]),
    ("histogram-edges-weights-density", lambda f, n, i, w: np.histogram(
        f, bins=[-3, -0.5, 0, 2, 3], weights=w, density=True)[0]),
    ("histogram-int-weights", lambda f, n, i, w: np.histogram(
        f, bins=[-3, 0, 3], weights=i)[0]),
    ("histogram2d", lambda f, n, i, w: np.histogram2d(
        f[:, 0], f[:, 1], bins=[2, 3], range=[(-1, 1), (-2, 2)], weights=w[:, 0])[0]),
    ("histogramdd", lambda f, n, i, w: np.histogramdd(
        f[:, :3], bins=(2, [0, 1, 2], 3), range=[(-1, 1), None, (0, 2)], density=True)[0]),
    ("bincount-minlength-weights", lambda f, n, i, w: np.bincount(
        np.ravel(i), weights=np.ravel(w), minlength=12)),
    ("digitize", lambda f, n, i, w: np.digitize(f, [-1.0, 0.0, 1.0], right=True)),
    ("median", lambda f, n, i, w: np.median(whole_rows(f), axis=1)),
    ("median-int", lambda f, n, i, w: np.median(whole_rows(i), axis=-1, keepdims=True)),
    ("percentile-q-array", lambda f, n, i, w: np.percentile(
        whole_rows(f), [[10, 20], [50, 90]], axis=1, method="nearest")),
    ("quantile-weights", lambda f, n, i, w: np.quantile(
        whole_rows(f), 0.3, axis=1, method="inverted_cdf", weights=w[0])),
    ("nanmedian", lambda f, n, i, w: np.nanmedian(whole_rows(n), axis=1)),
    ("nanpercentile", lambda f, n, i, w: np.nanpercentile(whole_rows(n), 75, axis=1)),
    ("nanquantile-f4", lambda f, n, i, w: np.nanquantile(
        whole_rows(n).astype("f4"), [0.1, 0.5], axis=1, keepdims=True)),
    ("average", lambda f, n, i, w: np.average(i)),
    ("average-weights-returned", lambda f, n, i, w: np.stack(np.average(
        f, axis=0, weights=w, returned=True))),
    ("average-weights-along-axes", lambda f, n, i, w: np.average(f, axis=(1, 0), weights=w.T)),
    ("ptp", lambda f, n, i, w: np.ptp(i, axis=1)),
    ("count_nonzero", lambda f, n, i, w: np.count_nonzero(i, axis=0)),
    ("cov", lambda f, n, i, w: np.cov(f)),
    ("cov-weights-ddof", lambda f, n, i, w: np.cov(
        f, rowvar=False, fweights=np.ravel(i)[:6] + 1, aweights=w[:, 0], ddof=2)),
    ("cov-pair", lambda f, n, i, w: np.cov(f[0], f[1], bias=True)),
    ("corrcoef", lambda f, n, i, w: np.corrcoef(f, rowvar=False)),
    ("block", lambda f, n, i, w: np.block([[f, i[:, :2]], [f[:1], i[:1, :2]]])),
    ("dstack", lambda f, n, i, w: np.dstack([f, w])),
    ("atleast_3d", lambda f, n, i, w: np.atleast_3d(f[0])),
    ("append", lambda f, n, i, w: np.append(f, w[:2], axis=0)),
    ("insert-scalar", lambda f, n, i, w: np.insert(i, 2, 7, axis=1)),
    ("insert-positions", lambda f, n, i, w: np.insert(f, [0, 3, 3, 6], w[:4], axis=0)),
    ("delete", lambda f, n, i, w: np.delete(i, [0, -1], axis=1)),
    ("compress", lambda f, n, i, w: np.compress([1, 0, 1], f, axis=0)),
    ("extract", lambda f, n, i, w: np.extract(f > 0, w)),
    ("rot90", lambda f, n, i, w: np.rot90(i, 3, axes=(1, 0))),
    ("diagonal", lambda f, n, i, w: np.diagonal(f, -2)),
    ("diag-of-vector", lambda f, n, i, w: np.diag(i[:, 0], k=2)),
    ("trace", lambda f, n, i, w: np.trace(i, 1)),
    ("nan_to_num", lambda f, n, i, w: np.nan_to_num(n, nan=-1.0)),
    ("angle", lambda f, n, i, w: np.angle(f + 1j * w, deg=True)),
    ("sinc-fix", lambda f, n, i, w: np.sinc(np.fix(f * 3))),
    ("isposinf", lambda f, n, i, w: np.isposinf(f / np.sign(f))),
    ("select", lambda f, n, i, w: np.select([f < -1, f > 1], [i, f], default=np.nan)),
    ("choose", lambda f, n, i, w: np.choose(i % 3, [f, w, 7.0])),
    ("piecewise", lambda f, n, i, w: np.piecewise(f, [f < 0], [np.negative, np.sqrt])),
    ("unravel_index", lambda f, n, i, w: np.stack(np.unravel_index(i, (3, 3)))),
    ("ravel_multi_index", lambda f, n, i, w: np.ravel_multi_index((i, i % 4), (9, 4))),
]


@pytest.mark.parametrize("chunks", CHUNKINGS, ids=str)
@pytest.mark.parametrize("name,call", CASES, ids=[c[0] for c in CASES])
def test_equal_to_numpy_and_lazy(name, call, chunks, monkeypatch):
    expected = first(call(F, FN, I, W))
    arrays = [xa.from_array(a, chunks=chunks) for a in (F, FN, I, W)]
    with monkeypatch.context() as m:
        m.setattr(xa.Array, "compute", lambda *a, **k: pytest.fail("computed when built"))
        m.setattr(xa.Array, "__array__", lambda *a, **k: pytest.fail("computed when built"))
        got = first(call(*arrays))
    assert isinstance(got, xa.Array)
    out = got.compute()
    assert got.dtype == expected.dtype and out.dtype == expected.dtype
    assert out.shape == expected.shape
    if not any(n != n for c in got.chunks for n in c):
        assert got.shape == expected.shape
    np.testing.assert_allclose(out, expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("chunks", [7, 3, 1], ids=str)
def test_bincount_without_minlength_has_an_unknown_length(chunks):
    values = np.array([3, 0, 3, 9, 1, 1, 3])
    x = xa.from_array(values, chunks=chunks)
    got = xa.bincount(x)
    assert got.chunks == ((np.nan,),) or np.isnan(got.chunks[0][0])
    np.testing.assert_array_equal(got.compute(), np.bincount(values))
    np.testing.assert_array_equal(xa.bincount(x[x > 5]).compute(), np.bincount(values[values > 5]))
    assert xa.bincount(x, minlength=10).shape == (10,)
    with pytest.raises(ValueError, match=r"value 9, past minlength=5"):
        xa.bincount(x, minlength=5).compute()


def test_histogram_returns_numpy_edges_and_counts_of_any_shape():
    x = xa.from_array(F, chunks=(4, 2))
    counts, edges = np.histogram(x, bins=5, range=(-2, 2))
    expected, expected_edges = np.histogram(F, bins=5, range=(-2, 2))
    assert isinstance(edges, np.ndarray)
    np.testing.assert_array_equal(edges, expected_edges)
    np.testing.assert_array_equal(counts.compute(), expected)
    counts, _ = xa.histogram(xa.from_array(np.float64(0.3)), bins=[0, 0.5, 1])
    np.testing.assert_array_equal(counts.compute(), [1, 0])


def test_order_statistics_over_all_axes_in_one_block():
    x = xa.from_array(F, chunks=-1)
    np.testing.assert_allclose(np.median(x).compute(), np.median(F))
    np.testing.assert_allclose(xa.percentile(x, [5, 95], keepdims=True).compute(),
                               np.percentile(F, [5, 95], keepdims=True))


def test_average_with_weights_summing_to_zero_fails_when_computed():
    x = xa.from_array(F, chunks=2)
    got = xa.average(x, axis=0, weights=np.zeros((6, 5)))
    with pytest.raises(ZeroDivisionError, match="Weights sum to zero"):
        got.compute()


@pytest.mark.parametrize("call,error,match", [
    (lambda x: np.histogram(x, bins=4), ValueError, r"bins=4 \(a number of bins\) needs range="),
    (lambda x: np.histogram(x, bins="auto"), ValueError, r"bins='auto' estimates the bins"),
    (lambda x: np.histogram(x, bins=[2, 1]), ValueError, "monotonically"),
    (lambda x: np.histogram(x, bins=3, range=(1, 0)), ValueError, "max must be larger"),
    (lambda x: np.histogram(x, bins=[0, 1], weights=np.ones(3)), ValueError,
     r"same shape as a: \(3,\) and \(6, 5\)"),
    (lambda x: np.histogram(x, bins=x[0]), TypeError, r"bins\.compute\(\)"),
    (lambda x: np.histogramdd(x, bins=2), ValueError, "needs range="),
    (lambda x: np.histogramdd(x[None], bins=2), ValueError, r"\(N, D\).*shape \(1, 6, 5\)"),
    (lambda x: np.bincount(x), ValueError, r"1-d; got shape \(6, 5\)"),
    (lambda x: np.bincount(x[0]), TypeError, "Cannot cast"),
    (lambda x: np.bincount(x[0].astype(int), minlength=-1), ValueError, "negative"),
    (lambda x: np.percentile(x.rechunk(-1), 101), ValueError, r"range \[0, 100\]"),
    (lambda x: np.quantile(x.rechunk(-1), 0.5, method="bad"), ValueError, "method"),
    (lambda x: np.average(x, weights=np.ones(5)), TypeError, "axis must be specified"),
    (lambda x: np.average(x, axis=0, weights=np.ones(5)), ValueError, r"weights \(5,\)"),
    (lambda x: np.ptp(x > 0), TypeError, "boolean subtract"),
    (lambda x: np.cov(xa.ones((2, 2, 2))), ValueError, "more than 2 dimensions"),
    (lambda x: np.cov(x, fweights=np.full(5, 1.5)), TypeError, "fweights must be integer"),
    (lambda x: xa.block((x, x)), TypeError, "tuple"),
    (lambda x: np.block([[x], x]), ValueError, "depths are mismatched"),
    (lambda x: np.delete(x, 6, axis=0), IndexError, "index 6 is out of bounds for axis 0 with size 6"),
    (lambda x: np.insert(x, [7], 0, axis=0), IndexError, "index 7 is out of bounds"),
    (lambda x: np.delete(x, x[0] > 0, axis=1), TypeError, "known when the expression is written"),
    (lambda x: np.compress([0, 0, 0, 0, 0, 0, 1], x, axis=0), IndexError, "index 6 is out of bounds"),
    (lambda x: np.rot90(x, axes=(0, 0)), ValueError, "axes must be different"),
    (lambda x: np.diagonal(x[0]), ValueError, r"at least two dimensions, got shape \(5,\)"),
    (lambda x: np.diag(xa.ones((2, 2, 2))), ValueError, r"1- or 2-d, got shape \(2, 2, 2\)"),
    (lambda x: np.select([x > 0], [x, x]), ValueError, "same length"),
    (lambda x: np.select([x], [x]), TypeError, "should be boolean"),
    (lambda x: np.choose(x, [x]), TypeError, "integers"),
    (lambda x: np.ravel_multi_index((x,), (3, 4)), ValueError, "length 2, got 1"),
    (lambda x: np.piecewise(x, [x > 0], [1, 2, 3]), ValueError, "1 or 2 functions"),
])
def test_what_numpy_refuses_fails_when_built(call, error, match, monkeypatch):
    x = xa.from_array(F, chunks=(3, 2))
    monkeypatch.setattr(xa.Array, "compute", lambda *a, **k: pytest.fail("computed"))
    with pytest.raises(error, match=match):
        call(x)


@pytest.mark.parametrize("call", [lambda m, x: m.median(x, axis=1), lambda m, x: m.percentile(x, [10, 50]),
                                  lambda m, x: m.nanquantile(x, 0.3, axis=0),
                                  lambda m, x: m.percentile(x, 40, axis=0, method="nearest")])
def test_order_statistics_put_the_axes_they_reduce_in_one_chunk(call):
    x = xa.from_array(F, chunks=(3, 2))
    np.testing.assert_allclose(call(np, x).compute(), call(np, F))


def test_order_statistics_refuse_blocks_past_the_rechunk_bound():
    x = xa.from_array(np.ones((600, 400)), chunks=(100, 100))
    with xsched.config.set({"array.rechunk.memory": "400KiB"}):
        assert np.median(x, axis=1).chunks == ((100,) * 6,)  # (blocks of 100 x 400: 312.5 KiB)
        with pytest.raises(ValueError, match=r"median: needs each axis it works along in one chunk \(axis 0 in 6 "
                                             r"chunks\); the blocks that makes would hold 468.75 KiB.*"
                                             r"x\.rechunk\(\{0: -1, 1: <smaller>\}\), or raise that limit"):
            np.median(x, axis=0)


def test_median_of_rows_of_unknown_length():
    x = xa.from_array(F, chunks=(2, 5))
    rows = x[x[:, 0] > 0]
    np.testing.assert_allclose(np.median(rows, axis=1).compute(), np.median(F[F[:, 0] > 0], axis=1))
    with pytest.raises(ValueError, match=r"median with keepdims .*compute_chunk_sizes\(\)"):
        np.median(rows, axis=1, keepdims=True)


@pytest.mark.parametrize("kwargs", [dict(bins=[np.array([0, 2, 5, 9.0])]), dict(bins=4, range=[(0, 12)]),
                                    dict(bins=4, range=[(0, 12)], density=True)])
def test_histogramdd_of_one_dimensional_points_is_numpys(kwargs):
    counts, edges = np.histogramdd(xa.from_array(np.arange(10.0), chunks=3), **kwargs)
    want_counts, want_edges = np.histogramdd(np.arange(10.0), **kwargs)
    np.testing.assert_allclose(counts.compute(), want_counts)
    assert len(edges) == 1
    np.testing.assert_allclose(edges[0], want_edges[0])


def test_nan_to_num_with_fill_values_the_graph_computes():
    """nan=, posinf=, neginf= as values of the same computation (a 0-d xsched array, such
    as x.sum()), directly and through numpy.nan_to_num; an array of values is refused."""
    a = np.array([[np.nan, 1.0, np.inf], [-np.inf, 2.0, np.nan]])
    x = xa.from_array(a, chunks=(1, 2))
    fill = xa.nansum(x[:, 1])
    np.testing.assert_array_equal(xa.nan_to_num(x, nan=fill, posinf=fill * 10, neginf=-1.0).compute(),
                                  np.nan_to_num(a, nan=3.0, posinf=30.0, neginf=-1.0))
    np.testing.assert_array_equal(np.nan_to_num(x, nan=fill).compute(), np.nan_to_num(a, nan=3.0))
    with pytest.raises(ValueError, match="nan= takes one value"):
        xa.nan_to_num(x, nan=x)
