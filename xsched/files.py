"""Where the collections' files live: paths, globs, directories, lists and fsspec URLs,
as (filesystem, path) pairs.

``read_csv``, ``read_parquet``, ``to_csv``, ``to_parquet`` (``xsched.dataframe``) and
``read_text``, ``to_textfiles`` (``xsched.bag``) share this so that a local path, a glob,
a directory, a list of files and a URL such as ``s3://bucket/data/*.csv`` are expanded,
sorted and reported the same way. Local paths use the standard library only
(``LocalFileSystem`` below); a path with a protocol (``s3://``, ``memory://``, ...) goes
through fsspec, with ``storage_options`` passed to the filesystem. A filesystem travels
inside the tasks: fsspec filesystems pickle by their options, so workers open the files
themselves.

>>> import os, tempfile
>>> with tempfile.TemporaryDirectory() as d:
...     for name in ("part.10.csv", "part.2.csv"):
...         _ = open(os.path.join(d, name), "w").write("a\\n1\\n")
...     [os.path.basename(p) for _, p in expand_paths(os.path.join(d, "*.csv"))]
['part.2.csv', 'part.10.csv']
"""

from __future__ import annotations

import bz2
import contextlib
import glob as _globmod
import gzip
import lzma
import os
import re
import shutil
import tarfile
import zipfile
from typing import Any, BinaryIO, Callable, Iterable, Iterator

from .units import parse_bytes

__all__ = ["LocalFileSystem", "filesystem_for", "expand_paths", "is_pattern", "output_path", "shown", "join", "compression_of",
           "open_decompressed", "written_compression", "file_token", "natural_key", "parent", "blocksize_bytes", "byte_ranges",
           "line_block", "line_range", "head_lines", "arrow_source", "files_in", "folders_in", "listing"]

_PROTOCOL = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]+)://")
_MAGIC = re.compile(r"[*?\[]")

#: File name endings that mean a compressed file, for ``compression="infer"``.
COMPRESSIONS = {".tar.gz": "tar", ".tar.bz2": "tar", ".tar.xz": "tar", ".tar": "tar",  # (before .gz...)
                ".gz": "gzip", ".bz2": "bz2", ".xz": "xz", ".zst": "zstd", ".zip": "zip"}
#: how a tar archive of each name is compressed, as pandas writes it (``tarfile``'s modes)
TAR_MODES = {".tar.gz": "w:gz", ".tar.xz": "w:xz", ".tar.bz2": None}


class LocalFileSystem:
    """The local disk, with the few fsspec methods the readers and writers use.

    >>> import tempfile
    >>> fs = LocalFileSystem()
    >>> with tempfile.TemporaryDirectory() as d:
    ...     with fs.open(os.path.join(d, "a.txt"), "wb") as f:
    ...         _ = f.write(b"hello")
    ...     fs.size(os.path.join(d, "a.txt")), fs.isdir(d)
    (5, True)
    """

    protocol = "file"

    def open(self, path: str, mode: str = "rb") -> BinaryIO:
        return open(path, mode)

    def info(self, path: str) -> dict:
        st = os.stat(path)
        return {"name": path, "size": st.st_size, "mtime": st.st_mtime,
                "type": "directory" if os.path.isdir(path) else "file"}

    def size(self, path: str) -> int:
        return os.path.getsize(path)

    def isdir(self, path: str) -> bool:
        return os.path.isdir(path)

    def isfile(self, path: str) -> bool:
        return os.path.isfile(path)

    def exists(self, path: str) -> bool:
        return os.path.exists(path)

    def ls(self, path: str, detail: bool = False) -> list:
        return sorted(os.path.join(path, name) for name in os.listdir(path))

    def glob(self, pattern: str) -> list[str]:
        return sorted(_globmod.glob(pattern))

    def rm(self, path: str, recursive: bool = False) -> None:
        if recursive and os.path.isdir(path):
            shutil.rmtree(path)
        else:
            os.remove(path)

    def makedirs(self, path: str, exist_ok: bool = True) -> None:
        if path:
            os.makedirs(path, exist_ok=exist_ok)

    def unstrip_protocol(self, path: str) -> str:
        return path

    def __eq__(self, other: Any) -> bool:
        return type(other) is LocalFileSystem

    def __hash__(self) -> int:
        return hash(LocalFileSystem)

    def __repr__(self) -> str:
        return "LocalFileSystem()"


