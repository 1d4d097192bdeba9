"""xsched.array's larger NumPy surface against numpy itself: creation, random, rechunk (and
its memory bound, from the plan and measured), shape and arrangement, products, scans and
NaN reductions; errors raised when a graph is built; annotations on every task.

Shapes and chunkings are drawn from seeded generators (no hypothesis in this venv), so a
failure names its case and reproduces. Everything runs in this process (no client)."""

from __future__ import annotations

import itertools
import math
import random

import numpy as np
import pytest

import xsched
import xsched.array as xa
import xsched.config as config
from xsched.array.rechunking import overlaps, plan_rechunk
from xsched.graph.spec import Task, dependencies

from tests.support.helpers import literal_arrays

# --------------------------------------------------------------------------- helpers


def random_chunks(rng: random.Random, shape, empty_blocks=True):
    """A random explicit chunking of ``shape``, sometimes with zero-length blocks."""
    out = []
    for n in shape:
        sizes = []
        left = n
        while left > 0:
            s = rng.randint(1, max(1, min(left, rng.choice([1, 2, 3, 5, n]))))
            sizes.append(s)
            left -= s
        if empty_blocks and sizes and rng.random() < 0.15:
            sizes.insert(rng.randint(0, len(sizes)), 0)
        out.append(tuple(sizes) or (0,))
    return tuple(out)


def random_shape(rng: random.Random, ndim=None, high=7):
    ndim = rng.randint(1, 3) if ndim is None else ndim
    return tuple(rng.randint(1, high) for _ in range(ndim))


def data(shape, dtype=float, seed=0):
    values = np.random.default_rng(seed).integers(-50, 50, size=shape)
    return values.astype(dtype)


def layers_of(x):
    return x._graph.layers


def new_tasks(x, *inputs):
    """The tasks ``x`` added on top of ``inputs``."""
    old = set()
    for i in inputs:
        old |= set(i.__xsched_graph__())
    return {k: t for k, t in x.__xsched_graph__().items() if k not in old}


def run_measuring(graph, keys):
    """Run ``graph`` here, one task at a time, recording for each task the bytes of its
    inputs plus its output: what a worker holds while running it."""
    order, seen = [], set()

    def visit(key):
        stack = [(key, False)]
        while stack:
            k, done = stack.pop()
            if done:
                order.append(k)
                continue
            if k in seen:
                continue
            seen.add(k)
            stack.append((k, True))
            stack.extend((d, False) for d in dependencies(graph[k]) if d not in seen)

    for k in keys:
        visit(k)
    values, held = {}, {}
    for k in order:
        task = graph[k]
        values[k] = task.run(values) if isinstance(task, Task) else task
        deps = dependencies(task) if isinstance(task, Task) else set()
        held[k] = sum(np.asarray(values[d]).nbytes for d in deps) + np.asarray(values[k]).nbytes
    return values, held


# --------------------------------------------------------------------------- creation


@pytest.mark.parametrize("args, kwargs", [
    ((10,), {"chunks": 3}), ((2, 11, 3), {"chunks": 2}), ((10, 0, -3), {"chunks": 2}),
    ((0.0, 1.0, 0.1), {"chunks": 4}), ((5, 1), {"chunks": 2}), ((3,), {"dtype": "f4", "chunks": 2}),
    ((-2.5, 3.0, 0.5), {"chunks": 5}),
])
def test_arange_matches_numpy(args, kwargs):
    x = xa.arange(*args, **kwargs)
    expected = np.arange(*args, **{k: v for k, v in kwargs.items() if k != "chunks"})
    assert x.shape == expected.shape and x.dtype == expected.dtype
    np.testing.assert_allclose(x.compute(), expected, rtol=0, atol=1e-12)


@pytest.mark.parametrize("num", [0, 1, 2, 7, 50])
@pytest.mark.parametrize("endpoint", [True, False])
def test_linspace_matches_numpy(num, endpoint):
    x, step = xa.linspace(-1.5, 4, num, endpoint=endpoint, retstep=True, chunks=3)
    expected, estep = np.linspace(-1.5, 4, num, endpoint=endpoint, retstep=True)
    np.testing.assert_array_equal(x.compute(), expected)  # the same arithmetic: exact
    assert (np.isnan(step) and np.isnan(estep)) or step == estep
    np.testing.assert_array_equal(xa.linspace(0, 10, num, dtype=int, chunks=4).compute(),
                                  np.linspace(0, 10, num, dtype=int))


def test_filled_and_like():
    np.testing.assert_array_equal(xa.full((3, 4), 2.5, chunks=2).compute(), np.full((3, 4), 2.5))
    assert xa.full(3, 7, chunks=2).dtype == np.full(3, 7).dtype
    assert xa.empty((2, 3), dtype="i2", chunks=1).compute().shape == (2, 3)
    x = xa.from_array(np.arange(10.0), chunks=((4, 6),))
    for like, fill in [(xa.ones_like, 1), (xa.zeros_like, 0), (xa.empty_like, None)]:
        y = like(x)
        assert y.chunks == x.chunks and y.dtype == x.dtype
        if fill is not None:
            np.testing.assert_array_equal(y.compute(), np.full(10, fill, float))
    y = xa.full_like(x, 3, dtype=int, shape=(2, 5))
    assert y.shape == (2, 5) and y.dtype == int and y.compute().sum() == 30
    assert xa.zeros_like(np.ones((2, 2), "f4")).dtype == np.float32
    with pytest.raises(ValueError, match="scalar"):
        xa.full(3, [1, 2, 3])


@pytest.mark.parametrize("N, M, k", [(4, None, 0), (5, 3, 1), (3, 6, -2), (6, 6, 4), (2, 2, 7)])
def test_eye_matches_numpy(N, M, k):
    np.testing.assert_array_equal(xa.eye(N, M, k=k, chunks=2).compute(), np.eye(N, M, k=k))


def test_fromfunction_indices_meshgrid():
    f = xa.fromfunction(lambda i, j: i * 100 + j, (5, 7), dtype=int, chunks=(2, 3))
    np.testing.assert_array_equal(f.compute(), np.fromfunction(lambda i, j: i * 100 + j, (5, 7),
                                                               dtype=int))
    assert xa.fromfunction(lambda i, j: i == j, (3, 3), chunks=2).dtype == bool
    np.testing.assert_array_equal(xa.indices((3, 4), chunks=2).compute(), np.indices((3, 4)))
    a, b, c = np.arange(3), np.arange(4) * 10, np.arange(2) * 100
    for indexing in ("xy", "ij"):
        for sparse in (False, True):
            got = xa.meshgrid(xa.from_array(a, chunks=2), b, xa.from_array(c, chunks=1),
                              indexing=indexing, sparse=sparse)
            want = np.meshgrid(a, b, c, indexing=indexing, sparse=sparse)
            for g, w in zip(got, want):
                np.testing.assert_array_equal(g.compute(), w)


def test_asarray_and_array():
    x = xa.from_array(np.arange(6), chunks=2)
    assert xa.asarray(x) is x
    assert xa.asarray(x, chunks=3).chunks == ((3, 3),)
    assert xa.asarray(x, dtype=float).dtype == float
    assert xa.asarray([[1, 2], [3, 4]], chunks=1).numblocks == (2, 2)
    assert xa.asarray(3.5).shape == ()
    a = np.arange(4)
    y = xa.array(a, chunks=2)
    a[:] = -1
    np.testing.assert_array_equal(y.compute(), np.arange(4))


