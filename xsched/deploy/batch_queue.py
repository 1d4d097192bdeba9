"""What to run against a batch system and how to read what it prints back: SLURM and PBS.

A batch cluster talks to the batch system only through its command-line tools (``sbatch``,
``squeue``, ``scancel``; ``qsub``, ``qstat``, ``qdel``), because those are what every site has
and what the user's own account may use. This module holds the *pure* half of that: the argv of
each command and the parsing of its output. Running the commands, timeouts and retries belong to
the cluster that uses it; here nothing starts a process, so every parser is tested on real-looking
samples without a batch system.

Job states are reduced to three words, which is all a cluster or the adaptive policy needs:
``"pending"`` (queued, held, being configured: it costs nothing yet and does no work),
``"running"`` (its workers exist or are starting) and ``"finished"`` (ended for any reason, or no
longer listed at all: the batch system forgets jobs a few minutes after they end).

>>> from xsched.deploy.batch_queue import SLURM
>>> SLURM.parse_job_id("4242\\n")
'4242'
>>> SLURM.status_command(["4242", "4243"])
['squeue', '--noheader', '--format=%i|%T', '--states=all', '--jobs=4242,4243']
>>> SLURM.parse_status("4242|RUNNING\\n", ["4242", "4243"])
{'4242': 'running', '4243': 'finished'}
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

__all__ = [
    "PENDING", "RUNNING", "FINISHED", "BatchSystem", "SLURM", "PBS", "get_batch_system",
    "parse_slurm_job_id", "parse_pbs_job_id", "parse_slurm_status", "parse_pbs_status",
    "slurm_state", "pbs_state", "scrubbed_environment",
]

PENDING, RUNNING, FINISHED = "pending", "running", "finished"

# squeue's %T names (man squeue, "JOB STATE CODES"). Jobs that are being set up or requeued do no
# work yet: pending. Suspended and resizing jobs still hold their nodes and come back: running.
# Everything that is ending or has ended is finished; its workers are gone or going.
_SLURM_STATES: dict[str, str] = {
    **dict.fromkeys(("PENDING", "CONFIGURING", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED",
                     "RESV_DEL_HOLD"), PENDING),
    **dict.fromkeys(("RUNNING", "SUSPENDED", "STOPPED", "RESIZING"), RUNNING),
    **dict.fromkeys(("COMPLETING", "COMPLETED", "CANCELLED", "FAILED", "TIMEOUT", "NODE_FAIL",
                     "PREEMPTED", "BOOT_FAIL", "DEADLINE", "OUT_OF_MEMORY", "SPECIAL_EXIT",
                     "REVOKED", "SIGNALING", "STAGE_OUT"), FINISHED),
}

# qstat's one-letter job_state (PBS Pro / OpenPBS and Torque): Queued, Held, Waiting, Transiting;
# Running, array Begun, Suspended, User-suspended; Exiting, Finished, subjob X, Completed, Moved.
_PBS_STATES: dict[str, str] = {
    **dict.fromkeys("QHWT", PENDING),
    **dict.fromkeys("RBSU", RUNNING),
    **dict.fromkeys("EFXCM", FINISHED),
}


def slurm_state(name: str) -> str:
    """One of pending/running/finished for a SLURM state name; unknown names count as pending.

    Unknown names are pending because the job is still listed (so not gone) and we cannot
    claim it does work; a newer SLURM may add states.

    >>> slurm_state("PENDING"), slurm_state("running"), slurm_state("TIMEOUT"), slurm_state("CA")
    ('pending', 'running', 'finished', 'finished')
    """
    name = name.strip().upper()
    short = {"PD": "PENDING", "CF": "CONFIGURING", "R": "RUNNING", "S": "SUSPENDED", "ST": "STOPPED",
             "CG": "COMPLETING", "CD": "COMPLETED", "CA": "CANCELLED", "F": "FAILED", "TO": "TIMEOUT",
             "NF": "NODE_FAIL", "PR": "PREEMPTED", "BF": "BOOT_FAIL", "DL": "DEADLINE",
             "OOM": "OUT_OF_MEMORY", "RQ": "REQUEUED", "RH": "REQUEUE_HOLD", "RF": "REQUEUE_FED",
             "SE": "SPECIAL_EXIT", "SI": "SIGNALING", "SO": "STAGE_OUT", "RS": "RESIZING",
             "RV": "REVOKED", "RD": "RESV_DEL_HOLD"}
    return _SLURM_STATES.get(short.get(name, name), PENDING)


def pbs_state(letter: str) -> str:
    """One of pending/running/finished for a PBS ``job_state`` letter; unknown letters are pending.

    >>> pbs_state("Q"), pbs_state("R"), pbs_state("E"), pbs_state("F")
    ('pending', 'running', 'finished', 'finished')
    """
    return _PBS_STATES.get(letter.strip().upper()[:1], PENDING)


# --- job ids from the submit command --------------------------------------------------------------

_SLURM_PARSABLE = re.compile(r"^\s*(\d+)(?:;\S+)?\s*$")  # "123" or "123;cluster"
_SLURM_SUBMITTED = re.compile(r"Submitted batch job (\d+)")
_PBS_ID = re.compile(r"^\s*(\d+(?:\[\d*\])?(?:\.[\w.-]+)?)\s*$")  # "123.server", "123[].server"


def parse_slurm_job_id(output: str) -> str:
    """The job id in what ``sbatch`` printed, with or without ``--parsable``.

    Warnings that sbatch prints before the id (site submit filters do) are skipped; a
    ``;cluster`` suffix (federations) is dropped, since squeue and scancel want the number.

    >>> parse_slurm_job_id("123\\n"), parse_slurm_job_id("123;cluster1")
    ('123', '123')
    >>> parse_slurm_job_id("sbatch: warning: no --time given\\nSubmitted batch job 456\\n")
    '456'
    """
    for line in reversed(output.splitlines()):
        match = _SLURM_PARSABLE.match(line) or _SLURM_SUBMITTED.search(line)
        if match:
            return match.group(1)
    raise ValueError(f"Cannot find a job id in the output of sbatch: {output.strip()!r}; "
                     "expected '123' (sbatch --parsable) or 'Submitted batch job 123'.")


def parse_pbs_job_id(output: str) -> str:
    """The full job id (``"123.server"``) in what ``qsub`` printed; qstat and qdel want it whole.

    >>> parse_pbs_job_id("1234.pbs01.example.org\\n")
    '1234.pbs01.example.org'
    """
    for line in reversed(output.splitlines()):
        match = _PBS_ID.match(line)
        if match:
            return match.group(1)
    raise ValueError(f"Cannot find a job id in the output of qsub: {output.strip()!r}; "
                     "expected a line like '123.server'.")


# --- job states from the status command -----------------------------------------------------------

def parse_slurm_status(output: str, job_ids: Iterable[str]) -> dict[str, str]:
    """States of ``job_ids`` from ``squeue --noheader --format=%i|%T``; jobs not listed are finished.

    Lines that are not ``ID|STATE`` (warnings, array or het-job rows of other jobs) are ignored.

    >>> parse_slurm_status("101|PENDING\\n102|RUNNING\\n", ["101", "102", "103"])
    {'101': 'pending', '102': 'running', '103': 'finished'}
    """
    seen: dict[str, str] = {}
    for line in output.splitlines():
        job_id, sep, state = line.strip().partition("|")
        if sep and job_id and state:
            seen[job_id.strip()] = slurm_state(state)
    return {job_id: seen.get(job_id, FINISHED) for job_id in job_ids}


_PBS_FULL_ID = re.compile(r"^Job Id:\s*(\S+)")
_PBS_FULL_STATE = re.compile(r"^\s+job_state\s*=\s*(\w)")
_PBS_TABLE_ROW = re.compile(r"^(\d\S*)\s+.*?\s([A-Z])\s+\S+\s*$")  # id ... Time S Queue


def _pbs_key(job_id: str) -> str:
    """The sequence number (and array brackets) that identify a PBS job on its server.

    qsub may print ``123.pbs01.example.org`` while qstat shows ``123.pbs01`` or, in its table,
    a truncated ``123.pbs0*``; the leading number is what they share.
    """
    match = re.match(r"\d+(?:\[\d*\])?", job_id.strip())
    return match.group(0) if match else job_id.strip()


def parse_pbs_status(output: str, job_ids: Iterable[str]) -> dict[str, str]:
    """States of ``job_ids`` from ``qstat -f``, ``qstat -f -F json`` or plain ``qstat``.

    The format is recognised from the text. Jobs that qstat does not list are finished.

    >>> text = "Job Id: 7.pbs01\\n    Job_Name = xsched-worker\\n    job_state = R\\n"
    >>> parse_pbs_status(text, ["7.pbs01.example.org", "8.pbs01.example.org"])
    {'7.pbs01.example.org': 'running', '8.pbs01.example.org': 'finished'}
    """
    seen: dict[str, str] = {}
    stripped = output.strip()
    if stripped.startswith("{"):
        try:
            jobs = json.loads(stripped, strict=False).get("Jobs", {}) or {}
        except ValueError:
            # PBS Pro writes environment values unescaped into Variable_List, which can make its
            # JSON invalid; the job ids and states are still easy to find.
            jobs = {}
            for match in re.finditer(r'"(\d[^"]*)"\s*:\s*\{(.*?)"job_state"\s*:\s*"(\w)"', stripped, re.S):
                jobs[match.group(1)] = {"job_state": match.group(3)}
        for job_id, attrs in jobs.items():
            seen[_pbs_key(job_id)] = pbs_state(str((attrs or {}).get("job_state", "")))
    else:
        current = None
        for line in output.splitlines():
            if match := _PBS_FULL_ID.match(line):
                current = _pbs_key(match.group(1))
                seen[current] = PENDING
            elif current and (match := _PBS_FULL_STATE.match(line)):
                seen[current] = pbs_state(match.group(1))
            elif match := _PBS_TABLE_ROW.match(line):
                seen[_pbs_key(match.group(1))] = pbs_state(match.group(2))
    return {job_id: seen.get(_pbs_key(job_id), FINISHED) for job_id in job_ids}


# --- the systems ------------------------------------------------------------------------------------

@dataclass(frozen=True)
class BatchSystem:
    """Everything a batch cluster needs to know about one batch system, as data and pure functions.

    ``submit_argv`` takes the script path as its last argument; ``cancel_argv`` and
    ``status_argv`` take job ids. ``gone_messages`` are fragments of the status command's error
    output that mean "these jobs no longer exist" (any other failure is transient: keep the last
    known states and ask again next interval).

    >>> from xsched.deploy.batch_queue import PBS
    >>> PBS.submit_command("/shared/jobs/job.sh"), PBS.cancel_command(["7.pbs01"])
    (['qsub', '/shared/jobs/job.sh'], ['qdel', '7.pbs01'])
    """

    name: str
    directive_prefix: str
    job_id_var: str
    submit_argv: tuple[str, ...]
    cancel_argv: tuple[str, ...]
    status_argv: tuple[str, ...]
    gone_messages: tuple[str, ...]
    job_id_parser: Callable[[str], str] = field(repr=False, compare=False)
    status_parser: Callable[[str, Iterable[str]], dict[str, str]] = field(repr=False, compare=False)
    jobs_joined: bool = False  # squeue wants --jobs=1,2,3; qstat wants the ids as arguments

    def submit_command(self, script_path: str) -> list[str]:
        """The argv that submits the job script at ``script_path``.

        >>> SLURM.submit_command("/shared/jobs/job.sh")
        ['sbatch', '--parsable', '/shared/jobs/job.sh']
        """
        return [*self.submit_argv, str(script_path)]

    def cancel_command(self, job_ids: Iterable[str]) -> list[str]:
        """The argv that cancels ``job_ids`` (one call for all of them).

        >>> SLURM.cancel_command(["101", "102"])
        ['scancel', '101', '102']
        """
        ids = _checked_ids(job_ids)
        if not ids:
            raise ValueError("cancel_command needs at least one job id; with none, run nothing.")
        return [*self.cancel_argv, *ids]

    def status_command(self, job_ids: Iterable[str]) -> list[str] | None:
        """The argv that reports the states of ``job_ids`` in one call, or None when there are none.

        >>> PBS.status_command(["7.pbs01", "8.pbs01"]), PBS.status_command([])
        (['qstat', '-f', '7.pbs01', '8.pbs01'], None)
        """
        ids = _checked_ids(job_ids)
        if not ids:
            return None
        return [*self.status_argv, "--jobs=" + ",".join(ids)] if self.jobs_joined else [*self.status_argv, *ids]

    def parse_job_id(self, output: str) -> str:
        """The job id in the submit command's standard output.

        >>> PBS.parse_job_id("7.pbs01\\n")
        '7.pbs01'
        """
        return self.job_id_parser(output)

    def parse_status(self, output: str, job_ids: Iterable[str]) -> dict[str, str]:
        """Each of ``job_ids`` mapped to pending/running/finished, from the status command's output.

        >>> PBS.parse_status("", ["7.pbs01"])
        {'7.pbs01': 'finished'}
        """
        return self.status_parser(output, list(job_ids))

    def status_error_means_gone(self, stderr: str) -> bool:
        """Whether a failed status command said the jobs do not exist (rather than a hiccup).

        >>> SLURM.status_error_means_gone("slurm_load_jobs error: Invalid job id specified")
        True
        >>> SLURM.status_error_means_gone("slurm_load_jobs error: Socket timed out on send/recv")
        False
        """
        return any(message.lower() in stderr.lower() for message in self.gone_messages)


def _checked_ids(job_ids: Iterable[str]) -> list[str]:
    ids = [str(job_id) for job_id in job_ids]
    for job_id in ids:
        # ids come from our own parsers; refuse anything that could be read as an option
        if not re.fullmatch(r"\d[\w.\[\]-]*", job_id):
            raise ValueError(f"{job_id!r} is not a batch job id (expected e.g. '123' or '123.server').")
    return ids


SLURM = BatchSystem(
    name="slurm",
    directive_prefix="#SBATCH",
    job_id_var="SLURM_JOB_ID",
    submit_argv=("sbatch", "--parsable"),
    cancel_argv=("scancel",),
    status_argv=("squeue", "--noheader", "--format=%i|%T", "--states=all"),
    gone_messages=("Invalid job id specified",),
    job_id_parser=parse_slurm_job_id,
    status_parser=parse_slurm_status,
    jobs_joined=True,
)

PBS = BatchSystem(
    name="pbs",
    directive_prefix="#PBS",
    job_id_var="PBS_JOBID",
    submit_argv=("qsub",),
    cancel_argv=("qdel",),
    status_argv=("qstat", "-f"),
    gone_messages=("Unknown Job Id", "Job has finished"),
    job_id_parser=parse_pbs_job_id,
    status_parser=parse_pbs_status,
)

_SYSTEMS = {"slurm": SLURM, "pbs": PBS}


def get_batch_system(name: str) -> BatchSystem:
    """The :class:`BatchSystem` called ``name`` ("slurm" or "pbs", any case).

    >>> get_batch_system("SLURM").job_id_var
    'SLURM_JOB_ID'
    """
    try:
        return _SYSTEMS[name.strip().lower()]
    except KeyError:
        raise ValueError(f"Unknown batch system {name!r}; choose one of {sorted(_SYSTEMS)}.") from None


def scrubbed_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """``environ`` without the cluster secret, for running sbatch/qsub.

    ``sbatch`` copies the submitting environment into the job (its default ``--export=ALL``) and
    slurmctld keeps that copy on its disk, so a secret in our environment would end up in the
    batch system. Jobs read the secret from the scheduler file instead.

    >>> scrubbed_environment({"PATH": "/usr/bin", "XSCHED_SECRET": "s3cr3t"})
    {'PATH': '/usr/bin'}
    """
    return {k: v for k, v in environ.items() if not (k.upper().startswith("XSCHED_") and "SECRET" in k.upper())}
