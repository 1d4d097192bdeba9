"""Lazy function calls that build a task graph: ``delayed(f)(x)`` is a task, not a result.

Each ``Delayed`` keeps only its own small layer of tasks plus references to the ``Delayed``
objects it depends on -- or, for a call on flat arguments, the call itself -- and the full
graph is assembled on demand by one iterative walk. So building a graph of n tasks costs
O(n), never the O(n^2) of merging whole dicts at every step, and 100,000-task graphs build
in about a second.

Keys are ``<funcname>-<token>``. A pure call's token hashes the function and arguments
(the same call twice gives the same key, so its result is reused); an impure call, the
default, gets a random token. Operators, attribute access and indexing are always pure.

>>> from xsched.graph.delayed import delayed
>>> def inc(x):
...     return x + 1
>>> total = delayed(sum)([delayed(inc)(i) for i in range(3)])
>>> total.compute()
6
"""

from __future__ import annotations

import dataclasses
import html
import inspect
import itertools
import operator
import os
import types
from typing import Any, Callable, Iterator, Mapping

from ..client.default import blocking_client_for, client_for  # (a registry only: graph/ knows no network)
from ..tokenize import tokenize
from .xarray_objects import XarrayCollection, is_xarray_object
from .annotate import current_annotations
from .layers import LayeredGraph, collections_graph
from .local import get, pool_size
from .optimize import flatten_keys
from .order import gc_paused
from .spec import Ref, Task, funcname
from .visualize import visualize_method

__all__ = ["Delayed", "delayed", "compute", "persist", "source_of"]

_CLIENT_ONLY_KWARGS = frozenset({
    "workers", "resources", "priority", "retries", "allow_other_workers", "fifo_timeout",
    "sync", "limits", "actors",
})


# --------------------------------------------------------------------------- task helpers


def _identity(value: Any) -> Any:
    """Return a literal unchanged (the task wrapping ``delayed(value)``)."""
    return value


def _call(func: Callable, /, *args: Any, **kwargs: Any) -> Any:
    """Call a function that is itself the result of a task."""
    return func(*args, **kwargs)


def _call_method(obj: Any, name: str, /, *args: Any, **kwargs: Any) -> Any:
    """``obj.name(*args, **kwargs)``, for ``delayed_obj.name(...)``."""
    return getattr(obj, name)(*args, **kwargs)


def _first(results: list) -> Any:
    return results[0]


def _is_collection(obj: Any) -> bool:
    return hasattr(type(obj), "__xsched_graph__")


def _to_arg(obj: Any, deps: list[Delayed]) -> Any:
    """Replace Delayed (and other collections) inside ``obj`` by ``Ref``s; record them."""
    typ = type(obj)
    if typ in _ATOMS:
        return obj
    if isinstance(obj, Delayed):
        deps.append(obj)
        return Ref(obj._key if typ is Delayed else obj.key)  # (a DelayedFunction makes its key)
    if typ is list:
        return [_to_arg(o, deps) for o in obj]
    if typ is tuple:
        return tuple(_to_arg(o, deps) for o in obj)
    if typ is dict:
        return {k: _to_arg(v, deps) for k, v in obj.items()}
    if typ is set or typ is frozenset:
        # holding Delayed: built when it runs, from a list (as dask's; fusion may put an
        # unhashable Task in place of a Ref), in an order that keeps a pure call's key
        n = len(deps)
        items = [_to_arg(o, deps) for o in obj]
        return Task(typ, (sorted(items, key=tokenize),)) if len(deps) > n else obj
    if _is_collection(obj):
        wrapped = _from_collection(obj)
        deps.append(wrapped)
        return Ref(wrapped.key)
    fields = _fields_of(obj)
    if fields is not None:  # a namedtuple or a dataclass holding Delayed: built when it runs
        n = len(deps)
        values = {k: _to_arg(v, deps) for k, v in fields.items()}
        return Task(_rebuilt, (typ, values)) if len(deps) > n else obj
    return obj


_ATOMS = frozenset({int, float, str, bytes, bool, type(None), complex, slice})


def _fields_of(obj: Any) -> dict | None:
    """The fields a namedtuple or a dataclass instance is made from (name -> value), or None
    for anything else (and for a dataclass with fields its ``__init__`` does not take)."""
    typ = type(obj)
    if isinstance(obj, tuple) and hasattr(typ, "_fields") and hasattr(typ, "_make"):
        return dict(zip(typ._fields, obj))
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        fields = dataclasses.fields(obj)
        if all(f.init for f in fields):
            return {f.name: getattr(obj, f.name) for f in fields}
    return None


