"""The fake backend the plumbing tests score with: a Backend with both capabilities, a function of the prompt alone
(batches and instances agree), within the store's checks (probabilities sum to 1, label mass in its range)."""
from __future__ import annotations

from audit.backend.protocol import Backend, Sampling, Tokenizing
from audit.run.scoring import BatchJob, check_rows
from fake_backend import FakeBackend


def test_fake_is_a_backend_whose_numbers_depend_on_the_prompt_alone(smollm_ref, resume_task):
    candidates = resume_task.candidates(1)
    prompts = [resume_task.pointwise_prompt(c) for c in candidates]
    one, other = FakeBackend(smollm_ref, mass=(0.01, 0.04)), FakeBackend(smollm_ref, mass=(0.01, 0.04))
    assert isinstance(one, Backend) and isinstance(one, Sampling) and isinstance(one, Tokenizing)
    together = one.label_probabilities(prompts, resume_task.label_set.labels)
    alone = [other.label_probabilities([p], resume_task.label_set.labels)[0] for p in prompts]
    assert together == alone and len({s.probs for s in together}) == len(prompts)  # not one constant answer
    assert all(abs(sum(s.probs) - 1) < 1e-12 and 0.01 <= s.mass <= 0.04 for s in together)
    assert one.calls == {"label_probabilities": 8}
    check_rows("labels", BatchJob("labels", resume_task.label_set.labels).rows(one, [(p.key(), p) for p in prompts]))
    pairs = [resume_task.pairwise_prompt(a, b) for a, b in zip(candidates, candidates[1:])]
    assert all(answer in (*p.options, "I cannot tell.") for answer, p in zip(one.generate(pairs), pairs))
    assert all(len(x) == 2 and max(x) < 0 for x in one.option_logprobs(pairs))
    check_rows("likelihood", BatchJob("likelihood", ()).rows(one, [(p.key(), p) for p in pairs]))
    assert one.sample(["The nurse"] * 2, [1, 2]) == other.sample(["The nurse"] * 2, [1, 2])
    assert one.cut("a b c d", 2) == "a b" and one.prompt_length(prompts[0]) == len(one.encode(
        f"{prompts[0].system}\n{prompts[0].user}\n{prompts[0].answer_prefix}"))
