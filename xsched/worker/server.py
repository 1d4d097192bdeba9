"""The worker process's server: sockets, thread pool and data store around ``WorkerState``.

Data flow::

    scheduler --compute-task/free-keys--> Connection --events--> WorkerState.handle
    peers/clients --get-data/put-data/run--> Listener (this worker's address); the slow parts
        (reading spilled values back, pickling and unpickling data, a plain function of
        client.run) run in threads, so the loop keeps answering everyone meanwhile
    WorkerState instructions:
        Execute(key)       -> thread pool runs the task -> ExecuteSuccess/Failure event
        GatherDep(w, keys) -> get-data request to peer w -> GatherDepSuccess/Failure event
        FreeData(keys)     -> delete from the data store
        SendToScheduler    -> batched message on the scheduler connection
    heartbeat loop: every worker.heartbeat-interval, metrics to the scheduler
    alive thread (worker/heartbeat.py): every worker.heartbeat-interval, a heartbeat from a
        thread and socket of its own, so a blocked event loop does not look like a dead worker
    scheduler lost (connection dropped): close, exit 1; the nanny starts the worker again,
        and the new process waits up to worker.reconnect-timeout for the scheduler to return
    task thread: secede() -> Secede event (slot free: another task starts; scheduler told
        task-seceded); rejoin() -> Rejoin event, the thread waits until Rejoined
    scheduler --steal-request--> StealRequest event --steal-response--> scheduler
    task thread: xsched.log_event / print / warn -> _log_event -> log-event to the scheduler,
        sent ahead of the outcomes of tasks that end after it (``_drain_from_threads``)
    clients --get-logs / call-stack / profile / dump-state--> worker/diagnostics.py (the task
        threads by key: ``_task_threads``); --interrupt-task--> worker/interrupts.py
        (TaskInterrupted in that task's thread, only while its own code runs)
    heartbeat loop: the transfers and spill reads and writes since the last beat
        (``activity``) --worker-activity--> the scheduler (the dashboards' task streams)
    p2p shuffle: transfer task threads --shuffle-receive--> peers; peers --shuffle-receive-->
        worker/shuffle.py (buffer, files); scheduler --shuffle-forget--> drop older runs
    task thread: a task raised -> worker/debugging.py keeps its frames (post-mortem);
        breakpoint() -> _breakpoint: the thread waits in pdb (worker/debugging.py)
    clients --debug-attach / -input / -detach / -list / -release / -recreate--> worker/debugging.py
    scheduler --upload-file--> written to our upload directory, imported --upload-file-done-->
    scheduler --environment-*--> EnvironmentReceiver (worker/environments.py) --ack/ready-->
    scheduler --plugin-add/-remove--> WorkerPlugins, or this worker's nanny (worker/plugins.py)
        --plugin-done-->; after each handle(), the transitions the state machine logged go
        to the plugins' transition hooks. Under a nanny, before registering: get-nanny-plugins,
        and what the nanny lacks is set up there first (then this process restarts unregistered)
    close-worker {restart, environment} -> a note for the nanny, exit EXIT_RESTART
    graceful retirement (--lifetime ends, or SIGTERM: ``close_gracefully``):
        retire-worker request -> scheduler copies our unique data to others
        (acquire-replicas -> their GatherDep -> get-data from us) -> close-worker
        {reason: retired} -> close, exit code 0 (the nanny does not restart us)

All state changes happen on the event loop thread; task threads only compute and hand
their result back with ``call_soon_threadsafe``.
"""

from __future__ import annotations

import asyncio
import collections
import contextvars
import inspect
import logging
import os
import pickle
import random
import socket
import sys
import tempfile
import threading
import time
import uuid
from typing import Any

import psutil

from .. import config
from ..background import Background
from ..comm import CommClosedError, Connection, ConnectionPool, Listener, Msg, RemoteError

from ..errors import _safe_text, pack_exception
from ..graph.spec import Task, execute
from ..protocol.bulk import BulkServer, expect_data, get_data, serve_data, with_pushed
from ..protocol import ops, schemas
from ..protocol.messages import split_objects, unpack_objects
from ..protocol.remote import with_server
from ..protocol.addressing import is_wildcard, join, local_ip_for, split
from ..protocol.registry import connection_info
from ..protocol.security import Security
from ..protocol.serialize import SerializationError, dumps, frame_bytes, loads
from ..protocol.tasks import loads_task
from ..protocol.versions import IncompatibleVersionError, announce, check_reply, package_versions, refusal_in
from ..sizeof import sizeof
from ..units import parse_bytes, parse_timedelta
from .actors import ActorHost
from .calls import _call_in_thread, _dumps_in_thread, _error_reply
from .debugging import Debugging
from .environments import EnvironmentReceiver, write_restart_note
from .heartbeat import AliveThread
from .interrupts import TaskInterrupts
from .memory import MemoryMonitor, Thresholds
from .nanny import EXIT_RESTART, RESTARTED_VAR
from .plugins import NannyLink, WorkerPlugins, outcome, sync_nanny
from .postmortem import task_traceback
from .shuffle import ShuffleService
from .spill import SpillBuffer, WorkerDirectory, worker_directory
from .threads import TaskThreads
from .uploads import load_file
from .. import logs, task_context
from . import diagnostics
from .state import (
    AcquireReplicas, ComputeTask, Execute, ExecuteFailure, ExecuteSuccess, FreeData, FreeKeys, GatherDep,
    GatherDepFailure, GatherDepSuccess, Pause, Rejoin, Rejoined, Secede, SendToScheduler, StealRequest, Unpause,
    UpdateData,
    WorkerState,
)

logger = logging.getLogger("xsched.worker")

#: transfers and spill reads and writes kept between two heartbeats (the oldest go first)
ACTIVITY_RECORDS = 2000

_current_worker: "Worker | None" = None
_thread_state = task_context.thread_state  # (kept under its old name for callers)
get_worker = task_context.get_worker


def _inline(value, nbytes: int) -> bytes | None:
    """The pickled ``value`` when it fits in ``INLINE_RESULT_BYTES``, for task-finished.

    A client waiting for a small result then has it with the scheduler's key-in-memory
    and asks no worker for it: one request/reply less per ``submit().result()``; and the
    scheduler hands a small input to dependents elsewhere with their compute-task. The
    value stays here as usual (a second client, a lost message all fetch it). Values that
    do not pickle to one small frame go the usual way; the pickling stops as soon as it
    passes the limit, since ``sizeof`` can badly underestimate an object of a class it
    does not know (one holding a large array, say).
    """
    if nbytes > INLINE_RESULT_BYTES:
        return None
    out = _Bounded(INLINE_RESULT_BYTES)
    try:
        pickle.Pickler(out, protocol=5, buffer_callback=_out_of_band).dump(value)
    except Exception:  # noqa: BLE001 - too big, out-of-band buffers, unpicklable: fetched as before
        return None
    blob = b"".join(out.parts)
    if b"__main__" in blob:  # by reference to a notebook's object: only the fetch (cloudpickle) sends it
        return None
    return blob


class _TooBig(Exception):
    pass


class _Bounded:
    """A write-only file that refuses to grow past ``limit`` bytes."""

    __slots__ = ("parts", "size", "limit")

    def __init__(self, limit: int) -> None:
        self.parts: list[bytes] = []
        self.size = 0
        self.limit = limit

    def write(self, data) -> int:
        self.size += len(data)
        if self.size > self.limit:
            raise _TooBig
        self.parts.append(bytes(data))
        return len(data)


def _out_of_band(buffer) -> None:
    raise _TooBig  # (a buffer outside the pickle: not one small frame)


def _seceded_since(at: float | None) -> float:
    """Seconds since ``at`` (a ``time.monotonic()`` reading taken at a secede), 0 for None.

    A monotonic clock: a wall-clock step back would make the time negative, which the
    scheduler's schema refuses, and with it the task-finished message that carries it."""
    return 0.0 if at is None else max(time.monotonic() - at, 0.0)


