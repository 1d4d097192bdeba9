"""Notebook 07 (datasets between two clients, tasks that launch tasks, upload_file, restart
into a shipped environment) runs end to end and shows what it says."""

from __future__ import annotations

import pytest

from tests.support.notebooks import run_notebook

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(300)]


def test_07_sharing_and_dynamic_work(kernel_env, tmp_path):
    nb = run_notebook("07_sharing_and_dynamic_work", tmp_path)
    assert nb.text("import numpy as np") == "published: ['balances', 'fees']\n"
    out = nb.text("bob = Client(cluster")
    assert out.startswith("datasets: ['balances', 'fees']\nsum of balances: 999000.0\nfees: [0.0, 0.5, 1.0, 1.5]\n")
    assert "KeyError: \"no dataset named 'salaries' is published (published: 'balances', 'fees')" in out
    assert nb.text("def fib(n)") == "fib(12) = 144\n"
    assert nb.text("import os, tempfile") == "prices: [1.2, 12.0]\n"
    assert nb.text("import glob, site, subprocess") == (
        "workers back: 2\nall in the shipped environment: True\n"
        "extra module: {'hello from the new environment'}\nold futures: {'cancelled'} datasets: []\n")
