"""Command line: ``xsched scheduler``, ``xsched worker``, ``xsched doctor``, ``xsched config``.

    $ xsched scheduler                                  # port 8786 on every interface
    $ xsched scheduler --dashboard-address :8790         # the dashboard page on 8790 (None: no page)
    $ xsched worker localhost:8786 --nthreads 1 --memory-limit 2GB
    $ xsched worker 10.0.0.5:8786 --interface eth0 --resources "GPU=2"
    $ xsched worker --scheduler-file scheduler.json --nworkers 2 --nthreads 2
    $ xsched worker 10.0.0.5:8786 --lifetime 6900s --lifetime-stagger 4m   # in a 2 h batch job
    $ xsched doctor 10.0.0.5:8786                        # can this host reach it? why not?
    $ xsched doctor --scheduler-file scheduler.json      # (the address is in the file)

A worker given only an address finds the secret in the registry of schedulers this user
runs (``~/.xsched/schedulers``, shared across nodes by a shared home directory), unless
``XSCHED_SECRET`` or ``--scheduler-file`` gives it.

Each server runs an asyncio loop in its main thread, closes gracefully on SIGTERM/SIGINT,
and, given ``--parent-pid``, closes when that process dies. A worker *retires* on
SIGTERM/SIGINT (the nanny forwards them): the scheduler first copies what only it holds
to other workers, then tells it to close, and it exits 0; after ``--retire-timeout``, or
if no other worker can take its data, it closes anyway. A second signal closes it at
once. ``--lifetime`` makes it retire by itself after that long, minus a random part of
``--lifetime-stagger`` (so workers started together do not all leave at once).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import logging
import os
import shutil
import signal
import sys
import tempfile
import threading
import time

import psutil
import zmq

from . import config
from .comm import RemoteError
from .errors import DashboardError
from .protocol.addressing import (DEFAULT_DASHBOARD_PORT, AddressError, dashboard_link, interface_address, join,
                                  parse_dashboard_address)
from .protocol.registry import connection_info
from .protocol.security import Security
from .units import parse_memory_limit, parse_resources, parse_timedelta
from .worker import nanny as worker_nanny

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
    if args.interface:
        if args.host:
            raise ValueError("give --host or --interface, not both")
        return interface_address(args.interface)
    return args.host


async def _run_scheduler(args) -> None:
    # imported by the command that runs it: a worker process need not load the scheduler
    from .scheduler.server import Scheduler

    secret = os.environ.get("XSCHED_SECRET")
    security = Security(secret, args.security) if secret else Security.generate(args.security)
    host = _listen_host(args) or "0.0.0.0"
    sched = Scheduler(security, scheduler_file=args.scheduler_file, name=args.name,
                      dashboard_address=args.dashboard_address)
    await sched.start(join(host, args.port))
    if not args.parent_pid:
        sfile = args.scheduler_file
        dashboard = sched.dashboard_info()
        page = dashboard_link(dashboard, sched.address)
        print(f"xsched scheduler at {sched.address}\n"
              f"  registered in {sched.registry_entry} (found by address on every host sharing this home)\n"
              f"  connect with: Client({sched.address!r})"
              + (f" or Client(scheduler_file={sfile!r})" if sfile else "") + "\n"
              f"  workers:      xsched worker {sched.address}"
              + (f" or xsched worker --scheduler-file {sfile}" if sfile else "")
              # (the token stays off the terminal and its logs: client.dashboard_link carries it)
              + (f"\n  dashboard:    {page.partition('?')[0]} (its link with the token: client.dashboard_link)"
                 if page else ""), flush=True)
    await _serve_until_stopped(sched, args.parent_pid)
    worker_pids = [ws.pid for ws in sched.state.workers.values() if ws.pid]
    await sched.close()
    if args.cleanup_directory and args.parent_pid and os.getppid() != args.parent_pid:
        _remove_orphaned_directory(args.cleanup_directory, worker_pids)


def _remove_orphaned_directory(path: str, worker_pids: list[int], timeout: float = 10) -> None:
    """Our LocalCluster's process died (a kernel restart): nobody else will remove its
    temporary directory. Wait for the workers (told to close) to leave it, then remove it."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and any(psutil.pid_exists(p) for p in worker_pids):
        time.sleep(0.1)
    shutil.rmtree(path, ignore_errors=True)


