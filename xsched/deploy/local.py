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
>>> with LocalCluster(n_workers=2, threads_per_worker=1) as cluster:   # doctest: +SKIP
...     with Client(cluster) as client:
...         client.submit(sum, [1, 2]).result()
3
"""

from __future__ import annotations

import asyncio
import atexit
import html
import os
import shutil
import tempfile
import weakref

import psutil

from .. import config
from ..client import loop as _loop
from ..protocol.security import Security
from ..units import format_bytes, parse_memory_limit, parse_resources
from .process import spawn, stop_process, wait_for_file

__all__ = ["LocalCluster"]

_live: "weakref.WeakSet[LocalCluster]" = weakref.WeakSet()


class LocalCluster:
    """A scheduler plus ``n_workers`` workers on this machine.

    ``memory_limit`` per worker: "2GB", a fraction of RAM, "auto" (RAM / n_workers) or 0.
    ``resources`` per worker: {"GPU": 1} or "GPU=1".
    """

    def __init__(self, n_workers: int | None = None, threads_per_worker: int | None = None,
                 memory_limit="auto", processes: bool = True, resources=None, host: str = "127.0.0.1",
                 asynchronous: bool = False, security: str | None = None, timeout: float = 30,
                 local_directory: str | None = None):
        cpus = psutil.cpu_count() or 1
        if n_workers is None:
            n_workers = max(1, cpus // (threads_per_worker or 1)) if processes else 1
        if threads_per_worker is None:
            threads_per_worker = max(1, cpus // max(n_workers, 1)) if processes else cpus
        if host not in ("127.0.0.1", "localhost", "::1"):
            raise ValueError(f"LocalCluster listens on loopback only, not {host!r}; use `xsched scheduler` "
                             "and `xsched worker` to serve other machines")
        self.n_workers = int(n_workers)
        self.threads_per_worker = int(threads_per_worker)
        self.memory_limit = parse_memory_limit(memory_limit, nworkers=max(self.n_workers, 1))
        self.resources = parse_resources(resources) if resources else {}
        self.processes = processes
        self.host = "127.0.0.1" if host == "localhost" else host
        self.asynchronous = asynchronous
        self.timeout = timeout
        self.security_mode = security or config.get("comm.security", "auto")
        self.status = "created"
        self._dir = tempfile.mkdtemp(prefix="xsched-cluster-")
        os.chmod(self._dir, 0o700)
        self._local_directory = local_directory or self._dir
        self.scheduler_file = os.path.join(self._dir, "scheduler.json")
        self.scheduler_address: str | None = None
        self.security: Security | None = None
        self._scheduler_proc = None
        self._worker_procs: dict[str, object] = {}
        self._inprocess_scheduler = None
        self._inprocess_workers: dict[str, object] = {}
        self._next_name = 0
        _live.add(self)
        if not asynchronous:
            self._start_sync()

    # ------------------------------------------------------------------ start
    def _start_sync(self) -> None:
        try:
            if self.processes:
                self._start_processes()
            else:
                _loop.sync(self._start_inprocess(), self.timeout)
            self.status = "running"
            self._wait_for_workers(self.n_workers)
        except BaseException:
            self.close()
            raise

    def __await__(self):
        return self._start_async().__await__()

    async def _start_async(self) -> "LocalCluster":
        if self.status == "running":
            return self
        if self.processes:
            await asyncio.get_running_loop().run_in_executor(None, self._start_processes)
        else:
            await self._start_inprocess()
        self.status = "running"
        await self._await_workers(self.n_workers)
        return self

    def _start_processes(self) -> None:
        log = os.path.join(self._dir, "scheduler.log")
        self._scheduler_proc = spawn(["scheduler", "--host", self.host, "--port", "0", "--scheduler-file",
                                      self.scheduler_file, "--security", self.security_mode,
                                      "--cleanup-directory", self._dir], log_path=log)
        wait_for_file(self.scheduler_file, self._scheduler_proc, self.timeout, "scheduler", log)
        from ..protocol.registry import read_scheduler_file

        self.scheduler_address, self.security = read_scheduler_file(self.scheduler_file)
        for _ in range(self.n_workers):
            self._spawn_worker()

    def _spawn_worker(self) -> str:
        name = str(self._next_name)
        self._next_name += 1
        args = ["worker", "--scheduler-file", self.scheduler_file, "--nthreads", str(self.threads_per_worker),
                "--name", name, "--memory-limit", str(self.memory_limit or 0),
                "--local-directory", self._local_directory, "--host", self.host, "--log-directory", self._dir]
        if self.resources:
            args += ["--resources", ",".join(f"{k}={v}" for k, v in self.resources.items())]
        self._worker_procs[name] = spawn(args, log_path=os.path.join(self._dir, f"nanny-{name}.log"))
        return name

    async def _start_inprocess(self) -> None:
        from ..scheduler.server import Scheduler

        self.security = Security.generate(self.security_mode)
        self._inprocess_scheduler = await Scheduler(self.security).start(f"tcp://{self.host}:0")
        self.scheduler_address = self._inprocess_scheduler.address
        for _ in range(self.n_workers):
            await self._start_inprocess_worker()

    async def _start_inprocess_worker(self) -> str:
        from ..worker.server import Worker

        name = str(self._next_name)
        self._next_name += 1
        w = Worker(self.scheduler_address, self.security, self.threads_per_worker, name=name,
                   memory_limit=self.memory_limit, resources=self.resources,
                   local_directory=self._local_directory, host=self.host)
        self._inprocess_workers[name] = await w.start()
        return name

    # ------------------------------------------------------------------ workers
    def _info(self) -> dict:
        from ..client.client import Client

        with Client(self, set_as_default=False, timeout=self.timeout) as c:
            return c.scheduler_info()

    def _wait_for_workers(self, n: int) -> None:
        from ..client.client import Client

        with Client(self, set_as_default=False, timeout=self.timeout) as c:
            try:
                c.wait_for_workers(n, timeout=self.timeout)
            except TimeoutError:
                raise TimeoutError(f"only some of {n} workers started within {self.timeout}s; "
                                   f"their logs are in {self._dir}") from None

    async def _await_workers(self, n: int) -> None:
        from ..client.client import Client

        async with Client(self, set_as_default=False, asynchronous=True, timeout=self.timeout) as c:
            await c._wait_for_workers(n, timeout=self.timeout)

    @property
    def workers(self) -> dict:
        """Worker name -> process (or in-process Worker object)."""
        return dict(self._worker_procs) if self.processes else dict(self._inprocess_workers)

    def scale(self, n: int) -> None:
        """Add or remove workers until there are ``n``.

        >>> cluster.scale(4)   # doctest: +SKIP
        """
        if self.processes:
            self._worker_procs = {k: p for k, p in self._worker_procs.items() if p.poll() is None}
            while len(self._worker_procs) < n:
                self._spawn_worker()
            while len(self._worker_procs) > n:
                name = max(self._worker_procs, key=int)
                stop_process(self._worker_procs.pop(name))
        else:
            async def rescale():
                while len(self._inprocess_workers) < n:
                    await self._start_inprocess_worker()
                while len(self._inprocess_workers) > n:
                    name = max(self._inprocess_workers, key=int)
                    await self._inprocess_workers.pop(name).close()

            _loop.sync(rescale(), self.timeout)
        self.n_workers = n
        self._wait_for_workers(n)

    # ------------------------------------------------------------------ close
    def close(self, timeout: float = 10) -> None:
        """Stop every worker and the scheduler; remove the temporary directory."""
        if self.status == "closed":
            return
        self.status = "closing"
        for proc in list(self._worker_procs.values()):
            if proc.poll() is None:
                try:
                    proc.terminate()
                except ProcessLookupError:
                    pass
        for proc in list(self._worker_procs.values()):
            stop_process(proc, timeout)
        self._worker_procs.clear()
        if self._inprocess_scheduler is not None or self._inprocess_workers:
            try:
                _loop.sync(self._close_inprocess(), timeout)
            except Exception:
                pass
        if self._scheduler_proc is not None:
            stop_process(self._scheduler_proc, timeout)
            self._scheduler_proc = None
        shutil.rmtree(self._dir, ignore_errors=True)
        self.status = "closed"

    async def _close_inprocess(self) -> None:
        for w in list(self._inprocess_workers.values()):
            await w.close()
        self._inprocess_workers.clear()
        if self._inprocess_scheduler is not None:
            await self._inprocess_scheduler.close()
            self._inprocess_scheduler = None

    async def _close(self) -> None:
        if self.processes:
            await asyncio.get_running_loop().run_in_executor(None, self.close)
        else:
            await self._close_inprocess()
            self.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    async def __aenter__(self):
        return await self._start_async()

    async def __aexit__(self, *exc):
        await self._close()

    def __del__(self):
        try:
            if self.status != "closed" and self.processes:
                self.close(timeout=2)
        except Exception:
            pass

    # ------------------------------------------------------------------ display
    def __repr__(self) -> str:
        mem = format_bytes(self.memory_limit) if self.memory_limit else "no limit"
        return (f"LocalCluster({self.scheduler_address!r}, workers={self.n_workers}, "
                f"threads={self.n_workers * self.threads_per_worker}, memory={mem} per worker, "
                f"status={self.status})")

    def _repr_html_(self) -> str:
        from ..jupyter.display import cluster_html

        try:
            return cluster_html(self)
        except Exception:
            return f"<pre>{html.escape(repr(self))}</pre>"

    def _ipython_display_(self, **kwargs):  # [widgets] live widget with a Scale button (jupyter/widgets.py)
        from ..jupyter.widgets import ipython_display

        ipython_display(self)


@atexit.register
def _close_all() -> None:
    for cluster in list(_live):
        try:
            cluster.close(timeout=3)
        except Exception:
            pass
