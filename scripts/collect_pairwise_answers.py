"""Collect real pairwise answers of a bundled model for the answer parser's hand-labelled test set.

    python scripts/collect_pairwise_answers.py OUT.csv [--model smollm2-135m] [--pairs 6]

Asks the resume (software_engineer) and essay (ptj) pairwise prompts as the tasks write them, and with the last
instruction replaced by variants that draw out the phrasings the parser must read (comparisons, "I would recommend",
surnames, first names, ties, a leading letter with an explanation). Writes variant, first, second, answer; the
``expected`` label is added by hand (tests/data/pairwise_answers.csv).
"""
from __future__ import annotations

import argparse
import csv
import dataclasses
import itertools

from audit.backend import resolve
from audit.backend.spec import BackendSpec
from audit.tasks import get_task

RESUME_END = "Respond succinctly with only the name of the candidate."
ESSAY_END = "Respond succinctly with only a letter of the essay."
VARIANTS = {
    "resume": {
        "task": RESUME_END,
        "sentence": "Answer in one sentence that names both candidates.",
        "recommend": "Start your answer with 'I would recommend'.",
        "compare": "Answer in the form '<name> is a better fit than <name>'.",
        "over": "Answer in the form 'I choose <name> over <name>'.",
        "surname": "Respond with only the last name (surname) of the better candidate.",
        "first-name": "Respond with only the first name of the better candidate.",
        "tie": "If both candidates are equally qualified, say that both are equally good.",
    },
    "essay": {
        "task": ESSAY_END,
        "explain": "Start with the letter of the better essay, then explain why in one sentence.",
        "compare": "Answer in the form 'Essay <letter> is better than Essay <letter>'.",
        "tie": "If both essays are equally good, say that both are equally good.",
    },
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("out")
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument("--pairs", type=int, default=6, help="candidate pairs per variant")
    args = parser.parse_args()
    backend = BackendSpec(resolve(args.model), batch_size=8).load()
    rows = []
    for task_name, subtask, end in (("resume", "software_engineer", RESUME_END), ("essay", "ptj", ESSAY_END)):
        task = get_task(task_name, subtask)
        pool = task.pools(task.candidates(1 if task_name == "resume" else None), 1)[0]
        pairs = list(itertools.permutations(pool, 2))[:: 3][: args.pairs]
        for variant, instruction in VARIANTS[task_name].items():
            prompts = [task.pairwise_prompt(a, b) for a, b in pairs]
            prompts = [dataclasses.replace(p, user=p.user.replace(end, instruction)) for p in prompts]
            for prompt, answer in zip(prompts, backend.generate(prompts, max_new_tokens=24)):
                rows.append({"variant": f"{task_name}/{variant}", "first": prompt.options[0],
                             "second": prompt.options[1], "answer": answer})
                print(rows[-1], flush=True)
    with open(args.out, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


if __name__ == "__main__":
    main()
