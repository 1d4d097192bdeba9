"""xsched: a Jupyter-first distributed task scheduler for Python.

>>> from xsched import Client, LocalCluster, delayed, as_completed, wait
"""

# The layers import downward only (tests/unit/test_layers.py); the higher ones hook into the
# lower through xsched.hooks when imported here: xsched.deploy provides the LocalCluster that
# Client() starts without an address, xsched.jupyter the notebook display and the magics.
from . import config, datasets, jupyter  # noqa: F401 (jupyter: registers the display hooks and magics)
from .client.actors import Actor, ActorFuture
from .client.client import Client, Executor, default_client, get_client
from .client.coordination import Event, Lock, MultiLock, Queue, Semaphore, Variable
from .client.pubsub import Pub, Sub
from .client.diagnostics import get_task_stream, log_event, print, warn  # noqa: A004 (xsched.print, like dask's)
from .client.future import Future, fire_and_forget, futures_of
from .client.waiting import as_completed, wait
from .client.worker_client import local_client, worker_client
from .dashboard.report import performance_report
from .deploy.local import LocalCluster
from .errors import ActorError, DebugError, DebuggerQuit, KilledWorker, SchedulerLostError, TaskInterrupted, XschedError
from .graph.annotate import annotate
from .graph.delayed import Delayed, compute, delayed, persist
from .graph.visualize import visualize
from .jupyter import magics as _magics
from .jupyter.progress import progress
from .plugins import NannyPlugin, PipInstall, SchedulerPlugin, UploadFile, WorkerPlugin
from .protocol.versions import XSCHED_VERSION, IncompatibleVersionError
from .sizeof import sizeof
from .task_context import breakpoint, get_worker, rejoin, secede  # noqa: A004 (xsched.breakpoint)

# what a wait with a timeout raises (result, gather, wait, Queue.get...): the builtin, asyncio's too
TimeoutError = TimeoutError  # noqa: A001, PLW0127 (re-exported: xsched.TimeoutError, as dask has)

__version__ = XSCHED_VERSION

__all__ = [
    # computing
    "Client", "Executor", "Future", "LocalCluster", "delayed", "Delayed", "compute", "persist", "visualize", "annotate",
    "as_completed", "wait", "progress", "fire_and_forget", "futures_of", "get_client", "default_client",
    # tasks that launch tasks
    "worker_client", "local_client", "get_worker", "secede", "rejoin", "breakpoint",
    # coordination between tasks and clients
    "Lock", "MultiLock", "Semaphore", "Variable", "Queue", "Event", "Pub", "Sub",
    # plugins: code run by the workers, the scheduler and the nannies
    "WorkerPlugin", "SchedulerPlugin", "NannyPlugin", "UploadFile", "PipInstall",
    # events, output and diagnostics
    "log_event", "print", "warn", "get_task_stream", "performance_report",
    # errors
    "KilledWorker", "SchedulerLostError", "XschedError", "IncompatibleVersionError", "TimeoutError",
    "DebuggerQuit", "DebugError", "ActorError", "TaskInterrupted",
    # actors: client.submit(cls, actor=True)
    "Actor", "ActorFuture",
    # the servers, for a cluster in this event loop (imported when asked for)
    "Scheduler", "Worker",
    # the rest
    "config", "sizeof", "datasets",
]


def __getattr__(name: str):
    """``xsched.Scheduler`` and ``xsched.Worker``, the servers, imported when first asked for
    (``import xsched`` need not load their code): ``async with xsched.Scheduler() as s,
    xsched.Worker(s.address) as w:`` runs a cluster in this event loop, as dask's tutorials do."""
    if name == "Scheduler":
        from .scheduler.server import Scheduler
        return Scheduler
    if name == "Worker":
        from .worker.server import Worker
        return Worker
    raise AttributeError(f"module 'xsched' has no attribute {name!r}")


def load_ipython_extension(ip):
    """``%load_ext xsched`` registers the ``%remote`` and ``%scheduler`` magics, and a ``%debug``
    that opens a failed (or paused) task's frames on its worker."""
    _magics.load_ipython_extension(ip)
