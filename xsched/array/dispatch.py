"""NumPy's functions on xsched arrays (NEP 18, ``__array_function__``).

``np.sum(x)``, ``np.concatenate([x, y])``, ``np.linalg.norm(x)`` or ``np.fft.fft(x)`` with an
xsched ``Array`` among the arguments run xsched.array's own function of the same name: a
function of ``numpy`` runs the one of ``xsched.array``, one of ``numpy.linalg`` the one of
``xsched.array.linalg``, one of ``numpy.fft`` the one of ``xsched.array.fft`` and
``numpy.lib.stride_tricks.sliding_window_view`` the one of ``xsched.array.overlapping``. The result is
again a lazy ``Array``; nothing is computed.

The call is checked when it is made: a NumPy function xsched.array does not have, or an
argument its function does not take, raises a ``TypeError`` at once, naming the function and
the way out (``x.compute()`` first, or ``x.map_blocks(...)`` when the function works block
by block). Nothing silently pulls the whole array into the client.

Arguments are matched by NumPy's names, so positional arguments land where NumPy would put
them even where xsched.array orders its parameters otherwise (``np.sum(x, 0, None, None,
True)`` is ``xa.sum(x, axis=0, keepdims=True)``), and a keyword argument given with NumPy's
own default value, or one that changes nothing (``where=True``, ``casting="same_kind"``,
``order="C"``, ``out=None``), is dropped when the xsched function does not take it. NumPy
arrays may be mixed with xsched arrays wherever the xsched function takes NumPy arrays.
``np.shape``, ``np.ndim``, ``np.size``, ``np.result_type``, ``np.iscomplexobj`` and
``np.isrealobj`` are answered from the array's metadata. ``np.linalg.svd`` needs
``full_matrices=False`` written out (``REQUIRED``): xsched.array's gives the reduced factors.

Importing this module gives ``Array`` its ``__array_function__``; the package's
``__init__`` registers the ``xsched.array`` namespace with ``register_namespace``.

>>> import numpy as np, xsched.array as xa
>>> x = xa.from_array(np.arange(6.0).reshape(2, 3), chunks=(1, 2))
>>> y = np.mean(x, axis=0)
>>> type(y).__name__, y.compute().tolist()
('Array', [1.5, 2.5, 3.5])
>>> np.concatenate([x, np.ones((1, 3))]).compute()[-1].tolist()
[1.0, 1.0, 1.0]
>>> np.shape(x), np.ndim(x)
((2, 3), 2)
"""

from __future__ import annotations

import inspect
from types import ModuleType
from typing import Any, Callable

import numpy as np

from . import fft as _fft
from . import linalg as _linalg
from . import overlapping as _overlapping
from .core import Array

__all__ = ["register_namespace", "implementation", "array_function"]

#: NumPy's module name -> the xsched.array module holding its counterparts (the package's
#: own namespace is added by its ``__init__``).
NAMESPACES: dict[str, ModuleType] = {"numpy.linalg": _linalg, "numpy.fft": _fft,
                                     "numpy.lib.stride_tricks": _overlapping}

#: NumPy names whose xsched counterpart is called otherwise.
ALIASES: dict[str, str] = {"amax": "max", "amin": "min", "round_": "round",
                           "concat": "concatenate", "permute_dims": "transpose"}


#: Options whose value here changes nothing, though NumPy's default is a placeholder.
NEUTRAL: dict[str, Any] = {"where": True, "out": None, "casting": "same_kind", "order": "C"}


#: Options whose NumPy default xsched.array's function does not follow: the call must give
#: this value (which is then dropped), so the result has the shape NumPy promised.
REQUIRED: dict[tuple[str, str], dict[str, Any]] = {
    ("numpy.linalg", "svd"): {"full_matrices": False},
}


def _dtype_of(obj: Any) -> Any:
    return obj.dtype if isinstance(obj, Array) else obj