def output_path(filename: Any, what: str, default: str) -> str:
    """The absolute local path a file ``what`` writes (a page, a report) goes to, refused
    before any work when it cannot be: not a path, a directory (``default`` names a file to
    put in it), or in a directory that does not exist.

    >>> import os
    >>> output_path("report.html", "performance_report", "report.html") == os.path.abspath("report.html")
    True
    """
    try:
        path = os.path.abspath(os.path.expanduser(os.fspath(filename)))
    except TypeError:
        raise TypeError(f"{what}(filename=...) takes a path, not {type(filename).__name__}") from None
    if os.path.isdir(path):
        raise IsADirectoryError(f"{what}(filename={filename!r}) is a directory: name a file in it, "
                                f"e.g. {os.path.join(path, default)!r}")
    folder = os.path.dirname(path)
    if not os.path.isdir(folder):
        raise FileNotFoundError(f"{what} cannot write {path!r}: the directory {folder!r} does not "
                                "exist; create it first, or name a file in an existing directory")
    return path


def _is_local(fs: Any) -> bool:
    return isinstance(fs, LocalFileSystem)


def _from_pyarrow(filesystem: Any) -> Any:
    """A pyarrow filesystem as fsspec's (its wrapper; which pickles, to the workers), or None
    for pyarrow's local one: the local disk."""
    import pyarrow.fs

    if not isinstance(filesystem, pyarrow.fs.FileSystem):
        return filesystem
    if isinstance(filesystem, pyarrow.fs.LocalFileSystem):
        return None
    return __getattr__("_UncachedArrowFS")(filesystem)


def __getattr__(name: str) -> Any:
    """``_UncachedArrowFS``, made when first asked for (fsspec is an extra): fsspec's wrapper of
    a pyarrow filesystem that fsspec does not keep in its cache of instances (keyed by the
    pyarrow object's address, a worker would keep one for each task that unpickled one)."""
    if name == "_UncachedArrowFS":
        if name in globals():
            return globals()[name]
        from fsspec.implementations.arrow import ArrowFSWrapper

        cls = type(name, (ArrowFSWrapper,), {"cachable": False, "__module__": __name__})
        globals()[name] = cls
        return cls
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def filesystem_for(urlpath: Any, storage_options: dict | None = None, filesystem: Any = None) -> tuple[Any, str]:
    """The filesystem of one path or URL, and the path within it.

    Local paths (and ``file://`` URLs) need no fsspec; other protocols do, and
    ``storage_options`` go to their filesystem. A relative local path is made absolute
    here, from this process's directory: the workers that open it run elsewhere.
    ``filesystem``: an fsspec or pyarrow filesystem given to read on (a reader's
    ``filesystem=``; a local one is taken as the local disk, which pyarrow opens directly).

    >>> filesystem_for("data/x.csv") == (LocalFileSystem(), os.path.abspath("data/x.csv"))
    True
    >>> fs, path = filesystem_for("memory://tables/x.csv")
    >>> type(fs).__name__, path
    ('MemoryFileSystem', '/tables/x.csv')
    >>> import fsspec
    >>> fs, path = filesystem_for("/t/x.parquet", filesystem=fsspec.filesystem("memory"))
    >>> type(fs).__name__, path
    ('MemoryFileSystem', '/t/x.parquet')
    """
    urlpath = os.fspath(urlpath)
    if not isinstance(urlpath, str):
        raise TypeError(f"a path must be a str or os.PathLike, not {type(urlpath).__name__}")
    if filesystem is not None and type(filesystem).__module__.startswith("pyarrow"):
        filesystem = _from_pyarrow(filesystem)
    if filesystem is not None:
        if not (hasattr(filesystem, "open") and hasattr(filesystem, "_strip_protocol")):
            raise TypeError(f"filesystem= takes an fsspec filesystem (fsspec.filesystem('s3', ...)) or a "
                            f"pyarrow one (pyarrow.fs.S3FileSystem(...)), got {type(filesystem).__name__}; or "
                            "give a URL and storage_options=")
        protocols = filesystem.protocol if isinstance(filesystem.protocol, (tuple, list)) else (filesystem.protocol,)
        if not {"file", "local"} & set(protocols):
            return filesystem, filesystem._strip_protocol(urlpath)
    match = _PROTOCOL.match(urlpath)
    if match is None or match.group(1).lower() in ("file", "local"):
        path = urlpath[match.end():] if match else urlpath
        if not path:
            raise ValueError("an empty path names no file; give a file, a directory or a glob")
        return LocalFileSystem(), os.path.abspath(os.path.expanduser(path))
    try:
        import fsspec.core
    except ImportError as exc:  # pragma: no cover - installed with the dataframe extra
        raise ImportError(f"{urlpath!r} is a {match.group(1)}:// URL, which needs fsspec: "
                          f"pip install fsspec (and the package for {match.group(1)}://)") from exc
    fs, path = fsspec.core.url_to_fs(urlpath, **(storage_options or {}))
    return fs, path


