"""Drive a plain ZeroMQ socket from an asyncio loop with one reader callback.

pyzmq's asyncio sockets make a Future, a callback and a poller registration for every
``recv_multipart`` and ``send_multipart``; at a few thousand small messages a second that
machinery cost more CPU than the scheduler's own decisions. A ``SocketPump`` instead
watches the socket's descriptor once and, whenever it fires, receives every message that
is ready (up to a budget, then it yields to the loop and carries on), handing each to a
plain callback. Everything a callback sends within one burst is flushed together later
in the tick, so a burst of N requests usually costs a handful of sends, not N.

ZeroMQ's descriptor is edge-triggered and any call on the socket may consume the edge, so
the owner calls ``kick()`` after its sends and the pump re-checks ``ZMQ_EVENTS`` instead
of trusting the descriptor.

>>> import zmq, asyncio
>>> async def demo():
...     ctx = zmq.Context.instance()
...     a, b = zmq.Socket(ctx, zmq.PAIR), zmq.Socket(ctx, zmq.PAIR)
...     port = a.bind_to_random_port("tcp://127.0.0.1"); b.connect(f"tcp://127.0.0.1:{port}")
...     got = asyncio.get_running_loop().create_future()
...     pa = SocketPump(a, lambda frames: got.done() or got.set_result(frames[0].bytes)).start()
...     b.send(b"hello")
...     print(await got); pa.close(); a.close(0); b.close(0)
>>> asyncio.run(demo())
b'hello'
"""

from __future__ import annotations

import asyncio
import logging
from typing import Callable

import zmq

logger = logging.getLogger("xsched.comm")

#: Messages received per callback before the pump lets the rest of the loop run.
BUDGET = 256

# pyzmq's constants are enum flags: ``EVENTS & POLLIN`` on them runs Python code in the
# enum module, a few microseconds per message on the hot path; plain ints cost nothing.
_EVENTS, _POLLIN, _NOBLOCK = int(zmq.EVENTS), int(zmq.POLLIN), int(zmq.NOBLOCK)


class SocketPump:
    """Receive into ``on_frames(frames)`` from a plain ZeroMQ socket, without futures.

    The owner sends on the same socket directly (with ``zmq.DONTWAIT``) and then calls
    ``kick()``: a send may consume the descriptor's edge, so the pump looks again soon.
    """

    def __init__(self, sock: zmq.Socket, on_frames: Callable[[list], None], name: str = "socket"):
        self.sock = sock
        self.on_frames = on_frames
        self.name = name
        self._loop: asyncio.AbstractEventLoop | None = None
        self._fd: int | None = None
        self._scheduled = False
        self.closed = False

    def start(self) -> "SocketPump":
        """Watch the socket on the running loop (and look once now: messages may be waiting)."""
        self._loop = asyncio.get_running_loop()
        self._fd = self.sock.getsockopt(zmq.FD)
        self._loop.add_reader(self._fd, self._on_ready)
        self.kick()
        return self

    def kick(self) -> None:
        """Look at the socket again in this loop tick (after a send on it, or to be sure)."""
        if not self._scheduled and not self.closed and self._loop is not None:
            self._scheduled = True
            self._loop.call_soon(self._on_ready)

    def _on_ready(self) -> None:
        self._scheduled = False
        sock = self.sock
        events, recv = sock.getsockopt, sock.recv
        for _ in range(BUDGET):
            if self.closed:
                return
            try:
                if not events(_EVENTS) & _POLLIN:
                    return
                # (what recv_multipart does, with each frame's ``more`` instead of a
                # getsockopt(RCVMORE) per frame: a third of the cost of a small message)
                frame = recv(_NOBLOCK, copy=False)
                frames = [frame]
                while frame.more:
                    frame = recv(_NOBLOCK, copy=False)
                    frames.append(frame)
            except zmq.Again:
                continue
            except zmq.ZMQError:  # closed or context terminated under us
                return
            try:
                self.on_frames(frames)
            except Exception:  # a handler's bug never stops the pump
                logger.exception("%s: handling a message failed", self.name)
        self.kick()  # budget used up: let the loop breathe, then carry on

    def close(self) -> None:
        """Stop watching the socket (the caller closes it)."""
        if self.closed:
            return
        self.closed = True
        if self._loop is not None and self._fd is not None:
            try:
                self._loop.remove_reader(self._fd)
            except (ValueError, OSError, RuntimeError):  # loop closed or fd already gone
                pass
