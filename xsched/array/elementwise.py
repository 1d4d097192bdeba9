"""NumPy's functions that go value by value without being ufuncs: ``nan_to_num``, ``angle``,
``fix``, ``sinc``, ``i0``, ``isposinf``, ``isneginf``, ``iscomplex``, ``isreal``,
``select``, ``choose``, ``piecewise``, ``unravel_index`` and ``ravel_multi_index``; ``real``,
``imag``, ``isclose`` and ``allclose``; ``frompyfunc``, any Python function of scalars made
element-wise (object results).

Each runs NumPy's own function on every block (one task per block, through ``elemwise`` or
``map_blocks``), with its arguments broadcast as NumPy broadcasts them; the dtype is the one
NumPy gives for an empty array of the input's dtype, or NumPy's promotion rules. Errors
that depend on the values (``choose`` with ``mode="raise"``, an index out of bounds for
``unravel_index``) come when computed, as NumPy's; those of the arguments (mismatched
lists, shapes) when the expression is written.

>>> import numpy as np, xsched.array as xa
>>> x = xa.from_array(np.array([np.nan, -np.inf, 1.5, np.inf]), chunks=3)
>>> xa.nan_to_num(x, posinf=9.0, neginf=-9.0).compute().tolist()
[0.0, -9.0, 1.5, 9.0]
>>> xa.select([x < 0, x > 1], [-x, x], default=-1).compute().tolist()
[-1.0, inf, 1.5, inf]
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from .reductions import _check_out
from .core import Array, elemwise
from .mapping import map_blocks
from .creation import asarray
from .manipulation import where
from .masking import known_chunks_needed
from .ufuncs import _operands, isnan

__all__ = ["frompyfunc", "nan_to_num", "angle", "fix", "sinc", "i0", "isposinf", "isneginf", "iscomplex",
           "isreal", "select", "choose", "piecewise", "unravel_index", "ravel_multi_index",
           "real", "imag", "isclose", "allclose"]


def _per_block(func: Callable, x: Any, name: str, **kwargs: Any) -> Array:
    """``func`` on every block, in the dtype it gives an empty array of ``x``'s dtype."""
    x = asarray(x)
    with np.errstate(all="ignore"):
        dtype = np.asarray(func(np.zeros(0, x.dtype), **kwargs)).dtype
    return map_blocks(func, x, dtype=dtype, name=name, **kwargs)


def nan_to_num(x: Any, copy: bool = True, nan: Any = 0.0, posinf: Any = None,
               neginf: Any = None) -> Array:
    """``x`` with NaN replaced by ``nan`` and infinities by ``posinf``/``neginf`` (default:
    the largest finite values), as ``numpy.nan_to_num``. ``copy`` changes nothing: blocks
    are never changed in place.

    >>> import numpy as np, xsched.array as xa
    >>> xa.nan_to_num(xa.from_array(np.array([np.nan, 2.0]))).compute().tolist()
    [0.0, 2.0]
    """
    fills = {"nan": nan, "posinf": posinf, "neginf": neginf}
    lazy = {k: v for k, v in fills.items() if isinstance(v, Array)}
    if not lazy:
        return _per_block(np.nan_to_num, x, "nan_to_num", **fills)
    for k, v in lazy.items():  # (a value computed by the graph, as x.sum(): a 0-d array)
        if v.ndim:
            raise ValueError(f"nan_to_num: {k}= takes one value; got an xsched array of shape {v.shape}")
    x = asarray(x)
    with np.errstate(all="ignore"):
        dtype = np.nan_to_num(np.zeros(0, x.dtype), **{k: (0 if k in lazy else v) for k, v in fills.items()}).dtype
    return elemwise(_nan_to_num_of, x, fills["nan"], fills["posinf"], fills["neginf"], dtype=dtype,
                    name="nan_to_num")


def _nan_to_num_of(block: np.ndarray, nan: Any, posinf: Any, neginf: Any) -> np.ndarray:
    """``numpy.nan_to_num`` of a block with fill values that came as 0-d blocks of their own."""
    values = {k: (v.item() if isinstance(v, np.ndarray) else v) for k, v in
              (("nan", nan), ("posinf", posinf), ("neginf", neginf))}
    return np.nan_to_num(block, **values)


def angle(z: Any, deg: bool = False) -> Array:
    """The angle of each complex value (in degrees with ``deg``), as ``numpy.angle``.

    >>> import numpy as np, xsched.array as xa
    >>> xa.angle(xa.from_array(np.array([1j, -1.0])), deg=True).compute().tolist()
    [90.0, 180.0]
    """
    return _per_block(np.angle, z, "angle", deg=bool(deg))


