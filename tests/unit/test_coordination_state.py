"""Locks, semaphores, queues, variables and events: the pure CoordinationState alone (events
in, instructions out), then the ``coordination`` extension driven without sockets, then the
client-side handles' checks that need no cluster. What they do on a real cluster is in
tests/cluster/test_coordination.py."""

from __future__ import annotations

import ast
import asyncio
import pathlib
import pickle

import pytest

from xsched.protocol.schemas import MAX_SHARED_VALUE, TO_SCHEDULER, BadMessage
from xsched.scheduler.extensions.coordination import CoordinationExtension
from xsched.scheduler.extensions.coordination_state import (
    Acquire, ClientGone, CoordinationState, Drop, EventClear, EventSet, EventWait, Expire, Hold, Item, Owner,
    Publish, QueueGet, QueuePut, Release, Reply, Restarted, Subscribe, Unhold, Unsubscribe, VariableDelete,
    VariableGet, VariableSet, WorkerGone,
)
from xsched.scheduler.state import AddKeys, AddWorker, RemoveClient

from tests.support.fake_scheduler import FakeScheduler

XSCHED = pathlib.Path(__file__).parents[2] / "xsched"
A, B, C = Owner("a"), Owner("b"), Owner("c", worker="tcp://w1:1")


class CoordinationState(CoordinationState):  # noqa: F811 - every test checks the invariants after each event
    def handle(self, *events):
        out = []
        for ev in events:
            out += super().handle(ev)
            self.validate()
        return out


def replies(out):
    """wid -> header of every Reply (in order), for short assertions."""
    return {i.wid: i.header for i in out if isinstance(i, Reply)}


def item(*keys, data=b"x"):
    return Item([data], list(keys))


# ----------------------------------------------------------------------------- purity
def test_the_state_module_imports_nothing_impure():
    tree = ast.parse((XSCHED / "scheduler/extensions/coordination_state.py").read_text())
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, "the pure state imports nothing of xsched (its package __init__ is impure)"
            imported.add(node.module.split(".")[0])
    assert imported <= {"__future__", "collections", "dataclasses", "typing"}, imported


# ----------------------------------------------------------------------------- locks
def test_a_lock_is_granted_in_order_of_asking_and_passed_on_release():
    s = CoordinationState()
    assert replies(s.handle(Acquire("lock", "x", "L1", A, 1))) == {1: {"acquired": True}}
    assert s.handle(Acquire("lock", "x", "L2", B, 2), Acquire("lock", "x", "L3", C, 3)) == []
    assert set(s.waiting) == {2, 3}
    out = s.handle(Release("lock", "x", "L1", A, 4))
    assert replies(out) == {4: {"released": True}, 2: {"acquired": True}}
    assert s.leases[("lock", "x")].holders == {"L2": B} and set(s.waiting) == {3}
    out = s.handle(Release("lock", "x", "L2", B, 5), Release("lock", "x", "L3", C, 6))
    assert replies(out)[5] == {"released": True} and replies(out)[3] == {"acquired": True}
    assert replies(out)[6] == {"released": True}
    assert s.leases == {} and s.waiting == {}  # nothing kept once idle


def test_releasing_a_lock_not_held_says_so_naming_it():
    s = CoordinationState()
    s.handle(Acquire("lock", "x", "L1", A, 1))
    for ev in (Release("lock", "x", "nope", A, 2), Release("lock", "x", "L1", B, 3), Release("lock", "y", "L", A, 4)):
        [r] = s.handle(ev)
        assert r.header["released"] is False and "is not held" in r.header["error"], r
    assert "Lock 'x'" in r.header["error"] or "Lock 'y'" in r.header["error"]
    assert s.leases[("lock", "x")].holders == {"L1": A}  # another client cannot release it


def test_a_non_blocking_acquire_answers_at_once_and_keeps_nothing():
    s = CoordinationState()
    s.handle(Acquire("lock", "x", "L1", A, 1))
    assert replies(s.handle(Acquire("lock", "x", "L2", B, 2, blocking=False))) == {2: {"acquired": False}}
    assert s.waiting == {}


