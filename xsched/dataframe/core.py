"""Partitioned pandas objects that only build task graphs: DataFrame, Series, Index, Scalar.

A ``DataFrame`` is a sequence of pandas DataFrames (its *partitions*), each the value of one
key of a task graph, together with:

* ``_meta``: an empty pandas object with the columns, dtypes and index type every partition
  has. Every operation computes its output's meta by running on a small stand-in of the
  input (two made-up rows, ``_nonempty``) when it is built, so a missing column or a function
  that cannot run on the data fails at once, naming the cause, not later inside a task;
* ``divisions``: ``npartitions + 1`` index values, partition ``i`` holding the index values
  in ``[divisions[i], divisions[i + 1])`` (the last one closed), or all ``None`` when unknown.

Operations add one layer of tasks (one per partition) through ``map_partitions``; reductions
(``reductions.py``), groupby (``groupby.py``) and the shuffle (``shuffle.py``) add theirs.
Keys read ``"<operation>-<token>-<i>"``, so progress bars group by operation.

>>> import pandas as pd, xsched.dataframe as xd
>>> df = xd.from_pandas(pd.DataFrame({"x": range(6), "y": list("abcabc")}), npartitions=2)
>>> df
xsched.DataFrame<from-pandas-..., npartitions=2, columns=['x', 'y']>
>>> df[df.x > 2].x.sum().compute()
np.int64(12)
"""

from __future__ import annotations

import html
import numbers
import operator
import warnings
from typing import Any, Callable, Sequence

import numpy as np
import pandas as pd

from ..graph.collection import compute_collection, lineage, persist_collection
from ..graph.delayed import Delayed, as_delayed, is_future, source_of
from ..graph.layers import LayeredGraph, annotations_in_force, chunk_key, new_token, per_task
from ..graph.optimize import optimize
from ..graph.order import gc_paused
from ..graph.spec import Ref, Task, accepts_keyword, funcname
from ..graph.visualize import visualize_method
from .planner import Layer, explain, plan
from .pieces import _concat
from .attribute_errors import ACCESSOR_VALUES, MissingAttribute, WrongAccessor
from .meta_checks import _check_meta
from .standin import _nonempty, make_meta, on_stand_ins

__all__ = ["DataFrame", "Series", "Index", "Scalar", "map_partitions", "new_collection"]

_NO_META = object()

#: a collection's own attributes, set as such whatever its columns are named
_FRAME_ATTRIBUTES = frozenset({"divisions"})

#: ``loc``, ``partitions`` and the ``.str``/``.dt``/``.cat`` accessors: built by
#: ``indexing.py``, which fills this table in when the package is imported
INDEXERS: dict[str, Callable] = {}

#: ``df["z"] = <xsched array>``: ``arrays.array_column``, registered when the package is
#: imported (arrays.py builds on this module)
ARRAY_COLUMN: list[Callable] = []


# --------------------------------------------------------------------------- meta


def _emulate(func: Callable, args: Sequence[Any], kwargs: dict, what: str) -> Any:
    """Run ``func`` on stand-ins of the collections among ``args`` to learn its output's meta."""
    def run() -> Any:
        fake_args = [_nonempty(a._meta) if isinstance(a, _Frame) else a._meta if isinstance(a, Scalar) else
                     a.standin if isinstance(a, _Lifted) else a for a in args]
        fake_kwargs = {k: _nonempty(v._meta) if isinstance(v, _Frame) else v._meta if isinstance(v, Scalar) else
                       v.of(0) if isinstance(v, _PartitionInfo) else v.standin if isinstance(v, _Lifted) else v
                       for k, v in kwargs.items()}
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            return func(*fake_args, **fake_kwargs)
    try:
        out = on_stand_ins(run)
    except Exception as exc:
        if any(isinstance(a, Delayed) for a in (*args, *kwargs.values())):
            raise ValueError(f"{what}: the stand-in run of {funcname(func)}, to learn its output's columns and "
                             "dtypes, received a Delayed itself (its value is not known until computed) and raised "
                             f"{type(exc).__name__}: {exc}. Pass meta= (an empty pandas object, a {{column: dtype}} "
                             "dict, or a (name, dtype) tuple for a Series) to say what it returns.") from exc
        if func is _call_method and not any(callable(a) for a in (*args[2:], *kwargs.values())):
            raise _refused(args[0], args[1], exc, what) from exc  # (pandas' own method: its arguments are wrong)
        raise ValueError(
            f"{what}: running {funcname(func)} on a two-row stand-in of the data, to learn its "
            f"output's columns and dtypes, raised {type(exc).__name__}: {exc}. Pass meta= (an empty "
            "pandas object, a {column: dtype} dict, or a (name, dtype) tuple for a Series) to say "
            "what it returns."
        ) from exc
    return make_meta(out)


def _refused(frame: Any, method: str, exc: Exception, what: str, tried: str = "a two-row stand-in") -> Exception:
    """pandas' refusal of ``frame.<method>(...)`` on a stand-in, said as such, of pandas' own
    type where it is a builtin one (a missing column's KeyError, a wrong dtype's TypeError)."""
    kind = type(frame).__name__
    dtypes = dict(frame.dtypes.astype(str)) if isinstance(frame, DataFrame) else str(frame.dtype)
    said = exc.args[0] if type(exc) is KeyError and len(exc.args) == 1 and isinstance(exc.args[0], str) else exc
    message = (f"{what}: pandas refuses {kind}.{method} with these arguments (tried on {tried} with its dtypes "
               f"{dtypes}): {type(exc).__name__}: {said}")
    return type(exc)(message) if type(exc) in (KeyError, TypeError, ValueError, IndexError) else ValueError(message)


# --------------------------------------------------------------------------- collections


