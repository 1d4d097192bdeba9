"""Packing a Python environment for ``client.restart(environment=...)``, chunk by chunk.

A directory is written as an (uncompressed) tar stream; a ``.tar``/``.tar.gz`` file is
read as is. Chunks of ``CHUNK`` bytes go into a bounded queue, so at most a few chunks
are ever in memory, however large the environment; ``None`` ends the stream.

>>> import os, queue, tempfile
>>> d = tempfile.mkdtemp(); _ = open(os.path.join(d, "f"), "w").write("x")
>>> q = queue.Queue(); pack_chunks(d, q)
>>> chunks = []
>>> while (c := q.get()) is not None: chunks.append(c)
>>> sum(map(len, chunks)) > 0
True
"""

from __future__ import annotations

import os
import tarfile

__all__ = ["pack_chunks", "CHUNK"]

CHUNK = 4 * 2**20 - 64 * 1024  # stays one frame on the wire (MAX_FRAME is 4 MiB)


class _ChunkWriter:
    def __init__(self, out):
        self.out, self.buf = out, bytearray()

    def write(self, data) -> int:
        self.buf += data
        while len(self.buf) >= CHUNK:
            self.out.put(bytes(self.buf[:CHUNK]))
            del self.buf[:CHUNK]
        return len(data)

    def flush(self) -> None:
        if self.buf:
            self.out.put(bytes(self.buf))
            self.buf = bytearray()


def pack_chunks(path: str, out) -> None:
    """Put the bytes of ``path`` packed (a directory) or as is (an archive) into ``out``; then None."""
    try:
        if os.path.isdir(path):
            writer = _ChunkWriter(out)
            with tarfile.open(fileobj=writer, mode="w|", format=tarfile.PAX_FORMAT) as tar:
                tar.add(path, arcname=".")
            writer.flush()
        else:
            with open(path, "rb") as f:
                while chunk := f.read(CHUNK):
                    out.put(chunk)
    finally:
        out.put(None)
