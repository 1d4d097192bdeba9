"""xsched.array's ``linalg.lstsq``, ``diff``, ``ediff1d`` and ``gradient`` against NumPy on
small inputs cut several ways (one chunk, uneven chunks, chunks of 2 and 1), through NumPy's
own functions too, and xarray's ``polyfit`` and ``differentiate`` on xsched-backed data."""

import numpy as np
import pytest

import xsched.array as xa

ROW_CHUNKS = [-1, (4, 4, 3), 2]
AXIS_CHUNKS = [-1, (3, 4), 2, 1]


def _unknown(values: np.ndarray, chunks) -> xa.Array:
    """``values`` (all positive) with blocks of unknown length along axis 0 (a mask's result)."""
    x = xa.from_array(values, chunks=chunks)
    out = x[x > 0] if x.ndim == 1 else x[(x > 0).all(axis=1)]
    assert all(c != c for c in out.chunks[0])
    return out


def _check_same(got, expected, rtol: float) -> None:
    values = got.compute()
    expected = np.asarray(expected)
    assert values.shape == expected.shape and values.dtype == expected.dtype, (values, expected)
    np.testing.assert_allclose(values, expected, rtol=rtol, atol=rtol * 1e-3)


# --------------------------------------------------------------------------- lstsq


def _system(dtype: str, k: int | None, m: int = 11, n: int = 3) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(5)
    a, b = rng.normal(size=(m, n)) * 10, rng.normal(size=(m, k or 1)) * 10
    if dtype.startswith("complex"):
        a, b = a + 1j * rng.normal(size=a.shape), b + 1j * rng.normal(size=b.shape)
    return a.astype(dtype), (b if k else b[:, 0]).astype(dtype)


@pytest.mark.parametrize("chunks", ROW_CHUNKS)
@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "complex128", "complex64"])
@pytest.mark.parametrize("k", [None, 2])
def test_lstsq_matches_numpy(chunks, dtype, k):
    a, b = _system(dtype, k)
    got = xa.linalg.lstsq(xa.from_array(a, chunks=(chunks, -1)), xa.from_array(b, chunks=(chunks,) + (1,) * (b.ndim - 1)))
    assert all(isinstance(g, xa.Array) for g in got) and got[2].shape == ()
    rtol = 1e-4 if dtype in ("float32", "complex64") else 1e-10
    for g, e in zip(got, np.linalg.lstsq(a, b)):
        _check_same(g, e, rtol)


@pytest.mark.parametrize("chunks", ROW_CHUNKS)
def test_lstsq_rank_deficient_gives_numpys_least_norm_solution(chunks):
    a = np.ones((11, 3))
    a[:, 1] = np.arange(11.0)
    a[:, 2] = a[:, 0] + a[:, 1]  # rank 2
    b = np.arange(11.0) ** 2
    x, residuals, rank, s = xa.linalg.lstsq(xa.from_array(a, chunks=(chunks, -1)), b)
    ex, eres, erank, es = np.linalg.lstsq(a, b)
    np.testing.assert_allclose(x.compute(), ex, rtol=1e-10)
    assert rank.compute() == erank == 2
    np.testing.assert_allclose(s.compute(), es, atol=1e-10)
    # (documented: NumPy gives no residuals here; xsched's shape is fixed before the rank is known)
    assert eres.shape == (0,) and residuals.shape == (1,)
    np.testing.assert_allclose(residuals.compute(), [np.sum((a @ ex - b) ** 2)], rtol=1e-10)


@pytest.mark.parametrize("rcond", [None, -1, 0.0, 0.5])
def test_lstsq_rcond_cuts_singular_values_as_numpy(rcond):
    a, b = _system("float64", 2)
    got = xa.linalg.lstsq(xa.from_array(a, chunks=(4, -1)), b, rcond=rcond)
    expected = np.linalg.lstsq(a, b, rcond=rcond)
    for i in (0, 2, 3):
        _check_same(got[i], expected[i], 1e-10)


