"""NumPy's element-wise functions as names of the namespace: ``xa.sin(x)``, ``xa.maximum(x, y)``.

Every NumPy ufunc that works element by element (``signature is None``) has a function
here of the same name, generated from the table ``DOMAINS``: ``xa.sin(x)`` calls
``np.sin(x)``, which runs ``Array.__array_ufunc__`` (one implementation: block by block,
lazy, ``dtype=`` as NumPy's, ``where=``/``out=`` only with their defaults, a tuple of arrays
for ``frexp``, ``modf`` and ``divmod``). Operands are xsched arrays, NumPy arrays, lists or
scalars broadcast together; when none is an xsched array, the array-like ones (or, all
being Python scalars, all) become one with ``asarray``, so the result is always lazy.

The Array API's (2023.12) names are among them, as they are NumPy 2's ufuncs too
(``acos``, ``atan2``, ``pow``, ``bitwise_invert``, ``bitwise_left_shift``, ``conj``, ...;
with an older NumPy they run its older names, ``OLDER_NAMES``). The functions say they are
``xsched.array``'s (``__module__``), so their doctests run with the package's.
(``real``, ``imag``, ``isclose`` and the other element-wise functions that are not ufuncs
are ``elementwise.py``'s.)
``astype``, ``isdtype``, ``can_cast``, ``finfo``, ``iinfo`` and ``result_type`` are
answered from dtypes (an xsched array stands for its dtype): nothing is computed.
``round`` and ``clip`` live in ``manipulation.py``. Because the package's ``__all__`` holds
these names, ``np.real(x)``, ``np.isclose(x, y)`` or ``np.astype(x, "f4")`` run them
(``xsched.array.dispatch``); ufuncs themselves never go that way.

>>> import numpy as np, xsched.array as xa
>>> x = xa.asarray([0.25, 1.0, 4.0], chunks=2)
>>> y = xa.sqrt(x) + xa.log2(x)          # lazy: an xsched array
>>> y.compute()
array([-1.5,  1. ,  4. ])
>>> xa.maximum(x, [1.0, 0.0, 5.0]).compute()
array([1., 1., 5.])
>>> xa.isdtype(x.dtype, "real floating"), xa.result_type(x, np.float32)
(True, dtype('float64'))
"""

from typing import Any, Callable

import numpy as np

from .core import Array, _operand, check_device
from .creation import asarray

#: Where each function's inputs are valid (its docstring's example draws from there):
#: domain -> the functions, by NumPy's names.
DOMAINS: dict[str, tuple[str, ...]] = {
    "real": (
        "abs", "absolute", "add", "arcsinh", "arctan", "arctan2", "asinh", "atan", "atan2",
        "cbrt", "ceil", "copysign", "cos", "cosh", "deg2rad", "degrees", "divide", "divmod",
        "equal", "exp", "exp2", "expm1", "fabs", "floor", "floor_divide", "fmax", "fmin",
        "fmod", "frexp", "greater", "greater_equal", "heaviside", "hypot", "isfinite",
        "isinf", "isnan", "less", "less_equal", "logaddexp", "logaddexp2", "logical_and",
        "logical_not", "logical_or", "logical_xor", "maximum", "minimum", "mod", "modf",
        "multiply", "negative", "nextafter", "not_equal", "positive", "rad2deg", "radians",
        "remainder", "rint", "sign", "signbit", "sin", "sinh", "spacing", "square",
        "subtract", "tan", "tanh", "true_divide", "trunc"),
    "power": ("float_power", "pow", "power"),  # (an integer to a negative power fails)
    "unit": ("acos", "arccos", "arcsin", "arctanh", "asin", "atanh"),  # |x| <= 1
    "from1": ("acosh", "arccosh"),  # x >= 1
    "positive": ("log", "log10", "log1p", "log2", "reciprocal", "sqrt"),
    "complex": ("conj", "conjugate"),
    "integer": (
        "bitwise_and", "bitwise_count", "bitwise_invert", "bitwise_left_shift", "bitwise_not",
        "bitwise_or", "bitwise_right_shift", "bitwise_xor", "gcd", "invert", "lcm",
        "left_shift", "right_shift"),  # (a second operand from 0 to a few bits)
    "datetime": ("isnat",),
    "exponent": ("ldexp",),  # floats times 2 to integer powers
}

#: A domain's example: the values of ``x``, their dtype (None: NumPy's), the second operand.
EXAMPLES: dict[str, tuple[list, str | None, Any]] = {
    "real": ([-1.5, 0.0, 2.5], None, 2.0),
    "power": ([-1.5, 0.0, 2.5], None, 2),
    "unit": ([-0.5, 0.0, 0.5], None, None),
    "from1": ([1.0, 2.0, 4.0], None, None),
    "positive": ([0.5, 1.0, 4.0], None, None),
    "complex": ([1 + 2j, 3 - 1j], None, None),
    "integer": ([1, 6, 12], None, 4),
    "datetime": (["2024-01-01", "NaT"], "datetime64[D]", None),
    "exponent": ([0.5, 1.0, 1.5], None, 3),
}

