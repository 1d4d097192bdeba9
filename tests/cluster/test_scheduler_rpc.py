"""SchedulerRPC, the thin connection deploy and the cluster widget use instead of a Client."""

from __future__ import annotations

import pytest

from xsched.client.rpc import SchedulerRPC

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(120)]


def test_admin_ops_and_unregistering(cluster):
    with SchedulerRPC(cluster, timeout="10s") as rpc:
        assert rpc.status == "running" and rpc.scheduler_address == cluster.scheduler_address
        rpc.wait_for_workers(2, timeout=30)
        info = rpc.scheduler_info()
        assert len(info["workers"]) == 2
        with pytest.raises(TimeoutError, match="only 2 of 3 workers"):
            rpc.wait_for_workers(3, timeout=0.3)
        with SchedulerRPC(cluster.scheduler_address, security=cluster.security) as other:
            assert other.scheduler_info()["clients"] == info["clients"] + 1  # registered, as a client is
        assert rpc.scheduler_info()["clients"] == info["clients"]  # and gone when closed
        # retiring a worker nobody runs changes nothing (a real retirement: test_deploy_spec's adapt)
        assert rpc.retire_workers("tcp://127.0.0.1:1")["tcp://127.0.0.1:1"]["status"] == "unknown"
        assert len(rpc.scheduler_info()["workers"]) == 2
    assert rpc.status == "closed"
    rpc.close()  # twice is fine


def test_no_scheduler_there_says_so():
    from xsched.protocol.security import Security

    with pytest.raises(TimeoutError, match="could not reach the scheduler"):
        SchedulerRPC("tcp://127.0.0.1:9", security=Security.generate("curve"), timeout="1s")
