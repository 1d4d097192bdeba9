"""``xa.fft``: NumPy's discrete Fourier transforms, block by block along axes held whole.

A transform along an axis needs every value along it, so each transformed axis must be one
chunk (``x.rechunk({axis: -1})`` makes it so; the error says which axis is cut). The other
axes stay cut as they are, and every block is transformed on its own by ``numpy.fft``: the
work is one task per block, and no data moves. The transformed axes get their new length
(``n``, or ``n // 2 + 1`` for ``rfft``...), as NumPy's do.

>>> import numpy as np, xsched.array as xa
>>> signal = np.sin(np.linspace(0, 8 * np.pi, 64)).reshape(4, 16)
>>> x = xa.from_array(signal, chunks=(2, 16))
>>> np.allclose(xa.fft.fft(x).compute(), np.fft.fft(signal))
True
>>> xa.fft.rfft(x).chunks
((2, 2), (9,))
"""

from __future__ import annotations

import operator
from typing import Any, Sequence

import numpy as np

from ..graph.layers import chunk_key
from ..graph.spec import Ref
from .axes import axis_index
from .core import Array, check_device
from .mapping import block_layer
from .creation import arange, asarray
from .manipulation import roll

__all__ = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fft2", "ifft2", "rfft2", "irfft2", "fftn", "ifftn",
           "rfftn", "irfftn", "fftshift", "ifftshift", "fftfreq", "rfftfreq", "fft_wrap"]

#: the kind of each transform: what becomes of the length of its last (or only) axis
_HALF = {"rfft", "ihfft", "rfft2", "rfftn"}  # n // 2 + 1 (real input, one-sided spectrum)
_REAL_BACK = {"irfft", "hfft", "irfft2", "irfftn"}  # n, or 2 * (m - 1) (back to real values)


def _whole(x: Array, axes: Sequence[int], name: str) -> tuple[int, ...]:
    """``axes`` as non-negative ints, each held whole in one chunk (else a ValueError naming the fix)."""
    out = [axis_index(a, x.ndim, f"fft.{name}") for a in axes]
    cut = sorted({a for a in out if len(x.chunks[a]) > 1})
    if cut:
        fix = ", ".join(f"{a}: -1" for a in cut)
        unknown = any(c != c for a in cut for c in x.chunks[a])  # (NaN: lengths after a boolean mask)
        raise ValueError(f"fft.{name}: axis {cut[0]} is cut into {len(x.chunks[cut[0]])} chunks "
                         f"{x.chunks[cut[0]]}; a transform needs the whole axis in one chunk: "
                         + ("x.compute_chunk_sizes()" if unknown else "x") + f".rechunk({{{fix}}})")
    return tuple(out)


def _transform(name: str, a: Any, s: Sequence[int | None], axes: Sequence[int], norm: str | None,
               one_axis: bool, func: Any = None, dtype: Any = None) -> Array:
    """``np.fft.<name>`` (or ``func``, a transform of that kind) on every block, the
    transformed axes given their new lengths (NaN, unknown, for an axis of unknown length
    given no ``n``)."""
    x = asarray(a)
    axes = _whole(x, axes, name)
    if len(s) != len(axes):
        raise ValueError(f"fft.{name}: {len(s)} lengths given for {len(axes)} axes")
    if norm not in (None, "backward", "ortho", "forward"):
        raise ValueError(f'fft.{name}: invalid norm value {norm!r}; should be "backward", "ortho" or "forward"')
    s = [None if n is None or n == -1 and not one_axis else operator.index(n) for n in s]  # (-1: the whole axis)
    lengths = {}
    for k, (axis, n) in enumerate(zip(axes, s)):
        m = x.shape[axis]
        last = k == len(axes) - 1
        if last and name in _HALF:
            lengths[axis] = (m if n is None else n) // 2 + 1
        elif last and name in _REAL_BACK:
            lengths[axis] = 2 * (m - 1) if n is None else n
        else:
            lengths[axis] = m if n is None else n
    if any(v < 1 for v in lengths.values()):
        raise ValueError(f"fft.{name}: a transformed axis would have no values (lengths {lengths}); give n=/s=")
    func = func or getattr(np.fft, name)
    given = any(n is not None for n in s)
    kwargs = {"n": s[0], "axis": axes[0]} if one_axis else {
        "s": [x.shape[a] if n is None and x.shape[a] == x.shape[a] else n for a, n in zip(axes, s)]
        if given else None, "axes": axes}
    if not one_axis and given and name in _REAL_BACK and s[-1] is None:
        kwargs["s"][-1] = lengths[axes[-1]]
    if dtype is None:
        probe = np.ones(tuple(3 if i in lengths else 1 for i in range(x.ndim)), x.dtype)
        dtype = func(probe, axis=axes[0]).dtype if one_axis else func(probe, axes=axes).dtype
    chunks = tuple((lengths[i],) if i in lengths else c for i, c in enumerate(x.chunks))
    if norm is not None:  # (left out otherwise: scipy.fftpack's transforms take no norm)
        kwargs["norm"] = norm
    return block_layer(func, [x], kwargs, chunks, dtype,
                       lambda i, arr, index: Ref(chunk_key(arr.name, index)), name=f"fft-{name}")


