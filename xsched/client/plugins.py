"""Plugins from a client: ``register_plugin`` (and dask's older ``register_worker_plugin`` and
``register_scheduler_plugin``), ``unregister_worker_plugin``, ``unregister_scheduler_plugin``.

What the plugins are and when their hooks run: ``xsched/plugins.py``. The way there::

    register_plugin(WorkerPlugin or NannyPlugin) --register-worker-plugin + pickled plugin-->
        scheduler --> every worker (a nanny plugin: on to each worker's nanny), now and as
        they join <-- {results: {worker: outcome}}: {worker: "OK" | "skipped: why"}, or
        PluginError naming the plugin and the workers where its setup raised
    register_plugin(SchedulerPlugin) --register-scheduler-plugin + pickled plugin--> started
        in the scheduler; PluginError if its start raised
    unregister_worker_plugin(name) / unregister_scheduler_plugin(name) --> teardown / close

The plugin is pickled in the caller's thread, so an unpicklable one raises there.

A mixin of ``Client`` (``client.py``), with the error its methods raise.
"""

from __future__ import annotations

import uuid

from ..errors import XschedError, unpack_exception
from ..plugins import kind_of
from ..protocol import ops
from ..protocol.serialize import dumps
from .dual import sync_or_async

__all__ = ["PluginsMixin", "PluginError"]


class PluginError(XschedError, RuntimeError):
    """A plugin raised where it runs: ``setup`` on workers or nannies, ``start`` on the
    scheduler. The message names the plugin and each place; ``errors`` maps each place
    (a worker's address, or ``"scheduler"``) to the exception raised there, which carries
    its remote traceback; the first is also this error's ``__cause__``.

    >>> e = PluginError("bad", "audit", {"scheduler": ValueError("no")})
    >>> e.plugin, type(e.errors["scheduler"]).__name__
    ('audit', 'ValueError')
    """

    def __init__(self, message: str, plugin: str, errors: dict):
        super().__init__(message)
        self.plugin = plugin
        self.errors = errors