def test_generated_blocks_carry_no_data():
    """Blocks made on the workers: the graph holds a few numbers per block, no arrays."""
    for x in [xa.arange(10**6, chunks=10**5), xa.linspace(0, 1, 10**6, chunks=10**5),
              xa.ones((1000, 1000), chunks=250), xa.full((1000, 1000), 3, chunks=250),
              xa.eye(1000, chunks=250), xa.fromfunction(np.add, (1000, 1000), chunks=500),
              xa.indices((1000, 1000), chunks=500),
              xa.random.default_rng(0).normal(size=(1000, 1000), chunks=250)]:
        assert not [a for a in literal_arrays(x.__xsched_graph__()) if a.size > 1], x.name


# --------------------------------------------------------------------------- random


def test_random_is_reproducible_per_block_and_documented_seeding():
    rng = xa.random.default_rng(123)
    x = rng.random((7, 5), chunks=(3, 2))
    again = xa.random.default_rng(123).random((7, 5), chunks=(3, 2))
    assert x.name == again.name
    np.testing.assert_array_equal(x.compute(), again.compute())
    # each block from SeedSequence(seed, spawn_key=(call, *block_index)), whoever draws it
    full = x.compute()
    starts = [np.cumsum((0,) + c) for c in x.chunks]
    for index in np.ndindex(*x.numblocks):
        shape = tuple(c[i] for c, i in zip(x.chunks, index))
        block = np.random.default_rng(np.random.SeedSequence(123, spawn_key=(0,) + index)).random(shape)
        sl = tuple(slice(s[i], s[i + 1]) for s, i in zip(starts, index))
        np.testing.assert_array_equal(full[sl], block)
    # blocks computed alone, in any order, are the same blocks
    parts = x.to_delayed().ravel()
    order = list(range(len(parts)))
    random.Random(1).shuffle(order)
    alone = {i: parts[i].compute() for i in order}
    for i, index in enumerate(np.ndindex(*x.numblocks)):
        sl = tuple(slice(s[j], s[j + 1]) for s, j in zip(starts, index))
        np.testing.assert_array_equal(alone[i], full[sl])


def test_random_calls_differ_and_methods_have_the_right_distribution():
    rng = xa.random.default_rng(7)
    a, b = rng.random(100, chunks=30), rng.random(100, chunks=30)
    assert a.name != b.name and not np.array_equal(a.compute(), b.compute())
    n = rng.standard_normal((400, 50), chunks=(100, 25)).compute()
    assert n.shape == (400, 50) and abs(n.mean()) < 0.05 and abs(n.std() - 1) < 0.05
    m = rng.normal(5.0, 0.5, size=20_000, chunks=6_000).compute()
    assert abs(m.mean() - 5.0) < 0.02 and abs(m.std() - 0.5) < 0.02
    u = rng.uniform(-3, -1, size=(100, 100), chunks=33).compute()
    assert u.min() >= -3 and u.max() < -1
    i = rng.integers(5, 9, size=1000, chunks=128, dtype="i2", endpoint=True)
    assert i.dtype == np.int16
    assert set(np.unique(i.compute())) == {5, 6, 7, 8, 9}
    assert rng.random(dtype="f4", size=(3,), chunks=2).compute().dtype == np.float32
    assert rng.random().shape == () and 0 <= float(rng.random().compute()) < 1
    assert xa.random.default_rng(np.random.SeedSequence(5)).entropy == 5
    with pytest.raises(TypeError, match="scalar"):
        rng.normal(xa.ones(3, chunks=1), size=3)
    with pytest.raises(ValueError, match="low >= high"):
        rng.integers(5, 5, size=3)
    with pytest.raises(ValueError, match="non-negative"):
        xa.random.default_rng(-1)


# --------------------------------------------------------------------------- rechunk


@pytest.mark.parametrize("seed", range(40))
def test_rechunk_round_trips_between_random_chunkings(seed):
    rng = random.Random(seed)
    shape = random_shape(rng, high=9)
    a = data(shape, seed=seed)
    old, new = random_chunks(rng, shape), random_chunks(rng, shape)
    x = xa.from_array(a, chunks=old)
    y = x.rechunk(new)
    assert y.chunks == new
    np.testing.assert_array_equal(y.compute(), a)
    back = y.rechunk(old)
    assert back.chunks == old
    np.testing.assert_array_equal(back.compute(), a)
    # the plan through an intermediate chunking, forced by a generous bound, is exact too
    z = x.rechunk(new, limit="1GiB")
    np.testing.assert_array_equal(z.compute(), a)


@pytest.mark.parametrize("seed", range(15))
def test_rechunk_through_an_intermediate_round_trips(seed):
    """Chunkings that merge along some axes and split along others: the plan goes through
    an intermediate chunking, and the values come back exactly."""
    rng = random.Random(seed)
    shape = tuple(rng.randint(3, 12) for _ in range(rng.randint(2, 3)))
    fine = [tuple(rng.choice([1, 1, 2]) for _ in range(n)) for n in shape]
    fine = [tuple(_fit(f, n)) for f, n in zip(fine, shape)]
    merge = [rng.random() < 0.5 for _ in shape]
    merge[0], merge[1] = True, False
    old = tuple(f if m else (n,) for f, m, n in zip(fine, merge, shape))
    new = tuple((n,) if m else f for f, m, n in zip(fine, merge, shape))
    a = data(shape, seed=seed)
    y = xa.from_array(a, chunks=old).rechunk(new, limit="1GiB")
    assert y.chunks == new
    assert any(k.startswith("rechunk-mid") for k in layers_of(y))
    np.testing.assert_array_equal(y.compute(), a)
    np.testing.assert_array_equal(y.rechunk(old, limit="1GiB").compute(), a)


def _fit(sizes, n):
    out, total = [], 0
    for s in sizes:
        if total + s > n:
            break
        out.append(s)
        total += s
    if total < n:
        out.append(n - total)
    return out


def test_rechunk_specs_and_identity():
    x = xa.from_array(np.arange(24).reshape(4, 6), chunks=(1, 2))
    assert x.rechunk(x.chunks) is x
    assert x.rechunk({1: 3}).chunks == ((1, 1, 1, 1), (3, 3))
    assert x.rechunk({-1: -1}).chunks == ((1, 1, 1, 1), (6,))
    assert xa.rechunk(x, 4).chunks == ((4,), (4, 2))
    assert x.rechunk("auto").chunks == ((4,), (6,))
    with pytest.raises(ValueError, match="add up"):
        x.rechunk(((1, 2), 6))
    zero = xa.from_array(np.zeros((0, 3)), chunks=1)
    assert zero.rechunk((5, 3)).compute().shape == (0, 3)


def test_overlaps_cover_each_block_exactly():
    rng = random.Random(3)
    for _ in range(200):
        n = rng.randint(0, 20)
        src, dst = random_chunks(rng, (n,))[0], random_chunks(rng, (n,))[0]
        got = overlaps(src, dst)
        assert len(got) == len(dst)
        for size, parts in zip(dst, got):
            assert sum(hi - lo for _, lo, hi in parts) == size
            assert all(0 <= lo <= hi <= src[k] for k, lo, hi in parts)


