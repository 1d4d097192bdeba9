"""A real single-node Slurm for tests: munged, slurmctld and slurmd from Debian's
``slurm-wlm`` and ``munge`` packages, all in a private temporary directory.

No systemd, no accounting (slurmdbd), no cgroups: the daemons run in the foreground as
tracked child processes of the test process, with their own munge key and socket,
their own ``slurm.conf`` and free ports, so nothing in /etc is used or changed and a
system Slurm (if any) is not disturbed. Needs root (slurmd runs jobs as their user, and
SlurmUser=root); ``slurm_available()`` says why not otherwise (tests skip with that).

>>> with LocalSlurm() as slurm:                                          # doctest: +SKIP
...     r = subprocess.run(["sbatch", "--parsable", "--wrap", "hostname"],
...                        env=slurm.env, capture_output=True, text=True, check=True)
...     job_id = r.stdout.strip().split(";")[0]
...     slurm.wait_job_gone(job_id)
...     slurm.run(["squeue", "-h"]).stdout            # run(): a client command with .env

Cleanup: on exit every job is cancelled (``scancel``) and waited for, then slurmd,
slurmctld and munged are stopped by PID (SIGTERM, SIGKILL after ``grace`` s, waited
for), then any process that belonged to this Slurm and is still alive -- slurmd's
descendants (slurmstepd, job processes) and processes whose environment names this
instance's ``SLURM_CONF`` (found through /proc, never by name) -- is killed, and the
temporary directory is removed. A process that survives that raises ``SlurmError``.
The directory's name carries the owner's PID and start time, so ``cleanup_stale()``
(run by every LocalSlurm before it starts) removes what a SIGKILLed run left behind.

slurmd is made a child subreaper (``PR_SET_CHILD_SUBREAPER``, kept across exec), so
slurmstepd and job processes, which slurmd double-forks, stay in slurmd's process tree
instead of being reparented to init, and can be found by parentage.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import weakref

import psutil

from .netns import alive, owner_tag, start_ticks, wait_gone

__all__ = ["slurm_available", "LocalSlurm", "SlurmError", "BINARIES", "cleanup_stale", "PREFIX"]

#: Commands LocalSlurm needs (daemons, then clients).
BINARIES = ("munged", "mungekey", "slurmctld", "slurmd", "slurmstepd", "sbatch", "squeue", "scancel", "sinfo",
            "scontrol")
_SKIP_HINT = "needs root and Debian's slurm-wlm + munge (sh tests/support/system_deps.sh as root installs them)"
_SBIN = ("/usr/sbin", "/sbin", "/usr/bin", "/bin")


class SlurmError(RuntimeError):
    """LocalSlurm could not start or clean up (the message has the relevant log tails)."""


def _which(name: str) -> str | None:
    return shutil.which(name) or next((os.path.join(d, name) for d in _SBIN
                                       if os.access(os.path.join(d, name), os.X_OK)), None)


def slurm_available() -> str | None:
    """None when LocalSlurm can run here, else why not (a skip message)."""
    if not sys.platform.startswith("linux"):
        return f"{_SKIP_HINT} (this is {sys.platform})"
    if os.geteuid() != 0:
        return f"{_SKIP_HINT} (running as uid {os.geteuid()})"
    missing = [b for b in BINARIES if _which(b) is None]
    if missing:
        return f"{_SKIP_HINT} (missing: {', '.join(missing)})"
    return None


# ---------------------------------------------------------------------- helpers
def _free_ports(n: int) -> list[int]:
    """``n`` distinct TCP ports free right now on all addresses (bound together, then closed)."""
    socks = []
    try:
        for _ in range(n):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind(("", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def _mem_total_mib() -> int:
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) // 1024
    raise SlurmError("no MemTotal in /proc/meminfo")


def _cpu_count() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _short_hostname() -> str:
    r = subprocess.run(["hostname", "-s"], capture_output=True, text=True)
    name = r.stdout.strip() if r.returncode == 0 else ""
    return name or socket.gethostname().split(".")[0]


_PR_SET_CHILD_SUBREAPER = 36


def _become_subreaper() -> None:  # preexec_fn: runs in the child between fork and exec
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def _tail(path: str, n: int = 3000) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - n))
            return f.read().decode(errors="replace").strip()
    except OSError:
        return "(no log)"


def _processes_with_conf(conf_path: str) -> list[psutil.Process]:
    """Live processes whose environment has ``SLURM_CONF=conf_path``: the daemons (we set
    it), slurmscriptd and slurmstepd (they inherit it), and jobs submitted with ``env``.
    The path is unique to one LocalSlurm, so this finds its processes and no others."""
    marker = f"SLURM_CONF={conf_path}".encode()
    found = []
    for pid in psutil.pids():
        if pid == os.getpid():
            continue
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                env = f.read().split(b"\0")
        except OSError:
            continue
        if marker in env:
            with contextlib.suppress(psutil.Error):
                p = psutil.Process(pid)
                if alive(p):
                    found.append(p)
    return found


# ---------------------------------------------------------------------- stale runs
#: Every LocalSlurm directory is ``<tmp>/<PREFIX>-<pid>-<starttime>-<random>``.
PREFIX = "xsched-slurm"


def cleanup_stale(tmpdir: str | None = None) -> list[str]:
    """Remove what LocalSlurms of dead processes (a SIGKILLed test run) left behind: kill
    the processes whose ``SLURM_CONF`` is in such a directory (never by name), wait, and
    delete the directory. Directories of live owners are left alone. Returns those removed."""
    tmpdir = tmpdir or tempfile.gettempdir()
    removed = []
    try:
        entries = os.listdir(tmpdir)
    except OSError:
        return removed
    for entry in entries:
        parts = entry[len(PREFIX) + 1:].split("-")
        if not entry.startswith(PREFIX + "-") or len(parts) < 3:
            continue
        try:
            pid, ticks = int(parts[0]), int(parts[1])
        except ValueError:
            continue
        if start_ticks(pid) == ticks:
            continue  # its owner is alive
        path = os.path.join(tmpdir, entry)
        procs = _processes_with_conf(os.path.join(path, "slurm.conf"))
        for p in procs:
            with contextlib.suppress(psutil.Error):
                p.kill()
        if wait_gone(procs, 10):
            continue  # cannot clean it up: leave it (and say so next time)
        shutil.rmtree(path, ignore_errors=True)
        removed.append(path)
    return removed


# ---------------------------------------------------------------------- the cluster
_live: "weakref.WeakSet[LocalSlurm]" = weakref.WeakSet()


@atexit.register
def _close_live() -> None:
    """A LocalSlurm still open at interpreter exit (no ``with``, sys.exit) is closed here."""
    for slurm in list(_live):
        with contextlib.suppress(Exception):
            slurm.close(raise_leftovers=False)


class LocalSlurm:
    """A one-node Slurm cluster (this host), started on ``__enter__``, gone on ``__exit__``.

    Attributes once started: ``env`` (os.environ plus ``SLURM_CONF``: pass it to sbatch,
    squeue, scancel, sinfo...), ``conf_path``, ``partition`` ("debug", the default),
    ``node`` (this host's short name), ``cpus``, ``memory_mb`` (the node's RealMemory),
    ``dir`` (the private temporary directory), ``shared`` (``dir/shared``, world-writable
    scratch: the working directory of commands run with ``run``/``submit``, so jobs'
    ``slurm-<id>.out`` land there), ``pids`` (every daemon PID started),
    ``startup_seconds``. ``logs()`` returns the daemons' log tails (for failure messages).
    Helpers: ``run(argv)`` (a client command with ``env``), ``submit(*sbatch_args,
    wrap=...)`` -> job ID, ``jobs()`` -> {job ID: state} from one squeue call,
    ``job_state(id)`` (scontrol; also after the job ended), ``wait_job_gone(id)``.

    ``cpus``/``memory_mb`` default to the real CPU count and a bit below the real RAM;
    larger values work too (``SlurmdParameters=config_overrides``), to fit more
    concurrent jobs than this machine has cores. ``def_mem_per_cpu`` (MiB) is what a
    job gets without ``--mem`` (Slurm's default would be the whole node: one job at a
    time). ``debug`` sets the daemons' log level ("info", "verbose", "debug", ...).
    ``kill_wait``: seconds between SIGTERM and SIGKILL when a job is cancelled or hits its
    time limit (Slurm's KillWait). ``extra_conf``: lines appended to slurm.conf.
    """

    def __init__(self, *, cpus: int | None = None, memory_mb: int | None = None, def_mem_per_cpu: int | None = None,
                 partition: str = "debug", cluster_name: str = "xsched-test", start_timeout: float = 60.0,
                 grace: float = 10.0, debug: str = "info", kill_wait: int = 5, extra_conf: str = ""):
        self.cpus = cpus or _cpu_count()
        self.memory_mb = memory_mb or max(256, int(_mem_total_mib() * 0.9))
        self.def_mem_per_cpu = def_mem_per_cpu or max(64, min(1024, self.memory_mb // max(self.cpus, 1)))
        self.partition = partition
        self.cluster_name = cluster_name
        self.start_timeout = start_timeout
        self.grace = grace
        self.debug = debug
        self.kill_wait = kill_wait
        self.extra_conf = extra_conf
        self.node = _short_hostname()
        self.dir: str | None = None
        self.conf_path: str | None = None
        self.munge_socket: str | None = None
        self.shared: str | None = None
        self.env: dict[str, str] = {}
        self.pids: list[int] = []
        self.startup_seconds: float | None = None
        self.stray_pids: list[int] = []  # processes of this Slurm found (and killed) on close
        self._procs: dict[str, subprocess.Popen] = {}
        self._logs: dict[str, str] = {}
        self._known: dict[int, psutil.Process] = {}  # every descendant of slurmd ever seen
        self._closed = False

    def __repr__(self) -> str:
        return f"LocalSlurm(node={self.node!r}, conf={self.conf_path!r}, pids={self.pids})"

    # -- start --
    def __enter__(self) -> "LocalSlurm":
        reason = slurm_available()
        if reason:
            raise SlurmError(reason)
        t0 = time.monotonic()
        _live.add(self)
        try:
            self._start()
        except BaseException:
            self.close(raise_leftovers=False)
            raise
        self.startup_seconds = time.monotonic() - t0
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        self.close(raise_leftovers=exc_type is None)

    def _start(self) -> None:
        cleanup_stale()
        self.dir = tempfile.mkdtemp(prefix=f"{PREFIX}-{owner_tag()}-")
        self.conf_path = os.path.join(self.dir, "slurm.conf")
        # munged insists that every directory above its socket is executable by all
        os.chmod(self.dir, 0o711)
        d = self.dir
        for sub, mode in (("munge", 0o755), ("state", 0o700), ("spool", 0o755), ("log", 0o755),
                          ("run", 0o755), ("shared", 0o1777)):
            os.mkdir(os.path.join(d, sub), mode)
            os.chmod(os.path.join(d, sub), mode)  # not masked by the umask
        self.shared = os.path.join(d, "shared")
        self.munge_socket = os.path.join(d, "munge", "munge.socket")
        key = os.path.join(d, "munge", "munge.key")
        r = subprocess.run([_which("mungekey"), "--create", "--keyfile", key], capture_output=True, text=True)
        if r.returncode != 0:
            raise SlurmError(f"mungekey: exit {r.returncode}: {r.stderr.strip()}")
        os.chmod(key, 0o400)  # owned by root, as munged (running as root) requires

        self._spawn("munged", [_which("munged"), "--foreground", "--key-file", key, "--socket", self.munge_socket,
                               "--pid-file", os.path.join(d, "munge", "munged.pid"),
                               "--seed-file", os.path.join(d, "munge", "munged.seed"),
                               "--log-file", os.path.join(d, "log", "munged.log"), "--num-threads", "4"])
        self._wait(lambda: self._check_alive("munged") and os.path.exists(self.munge_socket) and self._munge_ok(),
                   "munged to answer")

        self.ctld_port, self.slurmd_port = _free_ports(2)
        with open(self.conf_path, "w") as f:
            f.write(self._slurm_conf())
        with open(os.path.join(d, "cgroup.conf"), "w") as f:
            # read by slurmd even with proctrack/linuxproc and task/none; nothing is constrained
            f.write("CgroupPlugin=autodetect\nIgnoreSystemd=yes\nConstrainCores=no\nConstrainRAMSpace=no\n"
                    "ConstrainDevices=no\nConstrainSwapSpace=no\n")
        self.env = {**os.environ, "SLURM_CONF": self.conf_path}
        for k in ("SLURM_JOB_ID", "SLURM_JOBID", "SBATCH_PARTITION", "SLURM_CLUSTERS", "SQUEUE_FORMAT"):
            self.env.pop(k, None)  # e.g. when the tests themselves run inside a Slurm job

        self._spawn("slurmctld", [_which("slurmctld"), "-D", "-i", "-f", self.conf_path])
        self._spawn("slurmd", [_which("slurmd"), "-D", "-f", self.conf_path], preexec_fn=_become_subreaper)

        def idle():
            self._check_alive("slurmctld")
            self._check_alive("slurmd")
            r = subprocess.run([_which("sinfo"), "-h", "-N", "-o", "%T"], env=self.env, capture_output=True,
                               text=True, timeout=30)
            states = r.stdout.split()
            return r.returncode == 0 and states and all(s == "idle" for s in states)

        self._wait(idle, "the node to be idle (sinfo)", interval=0.1)

    def _slurm_conf(self) -> str:
        d = self.dir
        return f"""# written by tests/support/slurm.py (LocalSlurm): a throw-away single-node cluster
ClusterName={self.cluster_name}
SlurmctldHost={self.node}(127.0.0.1)
SlurmctldPort={self.ctld_port}
SlurmdPort={self.slurmd_port}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket={self.munge_socket}
CredType=cred/munge
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SwitchType=switch/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
DefMemPerCPU={self.def_mem_per_cpu}
SchedulerType=sched/backfill
# batch jobs start at once (the default batch_sched_delay holds them up to 3 s)
SchedulerParameters=batch_sched_delay=0
MailProg=/bin/true
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
ReturnToService=2
SlurmdParameters=config_overrides
StateSaveLocation={d}/state
SlurmdSpoolDir={d}/spool
SlurmctldPidFile={d}/run/slurmctld.pid
SlurmdPidFile={d}/run/slurmd.pid
SlurmctldLogFile={d}/log/slurmctld.log
SlurmdLogFile={d}/log/slurmd.log
SlurmctldDebug={self.debug}
SlurmdDebug={self.debug}
TmpFS={d}/shared
PlugStackConfig={d}/plugstack.conf
# quick reactions: a test waits for these
KillWait={self.kill_wait}
MinJobAge=60
InactiveLimit=0
MessageTimeout=10
SlurmctldTimeout=30
SlurmdTimeout=60
NodeName={self.node} NodeAddr=127.0.0.1 NodeHostname={self.node} CPUs={self.cpus} RealMemory={self.memory_mb} State=UNKNOWN
PartitionName={self.partition} Nodes={self.node} Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO
{self.extra_conf}
"""

    def _spawn(self, name: str, argv: list[str], **kw) -> subprocess.Popen:
        log = os.path.join(self.dir, "log", f"{name}.out")
        self._logs[name] = log
        env = {**os.environ, "SLURM_CONF": self.conf_path or ""}
        with open(log, "ab") as out:
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, env=env,
                                    cwd=self.dir, start_new_session=True, **kw)
        self._procs[name] = proc
        self.pids.append(proc.pid)
        return proc

    def _check_alive(self, name: str) -> bool:
        proc = self._procs[name]
        if proc.poll() is not None:
            raise SlurmError(f"{name} exited with {proc.returncode} while starting:\n{self.logs()}")
        return True

    def _munge_ok(self) -> bool:
        r = subprocess.run(["munge", "--socket", self.munge_socket, "--no-input"], capture_output=True, timeout=10)
        return r.returncode == 0

    def _wait(self, predicate, what: str, interval: float = 0.02):
        deadline = time.monotonic() + self.start_timeout
        while True:
            if predicate():
                return
            if time.monotonic() > deadline:
                raise SlurmError(f"timed out after {self.start_timeout}s waiting for {what}:\n{self.logs()}")
            time.sleep(interval)

    # -- use --
    def run(self, argv, timeout: float = 30, check: bool = False, **kw) -> subprocess.CompletedProcess:
        """Run a Slurm client command (``sbatch``, ``squeue``...) with ``env``; text output
        captured. The working directory defaults to ``dir/shared``: sbatch writes a job's
        ``slurm-<id>.out`` into the directory it was run from unless ``--output`` says otherwise."""
        kw.setdefault("capture_output", True)
        kw.setdefault("cwd", self.shared)
        kw.setdefault("text", True)
        return subprocess.run(list(map(str, argv)), env=self.env, timeout=timeout, check=check, **kw)

    def submit(self, *args: str, wrap: str | None = None, script: str | None = None) -> str:
        """``sbatch --parsable ARGS [--wrap WRAP | SCRIPT]``; returns the job ID."""
        argv = ["sbatch", "--parsable", *args]
        if wrap is not None:
            argv += ["--wrap", wrap]
        if script is not None:
            argv.append(script)
        r = self.run(argv)
        if r.returncode != 0:
            raise SlurmError(f"sbatch failed ({r.returncode}): {r.stderr.strip()}")
        return r.stdout.strip().split(";")[0]

    def jobs(self) -> dict[str, str]:
        """Job ID -> state (squeue's %T: PENDING, RUNNING, COMPLETING...) of the jobs squeue lists."""
        r = self.run(["squeue", "-h", "-o", "%i %T"])
        if r.returncode != 0:
            raise SlurmError(f"squeue failed ({r.returncode}): {r.stderr.strip()}")
        return dict(line.split(None, 1) for line in r.stdout.splitlines() if line.strip())

    def job_state(self, job_id: str) -> str | None:
        """A job's state from ``scontrol show job`` (also COMPLETED, CANCELLED, TIMEOUT... for
        MinJobAge=60 s after it ends), or None once Slurm has forgotten it."""
        r = self.run(["scontrol", "-o", "show", "job", str(job_id)])
        if r.returncode != 0:
            return None
        for field in r.stdout.split():
            if field.startswith("JobState="):
                return field.split("=", 1)[1]
        return None

    def wait_job_gone(self, job_id: str, timeout: float = 60) -> None:
        """Poll until ``squeue`` no longer lists the job (finished, cancelled, or timed out)."""
        deadline = time.monotonic() + timeout
        while str(job_id) in self.jobs():
            if time.monotonic() > deadline:
                raise SlurmError(f"job {job_id} still in squeue after {timeout}s:\n{self.logs()}")
            time.sleep(0.1)

    def logs(self) -> str:
        """The tails of every daemon's log (slurm's own log files and their stdout/stderr)."""
        parts = []
        if self.dir:
            names = sorted(set(self._logs.values()) | {os.path.join(self.dir, "log", f) for f in
                                                       ("slurmctld.log", "slurmd.log")})
            for path in names:
                if os.path.exists(path):
                    parts.append(f"--- {os.path.basename(path)}\n{_tail(path)}")
        return "\n".join(parts)

    # -- tracking --
    def _slurm_processes(self) -> list[psutil.Process]:
        """Every live process of this Slurm: the daemons, slurmd's descendants (slurmd is a
        subreaper), and any process whose environment has our SLURM_CONF (a job whose
        process escaped the tree). Found by PID, parentage and environment, never by name."""
        found: dict[int, psutil.Process] = {}
        for proc in self._procs.values():
            if proc.poll() is None:
                with contextlib.suppress(psutil.Error):
                    p = psutil.Process(proc.pid)
                    found[p.pid] = p
                    for c in p.children(recursive=True):
                        found[c.pid] = c
        if self.conf_path:
            for p in _processes_with_conf(self.conf_path):
                found.setdefault(p.pid, p)
        for pid, p in found.items():
            self._known.setdefault(pid, p)
        return [p for p in found.values() if alive(p)]

    # -- stop --
    def close(self, raise_leftovers: bool = True) -> None:
        """Cancel every job, stop the daemons, kill leftovers, remove the directory. Idempotent."""
        if self._closed:
            return
        self._closed = True
        errors: list[str] = []
        ctld = self._procs.get("slurmctld")
        if ctld is not None and ctld.poll() is None and self.conf_path:
            try:
                self.run(["scancel", "--user=root"], timeout=30)
                deadline = time.monotonic() + 30
                while self.jobs():
                    if time.monotonic() > deadline:
                        errors.append(f"jobs still queued 30 s after scancel: {self.jobs()}")
                        break
                    time.sleep(0.1)
            except Exception as e:
                errors.append(f"cancelling jobs: {e}")
        self._slurm_processes()  # remember every descendant before slurmd goes
        for name in ("slurmd", "slurmctld", "munged"):
            proc = self._procs.get(name)
            if proc is None or proc.poll() is not None:
                continue
            try:
                self._slurm_processes()
                proc.terminate()
                try:
                    proc.wait(self.grace)
                except subprocess.TimeoutExpired:
                    errors.append(f"{name} ({proc.pid}) ignored SIGTERM for {self.grace}s: killed")
                    proc.kill()
                    proc.wait(10)
            except Exception as e:
                errors.append(f"stopping {name}: {e}")
        # whatever of ours is still alive (job processes, slurmstepd): SIGKILL, wait
        left = [p for p in {**self._known, **{p.pid: p for p in self._slurm_processes()}}.values() if alive(p)]
        if left:
            self.stray_pids += [p.pid for p in left]
            for p in left:
                with contextlib.suppress(psutil.Error):
                    p.kill()
            still = wait_gone(left, 10)
            if still:
                errors.append(f"processes survived SIGKILL: {[p.pid for p in still]}")
        if self.dir:
            shutil.rmtree(self.dir, ignore_errors=True)
        _live.discard(self)
        if errors:
            msg = "LocalSlurm cleanup: " + "; ".join(errors)
            if raise_leftovers:
                raise SlurmError(msg)
            print(msg, file=sys.stderr)
