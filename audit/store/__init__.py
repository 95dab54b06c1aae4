"""The result store: the SQLite database (the only code that speaks SQL), its rows as frames (pairwise answers read
through the current parser into the paper's credits), the recorded decisions read as columns, the audit trail and
guarded output files."""
