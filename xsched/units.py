"""Parse and format the quantities users type: byte sizes, durations, memory limits, resources.

Everything a user can write on a command line, in a YAML file or in an environment variable
goes through here, so that ``"4GB"``, ``4e9`` and ``"100e9"`` mean the same thing everywhere
and a typo gets one clear error that lists what would have been accepted.

>>> parse_bytes("500MB"), format_bytes(2**30 * 1.5)
(500000000, '1.50 GiB')
>>> parse_timedelta("100ms"), format_time(90)
(0.1, '1m 30s')
"""

from __future__ import annotations

import datetime
import math
import os
import re
import warnings
from collections.abc import Mapping
from typing import Any

__all__ = [
    "parse_bytes",
    "format_bytes",
    "parse_timedelta",
    "format_time",
    "parse_memory_limit",
    "system_memory_limit",
    "parse_resources",
]

# Decimal units are powers of 1000 and binary units powers of 1024, as on every disk label.
_BYTE_UNITS: dict[str, int] = {"": 1, "b": 1, "byte": 1, "bytes": 1}
for _i, _p in enumerate("kmgtpe", start=1):
    _BYTE_UNITS[_p] = _BYTE_UNITS[_p + "b"] = 1000**_i
    _BYTE_UNITS[_p + "i"] = _BYTE_UNITS[_p + "ib"] = 1024**_i

_NUMBER = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:e[-+]?\d+)?"
_QUANTITY = re.compile(rf"^\s*({_NUMBER})\s*([a-zµ]*)\s*$", re.IGNORECASE)

_BYTES_FORMS = (
    "a number of bytes (4000000000, 4e9, '100e9') or a number with a unit "
    "('500MB', '4 GB', '2GiB'; units B, kB, MB, GB, TB, PB, KiB, MiB, GiB, TiB, PiB)"
)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) or _is_numpy_number(value)


def _is_numpy_number(value: Any) -> bool:
    # numpy scalars are not int/float subclasses (except float64); accept them without importing numpy
    return type(value).__module__ == "numpy" and hasattr(value, "dtype") and value.dtype.kind in "iuf"


def parse_bytes(value: str | int | float) -> int:
    """A byte count from a number or a string with a unit; decimal and binary units both work.

    >>> parse_bytes("4GB"), parse_bytes("2 GiB"), parse_bytes(1e9), parse_bytes("100e9")
    (4000000000, 2147483648, 1000000000, 100000000000)
    """
    number: float
    if _is_number(value):
        number, unit = float(value), ""
    elif isinstance(value, str):
        match = _QUANTITY.match(value)
        if not match or match.group(2).lower() not in _BYTE_UNITS:
            raise ValueError(f"Cannot parse {value!r} as a byte size; use {_BYTES_FORMS}.")
        number, unit = float(match.group(1)), match.group(2).lower()
    else:
        raise ValueError(
            f"Cannot parse {value!r} ({type(value).__name__}) as a byte size; use {_BYTES_FORMS}."
        )
    if not math.isfinite(number) or number < 0:
        raise ValueError(f"Byte size {value!r} must be a finite number >= 0; use {_BYTES_FORMS}.")
    return int(round(number * _BYTE_UNITS[unit]))


def format_bytes(n: int | float) -> str:
    """A byte count in binary units with two decimals, for humans reading a dashboard.

    >>> format_bytes(1536), format_bytes(2**30 * 1.5), format_bytes(12)
    ('1.50 KiB', '1.50 GiB', '12 B')
    """
    sign = "-" if n < 0 else ""
    n = abs(n)
    for prefix, power in (("Pi", 5), ("Ti", 4), ("Gi", 3), ("Mi", 2), ("Ki", 1)):
        if n >= 1024**power:
            return f"{sign}{n / 1024**power:.2f} {prefix}B"
    return f"{sign}{int(n)} B"