def _rebuilt(typ: type, values: dict) -> Any:
    """A namedtuple or dataclass of ``typ`` from its fields' values (its ``__init__``'s).

    >>> import collections
    >>> _rebuilt(collections.namedtuple("Pt", "x y"), {"x": 1, "y": 2})
    Pt(x=1, y=2)
    """
    return typ(**values)


def _from_collection(coll: Any) -> Delayed:
    """A Delayed whose value is what ``coll.compute()`` would return (e.g. a whole array)."""
    graph = dict(coll.__xsched_graph__())
    keys = coll.__xsched_keys__()
    func, extra = coll.__xsched_postcompute__()
    key = f"finalize-{tokenize(keys, func, extra)}"
    graph[key] = Task(func, (_refs(keys), *extra), {}, current_annotations())
    return Delayed(key, graph)


def _refs(keys: Any) -> Any:
    return Ref(keys) if isinstance(keys, str) else [_refs(k) for k in keys]


def _new_call(
    func: Callable,
    args: tuple,
    kwargs: Mapping[str, Any],
    *,
    pure: bool,
    prefix: str | None = None,
    key: str | None = None,
    length: int | None = None,
) -> Delayed:
    """Make the Delayed for ``func(*args, **kwargs)`` (args may hold Delayed objects)."""
    if not kwargs and not pure and key is None:
        for a in args:
            if type(a) is not Delayed and type(a) not in _ATOMS:
                break
        else:  # flat arguments, literals or plain Delayed: the common case of large graphs
            return Delayed._call(f"{prefix or funcname(func)}-{_random_token()}", func, args,
                                 current_annotations() or None, length)
    deps: list[Delayed] = []
    targs = tuple([_to_arg(a, deps) for a in args])
    tkwargs = {k: _to_arg(v, deps) for k, v in kwargs.items()} if kwargs else {}
    if key is None:
        token = tokenize(func, targs, tkwargs) if pure else _random_token()
        key = f"{prefix or funcname(func)}-{token}"
    # a call's own layer is its Task alone (no one-entry dict per call: __xsched_graph__ knows)
    return Delayed._from_layer(key, Task(func, targs, tkwargs, current_annotations()), tuple(deps), length)


class _Tokens:
    """Random tokens, cheaply: a random 64-bit prefix per process plus a counter.

    Unique across processes and clients (the prefix) and within one (the counter); the
    prefix is redrawn in a forked child so parent and child never collide. The counter is
    decimal and fixed-width, so the keys of one function differ only in equal-width runs
    of digits: their natural order is their plain order, which ``order`` then takes at once
    (a natural sort of hex counters cost it seconds per million roots).
    """

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.prefix = os.urandom(8).hex()
        self.counter = itertools.count()

    def __call__(self) -> str:
        return f"{self.prefix}{next(self.counter):016d}"


_random_token = _Tokens()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_random_token.reset)


def _pop_key_name(kwargs: dict) -> str | None:
    """Take the key a call names for itself out of its keywords: ``xsched_key_name=``, or
    dask's ``dask_key_name=`` (the same), so neither reaches the function.

    >>> kw = {"dask_key_name": "total", "x": 1}
    >>> _pop_key_name(kw), kw
    ('total', {'x': 1})
    """
    key = kwargs.pop("xsched_key_name", None)
    dask_key = kwargs.pop("dask_key_name", None)
    if key is not None and dask_key is not None and key != dask_key:
        raise ValueError(f"xsched_key_name={key!r} and dask_key_name={dask_key!r} name two keys for one call; "
                         "give one of them")
    return key if key is not None else dask_key


def _check_nout(nout: Any) -> int | None:
    if nout is None:
        return None
    if not isinstance(nout, int) or isinstance(nout, bool) or nout < 0:
        raise ValueError(f"nout must be None or an int >= 0 (the number of outputs), got {nout!r}")
    return nout


# --------------------------------------------------------------------------- Delayed


