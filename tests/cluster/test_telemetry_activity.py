"""A worker's transfers reach the dashboards' task streams: the telemetry's ``activity``,
beside the task runs (which stay what clients read as the task stream)."""

from __future__ import annotations

import pytest

from xsched.protocol import ops
from xsched.scheduler.extensions.telemetry import rows_of

from tests.support.helpers import wait_until

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(60)]


def _ones(n):
    return b"x" * n


def test_a_fetch_between_workers_is_a_transfer_in_the_activity(client):
    a, b = sorted(client.scheduler_info()["workers"])
    big = client.submit(_ones, 2_000_000, workers=[a], key="activity-big-0")
    size = client.submit(len, big, workers=[b], key="activity-len-0")
    assert size.result(timeout=30) == 2_000_000

    def transfers():
        reply, _ = client._sync(client._conn.request({"op": ops.TELEMETRY, "parts": ["task-stream"]}, timeout=10))
        return [r for r in rows_of(reply["activity"]["runs"]) if r[0] == f"transfer from {a}" and r[2] == b]

    (record,) = wait_until(transfers, msg="the transfer reported with the worker's next heartbeat")[-1:]
    assert record[1] == record[5] == "transfer" and record[3] <= record[4]
    assert all(r["key"] != f"transfer from {a}" for r in client.get_task_stream())  # (runs only)
