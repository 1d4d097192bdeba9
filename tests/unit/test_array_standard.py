"""Array API (2023.12) and NumPy functions the namespace gained: repeat, tile, unstack,
tril/triu, permute_dims, concat, searchsorted, unique_values/counts/inverse/all,
cumulative_sum/prod, fft.fftfreq/rfftfreq; each against NumPy over several chunkings."""

import numpy as np
import pytest

import xsched.array as xa

A = np.arange(24).reshape(2, 3, 4)
CHUNKINGS = [(2, 3, 4), (1, 2, 3), (1, 1, 1)]


@pytest.mark.parametrize("chunks", CHUNKINGS)
def test_repeat_tile_unstack_tril_triu_as_numpy(chunks):
    x = xa.from_array(A, chunks=chunks)
    for repeats, axis in [(2, 0), (3, 2), ([1, 0, 2], 1), (2, None), ([3], 1), (0, 1)]:
        got = xa.repeat(x, repeats, axis)
        assert got.shape == np.repeat(A, repeats, axis).shape
        np.testing.assert_array_equal(got.compute(), np.repeat(A, repeats, axis))
    np.testing.assert_array_equal(x.repeat(2).compute(), A.repeat(2))
    for reps in [2, (2, 1), (1, 2, 3), (2, 1, 1, 2), (0, 1)]:
        np.testing.assert_array_equal(xa.tile(x, reps).compute(), np.tile(A, reps))
    for k in [-2, -1, 0, 1, 3]:
        np.testing.assert_array_equal(xa.tril(x, k).compute(), np.tril(A, k))
        np.testing.assert_array_equal(np.triu(x, k).compute(), np.triu(A, k))
    for axis in range(3):
        parts = xa.unstack(x, axis=axis)
        assert len(parts) == A.shape[axis]
        for got, expected in zip(parts, np.moveaxis(A, axis, 0)):
            np.testing.assert_array_equal(got.compute(), expected)
    np.testing.assert_array_equal(xa.permute_dims(x, (2, 0, 1)).compute(), np.permute_dims(A, (2, 0, 1)))
    np.testing.assert_array_equal(xa.concat([x, x], axis=1).compute(), np.concat([A, A], axis=1))
    np.testing.assert_array_equal(xa.concat([x, A], axis=None).compute(), np.concat([A, A], axis=None))


def test_repeat_and_tril_refuse_what_numpy_refuses_when_built():
    x = xa.from_array(A, chunks=2)
    with pytest.raises(ValueError, match="3 counts for axis 0 of length 2"):
        xa.repeat(x, [1, 2, 3], axis=0)
    with pytest.raises(ValueError, match="non-negative"):
        xa.repeat(x, -1)
    with pytest.raises(ValueError, match="at least one dimension"):
        xa.tril(x[(0,) * x.ndim])
    np.testing.assert_array_equal(xa.tril(x[0, 0]).compute(), np.tril(A[0, 0]))  # (a vector: NumPy's matrix)


@pytest.mark.parametrize("chunks", [1, 7, 50])
def test_searchsorted_across_the_blocks_of_the_sorted_array(chunks):
    rng = np.random.default_rng(0)
    a = np.sort(rng.integers(0, 20, 50))
    values = rng.integers(-2, 23, (4, 6))
    x = xa.from_array(a, chunks=chunks)
    for side in ("left", "right"):
        for v in (values, values[0], 5, xa.from_array(values, chunks=(2, 4))):
            expected = np.searchsorted(a, v.compute() if isinstance(v, xa.Array) else v, side=side)
            got = xa.searchsorted(x, v, side=side).compute()
            assert np.shape(got) == np.shape(expected)
            np.testing.assert_array_equal(got, expected)
    order = rng.permutation(50)
    np.testing.assert_array_equal(
        xa.searchsorted(xa.from_array(a[order], chunks=chunks), values, sorter=np.argsort(a[order])).compute(),
        np.searchsorted(a, values))
    with pytest.raises(ValueError, match="one-dimensional"):
        xa.searchsorted(xa.from_array(A, chunks=2), 3)


