"""``map_blocks`` and ``block_layer``: a function run on every block of one or more arrays,
each output block a task of its input blocks (matched by grid index, broadcast where an
input has one block along an axis), with ``block_id``/``block_info`` for functions that ask
where their block lies; ``index_notation.py`` builds ``blockwise`` on ``block_layer``.

>>> import numpy as np, xsched.array as xa
>>> x = xa.from_array(np.arange(6), chunks=3)
>>> map_blocks(lambda b: b + 1, x).compute().tolist()
[1, 2, 3, 4, 5, 6]
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping
from typing import Any, Callable, Sequence

import numpy as np

from ..graph.spec import Ref, Task, accepts_keyword, funcname
from ..graph.layers import LayeredGraph, annotations_in_force, chunk_key, new_token, per_task
from . import joins
from . import rechunking as _rechunk
from .axes import axis_tuple
from .chunks import Chunks, _starts, common_blocks
from .core import Array

__all__ = ["map_blocks", "block_layer"]


def _normalize_axes(axes: Any, ndim: int, what: str) -> list[int]:
    if axes is None:
        return []
    return sorted(axis_tuple(axes, ndim, f"map_blocks({what}=)"))


def _infer_dtype(func: Callable, args: Sequence[Any], kwargs: dict, what: str,
                 shape: tuple[int, ...] | None = None) -> np.dtype:
    """The dtype ``func`` returns, from one call on test blocks of ones (of ``shape``, else a
    single cell per array)."""
    dummies = [np.ones(shape or (1,) * a.ndim, a.dtype) if isinstance(a, Array) else a for a in args]
    try:
        with np.errstate(all="ignore"):
            return np.asarray(func(*dummies, **kwargs)).dtype
    except Exception as exc:
        shown = f" of shape {shape}" if shape else ""
        raise ValueError(
            f"{what}: could not infer the output dtype of {funcname(func)} by calling it on "
            f"small test blocks{shown} ({type(exc).__name__}: {exc}); pass dtype= explicitly."
        ) from exc


def map_blocks(func: Callable, *args: Any, chunks: Any = None, dtype: Any = None,
               drop_axis: Any = None, new_axis: Any = None, name: str | None = None,
               meta: Any = None, token: str | None = None, enforce_ndim: bool = False, align_arrays: bool = True,
               **kwargs: Any) -> Array:
    """Apply ``func`` to every block of the array arguments, giving one output block each.

    ``args`` may mix arrays, ``Delayed`` objects (their value is passed) and other values
    (passed unchanged); ``kwargs`` go to every call. Arrays are matched block for block:
    as in NumPy's broadcasting, one of fewer dimensions lines up with the last axes; along
    each axis the longest array sets the blocks, one as long but cut otherwise is
    rechunked to them, one of a single block there is broadcast, and one of another length
    with as many blocks goes block by block (dask's rule). With no array at all, ``func``
    generates the blocks and ``chunks`` (explicit sizes per axis) fixes the grid.

    * ``chunks``: output block sizes; per axis an int (every block that long) or a tuple
      (one size per block). Default: the input chunks.
    * ``dtype``: the output dtype. When omitted it is inferred by calling ``func`` once on
      1-element blocks (with the first block's ``block_id``/``block_info``, whose output
      ``"dtype"`` is then None); pass it to skip that call.
    * ``drop_axis``: input axes ``func`` removes; if such an axis has several blocks,
      ``func`` receives them concatenated. ``new_axis``: output axes ``func`` adds (one
      block each; their length comes from ``chunks``, default 1).
    * ``name``: the operation name in keys and progress bars (default ``func.__name__``).
    * ``meta``: an empty NumPy array of the output's type, as dask takes it: its dtype is
      the output's when ``dtype`` is not given.
    * ``token`` (dask's name for ``name``) and ``enforce_ndim`` (every block's shape is
      checked where it is made anyway, which covers its number of dimensions) are taken.

    When ``func`` has a ``block_id`` parameter it receives the output block index; with a
    ``block_info`` parameter it receives ``{None: output_info, i: info_of_argument_i}``,
    each with ``"shape"``, ``"num-chunks"``, ``"chunk-location"``, ``"array-location"``
    (``[(start, stop), ...]``), ``"chunk-shape"`` and ``"dtype"``.

    >>> import numpy as np, xsched.array as xa
    >>> def sum_sub_stacks(mov):
    ...     return mov.reshape(-1, 10, *mov.shape[1:]).sum(axis=1)
    >>> movie = xa.from_array(np.ones((200, 4, 4), "f4"), chunks=(100, -1, -1))
    >>> agg = movie.map_blocks(sum_sub_stacks, chunks=(10,) + movie.chunks[1:],
    ...                        dtype=movie.dtype)
    >>> agg.shape
    (20, 4, 4)
    >>> def where(block_info=None):
    ...     return np.full((2,), block_info[None]["array-location"][0][0])
    >>> xa.map_blocks(where, chunks=((2, 2),), dtype=int).compute().tolist()
    [0, 0, 2, 2]

    A block of another shape than ``chunks`` says fails where it is made, naming the block
    and both shapes.
    """
    if dtype is None and meta is not None:
        dtype = _meta_dtype(meta, "map_blocks")
    if not align_arrays:  # (dask's: the arrays must be cut alike already; nothing is rechunked)
        _cut_alike_already([a for a in args if isinstance(a, Array)])
    return blocks_of(func, args, kwargs, chunks, dtype, drop_axis, new_axis, name or token, check=True)


def _cut_alike_already(arrays: list) -> None:
    """``map_blocks(align_arrays=False)``: each axis (counted from the last, as arrays
    broadcast) cut alike in every array where it is longer than one."""
    for k in range(1, max((a.ndim for a in arrays), default=0) + 1):
        cuts = {a.chunks[-k] for a in arrays if a.ndim >= k and a.shape[-k] != 1}
        if len(cuts) > 1:
            raise ValueError(f"map_blocks(align_arrays=False): the arrays are cut otherwise along their axis -{k} "
                             f"({' and '.join(str(c) for c in sorted(cuts, key=str))}); rechunk them alike, or "
                             "leave align_arrays=True to have them rechunked")


def _meta_dtype(meta: Any, what: str, instead: str = "dtype=") -> np.dtype:
    """The dtype a ``meta=`` (dask's empty array of the output's type) gives."""
    if not hasattr(meta, "dtype"):
        raise TypeError(f"{what}: meta= takes an empty array of the output's type, e.g. np.array((), dtype=float); "
                        f"got {meta!r} of type {type(meta).__name__}; or pass {instead}")
    return np.dtype(meta.dtype)


def blocks_of(func: Callable, args: Sequence[Any], kwargs: dict, chunks: Any, dtype: Any, drop_axis: Any,
              new_axis: Any, name: str | None, check: bool) -> Array:
    """``map_blocks``' array; ``check``: each block's shape checked where it is made (off
    for callers that check the blocks themselves, such as ``map_overlap``)."""
    arrays = [(i, a) for i, a in enumerate(args) if isinstance(a, Array)]
    if not callable(func):
        raise TypeError(f"map_blocks: first argument must be a function, got {func!r}; "
                        "write xa.map_blocks(func, array, ...) or array.map_blocks(func).")
    if arrays:
        args, in_chunks = _aligned(args, arrays)
        arrays = [(i, args[i]) for i, _ in arrays]
        in_ndim, in_numblocks = len(in_chunks), tuple(len(c) for c in in_chunks)
    else:
        if chunks is None:
            raise ValueError("map_blocks: with no array argument, chunks= must give the "
                             "block sizes, e.g. chunks=((100, 100), (512,)).")
        in_ndim, in_numblocks, in_chunks = 0, (), ()
    drop = _normalize_axes(drop_axis, in_ndim, "drop_axis") if arrays else []
    kept = [a for a in range(in_ndim) if a not in drop]
    out_ndim_guess = len(kept) + (len([new_axis]) if isinstance(new_axis, numbers.Integral)
                                  else len(new_axis or ()))
    if not arrays:
        out_ndim_guess = len(chunks)
    new = _normalize_axes(new_axis, out_ndim_guess, "new_axis") if arrays else list(
        range(out_ndim_guess))
    out_ndim = out_ndim_guess
    # which input axis feeds each output axis (None: a new axis)
    source_axis: list[int | None] = []
    it = iter(kept)
    for o in range(out_ndim):
        source_axis.append(None if o in new else next(it))
    out_numblocks = []
    for o, s in enumerate(source_axis):
        if s is not None:
            out_numblocks.append(in_numblocks[s])
        elif chunks is not None and not isinstance(chunks[o], numbers.Integral):
            out_numblocks.append(len(tuple(chunks[o])))
        else:
            out_numblocks.append(1)
    out_chunks = _map_blocks_chunks(chunks, out_ndim, out_numblocks, source_axis, in_chunks)

    want_id, want_info = accepts_keyword(func, "block_id"), accepts_keyword(func, "block_info")
    out_starts = [_starts(c) for c in out_chunks]
    starts_of = {i: [_starts(c) for c in a.chunks] for i, a in arrays} if want_info else {}

    def input_index(out_index: tuple) -> tuple:
        base = [0] * in_ndim
        for o, s in enumerate(source_axis):
            if s is not None:
                base[s] = out_index[o]
        return tuple(base)

    def own_index(a: Array, base: tuple) -> tuple:
        """The block of ``a`` (its axes the last of the grid's) at the grid's ``base``: the
        first along an axis of one block, which is broadcast."""
        offset = in_ndim - a.ndim
        return tuple(base[offset + ax] if n > 1 else 0 for ax, n in enumerate(a.numblocks))

    def own_dropped(a: Array) -> tuple:
        return tuple(d - (in_ndim - a.ndim) for d in drop if d >= in_ndim - a.ndim)

    def block_kwargs(out_index: tuple, out_dtype: Any) -> dict:
        extra: dict[str, Any] = {}
        if want_id:
            extra["block_id"] = tuple(out_index)
        if want_info:
            base = input_index(out_index)
            info: dict[Any, dict] = {None: _info(out_chunks, out_starts, out_index, out_dtype)}
            for i, a in arrays:
                info[i] = _info(a.chunks, starts_of[i], own_index(a, base), a.dtype, own_dropped(a))
            extra["block_info"] = info
        return extra

    if dtype is None:
        if not arrays:
            raise ValueError("map_blocks: with no array argument, dtype= is required.")
        first = block_kwargs((0,) * out_ndim, None)
        dtype = _infer_dtype(func, args, {**kwargs, **first}, "map_blocks")
    dtype = np.dtype(dtype)

    def block_arg(i: int, a: Array, out_index: tuple) -> Any:
        index = own_index(a, input_index(out_index))
        dropped = own_dropped(a)
        drop_numblocks = tuple(a.numblocks[d] for d in dropped)
        if all(n == 1 for n in drop_numblocks):
            return Ref(chunk_key(a.name, index))
        refs = []
        for combo in np.ndindex(*drop_numblocks):
            idx = list(index)
            for d, c in zip(dropped, combo):
                idx[d] = c
            refs.append(Ref(chunk_key(a.name, tuple(idx))))
        return _concat_grid, (refs, drop_numblocks, dropped)

    return block_layer(func, args, kwargs, out_chunks, dtype, block_arg,
                       lambda out_index: block_kwargs(out_index, dtype),
                       name=name, token_parts=(drop, new), check=check)


def block_layer(func: Callable, args: Sequence[Any], kwargs: Mapping[str, Any],
                out_chunks: Chunks, dtype: Any,
                block_arg: Callable[[int, "Array", tuple], Any],
                block_kwargs: Callable[[tuple], dict] | None = None, *,
                name: str | None = None, token_parts: tuple = (), check: bool = False) -> Array:
    """One task per block of the ``out_chunks`` grid calling ``func``: the layer that
    ``map_blocks`` and ``blockwise`` (``index_notation.py``) both build.

    For output block ``out_index``, argument ``i`` is: for an ``Array``,
    ``block_arg(i, array, out_index)`` -- a ``Ref`` to one of its blocks, a list (nested
    lists) of them, or a pair ``(join, (refs, ...))`` made into a nested task that joins
    them where the call runs; for a one-key collection (``Delayed``), its value; anything
    else is passed as is. ``kwargs`` and ``block_kwargs(out_index)`` (``block_id``, ...)
    go to every call. The name is ``name`` (default the function's) and a token of the
    inputs, ``out_chunks``, ``dtype`` and ``token_parts``. ``check``: each block's shape is
    checked against the chunks where it is made (a user's function), so a block of another
    shape fails there naming the block and both shapes, not later and elsewhere.

    >>> import numpy as np, xsched.array as xa
    >>> from xsched.graph.spec import Ref
    >>> x = xa.from_array(np.arange(4), chunks=2)
    >>> flipped = block_layer(np.flip, [x], {}, x.chunks, x.dtype,
    ...                       lambda i, a, out: Ref(a.chunk_key((1 - out[0],))), name="flip")
    >>> flipped.compute().tolist()
    [3, 2, 1, 0]
    """
    dtype = np.dtype(dtype)
    arrays = [a for a in args if isinstance(a, Array)]
    # other collections with a single key (Delayed) become dependencies of every block
    delayed_keys = {i: k for i, a in enumerate(args) if not isinstance(a, Array)
                    for k in [_single_key(a)] if k is not None}
    prefix = name or funcname(func)
    token = new_token(func, [a.name if isinstance(a, Array) else delayed_keys.get(i, a)
                             for i, a in enumerate(args)], dict(kwargs),
                      out_chunks, str(dtype), *token_parts)
    out_name = f"{prefix}-{token}"
    ann = annotations_in_force()
    layer: dict[str, Any] = {}
    for out_index in np.ndindex(*tuple(len(c) for c in out_chunks)):
        call_args: list[Any] = []
        for i, a in enumerate(args):
            if not isinstance(a, Array):
                call_args.append(Ref(delayed_keys[i]) if i in delayed_keys else a)
                continue
            spec = block_arg(i, a, out_index)
            if type(spec) is tuple:  # (join, join_args): joined where the call runs
                spec = Task(spec[0], spec[1], {}, per_task(ann))
            call_args.append(spec)
        call_kwargs = {**kwargs, **(block_kwargs(out_index) if block_kwargs else {})}
        if check:
            promised = tuple(c[i] for c, i in zip(out_chunks, out_index))
            call_args[:0] = [func, promised, f"{prefix}: block {tuple(out_index)}"]
        layer[chunk_key(out_name, out_index)] = Task(_checked_block if check else func, tuple(call_args),
                                                     call_kwargs, per_task(ann))
    graphs = [a._graph for a in arrays] + [args[i].__xsched_graph__() for i in delayed_keys]
    return Array(LayeredGraph.merge(*graphs, new={out_name: layer}), out_name, out_chunks,
                 dtype)


def _checked_block(func: Callable, promised: tuple, where: str, /, *args: Any, **kwargs: Any) -> Any:
    """Run on the workers: ``func``'s block, which must have the shape its chunks promised
    (an axis of unknown length, NaN, is not checked; nor is a result without a shape)."""
    out = func(*args, **kwargs)
    shape = getattr(out, "shape", None)
    if shape is not None and (len(shape) != len(promised) or any(p == p and p != n for p, n in zip(promised, shape))):
        raise ValueError(f"{where} came back with shape {tuple(shape)}, but the array's chunks promised "
                         f"{promised}; say the sizes of the blocks the function returns when building the array "
                         "(map_blocks' chunks=, drop_axis=, new_axis=; blockwise's adjust_chunks=, new_axes=)")
    return out


def _aligned(args: Sequence[Any], arrays: list) -> tuple[list, Chunks]:
    """The arguments with their arrays matched block for block, and the block grid's
    chunks. As in NumPy's broadcasting, an array of fewer dimensions lines up with the
    last axes. Along each axis the longest arrays set the blocks, cut wherever any of them
    cuts (``chunks.common_blocks``), and are rechunked to them; an array of one block there is
    broadcast (its block goes with each); an array of another length with as many blocks
    goes block by block, as in dask."""
    args = list(args)
    ndim = max(a.ndim for _, a in arrays)

    def length(a: Array, ax: int) -> float:
        return a.shape[ax] if a.shape[ax] == a.shape[ax] else -1

    refs = [max(((i, a, a.ndim - ndim + d) for i, a in arrays if a.ndim - ndim + d >= 0),
                key=lambda h: length(h[1], h[2])) for d in range(ndim)]

    def cuts(d: int) -> tuple[int, ...]:
        _, ref, rax = refs[d]
        n = length(ref, rax)
        if n < 0:  # (unknown lengths, from a boolean mask: the longest array's own blocks)
            return ref.chunks[rax]
        return common_blocks([a.chunks[a.ndim - ndim + d] for _, a in arrays
                              if a.ndim - ndim + d >= 0 and length(a, a.ndim - ndim + d) == n])

    chunks = tuple(cuts(d) for d in range(ndim))
    for i, a in arrays:
        offset = ndim - a.ndim
        want = tuple(chunks[offset + ax] if length(a, ax) == sum(chunks[offset + ax]) else c
                     for ax, c in enumerate(a.chunks))
        if want != a.chunks:
            args[i] = a = _rechunk.rechunk(a, want)
        for ax, c in enumerate(a.chunks):
            grid = chunks[offset + ax]
            if len(c) not in (1, len(grid)):
                raise ValueError(
                    f"map_blocks: argument {i} (shape {a.shape}, chunks {a.chunks}) cannot be matched block for "
                    f"block with argument {refs[offset + ax][0]} along its axis {ax}: it has {len(c)} blocks "
                    f"there, the other {len(grid)} ({grid}); rechunk it to as many blocks, or to one block "
                    "to broadcast it.")
    return args, chunks


def _single_key(obj: Any) -> str | None:
    """The key of a one-key collection such as ``Delayed`` (None for anything else)."""
    if isinstance(obj, type) or not hasattr(type(obj), "__xsched_graph__"):
        return None
    keys = obj.__xsched_keys__()
    if isinstance(keys, list) and len(keys) == 1:
        keys = keys[0]
    return keys if isinstance(keys, str) else None


def _map_blocks_chunks(chunks: Any, out_ndim: int, out_numblocks: list[int],
                       source_axis: list, in_chunks: Chunks) -> Chunks:
    if chunks is None:
        return tuple(in_chunks[s] if s is not None else (1,) for s in source_axis)
    chunks = tuple(chunks)
    if len(chunks) != out_ndim:
        raise ValueError(
            f"map_blocks: chunks={chunks!r} has {len(chunks)} entries but the output has "
            f"{out_ndim} dimensions; give one entry per output axis."
        )
    out = []
    for o, (spec, nb) in enumerate(zip(chunks, out_numblocks)):
        if isinstance(spec, numbers.Integral):
            out.append((int(spec),) * nb)
            continue
        sizes = tuple(s if s != s else int(s) for s in spec)  # (nan: a length a boolean mask left unknown)
        if len(sizes) == 1 and nb > 1:
            sizes = sizes * nb
        if len(sizes) != nb:
            raise ValueError(
                f"map_blocks: chunks on output axis {o} give {len(sizes)} block sizes "
                f"{sizes}, but there are {nb} blocks along that axis."
            )
        out.append(sizes)
    return tuple(out)


def _info(chunks: Chunks, starts: list, index: tuple, dtype: Any,
          dropped: Sequence[int] = ()) -> dict:
    """The ``block_info`` entry of one block of an array with ``chunks``."""
    location = []
    shape = []
    for a, i in enumerate(index):
        if a in dropped:  # the function sees the whole (concatenated) axis
            location.append((0, starts[a][-1]))
            shape.append(starts[a][-1])
        else:
            location.append((starts[a][i], starts[a][i + 1]))
            shape.append(chunks[a][i])
    return {
        "shape": tuple(sum(c) for c in chunks),
        "num-chunks": tuple(len(c) for c in chunks),
        "chunk-location": tuple(index),
        "array-location": location,
        "chunk-shape": tuple(shape),
        "dtype": None if dtype is None else np.dtype(dtype),  # None while inferring it
    }


def _concat_grid(blocks: list, grid: tuple[int, ...], axes: tuple[int, ...]) -> np.ndarray:
    """Join blocks given in C order over ``grid`` by concatenating along ``axes``."""
    nested: Any = list(blocks)
    for n in reversed(grid[1:]):
        nested = [nested[i:i + n] for i in range(0, len(nested), n)]

    def join(obj: Any, level: int) -> np.ndarray:
        if level == len(axes):
            return obj
        parts = [join(o, level + 1) for o in obj]
        return parts[0] if len(parts) == 1 else joins.concatenate(parts, axis=axes[level])

    return join(nested, 0)


# --------------------------------------------------------------------------- elementwise


def _array_map_blocks(self: Array, func: Callable, *args: Any, **kwargs: Any) -> Array:
    """``map_blocks(func, self, *args, **kwargs)``; see ``xsched.array.map_blocks``.

    >>> import numpy as np, xsched.array as xa
    >>> x = xa.from_array(np.arange(6), chunks=3)
    >>> x.map_blocks(lambda b: b * 10, dtype=x.dtype).compute().tolist()
    [0, 10, 20, 30, 40, 50]
    """
    return map_blocks(func, self, *args, **kwargs)


_array_map_blocks.__name__ = "map_blocks"
Array.map_blocks = _array_map_blocks  # type: ignore[attr-defined]
