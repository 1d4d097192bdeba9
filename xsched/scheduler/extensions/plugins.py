"""``client.register_plugin``: code users give the workers, their nannies and the scheduler.

The ``plugins`` scheduler extension (see ``base.py`` for the protocol; the plugin classes
are in ``xsched/plugins.py``, the worker's and the nanny's side in ``worker/plugins.py``).

Data flow::

    worker and nanny plugins: kept as the client pickled them (frames), never opened here
    client --register-worker-plugin {name, nanny, idempotent, owned} + plugin frames--> PluginsExtension
        remembers name -> frames, a token naming this version, and the client (to tell it of
        failures later); the same name again replaces it (or, idempotent, keeps the old one)
        --plugin-add {name, uid, nanny, token} + frames--> every connected worker
        <--plugin-done {uid, name, status, error, exception, traceback}-- each worker
        reply {results: {worker: outcome}} once every worker answered (or left)
    register-worker -> add_worker hook: every kept plugin goes to the new worker before any task
        (uid ""); a setup that fails there -> a warning to the client that registered it,
        naming the plugin and the worker
    a worker under a nanny, before it registers --get-nanny-plugins {protocol, version}-->
        check_peer (protocol/versions.py): another protocol is refused, naming both versions,
        before any plugin goes out -> {plugins: [[name, token, frames]], protocol, version}:
        its nanny sets them up before the worker starts for good
    client --unregister-worker-plugin {name, nanny}--> forgotten --plugin-remove--> teardown
    a plugin registered with ``owned`` (client.forward_logging's) lives as long as its client:
        the client goes (closes, or its connection drops) -> remove_client hook -> forgotten
        --plugin-remove--> teardown on every worker

    scheduler plugins: unpickled here (from an authenticated client, as run_on_scheduler's functions)
    client --register-scheduler-plugin {name, idempotent} + plugin--> start(scheduler) awaited;
        kept if it returned (an error goes back to the client), the old one of that name closed
    its hooks: transition (a hook in the state machine, attached while some plugin has one),
        update_graph, add_worker, remove_worker, add_client, remove_client (the server's
        extension hooks) -> one queue, in the order of the events, O(1) each -> flushed at
        the next turn of the loop: each plugin's hook called outside the state machine, so a
        plugin may use the scheduler freely; a coroutine a hook returns runs as a task here;
        a hook that raises is logged (once per plugin and hook) and the others go on
    client --unregister-scheduler-plugin {name}--> close(); Scheduler.close -> close() of each
"""

from __future__ import annotations

import asyncio
import hashlib
import inspect
import logging
import uuid
from collections import deque
from dataclasses import dataclass

from ...background import Background
from ...errors import pack_exception
from ...plugins import SchedulerPlugin, hook_caller
from ...protocol import ops
from ...protocol.messages import split_objects, unpack_objects
from ...protocol.serialize import frame_bytes
from ...protocol.versions import announce, check_peer
from .base import SchedulerExtension

logger = logging.getLogger("xsched.scheduler.extensions.plugins")

__all__ = ["PluginsExtension", "Kept", "SCHEDULER_HOOKS", "token_of"]

#: hook of a scheduler plugin -> the keyword arguments it may be given (left out when it does not declare them)
SCHEDULER_HOOKS: dict[str, tuple[str, ...]] = {
    "transition": ("stimulus_id",),
    "update_graph": ("keys", "client", "tasks", "stimulus_id"),
    "add_worker": (),
    "remove_worker": ("reason",),
    "add_client": (),
    "remove_client": (),
}


def token_of(frames) -> str:
    """A name for one version of a pickled plugin (a nanny compares it with the one it has).

    >>> token_of([b"abc"]) == token_of([b"ab", b"c"]), len(token_of([b"x"]))
    (False, 32)
    """
    h = hashlib.sha256()
    for f in frames:
        h.update(len(f).to_bytes(8, "little"))
        h.update(f)
    return h.hexdigest()[:32]


@dataclass
class Kept:
    """A worker or nanny plugin as the scheduler keeps it: its frames, unopened.

    >>> Kept([b"x"], token_of([b"x"]), "client-1").client
    'client-1'
    """

    frames: list
    token: str
    client: str | None  # who registered it: told when a worker joining later fails to set it up
    owned: bool = False  # unregistered when that client goes


class _Wait:
    """The answers of the workers to one plugin-add or plugin-remove."""

    __slots__ = ("future", "pending", "results")

    def __init__(self, future: asyncio.Future, pending: set):
        self.future, self.pending, self.results = future, pending, {}

    def answered(self, address: str, result: dict | None) -> None:
        if result is not None:
            self.results[address] = result
        self.pending.discard(address)
        if not self.pending and not self.future.done():
            self.future.set_result(None)


