"""The dashboard page a scheduler serves, in Debian's chromium driven by Playwright for Python:
after 40 tasks on 2 workers, ``client.dashboard_link`` shows the task stream holding the 40
runs (``data-task-count`` of ``#xsched-pane-task-stream``), a progress row for the group and
2 rows in the workers table, in the browser's light and dark colour schemes; the timeline
draws memory samples of both workers, the logs pane shows (and filters) a warning the
scheduler logged, and the story pane shows a computed key's transitions once its key is
typed, the profile pane draws the prefix of a task spinning while the page is open and the
call stacks' Interrupt button stops that task; a group clicked in the graph pane lists its
keys, and a key clicked there or a run clicked in the task stream shows in the story pane; the
token left the address bar for a cookie; the same address without the token is
refused; and when the scheduler goes away, the page says so.

One browser start (the suite's time budget); skips, as the other browser tests do, when
chromium or playwright is missing (``sh tests/support/browser_deps.sh`` installs chromium).
Playwright's ``close()`` stops the chromium it launched.
"""

from __future__ import annotations

import os
import re

import pytest

from xsched import Client

from tests.support.browser import CHROMIUM, LAUNCH_ARGS, doc_picture, skip_without_browser

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(120)]


def inc(x):
    return x + 1


def note(text):
    import logging

    logging.getLogger("xsched").warning(text)


def test_the_dashboard_page_in_chromium(own_cluster, tmp_path):
    skip_without_browser()
    from playwright.sync_api import expect, sync_playwright

    # (a port of its own: after close, the next cluster of the other test process takes :8787,
    # and the open page would be refused by that scheduler instead of finding this one gone)
    cluster = own_cluster(n_workers=2, threads_per_worker=1, dashboard_address=":0")
    with Client(cluster, set_as_default=False) as client:
        _check_the_page(client, cluster, expect, sync_playwright, tmp_path)


def _check_the_page(client, cluster, expect, sync_playwright, shots) -> None:
    futures = client.map(inc, range(40))  # held: the progress pane counts them done
    assert client.gather(futures) == list(range(1, 41))
    client.run_on_scheduler(note, "dashboard-browser: the scheduler's warning")
    link = client.dashboard_link
    page_url = link.partition("?")[0]
    backgrounds = {}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=LAUNCH_ARGS)
        try:
            for scheme in ("light", "dark"):
                context = browser.new_context(color_scheme=scheme, viewport={"width": 1280, "height": 900})
                page = context.new_page()
                errors: list[str] = []
                page.on("pageerror", lambda e, errors=errors: errors.append(str(e)))
                response = page.goto(link)
                assert response.status == 200
                stream = page.locator("#xsched-pane-task-stream canvas")
                expect(stream).to_have_attribute("data-task-count", "40", timeout=20_000)
                expect(stream).to_have_attribute("data-worker-count", "2")
                rows = page.locator("#xsched-pane-workers tr[data-worker-address]")
                expect(rows).to_have_count(2)
                assert sorted(rows.nth(i).get_attribute("data-worker-address") for i in range(2)) == sorted(
                    client.scheduler_info()["workers"])
                expect(page.locator('#xsched-pane-progress [data-group="inc"]')).to_have_attribute("data-done", "40")
                expect(page.locator("#xsched-pane-worker-memory [data-worker-address]")).to_have_count(2)
                expect(page.locator('#xsched-pane-graph [data-group="inc"]')).to_have_attribute("data-state", "done")
                expect(page.locator("#xsched-pane-call-stack .xsched-StacksList")).to_have_attribute("data-tasks", "0")
                expect(page.locator(".xsched-DashboardStatus")).to_have_attribute("data-state", "live")
                # every pane has room of its own in the grid (a pane without an area gets a row
                # of no height: its heading only)
                cells = page.locator(".xsched-DashboardCell")
                heights = {cells.nth(i).get_attribute("data-pane"): cells.nth(i).bounding_box()["height"]
                           for i in range(cells.count())}
                assert len(heights) == 10 and min(heights.values()) >= 150, heights
                assert page.url == page_url  # the token left the address bar; the cookie carries it
                backgrounds[scheme] = page.evaluate("getComputedStyle(document.body).backgroundColor")
                timeline = page.locator("#xsched-pane-timeline svg")
                expect(timeline).to_have_attribute("data-samples", re.compile(r"^[1-9][0-9]*$"), timeout=20_000)
                expect(timeline).to_have_attribute("data-worker-count", "2")
                if scheme == "light":
                    page.screenshot(path=str(shots / "page.png"))
                    doc_picture(shots / "page.png", "dashboard-page.png")
                    _check_logs_and_story(page, expect, futures[7].key)
                    _check_graph_keys(page, expect, futures[12].key)
                    _check_run_click(page, expect)
                else:  # (last: its run is one more in the task stream)
                    _check_profile(client, page, expect)
                assert not errors, errors
                if scheme == "light":
                    page.reload()  # the cookie alone opens it now
                    expect(page.locator("#xsched-pane-task-stream canvas")).to_have_attribute(
                        "data-task-count", "40", timeout=20_000)
                    context.close()
            # a browser without the token (no cookie either) is refused the same address
            stranger = browser.new_context()
            refused = stranger.new_page().goto(page_url)
            assert refused.status == 403
            stranger.close()
            # the scheduler goes away: the open page says so
            client.close()
            cluster.close()
            status = page.locator(".xsched-DashboardStatus")
            expect(status).to_have_attribute("data-state", "gone", timeout=20_000)
            expect(status).to_contain_text("went away")
        finally:
            browser.close()
    assert backgrounds["light"] != backgrounds["dark"]  # the --jp-* variables of both schemes


