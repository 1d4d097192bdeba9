"""Sampled stacks as a call tree per kind of task: what a flame graph draws.

Why a tree and not line counts: a flame graph shows where time goes *through* the calls
(``load`` calls ``decode`` calls ``inflate``), so the samples must keep their paths. The
tree's first level is the task prefix (``key_split`` of the running key: all ``load-...``
tasks together), then one node per function (function name and file) down the sampled
stack, outermost first. A node counts the samples that passed through it (``count``) and
those that ended in it (``own``).

Who builds what::

    worker: profile op (worker/diagnostics.py) samples its task threads -> StackTree.add(prefix, stack)
            reply: {..., "tree": tree.rows()}
    scheduler: telemetry extension merges each worker's rows into one StackTree (merge)
            telemetry reply: {"profile": {"samples", "since", "rows": tree.rows(min_fraction)}}
    browser: the profile pane draws the rows as an icicle (widths by count)

A tree holds at most ``max_nodes`` nodes: past that, a new path goes to an ``(other)``
child of the deepest node it reached (one per parent at most), so a long-running profile
of code with many distinct stacks stays bounded. ``rows`` is the tree in preorder as
``[depth, function, file, count, own]``: depth 0 for the prefixes; a child's rows follow
its parent's. Pure data, no clocks or threads: tested on its own.

>>> tree = StackTree()
>>> tree.add("load", [("read", "/data/io.py", 3), ("decode", "/data/codec.py", 9)])
>>> tree.add("load", [("read", "/data/io.py", 4)])
>>> tree.rows()
[[0, 'load', '', 2, 0], [1, 'read', '/data/io.py', 2, 1], [2, 'decode', '/data/codec.py', 1, 1]]
>>> total = StackTree(); total.merge(tree.rows()); total.merge(tree.rows()); total.samples
4
"""

from __future__ import annotations

__all__ = ["StackTree", "OTHER"]

#: the function name of a node that stands for the paths a full tree did not keep
OTHER = "(other)"


class _Node:
    __slots__ = ("count", "own", "children")

    def __init__(self) -> None:
        self.count = 0
        self.own = 0
        self.children: dict[tuple[str, str], _Node] = {}


class StackTree:
    """Samples of stacks per task prefix, merged into a bounded call tree (see the module).

    >>> t = StackTree(max_nodes=2)
    >>> for f in "abc":
    ...     t.add("p", [(f, "x.py", 1)])
    >>> [(r[1], r[3]) for r in t.rows()]            # no room for b and c apart: (other)
    [('p', 3), ('(other)', 2), ('a', 1)]
    """

    def __init__(self, max_nodes: int = 5000) -> None:
        self.max_nodes = max_nodes
        self.samples = 0
        self._root = _Node()
        self._nodes = 0

    def __len__(self) -> int:
        """Nodes held (prefixes and functions)."""
        return self._nodes

    def __repr__(self) -> str:
        return f"<StackTree {self.samples} samples, {self._nodes} nodes>"

    def add(self, prefix: str, entries, count: int = 1) -> None:
        """``count`` samples of one stack (``(function, file, line)`` entries, outermost
        first, as ``worker/diagnostics.stack_of`` gives them) of a task of ``prefix``."""
        self.samples += count
        node = self._root
        for label in [(prefix, "")] + [(function, filename) for function, filename, _ in entries]:
            node, kept = self._child(node, label)
            node.count += count
            if not kept:
                break  # (the rest of this path has no room: it ends in "(other)")
        node.own += count

    def _child(self, node: _Node, label: tuple[str, str]) -> tuple[_Node, bool]:
        """The child of ``node`` for ``label`` (made if there is room), and whether it is that
        one rather than the ``(other)`` child."""
        child = node.children.get(label)
        if child is not None:
            return child, True
        kept = self._nodes < self.max_nodes
        if not kept:
            label = (OTHER, "")
            child = node.children.get(label)
            if child is not None:
                return child, False
        child = node.children[label] = _Node()
        self._nodes += 1
        return child, kept

    def merge(self, rows: list) -> None:
        """Add another tree's ``rows`` (a worker's reply) to this one.

        >>> a = StackTree(); a.add("f", [("g", "m.py", 1)])
        >>> b = StackTree(); b.merge(a.rows()); b.merge(a.rows()); b.rows()
        [[0, 'f', '', 2, 0], [1, 'g', 'm.py', 2, 2]]
        """
        stack: list[_Node] = [self._root]  # stack[d]: the node rows of depth d go under
        for depth, function, filename, count, own in rows:
            depth, count, own = int(depth), int(count), int(own)
            if depth >= len(stack):
                continue  # under a row that went to "(other)": counted there already
            del stack[depth + 1:]
            node, kept = self._child(stack[depth], (str(function), str(filename)))
            node.count += count
            node.own += own if kept else count
            if depth == 0:
                self.samples += count
            if kept:
                stack.append(node)

    def rows(self, min_fraction: float = 0.0) -> list[list]:
        """The tree in preorder: ``[depth, function, file, count, own]``, heaviest child first;
        nodes below ``min_fraction`` of all samples are left out (their samples stay in their
        parent's ``count``)."""
        out: list[list] = []
        least = self.samples * min_fraction

        def walk(node: _Node, depth: int) -> None:
            for (function, filename), child in sorted(node.children.items(), key=lambda kv: (-kv[1].count, kv[0])):
                if child.count < least or child.count <= 0:
                    continue
                out.append([depth, function, filename, child.count, child.own])
                walk(child, depth + 1)

        walk(self._root, 0)
        return out
