"""The dashboard page a scheduler serves: the JupyterLab panes in any browser, no Jupyter needed.

Data flow (everything on the scheduler's own event loop)::

    browser --GET /status?token=T--> the page (a few lines of HTML) + a cookie holding T
        (HttpOnly, SameSite=Strict; the page's script then drops T from the address bar)
    browser --GET /static/xsched-dashboard.{js,css}--> the task stream, progress, worker
        memory, workers, timeline, logs and story panes: the lab extension's own pane
        classes, bundled for the browser from extensions/jupyterlab/src/standalone.ts
        (committed under static/)
    browser, every interval it chooses (clamped to INTERVAL here)
        --GET /api/telemetry?parts=task-stream,workers,groups,memory,logs&since=N
             &memory_since={..}&logs_since={..}&interval=S-->
        TelemetryExtension.poll(parts, since, ...)     (called directly: no thread, no copy)
        <--JSON: the telemetry op's reply (time, task_stream {records, index, first, skipped},
           workers, groups, memory, memory_since, logs, logs_since) + the interval granted--
        the browser keeps the cursors (task_stream.index, memory_since, logs_since) and sends
        them back next time
    browser --GET /api/story?key=K--> TelemetryExtension.story(K) <--{key, story: [{time, start,
        finish, worker, stimulus_id}], now, holders}-- (the story pane, on demand)
    browser --GET /api/group?name=G--> TelemetryExtension.group_keys(G) <--{group, total, keys:
        [{key, state, worker}]}-- (a group opened in the graph pane)
    browser --POST /api/interrupt {"key": K}--> TelemetryExtension.interrupt(K) --interrupt-task-->
        the worker running K <--{key, interrupted: {worker: [K]}}-- (the call stacks' Interrupt
        button; it changes something, so POST with a JSON body only)
    browser --POST /api/profile-reset {}--> TelemetryExtension.poll(["profile"], reset=["profile"])
        <--{profile: {samples, since, rows}}-- (the profile's Reset button: the scheduler's one
        profile starts again, for every page and lab pane watching; POST with JSON only too)
    the scheduler closes --> this server stops listening --> the page's next request fails
        and it says the scheduler went away

The API is stateless: the cursors live in the browser, so a browser that goes away leaves
nothing behind here, and any number of pages may watch. The server is thin: it decides
nothing about scheduling, and reads only what the telemetry extension serves clients.

Why tornado: the scheduler's loop is asyncio and tornado runs on asyncio, so a handler
calls the telemetry extension on the loop that owns the scheduler's state, with no thread
hand-off and no lock; stdlib ``http.server`` would need a thread and
``run_coroutine_threadsafe`` for every request. Tornado is already installed with xsched
(ipykernel and jupyter_client need it) and costs about 25 ms to import: it is imported
only by a scheduler process that serves a dashboard (``xsched/dashboard/__init__.py``
imports this module when the scheduler starts one), never by ``import xsched``.

Security. Every request, the page, its assets and its API alike, needs the token, else
it gets 403 and nothing else (an unknown path with the right token: 404). The token is
``Security.dashboard_token()``: HMAC-SHA256 of a fixed label keyed by the cluster secret,
never the secret itself, compared with ``hmac.compare_digest``. It comes as ``?token=``
(the link ``client.dashboard_link`` gives; the page sets the cookie then), as an
``Authorization: token ...`` header, or in that cookie (named after the port: two
dashboards on one host keep theirs apart). A token given in the query or header decides
alone; the cookie is read only when neither is given. The page is plain HTTP: on a
network, the token crosses it in clear, as a Jupyter server's does without TLS; it opens
only this read-only page, never the cluster. There is no cluster without a secret (a
``Security`` refuses to exist without one, and every scheduler makes one), so there is
always a token; a scheduler somehow without one gets no dashboard rather than an open one.

>>> clamp_interval(0.01), clamp_interval(2), clamp_interval(3600)
(0.25, 2.0, 10.0)
"""