def _plan_task_bytes(old, steps, itemsize):
    """Worst bytes one task holds in a plan, computed here from the chunkings alone: a
    piece task holds its input block and the piece; an assembling task its pieces and its
    block (twice the block); a block cut from one input block holds both."""
    worst = 0
    src = old
    for dst in steps:
        per_axis = []
        for s, d in zip(src, dst):
            starts_s, starts_d = np.cumsum((0,) + s), np.cumsum((0,) + d)
            rows = []
            for j in range(len(d)):
                lo, hi = starts_d[j], starts_d[j + 1]
                rows.append([(k, min(hi, starts_s[k + 1]) - max(lo, starts_s[k]))
                             for k in range(len(s))
                             if starts_s[k] < hi and starts_s[k + 1] > lo and s[k]])
            per_axis.append(rows)
        for index in itertools.product(*[range(len(d)) for d in dst]):
            out = math.prod(d[i] for d, i in zip(dst, index)) * itemsize
            pieces = list(itertools.product(*[per_axis[a][i] for a, i in enumerate(index)]))
            for piece in pieces:
                block = math.prod(s[k] for s, (k, _) in zip(src, piece)) * itemsize
                size = math.prod(n for _, n in piece) * itemsize
                worst = max(worst, block + (size if len(pieces) > 1 else out))
            worst = max(worst, 2 * out if len(pieces) > 1 else 0)
        src = dst
    return worst


@pytest.mark.parametrize("limit_mib", [256, 32, 20])
def test_rechunk_plan_keeps_every_task_under_the_bound(limit_mib):
    """Blocks of (1000, 1000) to (8000, 125) float64 (8 MB each), under several bounds."""
    old = ((1000,) * 8, (1000,) * 8)
    new = ((8000,), (125,) * 64)
    limit = limit_mib * 2**20
    steps = plan_rechunk(old, new, 8, limit)
    assert steps[-1] == new
    assert _plan_task_bytes(old, steps, 8) <= limit
    if limit_mib == 256:  # room for the (8000, 1000) intermediate: far fewer tasks
        assert steps == [((8000,), (1000,) * 8), new]
    x = xa.random.default_rng(0).random((8000, 8000), chunks=1000)  # (built, never computed)
    with config.set({"array.rechunk.memory": f"{limit_mib}MiB"}):
        y = x.rechunk((8000, 125))
    assert len(steps) == (2 if any(k.startswith("rechunk-mid") for k in layers_of(y)) else 1)


def test_rechunk_goes_through_an_intermediate_when_pieces_would_multiply():
    """Row blocks of one row to column blocks of one column: direct, every output block
    needs a piece of every input block (n * n pieces); the plan avoids that."""
    n = 64
    old, new = ((1,) * n, (n,)), ((n,), (1,) * n)
    for limit in (2**20, 8 * 16 * 64, 8 * 64 * 4):
        steps = plan_rechunk(old, new, 8, limit)
        assert _plan_task_bytes(old, steps, 8) <= max(limit, 2 * 8 * n)
    a = data((n, n))
    x = xa.from_array(a, chunks=(1, n))
    direct = x.rechunk((n, 1), limit=1)  # no room for any intermediate
    planned = x.rechunk((n, 1), limit="1MiB")
    assert len(new_tasks(planned, x)) * 4 < len(new_tasks(direct, x))
    np.testing.assert_array_equal(planned.compute(), a)
    np.testing.assert_array_equal(direct.compute(), a)


def test_rechunk_plan_search_without_trying_every_intermediate(monkeypatch):
    """Past ``EXHAUSTIVE`` candidate chunkings the plan is searched greedily: still exact
    and within the bound."""
    from xsched.array import rechunking

    monkeypatch.setattr(rechunking, "EXHAUSTIVE", 1)
    n = 32
    old, new = ((1,) * n, (n,), (2,) * 2), ((n,), (1,) * n, (4,))
    steps = plan_rechunk(old, new, 8, 2**16)
    assert len(steps) == 2 and _plan_task_bytes(old, steps, 8) <= 2**16
    a = data((n, n, 4))
    y = xa.from_array(a, chunks=old).rechunk(new, limit=2**16)
    np.testing.assert_array_equal(y.compute(), a)


@pytest.mark.parametrize("seed", range(6))
def test_rechunk_tasks_hold_no_more_than_the_bound_when_run(seed):
    """Measured: run the rechunk tasks and add up the bytes each one holds."""
    rng = random.Random(seed)
    shape = (rng.randint(40, 80), rng.randint(40, 80))
    a = data(shape, seed=seed)
    old = (rng.choice([1, 2, 40]), rng.choice([1, 5, 80]))
    new = (rng.choice([80, 3, 1]), rng.choice([1, 2, 80]))
    x = xa.from_array(a, chunks=old)
    blocks = max(math.prod(x.chunksize), math.prod(xa.from_array(a, chunks=new).chunksize)) * 8
    limit = max(4 * blocks, 2**14)
    y = x.rechunk(new, limit=limit)
    graph = y.__xsched_graph__()
    keys = [k for row in np.ndindex(*y.numblocks) for k in [y.chunk_key(row)]]
    values, held = run_measuring(graph, keys)
    mine = [k for k in graph if k.startswith("rechunk")]
    assert mine and max(held[k] for k in mine) <= limit
    out = np.block([[values[y.chunk_key((i, j))] for j in range(y.numblocks[1])]
                    for i in range(y.numblocks[0])])
    np.testing.assert_array_equal(out, a)


def test_pieces_travel_alone():
    """A piece is cut by its own task, so an assembling task never needs a whole block it
    uses only part of."""
    x = xa.from_array(np.arange(100.0).reshape(10, 10), chunks=(10, 1))
    y = x.rechunk((1, 10), limit=1)
    graph = y.__xsched_graph__()
    for key in (y.chunk_key((i, 0)) for i in range(10)):
        assert all(not d.startswith("from-array") for d in dependencies(graph[key]))


# --------------------------------------------------------------------------- reshape


def _factor_shapes(rng, shape):
    """A random new shape with the same number of elements."""
    n = math.prod(shape)
    primes, m, p = [], n, 2
    while m > 1:
        while m % p == 0:
            primes.append(p)
            m //= p
        p += 1
    rng.shuffle(primes)
    k = rng.randint(1, 4)
    dims = [1] * k
    for q in primes:
        dims[rng.randrange(k)] *= q
    if rng.random() < 0.3:
        dims.insert(rng.randint(0, len(dims)), 1)
    return tuple(dims)


@pytest.mark.parametrize("seed", range(50))
def test_reshape_matches_numpy(seed):
    rng = random.Random(seed)
    shape = random_shape(rng, ndim=rng.randint(1, 4), high=6)
    a = data(shape, seed=seed)
    x = xa.from_array(a, chunks=random_chunks(rng, shape))
    new = _factor_shapes(rng, shape)
    y = x.reshape(new)
    assert y.shape == new
    np.testing.assert_array_equal(y.compute(), a.reshape(new))
    if rng.random() < 0.5:
        minus = list(new)
        minus[rng.randrange(len(new))] = -1
        np.testing.assert_array_equal(xa.reshape(x, tuple(minus)).compute(), a.reshape(new))


