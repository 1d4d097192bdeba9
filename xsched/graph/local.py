"""Run a graph in this process, one task at a time: for tests and when no cluster is running.

Tasks run in the order ``order()`` gives, the same order a worker uses, and each value is
dropped as soon as no remaining task needs it, so memory behaves like it will on a cluster.

>>> from operator import add
>>> from xsched.graph.spec import Task, Ref
>>> g = {"a": Task(int, ("1",)), "b": Task(add, (Ref("a"), 10))}
>>> get(g, ["a", ["b"]])
[1, [11]]
"""

from __future__ import annotations

from typing import Any, Mapping

from .optimize import cull, flatten_keys
from .optimize import optimize as optimize_graph
from .order import gc_paused, order, task_dependencies
from .spec import Ref, Task

__all__ = ["get"]


def get(graph: Mapping[str, Any], keys: Any, optimize: bool = True) -> Any:
    """Compute ``keys`` (a key, or nested lists of keys) from ``graph``; results nest alike.

    ``optimize=True`` fuses linear chains first (the results are the same). Non-Task values
    in the graph are taken as already computed.

    >>> from xsched.graph.local import get
    >>> from xsched.graph.spec import Task, Ref
    >>> get({"x": 2, "y": Task(pow, (Ref("x"), 10))}, "y")
    1024
    """
    wanted = set(flatten_keys(keys))
    graph = optimize_graph(graph, keys) if optimize else cull(graph, keys)
    with gc_paused():  # only while planning; tasks run with the collector on
        deps, waiting_on = _plan(graph)
        priorities = order(graph)
        run_order = sorted(graph, key=priorities.__getitem__)
    data: dict[str, Any] = {}
    for key in run_order:
        value = graph[key]
        typ = type(value)
        if typ is Task:
            try:
                data[key] = value.run(data)
            except Exception as exc:
                if hasattr(exc, "add_note"):
                    exc.add_note(f"(raised by task {key!r}, computed locally)")
                raise
        elif typ is Ref:
            data[key] = data[value.key]
        else:
            data[key] = value
        for dep in deps[key]:
            waiting_on[dep] -= 1
            if waiting_on[dep] == 0 and dep not in wanted:
                del data[dep]  # free intermediates as soon as nothing needs them
    return _pack(keys, data)


def _plan(graph: Mapping[str, Any]) -> tuple[dict[str, list[str]], dict[str, int]]:
    """Each task's dependencies, and how many tasks wait on each key."""
    deps: dict[str, list[str]] = {}
    waiting_on: dict[str, int] = dict.fromkeys(graph, 0)
    for key, value in graph.items():
        found = task_dependencies(value)
        for dep in found:
            if dep not in graph:
                raise KeyError(
                    f"task {key!r} needs key {dep!r}, which is not in the graph; "
                    f"include the task that computes it, or compute on a Client if it "
                    f"refers to data held by a cluster"
                )
            waiting_on[dep] += 1
        deps[key] = found
    return deps, waiting_on


def _pack(keys: Any, data: Mapping[str, Any]) -> Any:
    if isinstance(keys, str):
        return data[keys]
    return [_pack(k, data) for k in keys]
