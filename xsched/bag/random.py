"""``xsched.bag.random``: ``k`` elements of a bag drawn at random, as dask's ``dask.bag.random``.

``sample`` draws without replacement, ``choices`` with it; both as a tree over the
partitions, so no task holds more than ``split_every`` partials of ``k`` elements each,
whatever the bag's size::

    partition i  --draw k (own seed)-->  (k elements, n_i, seed)
    partials     --merge split_every-->  (k elements of the union, n, seed)   # combine levels
    last partials --merge, shuffle-->    the k elements (a bag of one partition)

Merging two uniform samples of ``k`` from populations of ``n1`` and ``n2`` elements keeps
one: the number taken from the first is that of a uniform ``k``-subset of ``n1 + n2``
positions falling among the first ``n1`` (hypergeometric), then that many are picked from
the first sample and the rest from the second. With replacement, each of the ``k`` draws
comes from the first side with probability ``n1 / (n1 + n2)``. Every seed is drawn when
the graph is built (``seed=`` fixes them), so a task run again after a worker died draws
the same elements.

>>> import xsched.bag as xb
>>> from xsched.bag import random
>>> b = xb.from_sequence(range(100), npartitions=7)
>>> picked = random.sample(b, 5, seed=1).compute()
>>> len(picked), len(set(picked)), set(picked) <= set(range(100))
(5, 5, True)
>>> len(random.choices(b, 3, seed=2).compute())
3
"""

from __future__ import annotations

import numbers
import operator
import random as _random
from functools import partial
from typing import Any

from ..graph.layers import new_token
from .core import Bag, _partitionwise, _Select

__all__ = ["sample", "choices"]


def _count(k: Any, what: str) -> int:
    if isinstance(k, bool) or not isinstance(k, numbers.Integral) or k < 0:
        raise ValueError(f"{what}: k must be a number of elements (an int, 0 or more), got {k!r}")
    return int(k)


def _seeds(seed: Any, n: int, what: str) -> list[int]:
    """One seed per partition, drawn now (from ``seed``, an int, or fresh entropy)."""
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, numbers.Integral)):
        raise TypeError(f"{what}: seed must be an int or None, got {seed!r}")
    rng = _random.Random(None if seed is None else int(seed))
    return [rng.getrandbits(64) for _ in range(n)]


def _draw_part(part: list, seed: int, k: int, replace: bool) -> list:
    """A partition's partial, as a one-element partition: ``(draws, its size, a seed)``."""
    rng = _random.Random(seed)
    part = list(part)
    if replace:
        drawn = rng.choices(part, k=k) if part else []
    else:
        drawn = rng.sample(part, min(k, len(part)))
    return [(drawn, len(part), rng.getrandbits(64))]


def _merge(partials: list, k: int, replace: bool) -> tuple:
    """Partials of several populations as one partial of their union (see the module docstring)."""
    rng = _random.Random(repr([seed for _, _, seed in partials]))
    drawn, n = partials[0][0], partials[0][1]
    for other, m, _ in partials[1:]:
        if replace:
            from_first = sum(rng.random() * (n + m) < n for _ in range(k)) if n + m else 0
            # (random positions, not the first ones: a merged list has each side's draws together)
            drawn = rng.sample(drawn, from_first) + rng.sample(other, k - from_first) if n + m else []
        else:
            take = min(k, n + m)
            from_first = sum(p < n for p in rng.sample(range(n + m), take))
            drawn = rng.sample(drawn, from_first) + rng.sample(other, take - from_first)
        n += m
    return drawn, n, rng.getrandbits(64)


def _final(partials: list, k: int, replace: bool, what: str) -> list:
    drawn, n, seed = _merge(partials, k, replace)
    if replace and k and not n:
        raise IndexError(f"{what}: the bag is empty, so there is nothing to draw {k} elements from")
    if not replace and k > n:
        raise ValueError(f"{what}: k={k} is more than the bag's {n} elements; choices() draws with "
                         "replacement")
    drawn = list(drawn)
    _random.Random(seed).shuffle(drawn)
    return drawn


def _tree(population: Bag, k: int, replace: bool, split_every: Any, seed: Any, what: str) -> Bag:
    if not isinstance(population, Bag):
        raise TypeError(f"{what}: the population must be an xsched Bag, got {type(population).__name__}")
    seeds = _seeds(seed, population.npartitions, what)
    name = f"{what}-draw-{new_token(what, population, k, seeds)}"
    drawn = _partitionwise(name, population.npartitions, _draw_part, (population, _Select(seeds), k, replace))
    return drawn.reduction(operator.itemgetter(0), partial(_final, k=k, replace=replace, what=what),
                           split_every=split_every, out_type=Bag, name=what,
                           combine=partial(_merge, k=k, replace=replace))


def sample(population: Bag, k: int, split_every: Any = None, seed: int | None = None) -> Bag:
    """``k`` distinct elements (by position) of the bag, each set of ``k`` equally likely,
    in random order, as ``random.sample`` over the whole bag; a bag of one partition.
    A ``k`` larger than the bag fails when computed, saying how many there are.

    >>> import xsched.bag as xb
    >>> from xsched.bag import random
    >>> sorted(random.sample(xb.from_sequence("abcde", npartitions=2), 5).compute())
    ['a', 'b', 'c', 'd', 'e']
    """
    return _tree(population, _count(k, "sample"), False, split_every, seed, "sample")


def choices(population: Bag, k: int = 1, split_every: Any = None, seed: int | None = None) -> Bag:
    """``k`` elements of the bag drawn with replacement, each uniformly, as
    ``random.choices`` over the whole bag; a bag of one partition.

    >>> import xsched.bag as xb
    >>> from xsched.bag import random
    >>> set(random.choices(xb.from_sequence([7], npartitions=1), 4).compute())
    {7}
    """
    return _tree(population, _count(k, "choices"), True, split_every, seed, "choices")
