"""xsched.progress on a real cluster: a text line in a terminal, a widget object, tasks that
launch tasks. The scheduler's counting without sockets: tests/unit/test_progress.py."""

from __future__ import annotations

import re
import time

import pytest

from xsched import worker_client

from tests.support.helpers import Gate, wait_until


def fib_calls(n: int) -> int:
    """How many calls fib(n) makes, itself included: with pure=False each call is a task."""
    return 1 if n < 2 else 1 + fib_calls(n - 1) + fib_calls(n - 2)


def read(i):
    time.sleep(0.02)
    return list(range(i, i + 10))


def add(xs):
    time.sleep(0.02)
    return sum(xs)


def analyse(x, fail_on=None):
    time.sleep(0.02)
    if x == fail_on:
        raise ValueError(f"cannot analyse {x}")
    return {"x": x}


def combine(results):
    return len(results)


def build(n=6, fail_on=None):
    import xsched

    d = xsched.delayed
    out = [d(analyse)(d(add)(d(read)(i)), fail_on) for i in range(n)]
    return d(combine)(out)


@pytest.fixture
def pclient(module_client):
    return module_client


@pytest.mark.cluster
@pytest.mark.timeout(60)
def test_text_progress_over_a_pipeline_blocks_until_done(pclient, capsys):
    import xsched

    x = pclient.persist(build(6), optimize_graph=False)
    bar = xsched.progress(x, notebook=False)
    assert bar.done and bar.status == "finished"
    assert bar.groups == {"read": [6, 0, 6], "add": [6, 0, 6], "analyse": [6, 0, 6], "combine": [1, 0, 1]}
    out = capsys.readouterr().out
    last = out.split("\r")[-1]
    assert last.endswith("s\n")  # the last line ends with the elapsed time and a newline
    for segment in ("[##########] 6/6 read", "[##########] 6/6 add", "[##########] 6/6 analyse",
                    "[##########] 1/1 combine"):
        assert segment in last
    assert out.count("\r") >= 1
    assert x.compute() == 6


@pytest.mark.cluster
@pytest.mark.timeout(60)
def test_text_progress_counts_erred_tasks(pclient, capsys):
    import xsched

    x = pclient.persist(build(4, fail_on=sum(range(2, 12))), optimize_graph=False)
    bar = xsched.progress(x, notebook=False)
    assert bar.done
    g = bar.groups
    assert g["read"] == [4, 0, 4] and g["add"] == [4, 0, 4]
    assert g["analyse"] == [3, 1, 4]
    assert g["combine"] == [0, 1, 1]
    assert "1 erred" in capsys.readouterr().out.split("\r")[-1]


@pytest.mark.cluster
@pytest.mark.timeout(60)
def test_progress_of_futures_from_map_and_live_updates(pclient, tmp_path):
    import xsched

    gate = Gate(tmp_path)
    futs = pclient.map(gate.wait, range(5))
    bar = xsched.progress(futs, notebook=True)  # a widget object; returns at once
    assert not bar.done
    assert bar.groups == {"wait": [0, 0, 5]}
    assert bar.bars["wait"][0].max == 5 and bar.bars["wait"][0].value == 0
    gate.open()
    assert bar.wait(timeout=30)
    assert bar.groups == {"wait": [5, 0, 5]}
    progress_bar, label = bar.bars["wait"]
    assert progress_bar.value == 5 and progress_bar.bar_style == "success"
    assert "wait: 5 / 5" in label.value
    assert "finished" in bar.title.value


@pytest.mark.cluster
@pytest.mark.timeout(60)
def test_widget_bar_turns_red_on_error(pclient):
    import xsched

    futs = pclient.map(analyse, [1, 2, 3], fail_on=2)
    bar = xsched.progress(futs, notebook=True)
    assert bar.wait(timeout=30)
    assert bar.groups == {"analyse": [2, 1, 3]}
    assert bar.bars["analyse"][0].bar_style == "danger"
    assert "1 erred" in bar.bars["analyse"][1].value


@pytest.mark.cluster
@pytest.mark.timeout(60)
def test_subscriptions_end_when_their_client_goes(pclient, tmp_path):
    import xsched
    from xsched import Client

    def n_subs(scheduler):
        return len(scheduler.extensions["progress"].subs)

    gate = Gate(tmp_path)
    other = Client(pclient.cluster, set_as_default=False)
    try:
        futs = other.map(gate.wait, range(3), key=[f"held-{i}" for i in range(3)])
        bar = xsched.progress(futs, notebook=True)
        assert not bar.done
        assert pclient.run_on_scheduler(n_subs) == 1
    finally:
        other.close()
    wait_until(lambda: pclient.run_on_scheduler(n_subs) == 0, msg="subscription dropped")
    gate.open()


@pytest.mark.cluster
@pytest.mark.timeout(60)
def test_progress_of_finished_futures_returns_at_once(pclient, capsys):
    import xsched

    futs = pclient.map(add, [[1], [2], [3]])
    pclient.gather(futs)
    bar = xsched.progress(futs, notebook=False)
    assert bar.done and bar.groups == {"add": [3, 0, 3]}
    assert re.search(r"\r\[##########\] 3/3 add \| \d+\.\ds\n$", capsys.readouterr().out)
    bar = xsched.progress(futs, notebook=False, complete=False)
    assert bar.done and bar.groups == {}


@pytest.mark.cluster
@pytest.mark.timeout(60)
def test_await_progress_with_an_asynchronous_client(pclient, capsys):
    import asyncio

    import xsched
    from xsched import Client

    async def main():
        async with Client(pclient.cluster, asynchronous=True, set_as_default=False) as c:
            futs = c.map(add, [[i, 1] for i in range(8)])
            bar = xsched.progress(futs, notebook=False)
            assert bar.status == "created"
            await bar
            return bar.done, bar.groups

    assert asyncio.run(main()) == (True, {"add": [8, 0, 8]})
    assert "8/8 add" in capsys.readouterr().out


def fib_unique(n):
    """fib through worker_client, every call a task of its own (pure=False: no shared keys)."""
    if n < 2:
        return n
    with worker_client() as c:
        a, b = c.submit(fib_unique, n - 1, pure=False), c.submit(fib_unique, n - 2, pure=False)
        return a.result() + b.result()


def launch_after(gate, n):
    gate.wait()
    with worker_client() as c:
        return c.submit(fib_unique, n, pure=False).result()


@pytest.mark.cluster
@pytest.mark.timeout(120)
def test_progress_counts_the_tasks_a_task_launches_through_worker_client(pclient, tmp_path):
    import xsched

    gate = Gate(tmp_path)
    fut = pclient.submit(launch_after, gate, 6)
    bar = xsched.progress(fut, notebook=True)
    assert bar.groups == {"launch_after": [0, 0, 1]}  # nothing launched while the gate is shut
    assert list(bar.bars) == ["launch_after"]
    totals = []
    apply = bar._apply

    def record(msg):
        totals.append(sum(c[2] for c in msg["groups"].values()))
        apply(msg)

    bar._apply = record  # (the pushes, as they arrive)
    gate.open()
    assert bar.wait(timeout=100)
    assert fut.result(timeout=10) == 8
    n = fib_calls(6)
    assert bar.groups == {"launch_after": [1, 0, 1], "fib_unique": [n, 0, n]}
    d, e, t = bar.totals()
    assert d == t == n + 1 and e == 0
    assert totals == sorted(totals) and totals[-1] == n + 1, totals
    labels = [row.children[1].value for row in bar.rows.children]
    assert labels == ["launch_after: 1 / 1", f"fib_unique: {n} / {n}"]  # the row that appeared later
