"""Published datasets: the state machine's refcounts, then real clients on a cluster."""

from __future__ import annotations

import numpy as np
import pytest

from xsched import Client, delayed
from xsched.scheduler.state import (
    AddKeys, AddWorker, ClientReleasesKeys, NewTask, PublishDataset, RemoveClient, SchedulerState,
    TaskFinished, ToWorker, UnpublishDataset, UpdateGraph,
)

from tests.support.helpers import wait_until


def _state():
    s = SchedulerState(validate=True)
    s.handle(AddWorker("w", nthreads=1))
    return s


def _frees(out):
    return [k for o in out if isinstance(o, ToWorker) and o.msg["op"] == "free-keys" for k in o.msg["keys"]]


# ---------------------------------------------------------------------- state machine
def test_dataset_keeps_data_after_its_client_leaves():
    s = _state()
    s.handle(UpdateGraph("c1", [NewTask("a", b"spec")], ["a"]), TaskFinished("w", "a", nbytes=8))
    assert _frees(s.handle(PublishDataset("n", ["a"], [b"blob"]))) == []
    assert _frees(s.handle(RemoveClient("c1"))) == []
    assert s.tasks["a"].state == "memory" and s.tasks["a"].who_wants == {"dataset:n"}
    assert s.datasets["n"] == (["a"], [b"blob"])
    assert _frees(s.handle(UnpublishDataset("n"))) == ["a"]
    assert "a" not in s.tasks and "n" not in s.datasets


def test_unpublish_keeps_keys_a_client_still_holds():
    s = _state()
    s.handle(AddKeys("w", {"x": 8}, client="c1"), PublishDataset("n", ["x"]))
    assert _frees(s.handle(UnpublishDataset("n"))) == []
    assert s.tasks["x"].who_wants == {"c1"}
    assert _frees(s.handle(ClientReleasesKeys("c1", ["x"]))) == ["x"]


def test_republishing_a_name_replaces_its_keys():
    s = _state()
    s.handle(AddKeys("w", {"x": 8, "y": 8}, client="c1"), PublishDataset("n", ["x"]), RemoveClient("c1"))
    # "y" has no holder but the client (gone): it was freed with it
    assert set(s.tasks) == {"x"}
    s.handle(AddKeys("w", {"y": 8}, client="c2"))
    assert _frees(s.handle(PublishDataset("n", ["y"]))) == ["x"]
    assert s.datasets["n"][0] == ["y"]


def test_a_pending_dataset_key_is_computed_for_the_dataset():
    s = _state()
    s.handle(UpdateGraph("c1", [NewTask("a", b"spec")], ["a"]), PublishDataset("n", ["a"]), RemoveClient("c1"))
    assert s.tasks["a"].state == "processing"
    s.handle(TaskFinished("w", "a", nbytes=1))
    assert s.tasks["a"].state == "memory"


# ---------------------------------------------------------------------- on a cluster
def inc(x):
    return x + 1


@pytest.mark.cluster
@pytest.mark.timeout(60)
def test_publish_then_get_from_another_client_after_the_first_left(cluster):
    c1 = Client(cluster, set_as_default=False)
    futs = c1.map(inc, range(5))
    [big] = c1.scatter([np.arange(1000)])
    c1.publish_dataset(numbers=futs)
    c1.publish_dataset(big, name="big")
    with pytest.raises(KeyError, match="already published.*override=True"):
        c1.publish_dataset(big, name="big")
    assert c1.list_datasets() == ["big", "numbers"]
    keys = [f.key for f in futs]
    del futs, big
    c1.close()
    with Client(cluster, set_as_default=False) as c2:
        assert c2.list_datasets() == ["big", "numbers"]
        got = c2.get_dataset("numbers")
        assert all(f.client is c2 for f in got)
        assert [f.key for f in got] == keys
        assert c2.gather(got) == [1, 2, 3, 4, 5]
        assert c2.datasets["big"].result().sum() == 499500
        assert "big" in c2.datasets and len(c2.datasets) == 2
        with pytest.raises(KeyError, match=r"no dataset named 'nope'.*published: 'big', 'numbers'"):
            c2.get_dataset("nope")
        assert c2.get_dataset("nope", default=None) is None
        # the data stayed on the workers although the first client left: nothing recomputed
        del got
        c2.unpublish_dataset("numbers")
        del c2.datasets["big"]
        assert c2.list_datasets() == []
        with pytest.raises(KeyError, match="no dataset named 'numbers'.*published: none"):
            c2.unpublish_dataset("numbers")
        wait_until(lambda: not (set(keys) & set(c2.run_on_scheduler(lambda scheduler: list(scheduler.tasks)))),
                   msg="unpublished keys freed")


@pytest.mark.cluster
@pytest.mark.timeout(60)
def test_persisted_collections_publish_and_compute_elsewhere(cluster):
    import xsched.array as xa

    c1 = Client(cluster, set_as_default=False)
    arr = c1.persist(xa.from_array(np.arange(12.0), chunks=4) * 2)
    d = c1.persist(delayed(sum)([1, 2, 3]))
    c1.publish_dataset(arr=arr, total=d)
    c1.close()
    with Client(cluster, set_as_default=False) as c2:
        arr2, d2 = c2.get_dataset("arr"), c2.datasets["total"]
        assert c2.compute(arr2.sum(), sync=True) == 132.0
        assert c2.compute(d2, sync=True) == 6
        c2.unpublish_dataset("arr")
        c2.unpublish_dataset("total")


@pytest.mark.cluster
@pytest.mark.timeout(30)
def test_publish_needs_a_name_and_known_keys(client):
    fut = client.submit(inc, 1)
    with pytest.raises(TypeError, match="needs a name"):
        client.publish_dataset(fut)
    with pytest.raises(TypeError, match="something to publish"):
        client.publish_dataset()
    fut.result()
    client.cancel(fut)
    wait_until(lambda: fut.key not in client.run_on_scheduler(lambda scheduler: list(scheduler.tasks)))
    with pytest.raises(KeyError, match="no longer knows"):
        client.publish_dataset(gone=fut)
