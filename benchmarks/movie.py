"""Seed 000, the HDF5 movie reduction: wall time and per-worker peak memory.

    python benchmarks/movie.py --impl xsched|dask|multiprocessing
                                     [--variant fused|unfused|delayed|futures|all] [--data DIR] [--quick] [--json]

A (2000, 512, 512) float32 movie (2 GB, HDF5, 100-frame chunks; created once under
--data, default /tmp/xsched-bench-data) is reduced chunk by chunk: read 100 frames ->
sum each 10 frames into one image (``sum_sub_stacks``) -> analyse each image
(``get_info``) -> a small list of dicts. 2 workers x 1 thread, memory_limit="1GB" each.

Variants (the ways a user writes it):
  fused     the seed's code as written: from_array(h5py dataset, chunks=(100,-1,-1))
            .map_blocks(sum_sub_stacks) .to_delayed() -> delayed(get_info) -> client.compute(sync=True)
  unfused   the same with fusion off: to_delayed(optimize_graph=False), compute(optimize_graph=False)
  delayed   a plain delayed chain per chunk: read_chunk(path, i) -> sum_sub_stacks -> get_info
  futures   a chain of client.submit futures per chunk (only the last one kept)
--impl multiprocessing: the same by hand with multiprocessing.Pool(2).imap over chunk
indices (each pool process opens the file once), the practical limit for wall time.

Memory: the benchmark process samples each worker process's RSS every 20 ms (psutil, by
the PIDs from ``client.run(os.getpid)``). Idle RSS is taken after a warm-up that imports
numpy/h5py and runs the functions on tiny inputs in every worker. Ideal above idle, per
worker: one 100-frame chunk plus its 10 summed images. Figures are printed, never asserted.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import h5py
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

DSET = "/entry/data/raw_counts"
CHUNK = 100      # frames per chunk (and per HDF5 chunk)
SUB = 10         # frames summed into one image
VARIANTS = ("fused", "unfused", "delayed", "futures")


# ---------------------------------------------------------------------- the seed's functions (run on workers)
def sum_sub_stacks(mov):
    # aggregation function (seed 000, as written)
    sub_stk = []
    for k in range(mov.shape[0] // 10):
        sub_stk.append(mov[k * 10:k * 10 + 10, ...].sum(axis=0, keepdims=True))
    return np.concatenate(sub_stk)


def get_info(mov):
    # reduction function (seed 000), made a little more expensive so the CPUs are busy;
    # identical for every implementation
    results = []
    for frame in mov:
        spectrum = np.abs(np.fft.rfft2(frame))
        gy, gx = np.gradient(frame)
        results.append({
            "sum": float(frame.sum()),
            "variance": float(frame.var()),
            "max": float(frame.max()),
            "argmax": int(frame.argmax()),
            "p99": float(np.percentile(frame, 99)),
            "spectral_peak": float(spectrum[1:, 1:].max()),
            "edge_energy": float(np.hypot(gx, gy).mean()),
        })
    return results


def read_chunk(path, i, chunk=CHUNK):
    with h5py.File(path, "r") as f:
        return f[DSET][i * chunk:(i + 1) * chunk]


def warm_up(path, array_module=None):
    """Import and touch everything a task will use, on tiny inputs, so idle RSS is honest.

    That includes the implementation's array module (xsched.array, dask.array), which a
    worker imports once, with its first array task, and keeps for its lifetime.
    """
    if array_module:
        import importlib

        importlib.import_module(array_module)
    with h5py.File(path, "r") as f:
        small = f[DSET][0:SUB, 0:64, 0:64]
    get_info(sum_sub_stacks(small))
    import gc

    gc.collect()
    return os.getpid()



def dask_spilled(dask_worker):
    """Cumulative disk writes of a dask worker's SpillBuffer (count, bytes)."""
    m = getattr(dask_worker.data, "cumulative_metrics", None) or {}
    return {"count": int(m.get(("disk-write", "count"), 0)), "bytes": int(m.get(("disk-write", "bytes"), 0))}


# ---------------------------------------------------------------------- multiprocessing (the practical limit)
_MP = {}


def _mp_init(path, barrier):
    _MP["file"] = h5py.File(path, "r")
    _MP["barrier"] = barrier
    warm_up(path)


def _mp_sync(_):
    _MP["barrier"].wait(timeout=120)  # each of the 2 pool processes takes exactly one
    return os.getpid()


def _mp_chunk(i):
    mov = _MP["file"][DSET][i * CHUNK:(i + 1) * CHUNK]
    return get_info(sum_sub_stacks(mov))


# ---------------------------------------------------------------------- data
def movie_shape(quick: bool):
    return (400, 512, 512) if quick else (2000, 512, 512)


