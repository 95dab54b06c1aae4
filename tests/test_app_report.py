"""Report exports: figure bytes in every format, table CSV, and the zip bundle."""
from __future__ import annotations

import io
import json
import shutil
import zipfile

import pandas as pd
import plotly.graph_objects as go
import pytest

from audit.present import exports
from audit.errors import AuditError

needs_chrome = pytest.mark.skipif(shutil.which("chromium") is None and shutil.which("google-chrome") is None,
                                  reason="static export needs Chromium (apt-get install chromium)")
MAGIC = {"png": b"\x89PNG", "svg": b"<svg", "pdf": b"%PDF"}


@pytest.fixture
def figure() -> go.Figure:
    return go.Figure(go.Scatter(x=[1, 2, 3], y=[0.1, -0.2, 0.05], name="B_F"), layout=dict(title="ΔDP"))


def test_html_is_interactive_and_self_contained(figure):
    html = exports.figure_bytes(figure, "html").decode()
    assert "plotly" in html.lower() and "B_F" in html and len(html) > 1_000_000


@needs_chrome
@pytest.mark.parametrize("fmt", ["png", "svg", "pdf"])
def test_static_formats(figure, fmt):
    assert exports.figure_bytes(figure, fmt).startswith(MAGIC[fmt])


def test_unknown_format_is_refused(figure):
    with pytest.raises(AuditError, match="unknown figure format"):
        exports.figure_bytes(figure, "gif")


def test_table_csv_round_trips():
    table = pd.DataFrame({"group": ["B_F", "A_M"], "dp_gap": [0.125, -0.5]})
    assert pd.read_csv(io.BytesIO(exports.table_bytes(table))).equals(table)


def test_bundle_holds_charts_tables_and_settings(figure):
    settings = {"k": 2, "reference": "W_M", "model_fingerprints": {"smollm2-135m": "abc"}}
    data = exports.report_bundle({"gaps": figure}, {"gaps": pd.DataFrame({"a": [1]})}, settings, formats=("html",))
    with zipfile.ZipFile(io.BytesIO(data)) as bundle:
        names = set(bundle.namelist())
        assert names == {"charts/gaps.html", "charts/plotly.min.js", "tables/gaps.csv", "settings.json"}
        assert json.loads(bundle.read("settings.json")) == settings
        assert b'src="plotly.min.js"' in bundle.read("charts/gaps.html")


@needs_chrome
def test_bundle_in_every_format(figure):
    data = exports.report_bundle({"gaps": figure}, {}, {"k": 1})
    with zipfile.ZipFile(io.BytesIO(data)) as bundle:
        for fmt in exports.FIGURE_FORMATS:
            assert bundle.read(f"charts/gaps.{fmt}")
