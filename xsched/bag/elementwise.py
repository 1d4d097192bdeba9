"""Element by element beyond ``map`` and ``filter``: the ``.str`` accessor, ``random_sample``,
``unzip``, and ``join`` against a small collection that every partition gets whole.

These are a bag's conveniences for semi-structured records and lines of text, each one
layer of tasks over the bag's partitions (``core._partitionwise``); nothing is shuffled.

>>> import xsched.bag as xb
>>> lines = xb.from_sequence(["Alice 3", "bob 5", "Alice 7"], npartitions=2)
>>> lines.str.lower().str.split().pluck(0).frequencies(sort=True).compute()
[('alice', 2), ('bob', 1)]
"""

from __future__ import annotations

import fnmatch
import numbers
import random
from collections import defaultdict
from collections.abc import Iterable
from functools import partial
from typing import Any, Callable

from ..graph.delayed import Delayed
from ..graph.layers import new_token
from .core import Bag, Item, _getter, _partitionwise, _Select

__all__ = ["StringAccessor", "random_sample", "unzip", "join"]

_STR_METHODS = sorted(n for n in dir(str) if not n.startswith("_") and callable(getattr(str, n)))


def _call_str(value: Any, name: str, args: tuple, kwargs: dict) -> Any:
    if isinstance(value, bytes) and hasattr(bytes, name):  # (bytes has most of str's methods, as dask calls them)
        return getattr(value, name)(*args, **kwargs)
    if not isinstance(value, str):
        hint = "map(bytes.decode) first" if isinstance(value, bytes) else "map(str) first, or filter the others out"
        raise TypeError(f"Bag.str.{name}: the element {value!r} is a {type(value).__name__}, not a str; {hint}")
    return getattr(value, name)(*args, **kwargs)


def _matches(value: Any, pattern: str) -> bool:
    return fnmatch.fnmatchcase(value, pattern)


class StringAccessor:
    """``bag.str``: the methods of ``str`` on every element (``b.str.lower()``,
    ``b.str.split(",")``), and ``match(pattern)``, the elements a glob pattern matches.

    >>> import xsched.bag as xb
    >>> b = xb.from_sequence(["Alice", "Bob", "alex"])
    >>> b.str.upper().compute(), b.str.match("*l*").compute()
    (['ALICE', 'BOB', 'ALEX'], ['Alice', 'alex'])
    """

    def __init__(self, bag: Bag) -> None:
        self._bag = bag

    def __dir__(self) -> list[str]:
        return sorted(set(_STR_METHODS) | {"match"})

    def __getattr__(self, name: str) -> Callable:
        if name not in _STR_METHODS:
            raise AttributeError(f"Bag.str has no {name!r}: it has str's methods ({', '.join(_STR_METHODS)}) "
                                 "and match")
        bag = self._bag

        def method(*args: Any, **kwargs: Any) -> Bag:
            return bag.map(_call_str, name, args, kwargs)

        method.__name__ = method.__qualname__ = name
        method.__doc__ = f"``str.{name}`` of every element (see ``StringAccessor``)."
        return method

    def match(self, pattern: str) -> Bag:
        """The elements ``pattern`` matches (a glob: ``*``, ``?``, ``[...]``; case counts)."""
        if not isinstance(pattern, str):
            raise TypeError(f"Bag.str.match takes a glob pattern string, not {type(pattern).__name__}")
        return self._bag.filter(partial(_matches, pattern=pattern))


def _sample_part(part: list, prob: float, seed: int) -> list:
    draw = random.Random(seed).random
    return [x for x in part if draw() < prob]