def test_lstsq_of_a_square_matrix_has_no_residuals():
    a, b = _system("float64", 2, m=3)
    x, residuals, rank, s = xa.linalg.lstsq(xa.from_array(a, chunks=(2, -1)), b)
    assert residuals.shape == (0,) and residuals.compute().dtype == np.float64
    np.testing.assert_allclose(x.compute(), np.linalg.lstsq(a, b)[0], rtol=1e-8)


def test_lstsq_of_a_zero_matrix_is_zero_with_rank_zero():
    x, _, rank, s = xa.linalg.lstsq(xa.from_array(np.zeros((5, 2)), chunks=(2, -1)), np.ones(5))
    np.testing.assert_array_equal(x.compute(), np.zeros(2))
    assert int(rank) == 0


def test_np_linalg_lstsq_runs_it_cutting_a_numpy_a_as_b():
    a, b = _system("float64", 4)
    got = np.linalg.lstsq(a, xa.from_array(b, chunks=(3, 3)), rcond=None)
    assert all(isinstance(g, xa.Array) for g in got)
    assert got[0].chunks == ((3,), (3, 1)) and got[1].chunks == ((3, 1),)
    for g, e in zip(got, np.linalg.lstsq(a, b)):
        _check_same(g, e, 1e-10)


def test_lstsq_rechunks_b_to_the_rows_of_a():
    a, b = _system("float64", 2)
    got = xa.linalg.lstsq(xa.from_array(a, chunks=(4, -1)), xa.from_array(b, chunks=(5, 2)))
    assert got[0].chunks == ((3,), (2,))
    _check_same(got[0], np.linalg.lstsq(a, b)[0], 1e-10)


def _failing(block):
    raise RuntimeError("b was read")


def test_lstsq_rank_and_singular_values_do_not_read_b():
    a, b = _system("float64", 2)
    lazy_b = xa.from_array(b, chunks=(4, 2)).map_blocks(_failing, dtype=float)
    _, _, rank, s = xa.linalg.lstsq(xa.from_array(a, chunks=(4, -1)), lazy_b)
    assert int(rank) == 3
    np.testing.assert_allclose(s.compute(), np.linalg.svd(a, compute_uv=False), rtol=1e-10)


@pytest.mark.parametrize("a_shape, b_shape, a_chunks, error, match", [
    ((9, 3), (8,), (4, 3), np.linalg.LinAlgError, r"\(9, 3\).*\(8,\)"),
    ((9, 3), (8, 2), (4, 3), np.linalg.LinAlgError, r"\(9, 3\).*\(8, 2\)"),
    ((3, 9), (3,), (2, 9), ValueError, "at least as many rows as columns"),
    ((9, 3), (9,), (4, 2), ValueError, r"rechunk\(\{1: 3\}\)"),
    ((9, 3), (9, 2, 2), (4, 3), np.linalg.LinAlgError, "b 1-d or 2-d"),
    ((9,), (9,), (4,), np.linalg.LinAlgError, "a must be 2-d"),
])
def test_lstsq_fails_when_built(a_shape, b_shape, a_chunks, error, match):
    a = xa.from_array(np.ones(a_shape), chunks=a_chunks)
    with pytest.raises(error, match=match):
        xa.linalg.lstsq(a, np.ones(b_shape))


def test_lstsq_refuses_half_precision_and_unknown_lengths_when_built():
    with pytest.raises(TypeError, match="float16 is unsupported"):
        xa.linalg.lstsq(xa.from_array(np.ones((4, 2), "f2"), chunks=(2, 2)), np.ones(4))
    with pytest.raises(ValueError, match="compute_chunk_sizes"):
        xa.linalg.lstsq(_unknown(np.ones((6, 2)), (3, 2)), np.ones(6))


# --------------------------------------------------------------------------- diff


