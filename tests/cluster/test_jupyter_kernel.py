"""Embedded kernels (xsched.jupyter.kernel) and the magics that reach them.

Every kernel runs in a separate *host* process whose main thread runs an
asyncio loop ticking every 10 ms, like a scheduler or worker; the test process
only holds jupyter_client connections, so it stays clean. Hosts are driven by
lines on stdin and answer with "@@<tag> <json>" lines on stdout; every other
line on their stdout is what the host printed.
"""

from __future__ import annotations

import json
import os
import queue
import stat
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from tests.support.helpers import wait_until

# (one test process runs this module: what its module-scoped fixtures start, it starts once)
pytestmark = pytest.mark.xdist_group("jupyter-kernel")

jupyter_client = pytest.importorskip("jupyter_client")
psutil = pytest.importorskip("psutil")

REPO = Path(__file__).resolve().parents[2]

HOST_SCRIPT = textwrap.dedent(
    r'''
    import asyncio, builtins, json, logging, os, signal, sys, threading, time
    from xsched.jupyter.kernel import kernel_info, start_kernel, stop_kernel

    class Live:
        """Stands in for a scheduler: state changed by the host loop only."""
        def __init__(self):
            self.ticks = 0
            self.max_gap = 0.0
            self.value = None
            self.processing = {"tcp://w1": {"task-1"}}

    def process_state():
        """What a kernel must not change in its host process."""
        return {
            "excepthook": repr(sys.excepthook),
            "displayhook": repr(sys.displayhook),
            "sigint": id(signal.getsignal(signal.SIGINT)),
            "environ": dict(os.environ),
            "path": list(sys.path),
            "main": repr(sys.modules["__main__"]),
            "ps1": hasattr(sys, "ps1"),
            "input": repr(builtins.input),
            "root_handlers": len(logging.getLogger().handlers),
            "tornado_handlers": len(logging.getLogger("tornado").handlers),
            "threading_excepthook": repr(threading.excepthook),
        }

    def changes(before, after):
        """Names of what changed, with the changed environment variables and sys.path entries."""
        out = []
        for key in before:
            if before[key] == after[key]:
                continue
            if key == "environ":
                keys = set(before[key]) | set(after[key])
                out.append("environ:" + ",".join(sorted(k for k in keys if before[key].get(k) != after[key].get(k))))
            elif key == "path":
                out.append(f"path:{sorted(set(before[key]) ^ set(after[key]))}")
            else:
                out.append(key)
        return out

    def say(tag, payload=None):
        sys.__stdout__.write(f"@@{tag} {json.dumps(payload)}\n")
        sys.__stdout__.flush()

    async def main():
        state = Live()
        loop = asyncio.get_running_loop()

        async def tick():
            last = loop.time()
            while True:
                await asyncio.sleep(0.01)
                now = loop.time()
                state.max_gap = max(state.max_gap, now - last)
                last = now
                state.ticks += 1

        ticker = asyncio.create_task(tick())
        before = process_state()
        stdout_before, stderr_before = sys.stdout, sys.stderr
        t0 = time.perf_counter()
        info = await start_kernel({"state": state}, name="testhost")
        start_s = time.perf_counter() - t0
        again = await start_kernel({"other": 1}, name="other")
        during = process_state()
        say("ready", {"info": info, "start_s": start_s, "same_info": again == info,
                      "changed_while_running": changes(before, during)})
        while True:
            line = (await loop.run_in_executor(None, sys.stdin.readline)).strip()
            cmd, _, arg = line.partition(" ")
            if cmd in ("exit", ""):
                break
            if cmd == "set":
                state.value = json.loads(arg)
                say("set")
            elif cmd == "restart":
                old = kernel_info()
                t0 = time.perf_counter()
                stop_kernel()
                stop_s = time.perf_counter() - t0
                after_stop = process_state()
                stdout_restored = sys.stdout is stdout_before and sys.stderr is stderr_before
                new = await start_kernel({"state": state}, name="testhost-2")
                say("restart", {
                    "info": new, "stop_s": stop_s,
                    "old_file_exists": os.path.exists(old["connection_file"]),
                    "changed_after_stop": changes(before, after_stop),
                    "stdout_restored": stdout_restored,
                })
            elif cmd == "check":
                now = process_state()
                say("check", {"kernel": kernel_info(), "stdout_restored": sys.stdout is stdout_before and sys.stderr is stderr_before,
                              "changed": changes(before, now),
                              "threads": sorted(t.name for t in threading.enumerate())})
        ticker.cancel()

    asyncio.run(main())
    print("host main returned", flush=True)
    '''
)

