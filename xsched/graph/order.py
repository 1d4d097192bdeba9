"""The order in which to run a graph: finish what is started before reading new inputs.

This ordering is what keeps a worker's memory small (seed 000: read -> sum -> analyse chunk
by chunk; seed 003: never two 500 MB partitions at once). The scheduler turns it into task
priorities: a smaller number runs first.

How it works, in three linear passes plus one depth-first walk:

1. ``deps``/``dependents`` and a topological order (Kahn's algorithm; a cycle is an error).
2. For every task, ``need``: how many values must be held at once to compute it, estimated
   bottom-up the Sethi-Ullman way (children taken largest need first).
   And ``rank``: the position of its first input among all inputs sorted by key, so work
   follows the inputs' order (chunk 0, chunk 1, ...), which keeps reads sequential.
3. Walk depth first from the outputs (tasks nobody depends on, in rank then key order). A
   task's missing dependencies are visited largest ``need`` first, so small results are held
   for the shortest time. Whenever a finished task makes a dependent runnable, that
   dependent runs next: it releases its inputs soonest and never reads a new input.

Ties are broken by key in natural order (``x-2`` before ``x-10``), so the result is
deterministic. Everything is iterative: no recursion limit, O(n log n) overall.

>>> from operator import add
>>> from xsched.graph.spec import Task, Ref
>>> g = {"a": Task(int, ("1",)), "b": Task(add, (Ref("a"), 1)), "c": Task(int, ("2",)),
...      "d": Task(add, (Ref("b"), Ref("c")))}
>>> sorted(order(g), key=order(g).get)
['a', 'b', 'c', 'd']
"""

from __future__ import annotations

import gc
import re
from contextlib import contextmanager
from typing import Any, Iterator, Mapping

from .spec import Ref, Task, dependencies

__all__ = ["order", "order_indexed", "check_acyclic"]

_DIGITS = re.compile(r"(\d+)")


def natural_key(key: str) -> tuple:
    """Sort key comparing digit runs as numbers: ``x-2`` sorts before ``x-10``.

    >>> from xsched.graph.order import natural_key
    >>> sorted(["x-10", "x-2", "x-1"], key=natural_key)
    ['x-1', 'x-2', 'x-10']
    """
    parts: list[Any] = _DIGITS.split(key)
    parts[1::2] = map(int, parts[1::2])
    return (parts, key)


def natural_order(keys: list[str], plain: list[int] | None = None) -> list[int]:
    """The positions of ``keys`` sorted by ``natural_key``; keys must be distinct.

    The same as ``sorted(range(len(keys)), key=lambda i: natural_key(keys[i]))``, for less:
    a prefix all keys share (cut before any digits it ends with, so that no number spans
    its end) decides nothing, so only what follows it is split into parts; and the keys are
    put in plain order first, which natural order mostly keeps, so that the sort by
    natural key finds long runs already in order (no two keys tie: the result is the same
    whatever the order it starts from). ``plain``, when given, is that plain order already
    (the positions of ``keys`` sorted).

    >>> from xsched.graph.order import natural_order
    >>> natural_order(["x-10", "x-2", "y-1", "x-1"])
    [3, 1, 0, 2]
    """
    if len(keys) < 2:
        return list(range(len(keys)))
    if plain is None:
        plain = sorted(range(len(keys)), key=keys.__getitem__)
    first, last = keys[plain[0]], keys[plain[-1]]  # (what these two share, all keys share)
    cut, end = 0, min(len(first), len(last))
    while cut < end and first[cut] == last[cut]:
        cut += 1
    while cut and first[cut - 1].isdecimal():  # (what ``\d`` matches: Unicode category Nd)
        cut -= 1
    width = len(first)
    if all(len(k) == width and (s := k[cut:]).isascii() and s.isdecimal() for k in keys):
        return plain  # equal-width runs of 0-9 after the prefix: natural order is plain order
    nat = [natural_key(keys[i][cut:]) for i in plain]
    return [plain[j] for j in sorted(range(len(plain)), key=nat.__getitem__)]


