"""The worker's actor host without sockets: calls in arrival order, one thread per actor,
a raising method leaving the actor usable, unknown actors named. The real thing, between
processes, is tests/cluster/test_actors.py."""

from __future__ import annotations

import asyncio
import pickle
import threading

import pytest

from xsched.errors import ActorError
from xsched.protocol.messages import decode, encode, unpack_objects
from xsched.worker.actors import ActorHost


class Counter:
    def __init__(self):
        self.n = 0
        self.threads = set()

    def increment(self, by=1):
        self.threads.add(threading.get_ident())
        n = self.n
        self.n = n + by  # a read-modify-write: interleaved calls would lose updates
        return self.n

    def fail(self):
        raise ValueError("no good")

    async def later(self, x):
        await asyncio.sleep(0)
        return x * 2


class FakeWorker:
    address = "tcp://127.0.0.1:1"


def call(host, key, method, *args, **kwargs):
    header, payload = decode(encode({"op": "actor-call", "key": key, "method": method},
                                    {"args": args, "kwargs": kwargs}))
    return host.call(header, payload)


def result_of(msg):
    if msg.header.get("error"):
        raise pickle.loads(msg.header["exception"])
    header, payload = decode(encode({"op": "reply", **msg.header}, raw=msg.raw))
    return unpack_objects(header, payload)["result"]


@pytest.mark.timeout(30)
def test_calls_run_in_order_one_at_a_time_in_one_thread():
    host = ActorHost(FakeWorker())
    counter = Counter()
    host.add("c-1", counter)

    async def main():
        return await asyncio.gather(*(call(host, "c-1", "increment") for _ in range(200)))

    replies = asyncio.run(main())
    assert [result_of(r) for r in replies] == list(range(1, 201))  # arrival order, no lost update
    assert counter.n == 200 and len(counter.threads) == 1
    assert threading.get_ident() not in counter.threads
    assert host.calls == 200
    host.close()


@pytest.mark.timeout(30)
def test_a_raising_method_fails_its_call_only():
    host = ActorHost(FakeWorker())
    host.add("c-1", Counter())

    async def main():
        bad = await call(host, "c-1", "fail")
        good = await call(host, "c-1", "increment", by=3)
        doubled = await call(host, "c-1", "later", 21)
        attr = await host.attribute({"op": "actor-attribute", "key": "c-1", "name": "n"}, [])
        missing = await host.attribute({"op": "actor-attribute", "key": "c-1", "name": "nope"}, [])
        return bad, good, doubled, attr, missing

    bad, good, doubled, attr, missing = asyncio.run(main())
    with pytest.raises(ValueError, match="no good"):
        result_of(bad)
    assert b"in fail" in bad.header["traceback"]
    assert result_of(good) == 3 and result_of(doubled) == 42 and result_of(attr) == 3
    with pytest.raises(AttributeError, match="nope"):
        result_of(missing)
    host.close()


@pytest.mark.timeout(30)
def test_an_actor_forgotten_or_never_here_is_named():
    host = ActorHost(FakeWorker())
    host.add("c-1", Counter())
    host.forget("c-1")
    assert repr(host) == "<ActorHost: 0 actors, 0 calls>"
    reply = asyncio.run(call(host, "c-1", "increment"))
    with pytest.raises(ActorError, match=r"tcp://127\.0\.0\.1:1 holds no actor 'c-1'.*actor=True"):
        result_of(reply)
