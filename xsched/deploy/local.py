"""LocalCluster: a scheduler and workers on this machine, on loopback only.

With ``processes=True`` (the default) the scheduler and every worker are separate
processes started with ``python -m xsched.cli``; they listen on 127.0.0.1 with ports
chosen by the system, share a fresh secret through a scheduler file (mode 0600) in a
private temporary directory, and close themselves if this process dies. With
``processes=False`` they run on the client's background event loop in this process
(quick to start; tasks then share this process's GIL).

Nothing survives ``close()``, interpreter exit (atexit) or a kernel restart (the
children watch their parent): no process, no port, no temporary file.

>>> from xsched import LocalCluster, Client
>>> with LocalCluster(n_workers=2, threads_per_worker=1) as cluster:
...     with Client(cluster) as client:
...         client.submit(sum, [1, 2]).result()
3
"""

from __future__ import annotations

import asyncio
import atexit
import glob
import html
import inspect
import logging
import os
import shutil
import tempfile
import weakref

import psutil

from .. import config, hooks
from ..client import loop as _loop
from ..protocol.addressing import DEFAULT_DASHBOARD_PORT, dashboard_link, is_loopback, parse_dashboard_address
from ..protocol.registry import read_scheduler_file, scheduler_file_dashboard
from ..protocol.security import Security
from ..units import parse_memory_limit, parse_resources
from .launchers import InProcessWorker, LocalProcess
from .process import spawn, stop_process, wait_for_file
from .spec import SpecCluster

__all__ = ["LocalCluster"]

logger = logging.getLogger("xsched.deploy")

_live: "weakref.WeakSet[LocalCluster]" = weakref.WeakSet()


class _Setting:
    """(``dashboard_address`` not given: the ``scheduler.dashboard-address`` setting decides)"""

    def __repr__(self) -> str:
        return "<the scheduler.dashboard-address setting>"


_FROM_CONFIG = _Setting()


def _usable_directory(path: str) -> None:
    """Make ``local_directory`` (where workers spill) now, or say why it cannot be: every
    worker would fail to start there, and the cluster wait for them until its timeout.

    >>> _usable_directory("/proc/no/such/place")
    Traceback (most recent call last):
    OSError: LocalCluster: local_directory '/proc/no/such/place' cannot be made: ...
    """
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as e:
        raise OSError(f"LocalCluster: local_directory {path!r} cannot be made: {e}") from None
    if not os.access(path, os.W_OK | os.X_OK):
        raise PermissionError(f"LocalCluster: local_directory {path!r} is not writable by this user; "
                              "give a directory of your own")


def _last_error(path: str, limit: int = 400) -> str | None:
    """The last ERROR line of a nanny's log, without its time stamp (None when there is none).

    >>> import tempfile
    >>> with tempfile.NamedTemporaryFile("w", suffix=".log", delete=False) as f:
    ...     _ = f.write("2026-01-02 10:00:00,001 xsched.nanny ERROR worker 0 died: OSError: no room\\n")
    >>> _last_error(f.name)
    'xsched.nanny ERROR worker 0 died: OSError: no room'
    >>> os.remove(f.name)
    """
    try:
        with open(path, errors="replace") as f:
            lines = [line.strip() for line in f if " ERROR " in line]
    except OSError:
        return None
    if not lines:
        return None
    last = lines[-1].split(" ", 2)[-1] if lines[-1][:4].isdigit() else lines[-1]
    return last[:limit]


