"""ZeroMQ sockets on asyncio: listeners, connections, request/reply and batching.

Data flow::

    peer DEALER --frames--> Listener (ROUTER) --recv loop--> handler(peer, header, payload)
                                  ^  send(peer, ...) via Batcher (coalesces per loop tick)
    Connection (DEALER) --request(rid)--> remote Listener --reply(rid)--> future resolved
                        <--unsolicited msgs-- handler(header, payload)

* Every socket speaks CURVE with keys derived from the cluster secret
  (``protocol.security``): a Listener's ZAP handler refuses peers without it, and a
  Connection completes its handshake only with a server that has it, so neither side
  decodes a byte from a peer that has not proven the secret.
* Before authentication a peer can make a listener buffer at most one frame of
  ``MAX_WIRE_FRAME`` bytes (ZMQ_MAXMSGSIZE), and must finish its handshake within
  ``HANDSHAKE_SECONDS``. Larger frames of authenticated peers are cut into parts on
  send and joined on receipt (``messages.chunk``), so no message size limit shows.
* Small messages queued for the same peer within one event-loop tick travel as one
  ``batch`` message; messages with payload frames go on their own, in order.
* A monitor socket reports disconnects. It names a file descriptor, not a peer, and a
  restarted worker may reuse the descriptor of the one that died, so a Listener then
  probes its known peers: with ROUTER_MANDATORY a send to a vanished peer fails at once
  (EHOSTUNREACH). A killed worker is noticed within a second, not after a heartbeat
  timeout, and a live peer is never mistaken for a dead one. A Connection fails its
  pending requests.
* Garbage on any socket is logged once per peer and dropped; it never stops a loop.
"""

from __future__ import annotations

import asyncio
import inspect
import itertools
import logging
from typing import Any, Awaitable, Callable

import msgpack
import zmq
import zmq.asyncio
from zmq.utils.monitor import parse_monitor_message

from .protocol.addressing import AddressError, is_ipv6, join, normalize, split
from .protocol.messages import MAX_WIRE_FRAME, chunk, decode, encode, unchunk
from .protocol.security import AuthenticationError, Security
from .protocol.serialize import dumps

logger = logging.getLogger("xsched.comm")

__all__ = ["Listener", "Connection", "ConnectionPool", "Msg", "CommClosedError", "RemoteError", "context"]


class CommClosedError(ConnectionError):
    """The peer went away (or never answered) while we waited for it."""


class RemoteError(RuntimeError):
    """A request failed on the remote side; the message carries its explanation."""


class Msg:
    """A reply or message with optional pickled objects or forwarded raw frames."""

    __slots__ = ("header", "objects", "raw")

    def __init__(self, header: dict, objects: dict | None = None, raw: dict | None = None):
        self.header, self.objects, self.raw = header, objects, raw

    def frames(self) -> list:
        return encode(self.header, self.objects, self.raw)


_context: zmq.asyncio.Context | None = None


def context() -> zmq.asyncio.Context:
    """The process's asyncio ZeroMQ context (one per process, as ZeroMQ recommends)."""
    global _context
    if _context is None or _context.closed:
        _context = zmq.asyncio.Context()
    return _context


#: An unauthenticated peer must complete the CURVE handshake within this time.
HANDSHAKE_SECONDS = 10


def _tune(sock: zmq.Socket, address: str) -> None:
    sock.linger = 0
    sock.sndhwm = 0
    sock.rcvhwm = 0
    sock.heartbeat_ivl = 1000
    sock.heartbeat_timeout = 10000
    sock.heartbeat_ttl = 10000
    sock.handshake_ivl = HANDSHAKE_SECONDS * 1000
    sock.maxmsgsize = MAX_WIRE_FRAME
    if is_ipv6(split(address, default_port=0)[0]):
        sock.ipv6 = True


def _zmq_address(address: str) -> str:
    """``tcp://host:port`` for ZeroMQ (the port required), or an AddressError naming what is wrong."""
    return normalize(address, default_port=None)


class _Batcher:
    """Per-peer outgoing queue flushed once per loop tick.

    Messages arrive already encoded (so a bad header raises in the sender, not here);
    single-frame messages of one tick travel together as one ``batch`` message.
    """

    def __init__(self, send_frames: Callable[[list], None]):
        self._send = send_frames
        self._queue: list[list] = []
        self._scheduled = False

    def put(self, frames: list) -> None:
        self._queue.append(frames)
        if not self._scheduled:
            self._scheduled = True
            asyncio.get_running_loop().call_soon(self.flush)

    def flush(self) -> None:
        self._scheduled = False
        queue, self._queue = self._queue, []
        small: list = []
        for frames in queue:
            if len(frames) > 1:
                self._emit_small(small)
                small = []
                self._send(frames)
            else:
                small.append(frames[0])
        self._emit_small(small)

    def _emit_small(self, packed: list) -> None:
        if len(packed) == 1:
            self._send(packed)
        elif packed:
            self._send([msgpack.packb({"op": "batch", "packed": packed}, use_bin_type=True)])


