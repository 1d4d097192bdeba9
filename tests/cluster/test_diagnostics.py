"""Diagnostics on a real cluster: logs of the scheduler and workers, the task stream (and
its context manager), has_what / processing, the story of a key, the stack of a running
task, the sampling profiler, and a dump of the cluster's state read back from its file.

The tests share one cluster of this module (``module_client``): the task stream and the
views are cluster-wide, and other modules' work would show in them. Tasks are held on the
workers with a file ``Gate``; nothing waits by sleeping."""

from __future__ import annotations

import json
import logging
import os
import uuid

import msgpack
import pytest

import xsched
from tests.support.helpers import Gate, wait_until
from xsched.dashboard.figures import ProfileFigure
from xsched.keys import key_split

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(120)]


def inc(x):
    return x + 1


def fail(x):
    raise ValueError(f"bad {x}")


def log_warning(marker):
    logging.getLogger("xsched.user").warning("task says %s", marker)
    return marker


def blocked_on(gate, value=None):
    return gate.wait(value)


def spin_until(path):
    n = 0
    while not os.path.exists(path):
        n += 1
    return n


@pytest.fixture
def gate(tmp_path):
    g = Gate(tmp_path)
    try:
        yield g
    finally:
        g.open()  # never leave a task held on a shared worker


def test_worker_and_scheduler_logs_hold_what_was_logged(module_client):
    c = module_client
    marker = uuid.uuid4().hex
    assert c.submit(log_warning, marker).result(timeout=30) == marker
    logs = c.get_worker_logs()
    assert set(logs) == set(c.scheduler_info()["workers"])
    hits = [(addr, level, m) for addr, records in logs.items() for level, m in records if marker in m]
    assert len(hits) == 1 and hits[0][1] == "WARNING" and "xsched.user" in hits[0][2]
    [addr] = [h[0] for h in hits]
    assert c.get_worker_logs(n=1, workers=[addr])[addr][-1][1].endswith(f"task says {marker}")
    assert c.get_worker_logs(workers=["no-such-worker"]) == {}

    c.run_on_scheduler(lambda: logging.getLogger("xsched.test").error("scheduler note %s", marker))
    level, message = c.get_scheduler_logs(n=1)[0]
    assert level == "ERROR" and message.endswith(f"scheduler note {marker}")
    assert c.get_scheduler_logs(n=0) == []


def test_the_task_stream_records_exactly_the_tasks_run_inside_it(module_client):
    c = module_client
    before = c.submit(inc, -100)
    before.result(timeout=30)
    with xsched.get_task_stream(c) as ts:
        futures = c.map(inc, range(6))
        bad = c.submit(fail, 1)
        assert c.gather(futures) == list(range(1, 7))
        with pytest.raises(ValueError):
            bad.result(timeout=30)
    assert sorted(r["key"] for r in ts.data) == sorted([f.key for f in futures] + [bad.key])
    workers = set(c.scheduler_info()["workers"])
    for r in ts.data:
        assert r["worker"] in workers and r["start"] <= r["stop"] and r["group"] in ("inc", "fail")
        assert r["status"] == ("error" if r["key"] == bad.key else "memory")
    after = c.submit(inc, 100)
    after.result(timeout=30)
    assert before.key not in {r["key"] for r in ts.data} and after.key not in {r["key"] for r in ts.data}

    runs = c.get_task_stream()
    assert {before.key, after.key, bad.key} <= {r["key"] for r in runs}
    assert [r["key"] for r in c.get_task_stream(count=1)] == [after.key]
    assert c.get_task_stream(start=runs[-1]["stop"] + 3600) == []  # (every run ended before that)
    recent = c.get_task_stream(start="10 minutes")
    assert after.key in {r["key"] for r in recent}


def test_the_task_stream_drawn_and_saved_as_dask_does(module_client, tmp_path):
    c = module_client
    with xsched.get_task_stream(c, plot="save", filename=tmp_path / "block.html") as ts:
        c.gather(c.map(inc, range(4), pure=False))  # (new keys: none may be held from before)
    assert len(ts.data) == 4 and 'data-task-count="4"' in ts.figure.svg
    page = (tmp_path / "block.html").read_text()
    assert page.startswith("<!DOCTYPE html>") and 'data-task-count="4"' in page and "<script" not in page
    assert 'class="xsched-task-stream"' in ts.figure._repr_html_()
    runs, fig = c.get_task_stream(count=3, plot=True)
    assert len(runs) == 3 and repr(fig).startswith("TaskStreamFigure<3 task runs on ")
    assert not (tmp_path / "task-stream.html").exists()  # (plot=True draws, only "save" writes)
    runs, fig = c.get_task_stream(count=2, plot="save", filename=str(tmp_path / "last.html"))
    assert 'data-task-count="2"' in (tmp_path / "last.html").read_text()
    with pytest.raises(ValueError, match="plot is False, True .* or 'save'"):
        c.get_task_stream(plot="yes")
    with pytest.raises(FileNotFoundError, match="name a file in an existing directory"):
        c.get_task_stream(count=1, plot="save", filename=tmp_path / "no-such-dir" / "x.html")
    ran = []
    with pytest.raises(FileNotFoundError, match="name a file in an existing directory"):
        with xsched.get_task_stream(c, plot="save", filename=tmp_path / "no-such-dir" / "y.html"):
            ran.append(True)  # (refused before the block: its work is not lost, its error not hidden)
    assert ran == []