def test_reshape_edge_cases_and_errors():
    x = xa.from_array(np.arange(12.0), chunks=5)
    np.testing.assert_array_equal(x.reshape(3, 4).compute(), np.arange(12.0).reshape(3, 4))
    assert x.reshape((12,)) is x
    s = xa.from_array(np.array(5.0), chunks=())
    assert s.reshape(1, 1).compute().tolist() == [[5.0]]
    assert xa.from_array(np.ones((1, 1)), chunks=1).reshape(()).compute() == 1.0
    empty = xa.from_array(np.zeros((0, 4)), chunks=2)
    assert empty.reshape(2, 0, 2).compute().shape == (2, 0, 2)
    with pytest.raises(ValueError, match=r"cannot reshape array of size 12 into shape \(5, 3\)"):
        x.reshape(5, 3)
    with pytest.raises(ValueError, match="only specify one unknown"):
        x.reshape(-1, -1)
    # the first axis is cut finer when the trailing ones become whole: blocks stay as large
    big = xa.zeros((1000, 1000), chunks=100).reshape(-1)
    assert max(big.chunks[0]) <= 100 * 100


def test_ravel_flatten_squeeze_expand_dims():
    a = data((2, 1, 3, 1))
    x = xa.from_array(a, chunks=1)
    np.testing.assert_array_equal(xa.ravel(x).compute(), a.ravel())
    np.testing.assert_array_equal(x.flatten().compute(), a.ravel())
    np.testing.assert_array_equal(x.ravel().compute(), a.ravel())
    np.testing.assert_array_equal(x.squeeze().compute(), a.squeeze())
    np.testing.assert_array_equal(xa.squeeze(x, axis=(1, -1)).compute(), a.squeeze((1, 3)))
    with pytest.raises(ValueError, match="size not equal to one"):
        x.squeeze(axis=0)
    for axis in [0, 2, -1, (0, 3), (1, -2)]:
        np.testing.assert_array_equal(xa.expand_dims(x, axis).compute(), np.expand_dims(a, axis))
    assert xa.atleast_1d(xa.asarray(1.0)).shape == (1,)
    assert xa.atleast_2d(xa.arange(3, chunks=2)).shape == (1, 3)


def test_axis_moves():
    a = data((2, 3, 4, 5))
    x = xa.from_array(a, chunks=(1, 2, 3, 4))
    for src, dst in [(0, -1), (-1, 0), ((0, 1), (3, 2)), (2, 1)]:
        np.testing.assert_array_equal(xa.moveaxis(x, src, dst).compute(), np.moveaxis(a, src, dst))
    np.testing.assert_array_equal(x.swapaxes(0, 2).compute(), a.swapaxes(0, 2))
    np.testing.assert_array_equal(xa.transpose(x).compute(), a.T)
    np.testing.assert_array_equal(xa.transpose(x, (1, 0, 3, 2)).compute(), a.transpose(1, 0, 3, 2))
    with pytest.raises(np.exceptions.AxisError):
        xa.swapaxes(x, 0, 4)


@pytest.mark.parametrize("seed", range(10))
def test_flip_and_roll_match_numpy(seed):
    rng = random.Random(seed)
    shape = random_shape(rng, ndim=rng.randint(1, 3))
    a = data(shape, seed=seed)
    x = xa.from_array(a, chunks=random_chunks(rng, shape))
    np.testing.assert_array_equal(xa.flip(x).compute(), np.flip(a))
    axis = rng.randrange(len(shape))
    np.testing.assert_array_equal(xa.flip(x, axis).compute(), np.flip(a, axis))
    shift = rng.randint(-12, 12)
    np.testing.assert_array_equal(xa.roll(x, shift).compute(), np.roll(a, shift))
    np.testing.assert_array_equal(xa.roll(x, shift, axis=axis).compute(), np.roll(a, shift, axis))
    if len(shape) > 1:
        np.testing.assert_array_equal(xa.roll(x, (shift, 1), axis=(0, -1)).compute(),
                                      np.roll(a, (shift, 1), axis=(0, -1)))
        np.testing.assert_array_equal(xa.fliplr(x).compute(), np.fliplr(a))
    np.testing.assert_array_equal(xa.flipud(x).compute(), np.flipud(a))
    np.testing.assert_array_equal(x[::-2].compute(), a[::-2])


# --------------------------------------------------------------------------- joining, broadcasting


def test_concatenate_stack_match_numpy_with_mixed_chunks_and_numpy_inputs():
    a, b, c = data((4, 3)), data((2, 3), seed=1), data((5, 3), seed=2).astype("f4")
    x = xa.from_array(a, chunks=(2, 1))
    y = xa.from_array(b, chunks=(1, 3))  # other axis cut differently: rechunked
    got = xa.concatenate([x, y, c], axis=0)
    assert got.dtype == np.concatenate([a, b, c]).dtype
    assert got.chunks[1] == x.chunks[1]
    np.testing.assert_array_equal(got.compute(), np.concatenate([a, b, c]))
    np.testing.assert_array_equal(xa.concatenate([x, x], axis=-1).compute(),
                                  np.concatenate([a, a], axis=-1))
    np.testing.assert_array_equal(xa.concatenate([x[:0], x]).compute(), a)
    for axis in (0, 1, 2, -1):
        np.testing.assert_array_equal(xa.stack([x, a * 2, xa.from_array(a, chunks=3)], axis).compute(),
                                      np.stack([a, a * 2, a], axis))
    v = xa.arange(3, chunks=2)
    np.testing.assert_array_equal(xa.hstack([v, np.arange(2)]).compute(),
                                  np.hstack([np.arange(3), np.arange(2)]))
    np.testing.assert_array_equal(xa.vstack([v, v]).compute(), np.vstack([np.arange(3)] * 2))
    np.testing.assert_array_equal(xa.hstack([x, x]).compute(), np.hstack([a, a]))


def test_joining_errors_name_the_shapes():
    x = xa.ones((2, 3), chunks=1)
    with pytest.raises(ValueError, match="along dimension 1, the array at index 0 has size 3 "
                                         "and the array at index 1 has size 4"):
        xa.concatenate([x, xa.ones((2, 4), chunks=1)])
    with pytest.raises(ValueError, match="same number of dimensions"):
        xa.concatenate([x, xa.ones(3, chunks=1)])
    with pytest.raises(ValueError, match="zero-dimensional"):
        xa.concatenate([xa.asarray(1.0)])
    with pytest.raises(ValueError, match="same shape"):
        xa.stack([x, xa.ones((3, 2), chunks=1)])
    with pytest.raises(np.exceptions.AxisError):
        xa.concatenate([x, x], axis=2)


def test_broadcast_to_and_arrays():
    a = data((3, 1))
    x = xa.from_array(a, chunks=(2, 1))
    for shape in [(3, 4), (2, 3, 4), (3, 1)]:
        np.testing.assert_array_equal(xa.broadcast_to(x, shape).compute(), np.broadcast_to(a, shape))
    b = xa.broadcast_to(x, (5, 3, 6), chunks=(2, 1, 4))
    assert b.chunks == ((2, 2, 1), (1, 1, 1), (4, 2))
    np.testing.assert_array_equal(b.compute(), np.broadcast_to(a, (5, 3, 6)))
    with pytest.raises(ValueError, match=r"cannot broadcast an array of shape \(3, 1\) to shape \(4, 4\)"):
        xa.broadcast_to(x, (4, 4))
    p, q = xa.broadcast_arrays(x, xa.from_array(np.arange(4), chunks=3))
    assert p.chunks == q.chunks == ((2, 1), (3, 1))
    np.testing.assert_array_equal(q.compute(), np.broadcast_to(np.arange(4), (3, 4)))


