"""``protocol.bulk.get_data`` asks again for the keys a holder left for a next reply (its
``more``), and never again and again for what a holder does not send. The holder here is
a stand-in answering as a worker's ``_serve_data`` does; the real one, with spilled values
larger than its memory, is ``tests/cluster/test_worker_memory.py``."""

from __future__ import annotations

import asyncio

from xsched.protocol.bulk import get_data
from xsched.protocol.messages import decode, encode


class Holder:
    """Answers get-data with at most ``per_reply`` values, naming the rest in ``more``
    (``lie``: names keys it was not asked for, or sends nothing and names them all)."""

    security = None

    def __init__(self, values: dict, per_reply: int, lie: str = ""):
        self.values, self.per_reply, self.lie, self.asked = values, per_reply, lie, []

    async def request(self, header: dict, timeout=None):
        keys = header["keys"]
        self.asked.append(list(keys))
        if self.lie == "nothing":
            sent, more = {}, keys
        else:
            sent = {k: self.values[k] for k in keys[:self.per_reply]}
            more = keys[self.per_reply:] + (["not-asked"] if self.lie == "extra" else [])
        return decode(encode({"op": "reply", "status": "OK", "more": more}, {"data": sent}))


def test_keys_left_for_later_are_asked_for_in_turns():
    holder = Holder({f"k{i}": i for i in range(5)}, per_reply=2)
    got = asyncio.run(get_data(holder, [f"k{i}" for i in range(5)], "tcp://h:1"))
    assert got == {f"k{i}": i for i in range(5)}
    assert holder.asked == [["k0", "k1", "k2", "k3", "k4"], ["k2", "k3", "k4"], ["k4"]]


def test_a_holder_naming_keys_not_asked_for_or_sending_nothing_is_not_asked_forever():
    extra = Holder({"a": 1, "b": 2}, per_reply=1, lie="extra")
    assert asyncio.run(get_data(extra, ["a", "b"], "tcp://h:1")) == {"a": 1, "b": 2}
    assert extra.asked == [["a", "b"], ["b"]]
    stingy = Holder({"a": 1}, per_reply=1, lie="nothing")
    assert asyncio.run(get_data(stingy, ["a"], "tcp://h:1")) == {}
    assert stingy.asked == [["a"]]
