"""Generalized ufuncs on xsched arrays: ``apply_gufunc``, and ``apply_along_axis``.

A NumPy *signature* such as ``"(i),(i)->()"`` says which trailing axes of each argument a
function consumes whole (its *core* dimensions, ``i`` here) and which it produces; the
axes before them are *loop* dimensions, which broadcast against each other as in NumPy and
which the function handles for any length (it "vectorizes" over them). That makes the
function safe to run block by block along the loop dimensions, as long as every core
dimension is held in one block: ``apply_gufunc`` builds one task per block of the
broadcast loop dimensions (a ``blockwise`` layer), each calling the function on the
matching blocks of the arguments.

* A core dimension cut into several blocks is an error naming it, unless
  ``allow_rechunk=True``, which rechunks it into one block first (each task then holds
  the whole of that axis for its loop blocks).
* Core dimensions an output has that no input has need their length in ``output_sizes``.
* Several outputs (``"(i)->(),()"``): the function returns a tuple, computed once per
  block; each output array picks its part.
* ``vectorize=True`` wraps the function in ``numpy.vectorize`` with the signature, for
  functions written for one element of the loop dimensions.

xarray's ``apply_ufunc(..., dask="parallelized")`` runs this on xsched-backed data
(through ``xsched.array.xarray_chunks``).

>>> import numpy as np, xsched.array as xa
>>> x = xa.from_array(np.arange(12.0).reshape(4, 3), chunks=(2, 3))
>>> norms = xa.apply_gufunc(lambda v: np.sqrt((v * v).sum(axis=-1)), "(i)->()", x,
...                         output_dtypes=float)
>>> norms.chunks
((2, 2),)
>>> np.round(norms.compute(), 3).tolist()
[2.236, 7.071, 12.207, 17.378]
"""

from __future__ import annotations

import functools
import numbers
import operator
import re
from typing import Any, Callable, Sequence

import numpy as np

from ..graph.layers import chunk_key
from ..graph.spec import Ref, funcname
from .axes import axis_index
from .core import Array
from .mapping import _meta_dtype, block_layer
from .creation import asarray
from .index_notation import blockwise
from .rechunking import joined
from .manipulation import expand_dims, moveaxis

__all__ = ["apply_gufunc", "apply_along_axis", "parse_signature", "as_gufunc", "gufunc"]

_DIMS = re.compile(r"\(([^()]*)\)")


#: one side of a signature, as NumPy reads it: argument groups ``(dims)`` separated by commas
_SIDE = re.compile(r"\((\w+(,\w+)*)?\)(,\((\w+(,\w+)*)?\))*")


def parse_signature(signature: str) -> tuple[list[tuple[str, ...]], list[tuple[str, ...]]]:
    """The core dimensions of each input and each output of a gufunc signature.

    >>> parse_signature("(i,j),(j,k)->(i,k)")
    ([('i', 'j'), ('j', 'k')], [('i', 'k')])
    >>> parse_signature("(t)->(),()")
    ([('t',)], [(), ()])
    """
    text = signature.replace(" ", "")
    if text.count("->") != 1:
        raise ValueError(f"apply_gufunc: signature {signature!r} is not of the form "
                         "'(i),(i)->()': it needs one '->' between inputs and outputs")
    sides = text.split("->")
    out = []
    for side in sides:
        groups = _DIMS.findall(side)
        if not _SIDE.fullmatch(side):
            raise ValueError(f"apply_gufunc: cannot read {side!r} in signature {signature!r}: "
                             "write each argument's core dimensions in parentheses, "
                             "separated by commas, e.g. '(i,j),(j)->(i)'")
        out.append([tuple(d for d in g.split(",") if d) for g in groups])
    return out[0], out[1]


def _dtypes(output_dtypes: Any, n: int) -> list[np.dtype] | None:
    if output_dtypes is None:
        return None
    if n == 1 and not isinstance(output_dtypes, (list, tuple)):
        output_dtypes = [output_dtypes]
    output_dtypes = list(output_dtypes)
    if len(output_dtypes) != n:
        raise ValueError(f"apply_gufunc: output_dtypes gives {len(output_dtypes)} dtypes for "
                         f"{n} outputs")
    return [np.dtype(d) for d in output_dtypes]


