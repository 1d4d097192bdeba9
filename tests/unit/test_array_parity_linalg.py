"""xsched.array's products, factorizations, fft, sets, sorting, scans, take and gufuncs
against NumPy on small inputs cut several ways (one chunk, uneven, size 1, unknown)."""

import numpy as np
import pytest

import xsched.array as xa

CHUNKS = [-1, 2, 1]


def _unknown(values: np.ndarray, chunks) -> xa.Array:
    """``values`` (1-d, all positive) as an array of blocks of unknown length (a mask's result)."""
    x = xa.from_array(values, chunks=chunks)
    out = x[x > 0]
    assert all(c != c for c in out.chunks[0])
    return out


# --------------------------------------------------------------------------- fft


@pytest.mark.parametrize("chunks", CHUNKS)
def test_fft_invalid_norm_fails_when_built(chunks):
    x = xa.from_array(np.arange(8.0).reshape(2, 4), chunks=(chunks, 4))
    with pytest.raises(ValueError, match="norm"):
        xa.fft.fft(x, norm="bad")


def test_fft2_axes_none_transforms_every_axis_as_numpy():
    t = np.arange(24.0).reshape(2, 3, 4)
    x = xa.from_array(t, chunks=-1)
    np.testing.assert_allclose(xa.fft.fft2(x, axes=None).compute(), np.fft.fft2(t, axes=None))
    np.testing.assert_allclose(xa.fft.fft2(x).compute(), np.fft.fft2(t))
    np.testing.assert_allclose(xa.fft.rfft2(x, s=(5,), axes=None).compute(),
                               np.fft.rfft2(t, s=(5,), axes=(-1,)))


@pytest.mark.parametrize("func", ["fftn", "rfftn", "ifft2"])
def test_fftn_more_lengths_than_axes_fails_as_numpy(func):
    m = np.arange(12.0).reshape(3, 4)  # (NumPy: axes=None with s are the last len(s) axes)
    with pytest.raises(np.exceptions.AxisError):
        getattr(xa.fft, func)(xa.from_array(m, chunks=-1), s=(3, 4, 5), axes=None)


def test_fftn_length_minus_one_means_the_whole_axis():
    m = np.arange(12.0).reshape(3, 4)
    got = xa.fft.fftn(xa.from_array(m, chunks=-1), s=(-1, 2), axes=(0, 1))
    np.testing.assert_allclose(got.compute(), np.fft.fftn(m, s=(-1, 2), axes=(0, 1)))


@pytest.mark.parametrize("name", ["fft", "rfft", "irfft", "ihfft"])
@pytest.mark.parametrize("n", [None, 4])
def test_fft_of_an_axis_of_unknown_length(name, n):
    v = np.array([3.0, 1.0, 4.0, 1.0, 5.0, 9.0])
    x = _unknown(v, -1)
    got = getattr(xa.fft, name)(x, n=n)
    np.testing.assert_allclose(got.compute(), getattr(np.fft, name)(v, n=n))


# --------------------------------------------------------------------------- products


V = np.array([3.0, 1.0, 4.0, 1.0, 5.0, 9.0, 2.0])


@pytest.mark.parametrize("chunks", [-1, 3, 1])
@pytest.mark.parametrize("op", [
    lambda a, b: xa.dot(a, b), lambda a, b: a @ b, lambda a, b: xa.vdot(a, b),
    lambda a, b: xa.inner(a, b), lambda a, b: xa.tensordot(a, b, axes=1),
    lambda a, b: xa.einsum("i,i", a, b), lambda a, b: xa.outer(a, b),
    lambda a, b: xa.einsum("i,j->ij", a, b)])
def test_products_of_the_same_blocks_of_unknown_length(chunks, op):
    x = _unknown(V, chunks)
    np.testing.assert_allclose(np.asarray(op(x, x).compute()), op(V, V))


@pytest.mark.parametrize("op", [xa.dot, xa.matmul, xa.inner,
                                lambda a, b: xa.einsum("i,i", a, b)])
def test_products_of_unknown_and_known_lengths_fail_when_built(op):
    with pytest.raises(ValueError, match="compute_chunk_sizes"):
        op(_unknown(V, 3), xa.from_array(V, chunks=3))


# --------------------------------------------------------------------------- qr, svd


def _unknown_rows(values: np.ndarray, rows: int) -> xa.Array:
    """``values`` cut every ``rows`` rows, their lengths unknown (as after a mask)."""
    x = xa.from_array(values, chunks=(rows, values.shape[1]))
    return xa.Array(x._graph, x.name, ((np.nan,) * x.numblocks[0], x.chunks[1]), x.dtype)


@pytest.mark.parametrize("rows", [9, 4, 2, 1])
def test_qr_and_svd_of_rows_of_unknown_length(rows):
    a = np.random.default_rng(0).normal(size=(9, 3))
    x = _unknown_rows(a, rows)
    q, r = xa.linalg.qr(x)
    np.testing.assert_allclose((q @ r).compute(), a, atol=1e-12)
    u, s, vt = xa.linalg.svd(x)
    np.testing.assert_allclose(s.compute(), np.linalg.svd(a, compute_uv=False))
    np.testing.assert_allclose((u @ np.diag(s.compute()) @ vt).compute(), a, atol=1e-12)


# --------------------------------------------------------------------------- gufunc, take


def test_apply_gufunc_core_dimension_of_unknown_length_in_one_block():
    x = _unknown(V, -1)
    got = xa.apply_gufunc(lambda v: v.sum(axis=-1), "(i)->()", x)
    np.testing.assert_allclose(got.compute(), V.sum())


