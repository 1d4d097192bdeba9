"""Events on named topics: kept by the scheduler, bounded, and pushed to the clients that want them.

The ``events`` scheduler extension (see ``base.py`` for the protocol).

Data flow::

    xsched.log_event(topic, msg) in a task -> worker --log-event {topic, msg}--> (batched, in
        order with the task's task-finished: its events arrive first)
    client.log_event(topic, msg) / xsched.log_event outside a task --log-event--> <--{}--
        EventsExtension.log_event: EventStore.add(topic, now, msg) (bounded), then
        {"op": "event", topic, time, msg} to every client in recipients(...):
            the clients subscribed to the topic, and for the topics "print" and "warn"
            (xsched.print / xsched.warn in a task: msg names the task's key) the clients
            that want that key -- or every client, when none does (the key was released)
    client.subscribe_topic(topic, handler) --subscribe-topic--> subscribed; <--{}--
    client.unsubscribe_topic(topic) --unsubscribe-topic-->; a client that goes away is
        unsubscribed from everything
    client.get_events(topic) --get-events--> <--{events: [[time, msg], ...]}-- (or, for
        every topic, {events: {topic: [[time, msg], ...]}})

``EventStore`` is the bounded store and the subscriptions, with no clocks or sockets (the
time of an event is given to it): at most ``max_per_topic`` events per topic, at most
``max_topics`` topics (the one with the oldest last event goes first), and at most
``max_bytes`` of packed messages in all (the oldest events go first).

>>> store = EventStore(max_per_topic=2)
>>> for i in range(3):
...     _ = store.add("steps", float(i), {"step": i})
>>> store.get("steps")
[(1.0, {'step': 1}), (2.0, {'step': 2})]
>>> store.subscribe("client-1", "steps"); sorted(store.subscribers("steps"))
['client-1']
"""

from __future__ import annotations

import logging
import time
from collections import deque
from typing import Callable, Iterable

import msgpack

from ...protocol import ops
from ...protocol.schemas import BadMessage
from .base import SchedulerExtension

logger = logging.getLogger("xsched.scheduler.extensions.events")

__all__ = ["EventsExtension", "EventStore", "ROUTED_TOPICS", "packed_size"]

#: topics whose events go to the clients wanting the task that sent them (xsched.print, xsched.warn)
ROUTED_TOPICS = frozenset({"print", "warn"})


def packed_size(msg) -> int:
    """Bytes of ``msg`` packed with msgpack, as it travels (what the byte budget counts).

    >>> packed_size({"a": 1})
    4
    """
    return len(msgpack.packb(msg, use_bin_type=True))


class EventStore:
    """The events of every topic, bounded, and which clients subscribe to which topics.

    Events are ``(time, msg)`` pairs, oldest first per topic. Bounds: ``max_per_topic``
    events in a topic (its oldest go), ``max_topics`` topics (the topic whose last event is
    the oldest goes whole), ``max_bytes`` of packed messages across topics (the oldest
    events go, whatever their topic; an event larger than the budget is not kept).
    ``measure(msg)`` gives a message's size (``packed_size``). ``count`` is the number of
    events ever added; ``dropped`` how many of them the bounds removed.

    >>> store = EventStore(max_topics=2)
    >>> for topic in ("a", "b", "c"):
    ...     _ = store.add(topic, 0.0, topic)
    >>> store.topics(), store.dropped
    (['b', 'c'], 1)
    >>> small = EventStore(max_bytes=8, measure=len)
    >>> for text in ("1234", "5678", "9abc"):
    ...     _ = small.add("t", 0.0, text)
    >>> [msg for _, msg in small.get("t")], small.nbytes
    (['5678', '9abc'], 8)
    """

    def __init__(self, max_per_topic: int = 1000, max_topics: int = 1000, max_bytes: int = 64 * 2**20,
                 measure: Callable[[object], int] = packed_size):
        if min(max_per_topic, max_topics, max_bytes) < 1:
            raise ValueError("EventStore bounds must be at least 1")
        self.max_per_topic = max_per_topic
        self.max_topics = max_topics
        self.max_bytes = max_bytes
        self.measure = measure
        # topic -> deque of (seq, time, msg, nbytes), oldest first; the dict in order of last event
        self._topics: dict[str, deque] = {}
        self._order: deque = deque()  # (seq, topic) of every kept event, oldest first (plus stale ones)
        self._subscribers: dict[str, set[str]] = {}  # topic -> client ids
        self.nbytes = 0
        self.count = 0
        self.dropped = 0
        self._kept = 0

    def __len__(self) -> int:
        return self._kept

    def __repr__(self) -> str:
        return f"<EventStore topics={len(self._topics)} events={len(self)} bytes={self.nbytes}>"

    # ------------------------------------------------------------------ events
    def add(self, topic: str, at: float, msg) -> int:
        """Keep one event; returns its number (``count`` after it). ``msg`` must pack (msgpack)."""
        nbytes = self.measure(msg)
        self.count += 1
        seq = self.count
        q = self._topics.pop(topic, None)  # (re-inserted: the dict stays in order of last event)
        if q is None:
            q = deque()
            while len(self._topics) >= self.max_topics:
                self._drop_topic(next(iter(self._topics)))
        self._topics[topic] = q
        q.append((seq, at, msg, nbytes))
        self._order.append((seq, topic))
        self.nbytes += nbytes
        self._kept += 1
        while len(q) > self.max_per_topic:
            self._drop_oldest_of(topic)
        while self.nbytes > self.max_bytes and self._drop_oldest():
            pass
        if len(self._order) > 2 * self._kept + 1024:  # stale entries of events dropped otherwise
            self._order = deque(sorted((ev[0], t) for t, q in self._topics.items() for ev in q))
        return seq

    def get(self, topic: str) -> list[tuple[float, object]]:
        """The events of ``topic``, oldest first: ``[(time, msg), ...]`` (empty for an unknown topic)."""
        return [(ev[1], ev[2]) for ev in self._topics.get(topic, ())]

    def all(self) -> dict[str, list[tuple[float, object]]]:
        """Every topic's events: ``{topic: [(time, msg), ...]}``."""
        return {topic: self.get(topic) for topic in self._topics}

    def topics(self) -> list[str]:
        """The topics holding events, the one with the oldest last event first."""
        return list(self._topics)

    def _drop_oldest_of(self, topic: str) -> None:
        q = self._topics[topic]
        ev = q.popleft()
        self.nbytes -= ev[3]
        self.dropped += 1
        self._kept -= 1
        if not q:
            del self._topics[topic]

    def _drop_topic(self, topic: str) -> None:
        q = self._topics.pop(topic)
        self.nbytes -= sum(ev[3] for ev in q)
        self.dropped += len(q)
        self._kept -= len(q)

    def _drop_oldest(self) -> bool:
        """Drop the oldest event of any topic; False when there is none."""
        while self._order:
            seq, topic = self._order.popleft()
            q = self._topics.get(topic)
            if q and q[0][0] == seq:
                self._drop_oldest_of(topic)
                return True
        return False

    # ------------------------------------------------------------------ subscriptions
    def subscribe(self, client: str, topic: str) -> None:
        self._subscribers.setdefault(topic, set()).add(client)

    def unsubscribe(self, client: str, topic: str) -> None:
        clients = self._subscribers.get(topic)
        if clients is not None:
            clients.discard(client)
            if not clients:
                del self._subscribers[topic]

    def remove_client(self, client: str) -> None:
        """The client went away: unsubscribe it from every topic."""
        for topic in [t for t, cs in self._subscribers.items() if client in cs]:
            self.unsubscribe(client, topic)

    def subscribers(self, topic: str) -> set[str]:
        return set(self._subscribers.get(topic, ()))


