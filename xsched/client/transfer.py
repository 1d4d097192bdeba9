"""Data out and in: gather results from the workers that hold them, scatter local data to workers.

Results never pass through the scheduler::

    gather(futures) -> small results: came inline with key-in-memory, loaded here
                    -> others: get-data from a worker the scheduler named when the key
                       finished (or asks it now: who-has) ----> worker (zero-copy frames)
    scatter(data)   -> put-data ----> workers (large buffers on the bulk side channel);
                       scatter-done ----> scheduler (where the new keys live)

A mixin of ``Client`` (``client.py``).
"""

from __future__ import annotations

import asyncio
import random
import threading
import uuid
from collections.abc import Iterator

from ..comm import CommClosedError
from ..protocol import ops
from ..protocol.bulk import get_data, put_data
from ..protocol.serialize import loads
from ..protocol.update_graph import worker_list, workers_named
from ..tokenize import tokenize
from .actors import Actor
from .dual import sync_or_async
from .future import Future, collect_futures
from .rpc import wait_for_workers

__all__ = ["TransferMixin"]


class TransferMixin:
    """gather and scatter, and the fetching of results they and ``Future.result`` share."""

    @sync_or_async
    async def gather(self, futures, errors: str = "raise", direct=None):
        """Results of Futures, in the same nested structure (lists, tuples, dicts, sets).

        ``errors="raise"``: the first future to fail raises its exception as soon as it
        fails; ``"skip"``: failed futures are left out of their list, tuple, set or dict.
        ``direct=`` is taken as dask's and changes nothing: results always come straight
        from the workers that hold them, never through the scheduler.

        >>> client.gather(client.map(abs, [-1, 2]))
        [1, 2]
        >>> client.gather({client.submit(abs, -3), client.submit(abs, 4)})
        {3, 4}
        >>> client.gather([client.submit(abs, -1), client.submit(abs, "x")], errors="skip")
        [1]
        """
        if errors not in ("raise", "skip"):
            raise ValueError(f"gather: errors must be 'raise' or 'skip', not {errors!r}")
        flat: list[Future] = []
        collect_futures(futures, flat)
        states = list({id(f._state): f._state for f in flat}.values())
        if errors == "raise":
            await _first_failure(states)
        else:
            for st in states:
                await st.await_done()
        bad = {f.key for f in flat if f.status != "finished"}
        keys = list({f.key for f in flat if f.status == "finished"})
        data = await self._fetch(keys) if keys else {}
        return _pack_results(futures, data, bad)

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
                    if type(out[k]) is Actor:
                        out[k]._bind(self)
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
                reply, _ = await self._conn.request({"op": ops.WHO_HAS, "keys": remaining})
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
                return _bound(out, self)
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

    @sync_or_async
    async def scatter(self, data, workers=None, broadcast: bool = False, direct=None, hash: bool = True,
                      timeout=None):
        """Send local data to workers; returns Futures (a list for a list, a tuple, a set or an
        iterator such as a generator; a dict for a dict; one Future for anything else).

        ``workers=``: an address or name, or a list of them, to send to. ``direct=`` is
        taken as dask's and changes nothing: the data always goes straight from this
        client to the workers, never through the scheduler. ``timeout``: how long to wait
        for a first worker when none is connected (TimeoutError then); without it, no
        worker is a ValueError at once.

        >>> import numpy as np
        >>> [big] = client.scatter([np.ones(10**6)])     # sent once; tasks take the future
        >>> big
        <Future: finished, key: ndarray-...>
        >>> client.submit(np.sum, big).result()
        np.float64(1000000.0)
        >>> client.gather(client.scatter(x * x for x in range(3)))
        [0, 1, 4]
        """
        if isinstance(data, Iterator):  # (a generator cannot be pickled: its items can)
            data = list(data)
        single = not isinstance(data, (list, tuple, dict, set, frozenset))
        if isinstance(data, dict):
            items = list(data.items())
        else:
            seq = [data] if single else list(data)
            items = [(f"{type(v).__name__}-{tokenize(v) if hash else uuid.uuid4().hex}", v) for v in seq]
            with self._ref_lock:  # released lately: the scheduler may be freeing the old copy on a worker
                items = [(f"{type(v).__name__}-{uuid.uuid4().hex}" if k in self._released_lately else k, v)
                         for k, v in items]
        # held from now on (no await since the check above: releases are sent on this loop),
        # so a release of the same key still waiting to be sent is not sent
        futures = {k: Future(k, self) for k, _ in items}
        want = worker_list(workers)
        info = await self._scheduler_info()
        if not info["workers"] and timeout is not None:
            await wait_for_workers(self._scheduler_info, 1, timeout)
            info = await self._scheduler_info()
        connected = sorted(info["workers"])
        if not connected:
            raise ValueError("scatter found no workers to send the data to; wait_for_workers() first, or pass "
                             "timeout= to wait for one")
        addrs = connected
        if want is not None:
            names = {a: info["workers"][a]["name"] for a in connected}
            addrs = workers_named(info["workers"], want)
            if not addrs:
                known = ", ".join(f"{a} (name {names[a]!r})" for a in connected[:20])
                raise ValueError(f"scatter: no connected worker matches workers={want!r:.200}; the "
                                 f"{len(connected)} connected: {known}{', ...' if len(connected) > 20 else ''}")
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
        await self._conn.request({"op": ops.SCATTER_DONE, "who_has": who_has, "nbytes": nbytes})
        for k, v in items:  # in memory now: the scheduler says so only of keys new to it
            state = futures[k]._state
            if not state.done():
                state.finish(type(v).__name__)
        if isinstance(data, dict):
            return futures
        out = [futures[k] for k, _ in items]
        return out[0] if single else out


