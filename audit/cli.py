"""Command line entry: each family of sub-commands lives in its own module of :mod:`audit.commands` and registers
itself here."""
from __future__ import annotations

import argparse
import signal
import sys

from audit.errors import AuditError


def build_parser() -> argparse.ArgumentParser:
    """The ``python -m audit`` parser with every sub-command registered."""
    from audit.commands import (cairo_commands, import_commands, ll144_commands, metrics_commands, plan_commands,
                                report_commands, scoring_commands)

    parser = argparse.ArgumentParser(prog="python -m audit", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    for module in (scoring_commands, metrics_commands, cairo_commands, plan_commands, report_commands,
                   import_commands, ll144_commands):
        module.add_commands(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run one sub-command; bad input is one ``error:`` line on stderr and exit status 2."""
    if hasattr(signal, "SIGPIPE"):  # `... | head` ends quietly, like any Unix tool
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    args = build_parser().parse_args(argv)
    try:
        return int(args.handler(args) or 0)
    except AuditError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
