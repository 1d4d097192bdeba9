"""Plugins without processes: the scheduler's ``plugins`` extension on the fake scheduler,
the worker's plugin host, a nanny's plugins through its directory, and the client's reading
of the outcomes. On real clusters: tests/cluster/test_plugins.py."""

from __future__ import annotations

import asyncio
import logging
import os
import threading

import pytest

from xsched import NannyPlugin, PipInstall, SchedulerPlugin, UploadFile, WorkerPlugin
from xsched.client.plugins import PluginError, _outcomes
from xsched.errors import unpack_exception
from xsched.plugins import hook_caller, kind_of
from xsched.protocol.messages import decode, encode
from xsched.protocol.serialize import dumps
from xsched.protocol.versions import IncompatibleVersionError, announce
from xsched.scheduler.extensions.plugins import PluginsExtension, token_of
from xsched.scheduler.state import NewTask, TaskFinished, UpdateGraph
from xsched.worker.plugins import NannyLink, NannyPlugins, WorkerPlugins, outcome, sync_nanny
from xsched.worker.state import ComputeTask, ExecuteSuccess, WorkerState

from tests.support.fake_scheduler import FakeScheduler


def served():
    server = FakeScheduler()
    server.extensions["plugins"] = PluginsExtension(server)
    return server, server.extensions["plugins"]


def message(op, objects=None, raw=None, **fields):
    """Header and payload of a message as the listener hands them to a handler."""
    return decode(encode({"op": op, **fields}, objects, raw))


class Counter(WorkerPlugin):
    def setup(self, worker):
        self.n = 0


# ----------------------------------------------------------------------------- worker plugins: the scheduler
def test_a_worker_plugin_reaches_every_worker_is_answered_and_goes_to_later_ones_first():
    server, ext = served()
    frames = dumps(Counter())

    async def main():
        w1, w2 = server.add_worker("w1"), server.add_worker("w2")
        h, payload = message("register-worker-plugin", raw={"plugin": frames}, name="count", nanny=False)
        request = asyncio.ensure_future(server.ops["register-worker-plugin"](b"pc", h, payload))
        await asyncio.sleep(0)
        sent = {peer: (msg, raw) for peer, msg, raw in server.listener.sent}
        assert set(sent) == {w1, w2}
        msg, raw = sent[w1]
        assert msg["op"] == "plugin-add" and msg["name"] == "count" and msg["token"] == token_of(frames)
        assert raw == {"plugin": frames} and not request.done()  # waits for both answers
        server.ops["plugin-done"](w1, {"op": "plugin-done", "uid": msg["uid"], "name": "count", "status": "OK"}, [])
        server.ops["plugin-done"](w2, {"op": "plugin-done", "uid": sent[w2][0]["uid"], "name": "count",
                                       "status": "error", "error": "ValueError: no"}, [])
        return await asyncio.wait_for(request, 10)

    reply = asyncio.run(main())
    assert reply == {"results": {"w1": {"status": "OK"}, "w2": {"status": "error", "error": "ValueError: no"}}}
    assert list(ext.worker_plugins) == ["count"] and ext.worker_plugins["count"].client == "c"
    # a worker registering later gets every kept plugin (uid ""), before any task
    server.listener.sent.clear()
    ext.add_worker("w3", b"w3")
    (peer, msg, raw), = server.listener.sent
    assert peer == b"w3" and (msg["op"], msg["name"], msg["uid"], msg["nanny"]) == ("plugin-add", "count", "", False)
    # ... and when its setup fails, the client that registered the plugin hears which and where
    server.ops["plugin-done"](b"w3", {"op": "plugin-done", "uid": "", "name": "count", "status": "error",
                                      "error": "ImportError: nope"}, [])
    assert server.to_clients == []  # (w3 is not a worker the fake server knows: ignored)
    server.add_worker("w4")
    server.ops["plugin-done"](b"w4", {"op": "plugin-done", "uid": "", "name": "count", "status": "error",
                                      "error": "ImportError: nope"}, [])
    (client, warning), = server.to_clients
    assert client == "c" and warning["op"] == "warning"
    assert "plugin 'count' failed in setup on worker w4" in warning["text"] and "ImportError: nope" in warning["text"]


