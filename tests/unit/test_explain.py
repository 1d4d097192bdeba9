"""``SchedulerState.explain(key)``: the scheduler's own answer to "why is this not running?",
for every state a key can be in (the story pane's "now" line). Pure: no sockets."""

from __future__ import annotations

from xsched.scheduler.state import (AddWorker, ClientReleasesKeys, NewTask, SchedulerState, TaskErred, TaskFinished,
                                    UpdateGraph, WorkerStatus)


def test_every_state_has_its_sentence():
    s = SchedulerState()
    assert "does not know this key" in s.explain("nope")
    tasks = [NewTask(f"in-{i}", b"x") for i in range(7)] + [NewTask("sum", b"x", [f"in-{i}" for i in range(7)])]
    s.handle(UpdateGraph("c", tasks, ["sum"]))
    assert s.explain("sum") == ("waiting for 7 inputs: 'in-0' (no-worker), 'in-1' (no-worker), 'in-2' (no-worker), "
                                "'in-3' (no-worker), 'in-4' (no-worker) and 2 more")
    assert s.explain("in-0") == "no worker can run it: no workers are connected"
    s.handle(AddWorker("tcp://w:1", nthreads=1))
    running = [k for k, ts in s.tasks.items() if ts.state == "processing"]
    queued = [k for k, ts in s.tasks.items() if ts.state == "queued"]
    assert running and queued
    assert s.explain(running[0]) == "running on tcp://w:1 (1 task there for 1 thread)"
    assert s.explain(queued[0]).startswith("queued: waiting for a free thread")
    s.handle(WorkerStatus("tcp://w:1", "paused"))
    assert s.explain(running[0]) == ("sent to tcp://w:1, which is paused and starts nothing new "
                                     "(1 task there for 1 thread)")
    s.handle(WorkerStatus("tcp://w:1", "running"))
    s.handle(TaskFinished("tcp://w:1", running[0], nbytes=8))
    assert s.explain(running[0]) == "in memory on tcp://w:1"
    assert "'" + running[0] + "'" not in s.explain("sum")  # no longer among the inputs waited for
    nxt = next(k for k, ts in s.tasks.items() if ts.state == "processing")
    s.handle(TaskErred("tcp://w:1", nxt, text="ZeroDivisionError: division by zero"))
    assert s.explain(nxt) == "failed: ZeroDivisionError: division by zero"
    assert s.explain("sum") == f"failed: ZeroDivisionError: division by zero (the error of its input {nxt!r})"
    s.handle(ClientReleasesKeys("c", ["sum"]))
    assert "does not know this key" in s.explain("sum")  # forgotten with its graph


def test_a_task_for_missing_resources_says_what_it_needs_and_what_workers_offer():
    s = SchedulerState()
    s.handle(AddWorker("tcp://cpu:1", nthreads=2))
    s.handle(UpdateGraph("c", [NewTask("train", b"x", resources={"GPU": 1})], ["train"]))
    assert s.explain("train") == ("no worker can run it: needs resources {'GPU': 1}; "
                                  "workers offer {'tcp://cpu:1': {}}")
