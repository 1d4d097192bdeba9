"""Plugins: your code, run by the cluster's own processes at the moments they choose.

Subclass one of the three base classes, define the hooks you need (each one's default does
nothing) and give an instance to ``client.register_plugin``:

===================  ============================  ==========================================
class                runs in                       hooks
===================  ============================  ==========================================
``WorkerPlugin``     every worker process, now     ``setup(worker)``, ``teardown(worker)``,
                     and each one that joins later ``transition(key, start, finish, **kwargs)``
``SchedulerPlugin``  the scheduler process         ``start(scheduler)``, ``close()``,
                                                   ``transition(key, start, finish, ...)``,
                                                   ``update_graph(scheduler, keys, ...)``,
                                                   ``add_worker``/``remove_worker(scheduler,
                                                   worker)``, ``add_client``/``remove_client
                                                   (scheduler, client)``
``NannyPlugin``      every nanny process (the one  ``setup(nanny)``, ``teardown(nanny)``
                     that starts and watches the
                     workers), before its workers
                     start
===================  ============================  ==========================================

A plugin travels pickled (cloudpickle), so each process has a copy of its own: what
``setup`` stores on ``self`` in one worker is that worker's. The scheduler keeps worker and
nanny plugins as bytes, never opened, and sends them to every worker that registers later,
before any task. Registering a plugin under a name already taken replaces the old one (torn
down first) unless ``idempotent``, which keeps the old one.

When a hook runs:

- ``WorkerPlugin.setup`` runs on the worker's event loop as the plugin arrives, before the
  tasks sent after it (a coroutine ``setup`` is awaited meanwhile, so tasks may start
  before it ends). If it raises, the plugin is dropped on that worker, the worker goes on,
  and the client that registered it hears the error, naming the plugin and the worker
  (``register_plugin`` raises ``PluginError``; a worker that joins later: a warning).
- ``WorkerPlugin.transition`` hears each task state change of the worker's state machine
  (``released``, ``waiting``, ``ready``, ``executing``, ``memory``, ``error``, ``fetch``,
  ``flight``, ...), with ``stimulus_id=``, on the event loop just after the change.
- ``SchedulerPlugin`` hooks other than ``start`` are called in the order of the events,
  soon after each (on the scheduler's loop, outside its state machine, so a hook may use
  the scheduler freely): by then the task may have moved on to a later state.
- ``NannyPlugin.setup`` runs in the nanny process; the workers it starts afterwards inherit
  what it did to the process (environment variables, say). A nanny that starts after the
  plugin was registered sets it up before its worker registers. One registered while the
  workers run takes effect in them at their next start: ``restart = True`` on the plugin
  restarts them at once. Workers without a nanny (``processes=False``, ``--no-nanny``)
  skip nanny plugins.

Ready-made: :class:`UploadFile` (a file, imported where it can be) and :class:`PipInstall`.
Hook signatures follow dask.distributed's, so plugins written for it mostly work unchanged;
keyword arguments a hook does not declare are not passed to it.

>>> class Hello(WorkerPlugin):
...     def setup(self, worker):
...         self.greeting = "hello"
>>> client.register_plugin(Hello(), name="plugins-hello")
{'tcp://127.0.0.1:...': 'OK', 'tcp://127.0.0.1:...': 'OK'}
>>> client.unregister_worker_plugin("plugins-hello")
{'tcp://127.0.0.1:...': 'OK', 'tcp://127.0.0.1:...': 'OK'}

This module only defines: it starts nothing and imports no server.
"""

from __future__ import annotations

import hashlib
import importlib
import inspect
import json
import logging
import os
import subprocess
import sys
import tempfile
import time

logger = logging.getLogger("xsched.plugins")

__all__ = ["WorkerPlugin", "SchedulerPlugin", "NannyPlugin", "UploadFile", "PipInstall", "IMPORTABLE_SUFFIXES",
           "hook_caller", "kind_of"]

#: files an ``UploadFile`` (and ``client.upload_file``) imports or puts on ``sys.path``
IMPORTABLE_SUFFIXES = (".py", ".zip", ".egg")


