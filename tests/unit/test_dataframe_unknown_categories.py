"""Results holding values of a categorical whose categories are unknown (``astype("category")``:
each partition finds its own) keep those values: cast to the meta's dtype, whose one category
is a marker, every value became missing (``mode``, a grouped ``shift``, ``resample``)."""

import numpy as np
import pandas as pd

import xsched.dataframe as xd

RNG = np.random.default_rng(0)
PDF = pd.DataFrame({"c": RNG.choice(list("pqrs"), 60), "k": RNG.choice(list("ab"), 60), "n": RNG.integers(0, 9, 60),
                    "t": pd.date_range("2024", periods=60, freq="h")})
WANT = PDF.astype({"c": "category"})


def _unknown():
    df = xd.from_pandas(PDF, npartitions=4).astype({"c": "category"})
    assert not df.c.cat.known
    return df


def test_mode_of_unknown_categories_keeps_the_values():
    pd.testing.assert_series_equal(_unknown().c.mode().compute(), WANT.c.mode())
    pd.testing.assert_frame_equal(_unknown()[["c", "n"]].mode().compute(), WANT[["c", "n"]].mode())


def test_a_grouped_shift_of_unknown_categories_keeps_the_values():
    got = _unknown().groupby("k").c.shift(1).compute()
    pd.testing.assert_series_equal(got.astype(str), WANT.groupby("k").c.shift(1).astype(str))


def test_resample_of_unknown_categories_keeps_the_values():
    got = _unknown().set_index("t").c.resample("5h").first().compute()
    pd.testing.assert_series_equal(got.astype(str), WANT.set_index("t").c.resample("5h").first().astype(str))
