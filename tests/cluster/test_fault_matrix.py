"""The fault matrix: a task goes wrong at each moment of its life, on a real cluster.

Modelled on loky's test suite: each cell makes one thing fail at one moment and asserts
what the user sees. The moments are

* pickle time -- the client cannot pickle the function or an argument;
* unpickle time -- the worker cannot unpickle them (a module only the client has);
* run time -- the task raises (an ordinary exception, one that cannot be pickled, one
  whose ``str()`` raises, a BaseException such as ``asyncio.CancelledError``), crashes
  its process (``os.abort``, a segfault, ``os._exit(1)``) or hangs;
* result time -- the result cannot be pickled, when the client gathers it and when a
  task on another worker needs it.

Every cell ends in a clear error on the future, naming the key and what went wrong, or in
the right result -- never a hang: every wait has a deadline, after which the test fails.
After each cell the workers must still have all their threads: ``assert_threads_intact``
runs ``nthreads`` tasks per worker that finish only if all of them run at the same time.

The first tests need no cluster: they feed the worker's state machine the events of a
transfer whose holder cannot send a key, and check what it decides.
"""

from __future__ import annotations

import asyncio
import os
import sys
import threading
import time
import uuid

import pytest

import xsched
from xsched import Client, KilledWorker
from xsched.protocol.serialize import SerializationError
from xsched.worker.state import (
    ComputeTask, Execute, ExecuteSuccess, GatherDep, GatherDepSuccess, SendToScheduler, WorkerState,
)

from tests.support.helpers import Gate, wait_until

# (one test process runs this module: what its module-scoped fixtures start, it starts once)
pytestmark = pytest.mark.xdist_group("fault-matrix")

TIMEOUT = 60  # seconds any single future may take before the test fails (never a hang)


# ---------------------------------------------------------------------- helpers run on workers
def inc(x):
    return x + 1


def all_at_once(directory: str, n: int, i: int) -> int:
    """Arrive, then wait until ``n`` tasks have arrived: finishes only if ``n`` run at once."""
    with open(os.path.join(directory, f"arrived-{i}"), "w"):
        pass
    deadline = time.monotonic() + 30
    while len(os.listdir(directory)) < n:
        if time.monotonic() > deadline:
            raise TimeoutError(f"only {len(os.listdir(directory))} of {n} tasks ran at the same time: "
                               "a thread slot of this worker was lost")
        time.sleep(0.005)
    return threading.get_ident()


async def free_slots(worker) -> int:
    """Thread slots the worker's state machine considers free (read on its event loop)."""
    return worker.nthreads - len(worker.state.executing)


def assert_threads_intact(client: Client, tmp_path) -> None:
    """Every worker runs ``nthreads`` tasks at the same time, each in its own thread."""
    info = client.scheduler_info()["workers"]
    wait_until(lambda: all(client.run(free_slots)[a] == w["nthreads"] for a, w in info.items()),
               timeout=15, msg="every worker has all its thread slots free")
    for addr, w in info.items():
        n = w["nthreads"]
        directory = tmp_path / f"barrier-{uuid.uuid4().hex}"
        directory.mkdir()
        futs = [client.submit(all_at_once, str(directory), n, i, workers=[addr], pure=False) for i in range(n)]
        idents = client.gather(futs)
        assert len(set(idents)) == n, f"{addr}: {n} tasks did not run in {n} threads"


def fresh_client(cluster) -> Client:
    c = Client(cluster, set_as_default=False)
    c.wait_for_workers(len(cluster.workers), timeout=30)
    return c


@pytest.fixture(scope="module")
def matrix_cluster():
    """Two workers of two threads each: a lost slot shows as one task fewer at once."""
    cluster = xsched.LocalCluster(n_workers=2, threads_per_worker=2)
    try:
        yield cluster
    finally:
        cluster.close()


@pytest.fixture
def mc(matrix_cluster, tmp_path):
    """A client on the matrix cluster; after the test, the workers must have all their threads."""
    c = fresh_client(matrix_cluster)
    try:
        yield c
        assert_threads_intact(c, tmp_path)
    finally:
        c.close()


