"""The p2p shuffle's pure parts: the two state-machine events its extension uses
(RecomputeKeys, RestrictTasks), its graph (keys, annotations that fusion respects), and the
choice of method."""

from __future__ import annotations

import pytest

import xsched
from xsched.graph.optimize import optimize
from xsched.graph.p2p import barrier_key, owner, p2p_layers, shuffle_method, transfer_key
from xsched.scheduler.state import (
    AddWorker, NewTask, RecomputeKeys, RemoveWorker, RestrictTasks, SchedulerState, TaskFinished, ToWorker,
)
from xsched.scheduler.state import UpdateGraph as UG


def make(n_workers=2):
    s = SchedulerState(validate=True)
    for i in range(n_workers):
        s.handle(AddWorker(f"w{i}", nthreads=1))
    return s


def T(key, deps=(), prio=0, **kw):
    return NewTask(key, b"spec", list(deps), (0, 0, prio), **kw)


def computes(out):
    return [(o.worker, o.msg["key"]) for o in out if isinstance(o, ToWorker) and o.msg["op"] == "compute-task"]


def shuffle_graph(s, n_in=2, n_out=2):
    """inputs -> transfers -> barrier -> outputs, as p2p_layers builds them (names aside)."""
    tasks = [T(f"in-{i}") for i in range(n_in)]
    tasks += [T(transfer_key("s", i), [f"in-{i}"]) for i in range(n_in)]
    tasks += [T(barrier_key("s"), [transfer_key("s", i) for i in range(n_in)])]
    tasks += [T(f"out-{j}", [barrier_key("s")]) for j in range(n_out)]
    return s.handle(UG("c", tasks, [f"out-{j}" for j in range(n_out)]))


def finish(s, key):
    ws = s.tasks[key].processing_on
    return s.handle(TaskFinished(ws.address, key, nbytes=8))


def finish_all(s, keys):
    """Finish ``keys`` as they are placed (a worker with one thread runs one at a time);
    each is then in memory, or released once its dependents are done with it."""
    while True:
        running = [k for k in keys if s.tasks[k].state == "processing"]
        if not running:
            assert all(s.tasks[k].state in ("memory", "released") for k in keys), \
                [(k, s.tasks[k].state) for k in keys]
            return
        finish(s, running[0])


def test_restricted_outputs_run_on_their_workers():
    s = make(2)
    shuffle_graph(s)
    s.handle(RestrictTasks({"out-0": ["w1"], "out-1": ["w0"], "no-such-key": ["w0"]}))
    finish_all(s, ["in-0", "in-1", transfer_key("s", 0), transfer_key("s", 1)])
    out = finish(s, barrier_key("s"))
    assert sorted(computes(out)) == [("w0", "out-1"), ("w1", "out-0")]


def test_a_task_restricted_to_a_gone_worker_is_placed_again_when_restricted_anew():
    s = make(2)
    shuffle_graph(s, n_out=1)
    s.handle(RestrictTasks({"out-0": ["w1"]}))
    s.handle(RemoveWorker("w1"))
    finish_all(s, ["in-0", "in-1", transfer_key("s", 0), transfer_key("s", 1), barrier_key("s")])
    assert s.tasks["out-0"].state == "no-worker"
    out = s.handle(RestrictTasks({"out-0": ["w0"]}))
    assert computes(out) == [("w0", "out-0")]


def test_restrictions_leave_running_and_finished_tasks_alone():
    s = make(1)
    s.handle(UG("c", [T("a"), T("b")], ["a", "b"]))
    first = next(k for k in "ab" if s.tasks[k].state == "processing")
    second = "b" if first == "a" else "a"
    finish(s, first)
    assert s.tasks[second].state == "processing"
    s.handle(RestrictTasks({"a": ["w9"], "b": ["w9"]}))
    assert s.tasks["a"].worker_restrictions is None and s.tasks["b"].worker_restrictions is None


def test_recompute_drops_copies_stops_running_tasks_and_recomputes_inputs():
    s = make(2)
    shuffle_graph(s)
    finish_all(s, ["in-0", "in-1"])
    finish(s, transfer_key("s", 0))
    t0, t1 = transfer_key("s", 0), transfer_key("s", 1)
    assert s.tasks[t0].state == "memory" and s.tasks[t1].state == "processing"
    assert s.tasks["in-0"].state == "released"  # (its only dependent is done with it)
    holder = next(iter(s.tasks[t0].who_has)).address
    running_on = s.tasks[t1].processing_on.address
    out = s.handle(RecomputeKeys([t0, t1, barrier_key("s"), "no-such-key"]))
    frees = [(o.worker, o.msg["keys"]) for o in out if isinstance(o, ToWorker) and o.msg["op"] == "free-keys"]
    assert (holder, [t0]) in frees and (running_on, [t1]) in frees
    # both transfers wait again; the input the finished one needs is computed again
    assert s.tasks[t0].state == "waiting" and s.tasks["in-0"].state in ("processing", "queued")
    assert s.tasks[t1].state in ("waiting", "processing") and s.tasks[barrier_key("s")].state == "waiting"
    assert not s.tasks[t0].who_has and s.tasks[t0] not in s.workers[holder].has_what