def test_where_clip_round_and_ufuncs():
    a = data((6, 4))
    x = xa.from_array(a, chunks=(4, 3))
    y = xa.from_array(-a, chunks=(3, 2))
    row = np.arange(4)
    np.testing.assert_array_equal(xa.where(x > 0, y, row).compute(), np.where(a > 0, -a, row))
    np.testing.assert_array_equal(xa.where(a > 0, 1.5, x).compute(), np.where(a > 0, 1.5, a))
    np.testing.assert_array_equal(xa.where(a > 0, 1, 0).compute(), np.where(a > 0, 1, 0))
    for got, want in zip(xa.where(x > 0), np.where(a > 0)):  # one argument: nonzero
        np.testing.assert_array_equal(got.compute(), want)
    np.testing.assert_array_equal(x.clip(-10, 10).compute(), a.clip(-10, 10))
    np.testing.assert_array_equal(xa.clip(x, None, y).compute(), np.clip(a, None, -a))
    f = xa.from_array(np.array([0.125, 2.5, -1.55]), chunks=2)
    np.testing.assert_array_equal(f.round(1).compute(), np.round([0.125, 2.5, -1.55], 1))
    np.testing.assert_array_equal(xa.round(f).compute(), np.round([0.125, 2.5, -1.55]))
    n = xa.from_array(np.array([1.0, np.nan, np.inf]), chunks=1)
    np.testing.assert_array_equal(np.isnan(n).compute(), [False, True, False])
    np.testing.assert_array_equal(np.isfinite(n).compute(), [True, False, False])


# --------------------------------------------------------------------------- products


@pytest.mark.parametrize("seed", range(25))
def test_matmul_matches_numpy(seed):
    rng = random.Random(seed)
    n, k, m = rng.randint(1, 9), rng.randint(1, 9), rng.randint(1, 9)
    batch_a = tuple(rng.choice([1, 2, 3]) for _ in range(rng.randint(0, 2)))
    batch_b = tuple(rng.choice([1, b]) for b in batch_a)[rng.randint(0, len(batch_a)):]
    a, b = data(batch_a + (n, k), seed=seed), data(batch_b + (k, m), seed=seed + 1)
    x = xa.from_array(a, chunks=random_chunks(rng, a.shape, empty_blocks=False))
    y = xa.from_array(b, chunks=random_chunks(rng, b.shape, empty_blocks=False))
    np.testing.assert_array_equal((x @ y).compute(), a @ b)
    np.testing.assert_array_equal(xa.matmul(x, b, split_every=2).compute(), a @ b)
    np.testing.assert_array_equal((a @ y).compute(), a @ b)
    v = data((k,), seed=seed + 2)
    np.testing.assert_array_equal((x @ v).compute(), a @ v)
    np.testing.assert_array_equal((xa.from_array(v, chunks=2) @ y).compute(), v @ b)


def test_matmul_adds_many_products_in_a_tree():
    a, b = data((4, 64)), data((64, 3), seed=1)
    x, y = xa.from_array(a, chunks=(2, 2)), xa.from_array(b, chunks=(5, 3))  # y rechunked
    z = xa.matmul(x, y, split_every=4)
    groups = {name.rsplit("-", 1)[0] for name in layers_of(z)}
    assert {"matmul-partial", "matmul-sum", "matmul"} <= groups
    graph = z.__xsched_graph__()
    assert max(len(dependencies(t)) for k, t in graph.items() if k.startswith("matmul")) <= 4
    np.testing.assert_array_equal(z.compute(), a @ b)


def test_matmul_keeps_one_running_sum_per_group_of_products():
    # 8 products per output block, split_every 4: two chains of 4, each task adding one
    # product to the sum before it (one output-sized block held per chain), then one sum
    a, b = data((6, 16)), data((16, 6), seed=2)
    z = xa.matmul(xa.from_array(a, chunks=2), xa.from_array(b, chunks=2), split_every=4)
    graph = z.__xsched_graph__()
    partial = {k: t for k, t in graph.items() if k.startswith("matmul-partial")}
    deps = {k: [d for d in dependencies(t) if d.startswith("matmul-partial")] for k, t in partial.items()}
    assert len(partial) == 9 * 8 and sum(1 for d in deps.values() if not d) == 9 * 2  # chain starts
    assert all(len(d) <= 1 for d in deps.values())
    np.testing.assert_allclose(z.compute(), a @ b)


def test_product_errors_name_both_shapes_when_built():
    x = xa.ones((2, 3), chunks=1)
    with pytest.raises(ValueError, match=r"matmul: shapes \(2, 3\) and \(4, 5\) not aligned: "
                                         r"3 \(dim 1\) != 4 \(dim 0\)"):
        x @ xa.ones((4, 5), chunks=2)
    with pytest.raises(ValueError, match=r"shapes \(2, 3\) and \(2,\)"):
        x @ np.ones(2)
    with pytest.raises(ValueError, match="does not have enough dimensions"):
        xa.matmul(x, 2.0)
    with pytest.raises(ValueError, match=r"dot: shapes \(2, 3\) and \(2, 3\) not aligned"):
        xa.dot(x, x)
    with pytest.raises(ValueError, match=r"tensordot of shapes \(2, 3\) and \(4, 3\)"):
        xa.tensordot(x, xa.ones((4, 3), chunks=2), axes=([0], [0]))
    with pytest.raises(ValueError, match="do not broadcast"):
        xa.matmul(xa.ones((2, 2, 3), chunks=1), xa.ones((3, 3, 2), chunks=1))


def test_dot_tensordot_inner_outer_vdot():
    rng = random.Random(0)
    for shape_a, shape_b in [((3,), (3,)), ((2, 3), (3,)), ((2, 3), (3, 4)),
                             ((2, 3, 4), (4,)), ((2, 3, 4), (5, 4, 2)), ((), (3,))]:
        a, b = data(shape_a), data(shape_b, seed=1)
        x = xa.from_array(a, chunks=random_chunks(rng, shape_a, empty_blocks=False) if shape_a else ())
        y = xa.from_array(b, chunks=random_chunks(rng, shape_b, empty_blocks=False))
        np.testing.assert_array_equal(xa.dot(x, y).compute(), np.dot(a, b))
        np.testing.assert_array_equal(x.dot(y).compute(), np.dot(a, b))
        if shape_a and shape_a[-1] == shape_b[-1]:
            np.testing.assert_array_equal(xa.inner(x, y).compute(), np.inner(a, b))
    a, b = data((2, 3, 4)), data((4, 3, 5), seed=1)
    x, y = xa.from_array(a, chunks=2), xa.from_array(b, chunks=(3, 1, 2))
    for axes in [0, 1, ([1, 2], [1, 0]), ([2], [0]), ([-1, 1], [0, 1])]:
        if axes == 0:
            np.testing.assert_array_equal(xa.tensordot(x, y, axes=0).compute(), np.tensordot(a, b, 0))
            continue
        if axes == 1:
            np.testing.assert_array_equal(xa.tensordot(x, y, axes=1).compute(), np.tensordot(a, b, 1))
            continue
        np.testing.assert_array_equal(xa.tensordot(x, y, axes=axes).compute(),
                                      np.tensordot(a, b, axes=axes))
    np.testing.assert_array_equal(xa.outer(x[0, 0], np.arange(3)).compute(), np.outer(a[0, 0], np.arange(3)))
    c = np.array([1 + 2j, 3 - 1j, 2j])
    np.testing.assert_array_equal(xa.vdot(xa.from_array(c, chunks=2), c[::-1]).compute(), np.vdot(c, c[::-1]))