class _Frame:
    """What DataFrame, Series and Index share: partitions, meta, divisions, the graph."""

    def __init__(self, graph: Any, name: str, meta: Any, divisions: Sequence[Any]) -> None:
        self._graph = graph if isinstance(graph, LayeredGraph) else LayeredGraph({name: graph})
        self._name = name
        self._meta = meta
        self.divisions = tuple(divisions)

    # ----------------------------------------------------------------- shape
    @property
    def npartitions(self) -> int:
        """How many pandas partitions make up this collection."""
        return len(self.divisions) - 1

    @property
    def known_divisions(self) -> bool:
        """Whether the index range of every partition is known (see ``set_index``)."""
        return len(self.divisions) > 0 and self.divisions[0] is not None

    def clear_divisions(self):
        """The same partitions with their divisions forgotten.

        >>> import pandas as pd, xsched.dataframe as xd
        >>> df = xd.from_pandas(pd.DataFrame({"a": range(6)}), npartitions=3)
        >>> df.divisions, df.clear_divisions().divisions
        ((0, 2, 4, 5), (None, None, None, None))
        """
        return new_collection(self._graph, self._name, self._meta, (None,) * (self.npartitions + 1))

    @property
    def dtype(self) -> Any:
        return self._meta.dtype

    def _become(self, new: "_Frame") -> None:
        """This object takes ``new``'s graph, meta and divisions (pandas' in-place writes:
        ``df[c] = ...``, ``df.loc[...] = ...``, ``s.name = ...``); what was built from it before
        keeps the old ones."""
        self._graph, self._name, self._meta, self.divisions = new._graph, new._name, new._meta, new.divisions

    def _keys(self) -> list[str]:
        return [part_key(self._name, i) for i in range(self.npartitions)]

    @property
    def partitions(self) -> "Any":
        """Select partitions by position: ``df.partitions[0]``, ``df.partitions[::2]``.

        >>> import pandas as pd, xsched.dataframe as xd
        >>> df = xd.from_pandas(pd.DataFrame({"a": range(10)}), npartitions=5)
        >>> df.partitions[1:3].npartitions, df.partitions[1].a.tolist()
        (2, [2, 3])
        """
        return INDEXERS["partitions"](self)

    # ----------------------------------------------------------------- collection protocol
    def __xsched_graph__(self) -> dict[str, Any]:
        return dict(plan(self._graph, self._keys()).flat())

    def __xsched_layers__(self) -> tuple:
        """The planner, the graph before it and the keys: collections computed together are
        planned together (``graph.layers.collections_graph``)."""
        return plan, self._graph, self._keys()

    def __xsched_keys__(self) -> list[str]:
        return self._keys()

    def explain(self) -> None:
        """Print the plan: the layers that will run, each with what it does to columns,
        after the planner has pushed the columns used into the readers and fused the
        partition-wise steps into one task per partition.

        >>> import pandas as pd, xsched.dataframe as xd
        >>> df = xd.from_pandas(pd.DataFrame({"a": [1], "b": [2]}), npartitions=1)
        >>> df[df.a > 0].b.explain()
        opaque   from-pandas-... (1 tasks)
        fused    getitem-... (1 tasks): select getitem ['a'] + gt + filter getitem-mask + select getitem ['b']
        """
        print(explain(self._graph, self._keys()))

    def optimize(self, fuse: bool = True):
        """The same collection with its plan made now, as dask's ``optimize``: columns and
        filters pushed into the readers, reductions of the same partitions made one tree,
        and (``fuse``) partition-wise steps fused into one task per partition. For looking at
        what will run (``visualize``); computing it gives the same result, and what is
        built on it later is planned on its own.

        >>> import pandas as pd, xsched.dataframe as xd
        >>> df = xd.from_pandas(pd.DataFrame({"a": [1, 2], "b": [3, 4]}), npartitions=1)
        >>> expr = df[df.a > 1].b + 1
        >>> opt = expr.optimize()
        >>> opt.compute().tolist(), len(expr._graph.layers), len(opt.__xsched_graph__())
        ([5], 6, 2)
        """
        return _rebuild(plan(self._graph, self._keys(), fuse=fuse).flat(), self._name, self._meta, self.divisions)

    def __xsched_postcompute__(self) -> tuple[Callable, tuple]:
        return _concat, (self._meta,)

    def __xsched_postpersist__(self) -> tuple[Callable, tuple]:
        return _rebuild, (self._name, self._meta, self.divisions)

    def __xsched_tokenize__(self) -> str:
        return self._name

    visualize = visualize_method

    def compute(self, **kwargs: Any) -> Any:
        """The pandas object: all partitions computed and concatenated.

        Runs on the default client when there is one, otherwise in this process.

        >>> import pandas as pd, xsched.dataframe as xd
        >>> xd.from_pandas(pd.Series([1, 2, 3]), npartitions=2).compute().tolist()
        [1, 2, 3]
        """
        return compute_collection(self, **kwargs)

    def persist(self, **kwargs: Any):
        """The same collection with its partitions computed and kept (in worker memory).

        >>> import pandas as pd, xsched.dataframe as xd
        >>> s = (xd.from_pandas(pd.Series([1, 2, 3]), npartitions=2) * 2).persist()
        >>> s.sum().compute()
        np.int64(12)
        """
        return persist_collection(self, **kwargs)

    def to_delayed(self, optimize_graph: bool = True) -> list[Delayed]:
        """One ``Delayed`` per partition, each carrying only the tasks it needs.

        >>> import pandas as pd, xsched.dataframe as xd
        >>> parts = xd.from_pandas(pd.DataFrame({"a": range(4)}), npartitions=2).to_delayed()
        >>> [len(p.compute()) for p in parts]
        [2, 2]
        """
        graph = self.__xsched_graph__()  # (columns pushed into readers)
        keys = self._keys()
        if optimize_graph:
            graph = optimize(graph, keys)
        return [Delayed(k, lineage(graph, k)) for k in keys]

    # ----------------------------------------------------------------- partition-wise
    def map_partitions(self, func: Callable, *args: Any, meta: Any = _NO_META, **kwargs: Any):
        """Apply ``func`` to every partition (see ``xsched.dataframe.map_partitions``).

        >>> import pandas as pd, xsched.dataframe as xd
        >>> df = xd.from_pandas(pd.DataFrame({"a": range(4)}), npartitions=2)
        >>> df.map_partitions(len).compute().tolist()
        [2, 2]
        """
        return map_partitions(func, self, *args, meta=meta, **kwargs)

    def _axis(self, axis: Any, what: str, none: bool = True) -> int | None:
        """pandas' number of ``axis`` here (see ``axis_number``)."""
        return axis_number(axis, what, isinstance(self, DataFrame), none)

    def _method(self, method: str, /, *args: Any, **kwargs: Any):
        """``part.<method>(*args, **kwargs)`` on every partition, named after the method
        (``method`` is positional-only: the user's keywords, ``fillna(method=...)`` too, reach pandas)."""
        return map_partitions(_call_method, self, method, *args, _name=method.strip("_"), **kwargs)

    def head(self, n: int = 5, npartitions: int = 1, compute: bool = True):
        """The first ``n`` rows, from the first ``npartitions`` partitions only (-1: all).

        >>> import pandas as pd, xsched.dataframe as xd
        >>> xd.from_pandas(pd.DataFrame({"a": range(10)}), npartitions=5).head(2).a.tolist()
        [0, 1]
        """
        return self._ends("head", n, npartitions, compute)

    def tail(self, n: int = 5, compute: bool = True, *, npartitions: int = 1):
        """The last ``n`` rows, from the last ``npartitions`` partitions only (-1: all); like
        ``head``, warns when they hold fewer than ``n`` rows (a filter emptied them, say).
        (``compute`` comes second, as in dask's ``tail``.)

        >>> import pandas as pd, xsched.dataframe as xd
        >>> xd.from_pandas(pd.DataFrame({"a": range(10)}), npartitions=5).tail(2).a.tolist()
        [8, 9]
        """
        return self._ends("tail", n, npartitions, compute)

    def _ends(self, which: str, n: int, npartitions: int, compute: bool):
        """``head`` or ``tail``: the first or last ``npartitions`` partitions, concatenated, cut to ``n`` rows."""
        npartitions = self.npartitions if npartitions == -1 else npartitions
        if not 1 <= npartitions <= self.npartitions:
            raise ValueError(f"{which}: npartitions={npartitions} but this collection has "
                             f"{self.npartitions} partitions; use -1 for all")
        first = 0 if which == "head" else self.npartitions - npartitions
        keys = [Ref(k) for k in self._keys()[first:first + npartitions]]
        name = f"{which}-{n}-{new_token(self._name, which, n, npartitions)}"
        layer = {chunk_key(name, (0,)): Task(_take_end, (keys, which, n), {}, per_task(annotations_in_force()))}
        out = new_collection(LayeredGraph.merge(self._graph, new={name: layer}), name, self._meta,
                             (self.divisions[first], self.divisions[first + npartitions]))
        if not compute:
            return out
        result = out.compute()
        if len(result) < n and npartitions < self.npartitions:
            warnings.warn(f"{which}: only {len(result)} rows in the {'first' if which == 'head' else 'last'} "
                          f"{npartitions} partition(s), {n} asked for; use {which}({n}, npartitions=-1) "
                          "to look further", stacklevel=3)
        return result

    # ----------------------------------------------------------------- reductions (reductions.py)
    def __len__(self) -> int:
        return int(self.map_partitions(len, meta=0).sum().compute())

    # ----------------------------------------------------------------- display
    def _repr_kind(self) -> str:
        return type(self).__name__

    def __repr__(self) -> str:
        return f"xsched.{self._repr_kind()}<{self._name}, npartitions={self.npartitions}{self._repr_extra()}>"

    def _repr_extra(self) -> str:
        return f", dtype={self._meta.dtype}"

    def _repr_html_(self) -> str:
        if isinstance(self._meta, pd.DataFrame):
            header = "".join(f"<th>{html.escape(str(c))}</th>" for c in self._meta.columns)
            dtypes = "".join(f"<td>{html.escape(str(d))}</td>" for d in self._meta.dtypes)
        else:
            header = f"<th>{html.escape(str(getattr(self._meta, 'name', '') or ''))}</th>"
            dtypes = f"<td>{html.escape(str(self._meta.dtype))}</td>"
        divs = self.divisions if self.known_divisions else ("...",) * min(self.npartitions + 1, 2)
        rows = (f"<tr><th>npartitions={self.npartitions}</th>{header}</tr>"
                f"<tr><th>{html.escape(str(divs[0]))}</th>{dtypes}</tr>"
                f"<tr><th>...</th>" + "<td>...</td>" * max(1, len(self._meta.columns) if
                                                         isinstance(self._meta, pd.DataFrame) else 1)
                + "</tr>" + f"<tr><th>{html.escape(str(divs[-1]))}</th></tr>")
        return (f"<div><strong>xsched.{self._repr_kind()}</strong> <code>{html.escape(self._name)}</code>"
                f"<table>{rows}</table><div>{len(self._graph)} tasks</div></div>")

    def _structure(self) -> pd.DataFrame:
        """What the repr shows, as a pandas frame: a row per division (blank when unknown),
        the dtypes in the first and ``...`` below, the index named ``npartitions=<n>``."""
        meta = self._meta if isinstance(self._meta, pd.DataFrame) else self._meta.to_frame()
        labels = list(self.divisions) if self.known_divisions else [""] * (self.npartitions + 1)
        rows = [[str(d) for d in meta.dtypes]] + [["..."] * meta.shape[1]] * (len(labels) - 1)
        return pd.DataFrame(rows, index=pd.Index(labels, name=f"npartitions={self.npartitions}", dtype=object),
                            columns=meta.columns)

    def to_string(self, max_rows: int = 5) -> str:
        """The partitions' structure as text (divisions and dtypes; nothing is computed), as
        the repr of a dask collection shows it; ``compute().to_string()`` gives the values.

        >>> import pandas as pd, xsched.dataframe as xd
        >>> print(xd.from_pandas(pd.DataFrame({"a": range(6)}), npartitions=2).to_string())  # doctest: +NORMALIZE_WHITESPACE
                           a
        npartitions=2
        0              int64
        3                ...
        5                ...
        """
        return self._structure().to_string(max_rows=max_rows)

    def to_html(self, max_rows: int = 5) -> str:
        """The partitions' structure as an HTML table (see ``to_string``); nothing is computed.

        >>> import pandas as pd, xsched.dataframe as xd
        >>> "<table" in xd.from_pandas(pd.DataFrame({"a": range(6)}), npartitions=2).to_html()
        True
        """
        return self._structure().to_html(max_rows=max_rows)

    def __dir__(self) -> list[str]:
        out = set(super().__dir__())
        if isinstance(self._meta, pd.DataFrame):
            out.update(c for c in self._meta.columns if isinstance(c, str) and c.isidentifier())
        return sorted(out)

    # ----------------------------------------------------------------- element-wise operators
    #: pandas defers to a higher priority in its operators (``pd.Series([1]) + df`` runs ``df.__radd__``)
    __pandas_priority__ = 5000

    def _binary(self, op: Callable, other: Any, reflected: bool = False):
        """``self <op> other`` partition by partition (a DataFrame with a Series: pandas' rule of
        columns first, which ``operators.py`` installs)."""
        other = _checked_array(other, self, funcname(op))
        lazy_operand(self, other, funcname(op), reflected)
        check_pandas_rows(self, other, funcname(op), isinstance(self, Series) or isinstance(other, pd.DataFrame))
        args = (other, self) if reflected else (self, other)
        kind = None
        if (isinstance(self, Series) and not reflected and op in _COMPARISONS
                and isinstance(other, (numbers.Number, str, pd.Timestamp, np.generic))):
            kind = ("opaque", None, (_COMPARISONS[op], other))  # a predicate parquet can filter by
        return elemwise(op, *args, _kind=kind)

    def __bool__(self) -> bool:
        raise ValueError(f"the truth value of an xsched {type(self).__name__} is ambiguous: it is not "
                         "computed; use .any().compute() / .all().compute(), or & and | for masks")

    def __hash__(self) -> int:
        return hash(self._name)

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        return np.asarray(self.compute(), dtype=dtype)


