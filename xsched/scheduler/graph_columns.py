"""The NewTasks of an update-graph that carries its graph as columns.

A client sends the calls of a delayed graph as columns (``keys``, ``specs``, ``deps`` as
indices into ``keys``, one ``priority`` prefix) and the tasks that need more (annotations,
computed values, futures) as task entries whose priority lacks its last number. The
scheduler orders the whole graph here (``order_indexed``: the same order the client would
give it) and appends each task's place to its priority. Ordering on the scheduler frees the
client -- a notebook -- seconds sooner for a million tasks, and the scheduler's own process
does it while the client goes on.

>>> cols = {"keys": ["a", "b", "c"], "specs": [b"A", b"B", None], "deps": [[], [0, 2], []],
...         "priority": [0, 1]}
>>> [(t.key, t.dependencies, t.priority) for t in column_tasks(cols, [{"key": "c", "priority": [0, 1]}])]
[('a', [], (0, 1, 0)), ('b', ['a', 'c'], (0, 1, 2)), ('c', [], (0, 1, 1))]
"""

from __future__ import annotations

from ..graph.order import order_indexed
from .state.events import NewTask

__all__ = ["column_tasks", "entry_task"]


def column_tasks(columns: dict, entries: list) -> list[NewTask]:
    """The NewTasks of ``columns`` (fields as ``schemas.COLUMNS`` checks them) and of the
    task ``entries`` of the same update-graph; ValueError names what does not fit.

    Each column with a spec is a task; one with a null spec only names a key for its
    dependents (an entry's task -- one at most -- or one the scheduler has). Entries and
    the specs column are consumed (entries set to None once their NewTask exists: a large
    graph's decoded maps go early).

    >>> cols = {"keys": ["x-1", "sum-1"], "specs": [b"X", None], "deps": [[], [0]], "priority": [0, 3]}
    >>> [(t.key, t.priority, t.retries) for t in column_tasks(cols, [{"key": "sum-1", "retries": 2}])]
    [('x-1', (0, 3, 0), 0), ('sum-1', (1,), 2)]
    """
    keys, specs, deps = columns["keys"], columns["specs"], columns["deps"]
    n = len(keys)
    if len(specs) != n or len(deps) != n:
        raise ValueError(f"update-graph: the columns differ in length (keys {n}, specs {len(specs)}, "
                         f"deps {len(deps)}); nothing of this graph was added")
    if n and any(deps) and max(map(max, filter(None, deps))) >= n:
        raise ValueError(f"update-graph: a dependency index is past the {n} keys of the columns; "
                         "nothing of this graph was added")
    index = {k: i for i, k in enumerate(keys)}
    if len(index) < n:
        raise ValueError("update-graph: a key appears twice in the columns; nothing of this graph was added")
    deps = [ds if len(ds) < 2 or len(set(ds)) == len(ds) else list(dict.fromkeys(ds)) for ds in deps]
    order = order_indexed(keys, deps)  # (a cycle: ValueError naming its keys)
    prefix = tuple(columns.get("priority") or ())
    tasks = []
    append = tasks.append
    for i, spec in enumerate(specs):
        if spec is not None:
            append(NewTask(keys[i], spec, [keys[j] for j in deps[i]], (*prefix, order[i])))
    for i, t in enumerate(entries):
        entries[i] = None
        at = index.get(t["key"])
        if at is None or specs[at] is not None:
            where = ("is not among the keys of its columns" if at is None else
                     "is given twice (a spec in the columns, or another entry)")
            raise ValueError(f"update-graph: task {t['key']!r:.100} {where}; nothing of this graph was added")
        specs[at] = b""  # (taken: a second entry for the key is refused as above)
        append(entry_task(t, (*t.get("priority", ()), order[at])))
    return tasks


def entry_task(t: dict, priority: tuple | None = None) -> NewTask:
    """A task entry of an update-graph (fields as ``schemas.TASK`` checks them) as a NewTask,
    with ``priority`` or else the entry's own.

    >>> entry_task({"key": "x", "priority": [1, 2], "retries": 3})
    NewTask(key='x', run_spec=None, dependencies=[], priority=(1, 2), resources=None, workers=None, allow_other_workers=False, retries=3, limits=None)
    """
    return NewTask(t["key"], t.get("run_spec"), t.get("deps") or [],
                   tuple(t.get("priority", (0,))) if priority is None else priority, t.get("resources"),
                   t.get("workers"), bool(t.get("allow_other_workers", False)), int(t.get("retries", 0) or 0),
                   t.get("limits"))
