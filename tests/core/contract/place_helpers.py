"""What the tests of the budget cache's place keys share (test_place_keys_edges.py,
test_place_keys_cwd.py): a workspace's config and pipeline, both ways of resolving a run's
paths, and a check through a kept cache next to a fresh one."""

from __future__ import annotations

from pathlib import Path

import pytest

from budgetlens.contract.cache import BudgetCache
from budgetlens.contract.check import CheckOptions, check_pipeline
from budgetlens.files import DiskFiles, RunFiles
from tests.core.contract.helpers import codes_of

CONFIG = {"model_context_window": 8192, "model_max_tokens": 512, "prompts_dir": "prompts"}
PIPELINE = ("settings:\n  max_context_tokens: 1000\nsteps:\n  - id: s\n    type: call_model\n"
            "    prompt_key: sys\n    max_output_tokens: 100\n")

#: the core's default (``RunFiles(base)``) and the language server's and CLI's
#: (``resolve_by_folder``)
BY_FOLDER = pytest.mark.parametrize("by_folder", [False, True],
                                    ids=["core", "resolved-by-folder"])


def check_codes(pipeline: Path | str, cache: BudgetCache, by_folder: bool = False,
                **options: object) -> list[str]:
    """The sorted codes of a check through ``cache`` (a new ``RunFiles`` per call)."""
    return sorted(codes_of(check_pipeline(
        pipeline, files=RunFiles(DiskFiles(), resolve_by_folder=by_folder),
        options=CheckOptions(environ={}, **options), cache=cache)))  # type: ignore[arg-type]


def cached_and_fresh(pipeline: Path | str, cache: BudgetCache, by_folder: bool,
                     **options: object) -> tuple[list[str], list[str]]:
    """(the codes of a check through ``cache``, those of a fresh check: a new cache)."""
    return (check_codes(pipeline, cache, by_folder, **options),
            check_codes(pipeline, BudgetCache(), by_folder, **options))