# ---------------------------------------------------------------------- the state machine alone
def _holder_cannot_send(errors_for_x: bool):
    """A worker whose task 'y' needs 'x' from peer 'w0', after the fetch of 'x' came back."""
    ws = WorkerState(nthreads=1, address="w1", validate=True)
    out = ws.handle(ComputeTask("y", b"spec", (0,), who_has={"x": ["w0"]}, nbytes={"x": 10}))
    assert [type(i) for i in out] == [GatherDep]
    errors = {"x": (b"exc", b"tb", "SerializationError: could not serialise lock")} if errors_for_x else {}
    return ws, ws.handle(GatherDepSuccess("w0", {}, errors=errors))


def test_unsendable_dependency_fails_its_dependent_instead_of_recomputing():
    ws, out = _holder_cannot_send(errors_for_x=True)
    msgs = [i.msg for i in out if isinstance(i, SendToScheduler)]
    # no missing-data: the holder has 'x', recomputing it would make the same unsendable value
    assert [m["op"] for m in msgs] == ["task-erred"], msgs
    [erred] = msgs
    assert erred["key"] == "y" and erred["exception"] == b"exc" and erred["traceback"] == b"tb"
    assert "'x'" in erred["text"] and "w0" in erred["text"] and "could not serialise lock" in erred["text"]
    assert not any(isinstance(i, Execute) for i in out)
    assert ws.tasks == {} and not ws.executing and not ws.in_flight_workers


def test_missing_dependency_is_still_reported_missing():
    """The other branch, unchanged: a holder that does not have the key -> missing-data."""
    ws, out = _holder_cannot_send(errors_for_x=False)
    ops = [i.msg["op"] for i in out if isinstance(i, SendToScheduler)]
    assert ops == ["missing-data", "reschedule"], ops


def test_unsendable_replica_is_dropped_quietly():
    """A replica copied for a retiring worker, with no dependent here: nothing to fail, nothing missing."""
    from xsched.worker.state import AcquireReplicas

    ws = WorkerState(nthreads=1, address="w1", validate=True)
    ws.handle(AcquireReplicas({"x": ["w0"]}, {"x": 10}))
    out = ws.handle(GatherDepSuccess("w0", {}, errors={"x": (b"e", b"t", "cannot pickle")}))
    assert [i for i in out if isinstance(i, SendToScheduler)] == []
    assert ws.tasks == {}


def test_unsendable_key_does_not_disturb_the_rest_of_the_batch():
    ws = WorkerState(nthreads=1, address="w1", validate=True)
    ws.handle(ComputeTask("y", b"s", (0,), who_has={"x": ["w0"], "z": ["w0"]}, nbytes={"x": 1, "z": 1}),
              ComputeTask("v", b"s", (1,), who_has={"z": ["w0"]}, nbytes={"z": 1}))
    out = ws.handle(GatherDepSuccess("w0", {"z": 1}, errors={"x": (b"e", b"t", "cannot pickle")}))
    msgs = [i.msg for i in out if isinstance(i, SendToScheduler)]
    assert [(m["op"], m.get("key")) for m in msgs] == [("task-erred", "y"), ("add-keys", None)], msgs
    assert [i.key for i in out if isinstance(i, Execute)] == ["v"]
    assert ws.tasks["z"].state == "memory" and "x" not in ws.tasks and "y" not in ws.tasks
    ws.handle(ExecuteSuccess("v", 1, "int"))


# ---------------------------------------------------------------------- pickle time (client)
@pytest.mark.cluster
@pytest.mark.timeout(120)
def test_pickle_time_function(mc):
    lock = threading.Lock()

    def holds_a_lock(x):
        with lock:
            return x

    with pytest.raises(SerializationError) as info:
        mc.submit(holds_a_lock, 1)
    assert "holds_a_lock" in str(info.value) and "lock" in str(info.value).lower()


@pytest.mark.cluster
@pytest.mark.timeout(120)
def test_pickle_time_argument(mc):
    with pytest.raises(SerializationError) as info:
        mc.submit(inc, threading.Lock())
    assert "argument 0" in str(info.value) and "lock" in str(info.value).lower()


