"""Pointwise scoring on a GPU without downloading weights: a randomly initialised model of a real architecture's
shape (values do not change speed), saved locally, scored by the project's transformers backend.

For each shape it reports prompts/s, prompt tokens/s and peak GPU memory for bf16 and bitsandbytes 4-bit NF4,
with and without the shared-prefix KV cache, on the shipped resume prompts. The tokenizer is the bundled
SmolLM2's, so the vocabulary is max(the shape's, 49,152). ``--tiny`` runs a 2-layer toy shape on CPU (tests).

    HF_HUB_OFFLINE=1 python bench/gpu.py [--shapes llama-2-7b,mistral-7b] [--prompts 64]
    HF_HUB_OFFLINE=1 python bench/gpu.py --tiny --prompts 4

``--listwise N`` then times the 2024 study's listwise protocol on each shape and precision: N rankings (job retail,
seed 0) by the likelihood reading (one ranking's 2.5k-token prompt at a time) and by the generate reading (the
study's sampling, batches of 8). Random weights never name all eight names, so every generated reply runs to the
study's 500-token cap: the generate figures are the worst case. ``--prompts 0`` skips the pointwise timings.

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
from audit.run.listwise import READINGS, ListwiseRun, run_listwise  # noqa: E402
from audit.store.database import Store  # noqa: E402
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


def build(shape: str, folder: Path, device: str, tokenizer_dir: str | None = None) -> Path:
    """A random-init model of ``shape`` saved (bf16) in ``folder`` with the tokenizer of ``tokenizer_dir`` (default:
    the bundled SmolLM2's), initialised on ``device``: a 7B model's random draws take minutes on a CPU."""
    import transformers
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tokenizer_dir or converted_dir(resolve("smollm2-135m", device="cpu")))
    name, fields = SHAPES[shape]
    config = getattr(transformers, name)(**{**fields, "vocab_size": max(fields["vocab_size"], len(tokenizer))},
                                         bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id)
    torch.manual_seed(0)
    with torch.device(device):
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


def listwise(folder: Path, quant: str, rankings: int, device: str) -> dict[str, dict[str, float]]:
    """Rankings per second and peak memory of each listwise reading (after a one-ranking warm-up of another seed)."""
    ref = resolve(str(folder), quant=quant, device=device)
    lm = CausalLM.load(ref, batch_size=8)
    out = {}
    for reading in READINGS:
        with tempfile.TemporaryDirectory() as scratch, Store(Path(scratch) / "bench.db") as store:
            run_listwise(store, ListwiseRun(ref, reading, seed=1), "retail", 1, lambda: lm)
            if device == "cuda":
                torch.cuda.synchronize()
                torch.cuda.reset_peak_memory_stats()
            started = time.perf_counter()
            outcome = run_listwise(store, ListwiseRun(ref, reading), "retail", rankings, lambda: lm, batch_size=8)
            seconds = time.perf_counter() - started
        assert outcome.summary.scored == rankings
        peak = torch.cuda.max_memory_allocated() / 2**30 if device == "cuda" else float("nan")
        out[reading] = {"rankings/s": rankings / seconds, "s": seconds / rankings, "peak GiB": peak}
    lm = None  # the model freed before the next setting loads
    if device == "cuda":
        torch.cuda.empty_cache()
    return out


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
    parser.add_argument("--tokenizer", metavar="DIR", help="a folder with SmolLM2's tokenizer files (default: the "
                        "bundled model's, which needs its package installed)")
    parser.add_argument("--listwise", type=int, default=0, metavar="N",
                        help="then N rankings of the study's listwise protocol by each reading (default 0: none)")
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
    where = f"device {device}" + (f" ({torch.cuda.get_device_name()})" if device == "cuda" else "")
    with tempfile.TemporaryDirectory() as scratch:
        folders = {shape: build(shape, Path(scratch), device, args.tokenizer) for shape in shapes}
        if prompts:
            print(f"{len(prompts)} prompts of resume/{args.subtask}, batch 8, {where}")
            print(f"{'shape':12} {'precision':10} {'prefix cache':13} {'prompts/s':>10} {'tokens/s':>10} "
                  f"{'peak GiB':>9}")
            for shape, folder in folders.items():
                for quant in ("none", "4bit"):
                    for cache in (True, False):
                        row = measure(folder, quant, cache, prompts, device)
                        print(f"{shape:12} {precision(quant, device):10} {'on' if cache else 'off':13} "
                              f"{row['prompts/s']:10.2f} {row['tokens/s']:10.0f} {row['peak GiB']:9.2f}", flush=True)
        if args.listwise:
            print(f"{args.listwise} rankings of the study's protocol (study-gpt-hiring/retail) by each reading, {where}")
            print(f"{'shape':12} {'precision':10} {'reading':11} {'rankings/s':>10} {'s a ranking':>12} {'peak GiB':>9}")
            for shape, folder in folders.items():
                for quant in ("none", "4bit"):
                    for reading, row in listwise(folder, quant, args.listwise, device).items():
                        print(f"{shape:12} {precision(quant, device):10} {reading:11} {row['rankings/s']:10.3f} "
                              f"{row['s']:12.2f} {row['peak GiB']:9.2f}", flush=True)


def precision(quant: str, device: str) -> str:
    """How a shape's weights are held: 4-bit NF4, or the folder's bf16 on CUDA and float32 on the CPU."""
    return "4-bit NF4" if quant == "4bit" else ("bf16" if device == "cuda" else "fp32")


if __name__ == "__main__":
    main()
