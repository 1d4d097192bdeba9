"""Bags of Python objects for xsched: ``import xsched.bag as xb``.

A Bag holds any Python objects (records, lines of text, file names) in partitions and
processes them in parallel with ``map``, ``filter``, ``fold``, ``groupby``...; like every
xsched collection it only builds a task graph until ``compute()``, which runs on the
default client (or in this process when there is none). Keys read ``"<op>-<token>-i"``
(see ``xsched.bag.core``).

>>> import xsched.bag as xb
>>> words = xb.from_sequence("the cat and the hat".split(), npartitions=2)
>>> words.frequencies(sort=True).take(2)
(('the', 2), ('cat', 1))
"""

from . import elementwise as _elementwise  # noqa: F401  (gives Bag its str, random_sample, unzip and join)
from .core import Bag, Item, concat, from_delayed, from_sequence
from .core import bag_map as map, bag_range as range, bag_zip as zip  # (names of builtins: core keeps its own)
from .core import bag_map_partitions as map_partitions
from .text import from_url, read_text, to_textfiles
from .avro import read_avro, to_avro
from ..graph.delayed import compute
from . import random  # (dask's dask.bag.random: sample and choices)

__all__ = [
    "Bag",
    "Item",
    "from_sequence",
    "from_delayed",
    "read_text",
    "range",
    "concat",
    "zip",
    "map",
    "to_textfiles",
    "read_avro",
    "to_avro",
    "from_url",
    "map_partitions",
    "compute",
]
