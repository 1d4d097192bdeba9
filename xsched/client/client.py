"""The Client: how a notebook (or asyncio code) talks to an xsched cluster.

Data flow::

    user thread --submit/map/compute--> update-graph ----------------> scheduler
                <--Future (refcounted)                                    |
    client loop <--key-in-memory / task-erred / key-lost (batched) -------+
    result()/gather() --who-has--> scheduler; --get-data--> workers (direct, zero-copy)
    scatter()        --put-data--> workers (large buffers pushed on the bulk side channel);
                     --scatter-done--> scheduler
    Future garbage-collected --client-releases-keys--> scheduler (frees worker memory)

The asynchronous core (methods starting with ``_`` returning coroutines) runs on one
event loop: the caller's own loop when ``asynchronous=True``, otherwise a background loop
thread shared by all synchronous clients of the process.
"""

from __future__ import annotations

import asyncio
import hashlib
import itertools
import logging
import operator
import os
import pickle
import queue
import random
import threading
import uuid
import warnings
import weakref
from collections.abc import MutableMapping

from .. import config, hooks, task_context
from ..comm import CommClosedError, Connection, ConnectionPool, RemoteError
from ..errors import SchedulerLostError, XschedError, unpack_exception
from ..graph import columns
from ..graph.annotate import current_annotations, validate_annotations
from ..graph.delayed import Delayed, _call_args
from ..graph.optimize import flatten_keys, optimize_with_refs
from ..graph.order import check_acyclic, gc_paused, order, task_dependencies
from ..graph.spec import Ref, Task, dependencies, funcname
from ..protocol.bulk import get_data, put_data
from ..protocol.messages import split_objects, unpack_objects
from ..protocol.registry import connection_info
from ..protocol.schemas import CLIENT_FROM_SCHEDULER
from ..protocol.security import Security
from ..protocol.serialize import dumps, loads
from ..protocol.tasks import SpecWriter, dumps_task
from ..tokenize import tokenize
from ..units import format_bytes, parse_timedelta
from . import loop as _loop
from .default import default_client, set_default_client, unset_default_client
from .environment_pack import pack_chunks
from .future import Future, FutureState, binding_to, collecting_keys
from .rpc import wait_for_workers

logger = logging.getLogger("xsched.client")

__all__ = ["Client", "Executor", "get_client", "UploadError", "RestartError"]

_generation = itertools.count(1)

#: Seconds a released key may wait before the scheduler hears of it (any graph sent
#: meanwhile takes it along at once): the releases of a burst of dropped Futures go in one
#: message, and the client's loop is not woken for each.
RELEASE_DELAY = 0.005


class UploadError(XschedError, RuntimeError):
    """Workers could not load a file sent with ``client.upload_file``; the message names them."""


class RestartError(XschedError, RuntimeError):
    """``client.restart()`` did not get every worker back; the message says how many and why."""
_clients: "weakref.WeakSet[Client]" = weakref.WeakSet()


def _identity(x):
    return x


