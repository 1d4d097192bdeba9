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

from collections import Counter
from itertools import chain
from typing import Any, Iterable, Mapping, Sequence

from .order import gc_paused, task_dependencies
from .spec import Ref, Task, substitute

__all__ = ["cull", "fuse_linear", "optimize", "optimize_with_refs", "flatten_keys"]

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
    return _cull(graph, keys, {})


def _cull(graph: Mapping[str, Any], keys: Any, refs: dict[str, list[str]]) -> dict[str, Any]:
    """``cull``, filling ``refs`` with ``task_dependencies`` of every task kept."""
    wanted = flatten_keys(keys)
    missing = [k for k in wanted if k not in graph]
    if missing:
        raise _missing_keys_error(missing, graph)
    seen = set(wanted)
    stack = list(seen)
    with gc_paused():
        _walk(graph, seen, stack, refs)
    if len(seen) == len(graph):
        return dict(graph)
    return {k: v for k, v in graph.items() if k in seen}


def _walk(graph: Mapping[str, Any], seen: set[str], stack: list[str], refs: dict[str, list[str]]) -> None:
    while stack:
        key = stack.pop()
        found = refs[key] = task_dependencies(graph[key])
        for dep in found:
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
    equal annotations. Placeholders (non-Task values) are never inlined. Cycles are left
    to ``order`` to report (every graph is ordered after it is optimised).

    >>> from xsched.graph.optimize import fuse_linear
    >>> from xsched.graph.spec import Task, Ref
    >>> g = {"read": Task(list, ("abc",)), "n": Task(len, (Ref("read"),))}
    >>> fused = fuse_linear(g, keep=["n"])
    >>> list(fused), fused["n"].run({})
    (['n'], 3)
    """
    keep = set(flatten_keys(list(keep)))
    with gc_paused():
        refs = {k: task_dependencies(v) for k, v in graph.items()}
        fused = _fuse(graph, keep, max_chain, refs)
    return fused if fused is not graph else dict(graph)


def _fuse(graph: Mapping[str, Any], keep: set[str], max_chain: int, refs: dict[str, list[str]]) -> Any:
    """``fuse_linear`` given ``refs`` (``task_dependencies`` of every task), which it updates
    for the fused tasks and their keys; ``graph`` itself when nothing fuses.

    Whether ``b`` may absorb its dependency ``a`` depends on the tasks as given only, so the
    pairs are found in one pass, without ordering the graph; then each chain of pairs is
    walked from its first task up, cutting it every ``max_chain`` tasks. The same pairs are
    fused as a walk of the whole graph in topological order would fuse.
    """
    # (a key with one reference that is a key of the graph: its only dependency, and
    # nothing from outside the graph either)
    single = [(k, ds[0]) for k, ds in refs.items() if len(ds) == 1 and ds[0] in graph]
    if not single:
        return graph
    n_dependents = Counter(chain.from_iterable(refs.values()))
    absorbs: dict[str, str] = {}  # dependent -> the dependency it inlines
    for key, dep in single:
        task, source = graph[key], graph[dep]
        if (
            type(task) is Task
            and type(source) is Task
            and dep not in keep
            and n_dependents[dep] == 1
            and source.annotations == task.annotations
            and _ref_count(task, dep) == 1
        ):
            absorbs[key] = dep
    if not absorbs:
        return graph
    absorbed_by = {dep: key for key, dep in absorbs.items()}
    fused: dict[str, Any] = {}
    inlined: set[str] = set()
    for first in absorbed_by.keys() - absorbs.keys():  # chains start at a task that absorbs nothing
        length, dep = 1, first
        while dep in absorbed_by:
            key = absorbed_by[dep]
            if length < max_chain:
                fused[key] = substitute(graph[key], {dep: fused.get(dep, graph[dep])})
                refs[key] = refs[dep]
                inlined.add(dep)
                length += 1
            else:
                length = 1
            dep = key
    for dep in inlined:
        del refs[dep]
    return {k: fused.get(k, v) for k, v in graph.items() if k not in inlined}


def optimize(graph: Mapping[str, Any], keys: Any, fuse: bool = True) -> dict[str, Any]:
    """``cull`` the graph to ``keys``, then fuse linear chains (keeping ``keys``).

    >>> from xsched.graph.optimize import optimize
    >>> from xsched.graph.spec import Task, Ref
    >>> g = {"a": Task(list, ("ab",)), "b": Task(len, (Ref("a"),)), "x": Task(len, ("",))}
    >>> list(optimize(g, "b"))
    ['b']
    """
    return optimize_with_refs(graph, keys, fuse)[0]


def optimize_with_refs(graph: Mapping[str, Any], keys: Any,
                       fuse: bool = True) -> tuple[dict[str, Any], dict[str, list[str]]]:
    """``optimize``, and for every task of the result the keys it refers to: what
    ``task_dependencies`` gives (sorted, keys outside the graph included).

    Ordering the graph (``order(graph, refs)``) and listing each task's dependencies for
    the scheduler need them again: with them, a graph's arguments are walked once.

    >>> from xsched.graph.optimize import optimize_with_refs
    >>> from xsched.graph.spec import Task, Ref
    >>> g = {"a": Task(list, ("ab",)), "b": Task(len, (Ref("a"),)), "c": Task(max, (Ref("b"), Ref("x")))}
    >>> graph, refs = optimize_with_refs(g, "c")
    >>> list(graph), refs
    (['b', 'c'], {'c': ['b', 'x'], 'b': []})
    """
    refs: dict[str, list[str]] = {}
    culled = _cull(graph, keys, refs)
    if fuse:
        with gc_paused():
            culled = _fuse(culled, set(flatten_keys(keys)), MAX_CHAIN, refs)
    return culled, refs


def shared_frontier(graph: Mapping[str, Any], groups: Sequence[Sequence[str]]) -> list[str]:
    """The tasks that more than one of ``groups`` (lists of output keys computed apart,
    such as the batches a ``store`` writes) needs, nearest the outputs: none of their
    dependents is needed by two groups. Computed once and handed to each group as values,
    they spare recomputing every shared task per group (a mean every batch subtracts).

    >>> from xsched.graph.spec import Task, Ref
    >>> g = {"x0": Task(float, (1,)), "x1": Task(float, (2,)),
    ...      "m": Task(max, (Ref("x0"), Ref("x1"))),
    ...      "y0": Task(min, (Ref("x0"), Ref("m"))), "y1": Task(min, (Ref("x1"), Ref("m")))}
    >>> shared_frontier(g, [["y0"], ["y1"]])   # not x0 and x1: only m needs them twice
    ['m']
    """
    refs: dict[str, list[str]] = {}
    needed = _cull(graph, [k for group in groups for k in group], refs)
    SHARED = -1
    label: dict[str, int] = {}
    for i, group in enumerate(groups):
        for key in group:
            label[key] = i if label.get(key, i) == i else SHARED
    dependents: dict[str, list[str]] = {k: [] for k in needed}
    for key in needed:
        for dep in refs.get(key, ()):
            if dep in dependents:
                dependents[dep].append(key)
    left = {k: len(v) for k, v in dependents.items()}
    ready = [k for k, n in left.items() if n == 0]
    while ready:  # dependents before their dependencies: a key's label is its dependents'
        key = ready.pop()
        for dependent in dependents[key]:
            mine, theirs = label.get(key), label[dependent]
            label[key] = theirs if mine is None or mine == theirs else SHARED
        for dep in refs.get(key, ()):
            if dep in left:
                left[dep] -= 1
                if left[dep] == 0:
                    ready.append(dep)
    return sorted(k for k, lab in label.items()
                  if lab == SHARED and type(needed[k]) is Task
                  and not any(label[d] == SHARED for d in dependents[k]))