from __future__ import annotations

import errno
import hmac
import html
import json
import logging
import math
import os
import socket

import tornado.httpserver
import tornado.web

from ..errors import DashboardError
from ..protocol import ops, schemas
from ..protocol.addressing import is_ipv6, is_wildcard
from ..scheduler.extensions.telemetry import holders_of

logger = logging.getLogger("xsched.dashboard")

__all__ = ["DashboardServer", "telemetry_request", "clamp_interval", "INTERVAL", "STATIC", "ASSETS"]

#: seconds between two polls a page may ask for (as the JupyterLab panes' watch allows)
INTERVAL = (0.25, 10.0)
#: seconds between two polls when the page does not say
DEFAULT_INTERVAL = 0.5
#: bytes of a request's line and headers: the page's cursors (memory and logs: ~100 bytes per
#: worker) travel in its query
MAX_HEADER = 512 * 1024
#: the longest task key the story API takes
MAX_KEY = 64 * 1024
#: the built page assets (from extensions/jupyterlab: `sh extensions/jupyterlab/build.sh`)
STATIC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "static")
#: the assets the page loads, and their media types
ASSETS = {"xsched-dashboard.js": "text/javascript; charset=utf-8", "xsched-dashboard.css": "text/css; charset=utf-8",
          "third-party-licenses.json": "application/json; charset=utf-8"}
#: what the page may load and where its script may connect: its own origin only
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
       "base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
FORBIDDEN = ("403 Forbidden: this dashboard needs its token. Open the link client.dashboard_link (or "
             "cluster.dashboard_link) gives, or send the header 'Authorization: token <token>'.\n")

