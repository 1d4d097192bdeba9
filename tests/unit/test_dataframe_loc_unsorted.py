"""``loc[label]`` where the divisions are unknown and each partition's index is unsorted:
every partition is asked for the label's rows, and one that lacks it gives none."""

import numpy as np
import pandas as pd
import pandas.testing as tm
import pytest

import xsched.dataframe as xd

RNG = np.random.default_rng(7)
PDF = pd.DataFrame({"x": np.arange(24), "y": RNG.random(24)}, index=pd.Index(RNG.permutation(24) * 3, name="u"))


@pytest.mark.parametrize("npartitions", [1, 3, 5])
@pytest.mark.parametrize("label", [PDF.index[0], PDF.index[17], 30])
def test_loc_of_one_label_on_unsorted_partitions(npartitions, label):
    x = xd.from_pandas(PDF, npartitions=npartitions, sort=False)
    assert not x.known_divisions
    tm.assert_frame_equal(x.loc[label].compute(), PDF.loc[[label]])


def test_loc_of_a_repeated_label_and_of_a_missing_one():
    pdf = pd.concat([PDF, PDF.iloc[[3, 10]]])
    x = xd.from_pandas(pdf, npartitions=4, sort=False)
    tm.assert_frame_equal(x.loc[pdf.index[3]].compute(), pdf.loc[[pdf.index[3]]])
    assert len(x.loc[1].compute()) == 0  # (no row labelled 1: every label is a multiple of 3)


def test_loc_of_a_day_on_sorted_times_keeps_partial_dates():
    pdf = pd.DataFrame({"v": range(48)}, index=pd.date_range("2000-01-01", periods=48, freq="h"))
    x = xd.from_pandas(pdf, npartitions=5)
    tm.assert_frame_equal(x.loc["2000-01-02"].compute(), pdf.loc["2000-01-02"], check_freq=False)