def test_a_timed_out_acquire_leaves_the_line_and_the_next_moves_up():
    s = CoordinationState()
    s.handle(Acquire("lock", "x", "L1", A, 1), Acquire("lock", "x", "L2", B, 2), Acquire("lock", "x", "L3", C, 3))
    assert replies(s.handle(Expire(2))) == {2: {"acquired": False}}
    assert s.handle(Expire(2)) == []  # (a timer firing late: nothing)
    assert replies(s.handle(Release("lock", "x", "L1", A, 4)))[3] == {"acquired": True}


def test_a_lock_whose_holder_client_leaves_goes_to_the_next():
    s = CoordinationState()
    s.handle(Acquire("lock", "x", "L1", A, 1), Acquire("lock", "x", "L2", A, 2), Acquire("lock", "x", "L3", B, 3))
    out = s.handle(ClientGone("a"))
    assert Drop(2) in out  # its own waiting request: nobody to answer
    assert replies(out) == {3: {"acquired": True}}
    assert s.leases[("lock", "x")].holders == {"L3": B}


def test_leases_of_a_worker_that_left_are_released_and_its_waiters_told():
    s = CoordinationState()
    s.handle(Acquire("semaphore", "s", "S1", C, 1, max_leases=1), Acquire("semaphore", "s", "S2", C, 2, max_leases=1),
             Acquire("semaphore", "s", "S3", A, 3, max_leases=1))
    out = s.handle(WorkerGone("tcp://w1:1"))
    assert replies(out) == {2: {"refused": "the worker tcp://w1:1 of this request left the cluster"},
                            3: {"acquired": True}}
    assert s.lease_count("semaphore", "s") == 1


def test_an_abandoned_acquire_leaves_the_line_or_gives_back_its_grant():
    s = CoordinationState()
    s.handle(Acquire("lock", "x", "L1", A, 1), Acquire("lock", "x", "L2", B, 2))
    out = s.handle(Release("lock", "x", "L2", B, 3, abandon=True))  # gave up while waiting
    assert replies(out) == {2: {"acquired": False}, 3: {"released": False}} and s.waiting == {}
    s.handle(Release("lock", "x", "L1", A, 4), Acquire("lock", "x", "L5", B, 5))
    out = s.handle(Release("lock", "x", "L5", B, 6, abandon=True))  # granted, but the reply came too late
    assert replies(out) == {6: {"released": True}} and s.leases == {}


def test_a_semaphore_admits_max_leases_and_refuses_another_max():
    s = CoordinationState()
    out = s.handle(*[Acquire("semaphore", "s", f"S{i}", A, i, max_leases=2) for i in range(1, 4)])
    assert replies(out) == {1: {"acquired": True}, 2: {"acquired": True}}
    assert s.lease_count("semaphore", "s") == 2 and set(s.waiting) == {3}
    [r] = s.handle(Acquire("semaphore", "s", "S9", B, 9, max_leases=3))
    assert "max_leases=2" in r.header["refused"] and "max_leases=3" in r.header["refused"]
    [r] = s.handle(Acquire("semaphore", "s", "S1", B, 10, max_leases=2))
    assert "taken already" in r.header["refused"]
    assert replies(s.handle(Release("semaphore", "s", "S2", A, 11)))[3] == {"acquired": True}
    # a lock and a semaphore of one name are different things
    assert replies(s.handle(Acquire("lock", "s", "L", A, 12))) == {12: {"acquired": True}}


# ----------------------------------------------------------------------------- queues
def test_a_queue_is_first_in_first_out_and_hands_keys_to_the_taker():
    s = CoordinationState()
    out = s.handle(QueuePut("q", item("k1"), A, 1))
    [hold] = [i for i in out if isinstance(i, Hold)]
    assert hold.keys == ["k1"] and hold.holder.startswith("coordination:queue:q:")
    assert replies(out) == {1: {"put": True}}
    s.handle(QueuePut("q", item(data=b"plain"), A, 2))
    assert s.qsize("q") == 2
    out = s.handle(QueueGet("q", B, 3))
    # the taker's client holds the keys before the item lets go of them
    assert out == [Hold("b", ["k1"]), Unhold(hold.holder), Reply(3, {"n": 1}, out[2].items)]
    assert out[2].items[0].keys == ["k1"]
    [r] = s.handle(QueueGet("q", B, 4))
    assert r.items[0].frames == [b"plain"]  # (no keys: nothing to hold)
    assert s.queues == {}


