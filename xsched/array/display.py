"""The notebook view of an array (``Array._repr_html_``): a table of its size and its
blocks' beside an SVG picture of the block grid; pure functions of the chunks and the
dtype, so showing an array computes nothing.

The table gives, for the whole array and for one (the largest) block: the shape, the
bytes, the number of blocks (and the grid) and the dtype; then the tasks of the graph.
The picture draws 1-d arrays as a bar, 2-d as a rectangle and 3-d as a box (the first
axis going back), each axis cut at its block boundaries, with its length written along
it. Axes are scaled to the longest (kept visible however short); an axis of more than
``MAX_LINES`` blocks is shaded instead of cut line by line. Like the dashboard's
figures, the SVG has no script and no external reference, and carries what it drew as
``data-`` attributes (``data-ndim``, ``data-lines``, ``data-dense-axes``).

>>> html = chunks_html(((2, 2), (3,)), "float64", name="x-1", tasks=2)
>>> "<svg" in html and "(4, 3)" in html and "2 chunks" in html
True
"""

from __future__ import annotations

import html
import math
from functools import reduce
from operator import mul
from typing import Any, Sequence

import numpy as np

__all__ = ["chunks_html", "grid_svg", "format_bytes", "MAX_LINES"]

#: An axis with more blocks than this is drawn shaded, not line by line.
MAX_LINES = 100
#: The longest axis, in pixels.
SIZE = 120
#: The shortest an axis is drawn, in pixels.
MIN_SIZE = 12


def format_bytes(n: float) -> str:
    """Bytes as people read them (powers of 1000).

    >>> format_bytes(2000), format_bytes(12), format_bytes(3.5e9), format_bytes(float("nan"))
    ('2.00 kB', '12 B', '3.50 GB', 'unknown')
    """
    if n != n:  # blocks of unknown length (a boolean mask)
        return "unknown"
    for unit in ("B", "kB", "MB", "GB", "TB", "PB"):
        if n < 1000 or unit == "PB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.2f} {unit}"
        n /= 1000
    return str(n)  # pragma: no cover


def _esc(obj: Any) -> str:
    return html.escape(str(obj))


def _cuts(chunks: Sequence[int], length: float) -> list[float]:
    """Pixel positions of the block boundaries inside an axis drawn ``length`` long."""
    total = sum(chunks) or 1
    out, at = [0.0], 0
    for c in chunks:
        at += c
        out.append(length * at / total)
    return out


def _lengths(shape: Sequence[int]) -> list[float]:
    longest = max(max(shape), 1)
    return [max(MIN_SIZE, SIZE * n / longest) for n in shape]


