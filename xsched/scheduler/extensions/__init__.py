"""The scheduler's extensions, registered in one table: ``EXTENSIONS``.

Each capability beyond running tasks is one module here and one row of the table:

=============  ==============================================  ==========================
name           what                                            module
=============  ==============================================  ==========================
progress       live progress bars (``xsched.progress``)        ``progress.py``
datasets       named datasets shared between clients           ``datasets.py``
metadata       small values under nested keys                  ``metadata.py``
               (``client.set_metadata``)
uploads        ``client.upload_file``                          ``uploads.py``
environments   ``client.restart(environment=...)``             ``environments.py``
coordination   Lock, Semaphore, Queue, Variable, Event         ``coordination.py``
events         ``xsched.log_event``, topics, ``xsched.print``  ``events.py``
diagnostics    logs, task stream, story, has_what, dumps       ``diagnostics.py``
fire-and-forget  tasks kept after their client has gone         ``fire_and_forget.py``
plugins        ``client.register_plugin``: worker, nanny and    ``plugins.py``
               scheduler plugins
debugging      tasks paused at breakpoints, for the progress   ``debugging.py``
               bars and the panel
telemetry      what a live dashboard shows, batched per poll   ``telemetry.py``
shuffle        the p2p shuffle's runs: where outputs are       ``shuffle.py``
               built, restarts when a worker leaves
=============  ==============================================  ==========================

The Scheduler builds those named by the config key ``scheduler.extensions`` (unset: all,
in table order) with :func:`build`; ``scheduler.extensions[name]`` is the instance. The
protocol an extension follows (its ops, its optional hooks) is in ``base.py``.

>>> sorted(EXTENSIONS)
['coordination', 'datasets', 'debugging', 'diagnostics', 'environments', 'events', 'fire-and-forget', 'metadata', 'plugins', 'progress', 'shuffle', 'telemetry', 'uploads']
>>> op_owners()["subscribe-progress"]
'progress'
>>> selected(["uploads", "progress"])
['progress', 'uploads']
"""

from __future__ import annotations

import difflib
from typing import Iterable, Mapping

from .base import ExtensionNotLoaded, SchedulerExtension
from .coordination import CoordinationExtension
from .datasets import DatasetsExtension
from .debugging import DebuggingExtension
from .diagnostics import DiagnosticsExtension
from .environments import EnvironmentsExtension
from .events import EventsExtension
from .fire_and_forget import FireAndForgetExtension
from .metadata import MetadataExtension
from .plugins import PluginsExtension
from .progress import ProgressExtension
from .shuffle import ShuffleExtension
from .telemetry import TelemetryExtension
from .uploads import UploadsExtension

__all__ = [
    "EXTENSIONS", "SchedulerExtension", "ExtensionNotLoaded", "op_owners", "selected", "build",
    "ProgressExtension", "DatasetsExtension", "MetadataExtension", "UploadsExtension", "EnvironmentsExtension",
    "CoordinationExtension", "EventsExtension", "DiagnosticsExtension",
    "FireAndForgetExtension", "PluginsExtension", "DebuggingExtension", "TelemetryExtension", "ShuffleExtension",
]

#: name -> class, in the order they are built (and their hooks called)
EXTENSIONS: dict[str, type[SchedulerExtension]] = {
    "progress": ProgressExtension,
    "datasets": DatasetsExtension,
    "metadata": MetadataExtension,
    "uploads": UploadsExtension,
    "environments": EnvironmentsExtension,
    "coordination": CoordinationExtension,
    "events": EventsExtension,
    "diagnostics": DiagnosticsExtension,
    "fire-and-forget": FireAndForgetExtension,
    "plugins": PluginsExtension,
    "debugging": DebuggingExtension,
    "telemetry": TelemetryExtension,
    "shuffle": ShuffleExtension,
}


def op_owners(table: Mapping[str, type[SchedulerExtension]] | None = None, reserved: Iterable[str] = ()
              ) -> dict[str, str]:
    """op -> the name of the extension serving it, over the whole ``table``.

    An op declared by two extensions, or by an extension and in ``reserved`` (the ops the
    server serves itself), raises ValueError naming both.

    >>> class A(SchedulerExtension):
    ...     name, OPS = "a", {"ping": None}
    >>> op_owners({"a": A}, reserved=["ping"])
    Traceback (most recent call last):
    ...
    ValueError: op 'ping' is served by both the scheduler itself and the scheduler extension 'a'; each op has one handler
    """
    table = EXTENSIONS if table is None else table
    owners: dict[str, str] = {}
    builtin = set(reserved)
    for name, cls in table.items():
        for op in cls.OPS:
            first = "the scheduler itself" if op in builtin else (
                f"the scheduler extension {owners[op]!r}" if op in owners else None)
            if first is not None:
                raise ValueError(f"op {op!r} is served by both {first} and the scheduler extension {name!r}; "
                                 "each op has one handler")
            owners[op] = name
    return owners


def selected(names: Iterable[str] | None, table: Mapping[str, type[SchedulerExtension]] | None = None
             ) -> list[str]:
    """The extensions to build, in table order: all for None, else ``names`` checked.

    >>> selected(["progres"])
    Traceback (most recent call last):
    ...
    ValueError: scheduler.extensions names an unknown extension 'progres' (did you mean 'progress'?); known: progress, datasets, metadata, uploads, environments, coordination, events, diagnostics, fire-and-forget, plugins, debugging, telemetry, shuffle
    """
    table = EXTENSIONS if table is None else table
    if names is None:
        return list(table)
    if isinstance(names, str):
        raise TypeError(f"scheduler.extensions must be a list of extension names, not the string {names!r}")
    wanted = list(names)
    for name in wanted:
        if name not in table:
            close = difflib.get_close_matches(str(name), list(table), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise ValueError(f"scheduler.extensions names an unknown extension {name!r}{hint}; "
                             f"known: {', '.join(table)}")
    return [name for name in table if name in wanted]


def build(scheduler, names: Iterable[str] | None = None, table: Mapping[str, type[SchedulerExtension]] | None = None,
          reserved: Iterable[str] = ()) -> dict[str, SchedulerExtension]:
    """Build the extensions ``names`` (None: all) of ``table`` for ``scheduler``; name -> instance.

    Everything is checked before anything is built: the names, and that no op has two
    handlers (``reserved``: the ops the server serves itself). Each extension plugs
    itself in as it is built (``SchedulerExtension.__init__``).
    """
    table = EXTENSIONS if table is None else table
    chosen = selected(names, table)
    op_owners(table, reserved)  # the whole table: a clash is a bug even when one side is switched off
    built: dict[str, SchedulerExtension] = {}
    for name in chosen:
        built[name] = table[name](scheduler)
    return built
