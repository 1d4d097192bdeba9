"""Task graphs for the simulator: shapes, with durations and output sizes from a seeded RNG.

Why: a simulated worker runs no code. What it needs of a task is how long a thread is
busy with it (``duration``, virtual seconds) and how large its result is (``nbytes``:
what the worker holds, what a peer fetches). A workload is those, a dependency graph, the
keys the client wants, and which resources each worker offers. The same seed gives the
same workload, so a run is reproducible and two scheduler versions can be compared on it.

Shapes (``WORKLOADS``; ``make(name, tasks=T)`` sizes each to about T tasks):

- ``map``: n independent tasks, every result wanted (``client.map``).
- ``tree``: n leaves reduced ``fan_in`` at a time down to one wanted key.
- ``movie``: the seed-000 pipeline per chunk, read (100 MB) -> sum of sub-stacks (10 MB)
  -> analysis (a few kB), then a tree of the analyses; 1,000 chunks by default.
- ``shuffle``: all-to-all, n splits x n picks x n combines (combine j needs pick i-j of
  every split i).
- ``resources``: some tasks need a resource (``GPU``) that only some workers offer.

The client's priorities come from ``xsched.graph.order`` (``Workload.entries``), as the
real client computes them.

>>> w = make("tree", tasks=20, seed=1)
>>> len(w), w.wanted, round(w.critical_path(), 3) <= round(w.total_work(), 3)
(22, ['combine-1-0'], True)
"""

from __future__ import annotations

import heapq
import math
import random
from dataclasses import dataclass, field
from typing import Callable

from ..graph.order import order_indexed

__all__ = ["SimTask", "Workload", "map_tasks", "tree", "movie", "shuffle", "resources", "WORKLOADS", "make",
           "RUN_SPEC"]

#: The run_spec every simulated task sends: opaque bytes the scheduler forwards and no one runs.
RUN_SPEC = b"sim"


@dataclass(frozen=True, slots=True)
class SimTask:
    """One task: ``duration`` seconds on a thread, a result of ``nbytes``, needing ``resources``.

    >>> SimTask("sum-1", ("read-1",), 0.05, 10_000)
    SimTask(key='sum-1', deps=('read-1',), duration=0.05, nbytes=10000, resources=None)
    """

    key: str
    deps: tuple = ()
    duration: float = 1.0
    nbytes: int = 0
    resources: dict | None = None


def no_resources(index: int) -> dict | None:
    """Worker ``index`` offers no resources (the default of a workload).

    >>> no_resources(3) is None
    True
    """
    return None


@dataclass(frozen=True)
class EveryKth:
    """Every ``k``-th worker (0, k, 2k, ...) offers ``offer``: a fraction 1/k of them.

    >>> [EveryKth(4, {"GPU": 1})(i) for i in range(5)]
    [{'GPU': 1}, None, None, None, {'GPU': 1}]
    """

    k: int
    offer: dict

    def __call__(self, index: int) -> dict | None:
        return dict(self.offer) if index % self.k == 0 else None


