"""Load a resolved model: GGUF files are de-quantised once into a safetensors cache, then every source
(converted GGUF, local folder, hub id) goes through the same ``from_pretrained`` path with the chosen
quantisation (bitsandbytes NF4 4-bit with bf16 compute, 8-bit, or full precision)."""
from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

from audit.backend.hashing import file_sha256
from audit.backend.sources import ModelRef
from audit.errors import AuditError
from audit.paths import cache_dir

MANIFEST = "sha256.json"  # file name → SHA-256 of a converted folder, written when it is converted


def converted_dir(ref: ModelRef) -> Path:
    """Safetensors copy of a GGUF file, keyed by the file's SHA-256; made on first use (~30 s), then reused."""
    target = cache_dir() / "converted" / ref.content_id[:24]
    if (target / "config.json").exists():
        return verified_folder(target)
    from transformers import AutoModelForCausalLM, AutoTokenizer

    gguf = Path(ref.location)
    staging = Path(tempfile.mkdtemp(prefix="convert-", dir=target.parent if target.parent.exists() else None))
    try:
        try:
            tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
            model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name)
        except Exception as exc:  # a damaged or unsupported GGUF fails in many ways inside the readers
            raise AuditError(f"cannot convert GGUF file {gguf} ({ref.label}): {_first_line(exc)}") from None
        model.hf_quantizer = None  # the weights are now plain tensors; saving must not re-tag them as GGUF
        if hasattr(model.config, "quantization_config"):
            del model.config.quantization_config
        model.save_pretrained(staging, safe_serialization=True)
        tokenizer.save_pretrained(staging)
        _write_manifest(staging)
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            staging.rename(target)
        except OSError:  # another process converted the same file meanwhile: keep theirs
            pass
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target


def verified_folder(folder: Path) -> Path:
    """``folder`` if every file matches the SHA-256 recorded when it was converted; else an :class:`AuditError`
    naming the file. A folder converted before manifests existed gets one now (trusted on first use)."""
    manifest = folder / MANIFEST
    if not manifest.exists():
        _write_manifest(folder)
        return folder
    recorded = json.loads(manifest.read_text())
    present = {p.name for p in folder.iterdir() if p.is_file() and p.name != MANIFEST}
    for name in sorted(present | set(recorded)):
        actual = file_sha256(folder / name) if name in present else "(missing)"
        if actual != recorded.get(name, "(not recorded)"):
            raise AuditError(f"converted weights {folder / name} do not match the SHA-256 recorded at conversion "
                             f"(found {actual}, expected {recorded.get(name, '(not recorded)')}); delete the folder "
                             f"{folder} to convert the model again")
    return folder


def _write_manifest(folder: Path) -> None:
    hashes = {p.name: file_sha256(p) for p in sorted(folder.iterdir()) if p.is_file() and p.name != MANIFEST}
    (folder / MANIFEST).write_text(json.dumps(hashes, indent=1, sort_keys=True))


def load(ref: ModelRef, *, trust_remote_code: bool = False) -> tuple[Any, Any]:
    """``(model, tokenizer)`` in eval mode on ``ref.device``; remote code runs only on explicit opt-in."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer, BitsAndBytesConfig

    source = str(converted_dir(ref)) if ref.kind == "gguf" else ref.location
    revision = ref.content_id if ref.kind == "hub" else None
    dtype = getattr(torch, ref.dtype)
    options: dict[str, Any] = {"dtype": dtype, "revision": revision, "trust_remote_code": trust_remote_code}
    if ref.quant == "4bit":
        options["quantization_config"] = BitsAndBytesConfig(
            load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_compute_dtype=torch.bfloat16
        )
    elif ref.quant == "8bit":
        options["quantization_config"] = BitsAndBytesConfig(load_in_8bit=True)
    if ref.device == "cuda":
        options["device_map"] = {"": 0}
    try:
        tokenizer = AutoTokenizer.from_pretrained(source, revision=revision, trust_remote_code=trust_remote_code)
        model = AutoModelForCausalLM.from_pretrained(source, **options)
    except Exception as exc:  # missing files, bad configs, unknown architectures, out of memory: one line each
        raise AuditError(f"cannot load model {ref.label} from {source}: {_first_line(exc)}") from None
    return model.eval(), tokenizer


def _first_line(exc: Exception) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0] if text else ''}"