def _expand(header: dict, payload: list):
    if header["op"] != "batch":
        yield header, payload
        return
    packed = header.get("packed")
    if not isinstance(packed, list):
        return
    for item in packed:
        if not isinstance(item, (bytes, bytearray)):
            continue
        try:
            h, _ = decode([item])
        except Exception:  # garbage inside a batch is dropped like garbage outside one
            continue
        if h["op"] != "batch":
            yield h, []


def _describe_error(e: BaseException) -> str:
    """``Type: message``, even for an exception whose ``str()`` itself raises."""
    try:
        return f"{type(e).__name__}: {e}"
    except Exception:
        return f"{type(e).__name__} (its message could not be printed)"


def _pickle_now(objects: dict | None, raw: dict | None) -> dict | None:
    """Serialise ``objects`` in the caller, so that an unpicklable object raises there
    (SerializationError) instead of inside a later batch flush, where nobody would hear."""
    if not objects:
        return raw
    frames = {name: dumps(obj) for name, obj in objects.items()}
    if raw:
        frames.update(raw)
    return frames


Handler = Callable[..., Any]


class Listener:
    """A bound ROUTER socket serving many peers, with authentication and disconnect events.

    ``handler(peer, header, payload)`` may return ``None``, a ``dict`` reply header, or a
    ``Msg``; coroutines are awaited in their own task. A reply goes back when the request
    carried a ``rid``. Exceptions become error replies and never stop the loop.
    """

    def __init__(self, security: Security, handler: Handler, on_disconnect: Callable[[bytes], None] | None = None,
                 name: str = "listener"):
        self.security = security
        self.handler = handler
        self.on_disconnect = on_disconnect
        self.name = name
        self.address: str | None = None
        self._sock: zmq.asyncio.Socket | None = None
        self._monitor = None
        self._batchers: dict[bytes, _Batcher] = {}
        self._peers: set[bytes] = set()
        self._probe = None  # a plain (non-asyncio) shadow of the socket for synchronous probes
        self._tasks: set[asyncio.Task] = set()
        self._bad_peers: set[bytes] = set()
        self._reported: set = set()
        self._probes_pending = False
        self._auth = None

    def bind(self, address: str = "tcp://127.0.0.1:0") -> str:
        """Bind (port 0 picks a free port) and start serving; returns the bound address.

        A wildcard host (``0.0.0.0``, ``::``) stays in the returned address; the server
        decides which address to advertise.
        """
        address = _zmq_address(address)
        ctx = context()
        sock = ctx.socket(zmq.ROUTER)
        _tune(sock, address)
        sock.router_mandatory = True
        try:
            address = self._bind(sock, address)
        except BaseException:
            sock.close(linger=0)
            raise
        self._auth = self.security.start_authenticator(ctx)
        self._monitor = sock.get_monitor_socket(zmq.EVENT_DISCONNECTED)
        self._sock = sock
        self.address = address
        self._spawn(self._recv_loop())
        self._spawn(self._monitor_loop())
        return address

    def _bind(self, sock, address: str) -> str:
        """Bind with the server credentials; port 0 lets the system pick a free port."""
        self.security.configure_server(sock)
        host, port = split(address, default_port=None)
        try:
            sock.bind(join(host, port) if port else join(host, 0).rsplit(":", 1)[0] + ":*")
        except zmq.ZMQError as e:
            if e.errno == zmq.EADDRINUSE:
                raise OSError(f"{address} is already in use: another process listens on port {port} "
                              "(an xsched scheduler still running?); pick another --port or stop it") from None
            if e.errno in (zmq.EINVAL, zmq.ENODEV, getattr(zmq, "EADDRNOTAVAIL", -1)) or "not available" in str(e):
                raise AddressError(f"cannot listen on {address}: {e} (is {host!r} an address of this "
                                   "host? use --interface NAME or --host ADDR)") from None
            raise
        bound = sock.get(zmq.LAST_ENDPOINT).decode()
        return join(host, int(bound.rsplit(":", 1)[1]))

    def _spawn(self, coro) -> asyncio.Task:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    def send(self, peer: bytes, header: dict, objects: dict | None = None, raw: dict | None = None) -> None:
        """Queue a message to ``peer``; small messages of one tick are batched."""
        raw = _pickle_now(objects, raw)
        b = self._batchers.get(peer)
        if b is None:
            b = self._batchers[peer] = _Batcher(lambda frames, p=peer: self._send_now(p, frames))
        b.put(Msg(header, None, raw).frames())

    def _send_now(self, peer: bytes, frames: list) -> None:
        if self._sock is None:
            return
        try:
            self._sock.send_multipart([peer] + chunk(frames), copy=False)
        except zmq.ZMQError as e:
            logger.debug("%s: dropping message to gone peer %r: %s", self.name, peer, e)

    async def _recv_loop(self) -> None:
        sock = self._sock
        while True:
            try:
                frames = await sock.recv_multipart(copy=False)
            except (asyncio.CancelledError, zmq.ContextTerminated):
                return
            except zmq.ZMQError as e:
                if sock.closed:
                    return
                logger.warning("%s: receive failed: %s", self.name, e)
                continue
            peer = frames[0].bytes
            self._peers.add(peer)
            try:
                header, payload = decode(unchunk(frames[1:]))
            except Exception as e:  # garbage never stops the loop, whatever decode raises
                if peer not in self._bad_peers:
                    self._bad_peers.add(peer)
                    logger.warning("%s: dropped garbage from peer %r: %s", self.name, peer[:16], e)
                continue
            for h, p in _expand(header, payload):
                try:
                    self._dispatch(peer, h, p)
                except Exception:  # a bug in a reply path must not stop serving everyone
                    logger.exception("%s: dispatching %r from peer %r failed", self.name, h.get("op"), peer[:16])

    def _dispatch(self, peer: bytes, header: dict, payload: list) -> None:
        rid = header.get("rid")
        try:
            result = self.handler(peer, header, payload)
        except Exception as e:
            self._reply_error(peer, rid, header, e)
            return
        if inspect.isawaitable(result):
            self._spawn(self._finish(peer, rid, header, result))
        elif rid is not None:
            self._reply(peer, rid, result)

    async def _finish(self, peer, rid, header, awaitable: Awaitable) -> None:
        try:
            result = await awaitable
        except asyncio.CancelledError:
            return
        except Exception as e:
            self._reply_error(peer, rid, header, e)
            return
        if rid is not None:
            self._reply(peer, rid, result)

    def _reply(self, peer: bytes, rid, result) -> None:
        try:
            if isinstance(result, Msg):
                header = dict(result.header, op="reply", rid=rid, status=result.header.get("status", "OK"))
                self.send(peer, header, result.objects, result.raw)
            else:
                self.send(peer, dict(result or {}, op="reply", rid=rid, status="OK"))
        except Exception as e:  # a result that cannot be pickled or encoded: the requester hears why
            self._reply_error(peer, rid, {"op": "reply"}, e)

    def _reply_error(self, peer, rid, header, e: Exception) -> None:
        op = header.get("op") if isinstance(header, dict) else None
        if not isinstance(e, (KeyError, ValueError, TypeError, RemoteError, PermissionError)):
            logger.exception("%s: handler for %r failed", self.name, op)
        elif (peer, op, type(e)) not in self._reported and len(self._reported) < 10_000:
            # bad input from a peer: said once per peer, op and kind, never silently
            self._reported.add((peer, op, type(e)))
            logger.info("%s: refused %r from peer %r: %s", self.name, op, peer[:16], _describe_error(e))
        if rid is None:
            return
        try:
            self.send(peer, {"op": "reply", "rid": rid, "status": "error", "error": _describe_error(e)})
        except Exception:
            logger.exception("%s: could not even send an error reply for %r", self.name, op)

    async def _monitor_loop(self) -> None:
        mon = self._monitor
        while True:
            try:
                frames = await mon.recv_multipart()
            except (asyncio.CancelledError, zmq.ContextTerminated):
                return
            except zmq.ZMQError:
                return
            event = parse_monitor_message(frames)
            if event["event"] == zmq.EVENT_DISCONNECTED and not self._probes_pending:
                # one round of probes however many peers leave at once (churn stays O(peers)):
                # now, and again when the router has surely learnt of the closed pipes
                self._probes_pending = True
                self._probe_peers()
                loop = asyncio.get_running_loop()
                loop.call_later(0.2, self._probe_peers)
                loop.call_later(1.0, self._end_probes)

    def _end_probes(self) -> None:
        self._probes_pending = False
        self._probe_peers()

    def _probe_peers(self) -> None:
        """Find peers whose connection is gone (a send to them fails) and report them."""
        if self._sock is None or self._sock.closed:
            return
        if self._probe is None:
            self._probe = zmq.Socket.shadow(self._sock.underlying)
        ping = encode({"op": "ping"})
        for peer in list(self._peers):
            try:
                self._probe.send_multipart([peer] + ping, flags=zmq.NOBLOCK)
            except zmq.Again:
                continue  # alive but busy
            except zmq.ZMQError as e:
                if e.errno != zmq.EHOSTUNREACH:
                    continue
                self._peers.discard(peer)
                self._batchers.pop(peer, None)
                self._bad_peers.discard(peer)
                if self.on_disconnect is None:
                    continue  # still forget it: a worker's listener sees peers come and go
                try:
                    self.on_disconnect(peer)
                except Exception:
                    logger.exception("%s: disconnect handler failed", self.name)

    def forget_peer(self, peer: bytes) -> None:
        """Drop per-peer state after the application removed that peer."""
        self._batchers.pop(peer, None)
        self._peers.discard(peer)

    async def close(self) -> None:
        """Flush queued messages, stop the loops and close the sockets."""
        for b in list(self._batchers.values()):
            b.flush()
        for t in list(self._tasks):
            t.cancel()
        if self._monitor is not None:
            try:
                self._sock.disable_monitor()
            except zmq.ZMQError:
                pass
            self._monitor.close(linger=0)
            self._monitor = None
        self._probe = None
        if self._sock is not None:
            self._sock.close(linger=0)
            self._sock = None
        if self._auth is not None:
            self._auth.stop(self.security)
            self._auth = None


