"""Diagnostics without a cluster: the scheduler's task stream and views (its ``diagnostics``
extension on a Scheduler that never listens), the workers' stacks and profiles
(worker/diagnostics.py) on this process's own threads, the kept log records (logs.py), the
client's handling of events and print/warn (client/diagnostics.py), and the order in which
a worker sends a task's events and its outcome. On a real cluster: tests/cluster/test_diagnostics.py
and test_events.py."""

from __future__ import annotations

import asyncio
import json
import logging
import sys
import threading
import uuid
import warnings

import msgpack
import pytest

import xsched
from xsched import logs
from xsched.client.client import Client
from xsched.client.diagnostics import _check_event, _keys_of, _moment, _records, _warning_category
from xsched.protocol.schemas import TO_SCHEDULER, TO_WORKER
from xsched.scheduler.extensions.diagnostics import TaskStream, plain
from xsched.scheduler.state import AddWorker, NewTask, UpdateGraph
from xsched.worker import diagnostics as wdiag
from xsched.worker.server import Worker
from xsched.worker.state import ExecuteSuccess

from tests.support.helpers import wait_until


# ----------------------------------------------------------------------------- the task stream
def test_the_task_stream_numbers_runs_and_selects_by_number_time_and_count():
    stream = TaskStream(maxlen=3)
    for i in range(5):
        stream.add(f"inc-{i}", "tcp://w:1", 10.0 + i, 10.5 + i, "memory", 8)
    assert stream.index == 5 and len(stream) == 3
    assert [r[0] for r in stream.select()] == ["inc-2", "inc-3", "inc-4"]
    assert [r[0] for r in stream.select(since=4)] == ["inc-4"]
    assert [r[0] for r in stream.select(since=0)] == ["inc-2", "inc-3", "inc-4"]  # older ones are gone
    assert stream.select(since=5) == [] and stream.select(since=99) == []
    assert [r[0] for r in stream.select(start=13.2)] == ["inc-3", "inc-4"]  # ended after 13.2
    assert [r[0] for r in stream.select(stop=12.9)] == ["inc-2"]  # began before 12.9
    assert [r[0] for r in stream.select(count=2)] == ["inc-3", "inc-4"]
    assert stream.select(count=0) == [] and len(stream.select(count=10)) == 3
    stream.add("odd", "tcp://w:1", None, None, "error")  # a run without times passes no time bound
    assert stream.select(start=0.0) == stream.select()[:-1] and stream.select()[-1][0] == "odd"


def test_plain_data_packs_and_dumps():
    data = plain({"t": (1, {2}), 3: b"x", "o": object(), "d": {"deep": [1.5, None]}})
    assert data["t"] == [1, [2]] and data["3"] == "b'x'" and data["o"].startswith("<object")
    json.dumps(data)
    msgpack.packb(data)


def scheduler_with_a_finished_and_an_erred_task():
    from xsched.scheduler.server import Scheduler

    s = Scheduler(register=False)
    s.handle(AddWorker("tcp://w:1", 2, name="alice"))
    s.handle(UpdateGraph("c", [NewTask("inc-1", b"spec"), NewTask("bad-1", b"spec")], ["inc-1", "bad-1"]))
    s._op_task_finished("tcp://w:1", {"key": "inc-1", "nbytes": 28, "start": 1.0, "stop": 2.0})
    s._op_task_erred("tcp://w:1", {"key": "bad-1", "exception": b"", "traceback": b"", "text": "ValueError",
                                   "start": 1.5, "stop": 2.5})
    return s


def call(ext, op, **fields):
    msg = {"op": op, **fields}
    TO_SCHEDULER.check(msg)
    return ext.handlers()[op](b"peer", msg, [])


def test_the_scheduler_records_each_run_the_workers_report():
    s = scheduler_with_a_finished_and_an_erred_task()
    ext = s.extensions["diagnostics"]
    reply = call(ext, "get-task-stream")
    assert reply["index"] == 2
    assert reply["records"] == [["inc-1", "tcp://w:1", 1.0, 2.0, "memory", 28, "inc"],
                                ["bad-1", "tcp://w:1", 1.5, 2.5, "error", None, "bad"]]
    assert call(ext, "get-task-stream", since=1)["records"][0][0] == "bad-1"
    assert call(ext, "get-task-stream", count=0)["records"] == []