def _one(name: str, func: Any = None, dtype: Any = None):
    def transform(a: Any, n: int | None = None, axis: int = -1, norm: str | None = None) -> Array:
        return _transform(name, a, [n], (axis,), norm, one_axis=True, func=func, dtype=dtype)
    transform.__name__ = transform.__qualname__ = name
    transform.__doc__ = (f"``numpy.fft.{name}`` along ``axis``, which must be one chunk; the other axes keep "
                         f"their blocks.\n\n    >>> import numpy as np, xsched.array as xa\n"
                         f"    >>> v = np.arange(8.0) + 1j * (np.arange(8.0) % 3)\n"
                         f"    >>> v = v.real if {name!r} in ('rfft', 'ihfft') else v\n"
                         f"    >>> np.allclose(xa.fft.{name}(xa.from_array(v, chunks=8)).compute(), np.fft.{name}(v))\n"
                         f"    True\n")
    return transform


def _many(name: str, default_axes: tuple | None, func: Any = None, dtype: Any = None):
    def transform(a: Any, s: Sequence[int] | None = None, axes: Sequence[int] | None = default_axes,
                  norm: str | None = None) -> Array:
        x = asarray(a)
        if axes is None:  # (as NumPy: the last len(s) axes, or all of them)
            axes = tuple(range(-len(s), 0)) if s is not None else tuple(range(x.ndim))
        return _transform(name, x, list(s) if s is not None else [None] * len(axes), tuple(axes), norm,
                          one_axis=False, func=func, dtype=dtype)
    transform.__name__ = transform.__qualname__ = name
    transform.__doc__ = (f"``numpy.fft.{name}`` over ``axes``, each of which must be one chunk.\n\n"
                         f"    >>> import numpy as np, xsched.array as xa\n"
                         f"    >>> m = np.arange(16.0).reshape(4, 4)\n"
                         f"    >>> np.allclose(xa.fft.{name}(xa.from_array(m, chunks=(4, 4))).compute(), "
                         f"np.fft.{name}(m))\n    True\n")
    return transform


fft, ifft, rfft, irfft, hfft, ihfft = (_one(n) for n in ("fft", "ifft", "rfft", "irfft", "hfft", "ihfft"))
fft2, ifft2, rfft2, irfft2 = (_many(n, (-2, -1)) for n in ("fft2", "ifft2", "rfft2", "irfft2"))
fftn, ifftn, rfftn, irfftn = (_many(n, None) for n in ("fftn", "ifftn", "rfftn", "irfftn"))


_ONE_AXIS = ("fft", "ifft", "rfft", "irfft", "hfft", "ihfft")
_TWO_AXES = ("fft2", "ifft2", "rfft2", "irfft2")
_ALL_AXES = ("fftn", "ifftn", "rfftn", "irfftn")


