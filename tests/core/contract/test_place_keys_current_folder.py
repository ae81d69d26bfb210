"""The place keys of the BudgetCache and the current folder: a check of absolute paths
depends on it in no way (a deleted current folder does not make it raise, a change of
folder does not miss the cache). Found by a third review (review26c); each fails at
2fab6c7."""

from __future__ import annotations

from pathlib import Path

import pytest

from budgetlens.contract.cache import BudgetCache
from budgetlens.contract.check import CheckOptions, check_pipeline
from budgetlens.files import DiskFiles, RunFiles
from tests.core.contract.helpers import codes_of, make_workspace

CONFIG = {"model_context_window": 8192, "model_max_tokens": 512, "prompts_dir": "prompts"}
NO_PROMPT = ("settings:\n  max_context_tokens: 1000\nsteps:\n  - id: s\n    type: call_model\n"
             "    max_output_tokens: 100\n")
BROKEN = "steps: [\n"

BY_FOLDER = pytest.mark.parametrize("by_folder", [False, True],
                                    ids=["core", "resolved-by-folder"])


@BY_FOLDER
def test_unusable_pipeline_with_the_current_folder_deleted_does_not_raise(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, by_folder: bool) -> None:
    """An unusable pipeline (not YAML) stops early with ``_Plan.prompt_root`` left at its
    default ``"."``; ``with_places`` keys its place, ``RunFiles.place(".")`` ->
    ``os.path.abspath(".")`` -> ``os.getcwd()``, which raises ``FileNotFoundError`` when the
    current folder was deleted (a server started in a folder since removed). Every path
    here is absolute, and ``_folder_if_relative`` itself handles a deleted folder; the check
    "never raises for bad input", yet raises here (the server shows BL009)."""
    ws = make_workspace(tmp_path / "ws", config=CONFIG, pipelines={"p.yaml": BROKEN})
    gone = tmp_path / "gone"
    gone.mkdir()
    monkeypatch.chdir(gone)
    gone.rmdir()
    report = check_pipeline(str(ws / "pipelines" / "p.yaml"),
                            files=RunFiles(DiskFiles(), resolve_by_folder=by_folder),
                            options=CheckOptions(environ={}), cache=BudgetCache())
    assert codes_of(report)


def test_unusable_pipeline_kept_across_a_change_of_folder(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same ``"."`` key makes the report of an unusable pipeline named by absolute
    paths depend on the current folder: checked again unchanged from another folder, the
    cache misses (a cost only; the answer is the same)."""
    ws = make_workspace(tmp_path / "ws", config=CONFIG, pipelines={"p.yaml": BROKEN})
    assert _hits_from_two_folders(tmp_path, monkeypatch, ws, CheckOptions(environ={})) == 1


def test_a_tokenizer_name_is_not_a_relative_path(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``_folder_if_relative`` takes any ``str`` tokenizer option as a path, so a tokenizer
    *name* (``"cl100k_base"``, the usual value, the server's setting too) keys every result
    by the current folder: an unchanged pipeline with absolute paths checked again from
    another folder misses the cache (a cost only)."""
    ws = make_workspace(tmp_path / "ws", config=CONFIG, pipelines={"p.yaml": NO_PROMPT})
    options = CheckOptions(environ={}, tokenizer="cl100k_base")
    assert _hits_from_two_folders(tmp_path, monkeypatch, ws, options) == 1


def _hits_from_two_folders(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, ws: Path,
                           options: CheckOptions) -> int:
    """The cache hits of ``ws``'s pipeline checked by its absolute path with ``options``
    from one folder and then, unchanged, from another."""
    cache = BudgetCache()
    pipeline = str(ws / "pipelines" / "p.yaml")
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        monkeypatch.chdir(tmp_path / name)
        check_pipeline(pipeline, files=RunFiles(DiskFiles()), options=options, cache=cache)
    return cache.hits
