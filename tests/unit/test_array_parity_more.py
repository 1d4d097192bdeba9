"""NumPy parity: random seeding, argmax/argmin with unknown chunks, errors when an
expression is built, axis=None joins and sorts, and writing to zarr."""

import math
import re

import numpy as np
import pytest
from numpy.testing import assert_array_equal

import xsched.array as xa
from xsched.array.chunks import normalize_chunks
from xsched.array.core import Array


def forget_chunks(x):
    """``x`` with its block lengths unknown, as a boolean mask leaves them."""
    return Array(x._graph, x.name, tuple((math.nan,) * len(c) for c in x.chunks), x.dtype)


def numpy_error(func):
    try:
        func()
    except Exception as exc:  # noqa: BLE001 - the error numpy raises is the reference
        return exc
    raise AssertionError("numpy raised nothing")


# --------------------------------------------------------------------------- random


@pytest.mark.parametrize("chunks", [3, 2, 1])
def test_spawned_seed_sequences_give_their_own_streams(chunks):
    c1, c2 = np.random.SeedSequence(1).spawn(2)
    x1 = xa.random.default_rng(c1).random(3, chunks=chunks)
    x2 = xa.random.default_rng(c2).random(3, chunks=chunks)
    assert x1.name != x2.name
    a1, a2 = x1.compute(), x2.compute()
    assert not np.any(a1 == a2)
    # each block: SeedSequence(words the child generates, spawn_key=(call, *block_index))
    starts = np.cumsum((0,) + x1.chunks[0])
    words = tuple(int(w) for w in c1.generate_state(4))
    for i, n in enumerate(x1.chunks[0]):
        seq = np.random.SeedSequence(words, spawn_key=(0, i))
        assert_array_equal(a1[starts[i]:starts[i + 1]], np.random.default_rng(seq).random(n))
    # a seed without a spawn key draws what it drew before
    plain = xa.random.default_rng(np.random.SeedSequence(1)).random(3, chunks=chunks).compute()
    assert_array_equal(plain, xa.random.default_rng(1).random(3, chunks=chunks).compute())
    assert_array_equal(plain[:x1.chunks[0][0]], np.random.default_rng(
        np.random.SeedSequence(1, spawn_key=(0, 0))).random(x1.chunks[0][0]))


def test_a_spawned_seed_draws_none_of_its_parents_blocks():
    """A child's block of one array never has the key of its parent's block of another (a
    1-d block of child 0's first array against the parent's 2-d block (0, 0) of its first)."""
    parent = xa.random.default_rng(1).random((4, 4), chunks=4).compute()
    child = xa.random.default_rng(np.random.SeedSequence(1).spawn(1)[0]).random(16, chunks=16).compute()
    assert not np.any(np.isin(child, parent))
    via_numpy = xa.random.default_rng(np.random.default_rng(1)).random(16, chunks=16).compute()
    assert not np.any(np.isin(via_numpy, parent))


def test_default_rng_takes_a_numpy_generator_or_bit_generator():
    g = np.random.default_rng(0)
    first = xa.random.default_rng(g).random((4, 3), chunks=2).compute()
    second = xa.random.default_rng(g).random((4, 3), chunks=2).compute()
    assert not np.any(first == second)  # a new child of its SeedSequence each time
    child = np.random.SeedSequence(0).spawn(1)[0]
    assert_array_equal(first, xa.random.default_rng(child).random((4, 3), chunks=2).compute())
    bits = xa.random.default_rng(np.random.PCG64(0)).random((4, 3), chunks=2).compute()
    assert_array_equal(first, bits)
    for bad in (1.5, "seed", np.random.RandomState(0)):
        with pytest.raises(TypeError, match="seed must be None, an int"):
            xa.random.default_rng(bad)


@pytest.mark.parametrize("method, args, kwargs", [
    ("uniform", (3, 1), {}),
    ("uniform", (0, np.inf), {}),
    ("integers", (0, 300), {"dtype": np.int8}),
    ("integers", (-1, 3), {"dtype": np.uint8}),
    ("random", (), {"dtype": np.int32}),
    ("standard_normal", (), {"dtype": np.float16}),
])
def test_invalid_random_parameters_fail_when_built_with_numpys_error(method, args, kwargs):
    expected = numpy_error(lambda: getattr(np.random.default_rng(0), method)(
        *args, size=4, **kwargs))
    rng = xa.random.default_rng(0)
    with pytest.raises(type(expected), match=re.escape(str(expected))):
        getattr(rng, method)(*args, size=4, chunks=2, **kwargs)
    # a failed call takes no number: the next call draws what a fresh generator's first does
    assert_array_equal(rng.random(4, chunks=2).compute(),
                       xa.random.default_rng(0).random(4, chunks=2).compute())


