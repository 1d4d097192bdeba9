"""Fuzzing the scheduler's and a worker's listener as an authenticated peer (it knows the
cluster secret): 10,000 seeded random and mutated messages each -- wrong types, missing
fields, unknown ops, wrong frame counts, huge lists, random bytes, broken batches and
chunk descriptions. Afterwards both processes are alive, still compute and serve data,
grew by a bounded amount of memory, and logged each fault once per peer, op and kind.

Ops whose valid form would legitimately change the cluster (restart it, register a fake
worker, start kernels, ship files or environments) are sent only in forms their schema
refuses; every other op is sent valid or mutated alike."""

from __future__ import annotations

import os
import random
import re
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import msgpack
import psutil
import pytest
import zmq

from xsched import Client
from xsched.protocol import schemas
from xsched.protocol.messages import unchunk
from xsched.protocol.versions import announce

from tests.support.fuzz import fuzz_value

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(120)]

N = 10_000
SEED = 20240611

EXAMPLES = {
    # the scheduler's listener
    "ping": {}, "register-client": {"client": "fuzz", **announce()}, "update-graph": {"tasks": [
        {"key": "fz-a", "run_spec": b"not a task", "deps": [], "priority": [0, 1]}], "keys": ["fz-a"]},
    "client-desires-keys": {"keys": ["fz-a"]}, "client-releases-keys": {"keys": ["fz-a"]},
    "cancel-keys": {"keys": ["fz-a"]}, "retry-keys": {"keys": ["fz-a"]}, "who-has": {"keys": ["fz-a"]},
    "who-can-run": {"keys": ["fz-a"]}, "scatter-done": {"who_has": {"fz-b": ["tcp://127.0.0.1:1"]},
                                                        "nbytes": {"fz-b": 1}},
    "heartbeat-client": {}, "scheduler-info": {}, "memory-history": {},
    "subscribe-progress": {"keys": ["fz-a"], "sub": "fz-sub"}, "unsubscribe-progress": {"sub": "fz-sub"},
    "publish-dataset": {"name": "fz", "keys": []}, "get-dataset": {"name": "fz"}, "list-datasets": {},
    "unpublish-dataset": {"name": "fz"},
    "task-finished": {"key": "fz-a", "nbytes": 1, "type": "int", "start": 1.0, "stop": 2.0},
    "task-erred": {"key": "fz-a", "exception": b"", "traceback": b"", "text": "x"},
    "add-keys": {"nbytes": {"fz-a": 1}}, "missing-data": {"key": "fz-a", "errant_worker": "x"},
    "reschedule": {"key": "fz-a"}, "worker-status": {"status": "running"}, "steal-response": {"key": "fz-a"},
    "task-seceded": {"key": "fz-a"}, "task-rejoined": {"key": "fz-a"}, "heartbeat-worker": {"metrics": {}},
    "upload-file-done": {"uid": "u"}, "environment-ack": {"uid": "u", "seq": 0}, "environment-ready": {"uid": "u"},
    "log-event": {"topic": "fz", "msg": {"key": "fz-a", "text": "x"}}, "get-events": {"topic": "fz"},
    "subscribe-topic": {"topic": "fz"}, "unsubscribe-topic": {"topic": "fz"}, "get-task-stream": {"count": 5},
    "has-what": {"workers": ["fz"]}, "processing": {}, "story": {"keys": ["fz-a"]},
    # both listeners
    "get-logs": {"n": 5}, "dump-state": {},
    # the worker's listener
    "get-data": {"keys": ["fz-a"]}, "call-stack": {"keys": ["fz-a"]}, "profile": {"duration": 0.01, "interval": 0.005},
    # refused forms only
    "register-worker": {"address": "tcp://127.0.0.1:1"}, "restart": {}, "retire-workers": {"workers": []},
    "retire-worker": {}, "unregister-worker": {}, "close-client": {}, "start-ipython": {},
    "run-on-scheduler": {}, "run": {}, "put-data": {}, "upload-file": {"filename": "fz.py"},
    "environment-start": {"uid": "u"}, "environment-chunk": {"uid": "u", "seq": 0}, "environment-done": {"uid": "u"},
}
# the coordination primitives (waits are short, or end when the fuzzing peer leaves)
EXAMPLES.update({
    "lock-acquire": {"name": "fz", "lease": "l1", "timeout": 0.2}, "lock-release": {"name": "fz", "lease": "l1"},
    "semaphore-acquire": {"name": "fz", "lease": "s1", "max_leases": 2, "timeout": 0.2},
    "semaphore-release": {"name": "fz", "lease": "s1"}, "semaphore-value": {"name": "fz"},
    "queue-put": {"name": "fz", "keys": []}, "queue-get": {"name": "fz", "timeout": 0.2}, "queue-size": {"name": "fz"},
    "variable-set": {"name": "fz", "keys": []}, "variable-get": {"name": "fz", "timeout": 0.2},
    "variable-delete": {"name": "fz"}, "event-set": {"name": "fz"}, "event-clear": {"name": "fz"},
    "event-is-set": {"name": "fz"}, "event-wait": {"name": "fz", "timeout": 0.2},
    "pubsub-subscribe": {"topic": "fz", "queue": "fz-sub"}, "pubsub-unsubscribe": {"topic": "fz", "queue": "fz-sub"},
    "pubsub-publish": {"topic": "fz", "keys": []},
})
# versions (the scheduler's and the worker's listeners), fire-and-forget (never shutdown: it would
# close the scheduler, and it has no field to break)
EXAMPLES.update({"versions": {}, "fire-and-forget": {"keys": ["fz-a"]}})
REFUSED_ONLY = {"register-worker", "restart", "retire-workers", "retire-worker", "unregister-worker",
                "close-client", "start-ipython", "run-on-scheduler", "run", "put-data", "upload-file",
                "environment-start", "environment-chunk", "environment-done"}