def task_dependencies(value: Any) -> list[str]:
    """Keys a graph value refers to, without duplicates: fast for flat argument tuples.

    >>> from xsched.graph.order import task_dependencies
    >>> from xsched.graph.spec import Task, Ref
    >>> task_dependencies(Task(max, (Ref("a"), Ref("a"), 1)))
    ['a']
    """
    typ = type(value)
    if typ is Ref:
        return [value.key]
    if typ is not Task:
        return []
    found: list[str] = []
    for arg in value.args:
        atyp = type(arg)
        if atyp is Ref:
            found.append(arg.key)
        elif atyp in _NESTED:
            break
    else:
        if not value.kwargs:
            return found if len(found) < 2 else sorted(set(found))
    return sorted(dependencies(value))


_NESTED = frozenset({Task, list, tuple, dict, set})


def dependency_map(graph: Mapping[str, Any]) -> dict[str, list[str]]:
    """For each key, the keys of ``graph`` it depends on (sorted, external keys ignored).

    Non-Task values (already-computed placeholders) have no dependencies; a bare ``Ref``
    value is an alias and depends on the key it names.

    >>> from xsched.graph.order import dependency_map
    >>> from xsched.graph.spec import Task, Ref
    >>> dependency_map({"a": 1, "b": Task(len, (Ref("a"), Ref("elsewhere")))})
    {'a': [], 'b': ['a']}
    """
    out: dict[str, list[str]] = {}
    for key, value in graph.items():
        ds = task_dependencies(value)
        if ds:
            for d in ds:
                if d not in graph:
                    ds = [d for d in ds if d in graph]
                    break
        out[key] = ds
    return out


def _toposort(deps: Mapping[str, list[str]]) -> tuple[list[str], dict[str, list[str]]]:
    """Topological order (dependencies first) and the dependents map."""
    dependents: dict[str, list[str]] = {k: [] for k in deps}
    waiting: dict[str, int] = {}
    out = []
    for key, ds in deps.items():
        waiting[key] = len(ds)
        if ds:
            for d in ds:
                dependents[d].append(key)
        else:
            out.append(key)
    i = 0
    while i < len(out):
        for dep in dependents[out[i]]:
            waiting[dep] -= 1
            if waiting[dep] == 0:
                out.append(dep)
        i += 1
    if len(out) < len(deps):
        stuck = sorted(k for k, n in waiting.items() if n > 0)
        raise ValueError(
            f"the graph has a cycle: {len(stuck)} tasks wait on each other, e.g. "
            f"{stuck[:5]}; a task must not depend (directly or not) on its own key"
        )
    return out, dependents


def toposort(graph: Mapping[str, Any], deps: Mapping[str, list[str]] | None = None) -> list[str]:
    """Keys with every dependency before its dependents; raises ``ValueError`` on a cycle.

    >>> from xsched.graph.order import toposort
    >>> from xsched.graph.spec import Task, Ref
    >>> toposort({"b": Task(len, (Ref("a"),)), "a": "xyz"})
    ['a', 'b']
    """
    return _toposort(dependency_map(graph) if deps is None else deps)[0]


