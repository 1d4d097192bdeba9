"""One matrix spread over square blocks: LU with row pivoting, triangular solves, Cholesky,
and the ``solve``, ``inv``, ``det`` and ``slogdet`` they give.

``stacked.py`` runs NumPy on each matrix of a stack held whole in one chunk. A matrix too big
for one chunk (a 20000 x 20000 system) comes here, as a 2-d array whose blocks are square
along the diagonal: its row chunks equal its column chunks (``a.rechunk(c)`` when they do
not). The blocks are factored as LAPACK factors a matrix, one column of blocks at a time, with
scipy's kernels on each (``pip install scipy``, in the ``array`` extra).

**LU** (``a = P @ L @ U``) pivots over the whole column, as ``scipy.linalg.lu``: a zero on a
diagonal block needs no care, the pivot is sought in every row below it. Step ``k`` of ``K``::

    lu-panel-<t>-k    (order_k, L_k, U_kk): scipy's lu of column k's rows k.. (the trailing
                      column the step before left); order_k is the panel's new row order
    lu-col-<t>-k.j    j > k: column j's rows k.. in order_k; U_kj = L_kk^-1 S_k (a triangular
                      solve), and its trailing rows k+1.., S_rest - L_rest @ U_kj, for step k+1
    lu-order-<t>      the steps' orders composed: a[order] == L @ U
    lu-lorder-<t>-j   where column j's rows of L come from in its panel, as the later steps
                      reordered them (an int per row)
    lu-l/u/p-<t>-i.j  the blocks of L (rows of column j's panel), U, and P (P[r, c] = 1
                      where order[c] == r)

A task holds one column of blocks from the diagonal down and the step's panel, never the
matrix. The steps run one after another; the columns of a step run in parallel.

**Triangular solves** go block row by block row (``X_i = T_ii^-1 (B_i - sum_j T_ij X_j)``, the
``j`` already solved), a task per block of ``B``. **Cholesky** (``a = L @ L^H``, the lower
triangle read) is the blocked right-looking one: ``L_kk = chol(A_kk - sum_j L_kj L_kj^H)``,
``L_ik = (A_ik - sum_j L_ij L_kj^H) L_kk^-H``, a task per block of the lower triangle.

Shapes and chunks are checked when the expression is built, naming the fix; a singular or
indefinite matrix is only found by computing, and fails then with scipy's or NumPy's error.

>>> import numpy as np, xsched.array as xa
>>> a = np.array([[0.0, 2.0, 1.0], [1.0, 1.0, 0.0], [3.0, 0.0, 1.0]])
>>> x = xa.from_array(a, chunks=1)                        # a zero in the first block: pivoted
>>> p, l, u = lu(x)
>>> np.allclose((p @ l @ u).compute(), a)
True
>>> solve(x, np.array([3.0, 2.0, 4.0])).compute().round(6).tolist()
[1.0, 1.0, 1.0]
>>> lu(xa.from_array(a, chunks=(1, 3)))
Traceback (most recent call last):
...
ValueError: lu: the blocks of a must be square along its diagonal (its row chunks equal to its column chunks) to factor it over blocks; its chunks are (1, 1, 1) and (3,): rechunk first: a.rechunk(3)
"""

from __future__ import annotations

import importlib.util
from typing import Any, NamedTuple

import numpy as np

from ..graph.layers import LayeredGraph, annotations_in_force, chunk_key, new_token, per_task
from ..graph.spec import Ref, Task
from .core import Array
from .creation import asarray, eye

__all__ = ["lu", "solve_triangular", "cholesky", "solve", "inv", "det", "slogdet", "spread"]

LinAlgError = np.linalg.LinAlgError


def _scipy_linalg() -> Any:
    import scipy.linalg  # (in the array extra; checked when the expression was built)

    return scipy.linalg


# --------------------------------------------------------------------------- checks


def spread(*arrays: Any) -> bool:
    """Whether a matrix (2-d) among ``arrays`` is cut into several blocks: the blocked
    algorithms here then apply where NumPy's per-block ones cannot.

    >>> import numpy as np, xsched.array as xa
    >>> spread(xa.ones((4, 4), chunks=2)), spread(xa.ones((4, 4), chunks=4)), spread(np.ones((4, 4)))
    (True, False, False)
    """
    return any(isinstance(x, Array) and x.ndim == 2 and any(len(c) > 1 for c in x.chunks) for x in arrays)


