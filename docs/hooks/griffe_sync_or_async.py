"""Griffe extension for the API reference: a Client method made by ``@sync_or_async`` reads as users call it.

``xsched/client/dual.py`` writes each public method of the Client that talks to the cluster
once, as the ``async def`` it awaits; a synchronous client (the notebook default) calls it
as a plain method, and only an asynchronous client awaits it. Read from the source, griffe
would label such a method ``async``; this drops that label. The signature and docstring are
the method's own, as ``help()`` shows them.
"""

from __future__ import annotations

import griffe


class SyncOrAsync(griffe.Extension):
    """Drop the ``async`` label of functions decorated with ``sync_or_async``."""

    def on_function(self, *, func: griffe.Function, **kwargs) -> None:
        if any(str(d.value).rsplit(".", 1)[-1] == "sync_or_async" for d in func.decorators):
            func.labels.discard("async")
