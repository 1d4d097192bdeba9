"""Two-host transfer: MiB/s moving a 256 MiB numpy array from a worker on host A to a task on host B.

    sudo .venv/bin/python benchmarks/twohost.py [--impl xsched] [--impl dask] [--rounds 3] [--capture] [--json] [--quick]

Why: the engine benchmark's transfer runs on loopback, where xsched's bulk side channel
sends raw bytes (after both ends prove the offer's key); between hosts it seals every
record with AES-256-OCB3, and that is the figure users with a real cluster see. The two hosts are Linux network namespaces joined by a bridge (tests/support/netns.py), so
this needs root; the traffic crosses a real (virtual) Ethernet link, veth, at the
kernel's default MTU and offloads.

Topology (per implementation, fresh each time):

    host A (10.213.0.1): scheduler, worker 0      host B (10.213.0.2): worker 1, the client

xsched runs its CLI (``python -m xsched.cli scheduler|worker``) under .venv; dask runs
``distributed.cli.dask_scheduler|dask_worker`` under .venv-dask (``make bench-env``), both
workers ``--nthreads 1 --no-nanny``. The client is this script run inside B (``client``
subcommand), under the implementation's interpreter, through the adapter in common.py.

Measured like the engine benchmark's transfer: an array made on worker 0 (a task pinned
there), then a task pinned on worker 1 that takes it; only that second task is timed;
one warm-up (opens the worker-to-worker connection), then 5 timed transfers. The
implementations take turns, a fresh cluster each time, for ``--rounds`` rounds (3): this
machine's speed drifts by tens of percent over a minute, and one block per implementation
put all of a slow phase on one side. Printed: the median (min, max) over every timed
transfer, and each round's median.
Every array is a fresh key, and released (checked on the workers) before the next.
Then the same number of scatters: the client (on B) sends an array it holds to worker 0
(on A), ``scatter([x], workers=[w0], hash=False)`` timed until it returns.

The array is a 16-byte pattern repeated, so any plaintext piece of it of 31 bytes or
more contains the whole pattern. ``--capture`` moves one more array (untimed) while
tests/support/capture.py records every frame on B's interface, and reports how often the
pattern appeared in clear (0 when the transfer is encrypted) -- and how many frames the
capture dropped, without which "0 found" would mean nothing.

Prints figures; asserts nothing. ``--json`` prints one JSON dict.
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

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import common  # noqa: E402

#: 16 bytes the array repeats; found in a capture == the array's bytes crossed in clear
PATTERN = b"<xsched-pattern>"
assert len(PATTERN) == 16


# ---------------------------------------------------------------------- task functions (run on workers)
def make_pattern(nbytes):
    return np.tile(np.frombuffer(PATTERN, dtype=np.uint8), nbytes // len(PATTERN))


def check_array(x):
    """(nbytes, pid, content intact) -- the task on worker 1; it touches every byte it checks."""
    ok = x.dtype == np.uint8 and x.nbytes % 16 == 0 and bytes(x[:16]) == PATTERN and bytes(x[-16:]) == PATTERN
    if ok:
        rows = x.reshape(-1, 16)
        ok = bool((rows[:: max(1, len(rows) // 4096)] == np.frombuffer(PATTERN, dtype=np.uint8)).all())
    return x.nbytes, os.getpid(), ok


def holds_key(key, worker=None, dask_worker=None):
    """Whether this worker still holds ``key`` (xsched passes ``worker``, dask ``dask_worker``)."""
    w = worker if worker is not None else dask_worker
    return key in w.data


def bulk_bytes_sent(worker=None, dask_worker=None):
    """xsched only: bytes this worker has sent over its bulk side channel (None if it has none)."""
    bulk = getattr(worker, "bulk", None)
    return getattr(bulk, "bytes_sent", None)


# ---------------------------------------------------------------------- the client (runs inside host B)
def _host_of(address: str) -> str:
    return address.split("://", 1)[-1].rsplit(":", 1)[0].strip("[]")


def _wait_released(client, key, timeout: float = 60) -> None:
    """Poll until no worker holds ``key`` any more (deadline; replaces the engine's fixed pause)."""
    deadline = time.monotonic() + timeout
    while any(client.run(holds_key, key).values()):
        if time.monotonic() > deadline:
            raise TimeoutError(f"{key} still held {timeout}s after its release")
        time.sleep(0.01)


_ZMQ_MECHANISMS = {0: "null", 1: "plain", 2: "curve", 3: "gssapi"}


def _zmq_mechanisms(obj, depth: int = 2) -> set:
    """Security mechanisms of the TCP ZeroMQ sockets reachable from ``obj``'s attributes."""
    import zmq

    found, todo, seen = set(), [(obj, 0)], set()
    while todo:
        o, d = todo.pop()
        if id(o) in seen:
            continue
        seen.add(id(o))
        if isinstance(o, zmq.Socket):
            with contextlib.suppress(Exception):
                if o.get(zmq.LAST_ENDPOINT).startswith(b"tcp://"):  # not inproc/ipc helpers
                    found.add(_ZMQ_MECHANISMS.get(o.get(zmq.MECHANISM), "?"))
            continue
        if d < depth and hasattr(o, "__dict__"):
            todo += [(v, d + 1) for v in vars(o).values()]
    return found


def _mechanism(ns, client, w0: str, w1: str) -> dict:
    """What the client sees of how bytes travel between the hosts (each item best effort:
    xsched's security API is being reworked)."""
    out: dict = {}
    if ns.name == "xsched":
        sec = client.security
        out["mode"] = getattr(sec, "mode", None)
        with contextlib.suppress(Exception):
            out["client_zmq_mechanism"] = sorted(_zmq_mechanisms(client._conn)) or None
        if hasattr(sec, "mechanism_for"):
            with contextlib.suppress(Exception):
                out["to_worker0"] = sec.mechanism_for(w0)
        if hasattr(sec, "encrypt_bulk"):
            with contextlib.suppress(Exception):
                out["bulk_encrypted_from_worker0"] = bool(sec.encrypt_bulk(_host_of(w0)))
    else:
        with contextlib.suppress(Exception):
            out["scheme_scheduler"] = client.scheduler.address.split("://")[0]
        out["scheme_worker0"] = w0.split("://")[0]
        out["require_encryption"] = bool(getattr(client.security, "require_encryption", False))
    return out


def client_main(args) -> int:
    ns = common.load_impl(args.impl)
    result: dict = {"impl": ns.name, "version": ns.version}
    client = None
    try:
        client = ns.Client(scheduler_file=args.scheduler_file)
        client.wait_for_workers(2, timeout=60)
        addrs = sorted(client.scheduler_info()["workers"])
        by_host = {_host_of(a): a for a in addrs}
        w0, w1 = by_host[args.a_ip], by_host[args.b_ip]
        result["workers"] = {"worker0": w0, "worker1": w1}
        result["mechanism"] = _mechanism(ns, client, w0, w1)
        pids = client.run(os.getpid)
        nbytes = args.mib * 2**20
        seconds, ok, bulk = [], True, []
        for rep in range(args.warmup + args.repeats):
            a = client.submit(make_pattern, nbytes, workers=[w0], pure=False, allow_other_workers=False)
            ns.wait([a])
            sent0 = client.run(bulk_bytes_sent, workers=[w0])[w0] if ns.name == "xsched" else None
            t0 = time.perf_counter()
            b = client.submit(check_array, a, workers=[w1], pure=False, allow_other_workers=False)
            got, pid, intact = b.result()
            dt = time.perf_counter() - t0
            if sent0 is not None:
                sent1 = client.run(bulk_bytes_sent, workers=[w0])[w0]
                bulk.append(None if sent1 is None else sent1 - sent0)
            ok = ok and got == nbytes and pid == pids[w1] and intact
            if rep >= args.warmup:
                seconds.append(dt)
            key = a.key
            del a, b
            _wait_released(client, key)
        result["transfer_seconds"] = [round(s, 4) for s in seconds]
        # scatter: the client (on B) sends an array it holds to worker 0 (on A)
        scatter_seconds = []
        for rep in range(args.warmup + args.repeats):
            arr = make_pattern(nbytes)
            t0 = time.perf_counter()
            [f] = client.scatter([arr], workers=[w0], hash=False)
            dt = time.perf_counter() - t0
            got, _, intact = client.submit(check_array, f, workers=[w0], pure=False,
                                           allow_other_workers=False).result()
            ok = ok and got == nbytes and intact
            if rep >= args.warmup:
                scatter_seconds.append(dt)
            key = f.key
            del f, arr
            _wait_released(client, key)
        result["scatter_seconds"] = [round(s, 4) for s in scatter_seconds]
        result["correct"] = ok
        if bulk:
            result["bulk_bytes_sent_by_worker0"] = bulk
    except Exception as e:
        result["error"] = common.report_error(f"{args.impl} client", e)
    finally:
        if client is not None:
            with contextlib.suppress(Exception):
                client.close()
    common.write_json(args.out, result)
    return 0


# ---------------------------------------------------------------------- the orchestrator (root namespace)
def interpreter(impl: str) -> str:
    if impl == "xsched":
        py = os.path.join(REPO, ".venv", "bin", "python")
        return py if os.path.exists(py) else sys.executable
    py = os.path.join(REPO, ".venv-dask", "bin", "python")
    if not os.path.exists(py):
        raise RuntimeError("no .venv-dask: run `make bench-env` first")
    return py


def _tail(path: str, n: int = 3000) -> str:
    try:
        with open(path, "rb") as f:
            return f.read()[-n:].decode(errors="replace")
    except OSError:
        return ""


class Run:
    """The processes of one implementation's cluster, started in the hosts, logs in ``logs``."""

    def __init__(self, hosts, logs: str):
        self.hosts, self.logs, self.procs, self.servers = hosts, logs, {}, {}

    def start(self, host, label: str, argv, server: bool = True) -> subprocess.Popen:
        # the xsched processes keep their runtime files (scheduler registry) in our tmpdir
        env = dict(os.environ, PYTHONUNBUFFERED="1",
                   XSCHED_RUNTIME_DIR=os.path.join(self.hosts.tmpdir(), "runtime"))
        with open(os.path.join(self.logs, f"{label}.log"), "wb") as log:
            p = host.popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=REPO)
        self.procs[label] = p
        if server:
            self.servers[label] = p
        return p

    def check_alive(self) -> None:
        """Fail early (with its log) if a scheduler or worker died."""
        for label, p in self.servers.items():
            if p.poll() is not None:
                raise RuntimeError(f"{label} exited with {p.returncode}:\n{_tail(os.path.join(self.logs, label + '.log'))}")

    def wait_for_file(self, path: str, timeout: float = 60) -> dict:
        """Poll (deadline) until ``path`` holds a JSON object with an address, failing early
        if a server died."""
        deadline = time.monotonic() + timeout
        while True:
            self.check_alive()
            with contextlib.suppress(OSError, ValueError):
                with open(path) as f:
                    info = json.load(f)
                if info.get("address"):
                    return info
            if time.monotonic() > deadline:
                raise TimeoutError(f"{path} not written within {timeout}s")
            time.sleep(0.02)

    def wait_client(self, proc, out: str, timeout: float) -> dict:
        deadline = time.monotonic() + timeout
        while proc.poll() is None:
            self.check_alive()
            if time.monotonic() > deadline:
                raise TimeoutError(f"the client did not finish within {timeout}s")
            time.sleep(0.05)
        if not os.path.exists(out):
            raise RuntimeError(f"the client exited with {proc.returncode} without a result")
        with open(out) as f:
            return json.load(f)

    def dump_logs(self) -> None:
        for label in self.procs:
            print(f"--- {label}.log ---\n{_tail(os.path.join(self.logs, label + '.log'))}", file=sys.stderr)