class WorkerPlugin:
    """Code run in every worker process: now, and in each worker that joins later.

    Define what you need of ``setup(worker)`` (the plugin arrives), ``teardown(worker)``
    (it is unregistered or replaced, or the worker closes) and ``transition(key, start,
    finish, **kwargs)`` (a task changed state on this worker). ``setup`` and ``teardown``
    may be coroutine functions. Set ``name`` (or pass ``name=`` to ``register_plugin``) to
    replace or unregister it later; ``idempotent = True`` keeps a plugin already
    registered under that name.

    >>> class Count(WorkerPlugin):
    ...     def setup(self, worker):
    ...         self.done = 0
    ...     def transition(self, key, start, finish, **kwargs):
    ...         if (start, finish) == ("executing", "memory"):
    ...             self.done += 1
    >>> c = Count(); c.setup(worker=None); c.transition("inc-1", "executing", "memory"); c.done
    1
    >>> client.register_plugin(Count(), name="workerplugin-count")
    {'tcp://127.0.0.1:...': 'OK', 'tcp://127.0.0.1:...': 'OK'}
    >>> client.run(lambda worker: worker.plugins["workerplugin-count"].done)
    {'tcp://127.0.0.1:...': 0, 'tcp://127.0.0.1:...': 0}
    >>> client.unregister_worker_plugin("workerplugin-count")
    {'tcp://127.0.0.1:...': 'OK', 'tcp://127.0.0.1:...': 'OK'}
    """

    #: keep a plugin already registered under this name instead of replacing it
    idempotent: bool = False

    def setup(self, worker):
        """The plugin arrived in ``worker`` (the live Worker object)."""

    def teardown(self, worker):
        """The plugin leaves ``worker``: unregistered, replaced, or the worker closes."""

    def transition(self, key: str, start: str, finish: str, **kwargs):
        """The task ``key`` went from ``start`` to ``finish`` on this worker (``stimulus_id=``)."""


class SchedulerPlugin:
    """Code run in the scheduler process, told what happens there.

    ``start(scheduler)`` runs once, at registration (an error there is raised in the
    registering client, and the plugin is not kept); ``close()`` when it is unregistered
    or replaced, or the scheduler closes. Between them, define any of:
    ``transition(key, start, finish, *args, **kwargs)`` (a task changed state;
    ``stimulus_id=``), ``update_graph(scheduler, keys, **kwargs)`` (a client submitted
    a graph wanting ``keys``; ``client=``, ``tasks=`` the keys of its tasks,
    ``stimulus_id=``), ``add_worker(scheduler, worker)``, ``remove_worker(scheduler,
    worker, **kwargs)`` (``reason=``), ``add_client(scheduler, client)`` and
    ``remove_client(scheduler, client)``. ``start`` and ``close`` may be coroutine
    functions, and so may the others (their coroutines then run as tasks).

    >>> class Audit(SchedulerPlugin):
    ...     def __init__(self):
    ...         self.seen = []
    ...     def transition(self, key, start, finish, *args, **kwargs):
    ...         self.seen.append((key, finish))
    >>> a = Audit(); a.transition("inc-1", "processing", "memory"); a.seen
    [('inc-1', 'memory')]
    >>> client.register_plugin(Audit(), name="schedulerplugin-audit")
    >>> client.submit(abs, -1, key="schedulerplugin-abs").result()
    1
    >>> client.run_on_scheduler(lambda scheduler: scheduler.plugins["schedulerplugin-audit"].seen[-1])
    ('schedulerplugin-abs', 'memory')
    >>> client.unregister_scheduler_plugin("schedulerplugin-audit")
    """

    idempotent: bool = False

    async def start(self, scheduler):
        """The plugin is registered in ``scheduler`` (the live Scheduler object)."""

    async def close(self):
        """The plugin is unregistered or replaced, or the scheduler closes."""

    def transition(self, key: str, start: str, finish: str, *args, **kwargs):
        """The task ``key`` went from ``start`` to ``finish`` on the scheduler."""

    def update_graph(self, scheduler, keys, **kwargs):
        """A client submitted a graph; it wants ``keys`` (``client=``, ``tasks=``, ``stimulus_id=``)."""

    def add_worker(self, scheduler, worker: str):
        """The worker at address ``worker`` registered."""

    def remove_worker(self, scheduler, worker: str, **kwargs):
        """The worker at address ``worker`` left (``reason=``)."""

    def add_client(self, scheduler, client: str):
        """A client connected."""

    def remove_client(self, scheduler, client: str):
        """A client went away."""


