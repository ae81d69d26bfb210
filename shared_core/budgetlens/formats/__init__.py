"""Prompt files in the formats teams already keep, read into one format-neutral model.

``read_prompt_file`` picks the reader by the file's name (and, for ``.prompt``, its front
matter): GitHub Models (``*.prompt.yml``), Prompty (``*.prompty``), Dotprompt
(``*.prompt``); ``mapping.read`` reads any simple YAML by a configured mapping. Each
returns a ``PromptFile`` (``budgetlens.formats.model``). ``contract/prompt_plan.py`` turns
its steps into the contract's step plans; config.json's ``prompt_mappings`` names the
mapped files.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from budgetlens.files import FileSource
from budgetlens.formats import dotprompt, github_models, prompty
from budgetlens.formats.model import PromptFile


def format_of(path: str, text: str) -> str | None:
    """The format of the file at ``path`` with ``text``, or ``None`` when none reads it."""
    if github_models.is_github_models(path):
        return github_models.FORMAT
    if path.endswith(".prompty"):
        return prompty.FORMAT
    if path.endswith(".prompt") and dotprompt.looks_like_dotprompt(text):
        return dotprompt.FORMAT
    return None


def read_prompt_file(path: str, text: str, inputs: Mapping[str, Any] | None = None,
                     root: Path | None = None,
                     files: FileSource | None = None) -> PromptFile | None:
    """The file read by its format's reader (``None``: no reader for it)."""
    fmt = format_of(path, text)
    if fmt == github_models.FORMAT:
        return github_models.read(text, path, inputs)
    if fmt == prompty.FORMAT:
        return prompty.read(text, path, inputs, root, files)
    if fmt == dotprompt.FORMAT:
        return dotprompt.read(text, path, inputs, root, files)
    return None
