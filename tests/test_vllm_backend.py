"""The optional vLLM backend: a one-line refusal where it cannot run, its own fingerprint, and (only on a
CUDA machine with vllm installed) the store's row shapes with probabilities close to the transformers backend."""
from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from audit.backend.spec import BackendSpec
from audit.backend.vllm_backend import vllm_ref
from audit.scoring import BatchJob, run_scoring
from audit.errors import AuditError
from audit.store import Store
from audit.tasks import get_task

ROOT = Path(__file__).resolve().parent.parent
ENV = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}


def cuda_available() -> bool:
    import torch

    return torch.cuda.is_available()


VLLM_RUNS = importlib.util.find_spec("vllm") is not None and cuda_available()


def score(db: Path, *args: str) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "audit", "score", "--subtask", "retail", "--limit", "1", "--db", str(db), *args]
    return subprocess.run(command, cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=300)


@pytest.mark.skipif(VLLM_RUNS, reason="vllm and CUDA are both here")
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
    assert result.returncode == 2 and "generation only" in result.stderr
    assert not (tmp_path / "results.db").exists()


def test_vllm_results_have_their_own_fingerprint(smollm_ref):
    ref = vllm_ref(smollm_ref)
    assert ref.fingerprint != smollm_ref.fingerprint and ref.label == "smollm2-135m+vllm"
    assert (ref.kind, ref.location, ref.content_id) == (smollm_ref.kind, smollm_ref.location, smollm_ref.content_id)
    with pytest.raises(AuditError, match="4-bit only"):
        vllm_ref(replace(smollm_ref, quant="8bit"))
    with pytest.raises(AuditError, match="unknown backend 'tgi'"):
        BackendSpec(smollm_ref, "tgi")


@pytest.mark.skipif(not VLLM_RUNS, reason="needs the vllm package and a CUDA GPU")
def test_vllm_scores_like_transformers_in_the_store_shapes(tmp_path, smollm_ref, smollm):
    ref = vllm_ref(replace(smollm_ref, quant="none", dtype="bfloat16", device="cuda"))
    backend = BackendSpec(ref, "vllm").load()
    task = get_task("resume", "retail")
    batch = [(p.key(), p) for p in (task.pointwise_prompt(c) for c in task.candidates(1))]
    ours = BatchJob("labels", task.label_set.labels).rows(backend, batch)
    theirs = BatchJob("labels", task.label_set.labels).rows(smollm, batch)
    for (key, probs, mass), (key_t, probs_t, mass_t) in zip(ours, theirs):
        assert key == key_t and len(probs) == 2 and sum(probs) == pytest.approx(1.0)
        assert abs(probs[0] - probs_t[0]) < 0.05 and abs(mass - mass_t) < 0.05
    with Store(tmp_path / "vllm.db") as store:
        summary = run_scoring(store, task, ref, lambda: backend, limit=1, batch_size=8)
        pairwise = run_scoring(store, task, ref, lambda: backend, mode="pairwise", rounds=1, batch_size=8)
        assert summary.scored == 8 and len(store.pointwise_table()) == 8
        choices = store.pairwise_table()["choice"]
        assert pairwise.scored == 56 and choices.isin(["first", "second", "tie", "none"]).all()