def _check_graph_keys(page, expect, key) -> None:
    """A group clicked in the graph pane lists its keys; a key clicked shows in the story pane."""
    page.locator('#xsched-pane-graph [data-group="inc"] .xsched-GraphRect').click()
    listed = page.locator('#xsched-pane-graph .xsched-GraphKeys[data-group="inc"] [data-action="open-key"]')
    expect(listed).to_have_count(40, timeout=20_000)
    expect(page.locator("#xsched-pane-graph .xsched-GraphKeysStatus")).to_contain_text("inc: 40 keys")
    page.locator(f'#xsched-pane-graph [data-action="open-key"][data-key="{key}"]').click()
    story = page.locator("#xsched-pane-story")
    expect(story.locator(".xsched-StoryKey")).to_have_value(key, timeout=20_000)
    expect(story.locator('tr[data-state="memory"]')).to_have_count(1, timeout=20_000)


def _check_run_click(page, expect) -> None:
    """A click on a run in the task stream shows its key in the story pane."""
    page.evaluate("""() => {
        const node = document.getElementById('xsched-pane-task-stream');
        const t = Date.now() / 1000 - 30;
        node.dispatchEvent(new CustomEvent('xsched-ingest', {detail: {records: [
            ['page-run-1', 'page-run', 'tcp://10.0.0.99:1', t, t + 20, 'memory']]}}));
        window.__runT = t;
    }""")
    stream = page.locator("#xsched-pane-task-stream canvas")
    expect(stream).to_have_attribute("data-lanes", re.compile(r"(^|,)10\.0\.0\.99:1=1(,|$)"))
    t0 = page.evaluate("() => window.__runT")
    v0, v1 = map(float, stream.get_attribute("data-view").split(","))
    stream.scroll_into_view_if_needed()  # (the graph's key scrolled the story pane into view)
    box = stream.bounding_box()
    rows = [r.split("=")[0] for r in stream.get_attribute("data-lanes").split(",")]
    row_h = (box["height"] - 18) / len(rows)  # (the time axis below)
    x = box["x"] + 96 + (t0 + 10 - v0) / (v1 - v0) * (box["width"] - 96)
    page.mouse.click(x, box["y"] + row_h * (rows.index("10.0.0.99:1") + 0.5))
    expect(page.locator("#xsched-pane-story .xsched-StoryKey")).to_have_value("page-run-1", timeout=10_000)


def _check_profile(client, page, expect) -> None:
    """While a task spins, the page's profile pane draws its prefix (the workers sample while
    the page polls the profile); its Reset empties it."""
    import tempfile

    where = tempfile.TemporaryDirectory()
    gate = os.path.join(where.name, "open")

    def page_spin(path):
        import os
        import time
        while not os.path.exists(path):
            time.sleep(0.002)
        return 1

    spinning = client.submit(page_spin, gate, key="page-spin-1")
    try:
        expect(page.locator("#xsched-pane-profile canvas")).to_have_attribute(
            "data-prefixes", re.compile(r"(^|,)page-spin(,|$)"), timeout=30_000)
        # the call stacks show where it spins; their Interrupt button stops it (POST api/interrupt)
        block = page.locator('#xsched-pane-call-stack .xsched-StackBlock[data-key="page-spin-1"]')
        expect(block).to_have_count(1, timeout=30_000)
        block.locator('[data-action="interrupt"]').click()
        assert type(spinning.exception(timeout=30)).__name__ == "TaskInterrupted"
        # the profile's Reset (POST api/profile-reset): it starts again, empty while nothing runs
        profile = page.locator("#xsched-pane-profile canvas")
        page.locator('#xsched-pane-profile [data-action="reset-profile"]').click()
        expect(profile).to_have_attribute("data-samples", "0", timeout=20_000)
        expect(profile).to_have_attribute("data-prefixes", "")
    finally:
        open(gate, "w").close()
        where.cleanup()


def _check_logs_and_story(page, expect, key: str) -> None:
    """The logs pane shows the scheduler's warning (and the filter finds it alone); the story
    pane shows the transitions of ``key`` once it is typed."""
    logs = page.locator("#xsched-pane-logs")
    mine = logs.locator('.xsched-LogRow[data-source="scheduler"]', has_text="dashboard-browser: the scheduler's warning")
    expect(mine).to_have_count(1, timeout=20_000)
    logs.locator(".xsched-LogsFilter").fill("dashboard-browser:")
    expect(logs.locator(".xsched-LogRow")).to_have_count(1)
    logs.locator(".xsched-LogsFilter").fill("")
    story = page.locator("#xsched-pane-story")
    story.locator(".xsched-StoryKey").fill(key)
    story.locator(".xsched-StoryKey").press("Enter")
    expect(story.locator('tr[data-state="memory"]')).to_have_count(1, timeout=20_000)
    expect(story.locator(".xsched-StoryNow")).to_contain_text("Now: in memory on tcp://")
    expect(story.locator('tr[data-state="processing"]')).not_to_have_count(0)
    # no kernels on the page: the lines that reach the value from a notebook, on a worker holding it
    snippet = story.locator(".xsched-StorySnippet")
    expect(snippet).to_have_count(1)
    worker = snippet.get_attribute("data-worker")
    assert worker.startswith("tcp://"), worker
    expect(snippet.locator("pre")).to_have_text(
        f'infos = client.start_ipython_workers(workers=["{worker}"])\n'
        f'%remote infos["{worker}"] value = worker.data["{key}"]')
