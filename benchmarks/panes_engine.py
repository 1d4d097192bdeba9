"""The engine with the JupyterLab panes open: tasks/s with no browser, then with every pane (task
stream, progress, worker memory, timeline, workers, graph, profile, call stack, logs, story)
watching the same cluster; both printed in one run.

    python benchmarks/panes_engine.py [--quick] [--rounds 3] [--repeats 5] [--panes "Task Stream,Logs"]
                                      [--pane-interval MS] [--trace PATH] [--chromium /usr/bin/chromium]

One LocalCluster (2 workers x 1 thread) and one client; ``engine.py``'s map (10,000 no-op
tasks) and tree (9,999 tasks) figures are taken with no browser, then again after a headless
chromium (Playwright) opened the panes on that cluster in `jupyter lab` (this venv), which
then receive telemetry at their interval (``--pane-interval``) while the work runs (the logs pane also has the
scheduler ask workers for their recent records; the profile pane has the workers sample their
task threads, the call-stack pane asks for the running tasks' frames); chromium then closes.
Every figure is the median of ``--repeats`` runs of each. ``--rounds`` rounds with the panes
alternate with figures without a browser, one more at the end (this machine's speed moves by
tens of percent within minutes): each round is set beside the mean of the figures just before
and just after it, so a steady drift cancels, and the median of the rounds' ratios is printed. Everything runs
on this machine: the Jupyter server and chromium share its cores with the cluster, and the
CPU each kind of process used while the panes watched is printed beside the figures. The
hooks the panes install on the scheduler (a key's story, group counts) stay once installed,
in the later rounds without a browser too. Printed, never asserted. Every process started
here is stopped by its pid.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402
import engine  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
from tests.support.browser import LAUNCH_ARGS, open_by_palette  # noqa: E402  (as the browser tests drive it)
BIN = os.path.dirname(sys.executable)
#: what chromium records with --trace: its tasks, script, style, layout and paint
TRACE_CATEGORIES = ["toplevel", "devtools.timeline", "v8", "blink", "cc", "gpu", "viz"]
PANES = ("Task Stream", "Progress", "Worker Memory", "Timeline", "Workers", "Graph", "Profile", "Call Stack",
         "Logs", "Story")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _stop(proc: subprocess.Popen) -> None:
    """SIGTERM, again, then SIGKILL: to the one process we started, by its pid (not SIGINT:
    without a terminal jupyter waits out its "shut down? (y/n)" prompt)."""
    for sig in (signal.SIGTERM, signal.SIGTERM, signal.SIGKILL):
        if proc.poll() is not None:
            return
        os.kill(proc.pid, sig)
        try:
            proc.wait(8)
        except subprocess.TimeoutExpired:
            pass


def start_lab(d: str, pane_interval_ms: int | None = None) -> tuple[subprocess.Popen, str, str]:
    """`jupyter lab` on a free port with a token, its JUPYTER_* directories under ``d``; the
    panes' ``paneInterval`` setting when given."""
    env = dict(os.environ)
    for name in ("config", "data", "runtime", "settings", "workspaces", "root"):
        os.makedirs(os.path.join(d, name))
    if pane_interval_ms is not None:
        os.makedirs(os.path.join(d, "settings", "xsched-labextension"))
        with open(os.path.join(d, "settings", "xsched-labextension", "plugin.jupyterlab-settings"), "w") as f:
            json.dump({"paneInterval": pane_interval_ms}, f)
    env.update(JUPYTER_CONFIG_DIR=f"{d}/config", JUPYTER_DATA_DIR=f"{d}/data", JUPYTER_RUNTIME_DIR=f"{d}/runtime",
               JUPYTERLAB_SETTINGS_DIR=f"{d}/settings", JUPYTERLAB_WORKSPACES_DIR=f"{d}/workspaces",
               JUPYTER_PLATFORM_DIRS="1")
    port, token = _free_port(), secrets.token_hex(16)
    args = [os.path.join(BIN, "jupyter-lab"), "--no-browser", f"--port={port}", "--ip=127.0.0.1",
            f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={d}/root", "--ServerApp.port_retries=0",
            "--LabApp.news_url=None", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
            "--ServerApp.jpserver_extensions=xsched.labserver=True", *(["--allow-root"] if os.getuid() == 0 else [])]
    if not os.path.isfile(os.path.join(sys.prefix, "share", "jupyter", "labextensions", "xsched-labextension",
                                       "package.json")):
        os.makedirs(f"{d}/labextensions")
        os.symlink(os.path.join(ROOT, "xsched", "labextension"), f"{d}/labextensions/xsched-labextension")
        args.append(f"--LabApp.extra_labextensions_path={d}/labextensions")
    proc = subprocess.Popen(args, env=env, stdout=open(f"{d}/lab.log", "w"), stderr=subprocess.STDOUT, cwd=f"{d}/root")
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        if proc.poll() is not None or time.monotonic() > deadline:
            _stop(proc)
            raise RuntimeError("jupyter lab did not start:\n" + open(f"{d}/lab.log").read()[-3000:])
        try:
            req = urllib.request.Request(f"{url}/api/status", headers={"Authorization": f"token {token}"})
            with urllib.request.urlopen(req, timeout=2):
                return proc, url, token
        except OSError:
            time.sleep(0.25)