# ---------------------------------------------------------------------- unpickle time (worker)
@pytest.fixture
def client_only_module(tmp_path, monkeypatch):
    """A module importable here but not on the workers (they do not have its directory)."""
    name = f"client_only_{uuid.uuid4().hex[:8]}"
    d = tmp_path / "client-only"
    d.mkdir()
    (d / f"{name}.py").write_text(
        "def double(x):\n    return 2 * x\n\n"
        "class Box:\n    def __init__(self, v):\n        self.v = v\n"
    )
    monkeypatch.syspath_prepend(str(d))
    mod = __import__(name)
    yield mod
    sys.modules.pop(name, None)


@pytest.mark.cluster
@pytest.mark.timeout(120)
def test_unpickle_time_function(mc, client_only_module):
    fut = mc.submit(client_only_module.double, 21)
    with pytest.raises(SerializationError) as info:
        fut.result(timeout=TIMEOUT)
    msg = str(info.value)
    assert fut.key in msg and "function" in msg and client_only_module.__name__ in msg, msg
    assert fut.status == "error"


@pytest.mark.cluster
@pytest.mark.timeout(120)
def test_unpickle_time_argument(mc, client_only_module):
    fut = mc.submit(inc, client_only_module.Box(1))
    with pytest.raises(SerializationError) as info:
        fut.result(timeout=TIMEOUT)
    msg = str(info.value)
    assert fut.key in msg and "argument" in msg and client_only_module.__name__ in msg, msg


# ---------------------------------------------------------------------- run time: exceptions
class Unpicklable(Exception):
    def __reduce__(self):
        raise TypeError("this exception refuses to be pickled")


class BadStr(Exception):
    def __str__(self):
        raise ValueError("str() of this exception raises")

    __repr__ = __str__


class CustomBase(BaseException):
    pass


def raise_value_error():
    raise ValueError("plain failure")


def raise_unpicklable():
    raise Unpicklable("local failure")


def raise_bad_str():
    raise BadStr("hidden")


def raise_this(exc):
    raise exc


@pytest.mark.cluster
@pytest.mark.timeout(120)
def test_run_time_raise(mc):
    fut = mc.submit(raise_value_error)
    with pytest.raises(ValueError, match="plain failure") as info:
        fut.result(timeout=TIMEOUT)
    assert "raise_value_error" in str(info.value.__cause__)


@pytest.mark.cluster
@pytest.mark.timeout(120)
def test_run_time_unpicklable_exception(mc):
    fut = mc.submit(raise_unpicklable)
    with pytest.raises(RuntimeError, match="could not be pickled.*local failure") as info:
        fut.result(timeout=TIMEOUT)
    assert fut.key in str(info.value) and "Unpicklable" in str(info.value)
    assert "raise_unpicklable" in str(info.value.__cause__)


@pytest.mark.cluster
@pytest.mark.timeout(120)
def test_run_time_exception_whose_str_raises(mc):
    fut = mc.submit(raise_bad_str)
    exc = fut.exception(timeout=TIMEOUT)  # a TimeoutError here: the future hung
    assert isinstance(exc, BadStr)  # still itself: the user can catch it by type
    assert fut.status == "error"
    assert "raise_bad_str" in str(exc.__cause__)
    assert "BadStr" in repr(fut)


@pytest.mark.cluster
@pytest.mark.timeout(120)
@pytest.mark.parametrize("exc", [asyncio.CancelledError(), KeyboardInterrupt(), SystemExit(3),
                                 CustomBase("custom"), GeneratorExit()],
                         ids=lambda e: type(e).__name__)
def test_run_time_base_exception(mc, exc):
    """A BaseException that is not an Exception arrives as a RuntimeError naming it: raised
    as itself in the client it would cancel the client's call or stop its event loop."""
    fut = mc.submit(raise_this, exc, pure=False)
    with pytest.raises(RuntimeError) as info:
        fut.result(timeout=TIMEOUT)  # a TimeoutError here: the future hung
    msg = str(info.value)
    assert fut.key in msg and type(exc).__name__ in msg, msg
    assert "raise_this" in str(info.value.__cause__)
    assert mc.submit(inc, 1, pure=False).result(timeout=TIMEOUT) == 2


