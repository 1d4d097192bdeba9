"""Bags: Python objects in partitions, processed in parallel by a task graph.

Why: much data is neither a table nor an array -- log lines, JSON records, file names,
simulation results. A ``Bag`` gives such data the ``map``/``filter``/``fold``/``groupby``
of plain Python, partition by partition. Each operation adds one layer of tasks (one per
partition, see ``xsched.graph.layers``) and returns a new Bag; nothing runs until
``compute()``, which uses the default client or, without one, this process.

Keys: a bag is named ``"<op>-<token>"`` (``map-inc-1f2e...``, ``filter-is_even-...``) and
its partition ``i`` is the key ``"<op>-<token>-i"``; the text before the token is the group
progress bars show. Every partition is a ``list``. Reductions (``sum``, ``fold``, ...) are
tree reductions that return an ``Item``: one key, computed to a single value.

The package: this module builds the graphs (``Bag``, the constructors); the tasks run the
functions of ``partitions`` (element-wise) and ``reductions`` (trees, ``Item``, the stable
hash of ``groupby``); ``text`` reads and writes text files.

>>> import xsched.bag as xb
>>> b = xb.from_sequence(range(10), npartitions=3)
>>> b.map(lambda x: x * x).filter(lambda x: x % 2).sum().compute()
165
"""

from __future__ import annotations

import numbers
import operator
import warnings
from collections.abc import Iterable, Mapping
from functools import partial, reduce
from typing import Any, Callable, Iterator

from ..files import blocksize_bytes
from ..graph.collection import compute_collection, lineage, persist_collection
from ..graph.delayed import Delayed, as_delayed, is_future
from ..graph.layers import LayeredGraph, annotations_in_force, chunk_key, new_token, per_task
from ..graph.optimize import optimize
from ..graph.p2p import p2p_layers, shuffle_method
from ..graph.repartition import plan_by_count, plan_by_size
from ..graph.shuffle import shuffle_layers
from ..graph.spec import Ref, Task, funcname
from ..graph.visualize import visualize_method
from . import partitions as parts
from . import reductions as red
from . import avro, text
from .reductions import Item, html_table

__all__ = ["Bag", "Item", "from_sequence", "from_delayed", "bag_range", "bag_map", "bag_map_partitions",
           "bag_zip", "concat"]

#: Partitions ``from_sequence`` makes at most when neither size nor count is given.
DEFAULT_NPARTITIONS = 100

_NO_DEFAULT = red.NO_DEFAULT  # an argument not given (None may be a real value)


# --------------------------------------------------------------------------- Bag