def test_a_waiting_get_is_served_by_the_next_put_and_times_out_otherwise():
    s = CoordinationState()
    assert s.handle(QueueGet("q", B, 1), QueueGet("q", C, 2)) == []
    out = s.handle(QueuePut("q", item(), A, 3))
    assert set(replies(out)) == {3, 1}
    assert replies(s.handle(Expire(2))) == {2: {"timed_out": True}}
    assert s.queues == {} and s.waiting == {}
    assert replies(s.handle(QueueGet("q", B, 4, blocking=False))) == {4: {"timed_out": True}}


def test_a_full_queue_makes_puts_wait_until_a_get_makes_room():
    s = CoordinationState()
    s.handle(QueuePut("q", item(data=b"1"), A, 1, maxsize=1))
    assert s.handle(QueuePut("q", item(data=b"2"), A, 2, maxsize=1)) == []
    assert replies(s.handle(QueuePut("q", item(data=b"3"), A, 3, maxsize=1, blocking=False))) == {
        3: {"timed_out": True}}
    out = s.handle(QueueGet("q", B, 4))
    assert replies(out) == {4: {"n": 1}, 2: {"put": True}}
    assert [i.frames for i in s.queues["q"].items] == [[b"2"]]
    [r] = s.handle(QueueGet("q", B, 5, batch=2))
    assert "at most 1 items" in r.header["refused"]


def test_batches_take_all_there_are_or_wait_for_n():
    s = CoordinationState()
    assert replies(s.handle(QueueGet("q", B, 1, batch=True))) == {1: {"n": 0}}
    assert s.handle(QueueGet("q", B, 2, batch=2)) == []
    out = s.handle(QueuePut("q", item(data=b"1"), A, 3))
    assert replies(out) == {3: {"put": True}}  # one is not enough for a batch of two
    out = s.handle(QueuePut("q", item(data=b"2"), A, 4))
    r = [i for i in out if isinstance(i, Reply) and i.wid == 2][0]
    assert r.header == {"n": 2} and [i.frames for i in r.items] == [[b"1"], [b"2"]]


# ----------------------------------------------------------------------------- pub/sub
def test_a_message_goes_to_every_subscription_there_is_when_published():
    s = CoordinationState()
    assert replies(s.handle(Publish("t", item("k0"), 1))) == {1: {"subscribers": 0}}  # (dropped: nobody)
    assert s.queues == {}
    assert replies(s.handle(Subscribe("t", "qa", A, 2), Subscribe("t", "qc", C, 3))) == {
        2: {"subscribers": 1}, 3: {"subscribers": 2}}
    out = s.handle(Publish("t", item("k1", data=b"m1"), 4))
    holds = [i for i in out if isinstance(i, Hold)]
    assert [h.keys for h in holds] == [["k1"], ["k1"]] and len({h.holder for h in holds}) == 2  # (a copy each)
    assert replies(out) == {4: {"subscribers": 2}}
    s.handle(Publish("t", item(data=b"m2"), 5))
    [r] = [i for i in s.handle(QueueGet("qa", A, 6, batch=True)) if isinstance(i, Reply)]
    assert [i.frames for i in r.items] == [[b"m1"], [b"m2"]]
    assert s.qsize("qc") == 2 and s.qsize("qa") == 0
    # a get waiting on a subscription is served by the next message
    assert s.handle(QueueGet("qa", A, 7)) == []
    assert 7 in replies(s.handle(Publish("t", item(data=b"m3"), 8)))


