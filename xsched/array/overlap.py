"""``xa.overlap``: the neighbour functions under dask's module path, callable as the
function itself.

dask users write both ``da.overlap(x, ...)``-free code such as
``da.overlap.overlap(x, depth={0: 2}, boundary={0: "periodic"})`` and
``da.overlap.trim_internal(y, {0: 2})``, and ``from dask.array.overlap import
sliding_window_view``; xsched's ``xa.overlap(x, depth=...)`` is the function. This module
is both: calling it calls ``overlap``, and its attributes are the functions of
``overlapping.py`` (where they are written) and ``push``.

>>> import numpy as np, xsched.array as xa
>>> x = xa.from_array(np.arange(6), chunks=3)
>>> xa.overlap.overlap(x, depth=1, boundary="periodic").compute().tolist()
[5, 0, 1, 2, 3, 2, 3, 4, 5, 0]
>>> xa.overlap(x, depth=1, boundary="periodic").chunks
((5, 5),)
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import Any

from .core import Array
from .overlapping import map_overlap, overlap, sliding_window_view, trim_internal
from .scans import push

__all__ = ["overlap", "map_overlap", "trim_internal", "trim_overlap", "sliding_window_view", "push"]


def trim_overlap(x: Array, depth: Any, boundary: Any = None) -> Array:
    """``trim_internal`` under dask's other name: cut ``depth`` borrowed cells off every
    block (``boundary`` as the overlap was made; default ``"none"``).

    >>> import numpy as np, xsched.array as xa
    >>> y = xa.overlap(xa.from_array(np.arange(6), chunks=3), depth=1, boundary="none")
    >>> xa.overlap.trim_overlap(y, 1).compute().tolist()
    [0, 1, 2, 3, 4, 5]
    """
    return trim_internal(x, depth, "none" if boundary is None else boundary)


class _CallableModule(types.ModuleType):
    """This module's type: calling it is calling ``overlap``."""

    def __call__(self, x: Array, depth: Any, boundary: Any = "none") -> Array:
        return overlap(x, depth, boundary)

    def __reduce__(self) -> tuple:  # (sent to a worker by name, as a module is)
        return importlib.import_module, (self.__name__,)


sys.modules[__name__].__class__ = _CallableModule
