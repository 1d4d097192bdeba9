"""A graph of delayed calls walked once into columns: keys, values and dependency indices.

Submitting a million-task graph through a dict of ``Task`` objects made a Task, its
argument tuple and a ``Ref`` per argument for every call, then walked those again to cull,
to find dependencies, to index them for ``order`` and to pickle them. Here the calls a
``Delayed`` keeps as given (``delayed(f)(x, y)`` on flat arguments) are read directly: one
walk from the outputs gives every task an index and its dependencies as indices; the client
writes each call's spec straight from its arguments (``SpecWriter.dumps_flat``) and sends
the columns as they are, and the scheduler orders them (``order_indexed`` takes indices:
``protocol/update_graph.py``). Nothing unreachable is walked, so there is nothing to cull.

Where the dict-based path would do more than this walk does -- fuse a linear chain, or cull
tasks of a layer that the outputs do not need -- the columns are not ``direct`` and the
caller takes that path from their ``graph()``: the result is always what
``optimize_with_refs`` and ``order`` would give.

>>> from xsched.graph.delayed import delayed
>>> def add(a, b):
...     return a + b
>>> x, y = delayed(add)(1, 2), delayed(add)(3, 4)
>>> cols = walk([delayed(add)(x, y)], fuse=True)
>>> len(cols.keys), sorted(len(d) for d in cols.deps)
(3, [0, 0, 2])
"""

from __future__ import annotations

from typing import Any

from .delayed import Delayed, _call_args, _call_task
from .order import gc_paused, task_dependencies
from .spec import Task

__all__ = ["GraphColumns", "walk"]


class GraphColumns:
    """Task ``i`` of a walked graph: its key ``keys[i]``; ``values[i]``, the ``Delayed``
    whose call it is when ``calls[i]`` (its function and flat arguments read from it),
    else the graph value (a Task, a Future, a placeholder) of a Delayed's layer;
    ``deps[i]``, the indices of the tasks it depends on (no duplicates); ``refs[i]``, the
    keys it refers to as ``task_dependencies`` lists them (keys outside the graph too), or
    ``refs`` None when every task is a kept call (their ``deps`` say it all).

    >>> from xsched.graph.delayed import delayed
    >>> total = delayed(sum)([delayed(abs)(-1), 2])  # (a list argument: a layer)
    >>> cols = walk([total])
    >>> cols, [cols.keys[j].split("-")[0] for j in cols.deps[0]]
    (<GraphColumns: 2 tasks, 1 kept calls>, ['abs'])
    """

    __slots__ = ("keys", "values", "calls", "deps", "refs", "roots", "direct")

    def __init__(self, keys: list, values: list, calls: bytearray, deps: list, refs: list, roots: set,
                 direct: bool = True) -> None:
        self.keys, self.values, self.calls, self.deps, self.refs = keys, values, calls, deps, refs
        self.roots = roots  # the indices of the roots' keys
        self.direct = direct  # (see walk)

    def __len__(self) -> int:
        return len(self.keys)

    def __repr__(self) -> str:
        return f"<GraphColumns: {len(self.keys):,} tasks, {sum(self.calls):,} kept calls>"

    def task(self, i: int) -> Any:
        """The graph value of task ``i`` (a kept call made into its ``Task``).

        >>> from xsched.graph.delayed import delayed
        >>> walk([delayed(max)(1, 2)]).task(0).run({})
        2
        """
        value = self.values[i]
        return _call_task(value) if self.calls[i] else value

    def graph(self) -> dict:
        """The graph as the dict ``Delayed.__xsched_graph__`` gives (what the optimiser takes).

        >>> from xsched.graph.delayed import delayed
        >>> g = walk([delayed(abs)(-3)]).graph()
        >>> [task.run({}) for task in g.values()]
        [3]
        """
        with gc_paused():  # (a Task, a tuple and Refs per call, no cycles)
            return {key: self.task(i) for i, key in enumerate(self.keys)}


def walk(roots: list, fuse: bool = True) -> GraphColumns | None:
    """The graph of ``roots`` (plain ``Delayed`` objects) as columns, None when a root is
    another kind of collection. ``direct`` says whether the columns are the graph to send;
    else the dict-based optimisation would change it (``fuse`` and a linear chain to fuse;
    layer tasks the roots do not need): ``graph()`` is then the dict it takes.

    >>> from xsched.graph.delayed import delayed
    >>> cols = walk([delayed(max)(delayed(min)(3, 4), 1)], fuse=False)
    >>> cols, cols.deps, cols.direct
    (<GraphColumns: 2 tasks, 2 kept calls>, [[1], []], True)
    >>> walk([delayed(max)(delayed(min)(3, 4), 1)], fuse=True).direct  # (min -> max: fused)
    False
    """
    if any(type(r) is not Delayed for r in roots):
        return None
    with gc_paused():  # (lists and dicts only, no cycles)
        cols = _walk_calls(roots)
        if cols is None:
            cols = _walk(roots)
        if cols.direct and fuse and _has_chain(cols.deps, cols.roots):
            cols.direct = False
        return cols


