"""Print an HTML document to PDF with the headless Chromium the project installs (Debian: ``apt-get install
chromium``), the same browser kaleido uses for static figures."""
from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

from audit.errors import AuditError

FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-pdf-header-footer",
         "--run-all-compositor-stages-before-draw")


def chromium() -> str:
    """Path of the Chromium executable, or an AuditError saying how to install it."""
    found = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    if found is None:
        raise AuditError("PDF output needs Chromium: apt-get install chromium (or `make chromium`)")
    return found


def print_pdf(html: bytes, *, timeout: float = 120) -> bytes:
    """``html`` (a self-contained document) printed to PDF bytes."""
    with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as folder:  # Chromium helpers may linger
        page, out = Path(folder) / "report.html", Path(folder) / "report.pdf"
        page.write_bytes(html)
        command = [chromium(), *FLAGS, f"--user-data-dir={folder}/profile", f"--print-to-pdf={out}", page.as_uri()]
        try:
            subprocess.run(command, capture_output=True, timeout=timeout, check=False)
        except subprocess.TimeoutExpired as exc:
            raise AuditError(f"Chromium did not print the report within {timeout:.0f} s") from exc
        if not out.is_file() or out.stat().st_size == 0:
            raise AuditError("Chromium did not write the PDF")
        return out.read_bytes()