class Bag:
    """A collection of Python objects split into partitions (each a list).

    Make one with ``from_sequence``, ``read_text``, ``range`` or ``from_delayed``; get a
    list back with ``compute()``.

    >>> import xsched.bag as xb
    >>> b = xb.from_sequence([1, 2, 3, 4], npartitions=2)
    >>> b
    xsched.Bag<from-sequence-..., npartitions=2>
    >>> b.map(str).compute()
    ['1', '2', '3', '4']
    """

    def __init__(self, graph: Mapping[str, Any], name: str, npartitions: int) -> None:
        self._graph = graph if isinstance(graph, LayeredGraph) else LayeredGraph({name: graph})
        self.name = name
        self.npartitions = int(npartitions)

    # ----------------------------------------------------------------- collection protocol
    def __xsched_graph__(self) -> dict:
        return dict(self._graph.flat())

    def __xsched_keys__(self) -> list[str]:
        return [chunk_key(self.name, (i,)) for i in range(self.npartitions)]

    def __xsched_postcompute__(self) -> tuple[Callable, tuple]:
        return parts.concat, ()

    def __xsched_postpersist__(self) -> tuple[Callable, tuple]:
        return _rebuild_bag, (self.name, self.npartitions)

    def __xsched_tokenize__(self) -> str:
        return self.name

    visualize = visualize_method

    def compute(self, optimize_graph: bool = True, **kwargs: Any) -> list:
        """Every element, as one list (on the default client if one runs, else here).

        >>> import xsched.bag as xb
        >>> xb.from_sequence("abc").compute()
        ['a', 'b', 'c']
        """
        return compute_collection(self, optimize_graph, **kwargs)

    def persist(self, **kwargs: Any) -> Bag:
        """Compute the partitions and keep them (in worker memory, or here) for reuse.

        >>> import xsched.bag as xb
        >>> b = xb.from_sequence(range(4), npartitions=2).map(lambda x: x * 10).persist()
        >>> b.compute()
        [0, 10, 20, 30]
        """
        return persist_collection(self, **kwargs)

    def to_delayed(self, optimize_graph: bool = True) -> list[Delayed]:
        """One ``Delayed`` per partition (each computes to a list), with only the tasks it needs.

        >>> import xsched.bag as xb
        >>> parts = xb.from_sequence(range(5), npartitions=2).to_delayed()
        >>> [p.compute() for p in parts]
        [[0, 1, 2], [3, 4]]
        """
        keys = self.__xsched_keys__()
        graph = optimize(self.__xsched_graph__(), keys) if optimize_graph else self.__xsched_graph__()
        return [Delayed(k, lineage(graph, k)) for k in keys]

    def __iter__(self) -> Iterator[Any]:
        """The elements, computed (``compute()``) and then iterated, so that ``list(b)``,
        ``dict(b.frequencies())`` and ``for x in b`` work as with a list.

        >>> import xsched.bag as xb
        >>> dict(xb.from_sequence("abca", npartitions=2).frequencies())
        {'a': 2, 'b': 1, 'c': 1}
        """
        return iter(self.compute())

    def __repr__(self) -> str:
        return f"xsched.Bag<{self.name}, npartitions={self.npartitions}>"

    def _repr_html_(self) -> str:
        return html_table("xsched.Bag", [("name", self.name), ("npartitions", self.npartitions),
                                          ("tasks", len(self._graph))])

    # ----------------------------------------------------------------- element-wise
    def map(self, func: Callable, *args: Any, **kwargs: Any) -> Bag:
        """``func(x, *args, **kwargs)`` for every element ``x``; see ``xsched.bag.map``.

        Other Bags among the arguments are zipped with this one element by element; Items
        and Delayed values are passed whole to every call.

        >>> import xsched.bag as xb
        >>> def inc(x): return x + 1
        >>> b = xb.from_sequence([1, 2, 3], npartitions=2).map(inc)
        >>> b.name.startswith("map-inc-"), b.compute()
        (True, [2, 3, 4])
        """
        return bag_map(func, self, *args, **kwargs)

    def starmap(self, func: Callable, **kwargs: Any) -> Bag:
        """``func(*x, **kwargs)`` for every element ``x`` (a tuple of arguments); a Bag
        among ``kwargs`` is zipped with this one element by element, as ``map`` zips it.

        >>> import operator, xsched.bag as xb
        >>> xb.from_sequence([(1, 2), (3, 4)]).starmap(operator.add).compute()
        [3, 7]
        >>> pairs = xb.from_sequence([(1, 2), (3, 4)], npartitions=2)
        >>> pairs.starmap(lambda x, y, z: x + y + z, z=xb.from_sequence([10, 20], npartitions=2)).compute()
        [13, 27]
        """
        _check_callable(func, "starmap")
        _common_npartitions("starmap", [self, *kwargs.values()])
        bag_kw = tuple(k for k, v in kwargs.items() if isinstance(v, Bag))
        name = f"starmap-{funcname(func)}-{new_token('starmap', func, self, kwargs)}"
        return _partitionwise(name, self.npartitions, parts.starmap_part, (func, self, kwargs, bag_kw))

    def filter(self, predicate: Callable | None) -> Bag:
        """The elements for which ``predicate(x)`` is true (``None``: the true elements, as
        the built-in ``filter(None, ...)`` keeps).

        >>> import xsched.bag as xb
        >>> def is_even(x): return x % 2 == 0
        >>> xb.from_sequence(range(7), npartitions=3).filter(is_even).compute()
        [0, 2, 4, 6]
        >>> xb.from_sequence(["a", "", None, 0, 2]).filter(None).compute()
        ['a', 2]
        """
        predicate = bool if predicate is None else predicate
        _check_callable(predicate, "filter")
        name = f"filter-{funcname(predicate)}-{new_token('filter', predicate, self)}"
        return _partitionwise(name, self.npartitions, parts.filter_part, (predicate, self))

    def remove(self, predicate: Callable) -> Bag:
        """The elements for which ``predicate(x)`` is false (``filter``'s complement).

        >>> import xsched.bag as xb
        >>> def is_even(x): return x % 2 == 0
        >>> xb.from_sequence(range(7), npartitions=3).remove(is_even).compute()
        [1, 3, 5]
        """
        _check_callable(predicate, "remove")
        name = f"remove-{funcname(predicate)}-{new_token('remove', predicate, self)}"
        return _partitionwise(name, self.npartitions, parts.remove_part, (predicate, self))

    def accumulate(self, binop: Callable, initial: Any = _NO_DEFAULT) -> Bag:
        """The running results of ``binop``, as ``itertools.accumulate(elements, binop,
        initial=initial)`` gives them (``initial`` first when given). The partitions are
        done in order, each from the last result of the one before.

        >>> import operator, xsched.bag as xb
        >>> b = xb.from_sequence(range(5), npartitions=3)
        >>> b.accumulate(operator.add).compute()
        [0, 1, 3, 6, 10]
        >>> b.accumulate(operator.add, initial=100).compute()
        [100, 100, 101, 103, 106, 110]
        """
        _check_callable(binop, "accumulate")
        token = new_token("accumulate", binop, self, initial)
        chain, name = f"accumulate-part-{funcname(binop)}-{token}", f"accumulate-{funcname(binop)}-{token}"
        ann = annotations_in_force()
        carried, picked = {}, {}
        for i in range(self.npartitions):
            before = ([], initial) if i == 0 else Ref(chunk_key(chain, (i - 1,)))
            carried[chunk_key(chain, (i,))] = Task(parts.accumulate_part, (binop, Ref(chunk_key(self.name, (i,))),
                                                                           before, i == 0), {}, per_task(ann))
            picked[chunk_key(name, (i,))] = Task(operator.getitem, (Ref(chunk_key(chain, (i,))), 0), {},
                                                 per_task(ann))
        return Bag(LayeredGraph.merge(self._graph, new={chain: carried, name: picked}), name, self.npartitions)

    def product(self, other: Bag) -> Bag:
        """The pairs ``(x, y)`` of an element of this bag and one of ``other``: a partition
        per pair of partitions, in ``itertools.product`` order (of the partitions, then of
        the elements of each pair), so that no task holds more than two partitions.

        >>> import xsched.bag as xb
        >>> pairs = xb.from_sequence([1, 2], npartitions=1).product(xb.from_sequence("ab", npartitions=2))
        >>> pairs.npartitions, pairs.compute()
        (2, [(1, 'a'), (2, 'a'), (1, 'b'), (2, 'b')])
        """
        if not isinstance(other, Bag):
            raise TypeError(f"product: expected a Bag, got {type(other).__name__}; use "
                            "xsched.bag.from_sequence to make one")
        name = f"product-{new_token('product', self, other)}"
        ann = annotations_in_force()
        pairs = [(i, j) for i in range(self.npartitions) for j in range(other.npartitions)]
        layer = {chunk_key(name, (k,)): Task(parts.product_part, (Ref(chunk_key(self.name, (i,))),
                                                                  Ref(chunk_key(other.name, (j,)))),
                                             {}, per_task(ann))
                 for k, (i, j) in enumerate(pairs)}
        return Bag(_merge([self, other], {name: layer}), name, len(layer))

    def map_partitions(self, func: Callable, *args: Any, **kwargs: Any) -> Bag:
        """``func(partition, *args, **kwargs)`` per partition; it returns the new partition
        (any iterable). Bag arguments give their matching partition.

        >>> import xsched.bag as xb
        >>> b = xb.from_sequence(range(6), npartitions=3)
        >>> b.map_partitions(lambda part: [sum(part)]).compute()
        [1, 5, 9]
        """
        return bag_map_partitions(func, self, *args, **kwargs)

    def pluck(self, key: Any, default: Any = _NO_DEFAULT) -> Bag:
        """``x[key]`` for every element (a tuple of values if ``key`` is a list); elements
        without it give ``default`` when one is given.

        >>> import xsched.bag as xb
        >>> b = xb.from_sequence([{"a": 1, "b": 2}, {"a": 3}])
        >>> b.pluck("a").compute(), b.pluck("b", default=0).compute()
        ([1, 3], [2, 0])
        >>> b.pluck(["a", "a"]).compute()
        [(1, 1), (3, 3)]
        """
        name = f"pluck-{new_token('pluck', self, key, default)}"
        return _partitionwise(name, self.npartitions, parts.pluck_part, (self, key, default))

    def flatten(self) -> Bag:
        """The elements of the elements: one level of nesting removed.

        >>> import xsched.bag as xb
        >>> xb.from_sequence([[1, 2], [], [3]]).flatten().compute()
        [1, 2, 3]
        """
        name = f"flatten-{new_token('flatten', self)}"
        return _partitionwise(name, self.npartitions, parts.flatten_part, (self,))

    # ----------------------------------------------------------------- reductions
    def reduction(self, perpartition: Callable, aggregate: Callable, split_every: Any = None,
                  out_type: type = None, name: str | None = None,
                  combine: Callable | None = None) -> Any:
        """A tree reduction: ``perpartition(partition)`` for each partition, then
        ``aggregate(list_of_partials)``, ``split_every`` partials at a time.

        The inner levels of the tree use ``combine`` (``aggregate`` if not given), whose
        result must be a partial again. The default gives an ``Item``; ``out_type=Bag``
        a one-partition Bag, whose elements ``aggregate`` then returns (a list).
        ``split_every=False`` merges every partial in one task.

        >>> import xsched.bag as xb
        >>> b = xb.from_sequence(range(100), npartitions=10)
        >>> b.reduction(len, sum).compute()
        100
        >>> b.reduction(max, max, split_every=3).compute()
        99
        """
        for func, arg in ((perpartition, "perpartition"), (aggregate, "aggregate"), (combine, "combine")):
            if func is not None:
                _check_callable(func, f"reduction({arg}=...)")
        op = name or f"{funcname(perpartition)}-{funcname(aggregate)}"
        if out_type is Bag:
            combine, aggregate = aggregate if combine is None else combine, partial(red.to_partition, aggregate)
        return _tree(self, op, perpartition, aggregate, combine, split_every,
                     Item if out_type is None else out_type)

    def sum(self, split_every: Any = None) -> Item:
        """The sum of the elements.

        >>> import xsched.bag as xb
        >>> xb.from_sequence(range(5), npartitions=2).sum().compute()
        10
        """
        return _tree(self, "sum", sum, sum, None, split_every, Item)

    def count(self, split_every: Any = None) -> Item:
        """The number of elements.

        >>> import xsched.bag as xb
        >>> xb.from_sequence("hello", npartitions=2).count().compute()
        5
        """
        return _tree(self, "count", len, sum, None, split_every, Item)

    def min(self, split_every: Any = None) -> Item:
        """The smallest element (ValueError if the bag is empty).

        >>> import xsched.bag as xb
        >>> xb.from_sequence([3, 1, 2], npartitions=2).min().compute()
        1
        """
        return _tree(self, "min", partial(red.nonempty, min), partial(red.merge_nonempty, min, "min()", True),
                     partial(red.merge_nonempty, min, "min()", False), split_every, Item)

    def max(self, split_every: Any = None) -> Item:
        """The largest element (ValueError if the bag is empty).

        >>> import xsched.bag as xb
        >>> xb.from_sequence([3, 1, 2], npartitions=2).max().compute()
        3
        """
        return _tree(self, "max", partial(red.nonempty, max), partial(red.merge_nonempty, max, "max()", True),
                     partial(red.merge_nonempty, max, "max()", False), split_every, Item)

    def any(self, split_every: Any = None) -> Item:
        """Whether any element is true.

        >>> import xsched.bag as xb
        >>> xb.from_sequence([0, 0, 1], npartitions=3).any().compute()
        True
        """
        return _tree(self, "any", any, any, None, split_every, Item)

    def all(self, split_every: Any = None) -> Item:
        """Whether every element is true.

        >>> import xsched.bag as xb
        >>> xb.from_sequence([1, 1, 0], npartitions=3).all().compute()
        False
        """
        return _tree(self, "all", all, all, None, split_every, Item)

    def mean(self, split_every: Any = None) -> Item:
        """The arithmetic mean of the elements.

        >>> import xsched.bag as xb
        >>> xb.from_sequence([1, 2, 3, 4], npartitions=3).mean().compute()
        2.5
        """
        return _tree(self, "mean", red.mean_part, red.mean_aggregate, red.mean_combine, split_every, Item)

    def var(self, ddof: int = 0, split_every: Any = None) -> Item:
        """The variance (``ddof=1`` for the sample variance), merged with Chan's pairwise
        formula so that a large mean costs no precision.

        >>> import xsched.bag as xb
        >>> xb.from_sequence([1, 2, 3, 4], npartitions=2).var().compute()
        1.25
        """
        return _tree(self, "var", red.var_part, partial(red.var_aggregate, ddof=ddof), red.var_combine,
                     split_every, Item)

    def std(self, ddof: int = 0, split_every: Any = None) -> Item:
        """The standard deviation (``ddof=1`` for the sample's).

        >>> import xsched.bag as xb
        >>> xb.from_sequence([2, 4, 4, 4, 5, 5, 7, 9], npartitions=3).std().compute()
        2.0
        """
        return _tree(self, "std", red.var_part, partial(red.var_aggregate, ddof=ddof, root=True),
                     red.var_combine, split_every, Item)

    def fold(self, binop: Callable, combine: Callable | None = None, initial: Any = _NO_DEFAULT,
             split_every: Any = None, out_type: type = None) -> Any:
        """``functools.reduce(binop, ...)`` over each partition (from ``initial`` if given),
        then over the partial results with ``combine`` (default ``binop``).

        >>> import operator, xsched.bag as xb
        >>> b = xb.from_sequence(range(5), npartitions=2)
        >>> b.fold(operator.add).compute()
        10
        >>> b.fold(lambda acc, x: acc | {x % 3}, operator.or_, initial=set()).compute()
        {0, 1, 2}
        """
        _check_callable(binop, "fold")
        if combine is not None:
            _check_callable(combine, "fold(combine=...)")
        combine = binop if combine is None else combine
        what, merge = "fold() with no initial=", partial(reduce, combine)
        agg = partial(red.merge_nonempty, merge, what, True)
        if out_type is Bag:
            agg = partial(red.singleton, agg)
        return _tree(self, f"fold-{funcname(binop)}", partial(red.fold_part, binop, initial), agg,
                     partial(red.merge_nonempty, merge, what, False), split_every,
                     Item if out_type is None else out_type)

    def foldby(self, key: Any, binop: Callable, initial: Any = _NO_DEFAULT,
               combine: Callable | None = None, combine_initial: Any = _NO_DEFAULT,
               split_every: Any = None) -> Bag:
        """Group by ``key(x)`` and fold each group with ``binop``, without a shuffle:
        each partition folds its own groups, then the groups' partials are merged with
        ``combine`` (default ``binop``). A one-partition Bag of ``(key, value)`` pairs.

        ``key`` is a function, or an index/field looked up in each element.

        >>> import xsched.bag as xb
        >>> b = xb.from_sequence(range(10), npartitions=3)
        >>> def parity(x): return x % 2
        >>> sorted(b.foldby(parity, lambda total, x: total + x, 0).compute())
        [(0, 20), (1, 25)]

        A callable ``initial`` (or ``combine_initial``) makes each group's first value, as
        toolz's ``reduceby`` and dask's take it: ``set`` gives every group a set of its own.

        >>> import operator
        >>> sorted(b.foldby(parity, lambda seen, x: seen | {x % 3}, set, operator.or_, set).compute())
        [(0, {0, 1, 2}), (1, {0, 1, 2})]
        """
        _check_callable(binop, "foldby")
        if combine is not None:
            _check_callable(combine, "foldby(combine=...)")
        key, combine = _getter(key), binop if combine is None else combine
        return _tree(self, "foldby", partial(red.foldby_part, key, binop, initial),
                     partial(red.foldby_merge, combine, combine_initial, True), split_every=split_every,
                     out_type=Bag, combine=partial(red.foldby_merge, combine, combine_initial, False))

    def frequencies(self, sort: bool = False, split_every: Any = None) -> Bag:
        """``(element, count)`` pairs, most frequent first if ``sort``. One partition.

        >>> import xsched.bag as xb
        >>> xb.from_sequence("abracadabra", npartitions=3).frequencies(sort=True).compute()
        [('a', 5), ('b', 2), ('r', 2), ('c', 1), ('d', 1)]
        """
        return _tree(self, "frequencies", red.frequencies_part, partial(red.frequencies_merge, sort, True),
                     partial(red.frequencies_merge, False, False), split_every, Bag)

    def topk(self, k: int, key: Any = None, split_every: Any = None) -> Bag:
        """The ``k`` largest elements (by ``key(x)`` if given), largest first. One partition.

        >>> import xsched.bag as xb
        >>> b = xb.from_sequence([5, 1, 9, 3, 7], npartitions=2)
        >>> b.topk(2).compute(), b.topk(2, key=lambda x: -x).compute()
        ([9, 7], [1, 3])
        """
        _check_count(k, "topk", "k")
        key = None if key is None else _getter(key)
        part = partial(red.topk_part, k, key)
        return _tree(self, "topk", part, partial(red.topk_merge, k, key), None, split_every, Bag)

    def distinct(self, key: Any = None, split_every: Any = None) -> Bag:
        """The elements with duplicates removed (by ``key(x)`` if given), first seen kept,
        in order. One partition.

        >>> import xsched.bag as xb
        >>> xb.from_sequence([3, 1, 3, 2, 1], npartitions=2).distinct().compute()
        [3, 1, 2]
        """
        key = None if key is None else _getter(key)
        return _tree(self, "distinct", partial(red.distinct_part, key), partial(red.distinct_merge, key, True),
                     partial(red.distinct_merge, key, False), split_every, Bag)

    # ----------------------------------------------------------------- shuffles and shape
    def groupby(self, grouper: Any, npartitions: int | None = None, shuffle: str | None = None) -> Bag:
        """``(key, [elements])`` pairs, one per distinct ``grouper(x)``, through an
        all-to-all shuffle (each group ends up whole in one of ``npartitions`` partitions;
        elements keep their order). Prefer ``foldby`` when a fold of each group is all
        you need: it moves far less data. ``shuffle``: ``"tasks"``, ``"p2p"`` (worker to
        worker, spilling to disk; dask's ``"disk"`` is taken as it), or None for the
        ``shuffle.method`` setting. Keys are placed by a hash every process computes alike
        (``reductions.stable_hash``): of values for builtin types, ranges and dataclasses;
        of all of its state for a class of one's own, so one whose ``==`` ignores some of it
        should be grouped by the fields it compares (``grouper`` returning them).

        >>> import xsched.bag as xb
        >>> b = xb.from_sequence(["apple", "avocado", "banana", "cherry"], npartitions=2)
        >>> def first(word): return word[0]
        >>> sorted(b.groupby(first).compute())
        [('a', ['apple', 'avocado']), ('b', ['banana']), ('c', ['cherry'])]
        """
        n_out = self.npartitions if npartitions is None else npartitions
        _check_count(n_out, "groupby", "npartitions", minimum=1)
        grouper = _getter(grouper)
        label = funcname(grouper) if not isinstance(grouper, operator.itemgetter) else "item"
        token = f"groupby-{label}-{new_token('groupby', self, grouper, n_out)}"
        split = partial(red.group_split, grouper)
        if shuffle not in (None, "tasks", "p2p", "disk"):
            raise ValueError(f"groupby: shuffle must be 'tasks', 'p2p' (or dask's 'disk') or None, got {shuffle!r}")
        method = shuffle_method() if shuffle is None else "p2p" if shuffle == "disk" else shuffle
        if method == "p2p":  # (worker to worker, or as tasks)
            layers, keys = p2p_layers(self.__xsched_keys__(), n_out, split, red.group_combine,
                                      new_token(token), f"p2p-{token}")
        else:
            stages = 1 if self.npartitions * n_out <= 10_000 else 2
            layers, keys = shuffle_layers(self.__xsched_keys__(), n_out, split, red.group_combine, token,
                                          stages=stages)
        return Bag(LayeredGraph.merge(self._graph, new=layers), keys[0].rpartition("-")[0], n_out)

    def take(self, k: int, npartitions: int = 1, compute: bool = True, warn: bool = True) -> Any:
        """The first ``k`` elements, from the first ``npartitions`` partitions only
        (``-1``: all of them). A tuple, or a one-partition Bag if ``compute=False``.
        Warns when those partitions hold fewer than ``k``.

        >>> import xsched.bag as xb
        >>> b = xb.from_sequence(range(10), npartitions=2)
        >>> b.take(3)
        (0, 1, 2)
        >>> b.take(7, npartitions=2)
        (0, 1, 2, 3, 4, 5, 6)
        """
        _check_count(k, "take", "k")
        n = self.npartitions if npartitions == -1 else npartitions
        if not isinstance(n, numbers.Integral) or not 1 <= n <= self.npartitions:
            raise ValueError(f"take: npartitions={npartitions!r} but the bag has {self.npartitions} "
                             f"partitions; pass a number from 1 to {self.npartitions}, or -1 for all")
        name = f"take-{new_token('take', self, k, n)}"
        refs = [Ref(chunk_key(self.name, (i,))) for i in range(n)]
        task = Task(parts.take_part, (k, refs), {}, per_task(annotations_in_force()))
        out = Bag(LayeredGraph.merge(self._graph, new={name: {chunk_key(name, (0,)): task}}), name, 1)
        if not compute:
            return out
        values = tuple(out.compute())
        if warn and len(values) < k:
            warnings.warn(f"take({k}) found only {len(values)} elements in the first {n} partition(s) "
                          f"of {self.npartitions}; pass npartitions=-1 (or a larger number) to look "
                          "further", UserWarning, stacklevel=2)
        return values

    def repartition(self, npartitions: int | None = None, partition_size: Any = None) -> Bag:
        """The same elements, in the same order, in ``npartitions`` partitions (neighbours
        are concatenated, or each partition is cut in even pieces), or in partitions of
        about ``partition_size`` bytes of memory (an int or a string such as ``"64 MiB"``):
        the partitions are measured now (``xsched.sizeof`` of their elements, a compute),
        those above the size cut into as many pieces of even counts as the size asks
        (8 KiB at "3 KiB": 3 pieces) and small neighbours joined while within it.

        >>> import xsched.bag as xb
        >>> b = xb.from_sequence(range(6), npartitions=3)
        >>> [part.compute() for part in b.repartition(2).to_delayed()]
        [[0, 1], [2, 3, 4, 5]]
        >>> b.repartition(6).npartitions, b.repartition(6).compute()
        (6, [0, 1, 2, 3, 4, 5])
        >>> words = xb.from_sequence(["x" * 1000] * 8, npartitions=1)
        >>> words.repartition(partition_size="3 KiB").npartitions
        3
        """
        if (npartitions is None) == (partition_size is None):
            raise ValueError("repartition: give npartitions= or partition_size=, one of them; e.g. "
                             "b.repartition(npartitions=8) or b.repartition(partition_size='64 MiB')")
        if partition_size is not None:
            limit = blocksize_bytes(partition_size, "repartition", "partition_size", whole=False)
            sizes = [int(s) for s in compute_collection(self.map_partitions(parts.nbytes_of))]
            plan, _cut = plan_by_size(sizes, limit)
            token = ("size", limit, sizes)
        else:
            _check_count(npartitions, "repartition", "npartitions", minimum=1)
            if int(npartitions) == self.npartitions:
                return self
            plan = plan_by_count(self.npartitions, int(npartitions))
            token = ("count", int(npartitions))
        name = f"repartition-{new_token('repartition', self, token)}"
        ann = annotations_in_force()
        layer = {chunk_key(name, (j,)): Task(parts.join_pieces, ([(Ref(chunk_key(self.name, (i,))), p, k)
                                                                   for i, p, k in items],), {}, per_task(ann))
                 for j, items in enumerate(plan)}
        return Bag(LayeredGraph.merge(self._graph, new={name: layer}), name, len(plan))

    # ----------------------------------------------------------------- output
    def to_textfiles(self, path: Any, name_function: Callable[[int], str] | None = None,
                     compression: str | None = "infer", encoding: str = "utf-8", compute: bool = True,
                     storage_options: dict | None = None, last_endline: bool = True) -> Any:
        """Write one text file per partition (its elements are the lines; compressed if the
        name ends ``.gz``, ``.bz2`` or ``.xz``); see ``xsched.bag.to_textfiles``.

        >>> import os, tempfile, xsched.bag as xb
        >>> out = tempfile.mkdtemp()
        >>> [os.path.basename(p) for p in xb.from_sequence(["a", "b", "c"], npartitions=2).to_textfiles(
        ...     os.path.join(out, "*.txt"))]
        ['0.txt', '1.txt']
        >>> sorted(os.listdir(out))
        ['0.txt', '1.txt']
        """
        return text.to_textfiles(self, path, name_function=name_function, compression=compression,
                                 encoding=encoding, compute=compute, storage_options=storage_options,
                                 last_endline=last_endline)

    def to_avro(self, filename: Any, schema: Any, **kwargs: Any) -> Any:
        """Write one Avro file per partition (records that fit ``schema``); see
        ``xsched.bag.to_avro``.

        >>> import os, tempfile, xsched.bag as xb
        >>> out = tempfile.mkdtemp()
        >>> schema = {"type": "record", "name": "R", "fields": [{"name": "v", "type": "int"}]}
        >>> xb.from_sequence([{"v": 1}, {"v": 2}], npartitions=2).to_avro(os.path.join(out, "*.avro"), schema)
        >>> sorted(os.listdir(out))
        ['0.avro', '1.avro']
        """
        return avro.to_avro(self, filename, schema, **kwargs)

    def to_dataframe(self, meta: Any = None, columns: Any = None) -> Any:
        """A ``xsched.dataframe`` DataFrame with one pandas partition per partition of the
        bag, whose elements are the rows (dicts, or tuples/lists given ``columns``).

        ``meta``, an empty pandas DataFrame (or ``{column: dtype}``), names the columns and
        their dtypes; without it the first element is computed to infer them.

        >>> import xsched.bag as xb
        >>> b = xb.from_sequence([{"x": 1, "y": "a"}, {"x": 2, "y": "b"}], npartitions=2)
        >>> b.to_dataframe().compute()
           x  y
        0  1  a
        0  2  b
        """
        import pandas as pd

        from ..dataframe.io import from_delayed as frame_from_delayed

        if meta is None:
            head = self.take(1, warn=False)
            if not head:
                raise ValueError("to_dataframe: the first partition is empty, so the columns cannot "
                                 "be inferred; pass meta= (an empty DataFrame or {column: dtype})")
            meta = pd.DataFrame(list(head), columns=columns).iloc[:0]
        elif not isinstance(meta, pd.DataFrame):
            if isinstance(meta, (pd.Series, pd.Index)) or not isinstance(meta, (Mapping, list, tuple)):
                raise TypeError(f"to_dataframe: meta must be an empty pandas DataFrame, a {{column: dtype}} dict or "
                                f"a list of (column, dtype) pairs, not {type(meta).__name__}; for a Series, make the "
                                "DataFrame and select its column")
            pairs = meta.items() if isinstance(meta, Mapping) else meta
            meta = pd.DataFrame({c: pd.Series(dtype=t) for c, t in pairs})
        if columns is not None and list(meta.columns) != list(columns):
            raise ValueError(f"to_dataframe: columns={list(columns)} differ from meta's columns "
                             f"{list(meta.columns)}; give one of them, or make them agree")
        cols, dtypes = list(meta.columns), meta.dtypes.to_dict()
        name = f"to-dataframe-{new_token('to-dataframe', self, cols, [str(t) for t in dtypes.values()])}"
        frames = _partitionwise(name, self.npartitions, parts.to_frame, (self, cols, dtypes))
        return frame_from_delayed(frames.to_delayed(), meta=meta)


