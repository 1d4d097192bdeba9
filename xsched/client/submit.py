"""Work in: submit and map calls, compute and persist collections; cancel and retry.

Each call builds an update-graph (``protocol/update_graph.py`` writes it) and hands it to
the client's loop (``_send_graph``, ``refcount.py``), returning Futures at once::

    submit(f, x) / map(f, xs)        -> one task entry per call (``task_msg``)
    compute(collections) / persist() -> plain delayed calls: columns the scheduler orders;
                                        otherwise the optimised graph, ordered here, as entries

A mixin of ``Client`` (``client.py``).
"""

from __future__ import annotations

import itertools
import uuid

from .. import task_context
from ..errors import FutureCancelledError
from ..graph import columns
from ..graph.annotate import current_annotations, validate_annotations
from ..graph.layers import collections_graph
from ..graph.delayed import Delayed
from ..graph.optimize import flatten_keys, optimize_with_refs
from ..graph.order import check_acyclic, gc_paused, order
from ..graph.spec import Ref, Task, funcname
from ..graph.xarray_objects import XarrayCollection, is_xarray_object
from ..protocol import ops
from ..protocol.tasks import SpecWriter
from ..protocol.update_graph import (check_key, column_task_msgs, futures_to_refs, graph_msg, graph_task_msgs,
                                     task_msg, worker_list)
from ..tokenize import tokenize
from .actors import create_actor
from .executor import ClientExecutor
from .future import Future, collect_futures

__all__ = ["SubmitMixin"]

_generation = itertools.count(1)


