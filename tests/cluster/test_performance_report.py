"""``xsched.performance_report`` on a LocalCluster: the file written when the block ends is
one self-contained page (no script, nothing loaded from elsewhere) showing exactly the task
runs of the block, its two task groups, its failed task and its code."""

from __future__ import annotations

import asyncio

import pytest

import xsched
from tests.support import helpers
from tests.support.helpers import spin, wait_until
from tests.support.report_page import Page

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(120)]


def inc(x):
    return x + 1


def halve(x):
    if x == 7:
        raise ValueError("seven cannot be halved here")
    return x / 2


def test_a_report_of_a_block_with_two_groups_and_a_failure(client, tmp_path):
    before = client.map(inc, range(1000, 1020))
    assert client.gather(before) == list(range(1001, 1021))  # ran before the block: not in the report

    path = tmp_path / "report.html"
    with xsched.performance_report(filename=str(path)) as report:
        incs = client.map(inc, range(100))
        halves = client.map(halve, range(100))
        xsched.wait(incs + halves, timeout=60)
    assert [f.status for f in halves].count("error") == 1 and all(f.status == "finished" for f in incs)

    block_keys = {f.key for f in incs + halves}
    assert {r["key"] for r in report.runs} == block_keys and len(report.runs) == 200
    assert report.written and str(path) == report.filename
    assert repr(report).startswith(f"<PerformanceReport {str(path)!r}: 200 task runs (1 erred) in ")

    text = path.read_text(encoding="utf-8")
    page = Page(text)
    assert page.external_references() == []
    assert not page.tags("script") and not page.tags("link") and not page.tags("iframe")
    assert "http://" not in text and "https://" not in text

    stream = page.by_id("xsched-report-task-stream")
    assert stream["data-task-count"] == "200" and stream["data-run-count"] == "200"
    assert stream["data-worker-count"] == "2" and stream["data-group-count"] == "2"
    figure = text[text.index('<svg id="xsched-report-task-stream"'):]
    figure = figure[:figure.index("</svg>") + len("</svg>")]  # (the transfers' figure has hover texts too)
    hovered = {t.split("\n")[0] for t in Page(figure).texts if "\ngroup: " in t}  # each bar's names its key
    assert hovered == block_keys and not any(f.key in text for f in before)
    assert page.by_id("xsched-report-groups")["data-group-count"] == "2"
    assert page.by_id("xsched-report-memory")["data-worker-count"] == "2"
    summary = page.by_id("xsched-report-summary")
    assert (summary["data-task-count"], summary["data-erred-count"], summary["data-worker-count"],
            summary["data-thread-count"]) == ("200", "1", "2", "2")
    [bad] = [f for f in halves if f.status == "error"]
    assert bad.key in page.text_of["xsched-report-erred"]

    code = page.text_of["xsched-report-code"]
    assert code.splitlines()[0] == 'with xsched.performance_report(filename=str(path)) as report:'
    assert "    halves = client.map(halve, range(100))" in code.splitlines()


def test_an_asynchronous_client_writes_its_report_with_async_with(cluster, tmp_path):
    path = tmp_path / "async.html"

    async def main():
        async with xsched.Client(cluster, asynchronous=True, set_as_default=False) as ac:
            async with xsched.performance_report(path, client=ac) as report:
                assert await ac.submit(inc, 41) == 42
            return report

    report = asyncio.run(main())
    assert [r["group"] for r in report.runs] == ["inc"]
    page = Page(path.read_text(encoding="utf-8"))
    assert page.by_id("xsched-report-task-stream")["data-task-count"] == "1"
    assert "await ac.submit(inc, 41)" in page.text_of["xsched-report-code"]


def test_the_report_samples_where_the_tasks_spent_their_time(client, tmp_path):
    path = tmp_path / "profiled.html"
    with xsched.performance_report(filename=str(path)) as report:
        assert all(n > 0 for n in client.gather(client.map(spin, [0.6, 0.6], pure=False)))
    # the workers' task threads were sampled every 10 ms while the two spins ran: at least a
    # few rounds' worth, all under the task prefix, through the task's function
    rows = report.profile.rows()
    [top] = [r for r in rows if r[0] == 0]
    assert top[1] == "spin" and report.profile.samples == top[3] >= 10
    assert any(r[1] == "spin" and r[2] == helpers.__file__ for r in rows)
    page = Page(path.read_text(encoding="utf-8"))
    figure = page.by_id("xsched-profile")
    assert figure["data-sample-count"] == str(report.profile.samples) and figure["data-prefix-count"] == "1"
    assert not page.tags("script") and page.external_references() == []

    quiet = tmp_path / "unprofiled.html"
    with xsched.performance_report(filename=str(quiet), profile=False) as report:
        client.submit(spin, 0.05, pure=False).result(timeout=30)
    assert report.profile is None and 'id="xsched-profile"' not in quiet.read_text(encoding="utf-8")


def test_an_asynchronous_report_samples_too(cluster, tmp_path):
    path = tmp_path / "async-profiled.html"

    async def main():
        async with xsched.Client(cluster, asynchronous=True, set_as_default=False) as ac:
            async with xsched.performance_report(path, client=ac) as report:
                assert await ac.submit(spin, 0.6, pure=False) > 0
            return report

    report = asyncio.run(main())
    assert report.profile.samples >= 5
    assert Page(path.read_text(encoding="utf-8")).by_id("xsched-profile")["data-sample-count"] == \
        str(report.profile.samples)


def test_the_report_shows_a_transfer_between_workers(client, tmp_path):
    import numpy as np

    first, second = sorted(client.scheduler_info()["workers"])
    path = tmp_path / "moved.html"
    with xsched.performance_report(filename=str(path)) as report:
        # 8 MB made on one worker, summed on the other: one transfer, fetched by the second
        block = client.submit(np.ones, 1_000_000, workers=[first], pure=False)
        total = client.submit(np.sum, block, workers=[second], allow_other_workers=False, pure=False)
        assert total.result(timeout=60) == 1_000_000
        # (workers report transfers with their heartbeats: the report waits one out after the
        # block; here the test waits for it inside, so a slow heartbeat cannot make it miss it)
        wait_until(lambda: client._sync(client._activity(report._activity_since))[0], msg="the transfer is heard of")
    moved = [a for a in report.activity if a["group"] == "transfer"]
    assert [(a["worker"], a["key"]) for a in moved] == [(second, f"transfer from {first}")]
    assert moved[0]["nbytes"] >= 8_000_000
    page = Page(path.read_text(encoding="utf-8"))
    figure = page.by_id("xsched-report-transfers")
    assert figure["data-task-count"] == "1" and figure["data-group-count"] == "1"
    assert page.by_id("xsched-report-summary")["data-transfer-count"] == "1"
