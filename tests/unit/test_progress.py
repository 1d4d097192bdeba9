"""Progress: the scheduler's counting (a SchedulerState driven by events, no sockets),
tasks launched by counted tasks, the widget's drawing. On a real cluster: tests/cluster/test_progress.py."""

from __future__ import annotations

import itertools
import types

import pytest

from xsched.protocol.schemas import BadMessage
from xsched.scheduler.extensions.progress import ProgressExtension, Subscription, adopt_launched
from xsched.scheduler.state import (
    AddWorker, ClientReleasesKeys, NewTask, RemoveWorker, RetryKeys, SchedulerState, TaskErred, TaskFinished,
    UpdateGraph,
)


# ----------------------------------------------------------------------------- fake scheduler
class FakeScheduler:
    """What ProgressExtension uses of the Scheduler: state, ops, clients, send_to_client."""

    def __init__(self, n_workers=1, nthreads=2):
        self.state = SchedulerState(validate=True)
        self.ops: dict = {}
        self.sent: list = []
        self.client_peer = {"c": b"c"}
        self.extensions: dict = {}  # (no debugging extension: nothing is paused)
        for i in range(n_workers):
            self.state.handle(AddWorker(f"w{i}", nthreads=nthreads))

    def register_op(self, op, handler):
        self.ops[op] = handler

    def send_to_client(self, client, msg):
        self.sent.append((client, msg))

    def _client_of(self, peer):
        return peer.decode()

    def run(self, fail=(), limit=1000):
        """Finish every processing task (raising those in ``fail``) until nothing runs."""
        for _ in range(limit):
            running = [(ws.address, ts.key) for ws in self.state.workers.values() for ts in ws.processing]
            if not running:
                return
            w, k = running[0]
            if k in fail:
                self.state.handle(TaskErred(w, k, b"", b"", "ValueError: boom"))
            else:
                self.state.handle(TaskFinished(w, k, nbytes=8, type="int"))
        raise AssertionError("tasks kept running")

    def step(self):
        """Finish one processing task."""
        for ws in self.state.workers.values():
            for ts in list(ws.processing):
                self.state.handle(TaskFinished(ws.address, ts.key, nbytes=8))
                return ts.key
        return None


def T(key, deps=(), prio=0):
    return NewTask(key, b"spec", list(deps), (0, 0, prio))


def pipeline(n=4):
    """read-i -> sum-i -> analyse-i -> total (priorities depth first)."""
    tasks, p = [], 0
    for i in range(n):
        tasks += [T(f"read-{i}", (), p), T(f"sum-{i}", [f"read-{i}"], p + 1),
                  T(f"analyse-{i}", [f"sum-{i}"], p + 2)]
        p += 3
    tasks.append(T("total", [f"analyse-{i}" for i in range(n)], p))
    return tasks


def make(n=4, **kw):
    s = FakeScheduler(**kw)
    ext = ProgressExtension(s)
    s.state.handle(UpdateGraph("c", pipeline(n), ["total"]))
    return s, ext


def subscribe(s, keys, sub="s1", complete=True):
    return s.ops["subscribe-progress"](b"c", {"op": "subscribe-progress", "keys": keys, "sub": sub,
                                             "complete": complete}, [])


# ----------------------------------------------------------------------------- counting
def test_subscribe_counts_every_needed_task_per_group_in_run_order():
    s, ext = make(4)
    reply = subscribe(s, ["total"])
    assert reply["sub"] == "s1" and reply["done"] is False and reply["missing"] == []
    assert reply["groups"] == {"read": [0, 0, 4], "sum": [0, 0, 4], "analyse": [0, 0, 4], "total": [0, 0, 1]}
    assert list(reply["groups"]) == ["read", "sum", "analyse", "total"]  # the order they start running
    assert set(ext.watch) == {t.key for t in pipeline(4)}


def test_updates_follow_transitions_and_end_with_done():
    s, ext = make(3)
    subscribe(s, ["total"])
    assert ext.flush() == 0  # nothing changed yet: nothing sent
    s.step()
    assert ext.flush() == 1
    (client, msg), = s.sent
    assert client == "c" and msg["op"] == "progress" and msg["sub"] == "s1" and msg["done"] is False
    assert sum(g[0] for g in msg["groups"].values()) == 1
    assert ext.flush() == 0
    s.run()
    assert ext.flush() == 1
    last = s.sent[-1][1]
    assert last["done"] is True
    assert last["groups"] == {"read": [3, 0, 3], "sum": [3, 0, 3], "analyse": [3, 0, 3], "total": [1, 0, 1]}
    assert ext.subs == {} and ext.watch == {}  # ended by itself
    s.step()
    assert ext.flush() == 0


