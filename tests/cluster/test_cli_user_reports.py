"""From a user's test of the command line and of LocalCluster: bad worker options, a worker
the scheduler refuses or that dies at every start, `xsched doctor --scheduler-file`,
``cluster.adapt`` bounds, and a LocalCluster whose scheduler process died.

Every process a test starts is stopped by its PID (the ``procs`` fixture)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from xsched import Client, LocalCluster
from xsched.deploy.spec import SpecCluster
from xsched.worker.nanny import EXIT_CANNOT_CONNECT, MAX_UNREGISTERED_DEATHS

from tests.support.helpers import kill_worker, pid_gone, wait_until
from tests.support.procs import Procs, cli_env, read_line

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(120)]


def inc(x):
    return x + 1


def start_scheduler(procs, path):
    p = procs.start("scheduler", "--host", "127.0.0.1", "--port", "0", "--scheduler-file", str(path))
    first = read_line(p)
    assert first.startswith("xsched scheduler at tcp://127.0.0.1:"), first
    return p, first.split()[-1]


def nanny_lines(err: str, what: str) -> list[str]:
    return [line for line in err.splitlines() if "xsched.nanny" in line and what in line]


def test_bad_worker_options_are_one_line_errors_before_any_worker_starts(procs, tmp_path):
    """--nthreads -2 made the nanny restart its worker forever (the scheduler refused it each
    time, unseen); --memory-limit banana and --nworkers 0 printed tracebacks."""
    sfile = tmp_path / "sf.json"
    sched, _ = start_scheduler(procs, sfile)
    (tmp_path / "afile").touch()
    for option, value, says, modes in [
            ("--nthreads", "-2", "threads per worker process >= 1", ([], ["--no-nanny"])),
            ("--nworkers", "0", "worker processes >= 1", ([], ["--no-nanny"])),
            ("--memory-limit", "banana", "Cannot parse memory limit 'banana'", ([], ["--no-nanny"])),
            # (the nanny's: where it appends its workers' output)
            ("--log-directory", str(tmp_path / "afile" / "logs"), "cannot create it: Not a directory", ([],))]:
        for nanny in modes:
            w = procs.start("worker", "--scheduler-file", str(sfile), option, value, *nanny)
            assert w.wait(60) == 2, (option, value, nanny)
            err = w.stderr.read().decode()
            assert err.startswith(f"xsched worker: {option}") and says in err, err
            assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert Procs.stop(sched) == 0


def test_a_registration_the_scheduler_refuses_stops_the_nanny_with_its_reason(procs, tmp_path):
    """A worker the scheduler refuses (here: a resource name longer than its schema allows)
    exits EXIT_CANNOT_CONNECT with the scheduler's reason; its nanny does not restart it, says
    why once, and exits with that code (it restarted it every 1-5 s without end, silently)."""
    sfile = tmp_path / "sf.json"
    sched, address = start_scheduler(procs, sfile)
    resources = "R" * 300 + "=1"
    alone = procs.start("worker", "--scheduler-file", str(sfile), "--resources", resources, "--no-nanny")
    assert alone.wait(60) == EXIT_CANNOT_CONNECT
    err = alone.stderr.read().decode()
    assert err == (f"xsched worker: the scheduler at {address} refused to register this worker: BadMessage: "
                   "register-worker: a key of resources must be a resource name, not str of length 300\n"), err

    nanny = procs.start("worker", "--scheduler-file", str(sfile), "--resources", resources)
    assert nanny.wait(60) == EXIT_CANNOT_CONNECT
    err = nanny.stderr.read().decode()
    [line] = nanny_lines(err, "worker 0")
    assert "could not register with its scheduler and is not restarted" in line, err
    assert line.endswith(f"the scheduler at {address} refused to register this worker: BadMessage: register-worker: "
                         "a key of resources must be a resource name, not str of length 300"), err
    assert Procs.stop(sched) == 0


def test_a_worker_that_dies_at_every_start_before_registering_is_given_up_with_its_error(procs, tmp_path):
    """A worker that crashes before it registers (its --local-directory is a file) is started
    MAX_UNREGISTERED_DEATHS times, then not again; the nanny logs the worker's error and exits 1
    (it restarted it forever, saying only "died (exit code 1)")."""
    sfile = tmp_path / "sf.json"
    sched, _ = start_scheduler(procs, sfile)
    afile = tmp_path / "afile"
    afile.touch()
    nanny = procs.start("worker", "--scheduler-file", str(sfile), "--nworkers", "2", "--nthreads", "1",
                        "--local-directory", str(afile))
    assert nanny.wait(90) == 1
    err = nanny.stderr.read().decode()
    error = f"FileExistsError: [Errno 17] File exists: '{afile}'"
    for name in ("worker-0", "worker-1"):
        died = nanny_lines(err, f"worker {name} died")
        assert len(died) == MAX_UNREGISTERED_DEATHS, err
        assert all("before it registered with its scheduler" in line and error in line for line in died), err
        assert f"died {MAX_UNREGISTERED_DEATHS} times in a row before it registered with its scheduler and is not " \
               f"restarted (exit code 1): {error}" in died[-1], err
    assert Procs.stop(sched) == 0


def test_a_worker_that_registered_is_restarted_however_often_it_dies(procs, tmp_path):
    """Only deaths before registering count: a worker killed again and again after it
    registered comes back every time, as before."""
    sfile = tmp_path / "sf.json"
    sched, _ = start_scheduler(procs, sfile)
    nanny = procs.start("worker", "--scheduler-file", str(sfile), "--nthreads", "1", "--name", "w")
    with Client(scheduler_file=str(sfile), set_as_default=False) as c:
        for _ in range(MAX_UNREGISTERED_DEATHS + 1):
            c.wait_for_workers(1, timeout=60)
            [address] = c.scheduler_info()["workers"]
            kill_worker(c, address)
        c.wait_for_workers(1, timeout=60)
        assert c.submit(inc, 1).result(timeout=30) == 2
        assert nanny.poll() is None
    assert Procs.stop(nanny) == 0 and Procs.stop(sched) == 0


def doctor(*args):
    return subprocess.run([sys.executable, "-m", "xsched.cli", "doctor", *args, "--timeout", "5"],
                          capture_output=True, text=True, timeout=60, env=cli_env())


def test_doctor_takes_the_address_from_the_scheduler_file(procs, tmp_path):
    sfile = tmp_path / "sf.json"
    out = doctor("--scheduler-file", str(sfile))  # no scheduler yet: the file is missing
    assert out.returncode == 1, out.stderr
    assert f"FAIL  address    scheduler file {str(sfile)!r} does not exist" in out.stdout, out.stdout
    out = doctor()
    assert out.returncode == 1 and "FAIL  address    give the scheduler's ADDRESS" in out.stdout, out.stdout
    sched, address = start_scheduler(procs, sfile)
    out = doctor("--scheduler-file", str(sfile))
    assert out.returncode == 0, out.stdout + out.stderr
    assert f"ok    address    {address} (from {sfile})" in out.stdout
    assert f"ok    secret     from scheduler file {sfile}" in out.stdout
    assert "ok    scheduler  CURVE handshake done" in out.stdout and "can reach the scheduler" in out.stdout
    assert Procs.stop(sched) == 0


@pytest.mark.parametrize("kwargs, message", [
    ({"maximum": "x"}, "maximum='x' must be a whole number >= 0"),
    ({"minimum": -1, "maximum": 4}, "minimum=-1 must be a whole number >= 0"),
    ({"minimum": 1, "maximum": 2.5}, "maximum=2.5 must be a whole number >= 0"),
    ({"minimum": None, "maximum": [4]}, r"maximum=\[4\] must be a whole number >= 0"),
    ({"minimum_jobs": 1, "maximum": "4"}, "maximum='4' must be a whole number >= 0"),
    ({"minimum": 3, "maximum": 2}, "maximum=2 is below minimum=3"),
    ({"minimum_jobs": 3, "maximum_jobs": 2}, "maximum_jobs=2 is below minimum_jobs=3"),
])
def test_adapt_bounds_are_whole_numbers_named_when_wrong(kwargs, message):
    """adapt(maximum="x") raised TypeError: unsupported operand type(s) for /: 'str' and 'int'."""
    cluster = SpecCluster(workers_per_group=2)  # (checked before the cluster is asked anything)
    with pytest.raises(ValueError, match=message):
        cluster.adapt(**kwargs)
    assert cluster._adaptive is None


def test_a_local_cluster_whose_scheduler_died_says_so_and_closes(monkeypatch):
    monkeypatch.delenv("XSCHED_SECRET", raising=False)
    cluster = LocalCluster(n_workers=1, threads_per_worker=1, dashboard_address=None)
    try:
        assert cluster.status == "running"
        [nanny] = [g.pid for g in cluster.groups.values()]
        with Client(cluster, set_as_default=False) as client:
            [worker] = client.run(os.getpid).values()
            scheduler = client.run_on_scheduler(os.getpid)
            os.kill(scheduler, signal.SIGKILL)
            wait_until(lambda: cluster.status == "failed", msg="the cluster's status says its scheduler died")
        assert f"status=failed (its scheduler process {scheduler} was killed by signal 9; close() it)" in repr(cluster)
        directory = cluster._dir
    finally:
        cluster.close()
    assert cluster.status == "closed" and "status=closed" in repr(cluster)
    assert pid_gone(nanny) and wait_until(lambda: pid_gone(worker), msg="the worker process gone")
    assert not os.path.exists(directory)