def natural_key(path: str) -> list:
    """Sort key in which ``part.2`` comes before ``part.10``.

    >>> sorted(["p10", "p2", "p1"], key=natural_key)
    ['p1', 'p2', 'p10']
    """
    return [int(t) if i % 2 else t for i, t in enumerate(re.split(r"(\d+)", path))]


def shown(fs: Any, path: str) -> str:
    """How a file is named in messages and results: a URL for fsspec, the path if local.

    >>> shown(LocalFileSystem(), "/tmp/a.csv")
    '/tmp/a.csv'
    """
    return path if _is_local(fs) else fs.unstrip_protocol(path)


def join(fs: Any, directory: str, name: str) -> str:
    """``name`` inside ``directory`` on ``fs`` (``/`` separated unless local).

    >>> join(LocalFileSystem(), "out", "part.0.csv") == os.path.join("out", "part.0.csv")
    True
    """
    if _is_local(fs):
        return os.path.join(directory, name)
    return directory.rstrip("/") + "/" + name


def parent(fs: Any, path: str) -> str:
    """The directory holding ``path``.

    >>> fs, path = filesystem_for("memory://out/part.0.csv")
    >>> parent(fs, path), parent(LocalFileSystem(), os.path.join("out", "a.csv"))
    ('/out', 'out')
    """
    if _is_local(fs):
        return os.path.dirname(path)
    return path.rstrip("/").rsplit("/", 1)[0] if "/" in path.rstrip("/") else ""


def make_folder(fs: Any, directory: str, what: str) -> None:
    """Make ``directory`` (and its parents) for ``what`` to write into; when it cannot be made,
    the error names the writer, the folder and the reason, before any partition is written.

    >>> make_folder(LocalFileSystem(), "/proc/no/such", "to_parquet")
    Traceback (most recent call last):
    FileNotFoundError: to_parquet: cannot make the folder '/proc/no/such' to write into (No such file or directory); choose a path where you can write
    """
    try:
        fs.makedirs(directory, exist_ok=True)
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise type(exc)(f"{what}: cannot make the folder {shown(fs, directory)!r} to write into ({reason}); "
                        f"choose a path where you can write") from exc


def partition_names(n: int, name_function: Callable[[int], str] | None, what: str,
                    files: bool = False) -> list[str]:
    """What stands for each of ``n`` partitions in written names: ``str(i)``, or
    ``name_function(i)``, which must give a different str for each (checked now, before
    anything is written) and, with ``files``, a file's name rather than a path.

    >>> partition_names(3, lambda i: f"2000-01-{i + 1:02d}", "to_csv")
    ['2000-01-01', '2000-01-02', '2000-01-03']
    """
    if name_function is None:
        return [str(i) for i in range(n)]
    if not callable(name_function):
        raise TypeError(f"{what}: name_function must be a function of the partition number, got {name_function!r}")
    names = [name_function(i) for i in range(n)]
    if not all(isinstance(s, str) for s in names) or len(set(names)) < n:
        raise ValueError(f"{what}: name_function must give a different str for each partition, gave "
                         f"{names[:6]}{'...' if n > 6 else ''}")
    paths = [s for s in names if "/" in s or os.sep in s] if files else []
    if paths:
        raise ValueError(f"{what}: name_function names files in the output directory; it gave {paths[0]!r}, a "
                         "path. Give a pattern with '*' for files elsewhere")
    return names


