"""Computing and persisting a collection: on the default client, or in this process.

Arrays, dataframes and bags all follow the collection protocol (``__xsched_graph__``,
``__xsched_keys__``, ``__xsched_postcompute__``, ``__xsched_postpersist__``); their
``compute()`` and ``persist()`` are these two functions, so "no cluster running" behaves
the same for each: the graph runs here, one task at a time, with the same order and fusion.

>>> from xsched.graph.spec import Task
>>> class Pair:
...     def __xsched_graph__(self): return {"p-0": Task(int, ("1",)), "p-1": Task(int, ("2",))}
...     def __xsched_keys__(self): return ["p-0", "p-1"]
...     def __xsched_postcompute__(self): return sum, ()
>>> compute_collection(Pair()) if default_client() is None else 3
3
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..client.default import blocking_client_for, client_for, default_client  # (a registry only: no network code)
from .layers import LayeredGraph
from .local import get, pool_size
from .optimize import flatten_keys
from .spec import Ref, Task, dependencies

__all__ = ["compute_collection", "persist_collection", "lineage", "run_writes",
           "default_client"]


def compute_collection(coll: Any, optimize_graph: bool = True, scheduler: Any = None, **kwargs: Any) -> Any:
    """The collection's value: ``client.compute(coll, sync=True)`` on the Client ``scheduler``
    names (``client_for``; keyword arguments go there), else run here (on ``num_workers``
    threads for ``scheduler="threads"``: ``local.pool_size``) and passed through its
    post-compute. An asynchronous Client is refused (``blocking_client_for``)."""
    client = blocking_client_for(scheduler)
    num_workers = kwargs.pop("num_workers", None)  # (on a cluster its workers' threads decide)
    if client is not None:
        if not optimize_graph:
            kwargs["optimize_graph"] = False
        return client.compute(coll, sync=True, **kwargs)
    graph = coll.__xsched_graph__()
    _no_remote_results(graph)
    results = get(graph, coll.__xsched_keys__(), optimize=optimize_graph,
                  num_workers=pool_size(scheduler, num_workers))
    func, extra = coll.__xsched_postcompute__()
    return func(results, *extra)


def _no_remote_results(graph: Mapping[str, Any]) -> None:
    """Refuse, naming the cause, a graph holding results kept on a cluster (a collection
    persisted there) when no client computes it: run here, NumPy or pandas would meet the
    futures themselves and fail far from the cause."""
    for value in graph.values():
        if getattr(type(value), "__xsched_future__", False):
            client = getattr(value, "client", None)
            state = "released" if client is None else getattr(client, "status", "unknown")
            raise RuntimeError(f"this collection holds results persisted on a cluster (future {value.key!r}, "
                               f"its client {state}), computed here (no client is the default, or scheduler= "
                               "named this process): compute it with that client while it is open, or persist "
                               "it again with a new one")


def persist_collection(coll: Any, scheduler: Any = None, **kwargs: Any) -> Any:
    """A collection of the same kind whose parts are computed: futures on the cluster of the
    Client ``scheduler`` names (``client_for``), or the values themselves when it names none."""
    client = client_for(scheduler)
    num_workers = kwargs.pop("num_workers", None)
    if client is not None:
        return client.persist(coll, **kwargs)
    keys = flatten_keys(coll.__xsched_keys__())
    values = get(coll.__xsched_graph__(), keys, optimize=True, num_workers=pool_size(scheduler, num_workers))
    func, extra = coll.__xsched_postpersist__()
    return func(dict(zip(keys, values)), *extra)


def lineage(graph: Mapping[str, Any], key: str) -> dict[str, Any]:
    """The tasks ``key`` needs (like ``cull``, but in time proportional to the answer, so
    that culling every part of a large collection stays linear).

    >>> g = {"a": 1, "b": Task(abs, (Ref("a"),)), "c": 2}
    >>> sorted(lineage(g, "b"))
    ['a', 'b']
    """
    out: dict[str, Any] = {}
    stack = [key]
    while stack:
        k = stack.pop()
        if k in out:
            continue
        value = out[k] = graph[k]
        if isinstance(value, Task):
            stack.extend(d for d in dependencies(value) if d in graph and d not in out)
        elif isinstance(value, Ref) and value.key in graph:
            stack.append(value.key)
    return out


def run_writes(graph: Any, name: str, layer: dict, keys: list[str], compute: bool) -> Any:
    """Tasks that write a collection's parts (``layer``, named ``name``, over the collection's
    ``LayeredGraph``) as one ``Delayed`` per key of ``keys``, or, with ``compute``, their
    results (what each write returns, e.g. the path written), computed at once.

    The dataframe writers (``to_csv``, ``to_parquet``) and ``Bag.to_textfiles`` share it.

    >>> g = LayeredGraph({"data": {"d-0": [1, 2], "d-1": [3]}})
    >>> layer = {f"n-{i}": Task(len, (Ref(k),)) for i, k in enumerate(["d-0", "d-1"])}
    >>> run_writes(g, "n", layer, list(layer), compute=True)
    [2, 1]
    """
    from .delayed import Delayed, compute as compute_all

    flat = LayeredGraph.merge(graph, new={name: layer}).flat()
    delayeds = [Delayed(k, lineage(flat, k)) for k in keys]
    if not compute:
        return delayeds
    return list(compute_all(*delayeds))
