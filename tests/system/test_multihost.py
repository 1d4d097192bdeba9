"""A real cluster across hosts made of network namespaces: scheduler on A, workers on A
and B, the client on B, every command as a user types it (addresses only, no secret: the
registry in the shared runtime directory is what a shared home directory gives an HPC
cluster). Between hosts every byte is encrypted: a capture on B's interface must see the
transfer's volume but none of its plaintext. Needs root and iproute2; skipped otherwise.
"""

from __future__ import annotations

import json
import os
import sys

import pytest

from tests.support.netns import Hosts, capture, netns_available

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(120)]

why = netns_available()
if why is not None:
    pytest.skip(why, allow_module_level=True)

PATTERN = b"xsched-plaintext"  # 16 bytes; the array is this, repeated
NBYTES = 32 * 2**20

CLIENT = r"""
import json, sys
import numpy as np
import zmq
from xsched import Client

address, pattern, nbytes = sys.argv[1], sys.argv[2].encode(), int(sys.argv[3])
with Client(address, timeout="20s", set_as_default=False) as c:
    c.wait_for_workers(2, timeout=60)
    info = c.scheduler_info()["workers"]
    by_name = {w["name"]: a for a, w in info.items()}
    data = np.frombuffer(pattern * (nbytes // len(pattern)), dtype=np.uint8).copy()
    [held] = c.scatter([data], workers=[by_name["a"]])           # client (B) -> worker on A
    pushed = c.run(lambda worker: worker.bulk.bytes_received, workers=[by_name["a"]])[by_name["a"]]
    moved = c.submit(lambda x: (int(x.sum()), x.nbytes), held, workers=[by_name["b"]]).result(timeout=60)
    back = c.submit(lambda x: x[::-1].copy(), held, workers=[by_name["a"]]).result(timeout=60)
    squares = c.gather(c.map(lambda i: i * i, range(50)))
    print(json.dumps({
        "workers": {n: a for n, a in by_name.items()},
        "moved": moved, "expected": [int(data.sum()), data.nbytes],
        "back_ok": bool((back[::-1] == data).all()), "pushed": pushed,
        "squares_ok": squares == [i * i for i in range(50)],
        "mechanism": c._conn._sock.get(zmq.MECHANISM) == zmq.CURVE,
        "security_mode": c.security.mode,
    }))
"""


def _wait_for_line(path: str, proc, timeout: float = 30) -> str:
    from tests.support.helpers import wait_until

    def first_line():
        if proc.poll() is not None:
            raise AssertionError(f"exited with {proc.returncode}: {open(path).read()[-2000:]}")
        with open(path) as f:
            text = f.read()
        return text.splitlines()[0] if "\n" in text else None

    return wait_until(first_line, timeout=timeout, msg=f"first line of {path}")


def test_scheduler_on_a_workers_on_a_and_b_client_on_b_encrypted_on_the_wire():
    with Hosts(2) as hosts:
        a, b = hosts
        tmp = hosts.tmpdir()
        runtime = os.path.join(tmp, "home-xsched")
        os.makedirs(runtime, mode=0o700)
        env = {k: v for k, v in os.environ.items() if k != "XSCHED_SECRET"}
        env["XSCHED_RUNTIME_DIR"] = runtime  # shared by every host, as a shared home would be
        cli = [sys.executable, "-m", "xsched.cli"]

        def start(host, name, *args):
            log = os.path.join(tmp, f"{name}.log")
            with open(log, "w") as f:
                p = host.popen(cli + list(args), env=env, stdout=f, stderr=f)
            p.log = log
            return p

        sched = start(a, "scheduler", "scheduler", "--port", "8786")
        first = _wait_for_line(sched.log, sched)
        assert first == f"xsched scheduler at tcp://{a.ip}:8786", first
        start(a, "worker-a", "worker", f"{a.ip}:8786", "--nthreads", "1", "--name", "a")
        start(b, "worker-b", "worker", f"{a.ip}:8786", "--nthreads", "1", "--name", "b")
        script = os.path.join(tmp, "client.py")
        with open(script, "w") as f:
            f.write(CLIENT)
        with capture(b) as cap:
            out = b.run([sys.executable, script, f"{a.ip}:8786", PATTERN.decode(), str(NBYTES)],
                        timeout=90, env=env)
        assert out.returncode == 0, out.stderr[-3000:]
        result = json.loads(out.stdout.strip().splitlines()[-1])
        assert result["workers"]["a"].startswith(f"tcp://{a.ip}:")  # each serves on its own host
        assert result["workers"]["b"].startswith(f"tcp://{b.ip}:")
        assert result["moved"] == result["expected"] and result["back_ok"] and result["squares_ok"]
        assert result["mechanism"] and result["security_mode"] == "auto"
        assert result["pushed"] >= NBYTES  # the scatter took the (sealed) side channel, not CURVE
        # the capture saw the traffic (three times the array crossed B's link) but no plaintext
        assert len(cap.data()) >= 3 * NBYTES
        assert cap.count(PATTERN) == 0
        assert cap.count(PATTERN[:8]) == 0
