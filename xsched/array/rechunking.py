"""Rechunking: the same array cut into other blocks, with a bound on what one task holds.

Each output block is put together from the parts of the input blocks that overlap it. A
``rechunk-split`` task cuts one such *piece* out of one input block, so only the piece
travels to the task that needs it, never the whole block; a ``rechunk`` task copies its
pieces into a new block. A piece that is a whole input block is used as it is, and an
output block made of a single piece is cut straight from its input block.

Why sometimes two steps: when some axes merge blocks while others split them, as in
blocks of (1000, 1000) to blocks of (8000, 125), each output block needs a piece of several
input blocks *and* each input block is cut into several pieces, so the number of pieces is
a product over the axes (4,096 x 4,096 pieces for row blocks of one row to column blocks of
one column of a 4,096-square array). Going through an intermediate chunking that first
merges where the output merges, then splits where it splits, needs far fewer tasks, but
the intermediate blocks are larger than both the input's and the output's. A task holds
its inputs and its output at once, so one that assembles a block holds twice the block:
``plan_rechunk`` takes the intermediate with the fewest tasks whose blocks keep that under
the bound (config ``array.rechunk.memory``, default 256 MiB), and the direct route when
that is not at least twice as cheap. The input and output blocks themselves are the
caller's choice: no plan can make a task hold less than them.

Some rechunks tie the whole array together (rows of blocks to columns of blocks: every
output block needs a part of every input block), so the task route holds every piece at
once, spilled or not. On a cluster those go through one p2p exchange instead
(``graph/p2p.py``, ``_p2p_step``): each input block's task sends each output block's part to
that block's worker, which keeps it on disk past a buffer, and each output block is put
together there: n + 1 + m tasks and a block per thread in memory, whatever the chunkings.
``use_p2p`` chooses (``array.rechunk.method``).

This module sits below ``core.py`` (elementwise operations rechunk their operands through
``unify_chunks``), so, like ``reductions.py``, it makes arrays with ``type(x)``.

>>> import numpy as np, xsched.array as xa
>>> x = xa.from_array(np.arange(24).reshape(4, 6), chunks=(1, 6))
>>> y = x.rechunk((4, 2))
>>> y.chunks
((4,), (2, 2, 2))
>>> bool((y.compute() == np.arange(24).reshape(4, 6)).all())
True
"""

from __future__ import annotations

import bisect
import itertools
import math
import warnings
from collections.abc import Mapping
from functools import partial
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from .. import config
from ..graph.layers import LayeredGraph, annotations_in_force, chunk_key, new_token, per_task
from ..graph.p2p import p2p_layers, shuffle_method
from ..graph.spec import Ref, Task
from ..units import format_bytes, parse_bytes
from .chunks import AUTO_CHUNK_BYTES, Chunks, _axes_of, _starts, common_blocks, normalize_chunks
from . import joins

if TYPE_CHECKING:
    from .core import Array

__all__ = ["rechunk", "plan_rechunk", "unify_chunks", "joined", "PerformanceWarning", "DEFAULT_MEMORY"]

#: What one rechunking task may hold (its inputs and its output) when the config does not say.
DEFAULT_MEMORY = 256 * 2**20

#: Use an intermediate chunking only when it needs at most this fraction of the direct tasks.
TWO_STEP_GAIN = 0.5

#: Intermediate chunkings tried one by one up to this many; beyond, a greedy search.
EXHAUSTIVE = 20_000

Piece = tuple[int, int, int]  # (input block, start, stop) along one axis


# --------------------------------------------------------------------------- geometry


def overlaps(src: Sequence[int], dst: Sequence[int]) -> list[list[Piece]]:
    """For each block of ``dst`` along one axis, the parts of ``src`` blocks it covers.

    An empty ``dst`` block takes an empty part of the block where it sits.

    >>> overlaps((3, 3), (2, 4))
    [[(0, 0, 2)], [(0, 2, 3), (1, 0, 3)]]
    """
    src_starts, dst_starts = _starts(tuple(src)), _starts(tuple(dst))
    last = len(src) - 1
    out: list[list[Piece]] = []
    for j, size in enumerate(dst):
        lo, hi = dst_starts[j], dst_starts[j + 1]
        k = min(max(bisect.bisect_right(src_starts, lo) - 1, 0), last)
        if size == 0:
            at = min(lo - src_starts[k], src[k])
            out.append([(k, at, at)])
            continue
        pieces = []
        while k <= last and src_starts[k] < hi:
            s, e = src_starts[k], src_starts[k + 1]
            if e > s and e > lo:
                pieces.append((k, max(lo, s) - s, min(hi, e) - s))
            k += 1
        out.append(pieces)
    return out


