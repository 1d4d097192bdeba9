"""Real ``sshd`` servers inside network-namespace hosts (``tests/support/netns.py``), for tests.

Each ``SSHD`` runs ``/usr/sbin/sshd -D -e -f <config>`` inside one ``Host`` (started with
``Host.popen``, so ``Hosts`` tracks it too), listening on ``host.ip`` port 22, with a
fresh host key and its own config, PID file and ``AuthorizedKeysFile`` in a temporary
directory. Nothing in /etc/ssh or ~/.ssh is read or written (except that the
privilege-separation directory /run/sshd is created if missing, as sshd requires).

``SSHKeys`` is the client side: one throw-away ed25519 key pair (whose public half is
what every ``SSHD`` using it authorizes), a ``known_hosts`` file (pre-filled with each
server's host key), ``options()`` (the ``ssh`` arguments a caller needs), and an ssh
config file naming each host by a short alias (``hosta``, ``hostb``...) for
``ssh -F keys.config_path hosta``.

Clients must run inside a namespace (``Host.run``/``Host.popen``): the root namespace
has no route to the hosts.

>>> with Hosts(2) as (a, b), ssh_servers([a, b]) as keys:               # doctest: +SKIP
...     a.run(["ssh", *keys.options(), f"root@{b.ip}", "hostname", "-I"]).stdout   # '10.213.0.2 \\n'
...     a.run(["ssh", "-F", keys.config_path, "hostb", "hostname", "-I"]).stdout

Needs root, ``sshd``, ``ssh``, ``ssh-keygen`` (Debian: openssh-server, openssh-client)
and network namespaces; ``sshd_available()`` says why not otherwise.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import psutil

from .netns import Host, alive, netns_available, wait_gone

__all__ = ["sshd_available", "SSHKeys", "SSHD", "ssh_servers", "SSHDError", "SSHD_BINARY"]

SSHD_BINARY = "/usr/sbin/sshd"
_SKIP_HINT = "needs root, network namespaces and OpenSSH (sh tests/support/system_deps.sh as root installs it)"


class SSHDError(RuntimeError):
    """An sshd could not start or stop (the message has its log)."""


def _which(name: str) -> str | None:
    return shutil.which(name) or next((os.path.join(d, name) for d in ("/usr/sbin", "/usr/bin", "/sbin", "/bin")
                                       if os.access(os.path.join(d, name), os.X_OK)), None)


def _root_locked() -> bool:
    """Whether root's password field is locked ("!..."): sshd without PAM then refuses
    every login, keys included."""
    try:
        with open("/etc/shadow") as f:
            for line in f:
                parts = line.split(":")
                if parts[0] == "root":
                    return parts[1].startswith("!")
    except OSError:
        pass
    return False


def sshd_available() -> str | None:
    """None when ``SSHD`` can run here, else why not (a skip message)."""
    if not sys.platform.startswith("linux"):
        return f"{_SKIP_HINT} (this is {sys.platform})"
    if os.geteuid() != 0:
        return f"{_SKIP_HINT} (running as uid {os.geteuid()})"
    if not os.access(SSHD_BINARY, os.X_OK):
        return f"{_SKIP_HINT} (no {SSHD_BINARY})"
    missing = [b for b in ("ssh", "ssh-keygen") if _which(b) is None]
    if missing:
        return f"{_SKIP_HINT} (missing: {', '.join(missing)})"
    if _root_locked():
        return f"{_SKIP_HINT} (root's account is locked in /etc/shadow: sshd with UsePAM no refuses it)"
    reason = netns_available()
    if reason:
        return reason
    return None


def _keygen(path: str, comment: str) -> None:
    r = subprocess.run([_which("ssh-keygen"), "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", path],
                       capture_output=True, text=True, stdin=subprocess.DEVNULL)
    if r.returncode != 0:
        raise SSHDError(f"ssh-keygen -f {path}: exit {r.returncode}: {r.stderr.strip()}")


def _read(path: str) -> str:
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except OSError:
        return ""


class SSHKeys:
    """The client side, in ``directory`` (created if missing, 0700).

    ``key`` (private key file), ``public_key`` (its text), ``authorized_keys`` (the file
    every SSHD using these keys points ``AuthorizedKeysFile`` at), ``known_hosts``,
    ``config_path`` (an ssh config with one ``Host <alias>`` entry per server: HostName,
    User root, IdentityFile and the options below), ``aliases`` (alias -> IP).
    """

    def __init__(self, directory: str):
        os.makedirs(directory, mode=0o700, exist_ok=True)
        self.dir = directory
        self.key = os.path.join(directory, "id_ed25519")
        if not os.path.exists(self.key):
            _keygen(self.key, "xsched-tests-client")
        self.public_key = _read(self.key + ".pub").strip()
        self.authorized_keys = os.path.join(directory, "authorized_keys")
        with open(self.authorized_keys, "w") as f:
            f.write(self.public_key + "\n")
        os.chmod(self.authorized_keys, 0o600)
        self.known_hosts = os.path.join(directory, "known_hosts")
        open(self.known_hosts, "a").close()
        self.config_path = os.path.join(directory, "ssh_config")
        self.aliases: dict[str, str] = {}
        self._write_config()

    def options(self, strict: bool = False) -> list[str]:
        """``ssh`` arguments for a non-interactive login with this key: ``ssh *options()
        root@IP cmd``. ``strict=True`` checks host keys against ``known_hosts`` (which each
        SSHD fills in) instead of accepting any."""
        return ["-i", self.key, "-o", "IdentitiesOnly=yes",
                "-o", f"StrictHostKeyChecking={'yes' if strict else 'no'}",
                "-o", f"UserKnownHostsFile={self.known_hosts}", "-o", "GlobalKnownHostsFile=/dev/null",
                "-o", "BatchMode=yes", "-o", "ConnectTimeout=5", "-o", "LogLevel=ERROR"]

    def argv(self, target: str, *command: str, strict: bool = False) -> list[str]:
        """``["ssh", *options(), target, *command]`` (target: ``root@IP`` or ``IP``)."""
        return ["ssh", *self.options(strict), target, *command]

    def add_host(self, alias: str, ip: str, host_public_key: str | None = None) -> None:
        """Name ``ip`` ``alias`` in the config file (and trust its host key, if given)."""
        self.aliases[alias] = ip
        if host_public_key:
            with open(self.known_hosts, "a") as f:
                f.write(f"{alias},{ip} {' '.join(host_public_key.split()[:2])}\n")
        self._write_config()

    def _write_config(self) -> None:
        lines = ["# written by tests/support/sshd.py: use with ssh -F <this file>"]
        for alias, ip in self.aliases.items():
            lines += [f"Host {alias}", f"    HostName {ip}", "    User root", f"    IdentityFile {self.key}",
                      "    IdentitiesOnly yes", "    StrictHostKeyChecking no",
                      f"    UserKnownHostsFile {self.known_hosts}", "    GlobalKnownHostsFile /dev/null",
                      "    BatchMode yes", "    ConnectTimeout 5", "    LogLevel ERROR", ""]
        tmp = self.config_path + ".tmp"
        with open(tmp, "w") as f:
            f.write("\n".join(lines) + "\n")
        os.chmod(tmp, 0o600)  # ssh refuses a config others can write
        os.replace(tmp, self.config_path)


class SSHD:
    """An sshd on ``host.ip:port`` inside ``host``'s namespace, accepting ``keys``; a
    context manager (also ``start()``/``stop()``).

    ``alias`` (default ``host<label>``: hosta, hostb...) is added to ``keys``' config
    file. ``dir`` holds its config (``config_path``), host key, PID file and log
    (``log()``: sshd's stderr, ``-e``). ``proc``/``pid`` once started; ``pids`` every
    process seen belonging to it (the daemon and per-connection children).
    """

    def __init__(self, host: Host, keys: SSHKeys, *, port: int = 22, alias: str | None = None,
                 directory: str | None = None, start_timeout: float = 20.0, grace: float = 5.0,
                 extra_config: str = ""):
        self.host = host
        self.keys = keys
        self.port = port
        self.alias = alias or f"host{host.label}"
        self._own_dir = directory is None
        self.dir = directory or tempfile.mkdtemp(prefix=f"sshd-{host.label}-", dir=host.hosts.tmpdir())
        self.start_timeout = start_timeout
        self.grace = grace
        self.extra_config = extra_config
        self.config_path = os.path.join(self.dir, "sshd_config")
        self.host_key = os.path.join(self.dir, "ssh_host_ed25519_key")
        self.pid_file = os.path.join(self.dir, "sshd.pid")
        self.log_path = os.path.join(self.dir, "sshd.log")
        self.proc: subprocess.Popen | None = None
        self.pids: list[int] = []
        self._seen: dict[int, psutil.Process] = {}

    def __repr__(self) -> str:
        return f"SSHD({self.alias!r}, {self.host.ip}:{self.port}, pid={self.pid})"

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    def __enter__(self) -> "SSHD":
        return self.start()

    def __exit__(self, exc_type, exc, tb) -> None:
        self.stop(raise_leftovers=exc_type is None)

    def config(self) -> str:
        return f"""# written by tests/support/sshd.py
ListenAddress {self.host.ip}
Port {self.port}
HostKey {self.host_key}
PidFile {self.pid_file}
AuthorizedKeysFile {self.keys.authorized_keys}
PermitRootLogin prohibit-password
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
# the key files live under /tmp (world-writable): StrictModes would refuse them
StrictModes no
UseDNS no
PrintMotd no
PrintLastLog no
X11Forwarding no
AllowTcpForwarding yes
# many simultaneous logins (one per worker host, started at once) must not be dropped
MaxStartups 100:30:200
MaxSessions 100
LogLevel VERBOSE
Subsystem sftp internal-sftp
{self.extra_config}
"""

    def start(self) -> "SSHD":
        if self.proc is not None:
            return self
        reason = sshd_available()
        if reason:
            raise SSHDError(reason)
        os.makedirs("/run/sshd", mode=0o755, exist_ok=True)  # privilege separation directory
        if not os.path.exists(self.host_key):
            _keygen(self.host_key, f"xsched-tests-host-{self.host.label}")
        with open(self.config_path, "w") as f:
            f.write(self.config())
        check = subprocess.run([SSHD_BINARY, "-t", "-f", self.config_path], capture_output=True, text=True)
        if check.returncode != 0:
            raise SSHDError(f"sshd -t -f {self.config_path}: {check.stderr.strip()}")
        with open(self.log_path, "ab") as log:
            # sshd wants an absolute path (it re-executes itself for every connection)
            self.proc = self.host.popen([SSHD_BINARY, "-D", "-e", "-f", self.config_path],
                                        stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
        self.pids.append(self.proc.pid)
        ready = f"Server listening on {self.host.ip} port {self.port}"
        deadline = time.monotonic() + self.start_timeout
        try:
            while ready not in self.log():
                if self.proc.poll() is not None:
                    raise SSHDError(f"sshd on {self.host.name} exited with {self.proc.returncode}:\n{self.log()}")
                if time.monotonic() > deadline:
                    raise SSHDError(f"sshd on {self.host.name} not listening after {self.start_timeout}s:\n"
                                    f"{self.log()}")
                time.sleep(0.01)
        except BaseException:
            self.stop(raise_leftovers=False)
            raise
        self.keys.add_host(self.alias, self.host.ip, _read(self.host_key + ".pub"))
        return self

    def log(self) -> str:
        return _read(self.log_path)

    def processes(self) -> list[psutil.Process]:
        """The live sshd and its descendants (per-connection sshd, sessions, commands)."""
        if self.proc is None or self.proc.poll() is not None:
            return []
        try:
            root = psutil.Process(self.proc.pid)
            procs = [root, *root.children(recursive=True)]
        except psutil.Error:
            return []
        for p in procs:
            if p.pid not in self._seen:
                self._seen[p.pid] = p
                self.pids.append(p.pid)
        return procs

    def stop(self, raise_leftovers: bool = True) -> None:
        """SIGTERM sshd and every process under it, SIGKILL after ``grace`` s, wait.
        Idempotent. Raises SSHDError if something survives."""
        proc = self.proc
        if proc is None:
            return
        self.processes()
        tracked = [p for p in self._seen.values() if p.pid != proc.pid]
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)  # its own session (Host.popen): the group leader lives
        for p in tracked:
            with contextlib.suppress(psutil.Error):
                p.terminate()
        try:
            proc.wait(self.grace)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)
        still = wait_gone(tracked, self.grace)
        for p in still:
            with contextlib.suppress(psutil.Error):
                p.kill()
        still = wait_gone(still, 10)
        if self._own_dir:
            shutil.rmtree(self.dir, ignore_errors=True)
        if still:
            msg = f"sshd {self.alias}: processes survived SIGKILL: {[p.pid for p in still]}"
            if raise_leftovers:
                raise SSHDError(msg)
            print(msg, file=sys.stderr)


@contextlib.contextmanager
def ssh_servers(hosts, directory: str | None = None, **kw):
    """Start an ``SSHD`` on each of ``hosts`` (sharing one ``SSHKeys``, in ``directory`` or
    a fresh one in the hosts' temp dir); yields the ``SSHKeys`` (``.servers`` lists the
    SSHDs). Every sshd is stopped on exit (and its processes checked gone)."""
    hosts = list(hosts)
    if not hosts:
        raise ValueError("no hosts")
    keys = SSHKeys(directory or tempfile.mkdtemp(prefix="ssh-client-", dir=hosts[0].hosts.tmpdir()))
    keys.servers = []  # type: ignore[attr-defined]
    with contextlib.ExitStack() as stack:
        for host in hosts:
            keys.servers.append(stack.enter_context(SSHD(host, keys, **kw)))  # type: ignore[attr-defined]
        yield keys
