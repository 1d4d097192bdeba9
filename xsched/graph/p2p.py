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
worker. Run in one process instead (a graph built beside a Client, computed with
``scheduler="sync"`` or ``"threads"`` to debug it), the pieces travel as the transfers' and
the barrier's results instead (``HeldHere``): no worker to send them to.

>>> layers, keys = p2p_layers(["a-0", "a-1"], 3, len, list, "t0", "out-t0")
>>> sorted(layers), keys
(['out-t0', 'shuffle-barrier-t0', 'shuffle-transfer-t0'], ['out-t0-0', 'out-t0-1', 'out-t0-2'])
>>> owner(4, ["tcp://w1", "tcp://w2", "tcp://w3"])
'tcp://w2'
"""

from __future__ import annotations

import itertools
import math
from typing import Any, Callable, Mapping, Sequence

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


def checked_pieces(pieces: Sequence | Mapping, n_out: int) -> Any:
    """``(output, piece)`` pairs of a split's result (``n_out`` pieces, or ``{output:
    piece}``), refused when they name outputs that are not there.

    >>> list(checked_pieces(["a", "b"], 2)), list(checked_pieces({1: "b"}, 2))
    ([(0, 'a'), (1, 'b')], [(1, 'b')])
    """
    if isinstance(pieces, Mapping):
        if any(not 0 <= j < n_out for j in pieces):
            raise ValueError(f"the shuffle's split named outputs outside 0..{n_out - 1}: "
                             f"{sorted(j for j in pieces if not 0 <= j < n_out)[:5]}")
        return pieces.items()
    if len(pieces) != n_out:
        raise ValueError(f"the shuffle's split gave {len(pieces)} pieces for {n_out} output partitions")
    return enumerate(pieces)


class HeldHere:
    """Pieces that stay in this process: when the tasks run outside a worker, a transfer
    returns its input's ``{output: piece}`` and the barrier every input's, in input order,
    and each output takes its own from the barrier's result, so the pieces live exactly as
    long as the computation holds those results (one run: nothing here can die alone).

    >>> held = barrier("s", 2, 2, "o", transfer([3, 4], "s", 0, 2, 2, "o", lambda p, n: p),
    ...                transfer([5, 6], "s", 1, 2, 2, "o", lambda p, n: {1: p[1]}))
    >>> unpack(held, "s", 0, 1, list), unpack(held, "s", 1, 2, list)
    ([3], [4, 6])
    """

    __slots__ = ("inputs",)

    def __init__(self, inputs: Any) -> None:
        self.inputs = inputs

    def __repr__(self) -> str:
        return f"HeldHere(<{len(self.inputs)} inputs' pieces>)"


def _worker_shuffles():
    """The worker's shuffle service, or None outside a worker (the graph runs in this process)."""
    try:
        return get_worker().shuffles
    except ValueError:
        return None


def transfer(part: Any, shuffle_id: str, i: int, n_in: int, n_out: int, out: str, split: Callable,
             grid: tuple | None = None) -> Any:
    """Split input ``i`` into pieces (``n_out`` of them, or ``{output: piece}`` for the outputs
    it reaches) and send each to its output's worker; the run number the pieces went under
    (outside a worker: the pieces, ``HeldHere``)."""
    service = _worker_shuffles()
    if service is None:
        return HeldHere(dict(checked_pieces(split(part, n_out), n_out)))
    return service.transfer(shuffle_id, i, n_in, n_out, out, split(part, n_out), grid)


def barrier(shuffle_id: str, n_in: int, n_out: int, out: str, *runs: Any, grid: tuple | None = None) -> Any:
    """Every transfer is done: the run they all sent under, if it is still current (outside
    a worker: every input's pieces)."""
    if runs and isinstance(runs[0], HeldHere):
        return HeldHere([held.inputs for held in runs])
    return _worker_shuffles().barrier(shuffle_id, n_in, n_out, out, runs, grid)


def unpack(run: Any, shuffle_id: str, j: int, n_pieces: int, combine: Callable) -> Any:
    """Output ``j``: its ``n_pieces`` pieces, in input order, read back here and combined."""
    if isinstance(run, HeldHere):
        pieces = [held[j] for held in run.inputs if j in held]
        if len(pieces) != n_pieces:
            raise RuntimeError(f"shuffle {shuffle_id}: output {j} has {len(pieces)} of its {n_pieces} pieces")
        return combine(pieces)
    return combine(_worker_shuffles().take(shuffle_id, run, j, n_pieces))


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
