"""SLURMCluster against a real single-node Slurm (Debian's slurm-wlm + munge, started by
the test): the job script, scale in jobs, adapt up and back to zero, a worker retiring by
itself before its walltime, and close cancelling every job. Needs root and the packages
(``tests/support/system_deps.sh`` installs them); skipped otherwise."""

from __future__ import annotations

import os
import sys

import pytest

from xsched import Client

from tests.support.helpers import Gate, wait_until
from tests.support.slurm import LocalSlurm, slurm_available

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(240)]

why = slurm_available()
if why is not None:
    pytest.skip(why, allow_module_level=True)


@pytest.fixture(scope="module")
def slurm():
    with LocalSlurm(cpus=4) as s:
        yield s


@pytest.fixture
def slurm_env(slurm, monkeypatch):
    for k, v in slurm.env.items():
        if k.startswith("SLURM"):
            monkeypatch.setenv(k, v)
    monkeypatch.setenv("XSCHED_SECRET", "not-the-cluster-secret-" * 2)  # must never reach a job
    return slurm


def _cluster(**kw):
    from xsched.deploy import SLURMCluster

    kw.setdefault("cores", 1)
    kw.setdefault("memory", "1GB")
    kw.setdefault("walltime", "00:10:00")
    kw.setdefault("lifetime_margin", "60s")
    kw.setdefault("lifetime_stagger", "0s")
    return SLURMCluster(python=sys.executable, **kw)


def test_job_script_scale_and_close(slurm_env):
    slurm = slurm_env
    with _cluster(job_extra_directives=["--comment=xsched-test"]) as cluster:
        script = cluster.job_script()
        assert script.startswith("#!/usr/bin/env bash\n#SBATCH -J xsched-worker")
        assert "--scheduler-file " + cluster.scheduler_file in script and "--comment=xsched-test" in script
        assert cluster.security.secret not in script and "XSCHED_SECRET" not in script
        cluster.scale(jobs=2)
        jobs = cluster.refresh()
        assert len(jobs) == 2 and set(jobs.values()) == {"running"}
        assert set(slurm.jobs()) == set(jobs)
        with Client(cluster, set_as_default=False) as c:
            names = sorted(w["name"] for w in c.scheduler_info()["workers"].values())
            assert names == sorted(f"xsched-worker-{j}" for j in jobs)
            assert c.gather(c.map(lambda i: i + 1, range(10))) == list(range(1, 11))
        # nothing of the secret went to the batch system: not the script, not the environment
        for job_id in jobs:
            shown = slurm.run(["scontrol", "show", "job", job_id, "-d"]).stdout
            assert cluster.security.secret not in shown and "not-the-cluster-secret" not in shown
        cluster.scale(jobs=1)
        wait_until(lambda: len(slurm.jobs()) == 1, timeout=60, msg="one job cancelled")
        assert "SLURMCluster(" in repr(cluster) and "batch job" in cluster._repr_html_()
    wait_until(lambda: not slurm.jobs(), timeout=60, msg="close cancels every job")


def test_adapt_up_and_back_to_zero(slurm_env, tmp_path):
    slurm = slurm_env
    with _cluster() as cluster, Client(cluster, set_as_default=False) as c:
        adaptive = cluster.adapt(minimum_jobs=0, maximum_jobs=3, interval="200ms", wait_count=2,
                                 pending_grace="1s")
        gate = Gate(tmp_path)
        futs = [c.submit(gate.wait, i, pure=False) for i in range(5)]
        wait_until(lambda: len(slurm.jobs()) == 3, timeout=90, msg="adapt submits up to maximum_jobs")
        wait_until(lambda: len(c.scheduler_info()["workers"]) == 3, timeout=90, msg="three workers joined")
        gate.open()
        assert c.gather(futs) == list(range(5))
        del futs
        wait_until(lambda: not slurm.jobs(), timeout=90, msg="adapt cancels every idle job")
        assert any(d.cancel for _, d in adaptive.log) and max(d.target for _, d in adaptive.log) == 3


def test_workers_retire_before_their_walltime(slurm_env):
    slurm = slurm_env
    # lifetime = walltime - margin = 8 s: the worker leaves by itself, long before Slurm's kill
    with _cluster(walltime="00:01:00", lifetime_margin="52s") as cluster, Client(cluster, set_as_default=False) as c:
        cluster.scale(jobs=1)
        [job_id] = cluster.refresh()
        future = c.submit(lambda: 42)
        assert future.result(timeout=60) == 42
        wait_until(lambda: not c.scheduler_info()["workers"], timeout=60, msg="the worker retired")
        wait_until(lambda: job_id not in slurm.jobs(), timeout=60, msg="its job ended")
        assert slurm.job_state(job_id) == "COMPLETED"  # exit 0: retired, not killed
        wait_until(lambda: cluster.n_workers == 0, timeout=30, msg="the cluster noticed the job ended")
