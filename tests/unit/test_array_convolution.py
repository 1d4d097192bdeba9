"""convolve and correlate of 1-d arrays (xsched/array/convolution.py) against NumPy's on random
lengths, chunkings, dtypes and modes, either operand lazy; tril/triu of a vector; the
store and partitions methods."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import xsched.array as xa


@settings(max_examples=80, deadline=None, database=None)
@given(st.data())
def test_convolve_and_correlate_equal_numpys(data):
    n, m = data.draw(st.integers(1, 14)), data.draw(st.integers(1, 14))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    a = rng.normal(size=n) + (1j * rng.normal(size=n) if data.draw(st.booleans()) else 0)
    v = rng.integers(-3, 4, size=m) if data.draw(st.booleans()) else rng.normal(size=m)
    lazy = data.draw(st.sampled_from(["a", "v", "both"]))
    x = xa.from_array(a, chunks=data.draw(st.integers(1, n))) if lazy != "v" else a
    k = xa.from_array(v, chunks=data.draw(st.integers(1, m))) if lazy != "a" else v
    for mode in ("full", "same", "valid"):
        for func in (np.convolve, np.correlate):
            got, want = func(x, k, mode), func(a, v, mode)
            assert isinstance(got, xa.Array) and got.dtype == want.dtype
            np.testing.assert_allclose(got.compute(), want, rtol=1e-10, atol=1e-12)


def test_an_output_block_reads_only_the_input_blocks_that_reach_it():
    x = xa.from_array(np.arange(100.0), chunks=10)
    y = xa.convolve(x, np.ones(3))
    (layer,) = [layer for name, layer in y._graph.layers.items() if name.startswith("convolve-")]
    assert len(layer) == 11  # 102 cells in blocks of 10
    for task in layer.values():
        assert len(task.args[0]) <= 2  # its own block and the one before (2 cells of it)
    np.testing.assert_allclose(y.compute(), np.convolve(np.arange(100.0), np.ones(3)))


def test_bad_input_fails_when_built_as_numpys():
    x = xa.ones(5, chunks=2)
    with pytest.raises(ValueError, match=r"mode must be one of 'valid', 'same', or 'full' \(got 'middle'\)"):
        xa.convolve(x, [1.0], mode="middle")
    with pytest.raises(ValueError, match="v cannot be empty"):
        xa.convolve(x, [])
    with pytest.raises(ValueError, match=r"must be 1-d arrays; their shapes are \(5,\) and \(1, 2\)"):
        xa.correlate(x, [[1.0, 2.0]])


@pytest.mark.parametrize("n,chunks", [(1, 1), (4, 3), (7, 2)])
@pytest.mark.parametrize("k", [-2, 0, 1])
def test_tril_and_triu_of_a_vector_are_numpys_square_matrix(n, chunks, k):
    a = np.arange(1, n + 1)
    x = xa.from_array(a, chunks=chunks)
    np.testing.assert_array_equal(xa.tril(x, k).compute(), np.tril(a, k))
    np.testing.assert_array_equal(np.triu(x, k).compute(), np.triu(a, k))
    assert xa.tril(x).chunks == (x.chunks[0], x.chunks[0])
    with pytest.raises(ValueError, match="at least one dimension"):
        xa.tril(xa.from_array(np.float64(1.0)))


def test_store_and_partitions_methods():
    x = xa.from_array(np.arange(6.0).reshape(2, 3), chunks=(1, 2))
    out = np.zeros((2, 3))
    assert x.store(out) is None
    np.testing.assert_array_equal(out, np.arange(6.0).reshape(2, 3))
    np.testing.assert_array_equal(x.partitions[1, 1].compute(), [[5.0]])