class Client:
    """Connect to a cluster and compute on it.

    ``Client()`` starts a LocalCluster; ``Client(cluster)``, ``Client("host:8786")`` and
    ``Client(scheduler_file="scheduler.json")`` connect to a running one. With an address
    alone the secret comes from ``security=``, ``$XSCHED_SECRET``, or the registry of
    schedulers this user runs (``~/.xsched/schedulers``), so no secret needs typing.

    >>> from xsched import Client, LocalCluster
    >>> cluster = LocalCluster(n_workers=2, threads_per_worker=1)   # doctest: +SKIP
    >>> client = Client(cluster)                                     # doctest: +SKIP
    >>> client.submit(lambda x: x + 1, 1).result()                   # doctest: +SKIP
    2
    """

    def __init__(self, address=None, *, scheduler_file: str | None = None, security: Security | str | None = None,
                 asynchronous: bool = False, timeout="10s", set_as_default: bool = True, name: str | None = None,
                 **cluster_kwargs):
        self.id = f"client-{name or ''}{'-' if name else ''}{uuid.uuid4().hex[:12]}"
        self.asynchronous = asynchronous
        self.status = "created"
        self.cluster = None
        self._own_cluster = False
        self._timeout = parse_timedelta(timeout)
        if address is None and scheduler_file is None:
            # a new LocalCluster (xsched.deploy registers it: the client imports no deploy code)
            address = hooks.new_cluster(**cluster_kwargs)
            self._own_cluster = True
        if hasattr(address, "scheduler_address"):
            self.cluster = address
            security = security or address.security
            address = address.scheduler_address
        address, security = connection_info(address, scheduler_file, security,
                                            mode=config.get("comm.security", "auto"))
        self.scheduler_address: str = address
        self.security = security
        self._states: dict[str, FutureState] = {}
        self._refs: dict[str, int] = {}
        # re-entrant: garbage collection may run Future.__del__ -> _dec_ref while it is held
        self._ref_lock = threading.RLock()
        # Released keys waiting to be told to the scheduler, each with the number of graphs
        # queued (by any thread) when it was released: it must not overtake those graphs.
        self._pending_release: list[tuple[str, int]] = []
        self._release_armed = False  # a flush of the releases is due on the loop
        self._graphs_queued = 0  # update-graphs handed to the loop so far (under _ref_lock)
        self._graphs_unsent: set[int] = set()  # numbers of those the loop has not sent yet
        self._conn: Connection | None = None
        self._pool = ConnectionPool(security)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._workers_cache: dict = {}
        self._set_as_default = set_as_default
        self._progress: dict = {}  # [progress] subscription id -> live progress bar (jupyter/progress.py)
        _clients.add(self)
        if not asynchronous:
            self._loop = _loop.background_loop()
            self._sync(self._start(), self._timeout + 5)

    # ------------------------------------------------------------------ lifecycle
    async def _start(self) -> "Client":
        if self.status == "running":
            return self
        self._loop = asyncio.get_running_loop()
        self._conn = Connection(self.scheduler_address, self.security, self._handle,
                                identity=self.id.encode(), on_lost=self._lost,
                                schemas=CLIENT_FROM_SCHEDULER).connect()
        try:
            reply, _ = await self._conn.request({"op": "register-client", "client": self.id}, timeout=self._timeout)
        except asyncio.TimeoutError:
            await self._conn.close()
            raise TimeoutError(
                f"could not reach the scheduler at {self.scheduler_address} within {self._timeout:.0f}s: "
                "is it running, and is this its address?") from None
        except Exception:
            await self._conn.close()
            raise
        self.scheduler_id = reply.get("scheduler_id")
        self.status = "running"
        if self._set_as_default:
            set_default_client(self)
        return self

    def __await__(self):
        return self._start().__await__()

    async def __aenter__(self):
        return await self._start()

    async def __aexit__(self, *exc):
        await self._close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _sync(self, coro, timeout: float | None = None):
        """Run a coroutine of the async core: return it as is when asynchronous."""
        if self.asynchronous:
            return coro
        return _loop.sync(coro, timeout)

    def close(self, timeout="10s"):
        """Release everything this client holds and disconnect (and stop its own cluster).

        >>> client.close()  # doctest: +SKIP
        """
        if self.asynchronous:
            return self._close()
        if self.status in ("closing", "closed"):
            return None
        self._sync(self._close(), parse_timedelta(timeout))
        if self._own_cluster and self.cluster is not None:
            self.cluster.close()

    async def _close(self) -> None:
        if self.status in ("closing", "closed"):
            return
        self.status = "closing"
        unset_default_client(self)
        if self._conn is not None and self._conn.failure is None:
            try:
                await asyncio.wait_for(self._conn.request({"op": "close-client"}), 2)
            except Exception:
                pass
        for st in list(self._states.values()):
            if not st.done():
                st.cancel("the client closed")
        await self._pool.close()
        if self._conn is not None:
            await self._conn.close()
        self.status = "closed"
        if self._own_cluster and self.cluster is not None and self.asynchronous:
            await self.cluster._close()

    def _lost(self, exc: Exception) -> None:
        if self.status != "running":
            return
        self.status = "lost"
        text = (f"lost the connection to the scheduler at {self.scheduler_address} ({exc}); "
                "its results are gone. Start a new cluster and Client.")
        for st in list(self._states.values()):
            if not st.done():
                st.lose(text)
        # stop reconnecting: another process may take the address over
        asyncio.get_running_loop().call_soon(lambda: asyncio.ensure_future(self._conn.close()))

    # ------------------------------------------------------------------ messages from the scheduler
    def _handle(self, header: dict, payload: list) -> None:
        op = header["op"]
        st = self._states.get(header.get("key"))
        if op == "key-in-memory":
            if st is not None:
                st.holders = header.get("workers") or None
                st.inline = header.get("inline")  # a small result, sent along: no fetch
                st.finish(header.get("type"))
        elif op == "task-erred":
            if st is not None:
                st.set_error(header.get("exception"), header.get("traceback"), header.get("text", ""),
                             header.get("blame"))
        elif op == "key-lost":
            if st is not None:
                st.reset()
        elif op == "key-cancelled":
            if st is not None:
                st.cancel(header.get("reason") or f"{header.get('key')} was cancelled")
                with self._ref_lock:  # these handles stay cancelled; a later submission starts afresh
                    if self._states.get(header.get("key")) is st:
                        del self._states[header.get("key")]
        elif op == "ping":
            pass  # the scheduler checking who is still connected
        elif op == "warning":
            warnings.warn(header.get("text", ""), RuntimeWarning, stacklevel=1)
            logger.warning("%s", header.get("text", ""))
        elif op == "scheduler-closing":
            self._lost(SchedulerLostError("the scheduler is closing"))
        elif op == "progress":  # [progress] counts pushed for xsched.progress (jupyter/progress.py)
            bar = self._progress.get(header.get("sub"))
            if bar is not None:
                bar._update(header)
        else:
            raise TypeError(f"client cannot handle op {op!r}")

    # ------------------------------------------------------------------ reference counting
    def _inc_ref(self, key: str) -> FutureState:
        with self._ref_lock:
            self._refs[key] = self._refs.get(key, 0) + 1
            st = self._states.get(key)
            if st is None:
                st = self._states[key] = FutureState()
            return st

    def _dec_ref(self, key: str) -> None:
        with self._ref_lock:
            n = self._refs.get(key, 0) - 1
            if n > 0:
                self._refs[key] = n
                return
            self._refs.pop(key, None)
            self._states.pop(key, None)
            if self.status != "running":
                return
            self._pending_release.append((key, self._graphs_queued))
            if self._release_armed:
                return
            self._release_armed = True
        # Releases are never urgent: they wait up to RELEASE_DELAY, and go at once behind
        # any graph sent meanwhile (the same batch). Waking the loop for every dropped
        # Future cost a third of the client's CPU in a submit().result() loop.
        try:
            if self._on_loop():
                self._arm_releases()
            else:
                self._loop.call_soon_threadsafe(self._arm_releases)
        except RuntimeError:  # loop closed at interpreter exit
            pass

    def _arm_releases(self) -> None:
        self._loop.call_later(RELEASE_DELAY, self._releases_due)

    def _releases_due(self) -> None:
        with self._ref_lock:
            self._release_armed = False
        self._flush_releases()

    def _flush_releases(self) -> None:
        """(On the loop) tell the scheduler of the keys released since the last flush that
        are still unreferenced, except those released after a graph not sent yet: the
        scheduler must never hear of a release before the graph that made its key."""
        with self._ref_lock:
            pending, keep, keys = self._pending_release, [], []
            if not pending:
                return
            first_unsent = min(self._graphs_unsent, default=self._graphs_queued + 1)
            for key, queued in pending:
                if queued >= first_unsent:  # a graph queued before the release is still unsent
                    keep.append((key, queued))
                elif key not in self._refs:
                    keys.append(key)
            self._pending_release = keep
        if keys and self.status == "running":
            self._conn.send({"op": "client-releases-keys", "keys": keys})

    def _send(self, msg: dict) -> None:
        """Send from any thread (the connection lives on the client loop)."""
        if self.status != "running":
            raise SchedulerLostError(f"this client is {self.status}; create a new Client")
        if self._on_loop():
            self._conn.send(msg)
        else:
            self._loop.call_soon_threadsafe(self._conn.send, msg)

    def _send_graph(self, msg: dict) -> None:
        """Send an update-graph from any thread, as a request: when the scheduler rejects
        the graph (a field it cannot accept), the graph's futures fail with the scheduler's
        message instead of waiting forever. Sent in order with ``_send`` and the releases
        queued after it (the request goes out in the same loop callback)."""
        if self.status != "running":
            raise SchedulerLostError(f"this client is {self.status}; create a new Client")
        with self._ref_lock:
            self._graphs_queued += 1
            number = self._graphs_queued
            self._graphs_unsent.add(number)
        if self._on_loop():
            self._request_graph(msg, number)
        else:
            self._loop.call_soon_threadsafe(self._request_graph, msg, number)

    def _request_graph(self, msg: dict, number: int) -> None:
        with self._ref_lock:
            self._graphs_unsent.discard(number)
        try:
            fut = self._conn.request_nowait(msg)
        except Exception as e:  # the connection failed or closed meanwhile
            self._fail_graph(msg["keys"], f"the graph could not be sent to the scheduler: {e}")
        else:
            fut.add_done_callback(lambda f, keys=msg["keys"]: self._graph_answered(f, keys))
        self._flush_releases()  # the releases that waited for it, in the same batch

    def _graph_answered(self, fut: asyncio.Future, keys: list) -> None:
        if fut.cancelled():
            return
        exc = fut.exception()
        if isinstance(exc, RemoteError):  # (a lost connection: ``_lost`` fails every future)
            self._fail_graph(keys, f"the scheduler rejected the graph: {exc}")

    def _fail_graph(self, keys: list, text: str) -> None:
        logger.warning("%s", text)
        blob = pickle.dumps(RemoteError(text))
        for key in keys:
            st = self._states.get(key)
            if st is not None and not st.done():
                st.set_error(blob, b"", text)

    def _on_loop(self) -> bool:
        try:
            return asyncio.get_running_loop() is self._loop
        except RuntimeError:
            return False

    def _want_keys(self, keys: list[str]) -> None:
        self._send({"op": "client-desires-keys", "keys": keys})

    # ------------------------------------------------------------------ submit / map
    def submit(self, func, *args, key: str | None = None, pure: bool = True, workers=None, resources=None,
               priority: int = 0, retries: int = 0, allow_other_workers: bool = False, **kwargs) -> Future:
        """Run ``func(*args, **kwargs)`` on the cluster; returns a Future at once.

        Futures among the arguments are replaced by their results on the worker. Pure
        calls get a deterministic key (the same call twice is one task).

        >>> fut = client.submit(pow, 2, 10)   # doctest: +SKIP
        >>> fut.result()                      # doctest: +SKIP
        1024
        """
        if not callable(func):
            raise TypeError(f"submit needs a callable first argument, not {type(func).__name__}")
        if key is None:
            key = f"{funcname(func)}-{tokenize(func, args, kwargs) if pure else uuid.uuid4().hex}"
        [fut] = self._submit_calls([(key, func, args, kwargs)], workers, resources, priority, retries,
                                   allow_other_workers)
        return fut

    def map(self, func, *iterables, key=None, pure: bool = True, workers=None, resources=None, priority: int = 0,
            retries: int = 0, allow_other_workers: bool = False, **kwargs) -> list[Future]:
        """Apply ``func`` to each element (zip of the iterables); one Future per element.

        >>> futs = client.map(abs, [-1, -2, 3])     # doctest: +SKIP
        >>> client.gather(futs)                     # doctest: +SKIP
        [1, 2, 3]
        """
        if not callable(func):
            raise TypeError(f"map needs a callable first argument, not {type(func).__name__}")
        argsets = list(zip(*iterables))
        if isinstance(key, (list, tuple)):
            if len(key) != len(argsets):
                raise ValueError(f"map got {len(key)} keys for {len(argsets)} calls")
            keys = list(key)
        else:
            name = key or funcname(func)
            if pure:
                ftok = tokenize(func, kwargs)
                keys = [f"{name}-{tokenize(ftok, a)}" for a in argsets]
            else:
                keys = [f"{name}-{uuid.uuid4().hex}" for _ in argsets]
        calls = [(k, func, a, kwargs) for k, a in zip(keys, argsets)]
        return self._submit_calls(calls, workers, resources, priority, retries, allow_other_workers)

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
        gen = next(_generation)
        tasks = []
        futures = []
        workers = [workers] if isinstance(workers, str) else (list(workers) if workers else None)
        seen = set()
        writer = SpecWriter(functions={})
        dumps = writer.dumps
        for i, (key, func, args, kwargs) in enumerate(calls):
            held: list[Future] = []
            task = Task(func, tuple(_futures_to_refs(a, held) for a in args),
                        {k: _futures_to_refs(v, held) for k, v in kwargs.items()})
            futures.append(Future(key, self))
            if key in seen:
                continue
            seen.add(key)
            tasks.append(_task_msg(key, task, [f.key for f in held], (-priority, gen, i),
                                   resources, workers, allow_other_workers, retries, limits, dumps))
        self._send_graph(_graph_msg(tasks, list(seen), writer.functions))
        return futures

    # ------------------------------------------------------------------ collections
    def compute(self, collections, sync: bool = False, optimize_graph: bool = True, priority: int = 0,
                resources=None, workers=None, allow_other_workers: bool = False, retries: int = 0):
        """Compute delayed objects or arrays on the cluster: Futures (or results if ``sync``).

        >>> total = xsched.delayed(sum)([1, 2, 3])       # doctest: +SKIP
        >>> client.compute(total).result()               # doctest: +SKIP
        6
        """
        single = not isinstance(collections, (list, tuple))
        colls = [collections] if single else list(collections)
        futures = self._submit_collections(colls, optimize_graph, priority, resources, workers,
                                           allow_other_workers, retries, persist=False)
        if sync:
            results = self.gather(futures)
            return results[0] if single else results
        return futures[0] if single else futures

    def persist(self, collections, optimize_graph: bool = True, priority: int = 0, resources=None, workers=None,
                allow_other_workers: bool = False, retries: int = 0):
        """Start computing collections and keep their results on the cluster.

        Returns collections of the same kind whose graph holds Futures.

        >>> x = client.persist(x)   # doctest: +SKIP
        """
        single = not isinstance(collections, (list, tuple))
        colls = [collections] if single else list(collections)
        per = self._submit_collections(colls, optimize_graph, priority, resources, workers, allow_other_workers,
                                       retries, persist=True)
        out = []
        for coll, futs in zip(colls, per):
            func, extra = coll.__xsched_postpersist__()
            out.append(func({f.key: f for f in futs}, *extra))
        return out[0] if single else out

    def _submit_collections(self, colls, optimize_graph, priority, resources, workers, allow_other_workers,
                            retries, persist: bool):
        # delayed calls: walked once into columns (see graph.columns); with client-wide
        # options every task would be an entry anyway (and its key a column as well)
        plain = resources is None and not workers and not allow_other_workers and not retries
        cols = columns.walk(colls, fuse=optimize_graph) if plain else None
        if cols is not None and cols.direct:
            return self._submit_columns(cols, colls, priority, persist)
        graph: dict = {} if cols is None else cols.graph()  # (walked already: not again)
        outputs: list = []
        for c in colls:
            if not hasattr(c, "__xsched_graph__"):
                raise TypeError(f"compute/persist take delayed objects or xsched arrays, not {type(c).__name__}; "
                                "use client.submit for plain functions")
            if cols is None:
                graph.update(c.__xsched_graph__())
            outputs.append(c.__xsched_keys__())
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
        workers = [workers] if isinstance(workers, str) else (list(workers) if workers else None)
        held: list[Future] = []
        writer = SpecWriter(functions={})
        with gc_paused():  # a message per task, no cycles: collections would only scan the graph
            tasks = _graph_task_msgs(graph, refs, prio, gen, priority, resources, workers, allow_other_workers,
                                     retries, held, writer)
        wanted = [k for keys in finals for k in keys]
        futures = [[Future(k, self) for k in keys] for keys in finals]
        self._send_graph(_graph_msg(tasks, wanted, writer.functions))
        del held
        if persist:
            return futures
        return [f[0] for f in futures]

    def _submit_columns(self, cols, colls, priority, persist: bool):
        """``_submit_collections`` of plain Delayed objects walked into ``cols``, without
        client-wide options: the graph goes as columns, and the scheduler orders it
        (``scheduler/graph_columns.py``)."""
        if not all(cols.calls):  # (calls kept as given cannot make a cycle; layers can)
            check_acyclic(cols.keys, cols.deps)
        gen = next(_generation)
        held: list[Future] = []
        writer = SpecWriter(functions={})
        with gc_paused():
            columns, tasks = _column_task_msgs(cols, gen, priority, held, writer)
        futures = [Future(c._key, self) for c in colls]
        self._send_graph(_graph_msg(tasks, [c._key for c in colls], writer.functions, columns))
        del held
        return [[f] for f in futures] if persist else futures

    # ------------------------------------------------------------------ gather
    def gather(self, futures, errors: str = "raise"):
        """Results of Futures, in the same nested structure (lists, tuples, dicts).

        >>> client.gather(client.map(abs, [-1, 2]))   # doctest: +SKIP
        [1, 2]
        """
        return self._sync(self._gather(futures, errors))

    async def _gather(self, futures, errors: str = "raise"):
        flat: list[Future] = []
        _collect_futures(futures, flat)
        for f in flat:
            await f._state.await_done()
        bad = [f for f in flat if f.status != "finished"]
        if bad and errors == "raise":
            raise bad[0]._state.error()
        keys = list({f.key for f in flat if f.status == "finished"})
        data = await self._fetch(keys) if keys else {}
        return _pack_results(futures, data)

    async def _gather_one(self, fut: Future, timeout: float | None):
        try:
            await asyncio.wait_for(fut._state.await_done(), timeout)
        except asyncio.TimeoutError:
            raise TimeoutError(f"future {fut.key!r} is still {fut.status} after {timeout}s") from None
        if fut.status != "finished":
            raise fut._state.error()
        return (await self._fetch([fut.key]))[fut.key]

    async def _fetch(self, keys: list[str]) -> dict:
        """Get data of finished keys straight from the workers holding them."""
        out: dict = {}
        remaining = []
        for k in keys:
            st = self._states.get(k)
            if st is not None and st.inline is not None:
                try:
                    out[k] = loads([st.inline])
                    continue
                except Exception:  # noqa: BLE001 - not loadable here: the fetch says why, as ever
                    st.inline = None
            remaining.append(k)
        if not remaining:
            return out
        for attempt in range(20):
            known = ({k: st.holders for k in remaining if (st := self._states.get(k)) is not None and st.holders}
                     if attempt == 0 else {})
            guessed = bool(known) and len(known) == len(remaining)
            if guessed:
                # as the scheduler said when each key finished: no question to ask first (a
                # holder gone since then refuses the connection or lacks the key: then we ask)
                who_has = known
            else:
                reply, _ = await self._conn.request({"op": "who-has", "keys": remaining})
                who_has = reply["who_has"]
            by_worker: dict[str, list[str]] = {}
            for k in remaining:
                holders = who_has.get(k) or []
                if holders:  # keys with no holder now are being recomputed: waited for below
                    by_worker.setdefault(random.choice(holders), []).append(k)
            results = await asyncio.gather(*(self._get_data(w, ks) for w, ks in by_worker.items()),
                                           return_exceptions=True)
            for r in results:
                if isinstance(r, dict):
                    out.update(r)
                elif isinstance(r, BaseException) and not isinstance(r, OSError):
                    raise r  # the worker refused (e.g. unpicklable result) or unpickling failed: no retry heals it
            remaining = [k for k in remaining if k not in out]
            if not remaining:
                return out
            if guessed:
                continue  # the holders had changed: ask the scheduler now
            # data moved or a worker died: wait until the keys are in memory again
            for k in remaining:
                st = self._states.get(k)
                if st is not None:
                    await st.await_done()
                    if st.status != "finished":
                        raise st.error()
            await asyncio.sleep(min(0.05 * 2 ** attempt, 1.0))
        raise CommClosedError(f"could not fetch {remaining[:5]} from any worker")

    async def _get_data(self, worker: str, keys: list[str]) -> dict:
        try:
            return await get_data(self._pool.get(worker), keys, worker, timeout=300)
        except (CommClosedError, asyncio.TimeoutError, ConnectionError):
            await self._pool.drop(worker)
            return {}

    # ------------------------------------------------------------------ scatter
    def scatter(self, data, workers=None, broadcast: bool = False, hash: bool = True):
        """Send local data to workers; returns Futures (a list for a list, a dict for a dict).

        >>> [big] = client.scatter([np.ones(10**7)])     # doctest: +SKIP
        """
        return self._sync(self._scatter(data, workers, broadcast, hash))

    async def _scatter(self, data, workers=None, broadcast=False, hash=True):
        single = not isinstance(data, (list, tuple, dict, set))
        if isinstance(data, dict):
            items = list(data.items())
        else:
            seq = [data] if single else list(data)
            items = [(f"{type(v).__name__}-{tokenize(v) if hash else uuid.uuid4().hex}", v) for v in seq]
        info = await self._scheduler_info()
        addrs = sorted(info["workers"])
        if workers is not None:
            want = [workers] if isinstance(workers, str) else list(workers)
            addrs = [a for a in addrs if a in want or info["workers"][a]["name"] in want
                     or str(info["workers"][a]["name"]) in want]
        if not addrs:
            raise ValueError("scatter found no workers to send the data to; wait_for_workers() first")
        plan: dict[str, dict] = {}
        for i, (k, v) in enumerate(items):
            targets = addrs if broadcast else [addrs[i % len(addrs)]]
            for w in targets:
                plan.setdefault(w, {})[k] = v
        who_has: dict[str, list[str]] = {}
        nbytes: dict[str, int] = {}
        for w, chunk in plan.items():
            reply = await put_data(self._pool.get(w), chunk, w, timeout=300)
            for k, n in reply["nbytes"].items():
                who_has.setdefault(k, []).append(w)
                nbytes[k] = n
        futures = {k: Future(k, self) for k, _ in items}
        await self._conn.request({"op": "scatter-done", "who_has": who_has, "nbytes": nbytes})
        if isinstance(data, dict):
            return futures
        out = [futures[k] for k, _ in items]
        return out[0] if single else out

    # ------------------------------------------------------------------ control
    def cancel(self, futures) -> None:
        """Cancel futures: their tasks stop unless another client wants them."""
        flat: list[Future] = []
        _collect_futures(futures, flat)
        self._cancel(flat)

    def _cancel(self, futures: list[Future]) -> None:
        for f in futures:
            f._state.cancel(f"{f.key} was cancelled")
            with self._ref_lock:  # these handles stay cancelled; a later submission of the key starts afresh
                if self._states.get(f.key) is f._state:
                    del self._states[f.key]
        self._send({"op": "cancel-keys", "keys": [f.key for f in futures]})

    def retry(self, futures) -> None:
        """Run failed futures (and their failed inputs) again."""
        flat: list[Future] = []
        _collect_futures(futures, flat)
        self._retry(flat)

    def _retry(self, futures: list[Future]) -> None:
        for f in futures:
            f._state.reset()
        self._send({"op": "retry-keys", "keys": [f.key for f in futures]})

    def who_can_run(self, futures) -> dict:
        """Why tasks wait: {key: {"state", "workers" that could run it, "reason"}}.

        >>> client.who_can_run(fut)   # doctest: +SKIP
        {'train-1a2b': {'state': 'no-worker', 'workers': [], 'reason': "needs resources {'GPU': 1}; ..."}}
        """
        flat: list[Future] = []
        _collect_futures(futures, flat)
        return self._sync(self._who_can_run([f.key for f in flat]))

    async def _who_can_run(self, keys):
        reply, _ = await self._conn.request({"op": "who-can-run", "keys": keys})
        return reply["result"]

    def who_has(self, futures=None) -> dict:
        """Key -> worker addresses holding it."""
        flat: list[Future] = []
        _collect_futures(futures if futures is not None else [], flat)
        keys = [f.key for f in flat] if futures is not None else list(self._states)
        return self._sync(self._who_has(keys))

    async def _who_has(self, keys):
        reply, _ = await self._conn.request({"op": "who-has", "keys": keys})
        return reply["who_has"]

    # ------------------------------------------------------------------ published datasets
    def publish_dataset(self, *args, name: str | None = None, override: bool = False, **kwargs) -> None:
        """Publish futures or persisted collections under a name, for any client to get.

        ``publish_dataset(x, name="n")`` or ``publish_dataset(n=x, m=y)``. The scheduler
        holds the data (it stays in worker memory after this client leaves) until
        ``unpublish_dataset``. A taken name raises KeyError unless ``override=True``.

        >>> from xsched import Client, LocalCluster
        >>> client = Client(LocalCluster(n_workers=1))                   # doctest: +SKIP
        >>> client.publish_dataset(accounts=client.scatter([1, 2, 3]))  # doctest: +SKIP
        >>> client2 = Client(client.scheduler_address)                  # doctest: +SKIP
        >>> client2.list_datasets()                                      # doctest: +SKIP
        ['accounts']
        >>> client2.gather(client2.get_dataset("accounts"))             # doctest: +SKIP
        [1, 2, 3]
        """
        if args:
            if name is None:
                raise TypeError("publish_dataset(x) needs a name: publish_dataset(x, name='mydata') "
                                "or publish_dataset(mydata=x)")
            if len(args) != 1:
                raise TypeError(f"publish_dataset takes one positional object with name=, got {len(args)}; "
                                "publish several as keywords: publish_dataset(a=x, b=y)")
            kwargs = {name: args[0], **kwargs}
        elif name is not None:
            raise TypeError("publish_dataset(name=...) needs the object to publish: publish_dataset(x, name=...)")
        if not kwargs:
            raise TypeError("publish_dataset needs something to publish: publish_dataset(mydata=x)")
        items = []
        for n, obj in kwargs.items():
            with collecting_keys() as keys:
                frames = dumps(obj)
            items.append((n, sorted(set(keys)), frames))
        return self._sync(self._publish(items, override))

    async def _publish(self, items, override) -> None:
        for n, keys, frames in items:
            reply, _ = await self._conn.request(
                {"op": "publish-dataset", "name": n, "keys": keys, "override": bool(override)}, raw={"data": frames})
            if reply.get("refused"):
                raise KeyError(reply["refused"])

    def unpublish_dataset(self, name: str) -> None:
        """Forget a published dataset; its data is freed unless a client still holds futures to it.

        >>> client.unpublish_dataset("accounts")   # doctest: +SKIP
        """
        return self._sync(self._unpublish(name))

    async def _unpublish(self, name) -> None:
        reply, _ = await self._conn.request({"op": "unpublish-dataset", "name": name})
        if not reply.get("found"):
            raise KeyError(_no_dataset(name, reply.get("names", [])))

    def list_datasets(self) -> list[str]:
        """Names of the published datasets, sorted.

        >>> client.list_datasets()   # doctest: +SKIP
        ['accounts']
        """
        return self._sync(self._list_datasets())

    async def _list_datasets(self) -> list:
        reply, _ = await self._conn.request({"op": "list-datasets"})
        return list(reply["names"])

    _NO_DEFAULT = object()

    def get_dataset(self, name: str, default=_NO_DEFAULT):
        """The published object named ``name``, its futures bound to this client.

        Raises KeyError (naming the published datasets) when there is none, unless
        ``default`` is given.

        >>> x = client.get_dataset("accounts")              # doctest: +SKIP
        >>> client.get_dataset("nothing", default=None)     # doctest: +SKIP
        """
        return self._sync(self._get_dataset(name, default))

    async def _get_dataset(self, name, default=_NO_DEFAULT):
        reply, payload = await self._conn.request({"op": "get-dataset", "name": name})
        if not reply.get("found"):
            if default is not Client._NO_DEFAULT:
                return default
            raise KeyError(_no_dataset(name, reply.get("names", [])))
        frames = unpack_raw(reply, payload)["data"]
        with binding_to(self):
            return loads(frames)

    @property
    def datasets(self) -> "Datasets":
        """The published datasets as a mapping: ``client.datasets["n"]``, ``del``, ``in``, ``list()``.

        >>> client.datasets["accounts"] = futures     # doctest: +SKIP
        >>> list(client.datasets)                     # doctest: +SKIP
        ['accounts']
        """
        return Datasets(self)

    # ------------------------------------------------------------------ uploaded files
    def upload_file(self, path: str, load: bool = True) -> dict:
        """Send a ``.py``, ``.zip`` or ``.egg`` file to every worker, now and when they join.

        A ``.py`` module is imported (reloaded if it was imported before) in each worker;
        a ``.zip``/``.egg`` goes on their ``sys.path``. The scheduler remembers the file
        and sends it to workers that connect later. Raises ``UploadError`` naming each
        worker that could not load it. Returns ``{worker address: None}`` on success.

        >>> with open("mymodule.py", "w") as f:                          # doctest: +SKIP
        ...     _ = f.write("def double(x):\\n    return 2 * x\\n")
        >>> client.upload_file("mymodule.py")                           # doctest: +SKIP
        >>> import mymodule                                              # doctest: +SKIP
        >>> client.submit(mymodule.double, 21).result()                 # doctest: +SKIP
        42
        """
        filename = os.path.basename(path)
        if not filename.endswith((".py", ".zip", ".egg")):
            raise ValueError(f"upload_file takes a .py, .zip or .egg file, not {path!r}")
        with open(path, "rb") as f:
            data = f.read()
        return self._sync(self._upload_file(filename, data))

    async def _upload_file(self, filename: str, data: bytes) -> dict:
        reply, _ = await self._conn.request({"op": "upload-file", "filename": filename}, raw={"data": [data]},
                                            timeout=None)
        results = reply.get("results", {})
        failed = {w: e for w, e in results.items() if e}
        if failed:
            lines = "; ".join(f"{w}: {e}" for w, e in sorted(failed.items()))
            raise UploadError(f"{len(failed)} of {len(results)} workers could not load {filename}: {lines}. "
                              "Fix the file and upload it again (the scheduler keeps the newest copy)")
        return results

    # ------------------------------------------------------------------ run functions
    def run(self, func, *args, workers=None, **kwargs) -> dict:
        """Run ``func`` on every worker (now, outside the task system): {address: result}.

        A ``worker`` parameter in ``func``'s signature receives the live Worker object. A plain
        function runs in a thread of the worker (a slow one never stalls its event loop, so the
        worker keeps serving data and heartbeats); an ``async def`` function runs on the
        worker's loop, which is where code that changes the worker's state belongs:

        >>> async def pause(worker):           # doctest: +SKIP
        ...     worker.set_paused(True)
        >>> client.run(pause)                  # doctest: +SKIP

        >>> import os
        >>> client.run(os.getpid)   # doctest: +SKIP
        {'tcp://127.0.0.1:40211': 1234, 'tcp://127.0.0.1:38003': 1235}
        """
        return self._sync(self._run(func, args, kwargs, workers))

    async def _run(self, func, args, kwargs, workers=None) -> dict:
        info = await self._scheduler_info()
        addrs = sorted(info["workers"])
        if workers is not None:
            want = [workers] if isinstance(workers, str) else list(workers)
            addrs = [a for a in addrs if a in want or str(info["workers"][a]["name"]) in want]

        async def one(addr):
            reply, payload = await self._pool.get(addr).request(
                {"op": "run"}, {"func": func, "args": args, "kwargs": kwargs}, timeout=None)
            return addr, reply, payload

        out = {}
        for addr, reply, payload in await asyncio.gather(*(one(a) for a in addrs)):
            if reply.get("error"):
                raise unpack_exception(reply.get("exception"), reply.get("traceback"), reply.get("text", ""))
            out[addr] = unpack_objects(reply, payload)["result"]
        return out

    def run_on_scheduler(self, func, *args, **kwargs):
        """Run ``func`` in the scheduler process; a ``scheduler`` parameter gets the live Scheduler.

        >>> client.run_on_scheduler(lambda scheduler: len(scheduler.workers))   # doctest: +SKIP
        2
        """
        return self._sync(self._run_on_scheduler(func, args, kwargs))

    async def _run_on_scheduler(self, func, args, kwargs):
        reply, payload = await self._conn.request({"op": "run-on-scheduler"},
                                                  {"func": func, "args": args, "kwargs": kwargs})
        if reply.get("error"):
            raise unpack_exception(reply.get("exception"), reply.get("traceback"), reply.get("text", ""))
        return unpack_objects(reply, payload)["result"]

    # ------------------------------------------------------------------ retirement
    def retire_workers(self, workers=None, close_workers: bool = True, timeout=None) -> dict:
        """Retire workers gracefully: their data is copied to other workers first, nothing is
        recomputed, and they close (exit code 0, so no nanny restarts them).

        ``workers``: addresses or names (one or a list); None retires the idle workers the
        scheduler can spare (it always keeps one). Tasks running on a retiring worker finish
        first; it gets no new ones. ``close_workers=False`` drains them without closing
        (status ``retired``: no tasks, no unique data, safe to stop). Returns, per worker
        address, ``{"status", "moved": {key: destination address}, "reason"}``; status is
        ``retired``, ``drained``, ``cannot-retire`` (no other worker could take its data:
        it keeps it and stays, and ``reason`` says so), ``lost`` (it died meanwhile) or
        ``unknown``.

        >>> from xsched import Client, LocalCluster
        >>> cluster = LocalCluster(n_workers=2, threads_per_worker=1)   # doctest: +SKIP
        >>> client = Client(cluster)                                      # doctest: +SKIP
        >>> futures = client.map(lambda x: x * 2, range(20))              # doctest: +SKIP
        >>> [first, second] = sorted(client.scheduler_info()["workers"]) # doctest: +SKIP
        >>> out = client.retire_workers([first])                          # doctest: +SKIP
        >>> out[first]["status"], set(out[first]["moved"].values()) <= {second}   # doctest: +SKIP
        ('retired', True)
        >>> client.gather(futures)[:3]   # still there, nothing recomputed # doctest: +SKIP
        [0, 2, 4]
        """
        return self._sync(self._retire_workers(_as_list(workers), close_workers, timeout))

    async def _retire_workers(self, workers, close_workers=True, timeout=None) -> dict:
        reply, _ = await self._conn.request(
            {"op": "retire-workers", "workers": workers, "close_workers": bool(close_workers)},
            timeout=None if timeout is None else parse_timedelta(timeout))
        return reply["retired"]

    # ------------------------------------------------------------------ restart
    def restart(self, timeout="60s", environment: str | None = None) -> None:
        """Restart every worker process and forget every task; wait until the workers are back.

        Each worker's nanny starts it afresh (new process, empty memory, modules imported
        again); every future of every client becomes ``cancelled`` with a message saying
        so; published datasets are dropped. Raises ``RestartError`` when fewer workers than
        before return within ``timeout`` (workers without a nanny never do).

        ``environment``: a directory holding a Python environment (a venv or conda env with
        ``bin/python`` and xsched importable) or a ``.tar``/``.tar.gz`` of one. It is
        streamed in chunks over the cluster's connections to one worker per host, checked
        (sha256) and unpacked there; every worker then restarts with that environment's
        Python. Workers that cannot start in it come back in their previous environment
        and ``RestartError`` says which and why.

        >>> from xsched import Client, LocalCluster
        >>> client = Client(LocalCluster(n_workers=2))   # doctest: +SKIP
        >>> fut = client.submit(sum, [1, 2])             # doctest: +SKIP
        >>> client.restart()                             # doctest: +SKIP
        >>> fut.status                                   # doctest: +SKIP
        'cancelled'
        >>> client.restart(environment="/opt/envs/new-numpy")   # doctest: +SKIP
        >>> client.run(lambda: __import__("sys").prefix)        # doctest: +SKIP
        {'tcp://127.0.0.1:40211': '/tmp/.../xsched-environments/3f2a...', ...}
        """
        t = parse_timedelta(timeout)
        if environment is not None:
            environment = os.path.abspath(os.path.expanduser(environment))
            if not (os.path.isdir(environment) or environment.endswith((".tar", ".tar.gz", ".tgz"))):
                raise ValueError(f"restart(environment=...) takes a directory (a venv or conda env) or a .tar/.tar.gz "
                                 f"of one, not {environment!r}")
            if not os.path.exists(environment):
                raise FileNotFoundError(f"restart(environment=...): {environment} does not exist")
        return self._sync(self._restart(t, environment), None if environment else t + 10)

    async def _restart(self, timeout: float, environment: str | None = None) -> None:
        env_id = await self._ship_environment(environment) if environment else None
        reply, _ = await self._conn.request({"op": "restart", "timeout": timeout, "environment": env_id},
                                            timeout=timeout + 5)
        text = ("cancelled by client.restart(): every worker process started afresh and its data is gone; "
                "submit the work again")
        with self._ref_lock:
            states, self._states = self._states, {}
        for st in states.values():
            st.cancel(text)
        if reply.get("error"):
            raise RestartError(reply["error"])

    async def _ship_environment(self, path: str) -> str:
        """Stream an environment to the workers' hosts; its id for the restart request."""
        uid = uuid.uuid4().hex
        reply, _ = await self._conn.request({"op": "environment-start", "uid": uid}, timeout=60)
        _raise_env_errors(reply, path)
        chunks: "queue.Queue" = queue.Queue(maxsize=4)  # bounded: a few chunks in memory at most
        loop = asyncio.get_running_loop()
        producer = loop.run_in_executor(None, pack_chunks, path, chunks)
        digest, total, seq = hashlib.sha256(), 0, 0
        while True:
            chunk = await loop.run_in_executor(None, chunks.get)
            if chunk is None:
                break
            digest.update(chunk)
            total += len(chunk)
            reply, _ = await self._conn.request({"op": "environment-chunk", "uid": uid, "seq": seq},
                                                raw={"data": [chunk]}, timeout=None)
            _raise_env_errors(reply, path)
            seq += 1
        await producer  # re-raises a packing error
        reply, _ = await self._conn.request({"op": "environment-done", "uid": uid, "sha256": digest.hexdigest(),
                                             "nbytes": total}, timeout=None)
        _raise_env_errors(reply, path)
        self.last_environment_bytes = total
        return uid

    # ------------------------------------------------------------------ cluster information
    def scheduler_info(self) -> dict:
        """Scheduler id and address, and per worker: name, pid, nthreads, memory figures.

        >>> client.scheduler_info()["workers"]   # doctest: +SKIP
        """
        return self._sync(self._scheduler_info())

    async def _scheduler_info(self) -> dict:
        reply, _ = await self._conn.request({"op": "scheduler-info"}, timeout=self._timeout)
        self._workers_cache = reply["info"]["workers"]
        return reply["info"]

    def nthreads(self) -> dict:
        """Worker address -> number of threads."""
        return {a: w["nthreads"] for a, w in self.scheduler_info()["workers"].items()}

    def wait_for_workers(self, n_workers: int = 1, timeout=None) -> None:
        """Block until at least ``n_workers`` workers are connected (TimeoutError after ``timeout``).

        >>> client.wait_for_workers(2, timeout=30)   # doctest: +SKIP
        """
        return self._sync(self._wait_for_workers(n_workers, timeout))

    async def _wait_for_workers(self, n_workers, timeout=None):
        await wait_for_workers(self._scheduler_info, n_workers, timeout)

    # ------------------------------------------------------------------ IPython kernels
    def start_ipython_scheduler(self, magic_name: str = "scheduler", qtconsole: bool = False) -> dict:
        """Start an IPython kernel inside the scheduler; ``%scheduler expr`` then runs there.

        >>> info = client.start_ipython_scheduler()      # doctest: +SKIP
        >>> %scheduler scheduler.processing              # doctest: +SKIP
        """
        info = self._sync(self._start_ipython_scheduler())
        if self.asynchronous:
            return info
        return hooks.scheduler_kernel(info, magic_name, qtconsole)  # the magic (xsched.jupyter.magics)

    async def _start_ipython_scheduler(self):
        reply, _ = await self._conn.request({"op": "start-ipython"}, timeout=60)
        return reply["info"]

    def start_ipython_workers(self, workers=None, magic_names=False, qtconsole: bool = False) -> dict:
        """Start an IPython kernel in each worker: {address: connection info}.

        >>> info = client.start_ipython_workers()                  # doctest: +SKIP
        >>> %remote info[list(info)[0]] worker.active              # doctest: +SKIP
        """
        infos = self._sync(self._start_ipython_workers(workers))
        if self.asynchronous:
            return infos
        hooks.worker_kernels(infos, magic_names, qtconsole)  # %remote and the magics (xsched.jupyter.magics)
        return infos

    async def _start_ipython_workers(self, workers=None):
        info = await self._scheduler_info()
        addrs = sorted(info["workers"])
        if workers is not None:
            want = [workers] if isinstance(workers, str) else list(workers)
            addrs = [a for a in addrs if a in want or str(info["workers"][a]["name"]) in want]
        replies = await asyncio.gather(*(self._pool.get(a).request({"op": "start-ipython"}, timeout=60)
                                         for a in addrs))
        return {a: r[0]["info"] for a, r in zip(addrs, replies)}

    # ------------------------------------------------------------------ display
    def __repr__(self) -> str:
        if self.status != "running" or self.asynchronous:
            return f"<Client: {self.scheduler_address!r} status={self.status}>"
        try:
            info = self.scheduler_info()
        except Exception:
            return f"<Client: {self.scheduler_address!r} status={self.status}>"
        ws = info["workers"].values()
        return (f"<Client: {self.scheduler_address!r} workers={len(ws)} threads={sum(w['nthreads'] for w in ws)} "
                f"memory={format_bytes(sum(w['memory_limit'] or 0 for w in ws))}>")

    # The notebook display, the live widget and the figures are xsched.jupyter's: it registers
    # them in xsched.hooks (jupyter/display.py, widgets.py, plots.py), the client imports none.
    def _repr_html_(self) -> str:
        return hooks.client_html(self)

    def _ipython_display_(self, **kwargs):
        """In a Jupyter kernel with ipywidgets: a live widget; elsewhere the static HTML/text."""
        hooks.ipython_display(self)

    def plot_memory(self, **kwargs):
        """A matplotlib Figure of process (RSS) and managed memory per worker over time.

        >>> fig = client.plot_memory()      # doctest: +SKIP
        >>> fig.savefig("memory.png")       # doctest: +SKIP
        """
        return hooks.plot_memory(self, **kwargs)

    def task_stream(self, start=None, **kwargs):
        """A matplotlib Figure: which task ran on which worker, and when (a Gantt chart).

        ``start``: seconds since the epoch, or a duration like "30s" (the last 30 seconds).

        >>> fig = client.task_stream(start="1 minute")    # doctest: +SKIP
        """
        return hooks.task_stream(self, start=start, **kwargs)


