"""The task shuffle (xsched.graph.shuffle): every value reaches its output partition, once,
in input order, in one round or in several; the graph has the expected number of tasks."""

import random

import pytest

from xsched.graph.local import get
from xsched.graph.shuffle import shuffle_layers
from xsched.graph.spec import Task


def _split(values, n):
    return [[v for v in values if v % n == j] for j in range(n)]


def _combine(pieces):
    return [v for p in pieces for v in p]


def _run(sizes, n_out, stages):
    parts = {f"in-{i}": Task(list, (range(i * 100, i * 100 + size),)) for i, size in enumerate(sizes)}
    layers, keys = shuffle_layers(list(parts), n_out, _split, _combine, "t", stages=stages)
    graph = dict(parts)
    for layer in layers.values():
        graph.update(layer)
    return get(graph, keys), layers


@pytest.mark.parametrize("seed", range(40))
def test_every_value_reaches_its_partition_once_in_input_order(seed):
    rng = random.Random(seed)
    sizes = [rng.randint(0, 12) for _ in range(rng.randint(1, 17))]
    n_out, stages = rng.randint(1, 25), rng.randint(1, 3)
    out, _ = _run(sizes, n_out, stages)
    values = [v for i, size in enumerate(sizes) for v in range(i * 100, i * 100 + size)]
    assert out == [[v for v in values if v % n_out == j] for j in range(n_out)]


def test_one_round_has_a_split_per_input_a_pick_per_pair_and_a_combine_per_output():
    _, layers = _run([3] * 6, 4, 1)
    assert [len(layer) for layer in layers.values()] == [6, 24, 4]


def test_rounds_keep_the_picks_near_n_times_k():
    _, one = _run([1] * 64, 64, 1)
    _, two = _run([1] * 64, 64, 2)
    picks = lambda layers: sum(len(v) for name, v in layers.items() if name.startswith("pick"))  # noqa: E731
    assert picks(one) == 64 * 64
    assert picks(two) == 2 * 64 * 8


def test_no_output_partitions_is_an_error_naming_the_count():
    with pytest.raises(ValueError, match="npartitions=0"):
        shuffle_layers(["a-0"], 0, _split, _combine, "t")
