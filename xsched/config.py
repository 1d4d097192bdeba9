"""Layered configuration: packaged defaults < YAML files < environment < inline < ``set()``.

Layers, lowest first, each checked against :mod:`xsched.config_schema`:

1. ``xsched/xsched.yaml``, the packaged defaults;
2. YAML files: ``~/.config/xsched/*.yaml`` (or ``$XDG_CONFIG_HOME/xsched``), then
   ``$XSCHED_CONFIG`` (files or directories, separated by ``os.pathsep``);
3. environment variables ``XSCHED_<SECTION>__<KEY>``: ``__`` nests, ``_`` in a key stands for
   ``-``, names under ``worker.resources`` keep their case, values are YAML scalars and
   ``100e9`` is a number (``XSCHED_WORKER__RESOURCES__GPU=2``);
4. ``XSCHED_INLINE_CONFIG``: YAML written by :func:`to_env` so worker processes see what their
   parent saw, ``set()`` included. It sits above (3) because the child inherits the parent's
   environment and the parent's ``set()`` already won over it;
5. :func:`set`, in this process.

Files and environment are read on first use and by :func:`refresh`; a bad value anywhere raises
:class:`ConfigError` (a ValueError) naming the key, the value, its source and the expected type.

dask's names for the settings xsched shares with it (``distributed.scheduler.allowed-failures``,
``distributed.worker.memory.target``, ... : ``xsched.config_schema.DASK_NAMES``) are accepted in
every layer and set xsched's key, with a notice naming it (a ``DaskConfigName`` warning, once
per name); any other ``distributed.*`` name is an unknown key.

>>> import xsched.config as config
>>> config.get("worker.memory.target")
0.6
>>> with config.set({"worker.memory.target": 0.5}):
...     config.get("worker.memory.target")
0.5
"""

from __future__ import annotations

import glob
import os
import re
import threading
from collections.abc import Mapping
from pathlib import Path as FilePath
from typing import Any

import yaml

from xsched.config_schema import (
    SCHEMA,
    ConfigError,
    Leaf,
    Node,
    OpenMap,
    Section,
    all_keys,
    flatten,
    nest,
    resolve,
)

__all__ = ["get", "set", "refresh", "to_env", "pretty", "describe", "ConfigError", "INLINE_VAR", "PREFIX"]

PREFIX = "XSCHED_"
INLINE_VAR = "XSCHED_INLINE_CONFIG"
CONFIG_VAR = "XSCHED_CONFIG"
DEFAULTS_FILE = FilePath(__file__).with_name("xsched.yaml")
DEFAULTS = "packaged defaults"

Path = tuple[str, ...]
_NO_DEFAULT: Any = object()
_MISSING: Any = object()


# --- YAML that reads 100e9 as a number ------------------------------------------------------------

# YAML 1.1 (PyYAML) wants a dot and a signed exponent in floats, so "100e9" would be a string.
_FLOAT = re.compile(r"^[-+]?[0-9][0-9_]*(?:\.[0-9_]*)?[eE][-+]?[0-9]+$")


class _Loader(yaml.SafeLoader):
    pass


class _Dumper(yaml.SafeDumper):
    pass


for _cls in (_Loader, _Dumper):  # the dumper must know too, so it quotes the string "1e9"
    _cls.add_implicit_resolver("tag:yaml.org,2002:float", _FLOAT, list("-+0123456789"))


def _load_yaml(text: str, source: str) -> Any:
    try:
        return yaml.load(text, Loader=_Loader)
    except yaml.YAMLError as e:
        raise ConfigError(f"Cannot read {source} as YAML: {e}") from None


def _dump_scalar(value: Any) -> str:
    text = yaml.dump(value, Dumper=_Dumper, default_flow_style=True, width=10**9)
    return text.removesuffix("\n").removesuffix("\n...").strip()


# --- reading the layers --------------------------------------------------------------------------


