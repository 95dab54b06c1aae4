"""Command line entry: each family of sub-commands lives in its own module of :mod:`audit.commands` and registers
itself here."""
from __future__ import annotations

import argparse
import errno
import importlib
import math
import os
import sys
from pathlib import Path

from audit.errors import AuditError
from audit.prompts import check_new_tokens

INTERRUPTED = 130
"""Exit status of a command ended by Ctrl-C (128 + SIGINT, as a shell reports it)."""
MAX_REPLICATES = 100_000
"""Most bootstrap replicates or permutations a command may ask for (each costs memory per row of the table)."""


#: the module of :mod:`audit.commands` that registers each sub-command, modules in ``--help`` order
COMMANDS = {**dict.fromkeys(("score", "scores", "pairs", "answers", "designs", "models"), "scoring_commands"),
            **dict.fromkeys(("metrics", "validity", "shape"), "metrics_commands"), "cairo": "cairo_commands",
            "plan": "plan_commands", **dict.fromkeys(("impact", "compare", "report"), "report_commands"),
            "verdict": "verdict_commands", "check": "check_commands", "import": "import_commands", "ll144": "ll144_commands",
            "position-bias": "position_commands", "runs": "runs_commands", "monitor": "monitor_commands"}


#: how the usage line names the tool: as it was started (the ``audit`` console script, else ``python -m audit``)
PROG = "audit" if Path(sys.argv[0]).name == "audit" else "python -m audit"


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The ``python -m audit`` parser with every sub-command registered, or only the family of ``command`` when it
    names one (each family imports what it runs: the others' imports would only slow the start)."""
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    families = [COMMANDS[command]] if command in COMMANDS else dict.fromkeys(COMMANDS.values())
    for family in families:
        importlib.import_module(f"audit.commands.{family}").add_commands(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run one sub-command; bad input is one ``error:`` line on stderr and exit status 2."""
    # Arrow's default pool (mimalloc) keeps the pages it frees: the text columns of a big decision log stay resident
    # after use (verdict on 800,000 rows: peak 727 MB against 646 MB with the C allocator, in the same time)
    os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "system")
    from audit.commands.io import stdout_error, write_stdout

    argv = sys.argv[1:] if argv is None else argv
    args = build_parser(argv[0] if argv else None).parse_args(argv)
    try:
        check_replicates(args)
        check_levels(args)
        try:
            status = int(args.handler(args) or 0)
        except OSError as exc:  # print() onto a full or closed standard output (files go through write_atomic)
            if exc.errno not in (errno.ENOSPC, errno.EPIPE, errno.EBADF) or sys.stdout is None:
                raise
            raise stdout_error(exc) from None
        write_stdout("")  # what print() left in the buffer: a full or closed standard output is one error line
        return status
    except AuditError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # Ctrl-C: one line, no traceback (every batch written so far is committed)
        print("interrupted", file=sys.stderr)
        return INTERRUPTED


def check_replicates(args: argparse.Namespace) -> None:
    """``--bootstrap`` and ``--permutations`` between 1 and :data:`MAX_REPLICATES`, ``--seed`` at least 0 and token
    counts within :data:`audit.prompts.MAX_NEW_TOKENS`, whichever command names them."""
    for name in ("bootstrap", "permutations"):
        value = getattr(args, name, None)
        if value is not None and not 1 <= value <= MAX_REPLICATES:
            raise AuditError(f"--{name} {value}: give 1 to {MAX_REPLICATES:,} replicates")
    seed = getattr(args, "seed", None)
    if seed is not None and seed < 0:
        raise AuditError(f"--seed {seed}: give a seed of 0 or more")
    for name in ("max_tokens", "max_new_tokens"):  # before a model is loaded or an endpoint probed
        if getattr(args, name, None) is not None:
            check_new_tokens(getattr(args, name), "--" + name.replace("_", "-"))


#: option → (lowest, highest, whether the highest is allowed, what it is): each checked here for every command
LEVELS = {"ci": (0.0, 1.0, False, "a confidence level strictly between 0 and 1, e.g. 0.95"),
          "threshold": (0.0, 1.0, True, "an impact-ratio threshold above 0 and at most 1, e.g. 0.8"),
          "max_inconsistent": (0.0, 1.0, True, "a rate from 0 to 1"),
          "target": (0.0, math.inf, False, "a positive half-width, e.g. 0.05"),
          "deadline": (0.0, 7 * 24 * 3600.0, True, "seconds above 0 and at most 604800 (a week)")}


def check_levels(args: argparse.Namespace) -> None:
    """Levels, thresholds and rates finite and within their range, and an integer ``--k`` at least 1, whichever
    command names them (quota lists are checked by :func:`audit.commands.io.parse_quotas`)."""
    for name, (low, high, closed, what) in LEVELS.items():
        value = getattr(args, name, None)
        if value is None:
            continue
        inside = math.isfinite(value) and low <= value <= high and (value > low or name == "max_inconsistent") \
            and (closed or value < high)
        if not inside:
            raise AuditError(f"--{name.replace('_', '-')} {value:g}: give {what}")
    k = getattr(args, "k", None)
    if isinstance(k, int) and k < 1:
        raise AuditError(f"--k {k}: give a quota of at least 1")
