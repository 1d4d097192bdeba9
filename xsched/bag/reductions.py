"""Reductions of bags as trees of tasks, the ``Item`` they give, and the hash that
partitions a groupby.

Why a tree: one task reducing a thousand partitions would make one worker fetch them all.
Each partition is reduced to a small *partial* (``<op>-part``), partials are merged
``split_every`` at a time (``<op>-combine``, as many levels as needed), and the last merge
gives the result (``<op>-aggregate``), which ``xsched.bag.core`` wraps in an ``Item`` (one
value) or a one-partition ``Bag`` (``frequencies``, ``topk``, ``distinct``, ``foldby``).

This module knows nothing of ``Bag`` (``core`` imports it): it takes a graph and the name
of the partitions, and holds the functions the tasks run (internal: the API is
``xsched.bag``; ``__all__`` names what other modules may use).

>>> from xsched.graph.local import get
>>> from xsched.graph.spec import Task
>>> from xsched.graph.layers import LayeredGraph
>>> parts = {f"p-{i}": Task(list, (range(i * 10, i * 10 + 10),)) for i in range(5)}
>>> graph, out = tree_layers(LayeredGraph({"p": parts}), "p", 5, "sum", sum, sum, None, 2)
>>> sorted(graph.layers)
['p', 'sum-aggregate-...', 'sum-combine-...', 'sum-combine-...', 'sum-part-...']
>>> get(dict(graph), f"{out}-0")
1225
"""

from __future__ import annotations

import copy
import dataclasses
import datetime as dt
import decimal
import heapq
import html
import itertools
import math
import numbers
import zlib
from functools import reduce
from collections.abc import Iterable, Mapping
from typing import Any, Callable

from ..graph.collection import compute_collection, lineage, persist_collection
from ..graph.delayed import Delayed, as_delayed
from ..graph.layers import LayeredGraph, annotations_in_force, chunk_key, new_token, per_task
from ..graph.optimize import optimize
from ..graph.partials import combine_levels
from ..graph.spec import Ref, Task, funcname
from ..graph.visualize import visualize_method
from ..tokenize import tokenize

__all__ = ["Item", "tree_layers", "stable_hash", "DEFAULT_SPLIT_EVERY"]

#: Partials merged per task of a tree reduction when ``split_every`` is not given.
DEFAULT_SPLIT_EVERY = 8


