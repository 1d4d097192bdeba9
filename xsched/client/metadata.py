"""Metadata: small values the scheduler keeps under nested keys, shared by every client and task.

For the facts several notebooks or tasks agree on (a run's parameters, the stage a
pipeline reached), as dask's ``set_metadata`` / ``get_metadata``; large values belong in
published datasets. A task reaches them through ``xsched.get_client()``::

    set_metadata(["run", "stage"], 3) --set-metadata--> scheduler (MetadataStore) <--{}--
    get_metadata("run") --get-metadata--> <--{found, value}--

A mixin of ``Client`` (``client.py``); the store is the scheduler's ``metadata`` extension.
"""

from __future__ import annotations

from typing import Any

from ..protocol import ops
from .dual import sync_or_async

__all__ = ["MetadataMixin"]

_NO_DEFAULT = object()


class MetadataMixin:
    """set_metadata and get_metadata."""

    @sync_or_async
    async def set_metadata(self, key: Any, value: Any) -> None:
        """Keep ``value`` on the scheduler under ``key``: a string or integer, or a list of
        them naming nested levels (made as dicts where missing). ``value`` is anything
        msgpack carries (numbers, strings, bytes, lists, dicts; tuples come back as lists).
        The scheduler keeps 64 MiB of metadata at most; a value past that is refused
        (ValueError) and the metadata stays as it was.

        >>> client.set_metadata("set_metadata-run", {"stage": 1})
        >>> client.set_metadata(["set_metadata-run", "stage"], 2)
        >>> client.set_metadata(["set_metadata-run", "params"], (0.1, 5))
        >>> client.get_metadata("set_metadata-run")
        {'stage': 2, 'params': [0.1, 5]}
        """
        reply, _ = await self._conn.request({"op": ops.SET_METADATA, "keys": _keys(key, "set_metadata"),
                                             "value": value})
        if reply.get("refused"):
            raise ValueError(reply["refused"])

    @sync_or_async
    async def get_metadata(self, keys: Any, default: Any = _NO_DEFAULT) -> Any:
        """The value kept under ``keys`` (a key, or a list of nested keys). Raises KeyError
        naming the keys and the top-level keys there are, unless ``default`` is given.

        >>> client.set_metadata(["get_metadata-run", "stage"], 2)
        >>> client.get_metadata(["get_metadata-run", "stage"])
        2
        >>> client.get_metadata("get_metadata-nothing", default=None)
        >>> client.get_metadata(["get_metadata-run", "size"])
        Traceback (most recent call last):
        KeyError: "no metadata under ['get_metadata-run', 'size'] (top-level keys: ...); set it with
        client.set_metadata(keys, value)"
        """
        reply, _ = await self._conn.request({"op": ops.GET_METADATA, "keys": _keys(keys, "get_metadata")})
        if reply.get("found"):
            return reply.get("value")
        if default is not _NO_DEFAULT:
            return default
        known = ", ".join(map(repr, reply.get("keys", []))) or "none"
        raise KeyError(f"no metadata under {keys!r} (top-level keys: {known}); set it with "
                       "client.set_metadata(keys, value)")


def _keys(keys: Any, what: str) -> str | int | list:
    """``keys`` as sent: a string or integer, or a non-empty list of them (a tuple too)."""
    path = list(keys) if isinstance(keys, (list, tuple)) else [keys]
    bad = [k for k in path if isinstance(k, bool) or not isinstance(k, (str, int))]
    if bad or not path:
        raise TypeError(f"{what}: keys are a string or an integer, or a list of them naming nested levels; "
                        f"got {keys!r}" + (f" ({bad[0]!r} is neither)" if bad else ""))
    return path if isinstance(keys, (list, tuple)) else keys
