"""Stimulus ids: the name every state-machine event carries.

Both state machines (``scheduler/state/`` and ``worker/state.py``) write the id of the event
that caused each state change beside it, so ``story(key)`` says why a key is where it is.
An id is the event's kind and a process-wide counter: unique, ordered, and cheap.

>>> a, b = stimulus_id("free-keys"), stimulus_id("free-keys")
>>> a.startswith("free-keys-") and a != b
True
>>> new_id = stimulus_factory("compute-task")
>>> new_id().startswith("compute-task-")
True
"""

from __future__ import annotations

import itertools
from typing import Callable

__all__ = ["stimulus_id", "stimulus_factory"]

_ids = itertools.count()


def stimulus_id(prefix: str) -> str:
    """A new id for an event of kind ``prefix``."""
    return f"{prefix}-{next(_ids)}"


def stimulus_factory(prefix: str) -> Callable[[], str]:
    """A function making new ids of kind ``prefix`` (a dataclass field's ``default_factory``)."""
    return lambda: stimulus_id(prefix)
