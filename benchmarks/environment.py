"""Restart into a shipped environment: time to stream a copy of this venv to 3 workers and restart.

    python benchmarks/environment.py [--workers 3] [--drop PACKAGE ...]

A LocalCluster (3 workers x 1 thread, processes, one host) restarts into a hard-linked
copy of the project's virtual environment plus one module. The environment travels once
per host (an uncompressed tar stream in 4 MiB chunks, client -> scheduler -> one worker),
is checked (sha256), unpacked, and every worker restarts with its Python. Printed: bytes
shipped, seconds for the whole ``client.restart(environment=...)``, throughput, and a
plain ``client.restart()`` for comparison. Figures are printed, never asserted.
``--drop`` leaves packages a worker does not need out of the copy (``--drop playwright
pandas babel jupyterlab`` makes a ~400 MB environment of this project's ~710 MB venv).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--workers", type=int, default=3)
    p.add_argument("--drop", nargs="*", default=[], metavar="PACKAGE",
                   help="site-packages entries to leave out of the copy (a smaller environment)")
    args = p.parse_args(argv)
    from xsched import Client, LocalCluster

    tmp = tempfile.mkdtemp(prefix="xsched-envbench-")
    try:
        env = os.path.join(tmp, "env")
        if subprocess.run(["cp", "-al", sys.prefix, env], capture_output=True).returncode:
            shutil.copytree(sys.prefix, env, symlinks=True)
        site = [d for d in (os.path.join(env, "lib", x, "site-packages") for x in os.listdir(os.path.join(env, "lib")))
                if os.path.isdir(d)][0]
        for name in args.drop:
            path = os.path.join(site, name)
            if not os.path.isdir(path):
                raise SystemExit(f"--drop {name}: no such package directory in {site}")
            shutil.rmtree(path)
        with open(os.path.join(site, "xsched_env_marker.py"), "w") as f:
            f.write("WHERE = 'shipped'\n")
        with LocalCluster(n_workers=args.workers, threads_per_worker=1) as cluster, Client(cluster) as c:
            c.wait_for_workers(args.workers, timeout=60)
            t0 = time.perf_counter()
            c.restart()
            plain = time.perf_counter() - t0
            t0 = time.perf_counter()
            c.restart(environment=env, timeout=300)
            wall = time.perf_counter() - t0
            ok = set(c.run(lambda: __import__("xsched_env_marker").WHERE).values()) == {"shipped"}
            mb = c.last_environment_bytes / 1e6
            dropped = f" without {', '.join(args.drop)}" if args.drop else ""
            print(f"restart into a copy of this venv{dropped} ({mb:.0f} MB tar stream) on {args.workers} workers, one host: "
                  f"{wall:.1f} s ({mb / wall:.0f} MB/s end to end, shipped once to the host); every worker in it: "
                  f"{ok}; a plain restart: {plain:.1f} s")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
