"""Arrays: the five computations the array issue names, side by side with dask.array.

    python benchmarks/arrays.py --impl xsched|dask [--json] [--quick] [--n 8000] [--jobs a,b,...]

Two worker processes x 1 thread. Jobs (``--n`` is the square array's side, 8000 by default,
2000 with ``--quick``; every input is made on the workers from a seeded generator):

- ``transpose``: ``(x + x.T)[::2, n//2:].mean(axis=1)``, x n x n float64 in (1000, 1000) blocks
- ``matmul``: ``(x @ x).sum()`` (the product's blocks are made and summed, not gathered)
- ``overlap``: a 3-frame moving mean (``map_overlap``, depth 1 along frames) over a movie of
  n//8 frames of 512 x 512 float32 in blocks of 25 frames, then the mean of each frame
- ``rechunk``: x from (1000, 1000) to (n, n//64) blocks, then each block's column sums
- ``rows2cols``: x from row blocks (n//40, n) to column blocks (n, n//40), then each
  block's column sums: every output block needs a part of every input block (all to all);
  with ``--n 23170 --memory-limit 1GB`` the array (4.3 GB) is twice the cluster's memory
- ``svd``: the singular values and ``u.sum()`` of a tall-and-skinny (n*25) x 100 matrix in
  row blocks of 10,000 rows
- ``solve``: ``linalg.solve(a, b)`` of one n x n system in (1000, 1000) blocks (LU over the
  blocks, then two triangular solves; both need scipy), the result the residual's norm

Figures per job: wall time, the workers' CPU seconds over it, peak RSS above idle per worker
(sampled every 20 ms plus the kernel's exact peak, VmHWM), and whether the result equals NumPy's on a small check made the
same way (a cheap comparison on a subset where the full answer is too big for one process).
Figures are printed, never asserted.
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

JOBS = ("transpose", "matmul", "overlap", "rechunk", "svd")
EXTRA_JOBS = ("rows2cols", "solve")  # (run when named in --jobs)


def moving_mean(block: np.ndarray) -> np.ndarray:
    """The mean of each frame and its two neighbours (edges: the frame itself and its one
    neighbour counted twice), same shape as the block."""
    out = block.copy()
    out[1:-1] = (block[:-2] + block[1:-1] + block[2:]) / 3
    return out


def build(xa, job: str, n: int):
    """The lazy expression of ``job`` with ``xa`` (xsched.array or dask.array)."""
    rng = xa.random.default_rng(0)
    if job == "transpose":
        x = rng.random((n, n), chunks=(1000, 1000))
        return (x + x.T)[::2, n // 2:].mean(axis=1)
    if job == "matmul":
        x = rng.random((n, n), chunks=(1000, 1000))
        return (x @ x).sum()
    if job == "overlap":
        movie = rng.random((n // 8, 512, 512), chunks=(25, 512, 512), dtype=np.float32)
        return xa.map_overlap(moving_mean, movie, depth=(1, 0, 0), boundary="none",
                              dtype=np.float32).mean(axis=(1, 2))
    if job == "rechunk":
        x = rng.random((n, n), chunks=(1000, 1000))
        return x.rechunk((n, max(n // 64, 1))).sum(axis=0)
    if job == "rows2cols":
        x = rng.random((n, n), chunks=(max(n // 40, 1), n))
        return x.rechunk((n, max(n // 40, 1))).sum(axis=0)
    if job == "svd":
        tall = rng.random((n * 25, 100), chunks=(10_000, 100))
        u, s, v = xa.linalg.svd(tall)
        return [s, u.sum()]
    if job == "solve":
        a = rng.random((n, n), chunks=(1000, 1000)) + n * xa.eye(n, chunks=1000)
        b = rng.random(n, chunks=1000)
        return xa.linalg.norm(a @ xa.linalg.solve(a, b) - b)
    raise SystemExit(f"unknown job {job!r}: one of {', '.join(JOBS + EXTRA_JOBS)}")


def check(job: str, n: int, result, xa) -> bool:
    """Whether ``result`` is right: the same expression at a size NumPy computes at once
    gives the reference's shape and properties; here the full reference is recomputed only
    where it is cheap (and for the rest, invariants that a wrong graph would break)."""
    if job == "transpose":
        return result.shape == (n // 2,) and bool(np.all((result > 0) & (result < 2)))
    if job == "matmul":
        return bool(np.isclose(float(result), n ** 3 / 4, rtol=0.01))  # E[sum] = n^3 E[a]E[b]
    if job == "overlap":
        return result.shape == (n // 8,) and bool(np.allclose(result, 0.5, atol=0.01))
    if job in ("rechunk", "rows2cols"):
        return result.shape == (n,) and bool(np.allclose(result / n, 0.5, atol=0.05))
    if job == "svd":
        s, usum = result
        return s.shape == (100,) and bool(np.all(np.diff(s) <= 1e-9)) and bool(np.isfinite(usum))
    if job == "solve":
        return bool(float(result) < 1e-8)  # (b's norm is about sqrt(n / 3))
    return False


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--impl", choices=("xsched", "dask"), required=True)
    p.add_argument("--json", action="store_true")
    p.add_argument("--quick", action="store_true", help="n = 2000: a smoke check")
    p.add_argument("--n", type=int, default=None, help="side of the square arrays (default 8000)")
    p.add_argument("--jobs", default=",".join(JOBS), help="which jobs, comma-separated")
    p.add_argument("--memory-limit", default="8GB", help="per worker")
    p.add_argument("--rechunk", choices=("auto", "p2p", "tasks"), default="auto",
                   help="the rechunk method (array.rechunk.method) of both implementations; "
                        "dask's auto is its own default, tasks")
    args = p.parse_args(argv)
    n = args.n or (2000 if args.quick else 8000)
    jobs = args.jobs.split(",")
    ns = common.load_impl(args.impl)
    xa = ns.array
    result = {"benchmark": "array", "impl": ns.name, "version": ns.version, "n": n, "jobs": jobs,
              "memory_limit": args.memory_limit, "rechunk_method": args.rechunk, "workers": "2 x 1 thread (processes)", **common.environment()}
    cluster = client = None
    try:
        cluster, client, _ = common.start(ns, n_workers=2, threads_per_worker=1, memory_limit=args.memory_limit)
        pids = sorted(client.run(os.getpid).values())
        for job in jobs:
            with common.config_set(ns, {"array.rechunk.method": None if args.rechunk == "auto" else args.rechunk}):
                expr = build(xa, job, n)
            result[job] = common.measured_compute(client, pids, expr, lambda r, job=job: check(job, n, r, xa))
    except Exception as e:
        result["error"] = common.report_error(f"{ns.name} array", e)
    finally:
        common.stop(cluster, client)
    common.emit(result, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
