"""Boolean masks: ``x[x > 5]``, whose blocks' lengths are known only once they are computed.

``x[mask]`` with a boolean array of ``x``'s shape keeps, block by block, the elements where
the mask is true, in C order (arrays of several dimensions are raveled first, as NumPy
does); a mask of ``x``'s leading axes (``x[x[:, 0] > 0]``: rows) keeps the sub-arrays where
it is true, along one first axis. How many each block keeps depends on the data, so the result's chunks are unknown
(``nan``) until computed: ``compute()``, reductions (``sum``, ``mean``, ``max``...) and
element-wise arithmetic work as they are; what needs the lengths (slicing, ``rechunk``,
``len``) says so and points at ``compute_chunk_sizes()``, which computes only the lengths::

    x, mask (same shape) --ravel both, mask rechunked to x's blocks-->
    masked-<token>-i  = block_i(x)[block_i(mask)]     one task per block, chunks (nan, ...)
    x, mask of its first k axes --(k > 1: those axes joined into one, the mask raveled)-->
    masked-<token>-i.j... = block_i.j...(x)[block_i(mask)]   chunks ((nan, ...), the rest)
    compute_chunk_sizes(): len(masked-i) per block -> the same array with known chunks

>>> import numpy as np, xsched.array as xa
>>> x = xa.from_array(np.arange(10), chunks=4)
>>> big = x[x > 5]
>>> big.chunks, big.compute().tolist(), int(big.sum().compute())
(((nan, nan, nan),), [6, 7, 8, 9], 30)
>>> big.compute_chunk_sizes().chunks
((0, 2, 2),)
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..graph.collection import compute_collection
from ..graph.layers import LayeredGraph, annotations_in_force, chunk_key, new_token, per_task
from ..graph.spec import Ref, Task

__all__ = ["boolean_mask", "mask_along", "compute_chunk_sizes", "elementwise_chunks", "has_unknown_chunks",
           "known_chunks_needed", "known_axis_needed", "same_lengths", "cut_alike"]


def has_unknown_chunks(x: Any) -> bool:
    """Whether some block length of ``x`` is unknown (``nan``, after a boolean mask)."""
    return any(c != c for axis in x.chunks for c in axis)


def same_lengths(a: Any, b: Any) -> bool:
    """Whether two sequences of lengths agree, an unknown one (``nan``) matching an unknown.

    >>> same_lengths((2, float("nan")), (2, float("nan"))), same_lengths((2,), (3,))
    (True, False)
    """
    return len(a) == len(b) and all(p == q or (p != p and q != q) for p, q in zip(a, b))


def cut_alike(chunks: Any, other: Any) -> bool:
    """Whether two arrays' blocks line up: as many per axis, of equal lengths, or both
    unknown (as those of an array and a mask made from it)."""
    return len(chunks) == len(other) and all(same_lengths(a, b) for a, b in zip(chunks, other))


def known_chunks_needed(x: Any, what: str) -> None:
    """Raise, naming ``what`` and the way out, when ``x`` has blocks of unknown length."""
    if has_unknown_chunks(x):
        raise ValueError(f"{what} needs the lengths of the array's blocks, which a boolean mask left unknown; "
                         "call x = x.compute_chunk_sizes() first (it computes only the lengths)")


def known_axis_needed(x: Any, axis: int, what: str, otherwise: str = "") -> None:
    """Raise, naming ``what``, the axis and the ways out (``otherwise``: one more), when
    ``x``'s blocks along ``axis`` have unknown lengths (the other axes may: ``r[:, 2]`` of a
    masked ``r`` is fine)."""
    if any(c != c for c in x.chunks[axis]):
        raise ValueError(f"{what} along axis {axis} needs the lengths of the array's blocks there, which a "
                         f"boolean mask left unknown; {otherwise + ', or ' if otherwise else ''}call "
                         "x = x.compute_chunk_sizes() first (it computes only the lengths)")


def elementwise_chunks(what: str, args: tuple, array_type: type) -> tuple:
    """(chunks, args) of an element-wise operation on operands of which some xsched arrays
    (``array_type``) have blocks of unknown length. Along an axis of unknown lengths, every
    operand longer than 1 there must have exactly those blocks (the same mask's result);
    along a known axis they broadcast as NumPy's do, the xsched arrays rechunked alike (to
    the blocks of the first with unknown lengths elsewhere, which keeps its own).

    >>> import numpy as np, xsched.array as xa
    >>> x = xa.from_array(np.arange(12).reshape(4, 3), chunks=2)
    >>> r = x[x[:, 0] > 2]
    >>> (r * np.array([1, 0, -1])).compute().tolist()
    [[3, 0, -5], [6, 0, -8], [9, 0, -11]]
    """
    shapes = [a.shape if isinstance(a, array_type) else np.shape(a) for a in args]
    ndim = max(len(s) for s in shapes)
    # the arrays with unknown lengths first, so that a known axis takes their blocks
    order = sorted(range(len(args)), key=lambda k: not (isinstance(args[k], array_type)
                                                        and has_unknown_chunks(args[k])))
    out: list = []
    for ax in range(ndim):
        spans = []  # (shape, length, blocks or None) of the operands longer than 1 on this axis
        for k in order:
            a, s = args[k], shapes[k]
            at = ax - ndim + len(s)
            if at >= 0 and s[at] != 1:
                spans.append((s, s[at], a.chunks[at] if isinstance(a, array_type) else None))
        unknown = next((c for _, _, c in spans if c is not None and any(n != n for n in c)), None)
        if unknown is not None:
            wrong = next((s for s, _, c in spans if c != unknown), None)
            if wrong is not None:
                raise ValueError(f"{what}: an array with blocks of unknown length (from a boolean mask) along axis "
                                 f"{ax} can only be combined with arrays of the same blocks there or of length "
                                 f"1, not shape {wrong}; call compute_chunk_sizes() on it first")
            out.append(unknown)
            continue
        lengths = sorted({n for _, n, _ in spans})
        if len(lengths) > 1:
            raise ValueError(f"{what}: shapes {shapes} do not broadcast together (axis {ax}: lengths {lengths})")
        blocks = next((c for _, _, c in spans if c is not None), None)
        out.append(blocks if blocks is not None else (lengths[0] if lengths else 1,))
    cut = []
    for a in args:
        if isinstance(a, array_type):
            want = {ax: out[ax + ndim - a.ndim] for ax in range(a.ndim)
                    if a.shape[ax] != 1 and a.chunks[ax] != out[ax + ndim - a.ndim]}
            a = a.rechunk(want) if want else a
        cut.append(a)
    return tuple(out), tuple(cut)


def _masked(block: np.ndarray, mask: np.ndarray) -> np.ndarray:
    return block[mask]


def boolean_mask(x: Any, mask: Any) -> Any:
    """``x[mask]``: the elements of the array ``x`` where ``mask`` (a boolean array of ``x``'s
    shape and blocks, which ``x[...]`` makes of a NumPy mask) is true, as a 1-d array in C
    order with blocks of unknown length.

    >>> import numpy as np, xsched.array as xa
    >>> x = xa.from_array(np.arange(6).reshape(2, 3), chunks=(1, 2))
    >>> x[x % 2 == 0].compute().tolist()
    [0, 2, 4]
    """
    if mask.dtype != np.bool_:
        raise TypeError(f"a boolean mask must have dtype bool, not {mask.dtype}; compare first, e.g. x[x > 0]")
    # a 1-d mask with exactly the blocks of x's first axis (the same mask's results: r[r[:, 1] > 2])
    # is applied block by block even when their lengths are unknown
    alike = mask.ndim == 1 and x.ndim >= 1 and mask.chunks[0] == x.chunks[0]
    if not alike:
        known_chunks_needed(x, "a boolean mask")
    if mask.ndim == 0:  # (NumPy's x[True] / x[False]: a new first axis of length 1 or 0, unknown until computed)
        return boolean_mask(x[None], mask[None])
    if not alike and (not 0 < mask.ndim <= x.ndim or tuple(mask.shape) != tuple(x.shape[:mask.ndim])):
        raise IndexError(f"a boolean mask of shape {tuple(mask.shape)} cannot index an array of shape "
                         f"{tuple(x.shape)}: the shapes must be equal, or the mask's those of the "
                         "array's first axes (x[x[:, 0] > 0] picks rows)")
    if not alike:
        known_chunks_needed(mask, "a boolean mask")
    if mask.ndim < x.ndim:
        return _mask_leading(x, mask)
    if x.ndim != 1:
        x, mask = x.ravel(), mask.ravel()
    if mask.chunks != x.chunks:
        mask = mask.rechunk(x.chunks)
    name = f"masked-{new_token(x.name, mask.name)}"
    ann = annotations_in_force()
    layer = {chunk_key(name, (i,)): Task(_masked, (Ref(chunk_key(x.name, (i,))), Ref(chunk_key(mask.name, (i,)))),
                                         {}, per_task(ann))
             for i in range(len(x.chunks[0]))}
    graph = LayeredGraph.merge(x._graph, mask._graph, new={name: layer})
    return type(x)(graph, name, ((math.nan,) * len(x.chunks[0]),), x.dtype)  # (core.py imports this module)


def _mask_leading(x: Any, mask: Any) -> Any:
    """``x[mask]`` for a mask of ``x``'s first axes: the sub-arrays where it is true, along a
    first axis of unknown length, the other axes as they were.

    >>> import numpy as np, xsched.array as xa
    >>> x = xa.from_array(np.arange(12).reshape(4, 3), chunks=(2, 2))
    >>> rows = x[x[:, 0] > 2]
    >>> rows.chunks, rows.compute().tolist()
    (((nan, nan), (2, 1)), [[3, 4, 5], [6, 7, 8], [9, 10, 11]])
    """
    if mask.ndim > 1:  # as NumPy: the masked axes become one
        x, mask = x.reshape((-1,) + tuple(x.shape[mask.ndim:])), mask.ravel()
    return mask_along(x, mask, 0)


def _compress(block: np.ndarray, mask: np.ndarray, axis: int) -> np.ndarray:
    if len(mask) != block.shape[axis]:  # (np.compress would cut the block to the mask's length)
        raise ValueError(f"a boolean mask block of {len(mask)} values against an array block of {block.shape[axis]} "
                         f"along axis {axis}: their blocks of unknown length came from different masks; call "
                         "compute_chunk_sizes() on both first")
    return np.compress(mask, block, axis=axis)


def mask_along(x: Any, mask: Any, axis: int) -> Any:
    """``x[..., mask, ...]``: the elements along ``axis`` where the 1-d boolean ``mask`` (an
    xsched array of that axis's length) is true; that axis's blocks become of unknown length.

    >>> import numpy as np, xsched.array as xa
    >>> x = xa.from_array(np.arange(12).reshape(3, 4), chunks=2)
    >>> x[:, x[0] % 2 == 1].compute().tolist()
    [[1, 3], [5, 7], [9, 11]]
    """
    alike = mask.ndim == 1 and mask.chunks[0] == x.chunks[axis]  # (the same blocks, known or not)
    if not alike:
        known_axis_needed(x, axis, "a boolean mask")
        known_chunks_needed(mask, "a boolean mask")
    if mask.dtype != np.bool_ or mask.ndim != 1 or not (alike or mask.shape[0] == x.shape[axis]):
        raise IndexError(f"a boolean index along axis {axis} must be one-dimensional with the axis's length "
                         f"{x.shape[axis]} and dtype bool, not shape {tuple(mask.shape)} of {mask.dtype}")
    if mask.chunks[0] != x.chunks[axis]:
        mask = mask.rechunk((x.chunks[axis],))
    name = f"masked-{new_token(x.name, mask.name, axis)}"
    ann = annotations_in_force()
    layer = {chunk_key(name, index): Task(_compress, (Ref(chunk_key(x.name, index)),
                                                      Ref(chunk_key(mask.name, (index[axis],))), axis), {},
                                         per_task(ann))
             for index in np.ndindex(*x.numblocks)}
    graph = LayeredGraph.merge(x._graph, mask._graph, new={name: layer})
    chunks = x.chunks[:axis] + ((math.nan,) * len(x.chunks[axis]),) + x.chunks[axis + 1:]
    return type(x)(graph, name, chunks, x.dtype)


def _shape(block: np.ndarray) -> tuple:
    return block.shape


def compute_chunk_sizes(x: Any) -> Any:
    """Fills in ``x``'s unknown block lengths, in place, and returns ``x``: computes each
    block's shape only (the blocks themselves are computed for that, but not gathered).
    In place, as a dask user expects: ``y.compute_chunk_sizes()`` on a line of its own
    makes ``y`` usable where lengths are needed. The graph and the keys stay as they were,
    so nothing else holding ``x`` sees other values.

    >>> import numpy as np, xsched.array as xa
    >>> x = xa.from_array(np.arange(8), chunks=3)
    >>> y = x[x < 4]
    >>> y.chunks
    ((nan, nan, nan),)
    >>> _ = y.compute_chunk_sizes()
    >>> y.chunks
    ((3, 1, 0),)
    """
    if not has_unknown_chunks(x):
        return x
    blocks = [chunk_key(x.name, index) for index in np.ndindex(*x.numblocks)]
    name = f"chunk-shapes-{new_token(x.name)}"
    layer = {f"{name}-{i}": Task(_shape, (Ref(k),), {}) for i, k in enumerate(blocks)}
    graph = LayeredGraph.merge(x._graph, new={name: layer})
    shapes = compute_collection(_Shapes(graph, list(layer)))
    grid = dict(zip(np.ndindex(*x.numblocks), shapes))
    chunks = tuple(tuple(grid[tuple(0 if a != ax else i for a in range(x.ndim))][ax] for i in range(n))
                   for ax, n in enumerate(x.numblocks))
    x.chunks = chunks
    return x


class _Shapes:
    """The shapes of some blocks, as a collection to compute."""

    def __init__(self, graph: Any, keys: list) -> None:
        self.graph, self.keys = graph, keys

    def __xsched_graph__(self) -> Any:
        return self.graph

    def __xsched_keys__(self) -> list:
        return self.keys

    def __xsched_postcompute__(self) -> tuple:
        return list, ()