def fix(x: Any, out: Any = None) -> Array:
    """Each value rounded towards zero, as ``numpy.fix`` (the dtype stays ``x``'s).

    >>> import numpy as np, xsched.array as xa
    >>> xa.fix(xa.from_array(np.array([-2.5, 2.5]))).compute().tolist()
    [-2.0, 2.0]
    """
    _check_out(out, "fix")
    return _per_block(np.fix, x, "fix")


def sinc(x: Any) -> Array:
    """``sin(pi x) / (pi x)`` (1 at 0), as ``numpy.sinc``.

    >>> import numpy as np, xsched.array as xa
    >>> xa.sinc(xa.from_array(np.array([0.0, 1.0]))).compute().round(12).tolist()
    [1.0, 0.0]
    """
    return _per_block(np.sinc, x, "sinc")


def i0(x: Any) -> Array:
    """The modified Bessel function of the first kind, order 0, as ``numpy.i0``.

    >>> import numpy as np, xsched.array as xa
    >>> float(xa.i0(xa.from_array(np.array([0.0])))[0])
    1.0
    """
    return _per_block(np.i0, x, "i0")


def isposinf(x: Any, out: Any = None) -> Array:
    """Where ``x`` is positive infinity, as ``numpy.isposinf``.

    >>> import numpy as np, xsched.array as xa
    >>> xa.isposinf(xa.from_array(np.array([np.inf, -np.inf]))).compute().tolist()
    [True, False]
    """
    _check_out(out, "isposinf")
    return _per_block(np.isposinf, x, "isposinf")


def isneginf(x: Any, out: Any = None) -> Array:
    """Where ``x`` is negative infinity, as ``numpy.isneginf``.

    >>> import numpy as np, xsched.array as xa
    >>> xa.isneginf(xa.from_array(np.array([np.inf, -np.inf]))).compute().tolist()
    [False, True]
    """
    _check_out(out, "isneginf")
    return _per_block(np.isneginf, x, "isneginf")


def iscomplex(x: Any) -> Array:
    """Where the imaginary part is not zero, as ``numpy.iscomplex``.

    >>> import numpy as np, xsched.array as xa
    >>> xa.iscomplex(xa.from_array(np.array([1 + 1j, 2 + 0j]))).compute().tolist()
    [True, False]
    """
    return _per_block(np.iscomplex, x, "iscomplex")


def isreal(x: Any) -> Array:
    """Where the imaginary part is zero, as ``numpy.isreal``.

    >>> import numpy as np, xsched.array as xa
    >>> xa.isreal(xa.from_array(np.array([1 + 1j, 2 + 0j]))).compute().tolist()
    [False, True]
    """
    return _per_block(np.isreal, x, "isreal")


# --------------------------------------------------------------------------- choosing


def _dtype_of(value: Any) -> Any:
    """What ``numpy.result_type`` takes for ``value``: a Python number stays one (weak)."""
    if isinstance(value, Array):
        return value.dtype
    return value if np.isscalar(value) else np.asarray(value)


def select(condlist: Any, choicelist: Any, default: Any = 0) -> Array:
    """From each position, the value of the first choice whose condition holds there (else
    ``default``), as ``numpy.select``: a ``where`` per condition, from the last.

    >>> import numpy as np, xsched.array as xa
    >>> x = xa.arange(6, chunks=4)
    >>> xa.select([x < 2, x > 3], [x, x ** 2], default=-1).compute().tolist()
    [0, 1, -1, -1, 16, 25]
    """
    condlist, choicelist = list(condlist), list(choicelist)
    if len(condlist) != len(choicelist):
        raise ValueError(f"select: list of cases must be same length as list of conditions "
                         f"({len(choicelist)} and {len(condlist)})")
    if not condlist:
        raise ValueError("select with an empty condition list is not possible")
    dtype = np.result_type(*[_dtype_of(c) for c in choicelist], _dtype_of(default))
    for i, cond in enumerate(condlist):
        kind = cond.dtype if isinstance(cond, Array) else np.asarray(cond).dtype
        if kind != bool:
            raise TypeError(f"select: invalid entry {i} in condlist: should be boolean ndarray, "
                            f"got dtype {kind}")
    out = asarray(np.asarray(default).astype(dtype))  # (cast unsafely, as NumPy fills with it)
    for cond, choice in zip(reversed(condlist), reversed(choicelist)):
        out = where(cond, asarray(choice).astype(dtype), out)
    return out


