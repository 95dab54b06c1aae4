"""Run by tests/test_vllm_backend.py inside the vLLM virtualenv: the bundled model scored by the vLLM backend into
the store ``argv[1]`` (pointwise, and pairwise by generation), and its numbers for the first prompts written to the
JSON file ``argv[2]`` for comparison with the transformers backend."""
from __future__ import annotations

import json
import sys

from audit.backend import resolve
from audit.backend.spec import BackendSpec
from audit.backend.vllm_backend import vllm_ref
from audit.scoring import run_scoring
from audit.store import Store
from audit.tasks import get_task


def main(db: str, out: str) -> None:
    ref = vllm_ref(resolve("smollm2-135m"))
    backend = BackendSpec(ref, "vllm").load()
    task = get_task("resume", "retail")
    first, second = task.candidates(1)[:2]
    with Store(db) as store:
        pointwise = run_scoring(store, task, ref, lambda: backend, limit=1, batch_size=8)
        pairwise = run_scoring(store, task, ref, lambda: backend, mode="pairwise", rounds=1, batch_size=8)
    scores = backend.label_probabilities([task.pointwise_prompt(c) for c in task.candidates(1)], task.label_set.labels)
    answers = backend.generate([task.pairwise_prompt(first, second), task.pairwise_prompt(second, first)])
    with open(out, "w", encoding="utf-8") as handle:
        json.dump({"label": ref.label, "fingerprint": ref.fingerprint, "scored": [pointwise.scored, pairwise.scored],
                   "probs": [s.probs for s in scores], "mass": [s.mass for s in scores], "answers": answers}, handle)


if __name__ == "__main__":  # vLLM's engine core is a spawned process that re-imports the main module
    main(*sys.argv[1:3])