def ensure_movie(data_dir: str, shape) -> str:
    """Create the movie once (atomically), return its path."""
    os.makedirs(data_dir, exist_ok=True)
    path = os.path.join(data_dir, f"movie-{'x'.join(map(str, shape))}-c{CHUNK}.h5")
    if os.path.exists(path):
        return path
    tmp = f"{path}.tmp-{os.getpid()}"
    rng = np.random.default_rng(0)
    t0 = time.perf_counter()
    try:
        with h5py.File(tmp, "w") as f:
            d = f.create_dataset(DSET, shape=shape, dtype="f4", chunks=(CHUNK,) + tuple(shape[1:]))
            for start in range(0, shape[0], CHUNK):
                n = min(CHUNK, shape[0] - start)
                d[start:start + n] = rng.random((n,) + tuple(shape[1:]), dtype=np.float32) * 1000
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
    print(f"created {path} ({os.path.getsize(path) / 1e9:.2f} GB) in {time.perf_counter() - t0:.1f}s",
          file=sys.stderr)
    return path


def warm_page_cache(path: str) -> float:
    """Read the file once so every implementation starts from the same (cached) state."""
    t0 = time.perf_counter()
    buf = bytearray(64 * 2**20)
    with open(path, "rb", buffering=0) as f:
        while f.readinto(buf):
            pass
    return time.perf_counter() - t0


# ---------------------------------------------------------------------- the pipeline, per variant
def run_variant(ns, client, variant: str, path: str, nchunks: int):
    delayed = ns.delayed
    if variant in ("fused", "unfused"):
        opt = variant == "fused"
        fh = h5py.File(path, "r")
        try:
            # 1: get the movie
            movie = ns.array.from_array(fh[DSET], chunks=(CHUNK, -1, -1))
            # 2: sum sub-stacks within movie
            movie_aggregated = movie.map_blocks(sum_sub_stacks, chunks=(SUB,) + movie.chunks[1:], dtype=movie.dtype)
            # 3: create and run reduction tasks
            if opt:
                tasks = [delayed(get_info)(chk) for chk in movie_aggregated.to_delayed().ravel()]
                return client.compute(tasks, sync=True)
            tasks = [delayed(get_info)(chk) for chk in movie_aggregated.to_delayed(optimize_graph=False).ravel()]
            return client.compute(tasks, sync=True, optimize_graph=False)
        finally:
            fh.close()
    if variant == "delayed":
        tasks = [delayed(get_info)(delayed(sum_sub_stacks)(delayed(read_chunk)(path, i))) for i in range(nchunks)]
        return client.compute(tasks, sync=True)
    if variant == "futures":
        finals = []
        for i in range(nchunks):
            raw = client.submit(read_chunk, path, i, pure=False)
            summed = client.submit(sum_sub_stacks, raw, pure=False)
            finals.append(client.submit(get_info, summed, pure=False))
            del raw, summed  # keep only the small results: intermediates can be freed
        return client.gather(finals)
    raise ValueError(variant)


def summarise(results, nchunks: int) -> dict:
    images = [r for chunk in results for r in chunk]
    ok = len(results) == nchunks and len(images) == nchunks * CHUNK // SUB
    return {"images": len(images), "correct_shape": ok,
            "checksum": round(sum(r["sum"] for r in images) / 1e6, 3) if images else None}


def memory_figures(idle: dict, sampler, names: dict, ideal: int) -> dict:
    """Per worker: idle RSS, peak RSS (sampled every 20 ms, and the kernel's exact VmHWM where
    available), peak above idle and its ratio to the ideal (from the larger of the two peaks)."""
    per = {}
    for pid, base in idle.items():
        sampled = sampler.peak[pid]
        hwm = sampler.hwm.get(pid)
        peak = max(sampled, hwm or 0)
        per[names[pid]] = {"pid": pid, "idle_mb": round(base / 1e6, 1),
                           "sampled_peak_above_idle_mb": round((sampled - base) / 1e6, 1),
                           "hwm_peak_above_idle_mb": round((hwm - base) / 1e6, 1) if hwm else None,
                           "peak_above_idle_mb": round((peak - base) / 1e6, 1),
                           "ratio": round((peak - base) / ideal, 3)}
    return {"workers": dict(sorted(per.items())),
            "ratio_max": max(w["ratio"] for w in per.values()) if per else None}


def measure_cluster(ns, variant: str, path: str, shape, memory_limit: str) -> dict:
    nchunks = shape[0] // CHUNK
    ideal = CHUNK * shape[1] * shape[2] * 4 + SUB * shape[1] * shape[2] * 4
    out = {"variant": variant, "ideal_mb": round(ideal / 1e6, 1)}
    cluster = client = None
    try:
        cluster, client, addrs = common.start(ns, n_workers=2, threads_per_worker=1, memory_limit=memory_limit)
        pids = warm_up_workers(client, addrs, path, ns.array.__name__)
        names = {pid: f"w{addrs.index(a)}" for a, pid in pids.items()}
        time.sleep(0.2)
        idle = common.idle_rss(pids.values())
        t0 = time.perf_counter()
        with common.RSSSampler(pids.values(), interval=0.02) as sampler:
            try:
                results = run_variant(ns, client, variant, path, nchunks)
            except Exception as e:  # e.g. dask: "h5py objects cannot be pickled"
                out["error"] = common.report_error(f"{ns.name} {variant}", e)
                results = None
            wall = time.perf_counter() - t0
        if sampler.errors:
            out["worker_died"] = {names[p]: e for p, e in sampler.errors.items()}
        if results is not None:  # figures of a run that failed would mean nothing
            out["wall_seconds"] = wall
            out["rss_samples"] = sampler.samples
            out.update(memory_figures(idle, sampler, names, ideal))
            out.update(summarise(results, nchunks))
        out["spilled"] = spill_report(ns, client, addrs)
    except Exception as e:
        out["error"] = out.get("error") or common.report_error(f"{ns.name} {variant} (cluster)", e)
    finally:
        common.stop(cluster, client)
    return out


