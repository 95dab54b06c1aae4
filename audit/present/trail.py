"""The audit trail (:func:`audit.store.runs.trail`) in words: one short line each for a run's options, what it read
and what it wrote, as the ``runs`` command's Markdown, the Runs page and the report's appendix show them."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Callable

import pandas as pd

SHOWN = ["run", "at", "action", "version", "options", "read", "wrote", "note"]


def options_text(options: dict, path: Callable[[str], str] = str) -> str:
    """``name=value`` for every option that is set (not None, False or empty), in name order; each text value
    through ``path`` (e.g. a report's portable paths)."""
    return ", ".join(f"{name}={_value(path(value) if isinstance(value, str) else value)}"
                     for name, value in sorted(options.items())
                     if value is not None and value is not False and value not in ("", [], {}))


def reads_text(reads: dict) -> str:
    """The systems by label and fingerprint, the data's SHA-256 (first 16 digits) and rows, and any source hash."""
    parts = []
    if reads.get("task"):
        parts.append(f"task {reads['task']}")
    if reads.get("systems"):
        parts.append("systems " + ", ".join(f"{label} ({fingerprint})" for label, fingerprint in
                                            reads["systems"].items()))
    if reads.get("data_sha256"):
        parts.append(f"data sha256 {reads['data_sha256'][:16]}… ({reads.get('data_rows', 0):,} rows)")
    if reads.get("source_sha256"):
        parts.append(f"source sha256 {reads['source_sha256'][:16]}…")
    parts += [f"{name} {reads[name]}" for name in ("prompts", "toxicity") if reads.get(name)]
    return "; ".join(parts)


def wrote_text(wrote: dict) -> str:
    """Rows gained per table (``+n``) and each file by name with its SHA-256 (first 16 digits)."""
    rows = [f"{table} {count:+,}" for table, count in wrote.get("rows", {}).items()]
    files = [f"{Path(f['path'].removeprefix('download: ')).name} (sha256 {f['sha256'][:16]}…)"
             for f in wrote.get("files", [])]
    return "; ".join(rows + files) or "no new rows"


def readable(trail: pd.DataFrame, path: Callable[[str], str] = str) -> pd.DataFrame:
    """``trail`` with its JSON columns as the lines above, in :data:`SHOWN` (options' text values through
    ``path``)."""
    return pd.DataFrame({
        "run": trail["run"].astype(int), "at": trail["at"], "action": trail["action"], "version": trail["version"],
        "options": [options_text(json.loads(text), path) for text in trail["options"]],
        "read": [reads_text(json.loads(text)) for text in trail["reads"]],
        "wrote": [wrote_text(json.loads(text)) for text in trail["wrote"]], "note": trail["note"]},
        columns=SHOWN)


def _value(value: object) -> str:
    if isinstance(value, (list, tuple)):
        return " ".join(map(str, value))
    return "yes" if value is True else str(value)
