"""SpecWriter: the specs of a graph's tasks from one pickler, the part before the
arguments pickled once per function -- the same bytes as pickling each task whole."""

from __future__ import annotations

import functools
import operator
import pickle
import random

import numpy as np
import pytest

from xsched.graph.spec import Ref, Task
from xsched.protocol import tasks as spec_tasks
from xsched.protocol.serialize import SerializationError
from xsched.protocol.tasks import SpecWriter, dumps_function, dumps_task, loads_task


def _echo(*args, **kwargs):
    return args, kwargs


FUNCS = [len, max, operator.add, _echo, functools.partial(operator.add, 1), np.add]
SHARED = [1, 2, 3]


def _arg(rng, depth=0):
    """Arguments of every kind a spec meets, including objects the head's memo holds."""
    r = rng.random()
    if r < 0.2:
        return Ref(f"k-{rng.randrange(5)}")
    if r < 0.3:
        return rng.randrange(10**6)
    if r < 0.35:
        return Task.__module__  # the very string object the head memoizes
    if r < 0.4:
        return dumps_function(len)  # the very bytes object of a function in the head
    if r < 0.45:
        return SHARED
    if r < 0.5:
        return b"x" * rng.choice([10, 60_000, 65_000, 70_000])  # around one frame (64 KiB)
    if r < 0.6 and depth < 3:
        return Task(rng.choice(FUNCS), tuple(_arg(rng, depth + 1) for _ in range(rng.randrange(3))))
    if r < 0.65:
        return np.arange(rng.choice([3, 9_000]))
    if r < 0.7 and depth < 3:
        return [_arg(rng, depth + 1) for _ in range(rng.randrange(3))]
    if r < 0.75:
        return ()
    if r < 0.8:
        return None
    return "s" * rng.randrange(300)


def _same(x, y):
    if type(x) is not type(y):
        return False
    if type(x) is Task:
        same_func = x.func is y.func or pickle.dumps(x.func) == pickle.dumps(y.func)  # (a partial: a copy)
        return same_func and _same(tuple(x.args), tuple(y.args)) and _same(x.kwargs, y.kwargs)
    if isinstance(x, (list, tuple)):
        return len(x) == len(y) and all(map(_same, x, y))
    if isinstance(x, dict):
        return x.keys() == y.keys() and all(_same(x[k], y[k]) for k in x)
    if isinstance(x, np.ndarray):
        return np.array_equal(x, y)
    return x == y


def test_spliced_specs_are_the_bytes_of_whole_pickles():
    rng = random.Random(3)
    writer = SpecWriter()
    spliced = 0
    for _ in range(1500):
        func = rng.choice(FUNCS)
        kwargs = {"k": _arg(rng)} if rng.random() < 0.1 else {}
        task = Task(func, tuple(_arg(rng) for _ in range(rng.randrange(4))), kwargs)
        spec = writer.dumps(task)
        assert spec == writer._whole(task) == dumps_task(task)
        assert _same(loads_task(spec), Task(func, task.args, kwargs))
        head = writer._heads.get(id(func))
        spliced += head is not None and head[1] not in (None, spec_tasks._UNMADE) and not kwargs
    assert spliced > 1000  # (most tasks had a head to put their arguments after)


def test_the_first_task_of_a_function_is_pickled_whole():
    writer = SpecWriter()
    writer.dumps(Task(len, ("ab",)))
    assert writer._heads[id(len)][1] is spec_tasks._UNMADE  # one task gains nothing from a head
    writer.dumps(Task(len, ("abc",)))
    assert type(writer._heads[id(len)][1]) is bytes


def test_a_function_of_more_than_a_frame_is_pickled_whole():
    data = np.arange(20_000)  # 160 KB captured: its bytes alone are several frames
    big = lambda i: int(data[i])  # noqa: E731
    writer = SpecWriter()
    specs = [writer.dumps(Task(big, (i,))) for i in range(3)]
    assert writer._heads[id(big)][1] is None
    assert [loads_task(s).run({}) for s in specs] == [0, 1, 2]
    assert specs[2] == SpecWriter()._whole(Task(big, (2,)))


def test_the_writer_recovers_from_arguments_it_cannot_pickle():
    import threading

    writer = SpecWriter()
    good = [writer.dumps(Task(len, ([i],))) for i in range(2)]
    with pytest.raises(SerializationError, match="argument 0"):
        writer.dumps(Task(len, (threading.Lock(),)))
    assert writer.dumps(Task(len, ([5, 6],))) == dumps_task(Task(len, ([5, 6],)))
    assert [loads_task(s).run({}) for s in good] == [1, 1]


def test_notebook_values_still_travel_by_value():
    class Local:  # pickled by reference it would name a module the worker lacks
        pass

    Local.__module__ = "__main__"
    writer = SpecWriter()
    for i in range(3):
        spec = writer.dumps(Task(len, ([Local(), i],)))
        assert b"cloudpickle" in spec  # the cloudpickle path, whatever the head
        assert loads_task(spec).run({}) == 2


def test_refs_and_the_function_keep_their_identity_in_a_spec():
    writer = SpecWriter()
    nested = Task(operator.add, (Task(operator.add, (Ref("a"), 1)), Ref("a")))
    for _ in range(2):
        task = loads_task(writer.dumps(nested))
    assert task.func is task.args[0].func  # one function, unpickled once
    assert task.run({"a": 2}) == 5
    assert pickle.loads(writer.dumps(Task(len, (Ref("x"),)))).args == (Ref("x"),)
