"""client.upload_file and client.restart on real worker processes (and Restart in the state)."""

from __future__ import annotations

import os
import uuid
import zipfile

import pytest

from xsched import Client
from xsched.client.client import RestartError, UploadError
from xsched.errors import FutureCancelledError
from xsched.scheduler.state import (
    AddKeys, AddWorker, NewTask, PublishDataset, Restart, SchedulerState, ToClient, ToWorker, UpdateGraph,
)

from tests.support.helpers import Gate, wait_until


# ---------------------------------------------------------------------- state machine
def test_restart_forgets_everything_and_tells_whom():
    s = SchedulerState(validate=True)
    s.handle(AddWorker("w1", 1), AddWorker("w2", 1))
    s.handle(UpdateGraph("c", [NewTask(f"r{i}", b"s", [], (0, 0, i)) for i in range(4)], ["r0", "r1", "r2", "r3"],
                         functions={b"f": b"pickled"}))
    s.handle(AddKeys("w1", {"x": 8}, client="c2"), PublishDataset("d", ["x"]))
    out = s.handle(Restart("because"))
    cancelled = sorted((o.client, o.msg["key"]) for o in out if isinstance(o, ToClient))
    assert cancelled == [("c", "r0"), ("c", "r1"), ("c", "r2"), ("c", "r3"), ("c2", "x"), ("dataset:d", "x")]
    assert all(o.msg["reason"] == "because" for o in out if isinstance(o, ToClient))
    closes = sorted(o.worker for o in out if isinstance(o, ToWorker))
    assert closes == ["w1", "w2"] and all(o.msg == {"op": "close-worker", "restart": True, "reason": "restart"}
                                          for o in out if isinstance(o, ToWorker))
    assert not s.tasks and not s.workers and not s.datasets and s.n_queued == 0 and not s.functions
    assert set(s.clients) == {"c", "c2"}
    s.handle(AddWorker("w3", 1))  # a restarted worker: work goes on
    s.handle(UpdateGraph("c", [NewTask("a", b"s")], ["a"]))
    assert s.tasks["a"].state == "processing"


# ---------------------------------------------------------------------- upload_file
def _module(tmp_path, name, body):
    path = tmp_path / f"{name}.py"
    path.write_text(body)
    return str(path)


@pytest.mark.cluster
@pytest.mark.timeout(120)
def test_upload_py_and_zip_reach_every_worker_also_later_ones(own_cluster, tmp_path):
    cluster = own_cluster(n_workers=1)
    name = f"xsched_up_{uuid.uuid4().hex[:8]}"
    with Client(cluster, set_as_default=False) as c:
        c.wait_for_workers(1, timeout=30)
        assert list(c.upload_file(_module(tmp_path, name, "VALUE = 1\n")).values()) == [None]
        get = lambda: __import__(name).VALUE  # noqa: E731 (imported on the worker)
        assert c.submit(get, pure=False).result() == 1
        # uploaded again: reloaded (same size, same second: stale bytecode must not win)
        c.upload_file(_module(tmp_path, name, "VALUE = 2\n"))
        assert c.submit(get, pure=False).result() == 2
        # an archive goes on sys.path
        zpath = tmp_path / f"{name}_pkg.zip"
        with zipfile.ZipFile(zpath, "w") as z:
            z.writestr(f"{name}_z/__init__.py", "def hello():\n    return 'from the zip'\n")
        c.upload_file(str(zpath))
        assert c.submit(lambda: __import__(f"{name}_z").hello(), pure=False).result() == "from the zip"
        # a worker that joins later gets every file, before its first task
        cluster.scale(2)
        c.wait_for_workers(2, timeout=60)
        assert set(c.run(get).values()) == {2}
        assert set(c.run(lambda: __import__(f"{name}_z").hello()).values()) == {"from the zip"}
        # a module that fails to import: every worker is named, none crashes
        with pytest.raises(UploadError, match=r"2 of 2 workers could not load .*broken.*ZeroDivisionError"):
            c.upload_file(_module(tmp_path, f"{name}_broken", "1 / 0\n"))
        assert len(c.run(os.getpid)) == 2
        with pytest.raises(ValueError, match=r"\.py, \.zip or \.egg"):
            c.upload_file(str(tmp_path / "data.csv"))


# ---------------------------------------------------------------------- restart
def inc(x):
    return x + 1


@pytest.mark.cluster
@pytest.mark.timeout(120)
def test_restart_restarts_every_worker_and_cancels_futures(own_cluster, tmp_path):
    cluster = own_cluster(n_workers=2)
    gate = Gate(tmp_path)
    with Client(cluster, set_as_default=False) as c, Client(cluster, set_as_default=False) as other:
        c.wait_for_workers(2, timeout=30)
        pids = set(c.run(os.getpid).values())
        done = c.submit(inc, 1)
        assert done.result() == 2
        running = c.submit(gate.wait, 1)
        elsewhere = other.submit(inc, 10)
        assert elsewhere.result() == 11
        wait_until(lambda: any(c.run_on_scheduler(lambda scheduler: scheduler.processing).values()))
        c.publish_dataset(kept=done)
        c.restart(timeout=60)
        info = c.scheduler_info()
        assert len(info["workers"]) == 2
        assert not (set(c.run(os.getpid).values()) & pids)  # new processes
        for fut in (done, running):
            assert fut.status == "cancelled"
            with pytest.raises(FutureCancelledError, match="restart"):
                fut.result()
        wait_until(lambda: elsewhere.status == "cancelled", msg="the other client's future cancelled")
        assert "restarted by" in elsewhere._state.text
        assert c.list_datasets() == [] and info["tasks"] == {}
        # work goes on, the same keys included
        assert c.submit(inc, 1).result() == 2
        gate.open()
        assert c.submit(gate.wait, 1).result() == 1
        # wait_for_workers=False returns once they are told; they come back in their own time
        pids = set(c.run(os.getpid).values())
        c.restart(wait_for_workers=False)
        c.wait_for_workers(2, timeout=60)
        wait_until(lambda: len(set(c.run(os.getpid).values()) - pids) == 2, msg="two new worker processes")
        assert c.submit(inc, 5).result() == 6
        with pytest.raises(ValueError, match="wait for them"):
            c.restart(environment=str(tmp_path), wait_for_workers=False)


