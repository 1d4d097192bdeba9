"""The deployment test infrastructure itself: a real single-node Slurm (tests/support/slurm.py)
and real sshd servers in network-namespace hosts (tests/support/sshd.py).

Both tiers need root (CI runs as root) and the packages tests/support/system_deps.sh installs;
elsewhere they skip with the reason. Durations are printed (``-s``), never asserted.
"""

from __future__ import annotations

import os
import subprocess
import time

import psutil
import pytest

from tests.support.helpers import wait_until
from tests.support.netns import Hosts
from tests.support.slurm import LocalSlurm, slurm_available
from tests.support.sshd import ssh_servers, sshd_available

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(120)]


def _running(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


@pytest.mark.skipif(slurm_available() is not None, reason=str(slurm_available()))
def test_local_slurm_runs_and_cancels_jobs(tmp_path):
    t0 = time.monotonic()
    with LocalSlurm() as slurm:
        t_started = time.monotonic()
        assert os.path.exists(slurm.conf_path) and slurm.env["SLURM_CONF"] == slurm.conf_path
        r = slurm.run(["sinfo", "-h", "-o", "%P %a %l %T"], check=True)
        assert r.stdout.split() == [f"{slurm.partition}*", "up", "infinite", "idle"]

        # a job runs to completion
        out = tmp_path / "out"
        job = slurm.submit(wrap=f"echo hi > {out}")
        assert job.isdigit()
        wait_until(lambda: out.exists() and out.read_text() == "hi\n", timeout=30, msg="the job's output")
        wait_until(lambda: job not in slurm.jobs(), timeout=30, msg="the finished job leaving squeue")
        assert slurm.job_state(job) == "COMPLETED"
        t_job = time.monotonic()

        # a long job is cancelled, and its processes end
        job = slurm.submit(wrap="sleep 600")
        wait_until(lambda: slurm.jobs().get(job) == "RUNNING", timeout=30, msg="the sleep job running")
        daemons = set(slurm.pids)
        job_procs = wait_until(lambda: [p for p in slurm._slurm_processes() if p.pid not in daemons
                                        and "sleep" in p.cmdline()], timeout=10, msg="the job's sleep process")
        steps = [p for p in slurm._slurm_processes() if p.pid not in daemons and p.ppid() == slurm._procs["slurmd"].pid]
        assert steps, "slurmstepd should be a child of slurmd (slurmd is a subreaper)"
        r = slurm.run(["scancel", job], check=True)
        wait_until(lambda: job not in slurm.jobs(), timeout=30, msg="the cancelled job leaving squeue")
        assert slurm.job_state(job) == "CANCELLED"
        wait_until(lambda: not any(_running(p.pid) for p in job_procs), timeout=30, msg="the job's processes ending")
        t_cancel = time.monotonic()

        # something left running at exit is cancelled by close()
        slurm.submit(wrap="sleep 600")
        seen = set(slurm.pids) | {p.pid for p in slurm._slurm_processes()} | {p.pid for p in steps}
        directory = slurm.dir
    t_closed = time.monotonic()
    seen |= set(slurm._known)
    assert not [pid for pid in seen if _running(pid)], f"left running: {[p for p in seen if _running(p)]}"
    assert slurm.stray_pids == [], "close() had to kill processes scancel should have ended"
    assert not os.path.exists(directory)
    print(f"\nLocalSlurm: start {t_started - t0:.2f} s, job to completion {t_job - t_started:.2f} s, "
          f"run + cancel {t_cancel - t_job:.2f} s, close {t_closed - t_cancel:.2f} s")


@pytest.mark.skipif(sshd_available() is not None, reason=str(sshd_available()))
def test_sshd_in_two_namespace_hosts(tmp_path):
    t0 = time.monotonic()
    with Hosts(2) as (a, b):
        t_hosts = time.monotonic()
        with ssh_servers([a, b]) as keys:
            t_sshd = time.monotonic()
            servers = keys.servers
            assert [s.alias for s in servers] == ["hosta", "hostb"]
            r = a.run(keys.argv(f"root@{b.ip}", "hostname", "-I"), timeout=30)
            assert r.returncode == 0, r.stderr
            assert r.stdout.split() == [b.ip]
            # ~/.ssh/config-style aliases through -F
            r = a.run(["ssh", "-F", keys.config_path, "hostb", "hostname", "-I"], timeout=30)
            assert r.returncode == 0, r.stderr
            assert r.stdout.split() == [b.ip]
            # the other way round, host keys checked against the pre-filled known_hosts
            r = b.run(["ssh", *keys.options(strict=True), f"root@{a.ip}", "hostname", "-I"], timeout=30)
            assert r.returncode == 0, r.stderr
            assert r.stdout.split() == [a.ip]
            # a key not in authorized_keys is refused, and there is nothing but keys
            stranger = tmp_path / "stranger"
            subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(stranger)], check=True)
            options = keys.options()
            options[options.index(keys.key)] = str(stranger)
            for extra in ([], ["-o", "PubkeyAuthentication=no"]):
                r = a.run(["ssh", *options, *extra, f"root@{b.ip}", "true"], timeout=30)
                assert r.returncode == 255 and "Permission denied" in r.stderr, r.stderr
            t_ssh = time.monotonic()
            pids = [pid for s in servers for pid in s.pids] + [s.pid for s in servers]
        t_stopped = time.monotonic()
        assert not [pid for pid in pids if _running(pid)]
        assert all(s.proc.returncode is not None for s in servers)
    t_closed = time.monotonic()
    print(f"\nSSHD: hosts {t_hosts - t0:.2f} s, two sshd {t_sshd - t_hosts:.2f} s, five ssh attempts "
          f"{t_ssh - t_sshd:.2f} s, sshd stop {t_stopped - t_ssh:.2f} s, hosts close {t_closed - t_stopped:.2f} s")
