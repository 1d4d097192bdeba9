"""The socket pump: every message delivered, in order, across bursts larger than its budget,
and no stall when sends on the same socket take the descriptor's edge (ping-pong)."""

import asyncio

import pytest
import zmq
import zmq.asyncio

from xsched.protocol import pump as pump_mod
from xsched.protocol.pump import SocketPump


def _pair(ctx):
    a, b = zmq.Socket(ctx, zmq.DEALER), zmq.Socket(ctx, zmq.ROUTER)
    for s in (a, b):
        s.linger = 0
    port = b.bind_to_random_port("tcp://127.0.0.1")
    a.connect(f"tcp://127.0.0.1:{port}")
    return a, b


def test_a_burst_larger_than_the_budget_arrives_whole_and_in_order():
    n = pump_mod.BUDGET * 5 + 7

    async def main():
        ctx = zmq.asyncio.Context()
        a, b = _pair(ctx)
        got, done = [], asyncio.get_running_loop().create_future()
        ticks = 0

        def on_frames(frames):
            got.append(int(frames[1].bytes))
            if len(got) == n:
                done.set_result(None)

        def tick():  # counts loop iterations: the pump must let other callbacks run
            nonlocal ticks
            ticks += 1
            if not done.done():
                asyncio.get_running_loop().call_soon(tick)

        for i in range(n):  # queued before the pump exists: found by its first look
            a.send(str(i).encode())
        p = SocketPump(b, on_frames).start()
        tick()
        await asyncio.wait_for(done, 30)
        p.close()
        a.close()
        b.close()
        ctx.term()
        return got, ticks

    got, ticks = asyncio.run(main())
    assert got == list(range(n))
    assert ticks >= n // pump_mod.BUDGET  # it yielded between budgets


@pytest.mark.parametrize("in_flight", [1, 8])
def test_ping_pong_never_stalls_when_replies_share_the_socket(in_flight):
    """Both ends reply from inside their handlers on the socket they read from; each send
    may consume the edge that announced the next message, so only kick() keeps this going."""
    rounds = 3000

    async def main():
        ctx = zmq.asyncio.Context()
        a, b = _pair(ctx)
        done = asyncio.get_running_loop().create_future()
        count = 0

        def server(frames):
            b.send_multipart([frames[0], frames[1]], zmq.DONTWAIT)
            pb.kick()

        def client(frames):
            nonlocal count
            count += 1
            if count == rounds:
                done.set_result(None)
            elif count <= rounds - in_flight:
                a.send(b"x", zmq.DONTWAIT)
                pa.kick()

        pb = SocketPump(b, server).start()
        pa = SocketPump(a, client).start()
        for _ in range(in_flight):
            a.send(b"x")
        pa.kick()
        await asyncio.wait_for(done, 60)
        for p in (pa, pb):
            p.close()
        a.close()
        b.close()
        ctx.term()
        return count

    assert asyncio.run(main()) == rounds


def test_a_closed_pump_delivers_nothing_more():
    async def main():
        ctx = zmq.asyncio.Context()
        a, b = _pair(ctx)
        got = []
        first = asyncio.get_running_loop().create_future()

        def on_frames(frames):
            got.append(frames[1].bytes)
            if not first.done():
                first.set_result(None)

        p = SocketPump(b, on_frames).start()
        a.send(b"one")
        await asyncio.wait_for(first, 10)
        p.close()
        a.send(b"two")
        # the message is there to read, but the closed pump does not read it
        assert b.poll(10_000) & zmq.POLLIN
        p.kick()
        await asyncio.sleep(0)
        a.close()
        b.close()
        ctx.term()
        return got

    assert asyncio.run(main()) == [b"one"]