def _square(a: Any, op: str, arg: str = "a") -> Array:
    """``a`` as a square matrix whose blocks are square along the diagonal, and scipy there
    to factor it; otherwise the error names what is wrong and the fix."""
    a = asarray(a)
    if a.ndim != 2:
        raise LinAlgError(f"{op}: {arg} must be a matrix (2 dimensions) to factor it over blocks; it has shape "
                          f"{a.shape}")
    rows, cols = a.chunks
    if any(c != c for c in rows + cols):  # (NaN: lengths a boolean mask left unknown)
        raise ValueError(f"{op}: {arg} (shape {a.shape}) has chunks of unknown length {a.chunks}; "
                         f"compute them first: {arg} = {arg}.compute_chunk_sizes()")
    if a.shape[0] != a.shape[1]:
        raise LinAlgError(f"{op}: Last 2 dimensions of the array must be square; {arg} has shape {a.shape}")
    if rows != cols:
        side = max(rows[0], cols[0]) if rows and cols else 1
        raise ValueError(f"{op}: the blocks of {arg} must be square along its diagonal (its row chunks equal to "
                         f"its column chunks) to factor it over blocks; its chunks are {rows} and {cols}: "
                         f"rechunk first: {arg}.rechunk({side})")
    if importlib.util.find_spec("scipy") is None:
        raise ImportError(f"{op}: factoring a matrix spread over several blocks needs scipy (pip install scipy, "
                          f"or the array extra); or put it in one block first: {arg}.rechunk(-1)")
    return a


def _float(*dtypes: np.dtype) -> np.dtype:
    """The dtype NumPy's ``solve`` gives these inputs: float32 stays, integers become
    float64, float16 is refused as NumPy refuses it."""
    return np.linalg.solve(np.eye(2, dtype=dtypes[0]), np.ones(2, dtype=dtypes[-1])).dtype


def _rhs(b: Any, n: int, op: str, a: Array) -> tuple[Array, bool]:
    """``b`` as a matrix of ``n`` rows (a vector as one column), and whether it was a vector."""
    b = asarray(b)
    if b.ndim not in (1, 2):
        raise ValueError(f"{op}: b must be a vector or a matrix when a is spread over blocks; b has shape {b.shape}")
    if b.shape[0] != n:
        raise ValueError(f"{op}: b of shape {b.shape} has {b.shape[0]} rows, but a (shape {a.shape}) is "
                         f"{n} x {n}")
    vector = b.ndim == 1
    return (b[:, None] if vector else b), vector


# --------------------------------------------------------------------------- tasks


def _stacked(parts: list, dtype: np.dtype) -> np.ndarray:
    """The rows of a column of blocks in one array: ``a``'s blocks at the first step, the
    trailing rows of the step before (the second of its ``(U_kj, rest)``) after it."""
    blocks = [p[1] if isinstance(p, tuple) else p for p in parts]
    return np.asarray(blocks[0] if len(blocks) == 1 else np.vstack(blocks), dtype=dtype)


def _panel(parts: list, dtype: np.dtype) -> tuple:
    """``(order, L, U)`` of the column: ``column[order] == L @ U``."""
    p, l, u = _scipy_linalg().lu(_stacked(parts, dtype), p_indices=True)
    return np.argsort(p), l, u


def _column(panel: tuple, parts: list, width: int, dtype: np.dtype) -> tuple:
    """``(U_kj, rest)`` of column ``j`` at the panel's step: its rows in the panel's order,
    the top ``width`` solved against the panel's unit lower triangle, the rest updated."""
    order, l, _ = panel
    s = _stacked(parts, dtype)[order]  # (a new array: updated in place below)
    u = _scipy_linalg().solve_triangular(l[:width], s[:width], lower=True, unit_diagonal=True)
    rest = s[width:]
    rest -= l[width:] @ u
    return u, rest


def _item(parts: tuple, i: int) -> Any:
    return parts[i]


def _order(n: int, starts: list, *orders: np.ndarray) -> np.ndarray:
    """Row orders composed: each reorders the rows from its start on. Of all steps, ``a``'s
    rows as ``L @ U`` has them; of the steps after ``j``, where each row of column ``j``'s
    ``L`` comes from in its panel (an int per row: the panel is never copied whole)."""
    out = np.arange(n)
    for start, order in zip(starts, orders):
        out[start:] = out[start:][order]
    return out