Executor = Client


class Datasets(MutableMapping):
    """A client's view of the published datasets (``client.datasets``), read live each time.

    >>> ds = client.datasets; ds["n"] = x; ds["n"]; "n" in ds; del ds["n"]   # doctest: +SKIP
    """

    def __init__(self, client: Client):
        self._client = client

    def __getitem__(self, name):
        return self._client.get_dataset(name)

    def __setitem__(self, name, value):
        self._client.publish_dataset(value, name=name, override=True)

    def __delitem__(self, name):
        self._client.unpublish_dataset(name)

    def __iter__(self):
        return iter(self._client.list_datasets())

    def __len__(self):
        return len(self._client.list_datasets())

    def __contains__(self, name):
        return name in self._client.list_datasets()

    def __repr__(self):
        return f"<Datasets {self._client.list_datasets()}>"


def _raise_env_errors(reply: dict, path: str) -> None:
    errors = reply.get("errors") or {}
    if errors:
        raise RestartError(f"shipping the environment {path} failed on {len(errors)} workers, nothing was "
                           "restarted: " + "; ".join(f"{w}: {e}" for w, e in sorted(errors.items())))


def _no_dataset(name, names) -> str:
    known = ", ".join(repr(n) for n in names) if names else "none"
    return (f"no dataset named {name!r} is published (published: {known}); "
            "publish one with client.publish_dataset(x, name=...)")