def test_recompute_of_a_finished_barrier_stops_its_running_outputs():
    s = make(2)
    shuffle_graph(s)
    finish_all(s, ["in-0", "in-1", transfer_key("s", 0), transfer_key("s", 1), barrier_key("s")])
    finish(s, "out-0")
    assert s.tasks["out-1"].state == "processing"
    s.handle(RecomputeKeys([transfer_key("s", 0), transfer_key("s", 1), barrier_key("s")]))
    assert s.tasks["out-0"].state == "memory"  # built already: kept
    assert s.tasks["out-1"].state == "waiting" and s.tasks[barrier_key("s")].state == "waiting"


def test_layers_keys_and_fusion_keeps_the_outputs():
    layers, keys = p2p_layers(["a-0", "a-1", "a-2"], 2, len, list, "tok", "out-tok")
    graph = {"a-0": 1, "a-1": 2, "a-2": 3}
    for layer in layers.values():
        graph.update(layer)
    assert keys == ["out-tok-0", "out-tok-1"]
    assert sorted(layers["shuffle-transfer-tok"]) == [transfer_key("tok", i) for i in range(3)]
    assert all(graph[k].annotations == {"shuffle": "tok"} for k in keys)
    # a partition-wise step after an output is not fused into it: the output keeps its key,
    # which the scheduler restricts to the worker holding its pieces
    from xsched.graph.spec import Ref, Task
    graph.update({f"next-{j}": Task(len, (Ref(k),)) for j, k in enumerate(keys)})
    fused = optimize(graph, ["next-0", "next-1"])
    assert set(keys) <= set(fused)


def test_owners_are_dealt_in_turn():
    assert [owner(j, ["a", "b", "c"]) for j in range(5)] == ["a", "b", "c", "a", "b"]


def test_method_by_setting_and_client():
    with xsched.config.set({"shuffle.method": "auto"}):
        assert shuffle_method() == "tasks"  # (no client here)
    with xsched.config.set({"shuffle.method": "p2p"}):
        assert shuffle_method() == "p2p"
    with pytest.raises(ValueError, match="'auto', 'p2p', 'tasks'"):
        shuffle_method("fast")


def test_outside_a_worker_the_exchange_runs_in_this_process():
    # (a graph built beside a Client, computed with scheduler="sync" to debug it)
    import xsched.dataframe as xd
    import pandas as pd
    import xsched.bag as xb

    pdf = pd.DataFrame({"k": [1, 2, 3, 1, 2, 3, 4], "v": range(7)})
    with xsched.config.set({"shuffle.method": "p2p"}):
        df = xd.from_pandas(pdf, npartitions=3).shuffle("k", npartitions=2)
        groups = xb.from_sequence(range(10), npartitions=3).groupby(lambda x: x % 3)
    for scheduler in ("sync", "threads"):
        out = df.compute(scheduler=scheduler)
        assert sorted(out.v) == list(range(7)) and df.npartitions == 2
        parts = [set(part.compute(scheduler=scheduler).k) for part in df.to_delayed()]
        assert sum(map(len, parts)) == len(set().union(*parts)) == 4  # (each key's rows in one partition)
        assert sorted((k, sorted(v)) for k, v in groups.compute(scheduler=scheduler)) == \
            [(0, [0, 3, 6, 9]), (1, [1, 4, 7]), (2, [2, 5, 8])]


def test_the_extension_watches_transitions_only_while_a_shuffle_is_under_way():
    from tests.support.fake_scheduler import FakeScheduler
    from xsched.scheduler.extensions import build

    server = FakeScheduler()
    server.extensions.update(build(server, ["shuffle"]))
    ext = server.extensions["shuffle"]
    server.add_worker("tcp://w:1")
    before = list(server.state.transition_hooks)
    shuffle_graph(server.state)
    reply = server.call("shuffle-get", peer=b"tcp://w:1", id="s", n_in=2, n_out=2, out="out")
    assert reply == {"run": 1, "workers": ["tcp://w:1"]}
    assert len(server.state.transition_hooks) == len(before) + 1
    assert server.state.tasks["out-0"].worker_restrictions == {"tcp://w:1"}
    ext.restart("test")
    assert server.state.transition_hooks == before and not ext.shuffles
