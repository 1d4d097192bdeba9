"""Review of the array functions against NumPy: unknown lengths after a mask, dtypes kept
as NumPy keeps them, 0-d blocks, NaNs among the distinct values."""

import numpy as np
import pytest

import xsched.array as xa

VALUES = np.array([3.0, -1.0, 2.0, 5.0, -2.0, 1.0, 0.5, 4.0])


def _masked(chunks):
    x = xa.from_array(VALUES, chunks=chunks)
    return x[x > 0], VALUES[VALUES > 0]


@pytest.mark.parametrize("chunks", [8, 4, 3])
def test_histogram_weights_of_unknown_lengths(chunks):
    m, expected = _masked(chunks)
    counts, edges = xa.histogram(m, bins=[0, 1, 2, 6], weights=m)
    np.testing.assert_array_equal(counts.compute(),
                                  np.histogram(expected, bins=[0, 1, 2, 6], weights=expected)[0])


@pytest.mark.parametrize("chunks", [8, 4, 3])
def test_bincount_weights_of_unknown_lengths(chunks):
    m, expected = _masked(chunks)
    k = m.astype(int)
    np.testing.assert_array_equal(xa.bincount(k, weights=m).compute(),
                                  np.bincount(expected.astype(int), weights=expected))


def test_histogram2d_of_one_masks_results_as_numpy():
    m, expected = _masked(3)
    bins = [[0, 2, 6], [0, 3, 6]]
    np.testing.assert_array_equal(xa.histogram2d(m, m * 2, bins=bins)[0].compute(),
                                  np.histogram2d(expected, expected * 2, bins=bins)[0])


@pytest.mark.parametrize("chunks", [8, 4, 3])
def test_average_weights_of_unknown_lengths(chunks):
    m, expected = _masked(chunks)
    avg, total = xa.average(m, weights=m * 2, returned=True)
    np.testing.assert_allclose(avg.compute(), np.average(expected, weights=expected * 2))
    np.testing.assert_allclose(total.compute(), np.sum(expected * 2))


@pytest.mark.parametrize("chunks", [8, 4, 3])
def test_piecewise_of_unknown_lengths(chunks):
    m, expected = _masked(chunks)
    got = xa.piecewise(m, [m > 2], [lambda v: v * 2, 0])
    np.testing.assert_array_equal(got.compute(), np.piecewise(expected, [expected > 2], [lambda v: v * 2, 0]))


def test_delete_of_unknown_lengths_names_the_way_out():
    m, _ = _masked(3)
    with pytest.raises(ValueError, match="delete needs the lengths"):
        xa.delete(m, 0)


@pytest.mark.parametrize("function, q", [(xa.quantile, 0.4), (xa.nanquantile, 0.4),
                                         (xa.percentile, 40), (xa.nanpercentile, 40)])
@pytest.mark.parametrize("chunks", [1, 2, 3])
def test_python_number_q_keeps_float32(function, q, chunks):
    a = np.array([[1.0, 2.0, 4.0], [0.0, 8.0, 3.0], [5.0, 5.0, 1.0]], np.float32)
    got = function(xa.from_array(a, chunks=(chunks, 3)), q, axis=1)
    expected = getattr(np, function.__name__)(a, q, axis=1)
    assert got.dtype == expected.dtype
    np.testing.assert_array_equal(got.compute(), expected, strict=True)


@pytest.mark.parametrize("chunks", [1, 2, 4])
def test_cov_one_row_by_columns(chunks):
    a = np.array([[1.0, 4.0, 2.0, 8.0]])  # (rowvar=False: four variables of one observation)
    x = xa.from_array(a, chunks=(1, chunks))
    np.testing.assert_array_equal(xa.cov(x, rowvar=False, bias=True).compute(),
                                  np.cov(a, rowvar=False, bias=True), strict=True)
    y = np.array([[2.0, 1.0, 0.0, 3.0]])  # (a y of one row is one variable, as in NumPy)
    np.testing.assert_allclose(xa.cov(x.T, y, rowvar=False).compute(), np.cov(a.T, y, rowvar=False))


@pytest.mark.parametrize("chunks", [1, 2])
def test_cov_of_no_variables(chunks):
    a = np.ones((3, 0))
    got = xa.cov(xa.from_array(a, chunks=chunks), rowvar=False)
    np.testing.assert_array_equal(got.compute(), np.cov(a, rowvar=False), strict=True)


