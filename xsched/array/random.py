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

Every distribution of numpy's ``Generator`` is a method (``exponential``, ``poisson``,
``gamma``, ``beta``, ``binomial``..., their parameters scalars or NumPy arrays broadcasting
against ``size``; ``choice``; the vector-valued ``multinomial``, ``dirichlet`` and
``multivariate_normal``), and each is also a function of the module drawing from one default generator
(``xa.random.random((1000, 1000), chunks=100)``, as ``numpy.random`` and dask users write
it; ``randint`` and ``random_sample`` are the old names of ``integers`` and ``random``,
``seed(n)`` restarts the default generator from ``n``).

>>> xa.random.seed(3)
>>> a = xa.random.poisson(4.0, size=6, chunks=3).compute().tolist()
>>> xa.random.seed(3)
>>> a == xa.random.poisson(4.0, size=6, chunks=3).compute().tolist()
True
"""

from __future__ import annotations

import itertools
import numbers
import threading
from typing import Any

import numpy as np

from ..graph.layers import LayeredGraph, annotations_in_force, chunk_key, new_token, per_task
from ..graph.spec import Ref, Task
from .axes import axis_index
from .chunks import normalize_chunks
from .core import Array
from .creation import arange, asarray
from .manipulation import moveaxis, ravel
from .masking import known_chunks_needed
from .rechunking import whole_axes

__all__ = ["default_rng", "Generator", "RandomState", "seed"]

#: numpy's distributions not written out below: their parameters (name, default or
#: ``_REQUIRED``), all scalars; the dtype of the draws is numpy's
_REQUIRED = object()
DISTRIBUTIONS = {
    "exponential": (("scale", 1.0),),
    "standard_exponential": (),
    "standard_cauchy": (),
    "standard_gamma": (("shape", _REQUIRED),),
    "standard_t": (("df", _REQUIRED),),
    "gamma": (("shape", _REQUIRED), ("scale", 1.0)),
    "beta": (("a", _REQUIRED), ("b", _REQUIRED)),
    "chisquare": (("df", _REQUIRED),),
    "noncentral_chisquare": (("df", _REQUIRED), ("nonc", _REQUIRED)),
    "f": (("dfnum", _REQUIRED), ("dfden", _REQUIRED)),
    "noncentral_f": (("dfnum", _REQUIRED), ("dfden", _REQUIRED), ("nonc", _REQUIRED)),
    "lognormal": (("mean", 0.0), ("sigma", 1.0)),
    "laplace": (("loc", 0.0), ("scale", 1.0)),
    "logistic": (("loc", 0.0), ("scale", 1.0)),
    "gumbel": (("loc", 0.0), ("scale", 1.0)),
    "rayleigh": (("scale", 1.0),),
    "pareto": (("a", _REQUIRED),),
    "power": (("a", _REQUIRED),),
    "weibull": (("a", _REQUIRED),),
    "vonmises": (("mu", _REQUIRED), ("kappa", _REQUIRED)),
    "wald": (("mean", _REQUIRED), ("scale", _REQUIRED)),
    "triangular": (("left", _REQUIRED), ("mode", _REQUIRED), ("right", _REQUIRED)),
    "poisson": (("lam", 1.0),),
    "binomial": (("n", _REQUIRED), ("p", _REQUIRED)),
    "negative_binomial": (("n", _REQUIRED), ("p", _REQUIRED)),
    "geometric": (("p", _REQUIRED),),
    "hypergeometric": (("ngood", _REQUIRED), ("nbad", _REQUIRED), ("nsample", _REQUIRED)),
    "logseries": (("p", _REQUIRED),),
    "zipf": (("a", _REQUIRED),),
}


def _numpy_rng(entropy: Any, key: tuple, legacy: bool) -> Any:
    """NumPy's generator seeded with ``SeedSequence(entropy, spawn_key=key)``: a
    ``Generator``, or with ``legacy`` the older ``RandomState`` on its Mersenne Twister."""
    seq = np.random.SeedSequence(entropy, spawn_key=key)
    return np.random.RandomState(np.random.MT19937(seq)) if legacy else np.random.default_rng(seq)


def _draw(shape: tuple, entropy: Any, key: tuple, method: str, kwargs: dict, legacy: bool = False) -> np.ndarray:
    """One block: ``method`` of a numpy generator seeded for this call and block."""
    return getattr(_numpy_rng(entropy, key, legacy), method)(size=shape, **kwargs)


def _scalar(value: Any, name: str, method: str) -> Any:
    if isinstance(value, Array) or np.ndim(value) != 0:
        raise TypeError(f"{method}: {name} must be a scalar here, got {type(value).__name__} "
                        f"of shape {np.shape(value)}; draw standard values and scale them "
                        "(e.g. loc + scale * rng.standard_normal(...)).")
    return value


def _parameter(value: Any, name: str, method: str) -> Any:
    """A distribution's parameter: a scalar, or a NumPy array (a list) broadcasting against
    the draws, each block given its own part of it; an xsched array is refused."""
    if isinstance(value, Array):
        raise TypeError(f"{method}: {name} is an xsched Array; give a scalar or a NumPy array (each block takes "
                        f"its part), or draw standard values and scale them with the array "
                        f"(e.g. loc + scale * rng.standard_normal(...))")
    return value if np.ndim(value) == 0 else np.asarray(value)


def _block_parameters(kwargs: dict, shape: tuple, block: tuple[slice, ...]) -> dict:
    """The parameters of one block: each array-valued one cut to the block's region along
    the axes it varies on, left of length 1 along those it broadcasts on (a copy of its part
    only: a task never carries a parameter the size of its block)."""
    out = {}
    for k, v in kwargs.items():
        if isinstance(v, np.ndarray):
            v = v.reshape((1,) * (len(shape) - v.ndim) + v.shape)
            v = np.array(v[tuple(sl if n != 1 else slice(None) for sl, n in zip(block, v.shape))])
        out[k] = v
    return out


def _broadcast_shape(method: str, size: tuple | None, shapes: list) -> tuple:
    """The draws' shape: ``size``, which the array parameters must broadcast to, or their
    broadcast shape without one (NumPy's rules and words)."""
    try:
        common = np.broadcast_shapes(*shapes)
        if size is None:
            return tuple(int(n) for n in common)
        if np.broadcast_shapes(size, common) != size:
            raise ValueError
    except ValueError:
        to = "together" if size is None else f"to size {size}"
        raise ValueError(f"{method}: shape mismatch: the parameters of shapes {', '.join(map(str, shapes))} "
                         f"cannot be broadcast {to}") from None
    return size


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

    #: whether the blocks draw with NumPy's older ``RandomState`` (``RandomState`` below)
    _LEGACY = False

    def __repr__(self) -> str:
        return f"xsched.array.random.{type(self).__name__}(entropy={self.entropy!r})"

    def _next_call(self) -> int:
        """This generator's next call number (each array it makes draws from its own)."""
        with self._lock:
            return next(self._calls)

    def _array(self, method: str, size: Any, chunks: Any, dtype: Any, kwargs: dict, trailing: tuple = (),
               broadcast: tuple = ()) -> Array:
        shape = () if size is None else (
            (int(size),) if isinstance(size, numbers.Integral) else tuple(int(s) for s in size))
        # (``broadcast``: the parameters that may be NumPy arrays, each element for its draw)
        arrays = [kwargs[k] for k in broadcast if isinstance(kwargs.get(k), np.ndarray)]
        if arrays:
            shape = _broadcast_shape(method, shape if size is not None else None, [a.shape for a in arrays])
        # numpy's own checks of the parameters (scale < 0, low >= high, a dtype it cannot
        # draw, ...) now, not in every task: one throwaway draw (none for an empty array)
        # (array parameters: drawn in their own broadcast shape, never the whole size)
        probe = getattr(_numpy_rng(0, (), self._LEGACY), method)(
            size=None if arrays or 0 not in shape else 0, **kwargs)
        dtype = np.asarray(probe).dtype if dtype is None else np.dtype(dtype)
        chunks = normalize_chunks(chunks, shape, dtype)
        call = self._next_call()  # (a call that failed above takes no number)
        token = new_token("random", self.entropy, call, method, kwargs, chunks)
        name = f"{method}-{token}"
        ann = annotations_in_force()
        layer = {}
        starts = [np.cumsum((0,) + c) for c in chunks]
        # (``trailing``: axes each draw adds whole, the rows of a 2-d ``a`` choice picks from)
        for index in np.ndindex(*tuple(len(c) for c in chunks)):
            block = tuple(c[i] for c, i in zip(chunks, index))
            params = kwargs if not arrays else _block_parameters(
                kwargs, shape, tuple(slice(s[i], s[i + 1]) for s, i in zip(starts, index)))
            layer[chunk_key(name, index + (0,) * len(trailing))] = Task(
                _draw, (block, self.entropy, (call,) + tuple(index), method, params, self._LEGACY), {},
                per_task(ann))
        return Array(layer, name, chunks + tuple((n,) for n in trailing), dtype)

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
        ``scale`` (scalars, or NumPy arrays broadcasting against ``size``).

        >>> import xsched.array as xa
        >>> x = xa.random.default_rng(3).normal(10.0, 2.0, size=10_000, chunks=5_000)
        >>> round(float(x.mean())), round(float(x.std()))
        (10, 2)
        """
        loc, scale = _parameter(loc, "loc", "normal"), _parameter(scale, "scale", "normal")
        return self._array("normal", size, chunks, np.float64, {"loc": loc, "scale": scale},
                           broadcast=("loc", "scale"))

    def uniform(self, low: float = 0.0, high: float = 1.0, size: Any = None,
                chunks: Any = "auto") -> Array:
        """Floats uniform in ``[low, high)`` (scalars, or NumPy arrays broadcasting against ``size``).

        >>> import xsched.array as xa
        >>> x = xa.random.default_rng(4).uniform(-1, 1, size=(50, 2), chunks=(20, 2))
        >>> bool(((x >= -1) & (x < 1)).all().compute())
        True
        """
        low, high = _parameter(low, "low", "uniform"), _parameter(high, "high", "uniform")
        return self._array("uniform", size, chunks, np.float64, {"low": low, "high": high},
                           broadcast=("low", "high"))

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

    def choice(self, a: Any, size: Any = None, replace: bool = True, p: Any = None,
               chunks: Any = "auto", *, axis: int = 0, shuffle: bool = True) -> Array:
        """Samples of ``a`` (an int: ``range(a)``; else a sequence, whose rows are drawn, or
        its slices along ``axis``), ``p`` the probability of each (default: all alike). With
        replacement each block draws its own; without (``replace=False``), the positions are
        drawn here, when the array is built, as ``permutation`` draws its order (one integer
        per sample; ``shuffle=False`` leaves them in NumPy's unshuffled order), and the
        samples are taken from ``a`` block by block.

        >>> import xsched.array as xa
        >>> x = xa.random.default_rng(6).choice(["a", "b"], size=8, p=[0.25, 0.75], chunks=4)
        >>> x.dtype.kind, set(x.compute().tolist()) <= {"a", "b"}
        ('U', True)
        >>> picked = xa.random.default_rng(7).choice(10, size=6, replace=False, chunks=4).compute()
        >>> len(set(picked.tolist())), bool(picked.min() >= 0 and picked.max() <= 9)
        (6, True)
        >>> xa.random.default_rng(0).choice(np.arange(6).reshape(2, 3), size=4, axis=1, chunks=2).shape
        (2, 4)
        """
        if isinstance(a, Array) or isinstance(p, Array):
            raise TypeError("choice: a and p are sent to every block, so give a NumPy array or list, "
                            "not an xsched Array (compute it first if it is small)")
        if self._LEGACY and (axis != 0 or not shuffle):
            raise TypeError("choice: RandomState's choice takes no axis= or shuffle= (NumPy's neither); "
                            "use xa.random.default_rng(seed).choice")
        if axis != 0 and not isinstance(a, numbers.Integral):
            whole = np.asarray(a)
            axis = axis_index(axis, whole.ndim, "choice")
            drawn = self.choice(np.moveaxis(whole, axis, 0), size, replace, p, chunks, shuffle=shuffle)
            k = drawn.ndim - (whole.ndim - 1)  # (the axes of size, first)
            return moveaxis(drawn, list(range(k)), list(range(axis, axis + k))) if k else drawn
        if not replace:
            n = int(a) if isinstance(a, numbers.Integral) else len(np.asarray(a))
            rng = _numpy_rng(self.entropy, (self._next_call(),), self._LEGACY)
            shape = () if size is None else size
            extra = {} if shuffle else {"shuffle": False}
            positions = rng.choice(n, size=shape, replace=False, p=None if p is None else np.asarray(p, "float64"),
                                   **extra)
            if np.ndim(positions) == 0:
                positions = np.asarray(positions)
            source = arange(n, chunks="auto") if isinstance(a, numbers.Integral) else asarray(np.asarray(a))
            picked = source[positions.ravel()]
            return picked.reshape(positions.shape + source.shape[1:]).rechunk(
                chunks if positions.ndim else "auto")
        options = {"a": a if isinstance(a, numbers.Integral) else np.asarray(a), "p": p}
        if p is not None:
            options["p"] = np.asarray(p, dtype="float64")
        rows = () if isinstance(a, numbers.Integral) else options["a"].shape[1:]  # (a 2-d a: its rows are drawn)
        return self._array("choice", size, chunks, None, options, trailing=rows)

    def _vectors(self, method: str, size: Any, chunks: Any, options: dict, length: int) -> Array:
        """Draws of a distribution whose every sample is a vector of ``length`` values (the
        last axis, one chunk); its array parameters go to every block."""
        for name, value in options.items():
            if isinstance(value, Array):
                raise TypeError(f"{method}: {name} is sent to every block, so give a NumPy array or list, "
                                "not an xsched Array (compute it first: it is one vector or matrix)")
        return self._array(method, size, chunks, None, options, trailing=(length,))

    def multinomial(self, n: Any, pvals: Any, size: Any = None, chunks: Any = "auto") -> Array:
        """Counts of ``n`` trials falling into ``len(pvals)`` outcomes, one vector of counts
        per sample (shape ``size + (len(pvals),)``; ``chunks`` cuts ``size``'s axes).

        >>> import xsched.array as xa
        >>> x = xa.random.default_rng(0).multinomial(10, [0.2, 0.8], size=4, chunks=2)
        >>> x.shape, x.chunks, x.sum(axis=1).compute().tolist()
        ((4, 2), ((2, 2), (2,)), [10, 10, 10, 10])
        """
        pvals = np.asarray(pvals, dtype="float64") if not isinstance(pvals, Array) else pvals
        if np.ndim(pvals) != 1:
            raise ValueError(f"multinomial: pvals must be one vector of probabilities here, got shape "
                             f"{np.shape(pvals)}")
        return self._vectors("multinomial", size, chunks, {"n": _scalar(n, "n", "multinomial"), "pvals": pvals},
                             len(pvals))

    def dirichlet(self, alpha: Any, size: Any = None, chunks: Any = "auto") -> Array:
        """Samples of the Dirichlet distribution of concentrations ``alpha``: vectors that
        sum to one (shape ``size + (len(alpha),)``).

        >>> import numpy as np, xsched.array as xa
        >>> x = xa.random.default_rng(0).dirichlet([1.0, 2.0, 3.0], size=5, chunks=2)
        >>> x.shape, bool(np.allclose(x.sum(axis=1).compute(), 1.0))
        ((5, 3), True)
        """
        alpha = np.asarray(alpha, dtype="float64") if not isinstance(alpha, Array) else alpha
        if np.ndim(alpha) != 1:
            raise ValueError(f"dirichlet: alpha must be one vector, got shape {np.shape(alpha)}")
        return self._vectors("dirichlet", size, chunks, {"alpha": alpha}, len(alpha))

    def multivariate_normal(self, mean: Any, cov: Any, size: Any = None, check_valid: str = "warn",
                            tol: float = 1e-8, chunks: Any = "auto", **kwargs: Any) -> Array:
        """Samples of the normal distribution of ``mean`` (a vector) and covariance ``cov``
        (a matrix), one vector per sample (shape ``size + (len(mean),)``); ``check_valid``,
        ``tol`` (and the ``method`` of numpy's Generator) as numpy's.

        >>> import numpy as np, xsched.array as xa
        >>> x = xa.random.default_rng(0).multivariate_normal([0.0, 10.0], np.eye(2), size=1000, chunks=250)
        >>> x.shape, np.abs(x.mean(axis=0).compute() - [0.0, 10.0]).max() < 0.2
        ((1000, 2), np.True_)
        """
        options = {"mean": mean if isinstance(mean, Array) else np.asarray(mean, dtype="float64"),
                   "cov": cov if isinstance(cov, Array) else np.asarray(cov, dtype="float64"),
                   "check_valid": check_valid, "tol": tol, **kwargs}
        if np.ndim(options["mean"]) != 1:
            raise ValueError(f"multivariate_normal: mean must be one vector, got shape {np.shape(mean)}")
        return self._vectors("multivariate_normal", size, chunks, options, len(options["mean"]))

    def permutation(self, x: Any, chunks: Any = "auto") -> Array:
        """A permutation of ``range(x)`` (an int), or ``x``'s elements along its first axis
        in a random order (an array). As in dask, the order itself is drawn here, when the
        array is built (one integer per element, so an order of a billion takes 8 GB here);
        the elements move block by block through integer indexing.

        >>> import xsched.array as xa
        >>> p = xa.random.default_rng(8).permutation(10, chunks=4)
        >>> sorted(p.compute().tolist()) == list(range(10)), p.chunks
        (True, ((4, 4, 2),))
        """
        if isinstance(x, numbers.Integral):
            x = arange(int(x), chunks=chunks)
        else:
            x = asarray(x)
        if x.ndim == 0:
            raise ValueError("permutation: x must be an int or an array of one dimension or more")
        return x[_numpy_rng(self.entropy, (self._next_call(),), self._LEGACY).permutation(x.shape[0])]

    def permuted(self, x: Any, axis: Any = None, out: Any = None) -> Array:
        """``x`` with each slice along ``axis`` shuffled on its own (``None``: every element
        among all of them), as NumPy's ``Generator.permuted``: each block, ``axis`` whole in
        it, draws from its own stream of this generator.

        >>> import numpy as np, xsched.array as xa
        >>> x = xa.from_array(np.arange(12).reshape(3, 4), chunks=2)
        >>> p = xa.random.default_rng(3).permuted(x, axis=1).compute()
        >>> [sorted(row) for row in p.tolist()] == np.arange(12).reshape(3, 4).tolist()
        True
        """
        if self._LEGACY:
            raise AttributeError("'RandomState' has no attribute 'permuted' (NumPy's Generator has: "
                                 "xa.random.default_rng(seed).permuted)")
        if out is not None:
            raise TypeError("permuted(out=...): xsched arrays are not written in place; use the array returned")
        x = asarray(x)
        if axis is None:
            known_chunks_needed(x, "permuted(axis=None)")
            return self.permutation(ravel(x)).reshape(x.shape)
        axis = axis_index(axis, x.ndim, "permuted")
        whole = whole_axes(x, (axis,), "permuted")
        call = self._next_call()
        name = f"permuted-{new_token(whole.name, self.entropy, call, axis)}"
        ann = annotations_in_force()
        layer = {chunk_key(name, index): Task(_permuted_block, (Ref(chunk_key(whole.name, index)), self.entropy,
                                                                (call,) + index, axis), {}, per_task(ann))
                 for index in np.ndindex(*whole.numblocks)}
        return Array(LayeredGraph.merge(whole._graph, new={name: layer}), name, whole.chunks, whole.dtype)

    def shuffle(self, x: Any, axis: int = 0) -> None:
        """Reorder the xsched array ``x`` along ``axis`` in place, as NumPy's: ``x`` names the
        reordered array from now on (as after ``x[...] = v``; other arrays made from it keep
        the old order). The order is drawn here, as ``permutation``'s.

        >>> import xsched.array as xa
        >>> x = xa.arange(6, chunks=4)
        >>> xa.random.default_rng(1).shuffle(x)
        >>> sorted(x.compute().tolist())
        [0, 1, 2, 3, 4, 5]
        """
        if not isinstance(x, Array):
            raise TypeError(f"shuffle reorders an xsched array in place, not a {type(x).__name__}; for a NumPy "
                            "array use NumPy's generator, or xa.random...permutation(x) for a new array")
        axis = axis_index(axis, x.ndim, "shuffle")
        known_chunks_needed(x, "shuffle")
        order = _numpy_rng(self.entropy, (self._next_call(),), self._LEGACY).permutation(x.shape[axis])
        new = x[(slice(None),) * axis + (order,)]
        x._graph, x.name, x.chunks = new._graph, new.name, new.chunks

    def __getattr__(self, name: str) -> Any:
        if name not in DISTRIBUTIONS:
            hint = "; RandomState's name for it is randint" if name == "integers" and self._LEGACY else ""
            raise AttributeError(f"{type(self).__name__!r} has no attribute {name!r}{hint}")
        return _distribution(self, name)

    def __dir__(self) -> list:
        return sorted(set(object.__dir__(self)) | set(DISTRIBUTIONS))


def _permuted_block(block: np.ndarray, entropy: Any, key: tuple, axis: int) -> np.ndarray:
    """One block of ``permuted``: each of its slices along ``axis`` (whole here) shuffled."""
    return _numpy_rng(entropy, key, False).permuted(block, axis=axis)


def _distribution(gen: Generator, method: str) -> Any:
    """``gen.<method>(*params, size=None, chunks="auto")``: numpy's distribution ``method``
    drawn block by block (its parameters as numpy names them, scalars)."""
    params = DISTRIBUTIONS[method]

    def draw(*args: Any, size: Any = None, chunks: Any = "auto", dtype: Any = None, **kwargs: Any) -> Array:
        if len(args) == len(params) + 1 and size is None:  # (numpy's order: the parameters, then size)
            *args, size = args
        elif len(args) > len(params):
            raise TypeError(f"{method}() takes {len(params)} parameters ({', '.join(n for n, _ in params)}) and "
                            f"size, got {len(args)} values by position")
        values = dict(zip((n for n, _ in params), args))
        for name, value in kwargs.items():
            if name not in {n for n, _ in params} or name in values:
                raise TypeError(f"{method}() got an unexpected or repeated parameter {name!r}")
            values[name] = value
        for name, default in params:
            if name not in values:
                if default is _REQUIRED:
                    raise TypeError(f"{method}() needs its parameter {name!r}")
                values[name] = default
        values = {name: _parameter(value, name, method) for name, value in values.items()}
        if dtype is not None:
            values["dtype"] = np.dtype(dtype)
        return gen._array(method, size, chunks, dtype, values, broadcast=tuple(n for n, _ in params))

    draw.__name__ = method
    signature = ", ".join(n if d is _REQUIRED else f"{n}={d!r}" for n, d in params)
    draw.__doc__ = (f"Samples of numpy's ``{method}({signature})``, drawn per block "
                    "(``size=``, ``chunks=``; the parameters scalars or NumPy arrays broadcasting "
                    "against ``size``, each block given its part).")
    return draw


class RandomState(Generator):
    """NumPy's older interface, as dask's ``da.random.RandomState`` offers it for code
    written before ``default_rng``: ``random_sample``, ``randint``, ``rand``-less
    ``standard_normal`` and every distribution, each block drawn by a NumPy
    ``RandomState`` seeded for its call and place (as ``Generator`` seeds its blocks).

    >>> import xsched.array as xa
    >>> state = xa.random.RandomState(1234)
    >>> x = state.normal(10, 0.1, size=(20, 20), chunks=(10, 10))
    >>> round(float(x.mean()))
    10
    >>> state.randint(0, 5, size=6, chunks=3).compute().max() < 5
    np.True_
    """

    _LEGACY = True

    def random_sample(self, size: Any = None, chunks: Any = "auto") -> Array:
        """Floats uniform in ``[0, 1)``; ``random`` is the same."""
        return self._array("random_sample", size, chunks, np.float64, {})

    random = random_sample  # type: ignore[assignment]

    def standard_normal(self, size: Any = None, chunks: Any = "auto") -> Array:  # type: ignore[override]
        """Samples of the normal distribution with mean 0 and standard deviation 1."""
        return self._array("standard_normal", size, chunks, np.float64, {})

    def randint(self, low: int, high: int | None = None, size: Any = None, dtype: Any = int,
                chunks: Any = "auto") -> Array:
        """Integers in ``[low, high)`` (``[0, low)`` without ``high``), as NumPy's ``randint``."""
        low = _scalar(low, "low", "randint")
        high = None if high is None else _scalar(high, "high", "randint")
        dtype = np.dtype(dtype)
        return self._array("randint", size, chunks, dtype, {"low": low, "high": high, "dtype": dtype})

    @property
    def integers(self) -> Any:  # type: ignore[override]
        """Not NumPy's ``RandomState``'s (its name is ``randint``)."""
        raise AttributeError("integers")


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


#: the generator the module's functions draw from (fresh entropy per process; ``seed`` restarts it)
_default = Generator()


def seed(value: Any = None) -> None:
    """Restart the generator the module's functions (``xa.random.random``...) draw from.

    >>> import xsched.array as xa
    >>> xa.random.seed(1)
    >>> a = xa.random.random(3, chunks=2).compute().tolist()
    >>> xa.random.seed(1)
    >>> a == xa.random.random(3, chunks=2).compute().tolist()
    True
    """
    global _default
    _default = Generator(value)


#: the module's functions of the default generator, and numpy's old names for two of them
_FUNCTIONS = ("random", "standard_normal", "normal", "uniform", "integers", "choice", "permutation", "multinomial",
              "dirichlet", "multivariate_normal", *DISTRIBUTIONS)
_OLD_NAMES = {"random_sample": "random", "randint": "integers"}


def __getattr__(name: str) -> Any:
    method = _OLD_NAMES.get(name, name)
    if method in _FUNCTIONS:
        return getattr(_default, method)
    raise AttributeError(f"module 'xsched.array.random' has no attribute {name!r}")


def __dir__() -> list:
    return sorted(set(globals()) | set(_FUNCTIONS) | set(_OLD_NAMES))
