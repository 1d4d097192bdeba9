"""Work stealing in the pure state machines: which tasks move, when, and that nothing runs twice."""

from __future__ import annotations

import random

import pytest

from xsched.scheduler.state import (
    AddKeys, AddWorker, NewTask, RemoveWorker, Restart, SchedulerState, StealResponse, TaskFinished, TaskSeceded,
    ToWorker, UpdateGraph, WorkerStatus,
)
from xsched.worker.state import ComputeTask, ExecuteSuccess, SendToScheduler, StealRequest, WorkerState


def steals(out):
    return [(o.worker, o.msg["key"]) for o in out if isinstance(o, ToWorker) and o.msg["op"] == "steal-request"]


def computes(out):
    return [(o.worker, o.msg["key"]) for o in out if isinstance(o, ToWorker) and o.msg["op"] == "compute-task"]


def loaded(n=6, nbytes=1000, duration=0.05, **task_kw):
    """w0 holds x and runs n tasks work-i reading it; w1 joins afterwards, idle."""
    s = SchedulerState(validate=True)
    s.handle(AddWorker("w0", 1), AddKeys("w0", {"x": nbytes}, client="c"))
    s.durations["work"] = duration
    s.handle(UpdateGraph("c", [NewTask(f"work-{i}", b"s", ["x"], (0, 0, i), **task_kw) for i in range(n)],
                         [f"work-{i}" for i in range(n)]))
    assert all(ts.processing_on.address == "w0" for k, ts in s.tasks.items() if k != "x")
    return s


def test_idle_worker_steals_the_lowest_priority_waiting_task():
    s = loaded()
    out = s.handle(AddWorker("w1", 1))
    assert steals(out) == [("w0", "work-5")] and s.stealing == {"work-5": ("w0", "w1")}
    out = s.handle(StealResponse("w0", "work-5", "ready"))
    assert computes(out) == [("w1", "work-5")]
    assert out[0].msg["who_has"] == {"x": ["w0"]}  # the thief fetches the input from the victim
    assert s.tasks["work-5"].processing_on.address == "w1"
    assert ("work-5", "processing", "processing", s.story("work-5")[-1][3]) == s.story("work-5")[-1]
    assert s.steal_counts == {"requested": 1, "moved": 1, "kept": 0}
    # w1 is busy now; when it finishes it steals the next one (it holds x by then)
    out = s.handle(TaskFinished("w1", "work-5", nbytes=1))
    assert steals(out) == [("w0", "work-4")]


def test_a_task_that_started_is_kept_never_asked_again_and_a_stale_answer_is_ignored():
    s = loaded(n=3)
    s.handle(AddWorker("w1", 1))
    out = s.handle(StealResponse("w0", "work-2", "executing"))
    # kept where it runs; the next candidate is asked for instead
    assert s.tasks["work-2"].processing_on.address == "w0" and s.steal_counts["kept"] == 1
    assert computes(out) == [] and steals(out) == [("w0", "work-1")]
    # work-1 finishes on w0 before its answer arrives: the late answer changes nothing
    s.handle(TaskFinished("w0", "work-1", nbytes=1))
    assert computes(s.handle(StealResponse("w0", "work-1", "memory"))) == []
    assert "work-2" not in s.stealing and s.tasks["work-1"].state == "memory"


def test_restricted_resource_and_expensive_tasks_are_never_stolen():
    for kw in ({"workers": ["w0"]}, {"workers": ["w0"], "allow_other_workers": True}):
        s = loaded(**kw)
        assert steals(s.handle(AddWorker("w1", 1))) == []
    s = SchedulerState(validate=True)
    s.handle(AddWorker("w0", 1, resources={"GPU": 1}), AddKeys("w0", {"x": 10}, client="c"))
    s.handle(UpdateGraph("c", [NewTask(f"g-{i}", b"s", ["x"], (0, 0, i), resources={"GPU": 1}) for i in range(3)],
                         ["g-0", "g-1", "g-2"]))
    assert steals(s.handle(AddWorker("w1", 1, resources={"GPU": 1}))) == []
    # copying 1 GB (2 s at 500 MB/s) for a 50 ms task: not worth it
    s = loaded(nbytes=10**9)
    assert steals(s.handle(AddWorker("w1", 1))) == []
    # tiny tasks: the request's round trip costs more than running them
    s = loaded(duration=0.001)
    assert steals(s.handle(AddWorker("w1", 1))) == []


def test_stealing_off_and_seceded_tasks_stay():
    s = loaded()
    s.work_stealing = False
    assert steals(s.handle(AddWorker("w1", 1))) == []
    s = loaded(n=2)
    s.handle(TaskSeceded("w0", "work-1"))  # seceded: running (waiting for others), not stealable
    assert steals(s.handle(AddWorker("w1", 1))) == []


