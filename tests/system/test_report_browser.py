"""A performance report opened from file:// in Debian's chromium (driven by Playwright for
Python), offline: the DOM holds the block's task count, the page asks for nothing but its
own file, and it follows the browser's light or dark colour scheme.

Skips, as the JupyterLab browser test does, when chromium or playwright is missing
(``sh tests/support/browser_deps.sh`` installs chromium). Playwright's ``close()`` stops
the chromium it launched.
"""

from __future__ import annotations

import pytest

import xsched

from tests.support.browser import CHROMIUM, LAUNCH_ARGS, skip_without_browser

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(120)]


def inc(x):
    return x + 1


@pytest.fixture(scope="module")
def browser_available():
    skip_without_browser()


def test_the_report_opens_offline_in_chromium(browser_available, client, tmp_path):
    from playwright.sync_api import sync_playwright

    path = tmp_path / "report.html"
    with xsched.performance_report(filename=path) as report:
        assert client.gather(client.map(inc, range(30))) == list(range(1, 31))
    assert len(report.runs) == 30

    url = path.as_uri()
    seen = {}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=LAUNCH_ARGS)
        try:
            for scheme in ("light", "dark"):
                context = browser.new_context(color_scheme=scheme, offline=True)
                page = context.new_page()
                requests: list[str] = []
                page.on("request", lambda r, requests=requests: requests.append(r.url))
                page.goto(url)
                assert requests == [url]  # nothing but the page itself
                stream = page.locator("#xsched-report-task-stream")
                assert stream.get_attribute("data-task-count") == "30"
                assert stream.get_attribute("data-worker-count") == "2"
                assert page.locator("#xsched-report-task-stream rect[fill]:not([fill='none']) title").count() >= 30
                seen[scheme] = page.evaluate(
                    """() => [getComputedStyle(document.body).backgroundColor,
                              getComputedStyle(document.querySelector('#xsched-report-task-stream text')).fill]""")
                context.close()
        finally:
            browser.close()
    (light_bg, light_text), (dark_bg, dark_text) = seen["light"], seen["dark"]
    assert light_bg != dark_bg and light_text != dark_text
    assert _luminance(light_bg) > _luminance(light_text) and _luminance(dark_bg) < _luminance(dark_text)


def _luminance(css: str) -> float:
    """Relative brightness of a computed ``rgb(r, g, b)`` colour, 0 to 255."""
    r, g, b = (float(x) for x in css[css.index("(") + 1:css.index(")")].split(",")[:3])
    return 0.299 * r + 0.587 * g + 0.114 * b
