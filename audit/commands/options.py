"""Options several sub-commands take, each written once; a command adds the groups it reads, with its own defaults."""
from __future__ import annotations

import argparse
from collections.abc import Callable
from enum import StrEnum
from typing import TYPE_CHECKING, TypeVar

from audit.enums import DEFAULT_FAMILY, SCORED, Family, Mode, Rule
from audit.errors import AuditError
from audit.engine.choices import METHODS, PRESETS
from audit.engine.selection import N_BOOT, N_PERM

E = TypeVar("E", bound=StrEnum)

if TYPE_CHECKING:
    from audit.engine.selection import Selection
    from audit.engine.tables import StoreTables


def choice(kind: type[E], allowed: tuple[E, ...] | None = None) -> Callable[[str], E]:
    """An argparse ``type=`` converting a flag's text to a member of ``kind`` (one of ``allowed``, default all), with
    argparse's own words for a value outside them."""
    members = tuple(kind) if allowed is None else allowed

    def convert(value: str) -> E:
        if value not in members:
            raise argparse.ArgumentTypeError(f"invalid choice: {value!r} (choose from "
                                             f"{', '.join(repr(str(m)) for m in members)})")
        return kind(value)

    convert.__name__ = kind.__name__
    return convert


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
    from audit.engine.verdict import FAMILIES, RULES

    parser.add_argument("--family", type=choice(Family), choices=tuple(Family), default=DEFAULT_FAMILY,
                        help="multiple-testing family of the verdict's Holm adjustment: "
                             + "; ".join(f"{name}: {words}" for name, words in FAMILIES.items())
                             + f" (default {DEFAULT_FAMILY})")
    parser.add_argument("--rule", type=choice(Rule), choices=tuple(Rule), default=Rule.PRACTICE,
                        help="reading of adverse impact: " + "; ".join(f"{n}: {w}" for n, w in RULES.items())
                             + f" (default {Rule.PRACTICE})")


def check_date(value: str, flag: str) -> str:
    """``value`` when it is empty or a date written YYYY-MM-DD, else an AuditError naming ``flag``."""
    from datetime import date

    try:
        if value and (len(value) != 10 or date.fromisoformat(value).isoformat() != value):
            raise ValueError(value)
    except ValueError:
        raise AuditError(f"{flag} {value}: give a date as YYYY-MM-DD, e.g. 2026-12-01") from None
    return value


def add_output(parser: argparse.ArgumentParser, formats: tuple[str, ...], *, format_help: str | None = None) -> None:
    """``--format`` (the first of ``formats`` by default) and ``--out``."""
    parser.add_argument("--format", choices=formats, default=formats[0], help=format_help)
    parser.add_argument("--out", help="write here instead of stdout")


def add_selection(parser: argparse.ArgumentParser, *, k: str = "list", k_help: str = "",
                  mode: Mode | None = Mode.POINTWISE,
                  groupings: bool = False, groups: bool = False, metrics: bool = True) -> None:
    """The flags of one :class:`audit.engine.selection.Selection`, spelled once for every command that reads results:
    ``--task``, ``--mode``, ``--models``, ``--subtasks``, ``--grouping`` (repeatable with ``groupings``),
    ``--reference``, ``--pool``, ``--k`` (``list``: quotas such as 2, 1-8 or 1,3,5; ``one``: one quota, default the
    design's), with ``groups`` ``--groups``, with ``metrics`` ``--preset`` and ``--max-inconsistent``."""

    parser.add_argument("--task", help="the task to audit (default: the store's only task)")
    parser.add_argument("--mode", type=choice(Mode, SCORED), choices=SCORED, default=mode, metavar="MODE",
                        help=f"scoring mode: {', '.join(SCORED)} (default {mode or 'every mode of the task'})")
    add_filters(parser)
    if groupings:
        parser.add_argument("--grouping", action="append", help="a grouping the task declares, e.g. race (repeatable; "
                                                                "default: every one whose pools exceed k)")
    else:
        parser.add_argument("--grouping", help="a grouping the task declares, e.g. race (default: whole group codes)")
    parser.add_argument("--reference", help="reference group (default: the stored design's, in the grouping)")
    if groups:
        parser.add_argument("--groups", nargs="+", default=(), help="groups of the grouping to show (default: all)")
    parser.add_argument("--pool", help="pool design: per-group, random:N or observed (default: the stored design's)")
    if k == "list":
        parser.add_argument("--k", required=True, help=k_help or "quota(s): 2, 1-8 or 1,3,5")
    else:
        parser.add_argument("--k", type=int, help=k_help or "quota k (default: the quota the task's design declares, "
                                                            "e.g. 1 for the GPT hiring study)")
    if metrics:
        parser.add_argument("--preset", choices=tuple(PRESETS), default="default",
                            help="estimators: default, or paper-exact (the RABBI paper's code: JSD on 10 bins over "
                                 "A's range in nats, asymptotic p-values)")
        parser.add_argument("--max-inconsistent", type=float, metavar="RATE",
                            help="leave out pairwise models whose share of inconsistent pairs exceeds RATE (the paper "
                                 "uses 0.55 and 0.50); default: keep all")


def selection_from(args: argparse.Namespace, tables: "StoreTables", **fields: object) -> "Selection":
    """The one :class:`audit.engine.selection.Selection` of a command's flags (any command's: flags it lacks keep the
    selection's defaults; ``fields`` override, e.g. the mode of one pass): the store's only task unless ``--task``,
    ``--k`` as a tuple of quotas, a repeatable ``--grouping`` named once as the selection's grouping."""
    from audit.commands.io import parse_quotas
    from audit.engine.selection import Selection

    def flag(name: str, default: object = None) -> object:
        value = getattr(args, name, None)
        return default if value is None else value

    k = flag("k")
    ks = () if k is None else (k,) if isinstance(k, int) else tuple(parse_quotas(k))
    grouping = flag("grouping")
    chosen = dict(mode=flag("mode", Mode.POINTWISE), models=tuple(flag("models", ())),
                  subtasks=tuple(flag("subtasks", ())), groups=tuple(flag("groups", ())),
                  grouping=grouping if isinstance(grouping, str) or grouping is None else
                  grouping[0] if len(grouping) == 1 else None, reference=flag("reference"),
                  pool=flag("pool"), preset=flag("preset", "default"), max_inconsistent=flag("max_inconsistent"),
                  ci=getattr(args, "ci", 0.95), n_boot=flag("bootstrap", N_BOOT),
                  n_perm=getattr(args, "permutations", N_PERM),
                  adjust=flag("adjust", "holm"), ks=ks, seed=flag("seed", 0), family=flag("family", DEFAULT_FAMILY),
                  rule=flag("rule", Rule.PRACTICE))
    task = fields.pop("task", None) or tables.task(flag("task"))
    return Selection(task, **{**chosen, **fields})
