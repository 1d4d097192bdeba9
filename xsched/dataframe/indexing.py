"""Selecting by label and by partition: ``loc``, ``partitions``, and the accessors.

``df.loc[a:b]`` uses known divisions to read only the partitions that can hold the labels
(partial date strings such as ``"2000-01-02"`` included); ``df.partitions[i]`` picks
partitions by position; ``s.str``, ``s.dt`` and ``s.cat`` run pandas' accessor methods and
properties partition by partition. ``core.py`` reaches these through its ``INDEXERS``
table, filled in here, so this module imports ``core`` and not the other way round.

>>> import pandas as pd, xsched.dataframe as xd
>>> df = xd.from_pandas(pd.DataFrame({"a": range(10)}), npartitions=5)
>>> df.loc[3:5].npartitions, df.partitions[::2].npartitions
(2, 3)
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from ..graph.layers import LayeredGraph, chunk_key, new_token
from ..graph.spec import Ref
from .core import INDEXERS, DataFrame, Series, _Frame, _nonempty, elemwise, map_partitions, new_collection

__all__ = ["Accessor"]


class Accessor:
    """``s.str``, ``s.dt``, ``s.cat``: pandas' accessor methods and properties per partition.

    >>> import pandas as pd, xsched.dataframe as xd
    >>> s = xd.from_pandas(pd.Series(["ab", "c"]), npartitions=2)
    >>> s.str.upper().compute().tolist(), s.str.len().compute().tolist()
    (['AB', 'C'], [2, 1])
    """

    def __init__(self, series: Series, kind: str) -> None:
        try:
            self._meta_accessor = getattr(_nonempty(series._meta), kind)
        except AttributeError as exc:
            raise AttributeError(f"the .{kind} accessor does not apply to a Series of dtype "
                                 f"{series._meta.dtype}: {exc}") from None
        self._series, self._kind = series, kind

    def __getattr__(self, attr: str):
        if attr.startswith("_"):
            raise AttributeError(attr)
        if not hasattr(self._meta_accessor, attr):
            raise AttributeError(f".{self._kind} has no {attr!r}")
        if callable(getattr(self._meta_accessor, attr)):
            def call(*args: Any, **kwargs: Any):
                return map_partitions(_accessor_call, self._series, self._kind, attr, args, kwargs,
                                      _name=f"{self._kind}-{attr}")
            call.__name__ = attr
            return call
        return map_partitions(_accessor_attr, self._series, self._kind, attr, _name=f"{self._kind}-{attr}")

    def __dir__(self) -> list[str]:
        return [a for a in dir(self._meta_accessor) if not a.startswith("_")]


def _accessor_call(part: Any, kind: str, attr: str, args: tuple, kwargs: dict) -> Any:
    return getattr(getattr(part, kind), attr)(*args, **kwargs)


def _accessor_attr(part: Any, kind: str, attr: str) -> Any:
    return getattr(getattr(part, kind), attr)


class _Loc:
    def __init__(self, frame: _Frame) -> None:
        self._frame = frame

    def __getitem__(self, key: Any):
        frame = self._frame
        if isinstance(key, tuple):
            rows, cols = key
            if isinstance(frame, DataFrame):
                names = cols if isinstance(cols, list) else [cols] if not isinstance(cols, slice) else []
                frame._check_columns(names, "loc[rows, cols]")
            if isinstance(rows, slice) and rows == slice(None):
                return map_partitions(_loc, frame, (slice(None), cols), _name="loc")
            return _loc_cols(self._rows(rows), cols)
        return self._rows(key)

    def _rows(self, key: Any):
        frame = self._frame
        if isinstance(key, _Frame):
            return elemwise(_loc, frame, key, _name="loc-mask")
        if isinstance(key, slice):
            if key.step is not None:
                raise NotImplementedError("loc with a step: select the rows, then filter")
            parts = self._partitions_between(key.start, key.stop)
        else:
            parts = self._partitions_between(key, key)
            key = slice(key, key)  # a single label keeps the frame's shape (pandas' loc[[label]])
        if not parts:
            parts = [0]
        sub = frame.partitions[parts[0]:parts[-1] + 1]
        out = map_partitions(_loc, sub, key, _name="loc")
        if frame.known_divisions and not isinstance(key.start, str) and not isinstance(key.stop, str):
            lo = frame.divisions[parts[0]] if key.start is None else max(key.start, frame.divisions[parts[0]])
            hi = frame.divisions[parts[-1] + 1] if key.stop is None else min(key.stop,
                                                                          frame.divisions[parts[-1] + 1])
            out.divisions = (lo,) + out.divisions[1:-1] + (hi,)
        return out

    def _partitions_between(self, start: Any, stop: Any) -> list[int]:
        frame = self._frame
        if not frame.known_divisions:
            return list(range(frame.npartitions))
        divs = frame.divisions
        if isinstance(start, str) or isinstance(stop, str):  # "2000-01-02": pandas' partial dates
            try:
                found = pd.Index(divs).slice_indexer(start, stop)
            except (TypeError, ValueError, KeyError) as exc:
                raise KeyError(f"loc[{start!r}:{stop!r}]: the labels do not compare with this index's "
                               f"divisions ({divs[0]!r} ...): {exc}") from None
            first = max(found.start - 1, 0)
            return list(range(first, min(max(found.stop - 1, first), frame.npartitions - 1) + 1))
        out = []
        for i in range(frame.npartitions):
            lo, hi = divs[i], divs[i + 1]
            last = i == frame.npartitions - 1
            if start is not None and (hi < start or (hi == start and not last)):
                continue
            if stop is not None and lo > stop:
                continue
            out.append(i)
        return out


def _loc(part: Any, key: Any) -> Any:
    return part.loc[key]


def _loc_cols(frame: _Frame, cols: Any):
    return map_partitions(_loc, frame, (slice(None), cols), _name="loc")


class _Partitions:
    def __init__(self, frame: _Frame) -> None:
        self._frame = frame

    def __getitem__(self, index: Any):
        frame = self._frame
        positions = list(range(frame.npartitions))
        chosen = positions[index] if isinstance(index, slice) else \
            [positions[i] for i in (index if isinstance(index, (list, tuple)) else [index])]
        if not chosen:
            raise IndexError(f"partitions[{index!r}] selects none of the {frame.npartitions} partitions")
        name = f"partitions-{new_token(frame._name, chosen)}"
        keys = frame._keys()
        layer = {chunk_key(name, (j,)): Ref(keys[i]) for j, i in enumerate(chosen)}
        divisions = tuple(frame.divisions[i] for i in chosen) + (frame.divisions[chosen[-1] + 1],) \
            if frame.known_divisions else (None,) * (len(chosen) + 1)
        return new_collection(LayeredGraph.merge(frame._graph, new={name: layer}), name, frame._meta, divisions)


INDEXERS.update(loc=_Loc, partitions=_Partitions, accessor=Accessor)
