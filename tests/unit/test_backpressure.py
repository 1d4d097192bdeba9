"""Back-pressure in comm.py: a live peer that stops reading pins at most the per-peer window
plus the outbox bound of the sender's memory, and is then dropped (a Listener reports it
gone, a Connection fails as lost); peers that read get everything, in order, however large.

Memory is measured by the zero-copy buffers still alive (weak references to the arrays
sent), which is what a stuck reader used to pin without bound."""

from __future__ import annotations

import asyncio
import gc
import weakref

import numpy as np
import pytest
import zmq

from xsched.comm import CommClosedError, Connection, Listener
from xsched.protocol.messages import encode
from xsched.protocol.security import Security

pytestmark = pytest.mark.timeout(60)

MiB = 2**20


async def _until(predicate, what: str, timeout: float = 20.0):
    """Wait for a condition the event loop brings about (a deadline, no duration asserted)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not predicate():
        if loop.time() > deadline:
            raise AssertionError(f"{what} did not happen within {timeout}s")
        await asyncio.sleep(0.01)


def _stuck_reader(address: str, sec: Security) -> zmq.Socket:
    """An authenticated DEALER that announces itself and then never reads."""
    sock = zmq.Context.instance().socket(zmq.DEALER)
    sock.linger = 0
    sock.rcvhwm = 1
    sock.rcvbuf = 64 * 1024
    sock.routing_id = b"stuck-reader"
    sec.configure_client(sock)
    sock.connect(address)
    sock.send_multipart(encode({"op": "ping"}))
    return sock


def _alive(refs) -> int:
    gc.collect()
    return sum(r() is not None for r in refs)


def test_a_listener_drops_a_peer_that_stops_reading_and_pins_a_bounded_amount():
    async def main():
        sec = Security.generate()
        gone = []
        peers = []

        def handler(peer, header, payload):
            peers.append(peer)
            return {}

        lst = Listener(sec, handler, on_disconnect=gone.append, name="sender", window_bytes=4 * MiB,
                       max_queued_bytes=8 * MiB)
        addr = lst.bind("tcp://127.0.0.1:0")
        reader = _stuck_reader(addr, sec)
        try:
            await _until(lambda: peers, "the reader's ping")
            refs = []
            for i in range(120):  # 120 MiB for a peer that reads none of it
                arr = np.full(MiB // 8, i, dtype=np.int64)
                refs.append(weakref.ref(arr))
                lst.send(b"stuck-reader", {"op": "ping"}, raw={"data": [arr]})
                del arr
            await _until(lambda: gone, "the stuck peer being dropped")
            assert gone == [b"stuck-reader"] and lst.dropped == 1
            # what ZeroMQ still holds for it is at most the window (plus the message at its edge)
            assert _alive(refs) <= 4 + 1, f"{_alive(refs)} MiB still pinned"
            assert b"stuck-reader" not in lst._outboxes and b"stuck-reader" not in lst._batchers
            # and the listener serves everyone else
            other = Connection(addr, sec).connect()
            try:
                reply, _ = await other.request({"op": "ping"}, timeout=10)
                assert reply["status"] == "OK"
            finally:
                await other.close()
        finally:
            reader.close(linger=0)
            await lst.close()

    asyncio.run(main())


def test_a_connection_to_a_peer_that_stops_reading_fails_as_lost_and_pins_a_bounded_amount():
    async def main():
        sec = Security.generate()
        lst = Listener(sec, lambda peer, h, p: {}, name="stuck")
        addr = lst.bind("tcp://127.0.0.1:0")
        lost = []
        conn = Connection(addr, sec, on_lost=lost.append, window_bytes=4 * MiB, max_queued_bytes=8 * MiB).connect()
        try:
            await conn.request({"op": "ping"}, timeout=10)
            lst._background.cancel()  # the listener stops reading (its process is stuck, say)
            refs = []
            for i in range(120):
                arr = np.full(MiB // 8, i, dtype=np.int64)
                refs.append(weakref.ref(arr))
                conn.send({"op": "ping"}, raw={"data": [arr]})
                del arr
            await _until(lambda: lost, "the connection failing")
            assert isinstance(lost[0], CommClosedError) and "stopped reading" in str(lost[0])
            assert _alive(refs) <= 4 + 1, f"{_alive(refs)} MiB still pinned"
            with pytest.raises(CommClosedError):
                await conn.request({"op": "ping"}, timeout=10)
        finally:
            await conn.close()
            await lst.close()

    asyncio.run(main())


def test_a_reading_peer_gets_everything_in_order_however_much_and_however_large():
    async def main():
        sec = Security.generate()
        got = []

        def handler(peer, header, payload):
            got.append((header["n"], bytes(memoryview(payload[0])[:8]), len(memoryview(payload[0]).cast("B"))))
            return {} if header.get("rid") is not None else None

        lst = Listener(sec, handler, name="reader")
        addr = lst.bind("tcp://127.0.0.1:0")
        # a small window and outbox: most messages wait their turn, none is dropped
        conn = Connection(addr, sec, window_bytes=2 * MiB, max_queued_bytes=128 * MiB).connect()
        try:
            for n in range(24):
                conn.send({"op": "ping", "n": n}, raw={"data": [np.full(2 * MiB // 8, n, dtype=np.int64)]})
            # one message far beyond both bounds still goes (one message of any size always fits)
            big = np.arange(40 * MiB // 8, dtype=np.int64)
            reply, _ = await conn.request({"op": "ping", "n": 24}, raw={"data": [big]}, timeout=30)
            assert reply["status"] == "OK"
            assert [g[0] for g in got] == list(range(25))
            assert all(g[1] == np.int64(g[0]).tobytes() for g in got[:24])
            assert got[24][2] == 40 * MiB and got[23][2] == 2 * MiB
            assert conn.failure is None
        finally:
            await conn.close()
            await lst.close()

    asyncio.run(main())


def test_per_peer_state_is_forgotten_when_the_peer_goes():
    async def main():
        sec = Security.generate()
        lst = Listener(sec, lambda peer, h, p: {}, name="forgetful")
        addr = lst.bind("tcp://127.0.0.1:0")
        conns = [Connection(addr, sec, identity=f"p{i}".encode()).connect() for i in range(4)]
        try:
            for c in conns:
                await c.request({"op": "ping"}, timeout=10)
                c._sock.send_multipart([b"garbage"])  # remembered: said once per peer and kind
            await _until(lambda: len(lst._reported._seen) == 4, "the garbage being noted")
            assert set(lst._outboxes) == {c.identity for c in conns}
            for c in conns:
                await c.close()
            await _until(lambda: not lst._peers, "the peers being found gone")
            assert lst._outboxes == {} and lst._batchers == {} and lst._reported._seen == {}
        finally:
            for c in conns:
                await c.close()
            await lst.close()

    asyncio.run(main())
