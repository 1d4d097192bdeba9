"""Tasks that launch tasks: secede/rejoin in both state machines, then worker_client on a cluster."""

from __future__ import annotations

import pytest

from xsched import get_worker, local_client, rejoin, secede, worker_client
from xsched.protocol.schemas import TO_SCHEDULER
from xsched.scheduler.state import (
    AddWorker, NewTask, SchedulerState, TaskFinished, TaskRejoined, TaskSeceded, ToWorker, UpdateGraph,
)
from xsched.worker.state import (
    ComputeTask, Execute, ExecuteSuccess, FreeKeys, Pause, Rejoin, Rejoined, Secede, SendToScheduler, WorkerState,
)


def W(**kw):
    return WorkerState(validate=True, address="me", **kw)


def executes(out):
    return [i.key for i in out if isinstance(i, Execute)]


def sched_ops(out):
    return [(i.msg["op"], i.msg.get("key")) for i in out if isinstance(i, SendToScheduler)]


# ---------------------------------------------------------------------- worker state machine
def test_seceded_task_frees_its_slot_and_rejoins_before_ready_tasks():
    ws = W(nthreads=1)
    assert executes(ws.handle(ComputeTask("a", b"s", (0, 0, 1)), ComputeTask("b", b"s", (0, 0, 2)),
                              ComputeTask("c", b"s", (0, 0, 3)))) == ["a"]
    out = ws.handle(Secede("a"))
    assert sched_ops(out) == [("task-seceded", "a")] and executes(out) == ["b"]
    assert ws.tasks["a"].state == "long-running" and ws.active == {"b"}
    out = ws.handle(Rejoin("a"))  # no free slot: a waits (c does not start either)
    assert out == []
    out = ws.handle(ExecuteSuccess("b", 1))
    assert [type(i).__name__ for i in out if not isinstance(i, SendToScheduler)] == ["Rejoined"]
    assert sched_ops(out) == [("task-finished", "b"), ("task-rejoined", "a")]
    assert ws.tasks["a"].state == "executing" and ws.tasks["c"].state == "ready"
    out = ws.handle(ExecuteSuccess("a", 1))
    assert executes(out) == ["c"]


def test_rejoin_without_secede_answers_at_once():
    ws = W(nthreads=1)
    ws.handle(ComputeTask("a", b"s"))
    out = ws.handle(Rejoin("a"))  # (handled after ComputeTask's Execute: "a" is executing)
    assert [type(i) for i in out] == [Rejoined]
    assert ws.handle(Secede("a"), Secede("a")) and len(ws.long_running) == 1


def test_seceded_task_released_then_finishing_is_dropped_and_paused_worker_still_rejoins():
    ws = W(nthreads=1)
    ws.handle(ComputeTask("a", b"s"))
    ws.handle(Secede("a"), FreeKeys(["a"]))
    assert ws.tasks["a"].state == "cancelled"
    ws.handle(ComputeTask("a", b"s"))  # wanted again while still running, seceded
    assert ws.tasks["a"].state == "long-running"
    out = ws.handle(Pause(), Rejoin("a"))
    assert [type(i) for i in out if not isinstance(i, SendToScheduler)] == [Rejoined]
    assert sched_ops(out) == [("worker-status", None), ("task-rejoined", "a")]  # the pause, then the rejoin


def test_time_spent_seceded_is_reported_apart_from_the_run():
    ws = W(nthreads=1)
    ws.handle(ComputeTask("a", b"s"), ComputeTask("b", b"s"))
    ws.handle(Secede("a"), Rejoin("a"))
    out = ws.handle(ExecuteSuccess("b", 1, "int", start=10.0, stop=11.0),  # never seceded: no field
                    ExecuteSuccess("a", 1, "int", start=10.0, stop=20.0, seceded=9.5))
    msgs = {i.msg["key"]: i.msg for i in out if isinstance(i, SendToScheduler) and i.msg["op"] == "task-finished"}
    assert "seceded" not in msgs["b"]
    assert (msgs["a"]["start"], msgs["a"]["stop"], msgs["a"]["seceded"]) == (10.0, 20.0, 9.5)
    for msg in msgs.values():
        TO_SCHEDULER.check(msg)


# ---------------------------------------------------------------------- scheduler state machine
def test_scheduler_sends_queued_root_tasks_to_a_seceded_slot():
    s = SchedulerState(validate=True)
    s.handle(AddWorker("w", nthreads=1))
    s.handle(UpdateGraph("c", [NewTask(f"r{i}", b"s", [], (0, 0, i)) for i in range(3)], ["r0", "r1", "r2"]))
    assert s.n_queued == 2
    out = s.handle(TaskSeceded("w", "r0"))
    assert [o.msg["key"] for o in out if isinstance(o, ToWorker)] == ["r1"]
    assert s.n_queued == 1 and s.workers["w"].occupancy == pytest.approx(0.5)
    s.handle(TaskRejoined("w", "r0"))
    out = s.handle(TaskFinished("w", "r1"))  # r0 holds the one slot again: r2 stays queued
    assert not [o for o in out if isinstance(o, ToWorker) and o.msg["op"] == "compute-task"] and s.n_queued == 1
    out = s.handle(TaskFinished("w", "r0"))
    assert [o.msg["key"] for o in out if isinstance(o, ToWorker) and o.msg["op"] == "compute-task"] == ["r2"]


