"""Command line: ``xsched scheduler``, ``xsched worker``, ``xsched doctor``, ``xsched config``.

    $ xsched scheduler                                  # port 8786 on every interface
    $ xsched worker localhost:8786 --nthreads 1 --memory-limit 2GB
    $ xsched worker 10.0.0.5:8786 --interface eth0 --resources "GPU=2"
    $ xsched worker --scheduler-file scheduler.json --nworkers 2 --nthreads 2
    $ xsched doctor 10.0.0.5:8786                        # can this host reach it? why not?

A worker given only an address finds the secret in the registry of schedulers this user
runs (``~/.xsched/schedulers``, shared across nodes by a shared home directory), unless
``XSCHED_SECRET`` or ``--scheduler-file`` gives it.

Each server runs an asyncio loop in its main thread, closes gracefully on SIGTERM/SIGINT,
and, given ``--parent-pid``, closes when that process dies.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
import sys

__all__ = ["main", "scheduler_main", "worker_main"]


def _setup_logging(level: str) -> None:
    logging.basicConfig(level=getattr(logging, level.upper(), logging.INFO),
                        format="%(asctime)s %(name)s %(levelname)s %(message)s", stream=sys.stderr)


async def _watch_parent(parent_pid: int | None, stop: asyncio.Event) -> None:
    if not parent_pid:
        return
    while not stop.is_set():
        if os.getppid() != parent_pid:
            stop.set()
            return
        await asyncio.sleep(0.5)


def _install_signals(stop: asyncio.Event) -> None:
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        try:
            loop.add_signal_handler(sig, stop.set)
        except (NotImplementedError, RuntimeError):
            pass


async def _serve_until_stopped(server, parent_pid: int | None) -> None:
    """Wait until the server closes itself, a signal arrives, or the parent process dies."""
    stop = asyncio.Event()
    _install_signals(stop)
    watcher = asyncio.ensure_future(_watch_parent(parent_pid, stop))
    closed = asyncio.ensure_future(server.finished())
    stopper = asyncio.ensure_future(stop.wait())
    await asyncio.wait([closed, stopper], return_when=asyncio.FIRST_COMPLETED)
    for t in (watcher, stopper, closed):
        t.cancel()


# ---------------------------------------------------------------------- scheduler
def _listen_host(args) -> str | None:
    """The host to listen on from --host / --interface (None: the command's default)."""
    from .protocol.addressing import interface_address

    if args.interface:
        if args.host:
            raise ValueError("give --host or --interface, not both")
        return interface_address(args.interface)
    return args.host


async def _run_scheduler(args) -> None:
    from .protocol.addressing import join
    from .protocol.security import Security
    from .scheduler.server import Scheduler

    secret = os.environ.get("XSCHED_SECRET")
    security = Security(secret, args.security) if secret else Security.generate(args.security)
    host = _listen_host(args) or "0.0.0.0"
    sched = Scheduler(security, scheduler_file=args.scheduler_file)
    await sched.start(join(host, args.port))
    if not args.parent_pid:
        sfile = args.scheduler_file
        print(f"xsched scheduler at {sched.address}\n"
              f"  registered in {sched.registry_entry} (found by address on every host sharing this home)\n"
              f"  connect with: Client({sched.address!r})"
              + (f" or Client(scheduler_file={sfile!r})" if sfile else "") + "\n"
              f"  workers:      xsched worker {sched.address}"
              + (f" or xsched worker --scheduler-file {sfile}" if sfile else ""), flush=True)
    await _serve_until_stopped(sched, args.parent_pid)
    worker_pids = [ws.pid for ws in sched.state.workers.values() if ws.pid]
    await sched.close()
    if args.cleanup_directory and args.parent_pid and os.getppid() != args.parent_pid:
        _remove_orphaned_directory(args.cleanup_directory, worker_pids)


def _remove_orphaned_directory(path: str, worker_pids: list[int], timeout: float = 10) -> None:
    """Our LocalCluster's process died (a kernel restart): nobody else will remove its
    temporary directory. Wait for the workers (told to close) to leave it, then remove it."""
    import shutil
    import time

    import psutil

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and any(psutil.pid_exists(p) for p in worker_pids):
        time.sleep(0.1)
    shutil.rmtree(path, ignore_errors=True)


# ---------------------------------------------------------------------- worker
async def _run_worker(args, security, address) -> int:
    from .worker.server import Worker
    from .units import parse_memory_limit, parse_resources
    from . import config

    resources = dict(config.get("worker.resources", {}) or {})
    if args.resources:
        resources.update(parse_resources(args.resources))
    nthreads = args.nthreads or config.get("worker.nthreads", None) or max(1, (os.cpu_count() or 1) // args.nworkers)
    limit = args.memory_limit if args.memory_limit is not None else config.get("worker.memory.limit", "auto")
    memory_limit = parse_memory_limit(limit, nworkers=args.nworkers)
    local_dir = args.local_directory or config.get("worker.local-directory", None)
    w = Worker(address, security, nthreads, name=args.name, memory_limit=memory_limit, resources=resources,
               local_directory=local_dir, host=_listen_host(args))
    await w.start()
    await _serve_until_stopped(w, args.parent_pid)
    await w.close()
    return w.exit_code


def _nanny(args) -> int:
    """Run ``--nworkers`` worker processes under a nanny (this process)."""
    from . import config
    from .units import parse_memory_limit
    from .worker.nanny import Nanny

    limit = args.memory_limit if args.memory_limit is not None else config.get("worker.memory.limit", "auto")
    memory_limit = parse_memory_limit(limit, nworkers=args.nworkers)
    base = args.name
    own_dir = None
    if not args.local_directory and not config.get("worker.local-directory", None):
        # the nanny owns its workers' scratch space, so even a killed worker leaves nothing behind
        import tempfile

        own_dir = args.local_directory = tempfile.mkdtemp(prefix="xsched-worker-")
    workers = {}
    for i in range(args.nworkers):
        name = base if args.nworkers == 1 else f"{base or 'worker'}-{i}"
        a = ["worker", "--no-nanny"]
        if args.address:
            a.append(args.address)
        if args.scheduler_file:
            a += ["--scheduler-file", args.scheduler_file]
        if args.host:
            a += ["--host", args.host]
        if args.interface:
            a += ["--interface", args.interface]
        a += ["--memory-limit", str(memory_limit or 0)]
        if name:
            a += ["--name", name]
        if args.nthreads:
            a += ["--nthreads", str(args.nthreads)]
        else:
            a += ["--nthreads", str(max(1, (os.cpu_count() or 1) // args.nworkers))]
        if args.resources:
            a += ["--resources", args.resources]
        if args.local_directory:
            a += ["--local-directory", args.local_directory]
        workers[name or str(i)] = a
    nanny = Nanny(workers, memory_limit, config.get("worker.memory.terminate", 0.95),
                  log_dir=args.log_directory)
    try:
        return nanny.run(parent_pid=args.parent_pid)
    finally:
        if own_dir is not None:
            import shutil

            shutil.rmtree(own_dir, ignore_errors=True)


def _worker(args) -> int:
    from . import config
    from .protocol.registry import connection_info

    if not args.scheduler_file and not args.address:
        print("xsched worker: give the scheduler ADDRESS (e.g. localhost:8786) or --scheduler-file FILE",
              file=sys.stderr)
        return 2
    try:  # fail here, with the reason, rather than in every worker process the nanny starts
        address, security = connection_info(args.address, args.scheduler_file,
                                            mode=config.get("comm.security", "auto"))
        _listen_host(args)
    except (LookupError, OSError, ValueError) as e:
        print(f"xsched worker: {e}", file=sys.stderr)
        return 2
    if not args.no_nanny:
        return _nanny(args)
    try:
        code = asyncio.run(_run_worker(args, security, address))
    except (TimeoutError, ValueError, ConnectionError) as e:  # AuthenticationError is a ConnectionError
        from .worker.nanny import EXIT_CANNOT_CONNECT

        print(f"xsched worker: {e}", file=sys.stderr)
        return EXIT_CANNOT_CONNECT
    _exit_if_tasks_running(code)
    return code


def _exit_if_tasks_running(code: int = 0) -> None:
    """The worker has closed, but task threads cannot be interrupted: exit now instead of
    waiting for them at interpreter shutdown. (Otherwise a long task keeps the process
    alive after its scheduler is gone, and a SIGTERM waits for the SIGKILL that follows.)"""
    import threading

    busy = [t for t in threading.enumerate() if t.name.startswith("xsched-task") and t.is_alive()]
    if busy:
        logging.getLogger("xsched.worker").warning("exiting with %d task(s) still running", len(busy))
        logging.shutdown()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


# ---------------------------------------------------------------------- parsers
def _scheduler_parser(p: argparse.ArgumentParser) -> None:
    p.add_argument("--host", default=None, help="address to listen on (default: every interface)")
    p.add_argument("--interface", default=None, help="listen on this network interface's address, e.g. ib0")
    p.add_argument("--port", type=int, default=8786, help="port (0: any free port; default 8786)")
    p.add_argument("--scheduler-file", help="also write address and secret here (mode 0600)")
    p.add_argument("--security", default=None, choices=["auto", "curve"],
                   help="auto: large transfers in clear on loopback only; curve: encrypted everywhere")
    p.add_argument("--parent-pid", type=int, default=None, help=argparse.SUPPRESS)
    p.add_argument("--cleanup-directory", default=None, help=argparse.SUPPRESS)  # removed if the parent dies
    p.add_argument("--log-level", default="warning")


def _worker_parser(p: argparse.ArgumentParser) -> None:
    p.add_argument("address", nargs="?", help="scheduler address, e.g. tcp://10.0.0.5:8786")
    p.add_argument("--scheduler-file", help="scheduler file written by `xsched scheduler`")
    p.add_argument("--nthreads", type=int, default=None, help="threads per worker process")
    p.add_argument("--nworkers", type=int, default=1, help="worker processes to start")
    p.add_argument("--no-nanny", action="store_true", help="run the worker in this process, unsupervised")
    p.add_argument("--log-directory", default=None, help="nanny: write each worker's output here")
    p.add_argument("--memory-limit", default=None, help="per process: 4GB, 0.5 (of RAM), auto, or 0 (none)")
    p.add_argument("--name", default=None, help="worker name (with --nworkers: NAME-0, NAME-1, ...)")
    p.add_argument("--resources", default=None, help='abstract resources per process, e.g. "GPU=2,MEMORY=100e9"')
    p.add_argument("--local-directory", default=None, help="directory for spilled data")
    p.add_argument("--host", default=None, help="address to serve data on (default: the one facing the scheduler)")
    p.add_argument("--interface", default=None, help="serve data on this network interface's address, e.g. ib0")
    p.add_argument("--parent-pid", type=int, default=None, help=argparse.SUPPRESS)
    p.add_argument("--log-level", default="warning")


def _scheduler(args) -> int:
    from . import config

    if args.security is None:
        args.security = config.get("comm.security", "auto")
    import zmq

    try:
        asyncio.run(_run_scheduler(args))
    except (OSError, ValueError, zmq.ZMQError) as e:  # a ZMQError is no OSError; AddressError a ValueError
        print(f"xsched scheduler: cannot listen on port {args.port}: {e}", file=sys.stderr)
        return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``xsched`` command."""
    parser = argparse.ArgumentParser(prog="xsched", description="xsched: a Jupyter-first distributed scheduler")
    sub = parser.add_subparsers(dest="command", required=True)
    _scheduler_parser(sub.add_parser("scheduler", help="start a scheduler"))
    _worker_parser(sub.add_parser("worker", help="start worker processes"))
    dp = sub.add_parser("doctor", help="check whether this host can reach a scheduler, and why not")
    dp.add_argument("address", help="scheduler address, e.g. 10.0.0.5:8786")
    dp.add_argument("--scheduler-file", default=None, help="take the secret from this scheduler file")
    dp.add_argument("--timeout", type=float, default=5.0, help="seconds per network step (default 5)")
    cp = sub.add_parser("config", help="print the effective configuration")
    cp.add_argument("--describe", action="store_true", help="document every key")
    args = parser.parse_args(argv)
    if args.command == "config":
        from . import config

        print(config.describe() if args.describe else config.pretty())
        return 0
    if args.command == "doctor":
        from .doctor import diagnose, format_report

        steps = diagnose(args.address, args.scheduler_file, args.timeout)
        print(format_report(steps))
        ok = all(st.ok for st in steps)
        print(f"\n{'this host can reach the scheduler' if ok else 'this host cannot use the scheduler: see FAIL above'}")
        return 0 if ok else 1
    _setup_logging(args.log_level)
    if args.command == "scheduler":
        return _scheduler(args)
    return _worker(args)


def scheduler_main() -> int:
    """``xsched-scheduler`` entry point."""
    return main(["scheduler", *sys.argv[1:]])


def worker_main() -> int:
    """``xsched-worker`` entry point."""
    return main(["worker", *sys.argv[1:]])


if __name__ == "__main__":
    sys.exit(main())
