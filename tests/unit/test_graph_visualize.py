"""visualize(): a collection's task graph as an SVG of its task groups (or tasks)."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import numpy as np
import pandas as pd
import pytest

import xsched
import xsched.array as xa
import xsched.bag as xb
import xsched.dataframe as xd
from xsched.graph import visualize as V

SVG = "{http://www.w3.org/2000/svg}"


def _boxes(picture):
    root = ET.fromstring(picture.svg)  # (well-formed XML)
    return [t.text for t in root.iter(f"{SVG}title")], len(list(root.iter(f"{SVG}line"))) + len(
        list(root.iter(f"{SVG}path"))) - 1  # (less the arrowhead's path)


def test_groups_with_their_counts_and_arrows_inputs_first():
    x = xa.from_array(np.ones((8, 8)), chunks=2)
    picture = (x + x.T).sum(axis=0, split_every=2).visualize()
    names = [n for n, _ in picture.nodes]
    assert names[0] == "from-array" and names.index("transpose") < names.index("add") < names.index("sum-chunk")
    assert dict(picture.nodes)["from-array"] == 16 and dict(picture.nodes)["add"] == 16
    titles, lines = _boxes(picture)
    assert titles == [f"{n} ({c})" for n, c in picture.nodes] and lines == len(picture.edges)
    assert ("from-array", "transpose") in picture.edges and ("from-array", "add") in picture.edges
    assert picture._repr_svg_() is picture.svg and repr(picture).startswith("GraphPicture<")


def test_every_collection_draws_and_tasks_one_box_each(tmp_path):
    df = xd.from_pandas(pd.DataFrame({"k": [1, 2, 1], "v": [1.0, 2.0, 3.0]}), npartitions=2)
    assert [n for n, _ in df.groupby("k").v.sum().visualize().nodes][0] == "from-pandas"
    bag = xb.from_sequence(range(6), npartitions=3).map(abs)
    assert bag.visualize().nodes == [("from-sequence", 3), ("map-abs", 3)]
    total = xsched.delayed(sum)([xsched.delayed(abs)(-i) for i in range(3)])
    picture = xsched.visualize(total, tasks=True, filename=tmp_path / "g.svg")
    assert len(picture.nodes) == 4 and len(picture.edges) == 3 and not picture.grouped
    assert (tmp_path / "g.svg").read_text().startswith("<svg")
    both = xsched.visualize(bag, df)
    assert {"from-sequence", "from-pandas"} <= {n for n, _ in both.nodes}


def test_refusals_name_the_way_out():
    x = xa.ones((2000,), chunks=1)
    with pytest.raises(ValueError, match="at most 1000 tasks and this graph has 2000.*tasks=False"):
        x.visualize(tasks=True)
    with pytest.raises(ValueError, match="ending in .svg"):
        x.visualize(filename="graph.png")
    with pytest.raises(TypeError, match="not int"):
        xsched.visualize([1, 2])
    assert V.MAX_TASKS == 1000


def _chain():
    a = xsched.delayed(abs, name="a")(-1)
    b = xsched.delayed(abs, name="b")(a)
    return xsched.delayed(max, name="c")(a, b)  # (a -> c skips a rank: a curve)


def _places(picture):
    root = ET.fromstring(picture.svg)
    return {g.find(f"{SVG}title").text: (float(g.find(f"{SVG}rect").get("x")), float(g.find(f"{SVG}rect").get("y")))
            for g in root.iter(f"{SVG}g")}, (float(root.get("width")), float(root.get("height")))


def test_rankdir_puts_the_inputs_where_graphviz_would():
    """dask's notebooks pass graphviz's rankdir; the drawing here follows it."""
    where = {rd: _places(_chain().visualize(rankdir=rd)) for rd in V.RANKDIRS}
    (lr, (w, h)), (tb, (w2, h2)) = where["LR"], where["TB"]
    assert lr["a (1)"][0] < lr["b (1)"][0] < lr["c (1)"][0] and len({y for _, y in lr.values()}) == 1
    assert tb["a (1)"][1] < tb["b (1)"][1] < tb["c (1)"][1] and len({x for x, _ in tb.values()}) == 1
    assert w > h and h2 > w2
    rl, bt = where["RL"][0], where["BT"][0]
    assert rl["a (1)"][0] > rl["b (1)"][0] > rl["c (1)"][0] and bt["a (1)"][1] > bt["b (1)"][1] > bt["c (1)"][1]
    for places, (width, height) in where.values():  # (every box inside the picture)
        assert all(0 <= x <= width - V._BOX_W and 0 <= y <= height - V._BOX_H for x, y in places.values())
    with pytest.raises(ValueError, match="rankdir='UP'.*LR, RL, TB, BT"):
        _chain().visualize(rankdir="UP")


def test_graphviz_attributes_style_the_boxes_and_arrows_and_others_are_named():
    svg = _chain().visualize(node_attr={"penwidth": "6", "fillcolor": "#ffe"}, edge_attr={"color": "red"}).svg
    root = ET.fromstring(svg)
    rects = list(root.iter(f"{SVG}rect"))
    assert rects and all(r.get("stroke-width") == "6" and r.get("fill") == "#ffe" for r in rects)
    lines = list(root.iter(f"{SVG}line")) + [p for p in root.iter(f"{SVG}path") if p.get("fill") == "none"]
    assert len(lines) == 3 and all(x.get("stroke") == "red" for x in lines)
    texts = list(ET.fromstring(_chain().visualize(node_attr={"fontcolor": "red", "fontsize": "20"}).svg)
                 .iter(f"{SVG}text"))  # (the label's colour and size are the text's, not the box's)
    assert texts and all(t.get("fill") == "red" and t.get("font-size") == "20" for t in texts)
    with pytest.raises(ValueError, match=r"node_attr=...\): 'shape' is not drawn here.*\['color', 'fillcolor'"):
        _chain().visualize(node_attr={"shape": "box"})
    assert _chain().visualize(engine="cytoscape", format="svg").nodes == _chain().visualize().nodes
    with pytest.raises(ValueError, match="engine='bokeh'.*leave engine out"):
        _chain().visualize(engine="bokeh")
    with pytest.raises(ValueError, match="format='png'.*SVG only"):
        xsched.visualize(_chain(), format="png")


def test_collections_in_lists_and_dicts_and_the_optimized_graph():
    import numpy as np

    import xsched.array as xa

    x = xa.from_array(np.arange(6), chunks=3)
    total = xsched.delayed(sum)([1, 2])
    groups = {name for name, _ in xsched.visualize([x + 1, {"t": total}]).nodes}
    assert groups == {"from-array", "add", "sum"}, groups
    assert len(xsched.visualize(x + 1, tasks=True, optimize_graph=True).nodes) < \
        len(xsched.visualize(x + 1, tasks=True).nodes)

