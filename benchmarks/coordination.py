"""Coordination primitives: round trips through the scheduler, xsched beside dask.distributed.

    python benchmarks/coordination.py [--impl all|xsched|dask] [--json] [--quick] [-n N]

(a) lock:  median microseconds of one ``Lock.acquire()`` + ``Lock.release()`` from the client
           (two requests answered by the scheduler), over N pairs after a warm-up
(b) queue: median microseconds of one ``Queue.put(small value)`` + ``Queue.get()``, over N pairs
(c) multilock: median microseconds of one ``MultiLock([a, b]).acquire()`` + ``release()`` (two
           names in one request each way), over N pairs; measured after (a) and (b)
(d) actor: median microseconds of one ``counter.increment().result()`` on an actor in the
           worker (``client.submit(Counter, actor=True)``): client -> worker and back, no
           scheduler; over N calls, and the counter checked to have counted every one

All from a synchronous client in this process, on a LocalCluster of one worker process
(the figures of (a)-(c) involve only the client and the scheduler, those of (d) only the
client and the worker). ``--impl all`` (the default) runs
each implementation in a subprocess of its own, one after the other: xsched under this
interpreter, dask.distributed under ``.venv-dask/bin/python`` when it exists (dask is
never imported by xsched), and prints one table. Printed figures, never asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)


def primitives(impl: str):
    """(Lock, Queue, MultiLock) of one implementation."""
    if impl == "xsched":
        from xsched import Lock, MultiLock, Queue
    else:
        from distributed import Lock, MultiLock, Queue
    return Lock, Queue, MultiLock


def _median_us(times: list[float]) -> float:
    return common.median(times) * 1e6


def _timed(step, n: int, warmup: int, what: str) -> list[float]:
    """Seconds of each of ``n`` calls of ``step(i)`` after ``warmup`` untimed ones; ``step``
    returns whether the call did what it should (else this raises, naming ``what``)."""
    times = []
    for i in range(warmup + n):
        t0 = time.perf_counter()
        ok = step(i)
        dt = time.perf_counter() - t0
        if not ok:
            raise RuntimeError(f"{what} went wrong at call {i}")
        if i >= warmup:
            times.append(dt)
    return times


def _figures(prefix: str, times: list[float]) -> dict:
    return {f"{prefix}_us_median": _median_us(times), f"{prefix}_us_p90": sorted(times)[int(0.9 * len(times))] * 1e6}


def _acquire_release(lock) -> bool:
    ok = lock.acquire()
    lock.release()
    return ok


def bench_lock(Lock, client, n: int, warmup: int) -> dict:
    name = f"bench-lock-{uuid.uuid4().hex[:8]}"
    # (dask's Lock takes no client: it uses the default one, which common.start made)
    lock = Lock(name, client=client) if client.__module__.startswith("xsched") else Lock(name)
    times = _timed(lambda i: _acquire_release(lock), n, warmup, "acquire on a free lock")
    return {"lock_pairs": n, **_figures("lock_acquire_release", times)}


def bench_queue(Queue, client, n: int, warmup: int) -> dict:
    q = Queue(f"bench-queue-{uuid.uuid4().hex[:8]}", client=client)

    def put_get(i) -> bool:
        q.put({"i": i})
        return q.get() == {"i": i}

    times = _timed(put_get, n, warmup, "a queue's put and get")
    return {"queue_pairs": n, **_figures("queue_put_get", times)}


def bench_multilock(MultiLock, client, n: int, warmup: int) -> dict:
    tag = uuid.uuid4().hex[:8]
    lock = MultiLock([f"bench-multi-a-{tag}", f"bench-multi-b-{tag}"], client=client)
    times = _timed(lambda i: _acquire_release(lock), n, warmup, "acquire on free locks")
    return {"multilock_pairs": n, **_figures("multilock_acquire_release", times)}


class Counter:
    """The actor of (d)."""

    def __init__(self):
        self.n = 0

    def increment(self):
        self.n += 1
        return self.n


def bench_actor(client, n: int, warmup: int) -> dict:
    counter = client.submit(Counter, actor=True).result()
    times = _timed(lambda i: counter.increment().result() == i + 1, n, warmup, "the actor's count")
    return {"actor_calls": n, **_figures("actor_call", times)}


def measure(impl: str, n: int, quick: bool) -> dict:
    ns = common.load_impl(impl)
    Lock, Queue, MultiLock = primitives(impl)
    result = {"benchmark": "coordination", "impl": ns.name, "version": ns.version, "quick": quick,
              "workers": "1 x 1 thread (process)", **common.environment()}
    cluster = client = None
    warmup = max(10, n // 10)
    try:
        cluster, client, _ = common.start(ns, n_workers=1, threads_per_worker=1)
        for name, step in (("lock", lambda: bench_lock(Lock, client, n, warmup)),
                           ("queue", lambda: bench_queue(Queue, client, n, warmup)),
                           ("multilock", lambda: bench_multilock(MultiLock, client, n, warmup)),
                           ("actor", lambda: bench_actor(client, n, warmup))):
            try:
                result.update(step())
            except Exception as e:  # report the figure as an error, keep measuring the other
                result[f"{name}_error"] = common.report_error(f"{ns.name} {name}", e)
    except Exception as e:
        result["error"] = common.report_error(f"{ns.name} cluster", e)
    finally:
        common.stop(cluster, client)
    return result


def run_all(n: int, quick: bool, as_json: bool) -> int:
    """Each implementation in its own subprocess, one after the other; one table."""
    pythons = {"xsched": sys.executable}
    dask_py = os.path.join(REPO, ".venv-dask", "bin", "python")
    if os.path.exists(dask_py):
        pythons["dask"] = dask_py
    rows = []
    for impl, py in pythons.items():
        cmd = [py, os.path.abspath(__file__), "--impl", impl, "--json", "-n", str(n)] + (["--quick"] if quick else [])
        proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=600)
        figures = None
        for line in reversed(proc.stdout.splitlines()):
            if line.startswith("{"):
                figures = json.loads(line)
                break
        if figures is None:
            figures = {"impl": impl, "error": f"error: exit code {proc.returncode}: {proc.stderr.strip()[-300:]}"}
        rows.append(figures)
    if as_json:
        for r in rows:
            print(json.dumps(r, default=str))
        return 0

    def cell(r, key):
        v = r.get(key)
        return f"{v:,.0f}" if isinstance(v, (int, float)) else (r.get("error") or r.get(key.split("_")[0] + "_error")
                                                                 or "n/a")

    print(f"Coordination round trips from a synchronous client, median (p90) over {n} pairs "
          f"(`python benchmarks/coordination.py -n {n}`)\n")
    print("| implementation | lock acquire + release, µs | queue put + get, µs | "
          "MultiLock of two acquire + release, µs | actor call, µs |")
    print("|---|---|---|---|---|")
    for r in rows:
        label = f"xsched {r['version']}" if r.get("impl") == "xsched" and r.get("version") else (
            r.get("version") or r.get("impl"))
        print(f"| {label} | {cell(r, 'lock_acquire_release_us_median')} "
              f"({cell(r, 'lock_acquire_release_us_p90')}) | {cell(r, 'queue_put_get_us_median')} "
              f"({cell(r, 'queue_put_get_us_p90')}) | {cell(r, 'multilock_acquire_release_us_median')} "
              f"({cell(r, 'multilock_acquire_release_us_p90')}) | {cell(r, 'actor_call_us_median')} "
              f"({cell(r, 'actor_call_us_p90')}) |")
    if "dask" not in pythons:
        print("\n(dask.distributed: no .venv-dask/bin/python here; `make bench-env` creates it)")
    return 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--impl", choices=("all", "xsched", "dask"), default="all")
    p.add_argument("--json", action="store_true", help="print JSON lines (for run_all.py)")
    p.add_argument("--quick", action="store_true", help="100 pairs: a smoke check of a few seconds")
    p.add_argument("-n", type=int, default=None, help="pairs measured (default 1000, --quick 100)")
    args = p.parse_args(argv)
    n = args.n or (100 if args.quick else 1000)
    if args.impl == "all":
        return run_all(n, args.quick, args.json)
    common.emit(measure(args.impl, n, args.quick), args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