def order(graph: Mapping[str, Task | Any], refs: Mapping[str, list[str]] | None = None) -> dict[str, int]:
    """Run order for every key of ``graph``: 0 runs first; use it as task priority.

    Depth first and input-frugal: a chunk's read, sum and analysis run before the next
    chunk is read; a reduction combines pairs before reading more leaves. ``refs``, when
    given, holds ``task_dependencies`` of the tasks (as ``optimize_with_refs`` returns
    them), so their arguments are not walked again; keys it lacks are walked.

    >>> from xsched.graph.order import order
    >>> from xsched.graph.spec import Task, Ref
    >>> g = {f"read-{i}": Task(list, ((i,),)) for i in range(2)}
    >>> g.update({f"len-{i}": Task(len, (Ref(f"read-{i}"),)) for i in range(2)})
    >>> g["sum"] = Task(sum, ([Ref("len-0"), Ref("len-1")],))
    >>> [k for k, _ in sorted(order(g).items(), key=lambda kv: kv[1])]
    ['read-0', 'len-0', 'read-1', 'len-1', 'sum']
    """
    with gc_paused():
        return _order(graph, refs)


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector: graph passes allocate many small lists, and
    collections triggered by them (scanning every live Task) double the run time."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _order(graph: Mapping[str, Any], refs: Mapping[str, list[str]] | None = None) -> dict[str, int]:
    keys = list(graph)
    index = {k: i for i, k in enumerate(keys)}
    deps = _index_dependencies(graph, index) if refs is None else _index_refs(graph, index, refs)
    return dict(zip(keys, _order_indexed(keys, deps)))


def order_indexed(keys: list[str], deps: list[list[int]]) -> list[int]:
    """``order`` of a graph given as columns: task ``i`` has key ``keys[i]`` and depends on
    the tasks ``deps[i]`` (indices, no duplicates); the run order of each task, by index.

    A graph walked into columns (``graph.columns``) is ordered without a dict of its keys.

    >>> from xsched.graph.order import order_indexed
    >>> order_indexed(["sum", "x-1", "x-0"], [[1, 2], [], []])
    [2, 1, 0]
    """
    with gc_paused():
        return _order_indexed(keys, deps)


def check_acyclic(keys: list[str], deps: list[list[int]]) -> None:
    """Raise ``ValueError`` naming the keys of a cycle in a graph given as columns (as
    ``order_indexed`` takes it), before it is sent to be ordered elsewhere.

    >>> from xsched.graph.order import check_acyclic
    >>> check_acyclic(["a", "b"], [[1], [0]])
    Traceback (most recent call last):
    ...
    ValueError: the graph has a cycle: 2 tasks wait on each other, e.g. ['a', 'b']; a task must not depend (directly or not) on its own key
    """
    with gc_paused():
        _topological(keys, deps)


def _topological(keys: list[str], deps: list[list[int]]) -> tuple[list[int], list[int], list[list[int]]]:
    """Pass 1 of ``order_indexed``: a topological order, the roots, the dependents."""
    n = len(keys)
    dependents: list[list[int]] = [[] for _ in range(n)]
    waiting = [len(ds) for ds in deps]
    roots = [i for i in range(n) if not waiting[i]]
    for i, ds in enumerate(deps):
        for d in ds:
            dependents[d].append(i)
    topo = list(roots)
    for i in topo:  # grows while we walk it
        for j in dependents[i]:
            waiting[j] -= 1
            if waiting[j] == 0:
                topo.append(j)
    if len(topo) < n:
        stuck = sorted(keys[i] for i in range(n) if waiting[i] > 0)
        raise ValueError(
            f"the graph has a cycle: {len(stuck)} tasks wait on each other, e.g. "
            f"{stuck[:5]}; a task must not depend (directly or not) on its own key"
        )
    return topo, roots, dependents


