"""xsched.dataframe on a real cluster: the seed's published-dataset workflow with two clients,
shuffles between worker processes, and a shuffle rerun exactly after a worker dies."""

from __future__ import annotations


import numpy as np
import pandas as pd
import pytest

import xsched
import xsched.dataframe as xd
from xsched import Client

from tests.support.helpers import Gate, kill_worker, pid_gone, wait_until

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(120)]


def accounts(n=2000, seed=0):
    rng = np.random.default_rng(seed)
    names = np.array(["Alice", "Bob", "Carol", "Dan", "Edith", "Frank"])
    return pd.DataFrame({"id": np.arange(n), "name": names[rng.integers(0, len(names), n)],
                         "balance": rng.integers(-500, 1000, n)})


def test_persist_publish_and_a_second_client_aggregates(client):
    pdf = accounts()
    df = xd.from_pandas(pdf, npartitions=6)
    df2 = df[df.balance < 0]
    df2 = client.persist(df2)
    pd.testing.assert_frame_equal(df2.head(), pdf[pdf.balance < 0].head())
    client.publish_dataset(accounts=df2)
    try:
        with Client(client.scheduler_address, set_as_default=False) as other:
            got = other.get_dataset("accounts")
            assert got.npartitions == 6
            with other.as_current():
                sums = got.groupby("name").balance.sum().compute()
            pd.testing.assert_series_equal(sums, pdf[pdf.balance < 0].groupby("name").balance.sum())
    finally:
        client.unpublish_dataset("accounts")


def test_merge_set_index_and_sort_run_between_workers(client):
    left = accounts(3000, 1)
    right = pd.DataFrame({"name": ["Alice", "Bob", "Carol", "Zed"], "city": ["Oslo", "Rome", "Lima", "Kyiv"]})
    lx = xd.from_pandas(left, npartitions=8)
    rx = xd.from_pandas(right, npartitions=2)
    merged = lx.merge(rx, on="name", how="left", broadcast=False).compute()
    expected = left.merge(right, on="name", how="left")
    pd.testing.assert_frame_equal(merged.sort_values("id").reset_index(drop=True),
                                  expected.sort_values("id").reset_index(drop=True))
    indexed = lx.set_index("balance")
    assert indexed.known_divisions
    pd.testing.assert_index_equal(indexed.index.compute(), left.set_index("balance").sort_index().index)
    assert lx.sort_values("balance").balance.compute().tolist() == sorted(left.balance)
    by_name = lx.groupby("name").balance.agg(["mean", "count"], split_out=2).compute().sort_index()
    pd.testing.assert_frame_equal(by_name, left.groupby("name").balance.agg(["mean", "count"]))


def test_reductions_run_as_one_tree_on_the_workers(client):
    # the joint tasks travel to other processes: whole partitions and picked columns alike
    pdf = accounts(1500, 2)
    df = xd.from_pandas(pdf, npartitions=6)
    pd.testing.assert_frame_equal(df.describe().compute(), pdf.describe())
    series = xd.from_pandas(pdf.balance, npartitions=5)
    pd.testing.assert_series_equal(series.agg(["sum", "mean", "max"]).compute(),
                                   pdf.balance.agg(["sum", "mean", "max"]), check_dtype=False)
    pd.testing.assert_frame_equal(df[["id", "balance"]].agg(["min", "std"]).compute(),
                                  pdf[["id", "balance"]].agg(["min", "std"]), check_dtype=False)


def test_reductions_computed_together_share_one_tree_on_the_cluster(client):
    pdf = accounts(1500, 2)
    df = xd.from_pandas(pdf, npartitions=6)
    with xsched.get_task_stream(client) as stream:
        got = xsched.compute(df.balance.sum(), df.id.max(), df.balance.std())
    assert got == pytest.approx((pdf.balance.sum(), pdf.id.max(), pdf.balance.std()))
    groups = [r["key"].rsplit("-", 2)[0] for r in stream.data]
    assert groups.count("joint-chunk") == 6 and not [g for g in groups if g in ("sum-chunk", "max-chunk", "std-chunk")]


def test_distinct_values_counted_and_kept_in_shares_between_workers(client):
    pdf = accounts(3000, 4)
    pdf["id"] = pdf["id"] % 1700
    df = xd.from_pandas(pdf, npartitions=6)
    with xsched.get_task_stream(client) as stream:
        count = df.id.nunique().compute()
    assert count == 1700
    groups = [r["key"].rsplit("-", 2)[0] for r in stream.data]
    assert groups.count("nunique-shares-chunk") == 6  # (one share per partition, each counted apart)
    counts = df.id.value_counts(split_out=3).compute()
    pd.testing.assert_series_equal(counts.sort_index(), pdf.id.value_counts().sort_index())
    assert sorted(df.name.unique(split_out=2).compute()) == sorted(pdf.name.unique())
    kept = df.drop_duplicates(subset=["id"], keep="last")  # (rows kept in place, through two exchanges)
    pd.testing.assert_frame_equal(kept.compute(), pdf.drop_duplicates(subset=["id"], keep="last"))
    assert kept.npartitions == 6


