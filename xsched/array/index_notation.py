"""Operations written in index notation: ``blockwise`` (one task per output block, its
input blocks chosen by index names) and ``einsum`` on top of it.

Every axis of every argument and of the output is named by an *index* (a letter, or any
hashable). Output block ``(i, j)`` of ``blockwise(f, "ij", x, "ij", y, "ji")`` calls ``f`` on
block ``(i, j)`` of ``x`` and block ``(j, i)`` of ``y``. An index of an argument that the
output does not have is *contracted*: the call receives every block along it, as a list
(nested lists for several such indices, in the order they first appear in the argument),
or, with ``concatenate=True``, joined into one block along those axes. ``new_axes`` names
output indices no argument has, with their lengths.

Chunks along a shared index: the arguments are **unified by rechunking**. For each index,
the blocks are cut wherever any argument spanning it cuts (``chunks.common_blocks``: blocks
are split, never joined, and an argument in one block there takes the others' cuts); the
arguments cut otherwise are rechunked to those blocks (a ``rechunk`` layer each, as
``map_blocks`` and the elementwise operations do). ``unify_chunks`` does this rechunking
alone. An axis of length 1 held in one block
broadcasts against any length (its single block goes with every block of the index).
Any other disagreement of lengths is an error when the expression is built, naming the
index, the two arguments and their lengths.

The layer of tasks is the one ``map_blocks`` builds (``mapping.block_layer``): ``Delayed``
arguments pass their value, other arguments without index pass as they are, keyword
arguments go to every call, and a ``block_id`` parameter of ``func`` receives the output
block index.

>>> import numpy as np, xsched.array as xa
>>> x = xa.from_array(np.arange(6).reshape(2, 3), chunks=(1, 2))
>>> xa.blockwise(np.add, "ij", x, "ij", 10, None, dtype=x.dtype).compute().tolist()
[[10, 11, 12], [13, 14, 15]]
>>> rows = xa.blockwise(lambda b: b.sum(axis=1), "i", x, "ij", concatenate=True,
...                     dtype=x.dtype)
>>> rows.compute().tolist()
[3, 12]

Einstein summation
------------------

``einsum("ij,jk->ik", a, b)`` becomes two layers. First, one ``einsum`` task per
combination of blocks: ``blockwise`` with the output indices *and* the summed ones
(``j``), each task running ``numpy.einsum`` on its blocks and keeping every summed index
as an axis of length 1 (one cell per block along it). Then those partial results are
added up along the summed axes by ``xsched.array.sum``, a tree reduction that adds at
most ``split_every`` partials per task, so no task holds more than that many
output-sized blocks whatever the number of blocks along ``j``. Without a summed index
(``"ij->ji"``, an outer product, ``"ii->i"``), the first layer is the result.

Operands sharing an index are unified as ``blockwise`` does (cut wherever any operand
spanning it is cut), an index repeated within an operand takes its diagonal
blocks, axes of length 1 broadcast, and ``...`` stands for the leading axes, broadcast
right-aligned, as in NumPy. Implicit mode (no ``->``) gives the indices that appear once,
in alphabetical order, after the ``...`` axes, as NumPy does.

>>> import numpy as np, xsched.array as xa
>>> a = xa.from_array(np.arange(6.0).reshape(2, 3), chunks=(1, 2))
>>> xa.einsum("ij,kj->ik", a, a).compute().tolist()
[[5.0, 14.0], [14.0, 50.0]]
>>> np.einsum("ij->j", a).compute().tolist()     # NumPy's einsum runs this one
[3.0, 5.0, 7.0]
"""

from __future__ import annotations

import numbers
import string
from typing import Any, Callable, Hashable, Mapping, Sequence

import numpy as np

from ..graph.layers import chunk_key
from ..graph.spec import Ref, accepts_keyword, funcname
from . import rechunking as _rechunk
from .chunks import common_blocks
from .core import Array
from .mapping import _concat_grid, _infer_dtype, _single_key, block_layer
from .creation import asarray

__all__ = ["blockwise", "einsum", "unify_chunks"]


