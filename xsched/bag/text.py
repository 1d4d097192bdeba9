r"""Text files as bags: ``read_text`` (a partition per file, or per block of lines) and
``to_textfiles`` (a file per partition).

Why a module of its own: cutting files at line boundaries and writing lines has nothing to
do with the rest of a bag. Finding the files (local paths, globs and directories with the
standard library, URLs such as ``s3://`` or ``memory://`` through fsspec when it is
installed) is ``xsched/files.py``, shared with the dataframe readers and writers. ``core`` imports this
module (for ``Bag.to_textfiles``), so this one imports nothing from ``core``: ``core``
hands it the ``Bag`` class (``_BAG``) when it is imported.

Files are opened by the tasks, on the workers: the paths must be readable there too.

>>> import os, tempfile, xsched.bag as xb
>>> d = tempfile.mkdtemp()
>>> for i in range(2):
...     with open(os.path.join(d, f"log{i}.txt"), "w") as f:
...         _ = f.write(f"ok {i}\nerror {i}\n")
>>> b = xb.read_text(os.path.join(d, "log*.txt"))
>>> b.npartitions
2
>>> b.filter(lambda line: line.startswith("error")).compute()
['error 0\n', 'error 1\n']
"""

from __future__ import annotations

import bz2
import codecs
import gzip
import io
import lzma
import os
from typing import Any, Callable

from ..files import blocksize_bytes, byte_ranges, compression_of, expand_paths, file_token, filesystem_for, \
    line_block, make_folder, open_decompressed, parent, partition_names, shown
from ..graph.collection import run_writes
from ..graph.layers import annotations_in_force, chunk_key, new_token, per_task
from ..graph.spec import Ref, Task

__all__ = ["read_text", "to_textfiles", "from_url"]

_BAG: Any = None  # xsched.bag.core.Bag, set by core when it is imported

#: What each compression a file name implies turns the bytes to write into.
_COMPRESSORS = {None: lambda data: data, "gzip": lambda data: gzip.compress(data, mtime=0), "bz2": bz2.compress,
                "xz": lzma.compress}


def _compression(path: str, compression: str | None, what: str, known: Any) -> str | None:
    """The compression of ``path`` (``"infer"``: from its name), checked now rather than in a task."""
    comp = compression_of(path, compression)
    if comp not in known:
        raise ValueError(f"{what}: compression {comp!r} (for {path}) is not supported; use one of "
                         f"{', '.join(repr(c) for c in known)}, or 'infer' to go by the file name")
    return comp


# --------------------------------------------------------------------------- read_text


