"""Cluster secrets and how ZeroMQ sockets prove they know them.

Every cluster has one secret (32 random bytes, hex). A peer that does not know it is
refused by ZeroMQ's ZAP handler during the handshake, before any of its messages reach
Python code, so nothing from an unauthenticated peer is ever unpickled.

Two mechanisms, chosen by ``comm.security`` (``auto`` by default):

* ``plain``  -- ZMQ PLAIN: the secret is the password; no encryption. Used on loopback
  and ipc, where the bytes never leave the host and encryption would cost 4x throughput.
* ``curve``  -- ZMQ CURVE: client and server key pairs are derived from the secret, the
  ZAP handler admits only the derived client key; traffic is encrypted. Used between hosts.
* ``auto``   -- ``plain`` when the server listens on loopback, ``curve`` otherwise.

The secret never appears in logs or reprs: ``Security.__repr__`` hides it.

>>> s = Security.generate()
>>> "secret" in repr(s) and s.secret not in repr(s)
True
"""

from __future__ import annotations

import hashlib
import hmac
import secrets as _secrets
from dataclasses import dataclass

import zmq
import zmq.utils.z85  # a submodule: `import zmq` alone does not provide zmq.utils.z85

__all__ = ["Security", "AuthenticationError", "is_loopback"]

class AuthenticationError(ConnectionError):
    """The peer refused our credentials: the cluster secret does not match."""


def is_loopback(address: str) -> bool:
    """True for addresses that never leave this host (127.x, ::1, localhost, ipc).

    >>> is_loopback("tcp://127.0.0.1:8786"), is_loopback("tcp://10.0.0.2:8786")
    (True, False)
    """
    if address.startswith(("ipc://", "inproc://")):
        return True
    host = address.split("://", 1)[-1].rsplit(":", 1)[0].strip("[]")
    return host.startswith("127.") or host in ("localhost", "::1")


def _address_tag(address: str) -> bytes:
    """What identifies a listening endpoint on both ends: the TCP port, else the address."""
    if address.startswith("tcp://"):
        return address.rsplit(":", 1)[-1].encode()
    return address.encode()


def _plain_domain(address: str) -> bytes:
    return b"xsched-plain-" + _address_tag(address)


def _z85_key(secret: str, role: bytes) -> bytes:
    raw = hashlib.blake2b(secret.encode() + b"/" + role, digest_size=32).digest()
    return zmq.utils.z85.encode(raw)


