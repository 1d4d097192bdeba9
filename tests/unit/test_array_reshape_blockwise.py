"""reshape_blockwise: each block reshaped on its own, in C order of blocks, no rechunk."""

from __future__ import annotations

import numpy as np
import pytest

import xsched.array as xa


@pytest.mark.parametrize("shape, chunks, new", [((4, 6), (2, 3), (24,)), ((6, 5, 4), (3, 2, 2), (30, 4)),
                                                ((6, 5, 4), (2, 5, 3), (6, 20)), ((3, 4), (1, 4), (12,))])
def test_reshape_blockwise_reshapes_each_block_and_round_trips(shape, chunks, new):
    data = np.arange(np.prod(shape)).reshape(shape)
    x = xa.from_array(data, chunks=chunks)
    y = xa.reshape_blockwise(x, new)
    assert y.shape == new
    # every block of the input, reshaped, is a block of the output, in C order of blocks
    blocks = [data[tuple(slice(sum(c[:i]), sum(c[:i + 1])) for c, i in zip(x.chunks, idx))].ravel()
              for idx in np.ndindex(*x.numblocks)]
    got = [np.asarray(d.compute()).ravel() for d in np.ravel(np.array(y.to_delayed(), dtype=object))]
    assert all(np.array_equal(a, b) for a, b in zip(blocks, got)) and len(blocks) == len(got)
    back = xa.reshape_blockwise(y, shape, chunks=x.chunks)
    np.testing.assert_array_equal(back.compute(), data)


def test_reshape_blockwise_refusals():
    x = xa.from_array(np.arange(24).reshape(4, 6), chunks=(2, 3))
    with pytest.raises(ValueError, match="needs chunks="):
        xa.reshape_blockwise(x, (2, 2, 6))
    with pytest.raises(ValueError, match="do not give each of the 4 input blocks"):
        xa.reshape_blockwise(x, (2, 2, 6), chunks=((1, 1), (2,), (6,)))
    with pytest.raises(ValueError, match="chunks= is for reshapes to more"):
        xa.reshape_blockwise(x, (24,), chunks=6)
    with pytest.raises(ValueError, match="cannot reshape an array of size 24"):
        xa.reshape_blockwise(x, (25,))
