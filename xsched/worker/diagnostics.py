"""What a worker can tell about the tasks it runs: their stacks now, a statistical profile, its state.

The worker server answers the client's ``call-stack``, ``profile`` and ``dump-state``
requests with these functions (its ``_PEER_OPS``)::

    task thread: Worker._run_task notes key -> thread id in worker._task_threads (while it runs)
    client.call_stack(...) --call-stack {keys}--> call_stacks(threads, keys)
        sys._current_frames() of those threads, formatted: {key: [frame lines]}
    client.profile(duration, interval) --profile--> profile(threads, duration, interval)
        every ``interval`` for ``duration``: each task thread's stack -> Profile counts
        (on the event loop, between its other work): {samples, counts}; asked with
        ``tree`` (the dashboard's profile pane, through the scheduler) also the call tree
        per task prefix (xsched/profiling.py): {..., tree: rows}
    client.dump_cluster_state(...) --dump-state--> dump_state(worker)

The frames of the worker's own machinery (its task threads, the task spec's call) are left
out: a stack starts at the task's function (a user's, or xsched's own for an array's or a
dataframe's block work). ``stack_of``, ``trim_internal`` and ``Profile``
are plain functions over frames, tested with the test's own frames.

>>> import sys
>>> entries = stack_of(sys._getframe())
>>> entries[-1][0]                       # innermost last: (function, file, line)
'<module>'
>>> profile = Profile()
>>> profile.add(entries); profile.add(entries)
>>> profile.samples, profile.result()[0]["count"]
(2, 2)
"""

from __future__ import annotations

import asyncio
import functools
import os
import sys
import threading
import time
from collections import Counter

from .. import logs
from ..keys import key_split
from ..profiling import StackTree

__all__ = ["stack_of", "trim_internal", "format_stack", "call_stacks", "Profile", "profile", "dump_state"]

_XSCHED = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_THREADING = os.path.abspath(threading.__file__)


def stack_of(frame, limit: int = 256) -> list[tuple[str, str, int]]:
    """``(function, file, line)`` of ``frame`` and its callers, outermost first (at most ``limit``)."""
    out = []
    while frame is not None and len(out) < limit:
        code = frame.f_code
        out.append((code.co_name, code.co_filename, frame.f_lineno))
        frame = frame.f_back
    out.reverse()
    return out


#: where the worker's machinery that runs a task lives: its task threads and the task spec's call
_RUNNER = (os.path.join(_XSCHED, "worker") + os.sep, os.path.join(_XSCHED, "graph") + os.sep)
_USER, _XSCHED_OWN, _RUNNING = 0, 1, 2


@functools.lru_cache(maxsize=4096)
def _origin(filename: str) -> int:
    """Whose a frame of ``filename`` is: the user's, xsched's own (an array's block work),
    or the machinery running the task (``threading`` too). Cached: a profile asks it of
    every frame of every sample, and a process has few files."""
    path = os.path.abspath(filename)
    if path == _THREADING or path.startswith(_RUNNER):
        return _RUNNING
    return _XSCHED_OWN if path.startswith(_XSCHED) else _USER


def trim_internal(entries: list[tuple[str, str, int]], keep_runner: bool = True) -> list[tuple[str, str, int]]:
    """``entries`` (outermost first) without the leading frames of xsched itself and of
    ``threading``: the worker's task thread and the call of the task spec. A task that is
    xsched's own function (an array's block product, a dataframe's partition reduction)
    keeps its frames from that function on: only the runner's are left out then. When every
    frame is the runner's (a task calling a C function such as ``np.matmul`` directly), all
    are kept, or none with ``keep_runner=False`` (the profile: such a sample is the task's own).

    >>> xs = os.path.join(_XSCHED, "worker", "server.py")
    >>> trim_internal([("run", xs, 1), ("f", "/home/me/analysis.py", 3), ("g", xs, 9)])
    [('f', '/home/me/analysis.py', 3), ('g', '.../xsched/worker/server.py', 9)]
    >>> la = os.path.join(_XSCHED, "array", "linalg.py")
    >>> [f for f, _, _ in trim_internal([("run", xs, 1), ("_accumulate", la, 5), ("_add", la, 9)])]
    ['_accumulate', '_add']
    >>> trim_internal([("run", xs, 1)]), trim_internal([("run", xs, 1)], keep_runner=False)
    ([('run', '.../xsched/worker/server.py', 1)], [])
    """
    for outside in (_USER, _XSCHED_OWN):  # (from the first user frame; else from xsched's own)
        for i, (_, filename, _) in enumerate(entries):
            if _origin(filename) <= outside:
                return entries[i:]
    return entries if keep_runner else []


