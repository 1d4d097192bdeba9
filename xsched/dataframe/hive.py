"""Hive-partitioned datasets: parquet files inside ``key=value`` folders.

Why this room: pandas, pyarrow, Spark and dask write ``partition_cols`` / ``partition_on``
as one folder level per column and keep those columns out of the files
(``year=2021/part.0.parquet``). Reading such a dataset back means finding the files under
the folders, giving each file's rows its folders' values as categorical columns, and
skipping whole folders that ``filters=`` rule out before any task exists; writing one
means splitting each partition by those columns' values. The parquet reader and writer
(``parquet.py``) call these; nothing here reads a file's contents.

Folder values are URI-escaped (``a b`` is ``a%20b``) and a missing value is
``__HIVE_DEFAULT_PARTITION__``, as pyarrow writes them; values that are all integers read
back as integers, the others as strings, as pandas reads them.

>>> import os, tempfile, pandas as pd, xsched.dataframe as xd
>>> pdf = pd.DataFrame({"year": [2020, 2020, 2021], "v": [1.0, 2.0, 3.0]})
>>> with tempfile.TemporaryDirectory() as d:
...     _ = xd.from_pandas(pdf, npartitions=2).to_parquet(d, partition_on=["year"])
...     sorted(os.listdir(d)), xd.read_parquet(d, filters=[("year", "==", 2021)]).compute().v.tolist()
(['year=2020', 'year=2021'], [3.0])
"""

from __future__ import annotations

import numbers
import operator
import re
from typing import Any
from urllib.parse import quote, unquote

import numpy as np
import pandas as pd

from ..files import folders_in, join, listing, shown

__all__ = ["discover", "key_dictionaries", "typed_pairs", "check_key_filters", "residual_filters", "with_keys",
           "key_dtypes", "split_by_keys", "folder_of", "written_folders", "DEFAULT"]

#: the folder value of a missing value (pyarrow's and Hive's)
DEFAULT = "__HIVE_DEFAULT_PARTITION__"

_INTEGER = re.compile(r"-?(0|[1-9][0-9]*)")  # (as pyarrow infers: no sign but minus, no leading zero)


def _name(path: str) -> str:
    return str(path).rstrip("/").replace("\\", "/").rsplit("/", 1)[-1]


def _pair(folder: str) -> tuple[str, str | None] | None:
    """``(key, value)`` of a folder named ``key=value`` (value None for a missing one)."""
    key, sep, raw = _name(folder).partition("=")
    if not sep or not key:
        return None
    return unquote(key), None if raw == DEFAULT else unquote(raw)


def discover(fs: Any, base: str, suffixes: tuple[str, ...], what: str) -> list[tuple[str, tuple]] | None:
    """The files under a hive-partitioned directory, in natural order, each with its folders'
    ``(key, value)`` pairs; None when ``base`` is not one (it holds data files of its own,
    or no ``key=value`` folder).

    >>> import os, tempfile
    >>> from xsched.files import LocalFileSystem
    >>> with tempfile.TemporaryDirectory() as d:
    ...     for k in ("10", "2"):
    ...         os.mkdir(os.path.join(d, f"k={k}"))
    ...         _ = open(os.path.join(d, f"k={k}", "part.0.parquet"), "w").write("")
    ...     [(os.path.relpath(p, d), pairs) for p, pairs in discover(LocalFileSystem(), d, (".parquet",), "read")]
    [('k=2/part.0.parquet', (('k', '2'),)), ('k=10/part.0.parquet', (('k', '10'),))]
    """
    try:
        if not fs.isdir(base):
            return None
        files, folders = listing(fs, base, suffixes)
    except (FileNotFoundError, NotADirectoryError):
        return None
    top = [f for f in folders if _pair(f)]
    if files or not top:
        return None
    found: list[tuple[str, tuple]] = []

    def walk(folder: str, pairs: tuple) -> None:
        files, folders = listing(fs, folder, suffixes)  # (one listing a folder: one request on a store)
        found.extend((f, pairs) for f in files)
        for sub in folders:
            pair = _pair(sub)
            if pair is not None:
                walk(sub, pairs + (pair,))

    for folder in top:
        walk(folder, (_pair(folder),))
    if not found:
        raise FileNotFoundError(f"{what}: the folders of {shown(fs, base)!r} ({', '.join(map(_name, top[:4]))}"
                                f"{', ...' if len(top) > 4 else ''}) hold no data files")
    first_keys = [k for k, _ in found[0][1]]
    for path, pairs in found:
        if [k for k, _ in pairs] != first_keys:
            raise ValueError(f"{what}: {shown(fs, path)} lies in the folders {[k for k, _ in pairs]}, but "
                             f"{shown(fs, found[0][0])} in {first_keys}; every file of a partitioned dataset "
                             "needs the same folder keys in the same order: read the folders apart")
    return found


