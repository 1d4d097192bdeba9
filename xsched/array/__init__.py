"""Chunked numpy arrays for xsched: ``import xsched.array as xa``.

Arrays build task graphs; ``compute()`` runs them on the default client (or in this
process when there is none). Block keys read ``"<operation>-<token>-i.j.k"`` (see
``xsched.array.core``). ``xa.random`` draws random arrays (``xa.random.default_rng``),
``xa.linalg`` has ``norm``, the tall-and-skinny ``qr``, ``svd`` and ``lstsq``, the randomized
``svd_compressed``, ``lu`` and ``solve_triangular`` of a matrix over square blocks, and the
Array API's functions of stacks of small matrices (``inv``, ``solve``, ...), ``xa.fft``
NumPy's transforms. ``map_overlap`` gives blocks their neighbours' edges;
``from_zarr``/``to_zarr`` read and write zarr (``pip install 'xsched[array]'``).
``blockwise`` and ``einsum`` take index notation. ``apply_gufunc``,
``reduction`` and ``scan`` run your own functions (a gufunc signature, a tree reduction, a
running scan) and ``store`` writes into anything that takes ``target[...] = block``; with
them, xarray runs on xsched arrays (``chunked_array_type="xsched"``; see
``xsched.array.xarray_chunks``, which this package does not import). NumPy's own functions called on xsched
arrays run these (``np.mean(x, axis=0)`` is ``xa.mean``; see ``xsched.array.dispatch``).

>>> import numpy as np, xsched.array as xa
>>> x = xa.from_array(np.arange(12.0).reshape(3, 4), chunks=(1, -1))
>>> y = x.map_blocks(lambda b: b * 2, dtype=x.dtype)
>>> y.sum(axis=0).compute().tolist()
[24.0, 30.0, 36.0, 42.0]
>>> (x @ x.T).rechunk(3).shape
(3, 3)
>>> np.einsum("ij,ij->i", x, x).compute().tolist()
[14.0, 126.0, 366.0]
"""

from types import SimpleNamespace

from numpy import (bool_ as bool, complex64, complex128, e, float32, float64, inf, int8, int16, int32, int64,
                   nan, newaxis, pi, uint8, uint16, uint32, uint64)

from .core import Array, elemwise, from_array, normalize_chunks
from .mapping import map_blocks
from . import slicing as _slicing  # (x[index])
from . import assignment as _assignment  # (x[index] = value)
from .core import UFUNC_METHOD_IMPLEMENTATIONS as _UFUNC_METHODS
from .index_notation import blockwise, einsum, unify_chunks
from .creation import (arange, array, asarray, empty, empty_like, eye, fromfunction, full,
                       full_like, geomspace, indices, linspace, logspace, ones, ones_like, zeros, zeros_like)
from .creation import asanyarray, from_delayed, from_dlpack, identity, mgrid, ogrid, tri, tril_indices, \
    tril_indices_from, triu_indices, triu_indices_from
from .hdf5 import to_hdf5
from .rechunking import PerformanceWarning, rechunk
from .testing import assert_eq
from .reductions import max, mean, min, reduction, std, sum, var
from .manipulation import (around, atleast_1d, atleast_2d, broadcast_arrays, broadcast_to, clip,
                           concatenate, expand_dims, flip, fliplr, flipud, hstack, meshgrid,
                           moveaxis, pad, ravel, repeat, reshape, reshape_blockwise, roll, squeeze, stack, swapaxes,
                           tile, transpose, tril, triu, unstack, vstack, where, permute_dims, concat)
from .manipulation import around as round
from .manipulation import apply_over_axes, copy, rollaxis
from .take import shuffle
from .linalg import cross, dot, inner, kron, matmul, matrix_transpose, outer, tensordot, vdot, vecdot
from .overlapping import map_overlap, sliding_window_view, trim_internal
from .differences import diff, ediff1d, gradient, trapezoid, unwrap
from .polynomials import polyfit, polyval, vander
from .sorting import argpartition, argsort, lexsort, partition, searchsorted, sort, sort_complex, take_along_axis
from .selection import argwhere, flatnonzero, nonzero
from .sets import intersect1d, isin, setdiff1d, setxor1d, union1d, unique, unique_all, unique_counts, unique_inverse, \
    unique_values
from .topk import argtopk, topk
from .coarsen import coarsen
from .missing import isnull, notnull
from .take import take
from .histograms import bincount, digitize, histogram, histogram2d, histogram_bin_edges, histogramdd
from .statistics import (average, corrcoef, count_nonzero, cov, median, nanmedian, nanpercentile,
                         nanquantile, percentile, ptp, quantile)
from .statistics import moment
from .assembly import (append, array_split, atleast_3d, block, column_stack, compress, delete, dsplit, dstack, extract,
                       hsplit, insert, rot90, split, vsplit)
from .diagonals import diag, diagflat, diagonal, trace
from .elementwise import (allclose, array_equal, array_equiv, frompyfunc, angle, choose, fix, i0, imag, interp, iscomplex, isclose, isneginf,
                          isposinf,
                          isreal, nan_to_num, piecewise, ravel_multi_index, real, select, sinc, unravel_index)
from .zarr import from_zarr, to_zarr
from .scans import (all, any, argmax, argmin, cumprod, cumsum, cumulative_prod, cumulative_sum, nanargmax,
                    nanargmin, nancumprod, nancumsum, nanmax, nanmean, nanmin, nanprod, nanstd, nansum, nanvar,
                    prod, push, scan)
