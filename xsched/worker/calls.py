"""Running a caller's function in this worker and packing its outcome for the reply.

``client.run`` and actor calls both run code a client sent, in a thread, and must answer
every call: a call that raised (a BaseException included) or whose result cannot be
pickled is an error reply the caller raises again, never a request left unanswered.

>>> _call_in_thread(divmod, (7, 2), {})
(True, (3, 1))
>>> ok, packed = _call_in_thread(divmod, (1, 0), {})
>>> ok, packed[2]
(False, 'ZeroDivisionError: integer division or modulo by zero')
"""

from __future__ import annotations

from ..comm import Msg
from ..errors import pack_exception
from ..protocol.serialize import dumps

__all__ = ["_call_in_thread", "_dumps_in_thread", "_error_reply"]


def _call_in_thread(func, args, kwargs) -> tuple:
    """(In a pool thread) ``(True, func(*args, **kwargs))`` or ``(False, packed exception)``.

    Never raises, for the reasons of ``Worker._run_task``: some exceptions do not survive
    the trip through the pool's future unchanged.
    """
    try:
        return True, func(*args, **kwargs)
    except BaseException as e:  # noqa: BLE001
        return False, pack_exception(e)


def _dumps_in_thread(obj) -> tuple:
    """(In a thread) ``(True, frames of obj)`` or ``(False, packed SerializationError)``."""
    try:
        return True, dumps(obj)
    except BaseException as e:  # noqa: BLE001
        return False, pack_exception(e)


def _error_reply(blob: bytes, tb: bytes, text: str) -> Msg:
    """The reply to a call that raised (the caller raises it again)."""
    return Msg({"status": "OK", "error": True, "exception": blob, "traceback": tb, "text": text})
