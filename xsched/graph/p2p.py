"""An all-to-all exchange worker to worker (p2p): n + 1 + n tasks, the data off the graph.

The task exchange (``shuffle.py``) makes every piece a task result: ``n_in x n_out`` small
tasks, each piece kept in memory (or spilled) until its output combines it. Here the pieces
never become tasks: each input partition's *transfer* task splits it and sends each piece
straight to the worker that will build that output, which appends it to a file on its disk
(buffered up to ``shuffle.buffer`` bytes); a *barrier* waits for every transfer; each
*output* task then runs on the worker holding its pieces and reads them back::

    shuffle-transfer-<id>-i   split(part_i) -> pieces sent to their outputs' workers -> the run number
    shuffle-barrier-<id>      every transfer done (all of the same run) -> the run number
    <out>-j                   the pieces of output j read back from disk, combine(pieces)

Which worker builds which output is decided by the scheduler (its ``shuffle`` extension)
when the first transfer asks (``shuffle-get``): the outputs are dealt to the running
workers in turn (``owner``), and each output task is restricted to its worker. If a worker
dies while the shuffle runs, its pieces are lost: the extension starts a new *run* (a new
number, new owners) and every transfer runs again; receivers drop what they hold of older
runs and refuse pieces of them, and a transfer told its run is stale sends again under the
current one. A piece arriving twice (a transfer that ran twice) is kept once. So the result
is exact whatever dies, and memory per worker stays near its task threads' partitions plus
the buffer.

An input may reach only some outputs (an array's rechunk: a block's parts go to the
output blocks it overlaps): its split returns ``{output: piece}``, and each output is told
how many pieces to expect. An array's outputs are keyed as its blocks (``grid``).

Output tasks carry the annotation ``{"shuffle": id}``: graph fusion never merges tasks whose
annotations differ, so an output keeps its key, which the scheduler restricts.

This module builds the tasks; the functions they run use the worker's shuffle service
(``xsched/worker/shuffle.py``), reached through ``get_worker()``, so the graph layer knows no
worker. They run only on an xsched cluster (``shuffle.method: tasks`` runs anywhere).

>>> layers, keys = p2p_layers(["a-0", "a-1"], 3, len, list, "t0", "out-t0")
>>> sorted(layers), keys
(['out-t0', 'shuffle-barrier-t0', 'shuffle-transfer-t0'], ['out-t0-0', 'out-t0-1', 'out-t0-2'])
>>> owner(4, ["tcp://w1", "tcp://w2", "tcp://w3"])
'tcp://w2'
"""

from __future__ import annotations

import itertools
import math
from typing import Any, Callable, Sequence

from .. import config
from ..client.default import default_client  # (a registry only: no network code)
from ..task_context import get_worker
from .layers import annotations_in_force, chunk_key, per_task
from .spec import Ref, Task

__all__ = ["p2p_layers", "owner", "transfer_key", "barrier_key", "output_keys", "shuffle_method"]

_METHODS = ("auto", "p2p", "tasks")


def shuffle_method(method: str | None = None) -> str:
    """``"p2p"`` or ``"tasks"``: ``method`` if given, else the ``shuffle.method`` setting;
    ``"auto"`` is p2p when a Client is the default (the graph will run on a cluster).

    >>> shuffle_method("tasks")
    'tasks'
    >>> shuffle_method("disk")
    Traceback (most recent call last):
    ...
    ValueError: shuffle method 'disk' is not one of 'auto', 'p2p', 'tasks'
    """
    method = method or config.get("shuffle.method", "auto")
    if method not in _METHODS:
        raise ValueError(f"shuffle method {method!r} is not one of {', '.join(map(repr, _METHODS))}")
    if method == "auto":
        return "p2p" if default_client() is not None else "tasks"
    return method


def transfer_key(shuffle_id: str, i: int) -> str:
    """The key of input ``i``'s transfer task."""
    return f"shuffle-transfer-{shuffle_id}-{i}"


def barrier_key(shuffle_id: str) -> str:
    """The key of the task every output waits on."""
    return f"shuffle-barrier-{shuffle_id}"


def output_keys(out: str, n_out: int, grid: Sequence[int] | None = None) -> list[str]:
    """The keys of the outputs, ``<out>-0`` ... ``<out>-<n_out - 1>``; with ``grid`` (the
    blocks per axis of an array's outputs, in C order) the keys of those blocks.

    >>> output_keys("rechunk-t0", 4, (2, 2))
    ['rechunk-t0-0.0', 'rechunk-t0-0.1', 'rechunk-t0-1.0', 'rechunk-t0-1.1']
    """
    if grid is None or len(grid) < 2:
        return [f"{out}-{j}" for j in range(n_out)]
    if math.prod(grid) != n_out:
        raise ValueError(f"a grid of {tuple(grid)} blocks is not {n_out} outputs")
    return [chunk_key(out, index) for index in itertools.product(*(range(n) for n in grid))]