def _indices(ind: Any, what: str) -> tuple:
    if isinstance(ind, str):
        return tuple(ind)
    try:
        return tuple(ind)
    except TypeError:
        raise TypeError(f"blockwise: {what} must be a string of index letters or a tuple of "
                        f"index names, not {ind!r}") from None


def _pairs(args_and_indices: Sequence[Any]) -> list[tuple[Any, tuple | None]]:
    if len(args_and_indices) % 2:
        raise TypeError(
            f"blockwise: arguments come in pairs (argument, index), e.g. "
            f"blockwise(f, 'ij', x, 'ij', y, 'jk'), with None as the index of an argument "
            f"passed as it is; got {len(args_and_indices)} values, an odd number.")
    out = []
    for k in range(0, len(args_and_indices), 2):
        arg, ind = args_and_indices[k], args_and_indices[k + 1]
        if ind is None:
            out.append((arg, None))
            continue
        ind = _indices(ind, f"the index of argument {k // 2}")
        if not isinstance(arg, Array) and _single_key(arg) is None:
            arg = asarray(arg)
        if not isinstance(arg, Array):
            raise TypeError(f"blockwise: argument {k // 2} is a {type(arg).__name__} with index "
                            f"{''.join(map(str, ind))!r}; only arrays take indices (give "
                            "None for other arguments)")
        if len(ind) != arg.ndim:
            raise ValueError(
                f"blockwise: argument {k // 2} has {arg.ndim} dimensions (shape {arg.shape}) "
                f"but its index {_show(ind)} names {len(ind)}; give one index per axis.")
        out.append((arg, ind))
    return out


def _show(ind: Sequence[Hashable]) -> str:
    return repr("".join(ind)) if all(isinstance(i, str) and len(i) == 1 for i in ind) \
        else repr(tuple(ind))


def _chunks_spec(spec: Any, index: Hashable, what: str) -> tuple[int, ...]:
    if isinstance(spec, numbers.Integral):
        return (int(spec),)
    try:
        sizes = tuple(int(s) for s in spec)
    except TypeError:
        raise TypeError(f"blockwise: {what}[{index!r}] must be a length or a tuple of block "
                        f"sizes, not {spec!r}") from None
    return sizes or (0,)


def _aligned_already(pairs: list) -> None:
    """``align_arrays=False``: every index's arrays are cut alike (a one-block axis of length
    1 broadcasts), or the call fails naming the two."""
    seen: dict = {}
    for k, (arg, ind) in enumerate(pairs):
        if ind is None or not hasattr(arg, "chunks"):
            continue
        for axis, i in enumerate(ind):
            chunks = tuple(arg.chunks[axis])
            if chunks == (1,):
                continue
            if i in seen and seen[i][1] != chunks:
                raise ValueError(f"blockwise(align_arrays=False): index {i!r} is cut {seen[i][1]} in argument "
                                 f"{seen[i][0]} but {chunks} in argument {k}; rechunk one, or leave align_arrays=True")
            seen.setdefault(i, (k, chunks))


