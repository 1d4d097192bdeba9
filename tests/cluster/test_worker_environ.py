"""What a nanny puts in the environment of the worker processes it starts."""

import os

import pytest

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(60)]

BLAS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")


def test_workers_get_one_blas_thread_per_task_thread_unless_the_environment_says_otherwise(own_cluster, monkeypatch):
    # two workers of one thread on two cores: a BLAS call spreading over every core in each
    # worker runs several times slower (measured: a 10,000 x 100 QR 0.07 s -> 0.42 s)
    for name in BLAS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("MKL_NUM_THREADS", "3")  # the user's own setting wins
    from xsched import Client

    cluster = own_cluster(n_workers=1)
    with Client(cluster) as client:
        seen = client.run(lambda: {name: os.environ.get(name) for name in BLAS})
    assert list(seen.values()) == [{"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "3", "OPENBLAS_NUM_THREADS": "1"}]


def test_workers_get_one_malloc_arena_unless_the_environment_says_otherwise(own_cluster, monkeypatch):
    monkeypatch.delenv("MALLOC_ARENA_MAX", raising=False)
    from xsched import Client

    with Client(own_cluster(n_workers=1)) as client:
        assert list(client.run(lambda: os.environ.get("MALLOC_ARENA_MAX")).values()) == ["1"]
    monkeypatch.setenv("MALLOC_ARENA_MAX", "4")
    with Client(own_cluster(n_workers=1)) as client:
        assert list(client.run(lambda: os.environ.get("MALLOC_ARENA_MAX")).values()) == ["4"]


def test_workers_pyarrow_allocates_from_the_system_heap_unless_the_environment_says_otherwise(own_cluster,
                                                                                               monkeypatch):
    pytest.importorskip("pyarrow")
    monkeypatch.delenv("ARROW_DEFAULT_MEMORY_POOL", raising=False)
    from xsched import Client

    def pool():
        import pyarrow
        return pyarrow.default_memory_pool().backend_name

    with Client(own_cluster(n_workers=1)) as client:
        assert list(client.run(pool).values()) == ["system"]
    monkeypatch.setenv("ARROW_DEFAULT_MEMORY_POOL", "jemalloc")
    with Client(own_cluster(n_workers=1)) as client:
        assert list(client.run(pool).values()) == ["jemalloc"]
