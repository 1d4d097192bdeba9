"""A frame's rows as an ``xsched.bag`` Bag: ``df.to_bag()``, a partition of Python objects per
partition of rows (tuples, or dicts with ``format="dict"``; a Series' values), so that
per-row Python code, ``groupby`` of objects or text output can follow. Importing this
module gives ``DataFrame`` and ``Series`` the method.

>>> import pandas as pd, xsched.dataframe as xd
>>> df = xd.from_pandas(pd.DataFrame({"a": [1, 2], "b": ["x", "y"]}), npartitions=2)
>>> df.to_bag().compute(), df.to_bag(index=True, format="dict").compute()
([(1, 'x'), (2, 'y')], [{'index': 0, 'a': 1, 'b': 'x'}, {'index': 1, 'a': 2, 'b': 'y'}])
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from ..graph.layers import LayeredGraph, annotations_in_force, chunk_key, new_token, per_task
from ..graph.spec import Ref, Task
from .core import DataFrame, Series, _Frame

__all__ = ["to_bag"]


def _rows(part: Any, index: bool, format: str) -> list:
    if isinstance(part, pd.Series):
        return list(part.items()) if index else part.tolist()
    if format == "dict":
        frame = part.reset_index() if index else part
        return frame.to_dict(orient="records")
    return list(part.itertuples(index=index, name=None))


def to_bag(frame: _Frame, index: bool = False, format: str = "tuple") -> Any:
    """The rows as a bag, a list per partition: tuples (``format="tuple"``) or dicts by column
    (``"dict"``), with the index first when ``index`` (a Series gives its values, or
    ``(label, value)`` pairs with ``index``).

    >>> import pandas as pd, xsched.dataframe as xd
    >>> xd.from_pandas(pd.Series([3, 4], name="v"), npartitions=1).to_bag(index=True).compute()
    [(0, 3), (1, 4)]
    """
    from ..bag.core import Bag  # (the bag collection, only when asked for)

    if format not in ("tuple", "dict"):
        raise ValueError(f"to_bag: format must be 'tuple' or 'dict', got {format!r}")
    name = f"to-bag-{new_token(frame._name, index, format)}"
    ann = annotations_in_force()
    layer = {chunk_key(name, (i,)): Task(_rows, (Ref(k), bool(index), format), {}, per_task(ann))
             for i, k in enumerate(frame._keys())}
    return Bag(LayeredGraph.merge(frame._graph, new={name: layer}), name, frame.npartitions)


for _cls in (DataFrame, Series):
    _cls.to_bag = to_bag  # type: ignore[attr-defined]