def _rebuild_bag(graph: Mapping[str, Any], name: str, npartitions: int) -> Bag:
    """Post-persist: a Bag whose partitions are the persisted values (futures or lists)."""
    return Bag(dict(graph), name, npartitions)


text._BAG = Bag  # text.py builds Bags without importing this module (which imports it)


# --------------------------------------------------------------------------- building layers


def _check_callable(func: Any, what: str) -> None:
    if not callable(func):
        raise TypeError(f"{what}: expected a function, got {func!r} of type {type(func).__name__}")


def _check_count(n: Any, what: str, arg: str, minimum: int = 0) -> None:
    if not isinstance(n, numbers.Integral) or isinstance(n, bool) or n < minimum:
        raise ValueError(f"{what}: {arg} must be an int >= {minimum}, got {n!r}")


def _getter(key: Any) -> Callable:
    """A function from a function, or from an index/field to look up (``x[key]``; a list of
    them: a tuple of those, one item or none included, as ``pluck`` gives)."""
    if callable(key):
        return key
    return partial(_items, keys=tuple(key)) if isinstance(key, list) else operator.itemgetter(key)


def _items(x: Any, keys: tuple) -> tuple:
    return tuple(x[k] for k in keys)


def _common_npartitions(what: str, args: Iterable[Any]) -> int:
    """The npartitions shared by the Bags in ``args``; a clear error if they differ, or if a
    Bag is inside another argument (a tuple, a list, a dict: only a Bag given as an argument
    of its own is zipped)."""
    args = list(args)
    for a in args:
        if not isinstance(a, Bag) and _holds_a_bag(a):
            raise TypeError(f"{what}: a Bag inside a {type(a).__name__} argument is not zipped element by element "
                            "(only a Bag given as an argument of its own is); pass it as an argument of its own, "
                            "or compute it first to pass its whole list")
    bags = [a for a in args if isinstance(a, Bag)]
    if not bags:
        raise TypeError(f"{what} needs at least one Bag among its arguments")
    for b in bags[1:]:
        if b.npartitions != bags[0].npartitions:
            raise ValueError(
                f"{what}: the Bags are zipped partition by partition, but {bags[0].name} has "
                f"{bags[0].npartitions} partitions and {b.name} has {b.npartitions}; repartition "
                f"one first, e.g. b.repartition({bags[0].npartitions})")
    return bags[0].npartitions


