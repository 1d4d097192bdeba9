"""Debugging tasks where they run, on a real cluster: client.debug on a failed future (pdb in
the worker's process, typed through a scripted ``input()``), one session per task, clear
errors for what cannot be debugged, post-mortems dropped when released and under memory
pressure, recreate_error_locally, and breakpoints (paused, listed, continued, quit, timed
out) while the worker's other thread keeps running tasks.

Most tests share one cluster of this module: one worker with two threads, so a paused task
and the tasks running beside it are on the same worker. Nothing waits by sleeping: tasks are
held with a file ``Gate`` and conditions are polled with a deadline."""

from __future__ import annotations

import builtins
import gc
import os
import re
import warnings

import numpy as np
import pytest

import xsched
from tests.support.helpers import Gate, wait_until
from xsched import Client, DebugError, DebuggerQuit, LocalCluster

# (one test process runs this module: what its module-scoped fixtures start, it starts once)
pytestmark = [pytest.mark.cluster, pytest.mark.timeout(120), pytest.mark.xdist_group("debugging")]


# ---------------------------------------------------------------------- what the tasks run
def process(chunk):
    pid_here = os.getpid()  # noqa: F841 - read by the debugger
    scale = len(chunk) - 3
    return normalise(chunk, scale)


def normalise(chunk, scale):
    return [x / scale for x in chunk]


def make_chunk(n):
    return list(range(n))


