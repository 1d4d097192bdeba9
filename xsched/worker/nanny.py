"""The nanny: keeps worker processes alive and within their memory limit.

Data flow::

    xsched worker (the nanny process)
        spawn `xsched worker --no-nanny ...` per worker  --> worker processes
        every 100 ms: poll each child
            exited 0 (graceful close)      -> not restarted
            exited 69 (cannot register)    -> not restarted (the scheduler is gone or refuses, e.g.
                                              speaks another protocol version); the nanny logs why,
                                              from the note the worker left in its directory
                                              (leave_exit_reason), and once no worker is left it
                                              exits 69 itself
            exited 75 (asked to restart)   -> restarted at once (client.restart()), no backoff;
                                              with a note from the worker (restart into a shipped
                                              environment) started with that environment's Python.
                                              If it exits before registering there, it is started
                                              with the previous Python again, told why
                                              (XSCHED_ENVIRONMENT_ERROR), and reports it
            died (signal, crash, other)    -> restarted (same name, new port) after a backoff
                                              that doubles per quick death (0.1 s .. 5 s) and
                                              starts over once a worker ran STABLE_SECONDS. A
                                              worker that lost its scheduler exits 1 too; every
                                              restarted worker gets XSCHED_NANNY_RESTARTS and so
                                              waits worker.reconnect-timeout for the scheduler
                                              (restarted on the same address) before exit 69.
                                              But one that died MAX_UNREGISTERED_DEATHS times in
                                              a row before it ever registered (it writes the file
                                              XSCHED_STARTED_FILE names once it did) fails the
                                              same way at every start: not restarted, the nanny
                                              logs its last error (leave_exit_reason, or its log's
                                              tail) and, once no worker is left, exits 1
            RSS > terminate * limit        -> SIGKILL, then restarted
        every 100 ms: the plugin requests its workers left in its directory (worker/plugins.py):
            setup(nanny) / teardown(nanny) of nanny plugins, here, in the nanny's process; the
            workers it starts afterwards inherit what they did (environment variables, ...)
        SIGTERM/SIGINT                     -> forwarded (SIGTERM) to every child, which retires
                                              gracefully (its data moved to other workers), then
                                              SIGKILL after ``stop_timeout``
        parent gone                        -> the same (children also watch their own parent)

The scheduler notices a dead worker through its closed connection and reschedules its
tasks or recomputes its data; a task that keeps killing workers ends as KilledWorker.
The nanny holds no task state and does not import the network stack.

>>> nanny_action(returncode=None, rss=980, limit=1000, terminate=0.95)
'kill'
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import select
import tempfile
import time

import psutil

from .. import config
from ..units import format_bytes
from .environments import read_restart_note
from .plugins import NANNY_DIR_VAR, NannyPlugins

logger = logging.getLogger("xsched.nanny")

__all__ = ["Nanny", "nanny_action", "leave_exit_reason", "EXIT_RESTART", "EXIT_CANNOT_CONNECT", "RESTARTED_VAR",
           "NANNY_DIR_VAR"]


#: Exit code of a worker that could not register with its scheduler (unreachable, refused):
#: restarting it cannot help, so the nanny stops instead of looping.
EXIT_CANNOT_CONNECT = 69  # EX_UNAVAILABLE (sysexits.h)

#: Exit code of a worker the scheduler asked to restart (``client.restart()``): the nanny
#: starts it again at once, without counting it as a crash.
EXIT_RESTART = 75  # EX_TEMPFAIL (sysexits.h)

#: Set for a worker the nanny starts again (its value: the restarts so far). Such a worker
#: lost its scheduler or crashed; the scheduler may be restarting as well, so it waits
#: ``worker.reconnect-timeout`` to register rather than ``comm.timeouts.connect``.
RESTARTED_VAR = "XSCHED_NANNY_RESTARTS"

#: A worker that died this many times in a row without registering with its scheduler fails
#: at every start (a bad option, a directory it cannot create...): restarting it cannot help.
MAX_UNREGISTERED_DEATHS = 3

#: A worker that ran this long before it died was not crash-looping: its next restart
#: waits the shortest backoff again, so a long-lived cluster that loses workers now and
#: then (killed by a user, OOM, chaos tests) does not end up waiting 5 s per restart.
STABLE_SECONDS = 10.0


def nanny_action(returncode: int | None, rss: int, limit: int | None, terminate: float | bool | None) -> str:
    """What to do with one child: 'keep', 'kill' (too much memory), 'restart' (died or
    asked to: ``EXIT_RESTART``) or 'done'.

    >>> nanny_action(EXIT_RESTART, 0, None, 0.95), nanny_action(0, 0, None, 0.95)
    ('restart', 'done')
    """
    if returncode is not None:
        return "done" if returncode in (0, EXIT_CANNOT_CONNECT) else "restart"
    if limit and terminate not in (False, None) and rss > limit * float(terminate):
        return "kill"
    return "keep"


def _reason_path(directory: str, pid: int) -> str:
    return os.path.join(directory, f"exit-{pid}.txt")


def leave_exit_reason(directory: str | None, text: str) -> None:
    """(A worker process about to exit with ``EXIT_CANNOT_CONNECT``, or crashing) tell its nanny why, in
    ``directory``, the one it shares with its workers (``XSCHED_NANNY_DIR``): the worker's
    own output may go nowhere, and the nanny is what the user started. Nothing without one.

    >>> leave_exit_reason(None, "no nanny here: nothing is written")
    """
    if not directory:
        return
    path = _reason_path(directory, os.getpid())
    try:
        with open(path + ".part", "w") as f:
            f.write(text)
        os.replace(path + ".part", path)
    except OSError:  # (the nanny is gone: nobody to tell)
        pass


class _Child:
    def __init__(self, name: str, args: list[str]):
        self.name, self.args = name, args
        self.python: str | None = None  # None: this interpreter
        self.previous_python: str | None = None
        self.on_trial = False  # started with a new environment's Python, not registered there yet
        self.started_file: str | None = None  # XSCHED_STARTED_FILE of this start: written once it registered
        self.registered = False  # this start registered with the scheduler (its started_file appeared)
        self.unregistered_deaths = 0  # deaths in a row before registering
        self.env_error: str | None = None  # told to the next start after a failed environment
        self.proc = None
        self.restarts = 0
        self.starts = 0  # processes started for this worker so far
        self.started_at = 0.0  # time.monotonic() of the last start
        self.backoff = 0.1
        self.next_start = 0.0
        self.ended: str | None = None  # why it will not be started again (exited 0 or 69, or crash-looped)


class Nanny:
    """Supervise one worker process per entry of ``workers`` (name -> CLI args)."""

    def __init__(self, workers: dict[str, list[str]], memory_limit: int | None, terminate=0.95,
                 interval: float = 0.1, log_dir: str | None = None, stop_timeout: float = 5.0):
        self.children = {name: _Child(name, args) for name, args in workers.items()}
        self.memory_limit = memory_limit
        self.terminate = terminate
        self.interval = interval
        self.log_dir = log_dir
        self.stop_timeout = stop_timeout  # a child's graceful retirement may take this long
        self._stopping = False
        self.kills = 0
        self.refused: dict[str, str] = {}  # worker name -> why it could not register (exit 69)
        self.failed: dict[str, str] = {}  # worker name -> why it died at every start (never registered)
        self._starts = 0  # processes started, for unique started_file names
        self._plugins: NannyPlugins | None = None  # made by run(): the nanny plugins, set up here

    @property
    def plugins(self) -> dict:
        """The nanny plugins set up in this process: name -> plugin."""
        return self._plugins.plugins if self._plugins is not None else {}

    def _log_path(self, child: _Child) -> str | None:
        return os.path.join(self.log_dir, f"worker-{child.name}.log") if self.log_dir else None

    def _start(self, child: _Child) -> None:
        log = self._log_path(child)
        extra = {}
        if child.starts:
            extra[RESTARTED_VAR] = str(child.starts)
        child.starts += 1
        child.started_at = time.monotonic()
        if self._plugins is not None:
            extra[NANNY_DIR_VAR] = self._plugins.directory
        if child.env_error:
            extra["XSCHED_ENVIRONMENT_ERROR"] = child.env_error
            child.env_error = None
        _remove(child.started_file)
        child.started_file = os.path.join(self._plugins.directory if self._plugins is not None else
                                          tempfile.gettempdir(), f"started-{os.getpid()}-{self._starts}")
        self._starts += 1
        child.registered = False
        extra["XSCHED_STARTED_FILE"] = child.started_file
        child.proc = _spawn_with(child.python or sys.executable, child.args, extra, log)

    def _check_registered(self, child: _Child) -> None:
        """Whether the running process registered with the scheduler (after ``poll()``: one
        that registered and then died has written its file before it died)."""
        if not child.registered and child.started_file is not None and os.path.exists(child.started_file):
            child.registered, child.unregistered_deaths, child.on_trial = True, 0, False

    def _restart_requested(self, child: _Child, now: float) -> None:
        """The worker exited to be restarted; into a new environment if it left a note."""
        note = read_restart_note(child.proc.pid)
        if note is not None:
            logger.info("worker %s: restarting it with %s", child.name, note["python"])
            child.previous_python, child.python = child.python, note["python"]
            child.on_trial = True
        child.proc = None
        child.next_start = now

    def _on_trial(self, child: _Child, rc: int | None, now: float) -> bool:
        """A worker started in a new environment: True once it fell back (it exited before it
        registered there); a registration ends the trial (``_check_registered``)."""
        if not child.on_trial or rc is None:
            return False
        what = f"a worker could not start with {child.python} (exit code {rc})"
        tail = self._exit_reason(child) or _tail(self._log_path(child))
        logger.warning("%s; starting it with its previous Python again", what)
        child.env_error = what + (f": {tail}" if tail else "")
        child.python, child.previous_python, child.on_trial = child.previous_python, None, False
        child.proc = None
        child.next_start = now
        return True

    def stop(self, *_) -> None:
        self._stopping = True  # (only a flag: a signal handler takes no lock its own thread may hold)

    def _exit_reason(self, child: _Child) -> str | None:
        """What the worker said before exiting (``leave_exit_reason``), read once."""
        if self._plugins is None or child.proc is None:
            return None
        path = _reason_path(self._plugins.directory, child.proc.pid)
        try:
            with open(path) as f:
                text = f.read().strip()
            os.remove(path)
        except OSError:
            return None
        return text or None

    def _ended(self, child: _Child, rc: int) -> None:
        """A worker exited for good (0: closed gracefully; 69: could not register): say why once."""
        if rc != EXIT_CANNOT_CONNECT:
            child.ended = "closed"
            return
        reason = self._exit_reason(child) or _tail(self._log_path(child)) or (
            "it gave no reason; start the nanny with --log-directory to keep its output")
        child.ended = self.refused[child.name] = reason
        logger.error("worker %s could not register with its scheduler and is not restarted (exit code %d): %s",
                     child.name, rc, reason)

    def run(self, parent_pid: int | None = None) -> int:
        """Run until told to stop (signal), the parent dies, or every worker ended (closed
        gracefully: 0; once none is left, ``EXIT_CANNOT_CONNECT`` if any could not register,
        else 1 if any died at every start)."""
        signal.signal(signal.SIGTERM, self.stop)
        signal.signal(signal.SIGINT, self.stop)
        # a signal also writes a byte to this pipe (the interpreter's wakeup fd), which ends the
        # loop's wait at once instead of after its interval
        wake_r, wake_w = os.pipe()
        os.set_blocking(wake_r, False)
        os.set_blocking(wake_w, False)
        old_wakeup = signal.set_wakeup_fd(wake_w)
        self._plugins = NannyPlugins(self, tempfile.mkdtemp(prefix="xsched-nanny-"))
        for child in self.children.values():
            self._start(child)
        code = 0
        try:
            while not self._stopping:
                if parent_pid and os.getppid() != parent_pid:
                    break
                self._plugins.poll()
                if not self._tick():
                    code = EXIT_CANNOT_CONNECT if self.refused else 1 if self.failed else 0
                    break
                if select.select([wake_r], [], [], self.interval)[0]:
                    _drain(wake_r)
        finally:
            signal.set_wakeup_fd(old_wakeup)
            os.close(wake_r)
            os.close(wake_w)
            self._stop_all()
            self._plugins.close()  # (removes the directory, with every started_file in it)
        return code

    def _tick(self) -> bool:
        alive = False
        now = time.monotonic()
        for child in self.children.values():
            if child.ended is not None:
                continue
            if child.proc is None:
                if now >= child.next_start:
                    self._start(child)
                alive = True
                continue
            rc = child.proc.poll()
            rss = 0
            if rc is None:
                try:
                    rss = psutil.Process(child.proc.pid).memory_info().rss
                except psutil.Error:
                    pass
            self._check_registered(child)
            if self._on_trial(child, rc, now):
                alive = True
                continue
            action = nanny_action(rc, rss, self.memory_limit, self.terminate)
            if action == "keep":
                alive = True
            elif action == "done":
                self._ended(child, rc)
            elif action == "kill":
                self.kills += 1
                logger.warning("worker %s uses %s, above %.0f%% of its %s limit: restarting it", child.name,
                               format_bytes(rss), 100 * float(self.terminate), format_bytes(self.memory_limit or 0))
                child.proc.kill()
                child.proc.wait()
                self._schedule_restart(child, now)
                alive = True
            elif action == "restart" and rc == EXIT_RESTART:
                logger.info("worker %s asked to be restarted: restarting it", child.name)
                self._restart_requested(child, now)
                alive = True
            elif action == "restart":
                alive = self._died(child, rc, now) or alive
        return alive

    def _died(self, child: _Child, rc: int, now: float) -> bool:
        """A worker died: restart it, unless it died every time before it registered
        (``MAX_UNREGISTERED_DEATHS`` in a row): then say its last error, once. True: restarted."""
        reason = self._exit_reason(child)  # (read at every death: the note is removed)
        if child.registered:
            logger.warning("worker %s died (exit code %s%s): restarting it", child.name, rc,
                           f": {reason}" if reason else "")
            self._schedule_restart(child, now)
            return True
        child.unregistered_deaths += 1
        reason = reason or _tail(self._log_path(child))
        if child.unregistered_deaths < MAX_UNREGISTERED_DEATHS:
            logger.warning("worker %s died (exit code %s) before it registered with its scheduler%s: restarting it "
                           "(start %d of %d)", child.name, rc, f" ({reason})" if reason else "",
                           child.unregistered_deaths + 1, MAX_UNREGISTERED_DEATHS)
            self._schedule_restart(child, now)
            return True
        reason = reason or "it gave no reason; start the nanny with --log-directory to keep its output"
        child.ended = self.failed[child.name] = reason
        child.proc = None
        logger.error("worker %s died %d times in a row before it registered with its scheduler and is not restarted "
                     "(exit code %s): %s", child.name, child.unregistered_deaths, rc, reason)
        return False

    def _schedule_restart(self, child: _Child, now: float) -> None:
        child.proc = None
        child.restarts += 1
        if now - child.started_at >= STABLE_SECONDS:
            child.backoff = 0.1
        child.next_start = now + child.backoff
        child.backoff = min(child.backoff * 2, 5.0)

    def _stop_all(self) -> None:
        """One SIGTERM each (a worker retires gracefully on it), then SIGKILL after ``stop_timeout``.

        Only one: a second SIGTERM tells a retiring worker to close at once, dropping its data.
        """
        procs = [c.proc for c in self.children.values() if c.proc is not None]
        for p in procs:
            if p.poll() is None:
                try:
                    p.terminate()
                except ProcessLookupError:
                    pass
        deadline = time.monotonic() + self.stop_timeout
        for p in procs:
            try:
                p.wait(max(deadline - time.monotonic(), 0))
            except subprocess.TimeoutExpired:
                p.kill()
                try:
                    p.wait(5)
                except subprocess.TimeoutExpired:
                    pass


def _drain(fd: int) -> None:
    """Read what the signals wrote to the wakeup pipe."""
    try:
        while os.read(fd, 512):
            pass
    except BlockingIOError:
        pass


def _spawn_with(python: str, args: list[str], extra_env: dict, log_path: str | None) -> subprocess.Popen:
    """``python -m xsched.cli <args>`` with ``python`` (this one, or a shipped environment's), started
    as ``deploy.process.spawn`` starts it (the nanny is a server: it imports nothing from deploy)."""
    env = {**os.environ, **config.to_env(), **extra_env}
    env.setdefault("PYTHONUNBUFFERED", "1")
    for name, value in (config.get("worker.pre-spawn-environ") or {}).items():
        env.setdefault(str(name), str(value))  # (the user's own environment wins)
    out = open(log_path, "ab") if log_path else subprocess.DEVNULL
    try:
        return subprocess.Popen([python, "-m", "xsched.cli", *args, "--parent-pid", str(os.getpid())], env=env,
                                stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT if log_path else out,
                                start_new_session=True, close_fds=True)
    finally:
        if log_path:
            out.close()


def _remove(path: str | None) -> None:
    if path is not None:
        try:
            os.remove(path)
        except OSError:
            pass


def _tail(path: str | None, n: int = 400) -> str:
    """The last characters of a log file, on one line."""
    if not path:
        return ""
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(f.tell() - n, 0))
            return " ".join(f.read().decode(errors="replace").split())
    except OSError:
        return ""
