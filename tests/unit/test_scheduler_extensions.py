"""Scheduler extensions (xsched/scheduler/extensions/): the one table, the protocol each
extension follows, and each extension's own behaviour, driven without sockets.

The extensions are built for a ``FakeServer`` (what an extension uses of the Scheduler: its
state machine, the op table, the peer maps, a listener that records what it sends) or for a
real ``Scheduler`` that never starts listening. What they do on a real cluster is tested in
tests/cluster (test_progress, test_datasets, test_upload_restart).
"""

from __future__ import annotations

import asyncio
import logging

import pytest
import yaml

from xsched import config
from xsched.config_schema import ConfigError
from xsched.protocol.schemas import TO_SCHEDULER, BadMessage
from xsched.protocol.versions import announce
from xsched.scheduler.extensions import (
    EXTENSIONS, CoordinationExtension, DatasetsExtension, DebuggingExtension, EnvironmentsExtension, ExtensionNotLoaded, ProgressExtension, SchedulerExtension,
    DiagnosticsExtension, EventsExtension, FireAndForgetExtension, PluginsExtension, TelemetryExtension, ShuffleExtension,
    MetadataExtension, UploadsExtension, build, op_owners, selected,
)
from xsched.scheduler.state import AddKeys, NewTask, TaskFinished, UpdateGraph

from tests.support.fake_scheduler import FakeListener, FakeScheduler


# ----------------------------------------------------------------------------- fakes
class FakeServer(FakeScheduler):
    def call(self, op, peer=b"pc", payload=(), **fields):
        """Send one request to the op's handler, as given (no schema check)."""
        result = super().call(op, peer, payload, check=False, **fields)
        if asyncio.iscoroutine(result):
            result.close()
            raise TypeError(f"{op} is asynchronous: use acall")
        return result


def served(names=None):
    server = FakeServer()
    server.extensions.update(build(server, names))
    return server


def objs(**fields):
    """Header fields and payload of a message carrying forwarded frames, as split_objects reads them."""
    header, payload = {"_objs": []}, []
    for name, frames in fields.items():
        header["_objs"].append([name, len(frames)])
        payload += frames
    return header, payload


# ----------------------------------------------------------------------------- the table
def test_the_table_lists_the_capabilities_in_build_order():
    assert list(EXTENSIONS) == ["progress", "datasets", "metadata", "uploads", "environments", "coordination",
                                "events", "diagnostics", "fire-and-forget", "plugins", "debugging", "telemetry",
                                "shuffle"]
    assert EXTENSIONS == {"progress": ProgressExtension, "datasets": DatasetsExtension, "metadata": MetadataExtension,
                          "uploads": UploadsExtension, "environments": EnvironmentsExtension,
                          "coordination": CoordinationExtension, "events": EventsExtension,
                          "diagnostics": DiagnosticsExtension, "fire-and-forget": FireAndForgetExtension,
                          "plugins": PluginsExtension, "debugging": DebuggingExtension,
                          "telemetry": TelemetryExtension, "shuffle": ShuffleExtension}
    for name, cls in EXTENSIONS.items():
        assert issubclass(cls, SchedulerExtension) and cls.name == name and cls.OPS


def test_every_op_of_the_table_has_one_owner_and_a_schema():
    owners = op_owners()
    assert owners["subscribe-progress"] == "progress" and owners["get-dataset"] == "datasets"
    assert owners["upload-file-done"] == "uploads" and owners["environment-ready"] == "environments"
    assert owners["lock-acquire"] == "coordination" and owners["queue-get"] == "coordination"
    assert owners["log-event"] == "events" and owners["get-task-stream"] == "diagnostics"
    assert owners["set-metadata"] == owners["get-metadata"] == "metadata"
    assert set(owners) <= set(TO_SCHEDULER)
    assert sum(len(cls.OPS) for cls in EXTENSIONS.values()) == len(owners)


def test_the_real_scheduler_builds_every_extension_and_serves_its_ops():
    from xsched.scheduler.server import Scheduler

    s = Scheduler(register=False)
    assert list(s.extensions) == list(EXTENSIONS)
    for name, ext in s.extensions.items():
        assert type(ext) is EXTENSIONS[name] and ext.scheduler is s
    assert set(s._extension_ops) == set(op_owners())
    assert s._extension_ops["get-dataset"] == s.extensions["datasets"].handlers()["get-dataset"]
    assert s.extensions["progress"].transition in s.state.transition_hooks
    # no server op is shadowed by an extension op
    assert not set(s._extension_ops) & (set(Scheduler._CLIENT_OPS) | set(Scheduler._WORKER_OPS))


