"""Versions, the pure parts: the protocol number each side announces, the scheduler's
refusal of an incompatible client or worker (naming both versions, keeping nothing of
it), a peer's refusal of an incompatible scheduler's reply, the schemas' optional fields,
package versions and the table of mismatches. Between real processes:
tests/cluster/test_versions.py."""

from __future__ import annotations

import pathlib
import pickle
import tomllib

import pytest

import xsched
from xsched.errors import XschedError
from xsched.protocol import ops, versions
from xsched.protocol.schemas import TO_SCHEDULER, BadMessage, ProtocolError
from xsched.protocol.versions import (
    PROTOCOL_VERSION, XSCHED_VERSION, IncompatibleVersionError, announce, announced_protocol, check_peer, check_reply,
    mismatch_table, mismatches, package_versions, refusal_in,
)

ROOT = pathlib.Path(__file__).parents[2]


def test_the_package_version_is_said_once():
    with open(ROOT / "pyproject.toml", "rb") as f:
        assert tomllib.load(f)["project"]["version"] == XSCHED_VERSION == xsched.__version__
    assert isinstance(PROTOCOL_VERSION, int) and announce() == {"protocol": PROTOCOL_VERSION, "version": XSCHED_VERSION}


def test_a_test_may_make_a_process_announce_another_protocol(monkeypatch):
    monkeypatch.setenv(versions.TEST_PROTOCOL_VAR, "99")
    assert announced_protocol() == 99 and announce()["protocol"] == 99 and package_versions()["protocol"] == 99


def test_the_scheduler_refuses_another_or_no_protocol_naming_both_versions():
    check_peer({"protocol": PROTOCOL_VERSION, "version": "0.0.1"}, "client")  # the package may differ
    with pytest.raises(IncompatibleVersionError) as info:
        check_peer({"protocol": PROTOCOL_VERSION + 1, "version": "9.9.9"}, "worker tcp://10.0.0.5:4000")
    text = str(info.value)
    assert f"protocol {PROTOCOL_VERSION} (xsched {XSCHED_VERSION})" in text
    assert f"protocol {PROTOCOL_VERSION + 1} (xsched 9.9.9)" in text and "worker tcp://10.0.0.5:4000" in text
    with pytest.raises(IncompatibleVersionError, match="announced no protocol version"):
        check_peer({"client": "old"}, "client")


def test_a_client_or_worker_refuses_a_scheduler_of_another_protocol():
    check_reply({"scheduler_id": "s", **announce()}, "client", "tcp://h:8786")
    with pytest.raises(IncompatibleVersionError, match="the scheduler at tcp://h:8786 announced no protocol"):
        check_reply({"scheduler_id": "s"}, "client", "tcp://h:8786")  # a scheduler older than versions
    with pytest.raises(IncompatibleVersionError) as info:
        check_reply({"protocol": 7, "version": "3.0"}, "worker", "tcp://h:8786")
    assert "protocol 7 (xsched 3.0)" in str(info.value) and f"protocol {PROTOCOL_VERSION}" in str(info.value)


def test_the_refusal_is_a_refusal_and_crosses_the_wire_as_text():
    e = IncompatibleVersionError("protocol 2 here, 1 there")
    assert isinstance(e, ProtocolError) and isinstance(e, XschedError) and isinstance(e, ValueError)
    assert e.kind == "incompatible version"  # (comm logs refusals once per peer, without a traceback)
    again = pickle.loads(pickle.dumps(e))
    assert type(again) is IncompatibleVersionError and str(again) == str(e)
    wire = RuntimeError(f"{type(e).__name__}: {e}")  # what an error reply carries (comm._describe_error)
    found = refusal_in(wire)
    assert type(found) is IncompatibleVersionError and str(found) == str(e)
    assert refusal_in(RuntimeError("PermissionError: register first")) is None
    assert xsched.IncompatibleVersionError is IncompatibleVersionError


class FakeListener:
    def __init__(self):
        self.sent: list = []

    def send(self, peer, msg, raw=None):
        self.sent.append((peer, msg, raw))


