"""A worker's event loop stays free while slow work runs in its threads.

The loop answers the scheduler, its peers and clients; anything slow on it delays all of
them. Here a slow request is held half-way by a gate (a file the test creates), and while
it is held, a quick request -- a ``ping`` on the worker's own port -- must be answered.
The order is made by the gate, never by sleeping: the slow request cannot finish before
the test opens the gate, so an answered ping proves the loop was free meanwhile. With the
slow part on the loop, the ping gets no answer and the test fails at its deadline.
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
import uuid

import msgpack
import numpy as np
import pytest
import zmq

from xsched import Client

from tests.support.helpers import Gate, wait_until

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(120)]

PING_DEADLINE = 20  # seconds a ping may wait for its answer before the test fails


def ping_answered(address: str, security, deadline: float = PING_DEADLINE) -> bool:
    """Whether the worker at ``address`` answers a ping (on a connection of our own) in time."""
    sock = zmq.Context.instance().socket(zmq.DEALER)
    sock.linger = 0
    sock.routing_id = b"loop-health-" + uuid.uuid4().hex.encode()
    security.configure_client(sock)
    sock.connect(address)
    try:
        sock.send_multipart([msgpack.packb({"op": "ping", "rid": 1})])
        end = time.monotonic() + deadline
        while time.monotonic() < end:
            if sock.poll(100):
                msg = msgpack.unpackb(sock.recv_multipart()[0], strict_map_key=False)
                replies = ([msgpack.unpackb(b, strict_map_key=False) for b in msg["packed"]]
                           if msg.get("op") == "batch" else [msg])
                if any(r.get("rid") == 1 and r.get("status") == "OK" for r in replies):
                    return True
        return False
    finally:
        sock.close(linger=0)


class Background:
    """Run ``fn()`` in a thread; ``done`` says whether it returned, ``result()`` what it gave."""

    def __init__(self, fn):
        self._out: list = []
        self._thread = threading.Thread(target=lambda: self._out.append(self._call(fn)), daemon=True)
        self._thread.start()

    @staticmethod
    def _call(fn):
        try:
            return True, fn()
        except BaseException as e:  # noqa: BLE001 - handed to the test by result()
            return False, e

    @property
    def done(self) -> bool:
        return bool(self._out)

    def result(self, timeout: float = 60):
        self._thread.join(timeout)
        assert self._out, f"the background call did not return within {timeout}s"
        ok, value = self._out[0]
        if not ok:
            raise value
        return value


# ---------------------------------------------------------------------- get-data of a spilled value
def _load_held(array, gate: Gate, started: str):
    """Rebuild a HeldOnLoad: say so (a file), then wait for the gate. Runs wherever it is unpickled."""
    with open(started, "a") as f:
        f.write(f"{os.getpid()}\n")
    gate.wait()
    return HeldOnLoad(array, gate, started)


class HeldOnLoad:
    """A large value whose unpickling waits for a gate: reading it back from a spill file
    (which unpickles it) is the slow part of serving it."""

    def __init__(self, array, gate: Gate, started: str):
        self.array, self.gate, self.started = array, gate, started

    def __reduce__(self):
        return (_load_held, (self.array, self.gate, self.started))


def make_held(n: int, gate: Gate, started: str) -> HeldOnLoad:
    return HeldOnLoad(np.arange(n, dtype=np.int64), gate, started)


def spill(worker, key: str) -> bool:
    """Move ``key`` to the worker's disk (the store spills the least recently used first)."""
    while key not in worker.data.slow_keys:
        if worker.data.evict() < 0:
            return False
    return True


def test_get_data_of_spilled_value_leaves_the_loop_free(own_cluster, tmp_path):
    cluster = own_cluster(n_workers=1, threads_per_worker=1, memory_limit="2GB")
    with Client(cluster, set_as_default=False) as c:
        [addr] = c.scheduler_info()["workers"]
        assert c.run(lambda worker: type(worker.data).__name__)[addr] == "SpillBuffer"
        gate, started = Gate(tmp_path), str(tmp_path / "started")
        n = 1_000_000  # 8 MB: pickled with out-of-band buffers, sent on the bulk channel
        fut = c.submit(make_held, n, gate, started, pure=False)
        fut_key = fut.key
        wait_until(lambda: fut.status == "finished", msg="the value is computed")
        assert c.run(spill, key=fut_key)[addr], "the value could not be spilled"
        try:
            fetch = Background(lambda: fut.result(timeout=90))
            wait_until(lambda: os.path.exists(started), msg="the worker starts reading the spilled value")
            answered = ping_answered(addr, cluster.security)
            held = not fetch.done  # the gate is still closed: the get-data cannot have finished
        finally:
            gate.open()
        assert answered, "the worker's event loop did not answer a ping while it read a spilled value back"
        assert held
        value = fetch.result()
        assert isinstance(value, HeldOnLoad) and value.array.shape == (n,) and int(value.array[-1]) == n - 1


# ---------------------------------------------------------------------- client.run
def held_plain(gate: Gate, started: str) -> str:
    with open(started, "w"):
        pass
    gate.wait()
    return "plain done"


def where_plain() -> str:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return "thread"
    return "loop"


async def where_coroutine(worker) -> bool:
    return asyncio.get_running_loop() is worker.loop


def test_run_of_plain_function_leaves_the_loop_free(client, cluster, tmp_path):
    [addr, *_] = sorted(client.scheduler_info()["workers"])
    gate, started = Gate(tmp_path), str(tmp_path / "started")
    try:
        slow = Background(lambda: client.run(held_plain, gate, started, workers=[addr]))
        wait_until(lambda: os.path.exists(started), msg="the function starts on the worker")
        answered = ping_answered(addr, cluster.security)
        # a coroutine function still runs on the loop, at the same time
        on_loop = client.run(where_coroutine, workers=[addr]) if answered else None
        held = not slow.done
    finally:
        gate.open()
    assert answered, "the worker's event loop did not answer a ping while client.run ran a plain function"
    assert held
    assert on_loop == {addr: True}
    assert slow.result() == {addr: "plain done"}
    assert client.run(where_plain, workers=[addr]) == {addr: "thread"}


async def raise_in_coroutine(exc):
    raise exc


def raise_plain(exc):
    raise exc


@pytest.mark.parametrize("fn", [raise_plain, raise_in_coroutine], ids=["plain", "coroutine"])
@pytest.mark.parametrize("exc", [asyncio.CancelledError(), SystemExit(2), StopIteration()],
                         ids=lambda e: type(e).__name__)
def test_run_reports_every_exception(client, fn, exc):
    """``client.run`` waits with no timeout: a function that raises a BaseException (or a
    StopIteration) must still get an error reply, and the worker must go on serving."""
    [addr, *_] = sorted(client.scheduler_info()["workers"])
    call = Background(lambda: client.run(fn, exc, workers=[addr]))
    with pytest.raises(RuntimeError, match=type(exc).__name__):
        call.result(timeout=30)
    assert client.run(where_plain, workers=[addr]) == {addr: "thread"}
