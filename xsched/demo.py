"""``make demo``: the seed-000 movie reduction on a LocalCluster, depth first.

Creates (once) a synthetic HDF5 movie larger than the workers' combined memory limit,
reads it in 100-frame chunks, sums every 10 frames into one image, analyses each image,
and keeps a small dict per image — the crystallographer's pipeline, written exactly as
with dask.array, with ``xsched.array`` and ``xsched.delayed`` instead. Prints a live
progress line, a few results, the wall time and each worker's peak memory.

    python -m xsched.demo [--frames 2000] [--size 512] [--data data/]
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time

import h5py
import numpy as np
import psutil

import xsched.array as xa
from xsched import Client, LocalCluster, as_completed, delayed
from xsched.units import format_bytes


def sum_sub_stacks(mov):
    """Sum every 10 consecutive frames into one image (the seed's aggregation)."""
    sub_stk = []
    for k in range(mov.shape[0] // 10):
        sub_stk.append(mov[k * 10:k * 10 + 10, ...].sum(axis=0, keepdims=True))
    return np.concatenate(sub_stk)


def get_info(mov):
    """The expensive per-image analysis; returns a small dict per image."""
    results = []
    for frame in mov:
        f64 = frame.astype(np.float64)
        results.append({
            "sum": float(f64.sum()),
            "variance": float(f64.var()),
            "max": float(f64.max()),
            "centre_of_mass": tuple(float(c) for c in _centre_of_mass(f64)),
        })
    return results


def _centre_of_mass(img):
    total = img.sum()
    ys, xs = np.indices(img.shape)
    return (ys * img).sum() / total, (xs * img).sum() / total


def make_movie(path: str, frames: int, size: int, chunk: int = 100) -> None:
    """Write a synthetic movie (float32 frames with a moving bright spot over noise)."""
    if os.path.exists(path):
        with h5py.File(path, "r") as f:
            if f["/entry/data/raw_counts"].shape == (frames, size, size):
                return
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    tmp = path + ".tmp"
    rng = np.random.default_rng(0)
    yy, xx = np.mgrid[0:size, 0:size].astype(np.float32)
    print(f"creating {path}: {frames} frames of {size}x{size} float32 "
          f"({format_bytes(frames * size * size * 4)}) ...", flush=True)
    with h5py.File(tmp, "w") as f:
        ds = f.create_dataset("/entry/data/raw_counts", shape=(frames, size, size), dtype="float32",
                              chunks=(min(chunk, frames), size, size))
        for start in range(0, frames, chunk):
            n = min(chunk, frames - start)
            block = rng.random((n, size, size), dtype=np.float32)
            for i in range(n):
                t = (start + i) / frames
                cy, cx = size * (0.3 + 0.4 * t), size * (0.5 + 0.3 * np.sin(6 * t))
                block[i] += 50 * np.exp(-((yy - cy) ** 2 + (xx - cx) ** 2) / (2 * (size / 40) ** 2))
            ds[start:start + n] = block
    os.replace(tmp, path)


def _load_libraries() -> None:
    import h5py  # noqa: F401


class PeakRSS:
    """Samples the RSS of worker processes (by PID) every 20 ms from this process."""

    def __init__(self, pids: dict[str, int]):
        self.procs = {addr: psutil.Process(pid) for addr, pid in pids.items()}
        self.idle = {a: p.memory_info().rss for a, p in self.procs.items()}
        self.peak = dict(self.idle)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self._stop.is_set():
            for a, p in self.procs.items():
                try:
                    self.peak[a] = max(self.peak[a], p.memory_info().rss)
                except psutil.Error:
                    pass
            self._stop.wait(0.02)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--frames", type=int, default=2000)
    p.add_argument("--size", type=int, default=512)
    p.add_argument("--data", default="data")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--memory-limit", default="1GB")
    args = p.parse_args(argv)

    path = os.path.join(args.data, f"movie_{args.frames}x{args.size}.h5")
    make_movie(path, args.frames, args.size)
    chunk_bytes = 100 * args.size * args.size * 4

    with LocalCluster(n_workers=args.workers, threads_per_worker=1, memory_limit=args.memory_limit) as cluster, \
            Client(cluster) as client:
        print(f"cluster: {cluster}")
        client.run(_load_libraries)  # idle memory then includes h5py, as it will during the run
        pids = client.run(os.getpid)
        t0 = time.perf_counter()
        with PeakRSS(pids) as rss:
            # --- the seed-000 code, with xsched in place of dask ---
            fh = h5py.File(path, "r")
            movie = xa.from_array(fh["/entry/data/raw_counts"], chunks=(100, -1, -1))
            movie_aggregated = movie.map_blocks(sum_sub_stacks, chunks=(10,) + movie.chunks[1:],
                                                dtype=movie.dtype)
            tasks = [delayed(get_info)(chk) for chk in movie_aggregated.to_delayed().ravel()]
            futures = client.compute(tasks)
            # --- live progress ---
            done = 0
            for _ in as_completed(futures):
                done += 1
                print(f"\r  analysed chunks: {done}/{len(futures)}  "
                      f"({100 * done / len(futures):.0f}%)", end="", flush=True)
            print()
            info = client.gather(futures)
            fh.close()
        wall = time.perf_counter() - t0
        images = [row for chunk in info for row in chunk]
        print(f"images analysed: {len(images)} (from {args.frames} frames, "
              f"{format_bytes(args.frames * args.size * args.size * 4)} on disk)")
        for i, row in enumerate(images[:3]):
            com = ", ".join(f"{c:.1f}" for c in row["centre_of_mass"])
            print(f"  image {i}: sum={row['sum']:.4g} variance={row['variance']:.4g} centre=({com})")
        print(f"wall time: {wall:.2f} s ({args.frames * args.size * args.size * 4 / wall / 2**20:.0f} MiB/s)")
        ideal = chunk_bytes * 1.1
        mem = client.scheduler_info()["workers"]
        for addr in sorted(pids, key=lambda a: str(mem.get(a, {}).get("name", a))):
            above = rss.peak[addr] - rss.idle[addr]
            spilled = mem.get(addr, {}).get("memory", {}).get("spilled", 0)
            print(f"  worker {mem.get(addr, {}).get('name', addr)}: peak RSS {format_bytes(rss.peak[addr])}, "
                  f"{format_bytes(above)} above idle = {above / ideal:.2f}x one chunk + its images "
                  f"({format_bytes(ideal)}); spilled {format_bytes(spilled)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