def test_has_what_processing_and_story():
    s = scheduler_with_a_finished_and_an_erred_task()
    ext = s.extensions["diagnostics"]
    assert call(ext, "has-what") == {"has_what": {"tcp://w:1": ["inc-1"]}}
    assert call(ext, "has-what", workers=["alice", "nobody"]) == {"has_what": {"tcp://w:1": ["inc-1"]}}
    assert call(ext, "has-what", workers="nobody") == {"has_what": {}}
    assert call(ext, "processing") == {"processing": {"tcp://w:1": []}}
    story = call(ext, "story", keys=["inc-1"])["story"]
    assert {e[0] for e in story} == {"inc-1"}
    assert [e[1:3] for e in story][-1] == ["processing", "memory"]
    assert all(isinstance(e[3], str) and e[3] for e in story)  # each change names its cause
    assert call(ext, "story", keys=["never"]) == {"story": []}


def test_the_scheduler_dump_is_plain_data():
    s = scheduler_with_a_finished_and_an_erred_task()
    logging.getLogger("xsched.unit-dump").warning("a record for the dump")
    dump = call(s.extensions["diagnostics"], "dump-state")["state"]
    assert dump["tasks"]["inc-1"]["state"] == "memory" and dump["tasks"]["inc-1"]["who_has"] == ["tcp://w:1"]
    assert dump["tasks"]["bad-1"]["state"] == "erred" and dump["counts"] == {"memory": 1, "erred": 1}
    assert any(e[0] == "inc-1" and e[2] == "memory" for e in dump["transition_log"])
    assert [r[0] for r in dump["task_stream"]["records"]] == ["inc-1", "bad-1"]
    assert "tcp://w:1" in dump["info"]["workers"]
    assert json.loads(json.dumps(dump)) == dump
    assert msgpack.unpackb(msgpack.packb(dump), strict_map_key=False) == dump


# ----------------------------------------------------------------------------- the workers' side
def blocked_here(event):
    event.wait(30)


@pytest.fixture
def blocked_thread():
    event = threading.Event()
    thread = threading.Thread(target=blocked_here, args=(event,), daemon=True)
    thread.start()
    try:
        yield {"key-1": thread.ident}
    finally:
        event.set()
        thread.join(10)


def test_call_stacks_start_at_the_task_function(blocked_thread):
    stacks = wait_until(lambda: (s := wdiag.call_stacks(blocked_thread)) and "blocked_here" in s["key-1"][0] and s,
                        msg="the thread is in blocked_here")
    text = "".join(stacks["key-1"])
    assert 'in blocked_here\n    event.wait(30)' in text and __file__ in stacks["key-1"][0]
    assert "threading.py" in stacks["key-1"][-1]  # (Event.wait: the innermost frames stay)
    assert wdiag.call_stacks(blocked_thread, ["other"]) == {}
    assert wdiag.call_stacks({"gone": -1}) == {}


def test_the_profiler_samples_the_task_threads(blocked_thread):
    wait_until(lambda: "blocked_here" in "".join(wdiag.call_stacks(blocked_thread).get("key-1", [])))
    prof = asyncio.run(wdiag.profile(blocked_thread, 0.05, 0.005))
    assert prof.samples >= 2
    rows = prof.rows()
    here = [r for r in rows if r[0] == "blocked_here"]
    assert len(here) == 1 and here[0][3] == prof.samples and here[0][4] == 0  # on every stack, never innermost
    assert sum(r[4] for r in rows) == prof.samples  # one innermost frame per sample
    other = wdiag.Profile()
    other.merge(rows)
    assert other.rows() == rows


def test_the_profiler_looks_less_often_while_no_task_runs(monkeypatch):
    """A sample that finds no task running waits IDLE_BACKOFF intervals for the next (on a
    made-up clock: the waits asked for are counted, nothing sleeps)."""
    clock, waits = [0.0], []

    async def sleep(seconds):
        waits.append(round(seconds, 6))
        clock[0] += seconds

    monkeypatch.setattr(wdiag.asyncio, "sleep", sleep)
    monkeypatch.setattr(wdiag, "time", type("Clock", (), {"monotonic": staticmethod(lambda: clock[0])}))

    def run(threads):
        waits.clear()
        clock[0] = 0.0
        coro = wdiag.profile(threads, 1.0, 0.01)
        with pytest.raises(StopIteration) as done:  # (the made-up sleep never suspends)
            coro.send(None)
        return done.value.value

    idle = run({})
    assert idle.samples == 0 and waits == [0.1] * 10
    busy = run({"key-1": threading.get_ident()})
    assert busy.samples == 100 and set(waits) == {0.01}