def partition_paths(fs: Any, base: str, n: int, suffix: str, what: str,
                    name_function: Callable[[int], str] | None = None) -> list[str]:
    """Where ``n`` partitions are written: ``base`` with its one ``*`` replaced by each
    partition's number (or ``name_function(i)``), or files ``part.<i><suffix>`` in the
    directory ``base`` (or files named ``name_function(i)``); the directory is made.

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     [os.path.basename(p) for p in partition_paths(LocalFileSystem(), os.path.join(d, "a-*.json"), 2,
    ...                                                   ".json", "to_json")]
    ['a-0.json', 'a-1.json']
    """
    names = partition_names(n, name_function, what, files="*" not in base)
    if "*" in base:
        if base.count("*") > 1:
            raise ValueError(f"{what}: {base!r} has more than one '*'; use one, replaced by the partition number")
        make_folder(fs, parent(fs, base), what)
        return [base.replace("*", s) for s in names]
    make_folder(fs, base, what)
    if name_function is None:
        return [join(fs, base, f"part.{s}{suffix}") for s in names]
    return [join(fs, base, s) for s in names]


def _is_data_file(fs: Any, path: str) -> bool:
    name = path.rstrip("/").rsplit("/", 1)[-1]
    if _is_local(fs):
        name = os.path.basename(path)
    return not name.startswith(("_", "."))


def listing(fs: Any, directory: str, suffixes: tuple[str, ...] = ()) -> tuple[list[str], list[str]]:
    """A directory's data files and its folders, each in natural order, from one listing (a
    request, on an object store): files neither hidden nor ``_metadata``-like, those ending
    with one of ``suffixes`` when there are any; folders not hidden.

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     for name in ("part.10.csv", "part.2.csv", "_SUCCESS", "notes.txt"):
    ...         _ = open(os.path.join(d, name), "w").write("a\\n")
    ...     for name in ("k=10", "k=2", ".cache"):
    ...         os.mkdir(os.path.join(d, name))
    ...     files, folders = listing(LocalFileSystem(), d, (".csv",))
    ...     [os.path.basename(p) for p in files], [os.path.basename(p) for p in folders]
    (['part.2.csv', 'part.10.csv'], ['k=2', 'k=10'])
    """
    if _is_local(fs):
        entries = [(p, os.path.isdir(p)) for p in fs.ls(directory) if os.path.isdir(p) or os.path.isfile(p)]
    else:  # (some stores list a folder made by hand as inside itself, as "dir/")
        entries = [(e["name"].rstrip("/") if e.get("type") == "directory" else e["name"], e.get("type") == "directory")
                   for e in fs.ls(directory, detail=True)]
        entries = [(p, folder) for p, folder in entries if not (folder and p == directory.rstrip("/"))]
    files = [p for p, folder in entries if not folder and _is_data_file(fs, p)]
    if suffixes:
        files = [p for p, folder in entries if not folder and _is_data_file(fs, p) and p.endswith(suffixes)] or files
    folders = [p for p, folder in entries if folder and not p.rsplit("/", 1)[-1].startswith(".")]
    return sorted(files, key=natural_key), sorted(folders, key=natural_key)


def files_in(fs: Any, directory: str, suffixes: tuple[str, ...] = ()) -> list[str]:
    """The data files of a directory, in natural order (``listing``'s first half).

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     _ = open(os.path.join(d, "a.csv"), "w").write("a\\n")
    ...     [os.path.basename(p) for p in files_in(LocalFileSystem(), d)]
    ['a.csv']
    """
    return listing(fs, directory, suffixes)[0]


