"""Turning Python objects into ZeroMQ frames and back, without copying large buffers.

An object becomes ``[pickle_bytes, buffer_1, buffer_2, ...]``: pickle protocol 5 moves the
payload of numpy arrays, ``bytes`` above a threshold and other buffer-exporting objects
out of band, so each travels as its own ZeroMQ frame and is never copied into the pickle.
On receipt the frames' memory is handed straight back to ``pickle.loads(buffers=...)``,
unless it starts at an address no NumPy array may start at (``_aligned``): ZeroMQ keeps a
small message inside its own header, or in place in its receive batch, at any byte offset.

Plain ``pickle`` is tried first (fast, no surprises); ``cloudpickle`` takes over for
lambdas, closures and interactively defined functions.

>>> import numpy as np
>>> frames = dumps({"x": np.arange(3)})
>>> loads(frames)["x"].tolist()
[0, 1, 2]
"""

from __future__ import annotations

import pickle
from typing import Any, Sequence

import cloudpickle

__all__ = ["dumps", "loads", "SerializationError", "nbytes_of_frames"]

_BIG_BYTES = 64 * 1024


class SerializationError(TypeError):
    """An object could not be pickled; the message names it and says what to do."""


def dumps(obj: Any) -> list:
    """Serialise ``obj`` into a list of frames (first the pickle, then raw buffers).

    >>> len(dumps(b"small"))
    1
    """
    buffers: list[pickle.PickleBuffer] = []
    if type(obj) is bytes and len(obj) >= _BIG_BYTES:
        obj = pickle.PickleBuffer(obj)  # travel out of band, arrive as a read-only buffer
        return [pickle.dumps(_BytesBox(obj), protocol=5, buffer_callback=buffers.append)] + [
            b.raw() for b in buffers
        ]
    try:
        head = pickle.dumps(obj, protocol=5, buffer_callback=buffers.append)
        if b"__main__" in head:  # by-reference to a notebook/script object: workers lack it
            raise pickle.PicklingError("refers to __main__")
    except Exception:
        buffers.clear()
        try:
            head = cloudpickle.dumps(obj, protocol=5, buffer_callback=buffers.append)
        except Exception as e:
            raise SerializationError(
                f"could not serialise {_describe(obj)}: {type(e).__name__}: {e}. "
                "Objects sent to the cluster must be picklable (cloudpickle handles functions "
                "and lambdas; open files, locks and sockets cannot travel — open them inside the task)."
            ) from e
    return [head] + [b.raw() for b in buffers]


def frame_view(frame):
    """The buffer of a frame: ``bytes`` and buffers as they are, a ``zmq.Frame``'s buffer.

    >>> bytes(frame_view(b"ab")), frame_bytes(memoryview(b"cd"))
    (b'ab', b'cd')
    """
    return frame.buffer if hasattr(frame, "buffer") else frame


def frame_bytes(frame) -> bytes:
    """A frame's content as ``bytes`` (a copy, for what is kept after the message)."""
    return bytes(frame_view(frame))


def loads(frames: Sequence) -> Any:
    """Rebuild an object from frames made by :func:`dumps` (frames may be zmq.Frame objects).

    >>> loads(dumps([1, 2]))
    [1, 2]
    """
    head = frames[0]
    head = frame_view(head)
    bufs = [_aligned(frame_view(f)) for f in frames[1:]]
    obj = pickle.loads(head, buffers=bufs)
    if type(obj) is _BytesBox:
        return bytes(obj.data)
    return obj


#: the alignment a received buffer must have to become an array's memory as it is: what
#: every common dtype needs (``np.dtype(t).alignment``: at most 8, complex128 included); ZeroMQ
#: gives large messages 8 or 16, so those are never copied
ALIGNMENT = 8


def _aligned(buf):
    """``buf`` itself when its memory starts at a multiple of ``ALIGNMENT``, else a copy that
    does. NumPy reads a misaligned array, but compiled code given its pointer may not: scipy's
    splines refused one ("Expected a 1-dim C contiguous array"), others may read it wrong.

    >>> import numpy as np
    >>> raw = bytearray(np.arange(4, dtype="f8").tobytes()) + b"x"
    >>> moved = memoryview(bytearray(b"x") + raw)[1:33]          # one byte off
    >>> np.frombuffer(_aligned(moved), dtype="f8").tolist()
    [0.0, 1.0, 2.0, 3.0]
    >>> np.frombuffer(_aligned(moved), dtype="u1").ctypes.data % ALIGNMENT
    0
    """
    import numpy as np  # (a core dependency, as the arrays these buffers mostly carry)

    view = np.frombuffer(buf, dtype=np.uint8)
    if not view.size or view.ctypes.data % ALIGNMENT == 0:
        return buf
    return view.copy()  # (NumPy's allocations are aligned)


def nbytes_of_frames(frames: Sequence) -> int:
    """Total payload size of a list of frames, for throughput figures and logs."""
    total = 0
    for f in frames:
        if hasattr(f, "bytes") and not isinstance(f, (bytes, bytearray, memoryview)):
            total += len(f.buffer)
        else:
            total += memoryview(f).nbytes
    return total


class _BytesBox:
    """Carrier so a large ``bytes`` payload goes out of band (plain bytes pickle in-band)."""

    __slots__ = ("data",)

    def __init__(self, data):
        self.data = data

    def __reduce_ex__(self, protocol):
        return (_BytesBox, (self.data,))


def _describe(obj: Any) -> str:
    name = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None)
    if name:
        return f"{type(obj).__name__} {name!r}"
    r = repr(obj)
    return f"{type(obj).__name__} {r[:80] + '...' if len(r) > 80 else r}"
