"""xsched.array's NumPy surface on a real cluster (2 worker processes): matrix products
with their tree of partial sums, one matrix factored over its blocks, rechunking direct and
through an intermediate chunking, random arrays that come out the same on every run and in
every process, and scans. The in-process tests: tests/unit/test_array_api.py."""

from __future__ import annotations

import numpy as np
import pytest

import xsched
import xsched.array as xa

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(120)]


def test_matmul_and_dot_on_workers(client):
    rng = np.random.default_rng(0)
    a, b = rng.random((60, 90)), rng.random((90, 40))
    x = xa.from_array(a, chunks=(20, 10))
    y = xa.from_array(b, chunks=(15, 20))  # cut differently along the shared axis
    # nine block products per output block: five chains of running sums (two products
    # each, one alone), the chains' sums added in a tree
    z = xa.matmul(x, y, split_every=2)
    assert {"matmul-partial", "matmul-sum"} <= {name.rsplit("-", 1)[0] for name in z._graph.layers}
    np.testing.assert_allclose(z.compute(), a @ b, rtol=1e-12)
    np.testing.assert_allclose((x.T @ x).compute(), a.T @ a, rtol=1e-12)
    np.testing.assert_allclose(float(xa.linalg.norm(x)), np.linalg.norm(a), rtol=1e-12)
    np.testing.assert_allclose(client.compute(xa.dot(x, b), sync=True), a @ b, rtol=1e-12)


def test_one_matrix_over_blocks_factored_on_workers(client):
    """LU's steps, the triangular solves and Cholesky, their tasks spread over the workers."""
    pytest.importorskip("scipy")
    rng = np.random.default_rng(5)
    a = rng.normal(size=(60, 60)) + 10 * np.eye(60)
    x = xa.from_array(a, chunks=15)
    b = rng.normal(size=(60, 2))
    np.testing.assert_allclose(xa.linalg.solve(x, b).compute(), np.linalg.solve(a, b), rtol=1e-9)
    np.testing.assert_allclose(float(xa.linalg.det(x)), np.linalg.det(a), rtol=1e-9)
    h = a @ a.T
    np.testing.assert_allclose(xa.linalg.cholesky(xa.from_array(h, chunks=20)).compute(), np.linalg.cholesky(h),
                               rtol=1e-9, atol=1e-9)
    low = rng.normal(size=(60, 4)) @ rng.normal(size=(4, 45))
    u, s, vt = xa.linalg.svd_compressed(xa.from_array(low, chunks=15), 4, seed=0)
    np.testing.assert_allclose(((u * s) @ vt).compute(), low, atol=1e-9)


def test_masked_blocks_keep_their_masks_between_workers(client):
    """Masked blocks pickled between workers, joined by a rechunk through tasks and through
    the worker-to-worker exchange, and reduced counting only unmasked values."""
    rng = np.random.default_rng(7)
    a = rng.normal(size=(40, 30))
    a[rng.random(a.shape) < 0.3] = np.nan
    want = np.ma.masked_invalid(a)
    x = xa.ma.masked_invalid(xa.from_array(a, chunks=(10, 7)))
    for method in ("tasks", "p2p"):
        y = x.rechunk((40, 3), method=method)
        got = y.compute()
        assert isinstance(got, np.ma.MaskedArray)
        np.testing.assert_array_equal(got.mask, want.mask)
        np.testing.assert_allclose(y.std(axis=0).compute(), want.std(axis=0))
    np.testing.assert_allclose(float(x.mean()), want.mean())
    assert int(xa.ma.count(x)) == want.count()


def test_rechunk_on_workers(client):
    a = np.arange(64 * 48, dtype="f8").reshape(64, 48)
    rows = xa.from_array(a, chunks=(1, 48))
    direct = rows.rechunk((64, 5), limit=1, method="tasks")
    planned = rows.rechunk((64, 5), limit="64MiB", method="tasks")
    assert any(name.startswith("rechunk-mid") for name in planned._graph.layers)
    np.testing.assert_array_equal(direct.compute(), a)
    np.testing.assert_array_equal(planned.compute(), a)
    kept = client.persist(planned.rechunk((7, 9), method="tasks"))
    np.testing.assert_array_equal(kept.reshape(-1).compute(), a.ravel())
    np.testing.assert_array_equal(xa.concatenate([kept, rows]).compute(), np.concatenate([a, a]))