@pytest.mark.cluster
@pytest.mark.timeout(120)
def test_run_time_stop_iteration(mc):
    """StopIteration cannot be set on an asyncio future: it must not get lost on the way."""
    fut = mc.submit(raise_this, StopIteration("exhausted"), pure=False)
    with pytest.raises(RuntimeError) as info:
        fut.result(timeout=TIMEOUT)
    msg = str(info.value)
    assert fut.key in msg and "StopIteration" in msg and "exhausted" in msg, msg


@pytest.mark.cluster
@pytest.mark.timeout(120)
def test_run_time_concurrent_futures_cancelled_error(mc):
    """asyncio turns this Exception into asyncio.CancelledError when it crosses a future."""
    import concurrent.futures

    fut = mc.submit(raise_this, concurrent.futures.CancelledError("inner future cancelled"), pure=False)
    exc = fut.exception(timeout=TIMEOUT)
    assert isinstance(exc, concurrent.futures.CancelledError), exc
    assert fut.status == "error"


# ---------------------------------------------------------------------- run time: hang
@pytest.mark.cluster
@pytest.mark.timeout(120)
def test_run_time_hang_times_out_and_cancel_frees_the_slot_when_it_ends(mc, tmp_path):
    gate = Gate(tmp_path)
    [addr, *_] = sorted(mc.scheduler_info()["workers"])
    hung = mc.submit(gate.wait, 1, workers=[addr], pure=False)
    wait_until(lambda: mc.run(free_slots)[addr] == 1, msg="the hung task occupies one slot")
    with pytest.raises(TimeoutError) as info:
        hung.result(timeout=0.5)
    assert hung.key in str(info.value)
    # the cluster keeps working, on the same worker's other thread too
    assert mc.submit(inc, 1, workers=[addr], pure=False).result(timeout=TIMEOUT) == 2
    hung.cancel()
    wait_until(lambda: hung.status == "cancelled", msg="the future is cancelled")
    assert mc.run(free_slots)[addr] == 1  # a Python thread cannot be stopped: the slot waits for it
    gate.open()
    wait_until(lambda: mc.run(free_slots)[addr] == 2, msg="the slot is free once the task ends")


# ---------------------------------------------------------------------- run time: the process dies
def crash(how: str):
    import resource

    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # no core file left behind
    if how == "abort":
        os.abort()
    elif how == "segfault":
        import ctypes

        ctypes.string_at(0)
    elif how == "exit":
        os._exit(1)


@pytest.fixture(scope="module")
def crash_cluster():
    """One worker of two threads; a task that kills one worker fails at once (KilledWorker)."""
    with xsched.config.set({"scheduler.allowed-failures": 0}):
        cluster = xsched.LocalCluster(n_workers=1, threads_per_worker=2)
    try:
        yield cluster
    finally:
        cluster.close()


@pytest.mark.cluster
@pytest.mark.timeout(120)
@pytest.mark.parametrize("how", ["abort", "segfault", "exit"])
def test_run_time_process_dies(crash_cluster, how, tmp_path):
    with fresh_client(crash_cluster) as c:
        fut = c.submit(crash, how, pure=False)
        with pytest.raises(KilledWorker) as info:
            fut.result(timeout=TIMEOUT)
        assert info.value.key == fut.key and fut.key in str(info.value)
        c.wait_for_workers(1, timeout=30)  # the nanny started a new worker
        assert_threads_intact(c, tmp_path)


# ---------------------------------------------------------------------- result time
def make_lock(tag):
    return threading.Lock()


def count_run(path: str):
    """Append a line per execution to ``path``, then return something that cannot be pickled."""
    with open(path, "a") as f:
        f.write("ran\n")
    return threading.Lock()


def is_a_lock(x) -> bool:
    return type(x).__name__ == "lock"


