"""The import graph of xsched: no circle, and every import points down the layers.

Layers (DESIGN.md, "Architecture" and habit 9)::

    helpers < graph < protocol < state < servers < client < collections < deploy
            < jupyter/labserver/dashboard < entry points (xsched/__init__.py, cli, demo, doctor)

Collections (``array/``, later ``dataframe/`` and ``bag/``) sit on graph and reach a cluster
only through the client. Where a lower layer needs something from a higher one (the
client's notebook display, the LocalCluster of ``Client()``), the higher one registers it
in ``xsched.hooks``; the lower one imports nothing from above.

The graph is read from the source with ``ast``: imports at module level *and* inside
functions count (a lazy import is still a dependency); imports under ``if TYPE_CHECKING:``
do not. ``from . import x`` where ``x`` is a submodule is an edge to that submodule only,
not to the package's ``__init__``; ``from pkg import name`` where ``name`` is not a
submodule is an edge to ``pkg`` (its ``__init__``).

The purity of the state machines (no zmq, asyncio, threads, clocks...) is checked in
``test_scheduler_state.py`` (``test_state_modules_are_pure``), for every module of both.
"""

from __future__ import annotations

import ast
import pathlib
from collections.abc import Iterable, Mapping

import pytest

XSCHED = pathlib.Path(__file__).parents[2] / "xsched"

# ---------------------------------------------------------------------- layers

HELPERS, GRAPH, PROTOCOL, STATE, SERVERS, CLIENT, COLLECTIONS, DEPLOY, FRONTENDS, ENTRY = range(10)

#: Module (or package) -> layer; the longest matching prefix wins. A module matching none
#: fails ``test_every_module_has_a_layer``: place new packages here.
LAYERS: dict[str, int] = {
    # helpers every layer may use; none imports anything above them
    "xsched.units": HELPERS, "xsched.sizeof": HELPERS, "xsched.keys": HELPERS, "xsched.errors": HELPERS,
    "xsched.config": HELPERS, "xsched.config_schema": HELPERS,
    "xsched.task_context": HELPERS,     # what a running task asks of its worker (get_worker, secede)
    "xsched.hooks": HELPERS,            # functions the higher layers provide to the lower ones
    "xsched.background": HELPERS,       # owned asyncio tasks (comm, servers; never the state machines)
    "xsched.stimulus": HELPERS,         # the ids events carry (both state machines)
    "xsched.logs": HELPERS,             # the recent records of the xsched loggers (scheduler, workers)
    "xsched.profiling": HELPERS,        # sampled stacks as a call tree (workers build, scheduler merges)
    "xsched.log_forwarding": HELPERS,   # client.forward_logging: the workers' handler and plugin, the
                                        # client's re-emission (imports plugins and task_context only)
    "xsched.files": HELPERS,            # where collection files live: paths, globs, fsspec URLs
    "xsched.plugins": HELPERS,          # the plugin base classes: the client, the servers and the
                                        # nanny all read them; they import nothing of xsched
    "xsched.client.default": HELPERS,   # the default-client stack, a leaf: how graph/ and collections
                                        # find a client without importing the network code
    # task graphs, pure
    "xsched.graph": GRAPH,
    "xsched.tokenize": GRAPH,           # tokenizes graph.spec's Task and Ref
    # the wire
    "xsched.protocol": PROTOCOL,
    "xsched.comm": PROTOCOL,
    # the pure state machines
    "xsched.scheduler.state": STATE,    # state.py or the state/ package
    "xsched.worker.state": STATE,
    "xsched.worker.events": STATE,
    # the servers
    "xsched.scheduler": SERVERS,
    "xsched.worker": SERVERS,
    "xsched.jupyter.kernel": SERVERS,   # the kernel host the scheduler and workers embed (imports no xsched)
    "xsched.sim": SERVERS,              # the simulator drives the state machines as a server does (it
                                        # subclasses both servers); nothing below imports it
    # the client
    "xsched.client": CLIENT,
    # collections: build graphs; see COLLECTION_MAY_IMPORT
    "xsched.array": COLLECTIONS, "xsched.dataframe": COLLECTIONS, "xsched.bag": COLLECTIONS,
    "xsched.datasets": COLLECTIONS,     # made-up data: the dataframe's and the bag's demo makers
    # clusters
    "xsched.deploy": DEPLOY,
    # what users look at
    "xsched.jupyter": FRONTENDS, "xsched.labserver": FRONTENDS, "xsched.dashboard": FRONTENDS,
    "xsched.diagnostics": FRONTENDS,    # the text progress bar of computations run in this process
    # entry points: may import anything
    "xsched": ENTRY,                    # xsched/__init__.py, the public API (exact name only)
    "xsched.cli": ENTRY, "xsched.demo": ENTRY, "xsched.doctor": ENTRY,
}