class Delayed:
    """A lazy value: the key of a task plus the graph that computes it.

    ``Delayed(key, graph, length=None)``: ``graph`` maps keys to ``Task`` objects (or
    already-computed placeholders) and holds every task needed for ``key``.

    >>> from xsched.graph.delayed import Delayed
    >>> from xsched.graph.spec import Task
    >>> d = Delayed("three-1", {"three-1": Task(len, ("abc",))})
    >>> (d * 2).compute()
    6
    """

    # A Delayed is either a call kept as given (``_args`` not None: ``_layer`` is the
    # function, ``_args`` its flat arguments, plain Delayed objects among them, ``_ann`` its
    # annotations; the graph walk makes its Task and Refs), or a small layer of tasks
    # (``_layer``: a Task or a dict of them) with the Delayed objects it depends on
    # (``_deps``). A call kept as given is one object the garbage collector tracks (two for
    # more than two arguments: the Delayed and its argument tuple) instead of five or six
    # (Task, arguments, Refs, deps): in a graph of a million calls, the collector's full
    # passes over them took seconds. One or two arguments are kept in ``_a`` and ``_b``
    # (``_args`` is then their number: read them with ``_call_args``), not in a tuple:
    # a tuple holding a Delayed stays tracked, and the collector visits it in every pass.
    __slots__ = ("_key", "_layer", "_deps", "_length", "_args", "_ann", "_a", "_b", "__weakref__")

    def __init__(self, key: str, graph: Mapping[str, Task | Any], *, length: int | None = None):
        if not isinstance(key, str):
            raise TypeError(f"a Delayed key must be a str, got {key!r} of type {type(key).__name__}")
        if key not in graph:
            raise ValueError(f"the graph given for Delayed({key!r}) has no task for that key")
        object.__setattr__(self, "_key", key)
        object.__setattr__(self, "_layer", graph)
        object.__setattr__(self, "_deps", ())
        object.__setattr__(self, "_length", _check_nout(length))
        object.__setattr__(self, "_args", None)
        object.__setattr__(self, "_ann", None)

    @classmethod
    def _from_layer(
        cls, key: str, layer: Mapping[str, Any], deps: tuple, length: int | None = None
    ) -> Delayed:
        self = _new(cls)  # (slots set through their descriptors: see _set_key)
        _set_key(self, key)
        _set_layer(self, layer)
        _set_deps(self, deps)
        _set_length(self, length)
        _set_args(self, None)
        _set_ann(self, None)
        return self

    @classmethod
    def _call(cls, key: str, func: Callable, args: tuple, annotations: dict | None,
              length: int | None = None) -> Delayed:
        """The call ``func(*args)`` kept as given: ``args`` flat, each a literal or a plain Delayed."""
        self = _new(cls)
        _set_key(self, key)
        _set_layer(self, func)
        _set_deps(self, None)
        _set_length(self, length)
        _keep_args(self, args)
        _set_ann(self, annotations)
        return self

    @property
    def key(self) -> str:
        """The key of this value in the graph, ``<funcname>-<token>``."""
        return self._key

    # ---- collection protocol (used by Client and by compute/persist)

    def __xsched_graph__(self) -> dict[str, Task | Any]:
        """Every task needed to compute this value, assembled from the small layers."""
        graph: dict[str, Any] = {}
        seen: set[int] = set()
        stack: list[Delayed] = [self]
        push = stack.append
        with gc_paused():  # (a Task, a tuple and Refs per call kept as given, no cycles)
            while stack:
                node = stack.pop()
                if id(node) in seen:
                    continue
                seen.add(id(node))
                if node._args is not None:
                    graph[node._key] = _call_task(node)
                    for a in _call_args(node):
                        if type(a) is Delayed:
                            push(a)
                    continue
                layer = node._layer
                if type(layer) is Task:
                    graph[node._key] = layer
                else:
                    graph.update(layer)
                stack.extend(node._deps)
        return graph

    def __xsched_keys__(self) -> list:
        return [self.key]

    def __xsched_postcompute__(self) -> tuple[Callable, tuple]:
        return _first, ()

    def __xsched_postpersist__(self) -> tuple[Callable, tuple]:
        return _rebuild, (self.key, self._length)

    def __xsched_tokenize__(self) -> str:
        return self.key

    # ---- computing

    visualize = visualize_method

    def compute(self, **kwargs: Any) -> Any:
        """The value: on the default Client if one is running, else in this process
        (``scheduler="sync"``: here whatever runs; ``scheduler=client``: on that one).

        >>> from xsched.graph.delayed import delayed
        >>> delayed(max)(1, 5).compute(), delayed(min)(1, 5).compute(scheduler="sync")
        (5, 1)
        """
        scheduler = kwargs.pop("scheduler", None)
        client = blocking_client_for(scheduler)
        if client is not None:
            kwargs.pop("num_workers", None)  # (on a cluster its workers' threads decide)
            return client.compute(self, sync=True, **kwargs)
        return compute(self, scheduler=scheduler, **kwargs)[0]  # (num_workers= and "threads" as compute's)

    def persist(self, **kwargs: Any) -> Delayed:
        """Start computing and keep the result: on the default Client (a Delayed backed by
        a Future), else in this process (a Delayed holding the value).

        >>> from xsched.graph.delayed import delayed
        >>> x = delayed(sum)([1, 2]).persist()
        >>> x.compute()
        3
        """
        scheduler = kwargs.pop("scheduler", None)
        client = client_for(scheduler)
        if client is not None:
            kwargs.pop("num_workers", None)
            return client.persist(self, **kwargs)
        return persist(self, scheduler=scheduler, **kwargs)[0]

    # ---- lazy operations

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):  # protocols (pickle, IPython, numpy) must not become tasks
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        return DelayedAttr._for(self, name)

    def __setattr__(self, name: str, value: Any) -> None:
        raise TypeError(
            f"Delayed objects are immutable: cannot set {name!r}; build a new value with "
            f"delayed(setattr)(obj, {name!r}, value) inside a task instead"
        )

    def __setitem__(self, index: Any, value: Any) -> None:
        raise TypeError("Delayed objects are immutable: item assignment is not supported; "
                        "do it inside a delayed function instead")

    def __getitem__(self, index: Any) -> Delayed:
        return _new_call(operator.getitem, (self, index), {}, pure=True, prefix="getitem")

    def __call__(self, *args: Any, **kwargs: Any) -> Delayed:
        pure = kwargs.pop("pure", False)
        key = _pop_key_name(kwargs)
        return _new_call(_call, (self, *args), kwargs, pure=pure, prefix="call", key=key)

    def __bool__(self) -> bool:
        raise TypeError(
            "the truth value of a Delayed is not known until it is computed: call "
            ".compute() first, or move the if/while into a delayed function"
        )

    def __len__(self) -> int:
        if self._length is None:
            raise TypeError(
                "the length of a Delayed is unknown; pass nout=n to delayed() when the "
                "function returns n values, or compute it: delayed(len)(x).compute()"
            )
        return self._length

    def __iter__(self) -> Iterator[Delayed]:
        if self._length is None:
            raise TypeError(
                "a Delayed of unknown length cannot be iterated or unpacked; pass nout=n "
                "to delayed() when the function returns n values"
            )
        return (self[i] for i in range(self._length))

    def __hash__(self) -> int:
        return hash(self._key)

    def __repr__(self) -> str:
        return f"Delayed({self._key!r})"

    def _repr_html_(self) -> str:
        graph = self.__xsched_graph__()
        task = graph.get(self._key)
        annotations = getattr(task, "annotations", None) or {}
        rows = [("key", self._key), ("tasks", f"{len(graph):,}"),
                ("annotations", ", ".join(f"{k}={v!r}" for k, v in annotations.items()) or "none")]
        if self._length is not None:
            rows.append(("length", str(self._length)))
        body = "".join(
            f"<tr><th style='text-align:left'>{html.escape(k)}</th>"
            f"<td style='text-align:left'><code>{html.escape(v)}</code></td></tr>"
            for k, v in rows
        )
        return f"<table><caption>Delayed</caption>{body}</table>"

    def __reduce__(self) -> tuple:
        return _rebuild, (self.__xsched_graph__(), self._key, self._length)

    def __copy__(self) -> Delayed:
        return self  # immutable

    def __deepcopy__(self, memo: dict) -> Delayed:
        return self

    def __dir__(self) -> list[str]:
        return sorted(set(object.__dir__(self)) - {"_key", "_layer", "_deps", "_length", "_args", "_ann",
                                                   "_a", "_b"})


