"""The telemetry scheduler extension (xsched/scheduler/extensions/telemetry.py), without sockets:
one op answering what a dashboard shows since the caller's cursors, with bounded memory."""

from __future__ import annotations

from collections import deque

import pytest

from xsched.protocol.schemas import TO_SCHEDULER, BadMessage
from xsched.scheduler.extensions import build
from xsched.scheduler.extensions.diagnostics import TaskStream
from xsched.scheduler.extensions.telemetry import GroupCounts, TelemetryExtension, rows_of, stream_since
from xsched.scheduler.state import ClientReleasesKeys, NewTask, TaskErred, TaskFinished, UpdateGraph
from xsched.sizeof import deep_getsizeof

from tests.support.fake_scheduler import FakeScheduler


def served():
    server = FakeScheduler()
    server.memory_history = {}
    server.extensions.update(build(server, ["diagnostics", "telemetry"]))
    return server


def ran(server, worker, key, status="memory", t=1.0):
    """What the Scheduler does on task-finished / task-erred: note the run, then tell the state."""
    server.extensions["diagnostics"].task_ran(worker, {"key": key, "start": t, "stop": t + 0.5}, status)
    if status == "memory":
        server.handle(TaskFinished(worker, key, nbytes=8, start=t, stop=t + 0.5))
    else:
        server.handle(TaskErred(worker, key, text="boom", start=t, stop=t + 0.5))


def run_next(server, status="memory", t=1.0, prefix=""):
    """Finish (or fail) one task processing now, of a key starting with ``prefix``; its key."""
    ts = next(ts for ts in server.state.tasks.values() if ts.state == "processing" and ts.key.startswith(prefix))
    ran(server, ts.processing_on.address, ts.key, status, t)
    return ts.key




def test_one_reply_carries_runs_workers_groups_and_memory_since_the_cursors():
    server = served()
    server.add_worker("tcp://w:2")
    server.add_worker("tcp://w:1")
    keys = ["boom-1"] + [f"inc-{i}" for i in range(4)]
    server.handle(UpdateGraph("c", [NewTask(k, b"s", priority=(i,)) for i, k in enumerate(keys)], keys))
    done = [run_next(server, "error", 0.0, "boom")] + [run_next(server, t=float(i), prefix="inc") for i in range(3)]
    server.memory_history = {"tcp://w:1": deque([(10.0, 100, 40, 0), (11.0, 120, 50, 0)], maxlen=3600),
                             "tcp://w:2": deque([(10.5, 90, 30, 5)], maxlen=3600)}

    reply = server.call("telemetry")
    ts = reply["task_stream"]
    assert ts["index"] == 4 and ts["first"] == 0 and ts["skipped"] == 0
    runs = rows_of(ts["runs"])
    assert [r[0] for r in runs] == done and done[0] == "boom-1"
    assert runs[1][1] == "inc" and runs[1][2] in ("tcp://w:1", "tcp://w:2")
    assert runs[0][5] == "error" and runs[1][5] == "memory"
    assert ts["runs"]["groups"] == ["boom", "inc"] and ts["runs"]["group"] == [0, 1, 1, 1]  # (each name once)
    rows = {w["address"]: w for w in reply["workers"]}
    assert set(rows) == {"tcp://w:1", "tcp://w:2"}
    assert {"name", "nthreads", "managed", "unmanaged", "spilled", "memory_limit", "cpu", "executing",
            "processing", "status"} <= set(rows["tcp://w:1"])
    assert sum(w["processing"] for w in rows.values()) == 1         # inc-3 still runs
    groups = {g["name"]: g for g in reply["groups"]}
    assert groups["inc"] == {"name": "inc", "done": 3, "processing": 1, "erred": 0, "waiting": 0, "total": 4}
    assert groups["boom"]["erred"] == 1
    assert reply["memory"]["tcp://w:1"] == [[10.0, 100, 40, 0], [11.0, 120, 50, 0]]
    assert reply["memory_since"] == {"tcp://w:1": 11.0, "tcp://w:2": 10.5}

    # the cursors sent back: nothing new, then only what came since
    again = server.call("telemetry", since=ts["index"], memory_since=reply["memory_since"])
    assert rows_of(again["task_stream"]["runs"]) == [] and again["memory"] == {"tcp://w:1": [], "tcp://w:2": []}
    last = run_next(server, t=6.0)
    server.memory_history["tcp://w:2"].append((12.0, 95, 31, 5))
    later = server.call("telemetry", since=ts["index"], memory_since=reply["memory_since"],
                        parts=["task-stream", "memory"])
    assert [r[0] for r in rows_of(later["task_stream"]["runs"])] == [last] and later["task_stream"]["first"] == 4
    assert later["memory"] == {"tcp://w:1": [], "tcp://w:2": [[12.0, 95, 31, 5]]}
    assert "workers" not in later and "groups" not in later          # only the parts asked for


