"""The CLI registers only the family of the command it runs; every command lives in the family the table names."""
from __future__ import annotations

from audit.cli import COMMANDS, build_parser


def _choices(parser) -> list[str]:
    return list(next(a for a in parser._actions if a.dest == "command").choices)


def test_the_full_parser_registers_exactly_the_named_commands_in_order():
    assert _choices(build_parser()) == list(COMMANDS)


def test_each_command_is_registered_by_its_own_family_alone():
    for command, family in COMMANDS.items():
        alone = _choices(build_parser(command))
        assert command in alone, (command, family)
        assert set(alone) == {c for c, f in COMMANDS.items() if f == family}