#: Setters of Delayed's slots, straight from their descriptors: ``Delayed.__setattr__``
#: refuses assignment, and ``object.__setattr__`` first looks the name up on the type;
#: the descriptor's own ``__set__`` costs half as much, paid for each of a graph's tasks.
_new = object.__new__
_set_key, _set_layer, _set_deps, _set_length, _set_args, _set_ann, _set_a, _set_b = (
    Delayed.__dict__[name].__set__ for name in ("_key", "_layer", "_deps", "_length", "_args", "_ann", "_a", "_b"))


def _keep_args(node: Delayed, args: tuple) -> None:
    """Keep a call's flat arguments: one or two in ``_a``/``_b``, more as their tuple."""
    n = len(args)
    if n == 2:
        _set_a(node, args[0])
        _set_b(node, args[1])
        _set_args(node, 2)
    elif n == 1:
        _set_a(node, args[0])
        _set_args(node, 1)
    else:
        _set_args(node, args)


def _call_args(node: Delayed) -> tuple:
    """The flat arguments of a call kept as given (``node._args`` is not None).

    >>> from xsched.graph.delayed import delayed, _call_args
    >>> _call_args(delayed(max)(1, 2)), _call_args(delayed(max)(1, 2, 3))
    ((1, 2), (1, 2, 3))
    """
    args = node._args
    if type(args) is not int:
        return args
    return (node._a, node._b) if args == 2 else (node._a,)


