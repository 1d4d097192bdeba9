"""The conveniences notebook users reach for, their pure parts: futures_of, fire_and_forget
(the client's message and the scheduler extension on a bare state machine), default_client
and as_current, Client.sync and write_scheduler_file on a client without a connection,
the keywords Client() passes to its LocalCluster, LocalCluster(name=...), xsched.persist and
xsched.TimeoutError, the host of a worker (its address's, not its machine's name), and
dask's configuration names. With real processes: tests/cluster/test_conveniences.py."""

from __future__ import annotations

import asyncio
import builtins
import collections
import inspect
import os
import stat
import threading
import warnings

import pytest

import xsched
from xsched import config, config_schema, hooks
from xsched.client import default as default_mod
from xsched.client import loop as _loop
from xsched.client.client import Client
from xsched.client.future import Future, FutureState, fire_and_forget, futures_of
from xsched.config_schema import ConfigError, DaskConfigName
from xsched.protocol import ops
from xsched.protocol.registry import read_scheduler_file
from xsched.protocol.security import Security
from xsched.protocol.versions import announce
from xsched.scheduler.extensions.fire_and_forget import HOLDER, FireAndForgetExtension
from xsched.scheduler.state import (
    AddWorker, NewTask, RemoveClient, SchedulerState, TaskErred, TaskFinished, UpdateGraph,
)


class StubClient:
    """What a Future and fire_and_forget use of a client: reference counts and ``_send``."""

    asynchronous = False
    status = "running"

    def __init__(self):
        self.sent: list = []

    def _inc_ref(self, key):
        return FutureState()

    def _dec_ref(self, key):
        pass

    def _send_in_order(self, msg):
        self.sent.append(msg)


# ----------------------------------------------------------------------------- futures_of
class Persisted:
    """A collection persisted on a cluster: its graph holds Futures (and other values)."""

    def __init__(self, graph):
        self.graph = graph

    def __xsched_graph__(self):
        return self.graph


def test_futures_of_finds_each_future_once_in_nested_structures_and_persisted_collections():
    c = StubClient()
    a, b, d = Future("a", c), Future("b", c), Future("d", c)
    again = Future("a", c)  # another handle on key a of the same client: the same future
    obj = {"x": [a, (b, 3)], d: "as a key", "y": {again, "text"}, "z": Persisted({"a": a, "e": 1})}
    assert [f.key for f in futures_of(obj)] == ["a", "b", "d"]
    assert futures_of(a) == [a] and futures_of([1, "two", None]) == []
    assert [f.key for f in futures_of(Persisted({"k1": Future("k1", c), "k2": 7}))] == ["k1"]
    other = StubClient()  # the same key of two clients: two futures
    assert len(futures_of([Future("a", c), Future("a", other)])) == 2


def test_fire_and_forget_tells_each_client_its_keys_once():
    c1, c2 = StubClient(), StubClient()
    futs = [Future("a", c1), Future("b", c1), Future("a", c1), Future("z", c2)]
    fire_and_forget({"all": futs})
    assert c1.sent == [{"op": ops.FIRE_AND_FORGET, "keys": ["a", "b"]}]
    assert c2.sent == [{"op": ops.FIRE_AND_FORGET, "keys": ["z"]}]
    fire_and_forget([1, 2])  # nothing to keep: nothing sent
    assert len(c1.sent) == 1


# ----------------------------------------------------------------------------- the extension
class FakeScheduler:
    """What the fire-and-forget extension uses of the Scheduler; a validating state machine."""

    status = "running"

    def __init__(self):
        self.state = SchedulerState(validate=True)
        self.ops: dict = {}
        self.peer_client = {b"pc": "c"}

    def register_op(self, op, handler):
        self.ops[op] = handler

    def _client_of(self, peer):
        if peer not in self.peer_client:
            raise PermissionError("register with register-client before sending work")
        return self.peer_client[peer]

    def handle(self, *events):
        return self.state.handle(*events)


def test_held_keys_outlive_their_client_and_are_released_once_done():
    s = FakeScheduler()
    ext = FireAndForgetExtension(s)
    s.handle(AddWorker("tcp://w:1", nthreads=2))
    s.handle(UpdateGraph("c", [NewTask("a", b"spec"), NewTask("b", b"spec", ["a"])], ["b"]))
    s.ops[ops.FIRE_AND_FORGET](b"pc", {"op": ops.FIRE_AND_FORGET, "keys": ["b", "unknown-key"]}, [])
    assert ext.held() == ["b"]
    s.handle(RemoveClient("c"))  # the client closed: the holder still wants b, and b needs a
    assert s.state.tasks["a"].state == "processing" and s.state.tasks["b"].state == "waiting"
    s.handle(TaskFinished("tcp://w:1", "a", 8))
    assert s.state.tasks["b"].state == "processing"
    s.handle(TaskFinished("tcp://w:1", "b", 8))
    assert s.state.tasks["b"].state == "memory" and ext._done == ["b"]  # noted; no loop here to release it
    ext.release_done()
    assert ext.held() == [] and s.state.tasks == {}  # released, then forgotten: nobody wants them
    with pytest.raises(PermissionError):  # only registered clients
        s.ops[ops.FIRE_AND_FORGET](b"stranger", {"op": ops.FIRE_AND_FORGET, "keys": ["b"]}, [])


