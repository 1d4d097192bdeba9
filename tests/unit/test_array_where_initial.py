"""NumPy's ``where=`` and ``initial=`` of sum, prod, min, max, mean, any and all, against
NumPy: random masks (as NumPy arrays, xsched arrays, or broadcast from fewer axes), every
axis, keepdims, chunkings, empty axes with an initial; NumPy's errors when built."""

import warnings

import numpy as np
import pytest

import xsched.array as xa

CASES = [("sum", {}), ("sum", {"initial": 5}), ("prod", {"initial": 2}), ("prod", {}), ("min", {"initial": 4.5}),
         ("max", {"initial": -1}), ("mean", {}), ("any", {}), ("all", {})]


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("op, kw", CASES)
def test_as_numpy(seed, op, kw):
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 9, (4, 5)).astype("f8")
    if op in ("any", "all"):
        a = a > 4
    mask = rng.random((4, 5)) < 0.6
    x = xa.from_array(a, chunks=(int(rng.integers(1, 4)), int(rng.integers(1, 5))))
    for axis in (None, 0, 1, (0, 1)):
        for where in (mask, xa.from_array(mask, chunks=2), mask[0]):
            for keepdims in (False, True):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", RuntimeWarning)  # (a mean of nothing: NaN, as NumPy warns)
                    want = getattr(np, op)(a, axis=axis, keepdims=keepdims, where=np.broadcast_to(
                        where if isinstance(where, np.ndarray) else mask, a.shape), **kw)
                got = getattr(xa, op)(x, axis=axis, keepdims=keepdims, where=where, **kw)
                computed = got.compute()
                assert computed.dtype == want.dtype and computed.shape == np.shape(want)
                np.testing.assert_array_equal(computed, want)


@pytest.mark.parametrize("op", ["sum", "prod", "min", "max"])
def test_initial_alone_and_through_numpy_and_methods(op):
    a = np.arange(1, 13).reshape(3, 4)
    x = xa.from_array(a, chunks=2)
    for initial in (0, 3, 100):
        want = getattr(np, op)(a, axis=0, initial=initial)
        assert getattr(np, op)(x, axis=0, initial=initial).compute().tolist() == want.tolist()
        assert getattr(x, op)(axis=0, initial=initial).compute().tolist() == want.tolist()


def test_an_initial_over_an_empty_axis_is_the_result():
    a = np.zeros((3, 0))
    x = xa.from_array(a, chunks=1)
    for op in ("min", "max", "sum", "prod"):
        got = getattr(xa, op)(x, axis=1, initial=7.0)
        assert got.compute().tolist() == getattr(np, op)(a, axis=1, initial=7.0).tolist()
    with pytest.raises(ValueError, match="zero-size array to reduction operation maximum"):
        xa.max(x, axis=1)


def test_numpy_errors_when_built():
    x = xa.from_array(np.arange(6.0).reshape(2, 3), chunks=1)
    with pytest.raises(ValueError, match="'maximum' does not have an identity, so to use a where mask one has to "
                                         "specify 'initial'"):
        x.max(where=np.ones((2, 3), bool))
    with pytest.raises(TypeError, match="where must hold booleans, not float64"):
        x.sum(where=np.ones((2, 3)))
    with pytest.raises(ValueError, match="cannot broadcast"):
        x.sum(where=np.ones(4, bool))
    with pytest.raises(TypeError, match="unexpected keyword argument 'initial'"):
        xa.any(x > 1, initial=True)


def test_an_initial_the_dtype_cannot_hold_fails_when_built_as_numpy():
    a = np.array([1, 200, 3], "u1")
    x = xa.from_array(a, chunks=2)
    for op, initial in (("max", -1), ("min", 300)):
        with pytest.raises(OverflowError, match="out of bounds for uint8"):
            getattr(xa, op)(x, initial=initial)
        with pytest.raises(OverflowError):
            getattr(np, op)(a, initial=initial)
    assert xa.max(x, initial=250).compute() == np.max(a, initial=250) == 250


def test_where_with_a_mask_of_the_array_of_unknown_lengths():
    y = xa.from_array(np.arange(10.0), chunks=3)
    z = y[y > 2]
    assert np.isnan(z.chunks[0][0])
    assert float(xa.sum(z, where=z > 5).compute()) == 30.0
    assert float(xa.mean(z, where=z > 5).compute()) == 7.5
    assert float(xa.max(z, where=z > 5, initial=0).compute()) == 9.0
    with pytest.raises(ValueError, match="compute_chunk_sizes"):
        xa.sum(z, where=np.ones(7, bool))


def test_ufunc_reduce_takes_initial_and_where_as_numpy():
    a = np.arange(12.0).reshape(3, 4)
    x = xa.from_array(a, chunks=2)
    np.testing.assert_array_equal(np.maximum.reduce(x, axis=0, initial=5.0).compute(),
                                  np.maximum.reduce(a, axis=0, initial=5.0))
    np.testing.assert_array_equal(np.add.reduce(x, axis=1, where=a > 3).compute(), np.add.reduce(a, axis=1, where=a > 3))
    with pytest.raises(TypeError, match="add: where= is not supported"):  # (an elementwise call: no out= to fill)
        np.add(x, 1, where=a > 3)


def test_a_lazy_histogram_range_is_refused_naming_range_before_computing(monkeypatch):
    x = xa.from_array(np.arange(10.0), chunks=3)
    top = x.max()
    monkeypatch.setattr(xa.Array, "compute", lambda *a, **k: pytest.fail("computed"))
    monkeypatch.setattr(xa.Array, "__array__", lambda *a, **k: pytest.fail("computed"))
    with pytest.raises(TypeError, match="histogram: range must be known when the expression is written"):
        np.histogram(x, bins=5, range=(0, top))
    with pytest.raises(TypeError, match="histogramdd: range must be known"):
        xa.histogramdd(x, bins=[3], range=[(0, top)])
