"""Scheduler files, and the registry that finds a cluster's secret by its address.

Every scheduler this user starts (``xsched scheduler``, LocalCluster) writes a scheduler
file into ``<runtime dir>/schedulers/`` and removes it on close. ``Client("host:8786")``
and ``xsched worker host:8786`` without a secret look the address up there, so users
type addresses, never secrets. The runtime directory is ``$XSCHED_RUNTIME_DIR`` or
``~/.xsched``: on an HPC cluster with a shared home directory, a scheduler started on one
node is found from every other node with the same commands.

Rules that keep this safe: the directory is 0700 and the files 0600, both owned by the
user; a file or directory that others can read, or that another user owns, is refused
with an error saying what to fix. Entries of schedulers that died on this host (their pid
is gone) are ignored and removed. ``localhost`` matches only schedulers of this host.

>>> import tempfile, os
>>> os.environ["XSCHED_RUNTIME_DIR"] = tempfile.mkdtemp()
>>> from xsched.protocol.security import Security
>>> sec = Security.generate()
>>> path = register("tcp://127.0.0.1:8786", sec, "scheduler-1234")
>>> lookup("localhost:8786")[1] == sec
True
>>> unregister(path)
"""

from __future__ import annotations

import json
import os
import socket
import stat
import tempfile
import time

from .addressing import AddressError, host_ips, is_loopback, is_wildcard, normalize, resolve, split
from .schemas import DASHBOARD
from .security import Security

__all__ = [
    "runtime_dir", "registry_dir", "write_scheduler_file", "read_scheduler_file", "scheduler_file_dashboard",
    "register",
    "unregister", "lookup", "entries", "SecretNotFoundError", "UnsafeFileError",
]


class SecretNotFoundError(LookupError):
    """No secret for an address: the message says where we looked and how to give one."""


class UnsafeFileError(PermissionError):
    """A scheduler file or runtime directory that others could read or write."""


def runtime_dir(create: bool = True) -> str:
    """The user's private xsched directory: ``$XSCHED_RUNTIME_DIR`` or ``~/.xsched`` (0700).

    >>> os.path.isdir(runtime_dir())
    True
    """
    path = os.environ.get("XSCHED_RUNTIME_DIR") or os.path.join(os.path.expanduser("~"), ".xsched")
    if create:
        os.makedirs(path, mode=0o700, exist_ok=True)
    if os.path.isdir(path):
        _check_private(path, directory=True)
    return path


def registry_dir(create: bool = True) -> str:
    """Where running schedulers register themselves: ``<runtime dir>/schedulers``."""
    path = os.path.join(runtime_dir(create), "schedulers")
    if create:
        os.makedirs(path, mode=0o700, exist_ok=True)
    if os.path.isdir(path):
        _check_private(path, directory=True)
    return path


def _check_private(path: str, directory: bool = False) -> None:
    st = os.stat(path)
    if st.st_uid != os.getuid():
        raise UnsafeFileError(f"{path} belongs to uid {st.st_uid}, not to you (uid {os.getuid()}): "
                              "xsched reads secrets only from your own files; remove it or point "
                              "XSCHED_RUNTIME_DIR elsewhere")
    mode = stat.S_IMODE(st.st_mode)
    if mode & 0o077:
        fix = "chmod 700" if directory else "chmod 600"
        raise UnsafeFileError(f"{path} is readable or writable by others (mode {mode:o}); it holds cluster "
                              f"secrets: run `{fix} {path}` (or remove it) and try again")


def write_scheduler_file(path: str, address: str, security: Security, scheduler_id: str,
                         extra: dict | None = None) -> None:
    """Write address and secret to ``path``, readable by its owner only (mode 0600).

    >>> # write_scheduler_file("/shared/scheduler.json", "tcp://10.0.0.5:8786", sec, "scheduler-1")
    """
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".scheduler-", suffix=".tmp", dir=directory)
    with os.fdopen(fd, "w") as f:  # mkstemp: a fresh name, O_EXCL, mode 0600
        json.dump(dict(extra or {}, address=address, secret=security.secret, security=security.mode,
                       id=scheduler_id, pid=os.getpid()), f)
    os.chmod(tmp, 0o600)
    os.replace(tmp, path)


