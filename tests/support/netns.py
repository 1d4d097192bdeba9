"""Several "hosts" on one machine, made of Linux network namespaces (tests and benchmarks).

Why: xsched behaves differently between hosts than on loopback (the bulk side channel
encrypts for any non-loopback address, workers serve data on the interface facing the
scheduler, the registry matches host addresses rather than localhost), and a test that
binds 127.0.0.1 never exercises any of that. A network namespace has its own interfaces, addresses, routes and port space,
so a scheduler in namespace A and a client in namespace B talk over a real (virtual)
Ethernet link, whose frames we can capture to check what travels in clear.

Topology made by ``Hosts(n)``::

        hub namespace:   br0 (Linux bridge) -- port-a, port-b, ...   (veth ends)
                                                |   |
        host namespaces:                   eth0 (A)  eth0 (B) ...
                                        10.213.0.1  10.213.0.2 ...  (/24)

The bridge lives in a namespace of its own, so nothing at all is added to the root
namespace: the root namespace has no route to 10.213.0.0/24, and processes started
normally cannot reach the hosts (the tests check that). MTU and offloads stay at the
kernel defaults (veth does TSO/GSO, so captured frames may be larger than the MTU).

Cleanup is the point of most of this code. Every process started with ``Host.popen``
is tracked (PID, process group, its descendants), and on exit -- normal, exception,
Ctrl-C, or failure half-way through setup -- it is terminated, then killed, and waited
for; then anything else still inside our namespaces (found with ``ip netns pids``, never
by name) is killed; then every namespace is deleted and ``ip netns list`` is checked.
Namespace names carry the owning process's PID and start time
(``xsnet-<pid>-<starttime>-<serial>-<label>``), so ``cleanup_stale()`` (run by every
``Hosts`` before it creates anything) can remove what a crashed (SIGKILLed) earlier run
left behind, without touching namespaces of a run that is still alive.

Needs root and iproute2; ``netns_available()`` says why not otherwise (tests skip with
that message). Everything here is the standard library plus psutil.

>>> with Hosts(2) as (a, b):                                      # doctest: +SKIP
...     srv = a.popen([sys.executable, "-m", "http.server", "--bind", a.ip, "8000"])
...     print(b.run(["curl", "-s", f"http://{a.ip}:8000/"], timeout=10).stdout)
...     with capture(b) as cap:
...         b.run(["curl", "-s", f"http://{a.ip}:8000/"], timeout=10)
...     print(cap.count_frames(), b"HTTP/1.0 200" in cap.data())
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import threading
import time
import weakref

import psutil

__all__ = ["netns_available", "Hosts", "Host", "capture", "Capture", "cleanup_stale", "list_namespaces",
           "PREFIX", "SUBNET", "start_ticks", "owner_tag", "alive", "wait_gone"]

#: Every namespace we create starts with this (then ``-<pid>-<starttime>-...``).
PREFIX = "xsnet"
#: Hosts get SUBNET.1, SUBNET.2, ... (/24), inside their namespaces only.
SUBNET = "10.213.0"
#: The capture script (run inside a namespace by ``capture``).
CAPTURE_SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "capture.py")

_SKIP_HINT = "needs root and iproute2 (ip netns): run the tests as root on Linux"


def _ip_binary() -> str | None:
    return shutil.which("ip") or next((p for p in ("/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip")
                                       if os.access(p, os.X_OK)), None)


IP = _ip_binary() or "ip"


class NetnsError(RuntimeError):
    """An ``ip`` command failed (the message has its argv and stderr)."""


def _ip(*args: str, check: bool = True, timeout: float = 30) -> subprocess.CompletedProcess:
    """Run ``ip ARGS`` (short, synchronous); raise NetnsError with its stderr on failure."""
    r = subprocess.run([IP, *args], capture_output=True, text=True, timeout=timeout)
    if check and r.returncode != 0:
        raise NetnsError(f"{IP} {' '.join(args)}: exit {r.returncode}: {r.stderr.strip()}")
    return r


def _wait_for(predicate, timeout: float, what: str, interval: float = 0.01):
    """Poll ``predicate()`` until truthy (returned) or raise TimeoutError after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what} not within {timeout}s")
        time.sleep(interval)


