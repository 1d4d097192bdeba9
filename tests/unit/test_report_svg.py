"""The performance report's figures and page from plain data (xsched/dashboard/): counts in
data- attributes, natural worker order, escaping, the bar cap, empty inputs; the page loads
nothing from elsewhere; the source of a ``with`` block; the errors at the call."""

from __future__ import annotations

import asyncio
import os

import pytest

from tests.support.report_page import Page
from xsched.dashboard import svg
from xsched.dashboard.report import PerformanceReport, performance_report, report_html, with_block

EVIL = "x<script>alert('boom')</script>"


def run(key, worker="tcp://127.0.0.1:1", start=0.0, stop=1.0, status="memory", nbytes=8, group=None):
    r = {"key": key, "worker": worker, "start": start, "stop": stop, "status": status, "nbytes": nbytes}
    if group is not None:
        r["group"] = group
    return r


def figure(text: str, ident: str) -> tuple[dict, Page]:
    page = Page(text)
    return page.by_id(ident), page


# ---------------------------------------------------------------------- the task stream
def test_the_task_stream_counts_bars_workers_and_groups():
    runs = [run(f"inc-{i}", f"tcp://127.0.0.1:{1 + i % 3}", i, i + 0.5) for i in range(9)]
    runs += [run("sum-1", "tcp://127.0.0.1:1", 9, 10)]
    attrs, page = figure(svg.task_stream_svg(runs, ["tcp://127.0.0.1:7"]), "xsched-report-task-stream")
    assert (attrs["data-task-count"], attrs["data-run-count"]) == ("10", "10")
    assert attrs["data-worker-count"] == "4"  # three ran tasks, one (given) ran none
    assert attrs["data-group-count"] == "2"
    bars = [r for r in page.tags("rect") if r.get("fill") not in (None, "none") and "class" not in r]
    assert len(bars) == 10 + 2  # the bars, and the legend's two swatches
    hovers = [t for t in page.texts if t.startswith("sum-1\n")]
    assert hovers == ["sum-1\ngroup: sum\nworker: tcp://127.0.0.1:1\nduration: 1.00 s"]


def test_workers_are_in_natural_order():
    workers = ["tcp://10.0.0.2:10", "tcp://10.0.0.2:2", "tcp://10.0.0.10:1", "tcp://10.0.0.2:9"]
    runs = [run(f"a-{i}", w) for i, w in enumerate(workers)]
    _, page = figure(svg.task_stream_svg(runs), "xsched-report-task-stream")
    labels = list(dict.fromkeys(t for t in page.texts if t.startswith("tcp://") and "\n" not in t))
    assert labels == ["tcp://10.0.0.2:2", "tcp://10.0.0.2:9", "tcp://10.0.0.2:10", "tcp://10.0.0.10:1"]
    assert sorted(["w10", "w2", "w1"], key=svg.natural_key) == ["w1", "w2", "w10"]


def test_failed_runs_are_marked_and_named():
    runs = [run("ok-1"), run("bad-1", status="error", nbytes=None)]
    _, page = figure(svg.task_stream_svg(runs), "xsched-report-task-stream")
    erred = [r for r in page.tags("rect") if r.get("class") == "erred"]
    assert len(erred) == 2  # the bar and its legend entry
    assert any(t.startswith("bad-1\n") and t.endswith("\nerred") for t in page.texts)


def test_user_strings_are_escaped():
    runs = [run(f"{EVIL}-1", worker="tcp://<b>:1", group=EVIL)]
    for text in (svg.task_stream_svg(runs), svg.group_time_svg(runs), svg.group_bytes_svg(runs),
                 svg.memory_svg({"tcp://<b>:1": {"name": EVIL, "samples": [[0, 1, 1, 0]]}}),
                 report_html(runs, start=0, stop=1, code=f"print({EVIL!r})")):
        assert "<script" not in text and "<b>" not in text
        page = Page(text)
        assert not page.tags("script") and not page.tags("b")
        assert any(EVIL in t for t in page.texts)  # shown, as text


