"""``qr``, ``svd`` and ``lstsq`` of tall-and-skinny arrays: many rows, few columns (one column chunk).

The direct algorithm (TSQR): each row block ``A_i`` is factored on its own,
``A_i = Q_i R_i``; the small ``R_i`` (``n x n`` each) are stacked and factored once more,
``[R_1; ...; R_k] = Q' R``; then ``Q`` is, block by block, ``Q_i @ Q'_i`` (``Q'_i`` the
``i``-th rows of ``Q'`` facing ``R_i``). No task holds more than one row block and the stack of
small factors, so a matrix of any number of rows works in memory near one block. The SVD
follows from the R factor: ``R = U_r S V^T`` gives ``A = (Q U_r) S V^T``::

    qr-block-<t>-i   (Q_i, R_i) = numpy.linalg.qr(A_i)
    qr-rblock-<t>-i  R_i alone: the stack fetches the small R_i, never the Q_i
    qr-stack-<t>     (Q', R) of the R_i stacked, and where each R_i ends in it
    qr-q-<t>-i       Q_i @ Q'_i                      (Q: the row chunks of A, n columns)
    qr-r-<t>         R                               (one n x n chunk)
    svd-*-<t>        U_r, S, V^T of R; U = Q @ U_r, block by block, as Q_i @ (Q'_i @ U_r)
                     (the n x n product first: no Q block is made, one row-block product each)

``lstsq(a, b)`` solves ``a x = b`` in the least-squares sense from the same factors:
``Q^H b`` is summed over the row blocks (``Q'_i^H (Q_i^H b_i)``, again no ``Q`` block made),
and ``x = V S^+ U_r^H (Q^H b)`` from the SVD of the small ``R``, so that, as NumPy's
pseudo-inverse, a rank-deficient ``a`` gives the least-norm solution::

    lstsq-svd-<t>    U_r, S, V^T of R and the rank (singular values above rcond * S[0])
    lstsq-qtb-<t>-i.j  Q'_i^H (Q_i^H b_ij)          (b's row block i, column block j)
    lstsq-x-<t>-0.j  V S^+ U_r^H of the sum over i   (x: one row chunk, b's column chunks)

Factors are unique up to the signs of columns (rows of ``V^T``), as numpy's are; the
products reconstruct ``A``. A matrix wider than tall, its rows in one chunk, is factored too:
``qr`` from its leading square (``Q``) and ``R = triu(Q^H A)``, ``svd`` through its
transpose. Shapes are checked when the expression is built: a tall matrix with more than
one column chunk, or a wide one with more than one row chunk, fails naming the chunks and
the ``rechunk`` that fixes it. ``svd_compressed`` (at the end) takes any matrix.

>>> import numpy as np, xsched.array as xa
>>> a = xa.from_array(np.arange(24.0).reshape(8, 3) ** 1.5, chunks=(4, 3))
>>> q, r = xa.linalg.qr(a)
>>> np.allclose((q @ r).compute(), a.compute()), q.chunks
(True, ((4, 4), (3,)))
>>> u, s, vt = xa.linalg.svd(a)
>>> np.allclose(s.compute(), np.linalg.svd(a.compute(), compute_uv=False))
True
>>> x, residuals, rank, s = xa.linalg.lstsq(a, np.arange(8.0))
>>> np.allclose(x.compute(), np.linalg.lstsq(a.compute(), np.arange(8.0))[0]), int(rank)
(True, 3)
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from ..graph.layers import LayeredGraph, annotations_in_force, chunk_key, new_token, per_task
from ..graph.spec import Ref, Task
from .core import Array
from .creation import asarray, from_array, zeros
from .manipulation import triu
from .masking import known_chunks_needed
from .random import default_rng
from .blocked import _item
from .stacked import _per_matrix, _stack

__all__ = ["qr", "svd", "lstsq", "svd_compressed", "QRResult", "SVDResult"]


class QRResult(NamedTuple):
    """``qr``'s two arrays, named as NumPy's and the Array API's."""
    Q: Array
    R: Array


class SVDResult(NamedTuple):
    """``svd``'s three arrays, named as NumPy's and the Array API's."""
    U: Array
    S: Array
    Vh: Array


