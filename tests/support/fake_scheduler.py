"""The Scheduler server as its extensions see it, with no sockets and no loop of its own.

A real ``SchedulerState`` (validating after every event), the op table extensions register
into, client and worker peers, and a listener that records what it was asked to send. Unit
tests of scheduler extensions build one, plug extensions into it and call their ops::

    server = FakeScheduler(clients={"c": b"pc"})
    server.extensions["events"] = EventsExtension(server)
    server.call("log-event", b"pc", topic="t", msg=...)
"""

from __future__ import annotations

from xsched.protocol.schemas import TO_SCHEDULER
from xsched.scheduler.state import AddWorker, SchedulerState


class FakeListener:
    """Records ``(peer, header, raw)`` of every send."""

    def __init__(self):
        self.sent: list = []

    def send(self, peer, msg, raw=None):
        self.sent.append((peer, msg, raw))


class FakeScheduler:
    """What an extension uses of the Scheduler (see ``scheduler/extensions/base.py``)."""

    def __init__(self, clients: dict | None = None, validate: bool = True):
        self.state = SchedulerState(validate=validate)
        self.ops: dict = {}
        self.listener = FakeListener()
        self.client_peer = dict({"c": b"pc"} if clients is None else clients)
        self.peer_client = {peer: client for client, peer in self.client_peer.items()}
        self.worker_peer: dict[str, bytes] = {}
        self.peer_worker: dict[bytes, str] = {}
        self.extensions: dict = {}
        self.to_clients: list = []

    def register_op(self, op, handler):
        assert op in TO_SCHEDULER, op
        self.ops[op] = handler

    def _client_of(self, peer):
        client = self.peer_client.get(peer)
        if client is None:
            raise PermissionError("register with register-client before sending work")
        return client

    def handle(self, *events):
        return self.state.handle(*events)

    def send_to_client(self, client, msg):
        self.to_clients.append((client, msg))

    def add_worker(self, address, host="h1", nthreads=1):
        peer = address.encode()
        self.worker_peer[address] = peer
        self.peer_worker[peer] = address
        self.state.handle(AddWorker(address, nthreads, host=host))
        return peer

    def remove_worker(self, address):
        self.peer_worker.pop(self.worker_peer.pop(address))
        for ext in self.extensions.values():
            ext.remove_worker(address, "gone")

    def call(self, op, peer=b"pc", payload=(), check=True, **fields):
        """Send one request to the op's handler, checked against its schema first as the
        listener does (``check=False``: as given); returns what the handler returns (a
        coroutine handler's coroutine, to await)."""
        msg = {"op": op, **fields}
        if check:
            TO_SCHEDULER.check(msg)
        return self.ops[op](peer, msg, list(payload))