def read_text(urlpath: Any, blocksize: Any = None, compression: str | None = "infer", encoding: str = "utf-8",
              errors: str = "strict", linedelimiter: str | None = None, collection: bool = True,
              storage_options: dict | None = None, files_per_partition: int | None = None,
              include_path: bool = False) -> Any:
    r"""A Bag of the lines of text files, each line with its ``"\n"``.

    ``urlpath``: a path, a glob (``"logs/2024-*.txt"``), a directory (its files that are not
    hidden), a URL (``"s3://bucket/*.json"``, read with fsspec, ``storage_options`` going to
    its filesystem), or a list of them. One partition per file, ``files_per_partition``
    files per partition, or, with ``blocksize`` (bytes, or a string such as ``"64 MiB"``),
    one per block of each file, cut at line boundaries (a line belongs to the block its
    first byte is in). ``include_path=True`` gives ``(line, path)`` pairs. Line ends
    ``"\r\n"`` and ``"\r"`` are read as ``"\n"``, as ``open()`` does, with or without
    ``blocksize``. ``linedelimiter`` as ``open()``'s ``newline``: ``""`` (any line end,
    kept as it is), ``"\n"``, ``"\r"`` or ``"\r\n"`` (only that one ends a line); any
    other string splits there instead, each piece keeping it (``";"``: records ended by
    semicolons). Compressed files (``compression``: gzip, bz2, xz, zstd, or by default from
    the name, ``.gz``...) are read whole, one partition each. ``collection=False`` gives the
    partitions as a list of ``Delayed`` lists instead.

    >>> import os, tempfile, xsched.bag as xb
    >>> path = os.path.join(tempfile.mkdtemp(), "numbers.txt")
    >>> with open(path, "w") as f:
    ...     _ = f.write("".join(f"{i}\n" for i in range(10)))
    >>> b = xb.read_text(path, blocksize=8)
    >>> b.npartitions, b.map(int).sum().compute()
    (3, 45)
    >>> with open(path, "w") as f:
    ...     _ = f.write("a=1;b=2;c=3")
    >>> xb.read_text(path, linedelimiter=";", blocksize=4).compute()
    ['a=1;', 'b=2;', 'c=3']
    """
    if blocksize is not None and files_per_partition is not None:
        raise ValueError("read_text: give blocksize= (blocks of each file) or files_per_partition= (files "
                         "together), not both")
    if files_per_partition is not None:
        _check_positive(files_per_partition, "files_per_partition")
    if linedelimiter is not None and not isinstance(linedelimiter, str):
        raise ValueError(f"read_text: linedelimiter must be a string (or None: any line end, read as "
                         f"'\\n'), got {linedelimiter!r}")
    files = expand_paths(urlpath, storage_options, what="read_text")
    codecs.lookup(encoding)  # (a LookupError now, not on a worker)
    blocksize = blocksize_bytes(blocksize, "read_text")
    if blocksize is not None and linedelimiter and any(linedelimiter[:k] == linedelimiter[-k:]
                                                       for k in range(1, len(linedelimiter))):
        raise ValueError(f"read_text: blocksize= cannot cut files where a whole file splits with "
                         f"linedelimiter={linedelimiter!r}, which can overlap itself (in "
                         f"{linedelimiter + linedelimiter[1:]!r}); read such files whole (blocksize=None)")
    if blocksize is not None:
        if codecs.lookup(encoding).name.startswith(("utf-16", "utf-32")):
            raise ValueError(f"read_text: blocksize= cuts files at line ends, which needs an "
                             f"ASCII-compatible encoding (utf-8, latin-1...), not {encoding}; read "
                             "such files whole (blocksize=None)")
    pieces: list[tuple[Any, str, str | None, int | None, int | None]] = []
    for fs, path in files:
        comp = _compression(path, compression, "read_text", (None, "gzip", "bz2", "xz", "zstd", "zip", "tar"))
        size = fs.size(path) if blocksize is not None and comp is None else None
        pieces.extend((fs, path, comp, start, end) for start, end in byte_ranges(size, blocksize, comp))
    token = new_token("read-text", [file_token(fs, p) for fs, p in files], blocksize, encoding, errors,
                      include_path, compression, linedelimiter, files_per_partition)
    name = f"read-text-{token}"
    ann = annotations_in_force()
    per = files_per_partition or 1
    groups = [pieces[i:i + per] for i in range(0, len(pieces), per)]
    layer = {chunk_key(name, (i,)): Task(_read_lines, (group, encoding, errors, linedelimiter, include_path), {},
                                         per_task(ann))
             for i, group in enumerate(groups)}
    bag = _BAG(layer, name, len(layer))
    return bag if collection else bag.to_delayed()


def _check_positive(n: Any, arg: str) -> None:
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"read_text: {arg} must be a positive int, got {n!r}")


#: the ``linedelimiter``s that are ``open()``'s own ``newline`` values
_NEWLINES = (None, "", "\n", "\r", "\r\n")


def _read_lines(pieces: list, encoding: str, errors: str, linedelimiter: str | None,
                include_path: bool) -> list:
    r"""The lines of each piece (a file, or the block ``[start, end)`` of one): the task's work.

    A block holds the lines that begin in it, cut at the delimiter's bytes (``b"\n"`` for
    the line ends); they are then split and decoded as a whole file would be, so blocks
    change no line."""
    out: list = []
    for fs, path, compression, start, end in pieces:
        delimiter = (linedelimiter or "\n").encode(encoding)  # where blocks are cut
        with fs.open(path, "rb") as f:
            if start is None:
                data = open_decompressed(f, compression)
            else:
                data = io.BytesIO(line_block(f, start, end, delimiter))
            newline = linedelimiter if linedelimiter in _NEWLINES else ""
            try:
                with io.TextIOWrapper(data, encoding=encoding, errors=errors, newline=newline) as text:  # (closed)
                    if linedelimiter in _NEWLINES:
                        lines = list(text)
                    else:
                        parts = text.read().split(linedelimiter)
                        lines = [p + linedelimiter for p in parts[:-1]] + [p for p in parts[-1:] if p]
            except UnicodeDecodeError as exc:  # (which file, and the ways out)
                exc.add_note(f"(read_text: reading {shown(fs, path)} as {encoding}; give its encoding "
                             "(encoding='latin-1'...), errors='replace', or its compression= if it is compressed)")
                raise
        out.extend([(line, shown(fs, path)) for line in lines] if include_path else lines)
    return out


def from_url(urls: Any) -> Any:
    """A Bag of the lines (bytes, newlines kept) of web resources: a partition per URL (a
    string, or a list), fetched by the workers with the standard library's ``urllib``, so
    they must reach the URLs. For files on object stores use ``read_text`` with fsspec URLs.

    >>> import os, tempfile, pathlib, xsched.bag as xb
    >>> with tempfile.TemporaryDirectory() as d:
    ...     _ = open(os.path.join(d, "a.txt"), "w").write("one\\ntwo\\n")
    ...     xb.from_url(pathlib.Path(d, "a.txt").as_uri()).compute()
    [b'one\\n', b'two\\n']
    """
    urls = [urls] if isinstance(urls, str) else list(urls)
    if not urls or not all(isinstance(u, str) and "://" in u for u in urls):
        raise ValueError(f"from_url takes a URL (such as 'https://host/data.txt') or a list of them, got "
                         f"{urls!r}")
    name = f"from-url-{new_token('from-url', urls)}"
    ann = annotations_in_force()
    layer = {chunk_key(name, (i,)): Task(_url_lines, (url,), {}, per_task(ann)) for i, url in enumerate(urls)}
    return _BAG(layer, name, len(layer))


