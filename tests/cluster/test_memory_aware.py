"""Depth-first execution on a real cluster, asserted by counting what workers really hold.

What is "held" is counted in the worker process itself, by the tasks: the keys of the group
in ``worker.data`` *and* the partitions still alive in the process (weak references, read
after ``gc.collect()``), so a partition that graph fusion keeps out of ``worker.data`` is
counted too. The records live in module-level lists of this module; the functions below
are pickled by reference (conftest puts the repository on the workers' ``PYTHONPATH``), so
tasks and ``client.run(<module function>)`` read and write the worker's own lists, never a
pickled copy.
"""

import gc
import weakref

import h5py
import numpy as np
import pytest

import xsched.array as xa
from xsched import Client, LocalCluster, delayed

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(120)]

# worker-side registry (each worker process has its own)
_records: list = []  # (event, ...) tuples appended by the tasks, in the order they ran
_live: list = []  # weak references to every partition / chunk the tasks have seen


def reset_registry() -> int:
    _records.clear()
    _live.clear()
    return 0


def read_records() -> list:
    return list(_records)


def _worker():
    from xsched.worker.server import get_worker

    return get_worker()


def _fast_items(data, prefix: str):
    """(key, value) of the group's keys held in memory, without reading spilled ones back."""
    keys = data.fast_keys if hasattr(data, "fast_keys") else list(data.keys())  # properties
    return [(k, data[k]) for k in keys if k.startswith(prefix)]


def _held(prefix: str) -> dict:
    """What this worker holds of a group: keys in its store, and distinct live objects.

    ``objects`` counts each array once whether it is in ``worker.data``, only alive in the
    process (fused away, or leaked), or both; spilled keys count as one each.
    """
    gc.collect()
    data = _worker().data
    fast = _fast_items(data, prefix)
    slow = [k for k in (data.slow_keys if hasattr(data, "slow_keys") else []) if k.startswith(prefix)]
    ids = {id(v) for _, v in fast}
    ids |= {id(a) for a in (r() for r in _live) if a is not None}
    return {"keys": len(fast) + len(slow), "objects": len(ids) + len(slow)}


def _register(a) -> None:
    if not any(r() is a for r in _live):
        _live.append(weakref.ref(a))


# ---------------------------------------------------------------------- seed 000: the movie
def sum_sub_stacks(mov, prefix=""):
    if prefix:  # recording only when run as a task (prefix names the chunk group)
        _register(mov)
        _records.append(("reduce", _held(prefix)))
    out = [mov[k * 10:k * 10 + 10].sum(axis=0, keepdims=True) for k in range(mov.shape[0] // 10)]
    return np.concatenate(out)


def get_info(mov):
    return [{"sum": float(f.sum()), "variance": float(f.var())} for f in mov]


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
    assert client.run(reset_registry) == dict.fromkeys(client.scheduler_info()["workers"], 0)
    with h5py.File(movie, "r") as fh:
        mov = xa.from_array(fh["/entry/data/raw_counts"], chunks=(100, -1, -1))
        agg = mov.map_blocks(sum_sub_stacks, chunks=(10,) + mov.chunks[1:], dtype=mov.dtype,
                             prefix=mov.name)
        tasks = [delayed(get_info)(chk) for chk in agg.to_delayed(optimize_graph=optimize_graph).ravel()]
        info = client.compute(tasks, sync=True, optimize_graph=optimize_graph)
        expected = [get_info(sum_sub_stacks(fh["/entry/data/raw_counts"][i:i + 100])) for i in range(0, 1600, 100)]
    assert info == expected
    records = client.run(read_records)
    assert len(records) == 2
    held = [r[1] for recs in records.values() for r in recs if r[0] == "reduce"]
    assert len(held) == 16, records  # every chunk reduced exactly once, and every reduction recorded
    # the chunk being reduced is itself seen (fused or not): the count can see a chunk
    assert all(h["objects"] >= 1 for h in held), held
    if not optimize_graph:  # unfused, the chunk being reduced is a key in worker memory
        assert all(h["keys"] >= 1 for h in held), held
    else:  # fused, the read happens inside the reducing task: no chunk key is ever stored
        assert all(h["keys"] == 0 for h in held), held
    # each worker has 1 thread: while reducing a chunk it holds that chunk and at most one more
    # (a chunk fetched for a reduction the scheduler placed on it); not all 8 of its chunks
    assert max(h["objects"] for h in held) <= 1 + 1, held


# ---------------------------------------------------------------------- seed 003: partitions
PARTITION = 2_000_000  # float64: 16 MB, a stand-in for a 500 MB partition


def build(i):
    before = _held("build")
    part = np.full(PARTITION, i, dtype=np.float64)
    _register(part)
    _records.append(("build", i, before, _held("build")))
    return part


def length(part):
    _register(part)
    _records.append(("len", int(part[0]), _held("build")))
    return len(part)


def total_of(lens):
    _records.append(("sum", len(lens), _held("build")))
    return sum(lens)


@pytest.mark.parametrize("optimize_graph", [True, False])
def test_seed003_one_partition_at_a_time(optimize_graph):
    with LocalCluster(n_workers=1, threads_per_worker=1, memory_limit="2GB") as cluster, Client(cluster) as c:
        parts = [delayed(build, pure=True)(i) for i in range(4)]
        lens = [delayed(length, pure=True)(p) for p in parts]
        total = delayed(total_of, pure=True)(lens)
        assert total.compute(optimize_graph=optimize_graph) == 4 * PARTITION
        [records] = c.run(read_records).values()
    # the order the scheduler guarantees on 1 thread: a partition's len runs right after its
    # build, and the next build only after that partition was released (free-keys is sent,
    # and handled by the worker, before the next compute-task)
    events = [r[:2] for r in records]
    assert [e[0] for e in events] == ["build", "len"] * 4 + ["sum"], events
    assert sorted(i for kind, i in events if kind == "build") == [0, 1, 2, 3]
    for b, l in zip(records[0:8:2], records[1:8:2]):
        assert l[1] == b[1], records  # build i is followed by len i
    for kind, i, before, after in (r for r in records if r[0] == "build"):
        # no earlier partition is held anywhere in the worker (store or process) when a build starts
        assert before == {"keys": 0, "objects": 0}, records
        # positive control: the partition just built is seen by the same count
        assert after == {"keys": 0, "objects": 1}, records
    for kind, i, held in (r for r in records if r[0] == "len"):
        # exactly one partition alive while measuring it: its own
        assert held["objects"] == 1, records
        # unfused, it is a key in worker memory; fused into len, it never reaches the store
        assert held["keys"] == (0 if optimize_graph else 1), records
    [(_, n, held)] = [r for r in records if r[0] == "sum"]
    assert n == 4 and held == {"keys": 0, "objects": 0}, records
