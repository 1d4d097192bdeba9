"""Boolean masks (``x[x > 5]``) and arrays whose blocks' lengths are unknown until computed
(xsched/array/masking.py), against NumPy."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

import xsched.array as xa
from xsched.array.masking import boolean_mask


@pytest.mark.parametrize("shape, chunks", [((23,), 5), ((6, 7), (4, 3)), ((4, 5, 6), (3, 2, 4)), ((9,), 9)])
def test_a_mask_keeps_numpy_s_elements_in_c_order(shape, chunks):
    data = np.random.default_rng(0).normal(size=shape)
    x = xa.from_array(data, chunks=chunks)
    got = x[x > 0.3]
    assert got.ndim == 1 and math.isnan(got.shape[0])
    np.testing.assert_array_equal(got.compute(), data[data > 0.3])
    np.testing.assert_array_equal(x[data > 0.3].compute(), data[data > 0.3])  # a numpy mask too
    sized = got.compute_chunk_sizes()
    assert sized.shape == (int((data > 0.3).sum()),) and sized.name == got.name
    assert sized is got  # (in place, as dask users call it: on a line of its own)
    np.testing.assert_array_equal(sized[1:4].compute(), data[data > 0.3][1:4])  # known again: slicing works


def test_compute_chunk_sizes_on_a_line_of_its_own_makes_the_array_usable():
    x = xa.from_array(np.arange(10), chunks=4)
    y = x[x % 2 == 0]
    y.compute_chunk_sizes()
    assert y.chunks == ((2, 2, 1),)
    assert y[1:4].compute().tolist() == [2, 4, 6] and len(y) == 5
    assert x.compute_chunk_sizes() is x  # (known already: nothing to do)


def test_reductions_and_arithmetic_work_on_unknown_lengths():
    data = np.arange(40.0).reshape(5, 8)
    x = xa.from_array(data, chunks=(2, 3))
    m, want = x[x % 3 == 1], data[data % 3 == 1]
    for got, expected in [(m.sum(), want.sum()), (m.mean(), want.mean()), (m.std(), want.std()),
                          (m.min(), want.min()), (m.max(), want.max()), ((m * 2 + 1).sum(), (want * 2 + 1).sum()),
                          ((m + m).max(), (want + want).max()), (np.sum(m), want.sum())]:
        assert np.isclose(got.compute(), expected)
    assert (m > 10).sum().compute() == (want > 10).sum()


def test_an_empty_selection_reduces_as_numpy_does():
    x = xa.from_array(np.arange(10), chunks=3)
    none = x[x > 100]
    assert none.compute().tolist() == [] and none.sum().compute() == 0
    with pytest.raises(ValueError, match="zero-size array to reduction operation max"):
        none.max().compute()


def test_what_needs_the_lengths_says_so_when_built():
    x = xa.from_array(np.arange(10), chunks=3)
    m = x[x > 4]
    for what, call in [("indexing", lambda: m[1:3]), ("len()", lambda: len(m)), ("rechunk", lambda: m.rechunk(2)),
                       ("a boolean mask", lambda: m[x[3:] > 6])]:
        with pytest.raises(ValueError, match=f"{re.escape(what)}( along axis 0)? needs the lengths.*compute_chunk_sizes"):
            call()
    with pytest.raises(ValueError, match="add: an array with blocks of unknown length.*compute_chunk_sizes"):
        m + xa.ones(5, chunks=2)
    with pytest.raises(IndexError, match=r"axis 0 must be one-dimensional with the axis's length 10, not shape \(3,\)"):
        x[np.array([True, False, True])]
    with pytest.raises(IndexError, match=r"shape \(1, 3\) cannot index an array of shape \(10,\)"):
        x[np.array([[True, False, True]])]
    with pytest.raises(TypeError, match="dtype bool, not int64"):
        boolean_mask(x, x)
    assert "unknown" in m._repr_html_() and "nan" in repr(m)


def test_known_axes_of_a_masked_array_index_and_broadcast_as_numpy():
    """Rows picked by a mask leave the columns known: they can be sliced, picked and
    broadcast against, as in NumPy; only the rows' axis must be taken whole."""
    data = np.arange(60).reshape(10, 6)
    x = xa.from_array(data, chunks=(3, 4))
    r, want = x[x[:, 0] % 12 == 0], data[data[:, 0] % 12 == 0]
    for index in [(slice(None), 2), (slice(None), slice(1, 5)), (Ellipsis, -1), (slice(None), [0, 5, 2]),
                  (slice(None), slice(None, None, -2)), (slice(None), None, 3)]:
        np.testing.assert_array_equal(r[index].compute(), want[index])
    np.testing.assert_array_equal(r.T[4].compute(), want.T[4])
    for other in [np.arange(6), xa.arange(6, chunks=5), xa.ones((1, 6), chunks=2), 2.5]:
        plain = other.compute() if hasattr(other, "compute") else other
        np.testing.assert_array_equal((r * other).compute(), want * plain)
        np.testing.assert_array_equal((other - r).compute(), plain - want)
    np.testing.assert_array_equal((r + r[:, :1]).compute(), want + want[:, :1])
    with pytest.raises(ValueError, match="indexing along axis 0 needs the lengths"):
        r[1:, 2]
    with pytest.raises(ValueError, match=r"along axis 0 can only be combined .* not shape \(6,\)"):
        r[:, 0] + np.arange(6)
    with pytest.raises(ValueError, match=r"do not broadcast together \(axis 1: lengths \[5, 6\]\)"):
        r + np.arange(5)