async def raw_get_data(worker, holder: str, keys: list):
    """get-data from this worker to ``holder``, plain and by ``get_data`` (the bulk channel
    when large): [(keys received, errors)] for each."""
    from xsched.protocol.bulk import get_data
    from xsched.protocol.messages import unpack_objects

    reply, payload = await worker.pool.get(holder).request({"op": "get-data", "keys": keys}, timeout=30)
    plain = sorted(unpack_objects(reply, payload).get("data", {})), reply.get("errors", {})
    errors: dict = {}
    data = await get_data(worker.pool.get(holder), keys, holder, timeout=30, errors=errors)
    return [plain, (sorted(data), errors)]


@pytest.mark.cluster
@pytest.mark.timeout(120)
def test_result_time_client_gathers_unpicklable(mc):
    [a, b] = sorted(mc.scheduler_info()["workers"])
    bad = mc.submit(make_lock, "x", workers=[a], pure=False)
    good = mc.submit(bytes, 2**21, workers=[a], pure=False)  # 2 MiB: large enough for the bulk channel
    with pytest.raises(SerializationError) as info:
        bad.result(timeout=TIMEOUT)
    msg = str(info.value)
    assert bad.key in msg and "lock" in msg.lower() and a in msg, msg
    with pytest.raises(SerializationError, match=bad.key):
        mc.gather([good, bad])
    # the same batch: the good key is served, the bad one is named with the reason
    for got, errors in mc.run(raw_get_data, holder=a, keys=[good.key, bad.key], workers=[b])[b]:
        assert got == [good.key] and list(errors) == [bad.key], (got, errors)
        assert bad.key in errors[bad.key] and "lock" in errors[bad.key].lower()
    assert good.result(timeout=TIMEOUT) == bytes(2**21)


@pytest.mark.cluster
@pytest.mark.timeout(120)
def test_result_time_unpicklable_needed_on_another_worker(mc, tmp_path):
    [a, b] = sorted(mc.scheduler_info()["workers"])
    runs = tmp_path / "runs"
    producer = mc.submit(count_run, str(runs), workers=[a], pure=False)
    dependent = mc.submit(is_a_lock, producer, workers=[b], pure=False)
    with pytest.raises(SerializationError) as info:
        dependent.result(timeout=TIMEOUT)  # a TimeoutError here: recomputed over and over
    msg = str(info.value)
    assert producer.key in msg and a in msg and "lock" in msg.lower(), msg
    assert dependent.status == "error"
    with pytest.raises(SerializationError, match=producer.key):
        producer.result(timeout=TIMEOUT)
    assert runs.read_text() == "ran\n", "the producer was recomputed"
    # on the worker that holds it, the unpicklable value is a perfectly good input
    assert mc.submit(is_a_lock, producer, workers=[a], pure=False).result(timeout=TIMEOUT) is True


def make_only_here(path: str):
    """A value of a class whose module exists only in this worker's process."""
    import sys
    import types

    mod = types.ModuleType("xsched_only_on_this_worker")
    exec("class Thing:\n    pass\n", mod.__dict__)
    mod.Thing.__module__ = mod.__name__
    sys.modules[mod.__name__] = mod
    with open(path, "a") as f:
        f.write("ran\n")
    return mod.Thing()


def type_name(x) -> str:
    return type(x).__name__


@pytest.mark.cluster
@pytest.mark.timeout(120)
def test_result_time_unloadable_on_the_dependent_worker(mc, tmp_path):
    """The value pickles on its holder but cannot be unpickled where a dependent runs: the
    dependent fails with that reason, and the producer is not recomputed over and over."""
    [a, b] = sorted(mc.scheduler_info()["workers"])
    runs = tmp_path / "runs"
    producer = mc.submit(make_only_here, str(runs), workers=[a], pure=False)
    dependent = mc.submit(type_name, producer, workers=[b], pure=False)
    with pytest.raises(SerializationError) as info:
        dependent.result(timeout=TIMEOUT)  # a TimeoutError here: recomputed over and over
    msg = str(info.value)
    assert producer.key in msg and "cannot be unpickled" in msg and "xsched_only_on_this_worker" in msg, msg
    assert runs.read_text() == "ran\n", "the producer was recomputed"
    assert mc.submit(type_name, producer, workers=[a], pure=False).result(timeout=TIMEOUT) == "Thing"
