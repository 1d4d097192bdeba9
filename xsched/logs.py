"""The recent log records of a process's ``xsched`` loggers, kept in memory for the client.

Each scheduler and worker installs one bounded handler on the ``xsched`` logger when it
starts (``install()``; once per process, however many servers it hosts), so
``client.get_scheduler_logs()`` and ``client.get_worker_logs()`` can show what a process
logged without reading its log file::

    logging.getLogger("xsched.<anything>").warning(...)  -> RecentLogs (a bounded deque)
    client --get-logs {n}--> scheduler or worker -> recent(n): [(level, message), ...]

The handler keeps what the loggers emit at their configured level (``xsched scheduler``
and ``xsched worker`` log warnings and above unless started with ``--log-level info``);
it changes no level and prints nothing. Code running in tasks may log under ``xsched``
too (``logging.getLogger("xsched.user")``) to have its records kept.

>>> handler = RecentLogs(capacity=2)
>>> log = logging.getLogger("xsched.doctest-logs")
>>> log.addHandler(handler)
>>> for i in range(3):
...     log.warning("step %d", i)
>>> [message.split(" - ")[-1] for level, message in handler.records()]
['step 1', 'step 2']
>>> handler.records(1)[0][0]
'WARNING'
>>> log.removeHandler(handler)
"""

from __future__ import annotations

import logging
import threading
from collections import deque

__all__ = ["RecentLogs", "install", "recent", "DEFAULT_CAPACITY"]

#: records kept per process
DEFAULT_CAPACITY = 10_000
FORMAT = "%(asctime)s - %(name)s - %(levelname)s - %(message)s"

_installed: "RecentLogs | None" = None
_install_lock = threading.Lock()


class RecentLogs(logging.Handler):
    """A logging handler keeping the last ``capacity`` records as (level name, formatted text)."""

    def __init__(self, capacity: int = DEFAULT_CAPACITY, fmt: str = FORMAT):
        super().__init__(logging.NOTSET)
        self.setFormatter(logging.Formatter(fmt))
        self.buffer: deque = deque(maxlen=capacity)

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.buffer.append((record.levelname, self.format(record)))
        except Exception:  # noqa: BLE001 - a record that cannot be formatted is logging's business
            self.handleError(record)

    def records(self, n: int | None = None) -> list[tuple[str, str]]:
        """The last ``n`` records (all when None), oldest first."""
        items = list(self.buffer)  # (a copy: other threads keep logging)
        if n is not None:
            items = items[-n:] if n > 0 else []
        return items


def install(capacity: int = DEFAULT_CAPACITY) -> RecentLogs:
    """The process's handler on the ``xsched`` logger, added on the first call."""
    global _installed
    with _install_lock:
        if _installed is None:
            _installed = RecentLogs(capacity)
            logging.getLogger("xsched").addHandler(_installed)
        return _installed


def recent(n: int | None = None) -> list[tuple[str, str]]:
    """The last ``n`` records of the ``xsched`` loggers in this process (none before ``install``)."""
    return _installed.records(n) if _installed is not None else []
