"""xsched: a Jupyter-first distributed task scheduler for Python.

>>> from xsched import Client, LocalCluster, delayed, as_completed, wait
"""

# The layers import downward only (tests/unit/test_layers.py); the higher ones hook into the
# lower through xsched.hooks when imported here: xsched.deploy provides the LocalCluster that
# Client() starts without an address, xsched.jupyter the notebook display and the magics.
from . import config, jupyter
from .client.client import Client, Executor, get_client
from .client.future import Future
from .client.waiting import as_completed, wait
from .deploy.local import LocalCluster
from .errors import KilledWorker, SchedulerLostError, XschedError
from .graph.annotate import annotate
from .graph.delayed import Delayed, compute, delayed
from .jupyter import magics as _magics
from .jupyter.progress import progress
from .sizeof import sizeof
from .client.worker_client import local_client, worker_client
from .task_context import get_worker, rejoin, secede

__version__ = "0.1.0"

__all__ = [
    "Client", "Executor", "Future", "LocalCluster", "as_completed", "wait", "delayed", "Delayed", "compute",
    "annotate", "get_client", "config", "sizeof", "progress", "KilledWorker", "SchedulerLostError", "XschedError",
    "worker_client", "local_client", "get_worker", "secede", "rejoin",
]


def load_ipython_extension(ip):
    """``%load_ext xsched`` registers the ``%remote`` and ``%scheduler`` magics."""
    _magics.load_ipython_extension(ip)