def test_trim_internal_keeps_a_task_made_of_xsched_frames_only():
    xs = wdiag._XSCHED + "graph/spec.py"
    assert wdiag.trim_internal([("run", xs, 1)]) == [("run", xs, 1)]


def test_trim_internal_starts_an_xsched_task_at_its_function():
    """An array's block product is xsched's own code: its stack starts at that function, not
    at the task thread (which every sample of every such task would otherwise repeat)."""
    import threading

    runner = [("_bootstrap", threading.__file__, 1), ("_run_task", wdiag._XSCHED + "worker/server.py", 2),
              ("run", wdiag._XSCHED + "graph/spec.py", 3), ("_resolve", wdiag._XSCHED + "graph/spec.py", 4)]
    task = [("_accumulate", wdiag._XSCHED + "array/linalg.py", 5), ("helper", wdiag._XSCHED + "graph/spec.py", 6)]
    assert wdiag.trim_internal(runner + task) == task
    user = [("analyse", "/home/me/analysis.py", 7)]
    assert wdiag.trim_internal(runner + task + user) == user  # (a user's function: from it on, as before)
    # a task calling a C function directly: the call stack keeps the runner's frames, the profile none
    assert wdiag.trim_internal(runner) == runner and wdiag.trim_internal(runner, keep_runner=False) == []


def test_the_worker_ops_have_schemas():
    assert {"get-logs", "call-stack", "profile", "dump-state"} <= set(Worker._PEER_OPS) <= set(TO_WORKER)
    TO_WORKER.check({"op": "profile", "duration": 1.0, "interval": 0.01})
    with pytest.raises(Exception, match="duration"):
        TO_WORKER.check({"op": "profile", "duration": 3600.0})


class StubWorker:
    """The parts of a Worker that carry task outcomes and events from task threads to the loop."""

    _post_from_thread = Worker._post_from_thread
    _log_event = Worker._log_event
    _to_scheduler_from_thread = Worker._to_scheduler_from_thread
    _drain_from_threads = Worker._drain_from_threads

    def __init__(self):
        self._from_threads, self._events_out = [], []
        self._from_threads_lock = threading.Lock()
        self._from_threads_signalled = False
        self.loop = self.scheduler = self
        self.closed, self.status = False, "running"
        self.scheduled: list = []
        self.out: list = []

    def call_soon_threadsafe(self, fn):
        self.scheduled.append(fn)

    def send(self, msg):
        self.out.append(msg["op"])

    def handle(self, *events):
        self.out.append([ev.key for ev in events])

    def _record(self, *args):
        pass


def test_a_worker_sends_a_tasks_events_before_its_outcome():
    """A wake-up already pending (another task's outcome) must not let a task's outcome
    overtake what it printed just before it ended."""
    w = StubWorker()
    w._post_from_thread(ExecuteSuccess("a", 8, "int", 0.0, 1.0))
    w._log_event("print", {"key": "b", "text": "from b\n"})
    w._post_from_thread(ExecuteSuccess("b", 8, "int", 0.0, 1.0))
    assert len(w.scheduled) == 1  # one wake-up for all three
    w.scheduled.pop()()
    assert w.out == ["log-event", ["a", "b"]]
    w._log_event("t", 1)  # an event alone wakes the loop too
    w.scheduled.pop()()
    assert w.out[-1] == "log-event" and w._events_out == []


# ----------------------------------------------------------------------------- logs
def test_the_recent_records_of_the_xsched_loggers():
    handler = logs.install()
    assert logs.install() is handler  # once per process
    marker = uuid.uuid4().hex
    logging.getLogger("xsched.unit-test").warning("marker %s", marker)
    logging.getLogger("elsewhere").warning("not ours %s", marker)
    level, message = logs.recent(1)[0]
    assert level == "WARNING" and message.endswith(f"marker {marker}") and "xsched.unit-test" in message
    assert not any(f"not ours {marker}" in m for _, m in logs.recent())
    assert logs.recent(0) == []
    small = logs.RecentLogs(capacity=2)
    for i in range(5):
        small.emit(logging.makeLogRecord({"msg": f"m{i}", "levelname": "INFO", "name": "xsched"}))
    assert [m.rsplit(" - ", 1)[-1] for _, m in small.records()] == ["m3", "m4"]


# ----------------------------------------------------------------------------- the client's side
def bare_client() -> Client:
    """A Client object without a connection: enough for the handlers of the scheduler's messages."""
    return object.__new__(Client)