def test_a_name_registered_again_replaces_unless_idempotent_and_unregistering_tears_down():
    server, ext = served()

    async def register(plugin, **fields):
        h, payload = message("register-worker-plugin", raw={"plugin": dumps(plugin)}, name="p", **fields)
        return await server.ops["register-worker-plugin"](b"pc", h, payload)

    async def main():
        assert await register(Counter()) == {"results": {}}  # no workers yet: kept for later ones
        first = ext.worker_plugins["p"].token
        assert await register(UploadFile(__file__), idempotent=True) == {"results": {}, "kept": True}
        assert ext.worker_plugins["p"].token == first
        await register(UploadFile(__file__))
        assert ext.worker_plugins["p"].token != first
        peer = server.add_worker("w1")
        request = asyncio.ensure_future(server.ops["unregister-worker-plugin"](
            b"pc", {"op": "unregister-worker-plugin", "name": "p"}, []))
        await asyncio.sleep(0)
        (_, msg, _), = server.listener.sent
        assert msg["op"] == "plugin-remove" and msg["name"] == "p" and msg["nanny"] is False
        server.ops["plugin-done"](peer, {"op": "plugin-done", "uid": msg["uid"], "status": "OK"}, [])
        assert await request == {"results": {"w1": {"status": "OK"}}}
        with pytest.raises(ValueError, match="no worker plugin named 'p'"):
            await server.ops["unregister-worker-plugin"](b"pc", {"op": "unregister-worker-plugin", "name": "p"}, [])

    asyncio.run(main())
    assert ext.worker_plugins == {}


def test_a_registration_does_not_wait_for_a_worker_that_left():
    server, ext = served()

    async def main():
        server.add_worker("w1")
        h, payload = message("register-worker-plugin", raw={"plugin": dumps(Counter())}, name="p")
        request = asyncio.ensure_future(server.ops["register-worker-plugin"](b"pc", h, payload))
        await asyncio.sleep(0)
        ext.remove_worker("w1", "connection lost")  # the hook the server calls
        return await asyncio.wait_for(request, 10)

    assert asyncio.run(main()) == {"results": {"w1": {"status": "skipped", "error": "the worker left"}}}


def test_a_plugin_owned_by_a_client_is_torn_down_when_that_client_goes():
    server = FakeScheduler(clients={"c": b"pc", "d": b"pd"})
    ext = server.extensions["plugins"] = PluginsExtension(server)

    async def register(name, peer, **fields):
        h, payload = message("register-worker-plugin", raw={"plugin": dumps(Counter())}, name=name, **fields)
        return await server.ops["register-worker-plugin"](peer, h, payload)

    async def main():
        await register("mine", b"pc", owned=True)
        await register("kept", b"pc")  # not owned: stays after its client
        await register("theirs", b"pd", owned=True)
        owner = server._client_of(b"pc")
        assert ext.worker_plugins["mine"].owned and not ext.worker_plugins["kept"].owned
        peer = server.add_worker("w1")
        ext.remove_client(owner)  # the hook the server calls when a client goes
        assert sorted(ext.worker_plugins) == ["kept", "theirs"]
        await asyncio.sleep(0)
        (_, msg, _), = [m for m in server.listener.sent if m[1]["op"] == "plugin-remove"]
        assert msg["name"] == "mine" and msg["nanny"] is False
        server.ops["plugin-done"](peer, {"op": "plugin-done", "uid": msg["uid"], "status": "OK"}, [])
        await ext._background.aclose(timeout=5)

    asyncio.run(main())
    ext.remove_client("a client without a loop")  # (driven by hand: nothing to tell, nothing raises)


