"""The scheduler process's server: one listening socket around ``SchedulerState``.

Data flow::

    clients & workers --DEALER--> Listener (ROUTER, ZAP-authenticated)
        -> _handle(peer, header) -> event -> SchedulerState.handle -> [ToWorker | ToClient]
        -> Listener.send(peer of that worker/client)   (batched per loop tick)
    monitor: peer disconnected -> RemoveWorker / RemoveClient event
    retire-workers (client) / retire-worker (a worker, on --lifetime or SIGTERM)
        -> RetireWorkers event -> acquire-replicas to destinations ... add-keys back
        -> close-worker to the drained worker + WorkerRetired -> the waiting request answered
    replicate / rebalance (client) -> Replicate / Rebalance event -> the same acquire-replicas ...
        add-keys (a rebalance then frees the source: free-keys) -> ReplicationDone -> answered;
        after the request's timeout, AbandonReplication answers with what is done
    ttl loop: a worker silent for scheduler.worker-ttl is removed. Workers also send
        heartbeats from a thread of their own (worker/heartbeat.py), so a worker whose event
        loop is blocked stays registered
    heartbeat pacing (heartbeats.py): as workers come and go the interval they beat at is
        recomputed; when it changes every worker hears heartbeat-interval, and the ttl grows
        with it
    validate (scheduler.validate): SchedulerState.validate() after the events; a violation
        is logged with its story, told to the clients, and closes the scheduler
    extensions: built from one table (scheduler/extensions/: progress, datasets, uploads,
        environments, plugins, ...; config scheduler.extensions); their ops join the handler
        tables and their hooks hear worker and client arrivals and departures, graphs,
        transitions and close;
        task-finished / task-erred also go to the diagnostics extension (the task stream)
    restart (client) -> Restart event: clients hear key-cancelled, workers close-worker
        {restart} and their nannies start them again -> reply once as many have registered
    dashboard (given dashboard_address): an HTTP server on this loop (xsched/dashboard/server.py,
        started through hooks.dashboard_server) reading the telemetry extension; its port and
        token go to every client in the register-client reply (client.dashboard_link)

The scheduler never unpickles task specs, results or exceptions: it forwards bytes.
It unpickles only what authenticated clients send to run there: functions for
``run_on_scheduler`` and scheduler plugins (``register_plugin``; worker and nanny plugins
it forwards as bytes).
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
import os
import time
import uuid
from collections import Counter, deque

from .. import hooks, logs
from ..background import Background
from ..protocol import ops
from .. import config
from ..comm import Listener
from ..errors import KilledWorker, pack_exception
from ..graph.order import gc_paused
from ..protocol.messages import unpack_objects
from ..protocol import registry, schemas
from ..protocol.addressing import default_contact_ip, is_wildcard, join, parse_dashboard_address, split
from ..protocol.registry import read_scheduler_file, write_scheduler_file  # noqa: F401 (used by callers)
from ..protocol.remote import call_user_function
from ..protocol.security import Security
from ..protocol.update_graph import column_tasks, entry_task
from ..protocol.versions import announce, check_peer, package_versions
from ..units import parse_bytes, parse_timedelta
from . import extensions as _extensions
from .heartbeats import heartbeat_interval, silence_allowed
from .state import (
    AddKeys, AddWorker, CancelKeys, ClientDesiresKeys, ClientReleasesKeys, MissingData,
    RemoveClient, RemoveWorker, Reschedule, Restart, RetireWorkers, StealResponse, RetryKeys, SchedulerState, TaskErred, TaskFinished,
    TaskRejoined, TaskSeceded, ToClient, ToWorker, UpdateGraph, WorkerRetired, WorkerStatus,
    AddClient, WorkerHeartbeat, NewTask, Replicate, Rebalance, AbandonReplication, ReplicationDone,
)
from .state.entities import host_of

logger = logging.getLogger("xsched.scheduler")

#: How a report of a broken invariant starts, in the log and in the warning sent to clients
#: (tests look for it).
INVARIANT_VIOLATED = "scheduler invariant violated"


class Scheduler:
    """The scheduler server. ``scheduler.processing`` and friends show live state.

    ``dashboard_address``: where to serve the dashboard page (``":8787"``: port 8787 on the
    scheduler's own host; a port taken falls back to a free one), or None for none (the
    default here; ``xsched scheduler`` and ``LocalCluster`` serve one on 8787).

    >>> # started by `xsched scheduler` or LocalCluster; in asyncio code:
    >>> # s = await Scheduler(security=Security.generate()).start("tcp://127.0.0.1:0")
    >>> # or, as dask's tutorials write it (a local port of its own, closed on leaving):
    >>> # async with xsched.Scheduler() as s, xsched.Worker(s.address) as w: ...
    """

    #: the dashboard page's server (xsched/dashboard/server.py) once started, else None
    dashboard = None
    _dashboard_host: str | None = None  # its host, when not the scheduler's own

    def __init__(self, security: Security | None = None, scheduler_file: str | None = None,
                 register: bool = True, name: str | None = None, dashboard_address=None):
        self.dashboard_address = parse_dashboard_address(dashboard_address)  # (host, port) or None
        self.security = security or Security.generate(config.get("comm.security", "auto"))
        self.scheduler_file = scheduler_file
        self.register = register
        self.name = name  # the cluster's name a person chose, kept in its registry entry
        self.registry_entry: str | None = None
        allowed = int(config.get("scheduler.allowed-failures", 3))
        self.state = SchedulerState(
            worker_saturation=float(config.get("scheduler.worker-saturation", 1.0)),
            allowed_failures=allowed,
            bandwidth=parse_bytes(config.get("scheduler.bandwidth", "500MB")),
            killed_worker_error=lambda key, w: pack_exception(KilledWorker(key, w, allowed))[0],
            log_length=int(config.get("scheduler.events-log-length", 100_000)),
            unknown_duration=parse_timedelta(config.get("scheduler.unknown-task-duration", "500ms")),
            work_stealing=bool(config.get("scheduler.work-stealing", True)),
        )
        self.id = "scheduler-" + uuid.uuid4().hex[:8]
        self.address: str | None = None
        self.listener: Listener | None = None
        self.worker_peer: dict[str, bytes] = {}
        self.peer_worker: dict[bytes, str] = {}
        self.client_peer: dict[str, bytes] = {}
        self.peer_client: dict[bytes, str] = {}
        self.last_seen: dict[str, float] = {}
        # seconds between a worker's beats: the base until the cluster is wide (heartbeats.py)
        self.heartbeat_interval = self._heartbeat_base = parse_timedelta(
            config.get("worker.heartbeat-interval", "500ms"))
        # scheduler.validate: check the state's invariants after events (see _validate)
        self.validating = bool(config.get("scheduler.validate", False))
        self.invariant_violations: list[str] = []  # reports of what validate() found broken
        self._unvalidated: deque = deque(maxlen=200)  # (event, stimulus_id) since the last check
        self._validate_timer: asyncio.TimerHandle | None = None
        self._next_validation = 0.0
        self._closing: asyncio.Future | None = None  # a close() the scheduler started by itself
        self.events: deque = deque(maxlen=10_000)  # (time, kind, detail) for users and tests
        self.status = "created"
        self._background = Background("scheduler")
        self._closed = asyncio.Event()
        self.start_time = time.time()
        self.extensions: dict = {}  # name -> extension (built at the end of __init__)
        # worker -> (time, rss, managed, spilled) samples from heartbeats, for plot_memory()
        self.memory_history: dict[str, deque] = {}
        self._extension_ops: dict = {}  # op -> handler(peer, header, payload), of the extensions
        self._retire_waiters: dict[str, list[asyncio.Future]] = {}  # worker -> requests awaiting its outcome
        self._replication_waiters: dict[str, asyncio.Future] = {}  # replicate/rebalance request -> its reply
        self.worker_environment: dict[str, dict] = {}  # worker -> {prefix, error} from its registration
        self._retired_peers: deque = deque(maxlen=1000)  # peers of retired workers: never told to restart
        # every capability beyond running tasks: one table (scheduler/extensions/__init__.py)
        self.extensions.update(_extensions.build(self, config.get("scheduler.extensions", None),
                                                 reserved=set(self._CLIENT_OPS) | set(self._WORKER_OPS)))

    def __repr__(self) -> str:
        return (f"<Scheduler {self.address!r} workers={len(self.state.workers)} "
                f"tasks={len(self.state.tasks)} queued={self.state.n_queued}>")

    # ------------------------------------------------------------------ views for users
    @property
    def processing(self) -> dict[str, list[str]]:
        """Worker address -> keys processing there now."""
        return self.state.processing()

    @property
    def workers(self) -> dict:
        return self.state.workers

    @property
    def plugins(self) -> dict:
        """The scheduler plugins registered (``client.register_plugin``): name -> plugin."""
        ext = self.extensions.get("plugins")
        return ext.plugins if ext is not None else {}

    @property
    def tasks(self) -> dict:
        return self.state.tasks

    def story(self, *keys: str) -> list:
        return self.state.story(*keys)

    # ------------------------------------------------------------------ lifecycle
    async def start(self, address: str = "tcp://127.0.0.1:0") -> "Scheduler":
        # recent records of the xsched loggers, for client.get_scheduler_logs(): from the
        # first, so what starting says (a dashboard port taken, the registry) is kept too
        logs.install()
        self.listener = Listener(self.security, self._handle, self._peer_gone, name="scheduler",
                                 schemas=schemas.TO_SCHEDULER)
        bound = self.listener.bind(address)
        host, port = split(bound)
        # bound to every interface: advertise the address other hosts most likely reach
        self.address = join(default_contact_ip(), port) if is_wildcard(host) else bound
        if self.dashboard_address is not None:
            dhost, dport = self.dashboard_address
            try:  # (on the scheduler's own host unless given one; xsched.dashboard provides the hook)
                self.dashboard = await hooks.dashboard_server(self, dhost or host, dport)
            except BaseException:
                await self.listener.close()
                raise
            self._dashboard_host = dhost if dhost and dhost != host else None
        self.status = "running"
        if self.scheduler_file:
            write_scheduler_file(self.scheduler_file, self.address, self.security, self.id,
                                 extra={"dashboard": self.dashboard_info()})
        if self.register:
            self.registry_entry = registry.register(self.address, self.security, self.id, bound_host=host,
                                                    name=self.name)
        self._background.spawn(self._ttl_loop())
        self._background.spawn(self._no_worker_warnings())
        logger.info("scheduler at %s", self.address)
        return self

    async def __aenter__(self) -> "Scheduler":
        return self if self.address is not None else await self.start()

    async def __aexit__(self, *exc) -> None:
        await self.close()

    async def close(self) -> None:
        """Tell clients and workers, then stop."""
        if self.status in ("closing", "closed"):
            await self._closed.wait()
            return
        self.status = "closing"
        if self._validate_timer is not None:
            self._validate_timer.cancel()
            self._validate_timer = None
        if self.dashboard is not None:  # the page says the scheduler went away
            await self.dashboard.close()
        for peer in list(self.client_peer.values()):
            self.listener.send(peer, {"op": ops.SCHEDULER_CLOSING})
        for peer in list(self.worker_peer.values()):
            self.listener.send(peer, {"op": ops.CLOSE_WORKER})
        await asyncio.sleep(0.05)
        await self._background.aclose()
        for ext in list(self.extensions.values()):
            close = getattr(ext, "close", None)
            if close is not None:
                r = close()
                if inspect.isawaitable(r):
                    await r
        if self.listener is not None:
            await self.listener.close()
        registry.unregister(self.registry_entry)
        self.registry_entry = None
        if self.scheduler_file and os.path.exists(self.scheduler_file):
            try:
                with open(self.scheduler_file) as f:
                    if json.load(f).get("id") == self.id:
                        os.remove(self.scheduler_file)
            except (OSError, ValueError):
                pass
        self.status = "closed"
        self._closed.set()

    async def finished(self) -> None:
        await self._closed.wait()

    # ------------------------------------------------------------------ event glue
    def handle(self, *events, validate: bool = True) -> None:
        """Feed events to the state machine; send the messages it returns. ``validate=False``:
        the events changed nothing a validation would look at (a heartbeat's figures)."""
        try:
            self._handle_events(events)
        finally:
            if validate and self.validating and self.status == "running":
                self._unvalidated.extend((type(ev).__name__, getattr(ev, "stimulus_id", "")) for ev in events)
                self._validate()

    def _handle_events(self, events) -> None:
        for inst in self.state.handle(*events):
            if type(inst) is ToWorker:
                peer = self.worker_peer.get(inst.worker)
            elif type(inst) is ToClient:
                peer = self.client_peer.get(inst.client)
            elif type(inst) is WorkerRetired:
                self._worker_retired(inst)
                continue
            elif type(inst) is ReplicationDone:
                fut = self._replication_waiters.pop(inst.request, None)
                if fut is not None and not fut.done():
                    fut.set_result(inst.result)
                continue
            else:
                raise TypeError(f"unknown scheduler instruction {inst!r}")
            if peer is not None:
                self.listener.send(peer, inst.msg)

    # ------------------------------------------------------------------ validation
    def _validate(self) -> None:
        """Run ``SchedulerState.validate()`` now, or soon if the last run was recent.

        validate() walks every task (tens of milliseconds at 10,000 tasks), so it runs after
        each event while that is cheap and at most a third of the time under load: after a
        check that took ``d`` seconds the next waits until ``2 d`` have passed, and one is
        then scheduled, so the state after the last event is always checked. The events
        since the previous check go into the report.
        """
        if self._validate_timer is not None:
            return
        wait = self._next_validation - time.perf_counter()
        if wait > 0:
            self._validate_timer = asyncio.get_running_loop().call_later(wait, self._validate_now)
        else:
            self._validate_now()

    def _validate_now(self) -> None:
        self._validate_timer = None
        if self.status != "running":
            return
        start = time.perf_counter()
        try:
            self.state.validate()
        except Exception as e:  # noqa: BLE001 - every failure of validate() is a broken invariant
            self._invariant_violated(e)
            return
        finally:
            end = time.perf_counter()
            self._next_validation = end + 2 * (end - start)
        self._unvalidated.clear()

    def _invariant_violated(self, exc: Exception) -> None:
        """Fail fast: log the violation with its story, tell the clients, close the scheduler.

        Going on with a corrupt state would turn one bug into lost or wrong results later,
        far from its cause; clients instead hear why their futures are lost (a warning, then
        ``scheduler-closing``), and the report stays in ``invariant_violations``.
        """
        import traceback

        events = list(self._unvalidated)
        keys = self._keys_named(exc)
        report = (f"{INVARIANT_VIOLATED} (scheduler.validate is on): {type(exc).__name__}: {exc}\n"
                  f"after events: {events[-20:]}\n"
                  + "".join(f"story of {k!r}: {self.state.story(k)[-20:]}\n" for k in keys)
                  + "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)))
        self.invariant_violations.append(report)
        self.events.append((time.time(), "invariant-violated", str(exc), events[-20:]))
        logger.critical("%s", report)
        text = (f"{INVARIANT_VIOLATED}: {type(exc).__name__}: {exc} (after {events[-5:]}); the scheduler "
                "closes rather than run on a corrupt state. Its log holds the story; please report it.")
        for peer in list(self.client_peer.values()):
            self.listener.send(peer, {"op": ops.WARNING, "text": text})
        # (not in the background: close() cancels and awaits those, and must not wait for itself)
        self._closing = asyncio.ensure_future(self.close())

    def _keys_named(self, exc: Exception, most: int = 5) -> list[str]:
        """Task keys an assertion names (validate() puts keys in its messages), for their stories."""
        words: list[str] = []

        def walk(x) -> None:
            if isinstance(x, str):
                words.append(x)
                words.extend(w.strip("'\"(),:") for w in x.split())
            elif isinstance(x, (tuple, list)):
                for y in x:
                    walk(y)

        walk(exc.args)
        return list(dict.fromkeys(w for w in words if w in self.state.tasks))[:most]

    def _peer_gone(self, peer: bytes) -> None:
        if peer in self.peer_worker:
            self._remove_worker(self.peer_worker[peer], "connection lost")
        elif peer in self.peer_client:
            self._remove_client(self.peer_client[peer])

    def _remove_worker(self, address: str, reason: str, forget_peer: bool = True) -> None:
        """A worker is gone (lost, silent, or told to restart: then ``forget_peer=False``, so
        that the close-worker queued for it still goes out)."""
        peer = self.worker_peer.pop(address, None)
        if peer is not None:
            self.peer_worker.pop(peer, None)
            if forget_peer:
                self.listener.forget_peer(peer)
        self.last_seen.pop(address, None)
        self.memory_history.pop(address, None)
        if address in self.state.workers:
            self.events.append((time.time(), "remove-worker", address, reason))
            logger.info("removing worker %s: %s", address, reason)
            self.handle(RemoveWorker(address, reason))
            self._tell_extensions("remove_worker", address, reason)
        self._pace_heartbeats()

    def _pace_heartbeats(self) -> None:
        """Recompute the workers' beat interval for their number; tell them all if it changed."""
        interval = heartbeat_interval(len(self.worker_peer), self._heartbeat_base,
                                      float(config.get("scheduler.heartbeats-per-second", 100)))
        if interval == self.heartbeat_interval:
            return
        logger.info("%d workers: heartbeats every %gs (was %gs)", len(self.worker_peer), interval,
                    self.heartbeat_interval)
        self.heartbeat_interval = interval
        for peer in self.worker_peer.values():
            self.listener.send(peer, {"op": ops.HEARTBEAT_INTERVAL, "interval": interval})

    def _worker_retired(self, inst: WorkerRetired) -> None:
        """A retirement ended: forget a closed worker's peer, answer whoever asked."""
        if inst.status == "retired":
            peer = self.worker_peer.pop(inst.worker, None)
            if peer is not None:
                self.peer_worker.pop(peer, None)
                self._retired_peers.append(peer)
                # (not listener.forget_peer: its queued close-worker must still go out)
            self._pace_heartbeats()
            self.last_seen.pop(inst.worker, None)
            self.memory_history.pop(inst.worker, None)
            self.events.append((time.time(), "remove-worker", inst.worker, "retired"))
            self._tell_extensions("remove_worker", inst.worker, "retired")
            logger.info("retired worker %s (%d keys moved)", inst.worker, len(inst.moved))
        elif inst.status == "cannot-retire":
            logger.warning("cannot retire worker %s: %s", inst.worker, inst.reason)
        result = {"status": inst.status, "moved": dict(inst.moved), "reason": inst.reason}
        for fut in self._retire_waiters.pop(inst.worker, ()):
            if not fut.done():
                fut.set_result(result)

    async def retire_workers(self, workers=None, close_workers: bool = True) -> dict:
        """Retire workers gracefully (their data moved to others first); {address: outcome}.

        ``workers``: addresses or names; None retires the idle workers the scheduler can
        spare (``SchedulerState.workers_to_close``). Each outcome is a dict with
        ``status`` (retired, drained, cannot-retire, lost, unknown), ``moved`` (key ->
        destination) and ``reason``.
        """
        if workers is None:
            workers = self.state.workers_to_close()
        names = [workers] if isinstance(workers, str) else list(workers)
        loop = asyncio.get_running_loop()
        futs: dict[str, asyncio.Future] = {}
        for name in names:
            addr = self.state.resolve_worker(name) or str(name)
            if addr not in futs:
                futs[addr] = loop.create_future()
                self._retire_waiters.setdefault(addr, []).append(futs[addr])
        self.handle(RetireWorkers(list(futs), close=bool(close_workers)))
        out = {}
        for addr, fut in futs.items():
            out[addr] = await fut
        return out

    def _remove_client(self, client: str) -> None:
        peer = self.client_peer.pop(client, None)
        if peer is not None:
            self.peer_client.pop(peer, None)
            self.listener.forget_peer(peer)
        self._tell_extensions("remove_client", client)  # e.g. progress drops the client's subscriptions
        self.handle(RemoveClient(client))

    async def _ttl_loop(self) -> None:
        """Remove workers silent for ``scheduler.worker-ttl``.

        Workers beat from a thread of their own, so silence means a gone, stopped or hung
        process, not a busy event loop. When the scheduler's own loop was blocked, this loop
        may wake before the receive loop has read the heartbeats that arrived meanwhile (its
        timer can be due in the very turn that blocked): a round that wakes much later than
        it asked judges nobody, and the next one, a quarter of the ttl later, does, once the
        heartbeats are read (tests/cluster/test_heartbeat_starvation.py: nobody is removed).
        """
        ttl = parse_timedelta(config.get("scheduler.worker-ttl", "30s"))
        interval = min(ttl / 4, 1.0)
        last = time.monotonic()
        while True:
            await asyncio.sleep(interval)
            now = time.monotonic()
            stalled, last = now - last > interval + ttl / 2, now
            if stalled:  # this loop was held up: what the workers sent is not read yet
                continue
            allowed = silence_allowed(ttl, self.heartbeat_interval, self._heartbeat_base)
            for addr, seen in list(self.last_seen.items()):
                if now - seen > allowed:
                    self._remove_worker(addr, f"no heartbeat for {allowed:g}s")

    # ------------------------------------------------------------------ messages
    def register_op(self, op: str, handler) -> None:
        """Let an extension serve an op: ``handler(peer, header, payload)``.

        The op's fields are declared in ``protocol/schemas.py`` (checked before any handler).
        An op has one handler: one served already (by the server or an extension) raises."""
        if op not in schemas.TO_SCHEDULER:
            raise ValueError(f"op {op!r} has no schema: declare its fields in protocol/schemas.py TO_SCHEDULER")
        if op in self._CLIENT_OPS or op in self._WORKER_OPS:
            raise ValueError(f"op {op!r} is served by the scheduler itself; each op has one handler")
        if op in self._extension_ops:
            old = self._extension_ops[op]
            owner = getattr(getattr(old, "__self__", None), "name", None) or repr(old)
            raise ValueError(f"op {op!r} is served already, by {owner!r}; each op has one handler")
        self._extension_ops[op] = handler

    def _tell_extensions(self, hook: str, *args) -> None:
        """Call an extension hook (``remove_client``, ``add_worker``...) on every extension having it.

        A hook that fails is logged: it never stops the others, nor what the server was doing."""
        for name, ext in list(self.extensions.items()):
            fn = getattr(ext, hook, None)
            if fn is not None:
                try:
                    fn(*args)
                except Exception:
                    logger.exception("scheduler extension %r: %s%r failed", name, hook, args)

    def _extension(self, name: str, what: str):
        """The extension ``name``; ``what`` needs it, and is refused when it is not loaded."""
        ext = self.extensions.get(name)
        if ext is None:
            loaded = [n for n in _extensions.EXTENSIONS if n in self.extensions]
            raise _extensions.ExtensionNotLoaded(name, what, loaded)
        return ext

    def send_to_client(self, client: str, msg: dict) -> None:
        """Push a message to a connected client (dropped if it is gone)."""
        peer = self.client_peer.get(client)
        if peer is not None:
            self.listener.send(peer, msg)

    def _handle(self, peer: bytes, header: dict, payload: list):
        op = header["op"]
        ext = self._extension_ops.get(op)
        if ext is not None:
            return ext(peer, header, payload)
        if op == ops.HEARTBEAT_WORKER and "worker" in header:
            # from a worker's liveness thread, on a socket of its own (so another peer), on behalf
            # of the registration whose connection id it names; one we removed is ignored here
            # (its own connection hears that it was removed)
            wid = header["worker"]
            alive = self.peer_worker.get(wid) if isinstance(wid, bytes) else None
            if alive is not None:
                self.last_seen[alive] = time.monotonic()
            return None
        worker = self.peer_worker.get(peer)
        if worker is not None:
            self.last_seen[worker] = time.monotonic()
            handler = self._WORKER_OPS.get(op)
            if handler is not None:
                return handler(self, worker, header)
        elif op in self._WORKER_OPS:
            # a worker we removed (e.g. silent past worker-ttl) still talks: tell it to restart
            # so its nanny brings it back and it registers afresh (a retired one just closes)
            retired = peer in self._retired_peers
            self.listener.send(peer, {"op": ops.CLOSE_WORKER, "restart": not retired,
                                      **({"reason": "retired"} if retired else {})})
            return {"status": "retired"} if retired and op == ops.RETIRE_WORKER else None
        handler = self._CLIENT_OPS.get(op)
        if handler is None:
            owner = _extensions.op_owners().get(op)
            if owner is not None:  # an op of an extension this scheduler does not load
                self._extension(owner, f"op {op!r}")
            raise TypeError(f"scheduler cannot handle op {op!r}")
        return handler(self, peer, header, payload)

    # --- from workers ---
    def _op_task_finished(self, worker, h):
        diagnostics = self.extensions.get("diagnostics")
        if diagnostics is not None:  # the task stream (client.get_task_stream)
            diagnostics.task_ran(worker, h, "memory")
        self.handle(TaskFinished(worker, h["key"], h.get("nbytes", 0), h.get("type"), h.get("start"), h.get("stop"),
                                 seceded=h.get("seceded") or 0.0, inline=h.get("inline")))

    def _op_task_erred(self, worker, h):
        diagnostics = self.extensions.get("diagnostics")
        if diagnostics is not None:
            diagnostics.task_ran(worker, h, "error")
        self.handle(TaskErred(worker, h["key"], h.get("exception", b""), h.get("traceback", b""),
                              h.get("text", ""), h.get("start"), h.get("stop")))

    def _op_add_keys(self, worker, h):
        self.handle(AddKeys(worker, dict(h.get("nbytes", {}))))

    def _op_missing_data(self, worker, h):
        self.handle(MissingData(worker, h["key"], h.get("errant_worker", "")))

    def _op_reschedule(self, worker, h):
        self.handle(Reschedule(worker, h["key"]))

    def _op_worker_status(self, worker, h):
        self.events.append((time.time(), "worker-status", worker, h.get("status")))
        self.handle(WorkerStatus(worker, h.get("status", "running")))

    def _op_heartbeat_worker(self, worker, h):
        ws = self.state.workers.get(worker)
        if ws is None:
            return
        m = h.get("metrics", {})
        hist = self.memory_history.get(worker)
        if hist is None:
            hist = self.memory_history[worker] = deque(maxlen=3600)
        hist.append((m.get("time", time.time()), m.get("rss", 0), m.get("managed", 0), m.get("spilled", 0)))
        status = ws.status
        beat = WorkerHeartbeat(worker, m)
        self.handle(beat, validate=False)  # its figures; "paused" may change its status
        if ws.status != status:
            self.events.append((time.time(), "worker-status", worker, ws.status))
            if self.validating and self.status == "running":  # a status change is worth a check
                self._unvalidated.append(("WorkerHeartbeat", beat.stimulus_id))
                self._validate()

    def _op_unregister_worker(self, worker, h):
        self._remove_worker(worker, h.get("reason", "worker closed"))
        return {}

    async def _op_retire_worker(self, worker, h):
        """A worker asks to be retired (its --lifetime ended, or it got SIGTERM)."""
        self.events.append((time.time(), "retire-worker", worker, h.get("reason", "")))
        logger.info("worker %s asks to retire: %s", worker, h.get("reason", ""))
        return (await self.retire_workers([worker]))[worker]

    def _op_steal_response(self, worker, h):
        self.handle(StealResponse(worker, h["key"], h.get("state")))

    def _op_task_seceded(self, worker, h):
        self.handle(TaskSeceded(worker, h["key"]))

    def _op_task_rejoined(self, worker, h):
        self.handle(TaskRejoined(worker, h["key"]))

    _WORKER_OPS = {
        ops.TASK_SECEDED: _op_task_seceded, ops.STEAL_RESPONSE: _op_steal_response, ops.TASK_REJOINED: _op_task_rejoined,
        ops.TASK_FINISHED: _op_task_finished, ops.TASK_ERRED: _op_task_erred, ops.ADD_KEYS: _op_add_keys,
        ops.MISSING_DATA: _op_missing_data, ops.RESCHEDULE: _op_reschedule, ops.WORKER_STATUS: _op_worker_status,
        ops.HEARTBEAT_WORKER: _op_heartbeat_worker, ops.UNREGISTER_WORKER: _op_unregister_worker,
        ops.RETIRE_WORKER: _op_retire_worker,
    }

    # --- registration ---
    def _op_register_worker(self, peer, h, payload):
        address = h["address"]
        check_peer(h, f"worker {address}")  # an incompatible worker is refused before anything is kept
        if address in self.worker_peer:
            self._remove_worker(address, "re-registered")
        self.worker_peer[address] = peer
        self.peer_worker[peer] = address
        self.last_seen[address] = time.monotonic()
        self.events.append((time.time(), "add-worker", address, h.get("name")))
        self._tell_extensions("add_worker", address, peer)  # e.g. uploaded files go first, before any task
        # host: the host of its address (two machines of one hostname are two hosts);
        # hostname: the machine's name, as it says
        self.handle(AddWorker(address, int(h.get("nthreads", 1)), h.get("name"), h.get("memory_limit"),
                              h.get("resources"), h.get("pid"), host_of(address), h.get("local_directory"),
                              hostname=h.get("hostname")))
        self.worker_environment[address] = {"prefix": h.get("prefix"), "error": h.get("environment_error")}
        self._pace_heartbeats()  # (the others hear a new interval; this one reads it in the reply)
        return {"scheduler_id": self.id, "heartbeat_interval": self.heartbeat_interval, **announce()}

    def _op_register_client(self, peer, h, payload):
        check_peer(h, "client")  # an incompatible client is refused before anything is kept
        client = str(h.get("client") or peer.decode(errors="replace"))
        self.client_peer[client] = peer
        self.peer_client[peer] = client
        self.handle(AddClient(client))
        self._tell_extensions("add_client", client)
        return {"scheduler_id": self.id, "address": self.address, "dashboard": self.dashboard_info(), **announce()}

    def dashboard_info(self) -> dict | None:
        """What a registering client hears of the dashboard page (``schemas.DASHBOARD``): its
        port, its token, and its host when it listens on a host of its own; None when this
        scheduler serves none.

        >>> Scheduler().dashboard_info() is None      # not started, or no dashboard_address
        True
        """
        server = self.dashboard
        if server is None:
            return None
        return {"port": server.port, "token": self.security.dashboard_token(), "host": self._dashboard_host}

    def _op_versions(self, peer, h, payload):
        """This process's python and package versions (``client.get_versions()``)."""
        return {"versions": package_versions(h.get("packages") or ())}

    def _op_shutdown(self, peer, h, payload):
        """``client.shutdown()``: reply, then close (workers are told to close, clients that
        the scheduler is closing)."""
        client = self._client_of(peer)
        self.events.append((time.time(), "shutdown", client))
        logger.info("shutting down: asked by %s (client.shutdown())", client)
        if self._closing is None:
            # (after this reply is queued; not in the background: close() cancels and awaits those)
            self._closing = asyncio.ensure_future(self.close())
        return {}

    def _client_of(self, peer) -> str:
        client = self.peer_client.get(peer)
        if client is None:
            raise PermissionError("register with register-client before sending work")
        return client

    # --- from clients ---
    def _op_update_graph(self, peer, h, payload):
        client = self._client_of(peer)
        tasks = []
        wire = h.pop("tasks", None) or []
        # A large graph makes several objects per task and no reference cycles: with the
        # collector running, its collections would rescan every task state each time.
        with gc_paused():
            columns = h.pop("columns", None)  # (fields checked by schemas.TO_SCHEDULER)
            if columns is not None:  # a delayed graph's calls: ordered here (see protocol/update_graph.py)
                tasks = column_tasks(columns, wire, make_task=NewTask)
            else:
                for i, t in enumerate(wire):
                    wire[i] = None  # each decoded dict goes as soon as its NewTask exists (peak memory)
                    tasks.append(entry_task(t, make_task=NewTask))
            del wire, columns
            graph = UpdateGraph(client, tasks, list(h.get("keys", ())), functions=h.get("functions"))
            self._tell_extensions("update_graph", graph)  # e.g. scheduler plugins (before its transitions)
            self.handle(graph)
        progress = self.extensions.get("progress")
        if h.get("parent") is not None and progress is not None:  # sent from inside a task
            progress.launched(h["parent"], tasks)  # progress bars counting it count what it launched
        return {} if h.get("rid") is not None else None

    def _op_client_desires(self, peer, h, payload):
        self.handle(ClientDesiresKeys(self._client_of(peer), list(h.get("keys", ()))))

    def _op_client_releases(self, peer, h, payload):
        self.handle(ClientReleasesKeys(self._client_of(peer), list(h.get("keys", ()))))

    def _op_cancel(self, peer, h, payload):
        self.handle(CancelKeys(self._client_of(peer), list(h.get("keys", ())), bool(h.get("force"))))
        return {}

    def _op_retry(self, peer, h, payload):
        self.handle(RetryKeys(self._client_of(peer), list(h.get("keys", ()))))
        return {}

    def _op_who_has(self, peer, h, payload):
        keys = list(h.get("keys", ()))
        return {"who_has": self.state.who_has(keys),
                "states": {k: (self.state.tasks[k].state if k in self.state.tasks else "forgotten") for k in keys}}

    def _op_scatter_done(self, peer, h, payload):
        client = self._client_of(peer)
        by_worker: dict[str, dict] = {}
        nbytes = h.get("nbytes", {})
        for key, workers in h.get("who_has", {}).items():
            for w in workers:
                by_worker.setdefault(w, {})[key] = nbytes.get(key, 0)
        for w, nb in by_worker.items():
            self.handle(AddKeys(w, nb, client=client))
        return {}

    def _op_close_client(self, peer, h, payload):
        client = self.peer_client.get(peer)
        if client is not None:
            self._remove_client(client)
        return {}

    def _op_heartbeat_client(self, peer, h, payload):
        return {}

    def _op_scheduler_info(self, peer, h, payload):
        return {"info": self.info()}

    async def _op_run_on_scheduler(self, peer, h, payload):
        self._client_of(peer)
        objs = unpack_objects(h, payload)
        return await call_user_function(objs["func"], objs.get("args", ()), objs.get("kwargs", {}), "scheduler", self)

    async def _op_start_ipython(self, peer, h, payload):
        self._client_of(peer)
        from ..jupyter.kernel import start_kernel

        info = await start_kernel({"scheduler": self, "state": self.state}, name="scheduler",
                                  ip=config.get("jupyter.kernel-ip", "127.0.0.1"))
        return {"info": info}

    def _op_who_can_run(self, peer, h, payload):
        return {"result": {k: self.state.who_can_run(k) for k in h.get("keys", ())}}

    async def _no_worker_warnings(self) -> None:
        """Tell clients once about tasks that no worker can run for a while."""
        delay = parse_timedelta(config.get("scheduler.no-worker-warning", "10s"))
        first_seen: dict[str, float] = {}
        warned: set[str] = set()
        while True:
            await asyncio.sleep(min(delay / 2, 1.0))
            now = time.time()
            stuck = {ts.key: ts for ts in self.state.unrunnable}
            for k in list(first_seen):
                if k not in stuck:
                    first_seen.pop(k)
                    warned.discard(k)
            for key, ts in stuck.items():
                since = first_seen.setdefault(key, now)
                if now - since >= delay and key not in warned:
                    warned.add(key)
                    why = self.state.who_can_run(key)["reason"]
                    text = (f"task {key!r} has waited {now - since:.0f}s because no worker can run it: {why}. "
                            "Start a worker that can (e.g. `xsched worker ... --resources`), or cancel it.")
                    for client in set(ts.who_wants) or set(self.client_peer):
                        self.send_to_client(client, {"op": ops.WARNING, "text": text})

    def _op_memory_history(self, peer, h, payload):
        names = {a: ws.name for a, ws in self.state.workers.items()}
        return {"history": {a: {"name": names.get(a, a), "samples": [list(x) for x in hist]}
                            for a, hist in self.memory_history.items()}}

    def _op_ping(self, peer, h, payload):
        return {"address": self.address}

    async def _op_retire_workers(self, peer, h, payload):
        self._client_of(peer)
        return {"retired": await self.retire_workers(h.get("workers"), bool(h.get("close_workers", True)))}

    async def _op_replicate(self, peer, h, payload):
        self._client_of(peer)
        return await self._replication(Replicate(uuid.uuid4().hex, list(h["keys"]), h.get("n"),
                                                 _names(h.get("workers"))), h.get("timeout"))

    async def _op_rebalance(self, peer, h, payload):
        self._client_of(peer)
        keys = h.get("keys")
        return await self._replication(Rebalance(uuid.uuid4().hex, None if keys is None else list(keys),
                                                 _names(h.get("workers"))), h.get("timeout"))

    async def _replication(self, ev, timeout: float | None) -> dict:
        """Feed a Replicate or Rebalance event; answer once its copies are in place
        (``ReplicationDone``), or after ``timeout`` seconds with what was done by then."""
        fut = self._replication_waiters[ev.request] = asyncio.get_running_loop().create_future()
        try:
            self.handle(ev)
            try:
                result = await asyncio.wait_for(asyncio.shield(fut), timeout)
            except asyncio.TimeoutError:
                self.handle(AbandonReplication(ev.request, f"the {timeout:g}s timeout passed"))
                result = fut.result()  # (AbandonReplication answers at once)
        finally:
            self._replication_waiters.pop(ev.request, None)
        return {"refused": result["refused"]} if "refused" in result else {"result": result}

    async def _op_restart(self, peer, h, payload):
        client = self._client_of(peer)
        timeout = parse_timedelta(h.get("timeout") or "60s")
        env = h.get("environment")
        if env is not None and env not in self._extension("environments", "restart(environment=...)").paths:
            raise KeyError(f"restart: environment {env!r} was not shipped (environment-done first)")
        return await self.restart(f"the cluster was restarted by {client} (client.restart()): every worker "
                                  "process started afresh and its data is gone; submit the work again", timeout,
                                  environment=env, wait=h.get("wait", True) is not False)

    async def restart(self, reason: str, timeout: float = 60.0, environment: str | None = None,
                      wait: bool = True) -> dict:
        """Restart every worker process (through its nanny), forget every task; wait until
        as many workers as before have registered again. Returns ``{"workers": n}``, with
        ``"error"`` saying what is missing if they did not all come back in time.

        ``environment``: the id of an environment shipped with ``environment-*`` ops; each
        worker restarts with that environment's Python, and ``error`` names the workers
        that could not (their nanny started them in their previous environment). ``wait=False``:
        returns once the workers are told, ``{"workers": 0}`` (they register again in their own time)."""
        n = len(self.state.workers)
        self.events.append((time.time(), "restart", n, reason))
        logger.info("restarting %d workers: %s", n, reason)
        envs = {}
        if environment:
            envs = self._extension("environments", "restart(environment=...)").environment_for(environment)
        self.handle(Restart(reason, envs))
        self._tell_extensions("restart", reason)  # (e.g. futures kept in a Queue or Variable are gone)
        for addr in list(self.worker_peer):
            self._detach_worker(addr, "restart")
        self.last_seen.clear()
        self.memory_history.clear()
        if not wait:
            return {"workers": len(self.state.workers)}
        if not await self._workers_back(n, timeout):
            have = len(self.state.workers)
            return {"workers": have, "error": (
                f"only {have} of {n} workers came back within {timeout:.0f}s of the restart. Workers "
                "restart through their nanny: ones started with --no-nanny or by "
                "LocalCluster(processes=False) do not come back; see the workers' logs for others")}
        out = {"workers": len(self.state.workers)}
        if environment:
            wanted = set(envs.values())
            bad = {}
            for addr, ws in self.state.workers.items():
                info = self.worker_environment.get(addr, {})
                prefix = info.get("prefix") or ""
                if not any(prefix == os.path.normpath(p) for p in wanted):
                    bad[addr] = info.get("error") or (
                        f"runs in {prefix or 'an unknown environment'} (it joined after the environment was "
                        "shipped, or its host has no copy)")
            if bad:
                out["error"] = (f"{len(bad)} of {len(self.state.workers)} workers did not restart in the new "
                                "environment and run in their previous one: "
                                + "; ".join(f"{a}: {e}" for a, e in sorted(bad.items())))
        return out

    def _detach_worker(self, addr: str, reason: str) -> None:
        """Forget the connection of a worker told to restart (not ``listener.forget_peer``:
        the queued close-worker must still go out); what it said after is answered by
        another close-worker (``_handle``)."""
        peer = self.worker_peer.pop(addr)
        self.peer_worker.pop(peer, None)
        self.events.append((time.time(), "remove-worker", addr, reason))
        self._tell_extensions("remove_worker", addr, reason)

    async def _op_restart_workers(self, peer, h, payload):
        client = self._client_of(peer)
        return await self.restart_workers(h["workers"], parse_timedelta(h.get("timeout") or "60s"),
                                          f"restarted by {client} (client.restart_workers())")

    async def restart_workers(self, workers, timeout: float, reason: str) -> dict:
        """Restart some workers through their nannies; the rest of the cluster keeps its
        work. Their tasks are handled as a lost worker's (``RemoveWorker``: what ran there
        is rescheduled, results held only there are computed again). Waits until as many
        workers as before have registered; returns ``{"workers": [addresses restarted]}``,
        with ``"error"`` when some are unknown or did not come back in time."""
        names = [workers] if isinstance(workers, str) else list(workers)
        addrs = list(dict.fromkeys(self.state.resolve_worker(n) or str(n) for n in names))
        unknown = [a for a in addrs if a not in self.worker_peer]
        if unknown:
            return {"workers": [], "error": f"restart_workers: {', '.join(unknown)} not among the scheduler's "
                                            f"workers ({', '.join(sorted(self.worker_peer)) or 'none'})"}
        n = len(self.state.workers)
        for addr in addrs:
            logger.info("restarting worker %s: %s", addr, reason)
            self.listener.send(self.worker_peer[addr], {"op": ops.CLOSE_WORKER, "restart": True, "reason": reason})
            self._remove_worker(addr, reason, forget_peer=False)
        if not await self._workers_back(n, timeout):
            return {"workers": addrs, "error": (
                f"only {len(self.state.workers)} of {n} workers were back within {timeout:.0f}s of restarting "
                f"{len(addrs)}; workers restart through their nanny (not those started with --no-nanny or "
                "processes=False)")}
        return {"workers": addrs}

    async def _workers_back(self, n: int, timeout: float) -> bool:
        """Whether ``n`` workers are registered within ``timeout`` seconds (after a restart)."""
        deadline = time.monotonic() + timeout
        while len(self.state.workers) < n:
            if time.monotonic() > deadline:
                return False
            await asyncio.sleep(0.05)
        return True

    _CLIENT_OPS = {
        ops.REGISTER_WORKER: _op_register_worker, ops.REGISTER_CLIENT: _op_register_client,
        ops.UPDATE_GRAPH: _op_update_graph, ops.CLIENT_DESIRES_KEYS: _op_client_desires,
        ops.CLIENT_RELEASES_KEYS: _op_client_releases, ops.CANCEL_KEYS: _op_cancel, ops.RETRY_KEYS: _op_retry,
        ops.WHO_HAS: _op_who_has, ops.SCATTER_DONE: _op_scatter_done, ops.CLOSE_CLIENT: _op_close_client,
        ops.HEARTBEAT_CLIENT: _op_heartbeat_client, ops.SCHEDULER_INFO: _op_scheduler_info,
        ops.RUN_ON_SCHEDULER: _op_run_on_scheduler, ops.START_IPYTHON: _op_start_ipython, ops.PING: _op_ping,
        ops.MEMORY_HISTORY: _op_memory_history, ops.WHO_CAN_RUN: _op_who_can_run,
        ops.RETIRE_WORKERS: _op_retire_workers, ops.RESTART: _op_restart, ops.RESTART_WORKERS: _op_restart_workers,
        ops.REPLICATE: _op_replicate, ops.REBALANCE: _op_rebalance,
        ops.VERSIONS: _op_versions, ops.SHUTDOWN: _op_shutdown,
    }

    # ------------------------------------------------------------------ info
    def info(self) -> dict:
        """What ``client.scheduler_info()`` returns: workers, their memory, task counts, and
        as dask's ``services`` (``{"dashboard": port}`` when it serves one), ``n_workers``,
        ``total_threads`` and ``total_memory`` (the workers' limits summed; 0 for none).

        Per worker, ``last_seen`` is the seconds since its last message. ``tables``: the sizes
        of what the scheduler keeps per task and per client, for leak checks
        (benchmarks/clients.py): ``tasks`` known, ``clients`` in the state machine (pseudo-clients
        such as dataset holders included), ``wants`` (keys wanted, summed over those clients),
        ``client_peers`` (connected clients) and ``peers`` (peers the listener keeps: clients,
        and two per worker, its connection and its heartbeat thread's socket).
        """
        st = self.state
        workers = {}
        for addr, ws in st.workers.items():
            m = ws.metrics
            workers[addr] = {
                "name": ws.name, "pid": ws.pid, "host": ws.host, "hostname": ws.hostname, "nthreads": ws.nthreads,
                "memory_limit": ws.memory_limit, "resources": ws.resources, "status": ws.status,
                "local_directory": ws.local_directory,
                "processing": len(ws.processing), "in_memory": len(ws.has_what), "nbytes": ws.nbytes,
                "memory": {k: m.get(k, 0) for k in ("rss", "managed", "unmanaged", "spilled", "spilled_count")},
                "metrics": {k: v for k, v in m.items() if isinstance(v, (int, float, str, bool)) or v is None},
                "last_seen": (time.monotonic() - self.last_seen[addr]) if addr in self.last_seen else None,
            }
        counts = Counter(ts.state for ts in st.tasks.values())
        return {
            "type": "Scheduler", "id": self.id, "address": self.address, "started": self.start_time,
            # (as dask's: the dashboard's port under services, the workers' totals)
            "services": {"dashboard": self.dashboard.port} if self.dashboard is not None else {},
            "n_workers": len(workers), "total_threads": sum(w["nthreads"] for w in workers.values()),
            "total_memory": sum(w["memory_limit"] or 0 for w in workers.values()),
            "workers": workers, "tasks": dict(counts), "queued": st.n_queued, "clients": len(self.client_peer),
            "transitions": st.transition_counter, "stealing": dict(st.steal_counts),
            "tables": self._table_sizes(),
        }

    def _table_sizes(self) -> dict:
        """``info()["tables"]``: counts only, so a leak shows without a dump of the state."""
        st = self.state
        statistics = getattr(self.listener, "statistics", None)
        return {"tasks": len(st.tasks), "clients": len(st.clients),
                "wants": sum(len(wanted) for wanted in st.clients.values()),
                "client_peers": len(self.client_peer),
                "peers": statistics()["peers"] if statistics is not None else None}


def _names(workers) -> list | None:
    """A request's ``workers`` (one address or name, or a list of them) as a list; None stays None."""
    if workers is None:
        return None
    return [workers] if isinstance(workers, str) else list(workers)
