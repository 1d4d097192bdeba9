"""Products of arrays (``matmul``/``@``, ``dot``, ``tensordot``, ``outer``) and ``norm``;
the ``xa.linalg`` namespace, with ``qr``, ``svd``, ``lstsq`` and ``svd_compressed`` of tall
(or, for the last, any) matrices (``decompositions.py``), ``lu`` and ``solve_triangular`` of
one matrix over square blocks (``blocked.py``), and the Array API's functions of stacks of
small matrices (``inv``, ``solve``, ``det``, ``eigh``, ... in ``stacked.py``, which hand a
matrix cut into blocks to ``blocked.py``; ``svdvals``, ``pinv``, ``matrix_rank`` and
``matrix_norm`` of one through its SVD in ``singular.py``).

A product contracts axes: output block ``(i, j)`` of ``a @ b`` is the sum over ``k`` of
``a[i, k] @ b[k, j]``. The second operand is first rechunked so that its contracted axes are
cut like the first's. The terms of an output block are taken ``split_every`` at a time
(default 8); each such group is a chain of ``<op>-partial`` tasks, each adding one more
block product to the running sum of the one before, so a group holds one output-sized
block however long it is (a product per task with the sums apart held every product of an
output block at once: 1.2 GB per worker for an 8000 x 8000 ``x @ x``). The groups' sums
are added up in a tree (``<op>-sum``, as many levels as needed), so that a long contraction
(``x.T @ x`` of a tall ``x``) still runs in parallel. Shapes are checked when the product
is built: a mismatch names both shapes, as numpy does.

Importing this module adds ``@`` (``__matmul__``/``__rmatmul__``) and ``dot`` to ``Array``.

>>> import numpy as np, xsched.array as xa
>>> a = xa.from_array(np.arange(6.0).reshape(2, 3), chunks=1)
>>> (a @ a.T).compute().tolist()
[[5.0, 14.0], [14.0, 50.0]]
>>> float(xa.linalg.norm(xa.from_array(np.array([3.0, 4.0]), chunks=1)))
5.0
"""

from __future__ import annotations

import functools
import numbers
from typing import Any, Callable

import numpy as np

from ..graph.layers import LayeredGraph, annotations_in_force, chunk_key, new_token, per_task
from ..graph.spec import Ref, Task
from .axes import axis_tuple
from .core import UFUNC_IMPLEMENTATIONS, Array
from .creation import asarray
from .blocked import lu, solve_triangular  # (the xa.linalg namespace: factorizations live in rooms of their own)
from .decompositions import lstsq, qr, svd, svd_compressed
from .index_notation import blockwise
from .manipulation import ravel
from .singular import cond, matrix_norm, matrix_rank, pinv, singular_values, svdvals  # (one cut matrix too)
from .stacked import (cholesky, cross, det, diagonal, eigh, eigvalsh, inv,  # (stacks of small matrices)
                      matrix_power, matrix_transpose, slogdet, solve, trace, vecdot, vector_norm)

__all__ = ["matmul", "matvec", "vecmat", "dot", "multi_dot", "tensordot", "inner", "outer", "kron", "vdot", "norm", "qr",
           "svd", "lstsq", "svd_compressed", "cond",
           "lu", "solve_triangular",
           "cholesky", "cross", "det", "diagonal", "eigh", "eigvalsh", "inv", "matrix_norm", "matrix_power",
           "matrix_rank", "matrix_transpose", "pinv", "slogdet", "solve", "svdvals", "trace", "vecdot",
           "vector_norm"]

#: Block products added up per task when an output block needs many of them.
DEFAULT_SPLIT_EVERY = 8


def _add_up(parts: list) -> np.ndarray:
    return functools.reduce(np.add, parts)


def _accumulate(total: np.ndarray, x: np.ndarray, y: np.ndarray, func: Callable, args: tuple) -> np.ndarray:
    """``total`` plus one more block product, added into the product (a new array this task
    owns; ``total`` is another task's result and stays as it is): one block allocated per
    step, not two."""
    product = func(x, y, *args)
    if isinstance(product, np.ndarray) and product.shape == np.broadcast_shapes(product.shape, np.shape(total)) \
            and np.result_type(product, total) == product.dtype:
        return np.add(product, total, out=product)
    return np.add(total, product)