@pytest.mark.parametrize("chunks", AXIS_CHUNKS)
@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "uint8", "bool", "complex128"])
def test_diff_matches_numpy(chunks, dtype):
    v = np.random.default_rng(2).integers(-20, 20, size=(7, 5)).astype(dtype)
    x = xa.from_array(v, chunks=(chunks, 2))
    for n in (0, 1, 2, 3):
        for axis in (0, 1, -1):
            got, expected = np.diff(x, n, axis=axis), np.diff(v, n, axis=axis)
            assert isinstance(got, xa.Array) and got.shape == expected.shape
            values = got.compute()
            assert values.dtype == expected.dtype
            np.testing.assert_array_equal(values, expected)


@pytest.mark.parametrize("chunks", [1, 2, ((1, 3, 1),)])
@pytest.mark.parametrize("n", [3, 4, 5, 9])
def test_diff_of_an_order_spanning_blocks_or_the_whole_axis(chunks, n):
    v = np.array([3.0, 1.0, 4.0, 1.0, 5.0])
    got = xa.diff(xa.from_array(v, chunks=chunks), n)
    assert got.shape == np.diff(v, n).shape
    np.testing.assert_array_equal(got.compute(), np.diff(v, n))


def test_diff_blocks_keep_the_input_blocks_but_the_last():
    x = xa.from_array(np.arange(8.0), chunks=3)
    assert xa.diff(x).chunks == ((3, 3, 1),)
    assert xa.diff(x, 3).chunks == ((3, 2),)
    assert xa.diff(xa.from_array(np.arange(8.0), chunks=((3, 4, 1),)), 2).chunks == ((3, 3),)


@pytest.mark.parametrize("chunks", AXIS_CHUNKS)
@pytest.mark.parametrize("prepend, append", [
    (0, None), (None, 5), (2.5, -1), (np.ones((5, 1)), None), (None, np.arange(10).reshape(5, 2)),
    ([[1]] * 5, 0),
])
def test_diff_prepend_append_as_numpy(chunks, prepend, append):
    v = np.arange(35).reshape(5, 7) ** 2
    kw = {k: w for k, w in (("prepend", prepend), ("append", append)) if w is not None}
    got, expected = np.diff(xa.from_array(v, chunks=(2, chunks)), 2, **kw), np.diff(v, 2, **kw)
    values = got.compute()
    assert values.dtype == expected.dtype
    np.testing.assert_array_equal(values, expected)


def test_diff_prepend_append_as_xsched_arrays():
    v = np.array([3, 1, 4, 1, 5])
    x = xa.from_array(v, chunks=2)
    got = xa.diff(x, prepend=xa.asarray(np.int64(7)), append=xa.from_array(np.array([0, 2]), chunks=1))
    np.testing.assert_array_equal(got.compute(), np.diff(v, prepend=7, append=[0, 2]))


def test_diff_zero_order_gives_the_array_back():
    x = xa.from_array(np.arange(4), chunks=2)
    assert np.diff(x, 0) is x


@pytest.mark.parametrize("call, error, match", [
    (lambda x: xa.diff(x[0]), ValueError, "at least one dimensional"),
    (lambda x: xa.diff(x, -1), ValueError, "order must be non-negative but got -1"),
    (lambda x: xa.diff(x, axis=1), np.exceptions.AxisError, "axis 1 is out of bounds"),
    (lambda x: xa.diff(x, 1.5), TypeError, "integer"),
    (lambda x: xa.diff(x.astype(str)), TypeError, "subtract"),
    (lambda x: xa.diff(_unknown(np.arange(1, 7), 3)), ValueError, "compute_chunk_sizes"),
])
def test_diff_fails_when_built(call, error, match):
    with pytest.raises(error, match=match):
        call(xa.from_array(np.arange(6), chunks=2))


# --------------------------------------------------------------------------- ediff1d


