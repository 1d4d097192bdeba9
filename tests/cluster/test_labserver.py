"""The JupyterLab panel's server side (xsched/labserver) through a real jupyter_server.

pytest-jupyter's fixtures are imported by name (not ``pytest_plugins``), so its autouse
fixtures apply to this module only. The session ``cluster`` (2 workers x 1 thread) is
found the way the panel finds every cluster: through the scheduler registry.
"""

from __future__ import annotations

import json
import os
import sys

import pytest

pytest.importorskip("jupyter_server")
pytest.importorskip("pytest_jupyter")

from tornado.httpclient import HTTPClientError  # noqa: E402

# pytest-jupyter's fixtures, by name (module scope: nothing leaks into other test modules)
from pytest_jupyter.jupyter_core import (  # noqa: E402,F401
    echo_kernel_spec, jp_asyncio_loop, jp_config_dir, jp_data_dir, jp_env_config_path,
    jp_env_jupyter_path, jp_environ, jp_home_dir, jp_kernel_dir, jp_runtime_dir, jp_system_config_path,
    jp_system_jupyter_path,
)
from pytest_jupyter.jupyter_server import (  # noqa: E402,F401
    jp_argv, jp_auth_header, jp_base_url, jp_configurable_serverapp, jp_extension_environ, jp_fetch,
    jp_http_port, jp_logging_stream, jp_nbconvert_templates, jp_root_dir, jp_server_cleanup,
    jp_serverapp, jp_template_dir, jp_web_app,
)
from pytest_jupyter.pytest_tornasync import (  # noqa: E402,F401
    http_server, http_server_client, http_server_port, io_loop,
)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
pytestmark = [pytest.mark.timeout(120)]


@pytest.fixture
def jp_server_config():
    return {"ServerApp": {"jpserver_extensions": {"xsched.labserver": True}}}


@pytest.fixture(autouse=True)
def _close_monitor(request):
    """Each test's server gets its own ClusterMonitor: close its clients (and clusters) after."""
    app = request.getfixturevalue("jp_serverapp") if "jp_serverapp" in request.fixturenames else None
    yield
    monitor = app.web_app.settings.get("xsched_monitor") if app is not None else None
    if monitor is not None:
        pending = [f for f in monitor._inflight.values() if not f.done()]
        loop = request.getfixturevalue("jp_asyncio_loop") if "jp_asyncio_loop" in request.fixturenames else None
        if pending and loop is not None and not loop.is_closed():
            import asyncio

            # the last refresh's fetches finish (or time out) on the test's loop, not after it closed
            loop.run_until_complete(asyncio.wait(pending, timeout=15))
        monitor.close()


def _secrets() -> list[str]:
    from xsched.protocol import registry

    return [e["secret"] for e in registry.entries()]


def _assert_no_secret(body: bytes, *also: str) -> None:
    text = body.decode()
    for secret in [*_secrets(), *also]:
        assert secret not in text
    assert '"secret"' not in text and '"signature_scheme"' not in text


# ---------------------------------------------------------------------- no cluster needed
def test_build_matches_source_stamp():
    """CI notices a stale committed build: the stamp of extensions/jupyterlab must match."""
    sys.path.insert(0, os.path.join(ROOT, "extensions", "jupyterlab"))
    try:
        import stamp
    finally:
        sys.path.pop(0)
    assert stamp.check() == []
    with open(os.path.join(ROOT, "xsched", "labextension", "package.json")) as f:
        pkg = json.load(f)
    assert pkg["name"] == "xsched-labextension"
    assert os.path.isfile(os.path.join(ROOT, "xsched", "labextension", pkg["jupyterlab"]["_build"]["load"]))


