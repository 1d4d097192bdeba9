"""``xsched.performance_report``: one self-contained HTML file of what a block of code did.

::

    with xsched.performance_report(filename="report.html"):
        x.sum().compute()

Where the page's parts come from::

    task runs     the mechanism of ``with get_task_stream()`` (client/diagnostics.py, TaskStream):
                  the scheduler's run number noted on entering, every run reported since fetched
                  on leaving
    memory        the scheduler's memory history (jupyter/plots.py, _memory_data), the samples of
                  the block's period (and the last one before it)
    summary       scheduler_info (workers, threads) and get_versions, asked on leaving
    code          the ``with`` statement's source: the calling frame's file through linecache
                  (IPython registers its cells there too), else IPython's history of this cell
    transfers     the workers' transfers and spill writes and reads the scheduler heard of (with
                  their heartbeats) from entering to a heartbeat after leaving, those that ended
                  after the block began: ``client._activity`` notes the cursor on entering and
                  fetches what came since on leaving
    profile       while the block runs, a coroutine on the client's loop asks every worker to
                  sample its task threads for PROFILE_ROUND at a time (``client._profile``) and
                  merges the call trees; leaving lets the round in flight finish, then stops

The page has no script and loads nothing: inline SVG (``svg.py``) and inline CSS that
follows ``prefers-color-scheme``. ``report_html`` builds it from plain data, with no cluster.
"""

from __future__ import annotations

import ast
import asyncio
import contextlib
import datetime
import html
import linecache
import logging
import os
import sys
import textwrap
import time
from collections import Counter
from collections.abc import Mapping

from .. import config, hooks
from ..client.diagnostics import TaskStream
from ..files import output_path
from ..jupyter.plots import _memory_data
from ..profiling import StackTree
from ..protocol.versions import XSCHED_VERSION
from ..units import format_bytes, format_time, parse_timedelta
from . import svg

logger = logging.getLogger("xsched.dashboard")

__all__ = ["performance_report", "PerformanceReport", "report_html", "page", "with_block"]

DEFAULT_FILENAME = "xsched-report.html"
#: the report's profile: each round every worker samples its task threads this long, every
#: PROFILE_INTERVAL (leaving the block waits for the round in flight, at most this long)
PROFILE_ROUND = 0.25
PROFILE_INTERVAL = 0.01


def performance_report(filename=DEFAULT_FILENAME, client=None, *, limit: int = svg.MAX_BARS,
                       stacklevel: int = 1, profile: bool = True) -> "PerformanceReport":
    """Write one HTML file showing what the block of code inside it did on the cluster.

    The page opens offline in any browser (no script, nothing loaded from anywhere): the
    wall time of the block, the task runs (ok and erred), workers and threads, bytes of
    results, versions and when it ran; the task stream (a row per worker, a bar per run,
    coloured by task group; at most ``limit`` bars); memory over time per worker; time
    and bytes per task group; where the tasks spent their time (the workers' task threads
    sampled every 10 ms while the block runs, drawn as a flame graph; ``profile=False``
    leaves it out); and the source of the ``with`` block when it can be found.
    It is written when the block ends, also when it raises (the exception goes on).

    ``filename``: where to write (its directory must exist); ``client``: the default client
    when None; ``stacklevel``: whose ``with`` block is shown, as dask's (1: the one that
    entered the report; 2: the caller of that, for a report entered in a helper of one's
    own). Like ``get_task_stream``, it records every run the scheduler hears of while
    the block runs, from any client: wait for the block's work inside it. ``async with``
    for an asynchronous client.

    >>> import xsched
    >>> with xsched.performance_report(filename="report.html") as report:
    ...     doubled = client.gather(client.map(lambda x: x * 2, range(100), pure=False))
    >>> report
    <PerformanceReport '.../report.html': 100 task runs (0 erred) in ...>
    """
    return PerformanceReport(filename, client, limit=limit, stacklevel=stacklevel, profile=profile)


