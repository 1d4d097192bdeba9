"""Arrays whose blocks along one axis have unknown lengths (a boolean mask of columns):
the other axes rechunk, apply_along_axis, lstsq and pad work along them, as NumPy on the
result."""

from __future__ import annotations

import numpy as np
import pytest

import xsched.array as xa

A = np.arange(48.0).reshape(6, 8) % 7


def masked():
    x = xa.from_array(A, chunks=(2, 3))
    keep = A[0] > 2
    return x[:, x[0] > 2], A[:, keep]


@pytest.mark.parametrize("spec", [{0: -1}, {0: (1, 5)}, {0: 4}, {-2: 1}])
def test_rechunk_of_the_known_axis_keeps_the_unknown_one(spec):
    x, expected = masked()
    out = x.rechunk(spec)
    assert len(out.chunks[1]) == len(x.chunks[1]) and all(c != c for c in out.chunks[1])
    np.testing.assert_array_equal(out.compute(), expected)


@pytest.mark.parametrize("spec", [{1: -1}, 3, (2, 2)])
def test_rechunk_of_the_unknown_axis_asks_for_the_lengths(spec):
    x, _ = masked()
    with pytest.raises(ValueError, match="compute_chunk_sizes"):
        x.rechunk(spec)


def test_apply_along_axis_over_a_mask_with_empty_blocks_and_extra_arguments():
    x, expected = masked()  # (the mask leaves a block of no column)
    got = np.apply_along_axis(lambda v, k: v.sum() * k, 0, x, 10)
    np.testing.assert_array_equal(got.compute(), np.apply_along_axis(lambda v, k: v.sum() * k, 0, expected, 10))
    got = xa.apply_along_axis(np.sort, 0, x)
    np.testing.assert_array_equal(got.compute(), np.sort(expected, axis=0))


def test_lstsq_of_a_right_hand_side_with_unknown_columns():
    t = np.linspace(0, 1, 6)
    a = np.stack([t, np.ones(6)], axis=1)
    x, expected = masked()
    solution, residuals, rank, _ = np.linalg.lstsq(xa.from_array(a, chunks=(2, 2)), x, rcond=None)
    want, want_res, want_rank, _ = np.linalg.lstsq(a, expected, rcond=None)
    np.testing.assert_allclose(solution.compute(), want, atol=1e-12)
    np.testing.assert_allclose(residuals.compute(), want_res, atol=1e-12)
    assert int(rank.compute()) == want_rank


def test_unique_split_every_false_merges_all_at_once():
    data = np.array([3, 1, 3, 2, 1, 0, 7, 7])
    x = xa.from_array(data, chunks=2)
    for split in (False, None, 2, np.int64(3)):
        np.testing.assert_array_equal(xa.unique(x, split_every=split).compute(), np.unique(data))
    assert len([k for k in xa.unique(x, split_every=False).__xsched_graph__() if "-combine-" in k]) == 0
    with pytest.raises(ValueError, match="split_every must be an int of at least 2, False"):
        xa.unique(x, split_every=1)



@pytest.mark.parametrize("mode, kwargs", [
    ("constant", {}), ("constant", {"constant_values": (7, -1)}), ("edge", {}), ("reflect", {}),
    ("symmetric", {}), ("wrap", {}), ("maximum", {}), ("minimum", {"stat_length": 2}), ("mean", {}),
    ("median", {"stat_length": 3}), ("linear_ramp", {"end_values": (1, 2)}),
])
def test_pad_along_the_known_axis_of_rows_a_mask_kept(mode, kwargs):
    data = np.arange(30.0).reshape(6, 5)
    x = xa.from_array(data, chunks=(2, 2))
    rows = x[x[:, 0] % 4 != 0]
    expected_rows = data[data[:, 0] % 4 != 0]
    for widths in (((0, 0), (1, 2)), ((0, 0), (7, 3))):  # (wider than the axis too)
        padded = np.pad(rows, widths, mode=mode, **kwargs)
        assert padded.chunks[1] == (5 + sum(widths[1]),) and padded.chunks[0][0] != padded.chunks[0][0]
        np.testing.assert_array_equal(padded.compute(), np.pad(expected_rows, widths, mode=mode, **kwargs))


def test_pad_along_an_axis_of_unknown_lengths_is_refused_naming_it():
    x = xa.from_array(np.arange(30.0).reshape(6, 5), chunks=2)
    rows = x[x[:, 0] > 5]
    with pytest.raises(ValueError, match="pad along axis 0 needs the lengths of the array's blocks there"):
        np.pad(rows, 1)
    with pytest.raises(ValueError, match="stat_length of 0 yields no value for padding"):
        np.pad(rows, ((0, 0), (1, 1)), mode="minimum", stat_length=0)
