"""NumPy's functions called on xsched arrays (``__array_function__``, NEP 18): they run
xsched.array's own functions, lazily, and match NumPy's results over several chunkings
(uneven last blocks included); a function xsched.array lacks raises at once, computing
nothing. Everything runs in this process (no client)."""

from __future__ import annotations

import numpy as np
import pytest

import xsched.array as xa
from xsched.array import dispatch

SHAPE = (5, 7)
CHUNKINGS = [(5, 7), (2, 3), ((1, 4), (3, 3, 1)), 1]


def values(shape=SHAPE, seed=0):
    return np.random.default_rng(seed).integers(-9, 10, size=shape).astype(float)


A = values()
B = values(seed=1)

# (name, call) pairs: each call takes numpy arrays or xsched arrays alike
CASES = [
    ("sum", lambda a, b: np.sum(a)),
    ("sum-axis-keepdims", lambda a, b: np.sum(a, 0, None, None, True)),
    ("mean", lambda a, b: np.mean(a, axis=0)),
    ("var", lambda a, b: np.var(a, axis=1, ddof=1)),
    ("std", lambda a, b: np.std(a)),
    ("min", lambda a, b: np.min(a, axis=1)),
    ("max", lambda a, b: np.max(a, axis=0, keepdims=True)),
    ("amax", lambda a, b: np.amax(a)),
    ("prod", lambda a, b: np.prod(a / 5.0, axis=0)),
    ("any-all", lambda a, b: np.stack([np.any(a > 8, axis=0), np.all(a > -9, axis=0)])),
    ("nansum", lambda a, b: np.nansum(np.where(a > 5, np.nan, a), axis=1)),
    ("nanmean", lambda a, b: np.nanmean(np.where(a > 5, np.nan, a))),
    ("argmax", lambda a, b: np.argmax(a, axis=1)),
    ("argmin", lambda a, b: np.argmin(a)),
    ("cumsum", lambda a, b: np.cumsum(a, axis=0)),
    ("cumprod", lambda a, b: np.cumprod(a / 9.0, axis=1)),
    ("concatenate", lambda a, b: np.concatenate([a, b], axis=1)),
    ("concatenate-numpy", lambda a, b: np.concatenate([a, B[:2]])),
    ("stack", lambda a, b: np.stack([a, b], axis=-1)),
    ("hstack-vstack", lambda a, b: np.vstack([np.hstack([a, b]), np.hstack([b, a])])),
    ("where", lambda a, b: np.where(a > b, a, b)),
    ("where-numpy", lambda a, b: np.where(a > 0, a, B)),
    ("transpose", lambda a, b: np.transpose(a)),
    ("transpose-axes", lambda a, b: np.transpose(a[:, :, None], (1, 2, 0))),
    ("reshape", lambda a, b: np.reshape(a, (7, 5))),
    ("ravel", lambda a, b: np.ravel(a)),
    ("squeeze-expand", lambda a, b: np.squeeze(np.expand_dims(a, 0))),
    ("moveaxis-swapaxes", lambda a, b: np.swapaxes(np.moveaxis(a[None], 0, -1), 0, 1)),
    ("flip-roll", lambda a, b: np.roll(np.flip(a, axis=0), 3, axis=1)),
    ("clip", lambda a, b: np.clip(a, -2, 4)),
    ("round", lambda a, b: np.round(a / 3.0, 2)),
    ("broadcast_to", lambda a, b: np.broadcast_to(a[0], (3, 7))),
    ("tensordot", lambda a, b: np.tensordot(a, b, axes=([1], [1]))),
    ("dot", lambda a, b: np.dot(a, np.transpose(b))),
    ("inner-outer", lambda a, b: np.outer(np.inner(a, b)[0], a[0])),
    ("matmul-numpy", lambda a, b: np.matmul(a, B.T)),
    ("norm", lambda a, b: np.linalg.norm(a)),
    ("norm-axis", lambda a, b: np.linalg.norm(a, ord=1, axis=0)),
    ("fft", lambda a, b: np.fft.fft(a, axis=0)),
    ("fftshift", lambda a, b: np.fft.fftshift(a)),
    ("sort", lambda a, b: np.sort(a, axis=0)),
    ("like", lambda a, b: np.full_like(a, 3.0) + np.zeros_like(b) + np.ones_like(a)),
]


def xsched_inputs(chunks):
    return xa.from_array(A, chunks=chunks), xa.from_array(B, chunks=chunks)


@pytest.mark.parametrize("chunks", CHUNKINGS, ids=str)
@pytest.mark.parametrize("name,call", CASES, ids=[c[0] for c in CASES])
def test_numpy_function_runs_the_xsched_one_and_matches_numpy(name, call, chunks):
    a, b = xsched_inputs(chunks)
    if name in ("fft", "sort"):  # along axis 0, which must be one block
        a, b = a.rechunk({0: -1}), b.rechunk({0: -1})
    expected = call(A, B)
    got = call(a, b)
    assert isinstance(got, xa.Array), f"{name}: {type(got).__name__}, not a lazy Array"
    assert got.shape == np.shape(expected)
    result = got.compute()
    assert result.dtype == np.asarray(expected).dtype
    np.testing.assert_allclose(result, expected, rtol=1e-12, atol=1e-12)


