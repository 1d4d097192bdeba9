"""Graph optimisations: drop what is not needed (``cull``), merge linear chains (``fuse_linear``).

Fusion turns ``read -> sum -> analyse`` into one task per chunk, so the scheduler has fewer
tasks to track and no intermediate ever leaves the worker. It never merges tasks whose
annotations differ: a chain with an annotated middle (``resources={"GPU": 1}``) is split at
the annotation boundaries, and every fused task carries its (equal) annotations. That is
the defect we must not have (seed 004): users never need to switch fusion off to keep
their resources.

>>> from xsched.graph.spec import Task, Ref
>>> g = {"a": Task(int, ("1",)), "b": Task(str, (Ref("a"),)), "c": Task(len, (Ref("b"),))}
>>> fused = optimize(g, ["c"])
>>> list(fused), fused["c"].run({})
(['c'], 1)
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping

from .order import dependency_map, gc_paused, task_dependencies, toposort
from .spec import Ref, Task, substitute

__all__ = ["cull", "fuse_linear", "optimize", "flatten_keys"]

#: Longest chain fused into one task. Deeper nesting would hit Python's recursion limit
#: when the task runs or is pickled; 64 calls per task already removes the overhead.
MAX_CHAIN = 64


def flatten_keys(keys: Any) -> list[str]:
    """The keys in a key, or in nested lists/tuples of keys, in order.

    >>> from xsched.graph.optimize import flatten_keys
    >>> flatten_keys([["x-0", "x-1"], ["x-2"]])
    ['x-0', 'x-1', 'x-2']
    """
    if isinstance(keys, str):
        return [keys]
    out: list[str] = []
    stack = [iter(keys)]
    while stack:
        for item in stack[-1]:
            if isinstance(item, str):
                out.append(item)
            elif isinstance(item, (list, tuple)):
                stack.append(iter(item))
                break
            else:
                raise TypeError(
                    f"keys must be strings or nested lists of strings, got {item!r} "
                    f"of type {type(item).__name__}"
                )
        else:
            stack.pop()
    return out


def _missing_keys_error(missing: list[str], graph: Mapping[str, Any]) -> KeyError:
    return KeyError(
        f"{len(missing)} requested key(s) are not in the graph of {len(graph)} tasks, "
        f"e.g. {missing[:3]}; compute the collection that defines them"
    )


def cull(graph: Mapping[str, Any], keys: Any) -> dict[str, Any]:
    """The part of ``graph`` needed to compute ``keys`` (a key or nested lists of keys).

    >>> from xsched.graph.optimize import cull
    >>> from xsched.graph.spec import Task, Ref
    >>> g = {"a": 1, "b": Task(str, (Ref("a"),)), "unused": Task(len, ("xyz",))}
    >>> sorted(cull(g, ["b"]))
    ['a', 'b']
    """
    wanted = flatten_keys(keys)
    missing = [k for k in wanted if k not in graph]
    if missing:
        raise _missing_keys_error(missing, graph)
    seen = set(wanted)
    stack = list(seen)
    with gc_paused():
        _walk(graph, seen, stack)
    if len(seen) == len(graph):
        return dict(graph)
    return {k: v for k, v in graph.items() if k in seen}


def _walk(graph: Mapping[str, Any], seen: set[str], stack: list[str]) -> None:
    while stack:
        for dep in task_dependencies(graph[stack.pop()]):
            if dep not in seen and dep in graph:
                seen.add(dep)
                stack.append(dep)


def _ref_count(task: Task, key: str) -> int:
    """How many times ``task`` refers to ``key`` (inlining twice would compute it twice)."""
    count = 0
    stack: list[Any] = [task]
    while stack:
        obj = stack.pop()
        typ = type(obj)
        if typ is Ref:
            count += obj.key == key
        elif typ is Task:
            stack.extend(obj.args)
            stack.extend(obj.kwargs.values())
        elif typ in (list, tuple, set):
            stack.extend(obj)
        elif typ is dict:
            stack.extend(obj.values())
    return count


def fuse_linear(
    graph: Mapping[str, Any], keep: Iterable[str] = (), *, max_chain: int = MAX_CHAIN
) -> dict[str, Any]:
    """Inline each task of a linear chain into its only dependent; the result keeps the
    dependent's key.

    A task ``a`` is inlined into ``b`` when ``b`` is ``a``'s only dependent, ``a`` is
    ``b``'s only dependency, ``b`` uses it once, ``a`` is not in ``keep`` and both carry
    equal annotations. Placeholders (non-Task values) are never inlined.

    >>> from xsched.graph.optimize import fuse_linear
    >>> from xsched.graph.spec import Task, Ref
    >>> g = {"read": Task(list, ("abc",)), "n": Task(len, (Ref("read"),))}
    >>> fused = fuse_linear(g, keep=["n"])
    >>> list(fused), fused["n"].run({})
    (['n'], 3)
    """
    keep = set(flatten_keys(list(keep)))
    with gc_paused():
        deps = dependency_map(graph)
        n_dependents: dict[str, int] = dict.fromkeys(graph, 0)
        for ds in deps.values():
            for d in ds:
                n_dependents[d] += 1
        fused: dict[str, Any] = {}
        chain: dict[str, int] = {}
        inlined: set[str] = set()
        for key in toposort(graph, deps):
            task = graph[key]
            if type(task) is not Task:
                fused[key] = task
                continue
            length = 1
            ds = deps[key]
            if len(ds) == 1:
                dep = ds[0]
                source = graph[dep]
                if (
                    type(source) is Task
                    and dep not in keep
                    and n_dependents[dep] == 1
                    and chain[dep] < max_chain
                    and source.annotations == task.annotations
                    and len(task_dependencies(task)) == 1  # no keys from outside the graph either
                    and _ref_count(task, dep) == 1
                ):
                    task = substitute(task, {dep: fused[dep]})
                    inlined.add(dep)
                    length = chain[dep] + 1
            fused[key] = task
            chain[key] = length
        return {k: fused[k] for k in graph if k not in inlined}


def optimize(graph: Mapping[str, Any], keys: Any, fuse: bool = True) -> dict[str, Any]:
    """``cull`` the graph to ``keys``, then fuse linear chains (keeping ``keys``).

    >>> from xsched.graph.optimize import optimize
    >>> from xsched.graph.spec import Task, Ref
    >>> g = {"a": Task(list, ("ab",)), "b": Task(len, (Ref("a"),)), "x": Task(len, ("",))}
    >>> list(optimize(g, "b"))
    ['b']
    """
    culled = cull(graph, keys)
    return fuse_linear(culled, keep=flatten_keys(keys)) if fuse else culled
