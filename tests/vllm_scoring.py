"""Run once per session by tests/test_vllm_backend.py inside the vLLM virtualenv, on one vLLM engine (its start is
most of the cost): the bundled model scored by the vLLM backend into the store ``argv[1]`` (pointwise on eight one-line
loan applications, tests/loan_spec.py's; pairwise by generation on a two-applicant custom task of one-line texts: the
store's rows of both modes without the minutes that resume prompts of 1,000–2,000 tokens take on CPU), its numbers
for the same prompts (the loans' pointwise probabilities as the run stored them, the custom task's pairwise answers in
both orders), and — when CAIRO arguments follow ``--`` — that ``cairo run`` (``python -m audit``'s ``main``, in this
process, on the same engine) run twice; everything is written to the JSON file ``argv[2]`` for the tests to compare
with the transformers backend."""
from __future__ import annotations

import contextlib
import io
import json
import sys
from functools import cache
from pathlib import Path

from audit.backend import resolve
from audit.backend.spec import BackendSpec
from audit.backend.vllm_backend import VLLMBackend, vllm_ref
from audit.cli import main as audit_main
from audit.run.scoring import run_scoring
from audit.store.database import Store
from audit.tasks.custom import CustomTask, custom_task
from loan_spec import eight_loan_files


def cli(argv: list[str]) -> dict:
    """``python -m audit ARGV`` in this process: exit status, stdout and stderr."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status = audit_main(argv)
        except SystemExit as exc:
            status = exc.code if isinstance(exc.code, int) else 1
    return {"returncode": int(status or 0), "stdout": out.getvalue(), "stderr": err.getvalue()[-3000:]}


def two_applicants(folder: Path) -> CustomTask:
    """A custom task of two one-line applications, one per group (written into ``folder``)."""
    data, spec = folder / "two.csv", folder / "two.yaml"
    data.write_text("text,grp,qualified\n\"Applicant earns 30,000 a year.\",a,1\n\"Applicant earns 40,000 a year.\",b,0\n")
    spec.write_text("name: two\ninstruction: Respond with only \"Yes\" or \"No\".\n"
                    "user: \"Application: {text}\\nQuestion: Approve?\"\nlabels: {\"Yes\": 1, \"No\": 0}\n"
                    "pairwise:\n  question: Which one?\n  item: Application\nreference_group: a\ngroup_columns: [grp]\n")
    return custom_task("default", data, spec)


def main(db: str, out: str, cairo: list[str]) -> None:
    # one engine for every load in this process, whatever batch size a command's spec carries
    VLLMBackend.load = classmethod(cache(VLLMBackend.load.__func__))  # type: ignore[method-assign]
    ref = vllm_ref(resolve("smollm2-135m"))
    backend = BackendSpec(ref, "vllm").load()
    task = custom_task("default", *eight_loan_files(Path(db).parent))
    with Store(db) as store:
        pointwise = run_scoring(store, task, ref, lambda: backend, batch_size=8)
        two = two_applicants(Path(db).parent)
        pairwise = run_scoring(store, two, ref, lambda: backend, mode="pairwise", rounds=1, batch_size=8)
    with Store(db) as store:  # the probabilities the run stored, in the candidates' order (not asked for again)
        stored = store.query("SELECT prompt, probs, mass FROM label_results").set_index("prompt")
    scores = stored.loc[[task.pointwise_prompt(c).key() for c in task.candidates()]]
    first, second = two.candidates(1)
    answers = backend.generate([two.pairwise_prompt(first, second), two.pairwise_prompt(second, first)])
    runs = [cli(cairo) for _ in range(2)] if cairo else []
    with open(out, "w", encoding="utf-8") as handle:
        json.dump({"label": ref.label, "fingerprint": ref.fingerprint, "scored": [pointwise.scored, pairwise.scored],
                   "probs": [json.loads(p) for p in scores["probs"]], "mass": scores["mass"].tolist(),
                   "answers": answers, "cairo": runs}, handle)


if __name__ == "__main__":  # vLLM's engine core is a spawned process that re-imports the main module
    args = sys.argv[1:]
    main(args[0], args[1], args[args.index("--") + 1:] if "--" in args else [])
