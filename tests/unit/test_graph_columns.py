"""Graphs of delayed calls submitted through columns (graph/columns.py) give the scheduler
exactly what the dict path gives: the same tasks, dependencies, priorities and specs that
load to the same calls; and whatever the columns do not cover takes the dict path."""

from __future__ import annotations

import operator
import random

import pytest

import msgpack

from xsched.client.future import Future
from xsched.graph import columns
from xsched.graph.delayed import Delayed, delayed
from xsched.graph.optimize import optimize_with_refs
from xsched.graph.order import order
from xsched.graph.spec import Ref, Task
from xsched.protocol.schemas import TO_SCHEDULER
from xsched.protocol.tasks import SpecWriter, loads_task
from xsched.protocol.update_graph import column_task_msgs, column_tasks, entry_task, graph_task_msgs
from xsched.scheduler.state import NewTask


def add(*args):
    return sum(args)


def mul(a, b):
    return a * b


def _dict_tasks(roots, fuse=True):
    """The NewTasks the scheduler makes of the dict path's update-graph."""
    graph = {}
    for r in roots:
        graph.update(r.__xsched_graph__())
    graph, refs = optimize_with_refs(graph, [r.key for r in roots], fuse=fuse)
    prio = order(graph, refs)
    writer = SpecWriter(functions={})
    tasks = graph_task_msgs(graph, refs, prio, 7, 0, None, None, False, 0, [], writer, future=Future)
    return [entry_task(t, make_task=NewTask) for t in tasks], writer.functions


def _column_tasks(roots, fuse=True):
    """The NewTasks the scheduler makes of the columns' update-graph (after schema checks)."""
    cols = columns.walk(roots, fuse=fuse)
    assert cols is not None and cols.direct
    writer = SpecWriter(functions={})
    cols_msg, tasks = column_task_msgs(cols, 7, 0, [], writer, future=Future)
    msg = msgpack.unpackb(msgpack.packb({"op": "update-graph", "tasks": tasks, "columns": cols_msg}))
    TO_SCHEDULER.check(msg)
    return column_tasks(msg["columns"], msg["tasks"], make_task=NewTask), writer.functions


def _same(a, b):
    (ta, fa), (tb, fb) = a, b
    assert fa == fb
    by_key = {t.key: t for t in tb}
    assert sorted(by_key) == sorted(t.key for t in ta) and len(ta) == len(tb)
    for t in ta:
        u = by_key[t.key]
        assert sorted(t.dependencies) == sorted(u.dependencies) and t.priority == u.priority
        assert (t.resources, t.retries, t.workers) == (u.resources, u.retries, u.workers)
        x, y = loads_task(t.run_spec, functions=fa), loads_task(u.run_spec, functions=fb)
        assert (x.func, x.args, x.kwargs) == (y.func, y.args, y.kwargs)


def _random_graph(rng: random.Random, n: int) -> list:
    made: list = []
    literals = [0, 1, 255, 256, 70_000, -5, 2**40, 1.5, "text", "é☃", None, True, False, b"raw", "k" * 300]
    for _ in range(n):
        arity = rng.randint(0, 4)
        args = []
        for _ in range(arity):
            if made and rng.random() < 0.7:
                args.append(rng.choice(made))  # the same value twice, at times
            else:
                args.append(rng.choice(literals))
        made.append(delayed(_kept)(*args))
    return made


def _kept(*args):
    return args


@pytest.mark.parametrize("seed", range(6))
def test_random_graphs_of_calls_match_the_dict_path(seed):
    rng = random.Random(seed)
    made = _random_graph(rng, 150)
    roots = rng.sample(made, 3)
    a = columns.walk(roots, fuse=False)
    assert a is not None and all(a.calls)
    _same(_column_tasks(roots, fuse=False), _dict_tasks(roots, fuse=False))


def test_a_tree_of_calls_matches_the_dict_path_and_orders_depth_first():
    level = [delayed(add)(i) for i in range(64)]
    while len(level) > 1:
        level = [delayed(add)(level[i], level[i + 1]) for i in range(0, len(level), 2)]
    col, dic = _column_tasks(level), _dict_tasks(level)
    _same(col, dic)
    prio = {t.key: t.priority[2] for t in col[0]}
    assert sorted(prio.values()) == list(range(127))


def test_calls_with_layers_walk_too_and_match():
    parts = [delayed(mul)(i, 2) for i in range(5)]
    total = delayed(sum)(parts)  # a list argument: a layer, not a kept call
    top = delayed(add)(total, parts[0], 3)
    cols = columns.walk([top], fuse=False)
    assert cols is not None and 0 < sum(cols.calls) < len(cols)
    _same(_column_tasks([top], fuse=False), _dict_tasks([top], fuse=False))


