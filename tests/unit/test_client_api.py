"""The Client as users see it: one class made of mixins (xsched/client/), each public method
that talks to the cluster written once and made synchronous or asynchronous by
``client/dual.py``, every public method in the API reference."""

from __future__ import annotations

import asyncio
import inspect
import pathlib
import re

import pytest

from xsched.client import loop as _loop
from xsched.client.client import Client
from xsched.client.dual import blocking, sync_or_async
from xsched.protocol import schemas

REFERENCE = pathlib.Path(__file__).parents[2] / "docs" / "reference" / "xsched.md"


class Stub:
    """What ``sync_or_async`` reads of a client: ``asynchronous``."""

    def __init__(self, asynchronous: bool):
        self.asynchronous = asynchronous
        self.seen: list = []

    @sync_or_async
    async def double(self, x: int = 1) -> int:
        """Twice ``x``."""
        self.seen.append(asyncio.get_running_loop())
        return 2 * x

    @sync_or_async
    def prepared(self, x):
        """Checks its argument in the caller's thread, then awaits."""
        if x < 0:
            raise ValueError("negative")
        return blocking(self._double(x), timeout=5, then=lambda r: ("then", r))

    @sync_or_async
    def slow(self):
        return blocking(asyncio.sleep(10), timeout=0.05)


def test_a_synchronous_client_blocks_on_the_background_loop():
    s = Stub(asynchronous=False)
    assert s.double(21) == 42 and s.seen == [_loop.background_loop()]
    assert s.prepared(2) == ("then", 4)  # then: in the caller's thread, for a synchronous call
    with pytest.raises(ValueError, match="negative"):  # checked before anything is awaited
        s.prepared(-1)
    with pytest.raises(TimeoutError):
        s.slow()


def test_an_asynchronous_client_gets_the_awaitable():
    async def main():
        s = Stub(asynchronous=True)
        coro = s.double(21)
        assert inspect.iscoroutine(coro)
        assert await coro == 42 and s.seen == [asyncio.get_running_loop()]
        assert await s.prepared(3) == 6  # no ``then``: the plain result
        with pytest.raises(ValueError, match="negative"):  # at call time, as before any await
            s.prepared(-1)
        assert await s._double(5) == 10  # the async core, under the underscored name

    asyncio.run(main())


def test_the_method_keeps_its_name_docstring_and_signature():
    assert Stub.double.__name__ == "double" and Stub.double.__doc__ == "Twice ``x``."
    assert str(inspect.signature(Stub.double)) == "(self, x: 'int' = 1) -> 'int'"
    assert not inspect.iscoroutinefunction(Stub.double) and inspect.iscoroutinefunction(Stub._double)
    assert not hasattr(Stub, "_prepared")  # a plain def: its coroutine is its own business


def test_an_underscored_name_is_not_defined_twice():
    with pytest.raises((TypeError, RuntimeError)) as info:  # (3.11 wraps errors of __set_name__)
        class Twice:
            asynchronous = True

            async def _x(self):
                pass

            @sync_or_async
            async def x(self):
                pass
    err = info.value if isinstance(info.value, TypeError) else info.value.__cause__
    assert "defined twice" in str(err)


def public_members(cls) -> set[str]:
    return {n for n in dir(cls) if not n.startswith("_")}


def test_every_public_method_of_the_client_is_in_the_api_reference():
    page = REFERENCE.read_text()
    block = re.search(r"^::: xsched\.Client\n((?:[ \t]+.*\n)+)", page, re.M)
    assert block, "no options block under ::: xsched.Client"
    listed = re.findall(r"^\s+- (\w+)\s*$", block.group(1), re.M)
    assert len(listed) == len(set(listed))
    assert set(listed) == public_members(Client), (
        f"docs/reference/xsched.md lists {sorted(set(listed) - public_members(Client))} that Client lacks, "
        f"and lacks {sorted(public_members(Client) - set(listed))}")


def test_public_client_methods_are_plain_methods_with_their_docstrings():
    for name in public_members(Client):
        member = inspect.getattr_static(Client, name)
        if isinstance(member, property):
            continue
        if isinstance(member, classmethod):  # (Client.current(), as dask's)
            member = member.__func__
        assert inspect.isfunction(member) and not inspect.iscoroutinefunction(member), name
        assert inspect.getdoc(member), f"Client.{name} has no docstring"
    # the async core of the methods written once, under the names the client's own code awaits
    for name in ("gather", "scatter", "scheduler_info", "get_dataset", "list_datasets", "wait_for_workers"):
        assert inspect.iscoroutinefunction(getattr(Client, f"_{name}")), name


def test_the_client_serves_exactly_what_the_scheduler_may_send_it():
    """One handler per op in the client's table (the scheduler's way: _CLIENT_OPS), none for
    an op its schema table refuses, and an op without a handler is refused by name."""
    assert set(Client._SCHEDULER_OPS) == set(schemas.CLIENT_FROM_SCHEDULER)
    with pytest.raises(TypeError, match="client cannot handle op 'no-such-op'"):
        Client._handle(object.__new__(Client), {"op": "no-such-op"}, [])