class PerformanceReport:
    """What ``performance_report`` returns: a context manager that writes ``filename``
    when its block ends. Afterwards ``runs`` holds the task runs of the block (as
    ``get_task_stream`` records them), ``start``/``stop`` its wall-clock times and
    ``activity`` the workers' transfers and spill writes and reads in it (as task-stream
    records whose ``group`` is ``transfer``, ``disk-write`` or ``disk-read``; ``key`` names
    the peer a transfer came from), ``code`` the source found for it (None when not found),
    ``profile`` the sampled call tree (``StackTree``; None when not asked for).
    ``os.fspath(report)`` is the path of the file.
    """

    def __init__(self, filename=DEFAULT_FILENAME, client=None, *, limit: int = svg.MAX_BARS, stacklevel: int = 1,
                 profile: bool = True):
        self.filename = output_path(filename, "performance_report", DEFAULT_FILENAME)
        if isinstance(stacklevel, bool) or not isinstance(stacklevel, int) or stacklevel < 1:
            raise TypeError(f"performance_report(stacklevel=...) counts frames from the with block (1 or more), "
                            f"not {stacklevel!r}")
        self.stacklevel = stacklevel
        if client is None:
            try:
                client = hooks.get_client()
            except ValueError:
                raise ValueError("performance_report needs a running xsched Client and there is none: create one "
                                 "first (client = xsched.Client(), or Client('scheduler-host:8786')), or pass "
                                 "client=...") from None
        self.client = client
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
            raise TypeError(f"performance_report(limit=...) is the most task bars to draw (an integer >= 0), "
                            f"not {limit!r}")
        self.limit = limit
        if not isinstance(profile, bool):
            raise TypeError(f"performance_report(profile=...) is True or False, not {profile!r}")
        self.sample = profile
        self.profile: StackTree | None = None
        self._sampler: asyncio.Future | None = None  # the sampling task, on the client's loop
        self._sampling = False
        self.start: float | None = None
        self.stop: float | None = None
        self.runs: list[dict] = []
        self.activity: list[dict] = []
        self._activity_since = 0
        self.code: str | None = None
        self.code_origin = ""
        self.written = False
        self._stream: TaskStream | None = None

    def __repr__(self) -> str:
        if not self.written:
            state = "recording" if self._stream is not None else "not written yet"
            return f"<PerformanceReport {self.filename!r}: {state}>"
        erred = sum(r.get("status") == "error" for r in self.runs)
        return (f"<PerformanceReport {self.filename!r}: {len(self.runs):,} task runs ({erred:,} erred) in "
                f"{format_time(self.stop - self.start)}>")

    def __fspath__(self) -> str:
        return self.filename

    # ------------------------------------------------------------------ the block
    def _begin(self) -> None:
        self.code, self.code_origin = _calling_block(self.stacklevel)
        self.runs, self.written = [], False
        self._stream = TaskStream(self.client)
        self.profile = StackTree() if self.sample else None
        self._sampling = self.sample

    async def _sample(self) -> None:
        """(On the client's loop) rounds of sampling until leaving the block asks to stop; a
        round that fails (a worker leaving) is tried again."""
        while self._sampling:
            began = time.monotonic()
            try:
                prof = await self.client._profile(PROFILE_ROUND, PROFILE_INTERVAL, None)
                self.profile.merge(prof.get("tree") or [])
            except Exception as e:  # noqa: BLE001 - the report is still worth writing without a round
                logger.debug("performance_report: a profile round failed: %s: %s", type(e).__name__, e)
            # (a round that ended early, e.g. with no worker to ask, waits out its time)
            await asyncio.sleep(max(0.0, PROFILE_ROUND - (time.monotonic() - began)))

    async def _start(self) -> None:
        """(On the client's loop, entering) note the activity cursor; start sampling."""
        _, self._activity_since = await self.client._activity()
        if self.sample:
            self._sampler = asyncio.ensure_future(self._sample())

    async def _finish(self) -> None:
        """(On the client's loop, leaving) let the sampling round in flight end, then fetch
        the block's transfers and disk I/O once the workers' next heartbeats brought them."""
        if self._sampler is not None:
            self._sampling = False
            try:
                await asyncio.wait_for(asyncio.shield(self._sampler), self._stop_timeout())
            except asyncio.TimeoutError:  # a hung round: the samples so far are kept
                self._sampler.cancel()
                logger.warning("performance_report: the last profile round did not end")
        await asyncio.sleep(self._heartbeat_wait())
        self.activity = self._in_block((await self.client._activity(self._activity_since))[0])

    def _in_block(self, records: list[dict]) -> list[dict]:
        """The records of what ended after the block began: a heartbeat heard in the block
        also brings what a worker did just before it."""
        return [r for r in records if r.get("stop") is not None and float(r["stop"]) >= self.start]

    def _heartbeat_wait(self) -> float:
        """How much longer to wait after the block ended for the workers' next heartbeats,
        which bring the block's last transfers: one and a half beats (at most 2 s)."""
        beat = parse_timedelta(config.get("worker.heartbeat-interval", "500ms"))
        return max(0.0, min(1.5 * beat, 2.0) - (time.time() - self.stop))

    def _stop_timeout(self) -> float:
        return PROFILE_ROUND + float(getattr(self.client, "_timeout", 10) or 10)

    def __enter__(self) -> "PerformanceReport":
        if self.client.asynchronous:
            raise TypeError("an asynchronous client writes a performance report with "
                            "`async with performance_report(...)`")
        self._begin()
        self._stream.__enter__()
        self.client._sync(self._start())
        self.start = time.time()
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        with self._ending(exc_type):
            self._stream.__exit__(exc_type, exc, tb)
            self.runs = self._stream.data
            self.client._sync(self._finish())
            _write(self.filename, self._page(self.client._sync(self._gather())))
            self.written = True

    @contextlib.contextmanager
    def _ending(self, exc_type):
        """The block ended: a failure to write the page is raised, unless the block itself
        raised (then it is logged and the block's exception goes on)."""
        self.stop = time.time()
        try:
            yield
        except Exception as e:
            if exc_type is None:
                raise
            logger.warning("performance_report could not write %s after the block raised: %s: %s",
                           self.filename, type(e).__name__, e)
        finally:
            self._stream = None
            self._sampler = None

    async def __aenter__(self) -> "PerformanceReport":
        if not self.client.asynchronous:
            raise TypeError("a synchronous client writes a performance report with `with performance_report(...)`")
        self._begin()
        await self._stream.__aenter__()
        await self._start()
        self.start = time.time()
        return self

    async def __aexit__(self, exc_type, exc, tb) -> None:
        with self._ending(exc_type):
            await self._stream.__aexit__(exc_type, exc, tb)
            self.runs = self._stream.data
            await self._finish()
            gathered = await self._gather()
            # drawing up to 20,000 bars and writing them: in a thread, not on the event loop
            await asyncio.get_running_loop().run_in_executor(None, lambda: _write(self.filename, self._page(gathered)))
            self.written = True

    # ------------------------------------------------------------------ what the page needs
    async def _gather(self) -> dict:
        """(On the client's loop) memory history, workers and versions, asked once the block ended."""
        history, limits = await _memory_data(self.client)
        info = await self.client._scheduler_info()
        try:
            versions = await self.client._get_versions()
        except Exception as e:  # noqa: BLE001 - the page says so; the rest of it is still worth writing
            versions = {"error": f"{type(e).__name__}: {e}"}
        return {"history": history, "limits": limits, "info": info, "versions": versions}

    def _page(self, gathered: dict) -> str:
        return report_html(self.runs, start=self.start, stop=self.stop, history=gathered["history"],
                           limits=gathered["limits"], info=gathered["info"], versions=gathered["versions"],
                           code=self.code, code_origin=self.code_origin, limit=self.limit,
                           profile=None if self.profile is None else self.profile.rows(), activity=self.activity)


