"""The audit report: one self-contained document (HTML with inline figures and data, or PDF printed by the headless
browser of :mod:`audit.present.browser`) saying what was audited, how, what was found, how sure we are, and how to
reproduce every number.

:func:`collect` gathers the numbers (:mod:`audit.reporting.content`), :func:`findings` turns them into sentences,
:func:`render_html` writes the document and :func:`print_pdf` prints it.
"""
from collections.abc import Callable, Mapping
from dataclasses import replace

from audit.present.browser import print_pdf, warm_up
from audit.reporting.content import ReportSettings, collect
from audit.reporting.findings import Finding, findings
from audit.reporting.render import render_html
from audit.store.runs import data_reads, record_report
from audit.engine.tables import StoreTables

#: a report's steps, as :func:`build_report` announces them
COMPUTING, WRITING, PRINTING = ("computing the audit's numbers", "drawing the charts and writing the document",
                                "printing the PDF")
Progress = Callable[[str, float], None]
"""Told each step's name and the share of the steps done before it (0 … 1)."""


def report_steps(fmt: str) -> tuple[str, ...]:
    """The steps of a report in ``fmt`` (``html`` or ``pdf``), in order."""
    return (COMPUTING, WRITING, PRINTING) if fmt == "pdf" else (COMPUTING, WRITING)


def build_report(settings: ReportSettings, fmt: str = "html", progress: Progress | None = None,
                 tables: StoreTables | None = None) -> bytes:
    """The report of ``settings`` as ``html`` or ``pdf`` bytes, each step announced to ``progress`` as it starts
    (the headless browser starts first, in the background and under its deadline, so it is up when the charts are
    drawn; one that fails or never answers ends in one error and leaves no process behind);
    ``tables``: the store's, when already read."""
    steps = report_steps(fmt)
    tell = progress or (lambda step, done: None)
    warm_up()
    tell(COMPUTING, 0 / len(steps))
    data = collect(settings, tables)
    tell(WRITING, 1 / len(steps))
    page = render_html(data).encode("utf-8")
    if fmt != "pdf":
        return page
    tell(PRINTING, 2 / len(steps))
    return print_pdf(page)


def recorded_report(settings: ReportSettings, fmt: str, action: str, options: Mapping[str, object],
                    progress: Progress | None = None, tables: StoreTables | None = None, out: str | None = None,
                    download: str = "") -> tuple[bytes, int | None]:
    """:func:`build_report` as one run ``action`` (with ``options``) of the store's audit trail: the report names
    the run that records it, and the run its file (``out``, or the page's ``download`` name), the systems and the
    data it read (:func:`audit.store.runs.record_report`). Returns the report and its run number (None where the
    store is only read)."""
    selection = settings.selection
    return record_report(settings.store, action, options,
                         lambda run: build_report(replace(settings, run=run), fmt, progress, tables),
                         lambda store: data_reads(store, selection.task, selection.subtasks, selection.models),
                         out=out, download=download)


__all__ = ["COMPUTING", "Finding", "PRINTING", "Progress", "ReportSettings", "WRITING", "build_report", "collect",
           "findings", "print_pdf", "recorded_report", "render_html", "report_steps"]
