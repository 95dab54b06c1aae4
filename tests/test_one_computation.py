"""One audit, one computation: for a grid of selections on the shipped demo store, the Allocation page's table
(AppTest), ``python -m audit metrics --db`` / ``impact --db`` and the report the page's button builds hold the same
numbers to 1e-12. One case per path (each scoring mode of the demo store, each task of a store scored here) renders
the whole report and reads its embedded data and stated grouping and reference back from the HTML; the other cases
compare the report's content (:func:`collect`, what the HTML embeds) without drawing its charts again."""
from __future__ import annotations

import io
import json
import os
import re
import shlex
from dataclasses import replace
from pathlib import Path
from contextlib import redirect_stderr, redirect_stdout
from html import unescape

import numpy as np
import pandas as pd
import pytest
from fake_backend import installed
from loan_spec import loan_spec
from streamlit.testing.v1 import AppTest

from audit.cli import main
from audit.paths import DEMO_STORE
from audit.reporting import build_report
from audit.reporting.content import collect, settings_record
from pages.view_models.report_view import report_settings

os.environ["HF_HUB_OFFLINE"] = "1"
APP = str(DEMO_STORE.parent.parent / "app.py")
KEY = ["model", "subtask", "mode", "group", "k"]
IMPACT_KEY = ["model", "subtask", "grouping", "category", "k"]
NUMBERS = ["delta", "jsd", "emd", "rabbi", "rabbi_pvalue", "delta_qualified", "jsd_qualified", "emd_qualified",
           "rabbi_qualified", "dp_gap", "eo_gap", "rabbi_lo", "rabbi_hi", "dp_gap_lo", "dp_gap_hi", "eo_gap_lo",
           "eo_gap_hi", "dp_gap_p", "eo_gap_p", "dp_gap_padj", "eo_gap_padj"]
IMPACT_NUMBERS = ["candidates", "selection_rate", "impact_ratio", "selection_rate_lo", "selection_rate_hi",
                  "impact_ratio_lo", "impact_ratio_hi"]
CUT = {0.55: "55 % (paper Fig. 3)"}
N_BOOT = 100  # the page's smallest choice keeps the grid quick; the same number goes to the CLI and the report

SPEC = loan_spec("White_Male", group_columns=["race", "gender"])
#: a small loan-approval data set: three applicants per race × gender group, one of them unqualified
APPLICANTS = "text,race,gender,qualified\n" + "".join(
    f'"{name}, {job}, earns {pay} a year and {debt}.",{race},{gender},{int(pay > 40000)}\n'
    for race, gender, names in (("White", "Male", ("Jake Miller", "Todd Baker", "Brad Walsh")),
                                ("White", "Female", ("Emily Clark", "Claire Ward", "Megan Hall")),
                                ("Black", "Male", ("Darnell Jones", "Tyrone Brooks", "Jamal Rivers")),
                                ("Black", "Female", ("Keisha Jones", "Aaliyah Grant", "Imani Reed")))
    for name, (job, pay, debt) in zip(names, (("teacher", 50000, "has no debt"), ("nurse", 62000, "owes 5,000"),
                                              ("cashier", 21000, "owes 30,000"))))