def _contract(op: str, a: Array, b: Array, func: Callable, args: tuple, chunks: tuple,
              pairs: Callable[[tuple], list[tuple[tuple, tuple]]], dtype: np.dtype,
              split_every: int | None) -> Array:
    """One output block per index of ``chunks``: ``func(a_block, b_block, *args)`` for each
    pair of block indices ``pairs(index)`` gives, added up in a tree."""
    split = int(split_every or DEFAULT_SPLIT_EVERY)
    if split < 2:
        raise ValueError(f"{op}: split_every must add at least 2 blocks per task, got {split}")
    token = new_token(op, a.name, b.name, args, chunks, str(dtype), split)
    out_name = f"{op}-{token}"
    ann = annotations_in_force()
    layers: dict[str, dict] = {}
    grid = tuple(len(c) for c in chunks)
    todo: dict[tuple, list] = {}
    partial: dict[str, Any] = {}
    for index in np.ndindex(*grid):
        terms = [(Ref(chunk_key(a.name, i)), Ref(chunk_key(b.name, j))) for i, j in pairs(index)]
        if len(terms) == 1:
            todo[index] = [Task(func, terms[0] + args, {}, per_task(ann))]
            continue
        refs = []
        for g in range(0, len(terms), split):  # a chain per group: one running sum held, not every product
            key = None
            for k, (x, y) in enumerate(terms[g:g + split], start=g):
                task = (Task(func, (x, y) + args, {}, per_task(ann)) if key is None else
                        Task(_accumulate, (Ref(key), x, y, func, args), {}, per_task(ann)))
                key = chunk_key(f"{op}-partial-{token}", index + (k,))
                partial[key] = task
            refs.append(Ref(key))
        todo[index] = refs
    if partial:
        layers[f"{op}-partial-{token}"] = partial
    level = 0
    while any(len(v) > split for v in todo.values()):
        level += 1
        name = f"{op}-sum-{new_token(token, level)}"
        layer: dict[str, Any] = {}
        for index, refs in todo.items():
            if len(refs) <= split:
                continue
            groups = [refs[i:i + split] for i in range(0, len(refs), split)]
            todo[index] = []
            for g, group in enumerate(groups):
                key = chunk_key(name, index + (g,))
                layer[key] = Task(_add_up, (group,), {}, per_task(ann))
                todo[index].append(Ref(key))
        layers[name] = layer
    final: dict[str, Any] = {}
    for index, refs in todo.items():
        only = refs[0] if len(refs) == 1 and isinstance(refs[0], Task) else None
        final[chunk_key(out_name, index)] = only or Task(_add_up, (refs,), {}, per_task(ann))
    layers[out_name] = final
    return Array(LayeredGraph.merge(a._graph, b._graph, new=layers), out_name, chunks, dtype)


def _axes_list(axes: Any, ndim: int, which: str) -> list[int]:
    return list(axis_tuple(axes, ndim, f"tensordot ({which} operand)"))