class Connection:
    """A DEALER socket connected to one Listener: fire-and-forget sends and requests.

    ``handler(header, payload)`` receives unsolicited messages (ops other than ``reply``).
    ``on_lost()`` is called when the peer disconnects or refuses our credentials.
    """

    _ids = itertools.count(1)

    def __init__(self, address: str, security: Security, handler: Handler | None = None,
                 identity: bytes | None = None, on_lost: Callable[[Exception], None] | None = None):
        self.address = address
        self.security = security
        self.handler = handler
        self.on_lost = on_lost
        self.identity = identity
        self._pending: dict[int, asyncio.Future] = {}
        self._tasks: set[asyncio.Task] = set()
        self._sock = None
        self._monitor = None
        self._batcher = _Batcher(self._send_now)
        self.closed = False
        self.connected = asyncio.Event()
        self.failure: Exception | None = None

    def connect(self) -> "Connection":
        """Start connecting (ZeroMQ connects in the background and reconnects)."""
        address = _zmq_address(self.address)
        ctx = context()
        sock = ctx.socket(zmq.DEALER)
        _tune(sock, address)
        if self.identity:
            sock.routing_id = self.identity
        self.security.configure_client(sock)
        self._monitor = sock.get_monitor_socket(
            zmq.EVENT_DISCONNECTED | zmq.EVENT_HANDSHAKE_SUCCEEDED | zmq.EVENT_HANDSHAKE_FAILED_AUTH
            | zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL | zmq.EVENT_HANDSHAKE_FAILED_NO_DETAIL
        )
        sock.connect(address)
        self._sock = sock
        self._spawn(self._recv_loop())
        self._spawn(self._monitor_loop())
        return self

    def _spawn(self, coro):
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    def _send_now(self, frames: list) -> None:
        if self._sock is None or self.closed:
            return
        try:
            self._sock.send_multipart(chunk(frames), copy=False)
        except zmq.ZMQError as e:
            logger.debug("send to %s failed: %s", self.address, e)

    def send(self, header: dict, objects: dict | None = None, raw: dict | None = None) -> None:
        """Queue a message (batched with others of this loop tick)."""
        if self.closed:
            raise CommClosedError(f"connection to {self.address} is closed")
        self._batcher.put(Msg(header, None, _pickle_now(objects, raw)).frames())

    async def request(self, header: dict, objects: dict | None = None, raw: dict | None = None,
                      timeout: float | None = None) -> tuple[dict, list]:
        """Send and wait for the reply: returns (header, payload) or raises.

        Raises ``CommClosedError`` if the peer goes away, ``RemoteError`` if it
        answered with an error, ``asyncio.TimeoutError`` after ``timeout`` seconds.
        """
        if self.failure is not None:
            raise self.failure
        rid = next(self._ids)
        fut = asyncio.get_running_loop().create_future()
        self._pending[rid] = fut
        try:
            self.send(dict(header, rid=rid), objects, raw)
            if timeout is None:
                reply, payload = await fut
            else:
                reply, payload = await asyncio.wait_for(fut, timeout)
        finally:
            self._pending.pop(rid, None)
        if reply.get("status") == "error":
            raise RemoteError(reply.get("error", "remote error"))
        return reply, payload

    async def _recv_loop(self) -> None:
        sock = self._sock
        warned = False
        while True:
            try:
                frames = await sock.recv_multipart(copy=False)
            except (asyncio.CancelledError, zmq.ContextTerminated):
                return
            except zmq.ZMQError:
                if sock.closed:
                    return
                continue
            try:
                header, payload = decode(unchunk(frames))
            except Exception as e:  # garbage never stops the loop, whatever decode raises
                if not warned:
                    warned = True
                    logger.warning("dropped garbage from %s: %s", self.address, e)
                continue
            for h, p in _expand(header, payload):
                if h["op"] == "reply":
                    rid = h.get("rid")
                    fut = self._pending.get(rid) if isinstance(rid, int) else None  # (an unhashable rid)
                    if fut is not None and not fut.done():
                        fut.set_result((h, p))
                elif self.handler is not None:
                    try:
                        r = self.handler(h, p)
                        if inspect.isawaitable(r):
                            self._spawn(r)
                    except Exception:
                        logger.exception("handler for %r from %s failed", h.get("op"), self.address)

    async def _monitor_loop(self) -> None:
        mon = self._monitor
        while True:
            try:
                frames = await mon.recv_multipart()
            except (asyncio.CancelledError, zmq.ContextTerminated, zmq.ZMQError):
                return
            event = parse_monitor_message(frames)["event"]
            if event == zmq.EVENT_HANDSHAKE_SUCCEEDED:
                self.failure = None
                self.connected.set()
            elif event == zmq.EVENT_DISCONNECTED:
                self.connected.clear()
                if not isinstance(self.failure, AuthenticationError):  # keep the clearer reason
                    self._lost(CommClosedError(f"lost the connection to {self.address}"))
            elif event in (zmq.EVENT_HANDSHAKE_FAILED_AUTH, zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL,
                           zmq.EVENT_HANDSHAKE_FAILED_NO_DETAIL):  # (a CURVE refusal gives no detail)
                self._lost(AuthenticationError(
                    f"the handshake with {self.address} failed: either it refused our credentials or it "
                    "could not prove it knows the cluster secret (another cluster, a stale address now "
                    "used by another process, or not an xsched server). Check the address, and connect "
                    "with the scheduler file the scheduler wrote (scheduler_file=...) or the right secret."))

    def _lost(self, exc: Exception) -> None:
        self.failure = exc
        for fut in list(self._pending.values()):
            if not fut.done():
                fut.set_exception(exc)
        if self.on_lost is not None:
            try:
                self.on_lost(exc)
            except Exception:
                logger.exception("on_lost callback failed")

    async def close(self) -> None:
        if self.closed:
            return
        self._batcher.flush()
        self.closed = True
        for fut in self._pending.values():
            if not fut.done():
                fut.set_exception(CommClosedError(f"connection to {self.address} closed"))
        for t in list(self._tasks):
            t.cancel()
        if self._sock is not None:
            try:
                self._sock.disable_monitor()
            except zmq.ZMQError:
                pass
            self._sock.close(linger=200)
        if self._monitor is not None:
            self._monitor.close(linger=0)


class ConnectionPool:
    """One Connection per remote address, opened on first use (peer data transfers)."""

    def __init__(self, security: Security):
        self.security = security
        self._conns: dict[str, Connection] = {}

    def get(self, address: str) -> Connection:
        conn = self._conns.get(address)
        if conn is None or conn.closed:
            conn = Connection(address, self.security, on_lost=lambda exc, a=address: self._lost(a))
            self._conns[address] = conn.connect()
        return conn

    def _lost(self, address: str) -> None:
        """A peer went away: stop reconnecting to its address (someone else may take it)."""
        conn = self._conns.get(address)
        if conn is not None:
            asyncio.get_running_loop().call_soon(lambda: asyncio.ensure_future(self.drop(address, conn)))

    async def drop(self, address: str, conn: "Connection | None" = None) -> None:
        current = self._conns.get(address)
        if current is None or (conn is not None and current is not conn):
            return
        del self._conns[address]
        await current.close()

    async def close(self) -> None:
        for conn in list(self._conns.values()):
            await conn.close()
        self._conns.clear()
