"""Bulk side channel: large buffers between processes over a plain TCP socket.

ZeroMQ's TCP engine reads in small batches, which caps one large message near 1 GiB/s on
loopback here; a plain socket read straight into a preallocated buffer (``recv_into``)
goes two to three times faster and leaves the array writeable. So large ``get-data``
replies travel in two parts:

    requester --get-data (ZeroMQ, authenticated)--> holder
    requester <--reply: pickle heads + {port, token, lengths}-- holder   (offer(buffers))
    requester --connect port, send token--> holder's BulkServer thread
    requester <--raw buffer bytes (sendall from the array's memory)-- holder

Only raw buffer contents cross the side channel; the pickle streams that give them
meaning arrive over the authenticated ZeroMQ channel, and a peer without the one-time
token (delivered over that channel) gets nothing. Nothing read from the side channel is
ever unpickled on its own. The side channel is not encrypted, so it is used only where
the ZeroMQ connection is not either (PLAIN, i.e. loopback by default); under CURVE
everything stays on the encrypted ZeroMQ connection.

>>> server = BulkServer("127.0.0.1"); server.start()
>>> offer = server.offer([memoryview(b"x" * 10)])
>>> bytes(fetch_buffers("127.0.0.1", offer)[0])
b'xxxxxxxxxx'
>>> server.close()
"""

from __future__ import annotations

import logging
import secrets
import socket
import threading
import time

logger = logging.getLogger("xsched.bulk")

__all__ = ["BulkServer", "fetch_buffers", "BULK_MIN_BYTES"]

#: Replies whose large buffers add up to at least this many bytes use the side channel.
BULK_MIN_BYTES = 4 * 2**20
_FRAME_MIN = 256 * 2**10
_TOKEN_BYTES = 16
_EXPIRE = 120.0


class BulkServer:
    """Serves offered buffers, each set once, to whoever presents its token."""

    def __init__(self, host: str = "127.0.0.1"):
        self.host = host
        self.port: int | None = None
        self._sock: socket.socket | None = None
        self._offers: dict[bytes, tuple[float, list]] = {}
        self._lock = threading.Lock()
        self._closed = False
        self._thread: threading.Thread | None = None
        self.bytes_sent = 0

    def start(self) -> int:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((self.host, 0))
        sock.listen(64)
        self._sock = sock
        self.port = sock.getsockname()[1]
        self._thread = threading.Thread(target=self._accept_loop, name="xsched-bulk", daemon=True)
        self._thread.start()
        return self.port

    def offer(self, buffers: list) -> dict:
        """Keep ``buffers`` for one fetch; returns what the requester needs to fetch them."""
        token = secrets.token_bytes(_TOKEN_BYTES)
        self._expire()
        with self._lock:
            self._offers[token] = (time.monotonic(), buffers)
        return {"port": self.port, "token": token, "lengths": [memoryview(b).nbytes for b in buffers]}

    def _expire(self) -> None:
        now = time.monotonic()
        with self._lock:
            for t in [t for t, (when, _) in self._offers.items() if now - when > _EXPIRE]:
                del self._offers[t]  # never fetched (the requester died): let the data go

    def _accept_loop(self) -> None:
        self._sock.settimeout(10.0)
        while not self._closed:
            self._expire()
            try:
                conn, _ = self._sock.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            conn.settimeout(None)
            threading.Thread(target=self._serve, args=(conn,), name="xsched-bulk-send", daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        with conn:
            try:
                conn.settimeout(30)
                token = _recv_exact(conn, _TOKEN_BYTES)
                with self._lock:
                    entry = self._offers.pop(bytes(token), None)
                if entry is None:
                    return  # unknown or replayed token: say nothing
                for buf in entry[1]:
                    mv = memoryview(buf).cast("B")
                    conn.sendall(mv)
                    self.bytes_sent += mv.nbytes
            except OSError as e:
                logger.debug("bulk transfer aborted: %s", e)

    def close(self) -> None:
        self._closed = True
        if self._sock is not None:
            try:
                self._sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            self._sock.close()
        with self._lock:
            self._offers.clear()


def _recv_exact(conn: socket.socket, n: int) -> bytearray:
    buf = bytearray(n)
    _recv_into(conn, memoryview(buf))
    return buf


def _recv_into(conn: socket.socket, view: memoryview) -> None:
    got = 0
    n = view.nbytes
    while got < n:
        k = conn.recv_into(view[got:], min(n - got, 16 * 2**20))
        if k == 0:
            raise ConnectionError("bulk peer closed the connection early")
        got += k


def fetch_buffers(host: str, offer: dict, timeout: float = 60) -> list:
    """Blocking: fetch an offer's buffers into fresh, writeable buffers (run in a thread).

    The buffers are uninitialised numpy byte arrays: ``bytearray(n)`` would first write
    n zero bytes, which costs as much as the transfer itself for large arrays.
    """
    out = [_empty(n) for n in offer["lengths"]]
    with socket.create_connection((host, offer["port"]), timeout=timeout) as conn:
        conn.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 * 2**20)
        conn.sendall(bytes(offer["token"]))
        for buf in out:
            _recv_into(conn, memoryview(buf))
    return out


def _empty(n: int):
    try:
        import numpy as np
    except ImportError:  # pragma: no cover - numpy is a dependency
        return bytearray(n)
    return np.empty(n, dtype=np.uint8)


def split_for_bulk(payload: list) -> tuple[list, list[int], list]:
    """(payload with big frames blanked, their indices, the big frames) — or no split."""
    idx = [i for i, f in enumerate(payload) if _nbytes(f) >= _FRAME_MIN]
    if sum(_nbytes(payload[i]) for i in idx) < BULK_MIN_BYTES:
        return payload, [], []
    big = [payload[i] for i in idx]
    small = list(payload)
    for i in idx:
        small[i] = b""
    return small, idx, big


def _nbytes(frame) -> int:
    if hasattr(frame, "buffer"):
        return len(frame.buffer)
    return memoryview(frame).nbytes


def host_of(address: str) -> str:
    return address.split("://", 1)[-1].rsplit(":", 1)[0].strip("[]")


async def get_data(conn, keys: list[str], address: str, timeout: float | None = 300) -> dict:
    """Ask the worker at ``address`` (over ``conn``) for ``keys``; large buffers come in bulk."""
    import asyncio

    from .messages import unpack_objects

    # the side channel is not encrypted: only where ZeroMQ does not encrypt either (PLAIN)
    bulk_ok = conn.security.mechanism_for(address) == "plain"
    reply, payload = await conn.request({"op": "get-data", "keys": keys, "bulk": bulk_ok}, timeout=timeout)
    bulk = reply.get("bulk")
    if bulk:
        bufs = await asyncio.get_running_loop().run_in_executor(None, fetch_buffers, host_of(address), bulk)
        payload = list(payload)
        for i, buf in zip(bulk["index"], bufs):
            payload[i] = buf
    return unpack_objects(reply, payload).get("data", {})


def serve_data(server: "BulkServer | None", data: dict, bulk_ok: bool):
    """The reply to a get-data request: a Msg, with big buffers offered on the side channel."""
    from ..comm import Msg
    from .serialize import dumps

    if server is None or not bulk_ok:
        return Msg({"status": "OK"}, {"data": data})
    frames = dumps(data)
    small, idx, big = split_for_bulk(frames)
    if not idx:
        return Msg({"status": "OK"}, raw={"data": frames})
    offer = server.offer(big)
    return Msg({"status": "OK", "bulk": dict(offer, index=idx)}, raw={"data": small})