def tensordot(a: Any, b: Any, axes: Any = 2, *, split_every: int | None = None) -> Array:
    """Sum products over the given axes, as ``numpy.tensordot``: ``axes`` is an int (the last
    ``axes`` axes of ``a`` with the first of ``b``) or a pair of axis lists.

    >>> import numpy as np, xsched.array as xa
    >>> a = xa.from_array(np.arange(24.0).reshape(2, 3, 4), chunks=2)
    >>> b = xa.from_array(np.ones((4, 3)), chunks=2)
    >>> xa.tensordot(a, b, axes=([1, 2], [1, 0])).compute().tolist()
    [66.0, 210.0]
    """
    a, b = asarray(a), asarray(b)
    if isinstance(axes, numbers.Integral):
        if axes < 0 or axes > min(a.ndim, b.ndim):
            raise ValueError(f"tensordot: axes={axes} does not fit shapes {a.shape} and "
                             f"{b.shape}")
        a_axes, b_axes = list(range(a.ndim - axes, a.ndim)), list(range(axes))
    else:
        first, second = axes
        a_axes, b_axes = _axes_list(first, a.ndim, "first"), _axes_list(second, b.ndim, "second")
    if len(a_axes) != len(b_axes):
        raise ValueError(f"tensordot: {len(a_axes)} axes of the first operand cannot pair "
                         f"with {len(b_axes)} of the second")
    for i, j in zip(a_axes, b_axes):
        if not _aligned("tensordot", a, b, i, j):
            raise ValueError(f"shape-mismatch for sum: tensordot of shapes {a.shape} and "
                             f"{b.shape}: axis {i} of the first has length {a.shape[i]} but "
                             f"axis {j} of the second has length {b.shape[j]}")
    want = {j: a.chunks[i] for i, j in zip(a_axes, b_axes)}
    if any(b.chunks[j] != c for j, c in want.items()):
        b = b.rechunk(want)
    free_a = [ax for ax in range(a.ndim) if ax not in a_axes]
    free_b = [ax for ax in range(b.ndim) if ax not in b_axes]
    chunks = tuple(a.chunks[ax] for ax in free_a) + tuple(b.chunks[ax] for ax in free_b)
    k_grid = tuple(a.numblocks[ax] for ax in a_axes)
    dtype = np.tensordot(np.ones((1,) * a.ndim, a.dtype), np.ones((1,) * b.ndim, b.dtype),
                         axes=(a_axes, b_axes)).dtype

    def pairs(index: tuple) -> list:
        out = []
        for k in np.ndindex(*k_grid):
            ia, ib = [0] * a.ndim, [0] * b.ndim
            for ax, i in zip(free_a, index):
                ia[ax] = i
            for ax, i in zip(free_b, index[len(free_a):]):
                ib[ax] = i
            for i, j, kk in zip(a_axes, b_axes, k):
                ia[i] = ib[j] = kk
            out.append((tuple(ia), tuple(ib)))
        return out

    return _contract("tensordot", a, b, np.tensordot, ((a_axes, b_axes),), chunks, pairs,
                     dtype, split_every)


def _not_aligned(what: str, a: Array, b: Array, i: int, j: int) -> ValueError:
    return ValueError(f"{what}: shapes {a.shape} and {b.shape} not aligned: {a.shape[i]} "
                      f"(dim {i}) != {b.shape[j]} (dim {j})")


def _aligned(what: str, a: Array, b: Array, i: int, j: int) -> bool:
    """Whether axis ``i`` of ``a`` and ``j`` of ``b`` can be summed over together: equal
    lengths or, where a length is unknown (after a boolean mask), the very same blocks (the
    same mask's result, as element-wise operations ask); blocks of unknown length that
    differ raise, saying how to learn them."""
    if a.shape[i] == b.shape[j]:
        return True
    if a.shape[i] == a.shape[i] and b.shape[j] == b.shape[j]:
        return False
    if a.chunks[i] == b.chunks[j]:
        return True
    raise ValueError(f"{what}: shapes {a.shape} and {b.shape}: dim {i} of the first has blocks "
                     f"{a.chunks[i]} and dim {j} of the second {b.chunks[j]}, of lengths unknown "
                     "(from a boolean mask) that cannot be matched; call compute_chunk_sizes() "
                     "on them first")