def _write(path: str, text: str) -> None:
    tmp = f"{path}.tmp-{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)


# ---------------------------------------------------------------------- the code of the block
def with_block(source: str, line: int) -> str | None:
    """The ``with`` (or ``async with``) statement whose header is at ``line`` of ``source``
    (1-based), header and body, dedented; the innermost one around ``line`` when no header
    is there; None when there is none or the source does not parse.

    >>> src = "import x\\n\\ndef f():\\n    with report():\\n        work()\\n    after()\\n"
    >>> print(with_block(src, 4))
    with report():
        work()
    >>> with_block(src, 1) is None
    True
    """
    span = _with_span(source, line)
    if span is None:
        return None
    return _lines(source, span)


def _lines(source: str, span: tuple[int, int]) -> str:
    return textwrap.dedent("\n".join(source.splitlines()[span[0] - 1:span[1]])).strip("\n")


def _with_span(source: str, line: int) -> tuple[int, int] | None:
    """(first, last) line of the statement ``with_block`` shows, or None."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    headers, around = [], []
    for node in ast.walk(tree):
        if isinstance(node, (ast.With, ast.AsyncWith)):
            header_end = max([node.lineno] + [getattr(part, "end_lineno", None) or node.lineno
                                              for item in node.items
                                              for part in (item.context_expr, item.optional_vars) if part])
            if node.lineno <= line <= header_end:
                headers.append(node)
            elif node.lineno <= line <= (node.end_lineno or node.lineno):
                around.append(node)
    found = headers or around
    if not found:
        return None
    node = max(found, key=lambda n: n.lineno)
    return node.lineno, node.end_lineno or node.lineno


def _calling_block(stacklevel: int = 1) -> tuple[str | None, str]:
    """(source, where) of the ``with`` statement that entered the report (``stacklevel`` 2:
    of the frame that called that one, and so on), or (None, why not).

    The frame's file through linecache, where IPython keeps its cells too (as Python: magics
    turned into calls; the cell as typed is shown when it has the same lines); else the
    cell IPython runs now, from its history."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename == __file__:
        frame = frame.f_back
    for _ in range(stacklevel - 1):
        frame = frame.f_back if frame is not None else None
    if frame is None:
        return None, "no calling frame"
    filename, line = frame.f_code.co_filename, frame.f_lineno
    try:
        source = "".join(linecache.getlines(filename, frame.f_globals))
    finally:
        del frame
    where = f"{filename}, line {line}"
    raw, cell = _ipython_cell()
    if source:
        span = _with_span(source, line)
        if span is not None:
            if cell == source:  # the cell IPython runs now
                return _lines(_as_typed(raw, source), span), f"this cell, line {line}"
            return _lines(source, span), where
    elif cell is not None:
        span = _with_span(cell, line)
        if span is not None:
            return _lines(_as_typed(raw, cell), span), f"this cell, line {line}"
    return None, f"the source of {where} could not be read"