def _stacked(a: Any, op: str, func: Any, signature: str) -> Any:
    """``func`` (NumPy's reduced ``qr`` or ``svd``) of every matrix of a stack (``..., M, N``,
    each matrix in one chunk), as ``stacked.py`` runs the Array API's other functions."""
    a = _stack(a, op, "a", error=ValueError)
    m, n = a.shape[-2:]
    sample = func(np.eye(2, dtype=a.dtype if a.dtype.kind in "fc" else np.float64))
    return _per_matrix(func, signature, [a], op, tuple(sample), output_sizes={"k": min(m, n)})


def _reduced_qr(x: np.ndarray) -> tuple:
    return tuple(np.linalg.qr(x, mode="reduced"))


def _reduced_svd(x: np.ndarray) -> tuple:
    return tuple(np.linalg.svd(x, full_matrices=False))


def _qr_block(block: np.ndarray) -> tuple:
    return np.linalg.qr(block)


def _q_of(block: np.ndarray) -> np.ndarray:
    return np.linalg.qr(block)[0]


def _qr_stack(rs: list) -> tuple:
    """``(Q', R)`` of the stacked ``R_i``, and where each ``R_i`` ends in the stack (known
    only now when the row blocks' lengths were unknown, after a boolean mask)."""
    return (*np.linalg.qr(np.vstack(rs)), np.cumsum([len(r) for r in rs]))


def _rows_of(stack: tuple, i: int) -> np.ndarray:
    """``Q'_i``: the rows of ``Q'`` facing block ``i``'s ``R_i``."""
    ends = stack[2]
    return stack[0][(ends[i - 1] if i else 0):ends[i]]


def _q_block(block: tuple, stack: tuple, i: int) -> np.ndarray:
    return block[0] @ _rows_of(stack, i)


def _r_of(stack: tuple) -> np.ndarray:
    return stack[1]


def _svd_of_r(stack: tuple) -> tuple:
    return np.linalg.svd(stack[1])


def _u_block(block: tuple, stack: tuple, usv: tuple, i: int) -> np.ndarray:
    """``U_i = Q_i @ (Q'_i @ U_r)``: the small product first, so that no ``Q`` block is made."""
    return block[0] @ (_rows_of(stack, i) @ usv[0])


def _floating(a: Array) -> Array:
    """``a`` in a floating dtype (integers and bools as float64), as NumPy factors them."""
    return a if a.dtype.kind in "fc" else a.astype(np.result_type(a.dtype, np.float64))


def _wide(a: Any, op: str) -> Array | None:
    """``a`` when it is a matrix wider than tall (its rows in one chunk, else the error says
    how), factored through its transpose or its leading square; None otherwise."""
    a = asarray(a)
    if a.ndim != 2 or not a.shape[0] < a.shape[1]:  # (rows of unknown length: tall, as TSQR takes them)
        return None
    m, rows = a.shape[0], a.chunks[0]
    if len(rows) != 1:
        raise ValueError(f"{op}: a matrix wider than tall (shape {a.shape}) is factored with its {m} rows in one "
                         f"chunk; they are in {len(rows)} chunks {rows}: use a.rechunk({{0: {m}}})")
    return _floating(a)


def _tall_skinny(a: Any, op: str) -> Array:
    a = asarray(a)
    if a.ndim != 2:
        raise ValueError(f"{op}: a matrix (2 dimensions) is needed, this array has {a.ndim}: shape {a.shape}")
    if a.shape[0] < a.shape[1]:
        raise ValueError(f"{op}: the matrix must be tall and skinny, at least as many rows as columns; its shape "
                         f"is {a.shape}")
    rows, cols = a.chunks
    if len(cols) != 1:
        raise ValueError(f"{op}: the matrix must be tall and skinny, its {a.shape[1]} columns in one chunk; they "
                         f"are in {len(cols)} chunks {cols}: use a.rechunk({{1: {a.shape[1]}}})")
    return _floating(a)