def _holds(obj: Any, kinds: tuple) -> bool:
    """An object of ``kinds`` is ``obj`` or in it (a list, tuple, set or dict, at any depth)."""
    if isinstance(obj, kinds):
        return True
    if type(obj) in (list, tuple, set, frozenset):
        return any(_holds(o, kinds) for o in obj)
    return type(obj) is dict and any(_holds(v, kinds) for v in obj.values())


def _holds_a_bag(obj: Any) -> bool:
    return _holds(obj, (Bag,))


def _holds_lazy_value(obj: Any) -> bool:
    return _holds(obj, (Item, Delayed))


class _Select:
    """In ``_partitionwise`` arguments: the ``i``-th of several values for partition ``i``."""

    def __init__(self, items: list) -> None:
        self.items = items


def _arg(obj: Any, i: int, deps: list, lazy: dict | None = None) -> Any:
    """A task argument for partition ``i``: a Bag's partition ``i``, an Item's or Delayed's
    value, or ``obj`` itself; collections are recorded in ``deps``."""
    if type(obj) is _Select:
        obj = obj.items[i]
    if isinstance(obj, Bag):
        deps.append(obj)
        return Ref(chunk_key(obj.name, (i,)))
    if isinstance(obj, (Item, Delayed)):
        deps.append(obj)
        return Ref(obj.key)
    if type(obj) is tuple:  # (the argument tuples of parts.map_part and friends)
        return tuple(_arg(o, i, deps, lazy) for o in obj)
    if type(obj) is dict:
        return {k: _arg(v, i, deps, lazy) for k, v in obj.items()}
    if type(obj) is list:  # (vals=[d1, d2]: their values, as dask passes them; a list scanned once per call)
        lazy = {} if lazy is None else lazy
        if id(obj) not in lazy:
            lazy[id(obj)] = _holds_lazy_value(obj)
        if lazy[id(obj)]:
            return [_arg(o, i, deps, lazy) for o in obj]
    return obj



