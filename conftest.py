"""Docstring examples are split by what they need.

``make test`` runs every docstring example of ``xsched`` with ``--doctest-modules`` in the
unit tier, where no scheduler or worker process runs. A docstring whose examples use
``client`` (the name the docs give a user's connected ``Client``) or start a
``LocalCluster(...)`` needs a running cluster (``tests/support/doctests.py``): the unit
tier skips it and ``tests/cluster/test_docstring_examples.py`` runs it, with
``client`` bound to a Client on a real 2-worker LocalCluster. So such examples carry no
``+SKIP``: they are run, and a wrong one fails. ``+SKIP`` stays only on examples no test
machine can run (a Slurm allocation, another host).

Every docstring example runs in a temporary directory of its own (its working directory,
and where ``tempfile`` makes its files), so what an example writes, as a user's notebook
would, goes with it.
"""

from __future__ import annotations

import tempfile

import pytest

from tests.support.doctests import needs_cluster


def pytest_collection_modifyitems(config, items):
    for item in items:
        dtest = getattr(item, "dtest", None)  # (pytest's DoctestItem)
        if dtest is not None and needs_cluster(dtest):
            item.add_marker(pytest.mark.skip(
                reason="needs a cluster: run by tests/cluster/test_docstring_examples.py"))


@pytest.fixture(autouse=True)
def _doctests_write_into_a_temporary_directory(request, monkeypatch):
    if getattr(request.node, "dtest", None) is None:
        return  # (other tests ask for tmp_path themselves)
    where = request.getfixturevalue("tmp_path")
    monkeypatch.chdir(where)
    monkeypatch.setattr(tempfile, "tempdir", str(where))
