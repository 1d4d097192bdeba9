"""SSHCluster: the scheduler on the first host, workers on the others, over the system ``ssh``.

The system ``ssh`` program is used on purpose: ``~/.ssh/config`` aliases, ProxyJump, agents
and Kerberos all work as they do in a terminal. Each host gets one connection, running
``xsched scheduler`` or ``xsched worker --nworkers N`` (a nanny) there:

    SSHCluster --ssh host0--> xsched scheduler --secret-stdin   (stdout: its address)
               --ssh hostK--> xsched worker ADDRESS --secret-stdin --nworkers N
    stdin of each connection: the cluster secret (one line), then held open;
    closing it (or losing the connection) stops the remote side gracefully.

The secret never appears on a command line (``ps`` on the remote host) nor in a file
there: it travels over the encrypted ssh channel on stdin.

>>> from xsched.deploy import SSHCluster
>>> cluster = SSHCluster(["login1", "node1", "node2"], ssh_options=["-i", "~/.ssh/id_ed25519"],
...                      remote_python="/opt/venv/bin/python",
...                      worker_options={"nthreads": 4, "nworkers": 2})   # doctest: +SKIP
"""

from __future__ import annotations

import logging
import os
import select
import shlex
import subprocess
import time

from ..protocol import registry
from ..protocol.addressing import normalize
from ..protocol.security import Security
from ..units import parse_memory_limit
from .spec import FINISHED, RUNNING, Launcher, SpecCluster

logger = logging.getLogger("xsched.deploy.ssh")

__all__ = ["SSHCluster", "SSHProcess"]


class SSHProcess(Launcher):
    """One ``ssh host -- python -m xsched.cli ...`` connection, fed the secret on stdin."""

    kind = "ssh"

    def __init__(self, name: str, host: str, remote_argv: list[str], secret: str, ssh: str = "ssh",
                 ssh_options=(), nworkers: int = 1, log_path: str | None = None):
        super().__init__(name, nworkers)
        self.host = host
        self.remote_argv = list(remote_argv)
        self.argv = [ssh, *map(os.path.expanduser, ssh_options), "-o", "BatchMode=yes", host, "--",
                     shlex.join(self.remote_argv)]
        self._secret = secret
        self.log_path = log_path
        self.proc: subprocess.Popen | None = None

    def __repr__(self) -> str:
        return f"<SSHProcess {self.host!r} workers={self.nworkers} status={self.status()}>"

    def start(self) -> None:
        log = open(self.log_path, "ab") if self.log_path else subprocess.DEVNULL
        try:
            self.proc = subprocess.Popen(self.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=log, start_new_session=True)
        finally:
            if self.log_path:
                log.close()
        self.proc.stdin.write(self._secret.encode() + b"\n")
        self.proc.stdin.flush()

    def read_line(self, timeout: float) -> str:
        """The next line the remote command prints (the scheduler prints its address first)."""
        deadline = time.monotonic() + timeout
        buf = b""
        while time.monotonic() < deadline:
            ready, _, _ = select.select([self.proc.stdout], [], [], 0.1)
            if ready:
                chunk = os.read(self.proc.stdout.fileno(), 4096)
                if not chunk:
                    break
                buf += chunk
                if b"\n" in buf:
                    return buf.split(b"\n", 1)[0].decode(errors="replace")
            elif self.proc.poll() is not None:
                break
        raise RuntimeError(f"`{shlex.join(self.argv)}` printed no line within {timeout:.0f}s "
                           f"(exit code {self.proc.poll()}){self._log_tail()}")

    def _log_tail(self) -> str:
        if not self.log_path or not os.path.exists(self.log_path):
            return ""
        with open(self.log_path, "rb") as f:
            return "; its output ends with:\n" + f.read()[-2000:].decode(errors="replace")

    def status(self) -> str:
        return RUNNING if self.proc is not None and self.proc.poll() is None else FINISHED

    def terminate(self) -> None:
        if self.proc is not None and self.proc.stdin is not None and not self.proc.stdin.closed:
            try:
                self.proc.stdin.close()  # EOF: the remote side stops gracefully
            except OSError:
                pass

    def stop(self, timeout: float = 10) -> None:
        if self.proc is None:
            return
        self.terminate()
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.terminate()  # the ssh client; sshd then closes the remote session
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        if self.proc.stdout is not None:
            self.proc.stdout.close()