def _tsqr(a: Array) -> tuple[dict, str, str, str, list]:
    """The layers of ``Q`` and ``R`` (see the module docstring), the names of ``Q``'s
    layer, ``R``'s layer and the stacked factorization's key, and per row block the name of
    its ``(Q_i, R_i)`` key."""
    rows, (n,) = a.chunks
    token = new_token("tsqr", a.name, a.chunks)
    ann = annotations_in_force()
    blocks_name, rblocks_name, stack_key, q_name, r_name = (
        f"qr-{part}-{token}" for part in ("block", "rblock", "stack", "q", "r"))
    blocks = {chunk_key(blocks_name, (i,)): Task(_qr_block, (Ref(chunk_key(a.name, (i, 0))),), {}, per_task(ann))
              for i in range(len(rows))}
    rblocks = {chunk_key(rblocks_name, (i,)): Task(_item, (Ref(chunk_key(blocks_name, (i,))), 1), {}, per_task(ann))
               for i in range(len(rows))}
    layers = {
        blocks_name: blocks,
        rblocks_name: rblocks,
        stack_key: {stack_key: Task(_qr_stack, ([Ref(k) for k in rblocks],), {}, per_task(ann))},
        q_name: {chunk_key(q_name, (i, 0)): Task(_q_block, (Ref(chunk_key(blocks_name, (i,))), Ref(stack_key), i),
                                                 {}, per_task(ann)) for i in range(len(rows))},
        r_name: {chunk_key(r_name, (0, 0)): Task(_r_of, (Ref(stack_key),), {}, per_task(ann))},
    }
    return layers, q_name, r_name, stack_key, list(blocks)


def _full_refused(a: Any, op: str, option: str) -> ValueError:
    """The refusal of the square factor a non-square matrix's complete QR or full SVD would
    make (``m x m``: a million rows give a terabyte); a square matrix's are its reduced ones."""
    shape, side = np.shape(a), max(np.shape(a)[-2:])
    return ValueError(f"{op}: {option} of a matrix of shape {shape} would make a {side} x {side} factor; "
                      f"xsched gives the reduced factors only ({op}(a) without {option.split('=')[0]}=)")


def qr(a: Any, /, *, mode: str = "reduced") -> tuple[Array, Array]:
    """``Q, R`` of a tall-and-skinny matrix (see the module docstring): ``Q`` has ``a``'s row
    chunks and orthonormal columns, ``R`` is upper triangular (one chunk), ``Q @ R == a``.

    >>> import numpy as np, xsched.array as xa
    >>> a = xa.from_array(np.random.default_rng(0).normal(size=(1000, 5)), chunks=(250, 5))
    >>> q, r = xa.linalg.qr(a)
    >>> np.allclose((q.T @ q).compute(), np.eye(5)), r.shape
    (True, (5, 5))

    A matrix wider than tall (its rows in one chunk) is factored as NumPy's: ``Q`` square,
    from its leading square, and ``R = triu(Q^H a)`` with ``a``'s column chunks.

    >>> w = xa.from_array(np.random.default_rng(1).normal(size=(3, 8)), chunks=(3, 4))
    >>> q, r = xa.linalg.qr(w)
    >>> np.allclose((q @ r).compute(), w.compute()), q.shape, r.chunks
    (True, (3, 3), ((3,), (4, 4)))

    ``mode="r"`` gives ``R`` alone, as NumPy does.
    """
    if mode == "r":  # (NumPy's: R alone; Q's tasks are left out when it is computed)
        return qr(a, mode="reduced")[1]
    if mode not in ("reduced", "complete"):
        raise ValueError(f"qr: mode must be 'reduced', 'complete' or 'r', got {mode!r}")
    if mode == "complete" and np.ndim(a) >= 2 and np.shape(a)[-2] > np.shape(a)[-1]:
        raise _full_refused(a, "qr", "mode='complete'")  # (a wide or square matrix's complete Q is its reduced one)
    if np.ndim(a) > 2:
        return QRResult(*_stacked(a, "qr", _reduced_qr, "(m,n)->(m,k),(k,n)"))
    wide = _wide(a, "qr")
    if wide is not None:
        q = wide[:, :wide.shape[0]].rechunk({1: -1}).map_blocks(_q_of, dtype=wide.dtype, name="qr-square")
        return QRResult(q, triu(q.conj().T @ wide))
    a = _tall_skinny(a, "qr")
    layers, q_name, r_name, _, _ = _tsqr(a)
    n = a.shape[1]
    graph = LayeredGraph.merge(a._graph, new=layers)
    return QRResult(Array(graph, q_name, (a.chunks[0], (n,)), a.dtype), Array(graph, r_name, ((n,), (n,)), a.dtype))


