"""The registry of running schedulers: found by address, private, and never stale.

Entries are real files in a private temporary runtime directory; entries "from another
node" are files whose host name is not ours, as a shared home directory would hold them.
"""

import json
import os
import socket
import stat
import subprocess
import sys

import pytest

from xsched.protocol import registry
from xsched.protocol.registry import (
    SecretNotFoundError, UnsafeFileError, connection_info, entries, lookup, read_scheduler_file, register,
    registry_dir, runtime_dir, unregister,
)
from xsched.protocol.security import Security


@pytest.fixture(autouse=True)
def private_runtime(tmp_path, monkeypatch):
    d = tmp_path / "rt"
    monkeypatch.setenv("XSCHED_RUNTIME_DIR", str(d))
    monkeypatch.delenv("XSCHED_SECRET", raising=False)
    return d


def test_register_lookup_unregister(private_runtime):
    sec = Security.generate()
    path = register("tcp://127.0.0.1:8786", sec, "scheduler-a")
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(private_runtime).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(registry_dir()).st_mode) == 0o700
    for spelling in ("localhost:8786", "127.0.0.1:8786", "tcp://127.0.0.1:8786", "localhost"):
        address, found = lookup(spelling)
        assert found == sec and address == "tcp://127.0.0.1:8786"
    with pytest.raises(SecretNotFoundError):
        lookup("localhost:8787")  # another port
    # a scheduler file is a scheduler file: the entry works as one
    assert read_scheduler_file(path) == ("tcp://127.0.0.1:8786", sec)
    unregister(path)
    unregister(path)  # twice is fine
    with pytest.raises(SecretNotFoundError):
        lookup("localhost:8786")


def test_a_chosen_cluster_name_is_kept_in_the_entry():
    named = register("tcp://127.0.0.1:8790", Security.generate(), "scheduler-named", name="analysis")
    plain = register("tcp://127.0.0.1:8791", Security.generate(), "scheduler-plain")
    by_id = {e["id"]: e for e in entries()}
    assert by_id["scheduler-named"]["name"] == "analysis"
    assert "name" not in by_id["scheduler-plain"]
    unregister(named)
    unregister(plain)


def test_wildcard_scheduler_matches_every_address_of_this_host():
    sec = Security.generate()
    register("tcp://192.0.2.10:8786", sec, "scheduler-w", bound_host="0.0.0.0")
    assert lookup("localhost:8786")[1] == sec
    assert lookup(f"{socket.gethostname()}:8786")[1] == sec


def _foreign_entry(hostname: str, ips: list, port: int, sec: Security, name: str, pid: int = 1) -> str:
    """An entry written by a scheduler on another node of a shared home directory."""
    path = os.path.join(registry_dir(), f"{name}.json")
    registry.write_scheduler_file(path, f"tcp://{ips[0]}:{port}", sec, name, extra={
        "port": port, "ips": ips, "hostname": hostname, "names": [hostname], "loopback_only": False,
        "started": 1.0, "create_time": None})
    with open(path) as f:
        data = json.load(f)
    data["pid"] = pid
    with open(path, "w") as f:
        json.dump(data, f)
    return path


def test_entries_from_other_nodes_match_their_addresses_never_localhost():
    sec = Security.generate()
    _foreign_entry("node7", ["192.0.2.7"], 8786, sec, "scheduler-n7")
    assert lookup("192.0.2.7:8786")[1] == sec
    assert lookup("node7:8786")[1] == sec  # by its host name, even unresolvable here
    with pytest.raises(SecretNotFoundError):
        lookup("localhost:8786")  # loopback is this host, never node7
    # we cannot check a pid on another node: the entry stays
    assert [e["id"] for e in entries()] == ["scheduler-n7"]


def test_dead_schedulers_of_this_host_are_ignored_and_removed():
    sec = Security.generate()
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True, check=True)
    pid = int(dead.stdout)
    path = _foreign_entry(socket.gethostname(), ["127.0.0.1"], 8786, sec, "scheduler-dead", pid=pid)
    with pytest.raises(SecretNotFoundError):
        lookup("localhost:8786")
    assert not os.path.exists(path)


def test_a_reused_pid_is_not_the_scheduler():
    sec = Security.generate()
    path = register("tcp://127.0.0.1:8786", sec, "scheduler-old")
    with open(path) as f:
        data = json.load(f)
    data["create_time"] -= 3600  # the process with this pid started long after the entry
    with open(path, "w") as f:
        json.dump(data, f)
    assert entries() == [] and not os.path.exists(path)


def test_newest_entry_wins_when_two_claim_an_address():
    old, new = Security.generate(), Security.generate()
    register("tcp://127.0.0.1:8786", old, "scheduler-1")
    register("tcp://127.0.0.1:8786", new, "scheduler-2")
    assert lookup("localhost:8786")[1] == new


def test_unsafe_files_and_directories_are_refused(private_runtime):
    sec = Security.generate()
    path = register("tcp://127.0.0.1:8786", sec, "scheduler-a")
    os.chmod(path, 0o644)
    with pytest.raises(UnsafeFileError, match=f"chmod 600 {path}"):
        lookup("localhost:8786")
    with pytest.raises(UnsafeFileError, match="readable or writable by others"):
        read_scheduler_file(path)
    os.chmod(path, 0o600)
    os.chmod(private_runtime, 0o755)
    with pytest.raises(UnsafeFileError, match="chmod 700"):
        lookup("localhost:8786")
    os.chmod(private_runtime, 0o700)
    if os.getuid() == 0:  # root can make a file that belongs to somebody else
        os.chown(path, 65534, -1)
        with pytest.raises(UnsafeFileError, match="belongs to uid 65534"):
            lookup("localhost:8786")
        os.chown(path, 0, -1)
    assert lookup("localhost:8786")[1] == sec


def test_garbage_in_the_registry_is_skipped():
    sec = Security.generate()
    bad = os.path.join(registry_dir(), "half-written.json")
    fd = os.open(bad, os.O_WRONLY | os.O_CREAT, 0o600)
    os.write(fd, b"{not json")
    os.close(fd)
    register("tcp://127.0.0.1:8786", sec, "scheduler-a")
    assert lookup("localhost:8786")[1] == sec


def test_the_error_says_where_it_looked_and_the_three_ways():
    with pytest.raises(SecretNotFoundError) as info:
        lookup("10.9.9.9:8786")
    text = str(info.value)
    assert "10.9.9.9:8786" in text and registry_dir(create=False) in text
    assert "scheduler_file" in text and "XSCHED_SECRET" in text and "security=" in text


def test_connection_info_order(tmp_path, monkeypatch):
    reg, env, given = Security.generate(), Security.generate(), Security.generate()
    register("tcp://127.0.0.1:8786", reg, "scheduler-a")
    assert connection_info("localhost:8786") == ("tcp://127.0.0.1:8786", reg)
    assert connection_info("localhost:8786", security=given.secret)[1].secret == given.secret
    monkeypatch.setenv("XSCHED_SECRET", env.secret)
    assert connection_info("localhost:8786")[1].secret == env.secret
    sfile = tmp_path / "s.json"
    registry.write_scheduler_file(str(sfile), "tcp://127.0.0.1:9999", given, "scheduler-f")
    assert connection_info(scheduler_file=str(sfile)) == ("tcp://127.0.0.1:9999", given)
    assert runtime_dir() == os.environ["XSCHED_RUNTIME_DIR"]