def _axis_counts(src: tuple[int, ...], dst: tuple[int, ...]) -> tuple[int, int, int, int, int]:
    """Along one axis: pieces, pieces that are whole ``src`` blocks, ``dst`` blocks of one
    piece, those of one whole piece, and ``dst`` blocks."""
    pieces = whole = single = single_whole = 0
    for parts in overlaps(src, dst):
        w = sum(1 for k, lo, hi in parts if lo == 0 and hi == src[k])
        pieces, whole = pieces + len(parts), whole + w
        if len(parts) == 1:
            single, single_whole = single + 1, single_whole + w
    return pieces, whole, single, single_whole, len(dst)


def _tasks(counts: Sequence[tuple[int, int, int, int, int]]) -> int:
    """Tasks of one direct step, from ``_axis_counts`` per axis: an output block made of
    several pieces takes a task per piece that is not a whole input block, plus its own."""
    n, w, s, sw, d = (math.prod(c[i] for c in counts) for i in range(5))
    return (n - w) - (s - sw) + d


def _stage_tasks(src: Chunks, dst: Chunks) -> int:
    """Tasks of one direct step from blocks ``src`` to blocks ``dst``."""
    return _tasks([_axis_counts(s, d) for s, d in zip(src, dst)])


def _block_bytes(chunks: Chunks, itemsize: int) -> int:
    return math.prod(max(c) for c in chunks) * itemsize


def _between(fixed: list[int], optional: list[int], length: float) -> tuple[int, ...]:
    """Block sizes with every ``fixed`` boundary and as few ``optional`` ones as keep blocks
    within ``length`` (a block longer than that only where no optional boundary helps)."""
    cuts = [fixed[0]]
    options = sorted(set(optional) - set(fixed))
    for lo, hi in zip(fixed, fixed[1:]):
        inside = options[bisect.bisect_right(options, lo):bisect.bisect_left(options, hi)]
        cur, i = lo, 0
        while hi - cur > length and i < len(inside):
            reach = bisect.bisect_right(inside, cur + length, lo=i) - 1
            pick = inside[reach] if reach >= i else inside[i]
            cuts.append(pick)
            cur = pick
            i = bisect.bisect_right(inside, pick, lo=i)
        cuts.append(hi)
    return tuple(b - a for a, b in zip(cuts, cuts[1:])) or (0,)


def _levels(old: tuple[int, ...], new: tuple[int, ...]) -> list[tuple[int, ...]]:
    """Intermediate chunkings of one axis, finest first: from every boundary of both
    chunkings to only those of the side with fewer blocks (merging axes end at ``new``,
    splitting axes at ``old``)."""
    if old == new:
        return [old]
    b_old, b_new = _starts(old), _starts(new)
    fixed, optional = (b_new, b_old) if len(new) <= len(old) else (b_old, b_new)
    fixed = sorted(set(fixed))
    out: list[tuple[int, ...]] = []
    n = max(sum(old), 1)
    for k in range(int(math.log2(n)) + 2):
        level = _between(fixed, optional, 2 ** k)
        if not out or level != out[-1]:
            out.append(level)
    level = _between(fixed, optional, math.inf)
    if level != out[-1]:
        out.append(level)
    return out


