"""An audit policy as code: one YAML file that fixes what ``check`` enforces and what ``verdict`` and ``report`` show.

Keys (every one optional; unknown keys are refused)::

    threshold: 0.8            # impact-ratio threshold, in (0, 1]
    reading: practice         # practice | strict (the verdict's reading of adverse impact)
    family: system            # grouping | system | audit (the Holm family)
    confidence: 0.95          # confidence level; α = 1 − confidence
    quota: 1                  # k for every task, or a mapping task → k (default: each design's quota)
    minimum_sample: 100       # fewest candidates a category may have (below it: the system fails)
    tasks: [study-gpt-hiring] # default: every task of the store
    systems: [gpt-4]          # default: every system of those tasks
    inconclusive_fails: false # whether an inconclusive category fails the system
    monitoring: off           # on | off, or a mapping (enabled, alpha, period, horizon) for the alarms of `monitor`
"""
from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from audit.bounded import read_bytes
from audit.enums import DEFAULT_FAMILY, Family, Rule
from audit.errors import AuditError
from audit.metrics.impact import FOUR_FIFTHS
from audit.metrics.monitoring import HORIZON
from audit.engine.selection import Selection
from audit.engine.verdict import FAMILIES, RULES

MAX_POLICY_BYTES = 64 * 1024
"""Largest policy file read (a policy is a few lines; a bigger file is refused before it is parsed)."""
KEYS = ("threshold", "reading", "family", "confidence", "quota", "minimum_sample", "tasks", "systems",
        "inconclusive_fails", "monitoring")
MONITORING_KEYS = ("enabled", "alpha", "period", "horizon")
PERIODS = ("day", "week", "month", "quarter")


@dataclass(frozen=True)
class Monitoring:
    """The policy's monitoring alarms: whether they count (``enabled``), their false-alarm level ``alpha``, the
    look ``period`` and the ``horizon`` in looks over which the false-alarm bound holds."""

    enabled: bool = False
    alpha: float = 0.05
    period: str = "week"
    horizon: int = HORIZON


@dataclass(frozen=True)
class Policy:
    """A parsed policy file (see the module's keys); ``path`` and ``sha256`` identify the file read."""

    path: str
    sha256: str
    threshold: float = FOUR_FIFTHS
    reading: Rule = Rule.PRACTICE
    family: Family = DEFAULT_FAMILY
    confidence: float = 0.95
    quota: int | None = None
    quotas: tuple[tuple[str, int], ...] = ()
    minimum_sample: int = 0
    tasks: tuple[str, ...] = ()
    systems: tuple[str, ...] = ()
    inconclusive_fails: bool = False
    monitoring: Monitoring = field(default_factory=Monitoring)

    def quota_for(self, task: str) -> int | None:
        """The policy's k for ``task`` (None: the task design's quota)."""
        return dict(self.quotas).get(task, self.quota)

    def selection(self, task: str, models: tuple[str, ...]) -> Selection:
        """What the policy judges of ``task``: the pointwise scores of ``models`` (empty: all) at its quota (none:
        the design's), confidence level, family and reading."""
        k = self.quota_for(task)
        return Selection(task, models=models, ks=() if k is None else (k,), ci=self.confidence, family=self.family,
                         rule=self.reading)

    def check_tasks(self, stored: list[str]) -> None:
        """An AuditError naming a task of ``tasks`` or of the per-task ``quota`` that is not among ``stored``."""
        for key, named in (("tasks", self.tasks), ("quota", [task for task, _ in self.quotas])):
            unknown = [task for task in named if task not in stored]
            if unknown:
                raise AuditError(f"policy {self.path}: key '{key}' names task {unknown[0]!r}, not in the store; its "
                                 f"tasks are {', '.join(stored)}")

    def describe(self) -> str:
        """The policy's rule in one line."""
        quota = (", ".join(f"{t}: k = {k}" for t, k in self.quotas) if self.quotas else
                 f"k = {self.quota}" if self.quota is not None else "each design's quota")
        return (f"threshold {self.threshold:g}, reading {self.reading}, family {self.family}, confidence "
                f"{self.confidence:g}, {quota}, minimum sample {self.minimum_sample}, inconclusive "
                f"{'fails' if self.inconclusive_fails else 'passes'}, monitoring alarms "
                f"{'on' if self.monitoring.enabled else 'off'}")


