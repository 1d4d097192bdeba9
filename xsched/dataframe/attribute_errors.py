"""What a collection says of a name it lacks: xsched's name for a dask one, the way to run a
pandas method it does not run across partitions, the names it is close to; and of an
accessor (``.str``, ``.dt``, ``.cat``) used on values it does not take. The messages are
written only when shown, so that ``hasattr`` probes stay cheap.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from .standin import _nonempty

__all__ = ["DASK_NAMES", "missing_attribute", "MissingAttribute", "ACCESSOR_VALUES", "WrongAccessor"]

#: dask's names for what xsched names otherwise
DASK_NAMES = {"to_dask_array": "to_xsched_array"}


def missing_attribute(kind: str, name: str, pandas_type: type, own_type: type, columns: list | None = None) -> str:
    """The message of an AttributeError for ``name``: xsched's name for a dask one, what to do
    about a pandas method not run across partitions here, or the names it is close to.

    >>> import xsched.dataframe as xd
    >>> missing_attribute("Series", "to_dask_array", pd.Series, xd.Series)
    "'Series' has no attribute 'to_dask_array': xsched calls it 'to_xsched_array'"
    >>> missing_attribute("DataFrame", "ammount", pd.DataFrame, xd.DataFrame, ["amount", "name"])
    "'DataFrame' has no attribute or column 'ammount' (did you mean 'amount'?); its columns are ['amount', 'name']"
    """
    what = "attribute or column" if columns is not None else "attribute"
    text = f"{kind!r} has no {what} {name!r}"
    if name in DASK_NAMES:
        return f"{text}: xsched calls it {DASK_NAMES[name]!r}"
    if hasattr(pandas_type, name):
        use = name if isinstance(getattr(pandas_type, name, None), property) else f"{name}(...)"
        if kind == "GroupBy":
            return (f"{text}: pandas' {pandas_type.__name__}.{name} is not run here; on each whole group "
                    f"(through a shuffle): .apply(lambda group: group.{use})")
        return (f"{text}: pandas' {pandas_type.__name__}.{name} is not run across partitions here. "
                f"Each partition's own: .map_partitions(lambda part: part.{use}); the whole "
                f"at once (when it fits in memory): .compute().{use}")
    import difflib

    known = [n for n in dir(own_type) if not n.startswith("_")] + [str(c) for c in columns or ()]
    close = difflib.get_close_matches(name, known, n=1)
    if close:
        text += f" (did you mean {close[0]!r}?)"
    return text + (f"; its columns are {columns}" if columns is not None else "")


class MissingAttribute(AttributeError):
    """The AttributeError of a name a collection lacks, its message (``missing_attribute``)
    written only when shown: a ``hasattr`` probe, which never shows it, stays cheap.

    >>> import xsched.dataframe as xd
    >>> str(MissingAttribute("Series", "sume", pd.Series, xd.Series))
    "'Series' has no attribute 'sume' (did you mean 'sum'?)"
    """

    def __init__(self, *details: Any) -> None:
        super().__init__()
        self._details = details

    def __str__(self) -> str:
        return missing_attribute(*self._details)

    def __reduce__(self):  # (sent elsewhere, as the plain error it reads as)
        return AttributeError, (str(self),)


#: What each accessor takes, in pandas' words, and the conversion that gives such values.
ACCESSOR_VALUES = {"str": ("string values", ".astype(str).str..."),
                   "dt": ("datetimelike values", ".astype('datetime64[ns]').dt... (text in another format: "
                          "xd.to_datetime(..., format=...))"),
                   "cat": ("categorical values", ".astype('category').cat...")}


class WrongAccessor(AttributeError):
    """``.str`` of numbers, ``.dt`` of text...: pandas' AttributeError, raised when the
    expression is built, naming the column, its dtype and the conversion to make first. (The
    accessor's property raises; Python then asks ``__getattr__``, which raises this.)

    >>> import xsched.dataframe as xd
    >>> print(WrongAccessor(xd.from_pandas(pd.DataFrame({"a": [1, 2]}), npartitions=1).a, "str"))
    .str accessor only for string values, and the column 'a' is int64 (pandas: Can only use
    .str accessor with string values, not integer); convert it first: .astype(str).str...
    """

    def __init__(self, obj: Any, kind: str) -> None:
        super().__init__()
        self._obj, self._kind = obj, kind

    def __str__(self) -> str:  # (written only when shown: a hasattr probe stays cheap)
        meta, kind = self._obj._meta, self._kind
        values, fix = ACCESSOR_VALUES[kind]
        try:
            getattr(_nonempty(meta), kind)
            said = ""
        except Exception as exc:  # (pandas' own words)
            said = f" (pandas: {exc})"
        own = "index" if isinstance(meta, pd.Index) else "column"
        which = f"the {own} {meta.name!r}" if meta.name is not None else f"this {type(self._obj).__name__}"
        return f".{kind} accessor only for {values}, and {which} is {meta.dtype}{said}; convert it first: {fix}"

    def __reduce__(self):  # (sent elsewhere, as the plain error it reads as)
        return AttributeError, (str(self),)
