"""The command line: `xsched scheduler`, `xsched worker`, `xsched config`, and the
`xsched-scheduler` / `xsched-worker` entry points, as real processes.

Every process a test starts is stopped by its PID (SIGTERM) and checked to be gone.
"""

from __future__ import annotations

import json
import os
import socket
import stat
import subprocess
import sys

import psutil
import pytest
import yaml

from xsched import Client, SchedulerLostError
from xsched.protocol.registry import read_scheduler_file
from xsched.worker.nanny import EXIT_CANNOT_CONNECT

from tests.support.helpers import Gate, pid_gone, wait_until
from tests.support.procs import Procs, cli_env, read_line

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(60)]

BIN = os.path.dirname(sys.executable)


def inc(x):
    return x + 1


def start_scheduler(procs, path, *extra):
    p = procs.start("scheduler", "--host", "127.0.0.1", "--port", "0", "--scheduler-file", str(path), *extra)
    first = read_line(p)
    assert first.startswith("xsched scheduler at tcp://127.0.0.1:"), first
    address = first.split()[-1]
    p.first_line = first
    return p, address


def test_scheduler_file_workers_and_clean_stop(procs, tmp_path):
    sfile = tmp_path / "scheduler.json"
    sched, address = start_scheduler(procs, sfile)
    rest = read_line(sched) + read_line(sched) + read_line(sched)
    assert f"scheduler_file={str(sfile)!r}" in rest and "xsched worker --scheduler-file" in rest
    assert f"xsched worker {address}" in rest and "registered in" in rest
    # the file: owner-only, holding the printed address and the secret (which was not printed)
    assert stat.S_IMODE(os.stat(sfile).st_mode) == 0o600
    data = json.loads(sfile.read_text())
    assert data["address"] == address and data["pid"] == sched.pid
    assert data["secret"] not in sched.first_line + rest

    workers = procs.start("worker", "--scheduler-file", str(sfile), "--nworkers", "2", "--nthreads", "1",
                          "--name", "w")
    with Client(scheduler_file=str(sfile), set_as_default=False) as c:
        assert c.scheduler_address == address
        c.wait_for_workers(2, timeout=30)
        info = c.scheduler_info()["workers"]
        assert sorted(w["name"] for w in info.values()) == ["w-0", "w-1"]
        assert all(w["nthreads"] == 1 for w in info.values())
        assert c.gather(c.map(inc, range(10))) == list(range(1, 11))
        worker_pids = set(c.run(os.getpid).values())
        assert len(worker_pids) == 2 and all(psutil.pid_exists(p) for p in worker_pids)
        # the worker processes are children of the one `xsched worker` process (their nanny)
        assert {ch.pid for ch in psutil.Process(workers.pid).children()} == worker_pids

        assert Procs.stop(workers) == 0
        assert all(pid_gone(p) for p in worker_pids)
        wait_until(lambda: not c.scheduler_info()["workers"], msg="scheduler forgets the stopped workers")

        gate = Gate(tmp_path)
        pending = c.submit(gate.wait, 1, pure=False)  # no worker: stays pending
        assert Procs.stop(sched) == 0
        with pytest.raises(SchedulerLostError):
            pending.result(timeout=30)
    assert not sfile.exists(), "the scheduler removes its file when it stops"


def test_worker_with_address_and_secret(procs, tmp_path):
    sfile = tmp_path / "s.json"
    sched, address = start_scheduler(procs, sfile)
    _, security = read_scheduler_file(str(sfile))
    w = procs.start("worker", address, "--nthreads", "2", "--memory-limit", "4GB", "--name", "w1",
                    env=cli_env(XSCHED_SECRET=security.secret))
    os.environ["XSCHED_SECRET"] = security.secret
    try:
        c = Client(address, set_as_default=False)  # the secret from XSCHED_SECRET
    finally:
        del os.environ["XSCHED_SECRET"]
    with c:
        c.wait_for_workers(1, timeout=30)
        [info] = c.scheduler_info()["workers"].values()
        assert info["name"] == "w1" and info["nthreads"] == 2 and info["memory_limit"] == 4 * 10**9
        assert c.submit(inc, 1).result(timeout=30) == 2
        wpid = info["pid"]
    assert Procs.stop(w) == 0 and pid_gone(wpid)
    assert Procs.stop(sched) == 0