def folders_in(fs: Any, directory: str) -> list[str]:
    """The folders inside a directory, in natural order (``listing``'s second half).

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     os.mkdir(os.path.join(d, "k=1"))
    ...     [os.path.basename(p) for p in folders_in(LocalFileSystem(), d)]
    ['k=1']
    """
    return listing(fs, directory)[1]


def _pattern_of(fs: Any, item: str, path: str) -> str | None:
    """The glob pattern ``item`` is, or None when it names one file or directory: for a local
    path, only what the user wrote counts (``[`` or ``*`` in the directory a relative path is
    made absolute from is part of a name), and that directory is escaped in the pattern.

    >>> _pattern_of(LocalFileSystem(), "data.csv", "/tmp/a[1]/data.csv") is None
    True
    """
    if not _is_local(fs):
        return path if _MAGIC.search(path) else None
    match = _PROTOCOL.match(item)
    written = os.path.expanduser(item[match.end():] if match else item)
    if not _MAGIC.search(written):
        return None
    return written if os.path.isabs(written) else os.path.join(_globmod.escape(os.getcwd()), written)


def is_pattern(urlpath: Any) -> bool:
    """Whether a path as the user wrote it is a glob (``*``, ``?``, ``[``): of the files it
    matches, not of a dataset's folders.

    >>> is_pattern("data/*.parquet"), is_pattern("data")
    (True, False)
    """
    return not isinstance(urlpath, (list, tuple)) and bool(_MAGIC.search(os.fspath(urlpath)))


def _glob(fs: Any, pattern: str) -> list[str]:
    if _is_local(fs):
        found = [p for p in fs.glob(pattern) if os.path.isfile(p)]
    else:
        found = [name for name, e in fs.glob(pattern, detail=True).items() if e.get("type") != "directory"]
    return sorted(found, key=natural_key)


def _search_dir(fs: Any, pattern: str) -> str:
    """The directory a pattern (or a missing file) is looked for in: its part before the
    first wildcard, up to the last separator."""
    m = _MAGIC.search(pattern)
    head = pattern[:m.start()] if m else pattern
    if _is_local(fs):
        return os.path.abspath(os.path.dirname(head) or ".")
    d = head[:head.rfind("/")] if "/" in head else ""
    return d or ("/" if head.startswith("/") else "")


def _missing(what: str, item: str, fs: Any, path: str) -> FileNotFoundError:
    d = _search_dir(fs, path)
    try:
        names = ([os.path.basename(str(p).rstrip("/")) for p in fs.ls(d, detail=False)]
                 if fs.isdir(d) else None)
    except Exception:  # a listing is only a hint
        names = None
    if names is None:
        there = "that directory does not exist"
    elif not names:
        there = "that directory is empty"
    else:
        listed = ", ".join(sorted(names, key=natural_key)[:8]) + (", ..." if len(names) > 8 else "")
        there = f"it holds {len(names)} entries: {listed}"
    kind = "no file matches" if _MAGIC.search(path) else "no such file"
    return FileNotFoundError(f"{what}: {kind} {item!r} (searched {shown(fs, d)}; {there}); check the "
                             "path, or pass a list of the files")


def nested_files(fs: Any, directory: str, suffixes: tuple[str, ...] = ()) -> list[str]:
    """The data files under a directory and its folders, at any depth, in the natural order
    of their paths (``a/b/p`` before ``a/q``, as pyarrow's datasets order them): those ending
    with one of ``suffixes`` when any does; no folder that is hidden or starts with ``_``.

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     for sub in ("b", "a/x"):
    ...         os.makedirs(os.path.join(d, sub))
    ...         _ = open(os.path.join(d, sub, "part.0.csv"), "w").write("a\\n")
    ...     [os.path.relpath(p, d) for p in nested_files(LocalFileSystem(), d)]
    ['a/x/part.0.csv', 'b/part.0.csv']
    """
    found = _under(fs, directory)
    if suffixes:  # (the endings chosen over the whole tree, not folder by folder)
        found = [p for p in found if p.endswith(suffixes)] or found
    return sorted(found, key=natural_key)