_AXES = {0: 0, "index": 0, "rows": 0, 1: 1, "columns": 1}


def axis_number(axis: Any, what: str, columns: bool = True, none: bool = True) -> int | None:
    """pandas' number of ``axis``: 0 for the rows (0, "index", "rows"), 1 for the columns (1,
    "columns": a DataFrame's only), None for None where ``none`` allows it (a method over
    every value); any other, a ValueError naming ``what`` and the axes there are, when the
    expression is built, as pandas refuses it.

    >>> axis_number("rows", "sum"), axis_number("columns", "sum"), axis_number(None, "sum")
    (0, 1, None)
    >>> axis_number(1, "rank", columns=False)
    Traceback (most recent call last):
    ...
    ValueError: rank: no axis named 1 for a Series: its only axis is 0 or 'index' (the rows)
    """
    try:
        number = None if axis is None else _AXES.get(axis)
    except TypeError:  # (unhashable: a list, say)
        number = None
    if number is None and (axis is not None or not none) or number == 1 and not columns:
        axes = "0 or 'index' (the rows) and 1 or 'columns'" if columns else "0 or 'index' (the rows)"
        raise ValueError(f"{what}: no axis named {axis!r} for a {'DataFrame' if columns else 'Series'}: "
                         f"its {'axes are' if columns else 'only axis is'} {axes}")
    return number


def _label_slice(frame: "_Frame", key: slice, name: str) -> slice:
    """``df[a:b]``'s slice when pandas reads it by label (times, text, a float index); a slice
    of whole numbers, which pandas takes by position, is refused: a partition does not know
    its rows' positions.

    >>> import pandas as pd, xsched.dataframe as xd
    >>> _label_slice(xd.from_pandas(pd.Series([1, 2]), npartitions=1), slice(0, 1), "s")
    Traceback (most recent call last):
    NotImplementedError: s[0:1] takes rows by position in pandas, which a partition does not know; s.head(n) computes the first rows, s.loc[a:b] slices by label
    """
    bounds = (key.start, key.stop, key.step)
    positional = all(b is None or (isinstance(b, (int, np.integer)) and not isinstance(b, bool)) for b in bounds)
    if positional and bounds != (None, None, None) and frame._meta.index.dtype.kind != "f":
        shown = f"{'' if key.start is None else key.start}:{'' if key.stop is None else key.stop}" + \
            ("" if key.step is None else f":{key.step}")
        raise NotImplementedError(f"{name}[{shown}] takes rows by position in pandas, which a partition does not "
                                  f"know; {name}.head(n) computes the first rows, {name}.loc[a:b] slices by label")
    return key


def check_pandas_rows(frame: "_Frame", other: Any, what: str, by_rows: bool) -> None:
    """Refuse, when built, a pandas object matched to ``frame``'s rows by label (``by_rows``:
    a Series with a Series, anything with a DataFrame) when ``frame`` has several partitions:
    every partition would meet all of its rows, and the result would repeat them."""
    if by_rows and isinstance(other, (pd.Series, pd.DataFrame)) and frame.npartitions > 1:
        raise ValueError(f"{what}: a pandas {type(other).__name__} is matched to the rows by label, and this "
                         f"collection has {frame.npartitions} partitions: make it a collection partitioned alike "
                         "(from_pandas with the same divisions), or repartition to one")


_COMPARISONS = {operator.lt: "<", operator.le: "<=", operator.gt: ">", operator.ge: ">=", operator.eq: "==",
                operator.ne: "!="}


def _checked_array(value: Any, frame: "_Frame", what: str, column: bool = False) -> Any:
    """``value`` for an element-wise step with ``frame``: a NumPy array that runs along the
    rows (a Series' length, a frame's rows by columns; any 1-d one for a new ``column``) is
    refused, as partitions do not know their place; a scalar or a row of one value per column
    passes."""
    if isinstance(value, np.ndarray) and value.ndim and not (
            value.ndim == 1 and isinstance(frame, DataFrame) and not column or value.shape[0] == 1):
        raise ValueError(f"{what}: a NumPy array of shape {value.shape} is matched to the rows by position, "
                         "which a partition does not know; make it a collection partitioned alike "
                         "(xsched.dataframe.from_array or from_pandas with the same divisions)")
    return value


def _make_binary(op: Callable, reflected: bool = False) -> Callable:
    def method(self, other):
        return self._binary(op, other, reflected)
    method.__name__ = op.__name__
    return method


def _make_unary(op: Callable) -> Callable:
    def method(self):
        return elemwise(op, self)
    method.__name__ = op.__name__
    return method


for _op in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "and_", "or_", "xor"):
    _f = getattr(operator, _op)
    _dunder = _op.rstrip("_")
    setattr(_Frame, f"__{_dunder}__", _make_binary(_f))
    setattr(_Frame, f"__r{_dunder}__", _make_binary(_f, reflected=True))
for _op in ("lt", "le", "gt", "ge", "eq", "ne"):
    setattr(_Frame, f"__{_op}__", _make_binary(getattr(operator, _op)))
for _op in ("neg", "pos", "abs", "invert"):
    setattr(_Frame, f"__{_op}__", _make_unary(getattr(operator, _op)))


def _call_method(part: Any, method: str, /, *args: Any, **kwargs: Any) -> Any:
    return getattr(part, method)(*args, **kwargs)