MAGIC_CLIENT_SCRIPT = textwrap.dedent(
    r'''
    import json, sys
    from IPython.core.interactiveshell import InteractiveShell
    from IPython.utils.capture import capture_output
    from xsched.jupyter.magics import (
        RemoteKernelError, load_ipython_extension, register_kernel_magic, remember_scheduler_kernel)

    info = json.loads(sys.argv[1])
    shell = InteractiveShell.instance()
    register_kernel_magic(info, "host", shell=shell)
    load_ipython_extension(shell)
    shell.user_ns["infos"] = {"tcp://somewhere:1": info}

    def run(cell):
        with capture_output() as cap:
            result = shell.run_cell(cell)
        error = result.error_in_exec or result.error_before_exec
        return {
            "cell": cell,
            "ok": result.success,
            "error": type(error).__name__ if error else None,
            "remote_ename": getattr(error, "ename", None),
            "stdout": cap.stdout,
            "stderr": cap.stderr,
            "outputs": [o.data for o in cap.outputs],
        }

    results = [run(c) for c in [
        "%host sorted(state.processing)",
        "%host print('printed in the kernel')",
        "%%host\nfrom IPython.display import HTML\nHTML('<b>bold</b>')",
        "%host 1/0",
        "%scheduler 1 + 1",
        "%remote infos['tcp://somewhere:1'] 6 * 7",
        "%remote missing 1",
        "r = %host sorted(state.processing)\nprint(repr(r), type(r).__name__)",
        "r = %remote infos['tcp://somewhere:1'] print('side') or __import__('threading').Lock()\nprint(type(r).__name__)",
        "r = %host x = 5\nprint(r)",
        "r = %host x\nprint(r)",
        "r = %host vars().get('_xsched_magic_value', 'gone')\nprint(r)",
    ]]
    remember_scheduler_kernel(info)
    results.append(run("%scheduler state.processing"))
    results.append(run("r = %scheduler state.processing\nprint(r == {'tcp://w1': {'task-1'}})"))
    print("@@magics " + json.dumps(results))
    '''
)


# ---------------------------------------------------------------------------
# fixtures and helpers
# ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def jupyter_env(tmp_path_factory):
    """IPYTHONDIR/JUPYTER_* in temporary folders, here and in every host."""
    base = tmp_path_factory.mktemp("jupyter-env")
    runtime = base / "runtime"
    runtime.mkdir(mode=0o700)
    env = {
        "IPYTHONDIR": str(base / "ipython"),
        "JUPYTER_RUNTIME_DIR": str(runtime),
        "JUPYTER_CONFIG_DIR": str(base / "config"),
        "JUPYTER_DATA_DIR": str(base / "data"),
    }
    mp = pytest.MonkeyPatch()
    for k, v in env.items():
        mp.setenv(k, v)
    yield env
    mp.undo()


