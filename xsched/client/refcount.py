"""Futures counted per key, and what the client tells the scheduler, in order.

Every ``Future`` of a key shares one ``FutureState`` (``future.py``); the client counts
them. When the last one goes (garbage collected, or ``release()``), the key is released:
the scheduler hears of it a moment later (``RELEASE_DELAY``), in one message for a burst
of dropped Futures, and never before the update-graph that made the key -- a graph
queued by any thread before the release goes first::

    any thread: Future.__del__ -> _dec_ref -> _pending_release (with the graphs queued so far)
                submit/compute -> _send_graph -> loop.call_soon_threadsafe(_request_graph)
    client loop: _request_graph: update-graph, then _flush_releases (the same batch)
                 RELEASE_DELAY later: _flush_releases: client-releases-keys ----> scheduler

A mixin of ``Client`` (``client.py``): its tables are ``_refs`` (key -> number of Futures)
and ``_states`` (key -> FutureState), kept under ``_ref_lock``; ``_pending_release``,
``_graphs_queued`` and ``_graphs_unsent`` order the releases behind the graphs.
"""

from __future__ import annotations

import asyncio
import logging
import pickle

from ..comm import RemoteError
from ..errors import SchedulerLostError
from ..protocol import ops
from .future import FutureState

__all__ = ["RefCountMixin", "RELEASE_DELAY"]

logger = logging.getLogger("xsched.client")

#: Seconds a released key may wait before the scheduler hears of it (any graph sent
#: meanwhile takes it along at once): the releases of a burst of dropped Futures go in one
#: message, and the client's loop is not woken for each.
RELEASE_DELAY = 0.005
#: released keys remembered, so that data scattered again is not given a key whose old
#: copy the workers may still be told to free (``Client.scatter``)
RELEASED_LATELY = 100_000


class RefCountMixin:
    """Reference counts of the client's keys, and the ordered sending of graphs and releases."""

    def _inc_ref(self, key: str) -> FutureState:
        with self._ref_lock:
            self._refs[key] = self._refs.get(key, 0) + 1
            st = self._states.get(key)
            if st is None:
                st = self._states[key] = FutureState()
            return st

    def _dec_ref(self, key: str) -> None:
        with self._ref_lock:
            n = self._refs.get(key, 0) - 1
            if n > 0:
                self._refs[key] = n
                return
            self._refs.pop(key, None)
            self._states.pop(key, None)
            if self.status != "running":
                return
            self._pending_release.append((key, self._graphs_queued))
            if self._release_armed:
                return
            self._release_armed = True
        # Releases are never urgent: they wait up to RELEASE_DELAY, and go at once behind
        # any graph sent meanwhile (the same batch). Waking the loop for every dropped
        # Future cost a third of the client's CPU in a submit().result() loop.
        try:
            if self._on_loop():
                self._arm_releases()
            else:
                self._loop.call_soon_threadsafe(self._arm_releases)
        except RuntimeError:  # loop closed at interpreter exit
            pass

    def _arm_releases(self) -> None:
        self._loop.call_later(RELEASE_DELAY, self._releases_due)

    def _releases_due(self) -> None:
        with self._ref_lock:
            self._release_armed = False
        self._flush_releases()

    def _flush_releases(self) -> None:
        """(On the loop) tell the scheduler of the keys released since the last flush that
        are still unreferenced, except those released after a graph not sent yet: the
        scheduler must never hear of a release before the graph that made its key."""
        with self._ref_lock:
            pending, keep, keys = self._pending_release, [], []
            if not pending:
                return
            first_unsent = min(self._graphs_unsent, default=self._graphs_queued + 1)
            for key, queued in pending:
                if queued >= first_unsent:  # a graph queued before the release is still unsent
                    keep.append((key, queued))
                elif key not in self._refs:
                    keys.append(key)
            self._pending_release = keep
        if keys and self.status == "running":
            self._conn.send({"op": ops.CLIENT_RELEASES_KEYS, "keys": keys})
            with self._ref_lock:
                lately = self._released_lately
                for key in keys:
                    lately[key] = None
                    lately.move_to_end(key)
                while len(lately) > RELEASED_LATELY:
                    lately.popitem(last=False)
            self._release_postmortems(keys)  # failures kept on workers for client.debug (debugging.py)

    def _send(self, msg: dict) -> None:
        """Send from any thread (the connection lives on the client loop)."""
        if self.status != "running":
            raise SchedulerLostError(f"this client is {self.status}; create a new Client")
        if self._on_loop():
            self._conn.send(msg)
        else:
            self._loop.call_soon_threadsafe(self._conn.send, msg)

    def _send_graph(self, msg: dict) -> None:
        """Send an update-graph from any thread, as a request: when the scheduler rejects
        the graph (a field it cannot accept), the graph's futures fail with the scheduler's
        message instead of waiting forever. Sent in order with ``_send`` and the releases
        queued after it (the request goes out in the same loop callback)."""
        number = self._next_in_order()
        if self._on_loop():
            self._request_graph(msg, number)
        else:
            self._loop.call_soon_threadsafe(self._request_graph, msg, number)

    def _send_in_order(self, msg: dict) -> None:
        """Send from any thread a message that the releases queued after it must not overtake,
        as a graph's (fire-and-forget: its keys must still be wanted when it arrives, though
        the Futures it was given may be dropped the moment it returns)."""
        number = self._next_in_order()
        if self._on_loop():
            self._send_numbered(msg, number)
        else:
            self._loop.call_soon_threadsafe(self._send_numbered, msg, number)

    def _next_in_order(self) -> int:
        """The number of a message the releases queued after it must wait for (graphs and
        fire-and-forget), counted as unsent until it goes out."""
        if self.status != "running":
            raise SchedulerLostError(f"this client is {self.status}; create a new Client")
        with self._ref_lock:
            self._graphs_queued += 1
            number = self._graphs_queued
            self._graphs_unsent.add(number)
        return number

    def _send_numbered(self, msg: dict, number: int) -> None:
        with self._ref_lock:
            self._graphs_unsent.discard(number)
        try:
            self._conn.send(msg)
        finally:
            self._flush_releases()  # the releases that waited for it, in the same batch

    def _request_graph(self, msg: dict, number: int) -> None:
        with self._ref_lock:
            self._graphs_unsent.discard(number)
        try:
            fut = self._conn.request_nowait(msg)
        except Exception as e:  # the connection failed or closed meanwhile
            self._fail_graph(msg["keys"], f"the graph could not be sent to the scheduler: {e}")
        else:
            fut.add_done_callback(lambda f, keys=msg["keys"]: self._graph_answered(f, keys))
        self._flush_releases()  # the releases that waited for it, in the same batch

    def _graph_answered(self, fut: asyncio.Future, keys: list) -> None:
        if fut.cancelled():
            return
        exc = fut.exception()
        if isinstance(exc, RemoteError):  # (a lost connection: ``_lost`` fails every future)
            self._fail_graph(keys, f"the scheduler rejected the graph: {exc}")

    def _fail_graph(self, keys: list, text: str) -> None:
        logger.warning("%s", text)
        blob = pickle.dumps(RemoteError(text))
        for key in keys:
            st = self._states.get(key)
            if st is not None and not st.done():
                st.set_error(blob, b"", text)

    def _on_loop(self) -> bool:
        try:
            return asyncio.get_running_loop() is self._loop
        except RuntimeError:
            return False

    def _want_keys(self, keys: list[str]) -> None:
        self._send({"op": ops.CLIENT_DESIRES_KEYS, "keys": keys})
