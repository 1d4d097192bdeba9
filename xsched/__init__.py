"""xsched: a Jupyter-first distributed task scheduler for Python.

>>> from xsched import Client, LocalCluster, delayed, as_completed, wait
"""

# Every name below is imported when first used (PEP 562, ``__getattr__``): each scheduler,
# worker and nanny process imports this package first, and needs neither the client, the
# clusters nor the notebook code (about 0.15 s of CPU each, paid by every process a cluster
# starts). The layers import downward only (tests/unit/test_layers.py); where a lower layer
# needs a higher one (the LocalCluster of Client(), the notebook display), it calls
# xsched.hooks, which imports the provider then.
from typing import TYPE_CHECKING

# (imported now: the module of the same name would otherwise take the attribute ``xsched.sizeof``
# from the function when a worker imports it; it imports nothing of xsched)
from .sizeof import sizeof

#: public name -> the module that defines it (the imports under TYPE_CHECKING, for readers,
#: type checkers and the reference documentation, say the same: a test checks it)
_WHERE = {
    "Actor": "client.actors", "ActorFuture": "client.actors",
    "Client": "client.client", "Executor": "client.client", "default_client": "client.client",
    "get_client": "client.client",
    "Event": "client.coordination", "Lock": "client.coordination", "MultiLock": "client.coordination",
    "Queue": "client.coordination", "Semaphore": "client.coordination", "Variable": "client.coordination",
    "Pub": "client.pubsub", "Sub": "client.pubsub",
    "get_task_stream": "client.diagnostics", "log_event": "client.diagnostics", "print": "client.diagnostics",
    "warn": "client.diagnostics",
    "Future": "client.future", "fire_and_forget": "client.future", "futures_of": "client.future",
    "as_completed": "client.waiting", "wait": "client.waiting",
    "local_client": "client.worker_client", "worker_client": "client.worker_client",
    "performance_report": "dashboard.report",
    "LocalCluster": "deploy.local",
    "ActorError": "errors", "DebugError": "errors", "DebuggerQuit": "errors", "KilledWorker": "errors",
    "SchedulerLostError": "errors", "TaskInterrupted": "errors", "XschedError": "errors",
    "annotate": "graph.annotate",
    "Delayed": "graph.delayed", "compute": "graph.delayed", "delayed": "graph.delayed", "persist": "graph.delayed",
    "visualize": "graph.visualize",
    "progress": "jupyter.progress",
    "NannyPlugin": "plugins", "PipInstall": "plugins", "SchedulerPlugin": "plugins", "UploadFile": "plugins",
    "WorkerPlugin": "plugins",
    "IncompatibleVersionError": "protocol.versions", "XSCHED_VERSION": "protocol.versions",
    "breakpoint": "task_context", "get_worker": "task_context", "rejoin": "task_context", "secede": "task_context",
    # the servers, for a cluster in this event loop: ``async with xsched.Scheduler() as s,
    # xsched.Worker(s.address) as w:``, as dask's tutorials do
    "Scheduler": "scheduler.server", "Worker": "worker.server",
    "__version__": "protocol.versions",
}
#: the names whose module calls them otherwise
_NAMED_THERE = {"__version__": "XSCHED_VERSION"}

if TYPE_CHECKING:
    from . import config, datasets, hooks, jupyter  # noqa: F401
    from .client.actors import Actor, ActorFuture
    from .client.client import Client, Executor, default_client, get_client
    from .client.coordination import Event, Lock, MultiLock, Queue, Semaphore, Variable
    from .client.diagnostics import get_task_stream, log_event, print, warn  # noqa: A004
    from .client.future import Future, fire_and_forget, futures_of
    from .client.pubsub import Pub, Sub
    from .client.waiting import as_completed, wait
    from .client.worker_client import local_client, worker_client
    from .dashboard.report import performance_report
    from .deploy.local import LocalCluster
    from .errors import (ActorError, DebugError, DebuggerQuit, KilledWorker, SchedulerLostError, TaskInterrupted,
                         XschedError)
    from .graph.annotate import annotate
    from .graph.delayed import Delayed, compute, delayed, persist
    from .graph.visualize import visualize
    from .jupyter.progress import progress
    from .plugins import NannyPlugin, PipInstall, SchedulerPlugin, UploadFile, WorkerPlugin
    from .protocol.versions import XSCHED_VERSION, IncompatibleVersionError
    from .scheduler.server import Scheduler
    from .task_context import breakpoint, get_worker, rejoin, secede  # noqa: A004
    from .worker.server import Worker

    __version__ = XSCHED_VERSION
# what a wait with a timeout raises (result, gather, wait, Queue.get...): the builtin, asyncio's too
TimeoutError = TimeoutError  # noqa: A001, PLW0127 (re-exported: xsched.TimeoutError, as dask has)

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
    """A public name, imported from its module when first asked for (then kept here).

    >>> import xsched
    >>> xsched.delayed(sum)([1, 2]).compute()
    3
    """
    import importlib.util

    if name in _WHERE:
        value = getattr(importlib.import_module(f".{_WHERE[name]}", __name__), _NAMED_THERE.get(name, name))
    elif not name.startswith("_") and importlib.util.find_spec(f"{__name__}.{name}") is not None:
        value = importlib.import_module(f".{name}", __name__)  # (a submodule: xsched.errors, xsched.deploy...)
    else:
        raise AttributeError(f"module 'xsched' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list:
    return sorted({*globals(), *_WHERE})


def load_ipython_extension(ip):
    """``%load_ext xsched`` registers the ``%remote`` and ``%scheduler`` magics, and a ``%debug``
    that opens a failed (or paused) task's frames on its worker."""
    from .jupyter import magics

    magics.load_ipython_extension(ip)
