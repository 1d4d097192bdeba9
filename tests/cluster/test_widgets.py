"""Live widgets for Client/LocalCluster, and the matplotlib figures, on real clusters.

ipywidgets objects are built without a kernel (their comms are no-ops then)."""

from __future__ import annotations

import time

import pytest

from xsched.jupyter.display import memory_bar, worker_order, workers_table
from xsched.jupyter.plots import memory_figure, task_stream_figure
from xsched.units import format_bytes

from tests.support.helpers import wait_until


# ----------------------------------------------------------------------------- pure parts
def test_memory_bar_parts_and_limit_mark():
    html = memory_bar({"managed": 25, "unmanaged": 25, "spilled": 10}, 100)
    assert "data-part='managed'" in html and "left:0.00%;width:25.00%" in html
    assert "data-part='unmanaged'" in html and "left:25.00%;width:25.00%" in html
    assert "data-part='spilled'" in html and "left:50.00%;width:10.00%" in html
    assert "data-part='limit'" in html and "calc(100.00% - 2px)" in html
    over = memory_bar({"managed": 150, "unmanaged": 50}, 100)  # above the limit: the mark moves left
    assert "calc(50.00% - 2px)" in over
    assert "data-part='limit'" not in memory_bar({"managed": 1}, 0)


def test_worker_order_is_natural_by_name_then_address():
    names = ["worker-10", "worker-2", "worker-1", "worker-2"]
    addrs = ["tcp://10.0.0.1:9", "tcp://10.0.0.10:1", "tcp://10.0.0.2:1", "tcp://10.0.0.2:1"]
    order = sorted(zip(names, addrs), key=lambda r: worker_order(*r))
    assert order == [("worker-1", "tcp://10.0.0.2:1"), ("worker-2", "tcp://10.0.0.2:1"),
                     ("worker-2", "tcp://10.0.0.10:1"), ("worker-10", "tcp://10.0.0.1:9")]
    assert worker_order("worker-2", "a") < worker_order("worker-10", "a")
    assert worker_order("2", "b") < worker_order("10", "a")               # digits as numbers
    assert worker_order(3, "a") < worker_order("10", "a")                 # a name may be an int
    assert worker_order(None, "tcp://h:2") < worker_order(None, "tcp://h:10")  # no name: its address


def _info(names: dict) -> dict:
    return {"workers": {a: {"name": n, "nthreads": 1, "memory_limit": 2**30,
                            "memory": {"managed": 2**20, "unmanaged": 2**20, "spilled": 0}}
                        for a, n in names.items()}}


def test_table_widget_and_figure_list_workers_in_natural_order():
    from types import SimpleNamespace

    from xsched.jupyter.widgets import ClientWidget

    names = {"tcp://h:1": "worker-10", "tcp://h:2": "worker-2", "tcp://h:3": "worker-1"}
    html = workers_table(_info(names))
    assert html.index("worker-1<") < html.index("worker-2<") < html.index("worker-10<")
    w = ClientWidget(SimpleNamespace(asynchronous=False, scheduler_address="tcp://h:0"))
    w._apply(_info(names))
    rows = [row.value for row in w.workers_box.children]
    assert [r.split("<b>")[1].split("</b>")[0] for r in rows] == ["worker-1", "worker-2", "worker-10"]
    ax = task_stream_figure({a: [] for a in names}, names).axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["worker-1", "worker-2", "worker-10"]


def test_memory_bar_reads_on_dark_and_light_backgrounds():
    html = memory_bar({"managed": 5, "unmanaged": 5, "spilled": 5}, 1000)
    assert "#eee" not in html and "white" not in html
    assert "background:var(--jp-layout-color2, rgba(" in html             # theme track, translucent fallback
    parts = {p: html.split(f"data-part='{p}'")[1].split("background:")[1].split("'")[0]
             for p in ("managed", "unmanaged", "spilled")}
    assert len(set(parts.values())) == 3, parts                          # three distinct looks


def test_static_table_has_one_bar_per_worker():
    info = {"workers": {f"tcp://w{i}": {"name": str(i), "nthreads": 1, "memory_limit": 2**30,
                                        "memory": {"managed": 2**20, "unmanaged": 2**21, "spilled": 0}}
                        for i in range(3)}}
    html = workers_table(info)
    assert html.count("xsched-memory-bar") == 3
    assert "1.00 MiB managed" in html or f"{format_bytes(2**20)} managed" in html


def test_memory_figure_one_line_per_worker_in_each_panel():
    hist = {f"tcp://w{i}": {"name": str(i), "samples": [[100.0 + t, 2**20 * (t + 1), 2**19 * t, 0]
                                                        for t in range(5)]} for i in range(3)}
    fig = memory_figure(hist, {a: 2**30 for a in hist})
    rss, managed = fig.axes
    assert sorted(l.get_gid() for l in rss.lines if l.get_gid()) == sorted(hist)
    assert sorted(l.get_gid() for l in managed.lines if l.get_gid()) == sorted(hist)
    assert any("limit" in l.get_label() for l in rss.lines)  # the limit line (no gid)
    assert rss.lines[0].get_xdata()[0] == 0  # seconds since the first sample
    fig.savefig(__import__("io").BytesIO(), format="png")  # renders headless