def _merge(deps: list, new: dict[str, dict]) -> LayeredGraph:
    layers: dict[str, Mapping] = {}
    seen: set[int] = set()
    for d in deps:
        if id(d) in seen:
            continue
        seen.add(id(d))
        if isinstance(d, (Bag, Item)):
            layers.update(d._graph.layers)
        else:
            layers[f"delayed-{d.key}"] = d.__xsched_graph__()
    layers.update(new)
    return LayeredGraph(layers)


def _partitionwise(name: str, npartitions: int, func: Callable, args: tuple) -> Bag:
    """A Bag with one task ``func(*args)`` per partition, where Bags in ``args`` (also
    inside tuples and dicts) stand for their partition ``i`` and Items/Delayed values for
    their value. Every task carries the annotations in force."""
    ann = annotations_in_force()
    deps: list = []
    layer = {}
    lazy: dict = {}  # (id of a list argument -> whether it holds an Item or Delayed: scanned once)
    for i in range(npartitions):
        layer[chunk_key(name, (i,))] = Task(func, _arg(args, i, deps, lazy), {}, per_task(ann))
    return Bag(_merge(deps, {name: layer}), name, npartitions)


def _tree(bag: Bag, op: str, perpartition: Callable, aggregate: Callable, combine: Callable | None,
          split_every: Any, out_type: type) -> Any:
    """A tree reduction of ``bag`` (see ``reductions.tree_layers``): an Item, or a
    one-partition Bag when ``out_type`` is Bag."""
    if out_type not in (Item, Bag):
        raise TypeError(f"{op}: out_type must be xsched.bag.Item or xsched.bag.Bag, got {out_type!r}")
    graph, out = red.tree_layers(bag._graph, bag.name, bag.npartitions, op, perpartition, aggregate,
                                 combine, split_every)
    return Item(graph, chunk_key(out, (0,))) if out_type is Item else Bag(graph, out, 1)


