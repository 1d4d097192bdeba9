"""xarray on xsched arrays: the ``"xsched"`` chunk manager.

xarray keeps the data of each variable in a *duck array* and asks a *chunk manager* for
what only a chunked array library can do: cut data into blocks, compute, rechunk, apply a
function block by block, write to files. This module is that manager for
``xsched.array``, registered under the name ``xsched`` (entry point group
``xarray.chunkmanagers`` in ``pyproject.toml``), so that::

    ds = xr.open_dataset("movie.nc", chunks={"frame": 100}, chunked_array_type="xsched")
    ds.counts.coarsen(frame=10).sum().mean(("y", "x")).compute()

builds an xsched task graph and runs it on the default client's cluster (or in this process
without one). Everything else xarray does to the data (arithmetic, slicing, ``where``,
reductions, ``cumsum``) it does through NumPy's protocols, which ``xsched.array.Array``
implements (``__array_ufunc__``, ``__array_function__``): those run xsched.array's own
functions and stay lazy.

How each method of xarray's ``ChunkManagerEntrypoint`` maps onto xsched.array:

* ``from_array``: ``xa.from_array``; a file-backed variable is read block by block by the
  tasks (xarray's reader is pickled into each read task, and opens the file where it runs)
* ``normalize_chunks``: ``xa.normalize_chunks``; the lengths chosen for ``"auto"`` are
  whole multiples of the file's own chunks (``previous_chunks``)
* ``rechunk``: ``Array.rechunk``
* ``compute`` / ``persist``: ``xsched.compute`` / ``xsched.persist``, all arrays in one graph
* ``apply_gufunc``: ``xa.apply_gufunc`` (``xr.apply_ufunc(..., dask="parallelized")``)
* ``map_blocks``, ``blockwise``: ``xa.map_blocks``, ``xa.blockwise``
* ``reduction``: ``xa.reduction`` (xarray's first or last valid value)
* ``scan``: ``xa.scan``
* ``unify_chunks``: ``xa.unify_chunks``
* ``store``: ``xa.store``, blocks computed where the graph runs and written by this process
  (``to_netcdf``, ``to_zarr``); ``compute=False`` raises (xarray finishes a lazy write with
  dask.delayed)
* ``array_api``: the ``xsched.array`` namespace (``full``, ``arange``, ...)
* ``shuffle``: ``xa.shuffle`` (``groupby(...).shuffle_to_chunks()``: each group in one chunk)

Not supported, with an error saying what to do instead: lazy writes (``to_netcdf(...,
compute=False)``), reading with a lock held (``from_array_kwargs={"lock": True}``) and
dask's other ``from_array`` options. Operations xarray runs through NumPy
functions xsched.array does not have (``median``, say) raise at once, naming the function,
rather than pull the data into this process: ``.compute()`` first, then use them on NumPy
data.

Importing ``xsched`` or ``xsched.array`` does not import this module (nor xarray); xarray
imports it when it looks for chunk managers.

>>> import numpy as np, xarray as xr, xsched.array as xa
>>> da = xr.DataArray(np.arange(12.0).reshape(4, 3), dims=("t", "x"))
>>> lazy = da.chunk({"t": 2}, chunked_array_type="xsched")
>>> isinstance(lazy.data, xa.Array), lazy.chunks
(True, ((2, 2), (3,)))
>>> lazy.sum("t").compute().values.tolist()
[18.0, 22.0, 26.0]
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Sequence

import numpy as np
from xarray.namedarray.parallelcompat import ChunkManagerEntrypoint

from .. import config
from ..graph.delayed import compute as _compute_all
from ..graph.delayed import persist as _persist_all
from ..units import parse_bytes
from . import core, index_notation, mapping, reductions, scans
from .gufunc import apply_gufunc as _apply_gufunc  # (xa.gufunc is the class, not this module)
from .take import shuffle as _shuffle
from .store import store as _store
from .chunks import AUTO_CHUNK_BYTES, Chunks
from .core import Array

__all__ = ["XschedChunkManager"]


def _numpy_meta(meta: Any, what: str) -> None:
    """``meta=`` (the type of the blocks) must be NumPy's: xsched.array's blocks are."""
    if meta is None or meta is np.ndarray or isinstance(meta, np.ndarray):
        return
    raise NotImplementedError(f"{what}: meta={type(meta).__name__} is not supported: "
                              "xsched.array's blocks are NumPy arrays")


def _aligned(chunks: Chunks, spec: Any, previous: Any, shape: Sequence[int]) -> Chunks:
    """``chunks`` with the lengths chosen for ``"auto"`` axes rounded down to whole
    multiples of ``previous`` (the file's own chunks), so no block splits a stored one."""
    if previous is None or not isinstance(spec, tuple):
        return chunks
    out = list(chunks)
    for axis, (s, p) in enumerate(zip(spec, previous)):
        if s != "auto" or p is None:
            continue
        stored = max(p) if isinstance(p, tuple) else int(p)
        length = max(out[axis])
        if stored <= 0 or length >= shape[axis] or length < stored:
            continue
        out[axis] = core.normalize_chunks((length // stored) * stored, (shape[axis],))[0]
    return tuple(out)


class XschedChunkManager(ChunkManagerEntrypoint[Array]):
    """The ``"xsched"`` chunk manager: xarray's chunked operations on ``xsched.array``
    (see the module docstring for each method's counterpart).

    xarray makes one when it lists its chunk managers; pass ``chunked_array_type="xsched"``
    (or the instance) to ``open_dataset``, ``.chunk()``, ``xr.zeros_like``, ...

    >>> import numpy as np, xarray as xr
    >>> from xarray.namedarray.parallelcompat import list_chunkmanagers
    >>> manager = list_chunkmanagers()["xsched"]
    >>> type(manager).__name__, manager.is_chunked_array(np.ones(3))
    ('XschedChunkManager', False)
    """

    array_cls = Array
    available = True

    def __init__(self) -> None:
        self.array_cls = Array

    # ----------------------------------------------------------------- blocks
    def is_chunked_array(self, data: Any) -> bool:
        """Whether ``data`` is an xsched array.

        >>> import xsched.array as xa
        >>> XschedChunkManager().is_chunked_array(xa.ones(4, chunks=2))
        True
        """
        return isinstance(data, Array)

    def chunks(self, data: Array) -> Chunks:
        """The block sizes of ``data`` along each axis.

        >>> import xsched.array as xa
        >>> XschedChunkManager().chunks(xa.ones((4, 3), chunks=2))
        ((2, 2), (2, 1))
        """
        return data.chunks

    def normalize_chunks(self, chunks: Any, shape: Sequence[int] | None = None,
                         limit: int | None = None, dtype: Any = None,
                         previous_chunks: Any = None) -> Chunks:
        """Explicit block sizes for ``chunks`` (see ``xsched.array.normalize_chunks``);
        ``limit`` bounds the bytes of an ``"auto"`` block, whose length along an axis is
        then a whole multiple of ``previous_chunks`` there (the file's own chunks).

        >>> m = XschedChunkManager()
        >>> m.normalize_chunks((100, None, -1), shape=(250, 4, 4))
        ((100, 100, 50), (4,), (4,))
        >>> m.normalize_chunks(("auto", -1), shape=(20, 10), dtype="f8", limit=800,
        ...                    previous_chunks=(3, 10))
        ((9, 9, 2), (10,))
        """
        if shape is None:
            if isinstance(chunks, tuple) and all(isinstance(c, tuple) for c in chunks):
                return tuple(tuple(int(s) for s in c) for c in chunks)
            raise ValueError(f"normalize_chunks: chunks={chunks!r} needs the array's shape")
        shape = tuple(int(s) for s in shape)
        spec = tuple(chunks) if isinstance(chunks, list) else chunks
        out = core.normalize_chunks(spec, shape, dtype, limit)
        return _aligned(out, spec, previous_chunks, shape)

    def from_array(self, data: Any, chunks: Any, **kwargs: Any) -> Array:
        """An xsched array over ``data`` (NumPy data, or xarray's lazy reader of a file
        variable, read block by block by the tasks); see ``xsched.array.from_array``.

        Keyword arguments (``from_array_kwargs=`` in xarray): ``name``, the operation name
        of the read tasks in keys and progress bars (default ``from-array``); ``lock`` as
        ``xsched.array.from_array``'s. ``inline_array`` is accepted and changes nothing
        (xarray passes its default, False, on every open): each read task carries xarray's
        small lazy reader of the file.

        >>> import numpy as np
        >>> x = XschedChunkManager().from_array(np.arange(6), (4,), name="raw")
        >>> x.chunks, x.name.startswith("raw-")
        (((4, 2),), True)
        """
        lock = kwargs.pop("lock", None)
        kwargs.pop("inline_array", None)
        _numpy_meta(kwargs.pop("meta", None), "from_array")
        name = kwargs.pop("name", None)
        if kwargs:
            raise TypeError(f"from_array: the xsched chunk manager takes name=, lock= and "
                            f"inline_array= only, not {sorted(kwargs)}")
        if isinstance(chunks, tuple) and "auto" in chunks and 0 in tuple(data.shape):
            chunks = (-1,) * len(data.shape)  # an empty axis: nothing to size
        return core.from_array(data, chunks, name=name, lock=lock)

    def rechunk(self, data: Array, chunks: Any, **kwargs: Any) -> Array:
        """``data`` cut into the blocks ``chunks`` (a dict ``{axis: spec}`` leaves the other
        axes as they are); ``limit`` bounds the bytes one rechunking task holds. See
        ``xsched.array.rechunk``.

        >>> import xsched.array as xa
        >>> XschedChunkManager().rechunk(xa.ones((4, 6), chunks=2), {1: 3}).chunks
        ((2, 2), (3, 3))
        """
        limit = kwargs.pop("limit", None)
        if kwargs:
            raise TypeError(f"rechunk: the xsched chunk manager takes limit= only, not "
                            f"{sorted(kwargs)}")
        return data.rechunk(chunks, limit=limit)

    def get_auto_chunk_size(self) -> int:
        """The bytes an ``"auto"`` block aims for (config ``array.chunk-size``).

        >>> XschedChunkManager().get_auto_chunk_size() > 0
        True
        """
        return parse_bytes(config.get("array.chunk-size", AUTO_CHUNK_BYTES))

    # ----------------------------------------------------------------- running
    def compute(self, *data: Any, **kwargs: Any) -> tuple:
        """NumPy arrays for the xsched arrays among ``data``, computed together in one
        graph (on the default client, or here); other values pass through.

        >>> import xsched.array as xa
        >>> a, b, c = XschedChunkManager().compute(xa.ones(3, chunks=2), 5, xa.zeros((), chunks=1))
        >>> a.tolist(), b, type(c).__name__
        ([1.0, 1.0, 1.0], 5, 'ndarray')
        """
        results = _compute_all(*data, traverse=False, **kwargs)
        return tuple(np.asarray(r) if isinstance(d, Array) else r
                     for d, r in zip(data, results))

    def persist(self, *data: Any, **kwargs: Any) -> tuple:
        """The xsched arrays among ``data`` with their blocks computed and kept (on the
        workers, or here); other values pass through.

        >>> import xsched.array as xa
        >>> (kept,) = XschedChunkManager().persist(xa.ones(4, chunks=2) * 3)
        >>> kept.compute().tolist()
        [3.0, 3.0, 3.0, 3.0]
        """
        return tuple(_persist_all(*data, traverse=False, **kwargs))

    @property
    def array_api(self) -> Any:
        """The ``xsched.array`` namespace, for xarray's ``full``, ``arange``, ...

        >>> XschedChunkManager().array_api.__name__
        'xsched.array'
        """
        import xsched.array as xa

        return xa

    # ----------------------------------------------------------------- operations
    def reduction(self, arr: Array, func: Callable, combine_func: Callable | None = None,
                  aggregate_func: Callable | None = None, axis: Any = None,
                  dtype: Any = None, keepdims: bool = False) -> Array:
        """A tree reduction of your own functions; see ``xsched.array.reduction``
        (``func`` is its ``chunk``; ``aggregate_func`` defaults to ``func``).

        >>> import numpy as np, xsched.array as xa
        >>> x = xa.from_array(np.arange(10), chunks=3)
        >>> int(XschedChunkManager().reduction(x, np.max, axis=0, dtype=x.dtype).compute())
        9
        """
        return reductions.reduction(arr, func, aggregate_func or func, axis=axis,
                                    keepdims=keepdims, dtype=dtype, combine=combine_func)

    def scan(self, func: Callable, binop: Callable, ident: float, arr: Array,
             axis: int | None = None, dtype: Any = None, **kwargs: Any) -> Array:
        """A running reduction of your own functions along ``axis``; see
        ``xsched.array.scan`` (keywords ``preop`` and ``method``).

        >>> import numpy as np, xsched.array as xa
        >>> x = xa.from_array(np.arange(1, 6), chunks=2)
        >>> XschedChunkManager().scan(np.cumsum, np.add, 0, x, axis=0).compute().tolist()
        [1, 3, 6, 10, 15]
        """
        preop = kwargs.pop("preop", None)
        method = kwargs.pop("method", "sequential")
        if kwargs:
            raise TypeError(f"scan: the xsched chunk manager takes preop= and method= only, "
                            f"not {sorted(kwargs)}")
        return scans.scan(func, binop, ident, arr, axis=axis, dtype=dtype, preop=preop,
                          method=method)

    def apply_gufunc(self, func: Callable, signature: str, *args: Any, axes: Any = None,
                     keepdims: bool = False, output_dtypes: Any = None,
                     vectorize: bool | None = None, **kwargs: Any) -> Any:
        """``func`` with the gufunc ``signature`` block by block along the loop
        dimensions; see ``xsched.array.apply_gufunc`` (keywords ``output_sizes``,
        ``allow_rechunk``, ``axis``; ``meta`` must be NumPy's).

        >>> import numpy as np, xsched.array as xa
        >>> x = xa.from_array(np.arange(6.0).reshape(3, 2), chunks=(1, 2))
        >>> XschedChunkManager().apply_gufunc(lambda v: v.sum(axis=-1), "(i)->()", x,
        ...                                   output_dtypes=[float]).compute().tolist()
        [1.0, 5.0, 9.0]
        """
        _numpy_meta(kwargs.pop("meta", None), "apply_gufunc")
        return _apply_gufunc(func, signature, *args, axes=axes, keepdims=keepdims,
                             output_dtypes=output_dtypes, vectorize=bool(vectorize), **kwargs)

    def map_blocks(self, func: Callable, *args: Any, dtype: Any = None,
                   chunks: Any = None, drop_axis: Any = None, new_axis: Any = None,
                   **kwargs: Any) -> Array:
        """``func`` on every block of the array arguments; see
        ``xsched.array.map_blocks`` (``name=`` names the tasks; ``token`` is ignored, the
        key's token comes from the inputs; ``meta`` must be NumPy's).

        >>> import numpy as np, xsched.array as xa
        >>> x = xa.from_array(np.arange(4), chunks=2)
        >>> XschedChunkManager().map_blocks(np.negative, x, dtype=x.dtype).compute().tolist()
        [0, -1, -2, -3]
        """
        _numpy_meta(kwargs.pop("meta", None), "map_blocks")
        kwargs.pop("token", None)
        return mapping.map_blocks(func, *args, dtype=dtype, chunks=chunks, drop_axis=drop_axis,
                                  new_axis=new_axis, **kwargs)

    def blockwise(self, func: Callable, out_ind: Iterable[Any], *args: Any,
                  name: str | None = None, token: Any = None, dtype: Any = None,
                  adjust_chunks: dict | None = None, new_axes: dict | None = None,
                  align_arrays: bool = True, concatenate: bool | None = None,
                  meta: Any = None, **kwargs: Any) -> Array:
        """Index notation, one task per output block; see ``xsched.array.blockwise``.
        With ``align_arrays=False`` the arguments must already share their blocks along
        every shared index (otherwise they are rechunked alike); ``token`` is ignored.

        >>> import numpy as np, xsched.array as xa
        >>> x = xa.from_array(np.arange(6).reshape(2, 3), chunks=1)
        >>> XschedChunkManager().blockwise(np.transpose, "ji", x, "ij",
        ...                                dtype=x.dtype).compute().tolist()
        [[0, 3], [1, 4], [2, 5]]
        """
        _numpy_meta(meta, "blockwise")
        if not align_arrays:
            index_notation.check_aligned(args)
        return index_notation.blockwise(func, out_ind, *args, dtype=dtype,
                                        new_axes=new_axes, concatenate=bool(concatenate),
                                        adjust_chunks=adjust_chunks, name=name, **kwargs)

    def unify_chunks(self, *args: Any, **kwargs: Any) -> tuple[dict, list]:
        """Arrays named by index notation (``x, "ij", y, "jk"``), rechunked alike along
        shared indices; see ``xsched.array.unify_chunks``.

        >>> import xsched.array as xa
        >>> chunks, arrays = XschedChunkManager().unify_chunks(
        ...     xa.ones(6, chunks=2), "i", xa.ones(6, chunks=3), "i")
        >>> chunks, [a.chunks for a in arrays]
        ({'i': (2, 1, 1, 2)}, [((2, 1, 1, 2),), ((2, 1, 1, 2),)])
        """
        if kwargs:
            raise TypeError(f"unify_chunks: the xsched chunk manager takes no keyword "
                            f"arguments, got {sorted(kwargs)}")
        return index_notation.unify_chunks(*args)

    def store(self, sources: Array | Sequence[Array], targets: Any, **kwargs: Any) -> None:
        """Write arrays into targets that take ``target[region] = block`` (xarray's file
        writers); see ``xsched.array.store`` (keywords ``lock``, ``regions``, ``compute``,
        ``flush``, ``batch_size``).

        >>> import numpy as np, xsched.array as xa
        >>> out = np.zeros(4)
        >>> XschedChunkManager().store([xa.ones(4, chunks=2)], [out], lock=None, flush=True)
        >>> out.tolist()
        [1.0, 1.0, 1.0, 1.0]
        """
        if not kwargs.get("compute", True):
            raise NotImplementedError(
                "store(compute=False) is not supported through xarray: xarray finishes a lazy write "
                "(to_netcdf/to_zarr with compute=False) with dask.delayed, which xsched does not use. "
                "Write with compute=True (the default), or write one variable lazily with "
                "xsched.array.to_zarr(ds[name].data, path, compute=False).")
        return _store(sources, targets, **kwargs)

    def shuffle(self, x: Array, indexer: list[list[int]], axis: int, chunks: Any) -> Array:
        """``x`` reordered along ``axis`` by groups of positions, each group in one chunk
        (xarray's ``groupby(...).shuffle_to_chunks()``); see ``xsched.array.shuffle``.

        >>> import xsched.array as xa
        >>> XschedChunkManager().shuffle(xa.arange(4, chunks=2), [[0, 2], [1, 3]], 0, "auto").compute().tolist()
        [0, 2, 1, 3]
        """
        return _shuffle(x, indexer, axis, "auto" if chunks is None else chunks)
