"""A block a user's function makes (``map_blocks``, ``blockwise``) must have the shape the
array's chunks promised: one that does not fails where it is made, naming the block and both
shapes, instead of giving an array whose blocks and chunks disagree."""

import numpy as np
import pytest

import xsched.array as xa


def test_map_blocks_of_another_shape_fails_naming_the_block_and_both_shapes():
    x = xa.ones((100, 60), chunks=(25, 30))
    wrong = x.map_blocks(lambda b: b[:, :2])  # (chunks= not given: the blocks promise (25, 30))
    assert wrong.shape == (100, 60)
    with pytest.raises(ValueError, match=r"block \(0, 0\) came back with shape \(25, 2\), but the array's chunks "
                                         r"promised \(25, 30\); .*chunks="):
        wrong.compute()
    right = x.map_blocks(lambda b: b[:, :2], chunks=(25, 2))
    assert right.compute().shape == right.shape == (100, 4)


def test_blockwise_of_another_shape_fails_naming_the_block():
    x = xa.from_array(np.arange(12.0).reshape(3, 4), chunks=2)
    wrong = xa.blockwise(lambda b: b[:1], "ij", x, "ij", dtype=float)
    with pytest.raises(ValueError, match=r"block \(0, 0\) came back with shape \(1, 2\), but the array's chunks "
                                         r"promised \(2, 2\)"):
        wrong.compute()
    right = xa.blockwise(lambda b: b[:1], "ij", x, "ij", dtype=float, adjust_chunks={"i": 1})
    np.testing.assert_array_equal(right.compute(), np.arange(12.0).reshape(3, 4)[[0, 2]])


def test_an_axis_of_unknown_length_is_not_checked():
    x = xa.from_array(np.arange(10.0), chunks=5)
    kept = x[x > 3]  # (blocks of unknown length)
    np.testing.assert_array_equal(kept.map_blocks(lambda b: b[b > 5]).compute(), np.arange(6.0, 10.0))


def test_map_overlap_names_the_padded_block_as_before():
    x = xa.from_array(np.arange(8.0), chunks=4)
    with pytest.raises(ValueError, match=r"shape \(5,\), but the graph expects \(6,\).*map_overlap"):
        x.map_overlap(lambda b: b[1:], depth=1, boundary="reflect", dtype=float).compute()