def load_policy(path: str | Path) -> Policy:
    """The :class:`Policy` of the YAML file at ``path`` (read with ``yaml.safe_load``, at most
    :data:`MAX_POLICY_BYTES`); every bad value is one AuditError naming the key and the file."""
    import yaml

    where = f"policy {path}"
    try:
        raw = read_bytes(Path(path), MAX_POLICY_BYTES)
    except AuditError as exc:
        raise AuditError(f"cannot read policy {exc}") from None
    try:
        parsed = yaml.safe_load(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise AuditError(f"{where}: not UTF-8 text") from None
    except yaml.YAMLError as exc:
        raise AuditError(f"{where}: cannot be parsed ({' '.join(str(exc).split())})") from None
    if parsed is None:
        parsed = {}
    if not isinstance(parsed, dict):
        raise AuditError(f"{where}: give a mapping of keys ({', '.join(KEYS)}), not a {type(parsed).__name__}")
    _known(parsed, KEYS, where)
    quota, quotas = _quota(parsed.get("quota"), where)
    return Policy(str(path), hashlib.sha256(raw).hexdigest(),
                  threshold=_level(parsed, "threshold", FOUR_FIFTHS, where, closed=True),
                  reading=Rule(_choice(parsed, "reading", Rule.PRACTICE, tuple(RULES), where)),
                  family=Family(_choice(parsed, "family", DEFAULT_FAMILY, tuple(FAMILIES), where)),
                  confidence=_level(parsed, "confidence", 0.95, where, closed=False), quota=quota, quotas=quotas,
                  minimum_sample=_count(parsed.get("minimum_sample", 0), "minimum_sample", 0, where),
                  tasks=_names(parsed, "tasks", where), systems=_names(parsed, "systems", where),
                  inconclusive_fails=_flag(parsed.get("inconclusive_fails", False), "inconclusive_fails", where),
                  monitoring=_monitoring(parsed.get("monitoring", False), where))


def _known(raw: dict, allowed: tuple[str, ...], where: str, prefix: str = "") -> None:
    unknown = [str(key) for key in raw if key not in allowed]
    if unknown:
        raise AuditError(f"{where}: unknown key(s) {', '.join(prefix + k for k in unknown)}; the keys are "
                         f"{', '.join(prefix + k for k in allowed)}")


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _level(raw: dict, key: str, default: float, where: str, *, closed: bool) -> float:
    """A number above 0 and below 1 (``closed``: at most 1)."""
    value = raw.get(key, default)
    if not _is_number(value) or not (0 < value < 1 or (closed and value == 1)):
        span = "above 0 and at most 1, e.g. 0.8" if closed else "strictly between 0 and 1, e.g. 0.95"
        raise AuditError(f"{where}: key '{key}' is {value!r}; give a number {span}")
    return float(value)


def _choice(raw: dict, key: str, default: str, choices: tuple[str, ...], where: str, prefix: str = "") -> str:
    value = raw.get(key, default)
    if value not in choices:
        raise AuditError(f"{where}: key '{prefix}{key}' is {value!r}; give one of {', '.join(choices)}")
    return str(value)


def _count(value: Any, key: str, low: int, where: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < low:
        raise AuditError(f"{where}: key '{key}' is {value!r}; give a whole number of at least {low}")
    return value


def _flag(value: Any, key: str, where: str) -> bool:
    if not isinstance(value, bool):
        raise AuditError(f"{where}: key '{key}' is {value!r}; give true or false")
    return value


def _names(raw: dict, key: str, where: str) -> tuple[str, ...]:
    """A list of names (one name alone reads as a list of one); empty or absent: all."""
    value = raw.get(key) or []
    value = [value] if isinstance(value, str) else value
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise AuditError(f"{where}: key '{key}' is {raw.get(key)!r}; give a list of names")
    if len(set(value)) != len(value):
        raise AuditError(f"{where}: key '{key}' names {sorted({v for v in value if value.count(v) > 1})[0]!r} "
                         "twice")
    return tuple(value)


def _quota(value: Any, where: str) -> tuple[int | None, tuple[tuple[str, int], ...]]:
    """(k for every task, ()) or (None, ((task, k), …)) or (None, ()) for the designs' quotas."""
    if value is None:
        return None, ()
    if isinstance(value, dict):
        if not value:
            raise AuditError(f"{where}: key 'quota' is an empty mapping; give k, or a mapping task → k")
        return None, tuple((str(task), _count(k, f"quota.{task}", 1, where)) for task, k in value.items())
    return _count(value, "quota", 1, where), ()


def _monitoring(value: Any, where: str) -> Monitoring:
    """``on``/``off`` (YAML booleans) or a mapping of :data:`MONITORING_KEYS`."""
    if isinstance(value, bool):
        return Monitoring(enabled=value)
    if not isinstance(value, dict):
        raise AuditError(f"{where}: key 'monitoring' is {value!r}; give on, off or a mapping of "
                         f"{', '.join(MONITORING_KEYS)}")
    _known(value, MONITORING_KEYS, where, "monitoring.")
    alpha = value.get("alpha", 0.05)
    if not _is_number(alpha) or not 0 < alpha < 1:
        raise AuditError(f"{where}: key 'monitoring.alpha' is {alpha!r}; give a false-alarm level strictly between 0 "
                         "and 1, e.g. 0.05")
    return Monitoring(enabled=_flag(value.get("enabled", True), "monitoring.enabled", where), alpha=float(alpha),
                      period=_choice(value, "period", "week", PERIODS, where, "monitoring."),
                      horizon=_count(value.get("horizon", HORIZON), "monitoring.horizon", 1, where))