def _as_typed(raw: str | None, python: str) -> str:
    """The cell as typed when its lines are those of ``python`` (IPython drops the leading
    blank lines and turns magics into calls line for line), else ``python``.

    >>> _as_typed("\\n%time f()\\n", "get_ipython().run_line_magic('time', 'f()')\\n")
    '%time f()'
    """
    if raw is None:
        return python
    lines = raw.splitlines()
    wanted = len(python.splitlines())
    while len(lines) > wanted and not lines[0].strip():
        lines.pop(0)
    return "\n".join(lines) if len(lines) == wanted else python


def _ipython_cell() -> tuple[str | None, str | None]:
    """The cell IPython runs now, as typed and as Python (from its history), or (None, None)."""
    ipython = sys.modules.get("IPython")
    ip = ipython.get_ipython() if ipython is not None else None
    if ip is None:
        return None, None
    try:
        raw = ip.history_manager.input_hist_raw[-1]
        return raw, ip.transform_cell(raw)
    except Exception:  # noqa: BLE001 - no history, or a cell IPython cannot transform: no cell
        return None, None


# ---------------------------------------------------------------------- the page
PAGE_STYLE = """
:root { color-scheme: light dark; --xs-bg: #ffffff; --xs-fg: #1f2328; --xs-muted: #59636e; --xs-axis: #8c959f;
  --xs-grid: #e4e7eb; --xs-row: #f4f6f8; --xs-card: #f6f8fa; --xs-border: #d0d7de; --xs-bad: #c62828; }
@media (prefers-color-scheme: dark) {
  :root { --xs-bg: #15181d; --xs-fg: #e6edf3; --xs-muted: #9da7b3; --xs-axis: #8b949e; --xs-grid: #30363d;
    --xs-row: #1c2128; --xs-card: #1c2128; --xs-border: #3d444d; --xs-bad: #ff7b72; }
}
body { margin: 0; background: var(--xs-bg); color: var(--xs-fg);
  font: 14px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; }
main { max-width: 1000px; margin: 0 auto; padding: 12px 20px 48px; }
h1 { font-size: 22px; margin: 12px 0 4px; }
h2 { font-size: 17px; margin: 28px 0 8px; border-bottom: 1px solid var(--xs-border); padding-bottom: 4px; }
p.muted, .muted { color: var(--xs-muted); }
table { border-collapse: collapse; }
table.summary th { text-align: left; font-weight: 600; padding: 2px 16px 2px 0; vertical-align: top; }
table.summary td { padding: 2px 0; }
table.groups th, table.groups td { padding: 2px 10px; border-bottom: 1px solid var(--xs-border); }
table.groups td.n { text-align: right; font-variant-numeric: tabular-nums; }
table.groups th { text-align: left; }
.bad { color: var(--xs-bad); }
pre { background: var(--xs-card); border: 1px solid var(--xs-border); border-radius: 6px; padding: 10px 12px;
  overflow: auto; font: 12.5px/1.45 ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; }
code { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 12.5px; }
.figure { overflow-x: auto; }
"""