class Host:
    """A host process running an embedded kernel; killed (by pid) at teardown."""

    def __init__(self, env: dict, script_dir: Path):
        script = script_dir / "host.py"
        script.write_text(HOST_SCRIPT)
        full_env = {**os.environ, **env, "PYTHONPATH": str(REPO), "PYTHONUNBUFFERED": "1"}
        self.proc = subprocess.Popen(
            [sys.executable, str(script)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=full_env,
            cwd=str(script_dir),
        )
        self.lines: list[str] = []  # plain output of the host (not @@ replies)
        self.replies: queue.Queue = queue.Queue()
        self.stderr = ""
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self._err_reader = threading.Thread(target=self._read_err, daemon=True)
        self._err_reader.start()
        self.ready = self.reply("ready", timeout=30)
        self.info = self.ready["info"]

    def _read(self):
        for line in self.proc.stdout:
            if line.startswith("@@"):
                tag, _, payload = line[2:].partition(" ")
                self.replies.put((tag, json.loads(payload)))
            else:
                self.lines.append(line.rstrip("\n"))

    def _read_err(self):
        for line in self.proc.stderr:
            self.stderr += line

    def reply(self, tag: str, timeout: float = 20):
        deadline = time.monotonic() + timeout
        while True:
            try:
                got, payload = self.replies.get(timeout=0.2)
            except queue.Empty:
                exited = self.proc.poll() is not None and not self._reader.is_alive()
                if exited or time.monotonic() > deadline:
                    self._err_reader.join(2)
                    raise AssertionError(
                        f"host sent no @@{tag} within {timeout} s; rc={self.proc.poll()} stderr:\n{self.stderr}"
                    ) from None
                continue
            if got == tag:
                return payload

    def send(self, line: str):
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def exit(self, timeout: float = 15) -> tuple[int, float]:
        t0 = time.perf_counter()
        self.send("exit")
        rc = self.proc.wait(timeout)
        self._reader.join(5)
        self._err_reader.join(5)
        return rc, time.perf_counter() - t0

    def close(self):
        """Let the host exit (so its atexit hook cleans up); kill it if it does not."""
        if self.proc.poll() is None:
            try:
                self.exit(timeout=10)
            except Exception:
                pass
        self.kill()

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()  # by pid, never by name
            self.proc.wait(10)
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            try:
                stream.close()
            except Exception:
                pass


@pytest.fixture
def make_host(jupyter_env, tmp_path):
    hosts: list[Host] = []

    def make() -> Host:
        host = Host(jupyter_env, tmp_path)
        hosts.append(host)
        return host

    yield make
    for host in hosts:
        host.close()


@pytest.fixture(scope="module")
def shared_host(jupyter_env, tmp_path_factory):
    host = Host(jupyter_env, tmp_path_factory.mktemp("host"))
    yield host
    host.close()


def connect(info: dict):
    client = jupyter_client.BlockingKernelClient()
    client.load_connection_info(info)
    client.start_channels(hb=False)
    client.wait_for_ready(timeout=20)
    return client


@pytest.fixture
def kc(shared_host):
    client = connect(shared_host.info)
    yield client
    client.stop_channels()


def run(client, code: str, timeout: float = 20):
    """Execute code; return (reply content, IOPub outputs other than status/input)."""
    outputs = []

    def hook(msg):
        if msg["header"]["msg_type"] not in ("status", "execute_input"):
            outputs.append((msg["header"]["msg_type"], msg["content"]))

    reply = client.execute_interactive(code, output_hook=hook, timeout=timeout, stop_on_error=False)
    return reply["content"], outputs


def value(client, expr: str):
    content, outputs = run(client, expr)
    assert content["status"] == "ok", content
    results = [c["data"]["text/plain"] for t, c in outputs if t == "execute_result"]
    assert results, outputs
    return results[-1]


def streams(outputs, name: str) -> str:
    return "".join(c["text"] for t, c in outputs if t == "stream" and c["name"] == name)


def wait_for_output(client, msg_id: str, marker: str, timeout: float = 20) -> None:
    """Block until the cell ``msg_id`` has printed ``marker`` (it is then running)."""
    deadline = time.monotonic() + timeout
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise AssertionError(f"the cell never printed {marker!r} within {timeout} s")
        try:
            msg = client.get_iopub_msg(timeout=left)
        except queue.Empty:
            continue
        if (msg["parent_header"].get("msg_id") == msg_id and msg["header"]["msg_type"] == "stream"
                and marker in msg["content"]["text"]):
            return


STARTED = "@@cell-started"


def interrupt_running(client, code: str) -> dict:
    """Run ``code``, which prints STARTED once it is inside the part to interrupt, and
    interrupt it after that (not after a guessed delay)."""
    assert STARTED in code
    msg_id = client.execute(code, stop_on_error=False)
    wait_for_output(client, msg_id, STARTED)
    client.control_channel.send(client.session.msg("interrupt_request", {}))
    while True:
        reply = client.get_shell_msg(timeout=15)
        if reply["parent_header"].get("msg_id") == msg_id:
            return reply["content"]


# ---------------------------------------------------------------------------
# tests
# ---------------------------------------------------------------------------
@pytest.mark.timeout(60)
def test_start_returns_serialisable_info_and_is_idempotent(shared_host):
    info = shared_host.info
    assert json.loads(json.dumps(info)) == info
    assert isinstance(info["key"], str) and len(info["key"]) >= 16
    assert info["ip"] == "127.0.0.1" and info["transport"] == "tcp"
    assert info["name"] == "testhost" and info["pid"] == shared_host.proc.pid
    assert shared_host.ready["same_info"], "a second start_kernel() must return the running kernel"
    # a running kernel changes nothing process-wide but sys.stdout/sys.stderr
    assert shared_host.ready["changed_while_running"] == []
    print(f"\nkernel start: {shared_host.ready['start_s']:.3f} s")


@pytest.mark.timeout(60)
def test_connection_file_private_and_sockets_on_loopback(shared_host):
    path = Path(shared_host.info["connection_file"])
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) & 0o777 == 0o700  # jupyter_client adds the sticky bit
    assert path.parent.parent == Path(os.environ["JUPYTER_RUNTIME_DIR"])
    assert json.loads(path.read_text())["key"] == shared_host.info["key"]
    listening = [
        c for c in psutil.Process(shared_host.proc.pid).net_connections(kind="tcp") if c.status == psutil.CONN_LISTEN
    ]
    ports = {shared_host.info[k] for k in ("shell_port", "iopub_port", "stdin_port", "control_port", "hb_port")}
    assert ports <= {c.laddr.port for c in listening}
    assert {c.laddr.ip for c in listening} == {"127.0.0.1"}


