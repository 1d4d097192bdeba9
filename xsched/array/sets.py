"""Set functions: ``unique`` (with counts) and ``isin``.

``unique`` finds each block's distinct values, then merges them in a tree (each task merges
at most ``split_every`` sorted partials), so no task holds more than a few blocks' distinct
values; the result is one block of unknown length (``nan``) until computed::

    unique-chunk-i    np.unique(block_i)                        (values, counts)
    unique-merge-...  the union of <= split_every partials       (counts added)
    unique-<token>    the values (and counts) as one block

``isin`` is element-wise against values held in every task.

>>> import numpy as np, xsched.array as xa
>>> x = xa.from_array(np.array([3, 1, 3, 2, 1, 3]), chunks=2)
>>> xa.unique(x).compute().tolist()
[1, 2, 3]
>>> values, counts = xa.unique(x, return_counts=True)
>>> values.compute().tolist(), counts.compute().tolist()
([1, 2, 3], [2, 1, 3])
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..graph.layers import LayeredGraph, annotations_in_force, chunk_key, new_token, per_task
from ..graph.spec import Ref, Task
from .core import Array, elemwise
from .creation import asarray

__all__ = ["unique", "isin"]

#: partials merged by one task of ``unique``'s tree
SPLIT_EVERY = 8


def _unique_chunk(block: np.ndarray) -> tuple:
    return np.unique(block.ravel(), return_counts=True)


def _unique_merge(parts: list) -> tuple:
    values = np.concatenate([p[0] for p in parts])
    counts = np.concatenate([p[1] for p in parts])
    merged, inverse = np.unique(values, return_inverse=True)
    return merged, np.bincount(inverse.ravel(), weights=counts, minlength=len(merged)).astype(np.intp)


def _pick(part: tuple, i: int) -> np.ndarray:
    return part[i]


def unique(x: Any, return_counts: bool = False, split_every: int | None = None) -> Any:
    """The sorted distinct values of ``x`` (all axes), as NumPy's ``unique``: a 1-d array of
    one block whose length is unknown until computed; with ``return_counts`` also how many
    times each occurs.

    >>> import numpy as np, xsched.array as xa
    >>> xa.unique(xa.from_array(np.array([[2, 2], [0, 2]]), chunks=1)).compute().tolist()
    [0, 2]
    """
    x = x if isinstance(x, Array) else asarray(x)
    split = SPLIT_EVERY if split_every is None else int(split_every)
    if split < 2:
        raise ValueError(f"unique: split_every must be at least 2, got {split_every!r}")
    token = new_token(x.name, split)
    ann = annotations_in_force()
    layers: dict = {}
    name = f"unique-chunk-{token}"
    keys = [chunk_key(x.name, index) for index in np.ndindex(*x.numblocks)]
    layers[name] = {f"{name}-{i}": Task(_unique_chunk, (Ref(k),), {}, per_task(ann)) for i, k in enumerate(keys)}
    level, prev = 0, list(layers[name])
    while len(prev) > 1:
        level += 1
        name = f"unique-merge-{new_token(token, level)}"
        layers[name] = {f"{name}-{j}": Task(_unique_merge, ([Ref(k) for k in prev[i:i + split]],), {}, per_task(ann))
                        for j, i in enumerate(range(0, len(prev), split))}
        prev = list(layers[name])
    if level == 0:  # one block: still merge once, so the result is (values, counts) as for many
        name = f"unique-merge-{new_token(token, 1)}"
        layers[name] = {f"{name}-0": Task(_unique_merge, ([Ref(prev[0])],), {}, per_task(ann))}
        prev = list(layers[name])
    graph = LayeredGraph.merge(x._graph, new=layers)
    out = []
    for i, (what, dtype) in enumerate((("unique", x.dtype), ("unique-counts", np.intp))):
        oname = f"{what}-{token}"
        layer = {chunk_key(oname, (0,)): Task(_pick, (Ref(prev[0]), i), {}, per_task(ann))}
        out.append(Array(LayeredGraph.merge(graph, new={oname: layer}), oname, ((math.nan,),), dtype))
    return (out[0], out[1]) if return_counts else out[0]


def isin(element: Any, test_elements: Any, invert: bool = False) -> Any:
    """Whether each element of ``element`` is in ``test_elements`` (values every task holds:
    a list, a NumPy array, or a small xsched array, which is computed first), as NumPy's
    ``isin``.

    >>> import numpy as np, xsched.array as xa
    >>> xa.isin(xa.from_array(np.arange(6), chunks=4), [1, 4, 9]).compute().tolist()
    [False, True, False, False, True, False]
    """
    element = element if isinstance(element, Array) else asarray(element)
    if isinstance(test_elements, Array):
        test_elements = test_elements.compute()
    values = np.unique(np.asarray(test_elements).ravel())
    return elemwise(np.isin, element, dtype=bool, name="isin", extra_args=(values,), invert=bool(invert))
