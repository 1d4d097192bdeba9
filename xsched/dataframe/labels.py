"""Methods on a frame's labels that run partition by partition: ``filter`` (columns, or rows
by their index labels), ``reindex`` of the columns, ``set_axis`` of the columns,
``droplevel``, ``swaplevel`` and ``reorder_levels`` of either axis.

Every partition has the same columns, so changing them is the same change in each; rows kept
by their labels keep the divisions. Changing the index's levels gives labels the divisions no
longer bound (they are cleared); reindexing or relabelling rows would need every partition's
labels, so it is refused, naming what does it (``merge``/``join``, ``loc``, ``set_index``).

>>> import pandas as pd, xsched.dataframe as xd
>>> df = xd.from_pandas(pd.DataFrame({"temp_a": [1, 2], "temp_b": [3, 4], "x": [5, 6]}), npartitions=2)
>>> df.filter(like="temp").columns.tolist(), df.reindex(columns=["x", "y"]).compute().y.isna().all()
(['temp_a', 'temp_b'], np.True_)
"""

from __future__ import annotations

from typing import Any

from .core import DataFrame, Series, _Frame

__all__: list[str] = []


def filter_labels(self: _Frame, items: Any = None, like: str | None = None, regex: str | None = None,
           axis: Any = None):
    """The columns (or, ``axis=0``, the rows by their index labels; a Series' rows) whose
    names are among ``items``, contain ``like`` or match ``regex``, per partition.

    >>> import pandas as pd, xsched.dataframe as xd
    >>> df = xd.from_pandas(pd.DataFrame({"a1": [1, 2], "b1": [3, 4]}, index=["x", "y"]), npartitions=2)
    >>> df.filter(regex="^a").columns.tolist(), df.filter(items=["y"], axis=0).a1.tolist()
    (['a1'], [2])
    """
    return self._method("filter", items=items, like=like, regex=regex, axis=axis)


filter_labels.__name__ = "filter"


def reindex(self: _Frame, labels: Any = None, *, index: Any = None, columns: Any = None, axis: Any = None,
            fill_value: Any = None):
    """The columns ``columns`` in that order, missing ones filled (``fill_value``, else
    missing values), per partition. Reindexing rows needs every partition's labels: use
    ``loc``, ``merge``/``join`` or ``set_index`` for that.

    >>> import pandas as pd, xsched.dataframe as xd
    >>> df = xd.from_pandas(pd.DataFrame({"a": [1, 2], "b": [3, 4]}), npartitions=2)
    >>> df.reindex(columns=["b", "c"], fill_value=0).compute().to_dict("list")
    {'b': [3, 4], 'c': [0, 0]}
    """
    if labels is not None and self._axis(axis, "reindex") == 1:  # (pandas' labels are rows unless axis says columns)
        columns, labels = labels, None
    if labels is not None or index is not None:
        raise NotImplementedError("reindex of the rows needs every partition's labels; select labels with "
                                  ".loc[...] (known divisions), or align with merge/join or set_index")
    if columns is None:
        return self
    kwargs = {"columns": columns} if fill_value is None else {"columns": columns, "fill_value": fill_value}
    return self._method("reindex", **kwargs)


def set_axis(self: _Frame, labels: Any, *, axis: Any = 0):
    """New column names (``axis=1``), per partition. New row labels would have to be cut
    to each partition's rows, which are not known when built: refused (``set_index`` with a
    column, or ``reset_index``, relabel rows).

    >>> import pandas as pd, xsched.dataframe as xd
    >>> df = xd.from_pandas(pd.DataFrame({"a": [1], "b": [2]}), npartitions=1)
    >>> df.set_axis(["x", "y"], axis=1).columns.tolist()
    ['x', 'y']
    """
    if self._axis(axis, "set_axis", none=False) == 0:
        raise NotImplementedError("set_axis(axis=0): a partition's rows are not known when built; relabel rows "
                                  "with set_index(<column>) or reset_index()")
    return self._method("set_axis", labels, axis=1)


def _levels(method: str, doc: str):
    def run(self: _Frame, *args: Any, axis: Any = 0, **kwargs: Any):
        number = self._axis(axis, method, none=False)
        if isinstance(self, DataFrame):  # (a Series has rows only: pandas' swaplevel takes no axis there)
            kwargs["axis"] = axis
        out = self._method(method, *args, **kwargs)
        return out.clear_divisions() if number == 0 else out  # (new row labels: see the module)

    run.__name__, run.__doc__ = method, doc
    return run


_LEVELS = {
    "droplevel": ("Drop levels of a MultiIndex of the rows (or, ``axis=1``, of the columns), per partition.\n\n"
                  ">>> import pandas as pd, xsched.dataframe as xd\n"
                  ">>> pdf = pd.DataFrame({'v': [1, 2]}, index=pd.MultiIndex.from_tuples([('a', 1), ('b', 2)]))\n"
                  ">>> xd.from_pandas(pdf, npartitions=1).droplevel(0).compute().index.tolist()\n[1, 2]"),
    "swaplevel": ("Swap two levels of a MultiIndex of the rows (or, ``axis=1``, of the columns), per partition.\n\n"
                  ">>> import pandas as pd, xsched.dataframe as xd\n"
                  ">>> pdf = pd.DataFrame({'v': [1, 2]}, index=pd.MultiIndex.from_tuples([('a', 1), ('b', 2)]))\n"
                  ">>> xd.from_pandas(pdf, npartitions=1).swaplevel().compute().index.tolist()\n"
                  "[(1, 'a'), (2, 'b')]"),
    "reorder_levels": ("The levels of a MultiIndex of the rows (or, ``axis=1``, of the columns) in a new order, "
                       "per partition.\n\n>>> import pandas as pd, xsched.dataframe as xd\n"
                       ">>> pdf = pd.DataFrame({'v': [1]}, index=pd.MultiIndex.from_tuples([('a', 1, True)]))\n"
                       ">>> xd.from_pandas(pdf, npartitions=1).reorder_levels([2, 0, 1]).compute().index.tolist()\n"
                       "[(True, 'a', 1)]"),
}

for _cls in (DataFrame, Series):
    _cls.filter = filter_labels  # type: ignore[attr-defined]
    for _name, _doc in _LEVELS.items():
        setattr(_cls, _name, _levels(_name, _doc))
DataFrame.reindex = reindex  # type: ignore[attr-defined]
DataFrame.set_axis = set_axis  # type: ignore[attr-defined]