def unpack_raw(header: dict, payload: list) -> dict:
    """Payload fields still serialised (frames), by name."""
    return split_objects(header, payload)


def _as_list(workers):
    if workers is None:
        return None
    return [workers] if isinstance(workers, str) else list(workers)


def _graph_msg(tasks: list, keys: list, functions: dict | None = None, columns: dict | None = None) -> dict:
    """An update-graph, with the functions its specs refer to by id and, sent from inside a
    task, that task as ``parent``.

    ``functions`` (function id -> pickled function, ``SpecWriter(functions=)``): a
    100,000-task map of a notebook function sends that function once, not in every spec,
    and the scheduler keeps it once. ``parent``: the scheduler counts what a task launches
    (through ``worker_client()`` or ``get_client()``) in every progress bar that counts the
    task itself, so ``progress(client.submit(fib, 12))`` covers the whole recursion.
    """
    msg = {"op": "update-graph", "tasks": tasks, "keys": keys}
    if columns is not None:  # (the graph as columns: ``_column_task_msgs``)
        msg["columns"] = columns
    if functions:
        msg["functions"] = functions
    parent = task_context.current_key()
    if parent is not None:
        msg["parent"] = parent
    return msg


#: argument types ``_futures_to_refs`` may change: a task with none of them is sent as it is
_MAY_HOLD_FUTURES = frozenset({Future, list, tuple, dict})


