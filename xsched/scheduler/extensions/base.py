"""What every scheduler extension is: the protocol of ``SchedulerExtension``.

An extension is one capability of the scheduler beyond running tasks (progress bars,
published datasets, uploaded files, shipped environments, ...). The Scheduler builds one
instance of each extension listed in ``scheduler.extensions`` (the config key; default:
every one in ``xsched.scheduler.extensions.EXTENSIONS``) and keeps it as
``scheduler.extensions[name]``, where users reach it from ``%scheduler``.

Data flow::

    Scheduler.__init__ -> extensions.build(scheduler, names)
        checks the whole table first: an op served twice (by two extensions, or by an
        extension and the server itself) raises naming both, before anything is built
        -> cls(scheduler) for each name: SchedulerExtension.__init__ plugs it in:
             every op of ``OPS`` -> scheduler.register_op(op, bound handler)
             ``transition`` (if any) -> scheduler.state.transition_hooks
    message with one of its ops -> Scheduler._handle -> handler(peer, header, payload)
        (the op's fields are checked against protocol/schemas.py first); the reply is
        what the handler returns (a dict, a Msg, None for no reply), or what it awaits
    register-worker / worker removed / register-client / client removed / update-graph /
    client.restart() / Scheduler.close
        -> add_worker(address, peer) / remove_worker(address, reason) / add_client(client) /
           remove_client(client) / update_graph(graph) / restart(reason) / close()   on every
           extension, in table order
    an op of an extension that is not loaded -> ExtensionNotLoaded (a refusal naming
        the extension and the config key), not "unknown op"

The protocol, for an extension ``class X(SchedulerExtension)``:

``name``
    its key in the table and in ``scheduler.extensions``.
``OPS``
    a class-level dict op -> function ``(self, peer, header, payload)``, written like the
    server's own handler tables, ops named by ``xsched.protocol.ops``. A handler may be a
    coroutine function. Every op needs a schema in ``protocol/schemas.py``. Declared on
    the class, so the scheduler knows which extension serves an op without building it
    (duplicate checks, clear refusals).
``__init__(self, scheduler)``
    call ``super().__init__(scheduler)`` first; keep only in-memory state here (no
    sockets: the scheduler may not be listening yet; no tasks: there may be no loop).
Optional hooks (defaults do nothing; define only what the capability needs):
``transition(ts, start, finish)``
    called after every task transition of the state machine. It runs inside the state
    machine's handling of an event, so it must be cheap (O(1) per call), must not raise
    and must not feed events back: note what changed, act later.
``add_worker(address, peer)``
    a worker registers; called before the state machine hears of it, so what the
    extension sends to ``peer`` now reaches the worker before any task does.
``remove_worker(address, reason)``
    a worker left, after the state machine heard of it: lost, silent past the ttl,
    unregistered, retired or restarted (``reason`` says which).
``add_client(client)``
    a client registered.
``remove_client(client)``
    a client went away.
``update_graph(graph)``
    a client's graph (the ``UpdateGraph`` event, to read, not change) is about to reach the
    state machine: what the extension notes now comes before the transitions of its tasks.
``restart(reason)``
    the cluster was restarted (``client.restart()``): every task is forgotten (and every
    worker is removed, ``remove_worker`` with reason "restart"); ``reason`` says who
    restarted it. What the extension keeps that names keys must stop promising them.
``close()``
    the scheduler closes (may be a coroutine function); the base class detaches the
    transition hook, so an override calls ``super().close()``.
A hook that raises is logged by the server; the other extensions still hear of the event.

What an extension may use of the scheduler: ``state`` (read; change it only through
``scheduler.handle(event)``), ``listener.send``, ``send_to_client``, ``worker_peer`` /
``peer_worker`` / ``client_peer``, ``_client_of(peer)`` (refuses unregistered peers) and
the other extensions through ``scheduler.extensions``.
"""

from __future__ import annotations

from typing import Any, Callable, ClassVar, Mapping

from ...protocol.schemas import BadMessage

__all__ = ["SchedulerExtension", "ExtensionNotLoaded"]


class ExtensionNotLoaded(BadMessage):
    """A request needs a scheduler extension this scheduler did not load.

    A refusal (the request is well formed; this scheduler was configured without the
    capability): logged once per peer without a traceback, and the requester hears the
    message.
    """

    def __init__(self, name: str, what: str, loaded: list[str] | None = None):
        have = f" (it loads {', '.join(sorted(loaded)) or 'none'})" if loaded is not None else ""
        super().__init__(
            f"{what} needs the scheduler extension {name!r}, which this scheduler does not load{have}; add "
            f"{name!r} to the config key scheduler.extensions (or leave the key unset for all) and start "
            "the scheduler again", kind="extension-not-loaded")
        self.name = name


class SchedulerExtension:
    """One capability of the scheduler; see the module docstring for the protocol."""

    #: key in the EXTENSIONS table and in ``scheduler.extensions``
    name: ClassVar[str] = ""
    #: op -> function(self, peer, header, payload), like the server's own handler tables
    OPS: ClassVar[Mapping[str, Callable[..., Any]]] = {}
    #: optional hook(ts, start, finish) on every task transition (None: not needed)
    transition: Callable[..., None] | None = None

    def __init__(self, scheduler):
        self.scheduler = scheduler
        for op, handler in self.handlers().items():
            scheduler.register_op(op, handler)
        if self.transition is not None:
            scheduler.state.transition_hooks.append(self.transition)

    def handlers(self) -> dict[str, Callable[..., Any]]:
        """The ops of this instance: op -> bound handler(peer, header, payload)."""
        return {op: fn.__get__(self, type(self)) for op, fn in self.OPS.items()}

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r} ops={sorted(self.OPS)}>"

    # ------------------------------------------------------------------ optional hooks
    def add_worker(self, address: str, peer: bytes) -> None:
        """A worker registers (before the state machine hears of it)."""

    def remove_worker(self, address: str, reason: str) -> None:
        """A worker was removed."""

    def add_client(self, client: str) -> None:
        """A client registered."""

    def remove_client(self, client: str) -> None:
        """A client went away."""

    def update_graph(self, graph) -> None:
        """A client's graph (the ``UpdateGraph`` event) is about to reach the state machine."""

    def restart(self, reason: str) -> None:
        """The cluster was restarted: every task is forgotten."""

    def close(self):
        """The scheduler closes: detach the transition hook (overrides call this too)."""
        if self.transition is not None:
            try:
                self.scheduler.state.transition_hooks.remove(self.transition)
            except ValueError:
                pass
