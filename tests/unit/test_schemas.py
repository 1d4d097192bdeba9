"""protocol/schemas.py: every op a receiver serves has a schema there, the messages xsched
itself sends pass it, and bad ones are refused naming the field -- before any state changes
(the scheduler's state machine checks a graph before it inserts any of it). The client's
futures failing when the scheduler rejects their graph: tests/cluster/test_cluster_errors.py."""

from __future__ import annotations

import math

import pytest

from xsched.protocol import schemas
from xsched.protocol.schemas import BadMessage, CLIENT_FROM_SCHEDULER, TO_SCHEDULER, TO_WORKER, WORKER_FROM_SCHEDULER
from xsched.scheduler.state import NewTask, SchedulerState, UpdateGraph, AddWorker


def test_every_op_the_scheduler_serves_has_a_schema():
    from xsched.scheduler.server import Scheduler

    served = set(Scheduler._CLIENT_OPS) | set(Scheduler._WORKER_OPS)
    s = Scheduler(register=False)  # (extensions register their ops in the constructor)
    served |= set(s._extension_ops)
    assert served - set(TO_SCHEDULER) == set()
    with pytest.raises(ValueError, match="has no schema"):
        s.register_op("no-such-op", lambda peer, h, p: None)


def test_every_op_on_the_wire_is_known_to_the_decoder():
    from xsched.protocol.messages import OPS

    for table in (TO_SCHEDULER, TO_WORKER, WORKER_FROM_SCHEDULER, CLIENT_FROM_SCHEDULER):
        assert set(table) <= OPS


GOOD = [
    (TO_SCHEDULER, {"op": "task-finished", "key": "x", "nbytes": 8, "type": "int", "start": 1.0, "stop": 2.5}),
    (TO_SCHEDULER, {"op": "task-finished", "key": "x", "nbytes": 8, "type": None, "start": None, "stop": None}),
    # a task that seceded says how long (older workers leave the field out: the lines above)
    (TO_SCHEDULER, {"op": "task-finished", "key": "x", "nbytes": 8, "start": 1.0, "stop": 9.0, "seceded": 7.5}),
    (TO_SCHEDULER, {"op": "update-graph", "keys": ["b"], "tasks": [
        {"key": "a", "run_spec": b"..", "deps": [], "priority": [0, 1, 2]},
        {"key": "b", "run_spec": b"..", "deps": ["a"], "priority": [-1.5, 1, 3], "resources": {"GPU": 1, "MEM": 0.5},
         "workers": ["tcp://127.0.0.1:1", "w1", 3], "allow_other_workers": False, "retries": 2,
         "limits": {"db": 2}}]}),
    (TO_SCHEDULER, {"op": "register-worker", "address": "tcp://127.0.0.1:1", "name": "w", "nthreads": 2,
                    "memory_limit": None, "resources": {}, "pid": 1, "host": "h", "local_directory": None,
                    "prefix": "/usr", "environment_error": None}),
    (TO_SCHEDULER, {"op": "heartbeat-worker", "metrics": {"rss": 1, "time": 1.5, "paused": False, "cpu": 3.0}}),
    (TO_SCHEDULER, {"op": "run-on-scheduler", "_objs": [["func", 1], ["args", 1]]}),
    (WORKER_FROM_SCHEDULER, {"op": "compute-task", "key": "b", "run_spec": b"..", "priority": [0, 1, 2],
                             "who_has": {"a": ["tcp://127.0.0.1:1"]}, "nbytes": {"a": 8}}),
    (WORKER_FROM_SCHEDULER, {"op": "acquire-replicas", "who_has": {"a": ["tcp://x:1"]}, "nbytes": {"a": 1},
                             "priority": {"a": [0, 1]}, "stimulus_id": "s"}),
    (CLIENT_FROM_SCHEDULER, {"op": "task-erred", "key": "a", "blame": "a", "exception": b"", "traceback": b"",
                             "text": "ValueError: x"}),
    (CLIENT_FROM_SCHEDULER, {"op": "progress", "sub": "s", "groups": {"inc": [1, 0, 2]}, "done": False}),
    (TO_WORKER, {"op": "get-data", "keys": ["a", "b"], "bulk": True}),
    # a scatter of large buffers: a receive offer first, then put-data naming it
    (TO_WORKER, {"op": "bulk-receive", "lengths": [2**28, 16]}),
    (TO_WORKER, {"op": "put-data", "bulk": {"id": b"i" * 16, "index": [1, 2]}}),
    (TO_WORKER, {"op": "put-data"}),
]


@pytest.mark.parametrize("table,msg", GOOD, ids=[m["op"] for _, m in GOOD])
def test_the_messages_xsched_sends_pass(table, msg):
    table.check(msg)


