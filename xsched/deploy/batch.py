"""Batch clusters: workers started as SLURM or PBS jobs, the scheduler here (a login node).

    SLURMCluster --spawn--> xsched scheduler (this host, --interface) --writes--> scheduler file
        scale/adapt --> job_script() --sbatch--> job: xsched worker --scheduler-file F --lifetime ...
        poll: one `squeue` call per interval for every job; a job that ended is dropped
        close --> scancel every job, then stop the scheduler

The address and secret reach the jobs only through the scheduler file, written (0600) in
the user's private runtime directory (``~/.xsched/clusters/<id>/``), which an HPC cluster's
shared home directory makes visible on the compute nodes. Neither the script, nor the
environment handed to ``sbatch`` (which Slurm stores), ever holds the secret.

>>> from xsched.deploy import SLURMCluster
>>> cluster = SLURMCluster(cores=8, processes=2, memory="32GB", walltime="02:00:00",
...                        queue="normal", account="proj42")          # doctest: +SKIP
>>> print(cluster.job_script())                                       # doctest: +SKIP
>>> cluster.scale(jobs=4); cluster.adapt(minimum_jobs=0, maximum_jobs=20)   # doctest: +SKIP
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import tempfile
import time
import uuid

from ..protocol.addressing import interface_address
from ..protocol.registry import read_scheduler_file, runtime_dir, scheduler_file_dashboard
from ..units import parse_bytes, parse_timedelta
from .batch_queue import PBS, SLURM, BatchSystem, scrubbed_environment
from .jobscript import JobSpec, render
from .process import spawn, stop_process, wait_for_file
from .spec import FINISHED, PENDING, RUNNING, Launcher, SpecCluster

logger = logging.getLogger("xsched.deploy.batch")

__all__ = ["JobQueueCluster", "SLURMCluster", "PBSCluster", "BatchJob"]


class BatchError(RuntimeError):
    """A batch command failed; the message holds the command and what it printed."""


def _run(argv: list[str], env: dict, timeout: float = 60, cwd: str | None = None) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=env, cwd=cwd)
    except FileNotFoundError:
        raise BatchError(f"{argv[0]!r} is not on PATH: is this a login node of the batch system?") from None


class BatchJob(Launcher):
    """One batch job running ``processes`` workers; its state comes from the cluster's poll."""

    kind = "batch job"

    def __init__(self, name: str, cluster: "JobQueueCluster"):
        super().__init__(name, cluster.spec.processes)
        self.cluster = cluster
        self.job_id: str | None = None
        self.state = PENDING
        self.script_path: str | None = None

    def __repr__(self) -> str:
        return f"<BatchJob {self.job_id or '(not submitted)'} workers={self.nworkers} status={self.state}>"

    def start(self) -> None:
        c = self.cluster
        fd, self.script_path = tempfile.mkstemp(prefix=f"{c.spec.job_name}-", suffix=".sh", dir=c.job_directory)
        with os.fdopen(fd, "w") as f:
            f.write(c.job_script())
        # the job's default output files land in the submit directory: ours, not the user's
        out = _run(c.system.submit_command(self.script_path), c.submit_env, cwd=c.job_directory)
        if out.returncode != 0:
            raise BatchError(f"{' '.join(c.system.submit_command(self.script_path))} failed "
                             f"(exit {out.returncode}): {out.stderr.strip() or out.stdout.strip()}")
        self.job_id = c.system.parse_job_id(out.stdout)
        logger.info("submitted job %s (%s)", self.job_id, self.script_path)

    def status(self) -> str:
        return self.state

    def owns(self, worker_name: str | None) -> bool:
        if not worker_name or self.job_id is None:
            return False
        prefix = f"{self.cluster.spec.job_name}-{self.job_id}"
        return worker_name == prefix or worker_name.startswith(prefix + "-")

    def terminate(self) -> None:
        self.stop()

    def stop(self, timeout: float = 10) -> None:
        if self.job_id is None or self.state == FINISHED:
            self.state = FINISHED
            return
        out = _run(self.cluster.system.cancel_command([self.job_id]), self.cluster.submit_env, timeout=max(timeout, 10))
        if out.returncode != 0 and not self.cluster.system.status_error_means_gone(out.stderr):
            logger.warning("cancelling job %s: %s", self.job_id, out.stderr.strip())
        self.state = FINISHED


