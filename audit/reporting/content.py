"""Everything an audit report states, gathered from one result store: scope, metric tables, impact ratios,
diagnostics, an optional comparison, limitations and the commands that reproduce each number."""
from __future__ import annotations

import hashlib
import json
import shlex
import subprocess
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd

from audit.audit_result import comparison, compute
from audit.design import AuditDesign
from audit.errors import AuditError
from audit.metrics.inference import METHODS
from audit.metrics.schema import is_pairwise
from audit.store_tables import answer_table, pair_table, score_table
from audit.selection import N_BOOT, N_PERM, Selection
from audit.store import Store
from audit.views import StoreTables, regroup

@dataclass(frozen=True)
class ReportSettings:
    """What to report on: one :class:`audit.selection.Selection` of a store plus the report's quota ``k`` and an
    optional comparison of two model labels (A, B). ``reference``, ``grouping`` and ``pool`` None: the stored
    design's; after :func:`collect` they hold the values the report used."""

    store: str
    task: str | None = None
    models: tuple[str, ...] = ()
    mode: str = "pointwise"
    reference: str | None = None
    grouping: str | None = None
    subtasks: tuple[str, ...] = ()
    groups: tuple[str, ...] = ()
    preset: str = "default"
    max_inconsistent: float | None = None
    k: int = 2
    pool: str | None = None
    ci: float = 0.95
    n_boot: int = N_BOOT
    n_perm: int = N_PERM
    adjust: str = "holm"
    seed: int = 0
    compare: tuple[str, str] | None = None

    @property
    def design(self) -> str:
        """The pool design's spelling (the stored one once :func:`collect` resolved it)."""
        return self.pool or ("observed" if is_pairwise(self.mode) else "per-group")

    def selection(self, task: str) -> Selection:
        """The audit's selection, at every k."""
        return Selection(task, self.mode, models=tuple(self.models), subtasks=tuple(self.subtasks),
                         groups=tuple(self.groups), grouping=self.grouping, reference=self.reference, pool=self.pool,
                         preset=self.preset, max_inconsistent=self.max_inconsistent, ci=self.ci, n_boot=self.n_boot,
                         n_perm=self.n_perm, adjust=self.adjust, seed=self.seed)


@dataclass
class ReportData:
    """The numbers and facts of one report (tables are pandas DataFrames)."""

    settings: ReportSettings
    task: str
    design: AuditDesign
    models: pd.DataFrame
    subtasks: list[str]
    group_sizes: pd.DataFrame
    prompts: pd.DataFrame
    metrics: pd.DataFrame
    impact: pd.DataFrame
    correlations: pd.DataFrame
    rankings: pd.DataFrame
    diagnostics: pd.DataFrame
    comparison: dict[str, pd.DataFrame] = field(default_factory=dict)
    generated: str = ""
    version: str = ""

    @property
    def at_k(self) -> pd.DataFrame:
        return self.metrics[self.metrics["k"] == self.settings.k].reset_index(drop=True)


def tool_version() -> str:
    """The project's git commit (short hash), or ``unknown`` outside a checkout."""
    try:
        done = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=Path(__file__).parent, capture_output=True,
                              text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    return done.stdout.strip() or "unknown"


def load_scores(settings: ReportSettings, table: pd.DataFrame | None = None) -> pd.DataFrame:
    """The score rows of the settings' mode, task and models, read from ``table`` or else from the store."""
    if table is None:
        if not Path(settings.store).is_file():
            raise AuditError(f"result store {settings.store} does not exist")
        with Store(settings.store, create=False) as store:
            table = score_table(store)
    table = table[table["mode"].astype(str) == settings.mode]
    tasks = sorted(table["task"].astype(str).unique())
    if not tasks:
        raise AuditError(f"no {settings.mode} scores")
    task = settings.task or (tasks[0] if len(tasks) == 1 else None)
    if task not in tasks:
        raise AuditError(f"task {settings.task!r} has no {settings.mode} scores; pass --task, one of: "
                         f"{', '.join(tasks)}" if settings.task else f"the scores hold several tasks; pass --task, "
                                                                      f"one of: {', '.join(tasks)}")
    table = table[table["task"].astype(str) == task]
    models = set(table["model"].astype(str))
    missing = [m for m in settings.models if m not in models]
    if missing:
        raise AuditError(f"model {missing[0]!r} has no {settings.mode} scores for task {task!r}; models are: "
                         f"{', '.join(sorted(models))}")
    if settings.models:
        table = table[table["model"].astype(str).isin(settings.models)]
    return table.reset_index(drop=True)


