"""The study's listwise protocol: prompts equal to the recorded runs', listwise scoring with the bundled model and a
local server, and position bias."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from audit.tasks import study
from tests.recorded_study import JOBS, MODELS, extracted


def shown_templates(job: str, names: list[str], inputs: str) -> list[int]:
    """Which of the job's templates each name was shown on, read off a recorded prompt (-1: none fits)."""
    templates = study.materials()["jobs"][job]["resumes"]
    chunks = inputs.split(study.SEPARATOR)
    return [next((t for t, text in enumerate(templates) if chunk.endswith(text.format(name=name))), -1)
            for chunk, name in zip(chunks, names)]


def test_prompts_equal_the_recorded_runs(tmp_path: Path) -> None:
    runs = extracted(tmp_path)
    checked = {job: 0 for job in JOBS}
    for model in MODELS:
        for job in JOBS:
            for path in sorted((runs / model / job).glob("*/*.json"))[:15]:
                context = json.loads(path.read_text())["context"]
                names = context["default_order"]
                built = study.prompt(job, names, shown_templates(job, names, context["inputs"]))
                assert built.user == context["inputs"], path
                assert built.system == context["systems_message"], path
                assert built.answer_prefix == ""
                checked[job] += 1
    assert min(checked.values()) >= 20


def test_draws_one_name_per_group_seeded() -> None:
    first = study.draw("retail", 3, seed=7)
    assert first == study.draw("retail", 3, seed=7)
    assert sorted(first.groups) == sorted(study.materials()["names"])
    assert all(name in study.materials()["names"][g] for g, name in zip(first.groups, first.names))
    assert sorted(first.resumes) == list(range(8))
    others = [study.draw("retail", i, seed=7) for i in range(20)]
    assert len({r.groups for r in others}) > 1 and others[0] != study.draw("retail", 0, seed=8)