def _order_indexed(keys: list[str], deps: list[list[int]]) -> list[int]:
    n = len(keys)
    # Pass 1: dependents and a topological order (Kahn); a cycle is an error.
    topo, roots, dependents = _topological(keys, deps)

    # Each task's place in plain key order: an integer, cheap to sort by (below, and as
    # the last tie-breaker of both sorts after pass 2).
    by_key = [0] * n
    for p, i in enumerate(sorted(range(n), key=keys.__getitem__)):
        by_key[i] = p

    # Pass 2: input rank (follow the inputs' natural key order) and memory need.
    # (the roots in plain key order: by_key, an int sort, instead of their keys sorted again)
    plain = sorted(range(len(roots)), key=[by_key[i] for i in roots].__getitem__)
    roots = [roots[j] for j in natural_order([keys[i] for i in roots], plain)]
    rank = [0] * n
    for r, i in enumerate(roots):
        rank[i] = r
    need = [1] * n
    for i in topo[len(roots):]:
        ds = deps[i]
        if len(ds) == 1:
            d = ds[0]
            rank[i] = rank[d]
            need[i] = need[d] if need[d] > 2 else 2
        elif len(ds) == 2:  # (the general case below, for the pairs of a tree reduction)
            a, b = ds
            ra, rb = rank[a], rank[b]
            rank[i] = ra if ra < rb else rb
            na, nb = need[a], need[b]
            if na < nb:
                na, nb = nb, na
            need[i] = max(na, nb + 1, 3)
        else:
            rank[i] = min([rank[d] for d in ds])
            needs = sorted([need[d] for d in ds], reverse=True)
            need[i] = max(max([m + j for j, m in enumerate(needs)]), len(ds) + 1)
    # One integer per task for each sort: (rank, key), and (-need, rank, key).
    pos = [0] * n
    for p, i in enumerate(sorted(range(n), key=[r * n + k for r, k in zip(rank, by_key)].__getitem__)):
        pos[i] = p
    visit = [pos[i] - need[i] * n for i in range(n)]

    # Pass 3: depth first from the outputs, running newly runnable dependents at once.
    stack = [i for i in range(n) if not dependents[i]]
    stack.sort(key=pos.__getitem__, reverse=True)
    remaining = [len(ds) for ds in deps]
    result = [-1] * n
    count = 0
    pop, push = stack.pop, stack.append
    while stack:
        i = pop()
        if result[i] >= 0:
            continue
        if remaining[i] == 0:
            result[i] = count
            count += 1
            top = len(stack)
            for j in dependents[i]:
                remaining[j] -= 1
                if remaining[j] == 0:
                    push(j)
            if len(stack) - top > 1:
                stack[top:] = sorted(stack[top:], key=pos.__getitem__, reverse=True)
        else:
            push(i)
            top = len(stack)
            for d in deps[i]:
                if result[d] < 0:
                    push(d)
            pushed = len(stack) - top
            if pushed == 2:  # (a pair, as in a tree reduction: the sort below, without its calls)
                a, b = stack[top], stack[top + 1]
                if visit[a] < visit[b]:
                    stack[top], stack[top + 1] = b, a
            elif pushed > 1:
                stack[top:] = sorted(stack[top:], key=visit.__getitem__, reverse=True)
    return result


def _index_dependencies(graph: Mapping[str, Any], index: Mapping[str, int]) -> list[list[int]]:
    """Dependencies of every task as indices into ``index`` (external keys ignored)."""
    out: list[list[int]] = []
    empty: list[int] = []
    get = index.get
    for value in graph.values():
        typ = type(value)
        if typ is Task:
            ds = []
            for arg in value.args:
                atyp = type(arg)
                if atyp is Ref:
                    j = get(arg.key)
                    if j is not None:
                        ds.append(j)
                elif atyp in _NESTED:
                    break
            else:
                if not value.kwargs:
                    out.append(ds if len(ds) < 2 else list(set(ds)))
                    continue
            out.append([index[d] for d in dependencies(value) if d in index])
        elif typ is Ref:
            j = get(value.key)
            out.append(empty if j is None else [j])
        else:
            out.append(empty)
    return out


def _index_refs(graph: Mapping[str, Any], index: Mapping[str, int],
                refs: Mapping[str, list[str]]) -> list[list[int]]:
    """``_index_dependencies`` from the keys each task refers to (``task_dependencies``)."""
    out: list[list[int]] = []
    empty: list[int] = []
    get = index.get
    for key, value in graph.items():
        ds = refs.get(key)
        if ds is None:
            ds = task_dependencies(value)
        if not ds:
            out.append(empty)
        elif len(ds) == 1:
            j = get(ds[0])
            out.append(empty if j is None else [j])
        else:
            found = list(map(get, ds))
            out.append(found if None not in found else [j for j in found if j is not None])
    return out