def _walk_calls(roots: list) -> GraphColumns | None:
    """``_walk`` in one pass for a graph of calls kept as given only (None at the first
    layer): each Delayed gets its index when first seen, so its dependents' indices are
    known as they are walked. Their keys are unique: a kept call's key is random."""
    keys: list[str] = []
    values: list[Any] = []
    deps: list[list[int]] = []
    at: dict[int, int] = {}  # id(Delayed) -> index
    empty: list = []
    stack: list = []
    for r in roots:
        if id(r) not in at:
            at[id(r)] = len(keys)
            keys.append(r._key)
            values.append(r)
            deps.append(empty)
            stack.append(r)
    pop, push = stack.pop, stack.append
    while stack:
        node = pop()
        args = node._args
        if args is None:
            return None
        if type(args) is int:  # (_call_args, inline)
            args = (node._a, node._b) if args == 2 else (node._a,)
        ds: list[int] = []
        for a in args:
            if type(a) is Delayed:
                j = at.get(id(a))
                if j is None:
                    j = at[id(a)] = len(keys)
                    keys.append(a._key)
                    values.append(a)
                    deps.append(empty)
                    push(a)
                ds.append(j)
        if ds:
            if len(ds) > 1 and (ds[0] == ds[1] if len(ds) == 2 else len(set(ds)) < len(ds)):
                ds = list(dict.fromkeys(ds))  # (the same value twice: one dependency)
            deps[at[id(node)]] = ds
    return GraphColumns(keys, values, bytearray(b"\x01") * len(keys), deps, None, {at[id(r)] for r in roots})


def _walk(roots: list) -> GraphColumns:
    keys: list[str] = []
    values: list[Any] = []
    calls = bytearray()
    index: dict[str, int] = {}
    seen: set[int] = set()
    layered = False

    def put(key: str, value: Any, call: int) -> None:  # (a key given again: the later value wins)
        i = index.get(key)
        if i is None:
            index[key] = len(keys)
            keys.append(key)
            values.append(value)
            calls.append(call)
        else:
            values[i], calls[i] = value, call

    stack = roots[::-1]  # (the first root's graph walked first: as with graph.update per root,
    pop, push = stack.pop, stack.append  # a later root's value for a key wins)
    while stack:  # pass 1: every task an index (the old walk's order: a later layer value wins)
        node = pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if node._args is not None:
            put(node._key, node, 1)
            for a in _call_args(node):
                if type(a) is Delayed:
                    push(a)
            continue
        layered = True
        layer = node._layer
        for key, value in ((node._key, layer),) if type(layer) is Task else layer.items():
            put(key, value, 0)
        stack.extend(node._deps)

    deps: list[list[int]] = []
    refs: list[list[str]] = []
    empty: list = []
    get = index.__getitem__
    for i, value in enumerate(values):  # pass 2: dependencies as indices
        if calls[i]:
            found = [a._key for a in _call_args(value) if type(a) is Delayed]
            if len(found) > 1:
                found = sorted(set(found))
            refs.append(found)
            deps.append(list(map(get, found)) if found else empty)
        else:
            found = task_dependencies(value)
            refs.append(found)
            deps.append([index[k] for k in found if k in index] if found else empty)
    return GraphColumns(keys, values, calls, deps, refs, {index[r._key] for r in roots},
                        not layered or _all_reached(roots, index, deps))


def _all_reached(roots: list, index: dict, deps: list) -> bool:
    """Whether every task is needed by a root (layers may hold tasks that are not)."""
    reached = bytearray(len(deps))
    stack = [index[r._key] for r in roots]
    while stack:
        i = stack.pop()
        if not reached[i]:
            reached[i] = 1
            stack.extend(deps[i])
    return all(reached)


def _has_chain(deps: list, outputs: set) -> bool:
    """Whether ``fuse_linear`` could merge a pair: a task with one dependency that has no
    other dependent and is not an output (it would check annotations and uses too)."""
    dependents = [0] * len(deps)
    for ds in deps:
        for j in ds:
            dependents[j] += 1
    for ds in deps:
        if len(ds) == 1:
            j = ds[0]
            if dependents[j] == 1 and j not in outputs:
                return True
    return False