def test_done_tasks_stay_done_when_released_and_forgotten():
    server = served()
    server.add_worker("tcp://w:1")
    server.call("telemetry", parts=["groups"])                       # counting starts here
    keys = [f"sq-{i}" for i in range(3)]
    server.handle(UpdateGraph("c", [NewTask(k, b"s") for k in keys], keys))
    for i in range(3):
        run_next(server, t=float(i))
    server.handle(ClientReleasesKeys("c", keys))
    assert all(k not in server.state.tasks for k in keys)            # forgotten
    (g,) = server.call("telemetry", parts=["groups"])["groups"]
    assert (g["name"], g["done"], g["total"]) == ("sq", 3, 3)


def test_the_group_hook_is_installed_on_first_use_and_removed_on_close():
    server = served()
    ext = server.extensions["telemetry"]
    assert not any(isinstance(h, GroupCounts) for h in server.state.transition_hooks)
    server.handle(UpdateGraph("c", [NewTask("a-1", b"s")], ["a-1"]))  # no worker: no-worker / waiting
    (g,) = server.call("telemetry", parts=["groups"])["groups"]      # seeded from the tasks known
    assert g["waiting"] == 1 and g["total"] == 1
    assert sum(isinstance(h, GroupCounts) for h in server.state.transition_hooks) == 1
    server.call("telemetry", parts=["groups"])
    assert sum(isinstance(h, GroupCounts) for h in server.state.transition_hooks) == 1
    ext.close()
    assert not any(isinstance(h, GroupCounts) for h in server.state.transition_hooks)


def test_runs_over_the_cap_keep_the_newest_and_count_the_skipped():
    server = served()
    stream = server.extensions["diagnostics"].task_stream
    for i in range(50):
        stream.add(f"x-{i}", "tcp://w:1", float(i), i + 0.1, "memory")
    ts = server.call("telemetry", parts=["task-stream"], max_records=10)["task_stream"]
    assert ts["runs"]["keys"] == [f"x-{i}" for i in range(40, 50)]
    assert (ts["first"], ts["skipped"], ts["index"]) == (40, 40, 50)
    # a cursor older than what the bounded stream kept: the dropped runs count as skipped
    small = TaskStream(maxlen=5)
    for i in range(20):
        small.add(f"y-{i}", "w", i, i, "memory")
    rows, first, skipped = stream_since(small, 3, 100)
    assert [r[0] for r in rows] == [f"y-{i}" for i in range(15, 20)] and (first, skipped) == (15, 12)
    assert stream_since(small, 10_000, 100) == ([], 20, 0)           # a cursor from the future: nothing


@pytest.mark.parametrize("bad", [{"parts": ["task-stream", "bogus"]}, {"max_records": 0},
                                 {"max_records": 10**9}, {"since": -1}, {"memory_since": {"tcp://w:1": "x"}},
                                 {"parts": "workers"}])
def test_malformed_requests_are_refused_by_the_schema(bad):
    with pytest.raises(BadMessage):
        TO_SCHEDULER.check({"op": "telemetry", **bad})


