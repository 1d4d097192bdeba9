"""read_hdf / to_hdf on a real cluster: the workers write HDF5 stores (a file per partition, and
one file appended partition after partition) and read them back in pieces. The in-process
tests: tests/unit/test_dataframe_hdf.py."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import xsched.dataframe as xd
from xsched import Lock

pytest.importorskip("tables")

from xsched.dataframe.hdf import read_hdf, to_hdf  # noqa: E402

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(60)]


def test_hdf_stores_written_and_read_by_the_workers(client, tmp_path):
    rng = np.random.default_rng(0)
    pdf = pd.DataFrame({"s": rng.choice(["ann", "bo", "cyrille"], 200), "f": rng.normal(size=200),
                        "t": pd.date_range("2024-01-01", periods=200, freq="h")})
    df = xd.from_pandas(pdf, npartitions=5)
    files = to_hdf(df, str(tmp_path / "part-*.h5"), "data", lock=Lock("hdf-test"))
    assert files == [str(tmp_path / f"part-{i}.h5") for i in range(5)]
    assert to_hdf(df, str(tmp_path / "one.h5"), "/data", min_itemsize={"s": 8}) == [str(tmp_path / "one.h5")] * 5
    pd.testing.assert_frame_equal(pd.read_hdf(tmp_path / "one.h5", "data"), pdf)
    back = read_hdf(str(tmp_path / "part-*.h5"), "data", chunksize=15, sorted_index=True)
    assert back.known_divisions and back.npartitions == 5 * 3
    pd.testing.assert_frame_equal(back.compute(), pdf)
    single = read_hdf(str(tmp_path / "one.h5"), "data", chunksize=30)
    pd.testing.assert_series_equal(single.groupby("s").f.sum().compute().sort_index(),
                                   pdf.groupby("s").f.sum())