# --------------------------------------------------------------------------- module functions


def from_sequence(seq: Iterable, partition_size: int | None = None, npartitions: int | None = None) -> Bag:
    """A Bag of the elements of ``seq``, in order.

    Give ``npartitions`` (that many partitions of near-equal length, fewer only if ``seq``
    is shorter) or ``partition_size`` (elements per partition; second by position, as in
    dask's ``from_sequence(seq, partition_size, npartitions)``); by default up to 100
    partitions. The elements travel inside the graph: for large data, read it in tasks
    instead (``read_text``, or ``from_sequence`` of file names and ``map`` a reader).

    >>> import xsched.bag as xb
    >>> b = xb.from_sequence(range(10), npartitions=4)
    >>> [len(p.compute()) for p in b.to_delayed()]
    [3, 3, 2, 2]
    """
    if npartitions is not None and partition_size is not None:
        raise ValueError("from_sequence: give npartitions or partition_size, not both")
    seq = list(seq)
    if partition_size is not None:
        _check_count(partition_size, "from_sequence", "partition_size", minimum=1)
        bounds = list(range(0, len(seq), partition_size)) + [len(seq)]
    else:
        if npartitions is None:
            npartitions = DEFAULT_NPARTITIONS
        _check_count(npartitions, "from_sequence", "npartitions", minimum=1)
        bounds = _even_bounds(len(seq), npartitions)
    bounds = bounds if len(bounds) > 1 else [0, 0]
    name = f"from-sequence-{new_token('from-sequence', seq, bounds)}"
    ann = annotations_in_force()
    layer = {chunk_key(name, (i,)): Task(parts.unwrap, (parts.Data(seq[a:b]),), {}, per_task(ann))
             for i, (a, b) in enumerate(zip(bounds, bounds[1:]))}
    return Bag(layer, name, len(layer))