#: A collection module may import these layers only (besides other collections).
COLLECTION_MAY_IMPORT = {HELPERS, GRAPH, CLIENT, COLLECTIONS}


def layer_of(module: str, layers: Mapping[str, int] = LAYERS) -> int | None:
    """The layer of a dotted module name: its longest prefix in ``layers`` (``xsched`` itself
    only for the exact name), or None.

    >>> layer_of("xsched.scheduler.state.machine") == STATE, layer_of("xsched.scheduler.server") == SERVERS
    (True, True)
    """
    if module in layers:
        return layers[module]
    parts = module.split(".")
    for i in range(len(parts) - 1, 1, -1):  # never the bare "xsched": it is the public API module only
        prefix = ".".join(parts[:i])
        if prefix in layers:
            return layers[prefix]
    return None


# ---------------------------------------------------------------------- the import graph

Edge = tuple[str, int, bool]  # (imported module, line, inside a function)


def module_files(root: pathlib.Path = XSCHED) -> dict[str, pathlib.Path]:
    """Dotted name -> file for every module under ``root`` (packages by their ``__init__``)."""
    out = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _import_nodes(tree: ast.AST) -> Iterable[tuple[ast.Import | ast.ImportFrom, bool]]:
    """Every import statement with whether it is inside a function (or lambda), skipping the
    bodies of ``if TYPE_CHECKING:`` (their ``else:`` branches count)."""
    stack: list[tuple[ast.AST, bool]] = [(tree, False)]
    while stack:
        node, in_function = stack.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node, in_function
            continue
        inner = in_function or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            children: Iterable[ast.AST] = node.orelse
        else:
            children = ast.iter_child_nodes(node)
        stack.extend((child, inner) for child in children)


def imports_of(source: str, module: str, is_package: bool, known: set[str], filename: str = "<source>") -> list[Edge]:
    """The xsched modules that ``source`` (the text of ``module``) imports, as edges sorted by line.

    ``known``: every xsched module name (to tell a submodule from a name in a package).
    An import of an xsched name that is no known module raises ValueError.
    """
    package = module if is_package else module.rpartition(".")[0]
    edges: list[Edge] = []
    for node, in_function in _import_nodes(ast.parse(source, filename)):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names if a.name.split(".")[0] == "xsched"]
        else:
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[:len(parts) - (node.level - 1)] + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            if base.split(".")[0] != "xsched":
                continue
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                targets.append(sub if sub in known else base)
        for target in targets:
            if target not in known:
                raise ValueError(f"{filename}:{node.lineno}: imports {target}, which is no xsched module")
            if target != module:
                edges.append((target, node.lineno, in_function))
    return sorted(set(edges), key=lambda e: (e[1], e[0]))


def import_graph(files: Mapping[str, pathlib.Path]) -> dict[str, list[Edge]]:
    """Module -> the xsched modules it imports (one edge per imported module and line)."""
    known = set(files)
    return {name: imports_of(path.read_text(), name, path.name == "__init__.py", known, str(path))
            for name, path in files.items()}


