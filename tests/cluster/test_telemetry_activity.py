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


def _telemetry_hooks(scheduler=None):
    from xsched.scheduler.extensions.telemetry import GroupCounts, StoryRecorder

    return sorted(type(h).__name__ for h in scheduler.state.transition_hooks
                  if isinstance(h, (GroupCounts, StoryRecorder)))


def test_a_dashboard_that_stops_asking_leaves_no_hook_behind(monkeypatch):
    """On a running scheduler, the telemetry's transition hooks come off once no request came
    for IDLE_DETACH seconds (shortened here), and a new request puts them back."""
    from xsched import Client, LocalCluster
    from xsched.scheduler.extensions import telemetry

    monkeypatch.setattr(telemetry, "IDLE_DETACH", 0.5)
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False) as cluster, \
            Client(cluster, set_as_default=False) as client:
        def ask():
            return client._sync(client._conn.request({"op": ops.TELEMETRY, "parts": ["groups"]}, timeout=10))[0]

        futs = client.map(lambda x: x + 1, range(5))  # (held: the scheduler keeps their tasks)
        assert client.gather(futs) == list(range(1, 6))
        assert client.run_on_scheduler(_telemetry_hooks) == []
        ask()
        assert client.run_on_scheduler(_telemetry_hooks) == ["GroupCounts", "StoryRecorder"]
        wait_until(lambda: client.run_on_scheduler(_telemetry_hooks) == [], timeout=20,
                   msg="the hooks off once no dashboard asks")
        assert sum(g["done"] for g in ask()["groups"]) == 5        # counted again from the tasks held
        assert client.run_on_scheduler(_telemetry_hooks) == ["GroupCounts", "StoryRecorder"]