def test_positional_arguments_land_where_numpy_puts_them():
    # numpy's sum is (a, axis, dtype, out, keepdims); xsched.array's puts keepdims before out
    x = xa.from_array(A, chunks=2)
    got = np.sum(x, 1, np.float32, None, True)
    assert got.shape == (5, 1) and got.dtype == np.float32
    np.testing.assert_allclose(got.compute(), np.sum(A, 1, np.float32, None, True))


def test_neutral_numpy_options_are_dropped_others_are_named():
    x = xa.from_array(A, chunks=2)
    np.testing.assert_allclose(np.sum(x, where=True, out=None).compute(), A.sum())
    np.testing.assert_allclose(np.reshape(x, (35,), order="C").compute(), A.ravel())
    np.testing.assert_allclose(np.sum(x, initial=3).compute(), A.sum(initial=3))  # (taken since NumPy's is)
    with pytest.raises(TypeError, match=r"numpy\.var .*xsched\.array\.var.*where="):
        np.var(x, where=A > 0)
    with pytest.raises(TypeError, match=r"numpy\.reshape .*order='F'"):
        np.reshape(x, (35,), order="F")


def test_metadata_functions_need_no_compute(monkeypatch):
    x = xa.from_array(A.astype("f4"), chunks=2)
    monkeypatch.setattr(xa.Array, "compute", lambda *a, **k: pytest.fail("computed"))
    assert np.shape(x) == (5, 7) and np.ndim(x) == 2 and np.size(x) == 35
    assert np.size(x, 1) == 7
    assert np.result_type(x, np.float64) == np.float64
    assert np.result_type(x, 1) == np.float32
    assert not np.iscomplexobj(x) and np.isrealobj(x)


@pytest.mark.parametrize("func,args", [
    (np.resize, ((3, 3),)), (np.linalg.eig, ()), (np.fft.fftfreq, None),
    (np.trim_zeros, ()), (np.real_if_close, ()),
])
def test_a_function_xsched_lacks_raises_at_once_naming_the_ways_out(func, args, monkeypatch):
    x = xa.from_array(A, chunks=2)
    computed = []
    monkeypatch.setattr(xa.Array, "compute", lambda *a, **k: computed.append(1))
    monkeypatch.setattr(xa.Array, "__array__", lambda *a, **k: computed.append(1))
    if args is None:  # fftfreq takes no array: NumPy answers it itself
        assert len(func(8)) == 8
        return
    with pytest.raises(TypeError) as info:
        func(x, *args)
    message = str(info.value)
    name = func.__name__
    assert f"{func.__module__}.{name} is not implemented for xsched arrays" in message
    assert ".compute()" in message and "map_blocks" in message
    assert not computed


def test_mixed_numpy_first_and_other_array_types():
    x = xa.from_array(A, chunks=(2, 3))
    got = np.concatenate([B, x])  # the numpy array comes first: still dispatched
    assert isinstance(got, xa.Array)
    np.testing.assert_array_equal(got.compute(), np.concatenate([B, A]))
    got = np.where(B > 0, B, x)
    np.testing.assert_array_equal(got.compute(), np.where(B > 0, B, A))

    class Other:  # another library's array: xsched leaves the call to it
        def __array_function__(self, func, types, args, kwargs):
            return "other"

    assert dispatch.array_function(np.sum, (xa.Array, Other), (x,), {}) is NotImplemented


def test_implementation_lookup():
    assert dispatch.implementation(np.sum) is xa.sum
    assert dispatch.implementation(np.amin) is xa.min
    assert dispatch.implementation(np.linalg.norm) is xa.linalg.norm
    assert dispatch.implementation(np.fft.ifft) is xa.fft.ifft
    assert dispatch.implementation(np.fft.fftfreq) is xa.fft.fftfreq
    assert dispatch.implementation(np.diff) is xa.diff
    assert dispatch.implementation(np.kron) is xa.kron
    assert dispatch.implementation(np.resize) is None
    assert dispatch.implementation(np.interp) is xa.interp


def test_linalg_factorizations_through_numpy():
    a = values((12, 3), seed=3)
    x = xa.from_array(a, chunks=(4, 3))
    q, r = np.linalg.qr(x)
    np.testing.assert_allclose((q @ r).compute(), a, atol=1e-10)
    with pytest.raises(TypeError, match=r"full_matrices=False, not NumPy's default"):
        np.linalg.svd(x)
    u, s, vt = np.linalg.svd(x, full_matrices=False)
    np.testing.assert_allclose(s.compute(), np.linalg.svd(a, compute_uv=False), rtol=1e-10)
    assert u.shape == (12, 3) and vt.shape == (3, 3)
