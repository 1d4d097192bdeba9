"""Many clients at once, each a process of its own, and clients that leave.

Six client processes submit and gather together and all get correct results; then clients
holding futures leave in the three ways a client leaves -- ``close()``, the process exiting
without closing, the process killed -- and the scheduler's tables (``scheduler_info()["tables"]``)
come back to no task, no wanted key and only this test's own client. The benchmark at scale
is ``benchmarks/clients.py``.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time

import pytest

from xsched import Client

from tests.support.helpers import wait_until

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(90)]

#: A client process. argv: scheduler file, index, number of tasks, role.
#: together: says it is ready, waits for a line, then maps and gathers its tasks in batches
#:           and says whether the results are right.
#: hold:     submits its tasks, waits for half of them, says how many futures it holds,
#:           then leaves as the next line says: "close", or "exit" without closing (the
#:           parent may also kill it meanwhile, its futures live).
CHILD = r"""
import json, sys
from xsched import Client, wait

def inc(x):
    return x + 1

scheduler_file, index, n, role = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
client = Client(scheduler_file=scheduler_file, set_as_default=False, name=f"many{index}")
base = index * n
if role == "together":
    print(json.dumps({"ready": True}), flush=True)
    sys.stdin.readline()
    out = []
    for start in range(0, n, 50):
        out += client.gather(client.map(inc, range(base + start, base + min(start + 50, n)), pure=False))
    print(json.dumps({"index": index, "correct": out == [x + 1 for x in range(base, base + n)]}), flush=True)
    client.close()
else:
    futs = client.map(inc, range(base, base + n), pure=False)
    wait(futs[: n // 2])
    print(json.dumps({"holding": len(futs)}), flush=True)
    if sys.stdin.readline().strip() == "close":
        client.close()
        print(json.dumps({"closed": True}), flush=True)
        sys.stdin.readline()
    # "exit": ends without closing; the interpreter's exit closes the client
"""


class ClientProcess:
    """One child running CHILD; its JSON lines read with a deadline, stopped by PID."""

    def __init__(self, scheduler_file: str, index: int, n: int, role: str, log_dir):
        self.log = open(os.path.join(log_dir, f"client-{index}.stderr"), "wb")
        self.proc = subprocess.Popen([sys.executable, "-c", CHILD, scheduler_file, str(index), str(n), role],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log, bufsize=0)
        self.buf = b""

    def read(self, timeout: float = 30) -> dict:
        """The next JSON line this process prints (fails after ``timeout`` or if it exits first)."""
        deadline = time.monotonic() + timeout
        fd = self.proc.stdout.fileno()
        while b"\n" not in self.buf:
            left = deadline - time.monotonic()
            assert left > 0, f"client process {self.proc.pid} said nothing within {timeout}s ({self.stderr()})"
            ready, _, _ = select.select([fd], [], [], min(left, 0.5))
            if ready:
                data = os.read(fd, 65536)
                assert data, f"client process {self.proc.pid} exited ({self.proc.wait()}): {self.stderr()}"
                self.buf += data
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)

    def tell(self, line: str) -> None:
        """One line to the process's stdin."""
        self.proc.stdin.write(line.encode() + b"\n")

    def stderr(self) -> str:
        """The end of what the process wrote to stderr (for failure messages)."""
        self.log.flush()
        with open(self.log.name, "rb") as f:
            return f.read()[-2000:].decode(errors="replace")

    def stop(self) -> None:
        """Kill it by PID if it still runs, reap it, close its pipes and log."""
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(10)
        for f in (self.proc.stdin, self.proc.stdout, self.log):
            f.close()


@pytest.fixture
def client_processes(tmp_path):
    """Factory of client processes; every one still running is killed by PID at teardown."""
    made: list[ClientProcess] = []

    def start(scheduler_file: str, index: int, n: int, role: str) -> ClientProcess:
        p = ClientProcess(scheduler_file, index, n, role, tmp_path)
        made.append(p)
        return p

    try:
        yield start
    finally:
        for p in made:
            p.stop()


def _tables(client) -> dict:
    t = client.scheduler_info()["tables"]
    return {k: t[k] for k in ("tasks", "clients", "wants", "client_peers")}


EMPTY = {"tasks": 0, "clients": 1, "wants": 0, "client_peers": 1}  # only this test's own client


def test_many_client_processes_then_clients_leaving_leave_nothing_behind(own_cluster, client_processes):
    cluster = own_cluster(n_workers=2)
    with Client(cluster, set_as_default=False) as c:
        c.wait_for_workers(2, timeout=30)
        assert _tables(c) == EMPTY

        # six clients submitting and gathering at once
        together = [client_processes(cluster.scheduler_file, i, 300, "together") for i in range(6)]
        for p in together:
            assert p.read() == {"ready": True}
        for p in together:
            p.tell("go")
        reports = sorted((p.read(60) for p in together), key=lambda r: r["index"])
        assert reports == [{"index": i, "correct": True} for i in range(6)]
        for p in together:
            assert p.proc.wait(30) == 0, p.stderr()
        wait_until(lambda: _tables(c) == EMPTY, timeout=20, msg="the tables empty after six clients closed")

        # clients holding futures, then leaving: close(), exit without closing, killed
        holders = [client_processes(cluster.scheduler_file, 10 + i, 100, "hold") for i in range(6)]
        for p in holders:
            assert p.read() == {"holding": 100}
        held = _tables(c)
        assert held["clients"] == 7 and held["client_peers"] == 7 and held["wants"] == 600, held
        assert held["tasks"] >= 600, held

        closing, exiting, killed = holders[:2], holders[2:4], holders[4:]
        for p in closing:
            p.tell("close")
        for p in closing:
            assert p.read() == {"closed": True}  # closed, its process still alive
        for p in exiting:
            p.tell("exit")
        for p in killed:
            os.kill(p.proc.pid, signal.SIGKILL)
        for p in exiting:
            assert p.proc.wait(30) == 0, p.stderr()
        for p in killed:
            assert p.proc.wait(30) == -signal.SIGKILL
        wait_until(lambda: _tables(c) == EMPTY, timeout=30,
                   msg="the tables empty after clients closed, exited and were killed")
        assert c.scheduler_info()["tasks"] == {}
        for p in closing:
            p.tell("bye")
            assert p.proc.wait(30) == 0, p.stderr()

        # the cluster still serves
        assert c.gather(c.map(lambda x: x * 2, range(10), pure=False)) == list(range(0, 20, 2))
