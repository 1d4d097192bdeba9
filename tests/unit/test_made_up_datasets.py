"""xsched.datasets: the made-up data of dask's tutorials, under their names."""

from __future__ import annotations

import json
import subprocess
import sys

import pandas as pd
import pytest

import xsched
from xsched.bag.demo import make_people
from xsched.dataframe.demo import timeseries


def test_timeseries_is_the_dataframe_demo():
    a = xsched.datasets.timeseries(end="2000-01-03", freq="30min", seed=2)
    pd.testing.assert_frame_equal(a.compute(), timeseries(end="2000-01-03", freq="30min", seed=2).compute())
    assert a.npartitions == 2 and list(a.columns) == ["id", "name", "x", "y"]


def test_make_people_records_are_nested_and_reproducible_per_partition():
    people = xsched.datasets.make_people(npartitions=3, records_per_partition=40, seed=7)
    records = people.compute()
    assert len(records) == 120 and people.npartitions == 3
    for r in records:
        assert sorted(r) == ["address", "age", "credit-card", "name", "occupation", "telephone"]
        assert 0 <= r["age"] <= 120 and isinstance(r["age"], int)
        assert len(r["name"]) == 2 and all(isinstance(n, str) and n for n in r["name"])
        assert sorted(r["address"]) == ["address", "city"]
        assert len(r["credit-card"]["number"].replace(" ", "")) == 16
        month, year = r["credit-card"]["expiration-date"].split("/")
        assert 1 <= int(month) <= 12 and len(year) == 2
        json.dumps(r)  # (the tutorial writes them as JSON lines)
    assert make_people(3, 40, seed=7).compute() == records
    assert make_people(3, 40, seed=8).compute() != records
    alone = make_people(3, 40, seed=7).to_delayed()[1].compute()
    assert alone == records[40:80]  # (a partition is the same computed alone)
    assert len({r["occupation"] for r in records}) > 5


def test_make_people_without_a_seed_draws_one_and_checks_its_counts():
    assert make_people(2, 5).compute() != make_people(2, 5).compute()
    assert make_people(1, 0).compute() == []
    with pytest.raises(ValueError, match="make_people: npartitions must be an int >= 1, got 0"):
        make_people(npartitions=0)
    with pytest.raises(ValueError, match="records_per_partition must be an int >= 0, got -1"):
        make_people(records_per_partition=-1)


def test_import_xsched_leaves_the_collections_unimported():
    """``xsched.datasets`` is there after ``import xsched`` (as dask.datasets is), without
    importing pandas or the collections until a dataset is made."""
    code = ("import sys, xsched; xsched.datasets; "
            "print(sorted(m for m in ('pandas', 'xsched.dataframe', 'xsched.bag') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == "[]"