def _distinct(core: Sequence[str]) -> tuple[str, ...]:
    """Core dimensions as blockwise indices: a dimension repeated in one argument (the square
    ``(m,m)``) gets a name per place, since each core dimension is one block anyway."""
    seen: dict[str, int] = {}
    out = []
    for d in core:
        out.append(d if d not in seen else f"{d}__{seen[d]}")
        seen[d] = seen.get(d, 0) + 1
    return tuple(out)


def _call_tuple(*blocks: Any, func: Callable, nout: int) -> tuple:
    """Run ``func`` on one set of blocks and check it returned ``nout`` outputs."""
    out = func(*blocks)
    if not isinstance(out, tuple) or len(out) != nout:
        raise ValueError(f"apply_gufunc: {funcname(func)} should return a tuple of {nout} "
                         f"arrays (the signature has {nout} outputs), got "
                         f"{type(out).__name__}")
    return out


def _infer(func: Callable, args: list, loop_ndims: list[int], nout: int,
           kwargs: dict) -> list[np.dtype]:
    """Output dtypes from one call on arguments whose loop dimensions have length 1."""
    dummies = []
    for a, nloop in zip(args, loop_ndims):
        shape = (1,) * nloop + tuple(n if n == n else 1 for n in a.shape[nloop:])  # (NaN: unknown)
        dummies.append(np.ones(shape, a.dtype))
    try:
        with np.errstate(all="ignore"):
            out = func(*dummies, **kwargs)
    except Exception as exc:
        raise ValueError(
            f"apply_gufunc: could not infer the output dtypes of {funcname(func)} by calling "
            f"it on small test arrays ({type(exc).__name__}: {exc}); pass output_dtypes=."
        ) from exc
    outs = out if nout > 1 else (out,)
    return [np.asarray(o).dtype for o in outs]