def _l_block(panel: tuple, rows: np.ndarray, start: int, stop: int) -> np.ndarray:
    return panel[1][rows[start:stop]]


def _rows(x: np.ndarray, start: int, stop: int) -> np.ndarray:
    return x[start:stop]


def _zeros(shape: tuple, dtype: np.dtype) -> np.ndarray:
    return np.zeros(shape, dtype)


def _p_block(order: np.ndarray, r0: int, r1: int, c0: int, c1: int, dtype: np.dtype) -> np.ndarray:
    """Block ``[r0:r1, c0:c1]`` of ``P``: a one where ``order[c] == r``."""
    block = np.zeros((r1 - r0, c1 - c0), dtype)
    rows = order[c0:c1]
    inside = (rows >= r0) & (rows < r1)
    block[rows[inside] - r0, np.flatnonzero(inside)] = 1
    return block


def _taken(parts: list, order: np.ndarray) -> np.ndarray:
    """A column of blocks stacked, its rows taken in ``order``."""
    return _stacked(parts, None)[order]


def _substitute(diagonal: np.ndarray, b: np.ndarray, coefficients: list, solved: list, lower: bool,
                unit: bool, dtype: np.dtype) -> np.ndarray:
    """``X_i = T_ii^-1 (B_i - sum_j T_ij X_j)`` over the blocks already solved."""
    rhs = np.array(b, dtype=dtype)
    for t, x in zip(coefficients, solved):
        rhs -= t @ x
    return _scipy_linalg().solve_triangular(np.asarray(diagonal, dtype), rhs, lower=lower, unit_diagonal=unit)


def _cholesky_diagonal(a: np.ndarray, left: list, dtype: np.dtype) -> np.ndarray:
    """``L_kk = chol(A_kk - sum_j L_kj L_kj^H)``."""
    s = np.array(a, dtype=dtype)
    for l in left:
        s -= l @ l.conj().T
    return np.linalg.cholesky(s)


def _cholesky_below(a: np.ndarray, diagonal: np.ndarray, row: list, column: list, dtype: np.dtype) -> np.ndarray:
    """``L_ik = (A_ik - sum_j L_ij L_kj^H) L_kk^-H``, as a solve with ``L_kk``."""
    s = np.array(a, dtype=dtype)
    for li, lk in zip(row, column):
        s -= li @ lk.conj().T
    return _scipy_linalg().solve_triangular(diagonal, s.conj().T, lower=True).conj().T


def _slogdet(order: np.ndarray, *diagonals: np.ndarray) -> tuple:
    """``(sign, log|det|)`` from ``U``'s diagonal blocks and the rows' order, as NumPy's."""
    d = np.concatenate([np.diagonal(u) for u in diagonals])
    seen, cycles = np.zeros(len(order), bool), 0
    for start in range(len(order)):  # the order's parity: a cycle of length m is m - 1 swaps
        if not seen[start]:
            cycles += 1
            i = start
            while not seen[i]:
                seen[i] = True
                i = order[i]
    parity = -1.0 if (len(order) - cycles) % 2 else 1.0
    magnitude = np.abs(d)
    if (magnitude == 0).any():
        return np.zeros((), d.dtype)[()], np.array(-np.inf, magnitude.dtype)[()]
    sign = parity * np.prod(d / magnitude)
    return np.asarray(sign, d.dtype)[()], np.sum(np.log(magnitude))


def _det(parts: tuple) -> Any:
    sign, logdet = parts
    return sign * np.exp(logdet)


# --------------------------------------------------------------------------- LU


class _LU(NamedTuple):
    graph: LayeredGraph
    p: str
    l: str
    u: str
    order: str
    diagonals: list
    dtype: np.dtype  # (L's and U's; P's is its real dtype, as scipy's)