#: Functions answered from the metadata (shape, dtype) alone: nothing to compute.
METADATA: dict[Callable, Callable] = {
    np.shape: lambda a: a.shape if isinstance(a, Array) else np.shape(a),
    np.ndim: lambda a: a.ndim if isinstance(a, Array) else np.ndim(a),
    np.size: lambda a, axis=None: (a.size if axis is None else a.shape[axis])
    if isinstance(a, Array) else np.size(a, axis),
    np.result_type: lambda *arrays_and_dtypes: np.result_type(
        *[_dtype_of(a) for a in arrays_and_dtypes]),
    np.iscomplexobj: lambda x: issubclass(np.dtype(_dtype_of(x)).type, np.complexfloating)
    if isinstance(x, Array) else np.iscomplexobj(x),
    np.isrealobj: lambda x: not issubclass(np.dtype(_dtype_of(x)).type, np.complexfloating)
    if isinstance(x, Array) else np.isrealobj(x),
}


def register_namespace(numpy_module: str, namespace: ModuleType) -> None:
    """Make the public functions (``__all__``) of ``namespace`` answer the NumPy functions
    of ``numpy_module`` (``"numpy"``, ``"numpy.linalg"``, ...) called with xsched arrays.

    >>> import xsched.array as xa
    >>> from xsched.array import dispatch
    >>> dispatch.NAMESPACES["numpy"] is xa
    True
    """
    NAMESPACES[numpy_module] = namespace


def _numpy_name(func: Callable) -> tuple[str, str]:
    module = getattr(func, "__module__", None) or "numpy"
    return module, getattr(func, "__name__", repr(func))


def implementation(func: Callable) -> Callable | None:
    """xsched.array's function answering the NumPy function ``func``, or None.

    >>> import numpy as np, xsched.array as xa
    >>> from xsched.array.dispatch import implementation
    >>> implementation(np.linalg.norm) is xa.linalg.norm, implementation(np.resize)
    (True, None)
    """
    module, name = _numpy_name(func)
    namespace = NAMESPACES.get(module)
    if namespace is None:
        return None
    name = ALIASES.get(name, name) if not hasattr(namespace, name) else name
    if name not in getattr(namespace, "__all__", ()):
        return None
    target = getattr(namespace, name, None)
    if not callable(target) or isinstance(target, type):
        return None
    return target


def _shown(func: Callable) -> str:
    module, name = _numpy_name(func)
    return f"{module}.{name}"


def _missing(func: Callable) -> TypeError:
    shown = _shown(func)
    module, name = _numpy_name(func)
    where = {"numpy": "xsched.array"}.get(module, "xsched.array." + module.split(".")[-1]
                                          if module.startswith("numpy.") else "xsched.array")
    return TypeError(
        f"{shown} is not implemented for xsched arrays ({where} has no {name}), and it does "
        f"not run on the whole array in this process unasked. Either compute first and use "
        f"NumPy's: {shown}(x.compute(), ...); or, when {name} works block by block, apply it "
        f"to every block: x.map_blocks({shown}, ...) (see also xsched.array.blockwise)."
    )


def _keywords(func: Callable, target: Callable, args: tuple, kwargs: dict
              ) -> tuple[list, dict]:
    """The call of ``target`` matching the NumPy call ``func(*args, **kwargs)``."""
    try:
        np_sig = inspect.signature(func)
        bound = np_sig.bind(*args, **kwargs)
    except (TypeError, ValueError):
        return list(args), dict(kwargs)  # (no signature to go by: pass the call as it came)
    try:
        params = inspect.signature(target).parameters
    except (TypeError, ValueError):  # pragma: no cover - our functions all have one
        return list(args), dict(kwargs)
    kinds = inspect.Parameter
    ours = [p.name for p in params.values() if p.kind in (kinds.POSITIONAL_ONLY,
                                                          kinds.POSITIONAL_OR_KEYWORD)]
    call_args: list = []
    call_kwargs: dict = {}
    np_params = np_sig.parameters
    # extra positional arguments (``apply_along_axis(f, 0, x, extra)``) come after the
    # named ones, which must then be passed by position too
    extra = [n for n, p in np_params.items() if p.kind is kinds.VAR_POSITIONAL and bound.arguments.get(n)]
    before = list(np_params)[:list(np_params).index(extra[0])] if extra else []
    for pname, value in bound.arguments.items():
        p = np_params[pname]
        if pname in before:
            call_args.append(value)
        elif p.kind is kinds.VAR_POSITIONAL:
            call_args.extend(value)
        elif p.kind is kinds.VAR_KEYWORD:
            call_kwargs.update(value)
        elif pname in params and params[pname].kind in (kinds.POSITIONAL_OR_KEYWORD,
                                                        kinds.KEYWORD_ONLY):
            call_kwargs[pname] = value
        elif (not call_kwargs and len(call_args) < len(ours)
              and (ours[len(call_args)] == pname or ours[len(call_args)] not in np_params)):
            call_args.append(value)  # the same argument under another name (a: x, arrays: seq)
        elif (p.default is not kinds.empty and _same(value, p.default)) or (
                pname in NEUTRAL and _same(value, NEUTRAL[pname])):
            continue  # NumPy's default for an option xsched.array does not have
        else:
            call_kwargs[pname] = value  # (the binding in array_function names it)
    return call_args, call_kwargs