@pytest.mark.parametrize("chunks", [(3, 4), (2, 3), 1])
def test_apply_gufunc_core_dimension_cut_fails_when_built_saying_rechunk(chunks):
    x = xa.from_array(np.ones((3, 4)), chunks=chunks)
    with pytest.raises(ValueError, match=r"rechunk"):
        xa.apply_gufunc(np.matmul, "(m,n),(n,p)->(m,p)", x, xa.from_array(np.ones((4, 2)), chunks=(2, 2)))


@pytest.mark.parametrize("chunks", [(3, 4), (2, 3), 1])
@pytest.mark.parametrize("axis", [None, 0, 1, -1])
@pytest.mark.parametrize("index", [2, -1, np.int64(0)])
def test_take_one_position_drops_the_axis(chunks, axis, index):
    m = np.arange(12).reshape(3, 4)
    got = xa.take(xa.from_array(m, chunks=chunks), index, axis=axis)
    np.testing.assert_array_equal(np.asarray(got.compute()), np.take(m, index, axis=axis))


def test_fft_wrap_runs_another_library_s_transform_block_by_block():
    scipy_fft = pytest.importorskip("scipy.fft")
    fftpack = pytest.importorskip("scipy.fftpack")
    v = np.random.default_rng(1).random((4, 16))
    x = xa.from_array(v, chunks=(2, 16))
    np.testing.assert_allclose(xa.fft.fft_wrap(scipy_fft.fft)(x, norm="ortho").compute(), scipy_fft.fft(v, norm="ortho"))
    np.testing.assert_allclose(xa.fft.fft_wrap(fftpack.fft)(x).compute(), fftpack.fft(v))  # (takes no norm)
    packed = xa.fft.fft_wrap(fftpack.rfft, kind="fft")(x)
    assert packed.dtype == np.float64 and packed.chunks == x.chunks
    np.testing.assert_allclose(packed.compute(), fftpack.rfft(v))
    whole = xa.from_array(v, chunks=-1)
    np.testing.assert_allclose(xa.fft.fft_wrap(scipy_fft.rfft2, dtype=complex)(whole).compute(), scipy_fft.rfft2(v))
    with pytest.raises(ValueError, match="kind 'sum' is not one of NumPy's transforms"):
        xa.fft.fft_wrap(np.sum)
    with pytest.raises(ValueError, match="axis 1 is cut into 2 chunks"):
        xa.fft.fft_wrap(scipy_fft.fft)(xa.from_array(v, chunks=8))


@pytest.mark.parametrize("shape, chunks", [((60, 5), (20, 5)), ((4, 30), (4, 10))])
def test_qr_mode_r_and_svd_without_uv_give_numpys_single_results(shape, chunks):
    data = np.random.default_rng(3).normal(size=shape)
    x = xa.from_array(data, chunks=chunks)
    r = xa.linalg.qr(x, mode="r")
    np.testing.assert_allclose(np.abs(r.compute()), np.abs(np.linalg.qr(data, mode="r")), atol=1e-10)
    for s in (xa.linalg.svd(x, compute_uv=False), np.linalg.svd(x, full_matrices=False, compute_uv=False)):
        np.testing.assert_allclose(s.compute(), np.linalg.svd(data, compute_uv=False))
    with pytest.raises(ValueError, match="mode must be 'reduced', 'complete' or 'r'"):
        xa.linalg.qr(x, mode="raw")


@pytest.mark.skipif(not isinstance(getattr(np, "matvec", None), np.ufunc), reason="NumPy 2.2's np.matvec")
@pytest.mark.parametrize("a_shape, v_shape, a_chunks", [((3, 4), (4,), 2), ((2, 3, 4), (4,), (1, 2, 3)),
                                                        ((2, 3, 4), (2, 1, 4), 1), ((3, 4), (5, 1, 4), (3, 2))])
def test_matvec_and_vecmat_are_numpys_with_stacks_broadcasting(a_shape, v_shape, a_chunks):
    rng = np.random.default_rng(0)
    a, v = rng.random(a_shape), rng.random(v_shape)
    x = xa.from_array(a, chunks=a_chunks)
    np.testing.assert_allclose(np.matvec(x, v).compute(), np.matvec(a, v))
    np.testing.assert_allclose(np.matvec(x, xa.from_array(v, chunks=2)).compute(), np.matvec(a, v))
    w = rng.random(v_shape[:-1] + (a_shape[-2],)) + 1j  # (vecmat conjugates its vectors)
    got = np.vecmat(xa.from_array(w, chunks=2), x)
    assert got.dtype == np.vecmat(w, a).dtype
    np.testing.assert_allclose(got.compute(), np.vecmat(w, a))


@pytest.mark.skipif(not isinstance(getattr(np, "matvec", None), np.ufunc), reason="NumPy 2.2's np.matvec")
def test_matvec_of_lengths_that_do_not_match_is_refused_when_built():
    x = xa.from_array(np.ones((2, 3, 4)), chunks=2)
    with pytest.raises(ValueError, match=r"^matvec: the matrices have 4 columns but the vectors 3 values"):
        np.matvec(x, np.ones(3))
    with pytest.raises(ValueError, match=r"^vecmat: the matrices have 3 rows but the vectors 4 values"):
        np.vecmat(np.ones(4), x)
    with pytest.raises(TypeError, match="takes no options, got axes"):
        np.matvec(x, np.ones(4), axes=[(-2, -1), (-1,), (-1,)])
