"""Debugging without processes: the post-mortem store (worker/postmortem.py), pdb driven by
lines (worker/debugger.py), the sessions of a worker (worker/debugging.py) with a stand-in
worker, the memory monitor dropping post-mortems under pressure, the client's table of
breakpoints and the %debug target. The same on a real cluster: tests/cluster/test_debugging.py."""

from __future__ import annotations

import asyncio
import gc
import os
import sys
import threading
import weakref

import numpy as np
import pytest

from xsched.client.debugging import Breakpoints, DebuggingMixin
from xsched.errors import DebuggerQuit, RemoteTraceback, pack_exception, remote_handle, unpack_exception
from xsched.graph.spec import Task
from xsched.jupyter.debugging import remote_debug_target
from xsched.worker.debugger import LineChannel, post_mortem
from xsched.worker.debugging import Debugging, breakpoints_enabled
from xsched.worker.memory import MemoryMonitor, Thresholds
from xsched.worker.postmortem import PostMortems, task_traceback

pytestmark = pytest.mark.timeout(60)


class Payload:
    """An object whose collection a test can watch (weakref)."""

    def __init__(self, n: int = 10):
        self.data = np.ones(n)


def outer(x):
    kept_in_outer = x * 2  # noqa: F841 - read by the debugger
    return inner(x)


def inner(x):
    only_in_inner = Payload(1000)  # noqa: F841 - read by the debugger
    weighed = np.ones(1000)  # noqa: F841 - what sizeof counts of the frame
    raise ValueError(f"bad {x}")


def failure(key="k", fn=outer, arg=3):
    """The exception of ``fn(arg)`` as a worker catches it: its traceback starts in the
    worker's own code (``Task.run``), then the task's function."""
    try:
        Task(fn, (arg,)).run({})
    except ValueError as e:
        return e.with_traceback(e.__traceback__.tb_next)
    raise AssertionError("did not fail")


# ---------------------------------------------------------------------- the store
def test_the_store_keeps_the_last_failures_and_says_why_older_ones_went():
    store = PostMortems(keep=2)
    for key in ("a", "b", "c"):
        store.keep(key, failure(key))
    assert store.keys() == ["b", "c"]
    assert "keep limit" in store.why_dropped("a") and "= 2" in store.why_dropped("a")
    assert store.get("a") is None and store.why_dropped("zzz") is None
    assert store.drop("b", "released: no client wants the task any more")
    assert not store.drop("b", "again")
    assert store.why_dropped("b").startswith("released") and store.keys() == ["c"]
    # the debugger starts in the task's function: the worker's own frames (Task.run) are trimmed
    pm = store.get("c")
    assert pm.tb.tb_frame.f_code.co_name == "outer" and pm.where.startswith("inner (")
    assert pm.text == "ValueError: bad 3"


def test_keep_zero_keeps_nothing():
    store = PostMortems(keep=0)
    assert store.keep("a", failure()) is None and len(store) == 0 and not store.enabled


def test_frames_are_weighed_and_dropping_frees_what_they_held():
    store = PostMortems(keep=5)
    e = failure()
    payload = weakref.ref(e.__traceback__.tb_next.tb_next.tb_frame.f_locals["only_in_inner"])
    pm = store.keep("a", e, inputs={"dep": np.zeros(10_000)})
    del e
    assert pm.nbytes >= 1000 * 8 + 10_000 * 8 and store.nbytes == pm.nbytes
    gc.collect()
    assert payload() is not None  # the frames hold it
    assert store.drop_oldest("memory pressure on the worker") == pm.nbytes
    gc.collect()
    assert payload() is None and store.nbytes == 0  # the locals were cleared
    assert store.why_dropped("a") == "memory pressure on the worker"


def test_memory_pressure_skips_a_post_mortem_being_debugged():
    store = PostMortems(keep=5)
    store.keep("a", failure())
    store.keep("b", failure())
    store.in_use.add("a")
    assert store.drop_oldest() > 0 and store.keys() == ["a"]
    assert store.drop_oldest() == 0 and store.keys() == ["a"]


def test_task_traceback_trims_only_leading_runner_frames():
    e = failure()
    tb = e.__traceback__  # Task.run (graph/spec.py), then outer, inner
    assert tb.tb_frame.f_code.co_name == "run"
    assert task_traceback(tb).tb_frame.f_code.co_name == "outer"


