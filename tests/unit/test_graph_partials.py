"""The shapes every collection's reductions and running values share (graph/partials.py)."""

from __future__ import annotations

import pytest

from xsched import annotate
from xsched.graph.local import get
from xsched.graph.partials import chain_layer, combine_levels
from xsched.graph.spec import Task
from xsched.keys import key_split


def _flat(layers: dict) -> dict:
    return {k: t for layer in layers.values() for k, t in layer.items()}


@pytest.mark.parametrize("n, split, levels", [(1, 2, 0), (2, 2, 0), (3, 2, 1), (9, 3, 1), (10, 3, 2), (64, 4, 2)])
def test_combine_levels_merges_down_to_at_most_split_every(n, split, levels):
    layers = {"p": {f"p-{i}": Task(int, (i,)) for i in range(n)}}
    left = combine_levels(layers, list(layers["p"]), "total", "tok", sum, split)
    assert len(layers) == 1 + levels and 1 <= len(left) <= split
    assert sum(get(_flat(layers), left)) == sum(range(n))
    # every task of a level merges at most split_every partials, and all levels are one task group
    for name, layer in layers.items():
        if name != "p":
            assert key_split(name) == "total-combine"
            assert all(len(t.args[0]) <= split for t in layer.values())


def test_combine_levels_side_by_side_trees_share_their_layers_and_keep_the_annotations():
    layers = {"p": {f"p-{i}": Task(int, (i,)) for i in range(6)}}
    with annotate(priority=3):
        tops = [combine_levels(layers, list(layers["p"]), "agg", "tok", sum, 2, args=(j,), index=(j,))
                for j in range(2)]
    assert len(layers) == 3  # p and two levels, each holding both trees' tasks
    assert sorted(len(layer) for name, layer in layers.items() if name != "p") == [4, 6]  # 3, then 2, per tree
    assert tops[0] != tops[1]
    assert all(t.annotations.get("priority") == 3 for name, layer in layers.items() if name != "p"
               for t in layer.values())
    # the extra argument reaches each of a tree's five merges: sum(list, start)
    assert [sum(get(_flat(layers), top)) for top in tops] == [15, 15 + 5]


def test_combine_levels_refuses_a_split_below_two():
    with pytest.raises(ValueError, match="at least 2"):
        combine_levels({}, ["a", "b", "c"], "x", "tok", sum, 1)


def test_chain_layer_carries_in_the_order_given():
    seen = []

    def step(prev, value):
        seen.append(value)
        return (prev or ()) + (value,)

    layer = chain_layer("run", [1, 3, 0], {0: "a", 1: "b", 3: "d"}, step)
    assert sorted(layer) == ["run-0", "run-1", "run-3"]
    assert get({**layer, "a": "A", "b": "B", "d": "D"}, "run-0", optimize=False) == ("B", "D", "A")
    assert chain_layer("run", [], ["a"], step) == {}