class _Marker:
    """A named singleton that pickles by reference (so ``is`` still holds on a worker)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name

    def __reduce__(self) -> str:
        return self.name


NO_DEFAULT = _Marker("NO_DEFAULT")  # an argument not given (None may be a real value)
EMPTY = _Marker("EMPTY")            # the partial of an empty partition


# --------------------------------------------------------------------------- Item


class Item:
    """One value computed by a task graph: what a reduction of a Bag returns.

    ``compute()`` gives the value; an Item can be passed to ``Bag.map`` (every call gets
    the value) and turned into a ``Delayed`` with ``to_delayed()``.

    >>> import xsched.bag as xb
    >>> total = xb.from_sequence(range(4), npartitions=2).sum()
    >>> total
    xsched.Item<sum-aggregate-...-0>
    >>> total.compute()
    6
    """

    def __init__(self, graph: Mapping[str, Any], key: str) -> None:
        self._graph = graph if isinstance(graph, LayeredGraph) else LayeredGraph({key: graph})
        self.key = key

    def __xsched_graph__(self) -> dict:
        return dict(self._graph.flat())

    def __xsched_keys__(self) -> list[str]:
        return [self.key]

    def __xsched_postcompute__(self) -> tuple[Callable, tuple]:
        return _first, ()

    def __xsched_postpersist__(self) -> tuple[Callable, tuple]:
        return _rebuild_item, (self.key,)

    def __xsched_tokenize__(self) -> str:
        return self.key

    visualize = visualize_method

    def compute(self, optimize_graph: bool = True, **kwargs: Any) -> Any:
        """The value (on the default client if one runs, else here).

        >>> import xsched.bag as xb
        >>> xb.from_sequence([2, 3]).max().compute()
        3
        """
        return compute_collection(self, optimize_graph, **kwargs)

    def __int__(self) -> int:
        """The value, computed now, as an int: ``int(bag.count())``, as in dask.

        >>> import xsched.bag as xb
        >>> int(xb.from_sequence(range(5)).fold(lambda a, b: a + b)), float(xb.from_sequence([1, 2]).mean())
        (10, 1.5)
        """
        return int(self.compute())

    def __float__(self) -> float:
        return float(self.compute())

    def __complex__(self) -> complex:
        return complex(self.compute())

    def __bool__(self) -> bool:
        """The value's truth, computed now (``if bag.any():``)."""
        return bool(self.compute())

    def persist(self, **kwargs: Any) -> Item:
        """Compute the value and keep it (on the cluster, or here) for reuse.

        >>> import xsched.bag as xb
        >>> xb.from_sequence([2, 3]).sum().persist().compute()
        5
        """
        return persist_collection(self, **kwargs)

    @staticmethod
    def from_delayed(value: Any) -> "Item":
        """An Item of a ``Delayed`` value (or a future's), to use beside Bags: passed to
        ``Bag.map``, ``apply``'d, computed.

        >>> import xsched, xsched.bag as xb
        >>> n = xb.Item.from_delayed(xsched.delayed(len)([1, 2, 3]))
        >>> xb.from_sequence([1, 2]).map(lambda x, k: x * k, n).compute()
        [3, 6]
        """
        delayed = as_delayed(value)
        if not isinstance(delayed, Delayed):
            raise TypeError(f"Item.from_delayed takes a Delayed value (xsched.delayed(f)(...)) or a future, got "
                            f"{type(value).__name__}")
        return Item(delayed.__xsched_graph__(), delayed.key)

    def to_delayed(self, optimize_graph: bool = True) -> Delayed:
        """A ``Delayed`` of this value, carrying the tasks it needs.

        >>> import xsched.bag as xb
        >>> (xb.from_sequence([1, 2]).sum().to_delayed() * 10).compute()
        30
        """
        graph = self.__xsched_graph__()
        if optimize_graph:
            graph = optimize(graph, [self.key])
        return Delayed(self.key, lineage(graph, self.key))

    def apply(self, func: Callable) -> Item:
        """``func(value)``, as a new Item.

        >>> import xsched.bag as xb
        >>> xb.from_sequence([1, 2]).sum().apply(str).compute()
        '3'
        """
        if not callable(func):
            raise TypeError(f"apply: expected a function, got {func!r} of type {type(func).__name__}")
        name = f"{funcname(func)}-{new_token('apply', func, self.key)}"
        key = chunk_key(name, (0,))
        task = Task(func, (Ref(self.key),), {}, per_task(annotations_in_force()))
        return Item(LayeredGraph.merge(self._graph, new={name: {key: task}}), key)

    def __repr__(self) -> str:
        return f"xsched.Item<{self.key}>"

    def _repr_html_(self) -> str:
        return html_table("xsched.Item", [("key", self.key), ("tasks", len(self._graph))])


def html_table(caption: str, rows: list[tuple[str, Any]]) -> str:
    """The small table a notebook shows for a Bag or an Item."""
    body = "".join(f"<tr><th style='text-align:left'>{html.escape(k)}</th>"
                   f"<td style='text-align:left'><code>{html.escape(str(v))}</code></td></tr>"
                   for k, v in rows)
    return f"<table><caption>{html.escape(caption)}</caption>{body}</table>"


def _rebuild_item(graph: Mapping[str, Any], key: str) -> Item:
    """Post-persist: an Item whose value is the persisted one (a future, or the value)."""
    return Item(dict(graph), key)


def _first(results: list) -> Any:
    return results[0]


# --------------------------------------------------------------------------- the tree


