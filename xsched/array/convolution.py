"""``convolve`` and ``correlate`` of 1-d arrays: each output block from the input cells that
reach it.

Cell ``k`` of the full convolution of ``a`` (length ``n``) with ``v`` (length ``m``) adds up
``a[i] * v[k - i]`` for the ``i`` from ``k - m + 1`` to ``k``. So output block ``[s, e)``
needs ``a[s - m + 1 : e]`` and ``v`` whole: one ``convolve`` task per output block takes the
blocks of ``a`` holding that stretch, and NumPy's ``convolve`` of it with ``v``, cut to the
block, is the answer. The longer array is cut into the output's blocks (as NumPy swaps the
two); the shorter, ``v``, goes whole to every task (rechunked to one block when it is an
xsched array, so it may be lazy too). ``"same"`` and ``"valid"`` are stretches of the full
result, computed alone::

    convolve-<t>-j   np.convolve(a's cells s-m+1..e-1, v)[the cells of block j]

``correlate(a, v)`` is ``convolve(a, v[::-1].conj())``, as in NumPy.

>>> import numpy as np, xsched.array as xa
>>> x = xa.from_array(np.arange(6.0), chunks=2)
>>> xa.convolve(x, [1.0, 1.0]).compute().tolist()
[0.0, 1.0, 3.0, 5.0, 7.0, 9.0, 5.0]
>>> np.correlate(x, [1.0, 0.0, -1.0]).compute().tolist()
[-2.0, -2.0, -2.0, -2.0]
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..graph.layers import LayeredGraph, annotations_in_force, chunk_key, new_token, per_task
from ..graph.spec import Ref, Task
from . import joins
from .chunks import _starts
from .core import Array
from .creation import asarray
from .masking import known_chunks_needed

__all__ = ["convolve", "correlate"]

MODES = ("full", "same", "valid")


def _convolved(blocks: list, first: int, lo: int, hi: int, kernel: np.ndarray, start: int,
               stop: int) -> np.ndarray:
    """Cells ``start..stop`` of the full convolution, from ``a``'s cells ``lo..hi`` (in
    ``blocks``, the first starting at cell ``first``) and the whole kernel."""
    piece = (joins.concatenate(blocks) if len(blocks) > 1 else blocks[0])[lo - first:hi - first]
    return np.convolve(piece, kernel)[start - lo:stop - lo]


def _operands(a: Any, v: Any, op: str) -> tuple[Array, Array]:
    a, v = asarray(a), asarray(v)
    if a.ndim != 1 or v.ndim != 1:
        raise ValueError(f"{op}: a and v must be 1-d arrays; their shapes are {a.shape} and {v.shape}")
    for name, x in (("a", a), ("v", v)):
        known_chunks_needed(x, op)
        if x.shape[0] == 0:
            raise ValueError(f"{op}: {name} cannot be empty")
    return (a, v) if a.shape[0] >= v.shape[0] else (v, a)


def _stretch(mode: str, n: int, m: int, op: str) -> tuple[int, int]:
    """The cells of the full result (length ``n + m - 1``, ``n >= m``) that ``mode`` keeps."""
    if mode not in MODES:
        raise ValueError(f"{op}: mode must be one of 'valid', 'same', or 'full' (got {mode!r})")
    if mode == "full":
        return 0, n + m - 1
    if mode == "same":
        return (m - 1) // 2, (m - 1) // 2 + n
    return m - 1, n


def _convolution(a: Array, v: Array, mode: str, op: str, start_same: int | None = None) -> Array:
    """Cells of the full convolution of ``a`` and ``v`` (``a`` the longer) that ``mode``
    keeps, ``"same"`` starting at ``start_same`` when given (see ``correlate``)."""
    n, m = a.shape[0], v.shape[0]
    start, stop = _stretch(mode, n, m, op)
    if mode == "same" and start_same is not None:
        start, stop = start_same, start_same + n
    dtype = np.convolve(np.ones(1, a.dtype), np.ones(1, v.dtype)).dtype
    v = v.rechunk(-1)
    kernel = Ref(chunk_key(v.name, (0,)))
    size = max(max(a.chunks[0]), 1)
    edges = [*range(start, stop, size), stop]
    starts = _starts(a.chunks[0])
    token = new_token(op, a.name, v.name, start, stop)
    name = f"{op}-{token}"
    ann = annotations_in_force()
    layer = {}
    for j, (s, e) in enumerate(zip(edges, edges[1:])):
        lo, hi = max(0, s - m + 1), min(n, e)
        held = [b for b in range(len(a.chunks[0])) if starts[b] < hi and starts[b + 1] > lo]
        layer[chunk_key(name, (j,))] = Task(
            _convolved, ([Ref(chunk_key(a.name, (b,))) for b in held], starts[held[0]], lo, hi, kernel, s, e), {},
            per_task(ann))
    chunks = (tuple(e - s for s, e in zip(edges, edges[1:])),)
    return Array(LayeredGraph.merge(a._graph, v._graph, new={name: layer}), name, chunks, dtype)


def convolve(a: Any, v: Any, mode: str = "full") -> Array:
    """The discrete convolution of two 1-d arrays, as ``numpy.convolve``: ``mode`` ``"full"``
    (length ``n + m - 1``), ``"same"`` (the longer one's length, centred) or ``"valid"``
    (where they overlap whole). The longer array's blocks set the output's; the other is sent
    whole to every task (see the module docstring).

    >>> import numpy as np, xsched.array as xa
    >>> x = xa.from_array(np.array([0.0, 0.0, 3.0, 0.0, 0.0]), chunks=2)
    >>> xa.convolve(x, [1.0, 2.0, 1.0], mode="same").compute().tolist()
    [0.0, 3.0, 6.0, 3.0, 0.0]
    """
    a, v = _operands(a, v, "convolve")
    return _convolution(a, v, mode, "convolve")


def correlate(a: Any, v: Any, mode: str = "valid") -> Array:
    """The cross-correlation of two 1-d arrays, ``convolve(a, v[::-1].conj(), mode)``, as
    ``numpy.correlate`` (``mode`` ``"valid"`` by default, as NumPy's).

    >>> import numpy as np, xsched.array as xa
    >>> xa.correlate(xa.from_array(np.array([1.0, 2.0, 3.0]), chunks=2), [0.0, 1.0, 0.5], "same").compute().tolist()
    [2.0, 3.5, 3.0]
    """
    a, v = asarray(a), asarray(v)
    short = a.shape[0] if a.ndim == 1 and v.ndim == 1 and a.shape[0] < v.shape[0] else None
    long_, kernel = _operands(a, v[::-1].conj() if v.ndim == 1 else v, "correlate")
    # (NumPy correlates a shorter a by swapping and reversing: its "same" then starts half a
    # cell later, n // 2 rather than (n - 1) // 2)
    return _convolution(long_, kernel, mode, "correlate", None if short is None else short // 2)
