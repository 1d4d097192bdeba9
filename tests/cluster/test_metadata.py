"""Metadata on a real cluster: values set by one client are read by another and by tasks
(through ``xsched.get_client()``); nested keys; defaults; bad keys refused with the
scheduler still serving. Keys are unique per test (the cluster is shared)."""

from __future__ import annotations

import uuid

import pytest

import xsched
from xsched import Client

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(120)]


def set_from_a_task(key, value):
    xsched.get_client().set_metadata(key, value)
    return True


def read_in_a_task(key):
    return xsched.get_client().get_metadata(key)


def test_one_client_sets_another_reads_nested_keys(client, cluster):
    run = f"run-{uuid.uuid4().hex}"
    client.set_metadata(run, {"stage": 1, "params": (1, 2)})
    client.set_metadata([run, "stage"], 2)
    client.set_metadata([run, "paths", "out"], "/data/out.zarr")  # (a missing level made)
    other = Client(cluster, set_as_default=False)
    try:
        assert other.get_metadata(run) == {"stage": 2, "params": [1, 2], "paths": {"out": "/data/out.zarr"}}
        assert other.get_metadata([run, "paths", "out"]) == "/data/out.zarr"
        assert other.get_metadata((run, "stage")) == 2
        assert other.get_metadata([run, "missing"], default=None) is None
        with pytest.raises(KeyError, match=rf"no metadata under \['{run}', 'missing'\].*set_metadata"):
            other.get_metadata([run, "missing"])
    finally:
        other.close()


def test_tasks_set_and_read_metadata(client):
    key = f"task-{uuid.uuid4().hex}"
    assert client.submit(set_from_a_task, [key, "done"], 3, pure=False).result(timeout=30)
    assert client.get_metadata([key, "done"]) == 3
    client.set_metadata([key, "threshold"], 0.5)
    assert client.submit(read_in_a_task, [key, "threshold"], pure=False).result(timeout=30) == 0.5


def test_bad_keys_are_refused_and_the_scheduler_keeps_serving(client):
    key = f"bad-{uuid.uuid4().hex}"
    with pytest.raises(TypeError, match=r"set_metadata: keys are a string .* \(\{'a': 1\} is neither\)"):
        client.set_metadata({"a": 1}, 1)  # (refused here: a dict is no key)
    with pytest.raises(TypeError, match="get_metadata: keys are"):
        client.get_metadata([])
    # sent anyway, past the client's check: the scheduler refuses it and keeps serving
    with pytest.raises(Exception, match="set-metadata: keys must be a string"):
        client.sync(client._conn.request, {"op": "set-metadata", "keys": {"a": 1}, "value": 1})
    client.set_metadata(key, b"\x00bytes")
    assert client.get_metadata(key) == b"\x00bytes"
