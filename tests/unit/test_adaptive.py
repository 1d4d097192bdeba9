"""The adaptive scaling policy, fed sequences of scheduler views: up at once, down slowly, whole jobs."""

from __future__ import annotations

import pytest

from xsched.deploy.adaptive import AdaptivePolicy, Decision, Job, JobLoad, SchedulerView

GRACE = 120.0


def policy(**kwargs) -> AdaptivePolicy:
    base = {"minimum_jobs": 0, "maximum_jobs": 10, "workers_per_job": 2, "threads_per_worker": 4,
            "wait_count": 3, "pending_grace": GRACE}
    return AdaptivePolicy(**{**base, **kwargs})


def running(*ids, at=0.0) -> list[Job]:
    return [Job(str(i), "running", at) for i in ids]


IDLE = SchedulerView()


def test_scale_up_at_once_in_whole_jobs():
    p = policy()  # 8 threads per job
    assert p.decide(SchedulerView(queued=1), [], now=0.0).start == 1
    d = p.decide(SchedulerView(queued=20, processing=5), [], now=0.0)
    assert (d.start, d.cancel, d.target) == (4, (), 4)  # ceil(25 / 8)
    assert "25 tasks need 4 jobs of 8 threads" in d.reason


def test_pending_jobs_count_so_no_pile_up():
    p = policy()
    view = SchedulerView(queued=32)
    d = p.decide(view, [], now=0.0)
    assert d.start == 4
    jobs = [Job(str(i), "pending", 0.0) for i in range(4)]
    for now in (5.0, 10.0, 15.0):  # still pending in the queue: nothing more to ask for
        assert not p.decide(view, jobs, now=now)


def test_scale_up_counts_only_missing_jobs():
    assert policy().decide(SchedulerView(queued=10, processing=14), running(1, 2), now=0.0).start == 1


def test_bounded_by_maximum_and_minimum():
    p = policy(minimum_jobs=2, maximum_jobs=5)
    d = p.decide(SchedulerView(queued=10_000), running(1), now=0.0)
    assert (d.start, d.target) == (4, 5) and "at most 5 jobs" in d.reason
    d = p.decide(IDLE, [], now=0.0)
    assert (d.start, d.target) == (2, 2) and "at least 2 jobs" in d.reason
    # never below the minimum, however long it stays idle
    jobs = running(1, 2)
    assert all(not p.decide(IDLE, jobs, now=float(t)) for t in range(20))


def test_hysteresis_on_the_way_down():
    p = policy(wait_count=3)
    jobs = running(1, 2, 3, 4)
    decisions = [p.decide(IDLE, jobs, now=600.0 + i) for i in range(3)]
    assert [d.cancel for d in decisions[:2]] == [(), ()]
    assert "waiting to scale down (2/3 intervals)" in decisions[1].reason
    assert sorted(decisions[2].cancel) == ["1", "2", "3", "4"]


def test_a_busy_interval_resets_the_count():
    p = policy(wait_count=3)
    jobs = running(1, 2)
    busy = SchedulerView(processing=16)
    for view in (IDLE, IDLE, busy, IDLE, IDLE):
        assert not p.decide(view, jobs, now=600.0)
    assert p.decide(IDLE, jobs, now=600.0).cancel  # the third idle interval in a row


def test_down_only_to_the_mildest_wish():
    p = policy(wait_count=3)
    jobs = running(1, 2, 3, 4)
    views = [SchedulerView(processing=8), SchedulerView(processing=24), SchedulerView()]  # want 1, 3, 0
    decisions = [p.decide(v, jobs, now=600.0) for v in views]
    assert decisions[-1].target == 3 and len(decisions[-1].cancel) == 1


def test_wait_count_one_scales_down_at_once():
    assert len(policy(wait_count=1).decide(IDLE, running(1, 2), now=600.0).cancel) == 2


def test_pending_jobs_within_grace_are_never_cancelled():
    p = policy(wait_count=1)
    jobs = [Job("1", "pending", submitted_at=100.0), Job("2", "pending", submitted_at=150.0)]
    assert not p.decide(IDLE, jobs, now=200.0)
    d = p.decide(IDLE, jobs, now=100.0 + GRACE)  # job 1 just reached its grace, job 2 not yet
    assert d.cancel == ("1",) and "1 pending jobs kept within their 120s grace" in d.reason
    assert p.decide(IDLE, jobs[1:], now=150.0 + GRACE).cancel == ("2",)


def test_grace_does_not_reset_the_count():
    # the wish to scale down is remembered while the only candidate is in its grace period
    p = policy(wait_count=3)
    jobs = [Job("1", "pending", submitted_at=0.0)]
    assert [p.decide(IDLE, jobs, now=t).cancel for t in (10.0, 20.0, 30.0, GRACE)] == [(), (), (), ("1",)]


def test_running_jobs_do_not_get_grace():
    assert policy(wait_count=1).decide(IDLE, running(1, at=599.0), now=600.0).cancel == ("1",)


