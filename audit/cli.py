"""Command line entry: each family of sub-commands lives in its own module of :mod:`audit.commands` and registers
itself here."""
from __future__ import annotations

import argparse
import sys

from audit.errors import AuditError

MAX_REPLICATES = 100_000
"""Most bootstrap replicates or permutations a command may ask for (each costs memory per row of the table)."""


def build_parser() -> argparse.ArgumentParser:
    """The ``python -m audit`` parser with every sub-command registered."""
    from audit.commands import (cairo_commands, import_commands, ll144_commands, metrics_commands, plan_commands,
                                position_commands, report_commands, scoring_commands, verdict_commands)

    parser = argparse.ArgumentParser(prog="python -m audit", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    for module in (scoring_commands, metrics_commands, cairo_commands, plan_commands, report_commands,
                   verdict_commands, import_commands, ll144_commands, position_commands):
        module.add_commands(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run one sub-command; bad input is one ``error:`` line on stderr and exit status 2."""
    args = build_parser().parse_args(argv)
    try:
        check_replicates(args)
        return int(args.handler(args) or 0)
    except AuditError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


def check_replicates(args: argparse.Namespace) -> None:
    """``--bootstrap`` and ``--permutations`` between 1 and :data:`MAX_REPLICATES`, whichever command names them."""
    for name in ("bootstrap", "permutations"):
        value = getattr(args, name, None)
        if value is not None and not 1 <= value <= MAX_REPLICATES:
            raise AuditError(f"--{name} {value}: give 1 to {MAX_REPLICATES:,} replicates")
