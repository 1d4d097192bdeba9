"""Many clients: client processes submitting and gathering at once, and clients that leave.

    python benchmarks/clients.py [--clients 20] [--tasks-per-client 1000] [--batch 100]
        [--workers 2] [--threads 1] [--churn-seconds 5] [--churn-rate 1000] [--json]

One LocalCluster (``--workers`` processes x ``--threads``); every client is a process of its
own running this script in a client role, with its own ``xsched.Client`` connected through
the cluster's scheduler file (mode 0600, the way a second user program finds the secret).

(a) together: ``--clients`` processes connect, warm up, and wait at a barrier (each blocks on
    a line from the parent, written to all of them at once). Then each submits
    ``--tasks-per-client`` equal small tasks (``inc``, fresh keys) in batches of ``--batch``:
    ``client.map`` then ``client.gather`` of each batch, results checked. Figures:
    ``tasks_per_s`` (all tasks over the time from the start signal until the last client
    finished), each client's own tasks/s (``per_client``), and ``fairness``: the slowest
    client's tasks/s over the fastest's (1.0 is perfectly fair; the target is at least 0.5).
(b) churn: for ``--churn-seconds``, client processes (4 at a time) each open a few client
    sessions in turn; a session submits ``--churn-futures`` futures, waits for half of them
    and leaves with the other half pending or running. Sessions leave by ``close()``; the
    last session of a process leaves as its process's kind says, in turn: ``close`` (then the
    process ends), ``exit`` (the process exits without closing: the interpreter's exit
    closes the client) or ``kill`` (the process kills itself with SIGKILL: no goodbye, the
    scheduler sees the connection drop). Paced at about ``--churn-rate`` futures released
    per second; ``churn_released_per_s`` is the rate achieved.
(c) leaks: after (a) and after (b), the scheduler's tables (``scheduler_info()["tables"]``:
    tasks, clients in the state machine, wanted keys, connected clients, listener peers) are
    polled until they are back to what they were before (a), within ``--drain-timeout``.
    ``leaked_tasks``, ``leaked_clients``, ``leaked_wants`` and ``leaked_client_peers`` are
    what remains above that baseline, ``leaked_peers`` the listener's peers beyond the
    connected clients and two per worker: all 0 when nothing leaked. ``drain_seconds``: from
    the last churn client's leaving until the tables were back.

Printed figures, xsched only. The tasks are tiny, so the figures measure the scheduler's
and the clients' overhead, shared by 20 client processes and the cluster on this machine's
CPUs. Every process started here is stopped by PID at the end, on failure too.
"""

from __future__ import annotations

import argparse
import json
import os
import select
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

KINDS = ("close", "exit", "kill")  # how a churn process's last session leaves
CHURN_PROCESSES = 4  # churn processes alive at once


# ---------------------------------------------------------------------- task functions (run on workers)
def inc(x):
    """The task every client submits: small, and its result is easy to check."""
    return x + 1


# ---------------------------------------------------------------------- client roles (child processes)
def _say(**fields) -> None:
    """One JSON line to the parent, on stdout."""
    print(json.dumps(fields), flush=True)


def role_together(args) -> int:
    """A client of (a): connect, warm up, wait for the start line, run the batches, report."""
    from xsched import Client

    client = Client(scheduler_file=args.scheduler_file, set_as_default=False, name=f"together{args.index}")
    try:
        client.gather(client.map(inc, range(10), pure=False))  # warm-up: functions, connections
        _say(ready=True)
        if not sys.stdin.readline():  # the barrier: the parent writes one line to every client at once
            return 1
        t0 = time.monotonic()
        base = args.index * args.tasks
        correct = True
        for start in range(0, args.tasks, args.batch):
            xs = range(base + start, base + min(start + args.batch, args.tasks))
            out = client.gather(client.map(inc, xs, pure=False))
            correct = correct and out == [x + 1 for x in xs]
        t1 = time.monotonic()
        _say(index=args.index, tasks=args.tasks, start=t0, stop=t1, seconds=t1 - t0,
             tasks_per_s=args.tasks / (t1 - t0), correct=correct)
    finally:
        client.close()
    return 0