class _Layer:
    """One source of settings as ``{leaf path: value}`` and, per leaf, where it came from."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.values: dict[Path, Any] = {}
        self.sources: dict[Path, str] = {}

    def add(self, flat: Mapping[Path, Any], source: str) -> None:
        self.values.update(flat)
        self.sources.update(dict.fromkeys(flat, source))


def _file_layer(path: str, layer: _Layer) -> None:
    source = f"file {path}"
    try:
        text = FilePath(path).read_text()
    except OSError as e:
        raise ConfigError(f"Cannot read config {source}: {e.strerror or e}.") from None
    data = _load_yaml(text, source)
    if data is None:
        return
    if not isinstance(data, Mapping):
        raise ConfigError(f"Config {source} must hold a mapping of sections, not {type(data).__name__}.")
    layer.add(flatten((), data, source), source)


def _yaml_files() -> list[str]:
    xdg = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    paths = [os.path.join(xdg, "xsched")]
    paths += [p for p in os.environ.get(CONFIG_VAR, "").split(os.pathsep) if p]
    files: list[str] = []
    for i, p in enumerate(paths):
        if os.path.isdir(p):
            files += sorted(glob.glob(os.path.join(p, "*.yaml")) + glob.glob(os.path.join(p, "*.yml")))
        elif os.path.exists(p):
            files.append(p)
        elif i > 0:  # ~/.config/xsched is optional; a path the user named is not
            raise ConfigError(
                f"{CONFIG_VAR} names {p!r}, which does not exist; set it to a YAML file or a directory."
            )
    return files


def _env_parts(name: str) -> list[str]:
    """``XSCHED_WORKER__RESOURCES__GPU`` -> ``['worker', 'resources', 'GPU']``."""
    parts: list[str] = []
    node: Node | None = SCHEMA
    for part in name[len(PREFIX):].split("__"):
        if isinstance(node, OpenMap):
            parts.append(part)  # a user-chosen name: keep its case and underscores
            node = None
            continue
        parts.append(part.lower().replace("_", "-"))
        node = node.children.get(parts[-1]) if isinstance(node, Section) else None
    return parts


def parse_env_value(text: str) -> Any:
    """An environment variable's value as YAML, with ``100e9`` a number.

    >>> parse_env_value("100e9"), parse_env_value("2"), parse_env_value("inf"), parse_env_value("30s")
    (100000000000.0, 2, 'inf', '30s')
    """
    return _load_yaml(text, "an environment variable")


def _env_layer(environ: Mapping[str, str]) -> _Layer:
    layer = _Layer("environment")
    for name in sorted(environ):
        if not name.startswith(PREFIX) or "__" not in name or name in (INLINE_VAR, CONFIG_VAR):
            continue
        source = f"environment variable {name}"
        try:
            value = _load_yaml(environ[name], source)
        except ConfigError:
            value = environ[name]
        layer.add(flatten(_env_parts(name), value, source), source)
    return layer


def _inline_layer(environ: Mapping[str, str]) -> _Layer:
    layer = _Layer(INLINE_VAR)
    text = environ.get(INLINE_VAR)
    if text:
        source = f"environment variable {INLINE_VAR}"
        data = _load_yaml(text, source)
        if data is not None:
            layer.add(flatten((), data, source), source)
    return layer


def _read_layers() -> list[_Layer]:
    defaults = _Layer(DEFAULTS)
    _file_layer(str(DEFAULTS_FILE), defaults)
    defaults.sources = dict.fromkeys(defaults.values, DEFAULTS)
    files = _Layer("files")
    for path in _yaml_files():
        _file_layer(path, files)
    environ = dict(os.environ)
    return [defaults, files, _env_layer(environ), _inline_layer(environ)]


# --- state ---------------------------------------------------------------------------------------

_lock = threading.RLock()
_layers: list[_Layer] | None = None
_overrides = _Layer("config.set()")
_effective: dict[str, Any] = {}
_flat: dict[Path, Any] = {}
_sources: dict[Path, str] = {}


def _rebuild() -> None:
    global _effective, _flat, _sources
    assert _layers is not None
    flat: dict[Path, Any] = {}
    sources: dict[Path, str] = {}
    for layer in [*_layers, _overrides]:
        flat.update(layer.values)
        sources.update(layer.sources)
    _flat, _sources, _effective = flat, sources, nest(flat)


def _ensure_loaded() -> None:
    if _layers is None:
        refresh()


def refresh() -> None:
    """Re-read the YAML files and environment variables; values from :func:`set` stay.

    >>> import os, xsched.config as config
    >>> os.environ["XSCHED_WORKER__NTHREADS"] = "3"; config.refresh()
    >>> config.get("worker.nthreads")
    3
    >>> del os.environ["XSCHED_WORKER__NTHREADS"]; config.refresh()
    """
    global _layers
    layers = _read_layers()  # raises before touching the current state
    with _lock:
        _layers = layers
        _rebuild()


# --- public API ----------------------------------------------------------------------------------


def _split(key: str) -> list[str]:
    if not isinstance(key, str) or not key:
        raise ConfigError(f"Config keys are dotted strings such as 'worker.memory.target', not {key!r}.")
    return key.split(".")


def get(key: str, default: Any = _NO_DEFAULT) -> Any:
    """The effective value of a dotted key (a copy of the dict for sections).

    Without ``default``, a missing key raises KeyError naming close matches.

    >>> import xsched.config as config
    >>> config.get("comm.timeouts.connect"), config.get("worker.resources.GPU", 0)
    ('10s', 0)
    """
    _ensure_loaded()
    try:
        path, _ = resolve(_split(key))
    except ConfigError as e:
        if default is not _NO_DEFAULT:
            return default
        raise KeyError(str(e)) from None
    value: Any = _effective
    for part in path:
        if not isinstance(value, dict) or part not in value:
            if default is not _NO_DEFAULT:
                return default
            declared = (", ".join(map(repr, value)) if isinstance(value, dict) else "") or "none"
            raise KeyError(
                f"Config key {key!r} is not set (names set under {'.'.join(path[:-1])!r}: {declared}); "
                "pass a default, e.g. config.get(key, 0)."
            )
        value = value[part]
    return _copy(value)


def _copy(value: Any) -> Any:
    return {k: _copy(v) for k, v in value.items()} if isinstance(value, dict) else value


def _kwarg_updates(kwargs: Mapping[str, Any]) -> dict[str, Any]:
    return {".".join(k.split("__")): v for k, v in kwargs.items()}


def _collect(arg: Mapping[str, Any] | None, kwargs: Mapping[str, Any], source: str) -> dict[Path, Any]:
    if arg is not None and not isinstance(arg, Mapping):
        raise TypeError(
            f"config.set() takes a dict of dotted keys, e.g. {{'worker.memory.target': 0.5}}, not {arg!r}."
        )
    flat: dict[Path, Any] = {}
    for key, value in [*(arg or {}).items(), *_kwarg_updates(kwargs).items()]:
        flat.update(flatten(tuple(_split(key)), value, source))
    return flat


class _Setter:
    """What :func:`set` returns: the change is already made; leaving a ``with`` block undoes it."""

    def __init__(self, previous: list[tuple[Path, Any]]) -> None:
        self._previous = previous

    def __enter__(self) -> "_Setter":
        return self

    def __exit__(self, *exc: object) -> None:
        with _lock:
            for path, old in reversed(self._previous):
                if old is _MISSING:
                    _overrides.values.pop(path, None)
                    _overrides.sources.pop(path, None)
                else:
                    _overrides.values[path] = old
                    _overrides.sources[path] = _overrides.name
            _rebuild()

    def __repr__(self) -> str:
        return f"<xsched.config.set of {', '.join('.'.join(p) for p, _ in self._previous)}>"


def set(arg: Mapping[str, Any] | None = None, /, **kwargs: Any) -> _Setter:
    """Override settings in this process; as a context manager, restore them on exit.

    Dotted keys or nested dicts; keyword names use ``__`` for dots and ``_`` for dashes.
    Dicts merge into what is there (setting ``worker.resources`` adds names, never removes).

    >>> import xsched.config as config
    >>> with config.set({"worker.resources.GPU": 2}, scheduler__worker_saturation="inf"):
    ...     config.get("worker.resources"), config.get("scheduler.worker-saturation")
    ({'GPU': 2}, 'inf')
    """
    _ensure_loaded()
    flat = _collect(arg, kwargs, "config.set()")  # validates everything before changing anything
    with _lock:
        previous = [(path, _overrides.values.get(path, _MISSING)) for path in flat]
        _overrides.add(flat, _overrides.name)
        _rebuild()
    return _Setter(previous)


def to_env(overrides: Mapping[str, Any] | None = None) -> dict[str, str]:
    """Environment variables that give a child process this process's configuration.

    Every value not from the packaged defaults (files, environment, ``set()``), plus
    ``overrides`` (same form as :func:`set`), goes into one YAML variable. Start children with
    ``env={**os.environ, **config.to_env()}``.

    >>> import xsched.config as config
    >>> with config.set({"worker.nthreads": 2}):
    ...     config.to_env({"worker.resources.GPU": 1})
    {'XSCHED_INLINE_CONFIG': '{worker: {nthreads: 2, resources: {GPU: 1}}}'}
    """
    _ensure_loaded()
    extra = _collect(overrides, {}, "to_env(overrides)")
    with _lock:
        flat = {p: v for p, v in _flat.items() if _sources.get(p) != DEFAULTS}
    flat.update(extra)
    return {INLINE_VAR: _dump_scalar(_prune(nest(flat)))}


def _prune(tree: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for k, v in tree.items():
        if isinstance(v, dict):
            v = _prune(v)
            if not v:
                continue
        out[k] = v
    return out


def _short(source: str) -> str:
    return source.replace("environment variable ", "env ").replace(os.path.expanduser("~"), "~", 1)


def pretty() -> str:
    """The effective configuration as YAML; comments name the source of each non-default value.

    >>> import xsched.config as config
    >>> print(config.pretty())  # doctest: +ELLIPSIS
    # xsched configuration ...
    scheduler:
      worker-saturation: 1.0
    ...
    """
    _ensure_loaded()
    with _lock:
        effective, sources = _effective, dict(_sources)
    lines = [
        f"# xsched configuration (effective). Defaults: {DEFAULTS_FILE.as_posix()}",
        "# Non-default values name their source; precedence: defaults < files < env < inline < set().",
    ]

    def emit(tree: dict[str, Any], path: Path, indent: str) -> None:
        for name, value in tree.items():
            key = _dump_scalar(name)
            if isinstance(value, dict) and (value or not isinstance(_node(path + (name,)), Leaf)):
                if not value:
                    lines.append(f"{indent}{key}: {{}}")
                    continue
                lines.append(f"{indent}{key}:")
                emit(value, path + (name,), indent + "  ")
                continue
            source = sources.get(path + (name,), DEFAULTS)
            comment = "" if source == DEFAULTS else f"  # {_short(source)}"
            lines.append(f"{indent}{key}: {_dump_scalar(value)}{comment}")

    emit(effective, (), "")
    return "\n".join(lines) + "\n"


def _node(path: Path) -> Node | None:
    try:
        return resolve(path)[1]
    except ConfigError:
        return None


def describe(key: str | None = None) -> str:
    """What a key means: its type, default, current value and source (all keys when None).

    >>> import xsched.config as config
    >>> print(config.describe("worker.memory.target"))  # doctest: +ELLIPSIS
    worker.memory.target: a fraction ... default 0.6
        Above this, spill least-recently-used data to disk.
    """
    _ensure_loaded()
    if key is None:
        keys = [k for k in all_keys() if isinstance(_node(tuple(k.split("."))), (Leaf, OpenMap))]
        return "\n".join(describe(k) for k in keys)
    try:
        path, node = resolve(_split(key))
    except ConfigError as e:
        raise KeyError(str(e)) from None
    assert _layers is not None
    default = nest(_layers[0].values)
    for part in path:
        default = default.get(part, _MISSING) if isinstance(default, dict) else _MISSING
    current = get(key, _MISSING)
    if isinstance(node, OpenMap):
        kind = f"a mapping of names to {node.kind.expected}"
    elif isinstance(node, Leaf):
        kind = node.kind.expected
    else:
        kind = "a section with keys " + ", ".join(node.children)
    text = f"{'.'.join(path)}: {kind}; default {_dump_scalar(default) if default is not _MISSING else 'none'}"
    source = _sources.get(path)
    if current is not _MISSING and source not in (None, DEFAULTS):
        text += f"; now {_dump_scalar(current)} from {_short(source)}"
    return f"{text}\n    {node.doc}"


def _reset() -> None:
    """Forget ``set()`` overrides and loaded files; the next access re-reads everything (tests)."""
    global _layers
    with _lock:
        _overrides.values.clear()
        _overrides.sources.clear()
        _layers = None