# ---------------------------------------------------------------------- owners and names
def start_ticks(pid: int) -> int | None:
    """A process's start time in clock ticks since boot (/proc/PID/stat field 22), or None
    if there is no such process. Together with the PID it identifies a process for good:
    a PID can be reused, the pair cannot."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return None
    return int(stat[stat.rindex(b")") + 2:].split()[19])


def owner_tag() -> str:
    """``<pid>-<start ticks>`` of this process: names what it owns, so a crashed owner is known."""
    return f"{os.getpid()}-{start_ticks(os.getpid())}"


def alive(proc: psutil.Process) -> bool:
    """Running (a zombie counts as gone: it only waits for its parent, or init, to reap it)."""
    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def wait_gone(procs: list, timeout: float) -> list:
    """Poll until none of ``procs`` runs; returns those still running after ``timeout`` s.
    (Not psutil.wait_procs: for processes that are not our children it waits until the
    zombie is reaped, which init may take its time over.)"""
    deadline = time.monotonic() + timeout
    while True:
        live = [p for p in procs if alive(p)]
        if not live or time.monotonic() > deadline:
            return live
        time.sleep(0.01)


def list_namespaces() -> list[str]:
    """Names of all named network namespaces (``ip netns list``)."""
    r = _ip("netns", "list", check=False)
    return [line.split()[0] for line in r.stdout.splitlines() if line.strip()]


def _owner_alive(name: str) -> bool:
    """Whether the process that created namespace ``name`` is still running (unparseable
    names of our prefix count as alive: never delete what we cannot attribute)."""
    parts = name.split("-")
    try:
        pid, ticks = int(parts[1]), int(parts[2])
    except (IndexError, ValueError):
        return True
    return start_ticks(pid) == ticks


def _namespace_pids(name: str) -> list[int]:
    r = _ip("netns", "pids", name, check=False)
    return [int(x) for x in r.stdout.split() if x.isdigit()]


def _kill_namespace_processes(name: str, timeout: float = 10) -> list[int]:
    """SIGKILL every process inside namespace ``name`` and wait until they are gone.

    Only processes whose network namespace *is* ours are touched, found through
    ``ip netns pids`` (never by name); we created the namespace, so they are ours.
    Returns the PIDs it had to kill.
    """
    killed: list[int] = []
    deadline = time.monotonic() + timeout
    while True:
        pids = [p for p in _namespace_pids(name) if p != os.getpid()]
        live = []
        for pid in pids:
            try:
                proc = psutil.Process(pid)
                if proc.status() == psutil.STATUS_ZOMBIE:
                    continue
                proc.kill()
                killed.append(pid)
                live.append(pid)
            except psutil.NoSuchProcess:
                pass
        if not live:
            return killed
        if time.monotonic() > deadline:
            raise NetnsError(f"processes {live} in namespace {name} survived SIGKILL for {timeout}s")
        time.sleep(0.02)


def cleanup_stale(prefix: str = PREFIX) -> list[str]:
    """Delete namespaces named ``<prefix>-<pid>-<starttime>-...`` whose owner process is
    gone (a run that crashed or was SIGKILLed), after killing whatever still runs in them.
    Namespaces of live runs are left alone. Returns the names deleted."""
    removed = []
    for name in list_namespaces():
        if not name.startswith(prefix + "-") or _owner_alive(name):
            continue
        try:
            _kill_namespace_processes(name)
            _ip("netns", "delete", name)
            removed.append(name)
        except (NetnsError, subprocess.SubprocessError):
            if name in list_namespaces():  # another run's cleanup may have deleted it first
                raise
    return removed


_availability: str | None | bool = False  # False: not probed yet


def netns_available() -> str | None:
    """None when these tests can run here, else why they skip.

    Needs root and iproute2, and a kernel that allows network namespaces, veth pairs
    and bridges (some containers do not): probes by creating, then deleting, a throw-away
    namespace holding a bridge and a veth pair. The answer is cached for the process.
    """
    global _availability
    if _availability is not False:
        return _availability  # type: ignore[return-value]
    reason = None
    if not sys.platform.startswith("linux"):
        reason = f"{_SKIP_HINT} (this is {sys.platform})"
    elif os.geteuid() != 0:
        reason = f"{_SKIP_HINT} (running as uid {os.geteuid()})"
    elif _ip_binary() is None:
        reason = f"{_SKIP_HINT} (no `ip` command found)"
    else:
        name = f"{PREFIX}-{owner_tag()}-probe"
        try:
            cleanup_stale()
            _ip("netns", "add", name)
            try:
                _ip("-n", name, "link", "add", "probe-br", "type", "bridge")
                _ip("-n", name, "link", "add", "probe-v0", "type", "veth", "peer", "name", "probe-v1")
            finally:
                _ip("netns", "delete", name)
            if name in list_namespaces():
                reason = f"{_SKIP_HINT} (could not delete the probe namespace {name})"
        except (NetnsError, OSError, subprocess.SubprocessError) as e:
            reason = f"{_SKIP_HINT} ({e})"
    _availability = reason
    return reason


# ---------------------------------------------------------------------- hosts
class Host:
    """One namespace of a ``Hosts``: ``name`` (the namespace), ``ip``, ``iface`` (inside it)."""

    def __init__(self, hosts: "Hosts", index: int, label: str, name: str, ip: str, iface: str):
        self.hosts = hosts
        self.index = index
        self.label = label
        self.name = name
        self.ip = ip
        self.iface = iface

    def __repr__(self) -> str:
        return f"Host({self.label!r}, name={self.name!r}, ip={self.ip!r}, iface={self.iface!r})"

    def argv(self, argv) -> list[str]:
        """``argv`` prefixed to run inside this namespace (``ip netns exec NAME ...``)."""
        return [IP, "netns", "exec", self.name, *map(str, argv)]

    def popen(self, argv, **kw) -> subprocess.Popen:
        """Start ``argv`` inside this namespace; tracked, and stopped when ``Hosts`` exits.

        ``ip netns exec`` execs the command, so the Popen's PID is the command's own. It
        starts its own session (``start_new_session=True`` unless given), i.e. its own
        process group, which cleanup signals as a whole. The environment, working
        directory and user are inherited as with any Popen; ``kw`` goes to Popen.
        """
        return self.hosts._popen(self, argv, **kw)

    def run(self, argv, timeout: float = 30, check: bool = False, **kw) -> subprocess.CompletedProcess:
        """Run a short command inside this namespace, wait for it (killed after ``timeout``
        s: TimeoutExpired), and return its CompletedProcess (text output captured unless
        ``stdout``/``stderr`` are given). ``check=True`` raises CalledProcessError on failure."""
        kw.setdefault("stdout", subprocess.PIPE)
        kw.setdefault("stderr", subprocess.PIPE)
        kw.setdefault("text", True)
        input_ = kw.pop("input", None)
        if input_ is not None:
            kw["stdin"] = subprocess.PIPE
        proc = self.popen(argv, **kw)
        try:
            out, err = proc.communicate(input_, timeout=timeout)
        except BaseException:  # a timeout, or Ctrl-C: do not leave it running
            self.hosts._stop([proc], grace=0)
            raise
        r = subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
        if check:
            r.check_returncode()
        return r

    def pids(self) -> list[int]:
        """PIDs of every process now inside this namespace (``ip netns pids``)."""
        return _namespace_pids(self.name)


_live_hosts: "weakref.WeakSet[Hosts]" = weakref.WeakSet()


@atexit.register
def _close_live_hosts() -> None:
    """A ``Hosts`` still open at interpreter exit (no ``with``, sys.exit) is closed here."""
    for h in list(_live_hosts):
        with contextlib.suppress(Exception):
            h.close()


class Hosts:
    """``n`` hosts (network namespaces) on one bridge; a context manager.

    >>> with Hosts(2) as hosts:                         # doctest: +SKIP
    ...     a, b = hosts                                # or hosts[0], hosts[1]
    ...     a.ip, b.ip, a.iface                         # '10.213.0.1', '10.213.0.2', 'eth0'
    ...     p = a.popen(["python", "-m", "http.server", "--bind", a.ip])
    ...     b.run(["python", "-c", "..."], timeout=10)

    On exit every process started through ``popen``/``run`` is stopped (SIGTERM to its
    process group and descendants, SIGKILL after ``grace`` s, then waited for), anything
    left inside the namespaces is killed, and the namespaces are deleted and checked gone.
    ``pids`` lists every PID it ever started; ``names`` every namespace it created.
    """

    _serial = 0
    _serial_lock = threading.Lock()

    def __init__(self, n: int = 2, *, subnet: str = SUBNET, iface: str = "eth0", grace: float = 5.0,
                 setup_timeout: float = 20.0):
        if not 1 <= n <= 200:
            raise ValueError("between 1 and 200 hosts")
        if len(iface) > 15:
            raise ValueError("interface names have at most 15 characters")
        self.n = n
        self.subnet = subnet
        self.iface = iface
        self.grace = grace
        self.setup_timeout = setup_timeout
        with Hosts._serial_lock:
            Hosts._serial += 1
            serial = Hosts._serial
        self.base = f"{PREFIX}-{owner_tag()}-{serial}"
        self.hub = f"{self.base}-hub"
        self.hosts: list[Host] = []
        self.names: list[str] = []  # every namespace created, in order (hub first)
        self.pids: list[int] = []  # every process ever started through popen/run
        self.stray_pids: list[int] = []  # untracked processes found (and killed) in our namespaces on close
        self._procs: list[subprocess.Popen] = []
        self._lock = threading.Lock()
        self._tmpdir: str | None = None
        self._closed = False
        self._started = False

    # -- sequence of hosts --
    def __getitem__(self, i) -> Host:
        return self.hosts[i]

    def __iter__(self):
        return iter(self.hosts)

    def __len__(self) -> int:
        return len(self.hosts)

    def __repr__(self) -> str:
        return f"Hosts({self.hosts!r})"

    # -- lifecycle --
    def __enter__(self) -> "Hosts":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.close(raise_leftovers=exc[0] is None)

    def start(self) -> "Hosts":
        """Create the hub, the hosts and their links; wait until every link forwards."""
        if self._started:
            return self
        self._started = True
        _live_hosts.add(self)
        try:
            cleanup_stale()
            self._add_namespace(self.hub)
            _ip("-n", self.hub, "link", "set", "lo", "up")
            _ip("-n", self.hub, "link", "add", "br0", "type", "bridge")  # STP off (default): forwards at once
            _ip("-n", self.hub, "link", "set", "br0", "up")
            for i in range(self.n):
                label = chr(ord("a") + i) if i < 26 else f"h{i}"
                name = f"{self.base}-{label}"
                host = Host(self, i, label, name, f"{self.subnet}.{i + 1}", self.iface)
                self._add_namespace(name)
                port = f"port-{label}"  # in the hub namespace only (and not "vf", a keyword of `ip link`)
                _ip("-n", self.hub, "link", "add", port, "type", "veth", "peer", "name", self.iface, "netns", name)
                _ip("-n", self.hub, "link", "set", port, "master", "br0")
                _ip("-n", self.hub, "link", "set", port, "up")
                _ip("-n", name, "link", "set", "lo", "up")
                _ip("-n", name, "addr", "add", f"{host.ip}/24", "dev", self.iface)
                _ip("-n", name, "link", "set", self.iface, "up")
                self.hosts.append(host)
            _wait_for(self._links_ready, self.setup_timeout, "links up and bridge ports forwarding")
        except BaseException:
            self.close(raise_leftovers=False)
            raise
        return self

    def _add_namespace(self, name: str) -> None:
        self.names.append(name)  # before creating: a half-made one is deleted too
        _ip("netns", "add", name)

    def _links_ready(self) -> bool:
        for host in self.hosts:
            (link,) = json.loads(_ip("-n", host.name, "-j", "link", "show", host.iface).stdout)
            (port,) = json.loads(_ip("-n", self.hub, "-j", "-d", "link", "show", f"port-{host.label}").stdout)
            slave = port.get("linkinfo", {}).get("info_slave_data", {})
            if link.get("operstate") != "UP" or port.get("operstate") != "UP" or slave.get("state") != "forwarding":
                return False
        return True

    def tmpdir(self) -> str:
        """A private temporary directory (0700), removed when the hosts close."""
        with self._lock:
            if self._tmpdir is None:
                self._tmpdir = tempfile.mkdtemp(prefix=f"{self.base}-")
            return self._tmpdir

    def close(self, raise_leftovers: bool = True) -> None:
        """Stop every process, delete every namespace, check that none is left.

        Raises NetnsError if a namespace (or process) could not be removed, unless
        ``raise_leftovers`` is False (closing because of another error: that one wins).
        Idempotent.
        """
        if self._closed:
            return
        self._closed = True
        with _sigint_deferred():  # a second Ctrl-C must not leave half of it undone
            self._close(raise_leftovers)

    def _close(self, raise_leftovers: bool) -> None:
        errors: list[str] = []
        try:
            self._stop(list(self._procs), grace=self.grace)
        except Exception as e:
            errors.append(f"stopping processes: {e}")
        for name in reversed(self.names):
            try:
                if name in list_namespaces():
                    # e.g. a daemon a tracked process started in a session of its own
                    self.stray_pids += _kill_namespace_processes(name)
                    _ip("netns", "delete", name)
            except Exception as e:
                errors.append(f"deleting {name}: {e}")
        left = [n for n in list_namespaces() if n in self.names]
        if left:
            errors.append(f"namespaces still there: {left}")
        running = [p for p in self.pids if _running(p)]
        if running:
            errors.append(f"processes still running: {running}")
        if self._tmpdir is not None:
            shutil.rmtree(self._tmpdir, ignore_errors=True)
        _live_hosts.discard(self)
        if errors:
            msg = "Hosts cleanup: " + "; ".join(errors)
            if raise_leftovers:
                raise NetnsError(msg)
            print(msg, file=sys.stderr)

    # -- processes --
    def _popen(self, host: Host, argv, **kw) -> subprocess.Popen:
        if self._closed or not self._started:
            raise RuntimeError("Hosts is not running")
        kw.setdefault("start_new_session", True)
        with self._lock:
            proc = subprocess.Popen(host.argv(argv), **kw)
            proc._netns_group = bool(kw["start_new_session"])  # type: ignore[attr-defined]
            self._procs.append(proc)
            self.pids.append(proc.pid)
        return proc

    def _stop(self, procs: list[subprocess.Popen], grace: float) -> None:
        """SIGTERM each process's group and descendants, SIGKILL what is left after
        ``grace`` s, and wait for all of them. Only signals a group while its leader is
        unreaped (so its PID cannot have been reused), and descendants through psutil
        (which checks their identity)."""
        live = [p for p in procs if p.poll() is None]
        descendants: list[psutil.Process] = []
        for p in live:
            with contextlib.suppress(psutil.Error):
                descendants += psutil.Process(p.pid).children(recursive=True)

        def signal_all(sig: int) -> None:
            for p in live:
                if p.poll() is None:
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        if getattr(p, "_netns_group", False):
                            os.killpg(p.pid, sig)
                        else:
                            p.send_signal(sig)
            for d in descendants:
                with contextlib.suppress(psutil.Error):
                    d.send_signal(sig)

        if grace > 0:
            signal_all(signal.SIGTERM)
            deadline = time.monotonic() + grace
            for p in live:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    p.wait(max(0.0, deadline - time.monotonic()))
            psutil.wait_procs(descendants, timeout=max(0.0, deadline - time.monotonic()))
        signal_all(signal.SIGKILL)
        for p in live:
            p.wait(10)
        gone, still = psutil.wait_procs(descendants, timeout=10)
        for p in procs:  # close our ends of their pipes
            for f in (p.stdin, p.stdout, p.stderr):
                if f is not None:
                    with contextlib.suppress(OSError):
                        f.close()
        if still:
            raise NetnsError(f"processes survived SIGKILL: {[d.pid for d in still]}")


@contextlib.contextmanager
def _sigint_deferred():
    """Hold SIGINT (Ctrl-C) back while the block runs; deliver it afterwards."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    got: list[int] = []
    old = signal.signal(signal.SIGINT, lambda signum, frame: got.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, old)
        if got:
            if callable(old):
                old(signal.SIGINT, None)  # usually default_int_handler: KeyboardInterrupt here
            elif old == signal.SIG_DFL:
                os.kill(os.getpid(), signal.SIGINT)


