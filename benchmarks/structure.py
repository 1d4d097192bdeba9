"""The shape of the code: largest modules and classes, import cycles, imports inside functions.

    python benchmarks/structure.py [REPO]       (default: this checkout)

What the architecture's rules are measured by (docs/architecture.md): a module named in a
phrase stays well under 1,500 lines, layers import downward only (no cycle), and imports
sit at the top of a module unless a dependency is optional or heavy. An AST walk over
``xsched/``: ``from pkg import sub`` counts as importing the submodule ``sub`` only; imports
inside ``if TYPE_CHECKING:`` do not count; those inside functions count as edges too.
tests/unit/test_layers.py enforces the cycle and layer rules; this prints the figures.
"""

from __future__ import annotations

import ast
import collections
import os
import sys


def modules(root: str) -> dict[str, str]:
    """Dotted module name -> file, for every module under ``root/xsched``."""
    out = {}
    for dirpath, _dirs, files in os.walk(os.path.join(root, "xsched")):
        for f in files:
            if f.endswith(".py"):
                path = os.path.join(dirpath, f)
                name = os.path.relpath(path, root)[:-3].replace(os.sep, ".")
                out[name.removesuffix(".__init__")] = path
    return out


def imported(mod: str, node: ast.AST, is_pkg: bool, mods: dict) -> list[str]:
    """The xsched modules an import statement of ``mod`` brings in."""
    if isinstance(node, ast.ImportFrom):
        if node.level:
            base = mod.split(".") if is_pkg else mod.split(".")[:-1]
            base = base[:len(base) - (node.level - 1)]
            name = ".".join(base + ([node.module] if node.module else []))
        else:
            name = node.module or ""
        subs = [f"{name}.{a.name}" for a in node.names if f"{name}.{a.name}" in mods]
        found = subs if len(subs) == len(node.names) else ([name] if name in mods else []) + subs
    else:
        found = [a.name for a in node.names if a.name in mods]
    return [m for m in found if m != mod]


def measure(root: str) -> dict:
    mods = modules(root)
    edges: dict = collections.defaultdict(set)
    sizes, classes, in_functions = [], [], 0
    for mod, path in mods.items():
        with open(path) as f:
            source = f.read()
        sizes.append((source.count("\n"), os.path.relpath(path, root)))
        tree = ast.parse(source)
        classes += [(n.end_lineno - n.lineno + 1, f"{os.path.relpath(path, root)}:{n.name}")
                    for n in ast.walk(tree) if isinstance(n, ast.ClassDef)]

        def visit(node, depth, type_checking):
            nonlocal in_functions
            for child in ast.iter_child_nodes(node):
                if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    visit(child, depth + 1, type_checking)
                elif isinstance(child, ast.If) and "TYPE_CHECKING" in ast.dump(child.test):
                    visit(child, depth, True)
                elif isinstance(child, (ast.Import, ast.ImportFrom)):
                    targets = imported(mod, child, path.endswith("__init__.py"), mods)
                    in_functions += bool(depth and targets)
                    if not type_checking:
                        edges[mod].update(targets)
                else:
                    visit(child, depth, type_checking)

        visit(tree, 0, False)
    return {"modules": len(mods), "lines": sum(s for s, _ in sizes), "largest_modules": sorted(sizes)[::-1][:5],
            "largest_classes": sorted(classes)[::-1][:5], "cycles": cycles(edges, mods),
            "imports_in_functions": in_functions}


def cycles(edges: dict, nodes) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iteratively)."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]
    for start in nodes:
        if start in index:
            continue
        work = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = counter[0]
        counter[0] += 1
        stack.append(start)
        on.add(start)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(edges[w]))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def main(argv=None) -> int:
    args = sys.argv[1:] if argv is None else argv
    root = os.path.abspath(args[0] if args else os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    r = measure(root)
    print(f"{root}: {r['modules']} modules, {r['lines']:,} lines")
    print("largest modules:  " + ", ".join(f"{p} {n:,}" for n, p in r["largest_modules"]))
    print("largest classes:  " + ", ".join(f"{p} {n:,}" for n, p in r["largest_classes"]))
    print(f"import cycles:    {len(r['cycles'])}" + "".join(f"\n    {c}" for c in r["cycles"]))
    print(f"imports of xsched modules inside functions: {r['imports_in_functions']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