class NannyPlugin:
    """Code run in every nanny process: the one that starts each worker process and starts
    it again when it dies. What ``setup(nanny)`` does to the nanny's process (environment
    variables, files) is there before the worker processes start, which inherit it.

    A nanny started after the plugin was registered sets it up before its worker
    registers. For the workers running when it is registered, ``restart = True`` restarts
    them (through their nanny) once it is set up; otherwise they see it at their next
    start. ``teardown(nanny)`` runs when it is unregistered or replaced, or the nanny
    stops. Workers without a nanny skip nanny plugins.

    >>> class Environ(NannyPlugin):
    ...     restart = True
    ...     def __init__(self, **variables):
    ...         self.variables = variables
    ...     def setup(self, nanny):
    ...         os.environ.update(self.variables)
    >>> client.register_plugin(Environ(OMP_NUM_THREADS="1"))                # doctest: +SKIP
    >>> client.run(lambda: os.environ["OMP_NUM_THREADS"])                    # doctest: +SKIP
    {'tcp://127.0.0.1:40211': '1', 'tcp://127.0.0.1:38003': '1'}
    """

    #: restart the running workers once the plugin is set up (their data is lost, recomputed)
    restart: bool = False
    idempotent: bool = False

    def setup(self, nanny):
        """The plugin arrived in ``nanny`` (the Nanny object, in its own process)."""

    def teardown(self, nanny):
        """The plugin leaves the nanny: unregistered, replaced, or the nanny stops."""


class UploadFile(WorkerPlugin):
    """A local file every worker gets (and each one that joins later) in its upload
    directory; a ``.py`` module is imported (reloaded if it was before), a ``.zip`` or
    ``.egg`` goes on ``sys.path``, so tasks can import it. ``load=False``: only written.
    Other files are only written; ``get_worker().upload_directory`` says where.

    >>> with open("helpers.py", "w") as f:
    ...     _ = f.write("def double(x):\\n    return 2 * x\\n")
    >>> plugin = UploadFile("helpers.py")
    >>> plugin.name, plugin.filename, plugin.data[:10]
    ('upload-file-helpers.py', 'helpers.py', b'def double')
    >>> client.register_plugin(plugin)
    {'tcp://127.0.0.1:...': 'OK', 'tcp://127.0.0.1:...': 'OK'}
    >>> client.submit(lambda x: __import__("helpers").double(x), 21).result()
    42
    >>> client.unregister_worker_plugin(plugin.name)
    {'tcp://127.0.0.1:...': 'OK', 'tcp://127.0.0.1:...': 'OK'}
    """

    def __init__(self, filepath: str, load: bool = True):
        self.filename = os.path.basename(filepath)
        if self.filename in ("", ".", ".."):
            raise ValueError(f"UploadFile takes a file, not {filepath!r}")
        with open(filepath, "rb") as f:
            self.data = f.read()
        self.load = bool(load)
        self.name = f"upload-file-{self.filename}"

    def __repr__(self) -> str:
        return f"UploadFile({self.filename!r}, {len(self.data)} bytes, load={self.load})"

    def setup(self, worker):
        worker.upload_file(self.filename, self.data, load=self.load and self.filename.endswith(IMPORTABLE_SUFFIXES))


class PipInstall(WorkerPlugin):
    """``pip install`` packages into each worker's Python environment, now and in workers
    that join later. ``pip_options`` go before the packages (``["--no-index",
    "--find-links", "/shared/wheels"]``, ``["--upgrade"]``). Workers of one host take turns,
    so two never run pip in one environment at once. A failed install raises, naming pip's
    output, in the registering client.

    ``restart_workers=True`` (or, as older code spells it, ``restart=True``) restarts each
    worker once through its nanny after the install, so that modules it imported before
    are imported afresh; a worker that started after the install is not restarted.

    ``idempotent``: registering the same packages and options again does nothing.

    >>> plugin = PipInstall(["scipy==1.13.*"], pip_options=["--upgrade"])
    >>> plugin.command()[-3:]
    ['install', '--upgrade', 'scipy==1.13.*']
    >>> client.register_plugin(plugin)                                   # doctest: +SKIP
    """

    idempotent = True

    def __init__(self, packages, pip_options=None, restart_workers: bool = False, *, restart: bool | None = None):
        self.packages = [packages] if isinstance(packages, str) else list(packages)
        if not self.packages:
            raise ValueError("PipInstall needs at least one package")
        self.pip_options = list(pip_options or [])
        self.restart_workers = bool(restart_workers if restart is None else restart)
        token = hashlib.sha256(json.dumps([self.packages, self.pip_options]).encode()).hexdigest()[:16]
        self.name = f"pip-install-{token}"

    def __repr__(self) -> str:
        return (f"PipInstall({self.packages!r}, pip_options={self.pip_options!r}, "
                f"restart_workers={self.restart_workers})")

    def command(self) -> list[str]:
        """The pip command line run in each worker."""
        return [sys.executable, "-m", "pip", "--disable-pip-version-check", "--no-input", "install",
                *self.pip_options, *self.packages]

    def setup(self, worker):
        marker = None
        directory = getattr(worker, "nanny_directory", None)
        if self.restart_workers and directory:
            marker = os.path.join(directory, f"{self.name}.installed")
            installed = _read_time(marker)
            if installed is not None:
                if installed > worker.start_time:  # a sibling installed it after we started
                    worker.restart(reason=f"{self.name}: restarting after pip install")
                return  # (else we started after the install: nothing to do)
        with _host_lock(f"pip-{hashlib.sha256(sys.prefix.encode()).hexdigest()[:16]}"):
            proc = subprocess.run(self.command(), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, text=True)
        if proc.returncode:
            tail = proc.stdout.strip().splitlines()[-15:]
            raise RuntimeError(f"pip install {' '.join(self.packages)} failed (exit code {proc.returncode}):\n"
                               + "\n".join(tail))
        importlib.invalidate_caches()
        logger.info("pip installed %s", " ".join(self.packages))
        if not self.restart_workers:
            return
        if marker is None:
            logger.warning("PipInstall(restart_workers=True): worker %s has no nanny to restart it; it keeps the "
                           "modules it imported before", getattr(worker, "address", worker))
            return
        _write_time(marker)
        worker.restart(reason=f"{self.name}: restarting after pip install")