def _running(pid: int) -> bool:
    """True while ``pid`` exists and is not a zombie."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


# ---------------------------------------------------------------------- capture
_HEADER = struct.Struct(">II")  # stored length, original length (see capture.py)


class Capture:
    """The frames one ``capture(host)`` saw on the host's interface (both directions).

    Readable once the ``with`` block has exited (the capture has stopped and flushed):
    ``data()`` all frame bytes concatenated, ``frames()`` one bytes object per frame,
    ``count_frames()``, ``count(pattern)`` occurrences of ``pattern`` inside frames
    (streamed: fine for captures of hundreds of MiB), ``stats()`` what the capture
    process reports (frames/bytes written, kernel packets/drops, truncated frames).
    """

    def __init__(self, host: Host, path: str, proc: subprocess.Popen | None):
        self.host = host
        self.path = path
        self.proc = proc

    def __repr__(self) -> str:
        return f"Capture({self.host.label!r}, {self.path!r})"

    def stop(self, timeout: float = 30) -> None:
        """Stop the capture (SIGTERM: it drains what the kernel has queued, then exits)."""
        proc, self.proc = self.proc, None
        if proc is None:
            return
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(10)
                raise NetnsError(f"capture on {self.host.name} did not stop within {timeout}s") from None
        if proc.returncode != 0:
            raise NetnsError(f"capture on {self.host.name} exited with {proc.returncode}: "
                             f"{_tail(self.path + '.log')}")

    def _iter(self):
        with open(self.path, "rb") as f:
            while True:
                head = f.read(_HEADER.size)
                if not head:
                    return
                if len(head) < _HEADER.size:
                    raise NetnsError(f"{self.path}: truncated frame header")
                stored, _orig = _HEADER.unpack(head)
                frame = f.read(stored)
                if len(frame) < stored:
                    raise NetnsError(f"{self.path}: truncated frame")
                yield frame

    def frames(self) -> list[bytes]:
        return list(self._iter())

    def data(self) -> bytes:
        return b"".join(self._iter())

    def count_frames(self) -> int:
        return sum(1 for _ in self._iter())

    def count(self, pattern: bytes) -> int:
        """Occurrences of ``pattern`` inside single frames (not across frame boundaries)."""
        return sum(frame.count(pattern) for frame in self._iter())

    def stats(self) -> dict:
        try:
            with open(self.path + ".stats") as f:
                return json.load(f)
        except OSError:
            return {}


def _tail(path: str, n: int = 2000) -> str:
    try:
        with open(path, "rb") as f:
            return f.read()[-n:].decode(errors="replace").strip()
    except OSError:
        return "(no log)"


@contextlib.contextmanager
def capture(host: Host, path: str | None = None, *, snaplen: int = 0, timeout: float = 20,
            python: str | None = None):
    """Capture every frame on ``host.iface`` while the block runs; yields a ``Capture``.

    Starts ``tests/support/capture.py`` inside the host's namespace (tracked like any
    ``popen``), waits for its ready marker -- the raw socket is bound, so every frame
    from then on is seen -- and on exit stops it (it drains the kernel's queue first), so
    ``data()`` etc. hold everything that crossed the interface during the block. The
    file is in the hosts' temporary directory unless ``path`` is given. ``snaplen``
    keeps only the first bytes of each frame (0: all).

    >>> with capture(b) as cap:                              # doctest: +SKIP
    ...     a.run([...send something to b...])
    >>> cap.count_frames(), b"marker" in cap.data()           # doctest: +SKIP
    """
    if path is None:
        fd, path = tempfile.mkstemp(prefix=f"capture-{host.label}-", suffix=".bin", dir=host.hosts.tmpdir())
        os.close(fd)
    for suffix in (".ready", ".stats"):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path + suffix)
    argv = [python or sys.executable, CAPTURE_SCRIPT, "--iface", host.iface, "--out", path]
    if snaplen:
        argv += ["--snaplen", str(snaplen)]
    with open(path + ".log", "wb") as log:
        proc = host.popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
    cap = Capture(host, path, proc)
    try:
        def ready():
            if proc.poll() is not None:
                raise NetnsError(f"capture on {host.name} exited with {proc.returncode}: {_tail(path + '.log')}")
            return os.path.exists(path + ".ready")

        _wait_for(ready, timeout, f"capture on {host.name} ready")
        yield cap
    finally:
        cap.stop()
