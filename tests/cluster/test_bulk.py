"""The bulk side channel: both ends prove the offer's one-time key, bytes are sealed with
AES-256-OCB3 off loopback, nothing unauthenticated is read, no pickle stream ever travels
on it, and the server survives idle, slow and garbage peers."""

import hashlib
import hmac
import socket
import threading

import numpy as np
import pytest

import xsched
from xsched import Client, LocalCluster, wait
from xsched.protocol import bulk
from xsched.protocol.bulk import BULK_MIN_BYTES, BulkServer, fetch_buffers, split_for_bulk
from xsched.protocol.security import AuthenticationError, Security


@pytest.fixture
def server():
    s = BulkServer("127.0.0.1")
    s.start()
    yield s
    s.close()


@pytest.mark.parametrize("encrypt", [False, True])
def test_offer_is_served_once_to_the_key_holder(server, encrypt):
    data = np.arange(300_000, dtype=np.float64)  # several chunks, the last one partial
    offer = server.offer([memoryview(data), b"tail"], encrypt=encrypt)
    got, tail = fetch_buffers("127.0.0.1", offer)
    assert (np.frombuffer(got, dtype=np.float64) == data).all() and bytes(tail) == b"tail"
    got[0] = 1  # writeable
    with pytest.raises(AuthenticationError):  # replayed: the offer is gone, the server says nothing
        fetch_buffers("127.0.0.1", offer, timeout=5)


def _hello(offer_id: bytes, key: bytes, nonce: bytes = b"n" * 16) -> bytes:
    mac = hmac.new(key, b"fetch" + offer_id + nonce, hashlib.sha256).digest()
    return bulk._MAGIC + offer_id + nonce + mac


def test_the_offer_id_without_the_key_gets_nothing(server):
    """Between hosts the id is visible on the wire; the key never is (it came over CURVE)."""
    offer = server.offer([b"secret data" * 1000], encrypt=True)
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as s:
        s.sendall(_hello(offer["id"], b"k" * 32))
        assert s.recv(100) == b""
    assert server.refused == 1
    # and the offer is still there for its rightful requester
    assert bytes(fetch_buffers("127.0.0.1", offer)[0]) == b"secret data" * 1000


def test_garbage_and_idle_peers_pin_no_thread_and_do_not_block_others(server, monkeypatch):
    import threading

    before = threading.active_count()
    idle = [socket.create_connection(("127.0.0.1", server.port), timeout=5) for _ in range(20)]
    garbage = socket.create_connection(("127.0.0.1", server.port), timeout=5)
    garbage.sendall(b"G" * bulk._HELLO)
    try:
        assert garbage.recv(10) == b""
        assert threading.active_count() == before  # one selector thread serves them all
        offer = server.offer([b"ok" * 100], encrypt=False)
        assert bytes(fetch_buffers("127.0.0.1", offer)[0]) == b"ok" * 100
    finally:
        for s in idle + [garbage]:
            s.close()


def test_too_many_unauthenticated_peers_evict_the_oldest(server, monkeypatch):
    monkeypatch.setattr(bulk, "_MAX_PENDING", 4)
    peers = [socket.create_connection(("127.0.0.1", server.port), timeout=5) for _ in range(6)]
    try:
        assert peers[0].recv(10) == b"" and peers[1].recv(10) == b""  # closed to make room
        offer = server.offer([b"x" * 10], encrypt=True)
        assert bytes(fetch_buffers("127.0.0.1", offer)[0]) == b"x" * 10
    finally:
        for s in peers:
            s.close()


class _Impostor:
    """Listens where a holder was and answers a hello with made-up bytes."""

    def __init__(self, reply: bytes):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(1)
        self.port = self.sock.getsockname()[1]
        self.reply = reply

    def serve_once(self):
        conn, _ = self.sock.accept()
        with conn:
            conn.recv(bulk._HELLO)
            conn.sendall(self.reply)

    def close(self):
        self.sock.close()


@pytest.mark.parametrize("encrypt", [False, True])
def test_a_server_that_cannot_prove_the_key_is_not_read(encrypt):
    import threading

    imp = _Impostor(b"\0" * 32 + b"A" * 4096)
    t = threading.Thread(target=imp.serve_once)
    t.start()
    offer = {"port": imp.port, "id": b"i" * 16, "key": b"k" * 32, "encrypt": encrypt, "lengths": [4096]}
    try:
        with pytest.raises(AuthenticationError, match="could not prove"):
            fetch_buffers("127.0.0.1", offer, timeout=10)
    finally:
        t.join(10)
        imp.close()


def test_a_changed_chunk_fails_its_tag(server, monkeypatch):
    real = bulk._send_sealed

    class FlipFirstByte:  # a man in the middle flipping one ciphertext bit
        def __init__(self, conn):
            self.conn, self.flipped = conn, False

        def sendall(self, data):
            if not self.flipped:
                self.flipped = True
                data = bytes([bytes(data)[0] ^ 1]) + bytes(data)[1:]
            self.conn.sendall(data)

    monkeypatch.setattr(bulk, "_send_sealed", lambda conn, *a: real(FlipFirstByte(conn), *a))
    offer = server.offer([b"y" * 5000], encrypt=True)
    with pytest.raises(AuthenticationError, match="tag"):
        fetch_buffers("127.0.0.1", offer)


