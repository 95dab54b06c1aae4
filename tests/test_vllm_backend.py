"""The optional vLLM backend: a one-line refusal where it cannot run, its own fingerprint, and — run for real on CPU
in the vLLM virtualenv (`make vllm-env`) — the store's row shapes with the transformers backend's numbers, and a
CAIRO run (seeded sampling) cached like the transformers backend's. The real runs share one vLLM engine: one process
(tests/vllm_scoring.py) scores and runs CAIRO twice, once per module, and the tests read what it wrote."""
from __future__ import annotations

import importlib.util
import json
import os
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest
from helpers import Done, audit

from audit.backend.spec import BackendSpec
from audit.backend.vllm_backend import vllm_ref
from audit.run.scoring import BatchJob
from audit.errors import AuditError
from audit.store.database import Store
from audit.tasks.custom import custom_task
from served import VLLM_PYTHON, VLLM_TEST_ENV, needs_vllm
from test_cairo_run import toy_run
from vllm_scoring import two_applicants

ROOT = Path(__file__).resolve().parent.parent
ENV = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
VLLM_HERE = importlib.util.find_spec("vllm") is not None  # in this (the test) environment


def score(db: Path, *args: str) -> Done:
    return audit("score", "--subtask", "retail", "--limit", "1", "--db", str(db), *args)


@pytest.mark.skipif(VLLM_HERE, reason="vllm is installed in the test environment")
def test_without_vllm_or_cuda_the_cli_says_so_in_one_line(tmp_path):
    db = tmp_path / "results.db"
    with Store(db) as store:
        before = store.row_counts()
    result = score(db, "--backend", "vllm")
    assert result.returncode == 2 and result.stderr.startswith("error: --backend vllm needs")
    assert result.stderr.strip().count("\n") == 0
    with Store(db) as store:
        assert store.row_counts() == before


def test_pairwise_likelihood_is_refused_before_anything_runs(tmp_path):
    result = score(tmp_path / "results.db", "--backend", "vllm", "--mode", "pairwise", "--pairwise-mode", "likelihood")
    assert result.returncode == 2 and "the vllm backend cannot score given answers" in result.stderr
    assert not (tmp_path / "results.db").exists()


def test_vllm_results_have_their_own_fingerprint(smollm_ref):
    ref = vllm_ref(smollm_ref)
    assert ref.fingerprint != smollm_ref.fingerprint and ref.label == "smollm2-135m+vllm"
    assert (ref.kind, ref.location, ref.content_id) == (smollm_ref.kind, smollm_ref.location, smollm_ref.content_id)
    with pytest.raises(AuditError, match="4-bit only"):
        vllm_ref(replace(smollm_ref, quant="8bit"))
    with pytest.raises(AuditError, match="unknown backend 'tgi'"):
        BackendSpec(smollm_ref, "tgi")


@pytest.fixture(scope="module")
def on_vllm(tmp_path_factory) -> tuple[Path, Path, dict]:
    """(scoring store, CAIRO store, what tests/vllm_scoring.py found): one vLLM engine in one process of the vLLM
    virtualenv scores into the first store, then runs the toy CAIRO command twice (2 seeds) into the second."""
    folder = tmp_path_factory.mktemp("vllm")
    cairo_db, cairo_args = toy_run(folder)
    out, db = folder / "vllm.json", folder / "vllm.db"
    run = subprocess.run([str(VLLM_PYTHON), str(ROOT / "tests" / "vllm_scoring.py"), str(db), str(out), "--",
                          *cairo_args, "--backend", "vllm", "--seeds", "2"],
                         cwd=ROOT, env={**ENV, **VLLM_TEST_ENV}, capture_output=True, text=True,
                         timeout=1200)
    assert run.returncode == 0, run.stderr[-3000:]
    return db, cairo_db, json.loads(out.read_text())


@needs_vllm
def test_vllm_scores_like_transformers_in_the_store_shapes(on_vllm, smollm_ref, smollm):
    db, _, found = on_vllm
    assert found["label"] == "smollm2-135m+vllm" and found["fingerprint"] == vllm_ref(smollm_ref).fingerprint
    # the loans vllm_scoring.py scored (tests/loan_spec.py's eight_loan_files, written beside its store)
    task = custom_task("default", db.parent / "eight_loans.csv", db.parent / "eight_loans.yaml")
    candidates = task.candidates()
    batch = [(p.key(), p) for p in (task.pointwise_prompt(c) for c in candidates)]
    theirs = BatchJob("labels", task.label_set.labels).rows(smollm, batch)
    assert len(found["probs"]) == len(theirs) == 8
    for probs, mass, (_, probs_t, mass_t) in zip(found["probs"], found["mass"], theirs):
        assert len(probs) == 2 and sum(probs) == pytest.approx(1.0)
        assert abs(probs[0] - probs_t[0]) < 1e-3 and abs(mass - mass_t) < 1e-3
    two = two_applicants(db.parent)
    first, second = two.candidates(1)
    assert found["answers"] == smollm.generate([two.pairwise_prompt(first, second), two.pairwise_prompt(second, first)])
    with Store(db) as store:
        assert found["scored"] == [8, 2] and len(store.pointwise_table()) == 8
        pairs = store.pairwise_table()
        assert len(pairs) == 2 and set(pairs["task"]) == {"two"}
        assert pairs["choice"].isin(["first", "second", "tie", "none"]).all()
        assert set(store.pointwise_table()["model"]) == {"smollm2-135m+vllm"}


@pytest.mark.skipif(VLLM_HERE, reason="vllm is installed in the test environment")
def test_cairo_on_vllm_without_vllm_is_one_line_and_writes_nothing(tmp_path):
    db, args = toy_run(tmp_path)
    result = audit(*args, "--backend", "vllm")
    assert result.returncode == 2 and result.stderr.startswith("error: --backend vllm needs"), result.stderr
    assert result.stderr.strip().count("\n") == 0 and not db.exists()


@needs_vllm
def test_cairo_runs_on_the_vllm_cpu_backend_and_caches_each_seed(on_vllm, smollm_ref):
    from audit.cairo.scored import scored_continuations

    _, db, found = on_vllm
    first, second = found["cairo"]
    assert first["returncode"] == 0, first["stderr"]
    for seed in (0, 1):
        assert f"smollm2-135m+vllm: 4 continuations, 4 generated, 0 cached (seed {seed})" in first["stdout"], first
    assert second["returncode"] == 0 and second["stdout"].count("4 continuations, 0 generated, 4 cached") == 2
    with Store(db) as store:
        table = scored_continuations(store, average_seeds=True)
        fingerprints = set(store.cairo_table()["fingerprint"])
    assert set(table["model"]) == {"smollm2-135m+vllm"} and len(table) == 8 and sorted(table["run"].unique()) == [0, 1]
    assert table["toxicity"].between(0, 1).all()
    assert fingerprints == {vllm_ref(smollm_ref).fingerprint}
