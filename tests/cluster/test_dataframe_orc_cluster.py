"""read_orc / to_orc on a real cluster: the workers write and read the files, on the local
disk and on S3 (moto's server on loopback), compared with pandas."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import xsched.dataframe as xd
from xsched.dataframe.orc import read_orc, to_orc

pytest.importorskip("pyarrow.orc")

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(60)]

BUCKET = "xsched-orc"


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


def test_orc_on_s3(client):
    pytest.importorskip("moto")
    s3fs = pytest.importorskip("s3fs")
    boto3 = pytest.importorskip("boto3")
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        url = f"http://{host}:{port}"
        boto3.client("s3", endpoint_url=url, aws_access_key_id="x", aws_secret_access_key="x",
                     region_name="us-east-1").create_bucket(Bucket=BUCKET)
        options = {"client_kwargs": {"endpoint_url": url}, "key": "x", "secret": "x"}
        frame = _frame(300)
        paths = xd.from_pandas(frame, npartitions=3).to_orc(f"s3://{BUCKET}/orc", storage_options=options)
        assert paths == [f"s3://{BUCKET}/orc/part.{i}.orc" for i in range(3)]
        back = read_orc(f"s3://{BUCKET}/orc", columns=["x"], index="id", storage_options=options)
        pd.testing.assert_frame_equal(back.compute(), frame[["x"]])
    finally:
        server.stop()
        s3fs.S3FileSystem.clear_instance_cache()