def test_group_counts_are_bounded_dropping_finished_groups_first():
    counts = GroupCounts(max_groups=100)

    class T:
        __slots__ = ("key", "group", "nbytes", "dependencies")

        def __init__(self, group, nbytes):
            self.key, self.group, self.nbytes, self.dependencies = group + "-1", group, nbytes, ()

    running = T("busy", -1)
    counts(running, "released", "processing")                         # the oldest, still running
    for i in range(1000):
        t = T(f"g{i}", 8)
        counts(t, "processing", "memory")
    assert len(counts.counts) == 100
    assert "busy" in counts.counts                                   # finished groups went first


def test_telemetry_memory_is_bounded_whatever_the_number_of_runs():
    """The scheduler's telemetry bytes (task stream + group counts) at 10k and 1M task runs."""
    server = served()
    stream = server.extensions["diagnostics"].task_stream
    ext: TelemetryExtension = server.extensions["telemetry"]
    groups = ext.group_counts()

    class T:
        __slots__ = ("group", "nbytes")

    def feed(n0, n1):
        t = T()
        for i in range(n0, n1):
            stream.add(f"task-{i % 50}-{i}", f"tcp://127.0.0.1:{4000 + i % 8}", float(i), i + 0.5, "memory", 8)
            t.group, t.nbytes = f"task-{i % 50}", 8
            groups(t, "processing", "memory")

    feed(0, 10_000)
    at_10k = deep_getsizeof(stream) + deep_getsizeof(groups)
    feed(10_000, 200_000)
    at_200k = deep_getsizeof(stream) + deep_getsizeof(groups)
    assert len(stream) == 100_000 and stream.index == 200_000
    feed(200_000, 400_000)
    at_400k = deep_getsizeof(stream) + deep_getsizeof(groups)
    assert at_400k <= at_200k * 1.02, (at_200k, at_400k)             # flat once the window is full
    assert at_10k < at_200k


def test_logs_are_bounded_numbered_and_sent_once_per_cursor():
    """The ``logs`` part: the scheduler's own records (read at each poll) and each worker's
    (asked in the background, at most every ``log_refresh`` seconds), at most LOG_RECORDS per
    process; the cursors sent back give only what is new, a worker's new record included."""
    import asyncio
    import logging

    from xsched import logs
    from xsched.scheduler.extensions.telemetry import LOG_RECORDS

    logs.install()
    log = logging.getLogger("xsched.test-telemetry")
    server = served()
    server.add_worker("tcp://w:1")
    ext: TelemetryExtension = server.extensions["telemetry"]
    worker_records = [("WARNING", f"worker record {i}") for i in range(LOG_RECORDS + 50)]
    asked = []

    async def worker_logs(address, n):  # what the worker's get-logs op answers: its last n records
        asked.append(address)
        return worker_records[-n:]

    ext.worker_logs = worker_logs

    async def scenario():
        for i in range(LOG_RECORDS + 100):
            log.warning("scheduler record %d", i)
        first = server.call("telemetry", parts=["logs"])
        assert set(first["logs"]) == {"scheduler", "tcp://w:1"} and first["logs"]["tcp://w:1"] == []
        own = first["logs"]["scheduler"]
        assert len(own) == LOG_RECORDS and own[-1][2].endswith(f"scheduler record {LOG_RECORDS + 99}")
        assert own[-1][1] == "WARNING" and [r[0] for r in own] == list(range(LOG_RECORDS))
        await asyncio.sleep(0.01)                                    # the worker answered meanwhile
        again = server.call("telemetry", parts=["logs"], logs_since=first["logs_since"])
        assert again["logs"]["scheduler"] == []                      # nothing new of the scheduler
        theirs = again["logs"]["tcp://w:1"]
        assert len(theirs) == LOG_RECORDS and theirs[-1][2] == f"worker record {LOG_RECORDS + 49}"
        assert asked == ["tcp://w:1"]
        # within log_refresh the worker is not asked again, however many polls come
        server.call("telemetry", parts=["logs"], logs_since=again["logs_since"])
        await asyncio.sleep(0.01)
        assert asked == ["tcp://w:1"]
        # the worker logs something, the scheduler too: each comes once, after the cursors
        ext.log_refresh = 0
        worker_records.append(("ERROR", "the worker's new record"))
        log.warning("the scheduler's new record")
        server.call("telemetry", parts=["logs"], logs_since=again["logs_since"])  # asks the worker
        await asyncio.sleep(0.01)
        later = server.call("telemetry", parts=["logs"], logs_since=again["logs_since"])
        assert [r[1:] for r in later["logs"]["tcp://w:1"]] == [["ERROR", "the worker's new record"]]
        assert len(later["logs"]["scheduler"]) == 1 and later["logs"]["scheduler"][0][2].endswith(
            "the scheduler's new record")
        assert all(len(t.records) <= LOG_RECORDS for t in ext.logs.values())
        # a worker that leaves takes its tail along
        server.remove_worker("tcp://w:1")
        assert set(ext.logs) == {"scheduler"}
        closing = ext.close()
        if closing is not None:
            await closing

    asyncio.run(scenario())