_set_ref_key = Ref.__dict__["key"].__set__
_set_task_func, _set_task_args, _set_task_kwargs, _set_task_annotations = (
    Task.__dict__[name].__set__ for name in ("func", "args", "kwargs", "annotations"))


def _ref(key: str) -> Ref:
    """``Ref(key)``, for a quarter of the cost of the dataclass's ``__init__`` (frozen: it
    sets its field through ``object.__setattr__``), paid for each edge of a graph."""
    ref = _new(Ref)
    _set_ref_key(ref, key)
    return ref


def _task(func: Callable, args: tuple, annotations: dict) -> Task:
    """``Task(func, args, {}, annotations)`` without the dataclass's Python ``__init__``."""
    task = _new(Task)
    _set_task_func(task, func)
    _set_task_args(task, args)
    _set_task_kwargs(task, {})
    _set_task_annotations(task, annotations)
    return task


def _call_task(node: Delayed) -> Task:
    """The Task of a call kept as given (``node._args`` is not None): its Delayed
    arguments made Refs.

    >>> from xsched.graph.delayed import delayed, _call_task
    >>> _call_task(delayed(max)(5, 7)).run({})
    7
    """
    args = tuple([_ref(a._key) if type(a) is Delayed else a for a in _call_args(node)])
    ann = node._ann
    return _task(node._layer, args, dict(ann) if ann else {})


def _rebuild(graph: Mapping[str, Any], key: str, length: int | None = None) -> Delayed:
    """A Delayed for ``key`` over ``graph`` (used by persist and unpickling)."""
    return Delayed(key, graph, length=length)


def _unary(op: Callable) -> Callable:
    def method(self: Delayed) -> Delayed:
        return _new_call(op, (self,), {}, pure=True)

    method.__name__ = f"__{op.__name__.strip('_')}__"
    return method


def _binary(op: Callable, reflected: bool = False) -> Callable:
    def method(self: Delayed, other: Any) -> Delayed:
        args = (other, self) if reflected else (self, other)
        return _new_call(op, args, {}, pure=True)

    name = op.__name__.strip("_")
    method.__name__ = f"__{'r' if reflected else ''}{name}__"
    return method


for _op in (operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv,
            operator.mod, operator.pow, operator.matmul, operator.and_, operator.or_,
            operator.xor, operator.lshift, operator.rshift):
    _name = _op.__name__.strip("_")
    setattr(Delayed, f"__{_name}__", _binary(_op))
    setattr(Delayed, f"__r{_name}__", _binary(_op, reflected=True))
for _op in (operator.lt, operator.le, operator.gt, operator.ge, operator.eq, operator.ne):
    setattr(Delayed, f"__{_op.__name__}__", _binary(_op))
for _op in (operator.neg, operator.pos, operator.abs, operator.invert):
    setattr(Delayed, f"__{_op.__name__.strip('_')}__", _unary(_op))
del _op, _name


class DelayedAttr(Delayed):
    """``d.name``: lazily ``getattr(d, name)``; calling it is the method call ``d.name(...)``."""

    __slots__ = ("_obj", "_attr")

    @classmethod
    def _for(cls, obj: Delayed, attr: str) -> DelayedAttr:
        key = f"getattr-{tokenize(obj.key, attr)}"
        task = Task(getattr, (Ref(obj.key), attr), {}, current_annotations())
        self = cls._from_layer(key, {key: task}, (obj,))
        object.__setattr__(self, "_obj", obj)
        object.__setattr__(self, "_attr", attr)
        return self

    def __call__(self, *args: Any, **kwargs: Any) -> Delayed:
        pure = kwargs.pop("pure", False)
        key = _pop_key_name(kwargs)
        return _new_call(_call_method, (self._obj, self._attr, *args), kwargs,
                         pure=pure, prefix=self._attr, key=key)