def test_random_parameters_numpy_allows_still_draw():
    rng = xa.random.default_rng(0)
    assert rng.integers(5, 5, size=0, chunks=1).compute().shape == (0,)  # numpy too
    assert_array_equal(rng.uniform(3, 3, size=4, chunks=3).compute(), np.full(4, 3.0))
    assert_array_equal(rng.integers(5, 5, size=4, endpoint=True, chunks=3).compute(),
                       np.full(4, 5))


# --------------------------------------------------------------------------- argmax, argmin


@pytest.mark.parametrize("chunks", [1, 2, 3, 4, 7])
@pytest.mark.parametrize("op", ["argmax", "argmin"])
def test_arg_extremes_after_a_boolean_mask(op, chunks):
    rng = np.random.default_rng(chunks)
    a = rng.integers(-5, 6, size=20).astype(float)
    a[[3, 11]] = np.nan if chunks % 2 else a[3]
    v = xa.from_array(a, chunks=chunks)
    kept = a[~(a > 2)]  # some blocks lose every element; NaNs stay
    u = v[~(v > 2)] if chunks != 4 else v[xa.from_array(~(a > 2), chunks=chunks)]
    for axis in (0, None, -1):
        for keepdims in (False, True):
            for split_every in (None, 2):
                got = getattr(xa, op)(u, axis=axis, keepdims=keepdims,
                                      split_every=split_every).compute()
                want = getattr(np, op)(kept, axis=axis, keepdims=keepdims)
                assert_array_equal(got, want)
                assert np.asarray(got).dtype == np.intp


def test_the_reporters_argmax_case():
    v = xa.from_array(np.array([3., -1., 5., 2., 7., -4.]), chunks=2)
    u = v[v > 0]
    assert int(xa.argmax(u, axis=0).compute()) == 3
    assert int(xa.argmax(u).compute()) == 3
    assert int(xa.argmin(u).compute()) == 2


@pytest.mark.parametrize("shape, chunks", [((5, 7), (2, 3)), ((4, 6), ((1, 0, 3), (2, 4))),
                                           ((3, 4, 5), (2, (1, 3), 2)), ((6,), ((0, 6),))])
@pytest.mark.parametrize("op", ["argmax", "argmin"])
def test_arg_extremes_of_nd_arrays_with_unknown_chunks(op, shape, chunks):
    a = np.random.default_rng(len(shape)).integers(0, 4, size=shape).astype(float)
    a.flat[[2, -3]] = np.nan
    x = forget_chunks(xa.from_array(a, chunks=chunks))
    for axis in [None, *range(len(shape))]:
        for split_every in (None, 2):
            got = getattr(xa, op)(x, axis=axis, split_every=split_every).compute()
            assert_array_equal(got, getattr(np, op)(a, axis=axis))
    assert_array_equal(getattr(x, op)(keepdims=True).compute(), getattr(np, op)(a, keepdims=True))


def test_argmax_of_an_array_a_mask_left_empty_fails_like_numpy():
    v = xa.from_array(np.arange(6.0), chunks=2)
    with pytest.raises(ValueError, match="attempt to get argmax of an empty sequence"):
        xa.argmax(v[v > 100]).compute()


def test_argmax_with_a_tuple_of_axes_fails_when_built():
    x = xa.from_array(np.arange(6.0).reshape(2, 3), chunks=1)
    expected = numpy_error(lambda: np.argmax(np.arange(6.0).reshape(2, 3), axis=(0, 1)))
    for op in (xa.argmax, xa.argmin):
        with pytest.raises(TypeError, match=re.escape(str(expected))):
            op(x, axis=(0, 1))


# --------------------------------------------------------------------------- errors when built