def test_nanny_plugins_are_kept_apart_and_given_to_workers_before_they_register():
    server, ext = served()
    frames = dumps(NannyPlugin())
    h, payload = message("register-worker-plugin", raw={"plugin": frames}, name="env", nanny=True)
    assert asyncio.run(server.ops["register-worker-plugin"](b"pc", h, payload)) == {"results": {}}
    assert list(ext.nanny_plugins) == ["env"] and ext.worker_plugins == {}
    # asked by a worker that has not registered (its nanny sets them up first)
    reply = server.ops["get-nanny-plugins"](b"not-registered-yet", {"op": "get-nanny-plugins", **announce()}, [])
    assert reply == {"plugins": [["env", token_of(frames), frames]], **announce()}  # (versions checked both ways)
    with pytest.raises(IncompatibleVersionError, match="announced no protocol version"):  # nothing goes out
        server.ops["get-nanny-plugins"](b"an-old-worker", {"op": "get-nanny-plugins"}, [])
    # and sent on registration too (registered meanwhile: its nanny compares the token)
    ext.add_worker("w1", b"w1")
    (_, msg, _), = server.listener.sent
    assert msg["nanny"] is True and msg["token"] == token_of(frames)


# ----------------------------------------------------------------------------- scheduler plugins
class Audit(SchedulerPlugin):
    def __init__(self):
        self.seen = []

    async def start(self, scheduler):
        self.seen.append("start")

    def transition(self, key, start, finish, *args, **kwargs):
        self.seen.append((key, start, finish, bool(kwargs.get("stimulus_id"))))

    def update_graph(self, scheduler, keys, **kwargs):
        self.seen.append(("update-graph", sorted(keys), kwargs["tasks"], kwargs["client"]))

    def add_worker(self, scheduler, worker):  # (no **kwargs: given only what it declares)
        self.seen.append(("add-worker", worker))

    def remove_worker(self, scheduler, worker):
        self.seen.append(("remove-worker", worker))

    async def close(self):
        self.seen.append("close")


def register_scheduler_plugin(server, plugin, name="audit", **fields):
    h, payload = message("register-scheduler-plugin", {"plugin": plugin}, name=name, **fields)
    return asyncio.run(server.ops["register-scheduler-plugin"](b"pc", h, payload))


def test_a_scheduler_plugin_starts_then_hears_events_in_order_outside_the_state_machine():
    server, ext = served()
    assert ext._on_transition not in server.state.transition_hooks  # nothing to tell: no cost
    assert register_scheduler_plugin(server, Audit()) == {}
    audit = ext.plugins["audit"]
    assert audit.seen == ["start"] and ext._on_transition in server.state.transition_hooks
    ext.add_worker("w", b"w")
    server.add_worker("w")
    graph = UpdateGraph("c", [NewTask("a-1", b"spec")], ["a-1"])
    ext.update_graph(graph)  # (the server's hook, just before the graph reaches the state machine)
    server.handle(graph)
    server.handle(TaskFinished("w", "a-1", nbytes=8))
    assert audit.seen == ["start"]  # only noted so far: told outside the state machine
    ext.remove_worker("w", "connection lost")
    assert ext.flush() == 7
    assert audit.seen[1:] == [
        ("add-worker", "w"), ("update-graph", ["a-1"], ["a-1"], "c"),
        ("a-1", "released", "waiting", True), ("a-1", "waiting", "queued", True),
        ("a-1", "queued", "processing", True), ("a-1", "processing", "memory", True),
        ("remove-worker", "w")]
    asyncio.run(server.ops["unregister-scheduler-plugin"](b"pc", {"op": "unregister-scheduler-plugin",
                                                                  "name": "audit"}, []))
    assert audit.seen[-1] == "close" and ext.plugins == {}
    assert ext._on_transition not in server.state.transition_hooks


