"""Group names of task keys, as a pure string function.

Apart from ``tokenize`` (which needs pickle to hash objects) so that the scheduler's pure
state machine can name task groups without importing serialization.
"""

from __future__ import annotations

import re

__all__ = ["key_split"]

_TOKEN_LIKE = re.compile(r"^(?:[0-9a-f]{8,}|[0-9]+(?:\.[0-9]+)*)$")  # tokens, indices, chunk indices "1.0.2"


def key_split(key: str) -> str:
    """The human group name of a key: its words before the token(s).

    Trailing words that look like tokens (8 or more hex characters) or indices
    (digits) are dropped; the first word is always kept.

    >>> from xsched.keys import key_split
    >>> key_split("inc-1a2b3c4d5e6f")
    'inc'
    >>> key_split("sum-aggregate-9f8e7d6c5b4a3928")
    'sum-aggregate'
    >>> key_split("read-3")
    'read'
    """
    if not isinstance(key, str):
        key = str(key)
    words = key.split("-")
    end = len(words)
    while end > 1 and _TOKEN_LIKE.match(words[end - 1]):
        end -= 1
    return "-".join(words[:end])