def test_a_subscription_ends_with_its_owner_or_unsubscribe_and_its_messages_let_go():
    s = CoordinationState()
    s.handle(Subscribe("t", "qa", A, 1), Subscribe("t", "qc", C, 2), Subscribe("u", "qb", B, 3))
    s.handle(Publish("t", item("k"), 4))
    holder = s.queues["qc"].items[0].holder
    out = s.handle(WorkerGone("tcp://w1:1"))
    assert Unhold(holder) in out and "qc" not in s.queues and set(s.topics["t"]) == {"qa"}
    assert s.handle(QueueGet("qb", B, 5)) == []
    out = s.handle(Unsubscribe("u", "qb", 6))
    assert replies(out) == {5: {"timed_out": True}, 6: {}} and "u" not in s.topics and s.waiting == {}
    s.handle(ClientGone("a"))
    assert s.topics == {} and s.queues == {}
    assert replies(s.handle(Unsubscribe("t", "qa", 7))) == {7: {}}  # (again: nothing to end)
    s.handle(Subscribe("t", "qx", A, 8))
    assert "belongs to another topic" in replies(s.handle(Subscribe("v", "qx", A, 9)))[9]["refused"]


def test_queue_items_outlive_the_client_that_put_them_and_waiters_of_the_gone_are_dropped():
    s = CoordinationState()
    s.handle(QueuePut("q", item("k"), A, 1), QueueGet("r", A, 2))
    out = s.handle(ClientGone("a"))
    assert out == [Drop(2)]
    assert s.qsize("q") == 1 and "r" not in s.queues


# ----------------------------------------------------------------------------- variables
def test_a_variable_replaces_its_value_holding_the_new_keys_before_letting_the_old_go():
    s = CoordinationState()
    out = s.handle(VariableSet("v", item("k1"), 1))
    [h1] = [i for i in out if isinstance(i, Hold)]
    out = s.handle(VariableSet("v", item("k1", "k2"), 2))
    assert [type(i) for i in out] == [Hold, Unhold, Reply] and out[1] == Unhold(h1.holder)
    out = s.handle(VariableGet("v", B, 3))
    assert out[0] == Hold("b", ["k1", "k2"]) and out[1].header == {"n": 1}  # the value stays
    assert s.variables["v"].keys == ["k1", "k2"]
    out = s.handle(VariableDelete("v", 4))
    assert [type(i) for i in out] == [Unhold, Reply] and out[1].header == {"deleted": True}
    assert replies(s.handle(VariableDelete("v", 5))) == {5: {"deleted": False}}


def test_a_variable_get_waits_for_a_set_or_times_out():
    s = CoordinationState()
    assert s.handle(VariableGet("v", B, 1), VariableGet("v", C, 2)) == []
    assert replies(s.handle(Expire(2))) == {2: {"timed_out": True}}
    out = s.handle(VariableSet("v", item(data=b"on"), 3))
    assert replies(out) == {3: {}, 1: {"n": 1}}
    assert s.variable_waiters == {} and s.waiting == {}
    assert replies(s.handle(VariableGet("w", B, 4, blocking=False))) == {4: {"timed_out": True}}


# ----------------------------------------------------------------------------- restart
def test_a_restart_keeps_stored_values_and_marks_those_holding_futures_lost():
    s = CoordinationState()
    s.handle(QueuePut("q", item("k1"), A, 1, maxsize=2), QueuePut("q", item(data=b"plain"), A, 2, maxsize=2),
             QueuePut("q", item("k3"), A, 3, maxsize=2),  # waits: the queue is full
             VariableSet("v", item("k2"), 4), VariableSet("w", item(data=b"flag"), 5))
    why = "the cluster was restarted by c (client.restart())"
    assert s.handle(Restarted(why)) == []  # nothing to hold or let go: the scheduler forgot every key
    assert s.qsize("q") == 2 and s.variables["w"].frames == [b"flag"]
    # a value with futures comes out saying so; the taker is not made to hold the gone keys
    out = s.handle(QueueGet("q", B, 6))
    assert not any(isinstance(i, Hold) for i in out)
    assert replies(out)[6] == {"n": 1, "lost": [[0, f"Queue 'q' held this future when {why}"]]}
    assert replies(out)[3] == {"put": True}  # the waiting put got in, marked too
    out = s.handle(QueueGet("q", B, 7, batch=True))
    assert replies(out)[7] == {"n": 2, "lost": [[1, f"Queue 'q' held this future when {why}"]]}
    assert [i.frames for i in out[-1].items][0] == [b"plain"]
    out = s.handle(VariableGet("v", B, 8), VariableGet("w", B, 9))
    assert replies(out) == {8: {"n": 1, "lost": [[0, f"Variable 'v' held this future when {why}"]]}, 9: {"n": 1}}
    # what is put afterwards is whole again
    out = s.handle(VariableSet("v", item("k9"), 10), VariableGet("v", B, 11))
    assert Hold("b", ["k9"]) in out and replies(out)[11] == {"n": 1}