class DelayedFunction(Delayed):
    # ``delayed(func)``: calling it makes a task ``func(*args, **kwargs)``. Its own key
    # (``<funcname>-<token>``, for passing the function itself to another task) is computed
    # only when asked for, so wrapping a function costs nothing. Its docstring is the
    # function's (``__doc__`` below), as help() and ``f?`` in a notebook show it.

    __slots__ = ("_func", "_pure", "_nout", "_name")
    # Delayed's slots that never change here, read from the class: ``delayed(f)(...)`` makes
    # a DelayedFunction per call, and each slot set costs as much as a dict lookup. (They
    # hide those slots: never set them on a DelayedFunction.)
    _deps, _length, _args, _ann = (), None, None, None

    @classmethod
    def _wrap(cls, func: Callable, name: str | None, pure: bool, nout: int | None) -> DelayedFunction:
        self = _new(cls)  # (what _from_layer(None, None, ()) makes, without its calls)
        _set_key(self, None)
        _set_layer(self, None)
        _set_func(self, func)
        _set_pure(self, pure)
        _set_nout(self, nout)
        _set_name(self, name)
        return self

    def _materialise(self) -> None:
        if self._key is None:
            key = self._name or f"{funcname(self._func)}-{tokenize(self._func)}"
            object.__setattr__(self, "_layer", {key: Task(_identity, (self._func,), {},
                                                          current_annotations())})
            object.__setattr__(self, "_key", key)

    @property
    def key(self) -> str:
        self._materialise()
        return self._key

    def __xsched_graph__(self) -> dict[str, Task | Any]:
        self._materialise()
        return super().__xsched_graph__()

    def __xsched_postpersist__(self) -> tuple[Callable, tuple]:
        self._materialise()
        return super().__xsched_postpersist__()

    def __hash__(self) -> int:
        return hash(self.key)

    def __repr__(self) -> str:
        return f"Delayed({self.key!r})"

    def _repr_html_(self) -> str:
        self._materialise()
        return super()._repr_html_()

    def __reduce__(self) -> tuple:
        return _wrap_function, (self._func, self._name, self._pure, self._nout)

    # The function's own name, docstring and signature, for help(), ``f?`` in a notebook and
    # inspect (whose checks would otherwise compare a Delayed, which has no truth value)
    @property
    def __name__(self) -> str:  # type: ignore[override]
        return getattr(self._func, "__name__", funcname(self._func))

    @property
    def __doc__(self) -> str | None:  # type: ignore[override]
        return getattr(self._func, "__doc__", None)

    @property
    def __wrapped__(self) -> Callable:
        return self._func

    @property
    def __signature__(self) -> inspect.Signature | None:
        try:
            return inspect.signature(self._func)
        except (TypeError, ValueError):  # (a builtin without one: none here either)
            return None

    def __call__(self, *args: Any, **kwargs: Any) -> Delayed:
        if not kwargs and not self._pure and self._name is None:
            for a in args:
                if type(a) is not Delayed and type(a) not in _ATOMS:
                    break
            else:  # Delayed._call of _new_call, without their calls: once per task of a graph
                func = self._func
                node = _new(Delayed)
                _set_key(node, f"{funcname(func)}-{_random_token()}")
                _set_layer(node, func)
                _set_deps(node, None)
                _set_length(node, self._nout)
                _keep_args(node, args)
                _set_ann(node, current_annotations() or None)
                return node
        pure = kwargs.pop("pure", self._pure)
        # (a name is the function's own key and its calls' prefix: each call has a key of its own)
        return _new_call(self._func, args, kwargs, pure=pure, prefix=self._name, key=_pop_key_name(kwargs),
                         length=self._nout)


_set_func, _set_pure, _set_nout, _set_name = (DelayedFunction.__dict__[name].__set__
                                              for name in ("_func", "_pure", "_nout", "_name"))


def _wrap_function(func: Callable, name: str | None, pure: bool, nout: int | None) -> DelayedFunction:
    return DelayedFunction._wrap(func, name, pure, nout)


# --------------------------------------------------------------------------- delayed()

_MISSING = object()
#: Callables that are neither Delayed nor collections: ``delayed(f)`` wraps them at once
#: (in a loop building a large graph, the checks cost as much as the wrapping).
_PLAIN_FUNCTIONS = frozenset({types.FunctionType, types.BuiltinFunctionType})


