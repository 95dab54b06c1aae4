"""Import licensed ICNALE Written Essays with ICNALE GRA ratings as an essay grading task.

Expected folder (``--data DIR``)::

    DIR/ratings.csv            columns essay_file, rating (0–100); several rows per essay (one per rater) are averaged
    DIR/**/W_JPN_PTJ0_004_B1_1.txt   the ICNALE Written Essays plain-text files, in any sub-folder

A file name gives the writer's L1 region (``JPN``; native speakers are ``ENS``) and the topic (``PTJ`` → subtask
``ptj``, ``SMK`` → ``smk``). Only rated essays become candidates; qualified = rating at or above the topic's median.
"""
from __future__ import annotations

import random
import re
from collections import defaultdict
from pathlib import Path

from audit.errors import AuditError
from audit.tasks.base import dataset_hash
from audit.tasks.essay import REFERENCE_GROUP, EssayRecord, EssayTask
from audit.tasks.loaders import cell_text, columns_of, read_rows, read_text

RATINGS_FILE = "ratings.csv"
RATING_COLUMNS = ("essay_file", "rating")
ESSAY_NAME = re.compile(r"^W_(?P<group>[A-Z]{3})_(?P<topic>PTJ|SMK)\d*_\w+$")
TOPICS = {"PTJ": "ptj", "SMK": "smk"}


def icnale_task(subtask: str, data: Path) -> EssayTask:
    """The ICNALE essays of one topic (``ptj`` or ``smk``) found in the folder ``data``."""
    records = load_records(Path(data))
    if subtask not in records:
        raise AuditError(f"{data}: no rated essays for subtask {subtask!r} (found: {sorted(records) or 'none'})")
    content = [(topic, r.essay_id, r.group, r.rating, r.text) for topic, part in records.items() for r in part]
    return EssayTask(subtask, records[subtask], name="icnale", reference_group=REFERENCE_GROUP,
                     dataset=dataset_hash(content))


def subtasks(data: Path) -> list[str]:
    """The topics that have rated essays in the folder ``data``."""
    return sorted(load_records(Path(data)))


def load_records(folder: Path) -> dict[str, list[EssayRecord]]:
    """Rated essays by subtask, each subtask's list in a seeded order (so a ``--limit`` prefix is a sample)."""
    if not folder.is_dir():
        raise AuditError(f"{folder}: not a folder; point --data at the folder holding {RATINGS_FILE} and the "
                         "ICNALE essay files (W_<L1>_<PTJ|SMK>…_<id>_<level>.txt)")
    ratings = read_ratings(folder / RATINGS_FILE)
    files = {path.stem: path for path in folder.rglob("W_*.txt")}
    missing = sorted(set(ratings) - set(files))
    if missing:
        shown = ", ".join(f"{name}.txt" for name in missing[:5]) + (" …" if len(missing) > 5 else "")
        raise AuditError(f"{folder}: {len(missing)} rated essay file(s) not found: {shown}")
    by_topic: dict[str, list[EssayRecord]] = defaultdict(list)
    for stem, rating in sorted(ratings.items()):
        match = ESSAY_NAME.match(stem)
        if match is None:
            raise AuditError(f"{files[stem]}: file name does not follow W_<L1>_<PTJ|SMK>…_<id>_<level>.txt")
        text = read_text(files[stem]).strip()
        if not text:
            raise AuditError(f"{files[stem]}: empty essay")
        by_topic[TOPICS[match["topic"]]].append(EssayRecord(stem, match["group"], rating, text))
    for subtask, records in by_topic.items():
        random.Random(f"icnale:{subtask}").shuffle(records)
    return dict(by_topic)


def read_ratings(path: Path) -> dict[str, float]:
    """Mean rating per essay file stem from the ratings CSV (see the module docstring)."""
    if not path.is_file():
        others = sorted(p.name for p in path.parent.glob("*.xls*"))
        hint = f" (found {others}: export the ratings sheet as CSV)" if others else ""
        raise AuditError(f"{path}: ratings file missing{hint}; expected a CSV with columns "
                         f"{', '.join(RATING_COLUMNS)} (one row per essay, or per essay and rater)")
    rows = read_rows(path)
    absent = [c for c in RATING_COLUMNS if c not in columns_of(rows)]
    if absent:
        raise AuditError(f"{path}: missing column(s) {absent}; expected {list(RATING_COLUMNS)}")
    scores: dict[str, list[float]] = defaultdict(list)
    for number, row in enumerate(rows, start=1):
        name = cell_text(row["essay_file"])
        if not name:
            raise AuditError(f"{path}, row {number}, column 'essay_file': empty")
        try:
            rating = float(cell_text(row["rating"]))
        except ValueError:
            rating = float("nan")
        if not 0 <= rating <= 100:
            raise AuditError(f"{path}, row {number}, column 'rating': {row['rating']!r} is not a number from 0 to 100")
        scores[Path(name).stem if name.endswith(".txt") else name].append(rating)
    if not scores:
        raise AuditError(f"{path}: no ratings")
    return {stem: sum(values) / len(values) for stem, values in scores.items()}
