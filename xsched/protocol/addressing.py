"""Addresses as users type them, and the host's own addresses.

Users write ``localhost:8786``, ``10.0.0.5:8786``, ``tcp://node1:8786``, ``[::1]:8786``
or just a host name; ZeroMQ wants ``tcp://host:port`` and fails with a bare
``Invalid argument`` otherwise. Everything that takes an address from a user goes
through :func:`normalize`, so a bad address is an ``AddressError`` naming it.

>>> normalize("localhost:8786")
'tcp://127.0.0.1:8786'
>>> normalize("[::1]:8786")
'tcp://[::1]:8786'
>>> split("tcp://10.0.0.5:9000")
('10.0.0.5', 9000)
"""

from __future__ import annotations

import ipaddress
import socket

__all__ = [
    "AddressError", "DEFAULT_PORT", "normalize", "split", "join", "is_loopback", "is_ipv6",
    "interface_address", "local_ip_for", "host_ips", "resolve", "is_wildcard",
    "DEFAULT_DASHBOARD_PORT", "parse_dashboard_address", "dashboard_link",
]

DEFAULT_PORT = 8786
#: where a scheduler serves its dashboard page unless told otherwise (``--dashboard-address``)
DEFAULT_DASHBOARD_PORT = 8787


class AddressError(ValueError):
    """An address that cannot be used; the message names it and shows what works."""


_EXAMPLES = "write it like 'host:8786', 'tcp://10.0.0.5:8786' or '[::1]:8786'"


def split(address: str, default_port: int | None = DEFAULT_PORT) -> tuple[str, int]:
    """``(host, port)`` of an address in any of the accepted spellings.

    >>> split("node1"), split("tcp://[fe80::1]:1234")
    (('node1', 8786), ('fe80::1', 1234))
    """
    if not isinstance(address, str) or not address.strip():
        raise AddressError(f"an address must be a non-empty string, not {address!r}; {_EXAMPLES}")
    text = address.strip()
    scheme, sep, rest = text.partition("://")
    if not sep:
        rest = text
    elif scheme != "tcp":
        raise AddressError(f"address {address!r}: only tcp:// addresses are supported; {_EXAMPLES}")
    if rest.startswith("["):
        host, bracket, tail = rest[1:].partition("]")
        if not bracket or (tail and not tail.startswith(":")):
            raise AddressError(f"address {address!r} has an unclosed IPv6 bracket; {_EXAMPLES}")
        port_text = tail[1:] if tail else ""
    elif rest.count(":") > 1:  # a bare IPv6 literal: no port can be told apart
        host, port_text = rest, ""
    else:
        host, _, port_text = rest.partition(":")
    if not host or "/" in host or " " in host:
        raise AddressError(f"address {address!r} has no usable host; {_EXAMPLES}")
    if port_text == "":
        if default_port is None:
            raise AddressError(f"address {address!r} has no port; {_EXAMPLES}")
        return host, default_port
    try:
        port = int(port_text)
    except ValueError:
        raise AddressError(f"address {address!r}: port {port_text!r} is not a number; {_EXAMPLES}") from None
    if not 0 <= port <= 65535:
        raise AddressError(f"address {address!r}: port {port} is outside 0-65535; {_EXAMPLES}")
    return host, port


def is_ipv6(host: str) -> bool:
    """True for an IPv6 literal such as ``::1`` (host names are not resolved)."""
    try:
        return ipaddress.ip_address(host.strip("[]").split("%", 1)[0]).version == 6
    except ValueError:
        return False


def join(host: str, port: int) -> str:
    """``tcp://host:port``, with brackets around IPv6 literals.

    >>> join("::1", 8786)
    'tcp://[::1]:8786'
    """
    host = host.strip("[]")
    return f"tcp://[{host}]:{port}" if is_ipv6(host) else f"tcp://{host}:{port}"


def normalize(address: str, default_port: int | None = DEFAULT_PORT) -> str:
    """The ``tcp://host:port`` form ZeroMQ accepts; ``localhost`` becomes 127.0.0.1.

    >>> normalize("tcp://node1")
    'tcp://node1:8786'
    """
    host, port = split(address, default_port)
    if host == "localhost":
        host = "127.0.0.1"
    return join(host, port)


