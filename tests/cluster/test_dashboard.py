"""The dashboard page a scheduler serves (xsched/dashboard/server.py), over real HTTP from real
LocalClusters and `xsched scheduler` processes: the link a client is given, the page, its
assets and its telemetry API; the token (403 without it or with another, 404 for an unknown
path with it); no page with ``dashboard_address=None`` (nothing more listens); a port taken
falls back to a free one, and the scheduler says so.

The browser side (the panes drawing what the API returns) is tests/system/test_dashboard_browser.py.
"""

from __future__ import annotations

import json
import logging
import os
import re
import socket
import urllib.error
import urllib.parse
import urllib.request

import psutil
import pytest

import xsched
from xsched import Client, LocalCluster
from xsched.protocol.registry import read_scheduler_file
from xsched.scheduler.extensions.telemetry import rows_of

from tests.support.procs import cli_env, read_line

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(90)]

TOKEN = re.compile(r"[0-9a-f]{64}")


def inc(x):
    return x + 1


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


_opener = urllib.request.build_opener(_NoRedirect)


def get(url: str, method: str = "GET", body: bytes | None = None, **headers) -> tuple[int, dict, bytes]:
    """(status, headers, body) of one request, errors included (no redirect is followed)."""
    request = urllib.request.Request(url, data=body, method=method, headers=headers)
    try:
        with _opener.open(request, timeout=30) as r:
            return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()


def split_link(link: str) -> tuple[str, str]:
    """(the page's origin, its token) of a dashboard link."""
    url = urllib.parse.urlsplit(link)
    assert url.path == "/status", link
    return f"{url.scheme}://{url.netloc}", urllib.parse.parse_qs(url.query)["token"][0]


def listening_ports(pid: int) -> set[int]:
    return {c.laddr.port for c in psutil.Process(pid).net_connections("tcp") if c.status == psutil.CONN_LISTEN}


def test_the_link_opens_the_page_its_assets_and_the_telemetry(client, cluster):
    link = client.dashboard_link
    assert link == cluster.dashboard_link
    origin, token = split_link(link)
    assert origin.startswith("http://127.0.0.1:") and TOKEN.fullmatch(token)
    assert token != cluster.security.secret and cluster.security.secret not in link
    assert link in repr(client) and link in repr(cluster)
    assert f'href="{link}"' in client._repr_html_() and f'href="{link}"' in cluster._repr_html_()

    assert client.gather(client.map(inc, range(10))) == list(range(1, 11))
    status, headers, body = get(link)
    assert status == 200 and headers["Content-Type"].startswith("text/html")
    assert b"static/xsched-dashboard.js" in body and b'data-scheduler="' + cluster.scheduler_address.encode() in body
    assert "default-src 'none'" in headers["Content-Security-Policy"] and "Server" not in headers
    cookie = headers["Set-Cookie"]
    assert cookie.startswith(f"xsched-dashboard-{urllib.parse.urlsplit(origin).port}={token}")
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and "Path=/" in cookie
    jar = cookie.split(";")[0]

    # the page's assets and API with the cookie alone, as the browser sends them
    for asset, kind in (("xsched-dashboard.js", "text/javascript"), ("xsched-dashboard.css", "text/css")):
        status, headers, body = get(f"{origin}/static/{asset}", Cookie=jar)
        assert status == 200 and headers["Content-Type"].startswith(kind) and len(body) > 1000
    status, headers, body = get(f"{origin}/api/telemetry?parts=task-stream,workers,groups&interval=0.01", Cookie=jar)
    assert status == 200 and headers["Content-Type"].startswith("application/json") and "Set-Cookie" not in headers
    reply = json.loads(body)
    assert reply["interval"] == 0.25  # clamped
    assert sorted(w["address"] for w in reply["workers"]) == sorted(client.scheduler_info()["workers"])
    runs = rows_of(reply["task_stream"]["runs"])
    mine = [r for r in runs if r[1] == "inc"]
    assert len(mine) >= 10 and all(r[2] in {w["address"] for w in reply["workers"]} and r[5] == "memory"
                                   for r in mine)
    # the cursor: nothing new since the index it gave, then exactly the new runs
    since = reply["task_stream"]["index"]
    status, _, body = get(f"{origin}/api/telemetry?parts=task-stream&since={since}",
                          Authorization=f"token {token}")
    assert status == 200 and json.loads(body)["task_stream"]["runs"]["keys"] == []
    more = client.map(inc, range(100, 105))
    assert client.gather(more) == list(range(101, 106))
    status, _, body = get(f"{origin}/api/telemetry?parts=task-stream&since={since}&token={token}")
    assert sorted(json.loads(body)["task_stream"]["runs"]["keys"]) == sorted(f.key for f in more)
    status, _, body = get(f"{origin}/api/telemetry?since=ten", Cookie=jar)
    assert status == 400 and b"since='ten' must be a whole number" in body
    status, _, body = get(f"{origin}/api/telemetry?parts=graphs", Cookie=jar)
    assert status == 400 and b"parts[0] must be one of" in body