def test_what_the_dict_path_would_fuse_or_cull_goes_there_from_the_columns():
    a = delayed(add)(1)
    chain = delayed(mul)(a, 3)  # a -> chain: a linear pair, fused by the dict path
    assert not columns.walk([chain], fuse=True).direct
    assert columns.walk([chain], fuse=False).direct
    # a layer holding a task the root does not need: the dict path culls it
    extra = Delayed("x-1", {"x-1": Task(len, ("ab",)), "unused-1": Task(len, ("",))})
    top = delayed(add)(extra, extra)
    cols = columns.walk([top], fuse=False)
    assert not cols.direct
    assert cols.graph() == top.__xsched_graph__()  # (what the dict path takes, walked once)
    assert columns.walk([delayed(len)], fuse=False) is None  # not a plain Delayed


def test_annotated_calls_keep_their_annotations():
    import xsched

    with xsched.annotate(retries=2, resources={"GPU": 1}):
        a = delayed(add)(1, 2)
    b = delayed(add)(a, a)
    tasks, _ = _column_tasks([b], fuse=False)
    by_key = {t.key: t for t in tasks}
    assert by_key[a.key].retries == 2 and by_key[a.key].resources == {"GPU": 1}
    assert by_key[b.key].retries == 0 and by_key[b.key].dependencies == [a.key]
    _same((tasks, {}), _dict_tasks([b], fuse=False))


def test_flat_specs_load_to_the_calls_they_write():
    writer = SpecWriter(functions={})
    key = operator.attrgetter("key")
    cases = [(), (1,), (Ref("a"), Ref("b")), (Ref("a"), Ref("a"), 3),
             (-1, 2**31 - 1, -2**31, 255, 256, 65535, 65536), ("x" * 300, "é☃", None, True, False, 1.5),
             tuple(Ref(f"k{i}") for i in range(10)), (Ref("z" * 400),), (Ref("z" * 300), Ref("a")),
             (0,), (300,), (70_000,), (2**31 - 1,), (-1,), (Ref("a"),), ("é", Ref("☃"))]
    for args in cases * 2:  # (the second time round, from the function's head)
        spec = writer.dumps_flat(mul, args, Ref, key)
        task = loads_task(spec)
        assert task.func is mul and task.args == args and task.kwargs == {}
        # one frame, as the pickler writes it: PROTO 5, FRAME and the length of all that follows
        assert spec[:3] == b"\x80\x05\x95" and int.from_bytes(spec[3:11], "little") == len(spec) - 11, args


@pytest.mark.parametrize("odd", [2**40, b"bytes", "\ud800", [1, 2], "x" * 70_000])
def test_flat_specs_of_other_arguments_are_pickled_whole(odd):
    writer = SpecWriter()
    key = operator.attrgetter("key")
    for _ in range(2):
        spec = writer.dumps_flat(mul, (Ref("a"), odd), Ref, key)
        assert loads_task(spec).args == (Ref("a"), odd)


def _cols(**change):
    cols = {"keys": ["a", "b"], "specs": [b"A", b"B"], "deps": [[], [0]], "priority": [0, 1]}
    cols.update(change)
    return cols


@pytest.mark.parametrize("change, entries, says", [
    ({"specs": [b"A"]}, [], "differ in length"),
    ({"deps": [[], [2]]}, [], "past the 2 keys"),
    ({"keys": ["a", "a"]}, [], "appears twice"),
    ({"deps": [[1], [0]]}, [], "cycle"),
    ({}, [{"key": "elsewhere"}], "not among the keys"),
    ({}, [{"key": "a"}], "given twice"),
    ({"specs": [b"A", None]}, [{"key": "b"}, {"key": "b"}], "given twice"),
])
def test_columns_that_do_not_fit_are_refused_by_name(change, entries, says):
    with pytest.raises(ValueError, match=says):
        column_tasks(_cols(**change), entries, make_task=NewTask)


@pytest.mark.parametrize("change", [{"keys": "ab"}, {"specs": [1, 2]}, {"deps": [[], [-1]]},
                                    {"deps": [[], ["a"]]}, {"priority": ["x"]}])
def test_the_schema_refuses_malformed_columns(change):
    from xsched.protocol.schemas import BadMessage

    with pytest.raises(BadMessage, match="columns"):
        TO_SCHEDULER.check({"op": "update-graph", "columns": _cols(**change)})


def test_a_cycle_among_layers_fails_in_the_client():
    from xsched.graph.order import check_acyclic

    cyclic = Delayed("a", {"a": Task(len, (Ref("b"),)), "b": Task(len, (Ref("a"),))})
    cols = columns.walk([delayed(add)(cyclic)], fuse=False)
    assert cols is not None and not all(cols.calls)
    with pytest.raises(ValueError, match="cycle"):
        check_acyclic(cols.keys, cols.deps)


def test_a_later_root_defines_a_shared_key_as_the_dict_path_does():
    first = Delayed("k-1", {"k-1": Task(len, ("a",))})
    second = Delayed("k-1", {"k-1": Task(len, ("bb",))})
    cols = columns.walk([first, second], fuse=False)
    assert len(cols) == 1 and cols.values[0] is second.__xsched_graph__()["k-1"]
    _same(_column_tasks([first, second], fuse=False), _dict_tasks([first, second], fuse=False))