def owner(j: int, workers: Sequence[str]) -> str:
    """The worker that builds output ``j`` when ``workers`` take part: dealt in turn."""
    return workers[j % len(workers)]


def _service():
    try:
        worker = get_worker()
    except ValueError:
        raise RuntimeError(
            "a p2p shuffle runs only on an xsched cluster (its workers exchange the pieces); "
            "compute with a Client, or build the collection with shuffle.method set to 'tasks' "
            "(xsched.config.set({'shuffle.method': 'tasks'})); for an array's rechunk, "
            "x.rechunk(..., method='tasks') or the setting array.rechunk.method") from None
    return worker.shuffles


def transfer(part: Any, shuffle_id: str, i: int, n_in: int, n_out: int, out: str, split: Callable,
             grid: tuple | None = None) -> int:
    """Split input ``i`` into pieces (``n_out`` of them, or ``{output: piece}`` for the outputs
    it reaches) and send each to its output's worker; the run number the pieces went under."""
    return _service().transfer(shuffle_id, i, n_in, n_out, out, split(part, n_out), grid)


def barrier(shuffle_id: str, n_in: int, n_out: int, out: str, *runs: int, grid: tuple | None = None) -> int:
    """Every transfer is done: the run they all sent under, if it is still current."""
    return _service().barrier(shuffle_id, n_in, n_out, out, runs, grid)


def unpack(run: int, shuffle_id: str, j: int, n_pieces: int, combine: Callable) -> Any:
    """Output ``j``: its ``n_pieces`` pieces, in input order, read back here and combined."""
    return combine(_service().take(shuffle_id, run, j, n_pieces))


def p2p_layers(in_keys: Sequence[str], n_out: int, split: Callable | Sequence[Callable],
               combine: Callable | Sequence[Callable], shuffle_id: str, out: str, *,
               grid: Sequence[int] | None = None,
               pieces: Sequence[int] | None = None) -> tuple[dict[str, dict], list[str]]:
    """Layers of tasks moving piece ``j`` of every input partition to output ``j``, worker to
    worker: ``({layer name: tasks}, output keys)``, like ``shuffle_layers``.

    ``split(part, n_out)`` returns ``n_out`` pieces (each picklable), or a mapping
    ``{output: piece}`` when an input reaches only some outputs (an array's rechunk); or
    ``split`` is a list of such functions, one per input (a join exchanges both its sides at
    once, each split its own way). ``combine(pieces)`` gets one output's pieces in input
    order, or ``combine`` is a list of functions, one per output. ``pieces[j]`` is how many
    pieces output ``j`` gets (default: one from every input). ``shuffle_id`` names the
    exchange (a token unique to its inputs and split); outputs are keyed ``<out>-j``, or as
    the blocks of an array with ``grid`` blocks per axis (``output_keys``).
    """
    n_in = len(in_keys)
    if n_out < 1:
        raise ValueError(f"a shuffle needs at least one output partition, got npartitions={n_out}")
    if n_in < 1:
        raise ValueError("a shuffle needs at least one input partition")
    splits = list(split) if isinstance(split, (list, tuple)) else [split] * n_in
    if len(splits) != n_in:
        raise ValueError(f"{len(splits)} split functions for {n_in} input partitions")
    combines = list(combine) if isinstance(combine, (list, tuple)) else [combine] * n_out
    counts = list(pieces) if pieces is not None else [n_in] * n_out
    if len(combines) != n_out or len(counts) != n_out:
        raise ValueError(f"{len(combines)} combine functions and {len(counts)} piece counts for {n_out} outputs")
    grid = tuple(int(n) for n in grid) if grid is not None and len(grid) > 1 else None
    keys = output_keys(out, n_out, grid)
    ann = annotations_in_force()
    transfers = {transfer_key(shuffle_id, i): Task(transfer, (Ref(k), shuffle_id, i, n_in, n_out, out, splits[i], grid),
                                                   {}, per_task(ann))
                 for i, k in enumerate(in_keys)}
    bkey = barrier_key(shuffle_id)
    barriers = {bkey: Task(barrier, (shuffle_id, n_in, n_out, out, *(Ref(k) for k in transfers)), {"grid": grid},
                           per_task(ann))}
    outs = {key: Task(unpack, (Ref(bkey), shuffle_id, j, counts[j], combines[j]), {},
                      {**per_task(ann), "shuffle": shuffle_id})
            for j, key in enumerate(keys)}
    return {f"shuffle-transfer-{shuffle_id}": transfers, bkey: barriers, out: outs}, list(outs)
