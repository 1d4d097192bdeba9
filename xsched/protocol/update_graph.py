"""Both ends of update-graph: how a client writes a graph, and how the scheduler reads it.

The one message that carries work is written in the client and read in the scheduler;
keeping both here keeps the two in step (a field written is a field read) and keeps each
side's classes out of the other. Neither end knows the other's objects: the encoder is
told what a Future is (``future=``, the client's class), the decoder what to make of a
task (``make_task=``, the scheduler's ``NewTask``). Nothing here imports the client or
the scheduler.

The message (fields as ``schemas.TO_SCHEDULER`` checks them)::

    {"op": "update-graph", "keys": [the keys the client wants],
     "tasks": [entries: {"key", "run_spec", "deps", "priority", and annotations if any}],
     "columns": {"keys", "specs", "deps" (indices), "priority"}   (a delayed graph's calls)
     "functions": {function id: pickled function}   (specs refer to them by id)
     "parent": the task this was sent from, if any}

Encoding, in the client (``graph_msg`` around ``task_msg`` for ``submit``/``map``,
``graph_task_msgs`` for collections, ``column_task_msgs`` for plain delayed calls):

>>> from xsched.graph.spec import Task
>>> class Future:                       # stand-in for the client's Future: what the encoder reads
...     def __init__(self, key): self.key = key
>>> held = []
>>> [entry] = graph_task_msgs({"y": Task(max, (Future("x"), 1))}, {}, {"y": 0}, 1, 0, None, None, False, 0,
...                           held, future=Future)
>>> entry["key"], entry["deps"], entry["priority"], [f.key for f in held]
('y', ['x'], [0, 1, 0], ['x'])
>>> sorted(graph_msg([entry], ["y"]))
['keys', 'op', 'tasks']

Decoding, in the scheduler: the columns are ordered here (``order_indexed``: the same
order the client would give them) and each task's place appended to its priority;
ordering on the scheduler frees the client -- a notebook -- seconds sooner for a million
tasks, and the scheduler's own process does it while the client goes on.

>>> from collections import namedtuple
>>> NewTask = namedtuple("NewTask", "key run_spec dependencies priority resources workers "
...                      "allow_other_workers retries limits",
...                      defaults=(None, None, False, 0, None))   # stand-in for the scheduler's
>>> cols = {"keys": ["a", "b", "c"], "specs": [b"A", b"B", None], "deps": [[], [0, 2], []],
...         "priority": [0, 1]}
>>> [(t.key, t.dependencies, t.priority)
...  for t in column_tasks(cols, [{"key": "c", "priority": [0, 1]}], make_task=NewTask)]
[('a', [], (0, 1, 0)), ('b', ['a', 'c'], (0, 1, 2)), ('c', [], (0, 1, 1))]
"""

from __future__ import annotations

import operator
from typing import Any, Callable, Iterable, Mapping

from ..graph.delayed import Delayed, _call_args
from ..graph.order import order_indexed, task_dependencies
from ..graph.spec import Ref, Task, dependencies
from . import ops
from .schemas import MAX_KEY
from .tasks import SpecWriter, dumps_task

__all__ = ["graph_msg", "task_msg", "graph_task_msgs", "column_task_msgs", "futures_to_refs", "identity",
           "column_tasks", "entry_task", "check_key", "worker_list"]


# ---------------------------------------------------------------------- the client's end


def identity(x):
    """The task of a graph value that is no Task (a Future under another key, a list holding
    Futures): it returns its argument, the value with its Futures' results in place."""
    return x


def graph_msg(tasks: list, keys: list, functions: dict | None = None, columns: dict | None = None,
              parent: str | None = None) -> dict:
    """An update-graph, with the functions its specs refer to by id and, for a graph sent
    from inside a task, that task's key as ``parent``.

    ``functions`` (function id -> pickled function, ``SpecWriter(functions=)``): a
    100,000-task map of a notebook function sends that function once, not in every spec,
    and the scheduler keeps it once. ``parent``: the scheduler counts what a task launches
    (through ``worker_client()`` or ``get_client()``) in every progress bar that counts the
    task itself, so ``progress(client.submit(fib, 12))`` covers the whole recursion.
    """
    msg = {"op": ops.UPDATE_GRAPH, "tasks": tasks, "keys": keys}
    if columns is not None:  # (the graph as columns: ``column_task_msgs``)
        msg["columns"] = columns
    if functions:
        msg["functions"] = functions
    if parent is not None:
        msg["parent"] = parent
    return msg


