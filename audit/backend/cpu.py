"""What this CPU computes natively: the check behind the bf16 fast path is a function of the CPU's flags."""
from __future__ import annotations

from pathlib import Path

#: flags of x86 CPUs with native bfloat16 arithmetic (AVX-512 BF16 dot products, AMX tiles)
BF16_FLAGS = frozenset({"avx512_bf16", "amx_bf16"})


def cpu_flags(cpuinfo: Path = Path("/proc/cpuinfo")) -> frozenset[str]:
    """The CPU's feature flags as Linux lists them (empty when they cannot be read, e.g. on another system)."""
    try:
        text = cpuinfo.read_text(errors="replace")
    except OSError:
        return frozenset()
    line = next((line for line in text.splitlines() if line.startswith(("flags", "Features"))), "")
    return frozenset(line.partition(":")[2].split())


def native_bf16(flags: frozenset[str]) -> bool:
    """Whether a CPU with these flags computes bfloat16 natively (else PyTorch emulates it, slower than fp32)."""
    return bool(flags & BF16_FLAGS)
