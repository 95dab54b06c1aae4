"""CLI sub-commands, one module per family."""
