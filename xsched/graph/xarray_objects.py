"""xarray objects as collections: ``xsched.compute(ds, da)``, ``xsched.persist`` and
``client.compute`` of an ``xarray.Dataset`` or ``DataArray`` whose variables hold xsched
arrays (``chunked_array_type="xsched"``).

xarray itself hands such objects to dask through dask's collection protocol, which xsched
does not speak; here an object is wrapped as one collection made of its lazy variables
(data and coordinates), whose graphs are computed together with the other collections
given, and the object is made again around the results: NumPy data once computed, arrays
backed by the results once persisted. Duck-typed: neither xarray nor ``xsched.array`` is
imported here.

>>> is_xarray_object([1, 2])
False
"""

from __future__ import annotations

from typing import Any, Callable

from .layers import collections_graph
from .optimize import flatten_keys

__all__ = ["is_xarray_object", "XarrayCollection"]


def is_xarray_object(obj: Any) -> bool:
    """Whether ``obj`` is an xarray Dataset or DataArray (by its type, without importing xarray)."""
    typ = type(obj)
    return typ.__module__.split(".")[0] == "xarray" and typ.__name__ in ("Dataset", "DataArray")


def _lazy(variable: Any) -> bool:
    data = getattr(variable, "_data", None)
    return hasattr(data, "__xsched_graph__") and not isinstance(data, type)


class XarrayCollection:
    """An xarray object's lazy variables as one collection (see the module docstring)."""

    def __init__(self, obj: Any) -> None:
        self.obj = obj
        lazy = [(name, variable._data) for name, variable in self._variables(obj) if _lazy(variable)]
        self.names, self.arrays = [name for name, _ in lazy], [array for _, array in lazy]

    @staticmethod
    def _variables(obj: Any) -> list:
        """(name, Variable) of every variable of ``obj``: a DataArray's own under None."""
        if type(obj).__name__ == "Dataset":
            return list(obj.variables.items())
        return [(None, obj.variable)] + list(obj.coords.variables.items())

    def __xsched_graph__(self) -> dict:
        return collections_graph(self.arrays)

    def __xsched_keys__(self) -> list:
        return [array.__xsched_keys__() for array in self.arrays]

    def _made_again(self, values: list) -> Any:
        """The object with its lazy variables' data replaced by ``values``, in order."""
        new = self.obj.copy(deep=False)
        variables = dict(self._variables(new))
        for name, value in zip(self.names, values):
            variables[name].data = value
        return new

    def __xsched_postcompute__(self) -> tuple[Callable, tuple]:
        return _computed, (self,)

    def __xsched_postpersist__(self) -> tuple[Callable, tuple]:
        return _persisted, (self,)

    def __repr__(self) -> str:
        return f"XarrayCollection(<{type(self.obj).__name__}>, {len(self.arrays)} lazy variables)"


def _computed(results: list, wrapped: XarrayCollection) -> Any:
    values = []
    for array, result in zip(wrapped.arrays, results):
        func, extra = array.__xsched_postcompute__()
        values.append(func(result, *extra))
    return wrapped._made_again(values)


def _persisted(graph: dict, wrapped: XarrayCollection) -> Any:
    values = []
    for array in wrapped.arrays:
        func, extra = array.__xsched_postpersist__()
        keys = set(flatten_keys(array.__xsched_keys__()))
        values.append(func({k: v for k, v in graph.items() if k in keys}, *extra))
    return wrapped._made_again(values)
