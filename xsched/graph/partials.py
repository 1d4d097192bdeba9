"""Partials of partitions combined: merged level by level (a tree) or carried one to the next (a chain).

A reduction over many partitions (a bag's sum, a frame's mean, a groupby's aggregation,
an array's unique values) makes one partial per partition, then merges them in groups of
``split_every`` until few enough are left for one last task (``combine_levels``). A
running value (a cumulative sum, a fill, the rows a rolling window or an as-of merge needs
from its neighbours) is carried from partition to partition instead, each link made from
the one before and its own partition's partial (``chain_layer``). Where each partition
needs a little from all the others (the values present nearest it, the totals before it),
every partition's summary goes to one task that gives each partition its own share
(``through_all``). Only those shapes are shared here; what each task computes belongs to
the collection that builds them.

>>> from xsched.graph.local import get
>>> from xsched.graph.spec import Task
>>> layers = {"p": {f"p-{i}": Task(int, (i,)) for i in range(5)}}
>>> left = combine_levels(layers, list(layers["p"]), "total", "t0k3n", sum, 2)
>>> len(left), get({k: t for layer in layers.values() for k, t in layer.items()}, left)
(2, [6, 4])
"""

from __future__ import annotations

from typing import Any, Callable

from .layers import annotations_in_force, chunk_key, new_token, per_task
from .spec import Ref, Task

__all__ = ["combine_levels", "chain_layer", "row_starts", "through_all", "pick"]


def combine_levels(layers: dict, keys: list, prefix: str, token: str, combine: Callable, split_every: int, *,
                   args: tuple = (), index: tuple = (), annotations: dict | None = None) -> list:
    """Add to ``layers`` the levels that merge ``keys`` ``split_every`` at a time with
    ``combine([partials...], *args)`` until at most ``split_every`` are left; return those
    (``keys`` itself when there are already that few).

    Level ``n``'s layer is named ``<prefix>-combine-<token of token and n>`` (one task group
    for all levels) and its keys are ``index`` followed by the group's number, so trees
    built side by side (one per output partition) share their layers.
    """
    if split_every < 2:
        raise ValueError(f"{prefix}: split_every must merge at least 2 partials, got {split_every}")
    ann = annotations_in_force() if annotations is None else annotations
    level = 0
    while len(keys) > split_every:
        level += 1
        name = f"{prefix}-combine-{new_token(token, level)}"
        layer = layers.setdefault(name, {})
        merged = []
        for g, start in enumerate(range(0, len(keys), split_every)):
            key = chunk_key(name, (*index, g))
            layer[key] = Task(combine, ([Ref(k) for k in keys[start:start + split_every]], *args), {},
                              per_task(ann))
            merged.append(key)
        keys = merged
    return list(keys)


def chain_layer(name: str, order: Any, inputs: Any, step: Callable, args: tuple = (), *,
                annotations: dict | None = None) -> dict:
    """The layer of a chain over partitions ``order`` (in the order the value travels): link
    ``i`` is ``step(link before or None, inputs[i], *args)``, keyed as partition ``i`` of
    ``name``, so partition ``i``'s carried value is ``chunk_key(name, (i,))``.

    >>> from xsched.graph.local import get
    >>> from xsched.graph.spec import Task
    >>> layer = chain_layer("run", range(2, -1, -1), ["a", "b", "c"], lambda prev, x: (prev or 0) + x)
    >>> get({**layer, "a": 1, "b": 10, "c": 100}, ["run-0", "run-2"])
    [111, 100]
    """
    ann = annotations_in_force() if annotations is None else annotations
    layer, prev = {}, None
    for i in order:
        key = chunk_key(name, (i,))
        layer[key] = Task(step, (None if prev is None else Ref(prev), Ref(inputs[i]), *args), {}, per_task(ann))
        prev = key
    return layer


def _start_after(start: int | None, length: int) -> int:
    """Where a partition starts: where the one before started (None: the first, at 0) plus its length."""
    return (start or 0) + length


def row_starts(name: str, keys: list, *, annotations: dict | None = None) -> tuple[dict, list]:
    """Where each of the partitions ``keys`` starts, counted in rows (items) of them all: the
    layers (``name-len`` a length per partition, ``name-start`` a chain of their sums) and, per
    partition, its start (0 for the first, else a ``Ref`` to its link).

    >>> from xsched.graph.local import get
    >>> layers, starts = row_starts("at", ["a", "b", "c"])
    >>> graph = {k: t for layer in layers.values() for k, t in layer.items()}
    >>> starts[0], get({**graph, "a": [1, 2], "b": [3], "c": [4, 5]}, [s.key for s in starts[1:]])
    (0, [2, 3])
    """
    ann = annotations_in_force() if annotations is None else annotations
    lengths, chain = f"{name}-len", f"{name}-start"
    layers = {lengths: {chunk_key(lengths, (i,)): Task(len, (Ref(k),), {}, per_task(ann))
                        for i, k in enumerate(keys[:-1])}}
    layers[chain] = chain_layer(chain, range(1, len(keys)), {i: chunk_key(lengths, (i - 1,)) for i in range(1, len(keys))},
                                _start_after, annotations=ann)
    return layers, [0] + [Ref(chunk_key(chain, (i,))) for i in range(1, len(keys))]


def pick(items: list, i: int) -> Any:
    """Item ``i`` of a task's list (a task of its own: each partition's share of one result).

    >>> pick(["share-0", "share-1"], 1)
    'share-1'
    """
    return items[i]


def through_all(name: str, keys: list, summarize: Callable, share: Callable, apply: Callable, args: tuple = (), *,
                annotations: dict | None = None) -> dict:
    """The layers of an operation on partitions ``keys`` in which each partition needs a
    little of every other: ``summarize(partition)`` per partition; one task
    ``share([summaries...])`` giving a list of one item per partition; each item picked by a
    small task of its own (so a partition's task receives its share, not the whole list);
    and ``apply(partition, item, *args)``, keyed as partition ``i`` of ``name``.

    >>> from xsched.graph.local import get
    >>> layers = through_all("minus-first", ["a", "b"], min, lambda mins: [mins[0]] * len(mins),
    ...                      lambda part, first: [v - first for v in part])
    >>> get({k: t for layer in layers.values() for k, t in layer.items()} | {"a": [3, 4], "b": [5, 9]},
    ...     [chunk_key("minus-first", (1,))])
    [[2, 6]]
    """
    ann = annotations_in_force() if annotations is None else annotations
    summaries, shared, shares = f"{name}-summaries", f"{name}-shared", f"{name}-share"
    whole = chunk_key(shared, (0,))
    return {
        summaries: {chunk_key(summaries, (i,)): Task(summarize, (Ref(k),), {}, per_task(ann))
                    for i, k in enumerate(keys)},
        shared: {whole: Task(share, ([Ref(chunk_key(summaries, (i,))) for i in range(len(keys))],), {},
                             per_task(ann))},
        shares: {chunk_key(shares, (i,)): Task(pick, (Ref(whole), i), {}, per_task(ann)) for i in range(len(keys))},
        name: {chunk_key(name, (i,)): Task(apply, (Ref(k), Ref(chunk_key(shares, (i,))), *args), {}, per_task(ann))
               for i, k in enumerate(keys)},
    }
