"""The 2024 GPT hiring study's data for tests: where its tarball lies, how to extract it (or one job of it), and its
top-1 table recomputed from the raw JSON the way the study's notebook computes it."""
from __future__ import annotations

import json
import shutil
import tarfile
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest

TARBALL = Path(__file__).resolve().parents[2] / "shared" / "anchors" / "bloomberg-gpt-hiring.tar.gz"
TARBALL = TARBALL if TARBALL.exists() else Path("/work/shared/anchors/bloomberg-gpt-hiring.tar.gz")
RUNS = "bloomberg-gpt-hiring/data/intermediary/resume_ranking"
JOBS = ("HR specialist", "software engineer", "retail", "financial analyst")
MODELS = ("gpt-3.5-turbo", "gpt-4")


def extracted(folder: Path) -> Path:
    """The study's ranking runs extracted under ``folder`` (the test is skipped without the tarball)."""
    if not TARBALL.exists():
        pytest.skip(f"{TARBALL} is absent")
    with tarfile.open(TARBALL) as archive:
        archive.extractall(folder, filter="data")
    return folder / RUNS


def one_job(runs: Path, folder: Path, job: str) -> Path:
    """A copy of the runs of ``job`` (both models) under ``folder``: a small store's source."""
    for model in MODELS:
        shutil.copytree(runs / model / job, folder / model / job)
    return folder


def study_table(runs: Path, jobs: tuple[str, ...] = JOBS) -> pd.DataFrame:
    """Top-1 rate and impact ratio per (model, job, group), computed from the raw JSON the way the notebook does:
    files directly under <date>/, the job read from context, names ordered by the length of the reply before their
    first mention, rate = top-1 count / runs of the job, ratio against the job's highest rate."""
    rows = []
    for model in MODELS:
        records = [json.loads(p.read_text()) for p in runs.glob(f"{model}/*/*/*.json")]
        for job in jobs:
            mine = [r for r in records if r["context"]["job"] == job]
            tops = Counter()
            for record in mine:
                reply = record["choices"][0]["message"]["content"].lower()
                names = [n.lower() for n in record["context"]["default_order"]]
                before = {n: len(reply.split(n)[0]) for n in names}
                first = sorted(names, key=before.__getitem__)[0]
                tops[dict(zip(names, record["context"]["demo_order"]))[first]] += 1
            best = max(tops.values())
            rows += [(model, job, g, tops[g] / len(mine), tops[g] / best) for g in sorted(tops)]
    return pd.DataFrame(rows, columns=["model", "subtask", "category", "rate", "ratio"])