def test_the_client_writes_prints_of_its_tasks(capsys):
    c = bare_client()
    c._handle({"op": "event", "topic": "print", "time": 1.0, "msg": {"key": "k", "text": "out\n", "file": "stdout"}},
              [])
    c._handle({"op": "event", "topic": "print", "time": 1.0, "msg": {"key": "k", "text": "err\n", "file": "stderr"}},
              [])
    c._handle({"op": "event", "topic": "print", "time": 1.0, "msg": "not a print"}, [])
    captured = capsys.readouterr()
    assert captured.out == "out\n" and captured.err == "err\n"


def test_the_client_issues_warnings_of_its_tasks_by_category():
    c = bare_client()
    with pytest.warns(RuntimeWarning, match="careful") as record:
        c._handle({"op": "event", "topic": "warn", "time": 1.0,
                   "msg": {"key": "risky-1", "message": "careful", "category": "builtins.RuntimeWarning"}}, [])
    assert record[0].filename == "<task risky-1>"
    with pytest.warns(UserWarning, match="unknown"):
        c._handle({"op": "event", "topic": "warn", "time": 1.0,
                   "msg": {"key": "k", "message": "unknown", "category": "not.imported.Warning"}}, [])


def test_the_client_calls_the_handler_of_a_topic(capsys, caplog):
    c = bare_client()
    seen = []
    c._topic_handlers()["t"] = seen.append
    c._topic_handlers()["print"] = seen.append  # replaces the writing of prints
    c._handle({"op": "event", "topic": "t", "time": 2.0, "msg": [1]}, [])
    c._handle({"op": "event", "topic": "print", "time": 3.0, "msg": {"key": "k", "text": "x\n"}}, [])
    assert seen == [(2.0, [1]), (3.0, {"key": "k", "text": "x\n"})] and capsys.readouterr().out == ""
    c._topic_handlers()["t"] = lambda event: 1 / 0
    with caplog.at_level(logging.ERROR, logger="xsched.client"):
        c._handle({"op": "event", "topic": "t", "time": 2.0, "msg": None}, [])  # logged, not raised
    assert "the handler of topic 't' failed" in caplog.text
    c._handle({"op": "event", "topic": "nobody-listens", "time": 2.0, "msg": None}, [])


class Outer:
    class NestedWarning(UserWarning):
        pass


def test_warning_categories_are_found_in_imported_modules_only():
    assert _warning_category("builtins.DeprecationWarning") is DeprecationWarning
    assert _warning_category(f"{__name__}.Outer.NestedWarning") is Outer.NestedWarning
    assert _warning_category(f"{__name__}.Outer") is UserWarning  # not a warning
    assert _warning_category("json.JSONDecodeError") is UserWarning
    assert _warning_category(None) is UserWarning and _warning_category("nodots") is UserWarning


def test_outside_a_task_print_and_warn_are_the_builtins(capsys):
    xsched.print("a", 1, sep="-", end="!\n")
    xsched.print("to err", file=sys.stderr)
    captured = capsys.readouterr()
    assert captured.out == "a-1!\n" and captured.err == "to err\n"
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        xsched.warn("plain", RuntimeWarning)
        xsched.warn(DeprecationWarning("an instance"))
    assert [(w.category, str(w.message)) for w in record] == [(RuntimeWarning, "plain"),
                                                              (DeprecationWarning, "an instance")]
    assert record[0].filename == __file__  # (the caller's line, as warnings.warn would say)


def test_arguments_are_checked_in_the_callers_thread():
    _check_event("t", {"a": [1, b"x", None]})
    _check_event(["t", "u"], 1)
    for bad_topic in ("", 3, [], ["t", 4], None):
        with pytest.raises(TypeError, match="topic"):
            _check_event(bad_topic, 1)
    with pytest.raises(TypeError, match="msgpack"):
        _check_event("t", object())
    with pytest.raises(TypeError, match="msgpack"):
        _check_event("t", {"s": {1, 2}})
    assert _keys_of(["a", ("b", "a"), {"x": "not a future"}]) == ["a", "b"]
    with pytest.raises(TypeError, match="futures or key strings"):
        _keys_of([3])
    assert _moment(None, "start") is None and _moment(5, "start") == 5.0
    assert abs(_moment("10s", "start") - (__import__("time").time() - 10)) < 5
    with pytest.raises(TypeError, match="start="):
        _moment(True, "start")
    assert _records([["inc-abcdef012345", "tcp://w:1", 1.0, 2.0, "memory", 8]]) == [
        {"key": "inc-abcdef012345", "group": "inc", "worker": "tcp://w:1", "start": 1.0, "stop": 2.0,
         "status": "memory", "nbytes": 8}]
