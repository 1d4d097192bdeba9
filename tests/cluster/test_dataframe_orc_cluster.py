"""read_orc / to_orc on a real cluster: the workers write and read the files on the local
disk, compared with pandas (on S3: test_dataframe_s3.py)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import xsched.dataframe as xd
from xsched.dataframe.orc import read_orc, to_orc

pytest.importorskip("pyarrow.orc")

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(60)]


def _frame(n: int = 400) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    return pd.DataFrame({"x": rng.normal(size=n).round(5), "name": rng.choice(["ann", "bob", "cy"], n),
                         "when": pd.date_range("2024-01-01", periods=n, freq="min").astype("datetime64[ns]")},
                        index=pd.Index(np.arange(n) * 2, name="id"))


def test_orc_written_and_read_by_the_workers(client, tmp_path):
    frame = _frame()
    ddf = xd.from_pandas(frame, npartitions=4)
    paths = to_orc(ddf[ddf.x > -5], str(tmp_path))
    assert [p.rsplit("/", 1)[-1] for p in paths] == [f"part.{i}.orc" for i in range(4)]
    pd.testing.assert_frame_equal(pd.read_orc(paths[1]), frame.iloc[100:200].reset_index()[["x", "name", "when", "id"]])
    df = read_orc(str(tmp_path), index="id", split_stripes=False)
    pd.testing.assert_frame_equal(df.compute(), frame)
    sums = df[df.x > 0].groupby("name").x.sum().compute()
    pd.testing.assert_series_equal(sums, frame[frame.x > 0].groupby("name").x.sum())
