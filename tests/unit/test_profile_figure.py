"""The profile as a flame graph (xsched/dashboard/svg.py: profile_svg; figures.py:
ProfileFigure): boxes nested under their callers with widths by samples, colours by task
prefix, thin boxes left out but counted, user strings escaped, the page written offline."""

from __future__ import annotations

import os

import pytest

from tests.support.report_page import Page
from xsched.dashboard import svg
from xsched.dashboard.figures import ProfileFigure, profile_figure
from xsched.profiling import StackTree

EVIL = "f<script>alert('boom')</script>"


def boxes(text: str) -> list[dict]:
    """Each drawn box: x, width, y and its tooltip's first words."""
    page = Page(text)
    rects = [attrs for tag, attrs in page.elements if tag == "rect"]
    tips = [t for t in page.texts if " samples (" in t]
    assert len(rects) == len(tips)
    return [{"x": float(r["x"]), "w": float(r["width"]) + 1, "y": float(r["y"]), "fill": r["fill"], "tip": t}
            for r, t in zip(rects, tips)]


def tree_of(*stacks) -> list:
    tree = StackTree()
    for prefix, functions, count in stacks:
        tree.add(prefix, [(f, f"/src/{f}.py", 1) for f in functions], count)
    return tree.rows()


def test_boxes_nest_under_their_callers_with_widths_by_samples():
    rows = tree_of(("load", ["read", "inflate"], 6), ("load", ["read"], 2), ("load", ["parse"], 4),
                   ("sum", ["add"], 4))
    text = svg.profile_svg(rows, width=1016)  # a plot 1000 px wide: 62.5 px a sample
    page = Page(text)
    attrs = next(a for tag, a in page.elements if a.get("id") == "xsched-profile")
    assert (attrs["data-sample-count"], attrs["data-node-count"], attrs["data-box-count"],
            attrs["data-prefix-count"]) == ("16", "6", "6", "2")
    by_name = {b["tip"].split(":")[0].split(" in ")[0].removesuffix(" tasks"): b for b in boxes(text)}
    assert by_name["load"]["w"] == pytest.approx(750) and by_name["sum"]["w"] == pytest.approx(250)
    assert by_name["read"]["w"] == pytest.approx(500) and by_name["parse"]["w"] == pytest.approx(250)
    assert by_name["inflate"]["w"] == pytest.approx(375)
    # a callee starts within its caller and rows go down by depth
    for child, parent in (("read", "load"), ("parse", "load"), ("inflate", "read"), ("add", "sum")):
        c, p = by_name[child], by_name[parent]
        assert p["x"] <= c["x"] and c["x"] + c["w"] <= p["x"] + p["w"] + 1e-6 and c["y"] > p["y"]
    assert by_name["read"]["x"] + by_name["read"]["w"] <= by_name["parse"]["x"] + 1e-6  # siblings side by side
    # a prefix's calls take its colour; the tooltips say samples, share and own samples
    assert by_name["inflate"]["fill"] == by_name["load"]["fill"] != by_name["sum"]["fill"]
    assert by_name["read"]["tip"] == "read in /src/read.py: 8 samples (50.0 %), 2 in it"


def test_thin_boxes_are_left_out_but_counted():
    rows = tree_of(("load", ["read"], 999), ("load", ["rare"], 1))
    text = svg.profile_svg(rows, width=216, min_width=0.5)  # 0.2 px a sample
    attrs = next(a for tag, a in Page(text).elements if a.get("id") == "xsched-profile")
    assert (attrs["data-node-count"], attrs["data-box-count"]) == ("3", "2")


def test_no_samples_and_user_strings():
    attrs = next(a for tag, a in Page(svg.profile_svg([])).elements if a.get("id") == "xsched-profile")
    assert attrs["data-sample-count"] == "0"
    assert any("no samples" in t for t in Page(svg.profile_svg([])).texts)
    text = svg.profile_svg([[0, EVIL, "", 2, 0], [1, EVIL, f"/x/{EVIL}.py", 2, 2]])
    page = Page(text)
    assert "<script" not in text and not [e for e in page.elements if e[0] == "script"]
    assert any(EVIL in t for t in page.texts)


def test_the_figure_shows_in_a_notebook_and_saves_a_page(tmp_path):
    rows = tree_of(("load", ["read"], 3))
    fig = profile_figure(rows, tmp_path / "p.html")
    assert isinstance(fig, ProfileFigure) and repr(fig) == "ProfileFigure<3 samples of 1 kind of task>"
    assert 'class="xsched-profile"' in fig._repr_html_() and 'id="xsched-profile"' in fig._repr_html_()
    page = Page((tmp_path / "p.html").read_text())
    assert not [e for e in page.elements if e[0] == "script"]
    assert any("xsched profile: 3 samples" in t for t in page.texts)
    assert os.path.samefile(fig.save(tmp_path / "again.html"), tmp_path / "again.html")
    with pytest.raises(FileNotFoundError, match="does not exist"):
        fig.save(tmp_path / "missing" / "p.html")
    with pytest.raises(IsADirectoryError, match="profile.html"):
        fig.save(tmp_path)


def test_the_performance_report_page_has_the_profile_when_given():
    from xsched.dashboard.report import report_html

    runs = [{"key": "load-1", "worker": "tcp://h:1", "start": 1.0, "stop": 1.5, "status": "memory", "nbytes": 8}]
    rows = tree_of(("load", ["read"], 7))
    page = Page(report_html(runs, start=1.0, stop=2.0, profile=rows))
    assert page.by_id("xsched-profile")["data-sample-count"] == "7"
    assert any("Where the tasks spent their time" in t for t in page.texts)
    assert 'id="xsched-profile"' not in report_html(runs, start=1.0, stop=2.0)  # (profile=False: no section)
    empty = Page(report_html(runs, start=1.0, stop=2.0, profile=[]))
    assert empty.by_id("xsched-profile")["data-sample-count"] == "0"