def matmul(a: Any, b: Any, *, split_every: int | None = None) -> Array:
    """The matrix product, as ``numpy.matmul`` (``a @ b``): 1-d operands act as a row or a
    column, leading axes are stacks of matrices that broadcast.

    >>> import numpy as np, xsched.array as xa
    >>> a = xa.from_array(np.arange(4.0).reshape(2, 2), chunks=1)
    >>> xa.matmul(a, np.array([1.0, 1.0])).compute().tolist()
    [1.0, 5.0]
    >>> xa.matmul(a, np.ones((3, 2)))
    Traceback (most recent call last):
    ...
    ValueError: matmul: shapes (2, 2) and (3, 2) not aligned: 2 (dim 1) != 3 (dim 0)
    """
    a, b = asarray(a), asarray(b)
    for n, x in enumerate((a, b)):
        if x.ndim == 0:
            raise ValueError(f"matmul: Input operand {n} does not have enough dimensions "
                             f"(shape {x.shape}); multiply by a scalar with *")
    if not _aligned("matmul", a, b, a.ndim - 1, max(b.ndim - 2, 0)):
        raise _not_aligned("matmul", a, b, a.ndim - 1, max(b.ndim - 2, 0))
    if min(a.ndim, b.ndim) == 1 and max(a.ndim, b.ndim) <= 2:  # (no stacks: no axis to add and drop)
        return tensordot(a, b, axes=([a.ndim - 1], [0]), split_every=split_every)
    a2 = a[None, :] if a.ndim == 1 else a
    b2 = b[:, None] if b.ndim == 1 else b
    try:
        batch = np.broadcast_shapes(a2.shape[:-2], b2.shape[:-2])
    except ValueError:
        raise ValueError(f"matmul: the stacks of shapes {a.shape} and {b.shape} do not "
                         "broadcast together") from None
    nb = len(batch)
    a2 = a2[(None,) * (nb + 2 - a2.ndim)] if a2.ndim < nb + 2 else a2
    b2 = b2[(None,) * (nb + 2 - b2.ndim)] if b2.ndim < nb + 2 else b2
    want = {ax: a2.chunks[ax] for ax in range(nb) if a2.shape[ax] == b2.shape[ax]}
    want[nb] = a2.chunks[nb + 1]
    if any(b2.chunks[ax] != c for ax, c in want.items()):
        b2 = b2.rechunk(want)
    chunks = tuple(a2.chunks[ax] if a2.shape[ax] == batch[ax] else b2.chunks[ax]
                   for ax in range(nb)) + (a2.chunks[nb], b2.chunks[nb + 1])
    dtype = np.matmul(np.ones((1, 1), a.dtype), np.ones((1, 1), b.dtype)).dtype

    def pairs(index: tuple) -> list:
        sa = tuple(i if a2.shape[ax] == batch[ax] else 0 for ax, i in enumerate(index[:nb]))
        sb = tuple(i if b2.shape[ax] == batch[ax] else 0 for ax, i in enumerate(index[:nb]))
        return [(sa + (index[nb], k), sb + (k, index[nb + 1]))
                for k in range(a2.numblocks[nb + 1])]

    out = _contract("matmul", a2, b2, np.matmul, (), chunks, pairs, dtype, split_every)
    if a.ndim == 1:
        out = out[..., 0, :]
    if b.ndim == 1:
        out = out[..., 0]
    return out


def dot(a: Any, b: Any, *, split_every: int | None = None) -> Array:
    """The dot product, as ``numpy.dot``: scalars multiply, 1-d arrays give the inner
    product, otherwise the last axis of ``a`` meets the second-to-last of ``b``.

    >>> import numpy as np, xsched.array as xa
    >>> v = xa.from_array(np.array([1.0, 2.0, 3.0]), chunks=2)
    >>> float(xa.dot(v, v))
    14.0
    """
    a, b = asarray(a), asarray(b)
    if a.ndim == 0 or b.ndim == 0:
        return a * b
    j = max(b.ndim - 2, 0)
    if not _aligned("dot", a, b, a.ndim - 1, j):
        raise _not_aligned("dot", a, b, a.ndim - 1, j)
    return tensordot(a, b, axes=([a.ndim - 1], [j]), split_every=split_every)


def multi_dot(arrays: Any, *, out: Any = None) -> Array:
    """The product of a chain of matrices, as ``numpy.linalg.multi_dot``: multiplied in the
    order that costs the fewest scalar products (from the shapes, when built); the first
    array may be a 1-d row vector and the last a 1-d column vector.

    >>> import numpy as np, xsched.array as xa
    >>> a, b = xa.ones((10, 100), chunks=50), xa.ones((100, 5), chunks=50)
    >>> xa.linalg.multi_dot([a, b, np.ones(5)]).compute().tolist()[:3]
    [500.0, 500.0, 500.0]
    """
    if out is not None:
        raise TypeError("multi_dot: out= is not offered (xsched arrays are not written in place); "
                        "assign the result instead")
    arrays = [asarray(a) for a in arrays]
    if len(arrays) < 2:
        raise ValueError("multi_dot: Expecting at least two arrays.")
    if len(arrays) == 2:
        return dot(arrays[0], arrays[1])
    row, column = arrays[0].ndim == 1, arrays[-1].ndim == 1
    if row:
        arrays[0] = arrays[0][None, :]
    if column:
        arrays[-1] = arrays[-1][:, None]
    for a in arrays:
        if a.ndim != 2:
            raise np.linalg.LinAlgError(f"multi_dot: {a.ndim}-dimensional array given. Array must be "
                                        "two-dimensional")
    split = _chain_order([a.shape[0] for a in arrays] + [arrays[-1].shape[1]])

    def product(i: int, j: int) -> Array:
        return arrays[i] if i == j else dot(product(i, split[i][j]), product(split[i][j] + 1, j))

    result = product(0, len(arrays) - 1)
    return result[0, 0] if row and column else result[0] if row else result[:, 0] if column else result


