"""Pointwise scoring throughput: our engine path against a paper-style baseline, side by side, one run.

Baseline (as in the paper's code style): the full prompt of every candidate, ``generate(max_new_tokens=10,
output_scores=True)`` in batches of 2, P(Yes) read from the first generated step and normalised over Yes/No.
Ours: one forward pass per candidate, batches of 8, the job description's KV cache shared across candidates, in
full fp32 (the CPU default) and again in bf16 (``--quant bf16``, the opt-in fast path).
Both read the same label tokens ("Yes"/" Yes", "No"/" No") on the same 64 candidates of one job.
``--api-url URL`` also scores the same prompts through the API backend (``openai:NAME`` at that URL, e.g. the test
server ``tests/openai_server.py`` or ``vllm serve`` on the same machine) and prints its throughput beside ours;
``--vllm float32|bfloat16`` does the same against a compiled ``vllm serve`` of the bundled model that the bench starts
from ``.venv-vllm`` (``make vllm-env``) once the in-process rows are timed, so an idle server never shares their cores.

    .venv/bin/python bench/scoring.py [--model smollm2-135m] [--candidates 64] [--api-url URL | --vllm DTYPE]
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from contextlib import ExitStack
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runnable from anywhere, no PYTHONPATH

import torch  # noqa: E402

from audit.backend import CausalLM, resolve  # noqa: E402
from audit.backend.api import api_ref  # noqa: E402
from audit.backend.chat import render_ids  # noqa: E402
from audit.backend.cpu import cpu_flags, native_bf16  # noqa: E402
from audit.backend.spec import BackendSpec, load_backend  # noqa: E402
from audit.tasks import get_task  # noqa: E402
from tests.served import NAME, VLLM_PYTHON, served  # noqa: E402


def baseline_p_yes(lm: CausalLM, prompts: list, batch: int = 2) -> list[float]:
    """Paper-style: generate 10 tokens per prompt, read P(Yes) off the first step's scores."""
    yes, no = lm.label_token_ids(["Yes", "No"])
    out: list[float] = []
    for start in range(0, len(prompts), batch):
        ids, mask, *_ = lm._padded([render_ids(lm.tokenizer, p) for p in prompts[start : start + batch]],
                                   prefix_len=0, right=False)
        with torch.inference_mode():
            generated = lm.model.generate(input_ids=ids, attention_mask=mask, max_new_tokens=10, do_sample=False,
                                          output_scores=True, return_dict_in_generate=True, pad_token_id=lm.pad_id)
        probs = torch.softmax(generated.scores[0].float(), dim=-1)
        p_yes, p_no = probs[:, yes].sum(-1), probs[:, no].sum(-1)
        out.extend((p_yes / (p_yes + p_no)).tolist())
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument("--subtask", default="software_engineer")
    parser.add_argument("--candidates", type=int, default=64)
    parser.add_argument("--api-url", help="also time the API backend against this OpenAI-compatible endpoint")
    parser.add_argument("--vllm", choices=("float32", "bfloat16"),
                        help="serve the bundled model with vLLM at this dtype (needs make vllm-env) and time it too")
    parser.add_argument("--api-concurrency", type=int, default=4)
    args = parser.parse_args()
    if args.vllm and (args.api_url or args.model != NAME):
        parser.error(f"--vllm serves the bundled {NAME} itself: it takes no --api-url or other --model")
    if args.vllm and not VLLM_PYTHON.exists():
        parser.error(f"--vllm needs the vLLM virtualenv {VLLM_PYTHON} (make vllm-env)")

    task = get_task("resume", args.subtask)
    candidates = task.candidates(limit=args.candidates // len(task.groups))
    prompts = [task.pointwise_prompt(c) for c in candidates]
    ref = resolve(args.model)
    lm = CausalLM.load(ref, batch_size=8)
    lm.label_probabilities(prompts[:2], ["Yes", "No"])  # warm-up, then start from an empty prefix cache
    lm._prefixes.clear()
    baseline_p_yes(lm, prompts[:2])

    started = time.perf_counter()
    baseline = baseline_p_yes(lm, prompts)
    baseline_s = time.perf_counter() - started
    started = time.perf_counter()
    ours = [r.probs[0] for r in lm.label_probabilities(prompts, ["Yes", "No"])]
    ours_s = time.perf_counter() - started

    tokens = sum(len(render_ids(lm.tokenizer, p)) for p in prompts) / len(prompts)
    diff = max(abs(a - b) for a, b in zip(ours, baseline))
    print(f"model {ref.label} ({ref.device}, {ref.quant}, {ref.dtype}), {len(prompts)} candidates, "
          f"{tokens:.0f} prompt tokens on average, torch threads {torch.get_num_threads()}")
    print(f"baseline (generate 10 tokens, batch 2): {baseline_s:7.2f} s  {len(prompts) / baseline_s:6.2f} cand/s")
    print(f"ours (one pass, batch 8, shared prefix): {ours_s:7.2f} s  {len(prompts) / ours_s:6.2f} cand/s")
    print(f"speed-up: {baseline_s / ours_s:.2f}x   max |P(Yes) ours - baseline| = {diff:.2e}")
    fast_ref = resolve(args.model, quant="bf16")
    fast = CausalLM.load(fast_ref, batch_size=8)
    fast.label_probabilities(prompts[:2], ["Yes", "No"])  # warm-up, then an empty prefix cache as above
    fast._prefixes.clear()
    started = time.perf_counter()
    quick = [r.probs[0] for r in fast.label_probabilities(prompts, ["Yes", "No"])]
    fast_s = time.perf_counter() - started
    print(f"ours in bf16 ({fast_ref.label}; native bf16 on this CPU: {native_bf16(cpu_flags())}): {fast_s:7.2f} s  "
          f"{len(prompts) / fast_s:6.2f} cand/s  ({ours_s / fast_s:.2f}x fp32)   "
          f"max |P(Yes) bf16 - fp32| = {max(abs(a - b) for a, b in zip(quick, ours)):.2e}")
    with ExitStack() as stack:
        where = f"vllm serve --dtype {args.vllm}" if args.vllm else args.api_url
        if args.vllm:
            args.api_url, _ = stack.enter_context(served("vllm", dict(os.environ), vllm_flags=("--dtype", args.vllm)))
        if args.api_url:
            api = load_backend(BackendSpec(api_ref(f"openai:{args.model}", args.api_url), "openai",
                                           concurrency=args.api_concurrency))
            started = time.perf_counter()
            remote = [r.probs[0] for r in api.label_probabilities(prompts, ["Yes", "No"])]
            api_s = time.perf_counter() - started
            gap = max(abs(a - b) for a, b in zip(ours, remote))
            print(f"API backend ({where}, {args.api_concurrency} in flight): {api_s:7.2f} s  "
                  f"{len(prompts) / api_s:6.2f} cand/s  ({ours_s / api_s:.2f}x fp32; bf16 runs {api_s / fast_s:.2f}x "
                  f"it)   max |P(Yes) API - ours| = {gap:.2e}")


if __name__ == "__main__":
    main()
