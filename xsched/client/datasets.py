"""Published datasets: named futures and collections that outlive the client that made them.

``publish_dataset`` pickles the object here (in the caller's thread), noting the keys of
the Futures in it; the scheduler keeps the bytes and holds those keys in memory for the
dataset. ``get_dataset`` unpickles them again with the Futures bound to the asking
client, which then wants their keys itself::

    client A: publish_dataset(x, name="n") --publish-dataset (bytes, keys)--> scheduler
    client B: get_dataset("n") --get-dataset--> scheduler --bytes--> loads: Futures of B

A mixin of ``Client`` (``client.py``), and ``Datasets``, the same as a mapping.
"""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import TYPE_CHECKING

from ..protocol import ops
from ..protocol.messages import split_objects
from ..protocol.serialize import dumps, loads
from .dual import sync_or_async
from .future import binding_to, collecting_keys

if TYPE_CHECKING:
    from .client import Client

__all__ = ["DatasetsMixin", "Datasets"]


class DatasetsMixin:
    """publish_dataset, unpublish_dataset, list_datasets, get_dataset and the datasets mapping."""

    @sync_or_async
    def publish_dataset(self, *args, name: str | None = None, override: bool = False, **kwargs) -> None:
        """Publish futures or persisted collections under a name, for any client to get.

        ``publish_dataset(x, name="n")`` or ``publish_dataset(n=x, m=y)``. The scheduler
        holds the data (it stays in worker memory after this client leaves) until
        ``unpublish_dataset``. A taken name raises KeyError unless ``override=True``.

        >>> from xsched import Client
        >>> client.publish_dataset(client.scatter([1, 2, 3]), name="publish_dataset-accounts")
        >>> client2 = Client(client.scheduler_address)                  # another client
        >>> "publish_dataset-accounts" in client2.list_datasets()
        True
        >>> client2.gather(client2.get_dataset("publish_dataset-accounts"))
        [1, 2, 3]
        >>> client2.unpublish_dataset("publish_dataset-accounts"); client2.close()
        """
        if args:
            if name is None:
                raise TypeError("publish_dataset(x) needs a name: publish_dataset(x, name='mydata') "
                                "or publish_dataset(mydata=x)")
            if len(args) != 1:
                raise TypeError(f"publish_dataset takes one positional object with name=, got {len(args)}; "
                                "publish several as keywords: publish_dataset(a=x, b=y)")
            kwargs = {name: args[0], **kwargs}
        elif name is not None:
            raise TypeError("publish_dataset(name=...) needs the object to publish: publish_dataset(x, name=...)")
        if not kwargs:
            raise TypeError("publish_dataset needs something to publish: publish_dataset(mydata=x)")
        items = []
        for n, obj in kwargs.items():
            with collecting_keys() as keys:
                frames = dumps(obj)
            items.append((n, sorted(set(keys)), frames))
        return self._publish(items, override)

    async def _publish(self, items, override) -> None:
        for n, keys, frames in items:
            reply, _ = await self._conn.request(
                {"op": ops.PUBLISH_DATASET, "name": n, "keys": keys, "override": bool(override)}, raw={"data": frames})
            if reply.get("refused"):
                raise KeyError(reply["refused"])

    @sync_or_async
    async def unpublish_dataset(self, name: str) -> None:
        """Forget a published dataset; its data is freed unless a client still holds futures to it.

        >>> client.publish_dataset(client.scatter([1, 2]), name="unpublish_dataset-old")
        >>> client.unpublish_dataset("unpublish_dataset-old")
        >>> client.get_dataset("unpublish_dataset-old", default="gone")
        'gone'
        """
        reply, _ = await self._conn.request({"op": ops.UNPUBLISH_DATASET, "name": name})
        if not reply.get("found"):
            raise KeyError(_no_dataset(name, reply.get("names", [])))

    @sync_or_async
    async def list_datasets(self) -> list[str]:
        """Names of the published datasets, sorted.

        >>> client.publish_dataset(client.scatter([1, 2]), name="list_datasets-a")
        >>> client.list_datasets()                 # (with any others published)
        [...'list_datasets-a'...]
        >>> client.unpublish_dataset("list_datasets-a")
        """
        reply, _ = await self._conn.request({"op": ops.LIST_DATASETS})
        return list(reply["names"])

    _NO_DEFAULT = object()

    @sync_or_async
    async def get_dataset(self, name: str, default=_NO_DEFAULT):
        """The published object named ``name``, its futures bound to this client.

        Raises KeyError (naming the published datasets) when there is none, unless
        ``default`` is given.

        >>> client.publish_dataset(client.scatter([1, 2, 3]), name="get_dataset-a")
        >>> x = client.get_dataset("get_dataset-a")
        >>> client.gather(x)
        [1, 2, 3]
        >>> client.get_dataset("get_dataset-nothing", default=None)
        >>> client.get_dataset("get_dataset-nothing")
        Traceback (most recent call last):
        ...
        KeyError: "no dataset named 'get_dataset-nothing' is published (published: ...); publish one ..."
        >>> client.unpublish_dataset("get_dataset-a")
        """
        self._flush_releases()  # (a dropped future of a key handed back: its release goes first)
        reply, payload = await self._conn.request({"op": ops.GET_DATASET, "name": name})
        if not reply.get("found"):
            if default is not DatasetsMixin._NO_DEFAULT:
                return default
            raise KeyError(_no_dataset(name, reply.get("names", [])))
        frames = split_objects(reply, payload)["data"]
        with binding_to(self):
            return loads(frames)

    @property
    def datasets(self) -> "Datasets":
        """The published datasets as a mapping: ``client.datasets["n"]``, ``del``, ``in``, ``list()``.

        >>> futures = client.scatter([1, 2, 3])
        >>> client.datasets["datasets-a"] = futures
        >>> "datasets-a" in client.datasets, client.gather(client.datasets["datasets-a"])
        (True, [1, 2, 3])
        >>> del client.datasets["datasets-a"]
        """
        return Datasets(self)


class Datasets(MutableMapping):
    """A client's view of the published datasets (``client.datasets``), read live each time.

    >>> ds = client.datasets
    >>> ds["Datasets-n"] = client.scatter(10)
    >>> ds["Datasets-n"].result(), "Datasets-n" in ds
    (10, True)
    >>> del ds["Datasets-n"]
    >>> "Datasets-n" in ds
    False
    """

    def __init__(self, client: "Client"):
        self._client = client

    def __getitem__(self, name):
        return self._client.get_dataset(name)

    def __setitem__(self, name, value):
        self._client.publish_dataset(value, name=name, override=True)

    def __delitem__(self, name):
        self._client.unpublish_dataset(name)

    def __iter__(self):
        return iter(self._client.list_datasets())

    def __len__(self):
        return len(self._client.list_datasets())

    def __contains__(self, name):
        return name in self._client.list_datasets()

    def __repr__(self):
        return f"<Datasets {self._client.list_datasets()}>"


def _no_dataset(name, names) -> str:
    known = ", ".join(repr(n) for n in names) if names else "none"
    return (f"no dataset named {name!r} is published (published: {known}); "
            "publish one with client.publish_dataset(x, name=...)")