class LocalCluster(SpecCluster):
    """A scheduler plus ``n_workers`` workers on this machine.

    ``memory_limit`` per worker: "2GB", a fraction of RAM, "auto" (RAM / n_workers) or 0.
    ``resources`` per worker: {"GPU": 1} or "GPU=1". ``name``: shown in its repr and
    display, kept as ``cluster.name`` and in the scheduler's registry entry (the JupyterLab
    panel names the cluster by it). ``dashboard_address``: where the scheduler serves its
    dashboard page (``":8787"``: port 8787 on loopback, or a free port when that one is
    taken; None: no page; by default the ``scheduler.dashboard-address`` setting, ``":8787"``
    unless changed); ``cluster.dashboard_link`` is its URL. Scaling,
    ``adapt`` and ``close`` work as for every xsched cluster (``deploy/spec.py``): each
    worker is one group.

    >>> cluster = LocalCluster(n_workers=1, threads_per_worker=1, name="analysis")
    >>> cluster
    LocalCluster('tcp://127.0.0.1:...', name='analysis', workers=1, threads=1, memory=... per worker, status=running,
                 dashboard=http://127.0.0.1:.../status?token=...)
    >>> cluster.scale(2)
    >>> cluster.n_workers
    2
    >>> cluster.dashboard_link
    'http://127.0.0.1:.../status?token=...'
    >>> cluster.close()
    """

    kind = "LocalCluster"

    def __init__(self, n_workers: int | None = None, threads_per_worker: int | None = None,
                 memory_limit="auto", processes: bool = True, resources=None, host: str = "127.0.0.1",
                 asynchronous: bool = False, security: str | None = None, timeout: float = 30,
                 local_directory: str | None = None, name: str | None = None,
                 dashboard_address: str | int | None = _FROM_CONFIG):
        cpus = psutil.cpu_count() or 1
        if n_workers is None:
            n_workers = max(1, cpus // (threads_per_worker or 1)) if processes else 1
        if threads_per_worker is None:
            threads_per_worker = max(1, cpus // max(n_workers, 1)) if processes else cpus
        if host not in ("127.0.0.1", "localhost", "::1"):
            raise ValueError(f"LocalCluster listens on loopback only, not {host!r}; use `xsched scheduler` "
                             "and `xsched worker` to serve other machines")
        if local_directory is not None:
            _usable_directory(local_directory)
        if dashboard_address is _FROM_CONFIG:
            dashboard_address = config.get("scheduler.dashboard-address", f":{DEFAULT_DASHBOARD_PORT}")
        dashboard = parse_dashboard_address(dashboard_address)  # (host, port) or None; AddressError names it
        if dashboard is not None and dashboard[0] and not is_loopback(dashboard[0]):
            raise ValueError(f"LocalCluster serves its dashboard on loopback only, not {dashboard[0]!r}; give a "
                             "port alone (dashboard_address=':8787'), or use `xsched scheduler --dashboard-address` "
                             "to serve other machines")
        super().__init__(workers_per_group=1, threads_per_worker=int(threads_per_worker),
                         memory_limit=parse_memory_limit(memory_limit, nworkers=max(int(n_workers), 1)),
                         timeout=timeout, name=name)
        self._initial_workers = int(n_workers)
        self.dashboard_address = None if dashboard is None else str(dashboard_address).strip()
        self.resources = parse_resources(resources) if resources else {}
        self.processes = processes
        self.host = "127.0.0.1" if host == "localhost" else host
        self.asynchronous = asynchronous
        self.security_mode = security or config.get("comm.security", "auto")
        self._dir = tempfile.mkdtemp(prefix="xsched-cluster-")
        os.chmod(self._dir, 0o700)
        self._local_directory = local_directory or self._dir
        self.scheduler_file = os.path.join(self._dir, "scheduler.json")
        self._scheduler_proc = None
        self._inprocess_scheduler = None
        _live.add(self)
        if not asynchronous:
            self._start(self._initial_workers)

    def _where_logs_are(self) -> str:
        """Where the workers' output went, and the last error their nannies logged: the
        directory is removed when the cluster closes, as it does when it fails to start."""
        said = [line for line in map(_last_error, sorted(glob.glob(os.path.join(self._dir, "nanny-*.log"))))
                if line]
        return f"their logs are in {self._dir}" + ("; " + "; ".join(said) if said else "")

    def _describe(self) -> str:
        return f"{super()._describe()}, {'processes' if self.processes else 'in-process'}"

    # ------------------------------------------------------------------ scheduler
    def _start_scheduler(self) -> None:
        if self.processes:
            log = os.path.join(self._dir, "scheduler.log")
            named = ["--name", self.name] if self.name != self.kind else []  # for the JupyterLab panel
            self._scheduler_proc = spawn(["scheduler", "--host", self.host, "--port", "0", "--scheduler-file",
                                          self.scheduler_file, "--security", self.security_mode,
                                          "--dashboard-address", str(self.dashboard_address),
                                          "--cleanup-directory", self._dir, *named], log_path=log)
            wait_for_file(self.scheduler_file, self._scheduler_proc, self.timeout, "scheduler", log)
            self.scheduler_address, self.security = read_scheduler_file(self.scheduler_file)
            self._dashboard = scheduler_file_dashboard(self.scheduler_file)
            self._note_dashboard_port()
        else:
            _loop.sync(self._start_inprocess_scheduler(), self.timeout)

    def _scheduler_failure(self) -> str | None:
        """Its scheduler's process exited (killed, crashed, told to close by another client)."""
        if self._inprocess_scheduler is not None and self._inprocess_scheduler.status in ("closing", "closed"):
            return "its scheduler (in this process) closed"
        proc = self._scheduler_proc
        if proc is None or proc.poll() is None:
            return None
        rc = proc.returncode
        return f"its scheduler process {proc.pid} " + (f"was killed by signal {-rc}" if rc < 0 else
                                                        f"exited with code {rc}")

    def _note_dashboard_port(self) -> None:
        """The scheduler's process logged it when the port asked for was taken; say it here too."""
        asked = parse_dashboard_address(self.dashboard_address)
        served = (self._dashboard or {}).get("port")
        if asked and asked[1] and served and served != asked[1]:
            page = dashboard_link(self._dashboard, self.scheduler_address).partition("?")[0]
            logger.info("%s: the dashboard's port %d is taken; its page is on port %d instead (%s)",
                        self.name, asked[1], served, page)

    async def _start_inprocess_scheduler(self) -> None:
        # processes=False only: `import xsched` need not load the scheduler's server code
        from ..scheduler.server import Scheduler

        self.security = Security.generate(self.security_mode)
        self._inprocess_scheduler = await Scheduler(
            self.security, name=self.name if self.name != self.kind else None,
            dashboard_address=self.dashboard_address).start(f"tcp://{self.host}:0")
        self.scheduler_address = self._inprocess_scheduler.address
        self._dashboard = self._inprocess_scheduler.dashboard_info()

    def _stop_scheduler(self, timeout: float) -> None:
        if self._inprocess_scheduler is not None:
            try:
                _loop.sync(self._inprocess_scheduler.close(), timeout)
            except Exception:
                pass
            self._inprocess_scheduler = None
        if self._scheduler_proc is not None:
            stop_process(self._scheduler_proc, timeout)
            self._scheduler_proc = None
        shutil.rmtree(self._dir, ignore_errors=True)

    # ------------------------------------------------------------------ workers
    def _new_group(self, name: str):
        if not self.processes:
            return InProcessWorker(name, self._make_inprocess_worker, self.timeout)
        args = ["worker", "--scheduler-file", self.scheduler_file, "--nthreads", str(self.threads_per_worker),
                "--name", name, "--memory-limit", str(self.memory_limit or 0),
                "--local-directory", self._local_directory, "--host", self.host, "--log-directory", self._dir]
        if self.resources:
            args += ["--resources", ",".join(f"{k}={v}" for k, v in self.resources.items())]
        return LocalProcess(name, args, log_path=os.path.join(self._dir, f"nanny-{name}.log"))

    def _make_inprocess_worker(self, name: str):
        # processes=False only: `import xsched` need not load the worker's server code
        from ..worker.server import Worker

        return Worker(self.scheduler_address, self.security, self.threads_per_worker, name=name,
                      memory_limit=self.memory_limit, resources=self.resources,
                      local_directory=self._local_directory, host=self.host)

    # ------------------------------------------------------------------ asyncio
    def __await__(self):
        return self._start_async().__await__()

    async def _start_async(self) -> "LocalCluster":
        if self.status == "running":
            return self
        await asyncio.get_running_loop().run_in_executor(None, self._start, self._initial_workers)
        return self

    def close(self, timeout: float = 10):
        """Stop adaptive scaling, the workers, then the scheduler. A cluster made with
        ``asynchronous=True`` returns, inside an event loop, what to await (as dask's)::

            cluster = await LocalCluster(n_workers=2, asynchronous=True)
            await cluster.close()

        >>> cluster = LocalCluster(n_workers=0, dashboard_address=None)
        >>> cluster.close(); cluster.status
        'closed'
        """
        if self.asynchronous and _in_event_loop():
            return self._close(timeout)
        SpecCluster.close(self, timeout)
        return None

    async def _close(self, timeout: float = 10) -> None:
        # (in a thread: stopping processes waits for them, which must not block the loop)
        await asyncio.get_running_loop().run_in_executor(None, SpecCluster.close, self, timeout)

    def __exit__(self, *exc):
        SpecCluster.close(self)

    async def __aenter__(self):
        return await self._start_async()

    async def __aexit__(self, *exc):
        await self._close()

    def __del__(self):
        try:
            if self.status != "closed" and self.processes:
                SpecCluster.close(self, timeout=2)
        except Exception:
            pass

    # ------------------------------------------------------------------ display
    def _repr_html_(self) -> str:
        try:
            return hooks.cluster_html(self)  # registered by xsched.jupyter (jupyter/display.py)
        except Exception:
            return f"<pre>{html.escape(repr(self))}</pre>"


@hooks.new_cluster.register
def _new_cluster(**cluster_kwargs) -> LocalCluster:
    """What ``Client()`` without an address connects to: a new LocalCluster, started now, made
    with the keywords the Client passes on (``Client(n_workers=2, processes=False)``).

    >>> _new_cluster(n_worker=2, thread_per_worker=1)
    Traceback (most recent call last):
    ...
    TypeError: Client() got keywords that neither it nor LocalCluster takes: n_worker, thread_per_worker (LocalCluster takes n_workers, threads_per_worker, ...)
    """
    taken = [p for p in inspect.signature(LocalCluster).parameters if p != "asynchronous"]
    unknown = sorted(set(cluster_kwargs) - set(taken))
    if unknown or "asynchronous" in cluster_kwargs:
        unknown = unknown or ["asynchronous"]
        raise TypeError(f"Client() got keywords that neither it nor LocalCluster takes: {', '.join(unknown)} "
                        f"(LocalCluster takes {', '.join(taken)})")
    return LocalCluster(asynchronous=False, **cluster_kwargs)


def _in_event_loop() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


@atexit.register
def _close_all() -> None:
    for cluster in list(_live):
        try:
            SpecCluster.close(cluster, timeout=3)
        except Exception:
            pass
