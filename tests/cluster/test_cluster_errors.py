"""Errors on a real cluster: task exceptions, unpicklable input, a dead scheduler,
garbage on the sockets and peers with the wrong secret.
"""

from __future__ import annotations

import os
import signal
import threading
import time
import traceback
import uuid

import msgpack
import psutil
import pytest
import zmq

from xsched import Client, SchedulerLostError, config
from xsched.errors import RemoteTraceback
from xsched.protocol.security import AuthenticationError, Security
from xsched.protocol.serialize import SerializationError

from tests.support.helpers import Gate, wait_until

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(60)]


def inc(x):
    return x + 1


def divide_by_zero_here(x):
    return x / 0


class CustomTaskError(Exception):
    def __init__(self, code, detail):
        super().__init__(code, detail)
        self.code, self.detail = code, detail


def raise_custom(code):
    raise CustomTaskError(code, "custom detail")


# ---------------------------------------------------------------------- task exceptions
def test_result_raises_task_exception_with_remote_traceback(client):
    fut = client.submit(divide_by_zero_here, 1)
    with pytest.raises(ZeroDivisionError) as info:
        fut.result(timeout=30)
    cause = info.value.__cause__
    assert isinstance(cause, RemoteTraceback)
    assert "divide_by_zero_here" in str(cause)
    assert "return x / 0" in str(cause)
    assert fut.status == "error"
    # the remote traceback starts in the task's function, not in the worker's frames that ran it
    frames = traceback.extract_tb(fut.traceback())
    assert frames[0].name == "divide_by_zero_here"
    assert not any("worker" + os.sep + "server.py" in f.filename for f in frames)


def test_gather_raises_task_exception(client):
    good = client.submit(inc, 1)
    bad = client.submit(divide_by_zero_here, 2)
    with pytest.raises(ZeroDivisionError) as info:
        client.gather([good, bad])
    assert "divide_by_zero_here" in str(info.value.__cause__)
    assert client.gather([good, bad], errors="skip") == [2]  # (left out, as dask does)


def test_custom_exception_type_and_attributes_survive(client):
    with pytest.raises(CustomTaskError) as info:
        client.submit(raise_custom, 42).result(timeout=30)
    assert info.value.code == 42 and info.value.detail == "custom detail"
    assert "raise_custom" in str(info.value.__cause__)


def test_unpicklable_exception_becomes_runtime_error(client):
    def raise_unpicklable():
        class Local(Exception):
            def __reduce__(self):
                raise TypeError("no pickling me")

        raise Local("local failure")

    with pytest.raises(RuntimeError, match="could not be pickled.*local failure") as info:
        client.submit(raise_unpicklable).result(timeout=30)
    assert "raise_unpicklable" in str(info.value.__cause__)


def test_error_propagates_to_dependents(client):
    bad = client.submit(divide_by_zero_here, 3)
    downstream = client.submit(inc, client.submit(inc, bad))
    with pytest.raises(ZeroDivisionError) as info:
        downstream.result(timeout=30)
    assert "divide_by_zero_here" in str(info.value.__cause__)
    assert downstream.status == "error"


def test_delayed_error(client):
    from xsched import delayed

    total = delayed(sum)([delayed(inc)(1), delayed(divide_by_zero_here)(1)])
    with pytest.raises(ZeroDivisionError):
        total.compute()
    with pytest.raises(ZeroDivisionError):
        client.compute(total).result(timeout=30)


def test_retry_after_error(client, tmp_path):
    marker = tmp_path / "ok"

    def fails_until_marker(path):
        if not os.path.exists(path):
            raise FileNotFoundError(path)
        return "fixed"

    fut = client.submit(fails_until_marker, str(marker))
    assert isinstance(fut.exception(timeout=30), FileNotFoundError)
    marker.write_text("")
    fut.retry()
    assert fut.result(timeout=30) == "fixed"


# ---------------------------------------------------------------------- unpicklable input
def test_unpicklable_argument_fails_at_submit(client):
    lock = threading.Lock()
    with pytest.raises(SerializationError) as info:
        client.submit(inc, lock)
    msg = str(info.value)
    assert "lock" in msg.lower() and "argument 0" in msg
    with pytest.raises(SerializationError, match="(?i)lock"):
        client.submit(inc, x=lock)
    with pytest.raises(SerializationError, match="(?i)lock"):
        client.map(inc, [1, lock])
    # the client is fine afterwards
    assert client.submit(inc, 1, pure=False).result(timeout=30) == 2


