"""Batch system commands and the parsing of what sbatch/squeue and qsub/qstat print."""

from __future__ import annotations

import pytest

from xsched.deploy.batch_queue import (
    FINISHED, PBS, PENDING, RUNNING, SLURM, get_batch_system, parse_pbs_job_id, parse_pbs_status,
    parse_slurm_job_id, parse_slurm_status, pbs_state, scrubbed_environment, slurm_state,
)

# --- SLURM ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("output, job_id", [
    ("4242\n", "4242"),
    ("4242;cluster-a\n", "4242"),
    ("Submitted batch job 4242\n", "4242"),
    ("sbatch: warning: can't honor --ntasks-per-node set to 2 which doesn't match the requested tasks 1\n"
     "4242\n", "4242"),
    ("sbatch: Verify job submission ...\nsbatch: Your job has no time specification (--time=).\n"
     "Submitted batch job 98765\n", "98765"),
])
def test_slurm_job_id(output, job_id):
    assert parse_slurm_job_id(output) == job_id
    assert SLURM.parse_job_id(output) == job_id


@pytest.mark.parametrize("output", ["", "sbatch: error: Batch job submission failed: Invalid account\n", "abc\n"])
def test_slurm_job_id_missing(output):
    with pytest.raises(ValueError, match="Cannot find a job id in the output of sbatch"):
        parse_slurm_job_id(output)


SQUEUE = """\
4242|RUNNING
4243|PENDING
4244|COMPLETING
4245|CONFIGURING
4246|CANCELLED
4247|TIMEOUT
4248|SUSPENDED
"""


def test_slurm_status_one_call():
    ids = [str(i) for i in range(4242, 4250)]
    assert SLURM.status_command(ids) == [
        "squeue", "--noheader", "--format=%i|%T", "--states=all", "--jobs=" + ",".join(ids)]
    assert SLURM.parse_status(SQUEUE, ids) == {
        "4242": RUNNING, "4243": PENDING, "4244": FINISHED, "4245": PENDING, "4246": FINISHED,
        "4247": FINISHED, "4248": RUNNING, "4249": FINISHED,  # not listed: long gone
    }


def test_slurm_status_ignores_noise_and_other_jobs():
    output = "  4242|RUNNING  \nslurm_load_jobs warning: something\n9999|PENDING\n4243_[1-3]|PENDING\n\n"
    assert parse_slurm_status(output, ["4242", "4243"]) == {"4242": RUNNING, "4243": FINISHED}


@pytest.mark.parametrize("name, state", [
    ("PENDING", PENDING), ("REQUEUED", PENDING), ("RUNNING", RUNNING), ("running", RUNNING),
    ("COMPLETED", FINISHED), ("FAILED", FINISHED), ("NODE_FAIL", FINISHED), ("OUT_OF_MEMORY", FINISHED),
    ("PREEMPTED", FINISHED), ("PD", PENDING), ("R", RUNNING), ("CG", FINISHED), ("SOME_NEW_STATE", PENDING),
])
def test_slurm_states(name, state):
    assert slurm_state(name) == state


def test_slurm_cancel_and_submit():
    assert SLURM.submit_command("/scratch/alice/job.sh") == ["sbatch", "--parsable", "/scratch/alice/job.sh"]
    assert SLURM.cancel_command(["4242", "4243"]) == ["scancel", "4242", "4243"]
    assert SLURM.status_command([]) is None
    with pytest.raises(ValueError, match="at least one job id"):
        SLURM.cancel_command([])


@pytest.mark.parametrize("bad", ["--user=bob", "-1", "4242 4243", "", "4242;rm"])
def test_job_ids_cannot_become_options(bad):
    with pytest.raises(ValueError, match="is not a batch job id"):
        SLURM.cancel_command([bad])
    with pytest.raises(ValueError, match="is not a batch job id"):
        PBS.status_command([bad])


def test_slurm_gone_versus_hiccup():
    assert SLURM.status_error_means_gone("slurm_load_jobs error: Invalid job id specified\n")
    assert not SLURM.status_error_means_gone(
        "slurm_load_jobs error: Unable to contact slurm controller (connect failure)\n")


# --- PBS --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("output, job_id", [
    ("1234.pbs01\n", "1234.pbs01"),
    ("1234.pbs01.example.org\n", "1234.pbs01.example.org"),
    ("qsub: warning: job will be queued\n1234.server\n", "1234.server"),
    ("1234[].pbs01\n", "1234[].pbs01"),
    ("1234\n", "1234"),
])
def test_pbs_job_id(output, job_id):
    assert parse_pbs_job_id(output) == job_id
    assert PBS.parse_job_id(output) == job_id


def test_pbs_job_id_missing():
    with pytest.raises(ValueError, match="Cannot find a job id in the output of qsub"):
        parse_pbs_job_id("qsub: Unknown queue\n")


