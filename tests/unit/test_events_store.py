"""The events extension's pure parts (xsched/scheduler/extensions/events.py): the bounded
store, subscriptions and routing, and the extension's ops driven without sockets. On a
real cluster: tests/cluster/test_events.py."""

from __future__ import annotations

import msgpack
import pytest

from xsched.protocol.schemas import CLIENT_FROM_SCHEDULER, BadMessage
from xsched.scheduler.extensions.events import EventsExtension, EventStore, packed_size, recipients
from xsched.scheduler.state import NewTask, UpdateGraph

from tests.support.fake_scheduler import FakeScheduler


# ----------------------------------------------------------------------------- the store
def test_events_are_kept_per_topic_oldest_first_and_bounded_per_topic():
    store = EventStore(max_per_topic=3)
    for i in range(5):
        store.add("a", float(i), {"i": i})
    store.add("b", 9.0, "only")
    assert store.get("a") == [(2.0, {"i": 2}), (3.0, {"i": 3}), (4.0, {"i": 4})]
    assert store.get("b") == [(9.0, "only")] and store.get("nothing") == []
    assert store.all() == {"a": store.get("a"), "b": store.get("b")}
    assert (store.count, store.dropped, len(store)) == (6, 2, 4)
    assert store.nbytes == sum(packed_size(m) for evs in store.all().values() for _, m in evs)


def test_the_topic_whose_last_event_is_oldest_goes_first():
    store = EventStore(max_topics=2)
    store.add("a", 0.0, 1)
    store.add("b", 1.0, 2)
    store.add("a", 2.0, 3)  # a is now the most recent topic
    store.add("c", 3.0, 4)
    assert store.topics() == ["a", "c"]
    assert store.get("b") == [] and store.get("a") == [(0.0, 1), (2.0, 3)]
    assert store.dropped == 1 and store.nbytes == 3 * packed_size(1)


def test_the_byte_budget_drops_the_oldest_events_of_any_topic():
    store = EventStore(max_bytes=10, measure=len)
    store.add("a", 0.0, "aaaa")
    store.add("b", 1.0, "bbbb")
    store.add("a", 2.0, "cccc")  # 12 bytes: the oldest ("aaaa", topic a) goes
    assert store.all() == {"b": [(1.0, "bbbb")], "a": [(2.0, "cccc")]} and store.nbytes == 8
    store.add("b", 3.0, "x" * 11)  # larger than the whole budget: the older events go first, then it
    assert store.nbytes == 0 and store.all() == {}
    assert store.count == 4


def test_a_long_run_keeps_the_bookkeeping_bounded():
    """Events dropped by the per-topic bound leave stale entries in the byte-order queue;
    they are compacted away, so memory stays bounded however many events pass."""
    store = EventStore(max_per_topic=10, max_topics=5, max_bytes=10_000)
    for i in range(50_000):
        store.add(f"t{i % 7}", float(i), i)
    assert len(store) == sum(map(len, store.all().values())) <= 50
    assert len(store._order) <= 2 * len(store) + 1024
    assert store.count == 50_000 and store.dropped == 50_000 - len(store)
    assert store.nbytes == sum(packed_size(m) for evs in store.all().values() for _, m in evs)


def test_bounds_must_be_positive():
    with pytest.raises(ValueError):
        EventStore(max_per_topic=0)


def test_subscriptions():
    store = EventStore()
    store.subscribe("c1", "t")
    store.subscribe("c2", "t")
    store.subscribe("c1", "u")
    assert store.subscribers("t") == {"c1", "c2"}
    store.unsubscribe("c2", "t")
    store.unsubscribe("c2", "never")  # (harmless)
    assert store.subscribers("t") == {"c1"}
    store.remove_client("c1")
    assert store.subscribers("t") == set() and store.subscribers("u") == set() and store._subscribers == {}


def test_prints_go_to_the_clients_wanting_the_key_or_to_everyone():
    store = EventStore()
    wants = {"f-1": {"c1", "dataset:x"}, "f-2": set()}.get
    connected = ["c1", "c2"]
    assert recipients(store, "print", {"key": "f-1"}, wants, connected) == {"c1"}  # (a dataset is no client)
    assert recipients(store, "warn", {"key": "f-2"}, wants, connected) == {"c1", "c2"}  # nobody wants it
    assert recipients(store, "print", {"key": "gone"}, wants, connected) == {"c1", "c2"}
    assert recipients(store, "print", "not a dict", wants, connected) == set()
    assert recipients(store, "other", {"key": "f-1"}, wants, connected) == set()
    store.subscribe("c2", "print")
    assert recipients(store, "print", {"key": "f-1"}, wants, connected) == {"c1", "c2"}


# ----------------------------------------------------------------------------- the extension
class FakeServer(FakeScheduler):
    """What the events extension uses of the Scheduler: two clients."""

    def __init__(self):
        super().__init__(clients={"c1": b"p1", "c2": b"p2"}, validate=False)

    def call(self, op, peer=b"p1", **fields):
        return super().call(op, peer, **fields)


def test_the_extension_keeps_pushes_and_serves_events():
    server = FakeServer()
    ext = EventsExtension(server)
    assert set(server.ops) == {"log-event", "get-events", "subscribe-topic", "unsubscribe-topic"}
    assert server.call("subscribe-topic", topic="t") == {}
    assert server.call("log-event", topic="t", msg={"a": 1}, rid=1) == {}
    assert server.call("log-event", topic=["t", "u"], msg=2) is None  # (no request id: no reply)
    assert [c for c, _ in server.to_clients] == ["c1", "c1"]  # u has no subscriber
    for _, msg in server.to_clients:
        CLIENT_FROM_SCHEDULER.check(msg)
    assert [m["msg"] for _, m in server.to_clients] == [{"a": 1}, 2]
    events = server.call("get-events", topic="t")["events"]
    assert [m for _, m in events] == [{"a": 1}, 2]
    assert set(server.call("get-events")["events"]) == {"t", "u"}
    assert server.call("unsubscribe-topic", topic="t") == {}
    server.call("log-event", topic="t", msg=3)
    assert len(server.to_clients) == 2
    ext.store.subscribe("c2", "t")
    ext.remove_client("c2")
    assert ext.store.subscribers("t") == set()
    with pytest.raises(PermissionError):
        server.call("subscribe-topic", peer=b"stranger", topic="t")
    # messages only an in-process caller could pass are refused, not raised as bugs
    with pytest.raises(BadMessage, match="does not pack"):
        ext.log_event("t", object())


def test_a_print_goes_to_the_client_that_wants_the_task():
    server = FakeServer()
    EventsExtension(server)
    server.state.handle(UpdateGraph("c2", [NewTask("work-1", b"")], ["work-1"]))
    server.call("log-event", topic="print", msg={"key": "work-1", "text": "hello\n", "file": "stdout"})
    assert [(c, m["topic"], m["msg"]["text"]) for c, m in server.to_clients] == [("c2", "print", "hello\n")]


def test_messages_from_the_wire_always_pack_again():
    """What a peer sent (msgpack, decoded) is measured and forwarded without error."""
    odd = {1: [b"\x00", 2**64 - 1, -2**63, 1.5, None, True], "k": {"n": []}}
    wire = msgpack.unpackb(msgpack.packb(odd, use_bin_type=True), raw=False, strict_map_key=False)
    store = EventStore()
    store.add("t", 0.0, wire)
    assert store.get("t") == [(0.0, odd)]
