"""xsched.array's functions that run your own code over blocks, and the NumPy functions
xarray reaches through ``__array_function__``: ``apply_gufunc``, ``reduction``, ``scan``,
``unify_chunks``, ``store``, ``pad``, ``sliding_window_view``, ``nanvar``/``nanstd``, and
``Array.real``/``imag``/``astype(copy=)``. Each is checked against NumPy on several
chunkings, including blocks of one cell and of unequal lengths. Everything runs in this
process (no client); xarray's use of them: tests/unit/test_array_xarray.py."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import xsched
import xsched.array as xa
from xsched.graph.delayed import Delayed
from xsched.graph.spec import Task
from xsched.array.mapping import blocks_of

RNG = np.random.default_rng(7)
DATA = RNG.random((7, 5, 4))
CHUNKINGS = [(7, 5, 4), (2, 3, 4), (1, 1, 4), ((3, 4), (1, 4), (2, 2))]


def with_nans(a: np.ndarray, fraction: float = 0.3) -> np.ndarray:
    out = a.copy()
    out[np.random.default_rng(3).random(a.shape) < fraction] = np.nan
    return out


def task_names(x: xa.Array) -> set[str]:
    return {k.rsplit("-", 2)[0] for k, v in x.__xsched_graph__().items() if isinstance(v, Task)}


# --------------------------------------------------------------------------- apply_gufunc


@pytest.mark.parametrize("chunks", CHUNKINGS)
def test_apply_gufunc_with_core_dimensions_matches_numpy(chunks):
    x = xa.from_array(DATA, chunks=chunks).rechunk({2: -1})

    def detrend(v):  # consumes and produces the last axis
        return v - v.mean(axis=-1, keepdims=True)

    got = xa.apply_gufunc(detrend, "(t)->(t)", x, output_dtypes=float)
    assert got.chunks == x.chunks
    np.testing.assert_allclose(got.compute(), detrend(DATA))

    def spread(v):
        return v.max(axis=-1) - v.min(axis=-1)

    got = xa.apply_gufunc(spread, "(t)->()", x)  # dtype inferred
    assert got.chunks == x.chunks[:2] and got.dtype == np.float64
    np.testing.assert_allclose(got.compute(), spread(DATA))


def test_apply_gufunc_broadcasts_loop_dimensions_and_takes_numpy_and_scalar_arguments():
    x = xa.from_array(DATA, chunks=(3, 2, 4))
    weights = np.arange(4.0)
    got = xa.apply_gufunc(lambda v, w, c: (v * w).sum(axis=-1) + c, "(i),(i),()->()", x,
                          weights, 1.5, output_dtypes=float)
    np.testing.assert_allclose(got.compute(), (DATA * weights).sum(axis=-1) + 1.5)
    row = xa.from_array(DATA[:1, :1], chunks=1)  # loop axes of length 1 broadcast
    got = xa.apply_gufunc(np.add, "(),()->()", x, row, output_dtypes=float)
    np.testing.assert_allclose(got.compute(), DATA + DATA[:1, :1])


def test_apply_gufunc_several_outputs_new_dimensions_vectorize_and_kwargs():
    x = xa.from_array(DATA, chunks=(3, 2, 2))
    lo, hi = xa.apply_gufunc(lambda v: (v.min(-1), v.max(-1)), "(t)->(),()", x,
                             output_dtypes=[float, float], allow_rechunk=True)
    np.testing.assert_allclose(lo.compute(), DATA.min(-1))
    np.testing.assert_allclose(hi.compute(), DATA.max(-1))
    # the function runs once per block for both outputs
    assert sum(1 for k in hi.__xsched_graph__() if "lambda" in k and "output" not in k) == 3 * 3

    def quartiles(v, q):
        return np.moveaxis(np.quantile(v, q, axis=-1), 0, -1)

    got = xa.apply_gufunc(quartiles, "(t)->(q)", x, output_sizes={"q": 3}, allow_rechunk=True,
                          output_dtypes=float, q=[0.25, 0.5, 0.75])
    assert got.shape == (7, 5, 3) and got.chunks[-1] == (3,)
    np.testing.assert_allclose(got.compute(), quartiles(DATA, [0.25, 0.5, 0.75]))

    def scalar_range(v):  # written for one vector: vectorize loops over the rest
        return float(v.max() - v.min())

    got = xa.apply_gufunc(scalar_range, "(t)->()", x, vectorize=True, allow_rechunk=True,
                          output_dtypes=float)
    np.testing.assert_allclose(got.compute(), DATA.max(-1) - DATA.min(-1))


@pytest.mark.parametrize("axes", [[(1, 2), (0, 2), (1, 2)], [(1, 2), (0, 2), (0, 1)], [(-2, -1), (0, -1), (-1, 0)]])
def test_apply_gufunc_takes_core_axes_anywhere_as_numpy_s_gufuncs_do(axes):
    rng = np.random.default_rng(0)
    a, b = rng.random((3, 4, 5)), rng.random((5, 3, 6))
    got = xa.apply_gufunc(np.matmul, "(i,j),(j,k)->(i,k)", xa.from_array(a, chunks=(1, 4, 5)),
                          xa.from_array(b, chunks=(5, 1, 3)), axes=axes, output_dtypes=float, allow_rechunk=True)
    np.testing.assert_allclose(got.compute(), np.matmul(a, b, axes=axes))


@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("keepdims", [False, True])
def test_apply_gufunc_axis_and_keepdims_reduce_where_asked(axis, keepdims):
    x = xa.from_array(DATA, chunks=2)
    got = xa.apply_gufunc(lambda v: v.mean(axis=-1), "(i)->()", x, axis=axis, keepdims=keepdims,
                          output_dtypes=float, allow_rechunk=True)
    np.testing.assert_allclose(got.compute(), DATA.mean(axis=axis, keepdims=keepdims))


def test_gufunc_objects_and_meta_as_dask_s():
    def stats(v):
        return v.mean(axis=-1), v.std(axis=-1)

    x = xa.from_array(DATA, chunks=(2, 2, -1))
    gustats = xa.gufunc(stats, signature="(i)->(),()", meta=(np.array((), "f4"), np.array((), "f8")))
    mean, std = gustats(x)
    assert (mean.dtype, std.dtype) == (np.float32, np.float64) and gustats.__name__ == "stats"
    np.testing.assert_allclose(std.compute(), DATA.std(axis=-1))
    assert "signature='(i)->(),()'" in repr(gustats)
    spread = xa.as_gufunc("(i)->()", output_dtypes=float)(lambda v: v.max(-1) - v.min(-1))
    assert isinstance(spread, xa.gufunc) and spread.signature == "(i)->()"
    np.testing.assert_allclose(spread(x).compute(), DATA.max(-1) - DATA.min(-1))
    with pytest.raises(TypeError, match="signature must be a string"):
        xa.gufunc(stats)
    with pytest.raises(TypeError, match="meta= takes an empty array"):
        xa.apply_gufunc(stats, "(i)->(),()", x, meta=("f8", "f8"))


def test_apply_gufunc_errors_name_the_problem():
    x = xa.from_array(DATA, chunks=2)
    with pytest.raises(ValueError, match=r"core dimension 't' of argument 0 \(axis 2\) is cut into 2 blocks"):
        xa.apply_gufunc(np.sum, "(t)->()", x, output_dtypes=float)
    with pytest.raises(ValueError, match="output core dimension 'k' is in no input; give its length"):
        xa.apply_gufunc(np.sum, "()->(k)", x, output_dtypes=float)
    with pytest.raises(ValueError, match="names 2 inputs, but 1 arguments"):
        xa.apply_gufunc(np.add, "(),()->()", x, output_dtypes=float)
    with pytest.raises(ValueError, match="core dimension 'i' has length 4 in one argument and 3"):
        xa.apply_gufunc(np.dot, "(i),(i)->()", x.rechunk({2: -1}), np.ones(3), output_dtypes=float)
    with pytest.raises(ValueError, match=r"axes= gives 2 axes for input 0, whose core dimensions are \('t',\)"):
        xa.apply_gufunc(np.sum, "(t)->()", x, axes=[(0, 1)], output_dtypes=float)
    with pytest.raises(ValueError, match="axis= is for a signature whose inputs share one core dimension"):
        xa.apply_gufunc(np.matmul, "(i,j),(j,k)->(i,k)", x, x, axis=0)
    with pytest.raises(ValueError, match="keepdims=True is for a signature"):
        xa.apply_gufunc(np.outer, "(i),(j)->(i,j)", x, x, keepdims=True)
    with pytest.raises(ValueError, match="needs one '->'"):
        xa.apply_gufunc(np.sum, "(t)", x)
    with pytest.raises(ValueError, match="should return a tuple of 2 arrays"):
        xa.apply_gufunc(lambda v: v, "()->(),()", x, output_dtypes=[float, float])[0].compute()


# --------------------------------------------------------------------------- reduction


def nanfirst(block, axis, keepdims):
    """The first non-NaN value along the (single) axis: order matters."""
    (a,) = axis
    pos = np.expand_dims(np.argmax(~np.isnan(block), axis=a), a)
    out = np.take_along_axis(block, pos, axis=a)
    return out if keepdims else np.squeeze(out, axis=a)


@pytest.mark.filterwarnings("ignore:All-NaN slice:RuntimeWarning")
@pytest.mark.parametrize("chunks", CHUNKINGS)
@pytest.mark.parametrize("split_every", [None, 2])
def test_reduction_of_your_own_functions_keeps_the_order_of_blocks(chunks, split_every):
    data = with_nans(DATA, 0.6)
    x = xa.from_array(data, chunks=chunks)
    for axis in range(3):
        got = xa.reduction(x, nanfirst, nanfirst, axis=axis, dtype=float,
                           split_every=split_every)
        want = np.squeeze(np.take_along_axis(
            data, np.expand_dims(np.argmax(~np.isnan(data), axis=axis), axis), axis), axis)
        np.testing.assert_array_equal(got.compute(), want)
    # several axes at once, with a separate combine; keepdims keeps them as length 1
    got = xa.reduction(x, np.nanmax, np.nanmax, combine=np.nanmax, axis=(0, 2), keepdims=True,
                       dtype=float, split_every=split_every)
    assert got.shape == (1, 5, 1)
    np.testing.assert_array_equal(got.compute(), np.nanmax(data, axis=(0, 2), keepdims=True))


def test_reduction_passes_partials_as_lists_without_concatenate_and_needs_a_dtype():
    x = xa.from_array(np.arange(10.0), chunks=3)

    def chunk(block, axis, keepdims):
        return [(block.min(), block.max())]

    def combine(parts, axis, keepdims):  # partials as lists: merged into one such partial
        flat = [p for part in parts for p in part]
        return [(min(lo for lo, _ in flat), max(hi for _, hi in flat))]

    def aggregate(parts, axis, keepdims):
        ((lo, hi),) = combine(parts, axis, keepdims)
        return np.array(hi - lo)

    got = xa.reduction(x, chunk, aggregate, combine=combine, axis=0, dtype=float,
                       concatenate=False, split_every=2)
    assert float(got.compute()) == 9.0
    assert any(k.startswith("chunk-combine") for k in got.__xsched_graph__())  # a tree, with levels
    with pytest.raises(ValueError, match="dtype= is required"):
        xa.reduction(x, np.sum, np.sum, axis=0, dtype=None)


# --------------------------------------------------------------------------- scan


def ffill(block, axis, dtype=None):
    """NaNs replaced by the last valid value before them, within the block."""
    out = np.moveaxis(block.copy(), axis, 0)
    for i in range(1, out.shape[0]):
        out[i] = np.where(np.isnan(out[i]), out[i - 1], out[i])
    return np.moveaxis(out, 0, axis)


def last_valid(block, axis, keepdims=True):
    return np.expand_dims(ffill(block, axis).take(-1, axis=axis), axis)


def keep_valid(carry, values):
    return np.where(np.isnan(values), carry, values)


@pytest.mark.parametrize("chunks", CHUNKINGS)
@pytest.mark.parametrize("preop", [None, last_valid])
def test_scan_forward_fills_across_blocks(chunks, preop):
    data = with_nans(DATA, 0.6)
    x = xa.from_array(data, chunks=chunks)
    for axis in range(3):
        got = xa.scan(ffill, keep_valid, np.nan, x, axis=axis, dtype=x.dtype, preop=preop,
                      method="blelloch")
        np.testing.assert_array_equal(got.compute(), ffill(data, axis))
    np.testing.assert_allclose(xa.scan(np.cumsum, np.add, 0, x, axis=1).compute(),
                               np.cumsum(data, axis=1))


def test_scan_flattens_without_an_axis_and_checks_its_arguments():
    x = xa.from_array(np.arange(1, 7).reshape(2, 3), chunks=1)
    assert xa.scan(np.cumprod, np.multiply, 1, x).compute().tolist() == [1, 2, 6, 24, 120, 720]
    with pytest.raises(ValueError, match="method must be 'sequential' or 'blelloch'"):
        xa.scan(np.cumsum, np.add, 0, x, axis=0, method="parallel")
    with pytest.raises(TypeError, match="binop must be a function"):
        xa.scan(np.cumsum, 0, 0, x, axis=0)


# --------------------------------------------------------------------------- unify_chunks


def test_unify_chunks_cuts_every_argument_wherever_one_is_cut():
    a = xa.from_array(np.ones((6, 4)), chunks=(2, 4))
    b = xa.from_array(np.ones((4, 6)), chunks=(3, 3))
    one = xa.from_array(np.ones((1, 4)), chunks=(1, 4))  # broadcasts along i
    chunks, (a2, b2, one2, scalar) = xa.unify_chunks(a, "ij", b, "ji", one, "ij", 5, None)
    assert chunks == {"i": (2, 1, 1, 2), "j": (3, 1)}
    assert a2.chunks == ((2, 1, 1, 2), (3, 1)) and b2.chunks == ((3, 1), (2, 1, 1, 2))
    assert one2.chunks == ((1,), (3, 1))
    # one argument in many blocks and the others in one: its blocks, and it is kept as it is
    single = xa.from_array(np.ones((4, 6)), chunks=-1)
    chunks, (a3, single3) = xa.unify_chunks(a, "ij", single, "ji")
    assert chunks == {"i": (2, 2, 2), "j": (4,)} and a3 is a and single3.chunks == ((4,), (2, 2, 2))
    assert scalar == 5
    np.testing.assert_array_equal(b2.compute(), np.ones((4, 6)))
    with pytest.raises(ValueError, match="unify_chunks: index 'i' has length 6 in argument 0 but 4"):
        xa.unify_chunks(a, "ij", b, "ij")


# --------------------------------------------------------------------------- store


class Target:
    """A target that only takes ``target[region] = block`` and counts writes under a lock."""

    def __init__(self, shape):
        self.data = np.zeros(shape)
        self.shape = shape
        self.writes = 0
        self.lock = threading.Lock()

    def __setitem__(self, region, block):
        assert self.lock.locked(), "written without the lock held"
        self.data[region] = block
        self.writes += 1


def test_store_writes_every_block_into_setitem_targets_with_regions_and_a_lock():
    x = xa.from_array(DATA, chunks=(3, 2, 4))
    target = Target((10, 5, 4))
    xa.store(x * 2, target, lock=target.lock, regions=(slice(3, 10),), batch_size=2)
    np.testing.assert_allclose(target.data[3:], DATA * 2)
    assert not target.data[:3].any() and target.writes == x.npartitions
    out_a, out_b = np.zeros((7, 5, 4)), np.zeros(())
    xa.store([x, x.sum()], [out_a, out_b], lock=True)
    np.testing.assert_allclose(out_a, DATA)
    assert float(out_b) == pytest.approx(DATA.sum())


class FileTarget:
    """A target that opens its storage by path where it writes (as a task's argument, a copy
    of it writes the same file): a float64 file of ``shape``, as a memmap."""

    def __init__(self, path, shape):
        self.path, self.shape = str(path), shape
        np.lib.format.open_memmap(self.path, mode="w+", dtype="f8", shape=shape).flush()

    def __setitem__(self, region, block):
        data = np.load(self.path, mmap_mode="r+")
        data[region] = block
        data.flush()

    def read(self):
        return np.load(self.path)


def test_store_compute_false_writes_when_computed(tmp_path):
    x = xa.from_array(DATA, chunks=(3, 2, 4))
    big, small = FileTarget(tmp_path / "big.npy", (10, 5, 4)), FileTarget(tmp_path / "small.npy", ())
    first = xa.store(x * 2, big, regions=(slice(3, 10),), compute=False)
    second = xa.store(x.sum(), small, compute=False)
    assert isinstance(first, Delayed) and not big.read().any() and not small.read()  # nothing yet
    assert xsched.compute(first, second) == (None, None)
    np.testing.assert_allclose(big.read()[3:], DATA * 2)
    assert not big.read()[:3].any() and float(small.read()) == pytest.approx(DATA.sum())


def test_store_compute_false_refuses_what_cannot_travel_with_its_tasks(tmp_path):
    x = xa.ones(4, chunks=2)
    target = FileTarget(tmp_path / "t.npy", (4,))
    with pytest.raises(ValueError, match="target 0 is a NumPy array in this process's memory.*compute=True"):
        xa.store(x, np.zeros(4), compute=False)
    with pytest.raises(ValueError, match=r"lock=True is a lock of this process.*xsched.Lock"):
        xa.store(x, target, lock=True, compute=False)
    with pytest.raises(TypeError, match=r"the lock cannot be sent with the tasks that write later"):
        xa.store(x, target, lock=threading.Lock(), compute=False)
    with pytest.raises(TypeError, match=r"target 0 \(Target\) cannot be sent .*to_zarr"):
        xa.store(x, Target((4,)), compute=False)  # it holds a threading lock
    bad = xa.map_blocks(lambda b: b[:1], x, dtype=x.dtype)  # blocks of another shape than promised
    with pytest.raises(ValueError, match=r"lambda: block \(\d,\) came back with shape \(1,\), but the array's "
                                         r"chunks promised \(2,\)"):
        xa.store(bad, target, compute=False).compute()
    unchecked = blocks_of(lambda b: b[:1], [x], {}, None, x.dtype, None, None, None, check=False)
    with pytest.raises(ValueError, match=r"block \(\d,\) of source 0 .* came back with shape \(1,\), but its "
                                         r"place .* has shape \(2,\)"):
        xa.store(unchecked, target, compute=False).compute()


def test_store_refuses_what_it_cannot_do():
    x = xa.ones(4, chunks=2)
    with pytest.raises(ValueError, match="1 sources but 2 targets"):
        xa.store([x], [np.zeros(4), np.zeros(4)])
    with pytest.raises(ValueError, match=r"source has shape \(4,\) but its target \(5,\)"):
        xa.store(x, np.zeros(5))
    with pytest.raises(ValueError, match="spans 3 elements on axis 0 but the source has 4"):
        xa.store(x, np.zeros(9), regions=(slice(0, 3),))
    with pytest.raises(TypeError, match="not an xsched array"):
        xa.store([np.ones(4)], [np.zeros(4)])
    with pytest.raises(TypeError, match="lock must be True, False, None or a lock"):
        xa.store(x, np.zeros(4), lock="yes")


# --------------------------------------------------------------------------- pad, windows


@pytest.mark.parametrize("chunks", CHUNKINGS)
@pytest.mark.parametrize("mode", ["constant", "edge", "reflect", "symmetric", "wrap"])
def test_pad_matches_numpy(chunks, mode):
    x = xa.from_array(DATA, chunks=chunks)
    for width in [1, (2, 0), ((0, 3), (1, 1), (3, 2))]:
        kwargs = {"constant_values": -1.5} if mode == "constant" else {}
        got = np.pad(x, width, mode=mode, **kwargs)  # NumPy's pad runs xsched.array's
        assert isinstance(got, xa.Array)
        np.testing.assert_array_equal(got.compute(), np.pad(DATA, width, mode=mode, **kwargs))
    got = xa.pad(x, 1, constant_values=((0, 1), (2, 3), (4, 5)))
    np.testing.assert_array_equal(got.compute(), np.pad(DATA, 1, constant_values=((0, 1), (2, 3), (4, 5))))


def test_pad_edge_repeats_the_edge_any_number_of_times():
    x = xa.from_array(np.arange(12.0).reshape(3, 4), chunks=2)
    for width in (6, ((5, 1), (0, 9))):
        np.testing.assert_array_equal(xa.pad(x, width, mode="edge").compute(),
                                      np.pad(np.arange(12.0).reshape(3, 4), width, mode="edge"))


@pytest.mark.parametrize("mode", ["reflect", "symmetric", "wrap"])
@pytest.mark.parametrize("n", [1, 2, 5])
def test_pad_wider_than_the_axis_takes_numpys_positions(mode, n):
    a = np.arange(n * 3.0).reshape(n, 3)
    x = xa.from_array(a, chunks=2)
    for widths in (((7, 0), (0, 4)), ((13, 2), (9, 1)), ((0, 11), (3, 3))):
        got = xa.pad(x, widths, mode=mode)
        assert got.shape == np.pad(a, widths, mode=mode).shape
        np.testing.assert_array_equal(got.compute(), np.pad(a, widths, mode=mode))


@pytest.mark.parametrize("dtype", ["float64", "int64", "int8"])
def test_pad_median_and_empty_as_numpy(dtype):
    a = (np.random.default_rng(0).random((5, 7)) * 100).astype(dtype)
    x = xa.from_array(a, chunks=(2, 3))
    for width in (1, (2, 3), ((1, 0), (0, 4))):
        for stat_length in (None, 2, (1, 3)):
            got = xa.pad(x, width, mode="median", stat_length=stat_length)
            want = np.pad(a, width, mode="median", stat_length=stat_length)
            assert got.dtype == want.dtype
            np.testing.assert_array_equal(got.compute(), want)
        empty = xa.pad(x, width, mode="empty")  # (values left undefined, as NumPy's: the shape and x's own)
        want = np.pad(a, width, mode="empty")
        lo = [w[0] for w in np.broadcast_to(np.asarray(width, dtype=object), (2, 2)).tolist()]
        assert empty.shape == want.shape and empty.dtype == want.dtype
        np.testing.assert_array_equal(empty.compute()[lo[0]:lo[0] + 5, lo[1]:lo[1] + 7], a)


def test_pad_errors():
    x = xa.from_array(np.arange(4), chunks=2)
    with pytest.raises(ValueError, match=r"^pad: cannot extend the empty axis 0 with mode='reflect'"):
        xa.pad(xa.zeros((0,), chunks=1), 4, mode="reflect")
    with pytest.raises(ValueError, match="mode 'smooth' is not supported"):
        xa.pad(x, 1, mode="smooth")
    with pytest.raises(ValueError, match="does not fit the array's dtype int64"):
        xa.pad(x, 1, constant_values=np.nan)


@pytest.mark.parametrize("chunks", CHUNKINGS)
def test_sliding_window_view_matches_numpy(chunks):
    x = xa.from_array(DATA, chunks=chunks)
    view = np.lib.stride_tricks.sliding_window_view
    for window, axis in [(3, 0), (7, 0), (1, 1), ((2, 3), (2, 0)), ((4, 2, 2), None)]:
        got = view(x, window, axis=axis)
        assert isinstance(got, xa.Array)
        np.testing.assert_array_equal(got.compute(), view(DATA, window, axis=axis))
    with pytest.raises(ValueError, match="window 8 on axis 0 must be between 1 and the axis length 7"):
        xa.sliding_window_view(x, 8, axis=0)
    with pytest.raises(NotImplementedError, match="writeable"):
        xa.sliding_window_view(x, 2, axis=0, writeable=True)


@pytest.mark.parametrize("chunks", CHUNKINGS)
def test_nanvar_and_nanstd_match_numpy(chunks):
    data = with_nans(1e6 + DATA)  # a large mean: the merge must stay accurate
    data[:, 0, 0] = np.nan  # a column with no value at all
    x = xa.from_array(data, chunks=chunks)
    with np.errstate(all="ignore"), pytest.warns(RuntimeWarning):
        for axis in [None, 0, (0, 2), 2]:
            for ddof in (0, 1):
                np.testing.assert_allclose(np.nanvar(x, axis=axis, ddof=ddof).compute(),
                                           np.nanvar(data, axis=axis, ddof=ddof), rtol=1e-7)
                np.testing.assert_allclose(np.nanstd(x, axis=axis, ddof=ddof).compute(),
                                           np.nanstd(data, axis=axis, ddof=ddof), rtol=1e-7)


def test_real_imag_and_astype_copy():
    c = np.array([1 + 2j, -3j, 4.5])
    x = xa.from_array(c, chunks=2)
    assert x.real.compute().tolist() == c.real.tolist()
    assert x.imag.compute().tolist() == c.imag.tolist()
    r = xa.from_array(np.arange(3.0), chunks=2)
    assert r.real is r and r.imag.compute().tolist() == [0.0, 0.0, 0.0]
    assert r.astype("f4", copy=False).dtype == np.float32 and r.astype(float, copy=False) is r


@pytest.mark.parametrize("chunks", CHUNKINGS)
def test_outer_integer_indexing_in_ix_form_matches_numpy(chunks):
    """xarray indexes several axes by lists with ``numpy.ix_``-shaped arrays."""
    x = xa.from_array(DATA, chunks=chunks)
    for index in [np.ix_([4, 0, 6], [3, 3], [1, 0, 2, 3]), np.ix_([2], [4, 1]) + (2,),
                  (5,) + np.ix_([0, 4], [3, 1, 2])]:
        np.testing.assert_array_equal(x[index].compute(), DATA[index])
    np.testing.assert_array_equal(x[[0, 1], [2, 3]].compute(), DATA[[0, 1], [2, 3]])  # (pointwise: points.py)
