"""Graceful retirement on real processes: client.retire_workers, --lifetime, SIGTERM.

Each test counts executions (every task appends a line to a file), so "nothing was
recomputed" is a fact, not a hope. The pure state-machine side is tests/unit/test_retire_state.py.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from xsched import Client

from tests.support.helpers import pid_gone, wait_until

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(90)]


def record(path, i):
    """A task that leaves a trace of each execution."""
    with open(path, "a") as f:
        f.write(f"{i}\n")
    return i * 10


def executions(path) -> list[int]:
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return sorted(int(line) for line in f if line.strip())


def _events(c, kind):
    return c.run_on_scheduler(lambda scheduler, kind=kind: [e[2:] for e in scheduler.events if e[1] == kind])


def _start_cli_worker(address, name, *extra, nanny=False):
    args = [sys.executable, "-m", "xsched.cli", "worker", address, "--name", name, "--nthreads", "3",
            "--memory-limit", "0", *extra]
    if not nanny:
        args.append("--no-nanny")
    return subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def _stop(p):
    if p.poll() is None:
        p.kill()
    p.wait(10)
    if p.stderr:
        p.stderr.close()


def test_retire_workers_moves_data_first(own_cluster, tmp_path):
    cluster = own_cluster(n_workers=2)
    log = str(tmp_path / "runs")
    with Client(cluster, set_as_default=False) as c:
        info = c.scheduler_info()["workers"]
        leaving, staying = sorted(info)
        name = str(info[leaving]["name"])
        pid = c.run(os.getpid)[leaving]
        futs = [c.submit(record, log, i, workers=[leaving]) for i in range(20)]
        assert c.gather(futs) == [i * 10 for i in range(20)]
        assert all(v == [leaving] for v in c.who_has(futs).values())

        out = c.retire_workers([leaving])

        assert set(out) == {leaving}
        assert out[leaving]["status"] == "retired", out
        assert out[leaving]["moved"] == {f.key: staying for f in futs}
        assert list(c.scheduler_info()["workers"]) == [staying]
        assert all(v == [staying] for v in c.who_has(futs).values())
        assert c.gather(futs) == [i * 10 for i in range(20)]
        assert executions(log) == list(range(20))  # none recomputed
        # the transition log agrees: no key went back from memory
        story = c.run_on_scheduler(lambda scheduler, ks=[f.key for f in futs]: scheduler.story(*ks))
        assert not [e for e in story if e[1] == "memory"]
        # the worker process exited 0: its nanny (one worker) saw a graceful exit and stopped
        wait_until(lambda: pid_gone(pid), msg="retired worker process exits")
        nanny = cluster.workers[name]
        wait_until(lambda: nanny.poll() is not None, msg="its nanny stops (nothing to restart)")
        assert nanny.poll() == 0
        log_path = getattr(nanny, "log_path", None)  # the nanny logs every restart it makes
        if log_path and os.path.exists(log_path):
            with open(log_path) as f:
                assert "restarting" not in f.read()
        assert list(c.scheduler_info()["workers"]) == [staying]  # not restarted
        assert c.submit(record, log, 100).result(timeout=30) == 1000  # the cluster still computes


def test_retire_the_last_worker_with_data_is_refused(own_cluster, tmp_path):
    cluster = own_cluster(n_workers=1)
    log = str(tmp_path / "runs")
    with Client(cluster, set_as_default=False) as c:
        [only] = c.scheduler_info()["workers"]
        fut = c.submit(record, log, 1)
        assert fut.result(timeout=30) == 10
        out = c.retire_workers(only)
        assert out[only]["status"] == "cannot-retire" and "no other running worker" in out[only]["reason"]
        assert list(c.scheduler_info()["workers"]) == [only]
        assert c.scheduler_info()["workers"][only]["status"] == "running"
        assert fut.result(timeout=30) == 10 and executions(log) == [1]


def test_lifetime_retires_the_worker_by_itself(own_cluster, tmp_path):
    cluster = own_cluster(n_workers=1)
    log = str(tmp_path / "runs")
    with Client(cluster, set_as_default=False) as c:
        [staying] = c.scheduler_info()["workers"]
        # submitted first: they run as soon as the worker named "lifer" arrives (its three
        # threads take them at registration; the lifetime counts from then, and a second of
        # it is ample for three appends to a file: a task still running would be waited for)
        futs = [c.submit(record, log, i, workers=["lifer"]) for i in range(3)]
        p = _start_cli_worker(cluster.scheduler_address, "lifer", "--lifetime", "1s", "--lifetime-stagger", "0s")
        try:
            assert c.gather(futs) == [0, 10, 20]
            assert p.wait(60) == 0, p.stderr.read().decode(errors="replace")
            err = p.stderr.read().decode(errors="replace")
        finally:
            _stop(p)
        # it heard "retired" (not a generic "OK"), and its close did not wait for itself
        assert "could not retire" not in err and "did not stop" not in err, err
        assert list(c.scheduler_info()["workers"]) == [staying]
        assert all(v == [staying] for v in c.who_has(futs).values())
        assert c.gather(futs) == [0, 10, 20]
        assert executions(log) == [0, 1, 2]
        [(addr, reason)] = _events(c, "retire-worker")
        assert "lifetime" in reason
        assert (addr, "retired") in _events(c, "remove-worker")


@pytest.mark.parametrize("nanny", [True, False], ids=["nanny", "no-nanny"])
def test_sigterm_retires_a_worker_with_its_data_moved(own_cluster, tmp_path, nanny):
    """SIGTERM to a nanny (it forwards it) or to a worker alone: data moved, exit 0."""
    cluster = own_cluster(n_workers=1)
    log = str(tmp_path / "runs")
    with Client(cluster, set_as_default=False) as c:
        [staying] = c.scheduler_info()["workers"]
        futs = [c.submit(record, log, i, workers=["termer"]) for i in range(3)]
        p = _start_cli_worker(cluster.scheduler_address, "termer", nanny=nanny)
        try:
            assert c.gather(futs) == [0, 10, 20]
            leaving = next(a for a, w in c.scheduler_info()["workers"].items() if w["name"] == "termer")
            assert all(v == [leaving] for v in c.who_has(futs).values())
            os.kill(p.pid, signal.SIGTERM)
            assert p.wait(60) == 0, p.stderr.read().decode(errors="replace")
            err = p.stderr.read().decode(errors="replace")
        finally:
            _stop(p)
        assert "could not retire" not in err and "did not stop" not in err, err
        assert list(c.scheduler_info()["workers"]) == [staying]
        assert all(v == [staying] for v in c.who_has(futs).values()), (c.who_has(futs), staying, leaving)
        assert c.gather(futs) == [0, 10, 20]
        assert executions(log) == [0, 1, 2]
        assert (leaving, "SIGTERM") in _events(c, "retire-worker")
        assert (leaving, "retired") in _events(c, "remove-worker")