def test_the_memory_monitor_drops_the_oldest_post_mortem_when_it_must_spill():
    class FakeState:
        paused = False

    class FakeWorker:
        address, status, data, state = "tcp://w:1", "running", {}, FakeState()
        debugging = Debugging(None, keep=5)

        def set_paused(self, paused):
            self.state.paused = paused

    w = FakeWorker()
    w.debugging.worker = w
    w.debugging.postmortems.keep("old", failure())
    w.debugging.postmortems.keep("new", failure())
    monitor = MemoryMonitor(w, Thresholds(limit=1000, target=0.6, spill=0.7, pause=0.8, terminate=0.95))

    async def steps():
        monitor.step(100)  # under every threshold: nothing dropped
        assert w.debugging.postmortems.keys() == ["old", "new"]
        monitor.step(750)  # above spill
        assert w.debugging.postmortems.keys() == ["new"]

    try:
        asyncio.run(steps())
    finally:
        monitor.close()
    assert "memory pressure" in w.debugging.postmortems.why_dropped("old")


# ---------------------------------------------------------------------- pdb on lines
def start_post_mortem(e: BaseException):
    ch = LineChannel()
    t = threading.Thread(target=post_mortem, args=(ch, task_traceback(e.__traceback__)), daemon=True)
    t.start()
    return ch, t


def test_pdb_driven_by_lines_prints_locals_of_the_task_frames_and_moves_between_them():
    ch, t = start_post_mortem(failure())
    out, prompt, done = ch.exchange_blocking(None)
    assert prompt == "(Pdb) " and not done and "raise ValueError" in out and out.startswith("> ")
    assert ch.exchange_blocking("p type(only_in_inner).__name__")[0] == "'Payload'\n"
    assert "NameError" in ch.exchange_blocking("p kept_in_outer")[0]  # not in this frame
    out, _, _ = ch.exchange_blocking("up")
    assert "outer()" in out and "return inner(x)" in out
    assert ch.exchange_blocking("p kept_in_outer")[0] == "6\n"
    assert "inner()" in ch.exchange_blocking("down")[0]
    assert "Oldest frame" in (ch.exchange_blocking("up")[0] + ch.exchange_blocking("up")[0])
    where = ch.exchange_blocking("where")[0]
    assert where.index("outer()") < where.index("inner()")
    out, prompt, done = ch.exchange_blocking("q")
    assert done and prompt is None
    t.join(10)
    assert not t.is_alive()


def test_interact_runs_code_in_the_frame_through_the_channel():
    ch, t = start_post_mortem(failure())
    ch.exchange_blocking(None)
    out, prompt, _ = ch.exchange_blocking("interact")
    assert "*interactive*" in out and prompt == ">>> "
    assert ch.exchange_blocking("print(only_in_inner.data.size)")[0] == "1000\n"
    assert ch.exchange_blocking("x = 41; x + 1")[0] == "42\n"
    out, prompt, _ = ch.exchange_blocking("exit()")
    assert prompt == "(Pdb) "
    assert ch.exchange_blocking("q")[2]
    t.join(10)


def test_closing_the_channel_ends_pdb_and_an_idle_policy_answers_for_the_client():
    ch, t = start_post_mortem(failure())
    ch.exchange_blocking(None)
    ch.close()
    t.join(10)
    assert not t.is_alive() and ch.done
    # readline asks the policy when nothing comes: here it answers 'q' at once
    ch = LineChannel()
    ch.idle_after = lambda: 0.01
    ch.on_idle = lambda: "q"
    t = threading.Thread(target=post_mortem, args=(ch, task_traceback(failure().__traceback__)))
    t.start()
    t.join(10)
    assert not t.is_alive() and ch.done


def test_exchange_on_an_event_loop_waits_without_blocking_it():
    ch, t = start_post_mortem(failure())

    async def talk():
        ticks = 0

        async def ticker():
            nonlocal ticks
            while True:
                ticks += 1
                await asyncio.sleep(0)

        tick = asyncio.ensure_future(ticker())
        out, prompt, done = await ch.exchange(None, 10)
        assert prompt == "(Pdb) " and "inner" in out
        assert (await ch.exchange("p 6 * 7", 10))[0] == "42\n"
        assert (await ch.exchange("q", 10))[2]
        tick.cancel()
        return ticks

    assert asyncio.run(talk()) > 0
    t.join(10)


