"""What each dashboard control that changes a verdict or its numbers changes, in one line (its ``help=`` tooltip)."""
TOOLTIPS = {
    "grouping": "Changes the groups the gaps and charts compare; the verdict judges every grouping.",
    "models": "Changes which systems are judged (under family audit, also every adjusted p-value).",
    "subtasks": "Changes which subtasks (one system each per model) are judged.",
    "ci": "Changes every interval and α = 1 − level: adverse impact needs an adjusted p of at most α, no evidence a "
          "ratio interval wholly above 0.8.",
    "n_boot": "Changes the bootstrap intervals of gaps and of scored pilots' ratios ({n_boot} by default, as in the "
              "command line and the report); recorded pools' ratio intervals are Katz's, not resampled.",
    "family": "Changes the adjusted p-values that decide adverse impact: Holm runs over every pairwise comparison "
              "within the family, so a larger family keeps fewer adverse verdicts.",
    "p_adjust": "Changes the gaps' adjusted p-values (◆ in the chart) and the findings; verdicts keep Holm over their "
                "family.",
    "reference": "Changes what the gaps are measured against (the task's stored reference is {stored}); impact ratios "
                 "and verdicts compare with the most-selected group.",
    "k": "Changes every number and verdict below: the k best-scored of each pool of {pool} are selected (the task's "
         "design, in the sidebar). k stops below the pool size: selecting everyone leaves no gap to measure.",
    "overview_k": "Changes which candidates count as selected (the k best of each pool), so every ratio and verdict; "
                  "starts at the design's quota, every k is in the row below.",
    "monitor_period": "Changes the look schedule: one look per period, each period's decisions counted at its end.",
    "monitor_threshold": "Changes the impact ratio below which the recent window counts as adverse (an alarm needs "
                         "it below and the evidence at its level).",
    "monitor_alpha": "Changes the false-alarm bound: a fair family alarms within the horizon with chance at most α.",
    "monitor_family": "Changes the correction for many pairs: a larger family raises the detector's level.",
}