def plan_rechunk(old: Chunks, new: Chunks, itemsize: int, limit: int) -> list[Chunks]:
    """The chunkings a rechunk from ``old`` to ``new`` passes through, ``new`` last.

    ``limit``: bytes one task may hold; an assembling task holds twice its block, so an
    intermediate chunking has blocks of at most ``limit / 2``.

    >>> plan_rechunk(((4,), (1,) * 4), ((1,) * 4, (4,)), 8, 10**6)
    [((4,), (4,)), ((1, 1, 1, 1), (4,))]
    >>> plan_rechunk(((4,), (1,) * 4), ((1,) * 4, (4,)), 8, 64)
    [((1, 1, 1, 1), (4,))]
    """
    old, new = tuple(map(tuple, old)), tuple(map(tuple, new))
    if old == new:
        return []
    if sum(o != n for o, n in zip(old, new)) < 2:  # pieces multiply only across two axes
        return [new]
    direct = _stage_tasks(old, new)
    levels = [_levels(o, n) for o, n in zip(old, new)]
    # per axis and level: the counts of the step into it and of the step out of it
    into = [[_axis_counts(o, m) for m in ms] for o, ms in zip(old, levels)]
    out_of = [[_axis_counts(m, n) for m in ms] for n, ms in zip(new, levels)]
    longest = [[max(m) for m in ms] for ms in levels]
    budget = limit // 2

    def cost(st: Sequence[int]) -> int:
        return (_tasks([into[a][i] for a, i in enumerate(st)])
                + _tasks([out_of[a][i] for a, i in enumerate(st)]))

    def fits(st: Sequence[int]) -> bool:
        return math.prod(longest[a][i] for a, i in enumerate(st)) * itemsize <= budget

    best: tuple[int, tuple[int, ...]] | None = None
    if math.prod(len(ms) for ms in levels) <= EXHAUSTIVE:
        for st in itertools.product(*[range(len(ms)) for ms in levels]):
            if fits(st):
                c = cost(st)
                if best is None or c < best[0]:
                    best = (c, st)
    else:  # too many combinations: from the coarsest, make the axis that costs least finer
        st = tuple(len(ms) - 1 for ms in levels)  # until it fits, then move one axis at a
        while not fits(st):                       # time while that pays
            st = min((st[:a] + (st[a] - 1,) + st[a + 1:] for a in range(len(st)) if st[a]),
                     key=cost)
        best = (cost(st), st)
        while True:
            trials = [st[:a] + (st[a] + d,) + st[a + 1:] for a in range(len(st))
                      for d in (-1, 1) if 0 <= st[a] + d < len(levels[a])]
            scored = [(cost(t), t) for t in trials if fits(t)]
            if not scored or min(scored)[0] >= best[0]:
                break
            best = min(scored)
            st = best[1]
    if best is None:
        return [new]
    mid = tuple(levels[a][i] for a, i in enumerate(best[1]))
    if mid in (old, new) or best[0] > TWO_STEP_GAIN * direct:
        return [new]
    return [mid, new]


# --------------------------------------------------------------------------- tasks


def _cut(block: np.ndarray, index: tuple) -> np.ndarray:
    """A piece of a block as an array of its own (a view would keep the block alive)."""
    out = block[index]
    return out.copy() if out.size < block.size else out


def _assemble(pieces: list, lengths: tuple[tuple[int, ...], ...]) -> np.ndarray:
    """Copy pieces, given in C order over a grid with ``lengths`` per axis, into one block;
    an axis of lengths ``(None,)`` (unknown, kept whole) is as long as the pieces are."""
    lengths = tuple((pieces[0].shape[a],) if n == (None,) else n for a, n in enumerate(lengths))
    out = joins.empty(tuple(sum(n) for n in lengths), pieces[0].dtype, pieces)
    starts = [_starts(n) for n in lengths]
    for piece, where in zip(pieces, itertools.product(*[range(len(n)) for n in lengths])):
        out[tuple(slice(s[i], s[i + 1]) for s, i in zip(starts, where))] = piece
    return out