def test_done_counts_survive_release_of_intermediates():
    """read/sum results are released as soon as they are used; they stay counted as done."""
    s, ext = make(2)
    subscribe(s, ["total"])
    for _ in range(4):
        s.step()
    ext.flush()
    groups = s.sent[-1][1]["groups"]
    released = [k for k in ("read-0", "read-1") if s.state.tasks[k].state == "released"]
    assert released, "the pipeline should have released a used input"
    assert groups["read"][0] == 2


def test_subscribing_late_counts_released_inputs_of_finished_work_as_done():
    s, ext = make(2, nthreads=1)
    while s.state.tasks["read-0"].state != "released":
        s.step()
    assert s.state.tasks["sum-0"].state in ("memory", "released")
    reply = subscribe(s, ["total"])
    assert reply["groups"]["read"] == [1, 0, 2]
    assert reply["groups"]["sum"] == [1, 0, 2]
    s.run()
    ext.flush()
    assert s.sent[-1][1]["groups"]["read"] == [2, 0, 2]


def test_erred_task_and_its_dependents_count_as_erred():
    s, ext = make(3)
    subscribe(s, ["total"])
    s.run(fail={"sum-1"})
    ext.flush()
    msg = s.sent[-1][1]
    assert msg["done"] is True
    g = msg["groups"]
    assert g["read"] == [3, 0, 3]
    assert g["sum"] == [2, 1, 3]
    assert g["analyse"] == [2, 1, 3]
    assert g["total"] == [0, 1, 1]


def test_subscribing_late_counts_finished_work_and_erred_chain():
    s, ext = make(3)
    s.run(fail={"sum-1"})
    assert s.state.tasks["total"].state == "erred"
    reply = subscribe(s, ["total"])
    # sum-1's input read-1 was computed and released; below an erred key only erred inputs count
    assert reply["done"] is True
    assert reply["groups"]["total"] == [0, 1, 1]
    assert reply["groups"]["analyse"] == [0, 1, 1]
    assert reply["groups"]["sum"] == [0, 1, 1]
    assert ext.subs == {}  # nothing left to watch: no subscription kept


def test_complete_false_leaves_out_what_is_done():
    s, ext = make(2)
    for _ in range(3):
        s.step()  # read-0, sum-0/read-1 ... some results now in memory
    in_memory = [k for k, ts in s.state.tasks.items() if ts.state == "memory"]
    assert in_memory
    full = Subscription.from_state("a", "c", s.state, ["total"], complete=True)
    part = Subscription.from_state("b", "c", s.state, ["total"], complete=False)
    assert sum(g[2] for g in part.counts.values()) < sum(g[2] for g in full.counts.values())
    assert all(g[0] == 0 for g in part.counts.values())


def test_lost_data_is_recomputed_and_counted_again():
    s, ext = make(1, n_workers=2, nthreads=1)
    subscribe(s, ["total"])
    while s.state.tasks["sum-0"].state != "memory":
        s.step()
    ext.flush()
    before = s.sent[-1][1]["groups"]["sum"][0]
    assert before == 1
    holder = next(iter(s.state.tasks["sum-0"].who_has)).address
    s.state.handle(RemoveWorker(holder, "killed"))
    ext.flush()
    assert s.sent[-1][1]["groups"]["sum"][0] == 0  # back to pending: it must be recomputed
    s.run()
    ext.flush()
    assert s.sent[-1][1]["done"] is True
    assert s.sent[-1][1]["groups"]["sum"] == [1, 0, 1]


def test_retry_moves_erred_back_to_pending():
    s = FakeScheduler(nthreads=1)
    ext = ProgressExtension(s)
    s.state.handle(UpdateGraph("c", [T("a-1", (), 0), T("b-1", (), 1)], ["a-1", "b-1"]))
    subscribe(s, ["a-1", "b-1"])
    assert s.state.tasks["a-1"].state == "processing"
    s.state.handle(TaskErred("w0", "a-1", b"", b"", "ValueError: boom"))
    ext.flush()
    assert s.sent[-1][1]["groups"] == {"a": [0, 1, 1], "b": [0, 0, 1]}
    assert s.sent[-1][1]["done"] is False
    s.state.handle(RetryKeys("c", ["a-1"]))
    ext.flush()
    assert s.sent[-1][1]["groups"]["a"] == [0, 0, 1]
    s.run()
    ext.flush()
    assert s.sent[-1][1] == {"op": "progress", "sub": "s1", "groups": {"a": [1, 0, 1], "b": [1, 0, 1]},
                             "done": True}


