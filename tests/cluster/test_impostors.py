"""Impostors on the port a worker or client expects, and floods before authentication.

An impostor knows the wire format but not the secret: a ZeroMQ listener with PLAIN and a
ZAP handler that admits everyone, or with CURVE and keys of its own, registered where a
stale scheduler would be. It answers whatever it receives with a ``compute-task`` whose
pickle would create a marker file when unpickled. Nothing it sends may be unpickled; the
worker exits with an authentication error its nanny does not retry, the client raises.
"""

from __future__ import annotations

import os
import pickle
import socket
import subprocess
import sys
import threading

import psutil
import pytest
import zmq

from xsched import Client
from xsched.comm import Connection
from xsched.protocol import registry
from xsched.protocol.messages import MAX_WIRE_FRAME, encode
from xsched.protocol.security import AuthenticationError, Security
from xsched.worker.nanny import EXIT_CANNOT_CONNECT

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(90)]


class _Touch:
    """Unpickling this creates ``path``: proof that an impostor's bytes were decoded."""

    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return (open, (self.path, "w"))


class Impostor:
    """A ROUTER that speaks xsched's framing without the secret, on a thread of its own."""

    def __init__(self, kind: str, marker: str):
        self.ctx = zmq.Context()
        self.sock = self.ctx.socket(zmq.ROUTER)
        self.sock.linger = 0
        self.zap = None
        if kind == "plain":
            self.zap = self.ctx.socket(zmq.REP)
            self.zap.linger = 0
            self.zap.bind("inproc://zeromq.zap.01")
            self.sock.plain_server = True
        else:
            public, secret = zmq.curve_keypair()
            self.sock.curve_publickey, self.sock.curve_secretkey = public, secret
            self.sock.curve_server = True
        self.port = self.sock.bind_to_random_port("tcp://127.0.0.1")
        self.address = f"tcp://127.0.0.1:{self.port}"
        self.payload = encode({"op": "compute-task", "key": "x"}, raw={"run_spec": [pickle.dumps(_Touch(marker))]})
        self.received = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self):
        poller = zmq.Poller()
        poller.register(self.sock, zmq.POLLIN)
        if self.zap is not None:
            poller.register(self.zap, zmq.POLLIN)
        while not self._stop.is_set():
            for s, _ in poller.poll(50):
                if s is self.zap:  # admit everyone
                    req = self.zap.recv_multipart()
                    self.zap.send_multipart([req[0], req[1], b"200", b"OK", b"anyone", b""])
                else:
                    frames = self.sock.recv_multipart()
                    self.received += 1
                    self.sock.send_multipart([frames[0]] + self.payload)

    def close(self):
        self._stop.set()
        self._thread.join(5)
        self.sock.close(0)
        if self.zap is not None:
            self.zap.close(0)
        self.ctx.term()


@pytest.fixture(params=["plain", "curve"])
def impostor(request, tmp_path):
    marker = str(tmp_path / "unpickled")
    imp = Impostor(request.param, marker)
    imp.marker = marker
    # the registry points at it, as a stale entry of a restarted scheduler would
    imp.security = Security.generate()
    imp.entry = registry.register(imp.address, imp.security, f"scheduler-stale-{imp.port}")
    yield imp
    registry.unregister(imp.entry)
    imp.close()
    assert not os.path.exists(marker), "an impostor's bytes were unpickled"


def test_worker_refuses_an_impostor_scheduler(impostor):
    env = {k: v for k, v in os.environ.items() if k != "XSCHED_SECRET"}
    env["XSCHED_INLINE_CONFIG"] = "{comm: {timeouts: {connect: 5s}}}"
    p = subprocess.run([sys.executable, "-m", "xsched.cli", "worker", f"127.0.0.1:{impostor.port}", "--no-nanny"],
                       capture_output=True, text=True, timeout=60, env=env)
    assert p.returncode == EXIT_CANNOT_CONNECT, p.stderr  # the nanny would not retry this
    assert "could not prove it knows the cluster secret" in p.stderr, p.stderr
    assert impostor.security.secret not in p.stderr and "Traceback" not in p.stderr
    assert impostor.received == 0