@pytest.mark.parametrize("order", [2, 3])
@pytest.mark.parametrize("chunks", [1, 2, 3])
def test_moment_computes_in_the_dtype_it_declares(order, chunks):
    x = xa.from_array(np.array([1.0, 2.0, 4.0], np.float16), chunks=chunks)
    for dtype, expected in [(None, np.float16), ("f4", np.float32)]:
        got = xa.moment(x, order, dtype=dtype)
        assert got.dtype == expected
        assert got.compute().dtype == expected


@pytest.mark.parametrize("chunks", [1, 2, 5])
def test_select_default_cast_as_numpy(chunks):
    a = np.array([1, 5, 0, 7, 2], np.uint64)
    x = xa.from_array(a, chunks=chunks)
    np.testing.assert_array_equal(xa.select([x > 1], [x], default=-1).compute(),
                                  np.select([a > 1], [a], default=-1), strict=True)


@pytest.mark.parametrize("dtype", ["u4", "i4", "f4"])
def test_view_of_0d_stays_0d(dtype):
    a = np.array(1.5, np.float32)
    got = xa.from_array(a).view(dtype)
    np.testing.assert_array_equal(got.compute(), a.view(dtype), strict=True)


@pytest.mark.parametrize("chunks", [1, 2, 3, 6])
@pytest.mark.parametrize("split_every", [2, None])
def test_unique_all_indices_of_several_nans(chunks, split_every):
    a = np.array([1.0, np.nan, np.nan, 0.0, 1.0, np.nan])
    got = xa.unique_all(xa.from_array(a, chunks=chunks), split_every=split_every)
    np.testing.assert_array_equal(got.indices.compute(), np.unique_all(a).indices)


@pytest.mark.parametrize("chunks", [(1, 1), (2, 1), (3, 2)])
def test_unique_all_indices_of_nans_in_2d(chunks):
    b = np.array([[np.nan, 1.0], [2.0, np.nan], [np.nan, np.nan]])
    got = xa.unique_all(xa.from_array(b, chunks=chunks))
    np.testing.assert_array_equal(got.indices.compute(), np.unique_all(b).indices)


def test_nonzero_of_a_0d_array_fails_as_numpy():
    with pytest.raises(ValueError, match="0d arrays"):
        np.nonzero(np.array(5))
    with pytest.raises(ValueError, match="0d arrays"):
        xa.nonzero(xa.asarray(5))


def test_cov_and_corrcoef_count_observations_a_mask_left_unknown():
    a = np.arange(12.0).reshape(6, 2) ** 1.5
    x = xa.from_array(a, chunks=(3, 2))
    picked, want = x[x[:, 0] > 1], a[a[:, 0] > 1]
    for ddof in (None, 0, 2):
        np.testing.assert_allclose(xa.cov(picked, rowvar=False, ddof=ddof).compute(),
                                   np.cov(want, rowvar=False, ddof=ddof))
    np.testing.assert_allclose(xa.corrcoef(picked.T).compute(), np.corrcoef(want.T))
    with pytest.raises(ValueError, match="cov with fweights needs the number of observations"):
        xa.cov(picked, rowvar=False, fweights=np.ones(4, int))


def test_cumulative_functions_take_dasks_scan_method():
    data = np.arange(1.0, 13.0).reshape(3, 4)
    x = xa.from_array(data, chunks=2)
    for method in ("sequential", "blelloch"):
        np.testing.assert_array_equal(xa.cumsum(x, axis=1, method=method).compute(), np.cumsum(data, axis=1))
        np.testing.assert_array_equal(x.cumprod(0, method=method).compute(), np.cumprod(data, axis=0))
        np.testing.assert_array_equal(xa.nancumsum(x, method=method).compute(), np.nancumsum(data))
    with pytest.raises(ValueError, match="method must be 'sequential' or 'blelloch'"):
        xa.cumsum(x, method="parallel")


@pytest.mark.parametrize("op", [lambda x: x, lambda x: x.T, lambda x: x[::2], lambda x: x.rechunk(3),
                                lambda x: x.reshape(12), lambda x: xa.stack([x, x]), lambda x: x.sum(axis=0)])
def test_a_non_native_byte_order_computes_as_declared(op):
    """NumPy's joins turn '>f8' parts native; the blocks joined into the result keep the
    array's declared dtype (it computed float64 while saying >f8)."""
    x = xa.from_array(np.arange(12, dtype=">f8").reshape(3, 4), chunks=2)
    y = op(x)
    assert y.compute().dtype.str == y.dtype.str
    native = xa.from_array(np.arange(12, dtype="<f8").reshape(3, 4), chunks=2)
    np.testing.assert_array_equal(y.compute(), op(native).compute())
