"""Declared designs of imported recorded decisions (the task definitions of systems audited from their records).

The ranking-runs layout of the 2024 GPT hiring study codes each candidate ``<race>_<gender>`` (race/ethnicity ``W``
White, ``B`` Black, ``A`` Asian, ``H`` Hispanic; gender ``M`` men, ``W`` women: ``A_W`` = Asian women); its audits
compare against White men unless told otherwise. LL144 names the race and gender groupings "race/ethnicity" and
"sex", and reads sex first."""
from __future__ import annotations

#: the study's groupings, in the order of the parts of a code
RANKING_RUN_GROUPINGS = ("race", "gender")
RANKING_RUN_REFERENCE = "W_M"
#: display names of the study's code parts; ``W`` is White as the race part and women as the gender part
RANKING_RUN_NAMES = {"race:W": "White", "B": "Black", "A": "Asian", "H": "Hispanic", "M": "men", "gender:W": "women"}
#: LL144's names of single-part groupings (the rest keep their own name)
LL144_NAMES = {"gender": "sex", "race": "race/ethnicity"}
#: the grouping LL144 tables list first
LL144_FIRST = "gender"
