"""Resolve what the user named (registry name, GGUF file, local folder, hub id) into a fingerprinted reference.

The fingerprint — source, content hash or commit, quantisation, dtype — is part of every cache key, so a
result is never reused for a different model, precision or revision. Resolving is cheap (no weights are
loaded): a second identical run can be answered from the store without touching the model.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import warnings
from dataclasses import asdict, dataclass
from pathlib import Path

from audit.backend.cpu import cpu_flags, native_bf16
from audit.backend.hashing import file_sha256
from audit.backend.registry import GGUF_MAGIC, REGISTRY
from audit.errors import AuditError

QUANTS = ("auto", "none", "bf16", "4bit", "8bit")
HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")


@dataclass(frozen=True)
class ModelRef:
    """A model as the store sees it: where it comes from, what exactly it is, and how it is run."""

    label: str  # what charts and tables call it, e.g. "smollm2-135m" or "smollm2-135m@4bit"
    kind: str  # "gguf", "dir" or "hub"
    location: str  # file path, folder path or hub id
    content_id: str  # SHA-256 of the file(s) or the hub commit
    quant: str  # resolved: "none", "bf16", "4bit" or "8bit"
    dtype: str
    device: str
    runtime: str = "transformers"  # what computes the numbers: "transformers" or "vllm" (own kernels, own results)

    @property
    def fingerprint(self) -> str:
        """16 hex digits identifying source content, quantisation, dtype and, unless transformers, the runtime
        (left out for transformers so that fingerprints of existing stores stay valid)."""
        identity = {"kind": self.kind, "content": self.content_id, "quant": self.quant, "dtype": self.dtype}
        if self.runtime != "transformers":
            identity["engine"] = self.runtime  # the key stores were fingerprinted with
        return hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:16]

    def describe(self) -> dict[str, str]:
        return {**asdict(self), "fingerprint": self.fingerprint}


def precision(kind: str, quant: str, device: str) -> tuple[str, str]:
    """(quantisation, dtype) of a source ``kind`` under ``--quant quant`` on ``device``.

    ``auto`` on CUDA is 4-bit NF4 with bf16 compute for hub and folder models (the paper's setting) but full fp32 for
    GGUF files: they are already quantised, and NF4 on top of Q4 moved the bundled SmolLM2's P(Yes) by 0.34 on
    average on an H100, while CUDA fp32 matches CPU fp32 and batching changes nothing (bf16: up to 0.026; see
    bench/README.md). CPU runs full fp32 under ``auto``: ``bf16`` (bfloat16 weights and compute, no quantisation) is
    1.4× faster on a CPU with native bf16 (:func:`audit.backend.cpu.native_bf16`) but flipped the sign of 19 of 112
    ΔDP gaps of the demo's resume pilot (bench/README.md, "bf16 on CPU"), so it is an option, not the default.
    """
    if quant == "auto":
        quant = "4bit" if device == "cuda" and kind != "gguf" else "none"
    if quant == "bf16":
        return quant, "bfloat16"
    dtype = "float32" if device == "cpu" or (kind == "gguf" and quant == "none") else "bfloat16"
    return quant, dtype


def resolve(model: str, *, quant: str = "auto", revision: str | None = None, device: str | None = None) -> ModelRef:
    """Turn a registry name, ``.gguf`` path, local folder or hub id into a :class:`ModelRef`."""
    if quant not in QUANTS:
        raise AuditError(f"unknown quantisation {quant!r}; choose one of {list(QUANTS)}")
    device = device or default_device()
    if quant in ("4bit", "8bit") and device != "cuda":
        import importlib.util

        if importlib.util.find_spec("bitsandbytes") is None:
            raise AuditError(f"--quant {quant} needs the package bitsandbytes (pip install bitsandbytes)")
    if quant == "bf16" and device == "cpu" and not native_bf16(cpu_flags()):
        warnings.warn("--quant bf16: this CPU has no native bfloat16 (avx512_bf16 or amx_bf16), so PyTorch emulates "
                      "it and scoring runs slower than full precision; results are kept under their own fingerprint",
                      stacklevel=2)
    path = Path(model).expanduser()

    def ref(kind: str, label: str, location: str, content_id: str) -> ModelRef:
        resolved, dtype = precision(kind, quant, device)
        return ModelRef(label + ("" if resolved == "none" else f"@{resolved}"), kind, location, content_id,
                        resolved, dtype, device)

    if model in REGISTRY:
        gguf = REGISTRY[model].locate()
        return ref("gguf", model, str(gguf), file_sha256(gguf))
    if path.is_file():
        if path.suffix.lower() != ".gguf":
            raise AuditError(f"model file {path} is not a .gguf file; pass a GGUF file, a model folder or a hub id")
        with path.open("rb") as handle:
            if handle.read(4) != GGUF_MAGIC:
                raise AuditError(f"model file {path} is not a GGUF file (it does not start with the GGUF header)")
        return ref("gguf", path.stem, str(path.resolve()), file_sha256(path))
    if path.is_dir():
        if not (path / "config.json").exists():
            raise AuditError(f"model folder {path} has no config.json (is it a transformers model folder?)")
        return ref("dir", path.name, str(path.resolve()), folder_sha256(path))
    if HUB_ID.match(model) and not model.startswith((".", "/")):
        return ref("hub", model, model, hub_commit(model, revision))
    raise AuditError(
        f"unknown model {model!r}: not a registry name ({', '.join(REGISTRY)}), an existing .gguf file, "
        "a model folder, or a hub id like owner/name"
    )


def default_device() -> str:
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def hub_commit(repo_id: str, revision: str | None) -> str:
    """The commit a hub id resolves to (downloads only config.json; offline, uses the local cache)."""
    from huggingface_hub import snapshot_download

    try:
        snapshot = snapshot_download(repo_id, revision=revision, allow_patterns=["config.json"],
                                     local_files_only=os.environ.get("HF_HUB_OFFLINE") == "1")
    except Exception as exc:  # the hub client raises many types: offline, unknown repo, gated, no network
        raise AuditError(f"cannot resolve hub model {repo_id!r} (revision {revision or 'main'}): "
                         f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}") from None
    return Path(snapshot).name


def folder_sha256(path: Path) -> str:
    """SHA-256 over the names and contents of a model folder's files (weights, config, tokenizer)."""
    digest = hashlib.sha256()
    for file in sorted(p for p in path.rglob("*") if p.is_file()):
        digest.update(str(file.relative_to(path)).encode())
        digest.update(file_sha256(file).encode())
    return digest.hexdigest()
