"""Batch job scripts that start xsched workers on SLURM or PBS: rendered, never executed, here.

One job runs one ``xsched worker --nworkers N`` (a nanny and its N worker processes) on one node.
The script is plain text a user can read before anything is submitted (``cluster.job_script()``)
and the same options always give the same text, so the renderers are tested against golden files.

Three rules shape it:

* **No secret in the script.** Scripts are copied into the batch system's spool, shown by
  ``scontrol``/``qstat`` and readable by admins. The job finds the scheduler's address and secret
  in the scheduler file, which lives in the user's 0700 runtime directory on the shared
  filesystem; the script only names that file. Rendering refuses a script that would contain
  ``XSCHED_SECRET`` or the current value of that variable.
* **Every user value is quoted** with :func:`shlex.quote`, and values with line breaks are
  refused, so a queue name or prologue can never smuggle in a second command.
* **Workers leave before the walltime kills them.** ``--lifetime`` is the walltime minus
  ``lifetime_margin``, and workers retire up to ``lifetime_stagger`` earlier than that (not all at
  once), moving their data to other workers first.

>>> from xsched.deploy.jobscript import JobSpec, render_slurm
>>> spec = JobSpec(cores=8, processes=2, memory="32GB", walltime="02:00:00",
...                scheduler_file="/home/alice/.xsched/scheduler.json", python="/opt/venv/bin/python")
>>> script = render_slurm(spec)
>>> "#SBATCH --mem=30517M" in script, "--lifetime 6900s" in script, "secret" in script
(True, True, False)
"""

from __future__ import annotations

import os
import re
import shlex
import sys
from dataclasses import dataclass, field

from ..units import format_bytes, parse_bytes, parse_timedelta
from .batch_queue import PBS, SLURM, BatchSystem

__all__ = ["JobSpec", "render_slurm", "render_pbs", "render", "worker_command", "parse_walltime", "format_walltime"]

MIB = 2**20
# A worker process (Python, numpy, cloudpickle, the comm) needs about 100 MiB before it holds any
# data; below this a job would spend its life paused or restarting.
MIN_MEMORY_PER_PROCESS = 256 * MIB

_LIST_OPTIONS = ("job_extra_directives", "job_directives_skip", "job_script_prologue", "worker_extra_args")
_WALLTIME_FORMS = "'HH:MM:SS', 'MM:SS' or 'D-HH:MM:SS' (e.g. '02:00:00', '45:00', '1-12:00:00')"


def parse_walltime(value: str | int | float) -> int:
    """Seconds in a walltime written as the batch systems do, or a number of seconds.

    >>> parse_walltime("02:00:00"), parse_walltime("45:00"), parse_walltime("1-12:00:00"), parse_walltime(90)
    (7200, 2700, 129600, 90)
    """
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if value <= 0:
            raise ValueError(f"walltime={value!r} must be positive; write {_WALLTIME_FORMS}.")
        return int(value)
    # D- only before HH:MM:SS; HH: only before MM:SS
    match = re.fullmatch(r"\s*(?:(\d+)-(?=\d+:\d+:))?(?:(\d+):)?(\d+):(\d+)\s*", str(value))
    if not match:
        raise ValueError(f"Cannot parse walltime={value!r}; write {_WALLTIME_FORMS}.")
    days, hours, minutes, seconds = (int(g) if g else None for g in match.groups())
    if seconds >= 60 or (hours is not None and minutes >= 60) or (days is not None and hours >= 24):
        raise ValueError(f"walltime={value!r} has a field out of range; write {_WALLTIME_FORMS}.")
    total = (days or 0) * 86400 + (hours or 0) * 3600 + minutes * 60 + seconds
    if total <= 0:
        raise ValueError(f"walltime={value!r} must be longer than zero; write {_WALLTIME_FORMS}.")
    return total


def format_walltime(seconds: int) -> str:
    """``HH:MM:SS`` (hours may pass 24), which both sbatch ``-t`` and PBS ``walltime=`` accept.

    >>> format_walltime(7200), format_walltime(129600)
    ('02:00:00', '36:00:00')
    """
    seconds = int(seconds)
    return f"{seconds // 3600:02d}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"


def _as_tuple(name: str, value) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        raise ValueError(f"{name} must be a list of strings, not one string: write {name}=[{value!r}].")
    items = tuple(value)
    for item in items:
        if not isinstance(item, str):
            raise ValueError(f"{name} must be a list of strings; {item!r} is a {type(item).__name__}.")
    return items


def _no_line_breaks(name: str, value: str) -> None:
    if any(c in value for c in "\n\r\0"):
        raise ValueError(f"{name}={value!r} contains a line break; a job script value must be one line.")