def open_panes(page, url: str, token: str, address: str, panes=PANES, workspace: str = "panes") -> None:
    """Open ``panes`` (every pane) on the cluster at ``address`` through the command palette, in
    a new ``workspace`` (an earlier one would come back with its panes and sidebar)."""
    page.goto(f"{url}/lab/workspaces/{workspace}?token={token}")
    page.wait_for_selector("#jp-main-dock-panel", state="attached")
    page.click('.jp-SideBar .lm-TabBar-tab[data-id="xsched-cluster-panel"]')
    page.locator(f'#xsched-cluster-panel .xsched-Cluster[data-cluster-address="{address}"]').click()
    page.locator("#xsched-cluster-panel tr[data-worker-address]").first.wait_for()
    for label in panes:
        open_by_palette(page, f"xsched: Open {label}")
    page.wait_for_function("() => document.querySelector('#xsched-pane-task-stream canvas')"
                           "?.getAttribute('data-worker-count') === '2'")


def cpu_by_process(lab_pid: int, cluster_pids: set) -> dict:
    """CPU seconds (user + system) used so far by each kind of process this benchmark started:
    the cluster (scheduler, workers), the Jupyter server, chromium, the browser driver."""
    import psutil

    out = {"cluster": 0.0, "jupyter": 0.0, "chromium": 0.0, "driver": 0.0}
    lab = {lab_pid} | {c.pid for c in psutil.Process(lab_pid).children(recursive=True)}
    for proc in psutil.Process().children(recursive=True):
        try:
            t = proc.cpu_times()
            name = proc.name()
        except psutil.Error:
            continue
        kind = ("cluster" if proc.pid in cluster_pids else "jupyter" if proc.pid in lab else
                "chromium" if "chrom" in name else "driver" if name in ("node", "playwright") else None)
        if kind:
            out[kind] += t.user + t.system
    return out


class Tracer:
    """Chromium's trace of everything while it runs, through the DevTools protocol (a persistent
    context has no ``browser.start_tracing``)."""

    def __init__(self, context, page) -> None:
        self.cdp = context.new_cdp_session(page)
        self.done: dict = {}
        self.cdp.on("Tracing.tracingComplete", lambda event: self.done.update(event))
        self.cdp.send("Tracing.start", {"transferMode": "ReturnAsStream",
                                        "traceConfig": {"includedCategories": TRACE_CATEGORIES}})
        self.cdp.send("Profiler.enable")
        self.cdp.send("Profiler.setSamplingInterval", {"interval": 500})  # microseconds
        self.cdp.send("Profiler.start")
        self.js: list = []

    def save(self, page, path: str) -> None:
        """Stop tracing and write the trace to ``path``; keep the page's script functions by
        self time (``js``) from the sampling profile taken beside it."""
        self.js = js_summary(self.cdp.send("Profiler.stop")["profile"])
        self.cdp.send("Tracing.end")
        deadline = time.monotonic() + 60
        while "stream" not in self.done and time.monotonic() < deadline:
            page.wait_for_timeout(100)  # (events arrive while the driver waits)
        if "stream" not in self.done:
            raise RuntimeError("chromium did not finish its trace in 60 s")
        with open(path, "w") as f:
            while True:
                chunk = self.cdp.send("IO.read", {"handle": self.done["stream"], "size": 1 << 20})
                f.write(base64.b64decode(chunk["data"]).decode() if chunk.get("base64Encoded") else chunk["data"])
                if chunk.get("eof"):
                    break
        self.cdp.send("IO.close", {"handle": self.done["stream"]})


