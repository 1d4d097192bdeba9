"""Notebook 09 (debugging a task where it runs) through a real kernel, answering pdb's input
requests as a person at the front end would: ``%debug`` and ``client.debug`` on a failed
task's frames in the worker's process, ``recreate_error_locally``, and a breakpoint listed,
attached to and continued while the worker's other thread computes."""

from __future__ import annotations

import re

import pytest

from tests.support.notebooks import run_notebook_answering

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(300)]


def test_09_debugging(kernel_env, tmp_path):
    nb = run_notebook_answering("09_debugging", tmp_path, {
        "%debug": ["p offset", "up", "up", "p pid", "p os.getpid()", "q"],
        "client.debug(f)": ["up", "p chunk", "q"],
        "client.debug(g)": ["p total", "c"],
    })
    worker_pid, kernel_pid = map(int, re.fullmatch(r"worker pid: (\d+) \| this notebook's pid: (\d+)\n",
                                                   nb.text("import os")).groups())
    assert worker_pid != kernel_pid
    failed = nb.text("def scale(chunk)")
    assert "ZeroDivisionError" in failed and "division by zero" in failed

    debug = nb.cell("%debug")
    assert [p for p, _ in debug.prompts] == ["(Pdb) "] * 6  # each command typed in the cell's input box
    out = nb.text("%debug")
    assert re.match(rf"post-mortem of task 'process-[0-9a-f]+' on worker tcp://127\.0\.0\.1:\d+ \(pid {worker_pid}\): "
                    r"ZeroDivisionError: division by zero\n", out), out
    # where it raised (scale's comprehension); p offset, a local of the task's frame; up, up to
    # process; p pid there, and p os.getpid(): both the worker's pid, not the kernel's
    # the source of each line comes from the notebook's own cell (the client sends its cells)
    assert out.splitlines()[1:] == ["> <dynamic-code>(3)<listcomp>()", "-> return [x / offset for x in chunk]", "0",
                                    "> <dynamic-code>(3)scale()", "-> return [x / offset for x in chunk]",
                                    "> <dynamic-code>(8)process()", "-> return scale(chunk)",
                                    str(worker_pid), str(worker_pid)], out

    assert nb.text("client.debug(f)").splitlines()[-3:] == ["> <dynamic-code>(3)scale()",
                                                            "-> return [x / offset for x in chunk]", "[1, 2, 3]"]
    recreated = nb.text("client.recreate_error_locally(f)")
    assert recreated.rstrip().endswith("ZeroDivisionError: division by zero")
    assert "in Task.run" in recreated and "_run_here" in recreated  # raised here, in this kernel's frames

    paused = nb.text("import time")
    assert re.search(r"total_plus_one-[0-9a-f]+\s+total_plus_one \(<dynamic-code>:\d+\) on tcp://127\.0\.0\.1:\d+, "
                     r"nobody attached", paused), paused
    html = "".join(o.get("data", {}).get("text/html", "") for o in nb.cell("import time").outputs)
    assert "<table>" in html and "total_plus_one" in html
    assert nb.text("squares = client.gather") == "computed meanwhile: [0, 1, 4, 9, 16, 25, 36, 49, 64, 81]\n"
    assert nb.text("client.debug(g)") == "> <dynamic-code>(7)total_plus_one()\n45\n"  # paused before `return`
    assert nb.text('print("result:"') == "result: 46\nstill paused: 0\n"
    assert nb.text("client.close()") == "closed\n"
