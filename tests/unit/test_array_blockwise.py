"""``xsched.array.blockwise`` (index notation) and ``einsum`` on top of it, against NumPy over
several chunkings, uneven last blocks included; errors raised when the expression is built.
Everything runs in this process (no client)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import xsched.array as xa
from xsched.graph.delayed import delayed
from xsched.graph.spec import dependencies


def values(shape, seed=0, dtype=float):
    return np.random.default_rng(seed).integers(-9, 10, size=shape).astype(dtype)


CHUNKINGS = [-1, 2, 3, "uneven"]


def uneven(n):
    """A block of 1, then blocks of 3, the last one shorter: 7 -> (1, 3, 3), 5 -> (1, 3, 1)."""
    rest = n - 1
    return ((1,) if n else ()) + (3,) * (rest // 3) + ((rest % 3,) if rest % 3 else ()) or (0,)


def ends(blocks):
    """Where the blocks along an axis end."""
    return set(itertools.accumulate(blocks))


def chunked(a, chunks):
    if chunks == "uneven":
        chunks = tuple(uneven(n) for n in a.shape)
    return xa.from_array(a, chunks=chunks)


# --------------------------------------------------------------------------- blockwise


@pytest.mark.parametrize("chunks", CHUNKINGS, ids=str)
def test_elementwise_and_transposed_indices(chunks):
    a, b = values((5, 7)), values((7, 5), seed=1)
    x, y = chunked(a, chunks), chunked(b, 2)
    got = xa.blockwise(lambda p, q: p + q.T, "ij", x, "ij", y, "ji", dtype=float)
    # both are cut wherever either is, along i and along j
    assert [ends(c) for c in got.chunks] == [ends(x.chunks[0]) | ends(y.chunks[1]),
                                             ends(x.chunks[1]) | ends(y.chunks[0])]
    np.testing.assert_array_equal(got.compute(), a + b.T)
    t = xa.blockwise(np.transpose, "ji", x, "ij", dtype=float)
    assert t.chunks == x.chunks[::-1]
    np.testing.assert_array_equal(t.compute(), a.T)


@pytest.mark.parametrize("chunks", CHUNKINGS, ids=str)
def test_contracted_index_concatenated_or_as_lists(chunks):
    a, b = values((5, 7)), values((7, 4), seed=1)
    x, y = chunked(a, chunks), xa.from_array(b, chunks=3)
    joined = xa.blockwise(np.matmul, "ik", x, "ij", y, "jk", concatenate=True, dtype=float)
    np.testing.assert_array_equal(joined.compute(), a @ b)
    seen = []

    def over_lists(left, right):
        assert isinstance(left, list) and isinstance(right, list)
        seen.append(len(left))
        return sum(p @ q for p, q in zip(left, right))

    listed = xa.blockwise(over_lists, "ik", x, "ij", y, "jk", dtype=float)
    np.testing.assert_array_equal(listed.compute(), a @ b)
    assert set(seen) == {len(xa.unify_chunks(x, "ij", y, "jk")[0]["j"])}
    # the order of the blocks: the last column, from the joined rows or the last block
    last = xa.blockwise(lambda rows: rows[:, -1], "i", x, "ij", concatenate=True, dtype=float)
    np.testing.assert_array_equal(last.compute(), a[:, -1])
    last = xa.blockwise(lambda blocks: blocks[-1][:, -1], "i", x, "ij", dtype=float)
    np.testing.assert_array_equal(last.compute(), a[:, -1])


def test_several_contracted_indices_nest_in_their_order():
    a = values((5, 7))
    x = xa.from_array(a, chunks=(2, 3))

    def total(blocks):
        assert len(blocks) == 3 and all(len(row) == 3 for row in blocks)  # over i, then j
        return np.array(sum(b.sum() for row in blocks for b in row))

    got = xa.blockwise(total, "", x, "ij", dtype=float)
    assert got.shape == ()
    assert float(got.compute()) == a.sum()
    got = xa.blockwise(lambda b: np.array(b.sum()), "", x, "ij", concatenate=True, dtype=float)
    assert float(got.compute()) == a.sum()


@pytest.mark.parametrize("chunks", [((2, 3), (3, 2)), 1, 5])
def test_a_repeated_index_takes_the_diagonal_blocks(chunks):
    a = values((5, 5))
    x = xa.from_array(a, chunks=chunks)
    diag = xa.blockwise(np.diagonal, "i", x, "ii", dtype=float)
    np.testing.assert_array_equal(diag.compute(), np.diagonal(a))


def test_new_axes_adjust_chunks_broadcasting_and_other_arguments():
    v = np.arange(7.0)
    x = xa.from_array(v, chunks=3)
    grown = xa.blockwise(lambda b, n: b[:, None] * np.arange(n), "ij", x, "i", 4, None,
                         new_axes={"j": 4}, dtype=float)
    assert grown.chunks == ((3, 3, 1), (4,))
    np.testing.assert_array_equal(grown.compute(), v[:, None] * np.arange(4))
    halves = xa.blockwise(lambda b: b[::2], "i", x, "i",
                          adjust_chunks={"i": lambda n: (n + 1) // 2}, dtype=float)
    assert halves.chunks == ((2, 2, 1),)
    np.testing.assert_array_equal(halves.compute(), np.concatenate([v[0:3:2], v[3:6:2], v[6:]]))
    m, row = values((5, 7)), values((1, 7), seed=2)
    got = xa.blockwise(np.add, "ij", xa.from_array(m, chunks=2), "ij", row, "ij")
    np.testing.assert_array_equal(got.compute(), m + row)  # a numpy array with an index
    offset = delayed(lambda: 100.0)()
    got = xa.blockwise(lambda b, o, scale=1: b * scale + o, "ij", xa.from_array(m, chunks=2),
                       "ij", offset, None, scale=2)
    np.testing.assert_array_equal(got.compute(), m * 2 + 100)


def test_block_id_dtype_inference_and_one_task_per_block():
    x = xa.from_array(np.zeros((4, 6), "i4"), chunks=(2, 3))
    got = xa.blockwise(lambda b, block_id=None: b + 10 * block_id[0] + block_id[1], "ij",
                       x, "ij")
    assert got.dtype == np.int64 or got.dtype == np.int32
    np.testing.assert_array_equal(got.compute(), np.repeat(np.repeat([[0, 1], [10, 11]], 2, 0),
                                                           3, 1))
    layer = got._graph.layers[got.name]
    assert len(layer) == 4
    for key, task in layer.items():
        assert len(dependencies(task)) == 1
    assert xa.blockwise(np.sqrt, "ij", x, "ij").dtype == np.float64


def test_rechunking_to_the_common_blocks_is_a_layer_of_its_own():
    a = values((6, 6))
    x, y = xa.from_array(a, chunks=2), xa.from_array(a, chunks=3)
    got = xa.blockwise(np.add, "ij", x, "ij", y, "ij", dtype=float)
    assert got.chunks == ((2, 1, 1, 2),) * 2
    assert any(name.startswith("rechunk") for name in got._graph.layers)
    np.testing.assert_array_equal(got.compute(), 2 * a)


def test_blockwise_errors_when_built():
    x = xa.from_array(np.zeros((4, 6)), chunks=2)
    y = xa.from_array(np.zeros((5, 6)), chunks=2)
    with pytest.raises(TypeError, match="pairs"):
        xa.blockwise(np.add, "ij", x, "ij", y)
    with pytest.raises(ValueError, match=r"argument 0 has 2 dimensions .* index 'ijk' names 3"):
        xa.blockwise(np.add, "ij", x, "ijk")
    with pytest.raises(ValueError, match=r"output index 'k' is in no argument's index"):
        xa.blockwise(np.add, "ik", x, "ij", dtype=float)
    with pytest.raises(ValueError, match=r"index 'i' has length 4 in argument 0 but 5 in "
                                         r"argument 1"):
        xa.blockwise(np.add, "ij", x, "ij", y, "ij", dtype=float)
    with pytest.raises(ValueError, match=r"new_axes names index 'j', which argument 0"):
        xa.blockwise(np.add, "ij", x, "ij", new_axes={"j": 3}, dtype=float)
    with pytest.raises(ValueError, match=r"adjust_chunks names index 'k'"):
        xa.blockwise(np.add, "ij", x, "ij", adjust_chunks={"k": 1}, dtype=float)
    with pytest.raises(ValueError, match=r"adjust_chunks\['i'\] gives 3 block sizes"):
        xa.blockwise(np.add, "ij", x, "ij", adjust_chunks={"i": (1, 1, 1)}, dtype=float)
    with pytest.raises(ValueError, match="diagonal that concatenate=True cannot join"):
        xa.blockwise(np.trace, "", x[:4, :4], "ii", concatenate=True, dtype=float)
    with pytest.raises(ValueError, match="names an index twice"):
        xa.blockwise(np.add, "ii", x, "ij", dtype=float)
    with pytest.raises(TypeError, match="only arrays take indices"):
        xa.blockwise(np.add, "ij", x, "ij", delayed(np.ones)(3), "ij", dtype=float)
    with pytest.raises(ValueError, match="pass dtype= explicitly"):
        xa.blockwise(lambda b: b.reshape(7), "ij", x, "ij")


# --------------------------------------------------------------------------- einsum

EINSUM_CASES = [
    ("ij,jk->ik", [(5, 7), (7, 4)]),        # matrix product
    ("ij,jk", [(5, 7), (7, 4)]),            # implicit output
    ("ij,kj", [(5, 7), (4, 7)]),
    ("ii->i", [(5, 5)]),                    # diagonal
    ("ii", [(5, 5)]),                       # trace
    ("ij->ji", [(5, 7)]),                   # transpose
    ("ij->", [(5, 7)]),
    ("ij->j", [(5, 7)]),
    ("i,j->ij", [(5,), (7,)]),              # outer product
    ("i,i", [(7,), (7,)]),                  # inner product
    ("bij,bjk->bik", [(3, 5, 7), (3, 7, 4)]),  # batched matmul
    ("bij,bjk", [(3, 5, 7), (3, 7, 4)]),
    ("ijk,jil->kl", [(5, 4, 3), (4, 5, 2)]),
    ("ij,ij->i", [(5, 7), (5, 7)]),
    ("ij,ij->ij", [(5, 7), (1, 7)]),        # a length-1 axis broadcasts
    ("Ba,aC", [(4, 5), (5, 3)]),            # upper-case letters sort first
    ("ab,bC", [(4, 5), (5, 3)]),
    ("...ij,...jk->...ik", [(3, 5, 7), (7, 4)]),  # ellipsis, broadcast right-aligned
    ("...ij,...jk", [(2, 3, 5, 7), (3, 7, 4)]),
    ("i...->...", [(5, 3, 2)]),
    ("...i,...i", [(4, 5), (5,)]),
]


@pytest.mark.parametrize("chunks", CHUNKINGS, ids=str)
@pytest.mark.parametrize("subscripts,shapes", EINSUM_CASES, ids=[c[0] for c in EINSUM_CASES])
def test_einsum_matches_numpy(subscripts, shapes, chunks):
    data = [values(s, seed=k) for k, s in enumerate(shapes)]
    arrays = [chunked(d, chunks) for d in data]
    expected = np.einsum(subscripts, *data)
    got = xa.einsum(subscripts, *arrays)
    assert isinstance(got, xa.Array) and got.shape == expected.shape
    assert got.dtype == expected.dtype
    np.testing.assert_allclose(got.compute(), expected, rtol=1e-12)
    through_numpy = np.einsum(subscripts, *arrays)  # NumPy's einsum runs xsched.array's
    assert isinstance(through_numpy, xa.Array)
    np.testing.assert_allclose(through_numpy.compute(), expected, rtol=1e-12)


def test_einsum_dtypes_mixed_with_numpy_and_optimize():
    a, b = values((5, 7), dtype="i4"), values((7, 4), seed=1, dtype="f4")
    x = xa.from_array(a, chunks=2)
    for operands in [(x, b), (a, xa.from_array(b, chunks=3))]:
        got = xa.einsum("ij,jk->ik", *operands, optimize=True)
        expected = np.einsum("ij,jk->ik", a, b)
        assert got.dtype == expected.dtype
        np.testing.assert_allclose(got.compute(), expected, rtol=1e-6)
    ints = xa.einsum("ij,jk->ik", x, x.T)
    assert ints.dtype == a.dtype
    np.testing.assert_array_equal(ints.compute(), np.einsum("ij,jk->ik", a, a.T))
    got = xa.einsum("ij->i", x, dtype=np.float64)
    assert got.dtype == np.float64
    np.testing.assert_array_equal(got.compute(), a.sum(axis=1, dtype=np.float64))
    flags = values((5, 7), dtype=bool)
    got = xa.einsum("ij,jk->ik", xa.from_array(flags, chunks=2), flags.T)
    assert got.dtype == bool
    np.testing.assert_array_equal(got.compute(), np.einsum("ij,jk->ik", flags, flags.T))


def test_einsum_adds_partials_in_a_bounded_tree():
    a, b = values((4, 40)), values((40, 3), seed=1)
    x, y = xa.from_array(a, chunks=(4, 2)), xa.from_array(b, chunks=(2, 3))  # 20 blocks on j
    got = xa.einsum("ij,jk->ik", x, y, split_every=3)
    np.testing.assert_allclose(got.compute(), a @ b)
    graph = got.__xsched_graph__()
    inputs = set(x.__xsched_graph__()) | set(y.__xsched_graph__())
    new = {k: t for k, t in graph.items() if k not in inputs}
    assert len(new) > 20 + 1  # partials, then more than one level of sums
    assert max(len(dependencies(t)) for t in new.values()) <= 3


def test_einsum_errors_when_built():
    x = xa.from_array(np.zeros((4, 6)), chunks=2)
    with pytest.raises(ValueError, match="names 2 operands but 1 were given"):
        xa.einsum("ij,jk->ik", x)
    with pytest.raises(ValueError, match=r"operand 0 has 2 dimensions .* name 3"):
        xa.einsum("ijk->i", x)
    with pytest.raises(ValueError, match="output index 'k' is in no operand"):
        xa.einsum("ij->k", x)
    with pytest.raises(ValueError, match="names an index twice"):
        xa.einsum("ij->ii", x)
    with pytest.raises(ValueError, match="index 'j' has length 6 in argument 0 but 4"):
        xa.einsum("ij,jk->ik", x, x)
    with pytest.raises(ValueError, match="no '...'"):
        xa.einsum("...j->j", x[None])
    with pytest.raises(ValueError, match="neither an index letter"):
        xa.einsum("i1->i", x)
    with pytest.raises(TypeError, match="interleaved form"):
        xa.einsum(x, [0, 1])
    with pytest.raises(TypeError, match="cannot cast"):
        xa.einsum("ij->i", x, dtype="i4")