def _step(x: Array, dst: Chunks, prefix: str, kept: Sequence[int] = ()) -> Array:
    """One direct regrouping of ``x`` into blocks ``dst`` (one layer, or two with pieces).
    The axes ``kept`` (of unknown lengths) keep their blocks whole, each where it was."""
    token = new_token("rechunk", x.name, dst)
    out_name, split_name = f"{prefix}-{token}", f"rechunk-split-{token}"
    ann = annotations_in_force()
    per_axis = [[[(i, 0, None)] for i in range(len(d))] if a in kept else overlaps(s, d)
                for a, (s, d) in enumerate(zip(x.chunks, dst))]
    out_layer: dict[str, Any] = {}
    split_layer: dict[str, Any] = {}
    for index in np.ndindex(*tuple(len(d) for d in dst)):
        parts = [per_axis[a][i] for a, i in enumerate(index)]
        combos = list(itertools.product(*parts))
        refs = []
        for n, combo in enumerate(combos):
            src = Ref(chunk_key(x.name, tuple(c[0] for c in combo)))
            whole = all(c[2] is None or (c[1] == 0 and c[2] == x.chunks[a][c[0]]) for a, c in enumerate(combo))
            cut = tuple(slice(c[1], c[2]) for c in combo)
            if len(combos) == 1:
                task = Task(_cut, (src, () if whole else cut), {}, per_task(ann))
                out_layer[chunk_key(out_name, index)] = task
            elif whole:
                refs.append(src)
            else:
                key = chunk_key(split_name, index + (n,))
                split_layer[key] = Task(_cut, (src, cut), {}, per_task(ann))
                refs.append(Ref(key))
        if len(combos) > 1:
            lengths = tuple(tuple(None if c[2] is None else c[2] - c[1] for c in p) for p in parts)
            out_layer[chunk_key(out_name, index)] = Task(_assemble, (refs, lengths), {},
                                                         per_task(ann))
    new = {split_name: split_layer, out_name: out_layer} if split_layer else {out_name: out_layer}
    return type(x)(LayeredGraph.merge(x._graph, new=new), out_name, dst, x.dtype)


def _split_block(block: np.ndarray, n_out: int, cuts: tuple, grid: tuple) -> dict:
    """The pieces of one input block, ``{output block (flat, C order): piece}``; ``cuts`` per
    axis: the ``(output block, start, stop)`` this block's part of each output spans.
    Views: the shuffle pickles each piece (a copy of its bytes) and drops the views."""
    out = {}
    for combo in itertools.product(*cuts):
        j = 0
        for (b, _, _), n in zip(combo, grid):
            j = j * n + b
        out[j] = block[tuple(slice(lo, hi) for _, lo, hi in combo)]
    return out


def _p2p_step(x: Array, dst: Chunks) -> Array:
    """``x`` regrouped into blocks ``dst`` by one p2p exchange: each input block's transfer
    sends the part of it every output block needs to that block's worker, where it waits on
    disk; each output block is put together from its parts (``graph/p2p.py``). Tasks: one
    per input block, one barrier, one per output block, whatever the two chunkings."""
    token = new_token("rechunk-p2p", x.name, dst)
    per_axis = [overlaps(s, d) for s, d in zip(x.chunks, dst)]
    inverse: list[list[list[tuple[int, int, int]]]] = []  # axis -> input block -> its cuts
    for a, parts in enumerate(per_axis):
        inv: list[list[tuple[int, int, int]]] = [[] for _ in x.chunks[a]]
        for j, pieces in enumerate(parts):
            for k, lo, hi in pieces:
                inv[k].append((j, lo, hi))
        inverse.append(inv)
    grid = tuple(len(d) for d in dst)
    in_keys, splits = [], []
    for index in np.ndindex(*tuple(len(c) for c in x.chunks)):
        in_keys.append(chunk_key(x.name, index))
        splits.append(partial(_split_block, cuts=tuple(tuple(inverse[a][k]) for a, k in enumerate(index)),
                              grid=grid))
    combines, counts = [], []
    for index in np.ndindex(*grid):
        parts = [per_axis[a][j] for a, j in enumerate(index)]
        combines.append(partial(_assemble, lengths=tuple(tuple(hi - lo for _, lo, hi in p) for p in parts)))
        counts.append(math.prod(len(p) for p in parts))
    out_name = f"rechunk-{token}"
    layers, _ = p2p_layers(in_keys, math.prod(grid), splits, combines, token, out_name, grid=grid, pieces=counts)
    return type(x)(LayeredGraph.merge(x._graph, new=layers), out_name, dst, x.dtype)


# --------------------------------------------------------------------------- API


