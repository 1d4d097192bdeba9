"""Arrays cut differently along a shared axis are brought to common blocks before their
blocks are paired (element-wise operations, ``map_blocks``, ``blockwise``, ``concatenate``):
every cut any of them makes, so no block is ever joined. Property tests on random cuts."""

from __future__ import annotations

import itertools

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import xsched.array as xa
from xsched.array.chunks import common_blocks
from xsched.graph.spec import Task, dependencies


def ends(blocks):
    return set(itertools.accumulate(blocks))


@st.composite
def cuts_of(draw, n):
    """Blocks of positive sizes summing to ``n``."""
    points = draw(st.sets(st.integers(1, n - 1), max_size=min(n - 1, 6))) if n > 1 else set()
    bounds = [0, *sorted(points), n]
    return tuple(b - a for a, b in zip(bounds, bounds[1:]))


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 30).flatmap(lambda n: st.lists(cuts_of(n), min_size=1, max_size=4)))
def test_common_blocks_split_every_input_and_join_none(cuts):
    got = common_blocks(cuts)
    assert sum(got) == sum(cuts[0]) and all(b > 0 for b in got)
    several = [c for c in cuts if len(c) > 1]
    # every block of every input is a run of whole blocks of the result ...
    assert all(ends(c) <= ends(got) for c in several)
    # ... and the result cuts nowhere no input cuts
    assert ends(got) <= set().union(*map(ends, cuts))


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_arrays_cut_otherwise_combine_like_numpy(data):
    rows, cols = data.draw(st.integers(1, 12)), data.draw(st.integers(1, 12))
    a = np.arange(rows * cols, dtype=float).reshape(rows, cols)
    b = -a[::-1] + 0.5
    x = xa.from_array(a, chunks=(data.draw(cuts_of(rows)), data.draw(cuts_of(cols))))
    y = xa.from_array(b, chunks=(data.draw(cuts_of(rows)), data.draw(cuts_of(cols))))
    for got, want in [(x * y, a * b), (xa.map_blocks(np.subtract, x, y), a - b),
                      (xa.blockwise(np.add, "ij", x, "ij", y, "ij", dtype=float), a + b),
                      (xa.concatenate([x, y], axis=0), np.concatenate([a, b]))]:
        np.testing.assert_array_equal(got.compute(), want)
    assert [ends(c) for c in (x + y).chunks] == [ends(x.chunks[d]) | ends(y.chunks[d]) for d in range(2)]


def test_one_block_against_many_is_split_never_the_many_joined():
    big = xa.from_array(np.ones((8, 6)), chunks=(2, 3))
    whole = xa.from_array(np.ones((8, 6)), chunks=-1)
    [whole_key] = [k for k, v in whole.__xsched_graph__().items() if isinstance(v, Task)]
    for got, pieces in [(whole + big, 8), (big + whole, 8), (xa.map_blocks(np.add, whole, big), 8),
                        (xa.blockwise(np.add, "ij", whole, "ij", big, "ij", dtype=float), 8),
                        (xa.concatenate([whole, big], axis=1), 4)]:  # (cut along axis 0 only)
        assert got.chunks[0] == big.chunks[0]
        # a rechunk of the one block alone, into pieces: big's blocks are not touched
        [rechunk] = [layer for name, layer in got._graph.layers.items() if name.startswith("rechunk")]
        assert len(rechunk) == pieces and all(dependencies(t) == {whole_key} for t in rechunk.values())
