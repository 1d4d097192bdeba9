"""Liveness heartbeats that a blocked event loop cannot starve.

Data flow::

    worker process
        event loop   --heartbeat-worker {metrics}-->  scheduler   (worker/server.py; stops
                                                                    while the loop is blocked)
        this thread  --heartbeat-worker {worker: id}->  scheduler (own DEALER socket, own
                                                                    ZeroMQ context and I/O thread)
    scheduler: any message from a worker refreshes its last-seen time; the ttl loop removes
    workers silent for scheduler.worker-ttl.

While the loop beats (``loop_beat()`` after each of its heartbeats), this thread stays
quiet: one message per interval per worker reaches the scheduler, not two, which is what
the scheduler of a wide cluster spends its idle time on. It speaks only when the loop has
not beaten for a whole interval.

Why a thread: the metrics heartbeat runs on the worker's event loop, and a coroutine that
blocks the loop (``client.run`` of an ``async def`` calling ``time.sleep``, a task
coroutine doing CPU work) would silence it; the scheduler would then declare a busy worker
dead and throw away its data. This thread needs no loop and holds the GIL only to build
one tiny message per interval, so it falls silent only when the process itself is gone,
stopped (SIGSTOP) or hung in native code that holds the GIL.

The thread's message is a ``heartbeat-worker`` without metrics whose ``worker`` field names
the routing id of the worker's own scheduler connection (the thread's socket is another
peer), so the scheduler credits exactly that registration, never a later worker at the
same address.
Its socket speaks CURVE with the cluster secret like every other connection; with
ZMQ_IMMEDIATE it queues nothing while the scheduler is unreachable (a stale "alive" is
worse than none), and a full queue drops the beat instead of blocking.
"""

from __future__ import annotations

import logging
import threading
import time

import zmq

from ..protocol import ops
from ..protocol.addressing import is_ipv6, normalize, split
from ..protocol.messages import encode
from ..protocol.security import Security

logger = logging.getLogger("xsched.worker")

__all__ = ["AliveThread"]


class AliveThread:
    """Send a liveness ``heartbeat-worker`` to the scheduler every ``interval`` seconds until :meth:`stop`.

    >>> # t = AliveThread("tcp://127.0.0.1:8786", security, b"w-...", 0.5).start(); ...; t.stop()
    """

    def __init__(self, address: str, security: Security, worker_id: bytes, interval: float):
        self.address = normalize(address, default_port=None)
        self.security = security
        self.worker_id = worker_id
        self.interval = max(float(interval), 0.01)
        self.sent = 0  # beats handed to ZeroMQ (for tests and statistics)
        self.dropped = 0  # beats dropped because the scheduler was unreachable or backed up
        self.skipped = 0  # beats not needed: the event loop had beaten within the interval
        self._loop_beat = float("-inf")  # time.monotonic() of the event loop's last heartbeat
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="xsched-alive", daemon=True)

    def start(self) -> "AliveThread":
        self._thread.start()
        return self

    def stop(self, timeout: float = 2.0) -> None:
        """Stop sending and close the socket (waits for the thread, at most ``timeout`` s)."""
        self._stop.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout)

    def loop_beat(self) -> None:
        """(From the event loop) its heartbeat just left: this thread need not send one."""
        self._loop_beat = time.monotonic()

    def statistics(self) -> dict:
        return {"sent": self.sent, "dropped": self.dropped, "skipped": self.skipped,
                "running": self._thread.is_alive()}

    def _socket(self, ctx: zmq.Context) -> zmq.Socket:
        sock = ctx.socket(zmq.DEALER)
        sock.linger = 0
        sock.immediate = True  # nothing queued before the handshake: send raises Again instead
        sock.sndhwm = 4
        sock.heartbeat_ivl = 1000  # ZMTP pings, so a vanished scheduler's connection is dropped
        sock.heartbeat_timeout = 10000
        if is_ipv6(split(self.address, default_port=0)[0]):
            sock.ipv6 = True
        self.security.configure_client(sock)
        sock.connect(self.address)
        return sock

    def _run(self) -> None:
        # a context of its own: its I/O thread is not the one busy with large data transfers
        ctx = zmq.Context(io_threads=1)
        try:
            sock = self._socket(ctx)
        except Exception:  # noqa: BLE001 - without this thread the loop's heartbeats still run
            logger.exception("worker: cannot start the liveness heartbeat thread")
            ctx.term()
            return
        frames = encode({"op": ops.HEARTBEAT_WORKER, "worker": self.worker_id})
        try:
            while True:
                try:
                    if time.monotonic() - self._loop_beat < self.interval:
                        self.skipped += 1  # the loop is beating: its message keeps the worker alive
                    else:
                        sock.send_multipart(frames, flags=zmq.NOBLOCK)
                        self.sent += 1
                except zmq.Again:
                    self.dropped += 1
                except zmq.ZMQError as e:
                    logger.debug("worker: liveness heartbeat not sent: %s", e)
                    self.dropped += 1
                if self._stop.wait(self.interval):
                    return
        finally:
            sock.close(linger=0)
            ctx.term()