def test_worker_needs_a_secret(procs):
    w = procs.start("worker", "tcp://127.0.0.1:9")
    assert w.wait(30) == 2
    err = w.stderr.read().decode()
    assert "no secret for the scheduler at tcp://127.0.0.1:9" in err and "XSCHED_SECRET" in err
    assert "Traceback" not in err, err
    w = procs.start("worker")
    assert w.wait(30) == 2
    assert "ADDRESS" in w.stderr.read().decode()
    w = procs.start("worker", "tcp://127.0.0.1:port")
    assert w.wait(30) == 2
    assert "'port' is not a number" in w.stderr.read().decode()


def test_worker_with_wrong_secret_does_not_join(procs, tmp_path):
    sfile = tmp_path / "s.json"
    sched, address = start_scheduler(procs, sfile)
    w = procs.start("worker", address, "--no-nanny", env=cli_env(XSCHED_SECRET="f" * 64,
                                                              XSCHED_INLINE_CONFIG="{comm: {timeouts: {connect: 2s}}}"))
    assert w.wait(30) == EXIT_CANNOT_CONNECT  # a nanny would not restart it: retrying cannot help
    err = w.stderr.read().decode()
    assert "secret" in err and "f" * 64 not in err
    assert "Traceback" not in err, err
    with Client(scheduler_file=str(sfile), set_as_default=False) as c:
        assert c.scheduler_info()["workers"] == {}


def test_scheduler_registers_in_its_runtime_dir(procs, tmp_path):
    runtime = tmp_path / "runtime"
    p = procs.start("scheduler", "--host", "127.0.0.1", "--port", "0", env=cli_env(XSCHED_RUNTIME_DIR=str(runtime)))
    address = read_line(p).split()[-1]
    [sfile] = list((runtime / "schedulers").glob("scheduler-*.json"))
    assert stat.S_IMODE(os.stat(sfile).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(runtime).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(runtime / "schedulers").st_mode) == 0o700
    assert str(sfile) in read_line(p)
    with Client(scheduler_file=str(sfile), set_as_default=False) as c:
        assert c.scheduler_info()["workers"] == {} and c.scheduler_address == address
    p.terminate()
    assert p.wait(30) == 0
    assert not sfile.exists()  # removed when the scheduler closed


def test_scheduler_port_in_use(procs, tmp_path):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(1)
    try:
        p = procs.start("scheduler", "--port", str(s.getsockname()[1]), "--scheduler-file", str(tmp_path / "s.json"))
        assert p.wait(30) == 1
        assert "cannot listen" in p.stderr.read().decode()
    finally:
        s.close()


def test_config_prints_yaml():
    out = subprocess.run([os.path.join(BIN, "xsched"), "config"], capture_output=True, text=True, timeout=60,
                         env=cli_env())
    assert out.returncode == 0, out.stderr
    conf = yaml.safe_load(out.stdout)
    assert isinstance(conf, dict)
    text = out.stdout
    assert "allowed-failures" in text and "worker-ttl" in text
    described = subprocess.run([sys.executable, "-m", "xsched.cli", "config", "--describe"], capture_output=True,
                               text=True, timeout=60, env=cli_env())
    assert described.returncode == 0 and "allowed-failures" in described.stdout


def test_entry_points_exist():
    for name, flag in (("xsched-scheduler", "--scheduler-file"), ("xsched-worker", "--nworkers"),
                       ("xsched", "scheduler")):
        out = subprocess.run([os.path.join(BIN, name), "--help"], capture_output=True, text=True, timeout=60,
                             env=cli_env())
        assert out.returncode == 0, out.stderr
        assert flag in out.stdout


def test_a_nanny_child_whose_scheduler_file_vanished_is_not_retried(procs, tmp_path):
    w = procs.start("worker", "--no-nanny", "--scheduler-file", str(tmp_path / "gone.json"),
                    "--parent-pid", str(os.getpid()))
    assert w.wait(30) == EXIT_CANNOT_CONNECT
    err = w.stderr.read().decode()
    assert "gone.json" in err and "does not exist" in err and "Traceback" not in err
    nanny = procs.start("worker", "--scheduler-file", str(tmp_path / "gone.json"))
    assert nanny.wait(30) == 2  # said before any worker process starts