# ---------------------------------------------------------------------- worker
async def _run_worker(args, security, address) -> int:
    # imported by the command that runs it: the scheduler process need not load the worker
    from .worker.server import Worker

    resources = dict(config.get("worker.resources", {}) or {})
    if args.resources:
        resources.update(parse_resources(args.resources))
    nthreads = args.nthreads or config.get("worker.nthreads", None) or max(1, (os.cpu_count() or 1) // args.nworkers)
    memory_limit = _memory_limit(args)
    local_dir = args.local_directory or config.get("worker.local-directory", None)
    lifetime, stagger, retire_timeout = _lifetime_args(args)
    # started by a nanny: the directory it shares with us (nanny plugins); not inherited further
    nanny_dir = os.environ.pop(worker_nanny.NANNY_DIR_VAR, None) if args.parent_pid else None
    w = Worker(address, security, nthreads, name=args.name, memory_limit=memory_limit, resources=resources,
               local_directory=local_dir, host=_listen_host(args), lifetime=lifetime, lifetime_stagger=stagger,
               retire_timeout=retire_timeout, nanny_directory=nanny_dir)
    await w.start()
    why = await _worker_until_stopped(w, args.parent_pid)
    if why == "signal" and w.status == "running":
        # retire gracefully (data moved off first); a second signal closes at once
        again = asyncio.Event()
        _install_signals(again)
        retire = asyncio.ensure_future(w.close_gracefully(reason="SIGTERM"))
        interrupt = asyncio.ensure_future(again.wait())
        await asyncio.wait([retire, interrupt], return_when=asyncio.FIRST_COMPLETED)
        interrupt.cancel()
        if not retire.done():
            retire.cancel()
    await w.close()
    return w.exit_code


def _memory_limit(args) -> int | None:
    """Bytes per worker process from --memory-limit (or the worker.memory.limit setting); the
    ValueError names where the value came from."""
    if args.memory_limit is not None:
        limit, where = args.memory_limit, "--memory-limit"
    else:
        limit, where = config.get("worker.memory.limit", "auto"), "the worker.memory.limit setting"
    try:
        return parse_memory_limit(limit, nworkers=args.nworkers)
    except ValueError as e:
        raise ValueError(f"{where}: {e}") from None


def _check_worker_args(args) -> None:
    """Refuse a bad --nworkers, --nthreads, --memory-limit or --resources here, in one line,
    rather than in every worker process (or as the scheduler's refusal of each); make the
    --log-directory."""
    if args.nworkers < 1:
        raise ValueError(f"--nworkers {args.nworkers}: give a whole number of worker processes >= 1")
    if args.nthreads is not None and args.nthreads < 0:  # (0, as dask's: this machine's CPUs shared out)
        raise ValueError(f"--nthreads {args.nthreads}: give a whole number of threads per worker process >= 1, "
                         "or 0 or nothing for this machine's CPUs shared among --nworkers")
    _memory_limit(args)
    if args.resources:
        parse_resources(args.resources)
    if args.log_directory and not args.no_nanny:  # (the nanny appends each worker's output there)
        try:
            os.makedirs(args.log_directory, exist_ok=True)
        except OSError as e:
            raise OSError(f"--log-directory {args.log_directory}: cannot create it: {e.strerror or e}") from None


def _lifetime_args(args) -> tuple:
    """(lifetime, stagger, retire timeout) in seconds from the worker's options."""
    lifetime = parse_timedelta(args.lifetime) if args.lifetime else None
    stagger = parse_timedelta(args.lifetime_stagger) if args.lifetime_stagger else 0.0
    timeout = parse_timedelta(args.retire_timeout)
    if lifetime is not None and lifetime <= 0:
        raise ValueError(f"--lifetime {args.lifetime!r} must be positive")
    if stagger < 0 or timeout < 0:
        raise ValueError("--lifetime-stagger and --retire-timeout cannot be negative")
    return lifetime, stagger, timeout


async def _worker_until_stopped(worker, parent_pid: int | None) -> str:
    """Wait until the worker closes ("closed"), a signal arrives ("signal"), or the parent
    process dies ("parent": close at once, nobody waits for a graceful exit)."""
    signalled, parent_gone = asyncio.Event(), asyncio.Event()
    _install_signals(signalled)
    waits = {asyncio.ensure_future(worker.finished()): "closed",
             asyncio.ensure_future(signalled.wait()): "signal",
             asyncio.ensure_future(parent_gone.wait()): "parent",
             asyncio.ensure_future(_watch_parent(parent_pid, parent_gone)): None}
    done, _ = await asyncio.wait([t for t, why in waits.items() if why], return_when=asyncio.FIRST_COMPLETED)
    for t in waits:
        t.cancel()
    return waits[next(iter(done))]


def _nanny(args) -> int:
    """Run ``--nworkers`` worker processes under a nanny (this process)."""
    memory_limit = _memory_limit(args)
    base = args.name
    own_dir = None
    if not args.local_directory and not config.get("worker.local-directory", None):
        # the nanny owns its workers' scratch space, so even a killed worker leaves nothing behind
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
        if args.lifetime:  # each child draws its own part of the stagger
            a += ["--lifetime", args.lifetime, "--lifetime-stagger", args.lifetime_stagger or "0s"]
        a += ["--retire-timeout", args.retire_timeout]
        workers[name or str(i)] = a
    _, _, retire_timeout = _lifetime_args(args)
    # on SIGTERM the nanny forwards it and waits for the graceful retirement (plus a margin)
    nanny = worker_nanny.Nanny(workers, memory_limit, config.get("worker.memory.terminate", 0.95),
                               log_dir=args.log_directory, stop_timeout=retire_timeout + 5)
    try:
        return nanny.run(parent_pid=args.parent_pid)
    finally:
        if own_dir is not None:
            shutil.rmtree(own_dir, ignore_errors=True)


def _worker(args) -> int:
    if not args.scheduler_file and not args.address:
        print("xsched worker: give the scheduler ADDRESS (e.g. localhost:8786) or --scheduler-file FILE",
              file=sys.stderr)
        return 2
    try:  # fail here, with the reason, rather than in every worker process the nanny starts
        _check_worker_args(args)
        _lifetime_args(args)
        address, security = connection_info(args.address, args.scheduler_file,
                                            mode=config.get("comm.security", "auto"))
        _listen_host(args)
    except (LookupError, OSError, ValueError) as e:
        print(f"xsched worker: {e}", file=sys.stderr)
        if args.parent_pid:  # started by a nanny: a code it does not retry (the file or secret is gone)
            worker_nanny.leave_exit_reason(os.environ.get(worker_nanny.NANNY_DIR_VAR), str(e))
            return worker_nanny.EXIT_CANNOT_CONNECT
        return 2
    if not args.no_nanny:
        return _nanny(args)
    nanny_dir = os.environ.get(worker_nanny.NANNY_DIR_VAR) if args.parent_pid else None  # (_run_worker takes it)
    try:
        code = asyncio.run(_run_worker(args, security, address))
    except (TimeoutError, ValueError, ConnectionError, RemoteError) as e:
        # unreachable, wrong secret (AuthenticationError, a ConnectionError), or refused by the scheduler
        # (RemoteError: its reason): another start would fail the same way
        print(f"xsched worker: {e}", file=sys.stderr)
        worker_nanny.leave_exit_reason(nanny_dir, str(e))  # (its nanny says it: this output may go nowhere)
        return worker_nanny.EXIT_CANNOT_CONNECT
    except Exception as e:  # a crash: the traceback goes to the output, and the nanny hears the error
        worker_nanny.leave_exit_reason(nanny_dir, f"{type(e).__name__}: {e}")
        raise
    _exit_if_tasks_running(code)
    return code


def _exit_if_tasks_running(code: int = 0) -> None:
    """The worker has closed, but task threads cannot be interrupted: exit now instead of
    waiting for them at interpreter shutdown. (Otherwise a long task keeps the process
    alive after its scheduler is gone, and a SIGTERM waits for the SIGKILL that follows.)"""
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
    p.add_argument("--name", default=None, help="the cluster's name, shown by the JupyterLab panel")
    p.add_argument("--dashboard-address", default=None,  # (not given: the setting; "None" given: no page)
                   help="where to serve the dashboard page: ':8787' (port 8787 on the scheduler's host; taken: "
                        "a free port), 'host:port', or None for no dashboard (default: the "
                        f"scheduler.dashboard-address setting, ':{DEFAULT_DASHBOARD_PORT}' unless changed)")
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
    p.add_argument("--lifetime", default=None,
                   help="retire gracefully (data moved to other workers first, then exit 0) after this long, "
                        'e.g. "6900s", "1h", "5 minutes"; in a batch job: the walltime minus a margin')
    p.add_argument("--lifetime-stagger", default="0s",
                   help="retire up to this much earlier, a random amount per worker process, so workers "
                        "started together leave one by one (capped at the lifetime; default 0s)")
    p.add_argument("--retire-timeout", default="30s",
                   help="on --lifetime or SIGTERM, close anyway if retiring takes longer (default 30s)")
    p.add_argument("--parent-pid", type=int, default=None, help=argparse.SUPPRESS)
    p.add_argument("--log-level", default="warning")


def _scheduler(args) -> int:
    if args.security is None:
        args.security = config.get("comm.security", "auto")
    if args.dashboard_address is None:
        args.dashboard_address = config.get("scheduler.dashboard-address")
        where = "the scheduler.dashboard-address setting"
    else:
        where = "--dashboard-address"
    try:
        parse_dashboard_address(args.dashboard_address)
    except AddressError as e:
        print(f"xsched scheduler: {where}: {e}", file=sys.stderr)
        return 2
    try:
        asyncio.run(_run_scheduler(args))
    except DashboardError as e:  # (an OSError: said as it is, not as the scheduler's port)
        print(f"xsched scheduler: {e}", file=sys.stderr)
        return 1
    except (OSError, ValueError, zmq.ZMQError) as e:  # a ZMQError is no OSError; AddressError a ValueError
        print(f"xsched scheduler: cannot listen on port {args.port}: {e}", file=sys.stderr)
        return 1
    return 0


def _secret_from_stdin() -> None:
    """Read the cluster secret from the first line of stdin, and stop when stdin closes.

    Launchers (ssh) use this so the secret is on no command line and in no file; the
    connection's end (EOF) becomes a SIGTERM, the graceful way out.
    """
    line = sys.stdin.buffer.readline().strip()
    if not line:
        print("xsched: --secret-stdin: no secret on stdin", file=sys.stderr)
        sys.exit(2)
    os.environ["XSCHED_SECRET"] = line.decode()  # the nanny's children inherit it

    def watch():
        while sys.stdin.buffer.read(4096):
            pass
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=watch, name="xsched-stdin-watch", daemon=True).start()


