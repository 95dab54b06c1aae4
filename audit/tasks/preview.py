"""What an uploaded candidates file and its spec hold, shown before a run: the first rows, the groups found with their
candidate counts, and the parsed spec in words. Reading goes through the same checked loaders as a run."""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from audit.tasks.custom import DEFAULT_SUBTASK, TRUE
from audit.tasks.loaders import cell_text, columns_of, read_rows
from audit.tasks.specs import TaskSpec

FIRST_ROWS = 5


def first_rows(rows: list[dict], n: int = FIRST_ROWS) -> pd.DataFrame:
    """The first ``n`` rows as read, every cell as text."""
    return pd.DataFrame([{key: cell_text(value) for key, value in row.items()} for row in rows[:n]])


def group_counts(rows: list[dict], group_columns: Sequence[str]) -> pd.DataFrame | None:
    """Candidates (and qualified candidates, when the file says) per subtask and group, groups joined across
    ``group_columns`` as a run joins them; None when a group column is missing."""
    if not group_columns or any(column not in columns_of(rows) for column in group_columns):
        return None
    frame = pd.DataFrame({
        "subtask": [cell_text(r.get("subtask")) or DEFAULT_SUBTASK for r in rows],
        "group": ["_".join(cell_text(r.get(c)) for c in group_columns) for r in rows],
        "qualified": [cell_text(r.get("qualified")).lower() in TRUE for r in rows]})
    counts = frame.groupby(["subtask", "group"], as_index=False).agg(candidates=("group", "size"),
                                                                     qualified=("qualified", "sum"))
    return counts if "qualified" in columns_of(rows) else counts.drop(columns="qualified")


def spec_table(spec: TaskSpec) -> pd.DataFrame:
    """The parsed spec as (setting, value) rows."""
    labels = ", ".join(f"{label} = {value:g}" for label, value in zip(spec.label_set.labels, spec.label_set.relevance))
    rows = {"task name": spec.name, "reference group": spec.reference_group,
            "group column(s)": ", ".join(spec.group_columns), "groups": ", ".join(spec.groups or ()) or "as found",
            "labels and relevance": labels, "pairwise pools": str(spec.pools), "instruction": spec.instruction,
            "candidate prompt": spec.user, "answer prefix": spec.answer_prefix,
            "pairwise question": spec.pairwise_question, "pairwise item name": spec.pairwise_item}
    return pd.DataFrame({"setting": list(rows), "value": list(rows.values())})


def preview(path: Path, group_columns: Sequence[str]) -> tuple[pd.DataFrame, pd.DataFrame | None, int]:
    """(first rows, candidates per subtask and group or None, number of rows) of the candidates file at ``path``."""
    rows = read_rows(path)
    return first_rows(rows), group_counts(rows, group_columns), len(rows)