def _chain_order(sizes: list[int]) -> list[list[int]]:
    """Where to split each sub-chain ``i..j`` of matrices (matrix ``k`` is ``sizes[k] x
    sizes[k + 1]``) so that the whole chain costs the fewest scalar products: the classic
    dynamic programme over chain lengths."""
    n = len(sizes) - 1
    cost = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i][j] = -1
            for k in range(i, j):
                here = cost[i][k] + cost[k + 1][j] + sizes[i] * sizes[k + 1] * sizes[j + 1]
                if cost[i][j] < 0 or here < cost[i][j]:
                    cost[i][j], split[i][j] = here, k
    return split


def inner(a: Any, b: Any) -> Array:
    """Sum of products over the last axes of ``a`` and ``b``, as ``numpy.inner``.

    >>> import numpy as np, xsched.array as xa
    >>> xa.inner(xa.from_array(np.eye(2), chunks=1), np.array([1.0, 2.0])).compute().tolist()
    [1.0, 2.0]
    """
    a, b = asarray(a), asarray(b)
    if a.ndim == 0 or b.ndim == 0:
        return a * b
    if not _aligned("inner", a, b, a.ndim - 1, b.ndim - 1):
        raise _not_aligned("inner", a, b, a.ndim - 1, b.ndim - 1)
    return tensordot(a, b, axes=([a.ndim - 1], [b.ndim - 1]))


def outer(a: Any, b: Any) -> Array:
    """Every product ``a[i] * b[j]`` of the flattened inputs, as ``numpy.outer``.

    >>> import numpy as np, xsched.array as xa
    >>> xa.outer(xa.arange(3, chunks=2), np.array([1, 10])).compute().tolist()
    [[0, 0], [1, 10], [2, 20]]
    """
    a, b = ravel(asarray(a)), ravel(asarray(b))
    dtype = np.multiply(np.ones(1, a.dtype), np.ones(1, b.dtype)).dtype
    return blockwise(np.multiply.outer, "ij", a, "i", b, "j", dtype=dtype, name="outer")


def kron(a: Any, b: Any) -> Array:
    """The Kronecker product, as ``numpy.kron``: the blocks ``a[i, j, ...] * b`` laid out in
    ``a``'s grid (the shorter input's shape led by ones). Each axis pairs ``a``'s and ``b``'s:
    the product's axes ``(a0, b0, a1, b1, ...)`` merged two by two (``reshape``).

    >>> import numpy as np, xsched.array as xa
    >>> xa.kron(xa.from_array(np.array([[1, 2], [3, 4]]), chunks=1), np.eye(2, dtype=int)).compute().tolist()
    [[1, 0, 2, 0], [0, 1, 0, 2], [3, 0, 4, 0], [0, 3, 0, 4]]
    """
    a, b = asarray(a), asarray(b)
    nd = max(a.ndim, b.ndim)
    a = a.reshape((1,) * (nd - a.ndim) + a.shape)
    b = b.reshape((1,) * (nd - b.ndim) + b.shape)
    if nd == 0:
        return a * b
    product = a[tuple(i for _ in range(nd) for i in (slice(None), None))] * \
        b[tuple(i for _ in range(nd) for i in (None, slice(None)))]
    return product.reshape(tuple(m * n for m, n in zip(a.shape, b.shape)))


def vdot(a: Any, b: Any) -> Array:
    """The dot product of the flattened inputs, the first conjugated, as ``numpy.vdot``.

    >>> import numpy as np, xsched.array as xa
    >>> complex(xa.vdot(xa.from_array(np.array([1j, 2]), chunks=1), np.array([1j, 1])))
    (3+0j)
    """
    a, b = ravel(asarray(a)), ravel(asarray(b))
    if a.dtype.kind == "c":
        a = np.conjugate(a)
    return dot(a, b)


# --------------------------------------------------------------------------- norm


