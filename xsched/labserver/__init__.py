"""The Jupyter server side of the xsched JupyterLab panel (``extensions/jupyterlab``).

``pip install`` registers it (``etc/jupyter/jupyter_server_config.d/xsched.json``); it adds
the handlers of :mod:`xsched.labserver.handlers` under ``/xsched/api/``. Importing this
package needs neither jupyter_server nor jupyterlab: they are imported when the server
loads the extension, so ``import xsched`` works without them.
"""

from __future__ import annotations

import atexit

from .clusters import ClusterMonitor

__all__ = ["_jupyter_server_extension_points", "_load_jupyter_server_extension", "_jupyter_labextension_paths"]


def _jupyter_server_extension_points():
    return [{"module": "xsched.labserver"}]


def _jupyter_labextension_paths():
    """Where the built front end lives (``jupyter labextension develop`` and tools use this)."""
    return [{"src": "../labextension", "dest": "xsched-labextension"}]


def _load_jupyter_server_extension(serverapp):
    from .handlers import setup_handlers  # needs jupyter_server and tornado: imported when the server loads us

    monitor = ClusterMonitor()
    setup_handlers(serverapp.web_app, monitor)
    atexit.register(monitor.close)
    serverapp.log.info("xsched: cluster panel API at %sxsched/api/", serverapp.base_url)


# jupyter_server < 2 name
load_jupyter_server_extension = _load_jupyter_server_extension
