"""Pointwise scoring on a GPU without downloading weights: a randomly initialised model of a real architecture's
shape (values do not change speed), saved locally, scored by the project's transformers backend.

For each shape it reports prompts/s, prompt tokens/s and peak GPU memory for bf16 and bitsandbytes 4-bit NF4,
with and without the shared-prefix KV cache, on the shipped resume prompts. The tokenizer is the bundled
SmolLM2's, so the vocabulary is max(the shape's, 49,152). ``--tiny`` runs a 2-layer toy shape on CPU (tests).

    HF_HUB_OFFLINE=1 PYTHONPATH=. python bench/gpu.py [--shapes llama-2-7b,mistral-7b] [--prompts 64]
    HF_HUB_OFFLINE=1 PYTHONPATH=. python bench/gpu.py --tiny --prompts 4

``--accuracy`` first scores the bundled SmolLM2 on the device at fp32, bf16 and 4-bit NF4 (bf16 compute) and prints
each setting's largest and mean |ΔP(Yes)| against full precision on the CPU, and between batched (prefix cache on)
and one-by-one scoring: how much the GPU's precisions and batching move a score. ``--shapes ''`` skips the timings.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402
import torch  # noqa: E402

from audit.backend import CausalLM, resolve  # noqa: E402
from audit.backend.chat import render_ids  # noqa: E402
from audit.backend.loading import converted_dir  # noqa: E402
from audit.tasks import get_task  # noqa: E402

# Published shapes (config.json of meta-llama/Llama-2-7b-hf and mistralai/Mistral-7B-v0.1).
SHAPES = {
    "llama-2-7b": ("LlamaConfig", dict(hidden_size=4096, intermediate_size=11008, num_hidden_layers=32,
                                       num_attention_heads=32, num_key_value_heads=32, vocab_size=32000,
                                       max_position_embeddings=4096)),
    "mistral-7b": ("MistralConfig", dict(hidden_size=4096, intermediate_size=14336, num_hidden_layers=32,
                                         num_attention_heads=32, num_key_value_heads=8, vocab_size=32000,
                                         max_position_embeddings=32768, sliding_window=4096)),
    "tiny": ("LlamaConfig", dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                                 num_key_value_heads=2, vocab_size=32000, max_position_embeddings=4096)),
}


def build(shape: str, folder: Path) -> Path:
    """A random-init model of ``shape`` saved (bf16) in ``folder`` with the bundled tokenizer."""
    import transformers
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(converted_dir(resolve("smollm2-135m", device="cpu")))
    name, fields = SHAPES[shape]
    config = getattr(transformers, name)(**{**fields, "vocab_size": max(fields["vocab_size"], len(tokenizer))},
                                         bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id)
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(config, dtype=torch.bfloat16)
    target = folder / shape
    model.save_pretrained(target)
    tokenizer.save_pretrained(target)
    return target


def measure(folder: Path, quant: str, prefix_cache: bool, prompts: list, device: str) -> dict[str, float]:
    """Throughput and peak memory of one setting (after a warm-up on two prompts)."""
    ref = resolve(str(folder), quant=quant, device=device)
    lm = CausalLM.load(ref, batch_size=8, prefix_cache=prefix_cache)
    lm.label_probabilities(prompts[:8], ["Yes", "No"])  # a full batch: first-call kernel set-up is not timed
    lm._prefixes.clear()
    if device == "cuda":
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    started = time.perf_counter()
    lm.label_probabilities(prompts, ["Yes", "No"])
    if device == "cuda":
        torch.cuda.synchronize()
    seconds = time.perf_counter() - started
    tokens = sum(len(render_ids(lm.tokenizer, p)) for p in prompts)
    peak = torch.cuda.max_memory_allocated() / 2**30 if device == "cuda" else float("nan")
    del lm
    if device == "cuda":
        torch.cuda.empty_cache()
    return {"prompts/s": len(prompts) / seconds, "tokens/s": tokens / seconds, "peak GiB": peak, "s": seconds}


def p_yes(ref, prompts: list, *, batch_size: int, prefix_cache: bool) -> np.ndarray:
    """P(Yes) of every prompt under ``ref``, scored in batches of ``batch_size``."""
    lm = CausalLM.load(ref, batch_size=batch_size, prefix_cache=prefix_cache)
    out = np.array([s.probs[0] for s in lm.label_probabilities(prompts, ["Yes", "No"])])
    del lm
    torch.cuda.empty_cache()
    return out


def accuracy(prompts: list) -> None:
    """max and mean |ΔP(Yes)| of the bundled model's GPU precisions against CPU fp32, and batched vs one by one."""
    cpu = p_yes(resolve("smollm2-135m", quant="none", device="cpu"), prompts, batch_size=8, prefix_cache=True)
    settings = {"fp32": resolve("smollm2-135m", quant="none", device="cuda"),
                "bf16": resolve("smollm2-135m", quant="bf16", device="cuda"),
                "4-bit NF4": resolve("smollm2-135m", quant="4bit", device="cuda")}
    print(f"SmolLM2-135M, {len(prompts)} prompts: |ΔP(Yes)| max / mean")
    print(f"{'setting':10} {'vs CPU fp32':>22} {'batched vs one by one':>24}")
    for name, ref in settings.items():
        batched = p_yes(ref, prompts, batch_size=8, prefix_cache=True)
        single = p_yes(ref, prompts, batch_size=1, prefix_cache=False)
        gap, drift = np.abs(batched - cpu), np.abs(batched - single)
        print(f"{name:10} {gap.max():11.4f} / {gap.mean():.4f} {drift.max():13.4f} / {drift.mean():.4f}", flush=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", default="llama-2-7b,mistral-7b")
    parser.add_argument("--prompts", type=int, default=64)
    parser.add_argument("--subtask", default="software_engineer")
    parser.add_argument("--tiny", action="store_true", help="the toy shape on CPU, full precision and 4-bit")
    parser.add_argument("--accuracy", action="store_true", help="first, the bundled model's precisions on the GPU")
    args = parser.parse_args(argv)
    device = "cpu" if args.tiny else "cuda"
    if device == "cuda" and not torch.cuda.is_available():
        raise SystemExit("error: bench/gpu.py needs a CUDA GPU (use --tiny to try it on CPU)")
    task = get_task("resume", args.subtask)
    prompts = [task.pointwise_prompt(c) for c in task.candidates(limit=max(1, args.prompts // len(task.groups)))]
    prompts = prompts[: args.prompts]
    if args.accuracy and device == "cuda":
        accuracy(prompts)
    shapes = ["tiny"] if args.tiny else [s for s in args.shapes.split(",") if s]
    print(f"{len(prompts)} prompts of resume/{args.subtask}, batch 8, device {device}"
          + (f" ({torch.cuda.get_device_name()})" if device == "cuda" else ""))
    print(f"{'shape':12} {'precision':10} {'prefix cache':13} {'prompts/s':>10} {'tokens/s':>10} {'peak GiB':>9}")
    with tempfile.TemporaryDirectory() as scratch:
        for shape in shapes:
            folder = build(shape, Path(scratch))
            for quant in ("none", "4bit"):
                for cache in (True, False):
                    row = measure(folder, quant, cache, prompts, device)
                    precision = "4-bit NF4" if quant == "4bit" else ("bf16" if device == "cuda" else "fp32")
                    print(f"{shape:12} {precision:10} {'on' if cache else 'off':13} {row['prompts/s']:10.2f} "
                          f"{row['tokens/s']:10.0f} {row['peak GiB']:9.2f}", flush=True)


if __name__ == "__main__":
    main()
