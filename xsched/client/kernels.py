"""IPython kernels inside the scheduler and the workers, reached from the notebook.

The kernels run in their own thread in each server (``jupyter/kernel.py``); the client
only asks for them (``start-ipython``) and gets their connection info back. In a
synchronous client the magics that reach them (``%scheduler``, ``%remote``) are then
registered through ``xsched.hooks`` by ``xsched.jupyter.magics``, which the client does
not import; an asynchronous client gets the connection info alone::

    start_ipython_scheduler() --start-ipython--> scheduler --info--> hooks.scheduler_kernel
    start_ipython_workers()   --start-ipython--> each worker --infos--> hooks.worker_kernels

A mixin of ``Client`` (``client.py``).
"""

from __future__ import annotations

import asyncio

from .. import hooks
from ..graph.order import natural_key
from ..protocol import ops
from ..protocol.update_graph import workers_named
from .dual import blocking, sync_or_async

__all__ = ["KernelsMixin"]


class KernelsMixin:
    """start_ipython_scheduler and start_ipython_workers."""

    @sync_or_async
    def start_ipython_scheduler(self, magic_name: str = "scheduler", qtconsole: bool = False) -> dict:
        """Start an IPython kernel inside the scheduler; ``%scheduler expr`` then runs there.

        >>> info = client.start_ipython_scheduler()      # doctest: +SKIP
        >>> %scheduler scheduler.processing              # doctest: +SKIP
        """
        # the magic (xsched.jupyter.magics), for a synchronous client
        return blocking(self._start_ipython_scheduler(),
                        then=lambda info: hooks.scheduler_kernel(info, magic_name, qtconsole))

    async def _start_ipython_scheduler(self):
        reply, _ = await self._conn.request({"op": ops.START_IPYTHON}, timeout=60)
        return reply["info"]

    @sync_or_async
    def start_ipython_workers(self, workers=None, magic_names=False, qtconsole: bool = False) -> dict:
        """Start an IPython kernel in each worker: {address: connection info}.

        >>> info = client.start_ipython_workers()                  # doctest: +SKIP
        >>> %remote info[list(info)[0]] worker.active              # doctest: +SKIP
        """
        # %remote and the magics (xsched.jupyter.magics), for a synchronous client
        return blocking(self._start_ipython_workers(workers),
                        then=lambda infos: _with_magics(infos, magic_names, qtconsole))

    async def _start_ipython_workers(self, workers=None):
        info = await self._scheduler_info()
        # (by name, naturally: %w_0 is worker "0" and %w_10 comes after %w_9)
        named = {a: w.get("name") for a, w in info["workers"].items()}
        addrs = sorted(named, key=lambda a: (natural_key(str(a if named[a] is None else named[a])), a))
        if workers is not None:
            addrs = workers_named(info["workers"], [workers] if isinstance(workers, str) else workers)
        replies = await asyncio.gather(*(self._pool.get(a).request({"op": ops.START_IPYTHON}, timeout=60)
                                         for a in addrs))
        return {a: r[0]["info"] for a, r in zip(addrs, replies)}


def _with_magics(infos: dict, magic_names, qtconsole: bool) -> dict:
    hooks.worker_kernels(infos, magic_names, qtconsole)
    return infos
