"""The one exception type the library raises for bad input; the CLI prints it as one line."""


class AuditError(ValueError):
    """Bad input or state, described in a message a user can act on (what, where, which value)."""