@pytest.mark.parametrize("shape, chunks", [((17,), 4), ((5, 6), (2, 4)), ((3, 4, 5), (2, 3, 2))])
def test_nonzero_flatnonzero_argwhere_and_where_match_numpy(shape, chunks):
    data = np.random.default_rng(1).integers(0, 3, size=shape)
    x = xa.from_array(data, chunks=chunks)
    for got, want in zip(xa.nonzero(x), np.nonzero(data)):
        np.testing.assert_array_equal(got.compute(), want)
    for got, want in zip(xa.where(x > 1), np.where(data > 1)):
        np.testing.assert_array_equal(got.compute(), want)
    for got, want in zip(np.nonzero(x), np.nonzero(data)):  # through __array_function__
        np.testing.assert_array_equal(got.compute(), want)
    np.testing.assert_array_equal(xa.flatnonzero(x).compute(), np.flatnonzero(data))
    np.testing.assert_array_equal(xa.argwhere(x).compute(), np.argwhere(data))
    assert xa.argwhere(x).compute_chunk_sizes().shape == np.argwhere(data).shape


@pytest.mark.parametrize("chunks", [5, 1, 40])
@pytest.mark.parametrize("split_every", [2, None])
def test_unique_with_counts_matches_numpy(chunks, split_every):
    data = np.random.default_rng(2).integers(-5, 20, size=(8, 5))
    x = xa.from_array(data, chunks=chunks)
    values, counts = xa.unique(x, return_counts=True, split_every=split_every)
    want_values, want_counts = np.unique(data, return_counts=True)
    np.testing.assert_array_equal(values.compute(), want_values)
    np.testing.assert_array_equal(counts.compute(), want_counts)
    np.testing.assert_array_equal(np.unique(x).compute(), want_values)
    np.testing.assert_array_equal(xa.unique(x[x > 10]).compute(), np.unique(data[data > 10]))


def test_isin_matches_numpy():
    data = np.arange(30).reshape(5, 6)
    x = xa.from_array(data, chunks=(2, 4))
    for values in ([3, 7, 29, 100], np.array([[0, 1], [2, 3]]), xa.from_array(np.array([5, 6]), chunks=1)):
        want = np.isin(data, np.asarray(values.compute() if hasattr(values, "compute") else values))
        np.testing.assert_array_equal(xa.isin(x, values).compute(), want)
        np.testing.assert_array_equal(xa.isin(x, values, invert=True).compute(), ~want)
    np.testing.assert_array_equal(np.isin(x, [1, 2]).compute(), np.isin(data, [1, 2]))
    with pytest.raises(ValueError, match="split_every must be an int of at least 2"):
        xa.unique(x, split_every=1)