class DataFrame(_Frame):
    """A partitioned ``pandas.DataFrame``: columns and dtypes known, rows computed on demand.

    >>> import pandas as pd, xsched.dataframe as xd
    >>> df = xd.from_pandas(pd.DataFrame({"a": [1, 2, 3], "b": [4., 5., 6.]}), npartitions=2)
    >>> df.columns.tolist(), df.npartitions
    (['a', 'b'], 2)
    >>> df.assign(c=df.a * df.b).c.sum().compute()
    np.float64(32.0)
    """

    @property
    def columns(self) -> pd.Index:
        return self._meta.columns

    @columns.setter
    def columns(self, names: Sequence[Any]) -> None:
        renamed = self.rename(columns=dict(zip(self._meta.columns, names)))
        self._graph, self._name, self._meta = renamed._graph, renamed._name, renamed._meta

    @property
    def dtypes(self) -> pd.Series:
        return self._meta.dtypes

    @property
    def index(self) -> "Index":
        """The index of every partition, as a partitioned ``Index``."""
        return map_partitions(_getattr, self, "index", _name="index")

    @property
    def ndim(self) -> int:
        return 2

    @property
    def axes(self) -> list:
        """``[index, columns]``, as pandas': the index partitioned and lazy, the columns known.

        >>> import pandas as pd, xsched.dataframe as xd
        >>> xd.from_pandas(pd.DataFrame({"a": [1, 2]}), npartitions=1).axes[1].tolist()
        ['a']
        """
        return [self.index, self.columns]

    def _repr_kind(self) -> str:
        return "DataFrame"

    def _repr_extra(self) -> str:
        return f", columns={list(self._meta.columns)}"

    def _check_columns(self, names: Sequence[Any], what: str) -> None:
        missing = [n for n in names if n not in self._meta.columns]
        if missing:
            raise KeyError(f"{what}: no column {missing[0]!r} in this DataFrame; its columns are "
                           f"{list(self._meta.columns)}")

    def __getitem__(self, key: Any):
        if callable(key):  # (as pandas: called with the frame, e.g. df[lambda d: d.x > 0])
            key = key(self)
        if isinstance(key, _Frame):  # a boolean mask, partition by partition
            return elemwise(operator.getitem, self, key, _name="getitem-mask", _kind=("filter", None))
        if isinstance(key, list) or isinstance(key, pd.Index):
            self._check_columns(list(key), "df[[...]]")
            return map_partitions(operator.getitem, self, list(key), _name="getitem", _kind=("select", list(key)))
        if isinstance(key, slice):
            return self.loc[_label_slice(self, key, "df")]
        self._check_columns([key], "df[...]")
        return map_partitions(operator.getitem, self, key, _name="getitem", _kind=("select", [key]))

    def __getattr__(self, name: str):
        meta = self.__dict__.get("_meta")
        if name.startswith("_"):  # (a column such as merge's _merge, as pandas gives it; never a protocol)
            if not name.startswith("__") and meta is not None and name in meta.columns:
                return self[name]
            raise AttributeError(name)
        if meta is not None and name in meta.columns:
            return self[name]
        raise MissingAttribute("DataFrame", name, pd.DataFrame, type(self),
                               list(meta.columns) if meta is not None else None)

    def __setattr__(self, name: str, value: Any) -> None:
        """``df.a = ...`` of an existing column replaces that column, as in pandas (an attribute
        of that name would leave the frame as it was, silently); other names set attributes."""
        meta = self.__dict__.get("_meta")
        if name.startswith("_") or name in _FRAME_ATTRIBUTES or hasattr(type(self), name) or meta is None:
            object.__setattr__(self, name, value)
        elif name in meta.columns:
            self[name] = value
        else:
            if isinstance(value, (_Frame, Scalar)) or np.ndim(value) > 0:  # (as pandas warns)
                warnings.warn(f"df.{name} = ... sets an attribute, not a column: add the column with "
                              f"df[{name!r}] = ...", UserWarning, stacklevel=2)
            object.__setattr__(self, name, value)

    def __setitem__(self, key: Any, value: Any) -> None:
        if isinstance(key, (list, pd.Index)):  # several columns: a column of ``value`` each, or a value each
            values = [value[c] for c in value.columns] if isinstance(value, DataFrame) else \
                list(value) if isinstance(value, (list, tuple, np.ndarray)) else [value] * len(key)
            if len(values) != len(key):
                raise ValueError(f"df[{list(key)!r}] = ...: {len(values)} columns or values for {len(key)} "
                                 "columns; give one per column")
            new = self._assign(list(zip(key, values)))
        else:  # any hashable names one column, as in pandas: df[0] = ..., df[("a", "b")] = ...
            new = self._assign([(key, value)])
        self._become(new)

    def __iter__(self):
        return iter(self._meta.columns)

    @property
    def loc(self) -> "Any":
        """Label-based selection: rows by index label or slice (using known divisions to
        read only the partitions that can hold them), boolean masks, and ``[rows, cols]``.

        >>> import pandas as pd, xsched.dataframe as xd
        >>> df = xd.from_pandas(pd.DataFrame({"a": range(10)}), npartitions=5)
        >>> df.loc[3:5].a.compute().tolist(), df.loc[3:5].npartitions
        ([3, 4, 5], 2)
        """
        return INDEXERS["loc"](self)

    def assign(self, **columns: Any) -> "DataFrame":
        """New columns from collections (partition-aligned), scalars or callables of the frame.

        >>> import pandas as pd, xsched.dataframe as xd
        >>> df = xd.from_pandas(pd.DataFrame({"a": [1, 2]}), npartitions=1)
        >>> df.assign(b=df.a + 1, c=lambda d: d.a * 10).compute().to_dict("list")
        {'a': [1, 2], 'b': [2, 3], 'c': [10, 20]}
        """
        return self._assign(list(columns.items()))

    def _assign(self, columns: list[tuple[Any, Any]]) -> "DataFrame":
        """``assign`` of ``(name, value)`` pairs, whose names may be any hashable (``df[0] = ...``)."""
        out = self
        for name, value in columns:
            if callable(value) and not isinstance(value, _Frame):
                value = value(out)
            value = _checked_array(value, out, "assign", column=True)
            if hasattr(value, "__xsched_graph__") and hasattr(value, "numblocks"):  # (an xsched array)
                out = ARRAY_COLUMN[0](out, name, value)
            elif isinstance(value, _Frame):
                out = elemwise(_assign_one, out, name, value, _name="assign", _kind=("assign", [name]))
            else:
                out = map_partitions(_assign_one, out, name, value, _name="assign", _kind=("assign", [name]))
        return out

    def rename(self, columns: Any = None, **kwargs: Any) -> "DataFrame":
        """Rename columns (a dict or a function).

        >>> import pandas as pd, xsched.dataframe as xd
        >>> xd.from_pandas(pd.DataFrame({"a": [1]}), npartitions=1).rename(columns={"a": "b"}).columns.tolist()
        ['b']
        """
        if columns is None and not kwargs:
            raise TypeError("rename needs columns=, e.g. df.rename(columns={'old': 'new'})")
        return self._method("rename", columns=columns, **kwargs)

    def drop(self, labels: Any = None, axis: int = 0, columns: Any = None, errors: str = "raise") -> "DataFrame":
        """Drop columns (``columns=`` or ``labels`` with ``axis=1``); rows cannot be dropped
        by label without a shuffle, so ``axis=0`` is refused.

        >>> import pandas as pd, xsched.dataframe as xd
        >>> xd.from_pandas(pd.DataFrame({"a": [1], "b": [2]}), npartitions=1).drop(columns="b").columns.tolist()
        ['a']
        """
        if columns is None:
            if self._axis(axis, "drop", none=False) != 1:
                raise NotImplementedError("drop: only columns can be dropped (columns= or axis=1); "
                                          "filter rows with a mask: df[~df.index.isin([...])]")
            columns = labels
        names = [columns] if isinstance(columns, str) or not isinstance(columns, (list, tuple, pd.Index)) \
            else list(columns)
        if errors == "raise":
            self._check_columns(names, "drop")
        return self._method("drop", columns=names, errors=errors)

    def apply(self, func: Callable, axis: int = 0, meta: Any = _NO_META, args: tuple = (), **kwargs: Any):
        """``func`` on every row (``axis=1``), partition by partition; give ``meta=`` to skip
        the trial run on stand-in rows. pandas' default, ``axis=0`` (a function of each whole
        column), is refused, naming what does that here.

        >>> import pandas as pd, xsched.dataframe as xd
        >>> df = xd.from_pandas(pd.DataFrame({"a": [1, 2], "b": [3, 4]}), npartitions=2)
        >>> df.apply(lambda r: r.a + r.b, axis=1, meta=("s", "int64")).compute().tolist()
        [4, 6]
        """
        if self._axis(axis, "apply", none=False) != 1:
            raise NotImplementedError(
                f"apply(axis={axis!r}) runs a function on each whole column, which no partition holds: "
                "pass axis=1 for a function of each row, use a reduction (df.max(), df.agg([...]), "
                "df.reduction(chunk, aggregate)) for one value per column, or map_partitions for each "
                "partition's columns")
        return map_partitions(_apply_rows, self, func, args, meta=_series_meta(meta),
                              _name=f"apply-{funcname(func)}", **kwargs)

    def reset_index(self, drop: bool = False, *, level: Any = None, names: Any = None,
                    allow_duplicates: bool = False) -> "DataFrame":
        """The index (or the levels named by ``level``) as columns, named ``names`` if given, or dropped;
        each partition's new index starts at 0, and the divisions become unknown.

        >>> import pandas as pd, xsched.dataframe as xd
        >>> df = xd.from_pandas(pd.DataFrame({"a": [5]}), npartitions=1)
        >>> df.reset_index().columns.tolist(), df.reset_index(names="n").columns.tolist()
        (['index', 'a'], ['n', 'a'])
        """
        given = {k: v for k, v in (("level", level), ("names", names)) if v is not None}
        if allow_duplicates:
            given["allow_duplicates"] = True
        return self._method("reset_index", drop=drop, **given).clear_divisions()