def _e(s) -> str:
    return html.escape(str(s), quote=True)


def _when(t: float) -> str:
    return datetime.datetime.fromtimestamp(t).astimezone().isoformat(sep=" ", timespec="seconds")


def _window(history: Mapping, start: float, stop: float) -> dict:
    """The memory samples of [start, stop] per worker, with the last one before start (a
    block shorter than a heartbeat has a sample to show)."""
    out = {}
    for addr, h in (history or {}).items():
        samples = sorted((s for s in (h.get("samples") or []) if s), key=lambda s: s[0])
        before = [s for s in samples if s[0] < start][-1:]
        out[addr] = dict(h, samples=before + [s for s in samples if start <= s[0] <= stop])
    return out


def _versions_text(versions: Mapping | None) -> list[tuple[str, str]]:
    """Rows of the summary: xsched and python of the client, the scheduler, and the workers."""
    if not versions:
        return [("versions", f"xsched {XSCHED_VERSION}, python {sys.version.split()[0]} (this process)")]
    if "error" in versions and "client" not in versions:
        return [("versions", f"not available: {versions['error']}")]

    def one(v) -> str:
        if not isinstance(v, Mapping) or "error" in v:
            return f"did not answer ({v.get('error') if isinstance(v, Mapping) else v})"
        return f"xsched {v.get('xsched')}, python {v.get('python')}"

    rows = [("versions: client", one(versions.get("client"))),
            ("versions: scheduler", one(versions.get("scheduler")))]
    workers = Counter(one(v) for v in (versions.get("workers") or {}).values())
    if workers:
        rows.append(("versions: workers", "; ".join(f"{text} ({n} worker{'s' if n != 1 else ''})" if len(workers) > 1
                                          else text for text, n in sorted(workers.items()))))
    return rows