def test_the_bar_cap_keeps_failures_then_the_longest():
    runs = [run(f"inc-{i}", start=i, stop=i + 1 + i / 100) for i in range(50)]
    runs[3]["status"] = "error"
    text = svg.task_stream_svg(runs, limit=10)
    attrs, page = figure(text, "xsched-report-task-stream")
    assert (attrs["data-task-count"], attrs["data-run-count"]) == ("10", "50")
    drawn = {t.split("\n")[0] for t in page.texts if t.startswith("inc-") and "\n" in t}
    assert drawn == {"inc-3"} | {f"inc-{i}" for i in range(41, 50)}
    assert any("10 of 50 task runs drawn: the failed ones, then the longest" in t for t in page.texts)
    attrs, _ = figure(svg.task_stream_svg(runs, limit=0), "xsched-report-task-stream")
    assert attrs["data-task-count"] == "0"
    runs[3]["status"] = "memory"  # none failed (as transfers and disk reads never do): the caption says only what is true
    _, page = figure(svg.task_stream_svg(runs, limit=10), "xsched-report-task-stream")
    assert any(t.endswith("10 of 50 task runs drawn: the longest") for t in page.texts)
    assert not any("failed" in t for t in page.texts)


def test_empty_inputs_give_readable_figures():
    for text, ident, message in ((svg.task_stream_svg([]), "xsched-report-task-stream", "no tasks ran"),
                                 (svg.group_time_svg([]), "xsched-report-groups", "no tasks ran"),
                                 (svg.group_bytes_svg([]), "xsched-report-group-bytes", "no tasks ran"),
                                 (svg.memory_svg({}), "xsched-report-memory", "no memory samples")):
        attrs, page = figure(text, ident)
        assert any(message in t for t in page.texts), ident
        assert all(attrs[k] == "0" for k in attrs if k.startswith("data-")), attrs
    attrs, _ = figure(svg.task_stream_svg([], ["tcp://h:1", "tcp://h:2"]), "xsched-report-task-stream")
    assert (attrs["data-task-count"], attrs["data-worker-count"]) == ("0", "2")


# ---------------------------------------------------------------------- groups and memory
def test_group_charts_sort_and_count():
    runs = ([run(f"load-{i}", stop=1, nbytes=100) for i in range(3)] + [run("sum-1", stop=10, nbytes=8)]
            + [run("bad-1", stop=0.5, status="error", nbytes=None)])
    attrs, page = figure(svg.group_time_svg(runs), "xsched-report-groups")
    assert (attrs["data-group-count"], attrs["data-bar-count"]) == ("3", "3")
    names = list(dict.fromkeys(t for t in page.texts if t in ("load", "sum", "bad")))  # (label, title: once)
    assert names == ["sum", "load", "bad"]
    assert any(t.startswith("3.00 s: 3 tasks, mean 1.00 s") for t in page.texts)
    attrs, page = figure(svg.group_bytes_svg(runs), "xsched-report-group-bytes")
    assert list(dict.fromkeys(t for t in page.texts if t in ("load", "sum", "bad"))) == ["load", "sum", "bad"]
    attrs, _ = figure(svg.group_time_svg([run(f"g{i}-1") for i in range(60)], limit=50), "xsched-report-groups")
    assert (attrs["data-group-count"], attrs["data-bar-count"]) == ("60", "50")
    stats = svg.group_stats(runs)
    assert [(s["group"], s["count"], s["erred"], s["nbytes"]) for s in stats] == [
        ("sum", 1, 0, 8), ("load", 3, 0, 300), ("bad", 1, 1, 0)]


def test_the_memory_chart_has_a_line_per_worker_and_the_limit():
    history = {f"tcp://h:{p}": {"name": str(p), "samples": [[t, 100 + t, 10 * t, 0] for t in range(5)]}
               for p in (10, 2)}
    text = svg.memory_svg(history, {"tcp://h:10": 200, "tcp://h:2": 200})
    attrs, page = figure(text, "xsched-report-memory")
    assert (attrs["data-worker-count"], attrs["data-sample-count"]) == ("2", "10")
    lines = page.tags("polyline")
    assert [(p["data-worker"], p["class"]) for p in lines] == [
        ("tcp://h:2", "rss"), ("tcp://h:2", "managed"), ("tcp://h:10", "rss"), ("tcp://h:10", "managed")]
    assert all(len(p["points"].split()) == 5 for p in lines)
    assert len([x for x in page.tags("line") if x.get("class") == "limit"]) == 1
    far = svg.memory_svg(history, {"tcp://h:2": 10**9})  # far above the lines: named, not drawn
    assert 'class="limit"' not in far and "(above the scale)" in far
    thin = svg.memory_svg({"w": {"samples": [[t, t, t, 0] for t in range(5000)]}}, max_points=100)
    assert len(Page(thin).tags("polyline")[0]["points"].split()) <= 101