def _choose(a: np.ndarray, *choices: np.ndarray, mode: str) -> np.ndarray:
    return np.choose(a, choices, mode=mode)


def choose(a: Any, choices: Any, out: Any = None, mode: str = "raise") -> Array:
    """From each position, the value of ``choices[a]`` there, as ``numpy.choose`` (``mode``:
    ``"raise"``, ``"wrap"`` or ``"clip"`` for indices out of range), all broadcast together.

    >>> import numpy as np, xsched.array as xa
    >>> a = xa.from_array(np.array([0, 1, 1, 0]), chunks=3)
    >>> xa.choose(a, [np.arange(4), np.arange(4) * 10]).compute().tolist()
    [0, 10, 20, 3]
    """
    _check_out(out, "choose")
    if mode not in ("raise", "wrap", "clip"):
        raise ValueError(f"choose: clipmode must be one of 'clip', 'raise', or 'wrap', "
                         f"got {mode!r}")
    a = asarray(a)
    if a.dtype.kind not in "iub":
        raise TypeError(f"choose: a must hold integers, got dtype {a.dtype}")
    choices = list(choices)
    dtype = np.result_type(*[_dtype_of(c) for c in choices])
    return elemwise(_choose, a, *choices, dtype=dtype, name="choose", mode=mode)


def _piecewise(x: np.ndarray, *conditions: np.ndarray, funclist: list, args: tuple,
               kw: dict) -> np.ndarray:
    return np.piecewise(x, list(conditions), funclist, *args, **kw)


def piecewise(x: Any, condlist: Any, funclist: Any, *args: Any, **kw: Any) -> Array:
    """``x`` with each function of ``funclist`` (or value) applied where its condition
    holds, as ``numpy.piecewise`` (one more function than conditions: where none holds),
    block by block.

    >>> import numpy as np, xsched.array as xa
    >>> x = xa.from_array(np.array([-2.0, -1.0, 3.0]), chunks=2)
    >>> xa.piecewise(x, [x < 0, x >= 0], [lambda v: -v, lambda v: v * 10]).compute().tolist()
    [2.0, 1.0, 30.0]
    """
    x = asarray(x)
    if isinstance(condlist, Array) or (not isinstance(condlist, (list, tuple))):
        condlist = [condlist]
    conditions = [asarray(c) for c in condlist]
    funclist = list(funclist)
    if len(funclist) not in (len(conditions), len(conditions) + 1):
        raise ValueError(f"piecewise: with {len(conditions)} condition(s), {len(conditions)} "
                         f"or {len(conditions) + 1} functions are needed; got {len(funclist)}")
    for c in conditions:
        if c.shape != x.shape and c.chunks != x.chunks:  # (unknown lengths: the same mask's blocks)
            raise ValueError(f"piecewise: each condition must have x's shape {x.shape}; got "
                             f"{c.shape}")
    return map_blocks(_piecewise, x, *conditions, funclist=funclist, args=args, kw=kw,
                      dtype=x.dtype, name="piecewise")


# --------------------------------------------------------------------------- flat indices


def _unravel(indices: np.ndarray, shape: tuple, order: str, axis: int) -> np.ndarray:
    return np.unravel_index(indices, shape, order=order)[axis]


def unravel_index(indices: Any, shape: Any, order: str = "C") -> tuple[Array, ...]:
    """The coordinates in an array of ``shape`` of the flat ``indices``, one array per axis,
    as ``numpy.unravel_index`` (an index out of bounds fails when computed).

    >>> import numpy as np, xsched.array as xa
    >>> rows, cols = xa.unravel_index(xa.from_array(np.array([1, 5, 7]), chunks=2), (3, 4))
    >>> rows.compute().tolist(), cols.compute().tolist()
    ([0, 1, 1], [1, 1, 3])
    """
    indices = asarray(indices)
    shape = (int(shape),) if np.ndim(shape) == 0 else tuple(int(s) for s in shape)
    if any(s < 0 for s in shape):
        raise ValueError(f"unravel_index: dimensions must be non-negative, got {shape}")
    np.unravel_index(np.zeros(0, indices.dtype), shape, order=order)  # (NumPy's errors)
    return tuple(map_blocks(_unravel, indices, shape=shape, order=order, axis=i,
                            dtype=np.intp, name="unravel_index") for i in range(len(shape)))


def _ravel(*index: np.ndarray, dims: tuple, mode: Any, order: str) -> np.ndarray:
    return np.ravel_multi_index(index, dims, mode=mode, order=order)


