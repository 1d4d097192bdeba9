"""Methods installed on the collections by their modules are named after what a user calls,
so Python's own errors say which method refused an argument."""

from __future__ import annotations

import inspect

import pandas as pd
import pytest

import xsched.dataframe as xd
from xsched.dataframe import core, groupby


def test_no_installed_method_keeps_the_name_of_the_function_that_made_it():
    for cls in (core.DataFrame, core.Series, core.Index, core.Scalar, groupby.GroupBy, groupby.SeriesGroupBy):
        for attr, value in vars(cls).items():
            func = value.fget if isinstance(value, property) else value
            if inspect.isfunction(func):
                assert "<locals>" not in func.__qualname__, (cls.__name__, attr, func.__qualname__)


def test_an_unknown_keyword_names_the_method():
    df = xd.from_pandas(pd.DataFrame({"a": [1, 2], "b": [1.0, 2.0]}), npartitions=1)
    with pytest.raises(TypeError, match=r"^DataFrame\.merge\(\) got an unexpected keyword argument 'nonsense'"):
        df.merge(df, on="a", nonsense=True)
    with pytest.raises(TypeError, match=r"^GroupBy\.sum\(\) got an unexpected keyword argument 'nonsense'"):
        df.groupby("a").sum(nonsense=True)
