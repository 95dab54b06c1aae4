"""Chart and table exports (not the audit report, which is :mod:`audit.reporting`): a figure as PNG, SVG, PDF or
interactive HTML, a table as CSV, and a zip bundle of them all.

Static images go through kaleido, which drives a headless Chrome (Debian: ``apt-get install chromium``). Starting
kaleido's sync server once (:func:`start_exporter`) keeps that browser open, so later images take ~0.3 s, not ~4 s.
"""
from __future__ import annotations

import io
import json
import threading
import time
import logging
import warnings
import zipfile
from collections.abc import Mapping

import pandas as pd
import plotly.graph_objects as go

from audit.errors import AuditError
from audit.output import csv_text
from audit.processes import children, kill_groups

FIGURE_FORMATS = ("png", "svg", "pdf", "html")
MIME = {"png": "image/png", "svg": "image/svg+xml", "pdf": "application/pdf", "html": "text/html",
        "csv": "text/csv", "zip": "application/zip", "json": "application/json"}
WIDTH, HEIGHT, SCALE = 1200, None, 2
EXPORT_DEADLINE = 45.0
"""Seconds one static export may take, the browser's start included: kaleido waits forever on a browser that never
started (missing, or dying at once), so the export runs in a daemon thread and gives up after this, killing the
process group of every browser process it started."""
_lock = threading.Lock()
_started = False
_broken: str | None = None  # why the browser failed, once it has: later exports fail at once
_warming: threading.Thread | None = None  # the browser's early start (warm_up), joined before the first export


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


def warm_up() -> None:
    """Start the figures' browser now, in the background, so that it is up when the first figure is drawn (once per
    process). The start runs under :data:`EXPORT_DEADLINE` as an export does: a browser that fails or never answers
    is killed with its group, and the first export then raises that error."""
    global _warming
    with _lock:
        if _warming is not None or _started or _broken:
            return
        _warming = threading.Thread(target=_warm, name="figure-browser", daemon=True)
        _warming.start()


def _warm() -> None:
    try:
        _within_deadline(lambda: _image(go.Figure(), "svg", 10, 10), EXPORT_DEADLINE)
    except AuditError:
        pass  # kept in _broken: the first export raises it


def figure_bytes(fig: go.Figure, fmt: str, *, plotlyjs: "bool | str" = True, width: int | None = None) -> bytes:
    """``fig`` as ``png``, ``svg``, ``pdf`` or ``html`` bytes (HTML embeds plotly.js unless ``plotlyjs`` says else;
    static images ``width`` pixels wide, default :data:`WIDTH`)."""
    if fmt == "html":
        return fig.to_html(full_html=True, include_plotlyjs=plotlyjs).encode("utf-8")
    if fmt not in FIGURE_FORMATS:
        raise AuditError(f"unknown figure format {fmt!r}; choose one of {list(FIGURE_FORMATS)}")
    if _warming is not None:
        _warming.join()  # one export (or start) under the deadline at a time
    height = HEIGHT or fig.layout.height or 500
    return _within_deadline(lambda: _image(fig, fmt, width or WIDTH, height), EXPORT_DEADLINE)


def _image(fig: go.Figure, fmt: str, width: int, height: int) -> bytes:
    """One static export through kaleido's persistent browser (started on first use)."""
    start_exporter()
    # kaleido's server warns "kopts ignored" on every export: silenced by a narrow filter, set (idempotently) at each
    # export since a caller's catch_warnings may have restored the filters since (catch_warnings is not thread-safe)
    warnings.filterwarnings("ignore", message="The kopts argument is ignored", category=UserWarning)
    with _lock:
        return fig.to_image(format=fmt, width=width, height=height, scale=SCALE if fmt == "png" else 1)


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


def _within_deadline(work, seconds: float) -> bytes:
    """``work()`` in a daemon thread; an AuditError if it fails, if a thread it starts dies (kaleido's browser
    server: its error is kept, not printed), or if it is not done within ``seconds``."""
    global _broken
    if _broken:
        raise AuditError(_broken)
    logging.getLogger("choreographer").setLevel(logging.ERROR)  # its watchdog's warning is not ours to print
    result: dict[str, object] = {}
    died: list[BaseException] = []

    def run() -> None:
        try:
            result["value"] = work()
        except Exception as exc:  # noqa: BLE001 - kaleido raises several types when Chrome is missing or fails
            result["error"] = exc

    hook, threading.excepthook = threading.excepthook, lambda args: died.append(args.exc_value)
    before, threads = children(), set(threading.enumerate())
    try:
        worker = threading.Thread(target=run, name="figure-export", daemon=True)
        worker.start()
        deadline = time.monotonic() + seconds
        while worker.is_alive() and not died and time.monotonic() < deadline:
            worker.join(0.1)
        if "value" in result:
            return result["value"]  # type: ignore[return-value]
        timed_out = not died and "error" not in result
        kill_groups(children() - before)  # the browser it started, with its helpers: nothing is left behind
        if timed_out:  # its threads end on the closed pipe (a few seconds at most); their errors are kept
            settled = time.monotonic() + 5
            for thread in set(threading.enumerate()) - threads:
                thread.join(max(0.0, settled - time.monotonic()))
    finally:
        threading.excepthook = hook
    error = result.get("error") or (died[0] if died else None)
    cause = f"no answer within {seconds:.0f} s" if timed_out or not error else str(error).splitlines()[0]
    _broken = f"static export needs a working Chrome/Chromium (apt-get install chromium; BROWSER_PATH): {cause}"
    raise AuditError(_broken)