@dataclass(frozen=True)
class Security:
    """The cluster secret and the mechanism; configures sockets on both ends.

    >>> sec = Security.generate()
    >>> sec.mechanism_for("tcp://127.0.0.1:1")
    'plain'
    """

    secret: str
    mode: str = "auto"

    @classmethod
    def generate(cls, mode: str = "auto") -> "Security":
        """A new random secret (what every LocalCluster and `xsched scheduler` does)."""
        return cls(_secrets.token_hex(32), mode)

    def __post_init__(self):
        if self.mode not in ("auto", "plain", "curve"):
            raise ValueError(f"comm.security must be 'auto', 'plain' or 'curve', not {self.mode!r}")
        if not self.secret or len(self.secret) < 16:
            raise ValueError("the cluster secret must be at least 16 characters")

    def __repr__(self) -> str:
        return f"Security(mode={self.mode!r}, secret=<hidden>)"

    def mechanism_for(self, address: str) -> str:
        """The mechanism used to reach a server at ``address``."""
        if self.mode != "auto":
            return self.mode
        return "plain" if is_loopback(address) else "curve"

    # -- key pairs derived from the secret (CURVE) --
    def _server_keys(self) -> tuple[bytes, bytes]:
        sk = _z85_key(self.secret, b"server")
        return zmq.curve_public(sk), sk

    def _client_keys(self) -> tuple[bytes, bytes]:
        sk = _z85_key(self.secret, b"client")
        return zmq.curve_public(sk), sk

    def configure_server(self, sock: zmq.Socket, address: str) -> None:
        """Make a listening socket demand credentials (before bind, with its final port)."""
        if self.mechanism_for(address) == "plain":
            # each listening port checks its own password (see plain_password)
            sock.zap_domain = _plain_domain(address)
            sock.plain_server = True
        else:
            sock.zap_domain = b"xsched"
            public, secret = self._server_keys()
            sock.curve_secretkey = secret
            sock.curve_publickey = public
            sock.curve_server = True

    def configure_client(self, sock: zmq.Socket, address: str) -> None:
        """Give a connecting socket the credentials (before connect)."""
        if self.mechanism_for(address) == "plain":
            sock.plain_username = self.username
            sock.plain_password = self.plain_password(address)
        else:
            public, secret = self._client_keys()
            sock.curve_secretkey = secret
            sock.curve_publickey = public
            sock.curve_serverkey = self._server_keys()[0]

    def plain_password(self, address: str) -> bytes:
        """The PLAIN password for the server at ``address``: an HMAC of the secret and its port.

        PLAIN does not authenticate the server, so a client gives its password to whatever
        listens at the address. A process that took over a dead worker's port therefore
        learns only the password of that port, which it owns, never the cluster secret.
        """
        return hmac.new(self.secret.encode(), b"plain:" + _address_tag(address), "sha256").hexdigest().encode()

    @property
    def username(self) -> bytes:
        """PLAIN user name: a digest of the secret, so several clusters share one process."""
        return b"xsched-" + hashlib.blake2b(self.secret.encode(), digest_size=6).hexdigest().encode()

    def start_authenticator(self, context: zmq.Context, address: str | None = None) -> "_Authenticator":
        """Admit this secret's peers on every server socket of this process.

        ZeroMQ allows one ZAP handler per context, so all servers of a process (a
        scheduler and workers started in one process, or two clusters) share it.
        """
        global _AUTH
        if _AUTH is None or _AUTH.context is not context or _AUTH.context.closed:
            _AUTH = _Authenticator(context)
        _AUTH.add(self, address)
        return _AUTH


_AUTH = None


class _Authenticator:
    """The process's ZAP handler: admits any secret registered by one of its servers."""

    def __init__(self, context: zmq.Context):
        from zmq.auth.asyncio import AsyncioAuthenticator

        self.context = context
        self._client_keys: set[bytes] = set()
        self._auth = AsyncioAuthenticator(context, log=_QuietLog())
        self._auth.start()
        self._auth.configure_curve_callback(domain="xsched", credentials_provider=self)
        self._users = 0

    def add(self, security: "Security", address: str | None = None) -> None:
        if address is not None and security.mechanism_for(address) == "plain":
            domain = _plain_domain(address).decode()
            passwords = dict(self._auth.passwords.get(domain, {}))
            passwords[security.username.decode()] = security.plain_password(address).decode()
            self._auth.configure_plain(domain=domain, passwords=passwords)
        self._client_keys.add(security._client_keys()[0])
        self._users += 1

    def callback(self, domain: str, key: bytes) -> bool:
        key = bytes(key)  # arrives z85-encoded
        return any(_secrets.compare_digest(key, k) for k in self._client_keys)

    def stop(self) -> None:
        """Called by each server on close; the handler stops with the last one."""
        global _AUTH
        self._users -= 1
        if self._users <= 0:
            self._auth.stop()
            if _AUTH is self:
                _AUTH = None


class _QuietLog:
    """The authenticator logs every handshake at DEBUG; keep only warnings, without secrets."""

    def __init__(self):
        import logging

        self._log = logging.getLogger("xsched.auth")

    def debug(self, *a, **k):
        pass

    info = debug

    def warning(self, msg, *args, **kw):
        self._log.warning(msg, *args)

    def error(self, msg, *args, **kw):
        self._log.error(msg, *args)

    def exception(self, msg, *args, **kw):
        self._log.error(msg, *args)