def test_xsched_importable_without_jupyter_server():
    import subprocess

    code = ("import sys; sys.modules['jupyter_server'] = None; sys.modules['tornado'] = None; "
            "sys.modules['jupyterlab'] = None; import xsched, xsched.labserver, xsched.labserver.clusters; "
            "print(xsched.labserver._jupyter_server_extension_points())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "xsched.labserver" in out.stdout


def test_cluster_cards_are_named_for_people():
    """A chosen name wins; else host and start time; the registry id only as a last resort."""
    import datetime

    from xsched.labserver.clusters import _summary, cluster_name

    started = datetime.datetime(2026, 3, 4, 17, 42).timestamp()
    entry = {"id": "scheduler-22c96cbd", "address": "tcp://127.0.0.1:8786", "hostname": "node7",
             "pid": 4242, "started": started, "secret": "s3cr3t"}
    assert cluster_name(entry) == ("node7 · started 17:42", False)
    assert cluster_name(dict(entry, name="analysis")) == ("analysis", True)
    assert cluster_name(dict(entry, name="  ")) == ("node7 · started 17:42", False)
    out = _summary(dict(entry, name="analysis"), None, "connecting", False)
    assert out["name"] == "analysis" and out["named"] is True and out["pid"] == 4242
    assert "secret" not in out


def test_group_keys_are_capped_and_stories_joined_with_times_and_workers():
    """Keys per group are bounded; a story joins the state's log with what the recorder heard."""
    from types import SimpleNamespace as NS

    from xsched.labserver import clusters

    tasks = {f"x-{i}": NS(key=f"x-{i}", group="x", state="memory" if i % 3 else "released")
             for i in range(200)}
    state = NS(tasks=tasks, transition_hooks=[], log=[])
    tasks["x-199"].state = "processing"  # paused at a breakpoint (the debugging extension's note)
    debugging = NS(paused={"x-199": {"worker": "tcp://127.0.0.1:1"}})
    out = clusters._group_progress(NS(state=state, extensions={"debugging": debugging}), keys_per_group=20)
    (g,) = out["groups"]
    assert g["total"] == 200 and len(g["keys"]) == 20 and g["paused"] == 1
    assert g["states"] == {"memory": 132, "released": 67, "processing": 1}
    assert g["keys"][0] == {"key": "x-199", "state": "processing", "paused": True, "worker": "tcp://127.0.0.1:1"}
    assert all(k["state"] == "memory" for k in g["keys"][1:])       # then in memory first (clickable)
    shown = [int(k["key"].split("-")[1]) for k in g["keys"][1:]]
    assert shown == sorted(shown), shown                             # x-2 before x-10
    assert sum(isinstance(h, clusters._StoryRecorder) for h in state.transition_hooks) == 1
    clusters._group_progress(NS(state=state, extensions={}))        # installed once
    assert len(state.transition_hooks) == 1

    rec = state.transition_hooks[0]
    ws = NS(address="tcp://127.0.0.1:4001")
    ts = NS(key="y-1", processing_on=None, who_has=set(), erred_on=None)
    state.log.append(("y-1", "new", "released", "update-graph-1"))   # logged without a hook
    for start, finish, sid in [("released", "waiting", "update-graph-1"),
                               ("waiting", "processing", "update-graph-1")]:
        state.log.append(("y-1", start, finish, sid))
        rec(ts, start, finish)
    ts.processing_on = ws                                            # assigned after the hook...
    ts.processing_on, ts.who_has = None, [ws]                        # ...and done before another one
    state.log.append(("y-1", "processing", "memory", "task-finished-7"))
    rec(ts, "processing", "memory")
    story = clusters._story("y-1", NS(state=state, story=lambda key: [e for e in state.log if e[0] == key]))
    assert [(e["start"], e["finish"]) for e in story] == [
        ("new", "released"), ("released", "waiting"), ("waiting", "processing"), ("processing", "memory")]
    assert story[0]["time"] == story[1]["time"] and story[0]["worker"] is None   # same stimulus, same time
    assert story[1]["worker"] is None                                # waiting: on no worker
    assert story[2]["worker"] == story[3]["worker"] == "tcp://127.0.0.1:4001"
    assert story[3]["stimulus_id"] == "task-finished-7"
    assert story[1]["time"] <= story[2]["time"] <= story[3]["time"]
    # a task the recorder cannot read is not noted, and the scheduler's transition goes on
    rec(NS(key="z-1", processing_on=object(), who_has=[], erred_on=None), "waiting", "processing")
    assert rec.entries_of("z-1") == [] and len(rec.entries_of("y-1")) == 3


def test_a_long_group_pass_is_not_asked_again_until_its_share_allows(monkeypatch):
    """The panel's group pass walks every task in the scheduler: one that took long is shown
    again (not asked) until PROGRESS_SHARE of the time since allows the next."""
    from xsched.labserver import clusters

    asked = []

    class Scheduler:  # (a client whose scheduler answers the group pass in `cost` seconds)
        def scheduler_info(self):
            return {"workers": {}}

        def run_on_scheduler(self, func):
            asked.append(func)
            return {"groups": [{"name": f"g{len(asked)}"}], "cost": cost}

    monitor = clusters.ClusterMonitor(interval=1.0)
    monitor._client = lambda address: Scheduler()
    now = [1000.0]
    monkeypatch.setattr(clusters.time, "monotonic", lambda: now[0])
    entry = {"address": "tcp://127.0.0.1:1"}
    try:
        cost = 0.004  # a few thousand tasks: asked at every refresh
        assert monitor._fetch(entry)[1]["groups"] == [{"name": "g1"}]
        now[0] += 1.0
        assert monitor._fetch(entry)[1]["groups"] == [{"name": "g2"}]
        assert monitor._fetch(entry)[1]["groups"] == [{"name": "g2"}]  # (within the refresh interval)
        cost = 0.4  # a million tasks: 0.4 s of the scheduler's time, so not again for 0.4 / share
        now[0] += 1.0
        assert monitor._fetch(entry)[1]["groups"] == [{"name": "g3"}]
        wait = cost / clusters.PROGRESS_SHARE
        now[0] += wait - 1.0
        assert monitor._fetch(entry)[1]["groups"] == [{"name": "g3"}] and len(asked) == 3  # shown again
        now[0] += 1.001
        assert monitor._fetch(entry)[1]["groups"] == [{"name": "g4"}] and len(asked) == 4
    finally:
        monitor._pool.shutdown()


def test_unauthenticated_requests_refused(jp_asyncio_loop, jp_serverapp, http_server_client, jp_base_url):
    async def go():
        results = {}
        for method, path, body in [("GET", "xsched/api/clusters", None),
                                   ("POST", "xsched/api/clusters", "{}"),
                                   ("GET", "xsched/api/clusters/x", None),
                                   ("PATCH", "xsched/api/clusters/x", '{"workers": 1}'),
                                   ("DELETE", "xsched/api/clusters/x", None),
                                   ("POST", "xsched/api/clusters/x/kernels", '{"target": "scheduler"}'),
                                   ("GET", "xsched/api/clusters/x/story?key=a", None),
                                   ("GET", "xsched/api/clusters/x/group?name=a", None),
                                   ("GET", "xsched/api/ws", None)]:
            r = await http_server_client.fetch(jp_base_url + path, method=method, body=body,
                                               raise_error=False, follow_redirects=False,
                                               headers={"Authorization": "token wrong"})
            results[(method, path)] = r.code
        return results

    results = jp_asyncio_loop.run_until_complete(go())
    # API handlers answer 403; a GET of a page-like handler may redirect to the login page
    assert all(code in (401, 403, 302) for code in results.values()), results
    assert results[("GET", "xsched/api/clusters")] == 403


def test_cookie_session_write_without_xsrf_refused(jp_asyncio_loop, jp_serverapp, http_server_client,
                                                   jp_base_url, jp_fetch):
    """A browser session (cookie, no token) must send the XSRF header on writes."""
    async def go():
        page = await http_server_client.fetch(jp_base_url + "login", raise_error=False)
        xsrf = [c.split(";")[0].split("=", 1)[1] for c in page.headers.get_list("Set-Cookie")
                if c.startswith("_xsrf=")][0]
        login = await http_server_client.fetch(
            jp_base_url + "login", method="POST", follow_redirects=False, raise_error=False,
            body=f"password={jp_serverapp.identity_provider.token}&_xsrf={xsrf}",
            headers={"Cookie": f"_xsrf={xsrf}"})
        cookies = "; ".join(c.split(";")[0] for c in login.headers.get_list("Set-Cookie"))
        get = await http_server_client.fetch(jp_base_url + "xsched/api/clusters", headers={"Cookie": cookies},
                                             raise_error=False)
        post = await http_server_client.fetch(jp_base_url + "xsched/api/clusters/x", method="DELETE",
                                              headers={"Cookie": cookies}, raise_error=False)
        return login.code, get.code, post.code

    login, get, post = jp_asyncio_loop.run_until_complete(go())
    assert login == 302
    assert get == 200          # a GET with the session cookie is fine
    assert post == 403         # a write without the XSRF token is not


# ---------------------------------------------------------------------- with the session cluster
@pytest.mark.cluster
def test_clusters_listed_without_secrets(jp_asyncio_loop, jp_fetch, cluster):
    async def go():
        r = await jp_fetch("xsched", "api", "clusters")
        return r

    r = jp_asyncio_loop.run_until_complete(go())
    clusters = json.loads(r.body)
    _assert_no_secret(r.body)
    mine = [c for c in clusters if c["address"] == cluster.scheduler_address]
    assert len(mine) == 1, clusters
    c = mine[0]
    assert c["status"] == "running" and c["workers"] == 2 and c["threads"] == 2
    assert c["memory"] > 0 and c["owned"] is False and c["id"] and c["name"]


@pytest.mark.cluster
def test_detail_story_and_worker_console(jp_asyncio_loop, jp_fetch, jp_serverapp, own_cluster):
    """On a cluster of its own: the worker keeps the embedded kernel after the test."""
    from xsched import Client

    cluster = own_cluster(n_workers=2)
    client = Client(cluster, set_as_default=False)
    request_close = client.close
    futs = client.map(lambda x: x + 1, range(5), key=[f"lab-inc-{i}" for i in range(5)])
    assert client.gather(futs) == [1, 2, 3, 4, 5]

    async def go():
        clusters = json.loads((await jp_fetch("xsched", "api", "clusters")).body)
        cid = [c for c in clusters if c["address"] == cluster.scheduler_address][0]["id"]
        r = await jp_fetch("xsched", "api", "clusters", cid)
        _assert_no_secret(r.body)
        detail = json.loads(r.body)
        story = await jp_fetch("xsched", "api", "clusters", cid, "story", params={"key": "lab-inc-0"})
        _assert_no_secret(story.body)
        group = json.loads((await jp_fetch("xsched", "api", "clusters", cid, "group",
                                           params={"name": "lab-inc"})).body)
        assert group["group"] == "lab-inc" and group["total"] == 5
        assert [(k["key"], k["state"]) for k in group["keys"]] == [(f"lab-inc-{i}", "memory") for i in range(5)]
        assert all(k["worker"].startswith("tcp://") for k in group["keys"])
        # the panel watches this scheduler now: later transitions are noted with times and workers
        assert client.gather(client.map(lambda x: x * 10, range(3), key=[f"lab-later-{i}" for i in range(3)])) \
            == [0, 10, 20]
        later = json.loads((await jp_fetch("xsched", "api", "clusters", cid, "story",
                                           params={"key": "lab-later-1"})).body)
        worker = detail["workers"][0]["address"]
        k = await jp_fetch("xsched", "api", "clusters", cid, "kernels", method="POST",
                           body=json.dumps({"target": worker}))
        _assert_no_secret(k.body)
        kid = json.loads(k.body)["id"]
        again = json.loads((await jp_fetch("xsched", "api", "clusters", cid, "kernels", method="POST",
                                           body=json.dumps({"target": worker}))).body)["id"]
        listed = json.loads((await jp_fetch("api", "kernels")).body)
        km = jp_serverapp.kernel_manager.get_kernel(kid)
        kernel_key = km.session.key.decode()
        assert len(kernel_key) > 8
        _assert_no_secret(k.body, kernel_key)
        kc = km.client()
        kc.start_channels()
        try:
            await kc.wait_for_ready(timeout=20)
            kc.execute("", user_expressions={"a": "worker.address"})
            while True:
                reply = await kc.get_shell_msg(timeout=20)
                if reply["msg_type"] == "execute_reply":
                    break
        finally:
            kc.stop_channels()
        # a console's "shut down" only detaches: the kernel keeps running in the worker
        await jp_fetch("api", "kernels", kid, method="DELETE")
        after = json.loads((await jp_fetch("api", "kernels")).body)
        bad = await jp_fetch("xsched", "api", "clusters", cid, "kernels", method="POST",
                             body=json.dumps({"target": "tcp://127.0.0.1:1"}), raise_error=False)
        scale = await jp_fetch("xsched", "api", "clusters", cid, method="PATCH",
                               body=json.dumps({"workers": 1}), raise_error=False)
        return detail, json.loads(story.body), worker, kid, again, listed, reply, after, bad, scale, later

    detail, story, worker, kid, again, listed, reply, after, bad, scale, later = \
        jp_asyncio_loop.run_until_complete(go())
    assert detail["n_workers"] == 2 and len(detail["workers"]) == 2
    row = detail["workers"][0]
    assert {"address", "name", "nthreads", "managed", "unmanaged", "spilled", "memory_limit", "processing"} <= set(row)
    assert row["nthreads"] == 1
    groups = {g["name"]: g for g in detail["groups"]}
    assert "lab-inc" in groups and groups["lab-inc"]["states"].get("memory") == 5
    assert story["key"] == "lab-inc-0"
    assert any(entry["finish"] == "memory" for entry in story["story"]), story
    assert all(set(e) == {"time", "start", "finish", "worker", "stimulus_id"} for e in story["story"])
    assert story["now"].startswith("in memory on tcp://"), story["now"]  # the scheduler's own words
    rows = later["story"]
    addresses = {w["address"] for w in detail["workers"]}
    ran = [e for e in rows if e["finish"] == "processing"]
    done = [e for e in rows if e["finish"] == "memory"]
    assert ran and done, rows
    assert ran[-1]["worker"] in addresses and done[-1]["worker"] in addresses, rows
    assert ran[-1]["time"] is not None and done[-1]["time"] >= ran[-1]["time"], rows
    assert detail["name"] and "named" in detail
    assert again == kid                                  # the same kernel, attached once
    assert kid in {k["id"] for k in listed}
    expr = reply["content"]["user_expressions"]["a"]
    assert expr["status"] == "ok" and expr["data"]["text/plain"] == repr(worker)
    assert kid not in {k["id"] for k in after}
    assert client.run(lambda: __import__("xsched.jupyter.kernel", fromlist=["x"]).kernel_info() is not None,
                      workers=[worker])[worker]      # still running in the worker
    assert bad.code == 404
    assert scale.code == 403                                # not started by the panel
    request_close()


async def _subscribed_socket(port, base_url: str, headers: dict, address: str) -> tuple:
    """A websocket to the panel's updates, subscribed to the cluster at ``address`` (every
    500 ms), and the cluster's id, read from the first clusters message."""
    from tornado.httpclient import HTTPRequest
    from tornado.websocket import websocket_connect

    url = f"ws://127.0.0.1:{port}{base_url}xsched/api/ws"
    ws = await websocket_connect(HTTPRequest(url, headers=headers))
    first = json.loads(await ws.read_message())
    cid = [c for c in first["clusters"] if c["address"] == address][0]["id"]
    ws.write_message(json.dumps({"subscribe": cid, "interval": 500}))
    return ws, cid, first


@pytest.mark.cluster
def test_websocket_pushes_clusters_and_detail(jp_asyncio_loop, jp_serverapp, jp_http_port, jp_base_url,
                                              jp_auth_header, http_server_client, cluster):
    from tornado.httpclient import HTTPRequest
    from tornado.websocket import websocket_connect

    async def go():
        url = f"ws://127.0.0.1:{jp_http_port}{jp_base_url}xsched/api/ws"
        ws, cid, first = await _subscribed_socket(jp_http_port, jp_base_url, jp_auth_header, cluster.scheduler_address)
        detail = None
        raw = []
        for _ in range(10):
            text = await ws.read_message()
            raw.append(text)
            msg = json.loads(text)
            if msg["type"] == "detail":
                detail = msg
                break
        ws.close()
        refused = None
        try:
            await websocket_connect(HTTPRequest(url, headers={"Authorization": "token wrong"}))
        except HTTPClientError as e:
            refused = e.code
        return first, detail, raw, refused

    first, detail, raw, refused = jp_asyncio_loop.run_until_complete(go())
    assert first["type"] == "clusters"
    assert detail is not None and len(detail["detail"]["workers"]) == 2
    for text in raw:
        _assert_no_secret(text.encode())
    assert refused in (401, 403, 302)


@pytest.mark.cluster
def test_a_quick_watch_carries_the_clusters_message(jp_asyncio_loop, jp_serverapp, jp_http_port, jp_base_url,
                                                    jp_auth_header, http_server_client, cluster, monkeypatch):
    """While panes watch at least as often as the sidebar's interval, the clusters message and
    the subscribed detail are written by the watch, just before one of its telemetry messages
    (one browser frame for both); a slower watch leaves them to their own loop again."""
    import asyncio

    from xsched.labserver.handlers import UpdatesHandler

    written = []  # (type, the coroutine that wrote it)
    plain = UpdatesHandler.write_message

    def recording(self, message, binary=False):
        task = asyncio.current_task()
        written.append((json.loads(message)["type"], task.get_coro().__qualname__ if task else None))
        return plain(self, message, binary)

    monkeypatch.setattr(UpdatesHandler, "write_message", recording)

    async def read_until(ws, n_clusters):
        """Messages until ``n_clusters`` more clusters messages came, the message after the last too."""
        seen = 0
        while True:
            msg = json.loads(await asyncio.wait_for(ws.read_message(), 30))
            if seen == n_clusters:
                return
            seen += msg["type"] == "clusters"

    async def go():
        ws, cid, _ = await _subscribed_socket(jp_http_port, jp_base_url, jp_auth_header, cluster.scheduler_address)
        ws.write_message(json.dumps({"type": "watch", "cluster": cid, "panes": ["workers"], "interval": 0.25}))
        while json.loads(await ws.read_message())["type"] != "telemetry":
            pass
        start = len(written)
        await read_until(ws, 3)
        quick = written[start:]
        ws.write_message(json.dumps({"type": "watch", "cluster": cid, "panes": ["workers"], "interval": 2.0}))
        await read_until(ws, 1)  # (one the quick watch may still have carried)
        start = len(written)
        await read_until(ws, 2)
        slow = written[start:]
        ws.close()
        return quick, slow

    quick, slow = jp_asyncio_loop.run_until_complete(go())
    carried = [i for i, (kind, _) in enumerate(quick) if kind == "clusters"]
    assert len(carried) >= 3, quick
    for i in carried:
        assert quick[i][1] == quick[i + 1][1] == quick[i + 2][1] == "UpdatesHandler._watch", quick
        assert [kind for kind, _ in quick[i:i + 3]] == ["clusters", "detail", "telemetry"], quick
    assert {who for kind, who in slow if kind in ("clusters", "detail")} == {"UpdatesHandler._push"}, slow


@pytest.mark.cluster
def test_panel_cluster_start_scale_shutdown(jp_asyncio_loop, jp_fetch, jp_serverapp):
    """A cluster started from the panel is owned by the server: it can be scaled and shut down."""
    async def go():
        r = await jp_fetch("xsched", "api", "clusters", method="POST", body=json.dumps({"workers": 1}),
                           request_timeout=120)
        assert r.code == 201
        _assert_no_secret(r.body)
        cid = json.loads(r.body)["id"]
        listed = json.loads((await jp_fetch("xsched", "api", "clusters")).body)
        mine = [c for c in listed if c["id"] == cid]
        await jp_fetch("xsched", "api", "clusters", cid, method="PATCH", body=json.dumps({"workers": 2}),
                       request_timeout=120)
        for _ in range(100):
            detail = json.loads((await jp_fetch("xsched", "api", "clusters", cid)).body)
            if len(detail["workers"]) == 2:
                break
            await __import__("asyncio").sleep(0.2)
        bad = await jp_fetch("xsched", "api", "clusters", cid, method="PATCH", body='{"workers": "many"}',
                             raise_error=False)
        d = await jp_fetch("xsched", "api", "clusters", cid, method="DELETE", request_timeout=120)
        gone = await jp_fetch("xsched", "api", "clusters", cid, raise_error=False)
        return mine, detail, bad.code, d.code, gone.code

    mine, detail, bad, deleted, gone = jp_asyncio_loop.run_until_complete(go())
    assert len(mine) == 1 and mine[0]["owned"] is True
    assert len(detail["workers"]) == 2
    assert bad == 400
    assert deleted == 204
    assert gone == 404


@pytest.mark.cluster
def test_scheduler_console_kernel(jp_asyncio_loop, jp_fetch, jp_serverapp, own_cluster):
    """The scheduler's embedded kernel, attached through the server: `scheduler` is the live one.
    The cluster's chosen name reaches the panel through its registry entry."""
    c = own_cluster(n_workers=1, name="lab console")

    async def go():
        clusters = json.loads((await jp_fetch("xsched", "api", "clusters")).body)
        mine = [x for x in clusters if x["address"] == c.scheduler_address][0]
        assert (mine["name"], mine["named"]) == ("lab console", True), mine
        cid = mine["id"]
        k = await jp_fetch("xsched", "api", "clusters", cid, "kernels", method="POST",
                           body=json.dumps({"target": "scheduler"}), request_timeout=90)
        kid = json.loads(k.body)["id"]
        km = jp_serverapp.kernel_manager.get_kernel(kid)
        _assert_no_secret(k.body, km.session.key.decode())
        kc = km.client()
        kc.start_channels()
        try:
            await kc.wait_for_ready(timeout=20)
            kc.execute("", user_expressions={"a": "scheduler.address", "n": "len(scheduler.state.workers)"})
            while True:
                reply = await kc.get_shell_msg(timeout=20)
                if reply["msg_type"] == "execute_reply":
                    break
        finally:
            kc.stop_channels()
        restart = await jp_fetch("api", "kernels", kid, "restart", method="POST", body="{}", raise_error=False)
        await jp_fetch("api", "kernels", kid, method="DELETE")
        return reply, restart.code

    reply, restart = jp_asyncio_loop.run_until_complete(go())
    ue = reply["content"]["user_expressions"]
    assert ue["a"]["data"]["text/plain"] == repr(c.scheduler_address)
    assert ue["n"]["data"]["text/plain"] == "1"
    assert restart >= 400  # not ours to restart


@pytest.mark.cluster
def test_unreachable_cluster_does_not_hold_up_the_others(jp_asyncio_loop, jp_fetch, jp_serverapp, cluster):
    """A registry entry whose scheduler does not answer is shown as such, without its secret,
    and the live clusters are listed without waiting for it."""
    import socket
    import time

    from xsched.protocol import registry
    from xsched.protocol.security import Security

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    sec = Security.generate()
    # (still longer than a refresh waits for a cluster, 2 s, so the listing cannot have waited
    # for the connect to fail; shorter than the default 5 s, which the teardown waits out)
    jp_serverapp.web_app.settings["xsched_monitor"].connect_timeout = 2.5
    path = registry.register(f"tcp://127.0.0.1:{port}", sec, "scheduler-lab-unreachable")
    try:
        async def go():
            t0 = time.monotonic()
            r = await jp_fetch("xsched", "api", "clusters", request_timeout=30)
            return r, time.monotonic() - t0

        r, took = jp_asyncio_loop.run_until_complete(go())
    finally:
        registry.unregister(path)
    assert sec.secret not in r.body.decode()
    clusters = {c["id"]: c for c in json.loads(r.body)}
    assert clusters["scheduler-lab-unreachable"]["status"] in ("connecting", "unreachable")
    live = [c for c in clusters.values() if c["address"] == cluster.scheduler_address]
    assert live and live[0]["status"] == "running"
    assert took < 6, took


@pytest.mark.cluster
def test_the_profile_part_samples_the_workers_while_polled(own_cluster, tmp_path):
    """Polls asking for "profile" have the workers sample their task threads; the reply's
    rows are one call tree per task prefix with the running task's function under it."""
    from xsched import Client
    from xsched.protocol import ops
    from tests.support import helpers
    from tests.support.helpers import spin_until, wait_until

    # (spin_until comes from tests/support/helpers.py: defined in this module, it made each
    # worker import this module, jupyter_server and all, before the task reached it, seconds
    # during which the samples showed the import machinery instead)
    cluster = own_cluster(n_workers=2)
    client = Client(cluster, set_as_default=False)
    gate, futs = str(tmp_path / "open"), []
    try:
        def ask():
            return client._sync(client._conn.request({"op": ops.TELEMETRY, "parts": ["profile"]}, timeout=10))[0]

        first = ask()["profile"]
        assert first["rows"] == [] and first["samples"] == 0 and first["since"] > 0  # (nothing ran yet)
        futs = [client.submit(spin_until, gate, key=f"profiled-spin-{i}") for i in range(2)]

        def spun():
            rows = ask()["profile"]["rows"]
            under = False
            for depth, function, filename, count, own in rows:
                if depth == 0:
                    under = function == "profiled-spin"
                elif under and function == "spin_until" and filename == helpers.__file__:
                    return rows
            return None

        rows = wait_until(spun, timeout=30, msg="spin_until sampled under its task prefix")
        top = [r for r in rows if r[0] == 0]
        assert [r[1] for r in top][0] == "profiled-spin" and all(r[3] > 0 for r in rows)
        profile = ask()["profile"]
        assert profile["samples"] == sum(r[3] for r in profile["rows"] if r[0] == 0)
        assert all(r[3] >= r[4] >= 0 for r in profile["rows"])  # (samples through a node >= ending in it)
        # a reset (the pane's Reset button) starts the profile again from now
        reset = client._sync(client._conn.request({"op": ops.TELEMETRY, "parts": ["profile"], "reset": ["profile"]},
                                                  timeout=10))[0]["profile"]
        assert reset["samples"] == 0 and reset["rows"] == [] and reset["since"] > profile["since"]
        with pytest.raises(Exception, match="reset"):  # only the profile's history can be restarted
            client._sync(client._conn.request({"op": ops.TELEMETRY, "reset": ["logs"]}, timeout=10))
    finally:
        open(gate, "w").close()
        client.gather(futs)
        client.close()


# ---------------------------------------------------------------------- telemetry (the main-area panes)
@pytest.mark.cluster
def test_telemetry_op_on_a_real_scheduler(own_cluster):
    """One request answers runs since a cursor, worker rows, group counts and memory samples."""
    from xsched import Client
    from xsched.protocol import ops
    from xsched.scheduler.extensions.telemetry import rows_of
    from tests.support.helpers import wait_until

    cluster = own_cluster(n_workers=2)
    client = Client(cluster, set_as_default=False)
    try:
        def ask(**fields):
            return client._sync(client._conn.request({"op": ops.TELEMETRY, **fields}, timeout=10))[0]

        first = ask()
        assert first["task_stream"]["runs"]["keys"] == [] and len(first["workers"]) == 2
        futs = client.map(lambda x: x + 1, range(20), key=[f"tele-inc-{i}" for i in range(20)])
        assert client.gather(futs) == list(range(1, 21))
        reply = ask(since=first["task_stream"]["index"])
        runs = rows_of(reply["task_stream"]["runs"])
        assert sorted(r[0] for r in runs) == sorted(f"tele-inc-{i}" for i in range(20))
        addresses = {w["address"] for w in reply["workers"]}
        assert all(r[1] == "tele-inc" and r[2] in addresses and r[4] >= r[3] for r in runs)
        groups = {g["name"]: g for g in reply["groups"]}
        assert groups["tele-inc"]["done"] == 20 and groups["tele-inc"]["total"] == 20
        assert all(w["nthreads"] == 1 and w["memory_limit"] > 0 for w in reply["workers"])
        # memory samples arrive with heartbeats; the cursor sent back gives only newer ones
        later = wait_until(lambda: (r := ask(parts=["memory"], memory_since=reply["memory_since"]))
                           and any(r["memory"].values()) and r, timeout=20, msg="a new memory sample")
        for address, samples in later["memory"].items():
            assert all(s[0] > reply["memory_since"][address] for s in samples)
        assert ask(since=reply["task_stream"]["index"], parts=["task-stream"])["task_stream"]["runs"]["keys"] == []

        # logs: the scheduler's and each worker's records, at most LOG_RECORDS each; with the
        # cursors sent back, only what came since (a worker's after the scheduler asked it again)
        from xsched.scheduler.extensions.telemetry import LOG_RECORDS

        def note(text):
            import logging
            logging.getLogger("xsched.user").warning(text)

        client.run_on_scheduler(note, "telemetry-logs: the scheduler's note")
        logs = ask(parts=["logs"])
        assert set(logs["logs"]) == {"scheduler"} | addresses
        assert all(len(records) <= LOG_RECORDS for records in logs["logs"].values())
        assert any("telemetry-logs: the scheduler's note" in r[2] for r in logs["logs"]["scheduler"])
        worker = sorted(addresses)[0]
        client.run(note, "telemetry-logs: a worker's note", workers=[worker])
        cursors = logs["logs_since"]

        def the_worker_s_note():
            r = ask(parts=["logs"], logs_since=cursors)
            return [rec for rec in r["logs"][worker] if "telemetry-logs: a worker's note" in rec[2]] and r

        later = wait_until(the_worker_s_note, timeout=20, msg="the worker's new log record")
        assert all(rec[0] >= cursors[worker] for rec in later["logs"][worker])
        assert not any("the scheduler's note" in r[2] for r in later["logs"]["scheduler"])  # sent once
        assert ask(parts=["logs"], logs_since=later["logs_since"])["logs"][worker] == []
    finally:
        client.close()


@pytest.mark.cluster
def test_websocket_watch_batches_telemetry_and_forgets_a_closed_browser(
        jp_asyncio_loop, jp_serverapp, jp_http_port, jp_base_url, jp_auth_header, http_server_client, own_cluster):
    """A watch gets one telemetry message per interval (never one per task); bad watch messages
    are answered, an unknown cluster is "gone", and a closed socket leaves no task behind."""
    import asyncio
    import time

    from tornado.httpclient import HTTPRequest
    from tornado.websocket import websocket_connect

    from xsched import Client

    cluster = own_cluster(n_workers=2)
    client = Client(cluster, set_as_default=False)

    def note():
        import logging
        logging.getLogger("xsched.user").warning("a note for the logs pane")

    client.run_on_scheduler(note)

    def watch_tasks():
        return [t for t in asyncio.all_tasks() if "UpdatesHandler._watch" in repr(t.get_coro()) and not t.done()]

    async def go():
        url = f"ws://127.0.0.1:{jp_http_port}{jp_base_url}xsched/api/ws"
        ws = await websocket_connect(HTTPRequest(url, headers=jp_auth_header))
        cid = None
        while cid is None:
            msg = json.loads(await ws.read_message())
            if msg["type"] == "clusters":
                mine = [c for c in msg["clusters"] if c["address"] == cluster.scheduler_address]
                cid = mine[0]["id"] if mine else None
        for bad in ("not json", json.dumps([1]), json.dumps({"type": "watch", "cluster": 7}),
                    json.dumps({"type": "watch", "cluster": cid, "panes": ["nope"]}),
                    json.dumps({"type": "watch", "cluster": cid, "panes": ["progress"], "interval": "soon"})):
            ws.write_message(bad)
        ws.write_message(json.dumps({"type": "watch", "cluster": "scheduler-no-such", "panes": ["workers"]}))
        ws.write_message(json.dumps({"type": "watch", "cluster": cid, "interval": 0.25,
                                     "panes": ["task-stream", "progress", "worker-memory", "workers", "timeline",
                                               "logs"]}))
        loop = asyncio.get_running_loop()
        work = loop.run_in_executor(None, lambda: client.gather(client.map(
            lambda x: x * 2, range(400), key=[f"ws-double-{i}" for i in range(400)])))
        errors, gone, telemetry, runs = [], [], [], 0
        t0 = time.monotonic()
        while True:
            msg = json.loads(await asyncio.wait_for(ws.read_message(), 30))
            if msg["type"] == "telemetry-error":
                errors.append(msg)
            elif msg["type"] == "telemetry" and msg.get("gone"):
                gone.append(msg)
            elif msg["type"] == "telemetry" and msg["cluster"] == cid:
                telemetry.append((time.monotonic(), msg))
                runs += sum(r.startswith("ws-double-") for r in msg["task_stream"]["runs"]["keys"])
                groups = {g["name"]: g for g in msg["groups"]}
                if work.done() and groups.get("ws-double", {}).get("done") == 400 and runs == 400:
                    break
        elapsed = time.monotonic() - t0
        await work
        during = len(watch_tasks())
        # a second browser watches a pane that asks on demand only (the story), then disconnects:
        # it hears the cluster is there, no telemetry; its watch goes with it
        ws2 = await websocket_connect(HTTPRequest(url, headers=jp_auth_header))
        ws2.write_message(json.dumps({"type": "watch", "cluster": cid, "panes": ["story"], "interval": 0.25}))
        while (story_msg := json.loads(await asyncio.wait_for(ws2.read_message(), 30)))["type"] != "telemetry":
            pass
        assert story_msg["cluster"] == cid and not {"task_stream", "workers", "logs", "memory"} & set(story_msg)
        two = len(watch_tasks())
        ws2.close()
        for _ in range(200):
            if len(watch_tasks()) == 1:
                break
            await asyncio.sleep(0.05)
        after_close = len(watch_tasks())
        # the cluster goes away: the watch says so once, and ends
        client.close()
        await loop.run_in_executor(None, cluster.close)
        while True:
            msg = json.loads(await asyncio.wait_for(ws.read_message(), 30))
            if msg["type"] == "telemetry" and msg.get("gone"):
                gone.append(msg)
                break
        after_gone = len(watch_tasks())
        ws.close()
        return errors, gone, telemetry, runs, elapsed, (during, two, after_close), after_gone

    errors, gone, telemetry, runs, elapsed, during, after_gone = jp_asyncio_loop.run_until_complete(go())
    assert len(errors) == 3, errors            # the three watch messages with bad fields (others ignored)
    assert any("unknown pane 'nope'" in e["error"] for e in errors)
    assert [g["cluster"] for g in gone] == ["scheduler-no-such", cid_of(telemetry)]
    assert after_gone == 0                       # a gone cluster's watch ended
    assert runs == 400                          # every run once, across the batches
    assert len(telemetry) <= elapsed / 0.25 + 3, (len(telemetry), elapsed)   # batched: per interval
    # the log records and memory samples come once each: the cursors advance between messages
    numbers = [(source, r[0]) for _, m in telemetry for source, records in m["logs"].items() for r in records]
    assert numbers and len(numbers) == len(set(numbers))
    samples = [(a, s[0]) for _, m in telemetry for a, ss in m["memory"].items() for s in ss]
    assert samples and len(samples) == len(set(samples))
    last = telemetry[-1][1]
    assert len(last["workers"]) == 2 and {"managed", "unmanaged", "spilled", "memory_limit", "cpu"} <= set(
        last["workers"][0])
    _assert_no_secret(json.dumps(last).encode())
    assert during == (1, 2, 1), during           # the disconnected browser's watch is gone

    monitor = jp_serverapp.web_app.settings["xsched_monitor"]

    async def settle():
        for _ in range(400):
            # (and the monitor's last fetch of the stopped cluster, so that the test's loop closes clean)
            if not watch_tasks() and all(f.done() for f in monitor._inflight.values()):
                return True
            await asyncio.sleep(0.05)
        return False

    assert jp_asyncio_loop.run_until_complete(settle()), "a closed browser left its watch running"


def cid_of(telemetry: list) -> str:
    """The cluster id of the telemetry messages (time, message) received."""
    (cid,) = {m["cluster"] for _, m in telemetry}
    return cid
