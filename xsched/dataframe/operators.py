"""pandas' other spellings of operations the collections have: ``add``, ``eq``... and aliases.

The named operator methods (``df.add(other, fill_value=0)``, ``s.lt(3)``...) take the same
keywords as pandas' (``fill_value``, ``axis``, ``level``) and run partition by partition, an
``other`` collection partitioned alike (as for ``+``). ``isnull``/``notnull`` are ``isna``/
``notna``, ``product`` is ``prod``, and ``pipe`` calls a function with the collection.

>>> import pandas as pd, xsched.dataframe as xd
>>> a = xd.from_pandas(pd.Series([1.0, None, 3.0]), npartitions=2)
>>> a.add(5, fill_value=10).tolist(), a.isnull().sum().compute()
([6.0, 15.0, 8.0], np.int64(1))
"""

from __future__ import annotations

from typing import Any, Callable

from .core import DataFrame, Series, _Frame

__all__: list[str] = []

#: pandas' named binary operators, each the operator it spells
OPERATORS = ("add", "sub", "mul", "div", "truediv", "floordiv", "mod", "pow", "radd", "rsub", "rmul", "rdiv",
             "rtruediv", "rfloordiv", "rmod", "rpow", "eq", "ne", "lt", "le", "gt", "ge")


def _operator(name: str) -> Callable:
    def method(self, other: Any, *args: Any, **kwargs: Any):
        return self._method(name, other, *args, **kwargs)
    method.__name__ = name
    method.__doc__ = (f"``{name}`` as pandas' (``fill_value=``, ``axis=``, ``level=``), partition by "
                      f"partition; a collection ``other`` must be partitioned alike.\n\n"
                      f">>> import pandas as pd, xsched.dataframe as xd\n"
                      f">>> s = pd.Series([1.0, None, 3.0])\n"
                      f">>> xd.from_pandas(s, npartitions=2).{name}(2, fill_value=1).tolist() == "
                      f"s.{name}(2, fill_value=1).tolist()\nTrue")
    return method


def pipe(self, func: Any, *args: Any, **kwargs: Any):
    """``func(self, *args, **kwargs)``; ``func`` may be ``(callable, keyword)``, the keyword
    naming the argument that receives the collection, as pandas' ``pipe``.

    >>> import pandas as pd, xsched.dataframe as xd
    >>> xd.from_pandas(pd.Series([1, 2]), npartitions=1).pipe(lambda s, k: s * k, 3).tolist()
    [3, 6]
    """
    if isinstance(func, tuple):
        func, target = func
        if target in kwargs:
            raise ValueError(f"pipe: {target!r} is both the pipe target and a keyword argument")
        kwargs[target] = self
        return func(*args, **kwargs)
    return func(self, *args, **kwargs)


def _install() -> None:
    for name in OPERATORS:
        setattr(_Frame, name, _operator(name))
    _Frame.divide = _Frame.div  # type: ignore[attr-defined]
    _Frame.pipe = pipe  # type: ignore[attr-defined]

    def isnull(self):
        """Which values are missing (``isna``)."""
        return self.isna()

    def notnull(self):
        """Which values are present (``notna``)."""
        return self.notna()

    def product(self, *args: Any, **kwargs: Any):
        """The product (``prod``)."""
        return self.prod(*args, **kwargs)

    for cls in (DataFrame, Series):
        for f in (isnull, notnull, product):
            setattr(cls, f.__name__, f)


_install()
