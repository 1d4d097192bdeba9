"""The rest of NumPy's array object and namespace on xsched arrays: the Array API's
``__array_namespace__``/``device``/``to_device``/``mT``, NumPy's methods that return a new
array (``diagonal``, ``take``, ``view``, ...), and ``topk``/``argtopk``, ``tri`` and the
triangle indices, ``moment``, ``coarsen``, ``union1d``, ``rollaxis``, ``apply_over_axes``,
``shuffle``, ``isnull``/``notnull``: each against NumPy (or the documented semantics where
NumPy has none) over several chunkings and dtypes, lazy until computed, errors when built.
Everything runs in this process (no client)."""

from __future__ import annotations

import numpy as np
import pytest

import xsched.array as xa

CHUNKINGS = [(6, 8), (2, 3), ((1, 5), (3, 4, 1))]
DTYPES = ["float64", "float32", "int64", "int16"]


def sample(dtype="float64", shape=(6, 8), seed=0):
    rng = np.random.default_rng(seed)
    return (rng.permutation(int(np.prod(shape))).reshape(shape) - 10).astype(dtype)


CALLS = []


def counted(block):
    CALLS.append(1)
    return block


def lazy(x, chunks):
    """An xsched array of ``x`` whose blocks count their computations."""
    CALLS.clear()
    return xa.from_array(x, chunks=chunks).map_blocks(counted, dtype=x.dtype)


# --------------------------------------------------------------------------- the Array API's array object


def test_array_namespace_is_the_module_and_a_generic_function_runs_on_it():
    def softmax(x, axis=-1):
        xp = x.__array_namespace__()
        e = xp.exp(x - xp.max(x, axis=axis, keepdims=True))
        return e / xp.sum(e, axis=axis, keepdims=True)

    def standardize(x):
        xp = x.__array_namespace__()
        return (x - xp.mean(x, axis=0)) / xp.std(x, axis=0)

    a = sample() / 10
    for chunks in CHUNKINGS:
        x = lazy(a, chunks)
        assert x.__array_namespace__() is xa and x.__array_namespace__(api_version="2023.12") is xa
        got, std = softmax(x), standardize(x)
        assert isinstance(got, xa.Array) and not CALLS
        np.testing.assert_allclose(got.compute(), softmax(a), rtol=1e-12)
        np.testing.assert_allclose(std.compute(), standardize(a), rtol=1e-12)
    assert xa.__array_api_version__ == "2023.12"
    with pytest.raises(ValueError, match="2099.12"):
        x.__array_namespace__(api_version="2099.12")


def test_the_namespace_has_the_standards_data_types_and_what_xarray_asks_it_for():
    for name in ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
                 "float32", "float64", "complex64", "complex128"):
        assert np.dtype(getattr(xa, name)) == np.dtype(name)
    assert (xa.e, xa.pi, xa.inf, xa.newaxis) == (np.e, np.pi, np.inf, None) and np.isnan(xa.nan)
    windows = xa.lib.stride_tricks.sliding_window_view(xa.arange(5, chunks=2), 3)
    np.testing.assert_array_equal(windows.compute(), np.lib.stride_tricks.sliding_window_view(np.arange(5), 3))
    xr = pytest.importorskip("xarray")  # (xarray takes its functions from x.__array_namespace__())
    a = np.arange(12.0).reshape(3, 4)
    a[1, 2] = np.nan
    lazy_da, ref = (xr.DataArray(v, dims=("x", "y")) for v in (xa.from_array(a, chunks=2), a))
    for f in (lambda d: d.where(d > 3).sum("y"), lambda d: d.fillna(0), lambda d: d.rolling(y=2).mean()):
        got = f(lazy_da)
        assert isinstance(got.data, xa.Array)
        np.testing.assert_array_equal(got.compute().values, f(ref).values)


def test_device_to_device_and_mT():
    x = xa.from_array(sample(shape=(2, 3, 4)), chunks=(1, 2, 3))
    assert repr(x.device) == "Device('cpu')" and x.device is (x + 1).device
    assert x.to_device(x.device) is x and x.to_device("cpu") is x
    with pytest.raises(ValueError, match="'cuda'"):
        x.to_device("cuda")
    np.testing.assert_array_equal(x.mT.compute(), np.asarray(x.compute()).mT)
    assert x.mT.chunks == ((1, 1), (3, 1), (2, 1))
    with pytest.raises(ValueError, match="two dimensions"):
        xa.ones(3, chunks=2).mT


