"""Plans for cutting partitions anew without a shuffle: which pieces of which old partitions
make each new one. Dataframes and bags share them; each cuts and joins its own partitions.

A plan is a list, one entry per new partition, of ``(old partition, piece, pieces)``: the
``piece``-th of ``pieces`` even cuts of an old partition by position, joined in order.

>>> plan_by_count(3, 2)
[[(0, 0, 1)], [(1, 0, 1), (2, 0, 1)]]
>>> plan_by_count(2, 3)
[[(0, 0, 2)], [(0, 1, 2)], [(1, 0, 1)]]
"""

from __future__ import annotations

import math
from typing import Sequence

__all__ = ["plan_by_count", "plan_by_size"]


def plan_by_count(n_in: int, n_out: int) -> list:
    """``n_out`` partitions from ``n_in``: neighbours joined (fewer, as even in count as can
    be) or each cut into even pieces (more; the first ones one piece more)."""
    if n_out <= n_in:
        bounds = [j * n_in // n_out for j in range(n_out + 1)]
        return [[(i, 0, 1) for i in range(bounds[j], bounds[j + 1])] for j in range(n_out)]
    per = [n_out // n_in + (1 if i < n_out % n_in else 0) for i in range(n_in)]
    return [[(i, p, pieces)] for i, pieces in enumerate(per) for p in range(pieces)]


def plan_by_size(sizes: Sequence[int], limit: int) -> tuple[list, bool]:
    """Which pieces of which partitions make each new one: a partition of ``size`` bytes is
    cut into ``ceil(size / limit)`` pieces, then neighbouring pieces join while their sum
    stays within ``limit``. Also whether any partition was cut.

    >>> plan_by_size([10, 10, 45, 5], 20)
    ([[(0, 0, 1), (1, 0, 1)], [(2, 0, 3)], [(2, 1, 3)], [(2, 2, 3), (3, 0, 1)]], True)
    """
    plan: list[list] = []
    held = None  # bytes in the new partition being filled
    cut = False
    for i, size in enumerate(sizes):
        pieces = max(1, math.ceil(size / limit))
        cut = cut or pieces > 1
        for p in range(pieces):
            piece = size / pieces
            if held is not None and held + piece <= limit:
                plan[-1].append((i, p, pieces))
                held += piece
            else:
                plan.append([(i, p, pieces)])
                held = piece
    return plan, cut