@pytest.mark.cluster
@pytest.mark.timeout(90)
def test_restart_workers_restarts_those_and_their_work_is_computed_again(own_cluster, tmp_path):
    cluster = own_cluster(n_workers=2)
    with Client(cluster, set_as_default=False) as c:
        c.wait_for_workers(2, timeout=30)
        pids = c.run(os.getpid)
        leaky, kept = sorted(pids)
        there = c.submit(inc, 41, workers=[leaky], allow_other_workers=True)
        here = c.submit(inc, 1, workers=[kept])
        assert there.result(timeout=30) == 42 and here.result(timeout=30) == 2
        assert c.restart_workers([leaky], timeout=60) == {leaky: "OK"}
        assert len(c.scheduler_info()["workers"]) == 2
        now = set(c.run(os.getpid).values())
        assert pids[kept] in now and pids[leaky] not in now  # (only that one is a new process)
        assert there.status != "cancelled" and there.result(timeout=30) == 42  # (computed again)
        assert c.who_has([here])[here.key] == [kept]  # (the other worker kept its data)
        with pytest.raises(RestartError, match="tcp://127.0.0.1:1 not among the scheduler's workers"):
            c.restart_workers(["tcp://127.0.0.1:1"])
        assert c.restart_workers("tcp://127.0.0.1:1", raise_for_error=False) == {"tcp://127.0.0.1:1": "unknown"}


@pytest.mark.cluster
@pytest.mark.timeout(60)
def test_restart_without_nannies_says_so(own_cluster):
    cluster = own_cluster(n_workers=1, processes=False)
    with Client(cluster, set_as_default=False) as c:
        c.wait_for_workers(1, timeout=30)
        with pytest.raises(RestartError, match=r"only 0 of 1 workers came back.*no-nanny.*processes=False"):
            c.restart(timeout=2)


# ---------------------------------------------------------------------- restart into an environment
def _environment_for_these_workers(c, tmp_path):
    """A new venv of this Python with one extra module and, hard-linked from where they are
    installed here, the distributions whose modules the cluster's workers have imported (xsched,
    pyzmq, numpy, pytest for the test module...): what a worker needs to start in it, ~100 MB
    that travel in many 4 MiB chunks. Not a copy of the whole project venv: that is over a GB
    (pyarrow, playwright, jupyterlab...) that no worker imports, and unpacking it took most of
    this test's time.
    """
    import importlib.metadata
    import shutil
    import subprocess
    import sys

    env = tmp_path / "env"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env)], check=True)
    site = next((env / "lib").glob("python3*/site-packages"))
    imported = set().union(*c.run(lambda: {m.partition(".")[0] for m in list(__import__("sys").modules)}).values())
    owners = importlib.metadata.packages_distributions()
    for name in sorted({d for m in imported for d in owners.get(m, ())}):
        for f in importlib.metadata.distribution(name).files or ():
            src = f.locate()
            if f.parts[0] == ".." or not src.is_file():  # scripts outside site-packages; stale entries
                continue
            dst = site / f
            dst.parent.mkdir(parents=True, exist_ok=True)
            try:
                os.link(src, dst)
            except OSError:
                shutil.copy2(src, dst)
    (site / "xsched_env_marker.py").write_text("WHERE = 'the shipped environment'\n")
    return env


def _prefixes(c):
    return c.run(lambda: __import__("sys").prefix)


@pytest.mark.cluster
@pytest.mark.timeout(300)
def test_restart_into_a_shipped_environment_and_fall_back_from_a_broken_one(own_cluster, tmp_path):
    import sys

    broken = tmp_path / "broken"
    (broken / "bin").mkdir(parents=True)
    (broken / "bin" / "python").write_text("#!/bin/sh\necho 'this python is broken' >&2\nexit 3\n")
    os.chmod(broken / "bin" / "python", 0o755)
    cluster = own_cluster(n_workers=3)
    with Client(cluster, set_as_default=False) as c:
        c.wait_for_workers(3, timeout=60)
        assert set(_prefixes(c).values()) == {os.path.normpath(sys.prefix)}
        fut = c.submit(inc, 1)
        fut.result()
        env = _environment_for_these_workers(c, tmp_path)
        c.restart(environment=str(env), timeout=120)
        assert fut.status == "cancelled"
        prefixes = set(_prefixes(c).values())
        assert len(prefixes) == 1, prefixes  # one copy per host, shared by its three workers
        [prefix] = prefixes
        assert "xsched-environments" in prefix and prefix != os.path.normpath(sys.prefix)
        assert set(c.run(lambda: __import__("xsched_env_marker").WHERE).values()) == {"the shipped environment"}
        assert c.last_environment_bytes > 10_000_000
        # a broken environment: every worker comes back in the one it had, and the error says why
        with pytest.raises(RestartError, match=r"3 of 3 workers did not restart.*could not start with .*broken"
                                               r".*exit code 3.*this python is broken"):
            c.restart(environment=str(broken), timeout=120)
        assert set(_prefixes(c).values()) == {prefix}
        assert c.submit(inc, 2).result() == 3
