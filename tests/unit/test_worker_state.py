"""WorkerState alone: events in, instructions out, validate() after every event."""

import pytest

from xsched.worker.state import (
    ComputeTask, Execute, ExecuteFailure, ExecuteSuccess, FreeData, FreeKeys, GatherDep, GatherDepFailure,
    GatherDepSuccess, Pause, SendToScheduler, Unpause, UpdateData, WorkerState,
)


def W(**kw):
    kw.setdefault("address", "me")
    return WorkerState(validate=True, **kw)


def kinds(out):
    return [type(i).__name__ for i in out]


def sched_ops(out):
    return [(i.msg["op"], i.msg.get("key")) for i in out if isinstance(i, SendToScheduler)]


def test_runs_highest_priority_first_within_threads():
    ws = W(nthreads=1)
    out = ws.handle(ComputeTask("low", b"s", (0, 0, 5)), ComputeTask("high", b"s", (0, 0, 1)))
    assert [i.key for i in out if isinstance(i, Execute)] == ["high"]
    out = ws.handle(ExecuteSuccess("high", 10, "int"))
    assert sched_ops(out) == [("task-finished", "high")]
    assert [i.key for i in out if isinstance(i, Execute)] == ["low"]
    assert ws.active == {"low"}


def test_fetches_dependencies_from_peers_then_runs():
    ws = W(nthreads=2)
    out = ws.handle(ComputeTask("c", b"s", (0,), who_has={"a": ["peer1"], "b": ["peer1", "peer2"]},
                                nbytes={"a": 5, "b": 7}))
    gathers = [i for i in out if isinstance(i, GatherDep)]
    assert len(gathers) == 1 and gathers[0].worker == "peer1" and sorted(gathers[0].keys) == ["a", "b"]
    out = ws.handle(GatherDepSuccess("peer1", {"a": 5, "b": 7}))
    assert [i.key for i in out if isinstance(i, Execute)] == ["c"]
    assert ("add-keys", None) in sched_ops(out)


def test_peer_failure_tries_another_holder_then_gives_back():
    ws = W()
    out = ws.handle(ComputeTask("c", b"s", (0,), who_has={"a": ["p1", "p2"]}, nbytes={"a": 1}))
    first = [i for i in out if isinstance(i, GatherDep)][0].worker
    out = ws.handle(GatherDepFailure(first, ["a"]))
    second = [i for i in out if isinstance(i, GatherDep)]
    assert second and second[0].worker != first
    out = ws.handle(GatherDepFailure(second[0].worker, ["a"]))
    assert ("reschedule", "c") in sched_ops(out)
    assert "c" not in ws.tasks


def test_failure_is_reported_and_forgotten():
    ws = W()
    ws.handle(ComputeTask("a", b"s"))
    out = ws.handle(ExecuteFailure("a", b"exc", b"tb", "ValueError: bad"))
    assert sched_ops(out) == [("task-erred", "a")]
    assert "a" not in ws.tasks


def test_free_keys_while_executing_drops_the_result():
    ws = W()
    ws.handle(ComputeTask("a", b"s"))
    ws.handle(FreeKeys(["a"]))
    assert ws.tasks["a"].state == "cancelled"
    out = ws.handle(ExecuteSuccess("a", 10))
    assert kinds(out) == ["FreeData"] and "a" not in ws.tasks


def test_free_keys_frees_data():
    ws = W()
    ws.handle(ComputeTask("a", b"s"))
    ws.handle(ExecuteSuccess("a", 10))
    assert ws.nbytes_in_memory == 10
    out = ws.handle(FreeKeys(["a"]))
    assert out == [FreeData(["a"])] and ws.nbytes_in_memory == 0


def test_pause_stops_new_work_until_unpaused():
    ws = W(nthreads=1)
    ws.handle(Pause())
    out = ws.handle(ComputeTask("a", b"s"))
    assert not [i for i in out if isinstance(i, Execute)]
    out = ws.handle(Unpause())
    assert [i.key for i in out if isinstance(i, Execute)] == ["a"]


def test_paused_worker_fetches_nothing():
    ws = W()
    ws.handle(Pause())
    out = ws.handle(ComputeTask("c", b"s", who_has={"a": ["p"]}, nbytes={"a": 1}))
    assert not [i for i in out if isinstance(i, GatherDep)]


