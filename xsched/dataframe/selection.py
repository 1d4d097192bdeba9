"""Choosing columns of a window or bin object: ``df.rolling(3)["x"]``, ``[["x", "y"]]`` or
``.x``, as pandas lets ``rolling``, ``expanding``, ``ewm`` and ``resample`` do. The object is
the same windows over the selected columns, so it is a copy whose frame is those columns.

>>> import pandas as pd, xsched.dataframe as xd
>>> df = xd.from_pandas(pd.DataFrame({"x": [1.0, 2, 3], "y": 0.0}), npartitions=2)
>>> df.rolling(2)["x"].sum().compute().tolist(), df.expanding().x.max().compute().tolist()
([nan, 3.0, 5.0], [1.0, 2.0, 3.0])
"""

from __future__ import annotations

from typing import Any

from .core import DataFrame


class SelectsColumns:
    """A mixin for objects holding the frame they run on as ``_frame``; ``_label`` names
    the object in messages (``"rolling(...)"``)."""

    _label = "windows"

    def __getitem__(self, key: Any):
        """The same windows over some columns: a name gives a Series' windows, a list a
        DataFrame's.

        >>> import pandas as pd, xsched.dataframe as xd
        >>> df = xd.from_pandas(pd.DataFrame({"x": [1.0, 2, 3], "y": 0.0}), npartitions=2)
        >>> df.ewm(alpha=0.5)[["x"]].mean().compute().x.round(3).tolist()
        [1.0, 1.667, 2.429]
        """
        frame = self.__dict__.get("_frame")
        if not isinstance(frame, DataFrame):
            raise TypeError(f"{self._label}[{key!r}]: a Series' {self._label} have no columns to select; "
                            "select before, as in df[column].rolling(...)")
        chosen = type(self).__new__(type(self))
        chosen.__dict__.update(self.__dict__, _frame=frame[key])  # (frame[key] names a missing column)
        return chosen

    def _column_or_none(self, name: str):
        """``self[name]`` when ``name`` is one of the frame's columns (``df.rolling(2).x``),
        else None: for a ``__getattr__`` to fall back to its own message."""
        frame = self.__dict__.get("_frame")
        if name.startswith("_") or not isinstance(frame, DataFrame) or name not in frame.columns:
            return None
        return self[name]