def ravel_multi_index(multi_index: Any, dims: Any, mode: Any = "raise",
                      order: str = "C") -> Array:
    """The flat indices in an array of shape ``dims`` of the coordinates ``multi_index``
    (one array per axis, broadcast together), as ``numpy.ravel_multi_index``.

    >>> import numpy as np, xsched.array as xa
    >>> rows = xa.from_array(np.array([0, 1, 2]), chunks=2)
    >>> xa.ravel_multi_index((rows, np.array([3, 0, 1])), (3, 4)).compute().tolist()
    [3, 4, 9]
    """
    multi_index = list(multi_index)
    dims = tuple(int(d) for d in dims)
    if len(multi_index) != len(dims):
        raise ValueError(f"ravel_multi_index: parameter multi_index must be a sequence of "
                         f"length {len(dims)}, got {len(multi_index)}")
    np.ravel_multi_index(tuple(np.zeros(0, np.intp) for _ in dims), dims, mode=mode,
                         order=order)  # (NumPy's errors for dims, mode, order)
    return elemwise(_ravel, *multi_index, dtype=np.intp, name="ravel_multi_index", dims=dims,
                    mode=mode, order=order)


# --------------------------------------------------------------------------- real, imag, isclose


def real(x: Any, /) -> Array:
    """The real part, element-wise, as ``np.real``: of the real dtype (float64 for
    complex128), ``x`` itself when it is not complex.

    >>> import xsched.array as xa
    >>> xa.real(xa.asarray([1 + 2j, 3 - 1j], chunks=1)).compute()
    array([1., 3.])
    """
    return asarray(x).real


def imag(x: Any, /) -> Array:
    """The imaginary part, element-wise, as ``np.imag``: of the real dtype, zeros of
    ``x``'s dtype when it is not complex.

    >>> import xsched.array as xa
    >>> xa.imag(xa.asarray([1 + 2j, 3 - 1j], chunks=1)).compute()
    array([ 2., -1.])
    """
    return asarray(x).imag


def isclose(a: Any, b: Any, rtol: Any = 1e-05, atol: Any = 1e-08, equal_nan: bool = False) -> Array:
    """Where ``a`` and ``b`` are equal within ``atol + rtol * abs(b)``, element-wise, as
    ``np.isclose`` (``rtol`` and ``atol`` may be arrays, broadcast with the others).

    >>> import numpy as np, xsched.array as xa
    >>> x = xa.asarray([1.0, np.nan, 3.0], chunks=2)
    >>> xa.isclose(x, [1.0 + 1e-9, np.nan, 3.1]).compute()
    array([ True, False, False])
    >>> xa.isclose(x, [1.0, np.nan, 3.1], equal_nan=True).compute()
    array([ True,  True, False])
    """
    a, b = _operands(np.isclose, (a, b))
    return elemwise(_isclose, a, b, rtol, atol, dtype=bool, name="isclose", equal_nan=equal_nan)


def _isclose(a: Any, b: Any, rtol: Any, atol: Any, equal_nan: bool = False) -> Any:
    return np.isclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan)


def allclose(a: Any, b: Any, rtol: Any = 1e-05, atol: Any = 1e-08, equal_nan: bool = False) -> Array:
    """Whether ``isclose(a, b, ...)`` holds everywhere, as ``np.allclose``, but lazy: a 0-d
    boolean array (``bool()`` of it computes it).

    >>> import xsched.array as xa
    >>> x = xa.asarray([1.0, 2.0, 3.0], chunks=2)
    >>> ok = xa.allclose(x, x + 1e-9)
    >>> ok.shape, bool(ok)
    ((), True)
    """
    return isclose(a, b, rtol, atol, equal_nan).all()


def array_equal(a1: Any, a2: Any, equal_nan: bool = False) -> Array:
    """Whether both have one shape and equal elements, as ``np.array_equal``, but lazy: a 0-d
    boolean array (shapes that differ give False without reading anything).

    >>> import numpy as np, xsched.array as xa
    >>> x = xa.asarray([1.0, np.nan], chunks=1)
    >>> bool(xa.array_equal(x, x)), bool(xa.array_equal(x, x, equal_nan=True)), bool(xa.array_equal(x, x[:1]))
    (False, True, False)
    """
    a1, a2 = asarray(a1), asarray(a2)
    known_chunks_needed(a1, "array_equal")
    known_chunks_needed(a2, "array_equal")
    if a1.shape != a2.shape:
        return asarray(np.False_)
    same = a1 == a2
    if equal_nan and a1.dtype.kind in "fc" and a2.dtype.kind in "fc":
        same = same | (isnan(a1) & isnan(a2))
    return same.all()