def test_item_and_tolist_compute_as_numpy():
    a = sample("int64", (3, 4))
    x = xa.from_array(a, chunks=2)
    assert x.item(5) == a.item(5) and x.item(-1) == a.item(-1) and x.item(2, 1) == a.item(2, 1)
    assert x.item((1, 3)) == a.item((1, 3)) and type(x.item(0)) is int
    assert x[1:2, 2:3].item() == a[1:2, 2:3].item() and xa.from_array(np.float32(2.5)).item() == 2.5
    assert x.tolist() == a.tolist() and xa.from_array(np.array(7)).tolist() == 7
    with pytest.raises(ValueError, match="size 1"):
        x.item()


# --------------------------------------------------------------------------- NumPy's methods


@pytest.mark.parametrize("chunks", CHUNKINGS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_methods_equal_numpys(chunks, dtype):
    a = sample(dtype)
    x = lazy(a, chunks)
    whole_rows = xa.from_array(a, chunks=(chunks[0], -1))
    built = {
        "diagonal": (x.diagonal(1), a.diagonal(1)),
        "trace": (x.trace(-1), a.trace(-1)),
        "nonzero": (x.nonzero()[1], a.nonzero()[1]),
        "argsort": (whole_rows.argsort(kind="stable"), a.argsort(kind="stable")),
        "searchsorted": (xa.sort(x.ravel().rechunk(-1)).searchsorted([0, 3.5], side="right"),
                         np.sort(a.ravel()).searchsorted([0, 3.5], side="right")),
        "choose": ((x > 0).astype(int).choose([a, -a]), (a > 0).astype(int).choose([a, -a])),
        "compress": (x.compress([True, False, True], axis=1), a.compress([True, False, True], axis=1)),
        "take": (x.take([7, 0, 3], axis=1), a.take([7, 0, 3], axis=1)),
        "take-flat": (x.take([[47, 0], [5, 5]]), a.take([[47, 0], [5, 5]])),
        "copy": (x.copy(), a.copy()),
        "lshift": ((abs(x) << 2) if a.dtype.kind == "i" else x, (abs(a) << 2) if a.dtype.kind == "i" else a),
        "rrshift": ((64 >> abs(x)) if a.dtype.kind == "i" else x, (64 >> abs(a)) if a.dtype.kind == "i" else a),
    }
    assert not CALLS
    for what, (got, expected) in built.items():
        assert isinstance(got, xa.Array), what
        out = got.compute()
        np.testing.assert_array_equal(out, expected, err_msg=what)
        assert out.dtype == expected.dtype, what


def test_methods_are_the_namespaces_functions():
    x = xa.from_array(sample(), chunks=2)
    assert x.diagonal().name == xa.diagonal(x).name and x.take([1, 2], axis=0).name == xa.take(x, [1, 2], 0).name
    assert x.topk(2).name == xa.topk(x, 2).name and x.moment(3).name == xa.moment(x, 3).name
    y = x.copy()
    assert y is not x and y.name == x.name
    assert 5 in x and 1000 not in x
    assert x.take([-13], axis=0, mode="wrap").name == xa.take(x, [-13], 0, mode="wrap").name
    with pytest.raises(ValueError, match="order="):
        x.argsort(order="a")


@pytest.mark.parametrize("chunks", [(2, 4), (3, (8, 4, 4)), (2, 16)])
@pytest.mark.parametrize("dtype", ["i1", "u2", "i4", "f8", "c16"])
def test_view_block_by_block(chunks, dtype):
    a = np.arange(96, dtype="u1").reshape(6, 16)
    x = xa.from_array(a, chunks=chunks)
    itemsize = np.dtype(dtype).itemsize
    if all(c % itemsize == 0 for c in x.chunks[1]):
        got = x.view(dtype)
        assert got.chunks[1] == tuple(c // itemsize for c in x.chunks[1])
        np.testing.assert_array_equal(got.compute(), a.view(dtype))
    else:
        with pytest.raises(ValueError, match="rechunk the last axis"):
            x.view(dtype)
    back = xa.from_array(a.view("f8"), chunks=1).view("u1")
    np.testing.assert_array_equal(back.compute(), a)


def test_view_errors_when_built():
    with pytest.raises(ValueError, match="whole number"):
        xa.from_array(np.zeros(3, "u1"), chunks=3).view("u2")
    with pytest.raises(ValueError, match="0-d"):
        xa.from_array(np.array(1.0)).view("i4")
    with pytest.raises(TypeError, match="subclass"):
        xa.ones(2, chunks=1).view(type=np.matrix)
    np.testing.assert_array_equal(xa.from_array(np.arange(3.0), chunks=2).view().compute(), np.arange(3.0))


# --------------------------------------------------------------------------- topk, argtopk


def reference_topk(a, k, axis):
    s = np.sort(a, axis=axis)
    n = a.shape[axis]
    if k > 0:
        return np.flip(np.take(s, range(n - min(k, n), n), axis=axis), axis=axis)
    return np.take(s, range(min(-k, n)), axis=axis)


@pytest.mark.parametrize("chunks", CHUNKINGS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_topk_and_argtopk_equal_sorting(chunks, dtype):
    a = sample(dtype)
    x = lazy(a, chunks)
    for axis in (0, 1, -1):
        for k in (1, 3, -2, 6, -8, 20, 0):
            for split_every in (None, 2):
                top = xa.topk(x, k, axis=axis, split_every=split_every)
                pos = x.argtopk(k, axis=axis, split_every=split_every)
                assert not CALLS
                expected = reference_topk(a, k, axis)
                assert top.shape == expected.shape == pos.shape and top.dtype == a.dtype
                np.testing.assert_array_equal(top.compute(), expected)
                got = pos.compute()
                assert got.dtype == np.intp
                np.testing.assert_array_equal(np.take_along_axis(a, got, axis=axis), expected)  # (no ties)
                CALLS.clear()


def test_topk_nan_is_the_largest_and_errors_when_built():
    x = xa.from_array(np.array([1.0, np.nan, 5.0, 2.0]), chunks=1)
    np.testing.assert_array_equal(xa.topk(x, 2).compute(), [np.nan, 5.0])
    assert xa.argtopk(x, -2).compute().tolist() == [0, 3]
    with pytest.raises(np.exceptions.AxisError):
        xa.topk(x, 1, axis=1)
    with pytest.raises(TypeError):
        xa.topk(x, 1.5)
    with pytest.raises(ValueError, match="compute_chunk_sizes"):
        xa.topk(x[x > 1], 1)


# --------------------------------------------------------------------------- creation


@pytest.mark.parametrize("chunks", [1, 2, 5, "auto"])
def test_tri_and_triangle_indices(chunks):
    for n, m, k in [(4, None, 0), (4, 6, -2), (5, 3, 1), (3, 3, 5), (3, 3, -5), (0, 3, 0), (1, 1, 0)]:
        for ours, numpys in [(xa.tril_indices, np.tril_indices), (xa.triu_indices, np.triu_indices)]:
            got = ours(n, k, m, chunks=chunks)
            for g, e in zip(got, numpys(n, k, m)):
                assert g.shape == e.shape and g.dtype == e.dtype
                np.testing.assert_array_equal(g.compute(), e)
        np.testing.assert_array_equal(xa.tri(n, m, k, dtype=int, chunks=chunks).compute(), np.tri(n, m, k, dtype=int))
    a = np.ones((3, 5))
    for f in ("tril_indices_from", "triu_indices_from"):
        for g, e in zip(getattr(np, f)(xa.from_array(a, chunks=2), k=1), getattr(np, f)(a, k=1)):
            assert isinstance(g, xa.Array)
            np.testing.assert_array_equal(g.compute(), e)
    with pytest.raises(ValueError, match="2-d"):
        xa.tril_indices_from(xa.ones(3, chunks=1))


# --------------------------------------------------------------------------- moment


@pytest.mark.parametrize("chunks", CHUNKINGS)
@pytest.mark.parametrize("dtype", DTYPES + ["complex128"])
def test_moment_equals_the_central_moment(chunks, dtype):
    a = sample(dtype) * (1 + 1j if dtype == "complex128" else 1) + (1000 if dtype != "int16" else 0)
    a = a.astype(dtype)
    x = lazy(a, chunks)
    for order in (0, 1, 2, 3, 4):
        for axis in (None, 0, 1, (0, 1)):
            for ddof, keepdims in ((0, False), (1, True)):
                got = xa.moment(x, order, axis=axis, ddof=ddof, keepdims=keepdims)
                assert not CALLS
                d = a - a.mean(axis=axis, keepdims=True)
                d = np.abs(d) if d.dtype.kind == "c" else d
                n = a.size if axis in (None, (0, 1)) else a.shape[axis]
                expected = np.sum(d.astype("f8") ** order, axis=axis, keepdims=keepdims) / (n - ddof)
                if order < 2:
                    expected = np.full_like(expected, order == 0, dtype="f8")
                dtype_expected = "f8" if order < 2 else np.var(np.ones(1, dtype)).dtype
                assert got.shape == np.shape(expected) and got.dtype == dtype_expected
                rtol = 1e-4 if dtype == "float32" else 1e-9
                np.testing.assert_allclose(got.compute(), expected, rtol=rtol, atol=1e-3 if order else 0)
                CALLS.clear()
    with pytest.raises(ValueError, match="order"):
        xa.moment(x, -1)
    with pytest.raises(TypeError, match="out="):
        xa.moment(x, 2, out=np.empty(()))


# --------------------------------------------------------------------------- coarsen


def reference_coarsen(reduction, a, axes, **kwargs):
    factors = [axes.get(i, axes.get(i - a.ndim, 1)) for i in range(a.ndim)]
    a = a[tuple(slice(0, n - n % f) for n, f in zip(a.shape, factors))]
    shape = [m for n, f in zip(a.shape, factors) for m in (n // f, f)]
    return reduction(a.reshape(shape), axis=tuple(range(1, 2 * a.ndim, 2)), **kwargs)


@pytest.mark.parametrize("chunks", [(7, 9), (2, 4), (3, (1, 5, 3))])
@pytest.mark.parametrize("dtype", ["float64", "int32"])
def test_coarsen_equals_numpys_reshaped_reduction(chunks, dtype):
    a = sample(dtype, (7, 9))
    x = lazy(a, chunks)
    for reduction in (np.sum, np.mean, np.max, xa.min):
        for axes in ({0: 7}, {1: 3}, {0: 2, 1: 2}, {-1: 4}):
            got = xa.coarsen(reduction, x, axes, trim_excess=True)
            assert not CALLS
            expected = reference_coarsen(getattr(np, reduction.__name__), a, axes)
            assert got.shape == expected.shape and got.dtype == expected.dtype
            np.testing.assert_array_equal(got.compute(), expected)
            CALLS.clear()
    got = xa.coarsen(np.sum, x, {1: 3}, dtype="f4")
    np.testing.assert_array_equal(got.compute(), reference_coarsen(np.sum, a, {1: 3}, dtype="f4"))
    with pytest.raises(ValueError, match="do not align"):
        xa.coarsen(np.sum, x, {0: 2})
    with pytest.raises(ValueError, match="positive integer"):
        xa.coarsen(np.sum, x, {0: 0})
    with pytest.raises(np.exceptions.AxisError):
        xa.coarsen(np.sum, x, {2: 1})


# --------------------------------------------------------------------------- sets, arrangement, missing values


@pytest.mark.parametrize("chunks", CHUNKINGS)
def test_union1d_rollaxis_apply_over_axes_through_numpy(chunks):
    a = sample("int64") % 13
    x = lazy(a, chunks)
    u = np.union1d(x, [[100, 3], [-50, 2]])
    rolled = {(axis, start): np.rollaxis(x, axis, start) for axis in (-2, 0, 1) for start in (-2, 0, 1, 2)}
    over = {axes: np.apply_over_axes(np.sum, x, axes) for axes in (0, (1,), (0, 1), (-1, 0))}
    assert not CALLS and isinstance(u, xa.Array)
    np.testing.assert_array_equal(u.compute(), np.union1d(a, [[100, 3], [-50, 2]]))
    for (axis, start), got in rolled.items():
        np.testing.assert_array_equal(got.compute(), np.rollaxis(a, axis, start))
    for axes, got in over.items():
        np.testing.assert_array_equal(got.compute(), np.apply_over_axes(np.sum, a, axes))
    with pytest.raises(np.exceptions.AxisError):
        xa.rollaxis(x, 0, 3)
    with pytest.raises(ValueError, match="correct shape"):
        xa.apply_over_axes(lambda v, axis: v.sum(), x, 0)


@pytest.mark.parametrize("chunks", CHUNKINGS)
def test_shuffle_is_take_with_each_group_in_one_block(chunks):
    a = sample()
    x = xa.from_array(a, chunks=chunks)
    for axis, groups in ((1, [[6, 5, 2], [4, 1], [3, 0, 7]]), (0, [[5], [0, 1, 2, 3], [4, 4]]), (1, [[1], [], [0]])):
        got = xa.shuffle(x, groups, axis)
        np.testing.assert_array_equal(got.compute(), np.take(a, [i for g in groups for i in g], axis=axis))
        bounds = set(np.cumsum((0,) + got.chunks[axis]).tolist())
        starts = np.cumsum([0] + [len(g) for g in groups]).tolist()
        assert bounds <= set(starts)  # no group is cut between blocks
    with pytest.raises(ValueError, match="list of lists"):
        xa.shuffle(x, [1, 2], 0)
    with pytest.raises(ValueError, match="chunks takes 'auto' only"):
        xa.shuffle(x, [[0]], 0, chunks=3)
    with pytest.raises(IndexError):
        xa.shuffle(x, [[0, 99]], 1)


def test_shuffle_of_groups_longer_than_a_block_splits_the_other_axes():
    a = np.arange(64 * 6).reshape(64, 6)
    x = xa.from_array(a, chunks=(8, 6))
    order = list(range(0, 64, 2)) + list(range(1, 64, 2))
    y = x.shuffle([order[:32], order[32:]], axis=0)  # (groups of 32 rows, blocks of 8)
    assert y.chunks[0] == (32, 32) and max(y.chunks[1]) * 32 <= 1.25 * 8 * 6  # (blocks about as large as before)
    np.testing.assert_array_equal(y.compute(), a[order])
    assert x.shuffle([[0, 1, 2, 3]] * 1 + [[4, 5]], axis=0).chunks[1] == (6,)  # (small groups: left as they are)


@pytest.mark.parametrize("values", [
    np.array([1.5, np.nan, -np.inf, np.nan, 0.0]),
    np.array([1 + 1j, complex(np.nan, 0), 0, 2, 3]),
    np.array(["2024-01-01", "NaT", "2024-03-01", "NaT", "2025-01-01"], "M8[s]"),
    np.array([1, "NaT", 3, 4, "NaT"], "m8[D]"),
    np.array([1.5, None, np.nan, "a", np.datetime64("NaT")], dtype=object),
    np.array([1, 2, 3, 4, 5]),
    np.array(["a", "", "c", "d", "e"]),
])
def test_isnull_and_notnull_equal_pandas(values):
    pd = pytest.importorskip("pandas")
    for chunks in (5, 2, ((1, 4),)):
        x = xa.from_array(values, chunks=chunks)
        np.testing.assert_array_equal(xa.isnull(x).compute(), pd.isnull(values))
        np.testing.assert_array_equal(xa.notnull(x).compute(), pd.notnull(values))
    obj = np.array([pd.NA, pd.NaT, 1], dtype=object)
    np.testing.assert_array_equal(xa.isnull(xa.from_array(obj, chunks=2)).compute(), pd.isnull(obj))


def test_the_array_api_inspection_namespace():
    info = xa.__array_namespace_info__()
    assert info.capabilities() == {"boolean indexing": True, "data-dependent shapes": True}
    assert info.default_device() is xa.ones(2, chunks=1).device and info.devices() == [info.default_device()]
    assert info.default_dtypes()["real floating"] == np.float64
    assert set(info.dtypes()) == {"bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                                  "uint64", "float32", "float64", "complex64", "complex128"}
    assert list(info.dtypes(kind="complex floating")) == ["complex64", "complex128"]
    with pytest.raises(ValueError, match="unknown kind"):
        info.dtypes(kind="floating")
    with pytest.raises(ValueError, match="only"):
        info.dtypes(device="gpu")
