"""Launchers for this machine: a worker process (its own nanny), or a worker in this process.

Both are :class:`~xsched.deploy.spec.Launcher` s, so LocalCluster scales, closes and
displays exactly like the SSH and batch clusters built on the same core.
"""

from __future__ import annotations

from ..client import loop as _loop
from .process import spawn, stop_process
from .spec import FINISHED, RUNNING, Launcher

__all__ = ["LocalProcess", "InProcessWorker"]


class LocalProcess(Launcher):
    """``python -m xsched.cli <args>`` as a child that closes itself if we die.

    >>> LocalProcess("0", ["worker", "--scheduler-file", "s.json"]).start()   # doctest: +SKIP
    """

    kind = "process"

    def __init__(self, name: str, args: list[str], log_path: str | None = None, nworkers: int = 1):
        super().__init__(name, nworkers)
        self.args = list(args)
        self.log_path = log_path
        self.proc = None

    def start(self) -> None:
        self.proc = spawn(self.args, log_path=self.log_path)

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None else None

    def poll(self) -> int | None:
        """The exit code, or None while it runs (as ``subprocess.Popen.poll``)."""
        return self.proc.poll() if self.proc is not None else None

    def status(self) -> str:
        return RUNNING if self.proc is not None and self.proc.poll() is None else FINISHED

    def terminate(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            try:
                self.proc.terminate()
            except ProcessLookupError:
                pass

    def stop(self, timeout: float = 10) -> None:
        if self.proc is not None:
            stop_process(self.proc, timeout)


class InProcessWorker(Launcher):
    """A Worker running on the client's background loop in this process (``processes=False``)."""

    kind = "in-process worker"

    def __init__(self, name: str, make_worker, timeout: float = 30):
        super().__init__(name, 1)
        self._make = make_worker
        self.timeout = timeout
        self.worker = None
        self._closed = False

    def start(self) -> None:
        async def go():
            return await self._make(self.name).start()

        self.worker = _loop.sync(go(), self.timeout)

    def status(self) -> str:
        if self._closed or self.worker is None or self.worker.status in ("closing", "closed"):
            return FINISHED
        return RUNNING

    def stop(self, timeout: float = 10) -> None:
        if self.worker is not None and not self._closed:
            self._closed = True
            try:
                _loop.sync(self.worker.close(), timeout)
            except Exception:
                pass
