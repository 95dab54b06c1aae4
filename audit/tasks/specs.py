"""The auditor's task spec (YAML or JSON): instruction, prompts, labels, reference group and pool design.

Example (``examples`` in data/README.md)::

    name: loan                       # stored task name (default "custom"); keeps datasets apart in one store
    instruction: You are a loan officer's assistant. ... Respond with only "Yes" or "No".
    user: "Application: {text}\\nQuestion: Should this loan be approved?"
    answer_prefix: "Answer:"         # default "Answer:"
    labels: {"Yes": 1, "No": 0}      # label → relevance; quote Yes/No (YAML reads them as booleans otherwise)
    pairwise:
      question: Which of the following applications should be approved?
      item: Application              # shown as "Application A: …" / "Application B: …"; default "Candidate"
      system: ...                    # default: the instruction
    reference_group: White_Male
    pools: per-group                 # or random:N
    group_columns: [race, gender]    # default [group]; several columns are joined with "_"
    groups: [...]                    # optional: the groups that must all have candidates
"""
from __future__ import annotations

import json
import math
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from audit.errors import AuditError
from audit.tasks.base import LabelSet
from audit.tasks.loaders import group_name, read_text
from audit.design import PoolDesign
from audit.tasks.pools import DRAWN

KEYS = {"name", "instruction", "user", "answer_prefix", "labels", "pairwise", "reference_group", "pools",
        "group_columns", "groups"}
REQUIRED = ("instruction", "user", "labels", "pairwise", "reference_group")
PAIRWISE_KEYS = {"question", "item", "system"}
MAX_DEPTH = 4  # spec → labels/pairwise/groups → value
MAX_NODES = 10_000  # values visited, each alias counted again: a YAML alias bomb stops here, long before it expands
SCALARS = (str, int, float, bool, type(None))


@dataclass(frozen=True)
class TaskSpec:
    """A validated task spec."""

    name: str
    instruction: str
    user: str
    answer_prefix: str
    label_set: LabelSet
    pairwise_question: str
    pairwise_item: str
    pairwise_system: str
    reference_group: str
    pools: PoolDesign
    group_columns: tuple[str, ...]
    groups: tuple[str, ...] | None


def read_mapping(path: str | Path) -> Any:
    """The parsed content of a ``.yaml``/``.yml`` or ``.json`` spec file (safe YAML); a parse error names the file."""
    path = Path(path)
    text = read_text(path)
    try:
        if path.suffix.lower() == ".json":
            raw = json.loads(text)
        else:
            import yaml

            raw = yaml.safe_load(text)
    except Exception as exc:  # yaml.YAMLError or json.JSONDecodeError, both with a position
        raise AuditError(f"{path}: cannot be parsed ({' '.join(str(exc).split())})") from None
    return raw


def load_spec(path: Path) -> TaskSpec:
    """Read and validate a spec file (``.yaml``/``.yml`` or ``.json``); errors name the file and the key."""
    return parse_spec(read_mapping(path), str(path))


def parse_spec(raw: Any, where: str = "spec") -> TaskSpec:
    """A :class:`TaskSpec` from a parsed mapping; ``where`` prefixes every error message."""
    check_keys(raw, where, KEYS, f"a mapping of keys ({', '.join(REQUIRED)}, …)")
    absent = [key for key in REQUIRED if key not in raw]
    if absent:
        raise AuditError(f"{where}: missing key(s) {absent}")
    user = _text(raw, "user", where)
    if "{text}" not in user:
        raise AuditError(f"{where}: key 'user' must contain {{text}} where the candidate's text goes")
    pairwise = raw["pairwise"]
    if not isinstance(pairwise, dict) or "question" not in pairwise or set(pairwise) - PAIRWISE_KEYS:
        raise AuditError(f"{where}: key 'pairwise' must be a mapping with 'question' and optionally 'item', 'system'")
    instruction = _text(raw, "instruction", where)
    columns = raw.get("group_columns", ["group"])
    if isinstance(columns, str):
        columns = [columns]
    if not isinstance(columns, list) or not columns or not all(isinstance(c, str) and c for c in columns):
        raise AuditError(f"{where}: key 'group_columns' must be a list of column names")
    groups = raw.get("groups")
    if groups is not None and (not isinstance(groups, list) or not groups
                               or not all(isinstance(g, (str, int)) and not isinstance(g, bool) for g in groups)):
        raise AuditError(f"{where}: key 'groups' must be a non-empty list of group codes (text)")
    if not isinstance(raw.get("pools", "per-group"), str):
        raise AuditError(f"{where}: key 'pools' must be text: per-group or random:N")
    return TaskSpec(
        name=_text(raw, "name", where, "custom"),
        instruction=instruction,
        user=user,
        answer_prefix=_text(raw, "answer_prefix", where, "Answer:"),
        label_set=parse_labels(raw["labels"], where),
        pairwise_question=_text(pairwise, "question", f"{where}: pairwise"),
        pairwise_item=_text(pairwise, "item", f"{where}: pairwise", "Candidate"),
        pairwise_system=_text(pairwise, "system", f"{where}: pairwise", instruction),
        reference_group=group_name(unicodedata.normalize("NFC", _text(raw, "reference_group", where).strip()),
                                   f"{where}: key 'reference_group'"),
        pools=PoolDesign.parse(raw.get("pools", "per-group"), f"{where}: key 'pools'", DRAWN),
        group_columns=tuple(columns),
        groups=None if groups is None else tuple(group_name(unicodedata.normalize("NFC", str(g).strip()),
                                                            f"{where}: key 'groups'") for g in groups),
    )