def _mutate(rng: random.Random, msg: dict) -> dict:
    msg = dict(msg)
    for _ in range(rng.randrange(1, 4)):
        fields = [k for k in msg if k != "op"]
        choice = rng.randrange(5)
        if choice == 0 and fields:
            del msg[rng.choice(fields)]
        elif choice in (1, 2) and fields:
            msg[rng.choice(fields)] = fuzz_value(rng)
        elif choice == 3:
            msg[rng.choice(["keys", "key", "tasks", "priority", "resources", "metrics", "nbytes"])] = fuzz_value(rng)
        else:
            msg["op"] = rng.choice(list(EXAMPLES) + ["no-such-op", "", "reply", "batch", "chunked"])
    return msg


def _message(rng: random.Random, table, ops: list[str]) -> bytes:
    """A mutated (or now and then valid) example, packed; never a valid form of REFUSED_ONLY."""
    while True:
        op = rng.choice(ops)
        msg = dict(EXAMPLES[op], op=op)
        if rng.random() < 0.85:
            msg = _mutate(rng, msg)
        if rng.random() < 0.5:
            msg["rid"] = rng.choice([rng.randrange(2**31), "x", None, [1]])
        if msg.get("op") in REFUSED_ONLY:
            try:
                table.check(msg)
                continue  # a valid form of an op that would change the cluster: not this one
            except (schemas.BadMessage, KeyError, TypeError, AttributeError):
                pass
        try:
            return msgpack.packb(msg)
        except (TypeError, ValueError, OverflowError):
            continue


def _frames(rng: random.Random, table, ops: list[str]) -> list:
    """One random message: mostly mutated examples, some raw garbage and broken framing."""
    kind = rng.randrange(20)
    if kind == 0:
        return [rng.randbytes(rng.randrange(1, 64)) for _ in range(rng.randrange(1, 4))]
    if kind == 1:
        return [msgpack.packb(fuzz_value(rng))]
    if kind == 2:  # a payload description that does not fit the frames
        return [msgpack.packb({"op": rng.choice(ops), "_objs": [["data", rng.randrange(3)]], "rid": 1})]
    if kind == 3:  # a batch of mutations and garbage
        items = [_message(rng, table, ops) for _ in range(rng.randrange(1, 5))] + [rng.randbytes(5), 7]
        return [msgpack.packb({"op": "batch", "packed": items})]
    if kind == 4:  # a chunked lead whose parts do not match
        return [msgpack.packb({"op": "chunked", "parts": [2, rng.randrange(-1, 3)]}), b"x"]
    if kind == 5:  # payload objects it does not take, or not a pickle
        op = rng.choice(sorted(set(ops) - {"put-data"}))  # (put-data: a pickle of nothing-for-us is valid)
        return [msgpack.packb({"op": op, "_objs": [[rng.choice(["data", "func", "x"]), 1]],
                               "rid": rng.randrange(2**31)}), rng.randbytes(8)]
    return [_message(rng, table, ops)]


def _replies(frames: list) -> list[dict]:
    """The headers of one received message, read as any peer must: joined when its frames
    were cut into parts (the replies of a busy tick travel as one batch, at times larger than
    a frame), and every message of a batch."""
    header = msgpack.unpackb(unchunk(frames)[0], strict_map_key=False)
    if header.get("op") != "batch":
        return [header]
    return [msgpack.unpackb(b, strict_map_key=False) for b in header["packed"]]


