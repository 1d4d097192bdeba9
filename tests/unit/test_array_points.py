"""Pointwise indexing with several integer arrays against NumPy: ``x[rows, cols]`` paired
element by element (with ints, slices, negative indices, broadcasting index shapes), the
points' axes where NumPy puts them; ``x.vindex[...]`` with them first; a task never holds
more than one input block and one output chunk; and mistakes refused when built."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import xsched.array as xa


@st.composite
def arrays_and_points(draw):
    ndim = draw(st.integers(2, 4))
    shape = tuple(draw(st.lists(st.integers(1, 7), min_size=ndim, max_size=ndim)))
    chunks = tuple(draw(st.integers(1, n)) for n in shape)
    picked = sorted(draw(st.lists(st.integers(0, ndim - 1), min_size=2, max_size=ndim, unique=True)))
    points_shape = tuple(draw(st.lists(st.integers(0, 4), min_size=1, max_size=2)))
    index = []
    for axis, n in enumerate(shape):
        if axis in picked:
            kind = draw(st.sampled_from(["array", "array", "int", "row"]))
            if kind == "int":
                index.append(draw(st.integers(-n, n - 1)))
            else:  # (a full shape, or one that broadcasts: a row of the last length)
                size = points_shape if kind == "array" else points_shape[-1:]
                values = draw(st.lists(st.integers(-n, n - 1), min_size=int(np.prod(size)),
                                       max_size=int(np.prod(size))))
                index.append(np.array(values, dtype=np.intp).reshape(size))
        else:
            start = draw(st.integers(0, n - 1))
            index.append(draw(st.sampled_from([slice(None), slice(start, None), slice(None, None, -1)])))
    if sum(isinstance(i, np.ndarray) for i in index) < 1:  # (ints alone: make the first an array)
        index[picked[0]] = np.zeros(points_shape, dtype=np.intp)
    return shape, chunks, tuple(index)


@settings(max_examples=80, deadline=None)
@given(case=arrays_and_points())
def test_points_like_numpy(case):
    shape, chunks, index = case
    values = np.arange(int(np.prod(shape))).reshape(shape)
    x = xa.from_array(values, chunks=chunks)
    if sum(isinstance(i, np.ndarray) for i in index) + sum(isinstance(i, int) for i in index) < 2:
        return
    expected = values[index]
    got = x[index]
    assert got.shape == expected.shape
    np.testing.assert_array_equal(got.compute(), expected)
    # vindex: the same points, their axes first
    advanced = [p for p, i in enumerate(index) if not isinstance(i, slice)]
    points_ndim = np.broadcast(*[np.asarray(index[p]) for p in advanced]).ndim
    adjacent = advanced == list(range(advanced[0], advanced[-1] + 1))
    first = np.moveaxis(expected, list(range(advanced[0], advanced[0] + points_ndim)),
                        list(range(points_ndim))) if adjacent else expected
    np.testing.assert_array_equal(x.vindex[index].compute(), first)


def test_each_task_holds_one_block_and_one_output_chunk():
    values = np.arange(10_000).reshape(100, 100)
    x = xa.from_array(values, chunks=10)
    rng = np.random.default_rng(0)
    rows, cols = rng.integers(0, 100, 500), rng.integers(0, 100, 500)
    y = x[rows, cols]
    np.testing.assert_array_equal(y.compute(), values[rows, cols])
    assert y.chunks == ((10,) * 50,)  # (cut in the input's chunk size)
    graph = y.__xsched_graph__()
    picks = [k for k in graph if k.startswith("points-pick-")]
    assert 0 < len(picks) <= 500  # (a pick per block each output chunk needs, at most one per point)


def test_mistakes_are_refused_when_built():
    x = xa.from_array(np.arange(12).reshape(3, 4), chunks=2)
    with pytest.raises(IndexError, match="index 5 is out of bounds for axis 1 with size 4"):
        x[[0, 1], [1, 5]]
    with pytest.raises(IndexError, match="could not be broadcast"):
        x[[0, 1, 2], [1, 2]]
    with pytest.raises(IndexError, match="boolean array"):
        x[np.array([True, False, True]), [1, 2]]
    with pytest.raises(IndexError, match="at least one integer array"):
        x.vindex[1, 2]
    with pytest.raises(IndexError, match="too many indices"):
        x.vindex[[0], [1], [2]]
    np.testing.assert_array_equal(x.vindex[..., [1, 3]].compute(), np.arange(12).reshape(3, 4)[..., [1, 3]].T)


@pytest.mark.parametrize("index", [1, -1, (slice(None), 2), (slice(None, None, 2), [3, 0]), ([2, 0], slice(1, 3)),
                                   (Ellipsis, 1), ([0, 0], [1])])
def test_blocks_pick_blocks_by_their_place_in_the_grid(index):
    values = np.arange(60).reshape(6, 10)
    x = xa.from_array(values, chunks=(2, 3))
    rows = [values[r:r + 2] for r in range(0, 6, 2)]
    grid = [[row[:, c:c + 3] for c in range(0, 10, 3)] for row in rows]  # (numpy's blocks, by hand)
    full = index if isinstance(index, tuple) else (index,)
    full = full[:-1] + (slice(None),) if full[-1] is Ellipsis else full
    if full[0] is Ellipsis:
        full = (slice(None),) + full[1:]
    full = full + (slice(None),) * (2 - len(full))
    picks = [np.arange(n)[[i] if isinstance(i, int) else i] for i, n in zip(full, (3, 4))]
    expected = np.block([[grid[r][c] for c in picks[1]] for r in picks[0]])
    np.testing.assert_array_equal(x.blocks[index].compute(), expected)


def test_blocks_refuse_a_place_outside_the_grid():
    x = xa.from_array(np.zeros((4, 4)), chunks=2)
    with pytest.raises(IndexError, match="outside the 2 blocks of axis 1"):
        x.blocks[0, 2]
    with pytest.raises(IndexError, match="3 indices for a block grid"):
        x.blocks[0, 0, 0]
    with pytest.raises(IndexError, match="selects no block"):
        x.blocks[0:0]


def test_the_block_view_has_the_grid_s_shape_size_and_ravels_in_c_order():
    data = np.arange(30).reshape(5, 6)
    x = xa.from_array(data, chunks=(2, 4))
    assert x.blocks.shape == (3, 2) and x.blocks.size == 6
    flat = x.blocks.ravel()
    assert [b.shape for b in flat] == [(2, 4), (2, 2), (2, 4), (2, 2), (1, 4), (1, 2)]
    np.testing.assert_array_equal(flat[3].compute(), data[2:4, 4:])
    assert "(3, 2)" in repr(x.blocks)


def test_an_xsched_array_among_pointwise_positions_is_refused_not_taken_whole():
    """Its positions are known only when computed: it was read as ':' (the whole axis)."""
    x = xa.from_array(np.arange(12).reshape(3, 4), chunks=2)
    lazy = xa.from_array(np.array([3, 1]), chunks=1)
    with pytest.raises(IndexError, match=r"^x.vindex\[...\]: entry 1 of the index is an xsched array.*"
                                         r"compute it first \(np.asarray\(positions\)\)$"):
        x.vindex[[2, 0], lazy]
    with pytest.raises(IndexError, match="entry 1 of the index is an xsched array"):
        x.vindex[np.arange(3), x.argmax(axis=1)]
    with pytest.raises(IndexError, match=r"cannot be combined with other array indices.*np.asarray\(index\)"):
        x[[2, 0], lazy]
    assert x.vindex[[2, 0], np.asarray(lazy)].compute().tolist() == [11, 1]