def apply_gufunc(func: Callable, signature: str, *args: Any, axes: Any = None,
                 axis: Any = None, keepdims: bool = False, output_dtypes: Any = None,
                 output_sizes: dict[str, int] | None = None, vectorize: bool = False,
                 allow_rechunk: bool = False, name: str | None = None, meta: Any = None,
                 **kwargs: Any) -> Array | tuple[Array, ...]:
    """Apply ``func``, a function with the NumPy gufunc ``signature``, block by block along
    the loop dimensions of ``args`` (see the module docstring).

    ``args``: xsched arrays, NumPy arrays (one block each) or scalars, each with its core
    dimensions last. ``output_dtypes``: one dtype, or one per output (inferred by a call on
    small test arrays when omitted). ``output_sizes``: ``{dimension: length}`` for output
    core dimensions that no input has. ``allow_rechunk``: rechunk core dimensions cut into
    several blocks into one (otherwise an error). ``vectorize``: wrap ``func`` in
    ``numpy.vectorize``. ``meta``: an empty array (or a tuple of them, one per output)
    whose dtype is the output's, as dask takes it. ``kwargs`` go to every call. Returns an
    array, or a tuple of arrays for several outputs.

    Core dimensions elsewhere than last, as NumPy's gufuncs take them: ``axes`` gives,
    per input and then per output, the axes of its core dimensions (a tuple, an int for
    one; the outputs may be left out when none has core dimensions); ``axis`` is the one
    axis of a signature whose inputs share a single core dimension; ``keepdims=True``
    keeps the reduced core axes in the outputs with length one.

    >>> import numpy as np, xsched.array as xa
    >>> x = xa.from_array(np.arange(8.0).reshape(2, 4), chunks=(1, 2))
    >>> def stats(v):
    ...     return v.mean(axis=-1), v.std(axis=-1)
    >>> mean, std = xa.apply_gufunc(stats, "(t)->(),()", x, output_dtypes=[float, float],
    ...                             allow_rechunk=True)
    >>> mean.compute().tolist(), std.compute().round(3).tolist()
    ([1.5, 5.5], [1.118, 1.118])
    >>> def outer(a, b):
    ...     return a[..., :, None] * b[..., None, :]
    >>> xa.apply_gufunc(outer, "(i),(j)->(i,j)", x, np.ones(3), output_dtypes=float,
    ...                 allow_rechunk=True).shape
    (2, 4, 3)
    >>> xa.apply_gufunc(lambda v: v.mean(axis=-1), "(i)->()", x, axis=0, keepdims=True,
    ...                 output_dtypes=float, allow_rechunk=True).compute().tolist()
    [[2.0, 3.0, 4.0, 5.0]]
    """
    if output_dtypes is None and meta is not None:
        output_dtypes = _meta_dtypes(meta)
    if axes is not None or axis is not None or keepdims:
        return _on_axes(func, signature, args, axes, axis, keepdims,
                        dict(output_dtypes=output_dtypes, output_sizes=output_sizes, vectorize=vectorize,
                             allow_rechunk=allow_rechunk, name=name, **kwargs))
    if not callable(func):
        raise TypeError(f"apply_gufunc: first argument must be a function, got {func!r}")
    ins, outs = parse_signature(signature)
    if len(ins) != len(args):
        raise ValueError(f"apply_gufunc: signature {signature!r} names {len(ins)} inputs, but "
                         f"{len(args)} arguments were given")
    nout = len(outs)
    output_sizes = dict(output_sizes or {})
    if vectorize:
        func = np.vectorize(func, signature=signature,
                            otypes=_dtypes(output_dtypes, nout))
    arrays = [a if isinstance(a, Array) else asarray(a) for a in args]

    # the length and the arrays' blocks along every core dimension
    core_len: dict[str, int] = {}
    loop_ndims = []
    for k, (a, core) in enumerate(zip(arrays, ins)):
        nloop = a.ndim - len(core)
        if nloop < 0:
            raise ValueError(f"apply_gufunc: argument {k} has {a.ndim} dimensions but its "
                             f"core dimensions {core} need at least {len(core)}")
        loop_ndims.append(nloop)
        for ax, d in zip(range(nloop, a.ndim), core):
            n = a.shape[ax]
            if d in core_len and n != core_len[d]:
                raise ValueError(f"apply_gufunc: core dimension {d!r} has length "
                                 f"{core_len[d]} in one argument and {n} in argument {k}; "
                                 "a core dimension has one length in every argument")
            core_len[d] = n
            if a.numblocks[ax] > 1:
                if not allow_rechunk:
                    raise ValueError(
                        f"apply_gufunc: core dimension {d!r} of argument {k} (axis {ax}) is cut "
                        f"into {a.numblocks[ax]} blocks {a.chunks[ax]}; a core dimension must "
                        f"be one block. Rechunk it (x.rechunk({{{ax}: -1}})) or pass "
                        "allow_rechunk=True.")
                a = joined(a, [ax], f"apply_gufunc (core dimension {d!r})")
        arrays[k] = a
    for out_core in outs:
        for d in out_core:
            if d not in core_len and d not in output_sizes:
                raise ValueError(f"apply_gufunc: output core dimension {d!r} is in no input; "
                                 f"give its length in output_sizes={{{d!r}: n}}")

    nloop_out = max(loop_ndims, default=0)
    loop_ind = tuple(f"__loop{i}" for i in range(nloop_out))
    pairs: list[Any] = []
    given: set = set()
    for a, core, nloop in zip(arrays, ins, loop_ndims):
        pairs += [a, loop_ind[nloop_out - nloop:] + _distinct(core)]
        given.update(_distinct(core))
    dtypes = _dtypes(output_dtypes, nout) or _infer(func, arrays, loop_ndims, nout, kwargs)
    label = name or funcname(func)
    # output core dimensions no input has (a repeated one, as in "(m)->(m,m)", counts apart)
    new_axes = {i: output_sizes[d] if d in output_sizes else core_len[d] for out_core in outs
                for i, d in zip(_distinct(out_core), out_core) if i not in given}

    call = functools.partial(func, **kwargs) if kwargs else func
    if nout == 1:
        out_core = _distinct(outs[0])
        return blockwise(call, loop_ind + out_core, *pairs, dtype=dtypes[0],
                         new_axes={d: new_axes[d] for d in out_core if d in new_axes},
                         concatenate=True, name=label)

    # several outputs: one task per block returns the tuple, each output picks its part
    parts = blockwise(functools.partial(_call_tuple, func=call, nout=nout), loop_ind, *pairs,
                      dtype=object, concatenate=True, name=label)
    results = []
    for k, (out_core, dtype) in enumerate(zip(outs, dtypes)):
        chunks = parts.chunks + tuple((core_len[d] if d in core_len else output_sizes[d],) for d in out_core)

        def block_arg(i: int, a: Array, out_index: tuple) -> Ref:
            return Ref(chunk_key(a.name, out_index[:nloop_out]))

        results.append(block_layer(operator.getitem, [parts, k], {}, chunks, dtype,
                                   block_arg, name=f"{label}-output{k}"))
    return tuple(results)


