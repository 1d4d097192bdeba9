"""Scheduling hints attached to the tasks a block of code creates.

``with annotate(resources={"GPU": 1}):`` makes every task built inside the block carry
``{"resources": {"GPU": 1}}`` in ``Task.annotations``. Blocks nest: an inner value wins,
and dict-valued annotations (``resources``, ``limits``) are merged key by key. The state
lives in a ``contextvars.ContextVar``, so threads and asyncio tasks each see their own.

Annotations are checked here, when written, so a typo fails in the notebook cell that made
it rather than on a worker minutes later.

>>> with annotate(priority=10, resources={"GPU": 1}):
...     with annotate(resources={"MEM": 2e9}):
...         current_annotations()
{'priority': 10, 'resources': {'GPU': 1, 'MEM': 2000000000.0}}
"""

from __future__ import annotations

import contextvars
from contextlib import contextmanager
from numbers import Integral, Real
from typing import Any, Iterator, Mapping

__all__ = ["annotate", "current_annotations", "validate_annotations", "ANNOTATION_NAMES"]

#: The annotations a task may carry, with the type each expects (used in error messages).
ANNOTATION_NAMES: dict[str, str] = {
    "priority": "a number (higher runs earlier)",
    "resources": "a dict of resource name (str) -> amount (number >= 0)",
    "workers": "a worker address or name (str) or a list of them",
    "allow_other_workers": "a bool",
    "retries": "an int >= 0",
    "limits": "a dict of limit name (str) -> int >= 0",
}

_MERGED = ("resources", "limits")  # dict-valued: nested blocks merge them key by key

_current: contextvars.ContextVar[Mapping[str, Any]] = contextvars.ContextVar(
    "xsched_annotations", default={}
)


def _is_number(value: Any) -> bool:
    return isinstance(value, Real) and not isinstance(value, bool)


def _is_int(value: Any) -> bool:
    return isinstance(value, Integral) and not isinstance(value, bool)


def _plain(number: Any) -> int | float:
    """A Python int or float (numpy scalars do not travel in msgpack headers)."""
    return int(number) if isinstance(number, Integral) else float(number)


def _bad(name: str, value: Any, exc: type[Exception] = TypeError) -> Exception:
    return exc(
        f"annotation {name}={value!r} is invalid: expected {ANNOTATION_NAMES[name]}"
    )


def _check_dict(name: str, value: Any, check: Any) -> dict:
    if not isinstance(value, Mapping):
        raise _bad(name, value)
    out = {}
    for k, v in value.items():
        if not isinstance(k, str):
            raise _bad(name, value)
        if not check(v):
            raise _bad(name, value)
        if v < 0:
            raise _bad(name, value, ValueError)
        out[k] = _plain(v)
    return out


def validate_annotations(annotations: Mapping[str, Any]) -> dict[str, Any]:
    """Check annotation names and types; return a normalised copy.

    ``workers`` given as one string becomes a one-element list. Raises ``TypeError`` for an
    unknown name or a wrong type and ``ValueError`` for a negative amount.

    >>> from xsched.graph.annotate import validate_annotations
    >>> validate_annotations({"workers": "tcp://10.0.0.1:4000", "retries": 2})
    {'workers': ['tcp://10.0.0.1:4000'], 'retries': 2}
    """
    out: dict[str, Any] = {}
    for name, value in annotations.items():
        if name not in ANNOTATION_NAMES:
            raise TypeError(
                f"unknown annotation {name!r}; valid annotations are: "
                + ", ".join(f"{n} ({t})" for n, t in ANNOTATION_NAMES.items())
            )
        if name == "priority":
            if not _is_number(value):
                raise _bad(name, value)
            value = _plain(value)
        elif name == "resources":
            value = _check_dict(name, value, _is_number)
        elif name == "limits":
            value = _check_dict(name, value, _is_int)
        elif name == "workers":
            if isinstance(value, str):
                value = [value]
            elif isinstance(value, (list, tuple, set, frozenset)) and all(
                isinstance(w, str) for w in value
            ):
                value = sorted(value) if isinstance(value, (set, frozenset)) else list(value)
            else:
                raise _bad(name, value)
        elif name == "allow_other_workers":
            if not isinstance(value, bool):
                raise _bad(name, value)
        elif name == "retries":
            if not _is_int(value):
                raise _bad(name, value)
            if value < 0:
                raise _bad(name, value, ValueError)
            value = int(value)
        out[name] = value
    return out


def _merge(outer: Mapping[str, Any], inner: Mapping[str, Any]) -> dict[str, Any]:
    merged = dict(outer)
    for name, value in inner.items():
        if name in _MERGED and name in merged:
            merged[name] = {**merged[name], **value}
        else:
            merged[name] = value
    return merged


@contextmanager
def annotate(**annotations: Any) -> Iterator[dict[str, Any]]:
    """Attach scheduling hints to every task created inside the block.

    Valid names: ``priority`` (number), ``resources`` (dict str -> number),
    ``workers`` (str or list of str), ``allow_other_workers`` (bool), ``retries`` (int),
    ``limits`` (dict str -> int). Yields the annotations in force inside the block.

    >>> from xsched.graph.annotate import annotate, current_annotations
    >>> with annotate(resources={"GPU": 1}, retries=2):
    ...     current_annotations()["resources"]
    {'GPU': 1}
    """
    merged = _merge(_current.get(), validate_annotations(annotations))
    token = _current.set(merged)
    try:
        yield current_annotations()
    finally:
        _current.reset(token)


def current_annotations() -> dict[str, Any]:
    """The annotations in force here, as a fresh dict safe to store on a task.

    >>> from xsched.graph.annotate import current_annotations
    >>> current_annotations()
    {}
    """
    current = _current.get()
    if not current:
        return {}
    return {k: (dict(v) if k in _MERGED else list(v) if k == "workers" else v)
            for k, v in current.items()}