def test_scheduler_learns_a_seceded_task_s_own_time_not_its_wait():
    """A parent that waited 10 s for its children, seceded, ran for 10 ms itself: its prefix
    is learned as short as its leaves, and the next task of it counts as that little work
    ahead of its worker (not 10 s)."""
    top, leaf, later = "fib-" + "a" * 16, "fib-" + "b" * 16, "fib-" + "c" * 16
    s = SchedulerState(validate=True)
    s.handle(AddWorker("w", nthreads=1))
    s.handle(UpdateGraph("c", [NewTask(top, b"s", [], (0, 0, 0))], [top]))
    s.handle(TaskSeceded("w", top))
    s.handle(UpdateGraph("c", [NewTask(leaf, b"s", [], (0, 0, 1))], [leaf]))
    s.handle(TaskFinished("w", leaf, 8, start=100.0, stop=100.002))
    s.handle(TaskRejoined("w", top))
    s.handle(TaskFinished("w", top, 8, start=90.0, stop=100.01, seceded=10.0))
    assert s.durations["fib"] == pytest.approx(0.5 * 0.002 + 0.5 * 0.01)
    s.handle(UpdateGraph("c", [NewTask(later, b"s", [], (0, 0, 2))], [later]))
    assert s.workers["w"].occupancy == pytest.approx(s.durations["fib"])


# ---------------------------------------------------------------------- on a cluster
def fib(n):
    if n < 2:
        return n
    with worker_client() as c:
        a, b = c.submit(fib, n - 1), c.submit(fib, n - 2)
        return a.result() + b.result()


def where_and_client(_):
    from xsched import get_client

    with local_client() as c1, worker_client() as c2:
        assert c1 is c2 is get_client()
        return get_worker().address, c1.id


def seceding_sum(n):
    from xsched import get_client

    c = get_client()
    futs = c.map(lambda x: x + 1, range(n))
    secede()
    total = sum(c.gather(futs))
    rejoin()
    return total


@pytest.mark.cluster
@pytest.mark.timeout(120)
def test_fib_through_worker_client_on_two_single_thread_workers(client):
    assert client.submit(fib, 12).result(timeout=100) == 144
    # every distinct fib(k) ran once, on the two workers, and the slots were given back
    info = client.run_on_scheduler(lambda scheduler: {
        a: (len(ws.processing), len(ws.long_running)) for a, ws in scheduler.state.workers.items()})
    assert all(v == (0, 0) for v in info.values()), info


def fib_timed(n):
    """``fib`` under a prefix of its own, for the duration the scheduler learns of it."""
    if n < 2:
        return n
    with worker_client() as c:
        a, b = c.submit(fib_timed, n - 1), c.submit(fib_timed, n - 2)
        return a.result() + b.result()


@pytest.mark.cluster
@pytest.mark.timeout(120)
def test_a_recursion_through_worker_client_teaches_its_own_time_not_its_wait(client):
    # every worker makes its client first, so no fib_timed task pays for connecting it
    addrs = sorted(client.scheduler_info()["workers"])
    client.gather([client.submit(where_and_client, a, workers=[a], pure=False) for a in addrs])
    top = client.submit(fib_timed, 10)
    assert top.result(timeout=100) == 55
    key = top.key
    spans = client.run(lambda worker: [(b, e) for k, b, e, status in worker.task_log if k == key])
    [(start, stop)] = [span for found in spans.values() for span in found]
    # the scheduler handled top's task-finished before it told us top was in memory
    learned = client.run_on_scheduler(lambda scheduler: scheduler.state.durations.get("fib_timed"))
    assert learned is not None
    # learning the top's whole run (as before) gives at least half of it: the EWMA's last step
    assert learned < 0.5 * (stop - start), (learned, stop - start)


@pytest.mark.cluster
@pytest.mark.timeout(60)
def test_one_client_per_worker_process_and_public_secede(client):
    out = client.gather(client.map(where_and_client, range(6)))
    by_worker = {}
    for addr, cid in out:
        by_worker.setdefault(addr, set()).add(cid)
    assert all(len(ids) == 1 for ids in by_worker.values()), by_worker
    assert client.submit(seceding_sum, 10).result(timeout=50) == 55


def test_outside_a_task_the_helpers_say_where_they_work():
    with pytest.raises(ValueError, match="only inside a task"):
        secede()
    with pytest.raises(ValueError, match="only inside a task"):
        with worker_client():
            pass
    with pytest.raises(ValueError, match="only inside a task"):
        get_worker()
