"""Fingerprints of a result's inputs: one string that changes when any input may have.

Disk files contribute their mtime/size/inode, in-memory buffers their content hash (the
``FileSource`` decides); a missing file contributes ``missing``, so creating it changes the
fingerprint too.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from pathlib import Path

from budgetlens.files import FileSource


def fingerprint_inputs(paths: Iterable[str | Path], files: FileSource) -> str:
    """A hash over (path, fingerprint) of every path, order-independent."""
    h = hashlib.blake2b(digest_size=16)
    for path in sorted({str(p) for p in paths}):
        h.update(path.encode("utf-8", "surrogatepass"))
        h.update(b"\0")
        h.update(files.fingerprint(Path(path)).encode("utf-8"))
        h.update(b"\n")
    return h.hexdigest()