def _vector_norm(x: Array, ord: Any, axis: tuple, keepdims: bool) -> Array:
    if ord is None or ord == 2:
        return np.sqrt((abs(x) ** 2).sum(axis=axis, keepdims=keepdims))
    if ord == np.inf:
        return abs(x).max(axis=axis, keepdims=keepdims)
    if ord == -np.inf:
        return abs(x).min(axis=axis, keepdims=keepdims)
    if ord == 0:
        return (x != 0).astype(x.real.dtype if x.dtype.kind == "c" else x.dtype).sum(
            axis=axis, keepdims=keepdims)
    if ord == 1:
        return abs(x).sum(axis=axis, keepdims=keepdims)
    if isinstance(ord, str):
        raise ValueError(f"Invalid norm order '{ord}' for vectors")
    return (abs(x) ** ord).sum(axis=axis, keepdims=keepdims) ** (1.0 / ord)


def _matrix_norm(x: Array, ord: Any, axis: tuple, keepdims: bool) -> Array:
    r, c = axis
    if ord is None or ord == "fro":
        return np.sqrt((abs(x) ** 2).sum(axis=axis, keepdims=keepdims))
    if ord in (1, -1, np.inf, -np.inf):
        summed, over = (r, c) if ord in (1, -1) else (c, r)
        sums = abs(x).sum(axis=summed, keepdims=True)
        out = sums.max(axis=over, keepdims=True) if ord > 0 else sums.min(axis=over,
                                                                          keepdims=True)
        if not keepdims:
            out = out[tuple(0 if a in axis else slice(None) for a in range(x.ndim))]
        return out
    if ord in (2, -2, "nuc"):
        if x.ndim != 2 or keepdims or tuple(sorted(a % 2 for a in axis)) != (0, 1):
            raise NotImplementedError(f"norm: ord={ord!r} works on a whole 2-d matrix here (no keepdims); "
                                      "compute() the array and use numpy.linalg.norm")
        singular = singular_values(x)  # (those of the transpose are the same)
        return singular.max() if ord == 2 else singular.min() if ord == -2 else singular.sum()
    raise ValueError(f"Invalid norm order {ord!r} for matrices")


def norm(x: Any, ord: Any = None, axis: Any = None, keepdims: bool = False) -> Array:
    """Vector or matrix norm, as ``numpy.linalg.norm``: without ``axis``, the 2-norm of the
    flattened array (``ord`` None), or the ``ord`` norm of a vector or a matrix; an int
    ``axis`` gives vector norms along it, a pair of axes matrix norms (Frobenius, 1, -1,
    inf, -inf).

    >>> import numpy as np, xsched.array as xa
    >>> m = xa.from_array(np.array([[1.0, -2.0], [3.0, 4.0]]), chunks=1)
    >>> round(float(xa.linalg.norm(m)), 6), float(xa.linalg.norm(m, 1))
    (5.477226, 6.0)
    >>> xa.linalg.norm(m, axis=1, ord=1).compute().tolist()
    [3.0, 7.0]
    """
    x = asarray(x)
    if x.dtype.kind not in "fc":
        x = x.astype(float)
    if axis is None:
        if ord is None:
            out = np.sqrt((abs(x) ** 2).sum())
            return out.reshape((1,) * x.ndim) if keepdims else out
        if x.ndim == 1:
            return _vector_norm(x, ord, (0,), keepdims)
        if x.ndim == 2:
            return _matrix_norm(x, ord, (0, 1), keepdims)
        raise ValueError("Improper number of dimensions to norm.")
    axes = axis_tuple(axis, x.ndim, "norm")
    if len(axes) == 1:
        return _vector_norm(x, ord, axes, keepdims)
    if len(axes) == 2:
        if axes[0] == axes[1]:
            raise ValueError("Duplicate axes given.")
        return _matrix_norm(x, ord, axes, keepdims)
    raise ValueError("Improper number of dimensions to norm.")


# --------------------------------------------------------------------------- methods


def _matmul_method(self: Array, other: Any) -> Array:
    """``self @ other``; see ``xsched.array.matmul``.

    >>> import numpy as np, xsched.array as xa
    >>> (xa.ones((2, 3), chunks=2) @ np.ones(3)).compute().tolist()
    [3.0, 3.0]
    """
    return matmul(self, other)


def _rmatmul_method(self: Array, other: Any) -> Array:
    """``other @ self``, for a numpy ``other``.

    >>> import numpy as np, xsched.array as xa
    >>> (np.ones((1, 2)) @ xa.ones((2, 2), chunks=1)).compute().tolist()
    [[2.0, 2.0]]
    """
    return matmul(other, self)


