""".gitignore files read without running git, for the search of ``budgetlens check`` and
``clamp``: the folders whose ignore files apply to a path (``ignore_folders``), those files
(``ignore_files``: ``.gitignore``, and ``.git/info/exclude`` at the repository's root) and
one file's patterns (``read_gitignore``). They live in the core's ``contract.discovery``,
which the language server's search shares; the result cache (``cache``) fingerprints the
same files the search reads.
"""

from __future__ import annotations

from budgetlens.contract.discovery import ignore_files, ignore_folders, read_gitignore

__all__ = ["ignore_files", "ignore_folders", "read_gitignore"]
