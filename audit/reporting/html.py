"""The report's one HTML table writer: every cell escaped."""
from __future__ import annotations

from html import escape

import pandas as pd


def table(frame: pd.DataFrame, *, numeric: tuple[str, ...] = (), css: str = "",
          rows: list[dict[str, str]] | None = None, row_class: str = "", caption: str = "") -> str:
    """``frame`` (cells already text) as an escaped HTML table; ``numeric`` columns right-aligned and never
    wrapped; ``rows``: data attributes of each ``<tr>`` (of class ``row_class`` when given)."""
    head = "".join(f'<th{" class=num" if c in numeric else ""}>{escape(str(c))}</th>' for c in frame.columns)
    body = []
    for i, values in enumerate(frame.itertuples(index=False, name=None)):
        attrs = "".join(f' data-{k}="{escape(str(v))}"' for k, v in (rows[i] if rows else {}).items())
        cells = "".join(f'<td{" class=num" if c in numeric else ""}>{escape(str(v))}</td>'
                        for c, v in zip(frame.columns, values))
        body.append(f"<tr{f' class={row_class}' if row_class else ''}{attrs}>{cells}</tr>")
    return (f'<table{f" class={css!r}" if css else ""}>{f"<caption>{escape(caption)}</caption>" if caption else ""}'
            f'<thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>')