#: The Array API's names NumPy has from 2.0 on, and NumPy's older names of these ufuncs.
OLDER_NAMES: dict[str, str] = {
    "acos": "arccos", "acosh": "arccosh", "asin": "arcsin", "asinh": "arcsinh", "atan": "arctan",
    "atan2": "arctan2", "atanh": "arctanh", "bitwise_invert": "invert",
    "bitwise_left_shift": "left_shift", "bitwise_right_shift": "right_shift", "pow": "power"}


def numpy_ufunc(name: str) -> np.ufunc | None:
    """NumPy's ufunc behind ``xa.<name>`` (None for one this NumPy lacks, ``bitwise_count``
    before 2.0).

    >>> import numpy as np
    >>> from xsched.array.ufuncs import numpy_ufunc
    >>> numpy_ufunc("acos") is np.arccos
    True
    """
    return getattr(np, name, None) or getattr(np, OLDER_NAMES.get(name, name), None)


#: Function name -> its domain.
UFUNCS: dict[str, str] = {name: domain for domain, names in DOMAINS.items() for name in names
                          if numpy_ufunc(name) is not None}


def _operands(func: Callable, args: tuple) -> tuple:
    """``args`` with an xsched array among them, so that the ufunc answers lazily: when none
    is, ``asarray`` makes the array-like ones xsched arrays. Python scalars stay as they are
    (NumPy types them weakly, by the other operands), unless all operands are scalars."""
    if any(isinstance(a, Array) for a in args):
        return args
    weak = [isinstance(a, (bool, int, float, complex)) for a in args]
    if all(weak):
        return tuple(asarray(a) for a in args)
    return tuple(a if w else asarray(_operand(a, func)) for a, w in zip(args, weak))


def _summary(ufunc: np.ufunc) -> str:
    """The first sentence of NumPy's docstring of ``ufunc``."""
    paragraphs = (ufunc.__doc__ or "").split("\n\n")
    text = " ".join(paragraphs[1].split()) if len(paragraphs) > 1 else ""
    return (text.split(". ")[0].rstrip(".") or f"NumPy's {ufunc.__name__}, element-wise") + "."


def _example(name: str, ufunc: np.ufunc) -> str:
    """A doctest of ``xa.<name>`` on its domain's example, showing what NumPy gives."""
    values, dtype, other = EXAMPLES[UFUNCS[name]]
    x = np.array(values, dtype=dtype)
    source = f"np.array({values!r}, dtype={dtype!r})" if dtype else repr(values)
    args, call = ((x,), f"xa.{name}(x)") if ufunc.nin == 1 else ((x, other), f"xa.{name}(x, {other!r})")
    with np.errstate(all="ignore"):
        expected = ufunc(*args)
    if ufunc.nout > 1:
        shown, expected = f"[y.compute() for y in {call}]", list(expected)
    else:
        shown = f"{call}.compute()"
    return (">>> import numpy as np, xsched.array as xa\n"
            f">>> x = xa.asarray({source}, chunks=2)\n"
            f">>> {shown}\n{expected!r}\n")


def _docstring(name: str, ufunc: np.ufunc) -> str:
    alias = f" (another name of ``np.{ufunc.__name__}``)" if ufunc.__name__ != name else ""
    operands = ("``x`` is an xsched array, or anything ``asarray`` makes one of."
                if ufunc.nin == 1 else
                "``x1`` and ``x2`` are xsched arrays, NumPy arrays, lists or scalars, broadcast\n"
                "together (when neither is an xsched array, ``asarray`` makes one).")
    outputs = f"\nIt gives a tuple of {ufunc.nout} arrays, one per output." if ufunc.nout > 1 else ""
    return (f"{_summary(ufunc)}\n\n"
            f"``np.{name}({'x' if ufunc.nin == 1 else 'x1, x2'})`` on xsched arrays{alias}: "
            f"block by block, lazy.\n{operands}\n"
            f"``dtype=`` is NumPy's; ``where=`` and ``out=`` only take their defaults.{outputs}\n\n"
            + _example(name, ufunc))


def _call(ufunc: np.ufunc, args: tuple, dtype: Any, where: Any, out: Any) -> Any:
    """``ufunc(*args)`` on xsched arrays: ``Array.__array_ufunc__`` answers, refusing a mask
    ``where=`` and any ``out=`` (``out=None`` is left out: NumPy refuses it for a ufunc with
    several outputs)."""
    options = {"dtype": dtype, "where": where}
    if out is not None:
        options["out"] = out
    return ufunc(*_operands(ufunc, args), **options)


def _define(name: str) -> Callable:
    """The namespace's function ``name``: NumPy's ufunc of that name on its operands."""
    ufunc = numpy_ufunc(name)
    if ufunc.nin == 1:
        def func(x, /, *, dtype=None, where=True, out=None):
            return _call(ufunc, (x,), dtype, where, out)
    else:
        def func(x1, x2, /, *, dtype=None, where=True, out=None):
            return _call(ufunc, (x1, x2), dtype, where, out)
    func.__name__ = func.__qualname__ = name
    func.__module__ = "xsched.array"  # (so its doctest runs with the package's: xsched.array.sin)
    func.__doc__ = _docstring(name, ufunc)
    return func


