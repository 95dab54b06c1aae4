"""Declared designs of imported recorded decisions (the task definitions of systems audited from their records).

The ranking-runs layout of the 2024 GPT hiring study codes each candidate ``<race>_<gender>`` (race/ethnicity ``W``
White, ``B`` Black, ``A`` Asian, ``H`` Hispanic; gender ``M`` men, ``W`` women: ``A_W`` = Asian women); its audits
compare against White men unless told otherwise. LL144 names the race and gender groupings "race/ethnicity" and
"sex", and reads sex first."""
from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd

from audit.enums import Mode

if TYPE_CHECKING:
    from audit.design import AuditDesign

#: the study's groupings, in the order of the parts of a code
RANKING_RUN_GROUPINGS = ("race", "gender")
RANKING_RUN_REFERENCE = "W_M"
#: display names of the study's code parts; ``W`` is White as the race part and women as the gender part
RANKING_RUN_NAMES = {"race:W": "White", "B": "Black", "A": "Asian", "H": "Hispanic", "M": "men", "gender:W": "women"}
#: LL144's names of single-part groupings (the rest keep their own name)
LL144_NAMES = {"gender": "sex", "race": "race/ethnicity"}
#: the grouping LL144 tables list first
LL144_FIRST = "gender"
#: who counts as qualified in a recorded ranking (every candidate of a pool) and in a decision log (not recorded)
RANKING_RUN_QUALIFICATION = "every candidate of a pool equally qualified (the study's design)"
LOG_QUALIFICATION = "not recorded (an observational decision log)"
#: the study's audited quota: its published result is the top-1 of each ranking
RANKING_RUN_QUOTA = 1
RANKING_RUN_QUOTA_REASON = "the quota of the study's published result (the first place of each ranking)"
#: what a decision log's verdict is read at, per outcome kind: (k, why)
LOG_QUOTAS = {"rank": (1, "the decision the log records: the first place of each recorded pool"),
              "selected": (None, "the decision itself: the selection the log records (no quota)"),
              "score": (None, "the decision itself: scoring above the sample's median score (no quota)")}
#: what a rank log's quota adds where 0/1 or score logs are judged beside it
OTHER_LOGS = "; the 0/1 and score logs beside it are judged on their recorded decisions, whatever k"
#: why there is no quota where 0/1 and score logs are judged together
MIXED_DECISIONS = ("the decisions themselves: each 0/1 log's recorded selections, each score log's scores above its "
                   "sample's median (no quota)")


#: the LL144 name of the grouping that keeps every part of a code
INTERSECTION = "intersection"


def ll144_groupings(design: "AuditDesign") -> dict[str, str]:
    """LL144 grouping name → the design's grouping: each single part under its LL144 name, sex before
    race/ethnicity, then the intersection (when there are two parts or more, or none)."""
    single = sorted(((name, part) for name, part in design.groupings.items() if part is not None),
                    key=lambda item: (item[0] != LL144_FIRST, item[1]))
    out = {LL144_NAMES.get(name, name): name for name, _ in single}
    if len(single) != 1:
        out[INTERSECTION] = design.finest()
    return out


def declared_quota(qualification: str, labels: tuple[str, ...]) -> dict:
    """The quota an importer declares for a recorded design (``quota``, ``quota_reason``; empty when the design is
    not a recorded one), read off a design stored before quotas were recorded."""
    if qualification == RANKING_RUN_QUALIFICATION:
        return {"quota": RANKING_RUN_QUOTA, "quota_reason": RANKING_RUN_QUOTA_REASON}
    if qualification == LOG_QUALIFICATION and labels and labels[0] in LOG_QUOTAS:
        quota, reason = LOG_QUOTAS[labels[0]]
        return {"quota": quota, "quota_reason": reason}
    return {}


def declared_kind(qualification: str) -> dict:
    """A recorded ranking's design is counterfactual (identical resumes under different names; the study's design)."""
    return {"counterfactual": True} if qualification == RANKING_RUN_QUALIFICATION else {}

#: what a recorded system's scores are called where people read them: they are read as pointwise scores inside the
#: tool (rank-derived, or the recorded outcome), but no model scored them
RECORDED_RANKING = "recorded ranking"
DECISION_LOG = "decision log"
_MODE_NAMES = {RANKING_RUN_QUALIFICATION: RECORDED_RANKING, LOG_QUALIFICATION: DECISION_LOG}


def mode_name(design: "AuditDesign", mode: str) -> str:
    """``mode`` as shown for a task of ``design`` (an :class:`audit.design.AuditDesign`): ``recorded ranking`` or
    ``decision log`` for the pointwise rows of an imported system, ``mode`` itself otherwise."""
    return _MODE_NAMES.get(design.qualification, mode) if mode == Mode.POINTWISE else mode


def shown_modes(scores: pd.DataFrame, designs: dict[tuple[str, str], "AuditDesign"]) -> pd.DataFrame:
    """A score table with each recorded row's mode named by :func:`mode_name` (``designs``: (task,
    subtask) → design), for exports."""
    names = {key: mode_name(design, Mode.POINTWISE) for key, design in designs.items()}
    recorded = [names.get((t, s), Mode.POINTWISE) if m == Mode.POINTWISE else m
                for t, s, m in zip(scores["task"].tolist(), scores["subtask"].tolist(), scores["mode"].tolist())]
    return scores.assign(mode=recorded)


def read_as_pointwise(scores: pd.DataFrame) -> pd.DataFrame:
    """An exported score table with recorded rows read back as the pointwise scores they are inside the tool."""
    if "mode" not in scores:
        return scores
    return scores.assign(mode=scores["mode"].replace({RECORDED_RANKING: Mode.POINTWISE, DECISION_LOG: Mode.POINTWISE}))