# ---------------------------------------------------------------------- the page
def test_the_page_is_self_contained_and_counts():
    runs = [run(f"inc-{i}", f"tcp://127.0.0.1:{1 + i % 2}", i, i + 1) for i in range(6)]
    runs.append(run("fail-1", status="error", nbytes=None))
    info = {"address": "tcp://127.0.0.1:8786",
            "workers": {"tcp://127.0.0.1:1": {"nthreads": 2}, "tcp://127.0.0.1:2": {"nthreads": 2}}}
    versions = {"client": {"xsched": "9.9", "python": "3.11.7"}, "scheduler": {"xsched": "9.9", "python": "3.11.7"},
                "workers": {"tcp://127.0.0.1:1": {"xsched": "9.9", "python": "3.11.7"},
                            "tcp://127.0.0.1:2": {"error": "TimeoutError: no answer"}}}
    history = {"tcp://127.0.0.1:1": {"name": "0", "samples": [[-5, 1, 1, 0], [-1, 2, 2, 0], [3, 3, 3, 0], [99, 4, 4, 0]]}}
    text = report_html(runs, start=0.0, stop=8.0, history=history, limits={}, info=info, versions=versions,
                       code="with report:\n    work()")
    page = Page(text)
    assert text.startswith("<!DOCTYPE html>") and page.external_references() == []
    assert "http://" not in text and "https://" not in text
    assert "prefers-color-scheme: dark" in "".join(page.styles)
    summary = page.by_id("xsched-report-summary")
    assert (summary["data-task-count"], summary["data-erred-count"], summary["data-worker-count"],
            summary["data-thread-count"], summary["data-nbytes"]) == ("7", "1", "2", "4", "48")
    assert page.by_id("xsched-report-task-stream")["data-task-count"] == "7"
    assert page.by_id("xsched-report-groups")["data-group-count"] == "2"
    # the memory samples of the block, with the last one before it
    assert page.by_id("xsched-report-memory")["data-sample-count"] == "2"
    assert page.text_of["xsched-report-code"] == "with report:\n    work()"
    assert "fail-1" in page.text_of["xsched-report-erred"]
    assert "xsched 9.9, python 3.11.7" in page.text_of["xsched-report-summary"]
    assert "did not answer" in page.text_of["xsched-report-summary"]


def test_the_page_says_when_code_or_tasks_are_missing():
    page = Page(report_html([], start=0.0, stop=0.0, code=None, code_origin="no source for <stdin>, line 1"))
    assert "not available" in page.text_of["xsched-report-code"]
    assert "<stdin>" in page.text_of["xsched-report-code"]
    assert page.by_id("xsched-report-task-stream")["data-task-count"] == "0"
    assert any("no tasks ran" in t for t in page.texts)
    capped = Page(report_html([run(f"a-{i}") for i in range(5)], start=0, stop=1, limit=3))
    assert any("3 of 5 task runs drawn" in t for t in capped.texts)


# ---------------------------------------------------------------------- the code of the block
SOURCE = '''\
import xsched

def main(client):
    client.submit(abs, -1)
    with xsched.performance_report(
            filename="r.html") as report:
        with open("x") as f:
            f.read()
        client.gather([])
    done()

async def amain():
    async with xsched.performance_report(client=ac):
        await ac.submit(abs, 1)
'''


def test_with_block_finds_the_statement_by_its_header():
    block = with_block(SOURCE, 5)
    assert block.splitlines()[0] == 'with xsched.performance_report('
    assert block.splitlines()[-1] == "    client.gather([])" and "done()" not in block
    assert with_block(SOURCE, 6) == block  # a header over two lines
    assert with_block(SOURCE, 7) == 'with open("x") as f:\n    f.read()'  # the innermost header
    assert with_block(SOURCE, 9) == block  # no header there: the innermost statement around it
    assert with_block(SOURCE, 13) == "async with xsched.performance_report(client=ac):\n    await ac.submit(abs, 1)"
    assert with_block(SOURCE, 4) is None and with_block("def (:", 1) is None