QSTAT_F = """\
Job Id: 1234.pbs01.example.org
    Job_Name = xsched-worker
    Job_Owner = alice@login1.example.org
    job_state = R
    queue = workq
    server = pbs01
    Variable_List = PBS_O_HOME=/home/alice,PBS_O_LANG=en_US.UTF-8,
\tPBS_O_LOGNAME=alice,PBS_O_WORKDIR=/home/alice
    exec_host = node07/0*8

Job Id: 1235.pbs01.example.org
    Job_Name = xsched-worker
    job_state = Q
    queue = workq

Job Id: 1236.pbs01.example.org
    Job_Name = xsched-worker
    job_state = E
"""

QSTAT_JSON = """\
{
    "timestamp":1718000000,
    "pbs_version":"22.05.11",
    "pbs_server":"pbs01",
    "Jobs":{
        "1234.pbs01":{
            "Job_Name":"xsched-worker",
            "job_state":"R",
            "queue":"workq"
        },
        "1235.pbs01":{
            "Job_Name":"xsched-worker",
            "job_state":"H"
        }
    }
}
"""

QSTAT_PLAIN = """\
Job id            Name             User              Time Use S Queue
----------------  ---------------- ----------------  -------- - -----
1234.pbs01        xsched-worker    alice             00:12:01 R workq
1235.pbs01        xsched-worker    alice                    0 Q workq
1236.pbs01-very*  xsched-worker    alice             00:00:00 F workq
"""

IDS = ["1234.pbs01.example.org", "1235.pbs01.example.org", "1236.pbs01.example.org", "1237.pbs01.example.org"]


def test_pbs_status_full_text():
    assert PBS.status_command(IDS) == ["qstat", "-f", *IDS]
    assert PBS.parse_status(QSTAT_F, IDS) == {
        IDS[0]: RUNNING, IDS[1]: PENDING, IDS[2]: FINISHED, IDS[3]: FINISHED}


def test_pbs_status_json_with_short_ids():
    assert parse_pbs_status(QSTAT_JSON, IDS) == {
        IDS[0]: RUNNING, IDS[1]: PENDING, IDS[2]: FINISHED, IDS[3]: FINISHED}


def test_pbs_status_invalid_json_still_read():
    # PBS Pro copies environment values into Variable_List unescaped; "\q" is not valid JSON
    broken = QSTAT_JSON.replace('"queue":"workq"', '"Variable_List":"PATH=C:\\q\\bin","queue":"workq"')
    assert parse_pbs_status(broken, IDS[:2]) == {IDS[0]: RUNNING, IDS[1]: PENDING}


def test_pbs_status_plain_table_with_truncated_ids():
    assert parse_pbs_status(QSTAT_PLAIN, IDS) == {
        IDS[0]: RUNNING, IDS[1]: PENDING, IDS[2]: FINISHED, IDS[3]: FINISHED}


@pytest.mark.parametrize("letter, state", [
    ("Q", PENDING), ("H", PENDING), ("W", PENDING), ("T", PENDING), ("R", RUNNING), ("S", RUNNING),
    ("E", FINISHED), ("F", FINISHED), ("C", FINISHED), ("Z", PENDING),
])
def test_pbs_states(letter, state):
    assert pbs_state(letter) == state


def test_pbs_commands():
    assert PBS.submit_command("/home/alice/job.sh") == ["qsub", "/home/alice/job.sh"]
    assert PBS.cancel_command(["1234.pbs01"]) == ["qdel", "1234.pbs01"]
    assert PBS.status_error_means_gone("qstat: Unknown Job Id 1237.pbs01\n")
    assert not PBS.status_error_means_gone("Connection refused\nqstat: cannot connect to server pbs01 (errno=15010)")


# --- common -----------------------------------------------------------------------------------------

def test_systems():
    assert get_batch_system("slurm") is SLURM and get_batch_system(" PBS ") is PBS
    assert (SLURM.job_id_var, PBS.job_id_var) == ("SLURM_JOB_ID", "PBS_JOBID")
    assert (SLURM.directive_prefix, PBS.directive_prefix) == ("#SBATCH", "#PBS")
    with pytest.raises(ValueError, match=r"Unknown batch system 'lsf'; choose one of \['pbs', 'slurm'\]"):
        get_batch_system("lsf")


def test_scrubbed_environment():
    env = {"PATH": "/usr/bin", "HOME": "/home/alice", "XSCHED_SECRET": "s3cr3t", "XSCHED_TLS_SECRET_KEY": "k",
           "XSCHED_INLINE_CONFIG": "{worker: {nthreads: 2}}"}
    assert scrubbed_environment(env) == {
        "PATH": "/usr/bin", "HOME": "/home/alice", "XSCHED_INLINE_CONFIG": "{worker: {nthreads: 2}}"}