#: One get-data reply carries values of at most this share of the worker's memory limit
#: (and at least ``MIN_REPLY_BYTES``, and always one value): the rest are named in its
#: ``more`` and asked for again, so a gather of more than the worker holds in memory reads
#: its spilled values back a share at a time (all at once, they killed the worker).
REPLY_SHARE = 0.1
MIN_REPLY_BYTES = 16 * 2**20
#: get-data replies up to this many bytes, all in memory, are pickled on the event loop
#: (and fetched values of plain small types up to this many are stored there).
INSTANT_REPLY_BYTES = 64 * 1024
_SCALARS = frozenset({int, float, bool, complex, type(None)})
#: A result a client waits for travels inline in task-finished up to this many pickled
#: bytes (the scheduler forwards it and keeps nothing; the client keeps it with the Future).
INLINE_RESULT_BYTES = 1024


def lifetime_after(lifetime: float | None, stagger: float = 0.0, rng=random) -> float | None:
    """Seconds until a worker with ``--lifetime``/``--lifetime-stagger`` retires: the
    lifetime minus a random amount up to the stagger (the stagger is capped at the
    lifetime, so the result is never negative); None without a lifetime.

    >>> lifetime_after(100, 0), lifetime_after(None, 5)
    (100.0, None)
    >>> 90 <= lifetime_after(100, 10) <= 100, lifetime_after(5, 60) >= 0
    (True, True)
    """
    if lifetime is None:
        return None
    lifetime, stagger = max(float(lifetime), 0.0), max(float(stagger or 0), 0.0)
    return lifetime - rng.uniform(0.0, min(stagger, lifetime))


def registration_timeout(environ=os.environ) -> float:
    """Seconds a starting worker waits for the scheduler to accept its registration.

    A first start waits ``comm.timeouts.connect``: a wrong address or secret is reported
    quickly. A worker its nanny restarted (``XSCHED_NANNY_RESTARTS`` set) lost its scheduler
    or crashed; the scheduler may itself be restarting, so it waits at least
    ``worker.reconnect-timeout``.

    >>> registration_timeout({}) == parse_timedelta(config.get("comm.timeouts.connect"))
    True
    >>> registration_timeout({RESTARTED_VAR: "1"}) >= parse_timedelta(config.get("worker.reconnect-timeout"))
    True
    """
    timeout = parse_timedelta(config.get("comm.timeouts.connect", "10s"))
    if environ.get(RESTARTED_VAR):
        timeout = max(timeout, parse_timedelta(config.get("worker.reconnect-timeout", "20s")))
    return timeout