class SubmitMixin:
    """submit, map, compute, persist, cancel, retry."""

    def submit(self, func, *args, key: str | None = None, pure: bool = True, workers=None, resources=None,
               priority: int = 0, retries: int = 0, allow_other_workers: bool = False, actor: bool = False,
               actors: bool = False, fifo_timeout=None, **kwargs) -> Future:
        """Run ``func(*args, **kwargs)`` on the cluster; returns a Future at once.

        Futures among the arguments (in lists, tuples, dicts, sets) are replaced by their
        results on the worker. Pure calls get a deterministic key (the same call twice is
        one task); ``key=`` a string of your own. ``workers=``: an address or name, or a
        list of them. With ``actor=True`` (or dask's older ``actors=True``), ``func`` is a
        class: its instance stays on the worker that made it, and the future's result is
        an ``Actor`` whose method calls run there (each such submit is a new actor: its
        key is unique unless ``key=`` is given). ``fifo_timeout=`` is taken and ignored:
        dask's hint for ordering calls submitted close together; here every call is
        ordered by when it was submitted, and by ``priority=``.

        >>> fut = client.submit(pow, 2, 10)
        >>> fut.result()
        1024
        >>> class Counter:
        ...     n = 0
        ...     def increment(self):
        ...         self.n += 1
        ...         return self.n
        >>> counter = client.submit(Counter, actor=True).result()
        >>> counter.increment().result()
        1
        """
        if not callable(func):
            raise TypeError(f"submit needs a callable first argument, not {type(func).__name__}")
        actor = actor or actors
        if key is None:
            key = f"{funcname(func)}-{tokenize(func, args, kwargs) if pure and not actor else uuid.uuid4().hex}"
        if actor:
            func, args = create_actor, (func, *args)
        [fut] = self._submit_calls([(key, func, args, kwargs)], workers, resources, priority, retries,
                                   allow_other_workers)
        return fut

    def map(self, func, *iterables, key=None, pure: bool = True, workers=None, resources=None, priority: int = 0,
            retries: int = 0, allow_other_workers: bool = False, actor: bool = False, actors: bool = False,
            fifo_timeout=None, batch_size: int | None = None, **kwargs) -> list[Future]:
        """Apply ``func`` to each element (zip of the iterables); one Future per element
        (with ``actor=True``, one new actor per element; ``actors=``, ``fifo_timeout=``:
        see ``submit``). ``key=``: a prefix for the keys, or a list of one key per call.
        ``batch_size=n`` sends the calls in batches of ``n`` (one message each; the same
        futures and results as without).

        >>> futs = client.map(abs, [-1, -2, 3])
        >>> client.gather(futs)
        [1, 2, 3]
        >>> client.gather(client.map(abs, [-4, 5, -6], batch_size=2))
        [4, 5, 6]
        """
        if not callable(func):
            raise TypeError(f"map needs a callable first argument, not {type(func).__name__}")
        if batch_size is not None and (not isinstance(batch_size, int) or isinstance(batch_size, bool)
                                       or batch_size < 1):
            raise ValueError(f"map: batch_size must be None or an int >= 1 (calls per message), not {batch_size!r}")
        actor = actor or actors
        argsets = list(zip(*iterables))
        if isinstance(key, (list, tuple)):
            if len(key) != len(argsets):
                raise ValueError(f"map got {len(key)} keys for {len(argsets)} calls")
            keys = [check_key(k) for k in key]  # (all, before a first batch is sent)
        else:
            name = key or funcname(func)
            if pure and not actor:
                ftok = tokenize(func, kwargs)
                keys = [f"{name}-{tokenize(ftok, a)}" for a in argsets]
            else:
                keys = [f"{name}-{uuid.uuid4().hex}" for _ in argsets]
        if actor:
            func, argsets = create_actor, [(func, *a) for a in argsets]
        calls = [(k, func, a, kwargs) for k, a in zip(keys, argsets)]
        step = batch_size or max(len(calls), 1)
        return [f for i in range(0, len(calls), step)
                for f in self._submit_calls(calls[i:i + step], workers, resources, priority, retries,
                                            allow_other_workers)]

    def get_executor(self, **options) -> "ClientExecutor":
        """This client as a ``concurrent.futures.Executor`` (``submit``, ``map``,
        ``shutdown``, ``with``), each call with ``options`` of ``submit`` (``workers=``,
        ``resources=``, ``retries=``, ``priority=``...; ``pure=False`` unless given).

        >>> with client.get_executor() as ex:
        ...     list(ex.map(pow, [2, 3], [5, 2]))
        [32, 9]
        """
        return ClientExecutor(self, **options)

    def _submit_calls(self, calls, workers, resources, priority, retries, allow_other_workers) -> list[Future]:
        # keywords win over an enclosing `with xsched.annotate(...)` block
        ann = current_annotations()
        resources = resources if resources is not None else ann.get("resources")
        workers = workers if workers is not None else ann.get("workers")
        priority = priority or ann.get("priority", 0)
        retries = retries or ann.get("retries", 0)
        allow_other_workers = allow_other_workers or ann.get("allow_other_workers", False)
        limits = ann.get("limits")
        if resources is not None:
            resources = validate_annotations({"resources": resources})["resources"]
        priority = validate_annotations({"priority": priority})["priority"]  # numpy numbers -> plain
        retries = validate_annotations({"retries": retries})["retries"]  # (the scheduler takes no other)
        gen = next(_generation)
        tasks = []
        futures = []
        workers = worker_list(workers) or None
        seen = set()
        writer = SpecWriter(functions={})
        dumps = writer.dumps
        for call in calls:  # (before any Future is made)
            check_key(call[0])
        built = []
        for key, func, args, kwargs in calls:
            held: list[Future] = []
            task = Task(func, tuple(futures_to_refs(a, held, Future) for a in args),
                        {k: futures_to_refs(v, held, Future) for k, v in kwargs.items()})
            self._check_inputs(held)  # (every input checked before any Future is made)
            built.append((key, task, held))
        for i, (key, task, held) in enumerate(built):
            futures.append(Future(key, self))
            if key in seen:
                continue
            seen.add(key)
            tasks.append(task_msg(key, task, [f.key for f in held], (-priority, gen, i),
                                   resources, workers, allow_other_workers, retries, limits, dumps))
        self._send_graph(graph_msg(tasks, list(seen), writer.functions, parent=task_context.current_key()))
        return futures

    # ------------------------------------------------------------------ collections
    def compute(self, collections, sync: bool = False, optimize_graph: bool = True, priority: int = 0,
                resources=None, workers=None, allow_other_workers: bool = False, retries: int = 0,
                fifo_timeout=None):
        """Compute collections (delayed objects, arrays, dataframes, bags) on the cluster: Futures
        (or results if ``sync``). (``fifo_timeout=``, dask's, is taken and ignored: see ``submit``.)

        >>> import xsched
        >>> total = xsched.delayed(sum)([1, 2, 3])
        >>> client.compute(total).result()
        6
        """
        single = not isinstance(collections, (list, tuple))
        colls = _wrapped([collections] if single else list(collections))
        futures = self._submit_collections(colls, optimize_graph, priority, resources, workers,
                                           allow_other_workers, retries, persist=False)
        if sync:
            results = self.gather(futures)
            return results[0] if single else results
        return futures[0] if single else futures

    def persist(self, collections, optimize_graph: bool = True, priority: int = 0, resources=None, workers=None,
                allow_other_workers: bool = False, retries: int = 0, fifo_timeout=None):
        """Start computing collections and keep their results on the cluster
        (``fifo_timeout=``, dask's, is taken and ignored: see ``submit``).

        Returns collections of the same kind whose graph holds Futures.

        >>> import xsched
        >>> x = xsched.delayed(sum)([1, 2, 3])
        >>> x = client.persist(x)
        >>> xsched.futures_of(x)
        [<Future: ..., key: sum-...>]
        >>> x.compute()
        6
        """
        single = not isinstance(collections, (list, tuple))
        colls = _wrapped([collections] if single else list(collections))
        per = self._submit_collections(colls, optimize_graph, priority, resources, workers, allow_other_workers,
                                       retries, persist=True)
        out = []
        for coll, futs in zip(colls, per):
            func, extra = coll.__xsched_postpersist__()
            out.append(func({f.key: f for f in futs}, *extra))
        return out[0] if single else out

    def _submit_collections(self, colls, optimize_graph, priority, resources, workers, allow_other_workers,
                            retries, persist: bool):
        workers = worker_list(workers) or None
        retries = validate_annotations({"retries": retries or 0})["retries"]
        # delayed calls: walked once into columns (see graph.columns); with client-wide
        # options every task would be an entry anyway (and its key a column as well)
        plain = resources is None and not workers and not allow_other_workers and not retries
        cols = columns.walk(colls, fuse=optimize_graph) if plain else None
        if cols is not None and cols.direct:
            return self._submit_columns(cols, colls, priority, persist)
        outputs: list = []
        for c in colls:
            if not hasattr(c, "__xsched_graph__"):
                raise TypeError(f"compute/persist take xsched collections (delayed objects, arrays, dataframes, "
                                f"bags), not {type(c).__name__}; use client.submit for plain functions")
            outputs.append(c.__xsched_keys__())
        # (walked already: not again; dataframes computed together are planned together)
        graph: dict = collections_graph(colls) if cols is None else cols.graph()
        all_keys = flatten_keys(outputs)
        refs: dict = {}  # key -> the keys its task refers to, from optimising (order and deps use them)
        if optimize_graph:
            graph, refs = optimize_with_refs(graph, all_keys, fuse=True)
        finals: list = []  # per collection: list of keys the returned futures point at
        for c, keys in zip(colls, outputs):
            flat = flatten_keys(keys)
            if persist or isinstance(c, Delayed):
                finals.append(flat)
            else:
                func, extra = c.__xsched_postcompute__()
                fkey = f"finalize-{tokenize(flat, funcname(func))}"
                graph[fkey] = Task(func, (_refs_like(keys),) + tuple(extra))
                refs.pop(fkey, None)  # (a key the graph had already: its task is replaced)
                finals.append([fkey])
        prio = order(graph, refs)
        gen = next(_generation)
        held: list[Future] = []
        writer = SpecWriter(functions={})
        with gc_paused():  # a message per task, no cycles: collections would only scan the graph
            tasks = graph_task_msgs(graph, refs, prio, gen, priority, resources, workers, allow_other_workers,
                                    retries, held, writer, future=Future)
        self._check_inputs(held)
        wanted = [k for keys in finals for k in keys]
        futures = [[Future(k, self) for k in keys] for keys in finals]
        self._send_graph(graph_msg(tasks, wanted, writer.functions, parent=task_context.current_key()))
        del held
        if persist:
            return futures
        return [f[0] for f in futures]

    def _submit_columns(self, cols, colls, priority, persist: bool):
        """``_submit_collections`` of plain Delayed objects walked into ``cols``, without
        client-wide options: the graph goes as columns, and the scheduler orders it
        (``protocol/update_graph.py``)."""
        if not all(cols.calls):  # (calls kept as given cannot make a cycle; layers can)
            check_acyclic(cols.keys, cols.deps)
        gen = next(_generation)
        held: list[Future] = []
        writer = SpecWriter(functions={})
        with gc_paused():
            cols_msg, tasks = column_task_msgs(cols, gen, priority, held, writer, future=Future)
        self._check_inputs(held)
        futures = [Future(c._key, self) for c in colls]
        self._send_graph(graph_msg(tasks, [c._key for c in colls], writer.functions, cols_msg,
                                   parent=task_context.current_key()))
        del held
        return [[f] for f in futures] if persist else futures

    def _check_inputs(self, held: list) -> None:
        """Refuse, before anything is sent, futures among a graph's inputs that cannot feed it:
        a cancelled one (its key is gone: the tasks on it could never run), and one of another
        client still pending (its task may reach the scheduler after this graph, which would
        then find its input missing)."""
        for f in held:
            if f.cancelled():
                raise FutureCancelledError(f"an input of this graph, future {f.key!r}, was cancelled; "
                                           "submit its task again and pass the new future")
            if f.client is not self and f.client is not None and not f.done():
                raise ValueError(f"an input of this graph, future {f.key!r}, belongs to another client and is still "
                                 "pending; submit through the client that made it, or wait for it first "
                                 "(future.result())")

    # ------------------------------------------------------------------ control
    def cancel(self, futures, force: bool = False, reason: str | None = None, msg: str | None = None) -> None:
        """Cancel futures: their tasks stop unless another client wants them (``force=True``:
        even then, and the other clients' futures of them are cancelled too, as dask's).
        ``msg`` is what ``result()`` of a cancelled future then says (default: which key was
        cancelled, and ``reason`` if given)."""
        flat: list[Future] = []
        collect_futures(futures, flat)
        self._cancel(flat, force, reason, msg)

    def _cancel(self, futures: list[Future], force: bool = False, reason: str | None = None,
                msg: str | None = None) -> None:
        for f in futures:
            f._state.cancel(msg if msg is not None else f"{f.key} was cancelled" + (f": {reason}" if reason else ""))
            with self._ref_lock:  # these handles stay cancelled; a later submission of the key starts afresh
                if self._states.get(f.key) is f._state:
                    del self._states[f.key]
        self._send({"op": ops.CANCEL_KEYS, "keys": [f.key for f in futures], **({"force": True} if force else {})})

    def retry(self, futures) -> None:
        """Run failed futures (and their failed inputs) again."""
        flat: list[Future] = []
        collect_futures(futures, flat)
        self._retry(flat)

    def _retry(self, futures: list[Future]) -> None:
        for f in futures:
            f._state.reset()
        self._send({"op": ops.RETRY_KEYS, "keys": [f.key for f in futures]})


def _wrapped(colls: list) -> list:
    """``colls`` with each xarray object as the collection of its lazy variables."""
    return [XarrayCollection(c) if is_xarray_object(c) else c for c in colls]


def _refs_like(keys):
    if isinstance(keys, str):
        return Ref(keys)
    return [_refs_like(k) for k in keys]
