"""Random arrays drawn block by block on the workers, the same numbers every run.

``default_rng(seed)`` gives a ``Generator`` like numpy's. Each call on it (``random``,
``normal``, ...) is numbered, and the block at grid index ``(i, j)`` of the array it returns
draws from its own numpy generator seeded with ``SeedSequence(seed, spawn_key=(call, i,
j))``. A spawned ``SeedSequence`` as the seed (or a numpy ``Generator``, whose child is one)
seeds with words it generates from its entropy and spawn key: its siblings, and its parent,
give other numbers (its spawn key put before the blocks' would make the key of a child's
block of one array the key of its parent's block of another). So a block's numbers depend only on the seed, the call's
position and the block's place in the grid: not on which worker draws it, in which order,
or how often (a block computed again after a worker died is the same block). Blocks are
independent streams, as numpy's ``SeedSequence.spawn`` makes them. Changing ``chunks``
changes the numbers; the distribution is the same.

>>> import xsched.array as xa
>>> rng = xa.random.default_rng(42)
>>> x = rng.random((4, 4), chunks=2)
>>> bool((x.compute() == x.compute()).all())
True
>>> y = xa.random.default_rng(42).random((4, 4), chunks=2)
>>> bool((x.compute() == y.compute()).all())
True
"""

from __future__ import annotations

import itertools
import numbers
import threading
from typing import Any

import numpy as np

from ..graph.layers import annotations_in_force, chunk_key, new_token, per_task
from ..graph.spec import Task
from .chunks import normalize_chunks
from .core import Array

__all__ = ["default_rng", "Generator"]


def _draw(shape: tuple, entropy: Any, key: tuple, method: str, kwargs: dict) -> np.ndarray:
    """One block: ``method`` of a numpy generator seeded for this call and block."""
    rng = np.random.default_rng(np.random.SeedSequence(entropy, spawn_key=key))
    return getattr(rng, method)(size=shape, **kwargs)


def _scalar(value: Any, name: str, method: str) -> Any:
    if isinstance(value, Array) or np.ndim(value) != 0:
        raise TypeError(f"{method}: {name} must be a scalar here, got {type(value).__name__} "
                        f"of shape {np.shape(value)}; draw standard values and scale them "
                        "(e.g. loc + scale * rng.standard_normal(...)).")
    return value