class Series(_Frame):
    """A partitioned ``pandas.Series``.

    >>> import pandas as pd, xsched.dataframe as xd
    >>> s = xd.from_pandas(pd.Series([1, 2, 3], name="n"), npartitions=2)
    >>> s, s.name
    (xsched.Series<from-pandas-..., npartitions=2, dtype=int64>, 'n')
    >>> (s * 2).max().compute()
    np.int64(6)
    """

    def __getattr__(self, name: str):
        if name.startswith("_"):
            raise AttributeError(name)
        if name in ACCESSOR_VALUES:  # (its property raised: the accessor does not apply to this dtype)
            raise WrongAccessor(self, name)
        raise MissingAttribute("Series", name, pd.Series, type(self))

    @property
    def name(self) -> Any:
        return self._meta.name

    @name.setter
    def name(self, value: Any) -> None:
        """``s.name = "b"`` renames the Series, as pandas' (this object takes the renamed graph)."""
        self._become(self.rename(value))

    @property
    def index(self) -> "Index":
        return map_partitions(_getattr, self, "index", _name="index")

    @property
    def ndim(self) -> int:
        return 1

    @property
    def axes(self) -> list:
        """``[index]``, as pandas' (a partitioned, lazy Index).

        >>> import pandas as pd, xsched.dataframe as xd
        >>> xd.from_pandas(pd.Series([5, 6]), npartitions=1).axes[0].compute().tolist()
        [0, 1]
        """
        return [self.index]

    @property
    def str(self) -> "Any":
        """Vectorised string methods (``s.str.upper()``, ``s.str.len()``), per partition."""
        return INDEXERS["accessor"](self, "str")

    @property
    def dt(self) -> "Any":
        """Date and time properties and methods (``s.dt.year``, ``s.dt.floor('h')``)."""
        return INDEXERS["accessor"](self, "dt")

    @property
    def cat(self) -> "Any":
        """Categorical properties and methods (``s.cat.codes``)."""
        return INDEXERS["accessor"](self, "cat")

    @property
    def loc(self) -> "Any":
        """Label-based selection, as ``DataFrame.loc``."""
        return INDEXERS["loc"](self)

    def __getitem__(self, key: Any):
        if callable(key):  # (as pandas: called with the Series, e.g. s[lambda s: s > 0])
            key = key(self)
        if isinstance(key, _Frame):
            return elemwise(operator.getitem, self, key, _name="getitem-mask")
        if isinstance(key, slice):
            return self.loc[_label_slice(self, key, "s")]
        raise NotImplementedError("s[label] on a partitioned Series: use s.loc[label] (known divisions) "
                                  "or a boolean mask s[s == value]")

    def apply(self, func: Callable, args: tuple = (), meta: Any = _NO_META, **kwargs: Any) -> "Series":
        """``func`` on every value, per partition.

        >>> import pandas as pd, xsched.dataframe as xd
        >>> xd.from_pandas(pd.Series([1, 2]), npartitions=2).apply(lambda v: v * 10).compute().tolist()
        [10, 20]
        """
        return map_partitions(_call_method, self, "apply", func, args=args, meta=_series_meta(meta, self.name),
                              _name=f"apply-{funcname(func)}", **kwargs)

    def between(self, left: Any, right: Any, inclusive: str = "both") -> "Series":
        """Whether each value lies between ``left`` and ``right``.

        >>> import pandas as pd, xsched.dataframe as xd
        >>> xd.from_pandas(pd.Series([1, 5]), npartitions=1).between(0, 2).compute().tolist()
        [True, False]
        """
        for bound in (left, right):
            _checked_array(bound, self, "between")
            check_pandas_rows(self, bound, "between", True)
        return self._method("between", left, right, inclusive=inclusive)

    def to_frame(self, name: Any = None) -> DataFrame:
        """This Series as a one-column DataFrame.

        >>> import pandas as pd, xsched.dataframe as xd
        >>> xd.from_pandas(pd.Series([1], name="a"), npartitions=1).to_frame().columns.tolist()
        ['a']
        """
        return self._method("to_frame") if name is None else self._method("to_frame", name)

    def rename(self, index: Any = None) -> "Series":
        """A new name for the Series (a scalar), or new index labels (a dict or function).

        >>> import pandas as pd, xsched.dataframe as xd
        >>> xd.from_pandas(pd.Series([1], name="a"), npartitions=1).rename("b").name
        'b'
        """
        return self._method("rename", index)

    def reset_index(self, drop: bool = False, name: Any = _NO_META, *, level: Any = None,
                    allow_duplicates: bool = False):
        """The index as a column (a DataFrame; ``name=`` names the values' column) or dropped;
        divisions become unknown.

        >>> import pandas as pd, xsched.dataframe as xd
        >>> s = xd.from_pandas(pd.Series([1, 2], name="x", index=[10, 20]), npartitions=2)
        >>> s.reset_index().compute().to_dict("list")
        {'index': [10, 20], 'x': [1, 2]}
        >>> s.reset_index(name="y").compute().columns.tolist()
        ['index', 'y']
        >>> s.reset_index(drop=True).tolist(), s.reset_index(drop=True).known_divisions
        ([1, 2], False)
        """
        named = {} if name is _NO_META else {"name": name}
        if level is not None:
            named["level"] = level
        if allow_duplicates:
            named["allow_duplicates"] = True
        return self._method("reset_index", drop=drop, **named).clear_divisions()

    def tolist(self) -> list:
        """Compute and return the values as a list.

        >>> import pandas as pd, xsched.dataframe as xd
        >>> xd.from_pandas(pd.Series([1, 2]), npartitions=2).tolist()
        [1, 2]
        """
        return self.compute().tolist()


class Index(_Frame):
    """A partitioned ``pandas.Index`` (``df.index``).

    >>> import pandas as pd, xsched.dataframe as xd
    >>> xd.from_pandas(pd.DataFrame({"a": [1, 2]}, index=[10, 20]), npartitions=2).index.compute().tolist()
    [10, 20]

    Comparisons, ``isin``, ``isna``..., which pandas answers for an Index with a NumPy bool
    array (no labels), give here a boolean *Series indexed by the labels*: its values are
    pandas' array (``np.asarray(mask.compute())``), and being a Series it filters partition by
    partition (``df[df.index > x]``, ``df.loc[df.index.isin(xs)]``), combines with column masks
    (``&``) and reduces (``.sum()``) as pandas' array does.

    >>> df = xd.from_pandas(pd.DataFrame({"a": [1, 2, 3]}, index=[10, 20, 30]), npartitions=2)
    >>> df[df.index > 15].a.tolist(), df.loc[df.index.isin([10, 30])].a.tolist()
    ([2, 3], [1, 3])

    An Index of values made from the labels (``df.index.month``, ``df.index.map(f)``) keeps
    the Index of rows they stand for (``_rows``): its masks are labelled by those rows, so
    they filter the frame as pandas' arrays do.

    >>> t = xd.from_pandas(pd.DataFrame({"a": [1, 2, 3]}, index=pd.date_range("2024-01-30", periods=3)), npartitions=2)
    >>> t[t.index.month == 2].a.tolist()
    [3]
    """

    #: the Index of rows whose labels these values were made from (None: these labels are the rows)
    _rows: "Index | None" = None

    def _row_labels(self) -> "Index | None":
        """``_rows`` as a task argument: partition i of it beside partition i of this one (its
        divisions, which bound other labels than these, not compared)."""
        return None if self._rows is None else self._rows.clear_divisions()

    @property
    def name(self) -> Any:
        return self._meta.name

    @name.setter
    def name(self, value: Any) -> None:
        raise AttributeError(f"index.name = {value!r}: an xsched Index is built from its collection, which "
                             f"this would not change; name it with df = df.rename_axis({value!r}) (or "
                             f"index.rename({value!r}) for the Index alone)")

    def tolist(self) -> list:
        """Compute and return the labels as a list.

        >>> import pandas as pd, xsched.dataframe as xd
        >>> xd.from_pandas(pd.DataFrame({"a": [1, 2]}, index=[10, 20]), npartitions=2).index.tolist()
        [10, 20]
        """
        return self.compute().tolist()

    def _binary(self, op: Callable, other: Any, reflected: bool = False):
        return relabelled(map_partitions(_index_op, self, op, other, reflected, self._row_labels(),
                                         _name=funcname(op)), self)

    def _method(self, method: str, /, *args: Any, **kwargs: Any):
        out = map_partitions(_index_method, self, method, self._row_labels(), *args, _name=method.strip("_"),
                             **kwargs)
        if method not in _SAME_LABELS:
            return relabelled(out, self)
        if isinstance(out, Index) and method != "dropna":  # (the same values, the same rows)
            out._rows = self._rows
        return out


#: Index methods whose labels are the input's (or some of them, in order): the divisions still hold
_SAME_LABELS = frozenset({"rename", "set_names", "copy", "dropna"})