def tree_layers(graph: Mapping[str, Any], name: str, npartitions: int, op: str, perpartition: Callable,
                aggregate: Callable, combine: Callable | None, split_every: Any) -> tuple[LayeredGraph, str]:
    """The layers reducing partitions ``name-0 .. name-(n-1)`` of ``graph``, merged into it,
    and the name of the result (its one key is ``<name>-0``).

    ``perpartition(partition)`` makes a partial, ``combine(list of partials)`` merges them
    on the inner levels (``aggregate`` when None) and ``aggregate(list of partials)`` gives
    the result. ``split_every``: partials per merge (None: 8; False: all at once).

    >>> from xsched.graph.local import get
    >>> from xsched.graph.spec import Task
    >>> parts = {f"nums-{i}": Task(list, (range(i, 20, 4),)) for i in range(4)}
    >>> graph, out = tree_layers(parts, "nums", 4, "biggest", max, max, None, 2)
    >>> out.startswith("biggest-aggregate-"), get(dict(graph), f"{out}-0")
    (True, 19)
    """
    if split_every is None:
        split_every = DEFAULT_SPLIT_EVERY
    elif split_every is False:
        split_every = max(npartitions, 2)
    elif not isinstance(split_every, numbers.Integral) or isinstance(split_every, bool) or split_every < 2:
        raise ValueError(f"{op}: split_every must be an int >= 2 (partials merged per task), "
                         f"False (all at once) or None, got {split_every!r}")
    combine = aggregate if combine is None else combine
    token = new_token(op, name, perpartition, aggregate, combine, split_every)
    ann = annotations_in_force()
    part = f"{op}-part-{token}"
    layers = {part: {chunk_key(part, (i,)): Task(perpartition, (Ref(chunk_key(name, (i,))),), {}, per_task(ann))
                     for i in range(npartitions)}}
    keys = combine_levels(layers, list(layers[part]), op, token, combine, split_every, annotations=ann)
    out = f"{op}-aggregate-{token}"
    layers[out] = {chunk_key(out, (0,)): Task(aggregate, ([Ref(k) for k in keys],), {}, per_task(ann))}
    return LayeredGraph.merge(graph, new=layers), out


# --------------------------------------------------------------------------- partials


def nonempty(func: Callable, part: list) -> Any:
    return func(part) if part else EMPTY


def merge_nonempty(func: Callable, what: str, final: bool, partials: list) -> Any:
    """``func`` of the partials of non-empty partitions; on an inner level of the tree a
    group of empty ones gives EMPTY, at the root it is an error (the bag is empty)."""
    values = [p for p in partials if p is not EMPTY]
    if not values:
        if not final:
            return EMPTY
        raise ValueError(f"{what} of an empty bag: no partition has an element")
    return func(values)


def singleton(func: Callable, partials: list) -> list:
    """A one-element partition of ``func``'s result (a reduction with ``out_type=Bag``)."""
    return [func(partials)]


def to_partition(func: Callable, partials: list) -> list:
    """``func``'s result as a partition: ``reduction(..., out_type=Bag)``'s aggregate."""
    out = func(partials)
    if isinstance(out, (str, bytes, Mapping)) or not isinstance(out, Iterable):
        raise TypeError(f"reduction(out_type=Bag): {funcname(func)} returned a {type(out).__name__}; "
                        "with out_type=Bag the aggregate returns the elements of the result (a list)")
    return list(out)


def fold_part(binop: Callable, initial: Any, part: list) -> Any:
    if initial is NO_DEFAULT:
        return reduce(binop, part) if part else EMPTY
    return reduce(binop, part, _fresh(initial))  # (a list a binop appends to: each partition its own)


def mean_part(part: list) -> tuple:
    return len(part), sum(part)


def mean_combine(partials: list) -> tuple:
    return sum(n for n, _ in partials), sum(t for _, t in partials)


def mean_aggregate(partials: list) -> float:
    n, total = mean_combine(partials)
    if not n:
        raise ValueError("mean() of an empty bag: no partition has an element")
    return total / n


def var_part(part: list) -> tuple:
    n = len(part)
    if not n:
        return 0, 0, 0
    mean = sum(part) / n
    return n, mean, sum((x - mean) ** 2 for x in part)


