"""File hashes, memoised in the cache (shared by the registry's pins and the sources' fingerprints)."""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from audit.paths import cache_dir


def file_sha256(path: Path) -> str:
    """SHA-256 of a file, memoised on (path, inode, size, mtime, ctime) so large files are hashed once. The change
    time cannot be set back (``touch -r`` restores only the modification time), so a file rewritten in place under
    the same name, size and mtime is hashed again and a tampered file is caught."""
    stat = path.stat()
    memo = cache_dir() / "hashes.json"
    key = f"{path.resolve()}|{stat.st_ino}|{stat.st_size}|{stat.st_mtime_ns}|{stat.st_ctime_ns}"
    known = json.loads(memo.read_text()) if memo.exists() else {}
    if key not in known:
        digest = hashlib.sha256()
        with path.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 22), b""):
                digest.update(block)
        known[key] = digest.hexdigest()
        partial = memo.with_suffix(f".{os.getpid()}.tmp")
        partial.write_text(json.dumps(known))
        partial.replace(memo)
    return known[key]
