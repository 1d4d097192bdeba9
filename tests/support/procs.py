"""Processes of the command line (``python -m xsched.cli ...``) started by a test, stopped
by PID (SIGTERM, then SIGKILL after a deadline), and their output read line by line."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import time


def cli_env(**extra):
    """This environment without XSCHED_SECRET, plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if k != "XSCHED_SECRET"}
    env.update(extra)
    return env


class Procs:
    """Processes started by a test; ``stop`` sends SIGTERM by PID and waits."""

    def __init__(self):
        self.procs: list[subprocess.Popen] = []

    def start(self, *args, env=None, **kw) -> subprocess.Popen:
        p = subprocess.Popen([sys.executable, "-m", "xsched.cli", *args], env=env or cli_env(), bufsize=0,
                             stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kw)
        self.procs.append(p)
        return p

    @staticmethod
    def stop(p: subprocess.Popen, timeout: float = 15) -> int:
        if p.poll() is None:
            os.kill(p.pid, signal.SIGTERM)
        try:
            return p.wait(timeout)
        except subprocess.TimeoutExpired:
            os.kill(p.pid, signal.SIGKILL)
            p.wait(5)
            raise AssertionError(f"process {p.pid} ({p.args[3:5]}) ignored SIGTERM for {timeout}s")

    def close(self):
        for p in reversed(self.procs):
            if p.poll() is None:
                try:
                    self.stop(p)
                except AssertionError:
                    pass
            for f in (p.stdout, p.stderr):
                if f is not None:
                    f.close()


def read_line(p: subprocess.Popen, timeout: float = 30) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([p.stdout], [], [], 0.1)
        if ready:
            line = p.stdout.readline()
            if line:
                return line.decode()
        if p.poll() is not None:
            raise AssertionError(f"process exited with {p.returncode}: {p.stderr.read().decode()[-2000:]}")
    raise AssertionError("no output within the deadline")
