"""comm.py on real ZeroMQ sockets over loopback: replies that cannot be encoded, malformed
request ids and peers that leave never stop a receive loop, and a listener forgets peers
that are gone even when nobody asked to hear of it."""

from __future__ import annotations

import asyncio
import logging

import msgpack
import pytest

from xsched.comm import Connection, Listener, RemoteError
from xsched.protocol.schemas import TO_WORKER
from xsched.protocol.security import Security

pytestmark = pytest.mark.timeout(30)


def _run(coro):
    return asyncio.run(coro)


def test_an_unencodable_reply_becomes_an_error_and_the_listener_keeps_serving():
    async def main():
        sec = Security.generate()

        def handler(peer, header, payload):
            if header.get("bad"):
                return {"value": object()}  # msgpack cannot encode it
            return {"value": 1}

        lst = Listener(sec, handler, name="test")
        addr = lst.bind("tcp://127.0.0.1:0")
        conn = Connection(addr, sec).connect()
        try:
            with pytest.raises(RemoteError, match="TypeError"):
                await conn.request({"op": "ping", "bad": True}, timeout=10)
            reply, _ = await conn.request({"op": "ping"}, timeout=10)
            assert reply["value"] == 1
        finally:
            await conn.close()
            await lst.close()

    _run(main())


def test_a_handler_answering_with_a_status_of_its_own_is_heard_with_it():
    """A peer told "stale" (a shuffle's newer run) or "retired" must not hear "OK"."""
    async def main():
        sec = Security.generate()
        lst = Listener(sec, lambda peer, h, p: {"status": h["say"]} if "say" in h else {"n": 1}, name="test")
        addr = lst.bind("tcp://127.0.0.1:0")
        conn = Connection(addr, sec).connect()
        try:
            assert (await conn.request({"op": "ping", "say": "stale"}, timeout=10))[0]["status"] == "stale"
            reply, _ = await conn.request({"op": "ping"}, timeout=10)
            assert (reply["status"], reply["n"]) == ("OK", 1)
        finally:
            await conn.close()
            await lst.close()

    _run(main())


def test_a_reply_with_an_unhashable_rid_is_dropped_and_the_connection_keeps_working():
    async def main():
        sec = Security.generate()
        sent_bad = asyncio.Event()

        def handler(peer, header, payload):
            if not sent_bad.is_set():  # first a reply nobody asked for, with a list as its rid
                lst._send_now(peer, [msgpack.packb({"op": "reply", "rid": [1, 2], "status": "OK"})])
                sent_bad.set()
            return {"value": 2}

        lst = Listener(sec, handler, name="test")
        addr = lst.bind("tcp://127.0.0.1:0")
        conn = Connection(addr, sec).connect()
        try:
            reply, _ = await conn.request({"op": "ping"}, timeout=10)
            assert reply["value"] == 2 and sent_bad.is_set()
            reply, _ = await conn.request({"op": "ping"}, timeout=10)
            assert reply["value"] == 2
        finally:
            await conn.close()
            await lst.close()

    _run(main())


def test_a_listener_without_a_disconnect_handler_still_forgets_gone_peers():
    async def main():
        sec = Security.generate()
        lst = Listener(sec, lambda peer, h, p: {"ok": True}, name="worker-like")  # no on_disconnect
        addr = lst.bind("tcp://127.0.0.1:0")
        conns = [Connection(addr, sec, identity=f"peer-{i}".encode()).connect() for i in range(5)]
        try:
            for c in conns:
                await c.request({"op": "ping"}, timeout=10)
            assert len(lst._peers) == 5
            for c in conns[:4]:
                await c.close()
            deadline = asyncio.get_running_loop().time() + 10
            while len(lst._peers) > 1 and asyncio.get_running_loop().time() < deadline:
                await asyncio.sleep(0.05)  # polling a condition with a deadline
            assert lst._peers == {b"peer-4"} and set(lst._batchers) <= {b"peer-4"}
            reply, _ = await conns[4].request({"op": "ping"}, timeout=10)
            assert reply["ok"]
        finally:
            await conns[4].close()
            await lst.close()

    _run(main())


