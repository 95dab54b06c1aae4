"""Groups and groupings are declared by the task definitions only: no other module of ``audit/`` or ``pages/`` writes
a shipped task's group code or grouping name, and results stored without a declared design get no guessed groupings
(their design says plainly what it had to assume)."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

from audit.design import WHOLE, AuditDesign
from audit.errors import AuditError
from audit.store.database import Store
from audit.tasks import get_task, list_subtasks, resume
from audit.tasks.designs import design_of, derived_design

ROOT = Path(__file__).resolve().parent.parent
#: still writing the GPT hiring study's codes and groupings outside a task definition; owned by the issue-21 streams
#: (recorded rankings, ll144): drop a file from here once it reads them from a declared design
PENDING: set[str] = set()


def declared_literals() -> set[str]:
    """Every group code, reference and grouping name the shipped tasks declare (the whole-code grouping aside)."""
    designs = [design_of(get_task(name, subtask)) for name in ("resume", "essay") for subtask in list_subtasks(name)]
    codes = {c.group for name in ("resume", "essay") for c in get_task(name, list_subtasks(name)[0]).candidates()}
    return codes | {d.reference for d in designs} | {g for d in designs for g in d.groupings if g != WHOLE}


def literals(path: Path) -> set[str]:
    """The string constants of a module that are not docstrings."""
    tree = ast.parse(path.read_text())
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                  and node.body and isinstance(node.body[0], ast.Expr)
                  and isinstance(node.body[0].value, ast.Constant)}
    return {node.value for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings}


def test_no_group_code_or_grouping_outside_the_task_definitions():
    declared = declared_literals()
    assert {"W_M", "B_F", "JPN", "ENS", "race", "gender", "race × gender", "L1"} <= declared
    files = [p for folder in ("audit", "pages") for p in (ROOT / folder).rglob("*.py")
             if "tasks" not in p.relative_to(ROOT).parts]
    found = {str(p.relative_to(ROOT)): sorted(literals(p) & declared) for p in files}
    assert {path for path, hits in found.items() if hits} == PENDING, found


def test_a_design_not_declared_guesses_no_grouping_and_says_so(tmp_path):
    design = derived_design("loans", "default", ["Tall_Blue", "Short_Green", "Tall_Green"], '{"Yes": 1, "No": 0}')
    assert design.groupings == {WHOLE: None} and design.reference == "Short_Green"
    assert "without a declared design" in design.undeclared and "'Short_Green'" in design.undeclared
    with pytest.raises(AuditError, match="stored without a declared design"):
        design.category("Tall_Blue", "part 1")
    restored = AuditDesign.from_row(design.row())
    assert restored.undeclared == design.undeclared
    assert design_of(get_task("resume", "retail")).undeclared == ""  # a task that declares its design

    with Store(tmp_path / "old.db") as store:  # candidates of a custom task, stored without its design
        with store.transaction() as db:
            db.executemany("INSERT INTO candidates VALUES ('loans', 'default', ?, ?, 1, '', '')",
                           [("a", "Tall_Blue"), ("b", "Short_Green")])
        read = store.designs()[("loans", "default")]
    assert read.groupings == {WHOLE: None} and read.undeclared
    assert resume.GROUPINGS == design_of(get_task("resume", "retail")).groupings  # declared ones are kept
