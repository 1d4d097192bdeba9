"""A collection's task graph as a picture (SVG, drawn here: no graphviz), for ``.visualize()``.

Why grouped by default: a graph of a hundred thousand tasks draws as a blur, while its task
groups (the words of a key before its token, as the progress bars name them: ``from-array``,
``sum-chunk``, ``sum-combine``...) are few. Each group is a box with its count of tasks, an
arrow from every group whose tasks another group's tasks read; ``tasks=True`` draws every task
instead, for small graphs. Boxes stand in columns by the longest chain of groups before them,
so a computation reads left to right, inputs first.

>>> import xsched.array as xa
>>> picture = visualize(xa.ones((4, 4), chunks=2).sum())
>>> picture
GraphPicture<3 groups, 2 arrows: ones (4) -> sum-chunk (4) -> sum-aggregate (1)>
"""

from __future__ import annotations

import html
import os
from typing import Any

from ..keys import key_split
from .order import toposort
from .spec import dependencies

__all__ = ["visualize", "visualize_method", "GraphPicture"]

#: The most tasks ``tasks=True`` draws.
MAX_TASKS = 1000

_BOX_W, _BOX_H, _GAP_X, _GAP_Y = 170, 34, 60, 18


class GraphPicture:
    """A drawn graph: shows itself in a notebook (SVG); ``.svg`` is its text, ``save(path)``
    writes it."""

    def __init__(self, svg: str, nodes: list[tuple[str, int]], edges: list[tuple[str, str]],
                 grouped: bool = True) -> None:
        self.svg = svg
        self.nodes = nodes  # (group and its count of tasks, or key and 1), inputs first
        self.edges = edges
        self.grouped = grouped

    def _repr_svg_(self) -> str:
        return self.svg

    def __repr__(self) -> str:
        chain = " -> ".join(f"{name} ({n})" for name, n in self.nodes[:4])
        more = ", ..." if len(self.nodes) > 4 else ""
        return (f"GraphPicture<{len(self.nodes)} {'groups' if self.grouped else 'tasks'}, {len(self.edges)} "
                f"arrows: {chain}{more}>")

    def save(self, path: str | os.PathLike) -> str:
        """Write the SVG to ``path`` (a ``.svg`` file); returns the path."""
        path = os.fspath(path)
        if not path.lower().endswith(".svg"):
            raise ValueError(f"visualize writes SVG: give a file name ending in .svg, not {path!r}")
        with open(path, "w", encoding="utf-8") as f:
            f.write(self.svg)
        return path


def _graph_of(collections: tuple, optimize_graph: bool = False) -> dict:
    """The tasks of ``collections`` (also inside lists, tuples and dicts' values, as dask
    takes them), culled and fused as compute would run them when ``optimize_graph``."""
    graph: dict = {}
    keys: list = []
    found = list(collections)
    while found:
        c = found.pop(0)
        if type(c) in (list, tuple):
            found[:0] = list(c)
            continue
        if type(c) is dict:
            found[:0] = list(c.values())
            continue
        if not hasattr(c, "__xsched_graph__"):
            raise TypeError(f"visualize draws xsched collections (arrays, dataframes, bags, delayed values), "
                            f"not {type(c).__name__}")
        graph.update(c.__xsched_graph__())
        keys.extend(c.__xsched_keys__())
    if optimize_graph:
        from .optimize import optimize

        graph = optimize(graph, keys)
    return graph


def _columns(nodes: list, parents: dict) -> dict:
    """Each node's column: one more than the furthest of its parents (inputs in column 0)."""
    column: dict = {}
    for node in nodes:  # (nodes come in an order where parents precede)
        column[node] = 1 + max((column[p] for p in parents[node]), default=-1)
    return column


#: The directions ``rankdir`` takes, as graphviz names them: where inputs stand.
RANKDIRS = ("LR", "RL", "TB", "BT")
#: graphviz's node and edge attributes drawn here: the SVG element and attribute each sets.
_NODE_ATTRS = {"penwidth": ("rect", "stroke-width"), "color": ("rect", "stroke"), "fillcolor": ("rect", "fill"),
               "fontcolor": ("text", "fill"), "fontsize": ("text", "font-size")}
_EDGE_ATTRS = {"penwidth": ("line", "stroke-width"), "color": ("line", "stroke")}


