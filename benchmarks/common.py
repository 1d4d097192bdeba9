"""Client-side helpers shared by the benchmark scripts (never shipped to workers).

Functions that run *on workers* live in each script itself (defined in ``__main__``,
so cloudpickle ships them by value); this module is imported only by the process that
drives a benchmark, under either interpreter (xsched's .venv or .venv-dask).

``load_impl("xsched" | "dask")`` is the tiny adapter: both libraries expose the same
names (Client, LocalCluster, delayed, wait, an array module), so the benchmark code
is written once and does the same work on both. dask is imported only here, and only
when asked for.
"""

from __future__ import annotations

import contextlib

import json
import os
import platform
import statistics
import sys
import threading
import time
import traceback
from types import SimpleNamespace

import psutil

IMPLS = ("xsched", "dask", "ray")  # ray: engine.py only, in its own API


def load_impl(name: str) -> SimpleNamespace:
    """The names a benchmark needs from one implementation, plus its LocalCluster defaults."""
    if name == "xsched":
        import compileall

        import xsched

        # Byte-compiled first, as an installed package is (the peers' venvs come compiled):
        # a source tree run without its .pyc files (PYTHONDONTWRITEBYTECODE) compiles every
        # module anew in each worker process, 0.1 s of a first array job's 0.4 s here.
        compileall.compile_dir(os.path.dirname(xsched.__file__), quiet=1)
        import xsched.array as xarray
        from xsched import Client, LocalCluster, delayed, wait

        return SimpleNamespace(
            name="xsched", version=xsched.__version__, Client=Client, LocalCluster=LocalCluster,
            delayed=delayed, wait=wait, array=xarray, cluster_kwargs={}, config=xsched.config,
        )
    if name == "dask":
        import dask
        import dask.array as darray
        import distributed
        from dask import delayed
        from distributed import Client, LocalCluster, wait

        # No dashboard for dask: its page needs bokeh, which its venv lacks (xsched serves
        # its own page, and its figures include that cost).
        return SimpleNamespace(
            name="dask", version=f"dask {dask.__version__}, distributed {distributed.__version__}",
            Client=Client, LocalCluster=LocalCluster, delayed=delayed, wait=wait, array=darray,
            cluster_kwargs={"dashboard_address": None}, config=dask.config,
        )
    raise SystemExit(f"unknown --impl {name!r}: expected one of {IMPLS}")


def start(ns: SimpleNamespace, n_workers: int, threads_per_worker: int = 1, **kwargs):
    """LocalCluster of worker processes and a Client on it: (cluster, client, sorted addresses)."""
    kw = dict(ns.cluster_kwargs)
    kw.update(kwargs)
    cluster = ns.LocalCluster(n_workers=n_workers, threads_per_worker=threads_per_worker, processes=True, **kw)
    try:
        client = ns.Client(cluster)
        client.wait_for_workers(n_workers, timeout=60)
        addrs = sorted(client.scheduler_info()["workers"])
    except BaseException:
        cluster.close()
        raise
    return cluster, client, addrs


def config_set(ns: SimpleNamespace, settings: dict):
    """The implementation's ``config.set`` of the ``settings`` that are not None (a context)."""
    settings = {k: v for k, v in settings.items() if v is not None}
    return ns.config.set(settings) if settings else contextlib.nullcontext()


def stop(cluster, client) -> None:
    """Close the client, then the cluster (every process it started)."""
    try:
        if client is not None:
            client.close()
    finally:
        if cluster is not None:
            cluster.close()


def environment() -> dict:
    import numpy

    return {
        "python": sys.version.split()[0], "numpy": numpy.__version__, "cpus": psutil.cpu_count(),
        "ram_gib": round(psutil.virtual_memory().total / 2**30, 1), "machine": platform.machine(),
        "load_avg_1m": round(os.getloadavg()[0], 2), "time": time.strftime("%Y-%m-%d %H:%M:%S"),
    }


def _one_line(exc: BaseException) -> str:
    msg = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {msg}" if msg else type(exc).__name__


def error_text(exc: BaseException, limit: int = 300) -> str:
    """``error: Type: first line`` for a figure that could not be measured, with the root
    cause of a chained exception (``... <- TypeError: h5py objects cannot be pickled``)."""
    text = _one_line(exc)
    root, seen = exc, {id(exc)}
    while True:
        nxt = root.__cause__ or root.__context__
        if nxt is None or id(nxt) in seen:
            break
        seen.add(id(nxt))
        root = nxt
    if root is not exc and _one_line(root) != text:
        text = f"{text} <- {_one_line(root)}"
    return "error: " + (text if len(text) <= limit else text[: limit - 3] + "...")


def report_error(where: str, exc: BaseException) -> str:
    """Print the full traceback to stderr (for the log) and return the short figure text."""
    print(f"--- {where} failed ---", file=sys.stderr)
    traceback.print_exception(type(exc), exc, exc.__traceback__, file=sys.stderr)
    return error_text(exc)


