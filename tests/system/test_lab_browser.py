"""End to end: JupyterLab from this venv, a LocalCluster in another process, Debian's
chromium driven by Playwright for Python.

Checks what a user sees: the "xsched" sidebar tab lists the cluster (found through the
scheduler registry, not started by the panel) with its two worker rows; "Console" on a
worker opens a JupyterLab console attached to the kernel inside that worker, where
``worker.address`` answers the worker's address; the dark theme applies to the panel;
xsched's ipywidgets (the Client widget, a progress bar) render in a real notebook. At the
sidebar's default width the worker rows are readable (natural order by name, an ellipsised
address never broken mid-IP, labels on one line, a small console button); a task group's
label counts what its bar shows, "+N more" lists more keys, and a key's story is a table
with times and workers.
Screenshots go to the test's temp dir; the dark one is copied to docs/lab-panel.png.

Every process started here is tracked by its pid and stopped by it (jupyter lab, the
cluster process, and chromium through Playwright's close()). Skips with a message when
chromium or playwright is missing (``sh tests/support/browser_deps.sh`` installs chromium).
"""

from __future__ import annotations

import json
import os
import re
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

from tests.support.browser import CHROMIUM, LAUNCH_ARGS, doc_picture, open_by_palette, open_pane, \
    skip_without_browser

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.dirname(sys.executable)

# (one test process runs this module: what its module-scoped fixtures start, it starts once)
pytestmark = [pytest.mark.cluster, pytest.mark.timeout(150), pytest.mark.xdist_group("lab-browser")]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _stop(proc: subprocess.Popen, timeout: float = 15) -> None:
    """Stop one process we started, by its pid: SIGTERM (twice for jupyter), then SIGKILL.
    (Not SIGINT: without a terminal jupyter waits out its "shut down? (y/n)" prompt.)"""
    if proc.poll() is not None:
        return
    for sig in (signal.SIGTERM, signal.SIGTERM):
        try:
            os.kill(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout / 2)
            return
        except subprocess.TimeoutExpired:
            pass
    proc.kill()
    proc.wait(5)


def _labextension_installed() -> bool:
    """Installed into this environment (by a wheel, or install_dev.py for an editable install)."""
    return os.path.isfile(os.path.join(sys.prefix, "share", "jupyter", "labextensions", "xsched-labextension",
                                       "package.json"))


@pytest.fixture(scope="module")
def browser_available():
    skip_without_browser()
    if not os.path.exists(os.path.join(BIN, "jupyter-lab")):
        pytest.skip("jupyterlab is not installed in this venv (pip install -e '.[test]')")


@pytest.fixture(scope="module")
def lab_cluster(browser_available, tmp_path_factory):
    """A LocalCluster (2 workers x 1 thread) in a process of its own, like a user's notebook;
    its workers are named "worker-2" and "worker-10" (a string sort would put 10 first)."""
    d = tmp_path_factory.mktemp("lab-cluster")
    code = ("import sys\nfrom xsched import LocalCluster\n"
            "class Named(LocalCluster):\n"
            "    def _group_name(self, index):\n"
            "        return f'worker-{(2, 10)[index] if index < 2 else index}'\n"
            "c = Named(n_workers=2, threads_per_worker=1)\n"
            "print(c.scheduler_address, flush=True)\nsys.stdin.read()\nc.close()\n")
    proc = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=open(d / "cluster.log", "w"), text=True, cwd=str(d))
    try:
        address = proc.stdout.readline().strip()
        assert address.startswith("tcp://"), (d / "cluster.log").read_text()
        yield address
    finally:
        try:
            proc.stdin.close()  # the process closes its cluster and exits
            proc.wait(30)
        except subprocess.TimeoutExpired:
            _stop(proc)