def bench_impl(impl: str, args, capture_too: bool = False) -> dict:
    from tests.support.netns import Hosts, capture

    py = interpreter(impl)
    result: dict = {"impl": impl}
    with Hosts(2, grace=10) as hosts:
        a, b = hosts
        tmp = hosts.tmpdir()
        logs = args.logs and os.path.join(args.logs, impl)
        if logs:
            os.makedirs(logs, exist_ok=True)
        run = Run(hosts, logs or tmp)
        sched_file = os.path.join(tmp, "scheduler.json")
        try:
            if impl == "xsched":
                run.start(a, "scheduler", [py, "-m", "xsched.cli", "scheduler", "--host", a.ip, "--port", "0",
                                           "--scheduler-file", sched_file])
                run.wait_for_file(sched_file)
                for i, h in enumerate((a, b)):
                    d = os.path.join(tmp, f"w{i}")
                    os.makedirs(d)
                    run.start(h, f"worker{i}", [py, "-m", "xsched.cli", "worker", "--scheduler-file", sched_file,
                                                "--host", h.ip, "--nthreads", "1", "--name", f"w{i}", "--no-nanny",
                                                "--local-directory", d])
            else:
                run.start(a, "scheduler", [py, "-m", "distributed.cli.dask_scheduler", "--host", a.ip, "--port", "0",
                                           "--scheduler-file", sched_file, "--no-dashboard"])
                run.wait_for_file(sched_file)
                for i, h in enumerate((a, b)):
                    d = os.path.join(tmp, f"w{i}")
                    os.makedirs(d)
                    run.start(h, f"worker{i}", [py, "-m", "distributed.cli.dask_worker", "--scheduler-file", sched_file,
                                                "--host", h.ip, "--nthreads", "1", "--name", f"w{i}", "--no-nanny",
                                                "--no-dashboard", "--local-directory", d])

            def client(label: str, warmup: int, repeats: int) -> dict:
                out = os.path.join(tmp, f"{label}.json")
                proc = run.start(b, label, [py, os.path.abspath(__file__), "client", "--impl", impl,
                                            "--scheduler-file", sched_file, "--a-ip", a.ip, "--b-ip", b.ip,
                                            "--mib", args.mib, "--warmup", warmup, "--repeats", repeats,
                                            "--out", out], server=False)
                r = run.wait_client(proc, out, args.timeout)
                if r.get("error"):
                    raise RuntimeError(r["error"])
                return r

            r = client("client", 1, args.repeats)
            result.update(r)
            rates = [args.mib / s for s in r["transfer_seconds"]]
            result.update({"transfer_mib": args.mib, "repeats": args.repeats,
                           "mib_per_s_median": common.median(rates), "mib_per_s_min": min(rates),
                           "mib_per_s_max": max(rates)})
            if capture_too:
                with capture(b, snaplen=0) as cap:
                    rc = client("capture-client", 0, 1)  # one more transfer, untimed
                found = cap.count(PATTERN)
                stats = cap.stats()
                result["capture"] = {
                    "transfer_seconds": rc["transfer_seconds"][0], "frames": stats.get("frames"),
                    "captured_mib": round(stats.get("bytes", 0) / 2**20, 1),
                    "kernel_drops": stats.get("kernel_drops"), "truncated_frames": stats.get("truncated"),
                    "pattern_hits": found,
                    "plaintext_fraction_of_array": round(found * len(PATTERN) / (args.mib * 2**20), 4),
                    "plaintext_seen": found > 0,
                }
        except Exception as e:
            result["error"] = common.report_error(f"{impl} two-host run", e)
            run.dump_logs()
    return result


