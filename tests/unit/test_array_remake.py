"""Arrays made from their blocks' positions alone (``ones``, ``arange``, ``eye``...) are made
anew in other blocks when rechunked, rather than cut and joined: no rechunk layer, no block
of the old cutting ever computed. Property test against NumPy on random cuttings."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import xsched
import xsched.array as xa

from tests.unit.test_array_common_blocks import cuts_of

MAKERS = {  # name: (xsched array in given chunks, the NumPy array)
    "ones": (lambda c: xa.ones((9, 7), chunks=c), np.ones((9, 7))),
    "full": (lambda c: xa.full((9, 7), 2.5, chunks=c), np.full((9, 7), 2.5)),
    "eye": (lambda c: xa.eye(9, 7, k=1, chunks=c), np.eye(9, 7, k=1)),
    "tri": (lambda c: xa.tri(9, 7, k=-1, chunks=c), np.tri(9, 7, k=-1)),
    "fromfunction": (lambda c: xa.fromfunction(lambda i, j: i * 10 + j, (9, 7), chunks=c),
                     np.fromfunction(lambda i, j: i * 10 + j, (9, 7))),
}
MAKERS["indices"] = (lambda c: xa.indices((9, 7), chunks=c)[1], np.indices((9, 7))[1])
MAKERS_1D = {
    "arange": (lambda c: xa.arange(3, 66, chunks=c), np.arange(3, 66)),
    "linspace": (lambda c: xa.linspace(-1, 2, 63, chunks=c), np.linspace(-1, 2, 63)),
    "geomspace": (lambda c: xa.geomspace(1, 1000, 63, chunks=c), np.geomspace(1, 1000, 63)),
}


def layers(a):
    return [name.split("-")[0] for name in a._graph.layers]


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(sorted(MAKERS)), st.data())
def test_a_made_array_rechunked_is_made_in_the_new_blocks(kind, data):
    make, want = MAKERS[kind]
    old = (data.draw(cuts_of(9)), data.draw(cuts_of(7)))
    new = (data.draw(cuts_of(9)), data.draw(cuts_of(7)))
    x = make(old)
    got = x.rechunk(new)
    assert got.chunks == new
    assert "rechunk" not in layers(got) and len(got._graph.layers) == 1
    np.testing.assert_array_equal(got.compute(), want)


@settings(max_examples=30, deadline=None)
@given(st.sampled_from(sorted(MAKERS_1D)), st.data())
def test_a_made_sequence_rechunked_is_made_in_the_new_blocks(kind, data):
    make, want = MAKERS_1D[kind]
    got = make((data.draw(cuts_of(63)),)).rechunk((data.draw(cuts_of(63)),))
    assert len(got._graph.layers) == 1 and "rechunk" not in layers(got)
    np.testing.assert_array_equal(got.compute(), want)


def test_the_coordinates_of_indices_are_made_apart_when_their_axis_is_cut():
    x = xa.indices((3, 4), chunks=2)
    assert x.chunks[0] == (2,)
    y = x.rechunk({0: 1})
    assert y.chunks[0] == (1, 1) and "rechunk" not in layers(y)
    np.testing.assert_array_equal(y.compute(), np.indices((3, 4)))


@st.composite
def basic_index(draw, n):
    """An int, or a slice (of step 1 mostly: those are made anew; others cut as usual)."""
    if draw(st.booleans()):
        return draw(st.integers(-n, n - 1))
    start, stop = draw(st.integers(-n - 2, n + 2)), draw(st.integers(-n - 2, n + 2))
    return slice(start, stop, draw(st.sampled_from([1, 1, 1, None, 2, -1, 3, -2])))


#: the makers whose recipes make values at any positions (``generate``'s ``at``): a slice of
#: any step of them is made alone; of the others only slices of step 1
STRIDED = {"ones", "full", "eye", "tri", "arange", "arange_float", "linspace"}


@settings(max_examples=80, deadline=None)
@given(st.sampled_from(sorted(MAKERS)), st.data())
def test_a_slice_of_a_made_array_makes_only_that_part(kind, data):
    make, want = MAKERS[kind]
    x = make((data.draw(cuts_of(9)), data.draw(cuts_of(7))))
    index = (data.draw(basic_index(9)), data.draw(basic_index(7)))
    got = x[index]
    np.testing.assert_array_equal(np.asarray(got.compute()), want[index])
    steps = [i.indices(n)[2] for i, n in zip(index, (9, 7)) if isinstance(i, slice)]
    if (all(s == 1 for s in steps) or kind in STRIDED) and got.size:
        assert "getitem" not in layers(got) and len(got._graph.layers) == 1
        # the part is itself made from positions: rechunked, it is made anew too
        assert len(got.rechunk(1)._graph.layers) == 1


def test_a_whole_block_of_ones_added_to_many_blocks_is_never_made_whole():
    x = xa.from_array(np.arange(64.0).reshape(8, 8), chunks=2)
    y = xa.ones((8, 8), chunks=-1)
    z = y + x
    assert z.chunks == x.chunks
    assert sorted(layers(z)) == ["add", "from", "ones"]  # (no rechunk: the ones made in x's blocks)
    np.testing.assert_array_equal(z.compute(), np.arange(64.0).reshape(8, 8) + 1)


def test_annotations_of_the_made_array_stay_with_its_new_blocks():
    with xsched.annotate(priority=7):
        y = xa.zeros(6, chunks=-1)
    z = y.rechunk(2)
    tasks = [t for t in z.__xsched_graph__().values()]
    assert len(tasks) == 3 and all(t.annotations.get("priority") == 7 for t in tasks)
    with xsched.annotate(retries=2):  # (and those in force where it is cut, as a rechunk's tasks)
        w = y.rechunk(3)[1:5]
    assert all(t.annotations == {"priority": 7, "retries": 2} for t in w.__xsched_graph__().values())


def test_arrays_derived_from_a_made_array_are_rechunked_as_any_other():
    y = xa.ones(6, chunks=-1) * 2
    assert "rechunk" in layers(y.rechunk(2))
    np.testing.assert_array_equal(y.rechunk(2).compute(), np.full(6, 2.0))


def test_an_array_written_into_is_no_longer_made_anew():
    y = xa.zeros(6, chunks=-1)
    y[2:4] = 5
    np.testing.assert_array_equal(y.rechunk(2).compute(), [0, 0, 5, 5, 0, 0])


def test_triangle_indices_rechunked_and_sliced_are_made_anew():
    rows, cols = xa.tril_indices(12, 1, 9, chunks=5)
    want_rows, want_cols = np.tril_indices(12, 1, 9)
    for got, want in [(rows, want_rows), (cols, want_cols)]:
        assert len(got.rechunk(7)._graph.layers) == 1 and len(got[3:40]._graph.layers) == 1
        np.testing.assert_array_equal(got.rechunk(7).compute(), want)
        np.testing.assert_array_equal(got[3:40].compute(), want[3:40])


MAKERS_1D["arange_float"] = (lambda c: xa.arange(0.5, 44.5, 0.7, chunks=c), np.arange(0.5, 44.5, 0.7))


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(sorted(MAKERS_1D)), st.data())
def test_a_strided_slice_of_a_made_sequence_is_made_alone_as_its_blocks_would_be(kind, data):
    """Made alone where the recipe can (not geomspace's: cut as usual), and bit for bit the
    values the blocks would have given, cut (twice: a slice of a slice too)."""
    make, _ = MAKERS_1D[kind]
    x = make((data.draw(cuts_of(63)),))
    first = slice(data.draw(st.integers(-64, 64)), data.draw(st.integers(-64, 64)),
                  data.draw(st.sampled_from([2, 3, 5, 17, -1, -4])))
    second = slice(None, None, data.draw(st.sampled_from([1, 2, -3])))
    cut = x.map_blocks(np.copy)  # (the same blocks, no longer made from positions)
    for got, want in ((x[first], cut[first]), (x[first][second], cut[first][second])):
        np.testing.assert_array_equal(got.compute(), want.compute())
        assert got.dtype == want.dtype and got.chunks == want.chunks
        if got.size:
            assert ("getitem" not in layers(got)) == (kind in STRIDED)


def test_arange_of_integers_into_floats_is_cut_as_before():
    """NumPy fills a float block of integer steps from its first value on, in the dtype's
    rounding: values at other positions would not be those bits, so such a slice is cut."""
    x = xa.arange(0, 10, 3, dtype=np.float32, chunks=2)
    assert "getitem" in layers(x[::2])
    np.testing.assert_array_equal(x[::2].compute(), np.arange(0, 10, 3, dtype=np.float32)[::2])
    assert "getitem" not in layers(xa.arange(0, 10**12, 7, chunks=10**9)[::10**6])