def test_released_keys_leave_the_total_and_finish_the_subscription():
    s, ext = make(2)
    subscribe(s, ["total"])
    s.step()
    s.state.handle(ClientReleasesKeys("c", ["total"]))  # the futures were dropped
    ext.flush()
    msg = s.sent[-1][1]
    assert msg["done"] is True
    assert all(d + e == t for d, e, t in msg["groups"].values())
    assert ext.subs == {} and ext.watch == {}


def test_unsubscribe_and_client_gone():
    s, ext = make(2)
    subscribe(s, ["total"], sub="a")
    subscribe(s, ["total"], sub="b")
    assert set(ext.subs) == {"a", "b"}
    s.ops["unsubscribe-progress"](b"c", {"op": "unsubscribe-progress", "sub": "a"}, [])
    assert set(ext.subs) == {"b"}
    ext.remove_client("c")
    assert ext.subs == {} and ext.watch == {}
    s.step()
    assert ext.flush() == 0 and s.sent == []


def test_flush_drops_subscriptions_of_vanished_clients():
    s, ext = make(2)
    subscribe(s, ["total"])
    s.client_peer.clear()
    s.step()
    assert ext.flush() == 0
    assert ext.subs == {}


def test_unknown_keys_are_reported_and_bad_requests_refused():
    s, ext = make(1)
    reply = subscribe(s, ["total", "nope-1"])
    assert reply["missing"] == ["nope-1"]
    with pytest.raises(ValueError, match="keys"):
        s.ops["subscribe-progress"](b"c", {"op": "subscribe-progress", "keys": "total"}, [])
    with pytest.raises(BadMessage, match="exists already") as info:  # a refusal, not a bug
        subscribe(s, ["total"])
    assert info.value.kind == "sub in use"
    assert list(ext.subs) == ["s1"]  # the first subscription is untouched


def test_hook_ignores_unwatched_keys():
    s, ext = make(1)
    subscribe(s, ["read-0"])
    s.state.handle(UpdateGraph("c", [T("other")], ["other"]))
    s.run()
    ext.flush()
    assert [m["groups"] for _, m in s.sent] == [{"read": [1, 0, 1]}]


def test_close_removes_the_hook():
    import asyncio

    s, ext = make(1)
    asyncio.run(ext.close())
    assert ext.transition not in s.state.transition_hooks


# ----------------------------------------------------------------------------- tasks that launch tasks
def fib_calls(n: int) -> int:
    """How many calls fib(n) makes, itself included: with pure=False each call is a task."""
    return 1 if n < 2 else 1 + fib_calls(n - 1) + fib_calls(n - 2)


def launch(s, ext, parent, keys, client="wc"):
    """What the scheduler does with an update-graph a running task sent: handle it, then
    tell the extension who launched it (``Scheduler._op_update_graph``)."""
    tasks = [T(k) for k in keys]
    s.state.handle(UpdateGraph(client, tasks, list(keys)))
    ext.launched(parent, tasks)
    return tasks


def play_fib(s, ext, top, n):
    """Play fib(n) through worker_client on the state machine, every call a task of its own:
    a running fib task with n >= 2 launches fib(n-1) and fib(n-2) (from the worker's client,
    naming itself as parent) and finishes once both are in memory. Returns the pushed messages."""
    arg, kids, serial = {top: n}, {}, itertools.count()
    pushed = len(s.sent)
    for _ in range(10_000):
        running = [(ws.address, ts.key) for ws in s.state.workers.values() for ts in ws.processing]
        if not running:
            return [m for _, m in s.sent[pushed:]]
        for worker, key in running:
            mine = kids.get(key)
            if arg[key] < 2 or (mine and all(s.state.tasks[k].state == "memory" for k in mine)):
                s.state.handle(TaskFinished(worker, key, nbytes=8, type="int"))
            elif mine is None:
                mine = kids[key] = [f"fib-{arg[key] - d}-{next(serial)}" for d in (1, 2)]
                arg.update(zip(mine, (arg[key] - 1, arg[key] - 2)))
                launch(s, ext, key, mine)
        ext.flush()
    raise AssertionError("fib kept running")