def _under(fs: Any, directory: str) -> list[str]:
    """Every data file under ``directory``; folders hidden or starting with ``_`` (a Spark
    job's ``_temporary``, a Delta table's ``_delta_log``) are skipped, as pyarrow skips them."""
    files, folders = listing(fs, directory)
    return files + [p for folder in folders if not folder.rsplit("/", 1)[-1].startswith("_")
                    for p in _under(fs, folder)]


def expand_paths(urlpath: Any, storage_options: dict | None = None, what: str = "read",
                 suffixes: Iterable[str] = (), filesystem: Any = None,
                 nested: bool = False) -> list[tuple[Any, str]]:
    """The files named by a path, a glob, a directory, or a list of those, in order.

    Globs and directories are sorted naturally (``part.2`` before ``part.10``); a list
    keeps its order. A directory gives its files that are not hidden (``.x``, ``_x``),
    those ending with one of ``suffixes`` when it holds any. Raises ``FileNotFoundError``
    naming the pattern and the directory searched when nothing matches. ``filesystem``: an
    fsspec filesystem to read the paths on (instead of one made from their URLs);
    ``nested``: a directory gives its files and those of its folders, at any depth (as
    pyarrow's datasets read one).

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     expand_paths(os.path.join(d, "*.csv"), what="read_csv")
    Traceback (most recent call last):
    ...
    FileNotFoundError: read_csv: no file matches '.../*.csv' (searched ...; that directory is empty); ...
    """
    items = list(urlpath) if isinstance(urlpath, (list, tuple)) else [urlpath]
    if not items:
        raise ValueError(f"{what}: the list of paths is empty")
    suffixes = tuple(suffixes)
    out: list[tuple[Any, str]] = []
    for item in items:
        item = os.fspath(item)
        fs, path = filesystem_for(item, storage_options, filesystem)
        if not _is_local(fs) and hasattr(fs, "invalidate_cache"):
            fs.invalidate_cache()  # (listings cached here may predate files the workers wrote)
        pattern = _pattern_of(fs, item, path)
        if pattern is not None:
            found = _glob(fs, pattern)
        elif fs.isdir(path):
            found = nested_files(fs, path, suffixes) if nested else files_in(fs, path, suffixes)
            if not found:
                subdirs = [str(p).rstrip("/").rsplit("/", 1)[-1] for p in folders_in(fs, path)]
                hint = (f"; its folders ({', '.join(subdirs[:4])}{', ...' if len(subdirs) > 4 else ''}) are not "
                        f"read here (read_parquet reads a 'key=value' folder layout): pass a glob such as "
                        f"{os.path.join(item, '*', '*')!r}" if subdirs else "")
                raise FileNotFoundError(f"{what}: the directory {item!r} holds no data files "
                                        f"(hidden and _-prefixed files are skipped){hint}")
        elif fs.exists(path):
            found = [path]
        else:
            found = []
        if not found:
            raise _missing(what, item, fs, path)
        out.extend((fs, p) for p in found)
    return out


@contextlib.contextmanager
def arrow_source(fs: Any, path: str) -> Iterator[Any]:
    """What pyarrow's readers (parquet, ORC) read from: the path itself on the local disk,
    which pyarrow opens and maps itself, else an fsspec file."""
    if isinstance(fs, LocalFileSystem):
        yield path
    else:
        with fs.open(path, "rb") as f:
            yield f


def file_token(fs: Any, path: str) -> tuple:
    """What identifies a file's contents cheaply: its name, size, and modification time or ETag.

    >>> import tempfile
    >>> with tempfile.NamedTemporaryFile() as f:
    ...     _ = f.write(b"abc"); f.flush()
    ...     file_token(LocalFileSystem(), f.name)[1]
    3
    """
    info = fs.info(path)
    stamp = next((info[k] for k in ("mtime", "LastModified", "ETag", "etag", "created", "modified")
                  if info.get(k) is not None), None)
    return shown(fs, path), info.get("size"), str(stamp)