@dataclass
class Workload:
    """Tasks (each after its dependencies), the keys the client wants, and
    ``worker_resources(index)``: what the index-th worker to join offers.

    >>> w = Workload("pair", [SimTask("a"), SimTask("b", ("a",))], ["b"])
    >>> len(w), w.by_key["b"].deps
    (2, ('a',))
    >>> Workload("bad", [SimTask("b", ("a",))], ["b"])
    Traceback (most recent call last):
    ...
    ValueError: bad: task 'b' comes before its dependencies ['a']
    """

    name: str
    tasks: list
    wanted: list
    worker_resources: Callable[[int], dict | None] = no_resources
    by_key: dict = field(init=False, repr=False)
    _run_order: list | None = field(init=False, repr=False, default=None)

    def __post_init__(self):
        self.by_key = {}
        for t in self.tasks:
            missing = [d for d in t.deps if d not in self.by_key]
            if missing:
                raise ValueError(f"{self.name}: task {t.key!r} comes before its dependencies {missing[:3]}")
            self.by_key[t.key] = t
        if len(self.by_key) != len(self.tasks):
            raise ValueError(f"{self.name}: duplicate keys")

    def __len__(self) -> int:
        return len(self.tasks)

    def total_work(self) -> float:
        """Thread-seconds of all tasks together.

        >>> map_tasks(4, jitter=0).total_work()
        4.0
        """
        return math.fsum(t.duration for t in self.tasks)

    def critical_path(self) -> float:
        """The longest chain of durations through the graph (transfers not counted).

        >>> tree(4, fan_in=2, jitter=0, combine=0.5).critical_path()
        2.0
        """
        finish: dict = {}
        for t in self.tasks:
            finish[t.key] = t.duration + max((finish[d] for d in t.deps), default=0.0)
        return max(finish.values(), default=0.0)

    def resource_work(self) -> dict:
        """Resource-seconds needed, per resource: no schedule beats this over the amount offered.

        >>> resources(4, seed=2, duration=1.0).resource_work()
        {'GPU': 0.58...}
        """
        out: dict = {}
        for t in self.tasks:
            for r, amount in (t.resources or {}).items():
                out[r] = out.get(r, 0.0) + t.duration * amount
        return out

    def list_makespan(self, threads: int) -> float | None:
        """The makespan of an ideal list scheduler on ``threads`` threads; None with resources.

        Why: ``max(critical path, work / threads)`` is a bound no schedule beats, but with
        a few tasks per thread no scheduler that learns durations only as tasks finish
        comes near it (the last round starts at uneven times). This reference runs each
        ready task, in the client's priority order, on any free thread the instant one
        frees, with no transfer and no message costs: what a scheduler with zero overhead
        would get, so a makespan's ratio to it is what xsched's own decisions cost.

        >>> map_tasks(3, jitter=0).list_makespan(2), tree(4, fan_in=2, jitter=0, combine=0.5).list_makespan(4)
        (2.0, 2.0)
        """
        if any(t.resources for t in self.tasks):
            return None
        index = {t.key: i for i, t in enumerate(self.tasks)}
        priority = self._order()
        waiting = [len(t.deps) for t in self.tasks]
        dependents: list[list[int]] = [[] for _ in self.tasks]
        for i, t in enumerate(self.tasks):
            for d in t.deps:
                dependents[index[d]].append(i)
        ready = [(priority[i], i) for i, n in enumerate(waiting) if n == 0]
        heapq.heapify(ready)
        running: list[tuple[float, int]] = []
        free, now = max(threads, 1), 0.0
        while ready or running:
            while free and ready:
                i = heapq.heappop(ready)[1]
                heapq.heappush(running, (now + self.tasks[i].duration, i))
                free -= 1
            now, i = heapq.heappop(running)
            free += 1
            for j in dependents[i]:
                waiting[j] -= 1
                if not waiting[j]:
                    heapq.heappush(ready, (priority[j], j))
        return now

    def _order(self) -> list:
        """Each task's place in the client's run order (``graph.order``), computed once."""
        if self._run_order is None:
            index = {t.key: i for i, t in enumerate(self.tasks)}
            self._run_order = order_indexed([t.key for t in self.tasks],
                                            [[index[d] for d in t.deps] for t in self.tasks])
        return self._run_order

    def entries(self, generation: int = 1) -> list:
        """The update-graph entries a client sends (``protocol/update_graph.py``): key,
        spec, dependencies, priority ``[0, generation, run order]`` and resources.

        >>> [(e["key"], e["priority"]) for e in tree(2, fan_in=2).entries()]
        [('leaf-0', [0, 1, 0]), ('leaf-1', [0, 1, 1]), ('combine-0-0', [0, 1, 2])]
        """
        out = []
        for t, o in zip(self.tasks, self._order()):
            e = {"key": t.key, "run_spec": RUN_SPEC, "deps": list(t.deps), "priority": [0, generation, o]}
            if t.resources:
                e["resources"] = dict(t.resources)
            out.append(e)
        return out


