"""Running a user's function inside a server (``client.run`` / ``run_on_scheduler``).

Both servers do the same thing: unpickle the function from an authenticated client,
hand it the live server object if its signature asks for it by name, await it if it is a
coroutine, and reply with the result or the exception and its remote traceback.

>>> import asyncio
>>> msg = asyncio.run(call_user_function(lambda worker: worker, (), {}, "worker", 42))
>>> msg.objects
{'result': 42}
"""

from __future__ import annotations

import inspect

from ..comm import Msg
from ..errors import pack_exception

__all__ = ["call_user_function", "wants", "with_server"]


def wants(func, name: str) -> bool:
    """True when ``func`` has a parameter called ``name`` (``worker``, ``scheduler``)."""
    try:
        return name in inspect.signature(func).parameters
    except (TypeError, ValueError):
        return False


def with_server(func, kwargs: dict, name: str, obj) -> dict:
    """``kwargs`` with the live server ``obj`` under ``name`` (``worker``, ``scheduler``) or
    ``dask_<name>``, whichever ``func`` asks for (dask's name, so that a notebook's
    ``client.run(lambda dask_worker: ...)`` runs as written).

    >>> with_server(lambda dask_worker: 0, {}, "worker", "w"), with_server(len, {"a": 1}, "worker", "w")
    ({'dask_worker': 'w'}, {'a': 1})
    """
    for asked in (name, f"dask_{name}"):
        if wants(func, asked):
            return dict(kwargs, **{asked: obj})
    return kwargs


async def call_user_function(func, args, kwargs, inject_name: str, inject_obj):
    """The reply Msg for running ``func(*args, **kwargs)`` here."""
    try:
        kwargs = with_server(func, kwargs, inject_name, inject_obj)
        result = func(*args, **kwargs)
        if inspect.isawaitable(result):
            result = await result
    except Exception as e:
        blob, tb, text = pack_exception(e)
        return Msg({"status": "OK", "error": True, "exception": blob, "traceback": tb, "text": text})
    return Msg({"status": "OK"}, {"result": result})