def test_unpicklable_function_fails_at_submit(client):
    lock = threading.Lock()

    def holds_a_lock(x):
        with lock:
            return x

    with pytest.raises(SerializationError) as info:
        client.submit(holds_a_lock, 1)
    assert "holds_a_lock" in str(info.value)
    assert client.submit(inc, 2, pure=False).result(timeout=30) == 3


def test_unpicklable_result_is_reported(client):
    def make_lock():
        return threading.Lock()

    fut = client.submit(make_lock, pure=False)
    # the task runs; its result cannot be pickled to travel: a clear error, no hang
    with pytest.raises(Exception) as info:
        fut.result(timeout=30)
    assert "lock" in str(info.value).lower() and "serialise" in str(info.value)
    with pytest.raises(Exception, match="(?i)lock"):
        client.run(lambda: threading.Lock())
    with pytest.raises(Exception, match="(?i)lock"):
        client.run_on_scheduler(lambda: threading.Lock())
    assert client.submit(inc, 3, pure=False).result(timeout=30) == 4


def test_unpicklable_scatter_fails_at_once(client):
    with pytest.raises(SerializationError, match="(?i)lock"):
        client.scatter([threading.Lock()])
    assert client.gather(client.scatter([1, 2])) == [1, 2]


def test_submit_non_callable(client):
    with pytest.raises(TypeError, match="callable"):
        client.submit(5, 1)
    with pytest.raises(TypeError, match="callable"):
        client.map("inc", [1])


# ---------------------------------------------------------------------- dead scheduler
def test_dead_scheduler_fails_pending_results(own_cluster, tmp_path):
    # how long the worker its nanny restarts waits for the scheduler to come back before it gives
    # up: max(comm.timeouts.connect, worker.reconnect-timeout), 20 s by default; a second takes
    # it down the same path (and is enough for the first registration: test_scheduler_restart.py
    # starts its workers with a 1 s connect timeout too)
    with config.set({"comm.timeouts.connect": "1s", "worker.reconnect-timeout": "1s"}):
        cluster = own_cluster(n_workers=1)
    c = Client(cluster, set_as_default=False)
    try:
        done = c.submit(inc, 1)
        assert done.result(timeout=30) == 2
        gate = Gate(tmp_path)
        pending = c.submit(gate.wait, 1, pure=False)
        spid = c.run_on_scheduler(os.getpid)
        errors = []

        def waiter():
            try:
                pending.result()  # no timeout: must still not hang
            except BaseException as e:  # noqa: BLE001
                errors.append(e)

        t = threading.Thread(target=waiter, daemon=True)
        t.start()
        os.kill(spid, signal.SIGKILL)
        t.join(30)
        assert not t.is_alive(), "result() hung after the scheduler died"
        assert len(errors) == 1 and isinstance(errors[0], SchedulerLostError)
        assert "scheduler" in str(errors[0])
        assert pending.status == "lost"
        with pytest.raises(SchedulerLostError):
            c.submit(inc, 5, pure=False)
        with pytest.raises(SchedulerLostError):
            pending.result(timeout=5)
        # the workers notice and exit; each nanny restarts its worker once (in case the
        # scheduler comes back), which gives up after the reconnect timeout, and the nanny exits
        wait_until(lambda: all(p.poll() is not None for p in cluster.workers.values()),
                   msg="worker processes exit after their scheduler died", timeout=40)
    finally:
        c.close()


# ---------------------------------------------------------------------- garbage on the sockets
GARBAGE = [
    [b"\x00\xff\xfe garbage"],
    [b"not msgpack at all", b"second frame"],
    [msgpack.packb([1, 2, 3])],
    [msgpack.packb({"no": "op"})],
    [msgpack.packb({"op": "no-such-op"})],
    [msgpack.packb({"op": ["unhashable"]})],
    [msgpack.packb({"op": {"a": 1}})],
    [msgpack.packb({"op": "batch", "packed": 5})],
    [msgpack.packb({"op": "batch", "packed": [1, "x", b"\xff", msgpack.packb({"op": "nope"}),
                                               msgpack.packb({"op": ["x"]}), None]})],
    [msgpack.packb({"op": "batch", "packed": [msgpack.packb({"op": "batch", "packed": []})]})],
    [msgpack.packb({"op": "batch"})],
    [msgpack.packb({"op": "who-has", "keys": 5, "rid": 1})],
    [msgpack.packb({"op": "who-has", "keys": [["unhashable"]], "rid": 2})],
    [msgpack.packb({"op": "get-data", "keys": [["unhashable"]], "rid": 3})],
    [msgpack.packb({"op": "update-graph", "tasks": [{"key": "x"}], "keys": ["x"]})],
    [msgpack.packb({"op": "register-worker", "rid": 4})],
    [msgpack.packb({"op": "ping", "_objs": [["a", 5]]})],
    [msgpack.packb({"op": "ping", "_objs": "bad"})],
    [msgpack.packb({"op": "ping", "_objs": [[1, 2, 3]]})],
    [msgpack.packb({"op": "run-on-scheduler", "_objs": [["func", 1]], "rid": 5}), b"not a pickle"],
    [msgpack.packb({"op": "put-data", "_objs": [["data", 1]], "rid": 6}), b"not a pickle"],
    [msgpack.packb({"op": "reply", "rid": "x"})],
    [b""],
    [b"", b"", b""],
]