def test_thief_gone_before_the_answer_gives_the_task_back_to_the_victim():
    s = loaded(n=3)
    s.handle(AddWorker("w1", 1))
    s.handle(RemoveWorker("w1"))
    out = s.handle(StealResponse("w0", "work-2", "ready"))
    assert computes(out) == [("w0", "work-2")]


def test_victim_lost_while_stealing_and_paused_victims():
    s = loaded(n=3)
    s.handle(AddWorker("w1", 1))
    out = s.handle(RemoveWorker("w0"))  # x is lost (scattered): its dependents err, nothing is stuck
    assert not s.stealing
    s = loaded(n=3)
    s.handle(WorkerStatus("w0", "paused"))
    out = s.handle(AddWorker("w1", 1))
    assert len(steals(out)) == 1  # a paused worker starts nothing: even its first task may go


def test_queued_root_tasks_go_to_free_slots_not_by_stealing():
    s = SchedulerState(validate=True)
    s.handle(AddWorker("w0", 1))
    s.handle(UpdateGraph("c", [NewTask(f"r-{i}", b"s", [], (0, 0, i)) for i in range(4)], [f"r-{i}" for i in range(4)]))
    out = s.handle(AddWorker("w1", 1))
    assert computes(out) == [("w1", "r-1")] and steals(out) == []


def test_restart_drops_steals_in_flight():
    s = loaded(n=3)
    s.handle(AddWorker("w1", 1))
    s.handle(Restart())
    assert not s.stealing


def test_worker_drops_only_tasks_that_have_not_started():
    ws = WorkerState(nthreads=1, address="w0", validate=True)
    ws.handle(ComputeTask("a", b"s", (0, 0, 0)), ComputeTask("b", b"s", (0, 0, 1)))
    out = ws.handle(StealRequest("b"), StealRequest("a"), StealRequest("zzz"))
    answers = [i.msg for i in out if isinstance(i, SendToScheduler)]
    assert answers == [{"op": "steal-response", "key": "b", "state": "ready"},
                       {"op": "steal-response", "key": "a", "state": "executing"},
                       {"op": "steal-response", "key": "zzz", "state": None}]
    assert "b" not in ws.tasks and ws.tasks["a"].state == "executing"
    out = ws.handle(ExecuteSuccess("a", 1))
    assert [i.msg["op"] for i in out if isinstance(i, SendToScheduler)] == ["task-finished"]


@pytest.mark.parametrize("seed", range(30))
def test_random_steals_never_run_a_task_twice(seed):
    """Workers answer steal requests at random times; every task ends in memory exactly once."""
    rng = random.Random(seed)
    s = SchedulerState(validate=True)
    s.durations["work"] = 0.05
    s.handle(AddWorker("w0", rng.randint(1, 2)), AddKeys("w0", {"x": 100}, client="c"))
    n = rng.randint(5, 30)
    s.handle(UpdateGraph("c", [NewTask(f"work-{i}", b"s", ["x"], (0, 0, i)) for i in range(n)],
                         [f"work-{i}" for i in range(n)]))
    # worker-side truth: which tasks each worker holds and which it runs (at most nthreads)
    held: dict[str, list[str]] = {"w0": [k for k, ts in s.tasks.items() if k != "x"]}
    pending_steals: list = []
    finished: list[str] = []

    def carry(out):
        for o in out:
            if isinstance(o, ToWorker) and o.msg["op"] == "compute-task":
                held.setdefault(o.worker, []).append(o.msg["key"])
            elif isinstance(o, ToWorker) and o.msg["op"] == "steal-request":
                pending_steals.append((o.worker, o.msg["key"]))

    carry(s.handle(AddWorker("w1", rng.randint(1, 2))))
    for _ in range(2000):
        if len(finished) == n:
            break
        r = rng.random()
        if r < 0.4 and pending_steals:
            w, key = pending_steals.pop(rng.randrange(len(pending_steals)))
            nthreads = s.workers[w].nthreads if w in s.workers else 1
            tasks = held.get(w, [])
            if key in tasks and tasks.index(key) >= nthreads:  # not started there: dropped
                tasks.remove(key)
                carry(s.handle(StealResponse(w, key, "ready")))
            else:
                carry(s.handle(StealResponse(w, key, "executing" if key in tasks else "memory")))
        else:
            busy = [w for w, ks in held.items() if ks]
            if not busy:
                continue
            w = rng.choice(busy)
            key = held[w].pop(0)
            finished.append(key)
            carry(s.handle(TaskFinished(w, key, nbytes=1, start=0.0, stop=0.05)))
    assert sorted(finished) == sorted(f"work-{i}" for i in range(n)), "a task ran twice or never"
    assert s.steal_counts["requested"] >= 1
    assert all(s.tasks[f"work-{i}"].state == "memory" for i in range(n))