@pytest.mark.parametrize("make", [
    lambda: xa.full((-1,), 1), lambda: xa.full((2, -3), 1.0, chunks=1), lambda: xa.eye(-1),
    lambda: xa.eye(2, -1), lambda: xa.ones(-2, chunks=2), lambda: xa.zeros((3, -1)),
    lambda: xa.empty(-1), lambda: xa.indices((-1, 2)), lambda: xa.random.default_rng(0).random(-1),
    lambda: normalize_chunks(2, (4, -1)),
])
def test_negative_dimensions_fail_when_built(make):
    with pytest.raises(ValueError, match="negative dimensions are not allowed"):
        make()


@pytest.mark.parametrize("op", ["nanmax", "nanmin"])
@pytest.mark.parametrize("shape, axis", [((0,), None), ((0, 3), 0), ((0, 3), None),
                                         ((3, 0), 1), ((0, 0), 1), ((2, 0), (0, 1))])
def test_nan_extremes_of_empty_slices_fail_when_built(op, shape, axis):
    expected = numpy_error(lambda: getattr(np, op)(np.zeros(shape), axis=axis))
    with pytest.raises(ValueError, match=re.escape(str(expected))):
        getattr(xa, op)(xa.zeros(shape, chunks=2), axis=axis)
    # an empty axis that is not reduced is fine, as in numpy
    assert_array_equal(xa.nanmax(xa.zeros((0, 3), chunks=2), axis=1).compute(),
                       np.nanmax(np.zeros((0, 3)), axis=1))


# --------------------------------------------------------------------------- axis=None


@pytest.mark.parametrize("chunks", [1, 2, (2, 3), ((1, 2), (3, 1))])
def test_concatenate_with_axis_none_flattens(chunks):
    a = np.arange(12).reshape(3, 4)
    b = np.arange(4.0) * 10
    x = xa.from_array(a, chunks=chunks)
    y = xa.from_array(b, chunks=3)
    for got in (xa.concatenate([x, y, x.T], axis=None), np.concatenate([x, y, x.T], axis=None)):
        assert isinstance(got, Array)
        assert_array_equal(got.compute(), np.concatenate([a, b, a.T], axis=None))
    assert_array_equal(xa.concatenate([xa.asarray(1), xa.asarray(2)], axis=None).compute(),
                       np.concatenate([np.array(1), np.array(2)], axis=None))


@pytest.mark.parametrize("chunks", [(1, 3), (2, 2), 1])
@pytest.mark.parametrize("op", ["sort", "argsort"])
def test_sort_with_axis_none_sorts_the_flattened_array(op, chunks):
    a = np.array([[3, 1, 2], [9, 7, 8]])
    x = xa.from_array(a, chunks=chunks)
    for whole in (x, x.rechunk(-1)):  # (a flattened array of many chunks is put in one first)
        assert_array_equal(getattr(xa, op)(whole, axis=None).compute(),
                           getattr(np, op)(a, axis=None, kind="stable"))
    assert_array_equal(getattr(xa, op)(xa.asarray(5), axis=None).compute(),
                       getattr(np, op)(np.array(5), axis=None))
    with pytest.raises(TypeError, match="cannot be interpreted as an integer"):
        getattr(xa, op)(x, axis=1.0)


# --------------------------------------------------------------------------- unknown chunks


@pytest.mark.parametrize("chunks", [1, 2, 5])
def test_one_dimensional_unknown_chunks_flatten_to_themselves(chunks):
    a = np.array([3.0, -1.0, 5.0, 2.0, 7.0, -4.0])
    v = xa.from_array(a, chunks=chunks)
    u = v[v > 0]
    assert xa.ravel(u) is u and u.flatten() is u
    assert_array_equal(xa.cumsum(u).compute(), np.cumsum(a[a > 0]))
    assert_array_equal(xa.cumprod(u, axis=None).compute(), np.cumprod(a[a > 0]))
    assert_array_equal(xa.concatenate([u, v], axis=None).compute(),
                       np.concatenate([a[a > 0], a]))


def test_unknown_chunks_name_compute_chunk_sizes():
    v = xa.from_array(np.arange(6.0), chunks=2)
    u = v[v > 2]
    for build in (lambda: xa.stack([u, v[:3]]), lambda: u.reshape(1, -1),
                  lambda: xa.reshape(forget_chunks(xa.ones((2, 2), chunks=1)), -1)):
        with pytest.raises(ValueError, match=r"compute_chunk_sizes\(\)"):
            build()
    assert_array_equal(xa.stack([u, u * 2]).compute(), np.stack([[3.0, 4, 5], [6.0, 8, 10]]))  # (one mask's)
    w = u.compute_chunk_sizes()
    assert_array_equal(xa.stack([w, w]).compute(), np.stack([[3.0, 4, 5]] * 2))


