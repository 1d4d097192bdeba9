"""annotate(): nestable, per-thread/per-task scheduling hints, checked when written."""

from __future__ import annotations

import asyncio
import threading

import pytest

from xsched.graph.annotate import annotate, current_annotations, validate_annotations
from xsched.graph.delayed import delayed


def test_nesting_inner_wins_and_dicts_merge():
    assert current_annotations() == {}
    with annotate(priority=1, resources={"GPU": 1}, workers="w1"):
        with annotate(priority=5, resources={"MEM": 10}, limits={"io": 2}):
            assert current_annotations() == {
                "priority": 5,
                "resources": {"GPU": 1, "MEM": 10},
                "workers": ["w1"],
                "limits": {"io": 2},
            }
            with annotate(resources={"GPU": 2}):
                assert current_annotations()["resources"] == {"GPU": 2, "MEM": 10}
        assert current_annotations() == {"priority": 1, "resources": {"GPU": 1}, "workers": ["w1"]}
    assert current_annotations() == {}


def test_restored_after_exception():
    with pytest.raises(RuntimeError):
        with annotate(retries=3):
            raise RuntimeError("boom")
    assert current_annotations() == {}


def test_returned_dict_is_a_copy():
    with annotate(resources={"GPU": 1}):
        current_annotations()["resources"]["GPU"] = 99
        assert current_annotations()["resources"] == {"GPU": 1}


def test_yields_annotations_in_force():
    with annotate(priority=1):
        with annotate(retries=2) as active:
            assert active == {"priority": 1, "retries": 2}


@pytest.mark.parametrize(
    "kwargs, exc, words",
    [
        ({"prioriti": 1}, TypeError, ["prioriti", "priority", "resources"]),
        ({"priority": "high"}, TypeError, ["priority", "number"]),
        ({"priority": True}, TypeError, ["priority"]),
        ({"resources": {"GPU": "one"}}, TypeError, ["resources", "dict"]),
        ({"resources": ["GPU"]}, TypeError, ["resources"]),
        ({"resources": {1: 1}}, TypeError, ["resources"]),
        ({"resources": {"GPU": -1}}, ValueError, ["resources", ">= 0"]),
        ({"workers": 3}, TypeError, ["workers", "str"]),
        ({"workers": ["a", 3]}, TypeError, ["workers"]),
        ({"allow_other_workers": 1}, TypeError, ["allow_other_workers", "bool"]),
        ({"retries": 1.5}, TypeError, ["retries", "int"]),
        ({"retries": -1}, ValueError, ["retries"]),
        ({"limits": {"io": 1.5}}, TypeError, ["limits", "int"]),
    ],
)
def test_invalid_annotations_name_the_problem(kwargs, exc, words):
    with pytest.raises(exc) as info:
        with annotate(**kwargs):
            pass
    for word in words:
        assert word in str(info.value)
    assert current_annotations() == {}


def test_validate_normalises():
    import numpy as np

    out = validate_annotations({"workers": ("a", "b"), "retries": np.int64(2),
                                "priority": np.float32(1.5), "allow_other_workers": False})
    assert out == {"workers": ["a", "b"], "retries": 2, "priority": 1.5, "allow_other_workers": False}
    assert type(out["retries"]) is int and type(out["priority"]) is float


def test_threads_do_not_see_each_others_annotations():
    seen = {}
    inside = threading.Event()
    release = threading.Event()

    def other():
        inside.wait()
        seen["other"] = current_annotations()
        release.set()

    t = threading.Thread(target=other)
    t.start()
    with annotate(priority=7):
        inside.set()
        release.wait(5)
    t.join(5)
    assert seen["other"] == {}


def test_asyncio_tasks_are_isolated():
    async def worker(n):
        with annotate(priority=n):
            await asyncio.sleep(0.01)
            return current_annotations()["priority"]

    async def main():
        return await asyncio.gather(worker(1), worker(2))

    assert asyncio.run(main()) == [1, 2]


def test_tasks_built_inside_carry_annotations():
    with annotate(resources={"GPU": 1}, retries=2):
        x = delayed(sum)([1, 2])
        y = x + 1
    z = y * 2
    graph = z.__xsched_graph__()
    assert graph[x.key].annotations == {"resources": {"GPU": 1}, "retries": 2}
    assert graph[y.key].annotations == {"resources": {"GPU": 1}, "retries": 2}
    assert graph[z.key].annotations == {}
    assert z.compute() == 8


def test_usable_as_decorator():
    @annotate(priority=3)
    def build():
        return delayed(len)("abc")

    d = build()
    assert d.__xsched_graph__()[d.key].annotations == {"priority": 3}
    assert current_annotations() == {}
