"""Chart and table exports (not the audit report, which is :mod:`audit.reporting`): a figure as PNG, SVG, PDF or
interactive HTML, a table as CSV, and a zip bundle of them all.

Static images go through kaleido, which drives a headless Chrome (Debian: ``apt-get install chromium``). Starting
kaleido's sync server once (:func:`start_exporter`) keeps that browser open, so later images take ~0.3 s, not ~4 s.
"""
from __future__ import annotations

import io
import json
import threading
import warnings
import zipfile
from collections.abc import Mapping

import pandas as pd
import plotly.graph_objects as go

from audit.errors import AuditError
from audit.output import csv_text

FIGURE_FORMATS = ("png", "svg", "pdf", "html")
MIME = {"png": "image/png", "svg": "image/svg+xml", "pdf": "application/pdf", "html": "text/html",
        "csv": "text/csv", "zip": "application/zip", "json": "application/json"}
WIDTH, HEIGHT, SCALE = 1200, None, 2
_lock = threading.Lock()
_started = False


def start_exporter() -> bool:
    """Start kaleido's persistent browser once per process; False (exports still work, slower) if it cannot."""
    global _started
    with _lock:
        if not _started:
            try:
                import kaleido

                kaleido.start_sync_server(silence_warnings=True)
                _started = True
            except Exception:  # noqa: BLE001 - a missing Chrome surfaces later, on the export itself
                return False
        return True


def figure_bytes(fig: go.Figure, fmt: str, *, plotlyjs: "bool | str" = True) -> bytes:
    """``fig`` as ``png``, ``svg``, ``pdf`` or ``html`` bytes (HTML embeds plotly.js unless ``plotlyjs`` says else)."""
    if fmt == "html":
        return fig.to_html(full_html=True, include_plotlyjs=plotlyjs).encode("utf-8")
    if fmt not in FIGURE_FORMATS:
        raise AuditError(f"unknown figure format {fmt!r}; choose one of {list(FIGURE_FORMATS)}")
    start_exporter()
    height = HEIGHT or fig.layout.height or 500
    try:
        with _lock, warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # kaleido: "kopts ignored if using a server"
            return fig.to_image(format=fmt, width=WIDTH, height=height, scale=SCALE if fmt == "png" else 1)
    except Exception as exc:  # kaleido raises several types when Chrome is missing or fails
        raise AuditError(f"static export needs Chrome/Chromium (apt-get install chromium): {exc}") from exc


def table_bytes(table: pd.DataFrame) -> bytes:
    """``table`` as UTF-8 CSV without the index, text cells neutralised against spreadsheet formulas."""
    return csv_text(table).encode("utf-8")


def report_bundle(figures: Mapping[str, go.Figure], tables: Mapping[str, pd.DataFrame], settings: Mapping,
                  *, formats: tuple[str, ...] = FIGURE_FORMATS) -> bytes:
    """A zip of ``charts/<name>.<fmt>`` for every figure and format, ``tables/<name>.csv`` and ``settings.json``.

    The HTML charts share one ``charts/plotly.min.js``, so the bundle opens offline without repeating plotly.js.
    """
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as bundle:
        for name, fig in figures.items():
            for fmt in formats:
                bundle.writestr(f"charts/{name}.{fmt}", figure_bytes(fig, fmt, plotlyjs="directory"))
        if "html" in formats and figures:
            from plotly.offline import get_plotlyjs

            bundle.writestr("charts/plotly.min.js", get_plotlyjs())
        for name, table in tables.items():
            bundle.writestr(f"tables/{name}.csv", table_bytes(table))
        bundle.writestr("settings.json", json.dumps(settings, indent=2, sort_keys=True, default=str))
    return buffer.getvalue()