class PluginsExtension(SchedulerExtension):
    """Worker and nanny plugins kept for every worker; scheduler plugins run here.

    ``worker_plugins`` and ``nanny_plugins``: name -> :class:`Kept`; ``plugins``: the
    scheduler plugins, name -> plugin (also ``scheduler.plugins``).

    >>> from xsched import SchedulerPlugin
    >>> client.register_plugin(SchedulerPlugin(), name="pluginsextension-audit")
    >>> client.run_on_scheduler(lambda scheduler: "pluginsextension-audit" in scheduler.plugins)
    True
    >>> client.unregister_scheduler_plugin("pluginsextension-audit")
    """

    name = "plugins"

    def __init__(self, scheduler, timeout: float = 600.0):
        super().__init__(scheduler)
        self.timeout = timeout  # how long a registration waits for the workers' setups
        self.worker_plugins: dict[str, Kept] = {}  # name -> kept, in registration order
        self.nanny_plugins: dict[str, Kept] = {}
        self.plugins: dict[str, object] = {}  # the scheduler plugins: name -> plugin (scheduler.plugins)
        self._hooks: dict[str, dict[str, object]] = {hook: {} for hook in SCHEDULER_HOOKS}
        self._pending: deque = deque()  # (hook, args, kwargs) for the scheduler plugins, in event order
        self._flush_handle = None
        self._failing: set = set()  # (plugin, hook) that raised: logged once
        self._waits: dict[str, _Wait] = {}  # uid -> the workers' answers
        self._background = Background("scheduler plugins")

    def __repr__(self) -> str:
        return (f"<PluginsExtension worker={list(self.worker_plugins)} nanny={list(self.nanny_plugins)} "
                f"scheduler={list(self.plugins)}>")

    # ------------------------------------------------------------------ worker and nanny plugins
    def _table(self, nanny: bool) -> dict[str, Kept]:
        return self.nanny_plugins if nanny else self.worker_plugins

    async def _op_register_worker_plugin(self, peer, h, payload):
        client = self.scheduler._client_of(peer)
        name, nanny = h["name"], bool(h.get("nanny"))
        table = self._table(nanny)
        if h.get("idempotent") and name in table:
            return {"results": {}, "kept": True}
        frames = [frame_bytes(f) for f in split_objects(h, payload).get("plugin", [])]
        table.pop(name, None)
        table[name] = kept = Kept(frames, token_of(frames), client, owned=bool(h.get("owned")))
        results = await self._ask_workers({"op": ops.PLUGIN_ADD, "name": name, "nanny": nanny, "token": kept.token},
                                          {"plugin": frames})
        return {"results": results}

    async def _op_unregister_worker_plugin(self, peer, h, payload):
        self.scheduler._client_of(peer)
        name, nanny = h["name"], h.get("nanny")
        if nanny is None:  # whichever has it: the workers' first
            nanny = name not in self.worker_plugins and name in self.nanny_plugins
        table = self._table(bool(nanny))
        if name not in table:
            kind = "nanny" if nanny else "worker"
            raise ValueError(f"there is no {kind} plugin named {name!r} to unregister; registered: "
                           f"{sorted(table) or 'none'}")
        del table[name]
        results = await self._ask_workers({"op": ops.PLUGIN_REMOVE, "name": name, "nanny": bool(nanny)})
        return {"results": results}

    def _op_get_nanny_plugins(self, peer, h, payload):
        """(From a worker under a nanny, before it registers.) A worker of another protocol is
        refused here, as at its registration: its nanny must not set up plugins it cannot read."""
        check_peer(h, "worker asking for its nanny's plugins")
        return {"plugins": [[name, k.token, k.frames] for name, k in self.nanny_plugins.items()], **announce()}

    async def _ask_workers(self, msg: dict, raw: dict | None = None) -> dict:
        """Send ``msg`` (with a fresh uid) to every connected worker; {worker: its outcome}
        once each answered, left (``skipped``) or did not answer within ``timeout``."""
        uid = uuid.uuid4().hex
        workers = set(self.scheduler.worker_peer)
        wait = self._waits[uid] = _Wait(asyncio.get_running_loop().create_future(), set(workers))
        for addr in workers:
            self.scheduler.listener.send(self.scheduler.worker_peer[addr], dict(msg, uid=uid), raw=raw)
        try:
            if workers:
                await asyncio.wait_for(self._until_answered(wait), self.timeout)
        except asyncio.TimeoutError:
            for addr in wait.pending:
                wait.results[addr] = {"status": "error", "error": f"no answer within {self.timeout:.0f}s"}
        finally:
            self._waits.pop(uid, None)
        for addr in workers - set(wait.results):
            wait.results[addr] = {"status": "skipped", "error": "the worker left"}
        return wait.results

    async def _until_answered(self, wait: _Wait) -> None:
        while wait.pending:
            for addr in wait.pending - set(self.scheduler.worker_peer):  # left meanwhile: will not answer
                wait.answered(addr, None)
            if not wait.pending:
                break
            try:
                await asyncio.wait_for(asyncio.shield(wait.future), 0.5)
            except asyncio.TimeoutError:
                continue

    def _op_plugin_done(self, peer, h, payload):
        addr = self.scheduler.peer_worker.get(peer)
        if addr is None:
            return None
        result = {k: h.get(k) for k in ("status", "error", "exception", "traceback") if h.get(k) is not None}
        result.setdefault("status", "OK")
        wait = self._waits.get(h.get("uid") or "")
        if wait is not None:
            wait.answered(addr, result)
        elif result["status"] == "error":  # sent to a worker as it joined: nobody waits for it
            self._failed_on_join(addr, h.get("name") or "?", result.get("error") or "")
        return None

    def _failed_on_join(self, address: str, name: str, error: str) -> None:
        logger.warning("plugin %r failed in setup on worker %s (as it joined): %s", name, address, error)
        kept = self.worker_plugins.get(name) or self.nanny_plugins.get(name)
        if kept is not None and kept.client is not None:
            self.scheduler.send_to_client(kept.client, {
                "op": ops.WARNING, "text": f"plugin {name!r} failed in setup on worker {address}, which joined "
                                           f"after it was registered: {error} (the worker runs on without it)"})

    def add_worker(self, address: str, peer: bytes) -> None:
        """A worker registers: every kept plugin goes to it before any task."""
        for nanny, table in ((False, self.worker_plugins), (True, self.nanny_plugins)):
            for name, kept in table.items():
                self.scheduler.listener.send(peer, {"op": ops.PLUGIN_ADD, "name": name, "uid": "", "nanny": nanny,
                                                    "token": kept.token}, raw={"plugin": kept.frames})
        self._queue("add_worker", (self.scheduler, address))

    def remove_worker(self, address: str, reason: str) -> None:
        """A worker left: what waits for its answer stops waiting for it."""
        for wait in list(self._waits.values()):
            wait.answered(address, None)
        self._queue("remove_worker", (self.scheduler, address), {"reason": reason})

    # ------------------------------------------------------------------ scheduler plugins
    async def _op_register_scheduler_plugin(self, peer, h, payload):
        self.scheduler._client_of(peer)
        name = h["name"]
        if h.get("idempotent") and name in self.plugins:
            return {"kept": True}
        try:
            plugin = unpack_objects(h, payload)["plugin"]
            start = hook_caller(plugin, "start", SchedulerPlugin)
            result = start(self.scheduler) if start is not None else None
            if inspect.isawaitable(result):
                await result
        except asyncio.CancelledError:
            raise
        except BaseException as e:  # noqa: BLE001 - raised again in the client, naming the plugin
            blob, tb, text = pack_exception(e)
            logger.warning("scheduler plugin %r failed to start: %s", name, text)
            return {"error": True, "exception": blob, "traceback": tb, "text": text}
        old = self._forget(name)
        self.plugins[name] = plugin
        for hook, optional in SCHEDULER_HOOKS.items():
            fn = hook_caller(plugin, hook, SchedulerPlugin, optional)
            if fn is not None:
                self._hooks[hook][name] = fn
        self._observe()
        if old is not None:
            await self._close_plugin(name, old)
        return {}

    async def _op_unregister_scheduler_plugin(self, peer, h, payload):
        self.scheduler._client_of(peer)
        name = h["name"]
        if name not in self.plugins:
            raise ValueError(f"there is no scheduler plugin named {name!r} to unregister; registered: "
                           f"{sorted(self.plugins) or 'none'}")
        await self._close_plugin(name, self._forget(name))
        return {}

    def _forget(self, name: str):
        plugin = self.plugins.pop(name, None)
        for hooks in self._hooks.values():
            hooks.pop(name, None)
        self._failing = {f for f in self._failing if f[0] != name}
        self._observe()
        return plugin

    async def _close_plugin(self, name: str, plugin) -> None:
        try:
            close = hook_caller(plugin, "close", SchedulerPlugin)
            result = close() if close is not None else None
            if inspect.isawaitable(result):
                await asyncio.wait_for(result, 30)
        except Exception:  # noqa: BLE001 (asyncio.TimeoutError included)
            logger.exception("scheduler plugin %r: close failed", name)

    def _observe(self) -> None:
        """Hear the state machine's transitions exactly while some plugin has a transition hook
        (no cost per transition otherwise)."""
        hooks = self.scheduler.state.transition_hooks
        attached = self._on_transition in hooks
        if self._hooks["transition"] and not attached:
            hooks.append(self._on_transition)
        elif not self._hooks["transition"] and attached:
            hooks.remove(self._on_transition)

    def _on_transition(self, ts, start, finish) -> None:
        """(Inside the state machine: only noted here.)"""
        log = self.scheduler.state.log
        sid = log[-1][3] if log and log[-1][0] == ts.key else None
        self._pending.append(("transition", (ts.key, start, finish), {"stimulus_id": sid}))
        self._schedule_flush()

    def update_graph(self, graph) -> None:
        """A client's graph, about to reach the state machine (the server's hook)."""
        if self._hooks["update_graph"]:
            self._queue("update_graph", (self.scheduler,), {
                "keys": set(graph.keys), "client": graph.client, "tasks": [t.key for t in graph.tasks],
                "stimulus_id": graph.stimulus_id})

    def add_client(self, client: str) -> None:
        self._queue("add_client", (self.scheduler, client))

    def remove_client(self, client: str) -> None:
        """A client went away: the plugins it owned are unregistered (torn down on the workers)."""
        for nanny, table in ((False, self.worker_plugins), (True, self.nanny_plugins)):
            for name in [n for n, k in table.items() if k.owned and k.client == client]:
                del table[name]
                self._spawn(self._remove_owned(name, nanny, client))
        self._queue("remove_client", (self.scheduler, client))

    def _spawn(self, coro) -> None:
        try:
            asyncio.get_running_loop()
        except RuntimeError:  # no loop (a test driving the extension by hand): nothing to tell the workers
            coro.close()
            return
        self._background.spawn(coro)

    async def _remove_owned(self, name: str, nanny: bool, client: str) -> None:
        results = await self._ask_workers({"op": ops.PLUGIN_REMOVE, "name": name, "nanny": nanny})
        failed = {w: r.get("error") for w, r in results.items() if r.get("status") == "error"}
        if failed:
            logger.warning("plugin %r of client %s, which left: teardown failed on %s", name, client,
                           "; ".join(f"{w}: {e}" for w, e in sorted(failed.items())))

    def _queue(self, hook: str, args: tuple, kwargs: dict | None = None) -> None:
        if self._hooks[hook]:
            self._pending.append((hook, args, kwargs or {}))
            self._schedule_flush()

    def _schedule_flush(self) -> None:
        if self._flush_handle is not None:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # no loop (a test driving the extension by hand): flush() when it likes
            return
        self._flush_handle = loop.call_soon(self.flush)

    def flush(self) -> int:
        """Call the scheduler plugins' hooks for what was queued, in order; how many events."""
        self._flush_handle = None
        n = 0
        while self._pending:
            hook, args, kwargs = self._pending.popleft()
            n += 1
            for name, fn in list(self._hooks[hook].items()):
                try:
                    result = fn(*args, **kwargs)
                    if inspect.isawaitable(result):
                        self._background.spawn(self._await_hook(name, hook, result))
                except Exception:  # noqa: BLE001 - a plugin never breaks the scheduler
                    self._hook_failed(name, hook)
        return n

    async def _await_hook(self, name: str, hook: str, awaitable) -> None:
        try:
            await awaitable
        except asyncio.CancelledError:
            raise
        except Exception:  # noqa: BLE001
            self._hook_failed(name, hook)

    def _hook_failed(self, name: str, hook: str) -> None:
        if (name, hook) not in self._failing:
            self._failing.add((name, hook))
            logger.exception("scheduler plugin %r: %s failed (logged once; the plugin stays)", name, hook)

    async def close(self) -> None:
        """The scheduler closes: what is queued is told, then every scheduler plugin closed."""
        if self._flush_handle is not None:
            self._flush_handle.cancel()
        self.flush()
        for name in list(self.plugins):
            await self._close_plugin(name, self._forget(name))
        await self._background.aclose(timeout=5)
        super().close()

    OPS = {
        ops.REGISTER_WORKER_PLUGIN: _op_register_worker_plugin,
        ops.UNREGISTER_WORKER_PLUGIN: _op_unregister_worker_plugin,
        ops.GET_NANNY_PLUGINS: _op_get_nanny_plugins,
        ops.PLUGIN_DONE: _op_plugin_done,
        ops.REGISTER_SCHEDULER_PLUGIN: _op_register_scheduler_plugin,
        ops.UNREGISTER_SCHEDULER_PLUGIN: _op_unregister_scheduler_plugin,
    }
