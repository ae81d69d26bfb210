""".gitignore files read without running git, for the search of ``budgetlens check``: the
folders whose ``.gitignore`` apply to a path (``ignore_folders``) and one file's patterns
(``read_gitignore``, with ``pathspec``'s gitignore rules). Imports nothing of the project,
so the result cache (``cache``) can fingerprint the same files the search reads.
"""

from __future__ import annotations

import os
from typing import Any


def ignore_folders(folder: str) -> list[str]:
    """The folders whose ``.gitignore`` apply to a file of ``folder``: from the repository's
    root (the nearest folder at or above it holding ``.git``) down to ``folder``; none
    outside a repository (git reads no .gitignore there either)."""
    chain = [folder]
    current = folder
    for _ in range(256):
        if os.path.exists(os.path.join(current, ".git")):
            return chain[::-1]
        parent = os.path.dirname(current)
        if parent == current:
            break
        current = parent
        chain.append(current)
    return []


def read_gitignore(path: str) -> Any:
    """The patterns of one ``.gitignore`` (a ``pathspec.GitIgnoreSpec``), None when there is
    no such file."""
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            lines = fh.read(1024 * 1024).splitlines()
    except OSError:
        return None
    import pathspec  # lazy: start-up speed (only a folder with a .gitignore needs it)

    return pathspec.GitIgnoreSpec.from_lines(lines)