def test_a_story_joins_the_state_s_log_with_the_recorded_times_and_workers():
    """``story(key)``: the dashboard page's story pane; polling installs the recorder once."""
    from xsched.scheduler.extensions.telemetry import StoryRecorder

    server = served()
    server.add_worker("tcp://w:1")
    server.story = server.state.story
    ext: TelemetryExtension = server.extensions["telemetry"]
    server.call("telemetry", parts=["workers"])
    server.call("telemetry", parts=["workers"])
    assert sum(isinstance(h, StoryRecorder) for h in server.state.transition_hooks) == 1
    server.handle(UpdateGraph("c", [NewTask("st-1", b"s")], ["st-1"]))
    run_next(server, t=3.0)
    rows = ext.story("st-1")
    assert [r["finish"] for r in rows][-2:] == ["processing", "memory"]
    assert rows[-1]["worker"] == "tcp://w:1" and all(isinstance(r["time"], float) for r in rows[-2:])
    assert ext.story("no-such-key") == []
    ext.close()
    assert not any(isinstance(h, StoryRecorder) for h in server.state.transition_hooks)


@pytest.mark.parametrize("bad", [{"logs_since": {"scheduler": -1}}, {"logs_since": ["scheduler"]},
                                 {"parts": ["logs", "stories"]}])
def test_malformed_log_cursors_are_refused_by_the_schema(bad):
    with pytest.raises(BadMessage):
        TO_SCHEDULER.check({"op": "telemetry", **bad})


def test_group_edges_say_which_groups_feed_which():
    server = served()
    server.add_worker("tcp://w:1")
    # tasks known before the first request (seeded) and after it (the hook)
    server.handle(UpdateGraph("c", [NewTask(f"load-{i}", b"s") for i in range(3)], []))
    server.call("telemetry", parts=["groups"])
    tasks = [NewTask(f"inc-{i}", b"s", [f"load-{i}"]) for i in range(3)]
    tasks += [NewTask("total-0", b"s", [f"inc-{i}" for i in range(3)] + ["load-0"])]
    server.handle(UpdateGraph("c", tasks, ["total-0"]))
    reply = server.call("telemetry", parts=["groups"])
    assert reply["group_edges"] == [["inc", "total"], ["load", "inc"], ["load", "total"]]
    # a group's dependencies are read from its first few tasks only: the cost stays bounded
    many = [NewTask(f"sq-{i}", b"s", ["total-0"]) for i in range(50)]
    counts = next(h for h in server.state.transition_hooks if isinstance(h, GroupCounts))
    server.handle(UpdateGraph("c", many, [t.key for t in many]))
    assert counts._sampled["sq"] == 4 and ["total", "sq"] in server.call("telemetry", parts=["groups"])["group_edges"]


