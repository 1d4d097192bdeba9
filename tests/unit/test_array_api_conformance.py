"""What the Array API standard (2023.12) asks of a namespace's signatures and objects, beyond
NumPy's own names: ``device=`` on creation functions, ``copy=`` in ``asarray`` and
``reshape``, ``correction=`` in ``var``/``std``, ``clip(x, min, max)``, ``__index__`` and
DLPack export, ``finfo``'s Python floats, ``qr``/``svd`` as named tuples over stacks of
matrices. (The data-apis conformance suite was run against xsched.array while these were
built; its remaining differences are listed in docs/user-guide/arrays.md.)"""

from __future__ import annotations

import inspect
import operator

import numpy as np
import pytest

import xsched.array as xa

CREATION = ["arange", "asarray", "empty", "empty_like", "eye", "full", "full_like", "linspace", "ones",
            "ones_like", "zeros", "zeros_like"]


@pytest.mark.parametrize("name", CREATION)
def test_creation_functions_take_device_and_refuse_any_but_the_cpu(name):
    func = getattr(xa, name)
    assert inspect.signature(func).parameters["device"].kind is inspect.Parameter.KEYWORD_ONLY
    like = xa.ones((2, 2), chunks=1)
    args = {"arange": (3,), "asarray": ([1, 2],), "empty": ((2,),), "eye": (2,), "full": ((2,), 7),
            "linspace": (0, 1, 3), "ones": ((2,),), "zeros": ((2,),), "full_like": (like, 3)}.get(name, (like,))
    for device in (None, "cpu", xa.ones(1, chunks=1).device):
        assert func(*args, device=device).device == xa.ones(1, chunks=1).device
    with pytest.raises(ValueError, match=rf"^{name}: xsched arrays live on Device\('cpu'\) only, not on 'cuda:0'"):
        func(*args, device="cuda:0")


def test_asarray_copy_as_the_standard_says():
    x = xa.asarray([1, 2, 3], chunks=2)
    y = xa.asarray(x, copy=True)
    assert y is not x and xa.asarray(x) is x and xa.asarray(x, dtype=x.dtype, copy=False) is x
    assert xa.asarray(x, dtype=x.dtype) is x  # (copy=None: no new object needed, none made)
    y[0] = 9  # (rebinds y only)
    assert x.compute().tolist() == [1, 2, 3] and y.compute().tolist() == [9, 2, 3]
    source = np.array([1.0, 2.0])
    z = xa.asarray(source, copy=True)
    source[0] = 5.0
    assert z.compute().tolist() == [1.0, 2.0]
    with pytest.raises(ValueError, match="asarray: copy=False, but a cast to int32 makes a copy"):
        xa.asarray(source, dtype="int32", copy=False)


def test_reshape_copy_false_refuses_a_rechunk():
    x = xa.from_array(np.arange(24).reshape(4, 6), chunks=(2, 3))
    assert xa.reshape(x, (2, 2, 6), copy=False).compute().tolist() == np.arange(24).reshape(2, 2, 6).tolist()
    with pytest.raises(ValueError, match=r"reshape: copy=False, but \(4, 6\) to \(24,\) .* rechunks"):
        xa.reshape(x, (24,), copy=False)


def test_var_and_std_take_correction_as_ddof():
    a = np.array([1.0, 3.0, 5.0, 10.0])
    x = xa.from_array(a, chunks=3)
    assert float(xa.var(x, correction=1)) == pytest.approx(np.var(a, ddof=1))
    assert float(x.std(correction=1.5)) == pytest.approx(np.std(a, ddof=1.5))
    with pytest.raises(TypeError, match="give ddof or correction"):
        xa.var(x, ddof=1, correction=1)
    # (a fractional ddof was cut to an int; and nanvar's n - ddof below 1 was taken as 1)
    b = np.array([1.0, np.nan, 4.0])
    for d in (0.5, 1.5):
        assert float(xa.nanvar(xa.from_array(b, chunks=1), ddof=d)) == pytest.approx(np.nanvar(b, ddof=d))
        assert float(xa.var(x, ddof=d)) == pytest.approx(np.var(a, ddof=d))


def test_clip_takes_min_and_max_and_numpys_names_and_neither():
    a = np.arange(6)
    x = xa.from_array(a, chunks=4)
    assert xa.clip(x, min=1, max=3).compute().tolist() == np.clip(a, 1, 3).tolist()
    assert np.clip(x, a_min=2, a_max=None).compute().tolist() == np.clip(a, 2, None).tolist()
    assert xa.clip(x).compute().tolist() == a.tolist()
    clipped = xa.clip(xa.asarray([np.nan, 2.0]), 0.0, 1.0).compute()
    assert np.isnan(clipped[0]) and clipped[1] == 1.0  # (NaN stays NaN, as the standard says)


