"""``xsched doctor ADDRESS`` (or ``--scheduler-file FILE``): can this host reach that
scheduler, and if not, why not.

Login and compute nodes often see different networks; a worker that cannot register says
only "timed out". The doctor walks the path step by step and stops at the first step that
fails, saying what to try: the address parses, the host name resolves, this host has a
route (and which of its addresses faces the scheduler), the TCP port answers, a secret is
found (and from where), and the scheduler completes the CURVE handshake and answers.

>>> report = diagnose("localhost:1", timeout=2)   # (nothing listens on port 1)
>>> print(format_report(report))
ok    address    tcp://127.0.0.1:1
ok    resolve    127.0.0.1 -> 127.0.0.1
ok    route      this host reaches it from 127.0.0.1 (...)
FAIL  tcp        cannot connect to 127.0.0.1:1: ... Connection refused; nothing listens there: ...
"""

from __future__ import annotations

import asyncio
import os
import socket
from dataclasses import dataclass

from .protocol import ops
from .comm import Connection
from .protocol import registry
from .protocol.addressing import AddressError, local_ip_for, normalize, resolve, split

__all__ = ["Step", "diagnose", "format_report"]


@dataclass
class Step:
    """One check: what was checked, whether it passed, what was seen or what to do."""

    name: str
    ok: bool
    detail: str


def diagnose(address: str | None = None, scheduler_file: str | None = None, timeout: float = 5.0) -> list[Step]:
    """Run every check in order until one fails; returns the steps taken. Without an
    ``address``, the one in ``scheduler_file``.

    >>> [s.name for s in diagnose("not a host:x")]
    ['address']
    >>> print(format_report(diagnose(scheduler_file="gone.json")))
    FAIL  address    scheduler file 'gone.json' does not exist: start `xsched scheduler --scheduler-file gone.json` first
    """
    steps: list[Step] = []
    source = ""
    if address is None:
        if scheduler_file is None:
            return [Step("address", False, "give the scheduler's ADDRESS (e.g. 10.0.0.5:8786) or "
                                           "--scheduler-file FILE")]
        try:
            address, _ = registry.read_scheduler_file(scheduler_file)
        except (OSError, ValueError) as e:
            return [Step("address", False, str(e))]
        source = f" (from {scheduler_file})"
    try:
        target = normalize(address)
        host, port = split(target)
    except AddressError as e:
        return [Step("address", False, str(e))]
    steps.append(Step("address", True, target + source))

    ips = resolve(host)
    if not ips:
        steps.append(Step("resolve", False, f"{host!r} does not resolve on this host: use its IP address, or "
                                             "check /etc/hosts and DNS"))
        return steps
    steps.append(Step("resolve", True, f"{host} -> {', '.join(sorted(ips))}"))

    try:
        mine = local_ip_for(target)
        steps.append(Step("route", True, f"this host reaches it from {mine} (workers here listen there; "
                                          "--interface or --host picks another)"))
    except AddressError as e:
        steps.append(Step("route", False, str(e)))
        return steps

    ip = sorted(ips, key=lambda a: ":" in a)[0]
    try:
        with socket.create_connection((ip, port), timeout=timeout):
            pass
        steps.append(Step("tcp", True, f"port {port} on {ip} accepts connections"))
    except OSError as e:
        hint = ("nothing listens there: is the scheduler running, on this port, and listening on that "
                "interface (xsched scheduler --host / --interface)?") if isinstance(e, ConnectionRefusedError) \
            else "a firewall or the network drops it, or the host is down"
        steps.append(Step("tcp", False, f"cannot connect to {ip}:{port}: {e}; {hint}"))
        return steps

    try:
        target, security = registry.connection_info(target, scheduler_file)
        source = ("scheduler file " + scheduler_file if scheduler_file else
                  "$XSCHED_SECRET" if os.environ.get("XSCHED_SECRET") else "the registry in " + registry.registry_dir())
        steps.append(Step("secret", True, f"from {source}"))
    except (LookupError, OSError, ValueError) as e:
        steps.append(Step("secret", False, str(e)))
        return steps

    steps.append(asyncio.run(_handshake(target, security, timeout)))
    return steps


async def _handshake(address: str, security, timeout: float) -> Step:
    conn = Connection(address, security).connect()
    try:
        reply, _ = await conn.request({"op": ops.SCHEDULER_INFO}, timeout=timeout)
        info = reply.get("info", reply)
        workers = info.get("workers", {}) if isinstance(info, dict) else {}
        return Step("scheduler", True, f"CURVE handshake done; scheduler {info.get('id', '?')} answers with "
                                       f"{len(workers)} worker(s)")
    except asyncio.TimeoutError:
        return Step("scheduler", False, f"no answer within {timeout:.0f}s after connecting: not an xsched "
                                        "scheduler, or overloaded")
    except Exception as e:  # AuthenticationError, RemoteError, CommClosedError: all say why
        return Step("scheduler", False, f"{type(e).__name__}: {e}")
    finally:
        await conn.close()


def format_report(steps: list[Step]) -> str:
    """The steps as lines a user reads top to bottom; the last line says the verdict.

    >>> print(format_report([Step("address", True, "tcp://h:1")]))
    ok    address    tcp://h:1
    """
    lines = [f"{'ok' if s.ok else 'FAIL':5} {s.name:10} {s.detail}" for s in steps]
    return "\n".join(lines)