_TIME_UNITS: dict[str, float] = {}
for _names, _seconds in (
    (("ns", "nanosecond", "nanoseconds"), 1e-9),
    (("us", "µs", "microsecond", "microseconds"), 1e-6),
    (("ms", "millisecond", "milliseconds"), 1e-3),
    (("", "s", "sec", "secs", "second", "seconds"), 1.0),
    (("m", "min", "mins", "minute", "minutes"), 60.0),
    (("h", "hr", "hrs", "hour", "hours"), 3600.0),
    (("d", "day", "days"), 86400.0),
    (("w", "wk", "week", "weeks"), 604800.0),
):
    for _name in _names:
        _TIME_UNITS[_name] = _seconds

_TIME_FORMS = (
    "a number of seconds (0.5, 30) or a number with a unit "
    "('100ms', '5s', '1m', '2h', '1d'; units ns, us, ms, s, m, h, d, w)"
)


def parse_timedelta(value: str | int | float | datetime.timedelta) -> float:
    """Seconds, as a float, from a number of seconds, a string with a unit, or a timedelta.

    >>> parse_timedelta("100ms"), parse_timedelta("5s"), parse_timedelta("1m"), parse_timedelta(0.5)
    (0.1, 5.0, 60.0, 0.5)
    """
    if isinstance(value, datetime.timedelta):
        seconds = value.total_seconds()
    elif _is_number(value):
        seconds = float(value)
    elif isinstance(value, str):
        match = _QUANTITY.match(value)
        unit = match.group(2) if match else ""
        # "m" is minutes and "M" is not a time unit; compare case-insensitively otherwise
        key = unit if unit in _TIME_UNITS else unit.lower()
        if not match or key not in _TIME_UNITS or unit == "M":
            raise ValueError(f"Cannot parse {value!r} as a duration; use {_TIME_FORMS}.")
        seconds = float(match.group(1)) * _TIME_UNITS[key]
    else:
        raise ValueError(
            f"Cannot parse {value!r} ({type(value).__name__}) as a duration; use {_TIME_FORMS}."
        )
    if math.isnan(seconds) or seconds < 0:
        raise ValueError(f"Duration {value!r} must be >= 0; use {_TIME_FORMS}.")
    return seconds


def timeout_seconds(timeout: Any, what: str) -> float | None:
    """A caller's ``timeout=`` as seconds: a number, a string with a unit (``"200ms"``) or a
    timedelta; None (or infinity) for none. The error names the call.

    >>> timeout_seconds("2s", "wait"), timeout_seconds(None, "wait"), timeout_seconds(float("inf"), "wait")
    (2.0, None, None)
    """
    if timeout is None:
        return None
    try:
        seconds = parse_timedelta(timeout)
    except (TypeError, ValueError) as e:
        raise ValueError(f"{what}: the timeout {timeout!r} is not a duration: {e}") from None
    return None if seconds == math.inf else seconds


def format_time(seconds: float) -> str:
    """A duration for humans: sub-second in ms/us, then s, then "1m 30s", "2h 05m", "3d 04h".

    >>> format_time(0.0123), format_time(2.5), format_time(90), format_time(7500)
    ('12.30 ms', '2.50 s', '1m 30s', '2h 05m')
    """
    if math.isnan(seconds):
        return "nan s"
    if seconds < 0:
        return "-" + format_time(-seconds)
    if math.isinf(seconds):
        return "inf s"
    if seconds < 1e-3:
        return f"{seconds * 1e6:.2f} us"
    if seconds < 1:
        return f"{seconds * 1e3:.2f} ms"
    if seconds < 60:
        return f"{seconds:.2f} s"
    whole = int(round(seconds))
    if whole < 3600:
        return f"{whole // 60}m {whole % 60}s"
    if whole < 86400:
        return f"{whole // 3600}h {whole % 3600 // 60:02d}m"
    return f"{whole // 86400}d {whole % 86400 // 3600:02d}h"


# --- memory limits -------------------------------------------------------------------------------