def _jit(rng: random.Random, mean: float, jitter: float) -> float:
    """``mean`` times a uniform factor in ``[1 - jitter, 1 + jitter]``."""
    return mean * (1.0 + jitter * (2.0 * rng.random() - 1.0)) if jitter else float(mean)


def _reduce(inputs: list, sizes: list, prefix: str, fan_in: int, duration: Callable[[], float],
            nbytes: Callable[[list], int]) -> tuple[list, str]:
    """Tasks combining ``inputs`` ``fan_in`` at a time down to one; (tasks, root key).
    ``nbytes(input sizes)`` is a combined result's size."""
    tasks, layer = [], list(zip(inputs, sizes))
    level = 0
    while len(layer) > 1:
        nxt = []
        for j in range(0, len(layer), fan_in):
            group = layer[j:j + fan_in]
            size = int(nbytes([s for _, s in group]))
            key = f"{prefix}-{level}-{j // fan_in}"
            tasks.append(SimTask(key, tuple(k for k, _ in group), duration(), size))
            nxt.append((key, size))
        layer, level = nxt, level + 1
    return tasks, layer[0][0]


def map_tasks(n: int = 1000, seed: int = 0, duration: float = 1.0, jitter: float = 0.5,
              nbytes: int = 100_000) -> Workload:
    """``n`` independent tasks of ``duration`` (+-``jitter``), all wanted.

    >>> w = map_tasks(3, jitter=0); [(t.key, t.duration) for t in w.tasks], len(w.wanted)
    ([('map-0', 1.0), ('map-1', 1.0), ('map-2', 1.0)], 3)
    """
    rng = random.Random(seed)
    tasks = [SimTask(f"map-{i}", (), _jit(rng, duration, jitter), max(int(_jit(rng, nbytes, jitter)), 0))
             for i in range(n)]
    return Workload("map", tasks, [t.key for t in tasks])


def tree(leaves: int = 1000, seed: int = 0, fan_in: int = 8, duration: float = 1.0, combine: float = 0.1,
         jitter: float = 0.5, nbytes: int = 1_000_000) -> Workload:
    """``leaves`` root tasks reduced ``fan_in`` at a time (``combine`` seconds each) to one wanted key.

    >>> w = tree(10, fan_in=4); [t.key for t in w.tasks][10:], w.wanted
    (['combine-0-0', 'combine-0-1', 'combine-0-2', 'combine-1-0'], ['combine-1-0'])
    """
    rng = random.Random(seed)
    tasks = [SimTask(f"leaf-{i}", (), _jit(rng, duration, jitter), int(_jit(rng, nbytes, jitter)))
             for i in range(leaves)]
    more, root = _reduce([t.key for t in tasks], [t.nbytes for t in tasks], "combine", fan_in,
                         lambda: _jit(rng, combine, jitter), lambda sizes: _jit(rng, nbytes, jitter))
    return Workload("tree", tasks + more, [root])


def movie(chunks: int = 1000, seed: int = 0, fan_in: int = 8) -> Workload:
    """Seed 000's movie reduction: per 100-frame chunk ``read`` (100 MB of float32 frames)
    -> ``sum`` (ten summed images, 10 MB) -> ``info`` (a list of small dicts), then a tree
    of the infos to one wanted key.

    >>> w = movie(16); len(w), w.tasks[0].nbytes, w.wanted
    (51, 104857600, ['gather-1-0'])
    """
    rng = random.Random(seed)
    tasks, infos = [], []
    for i in range(chunks):
        tasks.append(SimTask(f"read-{i}", (), _jit(rng, 0.2, 0.2), 100 * 512 * 512 * 4))
        tasks.append(SimTask(f"sum-{i}", (f"read-{i}",), _jit(rng, 0.05, 0.2), 10 * 512 * 512 * 4))
        tasks.append(SimTask(f"info-{i}", (f"sum-{i}",), _jit(rng, 0.3, 0.2), int(_jit(rng, 4000, 0.1))))
        infos.append(tasks[-1])
    more, root = _reduce([t.key for t in infos], [t.nbytes for t in infos], "gather", fan_in,
                         lambda: _jit(rng, 0.001, 0.5), sum)
    return Workload("movie", tasks + more, [root])


