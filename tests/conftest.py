"""Shared fixtures: an isolated Jupyter/IPython environment, one LocalCluster for the
cluster tier, and a check that the session leaves no child process behind.

Cluster tests (``pytest.mark.cluster``) run real scheduler and worker processes on
loopback. Most share the session ``cluster`` (2 workers x 1 thread; starting one costs
about a second) through a fresh ``client`` per test; tests that kill or rescale
processes start their own cluster with ``own_cluster``.

Cluster tests run every scheduler with ``scheduler.validate`` on (``XSCHED_SCHEDULER__VALIDATE``,
unless the environment already sets it): the scheduler checks its state's invariants after
its events and, on a violation, warns its clients and closes; the test then fails (its
futures are lost) and, even if it passed, fails at teardown with the scheduler's report.

Plain helpers for tests (``wait_until``, ``Gate``, ``count_opcodes``, ``pid_gone``...) live
in ``tests/support/helpers.py``; the multi-host, Slurm and SSH machinery in ``tests/support/``.
Tests are laid out by tier: ``tests/unit`` (pure, no scheduler or worker process),
``tests/cluster`` (real processes on loopback), ``tests/system`` (network namespaces, Slurm,
SSH, the browser and the notebooks).
"""

from __future__ import annotations

import gc
import logging
import os
import shutil
import tempfile
import time

import psutil
import pytest


# ---------------------------------------------------------------------- environment
_HYPOTHESIS_HOME = None


def pytest_configure(config):
    """Hypothesis keeps a cache under its home directory (``./.hypothesis`` by default): in
    a temporary directory instead, removed when the session ends. Its examples are the same
    on every run and machine (``derandomize``): a failure found is found again, and no run
    meets an example the runs before it did not; ``XSCHED_HYPOTHESIS_EXPLORE=1`` draws new
    ones (a new seed each run, or ``--hypothesis-seed``)."""
    global _HYPOTHESIS_HOME
    try:
        from hypothesis import settings
        from hypothesis.configuration import set_hypothesis_home_dir
    except ImportError:
        return
    _HYPOTHESIS_HOME = tempfile.mkdtemp(prefix="xsched-hypothesis-")
    set_hypothesis_home_dir(_HYPOTHESIS_HOME)
    settings.register_profile("xsched", derandomize=not os.environ.get("XSCHED_HYPOTHESIS_EXPLORE"))
    settings.load_profile("xsched")


def pytest_collection_modifyitems(session, config, items):
    """The system tier's tests (browsers, notebooks, namespaces, Slurm: the longest, up to a
    minute each) run first, the rest in their order: two at a time, a long test met at the
    end leaves one core idle while the other finishes it."""
    system = os.sep + os.path.join("tests", "system") + os.sep
    items.sort(key=lambda item: 0 if system in str(item.path) else 1)  # (a stable sort)


def pytest_unconfigure(config):
    if _HYPOTHESIS_HOME is not None:
        shutil.rmtree(_HYPOTHESIS_HOME, ignore_errors=True)


@pytest.fixture(scope="session", autouse=True)
def _isolated_jupyter_dirs(tmp_path_factory):
    """IPython, Jupyter and xsched's scheduler registry write nothing into the user's home."""
    base = tmp_path_factory.mktemp("jupyter-env")
    # XSCHED_RUNTIME_DIR: the registry of running schedulers, private to the test session
    names = {"IPYTHONDIR": base / "ipython", "JUPYTER_RUNTIME_DIR": base / "runtime",
             "XSCHED_RUNTIME_DIR": base / "xsched"}
    old = {k: os.environ.get(k) for k in (*names, "PYTHONPATH")}
    for k, p in names.items():
        p.mkdir(mode=0o700)
        os.environ[k] = str(p)
    # scheduler and worker processes import test helpers (pickled by reference) from here
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [repo, old["PYTHONPATH"]]))
    yield
    for k, v in old.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


