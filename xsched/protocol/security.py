"""Cluster secrets and how every peer proves it knows one, in both directions.

Every cluster has one secret (32 random bytes, hex). All ZeroMQ connections use CURVE
with two key pairs derived from it:

* a *client* connects with the derived server public key, so the handshake completes only
  if the server holds the matching secret key: a process that took over a stale port
  (a dead scheduler's or worker's) cannot finish it, and nothing it sends is decoded;
* a *server* admits, through its ZAP handler, only the derived client key, so a peer
  without the secret is refused during the handshake, before any byte reaches Python.

CURVE also encrypts. Large buffers do not travel on ZeroMQ at all but on the bulk side
channel (``protocol.bulk``), whose peers prove a one-time key received over CURVE and
whose bytes are AES-256-OCB3 encrypted unless both ends are on loopback.

``comm.security``: ``auto`` (the default; bulk bytes in clear on loopback only) or
``curve`` (bulk bytes encrypted on loopback too). The secret never appears in logs or
reprs: ``Security.__repr__`` hides it.

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

from .addressing import is_loopback

__all__ = ["Security", "AuthenticationError", "is_loopback"]

MODES = ("auto", "curve")
#: what the dashboard's token is an HMAC of (keyed by the secret): a fixed label, so the token
#: proves the secret to the scheduler that holds it and reveals nothing of it
DASHBOARD_TOKEN_LABEL = b"xsched dashboard token 1"


class AuthenticationError(ConnectionError):
    """A peer could not prove it knows the cluster secret, or refused ours."""


def _z85_key(secret: str, role: bytes) -> bytes:
    raw = hashlib.blake2b(secret.encode() + b"/" + role, digest_size=32).digest()
    return zmq.utils.z85.encode(raw)


@dataclass(frozen=True)
class Security:
    """The cluster secret and the security mode; configures sockets on both ends.

    >>> sec = Security.generate()
    >>> sec.encrypt_bulk("127.0.0.1"), sec.encrypt_bulk("10.0.0.5")
    (False, True)
    """

    secret: str
    mode: str = "auto"

    @classmethod
    def generate(cls, mode: str = "auto") -> "Security":
        """A new random secret (what every LocalCluster and `xsched scheduler` does).

        >>> len(Security.generate().secret)
        64
        """
        return cls(_secrets.token_hex(32), mode)

    def __post_init__(self):
        if self.mode == "plain":
            raise ValueError("comm.security 'plain' no longer exists: every connection is CURVE-authenticated "
                             "in both directions; use 'auto' (the default) or 'curve'")
        if self.mode not in MODES:
            raise ValueError(f"comm.security must be 'auto' or 'curve', not {self.mode!r}")
        if not isinstance(self.secret, str) or len(self.secret) < 16:
            raise ValueError("the cluster secret must be a string of at least 16 characters")

    def __repr__(self) -> str:
        return f"Security(mode={self.mode!r}, secret=<hidden>)"

    __str__ = __repr__

    def dashboard_token(self) -> str:
        """The token of this cluster's dashboard page (``client.dashboard_link`` carries it):
        HMAC-SHA256 of a fixed label keyed by the secret, in hex. It opens the dashboard,
        which only reads telemetry; it cannot be turned back into the secret, which stays
        the only key to the cluster itself.

        >>> sec = Security("0123456789abcdef" * 4)
        >>> token = sec.dashboard_token()
        >>> len(token), token == Security(sec.secret).dashboard_token(), sec.secret in token
        (64, True, False)
        """
        return hmac.new(self.secret.encode(), DASHBOARD_TOKEN_LABEL, hashlib.sha256).hexdigest()

    def encrypt_bulk(self, host: str) -> bool:
        """Whether bulk bytes to or from ``host`` are encrypted (always, except loopback in auto)."""
        return self.mode == "curve" or not is_loopback(host)

    # -- key pairs derived from the secret (CURVE) --
    def _server_keys(self) -> tuple[bytes, bytes]:
        sk = _z85_key(self.secret, b"server")
        return zmq.curve_public(sk), sk

    def _client_keys(self) -> tuple[bytes, bytes]:
        sk = _z85_key(self.secret, b"client")
        return zmq.curve_public(sk), sk

    def configure_server(self, sock: zmq.Socket) -> None:
        """Make a listening socket prove the secret and demand it (before bind)."""
        sock.zap_domain = b"xsched"
        public, secret = self._server_keys()
        sock.curve_secretkey = secret
        sock.curve_publickey = public
        sock.curve_server = True

    def configure_client(self, sock: zmq.Socket) -> None:
        """Give a connecting socket its credentials and the server key it expects (before connect)."""
        public, secret = self._client_keys()
        sock.curve_secretkey = secret
        sock.curve_publickey = public
        sock.curve_serverkey = self._server_keys()[0]

    def start_authenticator(self, context: zmq.Context) -> "_Authenticator":
        """Admit this secret's peers on every server socket of this process.

        ZeroMQ allows one ZAP handler per context, so all servers of a process (a
        scheduler and workers started in one process, or two clusters) share it.
        """
        global _AUTH
        if _AUTH is None or _AUTH.context is not context or _AUTH.context.closed:
            _AUTH = _Authenticator(context)
        _AUTH.add(self)
        return _AUTH


_AUTH = None
_ZAP_ENDPOINT = "inproc://zeromq.zap.01"  # fixed by the ZAP specification


class _Authenticator:
    """The process's ZAP handler: admits any secret registered by one of its servers."""

    def __init__(self, context: zmq.Context):
        import time

        from zmq.auth.asyncio import AsyncioAuthenticator

        self.context = context
        self._client_keys: list[bytes] = []
        self._auth = AsyncioAuthenticator(context, log=_QuietLog())
        deadline = time.monotonic() + 5
        while True:  # a handler stopped a moment ago may still hold ZAP's endpoint: wait for it
            try:
                self._auth.start()
                break
            except zmq.ZMQError as e:
                if self._auth.zap_socket is not None:  # made but not bound: close it, try again
                    self._auth.zap_socket.close(linger=0)
                    self._auth.zap_socket = None
                if e.errno != zmq.EADDRINUSE or time.monotonic() > deadline:
                    raise
                time.sleep(0.01)
        self._auth.configure_curve_callback(domain="xsched", credentials_provider=self)

    def add(self, security: "Security") -> None:
        self._client_keys.append(security._client_keys()[0])

    def callback(self, domain: str, key: bytes) -> bool:
        key = bytes(key)  # arrives z85-encoded
        return any(_secrets.compare_digest(key, k) for k in self._client_keys)

    def stop(self, security: "Security") -> None:
        """Called by each server on close; the handler stops with the last one."""
        global _AUTH
        key = security._client_keys()[0]
        if key in self._client_keys:
            self._client_keys.remove(key)
        if not self._client_keys:
            sock = self._auth.zap_socket
            if sock is not None and not sock.closed:
                try:  # release the endpoint now; close() alone lets libzmq do it later
                    sock.unbind(_ZAP_ENDPOINT)
                except zmq.ZMQError:
                    pass
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
