"""Everything an audit report states, gathered from one :class:`audit.engine.audit.Audit` of the result store's
tables: scope, metric tables, impact ratios, diagnostics, an optional comparison, limitations and the commands that
reproduce each number."""
from __future__ import annotations

import shlex
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime, timezone

import pandas as pd

from audit.engine.audit import Audit
from audit.design import AuditDesign
from audit.enums import Mode
from audit.formatting import at_quota
from audit.engine.choices import FOUR_FIFTHS, METHODS, is_pairwise
from audit.engine.monitor import Monitoring
from audit.reporting.ll144_section import ll144_section
from audit.paths import portable_path
from audit.tasks.recorded import mode_name
from audit.engine.selection import Selection
from audit.store.runs import tool_version
from audit.engine.tables import StoreTables

@dataclass(frozen=True)
class ReportSettings:
    """What to report on: the store, one :class:`audit.engine.selection.Selection` of it (its one quota in ``ks``, read
    as :attr:`k`; none: the design's, after :func:`collect` the k used, ``quota_reason`` saying why) and the report's
    options: an optional comparison
    of two model labels (A, B), the verdicts' impact-ratio ``threshold``, the ``paper`` (``a4`` or ``letter``), the
    sign-off block's ``auditor``, ``firm`` and ``distribution_date`` (YYYY-MM-DD; each left as a blank line to fill in
    when empty; the date is also the LL144 section's) and ``run``, the number of the store's run that records the
    report (None: not recorded, see :func:`audit.store.runs.record_report`), and ``policy``, the (path, SHA-256) of
    the audit policy file the selection was read from (None: none). The selection's choices are read from it
    (``settings.selection.grouping``, …); after :func:`collect` its grouping, reference and pool hold the values the
    report used."""

    store: str
    selection: Selection
    quota_reason: str = ""
    compare: tuple[str, str] | None = None
    threshold: float = FOUR_FIFTHS
    paper: str = "a4"
    auditor: str = ""
    firm: str = ""
    distribution_date: str = ""
    run: int | None = None
    policy: tuple[str, str] | None = None

    @property
    def k(self) -> int | None:
        """The report's quota: the selection's (None: the design's, until :func:`collect` resolves it)."""
        return self.selection.ks[0] if self.selection.ks else None

    @property
    def design(self) -> str:
        """The pool design's spelling (the stored one once :func:`collect` resolved it)."""
        return self.selection.pool or ("observed" if is_pairwise(self.selection.mode) else "per-group")


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
    ll144: str = ""  # the LL144 summary section (HTML) of recorded systems, :mod:`audit.reporting.ll144_section`
    #: the task's dated decisions watched week by week (:func:`audit.engine.monitor.monitor_table`); None without dates
    monitoring: Monitoring | None = None
    generated: str = ""
    version: str = ""
    #: one row per system × grouping × category (:meth:`audit.engine.audit.Audit.verdicts`); None for pairwise modes
    verdicts: pd.DataFrame | None = None
    #: each declared grouping's smallest pool size (a quota k is defined below it)
    pool_sizes: dict[str, int] = field(default_factory=dict)
    #: every system is judged on the decisions its log records, with no quota
    #: (:attr:`audit.engine.audit.Audit.quota_free`): the report says "on the recorded decisions", not "at k"
    quota_free: bool = False
    #: (SHA-256 of the data behind the results, number of rows, what they are), see
    #: :func:`audit.store.database.data_hash`
    data: tuple[str, int, str] = ("", 0, "rows")
    #: the store's audit trail of the report's task as it stood before this report (:func:`audit.store.runs.trail`)
    trail: pd.DataFrame = field(default_factory=pd.DataFrame)

    @property
    def recorded(self) -> bool:
        """Every system of the report is imported decisions (nothing was scored: no prompts, label mass or LM
        diagnostics)."""
        return bool(len(self.models)) and bool((self.models["backend"] == "imported").all())

    @property
    def at_k(self) -> pd.DataFrame:
        return self.metrics[self.metrics["k"] == self.settings.k].reset_index(drop=True)


def collect(settings: ReportSettings, tables: StoreTables | None = None) -> ReportData:
    """Compute every table of the report through the selection's :class:`audit.engine.audit.Audit` of the store's
    ``tables`` (read from ``settings.store`` when not given; verdicts for pointwise scores only; an AuditError on bad
    settings, store untouched). The audit reads what only the store file holds (systems, prompts, data hash, trail,
    monitoring: :meth:`audit.engine.audit.Audit.records`) on a thread of its own while it computes."""
    audit = Audit(tables or StoreTables.open(settings.store), replace(settings.selection, ks=()))
    audit.read_ahead(settings.threshold, settings.k)
    data = _computed(settings, audit)
    records = audit.records(settings.threshold, settings.k)
    data.models, data.prompts, data.data, data.trail, data.monitoring = (
        records.systems, records.prompts, records.data, records.trail, records.monitoring)
    return data