@dataclass(frozen=True, kw_only=True)
class JobSpec:
    """What one batch job is: its size, its limits and how its worker command is started.

    ``cores``, ``memory`` and ``scheduler_file`` are required. ``memory`` is for the whole job
    (``"32GB"`` or bytes) and is shared equally by the ``processes`` workers, each with
    ``cores // processes`` threads. ``scheduler_file`` must be an absolute path on a filesystem
    the compute nodes share (PBS starts jobs in ``$HOME``, SLURM in the submit directory).
    ``local_directory`` may start with an environment variable of the node, like
    ``"$TMPDIR/xsched"``; it is expanded in the job. ``job_directives_skip`` names generated
    directives to leave out (``"--mem"``, ``"-A"``, ``"--account"``, PBS ``"-l walltime"``...),
    usually to replace them through ``job_extra_directives``.

    >>> spec = JobSpec(cores=4, memory="16GB", scheduler_file="/shared/alice/scheduler.json")
    >>> spec.threads_per_process, spec.memory_mib, spec.lifetime_seconds
    (4, 15258, 1500)
    """

    cores: int | None = None
    processes: int = 1
    memory: str | int | None = None
    walltime: str | int = "00:30:00"
    queue: str | None = None
    account: str | None = None
    job_name: str = "xsched-worker"
    job_extra_directives: tuple[str, ...] = ()
    job_directives_skip: tuple[str, ...] = ()
    job_script_prologue: tuple[str, ...] = ()
    worker_extra_args: tuple[str, ...] = ()
    interface: str | None = None
    python: str = field(default_factory=lambda: sys.executable)
    scheduler_file: str | None = None
    local_directory: str | None = None
    lifetime_margin: str | int | float = "5 minutes"
    lifetime_stagger: str | int | float = "4 minutes"
    log_directory: str | None = None

    def __post_init__(self) -> None:
        for name in _LIST_OPTIONS:
            object.__setattr__(self, name, _as_tuple(name, getattr(self, name)))
        self._check()

    def _check(self) -> None:
        if self.cores is None:
            raise ValueError("cores is required: the number of cores one job asks for, e.g. cores=8.")
        for name in ("cores", "processes"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name}={value!r} must be a whole number >= 1 ({name}=8 asks for 8).")
        if self.processes > self.cores:
            raise ValueError(f"processes={self.processes} is more than cores={self.cores}: each worker "
                             "process needs at least one core; lower processes or raise cores.")
        if self.memory is None:
            raise ValueError("memory is required: the memory one job asks for, e.g. memory='32GB'.")
        try:
            total = parse_bytes(self.memory)
        except ValueError as e:
            raise ValueError(f"memory={self.memory!r}: {e}") from None
        if total // MIB // self.processes * MIB < MIN_MEMORY_PER_PROCESS:
            raise ValueError(f"memory={self.memory!r} leaves {format_bytes(total / self.processes)} per worker "
                             f"process; each needs at least {format_bytes(MIN_MEMORY_PER_PROCESS)}. Ask for "
                             f"more memory or fewer processes.")
        walltime = parse_walltime(self.walltime)
        margin = _seconds("lifetime_margin", self.lifetime_margin)
        stagger = _seconds("lifetime_stagger", self.lifetime_stagger)
        if walltime <= margin:
            raise ValueError(f"walltime={self.walltime!r} ({walltime}s) is not longer than lifetime_margin="
                             f"{self.lifetime_margin!r} ({margin}s), the time workers keep to retire before the "
                             "walltime ends; ask for a longer walltime or a shorter lifetime_margin.")
        if walltime - margin <= stagger:
            raise ValueError(f"lifetime_stagger={self.lifetime_stagger!r} ({stagger}s) is not shorter than the "
                             f"worker lifetime ({walltime - margin}s = walltime minus lifetime_margin); workers "
                             "could retire as soon as they start. Use a smaller lifetime_stagger.")
        if not self.scheduler_file:
            raise ValueError("scheduler_file is required: the job reads the scheduler's address and secret "
                             "from it (it is never written into the script). Pass the path of the file that "
                             "`xsched scheduler --scheduler-file FILE` wrote, on the shared filesystem.")
        if not os.path.isabs(self.scheduler_file):
            raise ValueError(f"scheduler_file={self.scheduler_file!r} must be an absolute path: jobs start in "
                             "another directory ($HOME under PBS). Use os.path.abspath(...).")
        for name in ("job_name", "queue", "account", "interface", "python", "scheduler_file",
                     "local_directory", "log_directory"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, str) or not value):
                raise ValueError(f"{name}={value!r} must be a non-empty string.")
            _no_line_breaks(name, value or "")
        for name in _LIST_OPTIONS:
            for item in getattr(self, name):
                _no_line_breaks(name, item)

    @property
    def memory_mib(self) -> int:
        """The job's memory in whole MiB, rounded down: what ``--mem=...M`` / ``mem=...MB`` asks for."""
        return parse_bytes(self.memory) // MIB  # type: ignore[arg-type]

    @property
    def memory_per_process_mib(self) -> int:
        """Each worker process's memory limit in MiB; together they never exceed the job's request."""
        return self.memory_mib // self.processes

    @property
    def threads_per_process(self) -> int:
        """Threads per worker process; cores that do not divide evenly stay unused."""
        return self.cores // self.processes  # type: ignore[operator]

    @property
    def lifetime_seconds(self) -> int:
        """How long a worker lives: the walltime minus the margin kept for retiring gracefully."""
        return parse_walltime(self.walltime) - _seconds("lifetime_margin", self.lifetime_margin)


