"""Virtual time for the simulator: a heap of ``(time, lane, seq, callback, args)``, nothing else.

Why: the scheduler's and the workers' decisions are pure state machines (events in,
instructions out), so a cluster of any width can be replayed in one process if something
says *when* each event happens. This loop is that something. Callbacks run in time order,
ties by ``lane`` (the simulated process they happen in), then in the order they were
scheduled (``seq``). Lanes make a run independent of the order in which one event's
messages to *different* processes were sent: a state machine that walks a set of objects
(whose order varies from run to run) to address them still leads to the same run, while
the messages to one process keep the order they were sent in. A callback may schedule
more; ``now`` jumps from one callback's time to the next. No threads, no sockets, no
sleeping: a simulated hour takes as long as its callbacks take.

Data flow::

    at(t, f, *args, lane=l) / after(dt, f, *args, lane=l) --push--> heap [(t, l, seq, f, args), ...]
    run(until) --pop the smallest--> now = t; f(*args)  --may push more-->  ...
               returns when the heap is empty, the next time is past ``until``,
               or a callback called stop()

>>> loop, seen = Loop(), []
>>> loop.after(2.0, seen.append, "b"); loop.after(1.0, seen.append, "a"); loop.at(1.0, seen.append, "a2")
>>> loop.run(), seen, loop.now
(3, ['a', 'a2', 'b'], 2.0)
>>> seen.clear(); loop.after(1.0, seen.append, "to 2", lane=2); loop.after(1.0, seen.append, "to 1", lane=1)
>>> loop.run(), seen
(2, ['to 1', 'to 2'])
"""

from __future__ import annotations

import heapq
import itertools
import math
from typing import Callable

__all__ = ["Loop"]


class Loop:
    """An event loop in virtual seconds; ``now`` is the time of the callback running.

    >>> loop = Loop()
    >>> loop.after(0.5, print, "half a second")
    >>> loop.run()
    half a second
    1
    """

    __slots__ = ("now", "_heap", "_seq", "steps", "_stopped")

    def __init__(self, start: float = 0.0):
        self.now = float(start)
        self._heap: list = []
        self._seq = itertools.count()
        self.steps = 0  # callbacks run, over every run()
        self._stopped = False

    def __len__(self) -> int:
        """Callbacks waiting.

        >>> loop = Loop(); loop.after(1, print); len(loop)
        1
        """
        return len(self._heap)

    def at(self, when: float, callback: Callable, *args, lane: int = 0) -> None:
        """Run ``callback(*args)`` at virtual time ``when`` (not before ``now``); at equal
        times lower ``lane`` first.

        >>> loop = Loop(); loop.at(3.0, print, "three"); _ = loop.run()
        three
        >>> loop.at(1.0, print)
        Traceback (most recent call last):
        ...
        ValueError: cannot schedule at 1.0, before now (3.0)
        """
        if when < self.now:
            raise ValueError(f"cannot schedule at {when}, before now ({self.now})")
        heapq.heappush(self._heap, (when, lane, next(self._seq), callback, args))

    def after(self, delay: float, callback: Callable, *args, lane: int = 0) -> None:
        """Run ``callback(*args)`` ``delay`` virtual seconds from now.

        >>> loop = Loop(10.0); loop.after(2.5, lambda: print(loop.now)); _ = loop.run()
        12.5
        """
        heapq.heappush(self._heap, (self.now + max(delay, 0.0), lane, next(self._seq), callback, args))

    def stop(self) -> None:
        """Make ``run`` return after the callback running now.

        >>> loop = Loop(); loop.after(1, loop.stop); loop.after(2, print, "later")
        >>> loop.run(), len(loop)
        (1, 1)
        """
        self._stopped = True

    def run(self, until: float = math.inf) -> int:
        """Run callbacks in time order until none is left, the next is later than
        ``until`` (``now`` is then ``until``), or ``stop()``; the number run.

        >>> loop = Loop(); loop.after(5, print, "not yet"); loop.run(until=2), loop.now
        (0, 2.0)
        """
        heap, pop = self._heap, heapq.heappop
        self._stopped = False
        n = 0
        while heap and not self._stopped:
            if heap[0][0] > until:
                self.now = float(until)
                break
            when, _, _, callback, args = pop(heap)
            self.now = when
            callback(*args)
            n += 1
        self.steps += n
        return n