def _send_garbage(address: str, security: Security, identity: bytes, expect=()) -> list:
    """Authenticate (ZAP) as a legitimate peer would, then send garbage; return the replies
    (waiting for the ping's and those with the request ids in ``expect``)."""
    ctx = zmq.Context.instance()
    sock = ctx.socket(zmq.DEALER)
    sock.linger = 0
    sock.routing_id = identity
    security.configure_client(sock)
    sock.connect(address)
    try:
        for frames in GARBAGE:
            sock.send_multipart(frames)
        # a valid ping afterwards is answered: this peer's connection survived too
        sock.send_multipart([msgpack.packb({"op": "ping", "rid": 99})])
        replies = []
        want = {99, *expect}
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if sock.poll(200):
                replies.append(msgpack.unpackb(sock.recv_multipart()[0], strict_map_key=False))
                if want <= {r.get("rid") for r in _flatten_replies(replies)}:
                    return replies
        raise AssertionError(f"no answer to a ping or to requests {sorted(want)} after the garbage; "
                             f"replies: {replies}")
    finally:
        sock.close(linger=0)


def _flatten_replies(replies):
    out = []
    for r in replies:
        out.extend([msgpack.unpackb(b, strict_map_key=False) for b in r["packed"]]
                   if r.get("op") == "batch" else [r])
    return out


def test_garbage_to_scheduler_is_dropped(own_cluster):
    cluster = own_cluster(n_workers=1)
    with Client(cluster, set_as_default=False) as c:
        spid = c.run_on_scheduler(os.getpid)
        replies = _flatten_replies(_send_garbage(cluster.scheduler_address, cluster.security, b"garbage-peer",
                                                  expect=(1, 2, 4, 5)))
        by_rid = {r.get("rid"): r for r in replies}
        assert by_rid[99]["status"] == "OK"
        for rid in (1, 2, 4, 5):  # malformed requests got error replies, not silence or a crash
            assert by_rid[rid]["status"] == "error", by_rid.get(rid)
        assert psutil.pid_exists(spid)
        # the scheduler still works, for this client and for a new one
        assert c.submit(inc, 1, pure=False).result(timeout=30) == 2
        assert c.run_on_scheduler(lambda scheduler: "garbage-peer" not in scheduler.state.clients)
        assert "x" not in c.run_on_scheduler(lambda scheduler: list(scheduler.tasks))
    with Client(cluster, set_as_default=False) as c2:
        assert c2.gather(c2.map(inc, range(10), pure=False)) == list(range(1, 11))


def test_garbage_to_worker_is_dropped(own_cluster):
    cluster = own_cluster(n_workers=1)
    with Client(cluster, set_as_default=False) as c:
        [waddr] = c.scheduler_info()["workers"]
        wpid = c.run(os.getpid)[waddr]
        before = c.submit(inc, 10)
        assert before.result(timeout=30) == 11
        replies = _flatten_replies(_send_garbage(waddr, cluster.security, b"garbage-peer", expect=(3, 6)))
        by_rid = {r.get("rid"): r for r in replies}
        assert by_rid[99]["status"] == "OK"
        assert by_rid[3]["status"] == "error" and by_rid[6]["status"] == "error"
        assert psutil.pid_exists(wpid)
        # still computes, still serves its data
        assert before.result(timeout=30) == 11
        assert c.submit(inc, before).result(timeout=30) == 12
        assert len(c.scheduler_info()["workers"]) == 1