def delayed(obj: Any = _MISSING, name: str | None = None, pure: bool | None = None,
            nout: int | None = None, traverse: bool = True) -> Any:
    """Make a function lazy, or wrap a value so it can be used in lazy expressions.

    * ``delayed(func)(*args, **kwargs)`` is a task; args may be Delayed objects, or lists,
      tuples, dicts and sets holding them.
    * ``pure=True`` gives equal calls equal keys (results are shared); the default gives
      each call its own key. ``name=`` gives a value its key; a function's calls keys
      ``<name>-<token>`` (each its own, grouped by that name in the dashboard). Per call,
      ``pure=`` does the same as the argument and ``xsched_key_name=`` forces that call's
      key (``dask_key_name=`` is taken as ``xsched_key_name=``).
    * ``nout=n`` makes the call's result unpackable into n Delayed values.
    * ``delayed(value)`` wraps a literal; lists, tuples, dicts and sets of Delayed (and
      namedtuples and dataclasses holding them) become one Delayed list (tuple, ...),
      unless ``traverse=False`` (the container is taken as it is, as dask's: a cheap wrap
      of a large list of plain values). Also usable as a
      decorator: ``@delayed`` or ``@delayed(pure=True)``.

    >>> from xsched.graph.delayed import delayed
    >>> @delayed(pure=True, nout=2)
    ... def divmod_(a, b):
    ...     return divmod(a, b)
    >>> q, r = divmod_(17, 5)
    >>> (q * 10 + r).compute()
    32
    """
    if type(obj) in _PLAIN_FUNCTIONS and name is None and nout is None:
        return DelayedFunction._wrap(obj, None, bool(pure), None)  # (the checks below, skipped)
    if obj is _MISSING:
        return lambda func: delayed(func, name=name, pure=pure, nout=nout, traverse=traverse)
    nout = _check_nout(nout)
    if name is not None and not isinstance(name, str):
        raise TypeError(f"name must be a str (the key to use), got {name!r}")
    if isinstance(obj, Delayed):
        return obj
    if _is_collection(obj):
        return _from_collection(obj)
    if callable(obj):
        return DelayedFunction._wrap(obj, name, bool(pure), nout)
    deps: list[Delayed] = []
    converted = _to_arg(obj, deps) if traverse else obj
    if deps:  # a container of Delayed values: one task that builds the container
        # (a set, a namedtuple or a dataclass is converted to a task that builds it already)
        builder = type(obj) if type(converted) is not Task else _identity
        key = name or f"{type(obj).__name__}-{tokenize(converted)}"
        task = Task(builder, (converted,), {}, current_annotations())
        return Delayed._from_layer(key, {key: task}, tuple(deps), nout)
    key = name or f"{type(obj).__name__}-{tokenize(obj)}"
    return Delayed._from_layer(key, {key: Task(_identity, (obj,), {}, current_annotations())},
                               (), nout)


# --------------------------------------------------------------------------- compute/persist


def is_future(value: Any) -> bool:
    """Whether ``value`` is a client's Future (by its type: the client is not imported here).

    >>> is_future(delayed(sum)([1]))
    False
    """
    # (the type first: ``hasattr`` of a DataFrame with a column "key" would select that column)
    return type(value).__name__ == "Future" and hasattr(value, "key")


def as_delayed(value: Any) -> Delayed:
    """A Delayed, or a future as the Delayed of its key's value.

    >>> as_delayed(delayed(sum)([1])).compute()
    1
    """
    return Delayed(value.key, {value.key: value}) if is_future(value) else value


def source_of(value: Any, what: str, instead: str) -> tuple[str, LayeredGraph]:
    """The key and the graph of a ``Delayed`` or a future a collection is made of (its
    ``from_delayed``); a TypeError naming ``what`` and what to use ``instead`` for anything else.

    >>> key, graph = source_of(delayed(sum)([1, 2]), "from_delayed", "from_array")
    >>> key.startswith("sum-"), len(graph)
    (True, 1)
    """
    if isinstance(value, Delayed):
        return value.key, LayeredGraph({value.key: value.__xsched_graph__()})
    if is_future(value):
        return value.key, LayeredGraph({value.key: {value.key: value}})
    raise TypeError(f"{what} takes Delayed objects or futures, not {type(value).__name__}; {instead}")


def _find_collections(args: tuple, traverse: bool) -> tuple[list, Callable[[list], tuple]]:
    """The collections in ``args`` (inside lists/tuples/dicts/sets too when ``traverse``)
    and a function that puts their results back in place."""
    found: list[Any] = []

    def scan(obj: Any) -> Any:
        if is_xarray_object(obj):  # (its variables' xsched arrays, computed with the rest)
            wrapped = XarrayCollection(obj)
            if not wrapped.arrays:
                return obj
            obj = wrapped
        if _is_collection(obj):
            found.append(obj)
            return _Slot(len(found) - 1)
        if traverse:
            typ = type(obj)
            if typ in (list, tuple, set, frozenset):
                return typ(scan(o) for o in obj)
            if typ is dict:
                return {k: scan(v) for k, v in obj.items()}
            fields = _fields_of(obj)  # (a namedtuple's or a dataclass's: rebuilt around its slots)
            if fields is not None:
                n = len(found)
                scanned = {k: scan(v) for k, v in fields.items()}
                return _Rebuild(typ, scanned) if len(found) > n else obj
        return obj

    template = [scan(a) for a in args]

    def fill(obj: Any, results: list) -> Any:
        if type(obj) is _Slot:
            return results[obj.index]
        typ = type(obj)
        if typ in (list, tuple, set, frozenset):
            return typ(fill(o, results) for o in obj)
        if typ is dict:
            return {k: fill(v, results) for k, v in obj.items()}
        if typ is _Rebuild:
            return _rebuilt(obj.typ, {k: fill(v, results) for k, v in obj.fields.items()})
        return obj

    return found, lambda results: tuple(fill(t, results) for t in template)