def _fuzz(address: str, security, identity: bytes, table, ops: list[str], seed: int) -> None:
    rng = random.Random(seed)
    sock = zmq.Context.instance().socket(zmq.DEALER)
    sock.linger = 0
    sock.routing_id = identity
    security.configure_client(sock)
    sock.connect(address)
    try:
        sock.send_multipart([msgpack.packb({"op": "register-client", "client": identity.decode(), "rid": 1,
                                            **announce()})])
        for i in range(N):
            sock.send_multipart(_frames(rng, table, ops))
            while sock.poll(0):  # read the answers as they come (this peer is no stuck reader)
                sock.recv_multipart()
        sock.send_multipart([msgpack.packb({"op": "ping", "rid": 424242})])
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if sock.poll(200) and any(h.get("rid") == 424242 and h.get("status") == "OK"
                                      for h in _replies(sock.recv_multipart())):
                return
        raise AssertionError(f"{address} did not answer a ping after the fuzzing")
    finally:
        sock.close(linger=0)


_REFUSED = re.compile(r"refused (.+?) from peer (b'[^']*'|b\"[^\"]*\") \[([^\]]*)\]")


def _log_faults(path: str) -> tuple[Counter, list[str]]:
    with open(path, errors="replace") as f:
        text = f.read()
    faults = Counter((m.group(2), m.group(1), m.group(3)) for m in _REFUSED.finditer(text))
    bugs = [line for line in text.splitlines() if "failed on a message from peer" in line]
    return faults, bugs


def test_listeners_survive_a_fuzzing_peer(own_cluster):
    cluster = own_cluster(n_workers=1)
    with Client(cluster, set_as_default=False) as c:
        [waddr] = c.scheduler_info()["workers"]
        spid = c.run_on_scheduler(os.getpid)
        wpid = c.run(os.getpid)[waddr]
        kept = c.submit(sum, [1, 2, 3])
        assert kept.result(timeout=30) == 6
        procs = {"scheduler": psutil.Process(spid), "worker": psutil.Process(wpid)}
        before = {k: p.memory_info().rss for k, p in procs.items()}

        sched_ops = sorted(set(schemas.TO_SCHEDULER) & set(EXAMPLES))
        worker_ops = sorted(set(schemas.TO_WORKER) & set(EXAMPLES)) + ["compute-task", "free-keys", "task-finished"]
        EXAMPLES.setdefault("compute-task", {"key": "fz-a"})
        EXAMPLES.setdefault("free-keys", {"keys": ["fz-a"]})
        # both listeners at once, each by its own peer (socket, seed and messages as if one
        # after the other): each process works through its messages while this one makes the
        # other's, rather than the two fuzzings taking turns
        with ThreadPoolExecutor(2, thread_name_prefix="fuzz") as pool:
            runs = [pool.submit(_fuzz, cluster.scheduler_address, cluster.security, b"fuzz-s", schemas.TO_SCHEDULER,
                                sched_ops, SEED),
                    pool.submit(_fuzz, waddr, cluster.security, b"fuzz-w", schemas.TO_WORKER, worker_ops, SEED + 1)]
            for run in runs:
                run.result()

        for name, p in procs.items():
            assert p.is_running() and p.status() != psutil.STATUS_ZOMBIE, f"the {name} died"
            grown = (p.memory_info().rss - before[name]) / 2**20
            assert grown < 300, f"the {name} grew by {grown:.0f} MiB while fuzzed"
        # each listener still serves: a computation through the scheduler, data from the worker
        assert c.submit(lambda x: x + 1, kept).result(timeout=30) == 7
        assert c.gather(c.map(abs, range(-20, 0), pure=False)) == list(range(20, 0, -1))
        assert kept.result(timeout=30) == 6  # (gathered from the worker's listener)
        assert len(c.scheduler_info()["workers"]) == 1

    logdir = cluster._dir
    faults, bugs = Counter(), []
    for name in sorted(os.listdir(logdir)):
        if name.endswith(".log"):
            f, b = _log_faults(os.path.join(logdir, name))
            faults += f
            bugs += b
    repeated = {k: n for k, n in faults.items() if n > 1}
    assert not repeated, f"faults logged more than once per peer, op and kind: {repeated}"
    peers = {p for p, _, _ in faults}
    assert {"b'fuzz-s'", "b'fuzz-w'"} <= peers, peers
    kinds = {k for _, _, k in faults}
    assert {"unknown op", "frame count", "bad keys", "bad batch item", "bad objects"} <= kinds, sorted(kinds)
    assert kinds & {"not msgpack", "no op", "empty"}, sorted(kinds)
    assert 20 < len(faults) < N / 5, f"{len(faults)} distinct faults logged for {2 * N} messages"
    # a handler that raises on a message is a bug: bad input is refused with a clear error
    assert not bugs, "handlers failed on fuzzed messages (bugs, with tracebacks in the logs):\n" + "\n".join(bugs)