class PluginsMixin:
    """register_plugin (register_worker_plugin, register_scheduler_plugin), unregister_worker_plugin,
    unregister_scheduler_plugin."""

    @sync_or_async
    def register_plugin(self, plugin, name: str | None = None, idempotent: bool | None = None):
        """Register a plugin (``WorkerPlugin``, ``SchedulerPlugin`` or ``NannyPlugin``) with
        the cluster: it runs in every worker process (or in the scheduler, or in every nanny)
        as ``xsched.plugins`` describes, and in every worker that joins later.

        ``name``: default ``plugin.name`` if it has one, else the class name and a random
        suffix. A plugin registered under a name already taken replaces the old one (torn
        down first), unless ``idempotent`` (default: ``plugin.idempotent``), which keeps the
        old one and does nothing.

        Returns, for a worker or nanny plugin, ``{worker address: "OK"}`` (``"skipped: ..."``
        for a nanny plugin on a worker without a nanny); for a scheduler plugin, None. Raises
        ``PluginError`` naming the plugin and the workers where ``setup`` raised (those
        workers run on without it), or the scheduler when ``start`` raised (not kept).

        >>> from xsched import WorkerPlugin
        >>> class Ready(WorkerPlugin):
        ...     def setup(self, worker):
        ...         worker.ready = True
        >>> client.register_plugin(Ready(), name="register_plugin-ready")
        {'tcp://127.0.0.1:...': 'OK', 'tcp://127.0.0.1:...': 'OK'}
        >>> client.run(lambda worker: worker.ready)
        {'tcp://127.0.0.1:...': True, 'tcp://127.0.0.1:...': True}
        >>> client.unregister_worker_plugin("register_plugin-ready")
        {'tcp://127.0.0.1:...': 'OK', 'tcp://127.0.0.1:...': 'OK'}
        """
        kind = kind_of(plugin)  # TypeError for anything else, here
        if name is None:
            name = getattr(plugin, "name", None) or f"{type(plugin).__name__}-{uuid.uuid4().hex[:12]}"
        name = str(name)
        if idempotent is None:
            idempotent = bool(getattr(plugin, "idempotent", False))
        frames = dumps(plugin)  # in the caller's thread: an unpicklable plugin raises here
        if kind == "scheduler":
            return self._register_scheduler_plugin(name, bool(idempotent), frames)
        return self._register_worker_plugin(name, kind == "nanny", bool(idempotent), frames)

    def register_worker_plugin(self, plugin, name: str | None = None, nanny: bool | None = None):
        """dask's older spelling of ``register_plugin`` for a ``WorkerPlugin`` or a
        ``NannyPlugin`` (``nanny=`` must agree with the plugin's kind when given); the same
        result.

        >>> from xsched import WorkerPlugin
        >>> client.register_worker_plugin(WorkerPlugin(), name="register_worker_plugin-plain")
        {'tcp://127.0.0.1:...': 'OK', 'tcp://127.0.0.1:...': 'OK'}
        >>> client.unregister_worker_plugin("register_worker_plugin-plain")
        {'tcp://127.0.0.1:...': 'OK', 'tcp://127.0.0.1:...': 'OK'}
        """
        kind = kind_of(plugin)
        if kind == "scheduler" or (nanny is not None and bool(nanny) != (kind == "nanny")):
            raise TypeError(f"register_worker_plugin: {type(plugin).__name__} is a {kind} plugin"
                            + (f", not a {'nanny' if nanny else 'worker'} one (nanny={nanny})" if kind != "scheduler"
                               else "") + "; register it with register_plugin(plugin)")
        return self.register_plugin(plugin, name=name)

    def register_scheduler_plugin(self, plugin, name: str | None = None, idempotent: bool | None = None):
        """dask's older spelling of ``register_plugin`` for a ``SchedulerPlugin``.

        >>> from xsched import SchedulerPlugin
        >>> client.register_scheduler_plugin(SchedulerPlugin(), name="register_scheduler_plugin-plain")
        >>> client.unregister_scheduler_plugin("register_scheduler_plugin-plain")
        """
        if kind_of(plugin) != "scheduler":
            raise TypeError(f"register_scheduler_plugin: {type(plugin).__name__} is not a SchedulerPlugin; "
                            "register it with register_plugin(plugin)")
        return self.register_plugin(plugin, name=name, idempotent=idempotent)

    async def _register_worker_plugin(self, name: str, nanny: bool, idempotent: bool, frames: list,
                                      owned: bool = False) -> dict:
        """``owned``: the scheduler unregisters the plugin when this client goes (forward_logging's)."""
        header = {"op": ops.REGISTER_WORKER_PLUGIN, "name": name, "nanny": nanny, "idempotent": idempotent}
        if owned:
            header["owned"] = True
        reply, _ = await self._conn.request(header, raw={"plugin": frames}, timeout=None)
        return _outcomes(reply.get("results") or {}, name, "setup")

    async def _register_scheduler_plugin(self, name: str, idempotent: bool, frames: list) -> None:
        reply, _ = await self._conn.request({"op": ops.REGISTER_SCHEDULER_PLUGIN, "name": name,
                                             "idempotent": idempotent}, raw={"plugin": frames}, timeout=None)
        if reply.get("error"):
            exc = unpack_exception(reply.get("exception"), reply.get("traceback"), reply.get("text", ""))
            raise PluginError(f"scheduler plugin {name!r} failed in start on the scheduler: {reply.get('text', '')}; "
                              "it was not registered", name, {"scheduler": exc}) from exc
        return None

    @sync_or_async
    async def unregister_worker_plugin(self, name: str, nanny: bool | None = None) -> dict:
        """Unregister the worker plugin (``nanny=True``: the nanny plugin; None: whichever has
        the name, the workers' first) ``name``: every worker (or nanny) tears it down, and
        workers joining later do not get it. Returns ``{worker address: "OK"}``; raises
        ``PluginError`` naming the workers where ``teardown`` raised, ValueError for a name
        not registered.

        >>> from xsched import WorkerPlugin
        >>> client.register_plugin(WorkerPlugin(), name="unregister_worker_plugin-ready")
        {'tcp://127.0.0.1:...': 'OK', 'tcp://127.0.0.1:...': 'OK'}
        >>> client.unregister_worker_plugin("unregister_worker_plugin-ready")
        {'tcp://127.0.0.1:...': 'OK', 'tcp://127.0.0.1:...': 'OK'}
        """
        reply, _ = await self._conn.request({"op": ops.UNREGISTER_WORKER_PLUGIN, "name": str(name), "nanny": nanny},
                                            timeout=None)
        return _outcomes(reply.get("results") or {}, str(name), "teardown")

    @sync_or_async
    async def unregister_scheduler_plugin(self, name: str) -> None:
        """Unregister the scheduler plugin ``name``: its ``close()`` runs in the scheduler.
        ValueError for a name not registered.

        >>> from xsched import SchedulerPlugin
        >>> client.register_plugin(SchedulerPlugin(), name="unregister_scheduler_plugin-audit")
        >>> client.unregister_scheduler_plugin("unregister_scheduler_plugin-audit")
        """
        await self._conn.request({"op": ops.UNREGISTER_SCHEDULER_PLUGIN, "name": str(name)}, timeout=None)


def _outcomes(results: dict, name: str, hook: str) -> dict:
    """{worker: "OK" | "skipped: why"} from the scheduler's results, or PluginError naming the
    workers where ``hook`` raised.

    >>> _outcomes({"w1": {"status": "OK"}, "w2": {"status": "skipped", "error": "no nanny"}}, "p", "setup")
    {'w1': 'OK', 'w2': 'skipped: no nanny'}
    >>> _outcomes({"w1": {"status": "error", "error": "ValueError: x"}}, "p", "setup")
    Traceback (most recent call last):
    ...
    xsched.client.plugins.PluginError: plugin 'p' failed in setup on 1 of 1 workers: w1: ValueError: x (...
    """
    out: dict = {}
    errors: dict = {}
    for worker, result in sorted(results.items()):
        status = result.get("status", "OK")
        if status == "error":
            errors[worker] = result
        else:
            out[worker] = "OK" if status == "OK" else f"{status}: {result.get('error') or ''}".rstrip(": ")
    if not errors:
        return out
    lines = "; ".join(f"{w}: {r.get('error') or 'an error'}" for w, r in errors.items())
    excs = {w: (unpack_exception(r["exception"], r.get("traceback"), r.get("error") or "")
                if r.get("exception") else RuntimeError(r.get("error") or "an error")) for w, r in errors.items()}
    what = (" (they run on without it; the plugin stays registered, so workers joining later try it too: "
            "unregister_worker_plugin, or register a fixed one under the same name)") if hook == "setup" else ""
    raise PluginError(f"plugin {name!r} failed in {hook} on {len(errors)} of {len(results)} workers: {lines}{what}",
                      name, excs) from next(iter(excs.values()))