def is_wildcard(host: str) -> bool:
    """True for the "every interface" hosts: ``0.0.0.0``, ``::``, ``*`` and ``""``."""
    return host.strip("[]") in ("", "*", "0.0.0.0", "::")


def is_loopback(address: str) -> bool:
    """True for addresses that never leave this host (127.x, ::1, localhost).

    >>> is_loopback("tcp://127.0.0.1:8786"), is_loopback("10.0.0.2:8786")
    (True, False)
    """
    try:
        host = split(address, default_port=0)[0] if ":" in address or "/" in address else address
    except AddressError:
        return False
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def resolve(host: str) -> set[str]:
    """Every IP address ``host`` names (empty if it does not resolve).

    >>> "127.0.0.1" in resolve("localhost")
    True
    """
    host = host.strip("[]")
    try:
        return {ipaddress.ip_address(host).compressed}
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
    except (socket.gaierror, UnicodeError, OSError):
        return set()
    return {ipaddress.ip_address(info[4][0].split("%", 1)[0]).compressed for info in infos}


def host_ips() -> set[str]:
    """Every IP address of this host's interfaces (loopback included)."""
    import psutil

    ips = set()
    for addrs in psutil.net_if_addrs().values():
        for a in addrs:
            if a.family in (socket.AF_INET, socket.AF_INET6):
                try:
                    ips.add(ipaddress.ip_address(a.address.split("%", 1)[0]).compressed)
                except ValueError:
                    continue
    return ips


def interface_address(name: str, ipv6: bool = False) -> str:
    """The IP address of network interface ``name`` (dask's ``--interface``).

    >>> interface_address("lo")
    '127.0.0.1'
    """
    import psutil

    interfaces = psutil.net_if_addrs()
    if name not in interfaces:
        raise AddressError(f"no network interface named {name!r} on this host; it has "
                           f"{', '.join(sorted(interfaces)) or 'none'}")
    family = socket.AF_INET6 if ipv6 else socket.AF_INET
    for a in interfaces[name]:
        if a.family == family:
            return a.address.split("%", 1)[0]
    kind = "IPv6" if ipv6 else "IPv4"
    raise AddressError(f"network interface {name!r} has no {kind} address")


def local_ip_for(remote: str) -> str:
    """The address of this host on the route to ``remote`` (what peers can reach us at).

    No packet is sent: connecting a UDP socket only asks the kernel for the route.

    >>> local_ip_for("tcp://127.0.0.1:8786")
    '127.0.0.1'
    """
    host = split(remote, default_port=DEFAULT_PORT)[0]
    if is_loopback(host) or host == "localhost":
        return "::1" if is_ipv6(host) else "127.0.0.1"
    ips = resolve(host)
    if not ips:
        raise AddressError(f"cannot resolve the host of {remote!r}: check the name or use its IP address")
    ip = sorted(ips, key=is_ipv6)[0]
    family = socket.AF_INET6 if is_ipv6(ip) else socket.AF_INET
    with socket.socket(family, socket.SOCK_DGRAM) as s:
        try:
            s.connect((ip, 9))
            return s.getsockname()[0].split("%", 1)[0]
        except OSError as e:
            raise AddressError(f"this host has no route to {remote!r} ({e}); "
                               "give --host or --interface explicitly") from None


def default_contact_ip() -> str:
    """The address other hosts most likely reach us at: the one on the default route,
    else the first non-loopback IPv4 address (a host without a default route), else 127.0.0.1.

    >>> default_contact_ip() != ""
    True
    """
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect(("10.255.255.255", 9))
            return s.getsockname()[0]
        except OSError:
            pass
    others = sorted(ip for ip in host_ips() if not is_ipv6(ip) and not is_loopback(ip))
    return others[0] if others else "127.0.0.1"