def write_json(path: str, obj) -> None:
    """Write ``obj`` as JSON to ``path`` atomically (a reader polling for it never sees half)."""
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(obj, f, default=str)
    os.replace(tmp, path)


def emit(result: dict, as_json: bool) -> None:
    """Print the figures: one JSON line (for run_all) or readable ``key: value`` lines."""
    sys.stdout.flush()
    if as_json:
        print(json.dumps(result, default=str), flush=True)
        return
    width = max(len(k) for k in result) if result else 0
    for k, v in result.items():
        if isinstance(v, float):
            v = f"{v:,.3f}"
        print(f"{k:<{width}}  {v}")


def median(xs):
    return statistics.median(xs) if xs else None


# ---------------------------------------------------------------------- process memory
def rss(pid: int) -> int:
    return psutil.Process(pid).memory_info().rss


def idle_rss(pids, duration: float = 0.3, interval: float = 0.02) -> dict:
    """Median RSS of each process over ``duration`` seconds (processes at rest)."""
    procs = {pid: psutil.Process(pid) for pid in pids}
    samples: dict[int, list[int]] = {pid: [] for pid in pids}
    end = time.perf_counter() + duration
    while True:
        for pid, p in procs.items():
            samples[pid].append(p.memory_info().rss)
        if time.perf_counter() >= end:
            break
        time.sleep(interval)
    return {pid: int(statistics.median(s)) for pid, s in samples.items()}


def reset_hwm(pid: int) -> bool:
    """Reset the kernel's peak-RSS mark of a process (Linux: ``5`` into /proc/PID/clear_refs)."""
    try:
        with open(f"/proc/{pid}/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def read_hwm(pid: int) -> int | None:
    """The kernel's peak RSS of a process since start or the last reset (VmHWM), in bytes."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def cpu_seconds(pid: int) -> float | None:
    """User plus system CPU a process has used, every thread (None once it is gone)."""
    try:
        t = psutil.Process(pid).cpu_times()
    except psutil.Error:
        return None
    return t.user + t.system


def measured_compute(client, pids, expr, check) -> dict:
    """``client.compute(expr)``: its wall time, each worker's peak RSS above its idle RSS
    (sampled every 20 ms, and the kernel's exact peak), each worker's CPU seconds over the
    computation (a job bound by CPU shows it: the cores' time, not waiting), and whether
    ``check(result)`` holds."""
    return measured(pids, lambda: client.compute(expr, sync=True), check)


def measured(pids, run, check) -> dict:
    """``run()``, a whole workflow (several computations, clients), measured as
    ``measured_compute`` measures one: wall time, the workers' peaks above idle and CPU
    seconds, and whether ``check`` holds for what ``run`` returned."""
    idle = idle_rss(pids)
    cpu0 = {pid: cpu_seconds(pid) for pid in pids}
    t0 = time.perf_counter()
    with RSSSampler(pids, interval=0.02) as sampler:
        result = run()
        wall = time.perf_counter() - t0
    cpu = [None if cpu0[p] is None or cpu_seconds(p) is None else cpu_seconds(p) - cpu0[p] for p in pids]
    peaks = {pid: max(sampler.peak[pid], sampler.hwm.get(pid) or 0) - idle[pid] for pid in pids}
    return {"wall_seconds": wall, "peak_above_idle_mb": [peaks[p] / 1e6 for p in pids],
            "worker_cpu_seconds": cpu, "workers_cpu_seconds": None if None in cpu else sum(cpu), "correct": bool(check(result)), "died": sampler.errors or None}


class RSSSampler:
    """Sample the RSS of some processes every ``interval`` seconds from a background thread.

    Also resets the kernel's peak-RSS mark (VmHWM) on entry and reads it on exit, an exact
    peak that sampling cannot miss (``hwm``: {pid: bytes or None where unavailable}).

    >>> with RSSSampler([os.getpid()]) as s:   # doctest: +SKIP
    ...     work()
    >>> s.peak                                 # {pid: sampled peak RSS in bytes}
    """

    def __init__(self, pids, interval: float = 0.02):
        self.pids = list(pids)
        self.interval = interval
        self.peak: dict[int, int] = {pid: 0 for pid in self.pids}
        self.samples = 0
        self.errors: dict[int, str] = {}
        self.hwm: dict[int, int | None] = {}
        self._hwm_reset: dict[int, bool] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="rss-sampler", daemon=True)

    def _run(self) -> None:
        procs = {pid: psutil.Process(pid) for pid in self.pids}
        while True:
            for pid, p in list(procs.items()):
                try:
                    r = p.memory_info().rss
                except psutil.Error as e:  # the process died: keep what we saw, say so
                    self.errors[pid] = f"{type(e).__name__}: {e}"
                    del procs[pid]
                    continue
                if r > self.peak[pid]:
                    self.peak[pid] = r
            self.samples += 1
            if self._stop.wait(self.interval):
                return

    def __enter__(self) -> "RSSSampler":
        self._hwm_reset = {pid: reset_hwm(pid) for pid in self.pids}
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self.hwm = {pid: read_hwm(pid) if self._hwm_reset.get(pid) else None for pid in self.pids}
