"""``xa.image.imread``: a stack of image files as one array, a block per file, as dask's
``dask.array.image.imread``.

A microscope or camera writes a movie as numbered images (``frame_0.tif``,
``frame_1.tif``...). ``imread("frames/*.tif")`` reads the first file when the expression is
built (for the shape and dtype) and makes one task per file, which reads it on a worker,
so the frames are read in parallel and never all in one process. The files come in
natural order (``frame_2`` before ``frame_10``), as every glob in xsched.

The reader is ``imageio.v3.imread`` when imageio is installed, else Pillow's; any function
of a path giving a NumPy array can be passed (``tifffile.imread``,
``skimage.io.imread``). ``preprocess`` runs on each image after it is read (a crop, a
conversion to grey), on the workers. A file whose image has another shape or dtype than
the first's fails where it is read, naming the file and both.

>>> import os, tempfile, numpy as np
>>> from PIL import Image
>>> import xsched.array as xa
>>> d = tempfile.mkdtemp()
>>> for i in range(3):
...     Image.fromarray(np.full((4, 5), i * 10, np.uint8)).save(os.path.join(d, f"frame_{i}.png"))
>>> movie = xa.image.imread(os.path.join(d, "frame_*.png"))
>>> movie.shape, movie.chunks[0], movie.dtype
((3, 4, 5), (1, 1, 1), dtype('uint8'))
>>> movie.mean(axis=(1, 2)).compute().tolist()
[0.0, 10.0, 20.0]
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ..files import LocalFileSystem, expand_paths, shown
from ..graph.layers import annotations_in_force, chunk_key, new_token, per_task
from ..graph.spec import Task, funcname
from .core import Array

__all__ = ["imread"]


def default_reader() -> Callable[[Any], np.ndarray]:
    """imageio's ``v3.imread`` when installed, else Pillow's (through ``np.asarray``)."""
    try:
        import imageio.v3 as iio

        return iio.imread
    except ImportError:
        pass
    try:
        from PIL import Image
    except ImportError:
        raise ImportError("imread needs an image reader: install imageio (pip install imageio) or Pillow, or "
                          "pass imread=your_function (e.g. tifffile.imread)") from None

    def pillow_imread(path: Any) -> np.ndarray:
        with Image.open(path) as image:
            return np.asarray(image)
    return pillow_imread


def _read(fs: Any, path: str, reader: Callable, preprocess: Callable | None) -> np.ndarray:
    if isinstance(fs, LocalFileSystem):
        image = reader(path)
    else:
        with fs.open(path, "rb") as f:
            image = reader(f)
    image = np.asarray(image)
    return np.asarray(preprocess(image)) if preprocess is not None else image


def _read_block(fs: Any, path: str, reader: Callable, preprocess: Callable | None, shape: tuple,
                dtype: np.dtype) -> np.ndarray:
    """Run on a worker: one file's image as a block of one frame, checked against the first's."""
    image = _read(fs, path, reader, preprocess)
    if image.shape != shape or image.dtype != dtype:
        raise ValueError(f"imread: {shown(fs, path)} holds an image of shape {image.shape} and dtype {image.dtype}, "
                         f"but the first file's is {shape} {dtype}; every file of the stack must have the same "
                         "shape and dtype (preprocess= can make them so)")
    return image[None]


def imread(filename: Any, imread: Callable | None = None, preprocess: Callable | None = None,
           storage_options: dict | None = None) -> Array:
    """The images of ``filename`` (a glob, a directory, a list of paths, or fsspec URLs)
    stacked along a new first axis, a block per file (see the module docstring).

    >>> import os, tempfile, numpy as np
    >>> from PIL import Image
    >>> import xsched.array as xa
    >>> d = tempfile.mkdtemp()
    >>> for i in (1, 2, 10):
    ...     Image.fromarray(np.full((2, 2, 3), i, np.uint8)).save(os.path.join(d, f"f{i}.png"))
    >>> grey = xa.image.imread(os.path.join(d, "*.png"), preprocess=lambda rgb: rgb.mean(axis=-1))
    >>> grey.shape, grey[:, 0, 0].compute().tolist()   # (natural order: f2 before f10)
    ((3, 2, 2), [1.0, 2.0, 10.0])
    """
    files = expand_paths(filename, storage_options, what="imread")
    reader = imread or default_reader()
    if not callable(reader):
        raise TypeError(f"imread: imread= must be a function of a path giving an array, got {reader!r}")
    fs, first = files[0]
    sample = _read(fs, first, reader, preprocess)
    name = f"imread-{new_token('imread', [p for _, p in files], funcname(reader), preprocess)}"
    ann = annotations_in_force()
    layer = {chunk_key(name, (i,) + (0,) * sample.ndim): Task(
        _read_block, (f, p, reader, preprocess, sample.shape, sample.dtype), {}, per_task(ann))
        for i, (f, p) in enumerate(files)}
    chunks = ((1,) * len(files),) + tuple((n,) for n in sample.shape)
    return Array(layer, name, chunks, sample.dtype)