#: (id, store ("demo" or "built"), task, mode, grouping, reference, preset, max_inconsistent, subtasks or None, k);
#: the cases in WHOLE also render the whole HTML report, and the first one sets its selection widget by widget
GRID = [
    ("intersection-nondefault-ref-k1", "demo", "resume", "pointwise", "race × gender", "B_F", "default", None, None, 1),
    ("race-k3", "demo", "resume", "pointwise", "race", "B", "default", None, None, 3),
    ("gender-ref-F", "demo", "resume", "pointwise", "gender", "F", "default", None, None, 1),
    ("paper-exact", "demo", "resume", "pointwise", "race × gender", "W_M", "paper-exact", None, None, 2),
    ("subtask-filter", "demo", "resume", "pointwise", "race", "A", "default", None, ("hr_specialist", "retail"), 3),
    ("pairwise-likelihood-cut55", "demo", "resume", "pairwise-likelihood", "race × gender", "W_M", "default", 0.55,
     None, 1),
    ("pairwise-race", "demo", "resume", "pairwise", "race", "H", "default", None, None, 1),
    ("essay-L1-ref-JPN", "built", "essay", "pointwise", "L1", "JPN", "default", None, None, 2),
    ("custom-race-ref-Black", "built", "loan", "pointwise", "race", "Black", "default", None, None, 1),
    ("custom-intersection", "built", "loan", "pointwise", "race × gender", "White_Male", "paper-exact", None, None,
     1),
]
WHOLE = {"intersection-nondefault-ref-k1", "pairwise-likelihood-cut55", "pairwise-race", "essay-L1-ref-JPN",
         "custom-intersection"}


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    """A real store scored by the deterministic fake backend (tests/fake_backend.py: the grid tests that every path
    computes the same thing from a store, whatever its numbers): two essays per L1 group (ptj) and the custom loan
    task."""
    folder = tmp_path_factory.mktemp("built")
    (folder / "applicants.csv").write_text(APPLICANTS, "utf-8")
    (folder / "spec.yaml").write_text(SPEC, "utf-8")
    db = str(folder / "results.db")
    for argv in (["--task", "essay", "--subtask", "ptj", "--limit", "2"],
                 ["--task", "custom", "--data", str(folder / "applicants.csv"), "--spec", str(folder / "spec.yaml"),
                  "--subtask", "all"]):
        out, err = io.StringIO(), io.StringIO()
        with redirect_stdout(out), redirect_stderr(err), pytest.MonkeyPatch.context() as patch:
            installed(patch)
            assert main(["score", "--db", db, "--model", "smollm2-135m", *argv]) == 0, err.getvalue()
    return Path(db)


def cli(*argv) -> pd.DataFrame:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        status = main(list(argv))
    assert status == 0, err.getvalue()
    return pd.DataFrame(json.loads(out.getvalue()))


def page(monkeypatch, db, task, mode, grouping, reference, preset, cut, subtasks, k, *, widgets=True) -> AppTest:
    """The Allocation page of store ``db`` with the selection set through the sidebar widgets, one at a time as a
    person would (``widgets``), else given to those widgets up front in the session state (the page is computed
    once, for the selection, instead of once per widget)."""
    if not widgets:
        return preset_page(monkeypatch, db, task, mode, grouping, reference, preset, cut, subtasks, k)
    monkeypatch.setenv("AUDIT_DB", str(db))
    at = AppTest.from_file(APP, default_timeout=180)
    at.run()
    at.switch_page("pages/allocation_gaps.py").run()
    at.sidebar.selectbox(key="task").set_value(task).run()
    at.sidebar.selectbox(key=f"mode_{task}").set_value(mode).run()
    at.sidebar.radio(key=f"grouping_{task}").set_value(grouping).run()
    at.sidebar.selectbox(key=f"ref_{task}_{grouping}").set_value(reference).run()
    at.sidebar.select_slider(key="n_boot").set_value(N_BOOT).run()
    at.sidebar.radio(key="preset").set_value(preset).run()
    if cut is not None:
        at.sidebar.radio(key="max_inconsistent").set_value(CUT[cut]).run()
    if subtasks is not None:
        at.sidebar.multiselect(key=f"subtasks_{task}_{mode}").set_value(list(subtasks)).run()
    if any(s.key == "k_gaps" for s in at.slider):  # no slider where k = 1 is the only quota below the pool
        at.slider(key="k_gaps").set_value(k).run()
    at.toggle(key="impact_on").set_value(True).run()
    assert not at.exception, at.exception
    return at


def preset_page(monkeypatch, db, task, mode, grouping, reference, preset, cut, subtasks, k) -> AppTest:
    """The Allocation page of store ``db`` opened with the sidebar's widgets holding the selection from the start."""
    monkeypatch.setenv("AUDIT_DB", str(db))
    at = AppTest.from_file(APP, default_timeout=180)
    chosen = {"task": task, f"mode_{task}": mode, f"grouping_{task}": grouping, f"ref_{task}_{grouping}": reference,
              "n_boot": N_BOOT, "preset": preset}
    if cut is not None:
        chosen["max_inconsistent"] = CUT[cut]
    if subtasks is not None:
        chosen[f"subtasks_{task}_{mode}"] = list(subtasks)
    for key, value in chosen.items():
        at.session_state[key] = value
    at.switch_page("pages/allocation_gaps.py").run()
    assert not at.exception, at.exception
    if any(s.key == "k_gaps" for s in at.slider):  # no slider where k = 1 is the only quota below the pool
        at.slider(key="k_gaps").set_value(k)
    at.toggle(key="impact_on").set_value(True).run()
    assert not at.exception, at.exception
    view = at.session_state["view"].selection
    assert (view.task, view.mode, view.grouping, view.reference, view.n_boot, view.preset) == (
        task, mode, grouping, reference, N_BOOT, preset), view
    return at


