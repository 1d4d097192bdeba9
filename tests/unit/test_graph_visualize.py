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
    with pytest.raises(TypeError, match="not list"):
        xsched.visualize([1, 2])
    assert V.MAX_TASKS == 1000