def test_a_scheduler_plugin_that_fails_to_start_is_not_kept_and_the_client_hears_why():
    class Broken(SchedulerPlugin):
        def start(self, scheduler):
            raise RuntimeError("cannot start")

    server, ext = served()
    reply = register_scheduler_plugin(server, Broken(), name="broken")
    assert reply["error"] and "RuntimeError: cannot start" in reply["text"]
    assert "cannot start" in str(unpack_exception(reply["exception"], reply["traceback"]))
    assert ext.plugins == {}


def test_a_failing_hook_is_logged_once_and_the_others_still_hear(caplog):
    class Noisy(SchedulerPlugin):
        def add_worker(self, scheduler, worker):
            raise ValueError("noisy")

    server, ext = served()
    register_scheduler_plugin(server, Noisy(), name="noisy")
    register_scheduler_plugin(server, Audit(), name="audit")
    with caplog.at_level(logging.ERROR, logger="xsched.scheduler.extensions.plugins"):
        ext.add_worker("w1", b"w1")
        ext.add_worker("w2", b"w2")
        ext.flush()
    assert caplog.text.count("scheduler plugin 'noisy': add_worker failed") == 1
    assert ext.plugins["audit"].seen[-2:] == [("add-worker", "w1"), ("add-worker", "w2")]
    # the same name again: the new one starts, the old one is closed
    old = ext.plugins["audit"]
    register_scheduler_plugin(server, Audit(), name="audit")
    assert old.seen[-1] == "close" and ext.plugins["audit"] is not old
    assert register_scheduler_plugin(server, Audit(), name="audit", idempotent=True) == {"kept": True}
    asyncio.run(ext.close())
    assert ext.plugins == {} and ext._on_transition not in server.state.transition_hooks


def test_the_real_scheduler_tells_the_plugins_of_graphs_and_clients():
    from xsched.protocol.versions import announce
    from xsched.scheduler.server import Scheduler

    from tests.support.fake_scheduler import FakeListener

    class Clients(SchedulerPlugin):
        def __init__(self):
            self.seen = []

        def add_client(self, scheduler, client):
            self.seen.append(("add-client", client))

        def update_graph(self, scheduler, keys, client=None, **kwargs):
            self.seen.append(("graph", client, sorted(keys)))

    s = Scheduler(register=False)
    s.listener = FakeListener()
    ext = s.extensions["plugins"]
    ext.plugins["clients"] = plugin = Clients()
    ext._hooks["add_client"]["clients"] = plugin.add_client
    ext._hooks["update_graph"]["clients"] = plugin.update_graph
    s._op_register_client(b"pc", {"op": "register-client", "client": "c", **announce()}, [])
    s._op_update_graph(b"pc", {"op": "update-graph", "tasks": [{"key": "x-1", "run_spec": b"s"}], "keys": ["x-1"]}, [])
    ext.flush()
    assert plugin.seen == [("add-client", "c"), ("graph", "c", ["x-1"])]
    assert s.plugins is ext.plugins


# ----------------------------------------------------------------------------- the worker's side
class Recording(WorkerPlugin):
    def __init__(self):
        self.log = []

    def setup(self, worker):
        self.log.append(("setup", worker))

    def teardown(self, worker):
        self.log.append(("teardown", worker))

    def transition(self, key, start, finish, **kwargs):
        self.log.append((key, start, finish, kwargs["stimulus_id"]))


def test_the_worker_host_sets_up_replaces_tells_transitions_and_tears_down():
    host = WorkerPlugins(worker="W", spawn=asyncio.ensure_future)
    done = []
    first, second = Recording(), Recording()
    host.add("p", first, done.append)
    assert done == [None] and host.plugins == {"p": first} and host.wants_transitions
    host.add("p", second, done.append)  # the same name: the old one torn down first
    assert first.log == [("setup", "W"), ("teardown", "W")] and host.plugins == {"p": second}
    # what one handle() of the state machine logged, as the server hands it over
    ws = WorkerState(nthreads=1)
    before = ws.log_count
    ws.handle(ComputeTask("a", b"spec"))
    ws.handle(ExecuteSuccess("a", 8, "int", 0.0, 1.0))
    host.transitions(ws.logged_since(before))
    assert [entry[:3] for entry in second.log[1:]] == [
        ("a", "released", "ready"), ("a", "ready", "executing"), ("a", "executing", "memory")]
    assert all(entry[3] for entry in second.log[1:])  # with the stimulus id
    assert asyncio.run(host.remove("p")) is None
    assert second.log[-1] == ("teardown", "W") and host.plugins == {} and not host.wants_transitions