def blockwise(func: Callable, out_ind: Any, *args_and_indices: Any, dtype: Any = None,
              new_axes: Mapping[Hashable, Any] | None = None, concatenate: bool = False,
              adjust_chunks: Mapping[Hashable, Any] | None = None, name: str | None = None,
              meta: Any = None, token: str | None = None, align_arrays: bool = True,
              **kwargs: Any) -> Array:
    """Call ``func`` once per output block on the blocks index notation picks.

    ``blockwise(func, out_ind, arg0, ind0, arg1, ind1, ..., **kwargs)``: ``out_ind`` and
    each ``ind`` name the axes (a string of letters, or a tuple of hashables); an argument
    with index ``None`` is passed to every call as it is (a ``Delayed``: its value). NumPy
    arrays with an index become one-block xsched arrays first.

    * Indices of an argument missing from ``out_ind`` are contracted: ``func`` gets the
      argument's blocks along them as a list (nested for several, in the order they appear
      in its index), or joined into one block when ``concatenate=True``.
    * ``new_axes``: ``{index: length}`` (one block) or ``{index: (block sizes...)}`` for
      output indices no argument has.
    * ``adjust_chunks``: ``{index: f}`` where ``func`` changes the block sizes along an
      output index: ``f`` a function of the input block size, an int (every block that
      long) or a tuple (one size per block).
    * ``dtype``: the output dtype; when omitted, ``func`` is called once on test blocks
      of one element each to find it.
    * Arguments cut differently along a shared index are rechunked to the blocks of the
      first argument spanning it; an axis of length 1 in one block broadcasts.
      ``align_arrays=False`` (dask's) refuses such arguments instead of rechunking them.
    * ``meta`` (an empty array of the output's type) gives the dtype as dask's does;
      ``token`` is dask's name for ``name``.

    Errors are raised here, when the expression is built: an output index no argument
    or ``new_axes`` has, an index naming more or fewer axes than its argument has, lengths
    that disagree along an index.

    >>> import numpy as np, xsched.array as xa
    >>> a = xa.from_array(np.arange(6.0).reshape(2, 3), chunks=(1, 2))
    >>> b = xa.from_array(np.ones((3, 2)), chunks=(1, 2))
    >>> def product(left, right):          # the blocks along j, joined
    ...     return left @ right
    >>> xa.blockwise(product, "ik", a, "ij", b, "jk", concatenate=True,
    ...              dtype=float).compute().tolist()
    [[3.0, 3.0], [12.0, 12.0]]
    >>> def lists(left, right):            # the blocks along j, as lists
    ...     return sum(l @ r for l, r in zip(left, right))
    >>> xa.blockwise(lists, "ik", a, "ij", b, "jk", dtype=float).compute().tolist()
    [[3.0, 3.0], [12.0, 12.0]]
    >>> xa.blockwise(np.transpose, "ji", a, "ij", dtype=float).chunks
    ((2, 1), (1, 1))
    >>> xa.blockwise(np.add, "ij", a, "ij", b, "ij")
    Traceback (most recent call last):
    ...
    ValueError: blockwise: index 'i' has length 2 in argument 0 but 3 in argument 1; ...
    """
    if not callable(func):
        raise TypeError(f"blockwise: first argument must be a function, got {func!r}")
    if dtype is None and meta is not None:
        if not hasattr(meta, "dtype"):
            raise TypeError(f"blockwise: meta= takes an empty array of the output's type, e.g. np.array((), "
                            f"dtype=float); got {type(meta).__name__}; or pass dtype=")
        dtype = np.dtype(meta.dtype)
    name = name or token
    out_ind = _indices(out_ind, "out_ind")
    if len(set(out_ind)) != len(out_ind):
        raise ValueError(f"blockwise: output index {_show(out_ind)} names an index twice; "
                         "a repeated index belongs to an input (its diagonal)")
    pairs = _pairs(args_and_indices)
    new_axes = dict(new_axes or {})
    adjust_chunks = dict(adjust_chunks or {})

    length, first = _lengths(pairs, "blockwise")
    for i in out_ind:
        if i not in length and i not in new_axes:
            raise ValueError(
                f"blockwise: output index {i!r} is in no argument's index and not in "
                f"new_axes; the indices known are {sorted(map(str, length))}.")
    for i in new_axes:
        if i in length:
            raise ValueError(f"blockwise: new_axes names index {i!r}, which argument "
                             f"{first[i][0]} already has")
        if i not in out_ind:
            raise ValueError(f"blockwise: new_axes names index {i!r}, which is not in the "
                             f"output index {_show(out_ind)}")
    for i in adjust_chunks:
        if i not in out_ind:
            raise ValueError(f"blockwise: adjust_chunks names index {i!r}, which is not in "
                             f"the output index {_show(out_ind)}")

    if not align_arrays:
        _aligned_already(pairs)
    ref_chunks, args = _unified(pairs, length, first)
    numblocks = {i: len(c) for i, c in ref_chunks.items()}

    out_chunks: list[tuple[int, ...]] = []
    for i in out_ind:
        chunks = _chunks_spec(new_axes[i], i, "new_axes") if i in new_axes else ref_chunks[i]
        if i in adjust_chunks:
            adj = adjust_chunks[i]
            if callable(adj):
                chunks = tuple(int(adj(c)) for c in chunks)
            elif isinstance(adj, numbers.Integral):
                chunks = (int(adj),) * len(chunks)
            else:
                sizes = tuple(int(c) for c in adj)
                if len(sizes) != len(chunks):
                    raise ValueError(
                        f"blockwise: adjust_chunks[{i!r}] gives {len(sizes)} block sizes but "
                        f"index {i!r} has {len(chunks)} blocks")
                chunks = sizes
        out_chunks.append(chunks)

    # per argument: its contracted indices (first appearance order) and their block counts
    plans: dict[int, tuple] = {}
    for k, (arg, ind) in enumerate(zip(args, [p[1] for p in pairs])):
        if ind is None:
            continue
        contracted = []
        for i in ind:
            if i not in out_ind and i not in contracted:
                contracted.append(i)
        counts = tuple(1 if all(_broadcasts(arg, ax) for ax, j in enumerate(ind) if j == i)
                       else numblocks[i] for i in contracted)
        if concatenate and any(list(ind).count(i) > 1 for i in contracted):
            raise ValueError(
                f"blockwise: index {next(i for i in contracted if list(ind).count(i) > 1)!r} "
                f"appears twice in argument {k} and is contracted: its blocks lie on a "
                "diagonal that concatenate=True cannot join; use concatenate=False (a list)")
        plans[k] = (ind, tuple(contracted), counts)

    def block_index(arg: Array, ind: tuple, where: Mapping[Hashable, int]) -> tuple:
        return tuple(0 if _broadcasts(arg, ax) else where[i] for ax, i in enumerate(ind))

    def block_arg(k: int, arg: Array, out_index: tuple) -> Any:
        ind, contracted, counts = plans[k]
        where = dict(zip(out_ind, out_index))
        if not contracted:
            return Ref(chunk_key(arg.name, block_index(arg, ind, where)))
        refs = []
        for combo in np.ndindex(*counts):
            where.update(zip(contracted, combo))
            refs.append(Ref(chunk_key(arg.name, block_index(arg, ind, where))))
        if concatenate:
            axes = tuple(ind.index(i) for i in contracted)
            return _concat_grid, (refs, counts, axes)
        return _nest(refs, counts)

    def with_block_id(out_index: tuple) -> dict:
        return {"block_id": tuple(out_index)}

    block_kwargs = with_block_id if accepts_keyword(func, "block_id") else None
    if dtype is None:
        dummies = []
        for k, (arg, ind) in enumerate(zip(args, [p[1] for p in pairs])):
            if ind is None:
                dummies.append(arg)
                continue
            one = np.ones((1,) * arg.ndim, arg.dtype)
            contracted = plans[k][1]
            dummies.append(one if concatenate or not contracted else _nest([one],
                                                                           (1,) * len(contracted)))
        extra = block_kwargs((0,) * len(out_ind)) if block_kwargs else {}
        dtype = _infer_dtype(func, dummies, {**kwargs, **extra}, "blockwise")
    return block_layer(func, args, kwargs, tuple(out_chunks), dtype, block_arg, block_kwargs,
                       name=name or funcname(func),
                       token_parts=("blockwise", out_ind,
                                    [p[1] for p in pairs], concatenate), check=True)