def role_churn(args) -> int:
    """A churn process of (b): ``--sessions`` client sessions one after the other, each
    submitting ``--futures`` futures and leaving with half of them pending; paced at
    ``--rate`` futures per second; the last session leaves as ``--kind`` says."""
    from xsched import Client, wait

    released = 0
    t0 = time.monotonic()
    for i in range(args.sessions):
        client = Client(scheduler_file=args.scheduler_file, set_as_default=False, name=f"churn{args.index}")
        base = (args.index * args.sessions + i) * args.futures
        futs = client.map(inc, range(base, base + args.futures), pure=False)
        wait(futs[: args.futures // 2])
        released += len(futs)
        if i == args.sessions - 1 and args.kind != "close":
            _say(index=args.index, kind=args.kind, sessions=args.sessions, released=released, left=time.monotonic())
            if args.kind == "kill":
                os.kill(os.getpid(), signal.SIGKILL)
            return 0  # "exit": the client and its futures are still open; the interpreter's exit closes it
        client.close()
        del futs
        ahead = t0 + released / args.rate - time.monotonic()  # pacing, not ordering: no event waits on it
        if ahead > 0 and i < args.sessions - 1:
            time.sleep(ahead)
    _say(index=args.index, kind=args.kind, sessions=args.sessions, released=released, left=time.monotonic())
    return 0


# ---------------------------------------------------------------------- the parent
class Child:
    """A client process running this script in a role: its JSON lines read with a deadline."""

    def __init__(self, role: str, extra: list[str]):
        cmd = [sys.executable, os.path.abspath(__file__), "--role", role, *extra]
        # stderr is inherited: run_all keeps it in the benchmark's log
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
        self.buf = b""

    def read(self, deadline: float) -> dict:
        """The next JSON line the child prints; TimeoutError after ``deadline`` (monotonic),
        RuntimeError if it exits first."""
        fd = self.proc.stdout.fileno()
        while b"\n" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"client process {self.proc.pid} said nothing in time")
            ready, _, _ = select.select([fd], [], [], min(left, 1.0))
            if ready:
                data = os.read(fd, 65536)
                if not data:
                    raise RuntimeError(f"client process {self.proc.pid} exited ({self.proc.wait()}) "
                                       "before its report; its stderr is above")
                self.buf += data
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)

    def go(self) -> None:
        """The start signal: one line on its stdin."""
        self.proc.stdin.write(b"go\n")

    def stop(self) -> None:
        """Kill it by PID if it still runs; reap it; close its pipes."""
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        for f in (self.proc.stdin, self.proc.stdout):
            try:
                f.close()
            except OSError:
                pass


def tables(client) -> dict:
    """The scheduler's table sizes (see ``Scheduler.info``: tasks, clients, wants, client_peers, peers)."""
    return client.scheduler_info()["tables"]


def leaks(now: dict, baseline: dict, workers: int) -> dict:
    """What remains in the scheduler's tables above the baseline. The listener's peers are
    counted against the peers expected (the connected clients, and two per worker: its
    connection and its heartbeat socket, which joins at its first beat)."""
    out = {f"leaked_{k}": max(now[k] - baseline[k], 0) for k in ("tasks", "clients", "wants", "client_peers")}
    out["leaked_peers"] = max(now["peers"] - now["client_peers"] - 2 * workers, 0)
    return out


def drain(client, baseline: dict, workers: int, timeout: float) -> tuple[dict, float]:
    """Poll the tables until nothing is left above ``baseline`` or ``timeout`` passes:
    (the last tables read, seconds waited)."""
    t0 = time.monotonic()
    while True:
        now = tables(client)
        if not any(leaks(now, baseline, workers).values()) or time.monotonic() - t0 > timeout:
            return now, time.monotonic() - t0
        time.sleep(0.05)


def run_together(scheduler_file: str, n: int, tasks: int, batch: int, children: list, timeout: float) -> dict:
    """Phase (a): the figures of ``n`` clients submitting and gathering at once."""
    t_spawn = time.monotonic()
    mine = [Child("together", ["--scheduler-file", scheduler_file, "--index", str(i), "--tasks", str(tasks),
                               "--batch", str(batch)]) for i in range(n)]
    children.extend(mine)
    deadline = time.monotonic() + timeout
    for c in mine:
        c.read(deadline)  # ready
    ready_s = time.monotonic() - t_spawn
    go = time.monotonic()
    for c in mine:
        c.go()
    reports = [c.read(deadline) for c in mine]
    for c in mine:
        c.proc.wait(max(deadline - time.monotonic(), 1))
    rates = [r["tasks_per_s"] for r in reports]
    total_s = max(r["stop"] for r in reports) - go
    return {
        "clients_ready_seconds": ready_s,
        "seconds": total_s,
        "tasks_per_s": n * tasks / total_s,
        "fairness": min(rates) / max(rates),
        "all_correct": all(r["correct"] for r in reports),
        "per_client": [{"client": r["index"], "tasks_per_s": round(r["tasks_per_s"], 1),
                        "seconds": round(r["seconds"], 3), "start_skew_ms": round((r["start"] - go) * 1e3, 1),
                        "correct": r["correct"]} for r in reports],
    }