def var_combine(partials: list) -> tuple:
    """Merge ``(count, mean, M2)`` partials (Chan, Golub & LeVeque's pairwise formula),
    from int zeros so that Decimal and Fraction values keep their type, as in ``statistics``."""
    n, mean, m2 = 0, 0, 0
    for nb, mb, m2b in partials:
        if nb:
            total = n + nb
            delta = mb - mean
            mean += delta * nb / total
            m2 += m2b + delta * delta * n * nb / total
            n = total
    return n, mean, m2


def var_aggregate(partials: list, ddof: int = 0, root: bool = False) -> float:
    n, _, m2 = var_combine(partials)
    if n - ddof <= 0:
        raise ValueError(f"{'std' if root else 'var'}(ddof={ddof}) needs more than {ddof} elements; "
                         f"the bag has {n}")
    var = m2 / (n - ddof)
    if not root:
        return var
    return var.sqrt() if isinstance(var, decimal.Decimal) else math.sqrt(var)


def foldby_part(key: Callable, binop: Callable, initial: Any, part: list) -> dict:
    out: dict = {}
    for x in part:
        k = key(x)
        if k in out:
            out[k] = binop(out[k], x)
        else:
            out[k] = x if initial is NO_DEFAULT else binop(_start(initial), x)
    return out


def _start(initial: Any) -> Any:
    """A fold's first value: ``initial``, or what it makes when it is callable (``set``,
    ``list``: a fresh one per key, as toolz's ``reduceby`` and dask's ``foldby`` take it); a
    copy of a value, so that a binop changing it in place (``acc.append(x)``) changes no other
    key's, nor the caller's."""
    return initial() if callable(initial) else _fresh(initial)


def _fresh(initial: Any) -> Any:
    """A copy of a list, dict or set a fold starts from (a binop may change it in place); any
    other value as it is (a sentinel compared with ``is``, an object that cannot be copied)."""
    return copy.deepcopy(initial) if type(initial) in (list, dict, set) else initial


def foldby_merge(combine: Callable, initial: Any, final: bool, partials: list) -> Any:
    out: dict = {}
    for d in partials:
        for k, v in d.items():
            if k in out:
                out[k] = combine(out[k], v)
            else:
                out[k] = v if initial is NO_DEFAULT else combine(_start(initial), v)
    return list(out.items()) if final else out


def frequencies_part(part: list) -> dict:
    out: dict = {}
    for x in part:
        out[x] = out.get(x, 0) + 1
    return out


def frequencies_merge(sort: bool, final: bool, partials: list) -> Any:
    out: dict = {}
    for d in partials:
        for x, n in d.items():
            out[x] = out.get(x, 0) + n
    if not final:
        return out
    items = list(out.items())
    return sorted(items, key=lambda kv: -kv[1]) if sort else items


def topk_part(k: int, key: Callable | None, part: list) -> list:
    return heapq.nlargest(k, part, key=key)


def topk_merge(k: int, key: Callable | None, partials: list) -> list:
    return heapq.nlargest(k, itertools.chain.from_iterable(partials), key=key)


def distinct_part(key: Callable | None, part: list) -> dict:
    out: dict = {}
    for x in part:
        out.setdefault(x if key is None else key(x), x)
    return out


def distinct_merge(key: Callable | None, final: bool, partials: list) -> Any:
    out: dict = {}
    for d in partials:
        for k, x in d.items():
            out.setdefault(k, x)
    return list(out.values()) if final else out


# ---- groupby: a stable hash (the builtin hash of str and bytes differs between processes)