def test_a_setup_that_raises_is_reported_and_the_plugin_dropped(caplog):
    class Broken(WorkerPlugin):
        def setup(self, worker):
            raise ValueError("bad setup")

    class BadTransition(WorkerPlugin):
        def transition(self, key, start, finish, **kwargs):
            raise KeyError(key)

    host = WorkerPlugins(worker=None, spawn=asyncio.ensure_future)
    done = []
    host.add("broken", Broken(), done.append)
    assert isinstance(done[0], ValueError) and host.plugins == {}
    fields = outcome(done[0])
    assert fields["status"] == "error" and fields["error"] == "ValueError: bad setup"
    assert "bad setup" in str(unpack_exception(fields["exception"], fields["traceback"]))
    host.add("bad", BadTransition(), done.append)
    with caplog.at_level(logging.ERROR, logger="xsched.worker.plugins"):
        host.transitions([("a", "ready", "executing", "s"), ("a", "executing", "memory", "s")])
    assert caplog.text.count("worker plugin 'bad': transition") == 1  # logged once, the worker goes on


def test_a_coroutine_setup_is_awaited_before_the_plugin_counts():
    class Slow(WorkerPlugin):
        async def setup(self, worker):
            await asyncio.sleep(0)
            self.ready = True

    async def main():
        host = WorkerPlugins(worker=None, spawn=asyncio.ensure_future)
        done = asyncio.get_running_loop().create_future()
        host.add("slow", Slow(), done.set_result)
        assert host.plugins == {}
        assert await asyncio.wait_for(done, 5) is None
        return host.plugins["slow"].ready

    assert asyncio.run(main())


NANNY_SEEN: list = []


class Env(NannyPlugin):
    """(At module level: pickled by reference, so the nanny's copy records in NANNY_SEEN.)"""

    restart = True

    def setup(self, nanny):
        NANNY_SEEN.append(("setup", nanny))
        os.environ["XSCHED_TEST_NANNY_VAR"] = "set"

    def teardown(self, nanny):
        NANNY_SEEN.append(("teardown", nanny))


def test_a_nanny_sets_up_what_its_workers_hand_it_once_and_tears_down_on_close(tmp_path, monkeypatch):
    seen = NANNY_SEEN
    seen.clear()
    monkeypatch.delenv("XSCHED_TEST_NANNY_VAR", raising=False)
    nanny = NannyPlugins("the nanny", str(tmp_path))
    link = NannyLink(str(tmp_path), interval=0.01)
    frames = dumps(Env())
    stop = threading.Event()

    def nanny_loop():  # (the nanny's own loop polls every 100 ms)
        while not stop.is_set():
            nanny.poll()
            stop.wait(0.01)

    loop = threading.Thread(target=nanny_loop)
    loop.start()
    try:
        # a worker starting: the nanny lacks the plugin, sets it up, and the worker must restart
        restart, failed = asyncio.run(sync_nanny(link, [("env", "t1", frames)], started=0.0))
        assert restart and failed == [] and os.environ["XSCHED_TEST_NANNY_VAR"] == "set"
        # its sibling (or the restarted worker): nothing to do
        restart, _ = asyncio.run(sync_nanny(link, [("env", "t1", frames)], started=link.state()["env"]["time"] + 1))
        assert not restart and seen == [("setup", "the nanny")]
        entry = link.state()["env"]
        assert (entry["token"], entry["status"], entry["restart"]) == ("t1", "OK", True)
        # what the scheduler no longer has is torn down
        asyncio.run(sync_nanny(link, [], started=0.0))
        assert link.state() == {} and seen[-1] == ("teardown", "the nanny")
        # a setup that raises is remembered with its error, not retried by every worker
        class Broken(NannyPlugin):
            def setup(self, nanny):
                raise OSError("no such thing")

        restart, failed = asyncio.run(sync_nanny(link, [("bad", "t2", dumps(Broken()))], started=0.0))
        assert not restart and failed[0][0] == "bad" and failed[0][1]["error"] == "OSError: no such thing"
        assert asyncio.run(link.ask("add", "env", "t3", frames)) ["status"] == "OK"
    finally:
        stop.set()
        loop.join()
    nanny.close()
    assert seen[-1] == ("teardown", "the nanny") and not tmp_path.exists()