def format_stack(entries: list[tuple[str, str, int]]) -> list[str]:
    """Traceback-style lines, one per frame: ``File "f.py", line 3, in g`` and its source line.

    >>> format_stack([("g", "/nonexistent/f.py", 3)])
    ['  File "/nonexistent/f.py", line 3, in g\\n']
    """
    import linecache

    out = []
    for name, filename, line in entries:
        text = f'  File "{filename}", line {line}, in {name}\n'
        source = linecache.getline(filename, line).strip()
        if source:
            text += f"    {source}\n"
        out.append(text)
    return out


def call_stacks(threads: dict[str, int], keys=None) -> dict[str, list[str]]:
    """``{key: formatted stack}`` of the tasks running now in ``threads`` (key -> thread id),
    those of ``keys`` only unless it is None. A task that ended meanwhile is left out."""
    frames = sys._current_frames()
    wanted = None if keys is None else set(keys)
    out = {}
    for key, ident in list(threads.items()):
        if wanted is not None and key not in wanted:
            continue
        frame = frames.get(ident)
        if frame is not None:
            out[key] = format_stack(trim_internal(stack_of(frame)))
    return out


class Profile:
    """Counts of ``(function, file, line)`` over sampled stacks: ``count`` is the samples in
    which it was on the stack, ``self`` those in which it was the innermost frame."""

    def __init__(self) -> None:
        self.samples = 0
        self.counts: Counter = Counter()
        self.self_counts: Counter = Counter()
        self.tree = StackTree()  # the same samples as a call tree per task prefix

    def add(self, entries: list[tuple[str, str, int]], key: str | None = None) -> None:
        """One sampled stack (outermost first, as ``stack_of`` gives it), of the task ``key``."""
        self.samples += 1
        if key is not None:
            self.tree.add(key_split(key), entries)
        self.counts.update(set(entries))  # (a recursive call counts once per sample)
        if entries:
            self.self_counts[entries[-1]] += 1

    def merge(self, counts: list) -> None:
        """Add rows ``[function, file, line, count, self]`` (another worker's ``rows()``)."""
        for function, filename, line, count, own in counts:
            where = (function, filename, line)
            self.counts[where] += count
            self.self_counts[where] += own

    def rows(self) -> list[list]:
        """``[function, file, line, count, self]``, the most sampled first."""
        return [[*where, n, self.self_counts.get(where, 0)] for where, n in
                sorted(self.counts.items(), key=lambda item: (-item[1], item[0]))]

    def result(self) -> list[dict]:
        """The rows as dicts: function, file, line, count, self."""
        return [dict(zip(("function", "file", "line", "count", "self"), row)) for row in self.rows()]


#: how much longer than ``interval`` the sampler waits after a sample that found no task running
IDLE_BACKOFF = 10


async def profile(threads: dict[str, int], duration: float, interval: float) -> Profile:
    """Sample the stacks of the task threads (``threads``: key -> thread id, as it changes)
    every ``interval`` seconds for ``duration`` seconds, from the event loop. While no task
    runs, it looks ``IDLE_BACKOFF`` times less often: such a sample adds nothing, and each wakeup
    of the loop costs the worker CPU (about 2 % of a core at 100 per second here, idle)."""
    prof = Profile()
    deadline = time.monotonic() + duration
    while True:
        running = list(threads.items())
        if running:
            frames = sys._current_frames()
            for key, ident in running:
                frame = frames.get(ident)
                if frame is not None:
                    prof.add(trim_internal(stack_of(frame), keep_runner=False), key)
            del frames
        wait = interval if running else interval * IDLE_BACKOFF
        left = deadline - time.monotonic()
        if left < interval:
            return prof
        await asyncio.sleep(min(wait, left))


def dump_state(worker) -> dict:
    """What ``worker`` knows, for ``client.dump_cluster_state`` (plain data)."""
    st = worker.state
    tasks = {} if st is None else {key: ts.state for key, ts in st.tasks.items()}
    return {
        "address": worker.address, "name": worker.name, "status": worker.status, "nthreads": worker.nthreads,
        "memory_limit": worker.memory_limit, "resources": worker.resources,
        "executing": sorted(k for k in worker._task_threads), "tasks": tasks,
        "metrics": worker.metrics() if st is not None else {},
        "transition_log": [list(e) for e in st.log] if st is not None else [],
        "task_log": [list(e) for e in worker.task_log[-10_000:]],
        "logs": [list(r) for r in logs.recent()],
    }