def run_churn(scheduler_file: str, seconds: float, rate: float, futures: int, children: list,
              timeout: float) -> dict:
    """Phase (b): churn processes for ``seconds``, paced at ``rate`` futures released per second."""
    per_process_rate = rate / CHURN_PROCESSES
    # a process lives about 3 s of sessions, so that starting processes does not dominate
    sessions = max(1, round(3.0 * per_process_rate / futures))
    t0 = time.monotonic()
    deadline = t0 + seconds + timeout
    live: list[Child] = []
    reports, started, index = [], 0, 0
    while True:
        still = []
        for c in live:
            if c.proc.poll() is None:
                still.append(c)
                continue
            try:
                reports.append(c.read(deadline))
            except RuntimeError:  # exited without a report: counted as a failed process
                reports.append({"kind": "failed", "released": 0, "exit_code": c.proc.returncode})
        live = still
        if time.monotonic() - t0 < seconds:
            while len(live) < CHURN_PROCESSES:
                kind = KINDS[index % len(KINDS)]
                c = Child("churn", ["--scheduler-file", scheduler_file, "--index", str(index), "--kind", kind,
                                    "--sessions", str(sessions), "--futures", str(futures),
                                    "--rate", str(per_process_rate)])
                children.append(c)
                live.append(c)
                index += 1
                started += 1
        elif not live:
            break
        if time.monotonic() > deadline:
            raise TimeoutError(f"{len(live)} churn processes still running {timeout:.0f}s after the churn ended")
        time.sleep(0.05)  # polling the processes (a pace, not an ordering)
    wall = time.monotonic() - t0
    released = sum(r["released"] for r in reports)
    by_kind = {k: sum(1 for r in reports if r["kind"] == k) for k in (*KINDS, "failed")}
    return {"churn_seconds": wall, "churn_processes": started,
            "churn_sessions": sum(r.get("sessions", 0) for r in reports), "churn_futures_per_session": futures,
            "churn_futures_released": released,
            "churn_released_per_s": released / wall, "churn_leaving_by": by_kind,
            "churn_last_left": max((r["left"] for r in reports if "left" in r), default=None)}


def main(argv=None) -> int:
    """Run the figures of the module docstring (or, with ``--role``, one client process)."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--clients", type=int, default=20, help="client processes submitting at once (a)")
    p.add_argument("--tasks-per-client", type=int, default=1000, help="tasks each client submits and gathers")
    p.add_argument("--batch", type=int, default=100, help="tasks per client.map + gather")
    p.add_argument("--workers", type=int, default=2, help="worker processes")
    p.add_argument("--threads", type=int, default=1, help="threads per worker")
    p.add_argument("--churn-seconds", type=float, default=5.0, help="how long clients come and leave (b); 0: none")
    p.add_argument("--churn-rate", type=float, default=1000.0, help="futures released per second aimed at (b)")
    p.add_argument("--churn-futures", type=int, default=200, help="futures per churn session")
    p.add_argument("--drain-timeout", type=float, default=30.0, help="seconds the tables get to be back (c)")
    p.add_argument("--timeout", type=float, default=600.0, help="seconds each phase may take at most")
    p.add_argument("--json", action="store_true", help="print one JSON line (for run_all.py)")
    # the client roles (child processes of this script)
    p.add_argument("--role", choices=("together", "churn"), help=argparse.SUPPRESS)
    p.add_argument("--scheduler-file", help=argparse.SUPPRESS)
    p.add_argument("--index", type=int, default=0, help=argparse.SUPPRESS)
    p.add_argument("--tasks", type=int, default=0, help=argparse.SUPPRESS)
    p.add_argument("--kind", choices=KINDS, default="close", help=argparse.SUPPRESS)
    p.add_argument("--sessions", type=int, default=1, help=argparse.SUPPRESS)
    p.add_argument("--futures", type=int, default=100, help=argparse.SUPPRESS)
    p.add_argument("--rate", type=float, default=250.0, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.role == "together":
        return role_together(args)
    if args.role == "churn":
        return role_churn(args)

    ns = common.load_impl("xsched")
    result = {"benchmark": "clients", "impl": ns.name, "version": ns.version, "clients": args.clients,
              "tasks_per_client": args.tasks_per_client, "tasks": args.clients * args.tasks_per_client,
              "batch": args.batch, "workers": f"{args.workers} x {args.threads} thread(s) (processes)",
              **common.environment()}
    cluster = client = None
    children: list[Child] = []
    try:
        t0 = time.perf_counter()
        cluster, client, _ = common.start(ns, n_workers=args.workers, threads_per_worker=args.threads)
        result["cluster_start_seconds"] = time.perf_counter() - t0
        baseline = tables(client)
        result["tables_before"] = baseline

        together = run_together(cluster.scheduler_file, args.clients, args.tasks_per_client, args.batch,
                                children, args.timeout)
        result.update(together)
        after, waited = drain(client, baseline, args.workers, args.drain_timeout)
        result["tables_after_together"] = after
        result["together_drain_seconds"] = waited

        if args.churn_seconds > 0:
            churn = run_churn(cluster.scheduler_file, args.churn_seconds, args.churn_rate, args.churn_futures,
                              children, args.timeout)
            last_left = churn.pop("churn_last_left")
            result.update(churn)
            after, _ = drain(client, baseline, args.workers, args.drain_timeout)
            result["drain_seconds"] = time.monotonic() - last_left if last_left is not None else None
        result["tables_after"] = after
        result.update(leaks(after, baseline, args.workers))
    except Exception as e:
        result["error"] = common.report_error("clients", e)
    finally:
        for c in children:
            c.stop()
        t0 = time.perf_counter()
        common.stop(cluster, client)
        result["cluster_close_seconds"] = time.perf_counter() - t0
    common.emit(result, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