_DASHBOARD_EXAMPLES = "write it like ':8787', '8787', '127.0.0.1:8787' or '[::1]:0', or None for no dashboard"


def parse_dashboard_address(value) -> tuple[str, int] | None:
    """``(host, port)`` of a dashboard address as users give it, or None for no dashboard.

    An empty host (``":8787"``) means the scheduler's own host (every interface when the
    scheduler listens on every interface); port 0 is any free port. ``None``, ``"none"`` and
    ``""`` switch the dashboard off.

    >>> parse_dashboard_address(":8787"), parse_dashboard_address(8790), parse_dashboard_address("[::1]:0")
    (('', 8787), ('', 8790), ('::1', 0))
    >>> parse_dashboard_address("127.0.0.1:8787"), parse_dashboard_address("None")
    (('127.0.0.1', 8787), None)
    >>> parse_dashboard_address("host:http")
    Traceback (most recent call last):
    ...
    xsched.protocol.addressing.AddressError: dashboard address 'host:http': the port 'http' is not a number; write it like ':8787', '8787', '127.0.0.1:8787' or '[::1]:0', or None for no dashboard
    """
    if value is None or value is False:
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        text = str(value)
    elif isinstance(value, str):
        text = value.strip()
    else:
        raise AddressError(f"a dashboard address must be a string, a port number or None, not "
                           f"{type(value).__name__} {value!r}; {_DASHBOARD_EXAMPLES}")
    if text.lower() in ("", "none", "null", "false", "off"):
        return None
    if text.startswith("["):
        host, bracket, tail = text[1:].partition("]")
        if not bracket or not tail.startswith(":"):
            raise AddressError(f"dashboard address {value!r}: an IPv6 host needs its brackets closed and a port "
                               f"after them; {_DASHBOARD_EXAMPLES}")
        port_text = tail[1:]
    elif ":" in text:
        host, _, port_text = text.rpartition(":")
        if ":" in host:
            raise AddressError(f"dashboard address {value!r}: put an IPv6 host in brackets; {_DASHBOARD_EXAMPLES}")
    else:
        host, port_text = "", text
    if "/" in host or " " in host:
        raise AddressError(f"dashboard address {value!r} has no usable host; {_DASHBOARD_EXAMPLES}")
    try:
        port = int(port_text)
    except ValueError:
        raise AddressError(f"dashboard address {value!r}: the port {port_text!r} is not a number; "
                           f"{_DASHBOARD_EXAMPLES}") from None
    if not 0 <= port <= 65535:
        raise AddressError(f"dashboard address {value!r}: the port {port} is outside 0-65535; {_DASHBOARD_EXAMPLES}")
    return host, port


def dashboard_link(dashboard: dict | None, *addresses: str | None) -> str | None:
    """The URL of a scheduler's dashboard page, or None when it serves none.

    ``dashboard``: what the scheduler's register-client reply says of it (``port``,
    ``token``, and ``host`` when it listens on a host of its own). Otherwise the host is
    the first of ``addresses`` that is no wildcard: the address the client reached the
    scheduler by, then the one the scheduler advertises; 127.0.0.1 when all are wildcards.

    >>> d = {"port": 8787, "token": "ab12"}
    >>> dashboard_link(d, "tcp://10.0.0.5:8786")
    'http://10.0.0.5:8787/status?token=ab12'
    >>> dashboard_link(d, "tcp://0.0.0.0:8786", "tcp://[fe80::2]:8786")
    'http://[fe80::2]:8787/status?token=ab12'
    >>> dashboard_link(dict(d, host="127.0.0.1"), "tcp://node7:8786"), dashboard_link(None, "tcp://node7:8786")
    ('http://127.0.0.1:8787/status?token=ab12', None)
    """
    if not dashboard:
        return None
    candidates = [dashboard.get("host")] + [split(a)[0] for a in addresses if a]
    host = next((h for h in candidates if h and not is_wildcard(h)), "127.0.0.1").strip("[]")
    if is_ipv6(host):
        host = f"[{host}]"
    return f"http://{host}:{int(dashboard['port'])}/status?token={dashboard['token']}"