def _graph_task_msgs(graph: dict, refs: dict, prio: dict, gen: int, priority, resources, workers,
                     allow_other_workers, retries, held: list, writer: SpecWriter | None = None) -> list:
    """The update-graph entry of every task of ``graph``, with the Futures it holds
    appended to ``held``.

    A task whose arguments hold no Future (none among its positional arguments, no keyword
    arguments: most tasks of a large graph) is pickled as it is, its dependencies taken
    from ``refs`` (``task_dependencies``, as optimising found them); others are copied with
    their Futures replaced by Refs and their dependencies found again. Without annotations
    or client-wide options an entry is just key, spec, dependencies and priority.
    """
    dumps = (writer or SpecWriter()).dumps
    plain = resources is None and workers is None and not allow_other_workers and not retries
    tasks = []
    append = tasks.append
    for key, value in graph.items():
        _graph_task_msg(key, value, refs.get(key), prio.get(key, 0), gen, priority, resources, workers,
                        allow_other_workers, retries, held, dumps, plain, append)
    return tasks


def _column_task_msgs(cols, gen: int, priority, held: list, writer: SpecWriter) -> tuple[dict, list]:
    """The columns of an update-graph (``schemas.COLUMNS``) of a graph walked into columns
    (``graph.columns``), submitted without client-wide options, and the task entries of
    the tasks they do not carry.

    A call kept as given, without annotations, is a column with its spec written straight
    from its arguments; every other task is made into its graph value and goes as an
    entry (``_graph_task_msg``, its priority without the order the scheduler appends),
    its column a key with a null spec.
    """
    dumps, flat = writer.dumps, writer.dumps_flat
    keys, values, calls, refs = cols.keys, cols.values, cols.calls, cols.refs
    ref_key = _delayed_key
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
                        None, None, False, 0, held, dumps, True, append)
    return {"keys": keys, "specs": specs, "deps": cols.deps, "priority": [-priority, gen]}, tasks


