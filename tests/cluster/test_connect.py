"""Connecting the way users do: the seeds' own commands, no secret typed, real processes.

    xsched scheduler --port P          (every interface)
    xsched worker localhost:P --nthreads 1 --memory-limit 2000000000
    Client('127.0.0.1:P'), Executor('127.0.0.1:P', set_as_default=True)
"""

from __future__ import annotations

import os
import socket

import pytest

from xsched import Client, Executor, LocalCluster
from xsched.client.default import default_client
from xsched.protocol.addressing import AddressError

from tests.support.procs import Procs, cli_env, read_line

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(90)]


def inc(x):
    return x + 1


def free_port(host="127.0.0.1", family=socket.AF_INET) -> int:
    with socket.socket(family) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def test_the_seed_commands_work_without_a_secret(procs, monkeypatch):
    monkeypatch.delenv("XSCHED_SECRET", raising=False)
    port = free_port()
    sched = procs.start("scheduler", "--port", str(port))  # default: every interface
    first = read_line(sched)
    assert first.startswith("xsched scheduler at tcp://") and first.strip().endswith(f":{port}"), first
    w = procs.start("worker", f"localhost:{port}", "--nthreads", "1", "--memory-limit", "2000000000",
                    "--name", "seed")
    with Client(f"127.0.0.1:{port}", set_as_default=False) as c:
        c.wait_for_workers(1, timeout=30)
        [(addr, info)] = c.scheduler_info()["workers"].items()
        assert info["name"] == "seed" and info["memory_limit"] == 2_000_000_000
        assert addr.startswith("tcp://127.0.0.1:")  # it listens where it meets the scheduler
        assert c.submit(inc, 1).result(timeout=30) == 2
        e = Executor(f"127.0.0.1:{port}", set_as_default=True)
        try:
            assert default_client() is e and e.submit(inc, 2).result(timeout=30) == 3
        finally:
            e.close()
    assert Procs.stop(w) == 0 and Procs.stop(sched) == 0


def test_a_taken_port_is_a_clear_error(procs):
    with socket.socket() as s:
        s.bind(("0.0.0.0", 0))
        s.listen(1)
        port = s.getsockname()[1]
        p = procs.start("scheduler", "--port", str(port))
        assert p.wait(30) == 1
        err = p.stderr.read().decode()
        assert f"port {port}" in err and "already in use" in err and "Traceback" not in err, err


def test_an_address_not_of_this_host_is_a_clear_error(procs):
    """192.0.2.1 (an address kept for documentation) is no address of this host: the bind
    fails with EADDRNOTAVAIL, which the scheduler says in one line (it crashed on a name
    pyzmq does not have, zmq.ENODEV)."""
    p = procs.start("scheduler", "--host", "192.0.2.1", "--port", "0")
    assert p.wait(30) == 1
    err = p.stderr.read().decode()
    assert "cannot listen on" in err and "an address of this host" in err and "Traceback" not in err, err


def test_interface_option_on_scheduler_and_worker(procs, monkeypatch):
    monkeypatch.delenv("XSCHED_SECRET", raising=False)
    port = free_port()
    sched = procs.start("scheduler", "--interface", "lo", "--port", str(port))
    assert read_line(sched).split()[-1] == f"tcp://127.0.0.1:{port}"
    w = procs.start("worker", f"tcp://127.0.0.1:{port}", "--interface", "lo", "--nthreads", "1")
    with Client(f"localhost:{port}", set_as_default=False) as c:
        c.wait_for_workers(1, timeout=30)
        assert all(a.startswith("tcp://127.0.0.1:") for a in c.scheduler_info()["workers"])
    assert Procs.stop(w) == 0
    bad = procs.start("worker", f"localhost:{port}", "--interface", "nosuch0")
    assert bad.wait(30) == 2 and "no network interface named 'nosuch0'" in bad.stderr.read().decode()
    assert Procs.stop(sched) == 0


def _has_ipv6_loopback() -> bool:
    try:
        with socket.socket(socket.AF_INET6) as s:
            s.bind(("::1", 0))
        return True
    except OSError:
        return False