class _Rebuild:
    """A namedtuple or dataclass of ``_find_collections``' template, made again once filled."""
    __slots__ = ("typ", "fields")

    def __init__(self, typ: type, fields: dict) -> None:
        self.typ, self.fields = typ, fields


class _Slot:
    __slots__ = ("index",)

    def __init__(self, index: int) -> None:
        self.index = index


def _check_local_kwargs(kwargs: Mapping[str, Any]) -> None:
    unknown = sorted(set(kwargs) - _CLIENT_ONLY_KWARGS)
    if unknown:
        raise TypeError(
            f"unexpected keyword argument(s) {unknown} for a compute in this process (no Client is "
            f"running, or scheduler='sync' or 'threads'); valid: optimize_graph, traverse, num_workers, and the "
            f"Client's "
            f"{sorted(_CLIENT_ONLY_KWARGS - {'traverse'})}, which are ignored locally"
        )


def _local_results(collections: list, optimize_graph: bool, num_workers: int | None = None) -> list:
    graph = collections_graph(collections)
    return get(graph, [coll.__xsched_keys__() for coll in collections], optimize=optimize_graph,
               num_workers=num_workers)


def compute(*args: Any, traverse: bool = True, optimize_graph: bool | None = None, scheduler: Any = None,
            **kwargs: Any) -> tuple:
    """Compute several collections at once, sharing their common tasks; returns a tuple.

    Collections inside lists, tuples, dicts and sets (and namedtuples and dataclasses) are
    found too (``traverse=False`` to skip that); other values pass through. Runs on the default Client if one is running
    (extra keywords go to ``Client.compute``), else in this process; ``scheduler``: a Client
    to run on, or ``"sync"`` to run here whatever runs (``client.default.client_for``).

    >>> from xsched.graph.delayed import delayed, compute
    >>> a = delayed(sum)([1, 2])
    >>> compute(a, {"twice": a * 2}, "as is")
    (3, {'twice': 6}, 'as is')
    """
    client = blocking_client_for(scheduler)
    collections, repack = _find_collections(args, traverse)
    if not collections:
        return args
    num_workers = kwargs.pop("num_workers", None)  # (on a cluster its workers' threads decide)
    if client is not None:
        if optimize_graph is not None:
            kwargs["optimize_graph"] = optimize_graph
        return repack(list(client.compute(collections, sync=True, **kwargs)))
    _check_local_kwargs(kwargs)
    results = _local_results(collections, optimize_graph is not False, pool_size(scheduler, num_workers))
    posts = [coll.__xsched_postcompute__() for coll in collections]
    return repack([func(res, *extra) for (func, extra), res in zip(posts, results)])


def persist(*args: Any, traverse: bool = True, optimize_graph: bool | None = None, scheduler: Any = None,
            **kwargs: Any) -> tuple:
    """Start computing collections and keep their results; returns new collections.

    On the default Client the new collections are backed by Futures; without one they
    hold the computed values.

    >>> from xsched.graph.delayed import delayed, persist
    >>> (x,) = persist(delayed(sum)([1, 2]))
    >>> len(x.__xsched_graph__()), x.compute()
    (1, 3)
    """
    client = client_for(scheduler)
    collections, repack = _find_collections(args, traverse)
    if not collections:
        return args
    num_workers = kwargs.pop("num_workers", None)
    if client is not None:
        if optimize_graph is not None:
            kwargs["optimize_graph"] = optimize_graph
        return repack(list(client.persist(collections, **kwargs)))
    _check_local_kwargs(kwargs)
    results = _local_results(collections, optimize_graph is not False, pool_size(scheduler, num_workers))
    out = []
    for coll, res in zip(collections, results):
        keys = coll.__xsched_keys__()
        values = _flatten_like(keys, res)
        new_graph = dict(zip(flatten_keys(keys), values))
        func, extra = coll.__xsched_postpersist__()
        out.append(func(new_graph, *extra))
    return repack(out)


def _flatten_like(keys: Any, results: Any) -> list:
    if isinstance(keys, str):
        return [results]
    out: list = []
    for k, r in zip(keys, results):
        out.extend(_flatten_like(k, r))
    return out