def test_resources_bound_concurrency():
    ws = W(nthreads=4, resources={"GPU": 1})
    out = ws.handle(*[ComputeTask(f"g{i}", b"s", (0, i), resources={"GPU": 1}) for i in range(3)],
                    ComputeTask("cpu", b"s", (0, 9)))
    assert sorted(i.key for i in out if isinstance(i, Execute)) == ["cpu", "g0"]
    out = ws.handle(ExecuteSuccess("g0", 1))
    assert [i.key for i in out if isinstance(i, Execute)] == ["g1"]


def test_scattered_data_is_memory_and_computed_key_is_answered_at_once():
    ws = W()
    ws.handle(UpdateData({"x": 100}))
    out = ws.handle(ComputeTask("x", b"s"))
    assert sched_ops(out) == [("task-finished", "x")]


def test_unknown_event_type_raises():
    with pytest.raises(TypeError):
        WorkerState().handle(object())


def test_cancelled_fetch_then_compute_runs_it_here():
    """A dependency in flight is released, then the scheduler asks us to compute it."""
    ws = W()
    ws.handle(ComputeTask("c", b"s", who_has={"a": ["dead-peer"]}, nbytes={"a": 1}))
    assert ws.tasks["a"].state == "flight"
    ws.handle(FreeKeys(["c"]))
    assert ws.tasks["a"].state == "cancelled"
    out = ws.handle(ComputeTask("a", b"s"))
    assert [i.key for i in out if isinstance(i, Execute)] == ["a"]
    out = ws.handle(GatherDepFailure("dead-peer", ["a"]))  # the old fetch fails late: no effect
    assert ws.tasks["a"].state == "executing"
    out = ws.handle(ExecuteSuccess("a", 1))
    assert ("task-finished", "a") in sched_ops(out)


def test_input_cancelled_mid_fetch_then_wanted_again_still_arrives():
    ws = W()
    ws.handle(ComputeTask("y", b"s", who_has={"x": ["peer"]}, nbytes={"x": 1}))
    ws.handle(FreeKeys(["y"]))
    assert ws.tasks["x"].state == "cancelled"
    out = ws.handle(ComputeTask("z", b"s", who_has={"x": ["peer"]}, nbytes={"x": 1}))
    assert ws.tasks["x"].state == "flight" and ws.tasks["z"].state == "waiting"
    out = ws.handle(GatherDepSuccess("peer", {"x": 1}))
    assert [i.key for i in out if isinstance(i, Execute)] == ["z"]


def test_a_wanted_task_runs_wanted_and_its_inline_result_goes_with_task_finished():
    ws = W(nthreads=1)
    out = ws.handle(ComputeTask("a", b"s", (0,), wanted=True))
    [ex] = [i for i in out if isinstance(i, Execute)]
    assert ex.wanted is True
    out = ws.handle(ExecuteSuccess("a", 8, "int", inline=b"pickled"))
    [msg] = [i.msg for i in out if isinstance(i, SendToScheduler)]
    assert msg["op"] == "task-finished" and msg["inline"] == b"pickled"
    out = ws.handle(ComputeTask("b", b"s", (0,)))
    assert [i.wanted for i in out if isinstance(i, Execute)] == [False]
    out = ws.handle(ExecuteSuccess("b", 8, "int"))
    assert [i.msg.get("inline") for i in out if isinstance(i, SendToScheduler)] == [None]


def test_a_dependency_that_came_with_the_task_is_in_memory_and_not_fetched():
    ws = W(nthreads=1)
    assert ws.takes_inline("a")
    out = ws.handle(ComputeTask("c", b"s", (0,), who_has={"a": ["peer1"], "b": ["me"]}, nbytes={"a": 28, "b": 28},
                                inline={"a": 28, "b": 28}))
    assert not [i for i in out if isinstance(i, GatherDep)]
    assert [i.key for i in out if isinstance(i, Execute)] == ["c"]
    assert ws.tasks["a"].state == "memory" and ws.tasks["a"].nbytes == 28 and ws.counts["inlined"] == 2
    assert not sched_ops(out)  # the scheduler counts this worker as a holder already: no add-keys
    assert not ws.takes_inline("a")  # here now: a second copy is not taken
    ws.handle(ExecuteSuccess("c", 8, "int"))
    out = ws.handle(FreeKeys(["a"]))
    assert [i.keys for i in out if isinstance(i, FreeData)] == [["a"]]
    assert "a" not in ws.tasks or ws.tasks["a"].state == "released"


