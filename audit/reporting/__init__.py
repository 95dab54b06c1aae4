"""The audit report: one self-contained document (HTML with inline figures and data, or PDF printed by headless
Chromium) saying what was audited, how, what was found, how sure we are, and how to reproduce every number.

:func:`collect` gathers the numbers (:mod:`audit.reporting.content`), :func:`findings` turns them into sentences,
:func:`render_html` writes the document and :func:`print_pdf` prints it.
"""
from audit.exports import start_exporter
from audit.reporting.content import ReportSettings, collect
from audit.reporting.findings import Finding, findings
from audit.reporting.pdf import print_pdf
from audit.reporting.render import render_html


def build_report(settings: ReportSettings, fmt: str = "html") -> bytes:
    """The report of ``settings`` as ``html`` or ``pdf`` bytes (the figures' browser starts first, in the
    background, so it is up by the time the numbers are computed)."""
    start_exporter()
    page = render_html(collect(settings)).encode("utf-8")
    return print_pdf(page) if fmt == "pdf" else page


__all__ = ["Finding", "ReportSettings", "build_report", "collect", "findings", "print_pdf", "render_html"]