def _meta_dtypes(meta: Any) -> Any:
    """The output dtypes a ``meta=`` gives: an empty array's dtype, or a tuple of them."""
    if isinstance(meta, (tuple, list)):
        return [_meta_dtypes(m) for m in meta]
    return _meta_dtype(meta, "apply_gufunc", "output_dtypes=")


def _on_axes(func: Callable, signature: str, args: Sequence[Any], axes: Any, axis: Any, keepdims: bool,
             options: dict) -> Array | tuple[Array, ...]:
    """``apply_gufunc`` with core dimensions at ``axes`` (or ``axis``), not last: each
    input's core axes are moved last, the function applied, and each output's core axes
    moved to where ``axes`` puts them (``keepdims``: the reduced axes put back, of length 1)."""
    ins, outs = parse_signature(signature)
    nin, nout = len(ins), len(outs)
    arrays = [a if isinstance(a, Array) else asarray(a) for a in args]
    if len(arrays) != nin:
        raise ValueError(f"apply_gufunc: signature {signature!r} names {nin} inputs, but {len(arrays)} "
                         "arguments were given")
    if axis is not None:
        if axes is not None:
            raise TypeError("apply_gufunc: give axes= or axis=, not both")
        if any(len(core) != 1 for core in ins) or len(set(ins)) != 1 or any(outs):
            raise ValueError(f"apply_gufunc: axis= is for a signature whose inputs share one core dimension and "
                             f"whose outputs have none, not {signature!r}; use axes=")
        axes = [(axis,)] * nin
    if keepdims and (len(set(ins)) != 1 or any(outs)):
        raise ValueError(f"apply_gufunc: keepdims=True is for a signature whose inputs share their core "
                         f"dimensions and whose outputs have none, not {signature!r}")
    if axes is None:
        axes = [tuple(range(-len(core), 0)) for core in ins]
    axes = [(a,) if isinstance(a, numbers.Integral) else tuple(a) for a in axes]
    if len(axes) == nin and all(not core for core in outs):
        axes += [()] * nout
    if len(axes) != nin + nout:
        raise ValueError(f"apply_gufunc: axes= gives {len(axes)} entries; signature {signature!r} needs one per "
                         f"input and output ({nin} + {nout}), or one per input when no output has core dimensions")
    for k, (core, ax) in enumerate(zip(ins + outs, axes)):
        if len(ax) != len(core):
            what = f"input {k}" if k < nin else f"output {k - nin}"
            raise ValueError(f"apply_gufunc: axes= gives {len(ax)} axes for {what}, whose core dimensions are "
                             f"{core}")
    moved = []
    for a, ax in zip(arrays, axes[:nin]):
        src = [axis_index(i, a.ndim, "apply_gufunc") for i in ax]
        moved.append(moveaxis(a, src, list(range(a.ndim - len(ax), a.ndim))) if ax else a)
    result = apply_gufunc(func, signature, *moved, **options)
    results = list(result) if isinstance(result, tuple) else [result]
    first_in = arrays[0].ndim
    kept = sorted(axis_index(i, first_in, "apply_gufunc") for i in axes[0]) if keepdims else []
    for k, (out, ax) in enumerate(zip(results, axes[nin:])):
        if ax:
            dst = [axis_index(i, out.ndim, "apply_gufunc") for i in ax]
            out = moveaxis(out, list(range(out.ndim - len(ax), out.ndim)), dst)
        for i in kept:
            out = expand_dims(out, i)
        results[k] = out
    return tuple(results) if isinstance(result, tuple) else results[0]


class gufunc:
    """A function that takes NumPy gufunc ``signature``'s core dimensions and, called on
    xsched arrays, runs block by block through ``apply_gufunc`` with the keywords given
    here (``output_dtypes``, ``vectorize``, ``axes``, ``meta``...), as dask's
    ``da.gufunc``; ``as_gufunc`` makes one as a decorator.

    >>> import numpy as np, xsched.array as xa
    >>> def stats(x):
    ...     return np.mean(x, axis=-1), np.std(x, axis=-1)
    >>> gustats = xa.gufunc(stats, signature="(i)->(),()", output_dtypes=(float, float))
    >>> mean, std = gustats(xa.from_array(np.arange(12.0).reshape(3, 4), chunks=(1, 4)))
    >>> mean.compute().tolist()
    [1.5, 5.5, 9.5]
    """

    def __init__(self, pyfunc: Callable, *, signature: str | None = None, **kwargs: Any) -> None:
        if not callable(pyfunc):
            raise TypeError(f"gufunc: expected a function, got {pyfunc!r}")
        if not isinstance(signature, str):
            raise TypeError(f"gufunc: the signature must be a string such as '(i)->()', got {signature!r}")
        parse_signature(signature)  # (a malformed signature fails now)
        self.pyfunc, self.signature, self.kwargs = pyfunc, signature, kwargs
        functools.update_wrapper(self, pyfunc)

    def __call__(self, *args: Any, **more: Any) -> Any:
        return apply_gufunc(self.pyfunc, self.signature, *args, **{**self.kwargs, **more})

    def __repr__(self) -> str:
        return f"xsched.array.gufunc({funcname(self.pyfunc)}, signature={self.signature!r})"