class FakeClient:
    """What a report asks of a client, answered from memory: the task stream's run numbers
    (as the scheduler's diagnostics extension numbers them), memory history, info, versions."""

    def __init__(self, asynchronous: bool):
        self.asynchronous = asynchronous
        self.rows = [["before-1", "tcp://h:1", 0.0, 1.0, "memory", 8]]  # ran before the block
        self._timeout = 5
        self._conn = self

    async def _task_stream(self, start=None, stop=None, count=None, since=None):
        if since is None:
            return self.rows[-count:] if count else [], len(self.rows)
        return self.rows[since:], len(self.rows)

    async def _activity(self, since=None):
        """Heard of after the block's cursor was noted: a transfer that ended in the block, and
        a spill that ended before it began (a heartbeat brings both)."""
        import time

        now = time.time()
        moved = [{"key": "transfer from tcp://h:2", "worker": "tcp://h:1", "start": now - 0.25, "stop": now,
                  "status": "transfer", "nbytes": 4096, "group": "transfer"},
                 {"key": "disk-write", "worker": "tcp://h:1", "start": 1.0, "stop": 1.5,
                  "status": "disk-write", "nbytes": 99, "group": "disk-write"}]
        return ([] if since is None else moved), 1

    async def _profile(self, duration, interval, workers):  # (the report's sampling rounds)
        await asyncio.sleep(duration)
        return {"samples": 2, "counts": [], "tree": [[0, "inc", "", 2, 2]]}

    async def request(self, msg, timeout=None):  # (client._conn.request: the memory history)
        return {"history": {"tcp://h:1": {"name": "0", "samples": [[0.0, 10, 1, 0]]}}}, []

    async def _scheduler_info(self):
        return {"address": "tcp://h:0", "workers": {"tcp://h:1": {"nthreads": 3, "memory_limit": 100}}}

    async def _get_versions(self):
        raise OSError("a worker is gone")

    def _sync(self, coro):  # (as a Client's: on the one background loop, where tasks it starts go on)
        from xsched.client import loop

        return loop.sync(coro)


def test_a_block_on_a_synchronous_client_writes_its_runs_and_code(tmp_path):
    client = FakeClient(asynchronous=False)
    with performance_report(tmp_path / "r.html", client=client) as report:
        client.rows.append(["inc-1", "tcp://h:1", 2.0, 2.5, "memory", 28])
        client.rows.append(["inc-2", "tcp://h:1", 2.5, 3.0, "error", None])
    assert [r["key"] for r in report.runs] == ["inc-1", "inc-2"]  # not the run before the block
    page = Page((tmp_path / "r.html").read_text())
    assert page.by_id("xsched-report-task-stream")["data-task-count"] == "2"
    assert page.by_id("xsched-report-summary")["data-thread-count"] == "3"
    assert "OSError: a worker is gone" in page.text_of["xsched-report-summary"]  # versions: said, not fatal
    # the transfer heard of since entering: in the summary and drawn on the worker that fetched
    summary = page.by_id("xsched-report-summary")
    assert (summary["data-transfer-count"], summary["data-transfer-bytes"]) == ("1", "4096")
    assert "1 (4.00 KiB in 250.00 ms)" in page.text_of["xsched-report-summary"]
    moved = page.by_id("xsched-report-transfers")
    assert (moved["data-task-count"], moved["data-worker-count"]) == ("1", "1")
    assert "transfer from tcp://h:2\ngroup: transfer\nworker: tcp://h:1\nduration: 250.00 ms\nbytes: 4.00 KiB" \
        in page.texts
    assert [a["group"] for a in report.activity] == ["transfer"]  # (not the spill that ended before)
    assert page.text_of["xsched-report-code"] == (
        'with performance_report(tmp_path / "r.html", client=client) as report:\n'
        '    client.rows.append(["inc-1", "tcp://h:1", 2.0, 2.5, "memory", 28])\n'
        '    client.rows.append(["inc-2", "tcp://h:1", 2.5, 3.0, "error", None])')
    assert repr(report).startswith(f"<PerformanceReport {str(tmp_path / 'r.html')!r}: 2 task runs (1 erred) in ")
    with pytest.raises(TypeError, match="synchronous client writes a performance report with `with"):
        asyncio.run(report.__aenter__())


def test_stacklevel_shows_the_with_block_of_a_caller(tmp_path):
    import contextlib

    client = FakeClient(asynchronous=False)

    @contextlib.contextmanager
    def reported(level):  # (a helper of one's own entering the report)
        with performance_report(tmp_path / "r.html", client=client, stacklevel=level) as inner:
            yield inner

    with reported(1) as report:
        client.rows.append(["inc-1", "tcp://h:1", 2.0, 2.5, "memory", 28])
    assert "performance_report(tmp_path" in report.code  # (the helper's own block)
    with reported(3) as report:  # (past contextlib's __enter__ to this block)
        client.rows.append(["inc-2", "tcp://h:1", 2.0, 2.5, "memory", 28])
    assert report.code.startswith("with reported(3) as report:")
    with pytest.raises(TypeError, match="stacklevel"):
        performance_report(tmp_path / "r.html", client=client, stacklevel=0)


