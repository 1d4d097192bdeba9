"""Spec.many: a whole list checked at once (an update-graph's tasks field by field over all
tasks) accepts exactly what checking each item accepts, and a refusal still names the item."""

from __future__ import annotations

import random

import pytest

from xsched.protocol import schemas
from xsched.protocol.schemas import TO_SCHEDULER, BadMessage

from tests.support.fuzz import fuzz_value

SPECS = {
    "task": schemas.TASK, "keys": schemas.KEYS, "priority": schemas.PRIORITY, "resources": schemas.RESOURCES,
    "worker names": schemas.WORKER_NAMES, "key": schemas.KEY, "pickled": schemas.PICKLED, "bool": schemas.BOOL,
    "integer": schemas.integer(0, 2**31 - 1), "amount": schemas.number(0), "number": schemas.number(),
    "triple": schemas.list_of(schemas.integer(), 3),
    "record": schemas.record({"a": schemas.req(schemas.KEY), "b": schemas.maybe(schemas.BOOL),
                              "c": schemas.opt(schemas.PRIORITY)}, max_len=3),
}
FIELDS = ["key", "run_spec", "deps", "priority", "resources", "workers", "allow_other_workers", "retries",
          "limits", "other", "a", "b", "c"]


def _good_task(rng):
    return {"key": f"k-{rng.randrange(9)}", "run_spec": b"x", "deps": ["a"] * rng.randrange(3),
            "priority": [0, 1.5, -2]}


def _mutated(rng, t):
    t = dict(t)
    name, r = rng.choice(FIELDS), rng.random()
    if r < 0.4:
        t[name] = fuzz_value(rng)
    elif r < 0.5:
        t.pop(name, None)
    elif r < 0.6:
        t[name] = None
    elif r < 0.7:
        t[name] = [fuzz_value(rng) for _ in range(rng.randrange(3))]
    return t


def _outcome(fn, values):
    try:
        return fn(values)
    except Exception as e:  # noqa: BLE001 - both ways must fail alike too
        return type(e)


@pytest.mark.parametrize("name", sorted(SPECS))
def test_many_accepts_exactly_what_each_item_check_accepts(name):
    spec, rng = SPECS[name], random.Random(name)
    seen = set()
    for _ in range(3000):
        if name in ("task", "record"):
            values = [_mutated(rng, _good_task(rng)) if rng.random() < 0.3 else _good_task(rng)
                      for _ in range(rng.randrange(4))]
            if rng.random() < 0.1:
                values.append(fuzz_value(rng))
        else:
            values = [fuzz_value(rng) for _ in range(rng.randrange(4))]
        expected = _outcome(lambda vs: all(map(spec.ok, vs)), values)
        assert _outcome(spec.check_all, values) == expected, values
        seen.add(expected)
    assert {True, False} <= seen  # (both outcomes were met)


def test_a_large_graph_passes_and_a_bad_task_deep_in_it_is_named():
    tasks = [{"key": f"add-{i}", "run_spec": b"spec", "deps": [f"inc-{i}", f"inc-{i + 1}"], "priority": [0, 1, i]}
             for i in range(50_000)]
    tasks[1000]["resources"] = {"GPU": 1}
    TO_SCHEDULER.check({"op": "update-graph", "tasks": tasks, "keys": ["add-0"]})
    tasks[40_000] = dict(tasks[40_000], priority=[0, "x", 1])
    with pytest.raises(BadMessage) as info:
        TO_SCHEDULER.check({"op": "update-graph", "tasks": tasks, "keys": ["add-0"]})
    assert str(info.value) == ("update-graph: tasks[40000].priority[1] must be a finite number (int or float), "
                               "not str 'x'")
    del tasks[40_000]["key"]
    with pytest.raises(BadMessage, match=r"tasks\[40000\]") as info:
        TO_SCHEDULER.check({"op": "update-graph", "tasks": tasks, "keys": ["add-0"]})
    assert info.value.kind == "bad tasks"


def test_values_that_define_equality_are_compared_by_identity():
    class Weird:
        def __eq__(self, other):
            raise AssertionError("compared")

        __hash__ = object.__hash__

    assert not schemas.TASK.check_all([{"key": "a", "deps": Weird()}])
    assert not schemas.TASK.check_all([{"key": "a"}, {"key": Weird()}])