def _style(attrs: dict | None, known: dict, what: str, defaults: dict) -> dict:
    """Per SVG element (``rect``, ``text``, ``line``), its presentation attributes from
    graphviz ones (``node_attr={"penwidth": "6"}``) over ``defaults``; one this drawing has no
    use for is refused, naming the ones it has."""
    style = {element: dict(values) for element, values in defaults.items()}
    for k, v in (attrs or {}).items():
        if k not in known:
            raise ValueError(f"visualize({what}=...): {k!r} is not drawn here (xsched draws SVG itself, without "
                             f"graphviz); the {what} it draws are {sorted(known)}")
        element, name = known[k]
        style.setdefault(element, {})[name] = str(v)
    return {element: " ".join(f'{k}="{html.escape(v)}"' for k, v in values.items())
            for element, values in style.items()}


def _draw(labels: dict, parents: dict, order: list, rankdir: str = "LR", node_attr: dict | None = None,
          edge_attr: dict | None = None) -> str:
    column = _columns(order, parents)
    rows: dict = {}
    place: dict = {}
    for node in order:
        c = column[node]
        place[node] = (c, rows.get(c, 0))
        rows[c] = rows.get(c, 0) + 1
    across = rankdir in ("TB", "BT")  # (ranks run down the page: a rank is a row of boxes)
    ranks, widest = max(column.values(), default=0) + 1, max(rows.values(), default=1)
    step_rank = (_BOX_H + _GAP_X) if across else (_BOX_W + _GAP_X)
    step_row = (_BOX_W + _GAP_Y) if across else (_BOX_H + _GAP_Y)
    long_rank = ranks * step_rank + _GAP_X
    long_row = widest * step_row + _GAP_Y + _GAP_X  # (room for curves beside the boxes)
    width, height = (long_row, long_rank) if across else (long_rank, long_row)
    flip = rankdir in ("RL", "BT")

    def xy(node: str) -> tuple[int, int]:
        c, r = place[node]
        along = _GAP_X + c * step_rank
        if flip:
            along = long_rank - along - (_BOX_H if across else _BOX_W)
        side = _GAP_Y + r * step_row
        return (side, along) if across else (along, side)

    def ends(p: str, node: str) -> tuple[tuple[int, int], tuple[int, int]]:
        """Where an arrow leaves the box of ``p`` and enters that of ``node``."""
        (x0, y0), (x1, y1) = xy(p), xy(node)
        out, into = (0, 1) if flip else (1, 0)  # (the far side of the parent, the near side of the child)
        if across:
            return (x0 + _BOX_W // 2, y0 + out * _BOX_H), (x1 + _BOX_W // 2, y1 + into * _BOX_H)
        return (x0 + out * _BOX_W, y0 + _BOX_H // 2), (x1 + into * _BOX_W, y1 + _BOX_H // 2)

    edge_style = _style(edge_attr, _EDGE_ATTRS, "edge_attr", {"line": {"stroke": "#666"}})["line"]
    node_style = _style(node_attr, _NODE_ATTRS, "node_attr",
                        {"rect": {"fill": "#dbe9f6", "stroke": "#3b6ea5"}, "text": {}})
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="12">',
             '<defs><marker id="xsched-arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="6" '
             'markerHeight="6" orient="auto"><path d="M0,0 L10,5 L0,10 z" fill="#666"/></marker></defs>']
    for node in order:
        for p in sorted(parents[node]):
            a, b = ends(p, node)
            span = column[node] - column[p]
            if span <= 1:
                parts.append(f'<line x1="{a[0]}" y1="{a[1]}" x2="{b[0]}" y2="{b[1]}" {edge_style} '
                             'marker-end="url(#xsched-arrow)"/>')
                continue
            # (past the boxes of the ranks between: a curve beside them)
            sign = -1 if flip else 1
            if across:
                low = max(a[0], b[0]) + _BOX_W // 2 + _GAP_Y // 2 + 4 * span
                c1, c2 = (low, a[1] + sign * _GAP_X), (low, b[1] - sign * _GAP_X)
            else:
                low = max(a[1], b[1]) + _BOX_H // 2 + _GAP_Y // 2 + 4 * span
                c1, c2 = (a[0] + sign * _GAP_X, low), (b[0] - sign * _GAP_X, low)
            parts.append(f'<path d="M{a[0]},{a[1]} C{c1[0]},{c1[1]} {c2[0]},{c2[1]} {b[0]},{b[1]}" '
                         f'fill="none" {edge_style} marker-end="url(#xsched-arrow)"/>')
    for node in order:
        x, y = xy(node)
        text = labels[node]
        shown = text if len(text) <= 26 else text[:25] + "\u2026"
        parts.append(f'<g><title>{html.escape(text)}</title><rect x="{x}" y="{y}" width="{_BOX_W}" '
                     f'height="{_BOX_H}" rx="6" {node_style["rect"]}/>'
                     f'<text x="{x + _BOX_W // 2}" y="{y + _BOX_H // 2 + 4}" text-anchor="middle" '
                     f'{node_style["text"]}>'
                     f'{html.escape(shown)}</text></g>')
    parts.append("</svg>")
    return "".join(parts)


def _options(rankdir: str, engine: Any, format: Any) -> None:
    """dask's options of ``visualize`` that mean something here, checked; the picture is drawn
    here as SVG whatever ``engine`` names (a notebook written for dask runs unchanged)."""
    if rankdir not in RANKDIRS:
        raise ValueError(f"visualize(rankdir={rankdir!r}): one of {', '.join(RANKDIRS)} (where the inputs stand: "
                         "left, right, top, bottom)")
    if engine not in (None, "graphviz", "cytoscape", "ipycytoscape"):
        raise ValueError(f"visualize(engine={engine!r}): xsched draws the graph itself as SVG; leave engine out")
    if format not in (None, "svg"):
        raise ValueError(f"visualize(format={format!r}): xsched draws SVG only; leave format out or give 'svg'")


def visualize(*collections: Any, filename: str | os.PathLike | None = None, tasks: bool = False,
              rankdir: str = "LR", node_attr: dict | None = None, edge_attr: dict | None = None,
              engine: str | None = None, format: str | None = None, optimize_graph: bool = False) -> GraphPicture:
    """A picture of the task graph of ``collections``: a box per task group with its count of
    tasks (``tasks=True``: a box per task, for graphs of at most ``MAX_TASKS``), an arrow from
    each group to the groups whose tasks read it. It shows itself in a notebook; ``filename``
    (``.svg``) also writes it.

    dask's graphviz options that apply to this drawing work too: ``rankdir`` (``"LR"``,
    inputs on the left, or ``"TB"``, ``"RL"``, ``"BT"``), ``node_attr`` and ``edge_attr``
    (``penwidth``, ``color``; nodes also ``fillcolor``, ``fontcolor``, ``fontsize``).
    ``engine`` and ``format`` are taken for dask's notebooks' sake: it is SVG drawn here.
    Collections may come in lists, tuples or dicts; ``optimize_graph=True`` draws the graph
    culled and fused as it would run.

    >>> import xsched
    >>> total = xsched.delayed(sum)([xsched.delayed(abs)(-i) for i in range(3)])
    >>> xsched.visualize(total, tasks=True).nodes[-1][0].startswith("sum-")
    True
    >>> 'stroke-width="6"' in xsched.visualize(total, rankdir="TB", node_attr={"penwidth": "6"}).svg
    True
    """
    _options(rankdir, engine, format)
    graph = _graph_of(collections, optimize_graph)
    if tasks:
        if len(graph) > MAX_TASKS:
            raise ValueError(f"visualize(tasks=True) draws at most {MAX_TASKS} tasks and this graph has {len(graph)}; "
                             "draw its task groups instead (tasks=False)")
        parents = {k: {d for d in dependencies(t) if d in graph} for k, t in graph.items()}
        labels = {k: k for k in graph}
    else:
        group = {k: key_split(k) for k in graph}
        parents = {g: set() for g in group.values()}
        counts: dict = {}
        for k, t in graph.items():
            counts[group[k]] = counts.get(group[k], 0) + 1
            parents[group[k]].update(group[d] for d in dependencies(t) if d in graph and group[d] != group[k])
        labels = {g: f"{g} ({n})" for g, n in counts.items()}
    order = toposort({}, {node: sorted(parents[node]) for node in sorted(parents)})  # (inputs first)
    picture = GraphPicture(_draw(labels, parents, order, rankdir, node_attr, edge_attr),
                           [(n, 1) if tasks else (n, counts[n]) for n in order],
                           [(p, n) for n in order for p in sorted(parents[n])], grouped=not tasks)
    if filename is not None:
        picture.save(filename)
    return picture


def visualize_method(self: Any, filename: str | os.PathLike | None = None, tasks: bool = False,
                     rankdir: str = "LR", node_attr: dict | None = None, edge_attr: dict | None = None,
                     engine: str | None = None, format: str | None = None,
                     optimize_graph: bool = False) -> GraphPicture:
    """A picture of this collection's task graph (see ``xsched.visualize``): its task groups,
    or with ``tasks=True`` its tasks; ``filename`` (``.svg``) also writes it; ``rankdir``,
    ``node_attr`` and ``edge_attr`` as graphviz's.

    >>> import xsched.bag as xb
    >>> xb.from_sequence(range(6), npartitions=3).map(abs).sum().visualize().nodes[0]
    ('from-sequence', 3)
    """
    return visualize(self, filename=filename, tasks=tasks, rankdir=rankdir, node_attr=node_attr,
                     edge_attr=edge_attr, engine=engine, format=format, optimize_graph=optimize_graph)