def _computed(settings: ReportSettings, audit: Audit) -> ReportData:
    """The report's numbers from ``audit`` (the parts read from the store file left empty, for :func:`collect` to
    fill)."""
    k, why = audit.audited_quota(settings.k)
    audit.check_quota((k,), (audit.grouping,))
    metrics = audit.table
    verdicts, sizes_by_grouping = None, {}
    if settings.selection.mode == Mode.POINTWISE:
        sizes_by_grouping = audit.sizes(Mode.POINTWISE)
        verdicts = audit.verdicts((k,), (), settings.threshold)
    resolved = replace(audit.selection, reference=audit.reference, grouping=audit.grouping, pool=audit.pool, ks=(k,))
    settings = replace(settings, selection=resolved, quota_reason=why)
    data = ReportData(
        settings=settings, task=audit.selection.task, design=audit.design, models=pd.DataFrame(),
        subtasks=sorted(metrics["subtask"].unique()), group_sizes=audit.group_sizes, prompts=pd.DataFrame(),
        metrics=metrics,
        impact=audit.impact((k,), (audit.grouping,)), correlations=audit.correlations(k),
        rankings=audit.rankings(k)[0],
        diagnostics=audit.diagnostics.table,
        generated=datetime.now(timezone.utc).isoformat(timespec="seconds"), version=tool_version(),
        verdicts=verdicts, pool_sizes=sizes_by_grouping, quota_free=audit.quota_free)
    data.ll144 = ll144_section(audit, k, distribution_date=settings.distribution_date)
    if settings.compare:
        found = audit.comparison(*settings.compare, (k,))
        data.comparison = {"gaps": found.gaps, "flips": found.flips, "correlation": found.correlation}
    return data


def sample_sizes(data: ReportData) -> pd.DataFrame:
    """Per system (model): its subtasks and the smallest / largest number of candidates of one group in one
    subtask, in the report's grouping."""
    sizes = data.group_sizes
    return (sizes.groupby("model", as_index=False)
            .agg(subtasks=("subtask", "nunique"), smallest=("candidates", "min"), largest=("candidates", "max")))


def _counts(low: int, high: int) -> str:
    return f"{low}" if low == high else f"{low} to {high}"


def limitations(data: ReportData) -> list[str]:
    """Limitations computed from the data: per-system group sizes, CI widths, the design."""
    sel = data.settings.selection
    per_model = "; ".join(f"{r.model}: {_counts(r.smallest, r.largest)}"
                          for r in sample_sizes(data).itertuples(index=False))
    widths = (data.at_k["dp_gap_hi"] - data.at_k["dp_gap_lo"]) * 100
    out = [f"Candidates per group and subtask ({sel.grouping} grouping) — {per_model}. "
           f"{at_quota(data.settings.k, data.quota_free).capitalize()} the {round(sel.ci * 100)} % intervals of ΔDP "
           f"are {widths.median():.1f} "
           f"points wide (median; {widths.min():.1f} to {widths.max():.1f}). Gaps smaller than about half that "
           "width cannot be told from zero.",
           f"Gap intervals are percentile bootstrap intervals over {sel.n_boot} resamples of "
           f"{'the recorded pools' if data.settings.design == 'observed' else 'each group’s candidates'} (seed "
           f"{sel.seed}); they are not adjusted for the number of comparisons. p-values of gaps are "
           + ("exact conditional tests stratified by pool (the members of one pool compete for its k places)"
              if data.settings.design == "observed" else
              f"permutation tests of \"no gap\" ({sel.n_perm} shuffles of the group labels)")
           + f", adjusted ({METHODS[sel.adjust]}) across the groups × subtasks of each model; verdicts use "
           "their own test and family (How sure); only adjusted p-values decide findings and verdicts.",
           "A model's answers depend on the exact prompt, labels and answer prefix (Method); another wording, "
           "another decoding or another model version can give other gaps. The verdicts hold for these systems as "
           "scored on these candidates, not for the models in general."]
    if data.design.counterfactual:
        out.append("Counterfactual design: groups differ only by the name on otherwise identical resumes, so a gap is "
                   "caused by the name (and what the model infers from it).")
    else:
        out.append(f"Observational design: the groups of task {data.task!r} may differ in their documents, so a gap "
                   "can reflect those differences, not only group membership.")
    if data.verdicts is None:
        out.append(f"Verdicts are defined on pointwise scores; this report reads {sel.mode} scores, so it "
                   "lists gaps but no verdict.")
    return out