# ---------------------------------------------------------------------- wrong secret
def _record_peers(scheduler):
    """Wrap the scheduler's handler to remember every peer identity that reaches it."""
    seen = scheduler.extensions.setdefault("seen_peers", set())
    listener = scheduler.listener
    if not getattr(listener, "_recording", False):
        inner = listener.handler

        def recording(peer, header, payload):
            seen.add(bytes(peer))
            return inner(peer, header, payload)

        listener.handler = recording
        listener._recording = True
    return True


def test_wrong_secret_is_refused(own_cluster):
    cluster = own_cluster(n_workers=1)
    with Client(cluster, set_as_default=False) as c:
        assert c.run_on_scheduler(_record_peers)
        bad = Security("0123456789abcdef" * 4, cluster.security.mode)
        assert bad.secret != cluster.security.secret
        with pytest.raises((AuthenticationError, TimeoutError)) as info:
            Client(cluster.scheduler_address, security=bad, timeout=3, set_as_default=False, name="intruder")
        msg = str(info.value)
        assert "secret" in msg or "could not reach" in msg
        assert bad.secret not in msg and cluster.security.secret not in msg
        # a raw peer with the wrong secret sending a well-formed request
        ident = b"intruder-" + uuid.uuid4().hex.encode()
        ctx = zmq.Context.instance()
        sock = ctx.socket(zmq.DEALER)
        sock.linger = 0
        sock.routing_id = ident
        bad.configure_client(sock)
        sock.connect(cluster.scheduler_address)
        try:
            sock.send_multipart([msgpack.packb({"op": "register-client", "client": "intruder", "rid": 1})])
            assert sock.poll(1000) == 0, "a peer with the wrong secret got an answer"
        finally:
            sock.close(linger=0)
        # a raw peer with no credentials at all
        sock = ctx.socket(zmq.DEALER)
        sock.linger = 0
        sock.routing_id = ident + b"-anon"
        sock.connect(cluster.scheduler_address)
        try:
            sock.send_multipart([msgpack.packb({"op": "ping", "rid": 1})])
            assert sock.poll(1000) == 0, "an unauthenticated peer got an answer"
        finally:
            sock.close(linger=0)
        seen = c.run_on_scheduler(lambda scheduler: sorted(scheduler.extensions["seen_peers"]))
        assert all(not p.startswith(b"intruder") and b"client-intruder" not in p for p in seen), seen
        assert c.run_on_scheduler(lambda scheduler: [k for k in scheduler.state.clients if "intruder" in k]) == []
        # the scheduler serves the right secret as before
        assert c.submit(inc, 1, pure=False).result(timeout=30) == 2


def test_client_without_secret_finds_it_by_address_or_says_where_it_looked(cluster, monkeypatch):
    from xsched.protocol.registry import SecretNotFoundError, registry_dir

    monkeypatch.delenv("XSCHED_SECRET", raising=False)
    with Client(cluster.scheduler_address, set_as_default=False) as c:  # the registry knows it
        assert c.submit(inc, 1, pure=False).result(timeout=30) == 2
    with pytest.raises(SecretNotFoundError) as info:
        Client("tcp://127.0.0.1:9", set_as_default=False)
    text = str(info.value)
    assert registry_dir() in text and "scheduler_file" in text and "XSCHED_SECRET" in text and "security=" in text


def test_client_to_nothing_times_out_clearly():
    import socket

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    with pytest.raises(TimeoutError, match="could not reach the scheduler"):
        Client(f"tcp://127.0.0.1:{port}", security=Security.generate(), timeout=0.5, set_as_default=False)


def test_a_graph_the_scheduler_rejects_fails_its_futures(client, monkeypatch):
    """The scheduler refuses a key too long for its schema: the futures of that graph fail
    naming the field, and the client carries on (the schemas alone: tests/unit/test_schemas.py)."""
    from xsched.comm import RemoteError
    from xsched.protocol import schemas

    monkeypatch.setattr("xsched.client.submit.check_key", lambda key: key)  # (the client's own check, off)
    too_long = "x" * (schemas.MAX_KEY + 1)  # the client sends it; the scheduler's schema refuses it
    fut = client.submit(abs, -1, key=too_long)
    with pytest.raises(RemoteError) as info:
        fut.result(timeout=20)
    assert "the scheduler rejected the graph" in str(info.value) and "tasks[0].key must be a key string" in str(
        info.value)
    assert client.submit(abs, -2).result(timeout=20) == 2  # the client and the scheduler carry on