class SSHCluster(SpecCluster):
    """The scheduler on ``hosts[0]``, one worker group (``nworkers`` processes) on each later host.

    ``worker_options``: ``nthreads``, ``nworkers``, ``memory_limit``, ``resources``,
    ``interface``; ``scheduler_options``: ``port``, ``interface``, ``dashboard_address``
    (``":8787"`` unless given; None: no dashboard page). ``remote_python`` is the
    interpreter on the hosts (default: ``python3``).

    >>> cluster = SSHCluster(["login1", "node1"], worker_options={"nthreads": 4})   # doctest: +SKIP
    """

    kind = "SSHCluster"

    def __init__(self, hosts: list[str], *, ssh_options=(), remote_python: str = "python3", worker_options=None,
                 scheduler_options=None, ssh: str = "ssh", timeout: float = 60, log_directory: str | None = None,
                 security: str = "auto"):
        if len(hosts) < 2:
            raise ValueError("SSHCluster needs at least two hosts: the scheduler's, then one per worker group "
                             "(the same host may appear twice)")
        wo = dict(worker_options or {})
        unknown = set(wo) - {"nthreads", "nworkers", "memory_limit", "resources", "interface", "local_directory"}
        if unknown:
            raise ValueError(f"unknown worker_options {sorted(unknown)}; known: nthreads, nworkers, memory_limit, "
                             "resources, interface, local_directory")
        so = dict(scheduler_options or {})
        known = {"port", "interface", "dashboard_address"}
        if set(so) - known:
            raise ValueError(f"unknown scheduler_options {sorted(set(so) - known)}; known: port, interface, "
                             "dashboard_address")
        nworkers = int(wo.get("nworkers", 1))
        nthreads = int(wo.get("nthreads", 1))
        limit = wo.get("memory_limit")
        super().__init__(workers_per_group=nworkers, threads_per_worker=nthreads,
                         memory_limit=parse_memory_limit(limit, nworkers=nworkers) if limit not in (None, "auto") else None,
                         timeout=timeout)
        self.hosts = list(hosts)
        # "/opt/venv/bin/python", or a command such as "env VAR=1 /opt/venv/bin/python"
        self.remote_python = shlex.split(remote_python) if isinstance(remote_python, str) else list(remote_python)
        self.ssh, self.ssh_options = ssh, list(ssh_options)
        self.worker_options, self.scheduler_options = wo, so
        self.security = Security.generate(security)
        import tempfile

        self._own_log_directory = log_directory is None  # ours to remove on close
        self.log_directory = log_directory or tempfile.mkdtemp(prefix="xsched-ssh-")
        self._scheduler: SSHProcess | None = None
        self._start(len(self.hosts) - 1)

    def _group_name(self, index: int) -> str:
        return f"{self.hosts[1:][index % (len(self.hosts) - 1)]}-{index}"

    def _where_logs_are(self) -> str:
        return f"the ssh sessions' output is in {self.log_directory}"

    def _describe(self) -> str:
        return f"scheduler on {self.hosts[0]}, workers on {', '.join(self.hosts[1:])}; {super()._describe()}"

    def _start_scheduler(self) -> None:
        argv = [*self.remote_python, "-m", "xsched.cli", "scheduler", "--secret-stdin",
                "--port", str(self.scheduler_options.get("port", 0)), "--security", self.security.mode]
        if self.scheduler_options.get("interface"):
            argv += ["--interface", self.scheduler_options["interface"]]
        if "dashboard_address" in self.scheduler_options:
            argv += ["--dashboard-address", str(self.scheduler_options["dashboard_address"])]
        self._scheduler = SSHProcess("scheduler", self.hosts[0], argv, self.security.secret, self.ssh,
                                     self.ssh_options, 0, os.path.join(self.log_directory, "scheduler.log"))
        self._scheduler.start()
        line = self._scheduler.read_line(self.timeout)
        if not line.startswith("xsched scheduler at "):
            raise RuntimeError(f"the scheduler on {self.hosts[0]} said {line!r} instead of its address"
                               f"{self._scheduler._log_tail()}")
        self.scheduler_address = normalize(line.split()[-1])
        # Client("host:port") from any process of ours finds the secret, shared home or not
        self._entry = registry.register(self.scheduler_address, self.security,
                                        f"ssh-{os.getpid()}-{id(self):x}", remote=True)

    def _stop_scheduler(self, timeout: float) -> None:
        registry.unregister(getattr(self, "_entry", None))
        if self._scheduler is not None:
            self._scheduler.stop(timeout)
            self._scheduler = None
        if self._own_log_directory:
            import shutil

            shutil.rmtree(self.log_directory, ignore_errors=True)

    def _new_group(self, name: str) -> SSHProcess:
        host = name.rsplit("-", 1)[0]
        wo = self.worker_options
        argv = [*self.remote_python, "-m", "xsched.cli", "worker", self.scheduler_address, "--secret-stdin",
                "--nworkers", str(self.workers_per_group), "--nthreads", str(self.threads_per_worker),
                "--name", name]
        if self.memory_limit:
            argv += ["--memory-limit", str(self.memory_limit)]
        if wo.get("resources"):
            res = wo["resources"]
            argv += ["--resources", res if isinstance(res, str) else ",".join(f"{k}={v}" for k, v in res.items())]
        if wo.get("interface"):
            argv += ["--interface", wo["interface"]]
        if wo.get("local_directory"):
            argv += ["--local-directory", wo["local_directory"]]
        return SSHProcess(name, host, argv, self.security.secret, self.ssh, self.ssh_options,
                          self.workers_per_group, os.path.join(self.log_directory, f"{name}.log"))