def _read(path: str) -> dict:
    _check_private(path)
    with open(path) as f:
        data = json.load(f)
    if not isinstance(data, dict) or "address" not in data or "secret" not in data:
        raise ValueError("missing 'address' or 'secret'")
    return data


def read_scheduler_file(path: str) -> tuple[str, Security]:
    """(address, Security) from a scheduler file; clear errors when missing, unsafe or malformed.

    >>> # address, security = read_scheduler_file("/shared/scheduler.json")
    """
    try:
        data = _read(path)
        return normalize(data["address"]), Security(data["secret"], data.get("security", "auto"))
    except FileNotFoundError:
        raise FileNotFoundError(f"scheduler file {path!r} does not exist: start `xsched scheduler "
                                f"--scheduler-file {path}` first") from None
    except (ValueError, KeyError, TypeError) as e:
        raise ValueError(f"scheduler file {path!r} is not a valid xsched scheduler file ({e})") from None


def scheduler_file_dashboard(path: str) -> dict | None:
    """The dashboard page a scheduler file names (its scheduler wrote what a registering
    client hears: port, token, host; ``schemas.DASHBOARD``), or None when it serves none.

    >>> import tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "scheduler.json")
    >>> write_scheduler_file(path, "tcp://127.0.0.1:8786", Security.generate(), "scheduler-1",
    ...                      extra={"dashboard": {"port": 8787, "token": "ab12", "host": None}})
    >>> scheduler_file_dashboard(path)
    {'port': 8787, 'token': 'ab12', 'host': None}
    """
    try:
        dashboard = _read(path).get("dashboard")
    except FileNotFoundError:
        raise FileNotFoundError(f"scheduler file {path!r} does not exist: start `xsched scheduler "
                                f"--scheduler-file {path}` first") from None
    return dashboard if DASHBOARD.ok(dashboard) else None


def register(address: str, security: Security, scheduler_id: str, bound_host: str | None = None,
             remote: bool = False, name: str | None = None) -> str:
    """Record a running scheduler so clients and workers find its secret by address.

    ``bound_host`` is the host the listener was bound to; a wildcard (``0.0.0.0``) makes
    every address of this host match. ``remote=True`` records a scheduler that runs on
    another host (started over ssh from here): it matches its address only, never this
    host's names. ``name``: the cluster's name a person chose (``LocalCluster(name=...)``),
    shown by the JupyterLab panel. Returns the entry's path, for :func:`unregister`.
    """
    host, port = split(address)
    bound = bound_host if bound_host is not None else host
    if is_wildcard(bound) and not remote:
        ips = sorted(host_ips())
    else:
        ips = sorted(resolve(bound) or {bound})
    names = [] if remote else sorted({socket.gethostname(), socket.getfqdn()})
    path = os.path.join(registry_dir(), f"{scheduler_id}.json")
    write_scheduler_file(path, address, security, scheduler_id, extra={
        "port": port, "ips": ips, "hostname": socket.gethostname(), "names": names,
        "loopback_only": all(is_loopback(ip) for ip in ips), "started": time.time(),
        "create_time": _create_time(os.getpid()), **({"name": str(name)} if name else {}),
    })
    return path


def unregister(path: str | None) -> None:
    """Remove a registry entry (a scheduler closing); missing entries are fine."""
    if path:
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass


def _create_time(pid: int) -> float | None:
    import psutil

    try:
        return psutil.Process(pid).create_time()
    except psutil.Error:
        return None