_PAGE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<link rel="icon" href="data:,">
<title>{title}</title>
<link rel="stylesheet" href="static/xsched-dashboard.css">
<script defer src="static/xsched-dashboard.js"></script>
</head>
<body class="xsched-Dashboard" data-scheduler="{address}" data-name="{name}" data-interval="{interval}">
<noscript>The xsched dashboard draws its panes with JavaScript: allow scripts for this page.</noscript>
</body>
</html>
"""


def clamp_interval(seconds) -> float:
    """``seconds`` between two polls, within ``INTERVAL`` (the default when not a number).

    >>> clamp_interval("1.5"), clamp_interval("soon"), clamp_interval(float("nan"))
    (1.5, 0.5, 0.5)
    """
    try:
        value = float(seconds)
    except (TypeError, ValueError):
        return DEFAULT_INTERVAL
    if not math.isfinite(value):
        return DEFAULT_INTERVAL
    lo, hi = INTERVAL
    return min(max(value, lo), hi)


def telemetry_request(args: dict) -> dict:
    """The fields of a ``telemetry`` op from a page's query (``{name: [bytes, ...]}``, the
    last value of each counting), checked by the op's own schema (``schemas.TO_SCHEDULER``):
    ``parts`` (comma-separated), ``since`` and ``max_records`` (integers), ``memory_since``
    and ``logs_since`` (JSON objects). Other arguments (the token, the interval) are not the
    op's. ValueError naming what is wrong otherwise.

    >>> telemetry_request({"parts": [b"task-stream,workers"], "since": [b"12"], "token": [b"..."]})
    {'parts': ['task-stream', 'workers'], 'since': 12}
    >>> telemetry_request({"parts": [b"graphs"]})
    Traceback (most recent call last):
    ...
    xsched.protocol.schemas.BadMessage: telemetry: parts[0] must be one of 'groups', 'logs', 'memory', 'profile', 'stacks', 'task-stream', 'workers', not str 'graphs'
    >>> telemetry_request({"since": [b"ten"]})
    Traceback (most recent call last):
    ...
    ValueError: the query argument since='ten' must be a whole number (a cursor the last reply gave)
    """
    def last(name: str) -> str | None:
        values = args.get(name)
        return values[-1].decode("utf-8", "replace") if values else None

    h: dict = {}
    if last("parts") is not None:
        h["parts"] = [p for p in last("parts").split(",") if p]
    for name in ("since", "max_records", "activity_since"):
        text = last(name)
        if text is not None:
            try:
                h[name] = int(text)
            except ValueError:
                raise ValueError(f"the query argument {name}={text!r} must be a whole number "
                                 + ("(a cursor the last reply gave)" if name.endswith("since") else "")) from None
    if last("memory_since") is not None:
        try:
            h["memory_since"] = json.loads(last("memory_since"))
        except ValueError:
            raise ValueError("the query argument memory_since must be a JSON object: worker address -> "
                             "the time of the last memory sample seen") from None
    if last("logs_since") is not None:
        try:
            h["logs_since"] = json.loads(last("logs_since"))
        except ValueError:
            raise ValueError("the query argument logs_since must be a JSON object: \"scheduler\" or a worker "
                             "address -> the number of the next log record wanted") from None
    schemas.TO_SCHEDULER[ops.TELEMETRY].check(dict(h, op=ops.TELEMETRY))
    return h


def _finite(x):
    """``x`` with every non-finite float made null (JSON has no NaN or infinity)."""
    if isinstance(x, float):
        return x if math.isfinite(x) else None
    if isinstance(x, dict):
        return {k: _finite(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_finite(v) for v in x]
    return x


class DashboardServer:
    """The HTTP server of one scheduler's dashboard page, on the scheduler's loop.

    ``await DashboardServer(scheduler).start(host, port)`` listens (a port taken falls back
    to a free one, with a warning naming both); ``port`` and ``host`` say where;
    ``await close()`` stops it. The scheduler starts and closes it (``Scheduler(...,
    dashboard_address=":8787")``); ``token`` (else the scheduler's ``dashboard_token()``)
    is for tests.

    >>> DashboardServer(None, token="ab12")
    <DashboardServer not listening>
    """

    def __init__(self, scheduler, token: str | None = None, static: str = STATIC):
        security = getattr(scheduler, "security", None)
        if token is None and getattr(security, "secret", None):
            token = security.dashboard_token()
        if not token:
            raise DashboardError("this scheduler has no cluster secret, so no dashboard token can be derived from "
                                 "one: it serves no dashboard rather than an open one")
        self.scheduler = scheduler
        self._token = token.encode()
        self.static = static
        self.host: str | None = None
        self.port: int | None = None
        self._http: tornado.httpserver.HTTPServer | None = None
        self._assets: dict[str, bytes] = {}

    def __repr__(self) -> str:
        where = f"http://{self._netloc()}/status" if self.port else "not listening"
        return f"<DashboardServer {where}>"

    def _netloc(self) -> str:
        host = self.host or "127.0.0.1"
        return f"[{host}]:{self.port}" if is_ipv6(host) else f"{host}:{self.port}"

    @property
    def cookie_name(self) -> str:
        """The cookie the page's requests carry the token in (one per port: cookies ignore ports).

        >>> server = DashboardServer(None, token="ab12"); server.port = 8787
        >>> server.cookie_name
        'xsched-dashboard-8787'
        """
        return f"xsched-dashboard-{self.port}"

    # ------------------------------------------------------------------ lifecycle
    async def start(self, host: str, port: int) -> "DashboardServer":
        """Listen on ``host:port`` (a port taken: a free one instead, and a warning naming both;
        any other reason it cannot: ``DashboardError`` saying what to give instead).

        >>> import asyncio
        >>> async def serve():
        ...     server = await DashboardServer(None, token="ab12").start("127.0.0.1", 0)
        ...     try:
        ...         return server.port > 0, server.host
        ...     finally:
        ...         await server.close()
        >>> asyncio.run(serve())
        (True, '127.0.0.1')
        """
        if is_wildcard(host):
            host = "::" if host.strip("[]") == "::" else "0.0.0.0"
        host = "127.0.0.1" if host == "localhost" else host.strip("[]")
        try:
            try:
                sock = _listen(host, port)
            except OSError as e:
                if e.errno != errno.EADDRINUSE or port == 0:
                    raise
                sock = _listen(host, 0)
                logger.warning("the dashboard's port %d is taken on %s; serving the dashboard on port %d instead",
                               port, host, sock.getsockname()[1])
        except OSError as e:
            raise DashboardError(f"the dashboard cannot listen on {host}:{port}: {e.strerror or e}; give "
                                 "another dashboard address (e.g. ':0' for any free port), or None for "
                                 "no dashboard") from None
        self.host, self.port = host, sock.getsockname()[1]
        app = tornado.web.Application(
            [(r"/status", _Page, {"server": self}),
             (r"/api/telemetry", _Telemetry, {"server": self}),
             (r"/api/story", _Story, {"server": self}),
             (r"/api/group", _Group, {"server": self}),
             (r"/api/interrupt", _Interrupt, {"server": self}),
             (r"/api/profile-reset", _ProfileReset, {"server": self}),
             (r"/static/([^/]+)", _Asset, {"server": self})],
            default_handler_class=_NotFound, default_handler_args={"server": self},
            compress_response=True, log_function=_log_request, xsrf_cookies=False)
        # GET only, no body; headers up to MAX_HEADER (the query carries the page's per-worker
        # cursors); idle browsers let go of after a minute
        self._http = tornado.httpserver.HTTPServer(app, max_body_size=4096, max_header_size=MAX_HEADER,
                                                   idle_connection_timeout=60, body_timeout=10)
        self._http.add_sockets([sock])
        logger.info("dashboard at http://%s/status", self._netloc())
        return self

    async def close(self) -> None:
        """Stop listening and drop every connection (open pages then say the scheduler went away);
        safe to call twice (see ``start`` for an example)."""
        http, self._http = self._http, None
        if http is not None:
            http.stop()
            await http.close_all_connections()

    # ------------------------------------------------------------------ what handlers ask
    def authorized(self, query: str | None, header: str | None, cookie: str | None) -> bool:
        """Whether a request's token is right: the ``?token=`` or ``Authorization: token ...``
        one when it gives either (they decide alone), else its cookie's.

        >>> server = DashboardServer(None, token="ab12")
        >>> server.authorized("ab12", None, None), server.authorized("ab13", None, "ab12")
        (True, False)
        >>> server.authorized(None, None, "ab12"), server.authorized(None, "token ab12", None)
        (True, True)
        >>> server.authorized(None, "Bearer ab12", "ab12"), server.authorized(None, None, None)
        (False, False)
        """
        if header is not None:
            scheme, _, value = header.strip().partition(" ")
            header = value.strip() if scheme.lower() == "token" else ""
        given = query if query is not None else header if header is not None else cookie
        if not given:
            return False
        return hmac.compare_digest(given.encode("utf-8", "replace"), self._token)

    def asset(self, name: str) -> bytes | None:
        """The bytes of a page asset (read once), or None when it is no asset of the page.

        >>> server = DashboardServer(None, token="ab12")
        >>> len(server.asset("xsched-dashboard.js")) > 1000, server.asset("server.py"), server.asset("..")
        (True, None, None)
        """
        if name not in ASSETS:
            return None
        data = self._assets.get(name)
        if data is None:
            try:
                with open(os.path.join(self.static, name), "rb") as f:
                    data = self._assets[name] = f.read()
            except FileNotFoundError:
                return None
        return data

    def telemetry(self, request: dict) -> dict:
        """One telemetry reply (the scheduler's extension, on this loop) to ``request`` (what
        ``telemetry_request`` made of a query); LookupError when the scheduler is not running
        or does not load the extension.

        >>> from xsched.scheduler.server import Scheduler
        >>> scheduler = Scheduler()                     # not started: no worker, no task
        >>> DashboardServer(scheduler).telemetry({"parts": ["workers"]})
        Traceback (most recent call last):
        ...
        LookupError: the scheduler is not running yet (created)
        >>> scheduler.status = "running"
        >>> DashboardServer(scheduler).telemetry({"parts": ["workers"]})["workers"]
        []
        """
        ext = self._extension()
        return ext.poll(request.get("parts"), request.get("since"), request.get("memory_since"),
                        request.get("max_records"), request.get("logs_since"), request.get("activity_since"))

    def story(self, key: str) -> list:
        """The transitions of task ``key`` (the telemetry extension's ``story``, read on this
        loop), oldest first: ``[{time, start, finish, worker, stimulus_id}, ...]``;
        LookupError as for ``telemetry``.

        >>> from xsched.scheduler.server import Scheduler
        >>> scheduler = Scheduler(); scheduler.status = "running"      # (no task)
        >>> DashboardServer(scheduler).story("inc-1")
        []
        """
        return self._extension().story(key)

    def group(self, name: str) -> dict:
        """The keys of task group ``name``, those needing attention first (the telemetry
        extension's ``group_keys``); LookupError as for ``telemetry``.

        >>> from xsched.scheduler.server import Scheduler
        >>> scheduler = Scheduler(); scheduler.status = "running"      # (no task)
        >>> DashboardServer(scheduler).group("inc")
        {'group': 'inc', 'total': 0, 'keys': []}
        """
        return self._extension().group_keys(name)

    def reset_profile(self) -> dict:
        """Start the scheduler's profile again: the new, empty profile ``{samples, since, rows}``
        (the telemetry extension's, shared by every dashboard); LookupError as for ``telemetry``.

        >>> from xsched.scheduler.server import Scheduler
        >>> scheduler = Scheduler(); scheduler.status = "running"      # (no worker)
        >>> DashboardServer(scheduler).reset_profile()["samples"]
        0
        """
        return self._extension().poll(["profile"], reset=["profile"])["profile"]

    async def interrupt(self, key: str) -> dict:
        """Interrupt task ``key`` where it runs now: ``{worker: [key]}``, ``{}`` when it is not
        running (the telemetry extension's ``interrupt``); LookupError as for ``telemetry``."""
        return await self._extension().interrupt(key)

    def holders(self, key: str) -> list:
        """The workers holding task ``key``'s value now (the story pane shows how to reach it).

        >>> from xsched.scheduler.server import Scheduler
        >>> DashboardServer(Scheduler()).holders("inc-1")
        []
        """
        return holders_of(self.scheduler, key)

    def now(self, key: str) -> str:
        """What task ``key`` is doing now, and why it is not running (``SchedulerState.explain``).

        >>> from xsched.scheduler.server import Scheduler
        >>> DashboardServer(Scheduler()).now("inc-1")
        'the scheduler does not know this key (never submitted, or forgotten)'
        """
        return self.scheduler.state.explain(key)

    def _extension(self):
        """The scheduler's telemetry extension; LookupError when the scheduler is not running
        or does not load it."""
        scheduler = self.scheduler
        status = getattr(scheduler, "status", "running")
        if status != "running":
            raise LookupError("the scheduler is closing" if status in ("closing", "closed") else
                              f"the scheduler is not running yet ({status})")
        ext = scheduler.extensions.get("telemetry")
        if ext is None:
            raise LookupError("this scheduler does not load the telemetry extension: add 'telemetry' to "
                              "scheduler.extensions in its configuration (or set it to null: all of them)")
        return ext

    def page(self, interval) -> str:
        """The page's HTML (polling every ``interval`` seconds, clamped): its script builds
        the panes and polls ``api/telemetry``.

        >>> page = DashboardServer(None, token="ab12").page(0.01)
        >>> 'src="static/xsched-dashboard.js"' in page, 'data-interval="0.25"' in page, "ab12" in page
        (True, True, False)
        """
        scheduler = self.scheduler
        address = str(getattr(scheduler, "address", "") or "")
        name = getattr(scheduler, "name", None) or address
        return _PAGE.format(title=html.escape(f"xsched dashboard · {name}"), address=html.escape(address),
                            name=html.escape(str(name)), interval=clamp_interval(interval))


def _listen(host: str, port: int) -> socket.socket:
    """One listening socket on ``host:port`` (SO_REUSEADDR, as every server here: a port in
    TIME_WAIT is free, a port another socket holds is not)."""
    family = socket.AF_INET6 if is_ipv6(host) else socket.AF_INET
    sock = socket.create_server((host, port), family=family, backlog=128)
    sock.setblocking(False)
    return sock


def _log_request(handler: tornado.web.RequestHandler) -> None:
    # the path only: a query may hold the token
    logger.debug("%s %s %d %.1f ms", handler.request.method, handler.request.path, handler.get_status(),
                 1000 * handler.request.request_time())


class _Handler(tornado.web.RequestHandler):
    """What every path shares: the token first (403 and nothing else), then GET only."""

    # every method reaches prepare(), so that without the token all get the same 403
    SUPPORTED_METHODS = ("GET", "HEAD", "POST", "DELETE", "PATCH", "PUT", "OPTIONS")

    def initialize(self, server: DashboardServer) -> None:
        self.server = server

    def set_default_headers(self) -> None:
        self.clear_header("Server")
        self.set_header("Content-Security-Policy", CSP)
        self.set_header("X-Content-Type-Options", "nosniff")
        self.set_header("Referrer-Policy", "no-referrer")
        self.set_header("X-Frame-Options", "DENY")
        self.set_header("Cache-Control", "no-store")

    #: the methods this path answers (every path but the interrupt and the profile reset: GET only)
    METHODS = ("GET",)

    def prepare(self) -> None:
        query = self.get_query_argument("token", None)
        header = self.request.headers.get("Authorization")
        if not self.server.authorized(query, header, self.get_cookie(self.server.cookie_name)):
            self._text(403, FORBIDDEN)
        elif self.request.method not in self.METHODS:
            self.set_header("Allow", ", ".join(self.METHODS))
            self._text(405, f"405: {self.request.path} answers {' and '.join(self.METHODS)} only, "
                            f"not {self.request.method}.\n")

    def _text(self, status: int, text: str) -> None:
        self.clear()
        self.set_status(status)
        self.set_header("Content-Type", "text/plain; charset=utf-8")
        self.finish(text)

    def _json(self, obj) -> None:
        """``obj`` as JSON; a non-finite figure as null rather than JSON a browser refuses."""
        try:
            body = json.dumps(obj, allow_nan=False, separators=(",", ":"))
        except ValueError:
            body = json.dumps(_finite(obj), separators=(",", ":"))
        self.set_header("Content-Type", "application/json; charset=utf-8")
        self.finish(body)

    def write_error(self, status_code: int, **kwargs) -> None:  # never a traceback
        self.set_header("Content-Type", "text/plain; charset=utf-8")
        self.finish(f"{status_code}: {self._reason}\n")


class _NotFound(_Handler):
    def get(self, *args) -> None:
        self._text(404, f"404: the dashboard has no {self.request.path!r}; its page is /status.\n")


class _Page(_Handler):
    def get(self) -> None:
        if self.server.asset("xsched-dashboard.js") is None:
            self._text(500, "500: the dashboard's page assets are missing from xsched/dashboard/static: "
                            "rebuild them with `sh extensions/jupyterlab/build.sh` or reinstall xsched.\n")
            return
        if self.get_query_argument("token", None) is not None:  # the first load: the cookie carries it on
            self.set_cookie(self.server.cookie_name, self.get_query_argument("token"), path="/",
                            httponly=True, samesite="Strict")
        self.set_header("Content-Type", "text/html; charset=utf-8")
        self.finish(self.server.page(self.get_query_argument("interval", DEFAULT_INTERVAL)))


class _Asset(_Handler):
    def get(self, name: str) -> None:
        data = self.server.asset(name)
        if data is None:
            self._text(404, f"404: the dashboard has no asset {name!r}.\n")
            return
        self.set_header("Content-Type", ASSETS[name])
        self.set_header("Cache-Control", "no-cache")  # revalidated (ETag): a new build shows at once
        self.finish(data)


class _Telemetry(_Handler):
    def get(self) -> None:
        try:
            request = telemetry_request(self.request.query_arguments)
        except ValueError as e:
            self._text(400, f"400: {e}\n")
            return
        try:
            reply = self.server.telemetry(request)
        except LookupError as e:
            self._text(503, f"503: {e.args[0]}\n")
            return
        reply["interval"] = clamp_interval(self.get_query_argument("interval", DEFAULT_INTERVAL))
        self._json(reply)


class _Story(_Handler):
    """``api/story?key=K``: the transitions of task K, as the story pane shows them."""

    def get(self) -> None:
        key = self.get_query_argument("key", None)
        if not key or len(key) > MAX_KEY:
            self._text(400, f"400: give the task's key: api/story?key=... (1 to {MAX_KEY} characters)\n")
            return
        try:
            story = self.server.story(key)
        except LookupError as e:
            self._text(503, f"503: {e.args[0]}\n")
            return
        self._json({"key": key, "story": story, "now": self.server.now(key), "holders": self.server.holders(key)})


class _Group(_Handler):
    """``api/group?name=G``: the keys of task group G, as the graph pane lists them."""

    def get(self) -> None:
        name = self.get_query_argument("name", None)
        if not name or len(name) > MAX_KEY:
            self._text(400, f"400: give the group's name: api/group?name=... (1 to {MAX_KEY} characters)\n")
            return
        try:
            rows = self.server.group(name)
        except LookupError as e:
            self._text(503, f"503: {e.args[0]}\n")
            return
        self._json(rows)


class _Action(_Handler):
    """A request that changes something: POST with a JSON body only, so a form another site
    submits (plain text or form-encoded, and without this page's SameSite=Strict cookie
    anyway) is refused. ``act`` answers the parsed body (a dict) with the reply's JSON."""

    METHODS = ("POST",)
    #: what the body should be, said when it is not JSON
    EXPECTED = "{}"

    async def post(self) -> None:
        if not self.request.headers.get("Content-Type", "").startswith("application/json"):
            self._text(415, f"415: send a JSON body: {self.EXPECTED}\n")
            return
        try:
            body = json.loads(self.request.body or b"{}")
        except ValueError:
            body = None
        try:
            reply = await self.act(body if isinstance(body, dict) else {})
        except LookupError as e:
            self._text(503, f"503: {e.args[0]}\n")
            return
        if reply is not None:
            self._json(reply)

    async def act(self, body: dict) -> dict | None:
        raise NotImplementedError


class _ProfileReset(_Action):
    """``POST api/profile-reset`` with ``{}``: the scheduler's profile starts again."""

    async def act(self, body: dict) -> dict:
        return {"profile": self.server.reset_profile()}


class _Interrupt(_Action):
    """``POST api/interrupt`` with ``{"key": K}``: interrupt task K where it runs now."""

    EXPECTED = '{"key": "..."}'

    async def act(self, body: dict) -> dict | None:
        key = body.get("key")
        if not isinstance(key, str) or not key or len(key) > MAX_KEY:
            self._text(400, f"400: give the running task's key: {{\"key\": \"...\"}} (1 to {MAX_KEY} characters)\n")
            return None
        return {"key": key, "interrupted": await self.server.interrupt(key)}