def test_a_value_that_came_with_a_task_ends_a_fetch_under_way_and_the_late_copy_is_dropped():
    ws = W(nthreads=1)
    out = ws.handle(ComputeTask("c", b"s", (0,), who_has={"a": ["peer1"]}, nbytes={"a": 5}))
    assert [i.worker for i in out if isinstance(i, GatherDep)] == ["peer1"] and ws.tasks["a"].state == "flight"
    assert ws.takes_inline("a")
    out = ws.handle(ComputeTask("d", b"s", (0,), who_has={"a": ["peer1"]}, nbytes={"a": 5}, inline={"a": 5}))
    assert ws.tasks["a"].state == "memory" and [i.key for i in out if isinstance(i, Execute)] == ["c"]
    out = ws.handle(GatherDepSuccess("peer1", {"a": 5}))
    assert ws.tasks["a"].state == "memory" and not sched_ops(out)  # (no second add-keys, no double count)
    assert ws.nbytes_in_memory == 5


def test_a_task_computing_here_takes_no_value_for_its_own_key():
    ws = W(nthreads=1)
    ws.handle(ComputeTask("a", b"s", (0,)))
    assert ws.tasks["a"].state == "executing" and not ws.takes_inline("a")


def test_values_that_came_with_a_task_are_taken_even_when_the_task_is_already_here():
    """The server stored them before the state machine saw the task: whatever the task's
    state, they are in memory here now (else nothing would ever free them)."""
    ws = W(nthreads=1)
    ws.handle(ComputeTask("t", b"s", (0,)))
    assert ws.tasks["t"].state == "executing"
    ws.handle(ComputeTask("t", b"s", (0,), who_has={"d": ["peer"]}, nbytes={"d": 28}, inline={"d": 28}))
    assert ws.tasks["d"].state == "memory"
    out = ws.handle(FreeKeys(["d"]))
    assert [i.keys for i in out if isinstance(i, FreeData)] == [["d"]]


def test_a_value_not_stored_is_reported_so_the_scheduler_counts_no_copy_here():
    ws = W(nthreads=1)
    out = ws.handle(ComputeTask("c", b"s", (0,), who_has={"a": ["peer1"]}, nbytes={"a": 5}, inline={"a": None}))
    assert ("missing-data", "a") in sched_ops(out)
    assert [i.msg["errant_worker"] for i in out if isinstance(i, SendToScheduler)] == ["me"]
    assert [i.worker for i in out if isinstance(i, GatherDep)] == ["peer1"]  # fetched the usual way


def test_fetched_data_for_a_key_freed_meanwhile_is_dropped():
    """A fetch under way, the value arrives with a task first, the key is freed: the late
    copy the server stored (off the loop) must be freed too."""
    ws = W(nthreads=1)
    ws.handle(ComputeTask("c", b"s", (0,), who_has={"a": ["peer1"]}, nbytes={"a": 5}))
    ws.handle(ComputeTask("d", b"s", (0,), who_has={"a": ["peer1"]}, nbytes={"a": 5}, inline={"a": 5}))
    ws.handle(ExecuteSuccess("c", 8, "int"))
    ws.handle(FreeKeys(["c", "d", "a"]))
    out = ws.handle(GatherDepSuccess("peer1", {"a": 5}))
    assert [i.keys for i in out if isinstance(i, FreeData)] == [["a"]]


def test_forgetting_an_old_copy_of_a_key_keeps_the_task_that_came_back():
    """D is forgotten while a released task still links it, then computed here again: when
    that link goes, the new task for D stays (it used to be dropped, and the scheduler
    waited for it forever)."""
    ws = W(nthreads=1)
    ws.handle(ComputeTask("D", b"s"))
    ws.handle(ExecuteSuccess("D", 8, "int"))
    ws.handle(ComputeTask("A", b"s", who_has={"D": [ws.address]}))
    ws.handle(ExecuteSuccess("A", 8, "int"))
    ws.handle(ComputeTask("B", b"s", who_has={"A": [ws.address]}))
    assert ws.tasks["B"].state == "executing"
    ws.handle(FreeKeys(["D"]))          # still A's input: released, kept
    ws.handle(FreeKeys(["A"]))          # still B's input: released, kept, still linking D
    ws.handle(FreeKeys(["D"]))          # forgotten now (A is released)
    assert "D" not in ws.tasks
    ws.handle(ComputeTask("D", b"s"))   # wanted again: a new task, waiting for the thread
    assert ws.tasks["D"].state == "ready"
    ws.handle(FreeKeys(["B"]))          # B's result will be dropped ...
    ws.handle(ExecuteSuccess("B", 8, "int"))  # ... and forgetting B forgets A and the old D
    assert "D" in ws.tasks and ws.tasks["D"].state in ("ready", "executing")
