"""Notebook 08 (the published-dataset workflow on dataframes with two clients, joins and
sorting between workers, parquet) runs end to end and shows what it says."""

from __future__ import annotations

import re

import pytest

from tests.support.notebooks import run_notebook

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(300)]


def test_08_dataframes(kernel_env, tmp_path):
    nb = run_notebook("08_dataframes", tmp_path)
    assert re.fullmatch(r"xsched\.DataFrame<read-csv-[0-9a-f]+, npartitions=8, columns=\['id', 'name', 'balance'\]>",
                        nb.text('df = xd.read_csv("data/accounts/*.csv")').strip())
    assert nb.text("print(df.npartitions") == (
        "8 partitions; {'id': 'int64', 'name': 'str', 'balance': 'int64'}\n"
        "KeyError: \"df[...]: no column 'balanse' in this DataFrame; its columns are ['id', 'name', 'balance']\"\n")
    head = nb.text("df2 = df[df.balance < 0]").splitlines()
    assert head[0].split() == ["id", "name", "balance"] and len(head) == 6
    assert all(int(line.split()[-1]) < 0 for line in head[1:])
    assert nb.text("alice.publish_dataset") == "published: ['accounts']\n"
    assert nb.text("bob = Client(cluster").endswith("same as pandas: True\n")
    joined = nb.text("cities = xd.from_pandas").splitlines()
    assert len(eval(joined[0])) == 8  # noqa: S307 - the mean balance per city, printed as a dict
    assert joined[1] == "known divisions: True | partitions for ids 1000-1999: 1"
    assert re.fullmatch(r"8 files; \['name', 'balance'\] ; rows: \d+\n", nb.text("paths = accounts.to_parquet"))
    assert nb.text("bob.unpublish_dataset") == "closed\n"
