"""Finding the files of a workspace: its pipelines, and the config.json a pipeline uses."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from budgetlens.contract.cache import BudgetCache, RecordingFiles
from budgetlens.files import MISSING_FINGERPRINT, SourceError

if TYPE_CHECKING:
    from budgetlens.contract.config import LoadedConfig
    from budgetlens.contract.model import CheckOptions

PIPELINE_GLOBS = ("*.yaml", "*.yml")
_SKIP_DIRS = {"node_modules", "__pycache__", "site-packages"}


def find_pipelines(root: Path | str) -> list[Path]:
    """Pipeline files under ``root``: ``root`` itself if a file, else every ``pipelines/*.yaml``
    (and ``*.yml``) below it, hidden folders and dependency folders skipped; sorted. A
    ``pipelines`` folder itself (also as ``.`` from inside it) gives its own files."""
    root = Path(root)
    if not root.is_dir():
        return [root]
    found: list[Path] = []
    if os.path.basename(os.path.abspath(root)) == "pipelines":
        for pattern in PIPELINE_GLOBS:
            found.extend(root.glob(pattern))
    for dirpath, dirnames, _ in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames
                             if not d.startswith(".") and d not in _SKIP_DIRS)
        if "pipelines" in dirnames:
            folder = Path(dirpath) / "pipelines"
            for pattern in PIPELINE_GLOBS:
                found.extend(folder.glob(pattern))
    return sorted(set(found))


def _explicit_config(path: str, files: RecordingFiles, cache: BudgetCache) -> LoadedConfig:
    """The config.json given by the user (``--config``): an unreadable one is a diagnostic."""
    from budgetlens.contract.config import load_config, unreadable_config  # lazy: start-up

    def load() -> LoadedConfig:
        try:
            return load_config(path, files.read_text(Path(path)))
        except SourceError as exc:
            return unreadable_config(path, exc)
    return cache.parsed("config", path, files, load)


def pipeline_config(pipeline: str, files: RecordingFiles, options: CheckOptions,
                    cache: BudgetCache) -> tuple[LoadedConfig | None, str | None]:
    """The config.json of ``pipeline`` and its path: ``options.config_path``, else the
    nearest at or above the pipeline's folder (not above the workspace root). Every path
    probed is recorded in ``files`` (a config.json created there later counts)."""
    # lazy for start-up speed: find_pipelines (`budgetlens check`) needs no config model
    from budgetlens.contract.config import find_config, read_config_if_present

    if options.config_path is not None:
        path = os.path.normpath(str(options.config_path))
        return _explicit_config(path, files, cache), path
    root = options.workspace_root

    def load_candidate(path: str) -> LoadedConfig | None:
        if files.fingerprint(Path(path)) == MISSING_FINGERPRINT:
            return None
        return cache.parsed("config", path, files,
                            lambda: read_config_if_present(path, files))
    loaded, probed = find_config(os.path.dirname(pipeline) or ".", files, load=load_candidate,
                                 stop_at=str(root) if root is not None else None)
    for p in probed:
        files.fingerprint(Path(p))
    return loaded, loaded.path if loaded else None