def test_a_held_key_that_fails_is_released_and_a_finished_one_is_not_held():
    s = FakeScheduler()
    ext = FireAndForgetExtension(s)
    s.handle(AddWorker("tcp://w:1", nthreads=2))
    s.handle(UpdateGraph("c", [NewTask("x", b"spec"), NewTask("y", b"spec")], ["x", "y"]))
    s.handle(TaskFinished("tcp://w:1", "y", 8))
    s.ops[ops.FIRE_AND_FORGET](b"pc", {"op": ops.FIRE_AND_FORGET, "keys": ["x", "y"]}, [])
    assert ext.held() == ["x"]  # y is done already: nothing to keep
    s.handle(TaskErred("tcp://w:1", "x", b"", b"", "ValueError: no"))
    ext.release_done()
    assert ext.held() == [] and HOLDER not in s.state.tasks["x"].who_wants
    assert s.state.tasks["x"].state == "erred"  # the client still wants it, and hears the error


def test_release_happens_on_the_loop_soon_after_the_transition():
    async def main():
        s = FakeScheduler()
        ext = FireAndForgetExtension(s)
        s.handle(AddWorker("tcp://w:1", nthreads=1))
        s.handle(UpdateGraph("c", [NewTask("a", b"spec")], ["a"]))
        s.ops[ops.FIRE_AND_FORGET](b"pc", {"op": ops.FIRE_AND_FORGET, "keys": ["a"]}, [])
        s.handle(RemoveClient("c"), TaskFinished("tcp://w:1", "a", 8))
        assert ext.held() == ["a"]  # the hook only noted it (it must not feed events back)
        await asyncio.sleep(0)  # one loop turn
        return ext.held(), dict(s.state.tasks)

    assert asyncio.run(main()) == ([], {})


# ----------------------------------------------------------------------------- default client
@pytest.fixture
def no_default(monkeypatch):
    monkeypatch.setattr(default_mod, "_stack", [])


def test_default_client_raises_a_clear_value_error_without_a_client(no_default):
    with pytest.raises(ValueError, match=r"no xsched Client is running: create one with Client\(\.\.\.\)"):
        xsched.default_client()
    c = StubClient()
    assert xsched.default_client(c) is c


def test_as_current_makes_a_client_the_default_in_its_block_and_thread_only(no_default):
    first, second = StubClient(), StubClient()
    default_mod.set_default_client(first)
    c = object.__new__(Client)  # as_current needs nothing of a connection
    c.status = "running"
    seen_in_thread = []
    with Client.as_current(c) as same:
        assert same is c and xsched.default_client() is c
        t = threading.Thread(target=lambda: seen_in_thread.append(xsched.default_client()))
        t.start()
        t.join()
        with default_mod.current_as(second):
            assert xsched.default_client() is second
        assert xsched.default_client() is c
    assert xsched.default_client() is first and seen_in_thread == [first]
    c.status = "closed"
    with Client.as_current(c):  # a closed client is never the default
        assert xsched.default_client() is first


# ----------------------------------------------------------------------------- Client without a cluster
def _unconnected(asynchronous=False) -> Client:
    c = object.__new__(Client)
    c.asynchronous = asynchronous
    c._loop = _loop.background_loop()
    c.scheduler_address = "tcp://127.0.0.1:8786"
    c.security = Security.generate()
    c.scheduler_id = "scheduler-1234"
    return c


def test_sync_runs_a_coroutine_function_on_the_clients_loop_or_returns_the_coroutine():
    async def where(x, y=1):
        return asyncio.get_running_loop(), x + y

    c = _unconnected()
    assert c.sync(where, 1, y=2) == (_loop.background_loop(), 3)
    with pytest.raises(TimeoutError):
        c.sync(asyncio.sleep, 5, callback_timeout=0.05)
    a = _unconnected(asynchronous=True)
    coro = a.sync(where, 40, y=2)
    assert inspect.iscoroutine(coro) and asyncio.run(coro)[1] == 42


