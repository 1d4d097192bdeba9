"""The Client: how a notebook (or asyncio code) talks to an xsched cluster.

Data flow (a synchronous client; an asynchronous one runs on the caller's loop instead)::

    notebook thread                  client loop thread                         cluster
    ---------------                  ------------------                         -------
    submit/map/compute ------------> _request_graph --update-graph----------> scheduler
      <--Futures at once                                                        |
                                     _handle <--key-in-memory / task-erred /----+
                                       |       key-lost (batched)
                                       +--> the key's FutureState: done, error, reset
    result()/gather() --loop.sync--> await the FutureState; a small result came inline,
      <--the value------------------ else get-data --------------------------> a worker
    scatter() --loop.sync----------> put-data -------------------------------> workers
                                     scatter-done ---------------------------> scheduler
    Future dropped --> _dec_ref ---> client-releases-keys (batched, never before the
                                     graph that made the key) ---------------> scheduler

The asynchronous core (coroutines, methods starting with ``_``) runs on one event loop: the
caller's own loop when ``asynchronous=True``, otherwise a background loop thread shared by
all synchronous clients of the process (``loop.py``); each public method that talks to the
cluster is written once and made synchronous or asynchronous by ``dual.sync_or_async``.

``Client`` is put together from one mixin per reason (see the package's docstring); this
module holds the connection and its lifecycle, the handlers of the scheduler's messages,
the display, and ``get_client``.
"""

from __future__ import annotations

import atexit

import asyncio
import collections
import contextlib
import inspect
import logging
import threading
import uuid
import warnings

from .. import config, hooks, task_context
from ..comm import Connection, ConnectionPool, RemoteError
from ..errors import SchedulerLostError
from ..protocol import ops
from ..protocol.addressing import dashboard_link
from ..protocol.registry import connection_info, write_scheduler_file
from ..protocol.schemas import CLIENT_FROM_SCHEDULER, REPLIES
from ..protocol.security import Security
from ..protocol.versions import IncompatibleVersionError, announce, check_reply, refusal_in
from ..units import format_bytes, parse_timedelta
from . import loop as _loop
from .admin import AdminMixin, RestartError, UploadError
from .debugging import DebuggingMixin
from .datasets import Datasets, DatasetsMixin  # noqa: F401 (Datasets: importable from here too)
from .diagnostics import DiagnosticsMixin
from .default import (current_as, default_client as _default_or_none, process_clients, set_default_client,
                      unset_default_client)
from .future import FutureState
from .kernels import KernelsMixin
from .metadata import MetadataMixin
from .plugins import PluginError, PluginsMixin
from .refcount import RefCountMixin
from .submit import SubmitMixin
from .transfer import TransferMixin

logger = logging.getLogger("xsched.client")

__all__ = ["Client", "Executor", "get_client", "default_client", "UploadError", "RestartError", "PluginError"]

_clients = process_clients  # every Client of this process (kept in default.py: xsched.warn reads it too)


@atexit.register  # (registered after the background loop's own hook, so it runs before it)
def _close_clients_at_exit() -> None:
    """A synchronous client the program never closed is closed at exit while the background
    loop still runs, so its sockets and tasks end cleanly (and the scheduler forgets its
    keys) instead of being torn down half-open when the interpreter finalizes."""
    for client in list(_clients):
        if client.asynchronous or client.status in ("closing", "closed"):
            continue
        try:
            client.close(timeout=2)
        except Exception:  # (exiting anyway: a scheduler gone already is not an error here)
            logger.debug("closing %r at exit failed", client, exc_info=True)


class SchedulerHandle:
    """``client.scheduler``: the scheduler's address (``.address``), as dask's notebooks
    read it; its work is asked of the client (``client.scheduler_info()``...)."""

    __slots__ = ("address",)

    def __init__(self, address: str) -> None:
        self.address = address

    def __repr__(self) -> str:
        return f"<scheduler at {self.address}>"