def _factor(a: Array) -> _LU:
    """The layers of ``a``'s LU (see the module docstring), their array names and keys."""
    dtype = _float(a.dtype)
    real = np.empty(0, dtype).real.dtype  # (P's, as scipy's: real for a complex matrix)
    chunks = a.chunks[0]
    starts = [int(s) for s in np.cumsum((0,) + chunks)]
    n, count = starts[-1], len(chunks)
    token = new_token("lu", a.name, chunks, str(dtype))
    ann = annotations_in_force()
    names = {part: f"lu-{part}-{token}" for part in ("panel", "col", "perm", "order", "lorder", "l", "u", "p")}

    def task(func: Any, *args: Any) -> Task:
        return Task(func, args, {}, per_task(ann))

    def key(part: str, *index: int) -> str:
        return chunk_key(names[part], index)

    layers: dict[str, dict] = {name: {} for name in names.values()}
    column = {j: [Ref(chunk_key(a.name, (i, j))) for i in range(count)] for j in range(count)}
    for k in range(count):
        layers[names["panel"]][key("panel", k)] = task(_panel, column[k], dtype)
        layers[names["perm"]][key("perm", k)] = task(_item, Ref(key("panel", k)), 0)
        for j in range(k + 1, count):
            layers[names["col"]][key("col", k, j)] = task(_column, Ref(key("panel", k)), column[j], chunks[k], dtype)
            column[j] = [Ref(key("col", k, j))]
    perms = [Ref(key("perm", k)) for k in range(count)]
    layers[names["order"]][key("order")] = task(_order, n, starts[:-1], *perms)
    for j in range(count):
        offsets = [starts[m] - starts[j] for m in range(j + 1, count)]
        layers[names["lorder"]][key("lorder", j)] = task(_order, n - starts[j], offsets, *perms[j + 1:])
    for i in range(count):
        for j in range(count):
            shape = (chunks[i], chunks[j])
            layers[names["l"]][key("l", i, j)] = (
                task(_l_block, Ref(key("panel", j)), Ref(key("lorder", j)), starts[i] - starts[j],
                     starts[i + 1] - starts[j]) if i >= j else task(_zeros, shape, dtype))
            layers[names["u"]][key("u", i, j)] = (
                task(_item, Ref(key("panel", i)), 2) if i == j else
                task(_item, Ref(key("col", i, j)), 0) if i < j else task(_zeros, shape, dtype))
            layers[names["p"]][key("p", i, j)] = task(_p_block, Ref(key("order")), starts[i], starts[i + 1],
                                                      starts[j], starts[j + 1], real)
    layers = {name: layer for name, layer in layers.items() if layer}
    graph = LayeredGraph.merge(a._graph, new=layers)
    diagonals = [key("u", k, k) for k in range(count)]
    return _LU(graph, names["p"], names["l"], names["u"], key("order"), diagonals, dtype)


def lu(a: Any) -> tuple[Array, Array, Array]:
    """``P, L, U`` of a square matrix spread over square blocks, as ``scipy.linalg.lu``:
    ``a == P @ L @ U``, ``P`` a permutation matrix, ``L`` unit lower triangular, ``U`` upper
    triangular, each chunked as ``a`` (pivoting over whole columns; see the module docstring).

    >>> import numpy as np, xsched.array as xa
    >>> a = np.random.default_rng(0).normal(size=(6, 6))
    >>> p, l, u = xa.linalg.lu(xa.from_array(a, chunks=2))
    >>> np.allclose((p @ l @ u).compute(), a), np.allclose(np.triu(u.compute()), u.compute())
    (True, True)
    """
    a = _square(a, "lu")
    f = _factor(a)
    real = np.empty(0, f.dtype).real.dtype
    return (Array(f.graph, f.p, a.chunks, real), Array(f.graph, f.l, a.chunks, f.dtype),
            Array(f.graph, f.u, a.chunks, f.dtype))


# --------------------------------------------------------------------------- solves


def _permuted(b: Array, graph: LayeredGraph, order: str) -> Array:
    """``b[order]`` by rows (``order`` a key of ``graph``), chunked as ``b``: a task per
    column of blocks."""
    token = new_token("permute-rows", b.name, order)
    ann = annotations_in_force()
    column_name, name = f"permute-rows-column-{token}", f"permute-rows-{token}"
    rows, cols = b.chunks
    starts = [int(s) for s in np.cumsum((0,) + rows)]
    columns = {chunk_key(column_name, (j,)): Task(_taken, ([Ref(chunk_key(b.name, (i, j))) for i in range(len(rows))],
                                                           Ref(order)), {}, per_task(ann))
               for j in range(len(cols))}
    blocks = {chunk_key(name, (i, j)): Task(_rows, (Ref(chunk_key(column_name, (j,))), starts[i], starts[i + 1]),
                                            {}, per_task(ann))
              for i in range(len(rows)) for j in range(len(cols))}
    return Array(LayeredGraph.merge(graph, b._graph, new={column_name: columns, name: blocks}), name, b.chunks, b.dtype)