# ----------------------------------------------------------------------------- events
def test_an_event_wakes_every_waiter_and_later_waits_return_at_once():
    s = CoordinationState()
    assert s.handle(*[EventWait("e", A, i) for i in range(1, 11)]) == []
    out = s.handle(EventSet("e", 11))
    assert replies(out) == {11: {}, **{i: {"set": True} for i in range(1, 11)}}
    assert s.is_set("e") and replies(s.handle(EventWait("e", B, 12))) == {12: {"set": True}}
    s.handle(EventClear("e", 13))
    assert not s.is_set("e") and s.handle(EventWait("e", B, 14)) == []
    assert replies(s.handle(Expire(14))) == {14: {"set": False}}
    assert replies(s.handle(EventWait("e", B, 15, blocking=False))) == {15: {"set": False}}
    assert s.event_waiters == {} and s.waiting == {}


def test_an_unknown_event_is_refused():
    with pytest.raises(TypeError, match="cannot handle"):
        CoordinationState().handle(object())


# ----------------------------------------------------------------------------- the extension, no sockets
class Server(FakeScheduler):
    """What the extension uses of the Scheduler: a state machine, the op table, client peers;
    the coordination state is validated after every request."""

    def __init__(self):
        super().__init__(clients={"a": b"pa", "b": b"pb"})
        self.state.handle(AddWorker("tcp://w1:1", 1))

    def call(self, op, peer=b"pa", payload=(), **fields):
        try:
            return super().call(op, peer, payload, **fields)
        finally:
            self.extensions["coordination"].state.validate()


def served():
    server = Server()
    server.extensions["coordination"] = CoordinationExtension(server)
    return server, server.extensions["coordination"]


def header(reply):
    return reply.header if hasattr(reply, "header") else reply


def test_the_extension_serves_every_op_with_a_schema():
    server, ext = served()
    assert set(server.ops) == set(CoordinationExtension.OPS) and set(server.ops) <= set(TO_SCHEDULER)
    assert "coordination" in repr(ext).lower()


def test_blocking_requests_are_answered_when_granted_or_timed_out():
    async def main():
        server, ext = served()
        assert server.call("lock-acquire", name="x", lease="L1") == {"acquired": True}
        waiting = server.call("lock-acquire", peer=b"pb", name="x", lease="L2")
        timed = server.call("lock-acquire", peer=b"pb", name="x", lease="L3", timeout=0.01)
        assert asyncio.iscoroutine(waiting) and asyncio.iscoroutine(timed)
        t_wait, t_timed = asyncio.ensure_future(waiting), asyncio.ensure_future(timed)
        assert await asyncio.wait_for(t_timed, 5) == {"acquired": False}
        assert not t_wait.done()
        assert server.call("lock-release", name="x", lease="L1") == {"released": True}
        assert await asyncio.wait_for(t_wait, 5) == {"acquired": True}
        assert ext._waiting == {} and ext._timers == {}
        got = server.call("lock-release", name="x", lease="L1")
        assert got["released"] is False and "Lock 'x'" in got["error"]
        # a non-blocking acquire (timeout 0) is answered at once
        assert server.call("lock-acquire", name="x", lease="L4", timeout=0) == {"acquired": False}

    asyncio.run(main())


def test_a_gone_client_ends_its_waiting_requests_unanswered_and_frees_its_leases():
    async def main():
        server, ext = served()
        server.call("semaphore-acquire", name="s", lease="S1", max_leases=1)
        mine = asyncio.ensure_future(server.call("semaphore-acquire", name="s", lease="S2", max_leases=1))
        theirs = asyncio.ensure_future(server.call("semaphore-acquire", peer=b"pb", name="s", lease="S3",
                                                   max_leases=1))
        await asyncio.sleep(0)
        ext.remove_client("a")
        with pytest.raises(asyncio.CancelledError):
            await mine  # (the listener then sends no reply)
        assert await asyncio.wait_for(theirs, 5) == {"acquired": True}
        assert server.call("semaphore-value", name="s") == {"value": 1}

    asyncio.run(main())