def recipients(store: EventStore, topic: str, msg, wanting: Callable[[str], Iterable[str]],
               connected: Iterable[str]) -> set[str]:
    """The clients an event goes to: the topic's subscribers and, for a routed topic (print,
    warn) whose ``msg`` names a task ``key``, the connected clients ``wanting(key)`` -- or
    every connected client when none does, so that the output is not lost.

    >>> store = EventStore()
    >>> store.subscribe("c3", "print")
    >>> sorted(recipients(store, "print", {"key": "f-1", "text": "hi"}, {"f-1": ["c1"]}.get, ["c1", "c2", "c3"]))
    ['c1', 'c3']
    >>> sorted(recipients(store, "print", {"key": "gone-1", "text": "hi"}, {}.get, ["c1", "c2", "c3"]))
    ['c1', 'c2', 'c3']
    >>> sorted(recipients(store, "other", {"key": "f-1"}, {"f-1": ["c1"]}.get, ["c1", "c2"]))
    []
    """
    out = store.subscribers(topic)
    if topic in ROUTED_TOPICS and isinstance(msg, dict) and isinstance(msg.get("key"), str):
        connected = set(connected)
        owners = {c for c in (wanting(msg["key"]) or ()) if c in connected}
        out |= owners or connected
    return out


class EventsExtension(SchedulerExtension):
    """Serves log-event, get-events, subscribe-topic and unsubscribe-topic; pushes ``event``."""

    name = "events"

    def __init__(self, scheduler, store: EventStore | None = None):
        super().__init__(scheduler)
        self.store = store if store is not None else EventStore()

    def __repr__(self) -> str:
        return f"<EventsExtension {self.store!r}>"

    # ------------------------------------------------------------------ ops
    def _op_log_event(self, peer, h, payload):
        topic = h["topic"]
        for t in [topic] if isinstance(topic, str) else topic:
            self.log_event(t, h.get("msg"))
        return {} if h.get("rid") is not None else None

    def _op_get_events(self, peer, h, payload) -> dict:
        topic = h.get("topic")
        if topic is None:
            return {"events": {t: [list(ev) for ev in evs] for t, evs in self.store.all().items()}}
        return {"events": [list(ev) for ev in self.store.get(topic)]}

    def _op_subscribe(self, peer, h, payload) -> dict:
        self.store.subscribe(self.scheduler._client_of(peer), h["topic"])
        return {}

    def _op_unsubscribe(self, peer, h, payload) -> dict:
        self.store.unsubscribe(self.scheduler._client_of(peer), h["topic"])
        return {}

    OPS = {ops.LOG_EVENT: _op_log_event, ops.GET_EVENTS: _op_get_events, ops.SUBSCRIBE_TOPIC: _op_subscribe,
           ops.UNSUBSCRIBE_TOPIC: _op_unsubscribe}

    # ------------------------------------------------------------------ what the scheduler may call
    def log_event(self, topic: str, msg) -> None:
        """Keep an event and push it to the clients it is for (scheduler code may call this too)."""
        now = time.time()
        try:
            self.store.add(topic, now, msg)
        except (TypeError, ValueError, OverflowError) as e:  # only in-process callers can pass such msg
            raise BadMessage(f"log-event: the message on topic {topic!r} does not pack with msgpack: {e}",
                             "bad msg") from None
        tasks = self.scheduler.state.tasks

        def wanting(key: str):
            ts = tasks.get(key)
            return ts.who_wants if ts is not None else ()

        event = {"op": ops.EVENT, "topic": topic, "time": now, "msg": msg}
        for client in recipients(self.store, topic, msg, wanting, self.scheduler.client_peer):
            self.scheduler.send_to_client(client, event)

    def remove_client(self, client: str) -> None:
        self.store.remove_client(client)