def _triangular(a: Array, b: Array, lower: bool, unit: bool, dtype: np.dtype) -> Array:
    """``a x = b`` for triangular ``a`` (blocks square, ``b``'s rows cut as ``a``'s)."""
    token = new_token("solve-triangular", a.name, b.name, lower, unit, str(dtype))
    ann = annotations_in_force()
    name = f"solve-triangular-{token}"
    count = len(a.chunks[0])
    steps = range(count) if lower else range(count - 1, -1, -1)
    layer: dict[str, Task] = {}
    for c in range(len(b.chunks[1])):
        done: list[int] = []
        for i in steps:
            layer[chunk_key(name, (i, c))] = Task(
                _substitute, (Ref(chunk_key(a.name, (i, i))), Ref(chunk_key(b.name, (i, c))),
                              [Ref(chunk_key(a.name, (i, j))) for j in done],
                              [Ref(chunk_key(name, (j, c))) for j in done], lower, unit, dtype), {}, per_task(ann))
            done.append(i)
    return Array(LayeredGraph.merge(a._graph, b._graph, new={name: layer}), name, b.chunks, dtype)


def solve_triangular(a: Any, b: Any, lower: bool = False, unit_diagonal: bool = False) -> Array:
    """The solution ``x`` of ``a @ x = b`` for a triangular matrix ``a`` (its upper triangle,
    or its lower one with ``lower=True``; the other is not read), as
    ``scipy.linalg.solve_triangular``. ``a``'s blocks are square along the diagonal; ``b``, a
    vector or a matrix, is rechunked to ``a``'s rows.

    >>> import numpy as np, xsched.array as xa
    >>> t = xa.from_array(np.array([[2.0, 0.0, 0.0], [1.0, 1.0, 0.0], [0.0, 3.0, 3.0]]), chunks=1)
    >>> xa.linalg.solve_triangular(t, np.array([2.0, 2.0, 6.0]), lower=True).compute().tolist()
    [1.0, 1.0, 1.0]
    """
    a = _square(a, "solve_triangular")
    b, vector = _rhs(b, a.shape[0], "solve_triangular", a)
    x = _triangular(a, b.rechunk({0: a.chunks[0]}), bool(lower), bool(unit_diagonal), _float(a.dtype, b.dtype))
    return x[:, 0] if vector else x


def solve(a: Any, b: Any) -> Array:
    """The solution ``x`` of ``a @ x = b`` for a square matrix ``a`` spread over blocks, from
    its LU: ``b``'s rows in the pivots' order, then the two triangular solves. ``b`` is a
    vector or a matrix (rechunked to ``a``'s rows); ``xa.linalg.solve`` comes here when ``a``
    is cut into several blocks.

    >>> import numpy as np, xsched.array as xa
    >>> a = np.array([[4.0, 1.0, 0.0, 0.0], [1.0, 4.0, 1.0, 0.0], [0.0, 1.0, 4.0, 1.0], [0.0, 0.0, 1.0, 4.0]])
    >>> x = xa.linalg.solve(xa.from_array(a, chunks=2), a @ np.arange(4.0))
    >>> x.compute().round(6).tolist()
    [0.0, 1.0, 2.0, 3.0]
    """
    a = _square(a, "solve")
    b, vector = _rhs(b, a.shape[0], "solve", a)
    f = _factor(a)
    dtype = _float(f.dtype, b.dtype)
    l, u = (Array(f.graph, name, a.chunks, f.dtype) for name in (f.l, f.u))
    y = _permuted(b.rechunk({0: a.chunks[0]}), f.graph, f.order)
    x = _triangular(u, _triangular(l, y, True, True, dtype), False, False, dtype)
    return x[:, 0] if vector else x


def inv(a: Any) -> Array:
    """The inverse of a square matrix spread over blocks: ``solve(a, I)``, chunked as ``a``.

    >>> import numpy as np, xsched.array as xa
    >>> xa.linalg.inv(xa.from_array(np.array([[0.0, 2.0], [4.0, 0.0]]), chunks=1)).compute().tolist()
    [[0.0, 0.25], [0.5, 0.0]]
    """
    a = _square(a, "inv")
    return solve(a, eye(a.shape[0], dtype=_float(a.dtype), chunks=a.chunks))


# --------------------------------------------------------------------------- determinants


