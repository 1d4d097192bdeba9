"""argtopk of equal values gives the first positions first, as a stable sort would, whatever
the chunks and the tree of merges (it gave the last first, and which of a tie depended on
the chunks); NaN and NaT count as the largest values."""

from __future__ import annotations

import numpy as np
import pytest

import xsched.array as xa


def stable_argtopk(x: np.ndarray, k: int, axis: int) -> np.ndarray:
    """NumPy's stable sort: largest first (``k < 0``: smallest), equal values by position."""
    lanes = np.moveaxis(x, axis, -1)
    if k > 0:
        n = lanes.shape[-1]
        order = (n - 1) - np.flip(np.argsort(np.flip(lanes, -1), -1, kind="stable"), -1)
    else:
        order = np.argsort(lanes, -1, kind="stable")
    return np.moveaxis(order[..., :abs(k)], -1, axis)


CASES = {
    "ints": np.array([1, 5, 3, 5, 2, 5, 0, 3]),
    "2-d": np.random.default_rng(0).integers(0, 4, (7, 13)),
    "NaN": np.array([1.0, np.nan, 3, np.nan, 3, 0, np.nan]),
    "complex": np.array([1 + 1j, 2, 1 + 1j, 0, 2]),
    "NaT": np.array(["2020-01-01", "NaT", "2020-01-01", "2019-01-01"], "M8[D]"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_ties_give_the_first_positions_whatever_the_chunks(name):
    x = CASES[name]
    for axis in range(x.ndim):
        length = x.shape[axis]
        for k in range(-length, length + 1):
            expected = stable_argtopk(x, k, axis)
            for size in (1, 2, 3, length):
                chunks = tuple(size if a == axis else 2 for a in range(x.ndim))
                got = xa.argtopk(xa.from_array(x, chunks=chunks), k, axis=axis, split_every=2).compute()
                np.testing.assert_array_equal(got, expected, err_msg=f"k={k}, axis={axis}, chunks={chunks}")


def test_topk_values_follow_the_same_order():
    x = CASES["NaN"]
    got = xa.topk(xa.from_array(x, chunks=2), 4).compute()
    np.testing.assert_array_equal(got, x[stable_argtopk(x, 4, 0)])