def test_a_task_on_a_worker_that_leaves_loses_its_lease():
    server, ext = served()
    assert server.call("lock-acquire", name="x", lease="L1", worker="tcp://w1:1") == {"acquired": True}
    assert server.call("lock-acquire", peer=b"pb", name="y", lease="L2", worker="tcp://unknown:1") == {
        "acquired": True}
    ext.remove_worker("tcp://w1:1", "lost")
    assert server.call("lock-acquire", peer=b"pb", name="x", lease="L3", timeout=0) == {"acquired": True}
    ext.remove_worker("tcp://unknown:1", "lost")  # (not a worker the scheduler knew: nothing tied to it)
    assert ext.state.lease_count("lock", "y") == 1


def test_queue_items_hold_their_futures_until_taken():
    server, ext = served()
    server.handle(AddKeys("tcp://w1:1", {"k": 8}, client="a"))
    h = {"_objs": [["data", 1]]}
    assert server.call("queue-put", payload=[b"frames"], name="q", keys=["k"], **h) == {"put": True}
    holder = ext.state.queues["q"].items[0].holder
    assert server.state.tasks["k"].who_wants == {"a", holder}
    server.handle(RemoveClient("a"))  # the putting client leaves: the data stays
    assert server.state.tasks["k"].state == "memory"
    assert server.call("queue-size", name="q") == {"size": 1}
    got = server.call("queue-get", peer=b"pb", name="q")
    assert got.header == {"n": 1} and got.raw == {"item0": [b"frames"]}
    assert server.state.tasks["k"].who_wants == {"b"} and holder not in server.state.clients


def test_values_too_large_or_with_lost_futures_are_refused():
    server, ext = served()
    h = {"_objs": [["data", 2]]}
    big = [b"x" * MAX_SHARED_VALUE, b"y"]
    refused = server.call("queue-put", payload=big, name="q", **h)["refused"]
    assert "Queue 'q'" in refused and "client.scatter" in refused
    refused = server.call("variable-set", payload=[b"a", b"b"], name="v", keys=["gone-1"], **h)["refused"]
    assert "Variable 'v'" in refused and "gone-1" in refused
    assert ext.state.queues == {} and ext.state.variables == {}


def test_variables_and_events_through_the_extension():
    async def main():
        server, ext = served()
        h = {"_objs": [["data", 1]]}
        w = asyncio.ensure_future(server.call("variable-get", peer=b"pb", name="v", timeout=30))
        e = asyncio.ensure_future(server.call("event-wait", peer=b"pb", name="e"))
        await asyncio.sleep(0)
        assert server.call("variable-set", payload=[b"1"], name="v", **h) == {}
        got = await asyncio.wait_for(w, 5)
        assert got.raw == {"item0": [b"1"]}
        assert server.call("event-is-set", name="e") == {"set": False}
        assert server.call("event-set", name="e") == {}
        assert await asyncio.wait_for(e, 5) == {"set": True}
        assert server.call("event-clear", name="e") == {}
        assert server.call("event-wait", name="e", timeout=0) == {"set": False}
        assert server.call("variable-delete", name="v") == {"deleted": True}
        assert server.call("variable-get", name="v", timeout=0) == {"timed_out": True}
        ext.close()

    asyncio.run(main())


def test_strangers_and_bad_fields_are_refused():
    server, ext = served()
    with pytest.raises(PermissionError):
        server.call("lock-acquire", peer=b"stranger", name="x", lease="L")
    for bad in ({"name": 3, "lease": "L"}, {"name": "x"}, {"name": "x", "lease": "L", "timeout": -1},
                {"name": "x", "lease": "L", "timeout": float("nan")}):
        with pytest.raises(BadMessage):
            TO_SCHEDULER.check({"op": "lock-acquire", **bad})
    with pytest.raises(BadMessage, match="payload object"):
        TO_SCHEDULER.check({"op": "queue-put", "name": "q"})
    with pytest.raises(BadMessage):
        TO_SCHEDULER.check({"op": "queue-get", "name": "q", "batch": 0})