def _lengths(pairs: list, what: str) -> tuple[dict, dict]:
    """The length of every index, and the argument and axis whose blocks it takes: the
    first argument spanning it (an axis of length 1 in one block only broadcasts)."""
    length: dict[Hashable, int] = {}
    first: dict[Hashable, tuple[int, int]] = {}  # index -> (argument, axis)
    for k, (arg, ind) in enumerate(pairs):
        for ax, i in enumerate(ind or ()):
            n, spans = arg.shape[ax], not _broadcasts(arg, ax)
            if i not in length or (spans and length[i] == 1
                                   and _broadcasts(*_at(pairs, first[i]))):
                length[i], first[i] = n, (k, ax)
            elif spans and n != length[i]:
                blocks = _at(pairs, first[i])[0].chunks[first[i][1]]
                if n != n or length[i] != length[i]:  # (unknown lengths, after a boolean mask)
                    if arg.chunks[ax] == blocks:  # the same mask's blocks, as element-wise operations ask
                        continue
                    raise ValueError(
                        f"{what}: index {i!r} has blocks {blocks} in argument {first[i][0]} but "
                        f"{arg.chunks[ax]} in argument {k}, of lengths unknown (from a boolean "
                        "mask) that cannot be matched; call compute_chunk_sizes() on them first")
                raise ValueError(
                    f"{what}: index {i!r} has length {length[i]} in argument "
                    f"{first[i][0]} but {n} in argument {k}; arguments sharing an index need "
                    "the same length along it (or 1, to broadcast).")
    return length, first