# ---------------------------------------------------------------------- sessions of a worker
class StandInWorker:
    address = "tcp://127.0.0.1:1"

    def __init__(self):
        self.events: list = []
        self.to_scheduler: list = []

    def _log_event(self, topic, msg):
        self.events.append((topic, msg))

    def _to_scheduler_from_thread(self, message):
        self.to_scheduler.append(message)


def test_attach_refuses_a_second_client_naming_the_first_and_explains_missing_frames():
    w = StandInWorker()
    d = Debugging(w, keep=5)
    d.postmortems.keep("k", failure())

    async def run():
        first = await d.attach("k", "client-one")
        assert first["prompt"] == "(Pdb) " and first["kind"] == "post-mortem" and not first.get("error")
        assert f"pid {os.getpid()}" in first["output"]
        second = await d.attach("k", "client-two")
        assert second["reason"] == "in-use" and "client-one" in second["error"] and first["session"] in second["error"]
        reply = await d.input(first["session"], "p x")
        assert reply["output"] == "3\n"
        assert (await d.input(first["session"], "q"))["done"]
        for _ in range(100):  # the session's thread forgets it as pdb ends
            if not d.sessions:
                break
            await asyncio.sleep(0.01)
        again = await d.attach("k", "client-two")  # the frames are still kept: a new session
        assert again["prompt"] == "(Pdb) "
        d.detach(again["session"])  # a post-mortem session ends on detach
        missing = await d.attach("nope", "c")
        assert missing["reason"] == "unknown" and "nope" in missing["error"]
        d.release(["k"])
        dropped = await d.attach("k", "c")
        assert dropped["reason"] == "dropped" and "released" in dropped["error"]
        gone = await d.input("no-such-session", "p 1")
        assert gone["reason"] == "no-session"

    asyncio.run(run())
    assert Debugging(w, keep=0)._missing("k")["reason"] == "disabled"


def test_a_breakpoint_pauses_its_thread_until_continued_and_q_becomes_debugger_quit():
    w = StandInWorker()
    d = Debugging(w, keep=5, breakpoint_timeout=None)
    results: dict = {}

    def task(key):
        y = 20
        d.pause(key, sys._getframe())
        y += 1
        return y

    def run(key):
        try:
            results[key] = task(key)
        except BaseException as e:  # noqa: BLE001
            results[key] = d.task_failed(key, e)
        finally:
            sys.settrace(None)
            d.task_ended(key)

    threading.Thread(target=run, args=("go",), daemon=True).start()

    async def attach(key):
        for _ in range(500):
            if d.paused():
                break
            await asyncio.sleep(0.01)
        [info] = d.paused()
        assert info["key"] == key and info["function"] == "task" and info["client"] is None
        return await d.attach(key, "c1")

    async def go():
        reply = await attach("go")
        assert reply["kind"] == "breakpoint" and "y += 1" in reply["output"]
        assert (await d.input(reply["session"], "p y"))["output"] == "20\n"
        assert (await d.input(reply["session"], "c"))["done"]

    asyncio.run(go())
    for _ in range(500):
        if "go" in results:
            break
        threading.Event().wait(0.01)
    assert results["go"] == 21 and not d.paused()
    assert w.events[0][0] == "print" and "paused at task" in w.events[0][1]["text"]
    # the scheduler heard of the pause and of its end (for the progress bars)
    assert [(m["op"], m["key"], m["paused"], m.get("function")) for m in w.to_scheduler] == [
        ("task-paused", "go", True, "task"), ("task-paused", "go", False, None)]

    threading.Thread(target=run, args=("stop",), daemon=True).start()

    async def stop():
        reply = await attach("stop")
        assert (await d.input(reply["session"], "q"))["done"]

    asyncio.run(stop())
    for _ in range(500):
        if "stop" in results:
            break
        threading.Event().wait(0.01)
    assert isinstance(results["stop"], DebuggerQuit) and "stop" in str(results["stop"])
    assert d.postmortems.get("stop") is None  # a quit is no failure to keep