def _bound(data: dict, client) -> dict:
    """Actor handles among fetched results call through the client that fetched them."""
    for v in data.values():
        if type(v) is Actor:
            v._bind(client)
    return data


async def _first_failure(states: list) -> None:
    """Wait for every state to be done, raising the first failure as it happens (a
    callback per state, no task: gather of many futures is a hot path)."""
    if not states:
        return
    loop = asyncio.get_running_loop()
    woken = asyncio.Event()
    lock = threading.Lock()
    left, failed = [len(states)], []

    def settled(st) -> None:  # (on the loop, or on a thread that cancels)
        with lock:
            left[0] -= 1
            if st.status != "finished":
                failed.append(st)
            wake = bool(failed) or left[0] == 0
        if wake:
            try:
                on_loop = asyncio.get_running_loop() is loop
            except RuntimeError:
                on_loop = False
            if on_loop:
                woken.set()
            elif not loop.is_closed():
                loop.call_soon_threadsafe(woken.set)

    for st in states:
        st.add_callback(lambda st=st: settled(st))
    await woken.wait()
    if failed:
        raise failed[0].error()


def _pack_results(obj, data: dict, bad: set = frozenset()):
    """``obj`` with each Future replaced by its result; those whose keys are in ``bad``
    (failed, ``errors="skip"``) left out of their container."""
    if isinstance(obj, Future):
        return data.get(obj.key)
    kept = (lambda o: not (isinstance(o, Future) and o.key in bad)) if bad else (lambda o: True)
    if isinstance(obj, list):
        return [_pack_results(o, data, bad) for o in obj if kept(o)]
    if isinstance(obj, tuple):
        return tuple(_pack_results(o, data, bad) for o in obj if kept(o))
    if isinstance(obj, dict):
        return {k: _pack_results(v, data, bad) for k, v in obj.items() if kept(v)}
    if isinstance(obj, (set, frozenset)):
        return type(obj)(_pack_results(o, data, bad) for o in obj if kept(o))
    return obj