# ----------------------------------------------------------------------------- duplicate ops
class Echo(SchedulerExtension):
    name = "echo"

    def _op(self, peer, header, payload):
        return {"echo": self.name}

    OPS = {"list-datasets": _op}


class Shout(Echo):
    name = "shout"


def test_an_op_declared_twice_is_refused_naming_both_before_anything_is_built():
    with pytest.raises(ValueError, match=r"op 'list-datasets' is served by both the scheduler extension 'echo' "
                                         r"and the scheduler extension 'shout'"):
        op_owners({"echo": Echo, "shout": Shout})
    server = FakeServer()
    with pytest.raises(ValueError, match="'datasets' and the scheduler extension 'echo'"):
        build(server, ["echo"], {**EXTENSIONS, "echo": Echo})  # a clash is refused even with one side off
    assert server.ops == {} and server.state.transition_hooks == []  # nothing half-built


def test_an_extension_op_may_not_shadow_a_server_op():
    with pytest.raises(ValueError, match="'list-datasets' is served by both the scheduler itself and the "
                                         "scheduler extension 'echo'"):
        build(FakeServer(), None, {"echo": Echo}, reserved=["list-datasets"])


def test_the_server_refuses_a_second_handler_for_an_op():
    from xsched.scheduler.server import Scheduler

    s = Scheduler(register=False)
    with pytest.raises(ValueError, match="'subscribe-progress' is served already, by 'progress'"):
        s.register_op("subscribe-progress", lambda peer, h, p: None)
    with pytest.raises(ValueError, match="'register-client' is served by the scheduler itself"):
        s.register_op("register-client", lambda peer, h, p: None)

    class Getter(Echo):
        OPS = {"get-dataset": Echo._op}

    with pytest.raises(ValueError, match="'get-dataset' is served already, by 'datasets'"):
        Getter(s)  # (an extension built by hand plugs itself in, and is refused the same way)


# ----------------------------------------------------------------------------- choosing extensions
def test_selected_keeps_table_order_and_names_unknown_extensions():
    assert selected(None) == list(EXTENSIONS)
    assert selected(["environments", "progress"]) == ["progress", "environments"]
    assert selected([]) == []
    with pytest.raises(ValueError, match=r"unknown extension 'dataset' \(did you mean 'datasets'\?\); known: "
                                         r"progress, datasets, metadata, uploads, environments"):
        selected(["dataset"])
    with pytest.raises(TypeError, match="list of extension names"):
        selected("progress")


def test_config_key_scheduler_extensions():
    assert config.get("scheduler.extensions") is None  # packaged default: all
    with config.set({"scheduler.extensions": ["progress", "uploads"]}):
        assert config.get("scheduler.extensions") == ["progress", "uploads"]
        # (how a LocalCluster's scheduler process gets it)
        inline = yaml.safe_load(config.to_env()[config.INLINE_VAR])
        assert inline["scheduler"]["extensions"] == ["progress", "uploads"]
    with pytest.raises(ConfigError, match="scheduler.extensions.*a list of names, or null"):
        with config.set({"scheduler.extensions": "progress"}):
            pass
    assert "scheduler.extensions:" in config.describe()


def test_a_scheduler_loads_only_the_configured_extensions():
    from xsched.scheduler.server import Scheduler

    with config.set({"scheduler.extensions": ["progress"]}):
        s = Scheduler(register=False)
    assert list(s.extensions) == ["progress"]
    assert set(s._extension_ops) == {"subscribe-progress", "unsubscribe-progress"}
    with config.set({"scheduler.extensions": ["progres"]}):
        with pytest.raises(ValueError, match="did you mean 'progress'"):
            Scheduler(register=False)


