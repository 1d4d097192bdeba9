"""A thin connection to a scheduler, for code that runs a cluster rather than computes on it.

Deploy (``SpecCluster.wait_for_workers``, adaptive scaling) and the live cluster widget
need a few scheduler ops (``scheduler-info``, ``retire-workers``) and none of what a
``Client`` carries: futures, graphs, being the default client, data transfer. This is
that: one authenticated connection, registered as a client (the scheduler answers admin
ops to registered clients only), each op a method that sends one request and awaits its
reply, on the background loop the synchronous clients share (``client/loop.py``)::

    caller thread --scheduler_info()--> loop.sync --> background loop --request--> scheduler
                  <--------------------------------- reply <--------------------------+

Unsolicited messages from the scheduler are dropped; a lost connection is not retried
(``status`` becomes ``lost``).

>>> with SchedulerRPC(client.cluster) as rpc:        # (a cluster, or a scheduler's address)
...     rpc.wait_for_workers(2, timeout=30)
...     sorted(rpc.scheduler_info()["workers"])
['tcp://127.0.0.1:...', 'tcp://127.0.0.1:...']
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Awaitable, Callable

from .. import config
from ..comm import Connection
from ..protocol import ops
from ..protocol.registry import connection_info
from ..protocol.schemas import CLIENT_FROM_SCHEDULER, REPLIES
from ..protocol.versions import announce, check_reply, refusal_in
from ..units import parse_timedelta
from . import loop as _loop

__all__ = ["SchedulerRPC", "wait_for_workers"]


class SchedulerRPC:
    """Scheduler ops for cluster managers and widgets, without a ``Client``.

    ``address``: a cluster (anything with ``scheduler_address`` and ``security``) or an
    address; the secret is found as for ``Client`` (``security=``, ``$XSCHED_SECRET``,
    the registry of this user's schedulers).
    """

    #: Always synchronous: the ops run on the background loop (the widgets check this).
    asynchronous = False

    def __init__(self, address, *, security=None, timeout="10s", name: str = "rpc"):
        self.id = f"{name}-{uuid.uuid4().hex[:12]}"
        self.status = "created"
        self._timeout = parse_timedelta(timeout)
        if hasattr(address, "scheduler_address"):
            security = security or address.security
            address = address.scheduler_address
        self.scheduler_address, self.security = connection_info(address, None, security,
                                                                mode=config.get("comm.security", "auto"))
        self._conn: Connection | None = None
        #: the scheduler's dashboard page (``schemas.DASHBOARD``: port, token, host), None: none
        self.dashboard: dict | None = None
        self._loop = _loop.background_loop()
        _loop.sync(self._start(), self._timeout + 5)

    async def _start(self) -> None:
        self._conn = Connection(self.scheduler_address, self.security, _ignore, identity=self.id.encode(),
                                on_lost=self._lost, schemas=CLIENT_FROM_SCHEDULER).connect()
        try:
            reply, _ = await self._conn.request({"op": ops.REGISTER_CLIENT, "client": self.id, **announce()},
                                                timeout=self._timeout)
            check_reply(reply, "client", self.scheduler_address)
            REPLIES[ops.REGISTER_CLIENT].check(reply)
        except asyncio.TimeoutError:
            await self._conn.close()
            raise TimeoutError(
                f"could not reach the scheduler at {self.scheduler_address} within {self._timeout:.0f}s: "
                "is it running, and is this its address?") from None
        except Exception as e:
            await self._conn.close()
            refused = refusal_in(e)  # an incompatible version: said with both versions
            if refused is not None:
                raise refused from None
            raise
        self.dashboard = reply.get("dashboard")
        self.status = "running"

    def _lost(self, exc: Exception) -> None:
        if self.status != "running":
            return
        self.status = "lost"
        # stop reconnecting: another process may take the address over
        asyncio.get_running_loop().call_soon(lambda: asyncio.ensure_future(self._conn.close()))

    # ------------------------------------------------------------------ ops
    def scheduler_info(self) -> dict:
        """What ``Client.scheduler_info()`` returns: workers, their memory, task counts."""
        return _loop.sync(self._scheduler_info())

    async def _scheduler_info(self) -> dict:
        reply, _ = await self._conn.request({"op": ops.SCHEDULER_INFO}, timeout=self._timeout)
        return reply["info"]

    def wait_for_workers(self, n_workers: int = 1, timeout=None) -> None:
        """Block until at least ``n_workers`` workers are connected (TimeoutError after ``timeout``)."""
        return _loop.sync(wait_for_workers(self._scheduler_info, n_workers, timeout))

    def retire_workers(self, workers=None, close_workers: bool = True, timeout=None) -> dict:
        """As ``Client.retire_workers``: move the workers' data away, then close them."""
        if isinstance(workers, str):
            workers = [workers]
        elif workers is not None:
            workers = list(workers)
        return _loop.sync(self._retire_workers(workers, close_workers, timeout))

    async def _retire_workers(self, workers, close_workers=True, timeout=None) -> dict:
        reply, _ = await self._conn.request(
            {"op": ops.RETIRE_WORKERS, "workers": workers, "close_workers": bool(close_workers)},
            timeout=None if timeout is None else parse_timedelta(timeout))
        return reply["retired"]

    # ------------------------------------------------------------------ lifecycle
    def close(self, timeout="10s") -> None:
        """Unregister and disconnect (safe to call twice)."""
        if self.status in ("closing", "closed"):
            return
        _loop.sync(self._close(), parse_timedelta(timeout))

    async def _close(self) -> None:
        if self.status in ("closing", "closed"):
            return
        self.status = "closing"
        if self._conn is not None:
            if self._conn.failure is None:
                try:
                    await asyncio.wait_for(self._conn.request({"op": ops.CLOSE_CLIENT}), 2)
                except Exception:
                    pass
            await self._conn.close()
        self.status = "closed"

    def __enter__(self) -> "SchedulerRPC":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<SchedulerRPC {self.scheduler_address!r} status={self.status}>"


def _ignore(header: dict, payload: list) -> None:
    """Unsolicited messages (progress, key updates) are for clients with futures: dropped."""


async def wait_for_workers(scheduler_info: Callable[[], Awaitable[dict]], n_workers: int, timeout=None) -> None:
    """Poll ``scheduler_info()`` until it lists ``n_workers`` workers (TimeoutError after ``timeout``)."""
    deadline = None if timeout is None else asyncio.get_running_loop().time() + parse_timedelta(timeout)
    while True:
        info = await scheduler_info()
        if len(info["workers"]) >= n_workers:
            return
        if deadline is not None and asyncio.get_running_loop().time() > deadline:
            raise TimeoutError(f"only {len(info['workers'])} of {n_workers} workers arrived within {timeout}")
        await asyncio.sleep(0.1)