def random_sample(bag: Bag, prob: float, random_state: Any = None) -> Bag:
    """Each element kept with probability ``prob``, independently; ``random_state`` (an int
    or a ``random.Random``) makes the sample the same each time, partition by partition.

    >>> import xsched.bag as xb
    >>> b = xb.from_sequence(range(1000), npartitions=4)
    >>> a = b.random_sample(0.1, random_state=7).compute()
    >>> a == b.random_sample(0.1, random_state=7).compute(), 50 < len(a) < 150
    (True, True)
    """
    if isinstance(prob, bool) or not isinstance(prob, numbers.Real) or not 0 <= prob <= 1:
        raise ValueError(f"random_sample: prob must be a probability between 0 and 1, got {prob!r}")
    if random_state is None or isinstance(random_state, numbers.Integral):
        rng = random.Random(None if random_state is None else int(random_state))  # (NumPy's ints too)
    elif isinstance(random_state, random.Random):
        rng = random_state
    else:
        raise TypeError(f"random_sample: random_state must be an int, a random.Random or None, got "
                        f"{type(random_state).__name__}")
    seeds = [rng.getrandbits(64) for _ in range(bag.npartitions)]
    name = f"random-sample-{new_token('random-sample', bag, prob, seeds)}"
    return _partitionwise(name, bag.npartitions, _sample_part, (bag, float(prob), _Select(seeds)))


def unzip(bag: Bag, n: int) -> tuple[Bag, ...]:
    """A bag of ``n``-tuples as ``n`` bags, the i-th holding every element's item ``i``.

    >>> import xsched.bag as xb
    >>> names, ages = xb.from_sequence([("ann", 3), ("bo", 5)]).unzip(2)
    >>> names.compute(), ages.compute()
    (['ann', 'bo'], [3, 5])
    """
    if isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < 1:
        raise ValueError(f"unzip: n must be the (positive) length of the elements, got {n!r}")
    return tuple(bag.pluck(i) for i in range(n))


def _join_part(part: list, other: Iterable, on_self: Callable, on_other: Callable) -> list:
    index: dict = defaultdict(list)
    for y in other:
        index[on_other(y)].append(y)
    return [(y, x) for x in part for y in index.get(on_self(x), ())]


def join(bag: Bag, other: Any, on_self: Any, on_other: Any = None) -> Bag:
    """Pairs ``(o, x)`` of the elements ``x`` and the elements ``o`` of ``other`` whose keys
    are equal (``on_self(x) == on_other(o)``; a key is a function or an index to look up,
    and ``on_other`` defaults to ``on_self``). ``other`` is small: a list (sent with every
    task), a ``Delayed`` or ``Item`` holding one, or a Bag of one partition.

    >>> import xsched.bag as xb
    >>> people = xb.from_sequence(["Alice", "Bob", "Carol"], npartitions=2)
    >>> people.join(["Apple", "Apricot", "Banana"], lambda s: s[0]).compute()
    [('Apple', 'Alice'), ('Apricot', 'Alice'), ('Banana', 'Bob')]
    """
    if isinstance(other, Bag):
        if other.npartitions != 1:
            raise ValueError(f"join: a Bag to join with must have one partition (it is sent whole to every task), "
                             f"{other.name} has {other.npartitions}; other.repartition(1) if it is small")
        other = other.to_delayed()[0]
    elif not isinstance(other, (Delayed, Item)):
        if not isinstance(other, Iterable) or isinstance(other, (str, bytes)):
            raise TypeError(f"join: other must be a list (or iterable), a Delayed, an Item or a Bag of one "
                            f"partition, not {type(other).__name__}")
        other = list(other)
    on_other = on_self if on_other is None else on_other
    name = f"join-{new_token('join', bag, other, on_self, on_other)}"
    return _partitionwise(name, bag.npartitions, _join_part, (bag, other, _getter(on_self), _getter(on_other)))


def _install() -> None:
    def str_accessor(self: Bag) -> StringAccessor:
        """String methods on every element: ``b.str.lower()``, ``b.str.match("*.csv")``.

        >>> import xsched.bag as xb
        >>> xb.from_sequence([" a ", "b "]).str.strip().compute()
        ['a', 'b']
        """
        return StringAccessor(self)

    Bag.str = property(str_accessor)  # type: ignore[attr-defined]
    Bag.random_sample = random_sample  # type: ignore[attr-defined]
    Bag.unzip = unzip  # type: ignore[attr-defined]
    Bag.join = join  # type: ignore[attr-defined]


_install()