def test_the_scheduler_keeps_nothing_of_a_refused_peer_and_announces_itself_to_the_others():
    from xsched.scheduler.server import Scheduler

    s = Scheduler(register=False)
    s.listener = FakeListener()
    with pytest.raises(IncompatibleVersionError, match="the client announced no protocol version"):
        s._op_register_client(b"old", {"op": ops.REGISTER_CLIENT, "client": "old"}, [])
    with pytest.raises(IncompatibleVersionError, match=f"speaks xsched protocol {PROTOCOL_VERSION + 5}"):
        s._op_register_worker(b"w", {"op": ops.REGISTER_WORKER, "address": "tcp://w:1",
                                     "protocol": PROTOCOL_VERSION + 5, "version": "0.9"}, [])
    assert s.peer_client == {} and s.peer_worker == {} and "old" not in s.state.clients and s.state.workers == {}
    reply = s._op_register_client(b"new", {"op": ops.REGISTER_CLIENT, "client": "new", **announce()}, [])
    assert reply["protocol"] == PROTOCOL_VERSION and reply["version"] == XSCHED_VERSION
    reply = s._op_register_worker(b"w", {"op": ops.REGISTER_WORKER, "address": "tcp://w:1", **announce()}, [])
    assert reply["protocol"] == PROTOCOL_VERSION and "tcp://w:1" in s.state.workers
    assert s._op_versions(b"new", {"op": ops.VERSIONS}, [])["versions"]["xsched"] == XSCHED_VERSION


def test_the_version_fields_are_optional_and_checked():
    TO_SCHEDULER.check({"op": ops.REGISTER_CLIENT, "client": "c"})  # an old client: heard, then refused
    TO_SCHEDULER.check({"op": ops.REGISTER_CLIENT, "client": "c", **announce()})
    TO_SCHEDULER.check({"op": ops.REGISTER_WORKER, "address": "tcp://w:1", "hostname": "node", **announce()})
    with pytest.raises(BadMessage, match="protocol"):
        TO_SCHEDULER.check({"op": ops.REGISTER_CLIENT, "protocol": "1"})
    with pytest.raises(BadMessage, match="version"):
        TO_SCHEDULER.check({"op": ops.REGISTER_WORKER, "address": "tcp://w:1", "version": 1})


def test_package_versions_name_python_xsched_and_the_packages_pickles_need():
    v = package_versions()
    assert {"python", "xsched", "protocol", "cloudpickle", "pyzmq", "msgpack", "numpy", "pandas"} <= set(v)
    import numpy
    import zmq

    assert v["numpy"] == numpy.__version__ and v["pyzmq"] == zmq.__version__ and v["xsched"] == XSCHED_VERSION


def test_mismatches_and_their_table():
    base = {"python": "3.11.4", "xsched": "0.1.0", "numpy": "2.0.0", "pandas": None}
    same = {"client": base, "scheduler": dict(base, python="3.11.9"), "workers": {"w1": base, "w2": base,
                                                                                  "w3": {"error": "gone"}}}
    assert mismatches(same) == {}  # python by major.minor; a worker that did not answer is left out
    differ = {"client": base, "scheduler": base,
              "workers": {"w1": base, "w2": dict(base, numpy="1.26.4", pandas="2.2.0", python="3.12.1")}}
    found = mismatches(differ)
    assert sorted(found) == ["numpy", "pandas", "python"]
    assert found["numpy"] == {"client": "2.0.0", "scheduler": "2.0.0", "workers": {"w1": "2.0.0", "w2": "1.26.4"}}
    table = mismatch_table(found).splitlines()
    assert table[0].split() == ["package", "client", "scheduler", "workers"]
    rows = {line.split()[0]: line for line in table[2:]}
    assert rows["numpy"].split() == ["numpy", "2.0.0", "2.0.0", "1.26.4,", "2.0.0"]
    assert "not installed" in rows["pandas"] and "2.2.0" in rows["pandas"]