def test_without_the_token_nothing_with_it_a_404_for_unknown_paths(client):
    origin, token = split_link(client.dashboard_link)
    wrong = "0" * 64
    for path in ("/status", "/api/telemetry", "/static/xsched-dashboard.js", "/nothing", "/"):
        for headers in ({}, {"Authorization": f"token {wrong}"}, {"Cookie": f"xsched-dashboard-1={token}"}):
            status, got, body = get(origin + path, **headers)
            assert status == 403 and "Set-Cookie" not in got and body.startswith(b"403 Forbidden"), (path, headers)
        status, got, body = get(f"{origin}{path}?token={wrong}")
        assert status == 403 and "Set-Cookie" not in got
    # a token given that is wrong decides, whatever the cookie holds; other methods: 403 too
    port = urllib.parse.urlsplit(origin).port
    assert get(f"{origin}/status?token={wrong}", Cookie=f"xsched-dashboard-{port}={token}")[0] == 403
    assert get(f"{origin}/api/telemetry", method="POST")[0] == 403
    assert get(f"{origin}/api/telemetry", method="POST", Authorization=f"token {token}")[0] == 405
    # with the token: unknown and malformed paths are 404
    for path in ("/nothing", "/status/", "/api/telemetry/x", "/static/../server.py", "/static/%2e%2e%2fserver.py",
                 "/static/report.py", "/api"):
        status, _, body = get(f"{origin}{path}", Authorization=f"token {token}")
        assert status == 404 and b"Traceback" not in body, path


def _fail():
    raise ValueError("a task that fails, for the group API")