def frame(at: AppTest, column: str) -> pd.DataFrame:
    return next(f.value for f in at.dataframe if column in f.value.columns)


def equal(left: pd.DataFrame, right: pd.DataFrame, key: list[str], numbers: list[str], what: str) -> None:
    """Same rows on ``key`` and the same ``numbers`` to 1e-12 (NaN where the other has NaN)."""
    text = {c: str for c in key}
    merged = left.astype(text).merge(right.astype(text), on=key, suffixes=("", "_other"), validate="one_to_one")
    assert len(merged) == len(left) == len(right), (what, len(left), len(right), len(merged))
    for column in numbers:
        a, b = (pd.to_numeric(merged[c], errors="coerce").to_numpy(float) for c in (column, f"{column}_other"))
        assert (np.isnan(a) == np.isnan(b)).all(), (what, column)
        np.testing.assert_allclose(a[~np.isnan(a)], b[~np.isnan(b)], rtol=0, atol=1e-12, err_msg=f"{what}: {column}")


@pytest.mark.parametrize("case, store, task, mode, grouping, reference, preset, cut, subtasks, k", GRID,
                         ids=[case[0] for case in GRID])
def test_page_cli_and_report_hold_the_same_numbers(request, monkeypatch, case, store, task, mode, grouping, reference,
                                                   preset, cut, subtasks, k):
    db = DEMO_STORE if store == "demo" else request.getfixturevalue("built")
    at = page(monkeypatch, db, task, mode, grouping, reference, preset, cut, subtasks, k, widgets=case == GRID[0][0])
    shown = frame(at, "dp_gap")
    assert len(shown) and set(shown["k"]) == {k} and set(shown["mode"]) == {mode}
    assert reference not in set(shown["group"]) and all(g.count("_") == grouping.count("×") for g in shown["group"]) and set(shown["task"]) == {task}
    if subtasks is not None:
        assert set(shown["subtask"]) == set(subtasks)

    flags = ["--task", task, "--mode", mode, "--ci", "0.95", "--bootstrap", str(N_BOOT)]
    flags += ["--max-inconsistent", str(cut)] if cut is not None else []
    flags += ["--subtasks", *subtasks] if subtasks is not None else []
    metrics = cli("metrics", "--db", str(db), *flags, "--grouping", grouping, "--reference", reference, "--k", str(k),
                  "--preset", preset, "--permutations", "1000", "--adjust", "holm")
    equal(shown, metrics, KEY, NUMBERS, "page vs metrics --db")

    impact = cli("impact", "--db", str(db), *flags, "--k", str(k), "--format", "json")  # every grouping
    equal(frame(at, "impact_ratio"), impact, IMPACT_KEY, IMPACT_NUMBERS, "page vs impact --db")

    settings = report_settings(at.session_state["view"], k, at.radio(key="p_adjust").value)
    if case in WHOLE:
        html = build_report(settings).decode("utf-8")
        data = json.loads(re.search(r"id='report-data'>(.*?)</script>", html, re.S).group(1))
        scope = dict(re.findall(r"<th>([^<]+)</th><td>([^<]*)</td>", html))
        assert unescape(scope["grouping"]) == grouping
        named = unescape(scope["reference group"])  # "White men (W_M)", or the code alone when it has no name
        assert named == reference or named.endswith(f" ({reference})")
    else:  # what render_html embeds, without drawing the report's charts again
        content = collect(settings)
        data = json.loads(json.dumps({"settings": settings_record(content.settings),
                                      "impact": content.impact.to_dict("records"),
                                      "gaps_at_k": content.at_k.to_dict("records")}, default=str))
    equal(shown, pd.DataFrame(data["gaps_at_k"]), KEY, NUMBERS, "page vs report")
    own = impact[impact["grouping"] == grouping]
    equal(own, pd.DataFrame(data["impact"]), IMPACT_KEY, IMPACT_NUMBERS, "impact --db vs report")
    recorded = data["settings"]
    assert (recorded["grouping"], recorded["reference"], recorded["preset"], recorded["max_inconsistent"]) == (
        grouping, reference, preset, cut)


