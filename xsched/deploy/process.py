"""Starting and stopping xsched server processes we own, by PID, never by name.

Children start in their own session (a Ctrl-C in a terminal reaches the parent only)
and watch their parent: when it dies — a notebook kernel restarted, a SIGKILL — they
close themselves (``--parent-pid``), so no process outlives its cluster.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from .. import config

__all__ = ["spawn", "stop_process", "wait_for_file"]


def spawn(args: list[str], env: dict | None = None, log_path: str | None = None) -> subprocess.Popen:
    """Start ``python -m xsched.cli <args>`` with this process's configuration."""
    full_env = {**os.environ, **config.to_env(), **(env or {})}
    full_env.setdefault("PYTHONUNBUFFERED", "1")
    out = open(log_path, "ab") if log_path else subprocess.DEVNULL
    try:
        return subprocess.Popen(
            [sys.executable, "-m", "xsched.cli", *args, "--parent-pid", str(os.getpid())],
            env=full_env, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT if log_path else out,
            start_new_session=True, close_fds=True,
        )
    finally:
        if log_path:
            out.close()


def wait_for_file(path: str, proc: subprocess.Popen, timeout: float, what: str, log_path: str | None = None) -> None:
    """Wait until ``path`` exists; raise with the child's log tail if it died first."""
    deadline = time.monotonic() + timeout
    while not os.path.exists(path):
        if proc.poll() is not None:
            raise RuntimeError(f"the {what} process exited with code {proc.returncode} before it was ready"
                               + _tail(log_path))
        if time.monotonic() > deadline:
            stop_process(proc)
            raise TimeoutError(f"the {what} did not start within {timeout:.0f}s" + _tail(log_path))
        time.sleep(0.02)


def _tail(log_path: str | None) -> str:
    if not log_path or not os.path.exists(log_path):
        return ""
    with open(log_path, "rb") as f:
        data = f.read()[-2000:].decode(errors="replace")
    return f"; its output ends with:\n{data}"


def stop_process(proc: subprocess.Popen, timeout: float = 5.0) -> int | None:
    """SIGTERM (the process closes gracefully), then SIGKILL after ``timeout``; reap it."""
    if proc.poll() is None:
        try:
            proc.send_signal(signal.SIGTERM)
        except ProcessLookupError:
            pass
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                pass
    return proc.returncode