def test_the_task_stream_context_manager_with_an_asynchronous_client(module_client):
    import asyncio

    async def main():
        async with xsched.Client(module_client.cluster, asynchronous=True, set_as_default=False) as ac:
            async with xsched.get_task_stream(ac, plot=True) as ts:
                assert await ac.submit(inc, 41) == 42
            runs, fig = await ac.get_task_stream(count=1, plot=True)
            return ts.data, ts.figure, runs, fig

    data, figure, runs, fig = asyncio.run(main())
    assert [r["group"] for r in data] == ["inc"] and 'data-task-count="1"' in figure.svg
    assert len(runs) == 1 and 'data-task-count="1"' in fig.svg


def test_has_what_and_processing(module_client, gate):
    c = module_client
    x = c.submit(inc, 1)
    x.result(timeout=30)
    [holder] = c.who_has(x)[x.key]
    has_what = c.has_what()
    assert set(has_what) == set(c.scheduler_info()["workers"]) and x.key in has_what[holder]
    name = c.scheduler_info()["workers"][holder]["name"]
    assert list(c.has_what(workers=[name])) == [holder]

    held = c.submit(blocked_on, gate, 5, pure=False)
    where = wait_until(lambda: [a for a, keys in c.processing().items() if held.key in keys],
                       msg="the held task is processing")
    assert c.processing(workers=where)[where[0]] == [held.key]
    gate.open()
    assert held.result(timeout=30) == 5
    assert held.key not in {k for keys in c.processing().values() for k in keys}


def test_the_story_of_a_key(module_client):
    c = module_client
    fut = c.submit(inc, 10)
    assert fut.result(timeout=30) == 11
    story = c.story(fut)
    assert story and {key for key, *_ in story} == {fut.key}
    steps = [(start, finish) for _, start, finish, _ in story]
    assert steps[0] == ("new", "released") and steps[-1] == ("processing", "memory")
    assert all(stimulus for *_, stimulus in story)
    assert c.story(fut.key) == story and c.story("no-such-key") == []


def _stacks_in(c, fut, function):
    """The call stacks of ``fut`` once its own function is on its stack: a task shows as
    running from when its thread takes it, while its function may still be loading (the
    worker's first task of this module imports it), and the stacks then are importlib's."""
    stacks = c.call_stack(fut)
    in_it = any(f"in {function}" in "".join(frames) for by_key in stacks.values() for frames in by_key.values())
    return stacks if in_it else None


def test_call_stack_of_a_blocked_task_names_its_function(module_client, gate):
    c = module_client
    held = c.submit(blocked_on, gate, 1, pure=False)
    stacks = wait_until(lambda: _stacks_in(c, held, "blocked_on"), msg="the held task is running")
    [(addr, by_key)] = stacks.items()
    assert list(by_key) == [held.key]
    text = "".join(by_key[held.key])
    assert "in blocked_on" in text and "in wait" in text and "helpers.py" in text
    assert by_key[held.key][0].lstrip().startswith(f'File "{__file__}"')  # from the task's function down
    assert held.key in c.call_stack()[addr]  # (every running task)
    assert c.call_stack(keys=["no-such-key"]) == {}
    gate.open()
    assert held.result(timeout=30) == 1
    assert c.call_stack(held) == {}