def test_a_masked_array_is_masked_again_stacked_and_joined_by_its_own_blocks():
    """Results of the same mask share their blocks of unknown length: they mask, stack and
    join each other as NumPy's would, with no lengths computed."""
    data = np.arange(60).reshape(12, 5)
    x = xa.from_array(data, chunks=(4, 2))
    r, want = x[x[:, 0] % 10 == 0], data[data[:, 0] % 10 == 0]
    np.testing.assert_array_equal(r[r[:, 1] > 20].compute(), want[want[:, 1] > 20])
    np.testing.assert_array_equal(r[:, 3][r[:, 3] % 2 == 0].compute(), want[:, 3][want[:, 3] % 2 == 0])
    np.testing.assert_array_equal(xa.stack([r[:, 0], r[:, 1]], axis=1).compute(), np.stack([want[:, 0], want[:, 1]], 1))
    np.testing.assert_array_equal(xa.concatenate([r, r[:, :2]], axis=1).compute(),
                                  np.concatenate([want, want[:, :2]], axis=1))
    columns, wanted = x[:, x[0] > 1], data[:, data[0] > 1]
    np.testing.assert_array_equal(columns[:, columns[0] > 2].compute(), wanted[:, wanted[0] > 2])
    with pytest.raises(ValueError, match="a boolean mask needs the lengths"):
        r[x[:, 0] > 3]  # (another mask's blocks)
    with pytest.raises(ValueError, match="concatenate along axis 0 needs the lengths"):
        xa.concatenate([r, x], axis=1)
    np.testing.assert_array_equal(xa.pad(r, ((0, 0), (2, 2)), mode="edge").compute(),  # (test_array_unknown_axes)
                                  np.pad(want, ((0, 0), (2, 2)), mode="edge"))
    with pytest.raises(ValueError, match="pad along axis 0 needs the lengths"):
        xa.pad(r, ((1, 0), (2, 2)), mode="edge")
    with pytest.raises(ValueError, match=r"indexing along axis 0 .* take that axis whole \(':' in its place\)"):
        r[::-1]


def test_cov_of_masked_observations_as_numpy():
    import warnings

    data = np.arange(12.0).reshape(6, 2) ** 1.5
    x = xa.from_array(data, chunks=(3, 2))
    m, want = x[x[:, 0] > 1], data[data[:, 0] > 1]
    np.testing.assert_allclose(xa.cov(m[:, 0]).compute(), np.cov(want[:, 0]))
    np.testing.assert_allclose(xa.cov(m[:, 0], m[:, 1]).compute(), np.cov(want[:, 0], want[:, 1]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        none = data[data[:, 0] > 100]
        assert np.isnan(xa.cov(x[x[:, 0] > 100], rowvar=False).compute()).all() and np.isnan(np.cov(none, rowvar=False)).all()
    with pytest.raises(ValueError, match="number of variables of m .* rowvar=False"):
        xa.cov(m)


def test_a_mask_of_another_masks_blocks_fails_when_computed_rather_than_cut():
    x = xa.from_array(np.arange(24).reshape(12, 2), chunks=(4, 2))
    rows, other = x[x[:, 0] % 4 == 0], x[x[:, 0] < 10]  # (as many blocks, other lengths)
    with pytest.raises(ValueError, match="came from different masks; call compute_chunk_sizes"):
        rows[other[:, 0] > 0].compute()


def test_sorts_and_medians_along_a_known_axis_of_a_masked_array():
    """Rows a mask left of unknown lengths: an operation on whole rows (sort, argsort, median
    along axis 1) joins that known axis's blocks itself; along the unknown axis it asks for
    compute_chunk_sizes."""
    a = np.random.default_rng(0).random((7, 9))
    x = xa.from_array(a, chunks=(3, 4))
    masked = x[x[:, 0] > 0.3]
    kept = a[a[:, 0] > 0.3]
    np.testing.assert_array_equal(np.sort(masked, axis=1).compute(), np.sort(kept, axis=1))
    np.testing.assert_array_equal(np.argsort(masked, axis=1).compute(), np.argsort(kept, axis=1))
    np.testing.assert_allclose(xa.median(masked, axis=1).compute(), np.median(kept, axis=1))
    with pytest.raises(ValueError, match=r"axis 0 in 3 chunks\), and the chunk sizes are unknown"):
        np.sort(masked, axis=0)
