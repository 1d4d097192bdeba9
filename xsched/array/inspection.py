"""The Array API's inspection namespace: ``xa.__array_namespace_info__()``; and NumPy's
``ndim`` and ``shape`` of any array, xsched's included, known without computing.

What a library written against the standard asks before it chooses dtypes or devices: the
capabilities (boolean indexing gives blocks of unknown length, which xsched arrays support;
data-dependent shapes likewise), the one device (``core.CPU``), and the dtypes of each kind.

>>> import xsched.array as xa
>>> info = xa.__array_namespace_info__()
>>> info.capabilities()["boolean indexing"], info.default_device(), info.default_dtypes()["real floating"]
(True, Device('cpu'), dtype('float64'))
>>> sorted(info.dtypes(kind="signed integer"))
['int16', 'int32', 'int64', 'int8']
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .core import CPU, Device, check_device

__all__ = ["Info", "__array_namespace_info__", "ndim", "shape"]


def ndim(a: Any) -> int:
    """The number of dimensions, as ``numpy.ndim`` (an xsched array's without computing).

    >>> import xsched.array as xa
    >>> xa.ndim(xa.ones((2, 3), chunks=1)), xa.ndim(5)
    (2, 0)
    """
    return int(a.ndim) if hasattr(a, "ndim") else int(np.ndim(a))


def shape(a: Any) -> tuple:
    """The shape, as ``numpy.shape`` (an xsched array's without computing; NaN for lengths
    a boolean mask left unknown).

    >>> import xsched.array as xa
    >>> xa.shape(xa.ones((2, 3), chunks=1)), xa.shape([[1, 2]])
    ((2, 3), (1, 2))
    """
    return tuple(a.shape) if hasattr(a, "shape") and hasattr(a, "ndim") else tuple(np.shape(a))

#: The standard's dtype kinds, and the names of each.
KINDS: dict[str, tuple[str, ...]] = {
    "bool": ("bool",),
    "signed integer": ("int8", "int16", "int32", "int64"),
    "unsigned integer": ("uint8", "uint16", "uint32", "uint64"),
    "real floating": ("float32", "float64"),
    "complex floating": ("complex64", "complex128"),
}
KINDS["integral"] = KINDS["signed integer"] + KINDS["unsigned integer"]
KINDS["numeric"] = KINDS["integral"] + KINDS["real floating"] + KINDS["complex floating"]


class Info:
    """The answers of the inspection namespace (the standard's method names)."""

    def __repr__(self) -> str:
        return "xsched.array inspection namespace (Array API 2023.12)"

    def capabilities(self) -> dict:
        """What the library does that the standard leaves optional.

        >>> Info().capabilities()["data-dependent shapes"]
        True
        """
        return {"boolean indexing": True, "data-dependent shapes": True}

    def default_device(self) -> Device:
        """The device arrays are made on: the only one, ``CPU``.

        >>> Info().default_device()
        Device('cpu')
        """
        return CPU

    def devices(self) -> list:
        """Every device: ``[CPU]``.

        >>> Info().devices()
        [Device('cpu')]
        """
        return [CPU]

    def default_dtypes(self, *, device: Any = None) -> dict:
        """The dtypes used when none is given, by kind, as NumPy's.

        >>> Info().default_dtypes()["integral"]
        dtype('int64')
        """
        _check(device)
        return {"real floating": np.dtype(np.float64), "complex floating": np.dtype(np.complex128),
                "integral": np.dtype(np.intp), "indexing": np.dtype(np.intp)}

    def dtypes(self, *, device: Any = None, kind: Any = None) -> dict:
        """The dtypes of a kind (a name, or a tuple of them; None: all), name -> dtype.

        >>> list(Info().dtypes(kind=("bool", "real floating")))
        ['bool', 'float32', 'float64']
        """
        _check(device)
        kinds = ("bool", "numeric") if kind is None else (kind,) if isinstance(kind, str) else tuple(kind)
        out: dict = {}
        for k in kinds:
            if k not in KINDS:
                raise ValueError(f"dtypes: unknown kind {k!r}; one of {', '.join(KINDS)}")
            out.update({name: np.dtype(name) for name in KINDS[k]})
        return out


def _check(device: Any) -> None:
    check_device(device, "__array_namespace_info__")


def __array_namespace_info__() -> Info:
    """The Array API's inspection namespace of ``xsched.array`` (see the module docstring).

    >>> import xsched.array as xa
    >>> xa.__array_namespace_info__().devices()
    [Device('cpu')]
    """
    return Info()
