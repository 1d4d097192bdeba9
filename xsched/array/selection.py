"""Where an array's elements are true: ``nonzero``, ``flatnonzero``, ``argwhere`` (and
``where(condition)``), in C order as NumPy gives them, with blocks of unknown length until
computed (see ``masking.py``)::

    x --ravel--> flatnonzero-<token>-i = np.flatnonzero(block_i) + where block i starts
    nonzero: np.unravel_index of those, one array per axis; argwhere: them stacked as rows
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..graph.layers import LayeredGraph, annotations_in_force, chunk_key, new_token, per_task
from ..graph.spec import Ref, Task
from .chunks import _starts
from .core import Array
from .creation import asarray
from .masking import known_chunks_needed

__all__ = ["flatnonzero", "nonzero", "argwhere"]


def _flat_positions(block: np.ndarray, start: int) -> np.ndarray:
    return np.flatnonzero(block) + start


def flatnonzero(x: Any) -> Any:
    """Positions in the raveled array (C order) of the elements that are not zero, as
    NumPy's ``flatnonzero``: a 1-d integer array with blocks of unknown length.

    >>> import numpy as np, xsched.array as xa
    >>> x = xa.from_array(np.array([[0, 3, 0], [4, 0, 5]]), chunks=1)
    >>> xa.flatnonzero(x).compute().tolist()
    [1, 3, 5]
    """
    x = x if isinstance(x, Array) else asarray(x)
    known_chunks_needed(x, "flatnonzero")
    flat = x.ravel() if x.ndim != 1 else x
    starts = _starts(flat.chunks[0])
    name = f"flatnonzero-{new_token(flat.name)}"
    ann = annotations_in_force()
    layer = {chunk_key(name, (i,)): Task(_flat_positions, (Ref(chunk_key(flat.name, (i,))), starts[i]), {},
                                         per_task(ann))
             for i in range(len(flat.chunks[0]))}
    return Array(LayeredGraph.merge(flat._graph, new={name: layer}), name,
                 ((math.nan,) * len(flat.chunks[0]),), np.intp)


def _unravel(block: np.ndarray, shape: tuple, axis: int) -> np.ndarray:
    return np.unravel_index(block, shape)[axis]


def nonzero(x: Any) -> tuple:
    """The indices of the elements that are not zero, one array per axis, in C order, as
    NumPy's ``nonzero`` (each with blocks of unknown length); ``xa.where(condition)`` too.

    >>> import numpy as np, xsched.array as xa
    >>> rows, cols = xa.nonzero(xa.from_array(np.array([[0, 3], [4, 0]]), chunks=1))
    >>> rows.compute().tolist(), cols.compute().tolist()
    ([0, 1], [1, 0])
    """
    x = x if isinstance(x, Array) else asarray(x)
    if x.ndim == 0:  # (NumPy's error)
        raise ValueError("Calling nonzero on 0d arrays is not allowed. Use xa.atleast_1d(scalar).nonzero() instead.")
    flat = flatnonzero(x)
    if x.ndim == 1:
        return (flat,)
    return tuple(flat.map_blocks(_unravel, tuple(x.shape), axis, dtype=np.intp) for axis in range(x.ndim))


def argwhere(x: Any) -> Any:
    """The indices of the elements that are not zero, one row per element, as NumPy's
    ``argwhere``: an array of shape ``(nan, x.ndim)``.

    >>> import numpy as np, xsched.array as xa
    >>> xa.argwhere(xa.from_array(np.array([[0, 3], [4, 0]]), chunks=1)).compute().tolist()
    [[0, 1], [1, 0]]
    """
    x = x if isinstance(x, Array) else asarray(x)
    flat = flatnonzero(x)
    name = f"argwhere-{new_token(flat.name)}"
    ann = annotations_in_force()
    layer = {chunk_key(name, (i, 0)): Task(_rows_of, (Ref(chunk_key(flat.name, (i,))), tuple(x.shape)), {},
                                           per_task(ann))
             for i in range(len(flat.chunks[0]))}
    return Array(LayeredGraph.merge(flat._graph, new={name: layer}), name, (flat.chunks[0], (x.ndim,)), np.intp)


def _rows_of(block: np.ndarray, shape: tuple) -> np.ndarray:
    if not shape:  # a 0-d array: a row of no coordinates if its one element is not zero
        return np.zeros((len(block), 0), np.intp)
    return np.stack(np.unravel_index(block, shape), axis=1)