def test_close_cancels_what_waits():
    async def main():
        server, ext = served()
        server.call("lock-acquire", name="x", lease="L1")
        t = asyncio.ensure_future(server.call("lock-acquire", peer=b"pb", name="x", lease="L2", timeout=60))
        await asyncio.sleep(0)
        ext.close()
        with pytest.raises(asyncio.CancelledError):
            await t

    asyncio.run(main())


# ----------------------------------------------------------------------------- client handles, no cluster
class FakeClient:
    asynchronous = False
    status = "running"
    _conn = None


def test_handles_check_their_arguments_when_built():
    from xsched import Event, Lock, Queue, Semaphore, Variable

    c = FakeClient()
    for cls in (Lock, Queue, Variable, Event):
        with pytest.raises(TypeError, match=f"a {cls.__name__}'s name must be a string, not int 5"):
            cls(5, client=c)
        with pytest.raises(ValueError, match="non-empty"):
            cls("", client=c)
    with pytest.raises(TypeError, match="a Semaphore's name must be a string"):
        Semaphore(2, name=("a",), client=c)
    with pytest.raises(ValueError, match="max_leases must be an integer >= 1"):
        Semaphore(0, client=c)
    with pytest.raises(ValueError, match="maxsize must be an integer >= 0"):
        Queue("q", client=c, maxsize=-1)
    assert Lock(client=c).name.startswith("lock-") and Lock(client=c).name != Lock(client=c).name
    assert repr(Queue("q", client=c, maxsize=3)) == "<Queue 'q' maxsize=3>"
    assert repr(Semaphore(2, "s", client=c)) == "<Semaphore 's' max_leases=2 held by this object: 0>"
    assert repr(Lock("x", client=c)) == "<Lock 'x' not held by this object>"


def test_releasing_what_this_object_does_not_hold_raises_naming_it():
    from xsched import Lock, Semaphore

    c = FakeClient()
    with pytest.raises(ValueError, match="Lock 'x' is not held by this Lock object"):
        Lock("x", client=c).release()
    with pytest.raises(RuntimeError, match="Semaphore 's' was released more often than acquired"):
        Semaphore(2, "s", client=c).release()
    with pytest.raises(ValueError, match="a timeout makes no sense with blocking=False"):
        Lock("x", client=c).acquire(blocking=False, timeout=1)
    with pytest.raises(ValueError, match=">= 0"):
        Lock("x", client=c).acquire(timeout=-1)


def test_large_values_are_refused_pointing_at_scatter():
    from xsched import Queue, Variable

    c = FakeClient()
    with pytest.raises(ValueError, match=r"Queue 'q'.*more than the 1,048,576 bytes \(1.00 MiB\).*client\.scatter"):
        Queue("q", client=c).put(b"x" * (MAX_SHARED_VALUE + 1))
    with pytest.raises(ValueError, match=r"Variable 'v'.*client\.scatter"):
        Variable("v", client=c).set(list(range(300_000)))


def test_handles_pickle_by_name_and_hold_nothing_after():
    from xsched import Lock, Queue, Semaphore

    c = FakeClient()
    lock = Lock("x", client=c)
    lock._lease = "L1"
    copy = pickle.loads(pickle.dumps(lock))
    assert copy.name == "x" and copy._lease is None and copy._client is None
    sem = pickle.loads(pickle.dumps(Semaphore(3, "s", client=c)))
    assert (sem.name, sem.max_leases, sem._leases) == ("s", 3, [])
    q = pickle.loads(pickle.dumps(Queue("q", client=c, maxsize=4)))
    assert (q.name, q.maxsize) == ("q", 4)