class JobQueueCluster(SpecCluster):
    """A scheduler on this host and workers in batch jobs; see SLURMCluster and PBSCluster.

    Sizes are per job: ``cores`` threads in all, shared by ``processes`` worker processes,
    ``memory`` for the whole job. ``interface`` picks the network interface the scheduler
    and workers listen on (``"ib0"``); ``scheduler_interface`` when the login node differs.
    """

    system: BatchSystem = SLURM
    kind = "JobQueueCluster"

    def __init__(self, *, cores: int, memory, processes: int = 1, walltime="00:30:00", queue: str | None = None,
                 account: str | None = None, job_name: str = "xsched-worker", job_extra_directives=(),
                 job_directives_skip=(), job_script_prologue=(), worker_extra_args=(), interface: str | None = None,
                 scheduler_interface: str | None = None, python: str | None = None, log_directory: str | None = None,
                 local_directory: str | None = None, lifetime_margin="5 minutes", lifetime_stagger="4 minutes",
                 n_workers: int = 0, poll_interval="2s", timeout: float = 60, security: str = "auto"):
        self.id = f"{self.system.name}-{uuid.uuid4().hex[:10]}"
        self.cluster_directory = os.path.join(runtime_dir(), "clusters", self.id)
        os.makedirs(self.cluster_directory, mode=0o700)
        scheduler_file = os.path.join(self.cluster_directory, "scheduler.json")
        self.job_directory = log_directory or self.cluster_directory
        os.makedirs(self.job_directory, exist_ok=True)
        self.spec = JobSpec(cores=cores, processes=processes, memory=memory, walltime=walltime, queue=queue,
                            account=account, job_name=job_name, job_extra_directives=job_extra_directives,
                            job_directives_skip=job_directives_skip, job_script_prologue=job_script_prologue,
                            worker_extra_args=worker_extra_args, interface=interface,
                            python=python or sys.executable, scheduler_file=scheduler_file,
                            local_directory=local_directory, lifetime_margin=lifetime_margin,
                            lifetime_stagger=lifetime_stagger, log_directory=log_directory)
        super().__init__(workers_per_group=processes, threads_per_worker=self.spec.threads_per_process,
                         memory_limit=parse_bytes(memory) // processes, timeout=timeout)
        self.scheduler_file = scheduler_file
        self.scheduler_interface = scheduler_interface or interface
        self.security_mode = security
        self.poll_interval = parse_timedelta(poll_interval)
        self.submit_env = scrubbed_environment(os.environ)  # sbatch stores the environment it gets
        self._last_poll = 0.0
        self._scheduler_proc = None
        self._start(-(-n_workers // processes) if n_workers else 0, wait=False)

    def job_script(self) -> str:
        """The script each job runs: header directives and the worker command, no secret.

        >>> print(cluster.job_script())   # doctest: +SKIP
        """
        return render(self.spec, self.system)

    def _describe(self) -> str:
        return (f"{self.system.name} jobs of {self.spec.cores} cores / {self.spec.processes} worker processes / "
                f"{self.spec.memory}, walltime {self.spec.walltime}; {super()._describe()}")

    def _where_logs_are(self) -> str:
        return f"the jobs' scripts are in {self.job_directory}; check the batch system's output files"

    # ------------------------------------------------------------------ scheduler
    def _start_scheduler(self) -> None:
        host = interface_address(self.scheduler_interface) if self.scheduler_interface else "0.0.0.0"
        log = os.path.join(self.cluster_directory, "scheduler.log")
        self._scheduler_proc = spawn(["scheduler", "--host", host, "--port", "0", "--scheduler-file",
                                      self.scheduler_file, "--security", self.security_mode], log_path=log)
        wait_for_file(self.scheduler_file, self._scheduler_proc, self.timeout, "scheduler", log)
        self.scheduler_address, self.security = read_scheduler_file(self.scheduler_file)
        self._dashboard = scheduler_file_dashboard(self.scheduler_file)  # (its page on 8787, or a free port)

    def _stop_scheduler(self, timeout: float) -> None:
        if self._scheduler_proc is not None:
            stop_process(self._scheduler_proc, timeout)
            self._scheduler_proc = None

    # ------------------------------------------------------------------ jobs
    def _new_group(self, name: str) -> BatchJob:
        return BatchJob(name, self)

    def _poll(self) -> None:
        """One status command for every job we have, at most once per ``poll_interval``."""
        now = time.monotonic()
        if now - self._last_poll < self.poll_interval:
            return
        self._last_poll = now
        jobs = {g.job_id: g for g in list(self.groups.values())
                if isinstance(g, BatchJob) and g.job_id and g.state != FINISHED}
        argv = self.system.status_command(jobs)
        if argv is None:
            return
        out = _run(argv, self.submit_env)
        if out.returncode != 0:
            if self.system.status_error_means_gone(out.stderr):
                states = {job_id: FINISHED for job_id in jobs}
            else:
                logger.warning("%s failed (%s); keeping the last known job states", argv[0], out.stderr.strip())
                return
        else:
            states = self.system.parse_status(out.stdout, list(jobs))
        for job_id, state in states.items():
            job = jobs.get(job_id)
            if job is not None and state in (PENDING, RUNNING, FINISHED):
                if job.state != FINISHED and state == FINISHED:
                    logger.info("job %s ended", job_id)
                job.state = state

    def refresh(self) -> dict[str, str]:
        """Ask the batch system now: job id -> pending/running/finished."""
        self._last_poll = 0.0
        self._poll()
        return {g.job_id: g.state for g in self.groups.values() if isinstance(g, BatchJob)}

    def close(self, timeout: float = 10) -> None:
        """Cancel every job, stop the scheduler, remove the scheduler file."""
        try:
            super().close(timeout)
        finally:
            import shutil

            shutil.rmtree(self.cluster_directory, ignore_errors=True)


class SLURMCluster(JobQueueCluster):
    """Workers as SLURM jobs (``sbatch``, ``squeue``, ``scancel``).

    >>> cluster = SLURMCluster(cores=8, processes=2, memory="32GB", walltime="02:00:00",
    ...                        queue="normal", job_extra_directives=["--gres=gpu:1"])   # doctest: +SKIP
    """

    system = SLURM
    kind = "SLURMCluster"


class PBSCluster(JobQueueCluster):
    """Workers as PBS jobs (``qsub``, ``qstat``, ``qdel``).

    >>> cluster = PBSCluster(cores=8, memory="32GB", walltime="02:00:00", queue="workq")   # doctest: +SKIP
    """

    system = PBS
    kind = "PBSCluster"