@pytest.mark.filterwarnings("ignore:divide by zero:RuntimeWarning")  # (numpy warns alike)
@pytest.mark.parametrize("ord", [None, 1, 2, -1, np.inf, -np.inf, 0, 3, 0.5])
def test_vector_norms_match_numpy(ord):
    v = data((11,)) + 0.5
    x = xa.from_array(v, chunks=4)
    np.testing.assert_allclose(xa.linalg.norm(x, ord).compute(), np.linalg.norm(v, ord))
    m = data((5, 6))
    y = xa.from_array(m, chunks=(2, 4))
    np.testing.assert_allclose(xa.linalg.norm(y, ord, axis=1).compute(), np.linalg.norm(m, ord, axis=1))
    np.testing.assert_allclose(xa.linalg.norm(y, ord, axis=0, keepdims=True).compute(),
                               np.linalg.norm(m, ord, axis=0, keepdims=True))


@pytest.mark.parametrize("ord", [None, "fro", 1, -1, np.inf, -np.inf])
def test_matrix_norms_match_numpy(ord):
    m = data((5, 6)) + 1j * data((5, 6), seed=3)
    y = xa.from_array(m, chunks=(2, 4))
    np.testing.assert_allclose(xa.linalg.norm(y, ord).compute(), np.linalg.norm(m, ord))
    t = data((3, 4, 5))
    z = xa.from_array(t, chunks=2)
    np.testing.assert_allclose(xa.linalg.norm(z, ord, axis=(2, 0)).compute(),
                               np.linalg.norm(t, ord, axis=(2, 0)))
    np.testing.assert_allclose(xa.linalg.norm(z, ord, axis=(0, 1), keepdims=True).compute(),
                               np.linalg.norm(t, ord, axis=(0, 1), keepdims=True))


def test_norm_of_any_array_and_errors():
    t = data((3, 4, 5)).astype("i4")
    z = xa.from_array(t, chunks=2)
    np.testing.assert_allclose(xa.linalg.norm(z).compute(), np.linalg.norm(t))
    assert xa.linalg.norm(z, keepdims=True).shape == (1, 1, 1)
    assert xa.linalg.norm(xa.ones(3, dtype="f4", chunks=2)).dtype == np.float32
    with pytest.raises(NotImplementedError, match="a whole 2-d matrix"):
        xa.linalg.norm(z, "nuc", axis=(0, 1))
    with pytest.raises(ValueError, match="Improper number of dimensions"):
        xa.linalg.norm(z, 1)


@pytest.mark.parametrize("rows_chunk", [7, 40, 3, 200])
def test_qr_and_svd_of_tall_skinny_matrices_match_numpy(rows_chunk):
    m = data((200, 6))
    a = xa.from_array(m, chunks=(rows_chunk, 6))
    q, r = xa.linalg.qr(a)
    assert q.chunks == (a.chunks[0], (6,)) and r.chunks == ((6,), (6,))
    np.testing.assert_allclose((q @ r).compute(), m, atol=1e-10)
    np.testing.assert_allclose((q.T @ q).compute(), np.eye(6), atol=1e-10)
    np.testing.assert_allclose(np.tril(r.compute(), -1), 0, atol=1e-12)
    u, s, vt = xa.linalg.svd(a)
    np.testing.assert_allclose(s.compute(), np.linalg.svd(m, compute_uv=False))
    np.testing.assert_allclose(((u * s) @ vt).compute(), m, atol=1e-10)
    # the block factors: one task per row chunk, one for the stack of small R factors
    assert sum(k.startswith("qr-block-") for k in q.__xsched_graph__()) == len(a.chunks[0])


@pytest.mark.parametrize("ord", [2, -2, "nuc"])
def test_matrix_norms_from_singular_values_match_numpy(ord):
    m = data((30, 4)) + 1j * data((30, 4), seed=5)
    for y, v in ((xa.from_array(m, chunks=(8, 2)), m), (xa.from_array(m.T, chunks=(2, 8)), m.T)):
        np.testing.assert_allclose(xa.linalg.norm(y, ord).compute(), np.linalg.norm(v, ord))


@pytest.mark.parametrize("shape,chunks", [((3, 8), (3, 4)), ((1, 7), (1, 3)), ((5, 12), (5, 12))])
@pytest.mark.parametrize("complex_", [False, True])
def test_qr_and_svd_of_a_matrix_wider_than_tall_as_numpy(shape, chunks, complex_):
    m = data(shape) + (1j * data(shape, seed=9) if complex_ else 0)
    x = xa.from_array(m, chunks=chunks)
    q, r = xa.linalg.qr(x)
    want_q, want_r = np.linalg.qr(m)
    np.testing.assert_allclose(q.compute(), want_q, atol=1e-12)  # (the same LAPACK on the same square)
    np.testing.assert_allclose(r.compute(), want_r, atol=1e-12)
    assert (np.tril(r.compute(), -1) == 0).all() and r.chunks == ((shape[0],), x.chunks[1])
    u, s, vt = xa.linalg.svd(x)
    np.testing.assert_allclose(s.compute(), np.linalg.svd(m, compute_uv=False))
    np.testing.assert_allclose(((u * s) @ vt).compute(), m, atol=1e-10)
    assert vt.chunks == ((shape[0],), x.chunks[1]) and u.dtype == q.dtype == m.dtype


def test_qr_names_the_fix_when_the_matrix_is_not_tall_and_skinny():
    with pytest.raises(ValueError, match=r"in 2 chunks \(3, 3\): use a.rechunk\(\{1: 6\}\)"):
        xa.linalg.qr(xa.from_array(data((20, 6)), chunks=(10, 3)))
    with pytest.raises(ValueError, match=r"wider than tall \(shape \(6, 20\)\) .* use a.rechunk\(\{0: 6\}\)"):
        xa.linalg.svd(xa.from_array(data((6, 20)), chunks=(3, 10)))
    with pytest.raises(ValueError, match="2 dimensions"):
        xa.linalg.qr(xa.ones(5, chunks=2))


# --------------------------------------------------------------------------- scans, arg*, nan*


@pytest.mark.parametrize("seed", range(12))
def test_cumsum_cumprod_match_numpy(seed):
    rng = random.Random(seed)
    shape = random_shape(rng, ndim=rng.randint(1, 3))
    a = data(shape, dtype=int, seed=seed) % 3 + 1
    x = xa.from_array(a, chunks=random_chunks(rng, shape))
    for axis in [None] + list(range(-len(shape), len(shape))):
        np.testing.assert_array_equal(x.cumsum(axis=axis).compute(), a.cumsum(axis=axis))
        np.testing.assert_array_equal(xa.cumprod(x, axis=axis).compute(), np.cumprod(a, axis=axis))
    f = a.astype(float)
    f[tuple(0 for _ in shape)] = np.nan
    y = xa.from_array(f, chunks=x.chunks)
    np.testing.assert_allclose(xa.nancumsum(y, axis=0).compute(), np.nancumsum(f, axis=0))
    np.testing.assert_allclose(xa.nancumprod(y, axis=-1).compute(), np.nancumprod(f, axis=-1))
    assert xa.cumsum(x, dtype="f4").dtype == np.float32
    assert xa.cumsum(xa.ones(3, dtype=bool, chunks=2)).compute().tolist() == [1, 2, 3]