def _models(store: Store, scores: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for label, fingerprint, details in store.models()[["label", "fingerprint", "details"]].itertuples(index=False,
                                                                                                      name=None):
        if fingerprint not in set(scores["fingerprint"]):
            continue
        info = json.loads(details)
        rows.append({"model": label, "fingerprint": fingerprint, "source": info.get("location", ""),
                     "kind": info.get("kind", ""), "content hash": info.get("content_id", ""),
                     "quantisation": info.get("quant", ""), "dtype": info.get("dtype", ""),
                     "device": info.get("device", ""), "backend": info.get("runtime", info.get("engine", "transformers"))})
    return pd.DataFrame(rows).sort_values("model", ignore_index=True)


def _prompts(store: Store, task: str, scores: pd.DataFrame, mode: str) -> pd.DataFrame:
    """One example prompt per subtask: its system message (the template with the job filled in) and SHA-256."""
    plan = "pointwise_plan" if mode == "pointwise" else "pairwise_plan"
    fingerprints = sorted(set(scores["fingerprint"]))
    rows = []
    for subtask in sorted(scores["subtask"].unique()):
        found = store.db.execute(
            f"SELECT b.body FROM {plan} p JOIN prompts b ON b.key = p.prompt WHERE p.task = ? AND p.subtask = ? "
            f"AND p.model IN ({','.join('?' * len(fingerprints))}) ORDER BY p.prompt LIMIT 1",
            (task, subtask, *fingerprints)).fetchone()
        system = json.loads(found[0]).get("system", "") if found else ""
        rows.append({"subtask": subtask, "template": system,
                     "sha256": hashlib.sha256(system.encode("utf-8")).hexdigest()[:16]})
    return pd.DataFrame(rows)


def _diagnostics(store: Store, scores: pd.DataFrame, mode: str) -> pd.DataFrame:
    """Per model: pointwise label mass (share of next-token probability on the labels), or the pairwise answers'
    irregular, tied and order-flipped shares."""
    if mode == "pointwise":
        mass = pd.to_numeric(scores["label_mass"], errors="coerce")
        return (scores.assign(label_mass=mass).groupby("model", as_index=False)
                .agg(mean_label_mass=("label_mass", "mean"), min_label_mass=("label_mass", "min")))
    answers = answer_table(store)
    answers = answers[(answers["mode"] == mode) & answers["model"].isin(scores["model"])]
    pairs = pair_table(store)
    pairs = pairs[(pairs["mode"] == mode) & pairs["model"].isin(scores["model"])]
    out = answers.groupby("model", as_index=False).agg(irregular=("regular", lambda r: 1 - r.mean()),
                                                       tied=("tie", "mean"))
    return out.merge(pairs.groupby("model", as_index=False).agg(flipped=("flipped", "mean")), on="model", how="left")


def collect(settings: ReportSettings) -> ReportData:
    """Read the store and compute every table of the report through :func:`audit.audit_result.compute` (an
    AuditError on bad settings, store untouched)."""
    scores = load_scores(settings)
    task = str(scores["task"].iloc[0])
    with Store(settings.store, create=False) as store:
        tables = StoreTables.read(store)
        models, prompts = _models(store, scores), _prompts(store, task, scores, settings.mode)
        diagnostics = _diagnostics(store, scores, settings.mode)
    result = compute(tables, settings.selection(task))
    metrics = result.table
    if not 1 <= settings.k <= metrics["k"].max():
        raise AuditError(f"quota k={settings.k} is outside 1 … {metrics['k'].max()} (the smallest selected pool)")
    settings = replace(settings, task=task, reference=result.reference, grouping=result.grouping, pool=result.pool)
    scores = regroup(scores[scores["model"].isin(metrics["model"]) & scores["subtask"].isin(metrics["subtask"])],
                     result.design.part(result.grouping))
    sizes = (scores.groupby(["subtask", "group"])["candidate_id"].nunique().rename("candidates").reset_index())
    data = ReportData(
        settings=settings, task=task, design=result.design, models=models, subtasks=sorted(metrics["subtask"].unique()),
        group_sizes=sizes, prompts=prompts, metrics=metrics,
        impact=result.impact[result.impact["k"] == settings.k].reset_index(drop=True),
        correlations=result.correlations(settings.k), rankings=result.rankings(settings.k)[0], diagnostics=diagnostics,
        generated=datetime.now(timezone.utc).isoformat(timespec="seconds"), version=tool_version())
    if settings.compare:
        a, b = settings.compare
        found = comparison(tables, replace(result.selection, ks=(settings.k,)), a, b)
        data.comparison = {"gaps": found.gaps, "flips": found.flips, "correlation": found.correlation}
    return data


def limitations(data: ReportData) -> list[str]:
    """Limitations computed from the data: group sizes, CI widths, the design."""
    sizes = data.group_sizes["candidates"]
    widths = (data.at_k["dp_gap_hi"] - data.at_k["dp_gap_lo"]) * 100
    out = [f"Each group has {sizes.min()} to {sizes.max()} candidates per subtask; at k = {data.settings.k} the "
           f"{round(data.settings.ci * 100)} % intervals of ΔDP are {widths.median():.1f} points wide (median; "
           f"{widths.min():.1f} to {widths.max():.1f}). Gaps smaller than about half that width cannot be told "
           "from zero.",
           f"Intervals are percentile bootstrap intervals over {data.settings.n_boot} resamples of "
           f"{'the recorded pools' if data.settings.design == 'observed' else 'each group’s candidates'} (seed "
           f"{data.settings.seed}); they are not adjusted for the number of comparisons. p-values are permutation "
           f"tests of \"no gap\" ({data.settings.n_perm} shuffles of the group labels), adjusted "
           f"({METHODS[data.settings.adjust]}) across the groups × subtasks of each model."]
    if data.design.counterfactual:
        out.append("Counterfactual design: groups differ only by the name on otherwise identical resumes, so a gap is "
                   "caused by the name (and what the model infers from it).")
    else:
        out.append(f"Observational design: the groups of task {data.task!r} may differ in their documents, so a gap "
                   "can reflect those differences, not only group membership.")
    return out


def commands(data: ReportData) -> list[str]:
    """The shell commands that reproduce every number of the report (the same selection, read from the store)."""
    s = data.settings
    source = f"--db {_quoted(s.store)} --task {_quoted(data.task)} --mode {s.mode}"
    if s.models:
        source += f" --models {' '.join(_quoted(m) for m in s.models)}"
    chosen = f"--grouping {_quoted(s.grouping)} --pool {s.design}"
    if s.subtasks:
        chosen += f" --subtasks {' '.join(_quoted(t) for t in s.subtasks)}"
    reference = f"--reference {_quoted(s.reference)}"
    options = f" --preset {s.preset}" + (f" --max-inconsistent {s.max_inconsistent}" if s.max_inconsistent else "")
    boot = f"--ci {s.ci} --bootstrap {s.n_boot} --seed {s.seed}"
    out = [f"python -m audit metrics {source} {chosen} {reference} --k 1-{max(1, data.metrics['k'].max() - 1)}{options} {boot} "
           f"--permutations {s.n_perm} --adjust {s.adjust} --format csv",
           f"python -m audit impact {source} {chosen} --k {s.k} {boot} --format csv",
           f"python -m audit report {source} {chosen} {reference} --k {s.k}{options} {boot} --permutations {s.n_perm} "
           f"--adjust {s.adjust} --out report.html"]
    if s.compare:
        out.append(f"python -m audit compare {source} {chosen} {reference} --a {_quoted(s.compare[0])} "
                   f"--b {_quoted(s.compare[1])} --k {s.k} {boot}")
    return out


def _quoted(text: str) -> str:
    return shlex.quote(str(text))


def settings_record(settings: ReportSettings) -> dict:
    """The settings as plain values."""
    return {**asdict(settings), "pool": settings.design}