def test_ops_of_a_disabled_extension_are_refused_naming_it():
    from xsched.scheduler.server import Scheduler

    with config.set({"scheduler.extensions": ["progress"]}):
        s = Scheduler(register=False)
    s.peer_client[b"pc"], s.client_peer["c"] = "c", b"pc"
    with pytest.raises(ExtensionNotLoaded) as info:
        s._handle(b"pc", {"op": "publish-dataset", "name": "n", "keys": []}, [])
    err = info.value
    assert isinstance(err, BadMessage) and err.kind == "extension-not-loaded" and err.name == "datasets"
    assert str(err) == ("op 'publish-dataset' needs the scheduler extension 'datasets', which this scheduler does "
                        "not load (it loads progress); add 'datasets' to the config key scheduler.extensions (or "
                        "leave the key unset for all) and start the scheduler again")
    with pytest.raises(ExtensionNotLoaded, match="op 'upload-file-done' needs the scheduler extension 'uploads'"):
        s._handle(b"w1", {"op": "upload-file-done", "uid": "u"}, [])  # (from a worker too)
    with pytest.raises(ExtensionNotLoaded, match=r"restart\(environment=...\) needs the scheduler extension "
                                                 "'environments'"):
        asyncio.run(s._op_restart(b"pc", {"op": "restart", "environment": "e1"}, []))
    with pytest.raises(TypeError, match="cannot handle op 'no-such-op'"):  # an op nobody serves: as before
        s._handle(b"pc", {"op": "no-such-op"}, [])


def test_a_scheduler_with_no_extensions_still_registers_workers_and_clients():
    from xsched.scheduler.server import Scheduler

    with config.set({"scheduler.extensions": []}):
        s = Scheduler(register=False)
    s.listener = FakeListener()
    assert s.extensions == {} and s._extension_ops == {}
    s._op_register_client(b"pc", {"op": "register-client", "client": "c", **announce()}, [])
    s._op_register_worker(b"pw", {"op": "register-worker", "address": "tcp://w:1", "nthreads": 1, **announce()}, [])
    assert "tcp://w:1" in s.state.workers and s.listener.sent == []  # (no uploads to send)


# ----------------------------------------------------------------------------- the protocol's hooks
class Recorder(SchedulerExtension):
    name = "recorder"

    def __init__(self, scheduler):
        super().__init__(scheduler)
        self.seen: list = []

    def transition(self, ts, start, finish):
        self.seen.append((ts.key, start, finish))

    def add_worker(self, address, peer):
        self.seen.append(("add-worker", address))

    def remove_worker(self, address, reason):
        self.seen.append(("remove-worker", address, reason))

    def remove_client(self, client):
        self.seen.append(("remove-client", client))


def test_the_transition_hook_sees_every_transition_until_close():
    server = FakeServer()
    rec = Recorder(server)
    assert server.state.transition_hooks == [rec.transition]
    server.add_worker("w")
    server.handle(UpdateGraph("c", [NewTask("a-1", b"spec")], ["a-1"]), TaskFinished("w", "a-1", nbytes=8))
    assert rec.seen == [("a-1", "released", "waiting"), ("a-1", "waiting", "queued"),
                        ("a-1", "queued", "processing"), ("a-1", "processing", "memory")]
    rec.close()
    assert server.state.transition_hooks == []
    rec.close()  # twice is fine


def test_the_server_calls_each_hook_on_every_extension_and_survives_a_failing_one(caplog):
    from xsched.scheduler.server import Scheduler

    class Broken(SchedulerExtension):
        name = "broken"

        def remove_client(self, client):
            raise RuntimeError("boom")

    with config.set({"scheduler.extensions": []}):
        s = Scheduler(register=False)
    s.listener = FakeListener()
    s.listener.forget_peer = lambda peer: None
    s.extensions["broken"] = Broken(s)
    s.extensions["recorder"] = rec = Recorder(s)
    s.extensions["user-data"] = {"anything": 1}  # users keep their own things here too: no hooks
    s._op_register_client(b"pc", {"op": "register-client", "client": "c", **announce()}, [])
    s._op_register_worker(b"pw", {"op": "register-worker", "address": "tcp://w:1", "nthreads": 1, **announce()}, [])
    with caplog.at_level(logging.ERROR, logger="xsched.scheduler"):
        s._remove_client("c")
    assert "scheduler extension 'broken': remove_client('c',) failed" in caplog.text
    s._remove_worker("tcp://w:1", "connection lost")
    assert rec.seen == [
        ("add-worker", "tcp://w:1"), ("remove-client", "c"), ("remove-worker", "tcp://w:1", "connection lost")]


# ----------------------------------------------------------------------------- progress
def test_progress_counts_through_the_table_built_extension_and_drops_a_gone_client():
    server = served(["progress"])
    ext = server.extensions["progress"]
    server.add_worker("w")
    server.handle(UpdateGraph("c", [NewTask("inc-1", b"s"), NewTask("inc-2", b"s", ["inc-1"])], ["inc-2"]))
    reply = server.call("subscribe-progress", keys=["inc-2"], sub="s1")
    assert reply == {"sub": "s1", "groups": {"inc": [0, 0, 2]}, "done": False, "missing": []}
    server.handle(TaskFinished("w", "inc-1", nbytes=8))
    assert ext.flush() == 1 and server.to_clients[-1][1]["groups"] == {"inc": [1, 0, 2]}
    ext.remove_client("c")
    assert ext.subs == {} and ext.watch == {}
    asyncio.run(ext.close())
    assert ext.transition not in server.state.transition_hooks


