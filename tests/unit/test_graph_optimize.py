"""cull / fuse_linear / optimize: fewer tasks, same results, annotations never lost."""

from __future__ import annotations

import copy
import operator
import random

import pytest

from xsched.graph.local import get
from xsched.graph.optimize import cull, flatten_keys, fuse_linear, optimize
from xsched.graph.spec import Ref, Task, dependencies


def read(i):
    return list(range(i, i + 10))


def sum_sub_stacks(block):
    return [sum(block[k : k + 5]) for k in range(0, len(block), 5)]


def get_info(block):
    return {"sum": sum(block), "n": len(block)}


def seed_pipeline(n):
    g = {}
    for i in range(n):
        g[f"read-{i}"] = Task(read, (i,))
        g[f"map_blocks-{i}"] = Task(sum_sub_stacks, (Ref(f"read-{i}"),))
        g[f"get_info-{i}"] = Task(get_info, (Ref(f"map_blocks-{i}"),))
    return g


def test_flatten_keys():
    assert flatten_keys("a") == ["a"]
    assert flatten_keys([["a", ("b",)], [], "c"]) == ["a", "b", "c"]
    with pytest.raises(TypeError, match="strings"):
        flatten_keys([1])


def test_cull_keeps_only_what_is_needed():
    g = seed_pipeline(3)
    culled = cull(g, ["get_info-1"])
    assert set(culled) == {"read-1", "map_blocks-1", "get_info-1"}
    assert cull(g, [["get_info-0"], "read-2"]).keys() == {"read-0", "map_blocks-0", "get_info-0", "read-2"}
    with pytest.raises(KeyError, match="nope"):
        cull(g, ["nope"])


def test_seed_pipeline_fuses_into_one_task_per_chunk():
    g = seed_pipeline(4)
    keys = [f"get_info-{i}" for i in range(4)]
    fused = optimize(g, keys)
    assert sorted(fused) == sorted(keys)
    for key in keys:
        assert dependencies(fused[key]) == set()  # read and map_blocks inlined
    assert get(fused, keys, optimize=False) == get(g, keys, optimize=False)
    assert get(g, keys) == [get_info(sum_sub_stacks(read(i))) for i in range(4)]


def test_fusion_is_pure():
    g = seed_pipeline(2)
    before = copy.deepcopy(g)
    fuse_linear(g, keep=["get_info-0", "get_info-1"])
    assert list(g) == list(before)
    assert all(g[k].args == before[k].args for k in g)


def test_annotated_middle_task_is_not_merged():
    gpu = {"resources": {"GPU": 1}}
    g = {
        "read": Task(read, (1,)),
        "gpu-step": Task(sum_sub_stacks, (Ref("read"),), {}, dict(gpu)),
        "info": Task(get_info, (Ref("gpu-step"),)),
    }
    fused = fuse_linear(g, keep=["info"])
    assert set(fused) == {"read", "gpu-step", "info"}
    assert fused["gpu-step"].annotations == gpu
    assert fused["info"].annotations == {}
    assert get(fused, "info", optimize=False) == get(g, "info", optimize=False)


def test_equal_annotations_fuse_and_are_carried():
    gpu = {"resources": {"GPU": 1}, "retries": 2}
    g = {
        "read": Task(read, (1,)),
        "gpu-a": Task(sum_sub_stacks, (Ref("read"),), {}, dict(gpu)),
        "gpu-b": Task(sum, (Ref("gpu-a"),), {}, dict(gpu)),
        "out": Task(str, (Ref("gpu-b"),)),
    }
    fused = fuse_linear(g, keep=["out"])
    assert set(fused) == {"read", "gpu-b", "out"}  # annotation boundaries kept on both sides
    assert fused["gpu-b"].annotations == gpu
    inner = fused["gpu-b"].args[0]
    assert isinstance(inner, Task) and inner.func is sum_sub_stacks and inner.annotations == gpu
    assert get(fused, "out", optimize=False) == str(sum(sum_sub_stacks(read(1))))


def test_annotations_survive_optimize_end_to_end():
    g = seed_pipeline(3)
    for i in range(3):
        g[f"map_blocks-{i}"].annotations = {"resources": {"GPU": 1}}
    fused = optimize(g, [f"get_info-{i}" for i in range(3)])
    assert len(fused) == 9
    assert all(fused[f"map_blocks-{i}"].annotations == {"resources": {"GPU": 1}} for i in range(3))