def test_the_story_api_and_the_logs_part(client):
    """``api/story?key=K``: a key's transitions (403 without the token, 400 without a key, [] for
    a key never seen); the telemetry's ``logs`` part with its cursors, over HTTP."""
    origin, token = split_link(client.dashboard_link)
    auth = {"Authorization": f"token {token}"}
    assert get(f"{origin}/api/telemetry?parts=workers", **auth)[0] == 200  # a page looks: stories get times
    future = client.submit(inc, 41, key="dashboard-story-inc-41")
    assert future.result() == 42
    for headers in ({}, {"Authorization": f"token {'0' * 64}"}):
        status, got, body = get(f"{origin}/api/story?key={future.key}", **headers)
        assert status == 403 and body.startswith(b"403 Forbidden") and b"dashboard-story" not in body
    status, headers, body = get(f"{origin}/api/story?key={urllib.parse.quote(future.key)}", **auth)
    assert status == 200 and headers["Content-Type"].startswith("application/json")
    reply = json.loads(body)
    assert reply["key"] == future.key
    finishes = [row["finish"] for row in reply["story"]]
    assert "processing" in finishes and finishes[-1] == "memory"
    workers = set(client.scheduler_info()["workers"])
    assert {"time", "start", "finish", "worker", "stimulus_id"} <= set(reply["story"][-1])
    assert reply["story"][-1]["worker"] in workers and isinstance(reply["story"][-1]["time"], float)
    assert reply["now"] == f"in memory on {reply['story'][-1]['worker']}"
    assert reply["holders"] == [reply["story"][-1]["worker"]]  # where a notebook's %remote can read it
    assert json.loads(get(f"{origin}/api/story?key=no-such-key", **auth)[2]) == {
        "key": "no-such-key", "story": [], "now": "the scheduler does not know this key (never submitted, or forgotten)",
        "holders": []}
    status, _, body = get(f"{origin}/api/story", **auth)
    assert status == 400 and b"give the task's key" in body
    # api/group?name=G: a group's keys, the one that failed first
    bad = client.submit(_fail, key="dashboard-group-9")
    assert bad.exception() is not None
    assert get(f"{origin}/api/group?name=dashboard-group")[0] == 403
    group = json.loads(get(f"{origin}/api/group?name=dashboard-group", **auth)[2])
    assert group["total"] == 1 and group["keys"][0]["key"] == "dashboard-group-9"
    assert group["keys"][0]["state"] == "erred" and group["keys"][0]["worker"] in workers
    assert json.loads(get(f"{origin}/api/group?name=dashboard-story-inc", **auth)[2])["keys"] == [
        {"key": future.key, "state": "memory", "worker": reply["story"][-1]["worker"]}]
    assert get(f"{origin}/api/group", **auth)[0] == 400
    # api/interrupt: POST with a JSON body only; a task not running is left alone
    assert get(f"{origin}/api/interrupt", **auth)[0] == 405
    assert get(f"{origin}/api/interrupt", method="POST", body=b'{"key": "x"}')[0] == 403
    assert get(f"{origin}/api/interrupt", method="POST", body=b"key=x", **auth,
               **{"Content-Type": "application/x-www-form-urlencoded"})[0] == 415
    json_headers = {**auth, "Content-Type": "application/json"}
    assert get(f"{origin}/api/interrupt", method="POST", body=b'{"key": 3}', **json_headers)[0] == 400
    status, _, body = get(f"{origin}/api/interrupt", method="POST",
                          body=json.dumps({"key": future.key}).encode(), **json_headers)
    assert status == 200 and json.loads(body) == {"key": future.key, "interrupted": {}}
    assert get(f"{origin}/api/story?key=x", method="POST", **auth)[0] == 405
    # api/profile-reset: POST with JSON only; the profile starts again from now
    first = json.loads(get(f"{origin}/api/telemetry?parts=profile", **auth)[2])["profile"]
    assert get(f"{origin}/api/profile-reset", **auth)[0] == 405
    assert get(f"{origin}/api/profile-reset", method="POST", body=b"{}")[0] == 403
    assert get(f"{origin}/api/profile-reset", method="POST", body=b"x=1", **auth,
               **{"Content-Type": "application/x-www-form-urlencoded"})[0] == 415
    status, _, body = get(f"{origin}/api/profile-reset", method="POST", body=b"{}", **json_headers)
    reset = json.loads(body)["profile"]
    assert status == 200 and reset["samples"] == 0 and reset["rows"] == [] and reset["since"] > first["since"]

    def note(text):
        logging.getLogger("xsched.user").warning(text)

    client.run_on_scheduler(note, "dashboard-logs: a note")
    status, _, body = get(f"{origin}/api/telemetry?parts=logs", **auth)
    first = json.loads(body)
    assert status == 200 and set(first["logs"]) == {"scheduler"} | workers
    assert any("dashboard-logs: a note" in r[2] for r in first["logs"]["scheduler"])
    since = urllib.parse.quote(json.dumps(first["logs_since"]))
    status, _, body = get(f"{origin}/api/telemetry?parts=logs&logs_since={since}", **auth)
    assert status == 200 and json.loads(body)["logs"]["scheduler"] == []
    status, _, body = get(f"{origin}/api/telemetry?parts=logs&logs_since=soon", **auth)
    assert status == 400 and b"logs_since must be a JSON object" in body


def test_no_dashboard_when_the_address_is_none():
    with LocalCluster(n_workers=0, dashboard_address=None) as cluster, Client(cluster, set_as_default=False) as c:
        assert c.dashboard_link is None and cluster.dashboard_link is None
        assert "dashboard" not in repr(c) and "dashboard" not in repr(cluster)
        assert "dashboard" not in c._repr_html_()
        # the scheduler listens on its own port and nothing else
        assert listening_ports(cluster._scheduler_proc.pid) == {int(cluster.scheduler_address.rsplit(":", 1)[1])}
    with xsched.config.set({"scheduler.dashboard-address": None}):  # the setting, when no argument is given
        with LocalCluster(n_workers=0) as cluster:
            assert cluster.dashboard_link is None
            assert listening_ports(cluster._scheduler_proc.pid) == {int(cluster.scheduler_address.rsplit(":", 1)[1])}
    with pytest.raises(ValueError, match="loopback only"):
        LocalCluster(n_workers=0, dashboard_address="0.0.0.0:8787")
    with pytest.raises(ValueError, match="the port 'x' is not a number"):
        LocalCluster(n_workers=0, dashboard_address=":x")