def _unified(pairs: list, length: dict, first: dict) -> tuple[dict, list]:
    """The blocks of every index (``{index: chunks}``: every cut an argument spanning it
    makes there, ``chunks.common_blocks``) and the arguments, those with an index rechunked
    to them."""
    cuts: dict[Hashable, list[tuple[int, ...]]] = {}
    for arg, ind in pairs:
        for ax, i in enumerate(ind or ()):
            if arg.shape[ax] == length[i] and not _broadcasts(arg, ax):
                cuts.setdefault(i, []).append(arg.chunks[ax])
    ref_chunks = {i: common_blocks(cuts[i]) if i in cuts else _at(pairs, first[i])[0].chunks[first[i][1]]
                  for i in first}
    args: list[Any] = []
    for arg, ind in pairs:
        if ind is not None:
            want = {ax: ref_chunks[i] for ax, i in enumerate(ind)
                    if arg.shape[ax] == length[i] and arg.chunks[ax] != ref_chunks[i]
                    and not _broadcasts(arg, ax)}
            if want:
                arg = _rechunk.rechunk(arg, want)
        args.append(arg)
    return ref_chunks, args


def unify_chunks(*args_and_indices: Any) -> tuple[dict[Hashable, tuple[int, ...]], list]:
    """Arrays named by index notation, rechunked so that the axes sharing an index have
    the same blocks, as ``blockwise`` would: ``unify_chunks(x, "ij", y, "jk")``.

    Returns ``({index: block sizes}, [arguments])``: every argument in order, those with
    an index as xsched arrays cut alike along each shared index (at every cut any argument
    spanning it makes, so blocks are split but never joined; an axis of length 1 in one
    block broadcasts and is left as it is), the others (index ``None``) as given. Lengths
    that disagree along an index raise a ``ValueError`` naming it.

    >>> import numpy as np, xsched.array as xa
    >>> x = xa.from_array(np.ones((4, 6)), chunks=(2, 3))
    >>> y = xa.from_array(np.ones((6, 5)), chunks=(2, 5))
    >>> chunks, (x2, y2) = xa.unify_chunks(x, "ij", y, "jk")
    >>> chunks["j"], x2.chunks, y2.chunks
    ((2, 1, 1, 2), ((2, 2), (2, 1, 1, 2)), ((2, 1, 1, 2), (5,)))
    """
    pairs = _pairs(args_and_indices)
    length, first = _lengths(pairs, "unify_chunks")
    ref_chunks, args = _unified(pairs, length, first)
    return ref_chunks, args