# ----------------------------------------------------------------------------- datasets
def test_datasets_publish_get_list_unpublish():
    server = served(["datasets"])
    server.add_worker("w")
    server.handle(AddKeys("w", {"x": 8}, client="c"))
    h, payload = objs(data=[b"pickled", b"frames"])
    assert server.call("publish-dataset", payload=payload, name="n", keys=["x"], **h) == {"name": "n", "keys": 1}
    assert server.state.datasets["n"] == (["x"], [b"pickled", b"frames"])
    assert server.state.tasks["x"].who_wants == {"c", "dataset:n"}
    got = server.call("get-dataset", name="n")
    assert got.header == {"found": True} and got.raw == {"data": [b"pickled", b"frames"]}
    assert server.call("list-datasets") == {"names": ["n"]}
    assert server.call("get-dataset", name="m") == {"found": False, "names": ["n"]}
    assert server.call("unpublish-dataset", name="n") == {"found": True}
    assert server.state.datasets == {} and server.call("list-datasets") == {"names": []}
    assert server.call("unpublish-dataset", name="n") == {"found": False, "names": []}


def test_datasets_refuse_a_taken_name_unknown_keys_and_strangers():
    server = served(["datasets"])
    server.add_worker("w")
    server.handle(AddKeys("w", {"x": 8}, client="c"))
    server.call("publish-dataset", name="n", keys=["x"])
    assert "already published" in server.call("publish-dataset", name="n", keys=["x"])["refused"]
    assert server.call("publish-dataset", name="n", keys=["x"], override=True) == {"name": "n", "keys": 1}
    refused = server.call("publish-dataset", name="m", keys=["x", "gone-1"])["refused"]
    assert "gone-1" in refused and "m" not in server.state.datasets
    with pytest.raises(TypeError, match="non-empty string"):
        server.call("publish-dataset", name="", keys=[])
    with pytest.raises(PermissionError):
        server.call("get-dataset", peer=b"stranger", name="n")


# ----------------------------------------------------------------------------- uploads
def test_uploads_refuse_paths_and_other_file_kinds():
    server = served(["uploads"])
    for bad in ("../evil.py", "dir/mod.py", "data.txt", "..", ""):
        with pytest.raises(ValueError, match="not a plain .py, .zip or .egg"):
            asyncio.run(server.ops["upload-file"](b"pc", {"op": "upload-file", "filename": bad}, []))
    assert server.extensions["uploads"].files == {}


def test_uploads_reach_every_worker_and_later_ones_in_upload_order():
    server = served(["uploads"])
    ext = server.extensions["uploads"]

    async def main():
        peer_w1 = server.add_worker("w1")
        h, payload = objs(data=[b"x = ", b"1\n"])
        request = asyncio.ensure_future(server.ops["upload-file"](b"pc", {"op": "upload-file",
                                                                          "filename": "a.py", **h}, payload))
        await asyncio.sleep(0)
        (peer, msg, raw), = server.listener.sent
        assert peer == peer_w1 and msg["op"] == "upload-file" and msg["filename"] == "a.py"
        assert raw == {"data": [b"x = 1\n"]}
        assert not request.done()  # waits for the worker's answer
        server.ops["upload-file-done"](peer_w1, {"op": "upload-file-done", "uid": msg["uid"],
                                                 "filename": "a.py", "error": None}, [])
        return await request

    assert asyncio.run(main()) == {"results": {"w1": None}, "nbytes": 6}
    ext.files["b.zip"] = b"zip"
    ext.files["a.py"] = ext.files.pop("a.py")  # (a later upload of a name goes last)
    server.listener.sent.clear()
    ext.add_worker("w2", b"w2")  # the hook the server calls on register-worker
    assert [(p, m["filename"], m["uid"], r["data"]) for p, m, r in server.listener.sent] == [
        (b"w2", "b.zip", "", [b"zip"]), (b"w2", "a.py", "", [b"x = 1\n"])]