for _name in UFUNCS:
    globals()[_name] = _define(_name)
del _name


# ------------------------------------------------------------------ dtypes, nothing computed


def _dtype_of(obj: Any) -> Any:
    return obj.dtype if isinstance(obj, Array) else obj


def astype(x: Any, dtype: Any, /, *, copy: bool = True, device: Any = None) -> Array:
    """``x`` cast to ``dtype``, block by block (the Array API's ``astype``; with ``copy=False``
    a cast to its own dtype is ``x`` itself, else a new array object, see ``Array.astype``).

    >>> import xsched.array as xa
    >>> xa.astype(xa.asarray([1.5, 2.5], chunks=1), "int32").compute()
    array([1, 2], dtype=int32)
    """
    check_device(device, "astype")
    return asarray(x).astype(dtype, copy=copy)


#: The Array API's kinds of dtypes, by NumPy's letters (``dtype.kind``).
KINDS: dict[str, str] = {"bool": "b", "signed integer": "i", "unsigned integer": "u",
                         "integral": "iu", "real floating": "f", "complex floating": "c",
                         "numeric": "iufc"}


def isdtype(dtype: Any, kind: Any) -> bool:
    """Whether ``dtype`` is of ``kind``: a dtype, a name of ``KINDS`` (``"real floating"``,
    ``"integral"``, ``"numeric"``, ...) or a tuple of them, as ``np.isdtype`` (which NumPy
    has from 2.0 on).

    >>> import numpy as np, xsched.array as xa
    >>> xa.isdtype(np.dtype("f4"), ("integral", "real floating")), xa.isdtype(np.int8, "bool")
    (True, False)
    """
    dtype = np.dtype(dtype)
    if isinstance(kind, tuple):
        return any(isdtype(dtype, k) for k in kind)
    if isinstance(kind, str):
        if kind not in KINDS:
            raise ValueError(f"isdtype: kind {kind!r} is none of {', '.join(map(repr, KINDS))}, "
                             "nor a dtype or a tuple of kinds")
        return dtype.kind in KINDS[kind]
    return dtype == np.dtype(kind)


def can_cast(from_: Any, to: Any, casting: str = "safe") -> bool:
    """Whether ``from_`` (a dtype, or an array: its dtype) casts to ``to`` under
    ``casting``, as ``np.can_cast``.

    >>> import xsched.array as xa
    >>> x = xa.asarray([1, 2], chunks=1)
    >>> xa.can_cast(x, "float64"), xa.can_cast(x, "int8"), xa.can_cast(x, "int8", "unsafe")
    (True, False, True)
    """
    return np.can_cast(_dtype_of(from_), _dtype_of(to), casting)


class FloatInfo:
    """``np.finfo``'s limits with the Array API's five as Python numbers (``bits``, ``eps``,
    ``max``, ``min``, ``smallest_normal``) and ``dtype`` (a complex dtype's real one);
    NumPy's other attributes (``tiny``, ``resolution``, ``precision``...) are NumPy's."""

    def __init__(self, info: np.finfo) -> None:
        self._info = info
        self.bits, self.dtype = int(info.bits), info.dtype
        self.eps, self.max, self.min = float(info.eps), float(info.max), float(info.min)
        self.smallest_normal = float(info.smallest_normal)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self._info, name)

    def __eq__(self, other: Any) -> bool:  # (equal to NumPy's finfo of the same dtype, as before)
        return self._info == (other._info if isinstance(other, FloatInfo) else other)

    def __hash__(self) -> int:
        return hash(self._info)

    def __repr__(self) -> str:
        return repr(self._info)


def finfo(type: Any, /) -> FloatInfo:
    """Machine limits of a floating dtype (or of an array's dtype), as ``np.finfo``, the
    Array API's attributes as Python floats.

    >>> import xsched.array as xa
    >>> xa.finfo(xa.asarray([1.0], dtype="f4")).eps
    1.1920928955078125e-07
    """
    return FloatInfo(np.finfo(_dtype_of(type)))


def iinfo(type: Any, /) -> np.iinfo:
    """Limits of an integer dtype (or of an array's dtype), as ``np.iinfo``.

    >>> import numpy as np, xsched.array as xa
    >>> xa.iinfo(np.int8).max, xa.iinfo(xa.asarray([1], dtype="u2")).max
    (127, 65535)
    """
    return np.iinfo(_dtype_of(type))


def result_type(*arrays_and_dtypes: Any) -> np.dtype:
    """The dtype NumPy gives an operation on these arrays (by their dtypes), dtypes and
    scalars, as ``np.result_type``.

    >>> import numpy as np, xsched.array as xa
    >>> xa.result_type(xa.asarray([1], dtype="i2"), np.float32), xa.result_type(np.int8, 1.0)
    (dtype('float32'), dtype('float64'))
    """
    return np.result_type(*[_dtype_of(a) for a in arrays_and_dtypes])


__all__ = [*UFUNCS, "astype", "isdtype", "can_cast", "finfo", "iinfo", "result_type"]
