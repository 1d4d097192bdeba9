"""A worker runs its tasks on as many threads as it has slots: a worker of one thread runs
every task on the same thread (thread-local state of user code, such as a connection kept
per thread, is made once), however fast the next task starts after the last one."""

from __future__ import annotations

import threading

import pytest

import xsched


def thread_of(i: int) -> tuple[int, str]:
    return threading.get_ident(), threading.current_thread().name


@pytest.mark.timeout(120)
def test_a_worker_of_one_thread_runs_every_task_on_one_thread():
    with xsched.LocalCluster(n_workers=1, threads_per_worker=1) as cluster, xsched.Client(cluster) as client:
        seen = [f.result(timeout=100) for f in client.map(thread_of, range(300), pure=False)]
        assert len(set(seen)) == 1, sorted(set(seen))
        names = client.run(lambda: sorted(t.name for t in threading.enumerate() if t.name.startswith("xsched-task")))
        assert list(names.values()) == [[seen[0][1]]]