class Client(SubmitMixin, TransferMixin, DatasetsMixin, MetadataMixin, AdminMixin, PluginsMixin, DiagnosticsMixin,
             KernelsMixin, DebuggingMixin, RefCountMixin):
    """Connect to a cluster and compute on it.

    ``Client()`` starts a LocalCluster (the keywords the client does not take itself go to
    it: ``Client(n_workers=2, threads_per_worker=1, processes=False, memory_limit="2GB")``);
    ``Client(cluster)``, ``Client("host:8786")`` and
    ``Client(scheduler_file="scheduler.json")`` connect to a running one. With an address
    alone the secret comes from ``security=``, ``$XSCHED_SECRET``, or the registry of
    schedulers this user runs (``~/.xsched/schedulers``), so no secret needs typing.

    >>> from xsched import Client, LocalCluster
    >>> cluster = LocalCluster(n_workers=1, processes=False)
    >>> client = Client(cluster)
    >>> client.submit(lambda x: x + 1, 1).result()
    2
    >>> client.close(); cluster.close()
    """

    def __init__(self, address=None, *, scheduler_file: str | None = None, security: Security | str | None = None,
                 asynchronous: bool = False, timeout="10s", set_as_default: bool = True, name: str | None = None,
                 **cluster_kwargs):
        self.id = f"client-{name or ''}{'-' if name else ''}{uuid.uuid4().hex[:12]}"
        self._asynchronous = asynchronous
        self.status = "created"
        self.cluster = None
        self._own_cluster = False
        self._timeout = parse_timedelta(timeout)
        if address is None and scheduler_file is None:
            # a new LocalCluster (xsched.deploy registers it: the client imports no deploy code),
            # made with the keywords Client() does not take itself (n_workers=, processes=, ...)
            address = hooks.new_cluster(**cluster_kwargs)
            self._own_cluster = True
        elif cluster_kwargs:
            raise TypeError(f"Client() got the keyword(s) {', '.join(sorted(cluster_kwargs))}, which only make a "
                            "new LocalCluster: give them without an address or scheduler file (Client(n_workers=2, "
                            "...)), or to the LocalCluster you pass")
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
        # keys whose release went to the scheduler lately (bounded, oldest first): scatter
        # names its data anew rather than race the workers' freeing of the old copy
        self._released_lately: collections.OrderedDict[str, None] = collections.OrderedDict()
        self._graphs_queued = 0  # update-graphs handed to the loop so far (under _ref_lock)
        self._graphs_unsent: set[int] = set()  # numbers of those the loop has not sent yet
        self._conn: Connection | None = None
        self._pool = ConnectionPool(security)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._workers_cache: dict = {}
        self._set_as_default = set_as_default
        self._progress: dict = {}  # [progress] subscription id -> live progress bar (jupyter/progress.py)
        self._shutting_down = False  # shutdown() asked the scheduler to close: its closing is no loss
        # the scheduler's dashboard page (schemas.DASHBOARD) and the address it advertises, from
        # its register-client reply: client.dashboard_link
        self._dashboard: dict | None = None
        self._advertised_address: str | None = None
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
            reply, _ = await self._conn.request({"op": ops.REGISTER_CLIENT, "client": self.id, **announce()},
                                                timeout=self._timeout)
            check_reply(reply, "client", self.scheduler_address)  # a scheduler older than versions does not check
            REPLIES[ops.REGISTER_CLIENT].check(reply)
        except asyncio.TimeoutError:
            await self._conn.close()
            raise TimeoutError(
                f"could not reach the scheduler at {self.scheduler_address} within {self._timeout:.0f}s: "
                "is it running, and is this its address?") from None
        except RemoteError as e:  # refused: an incompatible version says so, naming both versions
            await self._conn.close()
            refused = refusal_in(e)
            if refused is not None:
                raise refused from None
            raise
        except IncompatibleVersionError:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._conn.request({"op": ops.CLOSE_CLIENT}), 2)
            await self._conn.close()
            raise
        except Exception:
            await self._conn.close()
            raise
        self.scheduler_id = reply.get("scheduler_id")
        self._dashboard, self._advertised_address = reply.get("dashboard"), reply.get("address")
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

    @property
    def asynchronous(self) -> bool:
        """Whether this client's methods return what to await: an asynchronous client's do,
        and so do a synchronous client's in the coroutines ``client.sync`` runs on its loop."""
        return self._asynchronous or _loop.in_sync_call()

    @asynchronous.setter
    def asynchronous(self, value: bool) -> None:
        self._asynchronous = bool(value)

    def _sync(self, coro, timeout: float | None = None):
        """Run a coroutine of the async core: return it as is when asynchronous."""
        if self.asynchronous:
            return coro
        return _loop.sync(coro, timeout)

    def close(self, timeout="10s"):
        """Release everything this client holds and disconnect (and stop its own cluster).

        >>> client.close()
        >>> client.status
        'closed'
        """
        if self.asynchronous or _loop.in_loop_thread():
            # (on its own loop, e.g. the worker of an in-process cluster closing the client
            # its tasks used: waiting there would block the loop, so it is what to await)
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
        if self._conn is not None and self._conn.failure is None and not self._shutting_down:
            try:
                await asyncio.wait_for(self._conn.request({"op": ops.CLOSE_CLIENT}), 2)
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
        if self.status != "running" or self._shutting_down:
            return
        self.status = "lost"
        text = (f"lost the connection to the scheduler at {self.scheduler_address} ({exc}); "
                "its results are gone. Start a new cluster and Client.")
        for st in list(self._states.values()):
            if not st.done():
                st.lose(text)
        # stop reconnecting: another process may take the address over
        asyncio.get_running_loop().call_soon(lambda: asyncio.ensure_future(self._conn.close()))

    def shutdown(self, timeout="30s"):
        """Close the cluster this client is connected to -- its scheduler and workers -- then the client.

        A cluster object the client was given or made (``Client(cluster)``, ``Client()``) is
        closed as ``cluster.close()`` does; a scheduler reached by address or scheduler file
        is asked to close, and tells its workers to close. Other clients of that cluster
        lose it too.

        >>> from xsched import Client
        >>> client = Client(n_workers=1, processes=False)
        >>> client.submit(sum, [1, 2]).result()
        3
        >>> client.shutdown()
        >>> client.status, client.cluster.status
        ('closed', 'closed')
        """
        t = parse_timedelta(timeout)
        if self.asynchronous:
            return self._shutdown(t)
        if self.cluster is not None:
            self._shutting_down = True
            self.cluster.close(timeout=t)  # (in this thread: closing a cluster may block on the loop)
        elif self.status == "running":
            self._sync(self._shutdown_scheduler(t), t + 5)
        self.close()

    async def _shutdown(self, timeout: float) -> None:
        if self.cluster is not None:
            self._shutting_down = True
            closer = getattr(self.cluster, "_close", None)
            if closer is not None:
                await closer()
            else:
                await asyncio.get_running_loop().run_in_executor(None, self.cluster.close)
        elif self.status == "running":
            await self._shutdown_scheduler(timeout)
        await self._close()

    async def _shutdown_scheduler(self, timeout: float) -> None:
        self._shutting_down = True
        try:
            await self._conn.request({"op": ops.SHUTDOWN}, timeout=timeout)
        except BaseException:
            self._shutting_down = False
            raise

    def sync(self, func, *args, callback_timeout=None, **kwargs):
        """Run ``func(*args, **kwargs)`` (a coroutine function) on this client's event loop.

        A synchronous client waits and returns its result (at most ``callback_timeout``
        seconds: TimeoutError); an asynchronous client returns the coroutine to await.
        In ``func`` (and the tasks it starts) the client's methods return what to await, as
        an asynchronous client's do: ``await client.gather(futures)``, ``await future``.

        >>> async def workers(client):
        ...     info = await client._scheduler_info()                  # the client's async core
        ...     return len(info["workers"])
        >>> client.sync(workers, client)
        2
        """
        if self.asynchronous:
            return func(*args, **kwargs)
        if self._on_loop():
            raise RuntimeError("client.sync() was called on the client's own event loop, where waiting would block "
                               "it: await the coroutine instead")

        async def call():
            _loop.enter_sync_call()
            result = func(*args, **kwargs)
            if inspect.isawaitable(result):
                result = await result
            return result

        timeout = None if callback_timeout is None else parse_timedelta(callback_timeout)
        return _loop.sync(call(), timeout)

    @classmethod
    def current(cls) -> "Client":
        """The client computations use now (``default_client()``), as dask's
        ``Client.current()``; ValueError when none runs.

        >>> Client.current() is client
        True
        """
        return default_client()

    @contextlib.contextmanager
    def as_current(self):
        """A block in which this client is the default (``compute()``, ``default_client()``).

        It applies to the thread (or asyncio task) running the block; other threads keep
        their default.

        >>> import xsched
        >>> other = xsched.Client(client.cluster, set_as_default=False)
        >>> with other.as_current():
        ...     xsched.default_client() is other
        True
        >>> xsched.default_client() is client
        True
        >>> other.close()
        """
        with current_as(self):
            yield self

    def write_scheduler_file(self, path: str) -> None:
        """Write the scheduler's address and secret to ``path`` (mode 0600) for workers and
        clients elsewhere: ``xsched worker --scheduler-file PATH``, ``Client(scheduler_file=PATH)``.

        >>> client.write_scheduler_file("scheduler.json")      # (on a file system the other hosts share)
        >>> # on another machine: xsched worker --scheduler-file scheduler.json
        >>> other = Client(scheduler_file="scheduler.json")
        >>> other.scheduler_address == client.scheduler_address
        True
        >>> other.close()
        """
        write_scheduler_file(path, self.scheduler_address, self.security,
                             getattr(self, "scheduler_id", None) or "unknown")

    # ------------------------------------------------------------------ messages from the scheduler
    def _handle(self, header: dict, payload: list) -> None:
        """(On the client's loop) run the handler of a message from the scheduler: one per op
        the scheduler may send a client (``schemas.CLIENT_FROM_SCHEDULER`` checked it)."""
        handler = self._SCHEDULER_OPS.get(header["op"])
        if handler is None:
            raise TypeError(f"client cannot handle op {header['op']!r}")
        handler(self, header, payload)

    def _op_key_in_memory(self, h: dict, payload: list) -> None:
        st = self._states.get(h.get("key"))
        if st is not None:
            st.holders = h.get("workers") or None
            st.inline = h.get("inline")  # a small result, sent along: no fetch
            st.finish(h.get("type"))

    def _op_task_erred(self, h: dict, payload: list) -> None:
        st = self._states.get(h.get("key"))
        if st is not None:
            st.set_error(h.get("exception"), h.get("traceback"), h.get("text", ""), h.get("blame"), h.get("worker"),
                         h.get("key"))
            self._note_postmortem(h["key"], h.get("blame") or h["key"], h.get("worker"))  # (client/debugging.py)

    def _op_key_lost(self, h: dict, payload: list) -> None:
        st = self._states.get(h.get("key"))
        if st is not None:
            st.reset()

    def _op_key_cancelled(self, h: dict, payload: list) -> None:
        st = self._states.get(h.get("key"))
        if st is not None:
            st.cancel(h.get("reason") or f"{h.get('key')} was cancelled")
            with self._ref_lock:  # these handles stay cancelled; a later submission starts afresh
                if self._states.get(h.get("key")) is st:
                    del self._states[h.get("key")]

    def _op_ping(self, h: dict, payload: list) -> None:
        pass  # the scheduler checking who is still connected

    def _op_warning(self, h: dict, payload: list) -> None:
        warnings.warn(h.get("text", ""), RuntimeWarning, stacklevel=1)
        logger.warning("%s", h.get("text", ""))

    def _op_scheduler_closing(self, h: dict, payload: list) -> None:
        self._lost(SchedulerLostError("the scheduler is closing"))

    def _op_progress(self, h: dict, payload: list) -> None:
        # [progress] counts pushed for xsched.progress (jupyter/progress.py)
        bar = self._progress.get(h.get("sub"))
        if bar is not None:
            bar._update(h)

    _SCHEDULER_OPS = {
        ops.KEY_IN_MEMORY: _op_key_in_memory, ops.TASK_ERRED: _op_task_erred, ops.KEY_LOST: _op_key_lost,
        ops.KEY_CANCELLED: _op_key_cancelled, ops.PING: _op_ping, ops.WARNING: _op_warning,
        ops.SCHEDULER_CLOSING: _op_scheduler_closing, ops.PROGRESS: _op_progress,
    }

    # ------------------------------------------------------------------ display
    @property
    def scheduler(self) -> "SchedulerHandle":
        """The scheduler this client talks to, as dask's ``client.scheduler`` is read in
        notebooks: its ``address`` (the calls to it are the client's own methods).

        >>> client.scheduler.address == client.scheduler_address
        True
        """
        return SchedulerHandle(self.scheduler_address)

    @property
    def dashboard_link(self) -> str | None:
        """The URL of the scheduler's dashboard page, its token included, or None when the
        scheduler serves none (``dashboard_address=None``). The page shows the task stream,
        progress, worker memory and the workers table live, in any browser.

        The host is the one this client reached the scheduler by (unless the dashboard
        listens on a host of its own, or that is a wildcard).

        >>> client.dashboard_link
        'http://127.0.0.1:.../status?token=...'
        """
        return dashboard_link(self._dashboard, self.scheduler_address, self._advertised_address)

    def __repr__(self) -> str:
        link = self.dashboard_link if self.status == "running" else None
        dashboard = f" dashboard={link}" if link else ""
        if self.status != "running" or self.asynchronous:
            return f"<Client: {self.scheduler_address!r} status={self.status}{dashboard}>"
        try:
            info = self.scheduler_info()
        except Exception:
            return f"<Client: {self.scheduler_address!r} status={self.status}>"
        ws = info["workers"].values()
        return (f"<Client: {self.scheduler_address!r} workers={len(ws)} threads={sum(w['nthreads'] for w in ws)} "
                f"memory={format_bytes(sum(w['memory_limit'] or 0 for w in ws))}{dashboard}>")

    # The notebook display, the live widget and the figures are xsched.jupyter's: it registers
    # them in xsched.hooks (jupyter/display.py, widgets.py, plots.py), the client imports none.
    def _repr_html_(self) -> str:
        return hooks.client_html(self)

    def _ipython_display_(self, **kwargs):
        """In a Jupyter kernel with ipywidgets: a live widget; elsewhere the static HTML/text."""
        hooks.ipython_display(self)

    def plot_memory(self, **kwargs):
        """A matplotlib Figure of process (RSS) and managed memory per worker over time.

        >>> fig = client.plot_memory()
        >>> fig.savefig("memory.png")
        """
        return hooks.plot_memory(self, **kwargs)

    def task_stream(self, start=None, **kwargs):
        """A matplotlib Figure: which task ran on which worker, and when (a Gantt chart).

        ``start``: seconds since the epoch, or a duration like "30s" (the last 30 seconds).

        >>> fig = client.task_stream(start="1 minute")
        >>> fig.savefig("tasks.png")
        """
        return hooks.task_stream(self, start=start, **kwargs)


Executor = Client


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
    >>> client.submit(task).result()
    1
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
    return default_client()


def default_client(c: Client | None = None) -> Client:
    """The client ``compute()`` and friends use now: ``c`` if given, else the current default
    (the client of an ``as_current()`` block, else the newest open client made with
    ``set_as_default=True``). Raises ValueError when there is none.

    >>> import xsched
    >>> xsched.default_client() is client
    True
    """
    if c is not None:
        return c
    found = _default_or_none()
    if found is None:
        raise ValueError("no xsched Client is running: create one with Client(...) (it becomes the default), "
                         "e.g. Client() or Client('scheduler-host:8786')")
    return found


# Future() without a client, and Futures unpickled in a task, ask for this (client/future.py
# is imported by this module, so it looks get_client up instead of importing it).
hooks.get_client.register(get_client)