# --------------------------------------------------------------------------- zarr


def test_to_zarr_with_unknown_chunks_names_compute_chunk_sizes(tmp_path):
    pytest.importorskip("zarr")
    v = xa.from_array(np.arange(6.0), chunks=2)
    with pytest.raises(ValueError, match=r"to_zarr needs .*compute_chunk_sizes\(\)"):
        xa.to_zarr(v[v > 2], str(tmp_path / "u.zarr"))
    assert not (tmp_path / "u.zarr").exists()


@pytest.mark.parametrize("chunks", [3, (2, 2), ((1, 4), (7,)), 1])
def test_to_zarr_honours_chunks(tmp_path, chunks):
    zarr = pytest.importorskip("zarr")
    a = np.arange(35.0).reshape(5, 7)
    path = str(tmp_path / "a.zarr")
    xa.to_zarr(xa.from_array(a, chunks=chunks), path, chunks=(2, 3))
    z = zarr.open_array(path, mode="r")
    assert z.chunks == (2, 3)
    assert_array_equal(z[...], a)


# --------------------------------------------------------------------------- argwhere


@pytest.mark.parametrize("value", [5.0, 0.0])
def test_argwhere_of_a_0d_array_is_numpys(value):
    got = xa.argwhere(xa.asarray(np.array(value))).compute()
    expected = np.argwhere(np.array(value))
    assert got.shape == expected.shape and got.dtype == expected.dtype


@pytest.mark.parametrize("name", ["min", "max", "nanmin", "nanmax"])
def test_min_max_of_nothing_fail_when_built_as_numpy(name):
    a = np.zeros((0, 3))
    x = xa.from_array(a, chunks=2)
    with pytest.raises(ValueError, match=str(numpy_error(lambda: getattr(np, name)(a))).split(" which")[0]):
        getattr(xa, name)(x)
    assert_array_equal(getattr(xa, name)(x, axis=1).compute(), getattr(np, name)(a, axis=1))


@pytest.mark.parametrize("chunks", [1, 2, 4])
def test_argmax_argmin_of_times_take_nat_as_numpy(chunks):
    d = np.array(["2020-01-01", "NaT", "2021-03-04", "2019-01-01"], "M8[D]")
    x = xa.from_array(d, chunks=chunks)
    assert int(xa.argmax(x).compute()) == np.argmax(d) and int(xa.argmin(x).compute()) == np.argmin(d)
    t = (d - np.datetime64("2019-01-01")).reshape(2, 2)
    assert_array_equal(xa.argmax(xa.from_array(t, chunks=1), axis=0).compute(), np.argmax(t, axis=0))


def test_argmax_of_a_0d_array_keeps_no_dimension():
    got = xa.argmax(xa.asarray(3.0), keepdims=True)
    assert got.shape == np.argmax(np.array(3.0), keepdims=True).shape == ()
    assert int(got.compute()) == 0


def test_iter_of_a_0d_array_fails_at_once_and_take_by_an_xsched_array_runs():
    with pytest.raises(TypeError, match="0-d"):
        iter(xa.asarray(5))
    x = xa.from_array(np.ones((2, 3)), chunks=1)
    assert xa.take(x, xa.from_array(np.array([0, 1]), chunks=1), axis=1).compute().tolist() == [[1, 1], [1, 1]]
    got = np.multiply.outer(x, x)  # (not xa.outer, which flattens: every axis of both, as NumPy's)
    assert got.shape == (2, 3, 2, 3)
    np.testing.assert_array_equal(got.compute(), np.multiply.outer(np.ones((2, 3)), np.ones((2, 3))))


def test_a_true_where_masks_nothing_and_unknown_sizes_get_their_advice():
    x = xa.from_array(np.arange(6.0), chunks=2)
    assert_array_equal(np.add(x, 1, where=np.True_).compute(), np.arange(6.0) + 1)
    with pytest.raises(TypeError, match="where="):
        np.add(x, 1, where=x > 2)
    with pytest.raises(ValueError, match=r"compute_chunk_sizes\(\)"):
        xa.sort(x[x > 1], axis=None)
    with pytest.raises(ValueError, match="operation maximum which has no identity"):
        xa.max(x[x > 10]).compute()  # (sizes unknown when built: NumPy's words when computed)