@pytest.fixture(scope="session", autouse=True)
def _no_children_left():
    """After the whole session, no process started by the tests may remain.

    Processes are found by parentage (psutil), never by name; they get a short
    deadline to finish exiting, then the session fails if any is still there.
    """
    yield
    gc.collect()
    me = psutil.Process()
    deadline = time.monotonic() + 15
    alive: list = []
    while time.monotonic() < deadline:
        alive = []
        for p in me.children(recursive=True):
            try:
                if p.status() != psutil.STATUS_ZOMBIE:
                    alive.append(p)
            except psutil.NoSuchProcess:
                pass
        if not alive:
            break
        time.sleep(0.1)
    described = []
    for p in alive:
        try:
            described.append(f"{p.pid}: {' '.join(p.cmdline())[:200]}")
        except psutil.Error:
            described.append(str(p.pid))
    assert not alive, "child processes survived the test session:\n" + "\n".join(described)


VALIDATE_VAR = "XSCHED_SCHEDULER__VALIDATE"


class _ViolationRecorder(logging.Handler):
    """Keeps the log records that report a broken scheduler invariant."""

    def __init__(self, marker: str):
        super().__init__(logging.WARNING)
        self.marker = marker
        self.reports: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        try:
            text = record.getMessage()
        except Exception:  # a record that cannot format is not ours
            return
        if self.marker in text:
            self.reports.append(text)


@pytest.fixture(autouse=True)
def _validated_schedulers(request):
    """Cluster tests: schedulers validate their state after events; a violation fails the test.

    The scheduler (a process of its own, or in this one) tells its clients with a warning
    that the client logs under ``xsched.client``; an in-process scheduler also logs it
    under ``xsched.scheduler``. Both reach the ``xsched`` logger, where this fixture listens.
    """
    if request.node.get_closest_marker("cluster") is None:
        yield None
        return
    from xsched import config
    from xsched.scheduler.server import INVARIANT_VIOLATED

    old = os.environ.get(VALIDATE_VAR)
    if old is None:
        os.environ[VALIDATE_VAR] = "true"
        config.refresh()
    recorder = _ViolationRecorder(INVARIANT_VIOLATED)
    logging.getLogger("xsched").addHandler(recorder)
    try:
        yield recorder
    finally:
        logging.getLogger("xsched").removeHandler(recorder)
        if old is None:
            os.environ.pop(VALIDATE_VAR, None)
            config.refresh()
    if recorder.reports:
        pytest.fail("a scheduler found its state broken during this test:\n" + "\n".join(recorder.reports),
                    pytrace=False)


@pytest.fixture
def invariant_reports(_validated_schedulers):
    """The reports of broken scheduler invariants seen so far in this (cluster) test, for a
    test that breaks one on purpose: it checks them, then clears the list."""
    assert _validated_schedulers is not None, "invariant_reports is for tests marked cluster"
    return _validated_schedulers.reports


# ---------------------------------------------------------------------- cluster fixtures
@pytest.fixture(scope="session")
def cluster():
    """One LocalCluster (2 workers x 1 thread) shared by the cluster tests that only compute."""
    from xsched import LocalCluster

    c = LocalCluster(n_workers=2, threads_per_worker=1)
    try:
        yield c
    finally:
        c.close()


@pytest.fixture(scope="module")
def module_client():
    """A Client on a 2 x 1-thread cluster of the test module's own, for tests that look at
    cluster-wide state (memory history, task streams) other modules' work would disturb."""
    from xsched import Client, LocalCluster

    c = LocalCluster(n_workers=2, threads_per_worker=1)
    client = Client(c)
    try:
        yield client
    finally:
        client.close()
        c.close()
        gc.collect()


@pytest.fixture
def client(cluster):
    """A fresh Client on the shared cluster; closing it releases everything it held."""
    from xsched import Client

    c = Client(cluster)
    c.wait_for_workers(2, timeout=30)
    try:
        yield c
    finally:
        c.close()
        gc.collect()


@pytest.fixture
def own_cluster():
    """Factory for a private LocalCluster (for tests that kill or rescale processes)."""
    from xsched import LocalCluster

    made = []

    def make(**kwargs):
        kwargs.setdefault("n_workers", 2)
        kwargs.setdefault("threads_per_worker", 1)
        c = LocalCluster(**kwargs)
        made.append(c)
        return c

    try:
        yield make
    finally:
        for c in made:
            c.close()