@pytest.fixture(scope="module")
def lab(browser_available, tmp_path_factory):
    """`jupyter lab` from this venv with a token on a free port; JUPYTER_* dirs in a temp dir."""
    d = tmp_path_factory.mktemp("lab")
    env = dict(os.environ)
    for name in ("config", "data", "runtime", "settings", "workspaces", "root"):
        (d / name).mkdir()
    env.update(JUPYTER_CONFIG_DIR=str(d / "config"), JUPYTER_DATA_DIR=str(d / "data"),
               JUPYTER_RUNTIME_DIR=str(d / "runtime"), JUPYTERLAB_SETTINGS_DIR=str(d / "settings"),
               JUPYTERLAB_WORKSPACES_DIR=str(d / "workspaces"), JUPYTER_PLATFORM_DIRS="1")
    env.pop("JUPYTER_PATH", None)
    # no "get Jupyter news?" toast over the screenshots
    news = d / "settings" / "@jupyterlab" / "apputils-extension"
    news.mkdir(parents=True)
    (news / "notification.jupyterlab-settings").write_text(json.dumps({"fetchNews": "false"}))
    port, token = _free_port(), secrets.token_hex(16)
    args = [os.path.join(BIN, "jupyter-lab"), "--no-browser", f"--port={port}", "--ip=127.0.0.1",
            f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={d / 'root'}",
            "--ServerApp.port_retries=0", "--LabApp.news_url=None", *(["--allow-root"] if os.getuid() == 0 else []),
            "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
            # the server extension is enabled by pip install; say so here too for a bare checkout
            '--ServerApp.jpserver_extensions=xsched.labserver=True']
    if not _labextension_installed():
        # not installed into the venv (editable install without extensions/jupyterlab/install_dev.py):
        # serve the committed build from a temp labextensions dir
        ext = d / "labextensions"
        ext.mkdir()
        os.symlink(os.path.join(ROOT, "xsched", "labextension"), ext / "xsched-labextension")
        args.append(f"--LabApp.extra_labextensions_path={ext}")
    log = open(d / "lab.log", "w")
    proc = subprocess.Popen(args, env=env, stdout=log, stderr=subprocess.STDOUT, cwd=str(d / "root"))
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            assert proc.poll() is None, (d / "lab.log").read_text()
            try:
                req = urllib.request.Request(f"{url}/api/status", headers={"Authorization": f"token {token}"})
                with urllib.request.urlopen(req, timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            assert time.monotonic() < deadline, "jupyter lab did not start:\n" + (d / "lab.log").read_text()
            time.sleep(0.25)
        yield {"url": url, "token": token, "dir": d, "proc": proc}
    finally:
        _stop(proc)
        log.close()


def _open_lab(p, lab, tmp_path):
    """(context, page): chromium with a profile in ``tmp_path``, on JupyterLab's main page once
    its dock panel is there. Closing the context stops that chromium."""
    context = p.chromium.launch_persistent_context(
        str(tmp_path / "chromium-profile"), executable_path=CHROMIUM, headless=True, args=LAUNCH_ARGS,
        viewport={"width": 1400, "height": 900})
    try:
        page = context.pages[0] if context.pages else context.new_page()
        page.set_default_timeout(30_000)
        page.goto(f"{lab['url']}/lab?token={lab['token']}")
        page.wait_for_selector("#jp-main-dock-panel", state="attached")
    except BaseException:
        context.close()
        raise
    return context, page


def _api(lab, path, method="GET", body=None):
    req = urllib.request.Request(f"{lab['url']}/{path}", method=method,
                                 data=None if body is None else json.dumps(body).encode(),
                                 headers={"Authorization": f"token {lab['token']}",
                                          "Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as r:
        text = r.read().decode()
    return json.loads(text) if text else None


def test_panel_in_real_browser(lab, lab_cluster, tmp_path):
    from playwright.sync_api import TimeoutError as PlaywrightTimeout, expect, sync_playwright

    t0 = time.monotonic()
    timings = {}
    shots = tmp_path / "screenshots"
    shots.mkdir()
    address = lab_cluster
    # a notebook for part 5 (the project's ipywidgets in a real notebook)
    nb = {"cells": [
        {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
         "source": f"from xsched import Client\nclient = Client({address!r})\nclient"},
        {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
         "source": ("from xsched import progress\nfuts = client.map(lambda x: x * 2, range(12), "
                    "key=[f'double-{i}' for i in range(12)])\nprogress(futs)")},
        {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
         "source": "sum(client.gather(futs))"},
        {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,  # for part 7
         "source": "boom = client.submit(lambda: 6 * 7 / 0, key='boom-1')"}],
        "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
        "nbformat": 4, "nbformat_minor": 5}
    _api(lab, "api/contents/widgets.ipynb", "PUT", {"type": "notebook", "format": "json", "content": nb})

    with sync_playwright() as p:
        context, page = _open_lab(p, lab, tmp_path)
        try:
            timings["lab loaded"] = time.monotonic() - t0

            # 1. the xsched tab: the cluster (from the registry) and its two worker rows
            page.click('.jp-SideBar .lm-TabBar-tab[data-id="xsched-cluster-panel"]')
            panel = page.locator("#xsched-cluster-panel")
            expect(panel).to_be_visible()
            item = panel.locator(f'.xsched-Cluster[data-cluster-address="{address}"]')
            expect(item).to_be_visible()
            item.click()
            rows = panel.locator("tr[data-worker-address]")
            expect(rows).to_have_count(2)
            workers = sorted(rows.nth(i).get_attribute("data-worker-address") for i in range(2))
            assert all(w.startswith("tcp://127.0.0.1:") for w in workers), workers
            expect(item).to_contain_text("2 workers")
            assert panel.locator(".xsched-Bar-managed").count() == 2
            # one natural order: worker-2 before worker-10 (by name, digits as numbers)
            names = [rows.nth(i).locator(".xsched-WorkerName").inner_text() for i in range(2)]
            assert names == ["worker-2", "worker-10"], names
            # readable at the sidebar's default width: the address is cut with an ellipsis (full
            # text in its title), never broken mid-IP; labels do not wrap; a small console button
            width = panel.evaluate("el => el.getBoundingClientRect().width")
            assert width < 400, f"the sidebar is {width}px wide: not the default width"
            addr = rows.first.locator(".xsched-WorkerAddress")
            style = addr.evaluate("el => { const s = getComputedStyle(el); return [s.wordBreak, s.whiteSpace, "
                                  "s.textOverflow, el.title, el.getClientRects().length] }")
            assert style[0] != "break-all" and style[1] == "nowrap" and style[2] == "ellipsis", style
            assert style[3].startswith("tcp://127.0.0.1:") and style[4] == 1, style
            for sel in (".xsched-BarLabel", ".xsched-WorkerThreads", ".xsched-WorkerProcessing"):
                cell = rows.first.locator(sel)
                assert cell.evaluate("el => getComputedStyle(el).whiteSpace") == "nowrap", sel
                assert cell.evaluate("el => el.getClientRects().length") == 1, sel   # one line
            expect(rows.first.locator(".xsched-WorkerThreads")).to_have_text("1\u00a0thread")
            button = rows.first.locator(".xsched-WorkerConsole")
            expect(button).to_have_text("›_")
            assert button.get_attribute("aria-label").startswith("Console on tcp://")
            box = button.evaluate("el => { const r = el.getBoundingClientRect(); return [r.width, r.height] }")
            assert box[0] < 0.2 * width and box[1] <= 24, box
            # the card is named for people: host and start time (pid and id in its title)
            name = item.locator(".xsched-ClusterName").inner_text()
            assert " · started " in name and "scheduler-" not in name, name
            assert "pid: " in item.get_attribute("title") and "id: scheduler-" in item.get_attribute("title")
            page.screenshot(path=str(shots / "panel-light.png"))
            timings["panel"] = time.monotonic() - t0

            # 2. a console on a worker: worker.address answers that worker's address
            target = workers[0]
            panel.locator(f'tr[data-worker-address="{target}"] .xsched-WorkerConsole').click()
            console = page.locator(".jp-CodeConsole").last
            expect(console).to_be_visible(timeout=45_000)
            # the banner comes from the kernel's kernel_info reply: the console is connected (the
            # prompt cell is re-created when the kernel arrives, so type only after that)
            expect(console.locator(".jp-CodeConsole-banner")).to_contain_text("IPython", timeout=45_000)
            prompt = console.locator(".jp-CodeConsole-promptCell .cm-content")
            out = console.locator(".jp-CodeConsole-content .jp-OutputArea-output").last
            for attempt in range(3):
                prompt.click()
                page.keyboard.type("worker.address")
                expect(prompt).to_contain_text("worker.address")
                page.keyboard.press("Shift+Enter")
                try:
                    expect(out).to_contain_text(target, timeout=10_000 if attempt < 2 else 30_000)
                    break
                except AssertionError:
                    if attempt == 2:
                        raise
            page.screenshot(path=str(shots / "worker-console.png"))
            timings["console"] = time.monotonic() - t0

            # 3. the dark theme, through the Settings menu
            page.click('.lm-MenuBar-itemLabel:text-is("Settings")')
            page.click('.lm-Menu-itemLabel:text-is("Theme")')
            page.click('.lm-Menu-itemLabel:text-is("JupyterLab Dark")')
            page.wait_for_selector('body[data-jp-theme-light="false"]', state="attached", timeout=30_000)
            page.click('.jp-SideBar .lm-TabBar-tab[data-id="xsched-cluster-panel"]') \
                if not panel.is_visible() else None
            expect(rows).to_have_count(2)
            bg = panel.evaluate("el => getComputedStyle(el).backgroundColor")
            rgb = [int(x) for x in bg[bg.index("(") + 1:bg.index(")")].split(",")[:3]]
            assert sum(rgb) / 3 < 100, f"panel background {bg} is not dark"
            fg = panel.evaluate("el => getComputedStyle(el).color")
            rgb_fg = [int(x) for x in fg[fg.index("(") + 1:fg.index(")")].split(",")[:3]]
            assert sum(rgb_fg) / 3 > 150, f"panel text {fg} is not light on the dark theme"
            track = rows.first.locator(".xsched-Bar").evaluate("el => getComputedStyle(el).backgroundColor")
            rgb_track = [int(x) for x in track[track.index("(") + 1:track.index(")")].split(",")[:3]]
            assert sum(rgb_track) / 3 < 128, f"memory bar track {track} is light on the dark theme"
            assert "gradient" in rows.first.locator(".xsched-Bar-unmanaged").evaluate(
                "el => getComputedStyle(el).backgroundImage")  # striped: unlike managed and the track
            page.screenshot(path=str(shots / "panel-dark.png"))
            timings["dark theme"] = time.monotonic() - t0

            # 4. xsched's ipywidgets in a real notebook (Client widget, progress bars)
            page.goto(f"{lab['url']}/lab/tree/widgets.ipynb?token={lab['token']}")
            nbpanel = page.locator(".jp-NotebookPanel").last
            expect(nbpanel).to_be_visible(timeout=45_000)
            page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=30_000)
            # the notebook's kernel is up: the status bar says "Python 3 (ipykernel) | Idle"
            expect(page.locator("#jp-main-statusbar")).to_contain_text("Idle", timeout=45_000)
            out3 = nbpanel.locator(".jp-Cell").nth(2).locator(".jp-OutputArea-output")
            for attempt in range(3):
                # "Run All Cells" right after the page load can land before the kernel's session is
                # connected and do nothing; then run again
                try:
                    page.keyboard.press("Escape")  # no menu left open by an earlier attempt
                    nbpanel.locator(".jp-Cell").first.locator(".jp-InputPrompt").click()  # the current widget
                    page.click('.lm-MenuBar-itemLabel:text-is("Run")')
                    page.click('.lm-Menu-item:not(.lm-mod-disabled) .lm-Menu-itemLabel:text-is("Run All Cells")',
                               timeout=10_000)
                    expect(out3).to_contain_text("132", timeout=15_000 if attempt < 2 else 45_000)
                    break
                except (AssertionError, PlaywrightTimeout):
                    if attempt == 2:
                        raise
            client_out = nbpanel.locator(".jp-Cell").nth(0).locator(".jp-OutputArea-output")
            expect(client_out.locator(".widget-html, .jupyter-widgets").first).to_be_visible(timeout=30_000)
            expect(client_out).to_contain_text(address)
            bars = nbpanel.locator(".jp-Cell").nth(1).locator(".widget-hprogress, .progress-bar, progress")
            expect(bars.first).to_be_attached(timeout=30_000)
            expect(nbpanel.locator(".jp-Cell").nth(1).locator(".jp-OutputArea-output")).to_contain_text("double")
            page.screenshot(path=str(shots / "notebook-widgets.png"))
            timings["widgets"] = time.monotonic() - t0

            # 5. the panel's task groups (pushed), and a key's story (the page was reloaded: the
            # panel shows the cluster it showed before; select it anyway, other clusters may run).
            # Opening the notebook by its /lab/tree/ URL may have put the file browser in the
            # sidebar: show the panel (the command shows it, never hides it)
            open_by_palette(page, "Show xsched clusters")
            item.click()
            group = panel.locator('.xsched-Group[data-group="double"]')
            expect(group).to_be_visible(timeout=15_000)
            expect(group).to_contain_text("12 / 12")
            # the label's numbers are the bar's: done (memory, released, forgotten) of all
            count = group.locator(".xsched-GroupCount").inner_text()
            done, total = (int(x) for x in count.replace("\u00a0", " ").split("/"))
            bar = group.locator(".xsched-Bar-done").evaluate("el => el.style.width")
            assert abs(float(bar.rstrip("%")) - 100 * done / total) < 0.01, (count, bar)
            # 8 keys at first, "+4 more" shows the others
            keys = group.locator(".xsched-Key[data-action=story]")
            expect(keys).to_have_count(8)
            group.locator('[data-action="more-keys"]').click()
            expect(keys).to_have_count(12)
            expect(group.locator('[data-action="more-keys"]')).to_have_count(0)
            group.locator('.xsched-Key[data-key="double-3"]').click()
            dialog = page.locator(".jp-Dialog")
            expect(dialog).to_contain_text("Story of double-3")
            story = dialog.locator("table.xsched-Story")
            expect(story).to_contain_text("processing")
            expect(story).to_contain_text("memory")
            heads = story.locator("th").all_inner_texts()
            assert heads == ["time", "transition", "worker", "stimulus"], heads
            # the panel watched the cluster before the notebook ran: times and the worker are known
            ran = story.locator("tr", has_text="processing → memory")
            expect(ran.locator(".xsched-StoryWorker")).to_have_text(re.compile(r"^tcp://127\.0\.0\.1:\d+$"))
            assert ran.locator(".xsched-StoryWorker").inner_text() in workers
            assert ran.locator(".xsched-StoryTime").inner_text().startswith("+")
            page.screenshot(path=str(shots / "task-story.png"))
            dialog.locator(".jp-Dialog-button").last.click()
            expect(dialog).to_have_count(0)
            page.screenshot(path=str(shots / "panel-tasks-dark.png"))
            timings["task groups"] = time.monotonic() - t0

            # 6. "Insert client" into the active notebook
            cells = nbpanel.locator(".jp-Cell")
            n_cells = cells.count()
            nbpanel.locator(".jp-Cell").nth(2).locator(".jp-InputPrompt").click()
            panel.locator('[data-action="insert-client"]').click()
            expect(cells).to_have_count(n_cells + 1)
            expect(cells.nth(3)).to_contain_text(f'client = Client("{address}")')
            timings["insert client"] = time.monotonic() - t0

            # 7. a failed task's key offers "debug": pdb on its frames, in a console on the worker
            # where it raised, each command typed into the console's input box
            boom = panel.locator('.xsched-Group[data-group="boom"]')
            expect(boom).to_be_visible(timeout=30_000)
            debug = boom.locator('.xsched-Debug[data-key="boom-1"]')
            expect(debug).to_have_count(1, timeout=15_000)
            assert debug.get_attribute("data-target") in workers
            debug.click()
            dconsole = page.locator(".jp-CodeConsole").last
            expect(dconsole).to_contain_text("post-mortem of task 'boom-1'", timeout=45_000)
            stdin = dconsole.locator(".jp-Stdin-input").last
            expect(stdin).to_be_visible(timeout=30_000)
            answered = stdin.element_handle()
            stdin.fill("p 6 * 7")
            stdin.press("Enter")
            expect(dconsole).to_contain_text("42", timeout=30_000)
            # the next prompt's box replaces the answered one (for a moment both are there, or
            # neither): wait until the answered box left the page, then for the new one
            page.wait_for_function("el => !el.isConnected", arg=answered, timeout=30_000)
            expect(dconsole.locator(".jp-Stdin-input")).to_have_count(1, timeout=30_000)
            stdin = dconsole.locator(".jp-Stdin-input").last
            expect(stdin).to_have_value("", timeout=30_000)
            expect(stdin).to_be_editable(timeout=30_000)
            stdin.fill("q")
            stdin.press("Enter")
            expect(dconsole.locator(".jp-Stdin-input")).to_have_count(0, timeout=30_000)
            page.screenshot(path=str(shots / "debug-console.png"))
            timings["debug"] = time.monotonic() - t0
        except BaseException:
            try:
                page.screenshot(path=str(shots / "failure.png"))
                print("failure screenshot:", shots / "failure.png", "steps done:", list(timings))
                print("lab log tail:\n", (lab["dir"] / "lab.log").read_text()[-4000:])
            except Exception:
                pass
            raise
        finally:
            context.close()  # stops the chromium it launched
    doc_picture(shots / "panel-tasks-dark.png", "lab-panel.png")  # (the user guide's pictures)
    print("browser test timings (s since start):", {k: round(v, 1) for k, v in timings.items()},
          "screenshots in", shots)


def test_panes_in_real_browser(lab, lab_cluster, tmp_path):
    """The main-area panes (task stream, progress, worker memory, workers, timeline, logs,
    story, profile), opened from the palette for the cluster selected in the sidebar: their
    data- attributes match the cluster (the profile: a task spinning while the pane is open);
    the task stream's redraw time with 100,000 runs is printed (measured, not asserted)."""
    from playwright.sync_api import expect, sync_playwright

    from xsched import Client
    from xsched.protocol import ops

    address = lab_cluster
    client = Client(address, set_as_default=False)
    try:
        # group counts start with the first request that asks for them (a pane opened before the work)
        client._sync(client._conn.request({"op": ops.TELEMETRY, "parts": ["groups"]}, timeout=10))
        futs = client.map(lambda x: x + 1, range(30), key=[f"pane-inc-{i}" for i in range(30)])
        assert sum(client.gather(futs)) == sum(range(1, 31))
        total = client.submit(sum, futs, key="pane-total-0")  # (the graph pane: pane-inc feeds pane-total)
        assert total.result() == sum(range(1, 31))
        reply, _ = client._sync(client._conn.request({"op": ops.TELEMETRY, "parts": ["task-stream", "workers"],
                                                      "max_records": 100_000}, timeout=10))
        runs = reply["task_stream"]["index"]                     # every run of this cluster so far
        workers = sorted(w["address"] for w in reply["workers"])
        assert len(reply["task_stream"]["runs"]["keys"]) == runs >= 30 and len(workers) == 2

        def note():
            import logging
            logging.getLogger("xsched.user").warning("lab-panes: a note for the logs pane")

        client.run_on_scheduler(note)

        def lab_spin(path):
            import os
            import time
            while not os.path.exists(path):
                time.sleep(0.002)
            return 1

        gate = str(tmp_path / "spin-gate")  # (opened when the profile pane has seen the spin)
        spinning = client.submit(lab_spin, gate, key="lab-spin-1")
    except BaseException:
        client.close()
        raise

    shots = tmp_path / "screenshots"
    shots.mkdir()
    with sync_playwright() as p:
        context, page = _open_lab(p, lab, tmp_path)
        try:
            page.wait_for_selector("#xsched-cluster-panel", state="attached")
            page.wait_for_selector("#jupyterlab-splash", state="detached")
            # (the lab's saved layout may have the sidebar open already: a click on its tab would close it)
            open_by_palette(page, "Show xsched clusters")
            panel = page.locator("#xsched-cluster-panel")
            panel.locator(f'.xsched-Cluster[data-cluster-address="{address}"]').click()
            expect(panel.locator("tr[data-worker-address]")).to_have_count(2)
            expect(panel.locator('[data-action="open-pane"]')).to_have_count(10)
            # the default layout (the defaultLayout setting's default): three panes in one column
            panel.locator('[data-action="open-layout"]').click()
            boxes = []
            for kind in ("task-stream", "progress", "worker-memory"):
                expect(page.locator(f"#xsched-pane-{kind}")).to_be_visible()
                boxes.append(page.locator(f"#xsched-pane-{kind}").bounding_box())
            assert len({round(b["x"]) for b in boxes}) == 1, boxes          # one column
            assert boxes[0]["y"] < boxes[1]["y"] < boxes[2]["y"], boxes     # top to bottom

            for label, kind in (("Task Stream", "task-stream"), ("Progress", "progress"),
                                ("Worker Memory", "worker-memory"), ("Workers", "workers")):
                open_pane(page, label, kind)
            stream = page.locator("#xsched-pane-task-stream canvas")
            expect(stream).to_have_attribute("data-task-count", str(runs))
            expect(stream).to_have_attribute("data-worker-count", "2")
            progress = page.locator('#xsched-pane-progress [data-group="pane-inc"]')
            expect(progress).to_have_attribute("data-done", "30")
            expect(progress).to_have_attribute("data-total", "30")
            memory = page.locator("#xsched-pane-worker-memory [data-worker-address]")
            expect(memory).to_have_count(2)
            assert sorted(memory.nth(i).get_attribute("data-worker-address") for i in range(2)) == workers
            table = page.locator("#xsched-pane-workers tr[data-worker-address]")
            expect(table).to_have_count(2)
            names = lambda: [table.nth(i).locator('[data-column="name"]').inner_text() for i in range(2)]  # noqa: E731
            assert names() == ["worker-2", "worker-10"], names()      # natural order
            page.locator('#xsched-pane-workers th[data-sort="name"]').click()
            assert names() == ["worker-10", "worker-2"], names()      # the other way
            # the timeline, logs and story panes, through the server extension
            for label, kind in (("Timeline", "timeline"), ("Logs", "logs"), ("Story", "story")):
                open_pane(page, label, kind)
            timeline = page.locator("#xsched-pane-timeline svg")
            expect(timeline).to_have_attribute("data-samples", re.compile(r"^[1-9][0-9]*$"), timeout=20_000)
            expect(timeline).to_have_attribute("data-worker-count", "2")
            expect(page.locator('#xsched-pane-logs .xsched-LogRow[data-source="scheduler"]',
                                has_text="lab-panes: a note for the logs pane")).to_have_count(1, timeout=20_000)
            story = page.locator("#xsched-pane-story")
            story.locator(".xsched-StoryKey").fill("pane-inc-3")
            story.locator(".xsched-StoryKey").press("Enter")
            expect(story.locator('tr[data-state="memory"]')).to_have_count(1, timeout=20_000)
            expect(story.locator(".xsched-StoryNow")).to_contain_text("Now: in memory on tcp://")
            # a key in memory: a console on its worker, its value bound to `value`
            holders = story.locator('[data-action="key-console"]')
            expect(holders.first).to_be_visible()       # (two when pane-total's fetch left a copy)
            assert {holders.nth(i).get_attribute("data-worker") for i in range(holders.count())} <= set(workers)
            holders.first.click()
            kconsole = page.locator(".jp-CodeConsole").last
            out = kconsole.locator(".jp-CodeConsole-content .jp-OutputArea-output").last
            expect(out).to_have_text("4", timeout=45_000)          # pane-inc-3 is 3 + 1
            # the panes in the dark and the light theme: the canvas repaints itself when the theme changes
            canvas_light = """() => {
                const c = document.querySelector('#xsched-pane-task-stream canvas');
                const d = c.getContext('2d').getImageData(2, 2, 1, 1).data;
                return d[0] + d[1] + d[2] > 600; }"""

            def use_theme(theme: str, light: str) -> None:
                if page.evaluate("() => document.body.getAttribute('data-jp-theme-light')") != light:
                    page.click('.lm-MenuBar-itemLabel:text-is("Settings")')
                    page.click('.lm-Menu-itemLabel:text-is("Theme")')
                    page.click(f'.lm-Menu-itemLabel:text-is("{theme}")')
                    page.wait_for_selector(f'body[data-jp-theme-light="{light}"]', state="attached", timeout=30_000)
                    page.wait_for_selector("#jupyterlab-splash", state="detached", timeout=30_000)  # (shown while it switches)
                page.wait_for_function(canvas_light if light == "true" else f"() => !({canvas_light})()",
                                       timeout=20_000)

            was_light = page.evaluate("() => document.body.getAttribute('data-jp-theme-light')") != "false"
            use_theme("JupyterLab Dark", "false")
            page.screenshot(path=str(shots / "panes.png"))
            doc_picture(shots / "panes.png", "lab-panes.png")
            use_theme("JupyterLab Light", "true")
            page.screenshot(path=str(shots / "panes-light.png"))
            doc_picture(shots / "panes-light.png", "lab-panes-light.png")
            if not was_light:
                use_theme("JupyterLab Dark", "false")
            # the task-group graph: a node per group coloured by state, an arrow where one feeds another
            open_pane(page, "Graph", "graph")
            graph = page.locator("#xsched-pane-graph svg")
            expect(graph.locator('[data-group="pane-inc"]')).to_have_attribute("data-state", "done", timeout=20_000)
            expect(graph.locator('[data-group="pane-inc"]')).to_have_attribute("data-done", "30")
            expect(graph.locator('[data-group="pane-total"]')).to_have_attribute("data-column", "1")
            expect(graph.locator('.xsched-GraphEdge[data-from="pane-inc"][data-to="pane-total"]')).to_have_count(1)
            # a group opened from its node: its keys listed; one clicked shows in the story pane
            graph.locator('[data-group="pane-total"] .xsched-GraphRect').click()
            listed = page.locator('#xsched-pane-graph .xsched-GraphKeys[data-group="pane-total"] [data-action="open-key"]')
            expect(listed).to_have_count(1, timeout=20_000)
            expect(listed).to_have_attribute("data-key", "pane-total-0")
            listed.click()
            expect(story.locator(".xsched-StoryKey")).to_have_value("pane-total-0", timeout=20_000)
            expect(story.locator('tr[data-state="memory"]')).to_have_count(1, timeout=20_000)
            # the profile: the workers sample while it is open; the spinning task's prefix is drawn
            open_pane(page, "Profile", "profile")
            profile = page.locator("#xsched-pane-profile canvas")
            expect(profile).to_have_attribute("data-prefixes", re.compile(r"(^|,)lab-spin(,|$)"), timeout=30_000)
            expect(profile).to_have_attribute("data-nodes", re.compile(r"^([2-9]|[1-9][0-9]+)$"))  # its frames too
            # the call stacks: where the spinning task is now, its innermost frame in lab_spin
            open_pane(page, "Call Stack", "call-stack")
            spin = page.locator('#xsched-pane-call-stack .xsched-StackBlock[data-key="lab-spin-1"]')
            expect(spin).to_have_count(1, timeout=30_000)
            expect(spin.locator(".xsched-mod-innermost")).to_contain_text("in lab_spin")
            # ... and its Interrupt button stops it there (client.interrupt)
            spin.locator('[data-action="interrupt"]').click()
            assert type(spinning.exception(timeout=30)).__name__ == "TaskInterrupted"
            expect(page.locator('#xsched-pane-call-stack .xsched-StackBlock[data-key="lab-spin-1"]')).to_have_count(
                0, timeout=30_000)
            # the profile's Reset: the scheduler's profile starts again; nothing runs now, so it stays empty
            assert int(profile.get_attribute("data-samples")) > 0
            page.locator('#xsched-pane-profile [data-action="reset-profile"]').click()
            expect(profile).to_have_attribute("data-samples", "0", timeout=20_000)
            expect(profile).to_have_attribute("data-prefixes", "")
            expect(page.locator("#xsched-pane-profile .xsched-TaskStreamStatus")).to_contain_text("Sampling")
            client.close()
            page.screenshot(path=str(shots / "profile.png"))

            # the sidebar's buttons open (or show) the same panes
            page.locator("#xsched-pane-workers").evaluate("el => el.parentElement")  # attached
            panel.locator('[data-action="open-pane"][data-pane="progress"]').click()
            expect(page.locator("#xsched-pane-progress")).to_be_visible()

            # a lane per thread: of three runs of one worker the second overlaps the first, the
            # third starts after the first ended: two lanes, and hovering each names its own run
            page.evaluate("""() => {
                const node = document.getElementById('xsched-pane-task-stream');
                const t = Date.now() / 1000 - 21, w = 'tcp://10.0.0.99:1';
                node.dispatchEvent(new CustomEvent('xsched-ingest', {detail: {records: [
                    ['lanes-a', 'lanes', w, t, t + 10, 'memory'], ['lanes-b', 'lanes', w, t + 5, t + 15, 'memory'],
                    ['lanes-c', 'lanes', w, t + 12, t + 20, 'memory']]}}));
                window.__lanesT = t;
            }""")
            page.locator("#xsched-pane-task-stream .xsched-TaskStreamStatus").click()  # bring it to the front
            expect(stream).to_have_attribute("data-lanes", re.compile(r"^10\.0\.0\.99:1=2,worker-2=\d+,worker-10=\d+$"))
            t0 = page.evaluate("() => window.__lanesT")
            v0, v1 = map(float, stream.get_attribute("data-view").split(","))
            box = stream.bounding_box()
            row_h = (box["height"] - 18) / 3  # (the axis below; three workers, 10.0.0.99:1 first)
            x = box["x"] + 96 + (t0 + 7.5 - v0) / (v1 - v0) * (box["width"] - 96)
            tip = page.locator("#xsched-pane-task-stream .xsched-TooltipKey")
            for lane, key in ((0, "lanes-a"), (1, "lanes-b")):
                page.mouse.move(x, box["y"] + row_h * (0.25 + 0.5 * lane))
                expect(tip).to_have_text(key)
            # a click on a run shows its key in the story pane
            page.mouse.click(x, box["y"] + row_h * 0.75)
            expect(page.locator("#xsched-pane-story .xsched-StoryKey")).to_have_value("lanes-b", timeout=10_000)
            # in the simple interface (one main-area widget shown) the story pane hides the task
            # stream: runs reaching the hidden stream are held, not drawn, until it is shown
            open_by_palette(page, "Simple Interface")
            open_by_palette(page, "xsched: Open Story")
            expect(page.locator("#xsched-pane-task-stream")).to_be_hidden()
            count = int(stream.get_attribute("data-task-count"))
            page.evaluate("""() => document.getElementById('xsched-pane-task-stream').dispatchEvent(
                new CustomEvent('xsched-ingest', {detail: {records: [['hidden-1', 'lanes', 'tcp://10.0.0.99:1',
                Date.now() / 1000 - 2, Date.now() / 1000 - 1, 'memory']]}}))""")
            page.evaluate("() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")
            assert int(stream.get_attribute("data-task-count")) == count
            open_by_palette(page, "xsched: Open Task Stream")
            expect(stream).to_have_attribute("data-task-count", str(count + 1))
            open_by_palette(page, "Simple Interface")  # (back to every pane side by side)
            expect(page.locator("#xsched-pane-story")).to_be_visible()

            # 100,000 synthetic runs: the redraw time through the performance API (printed)
            page.evaluate("""n => {
                const node = document.getElementById('xsched-pane-task-stream');
                const t0 = Date.now() / 1000 - 120, records = [];
                for (let i = 0; i < n; i++) {
                    const g = `synthetic-${i % 20}`;
                    records.push([`${g}-${i}`, g, `tcp://10.0.0.${i % 8}:1`, t0 + i * 0.001,
                                  t0 + i * 0.001 + 0.006, i % 1000 === 0 ? 'error' : 'memory']);
                }
                performance.clearMeasures('xsched-task-stream-draw');
                node.dispatchEvent(new CustomEvent('xsched-ingest', {detail: {records}}));
            }""", 100_000)
            page.locator("#xsched-pane-task-stream .xsched-TaskStreamStatus").click()  # bring it to the front
            expect(stream).to_have_attribute("data-task-count", "100000")
            box = stream.bounding_box()
            measured = """() => performance.getEntriesByName('xsched-task-stream-draw').map(e => e.duration)"""
            page.wait_for_function(f"({measured})().length > 0")
            first = page.evaluate(measured)          # the first draw sorts the runs by group too
            for _ in range(5):   # a double click shows every run held again: full redraws
                page.mouse.dblclick(box["x"] + box["width"] * 0.6, box["y"] + box["height"] / 2)
                page.wait_for_timeout(60)
            full = page.evaluate(measured)[len(first):]
            for _ in range(5):   # zooming in around the pointer: redraws of the runs in view
                page.mouse.move(box["x"] + box["width"] * 0.6, box["y"] + box["height"] / 2)
                page.mouse.wheel(0, -120)
                page.wait_for_timeout(60)
            zoomed = page.evaluate(measured)[len(first) + len(full):]
            assert first and full and zoomed, (first, full, zoomed)
            # a poll that brings no run (an idle cluster's) draws nothing again; one new run does
            frames = "() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))"
            ingest = """records => document.getElementById('xsched-pane-task-stream')
                .dispatchEvent(new CustomEvent('xsched-ingest', {detail: {records}}))"""
            drawn = len(page.evaluate(measured))
            page.evaluate(ingest, [])
            page.evaluate(frames)
            assert len(page.evaluate(measured)) == drawn
            page.evaluate(ingest, [["one-more", "synthetic-0", "tcp://10.0.0.1:1", time.time() - 1, time.time(),
                                    "memory"]])
            page.wait_for_function(f"({measured})().length > {drawn}")
            page.screenshot(path=str(shots / "task-stream-100k.png"))
            heap = page.evaluate("() => performance.memory ? performance.memory.usedJSHeapSize : null")

            # the layout comes back after a reload (the layout restorer), once JupyterLab saved it
            def saved():
                data = _api(lab, "lab/api/workspaces/default").get("data", {})
                return {k.split(":", 1)[1] for k in data if k.startswith("xsched-pane:")}

            deadline = time.monotonic() + 30
            kinds = {"task-stream", "progress", "worker-memory", "workers", "timeline", "logs", "story", "profile",
                     "graph", "call-stack"}
            while saved() != kinds:
                assert time.monotonic() < deadline, f"the layout was not saved: {saved()}"
                page.wait_for_timeout(250)
            page.reload()
            page.wait_for_selector("#jp-main-dock-panel", state="attached")
            for kind in sorted(kinds):
                expect(page.locator(f"#xsched-pane-{kind}")).to_be_attached(timeout=30_000)
        finally:
            context.close()
            if not os.path.exists(gate):
                open(gate, "w").close()
            client.close()
    med = lambda xs: sorted(xs)[len(xs) // 2]  # noqa: E731
    print(f"task stream with 100,000 runs: first draw {first[0]:.1f} ms; full redraw median {med(full):.1f} ms "
          f"(max {max(full):.1f}, {len(full)} redraws); zoomed redraw median {med(zoomed):.1f} ms; "
          f"JS heap {heap} bytes; screenshots in {shots}")