def _dot_method(self: Array, other: Any) -> Array:
    """``xsched.array.dot(self, other)``.

    >>> import xsched.array as xa
    >>> float(xa.arange(3, chunks=2).dot(xa.arange(3, chunks=1)))
    5.0
    """
    return dot(self, other)


Array.__matmul__ = _matmul_method  # type: ignore[attr-defined]
Array.__rmatmul__ = _rmatmul_method  # type: ignore[attr-defined]
Array.dot = _dot_method  # type: ignore[attr-defined]
UFUNC_IMPLEMENTATIONS[np.matmul] = matmul


def _np_vecdot(x1: Any, x2: Any, /, *, axis: int = -1, **kwargs: Any) -> Array:
    """``np.vecdot(x, y)`` on xsched arrays: ``vecdot`` (its ``axis=``; not ``axes=``, ``dtype=``)."""
    if kwargs:
        raise TypeError(f"np.vecdot on xsched arrays takes axis= only, not {', '.join(sorted(kwargs))}; "
                        "move the axes first (xa.moveaxis) or cast the inputs (x.astype)")
    return vecdot(x1, x2, axis=axis)


if isinstance(getattr(np, "vecdot", None), np.ufunc):  # (NumPy 2's gufunc)
    UFUNC_IMPLEMENTATIONS[np.vecdot] = _np_vecdot


def _matrices_and_vectors(name: str, kwargs: dict, matrices: Any, vectors: Any, shared: int) -> tuple:
    """The operands of ``matvec``/``vecmat`` as xsched arrays, checked as NumPy checks them:
    no options, a stack of matrices and one of vectors whose lengths match the matrices'
    axis ``shared`` (columns -1, rows -2), and the result's dtype."""
    if kwargs:
        raise TypeError(f"np.{name} on xsched arrays takes no options, got {', '.join(sorted(kwargs))}; "
                        "compute first, or use xa.apply_gufunc")
    a, v = asarray(matrices), asarray(vectors)
    if a.ndim < 2 or v.ndim < 1:
        raise ValueError(f"{name}: the matrices need at least 2 dimensions and the vectors 1, got shapes {a.shape} "
                         f"and {v.shape}")
    n, m = a.shape[shared], v.shape[-1]
    if n == n and m == m and n != m:  # (NaN: a length a mask left unknown, checked when computed)
        raise ValueError(f"{name}: the matrices have {n} {'columns' if shared == -1 else 'rows'} but the vectors "
                         f"{m} values (matrices of shape {a.shape}, vectors of shape {v.shape})")
    return a, v, np.result_type(a.dtype, v.dtype)


def matvec(x1: Any, x2: Any, /, **kwargs: Any) -> Array:
    """Each matrix of ``x1`` (``..., M, N``) times each vector of ``x2`` (``..., N``), the
    stacks broadcasting, as NumPy 2.2's ``np.matvec``: a product summed over ``N``, any chunks.

    >>> import numpy as np, xsched.array as xa
    >>> matvec(xa.from_array(np.arange(6.0).reshape(2, 3), chunks=1), np.ones(3)).compute().tolist()
    [3.0, 12.0]
    """
    a, v, dtype = _matrices_and_vectors("matvec", kwargs, x1, x2, -1)
    return (a * v[..., None, :]).sum(axis=-1, dtype=dtype)


def vecmat(x1: Any, x2: Any, /, **kwargs: Any) -> Array:
    """Each vector of ``x1`` (``..., M``, conjugated) times each matrix of ``x2`` (``...,
    M, N``), the stacks broadcasting, as NumPy 2.2's ``np.vecmat``; any chunks.

    >>> import numpy as np, xsched.array as xa
    >>> vecmat(np.ones(2), xa.from_array(np.arange(6.0).reshape(2, 3), chunks=1)).compute().tolist()
    [3.0, 5.0, 7.0]
    """
    a, v, dtype = _matrices_and_vectors("vecmat", kwargs, x2, x1, -2)
    if v.dtype.kind == "c":
        v = np.conjugate(v)
    return (v[..., :, None] * a).sum(axis=-2, dtype=dtype)


for _name, _implementation in (("matvec", matvec), ("vecmat", vecmat)):
    if isinstance(getattr(np, _name, None), np.ufunc):  # (NumPy 2.2's gufuncs)
        UFUNC_IMPLEMENTATIONS[getattr(np, _name)] = _implementation