@pytest.mark.timeout(60)
def test_namespace_is_live(shared_host, kc):
    shared_host.send('set {"marker": 41}')
    shared_host.reply("set")
    assert value(kc, "state.value") == "{'marker': 41}"
    shared_host.send('set {"marker": 42}')
    shared_host.reply("set")
    assert value(kc, "state.value['marker']") == "42"
    first = int(value(kc, "state.ticks"))
    wait_until(lambda: int(value(kc, "state.ticks")) > first, timeout=10,
               msg="the host loop's changes show in the kernel")
    # a consistent snapshot taken on the host loop
    assert value(kc, "run_on_host_loop(lambda: sorted(state.processing))") == "['tcp://w1']"
    assert value(kc, "import threading; run_on_host_loop(threading.current_thread).name") == "'MainThread'"


@pytest.mark.timeout(60)
def test_kernel_output_goes_to_iopub_and_host_output_stays_home(shared_host, kc):
    code = textwrap.dedent(
        """
        import sys, threading
        print("K-OUT from the cell")
        print("K-ERR from the cell", file=sys.stderr)
        t = threading.Thread(target=lambda: print("T-OUT from another thread")); t.start(); t.join()
        run_on_host_loop(lambda: print("H-OUT from the host loop"))
        """
    )
    content, outputs = run(kc, code)
    assert content["status"] == "ok", content
    out, err = streams(outputs, "stdout"), streams(outputs, "stderr")
    assert "K-OUT" in out and "K-ERR" in err
    assert "T-OUT" not in out + err and "H-OUT" not in out + err
    wait_until(lambda: any("H-OUT" in l for l in shared_host.lines), timeout=10, msg="H-OUT on the host's stdout")
    host_out = "\n".join(shared_host.lines)
    assert "T-OUT from another thread" in host_out and "H-OUT from the host loop" in host_out
    assert "K-OUT" not in host_out


@pytest.mark.timeout(60)
def test_host_loop_keeps_ticking_while_a_cell_sleeps(kc):
    # the cell blocks in time.sleep until the host loop has ticked 20 times: it ends only if
    # the loop keeps running while a cell sleeps (the deadline only turns a hang into a failure)
    code = ("import time\nt0 = state.ticks\ndeadline = time.monotonic() + 20\n"
            "while state.ticks < t0 + 20 and time.monotonic() < deadline:\n    time.sleep(0.005)\n"
            "print(state.ticks - t0)")
    content, outputs = run(kc, code, timeout=40)
    assert content["status"] == "ok", content
    ticks = int(streams(outputs, "stdout"))
    assert ticks >= 20, f"the host loop ticked {ticks} times while the cell slept (stalled)"
    print(f"\nhost ticks while the cell slept: {ticks}; max tick gap so far: "
          f"{float(value(kc, 'state.max_gap')) * 1000:.1f} ms")