def svd(a: Any, /, *, full_matrices: bool = False, compute_uv: bool = True) -> Any:
    """``U, S, V^T`` of a tall-and-skinny matrix (see the module docstring), as
    ``numpy.linalg.svd(a, full_matrices=False)``: ``U`` has ``a``'s row chunks, ``S`` the
    singular values in descending order, ``(U * S) @ V^T == a``.

    >>> import numpy as np, xsched.array as xa
    >>> x = np.random.default_rng(1).normal(size=(600, 4))
    >>> u, s, vt = xa.linalg.svd(xa.from_array(x, chunks=(200, 4)))
    >>> np.allclose(((u * s) @ vt).compute(), x), u.chunks[0]
    (True, (200, 200, 200))

    A matrix wider than tall (its rows in one chunk) is factored through its transpose:
    ``V^T`` then has ``a``'s column chunks. ``compute_uv=False`` gives ``S`` alone, as
    NumPy does (``U`` and ``V^T`` are then never computed).

    >>> xa.linalg.svd(xa.from_array(x, chunks=(200, 4)), compute_uv=False).shape
    (4,)
    """
    if not compute_uv:
        return svd(a)[1]
    if full_matrices and np.ndim(a) >= 2 and np.shape(a)[-2] != np.shape(a)[-1]:  # (a stack's matrices too)
        raise _full_refused(a, "svd", "full_matrices=True")
    if np.ndim(a) > 2:
        return SVDResult(*_stacked(a, "svd", _reduced_svd, "(m,n)->(m,k),(k),(k,n)"))
    wide = _wide(a, "svd")
    if wide is not None:  # (a^H = U S W gives a = W^H S U^H)
        u, s, w = svd(wide.conj().T)
        return SVDResult(w.conj().T, s, u.conj().T)
    a = _tall_skinny(a, "svd")
    layers, q_name, _, stack_key, blocks = _tsqr(a)
    rows, n = a.chunks[0], a.shape[1]
    token = new_token("svd", q_name)
    ann = annotations_in_force()
    usv_key, u_name, s_name, v_name = (f"svd-{part}-{token}" for part in ("usv", "u", "s", "v"))
    real = np.empty(0, a.dtype).real.dtype
    layers.update({
        usv_key: {usv_key: Task(_svd_of_r, (Ref(stack_key),), {}, per_task(ann))},
        u_name: {chunk_key(u_name, (i, 0)): Task(_u_block, (Ref(block), Ref(stack_key), Ref(usv_key), i),
                                                 {}, per_task(ann)) for i, block in enumerate(blocks)},
        s_name: {chunk_key(s_name, (0,)): Task(_item, (Ref(usv_key), 1), {}, per_task(ann))},
        v_name: {chunk_key(v_name, (0, 0)): Task(_item, (Ref(usv_key), 2), {}, per_task(ann))},
    })
    graph = LayeredGraph.merge(a._graph, new=layers)
    return SVDResult(Array(graph, u_name, (rows, (n,)), a.dtype), Array(graph, s_name, ((n,),), real),
                     Array(graph, v_name, ((n,), (n,)), a.dtype))


def _qtb_block(block: tuple, stack: tuple, b: np.ndarray, i: int) -> np.ndarray:
    """Row block ``i``'s share of ``Q^H b``: ``Q'_i^H (Q_i^H b_i)``, the small product last."""
    return _rows_of(stack, i).conj().T @ (block[0].conj().T @ b)


def _lstsq_factors(stack: tuple, rcond: float | None, m: int) -> tuple:
    """``U_r, S, V^T`` of ``R`` and the rank: singular values above ``rcond * S[0]``, with
    NumPy's default ``rcond`` (the precision times the longer side; negative: the precision)."""
    u, s, vt = np.linalg.svd(stack[1])
    eps = np.finfo(s.dtype).eps
    cut = (eps * max(m, len(s)) if rcond is None else rcond if rcond >= 0 else eps) * (s[0] if len(s) else 0)
    return u, s, vt, np.int32(np.count_nonzero(s > cut))


def _solve(parts: list, factors: tuple) -> np.ndarray:
    """``x = V S^+ U_r^H (Q^H b)``: the pseudo-inverse of ``R`` (NumPy's), dropping the singular
    values at or below the cut."""
    u, s, vt, rank = factors
    qtb = parts[0] if len(parts) == 1 else np.sum(parts, axis=0)
    y = (u[:, :rank].conj().T @ qtb) / (s[:rank, None] if qtb.ndim == 2 else s[:rank])
    return vt[:rank].conj().T @ y


def _lstsq_dtype(a: np.dtype, b: np.dtype) -> np.dtype:
    """NumPy's type for ``lstsq``: single precision only when both are, complex when either is;
    integers and booleans count as double; half and long double are refused, as NumPy does."""
    for dt in (a, b):
        if dt.kind in "fc" and dt not in (np.float32, np.float64, np.complex64, np.complex128):
            raise TypeError(f"array type {dt} is unsupported in linalg")
    single = all(dt in (np.float32, np.complex64) for dt in (a, b))
    complex_ = any(dt.kind == "c" for dt in (a, b))
    return np.dtype((np.complex64 if single else np.complex128) if complex_ else
                    (np.float32 if single else np.float64))


