"""The security baseline on a real cluster: plain and curve both work end to end and
really use their mechanism; files are owner-only; the secret never shows in reprs,
logs or scheduler_info; a wrong secret is refused in curve mode too.
"""

from __future__ import annotations

import json
import os
import stat

import numpy as np
import pytest
import zmq

import xsched
from xsched import Client, LocalCluster
from xsched.protocol.security import AuthenticationError, Security

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(60)]


def inc(x):
    return x + 1


def _mechanisms(client):
    """The ZeroMQ mechanism of the scheduler's and each worker's listening socket."""
    sched = client.run_on_scheduler(lambda scheduler: scheduler.listener._sock.get(zmq.MECHANISM))
    workers = client.run(lambda worker: worker.listener._sock.get(zmq.MECHANISM))
    return {sched, *workers.values()}


def _exercise(client):
    assert client.gather(client.map(inc, range(20))) == list(range(1, 21))
    [big] = client.scatter([np.arange(10**6)])
    addrs = sorted(client.scheduler_info()["workers"])
    # worker-to-worker transfer: the data lives on one worker, the task is pinned to the other
    holder = client.who_has([big])[big.key][0]
    other = [a for a in addrs if a != holder][0]
    assert client.submit(np.sum, big, workers=[other]).result(timeout=30) == np.arange(10**6).sum()
    assert client.run_on_scheduler(lambda: "ok") == "ok"


def test_plain_mode_on_loopback_by_default(client, cluster):
    assert cluster.security.mechanism_for(cluster.scheduler_address) == "plain"
    assert _mechanisms(client) == {zmq.PLAIN}
    _exercise(client)


def test_curve_mode_from_config():
    with xsched.config.set({"comm.security": "curve"}):
        cluster = LocalCluster(n_workers=2, threads_per_worker=1)
    try:
        assert cluster.security.mode == "curve"
        with Client(cluster, set_as_default=False) as c:
            assert _mechanisms(c) == {zmq.CURVE}
            _exercise(c)
            # a wrong secret is refused at the CURVE handshake too
            bad = Security("e" * 64, "curve")
            with pytest.raises((AuthenticationError, TimeoutError)) as info:
                Client(cluster.scheduler_address, security=bad, timeout=2, set_as_default=False)
            assert bad.secret not in str(info.value) and cluster.security.secret not in str(info.value)
            assert c.run_on_scheduler(lambda scheduler: len(scheduler.client_peer)) == 1
    finally:
        cluster.close()


def test_curve_mode_by_argument():
    with LocalCluster(n_workers=1, threads_per_worker=1, security="curve") as cluster:
        sec = Security(cluster.security.secret, "curve")
        with Client(cluster.scheduler_address, security=sec, set_as_default=False) as c:
            assert _mechanisms(c) == {zmq.CURVE}
            assert c.submit(inc, 1).result(timeout=30) == 2
        # a plain client cannot talk to a curve cluster, even with the right secret
        with pytest.raises((AuthenticationError, TimeoutError)):
            Client(cluster.scheduler_address, security=Security(cluster.security.secret, "plain"), timeout=2,
                   set_as_default=False)


def test_scheduler_file_and_directory_are_private(cluster):
    assert stat.S_IMODE(os.stat(cluster.scheduler_file).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(os.path.dirname(cluster.scheduler_file)).st_mode) == 0o700
    with open(cluster.scheduler_file) as f:
        assert json.load(f)["secret"] == cluster.security.secret


def test_secret_never_in_reprs_info_or_logs(client, cluster):
    secret = cluster.security.secret
    assert len(secret) >= 32
    texts = [repr(cluster.security), str(cluster.security), repr(client), str(client), repr(cluster),
             client._repr_html_(), cluster._repr_html_(), repr(client.submit(inc, 1)),
             json.dumps(client.scheduler_info(), default=str),
             client.run_on_scheduler(lambda scheduler: repr(scheduler)),
             *client.run(lambda worker: repr(worker)).values()]
    for text in texts:
        assert secret not in text, text[:200]
    assert "hidden" in repr(cluster.security)
    # nothing the processes logged contains it (only the scheduler file holds it)
    directory = os.path.dirname(cluster.scheduler_file)
    for root, _, files in os.walk(directory):
        for name in files:
            path = os.path.join(root, name)
            if path == cluster.scheduler_file:
                continue
            with open(path, "rb") as f:
                assert secret.encode() not in f.read(), path


def test_security_rejects_weak_secrets_and_unknown_modes():
    with pytest.raises(ValueError, match="at least 16"):
        Security("short")
    with pytest.raises(ValueError, match="plain"):
        Security("0123456789abcdef" * 2, "rot13")
    assert Security.generate().secret != Security.generate().secret


def test_plain_password_is_per_port_never_the_secret():
    """PLAIN does not authenticate the server: whoever listens on a port learns only its password."""
    from xsched.protocol.security import Security

    sec = Security.generate("plain")
    a, b = sec.plain_password("tcp://127.0.0.1:40001"), sec.plain_password("tcp://127.0.0.1:40002")
    assert a != b and sec.secret.encode() not in (a, b)
    assert sec.plain_password("tcp://127.0.0.1:40001") == a