def test_write_scheduler_file_is_private_and_read_back_by_read_scheduler_file(tmp_path):
    c = _unconnected()
    path = str(tmp_path / "scheduler.json")
    c.write_scheduler_file(path)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert read_scheduler_file(path) == (c.scheduler_address, c.security)


def test_client_keywords_for_its_own_cluster():
    with pytest.raises(TypeError, match="n_workers, processes") as info:  # with an address: no cluster to make
        Client("tcp://127.0.0.1:1", n_workers=2, processes=False)
    assert "only make a new LocalCluster" in str(info.value)
    with pytest.raises(TypeError) as info:  # unknown ones are named, all of them, before anything starts
        hooks.new_cluster(n_workers=1, nworkers=2, thread_per_worker=1)
    assert "nworkers, thread_per_worker" in str(info.value)
    assert "n_workers" not in str(info.value).split(" (LocalCluster takes")[0]
    assert {"n_workers", "threads_per_worker", "processes", "memory_limit", "name"} <= set(
        inspect.signature(xsched.LocalCluster).parameters)


def test_a_local_cluster_has_a_name_in_its_repr():
    named = xsched.LocalCluster(n_workers=1, asynchronous=True, name="analysis")  # (not started)
    plain = xsched.LocalCluster(n_workers=1, asynchronous=True)
    try:
        assert named.name == "analysis" and "name='analysis'" in repr(named)
        assert "analysis" in hooks.cluster_html(named)
        assert plain.name == "LocalCluster" and "name=" not in repr(plain)
    finally:
        named.close()
        plain.close()


def test_persist_and_timeout_error_are_exported(no_default):
    assert xsched.TimeoutError is builtins.TimeoutError is asyncio.TimeoutError
    (x,) = xsched.persist(xsched.delayed(sum)([1, 2]))  # no client: computed here
    assert x.compute() == 3 and len(x.__xsched_graph__()) == 1
    for name in ("persist", "futures_of", "fire_and_forget", "default_client", "TimeoutError"):
        assert name in xsched.__all__


# ----------------------------------------------------------------------------- a worker's host
class FakeListener:
    def __init__(self):
        self.sent: list = []

    def send(self, peer, msg, raw=None):
        self.sent.append((peer, msg, raw))


def test_a_workers_host_is_its_addresss_host_and_hostname_the_machines_name():
    from xsched.scheduler.server import Scheduler

    s = Scheduler(register=False)
    s.listener = FakeListener()
    for i, addr in enumerate(["tcp://10.0.0.1:4000", "tcp://10.0.0.2:4000", "tcp://[fd00::3]:4000"]):
        # (a worker says its hostname; "host" it may get wrong: the address decides)
        s._op_register_worker(f"p{i}".encode(), {"op": ops.REGISTER_WORKER, "address": addr, "nthreads": 2,
                                                 "host": "node", "hostname": "node", **announce()}, [])
    info = s.info()["workers"]
    assert [info[a]["host"] for a in sorted(info)] == ["10.0.0.1", "10.0.0.2", "fd00::3"]
    assert {w["hostname"] for w in info.values()} == {"node"}
    # shipping an environment "once per host": two machines of one hostname are two hosts
    leaders = {}
    for addr in sorted(s.state.workers):
        leaders.setdefault(s.state.workers[addr].host, addr)
    assert len(leaders) == 3
    # a restriction naming the machine still reaches its workers, as one naming the host does
    s.handle(UpdateGraph("c", [NewTask("t", b"spec", workers=["node"]), NewTask("u", b"spec", workers=["10.0.0.2"])],
                         ["t", "u"]))
    assert s.state.tasks["u"].processing_on.address == "tcp://10.0.0.2:4000"
    assert s.state.tasks["t"].state == "processing"


# ----------------------------------------------------------------------------- dask's config names
@pytest.fixture
def fresh_notices(monkeypatch):
    monkeypatch.setattr(config_schema, "_noticed", set())


def test_dask_names_set_xsched_keys_with_one_notice_naming_them(fresh_notices):
    with pytest.warns(DaskConfigName, match="it sets xsched's 'scheduler.allowed-failures'"):
        with config.set({"distributed.scheduler.allowed-failures": 5}):
            assert config.get("scheduler.allowed-failures") == 5
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # once per name: the second use is silent
        with config.set({"distributed.scheduler.allowed-failures": 6}):
            assert config.get("scheduler.allowed-failures") == 6
    pairs = {"distributed.worker.memory.target": 0.5, "distributed.worker.memory.spill": 0.6,
             "distributed.worker.memory.pause": 0.7, "distributed.worker.memory.terminate": 0.9,
             "distributed.scheduler.work-stealing": False, "distributed.scheduler.worker-saturation": 2.0,
             "distributed.comm.timeouts.connect": "3s"}
    with pytest.warns(DaskConfigName) as record:
        with config.set(pairs):
            for dask, value in pairs.items():
                assert config.get(config_schema.DASK_NAMES[dask]) == value
    assert {str(w.message).split("'")[1] for w in record if issubclass(w.category, DaskConfigName)} == set(pairs)


