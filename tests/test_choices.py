"""Choices at the input edge: flags become enum members where they are parsed (anything else is argparse's one
"invalid choice" line), and the selection built from them is the only thing read afterwards."""
from __future__ import annotations

import pandas as pd
import pytest

from audit.cli import build_parser
from audit.commands.verdict_commands import verdict_rows
from audit.engine.selection import Selection
from audit.engine.tables import StoreTables
from audit.enums import DEFAULT_FAMILY, Family, Mode, Reading, Rule
from audit.paths import DEMO_STORE
from audit.reporting import ReportSettings
from audit.store.database import Store
from audit.store.tables import pairwise_mode

#: (command line up to the flag, flag, a valid value, its member)
FLAGS = [
    (["metrics", "--db", "x.db", "--k", "1"], "--mode", "pairwise-likelihood", Mode.PAIRWISE_LIKELIHOOD),
    (["verdict", "--db", "x.db"], "--mode", "pointwise", Mode.POINTWISE),
    (["plan", "--db", "x.db"], "--mode", "pairwise", Mode.PAIRWISE),
    (["verdict", "--db", "x.db"], "--family", "audit", Family.AUDIT),
    (["verdict", "--db", "x.db"], "--rule", "strict", Rule.STRICT),
    (["ll144", "--db", "x.db"], "--family", "grouping", Family.GROUPING),
    (["monitor", "--db", "x.db"], "--family", "grouping", Family.GROUPING),
    (["score", "--subtask", "retail"], "--mode", "listwise", Mode.LISTWISE),
    (["score", "--subtask", "retail"], "--pairwise-mode", "likelihood", Reading.LIKELIHOOD),
    (["score", "--subtask", "retail"], "--reading", "likelihood", Reading.LIKELIHOOD),
]


@pytest.mark.parametrize(("argv", "flag", "value", "member"), FLAGS)
def test_a_choice_is_an_enum_member_once_parsed(argv, flag, value, member):
    parsed = vars(build_parser(argv[0]).parse_args([*argv, flag, value]))
    found = parsed[flag.lstrip("-").replace("-", "_")]
    assert found is member and type(found) is type(member)


@pytest.mark.parametrize(("argv", "flag", "value", "member"), FLAGS)
def test_anything_else_is_refused_at_the_edge_in_one_line(argv, flag, value, member, capsys):
    with pytest.raises(SystemExit) as stop:
        build_parser(argv[0]).parse_args([*argv, flag, "nonesuch"])
    err = capsys.readouterr().err
    assert stop.value.code == 2
    assert f"argument {flag}: invalid choice: 'nonesuch' (choose from '" in err.splitlines()[-1]


def test_the_score_tables_modes_are_the_readings_modes():
    """The store names a pairwise run's mode by its reading; the members spell exactly the stored words."""
    assert pairwise_mode(pd.Series(["generate", "likelihood"])).tolist() == ["pairwise", "pairwise-likelihood"]
    assert [Reading(r).pairwise_mode for r in ("generate", "likelihood")] == [Mode.PAIRWISE, Mode.PAIRWISE_LIKELIHOOD]
    assert Selection("t").family is DEFAULT_FAMILY and Selection("t").rule is Rule.PRACTICE


def test_the_verdict_returns_its_quota_in_the_selection_judged():
    with Store(DEMO_STORE, create=False) as store:
        tables = StoreTables.read(store)
    judged = verdict_rows(tables, Selection("study-gpt-hiring", family=Family.AUDIT))
    assert judged.selection.ks == (1,) and judged.k == 1
    assert judged.quota_reason == tables.design("study-gpt-hiring").audited_quota()[1]
    assert set(judged.table["k"]) == {1} and set(judged.table["family"]) == {"audit"}
    assert type(judged.table["family"].iloc[0]) is str  # the stored word, not the member


def test_report_settings_read_the_quota_and_choices_from_the_selection_alone():
    settings = ReportSettings("store.db", Selection("resume", ks=(3,), grouping="race"))
    assert settings.k == 3 and ReportSettings("store.db", Selection("resume")).k is None
    assert settings.selection.grouping == "race" and not hasattr(settings, "grouping")  # no delegation
