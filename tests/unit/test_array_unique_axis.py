"""``unique`` as NumPy's: ``return_index``, ``return_inverse``, ``return_counts`` in NumPy's
order and positions, and ``axis`` (the distinct slices along it), on random shapes, dtypes and
chunkings, NaNs included; through ``np.unique`` too."""

import numpy as np
import pytest

import xsched.array as xa


def _as_tuple(out):
    return out if isinstance(out, tuple) else (out,)


@pytest.mark.parametrize("seed", range(6))
def test_unique_equals_numpys_for_every_option(seed):
    rng = np.random.default_rng(seed)
    for _ in range(12):
        ndim = int(rng.integers(1, 4))
        shape = tuple(int(rng.integers(1, 6)) for _ in range(ndim))
        a = rng.integers(0, 3, shape).astype(rng.choice(["i8", "f8", "i2"]))
        if a.dtype.kind == "f" and rng.random() < 0.4:
            a.flat[rng.integers(0, a.size)] = np.nan
        x = xa.from_array(a, chunks=tuple(int(rng.integers(1, n + 1)) for n in shape))
        axis = None if rng.random() < 0.3 else int(rng.integers(-ndim, ndim))
        flags = tuple(bool(f) for f in rng.integers(0, 2, 3))
        want = _as_tuple(np.unique(a, *flags, axis=axis))
        for got in (_as_tuple(xa.unique(x, *flags, axis=axis, split_every=int(rng.integers(2, 4)))),
                    _as_tuple(np.unique(x, *flags, axis=axis))):
            assert len(got) == len(want)
            for w, g in zip(want, got):
                computed = g.compute()
                assert computed.dtype == w.dtype and computed.shape == w.shape
                np.testing.assert_array_equal(computed, w)


def test_distinct_rows_and_columns():
    a = np.array([[1, 2, 1], [3, 4, 3], [1, 2, 1], [0, 9, 0]])
    x = xa.from_array(a, chunks=(1, 2))
    values, index, inverse, counts = xa.unique(x, True, True, True, axis=0)
    assert values.chunks[1] == (3,) and np.isnan(values.chunks[0][0]) and inverse.chunks == ((1, 1, 1, 1),)
    assert values.compute().tolist() == [[0, 9, 0], [1, 2, 1], [3, 4, 3]]
    assert (index.compute().tolist(), inverse.compute().tolist(), counts.compute().tolist()) == \
        ([3, 0, 1], [1, 2, 1, 0], [1, 2, 1])
    assert xa.unique(x, axis=1).compute().tolist() == np.unique(a, axis=1).tolist()


@pytest.mark.parametrize("shape, axis", [((0, 3), 0), ((0, 3), 1), ((3, 0), 0), ((2, 0, 2), -1), ((), None)])
def test_empty_slices_and_scalars_as_numpy(shape, axis):
    a = np.zeros(shape)
    want = np.unique(a, True, True, True, axis=axis)
    got = xa.unique(xa.from_array(a, chunks=1 if a.size else -1), True, True, True, axis=axis)
    for w, g in zip(want, got):
        assert g.compute().shape == w.shape and np.array_equal(g.compute(), w)


def test_an_axis_out_of_bounds_fails_when_built():
    with pytest.raises(np.exceptions.AxisError, match="unique: axis 2 is out of bounds"):
        xa.unique(xa.ones((2, 2), chunks=1), axis=2)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("equal_nan", [True, False])
def test_several_nans_with_every_option_as_numpy(seed, equal_nan):
    """Blocks holding several NaNs: one NaN value for all (its first position, the inverse of
    each) or, with ``equal_nan=False``, each NaN its own, in the order NaNs come (C order,
    across blocks of a 2-d array). NumPy's order of NaNs is stable with ``return_index``
    (a merge sort), so its answer is taken with it."""
    rng = np.random.default_rng(seed)
    shape = (int(rng.integers(2, 6)), int(rng.integers(2, 6)))
    a = rng.integers(0, 3, shape).astype("f8")
    a.flat[rng.choice(a.size, size=int(rng.integers(2, a.size)), replace=False)] = np.nan
    want = np.unique(a, True, True, True, equal_nan=equal_nan)
    x = xa.from_array(a, chunks=(int(rng.integers(1, 3)), int(rng.integers(1, 3))))
    got = xa.unique(x, True, True, True, equal_nan=equal_nan, split_every=2)
    for w, g in zip(want, got):
        np.testing.assert_array_equal(g.compute(), w)
    inverse_only = xa.unique(x, return_inverse=True, equal_nan=equal_nan)[1].compute()
    np.testing.assert_array_equal(inverse_only, want[2])
    assert xa.unique(x, return_index=True, equal_nan=equal_nan)[1].compute().tolist() == want[1].tolist()


def test_array_api_inverse_gives_each_nan_its_own_place():
    a = np.array([[np.nan, 1.0], [np.nan, np.nan]])
    x = xa.from_array(a, chunks=1)
    np.testing.assert_array_equal(xa.unique_inverse(x).inverse_indices.compute(), np.unique_inverse(a).inverse_indices)
    np.testing.assert_array_equal(xa.unique_all(x).inverse_indices.compute(), np.unique_all(a).inverse_indices)


def test_nans_apart_of_a_0d_array_nat_and_unknown_lengths():
    nan0 = xa.from_array(np.array(np.nan))
    r = xa.unique_inverse(nan0)
    assert np.isnan(r.values.compute()).all() and int(r.inverse_indices.compute()) == 0
    t = np.array(["NaT", "2000-01-01", "NaT", "NaT"], "M8[D]")
    for w, g in zip(np.unique(t, True, True, True, equal_nan=False),
                    xa.unique(xa.from_array(t, chunks=2), True, True, True, equal_nan=False)):
        np.testing.assert_array_equal(g.compute(), w)
    np.testing.assert_array_equal(xa.unique_inverse(xa.from_array(t, chunks=3)).inverse_indices.compute(),
                                  np.unique_inverse(t).inverse_indices)
    x = xa.from_array(np.array([3.0, 1, np.nan, 1, 5, 2]), chunks=2)
    assert xa.unique_inverse(x[x > 1.5]).inverse_indices.compute().tolist() == [1, 2, 0]  # (no NaN: as before)
    with pytest.raises(ValueError, match="block lengths are unknown; call x = x.compute_chunk_sizes"):
        xa.unique_inverse(x[~(x < 1.5)]).inverse_indices.compute()


def test_complex_nans_with_positions_are_refused():
    c = np.array([np.nan + 0j, 1, 1 + np.nan * 1j, 2])
    with pytest.raises(ValueError, match="complex values holding NaNs"):
        xa.unique(xa.from_array(c, chunks=2), return_index=True)[1].compute()