def warm_up_workers(client, addrs, path, array_module=None) -> dict:
    """Run ``warm_up`` once on every worker as a pinned task: {address: pid}.

    Run as pinned tasks, so the warm-up also goes through each worker's task path.
    """
    futs = {a: client.submit(warm_up, path, array_module, workers=[a], pure=False, allow_other_workers=False)
            for a in addrs}
    pids = {a: f.result(timeout=120) for a, f in futs.items()}
    del futs
    assert pids == client.run(os.getpid), "warm-up tasks did not run where they were pinned"
    return pids


def spill_report(ns, client, addrs):
    """What the implementation says it spilled: {worker: {"count", "bytes"}} or a note."""
    try:
        if ns.name == "dask":
            got = client.run(dask_spilled)
            return {f"w{addrs.index(a)}": v for a, v in got.items()}
        time.sleep(0.6)  # one heartbeat, so the scheduler's figures are current
        info = client.scheduler_info()["workers"]
        return {f"w{addrs.index(a)}": {"count": int(w["memory"].get("spilled_count", 0)),
                                       "bytes": int(w["memory"].get("spilled", 0))} for a, w in info.items()}
    except Exception as e:
        return common.error_text(e)


def measure_multiprocessing(path: str, shape) -> dict:
    import multiprocessing as mp

    nchunks = shape[0] // CHUNK
    ideal = CHUNK * shape[1] * shape[2] * 4 + SUB * shape[1] * shape[2] * 4
    out = {"variant": "pool-imap", "ideal_mb": round(ideal / 1e6, 1)}
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(2)
    pool = ctx.Pool(2, initializer=_mp_init, initargs=(path, barrier))
    try:
        pids = sorted(pool.map(_mp_sync, range(2), chunksize=1))
        names = {pid: f"p{i}" for i, pid in enumerate(pids)}
        time.sleep(0.2)
        idle = common.idle_rss(pids)
        t0 = time.perf_counter()
        with common.RSSSampler(pids, interval=0.02) as sampler:
            results = list(pool.imap(_mp_chunk, range(nchunks)))
            wall = time.perf_counter() - t0
        out["wall_seconds"] = wall
        out["rss_samples"] = sampler.samples
        out.update(memory_figures(idle, sampler, names, ideal))
        out.update(summarise(results, nchunks))
        out["spilled"] = "n/a"
    finally:
        pool.close()
        pool.join()
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--impl", choices=common.IMPLS + ("multiprocessing",), required=True)
    p.add_argument("--variant", choices=VARIANTS + ("all",), default="all",
                   help="how the pipeline is written (ignored for --impl multiprocessing)")
    p.add_argument("--data", default="/tmp/xsched-bench-data", help="where the movie is created once and kept")
    p.add_argument("--quick", action="store_true", help="a (400, 512, 512) movie (full-size chunks, 4 of them): a smoke check")
    p.add_argument("--prepare", action="store_true", help="only create the movie file (if missing) and exit")
    p.add_argument("--json", action="store_true", help="print one JSON line (for run_all.py)")
    args = p.parse_args(argv)

    shape = movie_shape(args.quick)
    path = ensure_movie(args.data, shape)
    if args.prepare:
        print(path)
        return 0
    memory_limit = "1GB"
    if args.impl == "multiprocessing":
        name, version = "multiprocessing", f"Pool(2).imap, python {sys.version.split()[0]}"
    else:
        ns = common.load_impl(args.impl)
        name, version = ns.name, ns.version
    pool = args.impl == "multiprocessing"
    result = {"benchmark": "movie", "impl": name, "version": version, "quick": args.quick,
              "shape": list(shape), "chunk_frames": CHUNK, "file": path,
              "memory_limit": "none" if pool else memory_limit,
              "workers": "Pool(2) processes" if pool else "2 x 1 thread (processes)", **common.environment()}
    result["page_cache_warm_seconds"] = warm_page_cache(path)
    if args.impl == "multiprocessing":
        result["runs"] = [measure_multiprocessing(path, shape)]
    else:
        variants = VARIANTS if args.variant == "all" else (args.variant,)
        result["runs"] = [measure_cluster(ns, v, path, shape, memory_limit) for v in variants]
    if args.json:
        common.emit(result, True)
    else:
        head = {k: v for k, v in result.items() if k != "runs"}
        common.emit(head, False)
        for run in result["runs"]:
            print()
            common.emit(run, False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