def test_task_stream_figure_rows_colours_and_failures():
    logs = {"tcp://a": [("read-1", 10.0, 11.0, "memory"), ("sum-1", 11.0, 11.5, "memory")],
            "tcp://b": [("read-2", 10.5, 12.0, "error")], "tcp://c": []}
    fig = task_stream_figure(logs, {"tcp://a": "0", "tcp://b": "1", "tcp://c": "10"})
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["0", "1", "10"]
    bars = [c for c in ax.collections if c.get_gid()]
    assert sorted({c.get_gid() for c in bars}) == ["tcp://a", "tcp://b"]
    assert sorted(t.get_text() for t in ax.get_legend().get_texts()) == ["read", "sum"]
    failed = [c for c in bars if c.get_hatch()]
    assert len(failed) == 1 and failed[0].get_gid() == "tcp://b"


# ----------------------------------------------------------------------------- on a cluster
def make_data(nbytes):
    return b"x" * nbytes


def slow(i):
    time.sleep(0.01)
    return i


@pytest.fixture
def wclient(module_client):
    return module_client


@pytest.mark.cluster
@pytest.mark.timeout(60)
def test_client_widget_one_bar_per_worker_and_refresh_updates(wclient):
    from xsched.jupyter.widgets import ClientWidget

    w = ClientWidget(wclient)
    w.refresh()
    workers = wclient.scheduler_info()["workers"]
    assert sorted(w.bars) == sorted(workers)
    assert len(w.workers_box.children) == 2
    assert "workers: <b>2</b>" in w.summary.value and "threads: <b>2</b>" in w.summary.value
    for addr, row in w.bars.items():
        assert "xsched-memory-bar" in row.value and "data-part='limit'" in row.value
        assert addr in row.value
    fut = wclient.submit(make_data, 30 * 2**20, workers=[sorted(workers)[0]])
    fut.result()
    addr = sorted(workers)[0]

    def managed_shown():
        w.refresh()
        m = w.info["workers"][addr]["memory"]["managed"]
        return m >= 30 * 2**20 and f"{format_bytes(m)} managed" in w.bars[addr].value

    wait_until(managed_shown, timeout=20, msg="the widget shows the 30 MiB result as managed memory")
    del fut


@pytest.mark.cluster
@pytest.mark.timeout(60)
def test_widget_timer_refreshes_and_stops_with_its_client(wclient):
    from xsched import Client
    from xsched.jupyter.widgets import ClientWidget

    other = Client(wclient.cluster, set_as_default=False)
    w = ClientWidget(other, interval=0.1).start()
    wait_until(lambda: len(w.bars) == 2, msg="the timer drew the workers")
    w.summary.value = "stale"
    wait_until(lambda: w.summary.value != "stale", msg="the timer refreshed again")
    other.close()
    wait_until(lambda: w._timer.done(), msg="the timer stopped with the client")
    assert "(closed)" in w.title.value

    w2 = ClientWidget(wclient, interval=0.1).start()
    timer = w2._timer
    w2.close()
    wait_until(timer.done, msg="close() stops the timer")
    assert w2.widget.comm is None


@pytest.mark.cluster
@pytest.mark.timeout(120)
def test_cluster_widget_scales_in_a_thread():
    from xsched import LocalCluster
    from xsched.jupyter.widgets import ClusterWidget

    with LocalCluster(n_workers=1, threads_per_worker=1) as cluster:
        cw = ClusterWidget(cluster, interval=0.2)
        try:
            cw.refresh()
            assert len(cw.bars) == 1 and cw.n_workers.value == 1
            cw.n_workers.value = 2
            thread = cw.scale()  # what the Scale button does
            assert cw.button.disabled or not thread.is_alive()
            thread.join(60)
            assert cw.scale_status.value == "2 workers", cw.scale_status.value
            assert not cw.button.disabled
            cw.refresh()
            assert len(cw.bars) == 2
            cw.scale(1).join(60)
            cw.refresh()
            assert len(cw.bars) == 1
            cw.scale(-1)
            assert "give 0 or more" in cw.scale_status.value
            assert len(cluster.workers) == 1
        finally:
            cw.close()
        assert cw.client.status == "closed"


