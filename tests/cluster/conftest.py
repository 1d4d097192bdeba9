"""Fixtures of the cluster tier (the shared cluster, client and own_cluster are in tests/conftest.py)."""

import pytest

from tests.support.procs import Procs


@pytest.fixture
def procs():
    """Command-line processes (``procs.start("scheduler", ...)``), stopped by PID at teardown."""
    ps = Procs()
    try:
        yield ps
    finally:
        ps.close()
