"""What every collection operation uses to add its layer of tasks: keys, tokens, annotations, layers.

Arrays, dataframes and bags each add one *layer* (a dict of tasks, one per output block or
partition) per operation; this module is what they share, and it imports none of them. It
also merges the graphs of collections computed together (``collections_graph``).

>>> chunk_key("sum-aggregate-1a2b", (0, 3))
'sum-aggregate-1a2b-0.3'
"""

from __future__ import annotations

import copy
import uuid
from collections.abc import Mapping
from typing import Any, Iterator, Sequence

from .annotate import current_annotations
from .optimize import flatten_keys
from ..tokenize import tokenize

__all__ = ["LayeredGraph", "chunk_key", "new_token", "annotations_in_force", "per_task", "collections_graph"]


def new_token(*parts: Any) -> str:
    """A deterministic hex token for ``parts`` (random when they cannot be hashed)."""
    try:
        return tokenize(*parts)
    except Exception:
        return uuid.uuid4().hex


def chunk_key(name: str, index: Sequence[int]) -> str:
    """The graph key of block ``index`` of the array named ``name``.

    >>> chunk_key("from-array-1a2b", (0, 3))
    'from-array-1a2b-0.3'
    >>> chunk_key("sum-aggregate-1a2b", ())
    'sum-aggregate-1a2b-0'
    """
    if len(index) == 1:  # (a dataframe's partitions, a 1-d array's blocks: most keys)
        return f"{name}-{int(index[0])}"
    return f"{name}-{'.'.join(str(int(i)) for i in index) if len(index) else '0'}"


def annotations_in_force() -> dict:
    """A private copy of the annotations in force (``xsched.annotate(...)`` blocks)."""
    return copy.deepcopy(dict(current_annotations()))


def per_task(annotations: dict) -> dict:
    """A copy for one task, nested dicts/lists included, so no two tasks share state."""
    if not annotations:
        return {}
    return {k: (dict(v) if isinstance(v, dict) else list(v) if isinstance(v, list) else v)
            for k, v in annotations.items()}


class LayeredGraph(Mapping):
    """A read-only graph made of named layers (one per collection operation).

    Why: chaining ``k`` operations on ``n`` blocks would copy ``O(k * n)`` tasks per step if
    each array held one flat dict; layers are shared between arrays instead, and the flat
    graph is built once, on demand.
    """

    __slots__ = ("layers", "_flat")

    def __init__(self, layers: Mapping[str, Mapping[str, Any]]) -> None:
        self.layers = dict(layers)
        self._flat: dict | None = None

    @classmethod
    def merge(cls, *graphs: Mapping, new: dict[str, Mapping] | None = None) -> "LayeredGraph":
        layers: dict[str, Mapping] = {}
        for g in graphs:
            if isinstance(g, LayeredGraph):
                layers.update(g.layers)
            else:
                layers[f"literal-{id(g)}"] = g
        if new:
            layers.update(new)
        return cls(layers)

    def flat(self) -> dict:
        if self._flat is None:
            out: dict = {}
            for layer in self.layers.values():
                out.update(layer)
            self._flat = out
        return self._flat

    def __getitem__(self, key: str) -> Any:
        return self.flat()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.flat())

    def __len__(self) -> int:
        return len(self.flat())


def collections_graph(collections: list) -> dict:
    """The tasks of ``collections`` computed together, as one dict. Collections that plan
    their graph before it runs (dataframes: ``__xsched_layers__`` gives the planner, the
    layered graph and the keys) are planned together, one plan per planner, so what they
    share is read once and their reductions of the same partitions share a tree; each of the
    others gives its ``__xsched_graph__``.

    >>> from xsched.graph.spec import Task
    >>> plans = []
    >>> def keep_asked(graph, keys):  # (a planner: here, the asked keys' tasks only)
    ...     plans.append(sorted(keys))
    ...     return LayeredGraph({"kept": {k: graph[k] for k in keys}})
    >>> class Planned:
    ...     def __init__(self, key): self.key = key
    ...     def __xsched_layers__(self):
    ...         tasks = {self.key: Task(len, ("ab",)), "unused": Task(int, ())}
    ...         return keep_asked, LayeredGraph({self.key: tasks}), [self.key]
    >>> sorted(collections_graph([Planned("a"), Planned("b")])), plans
    (['a', 'b'], [['a', 'b']])
    """
    graph: dict = {}
    planned: dict = {}  # planner -> ([layered graphs], [keys])
    for coll in collections:
        layers = getattr(coll, "__xsched_layers__", None)
        if layers is None:
            graph.update(coll.__xsched_graph__())
            continue
        planner, layered, keys = layers()
        graphs, outputs = planned.setdefault(planner, ([], []))
        graphs.append(layered)
        outputs.extend(flatten_keys(keys))
    for planner, (graphs, outputs) in planned.items():
        graph.update(planner(LayeredGraph.merge(*graphs), outputs).flat())
    return graph
