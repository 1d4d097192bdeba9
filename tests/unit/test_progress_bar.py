"""``xsched.diagnostics.ProgressBar``: the text bar of computations run in this process, one
task at a time or on threads, as dask's; nothing for quick ones under ``minimum``; a failed
computation ends its bar; nested computations draw one bar."""

from __future__ import annotations

import io
import re
import threading

import numpy as np
import pytest

import xsched
import xsched.array as xa
from xsched.diagnostics import ProgressBar
from xsched.graph import local


def _lines(out: io.StringIO) -> list[str]:
    return [part for part in re.split(r"[\r\n]", out.getvalue()) if part]


@pytest.mark.parametrize("scheduler", ["sync", "threads"])
def test_the_bar_ends_at_every_task_of_the_computation(scheduler):
    out = io.StringIO()
    x = xa.from_array(np.arange(1000.0), chunks=10)
    with ProgressBar(out=out, width=20):
        assert (x + 1).sum().compute(scheduler=scheduler) == 500500.0
    last = _lines(out)[-1]
    assert last.startswith("[" + "#" * 20 + "] | 100% Completed |") and out.getvalue().endswith("\n")
    assert local.watchers == []


def test_the_bar_redraws_while_tasks_run_and_counts_them():
    out = io.StringIO()
    release = threading.Event()
    seen = []

    def step(i):
        if i == 5:  # (the bar is redrawn while this task waits, with the five before it counted)
            release.wait(timeout=20)
        return i

    def watch():
        while not release.is_set():
            if "%" in out.getvalue() and " 0% " not in _lines(out)[-1]:
                seen.append(_lines(out)[-1])
                release.set()
            release.wait(0.01)

    watcher = threading.Thread(target=watch)
    watcher.start()
    parts = [xsched.delayed(step)(i) for i in range(10)]
    with ProgressBar(out=out, dt=0.01):
        xsched.compute(*parts, scheduler="sync")
    watcher.join(timeout=30)
    assert seen and re.search(r"\|\s+\d+% Completed", seen[0])


def test_quick_computations_under_minimum_print_nothing_and_failures_end_the_bar():
    out = io.StringIO()
    with ProgressBar(minimum=60, out=out):
        xa.ones(10, chunks=5).sum().compute()
    assert out.getvalue() == ""

    def boom(b):
        raise ValueError("boom")

    out = io.StringIO()
    bar = ProgressBar(out=out)
    bar.register()
    try:
        with pytest.raises(ValueError, match="boom"):
            xa.ones(10, chunks=5).map_blocks(boom, dtype=float).sum().compute()
        assert "Completed" in out.getvalue() and out.getvalue().endswith("\n")  # (its last line ended)
        assert "registered" in repr(bar)
    finally:
        bar.unregister()
    assert "inactive" in repr(bar) and local.watchers == []
    with pytest.raises(ValueError, match="width must be 1 or more"):
        ProgressBar(width=0)


def test_a_computation_inside_a_task_does_not_hide_the_outer_ones_tasks():
    """A task computing locally (in its pool thread) while the outer computation's other
    tasks finish: those still count, and the bar ends at 100%."""
    inner_running, release = threading.Event(), threading.Event()

    def hold(i):
        inner_running.set()
        release.wait(timeout=20)  # (set by the last outer task: they all finish meanwhile)
        return i

    def nested():
        return sum(xsched.compute(*[xsched.delayed(hold)(i) for i in range(3)], scheduler="sync"))

    def gate():
        return inner_running.wait(timeout=20)

    def quick(i, _):
        if i == 9:
            release.set()
        return i

    opened = xsched.delayed(gate)()
    out = io.StringIO()
    with ProgressBar(out=out, width=20):
        got = xsched.compute(xsched.delayed(nested)(), *[xsched.delayed(quick)(i, opened) for i in range(10)],
                             scheduler="threads", num_workers=2)
    assert got == (3, *range(10))
    assert _lines(out)[-1].startswith("[" + "#" * 20 + "] | 100% Completed |"), _lines(out)[-1]