def test_compare_page_cli_and_report_hold_the_same_comparison(monkeypatch):
    """Two systems on the race grouping against a non-default reference: the Compare page, ``compare --db`` and the
    report's comparison come from one computation."""
    monkeypatch.setenv("AUDIT_DB", str(DEMO_STORE))
    at = AppTest.from_file(APP, default_timeout=180)
    for key, value in {"task": "resume", "grouping_resume": "race", "ref_resume_race": "B", "n_boot": N_BOOT}.items():
        at.session_state[key] = value  # the sidebar's widgets hold the selection from the start
    at.switch_page("pages/compare.py").run()
    chosen = at.session_state["view"].selection
    assert (chosen.grouping, chosen.reference) == ("race", "B")
    a, b = at.selectbox(key="compare_a").value, at.selectbox(key="compare_b").value
    at.slider(key="compare_k").set_value(2).run()
    assert not at.exception, at.exception
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        assert main(["compare", "--db", str(DEMO_STORE), "--task", "resume", "--a", a, "--b", b, "--grouping", "race",
                     "--reference", "B", "--k", "2", "--bootstrap", str(N_BOOT)]) == 0, err.getvalue()
    found = json.loads(out.getvalue())
    assert (found["grouping"], found["reference"]) == ("race", "B")
    flips = next(f.value for f in at.dataframe if "flipped" in f.value.columns)
    equal(flips, pd.DataFrame(found["flips"]), ["subtask", "candidate_id"], ["score_a", "score_b", "selected_a", "selected_b"], "page vs compare")
    correlation = next(f.value for f in at.dataframe if "spearman" in f.value.columns)
    equal(correlation, pd.DataFrame(found["rank_correlation"]), ["subtask"], ["spearman", "candidates"], "page vs compare")

    settings = replace(report_settings(at.session_state["view"], 2), compare=(a, b))
    gaps = collect(settings).comparison["gaps"]
    numbers = [c for c in gaps.columns if c.startswith(("dp_", "eo_"))]
    assert numbers
    equal(gaps, pd.DataFrame(found["gaps"]), ["subtask", "mode", "group", "k"], numbers, "report vs compare")


def test_page_report_equals_the_cli_report_it_prints(monkeypatch, tmp_path):
    """The report the Allocation page's button builds and the report of the ``report`` command that report prints
    (copied as printed) hold the same settings, replicates, verdicts, findings and numbers."""
    at = page(monkeypatch, DEMO_STORE, "resume", "pointwise", "race", "B", "default", None,
              ("hr_specialist", "retail"), 2, widgets=False)
    html = build_report(report_settings(at.session_state["view"], 2, at.radio(key="p_adjust").value)).decode("utf-8")
    printed = unescape(re.search(r"<pre class=reproduce>(.*?)</pre>", html, re.S).group(1))
    command = next(c for c in printed.split("\n\n") if c.startswith("python -m audit report"))
    argv = shlex.split(command.replace("\\\n", " "))[3:]
    argv[argv.index("--out") + 1] = str(tmp_path / "cli.html")
    assert main(argv) == 0
    cli_html = (tmp_path / "cli.html").read_text("utf-8")

    def parts(text: str) -> tuple:
        data = json.loads(re.search(r"id='report-data'>(.*?)</script>", text, re.S).group(1))
        findings = re.findall(r'<li class="finding"[^>]*>(.*?)</li>', text)
        cells = re.findall(r'data-category="([^"]*)" data-verdict="([^"]*)"', text)
        return data, findings, cells

    (page_data, page_findings, page_cells), (cli_data, cli_findings, cli_cells) = parts(html), parts(cli_html)
    assert page_data["settings"] == cli_data["settings"] and page_data["settings"]["n_boot"] == N_BOOT
    assert page_findings == cli_findings and page_cells == cli_cells and page_cells
    for name in ("gaps_at_k", "impact", "verdicts"):
        key = IMPACT_KEY if name != "gaps_at_k" else KEY
        numbers = [c for c in pd.DataFrame(page_data[name]).columns if c in NUMBERS + IMPACT_NUMBERS + ["p_adj"]]
        equal(pd.DataFrame(page_data[name]), pd.DataFrame(cli_data[name]), key, numbers, f"page vs cli {name}")