def test_a_handler_bug_is_logged_with_its_traceback_whatever_its_type(caplog):
    """A KeyError from a bug inside a handler is not "bad input": it is logged as an error with
    its traceback (once per peer, op and kind), and the requester hears what failed."""
    async def main():
        sec = Security.generate()

        def handler(peer, header, payload):
            return {"value": {}["missing"]}  # a bug, not the peer's fault

        lst = Listener(sec, handler, name="buggy")
        addr = lst.bind("tcp://127.0.0.1:0")
        conn = Connection(addr, sec).connect()
        try:
            for _ in range(3):
                with pytest.raises(RemoteError, match="KeyError"):
                    await conn.request({"op": "ping"}, timeout=10)
        finally:
            await conn.close()
            await lst.close()

    with caplog.at_level(logging.INFO, logger="xsched.comm"):
        _run(main())
    records = [r for r in caplog.records if "buggy" in r.getMessage()]
    assert len(records) == 1, [r.getMessage() for r in records]
    assert records[0].levelno == logging.ERROR and records[0].exc_info is not None


def test_a_message_that_breaks_its_schema_never_reaches_the_handler(caplog):
    async def main():
        sec = Security.generate()
        seen = []
        lst = Listener(sec, lambda peer, h, p: seen.append(h) or {}, name="checked", schemas=TO_WORKER)
        addr = lst.bind("tcp://127.0.0.1:0")
        conn = Connection(addr, sec).connect()
        try:
            for _ in range(3):
                with pytest.raises(RemoteError, match=r"get-data: keys\[1\] must be a key string, not int 5"):
                    await conn.request({"op": "get-data", "keys": ["a", 5]}, timeout=10)
            with pytest.raises(RemoteError, match="a worker does not handle op 'update-graph'"):
                await conn.request({"op": "update-graph"}, timeout=10)
            reply, _ = await conn.request({"op": "get-data", "keys": ["a"]}, timeout=10)
            assert reply["status"] == "OK" and [h["op"] for h in seen] == ["get-data"]
        finally:
            await conn.close()
            await lst.close()

    with caplog.at_level(logging.INFO, logger="xsched.comm"):
        _run(main())
    refused = [r.getMessage() for r in caplog.records if "refused" in r.getMessage()]
    assert len(refused) == 2, refused  # once per peer, op and kind
    assert "[bad keys]" in refused[0] and "[unknown op]" in refused[1]


@pytest.mark.parametrize("give_up", [True, False])
def test_a_request_to_a_holder_that_is_gone_fails_instead_of_waiting(give_up):
    """A worker named as the holder of some data may be dead before we first connect to it:
    nothing listens on its port, so ZeroMQ would retry the connect forever while the request
    waits. With give_up_unreachable the refused connect fails the request at once."""
    import socket

    # Without give_up the request waits out its timeout, whatever its length. ZeroMQ retries
    # the refused connect every 100 ms and, with give_up, the first retry fails the request:
    # 1 s spans ten retries that must not fail it (5 s only made the wait five times longer).
    timeout = 5 if give_up else 1

    async def main():
        sec = Security.generate()
        with socket.socket() as s:  # a port nobody listens on (bound, never listening)
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
            conn = Connection(f"tcp://127.0.0.1:{port}", sec, give_up_unreachable=give_up).connect()
            try:
                await conn.request({"op": "get-data", "keys": ["x"]}, timeout=timeout)
            except asyncio.TimeoutError:
                return "waited"
            except ConnectionError as e:
                return str(e)
            finally:
                await conn.close()

    outcome = _run(main())
    if give_up:
        assert "cannot connect to tcp://127.0.0.1:" in outcome and "refused" in outcome
    else:
        assert outcome == "waited"