def lstsq(a: Any, b: Any, rcond: float | None = None) -> tuple[Array, Array, Array, Array]:
    """The least-squares solution of ``a x = b`` for a tall-and-skinny ``a`` (its columns in one
    chunk), as ``numpy.linalg.lstsq``: ``(x, residuals, rank, s)``, all lazy (``rank`` a 0-d
    int array), from the TSQR of ``a`` (see the module docstring).

    ``b`` is 1-d or 2-d, its rows cut as ``a``'s (rechunked to them otherwise; a NumPy ``a``
    is cut as an xsched ``b``). ``rank`` and ``s`` come from ``a`` alone: computing them does
    not read ``b``. ``residuals`` are ``sum(|a x - b|^2, axis=0)`` (shape ``(1,)`` for a 1-d
    ``b``), empty for a square ``a``, as NumPy's. Unlike NumPy's, they are given for a
    rank-deficient ``a`` too (NumPy then gives an empty array): their shape must be known when
    the expression is built, before the rank is. A wider-than-tall ``a``, several column
    chunks, rows of unknown length or row counts that differ fail when built (b's columns may be
    of unknown length, as a boolean mask of columns leaves them).

    >>> import numpy as np, xsched.array as xa
    >>> t = np.linspace(0, 1, 10)
    >>> a = xa.from_array(np.stack([t, np.ones(10)], axis=1), chunks=(4, 2))
    >>> x, residuals, rank, s = xa.linalg.lstsq(a, 3 * t + 1)
    >>> x.compute().round(6).tolist(), residuals.shape, int(rank)
    ([3.0, 1.0], (1,), 2)
    """
    if not isinstance(a, Array) and isinstance(b, Array) and np.ndim(a) == 2 and b.ndim in (1, 2) \
            and not any(c != c for c in b.chunks[0]):
        a = from_array(np.asarray(a), chunks=(b.chunks[0], -1))  # (cut as b, which is the big one)
    a, b = asarray(a), asarray(b)
    if a.ndim != 2 or b.ndim not in (1, 2):
        raise np.linalg.LinAlgError(f"lstsq: a must be 2-d and b 1-d or 2-d; their shapes are {a.shape} and "
                                    f"{b.shape}")
    known_chunks_needed(a, "lstsq")
    if any(c != c for c in b.chunks[0]):  # (b's columns may be unknown: each column block is solved apart)
        known_chunks_needed(b, "lstsq")
    m, n = a.shape
    if b.shape[0] != m:
        raise np.linalg.LinAlgError(f"lstsq: incompatible dimensions: a of shape {a.shape} has {m} rows, b of "
                                    f"shape {b.shape} has {b.shape[0]}")
    if m < n:
        raise ValueError(f"lstsq: a must have at least as many rows as columns (tall and skinny); its shape is "
                         f"{a.shape}: solve this underdetermined system with numpy.linalg.lstsq on a.compute()")
    dtype = _lstsq_dtype(a.dtype, b.dtype)
    a = _tall_skinny(a, "lstsq").astype(dtype, copy=False)
    b = b.astype(dtype, copy=False)
    if b.chunks[0] != a.chunks[0]:
        b = b.rechunk({0: a.chunks[0]})
    layers, _, _, stack_key, blocks = _tsqr(a)
    token = new_token("lstsq", a.name, b.name, rcond)
    ann = annotations_in_force()
    fact_key, qtb_name, x_name, rank_name, s_name = (
        f"lstsq-{part}-{token}" for part in ("svd", "qtb", "x", "rank", "s"))
    columns = [(j,) for j in range(b.numblocks[1])] if b.ndim == 2 else [()]  # (b's column block index, if any)
    qtb = {chunk_key(qtb_name, (i, *j)): Task(_qtb_block, (Ref(block), Ref(stack_key),
                                                          Ref(chunk_key(b.name, (i, *j))), i), {}, per_task(ann))
           for i, block in enumerate(blocks) for j in columns}
    xs = {chunk_key(x_name, (0, *j)): Task(_solve, ([Ref(chunk_key(qtb_name, (i, *j))) for i in range(len(blocks))],
                                                    Ref(fact_key)), {}, per_task(ann))
          for j in columns}
    layers.update({
        fact_key: {fact_key: Task(_lstsq_factors, (Ref(stack_key), rcond, m), {}, per_task(ann))},
        qtb_name: qtb,
        x_name: xs,
        rank_name: {chunk_key(rank_name, ()): Task(_item, (Ref(fact_key), 3), {}, per_task(ann))},
        s_name: {chunk_key(s_name, (0,)): Task(_item, (Ref(fact_key), 1), {}, per_task(ann))},
    })
    graph = LayeredGraph.merge(a._graph, b._graph, new=layers)
    real = np.empty(0, dtype).real.dtype
    x = Array(graph, x_name, ((n,),) + b.chunks[1:], dtype)
    if m > n:
        residuals = (abs(a @ x - b) ** 2).sum(axis=0)
        residuals = residuals if b.ndim == 2 else residuals[None]
    else:
        residuals = zeros((0,), dtype=real)
    return x, residuals, Array(graph, rank_name, (), np.int32), Array(graph, s_name, ((n,),), real)


