"""Set comparisons, partition, push, from_delayed, as_gufunc, frompyfunc, npy stacks and the
small NumPy names, each against NumPy."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import xsched
import xsched.array as xa

values = hnp.arrays(np.float64, st.integers(1, 30), elements=st.sampled_from([0.0, 1.0, 2.0, 3.5, np.nan, -1.0]))


@settings(max_examples=50, deadline=None)
@given(values, values, st.integers(1, 7))
def test_set_comparisons_as_numpy(a, b, chunk):
    x = xa.from_array(a, chunks=chunk)
    for name in ("intersect1d", "setdiff1d", "setxor1d", "union1d"):
        np.testing.assert_array_equal(getattr(xa, name)(x, b).compute(), getattr(np, name)(a, b))
    got = [r.compute() for r in xa.intersect1d(x, xa.from_array(b, chunks=3), return_indices=True)]
    for g, w in zip(got, np.intersect1d(a, b, return_indices=True)):
        np.testing.assert_array_equal(g, w)


def test_partition_and_argpartition_as_numpy():
    rng = np.random.default_rng(0)
    a = rng.integers(0, 50, (6, 9))
    x = xa.from_array(a, chunks=(4, 9))
    for kth in (0, 4, [2, 6], -1):
        got = xa.partition(x, kth).compute()
        want = np.partition(a, kth)
        ks = np.atleast_1d(kth)
        np.testing.assert_array_equal(got[:, ks], want[:, ks])
        assert (np.sort(got, axis=1) == np.sort(a, axis=1)).all()
        idx = xa.argpartition(x, kth).compute()
        np.testing.assert_array_equal(np.take_along_axis(a, idx, axis=1)[:, ks], want[:, ks])
    with pytest.raises(ValueError, match="kth 9 is out of bounds for axis 1 of length 9"):
        xa.partition(x, 9)
    got = xa.partition(x, 1, axis=0).compute()  # (axis 0 in two chunks: put in one first)
    np.testing.assert_array_equal(got[1], np.partition(a, 1, axis=0)[1])


def _pushed(a: np.ndarray, n, axis: int) -> np.ndarray:
    out = np.moveaxis(a.copy(), axis, -1)
    for row in out.reshape(-1, out.shape[-1]):
        last, run = None, 0
        for i, v in enumerate(row):
            if np.isnan(v):
                run += 1
                if last is not None and (n is None or run <= n):
                    row[i] = last
            else:
                last, run = v, 0
    return np.moveaxis(out, -1, axis)


@settings(max_examples=30, deadline=None)
@given(hnp.arrays(np.float64, (5, 17), elements=st.sampled_from([1.0, 2.0, np.nan, np.nan])),
       st.sampled_from([None, 1, 2, 4]), st.sampled_from([0, 1, -1]), st.integers(1, 6))
def test_push_fills_forward_across_blocks(a, n, axis, chunk):
    got = xa.push(xa.from_array(a, chunks=chunk), n, axis).compute()
    np.testing.assert_array_equal(got, _pushed(a, n, axis))


def test_push_of_integers_and_bad_limits():
    x = xa.arange(5, chunks=2)
    assert xa.push(x) is x
    with pytest.raises(ValueError, match="n must be a positive number"):
        xa.push(xa.ones(3, chunks=1), n=0)


def test_from_delayed_and_compute():
    parts = [xa.from_delayed(xsched.delayed(np.full)((2, 2), i), shape=(2, 2), dtype=float) for i in range(3)]
    stacked = xa.stack(parts)
    assert stacked.chunks == ((1, 1, 1), (2,), (2,)) and stacked.dtype == np.float64
    total, mean = xa.compute(stacked.sum(), stacked.mean())
    assert total == 12.0 and mean == 1.0
    wrong = xa.from_delayed(xsched.delayed(np.zeros)(3), shape=(4,), dtype=float)
    with pytest.raises(ValueError, match=r"gave an array of shape \(3,\), but the array was declared with shape"):
        wrong.compute()
    with pytest.raises(TypeError, match="takes Delayed objects or futures"):
        xa.from_delayed(np.ones(3), shape=(3,))


def test_as_gufunc_frompyfunc_ndim_and_shape():
    @xa.as_gufunc("(i)->(),()", output_dtypes=(float, float))
    def ends(x):
        return x[..., 0], x[..., -1]

    first, last = ends(xa.from_array(np.arange(12.0).reshape(3, 4), chunks=(2, 4)))
    assert first.compute().tolist() == [0.0, 4.0, 8.0] and last.compute().tolist() == [3.0, 7.0, 11.0]
    with pytest.raises(ValueError):
        xa.as_gufunc("(i->)")
    divmod_ = xa.frompyfunc(divmod, 2, 2)
    q, r = divmod_(xa.from_array(np.array([7, 9, 11]), chunks=2), 4)
    assert q.dtype == object and q.compute().tolist() == [1, 2, 2] and r.compute().tolist() == [3, 1, 3]
    x = xa.ones((2, 5), chunks=2)
    assert xa.ndim(x) == np.ndim(x) == 2 and xa.shape(x) == (2, 5) and xa.shape(np.ones(3)) == (3,)
    assert xa.asanyarray([1, 2]).compute().tolist() == [1, 2]


def test_npy_stack_round_trip(tmp_path):
    a = np.arange(60.0).reshape(6, 10)
    xa.to_npy_stack(str(tmp_path), xa.from_array(a, chunks=(2, 4)), axis=1)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["0.npy", "1.npy", "2.npy", "info"]
    np.testing.assert_array_equal(np.load(tmp_path / "1.npy"), a[:, 4:8])
    y = xa.from_npy_stack(str(tmp_path))
    assert y.chunks == ((6,), (4, 4, 2))
    np.testing.assert_array_equal(y.compute(), a)
    with pytest.raises(FileNotFoundError, match="has no 'info' file"):
        xa.from_npy_stack(str(tmp_path / "nothing"))


@pytest.mark.parametrize("axis", [0, 1])
def test_positions_from_an_xsched_array_index_as_numpy(axis):
    rng = np.random.default_rng(axis)
    a = rng.integers(0, 100, (5, 7))
    where = rng.integers(-a.shape[axis], a.shape[axis], (3, 4))
    x = xa.from_array(a, chunks=(2, 3))
    lazy = xa.from_array(where, chunks=(2, 3))
    got = (x[lazy] if axis == 0 else x[:, lazy]).compute()
    np.testing.assert_array_equal(got, a[where] if axis == 0 else a[:, where])
    with pytest.raises(IndexError, match="index 9 is out of bounds for axis 0 with size 5"):
        x[xa.from_array(np.array([9]), chunks=1)].compute()


def test_xarray_idxmax_and_idxmin_on_xsched_chunks():
    xr = pytest.importorskip("xarray")
    a = np.random.default_rng(0).random((6, 4))
    a[2, 1] = np.nan
    da = xr.DataArray(a, dims=("t", "x"), coords={"t": np.arange(6) * 10, "x": list("abcd")})
    c = da.chunk({"t": 3}, chunked_array_type="xsched")
    np.testing.assert_array_equal(c.idxmax("t").compute().values, da.idxmax("t").values)
    np.testing.assert_array_equal(c.idxmin("x").compute().values, da.idxmin("x").values)


# ---------------------------------------------------------------------- splits, spacing, interp, trapezoid


@pytest.mark.parametrize("chunks", [1, 2, (4, 3)])
def test_splits_and_column_stack_as_numpy(chunks):
    a = np.arange(42.0).reshape(6, 7)
    x = xa.from_array(a, chunks=chunks)
    cases = [lambda m, v: m.split(v, 3), lambda m, v: m.split(v, [1, 5], axis=1), lambda m, v: m.array_split(v, 4),
             lambda m, v: m.array_split(v, 3, axis=1), lambda m, v: m.hsplit(v, [2, 3]), lambda m, v: m.vsplit(v, 2),
             lambda m, v: m.dsplit(m.stack([v, v], axis=2), 2)]
    for case in cases:
        got, want = case(xa, x), case(np, a)
        assert len(got) == len(want)
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g.compute(), w)
    assert [p.shape for p in np.split(x, [2])] == [(2, 7), (4, 7)]  # (NumPy's own function dispatches here)
    np.testing.assert_array_equal(np.column_stack([x[:, 0], x, x[:, 1]]).compute(),
                                  np.column_stack([a[:, 0], a, a[:, 1]]))
    with pytest.raises(ValueError, match="does not result in an equal division"):
        xa.split(x, 4)
    with pytest.raises(ValueError, match="vsplit only works on arrays of 2"):
        xa.vsplit(x[0], 2)


@pytest.mark.parametrize("chunks", [1, 3, 5])
def test_logspace_and_geomspace_equal_numpy(chunks):
    for args in [(1, 1000, 4), (2, 3, 7), (-1, -1000, 5), (5, 0.1, 9), (3, 9, 1), (3, 9, 0)]:
        for endpoint in (True, False):
            np.testing.assert_array_equal(xa.geomspace(*args, endpoint=endpoint, chunks=chunks).compute(),
                                          np.geomspace(*args, endpoint=endpoint))
            np.testing.assert_array_equal(xa.logspace(*args, endpoint=endpoint, base=2, chunks=chunks).compute(),
                                          np.logspace(*args, endpoint=endpoint, base=2))
    with pytest.raises(ValueError, match="cannot include zero"):
        xa.geomspace(0, 5)


def test_interp_and_trapezoid_as_numpy():
    rng = np.random.default_rng(3)
    a = rng.normal(size=(9, 7))
    x = xa.from_array(a, chunks=(4, 3))
    for axis in (0, 1, -1):
        np.testing.assert_allclose(xa.trapezoid(x, axis=axis).compute(), np.trapezoid(a, axis=axis))
        np.testing.assert_allclose(np.trapezoid(x, dx=0.5, axis=axis).compute(), np.trapezoid(a, dx=0.5, axis=axis))
        spacing = np.sort(rng.random(a.shape[axis]))
        np.testing.assert_allclose(xa.trapezoid(x, x=spacing, axis=axis).compute(),
                                   np.trapezoid(a, x=spacing, axis=axis))
    grid = np.sort(rng.random(a.shape), axis=0)
    np.testing.assert_allclose(xa.trapezoid(x, x=xa.from_array(grid, chunks=3), axis=0).compute(),
                               np.trapezoid(a, x=grid, axis=0))
    np.testing.assert_array_equal(np.interp(x, [-1, 0, 2], [5, 0, 1], left=-9).compute(),
                                  np.interp(a, [-1, 0, 2], [5, 0, 1], left=-9))
    np.testing.assert_array_equal(np.interp(x, [0, 1], [1j, 2]).compute(), np.interp(a, [0, 1], [1j, 2]))
    with pytest.raises(ValueError, match="same length"):
        np.interp(x, [0, 1], [1, 2, 3])
    with pytest.raises(TypeError, match="give them as NumPy arrays"):
        xa.interp(x, xa.arange(3, chunks=2), [1, 2, 3])