def task_msg(key, task, deps, priority, resources, workers, allow_other_workers, retries, limits,
             dumps=dumps_task) -> dict:
    """The update-graph entry of one task: key, spec, dependencies, priority, and the
    annotations that are set.

    >>> msg = task_msg("t", Task(abs, (-1,)), [], (0, 1), None, ["tcp://w:1"], False, 2, None)
    >>> {k: v for k, v in msg.items() if k != "run_spec"}
    {'key': 't', 'deps': [], 'priority': [0, 1], 'workers': ['tcp://w:1'], 'allow_other_workers': False, 'retries': 2}
    """
    msg = {"key": key, "run_spec": dumps(task), "deps": list(deps), "priority": list(priority)}
    if resources:
        msg["resources"] = dict(resources)
    if workers:
        msg["workers"] = list(workers)
        msg["allow_other_workers"] = bool(allow_other_workers)
    if retries:
        msg["retries"] = int(retries)
    if limits:
        msg["limits"] = dict(limits)
    return msg


def graph_task_msgs(graph: dict, refs: dict, prio: dict, gen: int, priority, resources, workers,
                    allow_other_workers, retries, held: list, writer: SpecWriter | None = None, *,
                    future: type) -> list:
    """The update-graph entry of every task of ``graph``, with the Futures (objects of type
    ``future``) it holds appended to ``held``.

    A task whose arguments hold no Future (none among its positional arguments, no keyword
    arguments: most tasks of a large graph) is pickled as it is, its dependencies taken
    from ``refs`` (``task_dependencies``, as optimising found them); others are copied with
    their Futures replaced by Refs and their dependencies found again. Without annotations
    or client-wide options an entry is just key, spec, dependencies and priority.
    """
    dumps = (writer or SpecWriter()).dumps
    plain = resources is None and workers is None and not allow_other_workers and not retries
    may_hold = frozenset({future, list, tuple, dict, set, frozenset})  # argument types futures_to_refs may change
    tasks: list = []
    append = tasks.append
    for key, value in graph.items():
        _graph_task_msg(key, value, refs.get(key), prio.get(key, 0), gen, priority, resources, workers,
                        allow_other_workers, retries, held, dumps, plain, append, future, may_hold)
    return tasks


def column_task_msgs(cols, gen: int, priority, held: list, writer: SpecWriter, *, future: type) -> tuple[dict, list]:
    """The columns of an update-graph (``schemas.COLUMNS``) of a graph walked into columns
    (``graph.columns``), submitted without client-wide options, and the task entries of
    the tasks they do not carry.

    A call kept as given, without annotations, is a column with its spec written straight
    from its arguments; every other task is made into its graph value and goes as an
    entry (``graph_task_msgs``' way, its priority without the order the scheduler
    appends), its column a key with a null spec.
    """
    dumps, flat = writer.dumps, writer.dumps_flat
    keys, values, calls, refs = cols.keys, cols.values, cols.calls, cols.refs
    ref_key = _delayed_key
    may_hold = frozenset({future, list, tuple, dict, set, frozenset})
    specs: list = []
    spec = specs.append
    tasks: list = []
    append = tasks.append
    for i, key in enumerate(keys):
        if calls[i]:
            node = values[i]
            if node._ann is None:
                spec(flat(node._layer, _call_args(node), Delayed, ref_key))
                continue
        spec(None)
        _graph_task_msg(key, cols.task(i), refs[i] if refs is not None else None, None, gen, priority,
                        None, None, False, 0, held, dumps, True, append, future, may_hold)
    return {"keys": keys, "specs": specs, "deps": cols.deps, "priority": [-priority, gen]}, tasks


_delayed_key = operator.attrgetter("_key")