_delayed_key = operator.attrgetter("_key")


def _graph_task_msg(key, value, refs, prio, gen, priority, resources, workers, allow_other_workers, retries,
                    held, dumps, plain, append) -> None:
    """Append the update-graph entry of one task (see ``_graph_task_msgs``)."""
    deps = None
    if isinstance(value, Task):
        if type(value) is Task and not value.kwargs:
            for a in value.args:
                if type(a) in _MAY_HOLD_FUTURES:
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
            value = Task(value.func, tuple(_futures_to_refs(a, held) for a in value.args),
                         {k: _futures_to_refs(v, held) for k, v in value.kwargs.items()}, value.annotations)
    elif isinstance(value, Future):
        held.append(value)
        if value.key == key:
            return
        value = Task(_identity, (Ref(value.key),))
    else:
        value = Task(_identity, (_futures_to_refs(value, held),))
    if deps is None:
        deps = sorted(dependencies(value))
    ann = value.annotations or {}
    user_prio = ann.get("priority", priority)
    append(_task_msg(
        key, value, deps, (-user_prio, gen) if prio is None else (-user_prio, gen, prio),
        resources if resources is not None else ann.get("resources"),
        workers if workers is not None else _as_list(ann.get("workers")),
        allow_other_workers or ann.get("allow_other_workers", False),
        retries or ann.get("retries", 0), ann.get("limits"), dumps,
    ))


