"""Plugins on real LocalClusters: worker, scheduler and nanny plugins, UploadFile and
PipInstall, on the workers there and on workers that join later. Without processes (the
extension, the worker's host, the nanny's directory): tests/unit/test_plugins.py."""

from __future__ import annotations

import base64
import hashlib
import os
import uuid
import zipfile

import pytest

from xsched import Client, NannyPlugin, PipInstall, SchedulerPlugin, UploadFile, WorkerPlugin
from xsched.client.plugins import PluginError

from tests.support.helpers import wait_until

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(120)]


def inc(x):
    return x + 1


# (module level: workers and the scheduler unpickle these by reference from this module)
class Counter(WorkerPlugin):
    """Counts the tasks run here; its teardown leaves a file named after the worker's process."""

    def __init__(self, directory):
        self.directory = directory

    def setup(self, worker):
        self.done = 0
        self.seen = []

    def transition(self, key, start, finish, **kwargs):
        self.seen.append((key, start, finish))
        if (start, finish) == ("executing", "memory"):
            self.done += 1

    def teardown(self, worker):
        with open(os.path.join(self.directory, f"teardown-{os.getpid()}"), "w"):
            pass


class Broken(WorkerPlugin):
    def setup(self, worker):
        raise ValueError("this plugin cannot start")


class Audit(SchedulerPlugin):
    def __init__(self, directory):
        self.directory = directory
        self.seen = []

    async def start(self, scheduler):
        self.seen.append(("start", scheduler.address))

    def transition(self, key, start, finish, *args, **kwargs):
        self.seen.append(("transition", key, start, finish))

    def update_graph(self, scheduler, keys, **kwargs):
        self.seen.append(("update-graph", sorted(keys)))

    def add_worker(self, scheduler, worker):
        self.seen.append(("add-worker", worker))

    def remove_worker(self, scheduler, worker):
        self.seen.append(("remove-worker", worker))

    async def close(self):
        with open(os.path.join(self.directory, "audit-closed"), "w"):
            pass


class SetEnv(NannyPlugin):
    restart = True

    def __init__(self, name, value):
        self.name, self.value = name, value

    def setup(self, nanny):
        os.environ[self.name] = self.value


def _scheduler_seen(scheduler):
    return list(scheduler.plugins["audit"].seen)


def _getenv(name):
    return os.environ.get(name)


# ----------------------------------------------------------------------------- worker plugins
@pytest.mark.timeout(60)
def test_worker_plugin_set_up_everywhere_hears_transitions_and_is_torn_down(own_cluster, tmp_path):
    cluster = own_cluster(n_workers=1)
    with Client(cluster, set_as_default=False) as c:
        c.wait_for_workers(1, timeout=30)
        [first] = c.scheduler_info()["workers"]
        assert c.register_plugin(Counter(str(tmp_path)), name="counter") == {first: "OK"}
        fut = c.submit(inc, 1)
        assert fut.result() == 2
        seen = c.run(lambda worker: worker.plugins["counter"].seen)[first]
        assert (fut.key, "executing", "memory") in seen
        assert c.run(lambda worker: worker.plugins["counter"].done) == {first: 1}
        # a worker that joins later is set up before its first task
        cluster.scale(2)
        c.wait_for_workers(2, timeout=30)
        [later] = set(c.scheduler_info()["workers"]) - {first}
        assert c.run(lambda worker: worker.plugins["counter"].done) == {first: 1, later: 0}
        assert c.submit(inc, 10, workers=[later]).result() == 11
        assert c.run(lambda worker: worker.plugins["counter"].done, workers=[later]) == {later: 1}
        # unregistered: torn down on every worker, and gone
        pids = set(c.run(os.getpid).values())
        assert c.unregister_worker_plugin("counter") == {first: "OK", later: "OK"}
        assert {f"teardown-{p}" for p in pids} <= set(os.listdir(tmp_path))
        assert c.run(lambda worker: list(worker.plugins)) == {first: [], later: []}
        with pytest.raises(Exception, match="no worker plugin named 'counter'"):
            c.unregister_worker_plugin("counter")