# --------------------------------------------------------------------- MultiLock (its state: test_multilock_state.py)
def test_multilocks_through_the_extension_share_names_with_locks():
    async def main():
        server, ext = served()
        assert server.call("multi-lock-acquire", names=["a", "b"], lease="M1") == {
            "acquired": True, "names": ["a", "b"]}
        assert server.call("lock-acquire", peer=b"pb", name="b", lease="L2", timeout=0) == {"acquired": False}
        waiting = asyncio.ensure_future(server.call("multi-lock-acquire", peer=b"pb", names=["b", "c"], lease="M3"))
        timed = asyncio.ensure_future(server.call("multi-lock-acquire", peer=b"pb", names=["a"], lease="M4",
                                                  timeout=0.01))
        assert await asyncio.wait_for(timed, 5) == {"acquired": False}
        await asyncio.sleep(0)
        assert not waiting.done() and ext.state.lease_count("lock", "c") == 0  # nothing held while waiting
        assert server.call("multi-lock-release", names=["a", "b"], lease="M1") == {"released": True}
        assert await asyncio.wait_for(waiting, 5) == {"acquired": True, "names": ["b", "c"]}
        got = server.call("multi-lock-release", names=["a", "b"], lease="M1")
        assert got["released"] is False and "MultiLock ['a', 'b'] is not held" in got["error"]
        assert server.call("multi-lock-acquire", names=["x", "y", "z"], lease="M5", num_locks=2, timeout=0) == {
            "acquired": True, "names": ["x", "y"]}
        refused = server.call("multi-lock-acquire", names=["p", "p"], lease="M6")["refused"]
        assert "MultiLock ['p', 'p']" in refused and "twice" in refused
        assert ext._waiting == {} and ext._timers == {}

    asyncio.run(main())


def test_a_multilock_held_by_a_task_on_a_worker_that_leaves_is_released():
    server, ext = served()
    assert server.call("multi-lock-acquire", names=["a", "b"], lease="M1", worker="tcp://w1:1")["acquired"]
    ext.remove_worker("tcp://w1:1", "lost")
    assert server.call("multi-lock-acquire", peer=b"pb", names=["b", "a"], lease="M2", timeout=0)["acquired"]


def test_multilock_messages_with_bad_fields_are_refused():
    for bad in ({"names": "ab", "lease": "L"}, {"names": ["a", 3], "lease": "L"}, {"names": ["a"]},
                {"names": ["a"], "lease": "L", "num_locks": 0}, {"names": ["a"] * 1025, "lease": "L"},
                {"names": ["a"], "lease": "L", "timeout": -1}):
        with pytest.raises(BadMessage):
            TO_SCHEDULER.check({"op": "multi-lock-acquire", **bad})
    with pytest.raises(BadMessage):
        TO_SCHEDULER.check({"op": "multi-lock-release", "names": ["a"], "lease": "L", "abandon": 1})


def test_multilock_handles_check_their_names_when_built():
    from xsched import MultiLock

    c = FakeClient()
    for names, error, words in (("ab", TypeError, r"names must be a list of lock names \(strings\), not str 'ab'"),
                                (None, TypeError, "not NoneType"),
                                (["a", 3], TypeError, "a lock name must be a string"),
                                ([], ValueError, "from 1 to 1024 locks, not 0"),
                                (["a", ""], ValueError, "non-empty"),
                                (["a", "b", "a"], ValueError, r"\['a'\] are given twice"),
                                ([str(i) for i in range(1025)], ValueError, "not 1025")):
        with pytest.raises(error, match=words):
            MultiLock(names, client=c)
    lock = MultiLock(("b", "a"), client=c)
    assert lock.names == ("b", "a") and repr(lock) == "<MultiLock ['b', 'a'] not held by this object>"
    assert not lock.locked() and lock.held == ()
    lock._lease, lock._held = "L", ("b",)
    assert repr(lock) == "<MultiLock ['b', 'a'] held by this object: ['b']>"
    copy = pickle.loads(pickle.dumps(lock))
    assert (copy.names, copy._lease, copy._held, copy._client) == (("b", "a"), None, (), None)


def test_multilock_calls_check_their_arguments_and_release_names_it():
    from xsched import MultiLock

    c = FakeClient()
    lock = MultiLock(["a", "b"], client=c)
    with pytest.raises(ValueError, match=r"MultiLock \['a', 'b'\] is not held by this MultiLock object"):
        lock.release()
    for bad in (0, 3, True, 1.5):
        with pytest.raises(ValueError, match=r"num_locks must be an integer from 1 to 2"):
            lock.acquire(num_locks=bad)
    with pytest.raises(ValueError, match="a timeout makes no sense with blocking=False"):
        lock.acquire(blocking=False, timeout=1)
    lock._lease = "L"
    with pytest.raises(RuntimeError, match="held by this object already"):
        lock.acquire()