def _same(value: Any, default: Any) -> bool:
    if value is default:
        return True
    try:
        return type(value) is type(default) and bool(value == default)
    except Exception:
        return False


def array_function(func: Callable, types: tuple, args: tuple, kwargs: dict) -> Any:
    """``Array.__array_function__``: run xsched.array's counterpart of ``func`` with the
    call NumPy received (``types``: the argument types that define the protocol).

    >>> import numpy as np, xsched.array as xa
    >>> from xsched.array.dispatch import array_function
    >>> x = xa.arange(4, chunks=2)
    >>> array_function(np.cumsum, (xa.Array,), (x,), {}).compute().tolist()
    [0, 1, 3, 6]
    >>> array_function(np.resize, (xa.Array,), (x, 6), {})
    Traceback (most recent call last):
    ...
    TypeError: numpy.resize is not implemented for xsched arrays (xsched.array has no resize), ...
    """
    if not all(issubclass(t, (Array, np.ndarray)) for t in types):
        return NotImplemented  # another library's array: let it (or NumPy) answer
    if func in METADATA:
        return METADATA[func](*args, **kwargs)
    target = implementation(func)
    if target is None:
        raise _missing(func)
    required = REQUIRED.get(_numpy_name(func), {})
    if required:
        kwargs = dict(kwargs)
        for option, value in required.items():
            if option not in kwargs or not _same(kwargs[option], value):
                shown = _shown(func)
                raise TypeError(
                    f"{shown} on xsched arrays runs {_target_name(target, func)}, which gives "
                    f"the result of {option}={value!r}, not NumPy's default; write "
                    f"{shown}(x, {option}={value!r}) to have it.")
            del kwargs[option]
    call_args, call_kwargs = _keywords(func, target, args, kwargs)
    try:
        inspect.signature(target).bind(*call_args, **call_kwargs)
    except TypeError as exc:
        shown = _shown(func)
        name = _target_name(target, func)
        given = ", ".join([f"{k}={v!r}" for k, v in call_kwargs.items()])
        raise TypeError(
            f"{shown} on xsched arrays runs {name}, which does not take this call "
            f"({exc}; keyword arguments given: {given or 'none'}). Call {name} with the "
            f"arguments it documents, or compute first: {shown}(x.compute(), ...)."
        ) from None
    return target(*call_args, **call_kwargs)


def _target_name(target: Callable, func: Callable) -> str:
    module, _ = _numpy_name(func)
    prefix = "xsched.array" if module == "numpy" else "xsched.array." + module.split(".")[-1]
    return f"{prefix}.{target.__name__}"


def _array_function(self: Array, func: Callable, types: tuple, args: tuple,
                    kwargs: dict) -> Any:
    """NumPy's functions on this array run xsched.array's (NEP 18); see
    ``xsched.array.dispatch``.

    >>> import numpy as np, xsched.array as xa
    >>> np.sum(xa.ones((4, 4), chunks=2)).compute()
    np.float64(16.0)
    """
    return array_function(func, types, args, kwargs)


Array.__array_function__ = _array_function  # type: ignore[attr-defined]