@pytest.mark.timeout(60)
def test_a_failing_setup_names_plugin_and_worker_and_the_worker_serves_on(client):
    workers = sorted(client.scheduler_info()["workers"])
    name = f"broken-{uuid.uuid4().hex[:6]}"
    try:
        with pytest.raises(PluginError, match=rf"plugin '{name}' failed in setup on 2 of 2 workers: "
                                              rf"{workers[0]}: ValueError: this plugin cannot start") as info:
            client.register_plugin(Broken(), name=name)
        assert sorted(info.value.errors) == workers
        assert isinstance(info.value.__cause__, ValueError)
        assert "in setup" in str(info.value.__cause__.__cause__)  # the remote traceback, from the worker
        assert client.submit(inc, 41, pure=False).result() == 42
        assert set(client.run(lambda worker: name in worker.plugins).values()) == {False}
    finally:
        client.unregister_worker_plugin(name)


# ----------------------------------------------------------------------------- scheduler plugins
@pytest.mark.timeout(60)
def test_scheduler_plugin_hears_workers_graphs_and_transitions(own_cluster, tmp_path):
    cluster = own_cluster(n_workers=1)
    with Client(cluster, set_as_default=False) as c:
        c.wait_for_workers(1, timeout=30)
        assert c.register_plugin(Audit(str(tmp_path)), name="audit") is None
        fut = c.submit(inc, 1)
        assert fut.result() == 2
        cluster.scale(2)
        c.wait_for_workers(2, timeout=30)
        seen = wait_until(lambda: (s := c.run_on_scheduler(_scheduler_seen))
                          and any(e[0] == "add-worker" for e in s) and s, msg="add_worker heard")
        assert seen[0] == ("start", c.scheduler_info()["address"])
        assert ("update-graph", [fut.key]) in seen
        assert seen.index(("update-graph", [fut.key])) < seen.index(("transition", fut.key, "released", "waiting"))
        assert ("transition", fut.key, "processing", "memory") in seen
        added = [e[1] for e in seen if e[0] == "add-worker"]
        assert len(added) == 1 and added[0] in c.scheduler_info()["workers"]
        c.retire_workers([added[0]])
        wait_until(lambda: ("remove-worker", added[0]) in c.run_on_scheduler(_scheduler_seen),
                   msg="remove_worker heard")
        c.unregister_scheduler_plugin("audit")
        assert os.path.exists(tmp_path / "audit-closed")
        assert c.run_on_scheduler(lambda scheduler: dict(scheduler.plugins)) == {}


# ----------------------------------------------------------------------------- nanny plugins
@pytest.mark.timeout(60)
def test_nanny_plugin_sets_the_environment_workers_start_with(own_cluster):
    var = f"XSCHED_TEST_{uuid.uuid4().hex[:8].upper()}"
    cluster = own_cluster(n_workers=1)
    with Client(cluster, set_as_default=False) as c:
        c.wait_for_workers(1, timeout=30)
        [first] = c.scheduler_info()["workers"]
        assert c.run(_getenv, var) == {first: None}
        assert c.register_plugin(SetEnv(var, "on"), name="env") == {first: "OK"}

        def restarted_with_it():  # (restart = True: the running worker restarts, through its nanny)
            try:
                got = c.run(_getenv, var)
            except Exception:  # noqa: BLE001 - the worker is between two processes
                return False
            return len(got) == 1 and first not in got and set(got.values()) == {"on"}

        wait_until(restarted_with_it, timeout=30, msg="the worker restarted with the variable")
        # a worker joining later: its nanny sets the plugin up before the worker registers
        cluster.scale(2)
        c.wait_for_workers(2, timeout=30)
        assert set(c.run(_getenv, var).values()) == {"on"}
        assert c.unregister_worker_plugin("env", nanny=True) == {a: "OK" for a in c.scheduler_info()["workers"]}


@pytest.mark.timeout(60)
def test_workers_without_a_nanny_skip_nanny_plugins(own_cluster):
    cluster = own_cluster(n_workers=1, processes=False)
    with Client(cluster, set_as_default=False) as c:
        c.wait_for_workers(1, timeout=30)
        [(address, outcome)] = c.register_plugin(SetEnv("XSCHED_NEVER_SET", "x")).items()
        assert outcome.startswith("skipped: this worker has no nanny")
        assert "XSCHED_NEVER_SET" not in os.environ