@pytest.mark.parametrize("shape", [True, (2, True), np.True_])
def test_a_bool_is_no_shape(shape):
    numpy_error(lambda: np.zeros(shape))
    with pytest.raises(TypeError, match="integers"):
        xa.zeros(shape)


@pytest.mark.parametrize("chunks", [(2, 3, 2), (5, 4, 3), (1, 1, 3)])
def test_a_mask_of_the_leading_axes_picks_rows_as_numpy(chunks):
    """x[x[:, 0] > t] (an xsched mask of the first axes) picks sub-arrays, as NumPy does,
    with the masked axes joined into one of unknown length."""
    a = np.arange(60.0).reshape(5, 4, 3)
    x = xa.from_array(a, chunks=chunks)
    rows = x[x[:, 0, 0] > 10]
    assert np.isnan(rows.shape[0]) and rows.shape[1:] == (4, 3)
    np.testing.assert_array_equal(rows.compute(), a[a[:, 0, 0] > 10])
    np.testing.assert_array_equal(rows.sum(axis=0).compute(), a[a[:, 0, 0] > 10].sum(axis=0))
    plane = a[:, :, 0] % 2 == 0
    np.testing.assert_array_equal(x[x[:, :, 0] % 2 == 0].compute(), a[plane])
    np.testing.assert_array_equal(x[plane].compute(), a[plane])
    with pytest.raises(IndexError, match="first axes"):
        x[x[0] > 1]


@pytest.mark.parametrize("values", [[1, 2, 3, 4], [1, 2, "NaT", 4]])
def test_nansum_and_nanmean_of_timedeltas_as_numpy(values):
    """Times have no NaN to skip (NaT stays NaT): NumPy sums and averages them as they are."""
    a = np.array(values, "m8[s]")
    x = xa.from_array(a, chunks=3)
    for f in (xa.nansum, xa.nanmean, xa.nanmax):
        got, expected = f(x).compute(), getattr(np, f.__name__)(a)
        assert got.dtype == expected.dtype and (got == expected or (np.isnat(got) and np.isnat(expected)))
    assert float(xa.nanmean(xa.from_array(np.arange(5), chunks=2)).compute()) == 2.0


def test_nanargmax_and_nanargmin_as_numpy_over_random_chunkings():
    """NaNs count as -inf (+inf for the min) exactly as NumPy's do, across blocks too; a
    slice of NaNs only fails when computed."""
    rng = np.random.default_rng(1)
    for _ in range(60):
        shape = tuple(int(v) for v in rng.integers(1, 6, size=rng.integers(1, 3)))
        a = rng.integers(-3, 3, size=shape).astype(float)
        a[rng.random(shape) < 0.3] = np.nan
        a[rng.random(shape) < 0.15] = -np.inf
        a[rng.random(shape) < 0.15] = np.inf
        x = xa.from_array(a, chunks=tuple(int(rng.integers(1, s + 1)) for s in shape))
        for name in ("nanargmax", "nanargmin"):
            for axis in [None, *range(a.ndim)]:
                try:
                    expected = getattr(np, name)(a, axis=axis)
                except ValueError:
                    with pytest.raises(ValueError, match="All-NaN slice"):
                        getattr(xa, name)(x, axis=axis, split_every=2).compute()
                    continue
                np.testing.assert_array_equal(getattr(xa, name)(x, axis=axis, split_every=2).compute(), expected)
    ints = xa.from_array(np.array([3, 9, 9]), chunks=2)
    assert int(np.nanargmax(ints)) == 1 and int(np.nanargmin(ints)) == 0


def test_nanmean_takes_numpy_s_dtype():
    a = np.array([[1, np.nan, 3], [4, 5, np.nan]], "f4")
    x = xa.from_array(a, chunks=1)
    for kwargs in [{}, {"dtype": "f8"}, {"axis": 0, "dtype": "f8"}]:
        got, expected = xa.nanmean(x, **kwargs).compute(), np.nanmean(a, **kwargs)
        assert got.dtype == expected.dtype
        np.testing.assert_allclose(got, expected)


def test_chunks_as_a_size_in_bytes():
    x = xa.from_array(np.zeros((30, 10)), chunks=("800B", -1))
    assert x.chunks == ((10, 10, 10), (10,))
    assert xa.zeros((100, 100), chunks="8KiB").chunks == ((32, 32, 32, 4),) * 2
    with pytest.raises(ValueError, match="size in bytes like '64MiB'"):
        xa.zeros(10, chunks="lots")
    with pytest.raises(ValueError, match="two sizes in bytes"):
        xa.zeros((10, 10), chunks=("1KiB", "2KiB"))


