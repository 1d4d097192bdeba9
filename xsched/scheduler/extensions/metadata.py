"""Metadata: small values kept by the scheduler under nested keys, for any client or task.

The ``metadata`` scheduler extension (see ``base.py`` for the protocol): a place for the
administrative facts several clients or tasks agree on (a run's parameters, a stage
reached, a path), as dask's ``set_metadata`` / ``get_metadata``.

Data flow::

    client.set_metadata(["run", "stage"], 3) --set-metadata {keys, value}--> MetadataStore.set
        <--{} or {refused}-- (past the byte budget: refused, the store unchanged)
    client.get_metadata("run") --get-metadata {keys}--> MetadataStore.get
        <--{found: True, value} or {found: False, missing}--

``MetadataStore`` is the nested mapping, with no sockets. Values are whatever msgpack
carries (tuples come back as lists). A path's missing levels are made as dicts, and a level
that is not a dict is replaced by one, as dask does. The packed size of every top-level
entry is kept, so the whole store stays within ``max_bytes``.

>>> store = MetadataStore()
>>> store.set(["run", "stage"], 3); store.set(["run", "path"], "/data")
>>> store.get("run")
{'stage': 3, 'path': '/data'}
>>> store.get(["run", "size"])
Traceback (most recent call last):
...
KeyError: ['run', 'size']
"""

from __future__ import annotations

from typing import Any, Sequence

from ...protocol import ops
from ...units import format_bytes
from .base import SchedulerExtension
from .events import packed_size

__all__ = ["MetadataExtension", "MetadataStore", "MAX_BYTES"]

#: The packed size all metadata may take on the scheduler (it is for small values).
MAX_BYTES = 64 * 2**20


def _path(keys: str | int | Sequence) -> list:
    path = list(keys) if isinstance(keys, (list, tuple)) else [keys]
    if not path:
        raise KeyError("an empty list of keys names no metadata; give a key, or a list of nested keys")
    return path


class MetadataStore:
    """Nested values under paths of keys, within ``max_bytes`` packed in all.

    >>> store = MetadataStore(max_bytes=32)
    >>> store.set("small", 1)
    >>> store.set("big", "x" * 40)
    Traceback (most recent call last):
    ...
    ValueError: metadata 'big' would take 47 B, more than the 24 B left of the scheduler's 32 B for metadata; keep large values in datasets (client.publish_dataset) or files
    """

    def __init__(self, max_bytes: int = MAX_BYTES):
        self.max_bytes = max_bytes
        self.data: dict = {}
        self._sizes: dict = {}  # top-level key -> packed size of its entry

    @property
    def nbytes(self) -> int:
        return sum(self._sizes.values())

    def set(self, keys: str | int | Sequence, value: Any) -> None:
        """Set the value at ``keys`` (a key, or a list of nested keys)."""
        path = _path(keys)
        top = path[0]
        entry = value
        if len(path) > 1:  # the dicts along the path copied, the value set, measured before it counts
            old = self.data.get(top)
            entry = dict(old) if isinstance(old, dict) else {}
            level = entry
            for k in path[1:-1]:
                below = level.get(k)
                level[k] = dict(below) if isinstance(below, dict) else {}
                level = level[k]
            level[path[-1]] = value
        size = packed_size({top: entry})
        left = self.max_bytes - (self.nbytes - self._sizes.get(top, 0))
        if size > left:
            raise ValueError(f"metadata {keys!r} would take {format_bytes(size)}, more than the "
                             f"{format_bytes(left)} left of the scheduler's {format_bytes(self.max_bytes)} for "
                             "metadata; keep large values in datasets (client.publish_dataset) or files")
        self.data[top] = entry
        self._sizes[top] = size

    def get(self, keys: str | int | Sequence) -> Any:
        """The value at ``keys``; KeyError naming the path when a level is missing."""
        level: Any = self.data
        for k in _path(keys):
            if not isinstance(level, dict) or k not in level:
                raise KeyError(keys)
            level = level[k]
        return level

    def __repr__(self) -> str:
        return f"<MetadataStore {len(self.data)} keys, {format_bytes(self.nbytes)} of {format_bytes(self.max_bytes)}>"


class MetadataExtension(SchedulerExtension):
    """Serves set-metadata and get-metadata from one ``MetadataStore`` (``self.store``)."""

    name = "metadata"

    def __init__(self, scheduler):
        super().__init__(scheduler)
        self.store = MetadataStore()

    def __repr__(self) -> str:
        return f"<MetadataExtension {self.store!r}>"

    def _op_set(self, peer, h, payload):
        try:
            self.store.set(h["keys"], h.get("value"))
        except (KeyError, ValueError) as e:
            return {"refused": str(e.args[0]) if isinstance(e, KeyError) else str(e)}
        return {}

    def _op_get(self, peer, h, payload):
        try:
            return {"found": True, "value": self.store.get(h["keys"])}
        except KeyError:
            return {"found": False, "keys": sorted(map(str, self.store.data))[:50]}

    OPS = {ops.SET_METADATA: _op_set, ops.GET_METADATA: _op_get}