def svd_compressed(a: Any, k: int, iterator: str = "power", n_power_iter: int = 0, n_oversamples: int = 10,
                   seed: Any = None) -> tuple[Array, Array, Array]:
    """The ``k`` largest singular values of a large matrix and their vectors, by random
    projection (Halko, Martinsson and Tropp, 2011): ``U`` (``a``'s row chunks, ``k``
    columns), ``S`` and ``V^T`` (``k`` rows, ``a``'s column chunks), ``(U * S) @ V^T`` close to
    ``a`` when its spectrum falls off after ``k``.

    ``a`` may be cut along both axes. Its columns are multiplied by ``k + n_oversamples``
    random vectors (drawn from ``seed``, chunked as ``a``'s columns), the result made
    orthonormal with the tall-and-skinny QR, and ``a`` projected on it: an SVD of a matrix of
    ``k + n_oversamples`` rows. Each of the ``n_power_iter`` passes (``a @ (a^H @ Q)``) sharpens
    a slowly falling spectrum at the cost of two more passes over ``a``; ``iterator="QR"``
    makes ``Q`` orthonormal again between the products (steadier when many passes are
    asked). Reading ``a`` takes ``2 + 2 * n_power_iter`` passes.

    >>> import numpy as np, xsched.array as xa
    >>> rng = np.random.default_rng(0)
    >>> low = rng.normal(size=(300, 3)) @ rng.normal(size=(3, 200))      # rank 3
    >>> u, s, vt = xa.linalg.svd_compressed(xa.from_array(low, chunks=(100, 50)), k=3, seed=1)
    >>> np.allclose(((u * s) @ vt).compute(), low), u.chunks, vt.chunks[1]
    (True, ((100, 100, 100), (3,)), (50, 50, 50, 50))
    """
    a = asarray(a)
    if a.ndim != 2:
        raise ValueError(f"svd_compressed: a matrix (2 dimensions) is needed, this array has {a.ndim}: shape {a.shape}")
    known_chunks_needed(a, "svd_compressed")
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 0 < k <= min(a.shape):
        raise ValueError(f"svd_compressed: k must be an integer from 1 to {min(a.shape)} (the smaller side of a, "
                         f"shape {a.shape}); got {k!r}")
    if iterator not in ("power", "QR"):
        raise ValueError(f"svd_compressed: iterator must be 'power' or 'QR', got {iterator!r}")
    if n_power_iter < 0 or n_oversamples < 0:
        raise ValueError(f"svd_compressed: n_power_iter and n_oversamples must be >= 0, got {n_power_iter} and "
                         f"{n_oversamples}")
    a = _floating(a)
    width = min(int(k) + int(n_oversamples), *a.shape)
    omega = default_rng(seed).standard_normal((a.shape[1], width), dtype=a.real.dtype, chunks=(a.chunks[1], width))
    y = a @ omega
    for _ in range(n_power_iter):
        if iterator == "QR":
            y = a @ qr(a.conj().T @ qr(y)[0])[0]
        else:
            y = a @ (a.conj().T @ y)
    q = qr(y)[0]
    # The projection's SVD through its (tall) transpose: b^H = U' S W, so b = W^H S U'^H.
    u2, s, w = svd((q.conj().T @ a).conj().T)
    u = q @ w.conj().T
    return u[:, :k], s[:k], u2.conj().T[:k]
