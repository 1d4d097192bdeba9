"""Configuration layers, precedence, validation errors and hand-over to child processes."""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
import textwrap

import pytest
import yaml

import xsched.config as config
from xsched.config_schema import SCHEMA, ConfigError, OpenMap, Section


@pytest.fixture(autouse=True)
def isolated(tmp_path, monkeypatch):
    """No real home directory, no XSCHED_* variables from the caller, no leftover set()."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    for name in list(os.environ):
        if name.startswith("XSCHED_"):
            monkeypatch.delenv(name)
    config._reset()
    yield home
    config._reset()


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


def leaf_paths(node=SCHEMA, prefix=()):
    for name, child in node.children.items():
        if isinstance(child, Section):
            yield from leaf_paths(child, prefix + (name,))
        else:
            yield prefix + (name,), child


# --- defaults and schema ---------------------------------------------------------------------------


def test_every_schema_key_has_a_packaged_default():
    for path, node in leaf_paths():
        value = config.get(".".join(path))
        if isinstance(node, OpenMap) and path != ("worker", "pre-spawn-environ"):
            assert value == {}
    assert config.get("worker.pre-spawn-environ") == {"OMP_NUM_THREADS": 1, "MKL_NUM_THREADS": 1,
                                                      "OPENBLAS_NUM_THREADS": 1, "MALLOC_ARENA_MAX": 1,
                                                      "ARROW_DEFAULT_MEMORY_POOL": "system"}
    assert config.get("scheduler.worker-saturation") == 1.0
    assert config.get("worker.memory") == {
        "limit": "auto", "target": 0.6, "spill": 0.7, "pause": 0.8, "terminate": 0.95,
        "monitor-interval": "100ms", "max-spill": False, "trim": True,
    }
    assert config.get("comm.security") == "auto"
    assert config.get("worker.nthreads") is None


def test_every_key_in_the_packaged_yaml_is_commented():
    lines = config.DEFAULTS_FILE.read_text().splitlines()
    for i, line in enumerate(lines):
        if re.match(r"^\s+[a-z-]+: \S", line):  # a leaf with a value
            assert lines[i - 1].strip().startswith("#"), f"no comment above {line.strip()!r}"


def test_every_schema_entry_has_a_doc_and_describe_lists_it():
    text = config.describe()
    for path, node in leaf_paths():
        assert node.doc
        assert ".".join(path) + ":" in text
    assert "default 0.6" in config.describe("worker.memory.target")


def test_get_returns_copies_of_sections():
    memory = config.get("worker.memory")
    memory["target"] = 0.1
    assert config.get("worker.memory.target") == 0.6


def test_get_accepts_underscores_for_dashes():
    assert config.get("scheduler.worker_saturation") == 1.0


# --- precedence -----------------------------------------------------------------------------------


def test_precedence_defaults_file_env_set(isolated, tmp_path, monkeypatch):
    write(isolated / ".config" / "xsched" / "a.yaml", "worker: {memory: {target: 0.5}}")
    config.refresh()
    assert config.get("worker.memory.target") == 0.5

    extra = write(tmp_path / "extra.yaml", "worker: {memory: {target: 0.45}}")
    monkeypatch.setenv("XSCHED_CONFIG", str(extra))
    config.refresh()
    assert config.get("worker.memory.target") == 0.45

    monkeypatch.setenv("XSCHED_WORKER__MEMORY__TARGET", "0.4")
    config.refresh()
    assert config.get("worker.memory.target") == 0.4

    with config.set({"worker.memory.target": 0.3}):
        assert config.get("worker.memory.target") == 0.3
        config.refresh()  # refresh keeps set() values
        assert config.get("worker.memory.target") == 0.3
    assert config.get("worker.memory.target") == 0.4
    assert config.get("worker.memory.spill") == 0.7  # untouched keys keep their defaults


def test_xsched_config_may_name_a_directory(tmp_path, monkeypatch):
    write(tmp_path / "conf" / "1.yaml", "scheduler: {allowed-failures: 5}")
    write(tmp_path / "conf" / "2.yml", "scheduler: {allowed-failures: 7}\njupyter: {kernel-ip: 127.0.0.2}")
    monkeypatch.setenv("XSCHED_CONFIG", str(tmp_path / "conf"))
    config.refresh()
    assert config.get("scheduler.allowed-failures") == 7  # later files win
    assert config.get("jupyter.kernel-ip") == "127.0.0.2"


def test_xsched_config_naming_a_missing_path_is_an_error(tmp_path, monkeypatch):
    monkeypatch.setenv("XSCHED_CONFIG", str(tmp_path / "nope.yaml"))
    with pytest.raises(ValueError, match="XSCHED_CONFIG.*nope.yaml.*does not exist"):
        config.refresh()


def test_empty_file_is_fine_and_broken_yaml_names_the_file(isolated):
    write(isolated / ".config" / "xsched" / "empty.yaml", "")
    config.refresh()
    bad = write(isolated / ".config" / "xsched" / "z.yaml", "worker: [unclosed")
    with pytest.raises(ValueError, match=re.escape(str(bad))):
        config.refresh()


# --- environment variables ------------------------------------------------------------------------


def test_env_resources_keep_their_case_and_100e9_is_a_number(monkeypatch):
    monkeypatch.setenv("XSCHED_WORKER__RESOURCES__GPU", "2")
    monkeypatch.setenv("XSCHED_WORKER__RESOURCES__MEMORY", "100e9")
    monkeypatch.setenv("XSCHED_WORKER__RESOURCES__hdf5_Reads", "1.5")
    config.refresh()
    resources = config.get("worker.resources")
    assert resources == {"GPU": 2, "MEMORY": 100e9, "hdf5_Reads": 1.5}
    assert isinstance(resources["MEMORY"], (int, float)) and resources["MEMORY"] == 10**11
    assert config.get("worker.resources.GPU") == 2


def test_100e9_in_a_yaml_file_is_a_number(isolated):
    write(isolated / ".config" / "xsched" / "r.yaml", "worker:\n  resources:\n    MEMORY: 100e9\n")
    config.refresh()
    assert config.get("worker.resources.MEMORY") == 10**11


def test_env_values_are_yaml_scalars(monkeypatch):
    monkeypatch.setenv("XSCHED_SCHEDULER__WORKER_SATURATION", "inf")
    monkeypatch.setenv("XSCHED_WORKER__NTHREADS", "4")
    monkeypatch.setenv("XSCHED_WORKER__MEMORY__MAX_SPILL", "10GB")
    monkeypatch.setenv("XSCHED_WORKER__MEMORY__TRIM", "false")
    monkeypatch.setenv("XSCHED_WORKER__LOCAL_DIRECTORY", "/scratch/x")
    monkeypatch.setenv("XSCHED_SCHEDULER__EVENTS_LOG_LENGTH", "1e5")  # integral float -> int
    config.refresh()
    assert math.isinf(float(config.get("scheduler.worker-saturation")))
    assert config.get("worker.nthreads") == 4
    assert config.get("worker.memory.max-spill") == "10GB"
    assert config.get("worker.memory.trim") is False
    assert config.get("worker.local-directory") == "/scratch/x"
    assert config.get("scheduler.events-log-length") == 100000
    assert type(config.get("scheduler.events-log-length")) is int


def test_env_variables_without_double_underscore_are_not_config(monkeypatch):
    """XSCHED_SCHEDULER_ADDRESS (read by the CLI, say) is no config key: no error, no value,
    while a config variable read in the same refresh is taken."""
    monkeypatch.setenv("XSCHED_WORKER__NTHREADS", "3")
    config.refresh()
    before = (config.to_env(), config.pretty())
    monkeypatch.setenv("XSCHED_SCHEDULER_ADDRESS", "tcp://x:1")
    monkeypatch.setenv("XSCHED_WORKER_NTHREADS", "5")  # one underscore: not worker.nthreads
    config.refresh()  # no error (an unknown key would raise)
    assert config.get("worker.nthreads") == 3
    assert (config.to_env(), config.pretty()) == before
    assert "tcp://x:1" not in config.pretty() and "XSCHED_SCHEDULER_ADDRESS" not in config.pretty()
    with pytest.raises(KeyError):
        config.get("scheduler-address")


def test_bad_env_value_names_variable_key_value_and_type(monkeypatch):
    monkeypatch.setenv("XSCHED_WORKER__MEMORY__TARGET", "lots")
    with pytest.raises(ValueError) as info:
        config.get("worker.memory.target")
    msg = str(info.value)
    for part in ("worker.memory.target", "'lots'", "XSCHED_WORKER__MEMORY__TARGET", "fraction between 0 and 1"):
        assert part in msg


def test_unknown_env_key_suggests_close_match(monkeypatch):
    monkeypatch.setenv("XSCHED_WORKER__MEMORY__TARGT", "0.5")
    with pytest.raises(ValueError, match=r"Unknown config key 'worker.memory.targt'.*XSCHED_WORKER__MEMORY__TARGT.*'worker.memory.target'"):
        config.refresh()


def test_bad_file_value_names_the_file(isolated):
    f = write(isolated / ".config" / "xsched" / "bad.yaml", "comm: {security: tls}")
    with pytest.raises(ValueError) as info:
        config.refresh()
    assert str(f) in str(info.value) and "comm.security" in str(info.value) and "'curve'" in str(info.value)


# --- set() ----------------------------------------------------------------------------------------


def test_set_as_context_manager_restores_and_nests():
    with config.set({"worker.resources.GPU": 2}):
        with config.set({"worker.resources.GPU": 3, "worker.nthreads": 8}):
            assert config.get("worker.resources") == {"GPU": 3}
            assert config.get("worker.nthreads") == 8
        assert config.get("worker.resources") == {"GPU": 2}
        assert config.get("worker.nthreads") is None
    assert config.get("worker.resources") == {}


def test_set_without_with_is_permanent_and_survives_an_enclosing_with():
    with config.set({"worker.nthreads": 2}):
        config.set({"scheduler.no-worker-warning": "3s"})
    assert config.get("worker.nthreads") is None
    assert config.get("scheduler.no-worker-warning") == "3s"


def test_set_accepts_nested_dicts_and_keywords():
    with config.set({"worker": {"memory": {"pause": 0.9}}}, scheduler__worker_saturation="inf", worker__resources__GPU=1):
        assert config.get("worker.memory.pause") == 0.9
        assert config.get("worker.memory.target") == 0.6  # dicts merge
        assert config.get("scheduler.worker-saturation") == "inf"
        assert config.get("worker.resources") == {"GPU": 1}


def test_set_validates_everything_before_changing_anything():
    with pytest.raises(ValueError):
        config.set({"worker.nthreads": 4, "worker.memory.target": 1.5})
    assert config.get("worker.nthreads") is None


@pytest.mark.parametrize(
    "update, expected",
    [
        ({"worker.memory.target": "lots"}, ["worker.memory.target", "'lots'", "fraction between 0 and 1"]),
        ({"worker.nthreads": 0}, ["worker.nthreads", "0", "integer >= 1"]),
        ({"worker.nthreads": 2.5}, ["worker.nthreads", "2.5", "integer"]),
        ({"comm.security": "tls"}, ["comm.security", "'tls'", "'auto', 'curve'"]),
        ({"scheduler.worker-ttl": "soon"}, ["scheduler.worker-ttl", "'soon'", "duration"]),
        ({"scheduler.bandwidth": "fast"}, ["scheduler.bandwidth", "'fast'", "byte size"]),
        ({"worker.resources.GPU": -1}, ["worker.resources.GPU", "-1", "number >= 0"]),
        ({"worker.resources": 3}, ["worker.resources", "3", "mapping"]),
        ({"worker.memory.limit": "plenty"}, ["worker.memory.limit", "'plenty'", "memory limit"]),
        ({"worker.memory.trim": "yes please"}, ["worker.memory.trim", "true or false"]),
    ],
)
def test_wrong_types_name_key_value_and_expected_type(update, expected):
    with pytest.raises(ValueError) as info:
        config.set(update)
    for part in expected:
        assert part in str(info.value)


def test_unknown_keys_suggest_close_matches():
    with pytest.raises(ValueError, match=r"'worker.memroy.target'.*Did you mean 'worker.memory.target'"):
        config.set({"worker.memroy.target": 0.5})
    with pytest.raises(ValueError, match=r"'worker.nthreads' is a single value"):
        config.set({"worker.nthreads.max": 2})


def test_get_missing_key():
    with pytest.raises(KeyError, match="worker.memory.target"):
        config.get("worker.memroy.target")
    with pytest.raises(KeyError, match="worker.resources.GPU"):
        config.get("worker.resources.GPU")
    assert config.get("worker.resources.GPU", 0) == 0
    assert config.get("worker.no-such-key", "fallback") == "fallback"


# --- pretty() and to_env() ------------------------------------------------------------------------


def test_pretty_is_the_effective_config_as_yaml_with_sources(monkeypatch):
    monkeypatch.setenv("XSCHED_WORKER__RESOURCES__GPU", "2")
    config.refresh()
    with config.set({"worker.memory.target": 0.5, "worker.local-directory": "1e9"}):
        text = config.pretty()
        assert yaml.load(text, Loader=config._Loader) == {k: config.get(k) for k in SCHEMA.children}
    assert re.search(r"GPU: 2 +# env XSCHED_WORKER__RESOURCES__GPU", text)
    assert re.search(r"target: 0.5 +# config.set\(\)", text)
    assert re.search(r"spill: 0.7$", text, re.MULTILINE)


def run_child(env_extra, keys):
    code = (
        "import json, sys, xsched.config as c\n"
        "print(json.dumps({k: c.get(k) for k in sys.argv[1:]}))\n"
    )
    env = {**os.environ, **env_extra}
    out = subprocess.run([sys.executable, "-c", code, *keys], env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_to_env_round_trip_through_a_subprocess(monkeypatch):
    monkeypatch.setenv("XSCHED_WORKER__NTHREADS", "2")
    monkeypatch.setenv("XSCHED_WORKER__RESOURCES__MEMORY", "100e9")
    config.refresh()
    keys = [
        "worker.nthreads", "worker.resources", "worker.memory.target", "scheduler.worker-saturation",
        "worker.local-directory", "comm.timeouts.connect",
    ]
    with config.set({
        "worker.nthreads": None,  # equal to the default but must still beat the inherited env var
        "worker.memory.target": 0.5,
        "scheduler.worker-saturation": float("inf"),
        "worker.local-directory": "1e9",  # a string that looks like a number stays a string
    }):
        env = config.to_env({"worker.resources.GPU": 1})
        parent = {k: config.get(k) for k in keys}
    assert list(env) == [config.INLINE_VAR]
    child = run_child(env, keys)
    assert child["worker.nthreads"] is None
    assert child["worker.resources"] == {"GPU": 1, "MEMORY": 10**11}
    assert child["worker.memory.target"] == 0.5
    assert child["scheduler.worker-saturation"] == float("inf")  # json writes Infinity
    assert child["worker.local-directory"] == "1e9"
    assert child["comm.timeouts.connect"] == parent["comm.timeouts.connect"] == "10s"


def test_to_env_with_nothing_changed_still_overrides_an_inherited_inline(monkeypatch):
    monkeypatch.setenv(config.INLINE_VAR, "{worker: {nthreads: 7}}")
    config.refresh()
    assert config.get("worker.nthreads") == 7
    assert yaml.safe_load(config.to_env()[config.INLINE_VAR]) == {"worker": {"nthreads": 7}}
    monkeypatch.delenv(config.INLINE_VAR)
    config.refresh()
    assert config.to_env() == {config.INLINE_VAR: "{}"}


def test_inline_config_is_validated(monkeypatch):
    monkeypatch.setenv(config.INLINE_VAR, "{worker: {nthreads: many}}")
    with pytest.raises(ValueError, match="worker.nthreads.*XSCHED_INLINE_CONFIG"):
        config.refresh()


def test_dask_s_config_set_of_a_scheduler_name_says_where_that_choice_goes():
    with pytest.raises(ConfigError, match=r"expects a mapping .* x\.compute\(scheduler='threads'\)"):
        config.set(scheduler="threads")
    with pytest.raises(ConfigError) as err:
        config.set({"scheduler.worker-saturation": "much"})
    assert "compute(scheduler=" not in str(err.value)  # (only for a name given to the whole section)