def _graph_task_msg(key, value, refs, prio, gen, priority, resources, workers, allow_other_workers, retries,
                    held, dumps, plain, append, future, may_hold) -> None:
    """Append the update-graph entry of one task (see ``graph_task_msgs``)."""
    deps = None
    if isinstance(value, Task):
        if type(value) is Task and not value.kwargs:
            for a in value.args:
                if type(a) in may_hold:
                    break
            else:
                deps = refs
                if deps is None:
                    deps = task_dependencies(value)
                if plain and not value.annotations:
                    append({"key": key, "run_spec": dumps(value), "deps": deps,
                            "priority": [-priority, gen] if prio is None else [-priority, gen, prio]})
                    return
        if deps is None:
            value = Task(value.func, tuple(futures_to_refs(a, held, future) for a in value.args),
                         {k: futures_to_refs(v, held, future) for k, v in value.kwargs.items()}, value.annotations)
    elif isinstance(value, future):
        held.append(value)
        if value.key == key:
            return
        value = Task(identity, (Ref(value.key),))
    else:
        value = Task(identity, (futures_to_refs(value, held, future),))
    if deps is None:
        deps = sorted(dependencies(value))
    ann = value.annotations or {}
    user_prio = ann.get("priority", priority)
    append(task_msg(
        key, value, deps, (-user_prio, gen) if prio is None else (-user_prio, gen, prio),
        resources if resources is not None else ann.get("resources"),
        workers if workers is not None else _as_list(ann.get("workers")),
        allow_other_workers or ann.get("allow_other_workers", False),
        retries or ann.get("retries", 0), ann.get("limits"), dumps,
    ))


def futures_to_refs(obj, held: list, future: type):
    """``obj`` with every object of type ``future`` in it (in lists, tuples, dicts, sets and
    frozensets) replaced by a Ref to its key, and appended to ``held``. A set holding one
    becomes a task that builds the set of their results (a Ref in a set could not be
    replaced by a task when the graph is fused: tasks are unhashable).

    >>> class Future:
    ...     def __init__(self, key): self.key = key
    >>> held = []
    >>> futures_to_refs([1, (Future("a"),), {"b": Future("b")}], held, Future), [f.key for f in held]
    ([1, (Ref('a'),), {'b': Ref('b')}], ['a', 'b'])
    >>> futures_to_refs({Future("c")}, held, Future).run({"c": 3})
    {3}
    """
    typ = type(obj)
    if typ is future:
        held.append(obj)
        return Ref(obj.key)
    if typ is list:
        return [futures_to_refs(o, held, future) for o in obj]
    if typ is tuple:
        return tuple(futures_to_refs(o, held, future) for o in obj)
    if typ is dict:
        return {k: futures_to_refs(v, held, future) for k, v in obj.items()}
    if typ is set or typ is frozenset:
        n = len(held)
        items = [futures_to_refs(o, held, future) for o in obj]
        return Task(typ, (items,)) if len(held) > n else obj
    return obj


def _as_list(workers):
    if workers is None:
        return None
    return [workers] if isinstance(workers, str) else list(workers)


def check_key(key) -> str:
    """``key`` if it can name a task here (a string of at most ``MAX_KEY`` characters, what
    the scheduler takes); else the error saying what is wrong, raised where the key was given.

    >>> check_key("x-1")
    'x-1'
    >>> check_key(("x", 1))
    Traceback (most recent call last):
    TypeError: key ('x', 1) is a tuple: keys are strings here (dask also takes tuples); ... e.g. 'x-1'
    """
    if isinstance(key, str):
        if len(key) > MAX_KEY:
            raise ValueError(f"key {key[:40]!r}... is {len(key):,} characters long: keys are at most {MAX_KEY:,} "
                             "characters here; give a shorter one")
        return key
    if isinstance(key, tuple):
        raise TypeError(f"key {key!r:.100} is a tuple: keys are strings here (dask also takes tuples); join its "
                        f"parts into one string, e.g. {'-'.join(map(str, key))!r:.100}")
    raise TypeError(f"key {key!r:.100} is {_a(type(key).__name__)}: keys are strings here; give a string")


def workers_named(workers: Mapping[str, Any], wanted: Iterable) -> list[str]:
    """The addresses among ``workers`` (address -> its info with its ``name``, as the
    scheduler's info gives them) that ``wanted`` names by address or by name (compared as
    strings: a name given as 0 or "0"), sorted.

    >>> workers_named({"tcp://b:2": {"name": "x"}, "tcp://a:1": {"name": 0}}, [0, "tcp://b:2", "nobody"])
    ['tcp://a:1', 'tcp://b:2']
    """
    names = {str(w) for w in wanted}
    return [a for a in sorted(workers) if a in names or str(workers[a]["name"]) in names]


