"""Which docstring examples need a running cluster: those that name ``client`` (the name
the docs give a user's connected Client) or start a ``LocalCluster(...)`` of their own.

The unit tier (no processes) skips them (the repository's ``conftest.py``) and
``tests/cluster/test_docstring_examples.py`` runs them, with ``client`` bound.
"""

from __future__ import annotations

import re

NEEDS_CLUSTER = re.compile(r"\bclient\b|\bLocalCluster\(")


def needs_cluster(dtest) -> bool:
    """Whether a parsed docstring (a ``doctest.DocTest``) has an example that needs a cluster.

    >>> import doctest
    >>> def parsed(text):
    ...     return doctest.DocTestParser().get_doctest(text, {}, "x", None, 0)
    >>> needs_cluster(parsed(">>> client.submit(abs, -1).result()"))
    True
    >>> needs_cluster(parsed(">>> cluster = LocalCluster(n_workers=1)"))
    True
    >>> needs_cluster(parsed(">>> clients = 2"))
    False
    """
    return any(NEEDS_CLUSTER.search(example.source) for example in dtest.examples)