def _target(x: Array, chunks: Any, limit: int | None = None) -> Chunks:
    """The blocks ``rechunk(chunks)`` asks for: the axes a dict does not name, and those
    given ``None`` (in a dict or a tuple, as dask's), keep their blocks; -1 is the whole axis.

    >>> import xsched.array as xa
    >>> x = xa.ones((10, 12), chunks=(3, 5))
    >>> _target(x, (None, 3)), _target(x, {0: None, 1: -1})
    (((3, 3, 3, 1), (3, 3, 3, 3)), ((3, 3, 3, 1), (12,)))
    """
    if isinstance(chunks, Mapping):  # the axes not named keep their blocks
        _axes_of(chunks, x.ndim)
        spec = []
        for a in range(x.ndim):
            spec.append(chunks.get(a, chunks.get(a - x.ndim, x.chunks[a])))
        chunks = tuple(spec)
    if isinstance(chunks, (tuple, list)) and len(chunks) == x.ndim:
        chunks = tuple(x.chunks[a] if c is None else c for a, c in enumerate(chunks))
    return normalize_chunks(chunks, x.shape, x.dtype, limit=limit)


def balanced(sizes: tuple[int, ...]) -> tuple[int, ...]:
    """Block sizes as even as they can be (differing by one at most), as many as ``sizes``,
    or one fewer when its smallest block is at most half its largest (a small leftover
    block is folded into the others): ``rechunk(balance=True)``, as in dask.

    >>> balanced((400, 400, 200)), balanced((3, 3, 3, 1)), balanced((5,))
    ((500, 500), (4, 3, 3), (5,))
    """
    n = len(sizes)
    if n < 2:
        return sizes
    if min(sizes) <= max(sizes) / 2:
        n -= 1
    total = sum(sizes)
    return tuple(total // n + (1 if i < total % n else 0) for i in range(n))


def whole_axes(x: "Array", axes: tuple[int, ...], name: str) -> "Array":
    """``x`` with each of ``axes`` in one chunk, for an operation (``name``) that needs every
    value along them at once (a median, a sort): rechunked here when every block that makes
    stays within ``array.rechunk.memory`` (what one rechunking task may hold); else the error
    says how big the blocks would be and how to make them smaller. Along axes whose lengths a
    boolean mask left unknown the bound cannot be known: the blocks are joined all the same
    (each holds a mask's share of one); axes to join of unknown lengths are refused.

    >>> import numpy as np, xsched.array as xa
    >>> whole_axes(xa.ones((4, 6), chunks=2), (1,), "median").chunks
    ((2, 2), (6,))
    """
    cut = {a: len(x.chunks[a]) for a in axes if len(x.chunks[a]) > 1}
    if not cut:
        return x
    shown = ", ".join(f"axis {a} in {n} chunks" for a, n in cut.items())
    if any(c != c for a in cut for c in x.chunks[a]):  # (NaN: after a boolean mask)
        fix = "x.compute_chunk_sizes().rechunk({" + ", ".join(f"{a}: -1" for a in cut) + "})"
        raise ValueError(f"{name}: needs each axis it works along in one chunk ({shown}), and the chunk sizes "
                         f"are unknown (after a boolean mask): {fix}")
    if any(c != c for a in range(x.ndim) for c in x.chunks[a]):  # (unknown lengths on other axes only: each
        return x.rechunk({a: -1 for a in cut})                    # block a mask's share of one, the bound unknown)
    block = x.dtype.itemsize * math.prod(x.shape[a] if a in axes else max(x.chunks[a], default=0)
                                         for a in range(x.ndim))
    limit = memory_limit()
    if block <= limit:
        return x.rechunk({a: -1 for a in cut})
    others = [a for a in range(x.ndim) if a not in axes]
    fix = ("x.rechunk({" + ", ".join([f"{a}: -1" for a in axes] + [f"{a}: <smaller>" for a in others]) + "})"
           if others else "a reduction over fewer axes")
    raise ValueError(f"{name}: needs each axis it works along in one chunk ({shown}); the blocks that makes would "
                     f"hold {format_bytes(block)} each, above array.rechunk.memory ({format_bytes(limit)}): "
                     f"{fix}, or raise that limit")


def memory_limit() -> int:
    """What one rechunking task may hold, in bytes (config ``array.rechunk.memory``).

    >>> import xsched.config as config
    >>> with config.set({"array.rechunk.memory": "64MiB"}):
    ...     memory_limit()
    67108864
    """
    return parse_bytes(config.get("array.rechunk.memory", DEFAULT_MEMORY))


def together_bytes(old: Chunks, new: Chunks, itemsize: int) -> int:
    """The most bytes the task route must hold at once: the largest set of input blocks that
    some chain of output blocks ties together (per axis, the longest stretch between
    boundaries both chunkings share; the sets are products of those stretches).

    >>> together_bytes(((2, 2), (4,)), ((4,), (1, 1, 1, 1)), 8)   # every block needs every other
    128
    >>> together_bytes(((2, 2), (4,)), ((1, 1, 1, 1), (4,)), 8)   # each input block on its own
    64
    """
    size = itemsize
    for src, dst in zip(old, new):
        shared = sorted(set(_starts(tuple(src))) & set(_starts(tuple(dst))))
        size *= max((b - a for a, b in zip(shared, shared[1:])), default=0)
    return size


def use_p2p(method: str | None, old: Chunks, new: Chunks, itemsize: int, limit: int) -> bool:
    """Whether a rechunk from ``old`` to ``new`` runs as one p2p exchange: ``method``
    (``"tasks"``, ``"p2p"`` or ``"auto"``; default: config ``array.rechunk.method``). ``"auto"``
    is p2p when a Client is the default and the task route would hold more than ``limit``
    bytes at once (``together_bytes``): the exchange holds a block and the buffer whatever
    the chunkings, but goes through disk, so rechunks that stay local keep the task route.

    >>> use_p2p("tasks", ((2, 2),), ((4,),), 8, 2**20)
    False
    >>> use_p2p("p2p", ((2, 2),), ((4,),), 8, 2**20)
    True
    """
    asked = method or config.get("array.rechunk.method", "auto")
    chosen = shuffle_method(asked)
    if chosen == "tasks":
        return False
    return asked == "p2p" or together_bytes(old, new, itemsize) > limit


def rechunk(x: Array, chunks: Any = "auto", threshold: Any = None, block_size_limit: Any = None, *,
            limit: Any = None, method: str | None = None, balance: bool = False) -> Array:
    """The same array with blocks ``chunks``: any spec ``from_array`` takes, another
    array's ``.chunks``, or a dict ``{axis: spec}`` (the other axes keep their blocks);
    an axis given ``None`` keeps its blocks and one given -1 becomes one block, as in dask.
    ``threshold`` (dask's, tuning its own plan) is taken and changes nothing here.
    ``block_size_limit`` (bytes) is the size ``"auto"`` axes aim at (default 128 MiB);
    ``balance=True`` evens out each axis's blocks, folding a small last block into the
    others (``x.rechunk(len(x) // n, balance=True)`` gives ``n`` blocks).

    No task holds more than ``limit`` bytes (default: config ``array.rechunk.memory``)
    beyond what the input and output blocks alone need; see the module docstring.
    ``method``: ``"tasks"``, ``"p2p"`` or ``"auto"`` (default: config
    ``array.rechunk.method``); see ``use_p2p``.

    >>> import numpy as np, xsched.array as xa
    >>> x = xa.from_array(np.arange(10), chunks=3)
    >>> xa.rechunk(x, 5).chunks
    ((5, 5),)
    >>> x.rechunk({0: (1, 9)}).compute().tolist()
    [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]
    >>> x.rechunk(4, balance=True).chunks
    ((5, 5),)
    """
    from .masking import has_unknown_chunks

    if has_unknown_chunks(x):
        return _rechunk_known_axes(x, chunks)
    new = _target(x, chunks, None if block_size_limit is None else parse_bytes(block_size_limit))
    if balance:
        new = tuple(balanced(c) for c in new)
    if new == x.chunks:
        return x
    if x._remake is not None and x._remake[0] == x.name:  # (made from positions alone: made anew)
        return x._remake[1].remake(new)
    limit = memory_limit() if limit is None else parse_bytes(limit)
    if use_p2p(method, x.chunks, new, x.dtype.itemsize, limit):
        return _p2p_step(x, new)
    steps = plan_rechunk(x.chunks, new, x.dtype.itemsize, limit)
    for i, dst in enumerate(steps):
        x = _step(x, dst, "rechunk" if i == len(steps) - 1 else "rechunk-mid")
    return x


def _rechunk_known_axes(x: Array, chunks: Any) -> Array:
    """``rechunk`` of an array with blocks of unknown length (after a boolean mask) that
    leaves those axes' blocks as they are: the known axes regrouped in one step, each
    unknown axis's block whole in the pieces (``x[mask].rechunk({0: -1})`` of a 2-d ``x``)."""
    from .masking import known_chunks_needed

    kept = [a for a, c in enumerate(x.chunks) if any(n != n for n in c)]
    stand_in = type(x)(x._graph, x.name, tuple((1,) * len(c) if a in kept else c for a, c in enumerate(x.chunks)),
                       x.dtype)
    try:
        new = _target(stand_in, chunks)
    except (ValueError, TypeError):
        new = None
    if new is None or any(new[a] != stand_in.chunks[a] for a in kept):
        known_chunks_needed(x, "rechunk")
    if new == stand_in.chunks:
        return x
    out = _step(stand_in, new, "rechunk", kept)
    return type(x)(out._graph, out.name, tuple(x.chunks[a] if a in kept else c for a, c in enumerate(new)), x.dtype)


class PerformanceWarning(Warning):
    """An operation will make blocks much larger than ``array.chunk-size``: each of its tasks
    holds such a block, so memory per task grows with it."""


#: How many times ``array.chunk-size`` a block an operation makes may hold before it warns.
LARGE_BLOCKS = 4


def joined(x: Array, axes: Sequence[int], what: str) -> Array:
    """``x`` with each of ``axes`` in one block, as ``what`` needs them whole; a
    ``PerformanceWarning`` when that makes blocks over ``LARGE_BLOCKS`` times the
    ``array.chunk-size`` setting, naming the operation and the rechunk that bounds them.

    >>> import warnings, xsched.array as xa, xsched.config as config
    >>> x = xa.ones((4000, 4000), chunks=(100, 4000))  # 3.2 MB blocks; axis 0 whole: 128 MB
    >>> with warnings.catch_warnings(record=True) as seen, config.set({"array.chunk-size": "16MiB"}):
    ...     warnings.simplefilter("always")
    ...     whole = joined(x, [0], "sorting")
    >>> whole.chunks[0], [w.category.__name__ for w in seen]
    ((4000,), ['PerformanceWarning'])
    """
    out = x.rechunk({a: -1 for a in axes})
    biggest = math.prod(max(c, default=0) for c in out.chunks) * x.dtype.itemsize
    limit = parse_bytes(config.get("array.chunk-size", AUTO_CHUNK_BYTES))
    if biggest == biggest and biggest > LARGE_BLOCKS * limit:
        others = {a: "auto" for a in range(x.ndim) if a not in axes}
        fix = ", ".join([f"{a}: -1" for a in axes] + [f"{a}: 'auto'" for a in others])
        warnings.warn(f"{what} needs axis {', '.join(map(str, axes))} of the array whole in each block, which makes "
                      f"blocks of up to {format_bytes(biggest)} ({LARGE_BLOCKS}x and more the array.chunk-size of "
                      f"{format_bytes(limit)}); x.rechunk({{{fix}}}) first cuts the other axes to bound them",
                      PerformanceWarning, stacklevel=3)
    return out


def unify_chunks(arrays: Sequence[Array], shape: Sequence[int]) -> list[Array]:
    """Arrays broadcasting to ``shape``, rechunked so that the axes they share have the same
    blocks: every cut any of them makes there (``chunks.common_blocks``), so that blocks are
    only split, never joined.

    >>> import numpy as np, xsched.array as xa
    >>> a = xa.from_array(np.ones(6), chunks=2)
    >>> b = xa.from_array(np.ones(6), chunks=3)
    >>> [u.chunks for u in unify_chunks([a, b], (6,))]
    [((2, 1, 1, 2),), ((2, 1, 1, 2),)]
    """
    ndim = len(shape)
    cuts: list[list[tuple[int, ...]]] = [[] for _ in range(ndim)]
    for a in arrays:
        off = ndim - a.ndim
        for ax in range(a.ndim):
            if a.shape[ax] == shape[off + ax]:
                cuts[off + ax].append(a.chunks[ax])
    chosen = [common_blocks(c) if c else None for c in cuts]
    out = []
    for a in arrays:
        off = ndim - a.ndim
        want = tuple(chosen[off + ax] if a.shape[ax] == shape[off + ax] else (1,)
                     for ax in range(a.ndim))  # (or an axis of length 1 that broadcasts)
        out.append(a if want == a.chunks else rechunk(a, want))
    return out