def worker_list(workers) -> list | None:
    """``workers=`` (of submit, map, compute, scatter) as a list: one worker address or name
    (a string), or a list, tuple or set of them (an int among them is a worker's name, as
    ``Worker(name=0)``); None stays None. Anything else: a TypeError naming its type.

    >>> worker_list("tcp://10.0.0.1:4000"), worker_list(("a", "b")), worker_list(None)
    (['tcp://10.0.0.1:4000'], ['a', 'b'], None)
    >>> worker_list(5)
    Traceback (most recent call last):
    TypeError: workers= takes a worker address or name (a string) or a list of them, not an int (5); ...
    """
    if workers is None:
        return None
    if isinstance(workers, str):
        return [workers]
    if isinstance(workers, (list, tuple, set, frozenset)):
        for w in workers:
            if not isinstance(w, (str, int)) or isinstance(w, bool):
                raise TypeError(f"workers= takes worker addresses or names (strings), not {_a(type(w).__name__)} "
                                f"({w!r:.100}) among them")
        return sorted(workers, key=str) if isinstance(workers, (set, frozenset)) else list(workers)
    hint = (f"; for the worker named {workers}: workers=[{workers}]"
            if isinstance(workers, int) and not isinstance(workers, bool) else "")
    raise TypeError(f"workers= takes a worker address or name (a string) or a list of them, not "
                    f"{_a(type(workers).__name__)} ({workers!r:.100}){hint}")


def _a(noun: str) -> str:
    return f"{'an' if noun[:1] in 'aeiou' else 'a'} {noun}"


# ---------------------------------------------------------------------- the scheduler's end


def column_tasks(columns: dict, entries: list, *, make_task: Callable[..., Any]) -> list:
    """The tasks (``make_task(...)`` each, as ``entry_task`` calls it) of ``columns`` (fields as
    ``schemas.COLUMNS`` checks them) and of the task ``entries`` of the same update-graph;
    ValueError names what does not fit.

    Each column with a spec is a task; one with a null spec only names a key for its
    dependents (an entry's task -- one at most -- or one the scheduler has). Entries and
    the specs column are consumed (entries set to None once their task exists: a large
    graph's decoded maps go early).

    >>> from collections import namedtuple
    >>> NewTask = namedtuple("NewTask", "key run_spec dependencies priority resources workers "
    ...                      "allow_other_workers retries limits", defaults=(None, None, False, 0, None))
    >>> cols = {"keys": ["x-1", "sum-1"], "specs": [b"X", None], "deps": [[], [0]], "priority": [0, 3]}
    >>> [(t.key, t.priority, t.retries)
    ...  for t in column_tasks(cols, [{"key": "sum-1", "retries": 2}], make_task=NewTask)]
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
            append(make_task(keys[i], spec, [keys[j] for j in deps[i]], (*prefix, order[i])))
    for i, t in enumerate(entries):
        entries[i] = None
        at = index.get(t["key"])
        if at is None or specs[at] is not None:
            where = ("is not among the keys of its columns" if at is None else
                     "is given twice (a spec in the columns, or another entry)")
            raise ValueError(f"update-graph: task {t['key']!r:.100} {where}; nothing of this graph was added")
        specs[at] = b""  # (taken: a second entry for the key is refused as above)
        append(entry_task(t, (*t.get("priority", ()), order[at]), make_task=make_task))
    return tasks


def entry_task(t: dict, priority: tuple | None = None, *, make_task: Callable[..., Any]) -> Any:
    """A task entry of an update-graph (fields as ``schemas.TASK`` checks them) as
    ``make_task(key, run_spec, dependencies, priority, resources, workers,
    allow_other_workers, retries, limits)``, with ``priority`` or else the entry's own.

    >>> entry_task({"key": "x", "priority": [1, 2], "retries": 3}, make_task=lambda *fields: fields)
    ('x', None, [], (1, 2), None, None, False, 3, None)
    """
    return make_task(t["key"], t.get("run_spec"), t.get("deps") or [],
                     tuple(t.get("priority", (0,))) if priority is None else priority, t.get("resources"),
                     t.get("workers"), bool(t.get("allow_other_workers", False)), int(t.get("retries", 0) or 0),
                     t.get("limits"))