def test_profile_counts_where_a_busy_task_spends_its_time(module_client, gate, tmp_path):
    c = module_client
    busy = c.submit(spin_until, gate.path, pure=False)
    wait_until(lambda: _stacks_in(c, busy, "spin_until"), msg="the busy task is running")
    prof = c.profile(duration="0.3s", interval="5ms")
    assert prof["samples"] >= 5
    spin = [row for row in prof["counts"] if row["function"] == "spin_until"]
    # the task's function is on every sample, at one of its lines
    assert spin and spin[0]["file"] == __file__ and sum(r["count"] for r in spin) == prof["samples"]
    assert sum(r["self"] for r in prof["counts"]) == prof["samples"]
    # the call tree: the task's prefix on top with every sample, the function under it
    [top] = [row for row in prof["tree"] if row[0] == 0]
    assert top[1] == key_split(busy.key) and top[3] == prof["samples"]
    assert any(row[1] == "spin_until" and row[2] == __file__ for row in prof["tree"])
    # drawn: returned as a figure and written as a page (dask's plot= and filename=)
    page = tmp_path / "profile.html"
    prof, fig = c.profile(duration="0.2s", interval="5ms", plot=True, filename=page)
    assert isinstance(fig, ProfileFigure) and fig.samples == prof["samples"] >= 3
    assert f'data-sample-count="{prof["samples"]}"' in fig.svg and "spin_until" in page.read_text()
    assert isinstance(c.profile(duration="0.1s", filename=tmp_path / "only.html"), dict)
    assert "spin_until" in (tmp_path / "only.html").read_text()
    gate.open()
    assert busy.result(timeout=30) > 0
    with pytest.raises(ValueError, match="duration"):
        c.profile(duration="1h")
    with pytest.raises(FileNotFoundError, match="does not exist"):  # at the call, before sampling
        c.profile(duration="10s", filename=tmp_path / "no-such-dir" / "p.html")
    with pytest.raises(ValueError, match="plot"):
        c.profile(plot="yes")
    for dask_keyword in ({"key": "spin_until"}, {"start": 0}, {"scheduler": True}):
        with pytest.raises(TypeError, match=f"{next(iter(dask_keyword))}= select from a history of samples"):
            c.profile(**dask_keyword)
    assert c.scheduler.address == c.scheduler_address and c.scheduler_address in repr(c.scheduler)


@pytest.mark.parametrize("fmt", ["msgpack", "json"])
def test_dump_cluster_state_round_trip(module_client, tmp_path, gate, fmt):
    c = module_client
    done = c.submit(inc, 20)
    done.result(timeout=30)
    held = c.submit(blocked_on, gate, pure=False)
    wait_until(lambda: c.call_stack(held), msg="the held task is running")
    path = c.dump_cluster_state(str(tmp_path / "dump"), format=fmt)
    assert path == str(tmp_path / f"dump.{fmt}") and os.path.exists(path)
    if fmt == "json":
        with open(path) as f:
            dump = json.load(f)
    else:
        with open(path, "rb") as f:
            dump = msgpack.unpackb(f.read(), strict_map_key=False)
    assert sorted(dump) == ["client", "scheduler", "time", "workers"] and dump["client"] == c.id
    sched = dump["scheduler"]
    assert sched["tasks"][done.key]["state"] == "memory" and sched["tasks"][held.key]["state"] == "processing"
    assert any(e[0] == done.key and e[2] == "memory" for e in sched["transition_log"])
    assert done.key in {r[0] for r in sched["task_stream"]["records"]}
    assert set(dump["workers"]) == set(sched["info"]["workers"]) == set(c.scheduler_info()["workers"])
    [runner] = [w for w in dump["workers"].values() if held.key in w["executing"]]
    assert runner["tasks"][held.key] == "executing" and "metrics" in runner and "logs" in runner
    gate.open()
    held.result(timeout=30)
    with pytest.raises(ValueError, match="format"):
        c.dump_cluster_state(str(tmp_path / "x"), format="yaml")


def sized_for_nbytes(n):
    return bytes(n)


def test_nbytes_per_key_and_summed_per_prefix(module_client):
    c = module_client
    futures = c.map(sized_for_nbytes, [1000, 2000, 3000])
    c.gather(futures)
    per_key = c.nbytes(futures, summary=False)
    assert sorted(per_key) == sorted(f.key for f in futures)
    assert [per_key[f.key] >= n for f, n in zip(futures, [1000, 2000, 3000])] == [True] * 3
    assert c.nbytes(summary=True)["sized_for_nbytes"] == sum(per_key.values())
    assert c.nbytes(futures[0].key, summary=False) == {futures[0].key: per_key[futures[0].key]}
    del futures  # (released: no longer in memory, so no longer counted)
    wait_until(lambda: "sized_for_nbytes" not in c.nbytes(), msg="the released keys are forgotten")


def test_a_worker_gone_is_left_out_of_what_every_worker_is_asked(module_client, gate, monkeypatch):
    """profile, get_worker_logs, call_stack and interrupt ask every worker: one that went
    away meanwhile (here an address where nothing listens, as a worker killed between the
    scheduler's answer and the request) is left out, the others' answers stand."""
    import socket

    c = module_client
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        gone = f"tcp://127.0.0.1:{s.getsockname()[1]}"
    listed = c._worker_addresses

    async def with_one_gone(workers):
        return sorted(await listed(workers)) + [gone]

    monkeypatch.setattr(c, "_worker_addresses", with_one_gone)
    busy = c.submit(spin_until, gate.path, pure=False)
    wait_until(lambda: _stacks_in(c, busy, "spin_until"), msg="the busy task is running")
    assert c.profile(duration="0.2s", interval="5ms")["samples"] >= 3
    assert gone not in c.get_worker_logs(n=1) and len(c.get_worker_logs(n=1)) >= 1
    assert [busy.key] == [k for stacks in c.call_stack(busy).values() for k in stacks]
    assert list(c.interrupt(busy).values()) == [[busy.key]]
    assert type(busy.exception(timeout=30)).__name__ == "TaskInterrupted"