def fft_wrap(fft_func: Any, kind: str | None = None, dtype: Any = None) -> Any:
    """Another library's transform (``scipy.fft.fft``, ``pyfftw``'s...) made to run block
    by block as the ones here, as dask's ``fft_wrap``: ``kind`` is which of NumPy's it
    stands for (default its name), which says how the transformed axes' lengths change;
    ``dtype`` spares the trial call that finds the output's. A transform whose lengths
    are not its name's (``scipy.fftpack.rfft`` keeps ``n`` values) needs the ``kind``
    that has its lengths (``kind="fft"``).

    >>> import numpy as np, xsched.array as xa
    >>> parallel_fft = xa.fft.fft_wrap(np.fft.fft)
    >>> v = np.arange(8.0)
    >>> np.allclose(parallel_fft(xa.from_array(v, chunks=8)).compute(), np.fft.fft(v))
    True
    """
    if not callable(fft_func):
        raise TypeError(f"fft_wrap: expected a transform function, got {fft_func!r}")
    kind = kind or getattr(fft_func, "__name__", None)
    if kind in _ONE_AXIS:
        wrapped = _one(kind, fft_func, dtype)
    elif kind in _TWO_AXES or kind in _ALL_AXES:
        wrapped = _many(kind, (-2, -1) if kind in _TWO_AXES else None, fft_func, dtype)
    else:
        raise ValueError(f"fft_wrap: kind {kind!r} is not one of NumPy's transforms "
                         f"({', '.join(_ONE_AXIS + _TWO_AXES + _ALL_AXES)}); pass kind=")
    wrapped.__name__ = wrapped.__qualname__ = getattr(fft_func, "__name__", kind)
    wrapped.__doc__ = f"``{getattr(fft_func, '__module__', '')}.{wrapped.__name__}`` block by block (fft_wrap)."
    return wrapped


def _roll_half(x: Any, axes: Any, sign: int) -> Array:
    x = asarray(x)
    axes = tuple(range(x.ndim)) if axes is None else ((axes,) if isinstance(axes, int) else tuple(axes))
    for axis in axes:
        x = roll(x, sign * (x.shape[axis] // 2), axis=axis)
    return x


def fftfreq(n: int, d: float = 1.0, *, chunks: Any = "auto", dtype: Any = None, device: Any = None) -> Array:
    """The frequencies of the ``n`` outputs of ``fft`` for samples ``d`` apart, as
    ``numpy.fft.fftfreq`` (made on the workers, like ``arange``).

    >>> import numpy as np, xsched.array as xa
    >>> xa.fft.fftfreq(5, d=0.5, chunks=2).compute().tolist()
    [0.0, 0.4, 0.8, -0.8, -0.4]
    """
    check_device(device, "fft.fftfreq")
    n = operator.index(n)
    if n < 1:
        raise ValueError(f"fft.fftfreq: n must be at least 1, got {n}")
    k = arange(n, chunks=chunks)
    out = (k - n * (k >= (n + 1) // 2)) / (n * d)
    return out if dtype is None else out.astype(dtype)


def rfftfreq(n: int, d: float = 1.0, *, chunks: Any = "auto", dtype: Any = None, device: Any = None) -> Array:
    """The frequencies of the ``n // 2 + 1`` outputs of ``rfft``, as ``numpy.fft.rfftfreq``.

    >>> import xsched.array as xa
    >>> xa.fft.rfftfreq(5, d=0.5).compute().tolist()
    [0.0, 0.4, 0.8]
    """
    check_device(device, "fft.rfftfreq")
    n = operator.index(n)
    if n < 1:
        raise ValueError(f"fft.rfftfreq: n must be at least 1, got {n}")
    out = arange(n // 2 + 1, chunks=chunks) / (n * d)
    return out if dtype is None else out.astype(dtype)


def fftshift(x: Any, axes: Any = None) -> Array:
    """The zero frequency moved to the middle (``numpy.fft.fftshift``); any chunking.

    >>> import numpy as np, xsched.array as xa
    >>> xa.fft.fftshift(xa.from_array(np.fft.fftfreq(6), chunks=4)).compute().tolist() == np.fft.fftshift(np.fft.fftfreq(6)).tolist()
    True
    """
    return _roll_half(x, axes, 1)


def ifftshift(x: Any, axes: Any = None) -> Array:
    """The inverse of ``fftshift`` (``numpy.fft.ifftshift``); any chunking.

    >>> import numpy as np, xsched.array as xa
    >>> v = np.arange(7)
    >>> xa.fft.ifftshift(xa.fft.fftshift(xa.from_array(v, chunks=3))).compute().tolist() == v.tolist()
    True
    """
    return _roll_half(x, axes, -1)
