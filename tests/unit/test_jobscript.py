"""Batch job scripts: golden files, directive skips, quoting, bad options and no secret in the script.

Golden files live in tests/unit/golden/. After an intended change to the rendering, rewrite them with
``XSCHED_UPDATE_GOLDEN=1 python -m pytest tests/unit/test_jobscript.py`` and review the diff.
"""

from __future__ import annotations

import ast
import doctest
import importlib
import os
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from xsched.deploy.jobscript import JobSpec, format_walltime, parse_walltime, render, render_pbs, render_slurm

GOLDEN = Path(__file__).parent / "golden"
SCHEDULER_FILE = "/home/alice/.xsched/scheduler-8786.json"
PYTHON = "/opt/venv/bin/python"


def spec(**kwargs) -> JobSpec:
    base = {"cores": 4, "memory": "16GB", "walltime": "01:00:00", "python": PYTHON, "scheduler_file": SCHEDULER_FILE}
    return JobSpec(**{**base, **kwargs})


FULL = {
    "cores": 8, "processes": 2, "memory": "32GB", "walltime": "02:00:00", "queue": "normal",
    "account": "proj42", "job_extra_directives": ["--gres=gpu:1"], "job_script_prologue": ["module load hdf5"],
    "worker_extra_args": ["--resources", "GPU=1"], "interface": "ib0",
    "log_directory": "/scratch/alice/xsched-logs", "local_directory": "$TMPDIR/xsched",
}

