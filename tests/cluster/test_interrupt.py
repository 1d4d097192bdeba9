"""client.interrupt: one running task stopped where it is (TaskInterrupted in its thread), its
worker and the other tasks untouched; a task not running is left alone."""

from __future__ import annotations

import pytest

import xsched
from xsched import TaskInterrupted

from tests.support.helpers import spin, wait_until

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(60)]


def _in_spin(client, fut) -> bool:
    """The task's own code runs (its frame is on the stack): before, it is being unpickled."""
    return any("in spin" in "".join(s.get(fut.key, [])) for s in client.call_stack(fut).values())


def test_a_running_task_is_interrupted_and_its_worker_goes_on(client):
    fut = client.submit(spin, 60, key="interrupt-spin-1")
    other = client.submit(spin, 0.2, key="interrupt-other-1")
    wait_until(lambda: _in_spin(client, fut), msg="the spin running")
    done = client.interrupt(fut)
    assert [keys for keys in done.values()] == [[fut.key]]
    with pytest.raises(TaskInterrupted, match="interrupted"):
        fut.result(timeout=30)
    assert other.result(timeout=30) > 0                   # the other task was not touched
    assert client.submit(abs, -3, key="interrupt-after-1").result(timeout=30) == 3
    assert client.interrupt(keys=["interrupt-after-1", "no-such-key"]) == {}   # not running: nothing
    client.retry(fut)                                       # (and it can run again)
    wait_until(lambda: _in_spin(client, fut), msg="the spin running again")
    assert client.interrupt(fut)
    with pytest.raises(TaskInterrupted):
        fut.result(timeout=30)
    assert isinstance(fut.exception(), xsched.XschedError)
