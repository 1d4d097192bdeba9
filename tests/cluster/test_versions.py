"""Versions between real processes: a scheduler process announcing another protocol number
(``XSCHED_TEST_PROTOCOL_VERSION``, read for tests only) refuses a client and a worker of
this one at once, the client raising and the worker exiting with a message that names
both versions; a peer from before versions (no version at all) hears the same refusal;
a worker process of another protocol is refused by a scheduler of this one. Under a nanny,
the exchange before registering (the nanny's plugins) is checked too: the nanny sets up
nothing from a scheduler of another protocol, says why (both versions) and does not restart
its worker. The pure parts: tests/unit/test_versions.py."""

from __future__ import annotations

import os
import socket

import msgpack
import pytest
import zmq

from xsched import Client, IncompatibleVersionError, NannyPlugin
from xsched.protocol import ops
from xsched.protocol.registry import read_scheduler_file
from xsched.protocol.versions import PROTOCOL_VERSION, TEST_PROTOCOL_VAR, XSCHED_VERSION
from xsched.worker.nanny import EXIT_CANNOT_CONNECT

from tests.support.helpers import wait_until
from tests.support.procs import cli_env, read_line

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(90)]

OTHER = PROTOCOL_VERSION + 98


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _raw_register(address: str, security, header: dict) -> dict:
    """Register as a peer from before versions would: a plain request, its reply decoded."""
    sock = zmq.Context.instance().socket(zmq.DEALER)
    sock.linger = 0
    security.configure_client(sock)
    sock.connect(address)
    try:
        sock.send_multipart([msgpack.packb(dict(header, rid=7))])
        assert sock.poll(20_000), "no answer to the registration"
        frame = sock.recv_multipart()[0]
        h = msgpack.unpackb(frame, strict_map_key=False)
        hs = [msgpack.unpackb(b, strict_map_key=False) for b in h["packed"]] if h.get("op") == "batch" else [h]
        [reply] = [x for x in hs if x.get("rid") == 7]
        return reply
    finally:
        sock.close(linger=0)


def test_a_scheduler_of_another_protocol_refuses_this_client_and_worker_naming_both(procs, tmp_path):
    path = str(tmp_path / "scheduler.json")
    sched = procs.start("scheduler", "--host", "127.0.0.1", "--port", str(free_port()), "--scheduler-file", path,
                        env=cli_env(**{TEST_PROTOCOL_VAR: str(OTHER)}))
    read_line(sched)
    with pytest.raises(IncompatibleVersionError) as info:
        Client(scheduler_file=path, set_as_default=False, timeout="20s")
    text = str(info.value)
    assert text.startswith(f"this scheduler speaks xsched protocol {OTHER} (xsched {XSCHED_VERSION})"), text
    assert f"protocol {PROTOCOL_VERSION} (xsched {XSCHED_VERSION})" in text, text  # this client's
    assert "install the same xsched version" in text

    worker = procs.start("worker", "--no-nanny", "--scheduler-file", path, "--nthreads", "1")
    assert worker.wait(60) == EXIT_CANNOT_CONNECT  # at once, and its nanny would not restart it
    err = worker.stderr.read().decode()
    assert f"protocol {OTHER}" in err and f"protocol {PROTOCOL_VERSION}" in err and "Traceback" not in err, err

    # a peer from before versions announces nothing: it hears the refusal as its registration's error
    address, security = read_scheduler_file(path)
    reply = _raw_register(address, security, {"op": ops.REGISTER_CLIENT, "client": "old"})
    assert reply["status"] == "error" and "IncompatibleVersionError" in reply["error"]
    assert f"protocol {OTHER}" in reply["error"] and "announced no protocol version" in reply["error"]
    assert sched.poll() is None  # refusing is no reason to stop serving


