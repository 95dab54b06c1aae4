"""What a report says of the two hashes it prints for each system (the systems, prompts and data hash themselves are
read by :mod:`audit.engine.records`)."""
from __future__ import annotations

#: what each of a system's two hashes covers, said wherever both are printed (Appendix C, the LL144 sources)
RECORDED_HASHES = ("The content SHA-256 covers the whole imported source (every system recorded in it), so systems "
                   "imported from one source share it; the fingerprint hashes it with the system's own name, so each "
                   "system has its own.")
SCORED_HASHES = ("The content SHA-256 covers a model's weights; the fingerprint hashes it with the precision and "
                 "backend, so one model at two precisions has two fingerprints.")