def check_aligned(args_and_indices: Sequence[Any]) -> None:
    """Raise a ``ValueError`` unless the arrays sharing an index already have the same
    blocks along it (axes of length 1 in one block broadcast and are not compared).

    >>> import xsched.array as xa
    >>> check_aligned([xa.ones(4, chunks=2), "i", xa.ones(4, chunks=2), "i"])
    >>> check_aligned([xa.ones(4, chunks=2), "i", xa.ones(4, chunks=3), "i"])
    Traceback (most recent call last):
    ...
    ValueError: blockwise: index 'i' has blocks (2, 2) in argument 0 but (3, 1) in argument 1; ...
    """
    seen: dict[Hashable, tuple[int, tuple[int, ...]]] = {}
    for k, (arg, ind) in enumerate(_pairs(args_and_indices)):
        for ax, i in enumerate(ind or ()):
            if _broadcasts(arg, ax):
                continue
            if i in seen and seen[i][1] != arg.chunks[ax]:
                raise ValueError(
                    f"blockwise: index {i!r} has blocks {seen[i][1]} in argument {seen[i][0]} "
                    f"but {arg.chunks[ax]} in argument {k}; with align_arrays=False the "
                    "arguments must already share their blocks (rechunk one, or let them be "
                    "aligned)")
            seen.setdefault(i, (k, arg.chunks[ax]))


def _at(pairs: list, where: tuple[int, int]) -> tuple[Array, int]:
    return pairs[where[0]][0], where[1]


def _broadcasts(arg: Array, axis: int) -> bool:
    """Whether this axis stands for any length: length 1, one block."""
    return arg.shape[axis] == 1 and arg.numblocks[axis] == 1


def _nest(items: list, counts: tuple[int, ...]) -> Any:
    """A flat C-ordered list as nested lists over ``counts``."""
    nested: Any = list(items)
    for n in reversed(counts[1:]):
        nested = [nested[i:i + n] for i in range(0, len(nested), n)]
    return nested


# --------------------------------------------------------------------------- einsum


def _parse(subscripts: str, operands: list[Array]) -> tuple[list[str], str]:
    """Each operand's index letters and the output's, with ``...`` made into letters."""
    spec = subscripts.replace(" ", "")
    if "->" in spec:
        inputs_part, output = spec.split("->", 1)
        if "->" in output:
            raise ValueError(f"einsum: {subscripts!r} has more than one '->'")
    else:
        inputs_part, output = spec, None
    inputs = inputs_part.split(",")
    if len(inputs) != len(operands):
        raise ValueError(f"einsum: {subscripts!r} names {len(inputs)} operands but "
                         f"{len(operands)} were given")
    for text in inputs + ([output] if output is not None else []):
        rest = text.replace("...", "", 1)
        bad = [c for c in rest if c not in string.ascii_letters]
        if bad:
            raise ValueError(f"einsum: {subscripts!r} has {bad[0]!r}, which is neither an "
                             "index letter (a-z, A-Z) nor part of one '...'")
    used = set(spec) & set(string.ascii_letters)
    spare = [c for c in string.ascii_letters if c not in used]
    n_ellipsis = 0
    for text, op in zip(inputs, operands):
        letters = len(text.replace("...", ""))
        if "..." in text:
            n_ellipsis = max(n_ellipsis, op.ndim - letters)
            if op.ndim < letters:
                raise ValueError(f"einsum: operand {text!r} names {letters} axes but the "
                                 f"array has {op.ndim} (shape {op.shape})")
    ell = "".join(spare[:n_ellipsis])
    out_inputs = []
    for k, (text, op) in enumerate(zip(inputs, operands)):
        if "..." in text:
            n = op.ndim - len(text.replace("...", ""))
            text = text.replace("...", ell[len(ell) - n:] if n else "")
        if len(text) != op.ndim:
            raise ValueError(
                f"einsum: operand {k} has {op.ndim} dimensions (shape {op.shape}) but its "
                f"subscripts {inputs[k]!r} name {len(text)}; give one letter per axis, or "
                "'...' for the leading ones.")
        out_inputs.append(text)
    if output is None:
        counts: dict[str, int] = {}
        for text in out_inputs:
            for c in text:
                counts[c] = counts.get(c, 0) + 1
        output = ell + "".join(sorted(c for c, n in counts.items() if n == 1 and c not in ell))
    else:
        if "..." in output:
            output = output.replace("...", ell)
        elif ell:
            raise ValueError(
                f"einsum: {subscripts!r}: the operands have '...' axes but the output names "
                "no '...'; write '...' in the output to keep them (NumPy does not sum them)")
        if len(set(output)) != len(output):
            raise ValueError(f"einsum: the output {output!r} names an index twice")
        known = set("".join(out_inputs))
        for c in output:
            if c not in known:
                raise ValueError(f"einsum: output index {c!r} is in no operand's subscripts "
                                 f"({subscripts!r})")
    return out_inputs, output