def test_a_worker_of_another_protocol_is_refused_by_this_scheduler(procs, own_cluster):
    cluster = own_cluster(n_workers=1)
    with Client(cluster, set_as_default=False) as c:
        c.wait_for_workers(1, timeout=30)
        worker = procs.start("worker", "--no-nanny", "--scheduler-file", cluster.scheduler_file, "--nthreads", "1",
                             env=cli_env(**{TEST_PROTOCOL_VAR: str(OTHER)}))
        assert worker.wait(60) == EXIT_CANNOT_CONNECT
        err = worker.stderr.read().decode()
        assert f"this scheduler speaks xsched protocol {PROTOCOL_VERSION}" in err, err
        assert f"speaks xsched protocol {OTHER}" in err, err
        assert len(c.scheduler_info()["workers"]) == 1  # nothing of it was kept
        assert c.submit(sum, [1, 2]).result(timeout=30) == 3
        log = os.path.join(cluster._dir, "scheduler.log")
        wait_until(lambda: "[incompatible version]" in open(log).read(), timeout=30,
                   msg="the scheduler logs the refusal (once, without a traceback)")
        assert "Traceback" not in open(log).read()


class MarkNanny(NannyPlugin):
    """Leaves a file when a nanny sets it up."""

    def __init__(self, path: str):
        self.path = path

    def setup(self, nanny):
        with open(self.path, "w") as f:
            f.write(str(os.getpid()))


def _without_fake_version() -> dict:
    return {k: v for k, v in cli_env().items() if k != TEST_PROTOCOL_VAR}


def test_a_nanny_whose_scheduler_speaks_another_protocol_sets_up_nothing_and_says_why(procs, tmp_path, monkeypatch):
    """The nanny's one exchange with the scheduler (its worker's get-nanny-plugins) carries the
    versions: a scheduler of another protocol refuses it before any nanny plugin goes out, the
    worker exits 69, and the nanny says why, naming both versions, once, and stops."""
    path = str(tmp_path / "scheduler.json")
    sched = procs.start("scheduler", "--host", "127.0.0.1", "--port", str(free_port()), "--scheduler-file", path,
                        env=cli_env(**{TEST_PROTOCOL_VAR: str(OTHER)}))
    read_line(sched)
    marker = tmp_path / "nanny-plugin-was-set-up"
    monkeypatch.setenv(TEST_PROTOCOL_VAR, str(OTHER))  # a client of the scheduler's protocol registers one
    with Client(scheduler_file=path, set_as_default=False, timeout="20s") as c:
        c.register_plugin(MarkNanny(str(marker)), name="mark")
    monkeypatch.delenv(TEST_PROTOCOL_VAR)

    nanny = procs.start("worker", "--scheduler-file", path, "--nthreads", "1", env=_without_fake_version())
    assert nanny.wait(60) == EXIT_CANNOT_CONNECT  # not restarting its worker in a loop
    err = nanny.stderr.read().decode()
    assert err.count("could not register with its scheduler and is not restarted") == 1, err
    assert f"this scheduler speaks xsched protocol {OTHER} (xsched {XSCHED_VERSION})" in err, err
    assert f"speaks xsched protocol {PROTOCOL_VERSION} (xsched {XSCHED_VERSION})" in err, err
    assert not marker.exists(), "the nanny set up a plugin from a scheduler of another protocol"
    assert sched.poll() is None


def test_a_worker_of_another_protocol_under_a_nanny_is_refused_and_not_restarted(procs, own_cluster):
    cluster = own_cluster(n_workers=1)
    with Client(cluster, set_as_default=False) as c:
        c.wait_for_workers(1, timeout=30)
        nanny = procs.start("worker", "--scheduler-file", cluster.scheduler_file, "--nthreads", "1",
                            env=cli_env(**{TEST_PROTOCOL_VAR: str(OTHER)}))  # the nanny and its worker
        assert nanny.wait(60) == EXIT_CANNOT_CONNECT
        err = nanny.stderr.read().decode()
        assert err.count("is not restarted") == 1, err
        assert f"this scheduler speaks xsched protocol {PROTOCOL_VERSION}" in err, err
        assert f"speaks xsched protocol {OTHER}" in err, err
        assert len(c.scheduler_info()["workers"]) == 1