def stable_hash(obj: Any) -> int:
    """A hash of ``obj`` that every process computes alike, for hash partitioning.

    Python salts ``hash()`` of str and bytes per process, so two workers would send the
    same key to different partitions. Numbers use ``hash()`` (not salted, and equal for
    ``1``, ``1.0`` and ``True``, as equality needs); text, bytes and tuples/frozensets of
    them a CRC-32. Keys that are equal across types or time zones hash alike: dates and
    times as microseconds in UTC (``hash()`` of those is salted, and a token would tell
    ``pd.Timestamp`` from ``datetime`` or ``+01:00`` from UTC), NumPy scalars as the Python
    value; ranges by their values and dataclasses by the fields their ``==`` compares.
    Anything else: its token (``xsched.tokenize``), which covers all of its state: a class of
    one's own whose ``==`` ignores some of it should be grouped by the fields it compares.

    >>> import datetime as dt
    >>> from xsched.bag.reductions import stable_hash
    >>> stable_hash("spam") == stable_hash("spam"), stable_hash(1) == stable_hash(1.0)
    (True, True)
    >>> utc, paris = dt.timezone.utc, dt.timezone(dt.timedelta(hours=1))
    >>> stable_hash(dt.datetime(2024, 1, 1, tzinfo=utc)) == stable_hash(dt.datetime(2024, 1, 1, 1, tzinfo=paris))
    True
    """
    typ = type(obj)
    if typ.__module__ == "numpy" and hasattr(obj, "item"):  # (np.bool_ == True; datetime64 == Timestamp)
        obj = obj.astype(f"{obj.dtype.kind}8[us]") if obj.dtype.kind in "mM" else obj
        return stable_hash(obj.item())
    if isinstance(obj, (dt.date, dt.timedelta)) and obj == obj:  # (NaT: not equal to itself, no fields)
        return stable_hash(_microseconds(obj))
    if isinstance(obj, str):
        return zlib.crc32(obj.encode("utf-8", "surrogatepass"))
    if isinstance(obj, bytes):
        return zlib.crc32(obj)
    if obj is None:
        return 0
    if isinstance(obj, numbers.Number):
        return hash(obj) & 0xFFFFFFFFFFFFFFFF
    if isinstance(obj, tuple):
        h = 0x345678
        for item in obj:
            h = ((h * 1000003) ^ stable_hash(item)) & 0xFFFFFFFFFFFFFFFF
        return h
    if isinstance(obj, frozenset):
        return sum(stable_hash(item) for item in obj) & 0xFFFFFFFFFFFFFFFF
    if isinstance(obj, range):  # (equal when their values are: range(0) == range(5, 5))
        return stable_hash(("range",) + ((obj.start, obj.step, len(obj)) if len(obj) > 1 else tuple(obj)))
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):  # (the fields its == compares)
        return stable_hash((typ.__qualname__,) + tuple(getattr(obj, f.name) for f in dataclasses.fields(obj)
                                                         if f.compare))
    token = tokenize(obj)
    if token != tokenize(obj):  # (a random token: tokenize found no reproducible hash)
        raise TypeError(f"groupby: cannot hash the key {obj!r} of type {typ.__name__} alike in "
                        "every worker process; group by str, bytes, numbers or tuples of them")
    return int(token[:16], 16)


def _microseconds(t: Any) -> int:
    """A date, a datetime (counted in UTC if it has a time zone) or a timedelta as whole
    microseconds, so that equal values, of whatever class, give equal numbers."""
    us = dt.timedelta(microseconds=1)
    if isinstance(t, dt.timedelta):
        return t // us
    if not isinstance(t, dt.datetime):
        return t.toordinal() * 86_400_000_000
    seconds = t.toordinal() * 86_400 + t.hour * 3_600 + t.minute * 60 + t.second
    return seconds * 1_000_000 + t.microsecond - (t.utcoffset() or dt.timedelta(0)) // us


def group_split(grouper: Callable, part: list, n: int) -> list[list]:
    pieces: list[list] = [[] for _ in range(n)]
    seen: dict = {}  # key -> its piece (keys repeat: hash each once)
    for x in part:
        k = grouper(x)
        j = seen.get(k)
        if j is None:
            j = seen[k] = stable_hash(k) % n
        pieces[j].append((k, x))
    return pieces


def group_combine(pieces: list[list]) -> list:
    groups: dict = {}
    for piece in pieces:
        for k, x in piece:
            groups.setdefault(k, []).append(x)
    return list(groups.items())