# ----------------------------------------------------------------------------- the plugin classes and the client
def test_plugins_are_told_apart_by_their_base_class_and_hooks_get_what_they_declare():
    assert [kind_of(p) for p in (Counter(), Audit(), NannyPlugin(), PipInstall("x"))] == [
        "worker", "scheduler", "nanny", "worker"]
    with pytest.raises(TypeError, match="register_plugin takes a WorkerPlugin, SchedulerPlugin or NannyPlugin"):
        kind_of(lambda: None)

    class Old(SchedulerPlugin):
        def remove_worker(self, scheduler, worker):
            return worker

    call = hook_caller(Old(), "remove_worker", SchedulerPlugin, ["reason"])
    assert call("s", "w1", reason="gone") == "w1"
    assert hook_caller(Old(), "add_worker", SchedulerPlugin) is None  # the base's: nothing to call


def test_upload_file_and_pip_install_describe_what_they_do(tmp_path):
    path = tmp_path / "helpers.py"
    path.write_text("X = 1\n")
    written = []

    class FakeWorker:
        def upload_file(self, filename, data, load=True):
            written.append((filename, data, load))

    plugin = UploadFile(str(path))
    plugin.setup(FakeWorker())
    (tmp_path / "table.csv").write_text("a,b\n")
    UploadFile(str(tmp_path / "table.csv")).setup(FakeWorker())
    assert written == [("helpers.py", b"X = 1\n", True), ("table.csv", b"a,b\n", False)]
    pip = PipInstall(["a", "b==1"], pip_options=["--no-index"], restart=True)
    assert pip.restart_workers and pip.idempotent and pip.command()[-4:] == ["install", "--no-index", "a", "b==1"]
    assert PipInstall(["a", "b==1"], ["--no-index"]).name == pip.name != PipInstall(["a"]).name
    with pytest.raises(ValueError, match="at least one package"):
        PipInstall([])


def test_the_client_reads_the_outcomes_and_raises_naming_plugin_and_workers():
    blob_tb = outcome(ZeroDivisionError("division by zero"))
    assert _outcomes({"w1": {"status": "OK"}}, "p", "setup") == {"w1": "OK"}
    with pytest.raises(PluginError, match=r"plugin 'p' failed in setup on 1 of 2 workers: w2: ZeroDivision") as info:
        _outcomes({"w1": {"status": "OK"}, "w2": blob_tb}, "p", "setup")
    assert info.value.plugin == "p" and isinstance(info.value.errors["w2"], ZeroDivisionError)
    assert info.value.__cause__ is info.value.errors["w2"]


def test_register_worker_plugin_and_register_scheduler_plugin_check_the_kind():
    from xsched.client.plugins import PluginsMixin as Client

    with pytest.raises(TypeError, match="is a scheduler plugin; register it with register_plugin"):
        Client.register_worker_plugin(None, SchedulerPlugin())
    with pytest.raises(TypeError, match=r"is a worker plugin, not a nanny one \(nanny=True\)"):
        Client.register_worker_plugin(None, WorkerPlugin(), nanny=True)
    with pytest.raises(TypeError, match="is not a SchedulerPlugin"):
        Client.register_scheduler_plugin(None, NannyPlugin())
