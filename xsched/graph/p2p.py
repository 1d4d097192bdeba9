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

from typing import Any, Callable, Sequence

from .. import config
from ..client.default import default_client  # (a registry only: no network code)
from ..task_context import get_worker
from .layers import annotations_in_force, per_task
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


def output_keys(out: str, n_out: int) -> list[str]:
    """The keys of the outputs, ``<out>-0`` ... ``<out>-<n_out - 1>``."""
    return [f"{out}-{j}" for j in range(n_out)]


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
            "(xsched.config.set({'shuffle.method': 'tasks'}))") from None
    return worker.shuffles


def transfer(part: Any, shuffle_id: str, i: int, n_in: int, n_out: int, out: str, split: Callable) -> int:
    """Split input ``i`` into ``n_out`` pieces and send each to its output's worker; the run
    number the pieces went under."""
    return _service().transfer(shuffle_id, i, n_in, n_out, out, split(part, n_out))


def barrier(shuffle_id: str, n_in: int, n_out: int, out: str, *runs: int) -> int:
    """Every transfer is done: the run they all sent under, if it is still current."""
    return _service().barrier(shuffle_id, n_in, n_out, out, runs)


def unpack(run: int, shuffle_id: str, j: int, n_in: int, combine: Callable) -> Any:
    """Output ``j``: its pieces, in input order, read back here and combined."""
    return combine(_service().take(shuffle_id, run, j, n_in))


def p2p_layers(in_keys: Sequence[str], n_out: int, split: Callable | Sequence[Callable], combine: Callable,
               shuffle_id: str,
               out: str) -> tuple[dict[str, dict], list[str]]:
    """Layers of tasks moving piece ``j`` of every input partition to output ``j``, worker to
    worker: ``({layer name: tasks}, output keys)``, like ``shuffle_layers``.

    ``split(part, n_out)`` returns ``n_out`` pieces (each picklable), or ``split`` is a list
    of such functions, one per input (a join exchanges both its sides at once, each split
    its own way); ``combine(pieces)`` gets one output's ``n_in`` pieces in input order.
    ``shuffle_id`` names the exchange (a token unique to its inputs and split); outputs are
    keyed ``<out>-j``.
    """
    n_in = len(in_keys)
    if n_out < 1:
        raise ValueError(f"a shuffle needs at least one output partition, got npartitions={n_out}")
    if n_in < 1:
        raise ValueError("a shuffle needs at least one input partition")
    splits = list(split) if isinstance(split, (list, tuple)) else [split] * n_in
    if len(splits) != n_in:
        raise ValueError(f"{len(splits)} split functions for {n_in} input partitions")
    ann = annotations_in_force()
    transfers = {transfer_key(shuffle_id, i): Task(transfer, (Ref(k), shuffle_id, i, n_in, n_out, out, splits[i]),
                                                   {}, per_task(ann))
                 for i, k in enumerate(in_keys)}
    bkey = barrier_key(shuffle_id)
    barriers = {bkey: Task(barrier, (shuffle_id, n_in, n_out, out, *(Ref(k) for k in transfers)), {},
                           per_task(ann))}
    outs = {key: Task(unpack, (Ref(bkey), shuffle_id, j, n_in, combine), {}, {**per_task(ann), "shuffle": shuffle_id})
            for j, key in enumerate(output_keys(out, n_out))}
    return {f"shuffle-transfer-{shuffle_id}": transfers, bkey: barriers, out: outs}, list(outs)