def test_the_unique_family_as_numpy_over_random_chunkings():
    rng = np.random.default_rng(0)
    for _ in range(25):
        shape = tuple(int(v) for v in rng.integers(1, 5, size=rng.integers(0, 3)))
        a = rng.integers(0, 5, size=shape)
        x = xa.from_array(a, chunks=tuple(int(rng.integers(1, s + 1)) for s in shape))
        for got, expected in zip(xa.unique_all(x, split_every=2), np.unique_all(a)):
            got = got.compute()
            assert np.shape(got) == np.shape(expected)
            np.testing.assert_array_equal(got, expected)
        np.testing.assert_array_equal(np.unique_inverse(x).inverse_indices.compute(),
                                      np.unique_inverse(a).inverse_indices)
        np.testing.assert_array_equal(np.unique_counts(x).counts.compute(), np.unique_counts(a).counts)
    with_nans = np.array([2.0, np.nan, 2.0, np.nan])
    np.testing.assert_array_equal(xa.unique_values(xa.from_array(with_nans, chunks=2)).compute(),
                                  np.unique_values(with_nans))
    np.testing.assert_array_equal(xa.unique(xa.from_array(with_nans, chunks=2)).compute(), np.unique(with_nans))


def test_cumulative_sum_and_prod_as_numpy():
    a = np.arange(1, 13).reshape(3, 4)
    x = xa.from_array(a, chunks=(2, 3))
    for name in ("cumulative_sum", "cumulative_prod"):
        for kwargs in [{"axis": 0}, {"axis": 1, "include_initial": True}, {"axis": -1, "dtype": "f8"}]:
            got, expected = getattr(xa, name)(x, **kwargs).compute(), getattr(np, name)(a, **kwargs)
            assert got.dtype == expected.dtype
            np.testing.assert_array_equal(got, expected)
        np.testing.assert_array_equal(getattr(np, name)(x[0], include_initial=True).compute(),
                                      getattr(np, name)(a[0], include_initial=True))
    with pytest.raises(ValueError, match="axis is required"):
        xa.cumulative_sum(x)


def test_fft_frequencies_as_numpy():
    for n in (1, 2, 5, 6, 11):
        for d in (1.0, 0.3):
            np.testing.assert_allclose(xa.fft.fftfreq(n, d, chunks=3).compute(), np.fft.fftfreq(n, d))
            np.testing.assert_allclose(xa.fft.rfftfreq(n, d).compute(), np.fft.rfftfreq(n, d))


def test_sorting_an_axis_of_unknown_blocks_says_to_learn_them_first():
    x = xa.from_array(np.arange(10.0), chunks=3)
    with pytest.raises(ValueError, match=r"compute_chunk_sizes\(\)\.rechunk"):
        xa.sort(x[x > 2], axis=0)


@pytest.mark.parametrize("chunks", [(2, 3, 2), (3, 4, 5)])
def test_apply_along_axis_as_numpy(chunks):
    a = np.arange(60.0).reshape(3, 4, 5)
    x = xa.from_array(a, chunks=chunks)
    for func, axis in [(np.sort, 0), (np.sum, 1), (lambda v: v[[0, -1]], 2), (lambda v: np.outer(v, v), 1),
                       (lambda v: v.mean(), -1)]:
        got = xa.apply_along_axis(func, axis, x)
        expected = np.apply_along_axis(func, axis, a)
        assert got.shape == expected.shape
        np.testing.assert_allclose(got.compute(), expected)
    assert isinstance(np.apply_along_axis(np.sum, 1, x), xa.Array)
    with pytest.raises(np.exceptions.AxisError):
        xa.apply_along_axis(np.sum, 3, x)


def test_apply_gufunc_takes_square_signatures_as_numpy():
    rng = np.random.default_rng(0)
    a = rng.normal(size=(5, 3, 3))
    a = a @ a.transpose(0, 2, 1) + 3 * np.eye(3)
    x = xa.from_array(a, chunks=(2, -1, -1))
    np.testing.assert_allclose(xa.apply_gufunc(np.linalg.inv, "(m,m)->(m,m)", x, output_dtypes=float).compute(),
                               np.linalg.inv(a))
    np.testing.assert_allclose(xa.apply_gufunc(np.linalg.det, "(m,m)->()", x, output_dtypes=float).compute(),
                               np.linalg.det(a))
    v = xa.from_array(a[:, 0], chunks=(2, -1))
    outer = xa.apply_gufunc(lambda u: u[..., :, None] * u[..., None, :], "(m)->(m,m)", v, output_dtypes=float)
    np.testing.assert_allclose(outer.compute(), a[:, 0, :, None] * a[:, 0, None, :])
    w, vectors = xa.apply_gufunc(np.linalg.eigh, "(m,m)->(m),(m,m)", x, output_dtypes=(float, float))
    np.testing.assert_allclose(w.compute(), np.linalg.eigh(a)[0])
    assert vectors.shape == (5, 3, 3)
