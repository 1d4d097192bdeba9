"""Depth-first execution on a real cluster, asserted by counting what workers hold."""

import h5py
import numpy as np
import pytest

import xsched.array as xa
from xsched import Client, LocalCluster, delayed

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(120)]

_held: list = []


def _count_held(prefix: str) -> int:
    """Keys of the given group held by the worker running this task (0 outside workers)."""
    from xsched.worker.server import get_worker

    try:
        worker = get_worker()
    except ValueError:
        return 0
    return sum(1 for k in list(worker.data.keys()) if k.startswith(prefix))


def sum_sub_stacks(mov, prefix=""):
    _held.append(_count_held(prefix))
    out = [mov[k * 10:k * 10 + 10].sum(axis=0, keepdims=True) for k in range(mov.shape[0] // 10)]
    return np.concatenate(out)


def get_info(mov):
    return [{"sum": float(f.sum()), "variance": float(f.var())} for f in mov]


def held_max():
    return max(_held) if _held else 0


@pytest.fixture(scope="module")
def movie(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("movie") / "movie.h5")
    rng = np.random.default_rng(1)
    with h5py.File(path, "w") as f:
        f.create_dataset("/entry/data/raw_counts", data=rng.random((1600, 32, 32), dtype=np.float32),
                         chunks=(100, 32, 32))
    return path


@pytest.fixture(scope="module")
def client():
    with LocalCluster(n_workers=2, threads_per_worker=1, memory_limit="2GB") as cluster, Client(cluster) as c:
        yield c


@pytest.mark.parametrize("optimize_graph", [True, False])
def test_seed000_holds_at_most_nthreads_plus_one_chunk(client, movie, optimize_graph):
    client.run(lambda: _held.clear())
    with h5py.File(movie, "r") as fh:
        mov = xa.from_array(fh["/entry/data/raw_counts"], chunks=(100, -1, -1))
        agg = mov.map_blocks(sum_sub_stacks, chunks=(10,) + mov.chunks[1:], dtype=mov.dtype,
                             prefix=mov.name)
        tasks = [delayed(get_info)(chk) for chk in agg.to_delayed(optimize_graph=optimize_graph).ravel()]
        info = client.compute(tasks, sync=True, optimize_graph=optimize_graph)
        expected = [get_info(sum_sub_stacks(fh["/entry/data/raw_counts"][i:i + 100], prefix="none"))
                    for i in range(0, 1600, 100)]
    assert info == expected
    # each worker has 1 thread: while reducing a chunk it holds that chunk and at most one more
    counts = client.run(held_max)
    assert len(counts) == 2
    assert max(counts.values()) <= 1 + 1, counts
    if not optimize_graph:  # unfused, the chunk being summed is itself in worker memory: we did count
        assert max(counts.values()) >= 1, counts


def build(i, prefix):
    held_before = _count_held(prefix)
    _held.append(held_before)
    return np.full(2_000_000, i, dtype=np.float64)


def test_seed003_one_partition_at_a_time():
    with LocalCluster(n_workers=1, threads_per_worker=1, memory_limit="2GB") as cluster, Client(cluster) as c:
        parts = [delayed(build, pure=True)(i, "build") for i in range(4)]
        lens = [delayed(len)(p) for p in parts]
        total = delayed(sum)(lens)
        assert total.compute() == 4 * 2_000_000
        # no partition was still held when the next one was built
        [counts] = c.run(held_max).values()
        assert counts == 0
