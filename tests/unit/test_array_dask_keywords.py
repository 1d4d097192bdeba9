"""dask's keywords of map_blocks, blockwise and map_overlap: taken with their meaning
(token, enforce_ndim, meta, align_arrays), or refused when built where they would have
reached the user's function (drop_axis of map_overlap) or meant something else (a list
depth over several arrays)."""

from __future__ import annotations

import numpy as np
import pytest

import xsched.array as xa

X = np.arange(12.0).reshape(3, 4)


def test_map_blocks_takes_token_and_enforce_ndim():
    x = xa.from_array(X, chunks=2)
    y = x.map_blocks(np.sin, token="bar")
    assert y.name.startswith("bar-")
    np.testing.assert_allclose(x.map_blocks(np.sin, enforce_ndim=True).compute(), np.sin(X))


def test_blockwise_takes_meta_token_and_refuses_unaligned_arrays_when_asked():
    a, b = xa.from_array(np.ones((4, 3)), chunks=(2, 3)), xa.from_array(np.ones((3, 2)), chunks=(3, 2))
    out = xa.blockwise(np.dot, "ik", a, "ij", b, "jk", concatenate=True, meta=np.array((), float), token="dot")
    assert out.dtype == float and out.name.startswith("dot")
    np.testing.assert_array_equal(out.compute(), np.full((4, 2), 3.0))
    c = xa.from_array(np.ones((3, 2)), chunks=(1, 2))
    with pytest.raises(ValueError, match=r"^blockwise\(align_arrays=False\): index 'j' is cut \(3,\) in argument 0 "
                                         r"but \(1, 1, 1\) in argument 1"):
        xa.blockwise(np.dot, "ik", a, "ij", c, "jk", concatenate=True, dtype=float, align_arrays=False)
    aligned = xa.blockwise(np.dot, "ik", a, "ij", c, "jk", concatenate=True, dtype=float)
    np.testing.assert_array_equal(aligned.compute(), np.full((4, 2), 3.0))


def test_map_overlap_refuses_what_would_reach_func_or_mean_otherwise():
    x = xa.from_array(X, chunks=2)
    with pytest.raises(TypeError, match=r"^map_overlap: drop_axis= is not offered"):
        xa.map_overlap(lambda b: b.sum(1), x, depth={0: 1}, boundary="none", drop_axis=1, dtype=float)
    with pytest.raises(ValueError, match=r"^map_overlap: depth=\[1, 2\] is a list, which dask reads as one depth "
                                         r"per array"):
        xa.map_overlap(lambda a, b: a + b, x, x, depth=[1, 2], boundary="none")
    assert xa.map_overlap(lambda b: b, x, depth=1, boundary="none", token="tok").name.startswith("tok")
    one = xa.map_overlap(lambda b: b, x, depth=[1, 0], boundary="none")  # (one array: a list per axis, as before)
    np.testing.assert_array_equal(one.compute(), X)


def test_numpy_and_dask_keywords_of_casts_joins_and_orders():
    x = xa.from_array(X, chunks=2)
    assert x.astype("f4", casting="same_kind").dtype == np.float32
    with pytest.raises(TypeError, match=r"Cannot cast array data from dtype\('float64'\) to dtype\('int64'\) "
                                        r"according to the rule 'safe'"):
        x.astype("i8", casting="safe")
    for join in (xa.hstack, xa.vstack, xa.dstack):
        assert join([x, x], allow_unknown_chunksizes=True).shape == getattr(np, join.__name__)([X, X]).shape
    assert xa.concatenate([x, x], axis=0, allow_unknown_chunksizes=True).shape == (6, 4)
    np.testing.assert_array_equal(np.ravel(x, order="F").compute(), np.ravel(X, order="F"))
    for order in ("K", "A"):
        np.testing.assert_array_equal(np.ravel(x, order=order).compute(), np.ravel(X, order=order))
    with pytest.raises(NotImplementedError, match=r"x.reshape\(order='F'\): .* x.T.reshape\(shape\[::-1\]\).T"):
        x.reshape((4, 3), order="F")
    np.testing.assert_array_equal(x.T.reshape((3, 4)).T.compute(), np.reshape(X, (4, 3), order="F"))
    assert x.rechunk((3, 2), threshold=4).chunks == ((3,), (2, 2))
    assert xa.isin(x, [1.0, 5.0], assume_unique=True, kind="sort").compute().sum() == 2


def test_chunks_naming_an_axis_the_array_lacks_fail_as_numpy():
    with pytest.raises(np.exceptions.AxisError, match="axis 5 is out of bounds for an array of dimension 2"):
        xa.from_array(np.ones((10, 10)), chunks={5: 3})
    x = xa.ones((10, 10), chunks=5)
    for spec in ({2: 5}, {-3: 5}):
        with pytest.raises(np.exceptions.AxisError):
            x.rechunk(spec)
    with pytest.raises(ValueError, match="named twice"):
        x.rechunk({1: 2, -1: 3})
    assert x.rechunk({-1: 2}).chunks == ((5, 5), (2,) * 5)


def test_map_blocks_align_arrays_false_and_flatten_order():
    z = xa.from_array(np.arange(12.0).reshape(3, 4), chunks=2)
    np.testing.assert_array_equal(xa.map_blocks(np.add, z, z, align_arrays=False, dtype=float).compute(),
                                  2 * np.arange(12.0).reshape(3, 4))
    with pytest.raises(ValueError, match=r"align_arrays=False\): the arrays are cut otherwise along their axis -1"):
        xa.map_blocks(np.add, z, z.rechunk(3), align_arrays=False, dtype=float)
    np.testing.assert_array_equal(z.flatten("F").compute(), np.arange(12.0).reshape(3, 4).flatten("F"))