class _Records:
    """A man in the middle that holds back the sender's first record and lets ``change``
    decide what goes out in its place."""

    def __init__(self, conn, change):
        self.conn, self.change, self.records = conn, change, []

    def sendall(self, data):
        self.records.append(bytes(data))
        out = self.change(self.records)
        if out is not None:
            self.conn.sendall(out)


@pytest.mark.parametrize("attack", ["swap", "replay", "drop"])
def test_reordered_replayed_or_dropped_records_fail(server, monkeypatch, attack):
    """Each record is sealed with its position: swapping two, sending one twice or leaving
    one out never yields data, even though every record on the wire is genuine."""
    real = bulk._send_sealed

    def change(records):
        if len(records) == 1:
            return None  # hold the first record back
        if len(records) == 2:
            first, second = records
            return {"swap": second + first, "replay": first + first, "drop": second}[attack]
        return records[-1]

    monkeypatch.setattr(bulk, "_send_sealed", lambda conn, *a: real(_Records(conn, change), *a))
    offer = server.offer([b"z" * (3 * bulk.SLICE)], encrypt=True)
    with pytest.raises(AuthenticationError, match="tag"):  # the first record read is not record 0
        fetch_buffers("127.0.0.1", offer, timeout=5)


@pytest.mark.parametrize("encrypt", [False, True])
def test_pushed_buffers_arrive_once_for_the_offer(server, encrypt):
    data = np.arange(300_000, dtype=np.float64)
    offer = server.expect([data.nbytes, 4], encrypt=encrypt)
    bulk.push_buffers("127.0.0.1", offer, [memoryview(data), b"tail"])
    got, tail = server.take(offer["id"], timeout=10)
    assert (np.frombuffer(got, dtype=np.float64) == data).all() and bytes(tail) == b"tail"
    assert server.bytes_received == data.nbytes + 4
    with pytest.raises(KeyError, match="no bulk receive offer"):  # taken: gone
        server.take(offer["id"], timeout=1)
    with pytest.raises(AuthenticationError):  # and the offer cannot be pushed to twice
        bulk.push_buffers("127.0.0.1", offer, [memoryview(data), b"tail"], timeout=5)


def test_a_push_must_match_the_offer_and_a_changed_record_fails_take(server, monkeypatch):
    offer = server.expect([5000], encrypt=True)
    with pytest.raises(ValueError, match="not what the offer expects"):
        bulk.push_buffers("127.0.0.1", offer, [b"short"])
    real = bulk._send_sealed

    def flip(conn, aead, offer_id, buffers):  # a man in the middle flipping one ciphertext bit
        class Flip:
            def sendall(self, data):
                conn.sendall(bytes([bytes(data)[0] ^ 1]) + bytes(data)[1:])
        return real(Flip(), aead, offer_id, buffers)

    monkeypatch.setattr(bulk, "_send_sealed", flip)
    bulk.push_buffers("127.0.0.1", offer, [b"y" * 5000])
    with pytest.raises(AuthenticationError, match="tag"):
        server.take(offer["id"], timeout=10)


def test_nothing_is_pushed_to_a_server_that_cannot_prove_the_key():
    """A process on the worker's bulk port that lacks the offer's key gets no data byte."""
    imp = socket.create_server(("127.0.0.1", 0))
    port = imp.getsockname()[1]
    seen = bytearray()

    def impostor():
        conn, _ = imp.accept()
        with conn:
            seen.extend(conn.recv(bulk._HELLO))
            conn.sendall(b"p" * bulk._MAC)  # a made-up proof
            conn.settimeout(2)
            try:
                while chunk := conn.recv(65536):
                    seen.extend(chunk)
            except OSError:
                pass

    t = threading.Thread(target=impostor, daemon=True)
    t.start()
    offer = {"port": port, "id": b"i" * 16, "key": b"k" * 32, "encrypt": True, "lengths": [10_000]}
    with pytest.raises(AuthenticationError, match="could not prove"):
        bulk.push_buffers("127.0.0.1", offer, [b"s" * 10_000], timeout=5)
    t.join(10)
    imp.close()
    assert len(seen) == bulk._HELLO  # the hello, and not one byte of the data after it


def test_take_times_out_when_nothing_is_pushed(server):
    offer = server.expect([10], encrypt=False)
    with pytest.raises(TimeoutError, match="did not arrive"):
        server.take(offer["id"], timeout=0.3)


def test_a_server_closed_before_its_thread_ran_ends_quietly():
    """A worker that fails its handshake closes its bulk server at once; the acceptor
    thread may first run after that, and must end without a traceback."""
    s = BulkServer("127.0.0.1")
    s.start()
    s.close()
    s._closed = False  # as the thread sees it when it runs between the socket's close and the flag
    s._loop()  # returns: no ValueError for the closed socket's descriptor -1


