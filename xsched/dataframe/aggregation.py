"""Groupby aggregations of one's own: ``xd.Aggregation(name, chunk, agg, finalize)``, run as
the built-in ones are, a tree whose tasks hold one row per group, not the rows.

``chunk`` gets each partition's ``SeriesGroupBy`` (per column) and returns a Series per
group, or a tuple of them (the partial statistics); the partials of a few partitions are
joined and grouped again by the group labels, and ``agg`` gets that ``SeriesGroupBy`` (for
a tuple, one per statistic) and merges them; ``finalize``, given the merged statistics,
returns the answer per group (without it the one merged statistic is the answer). The
functions run on a stand-in of the data when the aggregation is built, so a mistake in
them fails there, not in a task.

>>> import pandas as pd, xsched.dataframe as xd
>>> spread = xd.Aggregation("spread", chunk=lambda g: (g.max(), g.min()),
...                         agg=lambda hi, lo: (hi.max(), lo.min()), finalize=lambda hi, lo: hi - lo)
>>> df = xd.from_pandas(pd.DataFrame({"k": list("abab"), "v": [1, 5, 7, 6]}), npartitions=2)
>>> df.groupby("k").v.agg(spread).compute().to_dict()
{'a': 6, 'b': 1}
"""

from __future__ import annotations

from typing import Any, Callable

import pandas as pd

from ..graph.layers import LayeredGraph, annotations_in_force, chunk_key, new_token, per_task
from ..graph.partials import combine_levels
from ..graph.spec import Ref, Task
from .core import _Frame, _nonempty, make_meta, new_collection, sort_groups
from .standin import on_stand_ins

__all__ = ["Aggregation"]


class Aggregation:
    """A groupby aggregation as three functions (see the module docstring): ``chunk`` per
    partition's groups, ``agg`` merging partial results, ``finalize`` (optional) making the
    answer from the merged ones.

    >>> import xsched.dataframe as xd
    >>> xd.Aggregation("total", chunk=lambda g: g.sum(), agg=lambda s: s.sum())
    Aggregation('total')
    """

    def __init__(self, name: str, chunk: Callable, agg: Callable, finalize: Callable | None = None) -> None:
        for what, func in (("chunk", chunk), ("agg", agg), ("finalize", finalize)):
            if func is not None and not callable(func):
                raise TypeError(f"Aggregation {name!r}: {what} must be a function, got {func!r}")
        self.__name__ = self.name = str(name)
        self.chunk, self.agg, self.finalize = chunk, agg, finalize

    def __repr__(self) -> str:
        return f"Aggregation({self.name!r})"


def is_custom(spec: Any) -> bool:
    """Whether an ``agg`` spec holds an ``Aggregation`` (alone, or as a dict's value)."""
    if isinstance(spec, Aggregation):
        return True
    if isinstance(spec, dict):
        return any(isinstance(v, Aggregation) for v in spec.values())
    return isinstance(spec, (list, tuple)) and any(isinstance(v, Aggregation) for v in spec)


def _as_tuple(value: Any) -> tuple:
    return value if isinstance(value, tuple) else (value,)


def _items(spec: Any, selection: Any) -> list[tuple[Any, Aggregation]]:
    """``[(column or None, Aggregation)]``: None stands for the grouped selection as a whole."""
    if isinstance(spec, Aggregation):
        return [(None, spec)]
    if isinstance(spec, dict) and all(isinstance(v, Aggregation) for v in spec.values()):
        return list(spec.items())
    raise TypeError(f"groupby.agg: an Aggregation goes alone or as each value of a dict ({{column: "
                    f"Aggregation}}), not mixed with other aggregations in {spec!r}; aggregate those in "
                    "another agg() and join the results")


def _chunk(part: pd.DataFrame, by: Any, by_part: Any, selection: Any, items: list, dropna: bool,
           observed: bool) -> list[tuple]:
    keys = by_part if by_part is not None else by
    grouped = part.groupby(keys, sort=False, dropna=dropna, observed=observed)
    out = []
    for col, spec in items:
        g = grouped[col] if col is not None else grouped[selection] if selection is not None else grouped
        out.append(_as_tuple(spec.chunk(g)))
    return out


