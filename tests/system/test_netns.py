"""The multi-host test infrastructure itself (tests/support/netns.py, tests/support/capture.py).

Hosts made of network namespaces must really be separate hosts (reachable from each
other, not from the root namespace), the capture must really see what crosses the wire
(the positive control for every later "no plaintext on the wire" test: if it could not
see a marker sent in clear, a test that finds no plaintext would prove nothing), and
nothing may outlive a ``Hosts``: no process, no namespace, also when setup fails or an
earlier run crashed. Needs root and iproute2; skipped otherwise, saying so.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys

import psutil
import pytest

from tests.support.helpers import pid_gone, wait_until
from tests.support.netns import NetnsError, Hosts, PREFIX, capture, cleanup_stale, list_namespaces, netns_available, IP

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(60)]

#: 64 bytes sent in clear; the capture must find them.
MARKER = (b"xsched-netns-positive-control/plaintext-marker/" * 2)[:64]
assert len(MARKER) == 64

# A TCP server: listens on argv[1]:0, writes its port to argv[2] (atomically, once
# listening), then for each connection appends the peer's address to argv[3], reads
# until the peer shuts down its side, and answers b"echo:" + what it read.
SERVER = r"""
import os, socket, sys
host, port_file, log = sys.argv[1:4]
srv = socket.socket()
srv.bind((host, 0))
srv.listen(8)
with open(port_file + ".tmp", "w") as f:
    f.write(str(srv.getsockname()[1]))
os.replace(port_file + ".tmp", port_file)
while True:
    conn, peer = srv.accept()
    with open(log, "a") as f:
        f.write(peer[0] + "\n")
    data = b""
    while True:
        chunk = conn.recv(65536)
        if not chunk:
            break
        data += chunk
    conn.sendall(b"echo:" + data)
    conn.close()
"""

# A TCP client: connects to argv[1]:argv[2], sends the bytes whose hex is argv[3], and
# prints what comes back (exit 0 only if it is the echo).
CLIENT = r"""
import socket, sys
host, port, payload = sys.argv[1], int(sys.argv[2]), bytes.fromhex(sys.argv[3])
s = socket.create_connection((host, port), timeout=10)
s.sendall(payload)
s.shutdown(socket.SHUT_WR)
reply = b""
while True:
    chunk = s.recv(65536)
    if not chunk:
        break
    reply += chunk
sys.stdout.write(reply.decode("latin-1"))
sys.exit(0 if reply == b"echo:" + payload else 1)
"""


@pytest.fixture(autouse=True)
def _needs_netns():
    reason = netns_available()
    if reason:
        pytest.skip(reason)


def start_server(host, tmp_path, name="server"):
    """The echo server in ``host``; returns (Popen, port, path of its peer log)."""
    port_file, log = tmp_path / f"{name}.port", tmp_path / f"{name}.peers"
    proc = host.popen([sys.executable, "-c", SERVER, host.ip, port_file, log])
    wait_until(lambda: port_file.exists() or proc.poll() is not None, timeout=20, msg="server listening")
    assert proc.poll() is None, f"server exited with {proc.returncode}"
    return proc, int(port_file.read_text()), log


def root_links() -> list[str]:
    out = subprocess.run([IP, "-o", "link", "show"], capture_output=True, text=True, check=True).stdout
    return sorted(line.split(":")[1].strip().split("@")[0] for line in out.splitlines())


def root_addresses() -> str:
    return subprocess.run([IP, "-o", "addr", "show"], capture_output=True, text=True, check=True).stdout


def test_hosts_reach_each_other_but_not_from_the_root_namespace(tmp_path):
    links_before = root_links()
    with Hosts(2) as hosts:
        a, b = hosts
        assert (a.ip, b.ip, a.iface) == ("10.213.0.1", "10.213.0.2", "eth0")
        assert len(a.name) and a.name != b.name and all(n.startswith(PREFIX + "-") for n in hosts.names)
        _, port, peers = start_server(a, tmp_path)

        r = b.run([sys.executable, "-c", CLIENT, a.ip, port, b"hello from B".hex()], timeout=20)
        assert (r.returncode, r.stdout) == (0, "echo:hello from B"), r.stderr

        # the root namespace has no route to the hosts' subnet: nothing of it was added there
        assert root_links() == links_before
        assert "10.213.0." not in root_addresses()
        with pytest.raises(OSError):
            socket.create_connection((a.ip, port), timeout=2).close()
        # and the server saw exactly one peer: B
        assert peers.read_text().split() == [b.ip]


def test_capture_on_b_sees_plaintext_sent_from_a(tmp_path):
    """Positive control: a 64-byte marker sent in clear over TCP from A shows up in B's capture."""
    with Hosts(2) as (a, b):
        _, port, _ = start_server(b, tmp_path)
        with capture(b) as cap:
            r = a.run([sys.executable, "-c", CLIENT, b.ip, port, MARKER.hex()], timeout=20)
            assert r.returncode == 0, (r.stdout, r.stderr)  # B's server got it (and echoed it)
        assert cap.count_frames() > 0
        assert MARKER in cap.data()
        assert cap.count(MARKER) >= 2  # A -> B, and B's echo back
        stats = cap.stats()
        assert stats["frames"] == cap.count_frames() and stats["kernel_drops"] == 0, stats