def holds_a_big_array(mb):
    big = np.ones(mb * 2**20 // 8)  # noqa: F841 - what the post-mortem keeps
    raise ValueError(f"failed holding {mb} MB")


def allocate(mb):
    return np.ones(mb * 2**20 // 8)


def paused(x):
    y = x * 10
    breakpoint()
    y += 1
    return y


def paused_by_xsched(x):
    y = x + 1
    xsched.breakpoint()
    return y


def inc(x):
    return x + 1


# ---------------------------------------------------------------------- fixtures
@pytest.fixture(scope="module")
def c():
    """A client on this module's cluster: one worker with two threads."""
    with LocalCluster(n_workers=1, threads_per_worker=2) as cluster, Client(cluster) as client:
        client.wait_for_workers(1, timeout=30)
        yield client
        gc.collect()


@pytest.fixture
def typed(monkeypatch):
    """``typed("p x", "q")``: what ``input()`` answers, in order (EOFError after the last);
    returns the prompts it was asked with."""
    def script(*lines):
        answers, prompts = list(lines), []

        def fake_input(prompt=""):
            prompts.append(prompt)
            if not answers:
                raise EOFError
            return answers.pop(0)

        monkeypatch.setattr(builtins, "input", fake_input)
        return prompts

    return script


@pytest.fixture
def gate(tmp_path):
    g = Gate(tmp_path)
    try:
        yield g
    finally:
        g.open()


def worker_of(client) -> tuple[str, int]:
    [(addr, pid)] = client.run(os.getpid).items()
    return addr, pid


def failed(client, fn, *args):
    f = client.submit(fn, *args)
    with pytest.raises(Exception) as info:
        f.result(timeout=30)
    return f, info.value


def wait_paused(client, key):
    return wait_until(lambda: [b for b in client.breakpoints() if b["key"] == key], timeout=30,
                      msg=f"{key} paused at its breakpoint")


# ---------------------------------------------------------------------- post-mortem
def test_debug_a_failed_future_in_the_frames_of_its_worker(c, typed, capsys):
    addr, pid = worker_of(c)
    f, exc = failed(c, process, [1, 2, 3])
    assert isinstance(exc, ZeroDivisionError)
    assert (exc.__cause__.key, exc.__cause__.blame, exc.__cause__.worker) == (f.key, f.key, addr)
    prompts = typed("p scale", "up", "p pid_here", "p os.getpid()", "down", "where", "ll", "q")
    assert c.debug(f) is None
    out = capsys.readouterr().out
    assert f"post-mortem of task {f.key!r} on worker {addr} (pid {pid})" in out
    assert prompts == ["(Pdb) "] * 8
    lines = out.splitlines()
    # the task raised in normalise's list comprehension; scale exists only in the task's frames
    assert lines[1].startswith("> ") and "<listcomp>()" in lines[1]
    assert lines[3] == "0"  # p scale (the comprehension sees normalise's scale)
    assert lines[lines.index(next(x for x in lines if "normalise()" in x)) + 1].startswith("-> return")
    assert f"{pid}" in lines and str(os.getpid()) not in lines  # the worker's pid, not this process's
    where = out[out.index("process()"):]
    assert where.index("process()") < where.index("normalise()") < where.index("<listcomp>()")
    assert "return [x / scale for x in chunk]" in out  # ll shows the source on the worker
    # the frames stay kept after q: the same post-mortem opens again, from the exception itself
    typed("up", "p chunk", "q")
    c.debug(exc)
    assert "[1, 2, 3]" in capsys.readouterr().out


def test_a_second_attach_is_refused_naming_the_first(c):
    f, _ = failed(c, process, [4, 5, 6])
    addr, _ = worker_of(c)
    first = c.sync(c._debug_attach, addr, f.key)  # a session left open, as another notebook would
    try:
        assert first["prompt"] == "(Pdb) "
        with pytest.raises(DebugError, match=rf"being debugged already.*{first['session']} of {c.id}"):
            c.debug(f)
    finally:
        c.sync(c._debug_detach, addr, first["session"], first)


def test_debug_says_why_a_future_cannot_be_debugged(c, gate):
    done = c.submit(inc, 1)
    assert done.result(timeout=30) == 2
    with pytest.raises(DebugError, match=r"is finished: it has not failed and is not paused"):
        c.debug(done)
    held = c.submit(gate.wait, 7)
    with pytest.raises(DebugError, match=r"is pending: it has not failed"):
        c.debug(held)
    gate.open()
    assert held.result(timeout=30) == 7
    with pytest.raises(DebugError, match="not raised by a task"):
        c.debug(ValueError("raised here"))
    with pytest.raises(TypeError, match="takes a Future, a key or an exception"):
        c.debug(3)


def test_a_post_mortem_goes_when_its_future_is_released_and_its_memory_with_it(c):
    def managed(worker):
        return worker.metrics()["managed"]

    f, _ = failed(c, holds_a_big_array, 64)
    key = f.key
    [held] = c.run(managed).values()
    assert held >= 64 * 2**20  # the frames count as managed memory
    f.release()
    del f
    gc.collect()

    def why(worker):
        return worker.debugging.postmortems.why_dropped(key)

    reason = wait_until(lambda: list(c.run(why).values())[0], timeout=30, msg="the post-mortem dropped")
    assert reason.startswith("released")
    [after] = c.run(managed).values()
    assert after <= held - 64 * 2**20
    addr, _ = worker_of(c)
    reply = c.sync(c._debug_attach, addr, key)
    assert reply["reason"] == "dropped" and "released: no client wants the task" in reply["error"]


def test_recreate_error_locally_raises_the_same_exception_here(c):
    chunk = c.submit(make_chunk, 3)
    f, exc = failed(c, process, chunk)
    with pytest.raises(ZeroDivisionError) as info:
        c.recreate_error_locally(f)
    frames = [tb.name for tb in __import__("traceback").extract_tb(info.value.__traceback__)]
    assert frames[-3:] == ["process", "normalise", "<listcomp>"]  # raised here, in this process's frames
    with xsched.config.set({"debug.recreate-max-bytes": "16B"}):
        with pytest.raises(DebugError, match=r"more than debug.recreate-max-bytes .*client.debug\(future\)"):
            c.recreate_error_locally(f)
    ok = c.submit(inc, 1)
    ok.result(timeout=30)
    with pytest.raises(DebugError, match="finished, not failed"):
        c.recreate_error_locally(ok)


def test_a_notebook_function_recreated_here_shows_its_own_source(c, tmp_path, monkeypatch):
    """A function of the notebook comes back by value, its file renamed ``<dynamic-code>``;
    run here, it is this process's function of that name: its cell's file and lines."""
    import sys
    import traceback

    cell = tmp_path / "cell.py"
    cell.write_text("def halve_all(xs):\n    total = sum(xs)\n    return total / (len(xs) - 3)\n")
    scope = {"__name__": "__main__"}
    exec(compile(cell.read_text(), str(cell), "exec"), scope)
    monkeypatch.setattr(sys.modules["__main__"], "halve_all", scope["halve_all"], raising=False)
    f, _ = failed(c, scope["halve_all"], [1, 2, 3])
    with pytest.raises(ZeroDivisionError) as info:
        c.recreate_error_locally(f)
    last = traceback.extract_tb(info.value.__traceback__)[-1]
    assert (last.filename, last.lineno, last.name) == (str(cell), 3, "halve_all")
    assert last.line == "return total / (len(xs) - 3)"


def fail_when_set(name):
    xsched.Event(name).wait(timeout=30)
    return 1 / 0


def test_recreate_error_locally_waits_for_a_pending_future(c):
    """Called right after submit (as its docstring shows), it waits for the task to fail."""
    import threading
    import uuid

    name = f"recreate-gate-{uuid.uuid4().hex}"
    f = c.submit(fail_when_set, name, pure=False)
    assert f.status == "pending"  # (the gate is shut: it cannot fail yet)

    def open_gate():  # once recreate waits on the future
        wait_until(lambda: f._state._aevent is not None, timeout=30, msg="recreate waiting")
        xsched.Event(name, client=c).set()

    opener = threading.Thread(target=open_gate)
    opener.start()
    try:
        with pytest.raises(ZeroDivisionError):
            c.recreate_error_locally(f)
    finally:
        opener.join(timeout=30)
    xsched.Event(name, client=c).clear()


# ---------------------------------------------------------------------- breakpoints
def test_a_breakpoint_pauses_its_task_while_the_other_thread_runs_tasks(c, typed, capsys):
    addr, _ = worker_of(c)
    f = c.submit(paused, 4)
    [row] = wait_paused(c, f.key)
    assert (row["worker"], row["function"], row["client"]) == (addr, "paused", None)
    assert row["file"].endswith("test_debugging.py")
    table = c.breakpoints()
    assert f.key in repr(table) and "nobody attached" in repr(table) and f.key in table._repr_html_()
    # the worker's second thread goes on computing meanwhile
    assert c.gather(c.map(inc, range(20))) == list(range(1, 21))
    assert not f.done()
    typed("p y", "n", "p y", "c")
    c.debug(f)
    out = capsys.readouterr().out
    assert "y += 1" in out and "40\n" in out and "41\n" in out
    assert f.result(timeout=30) == 41
    assert c.breakpoints() == []


def scheduler_paused(client):
    return client.run_on_scheduler(lambda scheduler: dict(scheduler.extensions["debugging"].paused))


def test_the_scheduler_and_the_progress_bars_show_a_pause(c, typed):
    pytest.importorskip("ipywidgets")
    addr, _ = worker_of(c)
    f = c.submit(paused, 2)
    bar = xsched.progress(f, notebook=True)
    wait_paused(c, f.key)
    wait_until(lambda: bar.paused == {"paused": 1}, msg="the progress bar hears of the pause")
    [label] = [lab for _, lab in bar.bars.values()]
    assert "1 paused at a breakpoint" in label.value
    note = scheduler_paused(c)[f.key]
    assert (note["worker"], note["function"]) == (addr, "paused") and note["file"].endswith("test_debugging.py")
    typed("c")
    c.debug(f)
    assert f.result(timeout=30) == 21
    wait_until(lambda: bar.done, msg="the bar finishes")
    assert bar.paused == {} and "breakpoint" not in label.value
    assert scheduler_paused(c) == {}


def test_the_waiting_client_is_told_where_the_task_paused(c, typed, capsys):
    f = c.submit(paused_by_xsched, 1)
    wait_paused(c, f.key)
    wait_until(lambda: f"task {f.key!r} paused at paused_by_xsched" in capsys.readouterr().err or None, timeout=30,
               msg="the pause reported")
    typed("c")
    c.debug(f.key)
    assert f.result(timeout=30) == 2


def test_q_at_a_breakpoint_fails_the_task_with_debugger_quit(c, typed):
    f = c.submit(paused, 1)
    wait_paused(c, f.key)
    typed("q")
    c.debug(f)
    with pytest.raises(DebuggerQuit, match=rf"{re.escape(f.key)}.*was stopped from its debugger"):
        f.result(timeout=30)
    assert c.submit(inc, 5).result(timeout=30) == 6  # the worker's threads are fine


def test_detaching_leaves_the_task_paused_for_another_attach(c, typed):
    f = c.submit(paused, 2)
    wait_paused(c, f.key)
    typed()  # end of input at once: detach
    c.debug(f)
    [row] = wait_paused(c, f.key)
    assert row["client"] is None and not f.done()
    typed("c")
    c.debug(f)
    assert f.result(timeout=30) == 21


def test_an_unattended_breakpoint_times_out_and_the_task_continues(monkeypatch):
    monkeypatch.setenv("XSCHED_DEBUG__BREAKPOINT_TIMEOUT", "1s")
    with LocalCluster(n_workers=1, threads_per_worker=1) as cluster, Client(cluster) as client:
        f = client.submit(paused, 3)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            assert f.result(timeout=60) == 31
            wait_until(lambda: any("debug.breakpoint-timeout" in str(w.message) for w in caught), timeout=10,
                       msg="the timeout's warning")
        [w] = [w for w in caught if "debug.breakpoint-timeout" in str(w.message)]
        assert f.key in str(w.message) and "it continues" in str(w.message)


def test_pythonbreakpoint_0_in_the_workers_environment_turns_breakpoints_off(monkeypatch):
    monkeypatch.setenv("PYTHONBREAKPOINT", "0")
    with LocalCluster(n_workers=1, threads_per_worker=1) as cluster, Client(cluster) as client:
        assert client.submit(paused, 5).result(timeout=60) == 51
        assert client.submit(paused_by_xsched, 5).result(timeout=60) == 6


def test_a_post_mortem_is_dropped_under_memory_pressure():
    with LocalCluster(n_workers=1, threads_per_worker=1, memory_limit="600MB") as cluster, Client(cluster) as client:
        f, _ = failed(client, holds_a_big_array, 200)
        key = f.key

        def state(worker):
            pm = worker.debugging.postmortems
            return pm.why_dropped(key), pm.nbytes

        assert list(client.run(state).values())[0][1] >= 200 * 2**20
        more = client.submit(allocate, 250)  # kept as data: process memory passes the spill threshold
        wait_until(more.done, timeout=60, msg="allocated")
        reason, nbytes = wait_until(lambda: (lambda s: s if s[0] else None)(list(client.run(state).values())[0]),
                                    timeout=30, msg="the post-mortem dropped")
        assert reason.startswith("memory pressure on the worker") and nbytes == 0
        with pytest.raises(DebugError, match="memory pressure"):
            client.debug(f)


def test_the_debug_magic_opens_a_task_s_frames_and_leaves_local_errors_to_ipython(c, typed, capsys):
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    try:
        shell.run_line_magic("load_ext", "xsched")
        shell.run_line_magic("load_ext", "xsched")  # again: still one wrapper around IPython's own
        shell.user_ns.update(c=c, process=process, paused=paused)
        shell.run_cell("f = c.submit(process, [1, 2, 3])\nf.result()")
        assert isinstance(sys_last_value(), ZeroDivisionError)
        prompts = typed("up", "up", "p pid_here", "q")
        shell.run_line_magic("debug", "")
        out = capsys.readouterr().out
        [pid] = c.run(os.getpid).values()
        assert prompts == ["(Pdb) "] * 4 and out.splitlines()[-1] == str(pid)
        # a local exception: IPython's own debugger, on this process's frames
        shell.run_cell("1 / 0")
        prompts = typed("q")
        shell.run_line_magic("debug", "")
        assert prompts == ["ipdb> "]
        # an interrupted cell while one task is paused: %debug attaches to it
        shell.run_cell("g = c.submit(paused, 6)")
        wait_paused(c, shell.user_ns["g"].key)
        shell.run_cell("raise KeyboardInterrupt")
        prompts = typed("p y", "c")
        shell.run_line_magic("debug", "")
        assert "60" in capsys.readouterr().out.splitlines()
        assert shell.user_ns["g"].result(timeout=30) == 61
    finally:
        InteractiveShell.clear_instance()


def sys_last_value():
    import sys

    return getattr(sys, "last_value", None)


def test_recreate_error_locally_works_from_the_scheduler_once_the_post_mortem_is_gone(c):
    chunk = c.submit(make_chunk, 3)
    f, _ = failed(c, process, chunk)
    key = f.key

    def drop(worker):
        return worker.debugging.postmortems.drop(key, "dropped by the test")

    assert list(c.run(drop).values()) == [True]
    with pytest.raises(ZeroDivisionError):
        c.recreate_error_locally(f)  # the spec from the scheduler, the input fetched from its worker
    # the scheduler keeps a failed task's inputs while the task is wanted: released input futures too
    dep = c.submit(make_chunk, 3)
    g, _ = failed(c, process, dep)
    dep.release()
    g_key = g.key
    c.run(lambda worker: worker.debugging.postmortems.drop(g_key, "dropped by the test"))
    with pytest.raises(ZeroDivisionError):
        c.recreate_error_locally(g)


def test_the_frames_die_with_their_worker_and_recreate_still_works(own_cluster):
    import psutil

    cluster = own_cluster(n_workers=1, threads_per_worker=1)
    with Client(cluster) as client:
        f, _ = failed(client, process, [7, 8, 9])
        [(addr, pid)] = client.run(os.getpid).items()
        psutil.Process(pid).kill()
        wait_until(lambda: addr not in client.scheduler_info()["workers"], timeout=60, msg="the worker gone")
        with pytest.raises(DebugError, match=rf"worker {addr}, where task .* is gone .*frames died with it.*"
                                             r"recreate_error_locally"):
            client.debug(f)
        with pytest.raises(ZeroDivisionError):
            client.recreate_error_locally(f)  # from the scheduler's copy of the task


def test_a_dependent_of_a_failed_task_debugs_the_task_that_raised(c, typed, capsys):
    f, _ = failed(c, process, [1, 2, 3])
    child, exc = failed(c, inc, f)
    assert isinstance(exc, ZeroDivisionError) and exc.__cause__.blame == f.key != child.key
    typed("q")
    c.debug(child)
    assert f"post-mortem of task {f.key!r}" in capsys.readouterr().out


def test_an_asynchronous_client_debugs_and_recreates_too(c, typed, capsys):
    import asyncio

    async def run():
        async with Client(c.cluster, asynchronous=True) as ac:
            f = ac.submit(process, [1, 2, 3])
            with pytest.raises(ZeroDivisionError):
                await f
            typed("p scale", "q")
            await ac.debug(f)
            assert await ac.breakpoints() == []
            with pytest.raises(ZeroDivisionError):
                await ac.recreate_error_locally(f)

    asyncio.run(run())
    assert "\n0\n" in capsys.readouterr().out


def test_stepping_out_of_the_task_s_function_lets_it_finish(c, typed, capsys):
    f = c.submit(paused, 4)
    wait_paused(c, f.key)
    typed("n", "n", "n")  # y += 1, return y (--Return--), out of the task: no stop in the worker's frames
    c.debug(f)
    out = capsys.readouterr().out
    assert "--Return--" in out and "->41" in out and "xsched/worker" not in out
    assert f.result(timeout=30) == 41 and c.breakpoints() == []


def test_ll_shows_a_function_defined_in_a_notebook_cell(c, typed, capsys):
    """A cell's code exists only in the client's linecache (IPython keeps it there, with no
    file on disk): an attach sends it along, so ll on the worker shows the task's source."""
    import linecache

    name = "<ipython-input-4242-cellonly>"
    source = "def from_a_cell(x):\n    scale = x - x\n    return x / scale  # the line that fails\n"
    linecache.cache[name] = (len(source), None, source.splitlines(True), name)
    try:
        namespace: dict = {}
        exec(compile(source, name, "exec"), namespace)
        f, exc = failed(c, namespace["from_a_cell"], 3)
        assert isinstance(exc, ZeroDivisionError)
        typed("ll", "q")
        c.debug(f)
        out = capsys.readouterr().out
        assert "return x / scale  # the line that fails" in out and "scale = x - x" in out
    finally:
        linecache.cache.pop(name, None)


def test_a_console_on_the_worker_debugs_its_failed_task(c, tmp_path, monkeypatch):
    """What the panel's debug button runs in a console on the worker's own kernel:
    worker.debugging.console(key), pdb's commands read with that kernel's input()."""
    jupyter_client = pytest.importorskip("jupyter_client")
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path / "rt"))
    f, exc = failed(c, process, [7, 8, 9])
    (addr, info), = c.start_ipython_workers().items()
    kc = jupyter_client.BlockingKernelClient()
    kc.load_connection_info(info)
    kc.start_channels()
    try:
        kc.wait_for_ready(timeout=30)
        answers, prompts, out = ["up", "p chunk", "q"], [], []

        def stdin_hook(msg):
            prompts.append(msg["content"]["prompt"])
            kc.input(answers.pop(0))

        def output_hook(msg):
            if msg["msg_type"] == "stream":
                out.append(msg["content"]["text"])
            elif msg["msg_type"] == "error":
                out.append("\n".join(msg["content"]["traceback"]))

        reply = kc.execute_interactive(f"worker.debugging.console({f.key!r})", allow_stdin=True,
                                       stdin_hook=stdin_hook, output_hook=output_hook, timeout=60)
        text = "".join(out)
        assert reply["content"]["status"] == "ok", text
        assert f"post-mortem of task {f.key!r} on worker {addr}" in text and "[7, 8, 9]" in text
        assert prompts == ["(Pdb) "] * 3
    finally:
        kc.stop_channels()
