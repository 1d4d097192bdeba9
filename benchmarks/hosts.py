"""Many hosts: 96 one-thread workers on 8 hosts made of network namespaces, beside 2 workers.

    sudo .venv/bin/python benchmarks/hosts.py [--hosts 8] [--workers-per-host 12] [--tasks 20000]
        [--idle-seconds 10] [--no-baseline] [--json]

Why: the simulator (``benchmarks/sim.py``) measures the scheduler's state machines at any
width in virtual time; this runs the real processes and sockets. Each host is a Linux
network namespace (``tests/support/netns.py``, needs root), joined to the others by a
bridge, so every worker connects over a (virtual) Ethernet link with its own address.

Topology (fresh for each configuration)::

    host 1: scheduler, client (this script's ``client`` subcommand), workers 1.1 .. 1.k
    host 2 .. n: workers i.1 .. i.k        (``xsched worker --nthreads 1 --no-nanny``)

Printed, one JSON line per configuration (first 2 workers on 1 host unless
``--no-baseline``, then ``--hosts`` x ``--workers-per-host``), and a table; with ``--json``
one line, the last configuration's figures with every configuration's under ``configs``:

* ``start_s``: from launching the workers until the scheduler lists every one of them;
* ``idle_scheduler_cpu_percent``: the scheduler process's CPU over ``--idle-seconds``
  while every worker is connected and idle (heartbeats only);
* ``map_tasks_per_s``: ``client.map`` of ``--tasks`` tiny tasks, submitted and gathered;
* ``tree_s`` / ``tree_correct`` / ``tree_killed``: a 4,096-leaf tree sum during which
  one worker on each host is killed (SIGKILL) once a quarter of the leaves are done; the
  result must still be exact;
* ``retire_s`` / ``retire_kept``: ``retire_workers`` of every worker of the last host
  while they hold data the client wants; the data must still be there afterwards.

Figures vary with this machine's load; nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, REPO)
import common  # noqa: E402
from twohost import Run, _host_of, interpreter  # noqa: E402


# ---------------------------------------------------------------------- task functions (run on workers)
def inc(x):
    return x + 1


def leaf(i):
    return i


def add(a, b):
    return a + b


def scheduler_cpu_seconds():
    """CPU seconds (user + system) the calling process used: run on the scheduler."""
    t = os.times()
    return t.user + t.system


# ---------------------------------------------------------------------- the client (runs inside host 1)
def _tree(client, n: int):
    layer = client.map(leaf, range(n), pure=False)
    leaves = list(layer)
    while len(layer) > 1:
        layer = [client.submit(add, a, b, pure=False) for a, b in zip(layer[::2], layer[1::2])]
    return leaves, layer[0]


def client_main(args) -> int:
    import xsched

    result: dict = {}
    client = None
    try:
        client = xsched.Client(scheduler_file=args.scheduler_file)
        n = args.hosts * args.workers_per_host
        client.wait_for_workers(n, timeout=args.timeout)
        result["start_s"] = round(time.time() - args.t0, 2)
        workers = client.scheduler_info()["workers"]
        result["workers"] = len(workers)
        by_host: dict[str, list[str]] = {}
        for addr in sorted(workers):
            by_host.setdefault(_host_of(addr), []).append(addr)
        result["hosts"] = len(by_host)

        cpu0 = client.run_on_scheduler(scheduler_cpu_seconds)
        t0 = time.perf_counter()
        time.sleep(args.idle_seconds)  # the measurement window: nothing is submitted meanwhile
        cpu1 = client.run_on_scheduler(scheduler_cpu_seconds)
        result["idle_scheduler_cpu_percent"] = round(100 * (cpu1 - cpu0) / (time.perf_counter() - t0), 2)

        t0 = time.perf_counter()
        futures = client.map(inc, range(args.tasks), pure=False)
        values = client.gather(futures)
        dt = time.perf_counter() - t0
        result["map_tasks_per_s"] = round(args.tasks / dt)
        result["map_correct"] = values == [i + 1 for i in range(args.tasks)]
        del futures, values

        pids = client.run(os.getpid)
        victims = [hosted[-1] for hosted in by_host.values()]  # one worker per host
        t0 = time.perf_counter()
        leaves, total = _tree(client, 4096)
        deadline = time.monotonic() + args.timeout
        while sum(f.done() for f in leaves) < len(leaves) // 4 and time.monotonic() < deadline:
            time.sleep(0.01)
        for addr in victims:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pids[addr], signal.SIGKILL)
        value = total.result(timeout=args.timeout)
        result["tree_s"] = round(time.perf_counter() - t0, 2)
        result["tree_correct"] = value == sum(range(4096))
        result["tree_killed"] = len(victims)
        del leaves, total

        alive = client.scheduler_info()["workers"]
        last = sorted(by_host)[-1]
        leaving = [a for a in by_host[last] if a in alive]
        if len(by_host) > 1 and leaving:
            held = [client.submit(leaf, i, workers=[a], pure=False) for i, a in enumerate(leaving)]
            xsched.wait(held)
            t0 = time.perf_counter()
            client.retire_workers(workers=leaving)
            result["retire_s"] = round(time.perf_counter() - t0, 3)
            result["retire_workers"] = len(leaving)
            result["retire_kept"] = client.gather(held) == list(range(len(leaving)))
    except Exception as e:  # noqa: BLE001 - reported in the JSON, the orchestrator prints it
        result["error"] = common.report_error("hosts client", e)
    finally:
        if client is not None:
            with contextlib.suppress(Exception):
                client.close()
    common.write_json(args.out, result)
    return 0


# ---------------------------------------------------------------------- the orchestrator (root namespace)
def bench(args, hosts_n: int, per_host: int) -> dict:
    from tests.support.netns import Hosts

    py = interpreter("xsched")
    result: dict = {"hosts": hosts_n, "workers_per_host": per_host}
    with Hosts(hosts_n, grace=10) as hosts:
        tmp = hosts.tmpdir()
        logs = os.path.join(args.logs, f"{hosts_n}x{per_host}") if args.logs else tmp
        os.makedirs(logs, exist_ok=True)
        run = Run(hosts, logs)
        first = hosts[0]
        sched_file = os.path.join(tmp, "scheduler.json")
        try:
            run.start(first, "scheduler", [py, "-m", "xsched.cli", "scheduler", "--host", first.ip, "--port", "0",
                                           "--scheduler-file", sched_file])
            run.wait_for_file(sched_file)
            t0 = time.time()
            for h in hosts:
                for j in range(per_host):
                    label = f"worker-{h.index}-{j}"
                    d = os.path.join(tmp, label)
                    os.makedirs(d)
                    run.start(h, label, [py, "-m", "xsched.cli", "worker", "--scheduler-file", sched_file,
                                         "--host", h.ip, "--nthreads", "1", "--name", label, "--no-nanny",
                                         "--local-directory", d])
            out = os.path.join(tmp, "client.json")
            proc = run.start(first, "client", [py, os.path.abspath(__file__), "client",
                                               "--scheduler-file", sched_file, "--hosts", str(hosts_n),
                                               "--workers-per-host", str(per_host), "--tasks", str(args.tasks),
                                               "--idle-seconds", str(args.idle_seconds), "--t0", repr(t0),
                                               "--timeout", str(args.timeout), "--out", out], server=False)
            # workers killed on purpose must not fail the run: only the scheduler is watched
            run.servers = {"scheduler": run.servers["scheduler"]}
            result.update(run.wait_client(proc, out, args.timeout * 4))
        except Exception as e:  # noqa: BLE001
            result["error"] = f"{type(e).__name__}: {e}"
            run.dump_logs()
    return result


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd")
    c = sub.add_parser("client")
    c.add_argument("--scheduler-file", required=True)
    c.add_argument("--out", required=True)
    c.add_argument("--t0", type=float, required=True)
    for q in (p, c):
        q.add_argument("--hosts", type=int, default=8)
        q.add_argument("--workers-per-host", type=int, default=12)
        q.add_argument("--tasks", type=int, default=20000)
        q.add_argument("--idle-seconds", type=float, default=10.0)
        q.add_argument("--timeout", type=float, default=300.0)
    p.add_argument("--no-baseline", action="store_true", help="skip the 2-worker run")
    p.add_argument("--logs", default=None, help="keep every process's log under this directory")
    p.add_argument("--json", action="store_true",
                   help="one JSON line: the last configuration's figures, and every configuration's under configs")
    args = p.parse_args(argv)
    if args.cmd == "client":
        return client_main(args)
    from tests.support.netns import netns_available

    why = netns_available()
    if why:
        print(f"hosts.py: {why}", file=sys.stderr)
        return 2
    configs = ([] if args.no_baseline else [(1, 2)]) + [(args.hosts, args.workers_per_host)]
    rows = []
    for hosts_n, per_host in configs:
        r = bench(args, hosts_n, per_host)
        rows.append(r)
        if not args.json:
            print(json.dumps(r), flush=True)
    if args.json:
        print(json.dumps({"configs": rows, **rows[-1]}))
    else:
        keys = ["workers", "hosts", "start_s", "idle_scheduler_cpu_percent", "map_tasks_per_s", "tree_s",
                "tree_correct", "tree_killed", "retire_s", "retire_kept"]
        print("\n| " + " | ".join(keys) + " |\n|" + "---|" * len(keys))
        for r in rows:
            print("| " + " | ".join(str(r.get(k, "")) for k in keys) + " |")
    return 1 if any(r.get("error") for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