class Generator:
    """Draws chunked random arrays; made by ``default_rng`` (see the module docstring).

    >>> import xsched.array as xa
    >>> g = xa.random.default_rng(0)
    >>> a, b = g.random(3, chunks=2), g.random(3, chunks=2)
    >>> bool((a.compute() != b.compute()).all())   # each call draws new numbers
    True
    """

    def __init__(self, seed: Any = None) -> None:
        if isinstance(seed, np.random.Generator):
            seed = seed.bit_generator
        if isinstance(seed, np.random.BitGenerator):
            # a child of its SeedSequence, as numpy's Generator.spawn makes: a stream of
            # its own, and numpy's generator is left to draw others
            ss = getattr(seed, "seed_seq", None)
            seed = ss.spawn(1)[0] if isinstance(ss, np.random.SeedSequence) else tuple(
                int(v) for v in seed.random_raw(4))
        if isinstance(seed, np.random.SeedSequence):
            entropy = tuple(int(w) for w in seed.generate_state(4)) if seed.spawn_key else seed.entropy
        elif seed is None:
            entropy = np.random.SeedSequence().entropy  # fixed from here on
        elif isinstance(seed, numbers.Integral):
            entropy = int(seed)
        elif isinstance(seed, (str, bytes)) or not np.iterable(seed):
            raise TypeError(f"default_rng: seed must be None, an int, a sequence of ints, a "
                            f"numpy SeedSequence, Generator or BitGenerator, not {seed!r}")
        else:
            entropy = tuple(int(s) for s in seed)
        if (entropy < 0) if isinstance(entropy, int) else any(e < 0 for e in entropy):
            raise ValueError("default_rng: seed must be non-negative")
        self.entropy = entropy
        self._calls = itertools.count()
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"xsched.array.random.Generator(entropy={self.entropy!r})"

    def _array(self, method: str, size: Any, chunks: Any, dtype: Any, kwargs: dict) -> Array:
        shape = () if size is None else (
            (int(size),) if isinstance(size, numbers.Integral) else tuple(int(s) for s in size))
        dtype = np.dtype(dtype)
        chunks = normalize_chunks(chunks, shape, dtype)
        # numpy's own checks of the parameters (scale < 0, low >= high, a dtype it cannot
        # draw, ...) now, not in every task: one throwaway draw (none for an empty array)
        getattr(np.random.default_rng(0), method)(size=0 if 0 in shape else None, **kwargs)
        with self._lock:  # (a call that failed above takes no number)
            call = next(self._calls)
        token = new_token("random", self.entropy, call, method, kwargs, chunks)
        name = f"{method}-{token}"
        ann = annotations_in_force()
        layer = {}
        for index in np.ndindex(*tuple(len(c) for c in chunks)):
            block = tuple(c[i] for c, i in zip(chunks, index))
            layer[chunk_key(name, index)] = Task(
                _draw, (block, self.entropy, (call,) + tuple(index), method, kwargs), {},
                per_task(ann))
        return Array(layer, name, chunks, dtype)

    def random(self, size: Any = None, dtype: Any = np.float64, chunks: Any = "auto") -> Array:
        """Floats uniform in ``[0, 1)``.

        >>> import xsched.array as xa
        >>> x = xa.random.default_rng(1).random((100,), chunks=30)
        >>> x.chunks, bool(((x >= 0) & (x < 1)).all().compute())
        (((30, 30, 30, 10),), True)
        """
        dtype = np.dtype(dtype)
        return self._array("random", size, chunks, dtype, {"dtype": dtype})

    def standard_normal(self, size: Any = None, dtype: Any = np.float64,
                        chunks: Any = "auto") -> Array:
        """Samples of the normal distribution with mean 0 and standard deviation 1.

        >>> import xsched.array as xa
        >>> x = xa.random.default_rng(2).standard_normal(10_000, chunks=2_500)
        >>> abs(float(x.mean())) < 0.05
        True
        """
        dtype = np.dtype(dtype)
        return self._array("standard_normal", size, chunks, dtype, {"dtype": dtype})

    def normal(self, loc: float = 0.0, scale: float = 1.0, size: Any = None,
               chunks: Any = "auto") -> Array:
        """Samples of the normal distribution with mean ``loc`` and standard deviation
        ``scale`` (scalars).

        >>> import xsched.array as xa
        >>> x = xa.random.default_rng(3).normal(10.0, 2.0, size=10_000, chunks=5_000)
        >>> round(float(x.mean())), round(float(x.std()))
        (10, 2)
        """
        loc, scale = _scalar(loc, "loc", "normal"), _scalar(scale, "scale", "normal")
        return self._array("normal", size, chunks, np.float64, {"loc": loc, "scale": scale})

    def uniform(self, low: float = 0.0, high: float = 1.0, size: Any = None,
                chunks: Any = "auto") -> Array:
        """Floats uniform in ``[low, high)`` (scalars).

        >>> import xsched.array as xa
        >>> x = xa.random.default_rng(4).uniform(-1, 1, size=(50, 2), chunks=(20, 2))
        >>> bool(((x >= -1) & (x < 1)).all().compute())
        True
        """
        low, high = _scalar(low, "low", "uniform"), _scalar(high, "high", "uniform")
        return self._array("uniform", size, chunks, np.float64, {"low": low, "high": high})

    def integers(self, low: int, high: int | None = None, size: Any = None,
                 dtype: Any = np.int64, endpoint: bool = False, chunks: Any = "auto") -> Array:
        """Integers in ``[low, high)`` (``[0, low)`` without ``high``; ``endpoint=True``
        includes ``high``).

        >>> import xsched.array as xa
        >>> x = xa.random.default_rng(5).integers(10, size=1000, chunks=300)
        >>> int(x.min()) >= 0 and int(x.max()) <= 9
        True
        """
        low = _scalar(low, "low", "integers")
        if high is None:
            low, high = 0, low
        high = _scalar(high, "high", "integers")
        dtype = np.dtype(dtype)
        return self._array("integers", size, chunks, dtype,
                           {"low": low, "high": high, "dtype": dtype, "endpoint": endpoint})


def default_rng(seed: Any = None) -> Generator:
    """A ``Generator`` seeded with ``seed`` (an int, a sequence of ints, a numpy
    ``SeedSequence``; None draws fresh entropy once, kept for every array it makes). A numpy
    ``Generator`` or ``BitGenerator`` seeds it with a child of its ``SeedSequence``, as its
    ``spawn`` would make.

    >>> import xsched.array as xa
    >>> xa.random.default_rng(7).integers(0, 100, size=4, chunks=2).compute().tolist() == \\
    ...     xa.random.default_rng(7).integers(0, 100, size=4, chunks=2).compute().tolist()
    True
    """
    return Generator(seed)