def strongly_connected(graph: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    counter = 0
    nodes = set(graph) | {t for ts in graph.values() for t in ts}
    for root in sorted(nodes):
        if root in index:
            continue
        work = [(root, iter(sorted(set(graph.get(root, ())))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(set(graph.get(child, ()))))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return sorted(found)


def a_cycle(graph: Mapping[str, Iterable[str]], component: list[str]) -> list[str]:
    """One concrete cycle through the first module of ``component`` (for the failure message)."""
    members = set(component)
    start = component[0]
    paths = {start: [start]}
    todo = [start]
    while todo:
        node = todo.pop(0)
        for child in sorted(set(graph.get(node, ()))):
            if child == start:
                return paths[node] + [start]
            if child in members and child not in paths:
                paths[child] = paths[node] + [child]
                todo.append(child)
    raise AssertionError(f"{component} is no cycle")


def layer_violations(graph: Mapping[str, list[Edge]], layers: Mapping[str, int] = LAYERS) -> list[str]:
    """One line per import that points up the layers (or out of a collection's reach)."""
    bad = []
    for module, edges in sorted(graph.items()):
        mine = layer_of(module, layers)
        for target, line, in_function in edges:
            theirs = layer_of(target, layers)
            if mine is None or theirs is None:
                continue  # reported by test_every_module_has_a_layer
            where = f"{module}:{line}{' (in a function)' if in_function else ''} imports {target}"
            if theirs > mine:
                bad.append(f"{where}: layer {theirs} above its own {mine}")
            elif mine == COLLECTIONS and theirs not in COLLECTION_MAY_IMPORT:
                bad.append(f"{where}: a collection reaches the cluster only through the client")
    return bad


def _targets(graph: Mapping[str, list[Edge]]) -> dict[str, set[str]]:
    return {m: {t for t, _, _ in edges} for m, edges in graph.items()}


@pytest.fixture(scope="module")
def graph() -> dict[str, list[Edge]]:
    return import_graph(module_files())


# ---------------------------------------------------------------------- the checks


def test_no_import_cycle(graph):
    targets = _targets(graph)
    lines = {(m, t): line for m, edges in graph.items() for t, line, _ in edges}
    messages = []
    for component in strongly_connected(targets):
        cycle = a_cycle(targets, component)
        steps = " -> ".join(f"{a} (line {lines[a, b]})" for a, b in zip(cycle, cycle[1:])) + f" -> {cycle[-1]}"
        messages.append(f"{len(component)} modules import each other: {', '.join(component)}\n    e.g. {steps}")
    assert not messages, "import cycles (break them with a lower module or xsched.hooks):\n  " + "\n  ".join(messages)


def test_every_module_has_a_layer(graph):
    missing = sorted(m for m in graph if layer_of(m) is None)
    assert not missing, f"modules with no layer: {missing}; add their package to LAYERS in {__file__}"


def test_imports_point_down_the_layers(graph):
    bad = layer_violations(graph)
    assert not bad, "imports against the layers:\n  " + "\n  ".join(bad)


def test_state_machines_reach_no_server_or_client(graph):
    """Whatever the layer numbers say: the state packages import only helpers, graph and protocol."""
    state = [m for m in graph if layer_of(m) == STATE]
    assert any(m.startswith("xsched.scheduler.state") for m in state) and "xsched.worker.state" in state
    bad = [(m, t) for m in state for t, _, _ in graph[m] if layer_of(t) not in (HELPERS, GRAPH, PROTOCOL, STATE)]
    assert not bad, bad


def test_every_hook_is_set_by_importing_its_provider():
    """What the higher layers provide to the lower ones through xsched.hooks: each hook's
    provider registers it when imported (a hook imports its provider when first called)."""
    import importlib

    from xsched import hooks

    all_hooks = [h for h in vars(hooks).values() if isinstance(h, hooks.Hook)]
    for h in all_hooks:
        importlib.import_module(h.provider)
    unset = [h.name for h in all_hooks if h.func is None]
    assert not unset, f"no provider registered {unset} (see the table in xsched/hooks.py)"


def test_the_package_names_are_those_its_type_checking_imports_say():
    """``xsched/__init__.py`` imports its names when first used, from the table ``_WHERE``;
    the imports under TYPE_CHECKING (for readers, type checkers and the reference pages) name
    the same modules, and every public name resolves."""
    import xsched

    tree = ast.parse((XSCHED / "__init__.py").read_text())
    block = next(n for n in tree.body if isinstance(n, ast.If) and getattr(n.test, "id", "") == "TYPE_CHECKING")
    said = {}
    for node in ast.walk(block):
        if isinstance(node, ast.ImportFrom) and node.module:
            said.update({a.name: node.module for a in node.names})
    assert said == {k: v for k, v in xsched._WHERE.items() if k != "__version__"}
    missing = [name for name in xsched.__all__ if getattr(xsched, name, None) is None]
    assert not missing
    assert xsched.__version__ == xsched.XSCHED_VERSION and "Client" in dir(xsched)
    # submodules as attributes, as when `import xsched` imported them all
    assert xsched.errors.KilledWorker is xsched.KilledWorker and xsched.jupyter.widgets.__name__.endswith("widgets")
    with pytest.raises(AttributeError, match="no attribute 'no_such_name'"):
        xsched.no_such_name  # noqa: B018


def test_server_processes_import_no_client_cluster_or_notebook_code():
    """A scheduler, worker or nanny process (``python -m xsched.cli``) loads its own layers
    only: each process a cluster starts pays for every module it imports."""
    import subprocess
    import sys

    code = ("import sys, xsched.cli, xsched.scheduler.server, xsched.worker.server; "
            "print(callable(xsched.sizeof), ' '.join(sorted(m for m in sys.modules if m.startswith('xsched'))))")
    said, *loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                                   timeout=120).stdout.split()
    assert said == "True"  # (xsched.sizeof the function, though the module of its name is imported)
    above = [m for m in loaded if layer_of(m) in (CLIENT, COLLECTIONS, DEPLOY, FRONTENDS)
             and m not in ("xsched.client", "xsched.jupyter")]  # (packages whose __init__ imports nothing)
    assert "xsched.worker.server" in loaded and not above, above


# ---------------------------------------------------------------------- the checker itself

KNOWN = {"xsched", "xsched.a", "xsched.a.b", "xsched.a.c", "xsched.d", "xsched.config"}


def test_parser_counts_lazy_imports_skips_type_checking_and_resolves_submodules():
    source = (
        "from typing import TYPE_CHECKING\n"
        "import typing\n"
        "from . import b\n"                       # the submodule xsched.a.b, not xsched.a
        "from .. import config\n"                 # the submodule xsched.config, not xsched
        "if TYPE_CHECKING:\n"
        "    from ..d import Thing\n"             # ignored
        "if typing.TYPE_CHECKING:\n"
        "    import xsched.d\n"                   # ignored
        "else:\n"
        "    from xsched.a import b as _b\n"      # the else branch counts
        "def f():\n"
        "    from ..d import helper\n"            # a name in xsched.d: an edge to xsched.d, lazy
        "    return lambda: __import__('os')\n"
        "g = lambda: None\n"
    )
    edges = imports_of(source, "xsched.a.c", False, KNOWN)
    assert edges == [("xsched.a.b", 3, False), ("xsched.config", 4, False), ("xsched.a.b", 10, False),
                     ("xsched.d", 12, True)]
    # in a package's __init__, "." is the package itself
    assert imports_of("from . import b\nfrom .b import x\n", "xsched.a", True, KNOWN) == [
        ("xsched.a.b", 1, False), ("xsched.a.b", 2, False)]
    # a name that is no submodule is an edge to the package (its __init__)
    assert imports_of("from .a import thing\n", "xsched", True, KNOWN) == [("xsched.a", 1, False)]
    with pytest.raises(ValueError, match="xsched.nothing"):
        imports_of("import xsched.nothing\n", "xsched.d", False, KNOWN)


def test_cycle_finder_finds_a_planted_cycle():
    graph = {"x.a": ["x.b"], "x.b": ["x.c"], "x.c": ["x.a", "x.d"], "x.d": [], "x.e": ["x.e2"], "x.e2": ["x.e"]}
    assert strongly_connected(graph) == [["x.a", "x.b", "x.c"], ["x.e", "x.e2"]]
    assert a_cycle(graph, ["x.a", "x.b", "x.c"]) == ["x.a", "x.b", "x.c", "x.a"]
    graph["x.c"] = ["x.d"]
    graph["x.e2"] = []
    assert strongly_connected(graph) == []


def test_layer_check_flags_an_upward_import_and_a_collection_reaching_past_the_client():
    planted = {
        "xsched.client.client": [("xsched.deploy.local", 7, True)],      # up: client -> deploy
        "xsched.deploy.local": [("xsched.client.client", 3, False)],     # down: fine
        "xsched.array.core": [("xsched.comm", 9, False), ("xsched.client.default", 10, False)],
        "xsched.cli": [("xsched.jupyter.widgets", 1, False)],            # entry points import anything
    }
    bad = layer_violations(planted)
    assert len(bad) == 2, bad
    assert bad[0].startswith("xsched.array.core:9 imports xsched.comm") and "only through the client" in bad[0]
    assert bad[1].startswith("xsched.client.client:7 (in a function) imports xsched.deploy.local")
    assert layer_of("xsched") == ENTRY and layer_of("xsched.nothing") is None
