"""Attach kernels that already run inside a scheduler or worker to the Jupyter server.

JupyterLab's consoles talk to kernels of the server's kernel manager (``/api/kernels``,
``/api/kernels/<id>/channels``). The kernels of ``start_ipython_scheduler`` /
``start_ipython_workers`` run in threads of xsched processes, so the server must be told
about a kernel it did not start. How (jupyter_server 2, jupyter_client 8)::

    POST /xsched/api/clusters/<id>/kernels {"target": "scheduler" | worker address}
      -> client.start_ipython_*()  (on demand; the kernel keeps running in that process)
      -> attach_kernel(kernel_manager, info):
           the server's MappingKernelManager.start_kernel(kernel_id=new id) builds its kernel
           managers through ``kernel_manager_factory``; our wrapper of that factory returns an
           ``AttachedKernelManager`` for ids we announced, whose provisioner (``AttachProvisioner``)
           "launches" nothing and hands back the existing connection info. The manager writes
           that info to kernel-<id>.json in the server's runtime dir (0600) and every usual
           part works: /api/kernels lists it, the websocket bridges its channels, activity
           and culling are tracked, sessions can use it.
      <- {"id": kernel id, ...}; the lab opens ``console:create {kernelPreference: {id}}``

Behaviour that differs from a kernel the server started (on purpose):

* shutting the console's kernel down only *detaches* (the socket closes, the kernel keeps
  running in the worker, no shutdown_request is sent) - the worker must not lose it;
* restart is refused (the process is not ours to restart); interrupt is an
  ``interrupt_request`` message (the embedded kernel interrupts its cell thread on it);
* the kernel counts as dead once its process is gone (same host: by pid).

The kernel's ports must be reachable from the Jupyter server (``jupyter.kernel-ip``
of the worker's config, 127.0.0.1 by default: same machine).
"""

from __future__ import annotations

import os
import uuid
from typing import Any

from jupyter_client.provisioning import KernelProvisionerBase
from jupyter_server.services.kernels.kernelmanager import ServerKernelManager

__all__ = ["AttachedKernelManager", "AttachProvisioner", "attach_kernel", "install_factory"]

_CONNECTION_KEYS = ("shell_port", "iopub_port", "stdin_port", "control_port", "hb_port", "ip", "key",
                    "transport", "signature_scheme")


class AttachProvisioner(KernelProvisionerBase):
    """A provisioner for a kernel that already runs in another process."""

    def __init__(self, info: dict, **kwargs):
        super().__init__(**kwargs)
        self.info = {k: info[k] for k in _CONNECTION_KEYS if k in info}
        self.pid = info.get("pid")
        self.same_host = info.get("ip", "127.0.0.1") in ("127.0.0.1", "localhost", "::1")
        self._attached = False

    @property
    def has_process(self) -> bool:
        return self._attached

    async def poll(self) -> int | None:
        if not self._attached:
            return 0
        if self.pid and self.same_host:
            import psutil

            if not psutil.pid_exists(self.pid):
                return 1
        return None

    async def wait(self) -> int | None:
        return await self.poll()

    async def send_signal(self, signum: int) -> None:
        return None  # never signal a scheduler or worker process

    async def kill(self, restart: bool = False) -> None:
        self._attached = False

    async def terminate(self, restart: bool = False) -> None:
        self._attached = False

    async def pre_launch(self, **kwargs: Any) -> dict:
        kwargs["cmd"] = []
        return kwargs

    async def launch_kernel(self, cmd: list, **kwargs: Any) -> dict:
        self._attached = True
        info = dict(self.info)
        if isinstance(info.get("key"), str):
            info["key"] = info["key"].encode()
        self.connection_info = info
        return info

    async def cleanup(self, restart: bool = False) -> None:
        self._attached = False

    def get_shutdown_wait_time(self, recommended: float = 5.0) -> float:
        return 0.0


class AttachedKernelManager(ServerKernelManager):
    """A kernel manager for a kernel running inside an xsched scheduler or worker."""

    autorestart = False

    def __init__(self, *args, xsched_info: dict, xsched_target: str = "", **kwargs):
        super().__init__(*args, **kwargs)
        self.xsched_info = xsched_info
        self.xsched_target = xsched_target

    async def _async_pre_start_kernel(self, **kw: Any):
        self.shutting_down = False
        self.kernel_id = self.kernel_id or kw.pop("kernel_id", str(uuid.uuid4()))
        kw.pop("kernel_id", None)
        self._launch_args = {}
        self.provisioner = AttachProvisioner(self.xsched_info, kernel_id=self.kernel_id,
                                             kernel_spec=self.kernel_spec, parent=self)
        kw = await self.provisioner.pre_launch(**kw)
        return kw.pop("cmd"), {}

    async def shutdown_kernel(self, now: bool = False, restart: bool = False) -> None:
        """Detach: close our sockets, keep the kernel running in its process."""
        self.shutting_down = True
        self.stop_restarter()
        await self._async_cleanup_resources(restart=False)

    async def restart_kernel(self, now: bool = False, newports: bool = False, **kw: Any) -> None:
        raise RuntimeError("an xsched scheduler/worker kernel cannot be restarted from JupyterLab: "
                           "restart the worker (client.restart()) instead")

    async def interrupt_kernel(self) -> None:
        msg = self.session.msg("interrupt_request", content={})
        self._connect_control_socket()
        self.session.send(self._control_socket, msg)


def install_factory(kernel_manager) -> dict:
    """Wrap the server's kernel manager factory once; returns the pending-attach table."""
    pending = getattr(kernel_manager, "_xsched_pending_attach", None)
    if pending is not None:
        return pending
    pending = {}
    original = kernel_manager.kernel_manager_factory

    def factory(*args, **kwargs):
        name = os.path.basename(kwargs.get("connection_file", ""))
        kernel_id = name[len("kernel-"):-len(".json")] if name.startswith("kernel-") else None
        if kernel_id in pending:
            info, target = pending.pop(kernel_id)
            return AttachedKernelManager(*args, xsched_info=info, xsched_target=target, **kwargs)
        return original(*args, **kwargs)

    kernel_manager.kernel_manager_factory = factory
    kernel_manager._xsched_pending_attach = pending
    return pending


async def attach_kernel(kernel_manager, info: dict, target: str, existing: str | None = None) -> str:
    """Register the running kernel ``info`` with the server; returns its Jupyter kernel id.

    ``existing``: the id a previous attach returned; reused while that kernel is still known.
    """
    if existing is not None and existing in kernel_manager:
        km = kernel_manager.get_kernel(existing)
        same = getattr(km, "xsched_info", {}).get("shell_port") == info.get("shell_port")
        if same and await km.is_alive():
            return existing
    pending = install_factory(kernel_manager)
    kernel_id = str(uuid.uuid4())
    pending[kernel_id] = (info, target)
    try:
        await kernel_manager.start_kernel(kernel_id=kernel_id, kernel_name=kernel_manager.default_kernel_name)
    finally:
        pending.pop(kernel_id, None)
    return kernel_id