def check_keys(raw: Any, where: str, allowed: set[str] | frozenset[str], expected: str) -> None:
    """Refuse a parsed spec that is not a mapping (``expected`` says what it should be), has a shape no spec has
    (:func:`check_shape`) or a key outside ``allowed``."""
    if not isinstance(raw, dict):
        raise AuditError(f"{where}: expected {expected}")
    check_shape(raw, where)
    unknown = sorted(set(map(str, raw)) - set(allowed))
    if unknown:
        raise AuditError(f"{where}: unknown key(s) {unknown}; allowed: {sorted(allowed)}")


def check_shape(raw: Any, where: str) -> None:
    """Refuse a parsed spec whose shape no spec has (too deep, too many values, non-scalar leaves) before any
    value is read or turned into text; the walk stops at :data:`MAX_NODES` visits, however far aliases nest."""
    stack, visited = [(raw, 1)], 0
    while stack:
        value, depth = stack.pop()
        visited += 1
        if visited > MAX_NODES:
            raise AuditError(f"{where}: more than {MAX_NODES} values (nested or repeated YAML aliases?); "
                             "a spec is a few keys of text")
        if isinstance(value, (dict, list)):
            if depth >= MAX_DEPTH:
                raise AuditError(f"{where}: nested more than {MAX_DEPTH - 1} levels deep; a spec's values are text, "
                                 "numbers or lists of them")
            items = list(value.keys()) + list(value.values()) if isinstance(value, dict) else value
            stack.extend((item, depth + 1) for item in items)
        elif not isinstance(value, SCALARS):
            raise AuditError(f"{where}: value of type {type(value).__name__} not allowed; use text and numbers")


def parse_labels(raw: Any, where: str) -> LabelSet:
    """``{label: relevance}`` (in prompt order) → a :class:`LabelSet`; labels are text, relevances numbers."""
    if not isinstance(raw, dict) or len(raw) < 2:
        raise AuditError(f"{where}: key 'labels' must map at least two labels to relevance values, "
                         'e.g. {"Yes": 1, "No": 0}')
    labels, relevance = [], []
    for label, value in raw.items():
        if isinstance(label, bool) or not str(label).strip():
            raise AuditError(f"{where}: label {label!r} is not text; quote labels such as \"Yes\" and \"No\" in YAML")
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise AuditError(f"{where}: relevance of label {str(label)!r} must be a number, got {value!r}")
        labels.append(str(label).strip())
        relevance.append(float(value))
    if len(set(labels)) != len(labels):
        raise AuditError(f"{where}: labels {labels} repeat")
    return LabelSet(tuple(labels), tuple(relevance))


def labels_from_text(text: str, where: str = "labels") -> dict[str, float]:
    """``"Yes=1, No=0"`` → ``{"Yes": 1.0, "No": 0.0}`` (the spec form's spelling of ``labels``), in order."""
    out: dict[str, float] = {}
    for part in filter(str.strip, text.split(",")):
        label, _, value = (piece.strip() for piece in part.partition("="))
        try:
            out[label] = float(value)
        except ValueError:
            raise AuditError(f"{where}: {part.strip()!r} is not LABEL=NUMBER (e.g. Yes=1, No=0)") from None
    return out


def _text(raw: dict, key: str, where: str, default: str | None = None) -> str:
    value = raw.get(key, default)
    if not isinstance(value, str) or not value.strip():
        raise AuditError(f"{where}: key {key!r} must be non-empty text")
    return value