@pytest.mark.cluster
@pytest.mark.timeout(60)
def test_display_falls_back_to_static_html_outside_a_kernel(wclient, monkeypatch):
    import IPython.display

    shown = []
    monkeypatch.setattr(IPython.display, "display", lambda *objs, **kw: shown.append((objs, kw)))
    wclient._ipython_display_()
    (objs, kw), = shown
    assert kw.get("raw") is True
    bundle = objs[0]
    assert "xsched Client" in bundle["text/html"] and bundle["text/plain"].startswith("<Client")
    assert bundle["text/html"].count("xsched-memory-bar") == 2

    shown.clear()
    import xsched.jupyter.widgets as widgets

    monkeypatch.setattr(widgets, "in_notebook", lambda: True)  # as in a Jupyter kernel
    wclient._ipython_display_()
    (objs, kw), = shown
    import ipywidgets

    assert isinstance(objs[0], ipywidgets.VBox)


@pytest.mark.cluster
@pytest.mark.timeout(60)
def test_plot_memory_and_task_stream_from_the_cluster(wclient):
    from matplotlib.figure import Figure

    wclient.gather(wclient.map(slow, range(20)))
    workers = wclient.scheduler_info()["workers"]

    def samples():
        hist = wclient._sync(wclient._conn.request({"op": "memory-history"}))[0]["history"]
        return len(hist) == 2 and all(len(h["samples"]) >= 2 for h in hist.values())

    wait_until(samples, timeout=20, msg="two heartbeats from each worker")
    fig = wclient.plot_memory()
    assert isinstance(fig, Figure)
    rss, managed = fig.axes
    assert sorted(l.get_gid() for l in rss.lines if l.get_gid()) == sorted(workers)
    assert sorted(l.get_gid() for l in managed.lines if l.get_gid()) == sorted(workers)

    fig = wclient.task_stream()
    assert isinstance(fig, Figure)
    ax = fig.axes[0]
    names = sorted(str(w["name"]) for w in workers.values())
    assert [t.get_text() for t in ax.get_yticklabels()] == names
    assert "slow" in [t.get_text() for t in ax.get_legend().get_texts()]
    total = sum(len(c.get_paths()) for c in ax.collections if c.get_gid())
    assert total >= 20
    assert isinstance(wclient.task_stream(start="1h"), Figure)
    empty = wclient.task_stream(start=time.time() + 3600)
    assert not [c for c in empty.axes[0].collections if c.get_gid()]
    with pytest.raises(TypeError, match="start"):
        wclient.task_stream(start=[1])


@pytest.mark.cluster
@pytest.mark.timeout(120)
def test_in_a_real_notebook_kernel():
    """Run by nbclient: Client, LocalCluster and progress display as widgets that update
    live from the client's loop thread; figures render as PNG.

    Everything live happens in the first cell: nbclient records only messages whose parent
    is the running cell, and the loop thread's messages carry the cell that started it (a
    Jupyter front end routes widget messages by comm id and shows them whatever the cell)."""
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    cells = [
        "import time\nfrom xsched import Client, LocalCluster, progress\n"
        "cluster = LocalCluster(n_workers=1, threads_per_worker=1)\nclient = Client(cluster)\n"
        "display(client)\ndisplay(cluster)\n"
        "futs = client.map(time.sleep, [0.05] * 10, pure=False)\np = progress(futs)\ndisplay(p)\n"
        "p.wait(30)\n"
        # wait (with a deadline) for the live client widget to show the 10 keys now in memory:
        # it refreshes on its own every second, from the client's loop thread
        "import ipywidgets\nfrom ipywidgets.widgets.widget import _instances\n"
        "def shows_keys():\n"
        "    return any('10 keys' in w.value for w in list(_instances.values()) if isinstance(w, ipywidgets.HTML))\n"
        "deadline = time.monotonic() + 30\n"
        "while not shows_keys() and time.monotonic() < deadline:\n    time.sleep(0.02)\n"
        "print(p.groups, shows_keys())",
        "client.task_stream()",
        "client.close(); cluster.close()",
    ]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    nbclient.NotebookClient(nb, timeout=60, kernel_name="python3", allow_errors=True,
                            store_widget_state=True).execute()
    outs = [cell.outputs for cell in nb.cells]
    errors = [o for out in outs for o in out if o["output_type"] == "error"]
    assert not errors, errors
    views = [o for o in outs[0] if "application/vnd.jupyter.widget-view+json" in o.get("data", {})]
    assert len(views) == 3, outs[0]  # Client, LocalCluster (with its Scale button), progress
    assert [o["text"] for o in outs[0] if o["output_type"] == "stream"] == ["{'sleep': [10, 0, 10]} True\n"]
    assert "image/png" in outs[1][0]["data"]
    state = nb.metadata["widgets"]["application/vnd.jupyter.widget-state+json"]["state"]
    models = [(m["model_name"], m["state"]) for m in state.values()]
    bars = [st for name, st in models if name == "IntProgressModel"]
    assert [(b["value"], b["max"], b["bar_style"]) for b in bars] == [(10, 10, "success")]
    html = [st["value"] for name, st in models if name == "HTMLModel"]
    assert any("sleep: 10 / 10" in h for h in html)
    assert any("10 keys" in h for h in html), html  # a worker row refreshed after the tasks ran
    assert any(st.get("description") == "Scale" for name, st in models if name == "ButtonModel")
