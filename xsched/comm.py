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
* Sockets are plain (not pyzmq's asyncio wrappers): a ``SocketPump`` receives every
  message that is ready whenever the descriptor fires, and sends go straight to ZeroMQ
  with DONTWAIT. Small messages queued for the same peer within one event-loop tick
  travel as one ``batch`` message; messages with payload frames go on their own, in order.
* A monitor socket reports disconnects. It names a file descriptor, not a peer, and a
  restarted worker may reuse the descriptor of the one that died, so a Listener then
  probes its known peers: with ROUTER_MANDATORY a send to a vanished peer fails at once
  (EHOSTUNREACH). A killed worker is noticed within a second, not after a heartbeat
  timeout, and a live peer is never mistaken for a dead one. A Connection fails its
  pending requests.
* Every message is checked against the receiver's schema table (``protocol.schemas``)
  before a handler runs. Garbage and messages that break their schema are logged once
  per peer, op and kind of fault, answered with an error when they carry a request id,
  and dropped; they never stop a loop. A handler that fails for any other reason is a
  bug: it is logged with its traceback (once per peer, op, exception and place).
* Back-pressure. ZeroMQ queues at most ``HWM`` messages per peer; zero-copy frames it
  has not yet written to the kernel count against a per-peer window of
  ``WINDOW_BYTES`` (pyzmq's MessageTrackers say when it is done with them). What does
  not fit waits in the peer's outbox, in order; beyond ``MAX_QUEUED_BYTES`` waiting (one
  message of any size always fits) the peer is dropped: a Listener forgets it and reports
  it gone (``on_disconnect``), a Connection fails as if the peer had left. A sender never
  awaits: the scheduler serves every peer from one loop, and one stuck reader must not
  stall the others. All per-peer state goes when the peer does.
"""

from __future__ import annotations

import asyncio
import errno
import inspect
import itertools
import logging
import pickle
from typing import Any, Awaitable, Callable

from collections import deque

import msgpack
import zmq
import zmq.asyncio
from zmq.utils.monitor import parse_monitor_message

from .background import Background
from .protocol import ops
from .protocol.addressing import AddressError, is_ipv6, join, normalize, split
from .protocol.messages import MAX_WIRE_FRAME, chunk, decode, encode, frame_nbytes, unchunk
from .protocol.pump import SocketPump
from .protocol.schemas import BadMessage, ProtocolError, Table
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

#: Messages ZeroMQ queues per peer and direction (its high-water mark). Small messages are
#: copied into ZeroMQ (and coalesced into one ``batch`` per loop tick), so this bounds them;
#: large frames are bounded in bytes by the window below.
HWM = 1000
#: Zero-copy bytes per peer handed to ZeroMQ and not yet written to the kernel.
WINDOW_BYTES = 64 * 2**20
#: Bytes per peer waiting in its outbox beyond the window before the peer is dropped.
MAX_QUEUED_BYTES = 256 * 2**20
#: A peer that must be listening already and does not accept a connection within this
#: time (milliseconds) is given up (``Connection(give_up_unreachable=True)``).
CONNECT_TIMEOUT_MS = 10_000
#: Bytes of small messages packed into one ``batch``: a busy tick's replies (a thousand
#: requests served at once) go as several batches rather than one too large for a frame,
#: which would be cut into parts and joined again on receipt.
BATCH_BYTES = 2**20
#: Distinct faults remembered (to log each once) per peer.
_MAX_REPORTED = 1000


def _tune(sock: zmq.Socket, address: str) -> None:
    sock.linger = 0
    sock.sndhwm = HWM
    sock.rcvhwm = HWM
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


# Plain ints for pyzmq's enum flags (``DONTWAIT | SNDMORE`` on the enums runs Python code
# per frame), and the backend's send: ``zmq.Socket.send`` only adds routing-id and group
# handling (for draft socket types we never make) in front of it.
_DONTWAIT, _DONTWAIT_MORE = int(zmq.DONTWAIT), int(zmq.DONTWAIT | zmq.SNDMORE)
_backend_send = zmq.backend.Socket.send


def _zmq_send(sock, parts: list) -> tuple[list, int] | None:
    """Hand one message to ZeroMQ without blocking: (trackers, tracked bytes), or None if
    ZeroMQ refuses it (the peer's queue is at its high-water mark).

    Frames below the socket's copy threshold are copied (ZeroMQ's HWM bounds them); larger
    ones go zero-copy with a tracker, so the outbox knows when ZeroMQ lets go of them.
    ZeroMQ takes the rest of a message once it took its first part. Raises ZMQError
    (EHOSTUNREACH: the peer is gone).
    """
    threshold = sock.copy_threshold or zmq.COPY_THRESHOLD
    trackers, tracked, last = [], 0, len(parts) - 1
    for i, f in enumerate(parts):
        if isinstance(f, zmq.Frame):
            f = f.buffer  # a received frame forwarded: re-wrap its buffer so it can be tracked
        n = frame_nbytes(f)
        big = n >= threshold
        try:
            tracker = _backend_send(sock, f, _DONTWAIT if i == last else _DONTWAIT_MORE, copy=not big,
                                    track=big)
        except zmq.Again:
            if i == 0:
                return None
            raise
        if big:
            trackers.append(tracker)
            tracked += n
    return trackers, tracked


class _Outbox:
    """One peer's outgoing messages on their way into ZeroMQ, with the bytes they pin bounded.

    A message goes to ZeroMQ at once while the peer's window has room and ZeroMQ takes it;
    otherwise it waits here, in order, and a timer retries (pyzmq says when ZeroMQ is done
    with a frame only through a polled tracker; the timer backs off to 50 ms and runs only
    while something waits). When the waiting bytes would pass ``limit`` (one message of
    any size is always let in), ``on_overflow(waiting_bytes)`` is called and the outbox
    empties itself: the caller drops the peer.
    """

    __slots__ = ("_send", "_on_overflow", "window", "limit", "_waiting", "waiting_bytes", "_inflight",
                 "inflight_bytes", "_timer", "_delay", "dropped")

    def __init__(self, send: Callable[[list], "tuple[list, int] | None"], on_overflow: Callable[[int], None],
                 window: int = WINDOW_BYTES, limit: int = MAX_QUEUED_BYTES):
        self._send, self._on_overflow = send, on_overflow
        self.window, self.limit = window, limit
        self._waiting: deque = deque()  # (frames, nbytes)
        self.waiting_bytes = 0
        self._inflight: deque = deque()  # (trackers, nbytes) handed to ZeroMQ
        self.inflight_bytes = 0
        self._timer = None
        self._delay = 0.001
        self.dropped = False

    def put(self, frames: list) -> None:
        n = sum(map(frame_nbytes, frames))
        if not self._waiting and self._try(frames):
            return
        if self._waiting and self.waiting_bytes + n > self.limit:
            waiting = self.waiting_bytes + n
            self.clear()
            self.dropped = True
            self._on_overflow(waiting)
            return
        self._waiting.append((frames, n))
        self.waiting_bytes += n
        self._schedule()

    def _try(self, frames: list) -> bool:
        self._reap()
        if self.inflight_bytes >= self.window:
            return False
        sent = self._send(frames)
        if sent is None:
            return False
        trackers, tracked = sent
        if tracked:
            self._inflight.append((trackers, tracked))
            self.inflight_bytes += tracked
        return True

    def _reap(self) -> None:
        inflight = self._inflight
        while inflight and all(t.done for t in inflight[0][0]):
            self.inflight_bytes -= inflight.popleft()[1]

    def _schedule(self) -> None:
        if self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(self._delay, self._pump)

    def _pump(self) -> None:
        self._timer = None
        progressed = False
        while self._waiting and self._try(self._waiting[0][0]):
            self.waiting_bytes -= self._waiting.popleft()[1]
            progressed = True
        if self._waiting:
            self._delay = 0.001 if progressed else min(self._delay * 2, 0.05)
            self._schedule()

    @property
    def queued_bytes(self) -> int:
        """Bytes this peer pins: waiting here plus handed to ZeroMQ and not yet written."""
        self._reap()
        return self.waiting_bytes + self.inflight_bytes

    def clear(self) -> None:
        """Let go of everything waiting (what ZeroMQ holds it sends or drops by itself)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._waiting.clear()
        self.waiting_bytes = 0


class _Reported:
    """Which faults were already logged, per peer: each (op, kind) once, bounded."""

    __slots__ = ("_seen",)

    def __init__(self):
        self._seen: dict = {}

    def first(self, peer, what) -> bool:
        seen = self._seen.setdefault(peer, set())
        if what in seen or len(seen) >= _MAX_REPORTED:
            return False
        seen.add(what)
        return True

    def forget(self, peer) -> None:
        self._seen.pop(peer, None)


class _Batcher:
    """Per-peer outgoing queue flushed once per loop tick.

    Messages arrive already encoded (so a bad header raises in the sender, not here);
    single-frame messages of one tick travel together as ``batch`` messages of at most
    about ``BATCH_BYTES`` each (a message larger than that goes on its own).

    >>> import asyncio
    >>> sent = []
    >>> async def tick():
    ...     b = _Batcher(sent.append)
    ...     for n in (10, 600_000, 600_000, 5):
    ...         b.put([b"m" * n])
    ...     await asyncio.sleep(0)
    >>> asyncio.run(tick())
    >>> [len(msgpack.unpackb(frames[0])["packed"]) for frames in sent]   # 1 MiB at most per batch
    [2, 2]
    """

    def __init__(self, send_frames: Callable[[list], None]):
        self._send = send_frames
        self._queue: list[list] = []
        self._scheduled = False
        self._discarded = False

    def put(self, frames: list) -> None:
        """(On the connection's loop: off it, ``get_running_loop`` raises and nothing is queued.)"""
        loop = asyncio.get_running_loop() if not self._scheduled else None
        self._queue.append(frames)
        if loop is not None:
            loop.call_soon(self.flush)
            self._scheduled = True

    def flush(self) -> None:
        self._scheduled = False
        queue, self._queue = self._queue, []
        small: list = []
        size = 0
        for frames in queue:
            if self._discarded:  # the peer was dropped while this flush ran
                return
            if len(frames) > 1:
                self._emit_small(small)
                small, size = [], 0
                self._send(frames)
                continue
            f = frames[0]
            n = len(f) if type(f) is bytes else frame_nbytes(f)
            if small and size + n > BATCH_BYTES:
                self._emit_small(small)
                small, size = [], 0
            small.append(f)
            size += n
        self._emit_small(small)

    def discard(self) -> None:
        """Drop what is queued (the peer is gone); a flush already scheduled or running sends nothing more."""
        self._queue = []
        self._discarded = True

    def _emit_small(self, packed: list) -> None:
        if len(packed) == 1:
            self._send(packed)
        elif packed:
            self._send([msgpack.packb({"op": ops.BATCH, "packed": packed}, use_bin_type=True)])


def _expand(header: dict, payload: list, on_garbage: Callable[[ProtocolError], None]):
    """The messages of a ``batch`` (or the message itself); garbage inside is reported."""
    if header["op"] != ops.BATCH:
        yield header, payload
        return
    packed = header.get("packed")
    if not isinstance(packed, list):
        on_garbage(ProtocolError("a batch without a list of packed messages", "bad batch"))
        return
    for item in packed:
        if not isinstance(item, (bytes, bytearray)):
            on_garbage(ProtocolError(f"a batch item that is {type(item).__name__}, not bytes", "bad batch item"))
            continue
        try:
            h, _ = decode([item])
        except ProtocolError as e:  # garbage inside a batch is dropped like garbage outside one
            on_garbage(e)
            continue
        if h["op"] == ops.BATCH:
            on_garbage(ProtocolError("a batch inside a batch", "nested batch", h))
            continue
        yield h, []


#: Exceptions that refuse a request (the peer's fault: garbage, a broken schema, a request
#: out of turn, a payload that is not a pickle): said once per peer, op and kind, without a
#: traceback. Anything else a handler raises is a bug and logged with its traceback.
_REFUSALS = (ProtocolError, PermissionError, RemoteError, pickle.UnpicklingError)


def _fault(e: BaseException) -> str:
    """The kind of a refusal, or for a bug the exception type and where it was raised."""
    kind = getattr(e, "kind", None)
    if isinstance(kind, str):
        return kind
    tb = e.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    where = f" at {tb.tb_frame.f_code.co_filename.rsplit('/', 1)[-1]}:{tb.tb_lineno}" if tb is not None else ""
    return type(e).__name__ + where


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

    ``schemas`` (a ``protocol.schemas.Table``): every message is checked against it before
    the handler sees it. ``window_bytes`` and ``max_queued_bytes`` bound what one peer
    can pin (see the module docstring).
    """

    def __init__(self, security: Security, handler: Handler, on_disconnect: Callable[[bytes], None] | None = None,
                 name: str = "listener", schemas: Table | None = None, window_bytes: int = WINDOW_BYTES,
                 max_queued_bytes: int = MAX_QUEUED_BYTES):
        self.security = security
        self.handler = handler
        self.on_disconnect = on_disconnect
        self.name = name
        self.schemas = schemas
        self.window_bytes, self.max_queued_bytes = window_bytes, max_queued_bytes
        self.address: str | None = None
        self._sock: zmq.Socket | None = None
        self._pump: SocketPump | None = None
        self._monitor = None
        self._batchers: dict[bytes, _Batcher] = {}
        self._outboxes: dict[bytes, _Outbox] = {}
        self._peers: set[bytes] = set()
        self._background = Background(f"{type(self).__name__}")
        self._reported = _Reported()
        self._probes_pending = False
        self._auth = None
        self.dropped = 0  # peers dropped because they stopped reading

    def bind(self, address: str = "tcp://127.0.0.1:0") -> str:
        """Bind (port 0 picks a free port) and start serving; returns the bound address.

        A wildcard host (``0.0.0.0``, ``::``) stays in the returned address; the server
        decides which address to advertise.
        """
        address = _zmq_address(address)
        ctx = context()
        sock = zmq.Socket(ctx, zmq.ROUTER)  # plain: the pump drives it (see the module docstring)
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
        self._pump = SocketPump(sock, self._on_frames, name=self.name).start()
        self._background.spawn(self._monitor_loop())
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
            # (the system's errno values: pyzmq names only some of them, and not ENODEV)
            if e.errno in (errno.EINVAL, errno.ENODEV, errno.EADDRNOTAVAIL) or "not available" in str(e):
                raise AddressError(f"cannot listen on {address}: {e} (is {host!r} an address of this "
                                   "host? use --interface NAME or --host ADDR)") from None
            raise
        bound = sock.get(zmq.LAST_ENDPOINT).decode()
        return join(host, int(bound.rsplit(":", 1)[1]))


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
        box = self._outboxes.get(peer)
        if box is None:
            self._peers.add(peer)  # (so that a probe finds it, should it be gone already)
            box = self._outboxes[peer] = _Outbox(lambda parts, p=peer: self._hand_over(p, parts),
                                                 lambda n, p=peer: self._overflow(p, n),
                                                 self.window_bytes, self.max_queued_bytes)
        box.put(chunk(frames))

    def _hand_over(self, peer: bytes, frames: list):
        sock = self._sock
        if sock is None or sock.closed:
            return [], 0  # closing: the message is dropped
        try:
            return _zmq_send(sock, [peer] + frames)
        except zmq.ZMQError as e:
            logger.debug("%s: dropping message to gone peer %r: %s", self.name, peer, e)
            return [], 0
        finally:
            self._pump.kick()  # the send may have taken the descriptor's edge

    def _overflow(self, peer: bytes, nbytes: int) -> None:
        """The peer stopped reading: drop it (after this call returns, not inside a send)."""
        self.dropped += 1
        logger.warning("%s: peer %r stopped reading: %d bytes wait for it beyond the %d ZeroMQ holds; dropping "
                       "it (a live peer that cannot keep up is treated as gone)", self.name, peer[:16], nbytes,
                       self.window_bytes)
        self._forget(peer, flush=False)
        if self.on_disconnect is not None:
            asyncio.get_running_loop().call_soon(self._report_gone, peer)

    def _report_gone(self, peer: bytes) -> None:
        try:
            self.on_disconnect(peer)
        except Exception:
            logger.exception("%s: disconnect handler failed", self.name)

    def queued_bytes(self, peer: bytes) -> int:
        """Bytes queued for ``peer`` that ZeroMQ has not yet written (0 for an unknown peer)."""
        box = self._outboxes.get(peer)
        return box.queued_bytes if box is not None else 0

    def statistics(self) -> dict:
        """Peers known, peers with an outbox, bytes they pin, peers dropped for not reading."""
        return {"peers": len(self._peers), "outboxes": len(self._outboxes),
                "queued_bytes": sum(b.queued_bytes for b in self._outboxes.values()), "dropped": self.dropped}

    def _on_frames(self, frames: list) -> None:
        """One message received (called by the pump, for every message ready)."""
        peer = frames[0].bytes
        self._peers.add(peer)
        try:
            header, payload = decode(unchunk(frames[1:]))
        except Exception as e:  # garbage never stops the pump, whatever decode raises
            self._garbage(peer, e)
            return
        # the header is decoded into Python objects and the payload holds its own frames:
        # let the received ones go now, not after the handler (a 1,000,000-task graph's
        # message is as large again as what the scheduler makes of it)
        frames.clear()
        for h, p in _expand(header, payload, lambda e, peer=peer: self._garbage(peer, e)):
            try:
                self._dispatch(peer, h, p)
            except Exception:  # a bug in a reply path must not stop serving everyone
                logger.exception("%s: dispatching %r from peer %r failed", self.name, h.get("op"), peer[:16])

    def _garbage(self, peer: bytes, e: Exception) -> None:
        """Not an xsched message: said once per peer and kind; answered if it had a request id."""
        if not isinstance(e, ProtocolError):
            e = ProtocolError(f"undecodable: {_describe_error(e)}", "undecodable")
        header = e.header if isinstance(e.header, dict) else {}
        op = header.get("op") if isinstance(header.get("op"), str) else None
        self._reply_error(peer, header.get("rid"), {"op": op}, e)

    def _dispatch(self, peer: bytes, header: dict, payload: list) -> None:
        rid = header.get("rid")
        try:
            if self.schemas is not None:
                self.schemas.check(header)
            result = self.handler(peer, header, payload)
        except Exception as e:
            self._reply_error(peer, rid, header, e)
            return
        if inspect.isawaitable(result):
            self._background.spawn(self._finish(peer, rid, header, result))
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
                # (a handler's own status stays: a shuffle's "stale", a retirement's outcome)
                self.send(peer, {"status": "OK", **(result or {}), "op": ops.REPLY, "rid": rid})
        except Exception as e:  # a result that cannot be pickled or encoded: the requester hears why
            self._reply_error(peer, rid, {"op": ops.REPLY}, e)

    def _reply_error(self, peer, rid, header, e: Exception) -> None:
        """Log (once per peer, op and kind of fault) and answer a failed request.

        Refusals (``_REFUSALS``: garbage, a broken schema, a request out of turn) are the
        peer's fault and said without a traceback; any other exception is a bug in the
        handler and logged with its traceback, whatever its type."""
        op = header.get("op") if isinstance(header, dict) else None
        kind = _fault(e)
        if self._reported.first(peer, (op, kind)):
            if isinstance(e, _REFUSALS):
                logger.warning("%s: refused %s from peer %r [%s]: %s (said once per peer, op and kind)",
                               self.name, op or "a message", peer[:16], kind, _describe_error(e))
            else:
                logger.error("%s: the handler for %r failed on a message from peer %r [%s] (said once per "
                             "peer, op and kind)", self.name, op, peer[:16], kind, exc_info=e)
        if rid is None:
            return
        try:
            self.send(peer, {"op": ops.REPLY, "rid": rid, "status": "error", "error": _describe_error(e)})
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
        ping = encode({"op": ops.PING})
        self._pump.kick()
        for peer in list(self._peers):
            try:
                self._sock.send_multipart([peer] + ping, flags=zmq.NOBLOCK)
            except zmq.Again:
                continue  # alive but busy
            except zmq.ZMQError as e:
                if e.errno != zmq.EHOSTUNREACH:
                    continue
                self._forget(peer, flush=False)
                if self.on_disconnect is None:
                    continue  # still forget it: a worker's listener sees peers come and go
                self._report_gone(peer)

    def forget_peer(self, peer: bytes) -> None:
        """Drop per-peer state after the application removed that peer (what this loop tick
        queued for it still goes out)."""
        self._forget(peer, flush=True)

    def _forget(self, peer: bytes, flush: bool) -> None:
        """Everything kept per peer goes: batcher, outbox, the faults already logged."""
        b = self._batchers.pop(peer, None)
        if b is not None and flush:
            b.flush()  # (into the outbox, which is then let go: ZeroMQ has taken what it could)
        elif b is not None:
            b.discard()
        box = self._outboxes.pop(peer, None)
        if box is not None:
            box.clear()
        self._peers.discard(peer)
        self._reported.forget(peer)

    async def close(self) -> None:
        """Flush queued messages, stop the loops and close the sockets."""
        for b in list(self._batchers.values()):
            b.flush()
        for box in list(self._outboxes.values()):
            box.clear()
        self._outboxes.clear()
        await self._background.aclose()
        if self._monitor is not None:
            try:
                self._sock.disable_monitor()
            except zmq.ZMQError:
                pass
            self._monitor.close(linger=0)
            self._monitor = None
        if self._pump is not None:
            self._pump.close()
        if self._sock is not None:
            self._sock.close(linger=0)
            self._sock = None
        if self._auth is not None:
            self._auth.stop(self.security)
            self._auth = None


class Connection:
    """A DEALER socket connected to one Listener: fire-and-forget sends and requests.

    ``handler(header, payload)`` receives unsolicited messages (ops other than ``reply``),
    each checked against ``schemas`` first when given. ``on_lost()`` is called when the
    peer disconnects, refuses our credentials, or stops reading (more than
    ``max_queued_bytes`` wait for it). With ``give_up_unreachable`` (peers that must be
    listening already, e.g. a worker named as the holder of some data) a connection that
    never came up fails as soon as a connect attempt is refused or times out, instead of
    retrying while its requests wait.
    """

    _ids = itertools.count(1)

    def __init__(self, address: str, security: Security, handler: Handler | None = None,
                 identity: bytes | None = None, on_lost: Callable[[Exception], None] | None = None,
                 schemas: Table | None = None, window_bytes: int = WINDOW_BYTES,
                 max_queued_bytes: int = MAX_QUEUED_BYTES, give_up_unreachable: bool = False):
        self.address = address
        self.security = security
        self.handler = handler
        self.on_lost = on_lost
        self.give_up_unreachable = give_up_unreachable
        self.identity = identity
        self.schemas = schemas
        self._pending: dict[int, asyncio.Future] = {}
        self._background = Background(f"{type(self).__name__}")
        self._sock = None
        self._pump: SocketPump | None = None
        self._monitor = None
        self._batcher = _Batcher(self._send_now)
        self._outbox = _Outbox(self._hand_over, self._overflow, window_bytes, max_queued_bytes)
        self._reported = _Reported()
        self.closed = False
        self.connected = asyncio.Event()
        self.failure: Exception | None = None

    def connect(self) -> "Connection":
        """Start connecting (ZeroMQ connects in the background and reconnects)."""
        address = _zmq_address(self.address)
        ctx = context()
        sock = zmq.Socket(ctx, zmq.DEALER)  # plain: the pump drives it (see the module docstring)
        _tune(sock, address)
        if self.identity:
            sock.routing_id = self.identity
        self.security.configure_client(sock)
        if self.give_up_unreachable:
            sock.connect_timeout = CONNECT_TIMEOUT_MS  # (else a host that drops packets takes the OS's minutes)
        self._monitor = sock.get_monitor_socket(
            zmq.EVENT_DISCONNECTED | zmq.EVENT_HANDSHAKE_SUCCEEDED | zmq.EVENT_HANDSHAKE_FAILED_AUTH
            | zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL | zmq.EVENT_HANDSHAKE_FAILED_NO_DETAIL
            | zmq.EVENT_CONNECT_RETRIED
        )
        sock.connect(address)
        self._sock = sock
        self._pump = SocketPump(sock, self._on_frames, name=f"connection to {self.address}").start()
        self._background.spawn(self._monitor_loop())
        return self


    def _send_now(self, frames: list) -> None:
        if self._sock is None or self.closed:
            return
        self._outbox.put(chunk(frames))

    def _hand_over(self, frames: list):
        if self._sock is None or self._sock.closed:
            return [], 0
        try:
            return _zmq_send(self._sock, frames)
        except zmq.ZMQError as e:
            logger.debug("send to %s failed: %s", self.address, e)
            return [], 0
        finally:
            self._pump.kick()  # the send may have taken the descriptor's edge

    def _overflow(self, nbytes: int) -> None:
        """The peer stopped reading: fail as if it had gone (after this send returns)."""
        exc = CommClosedError(f"{self.address} stopped reading: {nbytes} bytes waited for it beyond the "
                              f"{self._outbox.window} ZeroMQ holds, so the connection was dropped")
        logger.warning("%s", exc)
        asyncio.get_running_loop().call_soon(self._drop, exc)

    def _drop(self, exc: Exception) -> None:
        if self.closed:
            return
        self._lost(exc)
        self._closing = asyncio.ensure_future(self.close())  # (its own: close() awaits the background)

    @property
    def queued_bytes(self) -> int:
        """Bytes queued for the peer that ZeroMQ has not yet written."""
        return self._outbox.queued_bytes

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
        fut = self.request_nowait(header, objects, raw)
        if timeout is None:
            return await fut
        return await asyncio.wait_for(fut, timeout)

    def request_nowait(self, header: dict, objects: dict | None = None, raw: dict | None = None) -> asyncio.Future:
        """Send a request now, in order with ``send`` calls, and return the future of its
        reply: (header, payload), or RemoteError / CommClosedError as for ``request``.

        For callers that cannot await before sending (the client's update-graph must
        reach the scheduler before the releases queued after it) but want the answer.
        """
        if self.failure is not None:
            raise self.failure
        rid = next(self._ids)
        fut = asyncio.get_running_loop().create_future()
        self._pending[rid] = fut
        fut.add_done_callback(lambda f: self._pending.pop(rid, None))
        try:
            self.send(dict(header, rid=rid), objects, raw)
        except BaseException:
            fut.cancel()
            raise
        return fut

    def _on_frames(self, frames: list) -> None:
        """One message received (called by the pump, for every message ready)."""
        if self.closed:
            return
        try:
            header, payload = decode(unchunk(frames))
        except Exception as e:  # garbage never stops the pump, whatever decode raises
            self._refused(None, e)
            return
        for h, p in _expand(header, payload, lambda e: self._refused(None, e)):
            if h["op"] == ops.REPLY:
                rid = h.get("rid")
                fut = self._pending.get(rid) if type(rid) is int else None  # (an unhashable rid)
                if fut is not None and not fut.done():
                    if h.get("status") == "error":
                        fut.set_exception(RemoteError(str(h.get("error", "remote error"))))
                    else:
                        fut.set_result((h, p))
            elif self.handler is not None:
                try:
                    if self.schemas is not None:
                        self.schemas.check(h)
                    r = self.handler(h, p)
                    if inspect.isawaitable(r):
                        self._background.spawn(r)
                except Exception as e:
                    self._refused(h.get("op"), e)

    def _refused(self, op, e: Exception) -> None:
        """Garbage, a broken schema or a failed handler: logged once per op and kind, dropped."""
        kind = _fault(e)
        if not self._reported.first(None, (op, kind)):
            return
        if isinstance(e, _REFUSALS) or not isinstance(e, Exception):
            logger.warning("dropped %s from %s [%s]: %s (said once per op and kind)", op or "a message",
                           self.address, kind, _describe_error(e))
        else:
            logger.error("handler for %r from %s failed [%s] (said once per op and kind)", op, self.address, kind,
                         exc_info=e)

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
            elif event == zmq.EVENT_CONNECT_RETRIED:
                if self.give_up_unreachable and not self.connected.is_set() and self.failure is None:
                    self._lost(CommClosedError(f"cannot connect to {self.address}: the connection was refused or "
                                               "timed out (is that process gone?)"))
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
        self._outbox.clear()
        self.closed = True
        for fut in self._pending.values():
            if not fut.done():
                fut.set_exception(CommClosedError(f"connection to {self.address} closed"))
        await self._background.aclose()
        if self._pump is not None:
            self._pump.close()
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
        self._background = Background("ConnectionPool")  # drops of lost peers

    def get(self, address: str) -> Connection:
        conn = self._conns.get(address)
        if conn is None or conn.closed:
            conn = Connection(address, self.security, on_lost=lambda exc, a=address: self._lost(a),
                              give_up_unreachable=True)
            self._conns[address] = conn.connect()
        return conn

    def _lost(self, address: str) -> None:
        """A peer went away: stop reconnecting to its address (someone else may take it)."""
        conn = self._conns.get(address)
        if conn is not None:
            asyncio.get_running_loop().call_soon(lambda: self._background.spawn(self.drop(address, conn)))

    async def drop(self, address: str, conn: "Connection | None" = None) -> None:
        current = self._conns.get(address)
        if current is None or (conn is not None and current is not conn):
            return
        del self._conns[address]
        await current.close()

    async def close(self) -> None:
        await self._background.aclose()
        for conn in list(self._conns.values()):
            await conn.close()
        self._conns.clear()
