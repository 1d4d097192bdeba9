"""Running the notebooks in notebooks/ in a real Jupyter kernel (nbclient): ``run_notebook``
executes one fresh, fails on an untagged error or a process that outlives it, and returns
an ``Executed`` whose cells a test looks up by the start of their source. The kernel's
environment is the ``kernel_env`` fixture (tests/system/conftest.py)."""

from __future__ import annotations

import re
from pathlib import Path

import psutil
import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
ANSI = re.compile(r"\x1b\[[0-9;]*m")


class Executed:
    """An executed notebook: look cells up by the start of their source."""

    def __init__(self, nb):
        self.cells = [c for c in nb.cells if c.cell_type == "code"]

    def cell(self, source_start: str):
        found = [c for c in self.cells if c.source.startswith(source_start)]
        assert len(found) == 1, f"{len(found)} cells start with {source_start!r}"
        return found[0]

    def text(self, source_start: str) -> str:
        """Streams, text/plain results and tracebacks of one cell, ANSI colours removed."""
        return text_of(self.cell(source_start).outputs)

    def png(self, source_start: str) -> bool:
        return any("image/png" in o.get("data", {}) for o in self.cell(source_start).outputs)


def text_of(outputs) -> str:
    parts = []
    for o in outputs:
        if o["output_type"] == "stream":
            parts.append(o["text"])
        elif o["output_type"] in ("execute_result", "display_data"):
            parts.append(o.get("data", {}).get("text/plain", "") + "\n")
        elif o["output_type"] == "error":
            parts.append("\n".join(o["traceback"]) + "\n")
    return ANSI.sub("", "".join(parts))


def run_notebook(name: str, workdir: Path) -> Executed:
    """Execute notebooks/<name>.ipynb in ``workdir``; fail on an untagged error or a leftover process."""
    nb = nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4)
    stored = [c for c in nb.cells if c.cell_type == "code" and (c.get("outputs") or c.get("execution_count"))]
    assert not stored, f"{name}.ipynb is stored with outputs; strip them"
    started: dict[int, psutil.Process] = {}
    after_last_cell: list[int] = []
    last = max(i for i, c in enumerate(nb.cells) if c.cell_type == "code")

    def record_children(cell_index, **_):
        pid = getattr(getattr(runner.km, "provisioner", None), "pid", None)
        try:
            for p in psutil.Process(pid).children(recursive=True) if pid else ():
                started.setdefault(p.pid, p)
        except psutil.NoSuchProcess:
            pass
        if cell_index == last:  # the notebook itself closes what it started, before its kernel goes
            _, alive = psutil.wait_procs(list(started.values()), timeout=10)
            after_last_cell.extend(p.pid for p in alive)

    runner = nbclient.NotebookClient(nb, timeout=60, kernel_name="python3", allow_errors=False,
                                     resources={"metadata": {"path": str(workdir)}},
                                     on_cell_executed=record_children)
    try:
        runner.execute()
    finally:
        _reap(name, started)
    assert started, f"{name}: no scheduler or worker process seen"
    assert not after_last_cell, f"{name}: processes still running after the last cell: {after_last_cell}"
    return Executed(nb)


def _reap(name: str, started: dict) -> None:
    """Wait for the cluster processes a notebook started; kill and report any still alive."""
    _, alive = psutil.wait_procs(list(started.values()), timeout=15)
    for p in alive:  # fail, but do not leak into the next test
        try:
            p.kill()
        except psutil.Error:
            pass
    assert not alive, f"{name}: processes outlived the notebook: {[p.pid for p in alive]}"


def run_notebook_answering(name: str, workdir: Path, answers: dict[str, list[str]], timeout: float = 120) -> Executed:
    """Execute notebooks/<name>.ipynb in a real kernel, answering its ``input()`` requests as a
    person at the front end would: ``answers`` maps the start of a cell's source to the lines
    typed into that cell's input boxes, in order. nbclient refuses stdin, so the cells go
    through jupyter_client's ``execute_interactive`` with ``allow_stdin``.

    Each executed cell's ``outputs`` are nbformat outputs (``text_of`` reads them); its
    ``prompts`` are the input requests it made, each ``(prompt, answer)``. Fails when a cell
    not tagged ``raises-exception`` raises, when a cell asks for more input than it was given
    or uses less, or when a process the kernel started outlives the notebook.
    """
    from jupyter_client.manager import start_new_kernel

    nb = nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4)
    stored = [c for c in nb.cells if c.cell_type == "code" and (c.get("outputs") or c.get("execution_count"))]
    assert not stored, f"{name}.ipynb is stored with outputs; strip them"
    km, kc = start_new_kernel(kernel_name="python3", cwd=str(workdir))
    started: dict[int, psutil.Process] = {}
    try:
        for cell in (c for c in nb.cells if c.cell_type == "code"):
            lines = next((list(v) for k, v in answers.items() if cell.source.startswith(k)), [])
            cell.outputs, cell.prompts = [], []

            def on_output(msg, cell=cell):
                if msg["msg_type"] in ("stream", "display_data", "execute_result", "error"):
                    cell.outputs.append(nbformat.v4.output_from_msg(msg))

            def on_input(msg, cell=cell, lines=lines):
                prompt = msg["content"]["prompt"]
                assert lines, f"the cell {cell.source[:40]!r} asked for more input ({prompt!r}) than its answers"
                answer = lines.pop(0)
                cell.prompts.append((prompt, answer))
                kc.input(answer)

            reply = kc.execute_interactive(cell.source, allow_stdin=True, stdin_hook=on_input,
                                           output_hook=on_output, timeout=timeout)
            assert not lines, f"the cell {cell.source[:40]!r} did not ask for {lines}"
            if reply["content"]["status"] != "ok":
                assert "raises-exception" in cell.metadata.get("tags", []), (
                    f"cell {cell.source[:60]!r} raised:\n{text_of(cell.outputs)}")
            pid = getattr(getattr(km, "provisioner", None), "pid", None)
            try:
                for p in psutil.Process(pid).children(recursive=True) if pid else ():
                    started.setdefault(p.pid, p)
            except psutil.NoSuchProcess:
                pass
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=False)
        _reap(name, started)
    assert started, f"{name}: no scheduler or worker process seen"
    return Executed(nb)