def test_an_integer_index_of_several_dimensions_as_numpy():
    """x[i2d] (and take): the axis becomes the index's axes, placed as NumPy places them."""
    a = np.arange(60).reshape(5, 4, 3)
    x = xa.from_array(a, chunks=(2, 3, 2))
    i2, j2 = np.array([[0, 4], [3, 1]]), np.array([[0, 3], [2, 1]])
    for index in [i2, (slice(None), j2), (1, j2), (2, slice(None), np.array([[0, 2], [1, 1]])),
                  (np.array([[0, 1]]), 2), (Ellipsis, np.array([[2]])), np.zeros((0, 2), int)]:
        np.testing.assert_array_equal(x[index].compute(), a[index])
        assert x[index].shape == a[index].shape
    np.testing.assert_array_equal(xa.take(x, j2, axis=1).compute(), np.take(a, j2, axis=1))


def test_an_xsched_mask_along_one_axis_as_numpy():
    """x[:, mask] with a lazy 1-d boolean mask of that axis: its lengths become unknown; int
    entries apart from it move it first, as NumPy does."""
    a = np.arange(60.0).reshape(3, 4, 5)
    x = xa.from_array(a, chunks=(2, 3, 2))
    m1, m2 = a[0, :, 0] % 2 == 0, a[0, 0, :] > 1
    lazy1, lazy2 = xa.from_array(m1, chunks=2), x[0, 0, :] > 1
    for index, plain in [((slice(None), lazy1), (slice(None), m1)), ((Ellipsis, lazy2), (Ellipsis, m2)),
                         ((1, slice(None), lazy2), (1, slice(None), m2)),
                         ((None, slice(1, 3), lazy1), (None, slice(1, 3), m1)),
                         ((slice(None), lazy1, 2), (slice(None), m1, 2))]:
        got = x[index]
        assert any(np.isnan(c) for cs in got.chunks for c in cs)
        np.testing.assert_array_equal(got.compute(), a[plain])
    np.testing.assert_array_equal(x[:, xa.from_array(np.arange(4)[::-1], chunks=2)].compute(), a[:, ::-1])
    with pytest.raises(TypeError, match="1-d boolean mask .* or 1-d integer positions"):
        x[1:, xa.from_array(np.arange(4.0), chunks=2)]  # (floats are neither)
    with pytest.raises(IndexError, match="axis's length 4"):
        x[:, lazy2]


@pytest.mark.parametrize("dims, chunks", [((2, 3), 2), ((4,), 3), ((3, 4, 5), (2, 3, 2)), ((0, 3), 2)])
def test_sparse_indices_are_numpys_open_grid(dims, chunks):
    got, want = xa.indices(dims, chunks=chunks, sparse=True), np.indices(dims, sparse=True)
    assert isinstance(got, tuple) and len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_array_equal(g.compute(), w)


@pytest.mark.parametrize("join", ["concatenate", "stack", "hstack", "vstack"])
@pytest.mark.parametrize("dtype", [None, "int32", "float32", "complex128", "U"])
@pytest.mark.parametrize("casting", ["no", "equiv", "safe", "same_kind", "unsafe"])
def test_joins_take_numpys_dtype_and_casting(join, dtype, casting):
    a, b = np.arange(12.0).reshape(3, 4) + 0.5, np.arange(12).reshape(3, 4)
    x, y = xa.from_array(a, chunks=2), xa.from_array(b, chunks=(1, 3))
    for ins, xins in (([a, b], [x, y]), ([b, b], [y, y]), ([a], [x])):
        try:
            expected = getattr(np, join)(ins, dtype=dtype, casting=casting)
        except TypeError as want:  # (refused when built, with NumPy's words)
            with pytest.raises(TypeError, match=re.escape(str(want))):
                getattr(xa, join)(xins, dtype=dtype, casting=casting)
            continue
        got = getattr(xa, join)(xins, dtype=dtype, casting=casting)
        assert got.dtype == expected.dtype and isinstance(getattr(np, join)(xins, dtype=dtype, casting=casting),
                                                          Array)
        assert_array_equal(got.compute(), expected)
