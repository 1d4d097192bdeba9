"""The bulk side channel: large buffers by token over a plain socket, never under CURVE."""

import socket

import numpy as np
import pytest

import xsched
from xsched import Client, LocalCluster, wait
from xsched.protocol.bulk import BULK_MIN_BYTES, BulkServer, fetch_buffers, split_for_bulk


def test_offer_is_served_once_to_its_token():
    server = BulkServer("127.0.0.1")
    server.start()
    try:
        data = np.arange(1000, dtype=np.float64)
        offer = server.offer([memoryview(data)])
        [buf] = fetch_buffers("127.0.0.1", offer)
        got = np.frombuffer(buf, dtype=np.float64)
        assert (got == data).all()
        with pytest.raises(ConnectionError):  # replayed token: nothing is sent
            fetch_buffers("127.0.0.1", offer, timeout=5)
    finally:
        server.close()


def test_wrong_token_gets_nothing():
    server = BulkServer("127.0.0.1")
    server.start()
    try:
        server.offer([b"secret data" * 1000])
        with socket.create_connection(("127.0.0.1", server.port), timeout=5) as s:
            s.sendall(b"x" * 16)
            assert s.recv(100) == b""
    finally:
        server.close()


def test_split_only_when_large():
    small = [b"head", b"x" * 1000]
    assert split_for_bulk(small)[1] == []
    big = [b"head", bytes(BULK_MIN_BYTES)]
    rest, idx, frames = split_for_bulk(big)
    assert idx == [1] and rest[1] == b"" and len(frames[0]) == BULK_MIN_BYTES


def make(n):
    return np.ones(n)


def bulk_sent(worker):
    return worker.bulk.bytes_sent


@pytest.mark.cluster
@pytest.mark.timeout(60)
@pytest.mark.parametrize("mode", ["plain", "curve"])
def test_large_results_use_bulk_only_without_encryption(mode):
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
            if mode == "plain":
                assert sent[w0] >= 2 * 16 * 2**20  # to the client and to the other worker
            else:
                assert sum(sent.values()) == 0