_MEMORY_LIMIT_FORMS = (
    "a byte size ('4GB', '512MiB', 4e9), a fraction of total memory (0 < x <= 1, e.g. 0.5 or '50%'), "
    "'auto' (this machine's memory, or its container's if lower, divided among the worker "
    "processes), or 0 / None / 'none' for no limit"
)
_UNLIMITED = 2**60  # cgroup files report "max" (v2) or ~2**63 (v1) when there is no limit


def _read_limit(path: str) -> int | None:
    try:
        with open(path) as f:
            text = f.read().strip()
    except OSError:
        return None
    if not text.isdigit():  # "max" in cgroup v2
        return None
    limit = int(text)
    return limit if 0 < limit < _UNLIMITED else None


def _cgroup_memory_limit(root: str = "/sys/fs/cgroup", proc_cgroup: str = "/proc/self/cgroup") -> int | None:
    """The tightest memory limit of this process's cgroup (v2 or v1), or None when unlimited."""
    paths = [os.path.join(root, "memory.max"), os.path.join(root, "memory", "memory.limit_in_bytes")]
    try:
        with open(proc_cgroup) as f:
            lines = f.read().splitlines()
    except OSError:
        lines = []
    for line in lines:  # "0::/path" (v2) or "4:memory:/path" (v1)
        parts = line.split(":", 2)
        if len(parts) != 3 or parts[2] in ("", "/"):
            continue
        rel = parts[2].lstrip("/")
        if parts[1] == "":
            paths.append(os.path.join(root, rel, "memory.max"))
        elif "memory" in parts[1].split(","):
            paths.append(os.path.join(root, "memory", rel, "memory.limit_in_bytes"))
    limits = [lim for lim in map(_read_limit, paths) if lim is not None]
    return min(limits) if limits else None


def system_memory_limit() -> int:
    """Bytes of memory this process may use: the machine's RAM, or its cgroup's limit if lower.

    >>> system_memory_limit() > 0
    True
    """
    import psutil

    total = psutil.virtual_memory().total
    cgroup = _cgroup_memory_limit()
    return min(total, cgroup) if cgroup else total


def parse_memory_limit(
    value: str | int | float | None, nworkers: int = 1, total: int | None = None
) -> int | None:
    """A worker's memory limit in bytes, or None for no limit.

    ``total`` defaults to :func:`system_memory_limit`. Fractions are of ``total`` per worker;
    ``"auto"`` divides ``total`` over ``nworkers`` processes. Limits above ``total`` are capped
    with a warning, because a worker could never reach its thresholds before the machine does.

    >>> parse_memory_limit("4GB"), parse_memory_limit(0.5, total=8e9), parse_memory_limit(0)
    (4000000000, 4000000000, None)
    >>> parse_memory_limit("auto", nworkers=4, total=16e9)
    4000000000
    """
    if not isinstance(nworkers, int) or isinstance(nworkers, bool) or nworkers < 1:
        raise ValueError(f"nworkers must be an integer >= 1, got {nworkers!r}.")
    if value is None or value is False:
        return None
    original = value
    if isinstance(value, str):
        text = value.strip().lower()
        if text in ("", "0", "none", "null", "no", "false", "off", "unlimited"):
            return None
        if text == "auto":
            limit = int(total if total is not None else system_memory_limit()) // nworkers
            return limit
        if text.endswith("%"):
            try:
                value = float(text[:-1]) / 100
            except ValueError:
                raise ValueError(
                    f"Cannot parse memory limit {original!r}; use {_MEMORY_LIMIT_FORMS}."
                ) from None
        else:
            try:
                value = float(text)  # "0.5", "4e9": a bare number, treated like a number below
            except ValueError:
                try:
                    return _cap(parse_bytes(value), total, original)
                except ValueError:
                    raise ValueError(
                        f"Cannot parse memory limit {original!r}; use {_MEMORY_LIMIT_FORMS}."
                    ) from None
    if not _is_number(value):
        raise ValueError(
            f"Cannot parse memory limit {original!r} ({type(original).__name__}); "
            f"use {_MEMORY_LIMIT_FORMS}."
        )
    value = float(value)
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"Memory limit {original!r} must be >= 0; use {_MEMORY_LIMIT_FORMS}.")
    if value == 0:
        return None
    if value <= 1:
        return int(value * (total if total is not None else system_memory_limit()))
    if value < 2**20:
        raise ValueError(
            f"Memory limit {original!r} is neither a fraction (0 < x <= 1) nor a plausible number "
            f"of bytes (did you mean '{original}GB'?); use {_MEMORY_LIMIT_FORMS}."
        )
    return _cap(int(value), total, original)


