"""Versions: the wire protocol's number, what each side announces, and the check at registration.

``PROTOCOL_VERSION`` is an integer bumped whenever the wire changes incompatibly (an op
renamed or removed, a field whose meaning or type changes, a framing change); adding an
optional field or a new op does not bump it. Two sides talk only when their numbers are
equal. Every connection announces it, with the xsched package version, when it
registers::

    client / worker --register-client|register-worker {protocol, version, ...}--> scheduler
        scheduler: check_peer(header) -- a different (or no) protocol number:
            IncompatibleVersionError, a refusal the peer hears as its registration's error
            reply, naming both sides' versions; nothing of the peer is kept
        reply {..., protocol, version} --> the peer: check_reply(reply) -- a scheduler of
            another (or no) protocol number is refused by the peer itself (an older
            scheduler does not check)

The fields are optional in the schemas (``protocol/schemas.py``): a peer from before
versions sends neither, and must still hear the refusal rather than a schema error. A
client raises the refusal from ``Client(...)``; a worker process prints it and exits
with ``EXIT_CANNOT_CONNECT``. The nanny itself never registers with the scheduler: its
workers do, and its one exchange with the scheduler, the get-nanny-plugins a worker under
it sends before registering, carries and checks the same fields (refused before any nanny
plugin goes out); the worker leaves the refusal for its nanny, which logs it, does not
restart the worker, and exits ``EXIT_CANNOT_CONNECT`` once no worker is left.

``client.get_versions()`` reports the packages of every process (:func:`package_versions`)
through a plain ``versions`` op that the scheduler and each worker answer, rather than a
scheduler extension: the registration check must run in the servers themselves (an
extension can be switched off by ``scheduler.extensions``, the refusal never), answering
is one line in each server, and the workers are asked directly, as ``client.run`` does,
instead of through a round trip from the scheduler to each worker.

A test may make one process announce another protocol number through the environment
variable ``XSCHED_TEST_PROTOCOL_VERSION`` (read by :func:`announced_protocol`, for tests
only), so the refusal is seen between two real processes.

>>> check_peer({"protocol": PROTOCOL_VERSION, "version": XSCHED_VERSION}, "client")
>>> check_peer({"client": "c"}, "client")  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
xsched.protocol.versions.IncompatibleVersionError: this scheduler speaks xsched protocol 2 (xsched 0.1.0) and the client announced no protocol version (an xsched older than 0.1.0?); ...
"""

from __future__ import annotations

import os
import platform
from typing import Iterable

from ..errors import XschedError
from .schemas import ProtocolError

__all__ = [
    "PROTOCOL_VERSION", "XSCHED_VERSION", "TEST_PROTOCOL_VAR", "IncompatibleVersionError", "announced_protocol",
    "announce", "check_peer", "check_reply", "refusal_in", "package_versions", "PACKAGES", "mismatches",
    "mismatch_table",
]

#: The wire protocol's number: bumped when the wire changes incompatibly (see the module).
PROTOCOL_VERSION = 2

#: The xsched package version (``xsched.__version__``; pyproject.toml says the same).
XSCHED_VERSION = "0.1.0"

#: For tests only: a process started with this variable announces that protocol number.
TEST_PROTOCOL_VAR = "XSCHED_TEST_PROTOCOL_VERSION"

#: Distributions whose versions ``get_versions`` reports (beside python and xsched), by
#: their names on PyPI: what pickled functions and data need to match between processes.
PACKAGES = ("cloudpickle", "pyzmq", "msgpack", "numpy", "pandas")


class IncompatibleVersionError(XschedError, ProtocolError):
    """Two xsched processes of incompatible protocol versions met; the message names both.

    The scheduler refuses such a peer when it registers: ``Client(...)`` raises this error,
    a worker process prints it and exits. Install the same xsched version everywhere.
    """

    def __init__(self, message: str):
        ProtocolError.__init__(self, message, kind="incompatible version")

    def __reduce__(self):
        return type(self), (str(self),)


def announced_protocol() -> int:
    """The protocol number this process announces: ``PROTOCOL_VERSION``, unless a test set
    ``XSCHED_TEST_PROTOCOL_VERSION``.

    >>> announced_protocol() == PROTOCOL_VERSION
    True
    """
    fake = os.environ.get(TEST_PROTOCOL_VAR)
    return int(fake) if fake else PROTOCOL_VERSION


def announce() -> dict:
    """The fields a registration (and its reply) carries: ``{"protocol": n, "version": "x.y.z"}``.

    >>> sorted(announce())
    ['protocol', 'version']
    """
    return {"protocol": announced_protocol(), "version": XSCHED_VERSION}


def _side(protocol, version) -> str:
    if protocol is None:
        return f"announced no protocol version (an xsched older than {XSCHED_VERSION}?)"
    return f"speaks xsched protocol {protocol} (xsched {version or 'of an unknown version'})"


def _advice(theirs) -> str:
    return (f"install the same xsched version on every machine of the cluster (this one has {XSCHED_VERSION}"
            + (f", the other {theirs}" if theirs and theirs != XSCHED_VERSION else "") + ")")


def check_peer(header: dict, what: str) -> None:
    """(The scheduler) Raise IncompatibleVersionError unless a registering ``what`` ("client",
    "worker tcp://...") announced our protocol number."""
    theirs = header.get("protocol")
    ours = announced_protocol()
    if theirs == ours:
        return
    raise IncompatibleVersionError(
        f"this scheduler speaks xsched protocol {ours} (xsched {XSCHED_VERSION}) and the {what} "
        f"{_side(theirs, header.get('version'))}; they cannot work together: {_advice(header.get('version'))}")