def test_capture_sees_nothing_of_other_hosts_traffic(tmp_path):
    """The capture is of one host's interface: A <-> C traffic is not on B's wire (a
    bridge learns where each address is), so a capture proves what reached *that* host."""
    with Hosts(3) as (a, b, c):
        _, port, _ = start_server(c, tmp_path)
        # one exchange first, so the bridge has learnt where A and C are (until then it floods)
        a.run([sys.executable, "-c", CLIENT, c.ip, port, b"learn".hex()], timeout=20, check=True)
        with capture(b) as cap:
            a.run([sys.executable, "-c", CLIENT, c.ip, port, MARKER.hex()], timeout=20, check=True)
        assert MARKER not in cap.data()


def test_nothing_left_after_exit(tmp_path):
    """Every process (polite, SIGTERM-ignoring, and a daemon in a session of its own) and
    every namespace is gone once ``Hosts`` exits."""
    polite = "import signal, sys; open(sys.argv[1], 'w').close(); signal.pause()"
    stubborn = ("import signal, sys; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
                "open(sys.argv[1], 'w').close(); signal.pause()")
    # forks a grandchild into a new session (out of our process group) and exits: only
    # the namespace sweep (ip netns pids) can find it
    daemon = ("import os, signal, sys\n"
              "if os.fork() == 0:\n"
              "    os.setsid()\n"
              "    open(sys.argv[1] + '.tmp', 'w').write(str(os.getpid())); os.replace(sys.argv[1] + '.tmp', sys.argv[1])\n"
              "    signal.pause()\n")
    with Hosts(2, grace=2) as hosts:
        a, b = hosts
        names = list(hosts.names)
        assert set(names) <= set(list_namespaces())
        procs = [a.popen([sys.executable, "-c", polite, tmp_path / "p"]),
                 b.popen([sys.executable, "-c", stubborn, tmp_path / "s"]),
                 b.popen([sys.executable, "-c", daemon, tmp_path / "d"])]
        for f in ("p", "s", "d"):
            wait_until(lambda: (tmp_path / f).exists(), timeout=20, msg=f"process {f} started")
        procs[2].wait(20)
        stray = int((tmp_path / "d").read_text())
        assert stray in b.pids() and psutil.pid_exists(stray)
        tracked = list(hosts.pids)
        assert tracked == [p.pid for p in procs]
    assert not set(names) & set(list_namespaces())
    assert not [n for n in list_namespaces() if n.startswith(hosts.base)]
    assert not [p for p in tracked if psutil.pid_exists(p)]
    assert procs[1].returncode == -9  # ignored SIGTERM: killed
    assert hosts.stray_pids == [stray]
    wait_until(lambda: pid_gone(stray), timeout=10, msg="the daemon reaped")


def test_failed_setup_removes_what_it_made():
    with pytest.raises(NetnsError):
        with Hosts(2, subnet="10.213.999"):  # the first `ip addr add` fails, after two namespaces exist
            pass
    assert not [n for n in list_namespaces() if n.startswith(f"{PREFIX}-{os.getpid()}-")]


def test_cleanup_stale_removes_namespaces_of_dead_owners_only():
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = f"{PREFIX}-{dead.pid}-1-1-a"  # owner gone (and its start time could not match anyway)
    subprocess.run([IP, "netns", "add", stale], check=True)
    leftover = None
    try:
        # a process a crashed run left inside its namespace
        leftover = subprocess.Popen([IP, "netns", "exec", stale, sys.executable, "-c", "import signal; signal.pause()"],
                                    start_new_session=True)
        wait_until(lambda: leftover.pid in [int(x) for x in subprocess.run(
            [IP, "netns", "pids", stale], capture_output=True, text=True).stdout.split()], msg="leftover inside")
        with Hosts(1) as hosts:  # cleans up stale namespaces on start
            assert stale not in list_namespaces()
            assert leftover.wait(10) == -9
            assert cleanup_stale() == []  # a live owner's namespaces are left alone
            assert set(hosts.names) <= set(list_namespaces())
    finally:
        if leftover is not None and leftover.poll() is None:
            leftover.kill()
            leftover.wait()
        subprocess.run([IP, "netns", "delete", stale], capture_output=True)