def test_keys_in_keep_survive():
    g = seed_pipeline(1)
    fused = fuse_linear(g, keep=["map_blocks-0", "get_info-0"])
    assert set(fused) == {"map_blocks-0", "get_info-0"}  # read fused into map_blocks
    assert get(fused, ["map_blocks-0", "get_info-0"], optimize=False) == get(
        g, ["map_blocks-0", "get_info-0"], optimize=False
    )


def test_task_with_two_dependents_is_never_inlined():
    g = {
        "a": Task(read, (0,)),
        "b": Task(sum, (Ref("a"),)),
        "c": Task(len, (Ref("a"),)),
        "d": Task(operator.add, (Ref("b"), Ref("c"))),
    }
    fused = fuse_linear(g, keep=["d"])
    assert "a" in fused


def test_task_used_twice_by_its_dependent_is_not_inlined():
    calls = []

    def counted():
        calls.append(1)
        return 2

    g = {"a": Task(counted), "b": Task(operator.mul, (Ref("a"), Ref("a")))}
    fused = fuse_linear(g, keep=["b"])
    assert "a" in fused
    assert get(fused, "b", optimize=False) == 4 and len(calls) == 1


def test_dependent_with_other_inputs_is_not_fused():
    # a tree-reduction leaf stays its own task: fusing would serialise parallel reads
    g = {"x": Task(read, (0,)), "y": Task(read, (1,)), "s": Task(operator.add, (Ref("x"), Ref("y")))}
    assert set(fuse_linear(g, keep=["s"])) == {"x", "y", "s"}
    g2 = {"x": Task(read, (0,)), "s": Task(operator.add, (Ref("x"), Ref("held-elsewhere")))}
    assert set(fuse_linear(g2, keep=["s"])) == {"x", "s"}


def test_placeholders_are_never_inlined():
    class FakeFuture:
        pass

    g = {"f": FakeFuture(), "b": Task(len, (Ref("f"),)), "v": [1, 2], "c": Task(len, (Ref("v"),))}
    fused = fuse_linear(g, keep=["b", "c"])
    assert set(fused) == {"f", "b", "v", "c"}


def test_long_chains_are_split_and_still_run():
    g = {"c-0": Task(int, (0,))}
    for i in range(1, 1000):
        g[f"c-{i}"] = Task(operator.add, (Ref(f"c-{i - 1}"), 1))
    fused = fuse_linear(g, keep=["c-999"])
    assert 1000 // 64 <= len(fused) <= 1000 // 64 + 2
    assert get(fused, "c-999", optimize=False) == 999
    assert get(g, "c-999") == 999


def test_nested_and_keyword_references_fuse_correctly():
    g = {
        "a": Task(read, (3,)),
        "b": Task(dict, (), {"data": [Ref("a")], "n": 1}),
        "c": Task(operator.itemgetter("data"), (Ref("b"),)),
    }
    fused = optimize(g, "c")
    assert list(fused) == ["c"]
    assert get(fused, "c", optimize=False) == [read(3)]


def test_optimisation_never_changes_results_on_random_graphs():
    rng = random.Random(7)
    for trial in range(30):
        n = rng.randint(1, 40)
        g = {}
        for i in range(n):
            picks = rng.sample(range(i), min(i, rng.choice([0, 1, 1, 1, 2, 3])))
            refs = [Ref(f"t-{j}") for j in picks]
            g[f"t-{i}"] = Task(_combine, (i, refs))
            if rng.random() < 0.2:
                g[f"t-{i}"].annotations = {"priority": rng.choice([1, 2])}
        keys = rng.sample(list(g), rng.randint(1, min(4, n)))
        assert get(g, keys, optimize=True) == get(g, keys, optimize=False)
        fused = optimize(g, keys)
        assert set(keys) <= set(fused)
        for key, task in fused.items():  # no annotation lost or mixed
            assert task.annotations == g[key].annotations
            _assert_nested_annotations_equal(task)


def _combine(i, values):
    return i + sum(values)


def _assert_nested_annotations_equal(task):
    stack = list(task.args)
    while stack:
        obj = stack.pop()
        if isinstance(obj, Task):
            assert obj.annotations == task.annotations
            stack.extend(obj.args)
        elif isinstance(obj, (list, tuple)):
            stack.extend(obj)
