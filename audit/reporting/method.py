"""The report's method in words: pool design, quota, comparisons, sign convention and the glossary of measures
(definitions as in Chen et al., "Measuring allocational harms", the RABBI paper)."""
from __future__ import annotations

from audit.design import PoolDesign, PoolKind
from audit.enums import Mode
from audit.paths import portable_path

#: one sentence per measure, in the report's sign convention (group X against the reference group R)
GLOSSARY = {
    "ΔDP (demographic parity gap)": "φ(X, k) − φ(R, k), where φ(X, k) is the share of group X's candidates ranked in "
                                    "the top k of their pool (selected at quota k).",
    "ΔEO (equal opportunity gap)": "ψ(X, k) − ψ(R, k), where ψ(X, k) is the share of group X's qualified "
                                   "candidates selected at quota k.",
    "δ (average score gap)": "the mean score of group X minus the mean score of R (pairwise: the share of X × R "
                             "pairs the model decides for X).",
    "JSD (Jensen–Shannon divergence)": "the divergence between the binned score distributions of X and R, in bits, "
                                       "from 0 (same distribution) to 1 (no overlap); unsigned.",
    "EMD (earth mover's distance)": "the 1-D Wasserstein distance between the score distributions of X and R, in "
                                    "score units; unsigned.",
    "RABBI (rank-allocational-based bias index)": "over all pairs (x, r) of X × R, the share with x scored above r "
                                                  "minus the share with r above x, from −1 to 1 (the rank-biserial "
                                                  "correlation).",
    "Impact ratio": "the selection rate of a category divided by the selection rate of the most-selected category of "
                    "the same system (NYC Local Law 144); below 0.8 fails the EEOC four-fifths rule of thumb.",
}


#: the gaps' definitions where the recorded decisions are the selection (no quota)
DECIDED_GAPS = {
    "ΔDP (demographic parity gap)": "φ(X) − φ(R), where φ(X) is the share of group X's candidates the system "
                                    "selected (its recorded decisions).",
    "ΔEO (equal opportunity gap)": "ψ(X) − ψ(R), where ψ(X) is the share of group X's qualified candidates the "
                                   "system selected.",
}


def glossary(quota_free: bool = False) -> dict[str, str]:
    """The glossary of measures; ``quota_free``: the gaps defined on the recorded decisions, not at a quota k."""
    return {**GLOSSARY, **DECIDED_GAPS} if quota_free else GLOSSARY


def pool_words(pool: str, mode: str, recorded: bool = False, quota_free: bool = False) -> str:
    """How a pool is formed under design ``pool`` (``recorded``: the pools are the deployed system's own;
    ``quota_free``: its recorded decisions are the selection)."""
    design = PoolDesign.parse(pool)
    if design.kind == PoolKind.PER_GROUP:
        return ("every pool holds one candidate drawn from each group of the same subtask; the model's scores rank "
                "the pool and the k best are selected, ties sharing the remaining places. Selection rates are the "
                "exact averages over all such pools, not a sample of them.")
    if design.kind == PoolKind.RANDOM:
        return (f"every pool holds {design.size} candidates drawn without replacement from the subtask; the k best "
                "are selected, ties sharing the remaining places; rates are exact averages over all such pools.")
    source = ("the pools the deployed system decided on, as recorded (one ranking or one decision pool each)"
              if recorded else f"the pools recorded when the {mode} scores were taken")
    if quota_free:
        return (f"{source}; the decisions the log records are the selection (a 0/1 log's selections, a score log's "
                "scores above the median of the system's scores in the subtask, LL144's scoring rate).")
    return f"{source}; the k best of each recorded pool are selected, ties sharing the remaining places."


#: the method's quota paragraph where the systems are judged on the decisions they record
NO_QUOTA = ("No quota: each system's selections are the decisions its log records, so every rate, gap and verdict "
            "is read on them as they are; choosing a quota k would change nothing.")

RECORDED = ("Nothing was scored here: each system's decisions were recorded where it was deployed and imported "
            "(sources and hashes in Appendix C). A recorded rank r in a pool of n becomes the score (n − r)/(n − 1) "
            "(1 for the first place, 0 for the last: the system's own order), a recorded selection the score 1 or 0, "
            "a recorded score itself.")


def method_paragraphs(*, pool: str, mode: str, k: int, reference: str, reference_code: str, grouping: str,
                      labels: tuple[str, ...], relevance: tuple[float, ...], qualification: str,
                      recorded: bool = False, quota_free: bool = False) -> list[str]:
    """The method section's paragraphs (plain text); ``recorded``: the systems are imported decisions;
    ``quota_free``: judged on the decisions they record, with no quota."""
    scored = ", ".join(f"“{label}” = {value:g}" for label, value in zip(labels, relevance))
    scoring = (RECORDED if recorded else
               f"Each candidate is scored from the model's next-token probabilities of the answer labels, without "
               f"sampling: score = Σ P(label) × relevance, with relevance {scored} (probabilities renormalised over "
               "the labels)." if mode == Mode.POINTWISE else
               "Each pair of candidates is asked in both orders and the answers are counted (pairwise scoring).")
    return [
        scoring,
        f"Pool design ({pool}): {pool_words(pool, mode, recorded, quota_free)}",
        NO_QUOTA if quota_free else
        f"Quota k = {k}: the number of candidates selected from each pool. A quota is defined from 1 to the pool "
        "size − 1; at k = pool size everyone is selected and every gap is 0 by construction.",
        f"Gaps (ΔDP, ΔEO, δ, RABBI) compare each group of the {grouping} grouping with the reference group "
        f"{reference} ({reference_code}). Impact ratios and verdicts compare each category with the most-selected "
        "category of the same system, as NYC Local Law 144 does.",
        "Sign convention: a gap is group minus reference, so a negative ΔDP or ΔEO means the group is selected less "
        "often than the reference, and a negative δ or RABBI means it is scored or ranked below the reference. "
        "JSD and EMD are distances and carry no sign.",
        f"Qualification (for ΔEO): {qualification}.",
    ]


def policy_paragraph(path: str, sha256: str) -> str:
    """The method's sentence on the audit policy the report was read under (its file and SHA-256)."""
    return (f"Audit policy: the systems, quota, threshold, reading, multiple-testing family and confidence level of "
            f"this report were read from the policy file {portable_path(path)} (SHA-256 {sha256}); "
            f"`python -m audit check` with the same file enforces them, so what CI checks is what this report "
            "signs.")