def test_client_refuses_an_impostor_scheduler(impostor):
    with pytest.raises(AuthenticationError, match="could not prove it knows the cluster secret"):
        Client(f"localhost:{impostor.port}", timeout=5, set_as_default=False)
    assert impostor.received == 0


def test_a_peer_connection_to_an_impostor_worker_fails_without_decoding(impostor):
    """What a worker or client meets when another process took a dead worker's port."""
    import asyncio

    async def main():
        conn = Connection(impostor.address, impostor.security).connect()
        try:
            with pytest.raises(AuthenticationError):
                await conn.request({"op": "get-data", "keys": ["x"]}, timeout=10)
        finally:
            await conn.close()

    asyncio.run(main())
    assert impostor.received == 0


def _flood(port: int, peers: int, declared: int, send: int) -> list[socket.socket]:
    """Unauthenticated TCP peers, each declaring a huge first ZMTP frame and streaming into it."""
    greeting = b"\xff" + b"\0" * 8 + b"\x7f" + b"\x03\x00" + b"CURVE".ljust(20, b"\0") + b"\0" + b"\0" * 31
    socks = []
    for _ in range(peers):
        s = socket.create_connection(("127.0.0.1", port), timeout=10)
        s.sendall(greeting + b"\x06" + declared.to_bytes(8, "big"))
        socks.append(s)
    chunk = b"\0" * 2**20
    for s in socks:
        s.settimeout(2)
        try:
            for _ in range(send // len(chunk)):
                s.sendall(chunk)
        except OSError:
            pass  # refused and closed: what we want
    return socks


def _rss(pid: int) -> int:
    return psutil.Process(pid).memory_info().rss


def test_eight_peers_declaring_512_mib_frames_do_not_grow_the_scheduler(own_cluster):
    cluster = own_cluster(n_workers=1)
    with Client(cluster, set_as_default=False) as c:
        pid = c.run_on_scheduler(os.getpid)
        port = int(cluster.scheduler_address.rsplit(":", 1)[1])
        before = _rss(pid)
        socks = _flood(port, peers=8, declared=512 * 2**20, send=64 * 2**20)
        try:
            grown = _rss(pid) - before
            assert grown < 64 * 2**20, f"scheduler grew by {grown / 2**20:.0f} MiB"
            # it keeps serving
            assert c.submit(sum, [1, 2]).result(timeout=30) == 3
            # and every flooding peer was disconnected: past the server's greeting, reading
            # ends in EOF or a reset, not a timeout
            for s in socks:
                s.settimeout(15)
                got = b""
                try:
                    while chunk := s.recv(1 << 16):
                        got += chunk
                except ConnectionResetError:
                    pass
                assert len(got) <= 64, got  # at most the ZMTP greeting, nothing after it
        finally:
            for s in socks:
                s.close()
        print(f"\n8 peers x 512 MiB declared: scheduler RSS grew by {grown / 2**20:.1f} MiB "
              f"(frames above {MAX_WIRE_FRAME} bytes are refused before authentication)")


def test_messages_far_above_the_frame_limit_still_travel(client):
    """Authenticated peers never meet the limit: big frames are cut and joined."""
    import numpy as np

    data = np.arange(3 * MAX_WIRE_FRAME // 8 + 17, dtype=np.int64)  # > 3 frames' worth
    [fut] = client.scatter([data])  # put-data over ZeroMQ (no side channel on this path)
    assert client.submit(lambda a: int(a[-1]), fut).result(timeout=30) == int(data[-1])
    big_arg = np.ones(2 * MAX_WIRE_FRAME // 8)  # embedded in the task spec of update-graph
    assert client.submit(lambda a: float(a.sum()), big_arg).result(timeout=30) == big_arg.size