def test_scatter_of_large_data_takes_the_side_channel():
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False) as cluster, Client(cluster) as c:
        data = np.arange(2_000_000, dtype=np.float64)  # 16 MB
        [fut] = c.scatter([data])
        assert float(c.submit(np.sum, fut).result(timeout=30)) == float(data.sum())
        [received] = c.run(lambda worker: worker.bulk.bytes_received).values()
        assert received >= data.nbytes
        [small] = c.scatter([b"tiny"])  # below the threshold: over ZeroMQ, as before
        assert c.gather(small) == b"tiny"
        [again] = c.run(lambda worker: worker.bulk.bytes_received).values()
        assert again == received


def test_clear_offers_are_refused_between_hosts():
    offer = {"port": 9, "id": b"i" * 16, "key": b"k" * 32, "encrypt": False, "lengths": [10]}
    with pytest.raises(AuthenticationError, match="unencrypted"):
        fetch_buffers("10.213.0.9", offer, security=Security.generate())
    with pytest.raises(AuthenticationError, match="unencrypted"):  # curve mode: not even on loopback
        fetch_buffers("127.0.0.1", offer, security=Security.generate("curve"))


def test_pickle_streams_never_take_the_side_channel():
    big_head = [b"h" * (2 * BULK_MIN_BYTES), b"x" * 1000]
    assert split_for_bulk(big_head)[1] == []  # a large pickle stream stays on CURVE
    big = [b"head", bytes(BULK_MIN_BYTES)]
    rest, idx, frames = split_for_bulk(big)
    assert idx == [1] and rest[1] == b"" and rest[0] == b"head" and len(frames[0]) == BULK_MIN_BYTES


def make(n):
    return np.ones(n)


def bulk_sent(worker):
    return worker.bulk.bytes_sent


@pytest.mark.cluster
@pytest.mark.timeout(60)
@pytest.mark.parametrize("mode", ["auto", "curve"])
def test_large_results_take_the_side_channel_in_every_mode(mode):
    with xsched.config.set({"comm.security": mode}):
        with LocalCluster(n_workers=2, threads_per_worker=1, memory_limit="2GB") as cluster, Client(cluster) as c:
            w0, w1 = sorted(c.scheduler_info()["workers"])
            a = c.submit(make, 2**21, workers=[w0])  # 16 MiB
            wait([a])
            x = a.result()
            x[0] = 5.0  # arrays from the side channel are writeable
            moved = c.submit(lambda v: float(v.sum()), a, workers=[w1]).result()
            assert moved == 2**21
            sent = c.run(bulk_sent)
            assert sent[w0] >= 2 * 16 * 2**20  # to the client and to the other worker


EMFILE_SERVER = r"""
import resource, sys, time
sys.path.insert(0, sys.argv[1])
from xsched.protocol.bulk import BulkServer, _HELLO
resource.setrlimit(resource.RLIMIT_NOFILE, (48, 48))   # a server about to run out of descriptors
s = BulkServer("127.0.0.1"); s.start()
offer = s.offer([b"still serving" * 100], encrypt=True)
import pickle, os
with open(sys.argv[2] + ".tmp", "wb") as f:
    pickle.dump(offer, f)
os.replace(sys.argv[2] + ".tmp", sys.argv[2])
sys.stdin.read()   # until the test is done
"""


@pytest.mark.timeout(60)
def test_running_out_of_file_descriptors_pauses_accepting_and_recovers(tmp_path):
    """Past its descriptor limit the server stops accepting for a moment instead of dying."""
    import os
    import pickle
    import subprocess
    import sys

    from tests.support.helpers import wait_until

    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    path = str(tmp_path / "offer.pickle")
    p = subprocess.Popen([sys.executable, "-c", EMFILE_SERVER, repo, path], stdin=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    try:
        wait_until(lambda: os.path.exists(path) or p.poll() is not None, msg="the server's offer")
        with open(path, "rb") as f:
            offer = pickle.load(f)
        flood = []
        for _ in range(120):  # far more than 48: its accept() fails with EMFILE
            try:
                flood.append(socket.create_connection(("127.0.0.1", offer["port"]), timeout=5))
            except OSError:
                break
        seen = bytearray()
        wait_until(lambda: b"out of file descriptors" in _peek(p, seen), timeout=20, msg="the server ran out")
        for s in flood:
            s.close()
        assert bytes(fetch_buffers("127.0.0.1", offer, timeout=20)[0]) == b"still serving" * 100
        assert p.poll() is None  # alive
    finally:
        p.stdin.close()
        p.wait(10)
        p.stderr.close()


def _peek(p, seen: bytearray) -> bytes:
    """What the server process has written to stderr so far, read without blocking."""
    import os
    import select

    while select.select([p.stderr], [], [], 0)[0]:
        chunk = os.read(p.stderr.fileno(), 4096)
        if not chunk:
            break
        seen.extend(chunk)
    return bytes(seen)