def _url_lines(url: str) -> list:
    """Run on the workers: the lines of one URL."""
    from urllib.request import urlopen

    with urlopen(url) as response:
        return list(response)


# --------------------------------------------------------------------------- to_textfiles


def _output_paths(path: Any, n: int, name_function: Callable[[int], str] | None) -> list[str]:
    if isinstance(path, (list, tuple)):
        if len(path) != n:
            raise ValueError(f"to_textfiles: {len(path)} paths given for {n} partitions; give one per "
                             "partition, or a pattern with '*'")
        return [os.fspath(p) for p in path]
    path = os.fspath(path)
    width = len(str(n - 1))
    names = partition_names(n, name_function or (lambda i: str(i).zfill(width)), "to_textfiles")
    if path.count("*") > 1:
        raise ValueError(f"to_textfiles: {path!r} has more than one '*'; use one (the partition number)")
    if "*" in path:
        return [path.replace("*", s) for s in names]
    return [f"{path.rstrip('/')}/{s}.part" for s in names]  # a directory


def to_textfiles(bag: Any, path: Any, name_function: Callable[[int], str] | None = None,
                 compression: str | None = "infer", encoding: str = "utf-8", compute: bool = True,
                 storage_options: dict | None = None, last_endline: bool = True) -> Any:
    r"""Write one text file per partition of ``bag``; its elements (str) are the lines.

    ``path``: a pattern whose ``*`` becomes the partition number (zero-padded so that the
    files sort in order, or ``name_function(i)``), a directory (files ``0.part``,
    ``1.part``...), or a list of one path per partition; URLs go through fsspec (with
    ``storage_options``). A ``"\n"`` is added to an element that does not end with one, so
    ``read_text`` gives back what was written (dask.bag adds one after every element but
    the last, even after a line's own); ``last_endline=False`` adds none to a file's last
    element. Files are compressed as their names say (``.gz``, ``.bz2``, ``.xz``)
    or as ``compression`` does (gzip, bz2, xz, None). Returns the paths written, as dask's,
    or, with ``compute=False``, a list of ``Delayed`` (one per file, computing to its path)
    that write when computed.

    >>> import os, tempfile, xsched.bag as xb
    >>> out = os.path.join(tempfile.mkdtemp(), "part-*.txt")
    >>> b = xb.from_sequence([f"line {i}" for i in range(12)], npartitions=11)
    >>> len(xb.to_textfiles(b, out))
    11
    >>> xb.read_text(out).take(2, npartitions=2)
    ('line 0\n', 'line 1\n')
    >>> sorted(os.listdir(os.path.dirname(out)))[:2]
    ['part-00.txt', 'part-01.txt']
    """
    n = bag.npartitions
    paths = _output_paths(path, n, name_function)
    codecs.lookup(encoding)
    targets = [(*filesystem_for(p, storage_options), _compression(p, compression, "to_textfiles", _COMPRESSORS))
               for p in paths]
    last_endline = bool(last_endline)
    name = f"to-textfiles-{new_token('to-textfiles', bag, paths, encoding, compression, last_endline)}"
    ann = annotations_in_force()
    layer = {chunk_key(name, (i,)): Task(_write_lines, (Ref(chunk_key(bag.name, (i,))), fs, p, encoding, comp,
                                                        last_endline), {}, per_task(ann))
             for i, (fs, p, comp) in enumerate(targets)}
    return run_writes(bag._graph, name, layer, list(layer), compute)


def _write_lines(part: list, fs: Any, path: str, encoding: str, compression: str | None,
                 last_endline: bool = True) -> str:
    """Write a partition's elements as lines (the task's work); returns the path."""
    for x in part:
        if not isinstance(x, str):
            raise TypeError(f"to_textfiles writes str elements, got {type(x).__name__} {x!r:.80} for "
                            f"{path}; map(str) or map(json.dumps) first")
    data = "".join(x if x.endswith("\n") else x + "\n" for x in part[:len(part) - (not last_endline)])
    if not last_endline and part:
        data += part[-1]
    directory = parent(fs, path)
    if directory:
        make_folder(fs, directory, "to_textfiles")
    with fs.open(path, "wb") as f:
        f.write(_COMPRESSORS[compression](data.encode(encoding)))
    return shown(fs, path)
