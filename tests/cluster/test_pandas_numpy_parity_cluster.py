"""What the unit tier checks against pandas and NumPy in one process, on worker processes:
a hive-partitioned parquet dataset read with a key filter, groupby(observed=False) through the
p2p shuffle, nlargest(keep="last"), rolling(step=), cut and qcut, and x[index] = value on
arrays."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import xsched.array as xa
import xsched.dataframe as xd

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(120)]


def _frame(n: int = 400, seed: int = 3) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"x": np.arange(n), "year": rng.choice([2020, 2021, 2022], n),
                         "c": pd.Categorical(rng.choice(["lo", "hi", None], n), categories=["lo", "mid", "hi"]),
                         "v": rng.normal(size=n).round(3)})


def test_dataframe_parity_on_workers(client, tmp_path):
    pdf = _frame()
    df = xd.from_pandas(pdf, npartitions=5)
    paths = df.drop(columns="c").to_parquet(tmp_path / "ds", partition_on="year")
    assert len({p.split("year=")[1].split("/")[0] for p in paths}) == 3
    back = xd.read_parquet(str(tmp_path / "ds"), filters=[("year", ">=", 2021)])
    got = back.compute().sort_values("x")
    expected = pdf[pdf.year >= 2021]
    assert got.x.tolist() == expected.x.tolist() and got.v.tolist() == expected.v.tolist()

    medians = df.groupby("c", observed=False, dropna=False).v.median().compute()  # (p2p on a cluster)
    pd.testing.assert_series_equal(medians, pdf.groupby("c", observed=False, dropna=False).v.median(),
                                   check_index_type=False)
    top = df.year.nlargest(7, keep="last").compute()
    pd.testing.assert_series_equal(top, pdf.year.nlargest(7, keep="last"))
    stepped = df.v.rolling(4, step=3).mean().compute()
    pd.testing.assert_series_equal(stepped, pdf.v.rolling(4, step=3).mean())


def test_cut_and_qcut_on_workers(client):
    pdf = _frame()
    df = xd.from_pandas(pdf, npartitions=5)
    pd.testing.assert_series_equal(xd.cut(df.v, 6).compute(), pd.cut(pdf.v, 6))
    pd.testing.assert_series_equal(xd.qcut(df.v, 4, labels=list("abcd")).compute(), pd.qcut(pdf.v, 4, labels=list("abcd")))
    counts = xd.qcut(df.v, 4).value_counts().compute().sort_index()
    pd.testing.assert_series_equal(counts, pd.qcut(pdf.v, 4).value_counts().sort_index())


def test_array_assignment_on_workers(client):
    a = np.random.default_rng(1).normal(size=(60, 40))
    x = xa.from_array(a, chunks=(16, 12))
    x[x < -1] = -1
    x[5:50:3, ::-2] = np.arange(20.0)
    x[:, 7] = x[:, 8] * 2
    expected = a.copy()
    expected[expected < -1] = -1
    expected[5:50:3, ::-2] = np.arange(20.0)
    expected[:, 7] = expected[:, 8] * 2
    np.testing.assert_allclose(x.compute(), expected)
