"""ICNALE import on a tiny synthetic folder written here: good data and each way it can be incomplete."""
from __future__ import annotations

from pathlib import Path

import pytest

from audit.errors import AuditError
from audit.tasks import get_task, list_subtasks

ESSAYS = {
    "W_ENS_PTJ0_001_XX_1": 80, "W_ENS_PTJ0_002_XX_1": 60, "W_JPN_PTJ0_004_B1_1": 55, "W_JPN_PTJ0_005_A2_0": 40,
    "W_CHN_PTJ0_010_B2_0": 70, "W_ENS_SMK0_003_XX_1": 75, "W_KOR_SMK0_020_B1_1": 50,
}


def write_folder(root: Path, ratings: str | None = None) -> Path:
    nested = root / "WE_0_Unclassified" / "PTJ"
    nested.mkdir(parents=True)
    for stem in ESSAYS:
        (nested / f"{stem}.txt").write_text(f"Essay {stem}. I think students should work a little.\n", "utf-8")
    lines = ["essay_file,rating"] + [f"{stem}.txt,{rating}" for stem, rating in ESSAYS.items()]
    (root / "ratings.csv").write_text(ratings if ratings is not None else "\n".join(lines) + "\n", "utf-8")
    return root


def test_reads_groups_ratings_and_topics(tmp_path):
    folder = write_folder(tmp_path)
    assert list_subtasks("icnale", data=folder) == ["ptj", "smk"]
    task = get_task("icnale", "ptj", data=folder)
    assert task.name == "icnale" and task.reference_group == "ENS" and task.groups == ("ENS", "CHN", "JPN")
    by_id = {c.candidate_id: c for c in task.candidates()}
    assert len(by_id) == 5
    # ptj ratings 80, 60, 55, 40, 70: median 60 → qualified at 60 and above
    assert by_id["ptj/W_ENS_PTJ0_002_XX_1/ENS"].qualified and not by_id["ptj/W_JPN_PTJ0_004_B1_1/JPN"].qualified
    assert by_id["ptj/W_CHN_PTJ0_010_B2_0/CHN"].text.startswith("Essay W_CHN_PTJ0_010_B2_0.")
    assert task.pointwise_prompt(task.candidates()[0]).answer_prefix == "Score:"


def test_rater_rows_are_averaged(tmp_path):
    folder = write_folder(tmp_path, "essay_file,rating\nW_ENS_SMK0_003_XX_1,40\nW_ENS_SMK0_003_XX_1,80\n"
                                    "W_KOR_SMK0_020_B1_1,50\n")
    task = get_task("icnale", "smk", data=folder)
    assert {r.essay_id: r.rating for r in task.records} == {"W_ENS_SMK0_003_XX_1": 60, "W_KOR_SMK0_020_B1_1": 50}


@pytest.mark.parametrize(
    ("ratings", "message"),
    [
        ("file,score\nW_ENS_PTJ0_001_XX_1.txt,80\n", r"missing column\(s\) \['essay_file', 'rating'\]"),
        ("essay_file,rating\nW_ENS_PTJ0_001_XX_1.txt,high\n", "row 1, column 'rating': 'high' is not a number"),
        ("essay_file,rating\nW_ENS_PTJ0_001_XX_1.txt,120\n", "row 1, column 'rating': '120' is not a number"),
        ("essay_file,rating\nW_ENS_PTJ0_999_XX_1.txt,80\nW_JPN_PTJ0_998_B1_1,70\n",
         r"2 rated essay file\(s\) not found: W_ENS_PTJ0_999_XX_1.txt, W_JPN_PTJ0_998_B1_1.txt"),
        ("essay_file,rating\nW_JPN_PTJ0_004_B1_1.txt,80\n", "no essays by the reference group 'ENS'"),
    ],
)
def test_bad_ratings_name_file_row_and_column(tmp_path, ratings, message):
    folder = write_folder(tmp_path, ratings)
    with pytest.raises(AuditError, match=message):
        get_task("icnale", "ptj", data=folder)


def test_missing_ratings_file_says_what_is_expected(tmp_path):
    folder = write_folder(tmp_path)
    (folder / "ratings.csv").unlink()
    (folder / "GRA.xlsx").write_bytes(b"PK")
    with pytest.raises(AuditError, match=r"ratings.csv: ratings file missing \(found \['GRA.xlsx'\]: export.*"
                                         "essay_file, rating"):
        get_task("icnale", "ptj", data=folder)


def test_non_utf8_essay_names_the_file_and_line(tmp_path):
    folder = write_folder(tmp_path)
    bad = next(folder.rglob("W_JPN_PTJ0_004_B1_1.txt"))
    bad.write_bytes(b"First line\nna\xefve caf\xe9\n")
    with pytest.raises(AuditError, match=r"W_JPN_PTJ0_004_B1_1.txt, line 2: not UTF-8"):
        get_task("icnale", "ptj", data=folder)


def test_data_is_required_and_must_be_a_folder(tmp_path):
    with pytest.raises(AuditError, match="task 'icnale' takes --data: missing --data"):
        get_task("icnale", "ptj")
    with pytest.raises(AuditError, match="not a folder"):
        get_task("icnale", "ptj", data=tmp_path / "nowhere")