def relabelled(out: Any, source: "Index | None" = None) -> Any:
    """An Index made of new labels (arithmetic, ``map``, ``astype``...) from ``source``'s:
    without the divisions, which bound the old labels, and standing for ``source``'s rows;
    anything else (a mask on the rows) unchanged."""
    if not isinstance(out, Index):
        return out
    out = out.clear_divisions()
    if source is not None:
        out._rows = source._rows if source._rows is not None else source
    return out


def _labelled(out: Any, labels: pd.Index, rows: pd.Index | None = None) -> Any:
    """An array answer of an Index (a mask) as a Series on the rows' labels (see ``Index``)."""
    rows = labels if rows is None else rows
    if isinstance(out, np.ndarray) and out.ndim == 1 and len(out) == len(rows):
        return pd.Series(out, index=rows)
    return out


def _index_op(labels: pd.Index, op: Callable, other: Any, reflected: bool, rows: pd.Index | None = None) -> Any:
    return _labelled(op(other, labels) if reflected else op(labels, other), labels, rows)


def _index_method(labels: pd.Index, method: str, rows: pd.Index | None, /, *args: Any, **kwargs: Any) -> Any:
    return _labelled(getattr(labels, method)(*args, **kwargs), labels, rows)


class Scalar:
    """One value computed from a collection (a sum, a length): a single key.

    >>> import pandas as pd, xsched.dataframe as xd
    >>> total = xd.from_pandas(pd.Series([1, 2, 3]), npartitions=2).sum()
    >>> total
    xsched.Scalar<sum-agg-..., dtype=int64>
    >>> (total + 1).compute()
    np.int64(7)
    """

    def __init__(self, graph: Any, name: str, meta: Any) -> None:
        self._graph = graph if isinstance(graph, LayeredGraph) else LayeredGraph({name: graph})
        self._name = name
        self._meta = meta

    @property
    def key(self) -> str:
        return chunk_key(self._name, (0,))

    @property
    def dtype(self) -> Any:
        return getattr(self._meta, "dtype", type(self._meta))

    def __xsched_graph__(self) -> dict:
        return dict(plan(self._graph, [self.key]).flat())

    def __xsched_layers__(self) -> tuple:
        """See ``DataFrame.__xsched_layers__``."""
        return plan, self._graph, [self.key]

    def __xsched_keys__(self) -> list[str]:
        return [self.key]

    def explain(self) -> None:
        """Print the plan (see ``DataFrame.explain``)."""
        print(explain(self._graph, [self.key]))

    def optimize(self, fuse: bool = True) -> "Scalar":
        """The same value with its plan made now (see ``DataFrame.optimize``).

        >>> import pandas as pd, xsched.dataframe as xd
        >>> total = xd.from_pandas(pd.Series([1, 2, 3]), npartitions=2).sum()
        >>> int(total.optimize().compute())
        6
        """
        return _rebuild_scalar(plan(self._graph, [self.key], fuse=fuse).flat(), self._name, self._meta)

    def __xsched_postcompute__(self) -> tuple[Callable, tuple]:
        return _first, ()

    def __xsched_postpersist__(self) -> tuple[Callable, tuple]:
        return _rebuild_scalar, (self._name, self._meta)

    def __xsched_tokenize__(self) -> str:
        return self._name

    visualize = visualize_method

    def compute(self, **kwargs: Any) -> Any:
        """The value, computed on the default client or here."""
        return compute_collection(self, **kwargs)

    def persist(self, **kwargs: Any) -> "Scalar":
        """The same value, computed and kept."""
        return persist_collection(self, **kwargs)

    def to_delayed(self, optimize_graph: bool = True) -> Delayed:
        """The value as a ``Delayed``."""
        graph = self.__xsched_graph__()
        if optimize_graph:
            graph = optimize(graph, [self.key])
        return Delayed(self.key, lineage(graph, self.key))

    def _binary(self, op: Callable, other: Any, reflected: bool = False) -> "Scalar":
        if isinstance(other, _Frame):
            return other._binary(op, self, not reflected)
        if isinstance(other, Delayed):  # (a Delayed result, as a Delayed's own operators give)
            return op(other, self.to_delayed()) if reflected else op(self.to_delayed(), other)
        if hasattr(other, "__xsched_graph__") and not isinstance(other, Scalar):
            return NotImplemented  # (another collection: its reflected operator, an array's say)
        args = (other, self) if reflected else (self, other)
        meta = _emulate(op, args, {}, funcname(op))
        name = f"{funcname(op)}-{new_token(op, *args)}"
        refs = tuple(Ref(a.key) if isinstance(a, Scalar) else a for a in args)
        graphs = [a._graph for a in args if isinstance(a, Scalar)]
        layer = {chunk_key(name, (0,)): Task(op, refs, {}, per_task(annotations_in_force()))}
        return Scalar(LayeredGraph.merge(*graphs, new={name: layer}), name, meta)

    def __repr__(self) -> str:
        return f"xsched.Scalar<{self._name}, dtype={self.dtype}>"

    def _repr_html_(self) -> str:
        return (f"<div><strong>xsched.Scalar</strong> <code>{html.escape(self._name)}</code>, "
                f"dtype {html.escape(str(self.dtype))}, {len(self._graph)} tasks</div>")

    def __bool__(self) -> bool:
        raise ValueError("the truth value of an xsched Scalar is not computed; use .compute()")

    def __hash__(self) -> int:
        return hash(self._name)


for _op in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow"):
    _f = getattr(operator, _op)
    setattr(Scalar, f"__{_op}__", _make_binary(_f))
    setattr(Scalar, f"__r{_op}__", _make_binary(_f, reflected=True))
for _op in ("lt", "le", "gt", "ge", "eq", "ne"):
    setattr(Scalar, f"__{_op}__", _make_binary(getattr(operator, _op)))
Scalar.__neg__ = lambda self: self._binary(operator.mul, -1)  # type: ignore[attr-defined]


# --------------------------------------------------------------------------- building


def new_collection(graph: Any, name: str, meta: Any, divisions: Sequence[Any]):
    """The collection type that fits ``meta``: DataFrame, Series or Index.

    >>> new_collection({"n-0": pd.Series([1])}, "n", pd.Series([], dtype=int), (0, 0))
    xsched.Series<n, npartitions=1, dtype=int64>
    """
    if isinstance(meta, pd.DataFrame):
        return DataFrame(graph, name, meta, divisions)
    if isinstance(meta, pd.Series):
        return Series(graph, name, meta, divisions)
    if isinstance(meta, pd.Index):
        return Index(graph, name, meta, divisions)
    raise TypeError(f"partitions must be pandas DataFrames, Series or Indexes, but meta is a "
                    f"{type(meta).__name__} ({meta!r}); give meta= an empty pandas object")


def _as_series(value: Any, i: int) -> pd.Series:
    """A value per partition that is not pandas (``map_partitions(len)``) as a one-row Series,
    so that every partition of a collection is a pandas object."""
    return pd.Series([value], index=[i])


def checked_divisions(what: str, divisions: Any, bound: str = "") -> list:
    """``divisions`` a caller gave (``set_index``, ``from_delayed``, ``read_sql_table``): at
    least two values, sorted, of one type that compares; else a ValueError naming ``what``
    (and ``bound``, what else they must be).

    >>> checked_divisions("x", (0, 5, 9))
    [0, 5, 9]
    >>> checked_divisions("x", [9, 5, 0])
    Traceback (most recent call last):
    ...
    ValueError: x: divisions must be sorted, at least two values, got [9, 5, 0]
    """
    divisions = list(divisions)
    try:
        ordered = len(divisions) > 1 and all(a <= b for a, b in zip(divisions, divisions[1:]))
    except TypeError as exc:
        raise ValueError(f"{what}: divisions must be values of one type that compare ({exc}), got "
                         f"{divisions!r}") from exc
    if not ordered:
        raise ValueError(f"{what}: divisions must be sorted, at least two values{bound}, got {divisions!r}")
    return divisions


def part_key(name: str, i: int) -> str:
    """The key of partition ``i`` of the collection named ``name`` (``chunk_key``'s format,
    written out: it runs once per partition per operation).

    >>> part_key("sum-1a2b", 3) == chunk_key("sum-1a2b", (3,))
    True
    """
    return f"{name}-{i}"


class _PartitionInfo:
    """``partition_info=`` for a function that asks for it: a dict per partition (the first
    partition's where ``func`` runs on a stand-in for its meta)."""

    __slots__ = ("divisions",)

    def __init__(self, divisions: tuple) -> None:
        self.divisions = divisions

    def of(self, i: int) -> dict:
        return {"number": i, "division": self.divisions[i]}


class _Lifted:
    """A list, tuple, set or dict argument holding lazy values (``[df.a.max()]``, ``{"a":
    df.a.mean()}``): one Delayed builds it, and every partition receives its value; where
    ``func`` runs on a stand-in, the stand-in holds the Scalars' metas."""

    __slots__ = ("delayed", "standin")

    def __init__(self, arg: Any) -> None:
        from ..graph.delayed import delayed

        self.delayed = delayed(_swapped(arg, lambda v: v.to_delayed()))
        self.standin = _swapped(arg, lambda v: v._meta)

    def __xsched_tokenize__(self) -> str:
        return self.delayed.key