def describe(r: dict) -> str:
    if r.get("error"):
        return f"{r['impl']:<6}  {r['error']}"
    mech = r.get("mechanism", {})
    if r["impl"] == "xsched":
        zm = mech.get("client_zmq_mechanism")
        m = f"client's ZeroMQ socket: {'/'.join(zm) if zm else 'unknown'} (comm.security {mech.get('mode')})"
        if "to_worker0" in mech:
            m += f", to worker 0: {mech['to_worker0']}"
        if "bulk_encrypted_from_worker0" in mech:
            m += f", bulk encrypted: {mech['bulk_encrypted_from_worker0']}"
        bulk = r.get("bulk_bytes_sent_by_worker0") or []
        if any(bulk):
            m += f", bulk side channel used ({bulk[-1] / 2**20:.0f} MiB per transfer)"
        elif bulk:
            m += ", no bulk side channel"
    else:
        m = (f"{mech.get('scheme_worker0')}:// between workers, require_encryption="
             f"{mech.get('require_encryption')}")
    line = (f"{r['impl']:<6}  {r['transfer_mib']} MiB A->B: median {r['mib_per_s_median']:,.0f} MiB/s "
            f"(min {r['mib_per_s_min']:,.0f}, max {r['mib_per_s_max']:,.0f}; {r['repeats']} transfers in "
            f"{r.get('rounds', 1)} rounds, round medians {', '.join(f'{m:,.0f}' for m in r.get('round_medians', []))}; "
            f"correct={r['correct']}); {m}")
    if "scatter_mib_per_s_median" in r:
        line += (f"; scatter B->A: median {r['scatter_mib_per_s_median']:,.0f} MiB/s "
                 f"(min {r['scatter_mib_per_s_min']:,.0f}, max {r['scatter_mib_per_s_max']:,.0f})")
    c = r.get("capture")
    if c:
        line += (f"; capture on B: pattern in clear {c['pattern_hits']:,} times "
                 f"({c['plaintext_fraction_of_array']:.1%} of the array), {c['frames']:,} frames / "
                 f"{c['captured_mib']} MiB captured, {c['kernel_drops']} dropped")
    return line


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command")
    cp = sub.add_parser("client", help="(internal) the client, run inside host B")
    cp.add_argument("--impl", choices=common.IMPLS, required=True)
    cp.add_argument("--scheduler-file", required=True)
    cp.add_argument("--a-ip", required=True)
    cp.add_argument("--b-ip", required=True)
    cp.add_argument("--mib", type=int, required=True)
    cp.add_argument("--warmup", type=int, default=1)
    cp.add_argument("--repeats", type=int, required=True)
    cp.add_argument("--out", required=True)
    p.add_argument("--impl", action="append", choices=common.IMPLS,
                   help="xsched and/or dask (repeatable; default: both, dask if .venv-dask exists)")
    p.add_argument("--mib", type=int, default=256, help="array size (default 256)")
    p.add_argument("--repeats", type=int, default=5, help="timed repeats after one warm-up (default 5)")
    p.add_argument("--rounds", type=int, default=3,
                   help="fresh clusters per implementation, taking turns (default 3)")
    p.add_argument("--capture", action="store_true", help="one more transfer, captured on B: plaintext seen?")
    p.add_argument("--quick", action="store_true", help="32 MiB x 3: a smoke check")
    p.add_argument("--json", action="store_true", help="print one JSON dict")
    p.add_argument("--timeout", type=float, default=600, help="per client run (s)")
    p.add_argument("--logs", default=None, help="keep every process's output under this directory")
    args = p.parse_args(argv)
    if args.command == "client":
        return client_main(args)

    sys.path.insert(0, REPO)  # tests/support/netns.py
    from tests.support.netns import netns_available

    reason = netns_available()
    if reason:
        print(f"twohost: {reason}", file=sys.stderr)
        return 2
    if args.quick:
        args.mib, args.repeats, args.rounds = 32, 3, 1
    impls = args.impl or ["xsched"] + (["dask"] if os.path.exists(os.path.join(REPO, ".venv-dask", "bin", "python"))
                                       else [])

    # SIGTERM/SIGHUP unwind like Ctrl-C (so every Hosts cleans up); after the first, further
    # signals are ignored so that the cleanup itself is not interrupted.
    def interrupted(signum, frame):
        for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(s, signal.SIG_IGN)
        raise KeyboardInterrupt(f"signal {signum}")

    for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(s, interrupted)

    out = {"benchmark": "twohost", "transfer_mib": args.mib, "repeats": args.repeats, "rounds": args.rounds,
           "capture": args.capture,
           "topology": "A 10.213.0.1: scheduler + worker 0; B 10.213.0.2: worker 1 + client (netns + bridge)",
           **common.environment(), "results": {}}
    rounds: dict = {impl: [] for impl in impls}
    try:
        for rnd in range(args.rounds):  # the implementations take turns: drift of the machine hits both
            for impl in impls:
                try:
                    r = bench_impl(impl, args, capture_too=args.capture and rnd == 0)
                except Exception as e:
                    r = {"impl": impl, "error": common.report_error(f"{impl} two-host run", e)}
                rounds[impl].append(r)
        for impl in impls:
            out["results"][impl] = r = combine(rounds[impl], args)
            if not args.json:
                print(describe(r), flush=True)
    except KeyboardInterrupt as e:  # the hosts have been cleaned up on the way out
        print(f"twohost: interrupted ({e or 'Ctrl-C'}); every process and namespace removed", file=sys.stderr)
        return 130
    if args.json:
        print(json.dumps(out, default=str), flush=True)
    return 0


def combine(runs: list[dict], args) -> dict:
    """One implementation's rounds as one result: rates over every timed transfer of every
    round (the first error, if any round failed), plus each round's median."""
    failed = [r for r in runs if r.get("error")]
    if failed:
        return failed[0]
    r = dict(runs[0])
    seconds = [s for run in runs for s in run["transfer_seconds"]]
    rates = [args.mib / s for s in seconds]
    r.update({"transfer_seconds": seconds, "repeats": len(seconds), "rounds": len(runs),
              "correct": all(run["correct"] for run in runs),
              "mib_per_s_median": common.median(rates), "mib_per_s_min": min(rates), "mib_per_s_max": max(rates),
              "round_medians": [run["mib_per_s_median"] for run in runs]})
    scatter = [args.mib / s for run in runs for s in run.get("scatter_seconds", [])]
    if scatter:
        r.update({"scatter_mib_per_s_median": common.median(scatter), "scatter_mib_per_s_min": min(scatter),
                  "scatter_mib_per_s_max": max(scatter)})
    return r


if __name__ == "__main__":
    sys.exit(main())