def test_dask_names_nested_like_a_dask_yaml_file_and_in_the_environment(fresh_notices, monkeypatch):
    with pytest.warns(DaskConfigName):
        with config.set({"distributed": {"worker": {"memory": {"target": 0.25}, "resources": {"GPU": 2}}}}):
            assert config.get("worker.memory.target") == 0.25 and config.get("worker.resources") == {"GPU": 2}
    monkeypatch.setenv("XSCHED_DISTRIBUTED__SCHEDULER__ALLOWED_FAILURES", "9")
    try:
        with pytest.warns(DaskConfigName):
            config.refresh()
        assert config.get("scheduler.allowed-failures") == 9
    finally:
        monkeypatch.delenv("XSCHED_DISTRIBUTED__SCHEDULER__ALLOWED_FAILURES")
        config.refresh()


def test_an_unknown_dask_name_is_an_unknown_key(fresh_notices):
    with pytest.raises(ConfigError, match=r"Unknown config key 'distributed.scheduler.no-such-thing'"):
        config.set({"distributed.scheduler.no-such-thing": 1})
    with pytest.raises(ConfigError, match=r"Did you mean 'distributed.scheduler.allowed-failures'\?"):
        config.set({"distributed.scheduler.alowed-failures": 1})
    with pytest.raises(ConfigError, match="Unknown config key 'distributed.dashboard.link'"):
        config.set({"distributed": {"dashboard": {"link": "x"}}})
    with pytest.raises(ConfigError, match="expects a fraction"), warnings.catch_warnings():
        warnings.simplefilter("ignore", DaskConfigName)  # (the value is checked as xsched's key's)
        config.set({"distributed.worker.memory.target": "lots"})
    assert config.get("scheduler.allowed-failures") == 3


# ----------------------------------------------------------------------------- order on the wire
class RecordingLoop:
    """A loop whose threadsafe callbacks a test runs by hand, in order."""

    def __init__(self):
        self.callbacks: list = []

    def call_soon_threadsafe(self, fn, *args):
        self.callbacks.append((fn, args))

    def call_later(self, delay, fn, *args):
        self.callbacks.append((fn, args))

    def run(self):
        while self.callbacks:
            fn, args = self.callbacks.pop(0)
            fn(*args)


class RecordingConn:
    def __init__(self):
        self.sent: list = []

    def send(self, msg):
        self.sent.append(msg)

    def request_nowait(self, msg):
        self.sent.append(msg)
        return self  # (the reply's future: its callbacks never run here)

    def add_done_callback(self, callback):
        pass


def test_fire_and_forget_reaches_the_scheduler_before_the_release_of_its_dropped_futures():
    """``fire_and_forget(client.submit(...))`` drops the Future as soon as the call returns:
    its release must not overtake the fire-and-forget message (the scheduler would forget
    the task first), as it never overtakes the graph that made the key."""
    import threading as _threading

    c = object.__new__(Client)
    c.status, c.asynchronous = "running", False
    c._loop, c._conn = RecordingLoop(), RecordingConn()
    c._ref_lock, c._refs, c._states = _threading.RLock(), {}, {}
    c._pending_release, c._release_armed, c._graphs_queued, c._graphs_unsent = [], False, 0, set()
    c._released_lately = collections.OrderedDict()
    c._send_graph({"op": ops.UPDATE_GRAPH, "tasks": [], "keys": ["k"]})
    fire_and_forget(Future("k", c))  # (the Future is dropped here: its release is queued)
    c._loop.run()
    assert [m["op"] for m in c._conn.sent] == [ops.UPDATE_GRAPH, ops.FIRE_AND_FORGET, ops.CLIENT_RELEASES_KEYS]


def test_a_local_directory_that_cannot_be_made_fails_at_once(tmp_path):
    """Every worker would fail to start there; the cluster waited its whole timeout, then
    pointed at logs it had just removed."""
    (tmp_path / "afile").touch()
    with pytest.raises(OSError, match=r"local_directory '.*afile/spill' cannot be made"):
        xsched.LocalCluster(n_workers=1, asynchronous=True, local_directory=str(tmp_path / "afile" / "spill"))
    made = tmp_path / "new" / "spill"
    cluster = xsched.LocalCluster(n_workers=1, asynchronous=True, local_directory=str(made))  # (not started)
    try:
        assert made.is_dir()
    finally:
        cluster.close()