def _swapped(arg: Any, swap: Callable) -> Any:
    """``arg`` (nested lists, tuples, sets and dicts) with each Scalar in it replaced by ``swap(it)``."""
    if isinstance(arg, Scalar):
        return swap(arg)
    if type(arg) in (list, tuple, set, frozenset):
        return type(arg)(_swapped(a, swap) for a in arg)
    if type(arg) is dict:
        return {k: _swapped(v, swap) for k, v in arg.items()}
    return arg


def _holds_lazy(arg: Any) -> bool:
    if isinstance(arg, (Scalar, Delayed)):
        return True
    if type(arg) in (list, tuple, set, frozenset):
        return any(_holds_lazy(a) for a in arg)
    return type(arg) is dict and any(_holds_lazy(v) for v in arg.values())


def _lift(arg: Any) -> Any:
    """``arg`` as a ``_Lifted`` when it is a container holding lazy values, a future or another
    collection's one lazy value (a bag's ``Item``) as a Delayed, else as it is."""
    if type(arg) in (list, tuple, set, frozenset, dict) and _holds_lazy(arg):
        return _Lifted(arg)
    lazy = _one_lazy_value(arg)
    return arg if lazy is None else lazy


def _one_lazy_value(value: Any) -> Delayed | None:
    """A future, or a lazy single value of another collection (a bag's ``Item``), as the
    Delayed of its value; None for anything else (a Delayed is one already)."""
    if is_future(value):
        return as_delayed(value)
    if isinstance(value, (_Frame, Scalar, Delayed)) or not isinstance(getattr(value, "key", None), str):
        return None
    made = value.to_delayed() if hasattr(value, "__xsched_graph__") and hasattr(value, "to_delayed") else None
    return made if isinstance(made, Delayed) else None


def lazy_operand(frame: "_Frame", value: Any, what: str, reflected: bool = False) -> None:
    """Refuse, naming ``what`` and the ways, a Delayed, future or bag ``Item`` as an operand
    of an operator on ``frame``: its type, so the result's dtype, is not known until computed."""
    if isinstance(value, Delayed) or _one_lazy_value(value) is not None:
        call = f"operator.{what}(v, part)" if reflected else f"operator.{what}(part, v)"
        dtype = "bool" if what in ("lt", "le", "gt", "ge", "eq", "ne") else "f8"
        meta = f"(s.name, {dtype!r})" if isinstance(frame, Series) else "df._meta (or a {column: dtype} dict)"
        raise TypeError(f"{what}: the value of this {type(value).__name__} is not known until computed, so neither "
                        "is the dtype of the result; compute it first (value.compute()), or say the result's "
                        f"meta: map_partitions(lambda part, v: {call}, value, meta={meta})")


def _per_partition(arg: Any, n: int) -> Any:
    """What partition ``i`` of a task receives for ``arg``: a list of refs for a partitioned
    collection (one per partition), else one value for all."""
    if isinstance(arg, _PartitionInfo):
        return [arg.of(i) for i in range(n)]
    if isinstance(arg, _Lifted):
        return _Same(Ref(arg.delayed.key))
    if isinstance(arg, _Frame):
        return [Ref(k) for k in arg._keys()]
    if isinstance(arg, (Scalar, Delayed)):
        return _Same(Ref(arg.key))
    return _Same(arg)


class _Same:
    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value


def unify_divisions(*frames: Any) -> list:
    """``frames`` repartitioned to the union of their divisions when every one is a DataFrame
    or Series whose divisions are known and they differ (else as they are): partition ``i``
    of each then holds the same range of labels, so a partition-wise step meets the rows
    pandas would align with each other (``a.x + b.y``, ``concat(axis=1)``, ``combine_first``).

    >>> import pandas as pd, xsched.dataframe as xd
    >>> a = xd.from_pandas(pd.Series(range(6)), npartitions=2)
    >>> b = xd.from_pandas(pd.Series(range(4), index=[2, 3, 7, 9]), npartitions=2)
    >>> [[int(d) for d in f.divisions] for f in (a, b)]
    [[0, 3, 5], [2, 7, 9]]
    >>> [[int(d) for d in f.divisions] for f in unify_divisions(a, b)]
    [[0, 2, 3, 5, 7, 9], [0, 2, 3, 5, 7, 9]]
    >>> (a + b).compute().tolist()
    [nan, nan, 2.0, 4.0, nan, nan, nan, nan]
    """
    if len(frames) < 2 or not all(isinstance(f, (DataFrame, Series)) and f.known_divisions for f in frames) \
            or all(f.divisions[1:-1] == frames[0].divisions[1:-1] for f in frames):
        return list(frames)  # (equal inner divisions: partition i of each holds the same labels already)
    try:
        union = sorted(set().union(*(f.divisions for f in frames)))
    except TypeError:  # (labels of kinds that do not compare: the caller's own check says so)
        return list(frames)
    return [f if f.divisions == tuple(union) else f.repartition(divisions=union, force=True) for f in frames]


def _unified_arguments(args: tuple, kwargs: dict) -> tuple[tuple, dict]:
    """``args`` and ``kwargs`` with their collections' divisions unified (``unify_divisions``)."""
    found = [a for a in (*args, *kwargs.values()) if isinstance(a, _Frame)]
    if len(found) < 2:
        return args, kwargs
    same = {id(f): g for f, g in zip(found, unify_divisions(*found))}
    swap = (lambda a: same[id(a)] if isinstance(a, _Frame) else a)
    return tuple(map(swap, args)), {k: swap(v) for k, v in kwargs.items()}


def _aligned(frames: list[_Frame], what: str) -> Sequence[Any]:
    first = frames[0]
    for other in frames[1:]:
        if other.npartitions != first.npartitions:
            raise ValueError(
                f"{what}: the collections have {first.npartitions} and {other.npartitions} partitions; "
                "partition-wise operations need equal partitioning. Give them the same npartitions "
                "(repartition), or set_index on both for an aligned join.")
        if first.known_divisions and other.known_divisions and first.divisions[1:-1] != other.divisions[1:-1]:
            raise ValueError(
                f"{what}: the collections' divisions differ ({first.divisions[:3]}... and "
                f"{other.divisions[:3]}...), so their rows do not line up partition by partition; "
                "merge/join them on the index instead.")
    known = [f for f in frames if f.known_divisions]
    if not known:
        return first.divisions
    # (the inner ones are the same in all; the first and last bound all of them)
    return (min(f.divisions[0] for f in known),) + known[0].divisions[1:-1] + (max(f.divisions[-1] for f in known),)


def map_partitions(func: Callable, *args: Any, meta: Any = _NO_META, _name: str | None = None,
                   enforce_metadata: bool | None = None, _kind: tuple | None = None, **kwargs: Any):
    """Apply ``func`` to every partition; collections among ``args``/``kwargs`` are passed
    partition by partition, Scalars and Delayed as values. Collections whose divisions are
    known and differ are first repartitioned to the union of their divisions (rows then meet
    those with the same labels); otherwise they must have as many partitions.

    ``meta`` (an empty pandas object, a ``{column: dtype}`` dict or a ``(name, dtype)``
    tuple) says what ``func`` returns; without it ``func`` runs once on a two-row stand-in
    of the input to find out. Every partition of a pandas type is checked against meta (its
    type and columns) on the workers, naming the partition that differs, unless
    ``enforce_metadata=False`` (xsched's own operations, which name their layer with
    ``_name``, know their output and skip it). A ``func`` with a ``partition_info``
    parameter receives ``{"number": i, "division": the partition's first division}``, as
    dask gives it.

    >>> import pandas as pd, xsched.dataframe as xd
    >>> df = xd.from_pandas(pd.DataFrame({"a": range(6)}), npartitions=3)
    >>> xd.map_partitions(lambda p: p.a * 2, df).compute().tolist()
    [0, 2, 4, 6, 8, 10]
    >>> df.map_partitions(lambda p, partition_info=None: p.a * 0 + partition_info["number"]).compute().tolist()
    [0, 0, 1, 1, 2, 2]
    """
    what = _name or f"map_partitions({funcname(func)})"
    if enforce_metadata is None:
        enforce_metadata = _name is None
    args, kwargs = _unified_arguments(args, kwargs)
    args, kwargs = tuple(_lift(a) for a in args), {k: _lift(v) for k, v in kwargs.items()}
    frames = [a for a in list(args) + list(kwargs.values()) if isinstance(a, _Frame)]
    if not frames:
        raise TypeError(f"{what}: needs at least one xsched DataFrame, Series or Index among its arguments")
    divisions = _aligned(frames, what)
    if _name is None and "partition_info" not in kwargs and accepts_keyword(func, "partition_info"):
        kwargs["partition_info"] = _PartitionInfo(tuple(divisions))
    # (a name the caller gave with meta: a (name, dtype) pair, or a named Series)
    named = isinstance(meta, tuple) or (isinstance(meta, pd.Series) and meta.name is not None)
    meta = _emulate(func, args, kwargs, what) if meta is _NO_META else make_meta(meta)
    named = named and isinstance(meta, pd.Series)
    # (what meta makes of the tasks is in the key: a name they are given, a value per partition wrapped)
    shape = (named and meta.name, isinstance(meta, (pd.DataFrame, pd.Series, pd.Index)), enforce_metadata)
    name = f"{_name or funcname(func)}-{new_token(func, args, kwargs, shape)}"
    with gc_paused():  # (collections triggered by the new tasks and refs would scan the whole graph)
        out = _partition_layer(func, args, kwargs, meta, divisions, name, what, enforce_metadata, _kind,
                               named=named)
    if any(getattr(f, "_labels_moved", False) for f in frames) and isinstance(out, _Frame) \
            and not out.known_divisions:  # (partition i still holds the moved labels of partition i)
        out._labels_moved = True
    return out