def test_cancel_order_cheapest_first():
    p = policy(wait_count=1)
    jobs = [
        Job("busy", "running", 0.0), Job("data", "running", 0.0), Job("old-idle", "running", 0.0),
        Job("new-idle", "running", 500.0), Job("queued-long", "pending", 10.0), Job("queued-new", "pending", 300.0),
        Job("queued-fresh", "pending", 590.0),
    ]
    load = {"busy": JobLoad(2, 3, 10), "data": JobLoad(2, 0, 5 * 10**9), "old-idle": JobLoad(2, 0, 1000),
            "new-idle": JobLoad(2, 0, 1000)}
    view = SchedulerView(processing=3, load=load)
    assert p.cancel_order(view, jobs, now=600.0) == [
        "queued-new", "queued-long", "old-idle", "new-idle", "data", "busy"]
    d = p.decide(view, jobs, now=600.0)  # 3 tasks need 1 job; "queued-fresh" is in its grace
    assert d.cancel == ("queued-new", "queued-long", "old-idle", "new-idle", "data")
    assert "busy" not in d.cancel and "queued-fresh" not in d.cancel


def test_job_without_connected_workers_is_cheap():
    p = policy(wait_count=1)
    view = SchedulerView(load={"1": JobLoad(2, 0, 10**6)})
    assert p.cancel_order(view, running(1, 2), now=0.0) == ["2", "1"]


def test_memory_keeps_jobs_and_scales_up():
    p = policy(memory_per_job="10GB", memory_target=0.5)
    # no tasks but 12 GB held: at 50% of 10 GB per job that is 3 jobs
    d = p.decide(SchedulerView(memory_used=12 * 10**9), [], now=0.0)
    assert d.start == 3 and "needs 3 jobs at 50% of" in d.reason
    assert p.decide(SchedulerView(queued=1, memory_needed=21 * 10**9), [], now=0.0).start == 5
    jobs = running(1, 2, 3)
    for now in range(5):
        assert not p.decide(SchedulerView(memory_used=12 * 10**9), jobs, now=float(now))


def test_finished_jobs_are_ignored():
    jobs = [Job("1", "finished", 0.0), Job("2", "running", 0.0)]
    assert policy().decide(SchedulerView(queued=16), jobs, now=0.0).start == 1


def test_steady_state_does_nothing():
    p = policy()
    jobs = running(1, 2)
    for now in range(10):
        d = p.decide(SchedulerView(processing=16), jobs, now=float(now))
        assert d == Decision(target=2, reason="16 tasks need 2 jobs of 8 threads")


def test_burst_then_lull_sequence():
    """A realistic run: a burst, jobs start, work drains, a short lull, more work, then done."""
    p = policy(maximum_jobs=4, wait_count=3)
    jobs: list[Job] = []
    d = p.decide(SchedulerView(queued=100), jobs, now=0.0)
    jobs = [Job(f"j{i}", "pending", 0.0) for i in range(d.start)]
    assert len(jobs) == 4
    jobs = [Job(j.job_id, "running", j.submitted_at) for j in jobs]
    assert not p.decide(SchedulerView(queued=60, processing=32), jobs, now=200.0)
    assert not p.decide(IDLE, jobs, now=210.0)  # a lull of two intervals
    assert not p.decide(IDLE, jobs, now=220.0)
    assert not p.decide(SchedulerView(queued=40), jobs, now=230.0)
    for now in (240.0, 250.0):
        assert not p.decide(IDLE, jobs, now=now)
    assert len(p.decide(IDLE, jobs, now=260.0).cancel) == 4


@pytest.mark.parametrize("kwargs, message", [
    ({"maximum_jobs": None}, "maximum_jobs is required"),
    ({"minimum_jobs": 5, "maximum_jobs": 2}, "maximum_jobs=2 is below minimum_jobs=5"),
    ({"minimum_jobs": -1}, "minimum_jobs=-1 must be a whole number >= 0"),
    ({"workers_per_job": 0}, "workers_per_job=0 must be a whole number >= 1"),
    ({"threads_per_worker": 1.5}, "threads_per_worker=1.5"),
    ({"wait_count": 0}, "wait_count=0"),
    ({"pending_grace": -1}, "pending_grace=-1"),
    ({"memory_target": 1.5}, "memory_target=1.5"),
    ({"memory_per_job": 0}, "memory_per_job must be more than 0"),
    ({"memory_per_job": "lots"}, "Cannot parse 'lots'"),
])
def test_bad_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message):
        policy(**kwargs)


def test_bad_inputs():
    with pytest.raises(ValueError, match="state='queued' must be"):
        Job("1", "queued", 0.0)
    with pytest.raises(ValueError, match="queued=-1"):
        SchedulerView(queued=-1)


def test_the_busy_job_is_the_one_kept():
    p = policy(wait_count=1)
    view = SchedulerView(processing=5, load={"2": JobLoad(2, 5, 10**6)})
    d = p.decide(view, running(1, 2, 3), now=600.0)
    assert (d.target, sorted(d.cancel)) == (1, ["1", "3"])
