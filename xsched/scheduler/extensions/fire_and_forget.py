"""``xsched.fire_and_forget``: tasks kept computing after their client has let them go.

The ``fire-and-forget`` scheduler extension (see ``base.py`` for the protocol). The keys
are wanted by a pseudo-client, the holder ``fire-and-forget``, exactly as a client
wants its keys, so the state machine keeps them (and what they need) whatever their
client does; once a key is done the holder lets it go like any client would.

Data flow::

    client: submit(...) --update-graph--> ; fire_and_forget(futures) --fire-and-forget {keys}-->
        (one connection, in order: the graph is there first)
    FireAndForgetExtension: keys not finished yet -> ClientDesiresKeys(HOLDER, keys)
    client closes or drops its futures -> its own wants go; the holder's stay
    a held key reaches memory or erred -> transition hook notes it (cheap, no events)
        -> on the loop, soon after: ClientReleasesKeys(HOLDER, [those keys])
           -> released and forgotten unless some client still wants them

Messages the state machine addresses to the holder (key-in-memory, ...) go nowhere: no
peer has that name. ``client.restart()`` forgets held keys as it forgets every task.

>>> HOLDER
'fire-and-forget'
"""

from __future__ import annotations

import asyncio

from ...protocol import ops
from ..state import ClientDesiresKeys, ClientReleasesKeys
from .base import SchedulerExtension

__all__ = ["FireAndForgetExtension", "HOLDER"]

#: the pseudo-client holding fire-and-forget keys (client ids start with "client-")
HOLDER = "fire-and-forget"

#: states in which a held key is done with: it ran (or cannot run)
_DONE = frozenset({"memory", "erred"})


class FireAndForgetExtension(SchedulerExtension):
    """Serves fire-and-forget; releases each held key once it is done."""

    name = "fire-and-forget"

    def __init__(self, scheduler):
        super().__init__(scheduler)
        self._done: list[str] = []  # held keys that finished, to release on the loop
        self._armed = False

    def __repr__(self) -> str:
        return f"<FireAndForgetExtension held={len(self.held())}>"

    def held(self) -> list[str]:
        """The keys the holder keeps now."""
        return sorted(ts.key for ts in self.scheduler.state.clients.get(HOLDER, ()))

    def _op_fire_and_forget(self, peer, h, payload):
        self.scheduler._client_of(peer)
        tasks = self.scheduler.state.tasks
        keys = [k for k in h.get("keys", ()) if k in tasks and tasks[k].state not in _DONE]
        if keys:
            self.scheduler.handle(ClientDesiresKeys(HOLDER, keys))
        return None

    def transition(self, ts, start, finish) -> None:
        if finish in _DONE and HOLDER in ts.who_wants:
            self._done.append(ts.key)
            if not self._armed:
                try:
                    loop = asyncio.get_running_loop()
                except RuntimeError:  # (no loop: a test drives the state; it calls release_done)
                    return
                self._armed = True
                loop.call_soon(self.release_done)

    def release_done(self) -> None:
        """Let the held keys that finished go (called on the loop after their transitions)."""
        self._armed = False
        keys, self._done = self._done, []
        if keys and getattr(self.scheduler, "status", "running") == "running":
            self.scheduler.handle(ClientReleasesKeys(HOLDER, keys))

    OPS = {ops.FIRE_AND_FORGET: _op_fire_and_forget}
