"""notebooks/06_hpc.ipynb against a real single-node Slurm (skipped without one)."""

from __future__ import annotations

import pytest

from tests.support.helpers import wait_until
from tests.support.notebooks import run_notebook
from tests.support.slurm import LocalSlurm, slurm_available

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(240)]

why = slurm_available()
if why is not None:
    pytest.skip(why, allow_module_level=True)


def test_06_hpc(kernel_env, tmp_path, monkeypatch):
    with LocalSlurm(cpus=2) as slurm:
        for k, v in slurm.env.items():
            if k.startswith("SLURM"):
                monkeypatch.setenv(k, v)  # the kernel (a login node's shell) sees this Slurm
        nb = run_notebook("06_hpc", tmp_path)
        script = nb.text("from xsched import Client")
        assert script.startswith("#!/usr/bin/env bash\n#SBATCH -J xsched-worker") and "--lifetime" in script
        assert "secret" not in script.lower()
        assert nb.text("cluster.scale(jobs=2)") == "['running', 'running']\n['xsched-worker', 'xsched-worker']\n"
        assert nb.text("def square(x)") == f"sum of squares: {sum(i * i for i in range(100))}\n"
        assert nb.text("cluster.scale(jobs=0)") == "jobs left: {}\n"
        assert nb.text("client.close()") == "closed\n"
        wait_until(lambda: not slurm.jobs(), timeout=60, msg="every job gone (COMPLETING takes a moment)")
