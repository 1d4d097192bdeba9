"""Review of the day's additions, against pandas, NumPy and Python: assert_eq that fails
only on what differs, positions in an xsched array beside a '...', and random_sample
seeded by NumPy's integers."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import xsched.array as xa
import xsched.bag as xb
import xsched.dataframe as xd
from xsched.array.mapping import blocks_of

PDF = pd.DataFrame({"a": [1, 2, 3, 4], "b": [1.0, np.nan, 3.0, 4.0]})


@pytest.mark.parametrize("npartitions", [1, 2, 3])
def test_dataframe_assert_eq_without_the_index_compares_values_in_their_order(npartitions):
    df = xd.from_pandas(PDF, npartitions=npartitions)
    assert xd.assert_eq(df.reset_index(drop=True), PDF.reset_index(drop=True), check_index=False)
    assert xd.assert_eq(df.b.reset_index(drop=True), PDF.b, check_index=False)
    with pytest.raises(AssertionError):
        xd.assert_eq(df.b.reset_index(drop=True), PDF.b.fillna(0), check_index=False)


def test_dataframe_assert_eq_with_repeated_labels_and_columns():
    dup = pd.DataFrame([[1, 2.0], [3, 4.0]], columns=["x", "x"])
    assert xd.assert_eq(xd.from_pandas(dup, npartitions=2), dup)
    named = pd.DataFrame({"a": [2, 1, 3]}, index=pd.Index([1, 1, 2], name="a"))
    assert xd.assert_eq(xd.from_pandas(named, npartitions=2), named)


def test_dataframe_assert_eq_a_result_of_another_kind_than_its_meta_fails_as_an_assertion():
    df = xd.from_pandas(PDF, npartitions=2)
    with pytest.raises(AssertionError, match="the result is a Series, its meta a DataFrame"):
        xd.assert_eq(df.map_partitions(lambda p: p.a, meta=PDF, enforce_metadata=False), PDF.a)
    with pytest.raises(AssertionError, match="a Series against a int"):
        xd.assert_eq(PDF.a, 3)


def test_dataframe_assert_eq_scalars_and_arrays():
    with pytest.raises(AssertionError):
        xd.assert_eq(2**60 + 1, 2**60)  # (whole numbers past 2**53: not within rtol)
    assert xd.assert_eq(np.float32(0.1), 0.1)
    assert xd.assert_eq(np.array([1, 2]), np.array([1, 2]))
    df = xd.from_pandas(PDF, npartitions=2)
    assert xd.assert_eq(df.values, PDF.values)
    with pytest.raises(AssertionError):
        xd.assert_eq(df.a.values, PDF.a.values + 1)


def test_array_assert_eq_checks_every_block_against_its_chunks_and_the_dtype():
    x = xa.from_array(np.arange(6.0), chunks=4)
    promoted = x.map_blocks(lambda b: b.astype("int64") if b[0] == 0 else b, dtype="float64")
    assert promoted.compute().dtype == np.float64  # (concatenation hides the int block)
    with pytest.raises(AssertionError, match=r"block \(0,\)'s dtype is int64"):
        xa.assert_eq(promoted, np.arange(6.0))
    reshaped = xa.from_array(np.arange(6.0), chunks=3).map_blocks(lambda b: b, chunks=((2, 4),))
    with pytest.raises(ValueError, match=r"block \(0,\) came back with shape \(3,\), but the array's chunks "
                                         r"promised \(2,\)"):
        xa.assert_eq(reshaped, np.arange(6.0))  # (map_blocks checks its blocks where they are made)
    unchecked = blocks_of(lambda b: b, [xa.from_array(np.arange(6.0), chunks=3)], {}, ((2, 4),), None, None,
                          None, None, check=False)
    with pytest.raises(AssertionError, match=r"block \(0,\)'s shape is \(3,\), the chunks promised \(2,\)"):
        xa.assert_eq(unchecked, np.arange(6.0))
    assert xa.assert_eq(x[x > 2], np.arange(6.0)[3:])


def test_array_assert_eq_without_shape_check_broadcasts():
    assert xa.assert_eq(xa.ones((2, 3), chunks=1), np.ones(3), check_shape=False)
    with pytest.raises(AssertionError, match="do not broadcast"):
        xa.assert_eq(xa.ones((2, 3), chunks=1), np.ones(2), check_shape=False)


@pytest.mark.parametrize("index", [
    lambda p: (None, -1, Ellipsis, p, slice(0, -4, 2), slice(None, None, -1)),
    lambda p: (slice(None, None, 2), 0, Ellipsis, 0, p),
    lambda p: (0, Ellipsis, p),
    lambda p: (Ellipsis, 1, p),
])
@pytest.mark.parametrize("chunks", [1, 2, 3])
def test_positions_and_integers_parted_by_an_ellipsis_go_first_as_numpy(index, chunks):
    a = np.arange(120).reshape(2, 3, 4, 5)
    positions = np.array([-1, 0, 1])
    x = xa.from_array(a, chunks=chunks)
    got = x[index(xa.from_array(positions, chunks=2))]
    expected = a[index(positions)]
    assert got.shape == expected.shape
    np.testing.assert_array_equal(got.compute(), expected)


def test_too_many_indices_beside_positions_say_so():
    p = xa.from_array(np.array([0, 1]), chunks=1)
    with pytest.raises(IndexError, match="too many indices: array is 1-dimensional, but 2 were indexed"):
        xa.arange(3, chunks=2)[:, p]
    with pytest.raises(IndexError, match="too many indices: array is 2-dimensional, but 3 were indexed"):
        xa.ones((2, 3), chunks=2)[:, :, p]


@pytest.mark.parametrize("npartitions", [1, 2, 3])
def test_random_sample_takes_numpy_integers_as_seeds(npartitions):
    b = xb.from_sequence(range(100), npartitions=npartitions)
    assert b.random_sample(0.5, random_state=np.int64(4)).compute() == b.random_sample(0.5, random_state=4).compute()