# ----------------------------------------------------------------------------- ready-made plugins
def _wheel(directory, module: str, value: str) -> str:
    """A one-module wheel written by hand (no build tools, no network)."""
    info = f"{module}-1.0.dist-info"
    files = {f"{module}/__init__.py": f"VALUE = {value!r}\n".encode(),
             f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {module}\nVersion: 1.0\n".encode(),
             f"{info}/WHEEL": b"Wheel-Version: 1.0\nGenerator: xsched-tests\nRoot-Is-Purelib: true\n"
                              b"Tag: py3-none-any\n"}
    record = "".join(f"{path},sha256={base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b'=').decode()},"
                     f"{len(data)}\n" for path, data in files.items()) + f"{info}/RECORD,,\n"
    files[f"{info}/RECORD"] = record.encode()
    path = os.path.join(directory, f"{module}-1.0-py3-none-any.whl")
    with zipfile.ZipFile(path, "w") as z:
        for name, data in files.items():
            z.writestr(name, data)
    return path


def _import_value(module):
    return __import__(module).VALUE


@pytest.mark.timeout(90)
def test_upload_file_and_pip_install_reach_every_worker_also_later_ones(own_cluster, tmp_path, monkeypatch):
    tag = uuid.uuid4().hex[:8]
    wheels, site = tmp_path / "wheels", tmp_path / "site"
    wheels.mkdir()
    site.mkdir()
    _wheel(str(wheels), f"xsched_probe_{tag}", "installed")
    _wheel(str(wheels), f"xsched_probe2_{tag}", "installed too")
    # the packages go to a directory of this test (never the project's environment), which the
    # workers have on their path from the start
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]))
    helpers = tmp_path / f"xsched_helpers_{tag}.py"
    helpers.write_text("def double(x):\n    return 2 * x\n")
    # (--no-deps: these wheels declare no dependencies, so pip's resolver has nothing to do
    # but costs ~0.4 s of each of the six pip runs below, restarted workers included)
    options = ["--no-index", "--find-links", str(wheels), "--target", str(site), "--no-deps"]
    cluster = own_cluster(n_workers=1)
    with Client(cluster, set_as_default=False) as c:
        c.wait_for_workers(1, timeout=30)
        [first] = c.scheduler_info()["workers"]
        assert c.register_plugin(UploadFile(str(helpers))) == {first: "OK"}
        assert c.submit(lambda x: __import__(f"xsched_helpers_{tag}").double(x), 21).result() == 42
        assert c.register_plugin(PipInstall([f"xsched_probe_{tag}"], pip_options=options)) == {first: "OK"}
        assert c.submit(_import_value, f"xsched_probe_{tag}", pure=False).result() == "installed"
        # a worker that joins later gets both before its first task
        cluster.scale(2)
        c.wait_for_workers(2, timeout=30)
        [later] = set(c.scheduler_info()["workers"]) - {first}
        assert c.submit(lambda x: __import__(f"xsched_helpers_{tag}").double(x), 2, workers=[later]).result() == 4
        assert c.run(_import_value, f"xsched_probe_{tag}") == {first: "installed", later: "installed"}
        # restart_workers=True: each worker restarts once after installing, then stays
        pids = set(c.run(os.getpid).values())
        c.register_plugin(PipInstall([f"xsched_probe2_{tag}"], pip_options=options, restart_workers=True))

        def restarted():
            try:
                now = c.run(os.getpid)
            except Exception:  # noqa: BLE001 - a worker between two processes
                return False
            return len(now) == 2 and not set(now.values()) & pids and now

        now = wait_until(restarted, timeout=40, msg="both workers restarted")
        assert c.run(_import_value, f"xsched_probe2_{tag}") == {a: "installed too" for a in now}
        assert c.run(lambda worker: worker.status) == {a: "running" for a in now}  # not restarting again
        assert c.run(os.getpid) == now