def _alive(entry: dict) -> bool:
    """False only when we can tell: the entry is from this host and its process is gone."""
    if entry.get("hostname") != socket.gethostname():
        return True
    pid = entry.get("pid")
    if not isinstance(pid, int):
        return False
    created = _create_time(pid)
    if created is None:
        return False
    want = entry.get("create_time")
    # a reused pid is another process; 2 s, not 1: a process's start time is the boot time
    # (whole seconds, recomputed from the wall clock) plus its start, so a clock adjustment of
    # a few milliseconds can move it by one second, and a live scheduler looked dead (its
    # entry was removed)
    return want is None or abs(created - want) < 2.0


def entries() -> list[dict]:
    """Every live registry entry (dead ones of this host are removed on the way).

    >>> [e["address"] for e in entries()]   # doctest: +SKIP
    ['tcp://127.0.0.1:8786']
    """
    directory = registry_dir(create=False)
    if not os.path.isdir(directory):
        return []
    out = []
    for name in sorted(os.listdir(directory)):
        if not name.endswith(".json"):
            continue
        path = os.path.join(directory, name)
        try:
            data = _read(path)
        except FileNotFoundError:
            continue
        except (ValueError, TypeError, OSError) as e:
            if isinstance(e, UnsafeFileError):
                raise
            continue  # half-written or foreign JSON: not ours to judge
        if not _alive(data):
            unregister(path)
            continue
        data["path"] = path
        out.append(data)
    return out


def _matches(entry: dict, host: str, port: int, target_ips: set[str]) -> bool:
    if entry.get("port") != port:
        return False
    same_host = entry.get("hostname") == socket.gethostname()
    if is_loopback(host):
        # loopback means "this host": never a scheduler of another node sharing the home directory
        return same_host and (entry.get("loopback_only") or any(is_loopback(ip) for ip in entry.get("ips", [])))
    if host in entry.get("names", ()):
        return True
    return bool(target_ips & set(entry.get("ips", ())))


def lookup(address: str) -> tuple[str, Security]:
    """(address, Security) of the registered scheduler at ``address``; raises SecretNotFoundError.

    >>> # address, security = lookup("10.0.0.5:8786")
    """
    host, port = split(address)
    target = normalize(address)
    ips = set() if is_loopback(host) else resolve(host)
    found = [e for e in entries() if _matches(e, host, port, ips)]
    if found:
        best = max(found, key=lambda e: e.get("started", 0))
        return target, Security(best["secret"], best.get("security", "auto"))
    raise SecretNotFoundError(
        f"no secret for the scheduler at {address}: no running scheduler with that address is "
        f"registered in {registry_dir(create=False)} (schedulers started by you register there; a "
        "shared home directory makes that work across nodes). Give the secret one of three ways: "
        "Client(scheduler_file=...) / `xsched worker --scheduler-file FILE` with the file the scheduler "
        "wrote, the XSCHED_SECRET environment variable, or Client(address, security=secret)")


def connection_info(address: str | None = None, scheduler_file: str | None = None,
                    security: "Security | str | None" = None, mode: str = "auto") -> tuple[str, Security]:
    """(address, Security) to reach a scheduler, found the way users expect.

    In order: ``scheduler_file``; then ``security`` (a Security or the secret string);
    then ``$XSCHED_SECRET``; then the registry of schedulers this user runs.

    >>> # connection_info("localhost:8786") -> ('tcp://127.0.0.1:8786', Security(...))
    """
    if scheduler_file is not None:
        file_address, file_security = read_scheduler_file(scheduler_file)
        address = address or file_address
        security = security or file_security
    if address is None:
        raise AddressError("no scheduler address: give an address like 'host:8786' or a scheduler file")
    address = normalize(address)
    if isinstance(security, str):
        security = Security(security, mode)
    if security is None:
        secret = os.environ.get("XSCHED_SECRET")
        if secret:
            security = Security(secret, mode)
        else:
            address, security = lookup(address)
    return address, security


__all__ += ["AddressError", "connection_info"]