def report_html(runs: list[Mapping], *, start: float, stop: float, history: Mapping | None = None,
                limits: Mapping | None = None, info: Mapping | None = None, versions: Mapping | None = None,
                code: str | None = None, code_origin: str = "", limit: int = svg.MAX_BARS,
                title: str = "xsched performance report", profile: list | None = None,
                activity: list[Mapping] | None = None) -> str:
    """The report page from plain data: task runs (as ``get_task_stream`` gives them), the
    block's ``start``/``stop`` (seconds since the epoch), the scheduler's memory ``history``
    and ``limits``, ``info`` (``scheduler_info()``), ``versions`` (``get_versions()``), the
    block's ``code``, the ``profile``'s call tree rows (``StackTree.rows()``; None: no
    profile section) and the workers' ``activity`` (transfers and disk I/O, as
    ``PerformanceReport.activity``). No cluster needed; nothing in the page is loaded from elsewhere.

    >>> page = report_html([{"key": "inc-1", "worker": "tcp://h:1", "start": 1.0, "stop": 1.5,
    ...                      "status": "memory", "nbytes": 28}], start=1.0, stop=2.0, code="with r:\\n    go()")
    >>> 'data-task-count="1"' in page, "go()" in page, "<script" in page
    (True, True, False)
    """
    runs = list(runs)
    info = info or {}
    workers = info.get("workers") or {}
    erred = [r for r in runs if r.get("status") == "error"]
    nbytes = sum(int(r.get("nbytes") or 0) for r in runs if r.get("status") != "error")
    threads = sum(int(w.get("nthreads") or 0) for w in workers.values())
    stats = svg.group_stats(runs)
    colours = svg.group_colours(s["group"] for s in stats)
    wall = max(stop - start, 0.0)

    summary = [
        ("ran", f"{_when(start)} to {_when(stop)}"),
        ("wall time", format_time(wall)),
        ("task runs", f"{len(runs):,}: {len(runs) - len(erred):,} ok, {len(erred):,} erred"
                      f" ({len(stats):,} task group{'s' if len(stats) != 1 else ''})"),
        ("workers", f"{len(workers):,} with {threads:,} thread{'s' if threads != 1 else ''} "
                    f"({len({r.get('worker') for r in runs}):,} ran tasks)"),
        ("bytes of results", format_bytes(nbytes)),
    ]
    activity = [a for a in (activity or []) if a.get("start") is not None and a.get("stop") is not None]
    moved = _activity_totals(activity)
    for kind, label in (("transfer", "transfers between workers"), ("disk-write", "spilled to disk"),
                        ("disk-read", "read back from disk")):
        n, nb, secs = moved[kind]
        if n:
            summary.append((label, f"{n:,} ({format_bytes(nb)} in {format_time(secs)})"))
    if info.get("address"):
        summary.append(("scheduler", str(info["address"])))
    summary += _versions_text(versions)
    bad = ' class="bad"'
    rows = "".join(f"<tr><th>{_e(k)}</th><td{bad if k == 'task runs' and erred else ''}>{_e(v)}</td></tr>"
                   for k, v in summary)
    summary_table = (f'<table id="xsched-report-summary" class="summary" data-task-count="{len(runs)}" '
                     f'data-erred-count="{len(erred)}" data-worker-count="{len(workers)}" '
                     f'data-thread-count="{threads}" data-nbytes="{nbytes}" data-group-count="{len(stats)}" '
                     f'data-transfer-count="{moved["transfer"][0]}" data-transfer-bytes="{moved["transfer"][1]}">'
                     f"{rows}</table>")

    stream = svg.task_stream_svg(runs, workers, start=start, stop=stop, colours=colours, limit=limit)
    failed = ""
    if erred:
        items = "".join(f"<li><code>{_e(r.get('key'))}</code> on {_e(r.get('worker'))}</li>" for r in erred[:20])
        more = f"<li>and {len(erred) - 20:,} more</li>" if len(erred) > 20 else ""
        failed = f'<p>Failed runs (outlined in red):</p><ul id="xsched-report-erred">{items}{more}</ul>'

    memory = svg.memory_svg(_window(history or {}, start, stop), limits, start=start, stop=stop)

    group_rows = "".join(
        f"<tr><td>{_e(s['group'])}</td><td class=\"n\">{s['count']:,}</td>"
        f"<td class=\"n{' bad' if s['erred'] else ''}\">{s['erred']:,}</td><td class=\"n\">{_e(format_time(s['seconds']))}"
        f"</td><td class=\"n\">{_e(format_time(s['mean']))}</td><td class=\"n\">{_e(format_bytes(s['nbytes']))}</td></tr>"
        for s in stats[:200])
    group_table = (f'<table id="xsched-report-group-table" class="groups"><thead><tr><th>group</th><th>tasks</th>'
                   f"<th>erred</th><th>total</th><th>mean</th><th>bytes</th></tr></thead><tbody>{group_rows}"
                   f"</tbody></table>" + (f'<p class="muted">and {len(stats) - 200:,} more groups</p>'
                                          if len(stats) > 200 else "")) if stats else ""

    if code is not None:
        code_html = (f'<p class="muted">{_e(code_origin)}</p><pre id="xsched-report-code">{_e(code)}</pre>'
                     if code_origin else f'<pre id="xsched-report-code">{_e(code)}</pre>')
    else:
        why = f": {code_origin}" if code_origin else ""
        code_html = f'<p id="xsched-report-code" class="muted">The code of the block is not available{_e(why)}.</p>'

    return page(
        title,
        f'<p class="muted">What one block of code did, {_e(format_time(wall))} from {_e(_when(start))}.</p>'
        f'<section id="summary"><h2>Summary</h2>{summary_table}</section>\n'
        f'<section id="task-stream"><h2>Task stream</h2>'
        '<p class="muted">A row per worker, a bar per task run, coloured by task group; hover a bar for its key.</p>'
        f'<div class="figure">{stream}</div>{failed}</section>\n'
        f'<section id="transfers"><h2>Transfers and disk</h2>'
        '<p class="muted">A row per worker: a bar per transfer of data it fetched from another worker '
        "(red; hover for the peer and the bytes), per value it spilled to disk (orange) or read back "
        "(yellow), as the workers reported them.</p>"
        f'<div class="figure">{svg.activity_svg(activity, workers, start=start, stop=stop, limit=limit)}</div>'
        "</section>\n"
        f'<section id="memory"><h2>Memory per worker</h2><div class="figure">{memory}</div></section>\n'
        f'<section id="groups"><h2>Time per task group</h2><div class="figure">'
        f"{svg.group_time_svg(runs, colours)}</div>"
        f'<h2>Bytes of results per task group</h2><div class="figure">{svg.group_bytes_svg(runs, colours)}</div>'
        f"{group_table}</section>\n"
        + (f'<section id="profile"><h2>Where the tasks spent their time</h2><p class="muted">The workers\' '
           "task threads sampled every 10 ms while the block ran: a row per depth of the calls, task "
           "prefixes on top; a box's width is its share of the samples; hover a box for its function.</p>"
           f'<div class="figure">{svg.profile_svg(profile)}</div></section>\n' if profile is not None else "")
        + f'<section id="code"><h2>The code that ran</h2>{code_html}</section>\n'
    )