def commands(data: ReportData) -> list[list[str]]:
    """The shell commands that reproduce every number of the report (the same selection, read from the store), each
    as its list of shell-quoted words (see :func:`shell_text`)."""
    s = data.settings
    sel = s.selection
    source = ["--db", _quoted(portable_path(s.store)), "--task", _quoted(data.task)]
    picked = (["--models", *map(_quoted, sel.models)] if sel.models else []) + (
        ["--subtasks", *map(_quoted, sel.subtasks)] if sel.subtasks else [])
    # a recorded system's rows are read by the default mode: no "--mode pointwise" for a ranking no model scored
    mode = [] if mode_name(data.design, sel.mode) != sel.mode else ["--mode", sel.mode]
    chosen = [*mode, *picked, "--grouping", _quoted(sel.grouping), "--pool", _quoted(s.design)]
    reference = ["--reference", _quoted(sel.reference)]
    options = ["--preset", sel.preset] + (["--max-inconsistent", str(sel.max_inconsistent)]
                                          if sel.max_inconsistent else [])
    boot = ["--ci", str(sel.ci), "--bootstrap", str(sel.n_boot), "--seed", str(sel.seed)]
    tests = ["--permutations", str(sel.n_perm), "--adjust", sel.adjust]
    judged = ["--threshold", f"{s.threshold:g}", "--family", sel.family, "--rule", sel.rule]
    largest = max(1, int(data.metrics["k"].max()) - 1)
    out = [["python -m audit metrics", *source, *chosen, *reference, "--k", f"1-{largest}", *options, *boot, *tests,
            "--format csv"],
           ["python -m audit impact", *source, *chosen, "--k", str(s.k), *boot, "--format csv"]]
    if data.verdicts is not None:
        out.append(["python -m audit verdict", *source, *picked, "--pool", _quoted(s.design), "--k", str(s.k),
                    *judged, *boot, "--permutations", str(sel.n_perm), "--format json"])
    groups = ["--groups", *map(_quoted, sel.groups)] if sel.groups else []
    signed = [word for flag, value in (("--auditor", s.auditor), ("--firm", s.firm),
                                       ("--distribution-date", s.distribution_date)) if value
              for word in (flag, _quoted(value))]
    policy = ["--policy", _quoted(portable_path(s.policy[0]))] if s.policy else []
    out.append(["python -m audit report", *source, *chosen, *groups, *reference, "--k", str(s.k), *options, *boot,
                *tests, *judged, *policy, "--paper", s.paper, *signed, "--out report.html"])
    if s.policy:
        out.append(["python -m audit check", "--db", _quoted(portable_path(s.store)), *policy,
                    "--junit audit-check.xml"])
    if s.compare:
        out.append(["python -m audit compare", *source, *mode, *picked, "--grouping", _quoted(sel.grouping),
                    "--pool", _quoted(s.design), *reference, "--a", _quoted(s.compare[0]), "--b",
                    _quoted(s.compare[1]), "--k", str(s.k), *boot])
    return out


def shell_text(words: list[str], width: int = 76) -> str:
    """One command as copy-paste shell text: flags with their values kept together on lines of at most ``width``
    characters where possible, continued with a trailing backslash."""
    pieces: list[str] = []
    for word in words:
        if pieces and not word.startswith("-") and not word.startswith("python "):
            pieces[-1] += " " + word
        else:
            pieces.append(word)
    lines = [pieces[0]]
    for piece in pieces[1:]:
        if len(lines[-1]) + 1 + len(piece) > width:
            lines.append("    " + piece)
        else:
            lines[-1] += " " + piece
    return " \\\n".join(lines)


def _quoted(text: str) -> str:
    return shlex.quote(str(text))


def settings_record(settings: ReportSettings) -> dict:
    """The settings as plain values, the selection's flattened in (the store's path as
    :func:`audit.paths.portable_path` prints it)."""
    record = asdict(settings)
    chosen = {name: value for name, value in record.pop("selection").items() if name != "ks"}  # the report's is k
    own = {"store": record.pop("store"), "k": settings.k, **record}
    policy = settings.policy and [portable_path(settings.policy[0]), settings.policy[1]]
    return {**chosen, **own, "pool": settings.design, "store": portable_path(settings.store),
            "policy": policy}
