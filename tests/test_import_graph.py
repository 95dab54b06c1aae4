"""The import graph of ``audit/`` has no cycle, counting imports inside functions (which can hide one)."""
from __future__ import annotations

import ast
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

AUDIT = Path(__file__).resolve().parent.parent / "audit"


def modules() -> dict[str, Path]:
    """Dotted name → file of every module of the package."""
    found = {}
    for path in AUDIT.rglob("*.py"):
        parts = path.relative_to(AUDIT.parent).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def imports(path: Path, known: dict[str, Path]) -> set[str]:
    """The package modules ``path`` imports anywhere in its body (``from pkg import sub`` names the submodule)."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("audit"):
            out |= {f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in known else node.module
                    for a in node.names}
        elif isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name in known}
    return out


def test_no_import_cycle_in_audit():
    known = modules()
    graph = {name: imports(path, known) - {name} for name, path in known.items()}
    assert graph["audit.backend.registry"] and graph["audit.store.database"]  # the graph was read
    try:
        TopologicalSorter(graph).prepare()
    except CycleError as cycle:
        raise AssertionError(f"import cycle: {' → '.join(cycle.args[1])}") from None


def test_the_store_imports_nothing_from_the_layers_above_it():
    known = modules()
    graph = {name: imports(path, known) - {name} for name, path in known.items()}
    reached, todo = set(), ["audit.store.database"]
    while todo:
        for name in graph[todo.pop()] - reached:
            reached.add(name)
            todo.append(name)
    above = sorted(n for n in reached if n.startswith(("audit.recorded", "audit.run.scoring", "audit.run.cached")))
    assert not above, f"audit.store.database reaches {above}"