def _cap(limit: int, total: int | float | None, original: Any) -> int:
    total = int(total if total is not None else system_memory_limit())
    if limit > total:
        warnings.warn(
            f"Memory limit {original!r} ({format_bytes(limit)}) exceeds the memory available "
            f"({format_bytes(total)}); using {format_bytes(total)}.",
            UserWarning,
            stacklevel=3,
        )
        return total
    return limit


# --- resources -----------------------------------------------------------------------------------

_RESOURCE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_\-]*$")
_RESOURCE_FORMS = "NAME=AMOUNT pairs separated by commas or spaces, e.g. 'GPU=2,MEMORY=100e9'"


def _resource_amount(name: str, amount: Any, where: str) -> int | float:
    if isinstance(amount, str):
        try:
            number = float(amount)
        except ValueError:
            try:
                number = float(parse_bytes(amount))
            except ValueError:
                raise ValueError(
                    f"Resource {name!r} in {where}: amount {amount!r} is not a number; "
                    f"write {_RESOURCE_FORMS}."
                ) from None
    elif _is_number(amount):
        number = float(amount)
    else:
        raise ValueError(
            f"Resource {name!r} in {where}: amount {amount!r} ({type(amount).__name__}) is not a number."
        )
    if not math.isfinite(number) or number < 0:
        raise ValueError(f"Resource {name!r} in {where}: amount {amount!r} must be a finite number >= 0.")
    return int(number) if number.is_integer() else number


def parse_resources(value: str | Mapping[str, Any] | None) -> dict[str, int | float]:
    """Abstract worker resources from ``"GPU=2,MEMORY=100e9"`` (or a dict); names keep their case.

    Amounts are numbers (``100e9`` included) or byte sizes (``100GB``); integral ones become ints.

    >>> parse_resources("GPU=2,MEMORY=100e9")
    {'GPU': 2, 'MEMORY': 100000000000}
    >>> parse_resources("process=1 hdf5-reads=2")
    {'process': 1, 'hdf5-reads': 2}
    """
    if value is None:
        return {}
    if isinstance(value, Mapping):
        items = list(value.items())
        where = repr(dict(value))
    elif isinstance(value, str):
        where = repr(value)
        items = []
        for part in re.split(r"[,\s]+", value.strip()):
            if not part:
                continue
            name, sep, amount = part.partition("=")
            if not sep or not name or not amount:
                raise ValueError(
                    f"Cannot parse resources {value!r}: {part!r} is not NAME=AMOUNT; write {_RESOURCE_FORMS}."
                )
            items.append((name, amount))
    else:
        raise ValueError(
            f"Cannot parse resources {value!r} ({type(value).__name__}); "
            f"write {_RESOURCE_FORMS} or pass a dict."
        )
    result: dict[str, int | float] = {}
    for name, amount in items:
        if not isinstance(name, str) or not _RESOURCE_NAME.match(name):
            raise ValueError(
                f"Resource name {name!r} in {where} is not valid: use letters, digits, '_' and '-', "
                "starting with a letter or '_'."
            )
        if name in result:
            raise ValueError(f"Resource {name!r} is given twice in {where}.")
        result[name] = _resource_amount(name, amount, where)
    return result
