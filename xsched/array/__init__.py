"""Chunked numpy arrays for xsched: ``import xsched.array as xa``.

Arrays build task graphs; ``compute()`` runs them on the default client (or in this
process when there is none). Block keys read ``"<operation>-<token>-i.j.k"`` (see
``xsched.array.core``).

>>> import numpy as np, xsched.array as xa
>>> x = xa.from_array(np.arange(12.0).reshape(3, 4), chunks=(1, -1))
>>> y = x.map_blocks(lambda b: b * 2, dtype=x.dtype)
>>> y.sum(axis=0).compute().tolist()
[24.0, 30.0, 36.0, 42.0]
"""

from .core import Array, elemwise, from_array, map_blocks, normalize_chunks, ones, zeros
from .hdf5 import to_hdf5
from .reductions import max, mean, min, std, sum, var

__all__ = [
    "Array",
    "from_array",
    "map_blocks",
    "elemwise",
    "normalize_chunks",
    "ones",
    "zeros",
    "to_hdf5",
    "sum",
    "mean",
    "var",
    "std",
    "min",
    "max",
]