def test_a_block_that_raises_still_writes_its_report(tmp_path):
    client = FakeClient(asynchronous=False)
    with pytest.raises(ZeroDivisionError):
        with performance_report(tmp_path / "r.html", client=client):
            client.rows.append(["inc-1", "tcp://h:1", 2.0, 2.5, "memory", 28])
            1 / 0
    assert Page((tmp_path / "r.html").read_text()).by_id("xsched-report-task-stream")["data-task-count"] == "1"


def test_async_with_on_an_asynchronous_client(tmp_path):
    client = FakeClient(asynchronous=True)

    async def main():
        async with performance_report(tmp_path / "r.html", client=client) as report:
            client.rows.append(["inc-1", "tcp://h:1", 2.0, 2.5, "memory", 28])
        return report

    report = asyncio.run(main())
    assert [r["key"] for r in report.runs] == ["inc-1"] and report.written
    assert report.code == ('async with performance_report(tmp_path / "r.html", client=client) as report:\n'
                           '    client.rows.append(["inc-1", "tcp://h:1", 2.0, 2.5, "memory", 28])')
    assert __file__ in report.code_origin
    with pytest.raises(TypeError, match="asynchronous client writes a performance report with `async with"):
        with performance_report(tmp_path / "r.html", client=client):
            pass


def test_a_cell_that_linecache_does_not_know_is_read_from_ipython_history(tmp_path, monkeypatch):
    from xsched.dashboard import report as report_module

    raw = "\nc = FakeClient(False)\nwith performance_report(path, client=c) as r:\n    %time c.rows.append(row)\n"
    python = ("c = FakeClient(False)\nwith performance_report(path, client=c) as r:\n"
              "    get_ipython().run_line_magic('time', 'c.rows.append(row)')\n")
    monkeypatch.setattr(report_module, "_ipython_cell", lambda: (raw, python))
    namespace = {"FakeClient": FakeClient, "performance_report": performance_report, "path": tmp_path / "r.html",
                 "row": ["inc-1", "tcp://h:1", 2.0, 2.5, "memory", 28]}

    class Shell:  # what the transformed cell calls
        def run_line_magic(self, name, line):
            exec(line, namespace)

    namespace["get_ipython"] = Shell
    exec(compile(python, "<ipython-input-7-0123456789ab>", "exec"), namespace)  # (no linecache entry)
    report = namespace["r"]
    assert report.code == "with performance_report(path, client=c) as r:\n    %time c.rows.append(row)"
    assert report.code_origin == "this cell, line 2" and [x["key"] for x in report.runs] == ["inc-1"]
    monkeypatch.setattr(report_module, "_ipython_cell", lambda: (None, None))
    exec(compile(python, "<ipython-input-8-0123456789ab>", "exec"), namespace)
    assert namespace["r"].code is None
    assert "not available" in Page((tmp_path / "r.html").read_text()).text_of["xsched-report-code"]


# ---------------------------------------------------------------------- errors at the call
def test_errors_at_the_call_name_what_to_do(tmp_path, monkeypatch):
    import xsched  # noqa: F401 (registers hooks.get_client)
    from xsched.client import default as default_module

    monkeypatch.setattr(default_module, "_stack", [])
    with pytest.raises(ValueError, match=r"create one first \(client = xsched.Client\(\)"):
        performance_report(tmp_path / "r.html")
    missing = tmp_path / "no-such-dir"
    with pytest.raises(FileNotFoundError, match=f"the directory '{missing}' does not exist"):
        performance_report(missing / "r.html", client=object())
    with pytest.raises(IsADirectoryError, match="is a directory"):
        performance_report(tmp_path, client=object())
    with pytest.raises(TypeError, match="limit"):
        performance_report(tmp_path / "r.html", client=object(), limit=-1)


def test_the_report_holds_its_path_and_says_what_it_is(tmp_path):
    report = PerformanceReport(tmp_path / "r.html", client=object())
    assert os.fspath(report) == str(tmp_path / "r.html") == report.filename
    assert repr(report) == f"<PerformanceReport {str(tmp_path / 'r.html')!r}: not written yet>"
    default = PerformanceReport(client=object())
    assert default.filename == os.path.abspath("xsched-report.html")
    report.runs, report.start, report.stop, report.written = [run("a-1"), run("b-1", status="error")], 1.0, 3.5, True
    assert repr(report).endswith(": 2 task runs (1 erred) in 2.50 s>")