def test_an_upload_does_not_wait_for_a_worker_that_left():
    server = served(["uploads"])

    async def main():
        server.add_worker("w1")
        server.add_worker("w2")
        request = asyncio.ensure_future(server.ops["upload-file"](b"pc", {"op": "upload-file",
                                                                          "filename": "m.py"}, []))
        await asyncio.sleep(0)
        uid = server.listener.sent[0][1]["uid"]
        server.ops["upload-file-done"](b"w1", {"op": "upload-file-done", "uid": uid, "error": "SyntaxError: x"}, [])
        # the remove_worker hook alone (w2 still looks connected, so only the hook can end the wait)
        server.extensions["uploads"].remove_worker("w2", "connection lost")
        return await asyncio.wait_for(request, 30)

    assert asyncio.run(main()) == {"results": {"w1": "SyntaxError: x"}, "nbytes": 0}


def test_an_upload_with_no_workers_is_remembered_for_later_ones():
    server = served(["uploads"])
    reply = asyncio.run(server.ops["upload-file"](b"pc", {"op": "upload-file", "filename": "e.egg",
                                                          **objs(data=[b"egg"])[0]}, [b"egg"]))
    assert reply == {"results": {}, "nbytes": 3}
    assert server.extensions["uploads"].files == {"e.egg": b"egg"}


# ----------------------------------------------------------------------------- environments
def test_environments_go_to_one_leader_per_host_then_each_worker_gets_its_hosts_path():
    server = served(["environments"])
    ext = server.extensions["environments"]
    w = {addr: server.add_worker(addr, host) for addr, host in
         [("tcp://a:1", "hostA"), ("tcp://a:2", "hostA"), ("tcp://b:1", "hostB")]}

    def answer(op, fields):
        sent, server.listener.sent = server.listener.sent, []
        for peer, msg, _ in sent:
            ext._op_worker_answer(peer, {"op": op, "uid": msg["uid"], "seq": msg.get("seq"), **fields(peer)}, [])
        return sent

    async def main():
        start = asyncio.ensure_future(server.ops["environment-start"](b"pc", {"op": "environment-start",
                                                                              "uid": "e1"}, []))
        await asyncio.sleep(0)
        sent = answer("environment-ack", lambda peer: {"error": None})
        assert sorted(p for p, _, _ in sent) == [w["tcp://a:1"], w["tcp://b:1"]]  # one per host
        assert await start == {"hosts": ["hostA", "hostB"], "errors": {}}
        h, payload = objs(data=[b"chunk"])
        chunk = asyncio.ensure_future(server.ops["environment-chunk"](b"pc", {"op": "environment-chunk", "uid": "e1",
                                                                              "seq": 0, **h}, payload))
        await asyncio.sleep(0)
        sent = answer("environment-ack", lambda peer: {"error": None})
        assert all(raw == {"data": [b"chunk"]} and m["seq"] == 0 for _, m, raw in sent)
        assert await chunk == {"errors": {}}
        done = asyncio.ensure_future(server.ops["environment-done"](b"pc", {"op": "environment-done", "uid": "e1",
                                                                            "sha256": "ab"}, []))
        await asyncio.sleep(0)
        answer("environment-ready", lambda peer: {"path": f"/env/{peer.decode()[6]}", "error": None})
        return await done

    assert asyncio.run(main()) == {"paths": {"hostA": "/env/a", "hostB": "/env/b"}, "errors": {}}
    assert ext.environment_for("e1") == {"tcp://a:1": "/env/a", "tcp://a:2": "/env/a", "tcp://b:1": "/env/b"}
    assert ext.environment_for("never-shipped") == {}


def test_environments_need_workers_and_a_start_and_hear_when_a_leader_leaves():
    server = served(["environments"])
    with pytest.raises(ValueError, match="needs connected workers"):
        asyncio.run(server.ops["environment-start"](b"pc", {"op": "environment-start", "uid": "e1"}, []))
    with pytest.raises(KeyError, match="send environment-start first"):
        asyncio.run(server.ops["environment-chunk"](b"pc", {"op": "environment-chunk", "uid": "e2", "seq": 0}, []))
    server.add_worker("tcp://a:1", "hostA")

    async def main():
        start = asyncio.ensure_future(server.ops["environment-start"](b"pc", {"op": "environment-start",
                                                                              "uid": "e3"}, []))
        await asyncio.sleep(0)
        server.remove_worker("tcp://a:1")  # the remove_worker hook
        return await asyncio.wait_for(start, 5)

    reply = asyncio.run(main())
    assert reply["hosts"] == ["hostA"]
    assert reply["errors"] == {"tcp://a:1": "worker tcp://a:1 left while the environment was being shipped"}
