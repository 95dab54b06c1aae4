"""Sliding-window attention (Gemma 3; gemma3-270m's window is 512 tokens, shorter than a resume prompt) under the
prefix cache and the listwise reading's cache: a window counts padding slots as tokens and keeps only its last
tokens, so the cached paths must pad after the rows and never cut a window back. Both must give the numbers of a
plain forward pass with no cache.

The model is a 2-layer Gemma 3 of random weights with an 8-token window and the bundled SmolLM2's tokenizer: the
property is the architecture's, not the weights' (with the rows padded before them, as before the fix, P(Yes) moved by
7e-4 and the top-1 probabilities by 0.03 here; gemma3-270m's P(Yes) by 0.003)."""
from __future__ import annotations

from pathlib import Path

import pytest

from audit.backend import CausalLM, ModelRef, resolve
from audit.backend.loading import converted_dir
from audit.run.listwise import replace_options, top1_probabilities
from audit.tasks import get_task, study


@pytest.fixture(scope="module")
def windowed(tmp_path_factory: pytest.TempPathFactory) -> ModelRef:
    import torch
    from transformers import AutoTokenizer, Gemma3ForCausalLM, Gemma3TextConfig

    tokenizer = AutoTokenizer.from_pretrained(converted_dir(resolve("smollm2-135m", device="cpu")))
    config = Gemma3TextConfig(vocab_size=len(tokenizer), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                              num_attention_heads=2, num_key_value_heads=1, head_dim=32, sliding_window=8,
                              layer_types=["sliding_attention", "full_attention"], bos_token_id=tokenizer.bos_token_id,
                              eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id)
    torch.manual_seed(0)
    folder: Path = tmp_path_factory.mktemp("gemma3-window-8")
    Gemma3ForCausalLM(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return resolve(str(folder), quant="none", device="cpu")


def test_the_prefix_cache_gives_a_plain_forward_pass_numbers(windowed: ModelRef) -> None:
    task = get_task("resume", "software_engineer")
    prompts = [task.pointwise_prompt(c) for c in task.candidates(limit=1)]  # rows of unequal lengths: padding
    cached = CausalLM.load(windowed).label_probabilities(prompts, ["Yes", "No"])
    plain = CausalLM.load(windowed, prefix_cache=False, batch_size=1).label_probabilities(prompts, ["Yes", "No"])
    assert max(abs(a.probs[0] - b.probs[0]) for a, b in zip(cached, plain)) < 1e-5


def test_the_likelihood_reading_gives_a_plain_forward_pass_numbers(windowed: ModelRef) -> None:
    lm = CausalLM.load(windowed)
    plain = CausalLM.load(windowed, prefix_cache=False, batch_size=1)
    for index in range(2):  # the second ranking shares the job description with the first: a held cache is not cut
        drawn = study.draw("retail", index, 0)
        chat = replace_options(study.ranking_prompt(drawn), drawn.names)
        steps = lm.sequential_logprobs(chat, picks=2)
        reading = top1_probabilities([steps[0][i] for i in sorted(steps[0])])
        alone = top1_probabilities(plain.option_logprobs([chat], lead="")[0])
        assert max(abs(a - b) for a, b in zip(reading, alone)) < 1e-5