def test_a_port_taken_falls_back_to_a_free_one(caplog):
    caplog.set_level(logging.INFO, logger="xsched.deploy")
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen(1)
    port = taken.getsockname()[1]
    try:
        with LocalCluster(n_workers=1, threads_per_worker=1, dashboard_address=f":{port}") as cluster:
            origin, token = split_link(cluster.dashboard_link)
            served = urllib.parse.urlsplit(origin).port
            assert served != port and served in listening_ports(cluster._scheduler_proc.pid)
            with Client(cluster, set_as_default=False) as c:
                assert c.dashboard_link == cluster.dashboard_link
                assert c.submit(inc, 1).result(timeout=30) == 2
                # what the scheduler said while it started is among its recent records too
                said = [m for _, m in c.get_scheduler_logs()]
                assert any(f"port {port} is taken" in m for m in said), said
            status, _, body = get(f"{origin}/api/telemetry?parts=workers", Authorization=f"token {token}")
            assert status == 200 and len(json.loads(body)["workers"]) == 1
            with open(os.path.join(cluster._dir, "scheduler.log")) as f:
                log = f.read()
            assert f"port {port} is taken" in log and f"on port {served} instead" in log
            assert f"port {port} is taken; its page is on port {served} instead" in caplog.text  # here too
    finally:
        taken.close()


def test_an_in_process_scheduler_serves_the_page_too():
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=":0") as cluster, \
            Client(cluster, set_as_default=False) as c:
        assert c.dashboard_link == cluster.dashboard_link and c.dashboard_link is not None
        assert c.submit(inc, 41).result(timeout=30) == 42
        origin, token = split_link(c.dashboard_link)
        status, _, body = get(f"{origin}/api/telemetry?parts=task-stream,workers", Authorization=f"token {token}")
        reply = json.loads(body)
        assert status == 200 and len(reply["workers"]) == 1 and reply["task_stream"]["index"] >= 1
        server = cluster._inprocess_scheduler.dashboard
    # closed with its scheduler: nothing listens on the port (SO_REUSEADDR: the test's own
    # connection may leave the port in TIME_WAIT, which is not a listener)
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", server.port))


def test_the_command_line_serves_the_page_where_asked(procs, tmp_path):
    sfile = tmp_path / "scheduler.json"
    sched = procs.start("scheduler", "--host", "127.0.0.1", "--port", "0", "--scheduler-file", str(sfile),
                        "--dashboard-address", "127.0.0.1:0")
    first = read_line(sched)
    assert first.startswith("xsched scheduler at tcp://127.0.0.1:"), first
    lines = [read_line(sched) for _ in range(4)]
    [said] = [line for line in lines if "dashboard:" in line]
    page = re.search(r"http://127\.0\.0\.1:(\d+)/status", said)
    _, security = read_scheduler_file(str(sfile))
    token = security.dashboard_token()
    assert page and not any(token in line for line in [first, *lines])  # the token stays off the terminal
    with Client(scheduler_file=str(sfile), set_as_default=False) as c:
        assert c.dashboard_link == f"{page.group(0)}?token={token}"
        assert get(c.dashboard_link)[0] == 200

    off = procs.start("scheduler", "--host", "127.0.0.1", "--port", "0", "--scheduler-file",
                      str(tmp_path / "off.json"), "--dashboard-address", "None")
    said = [read_line(off) for _ in range(4)]  # address, registry, connect with, workers: no dashboard line
    assert said[0].startswith("xsched scheduler at") and not any("dashboard" in line for line in said)
    with Client(scheduler_file=str(tmp_path / "off.json"), set_as_default=False) as c:
        assert c.dashboard_link is None
    assert listening_ports(off.pid) == {int(c.scheduler_address.rsplit(":", 1)[1])}

    bad = procs.start("scheduler", "--port", "0", "--dashboard-address", "host:http")
    assert bad.wait(30) == 2
    err = bad.stderr.read().decode()
    assert "--dashboard-address" in err and "'http' is not a number" in err and "Traceback" not in err

    # without --dashboard-address, the scheduler.dashboard-address setting decides (here from the environment)
    env = {**cli_env(), "XSCHED_SCHEDULER__DASHBOARD_ADDRESS": "None"}
    quiet = procs.start("scheduler", "--host", "127.0.0.1", "--port", "0", "--scheduler-file",
                        str(tmp_path / "quiet.json"), env=env)
    said = [read_line(quiet) for _ in range(4)]
    assert said[0].startswith("xsched scheduler at") and not any("dashboard" in line for line in said)
    env["XSCHED_SCHEDULER__DASHBOARD_ADDRESS"] = "host:http"
    bad = procs.start("scheduler", "--port", "0", env=env)
    assert bad.wait(30) == 2
    err = bad.stderr.read().decode()
    assert "the scheduler.dashboard-address setting" in err and "'http' is not a number" in err