@pytest.mark.parametrize("chunks", AXIS_CHUNKS)
@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "complex128"])
@pytest.mark.parametrize("ends", [{}, {"to_begin": 3}, {"to_end": [1, 2]}, {"to_begin": np.arange(3), "to_end": 9},
                                  {"to_begin": [[1], [2]]}])
def test_ediff1d_matches_numpy(chunks, dtype, ends):
    v = (np.arange(35).reshape(7, 5) ** 2 % 11).astype(dtype)
    got, expected = np.ediff1d(xa.from_array(v, chunks=(chunks, 2)), **ends), np.ediff1d(v, **ends)
    assert isinstance(got, xa.Array)
    values = got.compute()
    assert values.dtype == expected.dtype
    np.testing.assert_array_equal(values, expected)


@pytest.mark.parametrize("values", [np.array([]), np.array([4.0])])
def test_ediff1d_of_short_arrays(values):
    x = xa.from_array(values, chunks=1)
    np.testing.assert_array_equal(xa.ediff1d(x).compute(), np.ediff1d(values))
    np.testing.assert_array_equal(xa.ediff1d(x, to_begin=1, to_end=[2, 3]).compute(),
                                  np.ediff1d(values, to_begin=1, to_end=[2, 3]))


def test_ediff1d_fails_when_built_as_numpy():
    x = xa.from_array(np.arange(6), chunks=2)
    with pytest.raises(TypeError, match="`to_begin` must be compatible"):
        xa.ediff1d(x, to_begin=1.5)
    with pytest.raises(TypeError, match="boolean subtract"):
        xa.ediff1d(x > 2)
    with pytest.raises(ValueError, match="compute_chunk_sizes"):
        xa.ediff1d(_unknown(np.arange(1, 7), 3))


# --------------------------------------------------------------------------- gradient


@pytest.mark.parametrize("chunks", [-1, (3, 4), (2, 2, 3), (1, 5, 1)])
@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "complex128"])
@pytest.mark.parametrize("edge_order", [1, 2])
def test_gradient_matches_numpy(chunks, dtype, edge_order):
    rng = np.random.default_rng(3)
    v = (rng.normal(size=(7, 6)) * 10).astype(dtype)
    x = xa.from_array(v, chunks=(chunks, 3))
    coordinates = np.cumsum(rng.random(7))
    rtol = 1e-5 if dtype == "float32" else 1e-12
    if edge_order == 2 and min(np.atleast_1d(chunks)) < 2 and chunks != -1:
        with pytest.raises(ValueError, match="rechunk"):
            np.gradient(x, edge_order=2)
        return
    for args, kw in [((), {}), ((0.5,), {}), ((2.0, 3), {}), ((coordinates,), {"axis": 0}),
                     ((coordinates, np.arange(6) ** 2), {}), ((), {"axis": 1}), ((), {"axis": (1, 0)}),
                     ((xa.from_array(coordinates, chunks=2), 3.0), {})]:
        plain = [np.asarray(a) if isinstance(a, xa.Array) else a for a in args]
        got, expected = np.gradient(x, *args, edge_order=edge_order, **kw), np.gradient(v, *plain,
                                                                                        edge_order=edge_order, **kw)
        assert type(got) is type(expected) or isinstance(got, xa.Array) and isinstance(expected, np.ndarray)
        for g, e in zip(*((got, expected) if isinstance(expected, tuple) else ((got,), (expected,)))):
            _check_same(g, e, rtol)


def test_gradient_of_a_vector_is_one_array_with_its_blocks():
    v = np.array([1.0, 2.0, 4.0, 7.0, 11.0, 16.0])
    got = xa.gradient(xa.from_array(v, chunks=2), edge_order=2)
    assert isinstance(got, xa.Array) and got.chunks == ((2, 2, 2),)
    np.testing.assert_allclose(got.compute(), np.gradient(v, edge_order=2))


