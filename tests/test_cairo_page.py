"""The CAIRO explorer on the shipped demo store (a real CAIRO run of the bundled models), and its chart builders."""
from __future__ import annotations

import base64
import json
import os

import numpy as np
import pandas as pd
import pytest
from helpers import audit
from streamlit.testing.v1 import AppTest

from audit.present import charts
from audit.cairo.bias import metric_cells
from audit.cairo.scored import scored_continuations
from audit.cairo.search import Options, ranking_table, search_all, source_table
from audit.paths import DEMO_STORE
from audit.store.database import Store

os.environ["HF_HUB_OFFLINE"] = "1"
APP = str(DEMO_STORE.parent.parent / "app.py")
PAGE = "pages/cairo_explorer.py"


@pytest.fixture(scope="module")
def demo_results():
    with Store(DEMO_STORE, create=False) as store:
        table = scored_continuations(store)
    return table, search_all(metric_cells(table), 6)


@pytest.fixture
def explorer(monkeypatch) -> AppTest:
    monkeypatch.setenv("AUDIT_DB", str(DEMO_STORE))
    at = AppTest.from_file(APP, default_timeout=180)
    at.switch_page(PAGE).run()
    assert not at.exception, at.exception
    return at


def test_demo_store_holds_a_cairo_run_of_three_models_on_our_prompts(demo_results):
    table, results = demo_results
    assert table["model"].nunique() >= 3
    assert set(table["metric"]) == {"bold-style", "honest-style", "holisticbias-style"}
    assert set(table["dimension"]) == {"gender", "religion"}
    assert {"hand-written", "qwen2.5-coder-0.5b", "gemma3-270m"} <= set(table["source"])
    assert {r.m for r in results} == set(range(1, 7)) and all(len(r.models) >= 3 for r in results)


def test_explorer_renders_and_follows_the_widgets(explorer, demo_results):
    _, results = demo_results
    assert not explorer.error
    assert explorer.title[0].value == "CAIRO explorer"
    assert "Only 3 models compared" in explorer.warning[0].value and "permutation p-value" in explorer.warning[0].value
    shown = [m.value for m in explorer.metric]
    first = next(r for r in results if (r.dimension, r.metric_a, r.metric_b, r.m)
                 == ("gender", "bold-style", "holisticbias-style", 3))
    assert first.search == "same" and first.permutations == 6  # 3 models: all 3! orders
    assert shown == [f"{first.best_r:+.2f}", f"{first.heldout_r:+.2f}", f"{first.null_95:+.2f}",
                     f"{first.p_value:.3f}", f"{first.original_r:+.2f}"]
    curves = json.loads(explorer.get("plotly_chart")[0].proto.spec)["data"]
    assert [t.get("name") for t in curves][1:] == [charts.CAIRO_NULL] + [n for n, _, _ in charts.CAIRO_LINES.values()]
    band = np.frombuffer(base64.b64decode(curves[1]["y"]["bdata"]), dtype=curves[1]["y"]["dtype"])
    nulls = [r.null_95 for r in results if (r.dimension, r.metric_a, r.metric_b) == ("gender", "bold-style",
                                                                                     "holisticbias-style")]
    assert curves[1]["fill"] == "tonexty" and list(band) == pytest.approx(nulls)
    explorer.selectbox(key="cairo_dimension").set_value("religion").run()
    explorer.selectbox(key="cairo_pair_religion").set_value(("bold-style", "honest-style")).run()
    explorer.slider(key="cairo_m").set_value(5).run()
    assert not explorer.exception, explorer.exception
    chosen = next(r for r in results if (r.dimension, r.metric_a, r.metric_b, r.m)
                  == ("religion", "bold-style", "honest-style", 5))
    assert [m.value for m in explorer.metric][0] == f"{chosen.best_r:+.2f}"
    sets = explorer.dataframe[-1].value
    assert list(sets["prompt set"]) == [*chosen.sets_a, *chosen.sets_b] and len(sets) == 10
    assert any(button.label == "Report bundle (zip)" for button in explorer.get("download_button"))


