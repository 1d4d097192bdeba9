"""Run a graph in this process: one task at a time (the default without a cluster), or on
a pool of threads (``scheduler="threads"``, as dask's threaded scheduler).

Tasks run in the order ``order()`` gives, the same order a worker uses, and each value is
dropped as soon as no remaining task needs it, so memory behaves like it will on a cluster.
With threads, the ready task of highest priority starts whenever a thread is free, so at
most ``num_workers`` tasks run at once and the order stays depth first::

    main thread: ready heap (by priority) --submit--> pool of num_workers threads
                 <--first completed-- a result: stored; its inputs freed when no task
                 still needs them; the tasks it was the last input of become ready

>>> from operator import add
>>> from xsched.graph.spec import Task, Ref
>>> g = {"a": Task(int, ("1",)), "b": Task(add, (Ref("a"), 10))}
>>> get(g, ["a", ["b"]])
[1, [11]]
"""

from __future__ import annotations

import concurrent.futures
import heapq
import os
from typing import Any, Mapping

from .optimize import cull, flatten_keys
from .optimize import optimize as optimize_graph
from .order import gc_paused, order, task_dependencies
from .spec import Ref, Task

__all__ = ["get", "THREADS", "pool_size", "watchers"]

#: objects told of every computation run here (``xsched.diagnostics.ProgressBar``): their
#: ``started(n_tasks)``, ``task_done(key)`` and ``finished(failed)``, from the thread running it
watchers: list = []

#: the ``scheduler=`` names (dask's) that run a graph on threads of this process
THREADS = frozenset({"threads", "threading"})


def pool_size(scheduler: Any, num_workers: Any = None) -> int | None:
    """How many threads a computation in this process runs on: ``num_workers`` (default
    the machine's cores) for ``scheduler="threads"``, or when ``num_workers`` alone is given;
    None (one task at a time) otherwise.

    >>> pool_size("threads", 3), pool_size(None), pool_size("sync")
    (3, None, None)
    """
    if num_workers is not None and (isinstance(num_workers, bool) or not isinstance(num_workers, int)
                                    or num_workers < 1):
        raise ValueError(f"num_workers must be a number of threads (1 or more), got {num_workers!r}")
    if isinstance(scheduler, str) and scheduler in THREADS:
        return num_workers or os.cpu_count() or 1
    return num_workers if scheduler is None else None


def get(graph: Mapping[str, Any], keys: Any, optimize: bool = True, num_workers: int | None = None) -> Any:
    """Compute ``keys`` (a key, or nested lists of keys) from ``graph``; results nest alike.

    ``optimize=True`` fuses linear chains first (the results are the same). Non-Task values
    in the graph are taken as already computed. ``num_workers`` above 1 runs the tasks on
    that many threads (see the module docstring).

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
    watching = list(watchers)
    for w in watching:
        w.started(sum(type(v) is Task for v in graph.values()))
    try:
        if num_workers is not None and num_workers > 1:
            data = _threaded(graph, deps, waiting_on, priorities, wanted, num_workers, watching)
        else:
            data = _one_at_a_time(graph, run_order, deps, waiting_on, wanted, watching)
    except BaseException:
        for w in watching:
            w.finished(True)
        raise
    for w in watching:
        w.finished(False)
    return _pack(keys, data)


def _one_at_a_time(graph: Mapping[str, Any], run_order: list, deps: dict, waiting_on: dict, wanted: set,
                   watching: list) -> dict:
    """``get``'s tasks one after another in ``run_order``; the values."""
    data: dict[str, Any] = {}
    for key in run_order:
        value = graph[key]
        typ = type(value)
        if typ is Task:
            try:
                data[key] = value.run(data)
            except Exception as exc:
                raise _failed(exc, key)
            for w in watching:
                w.task_done(key)
        elif typ is Ref:
            data[key] = data[value.key]
        else:
            data[key] = value
        for dep in deps[key]:
            waiting_on[dep] -= 1
            if waiting_on[dep] == 0 and dep not in wanted:
                del data[dep]  # free intermediates as soon as nothing needs them
    return data


def _failed(exc: BaseException, key: str) -> BaseException:
    if hasattr(exc, "add_note"):
        exc.add_note(f"(raised by task {key!r}, computed locally)")
    return exc


def _threaded(graph: Mapping[str, Any], deps: dict, waiting_on: dict, priorities: dict, wanted: set,
              num_workers: int, watching: list) -> dict:
    """``get``'s tasks on ``num_workers`` threads, highest priority first; the values."""
    data: dict[str, Any] = {}
    missing = {key: len(set(found)) for key, found in deps.items()}
    dependents: dict[str, list[str]] = {key: [] for key in graph}
    for key, found in deps.items():
        for dep in set(found):
            dependents[dep].append(key)
    ready = [(priorities[key], key) for key, n in missing.items() if n == 0]
    heapq.heapify(ready)

    def finished(key: str) -> None:
        """``key``'s value is in ``data``: free inputs no task needs any more, wake its dependents."""
        for dep in deps[key]:
            waiting_on[dep] -= 1
            if waiting_on[dep] == 0 and dep not in wanted:
                del data[dep]
        for child in dependents[key]:
            missing[child] -= 1
            if missing[child] == 0:
                heapq.heappush(ready, (priorities[child], child))

    running: dict[concurrent.futures.Future, str] = {}
    with concurrent.futures.ThreadPoolExecutor(num_workers, thread_name_prefix="xsched-local") as pool:
        try:
            while ready or running:
                while ready and len(running) < num_workers:
                    _, key = heapq.heappop(ready)
                    value = graph[key]
                    if type(value) is Task:
                        running[pool.submit(value.run, data)] = key
                        continue
                    data[key] = data[value.key] if type(value) is Ref else value
                    finished(key)
                if not running:
                    continue
                done, _ = concurrent.futures.wait(running, return_when=concurrent.futures.FIRST_COMPLETED)
                for future in done:
                    key = running.pop(future)
                    exc = future.exception()
                    if exc is not None:
                        raise _failed(exc, key)
                    data[key] = future.result()
                    finished(key)
                    for w in watching:
                        w.task_done(key)
        finally:
            for future in running:
                future.cancel()
    return data


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
