"""Chart and table exports (not the audit report, which is :mod:`audit.reporting`): a figure as PNG, SVG, PDF or
interactive HTML, a table as CSV, and a zip bundle of them all. Static images are drawn by the process's headless
browser (:mod:`audit.present.browser`)."""
from __future__ import annotations

import io
import json
import zipfile
from collections.abc import Callable, Mapping

import pandas as pd
import plotly.graph_objects as go
import plotly.io as pio

from audit.errors import AuditError
from audit.store.output import csv_text
from audit.present.browser import figure_image_later

FIGURE_FORMATS = ("png", "svg", "pdf", "html")
MIME = {"png": "image/png", "svg": "image/svg+xml", "pdf": "application/pdf", "html": "text/html",
        "csv": "text/csv", "zip": "application/zip", "json": "application/json"}
WIDTH, SCALE = 1200, 2


def figure_bytes(fig: go.Figure, fmt: str, *, plotlyjs: "bool | str" = True, width: int | None = None) -> bytes:
    """``fig`` as ``png``, ``svg``, ``pdf`` or ``html`` bytes (HTML embeds plotly.js unless ``plotlyjs`` says else;
    static images ``width`` pixels wide, default :data:`WIDTH`, and as high as the figure's layout says, else 500)."""
    if fmt == "html":
        return fig.to_html(full_html=True, include_plotlyjs=plotlyjs).encode("utf-8")
    if fmt not in FIGURE_FORMATS:
        raise AuditError(f"unknown figure format {fmt!r}; choose one of {list(FIGURE_FORMATS)}")
    return image_later(fig, fmt, width=width)()


def image_later(fig: go.Figure, fmt: str, *, width: int | None = None) -> Callable[[], bytes]:
    """``fig`` as a static ``png``, ``svg`` or ``pdf`` image (sized as :func:`figure_bytes` says), drawn by the
    headless browser while the caller goes on; the function returned waits for the bytes."""
    return figure_image_later(pio.to_json(fig, validate=False), fmt, width or WIDTH, fig.layout.height or 500,
                              SCALE if fmt == "png" else 1)


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
