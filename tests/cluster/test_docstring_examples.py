"""The docstring examples that use ``client`` or start a ``LocalCluster``, run for real.

The unit tier skips them (the repository's ``conftest.py``): here each such docstring runs
as one test, its examples in order, with ``client`` bound to a fresh Client on the shared
2 x 1-thread LocalCluster and the module's own names in scope (as ``--doctest-modules``
gives them). An example marked ``+SKIP`` stays skipped; any other that fails, fails its
test with doctest's report of what it printed against what the docstring says.
"""

from __future__ import annotations

import doctest
import importlib
import pkgutil
import tempfile

import pytest

import xsched
from tests.support.doctests import NEEDS_CLUSTER, needs_cluster

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(120)]

FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE  # (as pyproject's doctest_optionflags)


def _modules_with_client_examples() -> list[str]:
    """Names of xsched's modules that may have an example that needs a cluster: examples
    and the words that need one in their source (read as text first, so only those are
    imported; ``DocTestFinder`` then picks the examples)."""
    names = []
    for info in pkgutil.walk_packages(xsched.__path__, "xsched."):
        spec = importlib.util.find_spec(info.name)
        if spec is None or not spec.origin or not spec.origin.endswith(".py"):
            continue
        with open(spec.origin, encoding="utf-8") as f:
            text = f.read()
        if ">>>" in text and NEEDS_CLUSTER.search(text):
            names.append(info.name)
    return names


def _docstrings() -> list:
    """One test per docstring: a method that ``sync_or_async`` wraps is also found as the
    class's ``_name`` copy of the same function, run once (told apart by the docstring's
    text: doctest gives every wrapped method the wrapper's line)."""
    found: dict = {}
    finder = doctest.DocTestFinder(exclude_empty=True)
    for name in _modules_with_client_examples():
        module = importlib.import_module(name)
        for test in finder.find(module):
            if needs_cluster(test):
                where = (test.filename, test.docstring)
                if where not in found or len(test.name) < len(found[where].name):
                    found[where] = test
    return sorted((pytest.param(t, id=t.name) for t in found.values()), key=lambda p: p.id)


DOCSTRINGS = _docstrings()


def test_some_docstrings_are_found():
    """The search above finds the client's examples (a broken search would pass silently)."""
    names = {p.id for p in DOCSTRINGS}
    assert "xsched.client.submit.SubmitMixin.submit" in names, sorted(names)[:20]


@pytest.mark.parametrize("dtest", DOCSTRINGS)
def test_docstring_example(dtest, client, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # (examples that write files write them here)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # (and the temporary ones they make)
    test = doctest.DocTest(dtest.examples, {**dtest.globs, "client": client}, dtest.name,
                           dtest.filename, dtest.lineno, dtest.docstring)
    runner = doctest.DocTestRunner(optionflags=FLAGS)
    report: list[str] = []
    result = runner.run(test, out=report.append, clear_globs=True)
    if result.failed:
        pytest.fail("".join(report), pytrace=False)
