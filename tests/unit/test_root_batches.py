"""Queued root tasks that feed the same task are claimed in batches (placement.py): a
worker runs neighbouring blocks itself, so what joins them finds its inputs there."""

import pytest

from xsched.scheduler.state import (
    AddWorker, InvalidState, NewTask, RemoveWorker, SchedulerState, TaskFinished, ToWorker, WorkerStatus,
)
from xsched.scheduler.state import UpdateGraph as UG
from xsched.scheduler.state.placement import CLAIM_BATCH


def computes(out):
    return [(o.worker, o.msg["key"]) for o in out if isinstance(o, ToWorker) and o.msg["op"] == "compute-task"]


def neighbours(n, gen=0, user=0, prefix="r"):
    """``n`` root blocks and a join of each block with the next (an overlap's shape)."""
    roots = [NewTask(f"{prefix}-{i}", b"s", [], (user, gen, 2 * i)) for i in range(n)]
    joins = [NewTask(f"{prefix}j-{i}", b"s", [f"{prefix}-{i}", f"{prefix}-{i + 1}"], (user, gen, 2 * i + 1))
             for i in range(n - 1)]
    return roots + joins, [t.key for t in joins]


def state(n_workers=2, nthreads=1):
    s = SchedulerState(validate=True)
    for i in range(n_workers):
        s.handle(AddWorker(f"w{i}", nthreads))
    return s


def finish(s, worker, key, nbytes=1000):
    return computes(s.handle(TaskFinished(worker, key, nbytes=nbytes, start=0.0, stop=0.01)))


def test_neighbouring_blocks_go_to_one_worker_in_batches():
    s = state()
    tasks, wanted = neighbours(16)
    # 16 queued for 2 workers: batches of min(CLAIM_BATCH, 16 // 4) = 4
    assert computes(s.handle(UG("c", tasks, wanted))) == [("w0", "r-0"), ("w1", "r-4")]
    assert finish(s, "w0", "r-0") == [("w0", "r-1")]  # its own batch, not the queue's head (r-8)
    assert finish(s, "w1", "r-4") == [("w1", "r-5")]
    assert finish(s, "w0", "r-1") == [("w0", "rj-0")]  # the join found both blocks on w0
    assert finish(s, "w0", "rj-0") == [("w0", "r-2")]


def test_batches_cut_the_transfers_of_a_chain_of_joins():
    """Run a chain of joins to the end; count the joins whose two blocks ran apart."""
    def run(batch):
        from xsched.scheduler.state import placement
        old, placement.CLAIM_BATCH = placement.CLAIM_BATCH, batch
        try:
            s = state()
            tasks, wanted = neighbours(40)
            where, pending = {}, computes(s.handle(UG("c", tasks, wanted)))
            while pending:
                w, k = pending.pop(0)
                where[k] = w
                pending += finish(s, w, k)
            return sum(where[f"r-{i}"] != where[f"r-{i + 1}"] for i in range(39))
        finally:
            placement.CLAIM_BATCH = old
    one_by_one, batched = run(1), run(CLAIM_BATCH)
    assert one_by_one >= 30 and batched <= 12, (one_by_one, batched)


def test_independent_roots_are_not_batched():
    s = state()
    tasks = [NewTask(f"r-{i}", b"s", [], (0, 0, i)) for i in range(16)]
    assert computes(s.handle(UG("c", tasks, [t.key for t in tasks]))) == [("w0", "r-0"), ("w1", "r-1")]
    assert finish(s, "w0", "r-0") == [("w0", "r-2")]


def test_an_older_graph_or_a_higher_priority_comes_before_a_batch():
    s = state(n_workers=1)
    tasks, wanted = neighbours(8)
    assert computes(s.handle(UG("c", tasks, wanted))) == [("w0", "r-0")]  # r-1.. claimed
    urgent, uwanted = neighbours(4, user=-1, prefix="u")
    s.handle(UG("c", urgent, uwanted))
    assert finish(s, "w0", "r-0") == [("w0", "u-0")]


def test_a_worker_that_leaves_or_pauses_gives_its_batch_back():
    s = state()
    tasks, wanted = neighbours(16)
    s.handle(UG("c", tasks, wanted))
    assert s._claims[s.workers["w0"]]
    s.handle(WorkerStatus("w0", "paused"))
    assert s.workers["w0"] not in s._claims
    s.handle(RemoveWorker("w1", stimulus_id="gone"))
    # w1's r-4 and its batch are queued again, and nothing is lost: w2 runs everything left
    out = computes(s.handle(AddWorker("w2", 1)))
    assert out == [("w2", "r-1")]
    done, pending = {"r-0"} - set(), list(out)
    while pending:
        w, k = pending.pop(0)
        done.add(k)
        pending += finish(s, w, k)
    assert done >= {f"r-{i}" for i in range(1, 16)} | {f"rj-{i}" for i in range(1, 15)}


def test_a_free_worker_takes_the_last_of_another_s_batch_when_the_queue_is_empty():
    s = state(n_workers=1)
    tasks, wanted = neighbours(8)
    assert computes(s.handle(UG("c", tasks, wanted))) == [("w0", "r-0")]  # claims r-1 .. r-3
    out = computes(s.handle(AddWorker("w1", 1)))
    assert out == [("w1", "r-4")]
    # w0 stays busy with r-0 while w1 runs the rest: w1 drains the queue (r-4 .. r-7 and
    # their joins), then takes w0's batch from its back, r-3 first
    ran, pending = [], list(out)
    while pending:
        w, k = pending.pop(0)
        ran.append(k)
        pending += finish(s, w, k)
    roots = [k for k in ran if k.startswith("r-")]
    assert roots == ["r-4", "r-5", "r-6", "r-7", "r-3", "r-2", "r-1"], ran
    assert s.tasks["r-0"].state == "processing"


def test_validation_catches_a_batch_left_with_a_worker_that_cannot_run_it():
    s = state()
    tasks, wanted = neighbours(16)
    s.handle(UG("c", tasks, wanted))
    s.workers["w0"].status = "paused"  # (behind the state machine's back: no release)
    with pytest.raises(InvalidState, match="is claimed by w0, which is paused"):
        s.validate()


def test_explain_names_the_worker_whose_batch_holds_a_queued_task():
    s = state()
    tasks, wanted = neighbours(16)
    s.handle(UG("c", tasks, wanted))
    assert s.explain("r-1").endswith("; in the batch of neighbours w0 runs next")
    assert "batch" not in s.explain("r-8")  # still in the queue, nobody's yet