def _block_einsum(*blocks: np.ndarray, spec: str, kept: int, out_dtype: np.dtype,
                  optimize: Any) -> np.ndarray:
    """``numpy.einsum`` of one combination of blocks, with ``kept`` trailing axes of
    length 1 standing for the summed indices."""
    out = np.asarray(np.einsum(spec, *blocks, dtype=out_dtype, optimize=optimize))
    return out.reshape(out.shape + (1,) * kept) if kept else out


def einsum(subscripts: str, *operands: Any, dtype: Any = None, optimize: Any = False,
           split_every: Any = None) -> Array:
    """Einstein summation, as ``numpy.einsum``: ``"ij,jk->ik"`` (matrix product),
    ``"ii->i"`` (diagonal), ``"ii"`` (trace), ``"i,j->ij"`` (outer product),
    ``"bij,bjk->bik"`` (batched), ``"ij->ji"``, implicit output (``"ij,jk"``) and ``...``.

    Each combination of blocks runs ``numpy.einsum`` (with ``optimize``, NumPy's
    contraction order within a block); summed indices are added up across blocks in a
    tree of at most ``split_every`` partials per task (see ``xsched.array.sum``).
    ``dtype`` is NumPy's result type of the operands unless given. Operands may be NumPy
    arrays or anything ``asarray`` takes; the interleaved form
    ``einsum(a, [0, 1], b, [1, 2])`` is not supported (write the subscripts string).

    >>> import numpy as np, xsched.array as xa
    >>> m = xa.from_array(np.arange(9.0).reshape(3, 3), chunks=2)
    >>> xa.einsum("ii->i", m).compute().tolist(), float(xa.einsum("ii", m))
    ([0.0, 4.0, 8.0], 12.0)
    >>> xa.einsum("ij,jk", m, np.eye(3)).shape
    (3, 3)
    >>> xa.einsum("ij,jk->ik", m, np.ones((2, 2)))
    Traceback (most recent call last):
    ...
    ValueError: blockwise: index 'j' has length 3 in argument 0 but 2 in argument 1; ...
    """
    if not isinstance(subscripts, str):
        raise TypeError("einsum: the first argument must be the subscripts string, e.g. "
                        "einsum('ij,jk->ik', a, b); the interleaved form einsum(a, [0, 1], b, "
                        "[1, 2]) is not supported")
    if not operands:
        raise ValueError("einsum: no operands given")
    arrays = [asarray(op) for op in operands]
    inputs, output = _parse(subscripts, arrays)
    summed = []
    for text in inputs:
        for c in text:
            if c not in output and c not in summed:
                summed.append(c)
    natural = np.result_type(*[a.dtype for a in arrays])
    dtype = natural if dtype is None else np.dtype(dtype)
    if not np.can_cast(natural, dtype, "safe"):
        raise TypeError(f"einsum: cannot cast the operands' {natural} to dtype={dtype} safely "
                        f"(as NumPy's einsum refuses); cast an operand with .astype first")
    spec = ",".join(inputs) + "->" + output
    pairs: list[Any] = []
    for a, text in zip(arrays, inputs):
        pairs += [a, text]
    partial = blockwise(_block_einsum, output + "".join(summed), *pairs, dtype=dtype,
                        adjust_chunks={c: 1 for c in summed}, name="einsum", spec=spec,
                        kept=len(summed), out_dtype=dtype, optimize=optimize)
    if not summed:
        return partial
    axes = tuple(range(len(output), len(output) + len(summed)))
    return partial.sum(axis=axes, dtype=dtype, split_every=split_every)
