"""CAIRO prompt sets: per metric and bias dimension, the original prompts and any number of paraphrase sets.

Every set of a dimension is parallel to the original: prompt ``i`` of a paraphrase set paraphrases prompt ``i`` of
the original and targets the same subgroup. Two file formats load into the same :class:`PromptSets`:

- the project's own JSON (``data/cairo/*.json``)::

    {"format": "audit-cairo-prompts/1", "metric": "bold", "sources": {"set": "who wrote or paraphrased it"},
     "dimensions": {"gender": {"subgroups": [...], "sets": {"original": [...], "hand_a": [...]}}}}

- the CAIRO repository's files: ``{METRIC}_{split}_prompts.json`` (dimension → ``original_prompts`` and
  ``prompts_{owner}_{model}[_{n}]`` lists) with ``{METRIC}_{split}_groups.json`` (parallel ``groups`` and
  ``subgroups`` lists) or, for HONEST, ``{METRIC}_{split}_templates.json`` (template → ``category``).
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from audit.errors import AuditError

FORMAT = "audit-cairo-prompts/1"
ORIGINAL = "original"
#: CAIRO's dimension names → ours, so BOLD's religion pairs with the other metrics' religion.
DIMENSION_ALIASES = {"religious_ideology": "religion"}
CAIRO_SET = re.compile(r"^prompts_(?P<owner>[^_]+)_(?P<model>.+?)(?:_(?P<n>\d+))?$")
CAIRO_FILE = re.compile(r"^(?P<metric>[A-Za-z]+)_(?P<split>[a-z]+)_prompts\.json$")


@dataclass(frozen=True)
class PromptSets:
    """One metric's prompts for one bias dimension: parallel sets (``original`` first) and each set's source."""

    metric: str
    dimension: str
    subgroups: tuple[str, ...]
    sets: dict[str, tuple[str, ...]]
    sources: dict[str, str] = field(default_factory=dict)
    origin: str = ""

    @property
    def paraphrase_sets(self) -> list[str]:
        return [name for name in self.sets if name != ORIGINAL]

    def limited(self, limit: int | None) -> "PromptSets":
        """The first ``limit`` prompts of each subgroup, in every set (all when ``limit`` is None)."""
        if limit is None:
            return self
        seen: dict[str, int] = {}
        keep = []
        for index, subgroup in enumerate(self.subgroups):
            seen[subgroup] = seen.get(subgroup, 0) + 1
            if seen[subgroup] <= limit:
                keep.append(index)
        return PromptSets(self.metric, self.dimension, tuple(self.subgroups[i] for i in keep),
                          {name: tuple(texts[i] for i in keep) for name, texts in self.sets.items()},
                          self.sources, self.origin)


def load_prompts(path: str | Path, *, dimensions: Iterable[str] | None = None,
                 split: str = "valid") -> list[PromptSets]:
    """Every :class:`PromptSets` in a file or folder (ours or CAIRO's), optionally only some dimensions.

    A folder yields each of our files in it, or its CAIRO files of ``split``. Bad content raises
    :class:`AuditError` naming the file, the key and what is wrong.
    """
    path = Path(path)
    wanted = set(dimensions) if dimensions else None
    if path.is_dir():
        files = sorted(path.glob(f"*_{split}_prompts.json")) or sorted(
            p for p in path.glob("*.json") if not CAIRO_FILE.match(p.name) and not p.name.endswith(
                ("_groups.json", "_templates.json")))
        if not files:
            raise AuditError(f"prompt folder {path} holds no prompt files (*.json, or CAIRO *_{split}_prompts.json)")
    elif path.is_file():
        files = [path]
    else:
        raise AuditError(f"prompt file {path} does not exist")
    out = [sets for file in files for sets in _load_file(file, wanted)]
    if wanted:
        missing = wanted - {s.dimension for s in out}
        if missing:
            raise AuditError(f"{path}: no prompts for dimension(s) {sorted(missing)}")
    return out


def read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise AuditError(f"{path} is not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise AuditError(f"cannot read {path}: {exc}") from None


def _load_file(path: Path, wanted: set[str] | None) -> list[PromptSets]:
    data = read_json(path)
    if not isinstance(data, dict):
        raise AuditError(f"{path}: expected a JSON object at the top level, got {type(data).__name__}")
    if "format" in data:
        return _ours(path, data, wanted)
    match = CAIRO_FILE.match(path.name)
    if match:
        return _cairo(path, data, match["metric"].lower(), match["split"], wanted)
    raise AuditError(f"{path}: not a prompt file (no 'format' key, and the name is not CAIRO's "
                     "METRIC_split_prompts.json)")


def _ours(path: Path, data: dict, wanted: set[str] | None) -> list[PromptSets]:
    if data["format"] != FORMAT:
        raise AuditError(f"{path}: key 'format' is {data['format']!r}; this tool reads {FORMAT!r}")
    for key in ("metric", "dimensions"):
        if key not in data:
            raise AuditError(f"{path}: missing key {key!r}")
    if not isinstance(data["dimensions"], dict) or not data["dimensions"]:
        raise AuditError(f"{path}: key 'dimensions' must be a non-empty object (dimension → subgroups and sets)")
    sources = data.get("sources", {})
    out = []
    for dimension, body in data["dimensions"].items():
        if wanted and dimension not in wanted:
            continue
        where = f"{path}: dimensions.{dimension}"
        if not isinstance(body, dict) or "subgroups" not in body or "sets" not in body:
            raise AuditError(f"{where} must be an object with keys 'subgroups' and 'sets'")
        out.append(_checked(path, where, str(data["metric"]), dimension, body["subgroups"], body["sets"],
                            {name: str(sources.get(name, "unknown")) for name in body["sets"]}))
    return out


def cairo_source(set_name: str) -> str:
    """``prompts_mistralai_Mistral-7B-Instruct-v0.2_3`` → ``mistralai/Mistral-7B-Instruct-v0.2``."""
    match = CAIRO_SET.match(set_name)
    return f"{match['owner']}/{match['model']}" if match else set_name


def _cairo(path: Path, data: dict, metric: str, split: str, wanted: set[str] | None) -> list[PromptSets]:
    labels = _cairo_subgroups(path, metric, split)
    out, at = [], 0
    for dimension, body in data.items():
        where = f"{path}: key {dimension!r}"
        if not isinstance(body, dict) or "original_prompts" not in body:
            raise AuditError(f"{where} must be an object with an 'original_prompts' list")
        count = len(body["original_prompts"])
        subgroups = labels[at : at + count]
        at += count
        name = DIMENSION_ALIASES.get(dimension, dimension)
        if wanted and name not in wanted:
            continue
        sets = {ORIGINAL if key == "original_prompts" else key: value for key, value in body.items()}
        sources = {key: ORIGINAL if key == ORIGINAL else cairo_source(key) for key in sets}
        out.append(_checked(path, where, metric, name, subgroups, sets, sources, allow_empty=True))
    if at != len(labels):
        raise AuditError(f"{path}: {at} original prompts, but its subgroup file lists {len(labels)} subgroups")
    return out


def _cairo_subgroups(path: Path, metric: str, split: str) -> list[str]:
    """Subgroup of every original prompt, in file order: from the groups file, else the templates' categories."""
    stem = path.name[: -len("_prompts.json")]
    groups, templates = path.with_name(f"{stem}_groups.json"), path.with_name(f"{stem}_templates.json")
    if groups.is_file():
        data = read_json(groups)
        if not isinstance(data, dict) or not isinstance(data.get("subgroups"), list):
            raise AuditError(f"{groups}: expected an object with a 'subgroups' list")
        return [str(s) for s in data["subgroups"]]
    if templates.is_file():
        data = read_json(templates)
        try:
            return [str(entry["category"]) for entry in data.values()]
        except (AttributeError, KeyError, TypeError):
            raise AuditError(f"{templates}: expected template → object with a 'category' key") from None
    raise AuditError(f"{path}: CAIRO prompts need {groups.name} or {templates.name} next to them (subgroups)")


def _checked(path: Path, where: str, metric: str, dimension: str, subgroups: Any, sets: Any,
             sources: dict[str, str], *, allow_empty: bool = False) -> PromptSets:
    """Validate one dimension: string lists, the original first, every set as long as the original.

    Prompts must be non-empty unless ``allow_empty`` (CAIRO's published files hold a few empty
    prompts; runs skip them).
    """
    if not isinstance(sets, dict) or ORIGINAL not in sets:
        raise AuditError(f"{where}: 'sets' must be an object with an {ORIGINAL!r} list")
    if not isinstance(subgroups, list) or not subgroups:
        raise AuditError(f"{where}: 'subgroups' must be a non-empty list")
    if len(set(subgroups)) < 2:
        raise AuditError(f"{where}: bias needs at least two subgroups, found {sorted(set(map(str, subgroups)))}")
    ordered = {ORIGINAL: sets[ORIGINAL], **{k: v for k, v in sets.items() if k != ORIGINAL}}
    for name, texts in ordered.items():
        if not isinstance(texts, list):
            raise AuditError(f"{where}: set {name!r} must be a list of prompts, got {type(texts).__name__}")
        if len(texts) != len(subgroups):
            raise AuditError(f"{where}: set {name!r} has {len(texts)} prompts but there are {len(subgroups)} "
                             "subgroup labels (every set must be parallel to the original; leave this dimension out "
                             "with --dimensions)")
        for row, text in enumerate(texts):
            if not isinstance(text, str) or not (text.strip() or allow_empty):
                raise AuditError(f"{where}: set {name!r}, prompt {row} is empty or not a string: {text!r}")
    return PromptSets(metric, dimension, tuple(map(str, subgroups)),
                      {name: tuple(texts) for name, texts in ordered.items()}, sources, str(path))


def save_prompts(path: str | Path, prompt_sets: list[PromptSets], *, title: str = "", about: str = "") -> None:
    """Write one metric's :class:`PromptSets` (any dimensions) as our JSON format, atomically."""
    metrics = {s.metric for s in prompt_sets}
    if len(metrics) != 1:
        raise AuditError(f"a prompt file holds one metric, got {sorted(metrics)}")
    sources: dict[str, str] = {}
    for sets in prompt_sets:
        sources.update(sets.sources)
    doc = {"format": FORMAT, "metric": metrics.pop(), "title": title, "about": about, "sources": sources,
           "dimensions": {s.dimension: {"subgroups": list(s.subgroups), "sets": {k: list(v) for k, v in s.sets.items()}}
                          for s in prompt_sets}}
    path = Path(path)
    partial = path.with_suffix(".partial")
    try:
        partial.write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        partial.replace(path)
    except OSError as exc:
        raise AuditError(f"cannot write prompt file {path}: {exc.strerror}") from None
