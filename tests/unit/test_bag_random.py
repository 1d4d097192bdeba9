"""``xsched.bag.random``: ``sample`` without replacement and ``choices`` with it, over any
partitioning, the same for a seed, each element equally likely, and mistakes named."""

from __future__ import annotations

import collections

import pytest

import xsched.bag as xb
from xsched.bag import random
from xsched.bag.random import _draw_part, _final, _merge


@pytest.mark.parametrize("npartitions, split_every", [(1, None), (4, 2), (9, 3), (9, None)])
def test_sample_draws_distinct_elements_and_choices_any(npartitions, split_every):
    b = xb.from_sequence(range(40), npartitions=npartitions)
    got = random.sample(b, 12, split_every=split_every, seed=5).compute()
    assert len(got) == 12 and len(set(got)) == 12 and set(got) <= set(range(40))
    assert got == random.sample(b, 12, split_every=split_every, seed=5).compute()
    assert sorted(random.sample(b, 40, split_every=split_every).compute()) == list(range(40))
    drawn = random.choices(b, 60, split_every=split_every, seed=5).compute()
    assert len(drawn) == 60 and set(drawn) <= set(range(40)) and len(set(drawn)) < 60
    assert random.sample(b, 0).compute() == [] and len(random.choices(b).compute()) == 1


def _pure(parts: list[list], k: int, replace: bool, seed: int) -> list:
    """A tree of two levels, without a graph: what the tasks compute."""
    partials = [_draw_part(p, seed * 100 + i, k, replace)[0] for i, p in enumerate(parts)]
    merged = [_merge(partials[:2], k, replace), _merge(partials[2:], k, replace)]
    return _final(merged, k, replace, "test")


@pytest.mark.parametrize("replace", [False, True])
def test_every_element_is_as_likely_whatever_its_partition(replace):
    parts = [list(range(0, 7)), [7], [], list(range(8, 10))]  # (uneven, one empty)
    seen = collections.Counter()
    runs = 3000
    for seed in range(runs):
        seen.update(_pure(parts, 3, replace, seed))
    expected = runs * 3 / 10  # (each of 10 elements: in 3 of 10 draws on average)
    assert set(seen) == set(range(10))
    assert all(abs(seen[v] - expected) < 0.12 * expected for v in range(10)), seen


def test_mistakes_are_named():
    b = xb.from_sequence(range(5), npartitions=2)
    with pytest.raises(ValueError, match="k=6 is more than the bag's 5 elements"):
        random.sample(b, 6).compute()
    with pytest.raises(IndexError, match="the bag is empty"):
        random.choices(xb.from_sequence([], npartitions=1), 2).compute()
    with pytest.raises(ValueError, match="k must be a number of elements"):
        random.sample(b, -1)
    with pytest.raises(TypeError, match="must be an xsched Bag"):
        random.sample([1, 2, 3], 1)
    with pytest.raises(TypeError, match="seed must be an int"):
        random.choices(b, 1, seed="x")
