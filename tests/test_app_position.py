"""Streamlit AppTest: the Compare page's position-bias section on the demo store's study."""
from __future__ import annotations

from audit.metrics.position import UNBIASED_NOTE
from audit.paths import DEMO_STORE
from tests.test_app_pages import app


def test_compare_page_shows_position_bias_of_the_study(monkeypatch):
    at = app(monkeypatch, DEMO_STORE, task="study-gpt-hiring")
    at.switch_page("pages/compare.py").run()
    assert not at.exception and not at.error, (at.exception, [e.value for e in at.error])
    assert any(h.value == "Position bias: top-1 share by shown position" for h in at.subheader)
    assert any(UNBIASED_NOTE in c.value for c in at.caption)
    assert any("gpt-3.5-turbo ranks the first-shown candidate first in 41–83 %" in m.value for m in at.markdown)
    grid = next(frame.value for frame in at.dataframe if "shown 1" in frame.value.columns)
    row = grid[(grid["model"] == "gpt-3.5-turbo") & (grid["subtask"] == "software engineer")].iloc[0]
    assert row["shown 1"].startswith("0.83 [") and bool(row["position_over_group"])
    assert len(grid) == 8


def test_compare_page_has_no_position_section_without_rankings(monkeypatch):
    at = app(monkeypatch, DEMO_STORE, task="resume")
    at.switch_page("pages/compare.py").run()
    assert not at.exception and not at.error, (at.exception, [e.value for e in at.error])
    assert not any("Position bias" in h.value for h in at.subheader)