def test_workers_transfers_and_spill_io_come_beside_the_runs_with_a_cursor_of_their_own():
    server = served()
    peer = server.add_worker("tcp://w:1")
    records = [[10.0, 10.5, "transfer", "tcp://w:2", 4096], [11.0, 11.2, "disk-write", None, 100],
               [12.0, 12.1, "disk-read", None, 100], [13.0, 13.1, "bogus", None, 1], ["x", 1.0, "transfer", None, 0]]
    server.call("worker-activity", peer=peer, records=records)
    server.call("worker-activity", peer=b"not-a-worker", records=records[:1])  # (ignored)
    reply = server.call("telemetry", parts=["task-stream"])
    assert rows_of(reply["task_stream"]["runs"]) == []      # what clients read as the task stream: runs only
    act = reply["activity"]
    assert rows_of(act["runs"]) == [["transfer from tcp://w:2", "transfer", "tcp://w:1", 10.0, 10.5, "transfer"],
                              ["disk-write", "disk-write", "tcp://w:1", 11.0, 11.2, "disk-write"],
                              ["disk-read", "disk-read", "tcp://w:1", 12.0, 12.1, "disk-read"]]
    again = server.call("telemetry", parts=["task-stream"], activity_since=act["index"])
    assert rows_of(again["activity"]["runs"]) == [] and again["activity"]["index"] == 3
    assert server.extensions["diagnostics"].activity.records[0][5] == 4096   # (bytes kept)


def test_call_stacks_of_the_workers_running_tasks_asked_at_most_every_refresh():
    import asyncio

    server = served()
    server.add_worker("tcp://w:1")
    server.add_worker("tcp://w:2")
    ext: TelemetryExtension = server.extensions["telemetry"]
    server.handle(UpdateGraph("c", [NewTask("spin-1", b"s")], ["spin-1"]))   # runs on one worker
    busy = next(a for a, ws in server.state.workers.items() if ws.processing)
    asked = []

    class Conn:
        def __init__(self, address):
            self.address = address

        async def request(self, msg, timeout=None):
            asked.append((self.address, msg["op"]))
            return {"stacks": {"spin-1": ['  File "x.py", line 3, in spin\n']}}, []

    ext._worker_pool = lambda: type("Pool", (), {"get": lambda self, a: Conn(a)})()

    async def scenario():
        assert server.call("telemetry", parts=["stacks"])["stacks"] == {}   # asked now, answered next
        await asyncio.sleep(0.01)
        got = server.call("telemetry", parts=["stacks"])["stacks"]
        assert list(got) == [busy] and got[busy]["tasks"] == {"spin-1": ['  File "x.py", line 3, in spin\n']}
        assert asked == [(busy, "call-stack")]                                # the idle worker is not asked
        await asyncio.sleep(0.01)
        assert asked == [(busy, "call-stack")]                                # within STACK_REFRESH: once
        run_next(server)                                                      # nothing runs any more
        assert server.call("telemetry", parts=["stacks"])["stacks"] == {}
        closing = ext.close()
        if closing is not None:
            await closing

    asyncio.run(scenario())


def test_the_hooks_come_off_when_no_dashboard_asks_and_on_again_when_one_does():
    """A dashboard that went away costs the state machine nothing: after IDLE_DETACH seconds
    without a request the group counts and the story recorder leave its transition hooks; the
    next request counts the groups again (one pass over the tasks) and records from then on."""
    from xsched.scheduler.extensions.telemetry import IDLE_DETACH, StoryRecorder

    server = served()
    server.add_worker("tcp://w:1")
    keys = [f"inc-{i}" for i in range(3)]
    server.handle(UpdateGraph("c", [NewTask(k, b"s", priority=(i,)) for i, k in enumerate(keys)], keys))
    ext = server.extensions["telemetry"]
    server.call("telemetry", parts=["groups"])
    hooks = server.state.transition_hooks
    assert {type(h) for h in hooks} >= {GroupCounts, StoryRecorder}
    assert not ext.detach_if_idle(IDLE_DETACH / 2) and ext.groups in hooks    # asked recently: kept
    assert ext.detach_if_idle(IDLE_DETACH)
    assert not any(isinstance(h, (GroupCounts, StoryRecorder)) for h in hooks)
    assert ext.groups is None and ext.stories is None
    run_next(server, t=1.0)                                     # (a transition no hook hears)
    again = server.call("telemetry", parts=["groups"])
    assert {g["name"]: g["done"] for g in again["groups"]} == {"inc": 1}     # counted again
    assert sum(isinstance(h, GroupCounts) for h in hooks) == 1 and sum(isinstance(h, StoryRecorder) for h in hooks) == 1
    ext.close()
    assert not any(isinstance(h, (GroupCounts, StoryRecorder)) for h in hooks)
