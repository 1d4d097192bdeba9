"""Task specifications: what one key of a graph computes, independent of any network.

A graph is a plain ``dict`` mapping keys (strings) to ``Task`` objects. A task is a call
``func(*args, **kwargs)`` whose arguments may contain, at any depth of lists, tuples, sets
and dicts:

* ``Ref(key)``  -- the value of another key of the graph (a dependency);
* ``Task(...)`` -- a nested call evaluated in place (this is how fusion inlines a chain);
* anything else -- a literal, passed as is.

Nothing here knows about scheduling; ``dependencies`` and ``execute`` are pure functions.
Annotations (priority, resources, workers, retries, limits, ...) ride on the task so that
every graph optimisation carries them along explicitly.

>>> from operator import add
>>> g = {"a": Task(int, ("1",)), "b": Task(add, (Ref("a"), 10))}
>>> sorted(dependencies(g["b"]))
['a']
>>> execute(g["b"], {"a": 1})
11
"""

from __future__ import annotations

import inspect

from dataclasses import dataclass, field
from types import FunctionType
from typing import Any, Callable, Mapping

__all__ = ["Ref", "Task", "dependencies", "execute", "substitute", "funcname"]


@dataclass(frozen=True, slots=True)
class Ref:
    """A reference to the value of another key.

    >>> Ref("x-1")
    Ref('x-1')
    """

    key: str

    def __repr__(self) -> str:
        return f"Ref({self.key!r})"

    def __reduce__(self):  # twice as fast as the dataclass default, once per task of a graph
        return (Ref, (self.key,))


@dataclass(slots=True)
class Task:
    """One call to run: ``func(*args, **kwargs)`` with ``Ref``/``Task`` arguments resolved.

    ``annotations`` holds scheduling hints (``priority``, ``resources``, ``workers``,
    ``allow_other_workers``, ``retries``, ``limits``); the graph optimiser never drops them.

    >>> Task(len, ([1, 2, 3],)).run({})
    3
    """

    func: Callable
    args: tuple = ()
    kwargs: dict = field(default_factory=dict)
    annotations: dict = field(default_factory=dict)

    def run(self, data: Mapping[str, Any]) -> Any:
        """Evaluate this task with dependency values taken from ``data``."""
        args = [_resolve(a, data) for a in self.args]
        kwargs = {k: _resolve(v, data) for k, v in self.kwargs.items()} if self.kwargs else {}
        return self.func(*args, **kwargs)

    def __repr__(self) -> str:
        return f"Task({funcname(self.func)}, {len(self.args)} args)"

    def __reduce__(self):  # the dataclass default looks up its fields on every call
        return (Task, (self.func, self.args, self.kwargs, self.annotations))


def accepts_keyword(func: Callable, keyword: str) -> bool:
    """Whether ``func`` names a parameter ``keyword`` (``block_info``, ``partition_info``:
    asked for by name, as dask does).

    >>> accepts_keyword(lambda part, partition_info=None: part, "partition_info"), accepts_keyword(len, "x")
    (True, False)
    """
    try:
        return keyword in inspect.signature(func).parameters
    except (TypeError, ValueError):
        return False


def funcname(func: Callable) -> str:
    """A short human name for a callable, used in keys and progress bars.

    >>> funcname(len)
    'len'
    """
    if type(func) is FunctionType and "func" not in func.__dict__:  # (the common case, without
        # hasattr's failed lookup: a function's attributes are its __dict__'s)
        name = func.__name__
        return name if name != "<lambda>" else "lambda"
    while hasattr(func, "func") and not isinstance(func, type):  # functools.partial
        func = func.func
    name = getattr(func, "__name__", None) or type(func).__name__
    return name if name != "<lambda>" else "lambda"


def _resolve(obj: Any, data: Mapping[str, Any]) -> Any:
    typ = type(obj)
    if typ is Ref:
        return data[obj.key]
    if typ is Task:
        return obj.run(data)
    if typ is list:
        return [_resolve(o, data) for o in obj]
    if typ is tuple:
        return tuple(_resolve(o, data) for o in obj)
    if typ is dict:
        return {k: _resolve(v, data) for k, v in obj.items()}
    if typ is set:
        return {_resolve(o, data) for o in obj}
    return obj


def execute(task: Any, data: Mapping[str, Any]) -> Any:
    """Evaluate a task (or a bare Ref / literal) with dependency values from ``data``.

    >>> execute(Ref("a"), {"a": 5})
    5
    """
    return _resolve(task, data)


def dependencies(task: Any) -> set[str]:
    """Keys a task (or any argument structure) refers to, found at any depth.

    >>> sorted(dependencies(Task(sum, ([Ref("a"), Ref("b"), 3],))))
    ['a', 'b']
    """
    out: set[str] = set()
    stack = [task]
    while stack:
        obj = stack.pop()
        typ = type(obj)
        if typ is Ref:
            out.add(obj.key)
        elif typ is Task:
            stack.extend(obj.args)
            if obj.kwargs:
                stack.extend(obj.kwargs.values())
        elif typ in (list, tuple, set):
            stack.extend(obj)
        elif typ is dict:
            stack.extend(obj.values())
    return out


def substitute(obj: Any, mapping: Mapping[str, Any]) -> Any:
    """Replace ``Ref(k)`` by ``mapping[k]`` (another Ref, a Task, or a literal) at any depth.

    Used by fusion to inline a dependency's task into its single dependent. A set that
    would hold a Task (unhashable) becomes a task building the set when run.

    >>> substitute(Task(len, (Ref("a"),)), {"a": Ref("b")}).args
    (Ref('b'),)
    """
    typ = type(obj)
    if typ is Ref:
        return mapping.get(obj.key, obj)
    if typ is Task:
        return Task(
            obj.func,
            tuple(substitute(a, mapping) for a in obj.args),
            {k: substitute(v, mapping) for k, v in obj.kwargs.items()},
            obj.annotations,
        )
    if typ is list:
        return [substitute(o, mapping) for o in obj]
    if typ is tuple:
        return tuple(substitute(o, mapping) for o in obj)
    if typ is dict:
        return {k: substitute(v, mapping) for k, v in obj.items()}
    if typ is set:
        items = [substitute(o, mapping) for o in obj]
        try:
            return set(items)
        except TypeError:  # a Task in place of a Ref (unhashable): a task that builds the set when run
            return Task(set, (items,))
    return obj