def _series_meta(meta: Any, name: Any = None) -> Any:
    """``meta`` of what is a Series whatever ``meta`` says (``apply``'s results): a bare dtype
    (``"f8"``) is a Series of it named ``name`` (as pandas names it), not one value per partition."""
    if isinstance(meta, (str, np.dtype, type, pd.api.extensions.ExtensionDtype)):
        return pd.Series([], dtype=meta, name=name)
    return meta


def _named_as(part: Any, name: Any) -> Any:
    """A Series partition under the name its meta= gave (``apply(f, axis=1, meta=("x", "f8"))``),
    so that the computed Series and its columns downstream are named as the lazy ones are."""
    return part.rename(name) if isinstance(part, pd.Series) and part.name != name else part


def _partition_layer(func: Callable, args: tuple, kwargs: dict, meta: Any, divisions: Sequence[Any], name: str,
                     what: str, enforce_metadata: bool, _kind: tuple | None, named: bool = False):
    """``map_partitions``' new collection: a task per partition, on the inputs' graphs
    (``named``: each Series partition renamed as meta, which the caller gave)."""
    ann = annotations_in_force()
    layer: dict[str, Task] = {}
    n = len(divisions) - 1
    pos = [_per_partition(a, n) for a in args]
    kw = {k: _per_partition(v, n) for k, v in kwargs.items()}
    pandas_out = isinstance(meta, (pd.DataFrame, pd.Series, pd.Index))
    for i in range(n):
        task = Task(func, tuple(a.value if type(a) is _Same else a[i] for a in pos),
                    {k: v.value if type(v) is _Same else v[i] for k, v in kw.items()}, per_task(ann))
        if named:
            task = Task(_named_as, (task, meta.name), {}, per_task(ann))
        if enforce_metadata:
            task = Task(_check_meta, (task, meta, what, i), {}, per_task(ann))
        if not pandas_out:
            task = Task(_as_series, (task, i), {}, per_task(ann))
        layer[part_key(name, i)] = task
    graphs = [a._graph for a in list(args) + list(kwargs.values()) if isinstance(a, (_Frame, Scalar))]
    delayeds = [a.delayed if isinstance(a, _Lifted) else a for a in list(args) + list(kwargs.values())]
    graphs += [source_of(d, what, "")[1] for d in delayeds if isinstance(d, Delayed)]
    if not isinstance(meta, (pd.DataFrame, pd.Series, pd.Index)):  # one value per partition
        meta = pd.Series([], dtype=np.asarray(meta).dtype if meta is not None else object)
        divisions = (None,) * len(divisions)
    kind, columns, predicate = (tuple(_kind) + (None,))[:3] if _kind else ("opaque", None, None)
    inputs = [a._name for a in list(args) + list(kwargs.values()) if isinstance(a, _Frame)]
    layer = Layer(layer, kind, inputs, columns, predicate=predicate)  # (what it does to columns: planner.py)
    return new_collection(LayeredGraph.merge(*graphs, new={name: layer}), name, meta, divisions)


def elemwise(op: Callable, *args: Any, _name: str | None = None, _kind: tuple | None = None):
    """``op`` applied partition by partition to aligned collections and scalars (a user's
    ``a + b``, ``df[mask]``, ``df.assign(x=s)``; not a collection whose labels moved across
    partitions with one whose did not: ``labels_moved_apart``)."""
    labels_moved_apart([a for a in args if isinstance(a, _Frame)], _name or funcname(op))
    return map_partitions(op, *args, _name=_name or funcname(op), _kind=_kind)


def labels_moved_apart(frames: list, what: str) -> None:
    """Refuse to pair, partition by partition, a collection whose labels a step moved across
    partition bounds (``shift(freq="B")``: its divisions became unknown, ``_labels_moved``)
    with one whose did not: partition ``i`` of each holds other labels, so rows pandas would
    align by label would meet others (a label shifted into the next partition's range)."""
    several = [f for f in frames if f.npartitions > 1]
    if len({bool(getattr(f, "_labels_moved", False)) for f in several}) > 1:
        raise ValueError(f"{what}: one collection's labels were moved by a calendar step (shift(freq=...) with a "
                         "month, business day...), which leaves its partitions' ranges unknown, and another's were "
                         "not, so their rows do not line up partition by partition; set_index or sort_index on "
                         "the moved one first (its partitions then hold known ranges), or join them on the index "
                         "(merge(left_index=True, right_index=True))")


# --------------------------------------------------------------------------- task functions


def _getattr(part: Any, attr: str) -> Any:
    return getattr(part, attr)


def _assign_one(part: pd.DataFrame, name: Any, value: Any) -> pd.DataFrame:
    out = part.copy(deep=False)  # (what pandas' assign does, for names that are not strings too)
    if not len(part.index) and isinstance(value, (pd.Series, pd.DataFrame)):
        value = value.iloc[:0]  # (pandas gives a frame without rows the value's labels: not this one's)
    out[name] = value
    return out


def _apply_rows(part: pd.DataFrame, func: Callable, args: tuple, **kwargs: Any) -> Any:
    return part.apply(func, axis=1, args=args, **kwargs)


def _take_end(parts: list, which: str, n: int) -> Any:
    return getattr(_concat(parts), which)(n)  # (which: "head" or "tail")


def _first(results: list) -> Any:
    return results[0]


def require_sorted_times(frame: "_Frame", what: str, one_partition_will_do: bool = False) -> None:
    """Refuse, naming ``what`` and the fix, a frame whose index is not datetimes sorted across
    partitions (known divisions; one partition with none will do where said), which time
    windows, bins and spans need.

    >>> import xsched.dataframe as xd
    >>> require_sorted_times(xd.from_pandas(pd.Series([1]), npartitions=1), "resample('1h')")
    Traceback (most recent call last):
    ...
    TypeError: resample('1h') needs a DatetimeIndex, and this Series has a RangeIndex; set_index on a datetime column first
    """
    index = frame._meta.index
    if not isinstance(index, pd.DatetimeIndex):
        if isinstance(index.dtype, pd.ArrowDtype) and index.dtype.kind == "M":  # (pyarrow's times)
            raise TypeError(f"{what} needs a DatetimeIndex, and this {type(frame).__name__}'s index holds "
                            f"{index.dtype}; make it NumPy's first, e.g. set_index on the column cast with "
                            ".astype('datetime64[ns]') (or with its zone, 'datetime64[ns, UTC]')")
        raise TypeError(f"{what} needs a DatetimeIndex, and this {type(frame).__name__} has a "
                        f"{type(index).__name__}; set_index on a datetime column first")
    if not frame.known_divisions and not (one_partition_will_do and frame.npartitions == 1):
        raise ValueError(f"{what} needs the partitions sorted by time (known divisions); set_index on the "
                         "time column first (or from_pandas of a sorted frame)")


def sort_groups(out: Any) -> Any:
    """A groupby result in the order of its group labels, as pandas gives it: a categorical
    key's missing group last (pandas' ``sort_index`` leaves it first when the codes, -1 for
    missing, already rise).

    >>> s = pd.Series([1, 2], index=pd.CategoricalIndex([None, "x"], categories=["x"]))
    >>> sort_groups(s).index.tolist()
    ['x', nan]
    """
    index = out.index
    if isinstance(index, pd.CategoricalIndex) and index.hasnans:
        codes = np.where(index.codes < 0, len(index.categories), index.codes)
        return out.iloc[np.argsort(codes, kind="stable")]
    return out.sort_index()


def _rebuild(graph: dict, name: str, meta: Any, divisions: tuple):
    return new_collection(dict(graph), name, meta, divisions)


def _rebuild_scalar(graph: dict, name: str, meta: Any) -> Scalar:
    return Scalar(dict(graph), name, meta)