from .gufunc import apply_along_axis, apply_gufunc, as_gufunc, gufunc
from .convolution import convolve, correlate
from .npystack import from_npy_stack, to_npy_stack
from .store import store
from . import methods as _methods  # (x.diagonal(), x.take(...), x.view(...): NumPy's methods of the functions above)
from . import ufuncs as _ufuncs
from .ufuncs import *  # noqa: F403 (xa.sin, xa.maximum, ...: NumPy's element-wise functions, dtype functions)
from . import fft, image, linalg, ma, random, stats
from . import overlap  # (a module, callable as the function: dask's xa.overlap.overlap and xa.overlap(...))
from .inspection import __array_namespace_info__, ndim, shape  # (the Array API's inspection namespace)
from ..graph.delayed import compute
from . import dispatch as _dispatch

#: The version of the Array API standard this namespace follows (``x.__array_namespace__()``;
#: its data types and constants are NumPy's, imported above under the standard's names).
__array_api_version__ = "2023.12"
#: NumPy's place of ``sliding_window_view``, where code handed this namespace (xarray's
#: rolling windows) looks for it: ``xp.lib.stride_tricks.sliding_window_view``.
lib = SimpleNamespace(stride_tricks=SimpleNamespace(sliding_window_view=sliding_window_view))

# np.add.reduce(x), np.multiply.accumulate(x)... (the ufunc protocol in core.py) run these
_UFUNC_METHODS.update({("add", "reduce"): sum, ("multiply", "reduce"): prod, ("maximum", "reduce"): max,
                       ("minimum", "reduce"): min, ("logical_and", "reduce"): all, ("logical_or", "reduce"): any,
                       ("add", "accumulate"): cumsum, ("multiply", "accumulate"): cumprod})

__all__ = [
    "Array",
    "from_array",
    "map_blocks",
    "blockwise",
    "elemwise",
    "normalize_chunks",
    "to_hdf5", "from_zarr", "to_zarr", "store", "to_npy_stack", "from_npy_stack", "from_delayed", "compute",
    # your own functions over blocks: gufunc signatures, tree reductions, running scans
    "apply_gufunc", "as_gufunc", "gufunc", "frompyfunc", "apply_along_axis", "reduction", "scan", "push", "unify_chunks",
    # neighbours across blocks
    "map_overlap", "overlap", "trim_internal", "sliding_window_view", "diff", "ediff1d", "gradient", "trapezoid",
    "unwrap",
    "convolve", "correlate",
    # sorting along an axis (put in one chunk first)
    "sort", "sort_complex", "argsort", "partition", "argpartition", "searchsorted", "take_along_axis", "lexsort",
    # data-dependent lengths (blocks of unknown length until computed) and sets
    "nonzero", "flatnonzero", "argwhere", "unique", "isin", "union1d", "intersect1d", "setdiff1d", "setxor1d",
    # the k largest or smallest along an axis of any chunks (a tree of per-block picks)
    "topk", "argtopk",
    "unique_values", "unique_counts", "unique_inverse", "unique_all",
    # creation
    "arange", "linspace", "logspace", "geomspace", "full", "ones", "zeros", "empty", "eye", "identity", "fromfunction",
    "indices", "mgrid", "ogrid",
    "full_like", "ones_like", "zeros_like", "empty_like", "asarray", "asanyarray", "from_dlpack", "assert_eq", "PerformanceWarning", "array", "ndim", "shape",
    "tri", "tril_indices", "triu_indices", "tril_indices_from", "triu_indices_from",
    # shape and arrangement
    "rechunk", "reshape", "reshape_blockwise", "ravel", "squeeze", "expand_dims", "atleast_1d", "atleast_2d",
    "transpose", "moveaxis", "swapaxes", "flip", "fliplr", "flipud", "roll",
    "concatenate", "stack", "hstack", "vstack", "pad", "broadcast_to", "broadcast_arrays",
    "meshgrid", "where", "clip", "around", "round", "take", "repeat", "tile", "unstack", "tril", "triu",
    "permute_dims", "concat", "rollaxis", "apply_over_axes", "coarsen", "shuffle",
    # products
    "matmul", "dot", "tensordot", "inner", "outer", "kron", "vdot", "einsum", "matrix_transpose", "vecdot", "cross",
    # reductions and scans
    "sum", "mean", "var", "std", "min", "max", "prod", "any", "all",
    "nansum", "nanprod", "nanmean", "nanmax", "nanmin", "nanvar", "nanstd",
    "argmax", "argmin", "nanargmax", "nanargmin", "cumsum", "cumprod", "nancumsum", "nancumprod",
    "cumulative_sum", "cumulative_prod",
    # histograms and statistics (percentiles along axes put in one chunk first)
    "histogram", "histogram2d", "histogramdd", "histogram_bin_edges", "bincount", "digitize",
    "percentile", "quantile", "median", "nanpercentile", "nanquantile", "nanmedian",
    "average", "ptp", "count_nonzero", "cov", "corrcoef", "moment", "isnull", "notnull",
    # assembling, cutting, diagonals and NumPy's element-wise functions that are not ufuncs
    "block", "dstack", "column_stack", "split", "array_split", "hsplit", "vsplit", "dsplit", "atleast_3d", "append", "insert", "delete", "compress", "extract", "rot90",
    "diag", "diagflat", "diagonal", "trace", "copy",
    # polynomials
    "vander", "polyval", "polyfit",
    "nan_to_num", "angle", "fix", "sinc", "i0", "isposinf", "isneginf", "iscomplex", "isreal",
    "select", "choose", "piecewise", "unravel_index", "ravel_multi_index", "real", "imag", "isclose", "allclose", "array_equal", "array_equiv", "interp",
]
__all__ += _ufuncs.__all__

_dispatch.register_namespace("numpy", __import__("sys").modules[__name__])