def _logdet(a: Array, op: str) -> tuple[LayeredGraph, str, np.dtype]:
    a = _square(a, op)
    f = _factor(a)
    key = f"slogdet-{new_token('slogdet', f.order)}"
    task = Task(_slogdet, (Ref(f.order), *(Ref(d) for d in f.diagonals)), {}, per_task(annotations_in_force()))
    return LayeredGraph.merge(f.graph, new={key: {key: task}}), key, f.dtype


def slogdet(a: Any) -> tuple[Array, Array]:
    """The sign and the log of the absolute value of the determinant of a square matrix spread
    over blocks, from its LU, as ``numpy.linalg.slogdet`` (a singular one: ``0, -inf``).

    >>> import numpy as np, xsched.array as xa
    >>> sign, logdet = xa.linalg.slogdet(xa.from_array(np.array([[0.0, 2.0], [3.0, 0.0]]), chunks=1))
    >>> float(sign), round(float(np.exp(logdet)), 6)
    (-1.0, 6.0)
    """
    graph, key, dtype = _logdet(a, "slogdet")
    ann = annotations_in_force()
    names = {part: f"{part}-{new_token(part, key)}" for part in ("sign", "logabsdet")}
    layers = {name: {chunk_key(name, ()): Task(_item, (Ref(key), i), {}, per_task(ann))}
              for i, name in enumerate(names.values())}
    graph = LayeredGraph.merge(graph, new=layers)
    return (Array(graph, names["sign"], (), dtype),
            Array(graph, names["logabsdet"], (), np.empty(0, dtype).real.dtype))


def det(a: Any) -> Array:
    """The determinant of a square matrix spread over blocks, from its LU, as
    ``numpy.linalg.det``.

    >>> import numpy as np, xsched.array as xa
    >>> round(float(xa.linalg.det(xa.from_array(np.array([[0.0, 2.0], [3.0, 0.0]]), chunks=1))), 6)
    -6.0
    """
    graph, key, dtype = _logdet(a, "det")
    name = f"det-{new_token('det', key)}"
    task = Task(_det, (Ref(key),), {}, per_task(annotations_in_force()))
    return Array(LayeredGraph.merge(graph, new={name: {chunk_key(name, ()): task}}), name, (), dtype)


# --------------------------------------------------------------------------- Cholesky


def cholesky(a: Any, upper: bool = False) -> Array:
    """The Cholesky factor of a Hermitian positive-definite matrix spread over blocks, as
    ``numpy.linalg.cholesky``: lower ``L`` with ``a == L @ L^H`` (only ``a``'s lower
    triangle is read), or ``L^H`` with ``upper=True``; one that is not positive definite
    fails when computed.

    >>> import numpy as np, xsched.array as xa
    >>> a = np.array([[4.0, 2.0, 0.0], [2.0, 5.0, 2.0], [0.0, 2.0, 5.0]])
    >>> xa.linalg.cholesky(xa.from_array(a, chunks=1)).compute().tolist()
    [[2.0, 0.0, 0.0], [1.0, 2.0, 0.0], [0.0, 1.0, 2.0]]
    """
    a = _square(a, "cholesky")
    dtype = _float(a.dtype)
    token = new_token("cholesky", a.name, str(dtype))
    ann = annotations_in_force()
    name = f"cholesky-{token}"
    count, chunks = len(a.chunks[0]), a.chunks[0]

    def l_(i: int, j: int) -> Ref:
        return Ref(chunk_key(name, (i, j)))

    layer: dict[str, Task] = {}
    for k in range(count):
        layer[chunk_key(name, (k, k))] = Task(
            _cholesky_diagonal, (Ref(chunk_key(a.name, (k, k))), [l_(k, j) for j in range(k)], dtype), {},
            per_task(ann))
        for i in range(count):
            if i > k:
                layer[chunk_key(name, (i, k))] = Task(
                    _cholesky_below, (Ref(chunk_key(a.name, (i, k))), l_(k, k), [l_(i, j) for j in range(k)],
                                      [l_(k, j) for j in range(k)], dtype), {}, per_task(ann))
            elif i < k:
                layer[chunk_key(name, (i, k))] = Task(_zeros, ((chunks[i], chunks[k]), dtype), {}, per_task(ann))
    low = Array(LayeredGraph.merge(a._graph, new={name: layer}), name, a.chunks, dtype)
    return low.conj().T if upper else low