def grid_svg(chunks: Sequence[Sequence[int]]) -> str:
    """An SVG picture of the block grid of a 1-, 2- or 3-d array ("" for other dims).

    >>> svg = grid_svg(((2, 2, 1), (4,)))
    >>> 'data-ndim="2"' in svg and 'data-lines="6"' in svg  # 4 row lines, 2 column lines
    True
    >>> grid_svg(((1,),) * 4)
    ''
    """
    ndim = len(chunks)
    if ndim not in (1, 2, 3):
        return ""
    shape = [sum(c) for c in chunks]
    dense = [a for a, c in enumerate(chunks) if len(c) > MAX_LINES]
    lines: list[str] = []
    count = 0

    def cut(x1: float, y1: float, x2: float, y2: float, edge: bool = False) -> None:
        nonlocal count
        width = 1.5 if edge else 0.8
        lines.append(f'<line x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}" '
                     f'stroke-width="{width}"/>')
        count += 1

    def face(points: list[tuple[float, float]], shaded: bool) -> None:
        pts = " ".join(f"{x:.1f},{y:.1f}" for x, y in points)
        lines.append(f'<polygon points="{pts}" fill="#8db3e2" fill-opacity='
                     f'"{0.9 if shaded else 0.45}" stroke="none"/>')

    labels: list[str] = []

    def label(x: float, y: float, text: Any, rotate: bool = False) -> None:
        turn = f' transform="rotate(-90 {x:.1f} {y:.1f})"' if rotate else ""
        labels.append(f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="middle"{turn}>'
                      f'{_esc(text)}</text>')

    pad = 20.0
    if ndim == 1:
        (w,) = _lengths(shape)
        h = MIN_SIZE * 2
        face([(pad, pad), (pad + w, pad), (pad + w, pad + h), (pad, pad + h)], 0 in dense)
        xs = _cuts(chunks[0], w) if 0 not in dense else [0.0, w]
        for i, x in enumerate(xs):
            cut(pad + x, pad, pad + x, pad + h, edge=i in (0, len(xs) - 1))
        cut(pad, pad, pad + w, pad, True)
        cut(pad, pad + h, pad + w, pad + h, True)
        label(pad + w / 2, pad + h + 16, shape[0])
        width, height = w + 2 * pad, h + 2 * pad + 6
    else:
        if ndim == 2:
            (h, w), d = _lengths(shape), 0.0
            rows, cols, depth = chunks[0], chunks[1], ()
        else:
            d, h, w = _lengths(shape)
            d = max(0.5 * d, 10.0)  # the depth drawn obliquely, shorter
            depth, rows, cols = chunks[0], chunks[1], chunks[2]
        ox, oy = pad, pad + d  # the front face's top-left corner
        r_axis, c_axis = ndim - 2, ndim - 1
        # front face
        face([(ox, oy), (ox + w, oy), (ox + w, oy + h), (ox, oy + h)],
             r_axis in dense or c_axis in dense)
        ys = _cuts(rows, h) if r_axis not in dense else [0.0, h]
        xs = _cuts(cols, w) if c_axis not in dense else [0.0, w]
        for i, y in enumerate(ys):
            cut(ox, oy + y, ox + w, oy + y, edge=i in (0, len(ys) - 1))
        for i, x in enumerate(xs):
            cut(ox + x, oy, ox + x, oy + h, edge=i in (0, len(xs) - 1))
        if ndim == 3:
            ds = _cuts(depth, d) if 0 not in dense else [0.0, d]
            shaded = bool(dense)
            # top face (columns x depth) and right face (rows x depth), going back-right
            face([(ox, oy), (ox + d, oy - d), (ox + w + d, oy - d), (ox + w, oy)], shaded)
            face([(ox + w, oy), (ox + w + d, oy - d), (ox + w + d, oy + h - d),
                  (ox + w, oy + h)], shaded)
            for i, z in enumerate(ds):
                edge = i in (0, len(ds) - 1)
                cut(ox + z, oy - z, ox + w + z, oy - z, edge)
                cut(ox + w + z, oy - z, ox + w + z, oy + h - z, edge)
            for x in xs:
                cut(ox + x, oy, ox + x + d, oy - d, x in (0.0, w))
            for y in ys:
                cut(ox + w, oy + y, ox + w + d, oy + y - d, y in (0.0, h))
            label(ox + d / 2 - 8, oy - d / 2 - 4, shape[0])
        label(ox + w / 2, oy + h + 16, shape[c_axis])
        label(ox + w + d + 12, oy + h / 2 - d, shape[r_axis], rotate=True)
        width, height = w + d + 2 * pad + 8, h + d + 2 * pad + 6
    dense_attr = ",".join(str(a) for a in dense)
    return (f'<svg width="{width:.0f}" height="{height:.0f}" viewBox="0 0 {width:.0f} '
            f'{height:.0f}" class="xsched-array-chunks" data-ndim="{ndim}" '
            f'data-lines="{count}" data-dense-axes="{dense_attr}" role="img">'
            f'<g stroke="currentColor" opacity="0.85">{"".join(lines)}</g>'
            f'<g font-size="11" fill="currentColor">{"".join(labels)}</g></svg>')


def chunks_html(chunks: Sequence[Sequence[int]], dtype: Any, *, name: str = "",
                tasks: int | None = None) -> str:
    """The table of the whole array and one block beside the picture of the grid.

    >>> page = chunks_html(((10, 10), (5,), (5,)), "float32", name="x-1")
    >>> all(s in page for s in ("(20, 5, 5)", "(10, 5, 5)", "2.00 kB", "1.00 kB", "(2, 1, 1)"))
    True
    """
    dtype = np.dtype(dtype)
    shape = tuple(sum(c) for c in chunks)
    chunk_shape = tuple((max(c) if all(x == x for x in c) else math.nan) if c else 0 for c in chunks)
    nblocks = reduce(mul, (len(c) for c in chunks), 1)
    grid = tuple(len(c) for c in chunks)
    size = reduce(mul, shape, 1)
    chunk_size = reduce(mul, chunk_shape, 1)
    rows = [
        ("Shape", shape, chunk_shape),
        ("Bytes", format_bytes(size * dtype.itemsize), format_bytes(chunk_size * dtype.itemsize)),
        ("Chunks", f"{nblocks} chunks", f"grid {grid}"),
        ("Type", dtype, "numpy.ndarray"),
    ]
    if tasks is not None:
        rows.append(("Graph", f"{tasks} tasks", ""))
    body = "".join(f"<tr><th style=\"text-align:left\">{h}</th><td>{_esc(a)}</td>"
                   f"<td>{_esc(b)}</td></tr>" for h, a, b in rows)
    table = ("<table><thead><tr><th></th><th>Array</th><th>Chunk</th></tr></thead>"
             f"<tbody>{body}</tbody></table>")
    title = f"<p><code>{_esc(name)}</code></p>" if name else ""
    svg = grid_svg(chunks) if all(x == x for c in chunks for x in c) else ""  # (unknown lengths: no picture)
    picture = f'<div style="margin-left:1.5em">{svg}</div>' if svg else ""
    return (f'<div class="xsched-array" style="display:flex;align-items:center">'
            f"<div>{table}{title}</div>{picture}</div>")