@pytest.mark.timeout(60)
def test_interrupt_busy_cells(kc):
    reply = interrupt_running(kc, f"i = 0\nwhile True:\n    i += 1\n    if i == 1000:\n        print({STARTED!r}, flush=True)")
    assert reply["status"] == "error" and reply["ename"] == "KeyboardInterrupt", reply
    # STARTED is printed by a callback of the loop, so only once the cell is suspended in its
    # await: printed by the cell itself, an interrupt could land before the await and be a
    # KeyboardInterrupt in running cell code (which is right, but not what this checks)
    reply = interrupt_running(kc, "import asyncio\nasyncio.get_running_loop().call_soon("
                                  f"lambda: print({STARTED!r}, flush=True))\nawait asyncio.sleep(3600)")
    assert reply["status"] == "error" and reply["ename"] == "CancelledError", reply
    reply = interrupt_running(kc, f"import time\nprint({STARTED!r}, flush=True)\nwhile True:\n    time.sleep(0.01)")
    assert reply["status"] == "error" and reply["ename"] == "KeyboardInterrupt", reply
    # the kernel and the host survive
    assert int(value(kc, "i")) >= 1000  # the first cell was interrupted inside its loop
    t0 = int(value(kc, "state.ticks"))
    wait_until(lambda: int(value(kc, "state.ticks")) > t0, timeout=10, msg="the host loop still ticks")
    # stop_kernel() from inside the kernel is refused with a clear message
    content, _ = run(kc, "from xsched.jupyter.kernel import stop_kernel\nstop_kernel()")
    assert content["status"] == "error" and "cannot run inside the kernel" in content["evalue"]