def test_cumsum_of_floats_and_its_carry_chain():
    a = np.random.default_rng(0).random(1000)
    x = xa.from_array(a, chunks=64)
    np.testing.assert_allclose(x.cumsum().compute(), np.cumsum(a), rtol=1e-12)
    graph = x.cumsum().__xsched_graph__()
    carries = [t for k, t in graph.items() if k.startswith("cumsum-carry")]
    assert carries and all(len(dependencies(t)) == 2 for t in carries)
    with pytest.raises(TypeError, match=r"cumsum: axis \(0,\): 'tuple' object cannot be interpreted as an integer"):
        x.cumsum(axis=(0,))


@pytest.mark.parametrize("seed", range(12))
def test_argmax_argmin_match_numpy_with_ties_and_nans(seed):
    rng = random.Random(seed)
    shape = random_shape(rng, ndim=rng.randint(1, 3))
    a = (data(shape, seed=seed) % 4).astype(float)  # many ties
    if seed % 3 == 0:
        a.flat[rng.randrange(a.size)] = np.nan
        a.flat[rng.randrange(a.size)] = np.nan
    x = xa.from_array(a, chunks=random_chunks(rng, shape))
    for op in ("argmax", "argmin"):
        assert int(getattr(xa, op)(x, split_every=2).compute()) == getattr(np, op)(a)
        for axis in range(-len(shape), len(shape)):
            got = getattr(x, op)(axis=axis)
            np.testing.assert_array_equal(got.compute(), getattr(np, op)(a, axis=axis))
            np.testing.assert_array_equal(
                getattr(xa, op)(x, axis=axis, keepdims=True, split_every=2).compute(),
                getattr(np, op)(a, axis=axis, keepdims=True))
        assert getattr(x, op)().dtype == np.intp


def test_arg_errors():
    with pytest.raises(ValueError, match="empty sequence"):
        xa.argmax(xa.zeros((0, 3), chunks=1))
    with pytest.raises(ValueError, match="empty sequence"):
        xa.zeros((0, 3), chunks=1).argmin(axis=0)
    assert xa.zeros((0, 3), chunks=1).argmax(axis=1).shape == (0,)


@pytest.mark.parametrize("axis", [None, 0, 1, -1, (0, 2)])
@pytest.mark.parametrize("keepdims", [False, True])
def test_nan_and_other_reductions_match_numpy(axis, keepdims):
    a = data((5, 4, 3)) / 7
    a[0, 0, 0] = a[3, 1, 2] = np.nan
    a[:, 2, 1] = np.nan  # an all-NaN slice along axis 0
    x = xa.from_array(a, chunks=(2, 3, 2))
    kw = dict(axis=axis, keepdims=keepdims)
    with np.errstate(all="ignore"):
        for name in ("nansum", "nanprod", "nanmean", "nanmax", "nanmin"):
            np.testing.assert_allclose(getattr(xa, name)(x, split_every=2, **kw).compute(),
                                       _quiet(getattr(np, name), a, **kw), err_msg=name)
    b = np.nan_to_num(a) > 0
    y = xa.from_array(b, chunks=2)
    for name in ("any", "all"):
        np.testing.assert_array_equal(getattr(y, name)(**kw).compute(), getattr(np, name)(b, **kw))
    i = (data((5, 4, 3), dtype=int) % 3 + 1).astype("i2")
    z = xa.from_array(i, chunks=2)
    np.testing.assert_array_equal(z.prod(**kw).compute(), i.prod(**kw))
    assert z.prod().dtype == i.prod().dtype
    np.testing.assert_array_equal(xa.prod(z, dtype="f8", **kw).compute(), i.prod(dtype="f8", **kw))


def _quiet(func, *args, **kwargs):
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return func(*args, **kwargs)


# --------------------------------------------------------------------------- methods, laziness, annotations


def test_methods_on_array():
    for name in ("reshape", "ravel", "flatten", "squeeze", "swapaxes", "clip", "round",
                 "rechunk", "dot", "cumsum", "cumprod", "argmax", "argmin", "prod", "any",
                 "all", "__matmul__", "__rmatmul__"):
        assert callable(getattr(xa.Array, name)), name
    x = xa.arange(6, chunks=4)
    assert x.reshape(2, 3).shape == x.reshape((2, 3)).shape == (2, 3)


def test_building_reads_nothing():
    class Source:
        shape, dtype = (12, 6), np.dtype(float)

        def __init__(self):
            self.reads = 0

        def __getitem__(self, index):
            self.reads += 1
            return np.ones(self.shape)[index]

    src = Source()
    x = xa.from_array(src, chunks=(4, 3))
    before = len(x._graph.layers)
    ys = [x.rechunk((6, 6)), x.reshape(6, 12), xa.concatenate([x, x]), x @ x.T,
          xa.flip(x, 0), xa.roll(x, 2), x.cumsum(0), x.argmax(1), xa.where(x > 0, x, 0),
          xa.broadcast_to(x, (2, 12, 6)), xa.linalg.norm(x), xa.nanmean(x)]
    assert src.reads == 0
    assert all(len(y._graph.layers) > before for y in ys)
    np.testing.assert_array_equal(ys[3].compute(), np.full((12, 12), 6.0))


def test_annotations_reach_every_new_task():
    a = xa.from_array(np.arange(24.0).reshape(4, 6), chunks=(3, 4))
    b = xa.from_array(np.arange(24.0).reshape(4, 6), chunks=(2, 2))
    rows = xa.from_array(np.arange(64.0).reshape(8, 8), chunks=(1, 8))
    with xsched.annotate(priority=3):
        built = {
            "arange": xa.arange(10, chunks=3), "linspace": xa.linspace(0, 1, 5, chunks=2),
            "eye": xa.eye(4, chunks=2), "full": xa.full(3, 1, chunks=2),
            "indices": xa.indices((2, 2), chunks=1),
            "fromfunction": xa.fromfunction(np.add, (3, 3), chunks=2),
            "random": xa.random.default_rng(0).normal(size=(4, 4), chunks=2),
            "rechunk": a.rechunk((1, 6)), "rechunk2": rows.rechunk((8, 1), limit="1GiB"),
            "reshape": a.reshape(6, 4), "concatenate": xa.concatenate([a, b]),
            "stack": xa.stack([a, b]), "flip": xa.flip(a), "roll": xa.roll(a, 1, 1),
            "broadcast": xa.broadcast_to(a, (2, 4, 6)), "where": xa.where(a > 3, a, b),
            "matmul": xa.matmul(a, b.T, split_every=2), "tensordot": xa.tensordot(a, b, 2),
            "norm": xa.linalg.norm(a, 1), "cumsum": a.cumsum(axis=1), "argmax": a.argmax(),
            "nanmean": xa.nanmean(a), "prod": a.prod(axis=0), "squeeze": a[:1].squeeze(),
        }
    assert any(k.startswith("rechunk-mid") for k in layers_of(built["rechunk2"]))
    for what, x in built.items():
        tasks = new_tasks(x, a, b, rows)
        assert tasks, what
        for key, task in tasks.items():
            assert task.annotations == {"priority": 3}, (what, key)
    plain = a.rechunk((1, 6)).cumsum(axis=0)
    assert all(t.annotations == {} for t in new_tasks(plain, a).values())