def _ssh_parser(p: argparse.ArgumentParser) -> None:
    p.add_argument("hosts", nargs="+", help="the scheduler's host, then one worker host per group")
    p.add_argument("--nthreads", type=int, default=1, help="threads per worker process")
    p.add_argument("--nworkers", type=int, default=1, help="worker processes per host")
    p.add_argument("--memory-limit", default=None, help="per worker process, e.g. 4GB")
    p.add_argument("--remote-python", default="python3", help="the Python on the hosts (with xsched installed)")
    p.add_argument("--ssh-option", action="append", default=[], dest="ssh_options",
                   help="passed to ssh, e.g. --ssh-option=-i --ssh-option=~/.ssh/id_ed25519 (repeatable)")
    p.add_argument("--interface", default=None, help="network interface of the workers, e.g. ib0")
    p.add_argument("--scheduler-port", type=int, default=8786, help="the scheduler's port (default 8786)")


def _ssh(args) -> int:
    """``xsched ssh HOSTS...``: an SSHCluster until Ctrl-C / SIGTERM."""
    wo = {"nthreads": args.nthreads, "nworkers": args.nworkers}
    if args.memory_limit:
        wo["memory_limit"] = args.memory_limit
    if args.interface:
        wo["interface"] = args.interface
    from .deploy.ssh import SSHCluster  # (the clusters: only this command's process needs them)

    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    try:
        cluster = SSHCluster(args.hosts, ssh_options=args.ssh_options, remote_python=args.remote_python,
                             worker_options=wo, scheduler_options={"port": args.scheduler_port})
    except Exception as e:
        print(f"xsched ssh: {e}", file=sys.stderr)
        return 1
    with cluster:
        print(f"xsched ssh: {cluster!r}\n  connect with: Client({cluster.scheduler_address!r}) "
              "(its secret is in your registry)", flush=True)
        stop.wait()
    return 0


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``xsched`` command."""
    parser = argparse.ArgumentParser(prog="xsched", description="xsched: a Jupyter-first distributed scheduler")
    sub = parser.add_subparsers(dest="command", required=True)
    sp = sub.add_parser("scheduler", help="start a scheduler")
    _scheduler_parser(sp)
    wp = sub.add_parser("worker", help="start worker processes")
    _worker_parser(wp)
    for p in (sp, wp):  # for launchers (SSHCluster): the secret on stdin, stop when stdin closes
        p.add_argument("--secret-stdin", action="store_true", help=argparse.SUPPRESS)
    _ssh_parser(sub.add_parser("ssh", help="start a scheduler and workers on hosts over ssh"))
    dp = sub.add_parser("doctor", help="check whether this host can reach a scheduler, and why not")
    dp.add_argument("address", nargs="?", help="scheduler address, e.g. 10.0.0.5:8786 (default: the scheduler "
                                               "file's)")
    dp.add_argument("--scheduler-file", default=None, help="take the address (unless given) and the secret from "
                                                           "this scheduler file")
    dp.add_argument("--timeout", type=float, default=5.0, help="seconds per network step (default 5)")
    cp = sub.add_parser("config", help="print the effective configuration")
    cp.add_argument("--describe", action="store_true", help="document every key")
    args = parser.parse_args(argv)
    if args.command == "config":
        print(config.describe() if args.describe else config.pretty())
        return 0
    if args.command == "doctor":
        from .doctor import diagnose, format_report

        steps = diagnose(args.address, args.scheduler_file, args.timeout)
        print(format_report(steps))
        ok = all(st.ok for st in steps)
        print(f"\n{'this host can reach the scheduler' if ok else 'this host cannot use the scheduler: see FAIL above'}")
        return 0 if ok else 1
    if args.command == "ssh":
        return _ssh(args)
    _setup_logging(args.log_level)
    if getattr(args, "secret_stdin", False):
        _secret_from_stdin()
    code = _scheduler(args) if args.command == "scheduler" else _worker(args)
    if argv is None:  # (a process of its own: ``python -m xsched.cli``, the ``xsched`` command)
        _skip_final_collections()
    return code


def _skip_final_collections() -> None:
    """A server that has closed everything it owns is about to exit: collect once (what is
    left in reference cycles is finalized), then freeze every object, which the interpreter's
    teardown then leaves out of its own passes of the garbage collector: those took 0.1-0.2 s
    of CPU per process here, paid by every scheduler, nanny and worker as it stops."""
    gc.collect()
    gc.freeze()


def scheduler_main() -> int:
    """``xsched-scheduler`` entry point."""
    return main(["scheduler", *sys.argv[1:]])


def worker_main() -> int:
    """``xsched-worker`` entry point."""
    return main(["worker", *sys.argv[1:]])


if __name__ == "__main__":
    sys.exit(main())
