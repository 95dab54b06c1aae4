"""Options several sub-commands take, each written once; a command adds the groups it reads, with its own defaults."""
from __future__ import annotations

import argparse

from audit.metrics.inference import METHODS
from audit.selection import N_BOOT


def add_filters(parser: argparse.ArgumentParser, *, scope: str = "") -> None:
    """``--models`` and ``--subtasks``: which systems and subtasks to include; ``scope`` prefixes the help."""
    parser.add_argument("--models", nargs="+", default=(), help=f"{scope}models to include (default: all)")
    parser.add_argument("--subtasks", nargs="+", default=(), help=f"{scope}subtasks to include (default: all)")


def add_bootstrap(parser: argparse.ArgumentParser, *, ci: float | None = 0.95, replicates: int = N_BOOT,
                  ci_help: str = "confidence level", replicates_help: str = "bootstrap replicates",
                  seed_help: str | None = "bootstrap seed") -> None:
    """``--ci``, ``--bootstrap`` and (unless ``seed_help`` is None) ``--seed``."""
    parser.add_argument("--ci", type=float, default=ci,
                        help=ci_help if ci is None else f"{ci_help} (default {ci})")
    parser.add_argument("--bootstrap", type=int, default=replicates, metavar="B",
                        help=f"{replicates_help} (default {replicates})")
    if seed_help is not None:
        parser.add_argument("--seed", type=int, default=0, help=f"{seed_help} (default 0)")


def add_adjust(parser: argparse.ArgumentParser) -> None:
    """``--adjust``: the multiple-comparison adjustment of p-values."""
    parser.add_argument("--adjust", choices=tuple(METHODS), default="holm",
                        help="multiple-comparison adjustment of the p-values: holm (default) or bh")


def add_verdict_rule(parser: argparse.ArgumentParser) -> None:
    """``--family`` (the verdict's multiple-testing family) and ``--rule`` (its reading of adverse impact)."""
    from audit.metrics.verdict import DEFAULT_FAMILY, FAMILIES, RULES

    parser.add_argument("--family", choices=tuple(FAMILIES), default=DEFAULT_FAMILY,
                        help="multiple-testing family of the verdict's Holm adjustment: "
                             + "; ".join(f"{name}: {words}" for name, words in FAMILIES.items())
                             + f" (default {DEFAULT_FAMILY})")
    parser.add_argument("--rule", choices=tuple(RULES), default="practice",
                        help="reading of adverse impact: " + "; ".join(f"{n}: {w}" for n, w in RULES.items())
                             + " (default practice)")


def add_output(parser: argparse.ArgumentParser, formats: tuple[str, ...], *, format_help: str | None = None) -> None:
    """``--format`` (the first of ``formats`` by default) and ``--out``."""
    parser.add_argument("--format", choices=formats, default=formats[0], help=format_help)
    parser.add_argument("--out", help="write here instead of stdout")