def _even_bounds(n: int, npartitions: int) -> list[int]:
    """Where ``min(npartitions, n)`` (at least 1) near-equal parts of ``range(n)`` start, and ``n``."""
    k = max(1, min(npartitions, n))
    size, extra = divmod(n, k)
    return [i * size + min(i, extra) for i in range(k + 1)]


def bag_range(n: int, npartitions: int) -> Bag:
    """``0, 1, ..., n - 1`` in ``npartitions`` partitions (``xsched.bag.range``); each
    partition is made by its task, so the graph stays small.

    >>> import xsched.bag as xb
    >>> xb.range(5, npartitions=2).compute()
    [0, 1, 2, 3, 4]
    """
    _check_count(n, "range", "n")
    _check_count(npartitions, "range", "npartitions", minimum=1)
    bounds = _even_bounds(n, npartitions)
    k = len(bounds) - 1
    name = f"range-{new_token('range', n, k)}"
    ann = annotations_in_force()
    layer = {chunk_key(name, (i,)): Task(parts.range_part, (bounds[i], bounds[i + 1]), {}, per_task(ann))
             for i in range(k)}
    return Bag(layer, name, k)


def from_delayed(values: Any) -> Bag:
    """A Bag with one partition per ``Delayed`` value or future (each must compute to an
    iterable).

    >>> import xsched, xsched.bag as xb
    >>> parts = [xsched.delayed(list)(range(i)) for i in (1, 2, 3)]
    >>> xb.from_delayed(parts).compute()
    [0, 0, 1, 0, 1, 2]
    """
    values = [values] if isinstance(values, Delayed) or is_future(values) else list(values)
    if not values:
        raise ValueError("from_delayed: no Delayed values given; a Bag needs at least one partition")
    values = [as_delayed(v) for v in values]  # (a future: the Delayed of its key's value)
    for i, v in enumerate(values):
        if not isinstance(v, Delayed):
            raise TypeError(f"from_delayed takes Delayed values (xsched.delayed(f)(...)), got "
                            f"{type(v).__name__} at position {i}; use from_sequence for plain values")
    name = f"from-delayed-{new_token('from-delayed', [v.key for v in values])}"
    return _partitionwise(name, len(values), parts.delayed_partition, (_Select(values),))


