"""The security baseline on a real cluster: every socket speaks CURVE (loopback too) and
really uses it; files are owner-only; the secret never shows in reprs, logs or
scheduler_info; a wrong secret is refused.
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


def test_every_socket_speaks_curve_by_default(client, cluster):
    """CURVE on loopback too: a client proves the secret, and so must the server it reaches."""
    assert cluster.security.mode == "auto"
    assert _mechanisms(client) == {zmq.CURVE}
    _exercise(client)


def test_curve_mode_encrypts_bulk_on_loopback_too():
    with xsched.config.set({"comm.security": "curve"}):
        cluster = LocalCluster(n_workers=2, threads_per_worker=1)
    try:
        assert cluster.security.mode == "curve"
        with Client(cluster, set_as_default=False) as c:
            assert _mechanisms(c) == {zmq.CURVE}
            _exercise(c)
            [big] = c.scatter([np.ones(2**20)])
            holder = c.who_has([big])[big.key][0]
            other = [a for a in c.scheduler_info()["workers"] if a != holder][0]
            assert c.submit(np.sum, big, workers=[other]).result(timeout=30) == 2**20
            # a wrong secret is refused at the handshake
            bad = Security("e" * 64, "curve")
            with pytest.raises((AuthenticationError, TimeoutError)) as info:
                Client(cluster.scheduler_address, security=bad, timeout=2, set_as_default=False)
            assert bad.secret not in str(info.value) and cluster.security.secret not in str(info.value)
            assert c.run_on_scheduler(lambda scheduler: len(scheduler.client_peer)) == 1
    finally:
        cluster.close()


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
    with pytest.raises(ValueError, match="'auto' or 'curve'"):
        Security("0123456789abcdef" * 2, "rot13")
    with pytest.raises(ValueError, match="no longer exists"):  # PLAIN never authenticated the server
        Security("0123456789abcdef" * 2, "plain")
    assert Security.generate().secret != Security.generate().secret


def test_keys_come_from_the_secret_only():
    a, b = Security.generate(), Security.generate()
    assert a._server_keys() != b._server_keys() and a._client_keys() != a._server_keys()
    assert Security(a.secret, "curve")._server_keys() == a._server_keys()
    assert a.secret.encode() not in a._server_keys()[1] + a._client_keys()[1]