def test_rechunk_worker_to_worker(client):
    """The p2p exchange: every block regrouped in one shuffle, any chunking to any other in
    three dimensions; chosen by itself when the task route would hold too much at once."""
    rng = np.random.default_rng(3)
    a = rng.random((30, 20, 12))
    x = xa.from_array(a, chunks=(4, 20, 5))
    for new in [(30, 3, 12), (7, 9, (1, 11)), ((0, 30), 20, 12)]:
        y = x.rechunk(new, method="p2p")
        assert y.chunks == xa.from_array(a, chunks=new).chunks
        assert any(name.startswith("shuffle-barrier-") for name in y._graph.layers)
        np.testing.assert_array_equal(y.compute(), a)
    # one rechunk's blocks persisted, then used by another computation
    kept = client.persist(x.rechunk((30, 2, 2), method="p2p"))
    np.testing.assert_allclose(kept.sum(axis=(1, 2)).compute(), a.sum(axis=(1, 2)))
    # auto: rows to columns holds everything at once, beyond the bound -> the exchange;
    # square blocks to column strips, one column of blocks at a time -> tasks
    rows = xa.from_array(a[:, :, 0], chunks=(1, 20))
    with xsched.config.set({"array.rechunk.memory": "1KiB"}):
        assert any(n.startswith("shuffle-barrier-") for n in rows.rechunk((30, 1))._graph.layers)
        squares = xa.from_array(a[:, :, 0], chunks=(2, 2))
        assert not any(n.startswith("shuffle-") for n in squares.rechunk((30, 1))._graph.layers)
        np.testing.assert_array_equal(rows.rechunk((30, 1)).compute(), a[:, :, 0])


def test_random_is_the_same_every_run_and_in_every_process(client):
    def draw():
        return xa.random.default_rng(2024).standard_normal((50, 30), chunks=(20, 7))

    first = draw().compute()
    second = draw().compute()  # a new graph, run again, blocks land on any worker
    np.testing.assert_array_equal(first, second)
    # the documented seeding, drawn in this process
    x = draw()
    starts = [np.cumsum((0,) + c) for c in x.chunks]
    for index in np.ndindex(*x.numblocks):
        shape = tuple(c[i] for c, i in zip(x.chunks, index))
        seeded = np.random.default_rng(np.random.SeedSequence(2024, spawn_key=(0,) + index))
        sl = tuple(slice(s[i], s[i + 1]) for s, i in zip(starts, index))
        np.testing.assert_array_equal(first[sl], seeded.standard_normal(shape))
    other = xa.random.default_rng(2025).standard_normal((50, 30), chunks=(20, 7)).compute()
    assert not np.array_equal(first, other)


def test_scans_and_arg_reductions_on_workers(client):
    a = np.random.default_rng(1).integers(0, 9, size=(40, 30)).astype(float)
    a[3, 4] = np.nan
    x = xa.from_array(a, chunks=(7, 8))
    np.testing.assert_array_equal(xa.nancumsum(x, axis=0).compute(), np.nancumsum(a, axis=0))
    np.testing.assert_array_equal(x.argmax(axis=1).compute(), a.argmax(axis=1))
    assert int(x.argmax()) == int(np.argmax(a))
    np.testing.assert_allclose(float(xa.nanmean(x)), np.nanmean(a))


def test_a_boolean_mask_on_workers(client):
    data = np.random.default_rng(4).normal(size=(300, 200))
    x = xa.from_array(data, chunks=(70, 90))
    big = x[x > 1.5]
    assert np.isclose(big.sum().compute(), data[data > 1.5].sum())
    np.testing.assert_array_equal(big.compute(), data[data > 1.5])
    sized = big.compute_chunk_sizes()  # the lengths computed on the workers
    assert sized.shape == ((data > 1.5).sum(),)
    np.testing.assert_array_equal(sized[:5].compute(), data[data > 1.5][:5])