def test_fib_recursion_counts_every_launched_task_and_ends_with_all_done():
    s = FakeScheduler(nthreads=64)  # (no secede here: enough threads for every waiting parent)
    ext = ProgressExtension(s)
    s.state.handle(UpdateGraph("c", [T("fib-6")], ["fib-6"]))
    assert subscribe(s, ["fib-6"])["groups"] == {"fib": [0, 0, 1]}
    pushed = play_fib(s, ext, "fib-6", 6)
    totals = [sum(c[2] for c in m["groups"].values()) for m in pushed]
    assert totals == sorted(totals) and len(set(totals)) > 2, totals  # grew while tasks launched
    assert pushed[-1]["done"] is True and [m["done"] for m in pushed[:-1]] == [False] * (len(pushed) - 1)
    n = fib_calls(6)
    assert pushed[-1]["groups"] == {"fib": [n, 0, n]}
    assert ext.subs == {} and ext.watch == {}


def test_launched_tasks_count_once_where_their_parent_counts_and_nowhere_else():
    s = FakeScheduler(nthreads=8)
    ext = ProgressExtension(s)
    s.state.handle(UpdateGraph("c", [T("outer-1"), T("other-1"), T("early-1")], ["outer-1", "other-1", "early-1"]))
    s.state.handle(TaskFinished("w0", "early-1", nbytes=8))
    subscribe(s, ["outer-1"], sub="all")
    subscribe(s, ["outer-1"], sub="left", complete=False)
    launch(s, ext, "other-1", ["stray-1"])  # launched by a task no bar counts
    assert ext.flush() == 0 and "stray-1" not in ext.watch
    launch(s, ext, "outer-1", ["inner-1", "inner-2", "early-1"])
    assert ext.flush() == 2
    by_sub = {m["sub"]: m["groups"] for _, m in s.sent}
    # early-1 was in memory already: done where everything counts, left out where only what is left counts
    assert by_sub == {"all": {"outer": [0, 0, 1], "inner": [0, 0, 2], "early": [1, 0, 1]},
                      "left": {"outer": [0, 0, 1], "inner": [0, 0, 2]}}
    assert list(by_sub["all"]) == ["outer", "inner", "early"]  # new groups after the others
    launch(s, ext, "inner-1", ["inner-2", "leaf-1"])  # inner-2 again (a shared pure key), and a grandchild
    ext.flush()
    assert s.sent[-1][1]["groups"] == {"outer": [0, 0, 1], "inner": [0, 0, 2], "leaf": [0, 0, 1]}
    s.state.handle(ClientReleasesKeys("wc", ["leaf-1"]))  # released before it ran: leaves the totals
    ext.flush()
    assert s.sent[-1][1]["groups"] == {"outer": [0, 0, 1], "inner": [0, 0, 2]}
    ext.unsubscribe("left")
    s.run()
    ext.flush()
    last = s.sent[-1][1]
    assert last["sub"] == "all" and last["done"] is True
    assert last["groups"] == {"outer": [1, 0, 1], "inner": [2, 0, 2], "early": [1, 0, 1]}
    assert ext.subs == {} and ext.watch == {}


def test_adopt_launched_is_a_noop_for_unknown_parents_and_keys():
    s = FakeScheduler()
    s.state.handle(UpdateGraph("c", [T("top-1")], ["top-1"]))
    sub = Subscription.from_state("s1", "c", s.state, ["top-1"])
    watch = {"top-1": {sub}}
    assert adopt_launched(watch, s.state.tasks, "nobody-1", ["top-1"]) == []
    assert adopt_launched(watch, s.state.tasks, "top-1", ["never-submitted-1"]) == []
    assert watch == {"top-1": {sub}} and sub.groups() == {"top": [0, 0, 1]} and not sub.dirty


