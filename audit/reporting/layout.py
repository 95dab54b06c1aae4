"""The report's layout measured in headless Chromium: every table, preformatted block and figure laid out at a page's
printable width, with its rendered width and the width its content needs (``scrollWidth``), so a check can tell
that nothing is wider than the page or cut at its edge."""
from __future__ import annotations

import json
import re
import subprocess
import tempfile
from html import unescape
from pathlib import Path

from audit.errors import AuditError
from audit.reporting.pdf import FLAGS, chromium
from audit.reporting.style import PAGE_CONTENT_MM

#: run after load: lay the body out at the printable width, then write each block's widths into the DOM
_MEASURE = """<script>
document.body.style.maxWidth = 'none'; document.body.style.margin = '0'; document.body.style.width = '%dmm';
const page = document.body.getBoundingClientRect().width;
const blocks = [...document.querySelectorAll('table, pre, img')].map((el, i) => ({
  tag: el.tagName.toLowerCase(), index: i, width: el.getBoundingClientRect().width, content: el.scrollWidth,
  label: el.previousElementSibling ? el.previousElementSibling.textContent.slice(0, 60) : ''}));
const out = document.createElement('pre'); out.id = 'layout-widths';
out.textContent = JSON.stringify({page: page, blocks: blocks}); document.body.appendChild(out);
</script>"""


def measure(html: str, width_mm: int = PAGE_CONTENT_MM, *, timeout: float = 120) -> dict:
    """``{"page": px, "blocks": [{tag, index, width, content, label}, …]}`` of ``html`` laid out ``width_mm`` wide
    (default: A4's printable width) in headless Chromium."""
    page = html.replace("</body>", _MEASURE % width_mm + "</body>")
    with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as folder:
        path = Path(folder) / "report.html"
        path.write_text(page, "utf-8")
        command = [chromium(), *FLAGS, f"--user-data-dir={folder}/profile", "--virtual-time-budget=10000",
                   "--window-size=1200,900", "--dump-dom", path.as_uri()]
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=False)
        except subprocess.TimeoutExpired as exc:
            raise AuditError(f"Chromium did not lay out the report within {timeout:.0f} s") from exc
    found = re.search(r'<pre id="layout-widths">(.*?)</pre>', done.stdout, re.S)
    if found is None:
        raise AuditError("Chromium did not lay out the report")
    return json.loads(unescape(found.group(1)))


def too_wide(html: str, width_mm: int = PAGE_CONTENT_MM) -> list[dict]:
    """The blocks of ``html`` wider than the printable width, or whose content is wider than their box (cut)."""
    found = measure(html, width_mm)
    return [b for b in found["blocks"] if b["width"] > found["page"] + 0.5 or b["content"] > b["width"] + 1]