# --------------------------------------------------------------------------- fft


@pytest.mark.parametrize("name", ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft"])
@pytest.mark.parametrize("n", [None, 5, 12])
def test_fft_along_one_whole_axis_matches_numpy_and_keeps_the_other_blocks(name, n):
    rng = np.random.default_rng(1)
    m = rng.normal(size=(6, 8)) + (0 if name in ("rfft", "ihfft") else 1j * rng.normal(size=(6, 8)))
    x = xa.from_array(m, chunks=(2, 8))
    got = getattr(xa.fft, name)(x, n=n)
    expected = getattr(np.fft, name)(m, n=n)
    assert got.chunks[0] == (2, 2, 2) and got.shape == expected.shape
    np.testing.assert_allclose(got.compute(), expected, atol=1e-12)


@pytest.mark.parametrize("name", ["fft2", "ifft2", "rfft2", "irfft2", "fftn", "ifftn", "rfftn", "irfftn"])
@pytest.mark.parametrize("s", [None, (4, 6)])
def test_fft_over_several_whole_axes_matches_numpy(name, s):
    rng = np.random.default_rng(2)
    m = rng.normal(size=(3, 6, 8)) + (0 if name.startswith("rfft") else 1j * rng.normal(size=(3, 6, 8)))
    x = xa.from_array(m, chunks=(1, 6, 8))
    got = getattr(xa.fft, name)(x, s=s, axes=(1, 2))
    np.testing.assert_allclose(got.compute(), getattr(np.fft, name)(m, s=s, axes=(1, 2)), atol=1e-12)
    assert got.chunks[0] == (1, 1, 1)


def test_fft_names_the_cut_axis_and_the_rechunk_and_shifts_any_chunking():
    x = xa.from_array(np.arange(24.0).reshape(4, 6), chunks=(2, 3))
    with pytest.raises(ValueError, match=r"axis 1 is cut into 2 chunks \(3, 3\).*x.rechunk\(\{1: -1\}\)"):
        xa.fft.fft(x)
    with pytest.raises(ValueError, match="fft.fft: axis 2 is out of bounds"):
        xa.fft.fft(x, axis=2)
    np.testing.assert_array_equal(xa.fft.fftshift(x).compute(), np.fft.fftshift(np.arange(24.0).reshape(4, 6)))
    np.testing.assert_array_equal(xa.fft.ifftshift(xa.fft.fftshift(x, axes=0), axes=0).compute(),
                                  np.arange(24.0).reshape(4, 6))


# --------------------------------------------------------------------------- sorting


@pytest.mark.parametrize("descending", [False, True])
def test_sort_and_stable_argsort_along_a_whole_axis_match_numpy(descending):
    rng = np.random.default_rng(4)
    a = rng.integers(0, 4, size=(5, 7))  # many equal values: stability shows
    for axis, chunks in ((1, (2, 7)), (0, (5, 3)), (-1, (1, 7))):
        x = xa.from_array(a, chunks=chunks)
        expected = np.sort(a, axis=axis)
        np.testing.assert_array_equal(xa.sort(x, axis=axis, descending=descending).compute(),
                                      np.flip(expected, axis=axis) if descending else expected)
        order = xa.argsort(x, axis=axis, descending=descending).compute()
        # stable in both directions: -a sorted ascending and stably is a sorted descending and stably
        np.testing.assert_array_equal(order, np.argsort(-a if descending else a, axis=axis, kind="stable"))
        assert xa.sort(x, axis=axis).chunks == x.chunks


def test_sort_puts_a_cut_axis_in_one_chunk_within_the_rechunk_bound():
    a = np.random.default_rng(2).integers(0, 9, size=(6, 8))
    x = xa.from_array(a, chunks=(3, 2))
    np.testing.assert_array_equal(xa.sort(x).compute(), np.sort(a))
    np.testing.assert_array_equal(xa.argsort(x, axis=0).compute(), np.argsort(a, axis=0, kind="stable"))
    np.testing.assert_array_equal(xa.sort(x, axis=None).compute(), np.sort(a, axis=None))
    np.testing.assert_array_equal(xa.partition(x, 3).compute()[:, 3], np.partition(a, 3)[:, 3])
    with xsched.config.set({"array.rechunk.memory": "100B"}):
        with pytest.raises(ValueError, match=r"sort: needs each axis it works along in one chunk \(axis 1 in 4 "
                                             r"chunks\); the blocks that makes would hold 192 B each.*"
                                             r"x\.rechunk\(\{1: -1, 0: <smaller>\}\)"):
            xa.sort(x)
    with pytest.raises(ValueError, match="argsort: axis 2 is out of bounds"):
        xa.argsort(x, axis=2)


def test_from_dlpack_takes_another_librarys_buffer():
    src = np.arange(12.0).reshape(3, 4)
    x = xa.from_dlpack(src, chunks=(2, 2))
    assert x.chunks == ((2, 1), (2, 2))
    np.testing.assert_array_equal(x.compute(), src)
    copied = xa.from_dlpack(src, copy=True, chunks=2)
    src[0, 0] = -1.0
    assert copied.compute()[0, 0] == 0.0
    with pytest.raises(TypeError, match="__dlpack__"):
        xa.from_dlpack([1, 2, 3])
    with pytest.raises(ValueError, match="live on Device"):
        xa.from_dlpack(src, device="cuda")


def test_assert_eq_values_and_what_an_array_promised():
    a = np.arange(12.0).reshape(3, 4)
    x = xa.from_array(a, chunks=2)
    assert xa.assert_eq(x.T + 1, a.T + 1)
    assert xa.assert_eq(x[x > 3], a[a > 3])  # (a length unknown until computed)
    assert xa.assert_eq(x.sum(), a.sum())
    with pytest.raises(AssertionError):
        xa.assert_eq(x + 1e-3, a)
    with pytest.raises(AssertionError, match="dtypes differ"):
        xa.assert_eq(x, a.astype("float32"))
    assert xa.assert_eq(x, a.astype("float32"), check_dtype=False)
    with pytest.raises(AssertionError, match="shapes differ"):
        xa.assert_eq(x, a.ravel())
    lying = x.map_blocks(lambda b: b.astype("float32"), dtype=a.dtype)
    with pytest.raises(AssertionError, match="dtype is float32, the array promised float64"):
        xa.assert_eq(lying, a.astype("float32"), check_dtype=True)


def test_operations_that_join_an_axis_warn_when_blocks_grow_past_the_chunk_size():
    import warnings

    x = xa.ones((2000, 2000), chunks=(100, 2000))  # 1.6 MB blocks; the whole column axis: 32 MB
    with config.set({"array.chunk-size": "4MiB"}):
        with pytest.warns(xa.PerformanceWarning, match=r"apply_along_axis needs axis 0 .* x.rechunk\(\{0: -1, 1: 'auto'\}\)"):
            xa.apply_along_axis(np.sum, 0, x)
        with pytest.warns(xa.PerformanceWarning, match="indexing by an xsched array of positions"):
            x[xa.arange(3, chunks=3)]
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            xa.apply_along_axis(np.sum, 1, x)  # (already whole: nothing joined, no warning)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        xa.apply_along_axis(np.sum, 0, x)  # (32 MB blocks under 4 x the default 128 MiB)