def key_dictionaries(found: list[tuple[str, tuple]], skip: Any = ()) -> dict[str, Any]:
    """``{key: pyarrow array of its values}``, sorted: int32 when every value is an integer
    that fits, strings otherwise (``007``, ``+5`` and ``10000000000`` too), as pandas reads
    them. Keys in ``skip`` (columns the files hold themselves) are left out.

    >>> key_dictionaries([("a", (("k", "10"),)), ("b", (("k", "2"),)), ("c", (("k", None),))])["k"].to_pylist()
    [2, 10]
    >>> key_dictionaries([("a", (("k", "10000000000"),)), ("b", (("k", "5"),))])["k"].to_pylist()
    ['10000000000', '5']
    """
    import pyarrow as pa

    out = {}
    for j, (key, _) in enumerate(found[0][1] if found else ()):
        if key in skip:
            continue
        values = {pairs[j][1] for _, pairs in found} - {None}
        if values and all(_INTEGER.fullmatch(v) and -2**31 <= int(v) < 2**31 for v in values):
            out[key] = pa.array(sorted(int(v) for v in values), type=pa.int32())
        else:
            out[key] = pa.array(sorted(values), type=pa.string())
    return out


def typed_pairs(pairs: tuple, dictionaries: dict[str, Any]) -> tuple:
    """A file's ``(key, value)`` pairs with each value as its column holds it (an integer key's
    as an int), for the keys the dataset gives as columns.

    >>> typed_pairs((("year", "2021"), ("c", "a")), key_dictionaries([("f", (("year", "2021"), ("c", "a")))]))
    (('year', 2021), ('c', 'a'))
    """
    import pyarrow as pa

    out = []
    for key, raw in pairs:
        if key in dictionaries:
            integer = pa.types.is_integer(dictionaries[key].type)
            out.append((key, None if raw is None else int(raw) if integer else raw))
    return tuple(out)


def check_key_filters(dnf: list | None, dictionaries: dict[str, Any], what: str) -> None:
    """Filters on a folder key whose values are not of its type (``("year", "==", "2021")``
    on integer years) fail when the read is built, naming the key and its values.

    >>> check_key_filters([[("year", "==", "2021")]], key_dictionaries([("f", (("year", "2021"),))]), "read")
    Traceback (most recent call last):
    ...
    ValueError: read: filter ('year', '==', '2021') compares the folder key 'year', which holds integers ([2021]), with str; give integers
    """
    import pyarrow as pa

    for conj in dnf or ():
        for col, op, value in conj:
            if col not in dictionaries:
                continue
            integer = pa.types.is_integer(dictionaries[col].type)
            if op in ("in", "not in") and not isinstance(value, (list, tuple, set, frozenset)):
                raise ValueError(f"{what}: filter {(col, op, value)!r}: {op!r} takes a list of values, e.g. "
                                 f"({col!r}, {op!r}, [{value!r}])")
            given = list(value) if op in ("in", "not in") else [value]
            ok = all(isinstance(v, numbers.Integral if integer else str) and not isinstance(v, bool) for v in given)
            if not ok:
                kind = "integers" if integer else "strings"
                raise ValueError(f"{what}: filter {(col, op, value)!r} compares the folder key {col!r}, which holds "
                                 f"{kind} ({dictionaries[col].to_pylist()[:5]}), with "
                                 f"{', '.join(type(v).__name__ for v in given)}; give {kind}")


#: pyarrow's filter operators on one folder's value
_COMPARE = {"=": operator.eq, "==": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le,
            ">": operator.gt, ">=": operator.ge, "in": lambda v, others: v in others,
            "not in": lambda v, others: v not in others}


def _passes(value: Any, op: str, other: Any) -> bool:
    """Whether a folder's value passes ``op other``, as pyarrow's filters decide (a missing
    value passes ``not in`` only)."""
    return op == "not in" if value is None else bool(_COMPARE[op](value, other))


def residual_filters(dnf: list | None, values: dict) -> list | None | bool:
    """The filters left for one file's rows once its folders' ``values`` are known: False when
    they rule out the whole file, None when every row passes, else the AND-lists on the
    file's own columns.

    >>> residual_filters([[("year", "==", 2021), ("v", ">", 0)], [("year", "==", 2020)]], {"year": 2021})
    [[('v', '>', 0)]]
    >>> residual_filters([[("year", "==", 2021)]], {"year": 2020})
    False
    """
    if not dnf:
        return None
    left = []
    for conj in dnf:
        rest = [(c, op, v) for c, op, v in conj if c not in values]
        if all(_passes(values[c], op, v) for c, op, v in conj if c in values):
            if not rest:
                return None
            left.append(rest)
    return left or False


