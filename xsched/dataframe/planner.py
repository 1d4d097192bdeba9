"""The planner: read only the columns an expression uses, and say what will run (``explain``).

Every partition-wise operation records in its layer what it does to columns (a ``Layer``:
a dict of tasks with a ``kind``): ``select`` of named columns, a ``filter`` by a mask, an
``assign`` of one column, a ``groupby`` using some columns; a reader (``read_parquet``,
``read_csv``) records how to read fewer columns. Any other layer, or a layer of unknown
kind, is taken to use every column of its inputs. Before a graph leaves the collection,
the planner walks back from the outputs, computing for each layer the columns its consumers
use, and rebuilds each reader whose consumers use fewer than all of its columns::

    read-parquet (a..t)  ->  filter(x > 0)  ->  groupby(name).y.sum()
                     \\->  select x  ->  gt 0  -/
    columns used downstream of the read: {name, y} + {x}  ->  read_parquet(columns=[name, x, y])

The projected reader gets new keys (its name carries the columns), and the tasks that
referred to the old ones are rewritten, so a graph never has two meanings for one key.
Graphs without a reader skip the walk entirely.

>>> from xsched.graph.spec import Task, Ref
>>> from xsched.graph.layers import LayeredGraph
>>> read = Layer({"r-0": Task(dict, ())}, kind="read", columns=["a", "b", "c"],
...              project=lambda cols, filters: [Task(dict, (), {"cols": tuple(cols)})])
>>> pick = Layer({"s-0": Task(list, (Ref("r-0"),))}, kind="select", inputs=["r"], columns=["b"])
>>> graph = project_columns(LayeredGraph({"r": read, "s": pick}), ["s-0"])
>>> sorted(k for k in graph if k != "s-0"), graph["s-0"].args
(['r-b-...-0'], (Ref('r-b-...-0'),))
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Mapping

from ..graph.layers import LayeredGraph, new_token
from ..graph.order import task_dependencies
from ..graph.spec import Ref, substitute

__all__ = ["Layer", "project_columns", "explain"]

ALL = None  # "every column"


class Layer(dict):
    """A layer of tasks (key -> Task) that says what it does to columns.

    ``kind``: ``read`` (``columns``: what it reads, ``project(columns, filters)``: the same
    read of fewer columns and, where the reader can, of the rows passing ``filters`` only,
    as a list of tasks, one per partition in order), ``select`` (``columns``), ``filter``
    (``inputs[0]`` filtered by the mask ``inputs[1]``), ``assign`` (``columns``: the one
    it adds), ``groupby`` (``columns``: those it uses, or None for all), or ``opaque``.
    ``inputs``: the names of the layers its tasks read, in argument order.
    """

    __slots__ = ("kind", "inputs", "columns", "project", "predicate")

    def __init__(self, tasks: Mapping[str, Any], kind: str = "opaque", inputs: Iterable[str] = (),
                 columns: Iterable[Any] | None = None, project: Callable | None = None,
                 predicate: tuple | None = None) -> None:
        super().__init__(tasks)
        self.kind, self.inputs = kind, list(inputs)
        self.columns = list(columns) if columns is not None else None
        self.project = project
        self.predicate = predicate  # (op, value) of a comparison of a Series with a literal


def _owners(graph: LayeredGraph) -> dict[str, str]:
    return {key: name for name, layer in graph.layers.items() for key in layer}


def _consumers(graph: LayeredGraph, owners: Mapping[str, str]) -> dict[str, set[str]]:
    """Which layers read each layer's keys, from the tasks themselves (so layers that
    recorded no inputs are still seen)."""
    out: dict[str, set[str]] = {name: set() for name in graph.layers}
    for name, layer in graph.layers.items():
        for task in layer.values():
            for dep in task_dependencies(task):
                owner = owners.get(dep)
                if owner is not None and owner != name:
                    out[owner].add(name)
    return out


def _needs(graph: LayeredGraph, outputs: set[str], consumers: Mapping[str, set[str]]) -> dict[str, Any]:
    """For each layer, the set of its columns that its consumers use (``ALL`` for every one)."""
    memo: dict[str, Any] = {}

    def need(name: str) -> Any:
        if name in memo:
            return memo[name]
        memo[name] = ALL  # (a cycle, which graphs never have, would read everything)
        total: set | None = set()
        if name in outputs:
            total = ALL
        for consumer in consumers[name]:
            if total is ALL:
                break
            used = _used_by(graph.layers[consumer], need(consumer), name)
            total = ALL if used is ALL else total | used
        memo[name] = total
        return total

    return {name: need(name) for name in graph.layers}


def _used_by(layer: Any, downstream: Any, input_name: str) -> Any:
    """The columns of ``input_name`` that ``layer`` uses, given the columns of its own
    output that its consumers use (``downstream``)."""
    kind = getattr(layer, "kind", "opaque")
    inputs = getattr(layer, "inputs", [])
    if input_name not in inputs or inputs[0] != input_name or inputs.count(input_name) != 1:
        return ALL
    if kind == "select":
        return set(layer.columns)
    if kind == "groupby":
        return ALL if layer.columns is None else set(layer.columns)
    if kind == "filter":
        return downstream
    if kind == "assign":
        return ALL if downstream is ALL else downstream - set(layer.columns)
    return ALL


def _pushed_filters(layers: Mapping[str, Any], consumers: Mapping[str, set[str]], reader: str) -> list:
    """Predicates ``(column, op, value)`` of ``df[df.col <op> value]`` filters applied to
    ``reader`` itself, when nothing else reads the reader or the mask's steps (so reading
    only the matching rows changes nothing else)."""
    out = []
    for name in consumers[reader]:
        flt = layers[name]
        if getattr(flt, "kind", None) != "filter" or flt.inputs[:1] != [reader] or len(flt.inputs) != 2:
            continue
        mask = layers.get(flt.inputs[1])
        pred = getattr(mask, "predicate", None)
        if pred is None or len(mask.inputs) != 1 or consumers[flt.inputs[1]] != {name}:
            continue
        sel = layers.get(mask.inputs[0])
        if getattr(sel, "kind", None) != "select" or sel.inputs != [reader] or len(sel.columns) != 1 \
                or consumers[mask.inputs[0]] != {flt.inputs[1]}:
            continue
        if consumers[reader] != {name, mask.inputs[0]}:
            return []
        out.append((sel.columns[0], *pred))
    return out


def project_columns(graph: LayeredGraph, outputs: Iterable[str]) -> LayeredGraph:
    """``graph`` with every reader reading only the columns the rest of it uses, and only
    the rows a comparison filter on the reader keeps (see the module docstring); ``outputs``
    are the keys the caller wants (their layers use all their columns)."""
    readers = [n for n, layer in graph.layers.items() if getattr(layer, "kind", None) == "read"
               and getattr(layer, "project", None) is not None]
    if not readers:
        return graph
    owners = _owners(graph)
    out_layers = {owners[k] for k in outputs if k in owners}
    consumers = _consumers(graph, owners)
    needs = _needs(graph, out_layers, consumers)
    layers = dict(graph.layers)
    for name in readers:
        used = needs[name]
        layer = layers[name]
        filters = _pushed_filters(layers, consumers, name) if name not in out_layers else []
        narrower = used is not ALL and not set(layer.columns) <= used
        if not narrower and not filters:
            continue
        columns = [c for c in layer.columns if used is ALL or c in used]
        tasks = layer.project(columns, filters)
        if tasks is None and filters:  # the reader cannot filter these rows: columns only
            filters = []
            tasks = layer.project(columns, filters) if narrower else None
        if tasks is None or len(tasks) != len(layer):  # (the same partitions, whatever is read)
            continue
        label = "-".join(map(str, columns))[:40] if narrower else "rows"
        new_name = f"{name.rsplit('-', 1)[0]}-{label}-{new_token(name, columns, repr(filters))}"
        renamed = {f"{new_name}-{i}": task for i, task in enumerate(tasks)}
        mapping = {old: Ref(f"{new_name}-{i}") for i, old in enumerate(layer)}
        del layers[name]
        layers[new_name] = Layer(renamed, "read", (), columns, None)
        layers[new_name].predicate = tuple(filters) or None
        for consumer in consumers[name]:
            old = layers[consumer]
            rewritten = {k: substitute(t, mapping) for k, t in old.items()}
            if isinstance(old, Layer):
                rewritten = Layer(rewritten, old.kind, [new_name if i == name else i for i in old.inputs],
                                  old.columns, old.project, old.predicate)
            layers[consumer] = rewritten
    return LayeredGraph(layers)


def explain(graph: LayeredGraph, outputs: Iterable[str]) -> str:
    """The layers that will run, in order, with what each does to columns: the plan after
    projection, one line per layer."""
    planned = project_columns(graph, outputs)
    lines = []
    for name, layer in planned.layers.items():
        kind = getattr(layer, "kind", "opaque")
        cols = getattr(layer, "columns", None)
        detail = f" columns={cols}" if cols is not None and kind in ("read", "select", "groupby", "assign") else ""
        if kind == "read" and getattr(layer, "predicate", None):
            detail += f" filters={list(layer.predicate)}"
        lines.append(f"{kind:<8} {name} ({len(layer)} tasks){detail}")
    return "\n".join(lines)
