"""``convert_dtypes`` and ``infer_objects``, whose dtypes depend on the values: every
partition is looked at when called, and a column takes the dtype that holds every
partition's, so that all partitions agree with each other and with pandas on the whole."""

import pandas as pd
import pandas.testing as tm
import pytest

import xsched.dataframe as xd

FRAMES = {
    "floats": pd.DataFrame({"whole": [1.0, 2.0, None] * 4, "frac": [1.0, 2.5, None] * 4, "i": range(12)}),
    "objects": pd.DataFrame({"ints": pd.Series([1, 2, 3] * 4, dtype=object),
                             "mixed": pd.Series([1, "a", None] * 4, dtype=object),
                             "bools": pd.Series([True, False, None] * 4, dtype=object), "s": ["x", "y", None] * 4}),
    "one partition decides": pd.DataFrame({"late": [1.0] * 11 + [1.5], "early": [1.5] + [1.0] * 11,
                                           "b": [True, False] * 6}),
    "more objects": pd.DataFrame({"floats": pd.Series([1.0, 2, 3.5] * 4, dtype=object),
                                  "times": pd.Series(list(pd.date_range("2000", periods=12)), dtype=object),
                                  "ints with None": pd.Series([1, None, 2, 3] * 3, dtype=object)}),
}
CALLS = [("infer_objects", {}), ("convert_dtypes", {}), ("convert_dtypes", {"dtype_backend": "pyarrow"})]


@pytest.mark.parametrize("npartitions", [1, 2, 4])
@pytest.mark.parametrize("frame", sorted(FRAMES))
@pytest.mark.parametrize("call", range(len(CALLS)))
def test_inferred_dtypes_as_pandas_on_the_whole(frame, npartitions, call):
    method, kwargs = CALLS[call]
    pdf = FRAMES[frame]
    x = getattr(xd.from_pandas(pdf, npartitions=npartitions), method)(**kwargs)
    expected = getattr(pdf, method)(**kwargs)
    assert x.dtypes.to_dict() == expected.dtypes.to_dict()  # (known when built)
    tm.assert_frame_equal(x.compute(), expected)
    column = pdf.columns[0]
    tm.assert_series_equal(getattr(xd.from_pandas(pdf[column], npartitions=npartitions), method)(**kwargs).compute(),
                           getattr(pdf[column], method)(**kwargs))


def test_a_keyword_pandas_refuses_is_refused_when_called():
    x = xd.from_pandas(FRAMES["floats"], npartitions=2)
    with pytest.raises(ValueError):
        x.convert_dtypes(dtype_backend="numpy")