def _activity_totals(activity: list[Mapping]) -> dict[str, tuple[int, int, float]]:
    """Per kind (``transfer``, ``disk-write``, ``disk-read``): (count, bytes, seconds).

    >>> _activity_totals([{"group": "transfer", "nbytes": 8, "start": 0, "stop": 0.5}])["transfer"]
    (1, 8, 0.5)
    """
    out = {kind: (0, 0, 0.0) for kind in ("transfer", "disk-write", "disk-read")}
    for a in activity:
        kind = a.get("group")
        if kind in out:
            n, nb, secs = out[kind]
            out[kind] = (n + 1, nb + int(a.get("nbytes") or 0),
                         secs + max(float(a["stop"]) - float(a["start"]), 0.0))
    return out


def page(title: str, body: str) -> str:
    """One offline HTML page: the title as heading, then ``body`` (HTML), in the page's and
    the figures' style, light or dark as the reader's browser prefers; no script.

    >>> text = page("Runs & costs", "<p>none</p>")
    >>> text.startswith("<!DOCTYPE html>"), "<h1>Runs &amp; costs</h1><p>none</p>" in text
    (True, True)
    """
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<meta name="color-scheme" content="light dark">'
        f"<title>{_e(title)}</title><style>{PAGE_STYLE}{svg.STYLE}</style></head>\n"
        f'<body><main data-xsched-version="{_e(XSCHED_VERSION)}">'
        f"<h1>{_e(title)}</h1>{body}"
        "</main></body></html>\n"
    )
