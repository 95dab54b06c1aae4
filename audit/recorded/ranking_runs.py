"""Read a folder of recorded ranking runs: ``<model>/<job>/<date>/*.json`` chat-completion responses, each the
ranking of one pool of candidates, with ``context.default_order`` (names as shown) and ``context.demo_order`` (their
group codes, kept as written, e.g. ``A_W``).

The ranking is read out of the free text as the 2024 GPT hiring study's analysis reads it: names in the order of
their first mention in the lower-cased reply; names never mentioned follow, in the order they were shown. Only files
directly under ``<date>/`` are counted (the study's ``oversampled/`` runs are not). A reply that does not mention
every name is *partial*: it is kept, as the study keeps it, and counted and listed.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd

from audit.bounded import check_json_depth, read_bytes
from audit.errors import AuditError

MAX_RUN_BYTES = 1 * 2**20
"""Largest response file accepted (1 MiB; the study's are a few KiB)."""
MAX_RUNS_BYTES = 256 * 2**20
"""Most bytes one import reads over all its response files."""
MAX_POOL = 1000
"""Most names one response may rank (the study's pools hold 8)."""
LAST_CREATED = 253402300799
"""The last second of the year 9999: a ``created`` time past it (or before 1970) is not a date."""


@dataclass(frozen=True)
class RankingRuns:
    """The runs of one folder: ``rows`` (model, job, run, pool = the file number in sorted path order, position =
    the place shown, candidate ``<pool>.<position>``, name, group, rank, pool size), ``partial``
    (the run files whose reply leaves some name out), ``digest`` (SHA-256 over each file's path and hash), ``files``
    and the ``created`` date range (ISO dates, UTC)."""

    rows: pd.DataFrame
    partial: tuple[str, ...]
    digest: str
    files: int
    first_date: str
    last_date: str


def read_order(reply: str, names: list[str]) -> list[int]:
    """Indices of ``names`` in ranked order: by the position of each name's first mention in ``reply`` (both
    lower-cased), names not mentioned last in the order given."""
    text = reply.lower()
    positions = [text.find(name.lower()) for name in names]  # at most MAX_POOL scans of at most MAX_RUN_BYTES
    return sorted(range(len(names)), key=lambda i: (positions[i] < 0, positions[i] if positions[i] >= 0 else len(text), i))


def run_files(root: Path) -> list[Path]:
    """The response files the study counts: ``<model>/<job>/<date>/*.json``, sorted."""
    return sorted(root.glob("*/*/*/*.json"))


def read_runs(root: str | Path) -> RankingRuns:
    """Every run under ``root``; a file that is not a readable response is an :class:`AuditError` naming it."""
    root = Path(root)
    if not root.is_dir():
        raise AuditError(f"{root}: not a folder of ranking runs (<model>/<job>/<date>/*.json)")
    files = run_files(root)
    if not files:
        raise AuditError(f"{root}: no ranking runs found (expected <model>/<job>/<date>/*.json)")
    rows: list[tuple] = []
    partial: list[str] = []
    digest = hashlib.sha256()
    created: list[int] = []
    total = 0
    for number, path in enumerate(files):
        relative = path.relative_to(root).as_posix()
        data = read_bytes(path, MAX_RUN_BYTES, folder=root)
        total += len(data)
        if total > MAX_RUNS_BYTES:
            raise AuditError(f"{path}: the runs read so far pass {MAX_RUNS_BYTES // 2**20} MiB, the limit of one "
                             "import; import the folder in parts (one task each)")
        digest.update(relative.encode() + b"\0" + hashlib.sha256(data).digest())
        names, groups, reply, stamp = _response(path, data)
        model, job = path.parts[-4], path.parts[-3]
        order = read_order(reply, names)
        lowered = reply.lower()
        if any(name.lower() not in lowered for name in names):
            partial.append(relative)
        if stamp is not None:
            created.append(stamp)
        for rank, index in enumerate(order, start=1):
            rows.append((model, job, relative, number, index, f"{number}.{index}", names[index], groups[index], rank,
                         len(names)))
    frame = pd.DataFrame(rows, columns=["model", "job", "run", "pool", "position", "candidate_id", "name", "group",
                                        "rank", "pool_size"])
    dates = [datetime.fromtimestamp(t, timezone.utc).date().isoformat() for t in (min(created), max(created))] \
        if created else ["", ""]
    return RankingRuns(frame, tuple(partial), digest.hexdigest(), len(files), *dates)


def _response(path: Path, data: bytes) -> tuple[list[str], list[str], str, int | None]:
    """(names, group codes, reply text, created timestamp) of one response file."""
    check_json_depth(data, path)
    try:
        record = json.loads(data)
        context = record["context"]
        names, groups = list(context["default_order"]), list(context["demo_order"])
        reply = record["choices"][0]["message"]["content"]
    except (ValueError, KeyError, IndexError, TypeError) as exc:
        kind = "not valid JSON" if isinstance(exc, ValueError) else f"missing {exc}"
        raise AuditError(f"{path}: not a readable chat-completion response ({kind})") from None
    if not (isinstance(reply, str) and len(names) == len(groups) >= 2
            and all(isinstance(v, str) and v for v in names + groups)):
        raise AuditError(f"{path}: context.default_order and context.demo_order must be lists of names and group "
                         "codes of the same length (at least 2), with a text reply")
    if len(names) > MAX_POOL:
        raise AuditError(f"{path}: context.default_order names {len(names):,} candidates; the limit is {MAX_POOL:,}")
    for place, code in enumerate(groups, start=1):
        if code.count("_") != 1 or not all(code.split("_")):
            raise AuditError(f"{path}, context.demo_order item {place}: group code {code!r} is not <race>_<gender> "
                             "(two parts joined by one '_', e.g. A_W)")
    stamp = record.get("created")
    if isinstance(stamp, int) and not isinstance(stamp, bool) and not 0 <= stamp <= LAST_CREATED:
        raise AuditError(f"{path}, created: {stamp} is not a Unix time from 1970 to 9999")
    return names, groups, reply, stamp if isinstance(stamp, int) else None
