"""NumPy's polynomials (``vander``, ``polyval``, ``polyfit``), ``unwrap``, ``kron``,
``diagflat``, ``identity``, ``copy``, ``sort_complex`` and ``histogram_bin_edges`` on
xsched arrays, through ``xsched.array`` and NumPy's own functions, against NumPy."""

import numpy as np
import pytest

import xsched.array as xa

RNG = np.random.default_rng(0)


@pytest.mark.parametrize("deg", [0, 1, 2, 5])
@pytest.mark.parametrize("chunks", [50, 13, 7])
def test_polyfit_as_numpy(deg, chunks):
    xs = RNG.random(50)
    ys = np.c_[3 * xs ** 2 - xs + 2 + RNG.normal(scale=0.01, size=50), np.sin(xs)]
    x, y = xa.from_array(xs, chunks=chunks), xa.from_array(ys, chunks=(chunks, 1))
    np.testing.assert_allclose(np.polyfit(x, y, deg).compute(), np.polyfit(xs, ys, deg), rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(xa.polyfit(x, y[:, 0], deg, w=x + 1).compute(),
                               np.polyfit(xs, ys[:, 0], deg, w=xs + 1), rtol=1e-8, atol=1e-10)
    got, want = np.polyfit(x, y, deg, full=True), np.polyfit(xs, ys, deg, full=True)
    for g, w in zip(got[:4], want[:4]):
        np.testing.assert_allclose(np.asarray(g.compute()), w, rtol=1e-7, atol=1e-12)
    assert got[4] == want[4]


def test_polyfit_refuses_what_it_cannot_fit_when_built():
    x = xa.from_array(np.arange(5.0), chunks=2)
    with pytest.raises(NotImplementedError, match=r"polyfit\(cov=True\)"):
        np.polyfit(x, x, 1, cov=True)
    with pytest.raises(TypeError, match="the same length, got 5 and 4"):
        np.polyfit(x, x[:4], 1)
    with pytest.raises(ValueError, match="deg must be 0 or more"):
        xa.polyfit(x, x, -1)


@pytest.mark.parametrize("p", [[1, 2, 3], np.array([2.5, -1]), [True, 3], "xsched"])
@pytest.mark.parametrize("values", [RNG.random(9), np.arange(5), np.array([True, False])])
def test_polyval_as_numpy(p, values):
    coefficients = xa.from_array(np.array([1.0, 0, -2]), chunks=2) if isinstance(p, str) else p
    want = np.polyval(np.array([1.0, 0, -2]) if isinstance(p, str) else p, values)
    got = np.polyval(coefficients, xa.from_array(values, chunks=3)).compute()
    assert got.dtype == want.dtype
    np.testing.assert_allclose(got, want)


@pytest.mark.parametrize("N, increasing", [(None, False), (3, True), (0, False), (6, False)])
def test_vander_as_numpy(N, increasing):
    got = xa.vander(xa.from_array(np.arange(1, 6), chunks=2), N, increasing).compute()
    want = np.vander(np.arange(1, 6), N, increasing)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("shape, chunks, axis", [((40,), 7, -1), ((6, 30), (4, 8), 1), ((30, 5), (7, 2), 0)])
def test_unwrap_carries_the_corrections_across_blocks(shape, chunks, axis):
    wrapped = np.angle(np.exp(1j * np.cumsum(RNG.normal(scale=2, size=shape), axis=axis)))
    for data, kwargs in ((wrapped, {}), (wrapped, {"discont": 4.0}), (np.degrees(wrapped), {"period": 360})):
        got = np.unwrap(xa.from_array(data, chunks=chunks), axis=axis, **kwargs).compute()
        want = np.unwrap(data, axis=axis, **kwargs)
        assert got.dtype == want.dtype
        np.testing.assert_allclose(got, want, atol=1e-9)
    ints = RNG.integers(0, 10, 25)
    np.testing.assert_array_equal(np.unwrap(xa.from_array(ints, chunks=6), period=10).compute(),
                                  np.unwrap(ints, period=10))


@pytest.mark.parametrize("a, b", [(np.arange(12.0).reshape(3, 4), np.eye(2)), (np.arange(3), np.arange(4.0)),
                                  (np.arange(6).reshape(2, 3), np.arange(3)),
                                  (np.arange(24).reshape(2, 3, 4), np.ones((2, 2))), (np.array(2.0), np.arange(3))])
def test_kron_as_numpy(a, b):
    want = np.kron(a, b)
    for got in (xa.kron(xa.from_array(a, chunks=2) if a.ndim else xa.asarray(a), b),
                np.kron(a, xa.from_array(b, chunks=1))):
        got = got.compute()
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got, want)


def test_small_functions_as_numpy():
    a = np.arange(12.0).reshape(3, 4)
    x = xa.from_array(a, chunks=2)
    np.testing.assert_array_equal(np.diagflat(xa.from_array(a[:2, :2], chunks=1), k=-1).compute(),
                                  np.diagflat(a[:2, :2], k=-1))
    np.testing.assert_array_equal(xa.identity(5, chunks=2).compute(), np.identity(5))
    y = np.copy(x)
    y[0] = -1  # (a write into the copy leaves the original)
    assert x.compute()[0, 0] == 0 and y.compute()[0, 0] == -1
    for values in (np.array([3 + 1j, 1 + 2j, 1 - 1j, 1 + 2j, -2]), np.array([3, 1, 2], np.int8), np.array([[3.0, 1], [0, 2]])):
        got, want = np.sort_complex(xa.from_array(values, chunks=1)).compute(), np.sort_complex(values)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(np.histogram_bin_edges(x, bins=4, range=(0, 12)),
                                  np.histogram_bin_edges(a, bins=4, range=(0, 12)))
    np.testing.assert_array_equal(np.histogram_bin_edges(x, bins=[0, 1, 5]), np.histogram_bin_edges(a, bins=[0, 1, 5]))
    with pytest.raises(ValueError, match=r"bins=10 \(a number of bins\) needs range="):
        np.histogram_bin_edges(x)