def with_keys(table: Any, pairs: tuple, dictionaries: dict[str, Any], wanted: Any = None) -> Any:
    """A table read from one file with its folders' values appended as dictionary columns
    (categoricals in pandas, with every value of the dataset as categories); ``wanted``:
    the keys to append (all when None).

    >>> import pyarrow as pa
    >>> keys = key_dictionaries([("f", (("k", "b"),)), ("g", (("k", "a"),))])
    >>> with_keys(pa.table({"x": [1, 2]}), (("k", "b"),), keys).to_pandas().k.tolist()
    ['b', 'b']
    """
    import pyarrow as pa

    for key, value in pairs:
        if key not in dictionaries or (wanted is not None and key not in wanted):
            continue
        values = dictionaries[key]
        if value is None:
            indices = pa.nulls(table.num_rows, type=pa.int32())
        else:
            at = values.index(pa.scalar(value, type=values.type)).as_py()
            indices = pa.array(np.full(table.num_rows, at, dtype=np.int32))
        table = table.append_column(key, pa.DictionaryArray.from_arrays(indices, values))
    return table


def key_dtypes(dictionaries: dict[str, Any]) -> dict[str, pd.CategoricalDtype]:
    """The pandas dtype each key column has in every partition (categories: all its values).

    >>> key_dtypes(key_dictionaries([("f", (("k", "2"),)), ("g", (("k", "10"),))]))["k"].categories.tolist()
    [2, 10]
    """
    import pyarrow as pa

    return {key: pa.DictionaryArray.from_arrays(pa.array([], type=pa.int32()), values).to_pandas().dtype
            for key, values in dictionaries.items()}


# --------------------------------------------------------------------------- writing


def _folder_value(value: Any) -> str:
    """A key's value as a folder name, spelled as pyarrow's writer spells it (``3.0`` is ``3``,
    True is ``true``), URI-escaped; a missing value is ``__HIVE_DEFAULT_PARTITION__``.

    >>> [_folder_value(v) for v in (3.0, 1.5, True, "a/b", None)]
    ['3', '1.5', 'true', 'a%2Fb', '__HIVE_DEFAULT_PARTITION__']
    """
    import pyarrow as pa

    if value is None or (not isinstance(value, str) and pd.isna(value)):
        return DEFAULT
    try:
        text = value if isinstance(value, str) else pa.scalar(value).cast(pa.string()).as_py()
    except (pa.ArrowException, TypeError, ValueError):
        text = str(value)
    return quote(text, safe="")


def split_by_keys(part: pd.DataFrame, on: list) -> list[tuple[str, pd.DataFrame]]:
    """A partition's rows grouped by their values of the columns ``on``, each group with its
    folder path (``k=v/...``, relative) and without those columns; missing values go to
    ``__HIVE_DEFAULT_PARTITION__``.

    >>> [(f, rows.v.tolist()) for f, rows in split_by_keys(pd.DataFrame({"k": ["a b", None, "a b"], "v": [1, 2, 3]}), ["k"])]
    [('k=a%20b', [1, 3]), ('k=__HIVE_DEFAULT_PARTITION__', [2])]
    """
    if part.empty:
        return []
    out = []
    for values, rows in part.groupby(on, dropna=False, observed=True, sort=True):
        values = values if isinstance(values, tuple) else (values,)
        folder = "/".join(f"{quote(str(k), safe='')}={_folder_value(v)}" for k, v in zip(on, values))
        out.append((folder, rows.drop(columns=on)))
    return out


def folder_of(fs: Any, base: str, folder: str) -> str:
    """Where a group's relative folder lies under ``base``.

    >>> from xsched.files import filesystem_for
    >>> folder_of(*filesystem_for("memory://out"), "year=2021/c=a")
    '/out/year=2021/c=a'
    """
    path = base
    for name in folder.split("/"):
        path = join(fs, path, name)
    return path


def written_folders(fs: Any, base: str) -> list[str]:
    """The ``key=value`` folders directly under ``base`` (what an earlier partitioned write left).

    >>> import os, tempfile
    >>> from xsched.files import LocalFileSystem
    >>> with tempfile.TemporaryDirectory() as d:
    ...     for name in ("k=1", "other"):
    ...         os.mkdir(os.path.join(d, name))
    ...     [os.path.basename(f) for f in written_folders(LocalFileSystem(), d)]
    ['k=1']
    """
    try:
        return [f for f in folders_in(fs, base) if _pair(f)]
    except FileNotFoundError:
        return []
