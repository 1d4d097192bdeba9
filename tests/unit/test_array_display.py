"""The notebook view of an array: the table of the array and one block, and the SVG
picture of the block grid, drawn from the chunks alone (nothing is computed)."""

from __future__ import annotations

import re

import numpy as np
import pytest

import xsched.array as xa
from xsched.array import display


def attrs(svg):
    return dict(re.findall(r'data-([a-z-]+)="([^"]*)"', svg))


def test_table_gives_the_array_and_one_block_and_computes_nothing(monkeypatch):
    x = xa.from_array(np.zeros((20, 5, 5), np.float32), chunks=(10, -1, -1))
    monkeypatch.setattr(xa.Array, "compute", lambda *a, **k: pytest.fail("computed"))
    page = x._repr_html_()
    for part in ("(20, 5, 5)", "(10, 5, 5)", "float32", "2 chunks", "grid (2, 1, 1)",
                 "2.00 kB", "1.00 kB", "2 tasks", x.name, "<svg"):
        assert part in page, part


@pytest.mark.parametrize("chunks,lines", [
    (((3, 3, 1),), 4 + 2),                  # 4 cuts across the bar, its 2 long edges
    (((2, 2), (1, 1, 1)), 3 + 4),           # 3 row lines, 4 column lines
    (((1, 1), (2, 2), (3,)), None),
])
def test_the_picture_cuts_each_axis_at_its_block_boundaries(chunks, lines):
    svg = display.grid_svg(chunks)
    got = attrs(svg)
    assert got["ndim"] == str(len(chunks)) and got["dense-axes"] == ""
    if lines is not None:
        assert int(got["lines"]) == lines
    for n in (sum(c) for c in chunks):
        assert f">{n}</text>" in svg  # each axis's length is written along it
    assert "<script" not in svg and "href" not in svg


def test_uneven_blocks_sit_where_they_end():
    svg = display.grid_svg(((1, 3),))  # a block of 1 then 3: the cut a quarter along
    xs = sorted({float(x) for x in re.findall(r'x1="([0-9.]+)"', svg)})
    left, cut, right = xs[0], xs[1], xs[-1]
    assert cut - left == pytest.approx((right - left) / 4, abs=0.2)


def test_many_blocks_are_shaded_and_other_dims_have_no_picture():
    svg = display.grid_svg(((1,) * 500, (10,)))
    assert attrs(svg)["dense-axes"] == "0" and int(attrs(svg)["lines"]) == 4
    assert display.grid_svg(()) == "" and display.grid_svg(((1,),) * 4) == ""
    page = xa.ones((2, 2, 2, 2), chunks=1)._repr_html_()
    assert "<svg" not in page and "16 chunks" in page


def test_names_are_escaped():
    page = display.chunks_html(((2,),), "f8", name="<b>x</b>-1")
    assert "<b>x</b>" not in page and "&lt;b&gt;" in page
