"""An all-to-all exchange between partitions as tasks: the shuffle dataframes and bags share.

Every input partition is *split* into ``n_out`` pieces by a function of the caller's (a hash
of a column, a range of sorted values); output partition ``j`` *combines* piece ``j`` of
every input. Three layers::

    split-<t>-i      split(part_i) -> list of n_out pieces            (one per input)
    pick-<t>-i.j     piece j of split i                               (n_in x n_out, tiny)
    combine-<t>-j    combine([pick-<t>-0.j, pick-<t>-1.j, ...])       (one per output)

Why the ``pick`` layer: without it every combine task would need the whole split output
of every input, and each worker would receive every piece of the data. With it a piece
travels only to the worker that combines it, and a split output is released as soon as
its last piece has been picked. Memory per worker then stays near the input partitions it
holds plus the pieces it receives; workers spill what does not fit, as for any task.

For very many partitions the ``n_in x n_out`` picks grow quadratically; ``stages`` > 1
exchanges in rounds over a ``k x k x ...`` grid of groups (``k = ceil(n ** (1/stages))``),
so each round has ``n x k`` picks (dask's task shuffle does the same).

>>> from xsched.graph.local import get
>>> from xsched.graph.spec import Task
>>> parts = {f"in-{i}": Task(list, (range(i * 5, i * 5 + 5),)) for i in range(3)}
>>> def split(values, n): return [[v for v in values if v % n == j] for j in range(n)]
>>> def combine(pieces): return sorted(v for p in pieces for v in p)
>>> layers, keys = shuffle_layers([f"in-{i}" for i in range(3)], 2, split, combine, "demo")
>>> graph = dict(parts); [graph.update(layer) for layer in layers.values()]  # doctest: +ELLIPSIS
[...]
>>> get(graph, keys)
[[0, 2, 4, 6, 8, 10, 12, 14], [1, 3, 5, 7, 9, 11, 13]]
"""

from __future__ import annotations

import math
from typing import Any, Callable, Sequence

from .layers import annotations_in_force, per_task
from .spec import Ref, Task

__all__ = ["shuffle_layers", "pick"]


def pick(pieces: Sequence[Any], j: int) -> Any:
    """Piece ``j`` of a split output (a task of its own, so pieces travel apart)."""
    return pieces[j]


def _split_stage(parts: list, first: int, step: int, split: Callable, n_out: int, k: int,
                 stage: int) -> list:
    """Split the lane's input partitions (numbers ``first, first + step, ...``) into pieces
    tagged ``(output, input, piece)``, grouped by the ``stage``-th base-``k`` digit of the
    output partition number."""
    groups: list[list] = [[] for _ in range(k)]
    for n, part in enumerate(parts):
        for j, piece in enumerate(split(part, n_out)):
            groups[(j // k ** stage) % k].append((j, first + n * step, piece))
    return groups


def _regroup(groups: list[list[tuple]]) -> list[tuple]:
    return [item for group in groups for item in group]


def _split_tagged(items: list[tuple], k: int, stage: int) -> list[list]:
    groups: list[list] = [[] for _ in range(k)]
    for item in items:
        groups[(item[0] // k ** stage) % k].append(item)
    return groups


def _final(items: list[tuple], j: int, combine: Callable) -> Any:
    """Output ``j``: its pieces in input order, as the one-round exchange gives them."""
    return combine([piece for _, _, piece in sorted((it for it in items if it[0] == j),
                                                    key=lambda it: it[1])])


def shuffle_layers(in_keys: Sequence[str], n_out: int, split: Callable, combine: Callable,
                   token: str, stages: int = 1) -> tuple[dict[str, dict], list[str]]:
    """Layers of tasks moving piece ``j`` of every input partition to output ``j``.

    ``split(part, n_out)`` returns ``n_out`` pieces; ``combine(pieces)`` merges the pieces of
    one output in input order. Returns ``({layer name: tasks}, output keys)``; annotations in
    force (``xsched.annotate``) go on every task.
    """
    n_in = len(in_keys)
    if n_out < 1:
        raise ValueError(f"a shuffle needs at least one output partition, got npartitions={n_out}")
    ann = annotations_in_force()
    if stages <= 1 or n_out <= 2:
        split_name, pick_name, out_name = f"split-{token}", f"pick-{token}", f"combine-{token}"
        splits = {f"{split_name}-{i}": Task(split, (Ref(k), n_out), {}, per_task(ann))
                  for i, k in enumerate(in_keys)}
        picks = {f"{pick_name}-{i}.{j}": Task(pick, (Ref(f"{split_name}-{i}"), j), {}, per_task(ann))
                 for i in range(n_in) for j in range(n_out)}
        outs = {f"{out_name}-{j}": Task(combine, ([Ref(f"{pick_name}-{i}.{j}") for i in range(n_in)],),
                                        {}, per_task(ann))
                for j in range(n_out)}
        return {split_name: splits, pick_name: picks, out_name: outs}, list(outs)
    return _staged(in_keys, n_out, split, combine, token, stages, ann)


def _staged(in_keys: Sequence[str], n_out: int, split: Callable, combine: Callable, token: str,
            stages: int, ann: dict) -> tuple[dict[str, dict], list[str]]:
    """The exchange in ``stages`` rounds over ``k``-ary digits of the output number.

    The data of the ``n_in`` inputs is first split to ``n_out`` tagged pieces and regrouped
    into ``width = k ** stages`` lanes; round ``s`` moves every piece to the lane whose
    ``s``-th digit matches its target's, exchanging among ``k`` lanes at a time.
    """
    k = max(2, math.ceil(n_out ** (1 / stages)))
    width = k ** stages
    layers: dict[str, dict] = {}
    # round 0's inputs: lane i holds input partitions i, i + width, ... (none beyond n_in)
    lanes: list = [[Ref(key) for key in in_keys[lane::width]] for lane in range(width)]
    first = True
    for stage in range(stages):
        split_name, pick_name, join_name = (f"split{stage}-{token}", f"pick{stage}-{token}",
                                            f"join{stage}-{token}")
        splits, picks, joins = {}, {}, {}
        for lane in range(width):
            src = lanes[lane]
            if first:
                splits[f"{split_name}-{lane}"] = Task(_split_stage, (src, lane, width, split, n_out, k, stage), {},
                                                      per_task(ann))
            else:
                splits[f"{split_name}-{lane}"] = Task(_split_tagged, (src, k, stage), {}, per_task(ann))
        for lane in range(width):
            digit = (lane // k ** stage) % k
            base = lane - digit * k ** stage
            sources = [base + d * k ** stage for d in range(k)]
            for src_lane in sources:
                picks[f"{pick_name}-{src_lane}.{lane}"] = Task(
                    pick, (Ref(f"{split_name}-{src_lane}"), digit), {}, per_task(ann))
            joins[f"{join_name}-{lane}"] = Task(
                _regroup, ([Ref(f"{pick_name}-{s}.{lane}") for s in sources],), {}, per_task(ann))
        layers.update({split_name: splits, pick_name: picks, join_name: joins})
        lanes = [Ref(f"{join_name}-{lane}") for lane in range(width)]
        first = False
    out_name = f"combine-{token}"
    # after the last round lane j holds exactly the pieces whose every digit is j's
    outs = {f"{out_name}-{j}": Task(_final, (lanes[j], j, combine), {}, per_task(ann))
            for j in range(n_out)}
    layers[out_name] = outs
    return layers, list(outs)
