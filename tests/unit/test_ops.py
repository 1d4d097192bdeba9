"""Every wire op is named once (``xsched/protocol/ops.py``) and used by name everywhere."""

import ast
import pathlib

import pytest

from xsched.protocol import ops, schemas

XSCHED = pathlib.Path(__file__).parents[2] / "xsched"


def spelt_out_ops(source: str) -> list[tuple[int, str]]:
    """(line, op) of every op written as a string literal where code sends, compares or
    dispatches on it: ``{"op": "x"}``, ``op == "x"``, ``h["op"] in ("x", ...)``, and the
    keys of handler tables (dicts assigned to names ending in ``_OPS`` or ``HANDLERS``).
    Docstrings and other strings do not count."""
    found = []

    def literal(node):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in ops.ALL:
            found.append((node.lineno, node.value))

    def names_op(node) -> bool:
        if isinstance(node, ast.Name):
            return node.id == "op"
        if isinstance(node, ast.Subscript):
            return isinstance(node.slice, ast.Constant) and node.slice.value == "op"
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get":
            return bool(node.args) and isinstance(node.args[0], ast.Constant) and node.args[0].value == "op"
        return False

    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Dict):
            for k, v in zip(node.keys, node.values):
                if isinstance(k, ast.Constant) and k.value == "op":
                    literal(v)
        elif isinstance(node, ast.Compare) and names_op(node.left):
            for c in node.comparators:
                for e in (c.elts if isinstance(c, (ast.Tuple, ast.List, ast.Set)) else [c]):
                    literal(e)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)) and isinstance(node.value, ast.Dict):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names = [getattr(t, "id", getattr(t, "attr", "")) for t in targets]
            if any(n.upper().endswith(("_OPS", "HANDLERS")) for n in names):
                for k in node.value.keys:
                    literal(k)
    return sorted(found)


def test_the_checker_finds_every_way_of_spelling_an_op():
    src = '''
"""{"op": "ping"} in a docstring is fine"""
a = {"op": "free-keys", "keys": []}
if h["op"] == "compute-task": pass
if op in ("get-data", "put-data"): pass
if h.get("op") != "reply": pass
_WORKER_OPS = {"task-finished": f}
note = "ping"
'''
    assert spelt_out_ops(src) == [(3, "free-keys"), (4, "compute-task"), (5, "get-data"), (5, "put-data"),
                                  (6, "reply"), (7, "task-finished")]


@pytest.mark.parametrize("path", sorted(p for p in XSCHED.rglob("*.py") if p.name != "ops.py"),
                         ids=lambda p: str(p.relative_to(XSCHED)))
def test_no_module_spells_out_an_op(path):
    found = spelt_out_ops(path.read_text())
    assert not found, f"{path.relative_to(XSCHED)}: write these as xsched.protocol.ops names: {found}"


def test_every_op_has_a_schema_and_every_schema_an_op():
    assert schemas.OPS == ops.ALL
    for table in (schemas.TO_SCHEDULER, schemas.TO_WORKER, schemas.WORKER_FROM_SCHEDULER,
                  schemas.CLIENT_FROM_SCHEDULER):
        assert set(table) <= ops.ALL, table.name
    names = [k for k in vars(ops) if k.isupper() and isinstance(getattr(ops, k), str)]
    assert len(names) == len(ops.ALL), "two names for one op"
    assert all(getattr(ops, k) == k.lower().replace("_", "-") for k in names), "a name that is not its op"