def _seconds(name: str, value) -> int:
    try:
        return int(parse_timedelta(value))
    except ValueError as e:
        raise ValueError(f"{name}={value!r}: {e}") from None


# --- directives -----------------------------------------------------------------------------------

# Each generated directive has a canonical name and the spellings a user may give to skip it.
_SLURM_NAMES = {
    "-J": ("-J", "--job-name"), "-p": ("-p", "--partition"), "-A": ("-A", "--account"),
    "-N": ("-N", "--nodes"), "-n": ("-n", "--ntasks"), "--cpus-per-task": ("-c", "--cpus-per-task"),
    "--mem": ("--mem",), "-t": ("-t", "--time"), "-o": ("-o", "--output"), "-e": ("-e", "--error"),
}
_PBS_NAMES = {
    "-N": ("-N",), "-q": ("-q",), "-A": ("-A",), "-l select": ("-l select", "select", "-l"),
    "-l walltime": ("-l walltime", "walltime", "-l"), "-o": ("-o",), "-e": ("-e",),
}


def _skipped(system: BatchSystem, names: dict[str, tuple[str, ...]], skip: tuple[str, ...]) -> set[str]:
    """Canonical names of the directives to leave out; unknown spellings are an error, not a no-op."""
    out: set[str] = set()
    for raw in skip:
        fragment = _strip_prefix(system, raw).split("=", 1)[0].strip()
        hits = {canonical for canonical, spellings in names.items() if fragment in spellings}
        if not hits:
            known = ", ".join(repr(s) for spellings in names.values() for s in spellings if s != "-l")
            raise ValueError(f"job_directives_skip: {raw!r} is not a directive xsched writes for "
                             f"{system.name}; use one of {known}.")
        out |= hits
    return out


def _strip_prefix(system: BatchSystem, text: str) -> str:
    text = text.strip()
    return text[len(system.directive_prefix):].strip() if text.startswith(system.directive_prefix) else text


def _header(system: BatchSystem, names, spec: JobSpec, directives: list[tuple[str, str | None]]) -> list[str]:
    skip = _skipped(system, names, spec.job_directives_skip)
    lines = [text for name, text in directives if text and name not in skip]
    lines += [_strip_prefix(system, extra) for extra in spec.job_extra_directives]
    return [f"{system.directive_prefix} {line}" for line in lines]


def _slurm_directives(spec: JobSpec) -> list[tuple[str, str | None]]:
    q, logs = shlex.quote, spec.log_directory and f"{spec.log_directory.rstrip('/')}/{spec.job_name}-%j"
    return [
        ("-J", f"-J {q(spec.job_name)}"), ("-p", spec.queue and f"-p {q(spec.queue)}"),
        ("-A", spec.account and f"-A {q(spec.account)}"), ("-N", "-N 1"), ("-n", "-n 1"),
        ("--cpus-per-task", f"--cpus-per-task={spec.cores}"), ("--mem", f"--mem={spec.memory_mib}M"),
        ("-t", f"-t {format_walltime(parse_walltime(spec.walltime))}"),
        ("-o", logs and f"-o {q(logs + '.out')}"), ("-e", logs and f"-e {q(logs + '.err')}"),
    ]


def _pbs_directives(spec: JobSpec) -> list[tuple[str, str | None]]:
    q, logs = shlex.quote, spec.log_directory and shlex.quote(spec.log_directory.rstrip("/") + "/")
    return [
        ("-N", f"-N {q(spec.job_name)}"), ("-q", spec.queue and f"-q {q(spec.queue)}"),
        ("-A", spec.account and f"-A {q(spec.account)}"),
        ("-l select", f"-l select=1:ncpus={spec.cores}:mem={spec.memory_mib}MB"),
        ("-l walltime", f"-l walltime={format_walltime(parse_walltime(spec.walltime))}"),
        ("-o", logs and f"-o {logs}"), ("-e", logs and f"-e {logs}"),
    ]


# --- the worker command ---------------------------------------------------------------------------