def _combine(partials: list[list[tuple]], items: list) -> list[tuple]:
    out = []
    for j, (_, spec) in enumerate(items):
        merged = []
        for stat in zip(*(p[j] for p in partials)):
            joined = pd.concat(stat)
            merged.append(joined.groupby(level=list(range(joined.index.nlevels)), sort=False, dropna=False))
        out.append(_as_tuple(spec.agg(*merged)))
    return out


def _finish(partials: list[list[tuple]], items: list, sort: bool, meta: Any) -> Any:
    results = []
    for (col, spec), stats in zip(items, _combine(partials, items)):
        value = spec.finalize(*stats) if spec.finalize is not None else stats[0]
        results.append((col, value))
    if results[0][0] is None:
        out = results[0][1]
    else:
        out = pd.concat({col: value for col, value in results}, axis=1)
    if sort:
        out = sort_groups(out)
    if meta is not None:  # (the group labels named as pandas names them: a grouping Series' name)
        out.index = out.index.set_names(meta.index.names)
        if isinstance(meta, pd.DataFrame) and isinstance(out, pd.DataFrame):
            out = out[list(meta.columns)]
    return out


def custom_agg(groupby: Any, spec: Any, split_every: int) -> _Frame:
    """The tree of ``spec``'s Aggregations over ``groupby``'s frame (``GroupBy.agg`` calls it)."""
    frame, by_frame = groupby._frame, groupby._by if isinstance(groupby._by, _Frame) else None
    by = None if by_frame is not None else groupby._by
    selection = groupby._picked()
    items = _items(spec, selection)
    if any(col is not None for col, _ in items):
        frame._check_columns([col for col, _ in items], "groupby.agg")
    try:  # (the functions once on a stand-in: their mistakes show now)
        def stand_in() -> Any:
            sample = _nonempty(frame._meta)
            sample_by = _nonempty(by_frame._meta) if by_frame is not None else None
            partial = _chunk(sample, by, sample_by, selection, items, groupby._dropna, groupby._observed)
            return make_meta(_finish([partial, partial], items, groupby._sort, None))
        meta = on_stand_ins(stand_in)
        meta.index = meta.index.set_names(groupby._meta.size().index.names)
    except Exception as exc:
        raise ValueError(f"groupby.agg({spec!r}) fails on a stand-in of this frame: {type(exc).__name__}: "
                         f"{exc}") from exc
    tok = new_token(frame._name, by, getattr(by_frame, "_name", None), selection,
                    [(col, a.name, a.chunk, a.agg, a.finalize) for col, a in items], split_every,
                    groupby._sort, groupby._dropna, groupby._observed)
    ann = annotations_in_force()
    chunk_name, out_name = f"groupby-custom-chunk-{tok}", f"groupby-custom-agg-{tok}"
    layers: dict[str, dict] = {chunk_name: {}}
    keys = []
    for i, key in enumerate(frame._keys()):
        k = chunk_key(chunk_name, (i,))
        by_ref = Ref(chunk_key(by_frame._name, (i,))) if by_frame is not None else None
        layers[chunk_name][k] = Task(_chunk, (Ref(key), by, by_ref, selection, items, groupby._dropna,
                                              groupby._observed), {}, per_task(ann))
        keys.append(k)
    keys = combine_levels(layers, keys, "groupby-custom", tok, _combine, split_every, args=(items,), annotations=ann)
    layers[out_name] = {chunk_key(out_name, (0,)): Task(_finish, ([Ref(x) for x in keys], items, groupby._sort,
                                                                  meta), {}, per_task(ann))}
    parents = [frame._graph] + ([by_frame._graph] if by_frame is not None else [])
    return new_collection(LayeredGraph.merge(*parents, new=layers), out_name, meta, (None, None))