def check_reply(reply: dict, who: str, address: str) -> None:
    """(A client or worker) Raise IncompatibleVersionError unless the scheduler's registration
    reply announced our protocol number (a scheduler older than versions announces none).

    >>> check_reply({"protocol": 7, "version": "9.0"}, "client", "tcp://h:8786")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    xsched.protocol.versions.IncompatibleVersionError: the scheduler at tcp://h:8786 speaks xsched protocol 7 (xsched 9.0) and this client speaks xsched protocol 2 (xsched 0.1.0); ...
    """
    theirs = reply.get("protocol")
    ours = announced_protocol()
    if theirs == ours:
        return
    raise IncompatibleVersionError(
        f"the scheduler at {address} {_side(theirs, reply.get('version'))} and this {who} speaks xsched "
        f"protocol {ours} (xsched {XSCHED_VERSION}); they cannot work together: {_advice(reply.get('version'))}")


def refusal_in(error: BaseException) -> IncompatibleVersionError | None:
    """The refusal a registration's error reply carries (``comm.RemoteError``), or None.

    >>> str(refusal_in(RuntimeError("IncompatibleVersionError: protocol 2 and 1")))
    'protocol 2 and 1'
    >>> refusal_in(RuntimeError("PermissionError: no")) is None
    True
    """
    prefix = f"{IncompatibleVersionError.__name__}: "
    text = str(error)
    return IncompatibleVersionError(text[len(prefix):]) if text.startswith(prefix) else None


# ---------------------------------------------------------------------- package versions
def _distribution(name: str) -> str | None:
    from importlib import metadata  # (only when asked: it costs each server process 20 ms to import)

    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def package_versions(extra: Iterable[str] = ()) -> dict:
    """This process's versions: python, xsched, the protocol number, ``PACKAGES`` and the
    ``extra`` packages asked for (None when one is not installed). Read from the installed
    metadata, nothing is imported: a name is a distribution's (``scikit-learn``) or a
    module's that one installs (``sklearn``).

    >>> v = package_versions(["pip"])
    >>> v["xsched"] == XSCHED_VERSION and v["protocol"] == PROTOCOL_VERSION and "numpy" in v
    True
    >>> v["pip"] is not None, package_versions(["no-such-package"])["no-such-package"]
    (True, None)
    """
    out = {"python": platform.python_version(), "xsched": XSCHED_VERSION, "protocol": announced_protocol()}
    for name in PACKAGES:
        out[name] = _distribution(name)
    modules = None
    for name in extra:
        if name in out:
            continue
        version = _distribution(name)
        if version is None:  # (an import name: the distribution that installs it)
            from importlib import metadata

            modules = metadata.packages_distributions() if modules is None else modules
            version = next(filter(None, map(_distribution, modules.get(name, ()))), None)
        out[name] = version
    return out


def _comparable(package: str, version):
    """What must be equal between processes: python's major.minor (bytecode and pickles
    change there, not between micro releases), every other version as it is."""
    if package == "python" and isinstance(version, str):
        return ".".join(version.split(".")[:2])
    return version


def mismatches(versions: dict) -> dict:
    """package -> {"client": v, "scheduler": v, "workers": {address: v}} for each package
    whose versions differ, from what ``get_versions`` returns. Workers that did not answer
    (an ``error`` entry) are left out.

    >>> same = {"numpy": "2.0", "python": "3.11.4"}
    >>> mismatches({"client": same, "scheduler": dict(same, python="3.11.9"), "workers": {"w": same}})
    {}
    >>> mismatches({"client": same, "scheduler": same, "workers": {"w": dict(same, numpy="1.26")}})["numpy"]
    {'client': '2.0', 'scheduler': '2.0', 'workers': {'w': '1.26'}}
    """
    client, scheduler = versions.get("client") or {}, versions.get("scheduler") or {}
    workers = {a: v for a, v in (versions.get("workers") or {}).items() if isinstance(v, dict) and "error" not in v}
    names = list(dict.fromkeys([*client, *scheduler, *(n for v in workers.values() for n in v)]))
    out = {}
    for name in names:
        seen = {"client": client.get(name), "scheduler": scheduler.get(name),
                "workers": {a: v.get(name) for a, v in sorted(workers.items())}}
        values = {_comparable(name, seen["client"]), _comparable(name, seen["scheduler"])}
        values |= {_comparable(name, v) for v in seen["workers"].values()}
        if len(values) > 1:
            out[name] = seen
    return out


def mismatch_table(found: dict) -> str:
    """A text table of what :func:`mismatches` found, one package a row.

    >>> print(mismatch_table({"numpy": {"client": "2.0", "scheduler": "2.0", "workers": {"a": "1.26", "b": "2.0"}}}))
    package  client  scheduler  workers
    -------  ------  ---------  ---------
    numpy    2.0     2.0        1.26, 2.0
    """
    def show(v) -> str:
        return "not installed" if v is None else str(v)

    rows = [("package", "client", "scheduler", "workers")]
    for name, seen in found.items():
        workers = sorted({show(v) for v in seen["workers"].values()})
        rows.append((name, show(seen["client"]), show(seen["scheduler"]), ", ".join(workers) or "-"))
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows[:1]]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows[1:]]
    return "\n".join(lines)