def test_explorer_explains_a_store_without_cairo_results(monkeypatch, tmp_path):
    with Store(tmp_path / "empty.db") as store:  # a new store's file is made by its first write
        store.save_plan(candidates=[], prompts=[])
    monkeypatch.setenv("AUDIT_DB", str(tmp_path / "empty.db"))
    at = AppTest.from_file(APP, default_timeout=180)
    at.switch_page(PAGE).run()
    assert not at.exception and any("no CAIRO results" in info.value for info in at.info)


def test_cairo_charts_escape_names_and_carry_every_series(demo_results):
    _, results = demo_results
    chosen = results[3]
    ranks = ranking_table(chosen).assign(model=lambda t: "<b>" + t["model"] + "</b>")
    figure = charts.cairo_rankings(ranks)
    assert all("<b>" not in str(trace.y) for trace in figure.data) and len(figure.data) == 4
    mine = [r for r in results if (r.dimension, r.metric_a, r.metric_b) == (chosen.dimension, chosen.metric_a,
                                                                           chosen.metric_b)]
    rows = pd.DataFrame([{"m": r.m, "best_r": r.best_r, "average_r": r.average_r, "original_r": r.original_r}
                         for r in mine])
    curves = charts.cairo_correlation_curves(rows)
    assert [list(trace.y) for trace in curves.data][0] == list(rows["best_r"])
    sources = pd.concat([source_table(r).assign(m=r.m) for r in mine])
    bars = charts.cairo_source_bars(sources)
    assert sum(sum(trace.y) for trace in bars.data) == 2 * rows["m"].sum()


def test_cli_combos_json_matches_the_search(demo_results):
    result = audit("cairo", "combos", "--db", str(DEMO_STORE), "--max-m", "3", "--format", "json")
    assert result.returncode == 0, result.stderr
    assert result.stderr.startswith("warning: only 3 models compared")
    rows = json.loads(result.stdout)
    _, results = demo_results
    expected = {(r.dimension, r.metric_a, r.metric_b, r.m): r for r in results if r.m <= 3}
    assert len(rows) == len(expected) == 2 * 3 * 3
    for row in rows:
        r = expected[(row["dimension"], row["metric_a"], row["metric_b"], row["m"])]
        assert row["best_r"] == pytest.approx(r.best_r) and row["original_r"] == pytest.approx(r.original_r)
        assert row["heldout_r"] == pytest.approx(r.heldout_r) and row["p_value"] == pytest.approx(r.p_value)
        assert row["null_95"] == pytest.approx(r.null_95) and row["search"] == "same"
        assert row["best_sets_a"] == list(r.sets_a) == row["best_sets_b"] and len(row["best_sets_b"]) == row["m"]
    gender = {(row["metric_a"], row["metric_b"], row["m"]): row["best_r"] for row in rows if row["dimension"] == "gender"}
    assert gender[("holisticbias-style", "honest-style", 2)] == pytest.approx(-0.567, abs=5e-4)


def test_explorer_offers_the_independent_search_with_its_own_null(explorer, demo_results):
    table, _ = demo_results
    explorer.selectbox(key="cairo_search").set_value("independent").run()
    explorer.slider(key="cairo_m").set_value(2).run()
    explorer.selectbox(key="cairo_pair_gender").set_value(("holisticbias-style", "honest-style")).run()
    assert not explorer.exception, explorer.exception
    wide = next(r for r in search_all(metric_cells(table), 2, Options(search="independent"))
                if (r.dimension, r.metric_a, r.metric_b, r.m) == ("gender", "holisticbias-style", "honest-style", 2))
    assert wide.best_r == pytest.approx(0.999, abs=5e-4)  # issue 10: 0.999 independent, −0.567 the paper's rule
    assert [m.value for m in explorer.metric][:3] == [f"{wide.best_r:+.2f}", f"{wide.heldout_r:+.2f}",
                                                     f"{wide.null_95:+.2f}"]
    explorer.selectbox(key="cairo_paraphraser").set_value("qwen2.5-coder-0.5b").run()
    assert not explorer.exception, explorer.exception
    sets = explorer.dataframe[-1].value
    assert set(sets["written by"]) <= {"original", "qwen2.5-coder-0.5b"} and len(sets) == 4