def shuffle(n: int = 30, seed: int = 0, part: int = 1_000_000, split: float = 1.0, pick: float = 0.002,
            combine: float = 0.5) -> Workload:
    """All-to-all: ``split-i`` makes n parts, ``pick-i-j`` takes part j of split i,
    ``combine-j`` joins pick i-j of every i; every combine wanted. n*n + 2n tasks.

    >>> w = shuffle(3); len(w), w.by_key["combine-1"].deps
    (15, ('pick-0-1', 'pick-1-1', 'pick-2-1'))
    """
    rng = random.Random(seed)
    tasks = [SimTask(f"split-{i}", (), _jit(rng, split, 0.3), n * part) for i in range(n)]
    tasks += [SimTask(f"pick-{i}-{j}", (f"split-{i}",), _jit(rng, pick, 0.3), int(_jit(rng, part, 0.3)))
              for i in range(n) for j in range(n)]
    combines = [SimTask(f"combine-{j}", tuple(f"pick-{i}-{j}" for i in range(n)), _jit(rng, combine, 0.3),
                        n * part) for j in range(n)]
    return Workload("shuffle", tasks + combines, [t.key for t in combines])


def resources(n: int = 1000, seed: int = 0, needing: float = 0.5, offering: float = 0.25,
              resource: str = "GPU", duration: float = 1.0) -> Workload:
    """``n`` independent tasks, a fraction ``needing`` of them (``gpu-i``) needing one
    ``resource``, which one worker in ``1/offering`` offers (workers 0, k, 2k...).

    >>> w = resources(8, seed=2); sorted({t.key.split("-")[0] for t in w.tasks}), w.worker_resources(0)
    (['cpu', 'gpu'], {'GPU': 1})
    """
    rng = random.Random(seed)
    tasks = []
    for i in range(n):
        if rng.random() < needing:
            tasks.append(SimTask(f"gpu-{i}", (), _jit(rng, duration, 0.5), 100_000, {resource: 1}))
        else:
            tasks.append(SimTask(f"cpu-{i}", (), _jit(rng, duration, 0.5), 100_000))
    k = max(1, round(1 / offering))
    return Workload("resources", tasks, [t.key for t in tasks], EveryKth(k, {resource: 1}))


WORKLOADS: dict = {"map": map_tasks, "tree": tree, "movie": movie, "shuffle": shuffle, "resources": resources}


def make(name: str, tasks: int | None = None, seed: int = 0) -> Workload:
    """The workload ``name`` sized to about ``tasks`` tasks (its default size when None).

    >>> [len(make(name, tasks=1000)) for name in WORKLOADS]
    [1000, 1002, 1000, 1023, 1000]
    """
    if name not in WORKLOADS:
        raise ValueError(f"unknown workload {name!r}: one of {', '.join(WORKLOADS)}")
    if tasks is None:
        return WORKLOADS[name](seed=seed)
    if name == "tree":
        return tree(max(1, round(tasks * 7 / 8)), seed=seed)
    if name == "movie":
        return movie(max(1, round(tasks / (3 + 1 / 7))), seed=seed)
    if name == "shuffle":
        return shuffle(max(1, round(math.sqrt(tasks + 1) - 1)), seed=seed)
    return WORKLOADS[name](tasks, seed=seed)