@pytest.mark.skipif(not _has_ipv6_loopback(), reason="this host has no IPv6 loopback (::1)")
def test_ipv6_addresses(procs, monkeypatch):
    monkeypatch.delenv("XSCHED_SECRET", raising=False)
    port = free_port("::1", socket.AF_INET6)
    sched = procs.start("scheduler", "--host", "::1", "--port", str(port))
    assert read_line(sched).split()[-1] == f"tcp://[::1]:{port}"
    w = procs.start("worker", f"[::1]:{port}", "--nthreads", "1")
    with Client(f"[::1]:{port}", set_as_default=False) as c:
        c.wait_for_workers(1, timeout=30)
        [addr] = c.scheduler_info()["workers"]
        assert addr.startswith("tcp://[::1]:")
        import numpy as np

        [big] = c.scatter([np.arange(2**20)])  # worker -> client over the bulk channel, on IPv6
        assert int(big.result(timeout=30)[-1]) == 2**20 - 1
    assert Procs.stop(w) == 0 and Procs.stop(sched) == 0


@pytest.mark.parametrize("processes", [True, False])
def test_client_by_the_address_of_a_local_cluster(processes, monkeypatch):
    monkeypatch.delenv("XSCHED_SECRET", raising=False)
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=processes) as cluster:
        with Client(address=cluster.scheduler_address, set_as_default=False) as c:
            assert c.submit(inc, 1).result(timeout=30) == 2
            assert c.security == cluster.security
        port = cluster.scheduler_address.rsplit(":", 1)[1]
        with Client(f"localhost:{port}", set_as_default=False) as c:
            assert c.submit(inc, 2).result(timeout=30) == 3


def test_a_local_cluster_in_another_process_is_found(procs, tmp_path, monkeypatch):
    monkeypatch.delenv("XSCHED_SECRET", raising=False)
    script = ("import sys, xsched\n"
              "c = xsched.LocalCluster(n_workers=1, threads_per_worker=1)\n"
              "print(c.scheduler_address, flush=True)\n"
              "sys.stdin.read()\n"
              "c.close()\n")
    import subprocess
    import sys

    p = subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, env=cli_env())
    procs.procs.append(p)
    address = read_line(p, timeout=60).strip()
    with Client(address, set_as_default=False) as c:
        assert c.submit(inc, 41).result(timeout=30) == 42
    p.stdin.close()
    assert p.wait(30) == 0


def test_bad_addresses_are_clear_errors():
    with pytest.raises(AddressError, match="'localhost:http'.*not a number"):
        Client("localhost:http", set_as_default=False)
    with pytest.raises(AddressError, match="only tcp://"):
        Client("udp://localhost:1", set_as_default=False, security="x" * 32)


def test_doctor_says_which_step_fails(procs, monkeypatch):
    import subprocess
    import sys

    monkeypatch.delenv("XSCHED_SECRET", raising=False)

    def doctor(address):
        return subprocess.run([sys.executable, "-m", "xsched.cli", "doctor", address, "--timeout", "3"],
                              capture_output=True, text=True, timeout=60, env=cli_env())

    out = doctor("localhost:http")
    assert out.returncode == 1 and "FAIL  address" in out.stdout and "not a number" in out.stdout
    out = doctor("no-such-host.invalid:8786")
    assert out.returncode == 1 and "FAIL  resolve" in out.stdout
    port = free_port()
    out = doctor(f"127.0.0.1:{port}")
    assert out.returncode == 1 and "FAIL  tcp" in out.stdout and "nothing listens there" in out.stdout
    with socket.socket() as s:  # something listens, but no scheduler of ours registered there
        s.bind(("127.0.0.1", 0))
        s.listen(1)
        out = doctor(f"127.0.0.1:{s.getsockname()[1]}")
        assert out.returncode == 1 and "ok    tcp" in out.stdout and "FAIL  secret" in out.stdout
    sched = procs.start("scheduler", "--host", "127.0.0.1", "--port", str(port))
    read_line(sched)
    out = doctor(f"localhost:{port}")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "ok    scheduler  CURVE handshake done" in out.stdout and "can reach the scheduler" in out.stdout
    assert Procs.stop(sched) == 0