def js_summary(profile: dict, top: int = 15) -> list:
    """The script functions with the most self time in a DevTools CPU profile, as lines."""
    nodes = {n["id"]: n for n in profile["nodes"]}
    self_us: dict = {}
    for node_id, dt in zip(profile.get("samples", []), profile.get("timeDeltas", [])):
        frame = nodes[node_id]["callFrame"]
        where = f"{frame['functionName'] or '(anonymous)'} {os.path.basename(frame['url'])}:{frame['columnNumber']}"
        self_us[where] = self_us.get(where, 0) + dt
    return [f"  {t / 1000:8.1f} ms  {where}" for where, t in sorted(self_us.items(), key=lambda x: -x[1])[:top]]


def trace_summary(path: str, top: int = 15) -> list:
    """Where chromium's time went in the trace at ``path`` (Chrome's JSON trace format): busy
    time per thread name (its top-level tasks), then the events with the most self time (their
    duration less that of the events nested in them, on the same thread), as printable lines."""
    with open(path) as f:
        events = json.load(f)
    events = events.get("traceEvents", events) if isinstance(events, dict) else events
    names = {(e.get("pid"), e.get("tid")): e["args"]["name"] for e in events
             if e.get("ph") == "M" and e.get("name") == "thread_name"}
    per_thread: dict = {}
    for e in events:
        if e.get("ph") == "X" and "dur" in e:
            per_thread.setdefault((e.get("pid"), e.get("tid")), []).append(e)
    busy: dict = {}
    self_time: dict = {}
    for thread, evs in per_thread.items():
        name = names.get(thread, "?")
        evs.sort(key=lambda e: (e["ts"], -e["dur"]))
        stack: list = []  # [end, event name, time of its children, its duration]
        for e in evs:
            while stack and e["ts"] >= stack[-1][0]:
                end, ev, children, dur = stack.pop()
                self_time[(name, ev)] = self_time.get((name, ev), 0) + dur - children
            if stack:
                stack[-1][2] += e["dur"]
            else:
                busy[name] = busy.get(name, 0) + e["dur"]
            stack.append([e["ts"] + e["dur"], e["name"], 0, e["dur"]])
        for end, ev, children, dur in stack:
            self_time[(name, ev)] = self_time.get((name, ev), 0) + dur - children
    lines = ["busy per thread (ms): " + ", ".join(f"{n} {t / 1000:.0f}" for n, t in
                                                  sorted(busy.items(), key=lambda x: -x[1])[:8])]
    for (thread, ev), t in sorted(self_time.items(), key=lambda x: -x[1])[:top]:
        lines.append(f"  {t / 1000:8.1f} ms  {thread:22s} {ev}")
    return lines


def figures(ns, client, cpu, quick: bool, repeats: int) -> dict:
    """The map and tree figures, each the median of ``repeats`` runs (one run is half a
    second, which a pane's poll or a stray process moves by tens of percent)."""
    runs = []
    for _ in range(repeats):
        out = engine.bench_map(ns, client, 1_000 if quick else 10_000, cpu)
        out.update(engine.bench_tree(ns, client, 500 if quick else 5_000, cpu))
        runs.append(out)
    return {key: common.median([r[key] for r in runs]) if isinstance(runs[0][key], float) else runs[0][key]
            for key in runs[0]}


def watched(p, args, d: str, r: int, url: str, token: str, lab_pid: int, ns, client, cpu, address: str,
            panes) -> dict:
    """One round with the panes open: a fresh chromium opens them, the figures are taken while
    they watch, chromium closes. The figures, the CPU per kind of process, the runs drawn."""
    context = p.chromium.launch_persistent_context(
        f"{d}/profile-{r}", executable_path=args.chromium, headless=True, args=LAUNCH_ARGS,
        viewport={"width": 1400, "height": 900})
    try:
        page = context.pages[0] if context.pages else context.new_page()
        page.set_default_timeout(60_000)
        open_panes(page, url, token, address, panes, workspace=f"round-{r}")
        cluster_pids = set(client.run(os.getpid).values()) | {client.run_on_scheduler(os.getpid)}
        tracer = Tracer(context, page) if args.trace and r == 0 else None
        used0, wall0 = cpu_by_process(lab_pid, cluster_pids), time.monotonic()
        out = {"figures": figures(ns, client, cpu, args.quick, args.repeats)}
        used1, wall = cpu_by_process(lab_pid, cluster_pids), time.monotonic() - wall0
        out["cpu"] = {kind: used1[kind] - used0[kind] for kind in used0}
        out["wall"] = wall
        if tracer:
            tracer.save(page, args.trace)
            out["trace"] = trace_summary(args.trace) + ["script functions by self time (sampled):"] + tracer.js
        out["drawn"] = page.locator("#xsched-pane-task-stream canvas").get_attribute("data-task-count")
        return out
    finally:
        context.close()


