"""The update-graph a client builds for a collection: tasks without Futures go as they are,
with their dependencies from the optimiser, the others as before; and the large messages
of the way (unpacking, the scheduler's update-graph) run with the collector paused and
leave it as they found it."""

from __future__ import annotations

import gc
import operator
import random

import pytest

from xsched.client.future import Future, FutureState
from xsched.graph.optimize import optimize_with_refs
from xsched.graph.order import order
from xsched.graph.spec import Ref, Task, dependencies
from xsched.protocol.messages import GC_PAUSE_BYTES, decode, encode
from xsched.protocol.tasks import dumps_task
from xsched.protocol.update_graph import _as_list, futures_to_refs, graph_task_msgs, identity, task_msg


class StubClient:
    """What a Future needs of its client."""

    def _inc_ref(self, key):
        return FutureState()

    def _dec_ref(self, key):
        pass


def reference_msgs(graph, prio, gen, priority, resources, workers, allow_other_workers, retries, held):
    """Every task copied with its Futures replaced, its dependencies found again, and
    pickled alone: the entries the fast path must reproduce."""
    tasks = []
    for key, value in graph.items():
        if isinstance(value, Future):
            held.append(value)
            if value.key == key:
                continue
            value = Task(identity, (Ref(value.key),))
        elif not isinstance(value, Task):
            value = Task(identity, (futures_to_refs(value, held, Future),))
        else:
            value = Task(value.func, tuple(futures_to_refs(a, held, Future) for a in value.args),
                         {k: futures_to_refs(v, held, Future) for k, v in value.kwargs.items()}, value.annotations)
        ann = value.annotations or {}
        tasks.append(task_msg(
            key, value, sorted(dependencies(value)), (-ann.get("priority", priority), gen, prio.get(key, 0)),
            resources if resources is not None else ann.get("resources"),
            workers if workers is not None else _as_list(ann.get("workers")),
            allow_other_workers or ann.get("allow_other_workers", False),
            retries or ann.get("retries", 0), ann.get("limits"), dumps_task))
    return tasks


def random_graph(rng, client, n):
    g = {}
    for i in range(n):
        refs = [Ref(f"t-{j}") for j in rng.sample(range(i), min(i, rng.choice([0, 1, 2])))]
        r = rng.random()
        if r < 0.1:
            g[f"t-{i}"] = Future(f"t-{i}", client)  # a persisted value
        elif r < 0.15:
            g[f"t-{i}"] = Future(f"other-{i}", client)  # under another key
        elif r < 0.2:
            g[f"t-{i}"] = [1, Future(f"in-list-{i}", client)]  # a placeholder holding one
        elif r < 0.3:
            g[f"t-{i}"] = Task(operator.add, (Future(f"arg-{i}", client), *refs))
        elif r < 0.35:
            g[f"t-{i}"] = Task(max, tuple(refs) or (1,), {"default": Future(f"kw-{i}", client)})
        elif r < 0.4:
            g[f"t-{i}"] = Task(sum, ([*refs, (Future(f"nested-{i}", client), 2)],))
        elif r < 0.45:
            g[f"t-{i}"] = Task(len, tuple(refs) + (Ref("computed-elsewhere"),))
        else:
            g[f"t-{i}"] = Task(max, tuple(refs) or (i,))
        if rng.random() < 0.2 and type(g[f"t-{i}"]) is Task:
            g[f"t-{i}"].annotations = rng.choice([{"priority": 3}, {"resources": {"GPU": 1}}, {"workers": "w1"},
                                                   {"retries": 2, "limits": {"db": 1}}])
    return g


@pytest.mark.parametrize("options", [
    dict(priority=0, resources=None, workers=None, allow_other_workers=False, retries=0),
    dict(priority=5, resources={"MEM": 2}, workers=["tcp://w:1"], allow_other_workers=True, retries=1),
    dict(priority=0, resources={}, workers=None, allow_other_workers=True, retries=0),
])
def test_entries_are_those_of_copying_every_task(options):
    rng, client = random.Random(4), StubClient()
    for trial in range(60):
        g = random_graph(rng, client, rng.randint(1, 40))
        keys = rng.sample(list(g), rng.randint(1, min(3, len(g))))
        for optimized in (True, False):
            graph, refs = optimize_with_refs(g, keys) if optimized else (dict(g), {})
            prio = order(graph, refs)
            held, expected_held = [], []
            got = graph_task_msgs(graph, refs, prio, 7, options["priority"], options["resources"],
                                  options["workers"], options["allow_other_workers"], options["retries"], held,
                                  future=Future)
            expected = reference_msgs(graph, prio, 7, **options, held=expected_held)
            assert got == expected
            assert [id(f) for f in held] == [id(f) for f in expected_held]


def test_a_plain_task_is_four_fields_with_the_optimisers_dependencies():
    g = {"a": Task(int, (1,)), "b": Task(int, (2,)), "c": Task(operator.add, (Ref("a"), Ref("b")))}
    graph, refs = optimize_with_refs(g, ["c"])
    [a, b, c] = graph_task_msgs(graph, refs, order(graph, refs), 3, 0, None, None, False, 0, [], future=Future)
    assert set(c) == {"key", "run_spec", "deps", "priority"}
    assert c["deps"] is refs["c"] and c["deps"] == ["a", "b"] and c["priority"] == [0, 3, 2]
    assert c["run_spec"] == dumps_task(g["c"])


def _collector_is(enabled):
    return gc.isenabled() is enabled


def test_large_headers_unpack_with_the_collector_paused_and_restored():
    msg = {"op": "update-graph", "keys": ["x"],
           "tasks": [{"key": f"t-{i}", "deps": [], "priority": [0]} for i in range(GC_PAUSE_BYTES // 20)]}
    frames = encode(msg)
    assert len(frames[0]) >= GC_PAUSE_BYTES
    seen = []
    gc.callbacks.append(lambda phase, info: seen.append(phase))
    try:
        header = decode(frames)[0]
        # (unpaused, some 200 collections; paused, the one its allocations start once it is over)
        assert seen.count("start") <= 1 and _collector_is(True)
        assert header == msg
        gc.disable()
        try:
            decode(frames)
            assert _collector_is(False)  # left as it was
        finally:
            gc.enable()
    finally:
        gc.callbacks.pop()


def test_the_scheduler_turns_the_collector_back_on_after_a_refused_graph():
    from xsched.scheduler.server import Scheduler
    from xsched.scheduler.state import AddWorker, SchedulerState

    class Stub:  # what _op_update_graph uses of a Scheduler
        handle = Scheduler.handle
        _handle_events = Scheduler._handle_events
        _tell_extensions = Scheduler._tell_extensions

        def __init__(self):
            self.state = SchedulerState()
            self.state.handle(AddWorker("tcp://w:1", nthreads=1))
            self.extensions, self.worker_peer, self.client_peer = {}, {}, {}
            self.validating, self.status = False, "running"

        def _client_of(self, peer):
            return "c"

    s = Stub()
    Scheduler._op_update_graph(s, b"p", {"tasks": [{"key": "a", "priority": [0]}], "keys": ["a"]}, [])
    assert "a" in s.state.tasks and _collector_is(True)
    with pytest.raises(ValueError, match="retries"):
        Scheduler._op_update_graph(s, b"p", {"tasks": [{"key": "b", "retries": -1}], "keys": ["b"]}, [])
    assert "b" not in s.state.tasks and _collector_is(True)