class Worker:
    """A worker: runs tasks in ``nthreads`` threads and serves its data to peers.

    >>> # normally started by `xsched worker` or LocalCluster; in asyncio code:
    >>> # w = await Worker("tcp://127.0.0.1:8786", security=sec).start()
    >>> # (``security`` left out: found as a Client finds it, e.g. for a scheduler this user runs;
    >>> # ``async with Worker(address) as w`` starts it and closes it on leaving)
    """

    #: the worker plugins here (made by ``__init__``; None in a subclass that skips it, as the
    #: simulator's workers do: then nothing is told of transitions)
    _plugins: WorkerPlugins | None = None
    #: post-mortems and debugging sessions (worker/debugging.py; None where ``__init__`` is skipped)
    debugging: Debugging | None = None
    #: the actors held here (worker/actors.py; None where ``__init__`` is skipped)
    actors: ActorHost | None = None

    def __init__(self, scheduler_address: str, security: Security | None = None, nthreads: int = 1,
                 name: str | None = None,
                 memory_limit: int | None = None, resources: dict | None = None,
                 local_directory: str | None = None, host: str | None = None, data=None,
                 lifetime: float | None = None, lifetime_stagger: float = 0.0, retire_timeout: float = 30.0,
                 nanny_directory: str | None = None):
        if security is None:  # (the secret as a Client finds it: $XSCHED_SECRET, this user's schedulers)
            scheduler_address, security = connection_info(scheduler_address, None, None,
                                                          mode=config.get("comm.security", "auto"))
        self.scheduler_address = scheduler_address
        self.security = security
        self.nthreads = int(nthreads)
        self.name = name
        self.memory_limit = memory_limit
        self.resources = dict(resources or {})
        self.local_directory = local_directory
        self.host = host
        # --lifetime: retire gracefully after lifetime minus a random part of the stagger
        self.lifetime = lifetime_after(lifetime, lifetime_stagger)
        self.retire_timeout = float(retire_timeout)
        self.retired = False  # the scheduler retired us: exit 0, whatever arrives later
        self._spill_home: WorkerDirectory | None = None  # where values spill, locked while this worker lives
        self._upload_home: WorkerDirectory | None = None  # files sent by client.upload_file, likewise
        self._environments = None  # environments shipped for client.restart(environment=...)
        # the directory our nanny shares with its workers (None: no nanny); nanny plugins go through it
        self.nanny_directory = nanny_directory
        self._nanny = NannyLink(nanny_directory) if nanny_directory else None
        self.data = data if data is not None else self._make_store()
        self.address: str | None = None
        self.state: WorkerState | None = None
        self.status = "created"
        self.exit_code = 0  # the process's exit code after close: non-zero asks the nanny to restart
        self.listener: Listener | None = None
        self.bulk: BulkServer | None = None
        # function id -> pickled function, as the scheduler sent them (with the first task of each
        # here) and until it says forget-functions; task specs refer to them by id
        self.functions: dict[bytes, bytes] = {}
        self.scheduler: Connection | None = None
        self.pool = ConnectionPool(security)
        self.actors = ActorHost(self)  # client.submit(cls, actor=True): instances held here (worker/actors.py)
        self.shuffles = ShuffleService(self)  # the p2p shuffle's pieces sent and received here (worker/shuffle.py)
        self.executor = TaskThreads("xsched-task")
        self.loop: asyncio.AbstractEventLoop | None = None
        self._rejoin_events: dict[str, threading.Event] = {}
        # events from task threads (finished, seceded), in their order, fed to the state
        # machine by one loop callback however many arrive before it runs
        self._from_threads: list = []
        self._from_threads_lock = threading.Lock()
        self._from_threads_signalled = False
        self._background = Background("worker")
        self._plugins = WorkerPlugins(self, self._background.spawn)  # client.register_plugin
        self.debugging = Debugging.from_config(self)  # client.debug, breakpoints (worker/debugging.py)
        self._breakpoint_var: tuple | None = None  # (PYTHONBREAKPOINT before we set it,) while we have it set
        self._alive = None  # the AliveThread sending liveness heartbeats off the event loop
        self._paced: float | None = None  # the last interval the scheduler told (heartbeat-interval op)
        self.heartbeat_interval = parse_timedelta(config.get("worker.heartbeat-interval", "500ms"))  # paced
        self._closed = asyncio.Event()
        self.start_time = time.time()
        self.task_log: list = []  # (key, start, stop, status) of the recent executions
        # [start, stop, kind, peer, bytes] of transfers and spill I/O since the last heartbeat,
        # for the task stream (appended from any thread: deque appends are atomic)
        self.activity: collections.deque = collections.deque(maxlen=ACTIVITY_RECORDS)
        self._task_threads: dict[str, int] = {}  # key -> id of the thread running it (call_stack, profile)
        self.interrupts = TaskInterrupts()  # the tasks whose code runs now, for client.interrupt
        self._events_out: list = []  # log-event messages from task threads, sent before their outcomes
        self._process = psutil.Process()
        self.extensions: dict[str, Any] = {}
        self.memory = MemoryMonitor(self, Thresholds.from_config(memory_limit),
                                    parse_timedelta(config.get("worker.memory.monitor-interval", "100ms")),
                                    trim=bool(config.get("worker.memory.trim", True)))

    def _make_store(self):
        """A SpillBuffer when there is a memory limit and a target, else a plain dict."""
        target = Thresholds.from_config(self.memory_limit).bytes("target")
        if target is None and Thresholds.from_config(self.memory_limit).bytes("spill") is None:
            return {}
        # (after removing the directories of workers killed before, by their nanny or not)
        self._spill_home = worker_directory(self.local_directory, "xsched-spill-")
        max_spill = config.get("worker.memory.max-spill", False)
        store = SpillBuffer(self._spill_home.path, int(target) if target else None,
                            max_spill=parse_bytes(max_spill) if max_spill not in (False, None) else None)
        store.on_disk = self._on_disk
        return store

    def _on_disk(self, kind: str, start: float, stop: float, nbytes: int) -> None:
        """The store wrote a value to disk or read one back (from any thread)."""
        self.activity.append([start, stop, kind, None, nbytes])

    def __repr__(self) -> str:
        n = len(self.state.executing) if self.state else 0
        return f"<Worker {self.address!r} name={self.name!r} status={self.status} executing={n}>"

    # ------------------------------------------------------------------ views for users
    @property
    def active(self) -> set[str]:
        """Keys executing on this worker now (``%remote info[addr] worker.active``)."""
        return self.state.active if self.state is not None else set()

    @property
    def plugins(self) -> dict:
        """The worker plugins set up here (``client.register_plugin``): name -> plugin."""
        return self._plugins.plugins if self._plugins is not None else {}

    @property
    def upload_directory(self) -> str:
        """Where uploaded files are written (``upload_file``, ``UploadFile``); on ``sys.path``
        once a ``.py`` was loaded from it."""
        if self._upload_home is None:
            self._upload_home = worker_directory(self.local_directory, "xsched-uploads-")
        return self._upload_home.path

    def upload_file(self, filename: str, data: bytes, load: bool = True) -> str:
        """Write ``data`` as ``filename`` in the upload directory; with ``load``, import a
        ``.py`` (reload it if it was imported before) or put a ``.zip``/``.egg`` on
        ``sys.path``. Returns the file's path; raises what loading it raised."""
        load_file(self.upload_directory, filename, data, load=load)
        return os.path.join(self.upload_directory, filename)

    def restart(self, reason: str = "restart asked") -> bool:
        """Leave the scheduler and exit for the nanny to start this worker afresh (its data
        is gone; the scheduler recomputes what is needed). False, doing nothing, without a
        nanny (``processes=False``, ``--no-nanny``): nobody would start it again."""
        if self._nanny is None:
            logger.warning("worker %s cannot restart (%s): it has no nanny", self.address, reason)
            return False
        if self.status == "running":
            logger.info("worker %s restarting: %s", self.address, reason)
            self.exit_code = EXIT_RESTART
            self._background.spawn(self.close(report=True, reason=reason))
        return True

    # ------------------------------------------------------------------ lifecycle
    async def start(self) -> "Worker":
        global _current_worker
        # numpy's first import is not thread-safe: a task thread unpickling a function whose
        # module imports numpy, while the loop unpickles scattered arrays, gets a half-built
        # numpy ("partially initialized module"). Import it once, here, before any thread runs.
        import numpy  # noqa: F401

        self.loop = asyncio.get_running_loop()
        logs.install()  # recent records of the xsched loggers, for client.get_worker_logs()
        self.listener = Listener(self.security, self._handle_peer, name="worker", schemas=schemas.TO_WORKER)
        # by default, listen where the route to the scheduler leaves this host
        host = self.host or local_ip_for(self.scheduler_address)
        bound_host, port = split(self.listener.bind(join(host, 0)))
        contact = local_ip_for(self.scheduler_address) if is_wildcard(bound_host) else bound_host
        self.address = join(contact, port)
        self.bulk = BulkServer(bound_host, contact_host=contact)
        self.bulk.start()
        if self.name is None:
            self.name = self.address
        self.state = WorkerState(self.nthreads, self.address, self.resources,
                                 max_transfers=config.get("worker.connections.outgoing", 50))
        self.scheduler = Connection(self.scheduler_address, self.security, self._handle_scheduler,
                                    schemas=schemas.WORKER_FROM_SCHEDULER,
                                    identity=b"w-" + uuid.uuid4().hex.encode(), on_lost=self._scheduler_lost)
        self.scheduler.connect()
        timeout = registration_timeout()
        try:
            if self._nanny is not None and await self._nanny_plugins_first(timeout):
                # our nanny set up plugins after this process started: start again with them
                self._started_file()
                self.exit_code = EXIT_RESTART
                await self.close(report=False, reason="restarting after its nanny's plugins")
                return self
            reply, _ = await self.scheduler.request({
                "op": ops.REGISTER_WORKER, "address": self.address, "name": self.name, "nthreads": self.nthreads,
                "memory_limit": self.memory_limit, "resources": self.resources, "pid": os.getpid(),
                # host: the host of our address; hostname: this machine's name
                "host": contact, "hostname": socket.gethostname(),
                "local_directory": self.local_directory, "prefix": os.path.normpath(sys.prefix),
                "environment_error": os.environ.get("XSCHED_ENVIRONMENT_ERROR"), **announce(),
            }, timeout=timeout)
        except asyncio.TimeoutError:
            await self.close(report=False)
            raise TimeoutError(f"worker could not register with the scheduler at {self.scheduler_address} "
                               f"within {timeout}s: is the scheduler running and the secret right?") from None
        except RemoteError as e:  # refused: an incompatible version says so, with both versions
            await self.close(report=False)
            refused = refusal_in(e)
            if refused is not None:
                raise refused from None
            # (a bad field, ...: the scheduler's reason, said as a refusal; `xsched worker` exits 69 on it)
            raise RemoteError(f"the scheduler at {self.scheduler_address} refused to register this worker: {e}") \
                from None
        except BaseException:  # refused (wrong secret), cancelled...: release sockets, threads, files
            await self.close(report=False)
            raise
        try:
            check_reply(reply, "worker", self.scheduler_address)  # a scheduler older than versions does not check
        except IncompatibleVersionError:
            await self.close(report=True, reason="incompatible versions")
            raise
        self.scheduler_id = reply.get("scheduler_id")  # (a client of this process on the same scheduler says so)
        self.status = "running"
        _current_worker = self
        task_context._process_worker.append(self)
        if self.debugging.breakpoints and os.environ.get("PYTHONBREAKPOINT") != task_context.BREAKPOINT_HOOK:
            # breakpoint() in a task pauses it for client.debug (outside tasks the hook is pdb's)
            self._breakpoint_var = (os.environ.get("PYTHONBREAKPOINT"),)
            os.environ["PYTHONBREAKPOINT"] = task_context.BREAKPOINT_HOOK
        self._started_file()
        # the scheduler paces beats by the cluster's width (scheduler/heartbeats.py); an interval it
        # told while this registration was answered (another worker joined meanwhile) is the newer
        self.heartbeat_interval = float(self._paced or reply.get("heartbeat_interval") or
                                        parse_timedelta(config.get("worker.heartbeat-interval", "500ms")))
        self._background.spawn(self._heartbeat_loop())
        self._alive = AliveThread(self.scheduler_address, self.security, self.scheduler.identity,
                                  self.heartbeat_interval).start()
        if self.memory_limit:
            self._background.spawn(self.memory.run())
        if self.lifetime is not None:
            self._background.spawn(self._lifetime_timer(self.lifetime))
        logger.info("worker %s (%s) registered with %s", self.address, self.name, self.scheduler_address)
        return self

    def _started_file(self) -> None:
        started = os.environ.get("XSCHED_STARTED_FILE")  # the nanny watches a new environment start
        if started:
            with open(started, "w"):
                pass

    async def _nanny_plugins_first(self, timeout: float) -> bool:
        """Under a nanny, before registering: have it set up the nanny plugins it lacks.
        True when it set one up after this process started (what it did, say to the
        environment, is not in this process: start afresh). A setup that failed is reported
        once registered (the scheduler sends every nanny plugin then, and the nanny's answer
        is its error). A scheduler without the plugins extension has none. Versions are
        exchanged and checked here as at registration: the nanny sets up nothing a scheduler
        of another protocol sent (IncompatibleVersionError, naming both)."""
        try:
            reply, _ = await self.scheduler.request({"op": ops.GET_NANNY_PLUGINS, **announce()}, timeout=timeout)
        except RemoteError as e:
            refused = refusal_in(e)
            if refused is not None:
                raise refused from None
            return False
        check_reply(reply, "worker", self.scheduler_address)
        wanted = [(name, token, frames) for name, token, frames in reply.get("plugins") or []]
        if not wanted and not self._nanny.state():
            return False
        restart, _failed = await sync_nanny(self._nanny, wanted, self.start_time)
        return restart

    async def __aenter__(self) -> "Worker":
        return await self.start()

    async def __aexit__(self, *exc) -> None:
        await self.close()

    async def close(self, report: bool = True, reason: str = "worker closing") -> None:
        """Stop: tell the scheduler, stop the loops, shut down the pool, close sockets."""
        global _current_worker
        if self.status in ("closing", "closed"):
            await self._closed.wait()
            return
        self.status = "closing"
        if self._alive is not None:
            self._alive.stop()
        if report and self.scheduler is not None and self.scheduler.failure is None:
            try:
                await asyncio.wait_for(self.scheduler.request({"op": ops.UNREGISTER_WORKER, "reason": reason}), 2)
            except Exception:
                pass
        await self._background.aclose(timeout=2)  # (never the task running this close, if it is one)
        if self._plugins is not None:
            try:
                await asyncio.wait_for(self._plugins.close(), 10)
            except Exception:  # noqa: BLE001 - (each teardown's failure is logged there)
                logger.warning("worker %s: plugin teardowns did not end within 10s", self.address)
        self.executor.shutdown(wait=False, cancel_futures=True)
        for ext in list(self.extensions.values()):
            close = getattr(ext, "close", None)
            if close is not None:
                r = close()
                if inspect.isawaitable(r):
                    await r
        self.memory.close()
        if self.debugging is not None:
            self.debugging.close()
        self.actors.close()
        if self._breakpoint_var is not None and not [w for w in task_context._process_worker if w is not self]:
            old, self._breakpoint_var = self._breakpoint_var[0], None
            if old is None:
                os.environ.pop("PYTHONBREAKPOINT", None)
            else:
                os.environ["PYTHONBREAKPOINT"] = old
        close_data = getattr(self.data, "close", None)
        if close_data is not None:
            close_data()
        if self._spill_home is not None:
            self._spill_home.close()
        if self._upload_home is not None:
            self._upload_home.close()
        self.shuffles.close()
        await self.pool.close()
        if self.bulk is not None:
            self.bulk.close()
        if self.scheduler is not None:
            await self.scheduler.close()
        if self.listener is not None:
            await self.listener.close()
        if _current_worker is self:
            _current_worker = None
        if self in task_context._process_worker:
            task_context._process_worker.remove(self)
        for ev in list(self._rejoin_events.values()):
            ev.set()  # let threads waiting in rejoin() finish (their results are dropped)
        self.status = "closed"
        self._closed.set()

    async def finished(self) -> None:
        """Wait until the worker has closed."""
        await self._closed.wait()

    async def close_gracefully(self, reason: str = "worker retiring", timeout: float | None = None) -> str:
        """Ask the scheduler to retire this worker, then close; return the outcome's status.

        The scheduler copies what only this worker holds to other workers, lets the tasks
        running here finish, then tells it to close (``retired``: exit code 0). If it
        cannot (no other worker to take the data, ``cannot-retire``), the scheduler is
        gone, or ``timeout`` (default ``retire_timeout``) passes first, the worker closes
        anyway: the scheduler then recomputes what was lost, as for any lost worker.
        """
        if self.status != "running" or self.scheduler is None:
            await self.close(report=False)
            return "closed"
        timeout = self.retire_timeout if timeout is None else timeout
        status = "timeout"
        try:
            reply, _ = await self.scheduler.request({"op": ops.RETIRE_WORKER, "reason": reason}, timeout=timeout)
            status = reply.get("status", "retired")
            if status != "retired":
                logger.warning("worker %s could not retire (%s: %s); closing anyway", self.address, status,
                               reply.get("reason", ""))
        except asyncio.TimeoutError:
            logger.warning("worker %s: retirement took more than %.0fs; closing anyway", self.address, timeout)
        except (CommClosedError, RemoteError, OSError) as e:
            status = "no-scheduler"
            logger.info("worker %s: could not ask the scheduler to retire it (%s); closing", self.address, e)
        except asyncio.CancelledError:
            if self.status == "running":
                raise
            # told to close meanwhile: that close is under way and cancelled us (we may be
            # one of its background tasks); waiting for it here would wait for ourselves
            return "retired" if self.retired else "closed"
        if self.status != "running":
            # the scheduler's close-worker came with (or before) its answer, and that close
            # is under way: it waits for this task, so waiting for it would wait 2 s for
            # nothing (the cancel it sent can be lost when the answer arrives at that moment)
            return "retired" if self.retired else status
        if self.retired:  # data moved off and removed by the scheduler: a chosen exit
            status, self.exit_code = "retired", 0
        await self.close(report=not self.retired, reason=reason)
        return status

    async def _lifetime_timer(self, delay: float) -> None:
        await asyncio.sleep(delay)
        logger.info("worker %s: lifetime reached (%.1fs); retiring", self.address, delay)
        await self.close_gracefully(reason=f"lifetime reached ({delay:.1f}s)")

    def _scheduler_lost(self, exc: Exception) -> None:
        """The scheduler connection dropped (it crashed, was killed, or its host went away).

        Our tasks and data belong to a scheduler that is gone: a restarted one knows none of
        them, so instead of reconciling state we close with exit code 1 and the nanny starts
        a fresh worker process, which waits up to ``worker.reconnect-timeout`` for a
        scheduler on the same address and secret and registers with it.
        """
        if self.status == "running":
            self.exit_code = 1  # not a chosen close: the nanny restarts us to reconnect
            logger.warning("worker %s lost the scheduler at %s (%s); closing so that its nanny starts it again "
                           "to register anew", self.address, self.scheduler_address, exc)
            self._background.spawn(self.close(report=False, reason="scheduler lost"))

    # ------------------------------------------------------------------ state machine glue
    def handle(self, *events) -> None:
        """Feed events to the state machine and carry out its instructions; then tell the
        plugins with a transition hook of the state changes it made."""
        plugins = self._plugins
        observed = plugins is not None and plugins.wants_transitions
        if observed:
            before = self.state.log_count
        for inst in self.state.handle(*events):
            t = type(inst)
            if t is Execute:
                self._start_task(inst.key, inst.run_spec, inst.wanted)
            elif t is SendToScheduler:
                if self.scheduler is not None and not self.scheduler.closed:
                    self.scheduler.send(inst.msg)
            elif t is FreeData:
                for k in inst.keys:
                    self._free(k)
            elif t is GatherDep:
                self._background.spawn(self._gather(inst.worker, inst.keys))
            elif t is Rejoined:
                ev = self._rejoin_events.pop(inst.key, None)
                if ev is not None:
                    ev.set()
            else:
                raise TypeError(f"unknown worker instruction {inst!r}")
        if observed:
            plugins.transitions(self.state.logged_since(before))

    def _free(self, key: str) -> None:
        """Drop a key's data without reading it back from disk if it was spilled (and the
        actor instance behind it, if it is one made here)."""
        actors = self.actors
        if actors is not None and key in actors.instances:
            actors.forget(key)
        data = self.data
        if isinstance(data, dict):
            data.pop(key, None)
            return
        try:
            self.memory.note_freed(data.weight(key))
        except KeyError:
            return
        data.discard(key)

    def set_paused(self, paused: bool) -> None:
        """Pause (start no task, fetch nothing) or resume; the state machine tells the scheduler."""
        if paused != self.state.paused:
            self.handle(Pause() if paused else Unpause())

    def _handle_scheduler(self, header: dict, payload: list):
        """A message from the scheduler: its handler in ``_SCHEDULER_OPS`` (checked by
        ``schemas.WORKER_FROM_SCHEDULER`` before it gets here)."""
        handler = self._SCHEDULER_OPS.get(header["op"])
        if handler is None:
            raise TypeError(f"worker cannot handle scheduler op {header['op']!r}")
        handler(self, header, payload)

    def _op_compute_task(self, header: dict, payload: list) -> None:
        debugging = self.debugging
        if debugging is not None and debugging.postmortems._entries:  # (a retried task: its old failure is stale)
            debugging.postmortems.drop(header["key"], "the task ran again")
        if header.get("functions"):
            self.functions.update(header["functions"])
        nbytes = header.get("nbytes", {})
        inline = self._store_inline(header["inline"], nbytes) if header.get("inline") else {}
        self.handle(ComputeTask(header["key"], header.get("run_spec"), tuple(header.get("priority", (0,))),
                                header.get("who_has", {}), nbytes, header.get("resources"),
                                wanted=bool(header.get("wanted")), inline=inline))

    def _op_free_keys(self, header: dict, payload: list) -> None:
        self.handle(FreeKeys(header["keys"]))

    def _op_forget_functions(self, header: dict, payload: list) -> None:
        for fid in header["fids"]:
            self.functions.pop(fid, None)

    def _op_heartbeat_interval(self, header: dict, payload: list) -> None:
        """The scheduler paces beats by the cluster's width: from now on, every ``interval`` s."""
        self.heartbeat_interval = self._paced = float(header["interval"])
        if self._alive is not None:
            self._alive.interval = self.heartbeat_interval

    def _op_scheduler_ping(self, header: dict, payload: list) -> None:
        pass  # the scheduler checking who is still connected

    def _op_shuffle_forget(self, header: dict, payload: list) -> None:
        self.shuffles.forget(header["id"], header["run"])

    def _op_acquire_replicas(self, header: dict, payload: list) -> None:
        self.handle(AcquireReplicas(dict(header.get("who_has", {})), dict(header.get("nbytes", {})),
                                    dict(header.get("priority", {}))))

    def _op_environment(self, header: dict, payload: list) -> None:
        self._background.spawn(self._environment_op(header["op"], header, payload))

    def _op_steal_request(self, header: dict, payload: list) -> None:
        self.handle(StealRequest(header["key"]))

    def _op_upload_file(self, header: dict, payload: list) -> None:
        data = b"".join(frame_bytes(f) for f in split_objects(header, payload).get("data", []))
        error = self._load_upload(str(header.get("filename")), data)
        if self.scheduler is not None and not self.scheduler.closed:
            self.scheduler.send({"op": ops.UPLOAD_FILE_DONE, "uid": header.get("uid", ""),
                                 "filename": header.get("filename"), "error": error})

    def _op_plugin_add(self, header: dict, payload: list) -> None:
        uid, name = header.get("uid", ""), header["name"]
        frames = split_objects(header, payload).get("plugin", [])
        if header.get("nanny"):
            self._background.spawn(self._nanny_plugin(uid, name, "add", header.get("token"), frames))
            return
        try:
            plugin = loads(frames)
        except BaseException as e:  # noqa: BLE001 - (a class this worker cannot import, ...)
            self._plugin_done(uid, name, e)
            return
        self._plugins.add(name, plugin, lambda error: self._plugin_done(uid, name, error))

    def _op_plugin_remove(self, header: dict, payload: list) -> None:
        uid, name = header.get("uid", ""), header["name"]
        if header.get("nanny"):
            self._background.spawn(self._nanny_plugin(uid, name, "remove"))
            return

        async def remove():
            self._plugin_done(uid, name, await self._plugins.remove(name))

        self._background.spawn(remove())

    def _plugin_done(self, uid: str, name: str, error: BaseException | None = None, skipped: str | None = None,
                     fields: dict | None = None) -> None:
        if error is not None:
            logger.warning("worker %s: plugin %r failed: %s", self.address, name, _safe_text(error))
        if self.scheduler is not None and not self.scheduler.closed:
            self.scheduler.send({"op": ops.PLUGIN_DONE, "uid": uid, "name": name,
                                 **(fields if fields is not None else outcome(error, skipped))})

    async def _nanny_plugin(self, uid: str, name: str, action: str, token=None, frames=()) -> None:
        """A nanny plugin to add or remove: through our nanny (worker/plugins.py). One set up
        with ``restart = True`` after this process started: restart once it is reported."""
        if self._nanny is None:
            self._plugin_done(uid, name, skipped="this worker has no nanny (processes=False or --no-nanny)")
            return
        try:
            entry = self._nanny.state().get(name)
            if action == "remove":
                entry = await self._nanny.ask("remove", name)
            elif entry is None or entry.get("token") != token:
                entry = await self._nanny.ask("add", name, token, frames)
        except Exception as e:  # noqa: BLE001 - (the nanny did not answer in time)
            self._plugin_done(uid, name, e)
            return
        if entry is None or action == "remove":
            self._plugin_done(uid, name)
            return
        self._plugin_done(uid, name, fields={k: entry.get(k) for k in ("status", "error", "exception", "traceback")})
        if entry.get("status") == "OK" and entry.get("restart") and entry.get("time", 0.0) > self.start_time:
            self.restart(reason=f"nanny plugin {name!r} set up")

    def _op_close_worker(self, header: dict, payload: list) -> None:
        if header.get("reason") == "retired":
            self.retired = True  # data moved off, removed by the scheduler: done, exit 0
            self.exit_code = 0
        elif header.get("restart") and not self.retired:
            # the scheduler forgot us (or client.restart()): exit so the nanny restarts us
            self.exit_code = EXIT_RESTART if header.get("reason") == "restart" else 1
            if header.get("environment"):
                write_restart_note(os.getpid(), header["environment"])
        self._background.spawn(self.close(report=False, reason="retired" if self.retired else "scheduler asked"))

    _SCHEDULER_OPS = {
        ops.COMPUTE_TASK: _op_compute_task, ops.FREE_KEYS: _op_free_keys, ops.FORGET_FUNCTIONS: _op_forget_functions,
        ops.PING: _op_scheduler_ping, ops.ACQUIRE_REPLICAS: _op_acquire_replicas,
        ops.HEARTBEAT_INTERVAL: _op_heartbeat_interval,
        ops.ENVIRONMENT_START: _op_environment, ops.ENVIRONMENT_CHUNK: _op_environment,
        ops.ENVIRONMENT_DONE: _op_environment, ops.STEAL_REQUEST: _op_steal_request,
        ops.UPLOAD_FILE: _op_upload_file, ops.CLOSE_WORKER: _op_close_worker,
        ops.PLUGIN_ADD: _op_plugin_add, ops.PLUGIN_REMOVE: _op_plugin_remove,
        ops.SHUFFLE_FORGET: _op_shuffle_forget,
    }

    # ------------------------------------------------------------------ uploaded files
    def _load_upload(self, filename: str, data: bytes) -> str | None:
        """Write an uploaded file here and load it; the error text, or None."""
        try:
            self.upload_file(filename, data)
        except BaseException as e:  # noqa: BLE001 - a broken upload is reported, never crashes the worker
            logger.warning("worker %s: uploaded %s failed to load: %s", self.address, filename, e)
            return f"{type(e).__name__}: {e}"
        return None

    # ------------------------------------------------------------------ shipped environments
    async def _environment_op(self, op: str, header: dict, payload: list) -> None:
        """Receive an environment shipped for client.restart(environment=...); answer the scheduler."""
        if self._environments is None:
            self._environments = EnvironmentReceiver(self.local_directory or tempfile.gettempdir())
        uid = header.get("uid")
        if op == ops.ENVIRONMENT_DONE:
            path, error = await asyncio.get_running_loop().run_in_executor(
                None, self._environments.finish, uid, header.get("sha256"))
            answer = {"op": ops.ENVIRONMENT_READY, "uid": uid, "path": path, "error": error}
        else:
            frames = split_objects(header, payload).get("data", [])
            error = (self._environments.start(uid) if op == ops.ENVIRONMENT_START
                     else self._environments.write(uid, frames))
            answer = {"op": ops.ENVIRONMENT_ACK, "uid": uid, "seq": header.get("seq"), "error": error}
        if self.scheduler is not None and not self.scheduler.closed:
            self.scheduler.send(answer)

    # ------------------------------------------------------------------ secede / rejoin (task threads)
    def _secede(self, key: str) -> None:
        """From the task's thread: its slot is free (``xsched.secede``).

        The thread notes when: the time until ``_rejoin`` has a slot again is waiting, not
        the task's work, and ``_task_thread`` reports it apart (``ExecuteSuccess.seceded``)
        so the scheduler does not learn it as the duration of the task's prefix.
        """
        _thread_state.seceded_at = time.monotonic()
        self._post_from_thread(Secede(key))

    def _rejoin(self, key: str) -> None:
        """From the task's thread: wait until the state machine gives it a slot again."""
        ev = threading.Event()
        self._rejoin_events[key] = ev

        def ask():
            if self.status == "running":
                self.handle(Rejoin(key))
            else:
                ev.set()

        self.loop.call_soon_threadsafe(ask)
        while not ev.wait(1.0):
            if self.status in ("closing", "closed"):
                break
        _thread_state.seceded_for = (getattr(_thread_state, "seceded_for", 0.0)
                                     + _seceded_since(getattr(_thread_state, "seceded_at", None)))
        _thread_state.seceded_at = None

    def _breakpoint(self, key: str, frame) -> None:
        """From the task's thread (``breakpoint()``, ``xsched.breakpoint()``): pause it at
        ``frame`` until a client attaches with ``client.debug`` (worker/debugging.py)."""
        _thread_state.paused = True
        self.debugging.pause(key, frame)

    # ------------------------------------------------------------------ execution
    def _start_task(self, key: str, run_spec: bytes, wanted: bool = False) -> None:
        """Hand one task to the pool; its outcome comes back through ``_post_from_thread``.

        No asyncio task or future per task: the thread posts its outcome to a list that
        one loop callback drains, so the tasks that finish within one tick are one call
        into the state machine and one batch of messages to the scheduler. If the pool
        refuses the task (the worker is closing), it is reported failed at once: a task
        whose end the state machine never hears of would keep its slot forever.
        """
        ctx = contextvars.copy_context()
        try:
            self.executor.start(ctx.run, self._task_thread, key, run_spec, wanted)
        except BaseException as e:  # noqa: BLE001 - e.g. the pool shut down while the worker closes
            now = time.time()
            self._record(key, now, now, "error")
            self.handle(self._outcome_event(key, now, now, ("error", *pack_exception(e, key))))

    def _task_thread(self, key: str, run_spec: bytes, wanted: bool = False) -> None:
        """In a task thread: run the task (``_run_task`` never raises) and post its outcome,
        with the seconds it spent seceded (until its rejoin, or its end if it never did)."""
        _thread_state.seceded_at, _thread_state.seceded_for = None, 0.0
        start = time.time()
        outcome = self._run_task(key, run_spec, wanted)
        stop = time.time()
        seceded = _thread_state.seceded_for + _seceded_since(_thread_state.seceded_at)
        _thread_state.seceded_at = None
        event = self._outcome_event(key, start, stop, outcome, seceded)
        self.executor.finishing()  # (this thread takes the task started in reply, if any)
        self._post_from_thread(event)

    def _outcome_event(self, key: str, start: float, stop: float, outcome: tuple, seceded: float = 0.0):
        if outcome[0] == "memory":
            return ExecuteSuccess(key, outcome[1], outcome[2], start, stop, seceded=seceded, inline=outcome[3])
        _, blob, tb, text = outcome
        return ExecuteFailure(key, blob, tb, text, start, stop)

    def _post_from_thread(self, event) -> None:
        """From any thread: queue an event for the state machine, in order, waking the loop
        only when no wake-up is pending already."""
        with self._from_threads_lock:
            self._from_threads.append(event)
            if self._from_threads_signalled:
                return
            self._from_threads_signalled = True
        try:
            self.loop.call_soon_threadsafe(self._drain_from_threads)
        except RuntimeError:  # the loop is closed: the worker is gone, nobody is left to tell
            pass

    def _log_event(self, topic, msg) -> None:
        """From a task thread (``xsched.log_event``, ``xsched.print``): an event for the
        scheduler's events extension. It leaves before the outcome of any task that ends
        after this call (``_drain_from_threads`` sends these first), so a client sees what a
        task printed before it sees the task finish. ``msg`` may be a function instead, called
        on the loop as the events leave, which returns the message then (None: nothing) and
        never raises: a batch of what task threads added until that moment."""
        self._to_scheduler_from_thread({"op": ops.LOG_EVENT, "topic": topic, "msg": msg})

    def _to_scheduler_from_thread(self, message: dict) -> None:
        """From any thread: a message for the scheduler, sent in order with the events
        (``_log_event``) and before the outcome of any task that ends after this call."""
        with self._from_threads_lock:
            self._events_out.append(message)
            if self._from_threads_signalled:
                return
            self._from_threads_signalled = True
        try:
            self.loop.call_soon_threadsafe(self._drain_from_threads)
        except RuntimeError:  # the loop is closed: the worker is gone
            pass

    def _drain_from_threads(self) -> None:
        with self._from_threads_lock:
            events, self._from_threads = self._from_threads, []
            logged, self._events_out = self._events_out, []
            self._from_threads_signalled = False
        if logged and self.scheduler is not None and not self.scheduler.closed:
            for message in logged:
                if callable(message.get("msg")):  # a batch producer (log_forwarding.py): its batch as of now
                    message = dict(message, msg=message["msg"]())
                    if message["msg"] is None:
                        continue
                self.scheduler.send(message)
        for ev in events:
            if type(ev) is ExecuteSuccess:
                self._record(ev.key, ev.start, ev.stop, "memory")
            elif type(ev) is ExecuteFailure:
                self._record(ev.key, ev.start, ev.stop, "error")
        if events and self.status != "closed":
            self.handle(*events)

    def _record(self, key, start, stop, status) -> None:
        self.task_log.append((key, start, stop, status))
        if len(self.task_log) > 100_000:
            del self.task_log[:50_000]

    def _run_task(self, key: str, run_spec: bytes, wanted: bool = False) -> tuple:
        """In a task thread: unpickle, run and store the task; its outcome, never an exception.

        ``("memory", nbytes, type name, inline)`` or ``("error", exception, traceback, text)``;
        ``inline`` is the pickled value when a client waits for it and it is small
        (``_inline``), else None.
        Failures are packed here rather than raised through the pool's future, because
        asyncio changes some exceptions on the way: a ``concurrent.futures.CancelledError``
        (or ``asyncio.CancelledError``) arrives as ``asyncio.CancelledError``, which looks
        like the worker closing, and a ``StopIteration`` cannot be set on an asyncio future
        at all, so the outcome never arrives. Pickling the exception here also keeps that
        work off the event loop.
        """
        _thread_state.worker = self
        _thread_state.key = key
        _thread_state.seceded = False
        self._task_threads[key] = threading.get_ident()
        task = None
        try:
            task = loads_task(run_spec, key, f"worker {self.address}", self.functions)
            self.interrupts.enter(key)
            try:
                value = task.run(self.data) if type(task) is Task else execute(task, self.data)
            finally:
                self.interrupts.leave(key)
            nbytes = sizeof(value)
            self.data[key] = value  # may spill older data to disk, in this thread
            return "memory", nbytes, type(value).__name__, _inline(value, nbytes) if wanted else None
        except BaseException as e:  # noqa: BLE001 - every task failure is reported, never raised
            if self.debugging is not None:  # keep its frames for client.debug (worker/debugging.py)
                e = self.debugging.task_failed(key, e, task, self.data)
            # (the text shown starts in the task's function, as the debugger does: not in the
            # worker's frames that ran it)
            return ("error", *pack_exception(e, key, task_traceback(e.__traceback__)))
        finally:
            if getattr(_thread_state, "paused", False):  # it met a breakpoint: no tracing left behind
                _thread_state.paused = False
                sys.settrace(None)
                self.debugging.task_ended(key)
            _thread_state.key = None
            if self._task_threads.get(key) == threading.get_ident():
                del self._task_threads[key]

    # ------------------------------------------------------------------ transfers
    async def _gather(self, worker: str, keys: list) -> None:
        """Fetch ``keys`` from the peer ``worker``; feed what came (and what did not) to the state machine.

        Keys the peer holds but cannot send (their value cannot be pickled) come back named
        with the reason: the tasks here that need them fail with it (``GatherDepSuccess.errors``).
        Reported missing instead, they made the scheduler recompute the value -- possibly
        on the same worker, into the same unsendable value -- again and again, with no error.
        """
        errors: dict = {}
        began = time.time()
        try:
            data = await get_data(self.pool.get(worker), keys, worker, timeout=60, errors=errors)
            tasks = self.state.tasks
            data = {k: v for k, v in data.items() if k in tasks and tasks[k].state in ("flight", "cancelled")}
        except Exception as e:  # noqa: BLE001 - the peer is gone, timed out, or sent what we cannot read
            logger.info("worker %s: fetching %d keys from %s failed: %s", self.address, len(keys), worker, e)
            await self.pool.drop(worker)
            self.handle(GatherDepFailure(worker, keys))
            return
        if self._instant_store(data):  # a thread hop would cost more than the work
            nbytes = self._store(data, spill=False)
        else:
            try:
                nbytes = await asyncio.get_running_loop().run_in_executor(None, self._store, data)
            except RuntimeError:  # the default pool is shut down: the worker is closing
                return
        self.activity.append([began, time.time(), "transfer", worker, sum(nbytes.values())])
        unsendable = {}
        for key, why in errors.items():
            if key in keys:
                unsendable[key] = pack_exception(SerializationError(
                    f"{why}. Tasks that need it can run only on the worker that holds it: return a "
                    "picklable value, or compute its dependents there (workers=[...])."), key)
        self.handle(GatherDepSuccess(worker, nbytes, errors=unsendable))

    def _store_inline(self, blobs: dict, nbytes: dict) -> dict:
        """Store the small dependency values a compute-task brought (key -> pickled value)
        that the state machine takes; for it, key -> size, or None for a value not stored.
        On the loop: each is at most a few hundred bytes. One that cannot be unpickled here
        is not stored: the task then fetches it from its holders, and the fetch reports why
        it fails, as ever."""
        out: dict = {}
        put = self._quiet_put()
        for key, blob in blobs.items():
            out[key] = None
            if not self.state.takes_inline(key):
                continue
            try:
                value = loads([blob])
            except Exception:  # noqa: BLE001 - a class only some workers can import, ...
                continue
            put(key, value)
            out[key] = nbytes.get(key, 0) or 0
        return out

    def _quiet_put(self):
        """How to store a small value on the loop: without spilling, where the store spills."""
        return getattr(self.data, "put_without_spilling", None) or self.data.__setitem__

    def _instant_store(self, data: dict) -> bool:
        """Values of plain small types (numbers, short strings and bytes), whose size is
        known at once, that fit under the memory target: storing them spills nothing."""
        total = 0
        for v in data.values():
            typ = type(v)
            if typ in _SCALARS:
                total += 32
            elif (typ is str or typ is bytes) and len(v) <= INSTANT_REPLY_BYTES:
                total += len(v) + 64
            else:
                return False
        if total > INSTANT_REPLY_BYTES:
            return False
        has_room = getattr(self.data, "has_room", None)
        return has_room is None or has_room(total)

    def _store(self, data: dict, spill: bool = True) -> dict:
        """Put received data in the store (off the loop: it may spill) and return sizes;
        ``spill=False`` (small values stored on the loop) leaves spilling to the next store
        or to the memory monitor.

        A key that cannot be stored is left out of the sizes, so the state machine treats it
        as not received (fetched again or recomputed) instead of waiting for it forever.
        """
        nbytes = {}
        put = self.data.__setitem__ if spill else self._quiet_put()
        for k, v in data.items():
            try:
                n = sizeof(v)
                put(k, v)
            except Exception as e:  # noqa: BLE001
                logger.warning("worker %s: could not store %r: %s", self.address, k, _safe_text(e))
                continue
            nbytes[k] = n
        return nbytes

    # ------------------------------------------------------------------ peer requests
    def _handle_peer(self, peer: bytes, header: dict, payload: list):
        """A request from a client or a peer worker: its handler in ``_PEER_OPS`` (checked by
        ``schemas.TO_WORKER`` before it gets here); what it returns is the reply."""
        handler = self._PEER_OPS.get(header["op"])
        if handler is None:
            raise TypeError(f"worker cannot handle op {header['op']!r}")
        return handler(self, header, payload)

    def _op_get_data(self, header: dict, payload: list):
        keys = list(header.get("keys", ()))
        if self._instant(keys):  # a thread hop would cost more than the work (latency)
            return self._serve_data(keys, bool(header.get("bulk")))
        return asyncio.get_running_loop().run_in_executor(None, self._serve_data, keys, bool(header.get("bulk")))

    def _op_bulk_receive(self, header: dict, payload: list):
        """A client is about to push large scattered buffers on the side channel."""
        return expect_data(self.bulk, list(header["lengths"]), self.security)

    def _op_peer_ping(self, header: dict, payload: list) -> dict:
        return {"address": self.address}

    def _op_versions(self, header: dict, payload: list) -> dict:
        """This process's python and package versions (``client.get_versions()``)."""
        return {"versions": package_versions(header.get("packages") or ())}

    def _op_start_ipython(self, header: dict, payload: list):
        return self._start_ipython()

    def _instant(self, keys: list) -> bool:
        """Values all in memory and at most ``INSTANT_REPLY_BYTES`` together: pickling them
        takes microseconds, so they are served on the loop, not in a thread."""
        weigh = getattr(self.data, "memory_weight", None)
        if weigh is not None:
            w = weigh(keys)
            return w is not None and w <= INSTANT_REPLY_BYTES
        total = 0
        for k in keys:  # a plain dict (no memory limit): the state machine knows the sizes
            ts = self.state.tasks.get(k)
            if ts is None or k not in self.data:
                return False
            total += max(ts.nbytes, 0)
        return total <= INSTANT_REPLY_BYTES

    def _serve_data(self, keys: list, bulk_ok: bool) -> Msg:
        """(In a thread) the reply to get-data: the values of ``keys`` that are here.

        Off the event loop, because reading spilled values back from disk and pickling large
        ones takes as long as it takes, and the loop meanwhile answers the scheduler and
        every other peer. Spilled values are read with ``peek``: sent, they stay on disk
        (brought into memory one after another, they pushed the worker over its limit).
        Values of more than a share of the memory limit (``REPLY_SHARE``) go in turns: the
        keys left out are named in the reply's ``more``, and ``protocol.bulk.get_data`` asks
        for them again. A key whose value cannot be pickled, or read back from disk (its unpickling
        raises), is named in the reply's ``errors`` with the reason, and the other keys are
        sent as usual: one bad key used to fail the whole batch, and an unreadable one,
        left out, made the requester ask again and again. A key that is not here (freed
        meanwhile) is left out: the requester looks for another holder.
        """
        data, errors, more = {}, {}, []
        read = getattr(self.data, "peek", None) or self.data.__getitem__
        budget = max(REPLY_SHARE * self.memory_limit, MIN_REPLY_BYTES) if self.memory_limit else None
        total = 0
        for k in keys:
            size = 0
            if budget is not None:
                ts = self.state.tasks.get(k)  # (its size, as the state machine knows it: read, not changed)
                size = max(ts.nbytes, 0) if ts is not None else 0
                if data and total + size > budget:
                    more.append(k)  # (asked for again by the requester, once it has these)
                    continue
            try:
                data[k] = read(k)
                total += size
                continue
            except KeyError as e:
                if k not in self.data:
                    continue
                why = e  # raised by the value's unpickling
            except Exception as e:  # noqa: BLE001 - a spill file that cannot be read back
                why = e
            errors[k] = (f"the value of {k!r} on worker {self.address} was spilled to disk and cannot be "
                         f"read back: {_safe_text(why)}")
            logger.warning("worker %s: could not read %r back from disk: %s", self.address, k, _safe_text(why))

        def reply(d: dict) -> Msg:
            if bulk_ok and self.bulk is not None:
                return serve_data(self.bulk, d, True, self.security)
            return Msg({"status": "OK"}, raw={"data": dumps(d)})  # pickled here, not on the loop

        try:
            msg = reply(data)
        except Exception:  # noqa: BLE001 - some value cannot be pickled: find which, one by one
            for k in list(data):
                try:
                    dumps(data[k])
                except Exception as e:  # noqa: BLE001
                    errors[k] = (f"the value of {k!r} ({type(data.pop(k)).__name__}) on worker {self.address} "
                                 f"cannot be pickled to send it: {_safe_text(e)}")
            msg = reply(data)
        said = {name: v for name, v in (("errors", errors), ("more", more)) if v}
        if said:
            msg.header = dict(msg.header, **said)
        return msg

    async def _put_data(self, header, payload):
        """Scattered data: unpickled and stored in a thread (large arrays, maybe a spill to disk);
        large buffers were pushed on the bulk side channel just before (``bulk.put_data``)."""
        def unpack_and_store() -> dict:
            return self._store(unpack_objects(header, with_pushed(self.bulk, header, payload)).get("data", {}))

        nbytes = await asyncio.get_running_loop().run_in_executor(None, unpack_and_store)
        self.handle(UpdateData(nbytes))
        return {"nbytes": nbytes}

    async def _run_function(self, header, payload):
        """``client.run``: a coroutine function runs on this event loop (it may use the worker's
        asyncio objects); any other function runs in a thread, so that a slow one does not
        stop the worker answering the scheduler and its peers meanwhile -- a plain function
        reading the worker's state sees it as a task thread would. Unpickling the function
        and pickling its result happen in threads too.

        Every failure becomes an error reply, BaseExceptions included: the caller waits with
        no timeout, so a call that ended without a reply would hang it forever.
        """
        loop = asyncio.get_running_loop()
        try:
            objs = await loop.run_in_executor(None, unpack_objects, header, payload)
            func, args, kwargs = objs["func"], objs.get("args", ()), objs.get("kwargs", {})
            kwargs = with_server(func, kwargs, "worker", self)
            if inspect.iscoroutinefunction(func):
                result = await func(*args, **kwargs)
            else:
                ok, result = await loop.run_in_executor(self.executor, contextvars.copy_context().run,
                                                        _call_in_thread, func, args, kwargs)
                if not ok:
                    return _error_reply(*result)
                if inspect.isawaitable(result):  # e.g. a partial of a coroutine function
                    result = await result
            pickled, out = await loop.run_in_executor(None, _dumps_in_thread, result)
        except asyncio.CancelledError as e:
            task = asyncio.current_task()
            if self.status != "running" or getattr(task, "cancelling", lambda: 0)():
                raise  # the worker is closing
            return _error_reply(*pack_exception(e))  # raised by the function itself
        except BaseException as e:  # noqa: BLE001 - reported to the caller, never raised here
            return _error_reply(*pack_exception(e))
        if not pickled:
            return _error_reply(*out)
        return Msg({"status": "OK"}, raw={"result": out})

    async def _start_ipython(self):
        from ..jupyter.kernel import start_kernel

        info = await start_kernel({"worker": self, "state": self.state}, name=f"worker {self.name}",
                                  ip=config.get("jupyter.kernel-ip", "127.0.0.1"))
        return {"info": info}

    # --- diagnostics (client.get_worker_logs, call_stack, profile, dump_cluster_state): worker/diagnostics.py
    def _op_get_logs(self, header: dict, payload: list) -> dict:
        return {"logs": [list(r) for r in logs.recent(header.get("n"))]}

    def _op_call_stack(self, header: dict, payload: list) -> dict:
        return {"stacks": diagnostics.call_stacks(self._task_threads, header.get("keys"))}

    def _op_interrupt_task(self, header: dict, payload: list) -> dict:
        """``client.interrupt``: the keys of those tasks whose code ran here and was interrupted."""
        interrupted = [key for key in header["keys"] if self.interrupts.interrupt(key)]
        if interrupted:
            logger.warning("worker %s: interrupted %s (client.interrupt)", self.address, ", ".join(interrupted))
        return {"interrupted": interrupted}

    async def _op_profile(self, header: dict, payload: list) -> dict:
        duration, interval = header.get("duration"), header.get("interval")
        prof = await diagnostics.profile(self._task_threads, 1.0 if duration is None else float(duration),
                                         0.01 if interval is None else float(interval))
        reply = {"samples": prof.samples, "counts": prof.rows()}
        if header.get("tree"):
            reply["tree"] = prof.tree.rows()
        return reply

    def _op_dump_state(self, header: dict, payload: list) -> dict:
        return {"state": diagnostics.dump_state(self)}

    # --- debugging (client.debug, breakpoints, recreate_error_locally): worker/debugging.py
    def _op_debug_attach(self, header: dict, payload: list):
        return self.debugging.attach(header["key"], header.get("client"), header.get("sources"))

    def _op_debug_input(self, header: dict, payload: list):
        return self.debugging.input(header["session"], header.get("line"))

    def _op_debug_detach(self, header: dict, payload: list) -> dict:
        return self.debugging.detach(header["session"])

    def _op_debug_list(self, header: dict, payload: list) -> dict:
        return self.debugging.list()

    def _op_debug_release(self, header: dict, payload: list) -> dict:
        return self.debugging.release(header["keys"])

    def _op_debug_recreate(self, header: dict, payload: list):
        return self.debugging.recreate(header["key"], header.get("max_bytes"))

    # --- the p2p shuffle: worker/shuffle.py
    def _op_shuffle_receive(self, header: dict, payload: list):
        return self.shuffles.receive(header, payload)

    # --- actors (client.submit(cls, actor=True)): worker/actors.py
    def _op_actor_call(self, header: dict, payload: list):
        return self.actors.call(header, payload)

    def _op_actor_attribute(self, header: dict, payload: list):
        return self.actors.attribute(header, payload)

    _PEER_OPS = {
        ops.GET_DATA: _op_get_data, ops.PUT_DATA: _put_data,
        ops.BULK_RECEIVE: _op_bulk_receive, ops.RUN: _run_function,
        ops.PING: _op_peer_ping, ops.START_IPYTHON: _op_start_ipython, ops.VERSIONS: _op_versions,
        ops.GET_LOGS: _op_get_logs, ops.CALL_STACK: _op_call_stack, ops.PROFILE: _op_profile,
        ops.INTERRUPT_TASK: _op_interrupt_task,
        ops.DUMP_STATE: _op_dump_state,
        ops.DEBUG_ATTACH: _op_debug_attach, ops.DEBUG_INPUT: _op_debug_input, ops.DEBUG_DETACH: _op_debug_detach,
        ops.DEBUG_LIST: _op_debug_list, ops.DEBUG_RELEASE: _op_debug_release, ops.DEBUG_RECREATE: _op_debug_recreate,
        ops.ACTOR_CALL: _op_actor_call, ops.ACTOR_ATTRIBUTE: _op_actor_attribute,
        ops.SHUFFLE_RECEIVE: _op_shuffle_receive,
    }

    # ------------------------------------------------------------------ heartbeats
    def metrics(self) -> dict:
        """Figures sent to the scheduler with each heartbeat."""
        st = self.state
        try:
            rss = self._process.memory_info().rss
        except psutil.Error:
            rss = 0
        data = self.data
        managed = getattr(data, "memory_bytes", st.nbytes_in_memory)
        debugging = self.debugging
        if debugging is not None:  # what kept post-mortems hold counts as managed too
            managed += debugging.postmortems.nbytes
        spilled = getattr(data, "spilled_bytes", 0)
        return {
            "rss": rss, "managed": managed, "unmanaged": max(rss - managed, 0), "spilled": spilled,
            "spilled_count": getattr(data, "spilled_count", 0), "spill_count": getattr(data, "spill_count", 0),
            "pause_count": self.memory.pause_count,
            "executing": len(st.executing), "ready": len(st.ready), "in_memory": len(st.data_keys),
            "executed": st.counts["executed"], "fetched": st.counts["fetched"],
            "cpu": self._process.cpu_percent(None), "time": time.time(), "paused": st.paused,
            # tasks paused at breakpoints, and failures kept for client.debug
            "breakpoints": len(debugging.paused()) if debugging else 0,
            "postmortems": len(debugging.postmortems) if debugging else 0,
        }

    async def _heartbeat_loop(self) -> None:
        while self.status == "running":
            try:
                self.scheduler.send({"op": ops.HEARTBEAT_WORKER, "metrics": self.metrics()})
                if self.activity:
                    records = [self.activity.popleft() for _ in range(len(self.activity))]
                    self.scheduler.send({"op": ops.WORKER_ACTIVITY, "records": records})
            except CommClosedError:
                return
            if self._alive is not None and not self.scheduler.queued_bytes:
                self._alive.loop_beat()  # it left at once: the liveness thread stays quiet this interval
            await asyncio.sleep(self.heartbeat_interval)