def main(argv=None) -> None:
    """Print the map and tree figures without and with the panes open, alternating, and their
    ratios: this machine's speed moves by tens of percent within minutes, so one figure taken
    before another says little; the median of rounds taken side by side says more."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small sizes: a smoke check")
    ap.add_argument("--chromium", default=os.environ.get("XSCHED_CHROMIUM", "/usr/bin/chromium"))
    ap.add_argument("--panes", default=",".join(PANES),
                    help="which panes to open, comma-separated titles (default: all; the task stream always)")
    ap.add_argument("--pane-interval", type=int, metavar="MS",
                    help="the panes' paneInterval setting in ms (default: the extension's default)")
    ap.add_argument("--rounds", type=int, default=3,
                    help="rounds of (no browser, panes open), alternating, and a last figure without a "
                         "browser: each round's ratio is to the mean of the figures without a browser just "
                         "before and just after it, so a drift of the machine's speed cancels (default 3)")
    ap.add_argument("--repeats", type=int, default=5,
                    help="runs of map and of tree per figure, the median taken (default 5)")
    ap.add_argument("--trace", metavar="PATH",
                    help="record chromium's trace in the first round with the panes open into PATH and print "
                         "where its time went")
    args = ap.parse_args(argv)
    panes = [p.strip() for p in args.panes.split(",") if p.strip()]
    if "Task Stream" not in panes:
        panes.insert(0, "Task Stream")  # (its drawing is what tells that the panes are live)
    unknown = sorted(set(panes) - set(PANES))
    if unknown:
        ap.error(f"no pane {unknown}; the panes are {', '.join(PANES)}")
    if args.rounds < 1:
        ap.error("--rounds must be at least 1")
    from playwright.sync_api import sync_playwright

    ns = common.load_impl("xsched")
    cluster = ns.LocalCluster(n_workers=2, threads_per_worker=1, processes=True)
    client = ns.Client(cluster)
    lab = None
    rounds = []
    try:
        here = os.path.dirname(os.path.abspath(__file__))
        for name in ("common.py", "engine.py"):  # engine's task functions, importable on the workers
            client.upload_file(os.path.join(here, name))
        cpu = engine.CPUMeter(client)
        with tempfile.TemporaryDirectory() as d:
            lab, url, token = start_lab(d, args.pane_interval)  # (idle while no browser is connected)
            with sync_playwright() as p:
                bare = [figures(ns, client, cpu, args.quick, args.repeats)]
                for r in range(args.rounds):
                    after = watched(p, args, d, r, url, token, lab.pid, ns, client, cpu, cluster.scheduler_address,
                                    panes)
                    bare.append(figures(ns, client, cpu, args.quick, args.repeats))
                    before = {k: (v + bare[-1][k]) / 2 if isinstance(v, float) else v for k, v in bare[-2].items()}
                    rounds.append((before, after))
            _stop(lab)
            lab = None
    finally:
        if lab is not None:
            _stop(lab)
        client.close()
        cluster.close()
    every = f"every {args.pane_interval} ms" if args.pane_interval else "at the default interval"
    print(f"panes open ({every}): {', '.join(panes)}; {len(rounds)} rounds with the panes, each beside the mean "
          f"of the figures without a browser just before and after it; every figure the median of {args.repeats} runs")
    rows = [("map tasks/s", "map_tasks_per_s"), ("tree tasks/s", "tree_tasks_per_s"),
            ("map CPU ms/task", "map_cpu_ms_per_task"), ("tree CPU ms/task", "tree_cpu_ms_per_task")]
    medians = {}
    for label, key in rows:
        ratios = [after["figures"][key] / before[key] for before, after in rounds]
        medians[key] = common.median(ratios)
        print(f"{label:18s} " + "   ".join(f"{before[key]:9.3f} -> {after['figures'][key]:9.3f}"
                                           for before, after in rounds)
              + f"   ratios {', '.join(f'{x:.3f}' for x in ratios)}   median {medians[key]:.3f}")
    for r, (_, after) in enumerate(rounds):
        print(f"round {r}: CPU while the panes watched ({after['wall']:.1f} s of work): " + ", ".join(
            f"{kind} {t:.2f} s ({100 * t / after['wall']:.0f} % of a core)" for kind, t in after["cpu"].items())
            + f"; the task stream drew {after['drawn']} runs")
    print(json.dumps({"median_ratio": medians,
                      "rounds": [{"no_browser": b, "panes_open": a["figures"]} for b, a in rounds]}))
    if args.trace:
        print(f"chromium's trace, first round ({args.trace}):")
        print("\n".join(rounds[0][1]["trace"]))


if __name__ == "__main__":
    main()
