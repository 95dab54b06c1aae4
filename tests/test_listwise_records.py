"""A listwise run beside the 2024 records: compare (CLI, report, Compare page) names it "<new> vs the 2024 records
(<gpt-…>)" with unpaired intervals."""
from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Iterator

import pytest
from streamlit.testing.v1 import AppTest

from audit.tasks import study
from tests.listwise_server import NAME, serving
from tests.test_app_pages import APP
from tests.test_listwise import DEMO, cli

NEW = f"openai:{NAME} listwise-generate"
HEADING = f"{NEW} vs the 2024 records (gpt-4)"


@pytest.fixture(scope="module")
def ranker() -> Iterator[str]:
    yield from serving()


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory, ranker: str) -> Path:
    """A demo-store copy holding 16 retail rankings of the in-order server beside the imported study."""
    path = tmp_path_factory.mktemp("records") / "demo.db"
    shutil.copy(DEMO, path)
    code, _, err = cli("score", "--task", study.TASK, "--mode", "listwise", "--model", f"openai:{NAME}",
                       "--base-url", ranker, "--rankings", "16", "--subtask", "retail", "--db", str(path))
    assert code == 0, err
    return path


def compare(store: Path, a: str, b: str) -> dict:
    code, out, err = cli("compare", "--db", str(store), "--task", study.TASK, "--subtasks", "retail", "--a", a,
                         "--b", b, "--k", "1", "--bootstrap", "50")
    assert code == 0, err
    return json.loads(out)


def test_versus_records_names_only_a_run_against_the_records() -> None:
    assert study.versus_records("gpt-4", NEW) == HEADING == study.versus_records(NEW, "gpt-4")
    assert study.versus_records("gpt-3.5-turbo", "gpt-4") is None
    assert study.versus_records("smollm2-135m", NEW) is None


def test_compare_cli_heads_the_run_against_the_records(store: Path) -> None:
    found = compare(store, "gpt-4", NEW)
    assert found["heading"] == HEADING and "unpaired" in found["note"]
    assert not any(row["paired"] for row in found["gaps"])
    assert "heading" not in compare(store, "gpt-3.5-turbo", "gpt-4")


def test_report_comparison_reads_versus_the_records(store: Path, tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    code, _, err = cli("report", "--db", str(store), "--task", study.TASK, "--subtasks", "retail", "--compare",
                       "gpt-3.5-turbo", NEW, "--bootstrap", "50", "--permutations", "50", "--out", str(out))
    assert code == 0, err
    html = out.read_text()
    assert f"<h2>{NEW} vs the 2024 records (gpt-3.5-turbo)</h2>" in html and "The intervals are unpaired" in html


def test_compare_page_heads_the_run_against_the_records(store: Path, monkeypatch) -> None:
    monkeypatch.setenv("AUDIT_DB", str(store))
    at = AppTest.from_file(APP, default_timeout=180)
    at.session_state["task"] = study.TASK
    at.run()
    at.switch_page("pages/compare.py").run()
    at.selectbox(key="compare_a").set_value("gpt-4").run()
    at.selectbox(key="compare_b").set_value(NEW).run()
    assert not at.exception and not at.error, (at.exception, [e.value for e in at.error])
    assert at.subheader[0].value == HEADING
    assert any(c.value == study.UNPAIRED_NOTE for c in at.caption)


def test_score_prints_the_planners_answer_first(ranker: str, tmp_path: Path) -> None:
    copy = tmp_path / "demo.db"
    shutil.copy(DEMO, copy)
    argv = ("score", "--task", study.TASK, "--mode", "listwise", "--model", f"openai:{NAME}", "--base-url", ranker,
            "--rankings", "2", "--subtask", "retail", "--db")
    code, _, err = cli(*argv, str(copy))
    assert code == 0, err
    first = err.splitlines()[0]
    assert re.fullmatch(r"planner: rankings per job for a conclusive verdict per category at the 2024 records' "
                        r"observed rates \(k = 1\): retail (\d{1,3}(,\d{3})*)–(\d{1,3}(,\d{3})*)"
                        r"( \(\d+ categor(y|ies) beyond reach\))? \(the fewest .*; "
                        r"asked: 2", first), first
    fewest = int(re.search(r"retail ([\d,]+)–", first)[1].replace(",", ""))
    assert fewest > 1000  # the records' 1,000 rankings per job left categories undecided
    assert int(re.search(r"retail [\d,]+–([\d,]+)", first)[1].replace(",", "")) <= 10_000  # no figure beyond 10×
    code, _, err = cli(*argv, str(tmp_path / "new.db"))
    assert code == 0, err
    assert err.splitlines()[0].startswith("planner: cannot plan: ") and "does not exist yet" in err.splitlines()[0]
    code, _, err = cli(*argv, str(tmp_path / "new.db"))
    assert code == 0, err
    assert err.splitlines()[0].startswith("planner: cannot plan: ") and "holds no 2024 records" in err
