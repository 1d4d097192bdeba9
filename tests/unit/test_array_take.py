"""Integer-array indexing (``x[[3, 0, 7]]``, ``x[:, idx]``, ``xa.take``) against NumPy.

Property tests (hypothesis) draw a shape, a chunking, one integer-array index on some axis
and basic indices (ints, slices, None) on the others, and compare the result and its
chunks with NumPy's; the graph is checked to hold no task that reads more than one input
block. Everything runs in this process (no client)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import xsched.array as xa
from xsched.graph.spec import dependencies


@st.composite
def chunked(draw):
    """(values, chunks): an array of 1 to 3 dimensions with a random chunking."""
    shape = tuple(draw(st.lists(st.integers(1, 7), min_size=1, max_size=3)))
    chunks = []
    for n in shape:
        sizes, left = [], n
        while left:
            s = draw(st.integers(1, left))
            sizes.append(s)
            left -= s
        chunks.append(tuple(sizes))
    values = np.arange(int(np.prod(shape))).reshape(shape) * 10
    return values, tuple(chunks)


@st.composite
def index_with_one_array(draw, shape):
    """An index of ``shape`` with one list of integers on one axis and basic entries elsewhere."""
    axis = draw(st.integers(0, len(shape) - 1))
    out = []
    for ax, n in enumerate(shape):
        if draw(st.booleans()) and draw(st.booleans()):
            out.append(None)
        if ax == axis:
            out.append(draw(st.lists(st.integers(-n, n - 1), max_size=12)))
            continue
        kind = draw(st.sampled_from(["all", "int", "slice"]))
        if kind == "int":
            out.append(draw(st.integers(-n, n - 1)))
        elif kind == "slice":
            start, stop = draw(st.integers(-n, n)), draw(st.integers(-n, n))
            out.append(slice(start, stop, draw(st.sampled_from([1, 2, -1, 3]))))
        else:
            out.append(slice(None))
    return tuple(out)


@settings(max_examples=150, deadline=None, database=None)
@given(st.data())
def test_integer_array_indexing_matches_numpy(data):
    values, chunks = data.draw(chunked())
    index = data.draw(index_with_one_array(values.shape))
    x = xa.from_array(values, chunks=chunks)
    want = values[index]
    got = x[index]
    assert got.shape == want.shape and tuple(sum(c) for c in got.chunks) == want.shape
    np.testing.assert_array_equal(got.compute(), want)


@settings(max_examples=60, deadline=None, database=None)
@given(st.data())
def test_take_reads_at_most_one_input_block_per_task(data):
    values, chunks = data.draw(chunked())
    axis = data.draw(st.integers(0, values.ndim - 1))
    n = values.shape[axis]
    indices = data.draw(st.lists(st.integers(-n, n - 1), max_size=20))
    x = xa.from_array(values, chunks=chunks)
    y = xa.take(x, indices, axis=axis)
    np.testing.assert_array_equal(y.compute(), np.take(values, indices, axis=axis))
    inputs = {k for layer in x._graph.layers.values() for k in layer}
    for name in set(y._graph.layers) - set(x._graph.layers):
        for task in y._graph.layers[name].values():
            assert len(set(dependencies(task)) & inputs) <= 1


def test_the_result_is_chunked_like_the_input_along_the_axis():
    x = xa.from_array(np.arange(100), chunks=10)
    y = x[np.arange(99, -1, -3)]
    assert y.chunks == ((10, 10, 10, 4),)
    np.testing.assert_array_equal(y.compute(), np.arange(100)[np.arange(99, -1, -3)])


def test_indices_in_order_from_one_block_are_one_task_per_output_chunk():
    x = xa.from_array(np.arange(100), chunks=10)
    y = x[[11, 12, 13, 15]]
    new = set(y._graph.layers) - set(x._graph.layers)
    assert sum(len(y._graph.layers[n]) for n in new) == 1


def test_a_one_dimensional_boolean_numpy_index_has_known_chunks():
    values = np.arange(12).reshape(4, 3)
    x = xa.from_array(values, chunks=2)
    keep = np.array([True, False, True, True])
    assert x[keep].chunks == ((2, 1), (2, 1))
    np.testing.assert_array_equal(x[keep].compute(), values[keep])
    np.testing.assert_array_equal(x[:, np.array([False, True, True])].compute(), values[:, [1, 2]])


def test_numpy_take_dispatches_to_xsched():
    x = xa.from_array(np.arange(12).reshape(3, 4), chunks=2)
    y = np.take(x, [3, 1], axis=1)
    assert isinstance(y, xa.Array)
    np.testing.assert_array_equal(y.compute(), np.arange(12).reshape(3, 4)[:, [3, 1]])


@pytest.mark.parametrize("index, error, words", [
    ([5], IndexError, "index 5 is out of bounds for axis 0 with size 5"),
    ((slice(None), [-6]), IndexError, "index -6 is out of bounds for axis 1 with size 5"),
    (([0], [7]), IndexError, "index 7 is out of bounds for axis 1 with size 5"),
    ((np.array([[0, 7]]),), IndexError, "index 7 is out of bounds for axis 0 with size 5"),
    ((np.array([True, False]),), IndexError, "the axis's length 5"),
    ((np.array([0.5]),), IndexError, "integer (or boolean) type"),
])
def test_bad_indices_fail_when_the_expression_is_built(index, error, words):
    x = xa.from_array(np.arange(25).reshape(5, 5), chunks=2)
    with pytest.raises(error) as info:
        x[index]
    assert words in str(info.value)


def test_an_xsched_integer_array_as_index_takes_when_computed():
    x = xa.from_array(np.arange(5) * 10, chunks=2)
    got = x[xa.from_array(np.array([1, 2, -1]), chunks=1)]
    assert got.chunks == ((1, 1, 1),) and got.compute().tolist() == [10, 20, 40]
    with pytest.raises(TypeError, match="or hold integer positions"):
        x[xa.from_array(np.array([1.0]), chunks=1)]


@pytest.mark.parametrize("seed", range(40))
def test_positions_in_an_xsched_array_among_other_entries_index_as_numpy(seed):
    rng = np.random.default_rng(seed)
    shape = tuple(int(n) for n in rng.integers(2, 6, 3))
    data = np.arange(np.prod(shape)).reshape(shape)
    x = xa.from_array(data, chunks=tuple(int(rng.integers(1, n + 1)) for n in shape))
    axis = int(rng.integers(0, 3))
    positions = rng.integers(-shape[axis], shape[axis], int(rng.integers(1, 6)))
    entries = []
    for a in range(3):
        if a == axis:
            entries.append(xa.from_array(positions, chunks=int(rng.integers(1, len(positions) + 1))))
            continue
        kind = rng.integers(0, 4)
        entries.append(int(rng.integers(-shape[a], shape[a])) if kind == 0 else slice(None) if kind == 1 else
                       slice(int(rng.integers(0, shape[a])), None, int(rng.integers(1, 3))) if kind == 2 else
                       slice(None, None, -1))
    if rng.random() < 0.3:
        entries.insert(int(rng.integers(0, 4)), None)
    index = tuple(entries)
    expected = data[tuple(positions if isinstance(i, xa.Array) else i for i in index)]
    got = x[index]
    assert got.shape == expected.shape
    np.testing.assert_array_equal(got.compute(), expected)


@pytest.mark.parametrize("mode", ["wrap", "clip"])
@pytest.mark.parametrize("indices", [[-12, 13, 0], [[7, -1], [2, 3]], 9, np.array([True, False])])
@pytest.mark.parametrize("axis", [None, 0, 1])
def test_take_wraps_or_clips_positions_out_of_range_as_numpy(mode, indices, axis):
    a = np.arange(20).reshape(4, 5)
    x = xa.from_array(a, chunks=2)
    want = np.take(a, indices, axis=axis, mode=mode)
    np.testing.assert_array_equal(np.take(x, indices, axis=axis, mode=mode).compute(), want)
    np.testing.assert_array_equal(x.take(indices, axis=axis, mode=mode).compute(), want)


@pytest.mark.parametrize("mode", ["wrap", "clip"])
def test_take_of_lazy_positions_wraps_or_clips_them_too(mode):
    a = np.arange(20).reshape(4, 5)
    positions = xa.from_array(np.array([-12, 13, 4]), chunks=2)
    got = xa.take(xa.from_array(a, chunks=2), positions, axis=1, mode=mode).compute()
    np.testing.assert_array_equal(got, np.take(a, [-12, 13, 4], axis=1, mode=mode))


def test_take_modes_refuse_what_numpy_refuses():
    x = xa.from_array(np.arange(5), chunks=2)
    with pytest.raises(ValueError, match=r"clipmode must be one of 'clip', 'raise', or 'wrap' \(got 'x'\)"):
        np.take(x, [1], mode="x")
    with pytest.raises(IndexError, match="cannot do a non-empty take from an empty axes"):
        xa.take(xa.zeros((0,), chunks=1), [1], mode="clip")
    with pytest.raises(IndexError, match="index 9 is out of bounds"):
        xa.take(x, [9])