# ---------------------------------------------------------------------- helpers
def kind_of(plugin) -> str:
    """``"scheduler"``, ``"nanny"`` or ``"worker"``: where ``plugin`` runs, by its base class.

    >>> kind_of(UploadFile.__new__(UploadFile)), kind_of(NannyPlugin())
    ('worker', 'nanny')
    >>> kind_of(object())
    Traceback (most recent call last):
    ...
    TypeError: register_plugin takes a WorkerPlugin, SchedulerPlugin or NannyPlugin (from xsched import ...), not object
    """
    if isinstance(plugin, SchedulerPlugin):
        return "scheduler"
    if isinstance(plugin, NannyPlugin):
        return "nanny"
    if isinstance(plugin, WorkerPlugin):
        return "worker"
    raise TypeError("register_plugin takes a WorkerPlugin, SchedulerPlugin or NannyPlugin (from xsched import ...), "
                    f"not {type(plugin).__name__}")


def hook_caller(plugin, hook: str, base: type, optional=()):
    """The bound hook ``hook`` of ``plugin``, or None when it is the do-nothing one of ``base``
    (or missing). Called with keyword arguments of ``optional`` it does not declare (and it
    has no ``**kwargs``), those are left out: hooks written with fewer parameters work.

    >>> class P(WorkerPlugin):
    ...     def transition(self, key, start, finish):
    ...         return (key, finish)
    >>> hook_caller(P(), "transition", WorkerPlugin, ["stimulus_id"])("k", "executing", "memory", stimulus_id="s")
    ('k', 'memory')
    >>> hook_caller(P(), "setup", WorkerPlugin) is None
    True
    """
    fn = getattr(plugin, hook, None)
    if fn is None or getattr(type(plugin), hook, None) is getattr(base, hook, None):
        return None
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return fn
    if any(p.kind is p.VAR_KEYWORD for p in params):
        return fn
    declared = {p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
    dropped = set(optional) - declared
    if not dropped:
        return fn

    def call(*args, **kwargs):
        for name in dropped:
            kwargs.pop(name, None)
        return fn(*args, **kwargs)

    return call


def _read_time(path: str) -> float | None:
    try:
        with open(path) as f:
            return float(f.read().strip())
    except (OSError, ValueError):
        return None


def _write_time(path: str) -> None:
    tmp = f"{path}.{os.getpid()}.part"
    with open(tmp, "w") as f:
        f.write(repr(time.time()))
    os.replace(tmp, path)


class _host_lock:
    """An exclusive lock held by one process of this host at a time (a lock file in the
    temporary directory, ``flock``), for what must not run twice at once."""

    def __init__(self, name: str):
        self.path = os.path.join(tempfile.gettempdir(), f"xsched-{name}.lock")
        self._f = None

    def __enter__(self):
        import fcntl

        self._f = open(self.path, "a")
        fcntl.flock(self._f, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc):
        import fcntl

        fcntl.flock(self._f, fcntl.LOCK_UN)
        self._f.close()
        self._f = None
