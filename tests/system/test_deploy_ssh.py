"""SSHCluster against real sshd servers in two network-namespace hosts: the scheduler on
A, a worker group on A and one on B, started with the system ssh (keys and options as a
user gives them), the secret on stdin only, and every remote process gone after close.
Needs root, iproute2 and openssh-server; skipped otherwise."""

from __future__ import annotations

import json
import os
import sys

import pytest

from tests.support.netns import Hosts, netns_available
from tests.support.sshd import ssh_servers, sshd_available

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(180)]

why = netns_available() or sshd_available()
if why is not None:
    pytest.skip(why, allow_module_level=True)

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

SCRIPT = r"""
import json, sys
from xsched import Client
from xsched.deploy import SSHCluster

a, b, opts, remote_python = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), sys.argv[4]
out = {}
with SSHCluster([a, a, b], ssh_options=opts, remote_python=remote_python,
                worker_options={"nthreads": 1, "nworkers": 2}, timeout=60) as cluster:
    out["repr"] = repr(cluster)
    with Client(cluster, set_as_default=False) as c:
        c.wait_for_workers(4, timeout=60)
        info = c.scheduler_info()["workers"]
        out["hosts"] = sorted(addr.split("//")[1].rsplit(":", 1)[0] for addr in info)
        out["names"] = sorted(w["name"] for w in info.values())
        out["squares"] = c.gather(c.map(lambda i: i * i, range(20))) == [i * i for i in range(20)]
        out["secret_in_repr"] = cluster.security.secret in repr(cluster) + cluster._repr_html_()
        cluster.scale(jobs=1)  # the newest group (host B's) goes
        c.wait_for_workers(2, timeout=60)
        out["after_scale"] = sorted(addr.split("//")[1].rsplit(":", 1)[0] for addr in c.scheduler_info()["workers"])
    with Client(cluster.scheduler_address, set_as_default=False) as c2:  # by address: the registry has it
        out["by_address"] = c2.submit(sum, [1, 2]).result(timeout=30) == 3
    out["logs"] = cluster.log_directory
print(json.dumps(out))
"""


def test_ssh_cluster_scheduler_on_a_workers_on_a_and_b():
    with Hosts(2) as hosts, ssh_servers(list(hosts)) as keys:
        a, b = hosts
        tmp = hosts.tmpdir()
        runtime = os.path.join(tmp, "xsched-home")
        os.makedirs(runtime, mode=0o700)
        # what the remote shell lacks (it gets sshd's environment): the venv, our test modules, the registry
        remote_python = f"env PYTHONPATH={REPO} XSCHED_RUNTIME_DIR={runtime} {sys.executable}"
        env = {k: v for k, v in os.environ.items() if k != "XSCHED_SECRET"}
        env["XSCHED_RUNTIME_DIR"] = runtime
        script = os.path.join(tmp, "ssh_client.py")
        with open(script, "w") as f:
            f.write(SCRIPT)
        before = {h.name: set(h.pids()) for h in hosts}
        out = a.run([sys.executable, script, a.ip, b.ip, json.dumps(keys.options()), remote_python],
                    timeout=150, env=env)
        assert out.returncode == 0, out.stderr[-4000:]
        result = json.loads(out.stdout.strip().splitlines()[-1])
        assert result["hosts"] == [a.ip, a.ip, b.ip, b.ip], result
        assert result["names"] == [f"{a.ip}-0-0", f"{a.ip}-0-1", f"{b.ip}-1-0", f"{b.ip}-1-1"]
        assert result["squares"] and result["by_address"] and not result["secret_in_repr"]
        assert result["after_scale"] == [a.ip, a.ip]
        assert "SSHCluster(" in result["repr"]
        assert not os.path.exists(result["logs"])  # its temporary log directory went with it
        # closing ended every remote scheduler, nanny and worker: only the sshd servers remain
        for h in hosts:
            assert set(h.pids()) <= before[h.name], (h.name, set(h.pids()) - before[h.name])
