"""Masked arrays (xsched/array/ma.py, joins.py): blocks that are numpy.ma arrays keep their
masks through joins, rechunks and compute, and the reductions count only unmasked values;
every result against numpy.ma's on random shapes, chunkings and masks. On a real cluster:
tests/cluster/test_array_api_cluster.py."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import xsched.array as xa

REDUCTIONS = [("sum", {}), ("mean", {}), ("var", {}), ("std", {}), ("var", {"ddof": 1}), ("min", {}),
              ("max", {}), ("prod", {}), ("any", {}), ("all", {}), ("argmax", {}), ("argmin", {})]


def _same(got, want) -> None:
    """``got`` (computed) equals numpy.ma's ``want``: the same masked cells, the same values
    elsewhere."""
    if want is np.ma.masked or got is np.ma.masked:
        assert got is want
        return
    assert np.shape(got) == np.shape(want)
    np.testing.assert_array_equal(np.ma.getmaskarray(got), np.ma.getmaskarray(want))
    np.testing.assert_allclose(np.ma.filled(np.ma.asarray(got).astype(float), 0),
                               np.ma.filled(np.ma.asarray(want).astype(float), 0), rtol=1e-10, atol=1e-12)


@st.composite
def masked_arrays(draw):
    """A random array, a mask (none, some or every cell) and chunks along each axis."""
    shape = tuple(draw(st.lists(st.integers(1, 5), min_size=1, max_size=3)))
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    share = draw(st.sampled_from([0.0, 0.3, 0.8, 1.0]))
    chunks = tuple(draw(st.integers(1, n)) for n in shape)
    return rng.normal(size=shape), rng.random(shape) < share, chunks


def _lazy(data: np.ndarray, mask: np.ndarray, chunks: tuple) -> xa.Array:
    return xa.ma.masked_array(xa.from_array(data, chunks=chunks), mask=xa.from_array(mask, chunks=chunks))


@settings(max_examples=40, deadline=None, database=None)
@given(masked_arrays())
def test_reductions_and_scans_count_only_unmasked_values_as_numpy_ma(case):
    data, mask, chunks = case
    x, want = _lazy(data, mask, chunks), np.ma.masked_array(data, mask=mask)
    for axis in [None, *range(data.ndim)]:
        for name, kwargs in REDUCTIONS:
            with np.errstate(all="ignore"):
                _same(getattr(x, name)(axis=axis, **kwargs).compute(), getattr(want, name)(axis=axis, **kwargs))
        if axis is not None:
            _same(x.cumsum(axis=axis).compute(), want.cumsum(axis=axis))
            _same(x.cumprod(axis=axis).compute(), want.cumprod(axis=axis))


@settings(max_examples=30, deadline=None, database=None)
@given(masked_arrays())
def test_joins_keep_masks_and_the_fill_value(case):
    data, mask, chunks = case
    x = xa.ma.masked_array(xa.from_array(data, chunks=chunks), mask=mask, fill_value=-7.0)
    want = np.ma.masked_array(data, mask=mask, fill_value=-7.0)
    for got, expected in [(x, want), (x.rechunk(2), want), (x[::-1], want[::-1]), (x.T, want.T),
                          (x.reshape(-1), want.reshape(-1)), (xa.concatenate([x, x]), np.ma.concatenate([want, want])),
                          (x * 2 + x, want * 2 + want)]:
        result = got.compute()
        _same(result, expected)
        assert isinstance(result, np.ma.MaskedArray)
    assert x.compute().fill_value == -7.0 and x.rechunk(1).compute().fill_value == -7.0


def test_the_ma_functions_equal_numpy_mas():
    rng = np.random.default_rng(1)
    a = rng.integers(-3, 4, size=(7, 5)).astype(float)
    a[rng.random(a.shape) < 0.2] = np.nan
    x = xa.from_array(a, chunks=(3, 2))
    w = rng.random(a.shape) + 0.1
    cases = [
        (xa.ma.masked_where(x > 0, x), np.ma.masked_where(a > 0, a)),
        (xa.ma.masked_equal(x, 1.0), np.ma.masked_equal(a, 1.0)),
        (xa.ma.masked_not_equal(x, 1.0), np.ma.masked_not_equal(a, 1.0)),
        (xa.ma.masked_greater(x, 0), np.ma.masked_greater(a, 0)),
        (xa.ma.masked_greater_equal(x, 0), np.ma.masked_greater_equal(a, 0)),
        (xa.ma.masked_less(x, 0), np.ma.masked_less(a, 0)),
        (xa.ma.masked_less_equal(x, 0), np.ma.masked_less_equal(a, 0)),
        (xa.ma.masked_inside(x, 2, -1), np.ma.masked_inside(a, 2, -1)),
        (xa.ma.masked_outside(x, -1, 2), np.ma.masked_outside(a, -1, 2)),
        (xa.ma.masked_values(x, 2.0), np.ma.masked_values(a, 2.0, shrink=False)),
        (xa.ma.masked_invalid(x), np.ma.masked_invalid(a)),
        (xa.ma.fix_invalid(x, fill_value=-5), np.ma.fix_invalid(a, fill_value=-5)),
        (xa.ma.filled(xa.ma.masked_invalid(x), 9), np.ma.filled(np.ma.masked_invalid(a), 9)),
        (xa.ma.getdata(xa.ma.fix_invalid(x)), np.ma.getdata(np.ma.fix_invalid(a))),
        (xa.ma.getmaskarray(xa.ma.masked_invalid(x)), np.ma.getmaskarray(np.ma.masked_invalid(a))),
        (xa.ma.count(xa.ma.masked_invalid(x), axis=0), np.ma.count(np.ma.masked_invalid(a), axis=0)),
        (xa.ma.where(x > 0, xa.ma.masked_invalid(x), -x), np.ma.where(a > 0, np.ma.masked_invalid(a), -a)),
        (xa.ma.ones_like(xa.ma.masked_invalid(x)), np.ma.ones_like(np.ma.masked_invalid(a))),
        (xa.ma.zeros_like(xa.ma.masked_invalid(x)), np.ma.zeros_like(np.ma.masked_invalid(a))),
        (xa.ma.average(xa.ma.masked_invalid(x), axis=1), np.ma.average(np.ma.masked_invalid(a), axis=1)),
        (xa.ma.average(xa.ma.masked_invalid(x), axis=0, weights=w[:, 0]),
         np.ma.average(np.ma.masked_invalid(a), axis=0, weights=w[:, 0])),
    ]
    for got, want in cases:
        _same(got.compute(), want)
        if isinstance(want, np.ma.MaskedArray):
            assert got.compute().fill_value == want.fill_value
    assert int(xa.ma.count(xa.ma.masked_invalid(x))) == np.ma.count(np.ma.masked_invalid(a))
    mean, weight = xa.ma.average(xa.ma.masked_greater(x, -10), axis=0, weights=w, returned=True)
    want_mean, want_weight = np.ma.average(np.ma.masked_greater(a, -10), axis=0, weights=w, returned=True)
    _same(mean.compute(), want_mean)
    _same(weight.compute(), want_weight)  # (masked where every value is: numpy.ma's)


def test_set_fill_value_rebinds_the_array_as_numpy_changes_its_own():
    m = xa.ma.masked_equal(xa.arange(5, chunks=2), 3)
    before = m.name
    assert xa.ma.set_fill_value(m, -1) is None
    assert m.name != before and m.compute().fill_value == -1
    assert xa.ma.filled(m).compute().tolist() == [0, 1, 2, -1, 4]
    with pytest.raises(TypeError):  # numpy's refusal of a value the dtype cannot hold, now
        xa.ma.set_fill_value(m, "text")
    with pytest.raises(ValueError, match="one value, not an array"):
        xa.ma.set_fill_value(m, [1, 2])


def test_shapes_that_do_not_match_fail_when_built():
    x = xa.ones((4, 3), chunks=2)
    with pytest.raises(IndexError, match=r"masked_array: mask of shape \(3, 3\) does not match the data's shape "
                                         r"\(4, 3\)"):
        xa.ma.masked_array(x, mask=np.zeros((3, 3), bool))
    with pytest.raises(IndexError, match="masked_where: the condition of shape"):
        xa.ma.masked_where(np.zeros(3, bool), x)
    with pytest.raises(TypeError, match=r"average: weights of shape \(2,\) differ"):
        xa.ma.average(x, weights=[1.0, 2.0])
    with pytest.raises(ValueError, match=r"average: 3 weights, but axis 0 of a \(shape \(4, 3\)\) has 4"):
        xa.ma.average(x, axis=0, weights=[1.0, 2.0, 3.0])


def test_a_block_grid_of_masked_arrays_made_by_map_blocks_comes_back_masked():
    """The way users met masked blocks before ``xa.ma``: a function returning them."""
    a = np.array([1.0, np.nan, 3.0, 4.0, np.nan, 6.0])
    x = xa.from_array(a, chunks=2).map_blocks(np.ma.masked_invalid)
    result = x.compute()
    assert isinstance(result, np.ma.MaskedArray) and result.mask.tolist() == [0, 1, 0, 0, 1, 0]
    assert float(x.mean()) == 3.5 and float(x.std()) == pytest.approx(np.ma.masked_invalid(a).std())