def compression_of(path: str, compression: str | None = "infer") -> str | None:
    """The compression of a file: ``compression`` itself, or guessed from the name for "infer".

    >>> compression_of("a.csv.gz"), compression_of("a.csv"), compression_of("a.csv", "bz2")
    ('gzip', None, 'bz2')
    """
    if compression != "infer":
        return compression
    for ending, name in COMPRESSIONS.items():
        if path.lower().endswith(ending):
            return name
    return None


def written_compression(path: str, compression: Any = "infer") -> Any:
    """What pandas' writers take as ``compression=`` for a file of this name, given an open
    handle (from which pandas guesses nothing): ``compression_of``'s, and for a tar archive
    whose name says it is compressed (``.tar.gz``), pandas' dict that says so.

    >>> written_compression("a.csv.tar.gz"), written_compression("a.csv.gz"), written_compression("a.csv")
    ({'method': 'tar', 'mode': 'w:gz'}, 'gzip', None)
    """
    comp = compression_of(path, compression)
    if comp == "tar" and compression == "infer":
        for ending, mode in TAR_MODES.items():
            if not path.lower().endswith(ending):
                continue
            if mode is None:  # (pandas reads "w:bz2" as "w:z2")
                raise ValueError(f"writing {path}: pandas cannot write a bz2-compressed tar archive to an open "
                                 "file; name it .tar.gz or .tar.xz, or .bz2 for a compressed file of its own")
            return {"method": "tar", "mode": mode}
    return comp


def open_decompressed(f: BinaryIO, compression: str | None) -> BinaryIO:
    """A readable binary file of the decompressed bytes of the open file ``f``.

    >>> import io
    >>> open_decompressed(io.BytesIO(gzip.compress(b"a,b")), "gzip").read()
    b'a,b'

    A zip or tar archive must hold one file (as pandas reads them), which is read.
    """
    if compression is None:
        return f
    if compression == "gzip":
        return gzip.GzipFile(fileobj=f, mode="rb")
    if compression == "bz2":
        return bz2.BZ2File(f, mode="rb")
    if compression == "xz":
        return lzma.LZMAFile(f, mode="rb")
    if compression == "zstd":
        try:
            import zstandard
        except ImportError as exc:
            raise ImportError("reading .zst files needs zstandard: pip install zstandard") from exc
        return zstandard.ZstdDecompressor().stream_reader(f)
    if compression == "zip":
        archive = zipfile.ZipFile(f)
        return archive.open(_only_member([i.filename for i in archive.infolist() if not i.is_dir()], "zip"))
    if compression == "tar":
        tar = tarfile.open(fileobj=f, mode="r:*")
        files = {m.name: m for m in tar.getmembers() if m.isfile()}
        return tar.extractfile(files[_only_member(list(files), "tar")])
    raise ValueError(f"compression {compression!r} is not supported for reading here; use one of "
                     "gzip, bz2, xz, zstd, zip, tar, or decompress the files first")


def _only_member(names: list, kind: str) -> str:
    """The one file of an archive read as a compressed file, as pandas requires it."""
    if len(names) != 1:
        raise ValueError(f"a {kind} archive read as one compressed file must hold exactly one file, and this one "
                         f"holds {len(names)}{': ' + ', '.join(names[:5]) if names else ''}; extract them and read "
                         "the files (a list of paths or a glob)")
    return names[0]


# --------------------------------------------------------------------------- byte blocks of text files
# A reader with ``blocksize=`` (CSV, line-delimited JSON, fixed-width text, a bag's lines)
# cuts each uncompressed file into byte ranges read independently: a range owns the lines
# that begin after the first newline at or after its start (from the beginning for start 0)
# up to the first newline at or after its end, so every line belongs to exactly one range.

_LINE_CHUNK = 64 * 1024