def _along_axis(block: np.ndarray, func1d: Callable, axis: int, args: tuple, kwargs: dict,
                dtype: np.dtype, shape: tuple) -> np.ndarray:
    if 0 in block.shape[:axis] + block.shape[axis + 1:]:  # (no slice: an empty block of a mask's result)
        return np.empty(block.shape[:axis] + shape + block.shape[axis + 1:], dtype)
    return np.apply_along_axis(func1d, axis, block, *args, **kwargs).astype(dtype, copy=False)


def apply_along_axis(func1d: Callable, axis: int, arr: Any, *args: Any, dtype: Any = None,
                     shape: Any = None, **kwargs: Any) -> Any:
    """``func1d`` on every 1-d slice along ``axis``, as ``numpy.apply_along_axis``: the axis
    is rechunked into one block (each task holds it whole for its blocks of the other axes),
    and the axis becomes the shape of what ``func1d`` returns (found by calling it once on
    ones of the axis's length and the array's dtype, unless ``dtype`` and ``shape`` say).

    >>> import numpy as np, xsched.array as xa
    >>> x = xa.from_array(np.array([[3, 1, 2], [9, 7, 8]]), chunks=1)
    >>> xa.apply_along_axis(np.sort, 1, x).compute().tolist()
    [[1, 2, 3], [7, 8, 9]]
    >>> xa.apply_along_axis(lambda v: v[[0, -1]].sum(), 0, x).compute().tolist()
    [12, 8, 10]
    """
    x = asarray(arr)
    axis = axis_index(axis, x.ndim, "apply_along_axis")
    known = x.shape[axis]
    if known != known:
        raise ValueError("apply_along_axis: the axis's length is unknown (after a boolean mask); call "
                         "compute_chunk_sizes() first")
    if dtype is None or shape is None:
        sample = np.asarray(func1d(np.ones(known, x.dtype), *args, **kwargs))
        dtype = sample.dtype if dtype is None else dtype
        shape = sample.shape if shape is None else shape
    dtype, shape = np.dtype(dtype), tuple(shape)
    if len(x.chunks[axis]) > 1:
        x = joined(x, [axis], "apply_along_axis")
    chunks = x.chunks[:axis] + tuple((n,) for n in shape) + x.chunks[axis + 1:]
    drop, new = [axis] if not shape else [], list(range(axis + 1, axis + len(shape))) if len(shape) > 1 else []
    return x.map_blocks(_along_axis, func1d, axis, args, kwargs, dtype, shape, chunks=chunks, dtype=dtype,
                        drop_axis=drop, new_axis=new, name=f"apply_along_axis-{funcname(func1d)}")


def as_gufunc(signature: str | None = None, **kwargs: Any) -> Callable:
    """A decorator: the function, called on xsched arrays, runs through ``apply_gufunc``
    with ``signature`` and the keywords given here (``output_dtypes``, ``vectorize``, ...).

    >>> import numpy as np, xsched.array as xa
    >>> @xa.as_gufunc("(i)->()", output_dtypes=float)
    ... def spread(x):
    ...     return x.max(axis=-1) - x.min(axis=-1)
    >>> spread(xa.from_array(np.array([[1.0, 5.0], [2.0, 3.0]]), chunks=(1, 2))).compute().tolist()
    [4.0, 1.0]
    """
    if not isinstance(signature, str):
        raise TypeError(f"as_gufunc: the signature must be a string such as '(i)->()', got {signature!r}")
    parse_signature(signature)  # (a malformed signature fails now)

    def decorate(func: Callable) -> gufunc:
        return gufunc(func, signature=signature, **kwargs)
    return decorate