def test_merge_asof_and_repartition_along_divisions_between_workers(client):
    left, right = accounts(3000, 2), accounts(1000, 3)
    right["id"] = right["id"] * 3 + 1
    lx, rx = xd.from_pandas(left, npartitions=6), xd.from_pandas(right, npartitions=4)
    got = xd.merge_asof(lx, rx, on="id", by="name", direction="nearest").compute()
    pd.testing.assert_frame_equal(got.reset_index(drop=True),  # (the right's ints as floats: see merge_asof)
                                  pd.merge_asof(left, right, on="id", by="name", direction="nearest"),
                                  check_dtype=False)
    assert got.balance_y.dtype == np.float64
    cut = lx.set_index("id", sorted=True).repartition(divisions=[0, 100, 2000, 2999])
    assert [len(cut.partitions[i]) for i in range(3)] == [100, 1900, 1000]
    pd.testing.assert_frame_equal(cut.compute(), left.set_index("id"))


def _hold_last(part, gate, last_id):
    """The partition holding ``last_id`` waits at the gate: the rest of the shuffle's splits
    finish and sit in worker memory meanwhile."""
    return gate.wait(part) if last_id in set(part.id) else part


def test_time_series_methods_between_workers(client):
    """interpolate and expanding (every partition's ends or totals shared out by one task),
    sort_index through the shuffle, agg and describe, on worker processes."""
    rng = np.random.default_rng(3)
    pdf = pd.DataFrame({"x": rng.normal(size=300), "n": rng.integers(0, 9, 300)},
                       index=pd.date_range("2024-01-01", periods=300, freq="min"))
    pdf.iloc[rng.integers(0, 300, 60), 0] = np.nan
    df = xd.from_pandas(pdf, npartitions=7)
    pd.testing.assert_frame_equal(df.interpolate(method="time").compute(), pdf.interpolate(method="time"),
                                  check_freq=False)
    pd.testing.assert_frame_equal(df.expanding(min_periods=2).std().compute(), pdf.expanding(min_periods=2).std(),
                                  check_freq=False, rtol=1e-9)
    shuffled = xd.from_pandas(pdf.sample(frac=1, random_state=0), npartitions=5, sort=False)
    pd.testing.assert_frame_equal(shuffled.sort_index().compute(), pdf, check_freq=False)
    pd.testing.assert_frame_equal(df.agg({"x": ["min", "max"], "n": "sum"}).compute(),
                                  pdf.agg({"x": ["min", "max"], "n": "sum"}))
    pd.testing.assert_frame_equal(df.describe().compute(), pdf.describe(), rtol=1e-3)  # (quantiles: a sample)
    for adjust in (True, False):  # (weighted sums, or the mean, carried from partition to partition)
        pd.testing.assert_frame_equal(df.ewm(span=9, adjust=adjust).mean().compute(),
                                      pdf.ewm(span=9, adjust=adjust).mean(), check_freq=False, rtol=1e-9)
    pd.testing.assert_series_equal(df.groupby("n").ngroup().compute(), pdf.groupby("n").ngroup(), check_freq=False)
    pd.testing.assert_series_equal(df.index.hour.value_counts().compute(), pdf.index.hour.value_counts())


def test_a_worker_dying_mid_shuffle_still_gives_the_exact_result(own_cluster, tmp_path):
    cluster = own_cluster(n_workers=2)
    with Client(cluster, set_as_default=False) as client:
        pdf = accounts(4000, 2)
        df = xd.from_pandas(pdf, npartitions=10)
        gate = Gate(tmp_path)
        held = df.map_partitions(_hold_last, gate, int(pdf.id.iloc[-1]), meta=df._meta)
        future = client.compute(held.shuffle("name", npartitions=6).groupby("name").balance.sum())
        # the held partition runs on one worker; the other holds split pieces of the shuffle
        busy = wait_until(lambda: {w for w, ks in client.processing().items() if ks} or None,
                          msg="the held partition running")
        wait_until(lambda: len(client.has_what()) == 2 and all(client.has_what().values()) or None,
                   msg="both workers holding shuffle pieces")
        holders = set(client.has_what())
        pid = kill_worker(client, sorted(holders - busy or holders)[0])
        gate.open()
        result = future.result(timeout=90)
        pd.testing.assert_series_equal(result, pdf.groupby("name").balance.sum())
        assert pid_gone(pid)
