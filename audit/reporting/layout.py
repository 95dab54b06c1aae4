"""The report's layout measured in headless Chromium: every table, preformatted block and figure laid out at a page's
printable width, with its rendered width and the width its content needs (``scrollWidth``), so a check can tell
that nothing is wider than the page or cut at its edge."""
from __future__ import annotations

from audit.present.browser import evaluate_in
from audit.reporting.style import PAGE_CONTENT_MM

#: run once the page has loaded: lay the body out at the printable width and measure each block
_MEASURE = """(() => {
document.body.style.maxWidth = 'none'; document.body.style.margin = '0'; document.body.style.width = '%dmm';
const page = document.body.getBoundingClientRect().width;
const blocks = [...document.querySelectorAll('table, pre, img')].map((el, i) => ({
  tag: el.tagName.toLowerCase(), index: i, width: el.getBoundingClientRect().width, content: el.scrollWidth,
  label: el.previousElementSibling ? el.previousElementSibling.textContent.slice(0, 60) : ''}));
return {page: page, blocks: blocks};
})()"""


def measure(html: str, width_mm: int = PAGE_CONTENT_MM) -> dict:
    """``{"page": px, "blocks": [{tag, index, width, content, label}, …]}`` of ``html`` laid out ``width_mm`` wide
    (default: A4's printable width) in the headless browser."""
    return evaluate_in(html.encode("utf-8"), _MEASURE % width_mm)


def too_wide(html: str, width_mm: int = PAGE_CONTENT_MM) -> list[dict]:
    """The blocks of ``html`` wider than the printable width, or whose content is wider than their box (cut)."""
    found = measure(html, width_mm)
    return [b for b in found["blocks"] if b["width"] > found["page"] + 0.5 or b["content"] > b["width"] + 1]
