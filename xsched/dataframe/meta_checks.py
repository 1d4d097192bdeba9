"""A partition checked against the meta announced for it, on the worker that made it: its
type and columns (and, for ``from_delayed(verify_meta=True)``, its dtypes and a Series'
name, alike as dask's check has them), so that a function returning something else fails
naming the partition, instead of the pieces disagreeing later.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

__all__ = ["_check_meta"]


def _alike(found: Any, wanted: Any) -> bool:
    """Whether a partition's dtype agrees with meta's, as dask's meta check has it: numbers
    with numbers (an integer column with a missing value is float), categoricals with
    categoricals, text with text (objects or strings), else equal.

    >>> import numpy as np
    >>> _alike(np.dtype("int64"), np.dtype("float64")), _alike(np.dtype("int64"), pd.StringDtype())
    (True, False)
    """
    if found == wanted:
        return True
    if isinstance(found, pd.CategoricalDtype) or isinstance(wanted, pd.CategoricalDtype):
        return isinstance(found, pd.CategoricalDtype) and isinstance(wanted, pd.CategoricalDtype)
    kinds = (getattr(found, "kind", ""), getattr(wanted, "kind", ""))
    if all(k in "iuf" and k for k in kinds):
        return True
    def text(d: Any) -> bool:
        return d == object or isinstance(d, pd.StringDtype)
    return text(found) and text(wanted)


def _check_meta(part: Any, meta: Any, what: str, index: int, dtypes: bool = False) -> Any:
    """Run on the workers: a partition's type and columns must be those announced by meta
    (``dtypes``: and its dtypes, ``_alike``, and Series name, as ``from_delayed`` checks them)."""
    if isinstance(meta, (pd.DataFrame, pd.Series, pd.Index)):
        if type(part) is not type(meta):
            raise TypeError(f"{what}: partition {index} is a {type(part).__name__} but meta says "
                            f"{type(meta).__name__}; fix the function or its meta=")
        if isinstance(meta, pd.DataFrame) and list(part.columns) != list(meta.columns):
            raise ValueError(f"{what}: partition {index} has columns {list(part.columns)} but meta "
                             f"says {list(meta.columns)}; fix the function or its meta=")
        if dtypes:
            found = part.dtypes.items() if isinstance(meta, pd.DataFrame) else [(meta.name, part.dtype)]
            wanted = dict(meta.dtypes.items()) if isinstance(meta, pd.DataFrame) else {meta.name: meta.dtype}
            differ = [f"{c!r} is {d}, not {wanted[c]}" for c, d in found if not _alike(d, wanted[c])]
            if not isinstance(meta, pd.DataFrame) and part.name != meta.name:
                differ.append(f"it is named {part.name!r}, not {meta.name!r}")
            if differ:
                raise ValueError(f"{what}: partition {index} does not match meta: {'; '.join(differ)}; give meta= "
                                 "what the partitions hold (or cast them), or verify_meta=False")
    return part