@pytest.mark.parametrize("call, error, match", [
    (lambda x: xa.gradient(x, edge_order=3), ValueError, "'edge_order' greater than 2 not supported"),
    (lambda x: xa.gradient(x, 1.0, 2.0), TypeError, "invalid number of arguments"),
    (lambda x: xa.gradient(x, np.ones(3)), ValueError, "must match the length"),
    (lambda x: xa.gradient(x, np.ones((2, 2))), ValueError, "scalars or 1d"),
    (lambda x: xa.gradient(x[:2], edge_order=2), ValueError, "at least \\(edge_order \\+ 1\\) elements"),
    (lambda x: xa.gradient(x, axis=2), np.exceptions.AxisError, "axis 2 is out of bounds"),
    (lambda x: xa.gradient(x > 2), TypeError, "boolean subtract"),
    (lambda x: xa.gradient(x.rechunk(((1, 4, 1),)), edge_order=2), ValueError,
     r"first and last need at least 2 cells.*rechunk\(\{0: 4\}\)"),
    (lambda x: xa.gradient(x.rechunk(((3, 0, 3),))), ValueError, "none may be empty"),
    (lambda x: xa.gradient(_unknown(np.arange(1, 7), 3)), ValueError, "compute_chunk_sizes"),
])
def test_gradient_fails_when_built(call, error, match):
    with pytest.raises(error, match=match):
        call(xa.from_array(np.arange(6.0), chunks=2))


# --------------------------------------------------------------------------- xarray


@pytest.fixture
def xr():
    return pytest.importorskip("xarray")


@pytest.mark.parametrize("deg", [1, 2])
@pytest.mark.parametrize("full", [False, True])
def test_xarray_polyfit_on_xsched_data_matches_numpy(xr, deg, full):
    rng = np.random.default_rng(4)
    x = np.linspace(0.0, 3.0, 20)
    da = xr.DataArray(rng.normal(size=(20, 5)) + x[:, None] ** 2, dims=("x", "y"), coords={"x": x})
    got = da.chunk({"x": -1, "y": 2}, chunked_array_type="xsched").polyfit("x", deg, full=full)
    assert isinstance(got.polyfit_coefficients.data, xa.Array)
    xr.testing.assert_allclose(got.compute(), da.polyfit("x", deg, full=full))


@pytest.mark.parametrize("deg", [1, 2])
def test_xarray_polyfit_with_nans_not_skipped_matches_numpy(xr, deg):
    rng = np.random.default_rng(4)
    x = np.linspace(0.0, 3.0, 20)
    values = rng.normal(size=(20, 5))
    values[3, 1] = np.nan
    da = xr.DataArray(values, dims=("x", "y"), coords={"x": x})
    got = da.chunk({"x": -1, "y": 2}, chunked_array_type="xsched").polyfit("x", deg, skipna=False, full=True)
    xr.testing.assert_allclose(got.compute(), da.polyfit("x", deg, skipna=False, full=True))


@pytest.mark.parametrize("chunks", [{"x": -1}, {"x": 5}, {"x": 2, "y": 3}])
@pytest.mark.parametrize("edge_order", [1, 2])
def test_xarray_differentiate_on_xsched_data_matches_numpy(xr, chunks, edge_order):
    rng = np.random.default_rng(6)
    da = xr.DataArray(rng.normal(size=(12, 4)), dims=("x", "y"), coords={"x": np.cumsum(rng.random(12))})
    got = da.chunk(chunks, chunked_array_type="xsched").differentiate("x", edge_order=edge_order)
    assert isinstance(got.data, xa.Array)
    xr.testing.assert_allclose(got.compute(), da.differentiate("x", edge_order=edge_order))


def test_xarray_differentiate_along_time_matches_numpy(xr):
    times = np.datetime64("2020-01-01") + np.arange(8) * np.timedelta64(6, "h")
    da = xr.DataArray(np.random.default_rng(7).normal(size=8), dims="time", coords={"time": times})
    got = da.chunk({"time": 3}, chunked_array_type="xsched").differentiate("time")
    xr.testing.assert_allclose(got.compute(), da.differentiate("time"))
