"""Avro files as bags: ``read_avro`` (a partition per file, or per stretch of its data blocks)
and ``to_avro`` (a file per partition), with fastavro (``pip install fastavro``, in the
``avro`` extra).

An Avro object container file is a header (the schema, the codec, a 16-byte sync marker) and
then data blocks, each ``count, size, data, sync marker``. So a file cuts into partitions
without reading it: with ``blocksize``, the header is read when the bag is built, and the
partition of bytes ``[start, end)`` takes the blocks that begin in that stretch. It finds
the first one after the first sync marker at or after ``start`` and reads on while blocks
begin before ``end``; fastavro decodes the header and those blocks as a file of their own::

    read-avro-<t>-i    the records of file f's blocks beginning in [start_i, end_i)

Files are opened by the tasks, on the workers (local paths, or URLs through fsspec).

>>> import os, tempfile, fastavro, xsched.bag as xb
>>> schema = {"type": "record", "name": "Point", "fields": [{"name": "x", "type": "int"}]}
>>> path = os.path.join(tempfile.mkdtemp(), "points.avro")
>>> with open(path, "wb") as f:
...     fastavro.writer(f, schema, [{"x": i} for i in range(1000)], sync_interval=100)
>>> b = xb.read_avro(path, blocksize=2000)
>>> b.npartitions > 1, b.pluck("x").sum().compute()
(True, 499500)
"""

from __future__ import annotations

import importlib.util
import io
from typing import Any, Callable

from ..files import blocksize_bytes, byte_ranges, expand_paths, file_token, filesystem_for, make_folder, parent, \
    shown
from ..graph.collection import run_writes
from ..graph.layers import annotations_in_force, chunk_key, new_token, per_task
from ..graph.spec import Ref, Task
from . import text

__all__ = ["read_avro", "to_avro"]

MAGIC = b"Obj\x01"


def _fastavro(what: str) -> Any:
    if importlib.util.find_spec("fastavro") is None:
        raise ImportError(f"{what} needs fastavro: pip install fastavro (or the avro extra)")
    import fastavro

    return fastavro


def _long(f: Any) -> int:
    """One Avro ``long``: a zig-zag varint."""
    shift = value = 0
    while True:
        byte = f.read(1)
        if not byte:
            raise EOFError("the Avro header ends in the middle of a number")
        value |= (byte[0] & 0x7F) << shift
        if not byte[0] & 0x80:
            return (value >> 1) ^ -(value & 1)
        shift += 7


def header_of(fs: Any, path: str) -> tuple[int, bytes]:
    """Where an Avro file's header ends and its sync marker (the map of metadata skipped).

    >>> import os, tempfile, fastavro
    >>> path = os.path.join(tempfile.mkdtemp(), "one.avro")
    >>> with open(path, "wb") as f:
    ...     fastavro.writer(f, {"type": "int", "name": "n"}, [7])
    >>> end, sync = header_of(*filesystem_for(path))
    >>> end > 20, len(sync)
    (True, 16)
    """
    with fs.open(path, "rb") as f:
        if f.read(4) != MAGIC:
            raise ValueError(f"read_avro: {shown(fs, path)} is not an Avro object container file (it does not "
                             "start with b'Obj\\x01')")
        while True:
            count = _long(f)
            if count == 0:
                break
            if count < 0:  # (a block of the map that gives its size in bytes too)
                count = -count
                _long(f)
            for _ in range(2 * count):  # (a key and a value, each a long length then bytes)
                f.seek(_long(f), io.SEEK_CUR)
        sync = f.read(16)
        return f.tell(), sync


def _first_block(f: Any, start: int, sync: bytes) -> int | None:
    """Where the first data block beginning at or after ``start`` begins: just after the
    first sync marker that ends there or later (None past the last block)."""
    base = max(start - 16, 0)
    f.seek(base)
    tail = b""
    while True:
        chunk = f.read(1 << 16)
        if not chunk:
            return None
        data = tail + chunk
        at = data.find(sync)
        if at >= 0:
            return base - len(tail) + at + 16
        tail = data[-15:]
        base += len(chunk)


def _blocks(f: Any, start: int, end: int, header_end: int, sync: bytes) -> bytes:
    """The bytes of the data blocks that begin in ``[start, end)``."""
    position = header_end if start <= header_end else _first_block(f, start, sync)
    out = io.BytesIO()
    while position is not None and position < end:
        f.seek(position)
        try:
            _long(f)
        except EOFError:  # (the end of the file)
            break
        f.seek(_long(f), io.SEEK_CUR)
        if f.read(16) != sync:
            raise ValueError("read_avro: a data block does not end with the file's sync marker; the file is damaged")
        block_end = f.tell()
        f.seek(position)
        out.write(f.read(block_end - position))
        position = block_end
    return out.getvalue()


def _read_records(fs: Any, path: str, start: int | None, end: int | None, header_end: int | None,
                  sync: bytes | None) -> list:
    """The records of ``path`` (of the data blocks beginning in ``[start, end)`` if given)."""
    fastavro = _fastavro("read_avro")
    with fs.open(path, "rb") as f:
        if start is None:
            return list(fastavro.reader(f))
        header = f.read(header_end)
        data = _blocks(f, start, end, header_end, sync)
    return list(fastavro.reader(io.BytesIO(header + data))) if data else []