def test_breakpoints_follow_pythonbreakpoint_zero():
    assert breakpoints_enabled({}) and breakpoints_enabled({"PYTHONBREAKPOINT": "pdb.set_trace"})
    assert not breakpoints_enabled({"PYTHONBREAKPOINT": "0"})
    d = Debugging(StandInWorker(), breakpoints=False)
    before = sys.gettrace()
    d.pause("k", sys._getframe())  # returns at once: nothing pauses, no tracing set up
    assert not d.paused() and not d.sessions and sys.gettrace() is before


# ---------------------------------------------------------------------- client side
def test_the_exception_carries_its_handle_and_debugger_quit_pickles():
    import pickle

    e = unpack_exception(*pack_exception(ValueError("x")), key="f-1", blame="g-2", worker="tcp://w:1")
    handle = remote_handle(e)
    assert isinstance(handle, RemoteTraceback) and (handle.key, handle.blame, handle.worker) == ("f-1", "g-2",
                                                                                               "tcp://w:1")
    assert remote_handle(ValueError("local")) is None
    q = pickle.loads(pickle.dumps(DebuggerQuit("g-1", "tcp://w:1")))
    assert q.key == "g-1" and "tcp://w:1" in str(q)


def test_the_client_asks_a_worker_to_drop_a_failure_once_no_key_of_it_remains():
    sent = []

    class C(DebuggingMixin):
        async def _debug_release(self, worker, keys):
            sent.append((worker, sorted(keys)))

    async def run():
        c = C()
        c._note_postmortem("dep-1", "dep-1", "tcp://w:1")
        c._note_postmortem("child-1", "dep-1", "tcp://w:1")  # failed because of dep-1
        c._note_postmortem("other", "other", None)  # not raised on a worker: nothing kept
        c._release_postmortems(["child-1", "other"])
        await asyncio.sleep(0)
        assert sent == []
        c._release_postmortems(["dep-1"])
        await asyncio.sleep(0)
        assert sent == [("tcp://w:1", ["dep-1"])]

    asyncio.run(run())


def test_the_breakpoints_table_and_the_debug_magic_target():
    rows = Breakpoints([{"key": "g-1", "worker": "tcp://w:1", "function": "g", "file": "/x/y.py", "line": 3,
                         "since": 1.0, "client": "client-a"}])
    assert "g (y.py:3) on tcp://w:1, attached by client-a" in repr(rows)
    assert "<table>" in rows._repr_html_() and "g-1" in rows._repr_html_()
    remote = unpack_exception(*pack_exception(ValueError("x")), key="f-1", worker="tcp://w:1")
    assert remote_debug_target(remote, {}) is remote
    assert remote_debug_target(KeyboardInterrupt(), {}) == "paused"
    assert remote_debug_target(ZeroDivisionError(), {}) is None  # a local error: IPython's own %debug
    assert remote_debug_target(None, {"f": 3}, "f") is None


def test_an_idle_client_is_detached_and_an_unattended_pause_continues_with_a_warning():
    w = StandInWorker()
    d = Debugging(w, keep=5, breakpoint_timeout=0.3, idle_timeout=0.2)
    d.postmortems.keep("pm", failure())
    done: dict = {}

    def task(key):
        y = 1
        d.pause(key, sys._getframe())
        return y + 1

    def run(key):
        try:
            done[key] = task(key)
        finally:
            sys.settrace(None)
            d.task_ended(key)

    async def scenario():
        first = await d.attach("pm", "gone-client")  # attaches, then never sends a line
        session = d.sessions[first["session"]]
        for _ in range(500):
            if session.channel.done:
                break
            await asyncio.sleep(0.01)
        assert session.channel.done  # the idle post-mortem session ended by itself
        threading.Thread(target=run, args=("bp",), daemon=True).start()
        for _ in range(500):
            if d.paused():
                break
            await asyncio.sleep(0.01)
        reply = await d.attach("bp", "gone-client")
        bp = d.sessions[reply["session"]]
        for _ in range(500):  # idle: detached, the task stays paused...
            if bp.client is None or "bp" in done:
                break
            await asyncio.sleep(0.01)
        assert bp.client is None
        for _ in range(500):  # ...until nobody attached for the breakpoint timeout: it continues
            if "bp" in done:
                break
            await asyncio.sleep(0.01)

    asyncio.run(scenario())
    assert done["bp"] == 2 and not d.paused()
    [warning] = [m for topic, m in w.events if topic == "warn"]
    assert warning["key"] == "bp" and "debug.breakpoint-timeout" in warning["message"]