CASES = {
    "slurm_basic.sh": lambda: render_slurm(spec()),
    "slurm_full.sh": lambda: render_slurm(spec(**FULL)),
    "pbs_basic.sh": lambda: render_pbs(spec()),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_golden(name):
    rendered = CASES[name]()
    path = GOLDEN / name
    if os.environ.get("XSCHED_UPDATE_GOLDEN") == "1":
        path.parent.mkdir(exist_ok=True)
        path.write_text(rendered)
    assert path.exists(), f"{path} is missing; create it with XSCHED_UPDATE_GOLDEN=1"
    assert rendered == path.read_text(), f"{name} differs; if intended, rerun with XSCHED_UPDATE_GOLDEN=1"


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash is not installed")
@pytest.mark.parametrize("name", sorted(CASES))
def test_golden_is_valid_bash(name):
    out = subprocess.run(["bash", "-n", str(GOLDEN / name)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr


def command_argv(script: str) -> list[str]:
    """The worker command as bash would split it (without expanding variables)."""
    command = script[script.index("exec "):].replace("\\\n", " ")
    return shlex.split(command)


def test_full_script_parts():
    script = render_slurm(spec(**FULL))
    lines = script.splitlines()
    assert lines[0] == "#!/usr/bin/env bash"
    header = [line for line in lines if line.startswith("#SBATCH")]
    assert header == [
        "#SBATCH -J xsched-worker", "#SBATCH -p normal", "#SBATCH -A proj42", "#SBATCH -N 1", "#SBATCH -n 1",
        "#SBATCH --cpus-per-task=8", "#SBATCH --mem=30517M", "#SBATCH -t 02:00:00",
        "#SBATCH -o /scratch/alice/xsched-logs/xsched-worker-%j.out",
        "#SBATCH -e /scratch/alice/xsched-logs/xsched-worker-%j.err", "#SBATCH --gres=gpu:1",
    ]
    assert lines.index("module load hdf5") < next(i for i, line in enumerate(lines) if line.startswith("exec "))
    assert command_argv(script) == [
        "exec", PYTHON, "-m", "xsched.cli", "worker", "--scheduler-file", SCHEDULER_FILE,
        "--nworkers", "2", "--nthreads", "4", "--memory-limit", "15258MiB",
        "--name", "xsched-worker-${SLURM_JOB_ID}", "--lifetime", "6900s", "--lifetime-stagger", "240s",
        "--interface", "ib0", "--local-directory", "${TMPDIR}/xsched", "--resources", "GPU=1",
    ]


def test_memory_in_explicit_mib_rounded_down():
    s = spec(memory="32GB", processes=2, cores=4)
    assert (s.memory_mib, s.memory_per_process_mib) == (32 * 10**9 // 2**20, 32 * 10**9 // 2**20 // 2)
    assert "#SBATCH --mem=1024M" in render_slurm(spec(memory=2**30))
    assert "--mem=1023M" in render_slurm(spec(memory=2**30 - 1))
    assert "mem=4096MB" in render_pbs(spec(memory="4GiB"))
    # the workers' limits together never exceed what the job asked for
    odd = spec(memory="10GB", processes=3, cores=3)
    assert odd.memory_per_process_mib * 3 <= odd.memory_mib


def test_pbs_header():
    script = render_pbs(spec(**FULL))
    header = [line for line in script.splitlines() if line.startswith("#PBS")]
    assert header == [
        "#PBS -N xsched-worker", "#PBS -q normal", "#PBS -A proj42", "#PBS -l select=1:ncpus=8:mem=30517MB",
        "#PBS -l walltime=02:00:00", "#PBS -o /scratch/alice/xsched-logs/", "#PBS -e /scratch/alice/xsched-logs/",
        "#PBS --gres=gpu:1",
    ]
    assert '--name xsched-worker-"${PBS_JOBID}"' in script


def test_render_by_name():
    assert render(spec(), "SLURM") == render_slurm(spec())
    with pytest.raises(ValueError, match="slurm"):
        render(spec(), "lsf")


# --- skips ------------------------------------------------------------------------------------------

def test_skip_and_override_directives():
    script = render_slurm(spec(account="proj42", job_directives_skip=["--mem", "-A"],
                               job_extra_directives=["--mem=64G"]))
    assert "-A proj42" not in script
    assert "--mem=15258M" not in script and "#SBATCH --mem=64G" in script
    assert "#SBATCH --cpus-per-task=4" in script


@pytest.mark.parametrize("skip", ["--account", "#SBATCH -A", " -A ", "--account=proj42"])
def test_skip_spellings(skip):
    assert "proj42" not in render_slurm(spec(account="proj42", job_directives_skip=[skip]))


def test_skip_does_not_touch_values_or_extras():
    # a substring match on "-A" would also drop this job name and the extra directive
    script = render_slurm(spec(job_name="run-A1", job_directives_skip=["-A"], job_extra_directives=["-A other"]))
    assert "#SBATCH -J run-A1" in script and "#SBATCH -A other" in script


def test_pbs_skips():
    script = render_pbs(spec(job_directives_skip=["-l walltime"], job_extra_directives=["-l walltime=10:00:00"]))
    assert "walltime=01:00:00" not in script and "#PBS -l walltime=10:00:00" in script
    assert "select=1" in script
    assert "#PBS -l" not in render_pbs(spec(job_directives_skip=["-l"]))


def test_unknown_skip_is_an_error():
    with pytest.raises(ValueError, match=r"job_directives_skip: '--memory' is not a directive.*'--mem'"):
        render_slurm(spec(job_directives_skip=["--memory"]))
    with pytest.raises(ValueError, match="pbs"):
        render_pbs(spec(job_directives_skip=["--mem"]))


def test_extra_directive_prefix_not_doubled():
    assert "#SBATCH --exclusive\n" in render_slurm(spec(job_extra_directives=["#SBATCH --exclusive"]))


# --- quoting ----------------------------------------------------------------------------------------

def test_user_values_are_quoted():
    evil = "x; rm -rf ~"
    s = spec(queue="my queue", job_name="name $(id)", interface=evil, python="/opt/my env/bin/python",
             worker_extra_args=["--resources", "GPU=1 MEM=2"], local_directory="/tmp/a b")
    script = render_slurm(s)
    assert "#SBATCH -p 'my queue'" in script
    assert "#SBATCH -J 'name $(id)'" in script
    argv = command_argv(script)
    assert argv[1] == "/opt/my env/bin/python"
    assert argv[argv.index("--interface") + 1] == evil
    assert argv[argv.index("--name") + 1] == "name $(id)-${SLURM_JOB_ID}"
    assert argv[argv.index("--local-directory") + 1] == "/tmp/a b"
    assert argv[-2:] == ["--resources", "GPU=1 MEM=2"]


@pytest.mark.parametrize("field", ["queue", "account", "job_name", "interface", "local_directory"])
def test_line_breaks_are_refused(field):
    with pytest.raises(ValueError, match=f"{field}=.*line break"):
        spec(**{field: "normal\nrm -rf ~"})


def test_line_break_in_list_is_refused():
    with pytest.raises(ValueError, match="job_extra_directives.*line break"):
        spec(job_extra_directives=["--gres=gpu:1\ncurl evil"])


# --- bad options ------------------------------------------------------------------------------------

@pytest.mark.parametrize("kwargs, message", [
    ({"cores": 0}, r"cores=0 must be a whole number >= 1"),
    ({"cores": 2.5}, r"cores=2.5 must be a whole number"),
    ({"cores": None}, r"cores is required"),
    ({"cores": 2, "processes": 4}, r"processes=4 is more than cores=2"),
    ({"processes": 0}, r"processes=0 must be"),
    ({"walltime": "two hours"}, r"Cannot parse walltime='two hours'.*HH:MM:SS"),
    ({"walltime": "01:75:00"}, r"out of range"),
    ({"walltime": "1-30:00:00"}, r"out of range"),
    ({"walltime": "00:04:00"}, r"walltime='00:04:00' \(240s\) is not longer than lifetime_margin"),
    ({"walltime": "00:06:00"}, r"lifetime_stagger=.*is not shorter than the worker lifetime \(60s"),
    ({"memory": "100MB"}, r"memory='100MB' leaves .* per worker process; each needs at least 256"),
    ({"memory": "1GB", "processes": 4}, r"Ask for more memory or fewer processes"),
    ({"memory": None}, r"memory is required"),
    ({"memory": "lots"}, r"memory='lots': Cannot parse"),
    ({"scheduler_file": None}, r"scheduler_file is required.*never written into the script"),
    ({"scheduler_file": "scheduler.json"}, r"must be an absolute path"),
    ({"lifetime_margin": "soon"}, r"lifetime_margin='soon'"),
    ({"worker_extra_args": "--resources GPU=1"}, r"must be a list of strings"),
    ({"job_script_prologue": [1]}, r"must be a list of strings"),
    ({"queue": ""}, r"queue='' must be a non-empty string"),
])
def test_bad_options(kwargs, message):
    with pytest.raises(ValueError, match=message):
        spec(**kwargs)


def test_margin_and_stagger_units():
    s = spec(walltime="01:00:00", lifetime_margin="10m", lifetime_stagger=60)
    assert "--lifetime 3000s --lifetime-stagger 60s" in render_slurm(s)


@pytest.mark.parametrize("text, seconds", [
    ("02:00:00", 7200), ("45:00", 2700), ("90:00", 5400), ("1-12:00:00", 129600), ("48:00:00", 172800),
    (" 00:30:00 ", 1800), (3600, 3600),
])
def test_parse_walltime(text, seconds):
    assert parse_walltime(text) == seconds


@pytest.mark.parametrize("bad", ["", "2h", "1:2:3:4", "00:00:00", "1-02:00", "10:61", -5])
def test_parse_walltime_rejects(bad):
    with pytest.raises(ValueError, match="walltime"):
        parse_walltime(bad)


def test_format_walltime_over_a_day():
    assert format_walltime(parse_walltime("2-00:30:05")) == "48:30:05"
    assert "#SBATCH -t 48:30:05" in render_slurm(spec(walltime="2-00:30:05"))


# --- the secret -------------------------------------------------------------------------------------

def test_no_secret_in_any_script(monkeypatch):
    secret = "s3cr3t-0123456789abcdef"
    monkeypatch.setenv("XSCHED_SECRET", secret)
    for script in (render_slurm(spec(**FULL)), render_pbs(spec(**FULL)), render_slurm(spec())):
        assert secret not in script
        assert "XSCHED_SECRET" not in script
        assert "secret" not in script.lower()
        assert "tcp://" not in script  # the address reaches the job through the scheduler file only
        assert f"--scheduler-file {SCHEDULER_FILE}" in script


def test_secret_smuggled_through_options_is_refused(monkeypatch):
    secret = "s3cr3t-0123456789abcdef"
    monkeypatch.setenv("XSCHED_SECRET", secret)
    with pytest.raises(ValueError, match="mentions XSCHED_SECRET"):
        render_slurm(spec(job_script_prologue=["export XSCHED_SECRET=abc"]))
    with pytest.raises(ValueError, match=r"contains the value of \$XSCHED_SECRET"):
        render_pbs(spec(worker_extra_args=["--token", secret]))


# --- purity -----------------------------------------------------------------------------------------

FORBIDDEN = {"zmq", "asyncio", "threading", "subprocess", "socket", "multiprocessing", "concurrent", "time"}


@pytest.mark.parametrize("module", ["jobscript", "batch_queue", "adaptive"])
def test_modules_are_pure(module):
    path = Path(__file__).parents[2] / "xsched" / "deploy" / f"{module}.py"
    tree = ast.parse(path.read_text())
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            imported.add(node.module.split(".")[0])
    assert not imported & FORBIDDEN
    assert len(path.read_text().splitlines()) < 400


@pytest.mark.parametrize("module", ["jobscript", "batch_queue", "adaptive"])
def test_docstring_examples_run(module):
    """Every public function's example is one a user can paste; keep them true."""
    mod = importlib.import_module(f"xsched.deploy.{module}")
    for name in mod.__all__:
        obj = getattr(mod, name)
        if callable(obj):
            assert obj.__doc__ and ">>>" in obj.__doc__, f"{module}.{name} has no example"
    result = doctest.testmod(mod, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0
