"""Work stealing on real processes: a worker that joins late takes waiting tasks (or not, when off).

Wall-clock figures live in benchmarks/stealing.py; here only who ran what is asserted.
"""

from __future__ import annotations

import numpy as np
import pytest

from xsched import Client

from tests.support.helpers import Gate, wait_until

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(120)]


def executed(worker):
    return worker.state.counts["executed"]


def read(data, i, gate):
    gate.wait()
    return int(data[0]) + i


def _run(cluster, tmp_path, n=20):
    gate = Gate(tmp_path)
    with Client(cluster, set_as_default=False) as c:
        c.wait_for_workers(1, timeout=30)
        [first] = c.scheduler_info()["workers"]
        [data] = c.scatter([np.ones(1000)], workers=[first])
        futures = [c.submit(read, data, i, gate, key=f"read-{i}") for i in range(n)]
        wait_until(lambda: len(c.run_on_scheduler(lambda scheduler: scheduler.processing)[first]) == n)
        before = c.run(executed)[first]
        cluster.scale(2)
        c.wait_for_workers(2, timeout=60)
        second = next(a for a in c.scheduler_info()["workers"] if a != first)
        if c.scheduler_info()["stealing"]["requested"]:
            wait_until(lambda: c.scheduler_info()["stealing"]["moved"] > 0, msg="a steal completed")
        gate.open()
        assert c.gather(futures) == [1 + i for i in range(n)]
        ran = c.run(executed)
        return ran[first] - before, ran[second], c.scheduler_info()["stealing"]


def test_late_worker_steals_waiting_tasks(own_cluster, tmp_path):
    on_first, on_second, counts = _run(own_cluster(n_workers=1), tmp_path)
    assert on_first + on_second == 20
    assert on_second >= 1 and on_first >= 1, (on_first, on_second)
    assert counts["moved"] == on_second and counts["requested"] >= counts["moved"]


def test_with_stealing_off_the_late_worker_gets_none(own_cluster, tmp_path, monkeypatch):
    monkeypatch.setenv("XSCHED_SCHEDULER__WORK_STEALING", "false")
    on_first, on_second, counts = _run(own_cluster(n_workers=1), tmp_path)
    assert (on_first, on_second) == (20, 0)
    assert counts == {"requested": 0, "moved": 0, "kept": 0}
