"""Run once per session by tests/test_vllm_backend.py inside the vLLM virtualenv, on one vLLM engine (its start is
most of the cost): the bundled model scored by the vLLM backend into the store ``argv[1]`` (pointwise, and pairwise
by generation), its numbers for the first prompts, and — when CAIRO arguments follow ``--`` — that ``cairo run``
(``python -m audit``'s ``main``, in this process, on the same engine) run twice; everything is written to the JSON
file ``argv[2]`` for the tests to compare with the transformers backend."""
from __future__ import annotations

import contextlib
import io
import json
import sys
from functools import cache

from audit.backend import resolve
from audit.backend.spec import BackendSpec
from audit.backend.vllm_backend import VLLMBackend, vllm_ref
from audit.cli import main as audit_main
from audit.run.scoring import run_scoring
from audit.store.database import Store
from audit.tasks import get_task


def cli(argv: list[str]) -> dict:
    """``python -m audit ARGV`` in this process: exit status, stdout and stderr."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status = audit_main(argv)
        except SystemExit as exc:
            status = exc.code if isinstance(exc.code, int) else 1
    return {"returncode": int(status or 0), "stdout": out.getvalue(), "stderr": err.getvalue()[-3000:]}


def main(db: str, out: str, cairo: list[str]) -> None:
    # one engine for every load in this process, whatever batch size a command's spec carries
    VLLMBackend.load = classmethod(cache(VLLMBackend.load.__func__))  # type: ignore[method-assign]
    ref = vllm_ref(resolve("smollm2-135m"))
    backend = BackendSpec(ref, "vllm").load()
    task = get_task("resume", "retail")
    first, second = task.candidates(1)[:2]
    with Store(db) as store:
        pointwise = run_scoring(store, task, ref, lambda: backend, limit=1, batch_size=8)
        pairwise = run_scoring(store, task, ref, lambda: backend, mode="pairwise", rounds=1, batch_size=8)
    scores = backend.label_probabilities([task.pointwise_prompt(c) for c in task.candidates(1)], task.label_set.labels)
    answers = backend.generate([task.pairwise_prompt(first, second), task.pairwise_prompt(second, first)])
    runs = [cli(cairo) for _ in range(2)] if cairo else []
    with open(out, "w", encoding="utf-8") as handle:
        json.dump({"label": ref.label, "fingerprint": ref.fingerprint, "scored": [pointwise.scored, pairwise.scored],
                   "probs": [s.probs for s in scores], "mass": [s.mass for s in scores], "answers": answers,
                   "cairo": runs}, handle)


if __name__ == "__main__":  # vLLM's engine core is a spawned process that re-imports the main module
    args = sys.argv[1:]
    main(args[0], args[1], args[args.index("--") + 1:] if "--" in args else [])