def blocksize_bytes(blocksize: Any, what: str, arg: str = "blocksize", whole: bool = True) -> int | None:
    """A reader's ``blocksize=`` (or another argument ``arg`` of bytes per partition) as a
    positive number of bytes (None: whole files; refused where ``whole`` is False).

    >>> blocksize_bytes("64MB", "read_csv"), blocksize_bytes(None, "read_csv")
    (64000000, None)
    """
    if blocksize is None and whole:
        return None
    try:
        n = parse_bytes(blocksize) if not isinstance(blocksize, bool) and blocksize is not None else 0
    except ValueError:
        n = 0
    if n < 1:
        raise ValueError(f"{what}: {arg} must be a positive number of bytes (an int, or a string "
                         f"like '64MB'), got {blocksize!r}")
    return n


def byte_ranges(size: int | None, blocksize: int | None, compression: str | None) -> list[tuple]:
    """The ``(start, end)`` byte ranges a file of ``size`` bytes is read in: ``[(None, None)]``,
    the whole file, without a blocksize, for a compressed file (it cannot be cut) or an empty one.

    >>> byte_ranges(10, 4, None), byte_ranges(10, 4, "gzip")
    ([(0, 4), (4, 8), (8, 10)], [(None, None)])
    """
    if blocksize is None or compression is not None or not size:
        return [(None, None)]
    return [(start, min(start + blocksize, size)) for start in range(0, size, blocksize)]


def next_line_start(f: BinaryIO, pos: int, delimiter: bytes = b"\n") -> int:
    """The offset just after the first ``delimiter`` that ends at or after ``pos`` of the
    open file ``f`` (or its end); a delimiter of several bytes is found across reads.

    >>> import io
    >>> f = io.BytesIO(b"a||b||c")
    >>> next_line_start(f, 0, b"||"), next_line_start(f, 2, b"||"), next_line_start(f, 6, b"||")
    (3, 3, 7)
    """
    keep = len(delimiter) - 1  # a delimiter's first bytes may end a read
    start = max(0, pos - keep)
    f.seek(start)
    tail = b""
    while True:
        chunk = f.read(_LINE_CHUNK)
        if not chunk:
            return start + len(tail)
        data = tail + chunk
        i = data.find(delimiter)
        if i >= 0:
            return start + i + len(delimiter)
        cut = max(0, len(data) - keep)
        start, tail = start + cut, data[cut:]


def head_lines(f: BinaryIO, size: int, min_lines: int = 1) -> bytes:
    """About the first ``size`` bytes of the open file ``f`` as whole lines, at least
    ``min_lines`` of them (however long); the whole file when it is that short: the sample
    the readers take their columns and dtypes from.

    >>> import io
    >>> head_lines(io.BytesIO(b"a,b\\n1,2\\n3,4\\n"), 5), head_lines(io.BytesIO(b"a,b\\n1,2\\n"), 2, min_lines=2)
    (b'a,b\\n', b'a,b\\n1,2\\n')
    """
    data = f.read(size)
    if len(data) < size:
        return data
    more = b"..."
    while data.count(b"\n") < min_lines and more:
        more = f.read(_LINE_CHUNK)
        data += more
    more = more and f.read(1)  # (at the end of the file its last line is whole)
    cut = data.rfind(b"\n")
    return data[:cut + 1] if cut >= 0 and more else data


def line_range(f: BinaryIO, start: int, end: int, delimiter: bytes = b"\n") -> tuple[int, int]:
    """Where the lines the byte range ``[start, end)`` owns begin and end in ``f``."""
    begin = next_line_start(f, start, delimiter) if start > 0 else 0
    return begin, max(begin, next_line_start(f, end, delimiter))


def line_block(f: BinaryIO, start: int, end: int, delimiter: bytes = b"\n") -> bytes:
    """The lines (ended by ``delimiter``) of the open binary file ``f`` that the byte range
    ``[start, end)`` owns.

    >>> import io
    >>> f = io.BytesIO(b"a,b\\n1,2\\n3,4\\n5,6")
    >>> [line_block(f, s, s + 5) for s in range(0, 15, 5)]
    [b'a,b\\n1,2\\n', b'3,4\\n', b'5,6']
    """
    begin, stop = line_range(f, start, end, delimiter)
    f.seek(begin)
    return f.read(stop - begin)
