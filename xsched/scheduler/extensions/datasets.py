"""Published datasets: named objects holding futures, kept by the scheduler for any client.

The ``datasets`` scheduler extension (see ``base.py`` for the protocol). It serves the
ops; the datasets themselves live in the state machine (``SchedulerState.datasets``),
changed by its PublishDataset / UnpublishDataset events.

Data flow::

    client.publish_dataset(x, name="n")
        pickles x (its Futures pickle as their keys) --publish-dataset {name, keys, override} + frames-->
        DatasetsExtension: refuses unknown keys / a taken name, then
        PublishDataset event -> SchedulerState: the pseudo-client ``dataset:n`` wants the keys
        (so the data stays when the publishing client leaves); the frames are stored unopened
    client2.get_dataset("n") --get-dataset--> <--frames (or {found: False, names})--
        unpickled in client2: each Future binds to client2 and asks for its key
    client.unpublish_dataset("n") --unpublish-dataset--> UnpublishDataset: the keys are released
        unless a client still holds them
    list-datasets -> sorted names

The scheduler never unpickles a dataset: it forwards the frames it was given.

>>> from xsched.scheduler.state import SchedulerState, AddWorker, AddKeys, PublishDataset, RemoveClient
>>> s = SchedulerState()
>>> _ = s.handle(AddWorker("w", 1), AddKeys("w", {"x": 8}, client="c1"))
>>> _ = s.handle(PublishDataset("n", ["x"]), RemoveClient("c1"))
>>> s.tasks["x"].state
'memory'
"""

from __future__ import annotations

from ...comm import Msg
from ...protocol import ops
from ...protocol.messages import split_objects
from ...protocol.serialize import frame_bytes
from ..state import PublishDataset, UnpublishDataset
from .base import SchedulerExtension

__all__ = ["DatasetsExtension"]


class DatasetsExtension(SchedulerExtension):
    """Serves publish-dataset, get-dataset, list-datasets and unpublish-dataset."""

    name = "datasets"

    @property
    def datasets(self) -> dict:
        """name -> (keys, pickled frames): the state machine's, read only here."""
        return self.scheduler.state.datasets

    def __repr__(self) -> str:
        return f"<DatasetsExtension datasets={sorted(self.datasets)}>"

    def _op_publish(self, peer, h, payload):
        self.scheduler._client_of(peer)
        name = h.get("name")
        if not isinstance(name, str) or not name:
            raise TypeError(f"publish-dataset: the name must be a non-empty string, not {name!r}")
        keys = [k for k in h.get("keys", ()) if isinstance(k, str)]
        if name in self.datasets and not h.get("override"):
            return {"refused": f"a dataset named {name!r} is already published; unpublish_dataset({name!r}) "
                           "first, or pass override=True"}
        tasks = self.scheduler.state.tasks
        unknown = [k for k in keys if k not in tasks]
        if unknown:
            return {"refused": f"cannot publish {name!r}: the scheduler no longer knows {unknown[:5]} (released "
                               "or cancelled futures); compute or persist them again, then publish"}
        frames = [frame_bytes(f) for f in split_objects(h, payload).get("data", [])]
        self.scheduler.handle(PublishDataset(name, keys, frames))
        return {"name": name, "keys": len(keys)}

    def _op_get(self, peer, h, payload):
        self.scheduler._client_of(peer)
        entry = self.datasets.get(h.get("name"))
        if entry is None:
            return {"found": False, "names": sorted(self.datasets)}
        return Msg({"found": True}, raw={"data": list(entry[1])})

    def _op_list(self, peer, h, payload):
        return {"names": sorted(self.datasets)}

    def _op_unpublish(self, peer, h, payload):
        self.scheduler._client_of(peer)
        name = h.get("name")
        if name not in self.datasets:
            return {"found": False, "names": sorted(self.datasets)}
        self.scheduler.handle(UnpublishDataset(name))
        return {"found": True}

    OPS = {ops.PUBLISH_DATASET: _op_publish, ops.GET_DATASET: _op_get, ops.LIST_DATASETS: _op_list,
           ops.UNPUBLISH_DATASET: _op_unpublish}