@pytest.mark.timeout(90)
def test_magics_reemit_remote_output(shared_host, jupyter_env, tmp_path):
    script = tmp_path / "magic_client.py"
    script.write_text(MAGIC_CLIENT_SCRIPT)
    env = {**os.environ, **jupyter_env, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen(
        [sys.executable, str(script), json.dumps(shared_host.info)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=str(tmp_path),
    )
    try:
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    assert proc.returncode == 0, err
    line = next(l for l in out.splitlines() if l.startswith("@@magics "))
    r = {res["cell"]: res for res in json.loads(line[len("@@magics "):])}

    # a line holding one expression returns its value: IPython shows it as the cell's result
    res = r["%host sorted(state.processing)"]
    assert res["ok"] and res["outputs"] == [] and "['tcp://w1']" in res["stdout"]
    res = r["%host print('printed in the kernel')"]
    assert res["ok"] and res["stdout"] == "printed in the kernel\n"
    res = r["%%host\nfrom IPython.display import HTML\nHTML('<b>bold</b>')"]
    assert res["ok"] and res["outputs"][0]["text/html"] == "<b>bold</b>"
    res = r["%host 1/0"]
    assert not res["ok"] and res["error"] == "RemoteKernelError" and res["remote_ename"] == "ZeroDivisionError"
    assert "Error in kernel 'testhost'" in res["stdout"] and "ZeroDivisionError" in res["stdout"]
    res = r["%scheduler 1 + 1"]
    assert not res["ok"] and "start_ipython_scheduler()" in res["stderr"]
    res = r["%remote infos['tcp://somewhere:1'] 6 * 7"]
    assert res["ok"] and "42" in res["stdout"]
    res = r["%remote missing 1"]
    assert not res["ok"] and "NameError" in res["stderr"]
    res = r["%scheduler state.processing"]
    assert res["ok"] and "{'tcp://w1': {'task-1'}}" in res["stdout"]
    # r = %magic expr: the value itself, here (pickled there)
    res = r["r = %host sorted(state.processing)\nprint(repr(r), type(r).__name__)"]
    assert res["ok"] and res["stdout"] == "['tcp://w1'] list\n"
    res = r["r = %scheduler state.processing\nprint(r == {'tcp://w1': {'task-1'}})"]
    assert res["ok"] and res["stdout"] == "True\n"
    # its output still shows; a value that cannot be pickled comes back as its repr
    res = r["r = %remote infos['tcp://somewhere:1'] print('side') or __import__('threading').Lock()\nprint(type(r).__name__)"]
    assert res["ok"] and res["stdout"] == "side\nRemoteRepr\n"
    # statements return nothing; the kernel keeps no reference to a returned value
    res = r["r = %host x = 5\nprint(r)"]
    assert res["ok"] and res["stdout"] == "None\n"
    res = r["r = %host x\nprint(r)"]
    assert res["ok"] and res["stdout"] == "5\n"
    res = r["r = %host vars().get('_xsched_magic_value', 'gone')\nprint(r)"]
    assert res["ok"] and res["stdout"] == "gone\n"


@pytest.mark.timeout(90)
def test_magics_in_a_real_notebook(shared_host):
    """The way users meet it: a notebook kernel (run by nbclient) with %load_ext."""
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    cells = [
        f"info = {shared_host.info!r}\n%load_ext xsched.jupyter.magics\n"
        "from xsched.jupyter.magics import remember_scheduler_kernel\nremember_scheduler_kernel(info)",
        "%scheduler state.processing",
        "%scheduler print('hello from the host')",
        "%%scheduler\nfrom IPython.display import HTML\nHTML('<b>bold</b>')",
        "%remote info sorted(state.processing)",
        "%scheduler 1/0",
    ]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    nbclient.NotebookClient(nb, timeout=60, kernel_name="python3", allow_errors=True).execute()
    outs = [cell.outputs for cell in nb.cells]
    assert outs[1][0]["data"]["text/plain"] == "{'tcp://w1': {'task-1'}}"
    assert outs[2][0]["output_type"] == "stream" and outs[2][0]["text"] == "hello from the host\n"
    assert outs[3][0]["data"]["text/html"] == "<b>bold</b>"
    assert outs[4][0]["data"]["text/plain"] == "['tcp://w1']"
    error = outs[5][0]
    assert error["output_type"] == "error" and error["ename"] == "RemoteKernelError"
    assert "ZeroDivisionError" in error["evalue"] and any("ZeroDivisionError" in line for line in error["traceback"])


@pytest.mark.timeout(90)
def test_stop_restart_and_shutdown_request_leave_no_trace(make_host):
    host = make_host()
    old = host.info
    host.send("restart")
    r = host.reply("restart")
    assert not r["old_file_exists"]
    assert r["stdout_restored"]
    assert r["changed_after_stop"] == []
    new = r["info"]
    assert new["connection_file"] != old["connection_file"] and new["name"] == "testhost-2"
    client = connect(new)
    try:
        assert value(client, "state.processing") == "{'tcp://w1': {'task-1'}}"
        client.shutdown()  # a console's "exit": the kernel stops, the host keeps running
        deadline = time.monotonic() + 10
        while True:
            host.send("check")
            check = host.reply("check")
            if check["kernel"] is None or time.monotonic() > deadline:
                break
            time.sleep(0.1)
    finally:
        client.stop_channels()
    assert check["kernel"] is None
    assert check["stdout_restored"]
    assert check["changed"] == []
    assert not os.path.exists(new["connection_file"])
    assert not any(name.startswith(("xsched-kernel", "IOPub", "Control", "Shell channel", "Heartbeat"))
                   for name in check["threads"]), check["threads"]
    rc, _ = host.exit()
    assert rc == 0, host.stderr
    print(f"\nstop_kernel(): {r['stop_s'] * 1000:.1f} ms")


@pytest.mark.timeout(60)
def test_host_exits_cleanly_with_a_kernel_running(make_host, jupyter_env):
    # a kernel directory left by a killed process is swept by the next kernel
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait(10)
    stale = Path(jupyter_env["JUPYTER_RUNTIME_DIR"]) / f"xsched-kernel-{dead.pid}-abc123"
    stale.mkdir(mode=0o700)
    (stale / "kernel-xsched-old.json").write_text("{}")
    host = make_host()
    assert not stale.exists()
    client = connect(host.info)
    try:
        assert value(client, "1 + 1") == "2"
    finally:
        client.stop_channels()
    rc, seconds = host.exit()
    assert rc == 0, host.stderr
    assert "host main returned" in host.lines
    assert not os.path.exists(os.path.dirname(host.info["connection_file"]))
    for noise in ("Traceback", "Task was destroyed", "without encryption"):
        assert noise not in host.stderr, host.stderr
    print(f"\nhost exit with an idle kernel: {seconds:.2f} s")


@pytest.mark.timeout(60)
def test_host_exits_cleanly_with_a_busy_cell(make_host):
    host = make_host()
    client = connect(host.info)
    try:
        # a cell stuck in C for longer than any test: the host can exit only by abandoning it.
        # An interrupt that lands between the print and the sleep would end a plain cell, so
        # this one swallows interrupts: whenever the host tries, the cell stays busy. The print
        # is inside the try too: the output can reach the test (which then stops the host)
        # while the cell's thread is still in the print's Python code (the routed stream's
        # flush), where the interrupt would otherwise land outside the try (seen once under load)
        cell = (f"import time\nwhile True:\n    try:\n        print({STARTED!r}, flush=True)\n"
                "        time.sleep(3600)\n    except KeyboardInterrupt:\n        pass")
        msg_id = client.execute(cell)
        wait_for_output(client, msg_id, STARTED)
        rc, seconds = host.exit(timeout=30)  # a deadline: waiting for the cell would never end
    finally:
        client.stop_channels()
    assert rc == 0, host.stderr
    assert not os.path.exists(host.info["connection_file"])
    assert "abandoning" in host.stderr  # said clearly, not silently
    print(f"\nhost exit with a busy time.sleep(3600) cell: {seconds:.2f} s")


def test_remote_magic_splits_the_info_expression_from_the_code():
    from xsched.jupyter.magics import _split_first_expression as split

    assert split("info['tcp://127.0.0.1:3595'] worker.active") == ("info['tcp://127.0.0.1:3595']", "worker.active")
    assert split("info[ 'a b' ] x + 1") == ("info[ 'a b' ]", "x + 1")
    assert split("info") == ("info", "")


def test_open_qtconsole_says_what_to_install(monkeypatch):
    import importlib.util

    from xsched.jupyter import magics

    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None)
    info = {k: 1 for k in magics.REQUIRED_KEYS}
    with pytest.raises(RuntimeError, match="pip install qtconsole"):
        magics.open_qtconsole(info)
    with pytest.raises(ValueError, match="lacks hb_port"):
        magics.open_qtconsole({k: 1 for k in magics.REQUIRED_KEYS if k != "hb_port"})


def test_registering_magics_outside_ipython_is_a_noop():
    from xsched.jupyter import magics

    info = {k: 1 for k in magics.REQUIRED_KEYS}
    assert magics.register_remote_magic() is False
    assert magics.register_kernel_magic(info, "scheduler") is False


@pytest.mark.timeout(60)
def test_a_process_running_ipython_already_is_told_why_no_kernel_starts(tmp_path):
    """A notebook with LocalCluster(processes=False) hosts the scheduler itself: IPython allows
    one shell per process, so start_kernel says so and what to use instead, rather than
    failing deep in ipykernel's singletons."""
    script = textwrap.dedent("""
        import asyncio
        from IPython.core.interactiveshell import InteractiveShell
        from xsched.jupyter.kernel import KernelStartError, start_kernel
        InteractiveShell.instance()          # as in a notebook's or a terminal's process
        try:
            asyncio.run(start_kernel({}, name="scheduler"))
        except KernelStartError as e:
            print("REFUSED", e)
    """)
    env = dict(os.environ, IPYTHONDIR=str(tmp_path / "ipython"), JUPYTER_RUNTIME_DIR=str(tmp_path / "rt"))
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=50, env=env)
    assert proc.returncode == 0, proc.stderr
    assert "REFUSED" in proc.stdout and "already runs IPython" in proc.stdout
    assert "processes=True" in proc.stdout and "run_on_scheduler" in proc.stdout
