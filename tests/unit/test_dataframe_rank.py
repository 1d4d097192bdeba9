"""rank over all partitions against pandas: every tie method, both directions, fractions,
missing values, text; a frame's columns and its rows (axis=1); the options refused."""

import numpy as np
import pandas as pd
import pytest

import xsched.dataframe as xd


@pytest.mark.parametrize("seed", range(3))
def test_rank_across_partitions_like_pandas(seed):
    rng = np.random.default_rng(seed)
    for _ in range(4):
        n = int(rng.integers(1, 50))
        values = rng.integers(0, 8, n).astype(float)
        values[rng.random(n) < 0.2] = np.nan
        pdf = pd.DataFrame({"v": values, "s": rng.choice(["a", "b", "c"], n), "i": rng.integers(-3, 3, n)},
                           index=rng.permutation(500)[:n])
        df = xd.from_pandas(pdf, npartitions=int(rng.integers(1, 6)), sort=False)
        for method in ("average", "min", "max", "first", "dense"):
            for ascending in (True, False):
                for pct in (False, True):
                    kwargs = dict(method=method, ascending=ascending, pct=pct)
                    out = df.v.rank(**kwargs)
                    assert out.divisions == df.divisions
                    pd.testing.assert_series_equal(out.compute(), pdf.v.rank(**kwargs))
        pd.testing.assert_frame_equal(df.rank().compute(), pdf.rank())
        pd.testing.assert_frame_equal(df.rank(numeric_only=True, method="min").compute(),
                                      pdf.rank(numeric_only=True, method="min"))
        pd.testing.assert_frame_equal(df[["v", "i"]].rank(axis=1).compute(), pdf[["v", "i"]].rank(axis=1))


def test_rank_refuses_what_it_does_not_run():
    s = xd.from_pandas(pd.Series([1.0, None, 2.0]), npartitions=2)
    with pytest.raises(NotImplementedError, match="fillna"):
        s.rank(na_option="top")
    with pytest.raises(ValueError, match="method must be one of"):
        s.rank(method="middle")