def test_scheduler_tells_the_extension_who_launched_a_graph():
    """The server's side, without sockets: an update-graph naming a parent reaches launched()."""
    from xsched.scheduler.server import Scheduler

    sched = Scheduler(register=False)
    sched.peer_client[b"p"] = "c"
    sched.client_peer["c"] = b"p"
    ext = sched.extensions["progress"]

    def graph(key, **extra):
        sched._op_update_graph(b"p", {"op": "update-graph", "tasks": [{"key": key, "run_spec": b"x"}],
                                      "keys": [key], **extra}, [])

    graph("top-1")
    ext.subscribe("c", ["top-1"], "s1")
    graph("kid-1", parent="top-1")
    graph("unrelated-1")
    assert ext.subs["s1"].groups() == {"top": [0, 0, 1], "kid": [0, 0, 1]}


def test_graphs_sent_from_inside_a_task_name_it_as_parent():
    """The client names the task it runs in (``task_context``, set by the worker in a task's
    thread) as the graph's parent; the message carries it only then."""
    from xsched import task_context
    from xsched.protocol.update_graph import graph_msg
    from xsched.protocol.schemas import TO_SCHEDULER

    assert task_context.current_key() is None
    outside = graph_msg([], ["a"], parent=task_context.current_key())
    assert "parent" not in outside
    task_context.thread_state.key = "fib-6"  # (what the worker sets in a task's thread)
    try:
        inside = graph_msg([], ["a"], parent=task_context.current_key())
    finally:
        task_context.thread_state.key = None
    assert inside == {"op": "update-graph", "tasks": [], "keys": ["a"], "parent": "fib-6"}
    TO_SCHEDULER.check(outside)
    TO_SCHEDULER.check(inside)


def test_widget_shows_groups_that_appear_after_its_first_drawing():
    from xsched.jupyter.progress import WidgetProgressBar

    bar = WidgetProgressBar(types.SimpleNamespace(_progress={}), ["launch-1"])

    def labels():
        return [row.children[1].value for row in bar.rows.children]

    bar._apply({"groups": {"launch": [0, 0, 1]}})
    assert labels() == ["launch: 0 / 1"]
    bar._apply({"groups": {"launch": [0, 0, 1], "fib": [2, 0, 5]}})  # launched by the running task
    assert labels() == ["launch: 0 / 1", "fib: 2 / 5"]
    assert (bar.bars["fib"][0].value, bar.bars["fib"][0].max) == (2, 5)
    assert "2 / 6 tasks" in bar.title.value
    bar._apply({"groups": {"launch": [0, 0, 1]}})  # the fib tasks were released before they ran
    assert labels() == ["launch: 0 / 1"] and "0 / 1 tasks" in bar.title.value
    bar._apply({"groups": {"launch": [1, 0, 1], "fib": [5, 0, 5]}, "done": True})
    assert labels() == ["launch: 1 / 1", "fib: 5 / 5"]
    assert bar.bars["fib"][0].bar_style == "success" and "finished" in bar.title.value


def test_the_text_bar_draws_in_the_thread_that_waits_for_it():
    """A notebook shows what a thread writes under the cell that started that thread: the
    updates that arrive on the client's loop thread are drawn by the caller's thread,
    which waits in the cell that called progress()."""
    import io
    import threading

    from xsched.jupyter.progress import TextProgressBar

    written: list = []

    class Stream(io.StringIO):
        def write(self, text):
            written.append((threading.get_ident(), text))
            return len(text)

    client = types.SimpleNamespace(_progress={}, asynchronous=False, status="running")
    bar = TextProgressBar(client, ["inc-1"], stream=Stream())
    loop_thread = threading.Thread(target=lambda: (bar._apply({"groups": {"inc": [1, 0, 2]}}),
                                                   bar._apply({"groups": {"inc": [2, 0, 2]}, "done": True})))
    loop_thread.start()
    loop_thread.join()
    assert written == []  # (waiting to be drawn by the caller)
    assert bar.wait(timeout=10) is True
    assert {thread for thread, _ in written} == {threading.get_ident()}
    assert written[-1][1].startswith("\r[##########] 2/2 inc") and written[-1][1].endswith("\n")
    later = threading.Thread(target=lambda: bar._render())  # (nobody waits now: the loop draws)
    later.start()
    later.join()
    assert written[-1][0] != threading.get_ident()


# ----------------------------------------------------------------------------- collecting futures
def test_unpersisted_collection_is_refused_with_advice():
    import xsched

    x = xsched.delayed(sum)([1, 2])
    with pytest.raises(TypeError, match="persist"):
        xsched.progress(x)
    with pytest.raises(TypeError, match="int"):
        xsched.progress(3)
    with pytest.raises(ValueError, match="Futures"):
        xsched.progress([])
