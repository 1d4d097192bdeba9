"""Spill: 20 x 100 MB arrays held by the client on one worker limited to 1 GB.

    python benchmarks/spill.py --impl xsched|dask [--json] [--quick]

One worker, 1 thread, memory_limit="1GB". The client holds 20 futures of 100 MB float64
arrays (2 GB in all, twice the limit), then asks for the sum of each and the total. The
worker must spill to disk to finish. Reported: wall time, correctness, the worker's peak
RSS (sampled every 20 ms and the kernel's exact VmHWM), bytes spilled, and for xsched the
spill buffer's own write and read rates next to the disk's rate for the same file sizes
(written with fdatasync and read back with the page cache dropped for that file).
Then every block is summed once more, oldest first, so spilled blocks are read back.
Figures are printed, never asserted.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

MB = 2**20


def make_block(i, n):
    """A 100 MB array (run on the worker)."""
    return np.full(n, float(i))


def block_sum(x):
    return float(x.sum())


def spill_counters(worker=None):
    """xsched only: the worker's spill buffer counters (run via client.run)."""
    d = worker.data
    return {k: getattr(d, k, None) for k in ("spill_count", "unspill_count", "spill_seconds", "unspill_seconds",
                                             "spill_bytes_written", "unspill_bytes_read", "spilled_bytes")}


def disk_rate(directory: str, nbytes: int, files: int = 3) -> tuple[float, float]:
    """The disk's own write (with fdatasync) and cold read rate, MiB/s, for files of ``nbytes``."""
    buf = np.ones(nbytes // 8)
    paths = []
    t0 = time.perf_counter()
    for i in range(files):
        p = os.path.join(directory, f"disk-{i}.bin")
        with open(p, "wb") as f:
            f.write(memoryview(buf).cast("B"))
            f.flush()
            os.fdatasync(f.fileno())
        paths.append(p)
    write = files * nbytes / MB / (time.perf_counter() - t0)
    for p in paths:
        with open(p, "rb") as f:
            os.posix_fadvise(f.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)
    out = bytearray(nbytes)
    t0 = time.perf_counter()
    for p in paths:
        with open(p, "rb") as f:
            f.readinto(out)
    read = files * nbytes / MB / (time.perf_counter() - t0)
    for p in paths:
        os.remove(p)
    return write, read


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--impl", choices=common.IMPLS, required=True)
    p.add_argument("--json", action="store_true")
    p.add_argument("--quick", action="store_true", help="8 blocks instead of 20 (a smoke check)")
    args = p.parse_args(argv)

    blocks = 8 if args.quick else 20
    n = 100 * MB // 8
    ns = common.load_impl(args.impl)
    result = {"benchmark": "spill", "impl": ns.name, "version": ns.version, "quick": args.quick,
              "workers": "1 x 1 thread (process)", "memory_limit": "1GB", "blocks": blocks,
              "block_mb": n * 8 / MB, **common.environment()}
    cluster = client = None
    try:
        cluster, client, [addr] = common.start(ns, n_workers=1, threads_per_worker=1, memory_limit="1GB")
        pid = client.run(os.getpid)[addr]
        t0 = time.perf_counter()
        with common.RSSSampler([pid], interval=0.02) as sampler:
            futs = client.map(make_block, range(blocks), n=n)
            sums = client.map(block_sum, futs)
            total = client.submit(sum, sums)
            value = total.result(timeout=600)
            wall = time.perf_counter() - t0
        peak = max(sampler.peak[pid], sampler.hwm.get(pid) or 0)
        result.update({"wall_seconds": wall, "correct": value == sum(float(i) * n for i in range(blocks)),
                       "peak_rss_mb": peak / MB, "under_limit": peak < 1e9})
        # read everything back once more (oldest first): spilled blocks come back from disk
        t1 = time.perf_counter()
        again = client.gather(client.map(block_sum, futs, pure=False))
        result["reread_seconds"] = time.perf_counter() - t1
        result["reread_correct"] = again == [float(i) * n for i in range(blocks)]
        if args.impl == "xsched":
            c = client.run(spill_counters)[addr]
            result.update({
                "spilled_mb": (c["spill_bytes_written"] or 0) / MB,
                "unspilled_mb": (c["unspill_bytes_read"] or 0) / MB,
                "spill_write_mib_s": (c["spill_bytes_written"] / MB / c["spill_seconds"]) if c["spill_seconds"] else None,
                "spill_read_mib_s": (c["unspill_bytes_read"] / MB / c["unspill_seconds"]) if c["unspill_seconds"] else None,
            })
        else:
            def dask_spilled(dask_worker):
                st = getattr(dask_worker.data, "spilled_total", None)  # (memory, disk) of what is on disk
                return getattr(st, "memory", None)

            spilled = list(client.run(dask_spilled).values())[0]
            result["spilled_mb"] = spilled / MB if spilled is not None else None
        del futs, sums, total
        with tempfile.TemporaryDirectory(dir=os.environ.get("TMPDIR", "/tmp")) as d:
            w, r = disk_rate(d, n * 8)
        result.update({"disk_write_mib_s": w, "disk_read_cold_mib_s": r})
    except Exception as e:
        result["error"] = common.report_error(f"{ns.name} spill", e)
    finally:
        common.stop(cluster, client)
    common.emit(result, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