def _shell_path(value: str) -> str:
    """Quote a path, but let a leading ``$VAR`` / ``${VAR}`` expand on the compute node."""
    match = re.fullmatch(r"\$(?:\{([A-Za-z_]\w*)\}|([A-Za-z_]\w*))(.*)", value, re.S)
    if not match:
        return shlex.quote(value)
    rest = match.group(3)
    return f'"${{{match.group(1) or match.group(2)}}}"' + (shlex.quote(rest) if rest else "")


def worker_command(spec: JobSpec, system: BatchSystem) -> list[str]:
    """The worker command of a job, one shell-ready line per option group.

    ``exec`` replaces the shell, so the batch system's SIGTERM (scancel, qdel, walltime) reaches
    the nanny, which then retires its workers gracefully.

    >>> from xsched.deploy.batch_queue import SLURM
    >>> spec = JobSpec(cores=2, memory="4GB", scheduler_file="/s/sched.json", python="python3")
    >>> worker_command(spec, SLURM)[0]
    'exec python3 -m xsched.cli worker'
    """
    q = shlex.quote
    job_id = f'"${{{system.job_id_var}}}"'
    lines = [
        f"exec {q(spec.python)} -m xsched.cli worker",
        f"--scheduler-file {q(spec.scheduler_file)}",  # type: ignore[arg-type]
        f"--nworkers {spec.processes} --nthreads {spec.threads_per_process}"
        f" --memory-limit {spec.memory_per_process_mib}MiB",
        f"--name {q(spec.job_name)}-{job_id}",
        f"--lifetime {spec.lifetime_seconds}s"
        f" --lifetime-stagger {_seconds('lifetime_stagger', spec.lifetime_stagger)}s",
    ]
    if spec.interface:
        lines.append(f"--interface {q(spec.interface)}")
    if spec.local_directory:
        lines.append(f"--local-directory {_shell_path(spec.local_directory)}")
    if spec.worker_extra_args:
        lines.append(" ".join(q(arg) for arg in spec.worker_extra_args))
    return lines


def _script(spec: JobSpec, system: BatchSystem, header: list[str]) -> str:
    parts = ["#!/usr/bin/env bash", *header, ""]
    if spec.job_script_prologue:
        parts += [*spec.job_script_prologue, ""]
    parts.append(" \\\n  ".join(worker_command(spec, system)))
    script = "\n".join(parts) + "\n"
    _refuse_secrets(script)
    return script


def _refuse_secrets(script: str) -> None:
    secret = os.environ.get("XSCHED_SECRET", "")
    what = ("mentions XSCHED_SECRET" if "XSCHED_SECRET" in script else
            "contains the value of $XSCHED_SECRET" if len(secret) >= 8 and secret in script else None)
    if what:
        raise ValueError(f"The job script {what}; scripts are readable in the batch system, and jobs read the "
                         "secret from scheduler_file. Remove it from the prologue, directives or worker args.")


def render_slurm(spec: JobSpec) -> str:
    """The ``sbatch`` script for ``spec``: ``#SBATCH`` header, prologue, then the worker command.

    >>> spec = JobSpec(cores=8, memory="32GB", queue="normal", scheduler_file="/shared/alice/sched.json")
    >>> print(render_slurm(spec).split("\\n\\n")[0])
    #!/usr/bin/env bash
    #SBATCH -J xsched-worker
    #SBATCH -p normal
    #SBATCH -N 1
    #SBATCH -n 1
    #SBATCH --cpus-per-task=8
    #SBATCH --mem=30517M
    #SBATCH -t 00:30:00
    """
    return _script(spec, SLURM, _header(SLURM, _SLURM_NAMES, spec, _slurm_directives(spec)))


def render_pbs(spec: JobSpec) -> str:
    """The ``qsub`` script for ``spec``: ``#PBS`` header, prologue, then the worker command.

    >>> spec = JobSpec(cores=8, memory="32GB", scheduler_file="/home/alice/.xsched/scheduler.json")
    >>> [line for line in render_pbs(spec).splitlines() if line.startswith("#PBS -l")]
    ['#PBS -l select=1:ncpus=8:mem=30517MB', '#PBS -l walltime=00:30:00']
    """
    return _script(spec, PBS, _header(PBS, _PBS_NAMES, spec, _pbs_directives(spec)))


def render(spec: JobSpec, system: str | BatchSystem) -> str:
    """The job script for ``system`` ("slurm", "pbs" or a :class:`BatchSystem`).

    >>> spec = JobSpec(cores=1, memory="1GB", scheduler_file="/s/sched.json")
    >>> render(spec, "pbs") == render_pbs(spec)
    True
    """
    name = system if isinstance(system, str) else system.name
    renderers = {"slurm": render_slurm, "pbs": render_pbs}
    try:
        return renderers[name.strip().lower()](spec)
    except KeyError:
        raise ValueError(f"No job script renderer for {name!r}; choose one of {sorted(renderers)}.") from None