def read_avro(urlpath: Any, blocksize: Any = None, storage_options: dict | None = None) -> Any:
    """A Bag of the records (dicts) of Avro files: ``urlpath`` a path, a glob, a directory, a
    URL or a list of them. One partition per file, or, with ``blocksize`` (bytes, or
    ``"64 MiB"``), one per stretch of each file's data blocks (the headers are read when
    built; see the module docstring).

    >>> import os, tempfile, fastavro, xsched.bag as xb
    >>> d = tempfile.mkdtemp()
    >>> for i in range(2):
    ...     with open(os.path.join(d, f"part{i}.avro"), "wb") as f:
    ...         fastavro.writer(f, {"type": "record", "name": "R", "fields": [{"name": "v", "type": "int"}]},
    ...                         [{"v": i}, {"v": i + 10}])
    >>> xb.read_avro(os.path.join(d, "*.avro")).compute()
    [{'v': 0}, {'v': 10}, {'v': 1}, {'v': 11}]
    """
    _fastavro("read_avro")
    files = expand_paths(urlpath, storage_options, what="read_avro")
    blocksize = blocksize_bytes(blocksize, "read_avro")
    pieces: list[tuple] = []
    for fs, path in files:
        if blocksize is None:
            pieces.append((fs, path, None, None, None, None))
            continue
        header_end, sync = header_of(fs, path)
        for start, end in byte_ranges(fs.size(path), blocksize, None):
            pieces.append((fs, path, start, end, header_end, sync))
    token = new_token("read-avro", [file_token(fs, p) for fs, p in files], blocksize)
    name = f"read-avro-{token}"
    ann = annotations_in_force()
    layer = {chunk_key(name, (i,)): Task(_read_records, piece, {}, per_task(ann)) for i, piece in enumerate(pieces)}
    return text._BAG(layer, name, len(layer))


def _write_records(part: list, fs: Any, path: str, schema: Any, codec: str, sync_interval: int,
                   metadata: dict | None) -> str:
    """Write a partition's records to one Avro file (the task's work); returns its name."""
    fastavro = _fastavro("to_avro")
    directory = parent(fs, path)
    if directory:
        make_folder(fs, directory, "to_avro")
    with fs.open(path, "wb") as f:
        try:
            fastavro.writer(f, schema, part, codec=codec, sync_interval=sync_interval, metadata=metadata)
        except (ValueError, TypeError) as exc:
            kind = TypeError if isinstance(exc, TypeError) else ValueError  # (fastavro's own classes vary)
            raise kind(f"to_avro: a record of the partition written to {shown(fs, path)} does not fit the "
                       f"schema: {exc}") from exc
    return shown(fs, path)


def to_avro(bag: Any, filename: Any, schema: Any, name_function: Callable[[int], str] | None = None,
            storage_options: dict | None = None, codec: str = "null", sync_interval: int = 16000,
            metadata: dict | None = None, compute: bool = True) -> Any:
    """Write one Avro file per partition of ``bag`` (dicts that fit ``schema``, a fastavro
    schema dict, checked when called); ``filename`` as in ``to_textfiles``: a pattern whose
    ``*`` becomes the partition number (or ``name_function(i)``), a directory, or one path
    per partition. ``codec``: ``"null"``, ``"deflate"``, ``"snappy"``... (fastavro's).
    Returns None once written, or with ``compute=False`` a list of ``Delayed`` that write.

    >>> import os, tempfile, xsched.bag as xb
    >>> schema = {"type": "record", "name": "R", "fields": [{"name": "v", "type": "long"}]}
    >>> out = os.path.join(tempfile.mkdtemp(), "out-*.avro")
    >>> xb.to_avro(xb.from_sequence([{"v": i} for i in range(5)], npartitions=2), out, schema, codec="deflate")
    >>> xb.read_avro(out).pluck("v").compute()
    [0, 1, 2, 3, 4]
    """
    fastavro = _fastavro("to_avro")
    parsed = fastavro.parse_schema(schema)  # (a schema fastavro refuses fails here, not on a worker)
    try:  # (an empty file in memory: a codec fastavro cannot write here fails now, not on a worker)
        fastavro.writer(io.BytesIO(), parsed, [], codec=codec, sync_interval=int(sync_interval), metadata=metadata)
    except (ValueError, TypeError, ImportError) as exc:
        raise ValueError(f"to_avro: fastavro cannot write codec={codec!r} (sync_interval={sync_interval!r}, "
                         f"metadata={metadata!r}) here: {exc}") from None
    paths = text._output_paths(filename, bag.npartitions, name_function)
    targets = [filesystem_for(p, storage_options) for p in paths]
    name = f"to-avro-{new_token('to-avro', bag, paths, codec, sync_interval, metadata)}"
    ann = annotations_in_force()
    layer = {chunk_key(name, (i,)): Task(_write_records, (Ref(chunk_key(bag.name, (i,))), fs, p, parsed, codec,
                                                          int(sync_interval), metadata), {}, per_task(ann))
             for i, (fs, p) in enumerate(targets)}
    written = run_writes(bag._graph, name, layer, list(layer), compute)
    return None if compute else written
