"""map_overlap and zarr input/output on a real cluster (2 worker processes): a filter over
neighbouring frames whose halos travel between workers, and zarr written block by block by
the workers, read back chunk-aligned and with other chunks. The in-process tests:
tests/unit/test_array_overlap.py and tests/unit/test_array_zarr.py."""

from __future__ import annotations

import os

import numpy as np
import pytest

import xsched
import xsched.array as xa

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(120)]


def smooth_frames(frames, weight):
    """A 5-frame weighted mean along axis 0 (the block's first and last 2 frames: unchanged)."""
    out = frames.copy()
    out[2:-2] = (weight * frames[2:-2] + frames[:-4] + frames[1:-3] + frames[3:-1]
                 + frames[4:]) / (weight + 4)
    return out


def test_map_overlap_on_workers(client):
    movie_np = np.random.default_rng(0).random((60, 8, 6)).astype("f4")
    movie = xa.from_array(movie_np, chunks=(10, 4, 6))
    z = xa.map_overlap(smooth_frames, movie, depth=(2, 0, 0), boundary="reflect", weight=3.0)
    padded = np.pad(movie_np, ((2, 2), (0, 0), (0, 0)), mode="reflect")
    want = smooth_frames(padded, 3.0)[2:-2]
    np.testing.assert_allclose(z.compute(), want, rtol=1e-6)
    # kept on the workers, then reduced: the halos come from blocks held by either worker
    kept = client.persist(movie)
    again = xa.map_overlap(smooth_frames, kept, depth=(2, 0, 0), boundary="reflect",
                           weight=3.0).mean(axis=(1, 2))
    np.testing.assert_allclose(again.compute(), want.mean(axis=(1, 2)), rtol=1e-5)


def test_zarr_round_trip_on_workers(client, tmp_path):
    a = np.random.default_rng(1).random((40, 30))
    x = xa.from_array(a, chunks=(10, 15))
    path = str(tmp_path / "out.zarr")
    xa.to_zarr(2 * x, path)
    y = xa.from_zarr(path)
    assert y.chunks == x.chunks
    np.testing.assert_array_equal(y.compute(), 2 * a)
    np.testing.assert_array_equal(xa.from_zarr(path, chunks=(7, 30)).compute(), 2 * a)
    # a chain: read, filter, write, read
    z = xa.map_overlap(lambda b: b - b.mean(), y, depth=1, boundary="nearest")
    group = str(tmp_path / "group.zarr")
    z.to_zarr(group, component="centred")
    np.testing.assert_allclose(xa.from_zarr(group, component="centred").compute(), z.compute())
    # a time series grown on the workers: appended twice off the stored grid, a region rewritten
    xa.to_zarr(x[:5] + 1, path, append_dim=0)
    xa.to_zarr(x[5:12] + 2, path, append_dim=0)
    xa.to_zarr(xa.zeros((3, 30), chunks=(2, 15)), path, region=(slice(1, 4),))
    expected = np.concatenate([2 * a, a[:5] + 1, a[5:12] + 2])
    expected[1:4] = 0
    np.testing.assert_array_equal(xa.from_zarr(path).compute(), expected)


def test_zarr_blocks_are_made_and_written_by_the_workers(client, tmp_path):
    def pid_block(block_id=None):
        return np.full((5,), os.getpid())

    pids = xa.map_blocks(pid_block, chunks=((5,) * 8,), dtype="i8")
    path = str(tmp_path / "pids.zarr")
    d = xa.to_zarr(pids, path, compute=False)
    client.compute(d, sync=True)
    written = set(xa.from_zarr(path).compute().tolist())
    workers = set(client.run(os.getpid).values())
    assert written <= workers and os.getpid() not in written


class PathTarget:
    """A store(compute=False) target that opens its .npy file by path where it writes, and
    records which process wrote each block; a marker file taken with O_EXCL while writing
    shows whether two writes ever overlapped."""

    def __init__(self, directory, shape):
        self.path, self.shape = os.path.join(directory, "data.npy"), shape
        self.marker, self.log = os.path.join(directory, "busy"), os.path.join(directory, "writers")
        np.lib.format.open_memmap(self.path, mode="w+", dtype="f8", shape=shape).flush()

    def __setitem__(self, region, block):
        fd = os.open(self.marker, os.O_CREAT | os.O_EXCL)  # FileExistsError: another write is under way
        try:
            data = np.load(self.path, mmap_mode="r+")
            data[region] = block
            data.flush()
            with open(self.log, "a") as f:
                f.write(f"{os.getpid()}\n")
        finally:
            os.close(fd)
            os.unlink(self.marker)


def test_lazy_store_is_written_by_the_workers_under_a_cluster_lock(client, tmp_path):
    a = np.random.default_rng(2).random((40, 6))
    target = PathTarget(str(tmp_path), (40, 6))
    lock = xsched.Lock("lazy-store-test", client=client)
    d = xa.store(xa.from_array(a, chunks=(5, 6)) + 1, target, lock=lock, compute=False)
    assert not np.load(target.path).any()
    client.compute(d, sync=True)
    np.testing.assert_array_equal(np.load(target.path), a + 1)
    with open(target.log) as f:
        writers = [int(line) for line in f]
    assert len(writers) == 8 and set(writers) <= set(client.run(os.getpid).values())


def test_writing_an_in_memory_zarr_store_from_workers_is_refused(client):
    """The workers would write copies of a store in this process's memory: nothing would
    arrive, silently. Refused when built; computed here (blocks sent back) it is written."""
    zarr = pytest.importorskip("zarr")
    z = zarr.create_array(store=zarr.storage.MemoryStore(), shape=(10,), chunks=(5,), dtype="f8", fill_value=-1.0)
    x = xa.arange(10.0, chunks=5)
    for write in (lambda: xa.to_zarr(x, z), lambda: xa.to_zarr(x, "memory://refused.zarr"),
                  lambda: xa.store(x, z, compute=False)):
        with pytest.raises(ValueError, match="in this process's memory, and the workers of the cluster would write"):
            write()
    xa.store(x, z)
    assert z[:].tolist() == list(range(10))


def slow_copy(block):
    import time

    time.sleep(0.05)  # (both writes' tasks then run at once, one per worker)
    return block


def test_region_writes_sharing_a_stored_chunk_lose_nothing(client, tmp_path):
    """Two lazy region writes that each fill half of one zarr chunk, computed together: each
    task reads, changes and writes the chunk whole, so without a lock one half was lost
    (5 runs in 8 here). Writes of part of a chunk now hold the array's cluster-wide lock."""
    zarr = pytest.importorskip("zarr")
    path = str(tmp_path / "shared.zarr")
    for _ in range(4):
        xa.to_zarr(xa.zeros(10, chunks=10), path, overwrite=True)
        first = xa.to_zarr(xa.full(5, 1.0).map_blocks(slow_copy), path, region=(slice(0, 5),), compute=False)
        second = xa.to_zarr(xa.full(5, 2.0).map_blocks(slow_copy), path, region=(slice(5, 10),), compute=False)
        xsched.compute(first, second)
        assert zarr.open_array(path)[:].tolist() == [1.0] * 5 + [2.0] * 5
        z = zarr.open_array(path, mode="r+")
        z[:] = 0
        halves = [xa.full(5, 3.0).map_blocks(slow_copy), xa.full(5, 4.0).map_blocks(slow_copy)]
        xa.store(halves, [z, z], regions=[(slice(0, 5),), (slice(5, 10),)], compute=False).compute()
        assert zarr.open_array(path)[:].tolist() == [3.0] * 5 + [4.0] * 5