def array_equiv(a1: Any, a2: Any) -> Array:
    """Whether the two broadcast to one shape with equal elements, as ``np.array_equiv``
    (lazy, a 0-d boolean array; shapes that do not broadcast give False).

    >>> import xsched.array as xa
    >>> bool(xa.array_equiv(xa.asarray([[1, 2], [1, 2]], chunks=1), [1, 2]))
    True
    """
    a1, a2 = asarray(a1), asarray(a2)
    known_chunks_needed(a1, "array_equiv")
    known_chunks_needed(a2, "array_equiv")
    try:
        np.broadcast_shapes(a1.shape, a2.shape)
    except ValueError:
        return asarray(np.False_)
    return (a1 == a2).all()


def _boxed(value: Any) -> np.ndarray:
    """``value`` as an object array; a 0-d one holds whatever the function returned (a list too)."""
    if isinstance(value, np.ndarray):
        return value
    box = np.empty((), dtype=object)
    box[()] = value
    return box


def _pyfunc_block(*blocks: Any, func: Callable, nin: int, nout: int) -> Any:
    out = np.frompyfunc(func, nin, nout)(*blocks)
    return tuple(_boxed(o) for o in out) if nout > 1 else _boxed(out)


def _output(results: tuple, which: int) -> np.ndarray:
    return results[which]


class frompyfunc:  # noqa: N801 - NumPy's name
    """A Python function of ``nin`` scalars made element-wise over xsched arrays (and NumPy
    ones, broadcast), as ``numpy.frompyfunc``: the results are object arrays, a tuple of
    ``nout`` of them when ``nout > 1``. The function travels to the workers and runs per value.

    >>> import numpy as np, xsched.array as xa
    >>> join = xa.frompyfunc(lambda a, b: f"{a}-{b}", 2, 1)
    >>> join(xa.from_array(np.array([1, 2, 3]), chunks=2), 0).compute().tolist()
    ['1-0', '2-0', '3-0']
    """

    def __init__(self, func: Callable, nin: int, nout: int) -> None:
        if not callable(func):
            raise TypeError(f"frompyfunc: expected a function, got {func!r}")
        if int(nin) < 1 or int(nout) < 1:
            raise ValueError(f"frompyfunc: nin and nout must be at least 1, got {nin} and {nout}")
        self.func, self.nin, self.nout = func, int(nin), int(nout)
        self.__name__ = getattr(func, "__name__", "pyfunc")

    def __repr__(self) -> str:
        return f"xsched.array.frompyfunc({self.__name__}, nin={self.nin}, nout={self.nout})"

    def __call__(self, *args: Any) -> Any:
        if len(args) != self.nin:
            raise TypeError(f"{self.__name__}: takes {self.nin} arguments ({len(args)} given)")
        called = elemwise(_pyfunc_block, *args, dtype=object, name=self.__name__, func=self.func, nin=self.nin,
                          nout=self.nout)
        if self.nout == 1:
            return called
        # (one call per value gives every output: each output array picks its own from the tuples)
        return tuple(map_blocks(_output, called, i, dtype=object, name=f"{self.__name__}-{i}")
                     for i in range(self.nout))


def _interp(block: np.ndarray, xp: np.ndarray, fp: np.ndarray, left: Any, right: Any, period: Any) -> np.ndarray:
    return np.interp(block, xp, fp, left=left, right=right, period=period)


def interp(x: Any, xp: Any, fp: Any, left: Any = None, right: Any = None, period: Any = None) -> Array:
    """The piecewise-linear interpolation of every value of ``x`` in the table ``xp``, ``fp``,
    as ``numpy.interp``: block by block, the table (NumPy data, as small as NumPy's is) sent to
    every block.

    >>> import numpy as np, xsched.array as xa
    >>> np.interp(xa.arange(5, chunks=2) / 2, [0, 1, 2], [0, 10, 40]).compute().tolist()
    [0.0, 5.0, 10.0, 25.0, 40.0]
    """
    if isinstance(xp, Array) or isinstance(fp, Array):
        raise TypeError("interp: xp and fp are the table every block reads; give them as NumPy arrays "
                        "(compute them first: xp.compute())")
    xp, fp = np.asarray(xp), np.asarray(fp)
    # (NumPy's own refusals of a bad table, now; and the result's type)
    dtype = np.interp(np.zeros(1), xp, fp, left=left, right=right, period=period).dtype
    return map_blocks(_interp, asarray(x), xp, fp, left, right, period, dtype=dtype)

