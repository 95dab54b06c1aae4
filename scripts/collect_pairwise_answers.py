"""Collect real pairwise answers of a bundled model for the answer parser's hand-labelled test set.

    python scripts/collect_pairwise_answers.py OUT.csv [--model smollm2-135m] [--pairs 6] [--variants a,b,…]

Asks the resume (software_engineer) and essay (ptj) pairwise prompts as the tasks write them, and with the last
instruction replaced by variants that draw out the phrasings the parser must read (comparisons, "I would recommend",
surnames, first names, ties, a leading letter with an explanation). Some variants also open the answer with a few
words after "Answer:" (e.g. "I would recommend"); the recorded answer then starts with those words, followed by the
model's greedy continuation. Writes variant, first, second, answer; the ``expected`` label is added by hand
(tests/data/pairwise_answers.csv).
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
SUBTASKS = {"resume": "software_engineer", "essay": "ptj"}
#: variant -> (instruction replacing the task's last sentence, words opening the answer)
VARIANTS = {
    "resume/task": (RESUME_END, ""),
    "resume/sentence": ("Answer in one sentence that names both candidates.", ""),
    "resume/recommend": ("Start your answer with 'I would recommend'.", ""),
    "resume/compare": ("Answer in the form '<name> is a better fit than <name>'.", ""),
    "resume/over": ("Answer in the form 'I choose <name> over <name>'.", ""),
    "resume/surname": ("Respond with only the last name (surname) of the better candidate.", ""),
    "resume/first-name": ("Respond with only the first name of the better candidate.", ""),
    "resume/tie": ("If both candidates are equally qualified, say that both are equally good.", ""),
    "resume/recommend-over": ("Name the better candidate and the other one.", "I would recommend"),
    "resume/more-suitable": ("Compare the two candidates in one sentence.", "Of the two,"),
    "resume/first-name-open": ("Respond with only the first name of the better candidate.",
                               "The better candidate's first name is"),
    "resume/surname-open": ("Respond with only the last name of the better candidate.",
                            "The better candidate's last name is"),
    "essay/task": (ESSAY_END, ""),
    "essay/explain": ("Start with the letter of the better essay, then explain why in one sentence.", ""),
    "essay/compare": ("Answer in the form 'Essay <letter> is better than Essay <letter>'.", ""),
    "essay/compare-letters": ("Answer in the form 'A is better than B' or 'B is better than A'.", ""),
    "essay/tie": ("If both essays are equally good, say that both are equally good.", ""),
    "essay/letter-first": ("Compare the essays in one sentence.", "Essay"),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("out")
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument("--pairs", type=int, default=6, help="candidate pairs per variant")
    parser.add_argument("--variants", default=",".join(VARIANTS), help="comma-separated variant names")
    args = parser.parse_args()
    backend = BackendSpec(resolve(args.model), batch_size=8).load()
    rows, pairs = [], {}
    for variant in args.variants.split(","):
        task_name = variant.split("/")[0]
        task = get_task(task_name, SUBTASKS[task_name])
        if task_name not in pairs:
            pool = task.pools(task.candidates(1 if task_name == "resume" else None), 1)[0]
            pairs[task_name] = list(itertools.permutations(pool, 2))[:: 3][: args.pairs]
        instruction, opening = VARIANTS[variant]
        end = RESUME_END if task_name == "resume" else ESSAY_END
        prompts = [task.pairwise_prompt(a, b) for a, b in pairs[task_name]]
        prompts = [dataclasses.replace(p, user=p.user.replace(end, instruction),
                                       answer_prefix=f"{p.answer_prefix} {opening}".rstrip()) for p in prompts]
        for prompt, answer in zip(prompts, backend.generate(prompts, max_new_tokens=24)):
            rows.append({"variant": variant, "first": prompt.options[0], "second": prompt.options[1],
                         "answer": f"{opening} {answer}".strip()})
            print(rows[-1], flush=True)
    with open(args.out, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


if __name__ == "__main__":
    main()
