"""Interrupting one running task (``client.interrupt``): ``TaskInterrupted`` raised in its thread.

A task runs in a thread of its own (``threads.py``), so an interrupt cannot be a signal (that
would hit the worker's event loop). It is an asynchronous exception set on the task's thread
(``PyThreadState_SetAsyncExc``, as the embedded kernels interrupt a cell), and only while the
task's own code runs: ``enter`` and ``leave`` bracket it under a lock, and ``leave`` lets an
exception still pending land and swallows it (``drain_async_exc``: never a clear with NULL,
which would slow the whole process), so none can reach the worker's code around the task. A thread
blocked in C (a ``time.sleep``, a lock, I/O) sees it when it returns to Python.

    client --interrupt-task {keys}--> Worker._op_interrupt_task -> TaskInterrupts.interrupt(key)
        -> set_async_exc(thread, TaskInterrupted) -> the task raises it -> reported as its error

>>> import threading, time
>>> interrupts = TaskInterrupts()
>>> def spin(out):
...     interrupts.enter("spin-1")
...     try:
...         while True:
...             time.sleep(0.001)
...     except TaskInterrupted as e:
...         out.append(type(e).__name__)
...     finally:
...         interrupts.leave("spin-1")
>>> out = []; t = threading.Thread(target=spin, args=(out,)); t.start()
>>> while not interrupts.running("spin-1"): time.sleep(0.001)
>>> interrupts.interrupt("spin-1"); t.join(); out
True
['TaskInterrupted']
>>> interrupts.interrupt("spin-1")  # (it no longer runs)
False
"""

from __future__ import annotations

import threading

from ..errors import TaskInterrupted
from ..jupyter.kernel import drain_async_exc, set_async_exc

__all__ = ["TaskInterrupts", "TaskInterrupted"]


class TaskInterrupts:
    """The tasks of this worker whose code runs now (key -> thread), to interrupt them."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._threads: dict[str, int] = {}
        self._fired: set[int] = set()  # threads an interrupt was set on, perhaps not raised yet

    def enter(self, key: str) -> None:
        """The calling thread starts running task ``key``'s code."""
        with self._lock:
            self._threads[key] = threading.get_ident()

    def leave(self, key: str) -> None:
        """Task ``key``'s code ended in the calling thread: no interrupt may reach it from now on."""
        ident = threading.get_ident()
        while True:
            try:
                with self._lock:
                    if self._threads.get(key) == ident:
                        del self._threads[key]
                    fired = ident in self._fired
                    self._fired.discard(ident)
                if fired:
                    drain_async_exc(TaskInterrupted)
                return
            except TaskInterrupted:  # (it fired before we held the lock: the task had ended anyway)
                continue

    def running(self, key: str) -> bool:
        return key in self._threads

    def interrupt(self, key: str) -> bool:
        """Raise TaskInterrupted in task ``key``'s thread; False when its code does not run here now."""
        with self._lock:
            ident = self._threads.get(key)
            if ident is None:
                return False
            set_async_exc(ident, TaskInterrupted)
            self._fired.add(ident)
            return True
