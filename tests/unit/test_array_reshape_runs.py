"""``reshape`` without joining blocks: axes merged into one need no rechunk when every
block is a run of consecutive elements, and ``merge_chunks=False`` cuts the input so
(property tests against NumPy on random shapes and chunkings)."""

from __future__ import annotations

import itertools
import operator

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import xsched.array as xa
from xsched.graph.spec import dependencies

from tests.unit.test_array_common_blocks import cuts_of


@st.composite
def merged(draw, fine):
    """``fine`` with random runs of consecutive axes multiplied into one."""
    out, i = [], 0
    while i < len(fine):
        j = draw(st.integers(i + 1, len(fine)))
        out.append(int(np.prod(fine[i:j])))
        i = j
    return tuple(out)


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_reshape_matches_numpy_with_and_without_merging_blocks(data):
    fine = data.draw(st.lists(st.integers(1, 4), min_size=1, max_size=5))
    old, new = data.draw(merged(fine)), data.draw(merged(fine))
    a = np.arange(int(np.prod(old))).reshape(old)
    x = xa.from_array(a, chunks=tuple(data.draw(cuts_of(n)) for n in old))
    for merge in (True, False):
        got = x.reshape(new, merge_chunks=merge)
        np.testing.assert_array_equal(got.compute(), a.reshape(new))
        assert got.shape == new
        joins_only = set(itertools.accumulate(new, operator.mul)) <= set(itertools.accumulate(old, operator.mul))
        if joins_only and not merge:  # axes only joined: blocks are split, no task reads two of x
            for name, layer in got._graph.layers.items():
                if name.startswith("rechunk"):
                    assert all(len(dependencies(t)) == 1 for t in layer.values())


def test_frames_in_blocks_of_one_merge_with_their_rows_without_a_rechunk():
    movie = xa.from_array(np.arange(4 * 6 * 5).reshape(4, 6, 5), chunks=(1, 3, 5))
    flat = movie.reshape(24, 5)
    assert not any(name.startswith("rechunk") for name in flat._graph.layers)
    assert flat.chunks == ((3,) * 8, (5,))
    np.testing.assert_array_equal(flat.compute(), np.arange(120).reshape(24, 5))
    # the same with the blocks of rows cut otherwise: merge_chunks=False only splits
    x = xa.from_array(np.arange(120).reshape(4, 6, 5), chunks=(2, 4, 5))
    assert x.reshape(24, 5, merge_chunks=False).chunks == ((4, 2) * 4, (5,))
    assert x.reshape(24, 5).chunks != x.reshape(24, 5, merge_chunks=False).chunks
    # empty blocks (as from_array allows) give empty runs
    e = xa.from_array(np.arange(6).reshape(2, 3), chunks=((1, 0, 1), (2, 1)))
    assert e.reshape(6).chunks == ((2, 1, 0, 0, 2, 1),)
    np.testing.assert_array_equal(e.reshape(6).compute(), np.arange(6))


@settings(max_examples=100, deadline=None)
@given(st.data())
def test_limit_caps_the_blocks_a_reshape_makes(data):
    rows, cols = data.draw(st.integers(1, 12)), data.draw(st.integers(1, 12))
    a = np.arange(rows * cols, dtype=np.int64).reshape(rows, cols)
    x = xa.from_array(a, chunks=(data.draw(cuts_of(rows)), data.draw(cuts_of(cols))))
    limit = data.draw(st.integers(1, 8 * rows * cols))
    got = x.reshape(rows * cols, limit=limit)
    np.testing.assert_array_equal(got.compute(), a.ravel())
    # no block above the limit, unless one row of the input (what each block holds at least)
    assert max(got.chunks[0]) * 8 <= max(limit, 8 * cols)