def test_index_and_dlpack_compute_the_values_when_asked():
    n = xa.asarray(3)
    assert operator.index(n) == 3 and list(range(n)) == [0, 1, 2]
    for not_an_index in (3.0, True):  # (NumPy refuses a bool too)
        with pytest.raises(TypeError, match="only integer scalar arrays"):
            operator.index(xa.asarray(not_an_index))
    x = xa.from_array(np.arange(6.0).reshape(2, 3), chunks=1)
    assert x.__dlpack_device__() == (1, 0)
    np.testing.assert_array_equal(np.from_dlpack(x), np.arange(6.0).reshape(2, 3))


def test_finfo_gives_python_floats_and_numpys_other_limits():
    info = xa.finfo(np.float32)
    assert all(type(getattr(info, a)) is float for a in ("eps", "max", "min", "smallest_normal"))
    assert info.bits == 32 and info.dtype == np.float32 and info.resolution == np.finfo(np.float32).resolution
    assert xa.finfo(xa.ones(1, dtype="c8", chunks=1)).dtype == np.float32


def test_qr_and_svd_are_named_tuples_and_take_stacks_of_matrices():
    a = np.random.default_rng(0).normal(size=(4, 5, 3))
    x = xa.from_array(a, chunks=(2, 5, 3))
    q, r = result = xa.linalg.qr(x)
    assert type(result).__name__ == "QRResult" and result.Q is q and r.shape == (4, 3, 3)
    np.testing.assert_allclose((q @ r).compute(), a, atol=1e-12)
    s = xa.linalg.svd(x)
    assert type(s).__name__ == "SVDResult" and s.Vh.shape == (4, 3, 3)
    np.testing.assert_allclose(s.S.compute(), np.linalg.svd(a, compute_uv=False))
    tall = xa.ones((6, 3), chunks=(2, 3))
    with pytest.raises(ValueError, match=r"mode='complete' of a matrix of shape \(6, 3\) would make a 6 x 6"):
        xa.linalg.qr(tall, mode="complete")
    with pytest.raises(ValueError, match=r"full_matrices=True .* would make a 6 x 6"):
        xa.linalg.svd(tall, full_matrices=True)
    with pytest.raises(ValueError, match=r"full_matrices=True of a matrix of shape \(4, 5, 3\) would make a 5 x 5"):
        xa.linalg.svd(x, full_matrices=True)  # (a stack's matrices: the reduced ones would be wrong there)
    square = xa.from_array(np.eye(3) * 2, chunks=3)
    np.testing.assert_allclose(xa.linalg.svd(square, full_matrices=True).S.compute(), [2.0, 2.0, 2.0])


def test_fftfreq_takes_a_dtype_and_a_device():
    got = xa.fft.fftfreq(5, d=0.5, dtype=np.float32, device="cpu")
    assert got.dtype == np.float32
    np.testing.assert_allclose(got.compute(), np.fft.fftfreq(5, d=0.5))
    assert xa.fft.rfftfreq(4, dtype=np.float32).compute().dtype == np.float32


def test_take_with_positions_known_only_when_computed():
    a = np.arange(24).reshape(4, 6)
    x = xa.from_array(a, chunks=(3, 4))
    where = xa.from_array(np.array([5, 0, -1, 2]), chunks=3)
    np.testing.assert_array_equal(xa.take(x, where, axis=1).compute(), np.take(a, [5, 0, -1, 2], axis=1))
    np.testing.assert_array_equal(xa.take(x, where).compute(), np.take(a, [5, 0, -1, 2]))
    with pytest.raises(IndexError, match="index 30 is out of bounds for axis 1 with size 6"):
        xa.take(x, xa.from_array(np.array([30]), chunks=1), axis=1).compute()


def test_a_0d_boolean_mask_known_only_when_computed_adds_an_axis_of_one_or_none():
    a = np.arange(6).reshape(2, 3)
    x = xa.from_array(a, chunks=1)
    for flag in (True, False):
        got = x[xa.asarray(flag)]
        assert np.isnan(got.shape[0]) and got.shape[1:] == (2, 3)
        np.testing.assert_array_equal(got.compute(), a[flag])
    assert xa.asarray(5)[xa.asarray(True)].compute().tolist() == [5]


def test_asarray_copy_false_reads_a_lazy_arrays_dtype_without_computing_it(monkeypatch):
    x = xa.arange(4, chunks=2)
    monkeypatch.setattr(xa.Array, "__array__", lambda *a, **k: pytest.fail("computed"))
    with pytest.raises(ValueError, match="copy=False, but a cast to float64"):
        xa.asarray(x, dtype="f8", copy=False)
    assert xa.asarray(x, dtype=x.dtype, copy=False) is x