BAD = [
    (TO_SCHEDULER, {"op": "task-finished"}, "missing key", "'key' is missing"),
    (TO_SCHEDULER, {"op": "task-finished", "key": 5}, "bad key", "key must be a key string, not int 5"),
    (TO_SCHEDULER, {"op": "task-finished", "key": "x", "nbytes": -1}, "bad nbytes", "nbytes must be"),
    (TO_SCHEDULER, {"op": "task-finished", "key": "x", "start": math.nan}, "bad start", "start must be"),
    (TO_SCHEDULER, {"op": "task-finished", "key": "x", "seceded": -0.5}, "bad seceded",
     "seceded must be a finite number of seconds >= 0"),
    (TO_SCHEDULER, {"op": "update-graph", "tasks": [{"key": "a", "priority": [0, "x"]}]}, "bad tasks",
     "tasks[0].priority[1] must be a finite number"),
    (TO_SCHEDULER, {"op": "update-graph", "tasks": [{"key": "a", "priority": [True]}]}, "bad tasks",
     "tasks[0].priority[0]"),
    (TO_SCHEDULER, {"op": "update-graph", "tasks": [{"key": "a", "priority": list(range(65))}]}, "bad tasks",
     "has 65 items, more than the 64 allowed"),
    (TO_SCHEDULER, {"op": "update-graph", "tasks": [{"key": "a", "resources": {"GPU": "two"}}]}, "bad tasks",
     "tasks[0].resources['GPU'] must be a finite amount >= 0, not str 'two'"),
    (TO_SCHEDULER, {"op": "update-graph", "tasks": [{"key": "a", "resources": {"GPU": -1}}]}, "bad tasks",
     "resources['GPU']"),
    (TO_SCHEDULER, {"op": "update-graph", "tasks": [{"key": "a", "workers": "tcp://x:1"}]}, "bad tasks",
     "tasks[0].workers must be a list"),
    (TO_SCHEDULER, {"op": "update-graph", "tasks": [{"run_spec": b""}]}, "bad tasks",
     "tasks[0]: the field 'key' is missing"),
    (TO_SCHEDULER, {"op": "update-graph", "keys": ["a", ["b"]]}, "bad keys", "keys[1] must be a key string"),
    (TO_SCHEDULER, {"op": "update-graph", "keys": None}, "null keys", "'keys' is null"),
    (TO_SCHEDULER, {"op": "heartbeat-worker", "metrics": {"rss": "lots"}}, "bad metrics", "metrics.rss"),
    (TO_SCHEDULER, {"op": "heartbeat-worker", "metrics": {"x": [1]}}, "bad metrics", "metrics.x"),
    (TO_SCHEDULER, {"op": "register-worker", "address": "a", "resources": {"GPU": None}}, "bad resources",
     "resources['GPU']"),
    (TO_SCHEDULER, {"op": "run-on-scheduler"}, "missing objects", "['func'] are missing"),
    (TO_SCHEDULER, {"op": "ping", "_objs": [["x", 1]]}, "bad objects", "payload objects ['x']"),
    (TO_SCHEDULER, {"op": "compute-task", "key": "a"}, "unknown op", "does not handle op 'compute-task'"),
    (WORKER_FROM_SCHEDULER, {"op": "compute-task", "key": "a", "priority": [1, "a"]}, "bad priority", "priority[1]"),
    (WORKER_FROM_SCHEDULER, {"op": "free-keys", "keys": [1]}, "bad keys", "keys[0]"),
    (CLIENT_FROM_SCHEDULER, {"op": "key-in-memory", "key": None}, "null key", "'key' is null"),
    (TO_WORKER, {"op": "get-data", "keys": "abc"}, "bad keys", "keys must be a list"),
    (TO_WORKER, {"op": "bulk-receive", "lengths": [-1]}, "bad lengths", "lengths[0]"),
    (TO_WORKER, {"op": "bulk-receive"}, "missing lengths", "lengths"),
    (TO_WORKER, {"op": "put-data", "bulk": {"id": b"i" * 16, "index": [0]}}, "bad bulk", "index[0]"),
]


@pytest.mark.parametrize("table,msg,kind,text", BAD, ids=[f"{m['op']}-{k}" for _, m, k, _ in BAD])
def test_bad_messages_are_refused_naming_the_field(table, msg, kind, text):
    with pytest.raises(BadMessage) as info:
        table.check(msg)
    assert info.value.kind == kind
    assert text in str(info.value)
    assert str(info.value).startswith(msg["op"]) or kind == "unknown op"


def test_update_graph_may_name_the_task_that_sent_it():
    """``parent``: sent from inside a task (progress bars count what it launches); optional."""
    TO_SCHEDULER.check({"op": "update-graph", "tasks": [], "keys": []})  # older clients send none
    TO_SCHEDULER.check({"op": "update-graph", "tasks": [], "keys": [], "parent": "fib-6"})
    TO_SCHEDULER.check({"op": "update-graph", "tasks": [], "keys": [], "parent": None})
    with pytest.raises(BadMessage, match="parent must be a key string, not int 6") as info:
        TO_SCHEDULER.check({"op": "update-graph", "keys": [], "parent": 6})
    assert info.value.kind == "bad parent"


def test_key_lists_are_bounded_and_checked_at_c_speed():
    assert schemas.KEYS.ok(["a"] * 1000)
    assert not schemas.KEYS.ok(["a"] * 999 + [b"a"])
    assert not schemas.KEYS.ok(["x" * (schemas.MAX_KEY + 1)])


# ---------------------------------------------------------------------- the state machine
def _state():
    s = SchedulerState(validate_each=True) if "validate_each" in SchedulerState.__init__.__code__.co_varnames \
        else SchedulerState()
    s.handle(AddWorker("tcp://w:1", 1, "w", None, {"GPU": 1}, 1, "h"))
    return s


@pytest.mark.parametrize("field,value", [
    ("resources", 5), ("resources", {"GPU": "x"}), ("workers", 5), ("workers", [["a"]]),
    ("priority", (0, "a")), ("priority", (math.inf,)), ("retries", -1), ("limits", {"db": 1.5}),
])
def test_a_bad_task_changes_nothing_in_the_scheduler_state(field, value):
    s = _state()
    good = NewTask("good", b"spec", [], (0, 1, 0))
    bad = NewTask("bad", b"spec", ["good"], **{"priority": (0, 1, 1), field: value})
    with pytest.raises(ValueError, match=f"task 'bad': {field}"):
        s.handle(UpdateGraph("c", [good, bad], ["bad"]))
    assert s.tasks == {} and not s.clients.get("c")
    s.validate()
    s.handle(UpdateGraph("c", [good], ["good"]))  # and the state still works
    assert s.tasks["good"].state == "processing"
