"""Functions a lower layer calls and a higher layer provides, so imports run downward only.

Layers import downward (``tests/unit/test_layers.py`` checks it): the client imports
nothing from ``deploy/`` or ``jupyter/``, and ``Future`` nothing from the client module.
Where a lower layer still needs something from above, the higher layer registers it
here when it is imported, and the lower one calls the hook::

    hook                provided by              called by
    get_client          xsched.client.client     Future() without a client, unpickled Futures
    new_cluster         xsched.deploy.local      Client() without an address
    client_html         xsched.jupyter.display   Client._repr_html_
    cluster_html        xsched.jupyter.display   LocalCluster._repr_html_
    ipython_display     xsched.jupyter.widgets   Client and SpecCluster ._ipython_display_
    plot_memory         xsched.jupyter.plots     Client.plot_memory
    task_stream         xsched.jupyter.plots     Client.task_stream
    task_stream_figure  xsched.dashboard         get_task_stream(plot=...), client's and context's
    profile_figure      xsched.dashboard         client.profile(plot=..., filename=...)
    scheduler_kernel    xsched.jupyter.magics    Client.start_ipython_scheduler
    worker_kernels      xsched.jupyter.magics    Client.start_ipython_workers
    dashboard_server    xsched.dashboard         Scheduler.start, given a dashboard address

A hook not yet provided imports its provider when first called, so that no process loads
a layer it never uses (a worker process never imports the notebook display or the
clusters; ``import xsched`` imports nothing of them until a name is used).

>>> from xsched import hooks
>>> hooks.new_cluster.provider
'xsched.deploy.local'
"""

from __future__ import annotations

import importlib
from typing import Any, Callable

__all__ = ["Hook", "get_client", "new_cluster", "client_html", "cluster_html", "ipython_display", "plot_memory",
           "task_stream", "task_stream_figure", "profile_figure", "scheduler_kernel", "worker_kernels",
           "dashboard_server"]


class Hook:
    """One late-bound function: ``hook(...)`` calls what ``hook.register`` was given.

    >>> h = Hook("double", "a test")
    >>> _ = h.register(lambda x: 2 * x)
    >>> h(21)
    42
    """

    __slots__ = ("name", "provider", "func")

    def __init__(self, name: str, provider: str):
        self.name = name
        self.provider = provider
        self.func: Callable | None = None

    def register(self, func: Callable) -> Callable:
        """Provide the function (the last registration wins); returns it, so it can decorate."""
        self.func = func
        return func

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        func = self.func
        if func is None:
            importlib.import_module(self.provider)  # (registers it)
            func = self.func
        if func is None:
            raise RuntimeError(f"xsched.hooks.{self.name} is not set: importing {self.provider} did not "
                               "register it")
        return func(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<Hook {self.name} from {self.provider}: {'set' if self.func is not None else 'not set'}>"


get_client = Hook("get_client", "xsched.client.client")
new_cluster = Hook("new_cluster", "xsched.deploy.local")
client_html = Hook("client_html", "xsched.jupyter.display")
cluster_html = Hook("cluster_html", "xsched.jupyter.display")
ipython_display = Hook("ipython_display", "xsched.jupyter.widgets")
plot_memory = Hook("plot_memory", "xsched.jupyter.plots")
task_stream = Hook("task_stream", "xsched.jupyter.plots")
task_stream_figure = Hook("task_stream_figure", "xsched.dashboard")
profile_figure = Hook("profile_figure", "xsched.dashboard")
scheduler_kernel = Hook("scheduler_kernel", "xsched.jupyter.magics")
worker_kernels = Hook("worker_kernels", "xsched.jupyter.magics")
dashboard_server = Hook("dashboard_server", "xsched.dashboard")
