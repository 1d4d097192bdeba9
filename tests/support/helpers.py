"""Helpers for tests (not fixtures): ``wait_until`` polls a condition up to a deadline
(deadlines for conditions are fine; durations are never asserted), ``Gate`` lets a test
hold tasks on a worker until it opens a file, ``spin_until`` holds a task's thread in a
function of its own until a file exists, ``count_opcodes`` measures work without a
clock, ``child_pids`` / ``pid_gone`` look at processes by parentage and PID.

Scheduler and worker processes unpickle ``Gate`` by reference from ``tests.support.helpers``
(the repository root is on their PYTHONPATH: see tests/conftest.py).
"""

from __future__ import annotations

import os
import time
import uuid

import psutil


def wait_until(predicate, timeout: float = 20, interval: float = 0.02, msg: str = "condition"):
    """Poll ``predicate()`` until it returns something truthy; fail after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"{msg} did not become true within {timeout}s (last value: {value!r})")
        time.sleep(interval)


def count_opcodes(where, fn, *args) -> int:
    """Bytecode instructions executed in ``where`` (a module, or a package: all its modules)
    while ``fn(*args)`` runs.

    A deterministic measure of work, the same on a loaded or an idle machine: how it grows
    with the input shows the complexity without a clock. Python-level work only; a C call
    counts as one instruction.
    """
    import sys

    path = where.__file__
    if os.path.basename(path) == "__init__.py":
        prefix = os.path.dirname(path) + os.sep
        wanted = lambda name: name.startswith(prefix)  # noqa: E731
    else:
        wanted = lambda name: name == path  # noqa: E731
    count = 0

    def local(frame, event, arg):
        nonlocal count
        if event == "opcode":
            count += 1
        return local

    def tracer(frame, event, arg):
        if not wanted(frame.f_code.co_filename):
            return None
        frame.f_trace_opcodes = True
        return local

    old = sys.gettrace()
    sys.settrace(tracer)
    try:
        fn(*args)
    finally:
        sys.settrace(old)
    return count


class Gate:
    """A file that tasks wait for: ``gate.wait`` is picklable and blocks until ``open()``::

        gate = Gate(tmp_path); fut = client.submit(gate.wait, 1)   # held on a worker
        gate.open(); fut.result()                                  # 1
    """

    def __init__(self, directory):
        self.path = os.path.join(str(directory), f"gate-{uuid.uuid4().hex}")

    def open(self) -> None:
        with open(self.path, "w"):
            pass

    def wait(self, value=None, timeout: float = 60):
        deadline = time.monotonic() + timeout
        while not os.path.exists(self.path):
            if time.monotonic() > deadline:
                raise TimeoutError(f"gate {self.path} never opened")
            time.sleep(0.005)
        return value


def spin(seconds) -> int:
    """A task busy in Python code of its own (a loop, not a sleep) for ``seconds``: a sampled
    stack finds it there every time, and an interrupt lands at its next line."""
    deadline = time.monotonic() + seconds
    n = 0
    while time.monotonic() < deadline:
        n += 1
    return n


def spin_until(path) -> int:
    """A task that holds its thread in a function of its own until ``path`` exists (for
    profiles and call stacks to find it there). It lives here, not in a test module, so that
    a worker unpickling it imports this light module only, never a test module's imports."""
    while not os.path.exists(path):
        time.sleep(0.002)
    return 1


def child_pids() -> set[int]:
    return {p.pid for p in psutil.Process().children(recursive=True)}


def kill_worker(client, address: str) -> int:
    """SIGKILL the worker process at ``address`` and wait until its scheduler removed it; its pid."""
    import signal

    pid = client.run(os.getpid)[address]
    os.kill(pid, signal.SIGKILL)
    wait_until(lambda: address not in client.scheduler_info()["workers"], msg=f"the dead worker {address} removed")
    return pid


def pid_gone(pid: int) -> bool:
    """True once ``pid`` no longer exists (a zombie awaiting its reaper counts as gone)."""
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def literal_arrays(graph) -> list:
    """Every numpy array written into a graph's tasks: data shipped with the graph from the
    client, which a reader of files (zarr, HDF5) or a random array must not do."""
    import numpy as np

    from xsched.graph.spec import Task

    found, stack = [], list(graph.values())
    while stack:
        obj = stack.pop()
        if isinstance(obj, Task):
            stack.extend(obj.args)
            stack.extend(obj.kwargs.values())
        elif isinstance(obj, (list, tuple)):
            stack.extend(obj)
        elif isinstance(obj, dict):
            stack.extend(obj.values())
        elif isinstance(obj, np.ndarray):
            found.append(obj)
    return found


def assert_frames_agree(got, expected, **kwargs):
    """A dataframe collection's computed result equals pandas' ``expected``, and its meta has
    the same index names and columns (or name)."""
    import pandas.testing as tm

    result = got.compute()
    assert list(got._meta.index.names) == list(expected.index.names)
    if hasattr(expected, "columns"):
        assert list(got._meta.columns) == list(expected.columns)
        tm.assert_frame_equal(result, expected, **kwargs)
    else:
        assert got._meta.name == expected.name
        tm.assert_series_equal(result, expected, **kwargs)



def values_with_gaps(rng, high: int, low_rows: int = 1, high_rows: int = 50):
    """A random number of small whole values (as floats, so ties are many) below ``high``,
    about a fifth of them missing: data for order statistics across partitions."""
    import numpy as np

    n = int(rng.integers(low_rows, high_rows))
    values = rng.integers(0, high, n).astype(float)
    values[rng.random(n) < 0.2] = np.nan
    return values

def as_merged(expected, meta):
    """pandas' merge result ``expected`` with the dtypes xsched's merge (whose ``meta`` is
    given) always has: ints float64 and truth values object on a side that may lack a match,
    where pandas makes them so only when some row lacks one."""
    import numpy as np

    return expected.astype({c: t for c, t in meta.dtypes.items()
                            if expected[c].dtype.kind in "iub" and isinstance(t, np.dtype) and t.kind in "fO"
                            and t != expected[c].dtype})
