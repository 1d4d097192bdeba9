"""Workers come back to a scheduler restarted on the same address and secret; a worker
that cannot find its scheduler file or secret says so and is not restarted.

The scheduler here is a plain ``xsched scheduler`` process (SIGKILLed, as by the OOM
killer or a crashed node, and started again on the same port), and the workers one
``xsched worker --nworkers 2`` nanny. A worker that loses its scheduler exits; its nanny
starts it again, and the new process waits ``worker.reconnect-timeout`` for the
scheduler rather than ``comm.timeouts.connect`` (set to 1 s here, so a scheduler that is
down longer than that shows the difference).
"""

from __future__ import annotations

import os
import secrets
import signal
import socket
import subprocess
import sys
import time

import psutil
import pytest

from xsched import Client
from xsched.protocol.security import Security
from xsched.worker.nanny import EXIT_CANNOT_CONNECT

from tests.support.helpers import pid_gone, wait_until

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(150)]

CONNECT_TIMEOUT = 1.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def xsched_cli(args, env, log=None) -> subprocess.Popen:
    out = open(log, "ab") if log else subprocess.DEVNULL
    try:
        return subprocess.Popen([sys.executable, "-m", "xsched.cli", *args], env=env, stdin=subprocess.DEVNULL,
                                stdout=out, stderr=subprocess.STDOUT)
    finally:
        if log:
            out.close()


def stop(proc: subprocess.Popen, timeout: float = 20) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


def worker_children(nanny: subprocess.Popen) -> dict[int, float]:
    """pid -> start time of the nanny's live worker processes."""
    out = {}
    for p in psutil.Process(nanny.pid).children():
        try:
            if p.status() != psutil.STATUS_ZOMBIE:
                out[p.pid] = p.create_time()
        except psutil.NoSuchProcess:
            pass
    return out


def add(x, y):
    return x + y


@pytest.mark.parametrize("downtime", ["none", "longer than the connect timeout"])
def test_workers_reregister_with_a_restarted_scheduler(tmp_path, downtime):
    port = free_port()
    secret = Security.generate().secret
    env = {**os.environ, "XSCHED_SECRET": secret, "XSCHED_COMM__TIMEOUTS__CONNECT": f"{CONNECT_TIMEOUT}s",
           "PYTHONUNBUFFERED": "1"}
    sched_args = ["scheduler", "--host", "127.0.0.1", "--port", str(port)]
    scheduler = xsched_cli(sched_args, env, tmp_path / "scheduler.log")
    nanny = None
    try:
        with Client(f"127.0.0.1:{port}", security=secret, timeout=30, set_as_default=False) as c:
            nanny = xsched_cli(["worker", f"127.0.0.1:{port}", "--nworkers", "2", "--nthreads", "1",
                                "--log-directory", str(tmp_path)], env, tmp_path / "nanny.log")
            c.wait_for_workers(2, timeout=60)
            assert c.submit(add, 1, 2).result(timeout=30) == 3
            first = set(c.run(os.getpid).values())

        scheduler.kill()  # no goodbye to anyone: the workers see their connection drop
        scheduler.wait(10)
        # each worker process exits, and its nanny starts a new one
        wait_until(lambda: (now := worker_children(nanny)) and len(now) == 2 and not set(now) & first,
                   timeout=60, msg="the nanny restarted both workers")
        if downtime != "none":
            # the new processes have waited longer than a first start would have
            def waited_past_connect_timeout():
                now = worker_children(nanny)
                return len(now) == 2 and all(time.time() - t > 2 * CONNECT_TIMEOUT for t in now.values())

            wait_until(waited_past_connect_timeout, timeout=30, msg="the restarted workers still waiting")
        assert nanny.poll() is None, "the nanny gave up on its workers"

        scheduler = xsched_cli(sched_args, env, tmp_path / "scheduler.log")  # same port, same secret
        with Client(f"127.0.0.1:{port}", security=secret, timeout=30, set_as_default=False) as c:
            c.wait_for_workers(2, timeout=60)
            assert set(c.run(os.getpid).values()).isdisjoint(first)
            xs = c.map(add, range(20), range(20))
            assert c.submit(sum, xs).result(timeout=60) == sum(2 * i for i in range(20))
    finally:
        if nanny is not None:
            stop(nanny)
        stop(scheduler)
    assert all(pid_gone(p) for p in first)


def test_worker_without_its_scheduler_file_exits_with_a_clear_message(tmp_path):
    missing = tmp_path / "missing.json"
    # the command a user types: refused before any worker process starts
    r = subprocess.run([sys.executable, "-m", "xsched.cli", "worker", "--scheduler-file", str(missing)],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2
    assert str(missing) in r.stderr and "does not exist" in r.stderr and "xsched scheduler" in r.stderr
    # a worker process its nanny starts (the file went away since): the code the nanny does not retry
    r = subprocess.run([sys.executable, "-m", "xsched.cli", "worker", "--no-nanny", "--scheduler-file", str(missing),
                        "--parent-pid", str(os.getpid())], capture_output=True, text=True, timeout=60)
    assert r.returncode == EXIT_CANNOT_CONNECT
    assert str(missing) in r.stderr and "does not exist" in r.stderr


def test_worker_without_a_secret_exits_with_a_clear_message(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "XSCHED_SECRET"}
    r = subprocess.run([sys.executable, "-m", "xsched.cli", "worker", f"127.0.0.1:{free_port()}"],
                       capture_output=True, text=True, timeout=60, env=env)
    assert r.returncode == 2
    assert "no secret" in r.stderr and "XSCHED_SECRET" in r.stderr and "--scheduler-file" in r.stderr


NANNY_SCRIPT = """
import sys
from xsched.worker.nanny import Nanny
nanny = Nanny({"w": ["worker", "--no-nanny", "--scheduler-file", sys.argv[1]]}, None, log_dir=sys.argv[2])
code = nanny.run()
print("starts", nanny.children["w"].starts, "restarts", nanny.children["w"].restarts)
sys.exit(code)
"""


def test_nanny_does_not_restart_a_worker_whose_scheduler_file_is_gone(tmp_path):
    """As when the file went away after `xsched worker` checked it: the worker process exits
    69 with the reason in its log, and the nanny stops instead of starting it again, saying
    why, and exits 69 too."""
    sfile = tmp_path / "scheduler.json"
    r = subprocess.run([sys.executable, "-c", NANNY_SCRIPT, str(sfile), str(tmp_path)], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == EXIT_CANNOT_CONNECT, r.stderr
    assert "starts 1 restarts 0" in r.stdout
    assert "is not restarted" in r.stderr and "does not exist" in r.stderr and str(sfile) in r.stderr, r.stderr
    log = (tmp_path / "worker-w.log").read_text()
    assert "does not exist" in log and str(sfile) in log