def concat(bags: list[Bag]) -> Bag:
    """The partitions of several Bags, one Bag after the other.

    >>> import xsched.bag as xb
    >>> b = xb.concat([xb.from_sequence([1, 2]), xb.from_sequence([3], npartitions=1)])
    >>> b.npartitions, b.compute()
    (3, [1, 2, 3])
    """
    bags = list(bags)
    if not bags or not all(isinstance(b, Bag) for b in bags):
        raise TypeError("concat takes a non-empty list of Bags")
    sources = [chunk_key(b.name, (i,)) for b in bags for i in range(b.npartitions)]
    name = f"concat-{new_token('concat', [b.name for b in bags])}"
    ann = annotations_in_force()
    layer = {chunk_key(name, (j,)): Task(parts.identity, (Ref(key),), {}, per_task(ann))
             for j, key in enumerate(sources)}
    return Bag(_merge(bags, {name: layer}), name, len(layer))


def bag_map(func: Callable, *args: Any, **kwargs: Any) -> Bag:
    """``func(*args, **kwargs)`` element by element (``xsched.bag.map``): Bag arguments
    (positional or keyword, all with the same npartitions and partitions of equal length)
    are zipped element by element; Items and Delayed values are passed whole; anything
    else is passed as is.

    >>> import operator, xsched.bag as xb
    >>> a = xb.from_sequence([1, 2, 3], npartitions=2)
    >>> b = xb.from_sequence([10, 20, 30], npartitions=2)
    >>> xb.map(operator.add, a, b).compute()
    [11, 22, 33]
    >>> a.map(lambda x, m: x - m, a.mean()).compute()
    [-1.0, 0.0, 1.0]
    """
    _check_callable(func, "map")
    n = _common_npartitions("map", [*args, *kwargs.values()])
    bag_pos = tuple(i for i, a in enumerate(args) if isinstance(a, Bag))
    bag_kw = tuple(k for k, v in kwargs.items() if isinstance(v, Bag))
    name = f"map-{funcname(func)}-{new_token('map', func, args, kwargs)}"
    return _partitionwise(name, n, parts.map_part, (func, bag_pos, bag_kw, args, kwargs))


def bag_map_partitions(func: Callable, *args: Any, **kwargs: Any) -> Bag:
    """``func(*args, **kwargs)`` per partition (``xsched.bag.map_partitions``), where Bag
    arguments (all with the same npartitions) stand for their partition ``i`` and Items and
    Delayed values for their value; ``func`` returns the new partition (any iterable), or
    one value (a number, a string, a dict), which makes a partition of that one element.

    >>> import xsched.bag as xb
    >>> a, b = xb.from_sequence([1, 2, 3, 4], npartitions=2), xb.from_sequence("wxyz", npartitions=2)
    >>> xb.map_partitions(lambda p, q: [f"{len(p)}{''.join(q)}"], a, b).compute()
    ['2wx', '2yz']
    >>> a.map_partitions(len).compute(), a.map_partitions(lambda p: {"n": len(p)}).count().compute()
    ([2, 2], 2)
    """
    _check_callable(func, "map_partitions")
    n = _common_npartitions("map_partitions", [*args, *kwargs.values()])
    name = f"map-partitions-{funcname(func)}-{new_token('map-partitions', func, args, kwargs)}"
    return _partitionwise(name, n, parts.map_partitions_part, (func, args, kwargs))


def bag_zip(*bags: Bag) -> Bag:
    """Tuples of the elements of several Bags, element by element (``xsched.bag.zip``).

    >>> import xsched.bag as xb
    >>> xb.zip(xb.from_sequence("ab"), xb.from_sequence([1, 2])).compute()
    [('a', 1), ('b', 2)]
    """
    if not all(isinstance(b, Bag) for b in bags):
        raise TypeError("zip takes Bags only")
    n = _common_npartitions("zip", bags)
    name = f"zip-{new_token('zip', bags)}"
    return _partitionwise(name, n, parts.zip_parts, bags)