def _task_msg(key, task, deps, priority, resources, workers, allow_other_workers, retries, limits,
              dumps=dumps_task) -> dict:
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


def _futures_to_refs(obj, held: list):
    typ = type(obj)
    if typ is Future:
        held.append(obj)
        return Ref(obj.key)
    if typ is list:
        return [_futures_to_refs(o, held) for o in obj]
    if typ is tuple:
        return tuple(_futures_to_refs(o, held) for o in obj)
    if typ is dict:
        return {k: _futures_to_refs(v, held) for k, v in obj.items()}
    return obj


def _refs_like(keys):
    if isinstance(keys, str):
        return Ref(keys)
    return [_refs_like(k) for k in keys]


def _collect_futures(obj, out: list) -> None:
    if isinstance(obj, Future):
        out.append(obj)
    elif isinstance(obj, (list, tuple, set)):
        for o in obj:
            _collect_futures(o, out)
    elif isinstance(obj, dict):
        for o in obj.values():
            _collect_futures(o, out)


def _pack_results(obj, data: dict):
    if isinstance(obj, Future):
        return data.get(obj.key)
    if isinstance(obj, list):
        return [_pack_results(o, data) for o in obj]
    if isinstance(obj, tuple):
        return tuple(_pack_results(o, data) for o in obj)
    if isinstance(obj, dict):
        return {k: _pack_results(v, data) for k, v in obj.items()}
    return obj


_worker_client_lock = threading.Lock()


def get_client() -> Client:
    """The client to use here: inside a task, one connected from this worker; else the default.

    Inside a task every call returns the same client of the worker process (made on first
    use). To wait for the tasks it launches without holding a thread, use
    ``worker_client()`` (or ``secede()``/``rejoin()``).

    >>> from xsched import get_client
    >>> def task():
    ...     client = get_client()          # launch more tasks from a task
    ...     return client.submit(abs, -1).result()
    """
    worker = getattr(task_context.thread_state, "worker", None)
    if worker is not None:
        with _worker_client_lock:  # seceded tasks run side by side: make one client only
            c = worker.extensions.get("client")
            if c is None or c.status != "running":
                c = Client(worker.scheduler_address, security=worker.security, set_as_default=False,
                           name=f"worker-{worker.name}")
                worker.extensions["client"] = c
        return c
    c = default_client()
    if c is None:
        raise ValueError("no xsched Client is running: create one with Client(...) or Client(LocalCluster())")
    return c


# Future() without a client, and Futures unpickled in a task, ask for this (client/future.py
# is imported by this module, so it looks get_client up instead of importing it).
hooks.get_client.register(get_client)
